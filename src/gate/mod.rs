//! Verdicts: is a new run worse than its baseline, metric by metric and as a
//! whole? Owns the decision rule, the run-level checks (crash, environment,
//! too little data) and the `CheckReport` every reporter renders.
//!
//! The decision rule for one metric (practical floor, noise band, and what
//! happens without a noise estimate) is `decide`; docs/gating.md has the
//! evidence behind its defaults. This module resolves each metric's policy
//! once per check, collects both sides' observations, judges every metric and
//! assembles the run verdict.
//!
//! # Run-level verdict and exit code
//!
//! `error` (benchmark crashed, exited nonzero, trace truncated; exit 3) >
//! `invalid` (GPU model, GPU count or driver major differ from the
//! baseline, or the command or workload tags do, unless allowed; exit 3) >
//! `regression` (exit 1) > `unmeasured` (fewer than `MIN_STEADY_SAMPLES`
//! valid samples, or a gated metric not measured; exit 3) >
//! `inconclusive` (a gated metric moved the bad way beyond its floor but
//! inside the noise, or with no noise estimate; exit 4, or 0 with
//! `[verdict] inconclusive = "pass"`) > `pass` (exit 0). A crashed
//! benchmark is never a pass, whatever its counters say.

use crate::baseline::{Baseline, BaselineMetric, Environment};
use crate::config::{Config, Policy};
use crate::diagnose::{Finding, RuleSet};
use crate::exit_code;
use crate::metrics::{self, Direction, Statistic};
use crate::stats::MetricStats;
use crate::summary::RunInput;
use serde::Serialize;
use std::collections::BTreeMap;

pub mod comparable;
pub mod decide;
pub use decide::{judge, Judgement, Noise, NoiseSource, Observation, Prior, Verdict, Why};

/// Version of the JSON report format.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// Fewer valid steady samples than this give no verdict: 20 samples at
/// 100 ms is 2 s, less than two batch-means batches, too little to tell a
/// regression from a pause.
pub const MIN_STEADY_SAMPLES: usize = 20;

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
    Invalid,
    Error,
}

impl RunVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            RunVerdict::Pass => "pass",
            RunVerdict::Accepted => "accepted",
            RunVerdict::Regression => "regression",
            RunVerdict::Inconclusive => "inconclusive",
            RunVerdict::Unmeasured => "unmeasured",
            RunVerdict::Invalid => "invalid",
            RunVerdict::Error => "error",
        }
    }

    pub fn exit_code(self) -> i32 {
        match self {
            RunVerdict::Pass | RunVerdict::Accepted => exit_code::PASS,
            RunVerdict::Regression => exit_code::REGRESSION,
            RunVerdict::Inconclusive => exit_code::INCONCLUSIVE,
            RunVerdict::Unmeasured | RunVerdict::Invalid | RunVerdict::Error => exit_code::INFRA,
        }
    }
}

/// The baseline's observation of `statistic`: each run's value and interval
/// (the pooled statistic, without interval, for a baseline without runs).
pub fn baseline_observation(m: &BaselineMetric, statistic: Statistic) -> Option<Observation> {
    Observation::from_baseline(m, statistic)
}

impl Observation {
    /// See `baseline_observation`.
    pub fn from_baseline(m: &BaselineMetric, statistic: Statistic) -> Option<Observation> {
        if m.runs.is_empty() {
            let v = m.get_named(statistic.as_str())?;
            return Observation::from_runs(&[(v, None)]);
        }
        let per_run: Vec<(f64, Option<f64>)> =
            m.runs.iter().map(|r| (r.get(statistic), r.ci95)).collect();
        Observation::from_runs(&per_run)
    }
}

/// One metric's comparison, as every reporter shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricResult {
    pub id: String,
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
    pub first_class: bool,
    pub baseline: Option<f64>,
    pub new: Option<f64>,
    /// new - baseline.
    pub change: Option<f64>,
    /// Relative change in percent (None when the baseline is 0).
    pub change_pct: Option<f64>,
    /// Relative and absolute floor (fractions of the baseline; the unit).
    pub threshold_rel: f64,
    pub threshold_abs: f64,
    /// The user set them (gate.toml, `--threshold`); else evidence defaults.
    pub threshold_explicit: bool,
    /// The practical floor in the unit: max(relative * |baseline|, absolute).
    pub tolerance: Option<f64>,
    /// The noise band (95 % half-width of the change) in the unit, when
    /// estimable.
    pub noise: Option<f64>,
    /// Where the noise band came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_source: Option<NoiseSource>,
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
    fn moved_the_bad_way(&self) -> bool {
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
    pub steady_samples: usize,
    pub valid_samples: usize,
    pub total_samples: usize,
    /// Wall time after warm-up (`RunSummary::wall_time_s`).
    pub wall_time_s: Option<f64>,
    /// Start-up before it, when the run marked a warm-up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_s: Option<f64>,
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
}

/// One GPU of a run, as dcgm-exporter labels it (`gpu`, `UUID`, `modelName`).
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
    pub verdict: RunVerdict,
    pub exit_code: i32,
    /// Why the run verdict is what it is (crash, mismatch, too few
    /// samples, regressions), one sentence each.
    pub reasons: Vec<String>,
    /// Non-fatal remarks (allowed environment mismatch, inconclusive metrics).
    pub warnings: Vec<String>,
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
    pub diagnosis_text: Vec<String>,
    pub counts: Counts,
    /// The gated metrics' recent past on the target branch and this
    /// check's drift findings (`history::trend`); only with `--history`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trend: Option<Trend>,
}

/// Recent runs of the same baseline on one branch (`history::trend`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    /// The branch the earlier runs were recorded on (None: any).
    pub branch: Option<String>,
    /// Earlier runs found (this run is not counted).
    pub runs: usize,
    /// Their commits, oldest first.
    pub commits: Vec<Option<String>>,
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
    pub fn regressions(&self) -> impl Iterator<Item = &MetricResult> {
        self.metrics
            .iter()
            .filter(|m| m.verdict == Verdict::Regression)
    }

    /// A finding judged after `check` (drift over the history) that fails
    /// the run: `reason` joins the reasons, and the verdict rises to `to`
    /// when it is below it, its exit code with it (`RunVerdict::exit_code`).
    /// A verdict already at or above `to` (an error, an invalid run) and its
    /// exit code stay. The one way anything outside this module changes a
    /// verdict.
    pub fn raise(&mut self, to: RunVerdict, reason: String) {
        self.reasons.push(reason);
        if self.verdict < to {
            self.verdict = to;
            self.exit_code = to.exit_code();
        }
    }

    /// A finding judged after `check` that does not fail the run: a warning.
    pub fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }
}

