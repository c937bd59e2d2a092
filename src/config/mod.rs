//! `gate.toml`: the repository's gating policy. Owns parsing and validation
//! of the file and the resolution of each metric's effective policy
//! (statistic, direction, tolerances) from catalogue defaults, the file and
//! the command line.
//!
//! ```toml
//! [defaults]
//! threshold = 0.10            # relative tolerance for every gated metric
//!
//! [metrics.sm_active_pct]     # any id of the metric catalogue (src/metrics.rs)
//! relative = 0.05             # fraction of the baseline value
//! absolute = 3.0              # in the metric's unit
//! statistic = "mean"          # mean | p5 | p50 | median | p95 | p99 | min | max
//! direction = "higher_is_better"
//! enabled = true              # false: report only, never fail
//!
//! [user_metrics.samples_per_s]  # numbers the benchmark prints itself
//! regex = 'samples_per_s: ([0-9.eE+-]+)'
//! source = "stdout"           # or "metrics_file"
//! direction = "higher_is_better"
//! unit = "1/s"
//! # or another reader (src/metric_sources/): format = "json" + pointer,
//! # "pytest_benchmark" + benchmark (+ stat), "mlperf_summary" (+ field),
//! # "bmf" + benchmark + measure (+ stat), "google_benchmark" + benchmark
//! # (+ stat), "nvbench" + benchmark (+ stat); benchmark = "*" (a glob)
//! # reads every benchmark of the file, each as metric NAME.BENCHMARK
//! optional = false            # true: a run without this number is judged without it
//! aggregate = "mean"          # mean | median over the steady window's lines; last after warm-up
//!
//! [rules]                     # handed to diagnose::RuleSet::with_user_rules
//! ```
//!
//! Precedence of the relative tolerance: `[metrics.<id>].relative`, then
//! `--threshold`, then `[defaults].threshold`, then the floor of the
//! metric's kind (`FIRST_CLASS_FLOOR` 1 %, `COUNTER_FLOOR` 3 %). The most specific
//! setting wins: a flag on the command line loosens or tightens the default,
//! not a limit someone chose for one metric on purpose.
//!
//! Unknown keys, unknown metric ids, bad regexes and wrong types are errors
//! (exit 2) naming the file, line and column, never silently ignored: a typo
//! in a gate's policy must not turn into a gate that checks nothing.
//!
//! This file holds the document (`GateConfig`, which assembles the
//! sections), `[defaults]` and `[metrics]`, loading and `Config`. Each other
//! section's schema and validation is a file here, below the rooms that
//! read it (config imports none of them: `tests/architecture.rs`):
//! `[user_metrics]` in `user_metrics` (read by `metric_sources`, `summary`),
//! `[verdict]`, `[compare]` and the resolved `Policy` in `verdict` (read by
//! `gate`), `[history]` in `history`, `[accept]` in `accept`, `[alerts]` in
//! `alerts`, and `[[suite.workload]]` in `suite` (library code reads it).
//! The checks they share, and the TOML error text, are in `crate::validate`.

pub mod accept;
pub mod alerts;
pub mod history;
pub mod locate;
pub mod suite;
pub mod user_metrics;
pub mod verdict;

use crate::error::GateError;
use crate::metrics::{self, Direction, Statistic};
use crate::validate::{check_absolute, check_fraction, line_col, toml_error};
use accept::AcceptPolicy;
use alerts::AlertsConfig;
use history::HistoryConfig;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use toml::Spanned;
use user_metrics::{readers, UserMetricDef};
use verdict::{CompareConfig, Policy, VerdictConfig};

