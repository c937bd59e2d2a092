//! The series the check page plots (`report::check::html`), taken from a
//! run's trace at derive (`Run::plot`), so that no page opens a trace
//! again: every GPU column of every GPU and every host column, each line at
//! most `MAX_POINTS` points (bucket means), steady or not. What a run keeps
//! is bounded by its columns, not by its length.
//!
//! Which metrics the page charts depends on the verdict (what moved, what
//! the findings cite), known only after every run is derived; which lines
//! a chart can draw does not: at most `MAX_LINES`, the first in run order.
//! So a run whose earlier runs (of the same acquisition, `LineBudget`)
//! already have `MAX_LINES` lines of a metric keeps only their count: of
//! 64 nodes of 8 GPUs, the first node's GPU lines and the first eight
//! nodes' host lines are kept, not 64 nodes' of every column.

use crate::trace::Trace;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Points per line at most: about one per two pixels of plot width.
pub const MAX_POINTS: usize = 600;
/// Lines per chart at most (runs x GPUs); the rest are named as left out.
pub const MAX_LINES: usize = 8;

/// Points of a line: (t seconds, value); NaN breaks it.
pub type Points = Vec<(f64, f64)>;
/// A line's key: metric id and GPU slot (None: a host metric).
pub type LineKey = (String, Option<usize>);

/// One run's series, downsampled for the check page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSeries {
    /// End of the warm-up and of the recording, seconds from the start.
    pub warmup_s: f64,
    pub end_s: f64,
    /// (metric id, GPU slot or None for a host metric) -> (t s, value).
    pub lines: BTreeMap<LineKey, Points>,
    /// Lines of a metric not kept, by metric id: runs before this one
    /// fill its charts (`LineBudget`). A chart counts them as left out.
    pub left_out: BTreeMap<String, usize>,
}

/// An empty series (a run that plotted nothing).
pub static NO_SERIES: RunSeries = RunSeries {
    warmup_s: 0.0,
    end_s: 0.0,
    lines: BTreeMap::new(),
    left_out: BTreeMap::new(),
};

impl RunSeries {
    /// Every column of `trace`, downsampled (a host column named like a
    /// GPU column is the GPU column's: it is left out).
    pub fn of(trace: &Trace) -> RunSeries {
        Self::within(trace, |_| true)
    }

    /// `of`, the lines of a metric that `keep` refuses counted in
    /// `left_out` and not taken.
    fn within(trace: &Trace, keep: impl Fn(&str) -> bool) -> RunSeries {
        let mut out = RunSeries {
            warmup_s: trace.header.warmup_ms as f64 / 1000.0,
            end_s: trace.times_ms.last().unwrap_or(0.0) / 1000.0,
            ..Default::default()
        };
        for (col, id) in trace.header.gpu_columns.iter().enumerate() {
            if !keep(id) {
                *out.left_out.entry(id.clone()).or_default() += trace.gpu_count();
                continue;
            }
            for gpu in 0..trace.gpu_count() {
                let pts = downsample(trace, out.end_s, |i| trace.gpu_value(i, gpu, col));
                out.lines.insert((id.clone(), Some(gpu)), pts);
            }
        }
        for (col, id) in trace.header.host_columns.iter().enumerate() {
            if trace.gpu_column(id).is_some() {
                continue;
            }
            if !keep(id) {
                *out.left_out.entry(id.clone()).or_default() += 1;
                continue;
            }
            let pts = downsample(trace, out.end_s, |i| trace.host_value(i, col));
            out.lines.insert((id.clone(), None), pts);
        }
        out
    }

    /// Lines of each metric, kept or not.
    fn counts(&self) -> BTreeMap<String, usize> {
        let mut out = self.left_out.clone();
        for (id, _) in self.lines.keys() {
            *out.entry(id.clone()).or_default() += 1;
        }
        out
    }
}

