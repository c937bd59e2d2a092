//! The benchmark's output lines of a loaded trace, compact: one text
//! buffer and the lines' ends, their times as `Times`. Kept as records
//! (a time and a `String` each) they took ~64 bytes a line beside the
//! spilled columns, growing with the trace's length (issue 44.2: a
//! benchmark printing a line a second adds ~6 bytes a sample at 100 ms).
//!
//! Past `IN_MEMORY_BYTES` (or `GATE_SPILL_MB`, when smaller: `0` spills
//! every line, which the tests use) further lines go to a scratch file
//! (`appended`), each a record of its time (f64), its length (u32) and
//! its text: what stays in memory is bounded whatever the trace's
//! length. Where no scratch file can be made the lines stay in memory.

use super::appended::Appended;
use super::{OutputRecord, Times};

/// Bytes of lines (text and ends) kept in memory before the rest spill.
const IN_MEMORY_BYTES: usize = 1 << 20;
/// A record's time and length.
const RECORD_HEAD: usize = 12;

/// One output line, borrowed from `OutputLines`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line<'a> {
    pub t: f64,
    pub line: &'a str,
}

/// A trace's output lines, in file order: the first in memory, the rest
/// (past `IN_MEMORY_BYTES`) in a scratch file.
#[derive(Default)]
pub struct OutputLines {
    times: Times,
    text: String,
    /// Each line's end in `text`.
    ends: Vec<usize>,
    /// Bytes in memory past which lines spill (None: `in_memory_bytes()`).
    limit: Option<usize>,
    spill: Option<Spill>,
}

/// `IN_MEMORY_BYTES`, or `GATE_SPILL_MB` when smaller.
fn in_memory_bytes() -> usize {
    IN_MEMORY_BYTES.min(super::spill_bytes())
}

impl OutputLines {
    pub fn push(&mut self, o: OutputRecord) {
        let limit = *self.limit.get_or_insert_with(in_memory_bytes);
        if self.spill.is_none() && self.text.len() + 8 * self.ends.len() + o.line.len() > limit {
            self.spill = Spill::new();
        }
        match &mut self.spill {
            Some(s) => s.push(o.t, &o.line),
            None => self.push_in_memory(o.t, &o.line),
        }
    }

    fn push_in_memory(&mut self, t: f64, line: &str) {
        self.times.push(t);
        self.text.push_str(line);
        self.ends.push(self.text.len());
    }

