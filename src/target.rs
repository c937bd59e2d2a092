//! The process being measured: launched from argv (never through a shell)
//! or attached by PID. Owns its process tree, its stdout pass-through and
//! its exit status.
//!
//! A launched command runs in its own process group, and every process it
//! starts inherits a marker in its environment (`GATE_TARGET_TOKEN`, as
//! Jenkins' ProcessTreeKiller does with `BUILD_ID`), so gate can find the
//! whole tree when it stops it, even a process that left the group
//! (`setsid`, a double fork) or was orphaned when its parent exited.
//! Whatever ends a recording, the tree is stopped:
//! - the window ends or gate is told to stop (SIGINT, SIGTERM, SIGHUP:
//!   forwarded): the signal goes to every member, SIGTERM follows for what
//!   is left once the command itself has exited, SIGKILL after `STOP_GRACE`
//!   (or at once on a second signal to gate);
//! - the command exits but leaves processes behind (`sh -c 'sleep 301 &'`):
//!   they are stopped the same way (`Target::stop_leftovers`);
//! - an error or a panic in gate: `Drop` stops the tree;
//! - gate itself is killed (SIGKILL, OOM): the command gets SIGTERM from
//!   the kernel (`PR_SET_PDEATHSIG`), and the watchdog (`crate::watchdog`:
//!   gate is a subreaper, so the tree stays under gate while it lives; a
//!   helper process holding a pipe to gate kills what is left when the pipe
//!   ends) takes the rest of the tree, `setsid` and cleared environments
//!   included.
//!
//! An attached process is never signalled.
//!
//! The benchmark's stdout is passed through whole; at most
//! `limits::MAX_OUTPUT_LINE_BYTES` of each line are kept (for the trace and
//! the regexes), so a 500 MB line costs 64 KiB, not 1 GB.

use crate::console::Echo;
use crate::error::GateError;
use crate::limits::MAX_OUTPUT_LINE_BYTES;
use crate::sampler::host::ProcFile;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a target ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub at: Instant,
}

/// Grace period between SIGTERM and SIGKILL when gate stops a command.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(10);

/// The environment variable that marks every process of a launched tree.
pub(crate) const TOKEN_VAR: &str = "GATE_TARGET_TOKEN";

/// How often the tree is looked at while gate waits for it to end.
const STOP_POLL: Duration = Duration::from_millis(50);

/// After SIGKILL, how long to wait for the processes to be gone (a process
/// in uninterruptible I/O dies when the I/O returns).
const KILL_WAIT: Duration = Duration::from_secs(5);

/// The last signal that asked gate to stop (0: none), and how many came.
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);
static STOP_SIGNALS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
    STOP_SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// What gate says when a stop signal ends it outside a recording.
const INTERRUPTED: &[u8] = b"gate: interrupted by a signal before the verdict was complete: exit 3 (nothing was judged; rerun)\n";

extern "C" fn exit_on_signal(_sig: libc::c_int) {
    // SAFETY: write(2) and _exit(2) are async-signal-safe. Reports are
    // written whole or not at all (temporary file, then rename), so ending
    // here leaves no half-written file.
    unsafe {
        libc::write(2, INTERRUPTED.as_ptr().cast(), INTERRUPTED.len());
        libc::_exit(crate::exit_code::INFRA);
    }
}

/// Outside a recording (replaying, judging, writing reports), SIGINT,
/// SIGTERM and SIGHUP end gate at once with exit 3, the infrastructure
/// code, instead of the shell's 130/143 (issue 41.9). A recording catches
/// them itself (`InterruptGuard`) and restores this when it ends. A signal
/// ignored on purpose (`nohup`) stays ignored.
pub fn exit_3_on_interrupt() {
    for sig in STOP_SIGNALS_CAUGHT {
        // SAFETY: as in `install_interrupt_handler`.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = exit_on_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut act.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, &act, &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN {
                libc::sigaction(sig, &old, std::ptr::null_mut());
            }
        }
    }
}

