//! What `gate record` keeps of `--metrics-file` at the end of a run, and
//! why it may keep nothing. Owns the file's checks (a regular file, written
//! during this run, within the read limit) and the streaming reduction of
//! a large JSON file to the fields readers use.
//!
//! A file up to `limits::MAX_METRICS_FILE_BYTES` is kept verbatim. A larger
//! JSON file (pytest-benchmark keeps every round in `stats.data`: 5 MiB for
//! five tests, 50 MiB for fifty) is parsed as a stream and kept without its
//! long number arrays: each array keeps its first `KEPT_ARRAY_NUMBERS`
//! numbers, everything else stays. What is kept is bounded by
//! `MAX_METRICS_FILE_BYTES`, what is read by `MAX_METRICS_FILE_READ_BYTES`;
//! past either the run fails as an input error (exit 2) naming the limit.

use crate::limits::{MAX_METRICS_FILE_BYTES, MAX_METRICS_FILE_READ_BYTES};
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::cell::Cell;
use std::io::{BufReader, Read};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Numbers kept of one JSON array (per-round samples beyond are dropped).
pub(crate) const KEPT_ARRAY_NUMBERS: usize = 64;
/// A file whose time is this much before the run's start still counts as
/// written by it: Linux stamps files with a coarse clock (one tick, up to
/// 10 ms, behind the precise one the run's start is read from).
const MTIME_SLACK: Duration = Duration::from_millis(50);

/// A file whose time is this much after now still counts: a network file
/// server's clock may run a little ahead of this host's.
const FUTURE_SLACK: Duration = Duration::from_secs(60);

/// Why the metrics file gave nothing to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// Not there at the end of the run.
    Absent,
    /// Last written before the run started: an earlier run's number.
    Stale,
    /// Over the read limit, or more to keep than the kept limit.
    TooLarge,
    /// Not a regular file, or cannot be read.
    Unreadable,
    /// Over the kept size as text and not JSON, or JSON that does not parse.
    Malformed,
}

impl ProblemKind {
    /// The benchmark did not produce its number (exit 5); otherwise the
    /// input is wrong (exit 2).
    pub(crate) fn not_produced(self) -> bool {
        matches!(
            self,
            ProblemKind::Absent | ProblemKind::Stale | ProblemKind::Malformed
        )
    }
}

/// Why nothing of `--metrics-file` was kept (in the trace's end record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricsFileProblem {
    pub kind: ProblemKind,
    pub message: String,
}

fn problem(kind: ProblemKind, message: String) -> MetricsFileProblem {
    MetricsFileProblem { kind, message }
}

