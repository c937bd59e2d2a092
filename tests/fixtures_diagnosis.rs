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

/// The GPM-stripped twins (`fixtures/traces/nogpm/`) are what
/// `scripts/strip-gpm.sh` makes of the recorded traces today, and the
/// README there names each one's source.
#[test]
fn gpm_stripped_twins_are_current() {
    let dir = fixtures().unwrap();
    let twins = dir.join("nogpm");
    let readme = std::fs::read_to_string(twins.join("README.md")).unwrap();
    let mut stale = Vec::new();
    let mut recorded = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        recorded += 1;
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let want =
            gpugate::trace::nogpm::strip_gpm(&text, &format!("fixtures/traces/{name}")).unwrap();
        match std::fs::read_to_string(twins.join(&name)) {
            Ok(have) if have == want => {}
            Ok(_) => stale.push(format!("{name}: differs")),
            Err(e) => stale.push(format!("{name}: {e}")),
        }
        if !readme.contains(&format!("- `{name}`: from `fixtures/traces/{name}`")) {
            stale.push(format!("{name}: not in nogpm/README.md"));
        }
    }
    let twins_n = std::fs::read_dir(&twins)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .and_then(|x| x.to_str())
                == Some("jsonl")
        })
        .count();
    assert_eq!(twins_n, recorded, "a twin without a recorded trace");
    assert!(
        stale.is_empty(),
        "run `bash scripts/strip-gpm.sh`:\n{}",
        stale.join("\n")
    );
}

/// A twin has no GPM value, says so in its header, and its run is
/// diagnosed from NVML's counters: the fp32 run of the bert hold-out
/// without GPM is still "matrix math off the tensor cores", and the text
/// says what NVML cannot tell apart.
#[test]
fn a_twin_without_gpm_is_diagnosed_from_nvml_and_says_what_stays_open() {
    let dir = fixtures().unwrap().join("nogpm");
    let load = |n: &str| summarize(&Trace::load(&dir.join(n)).unwrap());
    let t = Trace::load(&dir.join("bert-fp32.jsonl")).unwrap();
    assert!(t.header.fingerprint.gpus.iter().all(|g| !g.gpm_supported));
    assert!(load("bert-fp32.jsonl").metric("sm_active_pct").is_none());
    let f =
        RuleSet::builtin().explain_change(&load("bert-healthy-1.jsonl"), &load("bert-fp32.jsonl"));
    assert_eq!(
        f.first().map(|x| x.rule.as_str()),
        Some("tensor_cores_unused"),
        "{f:?}"
    );
    assert!(
        f[0].explanation.contains("Without GPM"),
        "{}",
        f[0].explanation
    );
    // No GPM-only evidence line reads "n/a -> n/a".
    assert!(
        f[0].evidence.iter().all(|e| !e.contains("n/a -> n/a")),
        "{:?}",
        f[0].evidence
    );
}

/// The framework found in a trace fits the things to try: a `framework`
/// event (what the recorder writes when /proc/PID/maps shows jaxlib)
/// turns the sync advice into JAX's words; without one, the generic words.
#[test]
fn the_things_to_try_fit_the_recorded_framework() {
    let dir = fixtures().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let with_event = |name: &str, fw: Option<&str>| {
        let mut text = std::fs::read_to_string(dir.join(name)).unwrap();
        if let Some(fw) = fw {
            // After the header, as the recorder writes it early in the run.
            let at = text.find('\n').unwrap() + 1;
            text.insert_str(
                at,
                &format!("{{\"type\":\"event\",\"t\":0.0,\"kind\":\"framework\",\"message\":\"{fw}\"}}\n"),
            );
        }
        let p = tmp.path().join(format!("{}-{name}", fw.unwrap_or("none")));
        std::fs::write(&p, text).unwrap();
        summarize(&Trace::load(&p).unwrap())
    };
    for (fw, marker) in [
        (Some("jax"), "jax.transfer_guard"),
        (Some("tensorflow"), ".numpy()"),
        (None, "torch.cuda.set_sync_debug_mode"),
    ] {
        let f = RuleSet::builtin().explain_change(
            &with_event("cnn-healthy-1.jsonl", fw),
            &with_event("cnn-sync.jsonl", fw),
        );
        assert_eq!(f[0].rule, "sync_stalls");
        assert!(
            f[0].next_steps.iter().any(|s| s.contains(marker)),
            "{fw:?}: {:?}",
            f[0].next_steps
        );
    }
}
