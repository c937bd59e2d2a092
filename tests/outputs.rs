//! Issue 9, items 1 and 6 and "disk full": what gate writes never replaces
//! a device node, a FIFO, a directory or one of its own inputs, never
//! writes through a planted link, and a reader that goes away (`| head -1`)
//! or a full disk does not cost the exit code or the CI files.

use crate::common;

use common::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// `/dev/null`'s twin at `path`, when this user may create device nodes.
fn mknod_null(path: &Path) -> bool {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid path; mode and device numbers of /dev/null.
    unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) == 0 }
}

fn sleeping(arg: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline")).ok().as_deref()
            == Some(format!("sleep\0{arg}\0").as_bytes())
    })
}

#[test]
fn record_never_replaces_a_special_file_and_launches_nothing_then() {
    // Issue: `mknod /tmp/x c 1 3; gate record -o /tmp/x -- true` turned the
    // device node into a regular file.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mkfifo(&d.join("fifo"));
    std::fs::create_dir(d.join("adir")).unwrap();
    let mut targets = vec!["fifo", "adir"];
    if mknod_null(&d.join("null")) {
        targets.push("null");
    } else {
        eprintln!("note: cannot mknod here (not root): device-node case not run");
    }
    for name in targets {
        let out = gate(d)
            .args(["record", "--no-gpu", "-o", name, "--", "sleep", "4171"])
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        let (_, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains("refusing to write the trace"),
            "{name}: {stderr}"
        );
        assert!(!sleeping("4171"), "{name}: the benchmark was launched");
        let meta = std::fs::symlink_metadata(d.join(name)).unwrap();
        assert!(!meta.is_file(), "{name} was replaced by a regular file");
    }
}

#[test]
fn record_never_writes_through_a_planted_partial_link() {
    // Issue: `ln -s /tmp/v /tmp/o.jsonl.partial; gate record -o /tmp/o.jsonl`
    // overwrote /tmp/v.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("v"), "keep\n").unwrap();
    std::os::unix::fs::symlink(d.join("v"), d.join("o.jsonl.partial")).unwrap();
    let out = gate(d)
        .args(["record", "--no-gpu", "-o", "o.jsonl", "--", "sleep", "4172"])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("o.jsonl.partial"), "{stderr}");
    assert_eq!(std::fs::read_to_string(d.join("v")).unwrap(), "keep\n");
    assert!(!sleeping("4172"));
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    // Issue: `check --replay t.jsonl --json t.jsonl` and
    // `report t.jsonl --html t.jsonl` replaced the trace.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t1 = trace(d, "h1.jsonl", &healthy(1));
    gate(d)
        .args(["capture", "--baseline", "b", "--commit", "c", "--replay"])
        .arg(&t1)
        .assert()
        .success();
    let t = trace(d, "t.jsonl", &healthy(2));
    std::os::unix::fs::symlink(&t, d.join("alias.json")).unwrap();
    let before = std::fs::read(&t).unwrap();
    let runs: Vec<Vec<&str>> = vec![
        vec![
            "check",
            "--baseline",
            "b",
            "--replay",
            "t.jsonl",
            "--json",
            "t.jsonl",
        ],
        vec![
            "check",
            "--baseline",
            "b",
            "--replay",
            "t.jsonl",
            "--markdown",
            "alias.json",
        ],
        vec![
            "check",
            "--baseline",
            "b",
            "--replay",
            "t.jsonl",
            "--junit",
            "baselines/b.toml",
        ],
        vec!["report", "t.jsonl", "--html", "t.jsonl"],
        vec!["report", "t.jsonl", "--json", "alias.json"],
        vec![
            "capture",
            "--baseline",
            "t",
            "--baseline-dir",
            ".",
            "--replay",
            "t.jsonl",
        ],
    ];
    for args in runs {
        // The last one writes baseline 't' to ./t.toml: not an input. Make
        // it one by naming the trace so.
        let args: Vec<&str> = if args[0] == "capture" {
            std::fs::copy(&t, d.join("t.toml")).unwrap();
            vec![
                "capture",
                "--baseline",
                "t",
                "--baseline-dir",
                ".",
                "--replace",
                "--replay",
                "t.toml",
            ]
        } else {
            args
        };
        let out = gate(d).args(&args).output().unwrap();
        let (_, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("it is the input"), "{args:?}: {stderr}");
    }
    assert_eq!(std::fs::read(&t).unwrap(), before, "the trace was touched");
    assert_eq!(std::fs::read(d.join("t.toml")).unwrap(), before);
}

