//! Host counters from `/proc`: the target's process tree (CPU, RSS, threads,
//! I/O, context switches), the same per role, and the machine (CPU busy,
//! iowait).
//!
//! Roles ([`main_processes`]): MAIN is the tree's processes that hold a GPU
//! context on a target GPU (the NVML running-process list), or the tree's
//! root while none is known (before the CUDA context exists, `--no-gpu`);
//! WORKERS is every other process of the tree (DataLoader, compile and
//! tokenizer workers); OUTSIDE is the machine's busy CPU less the tree's
//! and gate's own. A loop that waits on its loader shows saturated workers
//! (`workers_busy_pct` near 100) beside an idle main process; work moved
//! into the training process shows as `main_cpu_pct` rising alone.
//!
//! Rates are deltas between two consecutive reads. A process that appears
//! between reads contributes from its second read on; one that exits
//! takes its last interval with it (its parent's `cutime` only grows after a
//! `wait`, which we cannot see). Both are short compared to a window.
//!
//! For a launched target in a cgroup of gate's own, or an attached one in
//! a cgroup that is its tree's own (`sampler::cgroup`), the tree's CPU
//! comes from the cgroup's `cpu.stat` at every sample, and the
//! per-process reads (roles, RSS, threads, the processes table) happen
//! once a second ([`SLOW_PERIOD`]): a sample then costs the same for a
//! tree of one process or of a hundred. Elsewhere (the per-process path)
//! each process's CPU clock is read at every sample (the tree's CPU and
//! the roles' to the nanosecond, one system call a process, the user and
//! system split by the last second's shares), and `/proc/PID/stat` (RSS,
//! threads, user and system ticks) once a second; where a process has no
//! clock, its `stat` at every sample as before.
//! Context switches (`status`), storage I/O (`io`) and the machine's CPU
//! (`/proc/stat`) are read once a second ([`SLOW_PERIOD`]): they were about
//! two thirds of gate's `/proc` time a tick on the H200 (BENCHMARKS.md
//! section 1), and their rules read means over a run. Each sample carries
//! the rate over the last such second until the next read.

use super::cgroup::{CpuUsec, TreeCgroup};
use crate::metrics::HOST_METRICS;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often context switches, storage I/O and the machine's CPU are read:
/// a second, less the 5 % by which a 100 ms tick may fire early (ten
/// ticks, not eleven).
pub(crate) const SLOW_PERIOD: Duration = Duration::from_millis(950);

/// Per-process counters from one read of /proc/PID/stat.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct ProcCounters {
    pub(crate) utime_ticks: u64,
    pub(crate) stime_ticks: u64,
    pub threads: u64,
    pub(crate) rss_pages: u64,
}

/// Per-process counters from one read of /proc/PID/{status,io}, once a
/// [`SLOW_PERIOD`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct SlowCounters {
    pub(crate) read_bytes: Option<u64>,
    pub(crate) write_bytes: Option<u64>,
    pub(crate) vol_ctx: u64,
    pub(crate) invol_ctx: u64,
}

/// The once-a-second rates, held between reads (`None` until two reads).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct SlowRates {
    read_mib_s: Option<f64>,
    write_mib_s: Option<f64>,
    ctx_per_s: Option<f64>,
    vol_ctx_per_s: Option<f64>,
    host_busy_pct: Option<f64>,
    host_iowait_pct: Option<f64>,
    /// Voluntary switches of the main processes' main threads.
    main_vol_ctx_per_s: Option<f64>,
    /// All switches of the workers' main threads.
    workers_ctx_per_s: Option<f64>,
    /// Machine busy CPU less the tree's and gate's, % of one core.
    outside_cpu_pct: Option<f64>,
}

/// What the last read of every process's `stat` said, held until the next
/// (every sample on the `/proc` path).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct ProcHeld {
    /// Processes read (None before the first read, or when none could be).
    processes: Option<u64>,
    rss_mib: f64,
    threads: u64,
    /// Of `processes`, the ones that are not main.
    workers: u64,
    /// CPU % of one core over the interval since the previous read.
    main_cpu_pct: Option<f64>,
    workers_cpu_pct: Option<f64>,
}

/// The tree's processes that hold a GPU context (`gpu_pids`: the NVML
/// running-process lists of the target GPUs); the root alone when none
/// does (no context yet, `--no-gpu`, another PID namespace).
pub(crate) fn main_processes(
    tree: &HashSet<u32>,
    gpu_pids: impl IntoIterator<Item = u32>,
    root: u32,
) -> HashSet<u32> {
    let mut main: HashSet<u32> = gpu_pids.into_iter().filter(|p| tree.contains(p)).collect();
    if main.is_empty() {
        main.insert(root);
    }
    main
}

/// Fields of /proc/PID/stat we need: (ppid, utime, stime, num_threads, rss).
/// The command name (field 2) may contain spaces and ')' so parse from the
/// last ')'.
pub(crate) fn parse_stat(text: &str) -> Option<(u32, u64, u64, u64, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    // After the comm: state(0) ppid(1) ... utime(11) stime(12) ...
    // num_threads(17) ... rss(21); read in one pass, nothing allocated
    // (this runs for every process of the tree at every host sample).
    let mut f = rest.split_ascii_whitespace();
    let ppid = f.nth(1)?.parse().ok()?;
    let utime = f.nth(9)?.parse().ok()?;
    let stime = f.next()?.parse().ok()?;
    let threads = f.nth(4)?.parse().ok()?;
    let rss = f.nth(3)?.parse().ok()?;
    Some((ppid, utime, stime, threads, rss))
}

/// The value of the last line of `text` that starts with `key` (trimmed),
/// parsed; None when no line does or it is not a number. The keys wanted
/// are near the end of /proc/PID/status, so the search starts there.
fn last_field(text: &str, key: &str) -> Option<u64> {
    let mut end = text.len();
    let at = loop {
        let i = text[..end].rfind(key)?;
        if i == 0 || text.as_bytes()[i - 1] == b'\n' {
            break i;
        }
        // Inside another key ("nonvoluntary_..." holds "voluntary_...").
        end = i;
    };
    let rest = &text[at + key.len()..];
    let line = rest.split('\n').next().unwrap_or("");
    line.trim().parse().ok()
}

