//! Time-window features of a run: what percentiles cannot say (how often the
//! GPU sits idle, whether the idle gaps are periodic, which GPU lags, how much
//! of the machine's CPU is someone else's). Keys are "metric.feature"; the
//! run summary (`summary::summarize`) stores them in `RunSummary::features`
//! and rules read them by name.
//!
//! All features use the steady window (warm-up excluded). A feature that
//! cannot be computed (metric not recorded, too few samples, a constant
//! series for periodicity) is absent, never 0.
//!
//! Caveat on time resolution: NVML's utilization counters are themselves
//! averages over ~100-200 ms windows, so a sample reads "idle" only when a
//! gap covers most of a window. Stalls shorter than that show up as a lower
//! mean busy, not as idle samples; periodicity is detectable only for periods
//! of at least ~2 sampling intervals.

use super::feature::Feature;
use super::series::Series;
use crate::trace::{EventKind, EventRecord, Samples, Trace};
use std::collections::{BTreeMap, BTreeSet};

/// The benchmark's own rate of work (units per second: its declared
/// throughput, or one over its declared time per unit), set by
/// `summary::Run::derive` from gate.toml's user metrics; absent when the
/// benchmark declares none. GPU-busy-seconds per unit of work is
/// `gpu_busy_pct.mean / benchmark.work_rate`.
pub(crate) const WORK_RATE: &str = "benchmark.work_rate";

/// What a feature is called where people read it (diagnosis tables).
pub fn label(name: &str) -> Option<&'static str> {
    Feature::from_name(name).map(Feature::label)
}

/// Below this GPU busy (%) a sample counts as idle (the brief's threshold).
pub(crate) const IDLE_BUSY_PCT: f64 = 10.0;
/// At or above this GPU busy (%) a sample counts as saturated.
pub(crate) const SATURATED_BUSY_PCT: f64 = 90.0;
/// The sources' standing alert: busy above this while SM active is below
/// `STARVED_SM_PCT` means kernels too small or too fragmented.
pub(crate) const STARVED_BUSY_PCT: f64 = 80.0;
pub(crate) const STARVED_SM_PCT: f64 = 30.0;
/// A target process tree above this CPU (100 = one core) is "busy".
pub(crate) const TARGET_CPU_BUSY_PCT: f64 = 80.0;
/// Periodicity is computed only for series that move by more than this
/// (stdev, % points): a flat series has no period.
const MIN_STDEV_FOR_PERIOD: f64 = 2.0;
const MIN_SAMPLES_FOR_PERIOD: usize = 20;

/// Compute all features of `trace` over its steady window (`steady`:
/// `summary::steady_window`). Each series is read from the columns in
/// place, a block at a time (`Series`): no copy of the window (issue 44.2).
pub fn compute(trace: &Trace, steady: &Samples) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let interval_s = sample_interval_s(trace, steady);
    let steady_s = steady.len() as f64 * interval_s;

    let busy = Series::gpu_mean(trace, steady, "gpu_busy_pct");
    if let Some(busy) = &busy {
        busy_features(busy, interval_s, steady_s, &mut out);
    }
    if let (Some(busy), Some(sm)) = (&busy, Series::gpu_mean(trace, steady, "sm_active_pct")) {
        sm_features(busy, &sm, &mut out);
    }
    spread_features(trace, steady, &mut out);
    let target_cpu = Series::host(trace, steady, "target_cpu_pct");
    if let Some(cpu) = &target_cpu {
        target_cpu_features(cpu, busy.as_ref(), &mut out);
    }
    let host_cpu = Series::host(trace, steady, "host_cpu_busy_pct");
    if let (Some(host), Some(cpu)) = (&host_cpu, &target_cpu) {
        others_cpu_feature(trace, host, cpu, &mut out);
    }
    process_and_event_features(trace, &mut out);
    if let Some(others) = Series::gpu_mean(trace, steady, "other_processes") {
        // The mean over GPUs is above 0 when any GPU had one (disturbance).
        let (mut with, mut seen) = (0usize, 0usize);
        others.visit(&mut |v| {
            if v.is_finite() {
                with += (v > 0.0) as usize;
                seen += 1;
            }
        });
        if seen > 0 {
            out.insert(
                "other_processes.time_share".into(),
                with as f64 / seen as f64,
            );
        }
    }
    out
}

/// The zero a sum of f64 starts from (`Iterator::sum`'s), so that a sum
/// made in place has the bits of the copy's it replaced.
fn zero() -> f64 {
    std::iter::empty::<f64>().sum()
}

