//! Which samples count: the validity rules shared by the recorder
//! (`sampler/nvml.rs`) and the trace loader (`Trace::read`), so a trace
//! recorded elsewhere, or by an older gate, is judged by the same rules as
//! one recorded here (issue 8: "trace loading applies the same validity rules
//! as recording").
//!
//! Two rules:
//! - **GPM glitches are missing data, never zeros.** On the H200 about one
//!   GPM pair in 200 taken 100 ms apart came back with every metric 0 (and
//!   DRAM NaN) while NVML said the GPU was 100 % busy (DOMAIN.md section 7).
//!   The recorder drops such readings; the loader drops them again from any
//!   trace, and notes each one as a `gpm_invalid` event.
//! - **Teardown is not steady state.** After a benchmark's last step the
//!   process still frees memory, joins its data-loader workers and destroys
//!   its CUDA contexts for about a second with the GPU idle. Those samples
//!   belong to the run but not to its steady window: on the round-2 H200
//!   fixtures they pulled the GPU-busy mean down by about 4 points and
//!   widened its interval from ±0.05 to ±9 points. The trailing samples after
//!   the last "working" one are excluded, when that tail is short (a longer
//!   idle ending is behaviour worth seeing, so it stays in).

use crate::trace::{EventKind, EventRecord, Trace};

/// A sample is "working" when its GPU busy (mean over the run's GPUs) is at
/// least this fraction of the steady window's median busy...
const WORKING_FRACTION_OF_MEDIAN: f64 = 0.5;
/// ...and at least this many percent (a nearly idle run has no teardown to cut).
const WORKING_MIN_BUSY_PCT: f64 = 10.0;
/// The idle tail is cut only when it is at most this long...
const MAX_TEARDOWN_MS: f64 = 3000.0;
/// ...or at most this fraction of the steady window, whichever is longer.
const MAX_TEARDOWN_FRACTION: f64 = 0.10;

/// GPU busy at or above which an all-zero GPM reading cannot be real.
const GLITCH_BUSY_PCT: f64 = 50.0;

/// The glitch seen on the H200: every GPM metric 0 and DRAM NaN while NVML
/// says the GPU is busy. All-zero readings are also rejected when the GPU is
/// clearly busy (idle PCIe alone reads ~1 MiB/s, never exactly 0).
/// `values` are one GPM reading's metrics (None = NaN or unsupported).
pub fn is_gpm_glitch(values: &[Option<f64>], any_nan: bool, busy_pct: Option<f64>) -> bool {
    let mut finite = values.iter().flatten().peekable();
    if finite.peek().is_none() {
        return false; // no reading at all: nothing to judge
    }
    let all_zero = finite.all(|v| *v == 0.0);
    let busy = busy_pct.unwrap_or(0.0);
    all_zero && ((any_nan && busy > 0.0) || busy >= GLITCH_BUSY_PCT)
}

/// Apply both rules to a freshly loaded trace.
pub fn apply(trace: &mut Trace) {
    reject_gpm_glitches(trace);
    trace.teardown = teardown_samples(trace);
}

/// Turn all-zero GPM readings taken while the GPU was busy into missing
/// values (NaN), with a `gpm_invalid` event each. Returns how many.
pub fn reject_gpm_glitches(trace: &mut Trace) -> usize {
    let cols = &trace.header.gpu_columns;
    let gpm: Vec<usize> = (0..cols.len())
        .filter(|&c| crate::metrics::is_gpm(&cols[c]))
        .collect();
    let Some(busy_col) = trace.gpu_column("gpu_busy_pct") else {
        return 0;
    };
    if gpm.is_empty() {
        return 0;
    }
    let (ngpu, ncols) = (trace.gpu_count(), cols.len());
    let mut events = Vec::new();
    for i in 0..trace.sample_count() {
        for g in 0..ngpu {
            let at = (i * ngpu + g) * ncols;
            let row = &trace.gpu_values[at..at + ncols];
            let values: Vec<Option<f64>> = gpm
                .iter()
                .map(|&c| Some(row[c] as f64).filter(|v| v.is_finite()))
                .collect();
            let busy = Some(row[busy_col] as f64).filter(|v| v.is_finite());
            // A trace stores NaN as null, indistinguishable from "not read
            // this tick", so only the busy >= 50 % form of the rule applies.
            if is_gpm_glitch(&values, false, busy) {
                for &c in &gpm {
                    trace.gpu_values[at + c] = f32::NAN;
                }
                events.push(EventRecord {
                    t: trace.times_ms[i],
                    kind: EventKind::GpmInvalid,
                    gpu: Some(g as u32),
                    pid: None,
                    code: None,
                    message: "GPM reading all zero while the GPU was busy; treated as missing when the trace was loaded".into(),
                });
            }
        }
    }
    let n = events.len();
    trace.events.extend(events);
    n
}

/// How many trailing steady samples are process teardown (see module doc).
pub fn teardown_samples(trace: &Trace) -> usize {
    let Some(busy_col) = trace.gpu_column("gpu_busy_pct") else {
        return 0;
    };
    if trace.end.is_none() || trace.gpu_count() == 0 {
        return 0;
    }
    let steady: Vec<usize> = (0..trace.sample_count())
        .filter(|&i| !trace.warmup[i])
        .collect();
    let busy: Vec<f64> = steady
        .iter()
        .map(|&i| trace.gpu_mean_at(i, busy_col))
        .collect();
    let mut known: Vec<f64> = busy.iter().copied().filter(|v| v.is_finite()).collect();
    if known.is_empty() {
        return 0;
    }
    known.sort_by(|a, b| a.total_cmp(b));
    let median = crate::stats::percentile_sorted(&known, 50.0);
    let working = (WORKING_FRACTION_OF_MEDIAN * median).max(WORKING_MIN_BUSY_PCT);
    let Some(last_working) = busy.iter().rposition(|b| *b >= working) else {
        return 0;
    };
    let tail = steady.len() - 1 - last_working;
    if tail == 0 {
        return 0;
    }
    let t = |k: usize| trace.times_ms[steady[k]];
    let steady_ms = t(steady.len() - 1) - t(0);
    let tail_ms = t(steady.len() - 1) - t(last_working);
    if tail_ms <= MAX_TEARDOWN_MS.max(MAX_TEARDOWN_FRACTION * steady_ms) {
        tail
    } else {
        0
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