/// Default practical floor of the benchmark's own numbers (wall time, user
/// metrics such as throughput), as a fraction of the baseline: the smallest
/// change worth failing a pipeline for when the noise allows it. On the H200
/// fixtures a benchmark's throughput varied 0.01-0.1 % between healthy runs,
/// so 1 % is ten times the noise and far below the 3-87 % regressions users
/// reported (docs/gating.md, "The practical floor").
pub const FIRST_CLASS_FLOOR: f64 = 0.01;
/// Default practical floor of sampled counters (utilizations, shares): they
/// explain more than they gate, and a run's within-run interval misses the
/// run-to-run part of their noise. Healthy runs of one workload on the H200
/// fixtures differed by up to 1.1 % (GPU busy), 0.8 % (SM active), 0.7 %
/// (tensor) after warm-up and teardown are excluded; 3 % stays clear of that
/// and below every moderate pathology recorded (9-63 %).
pub const COUNTER_FLOOR: f64 = 0.03;

/// The parsed file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateConfig {
    #[serde(default)]
    pub defaults: Defaults,
    #[serde(default)]
    pub metrics: BTreeMap<Spanned<String>, MetricOverride>,
    #[serde(default)]
    pub user_metrics: BTreeMap<Spanned<String>, UserMetricDef>,
    /// Raw rule table; `diagnose::RuleSet::with_user_rules` owns its schema.
    #[serde(default)]
    pub rules: BTreeMap<String, toml::Value>,
    /// `[history]`: where runs are recorded and how drift is judged
    /// (`history::HistoryConfig`; `history` uses it).
    #[serde(default)]
    pub history: Option<HistoryConfig>,
    /// `[verdict]`: what an inconclusive run exits with, and how many
    /// times a live check may rerun the benchmark to decide.
    #[serde(default)]
    pub verdict: VerdictConfig,
    /// `[compare]`: what must match between a run and its baseline.
    #[serde(default)]
    pub compare: CompareConfig,
    /// `[accept]`: whether and how far a change may acknowledge its own
    /// regressions (`accept`); read from the target branch like the rest.
    #[serde(default)]
    pub accept: AcceptPolicy,
    /// `[[suite.workload]]`: the workloads `--suite` runs (docs/suites.md).
    #[serde(default)]
    pub suite: Option<suite::SuiteConfig>,
    /// `[alerts]`: where watch and check alerts go (`config::alerts`).
    #[serde(default)]
    pub alerts: AlertsConfig,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// Relative tolerance (fraction) for all gated metrics.
    pub threshold: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricOverride {
    pub relative: Option<f64>,
    pub absolute: Option<f64>,
    pub direction: Option<Direction>,
    pub statistic: Option<Spanned<String>>,
    pub enabled: Option<bool>,
}

/// A loaded `gate.toml` plus the compiled user-metric regexes.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub file: GateConfig,
    /// Where it came from (for messages); None when no file exists.
    pub origin: Option<String>,
    /// The reader of each user metric (`metric_sources`), by name.
    pub(crate) user_sources: BTreeMap<String, crate::metric_sources::Reader>,
    /// The file's text, to point rule errors at their line (shared: every
    /// workload of a suite has a copy of the config).
    pub(crate) source_text: std::sync::Arc<str>,
}