/// SM active against GPU busy: their ratio, and the share of samples busy
/// but starved.
fn sm_features(busy: &Series, sm: &Series, out: &mut BTreeMap<String, f64>) {
    let (mut count, mut sum_b, mut sum_s, mut starved) = (0usize, zero(), zero(), 0usize);
    busy.visit_finite_pairs(sm, &mut |b, s| {
        count += 1;
        sum_b += b;
        sum_s += s;
        starved += (b > STARVED_BUSY_PCT && s < STARVED_SM_PCT) as usize;
    });
    if count == 0 {
        return;
    }
    let mb = sum_b / count as f64;
    let ms = sum_s / count as f64;
    if mb > 0.0 {
        out.insert("sm_active_pct.busy_ratio".into(), ms / mb);
    }
    out.insert(
        "sm_active_pct.starved_frac".into(),
        starved as f64 / count as f64,
    );
}

/// How far apart the GPUs' means are, and which GPU lags (busy).
fn spread_features(trace: &Trace, steady: &Samples, out: &mut BTreeMap<String, f64>) {
    for metric in ["gpu_busy_pct", "sm_active_pct", "tensor_pct"] {
        let means = per_gpu_means(trace, steady, metric);
        if means.len() >= 2 {
            let (lo_gpu, lo) = means
                .iter()
                .copied()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap_or((0, 0.0));
            let hi = means.iter().map(|m| m.1).fold(f64::NEG_INFINITY, f64::max);
            out.insert(format!("{metric}.gpu_spread"), hi - lo);
            if metric == "gpu_busy_pct" {
                let index = trace.header.fingerprint.gpus[lo_gpu].index;
                out.insert("gpu_busy_pct.straggler_gpu".into(), index as f64);
            }
        }
    }
}

/// The target's CPU: cores used, and how often it is busy while the GPU idles.
fn target_cpu_features(cpu: &Series, busy: Option<&Series>, out: &mut BTreeMap<String, f64>) {
    if let Some(mean) = mean_finite(cpu) {
        out.insert("target_cpu_pct.cores".into(), mean / 100.0);
    }
    if let Some(busy) = busy {
        let (mut count, mut n) = (0usize, 0usize);
        busy.visit_finite_pairs(cpu, &mut |b, c| {
            count += 1;
            n += (b < 50.0 && c > TARGET_CPU_BUSY_PCT) as usize;
        });
        if count > 0 {
            out.insert(
                "target_cpu_pct.busy_when_gpu_idle".into(),
                n as f64 / count as f64,
            );
        }
    }
}

/// The machine's CPU minus the target's own share of it: other jobs,
/// daemons, a noisy neighbour. target_cpu_pct counts one core as 100,
/// host_cpu_busy_pct counts all cores as 100.
fn others_cpu_feature(trace: &Trace, host: &Series, cpu: &Series, out: &mut BTreeMap<String, f64>) {
    let cpus = trace.header.fingerprint.host.cpu_count;
    if cpus > 0 {
        let (mut sum, mut n) = (zero(), 0usize);
        host.visit_finite_pairs(cpu, &mut |h, t| {
            sum += (h - t / cpus as f64).max(0.0);
            n += 1;
        });
        if n > 0 {
            out.insert("host_cpu_busy_pct.others_pct".into(), sum / n as f64);
        }
    }
}

/// How many processes outside the benchmark's tree the process lists saw
/// (`other_processes.distinct_pids`, for a run or a watch's window).
pub(crate) fn distinct_foreign_pids<'a>(
    records: impl IntoIterator<Item = &'a crate::trace::ProcessesRecord>,
) -> usize {
    let pids: BTreeSet<u32> = records
        .into_iter()
        .flat_map(|r| r.procs.iter())
        .filter(|p| !p.in_target)
        .map(|p| p.pid)
        .collect();
    pids.len()
}

/// Other processes on the GPUs, faults and the frameworks found. Events
/// are counted over the whole recording: an Xid during warm-up is still a
/// fault.
fn process_and_event_features(trace: &Trace, out: &mut BTreeMap<String, f64>) {
    if !trace.processes.is_empty() {
        let n = distinct_foreign_pids(&trace.processes);
        out.insert("other_processes.distinct_pids".into(), n as f64);
    }
    let xid = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Xid)
        .count();
    out.insert("xid.count".into(), xid as f64);
    let gpm = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::GpmInvalid)
        .count();
    out.insert("gpm.invalid_count".into(), gpm as f64);
    for fw in frameworks(trace) {
        out.insert(format!("framework.{fw}"), 1.0);
    }
}

