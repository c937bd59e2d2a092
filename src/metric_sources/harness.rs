//! Readers of benchmark harnesses' JSON files (pytest-benchmark, BMF,
//! Google Benchmark, nvbench): each lists the file's benchmarks with their
//! number and the harness's interval of it (the parent module's doc says
//! which statistic gives which interval, and cites why), then `select`
//! picks one by name or every one a glob matches.

use super::{number, FileReading, Number, Pattern, Problem, Reader};
use serde_json::Value;

/// Names listed in a message about a missing benchmark, then `and N more`
/// (docs/limits.md says so; tests/docs_facts.rs checks it).
const NAMES_SHOWN: usize = 10;

/// One benchmark of a file: its name, another name it answers to
/// (pytest-benchmark's `fullname`), and its number or why it has none.
struct Entry {
    name: String,
    alias: Option<String>,
    number: Result<Number, Miss>,
}

/// Why a benchmark of a file has no number.
enum Miss {
    /// The file has no such number (a stat or measure gate.toml names).
    Absent(String),
    /// The harness says the benchmark failed at run time (Google
    /// Benchmark's `error_occurred`, nvbench's "Unexpected error"): its
    /// error text.
    Failed(String),
}

pub(super) fn read(reader: &Reader, text: &str) -> FileReading {
    let (what, parsed) = match reader {
        Reader::PytestBenchmark { stat, .. } => ("pytest-benchmark", pytest(text, stat)),
        Reader::Bmf { measure, stat, .. } => ("BMF", bmf(text, measure, stat)),
        Reader::GoogleBenchmark { stat, .. } => ("Google Benchmark", google(text, stat)),
        Reader::Nvbench { stat, .. } => ("nvbench", nvbench(text, stat)),
        // Not harness files: `Reader::read_file` reads them itself.
        Reader::Regex(_) | Reader::Json { .. } | Reader::MlperfSummary { .. } => {
            return FileReading::default()
        }
    };
    let Some(pattern) = reader.pattern() else {
        return FileReading::default();
    };
    let mut reading = match parsed {
        Ok(entries) => select(what, pattern, entries),
        Err(p) => return FileReading::failed(p),
    };
    // A harness's times, counts and rates are never negative (BMF's
    // measures are the user's own): such a number is a broken benchmark,
    // never a -1700 % "improvement".
    // A time is more: zero, -0 or a sub-picosecond one is no measurement
    // (a clock cycle is ~0.5 ns), and would judge as a ~100 % improvement
    // (issue 41.8).
    let time = is_time_stat(reader);
    if what != "BMF" {
        let bad = reading
            .values
            .iter()
            .copied()
            .chain(reading.each.iter().map(|(_, n)| n.value))
            .find(|v| *v < 0.0 || (time && *v < MIN_TIME_S));
        if let Some(v) = bad {
            reading.invalid = Some(if time {
                format!(
                    "the {what} file gives {v} s for '{}'; a time is positive and at least {MIN_TIME_S} s (a picosecond), never zero or negative",
                    pattern.text()
                )
            } else {
                format!(
                    "the {what} file gives {v} for '{}'; no time, count or rate is negative",
                    pattern.text()
                )
            });
            reading.values.clear();
            reading.each.clear();
        }
    }
    reading
}

/// The shortest time a harness can report: a picosecond.
const MIN_TIME_S: f64 = 1e-12;

/// Whether the reader's statistic is a time (seconds, after unit scaling).
fn is_time_stat(reader: &Reader) -> bool {
    match reader {
        Reader::PytestBenchmark { stat, .. } => matches!(
            stat.as_str(),
            "mean" | "median" | "min" | "max" | "ld15iqr" | "hd15iqr"
        ),
        Reader::GoogleBenchmark { stat, .. } => stat.ends_with("_time"),
        Reader::Nvbench { stat, .. } => stat.contains("/time/") && !stat.contains("stdev"),
        // BMF's measures are the user's own; the others are not harness files.
        Reader::Bmf { .. }
        | Reader::Regex(_)
        | Reader::Json { .. }
        | Reader::MlperfSummary { .. } => false,
    }
}

