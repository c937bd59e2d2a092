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

use crate::console::{self, Echo};
use crate::error::GateError;
use crate::metrics::{GPU_METRICS, HOST_METRICS};
use crate::sampler::cgroup::{self, TreeCgroup};
use crate::sampler::host::{self, HostSampler};
use crate::sampler::nvml::{GpuSampler, NvmlContext};
use crate::sampler::CpuProfile;
use crate::target::{self, Target};
use crate::trace::{
    round_value, EndRecord, EventKind, EventRecord, Fingerprint, Header, OutputRecord, Record,
    SampleRecord, StopReason, TraceWriter, SCHEMA_VERSION,
};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

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
    /// GPU selection as `NvmlContext::select` reads it ('0,2', 'all');
    /// None: every visible GPU, statistics on those the target used.
    pub gpu: Option<String>,
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
/// Host counters are sampled at most this often (95 ms: a 100 ms tick that
/// fires a little early still samples).
const HOST_PERIOD: Duration = Duration::from_millis(95);
/// How often the process tree is rescanned for new children. A scan reads
/// every thread's `children` file (81 files for 8 workers of 8 threads);
/// at 500 ms it was a fifth of gate's `/proc` work on such a tree, and a
/// new process counts from its second host sample anyway.
const TREE_REFRESH: Duration = Duration::from_secs(1);
/// How often a cgroup's member list is read (the tree on the cgroup path):
/// one read, but the kernel walks every thread of the cgroup for it (43 us
/// a read for 73 threads on the development VM), so every fifth 100 ms
/// tick rather than every one. A new process's first `stat` is taken when
/// it is seen: the roles lose at most this much of its CPU.
const CGROUP_TREE_REFRESH: Duration = Duration::from_millis(450);
/// How often the trace is pushed to its file: one write system call a
/// second, not one a tick (at 100 ms the per-tick flush was most of the
/// trace write's cost); a crash loses at most this much of the trace.
pub(crate) const TRACE_FLUSH: Duration = Duration::from_secs(1);
/// Stdout kept in the trace, at most (the rest still passes through).
const OUTPUT_CAP_BYTES: usize = crate::limits::MAX_KEPT_OUTPUT_BYTES;

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
        Some(pid) => TreeCgroup::adopt(pid, &host::TreeScanner::default().scan(pid)),
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

/// The launched command's cgroup, if the command is in it (it moved
/// itself between fork and exec; a refused move leaves it outside, and
/// the recording falls back to `/proc`). A command already gone cannot be
/// checked and keeps the cgroup: its descendants are in there.
fn confirm_cgroup(cgroup: Result<TreeCgroup, String>, pid: u32) -> Result<TreeCgroup, String> {
    let cgroup = cgroup?;
    if cgroup.members(&mut Vec::new()).contains(&pid) || !target::process_alive(pid) {
        return Ok(cgroup);
    }
    Err(format!(
        "the command could not be moved into {}",
        cgroup.dir().display()
    ))
}

/// NVML opened on the selected GPUs: the fingerprint the header carries
/// (with what each GPU cannot report) and a primed sampler; no sampler
/// with `--no-gpu`.
fn open_gpus(
    plan: &RecordPlan,
    start: Instant,
) -> Result<(Fingerprint, Option<GpuSampler>), GateError> {
    let mut fingerprint = Fingerprint {
        host: host::host_info(),
        ..Default::default()
    };
    let mut gpu_sampler: Option<GpuSampler> = None;
    if !plan.no_gpu {
        let nvml = NvmlContext::init()?;
        let v = nvml.versions();
        fingerprint.driver_version = v.driver;
        fingerprint.nvml_version = v.nvml;
        fingerprint.cuda_driver_version = v.cuda_driver;
        let indices = nvml.select(plan.gpu.as_deref())?;
        for &i in &indices {
            let mut info = nvml.gpu_info(i)?;
            // Recorded as a GPU without GPM would be: the header's
            // `gpm_supported` says what this trace has, not the silicon.
            info.gpm_supported &= !plan.no_gpm;
            fingerprint.gpus.push(info);
        }
        let cadence = crate::sampler::nvml::Cadence {
            gpm_period: plan.gpm_interval,
            // NVML refreshes process utilization every ~200 ms: faster
            // asks only cost CPU.
            process_period: plan.process_interval.max(Duration::from_millis(200)),
            gpm: !plan.no_gpm,
        };
        let mut sampler = nvml.sampler(&indices, start, cadence)?;
        // A probe tick discovers what each GPU cannot report, so the header
        // can say so, and primes the first GPM sample.
        let _ = sampler.sample(Instant::now(), 0.0, &HashSet::new());
        for g in fingerprint.gpus.iter_mut() {
            if let Some(u) = sampler.unsupported().get(&g.index) {
                g.unsupported = u.clone();
            }
        }
        gpu_sampler = Some(sampler);
    }
    Ok((fingerprint, gpu_sampler))
}

