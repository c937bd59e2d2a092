//! `gate capture` / `gate check` / `gate diff` end to end on the real
//! binary, with SYNTHETIC traces (gpugate::synthetic).

use crate::common;

use common::*;
use std::path::Path;

const USER_METRIC_CONFIG: &str = r#"
[user_metrics.samples_per_s]
regex = 'samples_per_s: ([0-9.eE+-]+)'
direction = "higher_is_better"
unit = "1/s"
"#;

/// Capture baseline `name` from healthy runs with seeds 1 and 2.
fn capture_healthy(dir: &Path, name: &str) {
    let t1 = trace(dir, "healthy-1.jsonl", &healthy(1));
    let t2 = trace(dir, "healthy-2.jsonl", &healthy(2));
    gate(dir)
        .args([
            "capture",
            "--baseline",
            name,
            "--commit",
            "abc123",
            "--replay",
        ])
        .arg(&t1)
        .arg(&t2)
        .assert()
        .success();
}

#[test]
fn capture_writes_a_reviewable_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), USER_METRIC_CONFIG).unwrap();
    let t1 = trace(d, "h1.jsonl", &healthy(1));
    let t2 = trace(d, "h2.jsonl", &healthy(2));
    let out = gate(d)
        .args(["capture", "--baseline", "train-h200", "--tag", "model=bf16"])
        .args(["--commit", "deadbeef", "--replay"])
        .arg(&t1)
        .arg(&t2)
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("wrote baseline 'train-h200'"), "{stdout}");
    let text = std::fs::read_to_string(d.join("baselines/train-h200.toml")).unwrap();
    assert!(text.starts_with("# gate baseline 'train-h200'"), "{text}");
    assert!(text
        .contains("gate capture --baseline train-h200 --replace -- python train.py --synthetic"));
    for needle in [
        "schema_version = 1\n",
        "commit = \"deadbeef\"",
        "model = \"bf16\"",
        "[environment]\ngpu_model = \"NVIDIA H200\"\ngpu_count = 1\n",
        "interval_ms = 100\nwarmup_ms = 2000\n",
        "steady_window = ",
        "[metrics.sm_active_pct]\nunit = \"%\"\ndirection = \"higher_is_better\"\nstatistic = \"mean\"\ngated = true\nn = 1200\n",
        "[metrics.wall_time_s]",
        "[metrics.samples_per_s]\nunit = \"1/s\"",
        "runs = [\n  { value = ",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    // Two runs, each with its own summary.
    let sm = text.split("[metrics.sm_active_pct]").nth(1).unwrap();
    let runs_block = sm
        .split("runs = [\n")
        .nth(1)
        .unwrap()
        .split("\n]")
        .next()
        .unwrap();
    assert_eq!(runs_block.lines().count(), 2, "{runs_block}");
    // The baseline reads back (deny_unknown_fields) and stays stable.
    let b = gpugate::baseline::parse(&text, "x").unwrap();
    assert_eq!(b.capture.runs, 2);
    assert!(b.metrics["samples_per_s"].mean > 900.0);
    assert!(
        !text.contains("[gpus."),
        "one GPU: no per-GPU duplicate tables"
    );
}

#[test]
fn existing_baseline_needs_replace_and_shows_the_diff() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    capture_healthy(d, "b");
    let path = d.join("baselines/b.toml");
    let before = std::fs::read(&path).unwrap();
    let t3 = trace(d, "fp32.jsonl", &run(Signature::fp32_no_tf32(), 3));
    let out = gate(d)
        .args(["capture", "--baseline", "b", "--replay"])
        .arg(&t3)
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--- a/baselines/b.toml"), "{stderr}");
    assert!(stderr.contains("@@"), "{stderr}");
    assert!(stderr.contains("pass --replace"), "{stderr}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "file unchanged");

    gate(d)
        .args(["capture", "--baseline", "b", "--replace", "--replay"])
        .arg(&t3)
        .assert()
        .success();
    let after = std::fs::read_to_string(&path).unwrap();
    assert!(after.contains("runs = 1\n"));
    let b = gpugate::baseline::parse(&after, "b").unwrap();
    assert!(b.metrics["tensor_pct"].mean < 5.0);
}

