//! Acknowledged regressions: a change that slows a benchmark on purpose
//! (fp32 for accuracy, a larger model) says so in the change itself, and a
//! matching regression becomes ACCEPTED (exit 0, reported in every output
//! and recorded in history) instead of blocking the merge.
//!
//! Two ways to acknowledge, both bounded by the TARGET branch's `gate.toml`
//! (`[accept]`, read with `--baseline-ref` like the thresholds), which the
//! change cannot loosen:
//!
//! - an accept file from the change (`--accept gate-accept.toml`, the PR
//!   head's working tree, reviewed like code): `[[accept]]` entries naming
//!   the baseline, the metric ids, the largest change accepted in the bad
//!   direction (percent of the baseline), a reason, and optionally an expiry
//!   date and the commit it was written for;
//! - a reviewer's label (`--accept-labels` gets the pull/merge request's
//!   labels from the CI templates): when the target's `[accept] label` is
//!   among them, every gated regression of the check up to the target's
//!   `label_max_change_pct` is accepted.
//!
//! A regression beyond the accepted maximum stays a regression; an entry
//! that expired, names another commit, or matches nothing is reported, so
//! a stale acknowledgement never hides.

use crate::config::accept::{check_pct, AcceptPolicy};
use crate::error::GateError;
use crate::metrics::Direction;
use serde::Deserialize;

/// The accept file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcceptFile {
    #[serde(default)]
    pub accept: Vec<AcceptEntry>,
}

/// One `[[accept]]` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcceptEntry {
    pub baseline: String,
    /// Metric ids (`samples_per_s`, `sm_active_pct`); each covers every GPU
    /// and node of that metric.
    pub metrics: Vec<String>,
    /// The largest change in the bad direction accepted, percent of the
    /// baseline value.
    pub max_change_pct: f64,
    pub reason: String,
    /// `YYYY-MM-DD`: the entry applies up to and including this day (UTC).
    pub expires: Option<String>,
    /// The commit (or a prefix of at least 7 characters) the entry was
    /// written for: it applies only when that commit is checked.
    pub commit: Option<String>,
}

/// Parse and validate an accept file; `origin` names it in messages.
pub fn parse_file(text: &str, origin: &str) -> Result<AcceptFile, GateError> {
    let file: AcceptFile = toml::from_str(text).map_err(|e| {
        crate::validate::toml_error(
            origin,
            text,
            &e,
            "see 'Accepting an intended regression' in docs/gating.md",
        )
    })?;
    for (i, e) in file.accept.iter().enumerate() {
        let line = entry_line(text, i)
            .map(|l| format!("line {l}: "))
            .unwrap_or_default();
        let bad = |m: String| {
            GateError::bad_file(origin, format!("{line}[[accept]] entry {}: {m}", i + 1))
        };
        if e.reason.trim().is_empty() {
            return Err(bad(
                "reason is empty; say why the slowdown is intended (it is shown in every report)"
                    .into(),
            ));
        }
        if e.reason.chars().count() > 500 {
            return Err(bad(
                "reason is longer than 500 characters; link to the discussion instead".into(),
            ));
        }
        if e.metrics.is_empty() {
            return Err(bad(
                "metrics is empty; name the metric ids it accepts, e.g. [\"samples_per_s\"]".into(),
            ));
        }
        check_pct(e.max_change_pct).map_err(|m| bad(format!("max_change_pct: {m}")))?;
        if let Some(d) = &e.expires {
            if !is_date(d) {
                return Err(bad(format!(
                    "expires {d:?} is not a date of the calendar; write YYYY-MM-DD, e.g. \"2026-12-31\""
                )));
            }
        }
        if let Some(c) = &e.commit {
            if c.len() < 7 || !c.chars().all(|ch| ch.is_ascii_hexdigit()) {
                return Err(bad(format!(
                    "commit {c:?}: give the commit's hash (at least 7 hex digits)"
                )));
            }
        }
    }
    Ok(file)
}

/// `YYYY-MM-DD` naming a day that exists ("2026-13-45" and "2026-02-30"
/// do not): humantime's RFC 3339 parser checks month lengths and leap
/// years.
fn is_date(d: &str) -> bool {
    let b = d.as_bytes();
    d.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && d.chars()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        && humantime::parse_rfc3339(&format!("{d}T00:00:00Z")).is_ok()
}

/// The 1-based line of the `i`-th `[[accept]]` header of `text`.
fn entry_line(text: &str, i: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("[[accept]]"))
        .nth(i)
        .map(|(n, _)| n + 1)
}