/// The signals gate catches while it records and forwards to the tree.
const STOP_SIGNALS_CAUGHT: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Catch SIGINT, SIGTERM and SIGHUP so the trace is finished properly and
/// the signal reaches the launched tree, instead of gate dying alone.
/// Returns the dispositions they had (see `InterruptGuard`).
pub(crate) fn install_interrupt_handler() -> Vec<(libc::c_int, libc::sigaction)> {
    let mut previous = Vec::new();
    for sig in STOP_SIGNALS_CAUGHT {
        // SAFETY: the handler only stores to atomics (async-signal-safe);
        // both sigaction structs are fully initialised before use.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            act.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, &act, &mut old) != 0 {
                continue;
            }
            if old.sa_sigaction == libc::SIG_IGN {
                // Ignored on purpose (`nohup gate ...`): stays ignored, for
                // gate and for the benchmark, which inherits it.
                libc::sigaction(sig, &old, std::ptr::null_mut());
                continue;
            }
            previous.push((sig, old));
        }
    }
    previous
}

/// The signals are caught while this lives (one recording); afterwards
/// their previous dispositions come back (`exit_3_on_interrupt`, or SIG_IGN
/// under `nohup`), so Ctrl-C while gate judges or writes reports ends gate
/// at once with exit 3: no benchmark runs then. A signal that arrived stays noted, so the
/// next run of `--runs N` stops at once too.
pub(crate) struct InterruptGuard(Vec<(libc::c_int, libc::sigaction)>);

impl InterruptGuard {
    pub fn install() -> InterruptGuard {
        InterruptGuard(install_interrupt_handler())
    }
}

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        for (sig, old) in &self.0 {
            // SAFETY: restoring a disposition sigaction(2) returned.
            unsafe {
                libc::sigaction(*sig, old, std::ptr::null_mut());
            }
        }
    }
}

pub fn interrupted() -> bool {
    STOP_SIGNAL.load(Ordering::SeqCst) != 0
}

/// The signal gate was asked to stop with (SIGINT, SIGTERM or SIGHUP).
pub(crate) fn interrupt_signal() -> Option<libc::c_int> {
    match STOP_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// How many stop signals gate has received so far.
pub(crate) fn stop_signals() -> usize {
    STOP_SIGNALS.load(Ordering::SeqCst)
}

/// A launched command and what gate knows of its tree.
pub struct Launched {
    pid: u32,
    started: Instant,
    exit_rx: Receiver<ExitInfo>,
    exit: Option<ExitInfo>,
    output_rx: Receiver<(Instant, String)>,
    reader: Option<JoinHandle<()>>,
    /// Value of `TOKEN_VAR` in the tree's environment.
    token: String,
    /// Descendants seen so far (`track`), with their start time so a
    /// reused PID is never taken for one of them.
    seen: HashMap<u32, u64>,
    /// Lines longer than `MAX_OUTPUT_LINE_BYTES` (kept cut).
    long_lines: Arc<AtomicU64>,
    /// The tree has been stopped or found empty: nothing left to do on drop.
    done: bool,
    /// Kills what is left of the tree if gate dies (dropped after `stop`).
    watchdog: Option<crate::watchdog::Watchdog>,
}

pub enum Target {
    Launched(Box<Launched>),
    Attached {
        pid: u32,
        exit: Option<ExitInfo>,
        /// How each tick asks whether it is still running.
        alive: Liveness,
    },
}

/// An attached process's liveness, checked every tick. A pidfd (Linux
/// 5.3) turns readable when the process exits, zombie or reaped, and
/// never names another process: a `poll` of it costs a microsecond where
/// a read of `/proc/PID/stat` cost 36 us (this machine; BENCHMARKS.md).
/// Where `pidfd_open` is refused, `/proc/PID/stat` held open from the
/// attach: one `pread`, which fails once that process is gone even if its
/// PID has been reused.
pub enum Liveness {
    Pidfd(std::os::fd::OwnedFd),
    Stat(Option<ProcFile>),
}

impl Liveness {
    fn of(pid: u32) -> Liveness {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a PID and flags and returns a new file
        // descriptor, owned here from now on, or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd >= 0 {
            // SAFETY: a descriptor the call just opened, owned by nothing else.
            Liveness::Pidfd(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
        } else {
            Liveness::Stat(ProcFile::open(&format!("/proc/{pid}/stat")))
        }
    }

    fn running(&self, pid: u32) -> bool {
        match self {
            Liveness::Pidfd(fd) => {
                use std::os::fd::AsRawFd;
                let mut p = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one pollfd we own, no wait.
                let ready = unsafe { libc::poll(&mut p, 1, 0) };
                ready == 0 || (ready < 0 && process_alive(pid))
            }
            Liveness::Stat(Some(file)) => {
                // A stat line is ~300 bytes (the name at most 64).
                let mut buf = [0u8; 1024];
                (file.read_into(&mut buf))
                    .and_then(Stat::parse)
                    .is_some_and(|st| st.running())
            }
            Liveness::Stat(None) => process_alive(pid),
        }
    }
}

/// A unique token per launch: gate's PID, the time, a counter.
fn new_token() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{nanos:x}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    )
}