/// Everything `check` needs; all pure data.
pub struct CheckInput<'a, 'b> {
    pub baseline: &'a Baseline,
    pub baseline_source: String,
    pub config: &'a Config,
    pub cli_threshold: Option<f64>,
    pub runs: &'a [RunInput<'b>],
    pub multi_node: bool,
    pub allow_env_mismatch: bool,
    /// Judge a run of another benchmark (`comparable`) with a warning.
    pub allow_command_change: bool,
    /// Tags given on the command line (they win over the traces' own).
    pub cli_tags: BTreeMap<String, String>,
    pub fail_on_improvement: bool,
    pub rules: &'a RuleSet,
    /// What may acknowledge a regression (`accept`); None: nothing.
    pub acceptances: Option<&'a crate::accept::Acceptances>,
    /// Looks of the sequential test: 1 + the reruns this check may make
    /// (1 on replay). The noise band is at the Bonferroni-split level.
    pub looks: usize,
    /// From the history store: each metric's (variance, df) over the
    /// healthy runs judged against this baseline (empty without history).
    pub history_spread: BTreeMap<String, (f64, f64)>,
}

/// Why a run cannot count as a successful benchmark run, and whose failure
/// it is: the benchmark's own (exit 5, never retried) or the measurement's
/// (exit 3, retryable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFailure {
    pub message: String,
    /// The benchmark itself failed: it exited nonzero, or a signal that gate
    /// did not send killed it (SIGSEGV, SIGABRT, the OOM killer's SIGKILL).
    pub by_benchmark: bool,
}

impl RunFailure {
    /// The error for this failure, saying `msg`: the benchmark's (exit 5)
    /// or the measurement's (exit 3).
    pub fn error(&self, msg: impl Into<String>) -> crate::error::GateError {
        if self.by_benchmark {
            crate::error::GateError::BenchmarkFailed(msg.into())
        } else {
            crate::error::GateError::Infra(msg.into())
        }
    }

    /// The exit code this failure gives.
    pub fn exit_code(&self) -> i32 {
        if self.by_benchmark {
            exit_code::BENCHMARK_FAILED
        } else {
            exit_code::INFRA
        }
    }
}

impl std::fmt::Display for RunFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Why a trace cannot count as a successful benchmark run, if it cannot.
pub fn run_failure(trace: &crate::trace::Trace) -> Option<RunFailure> {
    let src = trace.path.display().to_string();
    if trace.truncated {
        return Some(RunFailure {
            message: format!(
                "trace '{src}' is truncated (no end record): the benchmark or the recording was cut short"
            ),
            by_benchmark: false,
        });
    }
    end_failure(trace.end.as_ref()?, &src)
}

/// `run_failure` for an end record (`gate record` has no loaded trace).
/// Signals gate sends itself (the stop at the end of `--duration` or of
/// `--warmup-timeout`, a forwarded Ctrl-C or SIGTERM) are not the
/// benchmark's failure; any other signal, or a nonzero exit status, is.
pub fn end_failure(end: &crate::trace::EndRecord, src: &str) -> Option<RunFailure> {
    let measurement = |message: String| {
        Some(RunFailure {
            message,
            by_benchmark: false,
        })
    };
    let benchmark = |message: String| {
        Some(RunFailure {
            message,
            by_benchmark: true,
        })
    };
    match end.reason.as_str() {
        "warmup_timeout" => return measurement(format!(
            "--warmup-until never matched within --warmup-timeout, so the benchmark was stopped before its window ('{src}')"
        )),
        "interrupted" => return measurement(format!(
            "the recording was interrupted: gate received a signal and forwarded it to the benchmark ('{src}')"
        )),
        _ => {}
    }
    if let Some(sig) = end.signal {
        if end.reason == "target_exited" {
            return benchmark(format!(
                "the benchmark was killed by signal {sig}{} ('{src}')",
                signal_name(sig)
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            ));
        }
        // gate itself stops the target with SIGTERM when --duration is reached.
        if end.reason != "duration_reached" {
            return measurement(format!(
                "gate stopped the benchmark ({}) and it ended by signal {sig} ('{src}')",
                end.reason
            ));
        }
    }
    if let Some(code) = end.exit_code {
        if code != 0 {
            return benchmark(format!("the benchmark exited with code {code} ('{src}')"));
        }
    }
    None
}

/// The name of a common fatal signal, for messages.
fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => return None,
    })
}

/// Valid steady samples: the largest count any gated sampled metric has
/// (a GPM glitch sample counts as missing, not as a sample); the steady
/// sample count when no gated metric is sampled (host-only runs).
pub fn valid_samples(r: &RunInput, config: &Config) -> usize {
    let s = &r.summary;
    let gated = |id: &&String| config.policy(id, None).map(|p| p.gated).unwrap_or(false);
    s.gpu_aggregate
        .iter()
        .chain(s.host.iter())
        .filter(|(id, _)| gated(id))
        .map(|(_, m)| m.n)
        .max()
        .unwrap_or(s.steady_samples)
}

/// Where a metric lives, for extracting values from runs.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Sampled,
    WallTime,
    User,
}

fn kind_of(id: &str, config: &Config) -> Kind {
    if id == metrics::WALL_TIME.id {
        Kind::WallTime
    } else if config.is_user_metric(id) {
        Kind::User
    } else {
        Kind::Sampled
    }
}

