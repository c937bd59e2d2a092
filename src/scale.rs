//! The bounds and ticks every chart is drawn with (the check page, the run
//! report, the history page): finite and ordered whatever the values, and a
//! bounded number of ticks. A value of f64::MAX made a span of infinity and
//! a tick loop that never ended (the check page grew past 3 GB); a value of
//! 1e200 made a history page panic on an unordered clamp (issue 41.1, 41.3).

/// The largest magnitude a scale reaches: a value beyond is drawn at the
/// edge. The span of two values within it is finite (2e307 < f64::MAX),
/// and so is that span padded by half of it.
pub const LIMIT: f64 = 1e307;

/// Most ticks an axis draws, whatever its step.
pub const MAX_TICKS: usize = 32;

/// `v` within +-`LIMIT` (NaN stays NaN: callers skip it).
pub fn clamp(v: f64) -> f64 {
    if v.is_nan() {
        v
    } else {
        v.clamp(-LIMIT, LIMIT)
    }
}

/// `(lo, hi)` made finite, within +-`LIMIT` and ordered with `lo < hi` by a
/// span a tick step can resolve (at least a millionth of the magnitude):
/// bounds that are not are padded around their middle; no finite bound at
/// all gives 0 to 1.
pub fn ordered(lo: f64, hi: f64) -> (f64, f64) {
    let (lo, hi) = (clamp(lo), clamp(hi));
    let (lo, hi) = match (lo.is_finite(), hi.is_finite()) {
        (true, true) => (lo.min(hi), lo.max(hi)),
        (true, false) => (lo, lo),
        (false, true) => (hi, hi),
        (false, false) => return (0.0, 1.0),
    };
    let least = (lo.abs().max(hi.abs()) * 1e-6).max(1e-300);
    if hi - lo >= least {
        return (lo, hi);
    }
    let mid = lo / 2.0 + hi / 2.0;
    let pad = (mid.abs() * 0.05)
        .max(least)
        .max(if mid == 0.0 { 1.0 } else { 0.0 });
    (clamp(mid - pad), clamp(mid + pad))
}

/// A "nice" step (1, 2, 2.5, 5 x 10^k) giving about `n` intervals of
/// `span`; always finite and positive.
pub fn nice_step(span: f64, n: f64) -> f64 {
    let raw = clamp(span / n.max(1.0)).max(f64::MIN_POSITIVE);
    if !raw.is_finite() {
        return 1.0;
    }
    let exp = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * exp)
        .find(|s| *s >= raw * 0.999_999)
        .unwrap_or(10.0 * exp)
}

/// The multiples of `step` from `from` to `to` (inclusive, a hair of slack),
/// at most `MAX_TICKS`: a step too small for the magnitude (adding it
/// leaves the value unchanged) still ends.
pub fn ticks(from: f64, to: f64, step: f64) -> Vec<f64> {
    if !(from.is_finite() && to.is_finite() && step.is_finite() && step > 0.0) {
        return Vec::new();
    }
    (0..MAX_TICKS)
        .map(|k| from + step * k as f64)
        .take_while(|v| *v <= to + step * 1e-6)
        .collect()
}

/// The extremes of f64 that are finite, and ordinary values: what every
/// renderer's property test draws.
#[cfg(test)]
pub(crate) const EXTREMES: [f64; 12] = [
    f64::MAX,
    -f64::MAX,
    1e308,
    1e200,
    -1e200,
    1e16,
    f64::MIN_POSITIVE,
    -f64::MIN_POSITIVE,
    5e-324,
    0.0,
    -0.0,
    1.0,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_of_extreme_values_gives_finite_ordered_bounds_and_few_ticks() {
        for &a in &EXTREMES {
            for &b in &EXTREMES {
                let (lo, hi) = ordered(a, b);
                assert!(
                    lo.is_finite() && hi.is_finite() && lo < hi,
                    "{a} {b}: {lo} {hi}"
                );
                assert!((hi - lo).is_finite(), "{a} {b}");
                let step = nice_step(hi - lo, 4.0);
                assert!(step.is_finite() && step > 0.0, "{a} {b}: {step}");
                let t = ticks(lo, hi, step);
                assert!(!t.is_empty() && t.len() <= MAX_TICKS, "{a} {b}: {t:?}");
            }
        }
        assert_eq!(ordered(f64::NAN, f64::NAN), (0.0, 1.0));
        // An infinity is drawn at the edge.
        let (lo, hi) = ordered(f64::NAN, f64::INFINITY);
        assert!(lo.is_finite() && hi == LIMIT && lo < hi, "{lo} {hi}");
        assert!(ticks(1e300, 1e300 * (1.0 + 1e-15), 1e-300).len() <= MAX_TICKS);
    }
}
