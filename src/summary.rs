//! A run's summary, built in ONE place: the steady window of a trace (the
//! samples after warm-up), the statistics of every column over it, the
//! time-window features the rules read (`analysis::features`), and the
//! benchmark's own metrics (gate.toml `[user_metrics]`). `check`, `capture`,
//! `ab`, `diff` and `report` all derive a run through `Run::derive`
//! (`run.rs`), so they judge, store and explain the same numbers.

use crate::config::user_metrics::{Aggregate, UserSource};
use crate::config::Config;
use crate::stats::{MetricSource, MetricStats, Stat};
use crate::trace::{Samples, Trace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod run;
pub mod series;
pub mod spans;
pub(crate) mod steady_values;
pub mod timeline;
pub use run::{end_failure, Ending, Neighbour, Run, RunFailure};
pub use series::RunSeries;
pub use spans::BenchSpan;

/// The steady window: the samples after warm-up (the recorder marks it:
/// `--warmup`, `--warmup-until`) and before teardown (the idle tail after
/// the last step, `validity::teardown_samples`), as ranges.
pub fn steady_window(trace: &Trace) -> Samples {
    Samples::matching(trace.sample_count(), |i| trace.is_steady(i))
}

/// Statistics of one GPU over a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GpuSummary {
    pub index: u32,
    pub uuid: String,
    pub name: String,
    pub metrics: BTreeMap<String, MetricStats>,
}

/// Everything later stages need from one run. Pure data: built from a
/// trace, then judged, diagnosed and reported without touching hardware.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunSummary {
    /// Where the run came from (trace path or "live").
    pub source: String,
    /// Steady window in ms since the recording started.
    pub(crate) steady_start_ms: f64,
    pub(crate) steady_end_ms: f64,
    pub(crate) total_samples: usize,
    pub(crate) steady_samples: usize,
    pub gpus: Vec<GpuSummary>,
    /// Per-sample mean over GPUs, then summarised.
    pub(crate) gpu_aggregate: BTreeMap<String, MetricStats>,
    pub host: BTreeMap<String, MetricStats>,
    /// The benchmark's wall time in its measured phase: from the end of
    /// warm-up (`--warmup`, `--warmup-until`) to its exit; the whole run
    /// when nothing was marked warm-up. Start-up (imports, model set-up,
    /// compilation) varied by seconds between identical runs on the H200
    /// machines, and the user declared it outside the measurement.
    pub wall_time_s: Option<f64>,
    /// Seconds from the target's start to the end of warm-up (the first
    /// sample not marked warm-up); None when nothing was marked warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) startup_s: Option<f64>,
    /// Seconds from the end of the measured window to the target's exit,
    /// not judged: the idle tail after the target's GPU work (a harness's
    /// statistics and report, a checkpoint, CUDA teardown) or everything
    /// after an `--until` line. None when nothing was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown_s: Option<f64>,
    /// The window was closed by an `--until` line (not found idle).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub closed_by_until: bool,
    pub exit_code: Option<i32>,
    pub truncated: bool,
    /// Benchmark-reported numbers (parsed from its output per gate.toml).
    #[serde(default)]
    pub user_metrics: BTreeMap<String, f64>,
    /// Derived time-window features (idle fraction, periodicity, imbalance...)
    /// computed by `analysis::features`; keyed "metric.feature".
    #[serde(default)]
    pub features: BTreeMap<String, f64>,
}

impl MetricSource for RunSummary {
    fn stat(&self, metric: &str, stat: Stat, gpu: Option<usize>) -> Option<f64> {
        match gpu {
            Some(g) => Some(self.gpus.get(g)?.metrics.get(metric)?.get_stat(stat)),
            None => Some(self.metric(metric)?.get_stat(stat)),
        }
    }

    fn feature(&self, name: &str) -> Option<f64> {
        self.features.get(name).copied()
    }

    fn gpu_count(&self) -> usize {
        self.gpus.len()
    }

    fn runs(
        &self,
        metric: &str,
        stat: Stat,
        gpu: Option<usize>,
    ) -> Option<Vec<(f64, Option<f64>)>> {
        let m = match gpu {
            Some(g) => self.gpus.get(g)?.metrics.get(metric)?.clone(),
            None => self.metric(metric)?,
        };
        Some(vec![(m.get_stat(stat), m.mean_ci95)])
    }
}