#[test]
fn concurrent_captures_of_one_baseline_do_not_corrupt_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t1 = trace(d, "h1.jsonl", &healthy(1));
    let children: Vec<_> = (0..4)
        .map(|_| {
            std::process::Command::new(assert_cmd::cargo::cargo_bin("gate"))
                .current_dir(d)
                .args(["capture", "--baseline", "race", "--commit", "x", "--replay"])
                .arg(&t1)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let codes: Vec<i32> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap().status.code().unwrap())
        .collect();
    assert_eq!(codes.iter().filter(|c| **c == 0).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == 2).count(), 3, "{codes:?}");
    let text = std::fs::read_to_string(d.join("baselines/race.toml")).unwrap();
    gpugate::baseline::parse(&text, "race").unwrap();
}

#[test]
fn healthy_run_passes_and_reports_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), USER_METRIC_CONFIG).unwrap();
    capture_healthy(d, "train");
    let t3 = trace(d, "healthy-3.jsonl", &healthy(3));
    let out = gate(d)
        .args([
            "check",
            "--baseline",
            "train",
            "--junit",
            "j.xml",
            "--markdown",
            "r.md",
        ])
        .args(["--json", "r.json", "--openmetrics", "m.txt", "--replay"])
        .arg(&t3)
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("VERDICT: PASS (exit 0)"), "{stdout}");
    assert!(
        !stdout.contains("\x1b["),
        "no colour when stdout is not a TTY"
    );
    // First-class metrics first; the declared throughput decided, so the
    // counters are context and a healthy run shows none of them moving.
    let wall = stdout.find("wall_time_s").unwrap();
    let tput = stdout.find("samples_per_s").unwrap();
    assert!(wall < tput, "{stdout}");
    assert!(!stdout.contains("sm_active_pct"), "{stdout}");

    assert_valid_junit(&d.join("j.xml"));
    let junit = std::fs::read_to_string(d.join("j.xml")).unwrap();
    assert!(junit.contains("failures=\"0\" errors=\"0\""), "{junit}");
    assert!(junit.contains("classname=\"gate.train\" name=\"samples_per_s\""));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["verdict"], "pass");
    let md = std::fs::read_to_string(d.join("r.md")).unwrap();
    assert!(
        md.starts_with("### gate: PASS against baseline `train`"),
        "{md}"
    );
    let om = std::fs::read_to_string(d.join("m.txt")).unwrap();
    assert!(om.ends_with("# EOF\n"));
    // Base units, the statistic as a label (issue 10).
    assert!(
        om.contains("gate_sm_active_ratio{baseline=\"train\",statistic=\"mean\"} "),
        "{om}"
    );
    assert!(om.contains("# UNIT gate_sm_active_ratio ratio\n"), "{om}");
    assert!(
        om.contains("gate_samples_per_second{baseline=\"train\",statistic=\"mean\"} "),
        "{om}"
    );

    // A replayed trace gives the same report byte for byte.
    let again = check_replay(d, "train", &["--format", "json"], &t3);
    let first = check_replay(d, "train", &["--format", "json"], &t3);
    assert_eq!(again.stdout, first.stdout);
    assert_eq!(
        String::from_utf8_lossy(&first.stdout),
        std::fs::read_to_string(d.join("r.json")).unwrap()
    );
}

/// The pathologies and the gated metrics each must move (docs/counters.md).
fn pathologies() -> Vec<(Signature, &'static [&'static str])> {
    vec![
        (
            Signature::launch_storm(),
            &["gpu_busy_pct", "sm_active_pct", "tensor_pct"],
        ),
        (Signature::fp32_no_tf32(), &["tensor_pct"]),
        (Signature::memory_bound(), &["tensor_pct"]),
        (
            Signature::pageable_h2d(),
            &["gpu_busy_pct", "sm_active_pct"],
        ),
        (Signature::sync_stall(), &["gpu_busy_pct", "sm_active_pct"]),
        (Signature::host_bound(), &["gpu_busy_pct", "sm_active_pct"]),
        (
            Signature::contention(),
            &["other_processes", "other_sm_share_pct", "tensor_pct"],
        ),
    ]
}

