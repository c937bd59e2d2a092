//! The noise model: how far a statistic moves between runs of the same
//! code, and so how large a change must be before it means something. Pure
//! numbers; the verdict (`gate::decide`) and the diagnosis (`diagnose`, the
//! `z()` function of the rule language) both ask it.
//!
//! # The verdict's band: a moderated (empirical-Bayes) variance
//!
//! One run's value of a statistic varies by `sigma` from run to run. With
//! one to three baseline runs the spread of the runs alone says almost
//! nothing about `sigma` (two runs give one degree of freedom and a
//! Student-t quantile of 12.7: a -35 % throughput drop was "noise"). The
//! verdict therefore pools it with what else is known, as Smyth (2004)
//! moderates a gene's variance with a prior learned from all genes
//! (G. K. Smyth, "Linear models and empirical Bayes methods for assessing
//! differential expression in microarray experiments", *Statistical
//! Applications in Genetics and Molecular Biology* 3(1), article 3,
//! sections 3 and 6.2):
//!
//! `s~^2 = (d0 * s0^2 + d * s^2) / (d0 + d)`, judged with Student's t on
//! `d0 + d` degrees of freedom, where
//! - `s^2` is the pooled run-to-run variance of the baseline's runs and,
//!   when they are repeats, the new runs: `d = (k - 1) + (m - 1)`;
//! - the prior `s0^2 = WITHIN_RUN_INFLATION * w`, `w` the within-run
//!   variance of a run's mean (each run's 95 % interval of its mean from
//!   batch means or the AR(1) effective sample size, `stats::mean_ci95`,
//!   as `(ci95 / 1.96)^2`), with `d0 = PRIOR_DF`. Both constants were
//!   learned from the recorded healthy runs of every family
//!   (`scripts/learn_noise_prior.py`, Smyth's moment estimator);
//! - the history store's healthy runs of the same baseline (`--history`),
//!   when given, add their spread to the prior: `s0^2` becomes the
//!   df-weighted mean of the two and `d0` grows by their `n - 1`.
//!
//! Numbers measured once per run (wall time, `aggregate = "last"`) have no
//! within-run estimate, and their run-to-run spread does not transfer
//! between benchmarks (0.02 % to 7 % of the value over the recorded
//! families: Smyth's `d0` for it is 0.6, no information): they get a
//! prior only from the history store, else none.
//!
//! The variance is never taken below `w` (a run's mean is not steadier
//! than its own sampling error). `band = q * sqrt(s~^2 (1/k + 1/m))`, `q`
//! the `1 - 0.025 / looks` quantile of t(d0 + d): a live check that may
//! rerun the benchmark `looks - 1` times splits the two-sided 5 % over
//! its looks (Bonferroni; Jennison & Turnbull, *Group Sequential Methods
//! with Applications to Clinical Trials*, 2000, ch. 2), so repeated looks
//! do not inflate the false-alarm rate. No estimate at all (one value per
//! run, one run a side, no history) is `None`.
//!
//! # The diagnosis's band
//!
//! `noise` (below) is the measured spread alone: run to run when there are
//! repeats, else the within-run intervals; the diagnosis reads it at the
//! normal quantile (`Noise::band_at_normal_quantile`) to ask whether a
//! counter moved by more than its measured noise once a run regressed.

use serde::Serialize;

/// Where the noise band came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseSource {
    /// Spread of the statistic between repeated runs (baseline and new).
    RunToRun,
    /// Each run's interval of its mean (batch means / AR(1)).
    WithinRun,
    /// The run-to-run spread moderated by a prior (the module doc).
    Moderated,
    /// The spread of the per-round differences of `gate ab`'s interleaved
    /// A and B runs (`gate::paired`).
    Paired,
}

/// One side's value of a metric statistic over one or more runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Mean over runs of each run's statistic.
    pub value: f64,
    /// Each run's statistic.
    pub runs: Vec<f64>,
    /// Each run's 95 % half-width of its mean, when known.
    pub(crate) run_ci95: Vec<Option<f64>>,
    /// The runs are repeats of one benchmark (their spread is run-to-run
    /// noise). False for the nodes of one multi-node run.
    pub repeats: bool,
}

