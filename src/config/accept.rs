//! `[accept]` of gate.toml: whether and how far a change may acknowledge
//! its own regressions (`accept` applies it), with its validation and the
//! percentage check it shares with accept files.

use serde::Deserialize;

/// `[accept]` of the target branch's gate.toml.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcceptPolicy {
    /// false: nothing can accept a regression in this repository.
    #[serde(default = "yes")]
    pub allowed: bool,
    /// The largest `max_change_pct` an accept file may give (percent).
    pub max_change_pct: Option<f64>,
    /// The label that acknowledges every gated regression of a check.
    pub label: Option<String>,
    /// How far a regression accepted by `label` may go (percent); required
    /// with `label`.
    pub label_max_change_pct: Option<f64>,
}

impl Default for AcceptPolicy {
    fn default() -> Self {
        AcceptPolicy {
            allowed: true,
            max_change_pct: None,
            label: None,
            label_max_change_pct: None,
        }
    }
}

impl AcceptPolicy {
    /// One line naming the bad setting, or Ok.
    pub fn validate(&self) -> Result<(), String> {
        for (key, v) in [
            ("max_change_pct", self.max_change_pct),
            ("label_max_change_pct", self.label_max_change_pct),
        ] {
            if let Some(v) = v {
                check_pct(v).map_err(|m| format!("[accept] {key}: {m}"))?;
            }
        }
        if let Some(l) = &self.label {
            if l.trim().is_empty() || l.contains(',') || l.chars().any(crate::escape::is_hostile) {
                return Err(format!(
                    "[accept] label {l:?}: give the label's name, without commas or control characters"
                ));
            }
            if self.label_max_change_pct.is_none() {
                return Err(
                    "[accept] label needs label_max_change_pct, the largest change the label accepts (percent), e.g. 10".into(),
                );
            }
        }
        Ok(())
    }
}

/// A percentage from 0 to 1000 (`[accept]`, accept files).
pub(crate) fn check_pct(v: f64) -> Result<(), String> {
    if v.is_finite() && (0.0..=1000.0).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "{v} is not a percentage; write 15 for 15 % (0 to 1000)"
        ))
    }
}

fn yes() -> bool {
    true
}
