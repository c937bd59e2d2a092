//! The recording engine: launch a command (or attach to a PID), sample GPU and host
//! counters of its process tree at a fixed interval, and write a trace.
//!
//! Window semantics (also in the README):
//! - Samples start when the target starts. Those in the first `--warmup`
//!   are kept but marked warm-up; with `--warmup-until REGEX`, warm-up also
//!   lasts until the benchmark prints a stdout line matching REGEX (setup
//!   time varies: Python+torch took 8.5 s warm and 16 s on a cold H200 host).
//! - `--duration D`: the measured window is D after warm-up. A launched
//!   command still running then is stopped (SIGTERM to its process group,
//!   SIGKILL after 10 s) and the run counts as complete ("duration_reached").
//!   An attached process is never signalled: gate just stops watching.
//! - A command that ends before the window is over ends the recording
//!   ("target_exited"); the window is then shorter than asked, and `check`
//!   says so (inconclusive when too few samples remain).
//! - Ctrl-C (or SIGTERM to gate) is forwarded to a launched command; the
//!   trace is finished with reason "interrupted".
//!
//! The recorder's jobs, one file each (`mod.rs` is the table of contents:
//! the plan, `record_observed`, and what every job shares):
//! - `launch.rs`: the target's side (launched or attached here, in
//!   `record_observed`): the command confirmed in its cgroup, its first
//!   events, and the tree stopped when a recording fails;
//! - `gpus.rs`: the GPU source chosen and opened (`sampler::source::GpuSource`:
//!   NVML and GPM today), and its notes at the end;
//! - `sampling.rs`: the sampling loop (`run`, `Ticker`) and why it stops;
//! - `frameworks.rs`: which frameworks the tree has loaded;
//! - `output.rs`: the target's stdout kept in the trace, and the warm-up
//!   and window markers read from it;
//! - `metrics_file.rs`: `--metrics-file` kept in the end record;
//! - `finish.rs`: the closing events and the end record.

use crate::console::Echo;
use crate::error::GateError;
use crate::metrics::{GPU_METRICS, HOST_METRICS};
use crate::sampler::cgroup::{self, TreeCgroup};
use crate::sampler::CpuProfile;
use crate::target::{self, Target};
use crate::trace::{
    round_value, EndRecord, EventKind, EventRecord, Header, Record, TraceWriter, SCHEMA_VERSION,
};
use gpus::open_gpus;
use launch::{close_failed, confirm_cgroup};
use sampling::run;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

mod finish;
mod frameworks;
mod gpus;
mod launch;
mod metrics_file;
mod output;
mod sampling;

/// What to record, already validated: `commands::measure` builds it from
/// the flags (ranges checked, `--warmup-until` compiled), so the engine
/// never sees a command-line type and never starts a target on a bad flag.
#[derive(Debug, Clone)]
pub struct RecordPlan {
    /// Command to launch (argv, never through a shell); empty when attaching.
    pub command: Vec<String>,
    /// Attach to this running process instead of launching `command`.
    pub pid: Option<u32>,
    /// Sampling interval of NVML and host counters, within
    /// `MIN_INTERVAL..=MAX_INTERVAL`.
    pub interval: Duration,
    /// GPM period (each GPM value averages one period).
    pub(crate) gpm_interval: Duration,
    /// Process lists, per-process SM shares and memory info refresh period.
    pub(crate) process_interval: Duration,
    /// Samples in the first `warmup` are marked warm-up.
    pub warmup: Duration,
    /// Warm-up also lasts until a stdout line matches (launch mode only).
    pub(crate) warmup_until: Option<regex::Regex>,
    /// The measured window closes at the first stdout line after warm-up
    /// that matches (launch mode only): a note event marks it.
    pub until: Option<regex::Regex>,
    /// Length of the measured window after warm-up; None: until the target exits.
    pub duration: Option<Duration>,
    /// Longest wait for `warmup_until`: past it the recording stops
    /// (reason "warmup_timeout").
    pub(crate) warmup_timeout: Duration,
    /// The GPUs sampled (`Visible`: every visible GPU, statistics on
    /// those the target used).
    pub gpu: crate::sampler::nvml::GpuSelection,
    /// Host counters only (no NVML).
    pub(crate) no_gpu: bool,
    /// NVML without GPM, as on a GPU that has none (`--no-gpm`): the header
    /// says GPM is unsupported and every GPM column is null.
    pub no_gpm: bool,
    /// Labels stored in the trace header.
    pub tags: BTreeMap<String, String>,
    /// A file the benchmark writes with its own metrics, embedded at the end.
    pub metrics_file: Option<PathBuf>,
    /// Free-text provenance stored in the header.
    pub note: Option<String>,
    /// Print a one-line status every second on stderr (the caller decides:
    /// stderr is a terminal).
    pub(crate) live_status: bool,
    /// Without the status line (stderr not a terminal: a CI log), print a
    /// plain progress line now and then when the window is known.
    pub(crate) progress_lines: bool,
}

/// Interval limits: below 10 ms NVML's own refresh makes samples repeats;
/// above 10 s a run has too few samples to judge.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(10);
pub(crate) const MAX_INTERVAL: Duration = Duration::from_secs(10);

