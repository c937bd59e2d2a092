//! Baselines: the known-good statistics of a benchmark, stored as TOML in the
//! repository (`baselines/NAME.toml`) and reviewed in merge requests.
//!
//! This file is what a baseline IS: the schema (every field, with
//! `deny_unknown_fields`) and how rules and verdicts read it. How one is
//! built from runs is `build.rs`; how it is stored (review-friendly TOML,
//! loading with `file: line L, column C` errors, the never-lose-data write
//! with lock, diff and atomic rename) is `store.rs`. Both are re-exported
//! here: callers write `baseline::build`, `baseline::load`, `baseline::store`.
//!
//! What a metric entry holds: statistics pooled over all steady samples of
//! all runs (`n`, `mean`, `stdev`, percentiles), and each run's own summary
//! (`runs`), so the gate knows how much the statistic moves between two
//! runs of the same code (see `gate/` and docs/gating.md).

mod build;
/// Load-time checks of a baseline's numbers and name.
mod check;
mod spans;
pub(crate) mod store;

pub use build::{build, BuildMeta};
pub use spans::SpanBaseline;
pub use store::{
    load, parse, path_for, refresh_hint, store, to_toml, verify_readable, StoreOutcome,
};

use crate::error::GateError;
use crate::metrics::{Direction, Statistic};
use crate::stats::{MetricSource, MetricStats, Stat};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the baseline file format. Bump on any incompatible change.
pub(crate) const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub schema_version: u32,
    pub name: String,
    pub gate_version: String,
    /// When it was captured, RFC 3339 UTC.
    pub created: String,
    /// Commit of the code under test, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    pub environment: Environment,
    pub capture: CaptureSettings,
    /// Derived features (`analysis::features`), averaged over runs, so rules
    /// can evaluate the baseline like a run.
    #[serde(default)]
    pub features: BTreeMap<String, f64>,
    /// GPU metrics aggregated over GPUs (per-sample mean), host metrics,
    /// `wall_time_s` and user metrics.
    #[serde(default)]
    pub metrics: BTreeMap<String, BaselineMetric>,
    /// Per-GPU metrics, keyed `gpu<slot>`; only when there are several GPUs
    /// (with one, the aggregate is that GPU).
    #[serde(default)]
    pub gpus: BTreeMap<String, GpuBaseline>,
    /// Each benchmark's own span of a multi-benchmark run, by metric id
    /// (`spans`): what explains that benchmark's regression.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub spans: BTreeMap<String, SpanBaseline>,
}

/// What must match for a new run to be comparable, plus provenance.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    pub gpu_model: String,
    pub gpu_count: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) driver_major: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cuda_driver_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) nvml_version: Option<String>,
    #[serde(default)]
    pub gpm_supported: bool,
    #[serde(default)]
    pub hostname: String,
    #[serde(default)]
    pub cpu_model: String,
    #[serde(default)]
    pub cpu_count: u32,
    #[serde(default)]
    pub kernel: String,
    #[serde(default)]
    pub os: String,
}

impl Environment {
    pub(crate) fn from_fingerprint(fp: &crate::trace::Fingerprint) -> Environment {
        Environment {
            gpu_model: fp.gpu_model(),
            gpu_count: fp.gpus.len(),
            driver_version: fp.driver_version.clone(),
            driver_major: fp.driver_major(),
            cuda_driver_version: fp.cuda_driver_version.clone(),
            nvml_version: fp.nvml_version.clone(),
            gpm_supported: !fp.gpus.is_empty() && fp.gpus.iter().all(|g| g.gpm_supported),
            hostname: fp.host.hostname.clone(),
            cpu_model: fp.host.cpu_model.clone(),
            cpu_count: fp.host.cpu_count,
            kernel: fp.host.kernel.clone(),
            os: fp.host.os.clone(),
        }
    }

