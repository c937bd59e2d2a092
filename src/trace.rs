//! The trace: what `gate record` writes and every other command reads, and
//! a trace loaded in memory (`Trace`).
//!
//! - `format`: the types of the format's lines (JSON Lines: a header, then
//!   samples, events, process lists and output lines in time order, an end
//!   record last);
//! - `read`: the one reader every consumer uses (load, `--replay`, `gate
//!   watch --replay`), with the format's rules;
//! - `chunks`: a long plain trace parsed on every core, in chunks split at
//!   line boundaries and merged in order, through the same rules;
//! - `write`: the writer (`PATH.partial`, renamed when the recording ends);
//! - `columns`: the loaded sample values, a series per GPU and metric;
//! - `validity`: which samples count; `nogpm`: GPM-stripped twins (test
//!   support, feature `testkit`: never in the release library).

/// A scratch file of appended records (long traces' times and output lines).
mod appended;
/// One long plain trace parsed on every core.
mod chunks;
/// The sample values in columns: in memory, or a scratch file for long traces.
pub mod columns;
mod fast_sample;
/// The format's types.
pub mod format;
/// The benchmark's output lines, compact.
mod lines;
/// GPM-stripped twins of recorded traces (`scripts/strip-gpm.sh`): test
/// support like `synthetic` (feature `testkit`), never in the release
/// library, which reads traces only through the typed reader.
#[cfg(any(test, feature = "testkit"))]
pub mod nogpm;
/// The one streaming reader of a trace.
pub mod read;
/// Sample indices as ranges (the steady window).
mod samples;
/// The samples' times, compact.
mod times;
/// Which samples count: rules shared by the recorder and this loader.
pub mod validity;
/// A series read in place at chosen samples.
mod visit;
/// The trace writer.
pub mod write;

pub use columns::{spill_bytes, spill_mb_from_env, Columns, RowBlock, SPILL_ENV};
pub use format::*;
pub use lines::{Line, OutputLines};
pub use read::{check_time, header_error, open_reader, read_line_capped, Item, TraceReader};
pub use samples::{Flags, Samples};
pub use times::Times;
pub(crate) use visit::BLOCK;
pub(crate) use write::{round_value, TraceWriter};

use crate::error::GateError;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// A trace loaded in memory, its samples in `Columns`.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub path: PathBuf,
    pub header: Header,
    pub times_ms: Times,
    /// Which samples are warm-up (`--warmup`, `--warmup-until`).
    pub warmup: Flags,
    /// The sample values, one series per GPU and metric and per host metric.
    pub columns: Columns,
    pub events: Vec<EventRecord>,
    pub processes: Vec<ProcessesRecord>,
    pub output: OutputLines,
    pub end: Option<EndRecord>,
    /// The file ended without an `end` record, or with a cut-off last line.
    pub truncated: bool,
    /// Trailing samples that are process teardown, not steady state
    /// (`validity::teardown_len`, or everything from an `--until` line on);
    /// excluded like warm-up.
    pub teardown: usize,
    /// When an `--until` line closed the window (ms since the recording
    /// started): at recording (`WINDOW_CLOSED_NOTE`) or at `check --until`.
    pub closed_at_ms: Option<f64>,
}

impl Trace {
    pub fn gpu_count(&self) -> usize {
        self.header.fingerprint.gpus.len()
    }

    pub fn sample_count(&self) -> usize {
        self.times_ms.len()
    }

    pub fn gpu_column(&self, id: &str) -> Option<usize> {
        self.header.gpu_columns.iter().position(|c| c == id)
    }

    pub fn host_column(&self, id: &str) -> Option<usize> {
        self.header.host_columns.iter().position(|c| c == id)
    }

    /// The recorder's validity rules, applied to a loaded trace
    /// (`validity`): GPM glitches become missing values with a
    /// `gpm_invalid` event each, and the idle teardown tail leaves the
    /// steady window.
    fn apply_validity_rules(&mut self) {
        let cols = &self.header.gpu_columns;
        let Some(busy_col) = self.gpu_column("gpu_busy_pct") else {
            return;
        };
        let gpm: Vec<usize> = (0..cols.len())
            .filter(|&c| crate::metrics::is_gpm(&cols[c]))
            .collect();
        let (n, ngpu) = (self.sample_count(), self.gpu_count());
        if !gpm.is_empty() {
            // `validity::is_trace_gpm_glitch`, a column at a time: per GPU, a
            // bit per sample for "some GPM value is finite" and for "some is
            // nonzero" (n/4 bytes, not a flag list per GPU and sample); the
            // glitches (rare) are listed in the order of their events,
            // sample then GPU.
            let mut glitches: Vec<(usize, usize)> = Vec::new();
            let words = n.div_ceil(64);
            for g in 0..ngpu {
                let (mut any, mut nonzero) = (vec![0u64; words], vec![0u64; words]);
                for &c in &gpm {
                    for (i, &v) in self.columns.gpu(g, c).iter().enumerate() {
                        if v.is_finite() {
                            any[i / 64] |= 1 << (i % 64);
                            nonzero[i / 64] |= ((v != 0.0) as u64) << (i % 64);
                        }
                    }
                }
                let bit = |set: &[u64], i: usize| set[i / 64] >> (i % 64) & 1 == 1;
                for (i, &b) in self.columns.gpu(g, busy_col).iter().enumerate() {
                    if validity::is_trace_gpm_glitch(bit(&any, i), bit(&nonzero, i), b) {
                        glitches.push((i, g));
                    }
                }
            }
            glitches.sort_unstable();
            for (i, g) in glitches {
                for &c in &gpm {
                    self.columns.gpu_mut(g, c)[i] = f32::NAN;
                }
                self.events
                    .push(validity::gpm_invalid_event(self.times_ms.at(i), g));
            }
        }
        self.teardown = self.idle_tail(busy_col);
    }

