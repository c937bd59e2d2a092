//! Rules engine: names the likely root cause of a run's behaviour, or of
//! what changed between a baseline and a new run.
//!
//! Interface:
//! - `RuleSet::builtin()` the embedded rules;
//! - `RuleSet::with_user_rules(&rules_table_from_gate_toml)`;
//! - `RuleSet::diagnose(&run)` ranked suspects of one run;
//! - `RuleSet::explain_change(&baseline, &new)` suspects that fire on the
//!   new run and not on the baseline, with before/after evidence.
//!
//! Layout: `dsl` (the condition language), `rules` (loading and rendering
//! rules; the built-in ones are in `rules.toml`, embedded), `audit` (the
//! built-in rules' prose checked). Rules read a run through its summary
//! (`MetricSource`); the features they name are computed under the summary
//! (`crate::analysis::features`). Synthetic traces of each bottleneck,
//! for tests and docs, are in `crate::synthetic`.
//!
//! Ranking: findings of a change are ordered by the share of the slowdown
//! each cause can account for (`explains_pct`, from the rule's `explains`
//! expression: docs/rules.md gives each estimate): a cause that accounts
//! for 2 % of the lost time is not the first explanation of a 50 % loss.
//! Ties, and findings without a share (one run's diagnosis, a run not
//! slower, a rule without an estimate), are ordered by severity, then by
//! the rule's reading order (is the GPU fed, do SM active and DRAM agree
//! with busy, do the tensor cores work, then transfers; fragmentation
//! before bandwidth, which stays hidden while SMs are starved: docs/rules.md),
//! then by how far past its threshold the condition is. `score` encodes
//! that order: `100 * severity + 10 * (9 - order) + 9 * margin`, margin in
//! 0..1.

pub mod audit;
pub mod dsl;
mod no_gpu;
pub use no_gpu::unexplained_without_gpu;
pub mod rules;

use crate::error::GateError;
use crate::metrics::Statistic;
use crate::stats::{MetricSource, Stat};
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
///
/// What people read is structured: the headline (`title`), the
/// explanation, the evidence table (`rows`: the numbers the text cites and
/// those of the rule's evidence that are known, and for a change moved),
/// then the next steps. Every reporter lays out those parts; none prints
/// `evidence` (the rule's expressions, kept for machines and rule authors).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Rule name, e.g. "tensor_cores_unused".
    pub rule: String,
    pub severity: Severity,
    /// Short headline, e.g. "Matrix math is not on tensor cores".
    pub title: String,
    /// Evidence lines by expression, e.g. "tensor_pct.mean 94.1 -> 0.3".
    pub evidence: Vec<String>,
    /// Plain-words explanation; each number it shows is in `rows`.
    pub explanation: String,
    /// Concrete things to try.
    pub next_steps: Vec<String>,
    /// Ranking score (higher first).
    pub score: f64,
    /// The evidence table: known values only, human names.
    #[serde(default)]
    pub rows: Vec<EvidenceRow>,
    /// The share of the slowdown (percent) this cause can account for, on
    /// a change whose run is slower and whose rule estimates it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explains_pct: Option<f64>,
    /// The benchmark (metric id) this finding explains, in a run of many
    /// benchmarks: its title starts with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<String>,
    /// Which window the counters came from: the benchmark's own span, or
    /// the whole window and why its span was not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
}

/// One row of a finding's evidence table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceRow {
    /// What the number is, for people: "GPU busy", "SM active per busy second".
    pub label: String,
    /// The rule's expression, e.g. "gpu_busy_pct.mean".
    pub expr: String,
    /// The baseline's value (a change); None for one run's diagnosis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<f64>,
    pub value: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

impl EvidenceRow {
    /// The baseline's value as the text prints it, when comparing.
    pub fn baseline_text(&self) -> Option<String> {
        self.baseline
            .map(|b| rules::value_text(b, self.unit.as_deref()))
    }

    /// The (new) value as the text prints it.
    pub(crate) fn value_text(&self) -> String {
        rules::value_text(self.value, self.unit.as_deref())
    }

    /// "99.88 % -> 82.2 %" for a change, "82.2 %" for one run.
    pub(crate) fn change_text(&self) -> String {
        match self.baseline_text() {
            Some(b) => format!("{b} -> {}", self.value_text()),
            None => self.value_text(),
        }
    }
}

