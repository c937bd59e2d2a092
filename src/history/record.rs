//! What a run looks like in the history, built from what `check` and
//! `capture` already computed (the `CheckReport`, the new `Baseline`), plus
//! the drift judgement of a new check against the runs before it.
//!
//! Pure: provenance that needs the environment or git (commit, branch,
//! clock) is handed in by the command as a `Provenance`.

use super::drift::{self, Series};
use super::{DriftRow, MetricRow, RowVerdict, RunKind, RunRecord, StoredVerdict};
use crate::baseline::{Baseline, Environment};
use crate::config::history::DriftConfig;
use crate::gate::{CheckReport, Observation, RunVerdict, Verdict};
use crate::metrics::Direction;
use std::collections::{BTreeMap, BTreeSet};

/// Where and when a run was made; gathered by the command layer.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Provenance {
    pub recorded_at: String,
    pub commit: Option<String>,
    pub branch: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub environment: Environment,
    /// Trace file(s) behind the run.
    pub source: String,
}

fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
}

/// Spread of `id`'s statistic between the baseline's runs.
fn baseline_sd(
    b: &Baseline,
    id: &str,
    gpu: Option<usize>,
    stat: crate::metrics::Statistic,
) -> Option<f64> {
    let m = b.metric(id, gpu)?;
    finite(Observation::from_baseline(m, stat)?.run_stdev())
}

fn environment_json(env: &Environment) -> serde_json::Value {
    serde_json::to_value(env).unwrap_or(serde_json::Value::Null)
}

/// The history record of a finished `gate check`.
pub(crate) fn from_check(report: &CheckReport, baseline: &Baseline, prov: Provenance) -> RunRecord {
    let mut seen = BTreeSet::new();
    let metrics = report
        .metrics
        .iter()
        // Labels are unique per report; keep the first should that change.
        .filter(|m| seen.insert(m.label()))
        .map(|m| MetricRow {
            metric: m.label(),
            unit: m.unit.clone(),
            direction: m.direction.into(),
            statistic: m.statistic.into(),
            gated: m.gated,
            baseline_value: finite(m.baseline),
            baseline_sd: if m.node.is_none() {
                baseline_sd(baseline, &m.id, m.gpu, m.statistic)
            } else {
                None
            },
            value: finite(m.new),
            change_pct: finite(m.change_pct),
            tolerance: finite(m.tolerance),
            noise: finite(m.noise),
            verdict: m.verdict.into(),
        })
        .collect();
    let top = report.diagnosis.first();
    RunRecord {
        id: None,
        recorded_at: prov.recorded_at,
        kind: RunKind::Check,
        baseline: report.baseline.name.clone(),
        baseline_created: report.baseline.created.clone(),
        baseline_runs: report.baseline.runs,
        commit: prov.commit,
        branch: prov.branch,
        tags: prov.tags,
        gpu_model: prov.environment.gpu_model.clone(),
        environment: environment_json(&prov.environment),
        verdict: report.verdict().into(),
        exit_code: report.exit_code(),
        regressions: report.counts.regression,
        top_rule: top.map(|f| f.rule.clone()),
        top_cause: top.map(|f| f.title.clone()),
        gate_version: report.gate_version.clone(),
        source: prov.source,
        metrics,
        drift: Vec::new(),
    }
}

