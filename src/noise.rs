//! The noise model: how far a statistic moves between runs of the same
//! code, and so how large a change must be before it means something. Pure
//! numbers; the verdict (`gate::decide`) and the diagnosis (`diagnose`, the
//! `z()` function of the rule language) both ask it.
//!
//! One run's value of a statistic varies by `sigma` from run to run. Two
//! estimates of `sigma`, and the larger wins:
//! - **run to run**: the pooled standard deviation of the per-run values of
//!   the baseline's runs and, when they are repeats, the new runs;
//!   `df = (k - 1) + (m - 1)`.
//! - **within run**: each run's 95 % interval of its mean
//!   (`stats::mean_ci95`: batch means, or the AR(1) effective sample size
//!   for short series) as a standard error `ci95 / 1.96`.
//!
//! `band = q * sqrt(sigma_b^2 / k + sigma_x^2 / m)`, `q` the two-sided 95 %
//! Student-t quantile for `df` when the run-to-run estimate is used, else
//! 1.96. No estimate at all (one value per run, one run a side) is `None`.
//!
//! With one run a side only the within-run intervals exist, and they
//! understate how far a run moves from run to run (a data loader's
//! hiccups, clocks, placement differ per run). Measured on the recorded
//! healthy runs, the run-to-run sd of GPU busy, SM active, tensor and DRAM
//! activity was 0.3-2.1 times the within-run standard error (BERT and ViT
//! with data loaders: up to 2.1; the round-1 MLP's shifts of 0.3 points are
//! under the practical floor), and one-run baselines failed 7 of 40
//! healthy pairs. That band is therefore widened by
//! `WITHIN_RUN_UNDERSTATES` (the verdict only: the diagnosis asks whether a
//! counter moved by more than its measured spread).

use serde::Serialize;

/// Where the noise band came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseSource {
    /// Spread of the statistic between repeated runs (baseline and new).
    RunToRun,
    /// Each run's interval of its mean (batch means / AR(1)).
    WithinRun,
}

/// One side's value of a metric statistic over one or more runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Mean over runs of each run's statistic.
    pub value: f64,
    /// Each run's statistic.
    pub runs: Vec<f64>,
    /// Each run's 95 % half-width of its mean, when known.
    pub run_ci95: Vec<Option<f64>>,
    /// The runs are repeats of one benchmark (their spread is run-to-run
    /// noise). False for the nodes of one multi-node run.
    pub repeats: bool,
}

impl Observation {
    /// From per-run `(statistic, ci95)` pairs; non-finite values are dropped.
    pub fn from_runs(per_run: &[(f64, Option<f64>)]) -> Option<Observation> {
        let vals: Vec<(f64, Option<f64>)> = per_run
            .iter()
            .copied()
            .filter(|(v, _)| v.is_finite())
            .collect();
        if vals.is_empty() {
            return None;
        }
        let value = vals.iter().map(|v| v.0).sum::<f64>() / vals.len() as f64;
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
    pub fn run_stdev(&self) -> Option<f64> {
        let (ss, df) = self.run_ss();
        (df > 0).then(|| (ss / df as f64).sqrt())
    }

    fn k(&self) -> usize {
        if self.repeats {
            self.runs.len()
        } else {
            1
        }
    }

    /// Sum of squared deviations of the runs from their mean, and its df.
    fn run_ss(&self) -> (f64, usize) {
        if !self.repeats || self.runs.len() < 2 {
            return (0.0, 0);
        }
        let ss = self.runs.iter().map(|v| (v - self.value).powi(2)).sum();
        (ss, self.runs.len() - 1)
    }

    /// Mean within-run variance of one run's mean (None when any run lacks
    /// an interval: an unknown part makes the whole unknown).
    fn within_var(&self) -> Option<f64> {
        let vars: Option<Vec<f64>> = self
            .run_ci95
            .iter()
            .map(|c| c.map(|c| (c / 1.96).powi(2)))
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
    /// Degrees of freedom of the run-to-run estimate (None: within-run).
    pub df: Option<usize>,
    /// How much wider `band` is than 1.96 measured standard errors: the
    /// Student-t quantile over 1.96 for few runs, `WITHIN_RUN_UNDERSTATES`
    /// for one run a side, else 1.
    pub widening: f64,
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

/// The noise model of the module doc; None when nothing estimates it.
pub fn noise(base: &Observation, new: &Observation) -> Option<Noise> {
    let (ss_b, df_b) = base.run_ss();
    let (ss_n, df_n) = new.run_ss();
    let df = df_b + df_n;
    let runs_var = (df > 0).then(|| (ss_b + ss_n) / df as f64);
    let (wb, wn) = (base.within_var(), new.within_var());
    let (k, m) = (base.k() as f64, new.k() as f64);
    match runs_var {
        Some(s2) => {
            let vb = wb.map_or(s2, |w| w.max(s2));
            let vn = wn.map_or(s2, |w| w.max(s2));
            let from_runs = s2 >= wb.unwrap_or(0.0).max(wn.unwrap_or(0.0));
            let q = if from_runs {
                crate::stats::student_t_975(df)
            } else {
                1.96
            };
            Some(Noise {
                band: q * (vb / k + vn / m).sqrt(),
                source: if from_runs {
                    NoiseSource::RunToRun
                } else {
                    NoiseSource::WithinRun
                },
                df: from_runs.then_some(df),
                widening: q / 1.96,
            })
        }
        None => {
            let (vb, vn) = (wb?, wn?);
            Some(Noise {
                band: WITHIN_RUN_UNDERSTATES * 1.96 * (vb / k + vn / m).sqrt(),
                source: NoiseSource::WithinRun,
                df: None,
                widening: WITHIN_RUN_UNDERSTATES,
            })
        }
    }
}

/// Largest |z| reported: a change from a constant baseline (no noise at
/// all, e.g. 0 foreign processes) is "far beyond the noise", not infinite.
pub const Z_CAP: f64 = 1000.0;

/// A change in noise bands: beyond +-1 it clears the noise. A zero band
/// gives 0 for no change and +-`Z_CAP` otherwise.
pub fn in_bands(change: f64, band: f64) -> f64 {
    if change == 0.0 {
        0.0
    } else if band > 0.0 {
        (change / band).clamp(-Z_CAP, Z_CAP)
    } else {
        Z_CAP.copysign(change)
    }
}