/// The file as JSON, or why the benchmark's file is not its output (a
/// large file kept by `keep` is one compact document and a newline).
fn parse(text: &str, what: &str) -> Result<Value, Problem> {
    serde_json::from_str(text)
        .map_err(|e| Problem::not_produced(format!("the metrics file is not {what} JSON: {e}")))
}

fn select(what: &str, pattern: &Pattern, entries: Vec<Entry>) -> FileReading {
    let hit = |e: &Entry| {
        pattern.matches(&e.name) || e.alias.as_deref().is_some_and(|a| pattern.matches(a))
    };
    if pattern.is_glob() {
        let mut out = FileReading::default();
        let mut skipped = Vec::new();
        let mut failed = Vec::new();
        let matched: Vec<&Entry> = entries.iter().filter(|e| hit(e)).collect();
        for e in &matched {
            let name = unique_name(e, &matched);
            match &e.number {
                Ok(n) => out.each.push((name, *n)),
                Err(Miss::Absent(why)) => skipped.push(format!("{name}: {why}")),
                Err(Miss::Failed(why)) => failed.push(format!("'{name}' ({why})")),
            }
        }
        if let Some(twin) = twins_left(&out.each) {
            out.problem = Some(Problem::config(twin));
            out.each.clear();
            return out;
        }
        if !failed.is_empty() {
            out.problem = Some(failed_at_run_time(what, &failed));
            return out;
        }
        if out.each.is_empty() {
            let text = match skipped.first() {
                Some(why) => format!(
                    "no benchmark matching '{}' in the {what} file has a number ({why})",
                    pattern.text()
                ),
                None => format!(
                    "no benchmark in the {what} file matches '{}' (it has: {})",
                    pattern.text(),
                    listing(&entries)
                ),
            };
            out.problem = Some(if entries.is_empty() {
                Problem::not_produced(format!("the {what} file lists no benchmark"))
            } else {
                Problem::config(text)
            });
        }
        return out;
    }
    let twins = entries.iter().filter(|e| hit(e)).count();
    match entries.iter().find(|e| hit(e)) {
        Some(e) => match &e.number {
            // Not chosen by file order without a word.
            Ok(n) if twins > 1 => FileReading {
                problem: Some(Problem::config(format!(
                    "benchmark '{}' appears {twins} times in the {what} file; the first is used: name it by its unique full name",
                    pattern.text()
                ))),
                ..FileReading::one(*n)
            },
            Ok(n) => FileReading::one(*n),
            Err(Miss::Failed(why)) => FileReading::failed(failed_at_run_time(
                what,
                &[format!("'{}' ({why})", e.name)],
            )),
            Err(Miss::Absent(why)) => FileReading::failed(Problem::config(format!(
                "benchmark '{}' in the {what} file: {why}",
                e.name
            ))),
        },
        None if entries.is_empty() => FileReading::failed(Problem::not_produced(format!(
            "the {what} file lists no benchmark"
        ))),
        None => {
            let close = entries
                .iter()
                .map(|e| {
                    (
                        crate::spelling::levenshtein(pattern.text(), &e.name),
                        &e.name,
                    )
                })
                .min()
                .filter(|(d, _)| *d <= pattern.text().len() / 3 + 2)
                .map(|(_, n)| format!("did you mean '{n}'? "))
                .unwrap_or_default();
            FileReading::failed(Problem::config(format!(
                "benchmark '{}' is not in the {what} file; {close}it has: {} (set benchmark to one of them, or a glob such as \"*\")",
                pattern.text(),
                listing(&entries)
            )))
        }
    }
}

/// The name a glob reading gives `e`: its own, or where another matched
/// benchmark has the same name (pytest-benchmark's `test_fwd` of two
/// modules), the full name it also answers to, so both are kept.
fn unique_name(e: &Entry, matched: &[&Entry]) -> String {
    let shared = matched.iter().filter(|o| o.name == e.name).count() > 1;
    match &e.alias {
        Some(full) if shared => full.clone(),
        _ => e.name.clone(),
    }
}

