//! The lead of a check page's section (issue 40.5): what a reviewer of a
//! red pipeline needs on the first screen (1280x800), right under the
//! verdict and before any table or warning: the regressed numbers
//! (baseline -> new, the change) and the first cause with its one-line
//! explanation, linked to the finding further down. The suite page shows
//! the lead of its first failing workload under the suite verdict.

use super::change_text;
use crate::escape::html as esc;
use crate::format::value_with_unit;
use crate::gate::{CheckReport, MetricResult};
use std::fmt::Write as _;

/// Regressed numbers named in the lead; the rest are counted.
const NUMBERS_SHOWN: usize = 3;
/// The first cause's explanation is cut after this many characters.
const CAUSE_CHARS: usize = 240;

/// The anchor of finding `k` of workload section `idx`.
pub(super) fn finding_id(idx: usize, k: usize) -> String {
    format!("f{idx}-{k}")
}

/// The gated metrics that failed the check, totals (over GPUs and nodes)
/// before one GPU's or node's rows.
fn regressed(r: &CheckReport) -> Vec<&MetricResult> {
    let mut failed: Vec<&MetricResult> = r
        .metrics
        .iter()
        .filter(|m| m.gated && m.fails(r.fail_on_improvement))
        .collect();
    failed.sort_by_key(|m| (m.gpu.is_some() || m.node.is_some()) as u8);
    failed
}

/// The first sentence of `text`, at most [`CAUSE_CHARS`] characters.
fn first_sentence(text: &str) -> String {
    let end = text.find(". ").map(|i| i + 1).unwrap_or(text.len());
    let s = &text[..end];
    if s.chars().count() > CAUSE_CHARS {
        let cut: String = s.chars().take(CAUSE_CHARS).collect();
        format!("{cut}…")
    } else {
        s.to_string()
    }
}

/// The lead of workload section `idx`, or nothing when the check has no
/// regressed number and no finding.
pub(super) fn lead(r: &CheckReport, idx: usize) -> String {
    let failed = regressed(r);
    let cause = r.diagnosis.first();
    if failed.is_empty() && cause.is_none() {
        return String::new();
    }
    let mut s = String::from("<div class=\"lead\">");
    if !failed.is_empty() {
        s.push_str("<p class=\"numbers\"><b>Regressed:</b> ");
        let named: Vec<String> = failed
            .iter()
            .take(NUMBERS_SHOWN)
            .map(|m| {
                format!(
                    "<span class=\"num\"><code>{}</code> ({}) {} &rarr; {} ({})</span>",
                    esc(&m.label()),
                    esc(m.statistic.as_str()),
                    esc(&value_with_unit(m.baseline, &m.unit)),
                    esc(&value_with_unit(m.new, &m.unit)),
                    esc(&change_text(m))
                )
            })
            .collect();
        s.push_str(&named.join("; "));
        if failed.len() > NUMBERS_SHOWN {
            let _ = write!(
                s,
                "; and {} more (table below)",
                failed.len() - NUMBERS_SHOWN
            );
        }
        s.push_str("</p>");
    }
    if let Some(f) = cause {
        let _ = write!(
            s,
            "<p class=\"cause\" id=\"cause{idx}\"><b>First cause:</b> <a href=\"#{}\">{}</a>{}</p>",
            finding_id(idx, 0),
            esc(&f.title),
            if f.explanation.is_empty() {
                String::new()
            } else {
                format!(": {}", esc(&first_sentence(&f.explanation)))
            }
        );
    } else {
        s.push_str("<p class=\"cause\"><b>First cause:</b> none found: no rule explains this change (the table and the charts below show what moved).</p>");
    }
    s.push_str("</div>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lead_names_the_regressed_numbers_and_the_first_cause() {
        let r = crate::report::check::tests_support::sample_report();
        let lead = lead(&r, 0);
        assert!(lead.contains("<b>Regressed:</b> <span class=\"num\"><code>sm_active_pct</code> (mean) 97 % &rarr; 45 %"), "{lead}");
        assert!(lead.contains("<b>First cause:</b> <a href=\"#f0-0\">Kernels too small</a>: SMs idle between &lt;tiny&gt; kernels"), "{lead}");
        // The totals come before one GPU's rows.
        let totals = lead.find("<code>sm_active_pct</code>").unwrap();
        assert!(lead[..totals].matches("<code>").count() == 0, "{lead}");
    }

    #[test]
    fn a_long_explanation_is_cut_to_its_first_sentence() {
        assert_eq!(first_sentence("One. Two."), "One.");
        let long = "x".repeat(400);
        assert_eq!(first_sentence(&long).chars().count(), CAUSE_CHARS + 1);
    }
}