/// The text kept of the metrics file at `path`, which the run that started
/// at `run_start` should have written.
pub(crate) fn keep_metrics_file(
    path: &Path,
    run_start: SystemTime,
) -> Result<String, MetricsFileProblem> {
    let shown = crate::escape::terminal(&path.display().to_string());
    let file = match crate::files::open_real_input(path, MAX_METRICS_FILE_READ_BYTES) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(problem(
                ProblemKind::Absent,
                format!("the benchmark did not produce its number: --metrics-file '{shown}' does not exist after the run"),
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
            return Err(problem(
                ProblemKind::TooLarge,
                format!("--metrics-file '{shown}' {e} (the read limit, docs/limits.md); write a smaller file (pytest-benchmark: fewer rounds, --benchmark-max-time)"),
            ))
        }
        Err(e) => {
            return Err(problem(
                ProblemKind::Unreadable,
                format!("--metrics-file '{shown}' cannot be read: {e}; point --metrics-file at the regular file the benchmark writes (gate reads it once the benchmark has exited: a FIFO, socket or device has nothing left to read)"),
            ))
        }
    };
    let meta = file.metadata().map_err(|e| {
        problem(
            ProblemKind::Unreadable,
            format!("--metrics-file '{shown}': {e}"),
        )
    })?;
    if let Ok(written) = meta.modified() {
        if written + MTIME_SLACK < run_start {
            return Err(problem(
                ProblemKind::Stale,
                // Milliseconds: within one second the two times would read
                // alike ("13:12:29Z before 13:12:29Z").
                format!(
                    "the benchmark did not produce its number: --metrics-file '{shown}' was last written at {}, {}before this run started at {}; it is an earlier run's file (the benchmark did not write it, or --duration stopped it first)",
                    humantime::format_rfc3339_millis(written),
                    run_start
                        .duration_since(written)
                        .ok()
                        .filter(|gap| gap.as_secs() < 60)
                        .map(|gap| format!(
                            "{} ",
                            crate::format::value_with_unit(Some(gap.as_secs_f64()), "s")
                        ))
                        .unwrap_or_default(),
                    humantime::format_rfc3339_millis(run_start)
                ),
            ));
        }
        // Read when the run has ended: a time after now is not this run's
        // writing (a file touched into the future, a clock set back), and
        // would pass the check above on every later run (issue 41.8).
        let now = SystemTime::now();
        if written > now + FUTURE_SLACK {
            return Err(problem(
                ProblemKind::Stale,
                format!(
                    "the benchmark did not produce its number: --metrics-file '{shown}' was last written at {}, after this run ended at {}; a file from the future is not this run's (fix the clock or the file's time)",
                    crate::format::rfc3339_utc(written),
                    crate::format::rfc3339_utc(now)
                ),
            ));
        }
    }
    let mut reader = BufReader::with_capacity(
        1 << 20,
        crate::files::Capped::new(file, MAX_METRICS_FILE_READ_BYTES),
    );
    // At most the kept limit and a byte in memory: a file that grew past
    // it while being read goes on as a stream.
    let mut head = Vec::new();
    (&mut reader)
        .take(MAX_METRICS_FILE_BYTES + 1)
        .read_to_end(&mut head)
        .map_err(|e| {
            problem(
                ProblemKind::Unreadable,
                format!("--metrics-file '{shown}': {e}"),
            )
        })?;
    // Small files are kept verbatim: a regex reads the text as written.
    if head.len() as u64 <= MAX_METRICS_FILE_BYTES {
        return Ok(String::from_utf8_lossy(&head).into_owned());
    }
    reduce_json(
        &shown,
        BufReader::new(std::io::Cursor::new(head).chain(reader)),
    )
}

/// A large file: JSON (one document or JSON lines) without its long number
/// arrays, one compact document per line.
fn reduce_json(
    shown: &str,
    mut input: impl std::io::BufRead,
) -> Result<String, MetricsFileProblem> {
    let too_large = |what: String| {
        problem(
            ProblemKind::TooLarge,
            format!(
                "--metrics-file '{shown}' {what}; gate keeps at most {} of it (docs/limits.md): write only the numbers gate reads",
                crate::limits::bytes_text(MAX_METRICS_FILE_BYTES)
            ),
        )
    };
    let first = loop {
        let buf = input.fill_buf().map_err(|e| {
            problem(
                ProblemKind::Unreadable,
                format!("--metrics-file '{shown}': {e}"),
            )
        })?;
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => break Some(buf[i]),
            None if buf.is_empty() => break None,
            None => {
                let n = buf.len();
                input.consume(n);
            }
        }
    };
    if !matches!(first, Some(b'{') | Some(b'[')) {
        return Err(too_large(format!(
            "is over {} and not JSON",
            crate::limits::bytes_text(MAX_METRICS_FILE_BYTES)
        )));
    }
    let budget = Budget {
        left: Cell::new(MAX_METRICS_FILE_BYTES as usize),
    };
    let mut de = serde_json::Deserializer::from_reader(StringCap::new(input));
    let mut out = String::new();
    while de.end().is_err() {
        let doc = Prune(&budget).deserialize(&mut de).map_err(|e| {
            if budget.left.get() == 0 {
                too_large(format!(
                    "holds more than {} besides its per-round samples",
                    crate::limits::bytes_text(MAX_METRICS_FILE_BYTES)
                ))
            } else if e.is_io() && e.to_string().contains("limit") {
                too_large(e.to_string())
            } else {
                problem(
                    ProblemKind::Malformed,
                    format!("the benchmark did not produce its number: --metrics-file '{shown}' is not valid JSON: {e}"),
                )
            }
        })?;
        out.push_str(&doc.to_string());
        out.push('\n');
    }
    Ok(out)
}

