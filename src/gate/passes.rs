//! The passes over the judged metrics, in the order `check` runs them: the
//! benchmark's own number decides over the counters, faster math explains
//! idle time, wall time across other arguments is context, acceptances,
//! then the run verdict from the metrics and the diagnosis of the change.

use super::decide::{Verdict, Why};
use super::judging::{decides_the_run, is_gated};
use super::report::{Counts, MetricResult, RunVerdict};
use super::runs::RunLevel;
use super::CheckInput;
use crate::diagnose::Finding;
use crate::metrics;

/// A number the benchmark printed itself and gate.toml declared
/// (throughput, latency...), judged over the run (not per node).
pub(super) fn is_benchmark_number(m: &MetricResult) -> bool {
    decides_the_run(&m.id, m.first_class) && m.node.is_none()
}

/// A declared benchmark number was judged decisively: improvement,
/// regression, or a pass inside its floor. It then decides the run. A pass
/// only because the baseline's own spread is wide (`WithinMeasuredNoise`)
/// is no evidence that nothing changed: the counters stay gated (a
/// contended decode run, -1.8 % inside a baseline with one 15 % slower run,
/// passed green before this).
pub(super) fn decided_by_benchmark(results: &[MetricResult]) -> bool {
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
pub(super) fn let_the_benchmark_decide(results: &mut [MetricResult]) -> Vec<String> {
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
pub(super) fn let_faster_math_explain_idle(results: &mut [MetricResult]) -> Vec<String> {
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
pub(super) fn wall_time_not_comparable(
    input: &CheckInput,
    results: &mut [MetricResult],
) -> Option<String> {
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

/// Short runs judged on the benchmark's number (`harness_number_decides`):
/// the counters' few samples make them context, not a verdict.
pub(super) fn counters_as_context(results: &mut [MetricResult]) {
    for m in results.iter_mut().filter(|m| !m.first_class && m.gated) {
        m.gated = false;
        m.verdict = Verdict::Info;
        m.why = Why::NotMeasured;
    }
    results.sort_by_key(|m| !m.gated);
}

/// Regressions the change acknowledged (`accept`, bounded by the target
/// branch's `[accept]`) become `Accepted`; what was offered but did not
/// apply is warned about, so no acknowledgement hides.
pub(super) fn apply_acceptances(
    input: &CheckInput,
    results: &mut [MetricResult],
    run: &mut RunLevel,
) {
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
pub(super) fn verdict_from_metrics(
    input: &CheckInput,
    results: &[MetricResult],
    run: &mut RunLevel,
) -> Counts {
    let counts = count_verdicts(results);
    raise_for_decisive_moves(input, results, &counts, run);
    raise_for_missing(results, run);
    raise_for_open_moves(results, run);
    raise_if_nothing_judged(results, run);
    counts
}

/// How many metrics got each verdict.
fn count_verdicts(results: &[MetricResult]) -> Counts {
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
    counts
}

/// The labels of the metrics `keep` selects, in report order.
fn labels(results: &[MetricResult], keep: impl Fn(&MetricResult) -> bool) -> Vec<String> {
    results
        .iter()
        .filter(|m| keep(m))
        .map(|m| m.shown_name())
        .collect()
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Regressions fail the run, acknowledged ones mark it accepted, and
/// improvements fail it under `--fail-on-improvement`.
fn raise_for_decisive_moves(
    input: &CheckInput,
    results: &[MetricResult],
    counts: &Counts,
    run: &mut RunLevel,
) {
    if counts.regression > 0 {
        run.raise(
            RunVerdict::Regression,
            format!(
                "{} regression{} beyond the floor and the noise: {}",
                counts.regression,
                plural(counts.regression),
                labels(results, |m| m.verdict == Verdict::Regression).join(", ")
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
                    m.shown_name(),
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
}

/// A gated metric this run did not measure leaves it unmeasured; one the
/// baseline lacks is warned about.
fn raise_for_missing(results: &[MetricResult], run: &mut RunLevel) {
    let missing_new = labels(results, |m| {
        m.verdict == Verdict::Missing && m.new.is_none()
    });
    if !missing_new.is_empty() {
        run.raise(RunVerdict::Unmeasured, format!(
            "gated metrics not measured in this run: {}; a gate that measured nothing must not pass",
            missing_new.join(", ")
        ));
    }
    let missing_base = labels(results, |m| {
        m.verdict == Verdict::Missing && m.baseline.is_none()
    })
    .len();
    if missing_base > 0 {
        run.warnings.push(format!(
            "{missing_base} gated metric(s) are not in the baseline and were not judged; re-capture it"
        ));
    }
}

/// A bad move the noise leaves open is not a pass (issue 17): when it is
/// the decisive metric's, the run is inconclusive (exit 4, unless
/// gate.toml prefers green). When the benchmark's own declared number
/// decided, other metrics left open (wall time) are only warned about.
fn raise_for_open_moves(results: &[MetricResult], run: &mut RunLevel) {
    let decided = decided_by_benchmark(results);
    let open = |why: Why| {
        labels(results, |m| {
            m.verdict == Verdict::Inconclusive
                && m.why == why
                && (!decided || is_benchmark_number(m))
        })
    };
    let warn_only = |why: Why| {
        labels(results, |m| {
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
}

/// A gate that judged nothing must not pass: a baseline cut short (no
/// [metrics.*] tables left) or with none of this run's gated metrics
/// leaves every gated result `Missing`, which is not a judgement.
fn raise_if_nothing_judged(results: &[MetricResult], run: &mut RunLevel) {
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
}

/// What changed, most likely cause first; `unexplained` when something
/// regressed and no rule names a cause. Repeated runs are diagnosed
/// together, weighed against the same pooled evidence as their verdict;
/// the nodes of one run one by one, keeping each rule's strongest finding.
pub(super) fn diagnose_change(input: &CheckInput, results: &[MetricResult]) -> Vec<Finding> {
    // Each regressed benchmark of a run of many by its own span; the rest
    // (counters, a single benchmark) by the whole window.
    let (benchmarks, handled) = super::spans::diagnose_benchmarks(input, results);
    if handled.is_empty() {
        return diagnose_window(input, results);
    }
    let rest: Vec<MetricResult> = (results.iter())
        .filter(|m| !handled.contains(&m.id))
        .cloned()
        .collect();
    let mut out = diagnose_window(input, &rest);
    out.extend(benchmarks);
    out
}

/// `diagnose_change` over the whole window.
fn diagnose_window(input: &CheckInput, results: &[MetricResult]) -> Vec<Finding> {
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
        .map(|m| (m.shown_name(), m.change_pct))
        .collect();
    if !moved.is_empty() && !named && without_gpu_activity(input) {
        diagnosis.push(crate::diagnose::unexplained_without_gpu(&moved));
    } else if !moved.is_empty() && !named {
        let rate = crate::analysis::features::WORK_RATE;
        let declared = crate::stats::MetricSource::feature(input.baseline, rate).is_some();
        diagnosis.push(crate::diagnose::unexplained(&moved, declared));
    }
    diagnosis
}

/// Neither the baseline nor this run kept a GPU busy (a CPU-only
/// benchmark, `--no-gpu`): the diagnosis speaks of no kernels.
fn without_gpu_activity(input: &CheckInput) -> bool {
    let idle = |v: Option<f64>| v.is_none_or(|v| v < 1.0);
    let busy = "gpu_busy_pct";
    let base = crate::stats::MetricSource::stat(
        input.baseline,
        busy,
        crate::stats::Stat::Of(metrics::Statistic::Mean),
        None,
    );
    idle(base)
        && (input.runs.iter()).all(|r| idle(r.summary.gpu_aggregate.get(busy).map(|s| s.mean)))
}

/// The contract in a disturbed check (docs/gating.md, "Disturbed is not
/// regressed"), part 1: the counters the neighbour moves are context. The
/// GPU's process count joins them when the tree's own count (all
/// processes minus the foreign ones) did not grow by its floor: a second
/// process of the benchmark's own stays the change's.
pub(super) fn neighbour_counters_as_context(
    disturbed: &[super::disturbance::Disturbance],
    results: &mut [MetricResult],
) -> Vec<String> {
    let mut ids: Vec<&str> = disturbed.iter().flat_map(|d| d.counters()).collect();
    if disturbed
        .iter()
        .any(super::disturbance::Disturbance::has_foreign_process)
        && !own_processes_grew(results)
    {
        ids.push("processes");
    }
    let mut moved = Vec::new();
    for m in results
        .iter_mut()
        .filter(|m| m.gated && !m.first_class && ids.contains(&m.id.as_str()))
    {
        if m.moved_the_bad_way() {
            moved.push(m.label());
        }
        m.gated = false;
        m.verdict = Verdict::Info;
        m.why = Why::Disturbance;
    }
    moved
}

/// Whether the benchmark's own GPU processes grew: `processes` minus
/// `other_processes` (run level), new against baseline, beyond the
/// process count's floor.
fn own_processes_grew(results: &[MetricResult]) -> bool {
    let find = |id: &str| {
        results
            .iter()
            .find(|m| m.id == id && m.gpu.is_none() && m.node.is_none())
    };
    let (Some(all), Some(others)) = (find("processes"), find("other_processes")) else {
        return false;
    };
    let own = |a: Option<f64>, o: Option<f64>| Some(a? - o?);
    match (own(all.baseline, others.baseline), own(all.new, others.new)) {
        (Some(before), Some(now)) => now - before > all.tolerance.unwrap_or(0.5),
        _ => false,
    }
}

/// Part 2: a gated number that moved the bad way in a disturbed run is no
/// evidence about the change: the run is `disturbed` (exit 3, retryable),
/// naming what acted on it. A run whose numbers held passes, with the
/// disturbance as the first warning.
pub(super) fn judge_disturbed(
    disturbed: &[super::disturbance::Disturbance],
    moved_by_neighbour: &[String],
    run: &mut RunLevel,
) {
    if disturbed.is_empty() {
        return;
    }
    let what = disturbed
        .iter()
        .map(super::disturbance::Disturbance::text)
        .collect::<Vec<_>>()
        .join(" | ");
    let context = if moved_by_neighbour.is_empty() {
        String::new()
    } else {
        format!(
            "; {} moved with it and are reported as context, not gated",
            moved_by_neighbour.join(", ")
        )
    };
    match run.verdict {
        RunVerdict::Regression | RunVerdict::Inconclusive => {
            run.verdict = RunVerdict::Disturbed;
            run.reasons.insert(0, format!(
                "DISTURBED, not evidence about the change: a gated number moved the bad way while something outside the benchmark's process tree acted on the run: {what}{context}. Rerun on a quiet GPU: a live check reruns within --max-reruns (--wait-clean DURATION waits for the neighbour to leave) and judges the clean runs"
            ));
        }
        RunVerdict::Pass | RunVerdict::Accepted => run.warnings.insert(0, format!(
            "DISTURBED run: {what}{context}. The judged numbers held despite it, so the run passes; judge again on a quiet GPU to be sure"
        )),
        _ => run
            .warnings
            .insert(0, format!("DISTURBED run: {what}{context}")),
    }
}
