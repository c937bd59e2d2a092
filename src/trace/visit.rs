//! A series' values at chosen samples, handed to a callback in order
//! straight from the columns, a block at a time: what a statistic that
//! reads a series several times (`MetricStats::from_visits`) or once
//! (a feature's mean) takes instead of a copy (issue 44.2). Each fetch
//! counts the block's span as read, not the whole series: counted whole,
//! a 24-hour trace's scratch pages were dropped ten times as often as the
//! bytes read called for, and faulted in again on every pass.

use super::{mean_of_finite, Trace};

/// Samples read between two fetches of a series (a long trace's columns
/// are in a scratch file, and each fetch counts against what the process
/// keeps resident of it).
const BLOCK: usize = 1 << 16;

/// Values from a block's first sample to its last (samples ascend).
fn span(block: &[usize]) -> usize {
    match (block.first(), block.last()) {
        (Some(&a), Some(&b)) => b.saturating_sub(a) + 1,
        _ => 0,
    }
}

impl Trace {
    /// GPU slot `gpu`'s column `col` at each of `samples` (NaN = missing).
    pub(crate) fn visit_gpu(
        &self,
        samples: &[usize],
        gpu: usize,
        col: usize,
        f: &mut dyn FnMut(f64),
    ) {
        for block in samples.chunks(BLOCK) {
            let series = self.columns.gpu_reading(gpu, col, span(block));
            block.iter().for_each(|&i| f(series[i] as f64));
        }
    }

    /// `gpu_mean_series(col)` at each of `samples`: the same additions in
    /// the same order per sample, without the whole series.
    pub(crate) fn visit_gpu_mean(&self, samples: &[usize], col: usize, f: &mut dyn FnMut(f64)) {
        for block in samples.chunks(BLOCK) {
            let series: Vec<&[f32]> = (0..self.gpu_count())
                .map(|g| self.columns.gpu_reading(g, col, span(block)))
                .collect();
            for &i in block {
                f(mean_of_finite(series.iter().map(|s| s[i])));
            }
        }
    }

    /// Host column `col` at each of `samples`.
    pub(crate) fn visit_host(&self, samples: &[usize], col: usize, f: &mut dyn FnMut(f64)) {
        for block in samples.chunks(BLOCK) {
            let series = self.columns.host_reading(col, span(block));
            block.iter().for_each(|&i| f(series[i] as f64));
        }
    }
}