/// The history record of a `gate capture`: the new baseline's own values,
/// so a trend page can mark the refresh and show where the band moved.
pub(crate) fn from_capture(b: &Baseline, prov: Provenance) -> RunRecord {
    let mut metrics = Vec::new();
    let mut push = |label: String, m: &crate::baseline::BaselineMetric| {
        let obs = Observation::from_baseline(m, m.statistic);
        let value = finite(obs.as_ref().map(|o| o.value));
        metrics.push(MetricRow {
            metric: label,
            unit: m.unit.clone(),
            direction: m.direction.into(),
            statistic: m.statistic.into(),
            gated: m.gated,
            baseline_value: value,
            baseline_sd: finite(obs.and_then(|o| o.run_stdev())),
            value,
            change_pct: None,
            tolerance: None,
            noise: None,
            verdict: RowVerdict::Captured.into(),
        });
    };
    for (id, m) in &b.metrics {
        push(id.clone(), m);
    }
    for (key, g) in &b.gpus {
        for (id, m) in &g.metrics {
            let slot = key.trim_start_matches("gpu");
            push(format!("{id}[gpu{slot}]"), m);
        }
    }
    RunRecord {
        id: None,
        recorded_at: prov.recorded_at,
        kind: RunKind::Capture,
        baseline: b.name.clone(),
        baseline_created: b.created.clone(),
        baseline_runs: b.capture.runs,
        commit: prov.commit,
        branch: prov.branch,
        tags: prov.tags,
        gpu_model: prov.environment.gpu_model.clone(),
        environment: environment_json(&prov.environment),
        verdict: RowVerdict::Captured.into(),
        exit_code: crate::exit_code::PASS,
        regressions: 0,
        top_rule: None,
        top_cause: None,
        gate_version: b.gate_version.clone(),
        source: prov.source,
        metrics,
        drift: Vec::new(),
    }
}

/// Runs whose values may enter a drift series: measured and judged (an
/// errored, environment-mismatched or disturbed run says nothing about the
/// code).
pub(crate) fn counts_for_drift(run: &RunRecord) -> bool {
    run.kind == RunKind::Check
        && run.verdict != RunVerdict::Error
        && run.verdict != RunVerdict::Invalid
        && run.verdict != RunVerdict::Disturbed
}

/// Hostile characters (controls, bidi overrides) shown visibly
/// (`crate::escape::terminal`): text from the environment or the database
/// (branch names, commits, messages) reaches terminals, CI logs and reports.
pub(crate) fn clean_text(s: &str) -> String {
    crate::escape::terminal(s)
}

/// `clean_text`, and at most 80 characters: for names in table cells.
pub fn clean(s: &str) -> String {
    let s = clean_text(s);
    if s.chars().count() > 80 {
        let cut: String = s.chars().take(79).collect();
        format!("{cut}…")
    } else {
        s
    }
}

fn short_commit(c: &str) -> String {
    clean(&c.chars().take(12).collect::<String>())
}

/// Find drift for the new run `current` (not yet stored) against the
/// earlier runs `previous` (newest first, as `HistoryStore::runs` returns
/// them: same baseline version and branch, metric rows loaded). Returns
/// one row per drifting gated metric, with its sentence.
pub(crate) fn find_drift(
    current: &RunRecord,
    previous: &[RunRecord],
    config: &DriftConfig,
) -> Vec<DriftRow> {
    if !config.enabled || !counts_for_drift(current) {
        return Vec::new();
    }
    let earlier: Vec<&RunRecord> = previous
        .iter()
        .filter(|r| counts_for_drift(r) && r.baseline_created == current.baseline_created)
        .take(config.window.saturating_sub(1))
        .collect();
    current
        .metrics
        .iter()
        .filter(|m| m.gated)
        .filter_map(|m| metric_drift(current, &earlier, m, config))
        .collect()
}

/// Only values that passed their own check (pass, inconclusive,
/// improvement) make a drift series: a regression is already a finding of
/// its own (and usually reverted), and one such outlier in the window would
/// inflate the moving-range noise estimate and hide a real slide.
fn passed(verdict: &StoredVerdict) -> bool {
    *verdict == Verdict::Pass
        || *verdict == Verdict::Inconclusive
        || *verdict == Verdict::Improvement
}

