//! A cgroup v2 of gate's own for a launched target: the whole tree's CPU
//! (and, where the io controller is there, I/O) from one file each,
//! whatever the tree's size.
//!
//! gate creates `gate-<gate's PID>-<n>` under its own cgroup v2 directory
//! (the `0::` line of `/proc/self/cgroup`, under the cgroup2 mount of
//! `/proc/self/mountinfo`: a pure v2 system or the unified hierarchy of a
//! hybrid one), and the launched command moves itself into it between fork
//! and exec (`cgroup.procs` opened by gate, "0" written by the child): every
//! process it starts is born inside. Then each host sample reads
//! `cpu.stat` (`usage_usec`, `user_usec`, `system_usec`, present with or
//! without the cpu controller); `io.stat`, where the io controller is
//! enabled for the new cgroup, gives the tree's storage bytes once a
//! second (only when gate's own cgroup is the root one: cgroup v2's "no
//! internal processes" rule keeps controllers away from the children of a
//! cgroup that holds processes, and gate's does); `cgroup.procs` replaces
//! the scan of every thread's `children` file. Memory stays the sum of the
//! processes' RSS from `/proc` (read once a second): `memory.current`
//! also counts page cache and kernel memory, so a baseline recorded on
//! one path would not compare with a run on the other.
//!
//! An attached process (`--pid`) is not moved: where its cgroup is the
//! tree's own (a systemd unit, a container, a Slurm step: every process in
//! it, and in any cgroup below it, belongs to the attached tree, and gate
//! is not in it), [`TreeCgroup::adopt`] reads that cgroup the same way,
//! and leaves it as it found it.
//!
//! Where it cannot be done (cgroup v1 only, a read-only or foreign cgroup
//! tree, an attached process sharing its cgroup, `GATE_CGROUP=0`),
//! [`TreeCgroup::create`] and [`TreeCgroup::adopt`] say why in one line
//! and gate keeps its per-process `/proc` path. The
//! directory is removed when the recording ends, on every path gate
//! controls ([`Drop`]); whatever is still inside by then (a process that
//! left the tree's process group and ignored SIGTERM) is killed through
//! `cgroup.kill` first, so the directory can go.

use super::ProcFile;
use std::collections::HashSet;
use std::fs;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Set to 0 to keep the per-process `/proc` path (to compare the two).
pub(crate) const CGROUP_ENV: &str = "GATE_CGROUP";

/// `GATE_CGROUP` read: Ok(true) unset or "1", Ok(false) "0", else the
/// one-line error (exit 2).
pub(crate) fn enabled_by_env() -> Result<bool, String> {
    match std::env::var(CGROUP_ENV) {
        Err(std::env::VarError::NotPresent) => Ok(true),
        Ok(v) if v == "1" => Ok(true),
        Ok(v) if v == "0" => Ok(false),
        Ok(v) => Err(format!(
            "{CGROUP_ENV}={} is not 0 or 1: unset it, or set 0 to read the tree per process from /proc",
            crate::escape::terminal(&v)
        )),
        Err(_) => Err(format!(
            "{CGROUP_ENV} is not valid text: unset it, or set 0 to read the tree per process from /proc"
        )),
    }
}

/// The tree's CPU time from `cpu.stat`, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct CpuUsec {
    pub usage: u64,
    pub user: u64,
    pub system: u64,
}

/// `cpu.stat`'s three time keys (None when `usage_usec` is missing).
pub(crate) fn parse_cpu_stat(text: &str) -> Option<CpuUsec> {
    let mut out = CpuUsec::default();
    let mut usage = None;
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let (Some(key), Some(value)) = (it.next(), it.next()) else {
            continue;
        };
        let Ok(value) = value.parse::<u64>() else {
            continue;
        };
        match key {
            "usage_usec" => usage = Some(value),
            "user_usec" => out.user = value,
            "system_usec" => out.system = value,
            _ => {}
        }
    }
    out.usage = usage?;
    Some(out)
}

/// (read, written) bytes summed over the devices of `io.stat`.
pub(crate) fn parse_io_stat(text: &str) -> (u64, u64) {
    let (mut read, mut write) = (0u64, 0u64);
    for field in text.split_ascii_whitespace() {
        if let Some(v) = field.strip_prefix("rbytes=") {
            read = read.saturating_add(v.parse().unwrap_or(0));
        } else if let Some(v) = field.strip_prefix("wbytes=") {
            write = write.saturating_add(v.parse().unwrap_or(0));
        }
    }
    (read, write)
}

