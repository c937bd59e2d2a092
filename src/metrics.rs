//! The metric catalogue: every counter `gate` records, with its unit, which
//! way is better, and how it is gated by default. The trace stores columns in
//! the order of `GPU_METRICS` / `HOST_METRICS` (the header names them, so a
//! reader never depends on this order).
//!
//! Default gating policy, and why (see README "How a regression is decided"):
//! - Utilizations that should stay high (SM active, tensor, GPU busy) are
//!   gated on the **mean** of the steady window: a p95 stays at 100 % while
//!   a job that stalls every other step loses half its mean.
//! - Fractions of time throttled, and counts of foreign processes, are gated
//!   with an **absolute** tolerance: their baseline is usually 0, where a
//!   relative threshold means nothing.
//! - Pipe mixes (FP32, FP16, DRAM, PCIe, power, clocks...) are **neutral**:
//!   they explain a regression (diagnose uses them) but moving is not a
//!   regression by itself (a faster kernel can legitimately use more DRAM).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    HigherIsBetter,
    LowerIsBetter,
    Neutral,
}

impl Direction {
    /// Every direction (the words a history row may hold).
    pub const ALL: [Direction; 3] = [Self::HigherIsBetter, Self::LowerIsBetter, Self::Neutral];

    pub fn as_str(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => "higher_is_better",
            Direction::LowerIsBetter => "lower_is_better",
            Direction::Neutral => "neutral",
        }
    }
}

/// Which statistic of a run's steady window a metric is judged on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    Mean,
    P5,
    P50,
    P95,
    P99,
    Max,
    Min,
}