/// Ends the stream at a JSON string (a key or a value) longer than the
/// kept limit: serde_json collects a string whole before a visitor can
/// charge it, so a 1 GB key peaked at 1.9 GB (issue 41.10); now at the
/// limit and a buffer.
struct StringCap<R> {
    inner: R,
    in_string: bool,
    escaped: bool,
    run: u64,
}

impl<R> StringCap<R> {
    fn new(inner: R) -> StringCap<R> {
        StringCap {
            inner,
            in_string: false,
            escaped: false,
            run: 0,
        }
    }
}

impl<R: Read> Read for StringCap<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &b in &buf[..n] {
            if !self.in_string {
                if b == b'"' {
                    (self.in_string, self.run) = (true, 0);
                }
                continue;
            }
            self.run += 1;
            match b {
                _ if self.escaped => self.escaped = false,
                b'\\' => self.escaped = true,
                b'"' => self.in_string = false,
                _ => {}
            }
            if self.run > MAX_METRICS_FILE_BYTES {
                return Err(std::io::Error::other(format!(
                    "holds a JSON string longer than the {} kept limit",
                    crate::limits::bytes_text(MAX_METRICS_FILE_BYTES)
                )));
            }
        }
        Ok(n)
    }
}

/// Bytes left to keep.
struct Budget {
    left: Cell<usize>,
}

impl Budget {
    fn charge<E: serde::de::Error>(&self, n: usize) -> Result<(), E> {
        match self.left.get().checked_sub(n) {
            Some(l) => {
                self.left.set(l);
                Ok(())
            }
            None => {
                self.left.set(0);
                Err(E::custom("kept limit"))
            }
        }
    }
}

/// Builds the kept `Value` of one document as it streams by.
#[derive(Clone, Copy)]
struct Prune<'a>(&'a Budget);

impl<'de> DeserializeSeed<'de> for Prune<'_> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// Per value: what a compact number or literal costs in the kept text.
const SCALAR_COST: usize = 24;

impl<'de> Visitor<'de> for Prune<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        self.0.charge(SCALAR_COST)?;
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        self.0.charge(SCALAR_COST)?;
        Ok(v.into())
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        self.0.charge(SCALAR_COST)?;
        Ok(v.into())
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        self.0.charge(SCALAR_COST)?;
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        self.0.charge(v.len() + 2)?;
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        self.0.charge(v.len() + 2)?;
        Ok(Value::String(v))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.0.charge(SCALAR_COST)?;
        Ok(Value::Null)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        let mut numbers = 0usize;
        while let Some(v) = seq.next_element_seed(Element(self.0))? {
            // Per-round samples: the first few numbers stay, the rest go.
            if v.is_number() {
                numbers += 1;
                if numbers > KEPT_ARRAY_NUMBERS {
                    continue;
                }
                self.0.charge::<A::Error>(SCALAR_COST)?;
            }
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            self.0.charge::<A::Error>(k.len() + 4)?;
            let v = map.next_value_seed(self)?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

/// Like `Prune`, but a number costs nothing until kept: an array element.
#[derive(Clone, Copy)]
struct Element<'a>(&'a Budget);

