//! Issue 30.5 and 30.6 through the real binary: help grouped under
//! headings, progress that says how far and how long is left (plain lines
//! in a log), a capture that refuses a failed run before spending the next,
//! "did you mean" for mistyped metric ids, words for a run without GPU,
//! "wrote F" for files written, aligned suite table.

use crate::common;

use common::*;
use std::time::Duration;

#[test]
fn check_help_is_grouped_under_headings() {
    let dir = tempfile::tempdir().unwrap();
    let (help, _) = output(&gate(dir.path()).args(["check", "--help"]).output().unwrap());
    let headings: Vec<&str> = help
        .lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .collect();
    for h in [
        "Baseline and judging:",
        "Accepting an intended regression:",
        "Reports:",
        "Measurement (what runs, for how long, how it is sampled):",
        "History (runs recorded for trends and drift):",
    ] {
        assert!(headings.contains(&h), "no heading {h:?} in {headings:?}");
    }
    // Under "Options:" only what belongs to every command.
    let options = &help[help.find("\nOptions:").unwrap()..];
    let options = &options[..options[1..].find("\n\n").unwrap_or(options.len() - 1) + 1];
    let flags = options
        .lines()
        .filter(|l| l.trim_start().starts_with("--"))
        .count();
    assert!(flags <= 3, "Options holds {flags} flags:\n{options}");
}

#[test]
fn a_recording_in_a_log_says_how_far_it_is_and_how_long_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let out = gate(dir.path())
        .args([
            "record",
            "--no-gpu",
            "--warmup",
            "0s",
            "--duration",
            "2s",
            "-o",
            "t.jsonl",
        ])
        .args(["--", "sleep", "30"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("gate: recording: "))
        .unwrap_or_else(|| panic!("no progress line:\n{stderr}"));
    assert!(line.contains(" of 2s, ~"), "{line}");
    assert!(line.ends_with(" left"), "{line}");
    // Plain lines in a log: no cursor movement.
    assert!(
        !stderr.contains('\r') && !stderr.contains("\x1b["),
        "{stderr:?}"
    );
}

#[test]
fn capture_refuses_a_failed_run_before_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = gate(dir.path())
        .args(["capture", "--baseline", "b", "--runs", "3", "--no-gpu"])
        .args(["--warmup", "0s", "--", "false"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("gate: run 1/3"), "{stderr}");
    assert!(
        !stderr.contains("gate: run 2/3"),
        "a second run after a failed one:\n{stderr}"
    );
    assert!(stderr.contains("run 1"), "{stderr}");
}

#[test]
fn mistyped_metric_ids_get_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("gate.toml"),
        "[metrics.sm_activ_pct]\nrelative = 0.05\n",
    )
    .unwrap();
    let t = trace(d, "t.jsonl", &healthy(1));
    let out = gate(d)
        .args(["capture", "--baseline", "b", "--replay"])
        .arg(&t)
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("did you mean 'sm_active_pct'?"), "{stderr}");
    // gate history --metric: a run recorded, the id mistyped.
    std::fs::remove_file(d.join("gate.toml")).unwrap();
    let t2 = trace(d, "t2.jsonl", &healthy(2));
    let cap = gate(d)
        .args([
            "capture",
            "--baseline",
            "b",
            "--history",
            "h.sqlite",
            "--replay",
        ])
        .arg(&t)
        .arg(&t2)
        .output()
        .unwrap();
    assert!(cap.status.success(), "{}", output(&cap).1);
    let out = gate(d)
        .args([
            "history",
            "--history",
            "h.sqlite",
            "--metric",
            "sm_activ_pct",
        ])
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert!(stderr.contains("did you mean 'sm_active_pct'?"), "{stderr}");
}

#[test]
fn a_run_without_gpu_is_said_in_words_and_every_file_written_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rec = gate(d)
        .args([
            "record",
            "--no-gpu",
            "--warmup",
            "0s",
            "--duration",
            "3s",
            "-o",
            "t.jsonl",
        ])
        .args(["--", "sleep", "30"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(rec.status.success(), "{}", output(&rec).1);
    let cap = gate(d)
        .args(["capture", "--baseline", "host", "--replay", "t.jsonl"])
        .output()
        .unwrap();
    let (stdout, stderr) = output(&cap);
    assert!(cap.status.success(), "{stderr}");
    assert!(
        stdout.contains("on no GPU (host counters only)"),
        "{stdout}"
    );
    assert!(!stdout.contains("none x0"), "{stdout}");
    let rep = gate(d)
        .args([
            "report",
            "t.jsonl",
            "--html",
            "out/r.html",
            "--json",
            "out/r.json",
        ])
        .output()
        .unwrap();
    let (_, stderr) = output(&rep);
    assert!(rep.status.success(), "{stderr}");
    for f in ["out/r.html", "out/r.json"] {
        assert!(d.join(f).is_file(), "{f}");
        assert!(stderr.contains("gate: wrote the --"), "{stderr}");
        assert!(
            stderr.contains(&format!("'{f}'")),
            "{f} not named:\n{stderr}"
        );
    }
}

/// On a terminal (a pseudo-terminal from util-linux `script`): a bar with
/// the time left, and the benchmark's own lines each on a row of their own.
#[test]
fn a_recording_on_a_terminal_draws_a_bar_and_keeps_output_lines_whole() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "script (util-linux) is needed for the terminal test"
        );
        eprintln!("SKIP: no `script` (util-linux) to give gate a terminal");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let gate = assert_cmd::cargo::cargo_bin("gate");
    let line = format!(
        "{} record --no-gpu --warmup 0s --duration 3s -o t.jsonl -- sh -c 'sleep 1; echo hello-from-bench; sleep 30'",
        gate.display()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(dir.path())
        .env_remove("NO_COLOR")
        .env("TERM", "xterm")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).replace("\x1b[2K", "");
    assert!(out.status.success(), "{text}");
    let rows: Vec<&str> = text.split(['\r', '\n']).collect();
    assert!(
        rows.iter()
            .any(|r| r.starts_with("gate: [") && r.contains(" left")),
        "no bar with the time left:\n{text:?}"
    );
    assert!(
        rows.contains(&"hello-from-bench"),
        "the line shares a row:\n{text:?}"
    );
    assert!(
        rows.iter().any(|r| r.starts_with("gate: trace written to")),
        "{text:?}"
    );
}
