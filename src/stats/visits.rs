//! `MetricStats` of a long series read in place, a few passes over it,
//! instead of from a copy of its values: the memory is a few tables of
//! counters whatever the series' length (issue 44.2). The numbers are
//! `from_finite`'s, bit for bit: the sums add the same values in the same
//! order, and each order statistic is the same k-th smallest value, found
//! by radix selection instead of `select_nth_unstable`.

use super::{
    batch_ci95_of_means, from_ordered_key, interpolate, ordered_key, percentile_ranks, MetricStats,
    MIN_BATCH_LEN,
};

/// Below this many finite values a copy is small (512 KiB): the copy path
/// (`from_finite`) is taken, which also covers every series too short for
/// batch means.
const COPY_BELOW: usize = 1 << 16;

/// Bits of the key a selection pass fixes (`kth_finite` uses the same).
const BITS: u32 = 16;

/// The percentiles `from_finite` reports.
const PERCENTILES: [f64; 4] = [5.0, 50.0, 95.0, 99.0];

/// Most distinct ranks a selection looks for: min, max and two per
/// percentile.
const MAX_RANKS: usize = 2 + 2 * PERCENTILES.len();

/// Working memory of one `from_visits` (its counter tables, or the copy of
/// a short series), for `parallel::map_within`.
pub(crate) const VISIT_BYTES: usize = MAX_RANKS * (1 << BITS) * std::mem::size_of::<usize>();

impl MetricStats {
    /// `from_finite` of the finite values `visit` hands to its callback,
    /// in time order (the same values in the same order at every call).
    pub(crate) fn from_visits(visit: impl Fn(&mut dyn FnMut(f64))) -> Option<MetricStats> {
        // `Iterator::sum`'s own starting value, so every sum is its bits.
        let zero: f64 = std::iter::empty::<f64>().sum();
        let (mut n, mut sum, mut single) = (0usize, zero, true);
        visit(&mut |v| {
            if v.is_finite() {
                n += 1;
                sum += v;
                single &= v as f32 as f64 == v;
            }
        });
        if n >= COPY_BELOW && single && n * std::mem::size_of::<f32>() <= VISIT_BYTES {
            // Every value is an f32 (a GPU or host column; not a mean over
            // GPUs), and their copy as f32 fits the job's bytes: one pass
            // to copy, the rest in memory, instead of five passes.
            let mut copy: Vec<f32> = Vec::with_capacity(n);
            visit(&mut |v| {
                if v.is_finite() {
                    copy.push(v as f32)
                }
            });
            return Some(from_single_copy(copy, sum));
        }
        if n < COPY_BELOW {
            let mut copy = Vec::with_capacity(n);
            visit(&mut |v| {
                if v.is_finite() {
                    copy.push(v)
                }
            });
            return Self::from_finite(copy);
        }
        let mean = sum / n as f64;
        // `batch_means_ci95`'s batches: at least 4 of them at this length.
        let batches = ((n as f64).sqrt().floor() as usize).min(n / MIN_BATCH_LEN);
        let len = n / batches;
        let mut batch_sums = vec![zero; batches];
        let (mut ss, mut j) = (zero, 0usize);
        let mut first_level = vec![0usize; 1 << BITS];
        visit(&mut |v| {
            if v.is_finite() {
                ss += (v - mean).powi(2);
                if let Some(b) = batch_sums.get_mut(j / len) {
                    *b += v;
                }
                j += 1;
                first_level[(ordered_key(v) >> (64 - BITS)) as usize] += 1;
            }
        });
        let stdev = (ss / (n - 1) as f64).sqrt();
        let means: Vec<f64> = batch_sums.iter().map(|s| s / len as f64).collect();
        let ranks = wanted_ranks(n);
        let values = kth_finite_many(&visit, &ranks, first_level);
        Some(assemble(n, mean, stdev, &means, &ranks, &values))
    }
}

