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
//! `--threshold`, then `[defaults].threshold`, then 0.10. The most specific
//! setting wins: a flag on the command line loosens or tightens the default,
//! not a limit someone chose for one metric on purpose.
//!
//! Unknown keys, unknown metric ids, bad regexes and wrong types are errors
//! (exit 2) naming the file, line and column, never silently ignored: a typo
//! in a gate's policy must not turn into a gate that checks nothing.

use crate::error::GateError;
use crate::metrics::{self, Direction, Statistic};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use toml::Spanned;

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
    /// (`HistoryConfig` below; `history` uses it).
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
    pub suite: Option<SuiteConfig>,
}

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
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    pub warmup: Option<String>,
    pub duration: Option<String>,
    pub warmup_until: Option<String>,
    /// The workload's end-of-timed-section marker (`--until`).
    pub until: Option<String>,
    pub metrics_file: Option<String>,
    /// The `[user_metrics]` tables this workload produces; None: those no
    /// other workload names (`Config::for_workload`).
    pub metrics: Option<Vec<Spanned<String>>>,
}

impl SuiteConfig {
    /// Names and baselines valid and unique, commands not empty.
    fn validate(&self) -> Result<(), String> {
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

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserSource {
    /// Lines the benchmark printed on stdout (the trace's `output` records).
    #[default]
    Stdout,
    /// The text of `--metrics-file` stored in the trace's end record.
    MetricsFile,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    #[default]
    Mean,
    Median,
    Last,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserMetricDef {
    /// How the number is read (`metric_sources::Format`); `regex` by default.
    #[serde(default)]
    pub format: crate::metric_sources::Format,
    /// `format = "regex"`: a regular expression with exactly one capture
    /// group, the number.
    pub regex: Option<Spanned<String>>,
    /// `format = "json"`: an RFC 6901 pointer to the number (`/a/b/0`).
    pub pointer: Option<String>,
    /// `pytest_benchmark`: a benchmark's `name` or `fullname`; `bmf`: the
    /// benchmark's key.
    pub benchmark: Option<String>,
    /// `bmf`: the measure's key.
    pub measure: Option<String>,
    /// `pytest_benchmark`: a key of `stats` (default `mean`); `bmf`:
    /// `value` (default), `lower_value` or `upper_value`.
    pub stat: Option<String>,
    /// `mlperf_summary`: the summary line read (default `Samples per second`).
    pub field: Option<String>,
    #[serde(default)]
    pub source: UserSource,
    /// Required: whether more is better depends on the number (throughput vs latency).
    pub direction: Direction,
    #[serde(default)]
    pub unit: String,
    pub relative: Option<f64>,
    pub absolute: Option<f64>,
    #[serde(default)]
    pub aggregate: Aggregate,
    pub enabled: Option<bool>,
    /// A run may lack this number (it is then judged without it); by
    /// default a declared number that was not read fails the run.
    #[serde(default)]
    pub optional: bool,
}

/// The effective gating policy of one metric after all overrides.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub id: String,
    pub unit: String,
    pub direction: Direction,
    pub statistic: Statistic,
    /// Fraction of the baseline value.
    pub relative: f64,
    /// In the metric's unit.
    pub absolute: f64,
    /// Judged (can fail the run) rather than only reported.
    pub gated: bool,
    /// Numbers of the benchmark itself (wall time, user metrics): listed first.
    pub first_class: bool,
    /// The user set this metric's floor (gate.toml, `--threshold`): it then
    /// decides alone where no noise estimate exists (`gate::decide`).
    pub explicit: bool,
}

/// A loaded `gate.toml` plus the compiled user-metric regexes.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub file: GateConfig,
    /// Where it came from (for messages); None when no file exists.
    pub origin: Option<String>,
    /// The reader of each user metric (`metric_sources`), by name.
    pub user_sources: BTreeMap<String, crate::metric_sources::Reader>,
    /// The file's text, to point rule errors at their line.
    pub source_text: String,
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
        for (id, o) in &file.metrics {
            let Some(def) = metrics::find(id.get_ref()) else {
                return Err(bad(format!(
                    "{}: unknown metric '{}' in [metrics]{}; use an id of 'gate metrics' (e.g. sm_active_pct) or define it under [user_metrics]",
                    at(id.span()),
                    id.get_ref(),
                    metrics::did_you_mean(
                        id.get_ref(),
                        file.user_metrics.keys().map(|k| k.get_ref().as_str())
                    )
                )));
            };
            if let Some(r) = o.relative {
                check_fraction(r).map_err(|m| {
                    bad(format!(
                        "{}: [metrics.{}] relative: {m}",
                        at(id.span()),
                        id.get_ref()
                    ))
                })?;
            }
            if let Some(a) = o.absolute {
                check_absolute(a).map_err(|m| {
                    bad(format!(
                        "{}: [metrics.{}] absolute: {m} in {}",
                        at(id.span()),
                        id.get_ref(),
                        def.unit
                    ))
                })?;
            }
            if let Some(s) = &o.statistic {
                if Statistic::parse(s.get_ref()).is_none() {
                    return Err(bad(format!(
                        "{}: unknown statistic '{}'; use one of mean, p5, p50 (median), p95, p99, min, max",
                        at(s.span()),
                        s.get_ref()
                    )));
                }
            }
            let direction = o.direction.unwrap_or(def.direction);
            if o.enabled == Some(true) && direction == Direction::Neutral {
                return Err(bad(format!(
                    "{}: [metrics.{}] is neutral (moving either way is not a regression by itself); set direction = \"higher_is_better\" or \"lower_is_better\" to gate it",
                    at(id.span()),
                    id.get_ref()
                )));
            }
        }
        let mut user_sources = BTreeMap::new();
        for (name, u) in &file.user_metrics {
            if metrics::find(name.get_ref()).is_some() {
                return Err(bad(format!(
                    "{}: user metric '{}' has the name of a built-in metric; rename it",
                    at(name.span()),
                    name.get_ref()
                )));
            }
            // No '.': a glob table's metrics are named TABLE.BENCHMARK.
            if !valid_name(name.get_ref()) || name.get_ref().contains('.') {
                return Err(bad(format!(
                    "{}: user metric name '{}' may only use letters, digits and '_'",
                    at(name.span()),
                    name.get_ref()
                )));
            }
            // A unit is a short label printed beside every value: no
            // control characters, line breaks or bidi overrides in it.
            if u.unit.chars().count() > 32 || u.unit.chars().any(crate::escape::is_hostile) {
                return Err(bad(format!(
                    "{}: [user_metrics.{}] unit {:?} must be a short label (at most 32 characters, no control characters), e.g. \"1/s\"",
                    at(name.span()),
                    name.get_ref(),
                    u.unit
                )));
            }
            let reader = user_reader(name.get_ref(), u, &at(name.span()), &at).map_err(bad)?;
            if let Some(r) = u.relative {
                check_fraction(r).map_err(|m| {
                    bad(format!(
                        "{}: [user_metrics.{}] relative: {m}",
                        at(name.span()),
                        name.get_ref()
                    ))
                })?;
            }
            // `absolute = inf` (or nan, or -5) made a -45 % drop pass.
            if let Some(a) = u.absolute {
                check_absolute(a).map_err(|m| {
                    bad(format!(
                        "{}: [user_metrics.{}] absolute: {m}",
                        at(name.span()),
                        name.get_ref()
                    ))
                })?;
            }
            user_sources.insert(name.get_ref().clone(), reader);
        }
        check_workload_metrics(&file, &at).map_err(bad)?;
        Ok(Config {
            file,
            origin: Some(origin.to_string()),
            user_sources,
            source_text: text.to_string(),
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
    pub fn user_default_relative(&self, cli_threshold: Option<f64>) -> Option<f64> {
        cli_threshold.or(self.file.defaults.threshold)
    }

    /// The relative floor of a metric without its own setting: the user's
    /// default, else the evidence-based default of its kind.
    pub fn default_relative(&self, cli_threshold: Option<f64>, first_class: bool) -> f64 {
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
    pub fn user_metric_ids<'a>(&self, seen: impl IntoIterator<Item = &'a String>) -> Vec<String> {
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
    pub fn user_table<'a>(&'a self, id: &'a str) -> Option<&'a str> {
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
    pub fn user_table_at(&self, id: &str) -> String {
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
    pub fn is_user_metric(&self, id: &str) -> bool {
        self.user_table(id).is_some()
    }

    /// A user metric that a run may lack (`optional = true`).
    pub fn is_optional(&self, id: &str) -> bool {
        self.user_table(id)
            .and_then(|t| self.file.user_metrics.get(t))
            .is_some_and(|u| u.optional)
    }

    /// This policy as one suite workload sees it: only the user metrics it
    /// names in `metrics = [...]`, or, when it names none, those that no
    /// other workload of the suite names. A workload is never judged or
    /// warned on another's number.
    pub fn for_workload(&self, name: &str) -> Config {
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
        let mut c = self.clone();
        c.file.user_metrics.retain(|k, _| keep(k.get_ref()));
        c.user_sources.retain(|k, _| keep(k));
        c
    }
}

/// Each `metrics = [...]` of a `[[suite.workload]]` names a
/// `[user_metrics]` table, at most once in the suite.
fn check_workload_metrics(
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
                    .map(|t| (crate::diagnose::dsl::levenshtein(name, t), *t))
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

/// Validate one `[user_metrics.NAME]` table into its reader: the keys its
/// `format` needs, none it would ignore, and a source that can carry it.
fn user_reader(
    name: &str,
    u: &UserMetricDef,
    name_at: &str,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<crate::metric_sources::Reader, String> {
    use crate::metric_sources::{
        Format, Pattern, Reader, BMF_STATS, GOOGLE_DEFAULT_STAT, MLPERF_DEFAULT_FIELD,
        NVBENCH_DEFAULT_STAT, PYTEST_STATS,
    };
    let format = u.format;
    // Messages about the table point at its name; the regex's at the regex.
    let table = format!("{name_at}: [user_metrics.{name}]");
    // Keys another format reads: set here they would be ignored.
    // `benchmark` and `stat` belong to every harness format.
    let harness = if format.has_benchmarks() {
        format
    } else {
        Format::PytestBenchmark
    };
    let given = [
        ("regex", u.regex.is_some(), Format::Regex),
        ("pointer", u.pointer.is_some(), Format::Json),
        ("benchmark", u.benchmark.is_some(), harness),
        ("measure", u.measure.is_some(), Format::Bmf),
        ("stat", u.stat.is_some(), harness),
        ("field", u.field.is_some(), Format::MlperfSummary),
    ];
    for (key, set, owner) in given {
        if set && owner != format {
            return Err(format!(
                "{table}: '{key}' belongs to format = \"{}\", this table has format = \"{}\"; remove it or set the format",
                owner.as_str(),
                format.as_str()
            ));
        }
    }
    if format.file_only() && u.source != UserSource::MetricsFile {
        return Err(format!(
            "{table}: format = \"{}\" reads a whole file: set source = \"metrics_file\" and run the benchmark with --metrics-file FILE",
            format.as_str()
        ));
    }
    let need = |key: &str, v: &Option<String>, example: &str| {
        v.clone().filter(|s| !s.is_empty()).ok_or_else(|| {
            format!(
                "{table}: format = \"{}\" needs {key}, e.g. {key} = \"{example}\"",
                format.as_str()
            )
        })
    };
    let one_of = |key: &str, v: String, allowed: &[&str]| {
        if allowed.contains(&v.as_str()) {
            Ok(v)
        } else {
            Err(format!(
                "{table}: {key} = {v:?} is not one of {}",
                allowed.join(", ")
            ))
        }
    };
    Ok(match format {
        Format::Regex => {
            let Some(regex) = &u.regex else {
                return Err(format!(
                    "{table}: needs regex = '...' with one capture group around the number (or another format: json, pytest_benchmark, mlperf_summary, bmf, google_benchmark, nvbench)"
                ));
            };
            let re = regex::Regex::new(regex.get_ref()).map_err(|e| {
                format!(
                    "{}: [user_metrics.{name}] regex does not compile: {}",
                    at(regex.span()),
                    e.to_string().replace('\n', " ")
                )
            })?;
            if re.captures_len() != 2 {
                return Err(format!(
                    "{}: [user_metrics.{name}] regex needs exactly one capture group around the number, e.g. 'samples_per_s: ([0-9.eE+-]+)'",
                    at(regex.span())
                ));
            }
            Reader::Regex(re)
        }
        Format::Json => {
            let pointer = need("pointer", &u.pointer, "/throughput")?;
            if !pointer.starts_with('/') {
                return Err(format!(
                    "{table}: pointer {pointer:?} is not a JSON pointer (RFC 6901); start it with '/', e.g. \"/{pointer}\""
                ));
            }
            Reader::Json { pointer }
        }
        Format::PytestBenchmark => Reader::PytestBenchmark {
            benchmark: Pattern::new(&need("benchmark", &u.benchmark, "test_forward")?),
            stat: one_of(
                "stat",
                u.stat.clone().unwrap_or_else(|| "mean".into()),
                PYTEST_STATS,
            )?,
        },
        Format::MlperfSummary => Reader::MlperfSummary {
            field: u
                .field
                .clone()
                .unwrap_or_else(|| MLPERF_DEFAULT_FIELD.into()),
        },
        Format::Bmf => Reader::Bmf {
            benchmark: Pattern::new(&need("benchmark", &u.benchmark, "resnet50_train")?),
            measure: need("measure", &u.measure, "throughput")?,
            stat: one_of(
                "stat",
                u.stat.clone().unwrap_or_else(|| "value".into()),
                BMF_STATS,
            )?,
        },
        Format::GoogleBenchmark => Reader::GoogleBenchmark {
            benchmark: Pattern::new(&need("benchmark", &u.benchmark, "BM_Sort/4096")?),
            stat: u.stat.clone().unwrap_or_else(|| GOOGLE_DEFAULT_STAT.into()),
        },
        Format::Nvbench => Reader::Nvbench {
            benchmark: Pattern::new(&need("benchmark", &u.benchmark, "copy/Device=0")?),
            stat: u
                .stat
                .clone()
                .unwrap_or_else(|| NVBENCH_DEFAULT_STAT.into()),
        },
    })
}

/// An absolute tolerance: a finite number from 0 to
/// `limits::MAX_ABS_VALUE` (beyond it a tolerance waves everything through).
fn check_absolute(v: f64) -> Result<(), String> {
    if v.is_finite() && (0.0..=crate::limits::MAX_ABS_VALUE).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "{v} is not a tolerance; use a number from 0 to {:e} (the metric's unit)",
            crate::limits::MAX_ABS_VALUE
        ))
    }
}

fn check_fraction(v: f64) -> Result<(), String> {
    if v.is_finite() && (0.0..=10.0).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "{v} is not a fraction; write 0.10 for 10 % (0 to 10 allowed)"
        ))
    }
}

/// Names that are safe as a file stem, a JUnit classname part and an
/// OpenMetrics name part.
pub fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        && !s.starts_with('.')
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let mut cut = offset;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let before = &text[..cut];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    (line, before[line_start..].chars().count() + 1)
}

/// A one-line error for a TOML parse/deserialize failure: `origin: line L,
/// column C: message; fix`.
pub fn toml_error(origin: &str, text: &str, e: &toml::de::Error, fix: &str) -> GateError {
    let message = e.message().trim().replace('\n', " ");
    let location = match e.span() {
        Some(span) => {
            let (l, c) = line_col(text, span.start);
            format!("line {l}, column {c}: ")
        }
        None => String::new(),
    };
    GateError::bad_file(origin, format!("{location}{message}; {fix}"))
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

// ----------------------------------------------------------------- [accept]
// How far a change may acknowledge its own regressions (`accept` applies it).

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
pub fn check_pct(v: f64) -> Result<(), String> {
    if v.is_finite() && (0.0..=1000.0).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "{v} is not a percentage; write 15 for 15 % (0 to 1000)"
        ))
    }
}

