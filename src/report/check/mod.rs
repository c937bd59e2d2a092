//! Check reporters: one file per output format, all rendering the same
//! `gate::CheckReport` through the `Reporter` trait. A render is a function
//! of the report: the same report gives the same bytes (no clock, no host
//! lookups), so a replayed trace can be snapshot-tested. The HTML page's
//! series are the runs' (`RunInfo::series`, taken at derive): no
//! reporter reads a file.

pub mod bmf;
pub mod github;
pub mod html;
mod html_lead;
mod html_svg;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod openmetrics;
pub mod pr_comment;
pub mod suite;
pub mod suite_json;
pub mod terminal;
pub mod words;

use crate::format::{self, value_with_unit};
use crate::gate::CheckReport;

/// One output format.
pub(crate) trait Reporter {
    /// The whole document, ending with a newline.
    fn render(&self, report: &CheckReport) -> String;
}

/// Context (ungated) metrics moved at least this much relative to their
/// baseline are shown even inside their noise: they explain a regression.
pub(crate) const CONTEXT_MIN_CHANGE_PCT: f64 = 10.0;

/// Moved beyond its practical floor and its noise band (issue 30.2),
/// whatever its baseline value: a counter at 0 in the baseline has no
/// relative change, but 0 -> 47 % is evidence all the same. Without a noise
/// band, beyond the floor and (where a relative change exists) by at least
/// `CONTEXT_MIN_CHANGE_PCT`.
pub(crate) fn moved_beyond_noise(m: &crate::gate::MetricResult) -> bool {
    let Some(c) = m.change.map(f64::abs).filter(|c| c.is_finite()) else {
        return false;
    };
    let beyond_floor = m.tolerance.is_none_or(|t| c > t);
    match m.noise {
        Some(n) => beyond_floor && c > n,
        None => {
            beyond_floor
                && m.change_pct
                    .is_none_or(|p| p.abs() >= CONTEXT_MIN_CHANGE_PCT)
        }
    }
}

/// What every reporter shows of a check: the gated metrics, and the context
/// metrics that moved beyond their noise or by `CONTEXT_MIN_CHANGE_PCT`.
pub fn shown(m: &crate::gate::MetricResult) -> bool {
    m.gated
        || moved_beyond_noise(m)
        || m.change_pct
            .is_some_and(|p| p.abs() >= CONTEXT_MIN_CHANGE_PCT)
}

/// A run's wall time as people read it: "10.8 s (after 7.2 s start-up,
/// before 6.1 s idle teardown)": what the measured window left out on
/// either side, not judged.
pub(crate) fn wall_text(run: &crate::gate::RunInfo) -> String {
    let mut cut = Vec::new();
    if let Some(s) = run.startup_s {
        cut.push(format!("after {} start-up", value_with_unit(Some(s), "s")));
    }
    if let Some(s) = run.teardown_s {
        let what = if run.closed_by_until {
            "after the --until line"
        } else {
            "idle teardown"
        };
        cut.push(format!("before {} {what}", value_with_unit(Some(s), "s")));
    }
    let wall = value_with_unit(run.wall_time_s, "s");
    if cut.is_empty() {
        wall
    } else {
        format!("{wall} ({})", cut.join(", "))
    }
}

/// `+12.3 %` (relative), or where the baseline is 0 and a relative change
/// has no meaning the absolute one, said so: `+47 % from 0`.
pub(crate) fn change_text(m: &crate::gate::MetricResult) -> String {
    match (m.change_pct, m.change) {
        (Some(p), _) => format!("{} %", format::percent_change(p)),
        (None, Some(0.0)) => "0".into(),
        (None, Some(c)) => format!(
            "{}{} from 0",
            if c >= 0.0 { "+" } else { "" },
            value_with_unit(Some(c), &m.unit)
        ),
        _ => "".into(),
    }
}

/// `±9.7 %`: the practical floor in the metric's unit.
pub(crate) fn tolerance_text(m: &crate::gate::MetricResult) -> String {
    match m.tolerance {
        Some(t) if m.gated => format!("±{}", value_with_unit(Some(t), &m.unit)),
        _ => "".into(),
    }
}

pub(crate) fn noise_text(m: &crate::gate::MetricResult) -> String {
    match m.noise {
        Some(n) if m.gated => format!("±{}", value_with_unit(Some(n), &m.unit)),
        _ => "".into(),
    }
}

/// `text` cut to at most `max_bytes` (at a character boundary) with a note
/// saying how much was cut. Every free text of a report is capped, so each
/// output grows linearly with the metrics (`limits::MAX_CASE_TEXT_BYTES`).
pub fn capped(text: &str, max_bytes: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max_bytes {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!(
        "{}… [{} more bytes cut; the JSON report has it all]",
        &text[..end],
        text.len() - end
    ))
}

/// One line per failing metric or run-level reason, for annotations and
/// JUnit: what moved, by how much, against which tolerance, and why; then
/// the diagnosis, all within `limits::MAX_CASE_TEXT_BYTES` (the diagnosis
/// is the run's, and the `run verdict` test case carries it whole).
pub(crate) fn failure_text(report: &CheckReport, m: &crate::gate::MetricResult) -> String {
    const MAX: usize = crate::limits::MAX_CASE_TEXT_BYTES;
    let mut s = format!(
        "{} ({}): baseline {}, new {}, change {}, floor {}, noise band {}. {}",
        m.shown_name(),
        m.statistic.as_str(),
        value_with_unit(m.baseline, &m.unit),
        value_with_unit(m.new, &m.unit),
        change_text(m),
        tolerance_text(m),
        noise_text(m),
        words::metric_reason(m)
    );
    if !report.diagnosis_text.is_empty() && s.len() < MAX {
        s.push_str("\nDiagnosis:\n");
        for d in &report.diagnosis_text {
            if s.len() >= MAX {
                break;
            }
            s.push_str(&format!("- {}\n", capped(d, MAX - s.len())));
        }
    }
    capped(&s, MAX + 100).into_owned()
}

#[cfg(test)]
pub(crate) use crate::gate::tests_support;