/// The frameworks the recorder found in the target's mapped libraries
/// (`framework` events); for traces recorded before it looked, what the
/// command line names.
pub(crate) fn frameworks(trace: &Trace) -> BTreeSet<&'static str> {
    frameworks_of(trace.events.iter(), &trace.header.command)
}

fn frameworks_of<'a>(
    events: impl Iterator<Item = &'a EventRecord>,
    command: &[String],
) -> BTreeSet<&'static str> {
    let mapped: BTreeSet<&'static str> = events.filter_map(framework_event).collect();
    if !mapped.is_empty() {
        return mapped;
    }
    super::framework::from_command(command)
}

/// The framework a `framework` event names, if it is one this build knows
/// (the window engine keeps them as they arrive).
pub(crate) fn framework_event(e: &EventRecord) -> Option<&'static str> {
    (e.kind == EventKind::Framework)
        .then(|| {
            super::framework::NAMES
                .iter()
                .copied()
                .find(|fw| *fw == e.message)
        })
        .flatten()
}

fn busy_features(busy: &Series, interval_s: f64, steady_s: f64, out: &mut BTreeMap<String, f64>) {
    // Each sum is its own pass over the column, in order, as over a copy.
    let (mut count, mut idle, mut sat, mut sum) = (0usize, 0usize, 0usize, zero());
    busy.visit(&mut |v| {
        if v.is_finite() {
            count += 1;
            idle += (v < IDLE_BUSY_PCT) as usize;
            sat += (v >= SATURATED_BUSY_PCT) as usize;
            sum += v;
        }
    });
    if count == 0 {
        return;
    }
    let n = count as f64;
    out.insert("gpu_busy_pct.idle_frac".into(), idle as f64 / n);
    out.insert("gpu_busy_pct.saturated_frac".into(), sat as f64 / n);
    let mean = sum / n;
    let stdev = if count > 1 {
        let mut squares = zero();
        busy.visit(&mut |v| {
            if v.is_finite() {
                squares += (v - mean).powi(2)
            }
        });
        (squares / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    if mean > 0.0 {
        out.insert("gpu_busy_pct.cv".into(), stdev / mean);
    }
    gap_features(busy, interval_s, steady_s, out);
    if let Some((strength, lag)) = periodicity_of(busy) {
        out.insert("gpu_busy_pct.periodicity".into(), strength);
        if let Some(lag) = lag {
            out.insert("gpu_busy_pct.period_s".into(), lag as f64 * interval_s);
        }
    }
}

/// Idle gaps: maximal runs of idle samples (missing samples end a run),
/// counted in a pass over the series; `f` gets each gap's start (its
/// position in the window) and length.
fn visit_gaps(busy: &Series, f: &mut dyn FnMut(usize, usize)) {
    let (mut i, mut start, mut run) = (0usize, 0usize, 0usize);
    busy.visit(&mut |v| {
        if v.is_finite() && v < IDLE_BUSY_PCT {
            if run == 0 {
                start = i;
            }
            run += 1;
        } else if run > 0 {
            f(start, run);
            run = 0;
        }
        i += 1;
    });
    if run > 0 {
        f(start, run);
    }
}

/// How often the GPU goes idle, for how long, and how regularly.
fn gap_features(busy: &Series, interval_s: f64, steady_s: f64, out: &mut BTreeMap<String, f64>) {
    // The steps between gap starts, handed over in order.
    let steps = |f: &mut dyn FnMut(f64)| {
        let mut prev: Option<usize> = None;
        visit_gaps(busy, &mut |start, _| {
            if let Some(p) = prev {
                f((start - p) as f64);
            }
            prev = Some(start);
        });
    };
    let (mut gaps, mut total_len, mut step_sum) = (0usize, 0usize, zero());
    visit_gaps(busy, &mut |_, len| {
        gaps += 1;
        total_len += len;
    });
    if steady_s > 0.0 {
        let per_min = gaps as f64 * 60.0 / steady_s;
        out.insert("gpu_busy_pct.idle_gaps_per_min".into(), per_min);
    }
    if gaps > 0 {
        let mean_len = total_len as f64 / gaps as f64;
        out.insert("gpu_busy_pct.idle_gap_mean_s".into(), mean_len * interval_s);
    }
    // Regularity of gap spacing: 1 - coefficient of variation of the
    // intervals between gap starts. A stall at a fixed point of every step
    // gives evenly spaced gaps (near 1); random hiccups do not.
    if gaps >= 4 {
        steps(&mut |d| step_sum += d);
        let m = step_sum / (gaps - 1) as f64;
        let mut squares = zero();
        steps(&mut |d| squares += (d - m).powi(2));
        let sd = (squares / (gaps - 2) as f64).sqrt();
        if m > 0.0 {
            out.insert(
                "gpu_busy_pct.gap_regularity".into(),
                (1.0 - sd / m).clamp(0.0, 1.0),
            );
        }
    }
}

/// Strength (0..1) and lag (samples) of the strongest repeating pattern:
/// the highest local maximum of the autocorrelation at lags 2..n/3. Missing
/// samples are filled with the series mean (they then neither create nor
/// hide a period). None for short or flat series; strength 0 and no lag
/// when the autocorrelation only decays (drift, noise without a period).
///
/// Cost: O(n log n). The autocorrelation at every lag comes from one FFT
/// (Wiener-Khinchin: the inverse transform of the power spectrum of the
/// zero-padded series); a dot product per lag made a 24-hour trace cost
/// minutes. FFT values differ from the dot products in the last bits, so
/// every decision that FFT rounding could flip (two lags within `TIE` of
/// each other, a value within `TIE` of 0 or of the 0.9 x best cut) is
/// re-decided with the exact dot products, and the returned strength is
/// always the exact dot product of the chosen lag: the result is the same
/// as the direct method's (`tests::fft_periodicity_matches_the_direct_method`).
/// A trace's steady window longer than `PERIOD_BLOCK` samples is read in
/// blocks instead (`periodicity_of`).
pub(crate) fn periodicity(series: &[f64]) -> Option<(f64, Option<usize>)> {
    let (x, var) = centred_for_period(series)?;
    let n = x.len();
    let max_lag = n / 3;
    let mut lags = Lags {
        sums: autocorrelation_sums(&x, max_lag + 1),
        var,
        n,
        block: n,
        exact: Some(ExactLags::new(&x, var)),
    };
    Some(strongest_period(&mut lags, max_lag))
}

/// Samples in one periodicity transform (~3.6 h at 100 ms). A longer
/// steady window is cut into blocks of this many samples, in order; their
/// autocorrelation sums (each block's own pairs of samples) are added up
/// and normalised by the pairs counted, so the memory is a block's
/// transform whatever the trace's length (issue 44.2: a 72 h window's one
/// transform took ~150 MB). Periods are then searched up to a third of a
/// block (~73 min at 100 ms), and the FFT's values decide (an exact dot
/// product would mean a pass over the whole column per lag). A window of
/// one block gets exactly `periodicity`'s result.
const PERIOD_BLOCK: usize = 1 << 17;

/// `periodicity` of a steady series read from the trace in place.
fn periodicity_of(series: &Series) -> Option<(f64, Option<usize>)> {
    let n = series.len();
    if n <= PERIOD_BLOCK {
        return periodicity(&series.to_vec());
    }
    let (mut sum, mut count) = (0.0, 0usize);
    series.visit(&mut |v| {
        if v.is_finite() {
            sum += v;
            count += 1;
        }
    });
    if count < MIN_SAMPLES_FOR_PERIOD {
        return None;
    }
    let mean = sum / count as f64;
    let centred = |v: f64| if v.is_finite() { v - mean } else { 0.0 };
    let mut var = 0.0;
    series.visit(&mut |v| var += centred(v) * centred(v));
    if ((var / (n - 1) as f64).sqrt()) < MIN_STDEV_FOR_PERIOD {
        return None;
    }
    let max_lag = PERIOD_BLOCK / 3;
    let mut sums = vec![0.0; max_lag + 2];
    let mut add_block = |x: &[f64]| {
        let block = autocorrelation_sums(x, max_lag + 1);
        sums.iter_mut().zip(block).for_each(|(s, b)| *s += b);
    };
    let mut x = Vec::with_capacity(PERIOD_BLOCK);
    series.visit(&mut |v| {
        x.push(centred(v));
        if x.len() == PERIOD_BLOCK {
            add_block(&x);
            x.clear();
        }
    });
    if !x.is_empty() {
        add_block(&x);
    }
    let mut lags = Lags {
        sums,
        var,
        n,
        block: PERIOD_BLOCK,
        exact: None,
    };
    Some(strongest_period(&mut lags, max_lag))
}

/// The autocorrelation of a centred series at each lag, from FFT sums,
/// with the exact dot products where they can be had (one block).
struct Lags<'a> {
    /// `sum x[i] * x[i + k]` over pairs within a block, k = 0..=max_lag + 1.
    sums: Vec<f64>,
    var: f64,
    n: usize,
    /// Samples per block (`n` for one block).
    block: usize,
    exact: Option<ExactLags<'a>>,
}

impl Lags<'_> {
    fn fft(&self, k: usize) -> f64 {
        self.sums[k] / self.var
    }

    fn can_refine(&self) -> bool {
        self.exact.as_ref().is_some_and(|e| e.can_refine())
    }

    /// The exact value where there is one, else the FFT's.
    fn r(&mut self, k: usize) -> f64 {
        match &mut self.exact {
            Some(e) => e.r(k),
            None => self.fft(k),
        }
    }

    /// `r` normalised for the pairs at lag `k` (n - k for one block).
    fn scale(&self, k: usize, r: f64) -> f64 {
        let pairs =
            (self.n / self.block) * (self.block - k) + (self.n % self.block).saturating_sub(k);
        (r * self.n as f64 / pairs as f64).min(1.0)
    }

    /// r[a] > r[b], as the direct method decides it.
    fn gt(&mut self, a: usize, b: usize) -> bool {
        let d = self.fft(a) - self.fft(b);
        if d.abs() > TIE || !self.can_refine() {
            d > 0.0
        } else {
            self.r(a) > self.r(b)
        }
    }
}