#[test]
fn every_pathology_regresses_and_names_what_moved() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), USER_METRIC_CONFIG).unwrap();
    capture_healthy(d, "train");
    for (i, (sig, expected)) in pathologies().into_iter().enumerate() {
        let p = sig.name;
        let name = format!("{p}.jsonl");
        let t = trace(d, &name, &run(sig, 10 + i as u64));
        let junit = d.join(format!("{p}.xml"));
        let out = gate(d)
            .args([
                "check",
                "--baseline",
                "train",
                "--format",
                "json",
                "--junit",
            ])
            .arg(&junit)
            .arg("--replay")
            .arg(&t)
            .output()
            .unwrap();
        let (stdout, stderr) = output(&out);
        // A job outside the benchmark's tree makes the run DISTURBED (exit
        // 3, issue 38): the same throughput drop, no evidence about the
        // change; its own counters are context of another kind.
        let disturbed = p == "contention";
        let (code, verdict) = if disturbed {
            (3, "disturbed")
        } else {
            (1, "regression")
        };
        assert_eq!(out.status.code(), Some(code), "{p}: {stderr}");
        let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(r["verdict"], verdict);
        let regressed: Vec<String> = r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["verdict"] == "regression")
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect();
        // The declared throughput decided the run; the counters that moved
        // are context, each beyond its noise in the bad direction.
        let moved: Vec<String> = r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| {
                (m["why"] == "decided_by_benchmark" || m["why"] == "disturbance")
                    && m["z"].as_f64().is_some_and(|z| z > 1.0)
            })
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect();
        for id in expected {
            assert!(moved.iter().any(|r| r == id), "{p}: {id} not in {moved:?}");
        }
        assert!(
            regressed.iter().any(|r| r == "samples_per_s"),
            "{p}: the benchmark's own throughput fell too: {regressed:?}"
        );
        assert!(
            !regressed.iter().any(|r| r == "wall_time_s"),
            "same length run: {regressed:?}"
        );
        assert_valid_junit(&junit);
        let xml = std::fs::read_to_string(&junit).unwrap();
        let outcome = if disturbed {
            "<error type=\"disturbed\""
        } else {
            "<failure type=\"regression\""
        };
        assert!(xml.contains(outcome), "{xml}");
    }
}

#[test]
fn failed_benchmarks_are_errors_never_passes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    capture_healthy(d, "train");
    // The benchmark's own failure is 5 (never retried); a trace cut short
    // is a measurement problem, 3.
    let cases = [
        (
            "exit1.jsonl",
            Signature {
                exit_code: Some(1),
                ..healthy(5)
            },
            "exited with code 1",
            5,
        ),
        (
            "sig.jsonl",
            Signature {
                signal: Some(9),
                ..healthy(6)
            },
            "killed by signal 9 (SIGKILL)",
            5,
        ),
        (
            "cut.jsonl",
            Signature {
                truncated: true,
                ..healthy(7)
            },
            "truncated",
            3,
        ),
    ];
    for (name, s, needle, code) in cases {
        let t = trace(d, name, &s);
        let junit = d.join(format!("{name}.xml"));
        let out = gate(d)
            .args(["check", "--baseline", "train", "--junit"])
            .arg(&junit)
            .arg("--replay")
            .arg(&t)
            .output()
            .unwrap();
        let (stdout, _) = output(&out);
        assert_eq!(out.status.code(), Some(code), "{name}: {stdout}");
        assert!(stdout.contains("VERDICT: ERROR"), "{stdout}");
        assert!(stdout.contains(needle), "{name}: {stdout}");
        assert_valid_junit(&junit);
        let xml = std::fs::read_to_string(&junit).unwrap();
        assert!(xml.contains("<error type=\"error\""), "{xml}");
    }
    // A failed run can not become a baseline either.
    let bad = trace(
        d,
        "bad.jsonl",
        &Signature {
            exit_code: Some(2),
            ..healthy(8)
        },
    );
    let out = gate(d)
        .args(["capture", "--baseline", "nope", "--replay"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert!(!d.join("baselines/nope.toml").exists());
}

#[test]
fn environment_mismatch_is_invalid_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    capture_healthy(d, "train");
    let a100 = trace(
        d,
        "a100.jsonl",
        &Signature {
            gpu_name: "NVIDIA A100-SXM4-80GB".into(),
            ..healthy(3)
        },
    );
    let out = check_replay(d, "train", &[], &a100);
    let (stdout, _) = output(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("VERDICT: INVALID"), "{stdout}");
    assert!(stdout.contains("GPU model 'NVIDIA H200' (baseline) vs 'NVIDIA A100-SXM4-80GB'"));
    gate(d)
        .args([
            "check",
            "--baseline",
            "train",
            "--allow-env-mismatch",
            "--replay",
        ])
        .arg(&a100)
        .assert()
        .code(0);
    let driver = trace(
        d,
        "drv.jsonl",
        &Signature {
            driver: "570.86.15".into(),
            ..healthy(4)
        },
    );
    let out = check_replay(d, "train", &[], &driver);
    assert_eq!(out.status.code(), Some(3));
    assert!(output(&out)
        .0
        .contains("driver major version 580 (baseline) vs 570"));
}

