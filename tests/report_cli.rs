//! `gate report` end to end on the real binary, driven by SYNTHETIC traces
//! (gpugate::synthetic, docs/counters.md signatures).

use assert_cmd::Command;
use gpugate::synthetic::{self, Signature};
use std::path::{Path, PathBuf};

fn gate() -> Command {
    let mut c = Command::cargo_bin("gate").unwrap();
    c.env("NO_COLOR", "1");
    c
}

fn write_trace(dir: &Path, sig: &Signature, ngpu: usize) -> PathBuf {
    let name = format!("synthetic-{}.jsonl", sig.name);
    synthetic::write_in(sig, ngpu, dir, &name).unwrap()
}

fn stdout_of(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "exit {:?}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn text_report_has_all_sections_and_ranks_the_cause_first() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), &Signature::launch_storm(), 1);
    let out = stdout_of(gate().arg("report").arg(&trace));
    for section in [
        "== 1. Utilization panorama ==",
        "== 2. Suspects (ranked) ==",
        "== 3. Processes on the GPUs ==",
        "== 4. Statistics of the steady window ==",
    ] {
        assert!(out.contains(section), "missing {section}\n{out}");
    }
    assert!(out.contains("1. [HIGH] Launch-bound"), "{out}");
    assert!(out.contains("torch.compile"), "next steps missing\n{out}");
    assert!(out.contains("synthetic"), "provenance note missing");
}

#[test]
fn json_report_is_machine_readable_and_replays_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), &Signature::fp32_no_tf32(), 2);
    let a = stdout_of(gate().args(["report", "--format", "json"]).arg(&trace));
    let b = stdout_of(
        gate()
            .args(["report", "--format", "json", "--replay"])
            .arg(&trace),
    );
    assert_eq!(a, b, "positional and --replay give the same report");
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["runs"][0]["suspects"][0]["rule"], "tensor_cores_unused");
    assert_eq!(v["runs"][0]["gpus"].as_array().unwrap().len(), 2);
}

#[test]
fn html_markdown_and_json_files_are_written_and_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), &Signature::contention(), 2);
    let run = |tag: &str| {
        let html = dir.path().join(format!("r{tag}.html"));
        let md = dir.path().join(format!("r{tag}.md"));
        let json = dir.path().join(format!("r{tag}.json"));
        gate()
            .arg("report")
            .arg(&trace)
            .arg("--html")
            .arg(&html)
            .arg("--markdown")
            .arg(&md)
            .arg("--json")
            .arg(&json)
            .args(["--slice", "2s"])
            .assert()
            .success();
        (
            std::fs::read(&html).unwrap(),
            std::fs::read(&md).unwrap(),
            std::fs::read(&json).unwrap(),
        )
    };
    let first = run("1");
    let second = run("2");
    assert_eq!(first, second, "reports differ between two replays");
    let html = String::from_utf8(first.0).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<script"));
    assert!(!html.contains("print('<b>"), "command line not escaped");
    let md = String::from_utf8(first.1).unwrap();
    assert!(md.contains("### Suspects"));
    assert!(md.contains("2 s slices"));
    let json: serde_json::Value = serde_json::from_slice(&first.2).unwrap();
    assert_eq!(json["runs"][0]["panorama"]["slice_ms"], 2000.0);
}