/// Whatever failed (a full disk, a sampler), the benchmark does not outlive
/// the recording, and what was recorded stays readable under the .partial
/// name, which the returned error names.
fn close_failed(
    e: GateError,
    mut writer: TraceWriter,
    target: &mut Target,
    progress: &Progress,
) -> GateError {
    target.stop(libc::SIGTERM, target::STOP_GRACE);
    let t = target
        .started()
        .map(|s| round_value(s.elapsed().as_secs_f64() * 1000.0))
        .unwrap_or(0.0);
    let _ = writer.write(&Record::Event(event(
        t,
        EventKind::Note,
        format!("the recording failed: {e}"),
    )));
    let exit = target.wait();
    let partial = writer.close_as_partial(EndRecord {
        t,
        samples: progress.samples,
        late_samples: progress.late,
        exit_code: exit.and_then(|e| e.code),
        signal: exit.and_then(|e| e.signal),
        target_wall_s: None,
        reason: StopReason::Error,
        metrics_file: None,
        metrics_file_problem: None,
        target_gpus: None,
    });
    let kept = format!("what was recorded is in '{}'", partial.display());
    match e {
        GateError::Infra(m) => GateError::Infra(format!("{m}; {kept}")),
        GateError::Usage(m) => GateError::Usage(format!("{m}; {kept}")),
        other => other,
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

/// Sample `target` until the window ends, then write the closing events.
/// Returns the end record; the caller finishes the file.
// The recording's parts are separate borrows on purpose: the caller keeps
// the writer, target and progress to close a failed recording properly.
#[allow(clippy::too_many_arguments)]
fn run(
    plan: &RecordPlan,
    header: &Header,
    gpu_sampler: &mut Option<GpuSampler>,
    writer: &mut TraceWriter,
    target: &mut Target,
    tree_cgroup: &Result<Arc<TreeCgroup>, String>,
    start: Instant,
    progress: &mut Progress,
    observe: &mut dyn FnMut(&Record) -> bool,
) -> Result<EndRecord, GateError> {
    observe(&Record::Header(Box::new(header.clone())));
    let clock = Clock {
        t0: target.started().unwrap_or(start),
    };
    write_start(plan, writer, target)?;
    // Which path the host counters take (`gate doctor` says the same).
    let e = Record::Event(event(
        0.0,
        EventKind::Note,
        format!(
            "host counters: {}",
            cgroup::describe(tree_cgroup.as_ref().map(|c| c.as_ref()))
        ),
    ));
    writer.write(&e)?;
    observe(&e);
    let mut output = OutputKeeper::new(
        plan.warmup_until.clone(),
        plan.until.clone(),
        clock.t0 + plan.warmup,
    );
    let mut ticker = Ticker::new(plan, target, clock, tree_cgroup.as_ref().ok().cloned());
    let _live = plan
        .live_status
        .then(|| console::start_live(plan.duration.map(|d| plan.warmup + d)));
    let reason = loop {
        let now = ticker.wait(writer, progress)?;
        let keep_going = ticker.tick(
            now,
            gpu_sampler.as_mut(),
            writer,
            target,
            &mut output,
            progress,
            observe,
        )?;
        if let Some(reason) = stop_reason(plan, writer, target, &output, now, keep_going, clock)? {
            break reason;
        }
    };
    if plan.live_status {
        console::end_live();
    }
    ticker.profile.print();
    if let Some(s) = &gpu_sampler {
        s.profile.print();
    }
    finish(
        plan,
        header,
        gpu_sampler.as_ref(),
        writer,
        target,
        progress,
        &mut output,
        reason,
        clock,
    )
}

/// The first events: what started, and whether its I/O counters are readable.
fn write_start(
    plan: &RecordPlan,
    writer: &mut TraceWriter,
    target: &Target,
) -> Result<(), GateError> {
    writer.write(&Record::Event(EventRecord {
        pid: Some(target.pid()),
        ..event(
            0.0,
            EventKind::TargetStart,
            if plan.command.is_empty() {
                format!("attached to PID {}", target.pid())
            } else {
                plan.command.join(" ")
            },
        )
    }))?;
    if plan.pid.is_some() && std::fs::File::open(format!("/proc/{}/io", target.pid())).is_err() {
        // Another user's process: /proc/PID/io is theirs (and root's) only.
        let message = format!(
            "cannot read /proc/{}/io (another user's process?): read/write bytes are recorded as null; run gate as that user or as root to measure them",
            target.pid()
        );
        crate::gate_eprintln!("gate: warning: {message}");
        writer.write(&Record::Event(EventRecord {
            pid: Some(target.pid()),
            ..event(0.0, EventKind::Note, message)
        }))?;
    }
    Ok(())
}

/// The sampling loop's state between ticks.
struct Ticker {
    interval: Duration,
    warmup: Duration,
    live: bool,
    /// Plain progress lines (a CI log), at `line_at` and then every tenth
    /// of `window` (warm-up and `--duration`, when known).
    lines: bool,
    window: Option<Duration>,
    line_at: Duration,
    clock: Clock,
    next_tick: Instant,
    host_sampler: HostSampler,
    host_at: Option<Instant>,
    tree: HashSet<u32>,
    tree_scanner: host::TreeScanner,
    tree_at: Instant,
    live_at: Instant,
    profile: CpuProfile,
    frameworks: FrameworkScan,
    /// When the trace was last flushed to the file (`TRACE_FLUSH`).
    flushed_at: Instant,
}

/// Which frameworks the target's processes have loaded, read from their
/// /proc/PID/maps (never from the process itself). Libraries load during
/// start-up: the maps are read every `FRAMEWORK_SCAN` until a framework is
/// found, then at doubling periods (4, 8, 16, 32 s: a second one, vLLM
/// over torch or TensorRT building its engines, is still seen), and never
/// after `FRAMEWORK_SCAN_FOR`. A torch process maps ~1,000 files: a read
/// costs about a millisecond of CPU, and reading every 2 s for 90 s was
/// 43 us a tick on the H200 at 100 ms (BENCHMARKS.md); found at 2 s, the
/// maps are now read 6 times in all (0, 2, 6, 14, 30, 62 s) instead of 46.
struct FrameworkScan {
    started: Instant,
    next: Instant,
    period: Duration,
    found: std::collections::BTreeSet<&'static str>,
    /// Read buffer reused by every maps read.
    buf: Vec<u8>,
}

const FRAMEWORK_SCAN: Duration = Duration::from_secs(2);
const FRAMEWORK_SCAN_FOR: Duration = Duration::from_secs(90);

impl FrameworkScan {
    fn new(now: Instant) -> FrameworkScan {
        FrameworkScan {
            started: now,
            next: now,
            period: FRAMEWORK_SCAN,
            found: Default::default(),
            buf: Vec::new(),
        }
    }

    /// Frameworks found for the first time at `now` (each is said once).
    fn scan(&mut self, now: Instant, tree: &HashSet<u32>) -> Vec<&'static str> {
        if now < self.next || now.duration_since(self.started) > FRAMEWORK_SCAN_FOR {
            return Vec::new();
        }
        let mut new = Vec::new();
        let forks = forked_copies(tree);
        for pid in tree.iter().filter(|p| !forks.contains(p)) {
            use std::io::Read;
            self.buf.clear();
            // A process that exited or is another user's: nothing to read.
            let read = std::fs::File::open(format!("/proc/{pid}/maps"))
                .and_then(|mut f| f.read_to_end(&mut self.buf));
            let Ok(maps) = read.map(|_| String::from_utf8_lossy(&self.buf)) else {
                continue;
            };
            for fw in crate::analysis::framework::from_maps(&maps) {
                if self.found.insert(fw) {
                    new.push(fw);
                }
            }
        }
        if !self.found.is_empty() {
            self.period *= 2;
        }
        self.next = now + self.period;
        new
    }
}

/// The tree's processes that are forks of their parent (a DataLoader's
/// workers): the parent is in the tree with the same command line. Their
/// maps are the parent's, so the framework scan reads the parent's alone:
/// a main with 8 workers of a torch job is one read of ~1,000 lines, not
/// nine (1.7 ms each on the development VM). An exec'd child (a launcher's
/// `python train.py`, a `multiprocessing` spawn worker) has a command line
/// of its own and is read.
fn forked_copies(tree: &HashSet<u32>) -> HashSet<u32> {
    let cmdline = |pid: u32| std::fs::read(format!("/proc/{pid}/cmdline")).ok();
    let parent = |pid: u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        host::parse_stat(&stat).map(|(ppid, ..)| ppid)
    };
    let lines: std::collections::HashMap<u32, Vec<u8>> = (tree.iter())
        .filter_map(|&p| Some((p, cmdline(p)?)))
        .collect();
    (tree.iter().copied())
        .filter(|&pid| {
            parent(pid).is_some_and(|pp| {
                pp != pid && lines.get(&pp).is_some_and(|l| Some(l) == lines.get(&pid))
            })
        })
        .collect()
}