impl Statistic {
    /// Every statistic.
    pub const ALL: [Statistic; 7] = [
        Self::Mean,
        Self::P5,
        Self::P50,
        Self::P95,
        Self::P99,
        Self::Max,
        Self::Min,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Statistic::Mean => "mean",
            Statistic::P5 => "p5",
            Statistic::P50 => "p50",
            Statistic::P95 => "p95",
            Statistic::P99 => "p99",
            Statistic::Max => "max",
            Statistic::Min => "min",
        }
    }

    pub fn parse(s: &str) -> Option<Statistic> {
        Some(match s {
            "mean" => Statistic::Mean,
            "p5" => Statistic::P5,
            "p50" | "median" => Statistic::P50,
            "p95" => Statistic::P95,
            "p99" => Statistic::P99,
            "max" => Statistic::Max,
            "min" => Statistic::Min,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// One value per GPU per sample.
    Gpu,
    /// One value per sample for the target's process tree or the machine.
    Host,
}

/// Static description of one metric.
#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    pub id: &'static str,
    pub unit: &'static str,
    pub direction: Direction,
    pub scope: Scope,
    /// Gated by default (neutral metrics never are).
    pub gated: bool,
    pub statistic: Statistic,
    /// Absolute tolerance in the metric's unit, used alongside the relative
    /// threshold: a change must exceed both (see `gate/`).
    pub(crate) abs_tolerance: f64,
    /// Where the number comes from.
    pub source: &'static str,
    pub description: &'static str,
}

#[allow(clippy::too_many_arguments)] // a const table constructor: one argument per column
const fn m(
    id: &'static str,
    unit: &'static str,
    direction: Direction,
    scope: Scope,
    gated: bool,
    statistic: Statistic,
    abs_tolerance: f64,
    source: &'static str,
    description: &'static str,
) -> MetricDef {
    MetricDef {
        id,
        unit,
        direction,
        scope,
        gated,
        statistic,
        abs_tolerance,
        source,
        description,
    }
}

use Direction::*;
use Scope::*;
use Statistic::*;

/// Per-GPU metrics, in trace column order.
pub const GPU_METRICS: &[MetricDef] = &[
    m("gpu_busy_pct", "%", HigherIsBetter, Gpu, true, Mean, 1.0, "NVML utilization.gpu", "Time some kernel was resident (busy, not useful work)"),
    m("mem_busy_pct", "%", Neutral, Gpu, false, Mean, 5.0, "NVML utilization.memory", "Time the memory controller was reading or writing (coarse)"),
    m("sm_clock_mhz", "MHz", HigherIsBetter, Gpu, false, Mean, 50.0, "NVML clock SM", "SM clock"),
    m("mem_clock_mhz", "MHz", Neutral, Gpu, false, Mean, 50.0, "NVML clock MEM", "Memory clock"),
    m("throttle_power_pct", "%", LowerIsBetter, Gpu, false, Mean, 10.0, "NVML clock-event reasons", "Share of samples with clocks held down by the power cap (SW or HW power brake)"),
    m("throttle_thermal_pct", "%", LowerIsBetter, Gpu, true, Mean, 10.0, "NVML clock-event reasons", "Share of samples with clocks held down by temperature (SW or HW thermal slowdown)"),
    m("throttle_other_pct", "%", LowerIsBetter, Gpu, false, Mean, 10.0, "NVML clock-event reasons", "Share of samples with clocks held down for another reason (sync boost, HW slowdown, app clocks)"),
    m("power_w", "W", Neutral, Gpu, false, Mean, 20.0, "NVML power usage", "Board power draw"),
    m("energy_j", "J", Neutral, Gpu, false, Max, 0.0, "integral of NVML power (counter read at start/end)", "Energy used since the recording started"),
    m("temperature_c", "C", Neutral, Gpu, false, Mean, 5.0, "NVML temperature (GPU die)", "GPU temperature"),
    m("mem_used_mib", "MiB", Neutral, Gpu, false, P95, 512.0, "NVML memory info", "Framebuffer memory in use (all processes)"),
    m("mem_used_pct", "%", LowerIsBetter, Gpu, false, P95, 5.0, "NVML memory info", "Framebuffer memory in use, share of total"),
    m("target_mem_mib", "MiB", Neutral, Gpu, false, P95, 512.0, "NVML running compute processes", "GPU memory held by the target's process tree"),
    m("processes", "count", LowerIsBetter, Gpu, true, Mean, 0.5, "NVML running compute + graphics processes", "Processes with a context on the GPU, the target's and others' (contention when it grows)"),
    m("other_processes", "count", LowerIsBetter, Gpu, true, Mean, 0.5, "NVML running processes not in the target tree", "Processes outside the target tree on the GPU (contention)"),
    m("target_sm_share_pct", "%", HigherIsBetter, Gpu, false, Mean, 10.0, "NVML process utilization", "SM utilization attributed to the target tree"),
    m("other_sm_share_pct", "%", LowerIsBetter, Gpu, true, Mean, 10.0, "NVML process utilization", "SM utilization attributed to processes outside the target tree"),
    m("graphics_pct", "%", Neutral, Gpu, false, Mean, 5.0, "GPM 1 graphics util", "Time any graphics or compute engine was active"),
    m("sm_active_pct", "%", HigherIsBetter, Gpu, true, Mean, 1.0, "GPM 2 SM util", "Time SMs had a warp resident, averaged over SMs"),
    m("sm_occupancy_pct", "%", Neutral, Gpu, false, Mean, 5.0, "GPM 3 SM occupancy", "Resident warps over the maximum, averaged over SMs"),
    m("integer_pct", "%", Neutral, Gpu, false, Mean, 5.0, "GPM 4 integer util", "Integer pipe activity"),
    m("tensor_pct", "%", HigherIsBetter, Gpu, true, Mean, 1.0, "GPM 5 any tensor util", "Tensor-core activity (any precision)"),
    m("dfma_tensor_pct", "%", Neutral, Gpu, false, Mean, 5.0, "GPM 6 DFMA tensor util", "FP64 tensor-core activity"),
    m("hmma_tensor_pct", "%", Neutral, Gpu, false, Mean, 5.0, "GPM 7 HMMA tensor util", "FP16/BF16 tensor-core activity"),
    m("imma_tensor_pct", "%", Neutral, Gpu, false, Mean, 5.0, "GPM 9 IMMA tensor util", "Integer tensor-core activity"),
    m("dram_pct", "%", Neutral, Gpu, false, Mean, 5.0, "GPM 10 DRAM bandwidth util", "DRAM bandwidth in use, share of peak"),
    m("fp64_pct", "%", Neutral, Gpu, false, Mean, 5.0, "GPM 11 FP64 util", "FP64 pipe activity"),
    m("fp32_pct", "%", Neutral, Gpu, false, Mean, 5.0, "GPM 12 FP32 util", "FP32 pipe activity"),
    m("fp16_pct", "%", Neutral, Gpu, false, Mean, 5.0, "GPM 13 FP16 util", "FP16 pipe activity"),
    m("pcie_tx_mib_s", "MiB/s", Neutral, Gpu, false, Mean, 100.0, "GPM 20 PCIe TX (no GPM: NVML PCIe throughput, own thread)", "PCIe traffic from the GPU"),
    m("pcie_rx_mib_s", "MiB/s", Neutral, Gpu, false, Mean, 100.0, "GPM 21 PCIe RX (no GPM: NVML PCIe throughput, own thread)", "PCIe traffic to the GPU"),
    m("nvlink_tx_mib_s", "MiB/s", Neutral, Gpu, false, Mean, 100.0, "GPM 61 NVLink total TX", "NVLink traffic from the GPU"),
    m("nvlink_rx_mib_s", "MiB/s", Neutral, Gpu, false, Mean, 100.0, "GPM 60 NVLink total RX", "NVLink traffic to the GPU"),
];

/// Host metrics (target process tree and machine), in trace column order.
pub const HOST_METRICS: &[MetricDef] = &[
    m(
        "target_cpu_pct",
        "%",
        Neutral,
        Host,
        false,
        Mean,
        10.0,
        "cgroup cpu.stat usage_usec, else each process's CPU clock",
        "CPU used by the target tree (100 = one core)",
    ),
    m(
        "target_cpu_user_pct",
        "%",
        Neutral,
        Host,
        false,
        Mean,
        10.0,
        "cgroup cpu.stat user_usec, else the CPU clocks by /proc/PID/stat's user share",
        "User CPU of the target tree (100 = one core)",
    ),
    m(
        "target_cpu_sys_pct",
        "%",
        Neutral,
        Host,
        false,
        Mean,
        10.0,
        "cgroup cpu.stat system_usec, else the CPU clocks by /proc/PID/stat's system share",
        "System CPU of the target tree (100 = one core)",
    ),
    m(
        "target_rss_mib",
        "MiB",
        LowerIsBetter,
        Host,
        false,
        P95,
        256.0,
        "/proc/PID/stat rss, once a second",
        "Resident memory of the target tree",
    ),
    m(
        "target_threads",
        "count",
        Neutral,
        Host,
        false,
        Max,
        1.0,
        "/proc/PID/stat num_threads",
        "Threads in the target tree",
    ),
    m(
        "target_processes",
        "count",
        Neutral,
        Host,
        false,
        Max,
        1.0,
        "/proc children",
        "Processes in the target tree",
    ),
    m(
        "target_read_mib_s",
        "MiB/s",
        Neutral,
        Host,
        false,
        Mean,
        10.0,
        "/proc/PID/io read_bytes, 1 s rate",
        "Storage reads of the target tree",
    ),
    m(
        "target_write_mib_s",
        "MiB/s",
        Neutral,
        Host,
        false,
        Mean,
        10.0,
        "/proc/PID/io write_bytes, 1 s rate",
        "Storage writes of the target tree",
    ),
    m(
        "target_ctx_switches_per_s",
        "1/s",
        Neutral,
        Host,
        false,
        Mean,
        100.0,
        "/proc/PID/status ctxt switches, 1 s rate",
        "Voluntary + involuntary context switches of the target tree",
    ),
    m(
        "target_vol_ctx_switches_per_s",
        "1/s",
        Neutral,
        Host,
        false,
        Mean,
        100.0,
        "/proc/PID/status voluntary_ctxt_switches, 1 s rate",
        "Voluntary context switches (blocking waits) of the target tree",
    ),
    m(
        "host_cpu_busy_pct",
        "%",
        Neutral,
        Host,
        false,
        Mean,
        10.0,
        "/proc/stat, 1 s rate",
        "Machine-wide CPU busy (100 = all cores)",
    ),
    m(
        "host_iowait_pct",
        "%",
        LowerIsBetter,
        Host,
        false,
        Mean,
        5.0,
        "/proc/stat, 1 s rate",
        "Machine-wide iowait (100 = all cores)",
    ),
    // Per role (sampler::host): MAIN holds a GPU context (the tree's root
    // while none does), WORKERS the rest of the tree, OUTSIDE the machine.
    m(
        "main_cpu_pct",
        "%",
        Neutral,
        Host,
        false,
        Mean,
        10.0,
        "each main process's CPU clock, or /proc/PID/stat",
        "CPU of the main processes (those holding a GPU context, else the tree's root), all threads (100 = one core)",
    ),
    m(
        "main_vol_ctx_switches_per_s",
        "1/s",
        Neutral,
        Host,
        false,
        Mean,
        100.0,
        "/proc/PID/status voluntary_ctxt_switches of the main processes, 1 s rate",
        "Voluntary context switches (blocking waits) of the main processes' main threads",
    ),
    m(
        "workers",
        "count",
        Neutral,
        Host,
        false,
        Max,
        1.0,
        "/proc children, less the main processes",
        "Worker processes: the target tree's processes that are not main (loader, compile, tokenizer workers)",
    ),
    m(
        "workers_cpu_pct",
        "%",
        Neutral,
        Host,
        false,
        Mean,
        10.0,
        "each worker's CPU clock, or /proc/PID/stat",
        "CPU of all worker processes together (100 = one core)",
    ),
    m(
        "workers_busy_pct",
        "%",
        Neutral,
        Host,
        false,
        Mean,
        10.0,
        "/proc/PID/stat, workers_cpu_pct / workers",
        "The mean worker's share of a core (100 = every worker saturates a core); missing without workers",
    ),
    m(
        "workers_ctx_switches_per_s",
        "1/s",
        Neutral,
        Host,
        false,
        Mean,
        100.0,
        "/proc/PID/status ctxt switches of the workers, 1 s rate",
        "Voluntary + involuntary context switches of the workers' main threads",
    ),
    m(
        "outside_cpu_pct",
        "%",
        Neutral,
        Host,
        false,
        Mean,
        10.0,
        "/proc/stat busy less the tree and gate, 1 s rate",
        "Busy CPU of the machine outside the target tree and gate (100 = one core)",
    ),
];

/// The per-role host columns (main process, workers, outside the tree):
/// traces recorded before them lack them, and read them as missing.
pub const ROLE_METRIC_IDS: &[&str] = &[
    "main_cpu_pct",
    "main_vol_ctx_switches_per_s",
    "workers",
    "workers_cpu_pct",
    "workers_busy_pct",
    "workers_ctx_switches_per_s",
    "outside_cpu_pct",
];

/// Tensor-core activity: the counter closest to a rate of useful math.
pub(crate) const TENSOR_ACTIVITY_ID: &str = "tensor_pct";
/// Counters of how much of the time the GPU worked, not how much it did.
pub(crate) const TIME_BUSY_IDS: &[&str] = &["gpu_busy_pct", "sm_active_pct"];

/// Run-level metrics that are not sampled: the benchmark's own numbers.
// Counted from the end of warm-up when one is marked (`RunSummary::
// wall_time_s`): start-up drifted 6.6-9.4 s over five identical recsys runs.
// Absolute floor 1 s for runs without one: the start-up of a Python GPU
// benchmark (interpreter, imports, CUDA context) jitters by 0.6-1.3 s
// between healthy runs of the same code on the H200 machines
// (fixtures/README.md; cold starts add 8-10 s).
pub(crate) const WALL_TIME: MetricDef = m(
    "wall_time_s",
    "s",
    LowerIsBetter,
    Host,
    true,
    Mean,
    1.0,
    "target exit - end of warm-up (target start when none is marked)",
    "Wall time of the benchmark command after its warm-up",
);

/// What a metric is called where people read it (diagnosis tables, prose):
/// short, no unit, no internal id. Every catalogue metric has one (a unit
/// test checks); a benchmark's own metric is called by its id.
pub fn label(id: &str) -> &str {
    match id {
        "gpu_busy_pct" => "GPU busy",
        "mem_busy_pct" => "memory controller busy",
        "sm_clock_mhz" => "SM clock",
        "mem_clock_mhz" => "memory clock",
        "throttle_power_pct" => "samples power-capped",
        "throttle_thermal_pct" => "samples thermally throttled",
        "throttle_other_pct" => "samples otherwise throttled",
        "power_w" => "board power",
        "energy_j" => "energy",
        "temperature_c" => "GPU temperature",
        "mem_used_mib" => "GPU memory in use",
        "mem_used_pct" => "GPU memory in use (share)",
        "target_mem_mib" => "GPU memory of the benchmark",
        "processes" => "processes on the GPU",
        "other_processes" => "other processes on the GPU",
        "target_sm_share_pct" => "benchmark's SM share",
        "other_sm_share_pct" => "others' SM share",
        "graphics_pct" => "graphics engine active",
        "sm_active_pct" => "SM active",
        "sm_occupancy_pct" => "SM occupancy",
        "integer_pct" => "integer pipe",
        "tensor_pct" => "tensor activity",
        "dfma_tensor_pct" => "FP64 tensor activity",
        "hmma_tensor_pct" => "FP16/BF16 tensor activity",
        "imma_tensor_pct" => "integer tensor activity",
        "dram_pct" => "DRAM bandwidth",
        "fp64_pct" => "FP64 pipe",
        "fp32_pct" => "FP32 pipe",
        "fp16_pct" => "FP16 pipe",
        "pcie_tx_mib_s" => "PCIe from the GPU",
        "pcie_rx_mib_s" => "PCIe to the GPU",
        "nvlink_tx_mib_s" => "NVLink out",
        "nvlink_rx_mib_s" => "NVLink in",
        "target_cpu_pct" => "benchmark CPU",
        "target_cpu_user_pct" => "benchmark user CPU",
        "target_cpu_sys_pct" => "benchmark system CPU",
        "target_rss_mib" => "benchmark resident memory",
        "target_threads" => "benchmark threads",
        "target_processes" => "benchmark processes",
        "target_read_mib_s" => "benchmark storage reads",
        "target_write_mib_s" => "benchmark storage writes",
        "target_ctx_switches_per_s" => "benchmark context switches",
        "target_vol_ctx_switches_per_s" => "benchmark blocking waits",
        "host_cpu_busy_pct" => "machine CPU busy",
        "host_iowait_pct" => "machine iowait",
        "main_cpu_pct" => "main process CPU",
        "main_vol_ctx_switches_per_s" => "main process blocking waits",
        "workers" => "worker processes",
        "workers_cpu_pct" => "workers' CPU",
        "workers_busy_pct" => "worker saturation",
        "workers_ctx_switches_per_s" => "workers' context switches",
        "outside_cpu_pct" => "CPU outside the benchmark",
        "wall_time_s" => "wall time",
        other => other,
    }
}

/// The range a metric's values lie in, when bounded: GPU percentages
/// (shares of time, of bandwidth, of SMs) and the machine's CPU shares lie
/// in 0..100. A percentage of one core (a process tree's CPU) is not
/// bounded. Noise bands never exceed it (`noise::Noise::within_range`).
pub fn range(id: &str) -> Option<f64> {
    let d = find(id)?;
    let bounded = (d.scope == Scope::Gpu && d.unit == "%")
        || matches!(d.id, "host_cpu_busy_pct" | "host_iowait_pct");
    bounded.then_some(100.0)
}

pub fn find(id: &str) -> Option<&'static MetricDef> {
    GPU_METRICS
        .iter()
        .chain(HOST_METRICS.iter())
        .chain(std::iter::once(&WALL_TIME))
        .find(|d| d.id == id)
}

