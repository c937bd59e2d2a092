//! GitHub Actions conventions: workflow-command escaping for `::error` and
//! `::warning` annotations, the 10-annotations-per-step cap, and the 1 MiB
//! cap on `$GITHUB_STEP_SUMMARY`. Pure text: `commands::github` reads the
//! environment and appends to the files, for a check and a suite alike.
//! Escaping: `crate::escape::github_data` / `github_property` (as
//! @actions/core `command.ts` escapeData / escapeProperty).

use crate::escape;
use crate::gate::{CheckReport, RunVerdict, Verdict};

/// GitHub shows at most 10 error (and 10 warning) annotations per step;
/// gate writes at most this many annotations in all, per step.
pub(crate) const MAX_ERROR_ANNOTATIONS: usize = 10;
/// `$GITHUB_STEP_SUMMARY` content above 1 MiB is rejected by the runner.
pub(crate) const STEP_SUMMARY_MAX_BYTES: usize = 1024 * 1024;

/// One annotation before escaping: `error` fails the look of a check
/// (a regression), `warning` flags what passed loudly (ACCEPTED).
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub warning: bool,
    pub title: String,
    pub message: String,
}

impl Item {
    pub fn error(title: String, message: String) -> Item {
        Item {
            warning: false,
            title,
            message,
        }
    }
}

fn line(item: &Item) -> String {
    format!(
        "::{} title={}::{}",
        if item.warning { "warning" } else { "error" },
        escape::github_property(&item.title),
        escape::github_data(&item.message)
    )
}

/// `::error title=...::message` lines for `(title, message)` pairs: at most
/// `MAX_ERROR_ANNOTATIONS`, the last one a roll-up when there are more.
pub fn error_annotations(items: &[(String, String)]) -> Vec<String> {
    let items: Vec<Item> = items
        .iter()
        .map(|(t, m)| Item::error(t.clone(), m.clone()))
        .collect();
    render(&items)
}

/// The workflow-command lines of `items`, errors first: at most
/// `MAX_ERROR_ANNOTATIONS`, the last one a roll-up naming the rest when
/// there are more (an error when any of the rest is one).
pub fn render(items: &[Item]) -> Vec<String> {
    let mut items = items.to_vec();
    items.sort_by_key(|i| i.warning);
    if items.len() <= MAX_ERROR_ANNOTATIONS {
        return items.iter().map(line).collect();
    }
    let shown = MAX_ERROR_ANNOTATIONS - 1;
    let mut out: Vec<String> = items[..shown].iter().map(line).collect();
    let rest = &items[shown..];
    let names: Vec<&str> = rest.iter().map(|i| i.title.as_str()).collect();
    let errors = rest.iter().any(|i| !i.warning);
    out.push(line(&Item {
        warning: !errors,
        title: format!(
            "gate: {} more {}",
            rest.len(),
            if errors { "regressions" } else { "annotations" }
        ),
        message: crate::report::check::capped(
            &format!(
                "Also regressed: {}. See the job summary or JUnit report.",
                names.join(", ")
            ),
            crate::limits::MAX_MESSAGE_BYTES,
        )
        .into_owned(),
    }));
    out
}

/// One check's annotation items: an error per regression (with the
/// diagnosis), a warning per accepted regression, or the run-level reasons
/// when the run itself failed. `prefix` names the workload in a suite.
pub fn items(r: &CheckReport, prefix: &str) -> Vec<Item> {
    // A disturbed run's moves are no evidence about the change: its
    // reason (naming the neighbour) is the annotation, not a regression.
    let disturbed = r.verdict() == RunVerdict::Disturbed;
    let mut items: Vec<Item> = r
        .metrics
        .iter()
        .filter(|_| !disturbed)
        .filter(|m| m.fails(r.fail_on_improvement) || m.verdict == Verdict::Accepted)
        .map(|m| Item {
            warning: m.verdict == Verdict::Accepted,
            title: format!("gate: {prefix}{} {}", m.shown_name(), m.verdict.as_str()),
            message: super::failure_text(r, m),
        })
        .collect();
    if items.is_empty() && r.verdict() != RunVerdict::Pass {
        items = r
            .reasons()
            .iter()
            .map(|reason| Item {
                warning: r.verdict() == RunVerdict::Accepted,
                title: format!("gate: {prefix}{}", r.verdict().as_str()),
                message: reason.clone(),
            })
            .collect();
    }
    items
}

