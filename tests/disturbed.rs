//! Issue 38 items 1 and 2 through the real binary: a run that something
//! outside the benchmark's process tree acted on is *disturbed*, not
//! regressed; and every check says what its baseline can see.
//!
//! The neighbour cases replay the H200 recordings of `fixtures/traces/`
//! (fixtures/README.md): `*-contend-out` ran beside `gpu_burner.py` (bf16
//! matmuls at a 35 % duty cycle) started outside the benchmark's tree,
//! `cnn-contend-in` beside the same burner started by the benchmark itself.
//! The Google Benchmark case is SYNTHETIC: the counters are a synthetic
//! healthy trace (`gpugate::synthetic`), the metrics file is the real
//! library's JSON of `tests/data/google-benchmark.json` with its `mean`
//! aggregate set to each run's value.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(format!("{ROOT}/fixtures/traces/{name}.jsonl"))
}

/// A project with the fixtures' throughput declared (or defaults) and a
/// baseline `b` captured from `healthy` of `family`.
fn project(declared: bool, family: &str, healthy: &[usize]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    if declared {
        std::fs::write(dir.path().join("gate.toml"), THROUGHPUT_TOML).unwrap();
    }
    let traces: Vec<PathBuf> = healthy
        .iter()
        .map(|i| fixture(&format!("{family}-healthy-{i}")))
        .collect();
    gate(dir.path())
        .args(["capture", "--baseline", "b", "--replay"])
        .args(&traces)
        .assert()
        .success();
    dir
}

fn json_check(dir: &Path, traces: &[PathBuf]) -> (i32, serde_json::Value, String) {
    let out = gate(dir)
        .args(["check", "--baseline", "b", "--format", "json", "--replay"])
        .args(traces)
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    let r = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    (out.status.code().unwrap(), r, stderr)
}