impl Ticker {
    /// The status line on a terminal (every second), or on a log a plain
    /// line every tenth of a known window.
    fn show_progress(
        &mut self,
        now: Instant,
        host: &[Option<f64>],
        gpu: Option<&[Option<f64>]>,
        warm: bool,
    ) {
        let elapsed = self.clock.since(now);
        if self.live && now.duration_since(self.live_at) >= Duration::from_secs(1) {
            self.live_at = now;
            print_live(elapsed, host, gpu, warm, self.window);
        } else if let Some(total) = self.window.filter(|_| self.lines) {
            if elapsed >= self.line_at {
                self.line_at = elapsed + console::plain_progress_every(total);
                crate::gate_eprintln!(
                    "gate: recording{}: {}",
                    if warm { " (warm-up)" } else { "" },
                    console::progress_words(elapsed, total)
                );
            }
        }
    }

    fn new(
        plan: &RecordPlan,
        target: &Target,
        clock: Clock,
        tree_cgroup: Option<Arc<TreeCgroup>>,
    ) -> Ticker {
        let now = Instant::now();
        let mut tree_scanner = host::TreeScanner::default();
        let mut host_sampler = HostSampler::with_cgroup(tree_cgroup);
        let tree = (host_sampler.cgroup_members())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| tree_scanner.scan(target.pid()));
        // (Read again every CGROUP_TREE_REFRESH, or scanned every
        // TREE_REFRESH.)
        Ticker {
            interval: plan.interval,
            warmup: plan.warmup,
            live: plan.live_status,
            lines: plan.progress_lines,
            window: plan.duration.map(|d| plan.warmup + d),
            line_at: Duration::ZERO,
            clock,
            next_tick: now,
            host_sampler,
            host_at: None,
            tree,
            tree_scanner,
            tree_at: now,
            live_at: clock.t0,
            profile: CpuProfile::from_env(),
            frameworks: FrameworkScan::new(now),
            flushed_at: now,
        }
    }

    /// Sleeps until the next tick and returns its time. A tick missed by
    /// more than an interval (host overloaded, suspended) is skipped rather
    /// than burst, and said in the trace.
    fn wait(
        &mut self,
        writer: &mut TraceWriter,
        progress: &mut Progress,
    ) -> Result<Instant, GateError> {
        self.next_tick += self.interval;
        let now = Instant::now();
        if self.next_tick > now {
            std::thread::sleep(self.next_tick - now);
        } else if now - self.next_tick > self.interval {
            progress.late += 1;
            if progress.late <= 10 {
                let late_ms = (now - self.next_tick).as_secs_f64() * 1000.0;
                writer.write(&Record::Event(event(
                    self.clock.ms(now),
                    EventKind::LateSample,
                    format!("sample {late_ms:.1} ms late"),
                )))?;
            }
            self.next_tick = now;
        }
        Ok(Instant::now())
    }

    /// The tree again when due: the cgroup's member list (one read), else
    /// the scan of every thread's `children` file.
    fn refresh_tree(&mut self, now: Instant, target: &mut Target) {
        let cgroup = self.host_sampler.has_cgroup();
        let refresh = if cgroup {
            CGROUP_TREE_REFRESH
        } else {
            TREE_REFRESH
        };
        if now.duration_since(self.tree_at) < refresh {
            return;
        }
        self.tree_at = now;
        let fresh = if cgroup {
            self.host_sampler.cgroup_members()
        } else {
            self.tree_scanner.scan_if_created(target.pid())
        };
        if let Some(fresh) = fresh.filter(|f| !f.is_empty()) {
            // Remembered, so they are stopped with the tree even after
            // they leave its process group.
            target.track(fresh.iter().copied());
            self.tree = fresh;
        }
    }

    /// This tick's host vector: counters read at most every HOST_PERIOD
    /// (/proc CPU times tick at 10 ms: faster would be noise), all missing
    /// in between. The main processes are the tree's on the GPUs.
    fn sample_host(
        &mut self,
        now: Instant,
        gpu: Option<&GpuSampler>,
        root: u32,
    ) -> Vec<Option<f64>> {
        if self
            .host_at
            .is_some_and(|t| now.duration_since(t) < HOST_PERIOD)
        {
            return vec![None; HOST_METRICS.len()];
        }
        let c = self.profile.start();
        // Profiled apart: the samples that also read the once-a-second files.
        let section = if self.host_sampler.slow_due(now) {
            "host_1s"
        } else {
            "host"
        };
        self.host_at = Some(now);
        let gpu_pids = gpu.into_iter().flat_map(|s| s.gpu_pids());
        let main = host::main_processes(&self.tree, gpu_pids, root);
        let h = self.host_sampler.sample(&self.tree, &main, now);
        self.profile.stop(section, c);
        h
    }

    /// One tick: refresh the process tree, read host and GPU counters, write
    /// the sample with the tick's events, process lists and new stdout lines.
    /// Returns false when `observe` asked to stop.
    #[allow(clippy::too_many_arguments)]
    fn tick(
        &mut self,
        now: Instant,
        gpu_sampler: Option<&mut GpuSampler>,
        writer: &mut TraceWriter,
        target: &mut Target,
        output: &mut OutputKeeper,
        progress: &mut Progress,
        observe: &mut dyn FnMut(&Record) -> bool,
    ) -> Result<bool, GateError> {
        let t_ms = self.clock.ms(now);
        let c = self.profile.start();
        self.refresh_tree(now, target);
        self.profile.stop("tree", c);
        let mut h = self.sample_host(now, gpu_sampler.as_deref(), target.pid());
        let (mut g, extras) = match gpu_sampler {
            Some(s) => s.sample(now, t_ms, &self.tree),
            None => (Vec::new(), Default::default()),
        };
        let c = self.profile.start();
        let found = self.frameworks.scan(now, &self.tree);
        self.profile.stop("frameworks", c);
        let c = self.profile.start();
        let warm = self.clock.since(now) < self.warmup || !output.warmup_released();
        self.show_progress(now, &h, g.first().map(|v| v.as_slice()), warm);
        // Rounded in place: a few decimals keep traces small and diffs stable.
        for x in g.iter_mut().flatten().chain(h.iter_mut()) {
            *x = x.map(round_value);
        }
        let sample = Record::Sample(SampleRecord {
            t: t_ms,
            w: warm,
            g,
            h,
        });
        writer.write(&sample)?;
        let mut keep_going = observe(&sample);
        progress.samples += 1;
        for fw in found {
            let e = Record::Event(event(t_ms, EventKind::Framework, fw));
            writer.write(&e)?;
            keep_going &= observe(&e);
        }
        for e in extras.events {
            let e = Record::Event(e);
            writer.write(&e)?;
            keep_going &= observe(&e);
        }
        for mut p in extras.processes {
            for proc_ in p.procs.iter_mut() {
                proc_.cpu_pct = self
                    .host_sampler
                    .last_cpu_pct
                    .get(&proc_.pid)
                    .map(|v| round_value(*v));
                proc_.rss_mib = self.host_sampler.rss_mib(proc_.pid).map(round_value);
            }
            let p = Record::Processes(p);
            writer.write(&p)?;
            keep_going &= observe(&p);
        }
        output.drain(writer, target, self.clock)?;
        if now.duration_since(self.flushed_at) >= TRACE_FLUSH {
            writer.flush()?;
            self.flushed_at = now;
        }
        self.profile.stop("trace_write", c);
        Ok(keep_going)
    }
}

