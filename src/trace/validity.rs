//! Which samples count: the validity rules shared by the recorder
//! (`sampler/nvml.rs`) and the trace loader (`Trace::read` applies them),
//! so a trace
//! recorded elsewhere, or by an older gate, is judged by the same
//! rules as one recorded here (issue 8: "trace loading applies the same validity rules
//! as recording").
//!
//! Two rules:
//! - **GPM glitches are missing data, never zeros.** On the H200 about one
//!   GPM pair in 200 taken 100 ms apart came back with every metric 0 (and
//!   DRAM NaN) while NVML said the GPU was 100 % busy (docs/counters.md).
//!   The recorder drops such readings; the loader drops them again from any
//!   trace, and notes each one as a `gpm_invalid` event.
//! - **Teardown is not steady state.** After a benchmark's timed work the
//!   process often lives on with the GPU idle: a harness computes its
//!   statistics and writes its report (pytest-benchmark, asv, Google
//!   Benchmark), a framework ends its `fit()`, a script saves a checkpoint,
//!   data-loader workers are joined and CUDA contexts destroyed. Those
//!   samples belong to the run but not to what the benchmark timed: on a
//!   pytest-benchmark run recorded on the H200 (fixtures/holdout-timm) the
//!   idle tail was 7 s of a 12 s window, half of it in a fast run and a tenth
//!   in a slow one, so every counter mean moved with the tail's share. The
//!   trailing samples after the target's GPU work ended are cut from every
//!   statistic, however long, when the target exited by itself (a run gate
//!   stopped at `--duration` was still working), and reported as
//!   `teardown_s`. A benchmark that prints an end marker closes the window
//!   exactly instead (`--until REGEX`).

/// The teardown tail starts with a sample below this fraction of the
/// window's working level (its 90th percentile of GPU busy, the mean over
/// the run's GPUs: the median is itself idle when the tail is half the
/// window)...
const IDLE_START_OF_LEVEL: f64 = 0.5;
/// ...and its mean busy stays below this fraction of the working level.
const IDLE_MEAN_OF_LEVEL: f64 = 0.25;
/// A run whose working level is below this has no teardown to cut: it
/// never kept the GPU busy, and its low samples are its behaviour.
const WORKING_MIN_BUSY_PCT: f64 = 10.0;
/// At least this many samples of work stay in the window, and this many
/// working samples in a row end the tail.
const MIN_WORKING_SAMPLES: usize = 5;

/// GPU busy at or above which an all-zero GPM reading cannot be real.
const GLITCH_BUSY_PCT: f64 = 50.0;

/// The GPM-glitch rule, the one place it is written: the glitch seen on
/// the H200 is every GPM metric 0 and DRAM NaN while NVML says the GPU is
/// busy. All-zero readings are also rejected when the GPU is clearly busy
/// (idle PCIe alone reads ~1 MiB/s, never exactly 0). A reading is one GPU's
/// GPM metrics at one tick: `any_read` (some metric has a finite value),
/// `any_nonzero` (some finite value is not 0), `any_nan` (some metric came
/// back NaN); `busy_pct` is NVML's GPU busy beside it (None = missing).
fn gpm_glitch(any_read: bool, any_nonzero: bool, any_nan: bool, busy_pct: Option<f64>) -> bool {
    if !any_read {
        return false; // no reading at all: nothing to judge
    }
    let busy = busy_pct.unwrap_or(0.0);
    !any_nonzero && ((any_nan && busy > 0.0) || busy >= GLITCH_BUSY_PCT)
}

/// `gpm_glitch` as the recorder reads it: `values` are one GPM reading's
/// metrics (None = NaN or unsupported), `any_nan` whether one was NaN.
pub(crate) fn is_gpm_glitch(values: &[Option<f64>], any_nan: bool, busy_pct: Option<f64>) -> bool {
    let any_read = values.iter().any(Option::is_some);
    let any_nonzero = values.iter().flatten().any(|v| *v != 0.0);
    gpm_glitch(any_read, any_nonzero, any_nan, busy_pct)
}

