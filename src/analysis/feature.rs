//! The rule features' one vocabulary: every feature a rule may name, in one
//! table (`Feature::ALL`), with its key, its label, its unit, what it is
//! computed over, and whether it needs GPM. Both engines resolve names
//! through it: the batch engine (`features::compute`, a whole run) and the
//! window engine (`watch::window`, a sliding window), each with an
//! exhaustive match over `Feature`, so a feature added here does not
//! compile until both say what it is.

/// One rule feature ("metric.feature").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Feature {
    IdleFrac,
    SaturatedFrac,
    BusyCv,
    IdleGapsPerMin,
    IdleGapMeanS,
    GapRegularity,
    Periodicity,
    PeriodS,
    BusySpread,
    StragglerGpu,
    SmBusyRatio,
    SmStarvedFrac,
    SmSpread,
    TensorSpread,
    TargetCores,
    TargetBusyWhenGpuIdle,
    OthersCpuPct,
    OtherPids,
    OtherTimeShare,
    XidCount,
    GpmInvalidCount,
    WorkRate,
    Framework(Framework),
}

/// A framework `analysis::framework` can name (`framework.<name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Framework {
    Torch,
    Jax,
    Tensorflow,
    Vllm,
    Tensorrt,
    TritonServer,
    Onnxruntime,
}

/// What a feature is computed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The samples of the steady window (a run's, or a watch's window).
    Samples,
    /// The events or process lists of the recording (a watch: its window).
    Records,
    /// The run as a whole: what it runs on, found once.
    Run,
    /// The benchmark's own output, read with gate.toml's user metrics
    /// after the run; no sliding window has it.
    BenchmarkOutput,
}

/// One row of the table.
struct Row {
    feature: Feature,
    name: &'static str,
    label: &'static str,
    unit: &'static str,
    scope: Scope,
    needs_gpm: bool,
}

const fn row(
    feature: Feature,
    name: &'static str,
    label: &'static str,
    unit: &'static str,
    scope: Scope,
    needs_gpm: bool,
) -> Row {
    Row {
        feature,
        name,
        label,
        unit,
        scope,
        needs_gpm,
    }
}

use Feature as F;
use Framework as Fw;
use Scope::{BenchmarkOutput, Records, Run, Samples};

const FRAMEWORK_FOUND: &str = "framework found (1 = yes)";

/// The table: (feature, key, label for people, unit, scope, needs GPM).
#[rustfmt::skip]
const TABLE: [Row; 29] = [
    row(F::IdleFrac, "gpu_busy_pct.idle_frac", "share of samples with the GPU idle", "fraction", Samples, false),
    row(F::SaturatedFrac, "gpu_busy_pct.saturated_frac", "share of samples with the GPU saturated", "fraction", Samples, false),
    row(F::BusyCv, "gpu_busy_pct.cv", "variation of GPU busy (CV)", "ratio", Samples, false),
    row(F::IdleGapsPerMin, "gpu_busy_pct.idle_gaps_per_min", "idle gaps of the GPU", "per minute", Samples, false),
    row(F::IdleGapMeanS, "gpu_busy_pct.idle_gap_mean_s", "mean idle gap of the GPU", "s", Samples, false),
    row(F::GapRegularity, "gpu_busy_pct.gap_regularity", "regularity of the idle gaps", "0..1", Samples, false),
    row(F::Periodicity, "gpu_busy_pct.periodicity", "periodicity of GPU busy", "0..1", Samples, false),
    row(F::PeriodS, "gpu_busy_pct.period_s", "period of the busy pattern", "s", Samples, false),
    row(F::BusySpread, "gpu_busy_pct.gpu_spread", "GPU busy, spread between GPUs", "% points", Samples, false),
    row(F::StragglerGpu, "gpu_busy_pct.straggler_gpu", "GPU with the lowest busy", "GPU index", Samples, false),
    row(F::SmBusyRatio, "sm_active_pct.busy_ratio", "SM active per busy second", "ratio", Samples, true),
    row(F::SmStarvedFrac, "sm_active_pct.starved_frac", "share of samples busy with idle SMs", "fraction", Samples, true),
    row(F::SmSpread, "sm_active_pct.gpu_spread", "SM active, spread between GPUs", "% points", Samples, true),
    row(F::TensorSpread, "tensor_pct.gpu_spread", "tensor activity, spread between GPUs", "% points", Samples, true),
    row(F::TargetCores, "target_cpu_pct.cores", "cores the benchmark used", "cores", Samples, false),
    row(F::TargetBusyWhenGpuIdle, "target_cpu_pct.busy_when_gpu_idle", "benchmark CPU busy while the GPU idled", "fraction", Samples, false),
    row(F::OthersCpuPct, "host_cpu_busy_pct.others_pct", "CPU used by other work", "%", Samples, false),
    row(F::OtherPids, "other_processes.distinct_pids", "distinct other processes on the GPU", "count", Records, false),
    row(F::OtherTimeShare, "other_processes.time_share", "share of samples with another process on the GPU", "fraction", Samples, false),
    row(F::XidCount, "xid.count", "Xid events", "count", Records, false),
    row(F::GpmInvalidCount, "gpm.invalid_count", "invalid GPM readings", "count", Records, true),
    row(F::WorkRate, "benchmark.work_rate", "the benchmark's rate of work", "units/s", BenchmarkOutput, false),
    row(F::Framework(Fw::Torch), "framework.torch", FRAMEWORK_FOUND, "flag", Run, false),
    row(F::Framework(Fw::Jax), "framework.jax", FRAMEWORK_FOUND, "flag", Run, false),
    row(F::Framework(Fw::Tensorflow), "framework.tensorflow", FRAMEWORK_FOUND, "flag", Run, false),
    row(F::Framework(Fw::Vllm), "framework.vllm", FRAMEWORK_FOUND, "flag", Run, false),
    row(F::Framework(Fw::Tensorrt), "framework.tensorrt", FRAMEWORK_FOUND, "flag", Run, false),
    row(F::Framework(Fw::TritonServer), "framework.triton_server", FRAMEWORK_FOUND, "flag", Run, false),
    row(F::Framework(Fw::Onnxruntime), "framework.onnxruntime", FRAMEWORK_FOUND, "flag", Run, false),
];

