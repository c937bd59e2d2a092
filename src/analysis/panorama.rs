//! The utilization panorama: a trace cut into fixed time slices, with the
//! main counters averaged per slice and GPU, and problem intervals marked.
//! It answers "when" where the statistics answer "how much": a stall that
//! happens once a minute, a warm-up that never ends, one GPU that drops out.
//!
//! Slices start at the recording's time 0. A slice's value is the mean of
//! the finite samples in it (missing samples are skipped; a slice without
//! any is missing, shown "n/a"). Warm-up slices (most samples warm-up) are
//! marked and never flagged: slow starts are expected there.

use crate::trace::{Samples, Trace};
use serde::Serialize;

/// Per-GPU columns of the panorama, in display order: (id, short header).
pub(crate) const GPU_COLUMNS: &[(&str, &str)] = &[
    ("gpu_busy_pct", "busy%"),
    ("sm_active_pct", "sm%"),
    ("tensor_pct", "tensor%"),
    ("dram_pct", "dram%"),
    ("pcie_rx_mib_s", "rx MiB/s"),
    ("pcie_tx_mib_s", "tx MiB/s"),
];

/// Host column shown beside each GPU's slices.
pub(crate) const HOST_COLUMN: (&str, &str) = ("target_cpu_pct", "cpu%");

/// Slice thresholds (the sources' standing alert and the idle threshold of
/// the features; see `analysis::features`).
pub(crate) const STARVED_BUSY_PCT: f64 = crate::analysis::features::STARVED_BUSY_PCT;
pub(crate) const STARVED_SM_PCT: f64 = crate::analysis::features::STARVED_SM_PCT;
pub(crate) const IDLE_BUSY_PCT: f64 = crate::analysis::features::IDLE_BUSY_PCT;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Problem {
    /// GPU busy > 80 % while SM active < 30 %: kernels too small or fragmented.
    Starved,
    /// GPU busy < 10 %: nothing running.
    Idle,
    /// A process outside the target tree on the GPU.
    Contended,
}

