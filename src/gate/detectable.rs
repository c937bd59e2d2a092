//! What a baseline can see (issue 38.2): per gated metric, the smallest
//! change in the bad direction that this check would call a regression
//! 80 % of the time, its **minimum detectable effect** (MDE).
//!
//! For a difference of two means judged at a two-sided level `alpha` with
//! standard error `se` on `df` degrees of freedom, the effect detected with
//! power `1 - beta` is
//!
//! ```text
//! MDE = (t(1 - alpha/2, df) + t(1 - beta, df)) * se
//! ```
//!
//! (H. S. Bloom, "Minimum Detectable Effects: A Simple Way to Report the
//! Statistical Power of Experimental Designs", *Evaluation Review* 19(5),
//! 1995, pp. 547-556, eq. 1; J. Cohen, *Statistical Power Analysis for the
//! Behavioral Sciences*, 2nd ed., 1988, ch. 2). `se` and `df` are the
//! verdict's own (`noise::moderated`, the moderated variance of docs/gating.md
//! "The noise model"), and `t(1 - alpha/2)` is the verdict's quantile at its
//! Bonferroni-split level, so the MDE is what *this* check can see, not a
//! textbook ideal. A move must also clear the practical floor: when the MDE
//! exceeds it, changes between the two pass unseen, and the check says so.

use super::decide::Noise;
use super::report::MetricResult;
use crate::metrics::Direction;

/// Power at which the detectable change is stated.
pub const POWER: f64 = 0.80;

/// The MDE of a metric judged with this noise band (module doc).
pub fn minimum_detectable(noise: &Noise) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
    let q = 1.96 * noise.widening;
    let se = noise.band / q;
    let power_quantile = noise
        .df
        .filter(|d| d.is_finite() && *d > 0.0)
        .and_then(|d| StudentsT::new(0.0, 1.0, d).ok())
        .map(|t| t.inverse_cdf(POWER))
        .unwrap_or_else(|| Normal::new(0.0, 1.0).map_or(0.8416, |n| n.inverse_cdf(POWER)));
    (q + power_quantile) * se
}

/// The MDE in words: `3.2 %` of the baseline, or in the unit.
fn amount(m: &MetricResult, v: f64) -> String {
    if m.unit == "%" {
        // A share of time moves in points, not in % of itself.
        return format!("{v:.2} points");
    }
    match m.baseline.filter(|b| *b != 0.0) {
        Some(b) => format!("{:.1} %", v / b.abs() * 100.0),
        None => crate::format::value_with_unit(Some(v), &m.unit),
    }
}

/// The gated run-level metrics (not per GPU or node) a check states the
/// MDE of.
fn stated(results: &[MetricResult]) -> impl Iterator<Item = &MetricResult> {
    results.iter().filter(|m| {
        m.gated
            && m.gpu.is_none()
            && m.node.is_none()
            && m.direction != Direction::Neutral
            && m.detectable.is_some()
    })
}

