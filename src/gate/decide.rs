//! The decision rule for one metric: numbers in, numbers and an enum out.
//! The words that explain a judgement live in the reporters
//! (`report::check::words`).
//!
//! # The rule (docs/gating.md has the evidence)
//!
//! For a metric with baseline value `b` and new value `x` of its statistic,
//! `worse` is the change in the bad direction (`b - x` when higher is better,
//! `x - b` when lower is better). A change is a **regression** when it clears
//! both
//!
//! - the **practical floor** `max(relative * |b|, absolute)`: the smallest
//!   change worth failing a pipeline for. Defaults (`config`): 1 % for the
//!   benchmark's own numbers (wall time, user metrics), 3 % for sampled
//!   counters, with a per-metric absolute floor in the metric's unit (1
//!   point for utilizations). `gate.toml` and `--threshold` replace them;
//!   and
//! - the **noise band**: the 95 % half-width of `x - b` under "nothing
//!   changed", from the noise model below.
//!
//! Beyond the floor but inside the band is **inconclusive**; beyond both in
//! the good direction is an **improvement**; anything else **passes**.
//!
//! # The noise model
//!
//! One run's value of a statistic varies by `sigma` from run to run. Two
//! estimates of `sigma`, and the larger wins:
//! - **run to run**: the pooled standard deviation of the per-run values of
//!   the baseline's runs and, when they are repeats (`--confirm`, several
//!   replays), the new runs; `df = (k - 1) + (m - 1)`. It captures what
//!   changes between two runs of the same code: start-up, clocks, data order,
//!   the neighbour on the host.
//! - **within run**: each run's 95 % interval of its mean (batch means, or
//!   the AR(1) effective sample size for short series: `stats::mean_ci95`),
//!   as a standard error `ci95 / 1.96`. Samples 100 ms apart are
//!   autocorrelated, so they are never treated as independent draws.
//!
//! `band = q * sqrt(sigma_b^2 / k + sigma_x^2 / m)` with `q` the two-sided
//! 95 % Student-t quantile for `df` when the run-to-run estimate is used
//! (k = 3 gives q = 4.30: a three-run baseline is honest about how little
//! three runs say), else 1.96. The within-run estimate alone misses the
//! run-to-run component (on the H200 fixtures healthy runs of one workload
//! differ by up to 1.1 % while their intervals are +-0.05 %); the practical
//! floor covers that gap, and was chosen above it.
//!
//! **No noise estimate** (a number measured once per run, like wall time,
//! against a one-run baseline, with no repeated new runs): never a
//! regression. A change beyond the floor is inconclusive and says how to get
//! an estimate (`gate capture --runs 3`, `gate check --confirm N`), unless
//! the user set an explicit threshold for it: then that threshold decides.

use crate::config::Policy;
use crate::metrics::Direction;
use serde::Serialize;

/// Per-metric verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Regression,
    Improvement,
    /// Beyond the floor but within the noise band, or no noise estimate.
    Inconclusive,
    /// Gated, but absent from the baseline or the new run.
    Missing,
    /// Not gated (neutral or disabled): reported for context.
    Info,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Missing => "missing",
            Verdict::Info => "info",
        }
    }
}

/// Why a metric got its verdict: the reporters turn this into words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// The change is smaller than the practical floor.
    WithinFloor,
    /// Beyond the floor, but within the noise band.
    WithinNoise,
    /// Beyond the floor and the noise band.
    BeyondFloorAndNoise,
    /// Beyond the floor, and nothing says how noisy the metric is.
    NoNoiseEstimate,
    /// Beyond an explicit user threshold; no noise estimate to weigh it.
    BeyondExplicitThreshold,
    /// Neutral or disabled: reported for context.
    NotGated,
    /// In the new run, not in the baseline.
    NotInBaseline,
    /// In the baseline, not measured in the new run.
    NotMeasured,
}

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
            })
        }
        None => {
            let (vb, vn) = (wb?, wn?);
            Some(Noise {
                band: 1.96 * (vb / k + vn / m).sqrt(),
                source: NoiseSource::WithinRun,
                df: None,
            })
        }
    }
}