fn parse_pids(text: &str) -> HashSet<u32> {
    text.split_ascii_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// A mountinfo field as the kernel escapes it: space, tab, newline and
/// backslash written as `\040`, `\011`, `\012`, `\134` (a cgroup2 mount
/// point with a space was misread: issue 41.10).
fn unescape_octal(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let code = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match code {
            Some(c) => {
                out.push(c);
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// gate's own cgroup v2 directory from `/proc/self/cgroup` and
/// `/proc/self/mountinfo`'s text; Err says why there is none.
pub fn own_cgroup_dir(proc_cgroup: &str, mountinfo: &str) -> Result<PathBuf, String> {
    let path = proc_cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("no cgroup v2 hierarchy (cgroup v1 only)")?;
    // mountinfo: id parent major:minor root mount-point options... - fstype source ...
    let (root, mount) = mountinfo
        .lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            if right.split_ascii_whitespace().next()? != "cgroup2" {
                return None;
            }
            let f: Vec<&str> = left.split_ascii_whitespace().collect();
            Some((unescape_octal(f.get(3)?), unescape_octal(f.get(4)?)))
        })
        .ok_or("no cgroup2 file system mounted")?;
    let rel = path
        .strip_prefix(root.trim_end_matches('/'))
        .filter(|r| r.is_empty() || r.starts_with('/'))
        .ok_or_else(|| {
            format!("gate's cgroup {path} is outside the mounted cgroup2 tree ({root})")
        })?;
    // (Joining "" would add a trailing '/'.)
    let rel = rel.trim_start_matches('/');
    let dir = Path::new(&mount);
    Ok(if rel.is_empty() {
        dir.to_path_buf()
    } else {
        dir.join(rel)
    })
}

/// Which path the host counters took (or would take), for the trace's
/// "host counters: ..." note and `gate doctor`.
pub(crate) fn describe(cgroup: Result<&TreeCgroup, &String>) -> String {
    match cgroup {
        Ok(c) if c.adopted() => format!(
            "the attached process's own cgroup {} (the tree's CPU{} from the cgroup at every sample; processes, memory and roles from /proc once a second)",
            crate::escape::terminal(&c.dir.display().to_string()),
            if c.io_stat.is_some() { " and I/O" } else { "" },
        ),
        Ok(c) => format!(
            "the target's own cgroup under {} (the tree's CPU{} from the cgroup at every sample; processes, memory and roles from /proc once a second)",
            crate::escape::terminal(&c.dir.parent().unwrap_or(&c.dir).display().to_string()),
            if c.io_stat.is_some() { " and I/O" } else { "" },
        ),
        Err(why) => format!(
            "per process from /proc ({})",
            crate::escape::terminal(why)
        ),
    }
}

/// A cgroup created for one launched target (removed on drop), or the
/// attached target's own (left as it was).
pub(crate) struct TreeCgroup {
    dir: PathBuf,
    /// `cgroup.procs` opened for writing before the fork: the child writes
    /// "0" to it to move itself in (closed at exec). None when adopted.
    join: Option<fs::File>,
    procs: ProcFile,
    cpu_stat: ProcFile,
    io_stat: Option<ProcFile>,
}

impl TreeCgroup {
    /// A new child of gate's own cgroup, or why not (one line).
    pub fn create() -> Result<TreeCgroup, String> {
        if !enabled_by_env()? {
            return Err(format!("{CGROUP_ENV}=0"));
        }
        let read = |p: &str| fs::read_to_string(p).map_err(|e| format!("cannot read {p}: {e}"));
        let parent = own_cgroup_dir(&read("/proc/self/cgroup")?, &read("/proc/self/mountinfo")?)?;
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = parent.join(format!(
            "gate-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        fs::create_dir(&dir)
            .map_err(|e| format!("cannot create a cgroup under {}: {e}", parent.display()))?;
        // From here the directory exists: a failure removes it.
        let opened = (|| {
            let file = |name: &str| ProcFile::open(&dir.join(name).to_string_lossy());
            let join = fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .map_err(|e| format!("cannot open cgroup.procs of {}: {e}", dir.display()))?;
            Ok::<_, String>(TreeCgroup {
                join: Some(join),
                procs: file("cgroup.procs").ok_or("cannot read cgroup.procs")?,
                cpu_stat: file("cpu.stat").ok_or("the new cgroup has no cpu.stat")?,
                io_stat: file("io.stat"),
                dir: dir.clone(),
            })
        })();
        if opened.is_err() {
            let _ = fs::remove_dir(&dir);
        }
        opened
    }

    /// The cgroup of the attached process `pid` when it is the tree's own:
    /// every process in it and below it is in `tree` (the process and its
    /// descendants), none is in a cgroup below it (whose processes the
    /// tree's one read of `cgroup.procs` would miss), and gate is
    /// neither in it nor below it. Else why not, in one line.
    pub fn adopt(pid: u32, tree: &HashSet<u32>) -> Result<TreeCgroup, String> {
        if !enabled_by_env()? {
            return Err(format!("{CGROUP_ENV}=0"));
        }
        let read = |p: &str| fs::read_to_string(p).map_err(|e| format!("cannot read {p}: {e}"));
        let mountinfo = read("/proc/self/mountinfo")?;
        let dir = own_cgroup_dir(&read(&format!("/proc/{pid}/cgroup"))?, &mountinfo)?;
        let shown = || crate::escape::terminal(&dir.display().to_string());
        let gate = own_cgroup_dir(&read("/proc/self/cgroup")?, &mountinfo)?;
        if gate.starts_with(&dir) {
            return Err(format!(
                "attached to a process whose cgroup {} also holds gate",
                shown()
            ));
        }
        let procs = |d: &Path| fs::read_to_string(d.join("cgroup.procs")).map(|t| parse_pids(&t));
        let members =
            procs(&dir).map_err(|e| format!("cannot read {}/cgroup.procs: {e}", shown()))?;
        if let Some(other) = members.iter().find(|p| !tree.contains(p)) {
            return Err(format!(
                "attached to a process whose cgroup {} also holds PID {other}, outside its tree",
                shown()
            ));
        }
        if populated_below(&dir, &procs) {
            return Err(format!(
                "attached to a process whose cgroup {} has processes in cgroups below it",
                shown()
            ));
        }
        let file = |name: &str| ProcFile::open(&dir.join(name).to_string_lossy());
        Ok(TreeCgroup {
            join: None,
            procs: file("cgroup.procs").ok_or("cannot read cgroup.procs")?,
            cpu_stat: file("cpu.stat").ok_or_else(|| {
                format!("the attached process's cgroup {} has no cpu.stat", shown())
            })?,
            io_stat: file("io.stat"),
            dir,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether gate made this cgroup (and removes it), or adopted the
    /// attached process's own.
    pub(crate) fn adopted(&self) -> bool {
        self.join.is_none()
    }

    /// The descriptor the launched child writes "0" to, between fork and
    /// exec, to move itself in (None for an adopted cgroup).
    pub(crate) fn join_fd(&self) -> Option<RawFd> {
        self.join.as_ref().map(|j| j.as_raw_fd())
    }

    /// The processes in the cgroup now.
    pub(crate) fn members(&self, buf: &mut Vec<u8>) -> HashSet<u32> {
        parse_pids(self.procs.read(buf).unwrap_or(""))
    }

    /// The processes in the cgroup when the list differs from `seen` (the
    /// list's text at the last change, updated): one read, and nothing
    /// parsed or allocated while the tree stays the same.
    pub(crate) fn members_if_changed(
        &self,
        buf: &mut Vec<u8>,
        seen: &mut Vec<u8>,
    ) -> Option<HashSet<u32>> {
        let text = self.procs.read(buf)?;
        if text.as_bytes() == seen.as_slice() {
            return None;
        }
        seen.clear();
        seen.extend_from_slice(text.as_bytes());
        Some(parse_pids(text))
    }

    pub fn cpu(&self, buf: &mut Vec<u8>) -> Option<CpuUsec> {
        parse_cpu_stat(self.cpu_stat.read(buf)?)
    }

    /// Whether the io controller gives the tree's storage bytes.
    pub(crate) fn has_io(&self) -> bool {
        self.io_stat.is_some()
    }

    pub(crate) fn io_bytes(&self, buf: &mut Vec<u8>) -> Option<(u64, u64)> {
        Some(parse_io_stat(self.io_stat.as_ref()?.read(buf)?))
    }

    /// Removes the directory: once its processes are gone (the caller has
    /// stopped the tree), else after killing what is left, waiting at
    /// most a second. Err names the directory left behind.
    pub fn remove(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut killed = false;
        loop {
            match fs::remove_dir(&self.dir) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) if Instant::now() >= deadline => {
                    return Err(format!(
                        "could not remove the target's cgroup {}: {e}; remove it with rmdir once its processes are gone",
                        self.dir.display()
                    ))
                }
                Err(_) => {
                    if !killed {
                        // Still populated: what escaped the tree's process
                        // group is still in here.
                        let _ = fs::write(self.dir.join("cgroup.kill"), "1");
                        killed = true;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }
}

/// Whether any cgroup below `dir` holds a process.
fn populated_below(dir: &Path, procs: &dyn Fn(&Path) -> std::io::Result<HashSet<u32>>) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let sub = e.path();
        e.file_type().is_ok_and(|t| t.is_dir())
            && (procs(&sub).is_ok_and(|p| !p.is_empty()) || populated_below(&sub, procs))
    })
}

impl Drop for TreeCgroup {
    fn drop(&mut self) {
        if self.adopted() {
            return;
        }
        if let Err(e) = self.remove() {
            crate::gate_eprintln!("gate: warning: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_stat_and_io_stat_parse() {
        let cpu =
            "usage_usec 348239\nuser_usec 345229\nsystem_usec 3010\nnice_usec 0\nnr_periods 0\n";
        assert_eq!(
            parse_cpu_stat(cpu),
            Some(CpuUsec {
                usage: 348239,
                user: 345229,
                system: 3010
            })
        );
        assert_eq!(parse_cpu_stat("user_usec 1\n"), None);
        let io = "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n\
                  8:0 rbytes=100 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n";
        assert_eq!(parse_io_stat(io), (1459300, 314773504));
        assert_eq!(parse_io_stat(""), (0, 0));
    }

    #[test]
    fn own_cgroup_dir_on_v2_hybrid_and_v1() {
        let v2 = "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw\n";
        assert_eq!(
            own_cgroup_dir("0::/user.slice/session-1.scope\n", v2).unwrap(),
            Path::new("/sys/fs/cgroup/user.slice/session-1.scope")
        );
        // Compared as text: a trailing '/' would be equal as a Path.
        assert_eq!(
            own_cgroup_dir("0::/\n", v2).unwrap().display().to_string(),
            "/sys/fs/cgroup"
        );
        // Hybrid: v1 controllers, the unified hierarchy mounted apart.
        let hybrid = "30 25 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n\
                      35 25 0:32 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            own_cgroup_dir("4:memory:/x\n1:cpu:/\n0::/\n", hybrid).unwrap(),
            Path::new("/sys/fs/cgroup/unified")
        );
        // A container that sees a sub-tree mounted at its root.
        let sub = "35 25 0:32 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            own_cgroup_dir("0::/kubepods/pod1/c2\n", sub).unwrap(),
            Path::new("/sys/fs/cgroup/c2")
        );
        // A mount point with a space, as mountinfo escapes it.
        let spaced = "35 25 0:32 / /mnt/my\\040cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            own_cgroup_dir("0::/a\n", spaced).unwrap(),
            Path::new("/mnt/my cgroup/a")
        );
        assert!(own_cgroup_dir("0::/elsewhere\n", sub)
            .unwrap_err()
            .contains("outside"));
        assert!(own_cgroup_dir("0::/kubepods/pod10\n", sub).is_err());
        // v1 only: no 0:: line, or no cgroup2 mount.
        assert!(own_cgroup_dir("1:cpu:/\n", hybrid)
            .unwrap_err()
            .contains("v1 only"));
        assert!(
            own_cgroup_dir("0::/\n", "30 25 0:27 / /x rw - cgroup cgroup rw\n")
                .unwrap_err()
                .contains("no cgroup2")
        );
    }
}
