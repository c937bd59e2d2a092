//! Statistics of a series: percentiles, mean and spread, the uncertainty
//! of the mean, and the read interface (`MetricSource`) rules and verdicts
//! use. Pure numbers: which samples form a run's steady window, and the
//! run summary built from it, are `summary.rs`.
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

use crate::metrics::Statistic;
use serde::{Deserialize, Serialize};
use std::fmt;

mod visits;
pub(crate) use visits::{Block, VISIT_BYTES};

/// A statistic rules and verdicts read by name (`MetricSource::stat`): a
/// judged statistic of the steady window, its spread, or its sample count.
/// Parsed once where the name is read (the rules DSL; a baseline's or
/// gate.toml's `Statistic`), never at each lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stat {
    /// `mean`, `p5`, `p50` (`median`), `p95`, `p99`, `min`, `max`.
    Of(Statistic),
    /// `stdev`: sample standard deviation over the window.
    Stdev,
    /// `n`: how many samples the window holds.
    N,
}

impl Stat {
    /// The statistic called `name` (`median` is `p50`), if any.
    pub fn parse(name: &str) -> Option<Stat> {
        match name {
            "stdev" => Some(Stat::Stdev),
            "n" => Some(Stat::N),
            other => Statistic::parse(other).map(Stat::Of),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Stat::Of(s) => s.as_str(),
            Stat::Stdev => "stdev",
            Stat::N => "n",
        }
    }
}

impl From<Statistic> for Stat {
    fn from(s: Statistic) -> Self {
        Stat::Of(s)
    }
}

impl fmt::Display for Stat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    pub(crate) mean_ci95: Option<f64>,
}

impl MetricStats {
    /// Statistics of the finite values of `values` (NaN = missing, skipped).
    /// None when no value is finite.
    pub(crate) fn from_series(values: impl IntoIterator<Item = f64>) -> Option<MetricStats> {
        Self::from_finite(values.into_iter().filter(|v| v.is_finite()).collect())
    }

