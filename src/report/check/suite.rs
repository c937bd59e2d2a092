//! The suite's reporters (`gate check --suite`): one document of each kind
//! for every workload, each built from the workloads' own reports (the
//! check reporters beside this file) and the suite's verdict, the worst
//! exit code of its workloads (`exit_code::worst_exit_code`).

use super::Reporter;
use crate::exit_code::{self, EXIT_CODE_ORDER};
use crate::gate::CheckReport;

/// What one workload of a suite gave: its report, or the exit code and
/// message of why it could not be judged.
pub struct Outcome {
    pub name: String,
    pub baseline: String,
    pub result: Result<CheckReport, (i32, String)>,
}

impl Outcome {
    pub fn exit_code(&self) -> i32 {
        match &self.result {
            Ok(r) => r.exit_code(),
            Err((code, _)) => *code,
        }
    }

    pub fn verdict(&self) -> &'static str {
        match &self.result {
            Ok(r) => r.verdict().as_str(),
            Err((code, _)) if *code == exit_code::USAGE => "usage error",
            Err(_) => "error",
        }
    }

    /// The workloads judged, in the suite's order.
    pub fn judged(outcomes: &[Outcome]) -> impl Iterator<Item = &CheckReport> {
        outcomes.iter().filter_map(|o| o.result.as_ref().ok())
    }
}

/// The word of a suite's exit code.
pub(crate) fn verdict_word(code: i32) -> &'static str {
    match code {
        exit_code::PASS => "PASS",
        exit_code::REGRESSION => "REGRESSION",
        exit_code::USAGE => "USAGE ERROR",
        exit_code::INCONCLUSIVE => "INCONCLUSIVE",
        exit_code::BENCHMARK_FAILED => "BENCHMARK FAILED",
        _ => "ERROR",
    }
}

/// One OpenMetrics document: every judged workload's series, labelled
/// with its baseline.
pub(crate) fn render_openmetrics(outcomes: &[Outcome]) -> String {
    let ok: Vec<&CheckReport> = Outcome::judged(outcomes).collect();
    super::openmetrics::render_many(&ok)
}

/// One Bencher Metric Format document: every judged workload's benchmarks
/// (a later workload's benchmark of the same name replaces an earlier one's).
pub(crate) fn render_bmf(outcomes: &[Outcome]) -> String {
    let mut all = serde_json::Map::new();
    for r in Outcome::judged(outcomes) {
        all.extend(super::bmf::document(r));
    }
    serde_json::to_string_pretty(&all).expect("a JSON value always serializes") + "\n"
}

/// One check page for every workload (`--html`): the suite's verdict and
/// table, then each judged workload's section with its curves.
pub(crate) fn render_html(outcomes: &[Outcome], code: i32) -> String {
    let judged: Vec<super::html::Workload> = outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().ok())
        .map(|r| super::html::Workload {
            report: r,
            runs: super::html::series_for(r),
        })
        .collect();
    let failed: Vec<(String, i32, String)> = outcomes
        .iter()
        .filter_map(|o| {
            let (c, why) = o.result.as_ref().err()?;
            Some((o.name.clone(), *c, why.clone()))
        })
        .collect();
    let suite = super::html::Suite {
        exit_code: code,
        word: verdict_word(code),
        failed: &failed,
    };
    super::html::render_page(&judged, Some(&suite), super::html::HTML_BUDGET_BYTES)
}

/// `| workload | baseline | verdict | exit |` rows.
fn summary_rows(outcomes: &[Outcome]) -> Vec<[String; 4]> {
    outcomes
        .iter()
        .map(|o| {
            [
                o.name.clone(),
                o.baseline.clone(),
                o.verdict().to_string(),
                o.exit_code().to_string(),
            ]
        })
        .collect()
}

/// The terminal text: each workload's report under its heading, then the
/// table and the suite's verdict (`width`: the terminal's, None: unwrapped).
pub(crate) fn render_terminal(
    outcomes: &[Outcome],
    code: i32,
    color: bool,
    width: Option<usize>,
) -> String {
    use crate::escape::terminal;
    let mut out = String::new();
    for o in outcomes {
        out.push_str(&format!(
            "== workload {} (baseline {}) ==\n",
            terminal(&o.name),
            terminal(&o.baseline)
        ));
        match &o.result {
            Ok(r) => out.push_str(&super::terminal::Terminal { color, width }.render(r)),
            Err((c, m)) => out.push_str(&format!(
                "VERDICT: {} (exit {c}): {}\n",
                o.verdict().to_uppercase(),
                terminal(m)
            )),
        }
        out.push('\n');
    }
    let mut rows = vec![["workload", "baseline", "verdict", "exit"]
        .map(String::from)
        .to_vec()];
    rows.extend(
        summary_rows(outcomes)
            .iter()
            .map(|row| row.iter().map(|c| terminal(c)).collect()),
    );
    out.push_str(&crate::console::aligned(&rows));
    out.push_str(&format!(
        "SUITE VERDICT: {} (exit {code}; worst of {} workload(s))\n",
        verdict_word(code),
        outcomes.len()
    ));
    out
}