impl<'de> DeserializeSeed<'de> for Element<'_> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Element<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        Prune(self.0).visit_bool(v)
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        Prune(self.0).visit_str(v)
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        Prune(self.0).visit_string(v)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        Prune(self.0).visit_unit()
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        Prune(self.0).visit_unit()
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        Prune(self.0).visit_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        Prune(self.0).visit_map(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long_ago() -> SystemTime {
        SystemTime::UNIX_EPOCH
    }

    #[test]
    fn a_large_json_file_is_kept_without_its_long_number_arrays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        let data: Vec<String> = (0..200_000).map(|i| format!("{}.5e-6", i % 97)).collect();
        let text = format!(
            "{{\"benchmarks\": [{{\"name\": \"t\", \"stats\": {{\"mean\": 1.5, \"data\": [{}]}}}}], \"version\": \"5.1.0\"}}",
            data.join(", ")
        );
        assert!(text.len() as u64 > MAX_METRICS_FILE_BYTES);
        std::fs::write(&path, &text).unwrap();
        let kept = keep_metrics_file(&path, long_ago()).unwrap();
        assert!(kept.len() < 4096, "{} bytes kept", kept.len());
        let doc: Value = serde_json::from_str(&kept).unwrap();
        assert_eq!(doc["benchmarks"][0]["stats"]["mean"], 1.5);
        assert_eq!(
            doc["benchmarks"][0]["stats"]["data"]
                .as_array()
                .unwrap()
                .len(),
            KEPT_ARRAY_NUMBERS
        );
        assert_eq!(doc["version"], "5.1.0");
    }

    #[test]
    fn past_the_kept_limit_or_not_json_is_too_large_naming_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        // 2 MiB of names: nothing to drop.
        let names: Vec<String> = (0..40_000).map(|i| format!("\"{i:048}\"")).collect();
        std::fs::write(&path, format!("{{\"names\": [{}]}}", names.join(","))).unwrap();
        let p = keep_metrics_file(&path, long_ago()).unwrap_err();
        assert_eq!(p.kind, ProblemKind::TooLarge);
        assert!(p.message.contains("1 MiB"), "{}", p.message);
        std::fs::write(&path, "x=1\n".repeat(400_000)).unwrap();
        let p = keep_metrics_file(&path, long_ago()).unwrap_err();
        assert_eq!(p.kind, ProblemKind::TooLarge);
        assert!(p.message.contains("not JSON"), "{}", p.message);
        assert!(!p.kind.not_produced(), "an input error, exit 2");
    }

    #[test]
    fn a_string_past_the_kept_limit_ends_the_stream_before_it_is_held() {
        let key = std::io::repeat(b'k').take(64 << 20);
        let input = std::io::Cursor::new(b"{\"".to_vec())
            .chain(key)
            .chain(std::io::Cursor::new(b"\": 1}".to_vec()));
        let p = reduce_json("m.json", BufReader::new(input)).unwrap_err();
        assert_eq!(p.kind, ProblemKind::TooLarge);
        assert!(p.message.contains("JSON string longer"), "{}", p.message);
        // Escaped quotes stay inside the string; a short one passes.
        let ok = reduce_json("m.json", BufReader::new(&b"{\"a\\\"b\": [1, 2]}"[..])).unwrap();
        assert_eq!(ok.trim(), r#"{"a\"b":[1,2]}"#);
    }

    #[test]
    fn absent_stale_and_broken_files_are_not_this_runs_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        let p = keep_metrics_file(&path, long_ago()).unwrap_err();
        assert_eq!(p.kind, ProblemKind::Absent);
        std::fs::write(&path, "{\"a\": 1}").unwrap();
        let later = SystemTime::now() + Duration::from_secs(60);
        let p = keep_metrics_file(&path, later).unwrap_err();
        assert_eq!(p.kind, ProblemKind::Stale);
        assert!(
            p.message.contains("did not produce its number"),
            "{}",
            p.message
        );
        assert!(p.message.contains("last written at 20"), "{}", p.message);
        assert!(p.kind.not_produced());
        assert_eq!(keep_metrics_file(&path, long_ago()).unwrap(), "{\"a\": 1}");
        let broken = format!("{{\"a\": [{}", "1,".repeat(600_000));
        std::fs::write(&path, broken).unwrap();
        let p = keep_metrics_file(&path, long_ago()).unwrap_err();
        assert_eq!(p.kind, ProblemKind::Malformed, "{}", p.message);
    }
}
