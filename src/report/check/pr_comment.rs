//! The pull/merge request comment (`gate check --pr-comment FILE`): short,
//! and the first three lines say it all, because that is what a reviewer
//! reads in a notification:
//!
//! 1. the verdict and how many gated metrics regressed or changed;
//! 2. the top cause: the first diagnosis, else the run-level reason;
//! 3. the metrics that moved most, with their change.
//!
//! The full gated table follows, folded. The comment stays within
//! `limits::MAX_PR_COMMENT_BYTES` by construction (`fit`: the table is cut
//! first, with a line that says how many metrics are left out). Two hidden
//! lines end it, whatever is cut: the
//! marker `<!-- gate-pr-comment:BASELINE -->` by which the CI templates find
//! and edit their one comment on each push, and `<!-- gate-changed:yes|no -->`:
//! a new comment is posted only when something regressed or changed, an
//! existing one is always updated (so a fixed regression does not leave a
//! stale red comment behind).

use super::{change_text, Reporter};
use crate::escape::{markdown_code as code, markdown_text as text};
use crate::gate::{CheckReport, MetricResult, RunVerdict, Verdict};

pub(crate) struct PrComment;

/// Most metrics named on line 3; the rest are counted.
const NAMED_ON_LINE_3: usize = 3;

/// The marker the CI templates search for: `[A-Za-z0-9._-]{1,100}`, as
/// baseline names are (a name that failed validation is reduced to that).
pub fn marker(baseline: &str) -> String {
    let name: String = baseline
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    let name = if name.is_empty() {
        "_".to_string()
    } else {
        name
    };
    format!("<!-- gate-pr-comment:{name} -->")
}

/// The comment when gate could not judge at all (bad flag, missing
/// baseline, benchmark that could not start): always worth posting, and it
/// replaces an earlier verdict on the same baseline.
pub(crate) fn render_error(baseline: &str, exit_code: i32, message: &str) -> String {
    let message = super::capped(message, crate::limits::MAX_MESSAGE_BYTES);
    fit(format!(
        "**gate: :warning: ERROR** for baseline `{}`: nothing was judged (exit {exit_code})\n\
         Top cause: {}\n\
         {}\n\n{}\n<!-- gate-changed:yes -->\n",
        code(baseline),
        text(&message),
        match exit_code {
            crate::exit_code::INFRA =>
                "Measurement or infrastructure problem: re-running on another runner may help.",
            crate::exit_code::BENCHMARK_FAILED =>
                "The benchmark itself failed: fix it; re-running will not help.",
            _ => "Input or configuration problem: fix it; re-running will not help.",
        },
        marker(baseline)
    ))
}

/// Longest line of the comment (a table row, the "Top cause" line).
const MAX_LINE_BYTES: usize = 2_000;

/// `line` (already Markdown) cut to `MAX_LINE_BYTES`, never inside an
/// entity (`&lt;`) or after a lone backslash, code spans closed.
fn cut_line(line: &str) -> String {
    if line.len() <= MAX_LINE_BYTES {
        return line.to_string();
    }
    let mut end = MAX_LINE_BYTES - 8;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    let mut head = &line[..end];
    if let Some(amp) = head.rfind('&') {
        if !head[amp..].contains(';') {
            head = &head[..amp];
        }
    }
    let mut out = head.trim_end_matches('\\').to_string();
    if out.matches('`').count() % 2 == 1 {
        out.push('`');
    }
    out.push_str(" …");
    out
}

