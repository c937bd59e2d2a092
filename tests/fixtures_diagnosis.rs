//! Acceptance: the diagnosis of the REAL traces recorded on an H200
//! (fixtures/traces/*.jsonl, see README/BENCHMARKS). Each pathology's top
//! suspect must be its own rule; healthy runs get no high-severity suspect.

use assert_cmd::Command;
use gpugate::diagnose::{RuleSet, Severity};
use gpugate::summary::summarize;
use gpugate::trace::Trace;
use std::path::{Path, PathBuf};

/// The recorded H200 traces ship with the repository: missing is a failure.
fn fixtures() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/traces");
    assert!(
        dir.join("healthy-1.jsonl").exists(),
        "real fixtures missing in {}",
        dir.display()
    );
    Some(dir)
}

fn suspects(dir: &Path, name: &str) -> Vec<gpugate::diagnose::Finding> {
    let trace = Trace::load(&dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    RuleSet::builtin().diagnose(&summarize(&trace))
}

#[test]
fn each_pathology_names_its_own_cause_first() {
    let Some(dir) = fixtures() else { return };
    let cases = [
        ("launch-storm.jsonl", "kernel_fragmentation"),
        ("fp32-no-tf32.jsonl", "tensor_cores_unused"),
        ("memory-bound.jsonl", "memory_bound"),
        ("pageable-h2d.jsonl", "pcie_h2d_bound"),
        ("sync-stall.jsonl", "sync_stalls"),
        ("host-bound.jsonl", "host_bound"),
        ("contention.jsonl", "gpu_contention"),
    ];
    let mut failures = Vec::new();
    for (file, rule) in cases {
        let f = suspects(&dir, file);
        let got: Vec<String> = f
            .iter()
            .map(|x| format!("{} ({:?}, {})", x.rule, x.severity, x.score))
            .collect();
        if f.first().map(|x| x.rule.as_str()) != Some(rule) {
            failures.push(format!("{file}: expected {rule} first, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn healthy_runs_have_no_high_severity_suspect() {
    let Some(dir) = fixtures() else { return };
    for file in ["healthy-1.jsonl", "healthy-2.jsonl", "healthy-3.jsonl"] {
        let f = suspects(&dir, file);
        let high: Vec<&str> = f
            .iter()
            .filter(|x| x.severity == Severity::High)
            .map(|x| x.rule.as_str())
            .collect();
        assert!(high.is_empty(), "{file}: high-severity suspects {high:?}");
    }
}

#[test]
fn healthy_to_fp32_change_is_explained_as_tensor_cores() {
    let Some(dir) = fixtures() else { return };
    let load = |n: &str| summarize(&Trace::load(&dir.join(n)).unwrap());
    let f =
        RuleSet::builtin().explain_change(&load("healthy-1.jsonl"), &load("fp32-no-tf32.jsonl"));
    assert_eq!(
        f.first().map(|x| x.rule.as_str()),
        Some("tensor_cores_unused"),
        "{f:?}"
    );
    assert!(
        f[0].explanation.contains("tensor activity fell")
            || f[0].explanation.contains("Tensor activity fell")
    );
}

#[test]
fn broken_rule_on_a_real_trace_exits_2() {
    let Some(dir) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, "[rules.oops]\nwhen = \"sm_active_pct.mean <\"\n").unwrap();
    let out = Command::cargo_bin("gate")
        .unwrap()
        .args(["report", "--config"])
        .arg(&bad)
        .arg("--replay")
        .arg(dir.join("healthy-1.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[rules.oops] when: column 21"), "{err}");
}

#[test]
fn reports_of_real_traces_render_and_replay_identically() {
    let Some(dir) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut outs = Vec::new();
    for i in 0..2 {
        let html = tmp.path().join(format!("{i}.html"));
        let out = Command::cargo_bin("gate")
            .unwrap()
            .arg("report")
            .arg(dir.join("contention.jsonl"))
            .arg("--html")
            .arg(&html)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        outs.push((out.stdout, std::fs::read(&html).unwrap()));
    }
    assert_eq!(outs[0], outs[1]);
}

#[test]
fn a_user_rule_can_use_a_user_metric_from_the_benchmark_output() {
    let dir = fixtures().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("gate.toml");
    std::fs::write(
        &cfg,
        r#"
[user_metrics.samples_per_s]
regex = '^final_samples_per_s: ([0-9.eE+-]+)'
direction = "higher_is_better"
aggregate = "last"

[rules.slow_training]
when = "samples_per_s.mean < 100000"
severity = "high"
title = "Training throughput below 100k samples/s"
explanation = "The benchmark reported {samples_per_s.mean} samples/s."
next_steps = ["Compare with the healthy baseline"]
"#,
    )
    .unwrap();
    let run = |trace: &str| {
        let out = Command::cargo_bin("gate")
            .unwrap()
            .args(["report", "--format", "json", "--config"])
            .arg(&cfg)
            .arg(dir.join(trace))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(
        run("host-bound.jsonl").contains("slow_training"),
        "9.5k samples/s must fire"
    );
    assert!(
        !run("healthy-1.jsonl").contains("slow_training"),
        "345k samples/s must not"
    );
}