    /// Differences that make two runs incomparable: GPU model, GPU count,
    /// driver major version. Empty when comparable.
    pub(crate) fn mismatches(&self, other: &Environment) -> Vec<String> {
        let mut out = Vec::new();
        if self.gpu_model != other.gpu_model {
            out.push(format!(
                "GPU model '{}' (baseline) vs '{}' (this run)",
                self.gpu_model, other.gpu_model
            ));
        }
        if self.gpu_count != other.gpu_count {
            out.push(format!(
                "GPU count {} (baseline) vs {} (this run)",
                self.gpu_count, other.gpu_count
            ));
        }
        if self.driver_major != other.driver_major {
            out.push(format!(
                "driver major version {} (baseline) vs {} (this run)",
                self.driver_major.as_deref().unwrap_or("unknown"),
                other.driver_major.as_deref().unwrap_or("unknown")
            ));
        }
        out
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct CaptureSettings {
    pub interval_ms: u64,
    pub warmup_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) duration_ms: Option<u64>,
    /// Which samples the statistics use, in words.
    pub steady_window: String,
    /// Independent runs behind the statistics.
    pub runs: usize,
    /// The traces were the nodes of one run, not repeated runs.
    #[serde(default)]
    pub multi_node: bool,
    #[serde(default)]
    pub command: Vec<String>,
    /// One entry per trace, in order.
    #[serde(default)]
    pub(crate) sources: Vec<SourceRun>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct SourceRun {
    pub trace: String,
    pub(crate) steady_start_ms: f64,
    pub(crate) steady_end_ms: f64,
    pub(crate) steady_samples: usize,
    pub(crate) total_samples: usize,
    /// The measured phase's wall time (`RunSummary::wall_time_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time_s: Option<f64>,
    /// Start-up before it; absent when the run marked no warm-up, and in
    /// baselines written before gate measured wall time after warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) startup_s: Option<f64>,
    /// What the window left out after it (`RunSummary::teardown_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct GpuBaseline {
    pub index: u32,
    pub name: String,
    #[serde(default)]
    pub metrics: BTreeMap<String, BaselineMetric>,
}

/// One metric of a baseline.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BaselineMetric {
    /// The benchmark's own name in its harness's file (`test_sum[0]`) of
    /// a metric a glob table read; the key is its sanitised id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<String>,
    pub unit: String,
    pub direction: Direction,
    /// The statistic the gate judged this metric on at capture time.
    pub statistic: Statistic,
    pub gated: bool,
    /// Steady samples pooled over all runs (for run-level metrics: runs).
    pub n: usize,
    pub mean: f64,
    pub stdev: f64,
    pub min: f64,
    pub p5: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    /// Each run's own summary, in capture order.
    pub runs: Vec<RunStat>,
}

/// One run's summary of one metric.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RunStat {
    /// This run's value of the metric's `statistic`.
    pub value: f64,
    pub n: usize,
    pub mean: f64,
    /// 95 % half-width of this run's mean (batch means), when n allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95: Option<f64>,
    pub p5: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
}

impl RunStat {
    pub(crate) fn from_stats(s: &MetricStats, statistic: Statistic) -> RunStat {
        RunStat {
            value: s.get(statistic),
            n: s.n,
            mean: s.mean,
            ci95: s.mean_ci95,
            p5: s.p5,
            p50: s.p50,
            p95: s.p95,
            p99: s.p99,
            min: s.min,
            max: s.max,
        }
    }

    pub fn get(&self, stat: Statistic) -> f64 {
        self.as_stats().get(stat)
    }

    /// The same numbers as `MetricStats`, so one lookup serves both.
    fn as_stats(&self) -> MetricStats {
        MetricStats {
            n: self.n,
            mean: self.mean,
            stdev: 0.0,
            min: self.min,
            p5: self.p5,
            p50: self.p50,
            p95: self.p95,
            p99: self.p99,
            max: self.max,
            mean_ci95: self.ci95,
        }
    }
}

