//! Reading a trace: the one reader every consumer uses. `Trace::load`
//! (through `trace::chunks` for a long plain file), `gate watch --replay`
//! (`watch::replay::stream`) and `--replay` of every command read their
//! lines here, and the format's rules are enforced here once:
//!
//! - the header first (blank lines before it allowed), of this
//!   `schema_version`, and only one;
//! - every record's time finite and from 0 to `limits::MAX_TRACE_SPAN_MS`;
//!   samples in time order, the end record not before the last sample;
//! - nothing after the end record;
//! - a line at most `limits::MAX_TRACE_LINE_BYTES`, at most
//!   `limits::MAX_BLANK_TRACE_LINES` empty lines, UTF-8 text;
//! - a cut-off last line (or a zstd stream that breaks off) ends the
//!   trace: the complete prefix is kept.
//!
//! Sample lines in the writer's exact shape take the fast path
//! (`fast_sample`), any other line serde; both hand over the same values.
//! Errors name the file and the line.

use crate::error::GateError;
use crate::files;
use crate::limits;
use crate::trace::fast_sample;
use crate::trace::format::{Header, Record, SampleRecord, SCHEMA_VERSION, ZSTD_MAGIC};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// What the reader hands over, in file order.
pub enum Item<'a> {
    Header(&'a Header),
    /// One sample: time (ms since the recording started), warm-up flag,
    /// GPU values `[gpu][column]` flattened and host values (NaN =
    /// missing), in the header's order.
    Sample {
        t_ms: f64,
        warmup: bool,
        gpu: &'a [f32],
        host: &'a [f32],
    },
    /// An event, a process list, an output line or the end record (never
    /// a sample or a header).
    Record(Record),
}

/// What one line was, after the rules (`Rules::line`).
pub(super) enum Line {
    /// An empty line: nothing.
    Blank,
    /// A cut-off last line: the trace ends before it.
    Cut,
    /// The header (held by the rules).
    Header,
    /// A sample (in the rules' row).
    Sample,
    Record(Record),
}

/// The format's rules, line by line, and what they need to remember.
pub(super) struct Rules {
    path: PathBuf,
    fast: bool,
    header: Option<Header>,
    shape: (usize, usize, usize),
    /// The line of the end record (0: not met).
    end_line: usize,
    last_t: Option<f64>,
    blank_lines: usize,
    /// The last sample line handed over (`Line::Sample`).
    pub(super) row: fast_sample::Row,
}

impl Rules {
    /// `fast`: sample lines in the writer's shape take the fast path
    /// (off: every line through serde, the reference it is tested against).
    pub(super) fn new(path: &Path, fast: bool) -> Rules {
        Rules {
            path: path.to_path_buf(),
            fast,
            header: None,
            shape: (0, 0, 0),
            end_line: 0,
            last_t: None,
            blank_lines: 0,
            row: fast_sample::Row::default(),
        }
    }

    pub(super) fn header(&self) -> Option<&Header> {
        self.header.as_ref()
    }

