//! Where a benchmark's own number (gate.toml `[user_metrics.NAME]`) is read
//! from: the formats teams already write. Owns the readers; the table's
//! schema is `config::user_metrics`, which validates the table into a
//! `Reader` (when `config` loads gate.toml), `summary` applies it to a trace's
//! stdout lines or to the metrics file kept in its end record (`keep`
//! decides what of the file is kept, and when a file is not this run's).
//!
//! | `format` | reads | from |
//! |---|---|---|
//! | `regex` (default) | the one capture group of `regex` | each stdout line, or each line of the metrics file |
//! | `json` | the RFC 6901 pointer `pointer` | each stdout line that is a JSON document, or the metrics file (one document, or JSON lines) |
//! | `pytest_benchmark` | `benchmarks[name or fullname = benchmark].stats[stat]` | pytest-benchmark's `--benchmark-json` file |
//! | `mlperf_summary` | the line `field : value`; `Result is : INVALID` fails the run | MLPerf LoadGen's `mlperf_log_summary.txt` |
//! | `bmf` | `[benchmark][measure][stat]` (`value`, `lower_value`, `upper_value`) | Bencher Metric Format JSON |
//! | `google_benchmark` | `benchmarks[run_name = benchmark][stat]` (`real_time` by default; times in seconds) | Google Benchmark's `--benchmark_format=json` / `--benchmark_out` |
//! | `nvbench` | `benchmarks[name].states[name].summaries[tag = stat]` (`nv/cold/time/gpu/mean` by default, seconds), `benchmark = "BENCH/STATE"` | NVIDIA nvbench's `--json FILE` |
//!
//! `benchmark` may be a glob (`*`, `?`): every benchmark of the file that
//! matches is its own metric, named `TABLE.BENCHMARK` (`bulk_id`).
//!
//! A file is read once, at the end of the run: one value per benchmark per
//! run. Where the harness measured the number over many rounds it also says
//! how noisy the number is, and that becomes the run's within-run interval
//! (`ci95`, consumed by the noise model as `Observation.run_ci95`):
//!
//! - pytest-benchmark `mean`: the mean's standard error `stddev/sqrt(rounds)`
//!   times Student's t (n - 1 df). This treats rounds as independent, which
//!   they are not in general (warm caches, JIT, GC and frequency drift link
//!   consecutive iterations in one process: Kalibera & Jones, "Rigorous
//!   Benchmarking in Reasonable Time", ISMM 2013, section 3); the
//!   run-to-run spread of several runs stays the larger part of the noise
//!   and is still measured when a baseline has several runs.
//! - pytest-benchmark `ops` (= 1/mean): the same interval carried through
//!   the reciprocal by the delta method, se(1/X) ~ se(X)/X^2 (Casella &
//!   Berger, *Statistical Inference*, 2nd ed., section 5.5.4), so `mean`
//!   and `ops` of one test give one verdict.
//! - pytest-benchmark `median`: McGill, Tukey & Larsen's 95 % interval of a
//!   median, 1.57 IQR / sqrt(n) ("Variations of Box Plots", The American
//!   Statistician 32(1), 1978).
//! - BMF `value`: half the distance between `lower_value` and
//!   `upper_value` (Bencher's bounds, taken as a 95 % interval).
//! - Google Benchmark with `--benchmark_repetitions=N`: the `stddev`
//!   aggregate over the N repetitions, standard error `stddev/sqrt(N)`, t
//!   with N - 1 df (a `mean` aggregate is the value).
//! - nvbench: the summary `.../stdev/relative` of the mean read, times the
//!   mean, over sqrt(`nv/cold/sample_size`), t quantile.
//!
//! Other statistics (min, max, quantiles) carry no interval: several runs
//! give their noise. Lines of stdout are many values per run and are
//! aggregated (`mean`, `median`, `last`) like before.
//!
//! Format references: pytest-benchmark's JSON is what `pytest
//! --benchmark-json=FILE` writes (4.0 and 5.x: `stats` keys min, max, mean,
//! stddev, median, iqr, q1, q3, ops, rounds, data...); LoadGen's summary is
//! written by mlcommons/inference `loadgen/results.cc` as `key : value`
//! lines; BMF is documented at bencher.dev/docs/reference/bencher-metric-format;
//! Google Benchmark's JSON by google/benchmark `src/json_reporter.cc`;
//! nvbench's by NVIDIA/nvbench `nvbench/json_printer.cu`.

mod harness;
pub mod keep;
pub mod spans;