impl Observation {
    /// From per-run `(statistic, ci95)` pairs; non-finite values are dropped.
    pub(crate) fn from_runs(per_run: &[(f64, Option<f64>)]) -> Option<Observation> {
        let vals: Vec<(f64, Option<f64>)> = per_run
            .iter()
            .copied()
            .filter(|(v, _)| v.is_finite())
            .collect();
        if vals.is_empty() {
            return None;
        }
        // Two runs of 1e308 sum past f64::MAX: then each is divided first.
        let n = vals.len() as f64;
        let value = match vals.iter().map(|v| v.0).sum::<f64>() / n {
            mean if mean.is_finite() => mean,
            _ => vals.iter().map(|v| v.0 / n).sum::<f64>(),
        };
        Some(Observation {
            value,
            runs: vals.iter().map(|v| v.0).collect(),
            run_ci95: vals
                .iter()
                .map(|v| v.1.filter(|c| c.is_finite() && *c >= 0.0))
                .collect(),
            repeats: true,
        })
    }

    /// The same value, from the nodes of one run: their spread is not noise.
    pub fn nodes(mut self) -> Observation {
        self.repeats = false;
        self
    }

    /// Standard deviation of the per-run values (None with fewer than 2).
    pub(crate) fn run_stdev(&self) -> Option<f64> {
        let scale = scale_of(&[self]);
        let (ss, df) = self.run_ss(scale);
        (df > 0).then(|| (ss / df as f64).sqrt() * scale)
    }

    /// The largest magnitude of its values and intervals.
    fn magnitude(&self) -> f64 {
        self.runs
            .iter()
            .chain(self.run_ci95.iter().flatten())
            .fold(self.value.abs(), |m, v| m.max(v.abs()))
    }

    fn k(&self) -> usize {
        if self.repeats {
            self.runs.len()
        } else {
            1
        }
    }

    /// Sum of squared deviations of the runs from their mean, in units of
    /// `scale` (so squares of huge values stay finite), and its df.
    fn run_ss(&self, scale: f64) -> (f64, usize) {
        if !self.repeats || self.runs.len() < 2 {
            return (0.0, 0);
        }
        let ss = self
            .runs
            .iter()
            .map(|v| (v / scale - self.value / scale).powi(2))
            .sum();
        (ss, self.runs.len() - 1)
    }

    /// Mean within-run variance of one run's mean in units of `scale`
    /// (None when any run lacks an interval: an unknown part makes the
    /// whole unknown).
    fn within_var(&self, scale: f64) -> Option<f64> {
        let vars: Option<Vec<f64>> = self
            .run_ci95
            .iter()
            .map(|c| c.map(|c| (c / scale / 1.96).powi(2)))
            .collect();
        let vars = vars?;
        (!vars.is_empty()).then(|| vars.iter().sum::<f64>() / vars.len() as f64)
    }
}

/// The noise band of `new - base` under "nothing changed".
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Noise {
    /// 95 % half-width of the difference, in the metric's unit.
    pub band: f64,
    pub source: NoiseSource,
    /// Degrees of freedom of the estimate (None: within-run at the
    /// normal quantile); fractional with a learned prior.
    pub(crate) df: Option<f64>,
    /// How much wider `band` is than 1.96 measured standard errors: the
    /// Student-t quantile over 1.96 for few runs, `WITHIN_RUN_UNDERSTATES`
    /// for one run a side, else 1.
    pub(crate) widening: f64,
}

/// One run a side: the within-run band is widened this much (module doc).
pub const WITHIN_RUN_UNDERSTATES: f64 = 2.0;

impl Noise {
    /// The band at the normal quantile (1.96 measured sd), without the
    /// verdict's widening for few runs. The verdict needs that widening (a
    /// baseline of one or two runs knows its spread poorly, and a false
    /// alarm costs a pipeline); the diagnosis, once a run regressed, asks
    /// only whether a counter moved by more than its measured noise (t(1) =
    /// 12.7 made a 17-point drop of GPU busy look like noise against two
    /// baseline runs).
    pub fn band_at_normal_quantile(&self) -> f64 {
        self.band / self.widening
    }
}

/// The diagnosis's noise of `new - base`: the verdict's moderated band
/// (`moderated`, no history, one look), so that `z()` in rules and the
/// verdict read one noise. With two or more runs the spread between runs
/// is the noise of a mean, moderated by the within-run intervals where
/// they are known; a within-run interval from too few effective samples is
/// unknown (`stats::ar1_ci95`), never huge. None when nothing estimates it.
pub fn noise(base: &Observation, new: &Observation) -> Option<Noise> {
    moderated(base, new, &Prior::default())
}

