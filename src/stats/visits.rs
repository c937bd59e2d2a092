//! `MetricStats` of a series read in place, a block at a time, instead of
//! from a copy made beforehand: the memory is bounded whatever the series'
//! length (issue 44.2). The first pass copies the values while they fit
//! `COPY_BYTES`, and a series that fits (a day at 100 ms) has its
//! statistics computed in memory from that one read. A longer one is read
//! a few more times: the moments, then a radix selection of the order
//! statistics with a few tables of counters. The numbers are
//! `from_finite`'s, bit for bit: the sums add the same values in the same
//! order, and each order statistic is the same k-th smallest value.

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

/// Largest copy of a series `from_visits` makes: 8 MiB, two million values
/// as f32 (a GPU or host column of 55 hours at 100 ms) or a million as f64
/// (a mean over GPUs of 27 hours).
const COPY_BYTES: usize = 8 << 20;

/// Working memory of one `from_visits` (its copy, or its counter tables),
/// for `parallel::map_within`.
pub(crate) const VISIT_BYTES: usize = {
    let tables = MAX_RANKS * (1 << BITS) * std::mem::size_of::<usize>();
    if tables > COPY_BYTES {
        tables
    } else {
        COPY_BYTES
    }
};

/// Consecutive values of a series handed over at once: a column's own f32
/// values, or values computed on the way (a mean over GPUs). A visit hands
/// blocks, not single values, so the passes over a day of samples run as
/// loops, not one call per value.
#[derive(Clone, Copy)]
pub(crate) enum Block<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
}

impl Block<'_> {
    /// `f` of each value, in order, as f64.
    #[inline]
    pub(crate) fn for_each(self, mut f: impl FnMut(f64)) {
        match self {
            Block::F32(values) => values.iter().for_each(|&v| f(v as f64)),
            Block::F64(values) => values.iter().for_each(|&v| f(v)),
        }
    }
}