    /// `from_series` of values already known finite (a column's steady
    /// values, gathered in one pass); `series` is reordered and dropped.
    pub fn from_finite(series: Vec<f64>) -> Option<MetricStats> {
        debug_assert!(series.iter().all(|v| v.is_finite()));
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
        let mean_ci95 = mean_ci95(&series);
        // Order statistics by selection, not a full sort: the same values
        // (each is the k-th smallest by `total_cmp`, as in the sorted
        // slice) in linear time, which matters at millions of samples.
        let mut values = series;
        let pct = [5.0, 50.0, 95.0, 99.0];
        let mut ranks = vec![0, n - 1];
        for p in pct {
            let (lo, hi) = percentile_ranks(n, p);
            ranks.extend([lo, hi]);
        }
        let at = order_statistics(&mut values, ranks);
        let percentile = |p: f64| -> f64 {
            let (lo, hi) = percentile_ranks(n, p);
            interpolate(n, p, at[&lo], at[&hi])
        };
        Some(MetricStats {
            n,
            mean,
            stdev,
            min: at[&0],
            p5: percentile(5.0),
            p50: percentile(50.0),
            p95: percentile(95.0),
            p99: percentile(99.0),
            max: at[&(n - 1)],
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

    pub fn get(&self, stat: Statistic) -> f64 {
        use Statistic::*;
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

    /// Any statistic, including `stdev` and `n`.
    pub(crate) fn get_stat(&self, stat: Stat) -> f64 {
        match stat {
            Stat::Stdev => self.stdev,
            Stat::N => self.n as f64,
            Stat::Of(s) => self.get(s),
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
    let (lo, hi) = percentile_ranks(sorted.len(), p);
    interpolate(sorted.len(), p, sorted[lo], sorted[hi])
}

/// The two ranks (0-based, ascending order) definition 7 interpolates
/// between for percentile `p` of `n` values.
fn percentile_ranks(n: usize, p: f64) -> (usize, usize) {
    if n <= 1 {
        return (0, 0);
    }
    let h = (n - 1) as f64 * (p / 100.0).clamp(0.0, 1.0);
    (h.floor() as usize, h.ceil() as usize)
}

/// Definition 7 between the values at `percentile_ranks(n, p)`.
fn interpolate(n: usize, p: f64, lo_value: f64, hi_value: f64) -> f64 {
    if n <= 1 {
        return lo_value;
    }
    let h = (n - 1) as f64 * (p / 100.0).clamp(0.0, 1.0);
    let lo = h.floor();
    lo_value + (h - lo) * (hi_value - lo_value)
}

/// Percentile `p` (definition 7, as `percentile_sorted`) of the finite
/// values among `value(0..n)`, without a copy of them: each of the two
/// order statistics is found by a radix selection on the values' ordered
/// bit patterns, 16 bits a pass over `value` (Knuth, TAOCP vol. 3, 5.2.5,
/// radix sorting; the selection keeps only the bucket that holds the rank).
/// Memory is one 64 Ki-counter table whatever `n` is, and the result is
/// bit-identical to sorting a copy. None when no value is finite.
#[cfg(test)]
pub(crate) fn percentile_by(n: usize, value: impl Fn(usize) -> f64, p: f64) -> Option<f64> {
    percentile_of_visits(|f| (0..n).for_each(|i| f(value(i))), p)
}

/// `percentile_by` over the values that `visit` hands to its callback
/// (every call the same values, in any order): for series read a block
/// at a time.
pub(crate) fn percentile_of_visits(visit: impl Fn(&mut dyn FnMut(f64)), p: f64) -> Option<f64> {
    let mut finite = 0usize;
    visit(&mut |v| finite += v.is_finite() as usize);
    if finite == 0 {
        return None;
    }
    let (lo, hi) = percentile_ranks(finite, p);
    let lo_value = kth_finite(&visit, lo);
    let hi_value = if hi == lo {
        lo_value
    } else {
        kth_finite(&visit, hi)
    };
    Some(interpolate(finite, p, lo_value, hi_value))
}

/// The `k`-th smallest (0-based, `total_cmp` order) of the finite values
/// `visit` hands over, without a copy: the value `select_nth_unstable`
/// puts at `k`. None when `k` is not below their count.
pub(crate) fn kth_of_visits(visit: impl Fn(&mut dyn FnMut(f64)), k: usize) -> Option<f64> {
    let mut finite = 0usize;
    visit(&mut |v| finite += v.is_finite() as usize);
    (k < finite).then(|| kth_finite(&visit, k))
}

/// An f64's bits mapped so that unsigned order is `total_cmp` order.
fn ordered_key(v: f64) -> u64 {
    let b = v.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

fn from_ordered_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// The `k`-th smallest (0-based, `total_cmp` order) finite value that
/// `visit` hands over; `k` must be below their count.
fn kth_finite(visit: &impl Fn(&mut dyn FnMut(f64)), mut k: usize) -> f64 {
    const BITS: u32 = 16;
    let mut prefix = 0u64;
    let mut counts = vec![0usize; 1 << BITS];
    for pass in 0..(64 / BITS) {
        let shift = 64 - BITS * (pass + 1);
        let known = 64 - BITS * pass; // the prefix fixes the bits from here up
        counts.iter_mut().for_each(|c| *c = 0);
        visit(&mut |v| {
            if !v.is_finite() {
                return;
            }
            let key = ordered_key(v);
            if pass == 0 || key >> known == prefix >> known {
                counts[((key >> shift) & 0xFFFF) as usize] += 1;
            }
        });
        let mut bucket = 0;
        while k >= counts[bucket] {
            k -= counts[bucket];
            bucket += 1;
        }
        prefix |= (bucket as u64) << shift;
    }
    from_ordered_key(prefix)
}

/// The values of the given ranks (0-based, ascending by `total_cmp`) of
/// `values`, found by successive selections (`select_nth_unstable`), each on
/// the part right of the previous rank: O(n) per rank instead of a sort.
/// `values` is reordered.
fn order_statistics(
    values: &mut [f64],
    mut ranks: Vec<usize>,
) -> std::collections::BTreeMap<usize, f64> {
    ranks.sort_unstable();
    ranks.dedup();
    let mut out = std::collections::BTreeMap::new();
    let mut start = 0;
    for r in ranks {
        let (_, v, _) = values[start..].select_nth_unstable_by(r - start, |a, b| a.total_cmp(b));
        out.insert(r, *v);
        start = r + 1;
    }
    out
}

/// Minimum samples per batch: at 100 ms that is one second, longer than the
/// ~200 ms averaging windows NVML applies to its utilization counters.
const MIN_BATCH_LEN: usize = 10;
/// Fewer batches than this give no interval (t-quantiles explode).
const MIN_BATCHES: usize = 4;

/// Fewest values for the AR(1) interval of a short series.
const MIN_AR1_LEN: usize = 8;
/// Lag-1 autocorrelation is clamped to this: closer to 1 the effective
/// sample size of a short series is not estimable.
const MAX_AR1_RHO: f64 = 0.9;
/// Fewer effective samples than this give no AR(1) interval: the series
/// does not say how much its mean varies. With ~15 GPM readings of a
/// harness's short timed section and r near 0.9 the effective size is
/// below 1; the interval used to be taken at 2 (t(1) = 12.7), ~146 points
/// wide on a series living between 0 and 33 %, so no change could clear
/// it. Wilks (section 5.2.4) warns that the variance-inflation estimate is
/// itself unreliable for short, strongly correlated series; an unknown
/// within-run interval leaves the noise to the spread between runs.
const MIN_AR1_EFFECTIVE: f64 = 4.0;

/// 95 % half-width of the mean of an autocorrelated series: batch means
/// when the series is long enough for at least four batches of ten, else
/// the AR(1) effective-sample-size interval (`ar1_ci95`). GPM metrics read
/// every 500 ms give only ~40 values in a 20 s window, too few for batch
/// means; their interval used to be missing, which left them with no noise
/// estimate at all.
pub(crate) fn mean_ci95(series: &[f64]) -> Option<f64> {
    batch_means_ci95(series).or_else(|| ar1_ci95(series))
}

/// 95 % half-width of the mean of a short autocorrelated series, from the
/// AR(1) variance inflation: with lag-1 autocorrelation `r`, the effective
/// sample size is `n (1 - r) / (1 + r)` (Wilks, *Statistical Methods in the
/// Atmospheric Sciences*, 3rd ed., section 5.2.4; Bretherton et al. 1999).
/// `r` is clamped to [0, 0.9]: a negative estimate from few values is noise,
/// and near 1 the series says nothing about its own mean. None for fewer
/// than 8 values or fewer than `MIN_AR1_EFFECTIVE` effective ones.
pub(crate) fn ar1_ci95(series: &[f64]) -> Option<f64> {
    let n = series.len();
    if n < MIN_AR1_LEN {
        return None;
    }
    let mean = series.iter().sum::<f64>() / n as f64;
    let ss: f64 = series.iter().map(|v| (v - mean).powi(2)).sum();
    if ss == 0.0 {
        return Some(0.0);
    }
    let lag1: f64 = series
        .windows(2)
        .map(|w| (w[0] - mean) * (w[1] - mean))
        .sum();
    let r = (lag1 / ss).clamp(0.0, MAX_AR1_RHO);
    let n_eff = n as f64 * (1.0 - r) / (1.0 + r);
    if n_eff < MIN_AR1_EFFECTIVE {
        return None;
    }
    let var = ss / (n - 1) as f64;
    Some(student_t_975(n_eff.floor() as usize - 1) * (var / n_eff).sqrt())
}

/// 95 % half-width of the mean of an autocorrelated series (batch means).
pub(crate) fn batch_means_ci95(series: &[f64]) -> Option<f64> {
    let n = series.len();
    let batches = ((n as f64).sqrt().floor() as usize).min(n / MIN_BATCH_LEN);
    if batches < MIN_BATCHES {
        return None;
    }
    let len = n / batches;
    let means: Vec<f64> = (0..batches)
        .map(|b| series[b * len..(b + 1) * len].iter().sum::<f64>() / len as f64)
        .collect();
    Some(batch_ci95_of_means(&means))
}

/// The Student-t 95 % half-width over at least two batch means.
fn batch_ci95_of_means(means: &[f64]) -> f64 {
    let batches = means.len();
    let grand = means.iter().sum::<f64>() / batches as f64;
    let var = means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (batches - 1) as f64;
    student_t_975(batches - 1) * (var / batches as f64).sqrt()
}

/// Degrees of freedom past which Student's t is taken as the normal: at
/// 100,000 the two 97.5 % quantiles differ by 1e-5 relative (t tends to
/// the normal as 1 + (1 + z^2) / 4 df: Abramowitz and Stegun 26.7.5). A
/// file's count (pytest-benchmark's `rounds`, nvbench's `sample_size`) can
/// be any number; statrs's inverse CDF never returned at 3e7 (issue 41.1),
/// so no count reaches it unclamped.
pub(crate) const MAX_T_DF: f64 = 100_000.0;

/// Two-sided 95 % quantile of Student's t with `df` degrees of freedom.
pub(crate) fn student_t_975(df: usize) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
    let df = df.max(1) as f64;
    if df > MAX_T_DF {
        return Normal::new(0.0, 1.0).map_or(1.96, |n| n.inverse_cdf(0.975));
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(0.975),
        Err(_) => 1.96,
    }
}

/// Anything rules and verdicts can read numbers from: a run summary or a
/// stored baseline. `gpu: None` means the aggregate over GPUs.
pub trait MetricSource {
    /// Statistic `stat` (mean, p50, p95, stdev, ...) of `metric`.
    fn stat(&self, metric: &str, stat: Stat, gpu: Option<usize>) -> Option<f64>;
    /// A derived feature ("gpu_busy_pct.idle_frac", ...).
    fn feature(&self, name: &str) -> Option<f64>;
    fn gpu_count(&self) -> usize;
    /// Each run's `(statistic, 95 % interval of its mean)`, for noise bands
    /// (`noise::Observation::from_runs`). None when unknown.
    fn runs(
        &self,
        _metric: &str,
        _stat: Stat,
        _gpu: Option<usize>,
    ) -> Option<Vec<(f64, Option<f64>)>> {
        None
    }
    /// The baseline side, when this source is a change (baseline -> new run):
    /// the rule language's `base()`, `delta()`, `ratio()` and `z()` read it.
    fn baseline(&self) -> Option<&dyn MetricSource> {
        None
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
    fn radix_selection_gives_the_sorted_percentiles_bit_for_bit() {
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let mut values: Vec<f64> = (0..5000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match i % 50 {
                    0 => f64::NAN,
                    1 => -0.0,
                    2 => 0.0,
                    3 => f64::MAX,
                    4 => -1e300,
                    5 => 42.0, // ties
                    _ => (x % 1_000_000) as f64 / 7.0 - 30_000.0,
                }
            })
            .collect();
        let by = |p| percentile_by(values.len(), |i| values[i], p).unwrap();
        let got: Vec<f64> = [0.0, 1.0, 50.0, 90.0, 95.0, 99.9, 100.0].map(by).to_vec();
        values.retain(|v| v.is_finite());
        values.sort_by(|a, b| a.total_cmp(b));
        let want: Vec<f64> = [0.0, 1.0, 50.0, 90.0, 95.0, 99.9, 100.0]
            .map(|p| percentile_sorted(&values, p))
            .to_vec();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(percentile_by(3, |_| f64::NAN, 50.0), None);
        assert_eq!(percentile_by(1, |_| 7.5, 90.0), Some(7.5));
    }

    #[test]
    fn selection_gives_the_sorted_percentiles() {
        let mut x = 99u64;
        for n in [1usize, 2, 3, 10, 101, 1000, 4099] {
            let v: Vec<f64> = (0..n)
                .map(|i| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    // Many ties (quantised) and signed zeros.
                    if i % 7 == 0 {
                        -0.0
                    } else {
                        ((x >> 40) % 50) as f64 / 4.0 - 3.0
                    }
                })
                .collect();
            let s = MetricStats::from_series(v.iter().copied()).unwrap();
            let mut sorted = v.clone();
            sorted.sort_by(|a, b| a.total_cmp(b));
            let bits = |a: f64| a.to_bits();
            assert_eq!(bits(s.min), bits(sorted[0]));
            assert_eq!(bits(s.max), bits(sorted[n - 1]));
            for (got, p) in [(s.p5, 5.0), (s.p50, 50.0), (s.p95, 95.0), (s.p99, 99.0)] {
                assert_eq!(
                    bits(got),
                    bits(percentile_sorted(&sorted, p)),
                    "n {n} p {p}"
                );
            }
        }
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
