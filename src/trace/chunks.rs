//! One long plain trace parsed on every core: the lines after the header
//! are cut into chunks of `CHUNK_BYTES` at line boundaries, each chunk's
//! sample lines are parsed on a worker thread (`parallel::ordered`) into
//! rows, and the chunks are merged in file order on the calling thread,
//! through the reader's own rules (`read::Rules`), so the loaded trace is
//! the same, value for value, as one read on one thread.
//!
//! A worker takes the fast path (`read::Rules::fast_sample`) on every line
//! it can: a sample in the writer's shape, its time in range and not
//! before the previous sample of its run. Every other line (an event, an
//! output line, an end record, a blank or a broken line) is kept as text
//! and given to the rules at the merge, with its line number: the chunk
//! counts its lines, and a chunk's first line number is the sum of the
//! counts before it. The merge checks what ties a run of samples to the
//! lines before it (time order, nothing after the end record), with the
//! messages the reader gives. The first problem in file order is the one
//! reported, at the line it would be reported at on one thread.
//!
//! Compressed traces are read on one thread (a zstd stream cannot be cut
//! at an offset), as are traces loaded inside a worker (the runs of a
//! capture load side by side already).

use crate::error::GateError;
use crate::limits;
use crate::trace::fast_sample;
use crate::trace::read::{find_newline, Item, Line, Rules, TraceReader};
use crate::trace::{spill_error, Trace};
use std::fs::File;
use std::io::BufReader;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Bytes of trace text a worker parses at a time.
pub(crate) const CHUNK_BYTES: usize = 4 << 20;
/// Chunks parsed ahead of the merge, per worker.
const AHEAD_PER_WORKER: usize = 2;
/// What a chunk in flight holds at most: its text and its rows (f32
/// values take about half the text's bytes).
const CHUNK_FOOTPRINT: usize = CHUNK_BYTES * 2;

/// Room for the threads that parse one trace: `GATE_THREADS` (or the
/// cores), each past the first holding its chunks in flight in the shared
/// memory budget (`budget`), as many as find room now; the threads are one
/// more than the grants, held while the trace loads.
pub fn workers() -> Vec<crate::budget::Grant> {
    crate::parallel::extra_workers(AHEAD_PER_WORKER * CHUNK_FOOTPRINT, usize::MAX)
}

/// A chunk's lines after its worker. The merge hands it back to be
/// filled again: its buffers keep their pages, so a 24-hour trace does not
/// fault in gigabytes of fresh memory a page at a time.
#[derive(Default)]
struct Chunk {
    /// Lines that start in the chunk.
    lines: usize,
    pieces: Vec<Piece>,
    /// The fast-path samples: time, warm-up flag and values (row-major,
    /// `Columns::push_rows`).
    times: Vec<f64>,
    warmup: Vec<bool>,
    values: Vec<f32>,
    /// The chunk's text, where `Piece::Other` points: `text[..used]`
    /// (the buffer keeps its length from one use to the next).
    text: Vec<u8>,
    used: usize,
    /// Length of the first fast-path sample line (0: none).
    first_sample_len: usize,
}

enum Piece {
    /// `rows` fast-path samples from the chunk's line `line` (0-based).
    Samples { line: usize, rows: usize },
    /// A line for the rules: `text[start..end]`, `n` bytes long in all.
    Other {
        line: usize,
        start: usize,
        end: usize,
        n: usize,
    },
}