    /// The idle tail after the target's GPU work (`validity::teardown_len`):
    /// only when the target exited by itself (a run stopped at `--duration`
    /// was still working when it was stopped).
    fn idle_tail(&self, busy_col: usize) -> usize {
        let exited = self
            .end
            .as_ref()
            .is_some_and(|e| e.reason == StopReason::TargetExited);
        if !exited || self.gpu_count() == 0 {
            return 0;
        }
        // Warm-up ends once, so the steady samples are one range from
        // `first` (a list of them only if a trace ever says otherwise).
        let n = self.sample_count();
        let first = self.warmup.first_clear().unwrap_or(n);
        let listed: Option<Vec<usize>> = (self.warmup.set().last())
            .is_some_and(|l| l >= first)
            .then(|| (first..n).filter(|&i| !self.warmup[i]).collect());
        let len = listed.as_ref().map_or(n - first, Vec::len);
        let sample = |k: usize| listed.as_ref().map_or(first + k, |l| l[k]);
        let mean_at = |k: usize| {
            let i = sample(k);
            mean_of_finite((0..self.gpu_count()).map(|g| self.columns.gpu_at(g, busy_col, i)))
        };
        // The GPUs' mean busy of every steady sample, read in place a block
        // at a time (a long trace's columns are in a scratch file, and each
        // fetch counts against what the process keeps resident of it).
        let visit = |f: &mut dyn FnMut(f64)| {
            for start in (0..len).step_by(IDLE_TAIL_BLOCK) {
                let end = len.min(start + IDLE_TAIL_BLOCK);
                let values = sample(end - 1) - sample(start) + 1;
                let series: Vec<&[f32]> = (0..self.gpu_count())
                    .map(|g| self.columns.gpu_reading(g, busy_col, values))
                    .collect();
                for k in start..end {
                    f(mean_of_finite(series.iter().map(|s| s[sample(k)])));
                }
            }
        };
        match crate::stats::percentile_of_visits(visit, validity::WORKING_LEVEL_PCT) {
            Some(level) => validity::teardown_tail(len, level, mean_at),
            None => 0,
        }
    }

    /// Close the measured window at `t_ms` (an `--until` line): every
    /// sample from then on is teardown. A window already closed earlier
    /// stays as it is.
    pub(crate) fn close_window_at(&mut self, t_ms: f64) {
        if self.closed_at_ms.is_some_and(|c| c <= t_ms) {
            return;
        }
        let n = self.sample_count();
        let first = self.times_ms.partition_point(|t| t < t_ms);
        self.teardown = n - first;
        self.closed_at_ms = Some(t_ms);
    }

    /// The time of the first note event whose message starts with `prefix`
    /// (`WARMUP_RELEASED_NOTE`, `WINDOW_CLOSED_NOTE`).
    pub(crate) fn note_time(&self, prefix: &str) -> Option<f64> {
        self.events
            .iter()
            .find(|e| e.kind == EventKind::Note && e.message.starts_with(prefix))
            .map(|e| e.t)
    }

    /// When warm-up ended (ms since the recording started): the later of
    /// `--warmup` and the `--warmup-until` line; 0 when nothing was marked
    /// warm-up. Output lines from then on belong to the measured window.
    pub(crate) fn warmup_end_ms(&self) -> f64 {
        if !self.warmup.any() {
            return 0.0;
        }
        let start = self.header.warmup_ms as f64;
        match self.note_time(WARMUP_RELEASED_NOTE) {
            Some(t) => start.max(t),
            // Older traces lack the note: the first steady sample bounds it.
            None => match self.warmup.first_clear() {
                Some(i) => start.max(self.times_ms.at(i) - self.header.interval_ms as f64),
                None => start,
            },
        }
    }

    /// Close the window at the first output line after warm-up that
    /// matches `until` (`check --until` on a replayed trace); false when no
    /// line matches.
    pub(crate) fn close_window_at_line(&mut self, until: &regex::Regex) -> bool {
        let released = self.warmup_end_ms();
        // The line that released the warm-up does not also close the
        // window (as when recording: issue 41.2).
        let release_line = self
            .events
            .iter()
            .find(|e| e.kind == EventKind::Note && e.message.starts_with(WARMUP_RELEASED_NOTE))
            .map(|e| (e.t, &e.message[WARMUP_RELEASED_NOTE.len()..]));
        let hit = self
            .output
            .iter()
            .filter(|o| release_line != Some((o.t, o.line)))
            .find(|o| o.t >= released && until.is_match(o.line))
            .map(|o| o.t);
        if let Some(t) = hit {
            self.close_window_at(t);
        }
        hit.is_some()
    }