/// A series handed over a block at a time, in time order, the same blocks
/// at every call.
pub(crate) trait Visit: Fn(&mut dyn FnMut(Block<'_>)) {}
impl<F: Fn(&mut dyn FnMut(Block<'_>))> Visit for F {}

/// What the first pass kept of the finite values: a copy made with the
/// capacity the caller said it needs at most, so it never grows by
/// doubling (a growing copy of a day's values held up to three times its
/// size at once, per statistics job: +21 MB at 24 h on two threads).
enum Copied {
    /// Nothing handed over yet.
    Empty,
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// More than `COPY_BYTES` (or `most` says it would be).
    TooLong,
}

impl Copied {
    /// An empty copy of f32 values (`wide`: f64) for at most `most` values.
    fn with_room(most: usize, wide: bool) -> Copied {
        match wide {
            false if most <= COPY_BYTES / 4 => Copied::F32(Vec::with_capacity(most)),
            true if most <= COPY_BYTES / 8 => Copied::F64(Vec::with_capacity(most)),
            _ => Copied::TooLong,
        }
    }

    /// The finite values of `values` (`finite` of them): one copy of the
    /// block where it fits, value by value where it crosses a bound.
    fn extend_f32(&mut self, values: &[f32], finite: usize, most: usize) {
        if let Copied::Empty = self {
            *self = Copied::with_room(most, false);
        }
        match self {
            Copied::F32(c) if c.len() + finite <= COPY_BYTES / 4 => {
                if finite == values.len() {
                    c.extend_from_slice(values);
                } else {
                    c.extend(values.iter().copied().filter(|v| v.is_finite()));
                }
            }
            Copied::TooLong => {}
            _ => (values.iter().filter(|v| v.is_finite())).for_each(|&v| self.push_f32(v)),
        }
    }

    fn push_f32(&mut self, v: f32) {
        match self {
            Copied::F32(c) if c.len() < COPY_BYTES / 4 => c.push(v),
            Copied::F64(c) if c.len() < COPY_BYTES / 8 => c.push(v as f64),
            Copied::TooLong => {}
            _ => *self = Copied::TooLong,
        }
    }

    fn push_f64(&mut self, v: f64, most: usize) {
        match self {
            Copied::Empty => {
                *self = Copied::with_room(most, true);
                self.push_f64(v, most);
            }
            Copied::F32(c) if c.len() < COPY_BYTES / 8 => {
                let mut wide = Copied::with_room(most.max(c.len() + 1), true);
                if let Copied::F64(w) = &mut wide {
                    w.extend(c.iter().map(|&x| x as f64));
                    w.push(v);
                }
                *self = wide;
            }
            Copied::F64(c) if c.len() < COPY_BYTES / 8 => c.push(v),
            Copied::TooLong => {}
            _ => *self = Copied::TooLong,
        }
    }
}

impl MetricStats {
    /// `from_finite` of the finite values `visit` hands over, in order;
    /// `most`: how many values it hands over at most (the samples it
    /// reads), the room of the first pass's copy.
    pub(crate) fn from_visits(most: usize, visit: impl Visit) -> Option<MetricStats> {
        // `Iterator::sum`'s own starting value, so every sum is its bits.
        let zero: f64 = std::iter::empty::<f64>().sum();
        let (mut n, mut sum, mut single) = (0usize, zero, true);
        let mut copied = Copied::Empty;
        visit(&mut |block| match block {
            Block::F32(values) => {
                let before = n;
                for &v in values {
                    if v.is_finite() {
                        n += 1;
                        sum += v as f64;
                    }
                }
                copied.extend_f32(values, n - before, most);
            }
            Block::F64(values) => {
                for &v in values {
                    if v.is_finite() {
                        n += 1;
                        sum += v;
                        single &= v as f32 as f64 == v;
                        copied.push_f64(v, most);
                    }
                }
            }
        });
        match copied {
            Copied::F32(copy) if n >= COPY_BELOW => return Some(from_single_copy(copy, sum)),
            Copied::F32(copy) => {
                return Self::from_finite(copy.into_iter().map(|v| v as f64).collect())
            }
            Copied::F64(copy) if n >= COPY_BELOW && single => {
                let copy = copy.into_iter().map(|v| v as f32).collect();
                return Some(from_single_copy(copy, sum));
            }
            Copied::F64(copy) => return Self::from_finite(copy),
            Copied::Empty => return None,
            Copied::TooLong if n == 0 => return None,
            Copied::TooLong => {}
        }
        // Too many values for the first copy (or `most` said so before any
        // was read, though most may be missing): a copy of the `n` finite
        // ones where it fits, one more pass, the rest in memory.
        if single && n * std::mem::size_of::<f32>() <= COPY_BYTES {
            let mut copy: Vec<f32> = Vec::with_capacity(n);
            visit(&mut |block| {
                block.for_each(|v| {
                    if v.is_finite() {
                        copy.push(v as f32)
                    }
                })
            });
            if n < COPY_BELOW {
                return Self::from_finite(copy.into_iter().map(|v| v as f64).collect());
            }
            return Some(from_single_copy(copy, sum));
        }
        if n * std::mem::size_of::<f64>() <= COPY_BYTES {
            let mut copy: Vec<f64> = Vec::with_capacity(n);
            visit(&mut |block| {
                block.for_each(|v| {
                    if v.is_finite() {
                        copy.push(v)
                    }
                })
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
        visit(&mut |block| {
            block.for_each(|v| {
                if v.is_finite() {
                    ss += (v - mean).powi(2);
                    if let Some(b) = batch_sums.get_mut(j / len) {
                        *b += v;
                    }
                    j += 1;
                    first_level[(ordered_key(v) >> (64 - BITS)) as usize] += 1;
                }
            })
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
    // A batch's values at a time (no division per value); the values past
    // the last whole batch count in `ss` alone.
    for (j, chunk) in copy.chunks(len).enumerate() {
        let mut b = batch_sums.get(j).copied();
        for &v in chunk {
            let v = v as f64;
            ss += (v - mean).powi(2);
            if let Some(b) = b.as_mut() {
                *b += v;
            }
        }
        if let (Some(s), Some(b)) = (batch_sums.get_mut(j), b) {
            *s = b;
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
fn kth_finite_many(visit: &impl Visit, ranks: &[usize], first_level: Vec<usize>) -> Vec<f64> {
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
            visit(&mut |block| {
                block.for_each(|v| {
                    if !v.is_finite() {
                        return;
                    }
                    let key = ordered_key(v);
                    if let Some(g) = groups.iter().position(|p| key >> known == p >> known) {
                        tables[g][((key >> shift) & 0xFFFF) as usize] += 1;
                    }
                })
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
    visit: &impl Visit,
    wants: &[(usize, u64)],
    found: &[(u64, usize)],
    shift: u32,
) -> Vec<f64> {
    let mut keys: Vec<Vec<u64>> = found.iter().map(|f| Vec::with_capacity(f.1)).collect();
    visit(&mut |block| {
        block.for_each(|v| {
            if !v.is_finite() {
                return;
            }
            let key = ordered_key(v);
            if let Some(g) = found.iter().position(|f| key >> shift == f.0 >> shift) {
                keys[g].push(key);
            }
        })
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
            let visited =
                MetricStats::from_visits(series.len(), |f| f(Block::F64(&series))).unwrap();
            assert_eq!(bits(&copy), bits(&visited), "{:?}", &series[..4]);
        }
    }

    /// The same series handed over as f32 blocks of uneven sizes, and as
    /// f32 and f64 blocks mixed, give the bits of one f64 block.
    #[test]
    fn blocks_of_any_kind_and_size_give_the_same_bits() {
        let series: Vec<f32> = (0..180_000)
            .map(|i| match i % 7 {
                0 => f32::NAN,
                1 => -0.0,
                _ => ((i as f32) * 0.731).sin() * 300.0,
            })
            .collect();
        let wide: Vec<f64> = series.iter().map(|&v| v as f64).collect();
        let one = MetricStats::from_visits(wide.len(), |f| f(Block::F64(&wide))).unwrap();
        let uneven = MetricStats::from_visits(series.len(), |f| {
            let mut rest = &series[..];
            for size in [1, 1000, 65_536, 7].iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (block, tail) = rest.split_at((*size).min(rest.len()));
                f(Block::F32(block));
                rest = tail;
            }
        })
        .unwrap();
        let mixed = MetricStats::from_visits(series.len(), |f| {
            f(Block::F32(&series[..50_000]));
            f(Block::F64(&wide[50_000..120_000]));
            f(Block::F32(&series[120_000..]));
        })
        .unwrap();
        assert_eq!(bits(&one), bits(&uneven));
        assert_eq!(bits(&one), bits(&mixed));
    }

    /// Series longer than the first pass's copy: f64 values that are all
    /// f32 (the second copy as f32), f64 values that are not and f32 values
    /// past two million (the radix selection): `from_finite`'s bits.
    #[test]
    fn series_past_the_copy_give_the_copys_bits() {
        let single: Vec<f64> = (0..1_500_000u64)
            .map(|i| ((i * 7919) % 100_003) as f32 as f64 * 0.5)
            .collect();
        let wide: Vec<f64> = (0..1_200_000u64)
            .map(|i| (i as f64 * 0.001).sin() * 1e3 + 1e-9 * (i % 13) as f64)
            .collect();
        let long: Vec<f32> = (0..2_100_000u64)
            .map(|i| {
                if i % 11 == 0 {
                    f32::NAN
                } else {
                    ((i * 104_729) % 65_521) as f32 - 3e4
                }
            })
            .collect();
        for series in [&single, &wide] {
            let copy = MetricStats::from_finite(series.clone()).unwrap();
            let visited = MetricStats::from_visits(series.len(), |f| {
                series.chunks(100_000).for_each(|c| f(Block::F64(c)))
            })
            .unwrap();
            assert_eq!(bits(&copy), bits(&visited));
        }
        let copy = MetricStats::from_series(long.iter().map(|&v| v as f64)).unwrap();
        let visited = MetricStats::from_visits(long.len(), |f| {
            long.chunks(4096).for_each(|c| f(Block::F32(c)))
        })
        .unwrap();
        assert_eq!(bits(&copy), bits(&visited));
    }

    /// A long visit whose values are mostly missing (a counter read only
    /// at times over days): `most` rules the first copy out, the few
    /// finite values are copied on a second pass; none at all is None.
    #[test]
    fn mostly_missing_long_series_give_the_copys_bits() {
        let long = 3_000_000;
        // Values that are f32 (scale 1) take the f32 copy, the others f64.
        for (every, scale) in [(100_000, 1.0), (100_000, 0.1), (30, 1.0), (7, 0.1)] {
            let series: Vec<f64> = (0..long)
                .map(|i| {
                    if i % every == 0 {
                        (i % 1013) as f64 * scale
                    } else {
                        f64::NAN
                    }
                })
                .collect();
            let copy = MetricStats::from_series(series.iter().copied()).unwrap();
            let visited = MetricStats::from_visits(long, |f| {
                series.chunks(65_536).for_each(|c| f(Block::F64(c)))
            })
            .unwrap();
            assert_eq!(bits(&copy), bits(&visited), "one value in {every}");
        }
        let none = vec![f32::NAN; long];
        assert!(MetricStats::from_visits(long, |f| f(Block::F32(&none))).is_none());
    }

    #[test]
    fn short_and_empty_series_take_the_copy() {
        let short: Vec<f64> = (0..100).map(|i| i as f64).collect();
        let visited = MetricStats::from_visits(short.len(), |f| f(Block::F64(&short))).unwrap();
        assert_eq!(visited, MetricStats::from_finite(short.clone()).unwrap());
        assert!(MetricStats::from_visits(1, |f| f(Block::F64(&[f64::NAN]))).is_none());
    }
}