/// `gpm_glitch` as a trace holds a reading: a trace stores NaN as null,
/// indistinguishable from "not read this tick", so only the busy >= 50 %
/// form of the rule applies. `any_read`, `any_nonzero` as `gpm_glitch`;
/// `busy_pct` the sample's GPU busy (NaN = missing). The loader judges a
/// whole column at a time with it, the replay one row.
pub(crate) fn is_trace_gpm_glitch(any_read: bool, any_nonzero: bool, busy_pct: f32) -> bool {
    let busy = Some(busy_pct as f64).filter(|v| v.is_finite());
    gpm_glitch(any_read, any_nonzero, false, busy)
}

/// `is_trace_gpm_glitch` of one sample row: `row` is one GPU's columns in
/// one sample, `gpm` the indices of its GPM columns, `busy_col` the index
/// of GPU busy.
pub(crate) fn row_is_gpm_glitch(row: &[f32], gpm: &[usize], busy_col: usize) -> bool {
    let read = || gpm.iter().map(|&c| row[c]).filter(|v| v.is_finite());
    is_trace_gpm_glitch(
        read().next().is_some(),
        read().any(|v| v != 0.0),
        row[busy_col],
    )
}

/// The `gpm_invalid` event of a glitched reading in a trace (GPU `gpu` at
/// `t_ms`), as the loader and the replay note it.
pub(crate) fn gpm_invalid_event(t_ms: f64, gpu: usize) -> super::EventRecord {
    super::EventRecord {
        t: t_ms,
        kind: super::EventKind::GpmInvalid,
        gpu: Some(gpu as u32),
        pid: None,
        code: None,
        message: "GPM reading all zero while the GPU was busy; treated as missing when the trace was loaded".into(),
    }
}

/// How many trailing samples of the steady window are process teardown
/// (see the module doc). `times_ms` and `busy_pct` (GPU busy, mean over the
/// run's GPUs) are the steady window's samples in order. The teardown is the
/// longest tail that starts idle (below half the window's working level)
/// and stays idle on average (below a quarter): with several GPUs one rank
/// may flash busy while the others exit.
#[cfg(test)]
pub(crate) fn teardown_len(times_ms: &[f64], busy_pct: &[f64]) -> usize {
    if times_ms.len() != busy_pct.len() {
        return 0;
    }
    match crate::stats::percentile_by(busy_pct.len(), |k| busy_pct[k], WORKING_LEVEL_PCT) {
        Some(level) => teardown_tail(busy_pct.len(), level, |k| busy_pct[k]),
        None => 0,
    }
}

/// The idle teardown tail of a steady window of `len` samples whose GPUs'
/// mean busy at sample `k` is `mean_busy(k)` (NaN: none): its working
/// level, then `teardown_tail`, as `Trace` cuts it at load (the same
/// percentile and scan, read from a function instead of the columns).
/// Public for `examples/check-floor.rs`, whose statistics must be gate's.
pub fn idle_tail_len(len: usize, mean_busy: impl Fn(usize) -> f64) -> usize {
    let visit = |f: &mut dyn FnMut(f64)| (0..len).for_each(|k| f(mean_busy(k)));
    match crate::stats::percentile_of_visits(visit, WORKING_LEVEL_PCT) {
        Some(level) => teardown_tail(len, level, mean_busy),
        None => 0,
    }
}

/// The percentile of the window's GPU busy that is its working level.
pub(crate) const WORKING_LEVEL_PCT: f64 = 90.0;

