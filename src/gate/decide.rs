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
//! Beyond the floor but inside the band is **inconclusive** when it is
//! beyond the **plug-in band** (`plug_in_band`: the same standard error at
//! the normal quantile, as if the measured spread were the true one): the
//! move would be a regression if the few runs knew their spread, so the
//! verdict stays open (Student 1908: the t quantile over the normal one is
//! exactly the price of estimating the spread). Inside the plug-in band even
//! the optimistic reading of the spread calls it noise: it **passes**.
//! Beyond both in the good direction is an **improvement**; anything else
//! **passes**.
//!
//! # The noise model (`crate::noise::moderated`)
//!
//! The band is the 95 % half-width of `x - b` from a moderated
//! (empirical-Bayes) variance in the style of Smyth (2004): the runs'
//! own spread pooled with a prior learned from the recorded healthy runs
//! (the within-run interval times a run-to-run inflation, worth `d0`
//! runs) and, with `--history`, the history store's healthy runs of the
//! same baseline; Student's t on the pooled degrees of freedom, at a
//! Bonferroni-split level when a live check may rerun (Jennison & Turnbull
//! 2000, ch. 2). `crate::noise` has the formulas; docs/gating.md the
//! calibration.
//!
//! **No noise estimate** (a number measured once per run, like wall time,
//! against a one-run baseline, with no repeated new runs and no history):
//! never a regression. A change beyond the floor is inconclusive (exit 4
//! unless gate.toml maps it to pass) and says how to get an estimate
//! (`gate capture --runs 3`, live reruns), unless the user set an explicit
//! threshold for it: then that threshold decides.

use crate::config::verdict::Policy;
use crate::metrics::Direction;
pub use crate::noise::{moderated, noise, Noise, NoiseSource, Observation, Prior};
use serde::Serialize;

/// Per-metric verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Regression,
    /// A regression the change acknowledged within its bound (`accept`):
    /// does not fail the run, and every report says so.
    Accepted,
    Improvement,
    /// Beyond the floor but within the noise band, or no noise estimate.
    Inconclusive,
    /// Gated, but absent from the baseline or the new run.
    Missing,
    /// Not gated (neutral or disabled): reported for context.
    Info,
}

impl Verdict {
    /// Every metric verdict.
    pub const ALL: [Verdict; 7] = [
        Self::Pass,
        Self::Regression,
        Self::Accepted,
        Self::Improvement,
        Self::Inconclusive,
        Self::Missing,
        Self::Info,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Regression => "regression",
            Verdict::Accepted => "accepted",
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
    /// Beyond the floor and the measured spread, but within the noise band
    /// (the spread is too poorly known to decide).
    WithinNoise,
    /// Beyond the floor, but within the measured spread itself (the
    /// plug-in band): no evidence of a change.
    WithinMeasuredNoise,
    /// Beyond the floor and the noise band.
    BeyondFloorAndNoise,
    /// Beyond the floor, and nothing says how noisy the metric is.
    NoNoiseEstimate,
    /// Beyond an explicit user threshold; no noise estimate to weigh it.
    BeyondExplicitThreshold,
    /// Neutral or disabled: reported for context.
    NotGated,
    /// A counter in a check that the benchmark's own declared number
    /// decided: reported for context (it explains, it does not gate).
    DecidedByBenchmark,
    /// GPU busy or SM active fell while tensor-core activity rose beyond
    /// its noise: the GPU did its math faster and waited more.
    FasterMath,
    /// Wall time where one side counted from the end of warm-up and the
    /// other from the start (`gate::wall_time_not_comparable`).
    NotComparable,
    /// A counter that a process or condition outside the benchmark's tree
    /// moves (a neighbour's processes and SM share, thermal throttling), in
    /// a disturbed run: context, not evidence about the change
    /// (`gate::disturbance`).
    Disturbance,
    /// In the new run, not in the baseline.
    NotInBaseline,
    /// In the baseline, not measured in the new run.
    NotMeasured,
}

/// Outcome of comparing one metric: numbers and an enum.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub verdict: Verdict,
    pub why: Why,
    /// new - baseline, in the unit.
    pub(crate) delta: f64,
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
            .map(|n| crate::noise::in_bands(self.worse, n.band))
    }
}

