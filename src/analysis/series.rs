//! A trace's steady series read in place, a block at a time: the
//! per-sample GPU mean of a GPU column or a host column over the steady
//! window, never copied whole (issue 44.2: the features held up to three
//! f64 copies of the window, 24 bytes a sample).

use crate::trace::{Samples, Trace, BLOCK};

/// What a series reads at each sample.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// The mean over GPUs of a GPU column (`Trace::gpu_mean_at`).
    GpuMean(usize),
    Host(usize),
}

/// One column over the steady samples, in time order.
#[derive(Clone, Copy)]
pub(crate) struct Series<'a> {
    trace: &'a Trace,
    steady: &'a Samples,
    source: Source,
}

impl<'a> Series<'a> {
    /// The per-sample GPU mean of GPU column `id`; None when the trace
    /// lacks it or it has no finite value in the window.
    pub(crate) fn gpu_mean(trace: &'a Trace, steady: &'a Samples, id: &str) -> Option<Self> {
        let source = Source::GpuMean(trace.gpu_column(id)?);
        Self::with_values(trace, steady, source)
    }

    /// Host column `id`; None as for `gpu_mean`.
    pub(crate) fn host(trace: &'a Trace, steady: &'a Samples, id: &str) -> Option<Self> {
        let source = Source::Host(trace.host_column(id)?);
        Self::with_values(trace, steady, source)
    }

    fn with_values(trace: &'a Trace, steady: &'a Samples, source: Source) -> Option<Self> {
        let s = Series {
            trace,
            steady,
            source,
        };
        let mut any = false;
        s.visit(&mut |v| any |= v.is_finite());
        any.then_some(s)
    }

    /// Samples in the window (missing values included, as NaN).
    pub(crate) fn len(&self) -> usize {
        self.steady.len()
    }

    /// Each block of the series in turn (at most `BLOCK` values).
    pub(crate) fn blocks(&self, f: &mut dyn FnMut(&[f64])) {
        let mut buf = Vec::new();
        for block in self.steady.blocks(BLOCK) {
            self.fill(block, &mut buf);
            f(&buf);
        }
    }

    /// Each value in turn.
    pub(crate) fn visit(&self, f: &mut dyn FnMut(f64)) {
        self.blocks(&mut |b| b.iter().for_each(|&v| f(v)));
    }

    fn fill(&self, block: std::ops::Range<usize>, out: &mut Vec<f64>) {
        match self.source {
            Source::GpuMean(col) => self.trace.gpu_mean_block(block, col, out),
            Source::Host(col) => self.trace.host_block(block, col, out),
        }
    }

    /// The values of `self` and `other` (the same window) sample by sample.
    pub(crate) fn visit_pairs(&self, other: &Series, f: &mut dyn FnMut(f64, f64)) {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for block in self.steady.blocks(BLOCK) {
            self.fill(block.clone(), &mut a);
            other.fill(block, &mut b);
            a.iter().zip(&b).for_each(|(&x, &y)| f(x, y));
        }
    }

    /// The pairs where both values are finite.
    pub(crate) fn visit_finite_pairs(&self, other: &Series, f: &mut dyn FnMut(f64, f64)) {
        self.visit_pairs(other, &mut |x, y| {
            if x.is_finite() && y.is_finite() {
                f(x, y)
            }
        });
    }

    /// The whole series as a copy (test support, and a periodicity that
    /// fits in one block).
    pub(crate) fn to_vec(self) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.len());
        self.blocks(&mut |b| out.extend_from_slice(b));
        out
    }
}