/// The strongest local maximum of the autocorrelation at lags 2..=max_lag
/// (`periodicity`'s rules).
fn strongest_period(lags: &mut Lags, max_lag: usize) -> (f64, Option<usize>) {
    let mut peaks: Vec<(usize, f64)> = Vec::new();
    for k in 2..=max_lag {
        if !lags.gt(k, k - 1) || lags.gt(k + 1, k) {
            continue;
        }
        let positive = if lags.fft(k).abs() > TIE || !lags.can_refine() {
            lags.fft(k) > 0.0
        } else {
            lags.r(k) > 0.0
        };
        if positive {
            peaks.push((k, lags.scale(k, lags.fft(k))));
        }
    }
    let Some(best_approx) = peaks.iter().map(|p| p.1).reduce(f64::max) else {
        return (0.0, None);
    };
    // The exact best: the exact values of every peak that could be it.
    let best = peaks
        .iter()
        .filter(|p| p.1 >= best_approx - 2.0 * TIE)
        .map(|&(k, _)| {
            let r = lags.r(k);
            lags.scale(k, r)
        })
        .fold(f64::NEG_INFINITY, f64::max);
    // Multiples of the period peak as high as the period itself: take the
    // shortest lag that comes close to the best.
    let cut = 0.9 * best;
    for &(k, v) in &peaks {
        let exact = |lags: &mut Lags| {
            let r = lags.r(k);
            lags.scale(k, r)
        };
        let d = v - cut;
        let chosen = if d.abs() > 2.0 * TIE {
            d > 0.0
        } else {
            exact(lags) >= cut
        };
        if chosen {
            return (exact(lags), Some(k));
        }
    }
    (best, Some(0))
}

