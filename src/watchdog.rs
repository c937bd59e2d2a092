//! The watchdog: a launched tree dies with gate, even when gate itself is
//! killed with SIGKILL (a CI runner ending a job that way used to leak the
//! benchmark's processes, GPU memory included, into the next job).
//!
//! Why this design, of the ones available without privileges:
//! - `PR_SET_PDEATHSIG` reaches only gate's direct child (`target.rs` still
//!   sets it); that child's own children are reparented to PID 1 and live on.
//! - The tree's token (`GATE_TARGET_TOKEN`) misses a descendant that clears
//!   its environment, and the process group misses one that calls `setsid`:
//!   both are how `target.rs` finds the tree while gate lives, and neither
//!   helps once gate is dead (nobody is left to look).
//! - A cgroup v2 per run would catch everything, but needs a delegated,
//!   writable cgroup, which CI containers rarely give.
//! - So: gate makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`):
//!   while gate lives, every orphan of the tree is reparented to gate instead
//!   of PID 1, so the tree stays ONE tree under gate (parent links), whatever
//!   it does with its environment, session or process group. A watchdog
//!   process (gate's own binary run as `gate __watchdog`, in its own session
//!   so a signal to gate's process group does not reach it) holds the read
//!   end of a pipe whose only write end is gate's (close-on-exec, so the
//!   benchmark never holds it). It learns the command's PID through the
//!   pipe and every `POLL` remembers the tree: the command's descendants,
//!   and the orphans gate adopted. When the pipe ends (gate exited: SIGKILL,
//!   OOM, a panic, or simply done), it stops the remembered processes and
//!   their descendants, and every process still carrying the tree's token:
//!   SIGSTOP first (no more forks), then SIGKILL, then it exits.
//!
//! What remains: a process that leaves the tree and dies-and-forks within
//! one `POLL` right before gate is killed, and drops the token, can escape;
//! a cgroup is the only complete answer (docs/limits.md).
//!
//! Where the recording put the command in a cgroup of its own
//! (`sampler::cgroup`), gate sends its directory first (`cgroup DIR`): the
//! cgroup then holds the whole tree, so the watchdog does not poll at all
//! (reading every `/proc/PID/stat` every 200 ms cost more CPU than gate's
//! sampling), and when the pipe ends it kills what is in the cgroup
//! (`cgroup.kill`), sweeps the token as above, and removes the directory.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// The first argument that makes the `gate` binary run as the watchdog.
pub(crate) const WATCHDOG_ARG: &str = "__watchdog";

/// How often the watchdog looks at the tree while gate lives.
pub const POLL: Duration = Duration::from_millis(200);

/// Whether this binary runs `WATCHDOG_ARG` (set by `gate`'s `main`); a
/// library user (the unit tests) gets no watchdog rather than a stray
/// process.
static AVAILABLE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Called first thing by `gate`'s `main`: runs the watchdog and returns its
/// exit code when the command line asks for it, else notes that the
/// watchdog is available and returns None.
pub fn main_if_requested() -> Option<i32> {
    let args: Vec<String> = std::env::args().skip(1).take(4).collect();
    if args.first().map(String::as_str) != Some(WATCHDOG_ARG) {
        AVAILABLE.store(true, std::sync::atomic::Ordering::SeqCst);
        return None;
    }
    let gate_pid = args.get(1).and_then(|p| p.parse().ok())?;
    let marker = args.get(2).cloned().unwrap_or_default();
    Some(watch(gate_pid, &marker))
}

/// gate's side: the running watchdog of one launch.
pub(crate) struct Watchdog {
    pipe: std::fs::File,
    child: Option<std::process::Child>,
}