    /// GPUs, GPU columns and host columns of a sample.
    pub(super) fn shape(&self) -> (usize, usize, usize) {
        self.shape
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    fn bad(&self, msg: String) -> GateError {
        GateError::bad_file(&self.path, msg)
    }

    /// The fast path's test of a sample line: in the writer's shape, its
    /// time in range and not before the last sample's. False: the line
    /// goes through serde, which names any problem.
    pub(super) fn fast_sample(
        line: &[u8],
        shape: (usize, usize, usize),
        last_t: Option<f64>,
        row: &mut fast_sample::Row,
    ) -> bool {
        let (ngpu, ncols, nhost) = shape;
        if !fast_sample::parse_into(line.trim_ascii_end(), ngpu, ncols, nhost, row) {
            return false;
        }
        let t = row.t;
        t.is_finite()
            && (0.0..=limits::MAX_TRACE_SPAN_MS).contains(&t)
            && last_t.is_none_or(|p| t >= p)
    }

    /// Whether sample lines may take the fast path now (after the header,
    /// before the end record).
    pub(super) fn fast_now(&self) -> bool {
        self.fast && self.header.is_some() && self.end_line == 0
    }

    /// A run of samples parsed on the fast path elsewhere (`chunks`), in
    /// order among themselves and in range, from time `first_t` at line
    /// `lineno` to `last_t`: the checks that tie it to the lines before.
    pub(super) fn sample_run(
        &mut self,
        lineno: usize,
        first_t: f64,
        last_t: f64,
    ) -> Result<(), GateError> {
        if self.end_line > 0 {
            return Err(self.after_end(lineno));
        }
        if let Some(prev) = self.last_t {
            if first_t < prev {
                return Err(self.out_of_order(lineno, first_t, prev));
            }
        }
        self.last_t = Some(last_t);
        Ok(())
    }

    fn after_end(&self, lineno: usize) -> GateError {
        self.bad(format!(
            "line {lineno}: a record after the end record (line {}); the trace was edited or joined with another, record it again",
            self.end_line
        ))
    }

    fn out_of_order(&self, lineno: usize, t: f64, prev: f64) -> GateError {
        self.bad(format!(
            "line {lineno}: sample time {t} ms is before the previous sample's ({prev} ms); samples must be in time order, record the trace again"
        ))
    }

    /// One line: `bytes` as read (at most `MAX_TRACE_LINE_BYTES + 1` of
    /// it, with its newline when it has one), `n` its whole length,
    /// `lineno` its number in the file.
    pub(super) fn line(
        &mut self,
        bytes: &[u8],
        n: usize,
        lineno: usize,
    ) -> Result<Line, GateError> {
        if n > limits::MAX_TRACE_LINE_BYTES {
            return Err(self.bad(format!(
                "line {lineno}: longer than the {} limit for one trace record (docs/limits.md); the trace is corrupt, record it again",
                limits::bytes_text(limits::MAX_TRACE_LINE_BYTES as u64)
            )));
        }
        let complete = bytes.ends_with(b"\n");
        // Nearly every line is a sample: straight into the row.
        if self.fast_now() && Rules::fast_sample(bytes, self.shape, self.last_t, &mut self.row) {
            self.last_t = Some(self.row.t);
            return Ok(Line::Sample);
        }
        let have_header = self.header.is_some();
        let Ok(line) = std::str::from_utf8(bytes) else {
            if !complete && have_header {
                // The writer died mid-character: keep the complete prefix.
                return Ok(Line::Cut);
            }
            return Err(self.bad(format!(
                "line {lineno}: not UTF-8 text; the trace is corrupt, record it again"
            )));
        };
        let text = line.trim_end();
        if text.is_empty() {
            self.blank_lines += 1;
            if self.blank_lines > limits::MAX_BLANK_TRACE_LINES {
                return Err(self.bad(format!(
                    "line {lineno}: more than {} empty lines: not a trace as gate writes them (docs/limits.md)",
                    limits::MAX_BLANK_TRACE_LINES
                )));
            }
            return Ok(Line::Blank);
        }
        let record: Record = match serde_json::from_str(text) {
            Ok(r) => r,
            // The writer died mid-line: keep the complete prefix.
            Err(_) if !complete && have_header => return Ok(Line::Cut),
            Err(e) if lineno == 1 => return Err(header_error(&self.path, text, e)),
            Err(e) => {
                return Err(self.bad(format!(
                    "line {lineno}, column {}: {e}; the trace is corrupt, record it again",
                    e.column()
                )))
            }
        };
        self.record(record, lineno)
    }

    /// A line's record, after the rules.
    fn record(&mut self, record: Record, lineno: usize) -> Result<Line, GateError> {
        match record {
            Record::Header(h) => {
                if self.header.is_some() {
                    return Err(self.bad(format!("line {lineno}: a second header")));
                }
                if h.schema_version != SCHEMA_VERSION {
                    return Err(self.bad(format!(
                        "trace schema_version {} is not supported (this gate reads {}); re-record with this gate version",
                        h.schema_version, SCHEMA_VERSION
                    )));
                }
                self.shape = (
                    h.fingerprint.gpus.len(),
                    h.gpu_columns.len(),
                    h.host_columns.len(),
                );
                self.header = Some(*h);
                Ok(Line::Header)
            }
            _ if self.header.is_none() => Err(self
                .bad("line 1: not a gate trace (the first line must be the header record)".into())),
            _ if self.end_line > 0 => Err(self.after_end(lineno)),
            Record::Sample(s) => {
                check_time(s.t, &self.path, lineno)?;
                if let Some(prev) = self.last_t {
                    if s.t < prev {
                        return Err(self.out_of_order(lineno, s.t, prev));
                    }
                }
                self.serde_sample(s, lineno)?;
                Ok(Line::Sample)
            }
            Record::End(e) => {
                check_time(e.t, &self.path, lineno)?;
                if let Some(last) = self.last_t {
                    if e.t < last {
                        return Err(self.bad(format!(
                            "line {lineno}: the end record's time {} ms is before the last sample's ({last} ms); the trace is corrupt, record it again",
                            e.t
                        )));
                    }
                }
                self.end_line = lineno;
                Ok(Line::Record(Record::End(e)))
            }
            other => {
                let t = match &other {
                    Record::Event(e) => e.t,
                    Record::Processes(p) => p.t,
                    Record::Output(o) => o.t,
                    _ => unreachable!("matched above"),
                };
                check_time(t, &self.path, lineno)?;
                Ok(Line::Record(other))
            }
        }
    }

    /// A sample record read by serde, into the row.
    fn serde_sample(&mut self, s: SampleRecord, lineno: usize) -> Result<(), GateError> {
        let (ngpu, ncols, nhost) = self.shape;
        if s.g.len() != ngpu || s.g.iter().any(|v| v.len() != ncols) || s.h.len() != nhost {
            return Err(self.bad(format!(
                "line {lineno}: sample shape does not match the header's GPU list and columns"
            )));
        }
        let value = |v: &Option<f64>| v.map(|x| x as f32).unwrap_or(f32::NAN);
        let row = &mut self.row;
        row.t = s.t;
        row.w = s.w;
        row.gpu.clear();
        row.gpu.extend(s.g.iter().flatten().map(value));
        row.host.clear();
        row.host.extend(s.h.iter().map(value));
        self.last_t = Some(s.t);
        Ok(())
    }

    /// After the last line: an error when there was no header.
    pub(super) fn finish(&self) -> Result<(), GateError> {
        if self.header.is_none() {
            return Err(GateError::bad_file(
                &self.path,
                "empty file: not a gate trace",
            ));
        }
        Ok(())
    }
}

/// A trace read line by line: `next` hands over each record in file
/// order, after the rules.
pub struct TraceReader<R> {
    reader: R,
    rules: Rules,
    bytes: Vec<u8>,
    lineno: usize,
    /// Bytes of the lines read so far.
    consumed: u64,
    /// A zstd stream broke off (its frame never ended).
    broke_off: bool,
    /// The last line was cut off.
    cut: bool,
    done: bool,
}

impl TraceReader<Box<dyn BufRead>> {
    /// Open `path` (plain or zstd-compressed) for reading.
    pub fn open(path: &Path) -> Result<Self, GateError> {
        Ok(TraceReader::new(open_reader(path)?, path, true))
    }
}

impl<R: BufRead> TraceReader<R> {
    /// Read the lines of `reader`; `path` names it in messages. `fast`:
    /// sample lines in the writer's shape take the fast path.
    pub fn new(reader: R, path: &Path, fast: bool) -> Self {
        TraceReader {
            reader,
            rules: Rules::new(path, fast),
            bytes: Vec::new(),
            lineno: 0,
            consumed: 0,
            broke_off: false,
            cut: false,
            done: false,
        }
    }

