//! Each benchmark's own window in a run of many (Google Benchmark,
//! nvbench, pytest-benchmark, asv, or the user's markers): the steady
//! samples inside its span (`metric_sources::spans` finds the spans in the
//! trace's timed stdout lines) summarised like a whole run, so the rules
//! explain a regressed benchmark with its own counters. A benchmark whose
//! span is not found, or too short to summarise, keeps the whole window
//! and says why (`BenchSpan::fallback`).

use super::{summarize_window, RunSummary};
use crate::config::Config;
use crate::metric_sources::spans::{find, lookup, Progress, Span};
use crate::trace::{Samples, Trace};
use std::collections::BTreeMap;

/// Fewer steady samples than this in a span: too few for its statistics
/// and time features (a 0.3 s test at 100 ms); the whole window is used.
pub const MIN_SPAN_SAMPLES: usize = 5;

/// Benchmarks of one run given spans at most (each summary is a run's
/// summary); the rest keep the whole window and say so.
pub const MAX_SPANS: usize = 64;

/// One benchmark a user metric read: its metric id, the table that reads
/// it and its name in the harness's file (or the table's name).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Benchmark {
    pub id: String,
    pub table: String,
    pub name: String,
}

impl Benchmark {
    pub(crate) fn new(id: &str, table: &str, name: &str) -> Benchmark {
        Benchmark {
            id: id.to_string(),
            table: table.to_string(),
            name: name.to_string(),
        }
    }
}

/// One benchmark's window in one run.
#[derive(Debug, Clone)]
pub struct BenchSpan {
    /// The benchmark as the harness names it.
    pub benchmark: String,
    /// What found the span (`Progress::describe`).
    pub found_by: &'static str,
    /// Seconds since the recording started (the steady samples in it).
    pub start_s: f64,
    pub end_s: f64,
    /// Its steady samples (valid while the trace keeps its samples).
    pub steady: Samples,
    /// The span's summary; None when it fell back to the whole window.
    pub summary: Option<RunSummary>,
    /// Why the whole window explains this benchmark.
    pub fallback: Option<String>,
}

/// What found a table's spans (`Progress::describe`), how to make it
/// print them (`Progress::hint`), and the spans.
type Found = (&'static str, &'static str, Vec<Span>);

/// The spans of `benchmarks` in `trace`: computed when a run has several
/// benchmarks, or a table declares `spans` markers. Keyed by metric id.
pub(crate) fn derive(
    config: &Config,
    trace: &Trace,
    steady: &Samples,
    benchmarks: &[Benchmark],
    values: &BTreeMap<String, super::UserMetricValue>,
) -> BTreeMap<String, BenchSpan> {
    let marked = |b: &Benchmark| {
        config
            .file
            .user_metrics
            .get(b.table.as_str())
            .is_some_and(|d| d.spans.is_some())
    };
    if benchmarks.len() < 2 && !benchmarks.iter().any(marked) {
        return BTreeMap::new();
    }
    let lines: Vec<(f64, &str)> = trace.output.iter().map(|o| (o.t, o.line)).collect();
    // Each table's spans, found once.
    let mut found: BTreeMap<&str, Option<Found>> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for (i, b) in benchmarks.iter().enumerate() {
        let spans = found.entry(b.table.as_str()).or_insert_with(|| {
            let def = config.file.user_metrics.get(b.table.as_str())?;
            let format = config.user_sources.get(&b.table)?.format();
            let markers = def.spans_regex();
            let p = Progress::of(format, markers.as_ref())?;
            Some((p.describe(), p.hint(), find(&p, &lines)))
        });
        let by = spans.as_ref().map_or("", |s| s.0);
        let span = match &*spans {
            None => Err(
                "nothing marks its span: declare spans = REGEX in its [user_metrics] table"
                    .to_string(),
            ),
            Some(_) if i >= MAX_SPANS => Err(format!(
                "gate keeps the spans of {MAX_SPANS} benchmarks of a run"
            )),
            Some((_, hint, s)) => lookup(s, &b.name).map_err(|why| format!("{why}; {hint}")),
        };
        let mut w = window(trace, steady, &b.name, by, span);
        // The span's rate of work is its own benchmark's number (the
        // rules' "more work per unit"), not the run's first one.
        let rate = (values.get(&b.id))
            .and_then(|v| config.work_rate(&BTreeMap::from([(b.table.clone(), v.value)])));
        if let (Some(summary), Some(rate)) = (w.summary.as_mut(), rate) {
            let key = crate::analysis::features::WORK_RATE;
            summary.features.insert(key.to_string(), rate);
        }
        out.insert(b.id.clone(), w);
    }
    out
}

