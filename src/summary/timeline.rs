//! What `gate report` shows of a run beyond its summary, taken from its
//! trace at derive (`Run::explain`), so that no reporter reads a trace: the
//! utilization panorama at `--slice` (its slices joined to a few rows a GPU
//! when only JSON is written), each process seen on a GPU, and, for the
//! HTML, the plotted counters' series, each line at most `PLOT_POINTS`
//! time-bucket means. Bounded by the panorama's rows
//! (`analysis::panorama::TABLE_ROWS` a GPU) and the plotted lines, never by
//! the run's length: no column is kept.

use crate::analysis::panorama::{self, Panorama};
use crate::trace::Trace;
use serde::Serialize;
use std::collections::BTreeMap;

/// Points of a plotted line at most: one per ~pixel of plot width (the
/// report JSON's timeline keeps to the same number).
pub const PLOT_POINTS: usize = 1200;

/// What `gate report` takes of a run at derive.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// The utilization panorama (`panorama::build`).
    pub panorama: Panorama,
    /// Each process seen on a GPU, merged over the trace's records.
    pub processes: Vec<ProcessRow>,
    /// The series the HTML plots draw, when it is written.
    pub plots: Option<Plots>,
}

/// What to take (`Timeline::of`).
#[derive(Debug, Clone, Default)]
pub struct TimelinePlan {
    /// Width of a panorama slice (`--slice`).
    pub slice_ms: f64,
    /// Join the panorama's slices to at most this many a GPU (only JSON is
    /// written: `report::run::json::timeline_rows`).
    pub rows: Option<usize>,
    /// The GPU and the host metrics the HTML plots draw; None: no HTML.
    pub plots: Option<(Vec<&'static str>, Vec<&'static str>)>,
}