/// The comment within `limits::MAX_PR_COMMENT_BYTES` by construction
/// (GitHub takes 65,536 characters; the GitHub template cuts at 60,000
/// bytes): long lines are cut, then the metric table, with a line saying
/// how many metrics are left out; the hidden markers by which the CI
/// templates find and edit the comment always stay, last.
fn fit(comment: String) -> String {
    const MAX: usize = crate::limits::MAX_PR_COMMENT_BYTES;
    if comment.len() <= MAX && comment.lines().all(|l| l.len() <= MAX_LINE_BYTES) {
        return comment;
    }
    let lines: Vec<&str> = comment.lines().collect();
    let tail_start = lines
        .iter()
        .rposition(|l| !l.starts_with("<!-- gate-"))
        .map_or(0, |i| i + 1);
    let (body, tail) = lines.split_at(tail_start);
    let tail: String = tail.iter().map(|l| format!("{l}\n")).collect();
    // Room for the cut note and a closing </details>.
    let room = MAX.saturating_sub(tail.len() + 200);
    let mut out = String::new();
    let mut open_details = false;
    for (i, line) in body.iter().enumerate() {
        let line = cut_line(line);
        if out.len() + line.len() + 1 > room {
            let rest = &body[i..];
            let rows = rest.iter().filter(|l| l.starts_with("| `")).count();
            if out.lines().last().is_some_and(|l| l.starts_with('|')) {
                out.push('\n');
            }
            if rows > 0 {
                out.push_str(&format!(
                    "... {rows} more metrics, see the JUnit/JSON artifact\n"
                ));
            } else {
                out.push_str("... cut to fit the comment limit, see the JUnit/JSON artifact\n");
            }
            if open_details {
                out.push_str("\n</details>\n");
            }
            out.push('\n');
            out.push_str(&tail);
            return out;
        }
        if line.starts_with("<details") {
            open_details = true;
        } else if line.starts_with("</details>") {
            open_details = false;
        }
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&tail);
    out
}

/// One folded part of a composed comment (a suite's workload): its whole
/// text, a short form (its first lines) used when the whole ones do not
/// fit, its name for the note that counts what was cut, and whether it is
/// kept before the others when room runs out (a failing workload).
pub(crate) struct Section {
    pub name: String,
    pub full: String,
    pub short: String,
    pub first: bool,
}

/// `head`, the sections in order and `tail` (the hidden markers) within
/// `limits::MAX_PR_COMMENT_BYTES` by construction: whole sections when
/// they all fit, else their short forms, failing ones first, and a line
/// naming how many (and which) sections were left out. A section is added
/// whole or not at all, so no `<details>` is ever left open.
pub(crate) fn fit_sections(head: &str, sections: &[Section], tail: &str) -> String {
    const MAX: usize = crate::limits::MAX_PR_COMMENT_BYTES;
    let head: String = head.lines().map(|l| cut_line(l) + "\n").collect();
    let whole: usize = sections.iter().map(|s| s.full.len()).sum();
    if head.len() + whole + tail.len() <= MAX {
        let body: String = sections.iter().map(|s| s.full.as_str()).collect();
        return format!("{head}{body}{tail}");
    }
    // Room for the note (its list of names is capped to one line).
    let room = MAX.saturating_sub(head.len() + tail.len() + MAX_LINE_BYTES + 64);
    let mut kept = vec![false; sections.len()];
    let mut used = 0;
    let order = (0..sections.len())
        .filter(|&i| sections[i].first)
        .chain((0..sections.len()).filter(|&i| !sections[i].first));
    for i in order {
        let len = sections[i].short.len();
        if used + len <= room {
            kept[i] = true;
            used += len;
        }
    }
    let mut out = head;
    for (s, _) in sections.iter().zip(&kept).filter(|(_, k)| **k) {
        out.push_str(&s.short);
    }
    let cut: Vec<&str> = sections
        .iter()
        .zip(&kept)
        .filter(|(_, k)| !**k)
        .map(|(s, _)| s.name.as_str())
        .collect();
    out.push_str(
        "\n_Cut to fit the comment limit: each workload is shortened to its first lines; see the JUnit/JSON artifact for the full reports._\n",
    );
    if !cut.is_empty() {
        out.push_str(&cut_line(&format!(
            "... {} more workload(s) not shown: {}",
            cut.len(),
            cut.iter()
                .map(|n| format!("`{}`", code(n)))
                .collect::<Vec<_>>()
                .join(", ")
        )));
        out.push('\n');
    }
    out.push('\n');
    out.push_str(tail);
    out
}