pub(crate) use keep::{keep_metrics_file, MetricsFileProblem};

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
    GoogleBenchmark,
    Nvbench,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Regex => "regex",
            Format::Json => "json",
            Format::PytestBenchmark => "pytest_benchmark",
            Format::MlperfSummary => "mlperf_summary",
            Format::Bmf => "bmf",
            Format::GoogleBenchmark => "google_benchmark",
            Format::Nvbench => "nvbench",
        }
    }

    /// Formats that are whole files, never stdout lines.
    pub(crate) fn file_only(self) -> bool {
        match self {
            Format::Regex | Format::Json => false,
            Format::PytestBenchmark
            | Format::MlperfSummary
            | Format::Bmf
            | Format::GoogleBenchmark
            | Format::Nvbench => true,
        }
    }

    /// Formats whose `benchmark` names one benchmark of several (a glob
    /// reads many).
    pub(crate) fn has_benchmarks(self) -> bool {
        match self {
            Format::PytestBenchmark | Format::Bmf | Format::GoogleBenchmark | Format::Nvbench => {
                true
            }
            Format::Regex | Format::Json | Format::MlperfSummary => false,
        }
    }
}

/// The `stats` keys pytest-benchmark writes (numbers only).
pub(crate) const PYTEST_STATS: &[&str] = &[
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
pub(crate) const BMF_STATS: &[&str] = &["value", "lower_value", "upper_value"];
/// The LoadGen line `mlperf_summary` reads by default (Offline scenario).
pub(crate) const MLPERF_DEFAULT_FIELD: &str = "Samples per second";
/// Google Benchmark's number read by default (per iteration, seconds).
pub(crate) const GOOGLE_DEFAULT_STAT: &str = "real_time";
/// nvbench's summary read by default: mean GPU time of isolated runs, s.
pub(crate) const NVBENCH_DEFAULT_STAT: &str = "nv/cold/time/gpu/mean";

/// Which benchmarks of a file a reader takes: one by name, or every one a
/// glob matches (each its own metric).
#[derive(Debug, Clone)]
pub enum Pattern {
    Exact(String),
    Glob { text: String, re: regex::Regex },
}

impl Pattern {
    /// `*` and `?` make a glob; anything else is one name.
    pub fn new(text: &str) -> Pattern {
        if !text.contains(['*', '?']) {
            return Pattern::Exact(text.to_string());
        }
        let mut re = String::from("^");
        for c in text.chars() {
            match c {
                '*' => re.push_str(".*"),
                '?' => re.push('.'),
                c => re.push_str(&regex::escape(&c.to_string())),
            }
        }
        re.push('$');
        Pattern::Glob {
            text: text.to_string(),
            // Escaped text and two wildcards always compile.
            re: regex::Regex::new(&re).unwrap_or_else(|_| regex::Regex::new("^$").unwrap()),
        }
    }

    pub fn text(&self) -> &str {
        match self {
            Pattern::Exact(t) | Pattern::Glob { text: t, .. } => t,
        }
    }

    pub(crate) fn is_glob(&self) -> bool {
        matches!(self, Pattern::Glob { .. })
    }

    pub fn matches(&self, name: &str) -> bool {
        match self {
            Pattern::Exact(t) => t == name,
            Pattern::Glob { re, .. } => re.is_match(name),
        }
    }
}

impl From<&str> for Pattern {
    fn from(s: &str) -> Pattern {
        Pattern::new(s)
    }
}

/// A validated reader of one user metric.
#[derive(Debug, Clone)]
pub enum Reader {
    Regex(regex::Regex),
    Json {
        pointer: String,
    },
    PytestBenchmark {
        benchmark: Pattern,
        stat: String,
    },
    MlperfSummary {
        field: String,
    },
    Bmf {
        benchmark: Pattern,
        measure: String,
        stat: String,
    },
    GoogleBenchmark {
        benchmark: Pattern,
        stat: String,
    },
    Nvbench {
        benchmark: Pattern,
        stat: String,
    },
}

/// One number a harness file gave, with the harness's own 95 % half-width
/// of it when it has one (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Number {
    pub value: f64,
    pub ci95: Option<f64>,
}