impl Feature {
    /// Every feature, in the table's order.
    pub const ALL: [Feature; 29] = {
        let mut all = [Feature::IdleFrac; 29];
        let mut i = 0;
        while i < TABLE.len() {
            all[i] = TABLE[i].feature;
            i += 1;
        }
        all
    };

    fn row(self) -> &'static Row {
        TABLE
            .iter()
            .find(|r| r.feature == self)
            .expect("every feature is a row of TABLE (a unit test checks)")
    }

    /// The key rules name it by ("gpu_busy_pct.idle_frac").
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// What it is called where people read it (diagnosis tables).
    pub fn label(self) -> &'static str {
        self.row().label
    }

    pub fn unit(self) -> &'static str {
        self.row().unit
    }

    pub fn scope(self) -> Scope {
        self.row().scope
    }

    /// Computed from GPM counters (SM active, tensor activity) or about
    /// them: absent on a GPU without GPM.
    pub fn needs_gpm(self) -> bool {
        self.row().needs_gpm
    }

    /// The feature a rule names, if any.
    pub fn from_name(name: &str) -> Option<Feature> {
        TABLE.iter().find(|r| r.name == name).map(|r| r.feature)
    }

    /// Every feature's key.
    pub fn names() -> impl Iterator<Item = &'static str> {
        TABLE.iter().map(|r| r.name)
    }
}

impl Framework {
    /// The name `analysis::framework` gives it ("torch", "triton_server").
    pub fn name(self) -> &'static str {
        let key = Feature::Framework(self).name();
        &key["framework.".len()..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_each_feature_once_and_every_framework() {
        let names: std::collections::BTreeSet<&str> = Feature::names().collect();
        assert_eq!(names.len(), TABLE.len(), "a key twice");
        let features: std::collections::BTreeSet<Feature> = Feature::ALL.into_iter().collect();
        assert_eq!(features.len(), TABLE.len(), "a feature twice");
        for f in Feature::ALL {
            assert_eq!(Feature::from_name(f.name()), Some(f));
            assert!(!f.label().is_empty() && !f.unit().is_empty(), "{f:?}");
        }
        let frameworks: Vec<&str> = Feature::ALL
            .iter()
            .filter_map(|f| match f {
                Feature::Framework(fw) => Some(fw.name()),
                _ => None,
            })
            .collect();
        assert_eq!(frameworks, super::super::framework::NAMES);
    }
}