/// A thread refused (a pids limit: `ulimit -u`, a container's pids.max):
/// the benchmark's group is stopped and the run fails cleanly (exit 3),
/// never a panic with the benchmark left running.
fn no_thread(child: &mut std::process::Child, e: std::io::Error) -> GateError {
    // SAFETY: kill(2) on the group the command leads.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
    let _ = child.wait();
    GateError::infra(format!(
        "cannot start a thread to follow the benchmark ({e}): the process or thread limit is reached (ulimit -u, pids.max); the benchmark was stopped"
    ))
}

/// Wait for `child` on a thread of its own; its exit comes on the channel.
/// The thread gets the child once it runs, so a refused thread leaves the
/// child here, to be stopped.
fn wait_in_thread(
    mut child: std::process::Child,
) -> Result<std::sync::mpsc::Receiver<ExitInfo>, GateError> {
    let (exit_tx, exit_rx) = channel();
    let (child_tx, child_rx) = channel::<std::process::Child>();
    let waiter = std::thread::Builder::new().spawn(move || {
        let Ok(mut child) = child_rx.recv() else {
            return;
        };
        let status = child.wait();
        let at = Instant::now();
        let info = match status {
            Ok(s) => ExitInfo {
                code: s.code(),
                signal: s.signal(),
                at,
            },
            Err(_) => ExitInfo {
                code: None,
                signal: None,
                at,
            },
        };
        let _ = exit_tx.send(info);
    });
    if let Err(e) = waiter {
        return Err(no_thread(&mut child, e));
    }
    let _ = child_tx.send(child);
    Ok(exit_rx)
}

impl Target {
    /// Start `argv` with stdout piped through gate (kept for the trace and
    /// passed on to `echo`: gate's stderr when gate's stdout carries a
    /// report), stderr and stdin inherited.
    pub fn launch(argv: &[String], echo: Echo) -> Result<Target, GateError> {
        Target::launch_in(argv, echo, None)
    }