/// `from_finite` of `copy` (finite f32 values, at least `COPY_BELOW` of
/// them; `sum` their sum in order, as f64): the same bits. The sums add the
/// same f64 values in the same order as `from_visits`' passes; the order
/// statistics are selected among the f32 values, whose `total_cmp` order is
/// that of the same values as f64.
fn from_single_copy(mut copy: Vec<f32>, sum: f64) -> MetricStats {
    let zero: f64 = std::iter::empty::<f64>().sum();
    let n = copy.len();
    let mean = sum / n as f64;
    let batches = ((n as f64).sqrt().floor() as usize).min(n / MIN_BATCH_LEN);
    let len = n / batches;
    let mut batch_sums = vec![zero; batches];
    let mut ss = zero;
    for (j, &v) in copy.iter().enumerate() {
        let v = v as f64;
        ss += (v - mean).powi(2);
        if let Some(b) = batch_sums.get_mut(j / len) {
            *b += v;
        }
    }
    let stdev = (ss / (n - 1) as f64).sqrt();
    let means: Vec<f64> = batch_sums.iter().map(|s| s / len as f64).collect();
    let ranks = wanted_ranks(n);
    // Ascending ranks, each selected among the values not below the last.
    let mut values = Vec::with_capacity(ranks.len());
    let mut from = 0;
    for &r in &ranks {
        copy[from..].select_nth_unstable_by(r - from, |a, b| a.total_cmp(b));
        values.push(copy[r] as f64);
        from = r + 1;
    }
    assemble(n, mean, stdev, &means, &ranks, &values)
}

/// The ranks the statistics read: the least, the greatest and the two
/// neighbours of each percentile, ascending, each once.
fn wanted_ranks(n: usize) -> Vec<usize> {
    let mut ranks = vec![0, n - 1];
    for p in PERCENTILES {
        let (lo, hi) = percentile_ranks(n, p);
        ranks.extend([lo, hi]);
    }
    ranks.sort_unstable();
    ranks.dedup();
    ranks
}

/// The statistics from the moments, the batch means and the values at
/// `ranks` (`wanted_ranks`).
fn assemble(
    n: usize,
    mean: f64,
    stdev: f64,
    means: &[f64],
    ranks: &[usize],
    values: &[f64],
) -> MetricStats {
    let at = |r: usize| values[ranks.binary_search(&r).expect("every rank was selected")];
    let percentile = |p: f64| {
        let (lo, hi) = percentile_ranks(n, p);
        interpolate(n, p, at(lo), at(hi))
    };
    MetricStats {
        n,
        mean,
        stdev,
        min: at(0),
        p5: percentile(5.0),
        p50: percentile(50.0),
        p95: percentile(95.0),
        p99: percentile(99.0),
        max: at(n - 1),
        mean_ci95: Some(batch_ci95_of_means(means)),
    }
}

/// The `ranks`-th smallest finite values (0-based, `total_cmp` order) of
/// what `visit` hands over: `kth_finite`'s radix selection for several
/// ranks at once, one pass a level, one counter table per distinct prefix.
/// `first_level` holds the counts of the keys' top `BITS` bits.
fn kth_finite_many(
    visit: &impl Fn(&mut dyn FnMut(f64)),
    ranks: &[usize],
    first_level: Vec<usize>,
) -> Vec<f64> {
    // Each rank's (rank left within its prefix, prefix of the key).
    let mut wants: Vec<(usize, u64)> = ranks.iter().map(|&k| (k, 0)).collect();
    let mut tables = vec![first_level];
    let mut groups = vec![0u64];
    for level in 0..(64 / BITS) {
        let shift = 64 - BITS * (level + 1);
        let known = 64 - BITS * level;
        if level > 0 {
            groups = wants.iter().map(|w| w.1).collect();
            groups.dedup(); // ranks ascend, so equal prefixes are adjacent
            tables = vec![vec![0usize; 1 << BITS]; groups.len()];
            visit(&mut |v| {
                if !v.is_finite() {
                    return;
                }
                let key = ordered_key(v);
                if let Some(g) = groups.iter().position(|p| key >> known == p >> known) {
                    tables[g][((key >> shift) & 0xFFFF) as usize] += 1;
                }
            });
        }
        // Each distinct prefix now known and how many values have it.
        let mut found: Vec<(u64, usize)> = Vec::new();
        for want in &mut wants {
            let g = groups
                .iter()
                .position(|&p| p == want.1)
                .expect("every prefix has its table");
            let counts = &tables[g];
            let mut bucket = 0;
            while want.0 >= counts[bucket] {
                want.0 -= counts[bucket];
                bucket += 1;
            }
            want.1 |= (bucket as u64) << shift;
            if found.last().map(|f| f.0) != Some(want.1) {
                found.push((want.1, counts[bucket]));
            }
        }
        // Few values left with those prefixes and two levels or more to
        // go: one more pass copies them and sorts, instead of a pass (and
        // a zeroed table per prefix) for each level left.
        if shift >= 2 * BITS && found.iter().map(|f| f.1).sum::<usize>() <= FINISH_BELOW {
            return finish_by_copy(visit, &wants, &found, shift);
        }
    }
    wants.iter().map(|w| from_ordered_key(w.1)).collect()
}