/// Entries naming a baseline that is not in `dir` (a misspelt one used to
/// be silently ignored): a name one typo away from a baseline there is
/// (`gpt-h20` for `gpt-h200`) is exit 2 naming the entry, its line and the
/// baseline meant; any other is a warning of every check (one accept file
/// may serve jobs with other baseline folders). Returns the warnings.
pub(crate) fn check_baselines(
    file: &AcceptFile,
    text: &str,
    origin: &str,
    dir: &std::path::Path,
) -> Result<Vec<String>, GateError> {
    let available = crate::baseline::store::available(dir);
    let mut warnings = Vec::new();
    for (i, e) in file.accept.iter().enumerate() {
        if available.contains(&e.baseline) {
            continue;
        }
        let line = entry_line(text, i)
            .map(|l| format!("line {l}: "))
            .unwrap_or_default();
        let what = format!(
            "{line}[[accept]] entry {}: baseline '{}' is not in '{}/'",
            i + 1,
            e.baseline,
            dir.display()
        );
        let close = available
            .iter()
            .map(|a| (crate::spelling::levenshtein(&e.baseline, a), a))
            .filter(|(d, _)| *d <= (e.baseline.chars().count() / 4).max(2))
            .min();
        match close {
            Some((_, a)) => {
                return Err(GateError::bad_file(
                    origin,
                    format!("{what}; did you mean '{a}'? (a misspelt baseline accepts nothing)"),
                ))
            }
            None => warnings.push(format!(
                "{origin}: {what}: it accepts nothing in this check (available: {})",
                if available.is_empty() {
                    "none".to_string()
                } else {
                    available.join(", ")
                }
            )),
        }
    }
    Ok(warnings)
}

/// Everything that can acknowledge a regression in one check.
#[derive(Debug, Clone, Default)]
pub struct Acceptances {
    /// The target branch's `[accept]` (default: allowed, no label).
    pub policy: AcceptPolicy,
    /// Where the policy came from, for messages.
    pub(crate) policy_origin: String,
    /// The accept file and its path, if one was given.
    pub file: Option<(AcceptFile, String)>,
    /// The pull/merge request's labels.
    pub labels: Vec<String>,
    /// The commit being checked, when known.
    pub commit: Option<String>,
    /// Today, `YYYY-MM-DD` (UTC), for `expires`.
    pub today: String,
    /// What `check_baselines` warned about the accept file.
    pub notes: Vec<String>,
}

impl Acceptances {
    /// Whether anything was offered at all (a file or a matching label).
    pub(crate) fn offered(&self) -> bool {
        self.file
            .as_ref()
            .is_some_and(|(f, _)| !f.accept.is_empty())
            || self.label_present()
    }

    fn label_present(&self) -> bool {
        self.policy
            .label
            .as_ref()
            .is_some_and(|l| self.labels.iter().any(|x| x.trim() == l))
    }
}

/// The acknowledgement that covers one regression.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Acceptance {
    /// `gate-accept.toml entry 1` or `label 'perf-accepted'`.
    pub by: String,
    pub reason: String,
    pub max_change_pct: f64,
}

/// What acceptance did to one check, for the report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Non-fatal remarks (an entry expired, matched nothing, went beyond
    /// the maximum, or acceptance is forbidden).
    pub warnings: Vec<String>,
}

/// How far a change went in the bad direction, in percent of the
/// baseline (None when it has no relative change).
pub(crate) fn bad_pct(direction: Direction, change_pct: Option<f64>) -> Option<f64> {
    let c = change_pct?;
    match direction {
        Direction::HigherIsBetter => Some(-c),
        Direction::LowerIsBetter => Some(c),
        Direction::Neutral => None,
    }
}