// ---------------------------------------------------------------- [history]
// The schema of gate.toml's `[history]` tables lives here with the rest of
// the file's schema; `history` reads it (config does not depend on history).

/// Fewest runs a drift window may hold (`history::drift` judges no fewer).
pub const DRIFT_MIN_RUNS: usize = 5;

/// Reruns a live `check` makes by default when the decisive metric moved
/// the bad way inside the noise (`--max-reruns`, `[verdict] max_reruns`).
pub const DEFAULT_MAX_RERUNS: usize = 2;

/// What an inconclusive run (a bad move the noise left open) exits with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InconclusiveExit {
    /// Exit 4 (`exit_code::INCONCLUSIVE`): not green.
    #[default]
    Fail,
    /// Exit 0, still reported as inconclusive.
    Pass,
}

/// Settings of `[verdict]` in gate.toml.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictConfig {
    #[serde(default)]
    pub inconclusive: InconclusiveExit,
    /// Reruns of a live check (default `DEFAULT_MAX_RERUNS`).
    pub max_reruns: Option<usize>,
}

/// Settings of `[compare]` in gate.toml.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareConfig {
    /// A run of another benchmark (program, script, or a tag of `tags`)
    /// than the baseline's is only warned about, not refused.
    #[serde(default)]
    pub allow_command_change: bool,
    /// Tags that name the benchmark: a different value is another
    /// benchmark (`gate::comparable`).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Other arguments or tags than the baseline's: warn (default) or refuse.
    #[serde(default)]
    pub arguments: ArgumentsPolicy,
}

