//! Incremental sliding windows for `gate watch` (issue 22.4): samples are
//! added to a window when they arrive and dropped when they leave it, and
//! a window's statistics are read from what it keeps, never by summarising
//! the window again at each evaluation.
//!
//! What a window keeps, per series that a rule reads (registered the first
//! time an evaluation asks for it, from the window's samples, then kept up
//! to date sample by sample):
//! - mean, n, stdev: running sums (count, sum, and the sum and sum of
//!   squares of the values minus a shift, Welford's shifted-data form;
//!   Chan, Golub & LeVeque 1983, "Algorithms for computing the sample
//!   variance", section 3). Adding then subtracting floats drifts, so every
//!   sum is recomputed from the window's samples once as many samples have
//!   come in as the window holds: amortised O(1) per sample, and the error
//!   never outlives one window. Sums of integer-valued counters
//!   (utilisations, process counts, MiB) are exact, hence equal to `check`'s.
//! - min, max: monotonic deques (the "ascending minima" algorithm; Lemire
//!   2006, "Streaming maximum-minimum filter using no more than three
//!   comparisons per element"): amortised O(1) per sample, exact.
//! - p5, p50, p95, p99: every finite value of the window in a sorted array
//!   (binary search to insert and to remove): O(log W) to find, one memmove
//!   of up to W values, exact (the same order statistics `check` selects).
//! - the diagnosis features (`analysis::features`): counts (idle,
//!   saturated, starved, pairs of finite values), running sums, the gap
//!   starts in a deque, and the positive time steps sorted (their median is
//!   the sampling interval). Periodicity (an FFT over the window) is the
//!   one feature computed from the window's samples when it is read: only
//!   the evidence of a rule that fires reads it.
//!
//! Nothing else is summarised: a statistic no rule reads costs nothing.
//! `WindowView` reads these through `MetricSource`, the interface the rules
//! read a `RunSummary` through, so the rules cannot tell the two apart;
//! `tests::incremental_alerts_equal_a_recomputation` (src/watch.rs) replays
//! fixtures through both.

use crate::analysis::feature::{Feature, Scope};
use crate::analysis::features::{
    periodicity, IDLE_BUSY_PCT, SATURATED_BUSY_PCT, STARVED_BUSY_PCT, STARVED_SM_PCT,
    TARGET_CPU_BUSY_PCT,
};
use crate::metrics::Statistic;
use crate::stats::{percentile_sorted, MetricSource, Stat};
use crate::trace::{EventKind, EventRecord, Header, ProcessesRecord};
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// One series of the samples: a GPU's column, the per-sample mean over
/// GPUs of a column (missing values skipped, as `Trace::gpu_mean_at`), or
/// a host column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Series {
    Gpu { slot: usize, col: usize },
    GpuMean { col: usize },
    Host { col: usize },
}

/// The samples held (warm-up excluded), oldest first, numbered by `seq`
/// (never reused, so windows can point into it).
#[derive(Debug, Default)]
pub(crate) struct Ring {
    ngpu: usize,
    ncols: usize,
    nhost: usize,
    times: VecDeque<f64>,
    /// `[sample][gpu][column]`, flattened.
    gpu: VecDeque<f32>,
    host: VecDeque<f32>,
    front: u64,
}

impl Ring {
    pub fn new(ngpu: usize, ncols: usize, nhost: usize) -> Ring {
        Ring {
            ngpu,
            ncols,
            nhost,
            ..Default::default()
        }
    }

    /// One past the newest sample's seq.
    pub fn end(&self) -> u64 {
        self.front + self.times.len() as u64
    }

    pub(crate) fn front(&self) -> u64 {
        self.front
    }

    pub fn t(&self, seq: u64) -> f64 {
        self.times[(seq - self.front) as usize]
    }

    pub(crate) fn last_t(&self) -> Option<f64> {
        self.times.back().copied()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.times.len()
    }