/// The drift finding of one gated metric `m` of `current` over the runs
/// `earlier` (newest first), if it drifts.
fn metric_drift(
    current: &RunRecord,
    earlier: &[&RunRecord],
    m: &MetricRow,
    config: &DriftConfig,
) -> Option<DriftRow> {
    if !passed(&m.verdict) {
        return None;
    }
    let (b, x) = (m.baseline_value?, m.value?);
    let direction = match m.direction.known()? {
        d @ (Direction::HigherIsBetter | Direction::LowerIsBetter) => d,
        Direction::Neutral => return None,
    };
    // Oldest first: the runs before (newest first) reversed, then this one.
    let mut points: Vec<(f64, Option<&str>)> = earlier
        .iter()
        .rev()
        .filter_map(|r| {
            let row = r.metrics.iter().find(|p| p.metric == m.metric)?;
            if !passed(&row.verdict) {
                return None;
            }
            Some((row.value?, r.commit.as_deref()))
        })
        .collect();
    points.push((x, current.commit.as_deref()));
    let series = Series {
        direction,
        baseline: b,
        baseline_sd: m.baseline_sd,
        baseline_runs: current.baseline_runs,
        tolerance: m.tolerance.unwrap_or(0.0),
        values: points.iter().map(|p| p.0).collect(),
    };
    let d = drift::detect(&series, config)?;
    let since_commit = points[d.segment_start].1.map(short_commit);
    let message = drift_message(current, m, b, &d, since_commit.as_deref());
    Some(DriftRow {
        metric: m.metric.clone(),
        shift_pct: d.shift_pct,
        shift: d.shift,
        cusum: d.cusum,
        runs: d.segment_runs,
        since_commit,
        failed: config.fail,
        message,
    })
}

/// The sentence reported for drift `d` of metric `m` (baseline value `b`)
/// in run `current`.
fn drift_message(
    current: &RunRecord,
    m: &MetricRow,
    b: f64,
    d: &drift::Drift,
    since_commit: Option<&str>,
) -> String {
    let unit = if m.unit.is_empty() || m.unit == "count" {
        String::new()
    } else {
        format!(" {}", m.unit)
    };
    let pct = d
        .shift_pct
        .map(|p| format!("{p:+.1} %"))
        .unwrap_or_else(|| format!("{:+}{unit}", crate::format::number(d.shift)));
    let branch = current
        .branch
        .as_deref()
        .map(|b| format!(" on branch '{}'", clean(b)))
        .unwrap_or_default();
    let since = since_commit
        .map(|c| format!(", starting at commit {c}"))
        .unwrap_or_default();
    format!(
        "drift: {} ({}) has slid {pct} ({} -> {}{unit}) over the last {} run(s){branch}{since}; each run passed its own check, together they are beyond the run-to-run noise (CUSUM {:.1} > {} noise units of {}{unit}); look at the commits in that range, or refresh the baseline if the change is intended",
        clean(&m.metric),
        m.statistic,
        crate::format::number(b),
        crate::format::number(d.level),
        d.segment_runs,
        d.cusum,
        drift::H_SIGMA,
        crate::format::number(d.sigma),
    )
}