impl Watchdog {
    /// Make gate a subreaper and start the watchdog for the tree marked
    /// with `token`. None where the watchdog is not available (library
    /// use) or could not start (then gate runs as before: the tree is
    /// still stopped by gate whenever gate can).
    /// `marker` is the tree's environment entry (`GATE_TARGET_TOKEN=...`).
    pub fn start(marker: &str) -> Option<Watchdog> {
        if !AVAILABLE.load(std::sync::atomic::Ordering::SeqCst) {
            return None;
        }
        // SAFETY: prctl with integer arguments; affects only this process.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
        let mut fds = [0; 2];
        // SAFETY: fds is a valid 2-int array; O_CLOEXEC so no child but the
        // watchdog (which gets the read end as stdin) inherits either end.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        // SAFETY: both descriptors were just created and are owned here.
        let (read_end, write_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let exe = std::env::current_exe().ok()?;
        let mut command = std::process::Command::new(exe);
        command
            .arg(WATCHDOG_ARG)
            .arg(std::process::id().to_string())
            .arg(marker)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(std::process::Stdio::from(read_end))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit());
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe. Its own session: a signal to
        // gate's process group (Ctrl-C, a CI runner's SIGKILL to the group)
        // does not take the watchdog with it.
        unsafe {
            command.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let child = command.spawn().ok()?;
        Some(Watchdog {
            pipe: std::fs::File::from(write_end),
            child: Some(child),
        })
    }

    /// Tell the watchdog which PID the command got.
    pub fn watch(&mut self, command_pid: u32) {
        let _ = writeln!(self.pipe, "{command_pid}");
    }

    /// Tell the watchdog the command runs in the cgroup `dir` (before
    /// `watch`): it then waits instead of polling, and empties and removes
    /// the cgroup when gate is gone.
    pub(crate) fn watch_cgroup(&mut self, dir: &std::path::Path) {
        use std::os::unix::ffi::OsStrExt;
        let mut line = b"cgroup ".to_vec();
        line.extend_from_slice(dir.as_os_str().as_bytes());
        line.push(b'\n');
        let _ = self.pipe.write_all(&line);
    }

    /// The watchdog's PID (gate must not count it as part of the tree).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }
}

impl Drop for Watchdog {
    /// Closing the pipe ends the watchdog (after it swept what is left);
    /// it is reaped in the background so no zombie stays behind.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // The pipe closes when `self.pipe` drops, right after this. A
            // thread that cannot start leaves a zombie until gate exits
            // (gate is ending), never a panic in a drop.
            let _ = std::thread::Builder::new().spawn(move || {
                let _ = child.wait();
            });
        }
    }
}

/// One process as /proc/PID/stat describes it.
#[derive(Debug, Clone, Copy)]
struct Proc {
    ppid: u32,
    pgrp: u32,
    start_ticks: u64,
}

fn read_proc(pid: u32) -> Option<Proc> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): field N is f[N - 3].
    if matches!(f.first(), Some(&"Z") | Some(&"X")) {
        return None;
    }
    Some(Proc {
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        start_ticks: f.get(19)?.parse().ok()?,
    })
}

fn all_procs() -> BTreeMap<u32, Proc> {
    let mut out = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            if let Some(pid) = e.file_name().to_str().and_then(|s| s.parse().ok()) {
                if let Some(p) = read_proc(pid) {
                    out.insert(pid, p);
                }
            }
        }
    }
    out
}

/// `roots` and every live descendant of them in `procs`.
fn with_descendants(procs: &BTreeMap<u32, Proc>, roots: &BTreeSet<u32>) -> BTreeSet<u32> {
    let mut set: BTreeSet<u32> = roots
        .iter()
        .copied()
        .filter(|p| procs.contains_key(p))
        .collect();
    loop {
        let before = set.len();
        for (pid, p) in procs {
            if set.contains(&p.ppid) {
                set.insert(*pid);
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

fn is_watchdog(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| c.split(|&b| b == 0).nth(1) == Some(WATCHDOG_ARG.as_bytes()))
        .unwrap_or(false)
}

fn carries(pid: u32, needle: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|&b| b == 0).any(|e| e == needle))
        .unwrap_or(false)
}

/// The watchdog process: remember the tree while the pipe on stdin is
/// open, stop it when the pipe ends. Returns its exit code (0).
fn watch(gate_pid: u32, marker: &str) -> i32 {
    let me = std::process::id();
    let gate_pgrp = read_proc(gate_pid).map(|p| p.pgrp);
    let mut stdin = std::io::stdin().lock();
    let fd = stdin.as_raw_fd();
    let mut command_pid: Option<u32> = None;
    let mut cgroup: Option<std::path::PathBuf> = None;
    // Remembered members: PID -> start time (a reused PID is not a member).
    let mut members: BTreeMap<u32, u64> = BTreeMap::new();
    let mut line = Vec::new();
    let mut scanner = crate::sampler::host::TreeScanner::default();
    loop {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // In a cgroup nothing needs remembering: wait for the pipe alone.
        let timeout = match (&cgroup, command_pid) {
            (Some(_), Some(_)) => -1,
            _ => POLL.as_millis() as libc::c_int,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pfd, 1, timeout) };
        if ready > 0 {
            let mut buf = [0u8; 64];
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    line.extend_from_slice(&buf[..n]);
                    while let Some(i) = line.iter().position(|&b| b == b'\n') {
                        let text: Vec<u8> = line.drain(..i).collect();
                        line.remove(0);
                        if let Some(dir) = text.strip_prefix(b"cgroup ") {
                            use std::os::unix::ffi::OsStrExt;
                            cgroup = Some(std::ffi::OsStr::from_bytes(dir).into());
                            continue;
                        }
                        command_pid = std::str::from_utf8(&text)
                            .ok()
                            .and_then(|t| t.trim().parse().ok());
                    }
                }
            }
        }
        let Some(cmd) = command_pid else { continue };
        if cgroup.is_some() {
            continue;
        }
        remember_tree(&mut members, &mut scanner, cmd, gate_pid, gate_pgrp, me);
    }
    if let Some(dir) = &cgroup {
        empty_and_remove(dir);
    }
    sweep(&members, marker, me, gate_pid);
    if let Some(dir) = &cgroup {
        let _ = std::fs::remove_dir(dir);
    }
    0
}

