//! Issue 39 item 1, through the real `gate` binary: a harness that runs
//! several benchmarks in one process (Google Benchmark here), one of them
//! 8x slower. gate finds each benchmark's span in the harness's own
//! result lines kept in the trace, summarises the counters per span,
//! keeps them per span in the baseline, and explains the regressed
//! benchmark with its own span against the same span of the baseline;
//! every output shows the findings under the benchmark's name. A span
//! that cannot be found falls back to the whole window and says so.
//!
//! The runs are SYNTHETIC (`gpugate::synthetic::suite`): four benchmarks
//! of equal length (Google Benchmark runs each for its min time), the
//! third one host-bound in the regressed run (GPU busy 30 %, one CPU
//! thread saturated). Over the whole window its GPU busy reads 82 %
//! instead of 99 %: diluted by the other three, and read as host sync
//! stalls; over its own span it reads 30 %, host-bound. The live part builds the
//! real library's program (scripts/harness/gbench_tiny.cc) and checks
//! that its real console rows give every benchmark a span.

use crate::common;
use common::*;
use gpugate::synthetic::suite::{self, Phase};
use gpugate::synthetic::Signature;
use std::path::{Path, PathBuf};

const TOML: &str = "[metrics.wall_time_s]\nenabled = false\n[user_metrics.gb]\nsource = \"metrics_file\"\nformat = \"google_benchmark\"\nbenchmark = \"*\"\ndirection = \"lower_is_better\"\nunit = \"s\"\n";

/// Samples each benchmark runs (10 s at 100 ms).
const LEN: usize = 100;

/// A suite run: BM_A..BM_D healthy, or BM_C `slow` (host-bound, 8x the
/// time per iteration); `printed = false` loses BM_C's console rows.
fn suite_run(dir: &Path, name: &str, seed: u64, slow: bool, printed: bool) -> PathBuf {
    let healthy = Signature::healthy().with_seed(seed);
    let mut phases = vec![
        Phase::new("BM_A", healthy.clone(), LEN, 1.0e6),
        Phase::new("BM_B", healthy.clone(), LEN, 2.0e6),
        Phase::new("BM_C", healthy.clone(), LEN, 1.5e6),
        Phase::new("BM_D", healthy.clone(), LEN, 1.0e6),
    ];
    if slow {
        phases[2] = Phase::new("BM_C", Signature::host_bound().with_seed(seed), LEN, 12.0e6);
    }
    phases[2].printed = printed;
    let path = dir.join(name);
    suite::write(&healthy.with_warmup_samples(20), &phases, &path).unwrap();
    path
}

fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    std::fs::write(d.join("gate.toml"), TOML).unwrap();
    let base: Vec<PathBuf> = (1..=2)
        .map(|s| suite_run(&d, &format!("base{s}.jsonl"), s, false, true))
        .collect();
    let out = gate(&d)
        .args(["capture", "--baseline", "gb", "--replay"])
        .args(&base)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", output(&out));
    (dir, d)
}

fn json(d: &Path, t: &Path) -> serde_json::Value {
    let out = check_replay(d, "gb", &["--format", "json"], t);
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

/// The GPU busy row of a finding: (baseline, new).
fn gpu_busy(f: &serde_json::Value) -> (f64, f64) {
    let row = f["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["expr"] == "gpu_busy_pct.mean")
        .unwrap_or_else(|| panic!("no GPU busy row: {f}"));
    (
        row["baseline"].as_f64().unwrap(),
        row["value"].as_f64().unwrap(),
    )
}

fn findings_of<'a>(r: &'a serde_json::Value, bench: &str) -> Vec<&'a serde_json::Value> {
    r["diagnosis"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["benchmark"] == bench)
        .collect()
}

