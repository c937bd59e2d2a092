//! Markdown reporter: for merge-request comments, `$GITHUB_STEP_SUMMARY`
//! and artifacts. Verdict first, then the gated table (first-class metrics
//! on top), the diagnosis, and the context metrics folded away.

use super::{change_text, noise_text, tolerance_text, Reporter};
use crate::escape::{markdown_code as code, markdown_text as text};
use crate::format::value_with_unit;
use crate::gate::{CheckReport, MetricResult, RunVerdict};

pub struct Markdown;

fn table(out: &mut String, rows: &[&MetricResult]) {
    out.push_str("| metric | stat | baseline | new | change | floor | noise | verdict |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---:|---|\n");
    for m in rows {
        let verdict = match m.verdict.as_str() {
            "regression" => "**regression**".to_string(),
            v => v.to_string(),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |\n",
            code(&m.shown_name()),
            m.statistic.as_str(),
            text(&value_with_unit(m.baseline, &m.unit)),
            text(&value_with_unit(m.new, &m.unit)),
            text(&change_text(m)),
            text(&tolerance_text(m)),
            text(&noise_text(m)),
            verdict
        ));
    }
}

impl Reporter for Markdown {
    fn render(&self, r: &CheckReport) -> String {
        let mut out = String::new();
        let mark = match r.verdict() {
            RunVerdict::Pass => "PASS",
            RunVerdict::Accepted => "ACCEPTED (regressions acknowledged by the change)",
            RunVerdict::Regression => "REGRESSION",
            RunVerdict::Inconclusive => "INCONCLUSIVE",
            RunVerdict::Unmeasured => "UNMEASURED",
            RunVerdict::Disturbed => "DISTURBED",
            RunVerdict::Invalid => "INVALID",
            RunVerdict::Error => "ERROR",
        };
        out.push_str(&format!(
            "### gate: {mark} against baseline `{}` (exit {})\n\n",
            code(&r.baseline.name),
            r.exit_code()
        ));
        if let Some(ab) = &r.ab {
            for line in super::words::ab_lines(ab) {
                out.push_str(&format!("{}  \n", text(&line)));
            }
            out.push('\n');
        }
        for reason in r.reasons() {
            out.push_str(&format!("- {}\n", text(reason)));
        }
        for w in r.warnings() {
            out.push_str(&format!("- warning: {}\n", text(w)));
        }
        if !r.reasons().is_empty() || !r.warnings().is_empty() {
            out.push('\n');
        }
        let b = &r.baseline;
        out.push_str(&format!(
            "Baseline `{}`: {} run(s) on {}, captured {}{}.  \n",
            code(&b.source),
            b.runs,
            text(&crate::format::gpus_text(&b.gpu_model, b.gpu_count)),
            text(&b.created),
            b.commit
                .as_ref()
                .map(|c| format!(" at commit `{}`", code(c)))
                .unwrap_or_default()
        ));
        for run in &r.runs {
            out.push_str(&format!(
                "{}Run `{}` (`{}`): {} steady samples ({} valid), wall {}, exit {}{}.  \n",
                run.node.map(|n| format!("Node {n}: ")).unwrap_or_default(),
                code(&run.source),
                if run.command.is_empty() {
                    "attached to a PID".to_string()
                } else {
                    code(&run.command)
                },
                run.steady_samples,
                run.valid_samples,
                super::wall_text(run),
                run.exit_code
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "n/a".into()),
                if run.truncated { ", **truncated**" } else { "" }
            ));
        }
        out.push('\n');
        let gated: Vec<&MetricResult> = r.metrics.iter().filter(|m| m.gated).collect();
        if gated.is_empty() {
            out.push_str("_No gated metric could be compared._\n\n");
        } else {
            table(&mut out, &gated);
            out.push('\n');
        }
        if let Some(s) = crate::gate::detectable::statement(&r.metrics) {
            out.push_str(&format!(
                "Detectable change (95 % confidence, {:.0} % power): {}\n\n",
                crate::gate::detectable::POWER * 100.0,
                text(&s)
            ));
        }
        if !r.diagnosis.is_empty() {
            out.push_str("#### Diagnosis\n\n");
            for (i, d) in r.diagnosis.iter().enumerate() {
                out.push_str(&crate::report::finding::markdown(d, i + 1));
            }
        }
        let regressions: Vec<&MetricResult> = r.regressions().collect();
        if !regressions.is_empty() {
            out.push_str("#### Why\n\n");
            for m in regressions {
                out.push_str(&format!(
                    "- `{}`: {}\n",
                    code(&m.shown_name()),
                    text(&super::words::metric_reason(m))
                ));
            }
            out.push('\n');
        }
        // Context metrics that moved are evidence: in the open; the rest
        // folded away.
        let (moved, rest): (Vec<&MetricResult>, Vec<&MetricResult>) = r
            .metrics
            .iter()
            .filter(|m| !m.gated)
            .partition(|m| super::shown(m));
        if !moved.is_empty() {
            out.push_str(&format!(
                "#### Context that moved ({} metric{}, not gated)\n\n",
                moved.len(),
                if moved.len() == 1 { "" } else { "s" }
            ));
            table(&mut out, &moved);
            out.push('\n');
        }
        if !rest.is_empty() {
            out.push_str(&format!(
                "<details><summary>Context: {} more metrics reported, not gated, within their noise</summary>\n\n",
                rest.len()
            ));
            table(&mut out, &rest);
            out.push_str("\n</details>\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_table_and_diagnosis() {
        let r = crate::report::check::tests_support::sample_report();
        let md = Markdown.render(&r);
        assert!(md.starts_with("### gate: REGRESSION against baseline `demo` (exit 1)"));
        let wall = md.find("`wall_time_s`").unwrap();
        let sm = md.find("`sm_active_pct`").unwrap();
        assert!(wall < sm, "first-class metrics first");
        assert!(md.contains("#### Diagnosis"));
        assert!(md.contains("| **regression** |"));
        assert!(!md.contains("a|b"), "pipes escaped");
    }
}
