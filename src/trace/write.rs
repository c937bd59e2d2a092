//! Writing a trace: `TraceWriter` appends records to `PATH.partial`
//! (zstd-compressed when the path ends in `.zst`) and renames it onto
//! `PATH` when the recording ends.
//!
//! The writer flushes at least once a second and writes to `PATH.partial`,
//! renaming onto `PATH` only when the recording ends: a crash leaves a
//! readable `.partial` prefix (all but the last second at most) and never
//! replaces a good trace.

use crate::error::GateError;
use crate::files;
use crate::trace::format::{is_compressed_path, EndRecord, Header, Record, SampleRecord};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// zstd level for `.jsonl.zst` traces: level 3 (zstd's default) compresses
/// real traces ~8x at a few tens of microseconds per sampling tick.
const ZSTD_LEVEL: i32 = 3;

/// Round to a few significant decimals so traces stay small and diffs stable.
pub(crate) fn round_value(v: f64) -> f64 {
    if !v.is_finite() {
        return v;
    }
    let v = v + 0.0; // -0.0 -> 0.0
    let a = v.abs();
    let scale = if a >= 1000.0 {
        1.0
    } else if a >= 10.0 {
        100.0
    } else {
        1000.0
    };
    (v * scale).round() / scale
}

/// Incremental trace writer. Writes `PATH.partial`, flushes on `flush` (the
/// recorder calls it at most once a second), and renames onto `PATH` in
/// `finish`.
pub(crate) struct TraceWriter {
    out: Sink,
    partial: PathBuf,
    final_path: PathBuf,
    /// One sample line, built here and reused (`write_sample_line`).
    line: Vec<u8>,
}

/// A sample record as one JSON line, byte for byte what `serde_json` writes
/// for `Record::Sample` (field order, `w` only when true, `null` for a
/// missing or non-finite value, numbers through serde_json's own float
/// formatter), into `buf` (cleared first). The recorder writes one per tick:
/// no serde machinery and no allocation once `buf` has grown.
/// `tests::sample_lines_match_serde` holds it to serde's bytes.
pub(crate) fn write_sample_line(buf: &mut Vec<u8>, s: &SampleRecord) {
    fn number(buf: &mut Vec<u8>, v: f64) {
        use serde_json::ser::{CompactFormatter, Formatter};
        if v.is_finite() {
            // Writing into a Vec cannot fail.
            let _ = CompactFormatter.write_f64(buf, v);
        } else {
            buf.extend_from_slice(b"null");
        }
    }
    fn values(buf: &mut Vec<u8>, vs: &[Option<f64>]) {
        buf.push(b'[');
        for (i, v) in vs.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            match v {
                Some(v) => number(buf, *v),
                None => buf.extend_from_slice(b"null"),
            }
        }
        buf.push(b']');
    }
    buf.clear();
    buf.extend_from_slice(b"{\"type\":\"sample\",\"t\":");
    number(buf, s.t);
    if s.w {
        buf.extend_from_slice(b",\"w\":true");
    }
    buf.extend_from_slice(b",\"g\":[");
    for (i, gpu) in s.g.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        values(buf, gpu);
    }
    buf.extend_from_slice(b"],\"h\":");
    values(buf, &s.h);
    buf.extend_from_slice(b"}\n");
}

