//! Where a run's trace comes from, shared by record, capture, check and
//! report: launch a command, attach to a PID, or replay recorded traces.
//! Live measurement always goes through a trace file, so a live run and its
//! replay are judged by exactly the same code.

use crate::config::Config;
use crate::console::Echo;
use crate::error::GateError;
use crate::record::{self, RecordPlan};
use crate::summary::Run;
use crate::trace::Trace;
use clap::Args;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "Measurement (what runs, for how long, how it is sampled)")]
pub struct MeasureArgs {
    /// Replay recorded trace(s) instead of measuring live (one per run or per node)
    #[arg(long, num_args = 1.., value_name = "TRACE", conflicts_with_all = ["pid", "command", "command_string"])]
    pub replay: Vec<PathBuf>,

    /// Attach to a running process (and its children) instead of launching one
    #[arg(long, value_name = "PID", conflicts_with_all = ["command", "command_string"])]
    pub pid: Option<u32>,

    /// Length of the measured window after warm-up (e.g. 30s, 5m). Launch mode: the
    /// command is stopped (SIGTERM) when it outlives warm-up + duration. Default: until it exits
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub duration: Option<Duration>,

    /// Samples in the first DURATION are kept but marked warm-up and excluded from statistics
    #[arg(long, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub warmup: Duration,

    /// Warm-up also lasts until the benchmark prints a stdout line matching this regex
    /// (e.g. '^step 20 '), so variable start-up time never enters the statistics
    #[arg(long, value_name = "REGEX")]
    pub(crate) warmup_until: Option<String>,

    /// The measured window closes at the first stdout line after warm-up matching this
    /// regex (the benchmark's end-of-timed-section marker); what follows (its statistics,
    /// reports, teardown) is reported as teardown_s, not judged. A replayed trace is read
    /// from its kept output. Without it, an idle tail after the GPU work ends is cut
    #[arg(long, value_name = "REGEX")]
    pub until: Option<String>,

    /// Longest wait for --warmup-until to match; past it the benchmark is stopped and the run
    /// fails (exit 3) rather than never reaching its --duration
    #[arg(long, value_parser = parse_duration, default_value = "10m", value_name = "DURATION")]
    pub(crate) warmup_timeout: Duration,

    /// Sampling interval of NVML and host counters (10ms to 10s); GPM values come every --gpm-interval
    #[arg(long, value_parser = parse_duration, default_value = "100ms", value_name = "DURATION")]
    pub interval: Duration,

    /// GPM (SM active, tensor, DRAM, PCIe...) period: each value averages the whole period, so a
    /// longer one costs less CPU and loses time resolution, not coverage (min 120ms)
    #[arg(long, value_parser = parse_duration, default_value = "500ms", value_name = "DURATION")]
    pub(crate) gpm_interval: Duration,

    /// Process lists, per-process SM shares and memory used refresh this often (process
    /// utilization costs ~2.7 ms of CPU per NVML call on an H200 VM; min 200ms)
    #[arg(long, value_parser = parse_duration, default_value = "1s", value_name = "DURATION")]
    pub(crate) process_interval: Duration,

    /// GPUs to sample: '0,2' or 'all'. Default: every visible GPU is sampled (CUDA_VISIBLE_DEVICES honoured) and statistics use those the target's processes appeared on
    #[arg(long, value_name = "LIST")]
    pub gpu: Option<String>,

    /// Record host counters only (no NVML)
    #[arg(long)]
    pub(crate) no_gpu: bool,

    /// Read no GPM (SM active, tensor, DRAM, PCIe, NVLink activity): record what a GPU without
    /// it (A100, A10G, L4, L40S, T4) gives, and spend less CPU sampling
    #[arg(long, conflicts_with = "no_gpu")]
    pub no_gpm: bool,

    /// Label stored in the trace header and carried into baselines and reports (repeatable)
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<(String, String)>,

    /// A file the benchmark writes with its own metrics; its text is stored in the trace
    #[arg(long, value_name = "FILE")]
    pub metrics_file: Option<PathBuf>,

    /// Free-text provenance stored in the trace header (e.g. where a fixture was recorded)
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,