    pub fn value(&self, seq: u64, s: Series) -> f64 {
        let i = (seq - self.front) as usize;
        match s {
            Series::Gpu { slot, col } => self.gpu[(i * self.ngpu + slot) * self.ncols + col] as f64,
            Series::GpuMean { col } => {
                // The arithmetic of `Trace::gpu_mean_at`, in the same order.
                let (sum, n) = (0..self.ngpu)
                    .map(|g| self.gpu[(i * self.ngpu + g) * self.ncols + col] as f64)
                    .filter(|v| v.is_finite())
                    .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
                if n == 0 {
                    f64::NAN
                } else {
                    sum / n as f64
                }
            }
            Series::Host { col } => self.host[i * self.nhost + col] as f64,
        }
    }

    /// The whole sample row `seq`: GPU values, then host values.
    pub fn row(&self, seq: u64) -> (Vec<f32>, Vec<f32>) {
        let i = (seq - self.front) as usize;
        let g = self.ngpu * self.ncols;
        (
            self.gpu.range(i * g..(i + 1) * g).copied().collect(),
            self.host
                .range(i * self.nhost..(i + 1) * self.nhost)
                .copied()
                .collect(),
        )
    }

    /// Append a sample; `gpu` is `[gpu][column]` flattened.
    pub fn push(&mut self, t_ms: f64, gpu: &[f32], host: &[f32]) {
        debug_assert_eq!(gpu.len(), self.ngpu * self.ncols);
        debug_assert_eq!(host.len(), self.nhost);
        self.times.push_back(t_ms);
        self.gpu.extend(gpu.iter().copied());
        self.host.extend(host.iter().copied());
    }

    pub(crate) fn pop_front(&mut self) {
        if self.times.pop_front().is_some() {
            self.gpu.drain(..self.ngpu * self.ncols);
            self.host.drain(..self.nhost);
            self.front += 1;
        }
    }

    /// Forget every sample (a new header); seq numbers go on.
    pub(crate) fn clear_to(&mut self, ngpu: usize, ncols: usize, nhost: usize) {
        let end = self.end();
        *self = Ring::new(ngpu, ncols, nhost);
        self.front = end;
    }
}

/// Count, sum, and shifted sums of the finite values of one series.
#[derive(Debug, Clone, Default)]
struct Sums {
    n: usize,
    /// Plain sum, for the mean (exact for integer-valued counters).
    sum: f64,
    /// The values minus `shift` (the first value at the last rebuild): the
    /// variance from them does not cancel catastrophically.
    shift: f64,
    dsum: f64,
    dsumsq: f64,
    added_since_rebuild: usize,
}

impl Sums {
    fn add(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        if self.n == 0 {
            *self = Sums {
                shift: v,
                added_since_rebuild: self.added_since_rebuild,
                ..Default::default()
            };
        }
        let d = v - self.shift;
        self.n += 1;
        self.sum += v;
        self.dsum += d;
        self.dsumsq += d * d;
        self.added_since_rebuild += 1;
    }

    fn remove(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        self.n -= 1;
        if self.n == 0 {
            *self = Sums {
                added_since_rebuild: self.added_since_rebuild,
                ..Default::default()
            };
            return;
        }
        let d = v - self.shift;
        self.sum -= v;
        self.dsum -= d;
        self.dsumsq -= d * d;
    }

    /// Time to recompute from the window: as many samples came in as it
    /// holds (at least 64), so the rebuilds cost O(1) per sample.
    fn stale(&self) -> bool {
        self.added_since_rebuild > self.n.max(64)
    }

    fn from_values(values: impl Iterator<Item = f64>) -> Sums {
        let mut s = Sums::default();
        for v in values {
            s.add(v);
        }
        s.added_since_rebuild = 0;
        s
    }

    fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }

    fn stdev(&self) -> Option<f64> {
        match self.n {
            0 => None,
            1 => Some(0.0),
            n => {
                let n = n as f64;
                let var = (self.dsumsq - self.dsum * self.dsum / n) / (n - 1.0);
                Some(var.max(0.0).sqrt())
            }
        }
    }
}

/// Monotonic deques of (seq, value): the window's minimum and maximum at
/// their fronts.
#[derive(Debug, Clone, Default)]
struct Extremes {
    min: VecDeque<(u64, f64)>,
    max: VecDeque<(u64, f64)>,
}