/// Whose mistake it is that a source gave no number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The reader asks for what the file does not have (a benchmark name,
    /// a stat): a mistake in gate.toml (exit 2).
    Config,
    /// The benchmark did not write its number (the file is missing,
    /// stale, empty or broken, no line matched): exit 5.
    NotProduced,
    /// The harness's file says the benchmark failed at run time (Google
    /// Benchmark's `error_occurred`, an nvbench state that threw): exit 5,
    /// with the harness's error text.
    Failed,
    /// The file given as `--metrics-file` cannot be what a benchmark wrote
    /// (not a regular file, over the limits): exit 2, and the text names
    /// the file and its fix (not gate.toml's).
    MetricsFile,
}

/// Why a source gave no number.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub(crate) fault: Fault,
    pub text: String,
}

impl Problem {
    pub fn config(text: String) -> Problem {
        Problem {
            fault: Fault::Config,
            text,
        }
    }
    pub(crate) fn not_produced(text: String) -> Problem {
        Problem {
            fault: Fault::NotProduced,
            text,
        }
    }
    pub(crate) fn failed(text: String) -> Problem {
        Problem {
            fault: Fault::Failed,
            text,
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// What a whole file gave: the values, why none, and whether the file
/// says the run itself is invalid (LoadGen's `Result is : INVALID`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileReading {
    /// Lines' values (regex, json), or the one value of a harness file.
    pub values: Vec<f64>,
    /// The harness's 95 % half-width of a single value.
    pub ci95: Option<f64>,
    /// A glob reader: each benchmark that matched, by its name in the file.
    pub each: Vec<(String, Number)>,
    /// Why no value was read (bad JSON, benchmark not in the file...).
    pub problem: Option<Problem>,
    /// The file's own verdict that the run is not valid, with its reasons.
    pub invalid: Option<String>,
}

impl FileReading {
    fn one(n: Number) -> FileReading {
        FileReading {
            values: vec![n.value],
            ci95: n.ci95,
            ..FileReading::default()
        }
    }
    fn failed(p: Problem) -> FileReading {
        FileReading {
            problem: Some(p),
            ..FileReading::default()
        }
    }
}

impl Reader {
    pub fn format(&self) -> Format {
        match self {
            Reader::Regex(_) => Format::Regex,
            Reader::Json { .. } => Format::Json,
            Reader::PytestBenchmark { .. } => Format::PytestBenchmark,
            Reader::MlperfSummary { .. } => Format::MlperfSummary,
            Reader::Bmf { .. } => Format::Bmf,
            Reader::GoogleBenchmark { .. } => Format::GoogleBenchmark,
            Reader::Nvbench { .. } => Format::Nvbench,
        }
    }

    /// The benchmark pattern, for readers of harness files.
    pub fn pattern(&self) -> Option<&Pattern> {
        match self {
            Reader::PytestBenchmark { benchmark, .. }
            | Reader::Bmf { benchmark, .. }
            | Reader::GoogleBenchmark { benchmark, .. }
            | Reader::Nvbench { benchmark, .. } => Some(benchmark),
            Reader::Regex(_) | Reader::Json { .. } | Reader::MlperfSummary { .. } => None,
        }
    }

    /// Reads many benchmarks, each its own metric (`bulk_id`).
    pub(crate) fn is_bulk(&self) -> bool {
        self.pattern().is_some_and(Pattern::is_glob)
    }

    /// One line of stdout: its number, if the line carries one.
    pub(crate) fn line_value(&self, line: &str) -> Option<f64> {
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
            // Whole-file formats are refused for stdout by `config::user_metrics`.
            Reader::PytestBenchmark { .. }
            | Reader::MlperfSummary { .. }
            | Reader::Bmf { .. }
            | Reader::GoogleBenchmark { .. }
            | Reader::Nvbench { .. } => None,
        }
    }

    /// The text of the metrics file.
    pub fn read_file(&self, text: &str) -> FileReading {
        match self {
            Reader::Regex(re) => {
                let values: Vec<f64> = text.lines().filter_map(|l| self.line_value(l)).collect();
                if values.is_empty() {
                    return FileReading::failed(Problem::not_produced(format!(
                        "no line of the metrics file matches regex '{}'",
                        re.as_str()
                    )));
                }
                FileReading {
                    values,
                    ..FileReading::default()
                }
            }
            Reader::Json { pointer } => read_json_file(text, pointer),
            Reader::MlperfSummary { field } => read_mlperf(text, field),
            Reader::PytestBenchmark { .. }
            | Reader::Bmf { .. }
            | Reader::GoogleBenchmark { .. }
            | Reader::Nvbench { .. } => harness::read(self, text),
        }
    }
}

/// The metric id of benchmark `bench` read by the glob table `table`:
/// `TABLE.BENCHMARK`, every character outside letters, digits, `_` and `-`
/// of the benchmark's name as `_` (runs of them as one), at most 120
/// characters; a name that had to change keeps its identity with a short
/// hash of the original (`test_x[a/b]` and `test_x[a_b]` stay two metrics).
pub fn bulk_id(table: &str, bench: &str) -> String {
    let mut clean = String::new();
    for c in bench.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            clean.push(c);
        } else if !clean.ends_with('_') {
            clean.push('_');
        }
    }
    let clean = clean.trim_matches('_');
    let mut clean: String = clean.chars().take(120).collect();
    if clean != bench {
        // FNV-1a: stable across versions and platforms, unlike std's hasher.
        let h = bench.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
        });
        clean.push_str(&format!("_{:06x}", h & 0xff_ffff));
    }
    format!("{table}.{clean}")
}