impl Finding {
    /// Record the share (0..1) of the slowdown this cause accounts for: in
    /// the explanation, as a row of the evidence table, and for ranking.
    fn set_share(&mut self, share: f64) {
        let pct = (share * 1000.0).round() / 10.0;
        self.explains_pct = Some(pct);
        let text = rules::value_text(pct, Some("%"));
        let sep = if self.explanation.is_empty() { "" } else { " " };
        self.explanation = format!(
            "{}{sep}This explains about {text} of the slowdown.",
            self.explanation
        );
        self.rows.insert(
            0,
            EvidenceRow {
                label: "share of the slowdown explained".to_string(),
                expr: "explains".to_string(),
                baseline: None,
                value: pct,
                unit: Some("%".to_string()),
            },
        );
    }
}

/// Width plain-text findings wrap their explanation at.
pub(crate) const TEXT_WIDTH: usize = 100;

impl Finding {
    /// Plain text for JUnit failure text and terminal output: the headline,
    /// the explanation (wrapped), the evidence table, then "Try:" and the
    /// next steps, one a line. Markdown and HTML lay out the same parts.
    pub fn text(&self) -> String {
        self.text_lines(&|s| s.to_string()).join("\n")
    }

    /// The lines of `text`, each part passed through `esc` (the sink's
    /// escaping) before it is laid out, so a line break inside a part
    /// cannot forge a line.
    pub(crate) fn text_lines(&self, esc: &dyn Fn(&str) -> String) -> Vec<String> {
        let mut lines = vec![esc(&self.title)];
        if let Some(w) = &self.window {
            lines.extend(wrap(&format!("({})", esc(w)), TEXT_WIDTH));
        }
        lines.extend(wrap(&esc(&self.explanation), TEXT_WIDTH));
        let cells: Vec<(String, String)> = self
            .rows
            .iter()
            .map(|r| (esc(&r.label), esc(&r.change_text())))
            .collect();
        let width = cells
            .iter()
            .map(|(l, _)| l.chars().count())
            .max()
            .unwrap_or(0);
        for (label, change) in cells {
            lines.push(format!("  {label:<width$}  {change}"));
        }
        if !self.next_steps.is_empty() {
            lines.push("Try:".to_string());
            for step in &self.next_steps {
                lines.push(format!("  - {}", esc(step)));
            }
        }
        lines
    }
}

/// Greedy word wrap at `width` characters (a longer word gets its own line).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The evidence table of a finding: the expressions its text shows (in
/// reading order), then the rule's evidence; each once, known values only
/// (a change: known on both sides), and of the rule's own evidence, for a
/// change, only what moved (what the text shows stays even when it did not
/// move: the text cites it).
fn evidence_rows(
    shown: &[dsl::Expr],
    evidence: &[(String, dsl::Expr)],
    baseline: Option<&dyn MetricSource>,
    new: &dyn MetricSource,
) -> Vec<EvidenceRow> {
    let mut rows: Vec<EvidenceRow> = Vec::new();
    let candidates = shown
        .iter()
        .map(|e| (e, true))
        .chain(evidence.iter().map(|(_, e)| (e, false)));
    for (e, cited) in candidates {
        let expr = e.to_string();
        if rows.iter().any(|r| r.expr == expr) {
            continue;
        }
        let Some(value) = dsl::eval_num(e, new, None) else {
            continue;
        };
        let before = baseline.and_then(|b| dsl::eval_num(e, b, None));
        let unit = rules::unit_of(e).map(str::to_string);
        if baseline.is_some() && !cited {
            let moved = before.is_some_and(|b| {
                rules::value_text(b, unit.as_deref()) != rules::value_text(value, unit.as_deref())
            });
            if !moved {
                continue;
            }
        }
        rows.push(EvidenceRow {
            label: rules::label_of(e),
            expr,
            baseline: before,
            value,
            unit,
        });
    }
    rows
}

/// The built-in rules, embedded at build time.
pub(crate) const BUILTIN_RULES_TOML: &str = include_str!("rules.toml");

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }

    fn weight(self) -> f64 {
        match self {
            Severity::Info => 0.0,
            Severity::Low => 1.0,
            Severity::Medium => 2.0,
            Severity::High => 3.0,
        }
    }
}