    /// The command to launch as ONE string, split like a shell line by gate (quotes
    /// honoured; no variables, globs or substitutions; never run through a shell). For CI
    /// inputs that can only be strings; otherwise put the command after `--`
    #[arg(
        long,
        value_name = "LINE",
        conflicts_with = "command",
        allow_hyphen_values = true
    )]
    pub(crate) command_string: Option<String>,

    /// Command to launch, after `--` (argv, never through a shell)
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

impl MeasureArgs {
    pub(crate) fn is_replay(&self) -> bool {
        !self.replay.is_empty()
    }

    pub(crate) fn is_live(&self) -> bool {
        self.pid.is_some() || !self.command.is_empty()
    }

    /// The validated plan the recording engine runs: every flag is checked
    /// here, before anything is launched or written.
    pub(crate) fn record_plan(&self) -> Result<RecordPlan, GateError> {
        if !self.is_live() {
            return Err(GateError::usage(
                "nothing to record: give a command after '--' or --pid PID",
            ));
        }
        if self.pid.is_some() && self.warmup_until.is_some() {
            return Err(GateError::usage(
                "--warmup-until reads the benchmark's stdout, which gate only sees when it launches the command; with --pid use --warmup DURATION",
            ));
        }
        if self.pid.is_some() && self.until.is_some() {
            return Err(GateError::usage(
                "--until reads the benchmark's stdout, which gate only sees when it launches the command; with --pid use --duration DURATION",
            ));
        }
        // Checked whatever parsed them: a huge value must be one clear line
        // here, not a clock overflow once the benchmark runs.
        let max = crate::limits::MAX_WINDOW;
        for (flag, d) in [
            ("--warmup", Some(self.warmup)),
            ("--duration", self.duration),
            ("--warmup-timeout", Some(self.warmup_timeout)),
        ] {
            if d.is_some_and(|d| d > max) {
                return Err(GateError::usage(format!(
                    "{flag} {} is longer than the {} gate records (docs/limits.md); use a shorter window",
                    crate::limits::duration_text(d.unwrap_or_default()),
                    crate::limits::duration_text(max)
                )));
            }
        }
        if self.interval < record::MIN_INTERVAL || self.interval > record::MAX_INTERVAL {
            return Err(GateError::usage(format!(
                "--interval {:?} is out of range; use 10ms to 10s (default 100ms)",
                self.interval
            )));
        }
        let warmup_until = self
            .warmup_until
            .as_deref()
            .map(|p| output_pattern("--warmup-until", p, "'^step 10 '"))
            .transpose()?;
        let until = self.until_regex()?;
        Ok(RecordPlan {
            until,
            command: self.command.clone(),
            pid: self.pid,
            interval: self.interval,
            gpm_interval: self.gpm_interval,
            process_interval: self.process_interval,
            warmup: self.warmup,
            warmup_until,
            duration: self.duration,
            warmup_timeout: self.warmup_timeout,
            gpu: crate::sampler::nvml::GpuSelection::parse(self.gpu.as_deref())?,
            no_gpu: self.no_gpu,
            no_gpm: self.no_gpm,
            tags: self.tags.iter().cloned().collect(),
            metrics_file: self.metrics_file.clone(),
            note: self.note.clone(),
            live_status: std::io::stderr().is_terminal(),
            progress_lines: !std::io::stderr().is_terminal(),
        })
    }

    /// `--until` compiled; a bad pattern is a usage error (exit 2).
    pub(crate) fn until_regex(&self) -> Result<Option<regex::Regex>, GateError> {
        self.until
            .as_deref()
            .map(|p| output_pattern("--until", p, "'^timed section done'"))
            .transpose()
    }

    /// Turn `--command-string LINE` into the argv after `--` (done once, at
    /// parse time, so everything downstream sees one form).
    pub(crate) fn split_command_string(&mut self) -> Result<(), String> {
        if let Some(line) = self.command_string.take() {
            let argv = crate::shell_words::split(&line, "--command-string")?;
            if argv.is_empty() {
                return Err("--command-string is empty; give the benchmark command, e.g. --command-string 'python train.py'".into());
            }
            self.command = argv;
        }
        Ok(())
    }
}

