//! `gate watch --replay` reads a trace record by record, in file order (the
//! order the recorder wrote, so the order a live watch saw), and never
//! holds it: memory is bounded by the windows, not by the trace (a 24-hour
//! 8-GPU trace is ~1.8 GB of text, ~0.8 GB loaded).
//!
//! The file is opened as `Trace::load` opens it (`trace::open_reader`),
//! sample lines take the loader's fast path (`trace::parse_sample_row`),
//! any other line serde, with the loader's checks: the header first and of
//! this schema version, times finite, in range and in order, nothing after
//! the end record, a cut-off last line tolerated. GPM readings the loader
//! would discard (`validity::row_is_gpm_glitch`) become missing values with
//! a `gpm_invalid` event, as on load and live.
//!
//! One difference from `Trace::load`, on purpose: the loader keeps only the
//! GPUs the end record says the target used; a stream meets the end record
//! last, and a live watch never sees it, so a replay watches every GPU the
//! trace recorded, as the live watch did.

use crate::error::GateError;
use crate::limits;
use crate::trace::{
    check_time, header_error, open_reader, parse_sample_row, read_line_capped, validity, EventKind,
    EventRecord, Header, Record, SampleRow, SCHEMA_VERSION,
};
use std::path::Path;

/// What the stream hands over.
pub enum Item<'a> {
    Header(&'a Header),
    /// One sample: time (ms since the recording started), warm-up flag,
    /// GPU values `[gpu][column]` flattened and host values (NaN = missing).
    Sample {
        t_ms: f64,
        warmup: bool,
        gpu: &'a [f32],
        host: &'a [f32],
    },
    /// An event, a process list or the end record (never a sample or a
    /// header).
    Record(&'a Record),
}

/// How a stream ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Streamed {
    /// Time of the last sample, ms (0 without samples).
    pub last_t_ms: f64,
    pub interval_ms: u64,
    /// `each` returned false.
    pub stopped: bool,
    /// The stream broke off (a zstd frame without its end or checksum):
    /// what was read was handed on, but the trace is cut, as `check` says.
    pub truncated: bool,
}

