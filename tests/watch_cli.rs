//! `gate watch --replay`: the deterministic twin of a live watch, through
//! the real binary (the window engine itself is unit-tested in src/watch.rs).

use crate::common;

use common::gate;
use std::path::Path;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/traces")
        .join(name)
        .display()
        .to_string()
}

const RULE: &str = r#"
[rules.shared_gpu]
severity = "high"
title = "Another job holds the SMs"
when = "other_sm_share_pct.mean > 20"
for = "10s"
"#;

#[test]
fn replay_alerts_with_rule_window_evidence_and_pids() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("watch.toml"), RULE).unwrap();
    let out = gate(dir.path())
        .args(["watch", "--config", "watch.toml", "--replay"])
        .arg(fixture("contention.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let alerts: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is one JSON alert"))
        .collect();
    let a = alerts
        .iter()
        .find(|a| a["rule"] == "shared_gpu" && a["state"] == "firing")
        .unwrap_or_else(|| panic!("no shared_gpu alert in {stdout}"));
    assert_eq!(a["window_s"], 10.0);
    assert!(a["evidence"][0]
        .as_str()
        .unwrap()
        .contains("other_sm_share_pct"));
    let pids = a["pids"].as_array().unwrap();
    assert!(
        pids.iter().any(|p| p["in_target"] == false),
        "the other job's PID is named: {pids:?}"
    );
    // The human line goes to stderr, never to stdout.
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("FIRING shared_gpu"), "{stderr}");
    // The same replay gives the same alerts (deterministic twin).
    let again = gate(dir.path())
        .args(["watch", "--config", "watch.toml", "--replay"])
        .arg(fixture("contention.jsonl"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(again.stdout).unwrap(), stdout);
}

#[test]
fn exit_on_alert_stops_with_exit_1_and_a_healthy_run_stays_quiet() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("watch.toml"), RULE).unwrap();
    gate(dir.path())
        .args([
            "watch",
            "--config",
            "watch.toml",
            "--exit-on-alert",
            "--replay",
        ])
        .arg(fixture("contention.jsonl"))
        .assert()
        .code(1);
    let out = gate(dir.path())
        .args([
            "watch",
            "--config",
            "watch.toml",
            "--exit-on-alert",
            "--replay",
        ])
        .arg(fixture("healthy-1.jsonl"))
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        !stdout.contains("shared_gpu"),
        "healthy run must not fire: {stdout}"
    );
}

#[test]
fn a_bad_for_and_nothing_to_watch_are_one_line_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.toml"),
        "[rules.x]\nwhen = \"gpu_busy_pct.mean > 1\"\nfor = \"5 parsecs\"\n",
    )
    .unwrap();
    let out = gate(dir.path())
        .args(["watch", "--config", "bad.toml", "--replay"])
        .arg(fixture("healthy-1.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("for:"), "{err}");
    gate(dir.path()).args(["watch"]).assert().code(2);
}

#[test]
fn a_window_that_cannot_fill_says_so_and_what_would_fill_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = gate(dir.path())
        .args(["watch", "--replay"])
        .arg(fixture("healthy-1.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("the 1m window (--window) never filled"),
        "{err}"
    );
    assert!(err.contains("pass --window 10s"), "{err}");
    // The suggestion works: with it, the rules are evaluated (no notice).
    let out = gate(dir.path())
        .args(["watch", "--window", "10s", "--replay"])
        .arg(fixture("healthy-1.jsonl"))
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!err.contains("never filled"), "{err}");
}

#[test]
fn a_healthy_h200_trace_does_not_exit_1_on_an_info_rule() {
    // healthy-1 (H200, bf16 training) runs power-capped: clock_power_capped
    // (info, "normal" in docs/rules.md) holds in its windows.
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        gate(dir.path())
            .args([
                "watch",
                "--window",
                "10s",
                "--eval-every",
                "1s",
                "--exit-on-alert",
            ])
            .args(extra)
            .arg("--replay")
            .arg(fixture("healthy-1.jsonl"))
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    // The info rule does hold: asking for info alerts shows it and exits 1.
    let out = run(&["--min-severity", "info"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("\"clock_power_capped\""), "{stdout}");
    let out = run(&["--min-severity", "warning"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("use info, low, medium or high"));
}

#[test]
fn alerts_never_go_into_an_input_a_fifo_or_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("watch.toml"), RULE).unwrap();
    let trace = dir.path().join("contention.jsonl");
    std::fs::copy(fixture("contention.jsonl"), &trace).unwrap();
    let before = std::fs::read(&trace).unwrap();
    let watch = |alerts: &Path| {
        gate(dir.path())
            .args(["watch", "--config", "watch.toml", "--alerts"])
            .arg(alerts)
            .arg("--replay")
            .arg(&trace)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap()
    };
    // The replayed trace itself, and the config.
    for input in [trace.clone(), dir.path().join("watch.toml")] {
        let out = watch(&input);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("is the input"),
            "{out:?}"
        );
    }
    assert_eq!(
        std::fs::read(&trace).unwrap(),
        before,
        "the trace was not touched"
    );
    // A FIFO nobody reads: refused at once, never a hang.
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let out = watch(&fifo);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("FIFO"),
        "{out:?}"
    );
    // A symbolic link is not followed.
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep\n").unwrap();
    let link = dir.path().join("alerts.jsonl");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let out = watch(&link);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("symbolic link"),
        "{out:?}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");
    // A regular file gets the alerts appended, one JSON object a line.
    let ok = dir.path().join("ok.jsonl");
    let out = watch(&ok);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = std::fs::read_to_string(&ok).unwrap();
    assert!(text.lines().count() >= 1, "{text}");
    for l in text.lines() {
        serde_json::from_str::<serde_json::Value>(l).unwrap();
    }
}