impl Problem {
    pub fn as_str(self) -> &'static str {
        match self {
            Problem::Starved => "starved",
            Problem::Idle => "idle",
            Problem::Contended => "contended",
        }
    }

    /// One-letter flag for tables.
    pub fn flag(self) -> char {
        match self {
            Problem::Starved => 'S',
            Problem::Idle => 'I',
            Problem::Contended => 'C',
        }
    }

    pub(crate) fn describe(self) -> &'static str {
        match self {
            Problem::Starved => "busy > 80 % but SM active < 30 %",
            Problem::Idle => "GPU busy < 10 %",
            Problem::Contended => "other processes on the GPU",
        }
    }

    pub const ALL: [Problem; 3] = [Problem::Starved, Problem::Idle, Problem::Contended];
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Slice {
    pub(crate) start_ms: f64,
    pub(crate) end_ms: f64,
    pub warmup: bool,
    /// In `Panorama::columns` order; None = not measured in this slice.
    pub values: Vec<Option<f64>>,
    pub target_cpu_pct: Option<f64>,
    pub problems: Vec<Problem>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuSlices {
    /// NVML index of the GPU.
    pub gpu: u32,
    pub name: String,
    pub slices: Vec<Slice>,
}

/// A run of consecutive flagged slices.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ProblemInterval {
    pub gpu: u32,
    pub problem: Problem,
    pub(crate) start_ms: f64,
    pub(crate) end_ms: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Panorama {
    pub slice_ms: f64,
    /// Metric ids of `Slice::values`.
    pub columns: Vec<String>,
    pub gpus: Vec<GpuSlices>,
    pub(crate) intervals: Vec<ProblemInterval>,
    /// Warm-up span [0, warmup_end_ms) as recorded.
    pub(crate) warmup_end_ms: f64,
}

impl Panorama {
    /// This panorama with each GPU's slices joined `k` at a time, the
    /// fewest `k` that leaves at most `rows` (None: they fit already). A
    /// joined slice spans its members; its values are the means of their
    /// measured values (equal time slices: the time-bucket mean the HTML
    /// plots draw), missing when none was measured; it is warm-up when most
    /// members are, and carries every problem any member has. `slice_ms` is
    /// the joined width; the problem intervals stay those of the full
    /// panorama.
    pub fn joined(&self, rows: usize) -> Option<Panorama> {
        let most = self.gpus.iter().map(|g| g.slices.len()).max().unwrap_or(0);
        let k = most.div_ceil(rows.max(1));
        if k <= 1 {
            return None;
        }
        let mut out = Panorama {
            slice_ms: self.slice_ms * k as f64,
            columns: self.columns.clone(),
            gpus: Vec::with_capacity(self.gpus.len()),
            intervals: self.intervals.clone(),
            warmup_end_ms: self.warmup_end_ms,
        };
        for g in &self.gpus {
            out.gpus.push(GpuSlices {
                gpu: g.gpu,
                name: g.name.clone(),
                slices: g.slices.chunks(k).map(join).collect(),
            });
        }
        Some(out)
    }
}

/// Consecutive slices as one (`Panorama::joined`).
fn join(members: &[Slice]) -> Slice {
    let mean = |v: &mut dyn Iterator<Item = Option<f64>>| -> Option<f64> {
        let (sum, n) = v.flatten().fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
        (n > 0).then(|| sum / n as f64)
    };
    let ncols = members.first().map_or(0, |s| s.values.len());
    Slice {
        start_ms: members.first().map_or(0.0, |s| s.start_ms),
        end_ms: members.last().map_or(0.0, |s| s.end_ms),
        warmup: 2 * members.iter().filter(|s| s.warmup).count() > members.len(),
        values: (0..ncols)
            .map(|c| mean(&mut members.iter().map(|s| s.values.get(c).copied().flatten())))
            .collect(),
        target_cpu_pct: mean(&mut members.iter().map(|s| s.target_cpu_pct)),
        problems: (Problem::ALL.into_iter())
            .filter(|p| members.iter().any(|s| s.problems.contains(p)))
            .collect(),
    }
}

/// Most rows a GPU's panorama table gets: a run longer than
/// `TABLE_ROWS x slice` gets wider slices, so a report's size does not
/// grow with the run's length (a 24-hour, 8-GPU report was 152 MB).
pub(crate) const TABLE_ROWS: usize = 2000;

/// Slice widths a widened panorama uses, in ms: round numbers people read.
const NICE_SLICES_MS: &[f64] = &[
    1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3, 7200e3,
    21600e3, 43200e3, 86400e3,
];

/// The narrowest round slice that keeps a `span_ms` run within
/// `TABLE_ROWS` slices (0 when any slice does).
pub(crate) fn bounded_slice_ms(span_ms: f64) -> f64 {
    let need = span_ms / TABLE_ROWS as f64;
    if need <= 0.0 || !need.is_finite() {
        return 0.0;
    }
    NICE_SLICES_MS
        .iter()
        .copied()
        .find(|&s| s >= need)
        .unwrap_or_else(|| need.ceil())
}

/// Cut `trace` into `slice_ms` slices (wider when the run is long: see
/// `TABLE_ROWS`).
pub fn build(trace: &Trace, slice_ms: f64) -> Panorama {
    let slice_ms = effective_slice_ms(trace, slice_ms);
    let members = slice_members(trace, slice_ms);
    let cols = Columns::of(trace);
    let mut gpus = Vec::new();
    let mut intervals = Vec::new();
    for (slot, info) in trace.header.fingerprint.gpus.iter().enumerate() {
        let slices = gpu_slices(trace, slot, &members, slice_ms, &cols);
        push_intervals(info.index, &slices, &mut intervals);
        gpus.push(GpuSlices {
            gpu: info.index,
            name: info.name.clone(),
            slices,
        });
    }
    intervals.sort_by(|a, b| {
        a.start_ms
            .total_cmp(&b.start_ms)
            .then(a.gpu.cmp(&b.gpu))
            .then(a.problem.cmp(&b.problem))
    });
    Panorama {
        slice_ms,
        columns: GPU_COLUMNS.iter().map(|c| c.0.to_string()).collect(),
        gpus,
        intervals,
        warmup_end_ms: warmup_end_ms(trace),
    }
}

/// The slice width used: slices are allocated up front, so a long or
/// sparse trace gets wider slices rather than millions of them (times are
/// bounded at load).
fn effective_slice_ms(trace: &Trace, slice_ms: f64) -> f64 {
    let span_ms = trace.times_ms.iter().fold(0.0, f64::max);
    slice_ms
        .max(1.0)
        .max((span_ms / crate::limits::MAX_PANORAMA_SLICES as f64).ceil())
        .max(bounded_slice_ms(span_ms))
}

/// Sample indices per slice, as ranges (samples are in time order, so
/// usually one range a slice: not 8 bytes a sample, issue 44.2).
fn slice_members(trace: &Trace, slice_ms: f64) -> Vec<Samples> {
    let nslices = trace
        .times_ms
        .iter()
        .map(|t| (t / slice_ms).floor().max(0.0) as usize + 1)
        .max()
        .unwrap_or(0);
    let mut members: Vec<Samples> = vec![Samples::default(); nslices];
    for (i, t) in trace.times_ms.iter().enumerate() {
        members[(t / slice_ms).floor().max(0.0) as usize].push(i);
    }
    members
}

/// The trace's columns a slice reads (None: not recorded).
struct Columns {
    /// `GPU_COLUMNS`, in order.
    gpu: Vec<Option<usize>>,
    other_processes: Option<usize>,
    cpu: Option<usize>,
}

impl Columns {
    fn of(trace: &Trace) -> Columns {
        Columns {
            gpu: GPU_COLUMNS.iter().map(|c| trace.gpu_column(c.0)).collect(),
            other_processes: trace.gpu_column("other_processes"),
            cpu: trace.host_column(HOST_COLUMN.0),
        }
    }
}

/// The mean of the finite values (None: there are none).
fn mean(vals: impl Iterator<Item = f32>) -> Option<f64> {
    let (mut s, mut n) = (0.0f64, 0usize);
    for v in vals {
        if v.is_finite() {
            s += v as f64;
            n += 1;
        }
    }
    (n > 0).then(|| s / n as f64)
}

/// One GPU's slices: each slice's means and problems.
fn gpu_slices(
    trace: &Trace,
    slot: usize,
    members: &[Samples],
    slice_ms: f64,
    cols: &Columns,
) -> Vec<Slice> {
    let mut slices = Vec::with_capacity(members.len());
    for (k, idx) in members.iter().enumerate() {
        let warm = idx.iter().filter(|&i| trace.warmup[i]).count();
        let warmup = !idx.is_empty() && warm * 2 > idx.len();
        let values: Vec<Option<f64>> = cols
            .gpu
            .iter()
            .map(|c| c.and_then(|c| mean(idx.iter().map(|i| trace.gpu_value(i, slot, c)))))
            .collect();
        let target_cpu_pct = cols
            .cpu
            .and_then(|c| mean(idx.iter().map(|i| trace.host_value(i, c))));
        let others = cols
            .other_processes
            .and_then(|c| mean(idx.iter().map(|i| trace.gpu_value(i, slot, c))));
        let problems = if !warmup && !idx.is_empty() {
            slice_problems(&values, others)
        } else {
            Vec::new()
        };
        slices.push(Slice {
            start_ms: k as f64 * slice_ms,
            end_ms: (k + 1) as f64 * slice_ms,
            warmup,
            values,
            target_cpu_pct,
            problems,
        });
    }
    slices
}

/// The problems of a steady slice with samples, from its means (`values`
/// in `GPU_COLUMNS` order) and other processes' count.
fn slice_problems(values: &[Option<f64>], others: Option<f64>) -> Vec<Problem> {
    let (busy_i, sm_i) = (0, 1);
    let mut problems = Vec::new();
    if let (Some(b), Some(s)) = (values[busy_i], values[sm_i]) {
        if b > STARVED_BUSY_PCT && s < STARVED_SM_PCT {
            problems.push(Problem::Starved);
        }
    }
    if values[busy_i].is_some_and(|b| b < IDLE_BUSY_PCT) {
        problems.push(Problem::Idle);
    }
    if others.is_some_and(|o| o > 0.0) {
        problems.push(Problem::Contended);
    }
    problems
}

/// The runs of consecutive flagged slices of one GPU, problem by problem.
fn push_intervals(gpu: u32, slices: &[Slice], intervals: &mut Vec<ProblemInterval>) {
    for p in Problem::ALL {
        let mut open: Option<f64> = None;
        for s in slices {
            match (s.problems.contains(&p), open) {
                (true, None) => open = Some(s.start_ms),
                (false, Some(start)) => {
                    intervals.push(ProblemInterval {
                        gpu,
                        problem: p,
                        start_ms: start,
                        end_ms: s.start_ms,
                    });
                    open = None;
                }
                _ => {}
            }
        }
        if let (Some(start), Some(last)) = (open, slices.last()) {
            intervals.push(ProblemInterval {
                gpu,
                problem: p,
                start_ms: start,
                end_ms: last.end_ms,
            });
        }
    }
}

/// Where the recorded warm-up ends: the last warm-up sample plus one interval.
fn warmup_end_ms(trace: &Trace) -> f64 {
    trace
        .times_ms
        .iter()
        .zip(&trace.warmup)
        .filter(|(_, w)| **w)
        .map(|(t, _)| t + trace.header.interval_ms as f64)
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{self, Signature};

    #[test]
    fn long_runs_get_wider_round_slices() {
        assert_eq!(bounded_slice_ms(0.0), 0.0);
        // Up to 2000 s at 1 s: untouched.
        assert!(bounded_slice_ms(1_999_000.0) <= 1000.0);
        // 1 h: 2 s slices (1800 rows); 24 h: 1 min (1440 rows).
        assert_eq!(bounded_slice_ms(3_600_000.0), 2000.0);
        assert_eq!(bounded_slice_ms(86_400_000.0), 60_000.0);
        for hours in [1.0, 6.0, 24.0, 24.0 * 30.0] {
            let span = hours * 3_600_000.0;
            let rows = span / bounded_slice_ms(span);
            assert!(rows <= TABLE_ROWS as f64, "{hours} h: {rows} rows");
        }
    }

    #[test]
    fn slices_average_samples_and_skip_missing() {
        let t = synthetic::trace(&Signature::healthy(), 1);
        let p = build(&t, 1000.0);
        assert_eq!(p.gpus[0].slices.len(), 33);
        assert!(p.gpus[0].slices[..3].iter().all(|s| s.warmup));
        assert!(!p.gpus[0].slices[3].warmup);
        let busy = p.gpus[0].slices[10].values[0].unwrap();
        assert!((95.0..=100.0).contains(&busy), "{busy}");
        // Sample 150 is a GPM glitch (missing): slice 15 still has SM from
        // its other 9 samples, not a 0 dragged in.
        let sm = p.gpus[0].slices[15].values[1].unwrap();
        assert!(sm > 90.0, "{sm}");
        assert!(p.intervals.is_empty());
        assert_eq!(p.warmup_end_ms, 3000.0);
    }

    #[test]
    fn problem_intervals_are_merged_per_gpu() {
        let p = build(&synthetic::trace(&Signature::launch_storm(), 2), 1000.0);
        // Launch storm: busy ~24 never > 80, so not starved, not idle either.
        assert!(p.intervals.iter().all(|i| i.problem != Problem::Starved));
        let p = build(&synthetic::trace(&Signature::sync_stall(), 2), 1000.0);
        // Busy ~6: idle from the end of warm-up to the end, one interval per GPU.
        let idle: Vec<_> = p
            .intervals
            .iter()
            .filter(|i| i.problem == Problem::Idle)
            .collect();
        assert_eq!(idle.len(), 2, "{idle:?}");
        assert_eq!(idle[0].start_ms, 3000.0);
        assert_eq!(idle[0].end_ms, 33000.0);
        let p = build(&synthetic::trace(&Signature::contention(), 1), 1000.0);
        assert!(p.intervals.iter().any(|i| i.problem == Problem::Contended));
        let mut storm = Signature::launch_storm();
        storm.gpu.insert("gpu_busy_pct", 97.0);
        storm.jitter = 0.02;
        let p = build(&synthetic::trace(&storm, 1), 1000.0);
        assert!(p.intervals.iter().any(|i| i.problem == Problem::Starved));
    }
}