impl Config {
    /// Load `path`. A missing file is the empty policy when `required` is
    /// false (the default `gate.toml` need not exist), an error otherwise.
    pub fn load(path: &Path, required: bool) -> Result<Config, GateError> {
        match crate::files::read_input_string(path, crate::limits::MAX_CONFIG_BYTES) {
            Ok(text) => Config::parse(&text, &path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {
                Ok(Config::default())
            }
            Err(e) => Err(GateError::bad_file(
                path,
                format!("cannot read gate config: {e}; pass --config FILE to point at it"),
            )),
        }
    }

    /// The configuration a `--config` flag names (it must exist), else
    /// `./gate.toml` where there is one, else the defaults.
    pub fn from_flag(flag: Option<&Path>) -> Result<Config, GateError> {
        Config::load(flag.unwrap_or(Path::new("gate.toml")), flag.is_some())
    }

    /// Parse the text of a `gate.toml`; `origin` names it in messages.
    pub fn parse(text: &str, origin: &str) -> Result<Config, GateError> {
        let file: GateConfig = toml::from_str(text).map_err(|e| {
            toml_error(
                origin,
                text,
                &e,
                "see the gate.toml reference in docs/gating.md",
            )
        })?;
        let at = |span: std::ops::Range<usize>| {
            let (l, c) = line_col(text, span.start);
            format!("line {l}, column {c}")
        };
        let bad = |msg: String| GateError::bad_file(origin, msg);
        if let Some(t) = file.defaults.threshold {
            check_fraction(t).map_err(|m| bad(format!("[defaults] threshold: {m}")))?;
        }
        if let Some(h) = &file.history {
            h.drift.validate().map_err(bad)?;
        }
        file.accept.validate().map_err(bad)?;
        if let Some(s) = &file.suite {
            s.validate().map_err(bad)?;
        }
        check_overrides(&file, &at).map_err(bad)?;
        let user_sources = readers(&file.user_metrics, &at).map_err(bad)?;
        suite::check_workload_metrics(&file, &at).map_err(bad)?;
        Ok(Config {
            file,
            origin: Some(origin.to_string()),
            user_sources,
            source_text: text.into(),
        })
    }

    /// The active rules: built-in ones plus `[rules]`, with user metrics
    /// usable in conditions. A broken rule is an error naming this file,
    /// the line of the offending field, the rule and the column.
    pub fn rule_set(&self) -> Result<crate::diagnose::RuleSet, GateError> {
        crate::diagnose::RuleSet::builtin()
            .with_user_metrics(self.file.user_metrics.keys().map(|k| k.get_ref().clone()))
            .with_user_rules(&self.file.rules)
            .map_err(|e| {
                let msg = match e {
                    GateError::Usage(m) | GateError::BadFile { message: m, .. } => m,
                    GateError::Infra(m) | GateError::BenchmarkFailed(m) => m,
                };
                let line = rule_line(&self.source_text, &msg)
                    .map(|l| format!("line {l}: "))
                    .unwrap_or_default();
                GateError::bad_file(
                    self.origin.as_deref().unwrap_or("gate.toml"),
                    format!("{line}{msg}"),
                )
            })
    }

    fn metric_override(&self, id: &str) -> Option<&MetricOverride> {
        self.file.metrics.get(id)
    }

    /// The relative floor the user set for every metric (`--threshold`,
    /// then `[defaults] threshold`), if any.
    pub(crate) fn user_default_relative(&self, cli_threshold: Option<f64>) -> Option<f64> {
        cli_threshold.or(self.file.defaults.threshold)
    }

    /// The relative floor of a metric without its own setting: the user's
    /// default, else the evidence-based default of its kind.
    pub(crate) fn default_relative(&self, cli_threshold: Option<f64>, first_class: bool) -> f64 {
        self.user_default_relative(cli_threshold)
            .unwrap_or(if first_class {
                FIRST_CLASS_FLOOR
            } else {
                COUNTER_FLOOR
            })
    }

    /// Effective policy of a catalogue metric or a user metric; None when
    /// the id is neither.
    pub fn policy(&self, id: &str, cli_threshold: Option<f64>) -> Option<Policy> {
        let user_default = self.user_default_relative(cli_threshold).is_some();
        if let Some(def) = metrics::find(id) {
            let o = self.metric_override(id);
            let direction = o.and_then(|o| o.direction).unwrap_or(def.direction);
            let enabled = o.and_then(|o| o.enabled);
            let gated = direction != Direction::Neutral
                && match enabled {
                    Some(e) => e,
                    // A direction set on purpose in gate.toml gates the metric.
                    None => def.gated || o.and_then(|o| o.direction).is_some(),
                };
            let first_class = id == metrics::WALL_TIME.id;
            let (rel, abs) = (o.and_then(|o| o.relative), o.and_then(|o| o.absolute));
            return Some(Policy {
                id: id.to_string(),
                unit: def.unit.to_string(),
                direction,
                statistic: o
                    .and_then(|o| o.statistic.as_ref())
                    .and_then(|s| Statistic::parse(s.get_ref()))
                    .unwrap_or(def.statistic),
                relative: rel.unwrap_or(self.default_relative(cli_threshold, first_class)),
                absolute: abs.unwrap_or(def.abs_tolerance),
                gated,
                first_class,
                explicit: user_default || rel.is_some() || abs.is_some(),
            });
        }
        let u = self.file.user_metrics.get(self.user_table(id)?)?;
        Some(Policy {
            id: id.to_string(),
            unit: u.unit.clone(),
            direction: u.direction,
            // One value per run (the aggregate over matching lines); several
            // runs are averaged like any other per-run statistic.
            statistic: Statistic::Mean,
            relative: u
                .relative
                .unwrap_or(self.default_relative(cli_threshold, true)),
            absolute: u.absolute.unwrap_or(0.0),
            gated: u.direction != Direction::Neutral && u.enabled.unwrap_or(true),
            first_class: true,
            explicit: user_default || u.relative.is_some() || u.absolute.is_some(),
        })
    }

    /// The benchmark's rate of work from its declared numbers (`values`:
    /// this run's user metrics): the first throughput (higher is better),
    /// else one over the first time per unit (lower is better, in s, ms or
    /// us). None when the benchmark declares neither; the rules then say
    /// that "more GPU work per unit of output" cannot be checked.
    pub fn work_rate(&self, values: &BTreeMap<String, f64>) -> Option<f64> {
        let defs = || {
            self.file
                .user_metrics
                .iter()
                .filter(|(_, d)| d.enabled != Some(false))
                .filter_map(|(k, d)| Some((d, *values.get(k.get_ref())?)))
                .filter(|(_, v)| v.is_finite() && *v > 0.0)
        };
        defs()
            .find(|(d, _)| d.direction == Direction::HigherIsBetter)
            .map(|(_, v)| v)
            .or_else(|| {
                defs()
                    .find(|(d, _)| {
                        d.direction == Direction::LowerIsBetter
                            && matches!(d.unit.as_str(), "s" | "ms" | "us")
                    })
                    .map(|(_, v)| 1.0 / v)
            })
    }

    /// Names of the user metrics that are one metric each (not globs), in
    /// file (sorted) order.
    pub fn user_metric_names(&self) -> Vec<String> {
        self.user_sources
            .iter()
            .filter(|(_, r)| !r.is_bulk())
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// `user_metric_names` and the ids among `seen` (a run's or a
    /// baseline's metrics) that a glob table of this file reads
    /// (`TABLE.BENCHMARK`), sorted and without repeats.
    pub(crate) fn user_metric_ids<'a>(
        &self,
        seen: impl IntoIterator<Item = &'a String>,
    ) -> Vec<String> {
        let mut ids = self.user_metric_names();
        let mut bulk: Vec<String> = seen
            .into_iter()
            .filter(|id| !self.user_sources.contains_key(id.as_str()))
            .filter(|id| self.user_table(id).is_some())
            .cloned()
            .collect();
        bulk.sort();
        bulk.dedup();
        ids.extend(bulk);
        ids
    }

    /// The `[user_metrics]` table that defines metric `id`: its own, or the
    /// glob table `TABLE` of a bulk id `TABLE.BENCHMARK`.
    pub(crate) fn user_table<'a>(&'a self, id: &'a str) -> Option<&'a str> {
        if self.user_sources.contains_key(id) {
            return Some(id);
        }
        let (table, _) = id.split_once('.')?;
        self.user_sources
            .get(table)
            .filter(|r| r.is_bulk())
            .map(|_| table)
    }

    /// Where the table of user metric `id` is: `FILE: line L: [user_metrics.T]`,
    /// for messages about a reader that asked for what a file lacks.
    pub(crate) fn user_table_at(&self, id: &str) -> String {
        let table = self.user_table(id).unwrap_or(id);
        let origin = self.origin.as_deref().unwrap_or("gate.toml");
        match self.file.user_metrics.get_key_value(table) {
            Some((k, _)) => format!(
                "{origin}: line {}: [user_metrics.{table}]",
                line_col(&self.source_text, k.span().start).0
            ),
            None => format!("{origin}: [user_metrics.{table}]"),
        }
    }

    /// Whether `id` is one of this file's user metrics (a bulk id too).
    pub(crate) fn is_user_metric(&self, id: &str) -> bool {
        self.user_table(id).is_some()
    }
}

/// `[metrics.<id>]`: each id in the catalogue, its tolerances in range, its
/// statistic known, and a neutral metric not gated without a direction.
fn check_overrides(
    file: &GateConfig,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<(), String> {
    for (id, o) in &file.metrics {
        let Some(def) = metrics::find(id.get_ref()) else {
            return Err(format!(
                "{}: unknown metric '{}' in [metrics]{}; use an id of 'gate metrics' (e.g. sm_active_pct) or define it under [user_metrics]",
                at(id.span()),
                id.get_ref(),
                metrics::did_you_mean(
                    id.get_ref(),
                    file.user_metrics.keys().map(|k| k.get_ref().as_str())
                )
            ));
        };
        if let Some(r) = o.relative {
            check_fraction(r).map_err(|m| {
                format!(
                    "{}: [metrics.{}] relative: {m}",
                    at(id.span()),
                    id.get_ref()
                )
            })?;
        }
        if let Some(a) = o.absolute {
            check_absolute(a).map_err(|m| {
                format!(
                    "{}: [metrics.{}] absolute: {m} in {}",
                    at(id.span()),
                    id.get_ref(),
                    def.unit
                )
            })?;
        }
        if let Some(s) = &o.statistic {
            if Statistic::parse(s.get_ref()).is_none() {
                return Err(format!(
                    "{}: unknown statistic '{}'; use one of mean, p5, p50 (median), p95, p99, min, max",
                    at(s.span()),
                    s.get_ref()
                ));
            }
        }
        let direction = o.direction.unwrap_or(def.direction);
        if o.enabled == Some(true) && direction == Direction::Neutral {
            return Err(format!(
                "{}: [metrics.{}] is neutral (moving either way is not a regression by itself); set direction = \"higher_is_better\" or \"lower_is_better\" to gate it",
                at(id.span()),
                id.get_ref()
            ));
        }
    }
    Ok(())
}

/// Line of the field a rule error is about ("[rules.x] when: ..."), so the
/// user can jump to it: the `field =` line inside the `[rules.x]` table.
fn rule_line(text: &str, msg: &str) -> Option<usize> {
    let rest = msg.strip_prefix("[rules.")?;
    let (name, after) = rest.split_once(']')?;
    let field = after.trim_start().split(':').next()?.trim();
    let header = format!("[rules.{name}]");
    let mut in_table = false;
    let mut header_line = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            in_table = t == header;
            if in_table {
                header_line = Some(i + 1);
            }
            continue;
        }
        if in_table {
            if let Some((key, _)) = t.split_once('=') {
                if key.trim() == field {
                    return Some(i + 1);
                }
            }
        }
    }
    header_line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_catalogue_defaults() {
        let c = Config::parse("", "gate.toml").unwrap();
        let p = c.policy("sm_active_pct", None).unwrap();
        assert!(p.gated);
        assert_eq!(p.statistic, Statistic::Mean);
        assert_eq!(p.relative, COUNTER_FLOOR);
        assert_eq!(p.absolute, 1.0);
        assert!(!p.explicit);
        assert_eq!(
            c.policy("wall_time_s", None).unwrap().relative,
            FIRST_CLASS_FLOOR
        );
        assert!(!c.policy("dram_pct", None).unwrap().gated);
        assert!(c.policy("no_such_metric", None).is_none());
    }