/// Parse a duration with the `humantime` crate: `100ms`, `30s`, `5m`,
/// `1m30s`, `1h 15m`, `2days`; a bare number means seconds (`2`, `1.5`).
///
/// ```
/// use gpugate::commands::measure::parse_duration;
/// use std::time::Duration;
/// assert_eq!(parse_duration("100ms"), Ok(Duration::from_millis(100)));
/// assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
/// assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
/// assert!(parse_duration("10 parsecs").is_err());
/// assert!(parse_duration("99999999999h").unwrap_err().contains("7 days"));
/// ```
/// `--metrics-file` on a live run while no `[user_metrics]` table of
/// gate.toml reads it: said before the run, never ignored in silence (a
/// file the run then leaves absent or stale is said again in the report:
/// `gate::runs`).
pub(crate) fn warn_unread_metrics_file(m: &Measurement, config: &crate::config::Config) {
    use crate::config::user_metrics::UserSource;
    let Some(path) = m.metrics_file.as_ref().filter(|_| !m.is_replay()) else {
        return;
    };
    let read = (config.file.user_metrics.values()).any(|d| d.source == UserSource::MetricsFile);
    if !read {
        crate::gate_eprintln!(
            "gate: warning: --metrics-file '{}' is given, but no [user_metrics] table of {} reads it (source = \"metrics_file\"): nothing of it will be judged; declare one (docs/gating.md, \"Where the benchmark's number comes from\") or drop the flag",
            crate::escape::terminal(&path.display().to_string()),
            crate::escape::terminal(config.origin.as_deref().unwrap_or("gate.toml (none found)"))
        );
    }
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let text = s.trim();
    // No flag takes more than limits::MAX_WINDOW: a huge value is one clear
    // line here, never a Duration or Instant overflow later.
    let max = crate::limits::MAX_WINDOW;
    let too_long = || {
        format!(
            "'{}' is longer than the {} gate accepts for any duration (docs/limits.md); use e.g. 10m or 2h",
            text.escape_debug(),
            crate::limits::duration_text(max)
        )
    };
    // A bare number: seconds (humantime wants a unit).
    let d = if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit() || c == '.') {
        let secs: f64 = text.parse().map_err(|_| {
            format!(
                "'{}' is not a duration; use e.g. 100ms, 30s, 5m, 1m30s",
                text.escape_debug()
            )
        })?;
        if !(secs.is_finite() && secs <= max.as_secs_f64()) {
            return Err(too_long());
        }
        Duration::from_secs_f64(secs)
    } else {
        humantime::parse_duration(text).map_err(|e| match e {
            humantime::DurationError::NumberOverflow => too_long(),
            e => format!(
                "'{}' is not a duration ({e}); use e.g. 100ms, 30s, 5m, 1m30s",
                text.escape_debug()
            ),
        })?
    };
    if d > max {
        return Err(too_long());
    }
    Ok(d)
}

pub(crate) fn parse_tag(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!(
            "tag '{s}' must be KEY=VALUE, e.g. --tag model=resnet50"
        )),
    }
}

/// How runs are measured, built once from `MeasureArgs` before anything
/// runs: the replayed traces, or the live run's recording plan (every flag
/// checked), with `--until` compiled. The first acquire and every rerun
/// reuse it; nothing below `commands/` sees the flags.
#[derive(Debug, Clone)]
pub(crate) struct Measurement {
    /// Recorded traces to replay (empty: a live run, or nothing given).
    pub replay: Vec<PathBuf>,
    /// The live run's plan (None: replay, or nothing given).
    pub record: Option<RecordPlan>,
    /// `--until`: closes a replayed trace's window (a live one's is closed
    /// by the recorder).
    pub until: Option<regex::Regex>,
    /// `--tag`s, which win over the traces' own.
    pub tags: Vec<(String, String)>,
    /// `--metrics-file` (a live run keeps it in its trace).
    pub metrics_file: Option<PathBuf>,
}

