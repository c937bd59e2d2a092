//! A column's values at the steady samples, handed over in time order
//! straight from the trace (`Trace::visit_gpu` and its siblings): what
//! `MetricStats::from_visits` reads instead of a copy (issue 44.2).

use super::Column;
use crate::trace::{Samples, Trace};

/// Hand `f` the value of `column` at each of the `steady` samples, in
/// order (NaN where missing): `steady_finite`'s values before its filter.
pub(crate) fn visit(trace: &Trace, steady: &Samples, column: &Column, f: &mut dyn FnMut(f64)) {
    match *column {
        Column::Gpu { slot, id } => {
            if let Some(col) = trace.gpu_column(id).filter(|_| slot < trace.gpu_count()) {
                trace.visit_gpu(steady, slot, col, f);
            }
        }
        Column::GpuMean { id } => {
            if let Some(col) = trace.gpu_column(id) {
                trace.visit_gpu_mean(steady, col, f);
            }
        }
        Column::Host { id } => {
            if let Some(col) = trace.host_column(id) {
                trace.visit_host(steady, col, f);
            }
        }
    }
}