/// The active rules: built-in ones plus the user's from gate.toml.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    /// Shared: the built-in rules are parsed once, and every check of a
    /// suite (a thousand workloads) holds the same ones.
    rules: Vec<std::sync::Arc<rules::Rule>>,
    vocab: dsl::Vocabulary,
}

impl RuleSet {
    pub fn builtin() -> RuleSet {
        static BUILTIN: std::sync::OnceLock<Vec<std::sync::Arc<rules::Rule>>> =
            std::sync::OnceLock::new();
        let vocab = dsl::Vocabulary::standard();
        let rules = BUILTIN
            .get_or_init(|| {
                // The embedded file is checked by a unit test; a broken one
                // is a bug in this build, not a user error.
                rules::parse_file(BUILTIN_RULES_TOML, &vocab)
                    .unwrap_or_else(|e| panic!("built-in rules.toml is invalid: {e}"))
                    .into_iter()
                    .map(std::sync::Arc::new)
                    .collect()
            })
            .clone();
        RuleSet { rules, vocab }
    }

    /// Declare benchmark-reported metric names (gate.toml user metrics) so
    /// user rules may refer to them (`samples_per_s.mean`). Call before
    /// `with_user_rules`.
    pub(crate) fn with_user_metrics<I: IntoIterator<Item = String>>(mut self, names: I) -> RuleSet {
        self.vocab.user_metrics.extend(names);
        self
    }

