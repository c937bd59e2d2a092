//! Rules engine: names the likely root cause of a run's behaviour, or of
//! what changed between a baseline and a new run.
//!
//! INTERFACE (stable; the implementation fills it in):
//! - `RuleSet::builtin()` the embedded rules;
//! - `RuleSet::with_user_rules(&rules_table_from_gate_toml)`;
//! - `RuleSet::diagnose(&run)` ranked suspects of one run;
//! - `RuleSet::explain_change(&baseline, &new)` suspects that fire on the
//!   new run and not on the baseline, with before/after evidence.

use crate::error::GateError;
use crate::stats::MetricSource;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
}

/// One fired rule with the numbers that made it fire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Rule name, e.g. "tensor_cores_unused".
    pub rule: String,
    pub severity: Severity,
    /// Short headline, e.g. "Matrix math is not on tensor cores".
    pub title: String,
    /// Evidence lines, e.g. "tensor_pct.mean 94.1 -> 0.3".
    pub evidence: Vec<String>,
    /// Plain-words explanation.
    pub explanation: String,
    /// Concrete things to try.
    pub next_steps: Vec<String>,
    /// Ranking score (higher first).
    pub score: f64,
}

impl Finding {
    /// One paragraph for JUnit failure text, Markdown and terminal output.
    pub fn text(&self) -> String {
        let mut s = format!("{}: {}", self.title, self.explanation);
        if !self.evidence.is_empty() {
            s.push_str(&format!(" Evidence: {}.", self.evidence.join("; ")));
        }
        if !self.next_steps.is_empty() {
            s.push_str(&format!(" Try: {}.", self.next_steps.join("; ")));
        }
        s
    }
}

/// The active rules: built-in ones plus the user's from gate.toml.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {}

impl RuleSet {
    pub fn builtin() -> RuleSet {
        RuleSet {}
    }

    /// Add, override, disable or re-threshold rules from gate.toml's `[rules]`.
    pub fn with_user_rules(
        self,
        _rules: &BTreeMap<String, toml::Value>,
    ) -> Result<RuleSet, GateError> {
        Ok(self)
    }

    pub fn diagnose(&self, _run: &dyn MetricSource) -> Vec<Finding> {
        Vec::new()
    }

    pub fn explain_change(
        &self,
        _baseline: &dyn MetricSource,
        _new: &dyn MetricSource,
    ) -> Vec<Finding> {
        Vec::new()
    }
}