/// Two benchmarks a glob read under one name (no full name tells them
/// apart): refused with the name, never one of them dropped.
fn twins_left(each: &[(String, Number)]) -> Option<String> {
    let mut names: Vec<&str> = each.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    let twin = names.windows(2).find(|w| w[0] == w[1])?[0];
    Some(format!(
        "two benchmarks of the file are both named '{twin}' and nothing else tells them apart; rename one, or set benchmark to a pattern that matches only one"
    ))
}

/// The benchmark ran and failed (exit 5): the harness's own error text.
fn failed_at_run_time(what: &str, failed: &[String]) -> Problem {
    Problem::failed(format!(
        "the {what} file says {} failed at run time: {}",
        if failed.len() == 1 {
            "benchmark"
        } else {
            "benchmarks"
        },
        failed.join(", ")
    ))
}

fn listing(entries: &[Entry]) -> String {
    let names: Vec<&str> = entries
        .iter()
        .map(|e| e.name.as_str())
        .take(NAMES_SHOWN)
        .collect();
    let more = entries.len().saturating_sub(NAMES_SHOWN);
    let names = names.join(", ");
    if more > 0 {
        format!("{names} and {more} more")
    } else {
        names
    }
}

/// The two-sided 95 % half-width of a mean of `n` values with standard
/// deviation `sd` (Student's t, n - 1 df).
/// `n` is a count from the file: clamped to `MAX_COUNT` before the
/// quantile sees it (issue 41.1).
fn mean_ci95(sd: f64, n: f64) -> Option<f64> {
    let n = n.min(MAX_COUNT);
    (n >= 2.0 && sd.is_finite() && sd >= 0.0)
        .then(|| crate::stats::student_t_975(n as usize - 1) * sd / n.sqrt())
        .filter(|c| c.is_finite())
}

/// The largest count (rounds, repetitions, sample size) a file's number is
/// taken to rest on: 1e12 rounds of a nanosecond are 16 minutes; more is
/// a broken or hostile file, and a larger count would narrow the interval
/// beyond anything measured.
const MAX_COUNT: f64 = 1e12;

// ------------------------------------------------------------ pytest-benchmark

fn pytest(text: &str, stat: &str) -> Result<Vec<Entry>, Problem> {
    let doc = parse(text, "pytest-benchmark")?;
    let Some(list) = doc.get("benchmarks").and_then(|b| b.as_array()) else {
        return Err(Problem::not_produced(
            "the metrics file has no 'benchmarks' list; write it with pytest --benchmark-json=FILE"
                .into(),
        ));
    };
    let str_of = |b: &Value, key: &str| b.get(key).and_then(Value::as_str).map(str::to_string);
    Ok(list
        .iter()
        .map(|b| {
            let stats = b.get("stats");
            let get = |k: &str| stats.and_then(|s| s.get(k)).and_then(number);
            Entry {
                name: str_of(b, "name").unwrap_or_default(),
                alias: str_of(b, "fullname"),
                number: match get(stat) {
                    Some(value) => Ok(Number {
                        value,
                        ci95: pytest_ci95(stat, value, &get),
                    }),
                    None => Err(Miss::Absent(format!("no number stats.{stat}"))),
                },
            }
        })
        .collect())
}

