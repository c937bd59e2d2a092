//! A series' values at chosen samples, handed to a callback in order
//! straight from the columns, a block at a time: what a statistic that
//! reads a series several times (`MetricStats::from_visits`) or once
//! (a feature's mean) takes instead of a copy (issue 44.2). Each fetch
//! counts the block's span as read, not the whole series: counted whole,
//! a 24-hour trace's scratch pages were dropped ten times as often as the
//! bytes read called for, and faulted in again on every pass.

use super::{mean_of_finite, Columns, Samples, Trace};
use crate::stats::Block;
use std::ops::Range;

/// Samples read between two fetches of a series (a long trace's columns
/// are in a scratch file, and each fetch counts against what the process
/// keeps resident of it).
pub(crate) const BLOCK: usize = 1 << 16;

impl Trace {
    /// GPU slot `gpu`'s column `col` at each of `samples` (NaN = missing).
    pub(crate) fn visit_gpu(
        &self,
        samples: &Samples,
        gpu: usize,
        col: usize,
        f: &mut dyn FnMut(f64),
    ) {
        self.columns.visit_gpu(samples, gpu, col, f);
    }

    /// The per-sample GPU mean of `col` over the consecutive samples
    /// `block`, into `out` (replacing what it held).
    pub(crate) fn gpu_mean_block(&self, block: Range<usize>, col: usize, out: &mut Vec<f64>) {
        out.clear();
        self.columns
            .gpu_mean_blocks(self.gpu_count(), &Samples::from(block), col, &mut |b| {
                b.for_each(|v| out.push(v))
            });
    }

    /// Host column `col` over the consecutive samples `block`, into `out`.
    pub(crate) fn host_block(&self, block: Range<usize>, col: usize, out: &mut Vec<f64>) {
        out.clear();
        let series = self.columns.host_reading(col, block.len());
        out.extend(series[block].iter().map(|&v| v as f64));
    }
}

/// The same visits on columns kept without their trace (a run's parked
/// samples, `summary::Run`), `ngpu` GPU slots.
impl Columns {
    /// GPU slot `gpu`'s column `col` at each of `samples` (NaN = missing).
    pub(crate) fn visit_gpu(
        &self,
        samples: &Samples,
        gpu: usize,
        col: usize,
        f: &mut dyn FnMut(f64),
    ) {
        self.gpu_blocks(samples, gpu, col, &mut |b| b.for_each(&mut *f));
    }

    /// `visit_gpu`, a block of consecutive samples at a time.
    pub(crate) fn gpu_blocks(
        &self,
        samples: &Samples,
        gpu: usize,
        col: usize,
        f: &mut dyn FnMut(Block<'_>),
    ) {
        for block in samples.blocks(BLOCK) {
            let series = self.gpu_reading(gpu, col, block.len());
            f(Block::F32(&series[block]));
        }
    }

    /// The mean over `ngpu` GPUs of column `col` at each of `samples`
    /// (`Trace::gpu_mean_at`), a block of every GPU's series at a time:
    /// the same additions in the same order per sample.
    pub(crate) fn gpu_mean_blocks(
        &self,
        ngpu: usize,
        samples: &Samples,
        col: usize,
        f: &mut dyn FnMut(Block<'_>),
    ) {
        let mut means = Vec::new();
        for block in samples.blocks(BLOCK) {
            let series: Vec<&[f32]> = (0..ngpu)
                .map(|g| self.gpu_reading(g, col, block.len()))
                .collect();
            means.clear();
            means.extend(block.map(|i| mean_of_finite(series.iter().map(|s| s[i]))));
            f(Block::F64(&means));
        }
    }

    /// Host column `col` at each of `samples`, a block at a time.
    pub(crate) fn host_blocks(&self, samples: &Samples, col: usize, f: &mut dyn FnMut(Block<'_>)) {
        for block in samples.blocks(BLOCK) {
            let series = self.host_reading(col, block.len());
            f(Block::F32(&series[block]));
        }
    }
}