/// The lines of each run of one acquisition, by its place among them, as
/// each is derived (in any order: replayed traces load on several cores):
/// a run takes a metric's lines only while the runs before it that are
/// derived already have fewer than `MAX_LINES` of them. Those not derived
/// yet would only add lines, so what is left out could never be drawn.
#[derive(Debug, Default)]
pub struct LineBudget {
    /// Per place: lines of each metric, once that run is derived.
    counts: Mutex<Vec<Option<BTreeMap<String, usize>>>>,
}

impl LineBudget {
    /// The series of the run at `place` (`RunSeries::of`), without the
    /// metrics whose charts the runs before it fill.
    pub fn series(&self, place: usize, trace: &Trace) -> RunSeries {
        let before: BTreeMap<String, usize> = {
            let counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
            let mut sum = BTreeMap::new();
            for c in counts.iter().take(place).flatten() {
                for (id, n) in c {
                    *sum.entry(id.clone()).or_default() += n;
                }
            }
            sum
        };
        let full = |id: &str| before.get(id).is_some_and(|n| *n >= MAX_LINES);
        let series = RunSeries::within(trace, |id| !full(id));
        let mine = series.counts();
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if counts.len() <= place {
            counts.resize(place + 1, None);
        }
        counts[place] = Some(mine);
        series
    }
}

/// At most `MAX_POINTS` (t, value) points: the mean of the finite values
/// in each of `MAX_POINTS` equal time buckets (NaN where a bucket has none).
fn downsample(trace: &Trace, end_s: f64, value: impl Fn(usize) -> f32) -> Vec<(f64, f64)> {
    bucket_means(
        trace,
        end_s,
        MAX_POINTS.min(trace.sample_count().max(1)),
        value,
    )
}

/// One (mean time, mean of the finite values) point for each of `buckets`
/// equal time buckets up to `end_s` that holds a sample (NaN where none of
/// its values is finite): the one downsampling of the check page's series
/// and the run report's timelines.
pub(crate) fn bucket_means(
    trace: &Trace,
    end_s: f64,
    buckets: usize,
    value: impl Fn(usize) -> f32,
) -> Vec<(f64, f64)> {
    let width = if end_s > 0.0 {
        end_s / buckets as f64
    } else {
        1.0
    };
    let mut acc = vec![(0.0f64, 0usize, 0.0f64, 0usize); buckets];
    for (i, t) in trace.times_ms.iter().enumerate() {
        let t = t / 1000.0;
        let b = ((t / width) as usize).min(buckets - 1);
        acc[b].2 += t;
        acc[b].3 += 1;
        let v = value(i);
        if v.is_finite() {
            acc[b].0 += v as f64;
            acc[b].1 += 1;
        }
    }
    acc.iter()
        .filter(|a| a.3 > 0)
        .map(|a| {
            let v = if a.1 > 0 { a.0 / a.1 as f64 } else { f64::NAN };
            (a.2 / a.3 as f64, v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{trace, Signature};

    /// Two runs of 8 GPUs: the second one's GPU lines are never drawn
    /// once the first is derived (only counted), its host lines are; in
    /// the other order, nothing is known before it, so it keeps all.
    #[test]
    fn a_run_keeps_only_the_lines_a_chart_can_still_draw() {
        let t = trace(&Signature::healthy(), 8);
        let full = RunSeries::of(&t);
        // NaN breaks a line: compared as printed.
        let same = |a: &RunSeries, b: &RunSeries| format!("{a:?}") == format!("{b:?}");
        let gpu_id = &t.header.gpu_columns[0];
        let host_id = (t.header.host_columns.iter())
            .find(|id| t.gpu_column(id).is_none())
            .expect("a host column");

        let budget = LineBudget::default();
        assert!(same(&budget.series(0, &t), &full));
        let second = budget.series(1, &t);
        assert!(!second.lines.contains_key(&(gpu_id.clone(), Some(0))));
        assert_eq!(second.left_out.get(gpu_id), Some(&8));
        assert!(second.lines.contains_key(&(host_id.clone(), None)));
        assert_eq!(second.counts(), full.counts());

        let later_first = LineBudget::default();
        assert!(same(&later_first.series(1, &t), &full));
        assert!(same(&later_first.series(0, &t), &full));
    }
}
