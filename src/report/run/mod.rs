//! The explanation of one run, as `gate report` shows it: panorama, ranked
//! suspects, processes on each GPU, and p50/p99/max of every metric. Built
//! once from the derived `summary::Run` (pure, this file: what it needs of
//! the trace was taken at derive, its `Timeline`), then rendered by one
//! file per format: `text`, `markdown`, `json`, `html` (inline SVG plots).

pub mod html;
pub mod json;
pub mod markdown;
mod svg;
pub mod text;

use crate::analysis::panorama::{self, Panorama};
use crate::diagnose::{Finding, RuleSet};
use crate::metrics;
use crate::stats::MetricStats;
pub use crate::summary::timeline::ProcessRow;
use crate::summary::timeline::{Plots, PLOT_POINTS};
use crate::summary::{Run, RunSummary};
use crate::trace::{Header, Trace};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// Points of a run's timeline over its whole length, at most: the HTML
/// plots draw each line with this many time-bucket means (one per ~pixel),
/// and the JSON keeps each GPU's panorama to this many slices per
/// document (`json.rs`), whatever the runs' length.
pub const TIMELINE_POINTS: usize = PLOT_POINTS;

#[derive(Debug, Clone, Serialize)]
pub struct GpuLabel {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    pub gpm_supported: bool,
}

/// p50/p99/max (and mean, n) of one metric in one scope.
#[derive(Debug, Clone, Serialize)]
pub struct StatRow {
    /// "gpu0", "gpu1"..., "gpus" (mean over GPUs) or "host".
    pub scope: String,
    pub metric: String,
    pub unit: String,
    /// None when the metric was not measured (shown n/a, never 0).
    pub n: usize,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

/// One output format of `gate report` (`text`, `markdown`, `json`, `html`):
/// the whole document for the runs, in order. Pure: the command writes it.
pub(crate) trait RunReporter {
    fn render(&self, runs: &[RunReport]) -> String;
}

/// The report of one trace (`gate report`): what ran, its steady window
/// and each metric's statistics.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub source: String,
    pub note: Option<String>,
    pub command: Vec<String>,
    pub attach_pid: Option<u32>,
    pub gpus: Vec<GpuLabel>,
    pub interval_ms: u64,
    pub warmup_ms: u64,
    pub(crate) total_samples: usize,
    pub(crate) steady_samples: usize,
    pub(crate) steady_start_ms: f64,
    pub(crate) steady_end_ms: f64,
    pub truncated: bool,
    pub exit_code: Option<i32>,
    /// Wall time after warm-up; `startup_s` before it (when marked).
    pub wall_time_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) startup_s: Option<f64>,
    /// What the window left out after it, not judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub teardown_s: Option<f64>,
    pub panorama: Panorama,
    pub suspects: Vec<Finding>,
    pub processes: Vec<ProcessRow>,
    pub stats: Vec<StatRow>,
    pub features: BTreeMap<String, f64>,
    /// What the HTML plots draw, when it is written (taken at derive).
    #[serde(skip)]
    pub(crate) plots: Option<Arc<Plots>>,
}

impl RunReport {
    /// Report of `trace` summarised without user metrics (`Config`'s
    /// defaults), its plots taken: a test's or a tool's, which holds its
    /// trace.
    pub fn build(trace: &Trace, rules: &RuleSet, slice_ms: f64) -> RunReport {
        let mut run = Run::derive(trace, &crate::config::Config::default());
        run.explain(trace, &plan(slice_ms, None, true));
        Self::of(run, rules)
    }

