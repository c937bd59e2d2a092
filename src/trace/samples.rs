//! A set of sample indices as sorted, disjoint ranges. The steady window
//! is warm-up first and teardown last, so usually one range: a handful of
//! ranges instead of 8 bytes a sample, which grew with the trace's length
//! (issue 44.2). `Flags`: a flag a sample (warm-up), kept the same way.

use std::ops::Range;

/// Sample indices, ascending, kept as maximal runs of consecutive ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Samples {
    ranges: Vec<Range<usize>>,
    len: usize,
}

/// The consecutive samples of one range.
impl From<Range<usize>> for Samples {
    fn from(r: Range<usize>) -> Samples {
        let len = r.len();
        let ranges = if len > 0 { vec![r] } else { Vec::new() };
        Samples { ranges, len }
    }
}

impl Samples {
    /// The samples of `0..n` that `keep` accepts.
    pub fn matching(n: usize, mut keep: impl FnMut(usize) -> bool) -> Samples {
        let mut out = Samples::default();
        (0..n).filter(|&i| keep(i)).for_each(|i| out.push(i));
        out
    }

    /// The samples of `self` that `keep` accepts.
    pub fn filter(&self, mut keep: impl FnMut(usize) -> bool) -> Samples {
        let mut out = Samples::default();
        self.iter().filter(|&i| keep(i)).for_each(|i| out.push(i));
        out
    }

    /// Add sample `i`, which must be above every sample already in.
    pub fn push(&mut self, i: usize) {
        match self.ranges.last_mut() {
            Some(r) if r.end == i => r.end += 1,
            Some(r) => {
                assert!(i > r.end, "samples are added in ascending order");
                self.ranges.push(i..i + 1);
            }
            None => self.ranges.push(i..i + 1),
        }
        self.len += 1;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn clear(&mut self) {
        self.ranges.clear();
        self.len = 0;
    }

    pub fn first(&self) -> Option<usize> {
        self.ranges.first().map(|r| r.start)
    }

    pub fn last(&self) -> Option<usize> {
        self.ranges.last().map(|r| r.end - 1)
    }

    /// The runs of consecutive samples, ascending.
    pub fn ranges(&self) -> &[Range<usize>] {
        &self.ranges
    }

    /// Every sample, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.ranges.iter().flat_map(|r| r.clone())
    }

    pub fn contains(&self, i: usize) -> bool {
        let after = self.ranges.partition_point(|r| r.end <= i);
        self.ranges.get(after).is_some_and(|r| r.start <= i)
    }

    /// The samples in runs of at most `max` consecutive ones, in order:
    /// how a long column is read a block at a time.
    pub fn blocks(&self, max: usize) -> impl Iterator<Item = Range<usize>> + '_ {
        let max = max.max(1);
        self.ranges.iter().flat_map(move |r| {
            let end = r.end;
            r.clone().step_by(max).map(move |a| a..(a + max).min(end))
        })
    }
}

impl FromIterator<usize> for Samples {
    /// Ascending indices (a test's window, a filter's result).
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Samples {
        let mut out = Samples::default();
        iter.into_iter().for_each(|i| out.push(i));
        out
    }
}

/// A flag per sample (the warm-up flags), kept as the `Samples` that are
/// set: warm-up is the first samples of a run, so one range whatever the
/// trace's length, instead of a byte a sample (issue 44.2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    set: Samples,
    len: usize,
}

impl Flags {
    /// Add the next sample's flag.
    pub fn push(&mut self, flag: bool) {
        if flag {
            self.set.push(self.len);
        }
        self.len += 1;
    }

    pub fn extend_from_slice(&mut self, flags: &[bool]) {
        flags.iter().for_each(|&f| self.push(f));
    }

    /// Samples flagged.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The samples whose flag is set.
    pub fn set(&self) -> &Samples {
        &self.set
    }

    /// Whether any flag is set.
    pub fn any(&self) -> bool {
        !self.set.is_empty()
    }