/// The harness's interval of `stat` (module doc of `metric_sources`).
fn pytest_ci95(stat: &str, value: f64, get: &dyn Fn(&str) -> Option<f64>) -> Option<f64> {
    let rounds = get("rounds")?;
    let mean = get("mean")?;
    let of_mean = mean_ci95(get("stddev")?, rounds);
    match stat {
        "mean" => of_mean,
        // Delta method: se(1/X) ~ se(X) / X^2.
        "ops" if mean > 0.0 => of_mean.map(|c| c / (mean * mean)).filter(|_| value > 0.0),
        "median" if rounds >= 2.0 => {
            get("iqr").map(|iqr| 1.57 * iqr / rounds.min(MAX_COUNT).sqrt())
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------- BMF

fn bmf(text: &str, measure: &str, stat: &str) -> Result<Vec<Entry>, Problem> {
    let doc = parse(text, "Bencher Metric Format")?;
    let Some(map) = doc.as_object() else {
        return Err(Problem::not_produced(
            "the metrics file is not a BMF object {benchmark: {measure: {value}}}".into(),
        ));
    };
    Ok(map
        .iter()
        .map(|(name, b)| {
            let m = b.get(measure);
            let get = |k: &str| m.and_then(|m| m.get(k)).and_then(number);
            let number = match get(stat) {
                Some(value) => Ok(Number {
                    value,
                    ci95: match (stat, get("lower_value"), get("upper_value")) {
                        // Halved first: (f64::MAX - -f64::MAX) is infinite.
                        ("value", Some(lo), Some(hi)) if hi >= lo => Some(hi / 2.0 - lo / 2.0),
                        _ => None,
                    },
                }),
                None => Err(Miss::Absent(format!(
                    "no number {name}.{measure}.{stat} (its measures: {}); set measure and stat to what the file has",
                    b.as_object()
                        .map(|o| o.keys().map(String::as_str).collect::<Vec<_>>().join(", "))
                        .unwrap_or_default()
                ))),
            };
            Entry {
                name: name.clone(),
                alias: None,
                number,
            }
        })
        .collect())
}

// ------------------------------------------------------------ Google Benchmark

/// Seconds per `time_unit` of Google Benchmark.
fn time_unit_s(unit: Option<&str>) -> f64 {
    match unit {
        Some("us") => 1e-6,
        Some("ms") => 1e-3,
        Some("s") => 1.0,
        _ => 1e-9,
    }
}

/// One benchmark (`run_name`) of a Google Benchmark file: its iteration
/// rows and its aggregates by name.
#[derive(Default)]
struct GoogleRun<'a> {
    iterations: Vec<&'a Value>,
    aggregates: Vec<(String, &'a Value)>,
    error: Option<String>,
}

fn google(text: &str, stat: &str) -> Result<Vec<Entry>, Problem> {
    let doc = parse(text, "Google Benchmark")?;
    let Some(list) = doc.get("benchmarks").and_then(|b| b.as_array()) else {
        return Err(Problem::not_produced(
            "the metrics file has no 'benchmarks' list; write it with --benchmark_format=json or --benchmark_out=FILE --benchmark_out_format=json".into(),
        ));
    };
    let mut runs: Vec<(String, GoogleRun)> = Vec::new();
    for b in list {
        let Some(name) = b
            .get("run_name")
            .or_else(|| b.get("name"))
            .and_then(Value::as_str)
        else {
            continue;
        };
        let at = match runs.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                runs.push((name.to_string(), GoogleRun::default()));
                runs.len() - 1
            }
        };
        let run = &mut runs[at].1;
        if b.get("error_occurred").and_then(Value::as_bool) == Some(true) {
            run.error = Some(
                b.get("error_message")
                    .and_then(Value::as_str)
                    .unwrap_or("error_occurred")
                    .to_string(),
            );
            continue;
        }
        match b.get("aggregate_name").and_then(Value::as_str) {
            Some(agg) if b.get("run_type").and_then(Value::as_str) == Some("aggregate") => {
                run.aggregates.push((agg.to_string(), b))
            }
            _ => run.iterations.push(b),
        }
    }
    Ok(runs
        .into_iter()
        .map(|(name, run)| Entry {
            number: google_number(&run, stat),
            name,
            alias: None,
        })
        .collect())
}

fn google_number(run: &GoogleRun, stat: &str) -> Result<Number, Miss> {
    if let Some(e) = &run.error {
        return Err(Miss::Failed(format!("error_occurred: {e}")));
    }
    // Times are in the row's time_unit; gate reads seconds. Only the two
    // times are: a user counter is written as the benchmark set it, even
    // one whose name ends in `_time` (json_reporter.cc writes counters
    // unscaled).
    let value_of = |b: &Value| {
        let v = b.get(stat).and_then(number)?;
        Some(if matches!(stat, "real_time" | "cpu_time") {
            v * time_unit_s(b.get("time_unit").and_then(Value::as_str))
        } else {
            v
        })
    };
    let agg = |name: &str| {
        run.aggregates
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, b)| value_of(b))
    };
    let reps = |b: &Value| b.get("repetitions").and_then(number);
    if let Some(mean) = agg("mean") {
        let n = run
            .aggregates
            .iter()
            .find(|(n, _)| n == "mean")
            .and_then(|(_, b)| reps(b))
            .unwrap_or(0.0);
        return Ok(Number {
            value: mean,
            ci95: agg("stddev").and_then(|sd| mean_ci95(sd, n)),
        });
    }
    let values: Vec<f64> = run.iterations.iter().filter_map(|b| value_of(b)).collect();
    if values.is_empty() {
        let keys: Vec<&str> = run
            .iterations
            .first()
            .and_then(|b| b.as_object())
            .map(|o| {
                o.iter()
                    .filter(|(_, v)| v.is_number())
                    .map(|(k, _)| k.as_str())
                    .collect()
            })
            .unwrap_or_default();
        return Err(Miss::Absent(format!(
            "no number '{stat}' (its numbers: {}); set stat to one of them",
            keys.join(", ")
        )));
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    Ok(Number {
        value: mean,
        ci95: mean_ci95(sd, n),
    })
}