    /// Report of the derived `run` (`summary::Run::derive` fills in the
    /// user metrics of gate.toml, so user rules can use them; its
    /// `Timeline`, taken by `Run::explain`, the panorama, processes and
    /// plots: empty when it has none).
    pub fn of(run: Run, rules: &RuleSet) -> RunReport {
        let Run {
            source,
            header,
            summary,
            timeline,
            ..
        } = run;
        let timeline = timeline.map(|t| *t).unwrap_or_default();
        let suspects = rules.diagnose(&summary);
        let h = &header;
        RunReport {
            source,
            note: h.note.clone(),
            command: h.command.clone(),
            attach_pid: h.attach_pid,
            gpus: h
                .fingerprint
                .gpus
                .iter()
                .map(|g| GpuLabel {
                    index: g.index,
                    name: g.name.clone(),
                    uuid: g.uuid.clone(),
                    gpm_supported: g.gpm_supported,
                })
                .collect(),
            interval_ms: h.interval_ms,
            warmup_ms: h.warmup_ms,
            total_samples: summary.total_samples,
            steady_samples: summary.steady_samples,
            steady_start_ms: summary.steady_start_ms,
            steady_end_ms: summary.steady_end_ms,
            truncated: summary.truncated,
            exit_code: summary.exit_code,
            wall_time_s: summary.wall_time_s,
            startup_s: summary.startup_s,
            teardown_s: summary.teardown_s,
            panorama: timeline.panorama,
            suspects,
            processes: timeline.processes,
            stats: stat_rows(h, &summary),
            features: summary.features,
            plots: timeline.plots.map(Arc::new),
        }
    }
}

/// What `gate report` takes of each trace at derive (`Run::explain`):
/// the panorama at `slice_ms`, joined to `rows` slices a GPU when given,
/// and the series the HTML plots draw when `plots`.
pub(crate) fn plan(
    slice_ms: f64,
    rows: Option<usize>,
    plots: bool,
) -> crate::summary::timeline::TimelinePlan {
    crate::summary::timeline::TimelinePlan {
        slice_ms,
        rows,
        plots: plots.then(html::plotted),
    }
}

/// One GPU's panorama as cells, a row per slice: start (s), one value per
/// `panorama::GPU_COLUMNS`, target CPU, flags ('w' for warm-up). The text
/// and Markdown reports lay the same cells out.
pub(super) fn panorama_rows(g: &panorama::GpuSlices) -> Vec<Vec<String>> {
    use crate::format::number_or_na as num;
    g.slices
        .iter()
        .map(|s| {
            let mut row = vec![crate::format::secs(s.start_ms)];
            row.extend(s.values.iter().map(|v| num(*v)));
            row.push(num(s.target_cpu_pct));
            let mut flags: String = s.problems.iter().map(|x| x.flag()).collect();
            if s.warmup {
                flags.push('w');
            }
            row.push(flags);
            row
        })
        .collect()
}

fn stat_row(scope: &str, metric: &str, s: Option<&MetricStats>) -> StatRow {
    StatRow {
        scope: scope.to_string(),
        metric: metric.to_string(),
        unit: metrics::find(metric)
            .map(|d| d.unit.to_string())
            .unwrap_or_default(),
        n: s.map(|s| s.n).unwrap_or(0),
        mean: s.map(|s| s.mean),
        p50: s.map(|s| s.p50),
        p99: s.map(|s| s.p99),
        max: s.map(|s| s.max),
    }
}

fn stat_rows(header: &Header, run: &RunSummary) -> Vec<StatRow> {
    let mut out = Vec::new();
    for g in &run.gpus {
        let scope = format!("gpu{}", g.index);
        for id in &header.gpu_columns {
            out.push(stat_row(&scope, id, g.metrics.get(id)));
        }
    }
    if run.gpus.len() > 1 {
        for id in &header.gpu_columns {
            out.push(stat_row("gpus", id, run.gpu_aggregate.get(id)));
        }
    }
    for id in &header.host_columns {
        out.push(stat_row("host", id, run.host.get(id)));
    }
    out
}

/// "GPU 0 (NVIDIA H200)", "Host (...)" for a statistics scope key.
pub(crate) fn scope_title(r: &RunReport, scope: &str) -> String {
    match scope {
        "host" => "Host (target process tree and machine)".into(),
        "gpus" => "All GPUs (per-sample mean over GPUs)".into(),
        s => {
            let idx: u32 = s.trim_start_matches("gpu").parse().unwrap_or(0);
            let name = r
                .gpus
                .iter()
                .find(|g| g.index == idx)
                .map(|g| g.name.as_str())
                .unwrap_or("");
            format!("GPU {idx} ({name})")
        }
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use crate::synthetic::{self, Signature};

    pub fn report(sig: &Signature, ngpu: usize) -> RunReport {
        RunReport::build(&synthetic::trace(sig, ngpu), &RuleSet::builtin(), 1000.0)
    }
}
