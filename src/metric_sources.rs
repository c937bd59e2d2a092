//! Where a benchmark's own number (gate.toml `[user_metrics.NAME]`) is read
//! from: the formats teams already write. Owns the readers; `config`
//! validates the table into a `Reader`, `summary` applies it to a trace's
//! stdout lines or to the metrics file embedded in its end record.
//!
//! | `format` | reads | from |
//! |---|---|---|
//! | `regex` (default) | the one capture group of `regex` | each stdout line, or each line of the metrics file |
//! | `json` | the RFC 6901 pointer `pointer` | each stdout line that is a JSON document, or the metrics file (one document, or JSON lines) |
//! | `pytest_benchmark` | `benchmarks[name or fullname = benchmark].stats[stat]` | pytest-benchmark's `--benchmark-json` file |
//! | `mlperf_summary` | the line `field : value`; `Result is : INVALID` fails the run | MLPerf LoadGen's `mlperf_log_summary.txt` |
//! | `bmf` | `[benchmark][measure][stat]` (`value`, `lower_value`, `upper_value`) | Bencher Metric Format JSON |
//!
//! A file is read once, at the end of the run: its number is one value per
//! run (like `aggregate = "last"`), with no within-run interval; several
//! runs give the noise. Lines of stdout are many values per run and are
//! aggregated (`mean`, `median`, `last`) like before.
//!
//! Format references: pytest-benchmark's JSON is what `pytest
//! --benchmark-json=FILE` writes (pytest-benchmark 4.0, `stats` keys min,
//! max, mean, stddev, median, iqr, q1, q3, ops, rounds...); LoadGen's summary
//! is written by mlcommons/inference `loadgen/results.cc` as `key : value`
//! lines; BMF is documented at bencher.dev/docs/reference/bencher-metric-format.

use serde::Deserialize;

/// `format` of a `[user_metrics.NAME]` table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    #[default]
    Regex,
    Json,
    PytestBenchmark,
    MlperfSummary,
    Bmf,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Regex => "regex",
            Format::Json => "json",
            Format::PytestBenchmark => "pytest_benchmark",
            Format::MlperfSummary => "mlperf_summary",
            Format::Bmf => "bmf",
        }
    }

    /// Formats that are whole files, never stdout lines.
    pub fn file_only(self) -> bool {
        matches!(
            self,
            Format::PytestBenchmark | Format::MlperfSummary | Format::Bmf
        )
    }
}

/// The `stats` keys pytest-benchmark writes (numbers only).
pub const PYTEST_STATS: &[&str] = &[
    "min",
    "max",
    "mean",
    "stddev",
    "median",
    "iqr",
    "q1",
    "q3",
    "ld15iqr",
    "hd15iqr",
    "ops",
    "total",
    "rounds",
    "iterations",
];
/// The number keys of a BMF measure.
pub const BMF_STATS: &[&str] = &["value", "lower_value", "upper_value"];
/// The LoadGen line `mlperf_summary` reads by default (Offline scenario).
pub const MLPERF_DEFAULT_FIELD: &str = "Samples per second";

/// A validated reader of one user metric.
#[derive(Debug, Clone)]
pub enum Reader {
    Regex(regex::Regex),
    Json {
        pointer: String,
    },
    PytestBenchmark {
        benchmark: String,
        stat: String,
    },
    MlperfSummary {
        field: String,
    },
    Bmf {
        benchmark: String,
        measure: String,
        stat: String,
    },
}

/// What a whole file gave: the values, why none, and whether the file
/// says the run itself is invalid (LoadGen's `Result is : INVALID`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileReading {
    pub values: Vec<f64>,
    /// Why no value was read (bad JSON, benchmark not in the file...).
    pub problem: Option<String>,
    /// The file's own verdict that the run is not valid, with its reasons.
    pub invalid: Option<String>,
}