/// The summary of one benchmark's span, or the whole window and why.
fn window(
    trace: &Trace,
    steady: &Samples,
    name: &str,
    found_by: &'static str,
    span: Result<&Span, String>,
) -> BenchSpan {
    let mut out = BenchSpan {
        benchmark: name.to_string(),
        found_by,
        start_s: 0.0,
        end_s: 0.0,
        steady: Samples::default(),
        summary: None,
        fallback: None,
    };
    let span = match span {
        Ok(s) => s,
        Err(why) => {
            out.fallback = Some(format!("its span was not found ({why})"));
            return out;
        }
    };
    out.steady = within(steady, trace, span);
    if let (Some(a), Some(b)) = (out.steady.first(), out.steady.last()) {
        out.start_s = trace.times_ms.at(a) / 1000.0;
        out.end_s = trace.times_ms.at(b) / 1000.0;
    }
    if out.steady.len() < MIN_SPAN_SAMPLES {
        let (a, b) = span.bounds();
        out.fallback = Some(format!(
            "its span ({:.2}-{} s) holds {} steady samples, fewer than {MIN_SPAN_SAMPLES}",
            a / 1000.0,
            if b.is_finite() {
                format!("{:.2}", b / 1000.0)
            } else {
                "end".into()
            },
            out.steady.len()
        ));
        out.steady.clear();
        return out;
    }
    out.summary = Some(summarize_window(trace, &out.steady));
    out
}

/// The samples of `steady` whose time `span` holds. The times are decoded
/// in one pass as `filter` visits the samples in order (`Times::at`
/// decodes its block from the start: a call a sample was up to 63 steps
/// each, for every benchmark).
fn within(steady: &Samples, trace: &Trace, span: &Span) -> Samples {
    let mut times = trace.times_ms.iter();
    let mut next = 0;
    steady.filter(|i| {
        let t = times.nth(i - next).expect("every sample has a time");
        next = i + 1;
        span.contains(t)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{self, Signature};

    fn config(text: &str) -> Config {
        Config::parse(text, "gate.toml").unwrap()
    }

    #[test]
    fn a_marked_span_is_summarised_and_a_missing_one_falls_back_with_why() {
        let mut sig = Signature::healthy().with_samples(100);
        sig.extra_output.clear();
        let mut t = synthetic::trace(&sig, 1);
        // Markers at 5 s and 8 s: "a" holds the samples between them.
        let mut lines: Vec<_> = t.output.iter().map(|l| l.to_record()).collect();
        for (ms, l) in [(5000.0, "=== a"), (8000.0, "=== b")] {
            lines.push(crate::trace::OutputRecord {
                t: ms,
                line: l.into(),
            });
        }
        lines.sort_by(|x, y| x.t.total_cmp(&y.t));
        t.output = lines.into_iter().collect();
        let c = config("[user_metrics.x]\nregex = '^samples_per_s: ([0-9.]+)'\ndirection = \"higher_is_better\"\nspans = '^=== (?P<name>\\w+)$'\n");
        let steady = super::super::steady_window(&t);
        let b = |n: &str| Benchmark {
            id: format!("x.{n}"),
            table: "x".into(),
            name: n.into(),
        };
        let value = super::super::UserMetricValue {
            value: 5.0,
            lines: 1,
            ci95: None,
        };
        let values = BTreeMap::from([("x.a".to_string(), value)]);
        let s = derive(&c, &t, &steady, &[b("a"), b("b"), b("c")], &values);
        let a = &s["x.a"];
        assert!(a.fallback.is_none(), "{:?}", a.fallback);
        assert_eq!(a.steady.len(), 30, "after 5.0 s, to 8.0 s, at 100 ms");
        assert!((a.start_s - 5.1).abs() < 1e-9 && (a.end_s - 8.0).abs() < 1e-9);
        let summary = a.summary.as_ref().unwrap();
        assert!(summary.metric("gpu_busy_pct").is_some());
        // Its rate of work is its own number (a throughput here).
        let rate = crate::analysis::features::WORK_RATE;
        assert_eq!(summary.features.get(rate), Some(&5.0));
        assert!(s["x.b"].summary.is_some(), "b runs to the end");
        let c = &s["x.c"];
        assert!(c.summary.is_none());
        assert!(
            c.fallback
                .as_deref()
                .unwrap()
                .contains("no progress line names it"),
            "{:?}",
            c.fallback
        );
    }
}
