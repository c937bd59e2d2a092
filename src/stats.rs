//! Statistics of a run: percentiles and summaries of each metric over the
//! steady window (warm-up samples excluded, missing values skipped).
//!
//! Methods, and why:
//! - Percentiles: linear interpolation between closest ranks (Hyndman & Fan
//!   1996, definition 7; numpy's and R's default), so numbers match what a
//!   user gets from a notebook.
//! - Uncertainty of a run's mean: samples 100 ms apart are strongly
//!   autocorrelated, so `stdev / sqrt(n)` would be far too optimistic. We use
//!   non-overlapping batch means (Law & Kelton, "Simulation Modeling and
//!   Analysis", ch. 9.5): split the series into ~sqrt(n) contiguous batches
//!   (at least 10 samples each), treat batch means as roughly independent and
//!   take a Student-t 95 % half-width over them.
//! - Degenerate cases are explicit: no valid sample gives no statistic (not
//!   0); n = 1 gives stdev 0 and no confidence interval; constant series give
//!   a zero-width interval.

use crate::trace::Trace;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Summary statistics of one metric over one run's steady window.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MetricStats {
    pub n: usize,
    pub mean: f64,
    pub stdev: f64,
    pub min: f64,
    pub p5: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    /// 95 % half-width of the mean by batch means; None when n is too small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_ci95: Option<f64>,
}

impl MetricStats {
    /// Statistics of the finite values of `values` (NaN = missing, skipped).
    /// None when no value is finite.
    pub fn from_series(values: impl IntoIterator<Item = f64>) -> Option<MetricStats> {
        let series: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        if series.is_empty() {
            return None;
        }
        let n = series.len();
        let mean = series.iter().sum::<f64>() / n as f64;
        let stdev = if n > 1 {
            (series.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let mean_ci95 = batch_means_ci95(&series);
        let mut sorted = series;
        sorted.sort_by(|a, b| a.total_cmp(b));
        Some(MetricStats {
            n,
            mean,
            stdev,
            min: sorted[0],
            p5: percentile_sorted(&sorted, 5.0),
            p50: percentile_sorted(&sorted, 50.0),
            p95: percentile_sorted(&sorted, 95.0),
            p99: percentile_sorted(&sorted, 99.0),
            max: sorted[n - 1],
            mean_ci95,
        })
    }

    /// A run-level value measured once per run (wall time, a user metric).
    pub fn single(v: f64) -> MetricStats {
        MetricStats {
            n: 1,
            mean: v,
            stdev: 0.0,
            min: v,
            p5: v,
            p50: v,
            p95: v,
            p99: v,
            max: v,
            mean_ci95: None,
        }
    }

    pub fn get(&self, stat: crate::metrics::Statistic) -> f64 {
        use crate::metrics::Statistic::*;
        match stat {
            Mean => self.mean,
            P5 => self.p5,
            P50 => self.p50,
            P95 => self.p95,
            P99 => self.p99,
            Max => self.max,
            Min => self.min,
        }
    }

    /// Look a statistic up by name, including `stdev` and `n`.
    pub fn get_named(&self, name: &str) -> Option<f64> {
        match name {
            "stdev" => Some(self.stdev),
            "n" => Some(self.n as f64),
            other => crate::metrics::Statistic::parse(other).map(|s| self.get(s)),
        }
    }
}

/// Percentile `p` (0..=100) of an ascending, non-empty slice, definition 7.
///
/// ```
/// use gpugate::stats::percentile_sorted;
/// let v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
/// assert_eq!(percentile_sorted(&v, 50.0), 5.5); // numpy.percentile(v, 50)
/// assert!((percentile_sorted(&v, 95.0) - 9.55).abs() < 1e-12);
/// ```
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    debug_assert!(!sorted.is_empty());
    if sorted.len() == 1 {
        return sorted[0];
    }
    let h = (sorted.len() - 1) as f64 * (p / 100.0).clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Minimum samples per batch: at 100 ms that is one second, longer than the
/// ~200 ms averaging windows NVML applies to its utilization counters.
const MIN_BATCH_LEN: usize = 10;
/// Fewer batches than this give no interval (t-quantiles explode).
const MIN_BATCHES: usize = 4;

/// 95 % half-width of the mean of an autocorrelated series (batch means).
pub fn batch_means_ci95(series: &[f64]) -> Option<f64> {
    let n = series.len();
    let batches = ((n as f64).sqrt().floor() as usize).min(n / MIN_BATCH_LEN);
    if batches < MIN_BATCHES {
        return None;
    }
    let len = n / batches;
    let means: Vec<f64> = (0..batches)
        .map(|b| series[b * len..(b + 1) * len].iter().sum::<f64>() / len as f64)
        .collect();
    let grand = means.iter().sum::<f64>() / batches as f64;
    let var = means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (batches - 1) as f64;
    Some(student_t_975(batches - 1) * (var / batches as f64).sqrt())
}

/// Two-sided 95 % quantile of Student's t with `df` degrees of freedom.
pub fn student_t_975(df: usize) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    match StudentsT::new(0.0, 1.0, df.max(1) as f64) {
        Ok(t) => t.inverse_cdf(0.975),
        Err(_) => 1.96,
    }
}

/// Statistics of one GPU over a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GpuSummary {
    pub index: u32,
    pub uuid: String,
    pub name: String,
    pub metrics: BTreeMap<String, MetricStats>,
}