/// A run's `(statistic, ci95)` of `id` on `gpu` (None = aggregate/host).
fn run_value(
    r: &RunInput,
    id: &str,
    kind: Kind,
    gpu: Option<usize>,
    stat: Statistic,
) -> Option<(f64, Option<f64>)> {
    let of = |m: &MetricStats| (m.get(stat), m.mean_ci95);
    match (kind, gpu) {
        (Kind::WallTime, None) => r.summary.wall_time_s.map(|v| (v, None)),
        (Kind::User, None) => r.user.get(id).map(|u| (u.value, u.ci95)),
        (Kind::Sampled, None) => r
            .summary
            .gpu_aggregate
            .get(id)
            .or_else(|| r.summary.host.get(id))
            .map(of),
        (Kind::Sampled, Some(g)) => r.summary.gpus.get(g)?.metrics.get(id).map(of),
        _ => None,
    }
}

/// The new side's observation over a set of runs (or nodes).
fn observe(
    runs: &[&RunInput],
    id: &str,
    kind: Kind,
    gpu: Option<usize>,
    stat: Statistic,
    nodes: bool,
) -> Option<Observation> {
    let per: Vec<(f64, Option<f64>)> = runs
        .iter()
        .filter_map(|r| run_value(r, id, kind, gpu, stat))
        .collect();
    if nodes && kind == Kind::WallTime {
        // A multi-node run takes as long as its slowest node.
        let max = per.iter().map(|p| p.0).fold(f64::NAN, f64::max);
        return Observation::from_runs(&[(max, None)]);
    }
    let o = Observation::from_runs(&per)?;
    // The nodes of one run are not repeats: their spread is not noise.
    Some(if nodes { o.nodes() } else { o })
}

/// Every metric's effective policy, resolved once per check from the
/// catalogue, `gate.toml` and `--threshold` (the same for every GPU, node
/// and run), plus what the baseline says it gated at capture time.
pub struct Policies {
    by_id: BTreeMap<String, Policy>,
    /// Where the baseline's recorded statistic or gating differs from the
    /// policy judged now, one entry per metric: (id, baseline's, now).
    pub drifted: Vec<(String, String, String)>,
}

impl Policies {
    pub fn resolve<'i>(
        ids: impl IntoIterator<Item = &'i String>,
        config: &Config,
        cli_threshold: Option<f64>,
        baseline: &Baseline,
    ) -> Policies {
        let mut by_id = BTreeMap::new();
        let mut drifted = Vec::new();
        for id in ids {
            let p = config
                .policy(id, cli_threshold)
                .unwrap_or_else(|| unknown_column(id, baseline));
            // gate.toml (from the target branch) is authoritative; a baseline
            // captured under another policy is judged by today's, and says so.
            if let Some(m) = baseline.metrics.get(id) {
                if m.statistic != p.statistic {
                    drifted.push((
                        id.clone(),
                        format!("statistic {}", m.statistic.as_str()),
                        format!("statistic {}", p.statistic.as_str()),
                    ));
                }
                if m.gated != p.gated {
                    let word = |g: bool| if g { "gated" } else { "not gated" };
                    drifted.push((id.clone(), word(m.gated).into(), word(p.gated).into()));
                }
            }
            by_id.insert(id.clone(), p);
        }
        Policies { by_id, drifted }
    }

    pub fn get(&self, id: &str) -> &Policy {
        &self.by_id[id]
    }
}

/// A column this gate's catalogue does not know (a newer recorder): report,
/// never gate.
fn unknown_column(id: &str, baseline: &Baseline) -> Policy {
    Policy {
        id: id.to_string(),
        unit: baseline
            .metrics
            .get(id)
            .map(|m| m.unit.clone())
            .unwrap_or_default(),
        direction: Direction::Neutral,
        statistic: Statistic::Mean,
        relative: 0.0,
        absolute: 0.0,
        gated: false,
        first_class: false,
        explicit: false,
    }
}

fn compare(
    policy: &Policy,
    base: Option<&BaselineMetric>,
    new: Option<Observation>,
    node: Option<usize>,
    gpu: Option<usize>,
    prior: &Prior,
) -> Option<MetricResult> {
    let base_obs = base.and_then(|m| baseline_observation(m, policy.statistic));
    let runs = |o: &Option<Observation>| {
        o.as_ref()
            .map_or(0, |o| if o.repeats { o.runs.len() } else { 1 })
    };
    let mut r = MetricResult {
        id: policy.id.clone(),
        node,
        gpu,
        unit: policy.unit.clone(),
        direction: policy.direction,
        statistic: policy.statistic,
        gated: policy.gated,
        first_class: policy.first_class,
        baseline: base_obs.as_ref().map(|o| o.value),
        new: new.as_ref().map(|o| o.value),
        change: None,
        change_pct: None,
        threshold_rel: policy.relative,
        threshold_abs: policy.absolute,
        threshold_explicit: policy.explicit,
        tolerance: None,
        noise: None,
        noise_source: None,
        z: None,
        baseline_runs: runs(&base_obs),
        new_runs: runs(&new),
        verdict: Verdict::Info,
        why: Why::NotGated,
        accepted: None,
    };
    match (&base_obs, &new) {
        (None, None) => return None,
        (Some(b), Some(n)) => {
            let j = judge(policy, b, n, prior);
            r.change = Some(j.delta);
            r.change_pct = (b.value != 0.0).then(|| j.delta / b.value.abs() * 100.0);
            r.tolerance = Some(j.floor);
            r.noise = j.noise.map(|n| n.band);
            r.noise_source = j.noise.map(|n| n.source);
            r.z = j.z();
            r.verdict = j.verdict;
            r.why = j.why;
        }
        (None, Some(_)) => {
            r.why = Why::NotInBaseline;
            if policy.gated {
                r.verdict = Verdict::Missing;
            }
        }
        (Some(_), None) => {
            r.why = Why::NotMeasured;
            if policy.gated {
                r.verdict = Verdict::Missing;
            }
        }
    }
    Some(r)
}

/// Whether a metric is gated (fails a run) or context, as `check` judges
/// and `gate diff` marks it: `gated` is its policy (catalogue, gate.toml),
/// `decides` whether a benchmark metric declared in gate.toml could be
/// judged (`decides_the_run`); it outranks the sampled counters.
pub fn is_gated(gated: bool, first_class: bool, benchmark_decides: bool) -> bool {
    gated && (first_class || !benchmark_decides)
}