    #[test]
    fn overrides_and_precedence() {
        let text = r#"
[defaults]
threshold = 0.2

[metrics.sm_active_pct]
relative = 0.05
statistic = "median"

[metrics.dram_pct]
direction = "lower_is_better"

[metrics.tensor_pct]
enabled = false
"#;
        let c = Config::parse(text, "gate.toml").unwrap();
        let sm = c.policy("sm_active_pct", Some(0.3)).unwrap();
        assert_eq!(sm.relative, 0.05, "per-metric beats the command line");
        assert_eq!(sm.statistic, Statistic::P50);
        assert_eq!(c.policy("gpu_busy_pct", Some(0.3)).unwrap().relative, 0.3);
        assert_eq!(c.policy("gpu_busy_pct", None).unwrap().relative, 0.2);
        assert!(c.policy("dram_pct", None).unwrap().gated);
        assert!(!c.policy("tensor_pct", None).unwrap().gated);
    }

    #[test]
    fn unknown_key_names_line_and_column() {
        let text = "[defaults]\nthreshold = 0.1\n\n[metrics.sm_active_pct]\nrelativ = 0.05\n";
        let err = Config::parse(text, "gate.toml").unwrap_err().to_string();
        assert!(err.starts_with("gate.toml: line 5, column 1:"), "{err}");
        assert!(err.contains("relativ"), "{err}");
    }