#[test]
fn a_planted_baseline_lock_link_is_never_followed() {
    // Issue: a symlinked NAME.toml.lock created its target.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("baselines")).unwrap();
    std::os::unix::fs::symlink(d.join("created"), d.join("baselines/b.toml.lock")).unwrap();
    let t1 = trace(d, "h1.jsonl", &healthy(1));
    let out = gate(d)
        .args(["capture", "--baseline", "b", "--commit", "c", "--replay"])
        .arg(&t1)
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert!(!d.join("created").exists());
    assert!(!d.join("baselines/b.toml").exists());
}

#[test]
fn a_reader_that_goes_away_costs_neither_the_exit_code_nor_the_ci_files() {
    // Issue: `gate check ... | head -1` panicked (exit 101) and lost the
    // verdict's exit code, $GITHUB_OUTPUT and the step summary.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t1 = trace(d, "h1.jsonl", &healthy(1));
    let t2 = trace(d, "h2.jsonl", &healthy(2));
    gate(d)
        .args(["capture", "--baseline", "b", "--commit", "c", "--replay"])
        .arg(&t1)
        .arg(&t2)
        .assert()
        .success();
    let slow = trace(d, "slow.jsonl", &run(Signature::launch_storm(), 3));
    // With --format json the annotations go to stderr: close that too
    // (`2>&1 | head -1`).
    for (format, close_stderr) in [("text", false), ("json", false), ("json", true)] {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("gate"))
            .current_dir(d)
            .args(["check", "--baseline", "b", "--format", format, "--replay"])
            .arg(&slow)
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_OUTPUT", d.join("gh-output"))
            .env("GITHUB_STEP_SUMMARY", d.join("gh-summary.md"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader is gone before gate writes a byte.
        drop(child.stdout.take());
        if close_stderr {
            drop(child.stderr.take());
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{format}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        let gh = std::fs::read_to_string(d.join("gh-output")).unwrap();
        assert!(gh.contains("verdict=regression"), "{gh}");
        let summary = std::fs::read_to_string(d.join("gh-summary.md")).unwrap();
        assert!(summary.contains("REGRESSION"), "{summary}");
        std::fs::remove_file(d.join("gh-output")).unwrap();
        std::fs::remove_file(d.join("gh-summary.md")).unwrap();
    }
}

/// Run `gate ARGS` in `dir` with a 4 KiB tmpfs mounted at `dir/full`, in a
/// private mount namespace (`unshare -rm`: no root needed where user
/// namespaces are allowed). None when this machine cannot do that.
pub(crate) fn with_full_disk(dir: &Path, args: &str) -> Option<(Option<i32>, String)> {
    std::fs::create_dir_all(dir.join("full")).unwrap();
    let gate_bin = assert_cmd::cargo::cargo_bin("gate");
    let script = format!(
        "mount -t tmpfs -o size=4k tmpfs full || exit 99; exec '{}' {args}",
        gate_bin.display()
    );
    let out = Command::new("unshare")
        .args(["-rm", "sh", "-c", &script])
        .current_dir(dir)
        .env_remove("GITHUB_ACTIONS")
        .output()
        .ok()?;
    if out.status.code() == Some(99)
        || (out.status.code() == Some(1)
            && out.stdout.is_empty()
            && String::from_utf8_lossy(&out.stderr).contains("unshare"))
    {
        return None;
    }
    Some((
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

#[test]
fn a_full_disk_is_an_infrastructure_failure_not_a_usage_error() {
    // Issue: disk full during capture/check exited 2; retrying on another
    // runner may help, so it is 3.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t1 = trace(d, "h1.jsonl", &healthy(1));
    let t1 = t1.file_name().unwrap().to_str().unwrap();
    gate(d)
        .args([
            "capture",
            "--baseline",
            "b",
            "--commit",
            "c",
            "--replay",
            t1,
        ])
        .assert()
        .success();
    let Some((code, stderr)) = with_full_disk(
        d,
        &format!("check --baseline b --replay {t1} --json full/report.json"),
    ) else {
        eprintln!("SKIP: cannot mount a tmpfs here (no user namespaces); disk-full case not run");
        return;
    };
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    let (code, stderr) = with_full_disk(
        d,
        &format!("capture --baseline big --baseline-dir full --commit c --replay {t1}"),
    )
    .unwrap();
    assert_eq!(code, Some(3), "{stderr}");
}

/// Issue 19.4: 3,000 user metrics, all regressed, took 1.86 GB of memory
/// and made an 880 MB JUnit file (every test case carried the whole list);
/// the PR comment was 384 kB and the template's cut removed its marker.
/// Every output now grows linearly, the PR comment fits GitHub's limit by
/// construction and keeps its marker last.
#[test]
fn three_thousand_regressed_metrics_cost_linear_output_and_bounded_memory() {
    const N: usize = 3000;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut toml = String::new();
    for i in 0..N {
        toml.push_str(&format!(
            "[user_metrics.m{i:04}]\nregex = ' m{i:04}=([0-9.]+)'\ndirection = \"higher_is_better\"\nunit = \"1/s\"\naggregate = \"last\"\n"
        ));
    }
    std::fs::write(d.join("gate.toml"), toml).unwrap();
    let printing = |seed: u64, value: f64| {
        let mut s = run(healthy(seed), seed);
        // One line holding every metric: each regex scans one line, not
        // 3,000 (the debug build's regex matching would dominate the test).
        let line: String = (0..N).map(|i| format!(" m{i:04}={value}")).collect();
        s.extra_output = vec![line];
        s.with_samples(60)
    };
    let base: Vec<_> = [(1, 99.0), (2, 100.0), (3, 101.0)]
        .iter()
        .map(|(seed, v)| trace(d, &format!("b{seed}.jsonl"), &printing(*seed, *v)))
        .collect();
    let t0 = std::time::Instant::now();
    gate(d)
        .args(["capture", "--baseline", "many", "--replay"])
        .args(&base)
        .assert()
        .success();
    let capture_s = t0.elapsed().as_secs_f64();
    let slow = trace(d, "slow.jsonl", &printing(4, 50.0));
    let t0 = std::time::Instant::now();
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gate"));
    cmd.current_dir(d)
        .args([
            "check",
            "--baseline",
            "many",
            "--junit",
            "j.xml",
            "--json",
            "r.json",
        ])
        .args([
            "--markdown",
            "r.md",
            "--pr-comment",
            "pr.md",
            "--openmetrics",
            "r.om",
            "--replay",
        ])
        .arg(&slow)
        .env("GITHUB_ACTIONS", "true")
        .env("GATE_PROFILE", "1")
        .env("GITHUB_STEP_SUMMARY", d.join("summary.md"))
        .stdout(std::fs::File::create(d.join("stdout.txt")).unwrap())
        .stderr(std::fs::File::create(d.join("stderr.txt")).unwrap());
    let code = cmd.status().unwrap().code().unwrap();
    let check_s = t0.elapsed().as_secs_f64();
    let stderr = std::fs::read_to_string(d.join("stderr.txt")).unwrap();
    assert_eq!(code, 1, "{stderr}");
    // gate's own peak (`GATE_PROFILE`), not a rusage of the child, which
    // counts the pages of this test process it carried until its exec.
    let peak_mib = common::peak_kib(&stderr) as f64 / 1024.0;
    let size = |name: &str| std::fs::metadata(d.join(name)).unwrap().len();
    let report = format!(
        "capture {capture_s:.1} s, check {check_s:.1} s (debug build); peak RSS {peak_mib:.0} MiB; junit {} B, json {} B, markdown {} B, pr comment {} B, openmetrics {} B, stdout {} B, step summary {} B",
        size("j.xml"),
        size("r.json"),
        size("r.md"),
        size("pr.md"),
        size("r.om"),
        size("stdout.txt"),
        size("summary.md")
    );
    eprintln!("{N} regressed metrics: {report}");
    // Bounds: about 2 KiB per metric for JUnit (its failure text is capped),
    // and every other output below 1 KiB per metric.
    assert!(peak_mib < 400.0, "{report}");
    assert!(size("j.xml") < (N as u64) * 2600 + 200_000, "{report}");
    for f in ["r.json", "r.md", "r.om", "stdout.txt"] {
        assert!(size(f) < (N as u64) * 1024, "{f}: {report}");
    }
    assert_valid_junit(&d.join("j.xml"));
    // The PR comment: within GitHub's 65,536 characters (and the template's
    // 60,000-byte cut), its three lines first, the table cut with a line
    // that says so, the markers last.
    let pr = std::fs::read_to_string(d.join("pr.md")).unwrap();
    assert!(pr.len() <= 60_000, "{report}");
    assert!(pr.starts_with("**gate: :x: REGRESSION**"), "{}", &pr[..200]);
    assert!(
        pr.contains("more metrics, see the JUnit/JSON artifact"),
        "{pr}"
    );
    assert!(
        pr.ends_with("<!-- gate-pr-comment:many -->\n<!-- gate-changed:yes -->\n"),
        "{}",
        &pr[pr.len() - 300..]
    );
    for line in pr.lines() {
        assert!(line.len() <= 2_000, "a {} byte line", line.len());
    }
}