/// A metric that decides the run when it can be judged: declared in
/// gate.toml as the benchmark's own number. Wall time does not decide: a
/// fixed-length benchmark takes as long when it does less work.
pub fn decides_the_run(id: &str, first_class: bool) -> bool {
    first_class && id != metrics::WALL_TIME.id
}

/// A number the benchmark printed itself and gate.toml declared
/// (throughput, latency...), judged over the run (not per node).
fn is_benchmark_number(m: &MetricResult) -> bool {
    decides_the_run(&m.id, m.first_class) && m.node.is_none()
}

/// A declared benchmark number was judged decisively: improvement,
/// regression, or a pass inside its floor. It then decides the run. A pass
/// only because the baseline's own spread is wide (`WithinMeasuredNoise`)
/// is no evidence that nothing changed: the counters stay gated (a
/// contended decode run, -1.8 % inside a baseline with one 15 % slower run,
/// passed green before this).
fn decided_by_benchmark(results: &[MetricResult]) -> bool {
    results.iter().any(|m| {
        is_benchmark_number(m)
            && (matches!(m.verdict, Verdict::Improvement | Verdict::Regression)
                || (m.verdict == Verdict::Pass && m.why != Why::WithinMeasuredNoise))
    })
}

/// When a benchmark metric declared in gate.toml (throughput, latency...)
/// was judged decisively (pass, improvement or regression), it decides the
/// run and the sampled counters become context: they explain a change, they
/// do not fail a run that did not get slower (nor pass one that did). Wall
/// time does not decide: a fixed-length benchmark takes as long when it does
/// less work. Returns the counters that had regressed.
fn let_the_benchmark_decide(results: &mut [MetricResult]) -> Vec<String> {
    if !decided_by_benchmark(results) {
        return Vec::new();
    }
    let mut outvoted = Vec::new();
    for m in results
        .iter_mut()
        .filter(|m| m.gated && !is_gated(m.gated, m.first_class, true))
    {
        if m.verdict == Verdict::Regression {
            outvoted.push(m.label());
        }
        m.gated = false;
        m.verdict = Verdict::Info;
        m.why = Why::DecidedByBenchmark;
    }
    // Report order: the benchmark's numbers and gated metrics, then context.
    results.sort_by_key(|m| !m.gated);
    outvoted
}

/// Busy time is not speed. When tensor-core activity rose beyond its
/// noise, a fall of GPU busy or SM active means the math got faster and the
/// GPU waited more (a run moved from fp32 to tensor cores ran 4.5x faster
/// at 6 points less busy), not that the run got slower: those falls are
/// reported as context, like falls the noise left open. Returns the
/// counters that had moved the bad way.
fn let_faster_math_explain_idle(results: &mut [MetricResult]) -> Vec<String> {
    let faster = results.iter().any(|m| {
        m.id == metrics::TENSOR_ACTIVITY_ID
            && m.gpu.is_none()
            && m.node.is_none()
            && m.verdict == Verdict::Improvement
    });
    if !faster {
        return Vec::new();
    }
    let mut explained = Vec::new();
    for m in results.iter_mut().filter(|m| {
        m.gated && metrics::TIME_BUSY_IDS.contains(&m.id.as_str()) && m.moved_the_bad_way()
    }) {
        explained.push(m.label());
        m.verdict = Verdict::Info;
        m.why = Why::FasterMath;
    }
    explained
}

/// Wall time counts from the end of warm-up when a run marked one
/// (`RunSummary::wall_time_s`). A baseline whose runs counted from their
/// start (captured before gate did so, or with no warm-up marked) against
/// runs that marked one, or the reverse, would compare start-up with
/// nothing: reported, not judged, with the fix.
fn wall_time_not_comparable(input: &CheckInput, results: &mut [MetricResult]) -> Option<String> {
    let base_after_warmup = input
        .baseline
        .capture
        .sources
        .iter()
        .any(|s| s.startup_s.is_some());
    let new_after_warmup = input.runs.iter().any(|r| r.summary.startup_s.is_some());
    if base_after_warmup == new_after_warmup {
        return None;
    }
    let mut found = false;
    for m in results
        .iter_mut()
        .filter(|m| m.id == metrics::WALL_TIME.id && m.baseline.is_some() && m.new.is_some())
    {
        found = true;
        m.verdict = Verdict::Info;
        m.why = Why::NotComparable;
    }
    let fix = if new_after_warmup {
        "this run's wall time counts from the end of its warm-up, the baseline's from the start of each run (captured before gate measured wall time after warm-up, or with no --warmup/--warmup-until): re-capture the baseline"
    } else {
        "the baseline's wall time counts from the end of warm-up, this run marked no warm-up: record it with the baseline's --warmup/--warmup-until"
    };
    found.then(|| format!("wall_time_s not judged: {fix}"))
}

/// Judge the runs against the baseline and assemble the report.
pub fn check(input: &CheckInput) -> CheckReport {
    let b = input.baseline;
    let mut run = RunLevel::default();
    let runs_info = check_runs(input, &mut run);
    let (first_class, sampled) = metric_ids(input);
    let policies = Policies::resolve(
        first_class.iter().chain(sampled.iter()),
        input.config,
        input.cli_threshold,
        b,
    );
    for (id, then, now) in &policies.drifted {
        run.warnings.push(format!(
            "baseline '{}' recorded {id} as {then}, gate.toml now says {now}: judged by gate.toml; re-capture the baseline to record the new policy",
            b.name
        ));
    }
    let mut results = judge_metrics(input, &policies, &first_class, &sampled);
    if run.counters_unmeasured {
        counters_as_context(&mut results);
    }
    let outvoted = let_the_benchmark_decide(&mut results);
    if !outvoted.is_empty() {
        run.warnings.push(format!(
            "{} moved beyond the noise in the bad direction, but the benchmark's own number decided (declared in gate.toml): reported as context",
            outvoted.join(", ")
        ));
    }
    if let Some(w) = wall_time_not_comparable(input, &mut results) {
        run.warnings.push(w);
    }
    let explained = let_faster_math_explain_idle(&mut results);
    if !explained.is_empty() {
        run.warnings.push(format!(
            "{} fell while tensor-core activity rose beyond its noise: the math got faster and the GPU waited more; reported as context (declare the benchmark's throughput in gate.toml to judge speed)",
            explained.join(", ")
        ));
    }
    apply_acceptances(input, &mut results, &mut run);
    let counts = verdict_from_metrics(input, &results, &mut run);
    if exit_code_of(run.verdict, input.config) != run.verdict.exit_code() {
        run.warnings.push(
            "INCONCLUSIVE counted as a pass: gate.toml says [verdict] inconclusive = \"pass\"; the move above is not proven harmless".into(),
        );
    }
    let diagnosis = diagnose_change(input, &results);
    CheckReport {
        schema_version: REPORT_SCHEMA_VERSION,
        gate_version: crate::GATE_VERSION.to_string(),
        baseline: BaselineInfo {
            name: b.name.clone(),
            source: input.baseline_source.clone(),
            created: b.created.clone(),
            commit: b.commit.clone(),
            runs: b.capture.runs,
            gpu_model: b.environment.gpu_model.clone(),
            gpu_count: b.environment.gpu_count,
        },
        exit_code: run.exit_code(input.config),
        verdict: run.verdict,
        reasons: run.reasons,
        warnings: run
            .warnings
            .into_iter()
            .map(crate::limits::bounded_message)
            .collect(),
        multi_node: input.multi_node,
        fail_on_improvement: input.fail_on_improvement,
        runs: runs_info,
        metrics: results,
        diagnosis_text: diagnosis.iter().map(Finding::text).collect(),
        diagnosis,
        counts,
        trend: None,
    }
}

