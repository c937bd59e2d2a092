//! The sampling loop: a tick every `--interval` reads the process tree,
//! the host counters and the GPU source, writes the sample with the tick's
//! events, process lists and stdout lines, and decides whether the
//! recording ends (`stop_reason`).

use super::finish::finish;
use super::frameworks::FrameworkScan;
use super::launch::write_start;
use super::output::OutputKeeper;
use super::{event, Clock, Progress, RecordPlan, TRACE_FLUSH};
use crate::console;
use crate::error::GateError;
use crate::metrics::{GPU_METRICS, HOST_METRICS};
use crate::sampler::cgroup::{self, TreeCgroup};
use crate::sampler::host::{self, HostSampler};
use crate::sampler::source::GpuSource;
use crate::sampler::CpuProfile;
use crate::target::{self, Target};
use crate::trace::{
    round_value, EndRecord, EventKind, EventRecord, Header, Record, SampleRecord, StopReason,
    TraceWriter,
};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// Sample `target` until the window ends, then write the closing events.
/// Returns the end record; the caller finishes the file.
// The recording's parts are separate borrows on purpose: the caller keeps
// the writer, target and progress to close a failed recording properly.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    plan: &RecordPlan,
    header: &Header,
    gpu_sampler: &mut Option<Box<dyn GpuSource>>,
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
        // The sleep's own cost (the wake-up, charged to this thread) and
        // the end checks are sections too: the profile sums the whole loop.
        let c = ticker.profile.start();
        let now = ticker.wait(writer, progress)?;
        ticker.profile.stop("wait", c);
        let keep_going = ticker.tick(
            now,
            gpu_sampler.as_deref_mut(),
            writer,
            target,
            &mut output,
            progress,
            observe,
        )?;
        let c = ticker.profile.start();
        let stop = stop_reason(plan, writer, target, &output, now, keep_going, clock)?;
        ticker.profile.stop("stop_check", c);
        if let Some(reason) = stop {
            break reason;
        }
    };
    if plan.live_status {
        console::end_live();
    }
    ticker.profile.print();
    if let Some(s) = &gpu_sampler {
        s.print_profile();
    }
    finish(
        plan,
        header,
        gpu_sampler.as_deref(),
        writer,
        target,
        progress,
        &mut output,
        reason,
        clock,
    )
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
        gpu: Option<&dyn GpuSource>,
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
        gpu_sampler: Option<&mut (dyn GpuSource + 'static)>,
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