/// Load the plain trace `file` (`size` bytes) on `threads` threads.
pub(super) fn load(
    file: &File,
    path: &Path,
    size: u64,
    threads: usize,
    chunk_bytes: usize,
    spill_at: usize,
) -> Result<Trace, GateError> {
    let mut trace = Trace {
        path: path.to_path_buf(),
        ..Default::default()
    };
    // The header (and any blank lines before it), in order.
    let mut lines = TraceReader::new(BufReader::with_capacity(64 << 10, file), path, true);
    match lines.next_item()? {
        Some(Item::Header(h)) => trace.set_header(h.clone()),
        // The rules refuse any record before the header; a file cut before
        // its first record ends here.
        _ => {
            trace.truncated = lines.cut_short();
            return trace.finish_load();
        }
    }
    let (body, _) = lines.consumed();
    let first_line = lines.lines();
    let mut rules = lines.into_rules();
    let shape = rules.shape();
    let nchunks = size.saturating_sub(body).div_ceil(chunk_bytes as u64) as usize;
    let pool = std::sync::Mutex::new(Vec::<Chunk>::new());
    let shell = || {
        pool.lock()
            .ok()
            .and_then(|mut p| p.pop())
            .unwrap_or_default()
    };
    let mut merge = Merge {
        line_base: first_line,
        size,
        body,
        sized: false,
        cut: false,
        spill_at,
    };
    crate::parallel::ordered(
        threads,
        nchunks,
        threads * AHEAD_PER_WORKER,
        |k| {
            let from = body + (k * chunk_bytes) as u64;
            let to = (from + chunk_bytes as u64).min(size);
            parse_chunk(file, from, to, size, shape, from == body, shell())
        },
        |chunk| {
            let chunk = chunk.map_err(|e| {
                GateError::bad_file(
                    path,
                    format!("line {}: read error: {e}", merge.line_base + 1),
                )
            })?;
            merge.chunk(&mut trace, &mut rules, &chunk)?;
            if let Ok(mut p) = pool.lock() {
                p.push(chunk);
            }
            Ok(())
        },
    )?;
    // The chunks' buffers go before the validity rules read the columns:
    // the two together were a long trace's peak (issue 44.2).
    drop(pool);
    trace.truncated = merge.cut;
    trace.finish_load()
}

/// The merge of the chunks, in order.
struct Merge {
    /// Lines before the next chunk.
    line_base: usize,
    size: u64,
    body: u64,
    sized: bool,
    /// A cut-off last line was met: the trace ends before it.
    cut: bool,
    spill_at: usize,
}

impl Merge {
    fn chunk(
        &mut self,
        trace: &mut Trace,
        rules: &mut Rules,
        chunk: &Chunk,
    ) -> Result<(), GateError> {
        if self.cut {
            return Ok(());
        }
        if !self.sized && chunk.first_sample_len > 0 {
            self.sized = true;
            let more = self.size.saturating_sub(self.body) / chunk.first_sample_len as u64;
            trace.reserve(more, self.spill_at)?;
        }
        let width = chunk.values.len() / chunk.times.len().max(1);
        let mut row = 0;
        for piece in &chunk.pieces {
            match *piece {
                Piece::Samples { line, rows } => {
                    let times = &chunk.times[row..row + rows];
                    rules.sample_run(self.line_base + line + 1, times[0], times[rows - 1])?;
                    trace.times_ms.extend_from_slice(times);
                    trace
                        .warmup
                        .extend_from_slice(&chunk.warmup[row..row + rows]);
                    let values = &chunk.values[row * width..(row + rows) * width];
                    let path = &trace.path;
                    trace
                        .columns
                        .push_rows(values, self.spill_at)
                        .map_err(|e| spill_error(path, e))?;
                    row += rows;
                }
                Piece::Other {
                    line,
                    start,
                    end,
                    n,
                } => {
                    let lineno = self.line_base + line + 1;
                    match rules.line(&chunk.text[start..end], n, lineno)? {
                        Line::Blank => {}
                        Line::Cut => {
                            self.cut = true;
                            return Ok(());
                        }
                        Line::Header => unreachable!("the rules refuse a second header"),
                        Line::Sample => self.one_sample(trace, rules)?,
                        Line::Record(r) => trace.take_record(r),
                    }
                }
            }
        }
        self.line_base += chunk.lines;
        Ok(())
    }

    /// A sample the rules read (not in the writer's exact shape).
    fn one_sample(&self, trace: &mut Trace, rules: &Rules) -> Result<(), GateError> {
        let row = &rules.row;
        trace.times_ms.push(row.t);
        trace.warmup.push(row.w);
        let values: Vec<f32> = row.gpu.iter().chain(&row.host).copied().collect();
        let path = &trace.path;
        trace
            .columns
            .push_rows(&values, self.spill_at)
            .map_err(|e| spill_error(path, e))
    }
}

