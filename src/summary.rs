//! A run's summary: the steady window of a trace and what is derived from
//! it before a run is judged, stored or reported.

use crate::config::{Config, UserMetricValue};
use crate::stats::RunSummary;
use crate::trace::Trace;
use std::collections::BTreeMap;

/// Steady-window series of one column of one trace (NaN = missing, kept so
/// batch means see the real time structure; `from_series` skips NaN).
pub enum Column<'a> {
    Gpu {
        slot: usize,
        id: &'a str,
    },
    /// Per-sample mean over the trace's GPUs.
    GpuMean {
        id: &'a str,
    },
    Host {
        id: &'a str,
    },
}

pub fn steady_series(trace: &Trace, column: &Column) -> Vec<f64> {
    let steady = (0..trace.sample_count()).filter(|&i| !trace.warmup[i]);
    match *column {
        Column::Gpu { slot, id } => match trace.gpu_column(id) {
            Some(col) if slot < trace.gpu_count() => steady
                .map(|i| trace.gpu_value(i, slot, col) as f64)
                .collect(),
            _ => Vec::new(),
        },
        Column::GpuMean { id } => match trace.gpu_column(id) {
            Some(col) => steady.map(|i| trace.gpu_mean_at(i, col)).collect(),
            None => Vec::new(),
        },
        Column::Host { id } => match trace.host_column(id) {
            Some(col) => steady.map(|i| trace.host_value(i, col) as f64).collect(),
            None => Vec::new(),
        },
    }
}

/// One measured run (or node) with what the commands derived from it.
pub struct RunInput<'a> {
    pub trace: &'a Trace,
    /// `stats::summarize` plus user metrics and features.
    pub summary: RunSummary,
    pub user: BTreeMap<String, UserMetricValue>,
}

impl<'a> RunInput<'a> {
    /// The single place a run is summarised before it is judged or stored:
    /// statistics, diagnosis features and the user metrics of `config`.
    pub fn new(trace: &'a Trace, config: &Config) -> RunInput<'a> {
        let mut summary = crate::diagnose::run_summary(trace);
        let user = config.user_metric_values(trace);
        summary.user_metrics = user.iter().map(|(k, v)| (k.clone(), v.value)).collect();
        RunInput {
            trace,
            summary,
            user,
        }
    }
}
