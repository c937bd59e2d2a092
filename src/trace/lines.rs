//! The benchmark's output lines of a loaded trace, compact: one text
//! buffer and the lines' ends, their times as `Times`. Kept as records
//! (a time and a `String` each) they took ~64 bytes a line beside the
//! spilled columns, growing with the trace's length (issue 44.2: a
//! benchmark printing a line a second adds ~6 bytes a sample at 100 ms).

use super::{OutputRecord, Times};

/// One output line, borrowed from `OutputLines`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line<'a> {
    pub t: f64,
    pub line: &'a str,
}

/// A trace's output lines, in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutputLines {
    times: Times,
    text: String,
    /// Each line's end in `text`.
    ends: Vec<usize>,
}

impl OutputLines {
    pub fn push(&mut self, o: OutputRecord) {
        self.times.push(o.t);
        self.text.push_str(&o.line);
        self.ends.push(self.text.len());
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Line `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<Line<'_>> {
        let end = *self.ends.get(i)?;
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p]);
        Some(Line {
            t: self.times.at(i),
            line: &self.text[start..end],
        })
    }

    /// Every line, in order.
    pub fn iter(&self) -> impl Iterator<Item = Line<'_>> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        (self.times.iter().zip(starts.zip(&self.ends))).map(|(t, (a, &b))| Line {
            t,
            line: &self.text[a..b],
        })
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
}
