//! Load-time checks of a baseline's numbers, beyond its schema: every
//! statistic finite and within `limits::MAX_ABS_VALUE`, spreads and
//! intervals not negative, catalogue metrics not negative, percentiles in
//! order, and the name matching the file. Each error names the file, the
//! line and column of the value, and the fix.
//!
//! Why: the judge trusts these numbers. A `nan` turned a metric into
//! "missing" without failing, `ci95 = -1000` made a drop "inconclusive",
//! and `1e308` judged a 99.9 % drop a pass.

use super::{Baseline, BaselineMetric, RunStat};
use crate::error::GateError;
use crate::limits::MAX_ABS_VALUE;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// One step of a path into the TOML document.
#[derive(Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// Byte span of the value at `path` in the parsed document, or of the
/// deepest table on the way that exists.
fn span_at(doc: &Spanned<DeTable>, path: &[Step]) -> std::ops::Range<usize> {
    let mut span = doc.span();
    let mut value: Option<&DeValue> = None;
    let mut table: Option<&DeTable> = Some(doc.get_ref());
    for step in path {
        let next = match (*step, table, value) {
            (Step::Key(k), Some(t), _) => {
                t.iter().find(|(key, _)| key.get_ref() == k).map(|(_, v)| v)
            }
            (Step::Index(i), _, Some(DeValue::Array(a))) => a.get(i),
            _ => None,
        };
        let Some(next) = next else { break };
        span = next.span();
        value = Some(next.get_ref());
        table = match next.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => None,
        };
    }
    span
}

/// `line L, column C` of the value at `path` in `text`.
fn locate(text: &str, path: &[Step]) -> String {
    let start = DeTable::parse(text)
        .map(|doc| span_at(&doc, path).start)
        .unwrap_or(0);
    let (l, c) = crate::validate::line_col(text, start);
    format!("line {l}, column {c}")
}

/// Check the numbers of `b`, parsed from `text` (named `origin`).
pub fn check(b: &Baseline, text: &str, origin: &str) -> Result<(), GateError> {
    check_values(b).map_err(|(path, msg)| {
        let steps: Vec<Step> = path
            .iter()
            .map(|p| match p.strip_prefix('#').and_then(|i| i.parse().ok()) {
                Some(i) => Step::Index(i),
                None => Step::Key(p),
            })
            .collect();
        GateError::bad_file(
            origin,
            format!(
                "{}: {msg}; fix the value or re-capture the baseline with 'gate capture --baseline NAME --replace'",
                locate(text, &steps)
            ),
        )
    })
}

/// A baseline loaded as `STEM.toml` must be named `STEM`: a copied or
/// renamed file would otherwise report (and store history) under the
/// wrong name.
pub(crate) fn check_name(
    b: &Baseline,
    text: &str,
    origin: &str,
    stem: &str,
) -> Result<(), GateError> {
    if b.name == stem {
        return Ok(());
    }
    Err(GateError::bad_file(
        origin,
        format!(
            "{}: name '{}' differs from the file name '{stem}.toml'; set name = \"{stem}\" if the file was copied on purpose, or re-capture it",
            locate(text, &[Step::Key("name")]),
            b.name.escape_debug()
        ),
    ))
}

/// A value's path (keys; `#N` for the N-th array item) and what is wrong.
type Problem = (Vec<String>, String);

fn check_values(b: &Baseline) -> Result<(), Problem> {
    for (id, m) in &b.metrics {
        check_metric(m, id, &["metrics".to_string(), id.clone()])?;
    }
    for (gpu, g) in &b.gpus {
        for (id, m) in &g.metrics {
            check_metric(
                m,
                id,
                &["gpus".into(), gpu.clone(), "metrics".into(), id.clone()],
            )?;
        }
    }
    for (name, v) in &b.features {
        finite(*v, &format!("features.\"{name}\""))
            .map_err(|msg| (vec!["features".into(), name.clone()], msg))?;
    }
    for (bench, span) in &b.spans {
        for (id, m) in &span.metrics {
            let at = ["spans".into(), bench.clone(), "metrics".into(), id.clone()];
            check_metric(m, id, &at)?;
        }
        for (name, v) in &span.features {
            finite(*v, &format!("spans.\"{bench}\".features.\"{name}\"")).map_err(|msg| {
                (
                    vec![
                        "spans".into(),
                        bench.clone(),
                        "features".into(),
                        name.clone(),
                    ],
                    msg,
                )
            })?;
        }
    }
    Ok(())
}

