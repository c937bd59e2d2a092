//! The closed sets a history row holds, typed: a run's verdict, a metric's
//! verdict, its direction and its statistic. They reuse the verdict module's
//! and the catalogue's enums (`RunVerdict`, `Verdict`, `Direction`,
//! `Statistic`); a capture adds one word, `captured` (`RowVerdict`).
//!
//! The databases keep TEXT columns holding exactly the words `as_str` gives
//! (`pass`, `higher_is_better`, `p95`, `captured`, ...), so rows written by
//! older binaries read back and rows written now are byte-identical. A word
//! this binary does not know (a newer gate, a foreign writer, a hand edit)
//! is not an error: it is kept verbatim as `Stored::Unknown`, shown and
//! serialised as it was, and never matches a known value (drift skips such
//! a metric, a listing prints the word).

use crate::gate::{RunVerdict, Verdict};
use crate::metrics::{Direction, Statistic};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A closed set of words: each value has one stored word, and a word reads
/// back to the value that wrote it (exactly: no aliases such as `median`).
pub trait Closed: Copy + PartialEq + 'static {
    /// The word stored in the database and shown to the user.
    fn word(self) -> &'static str;
    /// The value whose `word` is `s`, if any.
    fn from_word(s: &str) -> Option<Self>;
}

/// `Closed` for an enum with `ALL` and `as_str`.
macro_rules! closed {
    ($($t:ty),*) => {$(
        impl Closed for $t {
            fn word(self) -> &'static str {
                self.as_str()
            }
            fn from_word(s: &str) -> Option<Self> {
                <$t>::ALL.into_iter().find(|v| v.as_str() == s)
            }
        }
    )*};
}
closed!(Direction, Statistic, Verdict, RunVerdict);

/// The word a capture's run and metric rows hold as their verdict.
pub(crate) const CAPTURED: &str = "captured";

/// The verdict of a history row: a check's judgement (`V` is `RunVerdict`
/// for a run, `Verdict` for a metric), or `captured` for a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowVerdict<V> {
    Judged(V),
    Captured,
}

impl<V: Closed> Closed for RowVerdict<V> {
    fn word(self) -> &'static str {
        match self {
            RowVerdict::Judged(v) => v.word(),
            RowVerdict::Captured => CAPTURED,
        }
    }
    fn from_word(s: &str) -> Option<Self> {
        if s == CAPTURED {
            return Some(RowVerdict::Captured);
        }
        V::from_word(s).map(RowVerdict::Judged)
    }
}

/// A closed-set value as a history row holds it: a known value, or a word
/// this binary does not know, kept verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored<T> {
    Known(T),
    Unknown(String),
}

/// A run's verdict as stored (`pass`, `regression`, ..., `captured`).
pub type StoredRunVerdict = Stored<RowVerdict<RunVerdict>>;
/// A metric's verdict as stored (`pass`, `info`, ..., `captured`).
pub type StoredVerdict = Stored<RowVerdict<Verdict>>;
/// A metric's direction as stored (`higher_is_better`, ...).
pub type StoredDirection = Stored<Direction>;
/// A metric's judged statistic as stored (`mean`, `p95`, ...).
pub type StoredStatistic = Stored<Statistic>;

impl<T: Closed> Stored<T> {
    /// The stored word read back: known when it is one of `T`'s words.
    pub fn parse(s: &str) -> Self {
        match T::from_word(s) {
            Some(v) => Stored::Known(v),
            None => Stored::Unknown(s.to_string()),
        }
    }

    /// The word to store and show: the same as was read.
    pub fn as_str(&self) -> &str {
        match self {
            Stored::Known(v) => v.word(),
            Stored::Unknown(s) => s,
        }
    }

    /// The value, when the word is known.
    pub fn known(&self) -> Option<T> {
        match self {
            Stored::Known(v) => Some(*v),
            Stored::Unknown(_) => None,
        }
    }
}

impl<T: Closed> From<T> for Stored<T> {
    fn from(v: T) -> Self {
        Stored::Known(v)
    }
}

impl From<RunVerdict> for StoredRunVerdict {
    fn from(v: RunVerdict) -> Self {
        Stored::Known(RowVerdict::Judged(v))
    }
}

impl From<Verdict> for StoredVerdict {
    fn from(v: Verdict) -> Self {
        Stored::Known(RowVerdict::Judged(v))
    }
}

/// A word as read from a database or a file (`Stored::parse`).
impl<T: Closed> From<&str> for Stored<T> {
    fn from(s: &str) -> Self {
        Stored::parse(s)
    }
}

impl<T: Closed> PartialEq<T> for Stored<T> {
    fn eq(&self, other: &T) -> bool {
        self.known() == Some(*other)
    }
}

impl<V: Closed> PartialEq<V> for Stored<RowVerdict<V>> {
    fn eq(&self, other: &V) -> bool {
        self.known() == Some(RowVerdict::Judged(*other))
    }
}

impl<T: Closed> fmt::Display for Stored<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<T: Closed> Serialize for Stored<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de, T: Closed> Deserialize<'de> for Stored<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Stored::parse(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T: Closed + fmt::Debug>(all: &[T]) {
        for v in all {
            let w = v.word();
            assert_eq!(Stored::<T>::parse(w), Stored::Known(*v), "{w}");
            assert_eq!(Stored::Known(*v).as_str(), w);
        }
    }

    #[test]
    fn every_word_reads_back_to_the_value_that_wrote_it() {
        use RunVerdict as R;
        use Verdict as V;
        round_trips(&[
            Direction::HigherIsBetter,
            Direction::LowerIsBetter,
            Direction::Neutral,
        ]);
        round_trips(&[
            Statistic::Mean,
            Statistic::P5,
            Statistic::P50,
            Statistic::P95,
            Statistic::P99,
            Statistic::Max,
            Statistic::Min,
        ]);
        let metric = [
            V::Pass,
            V::Regression,
            V::Accepted,
            V::Improvement,
            V::Inconclusive,
            V::Missing,
            V::Info,
        ];
        round_trips(&metric.map(RowVerdict::Judged));
        let run = [
            R::Pass,
            R::Accepted,
            R::Inconclusive,
            R::Unmeasured,
            R::Regression,
            R::Invalid,
            R::Error,
        ];
        round_trips(&run.map(RowVerdict::Judged));
        round_trips(&[RowVerdict::<V>::Captured, RowVerdict::Captured]);
    }

    #[test]
    fn an_unknown_word_is_kept_verbatim_and_matches_nothing() {
        // `median` is an alias the baseline TOML accepts, never a stored word.
        for w in ["median", "Pass", "firing", ""] {
            let s = StoredStatistic::parse(w);
            assert_eq!(s, Stored::Unknown(w.to_string()));
            assert_eq!(s.to_string(), w);
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{w}\""));
        }
        let v = StoredVerdict::parse("vetoed");
        assert!(v != Verdict::Regression && v.known().is_none());
        let back: StoredVerdict = serde_json::from_str("\"vetoed\"").unwrap();
        assert_eq!(back, v);
        assert_eq!(StoredRunVerdict::parse("captured"), RowVerdict::Captured);
        let error: StoredRunVerdict = RunVerdict::Error.into();
        assert!(error == RunVerdict::Error && error != RunVerdict::Invalid);
        assert_eq!(error.as_str(), "error");
    }
}
