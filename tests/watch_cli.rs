//! `gate watch --replay`: the deterministic twin of a live watch, through
//! the real binary (the window engine itself is unit-tested in src/watch.rs).

mod common;

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