/// Outcome of comparing one metric: numbers and an enum.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub verdict: Verdict,
    pub why: Why,
    /// new - baseline, in the unit.
    pub delta: f64,
    /// The change in the bad direction (positive = worse).
    pub worse: f64,
    /// The practical floor in the unit: max(relative * |b|, absolute).
    pub floor: f64,
    /// The noise band, when estimable.
    pub noise: Option<Noise>,
}

impl Judgement {
    /// `worse` in noise bands: beyond 1 clears the noise (None without one).
    pub fn z(&self) -> Option<f64> {
        self.noise
            .filter(|n| n.band > 0.0)
            .map(|n| self.worse / n.band)
    }
}

/// The rule of the module doc, for one metric.
pub fn judge(policy: &Policy, base: &Observation, new: &Observation) -> Judgement {
    let (b, x) = (base.value, new.value);
    let floor = (policy.relative * b.abs()).max(policy.absolute);
    let worse = match policy.direction {
        Direction::HigherIsBetter => b - x,
        Direction::LowerIsBetter => x - b,
        Direction::Neutral => 0.0,
    };
    let noise = noise(base, new);
    let (verdict, why) = if !policy.gated {
        (Verdict::Info, Why::NotGated)
    } else {
        match noise {
            Some(n) if worse > floor && worse > n.band => {
                (Verdict::Regression, Why::BeyondFloorAndNoise)
            }
            Some(_) if worse > floor => (Verdict::Inconclusive, Why::WithinNoise),
            Some(n) if -worse > floor && -worse > n.band => {
                (Verdict::Improvement, Why::BeyondFloorAndNoise)
            }
            Some(_) => (Verdict::Pass, Why::WithinFloor),
            None if worse > floor && policy.explicit => {
                (Verdict::Regression, Why::BeyondExplicitThreshold)
            }
            None if worse > floor => (Verdict::Inconclusive, Why::NoNoiseEstimate),
            None => (Verdict::Pass, Why::WithinFloor),
        }
    };
    Judgement {
        verdict,
        why,
        delta: x - b,
        worse,
        floor,
        noise,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Statistic;

    fn policy(direction: Direction, rel: f64, abs: f64) -> Policy {
        Policy {
            id: "samples_per_s".into(),
            unit: "1/s".into(),
            direction,
            statistic: Statistic::Mean,
            relative: rel,
            absolute: abs,
            gated: true,
            first_class: true,
            explicit: false,
        }
    }

    fn obs(runs: &[f64], ci: Option<f64>) -> Observation {
        let per: Vec<(f64, Option<f64>)> = runs.iter().map(|v| (*v, ci)).collect();
        Observation::from_runs(&per).unwrap()
    }

    /// The three outcomes, with the default 1 % floor of a
    /// benchmark's own number and a three-run baseline.
    #[test]
    fn three_percent_slower_fails_with_little_noise_and_is_inconclusive_with_much() {
        let p = policy(Direction::HigherIsBetter, 0.01, 0.0);
        // 0.1 % run-to-run noise: 1000 +- 1.
        let quiet = obs(&[999.0, 1000.0, 1001.0], None);
        let j = judge(&p, &quiet, &obs(&[970.0], None));
        assert_eq!(j.verdict, Verdict::Regression, "{j:?}");
        assert_eq!(j.noise.unwrap().source, NoiseSource::RunToRun);
        // 3 % run-to-run noise: the same 3 % drop is inside the band.
        let noisy = obs(&[970.0, 1000.0, 1030.0], None);
        let j = judge(&p, &noisy, &obs(&[970.0], None));
        assert_eq!(j.verdict, Verdict::Inconclusive, "{j:?}");
        assert_eq!(j.why, Why::WithinNoise);
    }

    #[test]
    fn a_one_third_drop_of_a_low_metric_fails() {
        // tensor_pct 14.6 -> 9.8 with a +-0.25 point interval: the 3 %
        // relative and 1 point absolute floors of a counter do not hide it.
        let mut p = policy(Direction::HigherIsBetter, 0.03, 1.0);
        p.first_class = false;
        let j = judge(&p, &obs(&[14.6], Some(0.25)), &obs(&[9.8], Some(0.25)));
        assert_eq!(j.verdict, Verdict::Regression, "{j:?}");
        assert_eq!(j.noise.unwrap().source, NoiseSource::WithinRun);
        // 0.4 -> 0.2 is -50 % but 0.2 points: not news.
        let j = judge(&p, &obs(&[0.4], Some(0.01)), &obs(&[0.2], Some(0.01)));
        assert_eq!(j.verdict, Verdict::Pass);
    }

    #[test]
    fn nothing_is_a_regression_without_a_noise_estimate() {
        let p = policy(Direction::LowerIsBetter, 0.01, 0.0);
        // Wall time against a one-run baseline: measured once per run.
        let j = judge(&p, &obs(&[15.0], None), &obs(&[22.0], None));
        assert_eq!(j.verdict, Verdict::Inconclusive);
        assert_eq!(j.why, Why::NoNoiseEstimate);
        assert!(j.z().is_none());
        // Within the floor it simply passes.
        let j = judge(&p, &obs(&[15.0], None), &obs(&[15.1], None));
        assert_eq!(j.verdict, Verdict::Pass);
        // An explicit user threshold decides on its own.
        let mut explicit = p.clone();
        explicit.explicit = true;
        explicit.relative = 0.05;
        let j = judge(&explicit, &obs(&[15.0], None), &obs(&[22.0], None));
        assert_eq!(j.verdict, Verdict::Regression);
        assert_eq!(j.why, Why::BeyondExplicitThreshold);
    }

    #[test]
    fn repeated_new_runs_give_a_noise_estimate_to_a_one_run_baseline() {
        let p = policy(Direction::HigherIsBetter, 0.01, 0.0);
        // --confirm: three new runs, their spread is the estimate.
        let j = judge(&p, &obs(&[1000.0], None), &obs(&[949.0, 950.0, 951.0], None));
        assert_eq!(j.verdict, Verdict::Regression, "{j:?}");
        assert_eq!(j.noise.unwrap().df, Some(2));
        // The nodes of one run are not repeats: no estimate from them.
        let nodes = obs(&[949.0, 950.0, 951.0], None).nodes();
        assert!(noise(&obs(&[1000.0], None), &nodes).is_none());
    }

    #[test]
    fn improvements_need_the_noise_too_and_ungated_metrics_are_info() {
        let p = policy(Direction::HigherIsBetter, 0.01, 0.0);
        let base = obs(&[100.0, 101.0, 99.0], None);
        assert_eq!(
            judge(&p, &base, &obs(&[120.0], None)).verdict,
            Verdict::Improvement
        );
        assert_eq!(judge(&p, &base, &obs(&[102.0], None)).verdict, Verdict::Pass);
        let mut off = p.clone();
        off.gated = false;
        assert_eq!(judge(&off, &base, &obs(&[10.0], None)).verdict, Verdict::Info);
    }

    #[test]
    fn within_run_noise_is_used_when_it_is_larger_than_the_spread() {
        // Two runs that happen to agree exactly do not make a noisy metric
        // quiet: each run's own interval still counts.
        let p = policy(Direction::HigherIsBetter, 0.0, 0.0);
        let base = obs(&[50.0, 50.0], Some(4.0));
        let n = noise(&base, &obs(&[47.0], Some(4.0))).unwrap();
        assert_eq!(n.source, NoiseSource::WithinRun);
        assert!(n.band > 3.0, "{n:?}");
        assert_eq!(
            judge(&p, &base, &obs(&[47.0], Some(4.0))).verdict,
            Verdict::Inconclusive
        );
    }
}