#[test]
fn the_regressed_benchmark_is_explained_by_its_own_span_in_every_output() {
    let (_dir, d) = setup();
    // The baseline keeps each benchmark's span.
    let text = std::fs::read_to_string(d.join("baselines/gb.toml")).unwrap();
    for b in ["BM_A", "BM_B", "BM_C", "BM_D"] {
        assert!(
            text.contains(&format!("[spans.\"gb.{b}\"]")),
            "{b} has no span"
        );
    }
    let b = gpugate::baseline::load(&d.join("baselines/gb.toml"), "gb").unwrap();
    let c = &b.spans["gb.BM_C"];
    assert_eq!(c.found_by, "Google Benchmark's result lines");
    assert!((c.seconds - 9.9).abs() < 0.2, "{}", c.seconds);

    let slow = suite_run(&d, "slow.jsonl", 7, true, true);
    let r = json(&d, &slow);
    // The report, its benchmark and window fields included, is the
    // documented schema's.
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/check-report.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let v = jsonschema::draft202012::new(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(&r).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(metric(&r, "gb.BM_C")["verdict"], "regression", "{r}");
    assert_eq!(metric(&r, "gb.BM_A")["verdict"], "pass", "{r}");
    let c = findings_of(&r, "gb.BM_C");
    assert!(!c.is_empty(), "{}", r["diagnosis"]);
    let first = c[0];
    assert_eq!(first["rule"], "host_bound", "{first}");
    assert!(first["title"].as_str().unwrap().starts_with("gb.BM_C: "));
    let window = first["window"].as_str().unwrap();
    assert!(window.contains("BM_C's own span"), "{window}");
    assert!(
        window.contains("Google Benchmark's result lines"),
        "{window}"
    );
    // The span's counters, not the whole window's (82 %).
    let (base, new) = gpu_busy(first);
    assert!(
        base > 98.0 && (25.0..35.0).contains(&new),
        "{base} -> {new}"
    );

    // Every output puts the findings under the benchmark's name.
    let title = first["title"].as_str().unwrap().to_string();
    let out = check_replay(
        &d,
        "gb",
        &[
            "--junit",
            "j.xml",
            "--markdown",
            "m.md",
            "--pr-comment",
            "pr.md",
            "--html",
            "p.html",
        ],
        &slow,
    );
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stdout.contains(&title), "terminal: {stdout}");
    assert!(stdout.contains("BM_C's own span"), "terminal: {stdout}");
    for f in ["j.xml", "m.md", "pr.md", "p.html"] {
        let text = std::fs::read_to_string(d.join(f)).unwrap();
        // Markdown escapes the underscore.
        let text = text.replace("\\_", "_");
        assert!(text.contains("gb.BM_C: "), "{f}: {text}");
        assert!(text.contains("own span: ") || f == "pr.md", "{f}: {text}");
    }
    assert_valid_junit(&d.join("j.xml"));
}