impl Extremes {
    fn add(&mut self, seq: u64, v: f64) {
        if !v.is_finite() {
            return;
        }
        while self
            .min
            .back()
            .is_some_and(|b| b.1.total_cmp(&v) != Ordering::Less)
        {
            self.min.pop_back();
        }
        self.min.push_back((seq, v));
        while self
            .max
            .back()
            .is_some_and(|b| b.1.total_cmp(&v) != Ordering::Greater)
        {
            self.max.pop_back();
        }
        self.max.push_back((seq, v));
    }

    fn evict(&mut self, start: u64) {
        while self.min.front().is_some_and(|f| f.0 < start) {
            self.min.pop_front();
        }
        while self.max.front().is_some_and(|f| f.0 < start) {
            self.max.pop_front();
        }
    }
}

/// The finite values of a window in ascending `total_cmp` order.
#[derive(Debug, Clone, Default)]
struct Sorted(Vec<f64>);

impl Sorted {
    fn at(&self, v: f64) -> usize {
        self.0
            .partition_point(|x| x.total_cmp(&v) == Ordering::Less)
    }

    fn add(&mut self, v: f64) {
        if v.is_finite() {
            let i = self.at(v);
            self.0.insert(i, v);
        }
    }

    fn remove(&mut self, v: f64) {
        if v.is_finite() {
            let i = self.at(v);
            debug_assert!(self.0.get(i).is_some_and(|x| x.to_bits() == v.to_bits()));
            if i < self.0.len() {
                self.0.remove(i);
            }
        }
    }
}

/// The columns the features read, found once from the header.
#[derive(Debug, Clone, Default)]
pub(crate) struct FeatureColumns {
    busy: Option<usize>,
    sm: Option<usize>,
    tensor: Option<usize>,
    target_cpu: Option<usize>,
    host_cpu: Option<usize>,
    cpu_count: u32,
    gpu_indices: Vec<u32>,
}

impl FeatureColumns {
    pub fn of(h: &Header) -> FeatureColumns {
        let gpu = |id: &str| h.gpu_columns.iter().position(|c| c == id);
        let host = |id: &str| h.host_columns.iter().position(|c| c == id);
        FeatureColumns {
            busy: gpu("gpu_busy_pct"),
            sm: gpu("sm_active_pct"),
            tensor: gpu("tensor_pct"),
            target_cpu: host("target_cpu_pct"),
            host_cpu: host("host_cpu_busy_pct"),
            cpu_count: h.fingerprint.host.cpu_count,
            gpu_indices: h.fingerprint.gpus.iter().map(|g| g.index).collect(),
        }
    }
}

/// The counts and sums behind the features (`analysis::features::compute`).
#[derive(Debug, Clone, Default)]
struct FeatureCounts {
    busy_n: usize,
    idle: usize,
    saturated: usize,
    /// Samples where busy and SM active are both known.
    bs_n: usize,
    bs_busy: f64,
    bs_sm: f64,
    starved: usize,
    /// Samples where busy and the target's CPU are both known.
    bc_n: usize,
    busy_when_idle: usize,
    /// Samples where the host's and the target's CPU are both known.
    hc_n: usize,
    others: f64,
    /// Samples after the window's first that start an idle gap.
    gap_starts: VecDeque<u64>,
    added_since_rebuild: usize,
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

fn is_idle(busy: f64) -> bool {
    busy.is_finite() && busy < IDLE_BUSY_PCT
}

impl FeatureCounts {
    /// Add (`sign` 1) or remove (-1) sample `seq`'s contribution, except
    /// the gap starts (`Window` keeps those).
    fn count(&mut self, ring: &Ring, c: &FeatureColumns, seq: u64, add: bool) {
        let get = |s: Option<Series>| s.map_or(f64::NAN, |s| ring.value(seq, s));
        let busy = get(c.busy.map(|col| Series::GpuMean { col }));
        let sm = get(c.sm.map(|col| Series::GpuMean { col }));
        let cpu = get(c.target_cpu.map(|col| Series::Host { col }));
        let host = get(c.host_cpu.map(|col| Series::Host { col }));
        let step = |n: &mut usize, yes: bool| {
            if yes {
                if add {
                    *n += 1
                } else {
                    *n -= 1
                }
            }
        };
        let sum = |s: &mut f64, v: f64| {
            if add {
                *s += v
            } else {
                *s -= v
            }
        };
        if let Some(b) = finite(busy) {
            step(&mut self.busy_n, true);
            step(&mut self.idle, b < IDLE_BUSY_PCT);
            step(&mut self.saturated, b >= SATURATED_BUSY_PCT);
            if let Some(s) = finite(sm) {
                step(&mut self.bs_n, true);
                sum(&mut self.bs_busy, b);
                sum(&mut self.bs_sm, s);
                step(
                    &mut self.starved,
                    b > STARVED_BUSY_PCT && s < STARVED_SM_PCT,
                );
            }
            if let Some(t) = finite(cpu) {
                step(&mut self.bc_n, true);
                step(
                    &mut self.busy_when_idle,
                    b < 50.0 && t > TARGET_CPU_BUSY_PCT,
                );
            }
        }
        if let (Some(h), Some(t)) = (finite(host), finite(cpu)) {
            if c.cpu_count > 0 {
                step(&mut self.hc_n, true);
                sum(&mut self.others, (h - t / c.cpu_count as f64).max(0.0));
            }
        }
        if add {
            self.added_since_rebuild += 1;
        }
        if self.bs_n == 0 {
            (self.bs_busy, self.bs_sm) = (0.0, 0.0);
        }
        if self.hc_n == 0 {
            self.others = 0.0;
        }
    }