/// Read `file[from..to]` and the rest of its last line into `chunk` (a
/// shell to fill again), and parse the lines that start in it (`first`:
/// `from` starts a line).
fn parse_chunk(
    file: &File,
    from: u64,
    to: u64,
    size: u64,
    shape: (usize, usize, usize),
    first: bool,
    mut chunk: Chunk,
) -> std::io::Result<Chunk> {
    chunk.lines = 0;
    chunk.pieces.clear();
    chunk.times.clear();
    chunk.warmup.clear();
    chunk.values.clear();
    chunk.first_sample_len = 0;
    // One byte before: whether `from` starts a line.
    let start = if first { from } else { from - 1 };
    chunk.used = 0;
    chunk.read_more(file, start, (to - start) as usize)?;
    let owned = chunk.used;
    let mut pos = if first {
        0
    } else {
        match find_newline(&chunk.text[..owned]) {
            Some(i) => i + 1,
            None => owned,
        }
    };
    let mut row = fast_sample::Row::default();
    let mut run_last: Option<f64> = None;
    while pos < owned {
        let (end, n) = chunk.line_end(file, pos, start, size)?;
        let line = chunk.lines;
        chunk.lines += 1;
        if n <= limits::MAX_TRACE_LINE_BYTES
            && Rules::fast_sample(&chunk.text[pos..end], shape, run_last, &mut row)
        {
            chunk.add_sample(line, &row, end - pos);
            run_last = Some(row.t);
        } else {
            chunk.pieces.push(Piece::Other {
                line,
                start: pos,
                end,
                n,
            });
            run_last = None;
        }
        if n > end - pos {
            break; // a line over the limit: the merge stops there
        }
        pos = end;
    }
    Ok(chunk)
}

impl Chunk {
    /// Read `len` more bytes of the file (the text starts at file offset
    /// `start`) after `text[..used]`.
    fn read_more(&mut self, file: &File, start: u64, len: usize) -> std::io::Result<()> {
        let want = self.used + len;
        if self.text.len() < want {
            self.text.resize(want, 0);
        }
        file.read_exact_at(&mut self.text[self.used..want], start + self.used as u64)?;
        self.used = want;
        Ok(())
    }

    /// Where the line at `text[pos..]` ends (after its newline, or at the
    /// end of the file), reading more of the file when the line goes on
    /// past the text, and its length; a line over `MAX_TRACE_LINE_BYTES`
    /// is read up to one byte past the limit (its length is then that,
    /// enough to refuse it).
    fn line_end(
        &mut self,
        file: &File,
        pos: usize,
        start: u64,
        size: u64,
    ) -> std::io::Result<(usize, usize)> {
        let mut from = pos;
        loop {
            if let Some(i) = find_newline(&self.text[from..self.used]) {
                return Ok((from + i + 1, from + i + 1 - pos));
            }
            let read_to = start + self.used as u64;
            if read_to >= size {
                return Ok((self.used, self.used - pos));
            }
            if self.used - pos > limits::MAX_TRACE_LINE_BYTES {
                return Ok((pos + limits::MAX_TRACE_LINE_BYTES + 1, self.used - pos));
            }
            from = self.used;
            self.read_more(file, start, (size - read_to).min(64 << 10) as usize)?;
        }
    }

    /// A fast-path sample of line `line`, `len` bytes long.
    fn add_sample(&mut self, line: usize, row: &fast_sample::Row, len: usize) {
        match self.pieces.last_mut() {
            Some(Piece::Samples { line: l, rows }) if *l + *rows == line => *rows += 1,
            _ => self.pieces.push(Piece::Samples { line, rows: 1 }),
        }
        if self.first_sample_len == 0 {
            self.first_sample_len = len;
            let width = row.gpu.len() + row.host.len();
            self.values.reserve(self.text_rows(len) * width);
        }
        self.times.push(row.t);
        self.warmup.push(row.w);
        self.values.extend_from_slice(&row.gpu);
        self.values.extend_from_slice(&row.host);
    }

    /// About how many lines of `len` bytes a chunk holds.
    fn text_rows(&self, len: usize) -> usize {
        CHUNK_BYTES / len.max(1) + 1
    }
}