/// (voluntary, nonvoluntary) context switches from /proc/PID/status.
pub(crate) fn parse_status_ctx(text: &str) -> (u64, u64) {
    (
        last_field(text, "voluntary_ctxt_switches:").unwrap_or(0),
        last_field(text, "nonvoluntary_ctxt_switches:").unwrap_or(0),
    )
}

/// (read_bytes, write_bytes) from /proc/PID/io (storage-layer bytes).
pub(crate) fn parse_io(text: &str) -> (Option<u64>, Option<u64>) {
    let mut read = None;
    let mut write = None;
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("read_bytes:") {
            read = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("write_bytes:") {
            write = v.trim().parse().ok();
        }
    }
    (read, write)
}

/// Machine CPU times from the first line of /proc/stat: (busy, iowait, total) in ticks.
pub(crate) fn parse_proc_stat_cpu(text: &str) -> Option<(u64, u64, u64)> {
    let line = text.lines().next()?;
    let mut it = line.split_whitespace();
    if it.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = it.filter_map(|x| x.parse().ok()).collect();
    if v.len() < 5 {
        return None;
    }
    // user nice system idle iowait irq softirq steal guest guest_nice;
    // guest times are already inside user/nice, so stop at steal.
    let total: u64 = v.iter().take(8).sum();
    let idle = v[3];
    let iowait = v[4];
    Some((total - idle - iowait, iowait, total))
}

pub(crate) use super::ProcFile;

/// A process's CPU clock (`clock_getcpuclockid`): the user and system time
/// of all its threads, the dead ones included, in nanoseconds, from one
/// system call. `/proc/PID/stat` says the same in 10 ms ticks, formatted
/// as text among fifty other fields: about 10 us a read beside a torch
/// main process on the H200 against well under 1 us for the clock
/// (BENCHMARKS.md, "attached").
struct CpuClock(libc::clockid_t);

impl CpuClock {
    fn of(pid: u32) -> Option<CpuClock> {
        let mut id: libc::clockid_t = 0;
        let pid = libc::pid_t::try_from(pid).ok()?;
        // SAFETY: writes the clock id into the variable we own.
        let ok = unsafe { libc::clock_getcpuclockid(pid, &mut id) } == 0;
        ok.then_some(CpuClock(id))
    }

    /// Nanoseconds of CPU so far; None once the process is gone.
    fn read_ns(&self) -> Option<u64> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes into the timespec we own.
        let ok = unsafe { libc::clock_gettime(self.0, &mut ts) } == 0;
        ok.then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }
}

/// `/proc/PID/{stat,status,io}` of one process, open between samples,
/// and its CPU clock.
struct ProcFiles {
    stat: ProcFile,
    /// None where the kernel does not give one (then `stat` every sample).
    clock: Option<CpuClock>,
    status: Option<ProcFile>,
    /// None when not readable (another user's process, no permission).
    io: Option<ProcFile>,
}

impl ProcFiles {
    fn open(pid: u32) -> Option<ProcFiles> {
        Some(ProcFiles {
            stat: ProcFile::open(&format!("/proc/{pid}/stat"))?,
            clock: CpuClock::of(pid),
            status: ProcFile::open(&format!("/proc/{pid}/status")),
            io: ProcFile::open(&format!("/proc/{pid}/io")),
        })
    }

    /// The `stat` counters now; None when the process is gone.
    fn read(&self, buf: &mut Vec<u8>) -> Option<ProcCounters> {
        let (_ppid, utime, stime, threads, rss) = parse_stat(self.stat.read(buf)?)?;
        Some(ProcCounters {
            utime_ticks: utime,
            stime_ticks: stime,
            threads,
            rss_pages: rss,
        })
    }

    /// The `status` and, when `io`, `io` counters now (zero switches and
    /// unknown I/O where a file cannot be read).
    fn read_slow(&self, buf: &mut Vec<u8>, io: bool) -> SlowCounters {
        let (vol, invol) = (self.status.as_ref())
            .and_then(|f| f.read(buf))
            .map(parse_status_ctx)
            .unwrap_or((0, 0));
        let (read_bytes, write_bytes) = (self.io.as_ref())
            .filter(|_| io)
            .and_then(|f| f.read(buf))
            .map(parse_io)
            .unwrap_or((None, None));
        SlowCounters {
            read_bytes,
            write_bytes,
            vol_ctx: vol,
            invol_ctx: invol,
        }
    }
}

/// Scans the process tree rooted at a PID (the root and all its
/// descendants) through /proc/PID/task/TID/children, falling back to every
/// /proc/PID/stat's parent link when the kernel lacks those files. Kept
/// between scans (the recorder's refresh), it holds each thread's
/// `children` file open: a `pread` instead of open, statx, two reads and
/// close per thread (a torch process has ~20 threads; the scan was ~21 us
/// a tick on the H200, BENCHMARKS.md).
#[derive(Default)]
pub(crate) struct TreeScanner {
    /// `/proc/PID/task/TID/children` by (PID, TID), open between scans.
    children: HashMap<(u32, u32), ProcFile>,
    /// Whether the kernel has `children` files (asked once).
    children_supported: Option<bool>,
    buf: Vec<u8>,
    /// `/proc/loadavg`, kept open, and the last PID the kernel gave out
    /// (its last field) at the last scan, with that scan's root.
    loadavg: Option<ProcFile>,
    scanned_at_pid: Option<(u32, u32)>,
}

/// The last PID (or thread ID) the kernel gave out in gate's PID
/// namespace: the last field of `/proc/loadavg`.
fn last_pid(loadavg: &ProcFile, buf: &mut Vec<u8>) -> Option<u32> {
    loadavg
        .read(buf)?
        .split_ascii_whitespace()
        .last()?
        .parse()
        .ok()
}

impl TreeScanner {
    /// The tree rooted at `root` now (empty when `root` is gone).
    pub fn scan(&mut self, root: u32) -> HashSet<u32> {
        self.scan_roots(&[root])
    }

