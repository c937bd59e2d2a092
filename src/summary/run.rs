//! One run after derive: everything the verdict, the baselines, the
//! history and the reporters read of a run, made once from its trace
//! (`Run::derive`), which is then dropped. Its identity (the trace's path
//! and header: command, tags, fingerprint), how it ended (`Ending`, with
//! the `RunFailure` when it cannot count), the summary with its features,
//! the benchmark's own numbers and their spans, and what acted on it from
//! outside its tree, and, for a check page, the series it plots
//! (`RunSeries`), for `gate report`, its panorama, processes and plotted
//! series (`Timeline`). A run that a baseline pools with others keeps its
//! sample columns, parked in a scratch file (`Run::keep_samples`); no
//! other run holds a column.

use super::series::{LineBudget, RunSeries};
use super::spans::BenchSpan;
use super::timeline::{Timeline, TimelinePlan};
use super::{
    spans, steady_values, steady_window, summarize_window, user_metric_readings, Column,
    RunSummary, UserMetricValue, UserProblem,
};
use crate::config::Config;
use crate::error::GateError;
use crate::exit_code;
use crate::trace::{Columns, EndRecord, Header, Samples, StopReason, Trace};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Xid codes a run keeps (the disturbance names at most these).
const XID_CODES_KEPT: usize = 8;

/// One measured run (or node), derived from its trace.
#[derive(Debug, Clone)]
pub struct Run {
    /// Where it came from: its trace's path, as every report names it.
    pub source: String,
    /// The trace's header: command, tags, fingerprint, columns, sampling
    /// interval and warm-up.
    pub header: Header,
    /// How it ended, and why it cannot count when it cannot.
    pub ending: Ending,
    /// The steady window (`steady_window`), computed once; its samples
    /// are read only through `keep_samples`'s columns.
    pub steady: Samples,
    /// `summarize` plus the user metrics.
    pub summary: RunSummary,
    pub user: BTreeMap<String, UserMetricValue>,
    /// `UserReadings::problems`, `::invalid` and `::names` of this run.
    pub(crate) user_problems: Vec<UserProblem>,
    pub(crate) user_invalid: Vec<String>,
    pub(crate) user_benchmarks: BTreeMap<String, String>,
    /// Each benchmark's own window, by metric id, when the run has several
    /// (`spans`); empty otherwise.
    pub spans: BTreeMap<String, BenchSpan>,
    /// Processes outside the benchmark's tree that held a context on a
    /// GPU, by GPU index, each once, in the order first seen.
    pub(crate) neighbours: BTreeMap<u32, Vec<Neighbour>>,
    /// The codes of its first Xid events.
    pub(crate) xid_codes: Vec<i64>,
    /// The series a check page plots, when one is written (`plot`).
    pub series: Option<Arc<RunSeries>>,
    /// What `gate report` shows of it beyond the summary (panorama,
    /// processes, plotted series), when it is reported (`explain`).
    pub timeline: Option<Box<Timeline>>,
    /// The trace's sample columns, when kept for a baseline's pooled
    /// statistics (`keep_samples`).
    kept: Option<Columns>,
}

/// How a run ended, from its trace's end record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ending {
    /// Why the run cannot count, if it cannot.
    pub failure: Option<RunFailure>,
    /// The benchmark's exit code, when it ran to completion.
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
    /// The trace has no end record (cut short).
    pub truncated: bool,
    /// Why `--metrics-file` gave nothing, when it did not.
    pub(crate) metrics_file_problem: Option<String>,
}

/// A process outside the tree that held a context on the GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Neighbour {
    pub pid: u32,
    pub name: String,
}

