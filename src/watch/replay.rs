//! `gate watch --replay` reads a trace record by record, in file order (the
//! order the recorder wrote, so the order a live watch saw), and never
//! holds it: memory is bounded by the windows, not by the trace (a 24-hour
//! 8-GPU trace is ~1.8 GB of text, ~0.8 GB loaded).
//!
//! The lines come from the trace's one reader (`trace::TraceReader`, the
//! reader `Trace::load` uses), with its rules and its messages. GPM
//! readings the loader would discard (`validity::row_is_gpm_glitch`)
//! become missing values with a `gpm_invalid` event, as on load and live.
//!
//! One difference from `Trace::load`, on purpose: the loader keeps only the
//! GPUs the end record says the target used; a stream meets the end record
//! last, and a live watch never sees it, so a replay watches every GPU the
//! trace recorded, as the live watch did.

use crate::error::GateError;
use crate::trace::{validity, Header, Record, TraceReader};
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
    pub(crate) last_t_ms: f64,
    pub interval_ms: u64,
    /// `each` returned false.
    pub stopped: bool,
    /// The stream broke off (a zstd frame without its end or checksum):
    /// what was read was handed on, but the trace is cut, as `check` says.
    pub truncated: bool,
}

/// Read `path` and hand each record to `each`, in file order; stop early
/// when `each` returns false. Errors name the file and the line, as the
/// loader's do (they are the loader's).
pub fn stream(path: &Path, each: &mut dyn FnMut(Item) -> bool) -> Result<Streamed, GateError> {
    let mut lines = TraceReader::open(path)?;
    let mut header: Option<Header> = None;
    let mut gpm: Vec<usize> = Vec::new();
    let mut busy_col: Option<usize> = None;
    let mut gpu = Vec::new();
    let mut last_t: Option<f64> = None;
    let mut stopped = false;
    while let Some(item) = lines.next_item()? {
        let go_on = match item {
            crate::trace::Item::Header(h) => {
                gpm = (0..h.gpu_columns.len())
                    .filter(|&c| crate::metrics::is_gpm(&h.gpu_columns[c]))
                    .collect();
                busy_col = h.gpu_columns.iter().position(|c| c == "gpu_busy_pct");
                header = Some(h.clone());
                each(Item::Header(h))
            }
            crate::trace::Item::Sample {
                t_ms,
                warmup,
                gpu: values,
                host,
            } => {
                last_t = Some(t_ms);
                gpu.clear();
                gpu.extend_from_slice(values);
                let h = header.as_ref().expect("a sample comes after the header");
                sample(h, &gpm, busy_col, t_ms, warmup, &mut gpu, host, each)
            }
            crate::trace::Item::Record(r) => each(Item::Record(&r)),
        };
        if !go_on {
            stopped = true;
            break;
        }
    }
    Ok(Streamed {
        last_t_ms: last_t.unwrap_or(0.0),
        interval_ms: lines.header().map_or(0, |h| h.interval_ms),
        stopped,
        truncated: !stopped && lines.broke_off(),
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
                let event = Record::Event(validity::gpm_invalid_event(t_ms, g));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    /// A replay and a load read through one reader: on every broken trace
    /// they refuse with the same message, at the same line (the replay
    /// had no cap on empty lines and no check of the end record's time).
    #[test]
    fn a_replay_refuses_what_the_loader_refuses_with_the_same_words() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/traces/healthy-1.jsonl");
        let text = std::fs::read_to_string(fixture).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let samples: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].starts_with("{\"type\":\"sample\""))
            .collect();
        let end = lines.len() - 1;
        assert!(lines[end].starts_with("{\"type\":\"end\""));
        type Edit = Box<dyn Fn(&mut Vec<String>)>;
        let (a, b) = (samples[10], samples[11]);
        let cases: Vec<Edit> = vec![
            Box::new(|l| {
                for _ in 0..crate::limits::MAX_BLANK_TRACE_LINES + 1 {
                    l.insert(5, String::new());
                }
            }),
            // The end record's time before the last sample's.
            Box::new(move |l| {
                let t = regex::Regex::new(r#""t":[0-9.e+]+"#).unwrap();
                l[end] = t.replace(&l[end], "\"t\":0.5").into_owned();
            }),
            Box::new(move |l| {
                let e = l.remove(end);
                l.insert(b, e);
            }),
            Box::new(move |l| l.swap(a, b)),
            Box::new(move |l| l[b] = "{\"type\":\"sample\"".into()),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (k, edit) in cases.iter().enumerate() {
            let mut edited: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
            edit(&mut edited);
            let path = dir.path().join(format!("{k}.jsonl"));
            std::fs::write(&path, edited.join("\n") + "\n").unwrap();
            let loaded = Trace::load(&path).err().map(|e| e.to_string());
            let streamed = stream(&path, &mut |_| true).err().map(|e| e.to_string());
            assert!(loaded.is_some(), "case {k}");
            assert_eq!(streamed, loaded, "case {k}");
        }
    }
}