/// The recorded ViT-B/16 run beside a foreign GPU process: its throughput
/// held (+2.8 %, faster, inside its noise), so it passes, and every
/// output says it was disturbed, naming the neighbour; the counters the
/// neighbour moved are context, not gated.
#[test]
fn a_neighbour_outside_the_tree_with_the_number_holding_passes_with_a_warning_everywhere() {
    let dir = project(true, "vit", &[1, 2, 3]);
    let d = dir.path();
    let out = gate(d)
        .args(["check", "--baseline", "b"])
        .args(["--junit", "j.xml", "--markdown", "m.md", "--json", "r.json"])
        .args(["--html", "p.html", "--pr-comment", "c.md", "--replay"])
        .arg(fixture("vit-contend-out"))
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // The neighbour as the trace recorded it: pid 1252, python3.
    let named = "pid 1252 'python3' outside the benchmark's process tree shared GPU 0";
    assert!(stdout.contains("VERDICT: PASS"), "{stdout}");
    assert!(
        stdout.contains("DISTURBED: ") && stdout.contains(named),
        "{stdout}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(r["verdict"], "pass");
    let cause = &r["disturbance"][0]["causes"][0];
    assert_eq!(cause["kind"], "foreign_process", "{r}");
    assert_eq!(cause["processes"][0]["pid"], 1252);
    assert_eq!(cause["time_share_pct"].as_f64(), Some(100.0));
    assert!(r["warnings"][0]
        .as_str()
        .unwrap()
        .starts_with("DISTURBED run"));
    for id in ["other_processes", "other_sm_share_pct"] {
        let m = metric(&r, id);
        assert_eq!(
            (m["gated"].as_bool(), m["why"].as_str()),
            (Some(false), Some("disturbance")),
            "{m}"
        );
    }
    let junit = std::fs::read_to_string(d.join("j.xml")).unwrap();
    assert!(
        junit.contains("<property name=\"gate.disturbance\""),
        "{junit}"
    );
    assert_valid_junit(&d.join("j.xml"));
    for f in ["m.md", "c.md", "p.html"] {
        let text = std::fs::read_to_string(d.join(f)).unwrap();
        assert!(
            text.contains("DISTURBED") && text.contains("pid 1252"),
            "{f}:\n{text}"
        );
    }
}

/// The recorded ResNet-50 run beside a foreign process lost 1.7 % of its
/// throughput, beyond the floor and the noise: with a neighbour on the GPU
/// that is no evidence about the change. A replay cannot rerun: exit 3,
/// naming the neighbour and its share, never exit 1. The diagnosis still
/// names the contention.
#[test]
fn a_regressed_number_beside_a_neighbour_exits_3_naming_it() {
    let dir = project(true, "cnn", &[1, 2]);
    let (code, r, stderr) = json_check(dir.path(), &[fixture("cnn-contend-out")]);
    assert_eq!(code, 3, "{r}\n{stderr}");
    assert_eq!(r["verdict"], "disturbed");
    let reason = r["reasons"][0].as_str().unwrap();
    assert!(
        reason.starts_with("DISTURBED, not evidence about the change")
            && reason.contains("pid 1619 'python3'")
            && reason.contains("SM share 1.4 %")
            && reason.contains("100.0 % of the window"),
        "{reason}"
    );
    assert_eq!(metric(&r, "samples_per_s")["verdict"], "regression");
    assert_eq!(r["diagnosis"][0]["rule"], "gpu_contention");
    // The BERT run beside the same burner (-7.8 %, open inside the noise)
    // is not evidence either: never INCONCLUSIVE's exit 4 nor exit 1.
    let dir = project(true, "bert", &[1, 2, 3]);
    let (code, r, _) = json_check(dir.path(), &[fixture("bert-contend-out")]);
    assert_eq!((code, r["verdict"].as_str()), (3, Some("disturbed")), "{r}");
}

/// The same burner started by the benchmark itself (inside its tree) is
/// the change's: exit 1 with defaults (a second process of its own on the
/// GPU) and with the throughput declared, and no disturbance.
#[test]
fn contention_from_the_benchmarks_own_child_stays_a_regression() {
    for declared in [false, true] {
        let dir = project(declared, "cnn", &[1, 2]);
        let (code, r, stderr) = json_check(dir.path(), &[fixture("cnn-contend-in")]);
        assert_eq!(code, 1, "declared {declared}: {r}\n{stderr}");
        assert!(r.get("disturbance").is_none(), "{r}");
        assert_eq!(r["diagnosis"][0]["rule"], "tree_contention");
    }
}

/// Several runs, one disturbed: the clean ones are judged and the report
/// says what was left out.
#[test]
fn the_clean_runs_are_judged_and_the_disturbed_one_left_out() {
    let dir = project(true, "cnn", &[1, 2]);
    let (code, r, stderr) = json_check(
        dir.path(),
        &[fixture("cnn-healthy-3"), fixture("cnn-contend-out")],
    );
    assert_eq!(code, 0, "{r}\n{stderr}");
    assert_eq!(r["runs"].as_array().unwrap().len(), 1, "{r}");
    assert!(r["runs"][0]["source"]
        .as_str()
        .unwrap()
        .ends_with("cnn-healthy-3.jsonl"));
    assert!(
        r["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with("1 of 2 runs were DISTURBED"),
        "{r}"
    );
}

/// `capture` keeps no disturbed run unless told, and says why.
#[test]
fn capture_refuses_a_disturbed_run_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = gate(d)
        .args(["capture", "--baseline", "b", "--replay"])
        .arg(fixture("cnn-contend-out"))
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("run 1 was DISTURBED, so it cannot be a baseline run")
            && stderr.contains("pid 1619 'python3'")
            && stderr.contains("--allow-disturbed"),
        "{stderr}"
    );
    assert!(!d.join("baselines/b.toml").exists());
    let out = gate(d)
        .args([
            "capture",
            "--baseline",
            "b",
            "--allow-disturbed",
            "--replay",
        ])
        .arg(fixture("cnn-contend-out"))
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("kept a DISTURBED run (--allow-disturbed)"),
        "{stderr}"
    );
}