/// Values a selection copies to finish (`finish_by_copy`): 512 KiB of
/// keys, within `VISIT_BYTES`.
const FINISH_BELOW: usize = 1 << 16;

/// The wanted values, each `want.0`-th smallest among the values whose key
/// starts with `want.1`'s bits above `shift` (`found`: those prefixes and
/// their counts, ascending): the keys of each prefix copied and sorted.
/// The same values as the selection's remaining levels (the k-th smallest
/// key of a prefix is one value, whichever way it is found).
fn finish_by_copy(
    visit: &impl Fn(&mut dyn FnMut(f64)),
    wants: &[(usize, u64)],
    found: &[(u64, usize)],
    shift: u32,
) -> Vec<f64> {
    let mut keys: Vec<Vec<u64>> = found.iter().map(|f| Vec::with_capacity(f.1)).collect();
    visit(&mut |v| {
        if !v.is_finite() {
            return;
        }
        let key = ordered_key(v);
        if let Some(g) = found.iter().position(|f| key >> shift == f.0 >> shift) {
            keys[g].push(key);
        }
    });
    keys.iter_mut().for_each(|k| k.sort_unstable());
    wants
        .iter()
        .map(|w| {
            let g = found
                .iter()
                .position(|f| f.0 == w.1)
                .expect("every prefix was copied");
            from_ordered_key(keys[g][w.0])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(s: &MetricStats) -> Vec<u64> {
        [s.mean, s.stdev, s.min, s.p5, s.p50, s.p95, s.p99, s.max]
            .iter()
            .chain(s.mean_ci95.as_ref())
            .map(|v| v.to_bits())
            .chain([s.n as u64])
            .collect()
    }

    /// Series long enough for the visiting path, with missing values,
    /// ties, negative values and signed zeros: the same bits as the copy.
    #[test]
    fn visits_give_the_copys_bits() {
        let cases: Vec<Vec<f64>> = vec![
            (0..200_000)
                .map(|i| ((i * 7919) % 1000) as f64 * 0.37 - 50.0)
                .collect(),
            (0..150_001)
                .map(|i| match i % 5 {
                    0 => f64::NAN,
                    1 => -0.0,
                    2 => 0.0,
                    _ => (i as f64).sin() * 1e6,
                })
                .collect(),
            (0..70_000)
                .map(|i| (i / 3000) as f32 as f64 / 3.0)
                .collect(),
            vec![42.5; 100_000],
            // f32 values (a GPU or host column): the f32 copy.
            (0..150_001)
                .map(|i| match i % 5 {
                    0 => f64::NAN,
                    1 => -0.0,
                    2 => 0.0,
                    _ => ((i as f64).sin() * 1e6) as f32 as f64,
                })
                .collect(),
            (0..300_000)
                .map(|i: u64| ((i * 7919) % 100_003) as f32 as f64 * 0.25 - 900.0)
                .collect(),
        ];
        for series in cases {
            let copy = MetricStats::from_series(series.iter().copied()).unwrap();
            let visited = MetricStats::from_visits(|f| series.iter().for_each(|&v| f(v))).unwrap();
            assert_eq!(bits(&copy), bits(&visited), "{:?}", &series[..4]);
        }
    }

    #[test]
    fn short_and_empty_series_take_the_copy() {
        let short: Vec<f64> = (0..100).map(|i| i as f64).collect();
        let visited = MetricStats::from_visits(|f| short.iter().for_each(|&v| f(v))).unwrap();
        assert_eq!(visited, MetricStats::from_finite(short.clone()).unwrap());
        assert!(MetricStats::from_visits(|f| f(f64::NAN)).is_none());
    }
}