    /// The next record; None at the end of the trace (or of its complete
    /// prefix).
    pub(crate) fn next_item(&mut self) -> Result<Option<Item<'_>>, GateError> {
        loop {
            if self.done {
                return Ok(None);
            }
            self.bytes.clear();
            let n = match read_line_capped(
                &mut self.reader,
                &mut self.bytes,
                limits::MAX_TRACE_LINE_BYTES,
            ) {
                Ok(n) => n,
                // A zstd stream whose writer died: the frame never ended.
                // Like a cut-off line, keep the complete prefix.
                Err(e)
                    if e.kind() == std::io::ErrorKind::UnexpectedEof
                        && self.rules.header.is_some() =>
                {
                    self.broke_off = true;
                    self.done = true;
                    return Ok(None);
                }
                // A size limit: the message says which.
                Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                    return Err(GateError::bad_file(self.rules.path(), e.to_string()))
                }
                Err(e) => {
                    return Err(GateError::bad_file(
                        self.rules.path(),
                        format!("line {}: read error: {e}", self.lineno + 1),
                    ))
                }
            };
            if n == 0 {
                self.done = true;
                self.rules.finish()?;
                return Ok(None);
            }
            self.lineno += 1;
            self.consumed += n as u64;
            match self.rules.line(&self.bytes, n, self.lineno)? {
                Line::Blank => continue,
                Line::Cut => {
                    self.cut = true;
                    self.done = true;
                    return Ok(None);
                }
                Line::Header => return Ok(self.rules.header().map(Item::Header)),
                Line::Sample => {
                    let row = &self.rules.row;
                    return Ok(Some(Item::Sample {
                        t_ms: row.t,
                        warmup: row.w,
                        gpu: &row.gpu,
                        host: &row.host,
                    }));
                }
                Line::Record(r) => return Ok(Some(Item::Record(r))),
            }
        }
    }

    /// The header, once read.
    pub fn header(&self) -> Option<&Header> {
        self.rules.header()
    }

    /// A zstd stream broke off before its end: what was read is the
    /// complete prefix.
    pub(crate) fn broke_off(&self) -> bool {
        self.broke_off
    }

    /// The trace ended early: a zstd stream broke off, or the last line
    /// was cut off.
    pub(crate) fn cut_short(&self) -> bool {
        self.broke_off || self.cut
    }

    /// Bytes of the lines read so far, and the length of the last one.
    pub fn consumed(&self) -> (u64, usize) {
        (self.consumed, self.bytes.len())
    }

    /// Lines read so far.
    pub(super) fn lines(&self) -> usize {
        self.lineno
    }

    /// The rules, to go on with the lines after those read (`chunks`).
    pub(super) fn into_rules(self) -> Rules {
        self.rules
    }
}