#[test]
fn nonsense_cadences_are_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("slow.toml"),
        "[rules.slow]\nwhen = \"gpu_busy_pct.mean > 1\"\nfor = \"10m\"\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        gate(dir.path())
            .args(["watch", "--config", "slow.toml"])
            .args(args)
            .arg("--replay")
            .arg(fixture("healthy-1.jsonl"))
            .output()
            .unwrap()
    };
    // Faster than the trace samples (100 ms).
    let out = run(&["--eval-every", "10ms"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("--eval-every 10ms is shorter than the sampling interval"),
        "{err}"
    );
    assert!(err.contains("use --eval-every 100ms or more"), "{err}");
    // Slower than the shortest window: samples nobody looks at.
    let out = run(&["--window", "10s", "--eval-every", "30s"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("longer than the 10s --window"), "{err}");
}

/// docs/watch.md states the defaults `--help` shows and quotes the notice
/// gate prints for a replay too short for the default window.
#[test]
fn docs_watch_states_what_the_tool_does() {
    let dir = tempfile::tempdir().unwrap();
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/watch.md"))
        .unwrap();
    let help = gate(dir.path()).args(["watch", "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap().replace('\n', " ");
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for (flag, default) in [
        ("--window", "1m"),
        ("--eval-every", "5s"),
        ("--min-severity", "low"),
    ] {
        assert!(
            help.contains(&format!("[default: {default}]")),
            "{flag}: {help}"
        );
        assert!(
            doc.contains(&format!("`{flag}` (default `{default}`)")),
            "docs/watch.md does not give {flag}'s default {default}"
        );
    }
    let out = gate(dir.path())
        .args(["watch", "--replay"])
        .arg(fixture("healthy-1.jsonl"))
        .output()
        .unwrap();
    let notice = String::from_utf8(out.stderr).unwrap();
    let notice = notice.trim_end();
    assert!(doc.contains(notice), "docs/watch.md should quote: {notice}");
    assert!(doc.contains(&format!(
        "{} s",
        gpugate::format::number(gpugate::watch::HOLD_BACK_MS / 1000.0)
    )));
}

/// Issue 43: a rule on `framework.*` fires in `gate report` and, on the
/// same trace, in `gate watch --replay` (it was never evaluated there); a
/// rule on `benchmark.work_rate`, which no sliding window has, is refused
/// by the watch at load with exit 2 instead of never firing.
#[test]
fn a_framework_rule_fires_in_report_and_watch_and_a_work_rate_rule_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("synthetic-torchrun.jsonl");
    let mut sig = gpugate::synthetic::Signature::healthy().with_samples(200);
    sig.command = Some(vec!["torchrun".into(), "train.py".into()]);
    gpugate::synthetic::write(&sig, 1, &trace).unwrap();
    std::fs::write(
        dir.path().join("gate.toml"),
        "[rules.on_torch]\nseverity = \"high\"\ntitle = \"Runs on torch\"\nwhen = \"framework.torch > 0\"\nfor = \"5s\"\n",
    )
    .unwrap();
    let report = gate(dir.path())
        .args(["report", "--config", "gate.toml", "--format", "json"])
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(report.status.code(), Some(0), "{report:?}");
    let stdout = String::from_utf8(report.stdout).unwrap();
    assert!(stdout.contains("\"on_torch\""), "report: {stdout}");
    let watch = gate(dir.path())
        .args(["watch", "--config", "gate.toml", "--replay"])
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(watch.status.code(), Some(0), "{watch:?}");
    let alerts = String::from_utf8(watch.stdout).unwrap();
    let fired = alerts
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .any(|a| a["rule"] == "on_torch" && a["state"] == "firing");
    assert!(fired, "watch: {alerts}");

    std::fs::write(
        dir.path().join("rate.toml"),
        "[rules.slow]\nseverity = \"high\"\ntitle = \"Slow\"\nwhen = \"benchmark.work_rate < 10\"\n",
    )
    .unwrap();
    let refused = gate(dir.path())
        .args(["watch", "--config", "rate.toml", "--replay"])
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let stderr = String::from_utf8(refused.stderr).unwrap();
    assert!(
        stderr.contains("rule 'slow'") && stderr.contains("benchmark.work_rate"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}