impl Reader {
    pub fn format(&self) -> Format {
        match self {
            Reader::Regex(_) => Format::Regex,
            Reader::Json { .. } => Format::Json,
            Reader::PytestBenchmark { .. } => Format::PytestBenchmark,
            Reader::MlperfSummary { .. } => Format::MlperfSummary,
            Reader::Bmf { .. } => Format::Bmf,
        }
    }

    /// One line of stdout: its number, if the line carries one.
    pub fn line_value(&self, line: &str) -> Option<f64> {
        match self {
            Reader::Regex(re) => re
                .captures(line)
                .and_then(|c| c.get(1))
                .and_then(|m| m.as_str().trim().parse::<f64>().ok())
                .filter(|v| v.is_finite()),
            Reader::Json { pointer } => {
                let t = line.trim();
                if !(t.starts_with('{') || t.starts_with('[')) {
                    return None;
                }
                let doc: serde_json::Value = serde_json::from_str(t).ok()?;
                number(doc.pointer(pointer)?)
            }
            // Whole-file formats are refused for stdout by `config`.
            _ => None,
        }
    }

    /// The text of the metrics file.
    pub fn read_file(&self, text: &str) -> FileReading {
        match self {
            Reader::Regex(_) => FileReading {
                values: text.lines().filter_map(|l| self.line_value(l)).collect(),
                ..FileReading::default()
            },
            Reader::Json { pointer } => read_json_file(text, pointer),
            Reader::PytestBenchmark { benchmark, stat } => read_pytest(text, benchmark, stat),
            Reader::MlperfSummary { field } => read_mlperf(text, field),
            Reader::Bmf {
                benchmark,
                measure,
                stat,
            } => read_bmf(text, benchmark, measure, stat),
        }
    }
}

/// Whether a number in `unit` can never be negative: a time (`s`, `ms`,
/// `us`, `µs`, `ns`, `min`, `h`) or a rate (`.../s`, `1/s`).
pub fn never_negative(unit: &str) -> bool {
    let u = unit.trim();
    matches!(u, "s" | "ms" | "us" | "µs" | "ns" | "min" | "h") || u.ends_with("/s")
}

/// The first few of `names`, and how many more: a file of 12,000
/// benchmarks must not be copied into a one-line message.
fn some_names<S: AsRef<str>>(names: &[S]) -> String {
    const SHOWN: usize = 10;
    let mut text = names
        .iter()
        .take(SHOWN)
        .map(|n| n.as_ref())
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// A finite JSON number (a numeric string too: some tools quote numbers).
fn number(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|x: &f64| x.is_finite())
}

fn problem(text: String) -> FileReading {
    FileReading {
        problem: Some(text),
        ..FileReading::default()
    }
}

fn parse_json(text: &str, what: &str) -> Result<serde_json::Value, FileReading> {
    serde_json::from_str(text).map_err(|e| problem(format!("the metrics file is not {what}: {e}")))
}

/// One JSON document, or JSON lines (each line a document).
fn read_json_file(text: &str, pointer: &str) -> FileReading {
    let values: Vec<f64> = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(doc) => doc.pointer(pointer).and_then(number).into_iter().collect(),
        Err(_) => text
            .lines()
            .filter_map(|l| {
                Reader::Json {
                    pointer: pointer.to_string(),
                }
                .line_value(l)
            })
            .collect(),
    };
    if values.is_empty() {
        return problem(format!(
            "no number at JSON pointer '{pointer}' in the metrics file"
        ));
    }
    FileReading {
        values,
        ..FileReading::default()
    }
}

