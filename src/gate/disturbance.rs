//! Disturbed is not regressed: what acted on a run from outside the
//! benchmark's own process tree (issue 38). A run is *disturbed* when,
//! during its steady window,
//!
//! - a process outside the tree held a context on one of its GPUs (its
//!   PID, name, SM share and the share of the window it was there);
//! - the GPU was thermally throttled, or slowed by a hardware or clock
//!   setting (`throttle_other_pct`: HW slowdown, application clocks), more
//!   than the baseline was;
//! - its SM clock ran below the baseline's while its power cap did not
//!   hold it more than the baseline's (a clock lowered from outside);
//! - an Xid event (ECC errors among them: Xid 48, 63, 64, 92, 94, 95) was
//!   reported for its GPU;
//! - processes outside the tree kept the machine's CPU saturated, more
//!   than when the baseline was captured, and the tree got less CPU than
//!   it did then (judged against a baseline only).
//!
//! Contention from the benchmark's own children (`in_target`) is the
//! change's, never a disturbance. Power capping alone is not one either:
//! every recorded GPT, DDP and MLP run is power-capped 95-98 % of the time
//! by its own kernels, so a change that draws more power is capped by
//! itself. A fingerprint that differs from the baseline's (another GPU
//! model, count or driver) is refused before this (`invalid`, exit 3).
//!
//! `detect` judges one run (`gate check`, `gate capture`, and a future
//! `gate ab` call it per run); `Disturbance::counters` names the gated
//! counters the neighbour moves, which become context when it is there
//! (the contract itself is applied by `passes::judge_disturbed`).

use crate::baseline::Baseline;
use crate::summary::Run;
use serde::Serialize;

/// A foreign process counts when it was on the GPU for at least this share
/// of the steady window more than in the baseline (a CUDA context opened
/// for a second by a monitoring tool is not a neighbour).
pub const MIN_FOREIGN_TIME_SHARE: f64 = 0.05;
/// Throttling (thermal, HW slowdown, clock settings) counts this many
/// points of the window above the baseline's: the catalogue's absolute
/// floor of the throttle metrics (`metrics::GPU_METRICS`).
pub const MIN_THROTTLE_RISE_PCT: f64 = 10.0;
/// The SM clock counts as lowered this far below the baseline's mean.
pub const MIN_CLOCK_DROP: f64 = 0.05;
/// The machine's CPU counts as saturated at this busy share (100 = all
/// cores), with at least `MIN_OTHERS_CPU_PCT` of it used outside the tree.
pub const SATURATED_HOST_CPU_PCT: f64 = 90.0;
pub const MIN_OTHERS_CPU_PCT: f64 = 10.0;
/// ... and the tree, which used at least a tenth of a core in the
/// baseline, got at least a tenth less CPU than it did then.
pub const MIN_TREE_CPU_PCT: f64 = 10.0;
pub const MIN_CPU_LOSS: f64 = 0.10;
/// The machine's CPU is a 1 s rate (`host_cpu_busy_pct`): a steady window
/// shorter than this holds too few readings to say the machine stayed
/// saturated through it, and the CPU is not judged.
pub const MIN_CPU_WINDOW_S: f64 = 10.0;

/// Feature keys this module reads (`analysis::features`).
const TIME_SHARE: &str = "other_processes.time_share";
const OTHERS_CPU: &str = "host_cpu_busy_pct.others_pct";
const XID: &str = "xid.count";

/// What kind of thing acted on the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// A process outside the benchmark's tree on its GPU.
    ForeignProcess,
    ThermalThrottle,
    /// HW slowdown, application clocks or another non-power reason.
    ClockSlowdown,
    /// SM clock below the baseline's without more power capping.
    ClocksBelowBaseline,
    /// Xid (including ECC) events.
    Xid,
    /// Processes outside the tree kept the machine's CPU saturated.
    CpuStolen,
}