    #[test]
    fn unknown_metric_and_bad_regex_are_located() {
        let err = Config::parse("[metrics.sm_activ_pct]\nrelative = 0.1\n", "g.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 1, column 10"), "{err}");
        assert!(err.contains("sm_activ_pct"), "{err}");
        let err = Config::parse(
            "[user_metrics.tput]\nregex = 'tput: [0-9]+'\ndirection = \"higher_is_better\"\n",
            "g.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("line 2") && err.contains("capture group"),
            "{err}"
        );
        let err = Config::parse("[user_metrics.tput]\nregex = '(x'\n", "g.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("direction"), "{err}");
    }

    #[test]
    fn absurd_tolerances_are_refused_with_the_line() {
        // Issue 9: a user metric's `absolute = inf` (or nan, or -5) was
        // accepted and made a -45 % drop pass.
        for v in ["inf", "nan", "-5.0", "1e308", "-inf"] {
            let text = format!(
                "[user_metrics.tput]\nregex = 'tput: ([0-9.]+)'\ndirection = \"higher_is_better\"\nabsolute = {v}\n"
            );
            let err = Config::parse(&text, "g.toml").unwrap_err().to_string();
            assert!(
                err.starts_with("g.toml: line 1, column 15: [user_metrics.tput] absolute:"),
                "{v}: {err}"
            );
            let text = format!("[metrics.sm_active_pct]\nabsolute = {v}\n");
            let err = Config::parse(&text, "g.toml").unwrap_err().to_string();
            assert!(
                err.contains("[metrics.sm_active_pct] absolute:"),
                "{v}: {err}"
            );
        }
        for v in ["inf", "nan", "-0.1", "11.0"] {
            let err = Config::parse(&format!("[defaults]\nthreshold = {v}\n"), "g.toml")
                .unwrap_err()
                .to_string();
            assert!(err.contains("threshold"), "{v}: {err}");
        }
        assert!(Config::parse("[metrics.sm_active_pct]\nabsolute = 2.5\n", "g.toml").is_ok());
    }

    #[test]
    fn neutral_metric_cannot_be_enabled_without_a_direction() {
        let err = Config::parse("[metrics.power_w]\nenabled = true\n", "g.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("neutral"), "{err}");
    }

    #[test]
    fn rules_table_is_kept_raw() {
        let c = Config::parse(
            "[rules.launch_storm]\nthreshold = 3\n[rules.x]\nwhen = 'a > b'\n",
            "g.toml",
        )
        .unwrap();
        assert_eq!(c.file.rules.len(), 2);
    }
}