fn read_pytest(text: &str, benchmark: &str, stat: &str) -> FileReading {
    let doc = match parse_json(text, "pytest-benchmark JSON") {
        Ok(d) => d,
        Err(r) => return r,
    };
    let Some(list) = doc.get("benchmarks").and_then(|b| b.as_array()) else {
        return problem(
            "the metrics file has no 'benchmarks' list; write it with pytest --benchmark-json=FILE"
                .into(),
        );
    };
    let name_of = |b: &serde_json::Value, key: &str| {
        b.get(key)
            .and_then(|n| n.as_str())
            .map(str::to_string)
            .unwrap_or_default()
    };
    let named = |b: &&serde_json::Value| {
        name_of(b, "name") == benchmark || name_of(b, "fullname") == benchmark
    };
    let twins = list.iter().filter(named).count();
    let Some(bench) = list.iter().find(named) else {
        let names: Vec<String> = list.iter().map(|b| name_of(b, "name")).collect();
        return problem(format!(
            "benchmark '{benchmark}' is not in the pytest-benchmark file (it has: {})",
            some_names(&names)
        ));
    };
    match bench.pointer(&format!("/stats/{stat}")).and_then(number) {
        // Every pytest-benchmark stat is a time, a count or a rate.
        Some(v) if v < 0.0 => FileReading {
            invalid: Some(format!(
                "benchmark '{benchmark}' has stats.{stat} = {v} in the pytest-benchmark file; no time or rate is negative"
            )),
            ..FileReading::default()
        },
        Some(v) => FileReading {
            values: vec![v],
            // Not chosen by file order without a word.
            problem: (twins > 1).then(|| format!(
                "benchmark '{benchmark}' appears {twins} times in the pytest-benchmark file; the first is used: name it by its unique fullname"
            )),
            ..FileReading::default()
        },
        None => problem(format!(
            "benchmark '{benchmark}' has no number stats.{stat} in the pytest-benchmark file"
        )),
    }
}

/// `key : value` lines of LoadGen's summary (the first occurrence wins: the
/// summary section comes before the test parameters).
fn read_mlperf(text: &str, field: &str) -> FileReading {
    let mut value = None;
    let mut result = None;
    let mut unmet = Vec::new();
    for line in text.lines() {
        let Some((key, val)) = line.split_once(':') else {
            continue;
        };
        let (key, val) = (key.trim(), val.trim());
        if key.eq_ignore_ascii_case(field) && value.is_none() {
            value = val.parse::<f64>().ok().filter(|v| v.is_finite());
        }
        // Matched as LoadGen's readers would be lenient: any case, any
        // spacing (`result  is : INVALID` is INVALID too).
        let words: Vec<&str> = key.split_whitespace().collect();
        if words.len() == 2
            && words[0].eq_ignore_ascii_case("result")
            && words[1].eq_ignore_ascii_case("is")
            && result.is_none()
        {
            result = Some(val.to_string());
        }
        if key.ends_with("satisfied") && val.eq_ignore_ascii_case("no") {
            unmet.push(format!("{key}: NO"));
        }
    }
    let invalid = result
        .filter(|r| !r.eq_ignore_ascii_case("VALID"))
        .map(|r| {
            let why = if unmet.is_empty() {
                String::new()
            } else {
                format!(" ({})", unmet.join("; "))
            };
            format!("MLPerf LoadGen says 'Result is : {r}'{why}")
        });
    FileReading {
        problem: value
            .is_none()
            .then(|| format!("no line '{field} : NUMBER' in the MLPerf LoadGen summary")),
        values: value.into_iter().collect(),
        invalid,
    }
}