    /// The tree rooted at `root` now, or None when no process or thread
    /// was created anywhere since the last scan of `root` (the kernel's
    /// last PID, one read, is the same): the tree can then only have
    /// lost processes, which fail their next read. A scan reads every
    /// thread's `children` file (about 200 us a second beside a torch
    /// main with 8 workers on the H200; BENCHMARKS.md, "attached").
    pub(crate) fn scan_if_created(&mut self, root: u32) -> Option<HashSet<u32>> {
        if self.loadavg.is_none() {
            self.loadavg = ProcFile::open("/proc/loadavg");
        }
        let now = (self.loadavg.as_ref()).and_then(|f| last_pid(f, &mut self.buf));
        if now.is_some() && self.scanned_at_pid == now.map(|p| (p, root)) {
            return None;
        }
        let tree = self.scan(root);
        self.scanned_at_pid = now.map(|p| (p, root));
        Some(tree)
    }

    /// The live `roots` and all their descendants now.
    pub(crate) fn scan_roots(&mut self, roots: &[u32]) -> HashSet<u32> {
        let live = |r: &&u32| std::path::Path::new(&format!("/proc/{r}")).exists();
        let mut tree: HashSet<u32> = roots.iter().filter(live).copied().collect();
        let Some(&first) = tree.iter().next() else {
            return tree;
        };
        let supported = *self.children_supported.get_or_insert_with(|| {
            std::path::Path::new(&format!("/proc/{first}/task/{first}/children")).exists()
        });
        if !supported {
            return tree_from_parent_links(tree);
        }
        let mut listed: HashSet<(u32, u32)> = HashSet::new();
        let mut stack: Vec<u32> = tree.iter().copied().collect();
        while let Some(pid) = stack.pop() {
            let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for task in tasks.flatten() {
                let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
                    continue;
                };
                let key = (pid, tid);
                listed.insert(key);
                let held = self.children.get(&key).and_then(|f| f.read(&mut self.buf));
                let text = match held {
                    Some(text) => Some(text),
                    None => {
                        // New thread, or its handle went stale: open it again.
                        self.children.remove(&key);
                        match ProcFile::open(&format!("/proc/{pid}/task/{tid}/children")) {
                            Some(file) => {
                                let text = file.read(&mut self.buf);
                                self.children.insert(key, file);
                                text
                            }
                            None => None,
                        }
                    }
                };
                for child in text
                    .unwrap_or("")
                    .split_ascii_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok())
                {
                    if tree.insert(child) {
                        stack.push(child);
                    }
                }
            }
        }
        // Threads that ended (or left the tree) close their files.
        self.children.retain(|key, _| listed.contains(key));
        tree
    }
}

/// The tree grown from `tree` (its root) by every process's parent link in
/// /proc/PID/stat: for kernels without `children` files.
fn tree_from_parent_links(mut tree: HashSet<u32>) -> HashSet<u32> {
    let mut parent_of: HashMap<u32, u32> = HashMap::new();
    if let Ok(dir) = fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some((ppid, ..)) = fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .as_deref()
                .and_then(parse_stat)
            {
                parent_of.insert(pid, ppid);
            }
        }
    }
    loop {
        let before = tree.len();
        for (pid, ppid) in &parent_of {
            if tree.contains(ppid) {
                tree.insert(*pid);
            }
        }
        if tree.len() == before {
            return tree;
        }
    }
}

/// `comm` and the command line of a process (NUL separators -> spaces).
pub(crate) fn process_name(pid: u32) -> (String, String) {
    let comm = fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default();
    let cmdline = fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .split('\0')
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    (comm, cmdline)
}

/// Samples host counters for a process tree.
pub(crate) struct HostSampler {
    ticks_per_s: f64,
    page_mib: f64,
    /// Each process's `stat` counters at the last per-process read.
    last: HashMap<u32, ProcCounters>,
    /// The map `last` held before, kept for the next read to fill.
    spare: HashMap<u32, ProcCounters>,
    last_at: Option<Instant>,
    /// When `last` was read.
    last_proc_at: Option<Instant>,
    /// What the last per-process read said.
    procs: ProcHeld,
    /// The tree's CPU seconds since the last once-a-second read (what
    /// OUTSIDE leaves out), and gate's own CPU seconds at that read.
    tree_cpu_s: f64,
    own_cpu_at_slow: Option<f64>,
    /// The last once-a-second read: per process, the machine, and when.
    last_slow: HashMap<u32, SlowCounters>,
    spare_slow: HashMap<u32, SlowCounters>,
    last_machine: Option<(u64, u64, u64)>,
    last_slow_at: Option<Instant>,
    /// The rates of the last once-a-second read, carried by every sample
    /// until the next.
    held: SlowRates,
    /// Latest per-process CPU % (for the processes table).
    pub(crate) last_cpu_pct: HashMap<u32, f64>,
    /// Open `/proc` files of the tree's processes, kept between samples.
    open: HashMap<u32, ProcFiles>,
    /// `/proc/stat`, kept open.
    machine_stat: Option<ProcFile>,
    /// Read buffer reused by every `/proc` read.
    buf: Vec<u8>,
    /// The launched target's cgroup: the tree's CPU at every sample, I/O
    /// once a second where it has the io controller.
    cgroup: Option<Arc<TreeCgroup>>,
    /// `cgroup.procs` as last read (the tree changes when it does).
    cgroup_procs: Vec<u8>,
    last_cgroup_cpu: Option<CpuUsec>,
    last_cgroup_io: Option<(u64, u64)>,
    /// The per-process path's CPU at every sample: each process's CPU
    /// clock (ns) at the last sample. The `stat` reads (RSS, threads, the
    /// user/system split) then happen once a second, as on the cgroup
    /// path. False where a process of the tree has no clock.
    clocks: bool,
    last_clock: HashMap<u32, u64>,
    spare_clock: HashMap<u32, u64>,
    /// The tree's user share of its CPU over the last once-a-second read
    /// (since each process started, at the first): splits each sample's
    /// clock CPU into user and system.
    user_share: Option<f64>,
}

impl Default for HostSampler {
    fn default() -> Self {
        Self::new()
    }
}

