//! Drift: the slow slide that every single check passes. Ten changes of
//! -1 % each pass one by one against a 10 % tolerance and add up to -10 %;
//! judged together against the baseline they are plainly a shift.
//!
//! # Method: a one-sided tabular CUSUM over the recent runs
//!
//! A per-run check is, in quality-control terms, a Shewhart chart: each
//! point against fixed limits. Shewhart charts are known to be slow on
//! small sustained shifts; the cumulative-sum chart was designed for
//! exactly those (E. S. Page, "Continuous Inspection Schemes",
//! *Biometrika* 41 (1954) 100-115; D. C. Montgomery, *Introduction to
//! Statistical Quality Control*, 7th ed., Wiley 2013, section 9.1). We use
//! Montgomery's tabular form, one-sided in the metric's bad direction:
//!
//! ```text
//! worse_i = b - x_i                (x_i - b when lower is better)
//! z_i     = (worse_i - 2 * sigma / sqrt(n_b)) / sigma
//! S_0 = 0,  S_i = max(0, S_{i-1} + z_i - k)           k = 0.5, h = 5
//! drift when S_n > h at the newest run n
//! ```
//!
//! - `b` is the baseline value the runs were judged against, `x_i` each
//!   run's value of the same statistic, oldest first, over the last
//!   `window` runs (default 20) on the same branch against the same
//!   baseline version: a baseline refresh starts a new series.
//! - `k = 0.5`, `h = 5` are the textbook design for detecting a shift of one
//!   standard deviation: in-control average run length ~465 runs, ~10 runs
//!   to signal a 1-sigma shift (Montgomery, Table 9.2). A shorter window
//!   bounds how far back evidence reaches.
//! - `sigma` is the run-to-run noise: the larger of the spread between the
//!   baseline's runs and the moving-range estimate of the recent runs,
//!   `mean |x_i - x_{i-1}| / 1.128` (Montgomery section 6.4, `d2` for
//!   n = 2). The moving range barely moves under a slow trend, and taking
//!   the larger of the two keeps a lucky, tight baseline from making every
//!   wobble look significant.
//! - The baseline is itself an estimate: a mean of `n_b` runs, off by
//!   `sigma / sqrt(n_b)` typically, and off by the same amount for every
//!   later run. Left alone, that common error accumulates in the CUSUM
//!   like a real shift (a baseline captured on a good day would raise
//!   drift forever: our healthy-noise test caught exactly that). So each
//!   run's excess is counted only beyond `2 * sigma / sqrt(n_b)`, the
//!   one-sided ~97.7 % bound of the baseline's own error: the tabular
//!   CUSUM's reference value grows from `k` to `k + 2 / sqrt(n_b)` sigma
//!   (1.65 sigma for a 3-run baseline). Capturing with more `--runs`
//!   makes drift detection more sensitive.
//! - Statistically real is not enough: the recent level (mean of the
//!   newest `LEVEL_RUNS` runs of the drifting segment) must also be worse
//!   than the baseline by at least `min_share` of the metric's tolerance
//!   (default one half): a drift is news when it has eaten a real part of
//!   the budget the team set, not when a very quiet metric moved 0.3 %.
//! - Degenerate cases: fewer than `MIN_RUNS` runs give no finding (too
//!   little data, never a pass or a fail of its own); a zero spread (replays
//!   of identical traces) falls back to a tiny floor, so only the practical
//!   test above decides; neutral metrics are never judged.
//!
//! Where the segment with `S > 0` began is CUSUM's change-point estimate
//! (Montgomery 9.1.2): the report names the first run (and commit) of it,
//! which is where to start bisecting.
//!
//! Why CUSUM and not a trend test (Mann-Kendall) or a plain pooled t-test:
//! a trend test does not compare against the baseline, and misses a slide
//! that has stopped at -8 %; a pooled test over the window dilutes a recent
//! shift with the good runs before it. CUSUM accumulates exactly the
//! evidence "consistently worse than the baseline, by more than half a
//! sigma", forgets good stretches (`max(0, ...)`), and says where the
//! change began.