    fn stale(&self) -> bool {
        self.added_since_rebuild > self.busy_n.max(self.hc_n).max(64)
    }
}

/// What a window keeps, registered on first use.
#[derive(Debug, Default)]
struct Kept {
    sums: BTreeMap<Series, Sums>,
    extremes: BTreeMap<Series, Extremes>,
    sorted: BTreeMap<Series, Sorted>,
    /// Positive time steps between consecutive samples of the window.
    steps: Option<Sorted>,
    features: Option<FeatureCounts>,
}

/// One sliding window: the samples of the ring from `start` to `end`
/// (exclusive) whose time is within `len_ms` of the newest of them, and
/// what it keeps about them. Samples join in order (`advance`); the ring
/// may hold newer ones that have not joined yet.
#[derive(Debug)]
pub(crate) struct Window {
    pub(crate) len_ms: f64,
    start: u64,
    end: u64,
    columns: FeatureColumns,
    kept: RefCell<Kept>,
}

impl Window {
    /// An empty window whose first sample will be `next` (a ring seq).
    pub fn new(len_ms: f64, columns: FeatureColumns, next: u64) -> Window {
        Window {
            len_ms,
            start: next,
            end: next,
            columns,
            kept: RefCell::new(Kept::default()),
        }
    }

    /// First sample (seq) of the window.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The window's samples (ring seqs).
    pub(crate) fn seqs(&self, ring: &Ring) -> std::ops::Range<u64> {
        self.range(ring)
    }

    /// Forget everything (a new header): the window starts empty.
    pub(crate) fn reset(&mut self, columns: FeatureColumns, next: u64) {
        *self = Window::new(self.len_ms, columns, next);
    }

    /// Sample `seq` (the one after the window's newest) joins: add it, drop
    /// what fell out, and rebuild sums that have drifted long enough.
    pub(crate) fn advance(&mut self, ring: &Ring, seq: u64) {
        debug_assert_eq!(seq, self.end);
        self.end = seq + 1;
        let now = ring.t(seq);
        let c = &self.columns;
        let kept = self.kept.get_mut();
        for (s, sums) in kept.sums.iter_mut() {
            sums.add(ring.value(seq, *s));
        }
        for (s, ex) in kept.extremes.iter_mut() {
            ex.add(seq, ring.value(seq, *s));
        }
        for (s, sorted) in kept.sorted.iter_mut() {
            sorted.add(ring.value(seq, *s));
        }
        let has_prev = seq > self.start;
        if let Some(steps) = kept.steps.as_mut() {
            if has_prev {
                let d = ring.t(seq) - ring.t(seq - 1);
                if d > 0.0 {
                    steps.add(d);
                }
            }
        }
        if let Some(f) = kept.features.as_mut() {
            f.count(ring, c, seq, true);
            if has_prev && gap_start(ring, c, seq) {
                f.gap_starts.push_back(seq);
            }
        }
        // Drop what left the window: older than `len_ms` before `now`.
        while self.start < seq && ring.t(self.start) < now - self.len_ms {
            let old = self.start;
            for (s, sums) in kept.sums.iter_mut() {
                sums.remove(ring.value(old, *s));
            }
            for (s, sorted) in kept.sorted.iter_mut() {
                sorted.remove(ring.value(old, *s));
            }
            if let Some(steps) = kept.steps.as_mut() {
                let d = ring.t(old + 1) - ring.t(old);
                if d > 0.0 {
                    steps.remove(d);
                }
            }
            if let Some(f) = kept.features.as_mut() {
                f.count(ring, c, old, false);
            }
            self.start += 1;
        }
        for ex in kept.extremes.values_mut() {
            ex.evict(self.start);
        }
        if let Some(f) = kept.features.as_mut() {
            // The window's first sample is a gap start when idle, whatever
            // came before it: `Window::gap_starts` adds it.
            while f.gap_starts.front().is_some_and(|&g| g <= self.start) {
                f.gap_starts.pop_front();
            }
        }
        // Rebuild what adding and subtracting floats may have drifted.
        let (start, end) = (self.start, self.end);
        for (s, sums) in kept.sums.iter_mut() {
            if sums.stale() {
                *sums = Sums::from_values((start..end).map(|q| ring.value(q, *s)));
            }
        }
        if kept.features.as_ref().is_some_and(|f| f.stale()) {
            kept.features = Some(build_features(ring, c, start, end));
        }
    }

