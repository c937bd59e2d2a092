//! `gate doctor`: can this machine measure? Checks NVML, versions, GPM and
//! process-utilization support, device permissions, then a 3-second dry run
//! that every metric returns values. Exit 0 when all is well, 3 otherwise.

use crate::error::GateError;
use crate::exit_code;
use crate::metrics::GPU_METRICS;
use crate::sampler::nvml::{DeviceProbe, GpuSampler, GpuSelection, NvmlContext};
use clap::Args;
use serde::Serialize;
use std::collections::HashSet;
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// GPUs to check: '0,2' or 'all' (default: all visible)
    #[arg(long, value_name = "LIST")]
    pub gpu: Option<String>,
    /// Length of the dry run
    #[arg(long, default_value = "3s", value_parser = super::measure::parse_duration, value_name = "DURATION")]
    pub(crate) dry_run: Duration,
    /// Print the findings as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

/// Counters that read nonzero on any powered GPU: all-zero means broken.
/// Memory used is not in the list: an idle H200 reports 0 MiB used
/// (measured with `gate doctor` on the device machine, 2026-11-29).
const ALWAYS_NONZERO: &[&str] = &["sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c"];

#[derive(Debug, Serialize)]
struct MetricCheck {
    metric: &'static str,
    /// ok | idle-zero | unsupported | missing | fail
    status: &'static str,
    samples: usize,
    detail: String,
}

#[derive(Debug, Serialize)]
struct GpuCheck {
    index: u32,
    name: String,
    uuid: String,
    probe: DeviceProbe,
    metrics: Vec<MetricCheck>,
}

#[derive(Debug, Serialize)]
struct Report {
    ok: bool,
    nvml: String,
    driver_version: Option<String>,
    nvml_version: Option<String>,
    cuda_driver_version: Option<String>,
    device_files: Vec<String>,
    /// Where a launched target's host counters come from (a cgroup of
    /// gate's own, or per process from /proc, and why).
    host_counters: String,
    container_hints: Vec<String>,
    problems: Vec<String>,
    gpus: Vec<GpuCheck>,
}

pub fn run(args: DoctorArgs) -> anyhow::Result<i32> {
    DoctorPlan::build(&args)?.execute()
}

/// What `gate doctor` checks, built from its flags before anything is
/// probed: a bad `--gpu` list is a usage error (exit 2), not a finding.
struct DoctorPlan {
    gpus: GpuSelection,
    dry_run: Duration,
    json: bool,
}

impl DoctorPlan {
    fn build(args: &DoctorArgs) -> Result<DoctorPlan, GateError> {
        Ok(DoctorPlan {
            gpus: GpuSelection::parse(args.gpu.as_deref())?,
            dry_run: args.dry_run,
            json: args.json,
        })
    }

    /// Probe NVML and every selected GPU, dry-run them, print the findings.
    fn execute(&self) -> anyhow::Result<i32> {
        let mut report = Report {
            ok: true,
            nvml: String::new(),
            driver_version: None,
            nvml_version: None,
            cuda_driver_version: None,
            device_files: device_files(),
            host_counters: crate::sampler::cgroup::describe(
                crate::sampler::cgroup::TreeCgroup::create().as_ref(),
            ),
            container_hints: container_hints(),
            problems: Vec::new(),
            gpus: Vec::new(),
        };
        match NvmlContext::init() {
            Err(e) => {
                report.nvml = e.to_string();
                report.problems.push(e.to_string());
            }
            Ok(nvml) => {
                report.nvml = "found".into();
                let v = nvml.versions();
                report.driver_version = v.driver;
                report.nvml_version = v.nvml;
                report.cuda_driver_version = v.cuda_driver;
                if let Err(e) = check_gpus(&nvml, self, &mut report) {
                    report.problems.push(e.to_string());
                }
            }
        }
        if report.device_files.is_empty() {
            report
            .problems
            .push("no /dev/nvidia* device files: in a container, run with the NVIDIA runtime (--gpus all)".into());
        }
        report.ok = report.problems.is_empty();
        if self.json {
            crate::console::out(&format!("{}\n", serde_json::to_string_pretty(&report)?));
        } else {
            print_text(&report);
        }
        Ok(if report.ok {
            exit_code::PASS
        } else {
            exit_code::INFRA
        })
    }
}