    /// Seconds from the end of the measured window to the target's exit:
    /// what the teardown cut (None when nothing was cut or the exit is not
    /// known).
    pub fn teardown_s(&self) -> Option<f64> {
        let n = self.sample_count();
        if self.teardown == 0 || self.teardown > n {
            return None;
        }
        let start_ms = self
            .closed_at_ms
            .unwrap_or(self.times_ms.at(n - self.teardown));
        let wall = self.end.as_ref()?.target_wall_s?;
        Some((wall - start_ms / 1000.0).max(0.0))
    }

    /// Whether sample `i` belongs to the steady window: after warm-up and
    /// before teardown. Every statistic, feature and baseline uses this.
    pub(crate) fn is_steady(&self, i: usize) -> bool {
        !self.warmup[i] && i + self.teardown < self.sample_count()
    }

    /// Value of GPU column `col` on GPU slot `gpu` (position in the header's
    /// GPU list) at sample `i`; NaN when missing.
    pub fn gpu_value(&self, i: usize, gpu: usize, col: usize) -> f32 {
        self.columns.gpu_at(gpu, col, i)
    }

    /// Mean over the trace's GPUs of column `col` at sample `i`, skipping
    /// missing values; NaN when all are missing.
    pub fn gpu_mean_at(&self, i: usize, col: usize) -> f64 {
        let (sum, n) = (0..self.gpu_count())
            .map(|g| self.gpu_value(i, g, col) as f64)
            .filter(|v| v.is_finite())
            .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
        if n == 0 {
            f64::NAN
        } else {
            sum / n as f64
        }
    }

    pub fn host_value(&self, i: usize, col: usize) -> f32 {
        self.columns.host_at(col, i)
    }

    /// Load a trace; a cut-off tail is tolerated (`truncated` is set), any
    /// other malformed line is an error naming the file and line. A long
    /// plain trace is parsed on every core (`chunks`, `GATE_THREADS`), to
    /// the same values as on one.
    pub fn load(path: &Path) -> Result<Trace, GateError> {
        let room = chunks::workers();
        Self::load_with(path, 1 + room.len(), chunks::CHUNK_BYTES, spill_bytes())
    }

    /// `load` on `threads` threads, in chunks of `chunk_bytes` (the tests
    /// compare thread counts and chunk sizes), columns past `spill_at`
    /// bytes in a scratch file.
    pub(crate) fn load_with(
        path: &Path,
        threads: usize,
        chunk_bytes: usize,
        spill_at: usize,
    ) -> Result<Trace, GateError> {
        let file = read::open_file(path)?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        if threads > 1 && size > 2 * chunk_bytes as u64 && !read::is_compressed(&file) {
            return chunks::load(&file, path, size, threads, chunk_bytes.max(1), spill_at);
        }
        Self::read_with(read::reader_of(file, path)?, path, true, size, spill_at)
    }

    /// Read a trace from `reader`; `path` names it in messages. Beyond the
    /// syntax, times are checked (finite, from 0 to
    /// `limits::MAX_TRACE_SPAN_MS`, samples in order, nothing after the end
    /// record): every later stage indexes time slices by them (`read`).
    pub fn read<R: BufRead>(reader: R, path: &Path) -> Result<Trace, GateError> {
        Self::read_with(reader, path, true, 0, spill_bytes())
    }

    /// `read`, with the sample fast path on or off (off: every line through
    /// serde, the reference the fast path is tested against). `size_bytes`,
    /// the file's size when known (else 0): the columns are sized once for
    /// the samples it can hold, estimated from the first sample line (a
    /// guess too large costs address space, not memory: pages never
    /// written are never resident). Columns past `spill_at` bytes go to a
    /// scratch file (`columns`).
    pub(crate) fn read_with<R: BufRead>(
        reader: R,
        path: &Path,
        fast_samples: bool,
        size_bytes: u64,
        spill_at: usize,
    ) -> Result<Trace, GateError> {
        let mut lines = TraceReader::new(reader, path, fast_samples);
        let mut trace = Trace {
            path: path.to_path_buf(),
            ..Default::default()
        };
        let mut sized = size_bytes == 0;
        let mut block = RowBlock::default();
        while let Some(item) = lines.next_item()? {
            match item {
                // Nearly every line is a sample: rows go into the columns
                // a block at a time.
                Item::Sample {
                    t_ms,
                    warmup,
                    gpu,
                    host,
                } => {
                    trace.times_ms.push(t_ms);
                    trace.warmup.push(warmup);
                    block.push(gpu, host);
                    if !sized {
                        sized = true;
                        let (read, n) = lines.consumed();
                        trace
                            .reserve(size_bytes.saturating_sub(read) / n.max(1) as u64, spill_at)?;
                    }
                    if block.is_full() {
                        trace.push_block(&mut block, spill_at)?;
                    }
                }
                Item::Header(h) => trace.set_header(h.clone()),
                Item::Record(r) => trace.take_record(r),
            }
        }
        trace.push_block(&mut block, spill_at)?;
        trace.truncated = lines.cut_short();
        trace.finish_load()
    }

    /// The header read: columns of its shape.
    fn set_header(&mut self, header: Header) {
        self.header = header;
        self.columns = Columns::new(
            self.header.fingerprint.gpus.len(),
            self.header.gpu_columns.len(),
            self.header.host_columns.len(),
        );
    }