    fn range(&self, ring: &Ring) -> std::ops::Range<u64> {
        self.start.max(ring.front())..self.end
    }

    pub fn len(&self, ring: &Ring) -> usize {
        let r = self.range(ring);
        (r.end - r.start) as usize
    }

    fn sums(&self, ring: &Ring, s: Series) -> Sums {
        let mut kept = self.kept.borrow_mut();
        kept.sums
            .entry(s)
            .or_insert_with(|| Sums::from_values(self.range(ring).map(|q| ring.value(q, s))))
            .clone()
    }

    fn extreme(&self, ring: &Ring, s: Series, max: bool) -> Option<f64> {
        let mut kept = self.kept.borrow_mut();
        let ex = kept.extremes.entry(s).or_insert_with(|| {
            let mut ex = Extremes::default();
            for q in self.range(ring) {
                ex.add(q, ring.value(q, s));
            }
            ex
        });
        let d = if max { &ex.max } else { &ex.min };
        d.front().map(|f| f.1)
    }

    fn percentile(&self, ring: &Ring, s: Series, p: f64) -> Option<f64> {
        let mut kept = self.kept.borrow_mut();
        let sorted = kept.sorted.entry(s).or_insert_with(|| {
            let mut v: Vec<f64> = self
                .range(ring)
                .map(|q| ring.value(q, s))
                .filter(|v| v.is_finite())
                .collect();
            v.sort_by(|a, b| a.total_cmp(b));
            Sorted(v)
        });
        (!sorted.0.is_empty()).then(|| percentile_sorted(&sorted.0, p))
    }

    /// The sampling interval in seconds: the median positive step between
    /// consecutive samples (`features::sample_interval_s`).
    fn interval_s(&self, ring: &Ring, header_interval_ms: u64) -> f64 {
        let mut kept = self.kept.borrow_mut();
        let steps = kept.steps.get_or_insert_with(|| {
            let r = self.range(ring);
            let mut v: Vec<f64> = (r.start + 1..r.end)
                .map(|q| ring.t(q) - ring.t(q - 1))
                .filter(|d| *d > 0.0)
                .collect();
            v.sort_by(|a, b| a.total_cmp(b));
            Sorted(v)
        });
        if steps.0.is_empty() {
            return header_interval_ms.max(1) as f64 / 1000.0;
        }
        steps.0[steps.0.len() / 2] / 1000.0
    }

    fn features(&self, ring: &Ring) -> FeatureCounts {
        let mut kept = self.kept.borrow_mut();
        let r = self.range(ring);
        kept.features
            .get_or_insert_with(|| build_features(ring, &self.columns, r.start, r.end))
            .clone()
    }

