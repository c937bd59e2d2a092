//! The trace: what `gate record` writes and every other command reads.
//!
//! Format (schema_version 1): JSON Lines, one record per line.
//! - line 1: `{"type":"header", ...}` environment fingerprint, settings, and
//!   the column names of the per-GPU and host sample vectors;
//! - then any number of `sample`, `event`, `processes` and `output` records,
//!   in time order;
//! - last: `{"type":"end", ...}`. A trace without it was cut short (crash,
//!   kill, full disk): readers keep the complete prefix and say so.
//!
//! Samples are column vectors (`g`: one array per GPU, `h`: host) rather than
//! objects, so a 1-hour, 8-GPU trace at 100 ms stays well under 100 MB.
//! Missing or unsupported values are `null`, never 0. Readers find columns
//! by the header's names, so a column added later (the per-role host
//! columns) needs no new `schema_version`: older traces lack it and read
//! it as missing.
//!
//! The writer flushes at least once a second and writes to `PATH.partial`,
//! renaming onto `PATH` only when the recording ends: a crash leaves a
//! readable `.partial` prefix (all but the last second at most) and never
//! replaces a good trace.

/// GPM-stripped twins of recorded traces (`scripts/strip-gpm.sh`).
pub mod nogpm;
/// Which samples count: rules shared by the recorder and this loader.
pub mod validity;

use crate::error::GateError;
use crate::{files, limits};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// The sample values in columns: in memory, or a scratch file for long traces.
pub mod columns;
mod fast_sample;
pub use columns::{spill_bytes, spill_mb_from_env, Columns, SPILL_ENV};

pub const SCHEMA_VERSION: u32 = 1;

/// The first bytes of a zstd frame: how a compressed trace is recognised.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// zstd level for `.jsonl.zst` traces: level 3 (zstd's default) compresses
/// real traces ~8x at a few tens of microseconds per sampling tick.
const ZSTD_LEVEL: i32 = 3;

/// True when `path` names a compressed trace (`.zst`): the writer then
/// compresses. Readers look at the content instead.
pub fn is_compressed_path(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("zst"))
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct HostInfo {
    pub hostname: String,
    pub cpu_model: String,
    pub cpu_count: u32,
    pub kernel: String,
    pub os: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct GpuInfo {
    pub index: u32,
    pub uuid: String,
    pub name: String,
    #[serde(default)]
    pub pci_bus_id: String,
    #[serde(default)]
    pub memory_total_mib: f64,
    #[serde(default)]
    pub power_limit_w: Option<f64>,
    #[serde(default)]
    pub mig_enabled: Option<bool>,
    #[serde(default)]
    pub ecc_enabled: Option<bool>,
    #[serde(default)]
    pub gpm_supported: bool,
    /// Metric ids this GPU cannot report (recorded as null, never 0).
    #[serde(default)]
    pub unsupported: Vec<String>,
}

/// Everything that must match for two runs to be comparable, plus provenance.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Fingerprint {
    pub host: HostInfo,
    pub gpus: Vec<GpuInfo>,
    pub driver_version: Option<String>,
    pub nvml_version: Option<String>,
    pub cuda_driver_version: Option<String>,
}

impl Fingerprint {
    pub fn gpu_model(&self) -> String {
        self.gpus
            .first()
            .map(|g| g.name.clone())
            .unwrap_or_else(|| "none".into())
    }