/// FFT values closer than this (autocorrelations normalised to 1 at lag 0)
/// are re-compared with exact dot products. FFT rounding error is about
/// 1e-16 x log2(n) x 10; this leaves six orders of magnitude of margin.
const TIE: f64 = 1e-9;
/// Exact re-decisions allowed per series. Each is a dot product (O(n)); a
/// pathological series with thousands of exact ties keeps the FFT's answer
/// beyond this many rather than turning quadratic again.
const MAX_EXACT_LAGS: usize = 256;

/// The centred series (missing samples = the mean) and its sum of squares;
/// None when too short or too flat to have a period.
fn centred_for_period(series: &[f64]) -> Option<(Vec<f64>, f64)> {
    let (sum, count) = series
        .iter()
        .filter(|v| v.is_finite())
        .fold((0.0, 0usize), |(s, c), v| (s + v, c + 1));
    if count < MIN_SAMPLES_FOR_PERIOD {
        return None;
    }
    let mean = sum / count as f64;
    let x: Vec<f64> = series
        .iter()
        .map(|v| if v.is_finite() { v - mean } else { 0.0 })
        .collect();
    let var = x.iter().map(|v| v * v).sum::<f64>();
    let sd = (var / (x.len() - 1) as f64).sqrt();
    if sd < MIN_STDEV_FOR_PERIOD {
        return None;
    }
    Some((x, var))
}

