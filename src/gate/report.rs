//! The check's report, the data every reporter renders: the run verdict
//! (`RunVerdict`, whose order and exit codes are the contract of
//! `exit_code`), each metric's comparison (`MetricResult`), the runs, the
//! baseline, the counts, the trend. Pure data, serialised as the JSON report.

use super::decide::{NoiseSource, Verdict, Why};
use crate::diagnose::Finding;
use crate::exit_code;
use crate::metrics::{Direction, Statistic};
use serde::Serialize;

/// Version of the JSON report format.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// Verdict of the whole run; decides the exit code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunVerdict {
    #[default]
    Pass,
    /// Every regression was acknowledged by the change (`accept`): exit 0,
    /// loudly.
    Accepted,
    /// A bad move the noise left open (exit 4).
    Inconclusive,
    /// Too little was measured to judge (exit 3, retryable).
    Unmeasured,
    Regression,
    /// Something outside the benchmark's tree acted on every run (a
    /// neighbour on the GPU, throttling, an Xid) and a gated number moved
    /// the bad way: no evidence about the change (exit 3, retryable;
    /// `disturbance`).
    Disturbed,
    Invalid,
    Error,
}

impl RunVerdict {
    /// Every run verdict.
    pub const ALL: [RunVerdict; 8] = [
        Self::Pass,
        Self::Accepted,
        Self::Inconclusive,
        Self::Unmeasured,
        Self::Regression,
        Self::Disturbed,
        Self::Invalid,
        Self::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunVerdict::Pass => "pass",
            RunVerdict::Accepted => "accepted",
            RunVerdict::Regression => "regression",
            RunVerdict::Inconclusive => "inconclusive",
            RunVerdict::Unmeasured => "unmeasured",
            RunVerdict::Disturbed => "disturbed",
            RunVerdict::Invalid => "invalid",
            RunVerdict::Error => "error",
        }
    }

    pub fn exit_code(self) -> i32 {
        match self {
            RunVerdict::Pass | RunVerdict::Accepted => exit_code::PASS,
            RunVerdict::Regression => exit_code::REGRESSION,
            RunVerdict::Inconclusive => exit_code::INCONCLUSIVE,
            RunVerdict::Unmeasured
            | RunVerdict::Disturbed
            | RunVerdict::Invalid
            | RunVerdict::Error => exit_code::INFRA,
        }
    }

    /// `exit_code` under the `[verdict] inconclusive` setting: "pass" makes
    /// an inconclusive run green (still reported as inconclusive).
    pub(crate) fn exit_code_under(
        self,
        inconclusive: crate::config::verdict::InconclusiveExit,
    ) -> i32 {
        if self == RunVerdict::Inconclusive
            && inconclusive == crate::config::verdict::InconclusiveExit::Pass
        {
            exit_code::PASS
        } else {
            self.exit_code()
        }
    }
}

/// One metric's comparison, as every reporter shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricResult {
    pub id: String,
    /// The benchmark's own name in its harness's file (`test_sum[0]`) of a
    /// metric a glob table read: what people read; `id` is its sanitised
    /// form where an id is needed (`py.test_sum_0_888b45`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<String>,
    /// Node of a multi-node run (None: the run, or the aggregate over nodes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<usize>,
    /// GPU slot (None: aggregate over GPUs, host or run-level).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<usize>,
    pub unit: String,
    pub direction: Direction,
    pub statistic: Statistic,
    pub gated: bool,
    /// The benchmark's own numbers (wall time, user metrics).
    pub(crate) first_class: bool,
    pub baseline: Option<f64>,
    pub new: Option<f64>,
    /// new - baseline.
    pub change: Option<f64>,
    /// Relative change in percent (None when the baseline is 0).
    pub change_pct: Option<f64>,
    /// Relative and absolute floor (fractions of the baseline; the unit).
    pub(crate) threshold_rel: f64,
    pub(crate) threshold_abs: f64,
    /// The user set them (gate.toml, `--threshold`); else evidence defaults.
    pub(crate) threshold_explicit: bool,
    /// The practical floor in the unit: max(relative * |baseline|, absolute).
    pub tolerance: Option<f64>,
    /// The noise band (95 % half-width of the change) in the unit, when
    /// estimable.
    pub noise: Option<f64>,
    /// Where the noise band came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_source: Option<NoiseSource>,
    /// The smallest change in the bad direction this check would call a
    /// regression 80 % of the time (minimum detectable effect, in the
    /// unit: `gate::detectable`); None without a noise estimate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detectable: Option<f64>,
    /// The change in the bad direction, in noise bands (> 1 clears the noise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub z: Option<f64>,
    /// Runs behind each side (the nodes of a multi-node run count as one).
    pub baseline_runs: usize,
    pub new_runs: usize,
    pub verdict: Verdict,
    pub why: Why,
    /// What acknowledged this regression (verdict `accepted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted: Option<crate::accept::Acceptance>,
}

