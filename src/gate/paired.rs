//! `gate ab`'s paired verdict: A and B measured in alternating order on one
//! runner, one A run and one B run per round, judged on the per-round
//! differences `d_i = B_i - A_i` of each metric.
//!
//! # The interval (paired t)
//!
//! Drift of the machine (clocks, temperature, a neighbour that comes and
//! goes) moves both runs of a round alike, so it cancels in `d_i`; the
//! ABBA order (A B, B A, A B, ...) cancels a linear drift and the warm-up
//! of whichever runs first. The rounds' differences are then independent
//! and their mean is judged with Student's t on `n - 1` degrees of freedom:
//! the paired comparison design (D. C. Montgomery, *Design and Analysis of
//! Experiments*, 8th ed., Wiley 2013, section 2.5.1; Student 1908). The
//! half-width is `q * s_d / sqrt(n)`, `s_d` the standard deviation of the
//! `d_i`, `q` the `1 - 0.025 / looks` quantile of t.
//!
//! As in a check (`crate::noise`), a metric whose runs carry their own
//! within-run interval (sampled counters, a harness's rounds) has that
//! variance as a prior worth `PRIOR_DF` rounds (Smyth 2004, section 3),
//! and the variance of a difference is never taken below the sum of its
//! two runs' within-run variances. A number measured once per run with a
//! single round has no estimate: never a regression.
//!
//! # Early stopping (sequential, like `check --max-reruns`)
//!
//! The rounds are judged at fixed looks (`looks_at`): after every
//! complete ABBA block from the second on, and after the last round. Each
//! look tests at the Bonferroni-split level `0.05 / looks` (Jennison &
//! Turnbull, *Group Sequential Methods*, 2000, ch. 2), so stopping at the
//! first look that decides does not raise the false-alarm rate above the
//! nominal 2.5 % one-sided (a regression is one side of the 95 % band);
//! docs/gating.md has the measured rate.

use super::decide::{judge_with, Judgement, Noise, NoiseSource};
use crate::config::verdict::Policy;
use crate::noise::{t_quantile, PRIOR_DF, WITHIN_RUN_INFLATION};

/// Pairs before the first look: two ABBA blocks (3 degrees of freedom).
pub const FIRST_LOOK: usize = 4;

/// The rounds after which `gate ab` judges, for `rounds` rounds at most.
pub fn looks_at(rounds: usize) -> Vec<usize> {
    let mut at: Vec<usize> = (FIRST_LOOK..rounds).step_by(2).collect();
    at.push(rounds);
    at
}

/// One metric over the rounds of an A/B comparison: the rounds where both
/// runs have a finite value, each side's value and within-run interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Pairs {
    a: Vec<(f64, Option<f64>)>,
    b: Vec<(f64, Option<f64>)>,
}

/// A run's value of a metric and its 95 % within-run half-width.
pub type SideValue = (f64, Option<f64>);

impl Pairs {
    /// From each round's (A, B) values; rounds missing a side are left
    /// out. None with no complete round.
    pub fn new(
        rounds: impl IntoIterator<Item = (Option<SideValue>, Option<SideValue>)>,
    ) -> Option<Pairs> {
        let (a, b) = rounds
            .into_iter()
            .filter_map(|(a, b)| Some((a?, b?)))
            .filter(|(a, b)| a.0.is_finite() && b.0.is_finite())
            .unzip::<_, _, Vec<_>, Vec<_>>();
        (!a.is_empty()).then_some(Pairs { a, b })
    }

    /// Complete rounds.
    pub fn len(&self) -> usize {
        self.a.len()
    }

    pub fn is_empty(&self) -> bool {
        self.a.is_empty()
    }

    fn mean(side: &[(f64, Option<f64>)]) -> f64 {
        side.iter().map(|v| v.0).sum::<f64>() / side.len() as f64
    }

    /// Mean of A's values over the complete rounds.
    pub fn mean_a(&self) -> f64 {
        Self::mean(&self.a)
    }

    /// Mean of B's values over the complete rounds.
    pub fn mean_b(&self) -> f64 {
        Self::mean(&self.b)
    }

    /// Each round's `B - A`.
    pub fn differences(&self) -> Vec<f64> {
        self.a.iter().zip(&self.b).map(|(a, b)| b.0 - a.0).collect()
    }

    /// Mean within-run variance of one round's difference (None when any
    /// run lacks an interval).
    fn within_var(&self) -> Option<f64> {
        let var = |c: Option<f64>| {
            c.filter(|c| c.is_finite() && *c >= 0.0)
                .map(|c| (c / 1.96).powi(2))
        };
        let per: Option<Vec<f64>> = (self.a.iter().zip(&self.b))
            .map(|(a, b)| Some(var(a.1)? + var(b.1)?))
            .collect();
        per.map(|p| p.iter().sum::<f64>() / p.len() as f64)
    }
}

/// The 95 % half-width (Bonferroni-split over `looks`) of the mean
/// difference (module doc); None when nothing estimates it.
pub fn paired_noise(p: &Pairs, looks: usize) -> Option<Noise> {
    let d = p.differences();
    let n = d.len() as f64;
    let mean = d.iter().sum::<f64>() / n;
    let df_d = n - 1.0;
    let ss: f64 = d.iter().map(|x| (x - mean).powi(2)).sum();
    let w = p.within_var();
    let (s0, d0) = w.map_or((0.0, 0.0), |w| (WITHIN_RUN_INFLATION * w, PRIOR_DF));
    let df = d0 + df_d;
    if df <= 0.0 {
        return None;
    }
    let s2 = if df_d > 0.0 { ss / df_d } else { 0.0 };
    let var = ((d0 * s0 + df_d * s2) / df).max(w.unwrap_or(0.0));
    let q = t_quantile(df, looks);
    Some(Noise {
        band: q * (var / n).sqrt(),
        source: NoiseSource::Paired,
        df: Some(df),
        widening: q / 1.96,
    })
}