/// One thing that acted on the run, with its numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cause {
    pub kind: CauseKind,
    /// The GPU (NVML index) it acted on; None for the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
    /// Foreign processes: PID and name (as the trace recorded them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<Neighbour>,
    /// The measured value: SM share of the foreign processes (%), the
    /// throttled share of the window (%), the SM clock (MHz), the Xid
    /// count, the CPU used outside the tree (% of the machine).
    pub value: Option<f64>,
    /// The same in the baseline, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<f64>,
    /// Share of the steady window the foreign processes were on the GPU (%).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_share_pct: Option<f64>,
    /// One sentence, for every output.
    pub text: String,
}

pub use crate::summary::Neighbour;

/// Everything that acted on one run from outside its tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Disturbance {
    /// The run (trace path, or "live").
    pub run: String,
    pub causes: Vec<Cause>,
}

impl Disturbance {
    /// One line naming every cause: what the warnings and exit-3 reason say.
    pub fn text(&self) -> String {
        let causes: Vec<&str> = self.causes.iter().map(|c| c.text.as_str()).collect();
        format!("{}: {}", self.run, causes.join("; "))
    }

    /// The gated counters that move because of these causes, whatever the
    /// change did: they are context in a disturbed run, not evidence.
    pub fn counters(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        for c in &self.causes {
            match c.kind {
                CauseKind::ForeignProcess => out.extend(["other_processes", "other_sm_share_pct"]),
                CauseKind::ThermalThrottle => out.push("throttle_thermal_pct"),
                CauseKind::ClockSlowdown
                | CauseKind::ClocksBelowBaseline
                | CauseKind::Xid
                | CauseKind::CpuStolen => {}
            }
        }
        out.dedup();
        out
    }

    pub fn has_foreign_process(&self) -> bool {
        self.causes
            .iter()
            .any(|c| c.kind == CauseKind::ForeignProcess)
    }
}

/// Whether something outside the benchmark's tree acted on this run
/// (module doc). `baseline`: what the environment looked like when it was
/// captured; without one (`gate capture`) only what needs no comparison
/// counts (a foreign process, throttling, Xid, a saturated machine).
pub fn detect(run: &Run, baseline: Option<&Baseline>) -> Option<Disturbance> {
    let mut causes = Vec::new();
    foreign_processes(run, baseline, &mut causes);
    throttling(run, baseline, &mut causes);
    clocks_below(run, baseline, &mut causes);
    xid(run, &mut causes);
    cpu_stolen(run, baseline, &mut causes);
    (!causes.is_empty()).then(|| Disturbance {
        run: run.summary.source.clone(),
        causes,
    })
}

/// A run-level mean of a GPU metric in the run (aggregate over GPUs).
fn run_mean(run: &Run, id: &str) -> Option<f64> {
    run.summary.gpu_aggregate.get(id).map(|m| m.mean)
}

/// The baseline's mean of a metric (its per-run values' mean).
fn baseline_mean(baseline: Option<&Baseline>, id: &str) -> Option<f64> {
    baseline?.metrics.get(id).map(|m| m.mean)
}