#[test]
fn too_few_samples_is_unmeasured() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    capture_healthy(d, "train");
    let short = trace(d, "short.jsonl", &healthy(3).with_samples(12));
    let out = check_replay(d, "train", &[], &short);
    let (stdout, _) = output(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("VERDICT: UNMEASURED"), "{stdout}");
    assert!(stdout.contains("only 12 valid steady samples"), "{stdout}");
}

#[test]
fn gated_metric_missing_from_the_new_run_does_not_pass() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    capture_healthy(d, "train");
    let no_gpm = trace(
        d,
        "nogpm.jsonl",
        &Signature {
            missing_columns: vec!["sm_active_pct", "tensor_pct"],
            ..healthy(3)
        },
    );
    let out = check_replay(d, "train", &["--junit", "j.xml"], &no_gpm);
    let (stdout, _) = output(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(
        stdout.contains("not measured in this run: sm_active_pct, tensor_pct"),
        "{stdout}"
    );
    assert_valid_junit(&d.join("j.xml"));
}

#[test]
fn user_metric_regression_alone_fails_and_is_listed_first() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), USER_METRIC_CONFIG).unwrap();
    capture_healthy(d, "train");
    let slow = trace(d, "slow.jsonl", &throughput(healthy(3), 0.7));
    let out = check_replay(d, "train", &["--format", "json"], &slow);
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let metrics = r["metrics"].as_array().unwrap();
    assert_eq!(metrics[0]["id"], "wall_time_s");
    assert_eq!(metrics[1]["id"], "samples_per_s");
    assert_eq!(metrics[1]["verdict"], "regression");
    assert!(metrics[1]["change_pct"].as_f64().unwrap() < -25.0);
    assert_eq!(r["counts"]["regression"], 1, "only throughput moved");

    // Metrics-file source, median aggregate.
    std::fs::write(
        d.join("gate.toml"),
        "[user_metrics.throughput]\nregex = 'throughput_samples_per_s=([0-9.]+)'\nsource = \"metrics_file\"\ndirection = \"higher_is_better\"\naggregate = \"median\"\n",
    )
    .unwrap();
    let out = check_replay(d, "train", &["--format", "json"], &slow);
    let r: serde_json::Value = serde_json::from_str(&output(&out).0).unwrap();
    let tp = metric(&r, "throughput").clone();
    assert_eq!(tp["verdict"], "missing", "not in the baseline: {tp}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "missing from the baseline does not fail"
    );
}