use crate::metrics::Direction;

/// CUSUM reference value, in sigma: half the 1-sigma shift it is tuned for.
pub(crate) const K_SIGMA: f64 = 0.5;
/// CUSUM decision interval, in sigma.
pub(crate) const H_SIGMA: f64 = 5.0;
/// `d2` for moving ranges of two consecutive values.
pub(crate) const D2_MOVING_RANGE: f64 = 1.128;
/// The baseline's own error is discounted up to this many standard errors.
pub(crate) const BASELINE_Z: f64 = 3.0;
/// Fewer runs than this in the window: no drift judgement.
pub const MIN_RUNS: usize = crate::config::history::DRIFT_MIN_RUNS;
/// The recent level is the mean of at most this many newest runs.
pub const LEVEL_RUNS: usize = 3;

use crate::config::history::DriftConfig;

/// One metric's recent values against its baseline, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub direction: Direction,
    pub baseline: f64,
    /// Spread of the statistic between the baseline's runs (None: one run).
    pub baseline_sd: Option<f64>,
    /// Runs behind the baseline value.
    pub baseline_runs: usize,
    /// The metric's effective tolerance, in its unit.
    pub tolerance: f64,
    /// Each run's value, oldest first; the newest is the run being checked.
    pub values: Vec<f64>,
}

/// A detected drift.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Drift {
    /// Mean of the newest runs of the drifting segment.
    pub level: f64,
    /// `level - baseline`, in the unit.
    pub shift: f64,
    /// `shift` in percent of the baseline (None when it is 0).
    pub shift_pct: Option<f64>,
    /// Noise scale used, in the unit.
    pub sigma: f64,
    /// CUSUM at the newest run, in sigma.
    pub cusum: f64,
    /// Index into `values` of the first run of the drifting segment.
    pub(crate) segment_start: usize,
    /// Runs in the drifting segment.
    pub(crate) segment_runs: usize,
}

/// The CUSUM path `S_i` of `worse / sigma`, with reference value `k`.
pub(crate) fn cusum_path(z: &[f64], k: f64) -> Vec<f64> {
    let mut s = 0.0_f64;
    z.iter()
        .map(|zi| {
            s = (s + zi - k).max(0.0);
            s
        })
        .collect()
}

/// Moving-range estimate of the standard deviation of `values`.
pub(crate) fn moving_range_sigma(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let mr: f64 =
        values.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>() / (values.len() - 1) as f64;
    Some(mr / D2_MOVING_RANGE)
}

/// The noise scale of the module doc, in the metric's unit (> 0).
pub fn sigma(series: &Series) -> f64 {
    let base = series
        .baseline_sd
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(0.0);
    let mr = moving_range_sigma(&series.values)
        .filter(|s| s.is_finite())
        .unwrap_or(0.0);
    let floor = 1e-9 * series.baseline.abs().max(1e-9);
    base.max(mr).max(floor)
}