/// The real Google Benchmark file with its `BM_Sort/4096` mean real time
/// set to `real_time_ns`.
fn google_benchmark_file(real_time_ns: f64) -> String {
    let text = std::fs::read_to_string(format!("{ROOT}/tests/data/google-benchmark.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    for b in doc["benchmarks"].as_array_mut().unwrap() {
        if b["name"] == "BM_Sort/4096_mean" {
            b["real_time"] = real_time_ns.into();
        }
    }
    doc.to_string()
}

/// The issue's case: a Google Benchmark `real_time` baseline whose three
/// runs disagree by 26 % (the real file's three repetitions of `BM_Sort/4096`
/// on a loaded machine: 243, 315 and 320 us) and a 42 % slower run. The
/// capture warns with the spread; the check states the change it can
/// detect and warns that the baseline cannot see its floor, in every
/// output, instead of passing silently.
#[test]
fn a_baseline_whose_runs_disagree_by_a_quarter_states_what_it_cannot_see() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("gate.toml"),
        "[metrics.wall_time_s]\nenabled = false\n[user_metrics.sort_s]\nsource = \"metrics_file\"\nformat = \"google_benchmark\"\nbenchmark = \"BM_Sort/4096\"\ndirection = \"lower_is_better\"\nunit = \"s\"\n",
    )
    .unwrap();
    let runs: Vec<PathBuf> = [243_081.978, 315_309.379, 320_459.496]
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let f = google_benchmark_file(*v);
            run_with_file(d, &format!("synthetic-base-{i}.jsonl"), i as u64 + 1, &f)
        })
        .collect();
    let out = gate(d)
        .args(["capture", "--baseline", "b", "--replay"])
        .args(&runs)
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("the 3 runs kept are too far apart on sort_s (mean)")
            && stderr.contains("a spread of 26.4 % of their mean"),
        "{stderr}"
    );
    let mean = (243_081.978 + 315_309.379 + 320_459.496) / 3.0;
    let slow = run_with_file(
        d,
        "synthetic-slow.jsonl",
        9,
        &google_benchmark_file(mean * 1.42),
    );
    let out = gate(d)
        .args([
            "check",
            "--baseline",
            "b",
            "--json",
            "r.json",
            "--junit",
            "j.xml",
        ])
        .args(["--markdown", "m.md", "--pr-comment", "c.md", "--replay"])
        .arg(&slow)
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    let m = metric(&r, "sort_s");
    let change = m["change_pct"].as_f64().unwrap();
    assert!((change - 42.0).abs() < 0.5, "{m}");
    let detectable_pct =
        m["detectable"].as_f64().unwrap() / m["baseline"].as_f64().unwrap() * 100.0;
    assert!(detectable_pct > 42.0, "MDE {detectable_pct} %: {m}");
    // Whatever the verdict, it is not silent: the check states what it can
    // see and warns that the floor is below it.
    assert!(
        stdout.contains("detectable change (95 % confidence, 80 % power): sort_s"),
        "{stdout}\n{stderr}"
    );
    let warned = "baseline 'b' cannot see changes as small as its floor";
    assert!(stdout.contains(warned), "{stdout}");
    assert!(r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().starts_with(warned)));
    for f in ["m.md", "c.md", "j.xml"] {
        let text = std::fs::read_to_string(d.join(f)).unwrap();
        assert!(
            text.contains("cannot see changes as small as its floor"),
            "{f}:\n{text}"
        );
    }
    assert!(std::fs::read_to_string(d.join("j.xml"))
        .unwrap()
        .contains("gate.detectable"));
}

