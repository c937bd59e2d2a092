//! The trace format's types: what one line of a trace holds.
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
//! Reading is `trace::read` (one streaming reader for every consumer),
//! writing `trace::write`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub(crate) const SCHEMA_VERSION: u32 = 1;

/// The first bytes of a zstd frame: how a compressed trace is recognised.
pub(crate) const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// True when `path` names a compressed trace (`.zst`): the writer then
/// compresses. Readers look at the content instead.
pub(crate) fn is_compressed_path(path: &Path) -> bool {
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
    pub(crate) memory_total_mib: f64,
    #[serde(default)]
    pub(crate) power_limit_w: Option<f64>,
    #[serde(default)]
    pub(crate) mig_enabled: Option<bool>,
    #[serde(default)]
    pub(crate) ecc_enabled: Option<bool>,
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
    pub(crate) nvml_version: Option<String>,
    pub(crate) cuda_driver_version: Option<String>,
}

impl Fingerprint {
    pub fn gpu_model(&self) -> String {
        self.gpus
            .first()
            .map(|g| g.name.clone())
            .unwrap_or_else(|| "none".into())
    }

    pub(crate) fn driver_major(&self) -> Option<String> {
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
    pub(crate) duration_ms: Option<u64>,
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
    /// name, `analysis::framework`); one event per framework.
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
    pub(crate) gpu_mem_mib: Option<f64>,
    #[serde(default)]
    pub(crate) sm_share_pct: Option<f64>,
    #[serde(default)]
    pub(crate) cpu_pct: Option<f64>,
    #[serde(default)]
    pub(crate) rss_mib: Option<f64>,
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
pub(crate) const WARMUP_RELEASED_NOTE: &str = "warm-up released by --warmup-until at output line: ";

/// The recorder's `note` when `--warmup-until` never matched: every sample
/// is warm-up, nothing was measured (the run fails: `gate::run_failure`).
pub(crate) const WARMUP_NEVER_RELEASED_NOTE: &str =
    "--warmup-until never matched a line of the benchmark's stdout: every sample is warm-up";

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
    /// Why the recording stopped.
    pub reason: StopReason,
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

/// Why a recording stopped (the end record's `reason`), written as its
/// snake_case name. A name this gate does not know (a hand-edited trace)
/// is kept as written, so it reads and prints as before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum StopReason {
    /// The launched command exited by itself.
    TargetExited,
    /// The window (`--duration`) was over, or the longest trace gate reads.
    DurationReached,
    /// gate received a signal and forwarded it to the benchmark.
    Interrupted,
    /// `--warmup-until` never matched within `--warmup-timeout`.
    WarmupTimeout,
    /// A recording of a watch segment ended by gate (`gate watch`).
    Stopped,
    /// gate failed (only in a `.partial`).
    Error,
    /// Any other name, kept as written.
    Other(String),
}

impl StopReason {
    /// The name written in the trace.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::TargetExited => "target_exited",
            StopReason::DurationReached => "duration_reached",
            StopReason::Interrupted => "interrupted",
            StopReason::WarmupTimeout => "warmup_timeout",
            StopReason::Stopped => "stopped",
            StopReason::Error => "error",
            StopReason::Other(s) => s,
        }
    }
}

impl From<String> for StopReason {
    fn from(s: String) -> StopReason {
        match s.as_str() {
            "target_exited" => StopReason::TargetExited,
            "duration_reached" => StopReason::DurationReached,
            "interrupted" => StopReason::Interrupted,
            "warmup_timeout" => StopReason::WarmupTimeout,
            "stopped" => StopReason::Stopped,
            "error" => StopReason::Error,
            _ => StopReason::Other(s),
        }
    }
}

impl From<StopReason> for String {
    fn from(r: StopReason) -> String {
        match r {
            StopReason::Other(s) => s,
            known => known.as_str().to_string(),
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