impl Measurement {
    /// Every measurement flag checked: a bad `--until` or `--interval` is
    /// a usage error (exit 2) before anything is launched or loaded.
    pub(crate) fn build(args: &MeasureArgs) -> Result<Measurement, GateError> {
        let (record, until) = if args.is_live() {
            let plan = args.record_plan()?;
            let until = plan.until.clone();
            (Some(plan), until)
        } else {
            (None, args.until_regex()?)
        };
        Ok(Measurement {
            replay: args.replay.clone(),
            record,
            until,
            tags: args.tags.clone(),
            metrics_file: args.metrics_file.clone(),
        })
    }

    pub(crate) fn is_replay(&self) -> bool {
        !self.replay.is_empty()
    }

    pub(crate) fn is_live(&self) -> bool {
        self.record.is_some()
    }
}

/// Room a replayed trace's load holds in the memory budget (`budget`)
/// from its load until `each` has derived what it needs and its samples
/// are freed: its columns, ~0.7x its size on disk (8 GPUs x 1 h: 58 MB of
/// JSON, 40 MB of columns; a `.zst` trace counts at 8x its size, real
/// traces compress ~7x), or, past the spill threshold, what a scratch
/// file keeps resident (`trace::columns::RESIDENT_BYTES`), its write
/// buffers and the summary's working copy (72 MiB: one at a time). Loads that do not fit wait for room: `GATE_THREADS` decides
/// how fast traces load, not how many are held.
pub(crate) fn load_bytes(path: &Path) -> usize {
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let len = if crate::trace::is_compressed_path(path) {
        len.saturating_mul(8)
    } else {
        len
    };
    let columns = usize::try_from(len / 10 * 7).unwrap_or(usize::MAX);
    if columns > crate::trace::spill_bytes() {
        // Its resident pages, write buffers, and the working copy of one
        // statistic its summary computes on the loading thread (~28 MB
        // at 24 h): three 24 h loads at once peaked at 315 MB.
        crate::trace::columns::RESIDENT_BYTES + (40 << 20)
    } else {
        columns
    }
}

/// Threads that load `paths` (or acquire the workloads that replay them):
/// no more than their loads fit in the memory budget at once. A thread that
/// waits holds nothing, but each thread's allocator arena keeps what its
/// loads freed (64 nodes on 8 threads peaked at 556 MB, 252 MB on 1).
pub(crate) fn load_threads(paths: &[PathBuf]) -> usize {
    let most = paths.iter().map(|p| load_bytes(p)).max().unwrap_or(0);
    crate::budget::fitting(most).min(crate::parallel::threads())
}

/// Acquire the runs, each derived (`Run::derive`) as soon as its trace is
/// loaded, then its trace dropped; with `keep.series`, the series a check
/// page plots taken (`Run::plot`); with `keep.timeline`, what `gate
/// report` shows (`Run::explain`); with `keep.samples`, its samples kept,
/// parked in a scratch file (`Run::keep_samples`): a baseline pools them.
/// `after` sees the runs so far as soon as each live run ends: an error
/// there stops before the next run (`capture --runs 3` refuses an invalid
/// first run without spending two more). Replayed files are all loaded
/// first (on several cores, in order), then `after` sees them once.
pub(crate) fn acquire_runs(
    m: &Measurement,
    runs: usize,
    trace_dir: &Path,
    config: &Config,
    keep: Keep<'_>,
    after: impl FnMut(&[Run]) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<Run>> {
    // The check page's lines, in the order of these runs.
    let lines = crate::summary::series::LineBudget::default();
    let derive = |place: usize, t: Trace| derive(place, t, config, keep, &lines);
    acquire_with(m, runs, trace_dir, derive, after)
}

/// `acquire_runs`, each `Run` handed to `then` as soon as it is derived,
/// and what `then` makes of it kept instead (`gate report` keeps each run's
/// report, not its summary, while the other runs load).
pub(crate) fn acquire_runs_into<T: Send>(
    m: &Measurement,
    trace_dir: &Path,
    config: &Config,
    keep: Keep<'_>,
    then: impl Fn(Run) -> T + Sync,
) -> anyhow::Result<Vec<T>> {
    let lines = crate::summary::series::LineBudget::default();
    let derive = |place: usize, t: Trace| derive(place, t, config, keep, &lines).map(&then);
    acquire_with(m, 1, trace_dir, derive, |_| Ok(()))
}

/// The run at `place` derived from `t` with what `keep` asks (`acquire_runs`).
fn derive(
    place: usize,
    t: Trace,
    config: &Config,
    keep: Keep<'_>,
    lines: &crate::summary::series::LineBudget,
) -> Result<Run, GateError> {
    let mut run = Run::derive(&t, config);
    if keep.series {
        run.plot(&t, lines, place);
    }
    if let Some(plan) = keep.timeline {
        run.explain(&t, plan);
    }
    if keep.samples {
        run.keep_samples(t)?;
    }
    Ok(run)
}

/// What a run keeps of its trace past derive besides its `Run`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Keep<'a> {
    /// Its samples, for a baseline's pooled statistics.
    pub samples: bool,
    /// The series its check page plots (`--html`).
    pub series: bool,
    /// What `gate report` shows of it (`Run::explain`).
    pub timeline: Option<&'a crate::summary::timeline::TimelinePlan>,
}