/// Read `path` and hand each record to `each`, in file order; stop early
/// when `each` returns false. Errors name the file and the line, as the
/// loader's do.
pub fn stream(path: &Path, each: &mut dyn FnMut(Item) -> bool) -> Result<Streamed, GateError> {
    let mut reader = open_reader(path)?;
    let mut bytes = Vec::new();
    let mut lineno = 0usize;
    let mut header: Option<Header> = None;
    let mut gpm: Vec<usize> = Vec::new();
    let mut busy_col: Option<usize> = None;
    let mut row = SampleRow::default();
    let mut last_t: Option<f64> = None;
    let mut ended = false;
    let bad =
        |lineno: usize, msg: String| GateError::bad_file(path, format!("line {lineno}: {msg}"));
    let mut truncated = false;
    let done = |last_t: Option<f64>, header: &Option<Header>, stopped| Streamed {
        last_t_ms: last_t.unwrap_or(0.0),
        interval_ms: header.as_ref().map_or(0, |h| h.interval_ms),
        stopped,
        truncated: false,
    };
    loop {
        bytes.clear();
        let n = match read_line_capped(&mut reader, &mut bytes, limits::MAX_TRACE_LINE_BYTES) {
            Ok(n) => n,
            // A zstd stream whose writer died: keep the complete prefix.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && header.is_some() => {
                truncated = true;
                break;
            }
            Err(e) => return Err(bad(lineno + 1, format!("read error: {e}"))),
        };
        if n == 0 {
            break;
        }
        lineno += 1;
        if n > limits::MAX_TRACE_LINE_BYTES {
            return Err(bad(
                lineno,
                format!(
                    "longer than the {} limit for one trace record (docs/limits.md); the trace is corrupt, record it again",
                    limits::bytes_text(limits::MAX_TRACE_LINE_BYTES as u64)
                ),
            ));
        }
        let complete = bytes.ends_with(b"\n");
        if let (Some(h), false) = (&header, ended) {
            let (ngpu, ncols, nhost) = (
                h.fingerprint.gpus.len(),
                h.gpu_columns.len(),
                h.host_columns.len(),
            );
            if parse_sample_row(&bytes, ngpu, ncols, nhost, &mut row) {
                let t = row.t_ms[0];
                check_time(t, path, lineno)?;
                if last_t.is_some_and(|p| t < p) {
                    return Err(bad(lineno, format!("sample time {t} ms is before the previous sample's; samples must be in time order, record the trace again")));
                }
                last_t = Some(t);
                if !sample(
                    h,
                    &gpm,
                    busy_col,
                    t,
                    row.warmup[0],
                    &mut row.gpu,
                    &row.host,
                    each,
                ) {
                    return Ok(done(last_t, &header, true));
                }
                continue;
            }
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            if !complete && header.is_some() {
                break; // the writer died mid-character
            }
            return Err(bad(
                lineno,
                "not UTF-8 text; the trace is corrupt, record it again".into(),
            ));
        };
        let text = text.trim_end();
        if text.is_empty() {
            continue;
        }
        let record: Record = match serde_json::from_str(text) {
            Ok(r) => r,
            Err(_) if !complete && header.is_some() => break, // cut off mid-line
            Err(e) if lineno == 1 => return Err(header_error(path, text, e)),
            Err(e) => {
                return Err(bad(
                    lineno,
                    format!(
                        "column {}: {e}; the trace is corrupt, record it again",
                        e.column()
                    ),
                ))
            }
        };
        match record {
            Record::Header(h) => {
                if header.is_some() {
                    return Err(bad(lineno, "a second header".into()));
                }
                if h.schema_version != SCHEMA_VERSION {
                    return Err(GateError::bad_file(path, format!(
                        "trace schema_version {} is not supported (this gate reads {}); re-record with this gate version",
                        h.schema_version, SCHEMA_VERSION
                    )));
                }
                gpm = (0..h.gpu_columns.len())
                    .filter(|&c| crate::metrics::is_gpm(&h.gpu_columns[c]))
                    .collect();
                busy_col = h.gpu_columns.iter().position(|c| c == "gpu_busy_pct");
                if !each(Item::Header(&h)) {
                    return Ok(done(last_t, &header, true));
                }
                header = Some(*h);
            }
            _ if header.is_none() => {
                return Err(bad(
                    1,
                    "not a gate trace (the first line must be the header record)".into(),
                ))
            }
            _ if ended => {
                return Err(bad(lineno, "a record after the end record; the trace was edited or joined with another, record it again".into()))
            }
            Record::Sample(s) => {
                let h = header.as_ref().expect("checked");
                check_time(s.t, path, lineno)?;
                if last_t.is_some_and(|p| s.t < p) {
                    return Err(bad(lineno, format!("sample time {} ms is before the previous sample's; samples must be in time order, record the trace again", s.t)));
                }
                let ncols = h.gpu_columns.len();
                if s.g.len() != h.fingerprint.gpus.len()
                    || s.g.iter().any(|v| v.len() != ncols)
                    || s.h.len() != h.host_columns.len()
                {
                    return Err(bad(lineno, "sample shape does not match the header's GPU list and columns".into()));
                }
                last_t = Some(s.t);
                let f32_of = |v: &Option<f64>| v.map(|x| x as f32).unwrap_or(f32::NAN);
                let mut gpu: Vec<f32> = s.g.iter().flat_map(|g| g.iter().map(f32_of)).collect();
                let host: Vec<f32> = s.h.iter().map(f32_of).collect();
                if !sample(h, &gpm, busy_col, s.t, s.w, &mut gpu, &host, each) {
                    return Ok(done(last_t, &header, true));
                }
            }
            other => {
                let t = match &other {
                    Record::Event(e) => e.t,
                    Record::Processes(p) => p.t,
                    Record::Output(o) => o.t,
                    Record::End(e) => e.t,
                    Record::Header(_) | Record::Sample(_) => unreachable!("matched above"),
                };
                check_time(t, path, lineno)?;
                ended = matches!(other, Record::End(_));
                if !each(Item::Record(&other)) {
                    return Ok(done(last_t, &header, true));
                }
            }
        }
    }
    if header.is_none() {
        return Err(GateError::bad_file(path, "empty file: not a gate trace"));
    }
    Ok(Streamed {
        truncated,
        ..done(last_t, &header, false)
    })
}

/// Hand over one sample after the loader's GPM validity rule (glitched
/// GPM readings become missing, with a `gpm_invalid` event first).
#[allow(clippy::too_many_arguments)]
fn sample(
    h: &Header,
    gpm: &[usize],
    busy_col: Option<usize>,
    t_ms: f64,
    warmup: bool,
    gpu: &mut [f32],
    host: &[f32],
    each: &mut dyn FnMut(Item) -> bool,
) -> bool {
    let ncols = h.gpu_columns.len();
    if let (Some(busy), false) = (busy_col, gpm.is_empty()) {
        for g in 0..h.fingerprint.gpus.len() {
            let row = &mut gpu[g * ncols..(g + 1) * ncols];
            if validity::row_is_gpm_glitch(row, gpm, busy) {
                for &c in gpm {
                    row[c] = f32::NAN;
                }
                let event = Record::Event(EventRecord {
                    t: t_ms,
                    kind: EventKind::GpmInvalid,
                    gpu: Some(g as u32),
                    pid: None,
                    code: None,
                    message: "GPM reading all zero while the GPU was busy; treated as missing when the trace was loaded".into(),
                });
                if !each(Item::Record(&event)) {
                    return false;
                }
            }
        }
    }
    each(Item::Sample {
        t_ms,
        warmup,
        gpu,
        host,
    })
}