    /// Gap starts of the window, as seqs: its first sample when idle, then
    /// every sample that is idle after one that was not.
    fn gap_starts(&self, ring: &Ring, f: &FeatureCounts) -> Vec<u64> {
        let r = self.range(ring);
        let busy = self.columns.busy.map(|col| Series::GpuMean { col });
        let first_idle = r.start < r.end && busy.is_some_and(|b| is_idle(ring.value(r.start, b)));
        first_idle
            .then_some(r.start)
            .into_iter()
            .chain(f.gap_starts.iter().copied())
            .collect()
    }
}

fn gap_start(ring: &Ring, c: &FeatureColumns, seq: u64) -> bool {
    let Some(col) = c.busy else { return false };
    let b = Series::GpuMean { col };
    is_idle(ring.value(seq, b)) && !is_idle(ring.value(seq - 1, b))
}

fn build_features(ring: &Ring, c: &FeatureColumns, start: u64, end: u64) -> FeatureCounts {
    let mut f = FeatureCounts::default();
    for q in start..end {
        f.count(ring, c, q, true);
        if q > start && gap_start(ring, c, q) {
            f.gap_starts.push_back(q);
        }
    }
    f.added_since_rebuild = 0;
    f
}

/// Why a feature has no value over a sliding window, for the one scope
/// that has none (`watch::window_rules` refuses a rule on it).
pub(crate) fn refused_in_a_window(feature: Feature) -> Option<&'static str> {
    match feature.scope() {
        Scope::Samples | Scope::Records | Scope::Run => None,
        Scope::BenchmarkOutput => Some(
            "it is read from the benchmark's output with gate.toml's user metrics once the run has ended",
        ),
    }
}

/// A window read as a run: what the rules see (`MetricSource`).
pub(crate) struct WindowView<'a> {
    pub(crate) ring: &'a Ring,
    pub window: &'a Window,
    pub header: &'a Header,
    /// The window's events and process lists (`WindowEngine` picks them).
    pub events: Vec<&'a EventRecord>,
    pub processes: Vec<&'a ProcessesRecord>,
    /// The frameworks the run was found to use (`WindowEngine` keeps them:
    /// a property of the run, not of a window).
    pub frameworks: &'a BTreeSet<&'static str>,
}