    /// `launch`, the command moving itself into a cgroup between fork and
    /// exec: `cgroup` is that cgroup's `cgroup.procs`, open for writing,
    /// and its directory (`sampler::cgroup`), which the watchdog empties
    /// and removes if gate dies. A refused move is not an error here: the
    /// caller checks where the command ended up.
    pub(crate) fn launch_in(
        argv: &[String],
        echo: Echo,
        cgroup: Option<(std::os::fd::RawFd, &std::path::Path)>,
    ) -> Result<Target, GateError> {
        let cgroup_procs = cgroup.map(|(fd, _)| fd);
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| GateError::usage("no command given after '--'"))?;
        let token = new_token();
        let parent = std::process::id() as libc::pid_t;
        let mut command = Command::new(program);
        command
            .args(args)
            .env(TOKEN_VAR, &token)
            .stdin(Stdio::inherit())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0);
        // SAFETY: only async-signal-safe calls (prctl, signal, getppid,
        // write) between fork and exec.
        unsafe {
            command.pre_exec(move || {
                // If gate dies without stopping the tree (SIGKILL, OOM), the
                // command gets SIGTERM. The kernel sends it when the thread
                // that forked exits: gate launches from its main thread.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // gate ignores SIGXFSZ (main.rs); the benchmark gets the
                // default disposition back, as if gate were not there.
                libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
                // gate died between fork and prctl: do not run orphaned.
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("gate exited during launch"));
                }
                // "0": the writing process. Before exec, so every process
                // the command starts is born in the cgroup.
                if let Some(fd) = cgroup_procs {
                    let _ = libc::write(fd, b"0".as_ptr().cast(), 1);
                }
                Ok(())
            });
        }
        // Before the command starts: gate becomes a subreaper, so nothing
        // the command forks can leave the tree before the watchdog sees it.
        let mut watchdog = crate::watchdog::Watchdog::start(&format!("{TOKEN_VAR}={token}"));
        // Before the spawn: gate killed from here on still has its cgroup
        // emptied and removed.
        if let (Some(w), Some((_, dir))) = (&mut watchdog, cgroup) {
            w.watch_cgroup(dir);
        }
        let mut child = command.spawn().map_err(|e| {
            GateError::usage(format!(
                "cannot start '{program}': {e}; check the command after '--' (it runs without a shell, so PATH lookup only)"
            ))
        })?;
        let started = Instant::now();
        let pid = child.id();
        if let Some(w) = &mut watchdog {
            w.watch(pid);
        }
        let stdout = child.stdout.take().expect("stdout is piped");
        let (output_tx, output_rx) = channel();
        let long_lines = Arc::new(AtomicU64::new(0));
        let long = long_lines.clone();
        let reader = std::thread::Builder::new().spawn(move || {
            pass_through(stdout, echo, MAX_OUTPUT_LINE_BYTES, |at, line, cut| {
                if cut {
                    long.fetch_add(1, Ordering::SeqCst);
                }
                let _ = output_tx.send((at, line));
            })
        });
        let reader = match reader {
            Ok(r) => r,
            Err(e) => return Err(no_thread(&mut child, e)),
        };
        let exit_rx = wait_in_thread(child)?;
        Ok(Target::Launched(Box::new(Launched {
            pid,
            started,
            exit_rx,
            exit: None,
            output_rx,
            reader: Some(reader),
            token,
            seen: HashMap::new(),
            long_lines,
            done: false,
            watchdog,
        })))
    }

    /// Watch an existing process; it is never signalled or restarted.
    pub fn attach(pid: u32) -> Result<Target, GateError> {
        if !process_alive(pid) {
            return Err(GateError::usage(format!(
                "--pid {pid}: no such running process; check the PID (e.g. with 'pgrep -f train.py')"
            )));
        }
        Ok(Target::Attached {
            pid,
            exit: None,
            alive: Liveness::of(pid),
        })
    }

    pub fn pid(&self) -> u32 {
        match self {
            Target::Launched(l) => l.pid,
            Target::Attached { pid, .. } => *pid,
        }
    }

    pub fn started(&self) -> Option<Instant> {
        match self {
            Target::Launched(l) => Some(l.started),
            Target::Attached { .. } => None,
        }
    }

    /// Non-blocking: has the target ended?
    pub(crate) fn poll_exit(&mut self) -> Option<ExitInfo> {
        match self {
            Target::Launched(l) => l.poll_exit(),
            Target::Attached { pid, exit, alive } => {
                if exit.is_none() && !alive.running(*pid) {
                    *exit = Some(ExitInfo {
                        code: None,
                        signal: None,
                        at: Instant::now(),
                    });
                }
                *exit
            }
        }
    }

    /// Lines printed on stdout since the last call, with when they arrived
    /// (each at most `MAX_OUTPUT_LINE_BYTES`).
    pub(crate) fn drain_output(&self) -> Vec<(Instant, String)> {
        match self {
            Target::Launched(l) => l.output_rx.try_iter().collect(),
            Target::Attached { .. } => Vec::new(),
        }
    }

    /// Stdout lines longer than `MAX_OUTPUT_LINE_BYTES` so far (kept cut).
    pub(crate) fn long_output_lines(&self) -> u64 {
        match self {
            Target::Launched(l) => l.long_lines.load(Ordering::SeqCst),
            Target::Attached { .. } => 0,
        }
    }

    /// Remember `pids` (a scan of the target's process tree) as members of
    /// the launched tree, so they are stopped with it even after they leave
    /// its process group.
    pub(crate) fn track(&mut self, pids: impl IntoIterator<Item = u32>) {
        if let Target::Launched(l) = self {
            for pid in pids {
                if pid == l.pid || l.seen.contains_key(&pid) {
                    continue;
                }
                if let Some(st) = read_stat(pid) {
                    l.seen.insert(pid, st.start_ticks);
                }
            }
        }
    }

    /// Processes of the launched tree still running besides the command
    /// itself (empty for an attached target).
    pub(crate) fn leftovers(&self) -> Vec<u32> {
        match self {
            Target::Launched(l) => l
                .members()
                .into_iter()
                .map(|m| m.pid)
                .filter(|&p| p != l.pid)
                .collect(),
            Target::Attached { .. } => Vec::new(),
        }
    }

    /// Stop the launched tree: `sig` to every member; once the command
    /// itself has exited, SIGTERM to whatever is left; SIGKILL to all after
    /// `grace` (or at once when gate gets another stop signal). Returns how
    /// the command ended. Attached targets are left alone.
    pub fn stop(&mut self, sig: libc::c_int, grace: Duration) -> Option<ExitInfo> {
        match self {
            Target::Launched(l) => {
                l.stop(sig, grace);
                l.wait()
            }
            Target::Attached { .. } => None,
        }
    }

    /// After the command exited on its own: stop what it left running
    /// (`sh -c 'sleep 301 & exit 0'`). Returns the PIDs that were left.
    pub(crate) fn stop_leftovers(&mut self, grace: Duration) -> Vec<u32> {
        let left = self.leftovers();
        if let Target::Launched(l) = self {
            l.stop(libc::SIGTERM, grace);
        }
        left
    }

    /// Block until a launched target exits and its stdout is drained.
    pub fn wait(&mut self) -> Option<ExitInfo> {
        match self {
            Target::Launched(l) => l.wait(),
            Target::Attached { .. } => self.poll_exit(),
        }
    }
}