/// Foreign processes, one cause per GPU that had them for long enough.
fn foreign_processes(run: &Run, baseline: Option<&Baseline>, out: &mut Vec<Cause>) {
    let Some(share) = run.summary.features.get(TIME_SHARE).copied() else {
        return;
    };
    // An older baseline has no time share: its mean count, capped at 1,
    // is the share when one process came and went.
    let before = baseline
        .map(|b| {
            b.features
                .get(TIME_SHARE)
                .copied()
                .or_else(|| b.metrics.get("other_processes").map(|m| m.mean.min(1.0)))
                .unwrap_or(0.0)
        })
        .unwrap_or(0.0);
    if share < MIN_FOREIGN_TIME_SHARE || share - before < MIN_FOREIGN_TIME_SHARE {
        return;
    }
    let mut by_gpu = run.neighbours.clone();
    if by_gpu.is_empty() {
        // Counted by the sampler, but no process record names them.
        by_gpu.insert(run.summary.gpus.first().map_or(0, |g| g.index), Vec::new());
    }
    for (gpu, processes) in by_gpu {
        let sm = run
            .summary
            .gpus
            .iter()
            .find(|g| g.index == gpu)
            .and_then(|g| g.metrics.get("other_sm_share_pct"))
            .map(|m| m.mean)
            .or_else(|| run_mean(run, "other_sm_share_pct"));
        let who = if processes.is_empty() {
            "unnamed process(es)".to_string()
        } else {
            processes
                .iter()
                .map(|n| format!("pid {} '{}'", n.pid, n.name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push(Cause {
            kind: CauseKind::ForeignProcess,
            gpu: Some(gpu),
            text: format!(
                "{who} outside the benchmark's process tree shared GPU {gpu} ({} of the window, SM share {} as NVML attributes it)",
                pct(Some(share * 100.0)),
                pct(sm)
            ),
            processes,
            value: sm,
            baseline: baseline_mean(baseline, "other_sm_share_pct"),
            time_share_pct: Some(share * 100.0),
        });
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.1} %"))
}

/// Thermal throttling and other clock slowdowns above the baseline's.
fn throttling(run: &Run, baseline: Option<&Baseline>, out: &mut Vec<Cause>) {
    for (id, kind, what) in [
        (
            "throttle_thermal_pct",
            CauseKind::ThermalThrottle,
            "thermally throttled",
        ),
        (
            "throttle_other_pct",
            CauseKind::ClockSlowdown,
            "slowed by a hardware slowdown or a clock setting",
        ),
    ] {
        let Some(now) = run_mean(run, id) else {
            continue;
        };
        let before = baseline_mean(baseline, id);
        if now - before.unwrap_or(0.0) >= MIN_THROTTLE_RISE_PCT {
            out.push(Cause {
                kind,
                gpu: None,
                processes: Vec::new(),
                value: Some(now),
                baseline: before,
                time_share_pct: None,
                text: format!(
                    "the GPU was {what} {} of the window (baseline {})",
                    pct(Some(now)),
                    pct(before)
                ),
            });
        }
    }
}

/// The SM clock below the baseline's, not by the run's own power cap.
fn clocks_below(run: &Run, baseline: Option<&Baseline>, out: &mut Vec<Cause>) {
    let id = "sm_clock_mhz";
    let (Some(now), Some(before)) = (run_mean(run, id), baseline_mean(baseline, id)) else {
        return;
    };
    let capped_more = match (
        run_mean(run, "throttle_power_pct"),
        baseline_mean(baseline, "throttle_power_pct"),
    ) {
        (Some(n), Some(b)) => n - b >= MIN_THROTTLE_RISE_PCT,
        _ => true, // unknown: do not blame the environment
    };
    if before > 0.0 && now < before * (1.0 - MIN_CLOCK_DROP) && !capped_more {
        out.push(Cause {
            kind: CauseKind::ClocksBelowBaseline,
            gpu: None,
            processes: Vec::new(),
            value: Some(now),
            baseline: Some(before),
            time_share_pct: None,
            text: format!(
                "the SM clock averaged {now:.0} MHz against the baseline's {before:.0} MHz, without more power capping"
            ),
        });
    }
}

/// Xid events (ECC errors are Xids too) over the recording.
fn xid(run: &Run, out: &mut Vec<Cause>) {
    let n = run.summary.features.get(XID).copied().unwrap_or(0.0);
    if n > 0.0 {
        let codes: Vec<String> = run.xid_codes.iter().map(|c| c.to_string()).collect();
        out.push(Cause {
            kind: CauseKind::Xid,
            gpu: None,
            processes: Vec::new(),
            value: Some(n),
            baseline: None,
            time_share_pct: None,
            text: format!(
                "{n:.0} Xid event(s) (GPU or driver fault, ECC included) during the run{}",
                if codes.is_empty() {
                    String::new()
                } else {
                    format!(": Xid {}", codes.join(", "))
                }
            ),
        });
    }
}

/// Processes outside the tree kept the machine's CPU saturated.
fn cpu_stolen(run: &Run, baseline: Option<&Baseline>, out: &mut Vec<Cause>) {
    let (Some(others), Some(busy)) = (
        run.summary.features.get(OTHERS_CPU).copied(),
        run.summary.host.get("host_cpu_busy_pct").map(|m| m.mean),
    ) else {
        return;
    };
    // Without a baseline (`capture`) nothing says how busy the machine
    // usually is: a runner shared by parallel jobs is saturated all day,
    // and its runs are the reference, not a disturbance of it.
    let Some(before) = baseline.map(|b| b.features.get(OTHERS_CPU).copied()) else {
        return;
    };
    let window_s = (run.summary.steady_end_ms - run.summary.steady_start_ms) / 1000.0;
    if window_s < MIN_CPU_WINDOW_S {
        return;
    }
    // Stolen means the tree got less CPU than it used to: a benchmark that
    // waits on its GPU (or sleeps) loses nothing to a busy machine.
    let starved = match (
        run.summary.host.get("target_cpu_pct").map(|m| m.mean),
        baseline_mean(baseline, "target_cpu_pct"),
    ) {
        (Some(now), Some(then)) => then >= MIN_TREE_CPU_PCT && now <= then * (1.0 - MIN_CPU_LOSS),
        _ => false,
    };
    if starved
        && busy >= SATURATED_HOST_CPU_PCT
        && others >= MIN_OTHERS_CPU_PCT
        && others - before.unwrap_or(0.0) >= MIN_OTHERS_CPU_PCT
    {
        out.push(Cause {
            kind: CauseKind::CpuStolen,
            gpu: None,
            processes: Vec::new(),
            value: Some(others),
            baseline: before,
            time_share_pct: None,
            text: format!(
                "processes outside the benchmark's tree used {} of the machine's CPU while it was {} busy (baseline {})",
                pct(Some(others)),
                pct(Some(busy)),
                pct(before)
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::synthetic::Signature;

    fn detect_in(sig: Signature) -> Option<Disturbance> {
        let trace = crate::synthetic::trace(&sig, 1);
        let config = Config::default();
        let run = Run::derive(&trace, &config);
        detect(&run, None)
    }

    #[test]
    fn a_foreign_process_is_a_disturbance_and_the_own_tree_is_not() {
        let d = detect_in(Signature::contention()).expect("synthetic contention is disturbed");
        assert!(d.has_foreign_process(), "{d:?}");
        assert!(d.text().contains("outside the benchmark's process tree"));
        assert_eq!(d.counters(), vec!["other_processes", "other_sm_share_pct"]);
        assert_eq!(detect_in(Signature::healthy()), None);
    }

    #[test]
    fn thermal_throttling_is_a_disturbance() {
        let d = detect_in(Signature::thermal()).expect("synthetic thermal is disturbed");
        assert!(
            d.causes
                .iter()
                .any(|c| c.kind == CauseKind::ThermalThrottle),
            "{d:?}"
        );
    }

    /// A CPU-bound tree that got less CPU while others saturated the
    /// machine is disturbed, judged against its baseline; without one
    /// (`capture`) the CPU is not judged.
    #[test]
    fn cpu_taken_from_the_tree_by_others_is_a_disturbance_against_a_baseline() {
        let config = Config::default();
        let healthy = crate::synthetic::trace(&Signature::healthy(), 1);
        let meta = crate::baseline::BuildMeta {
            created: String::new(),
            commit: None,
            tags: Default::default(),
        };
        let base = crate::baseline::build(
            "b",
            &[Run::derive(&healthy, &config)],
            &config,
            false,
            &meta,
        )
        .unwrap();
        let mut starved = Signature::healthy();
        starved.host.insert("target_cpu_pct", 60.0);
        starved.host.insert("host_cpu_busy_pct", 97.0);
        let trace = crate::synthetic::trace(&starved, 1);
        let run = Run::derive(&trace, &config);
        let d = detect(&run, Some(&base)).expect("disturbed against the baseline");
        assert_eq!(d.causes[0].kind, CauseKind::CpuStolen, "{d:?}");
        assert_eq!(detect(&run, None), None);
        // The same busy machine, the tree's CPU as before: nothing stolen.
        let mut fed = Signature::healthy();
        fed.host.insert("host_cpu_busy_pct", 97.0);
        let trace = crate::synthetic::trace(&fed, 1);
        assert_eq!(detect(&Run::derive(&trace, &config), Some(&base)), None);
    }
}