impl RunSummary {
    /// The statistics of one column (`statistics` computed them).
    pub(crate) fn column_stats(&self, column: &Column) -> Option<MetricStats> {
        match *column {
            Column::Gpu { slot, id } => self.gpus.get(slot)?.metrics.get(id).cloned(),
            Column::GpuMean { id } => self.gpu_aggregate.get(id).cloned(),
            Column::Host { id } => self.host.get(id).cloned(),
        }
    }

    /// Look a metric up: GPU aggregate first, then host, then run-level.
    pub fn metric(&self, id: &str) -> Option<MetricStats> {
        if let Some(s) = self.gpu_aggregate.get(id).or_else(|| self.host.get(id)) {
            return Some(s.clone());
        }
        if id == "wall_time_s" {
            return self.wall_time_s.map(MetricStats::single);
        }
        self.user_metrics.get(id).map(|v| MetricStats::single(*v))
    }
}

/// Statistics and features of a trace's steady window. User metrics need
/// gate.toml: `Run::derive` adds them.
pub fn summarize(trace: &Trace) -> RunSummary {
    summarize_window(trace, &steady_window(trace))
}

/// `summarize` over a steady window already computed.
fn summarize_window(trace: &Trace, steady: &Samples) -> RunSummary {
    let mut run = statistics(trace, steady);
    run.features = crate::analysis::features::compute(trace, steady);
    run
}

/// The statistics of every column over the `steady` samples: one pass over
/// each column's contiguous series, the columns spread over the cores
/// (`parallel`; the same numbers on any thread count).
fn statistics(trace: &Trace, steady: &Samples) -> RunSummary {
    let (ngpu, ncols) = (trace.gpu_count(), trace.header.gpu_columns.len());
    let jobs: Vec<Column<'_>> = (0..ngpu)
        .flat_map(|slot| {
            trace
                .header
                .gpu_columns
                .iter()
                .map(move |id| Column::Gpu { slot, id })
        })
        .chain(
            trace
                .header
                .gpu_columns
                .iter()
                .map(|id| Column::GpuMean { id }),
        )
        .chain(
            trace
                .header
                .host_columns
                .iter()
                .map(|id| Column::Host { id }),
        )
        .collect();
    // Each job reads its column in place (`from_visits`): its memory is
    // at most `VISIT_BYTES`, a copy of the steady values while they fit
    // it, else counter tables.
    let mut stats = crate::parallel::map_within(crate::stats::VISIT_BYTES, &jobs, |c| {
        MetricStats::from_visits(steady.len(), |f| steady_values::visit(trace, steady, c, f))
    })
    .into_iter();
    let mut gpus = Vec::with_capacity(ngpu);
    for info in &trace.header.fingerprint.gpus {
        let mut metrics = BTreeMap::new();
        for (id, s) in trace
            .header
            .gpu_columns
            .iter()
            .zip(stats.by_ref().take(ncols))
        {
            if let Some(s) = s {
                metrics.insert(id.clone(), s);
            }
        }
        gpus.push(GpuSummary {
            index: info.index,
            uuid: info.uuid.clone(),
            name: info.name.clone(),
            metrics,
        });
    }
    // The aggregate columns, then the host columns, each named by its id;
    // a column without a statistic is left out.
    let mut named = |ids: &[String]| -> BTreeMap<_, _> {
        ids.iter()
            .zip(stats.by_ref().take(ids.len()))
            .filter_map(|(id, s)| Some((id.clone(), s?)))
            .collect()
    };
    let gpu_aggregate = named(&trace.header.gpu_columns);
    let host = named(&trace.header.host_columns);
    let target_wall_s = trace.end.as_ref().and_then(|e| e.target_wall_s);
    let startup_s = startup_s(trace).map(|s| target_wall_s.map_or(s, |w| s.min(w)));
    let teardown_s = trace.teardown_s();
    RunSummary {
        source: trace.path.display().to_string(),
        steady_start_ms: steady.first().map(|i| trace.times_ms.at(i)).unwrap_or(0.0),
        steady_end_ms: steady.last().map(|i| trace.times_ms.at(i)).unwrap_or(0.0),
        total_samples: trace.sample_count(),
        steady_samples: steady.len(),
        gpus,
        gpu_aggregate,
        host,
        wall_time_s: target_wall_s
            .map(|w| (w - startup_s.unwrap_or(0.0) - teardown_s.unwrap_or(0.0)).max(0.0)),
        startup_s,
        teardown_s,
        closed_by_until: trace.closed_at_ms.is_some(),
        exit_code: trace.exit_code(),
        truncated: trace.truncated,
        user_metrics: BTreeMap::new(),
        features: BTreeMap::new(),
    }
}

