//! `gate history` in the terminal and as JSON: the runs of a baseline,
//! branch or metric, newest first, with their verdicts, regressions, top
//! cause and drift findings. Pure: renders what the store returned.
//!
//! Every string from the database (branch, commit, tags, rule titles) went
//! through the environment or a user's file once: it is cleaned of control
//! characters before reaching a terminal (`record::clean`), and JSON
//! escapes it by construction.

use super::record::{clean, clean_text};
use super::{RunKind, RunRecord};
use crate::format::number as fmt_num;
use crate::gate::Verdict;
use crate::metrics::Direction;
use serde::Serialize;

/// Version of the `gate history --format json` document.
pub(crate) const JSON_SCHEMA_VERSION: u32 = 1;

/// What was asked, echoed in the output.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Filter {
    pub baseline: Option<String>,
    pub branch: Option<String>,
    pub metric: Option<String>,
    pub regressions_only: bool,
    /// None: every run.
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Listing {
    pub schema_version: u32,
    /// Where the runs came from (no password).
    pub database: String,
    pub filter: Filter,
    /// Newest first.
    pub runs: Vec<RunRecord>,
}

pub(crate) fn render_json(l: &Listing) -> String {
    let mut s = serde_json::to_string_pretty(l).unwrap_or_else(|e| {
        format!("{{\"error\": \"cannot serialise the history listing: {e}\"}}")
    });
    s.push('\n');
    s
}

fn short(c: &Option<String>) -> String {
    c.as_deref()
        .map(|c| clean(&c.chars().take(12).collect::<String>()))
        .unwrap_or_else(|| "-".into())
}

fn opt(s: &Option<String>) -> String {
    s.as_deref().map(clean).unwrap_or_else(|| "-".into())
}

/// Left-aligned table with a header row; columns as wide as their widest cell.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut s = String::from("  ");
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = width[i]));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    for r in rows {
        out.push_str(&line(r.clone()));
    }
    out
}

fn scope(f: &Filter) -> String {
    let mut parts = Vec::new();
    if let Some(b) = &f.baseline {
        parts.push(format!("baseline '{}'", clean(b)));
    }
    if let Some(b) = &f.branch {
        parts.push(format!("branch '{}'", clean(b)));
    }
    if let Some(m) = &f.metric {
        parts.push(format!("metric '{}'", clean(m)));
    }
    if parts.is_empty() {
        "all baselines".into()
    } else {
        parts.join(", ")
    }
}

fn cause(r: &RunRecord) -> String {
    match (&r.top_cause, &r.top_rule) {
        (Some(c), Some(rule)) => format!("{} ({})", clean(c), clean(rule)),
        (None, Some(rule)) => clean(rule),
        _ => "-".into(),
    }
}

/// The terminal text of a listing.
pub(crate) fn render_text(l: &Listing) -> String {
    let f = &l.filter;
    let what = if f.regressions_only {
        "regressions"
    } else {
        "runs"
    };
    let mut out = format!(
        "History of {} ({}): {} {what}{}, newest first\n",
        scope(f),
        clean(&l.database),
        l.runs.len(),
        match f.limit {
            Some(n) if l.runs.len() >= n => format!(" (the last {n}; --limit 0 for all)"),
            _ => String::new(),
        }
    );
    if l.runs.is_empty() {
        out.push_str("  (none recorded yet)\n");
        return out;
    }
    out.push_str(&match &f.metric {
        Some(metric) => metric_table(l, metric),
        None => runs_table(l),
    });
    out.push_str(&notes(l));
    out
}

/// `--metric M`: one row per run with M's baseline, value, change, verdict.
fn metric_table(l: &Listing, metric: &str) -> String {
    let rows: Vec<Vec<String>> = l
        .runs
        .iter()
        .map(|r| {
            let m = r.metrics.iter().find(|m| m.metric == metric);
            let unit = m.map(|m| m.unit.as_str()).unwrap_or("");
            let mut cells = run_cells(r);
            cells.extend([
                m.and_then(|m| m.baseline_value)
                    .map(|v| crate::format::value_with_unit(Some(v), unit))
                    .unwrap_or_else(|| "n/a".into()),
                m.and_then(|m| m.value)
                    .map(|v| crate::format::value_with_unit(Some(v), unit))
                    .unwrap_or_else(|| "n/a".into()),
                m.and_then(|m| m.change_pct)
                    .map(|p| format!("{p:+.1} %"))
                    .unwrap_or_default(),
                m.map(verdict_word).unwrap_or_else(|| "not recorded".into()),
            ]);
            cells
        })
        .collect();
    let headers = [
        &RUN_HEADERS[..],
        &["baseline", "value", "change", "verdict"],
    ]
    .concat();
    table(&headers, &rows)
}