#[test]
fn noise_between_baseline_runs_passes_moves_inside_it_and_leaves_larger_ones_open() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("gate.toml"),
        format!("{USER_METRIC_CONFIG}relative = 0.05\n"),
    )
    .unwrap();
    // Baseline runs whose throughput differs by +-15 % run to run.
    let runs: Vec<_> = [0.85, 1.0, 1.15]
        .iter()
        .enumerate()
        .map(|(i, s)| {
            trace(
                d,
                &format!("b{i}.jsonl"),
                &throughput(healthy(i as u64 + 1), *s),
            )
        })
        .collect();
    gate(d)
        .args(["capture", "--baseline", "noisy", "--replay"])
        .args(&runs)
        .assert()
        .success();
    // 10 % slower: beyond the 5 % threshold, inside the measured spread
    // itself (the plug-in band, ~22 %): no evidence of a change, a pass.
    let t = trace(d, "new10.jsonl", &throughput(healthy(9), 0.9));
    let out = check_replay(d, "noisy", &["--format", "json"], &t);
    let r: serde_json::Value = serde_json::from_str(&output(&out).0).unwrap();
    let tp = metric(&r, "samples_per_s").clone();
    assert_eq!(
        (tp["verdict"].as_str(), tp["why"].as_str()),
        (Some("pass"), Some("within_measured_noise")),
        "{tp}"
    );
    assert_eq!(out.status.code(), Some(0));
    // 24 % slower: beyond the measured spread, inside the t band (~29 %)
    // that allows for how little three runs know of it: left open.
    let t = trace(d, "new.jsonl", &throughput(healthy(9), 0.76));
    let out = check_replay(d, "noisy", &["--format", "json"], &t);
    let r: serde_json::Value = serde_json::from_str(&output(&out).0).unwrap();
    let tp = metric(&r, "samples_per_s").clone();
    assert_eq!(tp["verdict"], "inconclusive", "{tp}");
    assert!(tp["noise"].as_f64().unwrap() > 250.0, "{tp}");
    // Never green on a bad move the noise leaves open (issue 17): exit 4.
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(r["verdict"], "inconclusive");
    assert!(r["reasons"][0].as_str().unwrap().contains("samples_per_s"));
    // A team that prefers green says so in gate.toml: exit 0, still
    // reported as inconclusive, with a warning.
    std::fs::write(
        d.join("gate.toml"),
        format!("{USER_METRIC_CONFIG}relative = 0.05\n\n[verdict]\ninconclusive = \"pass\"\n"),
    )
    .unwrap();
    let out = check_replay(d, "noisy", &["--format", "json"], &t);
    let r: serde_json::Value = serde_json::from_str(&output(&out).0).unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(r["verdict"], "inconclusive");
    assert!(r["warnings"]
        .to_string()
        .contains("INCONCLUSIVE counted as a pass"));
    let junit = d.join("j.xml");
    let out = check_replay(d, "noisy", &["--junit", junit.to_str().unwrap()], &t);
    assert_eq!(out.status.code(), Some(0));
    assert!(output(&out).0.contains("VERDICT: INCONCLUSIVE (exit 0)"));
    assert!(std::fs::read_to_string(&junit)
        .unwrap()
        .contains("<skipped type=\"inconclusive\" message="));
}

#[test]
fn improvements_fail_only_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), USER_METRIC_CONFIG).unwrap();
    capture_healthy(d, "train");
    let fast = trace(d, "fast.jsonl", &throughput(healthy(3), 1.5));
    gate(d)
        .args(["check", "--baseline", "train", "--replay"])
        .arg(&fast)
        .assert()
        .code(0)
        .stdout(predicates::str::contains("improvement"));
    let out = gate(d)
        .args([
            "check",
            "--baseline",
            "train",
            "--fail-on-improvement",
            "--junit",
            "j.xml",
        ])
        .arg("--replay")
        .arg(&fast)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(output(&out).0.contains("--fail-on-improvement"));
    assert_valid_junit(&d.join("j.xml"));
}