pub(crate) fn render_markdown(outcomes: &[Outcome], code: i32) -> String {
    use crate::escape::{markdown_code as mcode, markdown_text as text};
    let mut out = format!(
        "## gate suite: {} (exit {code}, worst of {} workloads)\n\n| workload | baseline | verdict | exit |\n|---|---|---|---:|\n",
        verdict_word(code),
        outcomes.len()
    );
    for row in summary_rows(outcomes) {
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} |\n",
            mcode(&row[0]),
            mcode(&row[1]),
            text(&row[2]),
            row[3]
        ));
    }
    out.push('\n');
    for o in outcomes {
        match &o.result {
            Ok(r) => out.push_str(&super::markdown::Markdown.render(r)),
            Err((c, m)) => out.push_str(&format!(
                "### gate: {} for workload `{}` (exit {c})\n\n{}\n",
                o.verdict().to_uppercase(),
                mcode(&o.name),
                text(m)
            )),
        }
        out.push('\n');
    }
    out
}

pub(crate) fn render_junit(outcomes: &[Outcome]) -> String {
    let docs: Vec<String> = outcomes
        .iter()
        .map(|o| match &o.result {
            Ok(r) => super::junit::Junit.render(r),
            Err((c, m)) => super::junit::render_error(
                &o.baseline,
                if *c == exit_code::USAGE {
                    "usage"
                } else {
                    "error"
                },
                m,
            ),
        })
        .collect();
    super::junit::combine(&docs)
}

/// The suite's JSON document (`suite_json`: typed, its schema generated).
pub(crate) fn render_json(outcomes: &[Outcome], code: i32) -> String {
    use super::suite_json::{SuiteDocument, SuiteWorkload, SUITE_SCHEMA_VERSION};
    let workloads = outcomes
        .iter()
        .map(|o| {
            let (report, error) = match &o.result {
                Ok(r) => (Some(super::json::value(r)), None),
                Err((_, m)) => (None, Some(m.clone())),
            };
            SuiteWorkload {
                name: o.name.clone(),
                baseline: o.baseline.clone(),
                exit_code: o.exit_code(),
                verdict: o.verdict().to_string(),
                report,
                error,
            }
        })
        .collect();
    let doc = SuiteDocument {
        suite_schema_version: SUITE_SCHEMA_VERSION,
        gate_version: crate::GATE_VERSION.to_string(),
        verdict: suite_verdict(code),
        exit_code: code,
        workloads,
    };
    serde_json::to_string_pretty(&doc).expect("a suite document always serializes") + "\n"
}

/// The suite's verdict of an exit code, as the JSON document says it.
fn suite_verdict(code: i32) -> super::suite_json::SuiteVerdict {
    use super::suite_json::SuiteVerdict as V;
    match code {
        exit_code::PASS => V::Pass,
        exit_code::REGRESSION => V::Regression,
        exit_code::USAGE => V::UsageError,
        exit_code::INCONCLUSIVE => V::Inconclusive,
        exit_code::BENCHMARK_FAILED => V::BenchmarkFailed,
        _ => V::Error,
    }
}

/// The suite's marker: the CI templates edit the comment that carries it.
pub(crate) const SUITE_MARKER: &str = "<!-- gate-pr-comment:suite -->";