/// `acquire`, each trace handed to `take` with its place among the runs
/// as soon as it is loaded (and `--until` applied), `after` called on what
/// `take` made of the runs so far.
fn acquire_with<T: Send>(
    m: &Measurement,
    runs: usize,
    trace_dir: &Path,
    take: impl Fn(usize, Trace) -> Result<T, GateError> + Sync,
    mut after: impl FnMut(&[T]) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<T>> {
    let take = |place: usize, mut t: Trace| -> Result<T, GateError> {
        if let Some(re) = &m.until {
            close_window(&mut t, re);
        }
        take(place, t)
    };
    if m.is_replay() {
        let places: Vec<(usize, &PathBuf)> = m.replay.iter().enumerate().collect();
        let load = |&(place, p): &(usize, &PathBuf)| {
            let room = crate::budget::reserve(load_bytes(p));
            let out = Trace::load(p).and_then(|t| take(place, t));
            drop(room);
            crate::budget::trim();
            out
        };
        let threads = load_threads(&m.replay);
        let loaded = crate::parallel::map_with(threads, &places, load)
            .into_iter()
            .map(|r| r.map_err(anyhow::Error::from))
            .collect::<anyhow::Result<Vec<_>>>()?;
        after(&loaded)?;
        return Ok(loaded);
    }
    let Some(plan) = &m.record else {
        return Err(GateError::usage(
            "nothing to measure: give a command after '--', --pid PID, or --replay TRACE...",
        )
        .into());
    };
    std::fs::create_dir_all(trace_dir).map_err(|e| {
        GateError::usage(format!(
            "cannot create trace directory '{}': {e}; pass --trace-dir to a writable place",
            trace_dir.display()
        ))
    })?;
    let mut traces = Vec::new();
    for run in 0..runs.max(1) {
        let path = reserve_trace_path(trace_dir, "run", &format!("-{}.jsonl", run + 1))?;
        if runs > 1 {
            crate::gate_eprintln!("gate: run {}/{}", run + 1, runs);
        }
        // The caller prints its report on stdout, so the benchmark's own
        // output goes to stderr.
        let outcome = record::record(plan, &path, Echo::Stderr).inspect_err(|_| {
            // The reservation, still empty: nothing was recorded in it.
            if std::fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
                let _ = std::fs::remove_file(&path);
            }
        })?;
        let _room = crate::budget::reserve(load_bytes(&outcome.path));
        traces.push(take(run, Trace::load(&outcome.path)?)?);
        after(&traces)?;
    }
    Ok(traces)
}

/// Apply `--until` to a loaded trace: a live recording closed its window
/// already (the recorder's note); a replayed one is closed at its first
/// kept output line after warm-up that matches, and one with no such line
/// says so once (its window then ends at the idle tail, as without it).
fn close_window(trace: &mut Trace, until: &regex::Regex) {
    if trace.closed_at_ms.is_some() || trace.close_window_at_line(until) {
        return;
    }
    crate::gate_eprintln!(
        "warning: --until '{}' matched no output line of '{}' after its warm-up; its window ends where its GPU work ends",
        crate::escape::terminal(until.as_str()),
        crate::escape::terminal(&trace.path.display().to_string())
    );
}