// ------------------------------------------------------------------- nvbench

fn nvbench(text: &str, stat: &str) -> Result<Vec<Entry>, Problem> {
    let doc = parse(text, "nvbench")?;
    let Some(list) = doc.get("benchmarks").and_then(|b| b.as_array()) else {
        return Err(Problem::not_produced(
            "the metrics file has no 'benchmarks' list; write it with the nvbench executable's --json FILE".into(),
        ));
    };
    let mut out = Vec::new();
    for b in list {
        let bench = b.get("name").and_then(Value::as_str).unwrap_or_default();
        let states = b
            .get("states")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for s in states {
            let state = s.get("name").and_then(Value::as_str).unwrap_or_default();
            out.push(Entry {
                name: format!("{bench}/{state}"),
                // A benchmark of one state answers to its own name too.
                alias: (states.len() == 1).then(|| bench.to_string()),
                number: nvbench_number(s, stat),
            });
        }
    }
    Ok(out)
}

/// `summaries[tag].data[name = "value"].value` of one state (nvbench
/// writes numbers as strings).
fn nvbench_summary(state: &Value, tag: &str) -> Option<f64> {
    state
        .get("summaries")?
        .as_array()?
        .iter()
        .find(|s| s.get("tag").and_then(Value::as_str) == Some(tag))?
        .get("data")?
        .as_array()?
        .iter()
        .find(|d| d.get("name").and_then(Value::as_str) == Some("value"))
        .and_then(|d| d.get("value"))
        .and_then(number)
}

fn nvbench_number(state: &Value, stat: &str) -> Result<Number, Miss> {
    if state.get("is_skipped").and_then(Value::as_bool) == Some(true) {
        let why = state
            .get("skip_reason")
            .and_then(Value::as_str)
            .unwrap_or("no reason given");
        // nvbench's runner skips a state whose sampling threw with "Unexpected
        // error: ..." (NVIDIA/nvbench nvbench/runner.cu,
        // handle_sampling_exception): the benchmark failed at run time. Any
        // other reason is the benchmark's own `state.skip` (a type pair it
        // does not run).
        if why.starts_with("Unexpected error") {
            return Err(Miss::Failed(why.to_string()));
        }
        return Err(Miss::Absent(format!("nvbench skipped this state ({why})")));
    }
    let value =
        nvbench_summary(state, stat).ok_or_else(|| Miss::Absent(format!("no summary '{stat}'")))?;
    // `.../mean` has a relative stdev beside it: `.../stdev/relative`.
    let ci95 = stat.strip_suffix("/mean").and_then(|base| {
        let rel = nvbench_summary(state, &format!("{base}/stdev/relative"))?;
        let kind = stat.split('/').nth(1).unwrap_or("cold");
        let n = nvbench_summary(state, &format!("nv/{kind}/sample_size"))?;
        mean_ci95(rel * value, n)
    });
    Ok(Number { value, ci95 })
}