    /// The first sample whose flag is clear.
    pub fn first_clear(&self) -> Option<usize> {
        let first = match self.set.ranges().first() {
            Some(r) if r.start == 0 => r.end,
            _ => 0,
        };
        (first < self.len).then_some(first)
    }

    /// Set every flag to `flag`.
    pub fn fill(&mut self, flag: bool) {
        let len = self.len;
        *self = Flags::default();
        (0..len).for_each(|_| self.push(flag));
    }

    /// Every flag, in order (as references, like a `Vec<bool>`'s).
    pub fn iter(&self) -> impl Iterator<Item = &'static bool> + '_ {
        let mut ranges = self.set.ranges().iter().peekable();
        (0..self.len).map(move |i| {
            while ranges.peek().is_some_and(|r| r.end <= i) {
                ranges.next();
            }
            if ranges.peek().is_some_and(|r| r.start <= i) {
                &true
            } else {
                &false
            }
        })
    }
}

impl std::ops::Index<usize> for Flags {
    type Output = bool;

    fn index(&self, i: usize) -> &bool {
        assert!(i < self.len, "flag {i} of {}", self.len);
        if self.set.contains(i) {
            &true
        } else {
            &false
        }
    }
}

impl<'a> IntoIterator for &'a Flags {
    type Item = &'static bool;
    type IntoIter = Box<dyn Iterator<Item = &'static bool> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl FromIterator<bool> for Flags {
    fn from_iter<I: IntoIterator<Item = bool>>(iter: I) -> Flags {
        let mut out = Flags::default();
        iter.into_iter().for_each(|f| out.push(f));
        out
    }
}

impl PartialEq<Vec<bool>> for Flags {
    fn eq(&self, other: &Vec<bool>) -> bool {
        self.len == other.len() && self.iter().zip(other).all(|(a, b)| a == b)
    }
}

#[cfg(test)]
mod tests {
    use super::{Flags, Samples};

    #[test]
    fn runs_of_consecutive_samples_are_one_range() {
        let s: Samples = [2, 3, 4, 7, 8, 10].into_iter().collect();
        assert_eq!(s.ranges(), &[2..5, 7..9, 10..11]);
        assert_eq!(s.len(), 6);
        assert_eq!((s.first(), s.last()), (Some(2), Some(10)));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![2, 3, 4, 7, 8, 10]);
        assert!(s.contains(3) && s.contains(10) && !s.contains(5) && !s.contains(11));
        assert!(!s.contains(0) && !s.contains(1));
        let blocks: Vec<_> = s.blocks(2).collect();
        assert_eq!(blocks, vec![2..4, 4..5, 7..9, 10..11]);
        assert_eq!(
            s.filter(|i| i % 2 == 0).ranges(),
            &[2..3, 4..5, 8..9, 10..11]
        );
        let e = Samples::matching(5, |_| false);
        assert!(e.is_empty() && e.first().is_none() && e.blocks(4).next().is_none());
        let tail = Samples::matching(5, |i| i > 0);
        assert_eq!(
            (tail.ranges().len(), tail.first(), tail.len()),
            (1, Some(1), 4)
        );
    }

    #[test]
    fn flags_read_back_as_pushed() {
        let given = vec![true, true, false, false, true, false];
        let f: Flags = given.iter().copied().collect();
        assert_eq!(f, given);
        assert_eq!(f.iter().copied().collect::<Vec<_>>(), given);
        assert!((0..6).all(|i| f[i] == given[i]));
        assert_eq!(f.set().ranges(), &[0..2, 4..5]);
        assert_eq!((f.len(), f.any(), f.first_clear()), (6, true, Some(2)));
        let none: Flags = [false, false].into_iter().collect();
        assert_eq!((none.any(), none.first_clear()), (false, Some(0)));
        let all: Flags = [true, true].into_iter().collect();
        assert_eq!(all.first_clear(), None);
        let mut g = f.clone();
        g.fill(false);
        assert_eq!(g, vec![false; 6]);
        assert!(Flags::default().is_empty() && Flags::default().first_clear().is_none());
    }
}