/// Judge `series` (module doc). None: no drift, or too little data.
pub(crate) fn detect(series: &Series, config: &DriftConfig) -> Option<Drift> {
    let sign = match series.direction {
        Direction::HigherIsBetter => 1.0,
        Direction::LowerIsBetter => -1.0,
        Direction::Neutral => return None,
    };
    let b = series.baseline;
    let values = &series.values;
    if values.len() < MIN_RUNS || !b.is_finite() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let sigma = sigma(series);
    let allowance = BASELINE_Z * sigma / (series.baseline_runs.max(1) as f64).sqrt();
    let z: Vec<f64> = values
        .iter()
        .map(|x| (sign * (b - x) - allowance) / sigma)
        .collect();
    let path = cusum_path(&z, K_SIGMA);
    let cusum = *path.last()?;
    if cusum <= H_SIGMA {
        return None;
    }
    let segment_runs = path.iter().rev().take_while(|s| **s > 0.0).count();
    let segment_start = values.len() - segment_runs;
    let newest = &values[values.len() - segment_runs.min(LEVEL_RUNS)..];
    let level = newest.iter().sum::<f64>() / newest.len() as f64;
    let shift = level - b;
    let worse_by = -sign * shift;
    if worse_by <= 0.0 || worse_by < config.min_share * series.tolerance.max(0.0) {
        return None;
    }
    Some(Drift {
        level,
        shift,
        shift_pct: (b != 0.0).then(|| shift / b.abs() * 100.0),
        sigma,
        cusum,
        segment_start,
        segment_runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SplitMix64 + Box-Muller: a fixed-seed normal generator, so the
    /// noise tests are reproducible without a dependency.
    struct Normal(u64);
    impl Normal {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn uniform(&mut self) -> f64 {
            ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn sample(&mut self) -> f64 {
            let (u1, u2) = (self.uniform(), self.uniform());
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        }
    }

    fn sd(v: &[f64]) -> f64 {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
    }

    /// A baseline of `runs` runs drawn from the healthy distribution.
    fn baseline(rng: &mut Normal, mean: f64, noise: f64, runs: usize) -> (f64, f64) {
        let v: Vec<f64> = (0..runs).map(|_| mean + noise * rng.sample()).collect();
        (v.iter().sum::<f64>() / runs as f64, sd(&v))
    }

    fn series(direction: Direction, b: (f64, f64), values: Vec<f64>) -> Series {
        Series {
            direction,
            baseline: b.0,
            baseline_sd: Some(b.1),
            baseline_runs: 3,
            tolerance: 0.10 * b.0.abs(),
            values,
        }
    }

    /// Ten changes of -1 % each, with 1 % run-to-run noise: every run is
    /// within the 10 % tolerance on its own; together they are a drift,
    /// found before the slide is over, starting near its beginning.
    #[test]
    fn a_slow_slide_of_one_percent_per_change_is_found() {
        let cfg = DriftConfig::default();
        for seed in 1..=20u64 {
            let mut rng = Normal(seed);
            let b = baseline(&mut rng, 1000.0, 10.0, 3);
            let mut values: Vec<f64> = (0..5).map(|_| 1000.0 + 10.0 * rng.sample()).collect();
            let mut found_at = None;
            for step in 1..=10 {
                values.push(1000.0 * (1.0 - 0.01 * step as f64) + 10.0 * rng.sample());
                let window = values[values.len().saturating_sub(cfg.window)..].to_vec();
                if let Some(d) = detect(&series(Direction::HigherIsBetter, b, window), &cfg) {
                    assert!(d.shift < 0.0 && d.shift_pct.unwrap() < -4.0, "{d:?}");
                    found_at = Some(step);
                    break;
                }
            }
            let step = found_at.unwrap_or_else(|| panic!("seed {seed}: slide not found"));
            assert!(step <= 9, "seed {seed}: found only at step {step}");
        }
    }

    /// Latency creeping up (lower is better) is the mirror image.
    #[test]
    fn a_slow_rise_of_a_lower_is_better_metric_is_found() {
        let mut rng = Normal(7);
        let b = baseline(&mut rng, 50.0, 0.5, 3);
        let values: Vec<f64> = (1..=12)
            .map(|i| 50.0 * (1.0 + 0.01 * i as f64) + 0.5 * rng.sample())
            .collect();
        let d = detect(
            &series(Direction::LowerIsBetter, b, values),
            &DriftConfig::default(),
        )
        .expect("rise found");
        assert!(d.shift > 0.0);
        // The same numbers on a higher-is-better metric are an improvement.
        let mut rng = Normal(7);
        let b = baseline(&mut rng, 50.0, 0.5, 3);
        let values: Vec<f64> = (1..=12)
            .map(|i| 50.0 * (1.0 + 0.01 * i as f64) + 0.5 * rng.sample())
            .collect();
        assert_eq!(
            detect(
                &series(Direction::HigherIsBetter, b, values),
                &DriftConfig::default()
            ),
            None
        );
    }

    /// Healthy noise never fires: 400 checks in a row (sliding window of
    /// 20), at 1 %, 2 % and 3 % run-to-run noise, 20 seeds each, with
    /// baselines drawn from the same noise (so some are lucky).
    #[test]
    fn healthy_noise_never_fires() {
        let cfg = DriftConfig::default();
        let mut checks = 0;
        for noise_pct in [1.0, 2.0, 3.0] {
            for seed in 100..120u64 {
                let mut rng = Normal(seed);
                let noise = 1000.0 * noise_pct / 100.0;
                let b = baseline(&mut rng, 1000.0, noise, 3);
                let mut values = Vec::new();
                for step in 0..400 {
                    values.push(1000.0 + noise * rng.sample());
                    let window = values[values.len().saturating_sub(cfg.window)..].to_vec();
                    let found = detect(&series(Direction::HigherIsBetter, b, window), &cfg);
                    assert_eq!(
                        found, None,
                        "noise {noise_pct} %, seed {seed}, step {step}: healthy noise called drift"
                    );
                    checks += 1;
                }
            }
        }
        assert_eq!(checks, 3 * 20 * 400);
    }

    /// A step that stays inside the tolerance but is large against the
    /// noise is a drift too (the slide has stopped, the loss has not).
    #[test]
    fn a_persisting_step_below_tolerance_is_found_and_dated() {
        let mut rng = Normal(3);
        let b = baseline(&mut rng, 1000.0, 5.0, 3);
        let mut values: Vec<f64> = (0..8).map(|_| 1000.0 + 5.0 * rng.sample()).collect();
        values.extend((0..6).map(|_| 930.0 + 5.0 * rng.sample()));
        let d = detect(
            &series(Direction::HigherIsBetter, b, values),
            &DriftConfig::default(),
        )
        .expect("step found");
        assert_eq!(d.segment_start, 8, "{d:?}");
        assert!((d.shift_pct.unwrap() + 7.0).abs() < 1.5, "{d:?}");
    }

    #[test]
    fn degenerate_inputs_give_no_finding() {
        let cfg = DriftConfig::default();
        let s = |values: Vec<f64>| series(Direction::HigherIsBetter, (100.0, 1.0), values);
        // Too few runs, even if terrible.
        assert_eq!(detect(&s(vec![50.0; MIN_RUNS - 1]), &cfg), None);
        // NaN in the window.
        assert_eq!(
            detect(&s(vec![90.0, 90.0, f64::NAN, 90.0, 90.0]), &cfg),
            None
        );
        // Neutral metrics are never judged.
        let mut n = s(vec![50.0; 10]);
        n.direction = Direction::Neutral;
        assert_eq!(detect(&n, &cfg), None);
        // Identical replays exactly at the baseline: no spread, no drift.
        let z = Series {
            baseline_sd: None,
            baseline_runs: 1,
            ..s(vec![100.0; 10])
        };
        assert_eq!(detect(&z, &cfg), None);
        // Identical replays 6 % below (zero spread): the practical test decides.
        let z = Series {
            baseline_sd: None,
            baseline_runs: 1,
            ..s(vec![94.0; 10])
        };
        assert!(detect(&z, &cfg).is_some());
        let z = Series {
            baseline_sd: None,
            baseline_runs: 1,
            ..s(vec![98.0; 10])
        };
        assert_eq!(
            detect(&z, &cfg),
            None,
            "2 % is under half the 10 % tolerance"
        );
    }

    #[test]
    fn config_limits_are_checked() {
        let bad = DriftConfig {
            window: 2,
            ..DriftConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("window = 2"));
        let bad = DriftConfig {
            min_share: f64::NAN,
            ..DriftConfig::default()
        };
        assert!(bad.validate().is_err());
        assert!(DriftConfig::default().validate().is_ok());
    }
}