/// `::error` annotations (`::warning` for what was accepted): one per
/// regression (with the diagnosis), or the run-level reasons when the run
/// itself failed.
pub fn annotations(r: &CheckReport) -> Vec<String> {
    render(&items(r, ""))
}

/// Cut `markdown` so that it fits in `max_bytes` (on a char boundary), with a
/// note saying where the full report is.
pub(crate) fn cap_summary(markdown: &str, max_bytes: usize) -> String {
    if markdown.len() <= max_bytes {
        return markdown.to_string();
    }
    let note = "\n\n_Summary truncated to fit GitHub's 1 MiB step-summary limit; see the Markdown/JSON report artifacts._\n";
    if max_bytes < note.len() {
        // Earlier steps filled the summary: writing even the note would push
        // the file over the limit, and GitHub would then drop all of it.
        return String::new();
    }
    let mut cut = max_bytes - note.len();
    while cut > 0 && !markdown.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{}", &markdown[..cut], note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotation_titles_and_messages_are_escaped() {
        let lines = error_annotations(&[("sm_active_pct[gpu:0]".into(), "fell 40%\nsee".into())]);
        assert_eq!(
            lines,
            vec!["::error title=sm_active_pct[gpu%3A0]::fell 40%25%0Asee".to_string()]
        );
    }

    #[test]
    fn at_most_ten_annotations_with_a_roll_up() {
        let items: Vec<(String, String)> = (0..25)
            .map(|i| (format!("m{i}"), "x".to_string()))
            .collect();
        let lines = error_annotations(&items);
        assert_eq!(lines.len(), MAX_ERROR_ANNOTATIONS);
        assert!(lines[9].contains("16 more regressions"), "{}", lines[9]);
        assert!(lines[9].contains("m24"));
    }

    #[test]
    fn percent_in_a_title_is_escaped_before_colons_and_commas() {
        let lines = error_annotations(&[("tensor_pct -40%".into(), "100% -> 60%".into())]);
        assert_eq!(lines[0], "::error title=tensor_pct -40%25::100%25 -> 60%25");
    }

    #[test]
    fn roll_up_starts_at_eleven_and_escapes_what_it_lists() {
        let items = |n: usize| -> Vec<(String, String)> {
            (0..n)
                .map(|i| (format!("m{i}[gpu:{i}]"), "x".to_string()))
                .collect()
        };
        let ten = error_annotations(&items(10));
        assert_eq!(ten.len(), 10);
        assert!(ten.iter().all(|l| !l.contains("more regressions")));
        let eleven = error_annotations(&items(11));
        assert_eq!(eleven.len(), 10);
        // 9 shown individually, the roll-up names the other 2.
        assert!(eleven[9].contains("Also regressed: m9[gpu:9], m10[gpu:10]."));
        // The roll-up title is a property: its ':' is escaped, its message's is not.
        assert!(
            eleven[9].starts_with("::error title=gate%3A 2 more"),
            "{}",
            eleven[9]
        );
    }

    #[test]
    fn a_nearly_full_summary_gets_nothing_rather_than_overflowing() {
        let md = "x".repeat(500);
        for room in [0, 10, 50] {
            let capped = cap_summary(&md, room);
            assert!(capped.len() <= room, "room {room}: wrote {}", capped.len());
        }
        let capped = cap_summary(&md, 300);
        assert!(
            capped.len() <= 300 && capped.starts_with("xxx") && capped.ends_with("artifacts._\n")
        );
    }

    #[test]
    fn summary_is_capped_on_a_char_boundary() {
        let big = "é".repeat(STEP_SUMMARY_MAX_BYTES); // 2 MiB of 2-byte chars
        let capped = cap_summary(&big, STEP_SUMMARY_MAX_BYTES);
        assert!(capped.len() <= STEP_SUMMARY_MAX_BYTES);
        assert!(capped.ends_with("artifacts._\n"));
        assert_eq!(cap_summary("small", 100), "small");
    }
}