impl HostSampler {
    pub fn new() -> HostSampler {
        // SAFETY: sysconf only reads configuration values.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        HostSampler {
            ticks_per_s: if ticks > 0 { ticks as f64 } else { 100.0 },
            page_mib: if page > 0 {
                page as f64 / 1048576.0
            } else {
                4096.0 / 1048576.0
            },
            last: HashMap::new(),
            spare: HashMap::new(),
            last_at: None,
            last_proc_at: None,
            procs: ProcHeld::default(),
            tree_cpu_s: 0.0,
            own_cpu_at_slow: None,
            last_slow: HashMap::new(),
            spare_slow: HashMap::new(),
            last_machine: None,
            last_slow_at: None,
            held: SlowRates::default(),
            last_cpu_pct: HashMap::new(),
            open: HashMap::new(),
            machine_stat: ProcFile::open("/proc/stat"),
            buf: Vec::new(),
            cgroup: None,
            cgroup_procs: Vec::new(),
            last_cgroup_cpu: None,
            last_cgroup_io: None,
            clocks: true,
            last_clock: HashMap::new(),
            spare_clock: HashMap::new(),
            user_share: None,
        }
    }

    /// A sampler that reads the tree's CPU from `cgroup` (the per-process
    /// path without one).
    pub(crate) fn with_cgroup(cgroup: Option<Arc<TreeCgroup>>) -> HostSampler {
        HostSampler {
            cgroup,
            ..HostSampler::new()
        }
    }

    /// Whether the tree's CPU comes from a cgroup.
    pub(crate) fn has_cgroup(&self) -> bool {
        self.cgroup.is_some()
    }

    /// The processes in the target's cgroup, when they changed since the
    /// last call: the tree, from one read, cheap enough for every tick
    /// (None when unchanged, and on the per-process path).
    pub(crate) fn cgroup_members(&mut self) -> Option<HashSet<u32>> {
        (self.cgroup.as_ref()?).members_if_changed(&mut self.buf, &mut self.cgroup_procs)
    }

    /// Between the once-a-second reads of the cgroup path: the first
    /// `stat` of processes new to the tree, so that the next read has
    /// their CPU since now (else their first second would be lost).
    fn read_new_processes(&mut self, tree: &HashSet<u32>) {
        for &pid in tree {
            if self.last.contains_key(&pid) {
                continue;
            }
            if let Some(files) = ProcFiles::open(pid) {
                if let Some(c) = files.read(&mut self.buf) {
                    self.last.insert(pid, c);
                    self.open.insert(pid, files);
                }
            }
        }
    }

    /// Resident memory of one process (for the processes table): one read
    /// of /proc/PID/stat, not the three files a full sample needs.
    pub(crate) fn rss_mib(&self, pid: u32) -> Option<f64> {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (_ppid, _utime, _stime, _threads, rss_pages) = parse_stat(&stat)?;
        Some(rss_pages as f64 * self.page_mib)
    }

    /// One host sample vector in `HOST_METRICS` order. `main` is the
    /// tree's main processes ([`main_processes`]); the rest of `tree` are
    /// its workers. Rates are None on the first call (no previous sample
    /// to difference against), and the once-a-second ones until their
    /// second read.
    pub fn sample(
        &mut self,
        tree: &HashSet<u32>,
        main: &HashSet<u32>,
        now: Instant,
    ) -> Vec<Option<f64>> {
        let dt_s = self
            .last_at
            .map(|t| now.duration_since(t).as_secs_f64())
            .filter(|d| *d > 0.0);
        let slow = self.slow_due(now);
        // Which path: the cgroup's `cpu.stat`, each process's CPU clock,
        // or (no clock) each process's `stat` at every sample.
        let clocks = self.cgroup.is_none() && self.clocks;
        let (user, sys) = if (self.cgroup.is_none() && !clocks) || slow {
            self.read_processes(tree, main, now)
        } else {
            if self.cgroup.is_some() {
                self.read_new_processes(tree);
            }
            (0, 0)
        };
        let clock_cpu = clocks.then(|| self.read_clocks(tree, main, dt_s));
        // The tree's CPU seconds since the previous sample: (all, user,
        // system; the clocks' split by the last second's user share).
        let tree_cpu = match &self.cgroup {
            Some(cg) => {
                let read = cg.cpu(&mut self.buf);
                let prev = std::mem::replace(&mut self.last_cgroup_cpu, read);
                let s = |a: u64, b: u64| a.saturating_sub(b) as f64 / 1e6;
                read.zip(prev).map(|(c, p)| {
                    (
                        s(c.usage, p.usage),
                        Some(s(c.user, p.user)),
                        Some(s(c.system, p.system)),
                    )
                })
            }
            None if clocks => clock_cpu.flatten().map(|all| {
                let share = self.user_share;
                (all, share.map(|u| all * u), share.map(|u| all * (1.0 - u)))
            }),
            None => (dt_s.is_some() && self.procs.processes.is_some()).then(|| {
                let s = |ticks: u64| ticks as f64 / self.ticks_per_s;
                (s(user + sys), Some(s(user)), Some(s(sys)))
            }),
        };
        if let Some((all, _, _)) = tree_cpu {
            self.tree_cpu_s += all;
        }
        if slow {
            self.read_slow(main, now);
        }
        type Split = (f64, Option<f64>, Option<f64>);
        let cpu = |part: fn(Split) -> Option<f64>| {
            dt_s.zip(tree_cpu.and_then(part))
                .map(|(dt, c)| c / dt * 100.0)
        };
        let p = self.procs;
        let seen = p.processes.is_some();
        let held = self.held;
        let values = HOST_METRICS
            .iter()
            .map(|d| match d.id {
                "target_cpu_pct" => cpu(|c| Some(c.0)),
                "target_cpu_user_pct" => cpu(|c| c.1),
                "target_cpu_sys_pct" => cpu(|c| c.2),
                "target_rss_mib" => seen.then_some(p.rss_mib),
                "target_threads" => seen.then_some(p.threads as f64),
                "target_processes" => p.processes.map(|n| n as f64),
                "target_read_mib_s" => held.read_mib_s,
                "target_write_mib_s" => held.write_mib_s,
                "target_ctx_switches_per_s" => held.ctx_per_s,
                "target_vol_ctx_switches_per_s" => held.vol_ctx_per_s,
                "host_cpu_busy_pct" => held.host_busy_pct,
                "host_iowait_pct" => held.host_iowait_pct,
                "main_cpu_pct" => p.main_cpu_pct,
                "main_vol_ctx_switches_per_s" => held.main_vol_ctx_per_s,
                "workers" => seen.then_some(p.workers as f64),
                "workers_cpu_pct" => p.workers_cpu_pct,
                "workers_busy_pct" => p
                    .workers_cpu_pct
                    .filter(|_| p.workers > 0)
                    .map(|c| c / p.workers as f64),
                "workers_ctx_switches_per_s" => held.workers_ctx_per_s,
                "outside_cpu_pct" => held.outside_cpu_pct,
                _ => None,
            })
            .collect();
        self.last_at = Some(now);
        values
    }

    /// Reads every tree process's `stat` and holds what they say (RSS,
    /// threads, CPU per role over the time since the previous read).
    /// Returns the tree's user and system ticks over that time.
    fn read_processes(
        &mut self,
        tree: &HashSet<u32>,
        main: &HashSet<u32>,
        now: Instant,
    ) -> (u64, u64) {
        let dt_s = self
            .last_proc_at
            .map(|t| now.duration_since(t).as_secs_f64())
            .filter(|d| *d > 0.0);
        // Processes that left the tree (or exited) close their files.
        self.open.retain(|pid, _| tree.contains(pid));
        // The map of two reads ago, emptied: no allocation per read.
        let mut current = std::mem::take(&mut self.spare);
        current.clear();
        for &pid in tree {
            let mut counters = self.open.get(&pid).and_then(|f| f.read(&mut self.buf));
            if counters.is_none() {
                // New to the tree, or a reused PID: (re)open its files.
                self.open.remove(&pid);
                if let Some(files) = ProcFiles::open(pid) {
                    counters = files.read(&mut self.buf);
                    if counters.is_some() {
                        self.open.insert(pid, files);
                    }
                }
            }
            if let Some(c) = counters {
                current.insert(pid, c);
            }
        }
        let (mut user, mut sys, mut main_ticks, mut worker_ticks) = (0u64, 0u64, 0u64, 0u64);
        self.last_cpu_pct.clear();
        for (pid, c) in &current {
            if let Some(p) = self.last.get(pid) {
                let du = c.utime_ticks.saturating_sub(p.utime_ticks);
                let ds = c.stime_ticks.saturating_sub(p.stime_ticks);
                user += du;
                sys += ds;
                if main.contains(pid) {
                    main_ticks += du + ds;
                } else {
                    worker_ticks += du + ds;
                }
                if let Some(dt) = dt_s {
                    self.last_cpu_pct
                        .insert(*pid, (du + ds) as f64 / self.ticks_per_s / dt * 100.0);
                }
            }
        }
        let seen = !current.is_empty();
        // The user share: over the time since the last read; at the first
        // read (or after a second without a tick), since the processes
        // started.
        let share = |u: u64, s: u64| (u + s > 0).then(|| u as f64 / (u + s) as f64);
        let (all_u, all_s) =
            (current.values()).fold((0, 0), |(u, s), c| (u + c.utime_ticks, s + c.stime_ticks));
        self.user_share = (dt_s.and_then(|_| share(user, sys)))
            .or(self.user_share)
            .or_else(|| share(all_u, all_s));
        let pct = |ticks: u64| {
            dt_s.filter(|_| seen)
                .map(|dt| ticks as f64 / self.ticks_per_s / dt * 100.0)
        };
        self.procs = ProcHeld {
            processes: seen.then_some(current.len() as u64),
            rss_mib: current
                .values()
                .map(|c| c.rss_pages as f64 * self.page_mib)
                .sum(),
            threads: current.values().map(|c| c.threads).sum(),
            workers: current.keys().filter(|p| !main.contains(p)).count() as u64,
            main_cpu_pct: pct(main_ticks),
            workers_cpu_pct: pct(worker_ticks),
        };
        self.spare = std::mem::replace(&mut self.last, current);
        self.last_proc_at = Some(now);
        (user, sys)
    }

    /// Every tree process's CPU clock: the tree's CPU seconds since the
    /// previous sample (None on the first, or when a process has no
    /// clock: then `stat` is read every sample from now on), with the
    /// main processes' and the workers' % of a core over it held in
    /// `procs` and each process's in `last_cpu_pct`.
    fn read_clocks(
        &mut self,
        tree: &HashSet<u32>,
        main: &HashSet<u32>,
        dt_s: Option<f64>,
    ) -> Option<f64> {
        self.open.retain(|pid, _| tree.contains(pid));
        let mut current = std::mem::take(&mut self.spare_clock);
        current.clear();
        for &pid in tree {
            let mut ns = (self.open.get(&pid))
                .and_then(|f| f.clock.as_ref())
                .and_then(|c| c.read_ns());
            if ns.is_none() {
                // New to the tree (its first `stat` waits for the next
                // once-a-second read), or gone.
                let Some(files) = ProcFiles::open(pid) else {
                    continue;
                };
                if files.clock.is_none() {
                    self.clocks = false;
                }
                ns = files.clock.as_ref().and_then(|c| c.read_ns());
                self.open.insert(pid, files);
            }
            if let Some(ns) = ns {
                current.insert(pid, ns);
            }
        }
        let (mut main_ns, mut worker_ns) = (0u64, 0u64);
        self.last_cpu_pct.clear();
        for (pid, ns) in &current {
            // A clock that went back is a reused PID: counted from now.
            let Some(d) = (self.last_clock.get(pid)).and_then(|p| ns.checked_sub(*p)) else {
                continue;
            };
            if main.contains(pid) {
                main_ns += d;
            } else {
                worker_ns += d;
            }
            if let Some(dt) = dt_s {
                self.last_cpu_pct.insert(*pid, d as f64 / 1e9 / dt * 100.0);
            }
        }
        let seen = !current.is_empty() && !self.last_clock.is_empty();
        self.spare_clock = std::mem::replace(&mut self.last_clock, current);
        let dt = dt_s.filter(|_| seen && self.clocks)?;
        let pct = |ns: u64| Some(ns as f64 / 1e9 / dt * 100.0);
        self.procs.main_cpu_pct = pct(main_ns);
        self.procs.workers_cpu_pct = pct(worker_ns);
        Some((main_ns + worker_ns) as f64 / 1e9)
    }

    /// Whether a sample at `now` also reads the once-a-second counters.
    pub(crate) fn slow_due(&self, now: Instant) -> bool {
        self.last_slow_at
            .is_none_or(|t| now.duration_since(t) >= SLOW_PERIOD)
    }

    /// The once-a-second read: `status` and `io` of the processes whose
    /// `stat` was just read, and `/proc/stat`; their rates over the time
    /// since the previous such read become the held ones.
    fn read_slow(&mut self, main: &HashSet<u32>, now: Instant) {
        let mut slow = std::mem::take(&mut self.spare_slow);
        slow.clear();
        // The tree's storage bytes from the cgroup where it has them (the
        // processes that exited count too): no per-process `io` reads.
        let cgroup_io = (self.cgroup.as_ref())
            .filter(|c| c.has_io())
            .and_then(|c| c.io_bytes(&mut self.buf));
        for pid in self.last.keys() {
            if let Some(files) = self.open.get(pid) {
                slow.insert(*pid, files.read_slow(&mut self.buf, cgroup_io.is_none()));
            }
        }
        let wall_s = self
            .last_slow_at
            .map(|t| now.duration_since(t).as_secs_f64())
            .filter(|d| *d > 0.0);
        let dt_s = wall_s.filter(|_| !slow.is_empty());
        let (mut read, mut write, mut ctx, mut vol) = (0u64, 0u64, 0u64, 0u64);
        let (mut main_vol, mut workers_ctx) = (0u64, 0u64);
        let mut io_known = false;
        for (pid, c) in &slow {
            if let Some(p) = self.last_slow.get(pid) {
                if let (Some(r1), Some(r0), Some(w1), Some(w0)) =
                    (c.read_bytes, p.read_bytes, c.write_bytes, p.write_bytes)
                {
                    read += r1.saturating_sub(r0);
                    write += w1.saturating_sub(w0);
                    io_known = true;
                }
                let dv = c.vol_ctx.saturating_sub(p.vol_ctx);
                let all = dv + c.invol_ctx.saturating_sub(p.invol_ctx);
                vol += dv;
                ctx += all;
                if main.contains(pid) {
                    main_vol += dv;
                } else {
                    workers_ctx += all;
                }
            }
        }
        let rate = |x: u64, scale: f64| dt_s.map(|dt| x as f64 / scale / dt);
        let machine = (self.machine_stat.as_ref())
            .and_then(|f| f.read(&mut self.buf))
            .and_then(parse_proc_stat_cpu);
        let own = super::process_cpu_s();
        let (mut host_busy_pct, mut host_iowait_pct, mut outside_cpu_pct) = (None, None, None);
        if let (Some((b1, w1, t1)), Some((b0, w0, t0))) = (machine, self.last_machine) {
            if t1 > t0 {
                let dt = (t1 - t0) as f64;
                host_busy_pct = Some(b1.saturating_sub(b0) as f64 / dt * 100.0);
                host_iowait_pct = Some(w1.saturating_sub(w0) as f64 / dt * 100.0);
            }
            // % of one core: busy ticks over the wall time, less what the
            // tree and gate used in it (never below 0: /proc counts in
            // 10 ms ticks).
            if let (Some(wall), Some(own0)) = (wall_s, self.own_cpu_at_slow) {
                let busy_s = b1.saturating_sub(b0) as f64 / self.ticks_per_s;
                let outside = busy_s - self.tree_cpu_s - (own - own0).max(0.0);
                outside_cpu_pct = Some((outside / wall * 100.0).max(0.0));
            }
        }
        let (read_mib_s, write_mib_s) = match (cgroup_io, self.last_cgroup_io) {
            (Some((r1, w1)), Some((r0, w0))) => {
                let mib_s =
                    |a: u64, b: u64| wall_s.map(|dt| a.saturating_sub(b) as f64 / 1048576.0 / dt);
                (mib_s(r1, r0), mib_s(w1, w0))
            }
            (Some(_), None) => (None, None),
            (None, _) => (
                rate(read, 1048576.0).filter(|_| io_known),
                rate(write, 1048576.0).filter(|_| io_known),
            ),
        };
        self.last_cgroup_io = cgroup_io;
        self.held = SlowRates {
            read_mib_s,
            write_mib_s,
            ctx_per_s: rate(ctx, 1.0),
            vol_ctx_per_s: rate(vol, 1.0),
            host_busy_pct,
            host_iowait_pct,
            main_vol_ctx_per_s: rate(main_vol, 1.0),
            workers_ctx_per_s: rate(workers_ctx, 1.0),
            outside_cpu_pct,
        };
        self.spare_slow = std::mem::replace(&mut self.last_slow, slow);
        self.last_machine = machine.or(self.last_machine);
        self.own_cpu_at_slow = Some(own);
        self.tree_cpu_s = 0.0;
        self.last_slow_at = Some(now);
    }
}

