//! What each NVML call costs, measured the way a sampler pays for it, and
//! the floor: the CPU of exactly gate's NVML calls at gate's cadences with
//! nothing else (no /proc, no trace). `examples/nvml-probe.rs` prints both;
//! BENCHMARKS.md section 1 compares `gate record` against them.
//!
//! Method (docs/counters.md): NVML answers repeated calls from a cache,
//! so a tight loop reads 0.4 us for a call that costs 17 us when a sampler
//! makes it. Each call here is made once per round, rounds `spacing` apart
//! (150 ms by default), and costed as the calling thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`) around the call; the table gives the median
//! over `rounds` rounds. Part of this module of `sampler::nvml`, so NVML
//! keeps a single user.

use super::{NvmlContext, GPM_COLUMNS};
use crate::error::GateError;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::gpm::{gpm_metrics_get, GpmSample};
use nvml_wrapper::struct_wrappers::device::FieldValueSample;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::sys_exports::field_id as fi;
use nvml_wrapper::{Device, Nvml};
use std::time::{Duration, Instant};

/// One row of the cost table.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CallCost {
    pub call: String,
    /// Median thread CPU time per call, microseconds.
    pub median_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Calls that succeeded (of `rounds`).
    pub ok: usize,
    /// The first error, when a call failed.
    pub error: Option<String>,
}

/// A probe call: a name and what it does. GPM pair calls need two samples.
type Call<'a> = (
    String,
    Box<dyn FnMut(&mut ProbeState) -> Result<(), NvmlError> + 'a>,
);

/// Samples and timestamps the calls carry from round to round, as a
/// sampler does (process utilization asks only for what is newer).
#[derive(Default)]
struct ProbeState {
    gpm: Vec<GpmSample<'static>>,
    proc_util_ts: u64,
}

/// Cost of every NVML call gate makes (and the alternatives the levers
/// weigh) on GPU `index`: `rounds` rounds, `spacing` apart.
pub fn call_costs(
    ctx: &NvmlContext,
    index: u32,
    rounds: usize,
    spacing: Duration,
) -> Result<Vec<CallCost>, GateError> {
    let device: Device<'static> = ctx.device(index)?;
    let d = &device;
    let mut calls = device_calls(d);
    calls.extend(gpm_get_calls(ctx.nvml, d));
    calls.extend(field_value_calls(d));
    Ok(measure(calls, rounds, spacing))
}

/// The device queries a sampler makes, one call each.
fn device_calls<'a>(d: &'a Device<'static>) -> Vec<Call<'a>> {
    vec![
        (
            "utilization".into(),
            Box::new(move |_| d.utilization_rates().map(drop)),
        ),
        (
            "memory info (v2)".into(),
            Box::new(move |_| d.memory_info().map(drop)),
        ),
        (
            "memory info (v1)".into(),
            Box::new(move |_| super::memory_info_v1(d).map(drop)),
        ),
        (
            "SM clock".into(),
            Box::new(move |_| d.clock_info(Clock::SM).map(drop)),
        ),
        (
            "memory clock".into(),
            Box::new(move |_| d.clock_info(Clock::Memory).map(drop)),
        ),
        ("power".into(), Box::new(move |_| d.power_usage().map(drop))),
        (
            "temperature".into(),
            Box::new(move |_| d.temperature(TemperatureSensor::Gpu).map(drop)),
        ),
        (
            "throttle reasons".into(),
            Box::new(move |_| d.current_throttle_reasons().map(drop)),
        ),
        (
            "running compute processes".into(),
            Box::new(move |_| d.running_compute_processes().map(drop)),
        ),
        (
            "running graphics processes".into(),
            Box::new(move |_| d.running_graphics_processes().map(drop)),
        ),
        (
            "process utilization".into(),
            Box::new(move |s| match d.process_utilization_stats(s.proc_util_ts) {
                Ok(v) => {
                    for p in v {
                        s.proc_util_ts = s.proc_util_ts.max(p.timestamp);
                    }
                    Ok(())
                }
                Err(NvmlError::NotFound) => Ok(()), // no newer sample: normal
                Err(e) => Err(e),
            }),
        ),
        (
            "energy counter".into(),
            Box::new(move |_| d.total_energy_consumption().map(drop)),
        ),
        (
            "GPM sample".into(),
            Box::new(move |s| {
                let sample = d.gpm_sample()?;
                s.gpm.push(sample);
                if s.gpm.len() > 2 {
                    s.gpm.remove(0);
                }
                Ok(())
            }),
        ),
    ]
}