#[test]
fn a_benchmark_without_its_span_falls_back_to_the_whole_window_and_says_why() {
    let (_dir, d) = setup();
    // BM_C's console rows are lost: its span cannot be found.
    let lost = suite_run(&d, "lost.jsonl", 7, true, false);
    let r = json(&d, &lost);
    let c = findings_of(&r, "gb.BM_C");
    assert!(!c.is_empty(), "{}", r["diagnosis"]);
    for f in &c {
        let w = f["window"].as_str().unwrap();
        assert!(w.contains("whole window"), "{w}");
        assert!(w.contains("no progress line names it"), "{w}");
        assert!(w.contains("console reporter"), "the fix: {w}");
    }
    // Capture says which benchmarks got no span, and why.
    let out = gate(&d)
        .args(["capture", "--baseline", "lost", "--replay"])
        .arg(&lost)
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("gate: warning: 1 of 4 benchmarks have no span in the baseline (gb.BM_C: its span was not found (no progress line names it"),
        "{stderr}"
    );
    // A baseline captured without spans: the same benchmark, the whole
    // window, and the fix (re-capture).
    let path = d.join("baselines/gb.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let cut = text.find("\n[spans.").unwrap();
    let rest = &text[cut..];
    // The span tables are the last of the file (serde's field order).
    assert!(!rest.contains("\n[metrics.") && !rest.contains("\n[gpus."));
    std::fs::write(&path, &text[..cut + 1]).unwrap();
    let slow = suite_run(&d, "slow.jsonl", 7, true, true);
    let r = json(&d, &slow);
    let c = findings_of(&r, "gb.BM_C");
    assert!(!c.is_empty(), "{}", r["diagnosis"]);
    let w = c[0]["window"].as_str().unwrap();
    assert!(w.contains("baseline keeps no span"), "{w}");
    // The whole window's counters: BM_C's 30 % diluted by the others' 99 %.
    let (_, new) = gpu_busy(c[0]);
    assert!((75.0..90.0).contains(&new), "{new}");
}

/// The real library's console rows (scripts/harness/gbench_tiny.cc), run
/// under `gate record`: every benchmark of the JSON has a span in the
/// baseline, found in the rows the library printed.
#[test]
fn real_google_benchmark_rows_give_every_benchmark_a_span() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), TOML).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/harness/gbench_tiny.cc");
    let built = std::process::Command::new("g++")
        .args(["-O2", "-std=c++17"])
        .arg(&src)
        .arg("-o")
        .arg(d.join("gbench_tiny"))
        .args(["-lbenchmark", "-lpthread"])
        .output();
    if !built.as_ref().is_ok_and(|o| o.status.success()) {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED real_google_benchmark_rows_give_every_benchmark_a_span: g++ or libbenchmark-dev missing (apt-get install -y g++ libbenchmark-dev)");
        return;
    }
    let bin = d.join("gbench_tiny").display().to_string();
    // Long enough per benchmark for several samples at 20 ms.
    let out = gate(d)
        .args(["capture", "--baseline", "live", "--runs", "1", "--no-gpu"])
        .args(["--interval", "20ms", "--metrics-file", "m.json", "--"])
        .args([
            bin.as_str(),
            "--benchmark_min_time=0.4",
            "--benchmark_out=m.json",
            "--benchmark_out_format=json",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let b = gpugate::baseline::load(&d.join("baselines/live.toml"), "live").unwrap();
    let names: Vec<&str> = b.spans.values().map(|s| s.benchmark.as_str()).collect();
    assert_eq!(
        names.len(),
        4,
        "spans of {names:?}; the baseline's user metrics: {:?}",
        b.metrics.keys().collect::<Vec<_>>()
    );
    for s in b.spans.values() {
        assert!(s.seconds > 0.2, "{}: {} s", s.benchmark, s.seconds);
        assert!(s.metrics.contains_key("target_cpu_pct"), "{}", s.benchmark);
    }
}

/// Real pytest-benchmark under `gate capture`, with `-v` and with `-v -s`
/// (the test's own output between its node id and PASSED): every test of
/// scripts/harness/pytest_suite gets its span; without `-v` none does, and
/// the capture still succeeds.
#[test]
fn real_pytest_benchmark_verbose_lines_give_every_test_a_span() {
    let Some(py) = harness_python("real_pytest_benchmark_verbose_lines_give_every_test_a_span")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), "[metrics.wall_time_s]\nenabled = false\n[user_metrics.py]\nsource = \"metrics_file\"\nformat = \"pytest_benchmark\"\nbenchmark = \"*\"\ndirection = \"lower_is_better\"\nunit = \"s\"\n").unwrap();
    let suite = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts/harness/pytest_suite/test_bench_suite.py");
    for (name, flags, spans) in [
        ("v", &["-v"][..], 5),
        ("vs", &["-v", "-s"][..], 5),
        ("quiet", &["-q"][..], 0),
    ] {
        // test_sleep of 200 us rounds ends in ~0.1 s: too short for a span.
        let out = gate(d)
            .env("GATE_BENCH_SLEEP_US", "20000")
            .args(["capture", "--baseline", name, "--runs", "1", "--no-gpu"])
            .args(["--interval", "20ms", "--metrics-file", "m.json", "--", &py])
            .args(["-m", "pytest", "-p", "no:cacheprovider"])
            .args(flags)
            .arg(&suite)
            .args(["--benchmark-json", "m.json", "--benchmark-max-time", "0.4"])
            .output()
            .unwrap();
        let (stdout, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(0), "{name}: {stdout}{stderr}");
        let b = gpugate::baseline::load(&d.join(format!("baselines/{name}.toml")), name).unwrap();
        let found: Vec<&str> = b.spans.values().map(|s| s.benchmark.as_str()).collect();
        assert_eq!(found.len(), spans, "{name}: {found:?}");
        for s in b.spans.values() {
            assert_eq!(s.found_by, "pytest -v's result lines");
            assert!(s.seconds > 0.2, "{name} {}: {} s", s.benchmark, s.seconds);
        }
    }
}