impl Noise {
    /// The band of a metric bounded to `range` (a percentage of time lies
    /// in 0..100, so two means of it differ by at most 100 points): an
    /// interval wider than the metric can move claims more than the data
    /// allow, and is cut to the range.
    pub(crate) fn within_range(mut self, range: Option<f64>) -> Noise {
        if let Some(r) = range.filter(|r| *r > 0.0) {
            if self.band > r {
                self.band = r;
            }
        }
        self
    }
}

/// Run-to-run variance of a run's statistic over its within-run variance
/// (the prior scale `s0^2 / w`), learned by `scripts/learn_noise_prior.py`
/// from the healthy runs of every recorded family (Smyth 2004, section
/// 6.2): 1.00 over 32 metric-families; the round-1 MLP's counters are left
/// out (within-run errors of 0.01 points against run-to-run shifts of 0.3,
/// under the 1-point floor: ratios up to 1600 that a moment estimator is
/// not robust to; with them the fit gives 0.89 and 1.2 df).
pub(crate) const WITHIN_RUN_INFLATION: f64 = 1.0;

/// Prior degrees of freedom `d0` of the same fit: what the within-run
/// estimate is worth in baseline runs (2.7 runs' worth of spread).
pub(crate) const PRIOR_DF: f64 = 2.7;

/// What the verdict's band knows beyond the two sides' runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    /// Healthy runs of the same baseline in the history store: the
    /// variance of their values and its degrees of freedom (`n - 1`).
    pub history: Option<(f64, f64)>,
    /// Looks of the sequential test: 1 + the reruns a live check may make.
    pub looks: usize,
}

impl Default for Prior {
    fn default() -> Prior {
        Prior {
            history: None,
            looks: 1,
        }
    }
}

/// Two-sided `1 - 0.05 / looks` quantile of Student's t with `df` degrees
/// of freedom (fractional allowed; the normal quantile when unbounded).
pub(crate) fn t_quantile(df: f64, looks: usize) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
    let p = 1.0 - 0.025 / looks.max(1) as f64;
    // Past `MAX_T_DF` the normal (a file's count never reaches statrs's
    // inverse CDF, which does not return for huge df: issue 41.1).
    if df.is_finite() && df > 0.0 && df <= crate::stats::MAX_T_DF {
        if let Ok(t) = StudentsT::new(0.0, 1.0, df) {
            return t.inverse_cdf(p);
        }
    }
    Normal::new(0.0, 1.0).map_or(1.96, |n| n.inverse_cdf(p))
}

/// The verdict's noise band of `new - base` (module doc); None when
/// nothing estimates it.
pub fn moderated(base: &Observation, new: &Observation, prior: &Prior) -> Option<Noise> {
    // Every variance below is in units of `scale` squared: a value of
    // 1e200 s squared is infinite, and an infinite band read as "within
    // tolerance" (issue 41.8). Scaled before squaring, back at the end.
    let scale = scale_of(&[base, new]);
    let (ss_b, df_b) = base.run_ss(scale);
    let (ss_n, df_n) = new.run_ss(scale);
    let d = (df_b + df_n) as f64;
    let s2 = if d > 0.0 { (ss_b + ss_n) / d } else { 0.0 };
    // One within-run variance of a run's mean for the benchmark: the
    // sides' mean, known only when both are. A side whose own interval is
    // unknown (too few effective samples: `stats::ar1_ci95`) does not
    // borrow the other side's: its runs were too autocorrelated to say how
    // much their mean varies, and a quiet baseline's interval would pass
    // for theirs (the calibration's false alarms rose so).
    let w = match (base.within_var(scale), new.within_var(scale)) {
        (Some(a), Some(b)) => Some((a + b) / 2.0),
        _ => None,
    };
    let mut s0_d0 = w.map(|w| (WITHIN_RUN_INFLATION * w, PRIOR_DF));
    if let Some((vh, dh)) = prior
        .history
        .map(|(v, d)| (v / scale / scale, d))
        .filter(|h| h.1 > 0.0 && h.0.is_finite())
    {
        s0_d0 = Some(match s0_d0 {
            Some((s0, d0)) => ((d0 * s0 + dh * vh) / (d0 + dh), d0 + dh),
            None => (vh, dh),
        });
    }
    let (s0, d0) = s0_d0.unwrap_or((0.0, 0.0));
    let df = d0 + d;
    if df <= 0.0 {
        return None;
    }
    let var = ((d0 * s0 + d * s2) / df).max(w.unwrap_or(0.0));
    let (k, m) = (base.k() as f64, new.k() as f64);
    let q = t_quantile(df, prior.looks);
    Some(Noise {
        band: q * (var * (1.0 / k + 1.0 / m)).sqrt() * scale,
        source: match (d > 0.0, d0 > 0.0) {
            (true, true) => NoiseSource::Moderated,
            (true, false) => NoiseSource::RunToRun,
            _ => NoiseSource::WithinRun,
        },
        df: Some(df),
        widening: q / 1.96,
    })
}

