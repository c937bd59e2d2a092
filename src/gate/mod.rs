//! Verdicts: is a new run worse than its baseline, metric by metric and as a
//! whole? Owns the decision rule, the run-level checks (crash, environment,
//! too little data) and the `CheckReport` every reporter renders.
//!
//! The decision rule for one metric (practical floor, noise band, and what
//! happens without a noise estimate) is `decide`; docs/gating.md has the
//! evidence behind its defaults. `check` below is the table of contents:
//! the run-level checks (`runs`), each metric's policy resolved once and
//! every metric judged (`judging`), the passes over the judged metrics and
//! the run verdict (`passes`), into the report every reporter renders
//! (`report`).
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

use crate::baseline::Baseline;
use crate::config::Config;
use crate::diagnose::{Finding, RuleSet};
use crate::summary::Run;
use std::collections::BTreeMap;

pub mod comparable;
pub mod decide;
pub mod detectable;
pub mod disturbance;
mod judging;
pub mod paired;
mod passes;
mod report;
mod runs;
mod spans;
#[cfg(test)]
pub(crate) mod tests_support;
pub use crate::summary::{end_failure, RunFailure};
pub use decide::{judge, Judgement, Noise, NoiseSource, Observation, Prior, Verdict, Why};
pub(crate) use judging::{decides_the_run, is_gated, round_differences, Policies};
use judging::{judge_metrics, metric_ids};
use passes::{
    apply_acceptances, counters_as_context, diagnose_change, let_faster_math_explain_idle,
    let_the_benchmark_decide, verdict_from_metrics, wall_time_not_comparable,
};
pub use report::{
    AbDifferences, AbInfo, AbRound, BaselineInfo, CheckReport, Counts, GpuIdentity, MetricResult,
    MetricTrend, RunInfo, RunVerdict, Trend, TrendDrift, REPORT_SCHEMA_VERSION,
};
use runs::{check_runs, RunLevel};
pub use runs::{exit_code_of, harness_number_decides, valid_samples, MIN_STEADY_SAMPLES};

/// Everything `check` needs; all pure data.
pub struct CheckInput<'a> {
    pub baseline: &'a Baseline,
    pub baseline_source: String,
    pub config: &'a Config,
    pub cli_threshold: Option<f64>,
    pub runs: &'a [Run],
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

/// Judge the runs against the baseline and assemble the report.
pub fn check(input: &CheckInput) -> CheckReport {
    check_with(input, None)
}

/// `gate ab`'s verdict: `input.runs` are B's runs, `a_runs` A's in the
/// same rounds (`input.baseline` built from them), each metric judged on
/// the per-round differences (`paired`); the rest is `check`'s.
pub fn check_paired(input: &CheckInput, a_runs: &[Run]) -> CheckReport {
    check_with(input, Some(a_runs))
}

fn check_with(input: &CheckInput, a_runs: Option<&[Run]>) -> CheckReport {
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
    let mut results = judge_metrics(input, &policies, &first_class, &sampled, a_runs);
    name_benchmarks(input, &mut results);
    if run.counters_unmeasured {
        counters_as_context(&mut results);
    }
    let disturbed: Vec<disturbance::Disturbance> = input
        .runs
        .iter()
        .filter_map(|r| disturbance::detect(r, Some(b)))
        .collect();
    let moved_by_neighbour = passes::neighbour_counters_as_context(&disturbed, &mut results);
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
    passes::judge_disturbed(&disturbed, &moved_by_neighbour, &mut run);
    if let Some(w) = detectable::blind_warning(&b.name, &results, |m| runs_apart(b, m)) {
        run.warnings.push(w);
    }
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
        inconclusive: input.config.file.verdict.inconclusive,
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
        disturbance: disturbed,
        trend: None,
        ab: None,
    }
}

/// Each harness benchmark's own name, from this run where the baseline
/// has none (a baseline captured before names were kept).
fn name_benchmarks(input: &CheckInput, results: &mut [MetricResult]) {
    for m in results.iter_mut().filter(|m| m.benchmark.is_none()) {
        m.benchmark = (input.runs.iter()).find_map(|r| r.user_benchmarks.get(&m.id).cloned());
    }
}

/// How far apart the baseline's runs are on a metric's statistic, in % of
/// their mean (max - min); None with fewer than two runs.
fn runs_apart(b: &Baseline, m: &MetricResult) -> Option<f64> {
    let o = judging::baseline_observation(b.metrics.get(&m.id)?, m.statistic)?;
    let (lo, hi) = o
        .runs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(*v), h.max(*v))
        });
    (o.runs.len() >= 2 && o.value != 0.0).then(|| (hi - lo) / o.value.abs() * 100.0)
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

    /// `[verdict] inconclusive = "pass"` holds for a verdict raised after
    /// `check` too: an inconclusive run exits 0 however it got there.
    #[test]
    fn a_raise_to_inconclusive_honours_the_verdict_settings() {
        use crate::config::verdict::InconclusiveExit;
        for (setting, code) in [(InconclusiveExit::Fail, 4), (InconclusiveExit::Pass, 0)] {
            let mut r = crate::report::check::tests_support::sample_report();
            (r.verdict, r.exit_code, r.inconclusive) = (RunVerdict::Pass, 0, setting);
            r.raise(RunVerdict::Inconclusive, "left open".into());
            assert_eq!(
                (r.verdict, r.exit_code),
                (RunVerdict::Inconclusive, code),
                "{setting:?}"
            );
            // A regression still fails, whatever the setting.
            r.raise(RunVerdict::Regression, "drift".into());
            assert_eq!((r.verdict, r.exit_code), (RunVerdict::Regression, 1));
        }
    }
}