/// One metric's paired verdict: the rule of a check (`decide`), with A's
/// mean as the baseline and the paired band as the noise.
pub fn judge_paired(policy: &Policy, p: &Pairs, looks: usize) -> Judgement {
    judge_with(
        policy,
        p.mean_a(),
        p.mean_b(),
        paired_noise(p, looks),
        looks,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::Verdict;
    use crate::metrics::{Direction, Statistic};

    fn policy(rel: f64) -> Policy {
        Policy {
            id: "step_rate".into(),
            unit: "1/s".into(),
            direction: Direction::HigherIsBetter,
            statistic: Statistic::Mean,
            relative: rel,
            absolute: 0.0,
            gated: true,
            first_class: true,
            explicit: false,
        }
    }

    fn pairs(a: &[f64], b: &[f64]) -> Pairs {
        Pairs::new(
            a.iter()
                .zip(b)
                .map(|(a, b)| (Some((*a, None)), Some((*b, None)))),
        )
        .unwrap()
    }

    #[test]
    fn looks_are_every_block_from_the_second_and_the_last_round() {
        assert_eq!(looks_at(8), vec![4, 6, 8]);
        assert_eq!(looks_at(5), vec![4, 5]);
        assert_eq!(looks_at(3), vec![3]);
        assert_eq!(looks_at(4), vec![4]);
    }

    #[test]
    fn the_half_width_is_the_paired_t_interval() {
        // d = -10, -12, -8, -10: mean -10, s_d = 1.633, t(3) = 3.182:
        // half-width 3.182 * 1.633 / 2 = 2.598.
        let p = pairs(&[100.0, 101.0, 99.0, 100.0], &[90.0, 89.0, 91.0, 90.0]);
        let n = paired_noise(&p, 1).unwrap();
        assert!((n.band - 2.598).abs() < 0.01, "{n:?}");
        assert_eq!(n.source, NoiseSource::Paired);
        let j = judge_paired(&policy(0.01), &p, 1);
        assert_eq!(j.verdict, Verdict::Regression, "{j:?}");
    }

    #[test]
    fn drift_shared_by_a_round_cancels() {
        // Both sides slide 40 % over the rounds: unpaired, the spread
        // would swamp a 2 % drop; paired it is plain.
        let a = [100.0, 110.0, 120.0, 130.0, 140.0, 150.0];
        let b: Vec<f64> = a.iter().map(|v| v * 0.98).collect();
        let j = judge_paired(&policy(0.01), &pairs(&a, &b), 1);
        assert_eq!(j.verdict, Verdict::Regression, "{j:?}");
    }

    #[test]
    fn one_round_without_intervals_is_never_a_regression() {
        let p = pairs(&[100.0], &[50.0]);
        assert!(paired_noise(&p, 1).is_none());
        assert_eq!(
            judge_paired(&policy(0.01), &p, 1).verdict,
            Verdict::Inconclusive
        );
        // With within-run intervals the prior estimates it.
        let p = Pairs::new([(Some((100.0, Some(1.0))), Some((50.0, Some(1.0))))]).unwrap();
        assert_eq!(
            judge_paired(&policy(0.01), &p, 1).verdict,
            Verdict::Regression
        );
    }

    /// A small deterministic generator (xorshift64*), Box-Muller normals.
    struct Rng(u64);
    impl Rng {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            ((self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }
    }

    /// The sequential procedure of `gate ab` on identical A and B (the
    /// same distribution, a slow drift shared by both, ABBA order), with
    /// no practical floor (the worst case): how often it says REGRESSION.
    pub(crate) fn false_alarm_rate(seeds: u64, rounds: usize, heavy: bool) -> f64 {
        let p = policy(0.0);
        let looks = looks_at(rounds);
        let mut alarms = 0;
        for seed in 0..seeds {
            let mut rng =
                Rng(0x9E37_79B9_7F4A_7C15 ^ (seed + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9));
            let mut noise = || {
                let z = rng.normal();
                // Heavy tails: a normal scale mixture (1 run in 10 is 4x as noisy).
                if heavy && rng.uniform() < 0.1 {
                    4.0 * z
                } else {
                    z
                }
            };
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for round in 0..rounds {
                let drift = 0.5 * round as f64;
                a.push(100.0 + drift + 2.0 * noise());
                b.push(100.0 + drift + 2.0 * noise());
                if !looks.contains(&(round + 1)) {
                    continue;
                }
                let v = judge_paired(&p, &pairs(&a, &b), looks.len()).verdict;
                if v == Verdict::Regression {
                    alarms += 1;
                }
                if v != Verdict::Inconclusive {
                    break;
                }
            }
        }
        alarms as f64 / seeds as f64
    }

    /// docs/gating.md quotes these rates (`-- --nocapture` prints them):
    /// nominal 2.5 % one-sided.
    #[test]
    #[allow(clippy::print_stderr)]
    fn identical_sides_alarm_at_most_at_the_nominal_rate() {
        for (rounds, heavy) in [(8, false), (5, false), (8, true), (12, false)] {
            let rate = false_alarm_rate(20_000, rounds, heavy);
            eprintln!(
                "false alarms: rounds {rounds}, heavy tails {heavy}: {:.2} %",
                rate * 100.0
            );
            assert!(
                rate <= 0.025 + 0.003,
                "rounds {rounds} heavy {heavy}: {rate}"
            );
        }
    }
}