impl MetricResult {
    /// Regressed, or moved the bad way by more than its floor with the
    /// noise leaving it open (within the band, or no band at all).
    pub(super) fn moved_the_bad_way(&self) -> bool {
        matches!(self.verdict, Verdict::Regression | Verdict::Accepted)
            || (self.verdict == Verdict::Inconclusive
                && matches!(self.why, Why::WithinNoise | Why::NoNoiseEstimate))
    }

    /// `sm_active_pct`, `sm_active_pct[gpu1]`, `node2/sm_active_pct[gpu1]`.
    pub fn label(&self) -> String {
        let mut s = String::new();
        if let Some(n) = self.node {
            s.push_str(&format!("node{n}/"));
        }
        s.push_str(&self.id);
        if let Some(g) = self.gpu {
            s.push_str(&format!("[gpu{g}]"));
        }
        s
    }

    /// `label` as people read it: a harness benchmark by its own name
    /// under its table (`py.test_sum[0]`, not `py.test_sum_0_888b45`).
    /// Identities (history, acceptances) keep `label`.
    pub fn shown_name(&self) -> String {
        if self.benchmark.is_none() {
            return self.label();
        }
        let mut s = String::new();
        if let Some(n) = self.node {
            s.push_str(&format!("node{n}/"));
        }
        s.push_str(&self.shown_id());
        if let Some(g) = self.gpu {
            s.push_str(&format!("[gpu{g}]"));
        }
        s
    }

    /// `id` as people read it, without node or GPU (`py.test_sum[0]`).
    pub fn shown_id(&self) -> String {
        crate::metric_sources::shown_name(&self.id, self.benchmark.as_deref())
    }

    /// Fails the run (with `fail_on_improvement` for improvements).
    pub fn fails(&self, fail_on_improvement: bool) -> bool {
        self.verdict == Verdict::Regression
            || (fail_on_improvement && self.verdict == Verdict::Improvement)
    }
}

/// What was measured for one run or node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInfo {
    pub source: String,
    /// The benchmark's command line (argv joined by spaces; empty when attached).
    pub command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<usize>,
    pub gpu_model: String,
    pub gpu_count: usize,
    pub(crate) steady_samples: usize,
    pub(crate) valid_samples: usize,
    pub(crate) total_samples: usize,
    /// Wall time after warm-up (`RunSummary::wall_time_s`).
    pub wall_time_s: Option<f64>,
    /// Start-up before it, when the run marked a warm-up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) startup_s: Option<f64>,
    /// What the window left out after it, not judged (`RunSummary::teardown_s`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub teardown_s: Option<f64>,
    /// The window was closed by the benchmark's `--until` line.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub closed_by_until: bool,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub truncated: bool,
    /// The GPUs the run's statistics used, by slot (`MetricResult::gpu`):
    /// NVML index, UUID and model, for reports that label per-GPU values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuIdentity>,
    /// The series the check page plots, taken at derive (`Run::plot`);
    /// None when no page is written.
    #[serde(skip)]
    pub(crate) series: Option<std::sync::Arc<crate::summary::RunSeries>>,
}

/// One GPU of a run, by what dcgm-exporter labels it with (`gpu`, `UUID`, `modelName`; OpenMetrics writes them snake_case).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuIdentity {
    pub index: u32,
    pub uuid: String,
    pub model: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineInfo {
    pub name: String,
    /// File it was read from (`REF:path` with --baseline-ref).
    pub source: String,
    pub created: String,
    pub commit: Option<String>,
    pub runs: usize,
    pub gpu_model: String,
    pub gpu_count: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counts {
    pub pass: usize,
    pub regression: usize,
    /// Regressions the change acknowledged (`accept`).
    pub accepted: usize,
    pub improvement: usize,
    pub inconclusive: usize,
    pub missing: usize,
    pub info: usize,
}

/// Everything `gate check` found: the input of every reporter. Pure data,
/// and the same for the same traces and files (no clock, no host lookups).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    pub schema_version: u32,
    pub gate_version: String,
    pub baseline: BaselineInfo,
    /// The run verdict, its exit code, and the sentences behind them: set
    /// by `gate::check` and changed after it only through `raise` and
    /// `warn` (read them with `verdict()`, `exit_code()`, `reasons()` and
    /// `warnings()`), so every change honours `[verdict]`.
    pub(super) verdict: RunVerdict,
    pub(super) exit_code: i32,
    /// What an inconclusive verdict exits with (`[verdict] inconclusive`),
    /// for `raise`.
    #[serde(skip)]
    pub(super) inconclusive: crate::config::verdict::InconclusiveExit,
    /// Why the run verdict is what it is (crash, mismatch, too few
    /// samples, regressions), one sentence each.
    pub(super) reasons: Vec<String>,
    /// Non-fatal remarks (allowed environment mismatch, inconclusive metrics).
    pub(super) warnings: Vec<String>,
    pub multi_node: bool,
    /// Improvements fail the run too (`--fail-on-improvement`).
    pub fail_on_improvement: bool,
    pub runs: Vec<RunInfo>,
    /// First-class metrics first, then gated ones, then per GPU / node,
    /// then context (info).
    pub metrics: Vec<MetricResult>,
    /// Root-cause findings for what changed (`RuleSet::explain_change`),
    /// most likely first.
    pub diagnosis: Vec<Finding>,
    /// `Finding::text()` of each finding, in the same order.
    pub(crate) diagnosis_text: Vec<String>,
    pub counts: Counts,
    /// What acted on the runs from outside the benchmark's tree
    /// (`gate::disturbance`), one entry per disturbed run; empty when clean.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disturbance: Vec<super::disturbance::Disturbance>,
    /// The gated metrics' recent past on the target branch and this
    /// check's drift findings (`history::trend`); only with `--history`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trend: Option<Trend>,
    /// `gate ab`: the interleaved rounds behind a paired verdict (A plays
    /// the baseline, B the new run); absent for a check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ab: Option<AbInfo>,
}