/// The host half of the environment fingerprint.
pub(crate) fn host_info() -> crate::trace::HostInfo {
    let read = |p: &str| {
        fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let cpu_model = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    let os = fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_default();
    crate::trace::HostInfo {
        hostname: read("/proc/sys/kernel/hostname"),
        cpu_model,
        cpu_count: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        kernel: read("/proc/sys/kernel/osrelease"),
        os,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_spaces_and_parens_in_comm() {
        let line = "1234 (my (weird) proc) S 1 1234 1234 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 7 0 12345 1000000 2560 18446744073709551615";
        let (ppid, utime, stime, threads, rss) = parse_stat(line).unwrap();
        assert_eq!((ppid, utime, stime, threads, rss), (1, 250, 50, 7, 2560));
    }

    #[test]
    fn status_and_io_fields() {
        let status =
            "Name:\tpython\nvoluntary_ctxt_switches:\t150\nnonvoluntary_ctxt_switches:\t7\n";
        assert_eq!(parse_status_ctx(status), (150, 7));
        // Either key alone, first line or last, without a newline at the end.
        assert_eq!(parse_status_ctx("nonvoluntary_ctxt_switches:\t9"), (0, 9));
        assert_eq!(
            parse_status_ctx("voluntary_ctxt_switches: 4\nName: x\n"),
            (4, 0)
        );
        assert_eq!(parse_status_ctx("Name: x\n"), (0, 0));
        let io =
            "rchar: 10\nwchar: 20\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io(io), (Some(4096), Some(8192)));
    }

    #[test]
    fn machine_cpu_counts_iowait_separately_and_ignores_guest() {
        let stat = "cpu  100 10 50 800 40 0 0 0 30 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        let (busy, iowait, total) = parse_proc_stat_cpu(stat).unwrap();
        assert_eq!((busy, iowait, total), (160, 40, 1000));
    }

    #[test]
    fn own_process_tree_includes_a_child() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let tree = TreeScanner::default().scan(std::process::id());
        let _ = child.kill();
        let _ = child.wait();
        assert!(tree.contains(&std::process::id()));
        assert!(
            tree.contains(&child.id()),
            "child {} not in {:?}",
            child.id(),
            tree
        );
    }

    #[test]
    fn a_scanner_kept_between_scans_sees_children_come_and_go() {
        let me = std::process::id();
        let mut scanner = TreeScanner::default();
        assert!(scanner.scan(me).contains(&me));
        // A child started after the first scan (its parent's files are held).
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let with_child = scanner.scan(me);
        let _ = child.kill();
        let _ = child.wait();
        let without = scanner.scan(me);
        assert!(with_child.contains(&child.id()), "{with_child:?}");
        assert!(!without.contains(&child.id()), "{without:?}");
        assert!(without.contains(&me));
        // A PID that does not exist has no tree.
        assert!(scanner.scan(u32::MAX - 1).is_empty());
    }

    #[test]
    fn a_new_child_is_always_scanned_and_a_quiet_machine_is_not() {
        let me = std::process::id();
        let mut scanner = TreeScanner::default();
        assert!(scanner.scan_if_created(me).unwrap().contains(&me));
        // A new process moves the kernel's last PID: always a scan.
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let with_child = scanner.scan_if_created(me);
        let _ = child.kill();
        let _ = child.wait();
        assert!(with_child.unwrap().contains(&child.id()));
        // With nothing created in between (other tests start threads, so
        // a few tries), no scan; a new root is always scanned.
        let quiet = (0..200).any(|_| {
            let _ = scanner.scan_if_created(me);
            scanner.scan_if_created(me).is_none()
        });
        assert!(quiet, "every scan found a new PID");
        assert!(scanner.scan_if_created(u32::MAX - 1).unwrap().is_empty());
    }

    #[test]
    fn the_clock_path_splits_cpu_by_the_user_share_and_counts_roles_each_sample() {
        // A child that spins: its CPU comes from its clock at every sample.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let me = std::process::id();
        let tree: HashSet<u32> = [me, child.id()].into_iter().collect();
        let main: HashSet<u32> = [me].into_iter().collect();
        let mut s = HostSampler::new();
        let idx = |id: &str| HOST_METRICS.iter().position(|d| d.id == id).unwrap();
        let t0 = Instant::now();
        let mut last = Vec::new();
        for i in 0..4 {
            std::thread::sleep(Duration::from_millis(100));
            last = s.sample(&tree, &main, t0 + Duration::from_millis(100 * i));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(s.clocks, "this kernel gives every process a CPU clock");
        let v = |id: &str| last[idx(id)].unwrap_or_else(|| panic!("{id} missing"));
        // Roughly a core for the spinning worker (a loaded machine gives less).
        assert!(v("workers_cpu_pct") > 20.0, "{}", v("workers_cpu_pct"));
        assert!(
            (v("target_cpu_user_pct") + v("target_cpu_sys_pct") - v("target_cpu_pct")).abs() < 1e-6
        );
        assert!(v("target_cpu_pct") >= v("workers_cpu_pct"));
        assert_eq!(v("target_processes"), 2.0);
    }

    #[test]
    fn switches_io_and_machine_cpu_are_read_once_a_second_and_held() {
        let mut s = HostSampler::new();
        let tree: HashSet<u32> = [std::process::id()].into_iter().collect();
        let idx = |id: &str| HOST_METRICS.iter().position(|d| d.id == id).unwrap();
        let t0 = Instant::now();
        let t0_plus = |ms: u64| t0 + Duration::from_millis(ms);
        let slow = ["target_ctx_switches_per_s", "target_vol_ctx_switches_per_s"];
        let first = s.sample(&tree, &tree, t0_plus(0));
        let tick = s.sample(&tree, &tree, t0_plus(100));
        for id in slow {
            assert!(first[idx(id)].is_none() && tick[idx(id)].is_none(), "{id}");
        }
        // The fast counter has its rate from the second sample on.
        assert!(tick[idx("target_cpu_pct")].is_some());
        // A second read after SLOW_PERIOD (the tick that fires 5 % early
        // counts): a rate, then held unchanged by the ticks before the next.
        let read = s.sample(&tree, &tree, t0_plus(950));
        let held = s.sample(&tree, &tree, t0_plus(1050));
        for id in slow
            .into_iter()
            .chain(["host_cpu_busy_pct", "host_iowait_pct"])
        {
            assert_eq!(read[idx(id)], held[idx(id)], "{id} held between reads");
        }
        for id in slow {
            assert!(read[idx(id)].is_some(), "{id} after two reads");
        }
    }

    /// A child that spins for `secs` seconds: the interpreter itself, not
    /// a launcher such as pyenv's shim (whose start-up, on a loaded
    /// machine, can outlast a one-second measurement), and spinning
    /// already when this returns.
    fn busy_child(secs: f64) -> std::process::Child {
        let python = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 runs");
        let python = String::from_utf8(python.stdout).unwrap();
        let mut child = std::process::Command::new(python.trim())
            .args([
                "-c",
                &format!("import time\nprint(1, flush=True)\nt=time.time()\nwhile time.time()-t<{secs}: pass"),
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = [0u8; 2];
        use std::io::Read;
        child
            .stdout
            .as_mut()
            .unwrap()
            .read_exact(&mut line)
            .unwrap();
        child
    }

    /// utime+stime of one process, in seconds.
    fn cpu_s_of(pid: u32) -> f64 {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let (_, u, s, _, _) = parse_stat(&stat).unwrap();
        // SAFETY: sysconf only reads configuration values.
        (u + s) as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
    }

    #[test]
    fn main_is_the_trees_gpu_processes_or_else_its_root() {
        let tree: HashSet<u32> = [10, 11, 12].into_iter().collect();
        // NVML lists 11 and a process outside the tree (99).
        assert_eq!(main_processes(&tree, [11, 99], 10), [11].into());
        // None of the tree on a GPU (no context yet, --no-gpu): the root.
        assert_eq!(main_processes(&tree, [99], 10), [10].into());
        assert_eq!(main_processes(&tree, [], 10), [10].into());
    }

    #[test]
    fn a_busy_child_and_an_idle_one_show_their_cpu_under_their_roles() {
        let mut busy = busy_child(30.0);
        let mut idle = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let tree: HashSet<u32> = [busy.id(), idle.id()].into_iter().collect();
        let idx = |id: &str| HOST_METRICS.iter().position(|d| d.id == id).unwrap();
        let measure = |main: u32| {
            let main: HashSet<u32> = [main].into_iter().collect();
            let mut s = HostSampler::new();
            s.sample(&tree, &main, Instant::now());
            std::thread::sleep(Duration::from_millis(1000));
            s.sample(&tree, &main, Instant::now())
        };
        // The busy one is main (it would hold the GPU context).
        let v = measure(busy.id());
        let (main_cpu, workers_cpu) = (v[idx("main_cpu_pct")], v[idx("workers_cpu_pct")]);
        // The idle one holds the role: the busy one is its worker.
        let w = measure(idle.id());
        let _ = (busy.kill(), idle.kill());
        let _ = (busy.wait(), idle.wait());
        // A spinning process gets what a loaded 2-core machine leaves it,
        // at least a tenth of a core; `sleep` uses no CPU tick at all.
        let main_cpu = main_cpu.unwrap();
        assert!(main_cpu > 10.0, "busy main {main_cpu}");
        assert!(workers_cpu.unwrap() < 2.0, "idle worker {workers_cpu:?}");
        assert_eq!(v[idx("workers")], Some(1.0));
        let worker_cpu = w[idx("workers_cpu_pct")].unwrap();
        assert!(worker_cpu > 10.0, "busy worker {worker_cpu}");
        assert!(w[idx("main_cpu_pct")].unwrap() < 2.0, "{w:?}");
        // One worker: its mean share is the workers' CPU.
        assert_eq!(w[idx("workers_busy_pct")], Some(worker_cpu));
        // The tree's total is the two roles' sum.
        let total = w[idx("target_cpu_pct")].unwrap();
        assert!((total - worker_cpu).abs() < 1.0, "{total} vs {worker_cpu}");
    }

    #[test]
    fn workers_busy_is_missing_without_workers() {
        let me = std::process::id();
        let tree: HashSet<u32> = [me].into_iter().collect();
        let mut s = HostSampler::new();
        let idx = |id: &str| HOST_METRICS.iter().position(|d| d.id == id).unwrap();
        s.sample(&tree, &tree, Instant::now());
        std::thread::sleep(Duration::from_millis(50));
        let v = s.sample(&tree, &tree, Instant::now());
        assert_eq!(v[idx("workers")], Some(0.0));
        assert_eq!(v[idx("workers_cpu_pct")], Some(0.0));
        assert_eq!(v[idx("workers_busy_pct")], None);
        assert!(v[idx("main_cpu_pct")].is_some());
    }

    #[test]
    fn a_busy_process_outside_the_tree_counts_as_outside() {
        let mut busy = busy_child(30.0);
        // The tree is an idle process; the busy child is outside it. (Not
        // this test's own process: that is "gate", left out as well.)
        let mut idle = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let tree: HashSet<u32> = [idle.id()].into_iter().collect();
        let idx = |id: &str| HOST_METRICS.iter().position(|d| d.id == id).unwrap();
        let mut s = HostSampler::new();
        s.sample(&tree, &tree, Instant::now());
        let c0 = cpu_s_of(busy.id());
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(1500));
        let v = s.sample(&tree, &tree, Instant::now());
        let child_pct = (cpu_s_of(busy.id()) - c0) / t0.elapsed().as_secs_f64() * 100.0;
        let _ = (busy.kill(), idle.kill());
        let _ = (busy.wait(), idle.wait());
        let outside = v[idx("outside_cpu_pct")].expect("two once-a-second reads");
        // At least the child's CPU (less 10 ms ticks of slack at either
        // end), whatever else the machine runs beside it.
        assert!(
            outside >= child_pct - 5.0,
            "outside {outside} % but the child alone used {child_pct:.1} %"
        );
        assert!(v[idx("main_vol_ctx_switches_per_s")].is_some());
        assert!(v[idx("workers_ctx_switches_per_s")].is_some());
    }

    #[test]
    fn sampling_own_process_gives_rss_and_later_rates() {
        let mut s = HostSampler::new();
        let tree: HashSet<u32> = [std::process::id()].into_iter().collect();
        let first = s.sample(&tree, &tree, Instant::now());
        let idx = |id: &str| HOST_METRICS.iter().position(|d| d.id == id).unwrap();
        assert!(
            first[idx("target_cpu_pct")].is_none(),
            "no rate without a previous sample"
        );
        assert!(first[idx("target_rss_mib")].unwrap() > 1.0);
        // Busy until this process has used 0.2 s more CPU, however long
        // that takes on a loaded machine; the rate must show it.
        let t0 = Instant::now();
        let cpu_s = || {
            // SAFETY: getrusage fills the struct it is given.
            let ru = unsafe {
                let mut ru: libc::rusage = std::mem::zeroed();
                libc::getrusage(libc::RUSAGE_SELF, &mut ru);
                ru
            };
            let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            tv(ru.ru_utime) + tv(ru.ru_stime)
        };
        let start = cpu_s();
        let mut x = 0u64;
        while cpu_s() - start < 0.2 {
            for _ in 0..10_000 {
                x = x.wrapping_mul(31).wrapping_add(7);
            }
        }
        std::hint::black_box(x);
        let second = s.sample(&tree, &tree, Instant::now());
        let expected = 0.2 / t0.elapsed().as_secs_f64() * 100.0;
        let cpu = second[idx("target_cpu_pct")].unwrap();
        // Half of it at least: /proc counts CPU time in 10 ms ticks, and
        // the test's other threads add to it.
        assert!(
            cpu > expected * 0.5,
            "busy loop should show CPU, got {cpu} % (expected about {expected:.0} %)"
        );
    }
}