/// A metric as people read it: a benchmark a glob table read by its own
/// name under its table (`py.test_sum[0]`, not its id
/// `py.test_sum_0_888b45`); any other metric by its id.
pub fn shown_name(id: &str, benchmark: Option<&str>) -> String {
    match (benchmark, id.split_once('.')) {
        (Some(bench), Some((table, _))) => format!("{table}.{bench}"),
        _ => id.to_string(),
    }
}

/// The metric ids of the benchmarks a glob table read (`bulk_id`), each
/// with its benchmark's own name. Ids are unique by construction: two names
/// whose ids meet (two hashed names that share 24 bits, or a clean name
/// equal to another's hashed id) are refused with both names, never one of
/// them silently dropped.
pub(crate) fn bulk_ids(
    table: &str,
    each: Vec<(String, Number)>,
) -> Result<Vec<(String, String, Number)>, Problem> {
    let mut seen: std::collections::HashMap<String, String> = Default::default();
    let mut out = Vec::with_capacity(each.len());
    for (bench, n) in each {
        let id = bulk_id(table, &bench);
        if let Some(other) = seen.insert(id.clone(), bench.clone()) {
            return Err(Problem::config(format!(
                "benchmarks '{other}' and '{bench}' both become metric id '{id}'; rename one of them, or set benchmark to a pattern that matches only one"
            )));
        }
        out.push((id, bench, n));
    }
    Ok(out)
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
        return FileReading::failed(Problem::not_produced(format!(
            "no number at JSON pointer '{pointer}' in the metrics file"
        )));
    }
    FileReading {
        values,
        ..FileReading::default()
    }
}