/// Why the recording ends after the tick at `now`, if it does: the target
/// exited, `observe` or a signal asked, warm-up or the window is over. A
/// target still running is stopped (an attached one is never signalled).
fn stop_reason(
    plan: &RecordPlan,
    writer: &mut TraceWriter,
    target: &mut Target,
    output: &OutputKeeper,
    now: Instant,
    keep_going: bool,
    clock: Clock,
) -> Result<Option<StopReason>, GateError> {
    if target.poll_exit().is_some() {
        // The same Ctrl-C (the terminal sends it to the whole group) or a
        // signal gate forwarded may have ended it: an interruption (exit
        // 3), not the benchmark's failure (issue 41.9).
        if target::interrupt_signal().is_some() {
            return Ok(Some(StopReason::Interrupted));
        }
        return Ok(Some(StopReason::TargetExited));
    }
    let elapsed = clock.since(now);
    let reason = if !keep_going {
        StopReason::Stopped
    } else if let Some(sig) = target::interrupt_signal() {
        // Forwarded as received (Ctrl-C, SIGTERM, a hang-up), to the
        // whole tree.
        writer.write(&Record::Event(EventRecord {
            code: Some(i64::from(sig)),
            ..event(
                clock.now_ms(),
                EventKind::Note,
                format!("gate received signal {sig}: forwarded to the benchmark's process tree"),
            )
        }))?;
        target.stop(sig, target::STOP_GRACE);
        return Ok(Some(StopReason::Interrupted));
    } else if !output.warmup_released() && elapsed >= plan.warmup_timeout {
        // A pattern that never matches must not hold the run open.
        writer.write(&Record::Event(event(
            clock.ms(now),
            EventKind::Note,
            format!(
                "--warmup-until did not match any stdout line within {} (--warmup-timeout): recording stopped",
                crate::limits::duration_text(plan.warmup_timeout)
            ),
        )))?;
        StopReason::WarmupTimeout
    } else if elapsed >= crate::limits::MAX_RECORDING {
        writer.write(&Record::Event(event(
            clock.ms(now),
            EventKind::Note,
            format!(
                "the recording reached {}, the longest trace gate reads (docs/limits.md): stopped",
                crate::limits::duration_text(crate::limits::MAX_RECORDING)
            ),
        )))?;
        StopReason::DurationReached
    } else {
        // The window counts from the end of warm-up: the later of --warmup
        // and the --warmup-until line.
        let steady_since = output
            .warmup_matched
            .map(|m| clock.since(m).max(plan.warmup))
            .unwrap_or(plan.warmup);
        let window_over =
            output.warmup_released() && plan.duration.is_some_and(|d| elapsed >= steady_since + d);
        if !window_over {
            return Ok(None);
        }
        StopReason::DurationReached
    };
    target.stop(libc::SIGTERM, target::STOP_GRACE);
    Ok(Some(reason))
}