/// Everything later stages need from one run. Pure data: built from a
/// trace, then judged, diagnosed and reported without touching hardware.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunSummary {
    /// Where the run came from (trace path or "live").
    pub source: String,
    /// Steady window in ms since the recording started.
    pub steady_start_ms: f64,
    pub steady_end_ms: f64,
    pub total_samples: usize,
    pub steady_samples: usize,
    pub gpus: Vec<GpuSummary>,
    /// Per-sample mean over GPUs, then summarised.
    pub gpu_aggregate: BTreeMap<String, MetricStats>,
    pub host: BTreeMap<String, MetricStats>,
    pub wall_time_s: Option<f64>,
    pub exit_code: Option<i32>,
    pub truncated: bool,
    /// Benchmark-reported numbers (parsed from its output per gate.toml).
    #[serde(default)]
    pub user_metrics: BTreeMap<String, f64>,
    /// Derived time-window features (idle fraction, periodicity, imbalance...)
    /// computed by `diagnose::features`; keyed "metric.feature".
    #[serde(default)]
    pub features: BTreeMap<String, f64>,
}

/// Anything rules and verdicts can read numbers from: a run summary or a
/// stored baseline. `gpu: None` means the aggregate over GPUs.
pub trait MetricSource {
    /// Statistic `stat` ("mean", "p50", "p95", "stdev", ...) of `metric`.
    fn stat(&self, metric: &str, stat: &str, gpu: Option<usize>) -> Option<f64>;
    /// A derived feature ("gpu_busy_pct.idle_frac", ...).
    fn feature(&self, name: &str) -> Option<f64>;
    fn gpu_count(&self) -> usize;
}

impl MetricSource for RunSummary {
    fn stat(&self, metric: &str, stat: &str, gpu: Option<usize>) -> Option<f64> {
        match gpu {
            Some(g) => self.gpus.get(g)?.metrics.get(metric)?.get_named(stat),
            None => self.metric(metric)?.get_named(stat),
        }
    }

    fn feature(&self, name: &str) -> Option<f64> {
        self.features.get(name).copied()
    }

    fn gpu_count(&self) -> usize {
        self.gpus.len()
    }
}

impl RunSummary {
    /// Look a metric up: GPU aggregate first, then host, then run-level.
    pub fn metric(&self, id: &str) -> Option<MetricStats> {
        if let Some(s) = self.gpu_aggregate.get(id).or_else(|| self.host.get(id)) {
            return Some(s.clone());
        }
        if id == "wall_time_s" {
            return self.wall_time_s.map(MetricStats::single);
        }
        self.user_metrics.get(id).map(|v| MetricStats::single(*v))
    }
}

