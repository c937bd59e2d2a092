//! `--metrics-file`: the benchmark's own metrics file, kept in the end
//! record when it is this run's (`metric_sources::keep_metrics_file`).

use super::event;
use crate::error::GateError;
use crate::trace::{EventKind, Record, TraceWriter};
use std::path::Path;
use std::time::SystemTime;

/// What of `--metrics-file` the trace keeps (`metric_sources::keep`), or
/// why nothing: a note says it too, for `gate report` and people reading
/// the trace.
pub(super) fn read_metrics_file(
    path: &Path,
    run_start: SystemTime,
    writer: &mut TraceWriter,
    t_ms: f64,
) -> Result<
    (
        Option<String>,
        Option<crate::metric_sources::MetricsFileProblem>,
    ),
    GateError,
> {
    match crate::metric_sources::keep_metrics_file(path, run_start) {
        Ok(text) => Ok((Some(text), None)),
        Err(p) => {
            writer.write(&Record::Event(event(
                t_ms,
                EventKind::Note,
                p.message.clone(),
            )))?;
            Ok((None, Some(p)))
        }
    }
}