/// docs/gating.md's section: its `spans` table is accepted, and the
/// numbers it states are the code's; a `spans` without a `name` group is
/// gate.toml's mistake (exit 2, one line naming the key and the fix).
#[test]
fn the_documented_spans_table_and_numbers_hold() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/gating.md"))
        .unwrap();
    let start = doc.find("## One benchmark among many").unwrap();
    let section = &doc[start..start + doc[start..].find("\n## Accepting").unwrap()];
    let block = section.split("```toml\n").nth(1).unwrap();
    let block = &block[..block.find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), block).unwrap();
    let out = gate(d).args(["metrics"]).output().unwrap();
    assert!(out.status.success(), "{block}\n{:?}", output(&out));
    use gpugate::summary::spans::{MAX_SPANS, MIN_SPAN_SAMPLES};
    assert!(section.contains(&format!("get spans up to {MAX_SPANS}")));
    assert!(section.contains(&format!("a span needs {MIN_SPAN_SAMPLES} steady samples")));
    std::fs::write(
        d.join("gate.toml"),
        block.replace("(?P<name>\\S+)", "(\\S+)"),
    )
    .unwrap();
    let out = gate(d).args(["metrics"]).output().unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("spans needs a group named 'name'"),
        "{stderr}"
    );
    assert!(stderr.contains("[user_metrics.ops]"), "{stderr}");
}

/// The H200 recordings of the helper "diag" (fixtures/holdout-multibench:
/// pytest-benchmark `-v -s` timing four GPU operations in one process, one
/// of which regresses; recorded with GPM): each regressed benchmark is
/// explained by its own span, found in pytest's lines. Skipped where the
/// recordings are not in the tree.
#[test]
fn real_h200_multibench_regressions_are_explained_by_their_spans() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/holdout-multibench/gpm");
    if !dir.join("multibench-healthy-1.jsonl").exists() {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED real_h200_multibench_regressions_are_explained_by_their_spans: fixtures/holdout-multibench is not in this tree");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut toml = String::new();
    for op in ["matmul", "softmax", "layernorm", "gather"] {
        toml.push_str(&format!("[user_metrics.{op}_s]\nsource = \"metrics_file\"\nformat = \"pytest_benchmark\"\nbenchmark = \"test_op[{op}]\"\ndirection = \"lower_is_better\"\nunit = \"s\"\n"));
    }
    toml.push_str("[metrics.wall_time_s]\nenabled = false\n");
    std::fs::write(d.join("gate.toml"), toml).unwrap();
    let healthy: Vec<PathBuf> = (1..=3)
        .map(|i| dir.join(format!("multibench-healthy-{i}.jsonl")))
        .collect();
    let out = gate(d)
        .args(["capture", "--baseline", "mb", "--replay"])
        .args(&healthy)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", output(&out));
    let b = gpugate::baseline::load(&d.join("baselines/mb.toml"), "mb").unwrap();
    assert_eq!(b.spans.len(), 4, "{:?}", b.spans.keys().collect::<Vec<_>>());
    for (case, id) in [("matmul-fp32", "matmul_s"), ("norm-unfused", "layernorm_s")] {
        let out = check_replay(
            d,
            "mb",
            &["--format", "json"],
            dir.join(format!("multibench-{case}.jsonl")),
        );
        let (stdout, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(1), "{case}: {stderr}");
        let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let f = findings_of(&r, id);
        assert!(!f.is_empty(), "{case}: {}", r["diagnosis"]);
        let w = f[0]["window"].as_str().unwrap();
        assert!(
            w.contains("own span") && w.contains("pytest -v"),
            "{case}: {w}"
        );
        assert_ne!(f[0]["rule"], "unexplained", "{case}: {}", f[0]);
        if case == "matmul-fp32" {
            assert_eq!(f[0]["rule"], "tensor_cores_unused", "{}", f[0]);
        }
    }
}