/// The exit code of a run verdict under gate.toml: `[verdict]
/// inconclusive = "pass"` makes an inconclusive run green (still reported
/// as inconclusive).
pub fn exit_code_of(verdict: RunVerdict, config: &Config) -> i32 {
    if verdict == RunVerdict::Inconclusive
        && config.file.verdict.inconclusive == crate::config::InconclusiveExit::Pass
    {
        exit_code::PASS
    } else {
        verdict.exit_code()
    }
}

/// The run verdict as it is assembled: the strongest reason wins.
#[derive(Default)]
struct RunLevel {
    verdict: RunVerdict,
    reasons: Vec<String>,
    warnings: Vec<String>,
    /// A run failed by the benchmark's own fault (`RunFailure::by_benchmark`).
    benchmark_failed: bool,
    /// A reader of gate.toml asked for what the file does not have, or the
    /// metrics file is over its limit: the input is wrong (exit 2).
    input_error: bool,
    /// The runs were too short for the counters, but the benchmark's own
    /// number is there: it is judged, the counters are context.
    counters_unmeasured: bool,
}

impl RunLevel {
    /// A failed benchmark decides the exit code over every other reason:
    /// retrying it (exit 3) would only fail again.
    fn exit_code(&self, config: &Config) -> i32 {
        if self.input_error {
            exit_code::USAGE
        } else if self.benchmark_failed {
            exit_code::BENCHMARK_FAILED
        } else {
            exit_code_of(self.verdict, config)
        }
    }

    fn raise(&mut self, to: RunVerdict, reason: String) {
        self.verdict = self.verdict.max(to);
        self.reasons.push(reason);
    }
}

/// Another benchmark than the baseline's (`comparable`): not comparable,
/// or warned about when allowed; other arguments or tags: a warning, or
/// not comparable with `[compare] arguments = "refuse"`.
fn comparable(input: &CheckInput, t: &crate::trace::Trace, who: &str, run: &mut RunLevel) {
    let cfg = &input.config.file.compare;
    let mut tags = t.header.tags.clone();
    tags.extend(input.cli_tags.clone());
    let d = comparable::differences(
        &input.baseline.capture.command,
        &input.baseline.tags,
        &t.header.command,
        &tags,
        &cfg.tags,
    );
    let allowed = input.allow_command_change || cfg.allow_command_change;
    if !d.identity.is_empty() {
        let text = format!(
            "{who}: not the baseline's benchmark: {}",
            d.identity.join("; ")
        );
        if allowed {
            run.warnings.push(format!(
                "{text} (judged anyway: allowed by [compare] allow_command_change)"
            ));
        } else {
            run.raise(RunVerdict::Invalid, format!(
                "{text}; judge a run of the same benchmark, capture a baseline for this one, or set [compare] allow_command_change = true in gate.toml"
            ));
        }
    }
    if !d.details.is_empty() {
        let text = format!(
            "{who}: differs from the baseline's run: {}",
            d.details.join("; ")
        );
        if cfg.arguments == crate::config::ArgumentsPolicy::Refuse && !allowed {
            run.raise(
                RunVerdict::Invalid,
                format!(
                "{text}; compare like with like, or set [compare] arguments = \"warn\" in gate.toml"
            ),
            );
        } else {
            run.warnings.push(text);
        }
    }
}