/// After the loop: wait for the target, stop what it left running, write
/// the closing events and build the end record.
#[allow(clippy::too_many_arguments)]
fn finish(
    plan: &RecordPlan,
    header: &Header,
    gpu_sampler: Option<&GpuSampler>,
    writer: &mut TraceWriter,
    target: &mut Target,
    progress: &Progress,
    output: &mut OutputKeeper,
    reason: StopReason,
    clock: Clock,
) -> Result<EndRecord, GateError> {
    let exit = target.wait();
    if reason == StopReason::TargetExited {
        // `sh -c 'server & exit 0'`: what the command left running is
        // stopped, not orphaned.
        let left = target.stop_leftovers(target::STOP_GRACE);
        if !left.is_empty() {
            let pids: Vec<String> = left.iter().map(|p| p.to_string()).collect();
            let message = format!(
                "the benchmark exited and left {} process(es) running (PID {}): stopped them",
                left.len(),
                pids.join(", ")
            );
            crate::gate_eprintln!("gate: {message}");
            writer.write(&Record::Event(event(
                clock.now_ms(),
                EventKind::Note,
                message,
            )))?;
        }
    }
    output.drain(writer, target, clock)?;
    let long_lines = target.long_output_lines();
    if long_lines > 0 {
        writer.write(&Record::Event(event(
            clock.now_ms(),
            EventKind::OutputTruncated,
            format!(
                "{long_lines} stdout line(s) longer than {} were passed through whole but kept cut",
                crate::limits::bytes_text(crate::limits::MAX_OUTPUT_LINE_BYTES as u64)
            ),
        )))?;
    }
    if !output.warmup_released() {
        writer.write(&Record::Event(event(
            clock.now_ms(),
            EventKind::Note,
            crate::trace::WARMUP_NEVER_RELEASED_NOTE,
        )))?;
    }
    if let Some(e) = exit {
        writer.write(&Record::Event(EventRecord {
            pid: Some(target.pid()),
            code: e.code.map(i64::from),
            ..event(
                clock.ms(e.at),
                EventKind::TargetExit,
                match (e.code, e.signal) {
                    (Some(c), _) => format!("exit status {c}"),
                    (_, Some(s)) => format!("killed by signal {s}"),
                    _ if plan.pid.is_some() => "attached process ended (status unknown)".into(),
                    _ => "status unknown".into(),
                },
            )
        }))?;
    }
    if let Some(s) = gpu_sampler {
        write_gpu_notes(s, header, writer, clock)?;
    }
    // The file must be this run's: written after the target started.
    let run_start = SystemTime::now() - clock.t0.elapsed();
    let (metrics_file, metrics_file_problem) = match &plan.metrics_file {
        Some(p) => read_metrics_file(p, run_start, writer, clock.now_ms())?,
        None => (None, None),
    };
    Ok(EndRecord {
        t: clock.now_ms(),
        samples: progress.samples,
        late_samples: progress.late,
        exit_code: exit.and_then(|e| e.code),
        signal: exit.and_then(|e| e.signal),
        target_wall_s: match (target.started(), exit) {
            (Some(s), Some(e)) => Some(round_value(e.at.duration_since(s).as_secs_f64())),
            _ => None,
        },
        reason,
        metrics_file,
        metrics_file_problem,
        target_gpus: match (gpu_sampler, &plan.gpu) {
            (Some(s), None) if !s.target_gpus.is_empty() => {
                Some(s.target_gpus.iter().copied().collect())
            }
            _ => None,
        },
    })
}