/// `sum_i x[i] * x[i + k]` for k in 0..=`max_lag` (0 where k >= n), by FFT.
fn autocorrelation_sums(x: &[f64], max_lag: usize) -> Vec<f64> {
    use realfft::RealFftPlanner;
    let n = x.len();
    // Zero-padding to >= 2n makes the circular correlation linear; a power
    // of two keeps the transform on its fastest path.
    let m = (2 * n).next_power_of_two();
    let mut planner = RealFftPlanner::<f64>::new();
    let fwd = planner.plan_fft_forward(m);
    let inv = planner.plan_fft_inverse(m);
    let mut buf = fwd.make_input_vec();
    buf[..n].copy_from_slice(x);
    let mut spec = fwd.make_output_vec();
    fwd.process(&mut buf, &mut spec)
        .expect("buffer sizes come from the plan");
    for c in spec.iter_mut() {
        *c = realfft::num_complex::Complex::new(c.norm_sqr(), 0.0);
    }
    inv.process(&mut spec, &mut buf)
        .expect("buffer sizes come from the plan");
    (0..=max_lag)
        .map(|k| if k < n { buf[k] / m as f64 } else { 0.0 })
        .collect()
}

/// Exact autocorrelation at single lags, the direct method's arithmetic,
/// memoised and budgeted (`MAX_EXACT_LAGS`).
struct ExactLags<'a> {
    x: &'a [f64],
    var: f64,
    done: BTreeMap<usize, f64>,
}

impl<'a> ExactLags<'a> {
    fn new(x: &'a [f64], var: f64) -> Self {
        ExactLags {
            x,
            var,
            done: BTreeMap::new(),
        }
    }

    fn can_refine(&self) -> bool {
        self.done.len() < MAX_EXACT_LAGS
    }

    fn r(&mut self, k: usize) -> f64 {
        let (x, var) = (self.x, self.var);
        *self.done.entry(k).or_insert_with(|| direct_r(x, var, k))
    }
}

/// Autocorrelation at lag `k` by one dot product, normalised by `var`.
fn direct_r(x: &[f64], var: f64, k: usize) -> f64 {
    let n = x.len();
    if k >= n {
        return 0.0;
    }
    x[..n - k]
        .iter()
        .zip(&x[k..])
        .map(|(a, b)| a * b)
        .sum::<f64>()
        / var
}

/// The median step between steady samples (the upper median: the
/// `len / 2`-th smallest), selected over the steps in place.
fn sample_interval_s(trace: &Trace, steady: &Samples) -> f64 {
    let visit = |f: &mut dyn FnMut(f64)| {
        // Each range's times decoded in order, not one by one.
        let mut prev: Option<f64> = None;
        for r in steady.ranges() {
            for t in trace.times_ms.range(r.clone()) {
                if let Some(p) = prev {
                    let d = t - p;
                    if d > 0.0 {
                        f(d)
                    }
                }
                prev = Some(t);
            }
        }
    };
    let mut len = 0usize;
    visit(&mut |_| len += 1);
    match crate::stats::kth_of_visits(visit, len / 2) {
        Some(mid) => mid / 1000.0,
        None => trace.header.interval_ms.max(1) as f64 / 1000.0,
    }
}

/// (GPU slot, mean) for each GPU that has the metric.
fn per_gpu_means(trace: &Trace, steady: &Samples, id: &str) -> Vec<(usize, f64)> {
    let Some(col) = trace.gpu_column(id) else {
        return Vec::new();
    };
    (0..trace.gpu_count())
        .filter_map(|g| {
            // `mean_finite`, read in place.
            let (mut sum, mut n) = (zero(), 0usize);
            trace.visit_gpu(steady, g, col, &mut |v| {
                if v.is_finite() {
                    sum += v;
                    n += 1;
                }
            });
            (n > 0).then(|| (g, sum / n as f64))
        })
        .collect()
}