    pub fn len(&self) -> usize {
        self.ends.len() + self.spill.as_ref().map_or(0, |s| s.lines)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Line `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<Line<'_>> {
        let Some(&end) = self.ends.get(i) else {
            return self.iter().nth(i);
        };
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p]);
        Some(Line {
            t: self.times.at(i),
            line: &self.text[start..end],
        })
    }

    /// Every line, in order.
    pub fn iter(&self) -> impl Iterator<Item = Line<'_>> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        let in_memory = (self.times.iter().zip(starts.zip(&self.ends))).map(|(t, (a, &b))| Line {
            t,
            line: &self.text[a..b],
        });
        in_memory.chain(self.spill.iter().flat_map(Spill::iter))
    }

    /// Whether some lines are in a scratch file.
    pub fn is_spilled(&self) -> bool {
        self.spill.is_some()
    }

    /// Lines past `bytes` in memory spill (the tests' small limit).
    #[cfg(test)]
    fn spilling_past(bytes: usize) -> OutputLines {
        OutputLines {
            limit: Some(bytes),
            ..Default::default()
        }
    }
}

/// Lines after the ones in memory, as records in a scratch file.
struct Spill {
    file: Appended,
    lines: usize,
}

impl Spill {
    fn new() -> Option<Spill> {
        Some(Spill {
            file: Appended::new()?,
            lines: 0,
        })
    }

    fn push(&mut self, t: f64, line: &str) {
        self.file.push(&t.to_bits().to_le_bytes());
        self.file.push(&(line.len() as u32).to_le_bytes());
        self.file.push(line.as_bytes());
        self.file.end_record();
        self.lines += 1;
    }

    fn iter(&self) -> impl Iterator<Item = Line<'_>> + '_ {
        let mut parts = self.file.parts().into_iter();
        let mut rest: &[u8] = &[];
        std::iter::from_fn(move || {
            while rest.is_empty() {
                rest = parts.next()?;
            }
            let t = f64::from_bits(u64::from_le_bytes(rest[..8].try_into().ok()?));
            let n = u32::from_le_bytes(rest[8..RECORD_HEAD].try_into().ok()?) as usize;
            let text = &rest[RECORD_HEAD..RECORD_HEAD + n];
            rest = &rest[RECORD_HEAD + n..];
            self.file.note(RECORD_HEAD + n);
            let line = std::str::from_utf8(text).expect("output lines are written as UTF-8");
            Some(Line { t, line })
        })
    }
}

/// A clone holds its lines in memory (tests and synthetic edits clone
/// small traces).
impl Clone for OutputLines {
    fn clone(&self) -> OutputLines {
        let mut out = OutputLines {
            limit: Some(usize::MAX),
            ..Default::default()
        };
        self.iter().for_each(|l| out.push_in_memory(l.t, l.line));
        out
    }
}

impl PartialEq for OutputLines {
    fn eq(&self, other: &OutputLines) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for OutputLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputLines")
            .field("lines", &self.len())
            .field("spilled", &self.is_spilled())
            .finish()
    }
}

impl FromIterator<OutputRecord> for OutputLines {
    fn from_iter<I: IntoIterator<Item = OutputRecord>>(iter: I) -> OutputLines {
        let mut out = OutputLines::default();
        iter.into_iter().for_each(|o| out.push(o));
        out
    }
}

impl Line<'_> {
    /// The line as the format's record.
    pub fn to_record(self) -> OutputRecord {
        OutputRecord {
            t: self.t,
            line: self.line.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_back_as_given() {
        let given = [(100.28, "a"), (900.0, ""), (1900.0, "samples_per_s: 5")];
        let lines: OutputLines = (given.iter())
            .map(|&(t, l)| OutputRecord { t, line: l.into() })
            .collect();
        assert_eq!(lines.len(), 3);
        let back: Vec<(f64, &str)> = lines.iter().map(|l| (l.t, l.line)).collect();
        assert_eq!(back, given.to_vec());
        assert_eq!(lines.get(2).map(|l| l.line), Some("samples_per_s: 5"));
        assert!(lines.get(3).is_none() && !lines.is_empty());
    }

    #[test]
    fn spilled_lines_read_back_as_given() {
        // Past 100 bytes in memory, the rest in a scratch file: written
        // in several batches, one still pending, read twice (the pages
        // dropped on the way), equal to the lines all in memory.
        let given: Vec<OutputRecord> = (0..20_000)
            .map(|i| OutputRecord {
                t: i as f64 * 100.0 + 0.25,
                line: format!("step {i}: loss {}", 1.0 / (i + 1) as f64)
                    + if i % 7 == 0 { " é" } else { "" },
            })
            .collect();
        let mut lines = OutputLines::spilling_past(100);
        given.iter().cloned().for_each(|o| lines.push(o));
        assert!(lines.is_spilled() && lines.len() == given.len());
        for _ in 0..2 {
            let back: Vec<OutputRecord> = lines.iter().map(Line::to_record).collect();
            assert_eq!(back, given);
        }
        assert_eq!(
            lines.get(19_999).map(|l| l.line),
            Some(given[19_999].line.as_str())
        );
        assert_eq!(lines.get(1).map(|l| l.t), Some(100.25));
        assert!(lines.get(20_000).is_none());
        let memory: OutputLines = given.iter().cloned().collect();
        assert_eq!(lines, lines.clone());
        assert!(!lines.clone().is_spilled());
        assert_eq!(
            lines.iter().collect::<Vec<_>>(),
            memory.iter().collect::<Vec<_>>()
        );
        // By default lines past 1 MiB spill (docs/limits.md), unless
        // GATE_SPILL_MB says less.
        if crate::trace::spill_bytes() >= IN_MEMORY_BYTES && IN_MEMORY_BYTES == 1 << 20 {
            let kb = || OutputRecord {
                t: 0.0,
                line: "x".repeat(1000),
            };
            let mut m = OutputLines::default();
            (0..1000).for_each(|_| m.push(kb()));
            assert!(!m.is_spilled());
            (0..100).for_each(|_| m.push(kb()));
            assert!(m.is_spilled() && m.len() == 1100);
        }
        // A line pushed after a read is read too.
        lines.push(OutputRecord {
            t: 1e9,
            line: "last".into(),
        });
        assert_eq!(lines.iter().last().map(|l| l.line), Some("last"));
    }
}