/// Checked before any metric: a failed benchmark, another environment,
/// too few samples. One `RunInfo` per run (or node).
fn check_runs(input: &CheckInput, run: &mut RunLevel) -> Vec<RunInfo> {
    let mut runs_info = Vec::new();
    for (i, r) in input.runs.iter().enumerate() {
        let t = r.trace;
        let env = Environment::from_fingerprint(&t.header.fingerprint);
        let valid = valid_samples(r, input.config);
        let who = if input.multi_node {
            format!("node {i}")
        } else if input.runs.len() > 1 {
            format!("run {}", i + 1)
        } else {
            "this run".to_string()
        };
        if let Some(f) = run_failure(t) {
            run.benchmark_failed |= f.by_benchmark;
            run.raise(
                RunVerdict::Error,
                format!("{who}: {f}; a failed benchmark is never a pass"),
            );
        }
        let mism = input.baseline.environment.mismatches(&env);
        if !mism.is_empty() {
            let text = format!(
                "{who}: environment differs from the baseline: {}",
                mism.join("; ")
            );
            if input.allow_env_mismatch {
                run.warnings
                    .push(format!("{text} (allowed by --allow-env-mismatch)"));
            } else {
                run.raise(RunVerdict::Invalid, format!(
                    "{text}; compare like with like, re-capture on this hardware, or pass --allow-env-mismatch"
                ));
            }
        }
        comparable(input, t, &who, run);
        // The benchmark's own verdict on itself (MLPerf LoadGen's `Result
        // is : INVALID`: latency or early-stopping constraints not met) is
        // a gate of its own: the run fails as a regression would.
        for invalid in &r.user_invalid {
            run.raise(
                RunVerdict::Regression,
                format!("{who}: {invalid}; the benchmark's own result check failed"),
            );
        }
        // Nodes of one run: a number one node printed (rank 0) is the run's.
        let elsewhere =
            |m: &str| input.multi_node && input.runs.iter().any(|o| o.user.contains_key(m));
        user_problems(r, input.config, &who, &elsewhere, run);
        if valid < MIN_STEADY_SAMPLES {
            if harness_number_decides(r, input.config) {
                run.counters_unmeasured = true;
                run.warnings.push(format!(
                    "{who}: only {valid} valid steady samples (at least {MIN_STEADY_SAMPLES} needed for the counters): judged on the benchmark's own number, the counters are unmeasured context"
                ));
            } else {
                run.raise(RunVerdict::Unmeasured, format!(
                    "{who}: only {valid} valid steady samples (at least {MIN_STEADY_SAMPLES} needed); measure longer (--duration) or shorten --warmup"
                ));
            }
        }
        runs_info.push(RunInfo {
            source: t.path.display().to_string(),
            command: t.header.command.join(" "),
            node: input.multi_node.then_some(i),
            gpu_model: env.gpu_model,
            gpu_count: env.gpu_count,
            steady_samples: r.summary.steady_samples,
            valid_samples: valid,
            total_samples: r.summary.total_samples,
            wall_time_s: r.summary.wall_time_s,
            startup_s: r.summary.startup_s,
            teardown_s: r.summary.teardown_s,
            closed_by_until: r.summary.closed_by_until,
            exit_code: t.exit_code(),
            signal: t.end.as_ref().and_then(|e| e.signal),
            truncated: t.truncated,
            gpus: r
                .summary
                .gpus
                .iter()
                .map(|g| GpuIdentity {
                    index: g.index,
                    uuid: g.uuid.clone(),
                    model: g.name.clone(),
                })
                .collect(),
        });
    }
    runs_info
}

/// A declared number the run did not give fails it: the reader's mistake
/// (exit 2) or the benchmark's (exit 5, "did not produce its number").
/// An `optional = true` metric is only warned about.
fn user_problems(
    r: &RunInput,
    config: &Config,
    who: &str,
    elsewhere: &dyn Fn(&str) -> bool,
    run: &mut RunLevel,
) {
    for p in r.user_problems.iter().filter(|p| !elsewhere(&p.metric)) {
        if p.optional {
            run.warnings.push(format!(
                "{who}: {p} (optional in gate.toml: judged without it)"
            ));
            continue;
        }
        match p.fault {
            crate::metric_sources::Fault::Config => {
                run.input_error = true;
                run.raise(
                    RunVerdict::Error,
                    format!("{who}: {p}; fix {}", config.user_table_at(&p.metric)),
                );
            }
            crate::metric_sources::Fault::NotProduced => {
                run.benchmark_failed = true;
                run.raise(
                    RunVerdict::Error,
                    format!("{who}: {p}; a run without its declared number is never a pass (set optional = true in gate.toml if it may be absent)"),
                );
            }
        }
    }
}

/// The benchmark's own number decides this run: a gated user metric was
/// read. Its value does not depend on how many samples the counters got.
pub fn harness_number_decides(r: &RunInput, config: &Config) -> bool {
    r.user
        .keys()
        .any(|id| config.policy(id, None).is_some_and(|p| p.gated))
}

/// Short runs judged on the benchmark's number (`harness_number_decides`):
/// the counters' few samples make them context, not a verdict.
fn counters_as_context(results: &mut [MetricResult]) {
    for m in results.iter_mut().filter(|m| !m.first_class && m.gated) {
        m.gated = false;
        m.verdict = Verdict::Info;
        m.why = Why::NotMeasured;
    }
    results.sort_by_key(|m| !m.gated);
}

/// The metrics of this check in report order: the benchmark's own numbers
/// (wall time, user metrics), then the catalogue's sampled metrics, then
/// columns this catalogue does not know (a newer recorder).
fn metric_ids(input: &CheckInput) -> (Vec<String>, Vec<String>) {
    // Glob tables' metrics are the benchmarks the runs and the baseline have.
    let seen = input
        .runs
        .iter()
        .flat_map(|r| r.user.keys())
        .chain(input.baseline.metrics.keys());
    let first_class: Vec<String> = std::iter::once(metrics::WALL_TIME.id.to_string())
        .chain(input.config.user_metric_ids(seen))
        .collect();
    let mut sampled: Vec<String> = metrics::GPU_METRICS
        .iter()
        .chain(metrics::HOST_METRICS.iter())
        .map(|d| d.id.to_string())
        .collect();
    for r in input.runs {
        for id in r.summary.gpu_aggregate.keys().chain(r.summary.host.keys()) {
            if !sampled.contains(id) {
                sampled.push(id.clone());
            }
        }
    }
    (first_class, sampled)
}

/// What the noise band of metric `id` knows beyond the runs: the looks of
/// the sequential test, and the history's healthy runs (kept per
/// aggregate metric: `""` asks for none, per GPU and per node).
fn prior_of(input: &CheckInput, id: &str) -> Prior {
    Prior {
        history: input.history_spread.get(id).copied(),
        looks: input.looks.max(1),
    }
}