fn read_bmf(text: &str, benchmark: &str, measure: &str, stat: &str) -> FileReading {
    let doc = match parse_json(text, "Bencher Metric Format JSON") {
        Ok(d) => d,
        Err(r) => return r,
    };
    let Some(b) = doc.get(benchmark) else {
        let names: Vec<&String> = doc
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        return problem(format!(
            "benchmark '{benchmark}' is not in the BMF file (it has: {})",
            some_names(&names)
        ));
    };
    match b.get(measure).and_then(|m| m.get(stat)).and_then(number) {
        Some(v) => FileReading {
            values: vec![v],
            ..FileReading::default()
        },
        None => problem(format!(
            "the BMF file has no number {benchmark}.{measure}.{stat}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR")))
            .unwrap()
    }

    #[test]
    fn json_pointer_reads_stdout_lines_and_files() {
        let r = Reader::Json {
            pointer: "/train/samples_per_s".into(),
        };
        assert_eq!(
            r.line_value(r#"{"step": 10, "train": {"samples_per_s": 2750.5}}"#),
            Some(2750.5)
        );
        assert_eq!(r.line_value("step 10 loss 2.3"), None, "not JSON");
        assert_eq!(r.line_value(r#"{"train": {}}"#), None, "pointer absent");
        assert_eq!(
            r.read_file("{\"train\": {\"samples_per_s\": 1}}\n").values,
            vec![1.0]
        );
        // JSON lines: every line that has the number.
        let lines =
            "{\"train\":{\"samples_per_s\":1}}\n{\"x\":2}\n{\"train\":{\"samples_per_s\":3}}\n";
        assert_eq!(r.read_file(lines).values, vec![1.0, 3.0]);
        let bad = r.read_file("{\"y\": 1}");
        assert!(bad.values.is_empty());
        assert!(bad.problem.unwrap().contains("/train/samples_per_s"));
    }

    #[test]
    fn pytest_benchmark_json_by_name_or_fullname() {
        let text = data("pytest-benchmark.json");
        let read = |b: &str, s: &str| {
            Reader::PytestBenchmark {
                benchmark: b.into(),
                stat: s.into(),
            }
            .read_file(&text)
        };
        assert_eq!(
            read("test_resnet50_forward", "mean").values,
            vec![0.0312478]
        );
        assert_eq!(
            read("tests/bench_models.py::test_resnet50_forward", "ops").values,
            vec![32.00225]
        );
        assert_eq!(
            read("test_gpt_decode_step", "median").values,
            vec![0.0081913]
        );
        let missing = read("test_nope", "mean");
        let p = missing.problem.unwrap();
        assert!(
            p.contains("test_resnet50_forward, test_gpt_decode_step"),
            "{p}"
        );
        assert!(read("test_resnet50_forward", "p99").problem.is_some());
    }

    #[test]
    fn mlperf_summary_value_and_validity() {
        let valid = Reader::MlperfSummary {
            field: MLPERF_DEFAULT_FIELD.into(),
        }
        .read_file(&data("mlperf_log_summary-offline.txt"));
        assert_eq!(valid.values, vec![91845.2]);
        assert_eq!(valid.invalid, None);
        let server = data("mlperf_log_summary-server-invalid.txt");
        let invalid = Reader::MlperfSummary {
            field: "Completed samples per second".into(),
        }
        .read_file(&server);
        assert_eq!(invalid.values, vec![1499.76]);
        let why = invalid.invalid.unwrap();
        assert!(why.contains("INVALID"), "{why}");
        assert!(
            why.contains("Performance constraints satisfied: NO")
                && why.contains("Early stopping satisfied: NO"),
            "{why}"
        );
        // A field of the test parameters, and one that is not there.
        let qps = Reader::MlperfSummary {
            field: "target_qps".into(),
        }
        .read_file(&server);
        assert_eq!(qps.values, vec![1500.0]);
        assert!(Reader::MlperfSummary {
            field: "Samples per second".into()
        }
        .read_file(&server)
        .problem
        .is_some());
    }

    #[test]
    fn bmf_value_and_bounds() {
        let text = data("bencher-bmf.json");
        let read = |b: &str, m: &str, s: &str| {
            Reader::Bmf {
                benchmark: b.into(),
                measure: m.into(),
                stat: s.into(),
            }
            .read_file(&text)
        };
        assert_eq!(
            read("resnet50_train", "throughput", "value").values,
            vec![2750.3]
        );
        assert_eq!(
            read("resnet50_train", "throughput", "lower_value").values,
            vec![2741.0]
        );
        assert_eq!(
            read("gpt_decode", "latency", "value").values,
            vec![8191300.0]
        );
        assert!(read("vit", "throughput", "value")
            .problem
            .unwrap()
            .contains("resnet50_train, gpt_decode"));
    }
}
