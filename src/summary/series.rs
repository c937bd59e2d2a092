//! The series the check page plots (`report::check::html`), taken from a
//! run's trace at derive (`Run::derive_with`), so that no page opens a
//! trace again: every GPU column of every GPU and every host column, each
//! line at most `MAX_POINTS` points (bucket means), steady or not. What a
//! run keeps is bounded by its columns, not by its length.

use crate::trace::Trace;
use std::collections::BTreeMap;

/// Points per line at most: about one per two pixels of plot width.
pub const MAX_POINTS: usize = 600;

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
}

impl RunSeries {
    /// Every column of `trace`, downsampled (a host column named like a
    /// GPU column is the GPU column's: it is left out).
    pub fn of(trace: &Trace) -> RunSeries {
        let mut out = RunSeries {
            warmup_s: trace.header.warmup_ms as f64 / 1000.0,
            end_s: trace.times_ms.last().unwrap_or(0.0) / 1000.0,
            ..Default::default()
        };
        for (col, id) in trace.header.gpu_columns.iter().enumerate() {
            for gpu in 0..trace.gpu_count() {
                let pts = downsample(trace, out.end_s, |i| trace.gpu_value(i, gpu, col));
                out.lines.insert((id.clone(), Some(gpu)), pts);
            }
        }
        for (col, id) in trace.header.host_columns.iter().enumerate() {
            if trace.gpu_column(id).is_some() {
                continue;
            }
            let pts = downsample(trace, out.end_s, |i| trace.host_value(i, col));
            out.lines.insert((id.clone(), None), pts);
        }
        out
    }
}

/// At most `MAX_POINTS` (t, value) points: the mean of the finite values
/// in each of `MAX_POINTS` equal time buckets (NaN where a bucket has none).
fn downsample(trace: &Trace, end_s: f64, value: impl Fn(usize) -> f32) -> Vec<(f64, f64)> {
    let n = trace.sample_count();
    let buckets = MAX_POINTS.min(n.max(1));
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