    /// Room for `more` samples (at most 2 bytes of the file per value: a
    /// value takes at least a digit and a comma).
    fn reserve(&mut self, more: u64, spill_at: usize) -> Result<(), GateError> {
        let more = more as usize;
        self.times_ms.reserve(more);
        let path = &self.path;
        self.columns
            .reserve(more, spill_at)
            .map_err(|e| spill_error(path, e))
    }

    fn push_block(&mut self, block: &mut RowBlock, spill_at: usize) -> Result<(), GateError> {
        let path = &self.path;
        self.columns
            .push_block(block, spill_at)
            .map_err(|e| spill_error(path, e))
    }

    /// A record other than a header or a sample, kept.
    fn take_record(&mut self, record: Record) {
        match record {
            Record::Event(e) => self.events.push(e),
            Record::Processes(p) => self.processes.push(p),
            Record::Output(o) => self.output.push(o),
            Record::End(e) => self.end = Some(e),
            Record::Header(_) | Record::Sample(_) => {
                unreachable!("the reader hands these over as items of their own")
            }
        }
    }

    /// After the last line: the columns finished, the GPUs the target used
    /// kept, the validity rules applied and a window closed at recording.
    fn finish_load(mut self) -> Result<Trace, GateError> {
        if self.end.is_none() {
            self.truncated = true;
        }
        let path = &self.path;
        self.columns.finish().map_err(|e| spill_error(path, e))?;
        self.keep_target_gpus();
        self.apply_validity_rules();
        if let Some(t) = self.note_time(WINDOW_CLOSED_NOTE) {
            self.close_window_at(t);
        }
        Ok(self)
    }

    /// When the recorder chose the GPUs itself (no `--gpu`), it sampled every
    /// visible GPU and noted in the end record those the target's processes
    /// appeared on. Keep only those: every later stage (statistics,
    /// baselines, environment checks, diagnosis, reports) then judges the
    /// GPUs the benchmark used, not idle neighbours. The file keeps all.
    fn keep_target_gpus(&mut self) {
        let Some(used) = self.end.as_ref().and_then(|e| e.target_gpus.clone()) else {
            return;
        };
        let gpus = &self.header.fingerprint.gpus;
        let keep: Vec<usize> = (0..gpus.len())
            .filter(|&s| used.contains(&gpus[s].index))
            .collect();
        if keep.is_empty() || keep.len() == gpus.len() {
            return;
        }
        self.columns.keep_gpus(&keep);
        let kept: Vec<GpuInfo> = keep.iter().map(|&s| gpus[s].clone()).collect();
        self.header.fingerprint.gpus = kept;
        self.processes.retain(|p| used.contains(&p.gpu));
    }

    /// Keep the sample values for later reads in a scratch file, holding
    /// none of them in memory (`Columns::park`): a capture that pools
    /// several runs parks each once it is summarised.
    pub(crate) fn park_samples(&mut self) -> Result<(), GateError> {
        let path = self.path.clone();
        self.columns.park().map_err(|e| spill_error(&path, e))
    }

    /// Exit code of the launched command, if it ran to completion.
    pub fn exit_code(&self) -> Option<i32> {
        self.end.as_ref().and_then(|e| e.exit_code)
    }
}

/// The columns of `path` could not go to a scratch file.
pub(crate) fn spill_error(path: &Path, e: std::io::Error) -> GateError {
    GateError::infra(format!(
        "'{}': a trace this long keeps its columns in a temporary file in '{}' (4 bytes per value: ~1 GB for 8 GPUs x 24 h at 100 ms), and {e}; set TMPDIR to a directory with room",
        path.display(),
        std::env::temp_dir().display()
    ))
}

/// Samples of the GPU busy columns read between two fetches of their
/// series in `Trace::idle_tail`.
const IDLE_TAIL_BLOCK: usize = 1 << 16;

/// The mean of the finite values, NaN when there is none: one sample of
/// `Trace::gpu_mean_at` (same order of additions, same result).
pub fn mean_of_finite(values: impl Iterator<Item = f32>) -> f64 {
    let (mut sum, mut count) = (0.0f64, 0u32);
    for v in values {
        let v = v as f64;
        if v.is_finite() {
            sum += v;
            count += 1;
        }
    }
    if count == 0 {
        f64::NAN
    } else {
        sum / count as f64
    }
}

#[cfg(test)]
mod tests {
    use super::write::{partial_path, write_sample_line};
    use super::*;
    use std::collections::BTreeMap;
    use std::fs::File;
    use std::io::BufReader;

    impl Trace {
        /// Every value's bits, GPU columns then host columns.
        fn columns_bits(&self) -> Vec<Vec<u32>> {
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let (ngpu, ncols) = (self.gpu_count(), self.header.gpu_columns.len());
            let gpu = (0..ngpu).flat_map(|g| (0..ncols).map(move |c| (g, c)));
            gpu.map(|(g, c)| bits(self.columns.gpu(g, c)))
                .chain((0..self.header.host_columns.len()).map(|c| bits(self.columns.host(c))))
                .collect()
        }
    }