/// GPM metrics reads of growing id sets, each from the last pair of GPM
/// samples (`device_calls`' "GPM sample").
fn gpm_get_calls<'a>(nvml: &'static Nvml, d: &'a Device<'static>) -> Vec<Call<'a>> {
    let gate_ids: Vec<GpmMetricId> = GPM_COLUMNS.iter().map(|c| c.0).collect();
    let lean_ids = super::gpm_ids_for(d)
        .into_iter()
        .map(|c| c.0)
        .collect::<Vec<_>>();
    let mut calls: Vec<Call> = Vec::new();
    let mut gpm_sets: Vec<(String, Vec<GpmMetricId>)> = [1usize, 2, 4, 8]
        .iter()
        .map(|&k| (format!("GPM metrics get ({k} ids)"), gate_ids[..k].to_vec()))
        .collect();
    gpm_sets.push((
        format!("GPM metrics get ({} ids: all gate's)", gate_ids.len()),
        gate_ids.clone(),
    ));
    gpm_sets.push((
        format!(
            "GPM metrics get ({} ids: supported, NVLink only if linked)",
            lean_ids.len()
        ),
        lean_ids,
    ));
    for (name, ids) in gpm_sets {
        calls.push((
            name,
            Box::new(move |s| {
                let [a, b] = &s.gpm[..] else {
                    return Err(NvmlError::NotFound); // no pair yet: not counted
                };
                gpm_metrics_get(nvml, a, b, &ids).map(drop)
            }),
        ));
    }
    calls
}

/// Field-value reads: the energy set, without energy, power alone.
fn field_value_calls<'a>(d: &'a Device<'static>) -> Vec<Call<'a>> {
    let mut calls: Vec<Call> = Vec::new();
    let energy6 = [
        fi::NVML_FI_DEV_POWER_INSTANT,
        fi::NVML_FI_DEV_POWER_AVERAGE,
        fi::NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION,
        fi::NVML_FI_DEV_MEMORY_TEMP,
        fi::NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP,
        fi::NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN,
    ];
    let fields: Vec<(String, Vec<u32>)> = vec![
        ("field values (6 ids incl. energy)".into(), energy6.to_vec()),
        (
            "field values (5 ids, no energy)".into(),
            energy6
                .iter()
                .copied()
                .filter(|&f| f != fi::NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION)
                .collect(),
        ),
        (
            "field values (power instant only)".into(),
            vec![fi::NVML_FI_DEV_POWER_INSTANT],
        ),
    ];
    for (name, ids) in fields {
        let ids: Vec<FieldId> = ids.into_iter().map(FieldId).collect();
        calls.push((
            name,
            Box::new(move |_| {
                d.field_values_for(&ids)
                    .map(|v: Vec<Result<FieldValueSample, NvmlError>>| drop(v))
            }),
        ));
    }
    calls
}

/// Each call once per round, rounds `spacing` apart: its thread CPU time
/// per call, and its first error.
fn measure(mut calls: Vec<Call>, rounds: usize, spacing: Duration) -> Vec<CallCost> {
    let mut state = ProbeState::default();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); calls.len()];
    let mut errors: Vec<Option<String>> = vec![None; calls.len()];
    // One call per `spacing`, in a fixed order: the same call comes back
    // after `calls.len() x spacing`, far beyond any NVML cache.
    for _ in 0..rounds {
        for (i, (_, f)) in calls.iter_mut().enumerate() {
            std::thread::sleep(spacing);
            let c0 = super::super::thread_cpu_ns();
            let r = f(&mut state);
            let c1 = super::super::thread_cpu_ns();
            match r {
                Ok(()) => times[i].push((c1 - c0) as f64 / 1000.0),
                Err(NvmlError::NotFound) => {}
                Err(e) => {
                    errors[i].get_or_insert_with(|| e.to_string());
                }
            }
        }
    }
    calls
        .iter()
        .zip(times)
        .zip(errors)
        .map(|(((name, _), mut t), error)| {
            t.sort_by(|a, b| a.total_cmp(b));
            CallCost {
                call: name.clone(),
                median_us: median(&t),
                min_us: t.first().copied().unwrap_or(f64::NAN),
                max_us: t.last().copied().unwrap_or(f64::NAN),
                ok: t.len(),
                error,
            }
        })
        .collect()
}

fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Result of `floor`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FloorRun {
    pub interval_ms: f64,
    pub seconds: f64,
    pub ticks: u64,
    /// Process CPU (user + system) over the run, seconds.
    pub cpu_s: f64,
    pub cpu_pct_of_one_core: f64,
}

/// The NVML floor of a sampler: exactly the NVML calls `GpuSampler` makes
/// on GPUs `indices` at `cadence` (same functions, same periods, same GPM
/// ids), for `seconds`, and nothing else. Process CPU by getrusage.
pub fn floor(
    ctx: &NvmlContext,
    indices: &[u32],
    interval: Duration,
    cadence: super::Cadence,
    seconds: f64,
) -> Result<FloorRun, GateError> {
    let start = Instant::now();
    let mut sampler = ctx.sampler(indices, start, cadence)?;
    let cpu0 = crate::sampler::process_cpu_s();
    let tree = std::collections::HashSet::new();
    let mut ticks = 0u64;
    let end = start + Duration::from_secs_f64(seconds);
    let mut next = start;
    while next < end {
        let now = Instant::now();
        if now < next {
            std::thread::sleep(next - now);
        }
        let now = Instant::now();
        let t_ms = now.duration_since(start).as_secs_f64() * 1000.0;
        let _ = sampler.sample(now, t_ms, &tree);
        ticks += 1;
        next += interval;
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu_s = crate::sampler::process_cpu_s() - cpu0;
    Ok(FloorRun {
        interval_ms: interval.as_secs_f64() * 1000.0,
        seconds: wall,
        ticks,
        cpu_s,
        cpu_pct_of_one_core: 100.0 * cpu_s / wall,
    })
}