fn check_gpus(nvml: &NvmlContext, plan: &DoctorPlan, report: &mut Report) -> Result<(), GateError> {
    let indices = nvml.select(&plan.gpus)?;
    if indices.is_empty() {
        return Err(GateError::infra("NVML sees no GPU"));
    }
    let start = Instant::now();
    let mut sampler = nvml.sampler(
        &indices,
        start,
        crate::sampler::nvml::Cadence {
            gpm_period: crate::sampler::nvml::MIN_GPM_PAIR,
            ..Default::default()
        },
    )?;
    let series = dry_run(&mut sampler, indices.len(), start, plan.dry_run);
    let unsupported = sampler.unsupported();
    for (slot, &index) in indices.iter().enumerate() {
        let info = nvml.gpu_info(index)?;
        let probe = nvml.probe(index)?;
        let unsupported = unsupported.get(&index).cloned().unwrap_or_default();
        probe_problems(index, &info.name, &probe, report);
        let metrics = metric_checks(index, &series[slot], &unsupported, report);
        report.gpus.push(GpuCheck {
            index,
            name: info.name,
            uuid: info.uuid,
            probe,
            metrics,
        });
    }
    Ok(())
}

/// One GPU's samples of the dry run: a row per sample, a column per
/// `GPU_METRICS` entry.
type Series = Vec<Vec<Option<f64>>>;

/// Sample the GPUs every 100 ms from `start` for `length` (`--dry-run`):
/// each GPU's series.
fn dry_run(sampler: &mut GpuSampler, gpus: usize, start: Instant, length: Duration) -> Vec<Series> {
    let mut series: Vec<Series> = vec![Vec::new(); gpus];
    let none = HashSet::new();
    let interval = Duration::from_millis(100);
    let mut next = Instant::now();
    while start.elapsed() < length {
        next += interval;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let (values, _) = sampler.sample(
            Instant::now(),
            start.elapsed().as_secs_f64() * 1000.0,
            &none,
        );
        for (slot, v) in values.into_iter().enumerate() {
            series[slot].push(v);
        }
    }
    series
}

/// What the probe found wrong with GPU `index`: no GPM, no per-process
/// utilization, PIDs from another namespace.
fn probe_problems(index: u32, name: &str, probe: &DeviceProbe, report: &mut Report) {
    if !probe.gpm_supported {
        report.problems.push(format!(
            "GPU {index} ({}): no GPM (needs Hopper or newer, and in containers may need privileges): \
             SM active, tensor, DRAM and PCIe metrics will be missing",
            name
        ));
    }
    if !probe.process_utilization_ok {
        report.problems.push(format!(
            "GPU {index}: per-process utilization {}",
            probe.process_utilization
        ));
    }
    if !probe.invisible_pids.is_empty() {
        report.problems.push(format!(
            "GPU {index}: NVML reports PIDs {:?} that this /proc cannot see: gate runs in another PID namespace; \
             run the container with --pid=host so processes can be attributed",
            probe.invisible_pids
        ));
    }
}

/// Each metric of one GPU's dry run judged; failures are also problems.
fn metric_checks(
    index: u32,
    series: &Series,
    unsupported: &[String],
    report: &mut Report,
) -> Vec<MetricCheck> {
    let busy_col = GPU_METRICS
        .iter()
        .position(|d| d.id == "gpu_busy_pct")
        .unwrap_or(0);
    let busy_seen = series.iter().any(|v| v[busy_col].is_some_and(|b| b > 0.0));
    let mut metrics = Vec::new();
    for (col, def) in GPU_METRICS.iter().enumerate() {
        let values: Vec<f64> = series.iter().filter_map(|v| v[col]).collect();
        let (status, detail) = metric_status(def, &values, unsupported, busy_seen);
        if status == "fail" {
            report
                .problems
                .push(format!("GPU {index}: {}: {detail}", def.id));
        }
        metrics.push(MetricCheck {
            metric: def.id,
            status,
            samples: values.len(),
            detail,
        });
    }
    metrics
}

