//! A regressed benchmark of a run of many (Google Benchmark, nvbench,
//! pytest-benchmark, asv) explained by its own span: the rules read the
//! counters of that benchmark's span in the new run against the same span
//! of the baseline (`summary::spans`, `baseline::SpanBaseline`), not the
//! whole process's window where its change is diluted by the others'. A
//! benchmark without a span on either side is explained with the whole
//! window, and its findings say why. Its findings carry its name (title,
//! `benchmark`, `window`), so every report shows them under it.

use super::{CheckInput, MetricResult, Verdict};
use crate::diagnose::{Finding, Pooled, Severity};
use crate::stats::MetricSource;
use std::collections::BTreeSet;

/// The findings of every benchmark that moved the bad way and has a span
/// in the runs, and the metric ids they cover.
pub(super) fn diagnose_benchmarks(
    input: &CheckInput,
    results: &[MetricResult],
) -> (Vec<Finding>, BTreeSet<String>) {
    let mut out = Vec::new();
    let mut handled = BTreeSet::new();
    if input.multi_node {
        return (out, handled);
    }
    for m in results {
        let spanned = input.runs.iter().any(|r| r.spans.contains_key(&m.id));
        if !spanned || m.gpu.is_some() || m.node.is_some() || !m.moved_the_bad_way() {
            continue;
        }
        handled.insert(m.id.clone());
        out.extend(benchmark(input, m));
    }
    (out, handled)
}

/// One benchmark's findings, from its span or the whole window.
fn benchmark(input: &CheckInput, m: &MetricResult) -> Vec<Finding> {
    let b = input.baseline;
    let spans: Vec<_> = input
        .runs
        .iter()
        .filter_map(|r| r.spans.get(&m.id))
        .collect();
    let name = spans
        .first()
        .map_or(m.id.as_str(), |s| s.benchmark.as_str());
    let new_spans: Option<Vec<&dyn MetricSource>> = spans
        .iter()
        .map(|s| s.summary.as_ref().map(|x| x as &dyn MetricSource))
        .collect();
    let view = b.span_view(&m.id);
    let (window, raw) = match (new_spans.filter(|v| !v.is_empty()), &view) {
        (Some(news), Some(view)) => {
            let s = spans[0];
            let kept = &b.spans[&m.id];
            let window = format!(
                "counters of {name}'s own span: {:.1}-{:.1} s of the run ({} samples, from {}), against the same span of the baseline ({:.1} s)",
                s.start_s,
                s.end_s,
                s.steady.len(),
                s.found_by,
                kept.seconds
            );
            let pooled = Pooled { runs: news.clone() };
            let new: &dyn MetricSource = if news.len() > 1 { &pooled } else { news[0] };
            (window, input.rules.explain_change(view, new))
        }
        (news, _) => {
            let why = match (news, spans.iter().find_map(|s| s.fallback.as_deref())) {
                (None, Some(why)) => why.to_string(),
                _ => "the baseline keeps no span of it (captured before spans were kept, or its span was not found then); re-capture the baseline".to_string(),
            };
            let window = format!("counters of the whole window, not {name}'s own span: {why}");
            let runs: Vec<&dyn MetricSource> = input.runs.iter().map(|r| &r.summary as _).collect();
            let pooled = Pooled { runs: runs.clone() };
            let new: &dyn MetricSource = if runs.len() > 1 { &pooled } else { runs[0] };
            (window, input.rules.explain_change(b, new))
        }
    };
    let mut findings = tag(raw, m, &window);
    crate::diagnose::rank_by_share(&mut findings);
    let regressed = matches!(m.verdict, Verdict::Regression | Verdict::Accepted);
    if !regressed {
        for f in findings.iter_mut() {
            f.severity = f.severity.min(Severity::Low);
            f.title = f.title.replacen(": ", ": If confirmed: ", 1);
        }
        return findings;
    }
    if !findings.iter().any(|f| f.severity >= Severity::Low) {
        let rate = crate::analysis::features::WORK_RATE;
        let declared = MetricSource::feature(b, rate).is_some();
        let none = crate::diagnose::unexplained(&[(m.label(), m.change_pct)], declared);
        findings.extend(tag(vec![none], m, &window));
    }
    findings
}

/// The findings of benchmark `m`: its name before each title, and the
/// window their counters came from.
fn tag(findings: Vec<Finding>, m: &MetricResult, window: &str) -> Vec<Finding> {
    findings
        .into_iter()
        .map(|mut f| {
            f.title = format!("{}: {}", m.label(), f.title);
            f.benchmark = Some(m.id.clone());
            f.window = Some(window.to_string());
            f
        })
        .collect()
}