/// When warm-up ended, in seconds since the target started: the time of
/// the first sample not marked warm-up (within one sampling interval of the
/// `--warmup-until` line). None when no sample was marked warm-up, or when
/// every sample was.
fn startup_s(trace: &Trace) -> Option<f64> {
    if !trace.warmup.any() {
        return None;
    }
    let first = trace.warmup.first_clear()?;
    Some(trace.times_ms.at(first) / 1000.0)
}

/// One column of one trace: a GPU's series, the per-sample mean over the
/// GPUs, or a host series.
pub enum Column<'a> {
    Gpu {
        slot: usize,
        id: &'a str,
    },
    /// Per-sample mean over the trace's GPUs.
    GpuMean {
        id: &'a str,
    },
    Host {
        id: &'a str,
    },
}

impl Column<'_> {
    /// The metric's id.
    pub fn id(&self) -> &str {
        match self {
            Column::Gpu { id, .. } | Column::GpuMean { id } | Column::Host { id } => id,
        }
    }
}

/// One user metric of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UserMetricValue {
    pub value: f64,
    /// Matching lines.
    pub lines: usize,
    /// 95 % half-width over the lines (batch means), when there are enough.
    pub ci95: Option<f64>,
}

/// The time span (ms since the recording started) of a trace's output
/// lines that belong to the steady window: from the end of warm-up (the
/// later of `--warmup` and the `--warmup-until` line) to the first teardown
/// sample. `None` ends: no teardown was found.
fn output_window_ms(trace: &Trace) -> (f64, Option<f64>) {
    let start = trace.warmup_end_ms();
    let n = trace.sample_count();
    let end = trace.closed_at_ms.or_else(|| {
        (trace.teardown > 0 && trace.teardown <= n).then(|| trace.times_ms.at(n - trace.teardown))
    });
    (start, end)
}

/// Values of each user metric in one trace (`user_metric_readings`), for
/// the tests and the fuzz targets.
#[cfg(any(test, feature = "testkit"))]
pub(crate) fn user_metric_values(
    config: &Config,
    trace: &Trace,
) -> BTreeMap<String, UserMetricValue> {
    user_metric_readings(config, trace).values
}

/// The user metrics of one trace, and what their sources said besides
/// numbers (a file that could not be read, a result the file calls invalid).
#[derive(Debug, Clone, Default)]
pub(crate) struct UserReadings {
    pub values: BTreeMap<String, UserMetricValue>,
    /// One per metric whose source gave no number, naming it and why.
    pub problems: Vec<UserProblem>,
    /// One line per source that says the run is invalid (MLPerf LoadGen's
    /// `Result is : INVALID`): the run fails (`gate::check`).
    pub invalid: Vec<String>,
    /// Every benchmark read (a glob's each, a harness table's one, a table
    /// with `spans` markers), for their spans (`spans::derive`).
    pub(crate) benchmarks: Vec<spans::Benchmark>,
    /// The benchmark's own name in its harness's file (`test_sum[0]`) of
    /// each metric a glob table read, by metric id: what outputs show
    /// beside the sanitised id.
    pub names: BTreeMap<String, String>,
}

/// A declared user metric that a run did not give: its name, why, and
/// whose fault (`metric_sources::Fault`; exit 2 for the reader's mistake, 5
/// when the benchmark did not produce it). An `optional` metric's problem
/// is only a warning.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UserProblem {
    pub metric: String,
    pub(crate) fault: crate::metric_sources::Fault,
    pub optional: bool,
    pub text: String,
}

impl std::fmt::Display for UserProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "user metric '{}': {}", self.metric, self.text)
    }
}