    /// Add, override, disable or re-threshold rules from gate.toml's `[rules]`.
    /// A table named like a built-in rule overrides only the fields it gives
    /// (`when` re-thresholds it, `enabled = false` disables it); any other
    /// name adds a rule, which then needs `when`. Errors name the rule, the
    /// field and the column (exit 2).
    pub fn with_user_rules(
        mut self,
        user: &BTreeMap<String, toml::Value>,
    ) -> Result<RuleSet, GateError> {
        for (name, table) in user {
            if !is_rule_name(name) {
                return Err(GateError::usage(format!(
                    "[rules.{name}]: rule names are lowercase letters, digits and '_'"
                )));
            }
            let existing = self.rules.iter().position(|r| &r.name == name);
            let base = existing.map(|i| &*self.rules[i]);
            let origin = if base.is_some() {
                rules::Origin::Overridden
            } else {
                rules::Origin::User
            };
            let rule = rules::from_table(name, table, base, origin, &self.vocab).map_err(|e| {
                let hint = if base.is_none() && e.starts_with("missing 'when'") {
                    format!(
                        "; '{name}' is not a built-in rule (built-in: {})",
                        self.rules
                            .iter()
                            .filter(|r| r.origin != rules::Origin::User)
                            .map(|r| r.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                } else {
                    String::new()
                };
                GateError::usage(format!("[rules.{name}] {e}{hint}"))
            })?;
            match existing {
                Some(i) => self.rules[i] = std::sync::Arc::new(rule),
                None => self.rules.push(std::sync::Arc::new(rule)),
            }
        }
        Ok(self)
    }

    /// All rules, enabled or not, in name order of loading.
    pub fn rules(&self) -> &[std::sync::Arc<rules::Rule>] {
        &self.rules
    }

    /// The rules for which `keep` holds, with the same vocabulary (`gate
    /// watch` evaluates the rules of one window length together).
    pub fn only(&self, keep: impl Fn(&rules::Rule) -> bool) -> RuleSet {
        RuleSet {
            rules: self.rules.iter().filter(|r| keep(r)).cloned().collect(),
            vocab: self.vocab.clone(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&rules::Rule> {
        self.rules.iter().find(|r| r.name == name).map(|r| &**r)
    }

    /// Ranked suspects of one run: every enabled rule whose condition is
    /// definitely true, highest score first.
    pub fn diagnose(&self, run: &dyn MetricSource) -> Vec<Finding> {
        let mut out: Vec<Finding> = self
            .rules
            .iter()
            .filter(|r| r.enabled)
            .filter_map(|r| {
                if dsl::eval_bool(&r.cond, run) != Some(true) {
                    return None;
                }
                let margin = dsl::margin(&r.cond, run).unwrap_or(0.0);
                // A finding cites only what the run recorded (issue 39.3).
                let evidence = r
                    .evidence
                    .iter()
                    .filter_map(|(label, e)| {
                        let v = dsl::eval_num(e, run, None)?;
                        Some(format!("{label} = {}", rules::with_unit(Some(v), e)))
                    })
                    .collect();
                let (explanation, shown) = r.explanation.render_used(None, run);
                let rows = evidence_rows(&shown, &r.evidence, None, run);
                let mut f = finding(r, evidence, explanation, rows, margin);
                f.next_steps = next_steps_for(r, run);
                Some(f)
            })
            .collect();
        rank(&mut out);
        out
    }

    /// Suspects for a change (baseline -> new run). A rule with a
    /// `change_when` explains the change when that condition holds, read
    /// against the noise (`z()`) and the baseline (`base()`, `delta()`,
    /// `ratio()`); any other rule when its `when` holds in `new` and not in
    /// `baseline` (a rule the baseline cannot evaluate counts as not firing
    /// there). Evidence reads "baseline -> new"; the text is the rule's
    /// `change` text.
    pub fn explain_change(
        &self,
        baseline: &dyn MetricSource,
        new: &dyn MetricSource,
    ) -> Vec<Finding> {
        let change = Change { baseline, new };
        let gpm = has_gpm(new);
        let mut out: Vec<Finding> = self
            .rules
            .iter()
            .filter(|r| r.enabled)
            .filter_map(|r| {
                let margin = match &r.change_when {
                    Some((_, cond)) => {
                        if dsl::eval_bool(cond, &change) != Some(true) {
                            return None;
                        }
                        dsl::margin(cond, &change).unwrap_or(0.0)
                    }
                    None => {
                        if dsl::eval_bool(&r.cond, new) != Some(true)
                            || dsl::eval_bool(&r.cond, baseline) == Some(true)
                        {
                            return None;
                        }
                        dsl::margin(&r.cond, new).unwrap_or(0.0)
                    }
                };
                let evidence = r
                    .evidence
                    .iter()
                    .filter_map(|(label, e)| {
                        let (b, n) = (
                            dsl::eval_num(e, baseline, None),
                            dsl::eval_num(e, &change, None),
                        );
                        // A value one run lacks (GPM on a GPU without it,
                        // a feature too few samples give) is no evidence:
                        // a finding cites only what both runs recorded.
                        if b.is_none() || n.is_none() {
                            return None;
                        }
                        Some(format!(
                            "{label} {} -> {}",
                            rules::with_unit(b, e),
                            rules::with_unit(n, e)
                        ))
                    })
                    .collect();
                let text = if gpm { None } else { r.change_nogpm.as_ref() };
                let (explanation, shown) = match text.or(r.change.as_ref()) {
                    Some(t) => {
                        let (text, shown) = t.render_used(Some(baseline), &change);
                        (capitalise(&text), shown)
                    }
                    None => r.explanation.render_used(Some(baseline), &change),
                };
                let rows = evidence_rows(&shown, &r.evidence, Some(baseline), &change);
                let mut f = finding(r, evidence, explanation, rows, margin);
                f.next_steps = next_steps_for(r, new);
                let share = r
                    .explains
                    .as_ref()
                    .and_then(|(_, e)| dsl::eval_num(e, &change, None));
                if let Some(s) = share {
                    f.set_share(s);
                }
                Some(f)
            })
            .collect();
        rank_by_share(&mut out);
        out
    }
}

/// Rule name of the finding `unexplained` makes.
pub(crate) const UNEXPLAINED: &str = "unexplained";

/// The finding for a regression that no rule explains: gate says exactly
/// that instead of guessing. `moved` are the regressed metrics with their
/// relative change in percent (None when the baseline was 0).
/// `work_rate_declared`: the benchmark declares its throughput (or time per
/// unit), so `more_work_per_unit` was checked; otherwise the finding says
/// that cause could not be, and how to declare the number.
pub fn unexplained(moved: &[(String, Option<f64>)], work_rate_declared: bool) -> Finding {
    // "node1/sm_active_pct[gpu0]" reads "node1/SM active[gpu0]".
    let human = |label: &str| -> String {
        let (node, rest) = match label.split_once('/') {
            Some((n, r)) => (format!("{n}/"), r),
            None => (String::new(), label),
        };
        let (id, gpu) = match rest.find('[') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        format!("{node}{}{gpu}", crate::metrics::label(id))
    };
    let moved: Vec<(String, Option<f64>)> = moved.iter().map(|(l, p)| (human(l), *p)).collect();
    let rows: Vec<EvidenceRow> = moved
        .iter()
        .filter_map(|(label, pct)| {
            pct.map(|p| EvidenceRow {
                label: format!("{label}, change"),
                expr: label.clone(),
                baseline: None,
                value: p,
                unit: Some("%".to_string()),
            })
        })
        .collect();
    let list = moved
        .iter()
        .map(|(label, pct)| match pct {
            Some(p) => format!(
                "{label} ({}{})",
                if *p >= 0.0 { "+" } else { "" },
                rules::value_text(*p, Some("%"))
            ),
            None => label.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ");
    Finding {
        rule: UNEXPLAINED.to_string(),
        severity: Severity::Info,
        title: "No counter explains the change".to_string(),
        evidence: vec![format!("regressed: {list}")],
        explanation: format!(
            "{list} moved beyond the noise, but no GPU or host counter changed in a way that names a cause: the work inside the kernels changed (an algorithm, shapes, a library or driver version), or the time went somewhere gate does not measure (storage, network, another host). gate does not guess."
        ),
        next_steps: {
            let mut steps = Vec::new();
            if !work_rate_declared {
                steps.push(UNDECLARED_WORK_RATE.to_string());
            }
            steps.push("Profile one step on both commits (torch.profiler, or one short nsys session) and compare kernel times".to_string());
            steps.push("Diff the environment: library versions, driver, container image, input data".to_string());
            steps
        },
        score: 0.0,
        rows,
        explains_pct: None,
        benchmark: None,
        window: None,
    }
}

/// What `unexplained` says when the benchmark declares no number of its own.
pub(crate) const UNDECLARED_WORK_RATE: &str = "More GPU work per unit of output (recompute, a disabled cache, padded shapes) could not be checked: the benchmark declares no throughput. Print one (e.g. 'samples_per_s: 1234') and declare it in gate.toml: [user_metrics.samples_per_s] regex = '^samples_per_s: ([0-9.eE+-]+)', direction = \"higher_is_better\"";

/// A change, as the rule language reads it: the new run's numbers, with the
/// baseline one step away (`base()`, `delta()`, `ratio()`, `z()`).
pub(crate) struct Change<'a> {
    pub baseline: &'a dyn MetricSource,
    pub new: &'a dyn MetricSource,
}

impl MetricSource for Change<'_> {
    fn stat(&self, metric: &str, stat: Stat, gpu: Option<usize>) -> Option<f64> {
        self.new.stat(metric, stat, gpu)
    }
    fn feature(&self, name: &str) -> Option<f64> {
        self.new.feature(name)
    }
    fn gpu_count(&self) -> usize {
        self.new.gpu_count()
    }
    fn runs(
        &self,
        metric: &str,
        stat: Stat,
        gpu: Option<usize>,
    ) -> Option<Vec<(f64, Option<f64>)>> {
        self.new.runs(metric, stat, gpu)
    }
    fn baseline(&self) -> Option<&dyn MetricSource> {
        Some(self.baseline)
    }
}

/// Several repeated runs of one benchmark read as one: each statistic and
/// feature is the mean over the runs, and `runs()` lists every run, so
/// `z()` weighs a change against the same pooled evidence as the verdict
/// (`--confirm`, several replayed traces). Not for the nodes of one run:
/// those are diagnosed one by one.
pub(crate) struct Pooled<'a> {
    pub runs: Vec<&'a dyn MetricSource>,
}

impl Pooled<'_> {
    fn mean(&self, f: impl Fn(&dyn MetricSource) -> Option<f64>) -> Option<f64> {
        let vals: Vec<f64> = self.runs.iter().filter_map(|r| f(*r)).collect();
        (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
    }
}

impl MetricSource for Pooled<'_> {
    fn stat(&self, metric: &str, stat: Stat, gpu: Option<usize>) -> Option<f64> {
        self.mean(|r| r.stat(metric, stat, gpu))
    }
    fn feature(&self, name: &str) -> Option<f64> {
        self.mean(|r| r.feature(name))
    }
    fn gpu_count(&self) -> usize {
        self.runs.iter().map(|r| r.gpu_count()).max().unwrap_or(0)
    }
    fn runs(
        &self,
        metric: &str,
        stat: Stat,
        gpu: Option<usize>,
    ) -> Option<Vec<(f64, Option<f64>)>> {
        let all: Vec<(f64, Option<f64>)> = self
            .runs
            .iter()
            .filter_map(|r| r.runs(metric, stat, gpu))
            .flatten()
            .collect();
        (!all.is_empty()).then_some(all)
    }
}

/// Whether a run has GPM counters (SM active): without them (A100, L4,
/// T4, `--no-gpm`) rules reason from NVML and host counters only, and say
/// which causes those cannot tell apart (`change_nogpm`).
pub(crate) fn has_gpm(run: &dyn MetricSource) -> bool {
    run.stat("sm_active_pct", Stat::Of(Statistic::Mean), None)
        .is_some()
}

/// The framework a run was detected to use (`features::framework_features`
/// sets `framework.<name>` to 1), when exactly one was.
pub(crate) fn framework_of(run: &dyn MetricSource) -> Option<&'static str> {
    let found: Vec<&'static str> = crate::analysis::framework::NAMES
        .iter()
        .copied()
        .filter(|fw| {
            run.feature(&format!("framework.{fw}"))
                .is_some_and(|v| v >= 0.5)
        })
        .collect();
    // A serving stack runs on a framework (vLLM on torch): the stack's
    // advice is the more specific one.
    found
        .iter()
        .copied()
        .find(|fw| !matches!(*fw, "torch" | "jax" | "tensorflow"))
        .or(found.first().copied())
}

/// A rule's things to try for `run`: in its framework's words when the
/// rule has them, the generic ones otherwise.
fn next_steps_for(r: &rules::Rule, run: &dyn MetricSource) -> Vec<String> {
    let specific = framework_of(run).and_then(|fw| {
        r.next_steps_for.get(fw).or_else(|| {
            // A serving stack without its own words: its framework's.
            ["torch", "jax", "tensorflow"]
                .iter()
                .filter(|base| {
                    run.feature(&format!("framework.{base}"))
                        .is_some_and(|v| v >= 0.5)
                })
                .find_map(|base| r.next_steps_for.get(*base))
        })
    });
    specific.cloned().unwrap_or_else(|| r.next_steps.clone())
}

fn is_rule_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn finding(
    r: &rules::Rule,
    evidence: Vec<String>,
    explanation: String,
    rows: Vec<EvidenceRow>,
    margin: f64,
) -> Finding {
    let order = r.order.min(9) as f64;
    let score = 100.0 * r.severity.weight() + 10.0 * (9.0 - order) + 9.0 * margin.clamp(0.0, 1.0);
    Finding {
        rule: r.name.clone(),
        severity: r.severity,
        title: r.title.clone(),
        evidence,
        explanation,
        next_steps: r.next_steps.clone(),
        // Rounded so that reports stay byte-for-byte stable across platforms.
        score: (score * 1000.0).round() / 1000.0,
        rows,
        explains_pct: None,
        benchmark: None,
        window: None,
    }
}

/// How finely shares of the slowdown are compared (points): they are
/// estimates from mean fractions of time, and a specific cause's fraction
/// (DRAM busy, SMs active outside the tensor pipes) is part of the GPU's
/// busy time that a generic one (more work per unit) counts whole; within
/// one band the rule's severity and reading order decide.
pub const SHARE_RESOLUTION_PCT: f64 = 20.0;

/// Findings of a change: the larger share of the slowdown first (in bands
/// of `SHARE_RESOLUTION_PCT`); those without one after, in `rank` order.
pub(crate) fn rank_by_share(findings: &mut [Finding]) {
    use std::cmp::Ordering;
    let band = |p: f64| (p.min(99.9) / SHARE_RESOLUTION_PCT).floor();
    findings.sort_by(|a, b| {
        match (a.explains_pct, b.explains_pct) {
            (Some(x), Some(y)) => band(y).total_cmp(&band(x)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        }
        .then_with(|| b.score.total_cmp(&a.score))
        .then_with(|| a.rule.cmp(&b.rule))
    });
}

fn rank(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.rule.cmp(&b.rule))
    });
}

#[cfg(test)]
mod tests;