/// The mean of the finite values (their sum in order, as a copy's), None
/// when there is none.
fn mean_finite(series: &Series) -> Option<f64> {
    let (mut sum, mut n) = (zero(), 0usize);
    series.visit(&mut |x| {
        if x.is_finite() {
            sum += x;
            n += 1;
        }
    });
    (n > 0).then(|| sum / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{self, Signature};

    /// Features over the trace's own steady window.
    fn compute(trace: &Trace) -> BTreeMap<String, f64> {
        super::compute(trace, &crate::summary::steady_window(trace))
    }

    #[test]
    fn periodicity_finds_a_square_wave_and_not_noise() {
        // 8 busy samples, 2 idle: a stall every second at 100 ms.
        let wave: Vec<f64> = (0..300)
            .map(|i| if i % 10 < 8 { 95.0 } else { 2.0 })
            .collect();
        let (strength, lag) = periodicity(&wave).unwrap();
        assert_eq!(lag, Some(10));
        assert!(strength > 0.9, "{strength}");

        // Deterministic pseudo-noise has no strong period.
        let mut x = 12345u64;
        let noise: Vec<f64> = (0..300)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                50.0 + ((x >> 33) % 40) as f64
            })
            .collect();
        let (strength, _) = periodicity(&noise).unwrap();
        assert!(strength < 0.3, "{strength}");

        // Flat or short series: no periodicity at all (absent, not 0).
        assert!(periodicity(&[100.0; 300]).is_none());
        assert!(periodicity(&wave[..10]).is_none());
        // Missing samples do not invent a period.
        let mut holes = wave.clone();
        holes[5] = f64::NAN;
        assert_eq!(periodicity(&holes).unwrap().1, Some(10));
    }

    /// The quadratic lag search `periodicity` replaced, kept as the
    /// reference the FFT version must reproduce (the centring is shared).
    fn periodicity_direct(series: &[f64]) -> Option<(f64, Option<usize>)> {
        let (x, var) = centred_for_period(series)?;
        let n = x.len();
        let max_lag = n / 3;
        let r: Vec<f64> = (0..=max_lag + 1).map(|k| direct_r(&x, var, k)).collect();
        let peaks: Vec<(usize, f64)> = (2..=max_lag)
            .filter(|&k| r[k] > r[k - 1] && r[k] >= r[k + 1] && r[k] > 0.0)
            .map(|k| (k, (r[k] * n as f64 / (n - k) as f64).min(1.0)))
            .collect();
        let Some(best) = peaks.iter().map(|p| p.1).reduce(f64::max) else {
            return Some((0.0, None));
        };
        let (k, s) = peaks
            .iter()
            .copied()
            .find(|p| p.1 >= 0.9 * best)
            .unwrap_or((0, best));
        Some((s, Some(k)))
    }

    fn lcg(seed: u64) -> impl FnMut() -> f64 {
        let mut x = seed;
        move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    #[test]
    fn fft_periodicity_matches_the_direct_method() {
        let mut cases: Vec<Vec<f64>> = Vec::new();
        // Square waves (exact ties between lags), integer-valued like NVML
        // utilization, with and without holes and noise.
        for period in [2usize, 3, 7, 10, 25, 64] {
            for n in [20usize, 61, 300, 1001, 4096] {
                let wave: Vec<f64> = (0..n)
                    .map(|i| {
                        if i % period < period * 4 / 5 {
                            95.0
                        } else {
                            2.0
                        }
                    })
                    .collect();
                let mut noisy = wave.clone();
                let mut rnd = lcg((period * n) as u64);
                for v in noisy.iter_mut() {
                    *v = (*v + 10.0 * rnd()).round();
                }
                let mut holes = noisy.clone();
                for i in (3..n).step_by(17) {
                    holes[i] = f64::NAN;
                }
                cases.extend([wave, noisy, holes]);
            }
        }
        // Noise, drift, a sine, quantised values (means of 8 integers).
        for seed in 0..20u64 {
            let mut rnd = lcg(seed);
            let n = 50 + (seed as usize * 997) % 3000;
            cases.push((0..n).map(|_| 100.0 * rnd()).collect());
            cases.push((0..n).map(|i| i as f64 * 0.05 + 5.0 * rnd()).collect());
            cases.push(
                (0..n)
                    .map(|i| 50.0 + 40.0 * (i as f64 * 0.37).sin())
                    .collect(),
            );
            cases.push(
                (0..n)
                    .map(|_| (0..8).map(|_| (100.0 * rnd()).round()).sum::<f64>() / 8.0)
                    .collect(),
            );
        }
        // Every synthetic signature's busy series.
        for sig in Signature::all() {
            let t = synthetic::trace(&sig, 2);
            let steady = Samples::matching(t.sample_count(), |i| !t.warmup[i]);
            if let Some(s) = Series::gpu_mean(&t, &steady, "gpu_busy_pct") {
                cases.push(s.to_vec());
            }
        }
        for (i, c) in cases.iter().enumerate() {
            let (a, b) = (periodicity(c), periodicity_direct(c));
            assert_eq!(
                a.map(|(s, k)| (s.to_bits(), k)),
                b.map(|(s, k)| (s.to_bits(), k)),
                "case {i} (n = {}): fft {a:?} vs direct {b:?}",
                c.len()
            );
        }
    }

    #[test]
    fn idle_fraction_gaps_and_regularity() {
        let trace = synthetic::trace(&Signature::periodic_stall(), 1);
        let f = compute(&trace);
        let idle = f["gpu_busy_pct.idle_frac"];
        assert!((0.15..0.35).contains(&idle), "idle_frac {idle}");
        assert!(f["gpu_busy_pct.gap_regularity"] > 0.8, "{f:?}");
        assert!((f["gpu_busy_pct.period_s"] - 1.0).abs() < 0.11, "{f:?}");
        assert!(f["gpu_busy_pct.idle_gaps_per_min"] > 50.0, "{f:?}");
        assert!(f["gpu_busy_pct.cv"] > 0.3, "{f:?}");

        let healthy = compute(&synthetic::trace(&Signature::healthy(), 1));
        assert_eq!(healthy["gpu_busy_pct.idle_frac"], 0.0);
        assert!(healthy["gpu_busy_pct.saturated_frac"] > 0.9);
        assert!(healthy["gpu_busy_pct.cv"] < 0.05);
        assert!(!healthy.contains_key("gpu_busy_pct.gap_regularity"));
    }

    #[test]
    fn fragmentation_and_host_features() {
        let f = compute(&synthetic::trace(&Signature::launch_storm(), 1));
        assert!(f["sm_active_pct.busy_ratio"] < 0.05, "{f:?}");
        let f = compute(&synthetic::trace(&Signature::healthy(), 1));
        assert!(f["sm_active_pct.busy_ratio"] > 0.9, "{f:?}");
        assert_eq!(f["sm_active_pct.starved_frac"], 0.0);

        let f = compute(&synthetic::trace(&Signature::host_bound(), 1));
        assert!(f["target_cpu_pct.busy_when_gpu_idle"] > 0.8, "{f:?}");
        assert!(f["target_cpu_pct.cores"] > 0.9, "{f:?}");

        let f = compute(&synthetic::trace(&Signature::host_contention(), 1));
        assert!(f["host_cpu_busy_pct.others_pct"] > 50.0, "{f:?}");
    }

    #[test]
    fn per_gpu_imbalance_names_the_straggler() {
        let f = compute(&synthetic::trace(&Signature::imbalance(), 4));
        assert!(f["gpu_busy_pct.gpu_spread"] > 30.0, "{f:?}");
        assert_eq!(f["gpu_busy_pct.straggler_gpu"], 3.0);
        // One GPU: no spread at all rather than a spread of 0.
        let f = compute(&synthetic::trace(&Signature::healthy(), 1));
        assert!(!f.contains_key("gpu_busy_pct.gpu_spread"));
    }

    #[test]
    fn missing_gpm_leaves_features_absent() {
        let mut sig = Signature::healthy();
        sig.no_gpm = true;
        let f = compute(&synthetic::trace(&sig, 1));
        assert!(!f.contains_key("sm_active_pct.busy_ratio"));
        assert!(!f.contains_key("sm_active_pct.starved_frac"));
        assert!(f.contains_key("gpu_busy_pct.idle_frac"));
    }

    #[test]
    fn contention_counts_foreign_pids_and_events_are_counted() {
        let f = compute(&synthetic::trace(&Signature::contention(), 1));
        assert_eq!(f["other_processes.distinct_pids"], 1.0);
        let f = compute(&synthetic::trace(&Signature::healthy(), 1));
        assert_eq!(f["other_processes.distinct_pids"], 0.0);
        assert_eq!(f["xid.count"], 0.0);
    }

    #[test]
    fn every_produced_key_is_declared() {
        for sig in Signature::all() {
            for k in compute(&synthetic::trace(&sig, 2)).keys() {
                assert!(Feature::from_name(k).is_some(), "undeclared feature {k}");
            }
        }
    }
}