/// Open a trace file for reading, as `Trace::load` does (a regular file
/// within the size limit; zstd-compressed or plain, told by its first
/// bytes): for readers that stream its lines (`gate watch --replay`).
pub fn open_reader(path: &Path) -> Result<Box<dyn BufRead>, GateError> {
    reader_of(open_file(path)?, path)
}

/// Open a trace file: a regular file within the size limit.
pub(super) fn open_file(path: &Path) -> Result<File, GateError> {
    files::open_input(path, limits::MAX_TRACE_BYTES).map_err(|e| {
        let fix = if e.kind() == std::io::ErrorKind::NotFound {
            "record one with 'gate record --output FILE -- CMD'"
        } else {
            "give a trace file written by 'gate record'"
        };
        GateError::bad_file(path, format!("cannot open trace: {e}; {fix}"))
    })
}

/// Whether an opened trace file is zstd-compressed (its first bytes).
pub(super) fn is_compressed(file: &File) -> bool {
    use std::os::unix::fs::FileExt;
    let mut magic = [0u8; 4];
    file.read_exact_at(&mut magic, 0).is_ok() && magic == ZSTD_MAGIC
}

/// The lines of an opened trace file: plain, or decompressed when its
/// first bytes are a zstd frame's.
pub(super) fn reader_of(file: File, path: &Path) -> Result<Box<dyn BufRead>, GateError> {
    let mut reader =
        BufReader::with_capacity(1 << 20, files::Capped::new(file, limits::MAX_TRACE_BYTES));
    // By content, not by name: `run.jsonl.zst.partial` (a recording cut
    // short) and a renamed file read back the same.
    let compressed = reader
        .fill_buf()
        .map(|b| b.starts_with(&ZSTD_MAGIC))
        .unwrap_or(false);
    if compressed {
        let compressed_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let consumed = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = CountingBufRead {
            inner: reader,
            consumed: consumed.clone(),
        };
        let decoder = zstd::stream::read::Decoder::with_buffer(counted).map_err(|e| {
            GateError::bad_file(path, format!("cannot read zstd-compressed trace: {e}"))
        })?;
        // zstd decodes whole blocks ahead of the lines: its errors say
        // where in the file they are, not only the line being read.
        let decoder = ZstdWhere {
            inner: decoder,
            decoded: 0,
            consumed,
            size: compressed_bytes,
        };
        // What a few MB of zstd may expand to is bounded by its size
        // (limits::MAX_ZSTD_EXPANSION), so memory and work stay in
        // proportion to the file, not to what a bomb would become.
        let cap = limits::zstd_expanded_cap(compressed_bytes);
        let expanded = files::Capped::new(decoder, cap).with_message(format!(
            "expands past {} ({} times its compressed size of {}, docs/limits.md): not a trace as gate writes them; if it is one, decompress it with 'zstd -d' and give the plain file",
            limits::bytes_text(cap),
            limits::MAX_ZSTD_EXPANSION,
            limits::bytes_text(compressed_bytes)
        ));
        return Ok(Box::new(BufReader::with_capacity(1 << 20, expanded)));
    }
    Ok(Box::new(reader))
}