/// Every metric judged: the aggregate (over runs, or over the nodes of one
/// run), then per GPU when there are several (one straggler fails the run
/// even when the average hides it), then per node; context (ungated) last.
fn judge_metrics(
    input: &CheckInput,
    policies: &Policies,
    first_class: &[String],
    sampled: &[String],
) -> Vec<MetricResult> {
    let b = input.baseline;
    let all: Vec<&RunInput> = input.runs.iter().collect();
    let mut results: Vec<MetricResult> = Vec::new();
    let mut context: Vec<MetricResult> = Vec::new();
    for id in first_class.iter().chain(sampled.iter()) {
        let p = policies.get(id);
        let new = observe(
            &all,
            id,
            kind_of(id, input.config),
            None,
            p.statistic,
            input.multi_node,
        );
        let prior = prior_of(input, id);
        if let Some(r) = compare(p, b.metric(id, None), new, None, None, &prior) {
            if r.gated {
                results.push(r);
            } else {
                context.push(r);
            }
        }
    }
    let ngpu = input
        .runs
        .iter()
        .map(|r| r.summary.gpus.len())
        .max()
        .unwrap_or(0);
    let per_gpu = |runs: &[&RunInput], node: Option<usize>, out: &mut Vec<MetricResult>| {
        if ngpu < 2 {
            return;
        }
        for g in 0..ngpu {
            for d in metrics::GPU_METRICS {
                let p = policies.get(d.id);
                if !p.gated {
                    continue;
                }
                let new = observe(runs, d.id, Kind::Sampled, Some(g), p.statistic, false);
                let prior = prior_of(input, "");
                if let Some(r) = compare(p, b.metric(d.id, Some(g)), new, node, Some(g), &prior) {
                    out.push(r);
                }
            }
        }
    };
    if !input.multi_node {
        per_gpu(&all, None, &mut results);
    } else {
        // Each node judged on its own against the baseline (a node's run).
        for (i, r) in input.runs.iter().enumerate() {
            let one = [r];
            for id in first_class.iter().chain(sampled.iter()) {
                let p = policies.get(id);
                if !p.gated {
                    continue;
                }
                let new = observe(
                    &one,
                    id,
                    kind_of(id, input.config),
                    None,
                    p.statistic,
                    false,
                );
                let prior = prior_of(input, "");
                if let Some(m) = compare(p, b.metric(id, None), new, Some(i), None, &prior) {
                    results.push(m);
                }
            }
            per_gpu(&one, Some(i), &mut results);
        }
    }
    results.extend(context);
    results
}

/// Regressions the change acknowledged (`accept`, bounded by the target
/// branch's `[accept]`) become `Accepted`; what was offered but did not
/// apply is warned about, so no acknowledgement hides.
fn apply_acceptances(input: &CheckInput, results: &mut [MetricResult], run: &mut RunLevel) {
    let Some(acc) = input.acceptances else {
        return;
    };
    let baseline = &input.baseline.name;
    let mut used = Vec::new();
    let mut why_not = Vec::new();
    for m in results
        .iter_mut()
        .filter(|m| m.gated && m.verdict == Verdict::Regression)
    {
        let bad = crate::accept::bad_pct(m.direction, m.change_pct);
        if let Some(a) =
            crate::accept::covering(acc, baseline, &m.id, &m.label(), bad, &mut why_not)
        {
            used.push(a.by.clone());
            m.verdict = Verdict::Accepted;
            m.accepted = Some(a);
        }
    }
    run.warnings
        .extend(crate::accept::unused(acc, baseline, &used, &why_not));
    run.warnings.extend(why_not);
}

/// What the metrics say about the run: regressions fail it, a gated metric
/// not measured (or nothing judged at all) makes it inconclusive, and
/// inconclusive metrics are warned about with what to do.
fn verdict_from_metrics(
    input: &CheckInput,
    results: &[MetricResult],
    run: &mut RunLevel,
) -> Counts {
    let mut counts = Counts::default();
    for m in results {
        match m.verdict {
            Verdict::Pass => counts.pass += 1,
            Verdict::Regression => counts.regression += 1,
            Verdict::Accepted => counts.accepted += 1,
            Verdict::Improvement => counts.improvement += 1,
            Verdict::Inconclusive => counts.inconclusive += 1,
            Verdict::Missing => counts.missing += 1,
            Verdict::Info => counts.info += 1,
        }
    }
    let labels = |keep: &dyn Fn(&MetricResult) -> bool| -> Vec<String> {
        results
            .iter()
            .filter(|m| keep(m))
            .map(|m| m.label())
            .collect()
    };
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if counts.regression > 0 {
        run.raise(
            RunVerdict::Regression,
            format!(
                "{} regression{} beyond the floor and the noise: {}",
                counts.regression,
                plural(counts.regression),
                labels(&|m| m.verdict == Verdict::Regression).join(", ")
            ),
        );
    }
    if counts.accepted > 0 {
        let accepted: Vec<String> = results
            .iter()
            .filter_map(|m| {
                let a = m.accepted.as_ref()?;
                Some(format!(
                    "{} {} (within {} %, {}: {})",
                    m.label(),
                    m.change_pct
                        .map(|p| format!("{} %", crate::format::percent_change(p)))
                        .unwrap_or_default(),
                    a.max_change_pct,
                    a.by,
                    a.reason
                ))
            })
            .collect();
        run.raise(
            RunVerdict::Accepted,
            format!(
                "ACCEPTED: {} regression{} acknowledged by the change: {}",
                counts.accepted,
                plural(counts.accepted),
                accepted.join("; ")
            ),
        );
    }
    if input.fail_on_improvement && counts.improvement > 0 {
        run.raise(RunVerdict::Regression, format!(
            "{} improvement{} beyond the floor and the noise (--fail-on-improvement): re-capture the baseline to lock {} in",
            counts.improvement,
            plural(counts.improvement),
            if counts.improvement == 1 { "it" } else { "them" },
        ));
    }
    let missing_new = labels(&|m| m.verdict == Verdict::Missing && m.new.is_none());
    if !missing_new.is_empty() {
        run.raise(RunVerdict::Unmeasured, format!(
            "gated metrics not measured in this run: {}; a gate that measured nothing must not pass",
            missing_new.join(", ")
        ));
    }
    let missing_base = labels(&|m| m.verdict == Verdict::Missing && m.baseline.is_none()).len();
    if missing_base > 0 {
        run.warnings.push(format!(
            "{missing_base} gated metric(s) are not in the baseline and were not judged; re-capture it"
        ));
    }
    // A bad move the noise leaves open is not a pass (issue 17): when it is
    // the decisive metric's, the run is inconclusive (exit 4, unless
    // gate.toml prefers green). When the benchmark's own declared number
    // decided, other metrics left open (wall time) are only warned about.
    let decided = decided_by_benchmark(results);
    let open = |why: Why| {
        labels(&|m| {
            m.verdict == Verdict::Inconclusive
                && m.why == why
                && (!decided || is_benchmark_number(m))
        })
    };
    let warn_only = |why: Why| {
        labels(&|m| {
            m.verdict == Verdict::Inconclusive && m.why == why && decided && !is_benchmark_number(m)
        })
    };
    let noisy = open(Why::WithinNoise);
    if !noisy.is_empty() {
        run.raise(RunVerdict::Inconclusive, format!(
            "{} metric(s) moved the bad way beyond the floor but within the noise band: {}; a live check reruns the benchmark (--max-reruns), else capture the baseline with more --runs",
            noisy.len(),
            noisy.join(", ")
        ));
    }
    let unknown = open(Why::NoNoiseEstimate);
    if !unknown.is_empty() {
        run.raise(RunVerdict::Inconclusive, format!(
            "{} metric(s) moved the bad way beyond the floor but have no noise estimate (measured once per run, one baseline run): {}; capture the baseline with --runs 3, or let a live check rerun (--max-reruns)",
            unknown.len(),
            unknown.join(", ")
        ));
    }
    let mut aside = warn_only(Why::WithinNoise);
    aside.extend(warn_only(Why::NoNoiseEstimate));
    if !aside.is_empty() {
        run.warnings.push(format!(
            "{} moved the bad way beyond the floor, but the noise leaves it open and the benchmark's own number decided: not judged",
            aside.join(", ")
        ));
    }
    // A gate that judged nothing must not pass: a baseline cut short (no
    // [metrics.*] tables left) or with none of this run's gated metrics
    // leaves every gated result `Missing`, which is not a judgement.
    let judged = results
        .iter()
        .filter(|m| m.gated && m.verdict != Verdict::Missing)
        .count();
    if judged == 0 && run.verdict == RunVerdict::Pass {
        run.raise(
            RunVerdict::Unmeasured,
            "no gated metric was judged (none is both in the baseline and measured in this run); re-capture the baseline or check that it is complete".into(),
        );
    }
    counts
}