/// "samples_per_s 3.2 % (floor 1.0 %), ...": every gated metric's MDE,
/// the statement every check makes; None when nothing has one.
pub fn statement(results: &[MetricResult]) -> Option<String> {
    let parts: Vec<String> = stated(results)
        .map(|m| {
            format!(
                "{} {} (floor {})",
                m.shown_name(),
                amount(m, m.detectable.unwrap_or(0.0)),
                amount(m, m.tolerance.unwrap_or(0.0))
            )
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// The warning when a gated metric's MDE exceeds its floor (the default
/// or the user's threshold): smaller changes pass unseen. `spread` gives
/// the baseline runs' spread of a metric in % of their mean, when known.
pub fn blind_warning(
    baseline: &str,
    results: &[MetricResult],
    spread: impl Fn(&MetricResult) -> Option<f64>,
) -> Option<String> {
    let blind: Vec<String> = stated(results)
        .filter(|m| m.detectable.unwrap_or(0.0) > m.tolerance.unwrap_or(0.0))
        .map(|m| {
            let apart = spread(m)
                .map(|s| format!(", its baseline runs {s:.1} % apart"))
                .unwrap_or_default();
            format!(
                "{}: {} or more (floor {}{apart})",
                m.shown_name(),
                amount(m, m.detectable.unwrap_or(0.0)),
                amount(m, m.tolerance.unwrap_or(0.0)),
            )
        })
        .collect();
    (!blind.is_empty()).then(|| format!(
        "baseline '{baseline}' cannot see changes as small as its floor: the smallest slowdown this check catches (95 % confidence, {1:.0} % power) is {0}; a smaller one passes unseen. Fix: capture more runs (gate capture --runs 10), judge a steadier statistic the harness offers (cpu_time, a per-step mean), compare both versions on one runner (gate ab), or use a quieter runner",
        blind.join("; "),
        POWER * 100.0
    ))
}

/// `gate capture`'s warnings: each gated metric whose kept runs are so
/// far apart that a check of one new run against them could not see a
/// change of the metric's floor (its MDE exceeds the floor), with the
/// spread.
pub fn capture_warnings(
    b: &crate::baseline::Baseline,
    config: &crate::config::Config,
) -> Vec<String> {
    use crate::noise::{moderated, Observation, Prior};
    let mut out = Vec::new();
    for (id, m) in b
        .metrics
        .iter()
        .filter(|(_, m)| m.gated && m.runs.len() >= 2)
    {
        let (Some(base), Some(policy)) = (
            Observation::from_baseline(m, m.statistic),
            config.policy(id, None),
        ) else {
            continue;
        };
        // One new run like the baseline's first: what a plain check judges.
        let Some(new) = Observation::from_runs(&[(base.value, m.runs[0].ci95)]) else {
            continue;
        };
        let Some(noise) = moderated(&base, &new, &Prior::default()) else {
            continue;
        };
        let mde = minimum_detectable(&noise);
        let floor = (policy.relative * base.value.abs()).max(policy.absolute);
        if mde <= floor || base.value == 0.0 {
            continue;
        }
        let (lo, hi) = base
            .runs
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
                (l.min(*v), h.max(*v))
            });
        let rel = |v: f64| v / base.value.abs() * 100.0;
        out.push(format!(
            "the {} runs kept are too far apart on {id} ({}): {} to {}, a spread of {:.1} % of their mean; a check of one run against this baseline catches only a change of {:.1} % or more (floor {:.1} %, 95 % confidence, {:.0} % power). Capture more runs (--runs 10), judge a steadier statistic the harness offers (cpu_time, a per-step mean), use a quieter runner, or compare on one runner with gate ab",
            base.runs.len(),
            m.statistic.as_str(),
            crate::format::value_with_unit(Some(lo), &m.unit),
            crate::format::value_with_unit(Some(hi), &m.unit),
            rel(hi - lo),
            rel(mde),
            rel(floor),
            POWER * 100.0
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::decide::{moderated, Observation, Prior};

    /// Bloom's multiplier: with many degrees of freedom, 1.96 + 0.84 = 2.8
    /// standard errors (Bloom 1995, table 1).
    #[test]
    fn the_mde_is_2_8_standard_errors_with_a_well_known_spread() {
        let n = Noise {
            band: 1.96,
            source: crate::noise::NoiseSource::WithinRun,
            df: None,
            widening: 1.0,
        };
        assert!((minimum_detectable(&n) - 2.8016).abs() < 1e-3);
    }

    /// Three runs 26 % apart (the issue's Google Benchmark case): the MDE
    /// is far beyond the 1 % floor, so a 42 % slowdown can pass unseen.
    #[test]
    fn runs_a_quarter_apart_cannot_see_a_forty_percent_change() {
        let per = |v: &[f64]| {
            let p: Vec<(f64, Option<f64>)> = v.iter().map(|x| (*x, None)).collect();
            Observation::from_runs(&p).unwrap()
        };
        let base = per(&[1.00, 1.13, 1.26]);
        let new = per(&[1.60]);
        let n = moderated(&base, &new, &Prior::default()).unwrap();
        let mde = minimum_detectable(&n);
        assert!(mde > n.band, "MDE {mde} beyond the band {}", n.band);
        assert!(mde / 1.13 > 0.42, "MDE {:.0} %", mde / 1.13 * 100.0);
    }
}