/// The neighbour family recorded on the H200 by the helper "diag" for
/// issue 38 (`fixtures/holdout-neighbour/gpm/`: a checkpointed-training loop
/// alone, beside a burner outside its tree at 3 % and ~50 % duty, and with
/// the burner inside its tree), as docs/gating.md tabulates it. The family
/// lives on another branch until the merge: without it, SKIPPED.
#[test]
fn the_neighbour_family_recorded_for_issue_38() {
    let dir = PathBuf::from(format!("{ROOT}/fixtures/holdout-neighbour/gpm"));
    let t = |n: &str| dir.join(format!("neighbour-{n}.jsonl"));
    if !t("healthy-1").exists() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED the_neighbour_family_recorded_for_issue_38: fixtures/holdout-neighbour/ not in this checkout"
        );
        return;
    }
    let declared = format!("{THROUGHPUT_TOML}\n[metrics.wall_time_s]\nenabled = false\n");
    for config in [None, Some(declared.as_str())] {
        let project = tempfile::tempdir().unwrap();
        let d = project.path();
        if let Some(c) = config {
            std::fs::write(d.join("gate.toml"), c).unwrap();
        }
        gate(d)
            .args(["capture", "--baseline", "b", "--replay"])
            .args([t("healthy-1"), t("healthy-2"), t("healthy-3")])
            .assert()
            .success();
        let declared = config.is_some();
        for (name, exit, pid, first) in [
            ("healthy-4", 0, None, None),
            ("out-light", 0, Some(2924), None),
            ("out-heavy", if declared { 3 } else { 0 }, Some(2990), None),
            ("contend-in", 1, None, Some("tree_contention")),
        ] {
            let (code, r, stderr) = json_check(d, &[t(name)]);
            assert_eq!(code, exit, "{name} (declared {declared}): {r}\n{stderr}");
            let named = r["disturbance"][0]["causes"][0]["processes"][0]["pid"].as_u64();
            assert_eq!(named, pid, "{name} (declared {declared})");
            if let Some(rule) = first {
                assert_eq!(r["diagnosis"][0]["rule"], rule, "{name}");
            }
            if code == 3 {
                assert_eq!(r["diagnosis"][0]["rule"], "gpu_contention", "{name}");
            }
        }
    }
}

/// `--wait-clean` waits before a rerun, so it needs a live run: with a
/// replay, and with a duration that is not one, it is the user's input
/// (exit 2) naming the fix, never the retryable 3.
#[test]
fn wait_clean_is_refused_where_it_cannot_apply() {
    let dir = project(true, "cnn", &[1, 2]);
    let d = dir.path();
    let out = gate(d)
        .args(["check", "--baseline", "b", "--wait-clean", "5m", "--replay"])
        .arg(fixture("cnn-contend-out"))
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .contains("--wait-clean waits before rerunning the benchmark, so it needs a live run"),
        "{stderr}"
    );
    let out = gate(d)
        .args([
            "check",
            "--baseline",
            "b",
            "--wait-clean",
            "soon",
            "--replay",
        ])
        .arg(fixture("cnn-contend-out"))
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--wait-clean"), "{stderr}");
}

/// The JSON reports of a disturbed pass and of a `disturbed` verdict match
/// the published schema (schemas/check-report.schema.json).
#[test]
fn disturbed_reports_match_the_schema() {
    let text = std::fs::read_to_string(format!("{ROOT}/schemas/check-report.schema.json")).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let v = jsonschema::draft202012::new(&schema).unwrap();
    let dir = project(true, "cnn", &[1, 2]);
    for (trace, verdict) in [("cnn-contend-out", "disturbed"), ("cnn-healthy-3", "pass")] {
        let (_, r, _) = json_check(dir.path(), &[fixture(trace)]);
        assert_eq!(r["verdict"], verdict);
        let errors: Vec<String> = v
            .iter_errors(&r)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{trace}: {errors:#?}");
    }
    let dir = project(false, "cnn", &[1, 2]);
    let (code, r, _) = json_check(dir.path(), &[fixture("cnn-contend-out")]);
    assert_eq!(
        (code, r["disturbance"].as_array().map(Vec::len)),
        (0, Some(1))
    );
    let errors: Vec<String> = v
        .iter_errors(&r)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "disturbed pass: {errors:#?}");
}