/// A GPM metric (Hopper+ GPU performance monitoring): read in pairs every
/// `--gpm-interval`, missing between readings, subject to the glitch rule.
pub(crate) fn is_gpm(id: &str) -> bool {
    find(id).is_some_and(|d| d.source.starts_with("GPM"))
}

impl MetricDef {
    /// What a machine needs to measure this metric: GPM (Hopper or newer),
    /// NVML (any NVIDIA driver), `/proc` (Linux), or nothing beyond the
    /// benchmark's exit.
    pub fn needs(&self) -> &'static str {
        if is_gpm(self.id) {
            "GPM (Hopper+)"
        } else if self.source.starts_with("NVML") || self.source.contains("NVML") {
            "NVML"
        } else if HOST_METRICS.iter().any(|d| d.id == self.id) {
            // The tree's and the machine's counters: /proc, its CPU
            // clocks or the tree's cgroup, all Linux.
            "/proc"
        } else {
            "the benchmark's exit"
        }
    }

    /// `gpu` (one value per GPU, and their mean), `host` or `run`.
    pub(crate) fn scope_name(&self) -> &'static str {
        if self.id == WALL_TIME.id {
            "run"
        } else {
            match self.scope {
                Scope::Gpu => "gpu",
                Scope::Host => "host",
            }
        }
    }
}