impl Run {
    /// The single place a run is derived before it is judged, stored or
    /// reported: statistics, diagnosis features and the user metrics of
    /// `config`, its identity and how it ended. The trace may be dropped
    /// afterwards.
    pub fn derive(trace: &Trace, config: &Config) -> Run {
        let steady = steady_window(trace);
        let mut summary = summarize_window(trace, &steady);
        let readings = user_metric_readings(config, trace);
        let spans = spans::derive(
            config,
            trace,
            &steady,
            &readings.benchmarks,
            &readings.values,
        );
        let user = readings.values;
        summary.user_metrics = user.iter().map(|(k, v)| (k.clone(), v.value)).collect();
        if let Some(rate) = config.work_rate(&summary.user_metrics) {
            let key = crate::analysis::features::WORK_RATE;
            summary.features.insert(key.to_string(), rate);
        }
        Run {
            source: trace.path.display().to_string(),
            header: trace.header.clone(),
            ending: Ending::of(trace),
            steady,
            summary,
            user,
            user_problems: readings.problems,
            user_invalid: readings.invalid,
            user_benchmarks: readings.names,
            spans,
            neighbours: neighbours(trace),
            xid_codes: (trace.events.iter())
                .filter(|e| e.kind == crate::trace::EventKind::Xid)
                .filter_map(|e| e.code)
                .take(XID_CODES_KEPT)
                .collect(),
            series: None,
            timeline: None,
            kept: None,
        }
    }

    /// Take the series the check page plots from this run's trace
    /// (downsampled: `RunSeries::of`), this run the one at `place` among
    /// those `lines` follows (the lines no chart can draw left out).
    pub fn plot(&mut self, trace: &Trace, lines: &LineBudget, place: usize) {
        self.series = Some(Arc::new(lines.series(place, trace)));
    }

    /// Take what `gate report` shows of this run from its trace
    /// (`Timeline::of`): a trace without samples is not explained.
    pub fn explain(&mut self, trace: &Trace, plan: &TimelinePlan) {
        if trace.sample_count() > 0 {
            self.timeline = Some(Box::new(Timeline::of(trace, plan)));
        }
    }

    /// Keep `trace`'s sample columns (this run's trace), parked in a
    /// scratch file (`Columns::park`): a baseline pooling several runs (or
    /// the nodes of one) reads each run's own column back, a column at a
    /// time. The rest of the trace is dropped.
    pub fn keep_samples(&mut self, mut trace: Trace) -> Result<(), GateError> {
        trace.park_samples()?;
        self.kept = Some(std::mem::take(&mut trace.columns));
        Ok(())
    }

    /// `keep_samples` without parking: the columns stay where they are (a
    /// test's, or a tool's that holds few runs).
    pub fn keep_samples_in_place(&mut self, mut trace: Trace) {
        self.kept = Some(std::mem::take(&mut trace.columns));
    }

    /// Hand `f` the values of `column` at `samples` (the steady window or a
    /// span's), in order, a block at a time, NaN where missing; nothing
    /// when the run kept no samples.
    pub(crate) fn visit(
        &self,
        samples: &Samples,
        column: &Column,
        f: &mut dyn FnMut(crate::stats::Block<'_>),
    ) {
        debug_assert!(self.kept.is_some(), "{}: samples not kept", self.source);
        if let Some(columns) = &self.kept {
            steady_values::visit_columns(&self.header, columns, samples, column, f);
        }
    }

    /// The finite values of `column` at `samples`, in time order.
    pub fn finite(&self, samples: &Samples, column: &Column) -> Vec<f64> {
        let mut out = Vec::new();
        self.visit(samples, column, &mut |b| {
            b.for_each(|v| {
                if v.is_finite() {
                    out.push(v)
                }
            })
        });
        out
    }
}

impl Ending {
    fn of(trace: &Trace) -> Ending {
        let end = trace.end.as_ref();
        Ending {
            failure: run_failure(trace),
            exit_code: trace.exit_code(),
            signal: end.and_then(|e| e.signal),
            truncated: trace.truncated,
            metrics_file_problem: end
                .and_then(|e| e.metrics_file_problem.as_ref())
                .map(|p| p.message.clone()),
        }
    }
}

/// Each process outside the tree, by GPU, once each (its name cut to 64
/// characters).
fn neighbours(trace: &Trace) -> BTreeMap<u32, Vec<Neighbour>> {
    let mut by_gpu: BTreeMap<u32, Vec<Neighbour>> = BTreeMap::new();
    for rec in &trace.processes {
        for p in rec.procs.iter().filter(|p| !p.in_target) {
            let list = by_gpu.entry(rec.gpu).or_default();
            if !list.iter().any(|n| n.pid == p.pid) {
                list.push(Neighbour {
                    pid: p.pid,
                    name: p.name.chars().take(64).collect(),
                });
            }
        }
    }
    by_gpu
}

/// Why a run cannot count as a successful benchmark run, and whose failure
/// it is: the benchmark's own (exit 5, never retried) or the measurement's
/// (exit 3, retryable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFailure {
    pub message: String,
    /// The benchmark itself failed: it exited nonzero, or a signal that gate
    /// did not send killed it (SIGSEGV, SIGABRT, the OOM killer's SIGKILL).
    pub(crate) by_benchmark: bool,
}