fn finite(v: f64, what: &str) -> Result<(), String> {
    if v.is_finite() && v.abs() <= MAX_ABS_VALUE {
        Ok(())
    } else {
        Err(format!(
            "{what} = {v} is not a measurement (finite, at most {MAX_ABS_VALUE:e} in magnitude)"
        ))
    }
}

fn check_metric(m: &BaselineMetric, id: &str, at: &[String]) -> Result<(), Problem> {
    let here = |field: &str| {
        let mut p = at.to_vec();
        p.push(field.to_string());
        p
    };
    // Metrics of the catalogue (utilizations, clocks, power, bytes, time)
    // are never negative; user metrics may be.
    let non_negative = crate::metrics::find(id).is_some();
    if m.unit.chars().count() > 32 || m.unit.chars().any(crate::escape::is_hostile) {
        return Err((
            here("unit"),
            format!(
                "[{}] unit {:?} must be a short label (at most 32 characters, no control characters)",
                at.join("."),
                m.unit
            ),
        ));
    }
    let stats = [
        ("mean", m.mean),
        ("stdev", m.stdev),
        ("min", m.min),
        ("p5", m.p5),
        ("p50", m.p50),
        ("p95", m.p95),
        ("p99", m.p99),
        ("max", m.max),
    ];
    check_summary(
        &stats,
        "stdev",
        non_negative,
        &format!("[{}]", at.join(".")),
    )
    .map_err(|(field, msg)| (here(field), msg))?;
    for (k, r) in m.runs.iter().enumerate() {
        check_run(r, non_negative, &format!("[{}] runs[{k}]", at.join("."))).map_err(
            |(field, msg)| {
                let mut p = here("runs");
                p.push(format!("#{k}"));
                p.push(field.to_string());
                (p, msg)
            },
        )?;
    }
    Ok(())
}

fn check_run(r: &RunStat, non_negative: bool, what: &str) -> Result<(), (&'static str, String)> {
    let mut fields = vec![
        ("value", r.value),
        ("mean", r.mean),
        ("p5", r.p5),
        ("p50", r.p50),
        ("p95", r.p95),
        ("p99", r.p99),
        ("min", r.min),
        ("max", r.max),
    ];
    if let Some(c) = r.ci95 {
        fields.push(("ci95", c));
    }
    check_summary(&fields, "ci95", non_negative, what)
}

/// The statistics a metric and each of its runs carry: every one finite,
/// none negative where the metric cannot be (and never the spread,
/// `spread`), percentiles in order around the mean.
fn check_summary(
    fields: &[(&'static str, f64)],
    spread: &str,
    non_negative: bool,
    what: &str,
) -> Result<(), (&'static str, String)> {
    for &(field, v) in fields {
        let name = format!("{what} {field}");
        finite(v, &name).map_err(|msg| (field, msg))?;
        if v < 0.0 && (non_negative || field == spread) {
            return Err((field, format!("{name} = {v} is negative")));
        }
    }
    let get = |name: &str| {
        fields
            .iter()
            .find(|f| f.0 == name)
            .map_or(f64::NAN, |f| f.1)
    };
    ordered(
        &["min", "p5", "p50", "p95", "p99", "max"].map(|n| (n, get(n))),
        get("mean"),
        what,
    )
}

/// Percentiles must not decrease, and the mean must lie within min..max
/// (a relative slack of 1e-6 allows for rounding).
fn ordered(
    seq: &[(&'static str, f64)],
    mean: f64,
    what: &str,
) -> Result<(), (&'static str, String)> {
    let slack = |a: f64, b: f64| 1e-6 * a.abs().max(b.abs());
    for w in seq.windows(2) {
        let ((na, a), (nb, b)) = (w[0], w[1]);
        if b < a - slack(a, b) {
            return Err((
                nb,
                format!("{what} {nb} = {b} is below {na} = {a}; percentiles must not decrease"),
            ));
        }
    }
    let (min, max) = (seq[0].1, seq[seq.len() - 1].1);
    if mean < min - slack(mean, min) || mean > max + slack(mean, max) {
        return Err((
            "mean",
            format!("{what} mean = {mean} is outside min..max ({min}..{max})"),
        ));
    }
    Ok(())
}