#[test]
fn straggler_gpu_is_judged_per_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let b1 = trace_gpus(d, "b1.jsonl", &healthy(1), 4);
    let b2 = trace_gpus(d, "b2.jsonl", &healthy(2), 4);
    gate(d)
        .args(["capture", "--baseline", "multi", "--replay"])
        .arg(&b1)
        .arg(&b2)
        .assert()
        .success();
    let text = std::fs::read_to_string(d.join("baselines/multi.toml")).unwrap();
    assert!(text.contains("[gpus.gpu3]\nindex = 3\n"), "per-GPU tables");
    assert!(text.contains("[gpus.gpu3.metrics.sm_active_pct]"));
    let t = trace_gpus(
        d,
        "straggler.jsonl",
        &healthy(3).with_gpu_like(2, &Signature::sync_stall()),
        4,
    );
    let out = gate(d)
        .args([
            "check",
            "--baseline",
            "multi",
            "--junit",
            "j.xml",
            "--format",
            "json",
        ])
        .arg("--replay")
        .arg(&t)
        .output()
        .unwrap();
    let (stdout, _) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let per_gpu: Vec<(u64, String)> = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["verdict"] == "regression" && m["gpu"].is_u64())
        .map(|m| {
            (
                m["gpu"].as_u64().unwrap(),
                m["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(per_gpu.iter().all(|(g, _)| *g == 2), "{per_gpu:?}");
    assert!(
        per_gpu.contains(&(2, "sm_active_pct".into())),
        "{per_gpu:?}"
    );
    assert_valid_junit(&d.join("j.xml"));
    let xml = std::fs::read_to_string(d.join("j.xml")).unwrap();
    assert!(xml.contains("classname=\"gate.multi.gpu2\" name=\"sm_active_pct\""));
}

#[test]
fn multi_node_judges_each_node_and_the_aggregate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n0 = trace(d, "n0.jsonl", &healthy(1));
    let n1 = trace(d, "n1.jsonl", &healthy(2));
    gate(d)
        .args(["capture", "--baseline", "mn", "--multi-node", "--replay"])
        .arg(&n0)
        .arg(&n1)
        .assert()
        .success();
    let text = std::fs::read_to_string(d.join("baselines/mn.toml")).unwrap();
    assert!(text.contains("runs = 1\nmulti_node = true\n"), "{text}");
    let c0 = trace(d, "c0.jsonl", &healthy(3));
    let c1 = trace(d, "c1.jsonl", &run(Signature::host_bound(), 4));
    let out = gate(d)
        .args([
            "check",
            "--baseline",
            "mn",
            "--multi-node",
            "--junit",
            "j.xml",
        ])
        .args(["--format", "json", "--replay"])
        .arg(&c0)
        .arg(&c1)
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let reg: Vec<String> = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["verdict"] == "regression")
        .map(|m| format!("{}:{}", m["node"], m["id"].as_str().unwrap()))
        .collect();
    assert!(reg.contains(&"1:gpu_busy_pct".to_string()), "{reg:?}");
    assert!(
        !reg.iter().any(|x| x.starts_with("0:")),
        "node 0 is healthy: {reg:?}"
    );
    assert!(
        reg.contains(&"null:gpu_busy_pct".to_string()),
        "aggregate too: {reg:?}"
    );
    assert_valid_junit(&d.join("j.xml"));
    let xml = std::fs::read_to_string(d.join("j.xml")).unwrap();
    assert!(xml.contains("classname=\"gate.mn.node1\" name=\"gpu_busy_pct\""));
    assert!(xml.contains("classname=\"gate.mn.node0\" name=\"gpu_busy_pct\""));
}

#[test]
fn github_actions_gets_annotations_summary_and_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    capture_healthy(d, "train");
    let t = trace(d, "storm.jsonl", &run(Signature::launch_storm(), 3));
    std::fs::write(d.join("summary.md"), "# earlier step\n").unwrap();
    let out = gate(d)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", d.join("summary.md"))
        .env("GITHUB_OUTPUT", d.join("out.txt"))
        .args(["check", "--baseline", "train", "--replay"])
        .arg(&t)
        .output()
        .unwrap();
    let (stdout, _) = output(&out);
    assert_eq!(out.status.code(), Some(1));
    let ann: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("::error "))
        .collect();
    assert!(!ann.is_empty() && ann.len() <= 10, "{stdout}");
    assert!(ann.iter().any(|a| a.contains("sm_active_pct")), "{ann:?}");
    assert!(ann.iter().all(|a| !a[2..].contains('\n')));
    let summary = std::fs::read_to_string(d.join("summary.md")).unwrap();
    assert!(
        summary.starts_with("# earlier step\n### gate: REGRESSION"),
        "{summary}"
    );
    let outputs = std::fs::read_to_string(d.join("out.txt")).unwrap();
    assert!(outputs.contains("verdict=regression\n"), "{outputs}");
    assert!(outputs.contains("regressions="), "{outputs}");
}