impl Launched {
    fn poll_exit(&mut self) -> Option<ExitInfo> {
        if self.exit.is_none() {
            self.exit = self.exit_rx.try_recv().ok();
        }
        self.exit
    }

    fn wait(&mut self) -> Option<ExitInfo> {
        if self.exit.is_none() {
            self.exit = self.exit_rx.recv().ok();
        }
        if let Some(r) = self.reader.take() {
            // The reader ends at EOF; a process that escaped every signal
            // and holds stdout open would keep it alive: don't wait for ever.
            let deadline = Instant::now() + Duration::from_secs(2);
            while !r.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if r.is_finished() {
                let _ = r.join();
            }
        }
        self.exit
    }

    /// Live members of the tree: the process group, the descendants seen
    /// by `track`, and any process carrying the tree's token. Zombies are
    /// not counted (they are dead; their parent reaps them).
    fn members(&self) -> Vec<Member> {
        let pgid = self.pid;
        let me = std::process::id();
        let needle = format!("{TOKEN_VAR}={}", self.token);
        let mut out = Vec::new();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return out;
        };
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            let Some(st) = read_stat(pid) else { continue };
            if st.state == 'Z' || st.state == 'X' {
                continue;
            }
            let in_group = st.pgrp == pgid;
            if in_group
                || self.seen.get(&pid) == Some(&st.start_ticks)
                || environ_has(pid, needle.as_bytes())
            {
                out.push(Member { pid, in_group });
            }
        }
        out
    }

    /// `sig` to the process group, and to each member outside it (once
    /// each: a second SIGINT would cut a graceful shutdown short).
    fn signal_all(&self, sig: libc::c_int, members: &[Member]) {
        // SAFETY: kill(2) on our own child's process group and on processes
        // identified as members of its tree just now.
        unsafe {
            // Only while the group has members: an empty group's number may
            // be reused by an unrelated process group.
            if self.exit.is_none() || members.iter().any(|m| m.in_group) {
                libc::kill(-(self.pid as libc::pid_t), sig);
            }
            for m in members.iter().filter(|m| !m.in_group) {
                libc::kill(m.pid as libc::pid_t, sig);
            }
        }
    }

    fn stop(&mut self, sig: libc::c_int, grace: Duration) {
        let signals_before = stop_signals();
        let mut members = self.members();
        if self.poll_exit().is_some() && members.is_empty() {
            self.done = true;
            self.reap_adopted();
            return;
        }
        self.signal_all(sig, &members);
        let mut termed = sig == libc::SIGTERM || sig == libc::SIGKILL;
        let deadline = Instant::now() + grace;
        loop {
            std::thread::sleep(STOP_POLL);
            let exited = self.poll_exit().is_some();
            members = self.members();
            if exited && members.is_empty() {
                self.done = true;
                self.reap_adopted();
                return;
            }
            if Instant::now() >= deadline || stop_signals() > signals_before {
                break;
            }
            if exited && !termed {
                // The command is gone; what it left needs no gentle signal.
                self.signal_all(libc::SIGTERM, &members);
                termed = true;
            }
        }
        let deadline = Instant::now() + KILL_WAIT;
        loop {
            self.signal_all(libc::SIGKILL, &members);
            std::thread::sleep(STOP_POLL);
            members = self.members();
            if (self.poll_exit().is_some() && members.is_empty()) || Instant::now() >= deadline {
                break;
            }
        }
        self.done = true;
        self.reap_adopted();
    }

    /// Orphans of the tree that gate adopted as a subreaper (only with the
    /// watchdog) and that have ended are gate's zombies: reap them. Only
    /// members of this tree (its process group, or seen by `track`); never
    /// the command itself, whose status its own thread collects, nor
    /// another child of gate's.
    fn reap_adopted(&self) {
        let me = std::process::id();
        let Some(watchdog) = &self.watchdog else {
            return;
        };
        let watchdog = watchdog.pid();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return;
        };
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == self.pid || Some(pid) == watchdog {
                continue;
            }
            let member =
                |st: &Stat| st.pgrp == self.pid || self.seen.get(&pid) == Some(&st.start_ticks);
            if read_stat(pid).is_some_and(|st| st.state == 'Z' && st.ppid == me && member(&st)) {
                let mut status = 0;
                // SAFETY: waitpid on a zombie child of ours, not blocking.
                unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
            }
        }
    }
}