/// One metric's status and why, from its dry-run values.
fn metric_status(
    def: &crate::metrics::MetricDef,
    values: &[f64],
    unsupported: &[String],
    busy_seen: bool,
) -> (&'static str, String) {
    let nonzero = values.iter().any(|v| *v != 0.0);
    if unsupported.iter().any(|u| u == def.id) {
        (
            "unsupported",
            "this GPU cannot report it; recorded as missing, never 0".to_string(),
        )
    } else if values.is_empty() {
        ("fail", "no value in the dry run".to_string())
    } else if nonzero {
        (
            "ok",
            format!("last {}", values.last().copied().unwrap_or_default()),
        )
    } else if ALWAYS_NONZERO.contains(&def.id) {
        ("fail", "always 0: the counter is broken".to_string())
    } else if busy_seen
        && def.source.starts_with("GPM")
        && ["sm_active_pct", "graphics_pct"].contains(&def.id)
    {
        (
            "fail",
            "0 while the GPU was busy: GPM readings look invalid".to_string(),
        )
    } else {
        (
            "idle-zero",
            "0 (nothing ran on the GPU during the dry run)".to_string(),
        )
    }
}

fn device_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir("/dev")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("nvidia"))
                .map(|n| format!("/dev/{n}"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn container_hints() -> Vec<String> {
    let in_container = std::path::Path::new("/.dockerenv").exists()
        || std::path::Path::new("/run/.containerenv").exists()
        || std::fs::read_to_string("/proc/1/cgroup")
            .map(|c| c.contains("docker") || c.contains("kubepods") || c.contains("containerd"))
            .unwrap_or(false);
    if !in_container {
        return Vec::new();
    }
    vec![
        "running in a container: NVML reports host PIDs; use --pid=host (Docker) or hostPID (Kubernetes) so GPU processes map to /proc".into(),
        "the NVIDIA runtime must mount libnvidia-ml.so.1 and /dev/nvidia* (--gpus all)".into(),
        "GPM metrics may need extra privileges in a container (CAP_SYS_ADMIN or a profiling-enabled driver setting)".into(),
    ]
}

fn print_text(r: &Report) {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "NVML library:     {}", r.nvml);
    let _ = writeln!(
        o,
        "driver:           {}",
        r.driver_version.as_deref().unwrap_or("-")
    );
    let _ = writeln!(
        o,
        "NVML version:     {}",
        r.nvml_version.as_deref().unwrap_or("-")
    );
    let _ = writeln!(
        o,
        "CUDA driver API:  {}",
        r.cuda_driver_version.as_deref().unwrap_or("-")
    );
    let _ = writeln!(
        o,
        "device files:     {}",
        if r.device_files.is_empty() {
            "none".to_string()
        } else {
            r.device_files.join(" ")
        }
    );
    let _ = writeln!(o, "host counters:    {}", r.host_counters);
    for g in &r.gpus {
        let _ = writeln!(o);
        let _ = writeln!(o, "GPU {} {} ({})", g.index, g.name, g.uuid);
        let _ = writeln!(
            o,
            "  GPM:                  {}",
            if g.probe.gpm_supported {
                "supported"
            } else {
                "NOT supported"
            }
        );
        let _ = writeln!(o, "  process utilization:  {}", g.probe.process_utilization);
        for m in &g.metrics {
            let _ = writeln!(o, "  {:<26} {:<12} {}", m.metric, m.status, m.detail);
        }
    }
    for h in &r.container_hints {
        let _ = writeln!(o, "hint: {h}");
    }
    let _ = writeln!(o);
    if r.problems.is_empty() {
        let _ = writeln!(o, "all checks passed: gate can measure on this machine");
    } else {
        for p in &r.problems {
            let _ = writeln!(o, "problem: {p}");
        }
    }
    crate::console::out(&o);
}