/// How often the trace is pushed to its file: one write system call a
/// second, not one a tick (at 100 ms the per-tick flush was most of the
/// trace write's cost); a crash loses at most this much of the trace.
pub(crate) const TRACE_FLUSH: Duration = Duration::from_secs(1);

pub struct RecordOutcome {
    pub path: PathBuf,
    pub end: EndRecord,
}

/// Record the plan's target into `path` (written as `path.partial` until
/// the recording ends). A launched target's stdout is kept in the trace and
/// passed on to `echo`.
pub fn record(plan: &RecordPlan, path: &Path, echo: Echo) -> Result<RecordOutcome, GateError> {
    record_observed(plan, path, echo, &mut |_| true)
}

/// `record`, showing the header and every sample, event and processes
/// record of the sampling loop to `observe` as it is written (`gate watch`
/// evaluates its rules on them). When `observe` returns false the recording
/// ends with reason "stopped" (an attached target is never signalled).
pub(crate) fn record_observed(
    plan: &RecordPlan,
    path: &Path,
    echo: Echo,
    observe: &mut dyn FnMut(&Record) -> bool,
) -> Result<RecordOutcome, GateError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            GateError::usage(format!(
                "cannot create '{}': {e}; choose another --output",
                dir.display()
            ))
        })?;
    }
    // A bad GATE_CGROUP is the user's to fix, before anything starts.
    cgroup::enabled_by_env().map_err(GateError::usage)?;
    // Dropped last: the tree is stopped (target's Drop) while gate still
    // catches a second Ctrl-C.
    let _signals = target::InterruptGuard::install();
    let start = Instant::now();
    // GATE_PROFILE: what a recording costs once, beside the ticks' sections.
    let mut once = CpuProfile::from_env();
    // What only start-up ran leaves the resident set before the GPU
    // source adds its own (sampler/resident.rs).
    once.print_startup(crate::sampler::resident::drop_startup_pages());
    let c = once.start();
    let (fingerprint, mut gpu_sampler) = open_gpus(plan, start)?;
    once.stop("open_gpus", c);
    let header = Header {
        schema_version: SCHEMA_VERSION,
        gate_version: crate::GATE_VERSION.to_string(),
        start_time: crate::format::rfc3339_utc(SystemTime::now()),
        interval_ms: plan.interval.as_millis() as u64,
        warmup_ms: plan.warmup.as_millis() as u64,
        duration_ms: plan.duration.map(|d| d.as_millis() as u64),
        command: plan.command.clone(),
        attach_pid: plan.pid,
        tags: plan.tags.clone(),
        fingerprint,
        gpu_columns: GPU_METRICS.iter().map(|d| d.id.to_string()).collect(),
        host_columns: HOST_METRICS.iter().map(|d| d.id.to_string()).collect(),
        note: plan.note.clone(),
    };
    // The plan was validated before we got here, and the output is opened
    // before the target starts: a bad flag or a refused output path neither
    // launches the benchmark nor leaves a trace behind.
    let mut writer = TraceWriter::create(path, &header)?;
    // Declared before the target, so dropped after it: the directory goes
    // once the tree is stopped, on every way out of this function.
    let tree_cgroup = match plan.pid {
        // Read where it is the tree's own; never moved.
        Some(pid) => {
            TreeCgroup::adopt(pid, &crate::sampler::host::TreeScanner::default().scan(pid))
        }
        None => TreeCgroup::create(),
    };
    let target = match plan.pid {
        Some(pid) => Target::attach(pid),
        None => Target::launch_in(
            &plan.command,
            echo,
            (tree_cgroup.as_ref().ok()).and_then(|c| Some((c.join_fd()?, c.dir()))),
        ),
    };
    let mut target = match target {
        Ok(t) => t,
        Err(e) => {
            writer.abandon();
            return Err(e);
        }
    };
    let tree_cgroup = confirm_cgroup(tree_cgroup, target.pid()).map(Arc::new);
    let mut progress = Progress::default();
    match run(
        plan,
        &header,
        &mut gpu_sampler,
        &mut writer,
        &mut target,
        &tree_cgroup,
        start,
        &mut progress,
        observe,
    ) {
        Ok(end) => {
            let c = once.start();
            let path = writer.finish(end.clone())?;
            once.stop("trace_finish", c);
            once.print();
            Ok(RecordOutcome { path, end })
        }
        Err(e) => Err(close_failed(e, writer, &mut target, &progress)),
    }
}

/// Samples written so far (for the end record of a failed recording).
#[derive(Default)]
struct Progress {
    samples: u64,
    late: u64,
}

/// An event with no GPU, PID or code (struct update syntax sets them).
fn event(t: f64, kind: EventKind, message: impl Into<String>) -> EventRecord {
    EventRecord {
        t,
        kind,
        gpu: None,
        pid: None,
        code: None,
        message: message.into(),
    }
}

/// The trace's time axis: milliseconds since the target started.
#[derive(Clone, Copy)]
struct Clock {
    t0: Instant,
}

impl Clock {
    fn ms(self, at: Instant) -> f64 {
        round_value(self.since(at).as_secs_f64() * 1000.0)
    }

    fn now_ms(self) -> f64 {
        self.ms(Instant::now())
    }

    fn since(self, at: Instant) -> Duration {
        at.saturating_duration_since(self.t0)
    }
}