pub fn all() -> impl Iterator<Item = &'static MetricDef> {
    GPU_METRICS
        .iter()
        .chain(HOST_METRICS.iter())
        .chain(std::iter::once(&WALL_TIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_has_a_human_label() {
        for d in all() {
            assert_ne!(label(d.id), d.id, "{} has no label in metrics::label", d.id);
        }
    }

    #[test]
    fn ids_are_unique_and_neutral_metrics_are_never_gated() {
        let mut seen = std::collections::BTreeSet::new();
        for d in all() {
            assert!(seen.insert(d.id), "duplicate metric id {}", d.id);
            if d.direction == Direction::Neutral {
                assert!(!d.gated, "{} is neutral but gated", d.id);
            }
        }
    }

    #[test]
    fn every_metric_says_what_it_needs() {
        assert_eq!(find("sm_active_pct").unwrap().needs(), "GPM (Hopper+)");
        assert_eq!(find("gpu_busy_pct").unwrap().needs(), "NVML");
        assert_eq!(find("energy_j").unwrap().needs(), "NVML");
        assert_eq!(find("target_cpu_pct").unwrap().needs(), "/proc");
        assert_eq!(WALL_TIME.needs(), "the benchmark's exit");
        for d in all() {
            let gpm = d.source.starts_with("GPM");
            assert_eq!(d.needs() == "GPM (Hopper+)", gpm, "{}", d.id);
        }
    }

    #[test]
    fn statistic_names_round_trip() {
        for s in Statistic::ALL {
            assert_eq!(Statistic::parse(s.as_str()), Some(s));
        }
    }
}

/// The catalogue id (or one of `more`, a config's user metrics) closest to
/// a mistyped `word`, when close enough to be a typo: "did you mean" for
/// every place a metric id is typed (gate.toml, `gate history --metric`).
/// A label's `[gpuN]` and `nodeN/` parts are ignored.
pub(crate) fn suggest<'a>(word: &str, more: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let bare = word.rsplit('/').next().unwrap_or(word);
    let bare = bare.split('[').next().unwrap_or(bare);
    let candidates: Vec<&str> = all().map(|m| m.id).chain(more).collect();
    if candidates.contains(&bare) {
        return None;
    }
    candidates
        .into_iter()
        .map(|c| (crate::spelling::levenshtein(bare, c), c))
        .filter(|(d, c)| *d <= 3.max(c.len() / 5) && *d < c.len())
        .min()
        .map(|(_, c)| word.replacen(bare, c, 1))
}

/// " (did you mean 'X'?)" or nothing.
pub(crate) fn did_you_mean<'a>(word: &str, more: impl IntoIterator<Item = &'a str>) -> String {
    suggest(word, more)
        .map(|s| format!(" (did you mean '{s}'?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod suggest_tests {
    use super::*;

    #[test]
    fn a_typo_gets_the_closest_id_and_a_known_id_none() {
        assert_eq!(
            suggest("sm_activ_pct", []).as_deref(),
            Some("sm_active_pct")
        );
        assert_eq!(
            suggest("sm_activ_pct[gpu1]", []).as_deref(),
            Some("sm_active_pct[gpu1]")
        );
        assert_eq!(
            suggest("samples_per_sec", ["samples_per_s"]).as_deref(),
            Some("samples_per_s")
        );
        assert_eq!(suggest("sm_active_pct", []), None);
        assert_eq!(suggest("zzzzzzzzzzzzzzzzzzzzzz", []), None);
    }
}