/// Whether a number in `unit` can never be negative: a time (`s`, `ms`,
/// `us`, `µs`, `ns`, `min`, `h`) or a rate (`.../s`, `1/s`).
pub(crate) fn never_negative(unit: &str) -> bool {
    let u = unit.trim();
    matches!(u, "s" | "ms" | "us" | "µs" | "ns" | "min" | "h") || u.ends_with("/s")
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
        // Matched as leniently as LoadGen's readers: any case, any spacing
        // (`result  is : INVALID` is INVALID too).
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
    let has_result = result.is_some();
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
    let problem = value.is_none().then(|| {
        let text = format!("no line '{field} : NUMBER' in the MLPerf LoadGen summary");
        // A summary with a result line is LoadGen's: the field is misnamed.
        if has_result {
            Problem::config(format!("{text}; set field to a key of the summary, e.g. field = \"{MLPERF_DEFAULT_FIELD}\""))
        } else {
            Problem::not_produced(text)
        }
    });
    FileReading {
        problem,
        values: value.into_iter().collect(),
        invalid,
        ..FileReading::default()
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
        assert!(bad.problem.unwrap().text.contains("/train/samples_per_s"));
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
        assert_eq!(
            p.fault,
            Fault::Config,
            "a name not in the file is gate.toml's mistake"
        );
        assert!(
            p.text
                .contains("test_resnet50_forward, test_gpt_decode_step"),
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
            .text
            .contains("resnet50_train, gpt_decode"));
        // A misspelt measure is gate.toml's mistake (exit 2), not the runner's.
        assert_eq!(
            read("resnet50_train", "thruput", "value")
                .problem
                .unwrap()
                .fault,
            Fault::Config
        );
        // The bounds are the value's interval.
        let v = read("resnet50_train", "throughput", "value");
        assert_eq!(v.ci95, Some((2760.1 - 2741.0) / 2.0), "{v:?}");
    }

    fn zst(name: &str) -> String {
        let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
        String::from_utf8(zstd::decode_all(std::fs::File::open(path).unwrap()).unwrap()).unwrap()
    }

    #[test]
    fn real_pytest_benchmark_mean_ops_and_median_carry_the_harness_interval() {
        let text = data("pytest-benchmark-real.json");
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let stats = &doc["benchmarks"][0]["stats"];
        let (mean, sd, n) = (
            stats["mean"].as_f64().unwrap(),
            stats["stddev"].as_f64().unwrap(),
            stats["rounds"].as_f64().unwrap(),
        );
        let name = doc["benchmarks"][0]["name"].as_str().unwrap();
        let read = |stat: &str| {
            Reader::PytestBenchmark {
                benchmark: name.into(),
                stat: stat.into(),
            }
            .read_file(&text)
        };
        let m = read("mean");
        assert_eq!(m.values, vec![mean]);
        let ci = m.ci95.unwrap();
        let t = crate::stats::student_t_975(n as usize - 1);
        assert!((ci - t * sd / n.sqrt()).abs() < 1e-15, "{ci}");
        // ops = 1/mean: the same relative interval (delta method).
        let o = read("ops");
        let rel_ops = o.ci95.unwrap() / o.values[0];
        assert!(
            (rel_ops - ci / mean).abs() / (ci / mean) < 1e-3,
            "{rel_ops} vs {}",
            ci / mean
        );
        // median: McGill et al.'s 1.57 IQR / sqrt(n).
        let med = read("median");
        let iqr = stats["iqr"].as_f64().unwrap();
        assert!((med.ci95.unwrap() - 1.57 * iqr / n.sqrt()).abs() < 1e-15);
        assert_eq!(read("min").ci95, None, "no interval for an extreme");
    }

    #[test]
    fn glob_reads_every_benchmark_of_a_real_222_test_file() {
        let text = zst("pytest-benchmark-bulk.json.zst");
        let r = Reader::PytestBenchmark {
            benchmark: "*".into(),
            stat: "mean".into(),
        }
        .read_file(&text);
        assert_eq!(r.problem, None);
        assert_eq!(r.each.len(), 222);
        assert!(r.each.iter().all(|(_, n)| n.ci95.is_some()));
        let some = Reader::PytestBenchmark {
            benchmark: "test_sum[1?]".into(),
            stat: "mean".into(),
        }
        .read_file(&text);
        assert_eq!(some.each.len(), 10, "test_sum[10] .. test_sum[19]");
        let none = Reader::PytestBenchmark {
            benchmark: "test_nope*".into(),
            stat: "mean".into(),
        }
        .read_file(&text);
        assert_eq!(none.problem.unwrap().fault, Fault::Config);
    }

    #[test]
    fn bulk_ids_are_metric_ids_and_stay_distinct() {
        assert_eq!(bulk_id("py", "test_sleep"), "py.test_sleep");
        // docs/gating.md's example.
        assert_eq!(bulk_id("py", "test_sum[0]"), "py.test_sum_0_888b45");
        let a = bulk_id("py", "test_x[a/b]");
        let b = bulk_id("py", "test_x[a_b]");
        assert_ne!(a, b);
        assert!(a.starts_with("py.test_x_a_b_"), "{a}");
        for id in [&a, &b, &bulk_id("nv", "copy/Device=0 T=I8")] {
            assert!(crate::validate::valid_name(id), "{id}");
        }
        assert!(bulk_id("t", &"x".repeat(500)).len() < 140);
        // Unique by construction: ids that meet are refused with both names.
        let n = Number {
            value: 1.0,
            ci95: None,
        };
        let each = |names: &[&str]| names.iter().map(|s| (s.to_string(), n)).collect();
        let ok = bulk_ids("py", each(&["test_sum[0]", "test_sum[1]"])).unwrap();
        assert_eq!(ok[0].1, "test_sum[0]");
        for (a, b) in [
            ("a b:c]d/e[f", "a/b/c(d[e f"),
            ("test_sum[0]", "test_sum_0_888b45"),
        ] {
            let p = bulk_ids("py", each(&[a, b])).unwrap_err();
            assert_eq!(p.fault, Fault::Config);
            assert!(
                p.text.contains(&format!("'{a}'")) && p.text.contains(&format!("'{b}'")),
                "{p}"
            );
        }
        assert_eq!(
            shown_name("py.test_sum_0_888b45", Some("test_sum[0]")),
            "py.test_sum[0]"
        );
        assert_eq!(shown_name("sm_active_pct", None), "sm_active_pct");
    }

    #[test]
    fn google_benchmark_real_file_mean_aggregate_and_stddev_interval() {
        let text = data("google-benchmark.json");
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let row = |name: &str| {
            doc["benchmarks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["name"] == name)
                .unwrap()
                .clone()
        };
        let mean = row("BM_Sort/4096_mean");
        let sd = row("BM_Sort/4096_stddev");
        let r = Reader::GoogleBenchmark {
            benchmark: "BM_Sort/4096".into(),
            stat: GOOGLE_DEFAULT_STAT.into(),
        }
        .read_file(&text);
        let want = mean["real_time"].as_f64().unwrap() * 1e-9;
        assert!((r.values[0] - want).abs() < 1e-18, "{r:?}");
        let ci =
            sd["real_time"].as_f64().unwrap() * 1e-9 * crate::stats::student_t_975(2) / 3f64.sqrt();
        assert!((r.ci95.unwrap() - ci).abs() < 1e-18, "{r:?}");
        // A counter, not a time: read as written.
        let items = Reader::GoogleBenchmark {
            benchmark: "BM_VectorSum/1024".into(),
            stat: "items_per_second".into(),
        }
        .read_file(&text);
        assert_eq!(
            items.values,
            vec![row("BM_VectorSum/1024_mean")["items_per_second"]
                .as_f64()
                .unwrap()]
        );
        let all = Reader::GoogleBenchmark {
            benchmark: "*".into(),
            stat: "cpu_time".into(),
        }
        .read_file(&text);
        let names: Vec<&str> = all.each.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "BM_VectorSum/1024",
                "BM_VectorSum/65536",
                "BM_Sort/4096",
                "BM_StringConcat"
            ]
        );
        let typo = Reader::GoogleBenchmark {
            benchmark: "BM_Sotr/4096".into(),
            stat: "real_time".into(),
        }
        .read_file(&text)
        .problem
        .unwrap();
        assert_eq!(typo.fault, Fault::Config);
        assert!(typo.text.contains("did you mean 'BM_Sort/4096'"), "{typo}");
        let stat = Reader::GoogleBenchmark {
            benchmark: "BM_Sort/4096".into(),
            stat: "thruput".into(),
        }
        .read_file(&text)
        .problem
        .unwrap();
        assert!(stat.text.contains("bytes_per_second"), "{stat}");
    }

    #[test]
    fn nvbench_real_file_gpu_mean_and_its_noise() {
        let text = zst("nvbench-axes-test_ref.json.zst");
        let r = Reader::Nvbench {
            benchmark: "simple/Device=0".into(),
            stat: NVBENCH_DEFAULT_STAT.into(),
        }
        .read_file(&text);
        assert_eq!(r.problem, None);
        assert!(r.values[0] > 0.0 && r.values[0] < 1.0, "{r:?}");
        let one = Reader::Nvbench {
            benchmark: "single_float64_axis/Device=0 Duration=0".into(),
            stat: NVBENCH_DEFAULT_STAT.into(),
        }
        .read_file(&text);
        assert_eq!(one.values, vec![3.9224058844425625e-06]);
        let rel = 0.14064817853323436;
        let want =
            crate::stats::student_t_975(127487) * rel * 3.9224058844425625e-06 / 127488f64.sqrt();
        assert!((one.ci95.unwrap() - want).abs() < 1e-15, "{one:?}");
        let all = Reader::Nvbench {
            benchmark: "*".into(),
            stat: NVBENCH_DEFAULT_STAT.into(),
        }
        .read_file(&text);
        // 126 states, 38 of them skipped by nvbench (type conversions).
        assert_eq!(all.each.len(), 88);
        // Two devices, two states: the bare name is not enough.
        let many = Reader::Nvbench {
            benchmark: "simple".into(),
            stat: NVBENCH_DEFAULT_STAT.into(),
        }
        .read_file(&text)
        .problem
        .unwrap();
        assert!(many.text.contains("simple/Device=1"), "{many}");
    }

    #[test]
    fn loadgen_misnamed_field_is_a_config_mistake() {
        let p = Reader::MlperfSummary {
            field: "Samples per sec".into(),
        }
        .read_file(&data("mlperf_log_summary-offline.txt"))
        .problem
        .unwrap();
        assert_eq!(p.fault, Fault::Config);
        let gone = Reader::MlperfSummary {
            field: MLPERF_DEFAULT_FIELD.into(),
        }
        .read_file("not a summary\n")
        .problem
        .unwrap();
        assert_eq!(gone.fault, Fault::NotProduced);
    }
}
