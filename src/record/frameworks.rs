//! Which frameworks the target's processes have loaded (`FrameworkScan`),
//! for the trace's `framework` events.

use crate::sampler::host;
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// Which frameworks the target's processes have loaded, read from their
/// /proc/PID/maps (never from the process itself). Libraries load during
/// start-up: the maps are read every `FRAMEWORK_SCAN` until a framework is
/// found, then at doubling periods (4, 8, 16, 32 s: a second one, vLLM
/// over torch or TensorRT building its engines, is still seen), and never
/// after `FRAMEWORK_SCAN_FOR`. A torch process maps ~1,000 files: a read
/// costs about a millisecond of CPU, and reading every 2 s for 90 s was
/// 43 us a tick on the H200 at 100 ms (BENCHMARKS.md); found at 2 s, the
/// maps are now read 6 times in all (0, 2, 6, 14, 30, 62 s) instead of 46.
pub(super) struct FrameworkScan {
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
    pub(super) fn new(now: Instant) -> FrameworkScan {
        FrameworkScan {
            started: now,
            next: now,
            period: FRAMEWORK_SCAN,
            found: Default::default(),
            buf: Vec::new(),
        }
    }

    /// Frameworks found for the first time at `now` (each is said once).
    pub(super) fn scan(&mut self, now: Instant, tree: &HashSet<u32>) -> Vec<&'static str> {
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
            if read.is_err() {
                continue;
            }
            for fw in crate::analysis::framework::from_maps(&self.buf) {
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