/// Per-GPU notes at the end: the energy counter over the recording, and
/// what turned out unsupported after the header was written.
fn write_gpu_notes(
    sampler: &GpuSampler,
    header: &Header,
    writer: &mut TraceWriter,
    clock: Clock,
) -> Result<(), GateError> {
    for (gpu, joules) in sampler.energy_counter_j() {
        writer.write(&Record::Event(EventRecord {
            gpu: Some(gpu),
            ..event(
                clock.now_ms(),
                EventKind::Note,
                format!("NVML energy counter over the recording: {joules:.1} J (energy_j integrates power samples)"),
            )
        }))?;
    }
    for (gpu, unsupported) in sampler.unsupported() {
        let header_knew = header
            .fingerprint
            .gpus
            .iter()
            .find(|g| g.index == gpu)
            .map(|g| g.unsupported.clone())
            .unwrap_or_default();
        let new: Vec<String> = unsupported
            .into_iter()
            .filter(|u| !header_knew.contains(u))
            .collect();
        if !new.is_empty() {
            writer.write(&Record::Event(EventRecord {
                gpu: Some(gpu),
                ..event(
                    clock.now_ms(),
                    EventKind::Note,
                    format!(
                        "unsupported on this GPU (recorded as null): {}",
                        new.join(", ")
                    ),
                )
            }))?;
        }
    }
    Ok(())
}