/// Decide, for one regressed metric of baseline `baseline`, which
/// acknowledgement covers it, if any. Entries that name it but do not apply
/// (expired, another commit, beyond the maximum) say why in `why_not`.
pub(crate) fn covering(
    acc: &Acceptances,
    baseline: &str,
    metric_id: &str,
    label: &str,
    bad: Option<f64>,
    why_not: &mut Vec<String>,
) -> Option<Acceptance> {
    if !acc.policy.allowed {
        return None;
    }
    if let Some((file, path)) = &acc.file {
        for (i, e) in file.accept.iter().enumerate() {
            if e.baseline != baseline || !e.metrics.iter().any(|m| m == metric_id) {
                continue;
            }
            let by = format!("{path} entry {}", i + 1);
            if let Some(d) = &e.expires {
                if d.as_str() < acc.today.as_str() {
                    why_not.push(format!("{by} expired on {d}: {label} not accepted"));
                    continue;
                }
            }
            if let Some(c) = &e.commit {
                if !acc
                    .commit
                    .as_deref()
                    // Hex digits in either case name one commit.
                    .is_some_and(|h| h.to_ascii_lowercase().starts_with(&c.to_ascii_lowercase()))
                {
                    why_not.push(format!(
                        "{by} was written for commit {c}, this check is of {}: {label} not accepted",
                        acc.commit.as_deref().unwrap_or("an unknown commit")
                    ));
                    continue;
                }
            }
            let max = match acc.policy.max_change_pct {
                Some(cap) if cap < e.max_change_pct => {
                    why_not.push(format!(
                        "{by} accepts up to {} %, the target branch's [accept] max_change_pct caps it at {cap} %",
                        e.max_change_pct
                    ));
                    cap
                }
                _ => e.max_change_pct,
            };
            match bad {
                Some(b) if b <= max => {
                    return Some(Acceptance {
                        by,
                        reason: e.reason.clone(),
                        max_change_pct: max,
                    })
                }
                Some(b) => why_not.push(format!(
                    "{label} moved {b:.1} % the bad way, beyond the {max} % {by} accepts: still a regression"
                )),
                None => why_not.push(format!(
                    "{label} has no relative change (baseline 0): {by} cannot bound it, still a regression"
                )),
            }
        }
    }
    if acc.label_present() {
        let name = acc.policy.label.clone().unwrap_or_default();
        let max = acc.policy.label_max_change_pct.unwrap_or(0.0);
        let by = format!("label '{name}'");
        match bad {
            Some(b) if b <= max => {
                return Some(Acceptance {
                    by,
                    reason: format!("a reviewer set the label '{name}' on the change"),
                    max_change_pct: max,
                })
            }
            Some(b) => why_not.push(format!(
                "{label} moved {b:.1} % the bad way, beyond the {max} % the {by} accepts ([accept] label_max_change_pct): still a regression"
            )),
            None => why_not.push(format!(
                "{label} has no relative change (baseline 0): the {by} cannot bound it, still a regression"
            )),
        }
    }
    None
}