/// The plotted series of one run: (t seconds, value) a line, NaN where a
/// line breaks, by metric id; a metric the trace has no column of has no
/// line.
#[derive(Debug, Clone, Default)]
pub struct Plots {
    /// Where the plots' time axis ends (the panorama's last slice, or the
    /// last sample when later).
    pub t_end_s: f64,
    /// Per GPU slot of the fingerprint.
    pub gpus: Vec<BTreeMap<&'static str, Vec<(f64, f64)>>>,
    pub host: BTreeMap<&'static str, Vec<(f64, f64)>>,
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

impl Timeline {
    /// What `plan` asks of `trace`.
    pub fn of(trace: &Trace, plan: &TimelinePlan) -> Timeline {
        let mut panorama = panorama::build(trace, plan.slice_ms);
        let plots = (plan.plots.as_ref()).map(|(gpu, host)| Plots::of(&panorama, trace, gpu, host));
        if let Some(joined) = plan.rows.and_then(|rows| panorama.joined(rows)) {
            panorama = joined;
        }
        Timeline {
            panorama,
            processes: processes(trace),
            plots,
        }
    }
}

impl Plots {
    fn of(p: &Panorama, trace: &Trace, gpu: &[&'static str], host: &[&'static str]) -> Plots {
        let last_s = trace.times_ms.last().unwrap_or(0.0) / 1000.0;
        let t_end_s = (p.gpus.first())
            .and_then(|g| g.slices.last())
            .map(|s| s.end_ms / 1000.0)
            .unwrap_or(last_s)
            .max(last_s);
        let gpu_lines = |slot: usize| {
            (gpu.iter())
                .filter_map(|&id| {
                    let col = trace.gpu_column(id)?;
                    let value = |i| trace.gpu_value(i, slot, col);
                    Some((id, series(trace, value, t_end_s)))
                })
                .collect()
        };
        Plots {
            t_end_s,
            gpus: (0..trace.header.fingerprint.gpus.len())
                .map(gpu_lines)
                .collect(),
            host: (host.iter())
                .filter_map(|&id| {
                    let col = trace.host_column(id)?;
                    Some((id, series(trace, |i| trace.host_value(i, col), t_end_s)))
                })
                .collect(),
        }
    }
}

/// Downsample a series to at most `PLOT_POINTS` by averaging time buckets,
/// then join sparse readings (see `bridge_sparse`).
pub(crate) fn series(trace: &Trace, value: impl Fn(usize) -> f32, t_end_s: f64) -> Vec<(f64, f64)> {
    bridge_sparse(series_raw(trace, value, t_end_s))
}

/// GPM metrics arrive every `--gpm-interval` (one sample in two to five
/// carries a value), so a null between two readings is "not sampled on this
/// tick", not a hole: drawing it as a break would leave only dots. Keep the
/// finite points and break the line only where readings stop for longer
/// than three times their usual spacing (and at least 2 s).
pub(crate) fn bridge_sparse(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let finite: Vec<(f64, f64)> = points.into_iter().filter(|p| p.1.is_finite()).collect();
    let mut gaps: Vec<f64> = finite.windows(2).map(|w| w[1].0 - w[0].0).collect();
    if gaps.is_empty() {
        return finite;
    }
    gaps.sort_by(|a, b| a.total_cmp(b));
    let max_gap_s = (gaps[gaps.len() / 2] * 3.0).max(2.0);
    let mut out = Vec::with_capacity(finite.len() + 4);
    for (i, p) in finite.iter().enumerate() {
        if i > 0 && p.0 - finite[i - 1].0 > max_gap_s {
            out.push((f64::NAN, f64::NAN));
        }
        out.push(*p);
    }
    out
}

fn series_raw(trace: &Trace, value: impl Fn(usize) -> f32, t_end_s: f64) -> Vec<(f64, f64)> {
    let n = trace.sample_count();
    if n <= PLOT_POINTS || t_end_s <= 0.0 {
        return (trace.times_ms.iter().enumerate())
            .map(|(i, t)| (t / 1000.0, value(i) as f64))
            .collect();
    }
    super::series::bucket_means(trace, t_end_s, PLOT_POINTS, value)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{self, Signature};

    #[test]
    fn sparse_gpm_readings_are_joined_and_long_outages_break_the_line() {
        let nan = f64::NAN;
        // GPM every other 100 ms tick: one line, no breaks.
        let pts: Vec<(f64, f64)> = (0..20)
            .map(|i| (i as f64 * 0.1, if i % 2 == 0 { 50.0 } else { nan }))
            .collect();
        let joined = bridge_sparse(pts);
        assert_eq!(joined.len(), 10);
        assert!(joined.iter().all(|p| p.1.is_finite()));
        // A 5 s outage in 0.2 s readings breaks it once.
        let mut pts: Vec<(f64, f64)> = (0..10).map(|i| (i as f64 * 0.2, 1.0)).collect();
        pts.extend((0..10).map(|i| (7.0 + i as f64 * 0.2, 2.0)));
        let broken = bridge_sparse(pts);
        assert_eq!(broken.iter().filter(|p| p.1.is_nan()).count(), 1);
    }

    #[test]
    fn long_traces_are_downsampled() {
        let mut sig = Signature::healthy();
        sig.duration_s = 600.0;
        let t = synthetic::trace(&sig, 1);
        let col = t.gpu_column("gpu_busy_pct").unwrap();
        let s = series(&t, |i| t.gpu_value(i, 0, col), 603.0);
        assert!(
            s.len() <= PLOT_POINTS && s.len() > PLOT_POINTS / 2,
            "{}",
            s.len()
        );
    }

    #[test]
    fn processes_are_merged_per_gpu_and_pid() {
        let t = synthetic::trace(&Signature::contention(), 2);
        let rows = processes(&t);
        assert_eq!(rows.len(), 4);
        let other = rows.iter().find(|p| !p.in_target).unwrap();
        assert_eq!(other.pid, 5151);
        assert_eq!(other.first_seen_s, 0.0);
        assert_eq!(other.last_seen_s, 33.0);
        assert_eq!(other.sm_share_pct, Some(42.0));
    }
}