/// A metric row's verdict in words: an ungated row is context (the
/// benchmark's declared number decided, or the metric is not gated), not
/// a verdict.
fn verdict_word(m: &super::MetricRow) -> String {
    if m.gated || m.verdict != Verdict::Info {
        clean(m.verdict.as_str())
    } else {
        "context (not gated)".into()
    }
}

/// Context metrics of a run that moved at least this much (percent) are
/// named under the runs table.
const CONTEXT_MOVE_PCT: f64 = 10.0;

/// The columns that say which run a row is, first in every table.
const RUN_HEADERS: [&str; 6] = ["id", "recorded", "kind", "baseline", "branch", "commit"];

fn run_cells(r: &RunRecord) -> Vec<String> {
    vec![
        r.id.map(|i| i.to_string()).unwrap_or_default(),
        clean(&r.recorded_at),
        r.kind.as_str().into(),
        clean(&r.baseline),
        opt(&r.branch),
        short(&r.commit),
    ]
}

/// One row per run: verdict, regression count, top cause.
fn runs_table(l: &Listing) -> String {
    let rows: Vec<Vec<String>> = l
        .runs
        .iter()
        .map(|r| {
            let mut cells = run_cells(r);
            cells.extend([
                clean(r.verdict.as_str()),
                if r.kind == RunKind::Capture {
                    "-".into()
                } else {
                    r.regressions.to_string()
                },
                cause(r),
            ]);
            cells
        })
        .collect();
    let headers = [&RUN_HEADERS[..], &["verdict", "regressions", "top cause"]].concat();
    table(&headers, &rows)
}

/// What regressed, and drift, below the table: one line each (a blank
/// line first), or nothing.
fn notes(l: &Listing) -> String {
    let f = &l.filter;
    let mut notes = Vec::new();
    for r in &l.runs {
        let id = r.id.map(|i| i.to_string()).unwrap_or_default();
        let regressed: Vec<String> = r
            .metrics
            .iter()
            .filter(|m| m.verdict == Verdict::Regression)
            .map(|m| {
                format!(
                    "{} {}",
                    clean(&m.metric),
                    m.change_pct
                        .map(|p| format!("{p:+.1} %"))
                        .unwrap_or_else(|| m.value.map(fmt_num).unwrap_or_default())
                )
            })
            .collect();
        if !regressed.is_empty() && f.metric.is_none() {
            notes.push(format!(
                "  run {id}: regressed {}; top cause: {}\n",
                regressed.join(", "),
                cause(r)
            ));
        }
        let mut context: Vec<(&str, f64)> = r
            .metrics
            .iter()
            .filter(|m| !m.gated && m.direction != Direction::Neutral && !m.metric.contains('['))
            .filter_map(|m| Some((m.metric.as_str(), m.change_pct?)))
            .filter(|(_, p)| p.abs() >= CONTEXT_MOVE_PCT)
            .collect();
        if !context.is_empty() && f.metric.is_none() && r.kind == RunKind::Check {
            context.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()).then(a.0.cmp(b.0)));
            let moves: Vec<String> = context
                .iter()
                .take(3)
                .map(|(m, p)| format!("{} {p:+.1} %", clean(m)))
                .collect();
            notes.push(format!(
                "  run {id}: context (not gated) moved {}{}\n",
                moves.join(", "),
                if context.len() > 3 {
                    format!(" and {} more", context.len() - 3)
                } else {
                    String::new()
                }
            ));
        }
        for d in &r.drift {
            notes.push(format!(
                "  run {id}: {}{}\n",
                clean_text(&d.message),
                if d.failed { " [failed the run]" } else { "" }
            ));
        }
    }
    if notes.is_empty() {
        return String::new();
    }
    std::iter::once("\n".to_string()).chain(notes).collect()
}
