//! A column's values at the steady samples, handed over in time order
//! straight from the trace's columns a block at a time
//! (`Columns::gpu_blocks` and its siblings): what
//! `MetricStats::from_visits` reads instead of a copy (issue 44.2).

use super::Column;
use crate::stats::Block;
use crate::trace::{Columns, Header, Samples, Trace};

/// Hand `f` the values of `column` at the `steady` samples, in order, a
/// block at a time (NaN where missing).
pub(crate) fn visit(
    trace: &Trace,
    steady: &Samples,
    column: &Column,
    f: &mut dyn FnMut(Block<'_>),
) {
    visit_columns(&trace.header, &trace.columns, steady, column, f);
}

/// `visit` on the columns of a trace with `header`, kept without it (a
/// run's samples kept past derive, `Run::keep_samples`).
pub(crate) fn visit_columns(
    header: &Header,
    columns: &Columns,
    steady: &Samples,
    column: &Column,
    f: &mut dyn FnMut(Block<'_>),
) {
    let ngpu = header.fingerprint.gpus.len();
    let gpu_column = |id: &str| header.gpu_columns.iter().position(|c| c == id);
    match *column {
        Column::Gpu { slot, id } => {
            if let Some(col) = gpu_column(id).filter(|_| slot < ngpu) {
                columns.gpu_blocks(steady, slot, col, f);
            }
        }
        Column::GpuMean { id } => {
            if let Some(col) = gpu_column(id) {
                columns.gpu_mean_blocks(ngpu, steady, col, f);
            }
        }
        Column::Host { id } => {
            if let Some(col) = header.host_columns.iter().position(|c| c == id) {
                columns.host_blocks(steady, col, f);
            }
        }
    }
}
