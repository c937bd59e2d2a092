//! `[[suite.workload]]` of gate.toml: the workloads `--suite` runs
//! (docs/suites.md), their validation, and the policy as one workload sees
//! it (`Config::for_workload`). Library code reads it (`Config`), so it
//! stays with the document rather than beside `commands/suite.rs`.

use super::{Config, GateConfig};
use crate::validate::valid_name;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// `[suite]` of gate.toml.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteConfig {
    #[serde(default)]
    pub workload: Vec<WorkloadDef>,
}

/// One `[[suite.workload]]`: durations stay text here (the command layer
/// parses them like the flags they stand for).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadDef {
    pub name: String,
    pub baseline: String,
    /// argv, never run through a shell.
    pub command: Vec<String>,
    /// `gate ab --suite`: A's and B's argv (both or neither).
    pub a: Option<Vec<String>>,
    pub b: Option<Vec<String>>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    pub warmup: Option<String>,
    pub duration: Option<String>,
    pub(crate) warmup_until: Option<String>,
    /// The workload's end-of-timed-section marker (`--until`).
    pub until: Option<String>,
    pub metrics_file: Option<String>,
    /// The `[user_metrics]` tables this workload produces; None: those no
    /// other workload names (`Config::for_workload`).
    pub metrics: Option<Vec<Spanned<String>>>,
}

impl SuiteConfig {
    /// Names and baselines valid and unique, commands not empty.
    pub(super) fn validate(&self) -> Result<(), String> {
        let mut names = std::collections::BTreeSet::new();
        let mut baselines = std::collections::BTreeSet::new();
        for w in &self.workload {
            if w.name.chars().count() > 128 {
                return Err(format!(
                    "[[suite.workload]] name '{}…' is {} characters long; at most 128 are allowed",
                    w.name.chars().take(40).collect::<String>(),
                    w.name.chars().count()
                ));
            }
            let at = format!("[[suite.workload]] '{}'", w.name);
            if !valid_name(&w.name) {
                return Err(format!(
                    "{at}: name may only use letters, digits, '.', '_' and '-'"
                ));
            }
            if !names.insert(&w.name) {
                return Err(format!(
                    "{at}: two workloads have this name; names must be unique"
                ));
            }
            if !valid_name(&w.baseline) {
                return Err(format!(
                    "{at}: baseline '{}' may only use letters, digits, '.', '_' and '-'",
                    w.baseline
                ));
            }
            if !baselines.insert(&w.baseline) {
                return Err(format!(
                    "{at}: baseline '{}' belongs to another workload too; give each workload its own baseline",
                    w.baseline
                ));
            }
            if w.command.is_empty() || w.command[0].is_empty() {
                return Err(format!(
                    "{at}: command is empty; give the argv, e.g. command = [\"python3\", \"bench.py\"]"
                ));
            }
            match (&w.a, &w.b) {
                (None, None) => {}
                (Some(a), Some(b))
                    if [a, b]
                        .iter()
                        .all(|v| v.first().is_some_and(|p| !p.is_empty())) => {}
                _ => {
                    return Err(format!(
                        "{at}: a and b go together, each a non-empty argv, e.g. a = [\"python3\", \"bench.py\", \"--batch\", \"64\"] and b = [\"python3\", \"bench.py\", \"--batch\", \"128\"] (gate ab --suite)"
                    ));
                }
            }
            for (k, v) in &w.tags {
                if k.is_empty() || k.chars().chain(v.chars()).any(crate::escape::is_hostile) {
                    return Err(format!(
                        "{at}: tag {k:?} = {v:?}: keys must be non-empty, no control characters"
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Config {
    /// This policy as one suite workload sees it: only the user metrics it
    /// names in `metrics = [...]`, or, when it names none, those that no
    /// other workload of the suite names. A workload is never judged or
    /// warned on another's number.
    pub(crate) fn for_workload(&self, name: &str) -> Config {
        let Some(suite) = &self.file.suite else {
            return self.clone();
        };
        let names = |w: &WorkloadDef| -> Vec<String> {
            w.metrics
                .iter()
                .flatten()
                .map(|m| m.get_ref().clone())
                .collect()
        };
        let keep: Box<dyn Fn(&str) -> bool> = match suite.workload.iter().find(|w| w.name == name) {
            Some(w) if w.metrics.is_some() => {
                let own = names(w);
                Box::new(move |m| own.iter().any(|o| o == m))
            }
            _ => {
                let others: Vec<String> = suite
                    .workload
                    .iter()
                    .filter(|w| w.name != name)
                    .flat_map(names)
                    .collect();
                Box::new(move |m| !others.iter().any(|o| o == m))
            }
        };
        // A workload's config has no suite table: each of a thousand
        // workloads holding all thousand made the suite quadratic in memory.
        let mut c = self.clone();
        c.file.suite = None;
        c.file.user_metrics.retain(|k, _| keep(k.get_ref()));
        c.user_sources.retain(|k, _| keep(k));
        c
    }
}

/// Each `metrics = [...]` of a `[[suite.workload]]` names a
/// `[user_metrics]` table, at most once in the suite.
pub(super) fn check_workload_metrics(
    file: &GateConfig,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<(), String> {
    let Some(suite) = &file.suite else {
        return Ok(());
    };
    let tables: Vec<&String> = file.user_metrics.keys().map(|k| k.get_ref()).collect();
    let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
    for w in &suite.workload {
        for m in w.metrics.iter().flatten() {
            let name = m.get_ref().as_str();
            if !tables.iter().any(|t| *t == name) {
                let close = tables
                    .iter()
                    .map(|t| (crate::spelling::levenshtein(name, t), *t))
                    .min()
                    .filter(|(d, _)| *d <= name.len() / 3 + 2)
                    .map(|(_, t)| format!("did you mean '{t}'? "))
                    .unwrap_or_default();
                return Err(format!(
                    "{}: [[suite.workload]] '{}' metrics names '{name}', which is not a [user_metrics] table; {close}declare [user_metrics.{name}] or remove it",
                    at(m.span()),
                    w.name
                ));
            }
            if let Some(other) = owner.insert(name, &w.name) {
                return Err(format!(
                    "{}: user metric '{name}' is named by workloads '{other}' and '{}'; each number belongs to one workload (declare one table per workload)",
                    at(m.span()),
                    w.name
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workload's config keeps the file's policy and drops the suite
    /// table: each workload holding every workload made a suite quadratic
    /// in memory (1,000 workloads: 898 MB; BENCHMARKS.md).
    #[test]
    fn a_workload_config_has_no_suite_table() {
        let text = "[verdict]\nmax_reruns = 4\n\n[[suite.workload]]\nname = \"a\"\nbaseline = \"a\"\ncommand = [\"true\"]\n\n[[suite.workload]]\nname = \"b\"\nbaseline = \"b\"\ncommand = [\"true\"]\n";
        let c = Config::parse(text, "gate.toml").unwrap();
        assert_eq!(c.file.suite.as_ref().map(|s| s.workload.len()), Some(2));
        let w = c.for_workload("a");
        assert!(w.file.suite.is_none());
        assert_eq!(w.file.verdict.max_reruns, Some(4));
        assert!(std::sync::Arc::ptr_eq(&w.source_text, &c.source_text));
    }
}
