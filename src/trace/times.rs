//! The samples' times, compact: 8 bytes a sample was the largest thing a
//! long trace kept beside its spilled columns (issue 44.2). Times are
//! kept in blocks of `BLOCK`: a block's first time whole, the others as
//! steps from the one before, in whole units of 1, 10, 100 or 1000 µs
//! (the largest that divides them all), each coded as its difference
//! from the block's first step (zigzag varint). gate writes times rounded
//! (`round_value`: whole milliseconds from 1 s on), so a step at a
//! regular cadence, jitter within 63 units, is one byte. Every time decodes to the same bits: a
//! time is coded only when it is exactly its whole number of
//! microseconds divided by 1000 (a correctly rounded division gives the
//! value the parser gave); a block with any other time is kept whole.

/// Times a block holds; reading time `i` decodes at most this many steps.
const BLOCK: usize = 64;
/// Times beyond this many microseconds are kept whole (f64 integers are
/// exact to 2^53).
const MAX_EXACT_US: f64 = 9.0e15;

use super::appended::Appended;

/// Where one full block's times are.
#[derive(Debug, Clone)]
struct Block {
    first: f64,
    /// `first` in microseconds (coded blocks).
    first_us: i64,
    /// Microseconds a step counts; 0: the block is kept whole in `whole`.
    unit_us: u32,
    /// The block's first step (in units): each step is coded as its
    /// difference from it, so a regular cadence codes as zeros.
    stride: i64,
    /// Its first step's byte in `steps`, or its first time's index in `whole`.
    at: usize,
}

/// Times past which they go to a scratch file (`appended`), 8 bytes
/// each there and none in memory: coded they still took ~1.6 bytes a
/// sample, which grew with the trace's length (issue 44.2). 2^17 samples
/// are 3.6 h at 100 ms.
const SPILL_AT: usize = 1 << 17;

/// The times of a trace's samples, in order: coded in memory, or past
/// `SPILL_AT` in a scratch file (where none can be made, coded in memory).
#[derive(Default)]
pub struct Times {
    blocks: Vec<Block>,
    steps: Vec<u8>,
    whole: Vec<f64>,
    /// The last block while it fills, as given.
    tail: Vec<f64>,
    /// Every time, when they went to a scratch file.
    spill: Option<Appended>,
    /// Times past which they spill (None: `SPILL_AT`; `usize::MAX` once
    /// no scratch file could be made).
    spill_at: Option<usize>,
}

impl Times {
    pub fn len(&self) -> usize {
        match &self.spill {
            Some(f) => f.len() / 8,
            None => self.blocks.len() * BLOCK + self.tail.len(),
        }
    }

    /// Whether the times are in a scratch file.
    pub fn is_spilled(&self) -> bool {
        self.spill.is_some()
    }

    /// Times past `n` spill (the tests' small limit).
    #[cfg(test)]
    fn spilling_past(n: usize) -> Times {
        Times {
            spill_at: Some(n),
            ..Default::default()
        }
    }

    /// Move every time to a scratch file.
    fn start_spill(&mut self) {
        let Some(mut f) = Appended::new() else {
            self.spill_at = Some(usize::MAX);
            return;
        };
        for t in self.iter() {
            f.push(&t.to_bits().to_le_bytes());
            f.end_record();
        }
        *self = Times {
            spill: Some(f),
            spill_at: self.spill_at,
            ..Default::default()
        };
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Room for `more` times (the tail block only: steps vary in size).
    pub fn reserve(&mut self, more: usize) {
        if self.spill.is_none() {
            self.tail.reserve(more.min(BLOCK));
        }
    }

    pub fn push(&mut self, t: f64) {
        if let Some(f) = &mut self.spill {
            f.push(&t.to_bits().to_le_bytes());
            f.end_record();
            return;
        }
        self.tail.push(t);
        if self.tail.len() == BLOCK {
            self.seal();
            if self.len() >= self.spill_at.unwrap_or(SPILL_AT) {
                self.start_spill();
            }
        }
    }

    pub fn extend_from_slice(&mut self, times: &[f64]) {
        times.iter().for_each(|&t| self.push(t));
    }

    /// Time `i` (ms since the recording started).
    pub fn at(&self, i: usize) -> f64 {
        if let Some(f) = &self.spill {
            return f64::from_bits(u64::from_le_bytes(f.read::<8>(i * 8)));
        }
        let (b, k) = (i / BLOCK, i % BLOCK);
        let Some(block) = self.blocks.get(b) else {
            return self.tail[k];
        };
        if block.unit_us == 0 {
            return self.whole[block.at + k];
        }
        if k == 0 {
            return block.first;
        }
        let (mut us, mut pos) = (block.first_us, block.at);
        for _ in 0..k {
            let (step, next) = read_step(&self.steps, pos);
            us += (block.stride + step) * block.unit_us as i64;
            pos = next;
        }
        us as f64 / 1000.0
    }

    pub fn last(&self) -> Option<f64> {
        self.len().checked_sub(1).map(|i| self.at(i))
    }

    /// Every time, in order.
    pub fn iter(&self) -> impl Iterator<Item = f64> + '_ {
        self.range(0..self.len())
    }