#[test]
fn hostile_names_still_give_valid_junit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    capture_healthy(d, "train");
    let t = trace(
        d,
        "we\"ird]]>&<run>\u{1b}.jsonl",
        &Signature {
            command: Some(vec![
                "py\u{1b}[31m".into(),
                "]]>".into(),
                "\u{0}\u{7}".into(),
            ]),
            extra_output: vec!["samples_per_s: 12 \u{1b}[0m ]]> \u{fffe}".into()],
            ..run(Signature::sync_stall(), 3)
        },
    );
    let out = gate(d)
        .args([
            "check",
            "--baseline",
            "train",
            "--junit",
            "j.xml",
            "--markdown",
            "r.md",
            // Another program than the baseline's: judged, and the warning
            // that names both commands is escaped too.
            "--allow-command-change",
        ])
        .arg("--replay")
        .arg(&t)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", output(&out).1);
    assert_valid_junit(&d.join("j.xml"));
    let xml = std::fs::read(d.join("j.xml")).unwrap();
    assert!(
        !xml.contains(&0x1b),
        "control characters never reach the XML"
    );
    // The warning that names the other command, escaped everywhere.
    let md = std::fs::read(d.join("r.md")).unwrap();
    assert!(!md.contains(&0x1b), "nor the Markdown");
    let (stdout, stderr) = output(&out);
    assert!(stdout.contains("not the baseline's benchmark"), "{stdout}");
    assert!(!stdout.contains('\u{1b}') && !stderr.contains('\u{1b}'));
}

#[test]
fn diff_shows_metric_changes_and_the_toml_diff() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    capture_healthy(d, "a");
    let t = trace(d, "fp32.jsonl", &run(Signature::fp32_no_tf32(), 3));
    gate(d)
        .args(["capture", "--baseline", "b", "--replay"])
        .arg(&t)
        .assert()
        .success();
    let out = gate(d).args(["diff", "a", "b"]).output().unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let tensor = stdout
        .lines()
        .find(|l| l.starts_with("tensor_pct "))
        .unwrap();
    assert!(
        tensor.contains("-100") || tensor.contains("-99"),
        "{tensor}"
    );
    // Gated and context as check judges them: without a benchmark metric
    // in gate.toml the utilisations are gated, the pipe mix is context.
    assert!(tensor.ends_with("gated"), "{tensor}");
    let fp32 = stdout.lines().find(|l| l.starts_with("fp32_pct ")).unwrap();
    assert!(fp32.ends_with("context"), "{fp32}");
    // The TOML diff (1,200 lines for a re-capture) only when asked.
    assert!(!stdout.contains("TOML diff:"), "{stdout}");
    assert!(stdout.contains("--toml-diff shows"), "{stdout}");
    let out = gate(d)
        .args(["diff", "a", "b", "--toml-diff"])
        .output()
        .unwrap();
    let stdout = output(&out).0;
    assert!(
        stdout.contains("TOML diff:\n--- baselines/a.toml\n+++ baselines/b.toml"),
        "{stdout}"
    );
    // A baseline against a trace, as JSON.
    let out = gate(d)
        .args(["diff", "baselines/a.toml"])
        .arg(&t)
        .args(["--format", "json", "--toml-diff"])
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_str(&output(&out).0).unwrap();
    let fp32 = metric(&r, "fp32_pct").clone();
    assert!(fp32["b"].as_f64().unwrap() > 70.0, "{fp32}");
    assert!(r["toml_diff"].as_str().unwrap().contains("@@"));
    // Unknown operand: exit 2 with the fix.
    let out = gate(d)
        .args(["diff", "a", "no such/thing"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn baseline_ref_reads_the_target_branch_copy() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(d)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        ok
    };
    if !git(&["init", "-q"]) {
        eprintln!("SKIP: git not available");
        return;
    }
    capture_healthy(d, "train");
    assert!(git(&["add", "baselines/train.toml"]));
    assert!(git(&["commit", "-qm", "baseline"]));
    // The "merge request" lowers its own baseline to let a regression pass.
    let storm = trace(d, "storm.jsonl", &run(Signature::launch_storm(), 3));
    gate(d)
        .args(["capture", "--baseline", "train", "--replace", "--replay"])
        .arg(&storm)
        .assert()
        .success();
    gate(d)
        .args(["check", "--baseline", "train", "--replay"])
        .arg(&storm)
        .assert()
        .code(0);
    let out = check_replay(d, "train", &["--baseline-ref", "HEAD"], &storm);
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("differs from 'HEAD'"), "{stderr}");
    assert!(stdout.contains("HEAD:baselines/train.toml") || stdout.contains("'train'"));
    let out = check_replay(d, "train", &["--baseline-ref", "no-such-ref"], &storm);
    assert_eq!(out.status.code(), Some(2), "{}", output(&out).1);
}

