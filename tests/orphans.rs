//! Issue 9, items 4, 5 and 9: whatever ends a recording (the command
//! exiting, the window, Ctrl-C, a hang-up, an error, gate being killed),
//! the launched tree is stopped and the trace finished; an attached process
//! is never signalled. Real processes through the real binary; each test
//! uses its own sleep durations and checks /proc that nothing is left.

use crate::common;

use common::*;
use gpugate::trace::{EventKind, StopReason, Trace};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// PIDs of live (non-zombie) processes whose argv is exactly `args`.
fn running(args: &[&str]) -> Vec<u32> {
    let want: Vec<u8> = args
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| gpugate::target::process_alive(pid))
        .filter(|&pid| std::fs::read(format!("/proc/{pid}/cmdline")).ok() == Some(want.clone()))
        .collect()
}

fn wait_until(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// `gate record --no-gpu -o OUT ARGS...` as a child we can signal.
fn spawn_record(dir: &Path, out: &str, args: &[&str]) -> std::process::Child {
    spawn_record_with(dir, out, args, None)
}

/// As `spawn_record`, with GATE_CGROUP set to `cgroup` when given ("0":
/// the per-process path, where the watchdog looks at the tree itself).
fn spawn_record_with(
    dir: &Path,
    out: &str,
    args: &[&str],
    cgroup: Option<&str>,
) -> std::process::Child {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("gate"));
    if let Some(v) = cgroup {
        c.env("GATE_CGROUP", v);
    }
    c.current_dir(dir)
        .args(["record", "--no-gpu", "-o", out])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn stderr_of(child: std::process::Child) -> (Option<i32>, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn notes(t: &Trace) -> Vec<String> {
    t.events
        .iter()
        .filter(|e| e.kind == EventKind::Note)
        .map(|e| e.message.clone())
        .collect()
}

#[test]
fn what_the_command_leaves_running_is_stopped_and_noted() {
    // Issue: `record -- sh -c 'sleep 301 & exit 0'` left sleep 301 running.
    let dir = tempfile::tempdir().unwrap();
    gate(dir.path())
        .args([
            "record",
            "--no-gpu",
            "-o",
            "t.jsonl",
            "--",
            "sh",
            "-c",
            "sleep 301 & exit 0",
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    assert!(running(&["sleep", "301"]).is_empty(), "sleep 301 survived");
    let t = Trace::load(&dir.path().join("t.jsonl")).unwrap();
    assert!(
        notes(&t)
            .iter()
            .any(|n| n.contains("left 1 process(es) running")),
        "{:?}",
        notes(&t)
    );
}

#[test]
fn members_that_ignore_sigterm_get_sigkill_after_the_grace() {
    // Issue: once the group leader had exited, SIGKILL never came.
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    gate(dir.path())
        .args([
            "record",
            "--no-gpu",
            "-o",
            "t.jsonl",
            "--duration",
            "1s",
            "--",
        ])
        .args(["sh", "-c", "(trap '' TERM; exec sleep 406) & sleep 1000"])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    assert!(running(&["sleep", "406"]).is_empty(), "sleep 406 survived");
    assert!(running(&["sleep", "1000"]).is_empty());
    // 1 s window + the 10 s grace, not more.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let t = Trace::load(&dir.path().join("t.jsonl")).unwrap();
    assert_eq!(t.end.unwrap().reason, StopReason::DurationReached);
}

/// Send `sig` to a recording of `sh -c 'sleep A & sleep B'` once both run.
fn interrupt_with(sig: libc::c_int, a: &str, b: &str) {
    let dir = tempfile::tempdir().unwrap();
    let cmd = format!("sleep {a} & sleep {b}");
    let child = spawn_record(dir.path(), "t.jsonl", &["--", "sh", "-c", &cmd]);
    wait_until("the sleeps to start", Duration::from_secs(20), || {
        !running(&["sleep", a]).is_empty() && !running(&["sleep", b]).is_empty()
    });
    // SAFETY: signalling the gate process this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    let (code, stderr) = stderr_of(child);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        running(&["sleep", a]).is_empty(),
        "sleep {a} survived signal {sig}"
    );
    assert!(
        running(&["sleep", b]).is_empty(),
        "sleep {b} survived signal {sig}"
    );
    let t = Trace::load(&dir.path().join("t.jsonl")).unwrap();
    assert!(!t.truncated, "the trace is finished");
    assert_eq!(t.end.as_ref().unwrap().reason, StopReason::Interrupted);
    assert!(
        notes(&t)
            .iter()
            .any(|n| n.contains(&format!("signal {sig}"))),
        "{:?}",
        notes(&t)
    );
}

#[test]
fn ctrl_c_stops_the_whole_tree_even_members_ignoring_sigint() {
    // Issue: Ctrl-C on `sh -c 'sleep 404 & sleep 405'` left sleep 404
    // (a background job of a non-interactive shell ignores SIGINT).
    interrupt_with(libc::SIGINT, "404", "405");
}

#[test]
fn a_hang_up_is_forwarded_not_fatal_to_gate_alone() {
    // Issue: SIGHUP killed gate without forwarding.
    interrupt_with(libc::SIGHUP, "4041", "4051");
}

#[test]
fn sigterm_to_gate_is_forwarded() {
    interrupt_with(libc::SIGTERM, "4042", "4052");
}

#[test]
fn gate_killed_outright_takes_the_command_with_it() {
    // PR_SET_PDEATHSIG: SIGKILL cannot be caught, the kernel tells the child.
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_record(dir.path(), "t.jsonl", &["--", "sleep", "4131"]);
    wait_until("sleep 4131", Duration::from_secs(20), || {
        !running(&["sleep", "4131"]).is_empty()
    });
    child.kill().unwrap();
    child.wait().unwrap();
    wait_until(
        "sleep 4131 to die with gate",
        Duration::from_secs(5),
        || running(&["sleep", "4131"]).is_empty(),
    );
    // A killed recorder leaves its readable prefix, never the final name.
    assert!(dir.path().join("t.jsonl.partial").exists());
    assert!(!dir.path().join("t.jsonl").exists());
}

#[test]
fn an_error_after_launch_stops_the_command_and_keeps_the_prefix() {
    // Issue: an error after launch (disk full, any `?`) left the target
    // running. A file-size limit makes the trace write fail mid-run
    // (SIGXFSZ ignored, so the write returns EFBIG as on a full disk).
    let dir = tempfile::tempdir().unwrap();
    let gate_bin = assert_cmd::cargo::cargo_bin("gate");
    let script = format!(
        "trap '' XFSZ; ulimit -f 16; exec '{}' record --no-gpu -o t.jsonl -- sleep 4121",
        gate_bin.display()
    );
    let out = Command::new("sh")
        .current_dir(dir.path())
        .args(["-c", &script])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("what was recorded is in 't.jsonl.partial'"),
        "{stderr}"
    );
    assert!(
        running(&["sleep", "4121"]).is_empty(),
        "sleep 4121 survived the error"
    );
    assert!(
        !dir.path().join("t.jsonl").exists(),
        "a failed recording is never the trace"
    );
}

#[test]
fn an_attached_process_is_never_signalled() {
    let dir = tempfile::tempdir().unwrap();
    let mut victim = Command::new("sleep").arg("4151").spawn().unwrap();
    let pid = victim.id().to_string();
    gate(dir.path())
        .args([
            "record",
            "--no-gpu",
            "-o",
            "a.jsonl",
            "--duration",
            "1s",
            "--pid",
            &pid,
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    // And when gate is interrupted while attached.
    let child = spawn_record(dir.path(), "b.jsonl", &["--pid", &pid]);
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: signalling the gate process this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    stderr_of(child);
    assert!(
        gpugate::target::process_alive(victim.id()),
        "the attached process was signalled"
    );
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[test]
fn a_warmup_pattern_that_never_matches_ends_the_run_with_a_clear_line() {
    // Issue item 5: --duration never ended when --warmup-until never matched.
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = gate(dir.path())
        .args(["record", "--no-gpu", "-o", "t.jsonl", "--duration", "1s"])
        .args(["--warmup-until", "^never$", "--warmup-timeout", "1s", "--"])
        .args(["sh", "-c", "while true; do echo step; sleep 0.2; done"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("--warmup-until never matched"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20));
    let t = Trace::load(&dir.path().join("t.jsonl")).unwrap();
    assert_eq!(t.end.as_ref().unwrap().reason, StopReason::WarmupTimeout);
    assert!(t.warmup.iter().all(|&w| w), "every sample is warm-up");
}

#[test]
fn huge_durations_are_one_clear_line_before_anything_starts() {
    // Issue item 9: `--duration 99999999999999999999` panicked; huge
    // --warmup + --duration panicked after launch, orphaning the benchmark.
    let dir = tempfile::tempdir().unwrap();
    for flags in [
        vec!["--duration", "99999999999999999999"],
        vec!["--warmup", "100000000h", "--duration", "100000000h"],
        vec!["--duration", "8000h"],
        vec!["--warmup-timeout", "1e30s"],
    ] {
        let out = gate(dir.path())
            .args(["record", "--no-gpu", "-o", "t.jsonl"])
            .args(&flags)
            .args(["--", "sleep", "4161"])
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        let (_, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{flags:?}: {stderr}");
        let first = stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("error:") || first.starts_with("gate: error:"),
            "{stderr}"
        );
        assert!(
            running(&["sleep", "4161"]).is_empty(),
            "{flags:?} launched the benchmark"
        );
        assert!(!dir.path().join("t.jsonl.partial").exists());
    }
}

#[test]
fn attaching_without_access_to_the_process_io_says_so() {
    // Issue (smaller): attaching to another user's process recorded I/O as
    // null without a warning. PID 1 belongs to root; where even this user
    // can read its /proc/PID/io (root outside a container), gate runs as
    // nobody instead.
    let dir = tempfile::tempdir().unwrap();
    let gate_bin = assert_cmd::cargo::cargo_bin("gate");
    let mut cmd = if std::fs::File::open("/proc/1/io").is_err() {
        Command::new(&gate_bin)
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&gate_bin);
        c
    };
    let out = cmd
        .current_dir(dir.path())
        .args([
            "record",
            "--no-gpu",
            "--pid",
            "1",
            "--duration",
            "1s",
            "-o",
            "a.jsonl",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("cannot read /proc/1/io"), "{stderr}");
    let t = Trace::load(&dir.path().join("a.jsonl")).unwrap();
    assert!(
        notes(&t).iter().any(|n| n.contains("recorded as null")),
        "{:?}",
        notes(&t)
    );
}

#[test]
fn under_nohup_a_hang_up_stays_ignored_for_gate_and_the_benchmark() {
    // `nohup gate record ...`: SIGHUP was ignored on purpose; catching and
    // forwarding it would end the run the user protected.
    let dir = tempfile::tempdir().unwrap();
    let gate_bin = assert_cmd::cargo::cargo_bin("gate");
    let script = format!(
        "trap '' HUP; exec '{}' record --no-gpu -o t.jsonl -- sleep 4181",
        gate_bin.display()
    );
    let mut child = Command::new("sh")
        .current_dir(dir.path())
        .args(["-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("sleep 4181", Duration::from_secs(20), || {
        !running(&["sleep", "4181"]).is_empty()
    });
    let pid = child.id() as libc::pid_t;
    // SAFETY: signalling the gate process this test started.
    unsafe { libc::kill(pid, libc::SIGHUP) };
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        child.try_wait().unwrap().is_none(),
        "gate died of an ignored SIGHUP"
    );
    assert!(
        !running(&["sleep", "4181"]).is_empty(),
        "the hang-up reached the benchmark"
    );
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGINT) };
    child.wait().unwrap();
    assert!(running(&["sleep", "4181"]).is_empty());
}

/// Issue 19.8: `gate record -- sh -c 'sleep 3721 & sleep 3722; wait'`, then
/// `kill -9` of gate, left both sleeps running (reparented to PID 1); so
/// did a descendant that cleared its environment and called setsid, and
/// one orphaned on top of that (double fork). The watchdog takes them all.
#[test]
fn gate_killed_with_sigkill_takes_the_whole_tree_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&[&str]]); 2] = [
        (
            "sleep 3721 & sleep 3722; wait",
            &[&["sleep", "3721"], &["sleep", "3722"]],
        ),
        (
            "env -i setsid sleep 3723 & (env -i setsid sleep 3724 &) ; sleep 3725; wait",
            &[&["sleep", "3723"], &["sleep", "3724"], &["sleep", "3725"]],
        ),
    ];
    // Both host paths: in a cgroup the watchdog kills the cgroup; without
    // one (GATE_CGROUP=0) it has walked the tree every POLL.
    let runs = [None, Some("0")]
        .into_iter()
        .flat_map(|cg| cases.iter().map(move |c| (cg, c)));
    for (i, (cgroup, (script, sleeps))) in runs.enumerate() {
        let mut child = spawn_record_with(
            dir.path(),
            &format!("k{i}.jsonl"),
            &["--", "sh", "-c", script],
            cgroup,
        );
        wait_until("the sleeps to start", Duration::from_secs(20), || {
            sleeps.iter().all(|s| !running(s).is_empty())
        });
        // Give the watchdog one look at the grown tree.
        std::thread::sleep(gpugate::watchdog::POLL * 3);
        let pids: Vec<u32> = sleeps.iter().flat_map(|s| running(s)).collect();
        child.kill().unwrap(); // SIGKILL
        let _ = child.wait();
        let started = Instant::now();
        wait_until("the tree to die with gate", Duration::from_secs(5), || {
            pids.iter().all(|&p| !gpugate::target::process_alive(p))
        });
        eprintln!(
            "case {i} (GATE_CGROUP={cgroup:?}): tree gone {:?} after SIGKILL",
            started.elapsed()
        );
    }
}