/// Gated metrics that moved beyond their threshold, worst first:
/// regressions, then inconclusive, then improvements; by size of change.
fn moved(r: &CheckReport) -> Vec<&MetricResult> {
    let rank = |v: Verdict| match v {
        Verdict::Regression | Verdict::Accepted => 0,
        Verdict::Inconclusive => 1,
        Verdict::Improvement => 2,
        _ => 3,
    };
    let mut m: Vec<&MetricResult> = r
        .metrics
        .iter()
        .filter(|m| m.gated && rank(m.verdict) < 3)
        .collect();
    m.sort_by(|a, b| {
        rank(a.verdict).cmp(&rank(b.verdict)).then(
            b.change_pct
                .unwrap_or(0.0)
                .abs()
                .total_cmp(&a.change_pct.unwrap_or(0.0).abs()),
        )
    });
    m
}

/// Most context metrics named in the comment; the rest are counted.
const CONTEXT_NAMED: usize = 8;

/// The context (ungated) metrics that moved beyond their noise or by
/// `CONTEXT_MIN_CHANGE_PCT`, in the open: they are the evidence a reviewer
/// checks the diagnosis against (a counter at 0 in the baseline included).
fn context_moved(r: &CheckReport) -> String {
    let moved: Vec<&MetricResult> = r
        .metrics
        .iter()
        .filter(|m| !m.gated && super::shown(m))
        .collect();
    if moved.is_empty() {
        return String::new();
    }
    let named: Vec<String> = moved
        .iter()
        .take(CONTEXT_NAMED)
        .map(|m| format!("`{}` {}", code(&m.shown_name()), text(&change_text(m))))
        .collect();
    let more = moved.len().saturating_sub(CONTEXT_NAMED);
    format!(
        "\nContext that moved (not gated): {}{}\n",
        named.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}

/// Whether a comment is worth posting: the run did not pass cleanly, or a
/// gated metric moved beyond its floor and its noise (improvements
/// included). An inconclusive metric is not a change: gate cannot tell it
/// from noise.
pub fn changed(r: &CheckReport) -> bool {
    r.verdict() != RunVerdict::Pass
        || moved(r)
            .iter()
            .any(|m| matches!(m.verdict, Verdict::Regression | Verdict::Improvement))
}

/// The gated metrics' recent past (`--history`): a sparkline and the
/// numbers per metric, this run last in bold, and the drift findings
/// quoted so they are not missed.
fn trend_section(t: &crate::gate::Trend) -> String {
    let on = t
        .branch
        .as_ref()
        .map(|b| format!(" on `{}`", code(b)))
        .unwrap_or_default();
    let mut out = format!(
        "\n**Trend{on}** ({} earlier run{}, oldest first, this run last):\n\n| metric | trend | values |\n|---|---|---|\n",
        t.runs,
        if t.runs == 1 { "" } else { "s" }
    );
    for m in &t.metrics {
        let n = m.values.len();
        let values: Vec<String> = m
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let s = v.map(crate::format::number).unwrap_or_else(|| "n/a".into());
                if i + 1 == n {
                    format!("**{s}**")
                } else {
                    s
                }
            })
            .collect();
        out.push_str(&format!(
            "| `{}` | `{}` | {} {} |\n",
            code(&m.metric),
            m.sparkline,
            values.join(" · "),
            text(&m.unit)
        ));
    }
    for d in &t.drift {
        out.push_str(&format!(
            "\n> :chart_with_downwards_trend: **drift{}**: {}\n",
            if d.failed { ", fails the run" } else { "" },
            text(&d.message)
        ));
    }
    out
}

