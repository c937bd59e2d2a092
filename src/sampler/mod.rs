//! Samplers: where counters come from. `source` (the `GpuSource` trait:
//! what the recorder asks of a GPU source), `nvml` (the GPU source of
//! today, NVML and GPM, the only NVML user), `host` (/proc), `cgroup` (a
//! cgroup v2 of gate's own for a launched target: the tree's CPU from one
//! file), `resident` (gate's own start-up pages dropped before it samples).
//! The deterministic twin of both is a recorded trace
//! (`--replay`), loaded by `trace::Trace::load`.

pub mod cgroup;
pub mod host;
pub mod nvml;
pub mod resident;
pub mod source;

/// A `/proc` file kept open between samples: read again from offset 0
/// (`pread`) it is one system call, where `fs::read_to_string` makes five
/// (open, statx, read, read, close). The handle belongs to the process it
/// was opened for: once that process is gone the read fails (`ESRCH`), even
/// if its PID has been reused, and the caller opens the new one.
pub struct ProcFile(std::fs::File);

impl ProcFile {
    pub fn open(path: &str) -> Option<ProcFile> {
        std::fs::File::open(path).ok().map(ProcFile)
    }

    /// The file's start as text in a fixed buffer (cut at its length):
    /// for short files read at every tick, without allocating.
    pub(crate) fn read_into<'b>(&self, buf: &'b mut [u8]) -> Option<&'b str> {
        use std::os::unix::fs::FileExt;
        let n = self.0.read_at(buf, 0).ok()?;
        std::str::from_utf8(&buf[..n]).ok()
    }

    /// The whole file as text in `buf` (grown until the file fits).
    pub fn read<'b>(&self, buf: &'b mut Vec<u8>) -> Option<&'b str> {
        use std::os::unix::fs::FileExt;
        if buf.len() < 4096 {
            buf.resize(4096, 0);
        }
        loop {
            let n = self.0.read_at(buf, 0).ok()?;
            if n < buf.len() {
                return std::str::from_utf8(&buf[..n]).ok();
            }
            // Filled the buffer: the file may be longer; read it again whole.
            let more = buf.len() * 2;
            buf.resize(more, 0);
        }
    }
}

/// CPU time of the calling thread in nanoseconds (for `GATE_PROFILE`).
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// User + system CPU seconds of this process so far (all its threads).
pub(crate) fn process_cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe {
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Where the sampler's own CPU time goes, by section; filled only when the
/// environment variable `GATE_PROFILE` is set (the overhead benchmark uses it).
#[derive(Debug, Default, Clone)]
pub struct CpuProfile {
    pub enabled: bool,
    pub sections: std::collections::BTreeMap<&'static str, (u64, u64)>,
}

impl CpuProfile {
    pub fn from_env() -> CpuProfile {
        CpuProfile {
            enabled: std::env::var_os("GATE_PROFILE").is_some(),
            sections: Default::default(),
        }
    }

    /// Start a section: returns the CPU clock now (0 when disabled).
    pub fn start(&self) -> u64 {
        if self.enabled {
            thread_cpu_ns()
        } else {
            0
        }
    }

    pub fn stop(&mut self, name: &'static str, started_ns: u64) {
        if self.enabled {
            let e = self.sections.entry(name).or_insert((0, 0));
            e.0 += thread_cpu_ns().saturating_sub(started_ns);
            e.1 += 1;
        }
    }

    /// What start-up cost, once the GPU source is about to open: the
    /// start-up pages dropped (`resident`) and the process's CPU so far.
    pub fn print_startup(&self, dropped_kib: u64) {
        if self.enabled {
            crate::gate_eprintln!("gate: GATE_PROFILE start-up pages dropped: {dropped_kib} kB");
            crate::gate_eprintln!(
                "gate: GATE_PROFILE process CPU before the GPU source opens: {:.1} ms",
                process_cpu_s() * 1e3
            );
        }
    }

    /// gate's own peak resident set (`VmHWM`: this program's pages since
    /// its exec, not those of the process that started it, which a
    /// parent's `wait4` counts in), printed last under `GATE_PROFILE`.
    pub fn print_peak_rss(&self) {
        if !self.enabled {
            return;
        }
        // The whole process's CPU, and each live thread's (its
        // `schedstat`, in nanoseconds): what the sections leave out.
        crate::gate_eprintln!(
            "gate: GATE_PROFILE process CPU: {:.1} ms",
            process_cpu_s() * 1e3
        );
        for task in std::fs::read_dir("/proc/self/task")
            .into_iter()
            .flatten()
            .flatten()
        {
            let read = |f: &str| std::fs::read_to_string(task.path().join(f)).unwrap_or_default();
            let ns: u64 = (read("schedstat").split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let name = crate::escape::terminal(read("comm").trim());
            crate::gate_eprintln!(
                "gate: GATE_PROFILE thread {} ({name}): {:.1} ms",
                task.file_name().to_string_lossy(),
                ns as f64 / 1e6
            );
        }
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        if let Some(hwm) = status.lines().find_map(|l| l.strip_prefix("VmHWM:")) {
            crate::gate_eprintln!("gate: GATE_PROFILE peak resident set: {}", hwm.trim());
        }
        // What the resident set is now: allocations, or file pages (the
        // binary's and the libraries' code, shared with the page cache).
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(str::trim)
        };
        if let (Some(anon), Some(file)) = (field("RssAnon:"), field("RssFile:")) {
            crate::gate_eprintln!("gate: GATE_PROFILE resident now: anonymous {anon}, file {file}");
        }
        // Which files: the mappings holding more than 1 MiB.
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
        let mut by_file: std::collections::BTreeMap<&str, u64> = Default::default();
        let mut name = "";
        for line in smaps.lines() {
            if let Some(kb) = line.strip_prefix("Rss:") {
                let kb: u64 = kb.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
                *by_file.entry(name).or_default() += kb;
            } else if line
                .split(' ')
                .next()
                .is_some_and(|r| r.contains('-') && !r.ends_with(':'))
            {
                name = line
                    .split_ascii_whitespace()
                    .nth(5)
                    .unwrap_or("[anonymous]");
            }
        }
        for (file, kb) in by_file.iter().filter(|(_, kb)| **kb >= 1024) {
            crate::gate_eprintln!(
                "gate: GATE_PROFILE resident in {}: {kb} kB",
                crate::escape::terminal(file)
            );
        }
    }

    pub fn print(&self) {
        if !self.enabled {
            return;
        }
        crate::gate_eprintln!("gate: GATE_PROFILE sampler CPU time by section (this thread):");
        for (name, (ns, calls)) in &self.sections {
            crate::gate_eprintln!(
                "  {name:<14} {:>10.3} ms total  {:>8.1} us/call  {calls} calls",
                *ns as f64 / 1e6,
                *ns as f64 / 1e3 / (*calls).max(1) as f64
            );
        }
    }
}