/// Put drift findings into the check's report: a warning each, or, where
/// gate.toml made drift fail, a reason that raises the run to a regression
/// (exit 1). The reporters show warnings and reasons as they are.
pub(crate) fn apply_drift(report: &mut CheckReport, drift: &[DriftRow]) {
    for d in drift {
        if d.failed {
            report.raise(
                RunVerdict::Regression,
                format!("{} (gate.toml [history.drift] fail = true)", d.message),
            );
        } else {
            report.warn(d.message.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: i64, created: &str, verdict: &str, value: f64) -> RunRecord {
        RunRecord {
            id: Some(id),
            recorded_at: "2026-11-30T00:00:00Z".into(),
            kind: RunKind::Check,
            baseline: "b".into(),
            baseline_created: created.into(),
            baseline_runs: 3,
            commit: Some(format!("c{id:03}aaaaaaaaaaaaaaaa")),
            branch: Some("main".into()),
            tags: BTreeMap::new(),
            gpu_model: "H200".into(),
            environment: serde_json::Value::Null,
            verdict: verdict.into(),
            exit_code: 0,
            regressions: 0,
            top_rule: None,
            top_cause: None,
            gate_version: "0".into(),
            source: "t.jsonl".into(),
            metrics: vec![MetricRow {
                metric: "samples_per_s".into(),
                unit: "1/s".into(),
                direction: "higher_is_better".into(),
                statistic: "mean".into(),
                gated: true,
                baseline_value: Some(1000.0),
                baseline_sd: Some(5.0),
                value: Some(value),
                change_pct: Some((value - 1000.0) / 10.0),
                tolerance: Some(100.0),
                noise: Some(10.0),
                verdict: "pass".into(),
            }],
            drift: Vec::new(),
        }
    }

    #[test]
    fn a_slide_over_stored_runs_becomes_one_finding_naming_where_it_began() {
        // Runs 1..=4 healthy, then -1 % per run: stored newest first.
        let values = [
            1001.0, 999.0, 1000.5, 999.5, 990.0, 980.0, 970.0, 960.0, 950.0,
        ];
        let mut previous: Vec<RunRecord> = values
            .iter()
            .enumerate()
            .map(|(i, v)| run(i as i64 + 1, "v1", "pass", *v))
            .collect();
        previous.reverse();
        let current = run(10, "v1", "pass", 940.0);
        let found = find_drift(&current, &previous, &DriftConfig::default());
        assert_eq!(found.len(), 1, "{found:?}");
        let d = &found[0];
        assert!(
            d.message.contains("samples_per_s (mean) has slid"),
            "{}",
            d.message
        );
        assert!(d.message.contains("on branch 'main'"), "{}", d.message);
        // CUSUM dates the change at or just after the first slid run (run 5:
        // its -1 % is still inside the baseline's own uncertainty).
        let since = d.since_commit.as_deref().unwrap();
        assert!(
            since == "c005aaaaaaaa" || since == "c006aaaaaaaa",
            "{}",
            d.message
        );
        assert!(d.message.contains(&format!("starting at commit {since}")));
        assert!(!d.failed);
        // Failing is gate.toml's call.
        let fail = DriftConfig {
            fail: true,
            ..DriftConfig::default()
        };
        assert!(find_drift(&current, &previous, &fail)[0].failed);
    }

    #[test]
    fn runs_against_another_baseline_version_or_failed_runs_do_not_count() {
        let mut previous: Vec<RunRecord> = (1..=9)
            .map(|i| run(i, "old", "pass", 1000.0 - 10.0 * i as f64))
            .collect();
        previous.reverse();
        let current = run(10, "new", "pass", 900.0);
        assert!(find_drift(&current, &previous, &DriftConfig::default()).is_empty());
        let mut errored: Vec<RunRecord> = (1..=9)
            .map(|i| run(i, "v1", "error", 1000.0 - 10.0 * i as f64))
            .collect();
        errored.reverse();
        let current = run(10, "v1", "pass", 900.0);
        assert!(find_drift(&current, &errored, &DriftConfig::default()).is_empty());
        let off = DriftConfig {
            enabled: false,
            ..DriftConfig::default()
        };
        let mut slide: Vec<RunRecord> = (1..=9)
            .map(|i| run(i, "v1", "pass", 1000.0 - 10.0 * i as f64))
            .collect();
        slide.reverse();
        assert!(find_drift(&current, &slide, &off).is_empty());
        assert_eq!(
            find_drift(&current, &slide, &DriftConfig::default()).len(),
            1
        );
    }

    #[test]
    fn a_reverted_regression_in_the_window_does_not_hide_a_slide() {
        let mut values = vec![1001.0, 999.0, 1000.5, 999.5];
        values.extend([990.0, 980.0, 970.0, 960.0, 950.0]);
        let mut previous: Vec<RunRecord> = values
            .iter()
            .enumerate()
            .map(|(i, v)| run(i as i64 + 1, "v1", "pass", *v))
            .collect();
        // Run 3 regressed to 50 (a launch storm, reverted at once).
        previous[2].metrics[0].value = Some(50.0);
        previous[2].metrics[0].verdict = "regression".into();
        previous[2].verdict = "regression".into();
        previous.reverse();
        let current = run(10, "v1", "pass", 940.0);
        assert_eq!(
            find_drift(&current, &previous, &DriftConfig::default()).len(),
            1
        );
    }

    #[test]
    fn text_from_the_environment_is_cleaned() {
        assert_eq!(clean("feat/x\u{1b}[31m\n"), "feat/x\\u{1b}[31m\\n");
        assert_eq!(clean(&"b".repeat(200)).chars().count(), 80);
    }
}