impl BaselineMetric {
    /// Any statistic (mean, p95, stdev, n...), as the rules read it.
    pub(crate) fn get_stat(&self, stat: Stat) -> f64 {
        MetricStats {
            n: self.n,
            mean: self.mean,
            stdev: self.stdev,
            min: self.min,
            p5: self.p5,
            p50: self.p50,
            p95: self.p95,
            p99: self.p99,
            max: self.max,
            mean_ci95: None,
        }
        .get_stat(stat)
    }
}

impl MetricSource for Baseline {
    /// A judged statistic of a repeated baseline is the mean of its runs'
    /// values, the number the verdict table shows as "baseline"
    /// (`Observation::from_baseline`), so a diagnosis never cites 179 %
    /// for a baseline the table prints as 178.9 %. Other statistics
    /// (stdev, n) read the pooled samples.
    fn stat(&self, metric: &str, stat: Stat, gpu: Option<usize>) -> Option<f64> {
        let m = self.metric(metric, gpu)?;
        match stat {
            Stat::Of(s) if !m.runs.is_empty() => {
                let vals: Vec<f64> = m
                    .runs
                    .iter()
                    .map(|r| r.get(s))
                    .filter(|v| v.is_finite())
                    .collect();
                (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
            }
            _ => Some(m.get_stat(stat)),
        }
    }

    fn feature(&self, name: &str) -> Option<f64> {
        self.features.get(name).copied()
    }

    fn gpu_count(&self) -> usize {
        self.environment.gpu_count
    }

    fn runs(
        &self,
        metric: &str,
        stat: Stat,
        gpu: Option<usize>,
    ) -> Option<Vec<(f64, Option<f64>)>> {
        let m = self.metric(metric, gpu)?;
        let Stat::Of(stat) = stat else {
            return None;
        };
        if m.runs.is_empty() {
            return Some(vec![(m.get_stat(stat.into()), None)]);
        }
        Some(m.runs.iter().map(|r| (r.get(stat), r.ci95)).collect())
    }
}

impl Baseline {
    /// A metric of GPU slot `gpu`, or the aggregate/host/run-level entry for
    /// None. With a single GPU, slot 0 is the aggregate.
    pub fn metric(&self, id: &str, gpu: Option<usize>) -> Option<&BaselineMetric> {
        match gpu {
            None => self.metrics.get(id),
            Some(g) => match self.gpus.get(&gpu_key(g)) {
                Some(gb) => gb.metrics.get(id),
                None if g == 0 && self.environment.gpu_count <= 1 => self.metrics.get(id),
                None => None,
            },
        }
    }
}

pub(crate) fn gpu_key(slot: usize) -> String {
    format!("gpu{slot}")
}

/// Longest baseline name: it becomes a file name and a JUnit suite name.
pub(crate) const MAX_NAME_CHARS: usize = 128;

pub(crate) fn validate_name(name: &str) -> Result<(), GateError> {
    // Each refusal names its own cause: a long name of good characters is
    // told it is too long, not that it has a bad character.
    if !crate::validate::valid_name(name) {
        return Err(GateError::usage(format!(
            "baseline name '{}' may only use letters, digits, '.', '_' and '-', and may not start with '.' (e.g. resnet50-h200)",
            crate::escape::terminal(&name.chars().take(MAX_NAME_CHARS).collect::<String>())
        )));
    }
    if name.len() > MAX_NAME_CHARS {
        return Err(GateError::usage(format!(
            "baseline name '{}...' is {} characters long; at most {MAX_NAME_CHARS} are allowed: shorten it",
            &name[..40],
            name.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_validated() {
        assert!(validate_name("resnet50-h200.v2").is_ok());
        assert!(validate_name("../etc/passwd").is_err());
        assert!(validate_name("a b").is_err());
        assert!(validate_name("").is_err());
    }

    #[test]
    fn a_long_name_is_told_it_is_too_long() {
        let long = "a".repeat(200);
        let e = validate_name(&long).unwrap_err().to_string();
        assert!(e.contains("200 characters long"), "{e}");
        assert!(!e.contains("may only use"), "{e}");
        assert!(validate_name(&"a".repeat(MAX_NAME_CHARS)).is_ok());
    }
}