#[test]
fn user_rules_from_config_fire_override_and_disable() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), &Signature::healthy(), 1);
    let config = dir.path().join("gate.toml");
    std::fs::write(
        &config,
        r#"
[rules.clock_power_capped]
enabled = false

[rules.kernel_fragmentation]
# re-threshold: fire on anything busier than 50 %
when = "gpu_busy_pct.mean > 50"
severity = "low"

[rules.too_hot_for_ci]
when = "temperature_c.max > 55"
severity = "medium"
title = "GPU runs warm"
explanation = "Peak temperature {temperature_c.max}."
next_steps = ["Check the runner's cooling"]
"#,
    )
    .unwrap();
    let out = stdout_of(
        gate()
            .args(["report", "--format", "json", "--config"])
            .arg(&config)
            .arg("--replay")
            .arg(&trace),
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rules: Vec<&str> = v["runs"][0]["suspects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, vec!["too_hot_for_ci", "kernel_fragmentation"]);
    let user = &v["runs"][0]["suspects"][0];
    assert!(user["explanation"]
        .as_str()
        .unwrap()
        .starts_with("Peak temperature 6"));
    assert_eq!(v["runs"][0]["suspects"][1]["severity"], "low");
}

#[test]
fn broken_rule_exits_2_naming_rule_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), &Signature::healthy(), 1);
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[rules.slow_feed]\nseverity = \"high\"\nwhen = \"gpu_busy_pct.mean < 50 and target_cpu_pct.maen > 80\"\n",
    )
    .unwrap();
    let out = gate()
        .args(["report", "--config"])
        .arg(&bad)
        .arg("--replay")
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("bad.toml"), "{err}");
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("[rules.slow_feed] when: column 43"), "{err}");
    assert!(err.contains("'maen'"), "{err}");
    assert_eq!(err.lines().count(), 1, "one-line error: {err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_inputs_exit_2() {
    gate().arg("report").assert().code(2);
    gate()
        .args(["report", "/nonexistent/trace.jsonl"])
        .assert()
        .code(2);
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), &Signature::healthy(), 1);
    gate()
        .arg("report")
        .arg(&trace)
        .args(["--config", "/nonexistent/gate.toml"])
        .assert()
        .code(2);
    gate()
        .arg("report")
        .arg(&trace)
        .args(["--slice", "1ms"])
        .assert()
        .code(2);
    // Not a trace.
    let junk = dir.path().join("junk.jsonl");
    std::fs::write(&junk, "hello\n").unwrap();
    gate().arg("report").arg(&junk).assert().code(2);
}

#[test]
fn several_traces_make_one_report_each() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_trace(dir.path(), &Signature::memory_bound(), 1);
    let b = write_trace(dir.path(), &Signature::pageable_h2d(), 1);
    let out = stdout_of(gate().args(["report", "--format", "json"]).arg(&a).arg(&b));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["runs"][0]["suspects"][0]["rule"], "memory_bound");
    assert_eq!(v["runs"][1]["suspects"][0]["rule"], "pcie_h2d_bound");
}

/// A JSON-only report joins each run's timeline as it is explained (the
/// memory a 64-node report held was its full panoramas): the document is
/// the same bytes as when a Markdown file is also written and the timeline
/// is joined only while the JSON is written.
#[test]
fn a_json_only_report_joins_the_timeline_early_to_the_same_document() {
    let dir = tempfile::tempdir().unwrap();
    // 2,500 s at 1 s slices: past the document's 1,200 slices per GPU.
    let traces: Vec<PathBuf> = (1..=3)
        .map(|seed| {
            let sig = Signature::healthy().with_samples(25_000).with_seed(seed);
            synthetic::write_in(&sig, 2, dir.path(), &format!("long-{seed}.jsonl")).unwrap()
        })
        .collect();
    for runs in [&traces[..1], &traces[..]] {
        let json_only = stdout_of(gate().arg("report").args(["--format", "json"]).args(runs));
        let md = dir.path().join("r.md");
        let _ = std::fs::remove_file(&md);
        let with_md = stdout_of(
            gate()
                .arg("report")
                .args(["--format", "json", "--markdown"])
                .arg(&md)
                .args(runs),
        );
        assert_eq!(json_only, with_md, "{} run(s)", runs.len());
        let doc: serde_json::Value = serde_json::from_str(&json_only).unwrap();
        let slices = doc["runs"][0]["panorama"]["gpus"][0]["slices"]
            .as_array()
            .unwrap();
        assert!(slices.len() <= 1200 / runs.len(), "{} slices", slices.len());
        assert!(
            slices.len() >= 1200 / runs.len() / 2,
            "{} slices",
            slices.len()
        );
    }
}