impl WindowView<'_> {
    fn series(&self, metric: &str, gpu: Option<usize>) -> Option<Series> {
        let h = self.header;
        let gpu_col = h.gpu_columns.iter().position(|c| c == metric);
        match gpu {
            Some(slot) => (slot < h.fingerprint.gpus.len())
                .then_some(())
                .and(gpu_col.map(|col| Series::Gpu { slot, col })),
            None => gpu_col.map(|col| Series::GpuMean { col }).or_else(|| {
                h.host_columns
                    .iter()
                    .position(|c| c == metric)
                    .map(|col| Series::Host { col })
            }),
        }
    }

    /// Mean over the window of one GPU's column (NaN-skipping).
    fn gpu_mean(&self, slot: usize, col: usize) -> Option<f64> {
        self.window
            .sums(self.ring, Series::Gpu { slot, col })
            .mean()
    }

    /// A feature over the window: every `Feature` is either computed here
    /// or, for the one a window cannot have, absent and refused when a
    /// watch loads a rule that reads it (`refused_in_a_window`).
    fn feature_value(&self, name: &str) -> Option<f64> {
        let (ring, w, c) = (self.ring, self.window, &self.window.columns);
        let feature = Feature::from_name(name)?;
        let f = || w.features(ring);
        match feature {
            Feature::XidCount => Some(self.count_events(EventKind::Xid)),
            Feature::GpmInvalidCount => Some(self.count_events(EventKind::GpmInvalid)),
            Feature::OtherPids => self.other_pids(),
            Feature::OtherTimeShare => self.other_time_share(),
            Feature::BusySpread | Feature::StragglerGpu => self.spread(c.busy, feature),
            Feature::SmSpread => self.spread(c.sm, feature),
            Feature::TensorSpread => self.spread(c.tensor, feature),
            Feature::SmBusyRatio => {
                let f = f();
                if f.bs_n == 0 {
                    return None;
                }
                let n = f.bs_n as f64;
                let (mb, ms) = (f.bs_busy / n, f.bs_sm / n);
                (mb > 0.0).then(|| ms / mb)
            }
            Feature::SmStarvedFrac => {
                let f = f();
                (f.bs_n > 0).then(|| f.starved as f64 / f.bs_n as f64)
            }
            Feature::TargetCores => {
                let col = c.target_cpu?;
                w.sums(ring, Series::Host { col }).mean().map(|m| m / 100.0)
            }
            Feature::TargetBusyWhenGpuIdle => {
                let f = f();
                (f.bc_n > 0).then(|| f.busy_when_idle as f64 / f.bc_n as f64)
            }
            Feature::OthersCpuPct => {
                let f = f();
                (f.hc_n > 0).then(|| f.others / f.hc_n as f64)
            }
            Feature::IdleFrac
            | Feature::SaturatedFrac
            | Feature::BusyCv
            | Feature::IdleGapsPerMin
            | Feature::IdleGapMeanS
            | Feature::GapRegularity
            | Feature::Periodicity
            | Feature::PeriodS => self.busy_feature(feature, &f()),
            Feature::Framework(fw) => self.frameworks.contains(fw.name()).then_some(1.0),
            Feature::WorkRate => None,
        }
    }

    /// Share of the window's samples with another process on any GPU (the
    /// mean over GPUs above 0, as `features::compute` reads it). Scanned
    /// when a rule asks: no built-in rule reads it.
    fn other_time_share(&self) -> Option<f64> {
        let Some(Series::GpuMean { col }) = self.series("other_processes", None) else {
            return None;
        };
        let (with, seen) = self
            .window
            .seqs(self.ring)
            .map(|seq| self.ring.value(seq, Series::GpuMean { col }))
            .filter(|v| v.is_finite())
            .fold((0usize, 0usize), |(w, n), v| {
                (w + (v > 0.0) as usize, n + 1)
            });
        (seen > 0).then(|| with as f64 / seen as f64)
    }

    /// Other processes seen on the GPUs during the window.
    fn other_pids(&self) -> Option<f64> {
        if self.processes.is_empty() {
            return None;
        }
        let n = crate::analysis::features::distinct_foreign_pids(self.processes.iter().copied());
        Some(n as f64)
    }

    /// The spread of one column's per-GPU means, or (`StragglerGpu`) the
    /// index of the GPU with the lowest (`features::spread_features`).
    fn spread(&self, col: Option<usize>, feature: Feature) -> Option<f64> {
        let c = &self.window.columns;
        let col = col?;
        let means: Vec<(usize, f64)> = (0..c.gpu_indices.len())
            .filter_map(|g| self.gpu_mean(g, col).map(|m| (g, m)))
            .collect();
        if means.len() < 2 {
            return None;
        }
        let (lo_gpu, lo) = means
            .iter()
            .copied()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, 0.0));
        if feature == Feature::StragglerGpu {
            return Some(c.gpu_indices[lo_gpu] as f64);
        }
        let hi = means.iter().map(|m| m.1).fold(f64::NEG_INFINITY, f64::max);
        Some(hi - lo)
    }

    /// The `gpu_busy_pct.*` features (`features::busy_features`).
    fn busy_feature(&self, feature: Feature, f: &FeatureCounts) -> Option<f64> {
        let (ring, w) = (self.ring, self.window);
        let busy = Series::GpuMean {
            col: w.columns.busy?,
        };
        if f.busy_n == 0 {
            return None;
        }
        let n = f.busy_n as f64;
        let interval_s = || w.interval_s(ring, self.header.interval_ms);
        match feature {
            Feature::IdleFrac => Some(f.idle as f64 / n),
            Feature::SaturatedFrac => Some(f.saturated as f64 / n),
            Feature::BusyCv => {
                let s = w.sums(ring, busy);
                let (mean, stdev) = (s.mean()?, s.stdev()?);
                (mean > 0.0).then(|| stdev / mean)
            }
            Feature::IdleGapsPerMin => {
                let steady_s = w.len(ring) as f64 * interval_s();
                let gaps = w.gap_starts(ring, f).len();
                (steady_s > 0.0).then(|| gaps as f64 * 60.0 / steady_s)
            }
            Feature::IdleGapMeanS => {
                let gaps = w.gap_starts(ring, f).len();
                // Every idle sample lies in exactly one gap.
                (gaps > 0).then(|| f.idle as f64 / gaps as f64 * interval_s())
            }
            Feature::GapRegularity => {
                let starts = w.gap_starts(ring, f);
                if starts.len() < 4 {
                    return None;
                }
                let d: Vec<f64> = starts.windows(2).map(|p| (p[1] - p[0]) as f64).collect();
                let m = d.iter().sum::<f64>() / d.len() as f64;
                let sd =
                    (d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (d.len() - 1) as f64).sqrt();
                (m > 0.0).then(|| (1.0 - sd / m).clamp(0.0, 1.0))
            }
            Feature::Periodicity | Feature::PeriodS => {
                let series: Vec<f64> = w.range(ring).map(|q| ring.value(q, busy)).collect();
                let (strength, lag) = periodicity(&series)?;
                if feature == Feature::Periodicity {
                    Some(strength)
                } else {
                    lag.map(|l| l as f64 * interval_s())
                }
            }
            _ => None,
        }
    }

    fn count_events(&self, kind: EventKind) -> f64 {
        self.events.iter().filter(|e| e.kind == kind).count() as f64
    }
}