impl Drop for Launched {
    /// An error or a panic in gate: the tree must not outlive the recording.
    fn drop(&mut self) {
        if !self.done {
            self.stop(libc::SIGTERM, STOP_GRACE);
        }
    }
}

/// Copy `from` to `echo` as it comes, and hand each line (without its line
/// break, at most `cap` bytes of it, lossy UTF-8) to `line` with the time it
/// arrived and whether it was cut. Memory stays within `cap` plus the read
/// buffer however long a line is: a line over `cap` streams through.
fn pass_through(
    from: impl Read,
    echo: Echo,
    cap: usize,
    mut line: impl FnMut(Instant, String, bool),
) {
    let mut reader = BufReader::with_capacity(64 * 1024, from);
    // The start of the current line, not yet echoed (echoed whole, so a
    // normal line reaches the terminal in one write).
    let mut held: Vec<u8> = Vec::new();
    // The first `cap` bytes of the current line, for the trace.
    let mut kept: Vec<u8> = Vec::new();
    let mut streaming = false;
    let mut cut = false;
    let mut emit = |held: &mut Vec<u8>, kept: &mut Vec<u8>, streaming: bool, cut: bool| {
        if !streaming {
            crate::console::echo_line(echo, held);
        }
        let text = String::from_utf8_lossy(kept)
            .trim_end_matches(['\n', '\r'])
            .to_string();
        line(Instant::now(), text, cut);
        held.clear();
        kept.clear();
    };
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if chunk.is_empty() {
            break;
        }
        let (used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let part = &chunk[..used];
        let room = cap.saturating_sub(kept.len());
        if part.len() > room && !part[room..].iter().all(|&b| b == b'\n' || b == b'\r') {
            cut = true;
        }
        kept.extend_from_slice(&part[..part.len().min(room)]);
        if streaming {
            crate::console::echo_line(echo, part);
        } else if held.len() + part.len() > cap {
            crate::console::echo_line(echo, &held);
            crate::console::echo_line(echo, part);
            held.clear();
            streaming = true;
        } else {
            held.extend_from_slice(part);
        }
        reader.consume(used);
        if done {
            emit(&mut held, &mut kept, streaming, cut);
            streaming = false;
            cut = false;
        }
    }
    if !kept.is_empty() || !held.is_empty() {
        emit(&mut held, &mut kept, streaming, cut);
    }
}