/// The rounds of `gate ab` and what they measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AbInfo {
    /// A's and B's command lines (argv joined by spaces).
    pub a_command: String,
    pub b_command: String,
    /// `--rounds`: the most rounds it could run.
    pub rounds_planned: usize,
    /// The rounds after which it judged (`gate::paired::looks_at`).
    pub looks: Vec<usize>,
    /// It stopped before the last planned round: a look decided.
    pub stopped_early: bool,
    pub rounds: Vec<AbRound>,
    /// Each gated metric's per-round `B - A` and its paired 95 % interval.
    pub differences: Vec<AbDifferences>,
}

/// One round: which side ran first, and the two traces.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AbRound {
    /// "AB" or "BA" (ABBA blocks).
    pub order: String,
    pub a_trace: String,
    pub b_trace: String,
}

/// One gated metric's per-round differences and their interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AbDifferences {
    pub metric: String,
    pub unit: String,
    /// `B - A` of each complete round, in round order.
    pub values: Vec<f64>,
    /// The paired 95 % interval of the mean difference (Bonferroni-split
    /// over the looks); absent when nothing estimates it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
}

/// Recent runs of the same baseline on one branch (`history::trend`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    /// The branch the earlier runs were recorded on (None: any).
    pub branch: Option<String>,
    /// Earlier runs found (this run is not counted).
    pub runs: usize,
    /// Their commits, oldest first.
    pub(crate) commits: Vec<Option<String>>,
    pub metrics: Vec<MetricTrend>,
    pub drift: Vec<TrendDrift>,
}

/// One gated metric over the earlier runs and this one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricTrend {
    pub metric: String,
    pub unit: String,
    /// Oldest first, this run last; None where a run has no value.
    pub values: Vec<Option<f64>>,
    /// The values as unicode blocks (`▁`..`█`, `·` for none).
    pub sparkline: String,
}

/// A drift finding of this check, as the trend shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrendDrift {
    pub metric: String,
    pub shift_pct: Option<f64>,
    pub failed: bool,
    pub message: String,
}

impl CheckReport {
    /// The run verdict.
    pub fn verdict(&self) -> RunVerdict {
        self.verdict
    }

    /// The exit code the verdict gives under gate.toml's `[verdict]`.
    pub fn exit_code(&self) -> i32 {
        self.exit_code
    }

    /// Why the verdict is what it is, one sentence each.
    pub fn reasons(&self) -> &[String] {
        &self.reasons
    }

    /// Non-fatal remarks, in the order they are shown.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    pub fn regressions(&self) -> impl Iterator<Item = &MetricResult> {
        self.metrics
            .iter()
            .filter(|m| m.verdict == Verdict::Regression)
    }

    /// A finding judged after `check` (drift over the history) that fails
    /// the run: `reason` joins the reasons, and the verdict rises to `to`
    /// when it is below it, its exit code with it (`RunVerdict::exit_code`,
    /// under gate.toml's `[verdict] inconclusive` as `gate::check` reads
    /// it). A verdict already at or above `to` (an error, an invalid run)
    /// and its exit code stay. The one way anything outside this module
    /// changes a verdict.
    pub fn raise(&mut self, to: RunVerdict, reason: String) {
        self.reasons.push(reason);
        if self.verdict < to {
            self.verdict = to;
            self.exit_code = to.exit_code_under(self.inconclusive);
        }
    }

    /// A finding judged after `check` that does not fail the run: a warning.
    pub fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }

    /// `warn`, shown before every other warning: what the judgement as a
    /// whole rests on (runs judged together, disturbed runs left out).
    pub fn warn_first(&mut self, warning: String) {
        self.warnings.insert(0, warning);
    }
}

#[cfg(test)]
impl CheckReport {
    /// Tests only: the report as if `gate::check` had concluded `verdict`
    /// with `exit_code` for these `reasons` (a hand-built report's
    /// starting point; code changes a verdict only through `raise`).
    pub(crate) fn set_verdict_for_test(
        &mut self,
        verdict: RunVerdict,
        exit_code: i32,
        reasons: Vec<String>,
    ) {
        (self.verdict, self.exit_code, self.reasons) = (verdict, exit_code, reasons);
    }
}