/// A buffered reader that counts the bytes its reader took (the zstd
/// decoder's position in the compressed file).
struct CountingBufRead<R> {
    inner: R,
    consumed: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: BufRead> Read for CountingBufRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for CountingBufRead<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.consumed
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        self.inner.consume(n);
    }
}

/// The zstd decoder, its errors saying where the stream broke (the
/// compressed byte reached, the text decoded before it); the error's kind
/// is kept (an unfinished frame stays `UnexpectedEof`: a cut trace).
struct ZstdWhere<R> {
    inner: R,
    decoded: u64,
    consumed: std::sync::Arc<std::sync::atomic::AtomicU64>,
    size: u64,
}

impl<R: Read> Read for ZstdWhere<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.decoded += n as u64;
                Ok(n)
            }
            Err(e) => Err(std::io::Error::new(
                e.kind(),
                format!(
                    "the zstd stream breaks past compressed byte {} of {} ({} decoded before it): {e}",
                    self.consumed.load(std::sync::atomic::Ordering::Relaxed),
                    self.size,
                    limits::bytes_text(self.decoded)
                ),
            )),
        }
    }
}

/// A record time must be a finite number of ms from 0 to
/// `limits::MAX_TRACE_SPAN_MS` (a time of 1e13 made reports allocate 240 GB).
pub fn check_time(t: f64, path: &Path, lineno: usize) -> Result<(), GateError> {
    if t.is_finite() && (0.0..=limits::MAX_TRACE_SPAN_MS).contains(&t) {
        return Ok(());
    }
    Err(GateError::bad_file(
        path,
        format!(
            "line {lineno}: time {} ms is outside 0 to {} ms (30 days, docs/limits.md); the trace is corrupt, record it again",
            // 1e308 in full is 309 digits.
            if t.abs() < 1e12 { t.to_string() } else { format!("{t:e}") },
            limits::MAX_TRACE_SPAN_MS
        ),
    ))
}

/// Where the first `\n` in `s` is: the C library's `memchr` (vector
/// instructions), not a byte-at-a-time loop, which was a tenth of a long
/// check's CPU time.
pub(crate) fn find_newline(s: &[u8]) -> Option<usize> {
    if s.is_empty() {
        return None;
    }
    // SAFETY: memchr reads at most `s.len()` bytes from `s`'s start, and
    // returns null or a pointer into those bytes.
    let p = unsafe { libc::memchr(s.as_ptr().cast(), i32::from(b'\n'), s.len()) };
    (!p.is_null()).then(|| p as usize - s.as_ptr() as usize)
}

/// Read one line (with its `\n`) into `buf`, keeping at most `cap + 1`
/// bytes of it: returns the line's full length, so a caller sees a line
/// over `cap` without ever holding it (a 1 GB line costs `cap`, not 1 GB).
pub fn read_line_capped<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<usize> {
    let mut total = 0usize;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(total);
        }
        let (used, done) = match find_newline(chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = (cap + 1).saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..used.min(room)]);
        total += used;
        reader.consume(used);
        if done {
            return Ok(total);
        }
    }
}

pub fn header_error(path: &Path, text: &str, e: serde_json::Error) -> GateError {
    let hint = if text.contains("\"schema_version\"") && !text.contains("\"schema_version\":1,") {
        "; this trace was written by another gate version"
    } else {
        ""
    };
    GateError::bad_file(
        path,
        format!(
            "line 1, column {}: not a valid gate trace header: {e}{hint}",
            e.column()
        ),
    )
}