impl RunFailure {
    /// The error for this failure, saying `msg`: the benchmark's (exit 5)
    /// or the measurement's (exit 3).
    pub fn error(&self, msg: impl Into<String>) -> GateError {
        if self.by_benchmark {
            GateError::BenchmarkFailed(msg.into())
        } else {
            GateError::Infra(msg.into())
        }
    }

    /// The exit code this failure gives.
    pub fn exit_code(&self) -> i32 {
        if self.by_benchmark {
            exit_code::BENCHMARK_FAILED
        } else {
            exit_code::INFRA
        }
    }
}

impl std::fmt::Display for RunFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Why a trace cannot count as a successful benchmark run, if it cannot.
fn run_failure(trace: &Trace) -> Option<RunFailure> {
    let src = trace.path.display().to_string();
    if trace.truncated {
        return Some(RunFailure {
            message: format!(
                "trace '{src}' is truncated (no end record): the benchmark or the recording was cut short"
            ),
            by_benchmark: false,
        });
    }
    if let Some(f) = end_failure(trace.end.as_ref()?, &src) {
        return Some(f);
    }
    // A window with no steady sample measured nothing: never a pass on the
    // harness's number alone (issue 41.2).
    if trace
        .note_time(crate::trace::WARMUP_NEVER_RELEASED_NOTE)
        .is_some()
    {
        return Some(RunFailure {
            message: format!(
                "--warmup-until never matched a line of the benchmark's stdout (stderr is not read), so every sample is warm-up and nothing was measured ('{src}'); give a pattern the benchmark prints on stdout, or --warmup DURATION"
            ),
            by_benchmark: false,
        });
    }
    if trace.closed_at_ms.is_some() && !(0..trace.sample_count()).any(|i| trace.is_steady(i)) {
        return Some(RunFailure {
            message: format!(
                "the window was closed by --until before any steady sample, so nothing was measured ('{src}'); give the benchmark's end-of-timed-section marker, printed after its work"
            ),
            by_benchmark: false,
        });
    }
    None
}

/// `run_failure` for an end record (`gate record` has no loaded trace).
/// Signals gate sends itself (the stop at the end of `--duration` or of
/// `--warmup-timeout`, a forwarded Ctrl-C or SIGTERM) are not the
/// benchmark's failure; any other signal, or a nonzero exit status, is.
pub fn end_failure(end: &EndRecord, src: &str) -> Option<RunFailure> {
    let measurement = |message: String| {
        Some(RunFailure {
            message,
            by_benchmark: false,
        })
    };
    let benchmark = |message: String| {
        Some(RunFailure {
            message,
            by_benchmark: true,
        })
    };
    match end.reason {
        StopReason::WarmupTimeout => return measurement(format!(
            "--warmup-until never matched within --warmup-timeout, so the benchmark was stopped before its window ('{src}')"
        )),
        StopReason::Interrupted => return measurement(format!(
            "the recording was interrupted: gate received a signal and forwarded it to the benchmark ('{src}')"
        )),
        _ => {}
    }
    if let Some(sig) = end.signal {
        if end.reason == StopReason::TargetExited {
            return benchmark(format!(
                "the benchmark was killed by signal {sig}{} ('{src}')",
                signal_name(sig)
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            ));
        }
        // gate itself stops the target with SIGTERM when --duration is reached.
        if end.reason != StopReason::DurationReached {
            return measurement(format!(
                "gate stopped the benchmark ({}) and it ended by signal {sig} ('{src}')",
                end.reason
            ));
        }
    }
    if let Some(code) = end.exit_code {
        if code != 0 {
            return benchmark(format!("the benchmark exited with code {code} ('{src}')"));
        }
    }
    None
}

/// The name of a common fatal signal, for messages.
fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => return None,
    })
}