impl MetricSource for WindowView<'_> {
    fn stat(&self, metric: &str, stat: Stat, gpu: Option<usize>) -> Option<f64> {
        let s = self.series(metric, gpu)?;
        let (ring, w) = (self.ring, self.window);
        let sums = w.sums(ring, s);
        if sums.n == 0 {
            return None; // no statistic at all, as `MetricStats::from_series`
        }
        let stat = match stat {
            Stat::N => return Some(sums.n as f64),
            Stat::Stdev => return sums.stdev(),
            Stat::Of(s) => s,
        };
        match stat {
            Statistic::Mean => sums.mean(),
            Statistic::Min => w.extreme(ring, s, false),
            Statistic::Max => w.extreme(ring, s, true),
            Statistic::P5 => w.percentile(ring, s, 5.0),
            Statistic::P50 => w.percentile(ring, s, 50.0),
            Statistic::P95 => w.percentile(ring, s, 95.0),
            Statistic::P99 => w.percentile(ring, s, 99.0),
        }
    }

    fn feature(&self, name: &str) -> Option<f64> {
        self.feature_value(name)
    }

    fn gpu_count(&self) -> usize {
        self.header.fingerprint.gpus.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::MetricStats;

    /// Every kept statistic against `MetricStats` over the same window, at
    /// every step of a series that moves, repeats and has holes.
    #[test]
    fn kept_statistics_equal_the_batch_ones_at_every_step() {
        let mut ring = Ring::new(1, 1, 0);
        let mut w = Window::new(2_000.0, FeatureColumns::default(), ring.end());
        let s = Series::Gpu { slot: 0, col: 0 };
        let mut x = 7u64;
        let mut held: VecDeque<(f64, f64)> = VecDeque::new();
        for i in 0..3000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = match i % 11 {
                3 => f32::NAN,
                5 => 0.0,
                _ => ((x >> 40) % 1000) as f32 / 8.0 + if i > 1500 { 1e6 } else { 0.0 },
            };
            let t = i as f64 * 100.0;
            ring.push(t, &[v], &[]);
            w.advance(&ring, ring.end() - 1);
            held.push_back((t, v as f64));
            while held.front().is_some_and(|h| h.0 < t - 2_000.0) {
                held.pop_front();
            }
            let b = MetricStats::from_series(held.iter().map(|h| h.1)).unwrap();
            let sums = w.sums(&ring, s);
            assert_eq!(sums.n, b.n, "step {i}");
            // Multiples of 1/8: the sums are exact, the mean identical.
            assert_eq!(sums.mean().unwrap().to_bits(), b.mean.to_bits(), "step {i}");
            let sd = sums.stdev().unwrap();
            assert!(
                (sd - b.stdev).abs() <= 1e-9 * b.stdev.max(1.0),
                "{sd} {}",
                b.stdev
            );
            assert_eq!(w.extreme(&ring, s, false), Some(b.min), "step {i}");
            assert_eq!(w.extreme(&ring, s, true), Some(b.max), "step {i}");
            assert_eq!(w.percentile(&ring, s, 95.0), Some(b.p95), "step {i}");
            assert_eq!(w.percentile(&ring, s, 5.0), Some(b.p5), "step {i}");
            assert_eq!(w.len(&ring), held.len());
        }
    }
}