    /// The times of samples `r`, in order, decoded from `r`'s first block.
    pub fn range(&self, r: std::ops::Range<usize>) -> Box<dyn Iterator<Item = f64> + '_> {
        if let Some(f) = &self.spill {
            let [a, b] = f.parts();
            let times = (a.chunks_exact(8).chain(b.chunks_exact(8))).map(|t| {
                f.note(8);
                f64::from_bits(u64::from_le_bytes(t.try_into().expect("8 bytes")))
            });
            return Box::new(times.skip(r.start).take(r.len()));
        }
        let first = (r.start / BLOCK).min(self.blocks.len());
        let sealed = self.blocks[first..]
            .iter()
            .flat_map(move |b| self.block_times(b));
        let skip = r.start - first * BLOCK;
        Box::new(
            sealed
                .chain(self.tail.iter().copied())
                .skip(skip)
                .take(r.len()),
        )
    }

    /// The first index whose time `below` rejects (times ascend).
    pub fn partition_point(&self, below: impl Fn(f64) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if below(self.at(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    pub fn to_vec(&self) -> Vec<f64> {
        self.iter().collect()
    }

    /// One sealed block's times, decoded in order.
    fn block_times<'a>(&'a self, b: &'a Block) -> Box<dyn Iterator<Item = f64> + 'a> {
        if b.unit_us == 0 {
            return Box::new(self.whole[b.at..b.at + BLOCK].iter().copied());
        }
        let (mut q, mut pos) = (b.first_us, b.at);
        let rest = (1..BLOCK).map(move |_| {
            let (step, next) = read_step(&self.steps, pos);
            pos = next;
            q += (b.stride + step) * b.unit_us as i64;
            q as f64 / 1000.0
        });
        Box::new(std::iter::once(b.first).chain(rest))
    }

    /// Code the full tail block.
    fn seal(&mut self) {
        let first = self.tail[0];
        let us: Option<Vec<i64>> = self.tail.iter().map(|&t| exact_us(t)).collect();
        let unit = us.as_ref().map(|us| {
            let steps = || us.windows(2).map(|w| w[1] - w[0]);
            [1000, 100, 10, 1]
                .into_iter()
                .find(|&u| steps().all(|s| s % u == 0))
                .unwrap_or(1)
        });
        match (us, unit) {
            (Some(us), Some(unit)) => {
                let at = self.steps.len();
                let stride = (us[1] - us[0]) / unit;
                for w in us.windows(2) {
                    write_step(&mut self.steps, (w[1] - w[0]) / unit - stride);
                }
                self.blocks.push(Block {
                    first,
                    first_us: us[0],
                    unit_us: unit as u32,
                    stride,
                    at,
                });
            }
            _ => {
                let at = self.whole.len();
                self.whole.extend_from_slice(&self.tail);
                self.blocks.push(Block {
                    first,
                    first_us: 0,
                    unit_us: 0,
                    stride: 0,
                    at,
                });
            }
        }
        self.tail.clear();
    }
}

/// `t` in whole microseconds, when that number over 1000 is `t`, bit for
/// bit (-0.0 is not: it is kept whole).
fn exact_us(t: f64) -> Option<i64> {
    let us = (t * 1000.0).round();
    if us.is_nan() || us.abs() >= MAX_EXACT_US {
        return None;
    }
    let us = us as i64;
    ((us as f64 / 1000.0).to_bits() == t.to_bits()).then_some(us)
}

fn write_step(out: &mut Vec<u8>, step: i64) {
    let mut z = ((step << 1) ^ (step >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// The step at byte `pos` and the byte after it.
fn read_step(steps: &[u8], mut pos: usize) -> (i64, usize) {
    let (mut z, mut shift) = (0u64, 0);
    loop {
        let b = steps[pos];
        pos += 1;
        z |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    (((z >> 1) as i64) ^ -((z & 1) as i64), pos)
}

impl FromIterator<f64> for Times {
    fn from_iter<I: IntoIterator<Item = f64>>(iter: I) -> Times {
        let mut out = Times::default();
        iter.into_iter().for_each(|t| out.push(t));
        out
    }
}

impl From<Vec<f64>> for Times {
    fn from(v: Vec<f64>) -> Times {
        v.into_iter().collect()
    }
}

/// A clone holds the same times (in a scratch file of its own when long).
impl Clone for Times {
    fn clone(&self) -> Times {
        let mut out = Times {
            spill_at: self.spill_at,
            ..Default::default()
        };
        self.iter().for_each(|t| out.push(t));
        out
    }
}

impl std::fmt::Debug for Times {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Times")
            .field("len", &self.len())
            .field("spilled", &self.is_spilled())
            .finish()
    }
}

/// The same times, bit for bit.
impl PartialEq for Times {
    fn eq(&self, other: &Times) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other.iter())
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

#[cfg(test)]
mod tests {
    use super::Times;

    #[test]
    fn every_time_decodes_to_its_own_bits() {
        let mut given: Vec<f64> = vec![0.0, 100.28, 200.5, 1000.0];
        given.extend((0..300).map(|i| 1100.0 + 100.0 * i as f64 + (i % 7) as f64));
        // Sub-microsecond, jittered and huge times: kept whole.
        given.extend((0..70).map(|i| 40000.0 + i as f64 * 99.9999 + 1e-7));
        given.extend((0..70).map(|i| 50000.0 + i as f64 * 0.001));
        given.extend((0..70).map(|i| 1e14 + i as f64 * 1e3));
        given.push(2.0e15);
        given.extend([-0.0; 70]);
        let t: Times = given.iter().copied().collect();
        assert_eq!(t.len(), given.len());
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&t.to_vec()), bits(&given));
        for (i, g) in given.iter().enumerate() {
            assert_eq!(t.at(i).to_bits(), g.to_bits(), "time {i}");
        }
        assert_eq!(t.last(), given.last().copied());
        // A regular 100 ms cadence costs about a byte a time.
        let r: Times = (0..6400).map(|i| 1000.0 + 100.0 * i as f64).collect();
        assert!(r.steps.len() <= 6400 && r.whole.is_empty());
        assert_eq!(r.partition_point(|x| x < 1250.0), 3);
        let some: Vec<f64> = r.range(130..200).collect();
        assert_eq!(
            some,
            (130..200)
                .map(|i| 1000.0 + 100.0 * i as f64)
                .collect::<Vec<_>>()
        );
        assert_eq!(r, (0..6400).map(|i| 1000.0 + 100.0 * i as f64).collect());
    }

    #[test]
    fn spilled_times_read_back_bit_for_bit() {
        // Past 128 times they go to a scratch file: the same bits through
        // every reader, in several writes and one still pending.
        let given: Vec<f64> = (0..50_000)
            .map(|i| {
                1100.0 + 100.0 * i as f64 + (i % 7) as f64 + if i % 11 == 0 { 1e-7 } else { 0.0 }
            })
            .collect();
        let mut t = Times::spilling_past(128);
        given.iter().for_each(|&x| t.push(x));
        assert!(t.is_spilled() && t.len() == given.len());
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&t.to_vec()), bits(&given));
        for i in (0..given.len()).step_by(97).chain([0, 49_999]) {
            assert_eq!(t.at(i).to_bits(), given[i].to_bits(), "time {i}");
        }
        let some: Vec<f64> = t.range(130..40_000).collect();
        assert_eq!(bits(&some), bits(&given[130..40_000]));
        assert_eq!(t.partition_point(|x| x < given[777]), 777);
        assert_eq!(t.last(), given.last().copied());
        let short: Times = given[..100].iter().copied().collect();
        assert!(!short.is_spilled());
        assert_eq!(t, t.clone());
        assert_eq!(t, given.into_iter().collect());
        // By default, from 2^17 times on (docs/limits.md).
        let cadence = |n: usize| (0..n).map(|i| i as f64 * 100.0).collect::<Times>();
        assert!(!cadence(super::SPILL_AT - 1).is_spilled());
        assert!(cadence(super::SPILL_AT).is_spilled() && super::SPILL_AT == 1 << 17);
    }
}
