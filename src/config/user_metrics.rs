//! `[user_metrics.NAME]` of gate.toml: the numbers the benchmark prints
//! itself, each table's keys (`UserMetricDef`, where the number is read
//! and how its lines are aggregated) and their validation into the reader
//! that reads it (`Reader`).

use crate::metric_sources::{
    Format, Pattern, Reader, BMF_STATS, GOOGLE_DEFAULT_STAT, MLPERF_DEFAULT_FIELD,
    NVBENCH_DEFAULT_STAT, PYTEST_STATS,
};
use crate::metrics::{self, Direction};
use crate::validate::{check_absolute, check_fraction, valid_name};
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

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
    pub format: Format,
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
    /// Markers of each benchmark's span in the benchmark's stdout: a
    /// regular expression with a group named `name` (`metric_sources::spans`).
    pub spans: Option<Spanned<String>>,
}

impl UserMetricDef {
    /// The `spans` markers, compiled (validated when gate.toml loads).
    pub fn spans_regex(&self) -> Option<regex::Regex> {
        regex::Regex::new(self.spans.as_ref()?.get_ref()).ok()
    }
}

/// Validate every `[user_metrics]` table into its reader, by name: a name
/// of its own (not a built-in metric's), a short unit, the keys its format
/// needs, and tolerances in range.
pub fn readers(
    tables: &BTreeMap<Spanned<String>, UserMetricDef>,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<BTreeMap<String, Reader>, String> {
    let mut user_sources = BTreeMap::new();
    for (name, u) in tables {
        if metrics::find(name.get_ref()).is_some() {
            return Err(format!(
                "{}: user metric '{}' has the name of a built-in metric; rename it",
                at(name.span()),
                name.get_ref()
            ));
        }
        // No '.': a glob table's metrics are named TABLE.BENCHMARK.
        if !valid_name(name.get_ref()) || name.get_ref().contains('.') {
            return Err(format!(
                "{}: user metric name '{}' may only use letters, digits and '_'",
                at(name.span()),
                name.get_ref()
            ));
        }
        // A unit is a short label printed beside every value: no
        // control characters, line breaks or bidi overrides in it.
        if u.unit.chars().count() > 32 || u.unit.chars().any(crate::escape::is_hostile) {
            return Err(format!(
                "{}: [user_metrics.{}] unit {:?} must be a short label (at most 32 characters, no control characters), e.g. \"1/s\"",
                at(name.span()),
                name.get_ref(),
                u.unit
            ));
        }
        let reader = user_reader(name.get_ref(), u, &at(name.span()), &at)?;
        if let Some(spans) = &u.spans {
            check_spans(name.get_ref(), spans, &at)?;
        }
        if let Some(r) = u.relative {
            check_fraction(r).map_err(|m| {
                format!(
                    "{}: [user_metrics.{}] relative: {m}",
                    at(name.span()),
                    name.get_ref()
                )
            })?;
        }
        // `absolute = inf` (or nan, or -5) made a -45 % drop pass.
        if let Some(a) = u.absolute {
            check_absolute(a).map_err(|m| {
                format!(
                    "{}: [user_metrics.{}] absolute: {m}",
                    at(name.span()),
                    name.get_ref()
                )
            })?;
        }
        user_sources.insert(name.get_ref().clone(), reader);
    }
    Ok(user_sources)
}

/// `spans = REGEX`: it compiles and names each span with a group `name`.
fn check_spans(
    name: &str,
    spans: &Spanned<String>,
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<(), String> {
    let re = regex::Regex::new(spans.get_ref()).map_err(|e| {
        format!(
            "{}: [user_metrics.{name}] spans does not compile: {}",
            at(spans.span()),
            e.to_string().replace('\n', " ")
        )
    })?;
    if !re.capture_names().any(|n| n == Some("name")) {
        return Err(format!(
            "{}: [user_metrics.{name}] spans needs a group named 'name' that names the benchmark, e.g. spans = '^=== bench (?P<name>\\S+)'",
            at(spans.span())
        ));
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
) -> Result<Reader, String> {
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