/// What changed, most likely cause first; `unexplained` when something
/// regressed and no rule names a cause. Repeated runs are diagnosed
/// together, weighed against the same pooled evidence as their verdict;
/// the nodes of one run one by one, keeping each rule's strongest finding.
fn diagnose_change(input: &CheckInput, results: &[MetricResult]) -> Vec<Finding> {
    // Causes explain a move in the bad direction: a regression, or one the
    // noise left open. A run that only passed or improved gets none (a
    // healthy run checked against a pathology's baseline is not "launch-bound"
    // because its GPU idles more between faster kernels).
    if !results.iter().any(MetricResult::moved_the_bad_way) {
        return Vec::new();
    }
    let pooled = crate::diagnose::Pooled {
        runs: input
            .runs
            .iter()
            .map(|r| &r.summary as &dyn crate::stats::MetricSource)
            .collect(),
    };
    let sources: Vec<&dyn crate::stats::MetricSource> = if input.multi_node || input.runs.len() < 2
    {
        input.runs.iter().map(|r| &r.summary as _).collect()
    } else {
        vec![&pooled]
    };
    let mut diagnosis: Vec<Finding> = Vec::new();
    for r in sources {
        for f in input.rules.explain_change(input.baseline, r) {
            match diagnosis.iter_mut().find(|d| d.rule == f.rule) {
                Some(d) if d.score >= f.score => {}
                Some(d) => *d = f,
                None => diagnosis.push(f),
            }
        }
    }
    crate::diagnose::rank_by_share(&mut diagnosis);
    // Only moves the noise left open: the causes are what to look at if a
    // rerun (--confirm) confirms them, not findings (severity low at most).
    // Healthy runs of a noisy benchmark move that much too.
    let regressed =
        |m: &&MetricResult| matches!(m.verdict, Verdict::Regression | Verdict::Accepted);
    if !results.iter().any(|m| regressed(&m)) {
        for f in diagnosis.iter_mut() {
            f.severity = f.severity.min(crate::diagnose::Severity::Low);
            f.title = format!("If confirmed: {}", f.title);
        }
    }
    let named = diagnosis
        .iter()
        .any(|f| f.severity >= crate::diagnose::Severity::Low);
    let moved: Vec<(String, Option<f64>)> = results
        .iter()
        .filter(regressed)
        .map(|m| (m.label(), m.change_pct))
        .collect();
    if !moved.is_empty() && !named {
        let rate = crate::diagnose::features::WORK_RATE;
        let declared = crate::stats::MetricSource::feature(input.baseline, rate).is_some();
        diagnosis.push(crate::diagnose::unexplained(&moved, declared));
    }
    diagnosis
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_verdict_order_and_exit_codes() {
        assert!(RunVerdict::Error > RunVerdict::Invalid);
        assert!(RunVerdict::Invalid > RunVerdict::Regression);
        assert!(RunVerdict::Regression > RunVerdict::Unmeasured);
        assert!(RunVerdict::Unmeasured > RunVerdict::Inconclusive);
        assert_eq!(RunVerdict::Regression.exit_code(), 1);
        assert_eq!(RunVerdict::Unmeasured.exit_code(), 3);
        assert_eq!(RunVerdict::Inconclusive.exit_code(), 4);
        assert_eq!(RunVerdict::Pass.exit_code(), 0);
    }

    #[test]
    fn a_late_finding_raises_the_verdict_and_never_lowers_it() {
        let mut r = crate::report::check::tests_support::sample_report();
        r.verdict = RunVerdict::Pass;
        r.exit_code = 0;
        r.raise(RunVerdict::Regression, "drift".into());
        assert_eq!((r.verdict, r.exit_code), (RunVerdict::Regression, 1));
        assert_eq!(r.reasons.last().map(String::as_str), Some("drift"));
        // A failed benchmark keeps its verdict and exit code (5).
        r.verdict = RunVerdict::Error;
        r.exit_code = crate::exit_code::BENCHMARK_FAILED;
        r.raise(RunVerdict::Regression, "drift again".into());
        assert_eq!((r.verdict, r.exit_code), (RunVerdict::Error, 5));
        assert_eq!(r.reasons.last().map(String::as_str), Some("drift again"));
        r.warn("a slide".into());
        assert_eq!(r.warnings.last().map(String::as_str), Some("a slide"));
    }
}