/// A live process of a launched tree.
struct Member {
    pid: u32,
    /// In the command's process group (signalled through the group).
    in_group: bool,
}

/// The fields of /proc/PID/stat gate needs.
struct Stat {
    state: char,
    ppid: u32,
    pgrp: u32,
    /// Start time in clock ticks after boot: with the PID, an identity.
    start_ticks: u64,
}

impl Stat {
    fn parse(text: &str) -> Option<Stat> {
        // The command name (field 2) may hold spaces and ')': split after the last ')'.
        let rest = &text[text.rfind(')')? + 1..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // rest starts at field 3 (state): field N is fields[N - 3].
        Some(Stat {
            state: fields.first()?.chars().next()?,
            ppid: fields.get(1)?.parse().ok()?,
            pgrp: fields.get(2)?.parse().ok()?,
            start_ticks: fields.get(19)?.parse().ok()?,
        })
    }

    /// Neither a zombie nor dead.
    fn running(&self) -> bool {
        self.state != 'Z' && self.state != 'X'
    }
}

fn read_stat(pid: u32) -> Option<Stat> {
    Stat::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Whether /proc/PID/environ holds `needle` as one whole entry. Other
/// users' processes are unreadable (not ours to stop anyway).
fn environ_has(pid: u32, needle: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|&b| b == 0).any(|e| e == needle))
        .unwrap_or(false)
}