    fn header() -> Header {
        Header {
            schema_version: SCHEMA_VERSION,
            gate_version: "test".into(),
            start_time: "2026-11-29T00:00:00Z".into(),
            interval_ms: 100,
            warmup_ms: 0,
            duration_ms: None,
            command: vec!["true".into()],
            attach_pid: None,
            tags: BTreeMap::new(),
            fingerprint: Fingerprint {
                gpus: vec![GpuInfo {
                    index: 0,
                    uuid: "GPU-x".into(),
                    name: "Synthetic".into(),
                    ..Default::default()
                }],
                ..Default::default()
            },
            gpu_columns: vec!["gpu_busy_pct".into(), "sm_active_pct".into()],
            host_columns: vec!["target_cpu_pct".into()],
            note: Some("synthetic, written by a unit test".into()),
        }
    }

    fn sample(t: f64) -> Record {
        Record::Sample(SampleRecord {
            t,
            w: t < 100.0,
            g: vec![vec![Some(50.0), None]],
            h: vec![Some(99.5)],
        })
    }

    #[test]
    fn sample_lines_match_serde() {
        let odd = [
            0.0,
            -0.0,
            1.0,
            -2.5,
            0.1,
            87.34,
            1e-7,
            5e-324,
            1e15,
            1e16,
            1e21,
            123456789.123,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        let mut records = vec![SampleRecord {
            t: 0.0,
            w: false,
            g: vec![],
            h: vec![],
        }];
        for (i, &t) in odd.iter().enumerate() {
            let vals: Vec<Option<f64>> = (0..odd.len())
                .map(|j| (j % 4 != 3).then(|| odd[(i + j) % odd.len()]))
                .collect();
            records.push(SampleRecord {
                t: if t.is_finite() { t.abs() } else { 103.94 },
                w: i % 2 == 0,
                g: vec![vals.clone(); i % 3],
                h: vals,
            });
        }
        let mut line = Vec::new();
        for s in records {
            write_sample_line(&mut line, &s);
            let mut serde = serde_json::to_vec(&Record::Sample(s)).unwrap();
            serde.push(b'\n');
            assert_eq!(
                String::from_utf8_lossy(&line),
                String::from_utf8_lossy(&serde)
            );
        }
    }

    #[test]
    fn round_trip_keeps_values_and_missing_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut w = TraceWriter::create(&path, &header()).unwrap();
        w.write(&sample(0.0)).unwrap();
        w.write(&sample(100.0)).unwrap();
        w.finish(end_record(2)).unwrap();
        assert!(!partial_path(&path).exists());
        let t = Trace::load(&path).unwrap();
        assert!(!t.truncated);
        assert_eq!(t.sample_count(), 2);
        assert_eq!(t.warmup, vec![true, false]);
        assert_eq!(t.gpu_value(1, 0, 0), 50.0);
        assert!(
            t.gpu_value(1, 0, 1).is_nan(),
            "missing must stay missing, not 0"
        );
        assert_eq!(t.host_value(0, 0), 99.5);
        assert_eq!(t.exit_code(), Some(0));
    }