/// One comment for the suite: the suite verdict and the worst workload's
/// top cause in its first three lines, then each workload's own comment
/// (its marker removed) in a folded section, the regressed ones open.
pub(crate) fn render_pr_comment(outcomes: &[Outcome], code: i32) -> String {
    use crate::escape::{markdown_code as mcode, markdown_text as text};
    let worst = outcomes.iter().min_by_key(|o| {
        EXIT_CODE_ORDER
            .iter()
            .position(|&x| x == o.exit_code())
            .unwrap_or(0)
    });
    let icon = match code {
        exit_code::PASS => ":white_check_mark:",
        exit_code::REGRESSION => ":x:",
        _ => ":warning:",
    };
    let failing = outcomes
        .iter()
        .filter(|o| o.exit_code() != exit_code::PASS)
        .count();
    let mut out = format!(
        "**gate suite: {icon} {}**: {failing} of {} workloads not passing (exit {code})\n",
        verdict_word(code),
        outcomes.len()
    );
    let cause = match worst.map(|o| &o.result) {
        Some(Ok(r)) if code != exit_code::PASS => r
            .diagnosis
            .first()
            .map(|d| format!("{}: {}", d.title, d.explanation))
            .or_else(|| r.reasons().first().cloned())
            .unwrap_or_default(),
        Some(Err((_, m))) => m.clone(),
        _ => "Every workload passed.".to_string(),
    };
    let who = worst
        .filter(|_| code != exit_code::PASS)
        .map(|o| format!("`{}`: ", mcode(&o.name)))
        .unwrap_or_default();
    out.push_str(&format!("Top cause: {who}{}\n", text(&cause)));
    let list: Vec<String> = outcomes
        .iter()
        .map(|o| format!("`{}` {}", mcode(&o.name), o.verdict()))
        .collect();
    // Cut to one line by `fit_sections` (with "…") for a large suite.
    out.push_str(&format!("Workloads: {}\n", list.join(", ")));
    let sections: Vec<super::pr_comment::Section> = outcomes.iter().map(section).collect();
    let changed = outcomes.iter().any(|o| match &o.result {
        Ok(r) => super::pr_comment::changed(r),
        Err(_) => true,
    });
    let tail = format!(
        "\n{SUITE_MARKER}\n{}",
        if changed {
            "<!-- gate-changed:yes -->\n"
        } else {
            "<!-- gate-changed:no -->\n"
        }
    );
    super::pr_comment::fit_sections(&out, &sections, &tail)
}

/// One workload's folded part of the suite comment: its own comment (its
/// markers removed), open when it is not passing; the short form keeps
/// the comment's first three lines (verdict, top cause, what moved).
fn section(o: &Outcome) -> super::pr_comment::Section {
    let body = match &o.result {
        Ok(r) => super::pr_comment::PrComment.render(r),
        Err((c, m)) => super::pr_comment::render_error(&o.baseline, *c, m),
    };
    let lines: Vec<&str> = body
        .lines()
        .filter(|l| !(l.starts_with("<!-- gate-") && l.ends_with("-->")))
        .collect();
    let failing = o.exit_code() != exit_code::PASS;
    let fold = |text: &str| {
        format!(
            "\n<details{}><summary>workload <code>{}</code>: {}</summary>\n\n{}\n</details>\n",
            if failing { " open" } else { "" },
            crate::escape::html(&o.name),
            o.verdict(),
            text.trim_end()
        )
    };
    let short: String = lines.iter().take(3).map(|l| format!("{l}\n")).collect();
    super::pr_comment::Section {
        name: o.name.clone(),
        full: fold(&lines.join("\n")),
        short: fold(&short),
        first: failing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(i: usize, r: &CheckReport) -> Outcome {
        Outcome {
            name: format!("w{i:03}"),
            baseline: format!("b{i:03}"),
            result: Ok(r.clone()),
        }
    }

    #[test]
    fn the_json_verdict_is_the_verdict_word() {
        for code in 0..=6 {
            assert_eq!(
                suite_verdict(code).as_str(),
                verdict_word(code).to_lowercase(),
                "exit {code}"
            );
        }
    }

    #[test]
    fn a_suite_comment_of_150_regressed_workloads_fits_whole_sections_only() {
        let r = super::super::tests_support::sample_report();
        for n in [1, 10, 150, 2000] {
            let outcomes: Vec<Outcome> = (0..n).map(|i| outcome(i, &r)).collect();
            let c = render_pr_comment(&outcomes, exit_code::REGRESSION);
            assert!(
                c.len() <= crate::limits::MAX_PR_COMMENT_BYTES,
                "{n}: {}",
                c.len()
            );
            assert_eq!(
                c.matches("<details").count(),
                c.matches("</details>").count()
            );
            let shown = c.matches("<summary>workload <code>").count();
            let cut: usize = c
                .lines()
                .find_map(|l| l.strip_prefix("... "))
                .and_then(|l| l.split(' ').next())
                .map_or(0, |k| k.parse().unwrap());
            assert_eq!(shown + cut, n, "{n}: every workload shown or counted");
            assert!(c.ends_with("<!-- gate-changed:yes -->\n"), "{n}");
            assert!(c.lines().all(|l| l.len() <= 2_100), "{n}: a line too long");
        }
    }
}