/// See `UserReadings`: every user metric of gate.toml read from `trace`
/// (stdout lines, or the metrics file in its end record), then the
/// configured aggregate.
///
/// Stdout lines count in the counters' window (`output_window_ms`): a
/// benchmark that prints per-step numbers is judged on its steady steps,
/// not on its warm-up. `aggregate = "last"` takes the last line printed
/// after warm-up, teardown included: a benchmark prints its final summary
/// as it exits, when the GPU already idles. A benchmark whose every line
/// falls in teardown (one number printed at exit, aggregate mean or
/// median) is judged on those lines rather than not at all. A metrics file
/// has no times: all its values count.
pub(crate) fn user_metric_readings(config: &Config, trace: &Trace) -> UserReadings {
    use crate::metric_sources::{Fault, Problem};
    let mut out = UserReadings::default();
    let (start_ms, end_ms) = output_window_ms(trace);
    let end = trace.end.as_ref();
    for (name, reader) in &config.user_sources {
        let def = &config.file.user_metrics[name.as_str()];
        let mut problem = |p: Problem| {
            out.problems.push(UserProblem {
                metric: name.clone(),
                fault: p.fault,
                optional: def.optional,
                text: p.text,
            })
        };
        // (value, in teardown) of every reading after warm-up.
        let mut matched: Vec<(f64, bool)> = Vec::new();
        // The harness's own interval of a file's single value.
        let mut file_ci95 = None;
        match def.source {
            UserSource::Stdout => {
                for o in trace.output.iter().filter(|o| o.t >= start_ms) {
                    let torn = end_ms.is_some_and(|e| o.t >= e);
                    matched.extend(reader.line_value(o.line).into_iter().map(|v| (v, torn)));
                }
                if matched.is_empty() && !trace.truncated {
                    problem(Problem::not_produced(
                        "no stdout line after warm-up carried it (the benchmark did not print its number)".into(),
                    ));
                }
            }
            UserSource::MetricsFile => match (
                end.and_then(|e| e.metrics_file.as_ref()),
                end.and_then(|e| e.metrics_file_problem.as_ref()),
            ) {
                (Some(text), _) => {
                    let r = reader.read_file(text);
                    matched = r.values.into_iter().map(|v| (v, false)).collect();
                    file_ci95 = r.ci95;
                    let (values, names) = (&mut out.values, &mut out.names);
                    match insert_bulk(values, names, name, r.each) {
                        Ok(ids) => out.benchmarks.extend(
                            ids.iter().map(|(id, bench)| spans::Benchmark::new(id, name, bench)),
                        ),
                        Err(p) => problem(p),
                    }
                    if let Some(p) = r.problem {
                        problem(p);
                    }
                    // Once per run, not once per metric reading the file.
                    if let Some(i) = r.invalid {
                        if !out.invalid.contains(&i) {
                            out.invalid.push(i);
                        }
                    }
                }
                (None, Some(p)) => problem(Problem {
                    fault: if p.kind.not_produced() {
                        Fault::NotProduced
                    } else {
                        Fault::MetricsFile
                    },
                    text: p.message.clone(),
                }),
                // A truncated trace has no end record: its failure says why.
                (None, None) if end.is_none() => {}
                (None, None) => problem(Problem::config(
                    "the run was recorded without --metrics-file; pass --metrics-file FILE (or metrics_file in the suite workload)".into(),
                )),
            },
        }
        if let Some(why) = negative_reading(name, &def.unit, &matched) {
            out.invalid.push(why);
            continue;
        }
        if let Some(v) = aggregate(def.aggregate, &matched) {
            // One benchmark of a harness file, or a table with markers.
            let bench = match reader.pattern() {
                Some(p) => Some(p.text().to_string()),
                None => def.spans.is_some().then(|| name.clone()),
            };
            out.benchmarks
                .extend(bench.map(|b| spans::Benchmark::new(name, name, &b)));
            out.values.insert(
                name.clone(),
                UserMetricValue {
                    ci95: file_ci95.or(v.ci95),
                    ..v
                },
            );
        }
    }
    out
}

/// A time or a rate is never negative: such a number is a broken
/// benchmark, never a -1700 % "improvement". Why, when one is.
fn negative_reading(name: &str, unit: &str, matched: &[(f64, bool)]) -> Option<String> {
    let (v, _) = matched.iter().find(|m| m.0 < 0.0)?;
    crate::metric_sources::never_negative(unit).then(|| {
        format!("user metric '{name}': the benchmark reported {v} {unit}; a time or a rate is never negative")
    })
}