/// A new trace file name in `dir` that no other gate uses: the time in
/// milliseconds, this process's id and a counter, reserved by creating the
/// (empty) file exclusively, with the next counter when it exists already
/// (checks started in the same millisecond sharing one `--trace-dir`, a
/// reused process id). The recording replaces the reservation at its end.
pub(crate) fn reserve_trace_path(
    dir: &Path,
    prefix: &str,
    suffix: &str,
) -> Result<PathBuf, GateError> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let pid = std::process::id();
    for _ in 0..1000 {
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("{prefix}-{stamp}-{pid}-{n}{suffix}"));
        match crate::files::create_new(&path) {
            Ok(_) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(crate::files::output_error(
                    format!(
                    "cannot create a trace file in '{}': {e}; pass --trace-dir to a writable place",
                    dir.display()
                ),
                    &e,
                ))
            }
        }
    }
    Err(GateError::usage(format!(
        "cannot find a free trace file name in '{}' (1000 tried); clean the folder or pass another --trace-dir",
        dir.display()
    )))
}

/// Unrelated lines a benchmark may print: a pattern matching each of them
/// (`\w`, `\b|y`, `.`) matches every line it will print.
const UNRELATED_LINES: [&str; 8] = [
    "x",
    "0",
    "y",
    "done",
    "step 1",
    "Epoch 2/10 loss=0.31",
    "Traceback (most recent call last):",
    "=== warming up ===",
];

/// An `--until` or `--warmup-until` pattern compiled; a bad one, or one
/// that matches every line (the empty one, or each of `UNRELATED_LINES`),
/// is a usage error (exit 2): it would end the warm-up or close the window
/// at the first line the benchmark prints (issue 41.2).
pub(crate) fn output_pattern(
    flag: &str,
    p: &str,
    example: &str,
) -> Result<regex::Regex, GateError> {
    let shown = crate::escape::terminal(p);
    let re = regex::Regex::new(p).map_err(|e| {
        GateError::usage(format!(
            "{flag} '{shown}' is not a valid regex ({e}); e.g. {flag} {example}"
        ))
    })?;
    let every = if re.is_match("") {
        Some("even an empty one")
    } else if UNRELATED_LINES.iter().all(|l| re.is_match(l)) {
        Some("'x', '0', 'done', 'step 1' and any other")
    } else {
        None
    };
    if let Some(which) = every {
        return Err(GateError::usage(format!(
            "{flag} '{shown}' matches every line ({which}); give a line only the benchmark's marker has, e.g. {flag} {example}"
        )));
    }
    Ok(re)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("100ms").unwrap(), Duration::from_millis(100));
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert!(parse_duration("fast").unwrap_err().contains("'fast'"));
        assert!(parse_duration("3parsecs").is_err());
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1h 15m").unwrap(), Duration::from_secs(4500));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
    }

    #[test]
    fn huge_durations_are_one_line_errors_never_panics() {
        for huge in [
            "99999999999999999999999s",
            "18446744073709551615s",
            "600000h",
            "8days",
            "1e300",
            "99999999999999999999999999999999999999",
        ] {
            let e = parse_duration(huge).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
            assert!(e.contains(huge) || e.contains("7 days"), "{huge}: {e}");
        }
        assert_eq!(parse_duration("7days").unwrap(), crate::limits::MAX_WINDOW);
    }

    #[test]
    fn command_string_becomes_the_argv() {
        let mut m = MeasureArgs {
            command_string: Some("python 'a b.py' --x=\"1 2\"".into()),
            ..Default::default()
        };
        m.split_command_string().unwrap();
        assert_eq!(m.command, vec!["python", "a b.py", "--x=1 2"]);
        let mut empty = MeasureArgs {
            command_string: Some("  ".into()),
            ..Default::default()
        };
        assert!(empty.split_command_string().unwrap_err().contains("empty"));
    }

    #[test]
    fn tags_need_a_key() {
        assert_eq!(
            parse_tag("model=resnet").unwrap(),
            ("model".into(), "resnet".into())
        );
        assert!(parse_tag("=x").is_err());
        assert!(parse_tag("novalue").is_err());
    }
}