/// Summarise a trace's steady window (non-warm-up samples).
pub fn summarize(trace: &Trace) -> RunSummary {
    let steady: Vec<usize> = (0..trace.sample_count())
        .filter(|&i| !trace.warmup[i])
        .collect();
    let mut gpus = Vec::with_capacity(trace.gpu_count());
    let mut gpu_aggregate = BTreeMap::new();
    for (slot, info) in trace.header.fingerprint.gpus.iter().enumerate() {
        let mut metrics = BTreeMap::new();
        for (col, id) in trace.header.gpu_columns.iter().enumerate() {
            let series = steady.iter().map(|&i| trace.gpu_value(i, slot, col) as f64);
            if let Some(s) = MetricStats::from_series(series) {
                metrics.insert(id.clone(), s);
            }
        }
        gpus.push(GpuSummary {
            index: info.index,
            uuid: info.uuid.clone(),
            name: info.name.clone(),
            metrics,
        });
    }
    for (col, id) in trace.header.gpu_columns.iter().enumerate() {
        let series = steady.iter().map(|&i| trace.gpu_mean_at(i, col));
        if let Some(s) = MetricStats::from_series(series) {
            gpu_aggregate.insert(id.clone(), s);
        }
    }
    let mut host = BTreeMap::new();
    for (col, id) in trace.header.host_columns.iter().enumerate() {
        let series = steady.iter().map(|&i| trace.host_value(i, col) as f64);
        if let Some(s) = MetricStats::from_series(series) {
            host.insert(id.clone(), s);
        }
    }
    RunSummary {
        source: trace.path.display().to_string(),
        steady_start_ms: steady.first().map(|&i| trace.times_ms[i]).unwrap_or(0.0),
        steady_end_ms: steady.last().map(|&i| trace.times_ms[i]).unwrap_or(0.0),
        total_samples: trace.sample_count(),
        steady_samples: steady.len(),
        gpus,
        gpu_aggregate,
        host,
        wall_time_s: trace.end.as_ref().and_then(|e| e.target_wall_s),
        exit_code: trace.exit_code(),
        truncated: trace.truncated,
        user_metrics: BTreeMap::new(),
        features: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_match_numpy_linear() {
        let v: Vec<f64> = (1..=10).map(|x| x as f64).collect();
        // numpy.percentile(range(1, 11), [5, 50, 95]) -> 1.45, 5.5, 9.55
        assert!((percentile_sorted(&v, 5.0) - 1.45).abs() < 1e-9);
        assert!((percentile_sorted(&v, 50.0) - 5.5).abs() < 1e-9);
        assert!((percentile_sorted(&v, 95.0) - 9.55).abs() < 1e-9);
    }

    #[test]
    fn missing_values_are_skipped_not_zero() {
        let s = MetricStats::from_series([f64::NAN, 10.0, 20.0, f64::NAN]).unwrap();
        assert_eq!(s.n, 2);
        assert_eq!(s.mean, 15.0);
        assert_eq!(s.min, 10.0);
        assert!(MetricStats::from_series([f64::NAN]).is_none());
    }

    #[test]
    fn single_value_has_zero_spread_and_no_interval() {
        let s = MetricStats::from_series([7.0]).unwrap();
        assert_eq!(s.stdev, 0.0);
        assert_eq!(s.p95, 7.0);
        assert!(s.mean_ci95.is_none());
    }

    #[test]
    fn batch_means_widen_the_interval_for_autocorrelated_series() {
        // A slow square wave: naive stdev/sqrt(n) says the mean is known to
        // +-0.9; batch means must admit far more uncertainty.
        let series: Vec<f64> = (0..400)
            .map(|i| if (i / 50) % 2 == 0 { 0.0 } else { 100.0 })
            .collect();
        let s = MetricStats::from_series(series.iter().copied()).unwrap();
        let naive = 1.96 * s.stdev / (s.n as f64).sqrt();
        let ci = s.mean_ci95.unwrap();
        assert!(ci > 2.0 * naive, "batch means {ci} vs naive {naive}");
        // Constant series: zero-width interval, not NaN.
        let flat = MetricStats::from_series(vec![5.0; 400]).unwrap();
        assert_eq!(flat.mean_ci95, Some(0.0));
    }
}