/// Warnings about what was offered but cannot apply at all: acceptance
/// forbidden by the target, entries for this baseline that named no
/// regressed metric. An entry that matched a regression but did not apply
/// (expired, another commit, exceeded) is told so in `why_not` (from
/// `covering`), and only there: one message per entry, never two that
/// contradict each other.
pub fn unused(
    acc: &Acceptances,
    baseline: &str,
    used: &[String],
    why_not: &[String],
) -> Vec<String> {
    let mut out = acc.notes.clone();
    if !acc.policy.allowed && acc.offered() {
        out.push(format!(
            "an acceptance was offered, but the target branch forbids accepting regressions ([accept] allowed = false in {}): regressions stay regressions",
            acc.policy_origin
        ));
        return out;
    }
    if let Some((file, path)) = &acc.file {
        for (i, e) in file.accept.iter().enumerate() {
            let by = format!("{path} entry {}", i + 1);
            let explained = why_not.iter().any(|w| w.contains(&format!("{by} ")));
            if e.baseline == baseline && !used.contains(&by) && !explained {
                // A mistyped id accepts nothing: say which id it likely meant.
                let typos: String = e
                    .metrics
                    .iter()
                    .map(|m| crate::metrics::did_you_mean(m, []))
                    .collect();
                out.push(format!(
                    "{by} ({}{typos}) accepted no regression of this check: remove it once the baseline is re-captured",
                    e.metrics.join(", ")
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(file: &str) -> Acceptances {
        Acceptances {
            file: Some((
                parse_file(file, "gate-accept.toml").unwrap(),
                "gate-accept.toml".into(),
            )),
            today: "2026-12-01".into(),
            commit: Some("0123456789abcdef".into()),
            policy_origin: "origin/main:gate.toml".into(),
            ..Acceptances::default()
        }
    }

    const ENTRY: &str = "[[accept]]\nbaseline = \"gpt-h200\"\nmetrics = [\"samples_per_s\"]\nmax_change_pct = 15\nreason = \"fp32 attention for accuracy (#123)\"\n";

    #[test]
    fn within_the_maximum_is_accepted_beyond_it_is_not() {
        let a = acc(ENTRY);
        let mut why = Vec::new();
        let got = covering(
            &a,
            "gpt-h200",
            "samples_per_s",
            "samples_per_s",
            Some(12.6),
            &mut why,
        )
        .unwrap();
        assert_eq!(got.by, "gate-accept.toml entry 1");
        assert!(why.is_empty());
        assert!(covering(
            &a,
            "gpt-h200",
            "samples_per_s",
            "samples_per_s",
            Some(15.1),
            &mut why
        )
        .is_none());
        assert!(why[0].contains("beyond the 15 %"), "{why:?}");
        assert!(covering(&a, "cnn-h200", "samples_per_s", "x", Some(1.0), &mut why).is_none());
        assert!(covering(&a, "gpt-h200", "tensor_pct", "x", Some(1.0), &mut why).is_none());
    }

    #[test]
    fn expiry_commit_and_the_targets_cap_and_veto() {
        let mut why = Vec::new();
        let a = acc(&format!("{ENTRY}expires = \"2026-11-30\"\n"));
        assert!(covering(&a, "gpt-h200", "samples_per_s", "s", Some(1.0), &mut why).is_none());
        assert!(why[0].contains("expired on 2026-11-30"), "{why:?}");
        let a = acc(&format!("{ENTRY}expires = \"2026-12-01\"\n"));
        assert!(
            covering(&a, "gpt-h200", "samples_per_s", "s", Some(1.0), &mut why).is_some(),
            "the day itself counts"
        );
        let a = acc(&format!("{ENTRY}commit = \"fedcba9\"\n"));
        assert!(covering(&a, "gpt-h200", "samples_per_s", "s", Some(1.0), &mut why).is_none());
        let a = acc(&format!("{ENTRY}commit = \"0123456\"\n"));
        assert!(covering(&a, "gpt-h200", "samples_per_s", "s", Some(1.0), &mut why).is_some());
        let mut a = acc(ENTRY);
        a.policy.max_change_pct = Some(5.0);
        assert!(covering(&a, "gpt-h200", "samples_per_s", "s", Some(12.6), &mut why).is_none());
        assert!(covering(&a, "gpt-h200", "samples_per_s", "s", Some(4.0), &mut why).is_some());
        a.policy.allowed = false;
        assert!(covering(&a, "gpt-h200", "samples_per_s", "s", Some(1.0), &mut why).is_none());
        assert!(unused(&a, "gpt-h200", &[], &[])[0].contains("allowed = false"));
    }

    #[test]
    fn an_entry_that_matched_but_did_not_apply_is_told_once() {
        // Issue 30.5: an expired or exceeded entry was also told "accepted
        // no regression of this check: remove it".
        for extra in ["expires = \"2000-01-01\"\n", ""] {
            let a = acc(&format!("{ENTRY}{extra}"));
            let mut why = Vec::new();
            // Expired, or beyond its maximum.
            assert!(covering(&a, "gpt-h200", "samples_per_s", "s", Some(99.0), &mut why).is_none());
            assert_eq!(why.len(), 1, "{why:?}");
            let unused = unused(&a, "gpt-h200", &[], &why);
            assert!(unused.is_empty(), "contradicts {why:?}: {unused:?}");
        }
        // An entry that named no regressed metric is still told so, with
        // the id it likely meant when it names no known one.
        let a = acc(ENTRY);
        let told = unused(&a, "gpt-h200", &[], &[]);
        assert!(told[0].contains("accepted no regression"), "{told:?}");
        let a = acc(&ENTRY.replace("samples_per_s", "tensor_pc"));
        let told = unused(&a, "gpt-h200", &[], &[]);
        assert!(told[0].contains("did you mean 'tensor_pct'?"), "{told:?}");
    }

    #[test]
    fn a_label_accepts_up_to_the_targets_bound() {
        let mut a = Acceptances {
            labels: vec!["bug".into(), "perf-accepted".into()],
            today: "2026-12-01".into(),
            ..Acceptances::default()
        };
        let mut why = Vec::new();
        assert!(
            covering(&a, "b", "m", "m", Some(1.0), &mut why).is_none(),
            "no label configured"
        );
        a.policy.label = Some("perf-accepted".into());
        a.policy.label_max_change_pct = Some(10.0);
        let got = covering(&a, "b", "m", "m", Some(9.0), &mut why).unwrap();
        assert_eq!(got.by, "label 'perf-accepted'");
        assert!(covering(&a, "b", "m", "m", Some(11.0), &mut why).is_none());
    }

    #[test]
    fn bad_files_name_the_entry_and_the_fix() {
        for (text, want) in [
            ("[[accept]]\nbaseline = \"b\"\nmetrics = [\"m\"]\nmax_change_pct = 5\nreason = \" \"\n", "entry 1: reason is empty"),
            ("[[accept]]\nbaseline = \"b\"\nmetrics = []\nmax_change_pct = 5\nreason = \"r\"\n", "metrics is empty"),
            ("[[accept]]\nbaseline = \"b\"\nmetrics = [\"m\"]\nmax_change_pct = -5\nreason = \"r\"\n", "not a percentage"),
            ("[[accept]]\nbaseline = \"b\"\nmetrics = [\"m\"]\nmax_change_pct = 5\nreason = \"r\"\nexpires = \"next week\"\n", "write YYYY-MM-DD"),
            ("[[accept]]\nbaseline = \"b\"\nmetrics = [\"m\"]\nmax_change_pct = 5\nreason = \"r\"\nmetric = \"x\"\n", "line 6"),
        ] {
            let e = parse_file(text, "gate-accept.toml").unwrap_err().to_string();
            assert!(e.starts_with("gate-accept.toml: ") && e.contains(want), "{want}: {e}");
        }
    }
}