/// Keeps the target's stdout lines in the trace (up to a cap) and watches
/// them for the `--warmup-until` pattern.
struct OutputKeeper {
    bytes: usize,
    capped: bool,
    warmup_until: Option<regex::Regex>,
    /// When the first line matching `warmup_until` arrived.
    warmup_matched: Option<Instant>,
    /// `--until`, until its line has been seen (then None).
    until: Option<regex::Regex>,
    /// The end of `--warmup`: an `--until` line before it does not count
    /// (docs: the window closes at the first such line after warm-up).
    warmup_ends: Instant,
}

impl OutputKeeper {
    fn new(
        warmup_until: Option<regex::Regex>,
        until: Option<regex::Regex>,
        warmup_ends: Instant,
    ) -> OutputKeeper {
        OutputKeeper {
            bytes: 0,
            capped: false,
            warmup_until,
            warmup_matched: None,
            until,
            warmup_ends,
        }
    }

    /// The steady window may start: the pattern matched, or there is none.
    fn warmup_released(&self) -> bool {
        self.warmup_until.is_none() || self.warmup_matched.is_some()
    }

    fn drain(
        &mut self,
        writer: &mut TraceWriter,
        target: &Target,
        clock: Clock,
    ) -> Result<(), GateError> {
        for (at, line) in target.drain_output() {
            if self.warmup_matched.is_none()
                && self
                    .warmup_until
                    .as_ref()
                    .is_some_and(|re| re.is_match(&line))
            {
                self.warmup_matched = Some(at);
                writer.write(&Record::Event(event(
                    clock.ms(at),
                    EventKind::Note,
                    format!("{}{line}", crate::trace::WARMUP_RELEASED_NOTE),
                )))?;
            }
            // The window closes at the first --until line after warm-up
            // (a line that released the warm-up does not also close it).
            else if self.warmup_released()
                && at >= self.warmup_ends
                && self.until.as_ref().is_some_and(|re| re.is_match(&line))
            {
                self.until = None;
                writer.write(&Record::Event(event(
                    clock.ms(at),
                    EventKind::Note,
                    // The line as far as the note needs it: a benchmark's
                    // line may be 64 KiB.
                    format!(
                        "{}{}",
                        crate::trace::WINDOW_CLOSED_NOTE,
                        line.chars().take(200).collect::<String>()
                    ),
                )))?;
            }
            if self.bytes + line.len() > OUTPUT_CAP_BYTES {
                if !self.capped {
                    self.capped = true;
                    writer.write(&Record::Event(event(
                        clock.ms(at),
                        EventKind::OutputTruncated,
                        format!(
                            "stdout beyond {OUTPUT_CAP_BYTES} bytes is passed through but not kept in the trace"
                        ),
                    )))?;
                }
                continue;
            }
            self.bytes += line.len();
            writer.write(&Record::Output(OutputRecord {
                t: clock.ms(at),
                line,
            }))?;
        }
        Ok(())
    }
}