/// Alive and not a zombie.
pub fn process_alive(pid: u32) -> bool {
    read_stat(pid).is_some_and(|st| st.running())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_passes_exit_code_and_output() {
        let argv: Vec<String> = ["sh", "-c", "echo 'samples_per_s: 12.5'; exit 7"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut t = Target::launch(&argv, Echo::Stderr).unwrap();
        let exit = t.wait().unwrap();
        assert_eq!(exit.code, Some(7));
        let lines: Vec<String> = t.drain_output().into_iter().map(|(_, l)| l).collect();
        assert_eq!(lines, vec!["samples_per_s: 12.5".to_string()]);
    }

    #[test]
    fn missing_program_is_a_usage_error_naming_it() {
        let err = match Target::launch(&["definitely-not-a-program-xyz".to_string()], Echo::Stderr)
        {
            Err(e) => e,
            Ok(_) => panic!("spawned a missing program"),
        };
        assert_eq!(err.exit_code(), crate::exit_code::USAGE);
        assert!(err.to_string().contains("definitely-not-a-program-xyz"));
    }

    #[test]
    fn stop_terminates_the_whole_group() {
        let argv: Vec<String> = ["sh", "-c", "sleep 30 & sleep 30"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut t = Target::launch(&argv, Echo::Stderr).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let exit = t.stop(libc::SIGTERM, Duration::from_secs(5)).unwrap();
        assert_eq!(exit.signal, Some(libc::SIGTERM));
    }

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    /// PIDs of live processes whose argv is exactly `args` (unique sleep
    /// durations tell each test's processes apart).
    pub(crate) fn running(args: &[&str]) -> Vec<u32> {
        let want: Vec<u8> = args
            .iter()
            .flat_map(|a| [a.as_bytes(), b"\0"].concat())
            .collect();
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| process_alive(pid))
            .filter(|&pid| std::fs::read(format!("/proc/{pid}/cmdline")).ok() == Some(want.clone()))
            .collect()
    }

    fn wait_for(args: &[&str]) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while running(args).is_empty() {
            assert!(Instant::now() < deadline, "{args:?} never started");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn what_an_exited_command_leaves_running_is_stopped() {
        // Issue 9: `record -- sh -c 'sleep 301 & exit 0'` left sleep running.
        let mut t =
            Target::launch(&argv(&["sh", "-c", "sleep 3011 & exit 0"]), Echo::Stderr).unwrap();
        wait_for(&["sleep", "3011"]);
        assert_eq!(t.wait().unwrap().code, Some(0));
        let left = t.stop_leftovers(Duration::from_secs(5));
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(running(&["sleep", "3011"]).is_empty());
    }

    #[test]
    fn members_ignoring_sigterm_get_sigkill_after_the_leader_exits() {
        // Issue 9: once the group leader had exited, stop() returned and the
        // promised SIGKILL never came.
        let cmd = "(trap '' TERM; exec sleep 4061) & sleep 1000";
        let mut t = Target::launch(&argv(&["sh", "-c", cmd]), Echo::Stderr).unwrap();
        wait_for(&["sleep", "4061"]);
        let started = Instant::now();
        t.stop(libc::SIGTERM, Duration::from_secs(1));
        assert!(running(&["sleep", "4061"]).is_empty());
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_process_that_left_the_group_is_stopped_too() {
        // setsid: its own session and process group; found by the token.
        let cmd = "setsid sleep 4071 & sleep 1000";
        let mut t = Target::launch(&argv(&["sh", "-c", cmd]), Echo::Stderr).unwrap();
        wait_for(&["sleep", "4071"]);
        t.stop(libc::SIGTERM, Duration::from_secs(5));
        assert!(running(&["sleep", "4071"]).is_empty());
    }

    #[test]
    fn dropping_a_target_stops_its_tree() {
        // An error (`?`) or a panic after launch drops the target.
        let t = Target::launch(
            &argv(&["sh", "-c", "sleep 4081 & sleep 4082"]),
            Echo::Stderr,
        )
        .unwrap();
        wait_for(&["sleep", "4081"]);
        wait_for(&["sleep", "4082"]);
        drop(t);
        assert!(running(&["sleep", "4081"]).is_empty());
        assert!(running(&["sleep", "4082"]).is_empty());
    }

    #[test]
    fn an_attached_process_is_never_signalled() {
        let mut child = Command::new("sleep").arg("4091").spawn().unwrap();
        let mut t = Target::attach(child.id()).unwrap();
        assert!(t.stop(libc::SIGTERM, Duration::from_secs(1)).is_none());
        assert!(t.stop_leftovers(Duration::from_secs(1)).is_empty());
        drop(t);
        assert!(process_alive(child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn an_attached_process_is_seen_to_end_as_a_zombie_and_once_reaped() {
        // This kernel gives pidfds: the held stat file is the fallback,
        // checked the same way.
        let pidfd = |pid| Target::attach(pid).unwrap();
        let stat = |pid: u32| Target::Attached {
            pid,
            exit: None,
            alive: Liveness::Stat(ProcFile::open(&format!("/proc/{pid}/stat"))),
        };
        assert!(matches!(
            pidfd(std::process::id()),
            Target::Attached {
                alive: Liveness::Pidfd(_),
                ..
            }
        ));
        for attach in [&pidfd as &dyn Fn(u32) -> Target, &stat] {
            zombie_then_reaped(attach);
        }
    }

    fn zombie_then_reaped(attach: &dyn Fn(u32) -> Target) {
        let mut child = Command::new("sleep").arg("4093").spawn().unwrap();
        let mut t = attach(child.id());
        let mut later = attach(child.id());
        assert!(t.poll_exit().is_none(), "running");
        child.kill().unwrap();
        // Killed, not yet reaped: a zombie has ended.
        let deadline = Instant::now() + Duration::from_secs(5);
        while t.poll_exit().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(t.poll_exit().is_some(), "a zombie has ended");
        child.wait().unwrap();
        // Reaped: the held handle reads nothing (even were the PID reused).
        assert!(later.poll_exit().is_some(), "a reaped process has ended");
        let mut me = attach(std::process::id());
        assert!(me.poll_exit().is_none(), "this test's own process runs");
    }

    #[test]
    fn long_lines_pass_through_whole_and_are_kept_cut() {
        let mut lines = Vec::new();
        let input = [vec![b'x'; 5_000], b"\nshort\r\nlast".to_vec()].concat();
        pass_through(&input[..], Echo::Stderr, 1000, |_, l, cut| {
            lines.push((l, cut))
        });
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].0.len(), 1000);
        assert!(lines[0].1, "cut");
        assert_eq!(lines[1], ("short".to_string(), false));
        assert_eq!(lines[2], ("last".to_string(), false));
    }

    #[test]
    fn attach_to_missing_pid_fails_clearly() {
        let err = match Target::attach(u32::MAX - 1) {
            Err(e) => e,
            Ok(_) => panic!("attached to a missing pid"),
        };
        assert!(err.to_string().contains("no such running process"));
    }
}