impl Reporter for PrComment {
    fn render(&self, r: &CheckReport) -> String {
        let moved = moved(r);
        let regressed = moved
            .iter()
            .filter(|m| m.verdict == Verdict::Regression)
            .count();
        let accepted = moved
            .iter()
            .filter(|m| m.verdict == Verdict::Accepted)
            .count();
        let (icon, word) = match r.verdict() {
            RunVerdict::Pass => (":white_check_mark:", "PASS"),
            RunVerdict::Accepted => (":warning:", "ACCEPTED regression"),
            RunVerdict::Regression => (":x:", "REGRESSION"),
            RunVerdict::Inconclusive => (":grey_question:", "INCONCLUSIVE"),
            RunVerdict::Unmeasured => (":warning:", "UNMEASURED"),
            RunVerdict::Disturbed => (":warning:", "DISTURBED"),
            RunVerdict::Invalid => (":warning:", "INVALID"),
            RunVerdict::Error => (":warning:", "ERROR"),
        };
        let mut counts = Vec::new();
        if regressed > 0 {
            counts.push(format!("{regressed} regressed"));
        }
        if accepted > 0 {
            counts.push(format!("{accepted} accepted"));
        }
        if moved.len() > regressed + accepted {
            counts.push(format!("{} changed", moved.len() - regressed - accepted));
        }
        let counts = if counts.is_empty() {
            "no gated metric moved".to_string()
        } else {
            counts.join(", ")
        };
        let mut out = format!(
            "**gate: {icon} {word}** against baseline `{}`: {counts} (exit {})\n",
            code(&r.baseline.name),
            r.exit_code()
        );
        // Line 2: the top cause.
        let cause = match (r.diagnosis.first(), r.reasons().first()) {
            (_, Some(reason)) if r.verdict() == RunVerdict::Disturbed => reason.clone(),
            (Some(d), _) if r.verdict() != RunVerdict::Pass || !moved.is_empty() => {
                format!("{}: {}", d.title, d.explanation)
            }
            (_, Some(reason)) if r.verdict() != RunVerdict::Pass => reason.clone(),
            _ if moved.is_empty() => {
                "Every gated metric is within its threshold and the noise band.".to_string()
            }
            _ => "No diagnosis rule matched the change.".to_string(),
        };
        let cause = super::capped(&cause, crate::limits::MAX_MESSAGE_BYTES);
        out.push_str(&format!("Top cause: {}\n", text(&cause)));
        // Line 3: what moved most.
        if moved.is_empty() {
            out.push_str("Nothing to review.\n");
        } else {
            let named: Vec<String> = moved
                .iter()
                .take(NAMED_ON_LINE_3)
                .map(|m| {
                    format!(
                        "`{}` {} {} ({})",
                        code(&m.shown_name()),
                        m.statistic.as_str(),
                        text(&change_text(m)),
                        m.verdict.as_str()
                    )
                })
                .collect();
            let more = moved.len().saturating_sub(NAMED_ON_LINE_3);
            out.push_str(&format!(
                "Moved: {}{}\n",
                named.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        // Acknowledged regressions, never folded away: who accepted what, why.
        for m in r.metrics.iter().filter(|m| m.verdict == Verdict::Accepted) {
            if let Some(a) = &m.accepted {
                out.push_str(&format!(
                    "\n> :warning: **ACCEPTED regression** `{}` {}, up to {} % acknowledged by {}: {}\n",
                    code(&m.shown_name()),
                    text(&change_text(m)),
                    crate::format::number(a.max_change_pct),
                    text(&a.by),
                    text(&a.reason)
                ));
            }
        }
        // What acted on the run from outside, and what the baseline cannot
        // see: never folded away (issue 38).
        for d in &r.disturbance {
            out.push_str(&format!(
                "\n> :warning: **DISTURBED** {}\n",
                text(&super::capped(&d.text(), crate::limits::MAX_MESSAGE_BYTES))
            ));
        }
        if let Some(w) =
            crate::gate::detectable::blind_warning(&r.baseline.name, &r.metrics, |_| None)
        {
            out.push_str(&format!(
                "\n> :warning: **Cannot see small changes**: {}\n",
                text(&w)
            ));
        }
        out.push_str(&context_moved(r));
        if let Some(t) = &r.trend {
            out.push_str(&trend_section(t));
        }
        let gated: Vec<&MetricResult> = r.metrics.iter().filter(|m| m.gated).collect();
        if !gated.is_empty() {
            out.push_str("\n<details><summary>Gated metrics</summary>\n\n");
            out.push_str("| metric | stat | change | verdict |\n|---|---|---:|---|\n");
            for m in gated {
                out.push_str(&format!(
                    "| `{}` | {} | {} | {} |\n",
                    code(&m.shown_name()),
                    m.statistic.as_str(),
                    text(&change_text(m)),
                    m.verdict.as_str()
                ));
            }
            out.push_str("\n</details>\n");
        }
        out.push('\n');
        out.push_str(&marker(&r.baseline.name));
        out.push('\n');
        out.push_str(if changed(r) {
            "<!-- gate-changed:yes -->\n"
        } else {
            "<!-- gate-changed:no -->\n"
        });
        fit(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_and_top_cause_come_first_and_markers_last() {
        let r = crate::report::check::tests_support::sample_report();
        let text = PrComment.render(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("**gate: :x: REGRESSION** against baseline `demo`"),
            "{text}"
        );
        assert!(lines[0].contains("regressed"), "{text}");
        assert!(lines[1].starts_with("Top cause: "), "{text}");
        assert!(lines[2].starts_with("Moved: `"), "{text}");
        assert_eq!(lines[lines.len() - 2], "<!-- gate-pr-comment:demo -->");
        assert_eq!(lines[lines.len() - 1], "<!-- gate-changed:yes -->");
        assert!(changed(&r));
    }

    #[test]
    fn a_huge_comment_is_cut_to_the_host_limit_and_keeps_its_markers() {
        let mut text = format!("**gate: :x: REGRESSION** x\nTop cause: {}\nMoved: y\n\n<details><summary>Gated metrics</summary>\n\n| metric | stat | change | verdict |\n|---|---|---:|---|\n", "&lt;".repeat(5000));
        for i in 0..5000 {
            text.push_str(&format!("| `m{i:04}` | last | -50 % | regression |\n"));
        }
        text.push_str("\n</details>\n\n<!-- gate-pr-comment:demo -->\n<!-- gate-changed:yes -->\n");
        let cut = fit(text);
        assert!(
            cut.len() <= crate::limits::MAX_PR_COMMENT_BYTES,
            "{}",
            cut.len()
        );
        assert!(cut.ends_with(
            "\n</details>\n\n<!-- gate-pr-comment:demo -->\n<!-- gate-changed:yes -->\n"
        ));
        let note = cut.lines().find(|l| l.starts_with("... ")).unwrap();
        let kept = cut.lines().filter(|l| l.starts_with("| `m")).count();
        assert_eq!(
            note,
            format!(
                "... {} more metrics, see the JUnit/JSON artifact",
                5000 - kept
            )
        );
        let cause = cut.lines().nth(1).unwrap();
        assert!(
            cause.len() <= MAX_LINE_BYTES && cause.ends_with("&lt; …"),
            "{}",
            &cause[cause.len() - 20..]
        );
    }

    #[test]
    fn an_error_comment_names_the_cause_and_keeps_a_valid_marker() {
        let t = render_error("bad name/..", 2, "baseline 'x' not found\nat ref");
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].contains("ERROR"), "{t}");
        assert!(
            lines[1].starts_with("Top cause: baseline 'x' not found at ref"),
            "{t}"
        );
        assert!(t.contains("<!-- gate-pr-comment:bad_name_.. -->\n"), "{t}");
        assert!(t.ends_with("<!-- gate-changed:yes -->\n"));
    }

    #[test]
    fn a_clean_pass_says_so_and_is_not_worth_a_new_comment() {
        let mut r = crate::report::check::tests_support::sample_report();
        r.set_verdict_for_test(RunVerdict::Pass, 0, Vec::new());
        for m in r.metrics.iter_mut() {
            if m.gated {
                m.verdict = Verdict::Pass;
            }
        }
        let text = PrComment.render(&r);
        assert!(
            text.starts_with("**gate: :white_check_mark: PASS**"),
            "{text}"
        );
        assert!(text.contains("no gated metric moved"), "{text}");
        assert!(text.ends_with("<!-- gate-changed:no -->\n"), "{text}");
        assert!(!changed(&r));
    }
}