/// What of `--metrics-file` the trace keeps (`metric_sources::keep`), or
/// why nothing: a note says it too, for `gate report` and people reading
/// the trace.
fn read_metrics_file(
    path: &Path,
    run_start: SystemTime,
    writer: &mut TraceWriter,
    t_ms: f64,
) -> Result<
    (
        Option<String>,
        Option<crate::metric_sources::MetricsFileProblem>,
    ),
    GateError,
> {
    match crate::metric_sources::keep_metrics_file(path, run_start) {
        Ok(text) => Ok((Some(text), None)),
        Err(p) => {
            writer.write(&Record::Event(event(
                t_ms,
                EventKind::Note,
                p.message.clone(),
            )))?;
            Ok((None, Some(p)))
        }
    }
}

/// One status line on a terminal: how far (a bar and the time left when
/// the window is known, else the elapsed time) and a few current readings
/// (first GPU). Never printed when stderr is not a TTY.
fn print_live(
    elapsed: Duration,
    host: &[Option<f64>],
    gpu: Option<&[Option<f64>]>,
    warm: bool,
    window: Option<Duration>,
) {
    let fmt = |v: Option<f64>, unit: &str| {
        v.map(|x| format!("{x:.0}{unit}"))
            .unwrap_or_else(|| "-".into())
    };
    let host_at = |id: &str| {
        HOST_METRICS
            .iter()
            .position(|d| d.id == id)
            .and_then(|i| host.get(i).copied().flatten())
    };
    let when = match window {
        Some(total) => console::progress_words(elapsed, total),
        None => format!("{:>6.1}s", elapsed.as_secs_f64()),
    };
    let mut line = format!(
        "{when}{}  target CPU {}",
        if warm { " (warm-up)" } else { "" },
        fmt(host_at("target_cpu_pct"), "%")
    );
    if let Some(g) = gpu {
        let at = |id: &str| {
            GPU_METRICS
                .iter()
                .position(|d| d.id == id)
                .and_then(|i| g.get(i).copied().flatten())
        };
        line.push_str(&format!(
            "  GPU0 busy {}  SM {}  tensor {}  {}",
            fmt(at("gpu_busy_pct"), "%"),
            fmt(at("sm_active_pct"), "%"),
            fmt(at("tensor_pct"), "%"),
            fmt(at("power_w"), " W")
        ));
    }
    console::show_live(elapsed, &line);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forked_workers_are_copies_an_execd_child_is_not() {
        use std::io::BufRead;
        // A python main that forks a worker (same command line) and runs
        // `sleep` (exec'd: its own), then prints the three PIDs.
        let mut main = std::process::Command::new("python3")
            .args([
                "-c",
                "import os, subprocess, sys, time\n\
                 s = subprocess.Popen(['sleep', '20'])\n\
                 pid = os.fork()\n\
                 if pid == 0:\n    time.sleep(20)\n    os._exit(0)\n\
                 print(os.getpid(), pid, s.pid, flush=True)\n\
                 time.sleep(20)",
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(main.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let pids: Vec<u32> = line
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        let tree: HashSet<u32> = pids.iter().copied().collect();
        let forks = forked_copies(&tree);
        for p in pids.iter().skip(1) {
            // SAFETY: kill(2) on the test's own grandchildren.
            unsafe { libc::kill(*p as libc::pid_t, libc::SIGKILL) };
        }
        let _ = main.kill();
        let _ = main.wait();
        assert_eq!(
            forks,
            [pids[1]].into(),
            "main {}, fork {}, sleep {}",
            pids[0],
            pids[1],
            pids[2]
        );
    }

    #[test]
    fn framework_scans_back_off_once_found_and_end_after_90_s() {
        let s = Duration::from_secs;
        let t0 = Instant::now();
        let mut scan = FrameworkScan::new(t0);
        let tree = HashSet::new();
        // Nothing found: every 2 s, as before.
        assert!(scan.scan(t0, &tree).is_empty());
        assert_eq!(scan.next, t0 + s(2));
        scan.scan(t0 + s(1), &tree);
        assert_eq!(scan.next, t0 + s(2), "not due: no read");
        scan.scan(t0 + s(2), &tree);
        assert_eq!(scan.next, t0 + s(4));
        // Found: the period doubles at each read (4, 8, 16, 32, 64 s), and
        // nothing is read after 90 s.
        scan.found.insert("torch");
        let mut reads = vec![];
        let mut t = t0 + s(4);
        while t <= t0 + s(200) {
            let before = scan.next;
            scan.scan(t, &tree);
            if scan.next != before {
                reads.push((t - t0).as_secs());
            }
            t += Duration::from_millis(100);
        }
        assert_eq!(reads, vec![4, 8, 16, 32, 64]);
    }
}