/// Plain JSON Lines, or zstd-compressed when the path ends in `.zst`.
/// Each `flush` of the compressed sink ends a zstd block, so a crash still
/// leaves a readable prefix of whole ticks.
enum Sink {
    Plain(BufWriter<File>),
    Zstd(zstd::stream::write::Encoder<'static, BufWriter<File>>),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Plain(w) => w.write(buf),
            Sink::Zstd(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.write_all(buf),
            Sink::Zstd(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            Sink::Zstd(w) => w.flush(),
        }
    }
}

impl Sink {
    /// End the stream (the zstd frame) and hand back the file.
    fn finish(self) -> std::io::Result<File> {
        let buffered = match self {
            Sink::Plain(w) => w,
            Sink::Zstd(w) => w.finish()?,
        };
        buffered.into_inner().map_err(|e| e.into_error())
    }
}

impl TraceWriter {
    /// Start `PATH.partial`. Refused: a `PATH` that is not a regular file
    /// (a device node, a FIFO, a directory: the final rename would replace
    /// it), and anything already at `PATH.partial` (created exclusively,
    /// never through a planted symbolic link, never over a crashed
    /// recording's prefix or a concurrent recording).
    pub fn create(path: &Path, header: &Header) -> Result<TraceWriter, GateError> {
        files::check_output(path, "the trace", &[])
            .map_err(|e| files::output_error(format!("{e}; choose another --output"), &e))?;
        let partial = partial_path(path);
        let file = files::create_new(&partial).map_err(|e| {
            let why = if e.kind() == std::io::ErrorKind::AlreadyExists {
                "it exists already (an earlier recording that did not finish, another gate recording to the same file, or a link): move or delete it, or choose another --output".to_string()
            } else {
                format!("{e}; choose a writable --output path")
            };
            files::output_error(
                format!("cannot create trace file '{}': {why}", partial.display()),
                &e,
            )
        })?;
        let buffered = BufWriter::with_capacity(64 * 1024, file);
        let out = if is_compressed_path(path) {
            let encoder = zstd::stream::write::Encoder::new(buffered, ZSTD_LEVEL).map_err(|e| {
                GateError::infra(format!("starting zstd for '{}': {e}", partial.display()))
            })?;
            Sink::Zstd(encoder)
        } else {
            Sink::Plain(buffered)
        };
        let mut w = TraceWriter {
            out,
            partial,
            final_path: path.to_path_buf(),
            line: Vec::new(),
        };
        w.write(&Record::Header(Box::new(header.clone())))?;
        w.flush()?;
        Ok(w)
    }

    pub fn write(&mut self, record: &Record) -> Result<(), GateError> {
        let io = |e: std::io::Error| {
            GateError::infra(format!(
                "writing trace '{}': {e}",
                self_display(&self.partial)
            ))
        };
        if let Record::Sample(s) = record {
            // Nearly every record: the direct writer, same bytes.
            write_sample_line(&mut self.line, s);
            return self.out.write_all(&self.line).map_err(io);
        }
        serde_json::to_writer(&mut self.out, record)
            .map_err(|e| GateError::infra(format!("encoding trace record: {e}")))?;
        self.out.write_all(b"\n").map_err(io)?;
        Ok(())
    }

    /// Push buffered records to the file. The recorder calls this at most
    /// once a second (`record::TRACE_FLUSH`: one write system call per
    /// second, not one per tick), so a crash loses at most the last second.
    pub fn flush(&mut self) -> Result<(), GateError> {
        self.out.flush().map_err(|e| {
            GateError::infra(format!(
                "writing trace '{}': {e}",
                self_display(&self.partial)
            ))
        })
    }

    /// Write the end record, fsync, and move the file into place.
    pub fn finish(mut self, end: EndRecord) -> Result<PathBuf, GateError> {
        self.write(&Record::End(end))?;
        let file = self
            .out
            .finish()
            .map_err(|e| GateError::infra(format!("flushing trace: {e}")))?;
        file.sync_all()
            .map_err(|e| GateError::infra(format!("syncing trace: {e}")))?;
        // Checked again: something may have been put at the path meanwhile.
        files::check_output(&self.final_path, "the trace", &[]).map_err(|e| {
            GateError::usage(format!(
                "{e}; the recording is kept in '{}'",
                self.partial.display()
            ))
        })?;
        std::fs::rename(&self.partial, &self.final_path).map_err(|e| {
            GateError::infra(format!(
                "moving '{}' to '{}': {e}",
                self.partial.display(),
                self.final_path.display()
            ))
        })?;
        Ok(self.final_path)
    }

    /// Where the trace is written until it is finished (for the test kit).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn partial_path(&self) -> &Path {
        &self.partial
    }

    /// Nothing was recorded (the target could not be started): remove the
    /// `.partial` this writer created.
    pub(crate) fn abandon(self) {
        let partial = self.partial.clone();
        drop(self);
        let _ = std::fs::remove_file(partial);
    }

    /// The recording failed: end the `.partial` with `end` so it reads as a
    /// complete record of what happened, but leave it under its `.partial`
    /// name (a failed recording never replaces a trace). Best effort: the
    /// disk may be what failed.
    pub(crate) fn close_as_partial(mut self, end: EndRecord) -> PathBuf {
        let _ = self.write(&Record::End(end));
        if let Ok(file) = self.out.finish() {
            let _ = file.sync_all();
        }
        self.partial
    }
}

fn self_display(p: &Path) -> String {
    p.display().to_string()
}

pub(crate) fn partial_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".partial");
    PathBuf::from(s)
}
