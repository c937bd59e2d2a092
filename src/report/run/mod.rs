//! The explanation of one run, as `gate report` shows it: panorama, ranked
//! suspects, processes on each GPU, and p50/p99/max of every metric. Built
//! once from a trace (pure, this file), then rendered by one file per
//! format: `text`, `markdown`, `json`, `html` (inline SVG plots).

pub mod html;
pub mod json;
pub mod markdown;
mod svg;
pub mod text;

use crate::analysis::panorama::{self, Panorama};
use crate::diagnose::{Finding, RuleSet};
use crate::metrics;
use crate::stats::MetricStats;
use crate::summary::RunSummary;
use crate::trace::Trace;
use serde::Serialize;
use std::collections::BTreeMap;

pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// Points of a run's timeline over its whole length, at most: the HTML
/// plots draw each line with this many time-bucket means (one per ~pixel),
/// and the JSON keeps each GPU's panorama to this many slices per
/// document (`json.rs`), whatever the runs' length.
pub const TIMELINE_POINTS: usize = 1200;

#[derive(Debug, Clone, Serialize)]
pub struct GpuLabel {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    pub gpm_supported: bool,
}

/// One process seen on a GPU, merged over all `processes` records.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessRow {
    pub gpu: u32,
    pub pid: u32,
    pub name: String,
    pub cmdline: String,
    pub in_target: bool,
    pub(crate) first_seen_s: f64,
    pub(crate) last_seen_s: f64,
    /// Mean SM share over the records that had one.
    pub(crate) sm_share_pct: Option<f64>,
    pub(crate) gpu_mem_mib_max: Option<f64>,
    pub(crate) cpu_pct_mean: Option<f64>,
    pub(crate) rss_mib_max: Option<f64>,
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

/// One run to report: its explanation and the trace it was built from.
pub struct Run<'a> {
    pub report: RunReport,
    /// Its header, events and processes; the samples too, unless `plots`
    /// was taken from them before they were freed.
    pub trace: &'a Trace,
    /// What the HTML plots draw (`html::Plots::of`); None: drawn from
    /// `trace`'s samples when rendered.
    pub(crate) plots: Option<html::Plots>,
}

impl<'a> Run<'a> {
    /// A run whose trace still holds its samples.
    pub fn new(report: RunReport, trace: &'a Trace) -> Run<'a> {
        Run {
            report,
            trace,
            plots: None,
        }
    }
}

/// One output format of `gate report` (`text`, `markdown`, `json`, `html`):
/// the whole document for the runs, in order. Pure: the command writes it.
pub(crate) trait RunReporter {
    fn render(&self, runs: &[Run]) -> String;
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
}

impl RunReport {
    /// Report of `trace` summarised without user metrics.
    pub fn build(trace: &Trace, rules: &RuleSet, slice_ms: f64) -> RunReport {
        Self::build_with(trace, rules, slice_ms, crate::summary::summarize(trace))
    }

    /// Report of `trace` from its summary `run` (`summary::Run::derive` fills in
    /// the user metrics of gate.toml, so user rules can use them).
    pub(crate) fn build_with(
        trace: &Trace,
        rules: &RuleSet,
        slice_ms: f64,
        run: RunSummary,
    ) -> RunReport {
        let suspects = rules.diagnose(&run);
        let h = &trace.header;
        RunReport {
            source: trace.path.display().to_string(),
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
            total_samples: run.total_samples,
            steady_samples: run.steady_samples,
            steady_start_ms: run.steady_start_ms,
            steady_end_ms: run.steady_end_ms,
            truncated: run.truncated,
            exit_code: run.exit_code,
            wall_time_s: run.wall_time_s,
            startup_s: run.startup_s,
            teardown_s: run.teardown_s,
            panorama: panorama::build(trace, slice_ms),
            suspects,
            processes: processes(trace),
            stats: stat_rows(trace, &run),
            features: run.features.clone(),
        }
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

fn processes(trace: &Trace) -> Vec<ProcessRow> {
    // (gpu, pid) -> row plus the SM-share and CPU samples to average.
    type Acc = (ProcessRow, Vec<f64>, Vec<f64>);
    let mut rows: BTreeMap<(u32, u32), Acc> = BTreeMap::new();
    let max_opt = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    };
    for rec in &trace.processes {
        for p in &rec.procs {
            let t_s = rec.t / 1000.0;
            let entry = rows.entry((rec.gpu, p.pid)).or_insert_with(|| {
                (
                    ProcessRow {
                        gpu: rec.gpu,
                        pid: p.pid,
                        name: p.name.clone(),
                        cmdline: p.cmdline.clone(),
                        in_target: p.in_target,
                        first_seen_s: t_s,
                        last_seen_s: t_s,
                        sm_share_pct: None,
                        gpu_mem_mib_max: None,
                        cpu_pct_mean: None,
                        rss_mib_max: None,
                    },
                    Vec::new(),
                    Vec::new(),
                )
            });
            let (row, sm, cpu) = entry;
            row.first_seen_s = row.first_seen_s.min(t_s);
            row.last_seen_s = row.last_seen_s.max(t_s);
            if row.cmdline.is_empty() {
                row.cmdline = p.cmdline.clone();
            }
            row.gpu_mem_mib_max = max_opt(row.gpu_mem_mib_max, p.gpu_mem_mib);
            row.rss_mib_max = max_opt(row.rss_mib_max, p.rss_mib);
            sm.extend(p.sm_share_pct.filter(|v| v.is_finite()));
            cpu.extend(p.cpu_pct.filter(|v| v.is_finite()));
        }
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    rows.into_values()
        .map(|(mut row, sm, cpu)| {
            row.sm_share_pct = mean(&sm);
            row.cpu_pct_mean = mean(&cpu);
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

fn stat_rows(trace: &Trace, run: &RunSummary) -> Vec<StatRow> {
    let mut out = Vec::new();
    for g in &run.gpus {
        let scope = format!("gpu{}", g.index);
        for id in &trace.header.gpu_columns {
            out.push(stat_row(&scope, id, g.metrics.get(id)));
        }
    }
    if run.gpus.len() > 1 {
        for id in &trace.header.gpu_columns {
            out.push(stat_row("gpus", id, run.gpu_aggregate.get(id)));
        }
    }
    for id in &trace.header.host_columns {
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
mod tests {
    use crate::report::run::tests_support::report;
    use crate::synthetic::Signature;

    #[test]
    fn processes_are_merged_per_gpu_and_pid() {
        let r = report(&Signature::contention(), 2);
        assert_eq!(r.processes.len(), 4);
        let other = r.processes.iter().find(|p| !p.in_target).unwrap();
        assert_eq!(other.pid, 5151);
        assert_eq!(other.first_seen_s, 0.0);
        assert_eq!(other.last_seen_s, 33.0);
        assert_eq!(other.sm_share_pct, Some(42.0));
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