/// One look at the tree while gate lives: the command's descendants and the
/// orphans gate adopted (its children outside its own process group; gate's
/// own helpers, such as git, stay in gate's group), other than watchdogs,
/// with their descendants, walked down the `children` files from those
/// roots alone (a read of every process on the machine each `POLL` cost
/// more CPU than gate's sampling). A member keeps its start time (a reused
/// PID is not a member) and is forgotten once it is gone.
fn remember_tree(
    members: &mut BTreeMap<u32, u64>,
    scanner: &mut crate::sampler::host::TreeScanner,
    cmd: u32,
    gate_pid: u32,
    gate_pgrp: Option<u32>,
    me: u32,
) {
    // Remembered members still alive as themselves are roots too (one that
    // left the tree's parent links, e.g. by a subreaper of its own); their
    // start times were read just now, so the walk does not read them again.
    members.retain(|pid, start| read_proc(*pid).is_some_and(|p| p.start_ticks == *start));
    let mut roots: Vec<u32> = vec![cmd];
    roots.extend(members.keys().copied());
    let checked: BTreeSet<u32> = members.keys().copied().collect();
    for pid in children_of(gate_pid) {
        if pid != me && !roots.contains(&pid) {
            let adopted = read_proc(pid).is_some_and(|p| Some(p.pgrp) != gate_pgrp);
            if adopted && !is_watchdog(pid) {
                roots.push(pid);
            }
        }
    }
    for pid in scanner.scan_roots(&roots) {
        if checked.contains(&pid) {
            continue;
        }
        if let Some(p) = read_proc(pid) {
            members.insert(pid, p.start_ticks);
        }
    }
}

/// The children of every thread of `pid` (an orphan is adopted by one of
/// the subreaper's threads).
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            let path = task.path().join("children");
            let text = std::fs::read_to_string(path).unwrap_or_default();
            out.extend(
                text.split_ascii_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    out
}

/// Kill everything in the cgroup `dir` and remove it (gate is gone; when
/// gate ended normally it has removed the directory already).
fn empty_and_remove(dir: &std::path::Path) {
    if std::fs::write(dir.join("cgroup.kill"), "1").is_err() {
        // No cgroup.kill (before Linux 5.14): SIGKILL to each member.
        let members = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        for pid in members
            .split_ascii_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            // SAFETY: kill(2) on a process of the tree's own cgroup.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    // The killed processes leave the cgroup as they exit.
    for _ in 0..200 {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Stop what is left of the tree: the remembered members still alive (same
/// start time), their descendants now, and any process whose environment
/// holds `marker` (the tree's `GATE_TARGET_TOKEN=...`).
fn sweep(members: &BTreeMap<u32, u64>, marker: &str, me: u32, gate_pid: u32) {
    let mut stopped: BTreeSet<u32> = BTreeSet::new();
    // Stop, look again (a process may have forked meanwhile), until no new
    // member appears; then kill them all.
    for _ in 0..50 {
        let procs = all_procs();
        let mut roots: BTreeSet<u32> = members
            .iter()
            .filter(|(pid, start)| procs.get(pid).is_some_and(|p| p.start_ticks == **start))
            .map(|(pid, _)| *pid)
            .collect();
        roots.extend(stopped.iter().copied());
        if marker.contains('=') {
            roots.extend(
                procs
                    .keys()
                    .copied()
                    .filter(|&pid| carries(pid, marker.as_bytes())),
            );
        }
        let all = with_descendants(&procs, &roots);
        let fresh: Vec<u32> = all
            .iter()
            .copied()
            .filter(|p| *p != me && *p != gate_pid && !stopped.contains(p))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for pid in fresh {
            // SAFETY: kill(2) on a process identified as a member just now.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGSTOP) };
            stopped.insert(pid);
        }
    }
    for pid in &stopped {
        // SAFETY: as above; SIGKILL ends a stopped process too.
        unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
    }
}