/// The scale the variances of `sides` are computed in: their largest
/// magnitude where squares of it would overflow or underflow (beyond
/// 1e100 or below 1e-100), else 1, so ordinary values give the same bits
/// as unscaled arithmetic.
fn scale_of(sides: &[&Observation]) -> f64 {
    let m = sides.iter().fold(0.0f64, |m, o| m.max(o.magnitude()));
    if m.is_finite() && m > 0.0 && !(1e-100..=1e100).contains(&m) {
        m
    } else {
        1.0
    }
}

/// Largest |z| reported: a change from a constant baseline (no noise at
/// all, e.g. 0 foreign processes) is "far beyond the noise", not infinite.
pub(crate) const Z_CAP: f64 = 1000.0;

/// A change in noise bands: beyond +-1 it clears the noise. A zero band
/// gives 0 for no change and +-`Z_CAP` otherwise.
pub(crate) fn in_bands(change: f64, band: f64) -> f64 {
    if change == 0.0 {
        0.0
    } else if band > 0.0 {
        (change / band).clamp(-Z_CAP, Z_CAP)
    } else {
        Z_CAP.copysign(change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One run's ~15 GPM readings of a short timed section: bursts of
    /// tensor activity (a few readings high, then low), strongly
    /// autocorrelated, around `level`.
    fn bursty(level: f64, phase: usize) -> Vec<f64> {
        (0..15)
            .map(|i| {
                let on = ((i + phase) / 8).is_multiple_of(2);
                level * if on { 1.6 } else { 0.4 } + (i % 3) as f64 * 0.1
            })
            .collect()
    }

    fn observation(runs: &[Vec<f64>]) -> Observation {
        let per_run: Vec<(f64, Option<f64>)> = runs
            .iter()
            .map(|s| {
                let mean = s.iter().sum::<f64>() / s.len() as f64;
                (mean, crate::stats::mean_ci95(s))
            })
            .collect();
        Observation::from_runs(&per_run).unwrap()
    }

    #[test]
    fn a_large_move_of_a_short_bursty_series_clears_the_noise() {
        // Three baseline runs of ~24 % tensor activity, 15 readings each,
        // and a run where it fell 88 %.
        let base = observation(&[bursty(24.0, 0), bursty(24.2, 1), bursty(23.9, 2)]);
        let new = observation(&[bursty(2.9, 0)]);
        // Too few effective samples for a within-run interval of its own:
        // unknown, never t(1)-wide.
        assert!(base.run_ci95.iter().all(Option::is_none), "{base:?}");
        let n = noise(&base, &new)
            .unwrap()
            .within_range(crate::metrics::range("tensor_pct"));
        assert!(
            n.band <= 100.0,
            "a percentage's band stays in its range: {n:?}"
        );
        let z = in_bands(new.value - base.value, n.band_at_normal_quantile());
        assert!(z < -1.0, "an 88 % fall is beyond the noise: z = {z}, {n:?}");
    }

    #[test]
    fn a_band_wider_than_the_range_is_cut_to_it() {
        let wide = Noise {
            band: 146.0,
            source: NoiseSource::WithinRun,
            df: None,
            widening: 12.7 / 1.96,
        };
        let cut = wide.within_range(Some(100.0));
        assert_eq!(cut.band, 100.0);
        assert!(cut.band_at_normal_quantile() < wide.band_at_normal_quantile());
        assert_eq!(wide.within_range(None).band, 146.0);
    }
}