/// The benchmarks a glob table read, each its own metric under its id
/// (`metric_sources::bulk_ids`: unique, or refused) with its own name.
fn insert_bulk(
    values: &mut BTreeMap<String, UserMetricValue>,
    names: &mut BTreeMap<String, String>,
    table: &str,
    each: Vec<(String, crate::metric_sources::Number)>,
) -> Result<Vec<(String, String)>, crate::metric_sources::Problem> {
    let mut read = Vec::new();
    for (id, bench, n) in crate::metric_sources::bulk_ids(table, each)? {
        let value = UserMetricValue {
            value: n.value,
            lines: 1,
            ci95: n.ci95,
        };
        values.insert(id.clone(), value);
        names.insert(id.clone(), bench.clone());
        read.push((id, bench));
    }
    Ok(read)
}

/// One value of the readings `(value, in teardown)` of a run, by `how`.
fn aggregate(how: Aggregate, matched: &[(f64, bool)]) -> Option<UserMetricValue> {
    let steady: Vec<f64> = matched.iter().filter(|m| !m.1).map(|m| m.0).collect();
    let values = match how {
        Aggregate::Last => matched.iter().map(|m| m.0).collect(),
        _ if steady.is_empty() => matched.iter().map(|m| m.0).collect(),
        _ => steady,
    };
    let last = *values.last()?;
    let value = match how {
        Aggregate::Mean => values.iter().sum::<f64>() / values.len() as f64,
        Aggregate::Median => {
            let mut s = values.clone();
            s.sort_by(|a, b| a.total_cmp(b));
            crate::stats::percentile_sorted(&s, 50.0)
        }
        Aggregate::Last => last,
    };
    // Lines within a run are autocorrelated like samples: batch means.
    let ci95 = match how {
        Aggregate::Last => None,
        _ => crate::stats::mean_ci95(&values),
    };
    Some(UserMetricValue {
        value,
        lines: values.len(),
        ci95,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{EventKind, EventRecord, OutputRecord};

    /// 10 samples at 100 ms; the first 3 warm-up, the last 2 teardown.
    fn trace(lines: &[(f64, &str)]) -> Trace {
        let n = 10;
        Trace {
            times_ms: (0..n).map(|i| i as f64 * 100.0).collect(),
            warmup: (0..n).map(|i| i < 3).collect(),
            teardown: 2,
            output: lines
                .iter()
                .map(|&(t, l)| OutputRecord { t, line: l.into() })
                .collect(),
            header: crate::trace::Header {
                interval_ms: 100,
                warmup_ms: 250,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn value(aggregate: &str, t: &Trace) -> Option<f64> {
        let c = Config::parse(
            &format!("[user_metrics.rate]\nregex = '^rate: ([0-9.]+)'\ndirection = \"higher_is_better\"\naggregate = \"{aggregate}\"\n"),
            "gate.toml",
        )
        .unwrap();
        user_metric_values(&c, t).get("rate").map(|v| v.value)
    }

    #[test]
    fn user_metrics_count_the_steady_window_and_last_keeps_the_final_line() {
        // Warm-up prints 10 (before 250 ms), steady steps 100, and the
        // final summary 70 lands in teardown (from 800 ms).
        let t = trace(&[
            (50.0, "rate: 10"),
            (150.0, "rate: 10"),
            (400.0, "rate: 100"),
            (600.0, "rate: 100"),
            (850.0, "rate: 70"),
        ]);
        assert_eq!(value("mean", &t), Some(100.0));
        assert_eq!(value("median", &t), Some(100.0));
        assert_eq!(value("last", &t), Some(70.0));
        // One number printed at exit, in teardown: judged, not lost.
        let once = trace(&[(50.0, "rate: 10"), (850.0, "rate: 70")]);
        assert_eq!(value("mean", &once), Some(70.0));
        // Only warm-up lines: nothing measured.
        assert_eq!(value("mean", &trace(&[(50.0, "rate: 10")])), None);
    }

    #[test]
    fn a_warmup_until_line_ends_the_warmup_of_user_metrics() {
        let mut t = trace(&[(260.0, "rate: 10"), (300.0, "warm"), (400.0, "rate: 100")]);
        t.events.push(EventRecord {
            t: 300.0,
            kind: EventKind::Note,
            gpu: None,
            pid: None,
            code: None,
            message: format!("{}warm", crate::trace::WARMUP_RELEASED_NOTE),
        });
        assert_eq!(value("mean", &t), Some(100.0));
    }
}