#[test]
fn non_utf8_trace_path_still_gives_valid_reports() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    capture_healthy(d, "train");
    let name = std::ffi::OsStr::from_bytes(b"run-\xff\xfe-\x1b.jsonl");
    let p = d.join(name);
    gpugate::synthetic::write(&run(Signature::launch_storm(), 3), 1, &p).unwrap();
    let out = gate(d)
        .args([
            "check",
            "--baseline",
            "train",
            "--junit",
            "j.xml",
            "--json",
            "r.json",
        ])
        .arg("--replay")
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", output(&out).1);
    assert_valid_junit(&d.join("j.xml"));
    let json = std::fs::read_to_string(d.join("r.json")).unwrap();
    let r: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(r["runs"][0]["source"]
        .as_str()
        .unwrap()
        .contains('\u{fffd}'));
}

/// `gate capture` frees each run's samples once summarised and pools the
/// steady samples it kept in a scratch file (`baseline::pool`): the
/// baseline must be the one pooling every trace in memory gives, byte for
/// byte, for several runs and for the nodes of one run (GPM glitches and a
/// straggler GPU in the data).
#[test]
fn a_capture_that_frees_its_runs_pools_what_memory_would() {
    use gpugate::baseline::{self, BuildMeta};
    use gpugate::summary::Run;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), USER_METRIC_CONFIG).unwrap();
    let config = gpugate::config::Config::load(&d.join("gate.toml"), true).unwrap();
    let sig = |seed| Signature {
        glitch_period: Some(37),
        ..healthy(seed).with_gpu_like(1, &Signature::sync_stall())
    };
    let paths: Vec<_> = (1..=3)
        .map(|s| trace_gpus(d, &format!("r{s}.jsonl"), &sig(s), 3))
        .collect();
    for (name, multi_node) in [("runs", false), ("nodes", true)] {
        let mut cmd = gate(d);
        cmd.args(["capture", "--baseline", name, "--commit", "abc123"]);
        if multi_node {
            cmd.arg("--multi-node");
        }
        cmd.arg("--replay").args(&paths).assert().success();
        let written = std::fs::read_to_string(d.join(format!("baselines/{name}.toml"))).unwrap();
        // The same traces, loaded and pooled in memory.
        let inputs: Vec<Run> = (paths.iter())
            .map(|p| {
                let t = gpugate::trace::Trace::load(&d.join(p)).unwrap();
                let mut run = Run::derive(&t, &config);
                run.keep_samples_in_place(t);
                run
            })
            .collect();
        let created = written
            .lines()
            .find_map(|l| l.strip_prefix("created = \""))
            .unwrap()
            .trim_end_matches('"')
            .to_string();
        let meta = BuildMeta {
            created,
            commit: Some("abc123".into()),
            tags: Default::default(),
        };
        let b = baseline::build(name, &inputs, &config, multi_node, &meta).unwrap();
        let expected = baseline::to_toml(&b, &baseline::refresh_hint(name, &b.capture.command));
        assert_eq!(written, expected, "{name}");
    }
}