/// `[compare] arguments`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgumentsPolicy {
    /// Judged, with a warning naming the differences (seeds, paths).
    #[default]
    Warn,
    /// Not comparable, like another benchmark.
    Refuse,
}

/// Settings of `[history]` in gate.toml.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryConfig {
    /// `sqlite:PATH`, a path, or `postgres://...` (better: `url_env`, so no
    /// password sits in the repository).
    pub url: Option<String>,
    /// Name of an environment variable holding the URL (a CI secret).
    pub url_env: Option<String>,
    /// A database that cannot be written fails the command (exit 3) instead
    /// of a warning. Same as `--history-required`.
    #[serde(default)]
    pub required: bool,
    /// Drift detection settings.
    #[serde(default)]
    pub drift: DriftConfig,
}

/// `[history.drift]` in gate.toml.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriftConfig {
    /// Judge drift at all (with history).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// A drift finding fails the run (exit 1) instead of a warning.
    #[serde(default)]
    pub fail: bool,
    /// How many recent runs (this one included) are judged together.
    #[serde(default = "default_window")]
    pub window: usize,
    /// The recent level must be worse by at least this share of the
    /// metric's tolerance.
    #[serde(default = "default_min_share")]
    pub min_share: f64,
}

fn yes() -> bool {
    true
}
fn default_window() -> usize {
    20
}
fn default_min_share() -> f64 {
    0.5
}

impl Default for DriftConfig {
    fn default() -> Self {
        DriftConfig {
            enabled: true,
            fail: false,
            window: default_window(),
            min_share: default_min_share(),
        }
    }
}

impl DriftConfig {
    /// One line naming the bad setting, or Ok.
    pub fn validate(&self) -> Result<(), String> {
        if self.window < DRIFT_MIN_RUNS || self.window > 10_000 {
            return Err(format!(
                "[history.drift] window = {}: give a number of runs between {DRIFT_MIN_RUNS} and 10000 (default 20)",
                self.window
            ));
        }
        if !(self.min_share.is_finite() && (0.0..=10.0).contains(&self.min_share)) {
            return Err(format!(
                "[history.drift] min_share = {}: give a fraction of the tolerance, e.g. 0.5",
                self.min_share
            ));
        }
        Ok(())
    }
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

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\ncé d", 7), (2, 4));
        assert_eq!(line_col("x", 0), (1, 1));
    }
}