    pub fn driver_major(&self) -> Option<String> {
        self.driver_version
            .as_deref()
            .and_then(|v| v.split('.').next())
            .map(str::to_string)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Header {
    pub schema_version: u32,
    pub gate_version: String,
    /// Wall-clock start, RFC 3339 UTC.
    pub start_time: String,
    pub interval_ms: u64,
    pub warmup_ms: u64,
    pub duration_ms: Option<u64>,
    /// argv of the launched command; empty when attached to a PID.
    pub command: Vec<String>,
    pub attach_pid: Option<u32>,
    pub tags: BTreeMap<String, String>,
    pub fingerprint: Fingerprint,
    /// Column names of each per-GPU sample vector.
    pub gpu_columns: Vec<String>,
    /// Column names of the host sample vector.
    pub host_columns: Vec<String>,
    /// Free text: where and how a fixture was made.
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SampleRecord {
    /// Milliseconds since the recording started (monotonic clock).
    pub t: f64,
    /// True for warm-up samples (kept, excluded from statistics).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub w: bool,
    /// One vector per GPU, in the header's `gpu_columns` order.
    pub g: Vec<Vec<Option<f64>>>,
    /// Host vector, in the header's `host_columns` order.
    pub h: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    TargetStart,
    TargetExit,
    Xid,
    NvmlError,
    GpmInvalid,
    LateSample,
    OutputTruncated,
    Note,
    /// A framework found in the target's mapped libraries (message: its
    /// name, `diagnose::framework`); one event per framework.
    Framework,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EventRecord {
    pub t: f64,
    pub kind: EventKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Exit code for `target_exit`, Xid number for `xid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProcessInfo {
    pub pid: u32,
    pub name: String,
    #[serde(default)]
    pub cmdline: String,
    /// Part of the target's process tree.
    pub in_target: bool,
    #[serde(default)]
    pub gpu_mem_mib: Option<f64>,
    #[serde(default)]
    pub sm_share_pct: Option<f64>,
    #[serde(default)]
    pub cpu_pct: Option<f64>,
    #[serde(default)]
    pub rss_mib: Option<f64>,
}

/// Who is on a GPU; written when the set of PIDs changes and at the end.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProcessesRecord {
    pub t: f64,
    pub gpu: u32,
    pub procs: Vec<ProcessInfo>,
}

/// How the recorder's `note` event that ends a `--warmup-until` warm-up
/// begins (the matched line follows): user metrics count from it.
pub const WARMUP_RELEASED_NOTE: &str = "warm-up released by --warmup-until at output line: ";

/// How the recorder's `note` event that closes the measured window at an
/// `--until` line begins (the matched line follows): every statistic and
/// user metric ends there.
pub const WINDOW_CLOSED_NOTE: &str = "window closed by --until at output line: ";

/// One line the target printed on stdout (kept so user metrics can be
/// parsed from a replayed trace).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OutputRecord {
    pub t: f64,
    pub line: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EndRecord {
    pub t: f64,
    pub samples: u64,
    pub late_samples: u64,
    /// Exit code of the launched command (None when attached or killed by a signal).
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub signal: Option<i32>,
    /// Wall time of the target, seconds (launch to exit), when launched.
    pub target_wall_s: Option<f64>,
    /// Why the recording stopped: "target_exited", "duration_reached",
    /// "interrupted", "warmup_timeout" (`--warmup-until` never matched), or
    /// "error" (gate failed; only in a `.partial`).
    pub reason: String,
    /// Contents of the `--metrics-file` the benchmark wrote, if any.
    #[serde(default)]
    pub metrics_file: Option<String>,
    /// Why nothing of `--metrics-file` was kept (absent, written before the
    /// run, too large...): `metric_sources::keep`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_file_problem: Option<crate::metric_sources::MetricsFileProblem>,
    /// GPUs (NVML indices) on which the target's process tree was seen.
    /// When GPUs were not chosen with `--gpu`, statistics use these only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_gpus: Option<Vec<u32>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Header(Box<Header>),
    Sample(SampleRecord),
    Event(EventRecord),
    Processes(ProcessesRecord),
    Output(OutputRecord),
    End(EndRecord),
}

/// A trace loaded in memory, its samples in `Columns`.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub path: PathBuf,
    pub header: Header,
    pub times_ms: Vec<f64>,
    pub warmup: Vec<bool>,
    /// The sample values, one series per GPU and metric and per host metric.
    pub columns: Columns,
    pub events: Vec<EventRecord>,
    pub processes: Vec<ProcessesRecord>,
    pub output: Vec<OutputRecord>,
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
            // `validity::row_is_gpm_glitch`, a column at a time: per GPU,
            // which samples have a finite GPM value, and which a nonzero one.
            let glitches: Vec<Vec<bool>> = (0..ngpu)
                .map(|g| {
                    let (mut any, mut nonzero) = (vec![false; n], vec![false; n]);
                    for &c in &gpm {
                        for (i, &v) in self.columns.gpu(g, c).iter().enumerate() {
                            if v.is_finite() {
                                any[i] = true;
                                nonzero[i] |= v != 0.0;
                            }
                        }
                    }
                    let busy = self.columns.gpu(g, busy_col);
                    (0..n)
                        .map(|i| any[i] && !nonzero[i] && validity::is_glitch_busy(busy[i] as f64))
                        .collect()
                })
                .collect();
            for i in 0..n {
                for (g, glitch) in glitches.iter().enumerate() {
                    if !glitch[i] {
                        continue;
                    }
                    for &c in &gpm {
                        self.columns.gpu_mut(g, c)[i] = f32::NAN;
                    }
                    self.events.push(EventRecord {
                        t: self.times_ms[i],
                        kind: EventKind::GpmInvalid,
                        gpu: Some(g as u32),
                        pid: None,
                        code: None,
                        message: "GPM reading all zero while the GPU was busy; treated as missing when the trace was loaded".into(),
                    });
                }
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
            .is_some_and(|e| e.reason == "target_exited");
        if !exited || self.gpu_count() == 0 {
            return 0;
        }
        let mean = self.gpu_mean_series(busy_col);
        let (times, busy): (Vec<f64>, Vec<f64>) = (0..self.sample_count())
            .filter(|&i| !self.warmup[i])
            .map(|i| (self.times_ms[i], mean[i]))
            .unzip();
        validity::teardown_len(&times, &busy)
    }

    /// Close the measured window at `t_ms` (an `--until` line): every
    /// sample from then on is teardown. A window already closed earlier
    /// stays as it is.
    pub fn close_window_at(&mut self, t_ms: f64) {
        if self.closed_at_ms.is_some_and(|c| c <= t_ms) {
            return;
        }
        let n = self.sample_count();
        let first = self.times_ms.partition_point(|&t| t < t_ms);
        self.teardown = n - first;
        self.closed_at_ms = Some(t_ms);
    }

    /// The time of the first note event whose message starts with `prefix`
    /// (`WARMUP_RELEASED_NOTE`, `WINDOW_CLOSED_NOTE`).
    pub fn note_time(&self, prefix: &str) -> Option<f64> {
        self.events
            .iter()
            .find(|e| e.kind == EventKind::Note && e.message.starts_with(prefix))
            .map(|e| e.t)
    }

    /// When warm-up ended (ms since the recording started): the later of
    /// `--warmup` and the `--warmup-until` line; 0 when nothing was marked
    /// warm-up. Output lines from then on belong to the measured window.
    pub fn warmup_end_ms(&self) -> f64 {
        if !self.warmup.iter().any(|&w| w) {
            return 0.0;
        }
        let start = self.header.warmup_ms as f64;
        match self.note_time(WARMUP_RELEASED_NOTE) {
            Some(t) => start.max(t),
            // Older traces lack the note: the first steady sample bounds it.
            None => match self.warmup.iter().position(|&w| !w) {
                Some(i) => start.max(self.times_ms[i] - self.header.interval_ms as f64),
                None => start,
            },
        }
    }

    /// Close the window at the first output line after warm-up that
    /// matches `until` (`check --until` on a replayed trace); false when no
    /// line matches.
    pub fn close_window_at_line(&mut self, until: &regex::Regex) -> bool {
        let released = self.warmup_end_ms();
        let hit = self
            .output
            .iter()
            .find(|o| o.t >= released && until.is_match(&o.line))
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
            .unwrap_or(self.times_ms[n - self.teardown]);
        let wall = self.end.as_ref()?.target_wall_s?;
        Some((wall - start_ms / 1000.0).max(0.0))
    }

    /// Whether sample `i` belongs to the steady window: after warm-up and
    /// before teardown. Every statistic, feature and baseline uses this.
    pub fn is_steady(&self, i: usize) -> bool {
        !self.warmup[i] && i + self.teardown < self.sample_count()
    }

    /// Value of GPU column `col` on GPU slot `gpu` (position in the header's
    /// GPU list) at sample `i`; NaN when missing.
    pub fn gpu_value(&self, i: usize, gpu: usize, col: usize) -> f32 {
        self.columns.gpu_at(gpu, col, i)
    }

    /// The whole series of GPU column `col` on GPU slot `gpu`.
    pub fn gpu_series(&self, gpu: usize, col: usize) -> &[f32] {
        self.columns.gpu(gpu, col)
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

    /// `gpu_mean_at` for every sample, a GPU column at a time (the same
    /// additions in the same order, so the same bits).
    pub fn gpu_mean_series(&self, col: usize) -> Vec<f64> {
        let n = self.sample_count();
        let mut sum = vec![0.0f64; n];
        let mut count = vec![0u32; n];
        for g in 0..self.gpu_count() {
            for ((s, k), &v) in sum.iter_mut().zip(&mut count).zip(self.gpu_series(g, col)) {
                let v = v as f64;
                if v.is_finite() {
                    *s += v;
                    *k += 1;
                }
            }
        }
        sum.iter()
            .zip(&count)
            .map(|(&s, &k)| if k == 0 { f64::NAN } else { s / k as f64 })
            .collect()
    }

    pub fn host_value(&self, i: usize, col: usize) -> f32 {
        self.columns.host_at(col, i)
    }

    /// The whole series of host column `col`.
    pub fn host_series(&self, col: usize) -> &[f32] {
        self.columns.host(col)
    }

    /// Load a trace; a cut-off tail is tolerated (`truncated` is set), any
    /// other malformed line is an error naming the file and line.
    pub fn load(path: &Path) -> Result<Trace, GateError> {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        Self::read_with(open_reader(path)?, path, true, size, spill_bytes())
    }

    /// Read a trace from `reader`; `path` names it in messages. Beyond the
    /// syntax, times are checked (finite, from 0 to
    /// `limits::MAX_TRACE_SPAN_MS`, samples in order, nothing after the end
    /// record): every later stage indexes time slices by them.
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
    fn read_with<R: BufRead>(
        mut reader: R,
        path: &Path,
        fast_samples: bool,
        size_bytes: u64,
        spill_at: usize,
    ) -> Result<Trace, GateError> {
        let mut read_bytes = 0u64;
        let mut sized = size_bytes == 0;
        let mut trace = Trace {
            path: path.to_path_buf(),
            ..Default::default()
        };
        let mut bytes = Vec::new();
        let mut lineno = 0usize;
        let mut have_header = false;
        let mut end_line = 0usize;
        let mut row = fast_sample::Row::default();
        let mut blank_lines = 0usize;
        loop {
            bytes.clear();
            let n = match read_line_capped(&mut reader, &mut bytes, limits::MAX_TRACE_LINE_BYTES) {
                Ok(n) => n,
                // A zstd stream whose writer died: the frame never ended.
                // Like a cut-off line, keep the complete prefix.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && have_header => {
                    trace.truncated = true;
                    break;
                }
                // A size limit: the message says which.
                Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                    return Err(GateError::bad_file(path, e.to_string()))
                }
                Err(e) => {
                    return Err(GateError::bad_file(
                        path,
                        format!("line {}: read error: {e}", lineno + 1),
                    ))
                }
            };
            if n == 0 {
                break;
            }
            lineno += 1;
            read_bytes += n as u64;
            if n > limits::MAX_TRACE_LINE_BYTES {
                return Err(GateError::bad_file(
                    path,
                    format!(
                        "line {lineno}: longer than the {} limit for one trace record (docs/limits.md); the trace is corrupt, record it again",
                        limits::bytes_text(limits::MAX_TRACE_LINE_BYTES as u64)
                    ),
                ));
            }
            let complete = bytes.ends_with(b"\n");
            // Nearly every line is a sample: straight into the columns.
            if fast_samples
                && have_header
                && end_line == 0
                && trace.push_sample_line(&bytes, &mut row, spill_at, path)?
            {
                if !sized {
                    sized = true;
                    // At most 2 bytes of the file per value reserved (a
                    // value takes at least a digit and a comma).
                    let more = (size_bytes.saturating_sub(read_bytes) / n as u64) as usize;
                    trace.times_ms.reserve(more);
                    trace.warmup.reserve(more);
                    trace
                        .columns
                        .reserve(more, spill_at)
                        .map_err(|e| spill_error(path, e))?;
                }
                continue;
            }
            let Ok(line) = std::str::from_utf8(&bytes) else {
                if !complete && have_header {
                    // The writer died mid-character: keep the complete prefix.
                    trace.truncated = true;
                    break;
                }
                return Err(GateError::bad_file(
                    path,
                    format!("line {lineno}: not UTF-8 text; the trace is corrupt, record it again"),
                ));
            };
            let text = line.trim_end();
            if text.is_empty() {
                blank_lines += 1;
                if blank_lines > limits::MAX_BLANK_TRACE_LINES {
                    return Err(GateError::bad_file(
                        path,
                        format!(
                            "line {lineno}: more than {} empty lines: not a trace as gate writes them (docs/limits.md)",
                            limits::MAX_BLANK_TRACE_LINES
                        ),
                    ));
                }
                continue;
            }
            let record: Record = match serde_json::from_str(text) {
                Ok(r) => r,
                Err(_) if !complete && have_header => {
                    // The writer died mid-line: keep the complete prefix.
                    trace.truncated = true;
                    break;
                }
                Err(e) => {
                    if lineno == 1 {
                        return Err(header_error(path, text, e));
                    }
                    return Err(GateError::bad_file(
                        path,
                        format!(
                            "line {lineno}, column {}: {e}; the trace is corrupt, record it again",
                            e.column()
                        ),
                    ));
                }
            };
            match record {
                Record::Header(h) => {
                    if have_header {
                        return Err(GateError::bad_file(
                            path,
                            format!("line {lineno}: a second header"),
                        ));
                    }
                    if h.schema_version != SCHEMA_VERSION {
                        return Err(GateError::bad_file(
                            path,
                            format!(
                                "trace schema_version {} is not supported (this gate reads {}); re-record with this gate version",
                                h.schema_version, SCHEMA_VERSION
                            ),
                        ));
                    }
                    trace.header = *h;
                    trace.columns = Columns::new(
                        trace.header.fingerprint.gpus.len(),
                        trace.header.gpu_columns.len(),
                        trace.header.host_columns.len(),
                    );
                    have_header = true;
                }
                _ if !have_header => {
                    return Err(GateError::bad_file(
                        path,
                        "line 1: not a gate trace (the first line must be the header record)",
                    ))
                }
                _ if end_line > 0 => {
                    return Err(GateError::bad_file(
                        path,
                        format!(
                            "line {lineno}: a record after the end record (line {end_line}); the trace was edited or joined with another, record it again"
                        ),
                    ))
                }
                Record::Sample(s) => {
                    check_time(s.t, path, lineno)?;
                    if let Some(&prev) = trace.times_ms.last() {
                        if s.t < prev {
                            return Err(GateError::bad_file(
                                path,
                                format!(
                                    "line {lineno}: sample time {} ms is before the previous sample's ({prev} ms); samples must be in time order, record the trace again",
                                    s.t
                                ),
                            ));
                        }
                    }
                    trace.push_sample(s, path, lineno, spill_at)?
                }
                Record::Event(e) => {
                    check_time(e.t, path, lineno)?;
                    trace.events.push(e)
                }
                Record::Processes(p) => {
                    check_time(p.t, path, lineno)?;
                    trace.processes.push(p)
                }
                Record::Output(o) => {
                    check_time(o.t, path, lineno)?;
                    trace.output.push(o)
                }
                Record::End(e) => {
                    check_time(e.t, path, lineno)?;
                    if let Some(&last) = trace.times_ms.last() {
                        if e.t < last {
                            return Err(GateError::bad_file(
                                path,
                                format!(
                                    "line {lineno}: the end record's time {} ms is before the last sample's ({last} ms); the trace is corrupt, record it again",
                                    e.t
                                ),
                            ));
                        }
                    }
                    end_line = lineno;
                    trace.end = Some(e)
                }
            }
        }
        if !have_header {
            return Err(GateError::bad_file(path, "empty file: not a gate trace"));
        }
        if trace.end.is_none() {
            trace.truncated = true;
        }
        trace.columns.finish().map_err(|e| spill_error(path, e))?;
        trace.keep_target_gpus();
        trace.apply_validity_rules();
        if let Some(t) = trace.note_time(WINDOW_CLOSED_NOTE) {
            trace.close_window_at(t);
        }
        Ok(trace)
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

    /// The fast path for a sample line in the writer's exact shape (see
    /// `fast_sample`); false when the line needs the general parser.
    fn push_sample_line(
        &mut self,
        line: &[u8],
        row: &mut fast_sample::Row,
        spill_at: usize,
        path: &Path,
    ) -> Result<bool, GateError> {
        let (ngpu, ncols, nhost) = (
            self.header.fingerprint.gpus.len(),
            self.header.gpu_columns.len(),
            self.header.host_columns.len(),
        );
        if !fast_sample::parse_into(line.trim_ascii_end(), ngpu, ncols, nhost, row) {
            return Ok(false);
        }
        // The time checks of the general path: a failing line is re-read
        // there, which names the problem.
        let t = row.t;
        let time_ok = t.is_finite()
            && (0.0..=limits::MAX_TRACE_SPAN_MS).contains(&t)
            && self.times_ms.last().is_none_or(|&p| t >= p);
        if time_ok {
            self.times_ms.push(t);
            self.warmup.push(row.w);
            self.columns
                .push_row(&row.gpu, &row.host, spill_at)
                .map_err(|e| spill_error(path, e))?;
        }
        Ok(time_ok)
    }

    fn push_sample(
        &mut self,
        s: SampleRecord,
        path: &Path,
        lineno: usize,
        spill_at: usize,
    ) -> Result<(), GateError> {
        let ngpu = self.gpu_count();
        let ncols = self.header.gpu_columns.len();
        if s.g.len() != ngpu
            || s.g.iter().any(|v| v.len() != ncols)
            || s.h.len() != self.header.host_columns.len()
        {
            return Err(GateError::bad_file(
                path,
                format!(
                    "line {lineno}: sample shape does not match the header's GPU list and columns"
                ),
            ));
        }
        self.times_ms.push(s.t);
        self.warmup.push(s.w);
        let value = |v: &Option<f64>| v.map(|x| x as f32).unwrap_or(f32::NAN);
        let gpu: Vec<f32> = s.g.iter().flatten().map(value).collect();
        let host: Vec<f32> = s.h.iter().map(value).collect();
        self.columns
            .push_row(&gpu, &host, spill_at)
            .map_err(|e| spill_error(path, e))
    }

    /// Keep the sample values for later reads in a scratch file, holding
    /// none of them in memory (`Columns::park`): a capture that pools
    /// several runs parks each once it is summarised.
    pub fn park_samples(&mut self) -> Result<(), GateError> {
        let path = self.path.clone();
        self.columns.park().map_err(|e| spill_error(&path, e))
    }

    /// Free the sample columns (times, warm-up flags, values), keeping the
    /// header, events, processes, output and end record. For callers that
    /// have derived what they need from the samples and hold many traces
    /// (`check --multi-node`); `sample_count()` is 0 afterwards.
    pub fn drop_samples(&mut self) {
        self.times_ms = Vec::new();
        self.warmup = Vec::new();
        self.columns = Columns::default();
        self.teardown = 0;
        self.closed_at_ms = None;
    }

    /// Exit code of the launched command, if it ran to completion.
    pub fn exit_code(&self) -> Option<i32> {
        self.end.as_ref().and_then(|e| e.exit_code)
    }
}

/// The columns of `path` could not go to a scratch file.
fn spill_error(path: &Path, e: std::io::Error) -> GateError {
    GateError::infra(format!(
        "'{}': a trace this long keeps its columns in a temporary file in '{}' (4 bytes per value: ~1 GB for 8 GPUs x 24 h at 100 ms), and {e}; set TMPDIR to a directory with room",
        path.display(),
        std::env::temp_dir().display()
    ))
}

/// Open a trace file for reading, as `Trace::load` does (a regular file
/// within the size limit; zstd-compressed or plain, told by its first
/// bytes): for readers that stream its lines (`gate watch --replay`).
pub fn open_reader(path: &Path) -> Result<Box<dyn BufRead>, GateError> {
    let file = files::open_input(path, limits::MAX_TRACE_BYTES).map_err(|e| {
        let fix = if e.kind() == std::io::ErrorKind::NotFound {
            "record one with 'gate record --output FILE -- CMD'"
        } else {
            "give a trace file written by 'gate record'"
        };
        GateError::bad_file(path, format!("cannot open trace: {e}; {fix}"))
    })?;
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

/// One sample line parsed by the fast path `Trace::read` uses.
#[derive(Debug, Default)]
pub struct SampleRow {
    pub t_ms: Vec<f64>,
    pub warmup: Vec<bool>,
    /// `[gpu][column]` flattened, NaN = missing.
    pub gpu: Vec<f32>,
    pub host: Vec<f32>,
}

/// Parse a sample line in the writer's exact shape into `row` (replacing
/// what it held), for readers that stream (`gate watch --replay`); false
/// when the line needs the general parser (serde, then `Record`).
pub fn parse_sample_row(
    line: &[u8],
    ngpu: usize,
    ncols: usize,
    nhost: usize,
    row: &mut SampleRow,
) -> bool {
    row.t_ms.clear();
    row.warmup.clear();
    let mut parsed = fast_sample::Row {
        gpu: std::mem::take(&mut row.gpu),
        host: std::mem::take(&mut row.host),
        ..Default::default()
    };
    let ok = fast_sample::parse_into(line.trim_ascii_end(), ngpu, ncols, nhost, &mut parsed);
    row.gpu = parsed.gpu;
    row.host = parsed.host;
    if ok {
        row.t_ms.push(parsed.t);
        row.warmup.push(parsed.w);
    } else {
        row.gpu.clear();
        row.host.clear();
    }
    ok
}

/// The values of `series` at the `steady` samples, as f64, those `keep`
/// accepts. A steady window of consecutive samples (the usual case:
/// warm-up first, teardown last) is read as one slice.
pub fn gather<T: Copy + Into<f64>>(
    series: &[T],
    steady: &[usize],
    keep: fn(&f64) -> bool,
) -> Vec<f64> {
    let consecutive = match (steady.first(), steady.last()) {
        (Some(&a), Some(&b)) => b - a + 1 == steady.len(),
        _ => true,
    };
    if consecutive {
        let range = steady.first().map_or(0..0, |&a| a..a + steady.len());
        series[range]
            .iter()
            .map(|&v| v.into())
            .filter(keep)
            .collect()
    } else {
        steady
            .iter()
            .map(|&i| series[i].into())
            .filter(keep)
            .collect()
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
        let (used, done) = match chunk.iter().position(|&b| b == b'\n') {
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

/// Round to a few significant decimals so traces stay small and diffs stable.
pub fn round_value(v: f64) -> f64 {
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
pub struct TraceWriter {
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
pub fn write_sample_line(buf: &mut Vec<u8>, s: &SampleRecord) {
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

    pub fn partial_path(&self) -> &Path {
        &self.partial
    }

    /// Nothing was recorded (the target could not be started): remove the
    /// `.partial` this writer created.
    pub fn abandon(self) {
        let partial = self.partial.clone();
        drop(self);
        let _ = std::fs::remove_file(partial);
    }

    /// The recording failed: end the `.partial` with `end` so it reads as a
    /// complete record of what happened, but leave it under its `.partial`
    /// name (a failed recording never replaces a trace). Best effort: the
    /// disk may be what failed.
    pub fn close_as_partial(mut self, end: EndRecord) -> PathBuf {
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

pub fn partial_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".partial");
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Trace {
        /// Every value's bits, GPU columns then host columns.
        fn columns_bits(&self) -> Vec<Vec<u32>> {
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let (ngpu, ncols) = (self.gpu_count(), self.header.gpu_columns.len());
            let gpu = (0..ngpu).flat_map(|g| (0..ncols).map(move |c| (g, c)));
            gpu.map(|(g, c)| bits(self.gpu_series(g, c)))
                .chain((0..self.header.host_columns.len()).map(|c| bits(self.host_series(c))))
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
            reason: "target_exited".into(),
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
            reason: "target_exited".into(),
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
                assert_eq!(tbits(&a.times_ms), tbits(&spilled.times_ms));
                assert_eq!((&a.events, a.teardown), (&spilled.events, spilled.teardown));
                assert_eq!(a.header, spilled.header);
            }
            assert_eq!(tbits(&a.times_ms), tbits(&b.times_ms), "{}", p.display());
            assert_eq!(a.warmup, b.warmup);
            assert_eq!(a.columns_bits(), b.columns_bits(), "{}", p.display());
            assert_eq!(a.header, b.header);
            assert_eq!(a.events, b.events);
            assert_eq!(a.processes, b.processes);
            assert_eq!(a.end, b.end);
            assert_eq!(a.truncated, b.truncated);
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