/// The band if the measured spread were the true one: the same standard
/// error at the normal quantile of the same (Bonferroni-split) level,
/// instead of Student's t on the few degrees of freedom that measured it.
/// A bad move beyond it but inside `band` is open only because the spread
/// is poorly known (inconclusive); inside it, even the optimistic reading
/// of the spread calls it noise (pass).
pub(crate) fn plug_in_band(n: &Noise, looks: usize) -> f64 {
    n.band_at_normal_quantile() * crate::noise::t_quantile(f64::INFINITY, looks) / 1.96
}

/// The rule of the module doc, for one metric.
pub fn judge(policy: &Policy, base: &Observation, new: &Observation, prior: &Prior) -> Judgement {
    let (b, x) = (base.value, new.value);
    let noise = moderated(base, new, prior);
    judge_with(policy, b, x, noise, prior.looks)
}

/// The rule of the module doc with the noise band already estimated: by
/// `moderated` for a check, by the per-round differences for `gate ab`
/// (`gate::paired`). One rule for both, so their floors, bands and
/// INCONCLUSIVE mean the same.
pub(crate) fn judge_with(
    policy: &Policy,
    b: f64,
    x: f64,
    noise: Option<Noise>,
    looks: usize,
) -> Judgement {
    let floor = (policy.relative * b.abs()).max(policy.absolute);
    let worse = match policy.direction {
        Direction::HigherIsBetter => b - x,
        Direction::LowerIsBetter => x - b,
        Direction::Neutral => 0.0,
    };
    let noise = noise.map(|n| n.within_range(crate::metrics::range(&policy.id)));
    // A change, floor or band that is not a finite number is never
    // "within tolerance" (issue 41.8): nothing can be said of its noise.
    let computable =
        worse.is_finite() && floor.is_finite() && noise.is_none_or(|n| n.band.is_finite());
    let (verdict, why) = if !policy.gated {
        (Verdict::Info, Why::NotGated)
    } else if !computable {
        (Verdict::Inconclusive, Why::NoNoiseEstimate)
    } else {
        match noise {
            Some(n) if worse > floor && worse > n.band => {
                (Verdict::Regression, Why::BeyondFloorAndNoise)
            }
            Some(n) if worse > floor && worse > plug_in_band(&n, looks) => {
                (Verdict::Inconclusive, Why::WithinNoise)
            }
            Some(_) if worse > floor => (Verdict::Pass, Why::WithinMeasuredNoise),
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

    /// Issue 41.8: no finite input makes a band, floor or change that is
    /// not a number read as "within tolerance".
    #[test]
    fn extreme_values_never_pass_as_within_tolerance() {
        let p = policy(Direction::LowerIsBetter, 0.01, 0.0);
        let base = obs(&[0.001, 0.00101], Some(1e-5));
        for new in [1e200, 1e300, f64::MAX] {
            let j = judge(&p, &base, &obs(&[new], Some(new / 10.0)), &Prior::default());
            assert_eq!(j.verdict, Verdict::Regression, "{new}: {j:?}");
            assert!(j.noise.unwrap().band.is_finite(), "{new}: {j:?}");
        }
        // Two sides at opposite ends of f64: the change itself is infinite.
        let p = policy(Direction::HigherIsBetter, 0.01, 0.0);
        let j = judge(
            &p,
            &obs(&[f64::MAX], None),
            &obs(&[-f64::MAX], None),
            &Prior::default(),
        );
        assert_eq!(j.verdict, Verdict::Inconclusive, "{j:?}");
    }

    /// The three outcomes, with the default 1 % floor of a
    /// benchmark's own number and a three-run baseline.
    #[test]
    fn three_percent_slower_fails_with_little_noise_and_is_inconclusive_with_much() {
        let p = policy(Direction::HigherIsBetter, 0.01, 0.0);
        // 0.1 % run-to-run noise: 1000 +- 1.
        let quiet = obs(&[999.0, 1000.0, 1001.0], None);
        let j = judge(&p, &quiet, &obs(&[970.0], None), &Prior::default());
        assert_eq!(j.verdict, Verdict::Regression, "{j:?}");
        assert_eq!(j.noise.unwrap().source, NoiseSource::RunToRun);
        // 3 % run-to-run noise: the same 3 % drop is inside the measured
        // spread itself (plug-in band 1.96 * 30 * sqrt(4/3) = 68): a pass.
        let noisy = obs(&[970.0, 1000.0, 1030.0], None);
        let j = judge(&p, &noisy, &obs(&[970.0], None), &Prior::default());
        assert_eq!(j.verdict, Verdict::Pass, "{j:?}");
        assert_eq!(j.why, Why::WithinMeasuredNoise);
        // A 9 % drop clears the plug-in band (68) but not t(2)'s (149):
        // open only because two degrees of freedom know the spread poorly.
        let j = judge(&p, &noisy, &obs(&[910.0], None), &Prior::default());
        assert_eq!(j.verdict, Verdict::Inconclusive, "{j:?}");
        assert_eq!(j.why, Why::WithinNoise);
        assert!((plug_in_band(&j.noise.unwrap(), 1) - 67.9).abs() < 0.1);
        // A 20 % drop clears both.
        let j = judge(&p, &noisy, &obs(&[800.0], None), &Prior::default());
        assert_eq!(j.verdict, Verdict::Regression, "{j:?}");
    }

    #[test]
    fn a_one_third_drop_of_a_low_metric_fails() {
        // tensor_pct 14.6 -> 9.8 with a +-0.25 point interval: the 3 %
        // relative and 1 point absolute floors of a counter do not hide it.
        let mut p = policy(Direction::HigherIsBetter, 0.03, 1.0);
        p.first_class = false;
        let j = judge(
            &p,
            &obs(&[14.6], Some(0.25)),
            &obs(&[9.8], Some(0.25)),
            &Prior::default(),
        );
        assert_eq!(j.verdict, Verdict::Regression, "{j:?}");
        assert_eq!(j.noise.unwrap().source, NoiseSource::WithinRun);
        // 0.4 -> 0.2 is -50 % but 0.2 points: not news.
        let j = judge(
            &p,
            &obs(&[0.4], Some(0.01)),
            &obs(&[0.2], Some(0.01)),
            &Prior::default(),
        );
        assert_eq!(j.verdict, Verdict::Pass);
    }

    #[test]
    fn nothing_is_a_regression_without_a_noise_estimate() {
        let p = policy(Direction::LowerIsBetter, 0.01, 0.0);
        // Wall time against a one-run baseline: measured once per run.
        let j = judge(
            &p,
            &obs(&[15.0], None),
            &obs(&[22.0], None),
            &Prior::default(),
        );
        assert_eq!(j.verdict, Verdict::Inconclusive);
        assert_eq!(j.why, Why::NoNoiseEstimate);
        assert!(j.z().is_none());
        // Within the floor it simply passes.
        let j = judge(
            &p,
            &obs(&[15.0], None),
            &obs(&[15.1], None),
            &Prior::default(),
        );
        assert_eq!(j.verdict, Verdict::Pass);
        // An explicit user threshold decides on its own.
        let mut explicit = p.clone();
        explicit.explicit = true;
        explicit.relative = 0.05;
        let j = judge(
            &explicit,
            &obs(&[15.0], None),
            &obs(&[22.0], None),
            &Prior::default(),
        );
        assert_eq!(j.verdict, Verdict::Regression);
        assert_eq!(j.why, Why::BeyondExplicitThreshold);
    }

    #[test]
    fn repeated_new_runs_give_a_noise_estimate_to_a_one_run_baseline() {
        let p = policy(Direction::HigherIsBetter, 0.01, 0.0);
        // --confirm: three new runs, their spread is the estimate.
        let j = judge(
            &p,
            &obs(&[1000.0], None),
            &obs(&[949.0, 950.0, 951.0], None),
            &Prior::default(),
        );
        assert_eq!(j.verdict, Verdict::Regression, "{j:?}");
        assert_eq!(j.noise.unwrap().df, Some(2.0));
        // The nodes of one run are not repeats: no estimate from them.
        let nodes = obs(&[949.0, 950.0, 951.0], None).nodes();
        assert!(noise(&obs(&[1000.0], None), &nodes).is_none());
    }

    #[test]
    fn improvements_need_the_noise_too_and_ungated_metrics_are_info() {
        let p = policy(Direction::HigherIsBetter, 0.01, 0.0);
        let base = obs(&[100.0, 101.0, 99.0], None);
        assert_eq!(
            judge(&p, &base, &obs(&[120.0], None), &Prior::default()).verdict,
            Verdict::Improvement
        );
        assert_eq!(
            judge(&p, &base, &obs(&[102.0], None), &Prior::default()).verdict,
            Verdict::Pass
        );
        let mut off = p.clone();
        off.gated = false;
        assert_eq!(
            judge(&off, &base, &obs(&[10.0], None), &Prior::default()).verdict,
            Verdict::Info
        );
    }

    #[test]
    fn within_run_noise_is_used_when_it_is_larger_than_the_spread() {
        // Two runs that happen to agree exactly do not make a noisy metric
        // quiet: each run's own interval still counts.
        let p = policy(Direction::HigherIsBetter, 0.0, 0.0);
        let base = obs(&[50.0, 50.0], Some(4.0));
        let n = noise(&base, &obs(&[47.0], Some(4.0))).unwrap();
        assert_eq!(n.source, NoiseSource::Moderated);
        assert!(n.band > 3.0, "{n:?}");
        // -3 is inside the measured spread itself (plug-in band 4.9): a
        // pass; -6 is beyond it but inside t(3.7)'s band (7.3): open.
        let j = judge(&p, &base, &obs(&[47.0], Some(4.0)), &Prior::default());
        assert_eq!(
            (j.verdict, j.why),
            (Verdict::Pass, Why::WithinMeasuredNoise)
        );
        assert_eq!(
            judge(&p, &base, &obs(&[44.0], Some(4.0)), &Prior::default()).verdict,
            Verdict::Inconclusive
        );
    }

    /// Issue 17: a two-run baseline gave t(1) = 12.7 and a -35 % drop
    /// passed as "inconclusive". The within-run prior (worth `PRIOR_DF`
    /// runs) makes it a regression; without any within-run estimate the
    /// history's healthy runs do.
    #[test]
    fn a_large_drop_against_two_baseline_runs_is_a_regression() {
        let p = policy(Direction::HigherIsBetter, 0.01, 0.0);
        let base = obs(&[1000.0, 1030.0], Some(20.0));
        let j = judge(&p, &base, &obs(&[700.0], Some(20.0)), &Prior::default());
        assert_eq!(j.verdict, Verdict::Regression, "{j:?}");
        assert_eq!(j.noise.unwrap().source, NoiseSource::Moderated);
        // Measured once per run (no interval): t(1) leaves it open...
        let once = obs(&[1000.0, 1030.0], None);
        let j = judge(&p, &once, &obs(&[700.0], None), &Prior::default());
        assert_eq!(j.verdict, Verdict::Inconclusive, "{j:?}");
        // ... until the history's healthy runs say how much it moves.
        let history = Prior {
            history: Some((20.0f64.powi(2), 9.0)),
            looks: 1,
        };
        let j = judge(&p, &once, &obs(&[700.0], None), &history);
        assert_eq!(j.verdict, Verdict::Regression, "{j:?}");
        assert_eq!(j.noise.unwrap().df, Some(10.0));
    }

    #[test]
    fn more_looks_widen_the_band_bonferroni() {
        let base = obs(&[1000.0, 1010.0, 990.0], None);
        let new = obs(&[950.0], None);
        let one = moderated(&base, &new, &Prior::default()).unwrap();
        let three = moderated(
            &base,
            &new,
            &Prior {
                history: None,
                looks: 3,
            },
        )
        .unwrap();
        assert!(
            (one.band / three.band - 4.303 / 7.649).abs() < 0.01,
            "{one:?} {three:?}"
        );
    }
}