/// `teardown_len` of the steady window's `len` samples given its working
/// `level` (`WORKING_LEVEL_PCT` of their busy) and sample `k`'s GPU busy
/// as `busy_pct(k)`: a backward scan that keeps nothing per sample, so a
/// trace of any length costs the same memory here.
pub(crate) fn teardown_tail(len: usize, level: f64, busy_pct: impl Fn(usize) -> f64) -> usize {
    if len == 0 || level < WORKING_MIN_BUSY_PCT {
        return 0; // a nearly idle run has no teardown to cut
    }
    let last = len - 1;
    let (mut sum, mut n, mut start, mut working) = (0.0, 0usize, None, 0usize);
    for k in (1..=last).rev() {
        let b = busy_pct(k);
        let b = if b.is_finite() { b } else { 0.0 };
        sum += b;
        n += 1;
        if b < IDLE_START_OF_LEVEL * level {
            working = 0;
            if sum / (n as f64) < IDLE_MEAN_OF_LEVEL * level {
                start = Some(k);
            }
        } else {
            // A flash of one rank is part of the tail; a stretch of work
            // is where the tail ends.
            working += 1;
            if working >= MIN_WORKING_SAMPLES {
                break;
            }
        }
    }
    match start {
        Some(k) if k >= MIN_WORKING_SAMPLES => last + 1 - k,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glitch_all_zero_while_busy_is_missing_data() {
        let zeros = vec![Some(0.0); 15];
        assert!(is_gpm_glitch(&zeros, true, Some(100.0)));
        assert!(is_gpm_glitch(&zeros, false, Some(100.0)));
        // An idle GPU really reads zero: that is data.
        assert!(!is_gpm_glitch(&zeros, false, Some(0.0)));
        // Pinned H2D: busy 100, SM 0, but PCIe RX high: real.
        let mut h2d = zeros.clone();
        h2d[13] = Some(56345.0);
        assert!(!is_gpm_glitch(&h2d, false, Some(100.0)));
        // No GPM reading in this sample at all (between GPM periods).
        assert!(!is_gpm_glitch(&[None, None], false, Some(100.0)));
    }
}

#[cfg(test)]
mod teardown_tests {
    use super::*;

    #[test]
    fn an_idle_tail_of_any_length_is_teardown() {
        let times: Vec<f64> = (0..200).map(|i| i as f64 * 100.0).collect();
        // 190 busy samples, then 10 idle (1 s): teardown.
        let mut busy: Vec<f64> = (0..200).map(|i| if i < 190 { 99.0 } else { 0.0 }).collect();
        assert_eq!(teardown_len(&times, &busy), 10);
        // The last teardown sample may still show a little activity.
        busy[199] = 5.0;
        assert_eq!(teardown_len(&times, &busy), 10);
        // 100 idle samples (10 s, half the run: a harness's statistics,
        // report and checkpoint after a short timed section): teardown too.
        let half: Vec<f64> = (0..200).map(|i| if i < 100 { 99.0 } else { 0.0 }).collect();
        assert_eq!(teardown_len(&times, &half), 100);
        // Busy 3 s of 20 (a short timed section), idle after: the work
        // is kept, the 15 s after it cut.
        let burst: Vec<f64> = (0..200)
            .map(|i| if (20..50).contains(&i) { 99.0 } else { 0.0 })
            .collect();
        assert_eq!(teardown_len(&times, &burst), 150);
        // Busy in 3 % of the samples only: never working, nothing to cut.
        let flash: Vec<f64> = (0..200)
            .map(|i| if (20..26).contains(&i) { 99.0 } else { 0.0 })
            .collect();
        assert_eq!(teardown_len(&times, &flash), 0);
        // A run busy a third of the time all along (sync stalls) keeps its
        // low samples: only the trailing ones after its last work go.
        let sync: Vec<f64> = (0..200)
            .map(|i| if i % 3 == 0 { 60.0 } else { 0.0 })
            .collect();
        assert!(teardown_len(&times, &sync) <= 2);
        // A run that never worked has no teardown to cut.
        assert_eq!(teardown_len(&times, &vec![0.0; 200]), 0);
        assert_eq!(teardown_len(&times, &vec![99.0; 200]), 0);
        // Two GPUs: one rank flashes busy while the other exits (recorded
        // on the H200 pair, ddp-healthy-2: 100 78 36 9 0... 25 50 25 0 0).
        let mut ddp = vec![99.0; 200];
        let tail = [
            78.0, 36.0, 9.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 25.0, 50.0, 25.0, 0.0, 0.0,
        ];
        ddp[185..].copy_from_slice(&tail);
        assert_eq!(teardown_len(&times, &ddp), 14, "cut from the 36");
    }
}