    #[test]
    fn only_the_gpus_the_target_used_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut h = header();
        h.fingerprint.gpus = (0..3)
            .map(|i| GpuInfo {
                index: i,
                uuid: format!("GPU-{i}"),
                name: "Synthetic".into(),
                ..Default::default()
            })
            .collect();
        let mut w = TraceWriter::create(&path, &h).unwrap();
        w.write(&Record::Sample(SampleRecord {
            t: 0.0,
            w: false,
            g: (0..3)
                .map(|i| vec![Some(i as f64), Some(10.0 + i as f64)])
                .collect(),
            h: vec![Some(1.0)],
        }))
        .unwrap();
        w.finish(EndRecord {
            t: 100.0,
            samples: 1,
            late_samples: 0,
            exit_code: Some(0),
            signal: None,
            target_wall_s: Some(0.1),
            reason: StopReason::TargetExited,
            metrics_file: None,
            metrics_file_problem: None,
            target_gpus: Some(vec![2]),
        })
        .unwrap();
        let t = Trace::load(&path).unwrap();
        assert_eq!(t.gpu_count(), 1);
        assert_eq!(t.header.fingerprint.gpus[0].index, 2);
        assert_eq!(t.gpu_value(0, 0, 0), 2.0);
        assert_eq!(t.gpu_value(0, 0, 1), 12.0);
    }

    #[test]
    fn truncated_trace_keeps_its_complete_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut w = TraceWriter::create(&path, &header()).unwrap();
        w.write(&sample(0.0)).unwrap();
        w.write(&sample(100.0)).unwrap();
        w.flush().unwrap(); // the end of a sampling tick
        drop(w); // crash: no end record, no rename
        let partial = partial_path(&path);
        let mut text = std::fs::read_to_string(&partial).unwrap();
        text.push_str("{\"type\":\"sample\",\"t\":200.0,\"g\":[[1"); // cut mid-line
        std::fs::write(&partial, text).unwrap();
        let t = Trace::load(&partial).unwrap();
        assert!(t.truncated);
        assert_eq!(t.sample_count(), 2);
    }

    fn end_record(samples: u64) -> EndRecord {
        EndRecord {
            t: samples as f64 * 100.0,
            samples,
            late_samples: 0,
            exit_code: Some(0),
            signal: None,
            target_wall_s: Some(0.2),
            reason: StopReason::TargetExited,
            metrics_file: None,
            metrics_file_problem: None,
            target_gpus: None,
        }
    }

    #[test]
    fn zst_traces_are_written_compressed_and_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("t.jsonl");
        let packed = dir.path().join("t.jsonl.zst");
        for path in [&plain, &packed] {
            let mut w = TraceWriter::create(path, &header()).unwrap();
            for i in 0..500 {
                w.write(&sample(i as f64 * 100.0)).unwrap();
                w.flush().unwrap();
            }
            w.finish(end_record(500)).unwrap();
        }
        let raw = std::fs::read(&packed).unwrap();
        assert_eq!(raw[..4], ZSTD_MAGIC, "a .zst trace is compressed");
        assert!(raw.len() * 4 < std::fs::metadata(&plain).unwrap().len() as usize);
        let (a, b) = (Trace::load(&plain).unwrap(), Trace::load(&packed).unwrap());
        assert!(!b.truncated);
        assert_eq!(a.times_ms, b.times_ms);
        assert_eq!(a.warmup, b.warmup);
        assert_eq!(a.columns_bits(), b.columns_bits());
        assert_eq!(a.end, b.end);
    }

    #[test]
    fn a_compressed_recording_cut_short_keeps_its_flushed_ticks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl.zst");
        let mut w = TraceWriter::create(&path, &header()).unwrap();
        for i in 0..3 {
            w.write(&sample(i as f64 * 100.0)).unwrap();
            w.flush().unwrap();
        }
        drop(w); // crash: the zstd frame never ends, no rename
        let t = Trace::load(&partial_path(&path)).unwrap();
        assert!(t.truncated);
        assert_eq!(t.sample_count(), 3);
    }

    /// Every trace that ships (recorded fixtures, test data) loads to the
    /// same bits with the sample fast path as through serde alone, and
    /// with its columns in a scratch file (sized from the file, or moved
    /// there as rows arrive) as in memory.
    #[test]
    fn fast_path_equals_serde_path() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<PathBuf> = Vec::new();
        for dir in ["fixtures/traces", "tests/data"] {
            for e in std::fs::read_dir(root.join(dir)).unwrap() {
                let p = e.unwrap().path();
                if p.extension().is_some_and(|x| x == "jsonl") {
                    files.push(p);
                }
            }
        }
        assert!(files.len() >= 10, "{files:?}");
        let tbits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for p in files {
            let open = || BufReader::new(File::open(&p).unwrap());
            let (a, b) = match (
                Trace::read_with(open(), &p, true, 0, usize::MAX),
                Trace::read_with(open(), &p, false, 0, usize::MAX),
            ) {
                (Ok(a), Ok(b)) => (a, b),
                (a, b) => {
                    assert_eq!(
                        a.err().map(|e| e.to_string()),
                        b.err().map(|e| e.to_string())
                    );
                    continue;
                }
            };
            assert!(a.sample_count() > 0, "{}", p.display());
            let size = std::fs::metadata(&p).unwrap().len();
            for spilled in [
                Trace::read_with(open(), &p, true, size, 0).unwrap(),
                Trace::read_with(open(), &p, false, 0, 0).unwrap(),
            ] {
                assert!(spilled.columns.is_spilled(), "{}", p.display());
                assert!(!a.columns.is_spilled());
                assert_eq!(a.columns_bits(), spilled.columns_bits(), "{}", p.display());
                assert_eq!(
                    tbits(&a.times_ms.to_vec()),
                    tbits(&spilled.times_ms.to_vec())
                );
                assert_eq!((&a.events, a.teardown), (&spilled.events, spilled.teardown));
                assert_eq!(a.header, spilled.header);
            }
            assert_eq!(
                tbits(&a.times_ms.to_vec()),
                tbits(&b.times_ms.to_vec()),
                "{}",
                p.display()
            );
            assert_eq!(a.warmup, b.warmup);
            assert_eq!(a.columns_bits(), b.columns_bits(), "{}", p.display());
            assert_eq!(a.header, b.header);
            assert_eq!(a.events, b.events);
            assert_eq!(a.processes, b.processes);
            assert_eq!(a.end, b.end);
            assert_eq!(a.truncated, b.truncated);
        }
    }

    /// Two loads of one file: the same error, or the same trace in every
    /// part (header, times, flags, values' bits, records, windows).
    fn assert_same_load(a: &Result<Trace, GateError>, b: &Result<Trace, GateError>, what: &str) {
        let (a, b) = match (a, b) {
            (Ok(a), Ok(b)) => (a, b),
            (a, b) => {
                assert_eq!(
                    a.as_ref().err().map(|e| e.to_string()),
                    b.as_ref().err().map(|e| e.to_string()),
                    "{what}"
                );
                return;
            }
        };
        let tbits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(a.header, b.header, "{what}");
        assert_eq!(
            tbits(&a.times_ms.to_vec()),
            tbits(&b.times_ms.to_vec()),
            "{what}"
        );
        assert_eq!(a.warmup, b.warmup, "{what}");
        assert_eq!(a.columns_bits(), b.columns_bits(), "{what}");
        assert_eq!(a.events, b.events, "{what}");
        assert_eq!(a.processes, b.processes, "{what}");
        assert_eq!(a.output, b.output, "{what}");
        assert_eq!(a.end, b.end, "{what}");
        assert_eq!(
            (a.truncated, a.teardown, a.closed_at_ms),
            (b.truncated, b.teardown, b.closed_at_ms),
            "{what}"
        );
    }

    /// Every shipped trace loads the same parsed in chunks on several
    /// threads as on one thread, for chunk sizes that cut lines anywhere,
    /// with columns in memory or in a scratch file.
    #[test]
    fn a_trace_parsed_in_chunks_on_several_threads_loads_the_same() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut n = 0;
        for e in std::fs::read_dir(root.join("fixtures/traces")).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            n += 1;
            let one = Trace::load_with(&p, 1, chunks::CHUNK_BYTES, usize::MAX);
            let one = one.unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert!(one.sample_count() > 0, "{}", p.display());
            let one = Ok(one);
            for (threads, chunk, spill_at) in
                [(2, 4096, usize::MAX), (3, 997, 0), (7, 50_000, 1 << 16)]
            {
                let many = Trace::load_with(&p, threads, chunk, spill_at);
                let what = format!("{} on {threads} threads, chunks of {chunk}", p.display());
                assert_same_load(&one, &many, &what);
            }
        }
        assert!(n >= 10, "{n} fixture traces");
    }

    /// A trace of `samples` sample lines (in the writer's shape, 100 ms
    /// apart) after the test header, with `edit` applied to its lines.
    fn chunked_trace(samples: usize, edit: impl Fn(&mut Vec<String>)) -> Vec<String> {
        let mut lines = vec![serde_json::to_string(&Record::Header(Box::new(header()))).unwrap()];
        for i in 0..samples {
            let mut buf = Vec::new();
            let Record::Sample(s) = sample(i as f64 * 100.0) else {
                unreachable!()
            };
            write_sample_line(&mut buf, &s);
            lines.push(String::from_utf8(buf).unwrap().trim_end().to_string());
        }
        lines.push(line(&end(samples as f64 * 100.0)));
        edit(&mut lines);
        lines
    }

    /// Broken and unusual traces give the same error, at the same line, or
    /// the same trace, whether parsed on one thread or in chunks: the
    /// problem anywhere (first chunk, a later one, across a boundary).
    #[test]
    fn chunks_report_the_same_line_as_one_thread() {
        let event = |t: &str| {
            format!("{{\"type\":\"event\",\"t\":{t},\"kind\":\"note\",\"message\":\"x\"}}")
        };
        let serde_sample =
            |t: f64| format!("{{\"type\": \"sample\", \"t\": {t}, \"g\": [[1, 2]], \"h\": [3]}}");
        type Edit = Box<dyn Fn(&mut Vec<String>)>;
        let cases: Vec<(&str, Edit)> = vec![
            ("clean", Box::new(|_: &mut Vec<String>| {})),
            (
                "bad json",
                Box::new(|l: &mut Vec<String>| l[150] = "not json".into()),
            ),
            (
                "out of order",
                Box::new(|l: &mut Vec<String>| l.swap(120, 121)),
            ),
            (
                "out of order at a run's start",
                Box::new(move |l: &mut Vec<String>| {
                    l[90] = event("1");
                    l[91] = l[89].clone();
                    l[89] = l[200].clone();
                }),
            ),
            (
                "serde sample out of order",
                Box::new(move |l: &mut Vec<String>| l[170] = serde_sample(5.0)),
            ),
            (
                "serde sample in order",
                Box::new(move |l: &mut Vec<String>| l[170] = serde_sample(16_905.0)),
            ),
            (
                "end in the middle",
                Box::new(|l: &mut Vec<String>| {
                    let end = l.pop().unwrap();
                    l.insert(140, end.replace("30000", "13900"));
                }),
            ),
            (
                "end before the last sample",
                Box::new(|l: &mut Vec<String>| {
                    let n = l.len();
                    l[n - 1] = l[n - 1].replace("30000", "100");
                }),
            ),
            (
                "event time out of range",
                Box::new(move |l: &mut Vec<String>| l.insert(222, event("1e308"))),
            ),
            (
                "second header",
                Box::new(|l: &mut Vec<String>| {
                    let h = l[0].clone();
                    l.insert(77, h);
                }),
            ),
            (
                "blank lines",
                Box::new(|l: &mut Vec<String>| {
                    for _ in 0..crate::limits::MAX_BLANK_TRACE_LINES + 1 {
                        l.insert(60, String::new());
                    }
                }),
            ),
            (
                "some blank lines",
                Box::new(|l: &mut Vec<String>| {
                    for k in 0..40 {
                        l.insert(10 + 5 * k, String::new());
                    }
                }),
            ),
            (
                "wrong shape",
                Box::new(|l: &mut Vec<String>| {
                    l[250] = l[250].replace("[[50.0,null]]", "[[50.0]]")
                }),
            ),
            (
                "cut off",
                Box::new(|l: &mut Vec<String>| {
                    l.pop();
                    let last = l.pop().unwrap();
                    l.push(last[..last.len() / 2].to_string());
                }),
            ),
            (
                "cut before the newline",
                Box::new(|l: &mut Vec<String>| {
                    l.pop();
                }),
            ),
            (
                "not utf-8",
                Box::new(|l: &mut Vec<String>| {
                    l[99] = "{\"type\":\"output\",\"t\":1,\"line\":\"\u{fffd}\"}".into()
                }),
            ),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (name, edit) in cases {
            let lines = chunked_trace(300, edit);
            let path = dir.path().join(format!("{}.jsonl", name.replace(' ', "-")));
            let mut text = lines.join("\n");
            if name != "cut off" && name != "cut before the newline" {
                text.push('\n');
            }
            let mut bytes = text.into_bytes();
            if name == "not utf-8" {
                let at = bytes
                    .windows(3)
                    .position(|w| w == "\u{fffd}".as_bytes())
                    .unwrap();
                bytes.splice(at..at + 3, [0xff]);
            }
            std::fs::write(&path, &bytes).unwrap();
            let one = Trace::load_with(&path, 1, chunks::CHUNK_BYTES, usize::MAX);
            if name == "clean"
                || name.starts_with("some")
                || name.starts_with("cut")
                || name.ends_with("in order")
            {
                assert!(one.is_ok(), "{name}: {:?}", one.err());
            } else {
                assert!(one.is_err(), "{name}");
            }
            for chunk in [64, 333, 1000, 5000] {
                let many = Trace::load_with(&path, 3, chunk, usize::MAX);
                assert_same_load(&one, &many, &format!("{name}, chunks of {chunk}"));
            }
        }
    }

    #[test]
    fn corrupt_middle_line_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let head = serde_json::to_string(&Record::Header(Box::new(header()))).unwrap();
        std::fs::write(&path, format!("{head}\nnot json\n{head}\n")).unwrap();
        let err = Trace::load(&path).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
    }

    /// A trace of `lines` (records as JSON text) after the test header.
    fn load_lines(lines: &[String]) -> Result<Trace, GateError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let head = serde_json::to_string(&Record::Header(Box::new(header()))).unwrap();
        std::fs::write(&path, format!("{head}\n{}\n", lines.join("\n"))).unwrap();
        Trace::load(&path)
    }

    fn line(r: &Record) -> String {
        serde_json::to_string(r).unwrap()
    }

    fn end(t: f64) -> Record {
        Record::End(EndRecord { t, ..end_record(2) })
    }

    #[test]
    fn absurd_negative_and_unordered_times_are_refused_with_the_line() {
        // Issue 9: a first "t" of 1e308 panicked in the report; 1e13 asked
        // for 240 GB.
        for t in ["1e308", "1e13", "-5", "1e400"] {
            let l = format!("{{\"type\":\"sample\",\"t\":{t},\"g\":[[1,2]],\"h\":[3]}}");
            let err = load_lines(&[l]).unwrap_err().to_string();
            assert!(
                err.contains("line 2: time") || err.contains("line 2, column"),
                "{t}: {err}"
            );
        }
        let err = load_lines(&[line(&sample(100.0)), line(&sample(50.0))])
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 3: sample time 50 ms is before"), "{err}");
        let err = load_lines(&[line(&sample(100.0)), line(&end(50.0))])
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 3: the end record's time"), "{err}");
        let mut ev = EventRecord {
            t: f64::MAX,
            kind: EventKind::Note,
            gpu: None,
            pid: None,
            code: None,
            message: "x".into(),
        };
        let err = load_lines(&[line(&Record::Event(ev.clone()))])
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2: time"), "{err}");
        ev.t = 10.0;
        assert!(load_lines(&[
            line(&sample(0.0)),
            line(&Record::Event(ev)),
            line(&end(100.0))
        ])
        .is_ok());
    }

    #[test]
    fn a_record_after_the_end_record_is_refused() {
        let err = load_lines(&[line(&sample(0.0)), line(&end(100.0)), line(&sample(200.0))])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 4: a record after the end record (line 3)"),
            "{err}"
        );
    }

    #[test]
    fn non_utf8_and_overlong_lines_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let head = serde_json::to_string(&Record::Header(Box::new(header()))).unwrap();
        let mut bytes = format!("{head}\n{}\n", line(&sample(0.0))).into_bytes();
        bytes.extend_from_slice(b"{\"type\":\"output\",\"t\":1,\"line\":\"\xff\"}\n");
        std::fs::write(&path, &bytes).unwrap();
        let err = Trace::load(&path).unwrap_err().to_string();
        assert!(err.contains("line 3: not UTF-8"), "{err}");

        let mut r = std::io::Cursor::new(b"abcdef\nxy".to_vec());
        let mut buf = Vec::new();
        assert_eq!(read_line_capped(&mut r, &mut buf, 3).unwrap(), 7);
        assert_eq!(buf, b"abcd", "keeps cap + 1 bytes");
        buf.clear();
        assert_eq!(read_line_capped(&mut r, &mut buf, 3).unwrap(), 2);
        assert_eq!(buf, b"xy");
    }

    #[test]
    fn special_files_are_refused_not_read_for_ever() {
        let err = Trace::load(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(
            err.contains("character device, not a regular file"),
            "{err}"
        );
    }

    #[test]
    fn wrong_schema_version_is_rejected_with_a_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut h = header();
        h.schema_version = 99;
        let head = serde_json::to_string(&Record::Header(Box::new(h))).unwrap();
        std::fs::write(&path, format!("{head}\n")).unwrap();
        let err = Trace::load(&path).unwrap_err().to_string();
        assert!(err.contains("schema_version 99"), "{err}");
    }

    #[test]
    fn rounding_keeps_three_significant_decimals_for_small_values() {
        assert_eq!(round_value(0.04321), 0.043);
        assert_eq!(round_value(97.456), 97.46);
        assert_eq!(round_value(20270.4), 20270.0);
    }
}
