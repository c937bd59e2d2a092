//! Judgement with real processes: `gate capture` measures three runs by
//! default, and `gate check --confirm N` reruns the benchmark and judges the
//! runs together, so a flaky first run fades and a real regression stays.
//! The benchmark is a real Python process (host counters only: `--no-gpu`)
//! that prints its throughput; a counter file makes each run print the next
//! value of a script.

use crate::common;

use common::*;
use std::path::Path;

/// A benchmark whose k-th run (k counted in `counter`) prints `values[k]`.
fn bench_args(counter: &Path, values: &[f64]) -> Vec<String> {
    let list = values
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let script = format!(
        "import sys, time\n\
         p = sys.argv[1]\n\
         try: k = int(open(p).read())\n\
         except OSError: k = 0\n\
         open(p, 'w').write(str(k + 1))\n\
         t = time.time()\n\
         while time.time() - t < 0.4: pass\n\
         print('final_samples_per_s: %s' % [{list}][k])\n"
    );
    vec![
        "--".into(),
        "python3".into(),
        "-c".into(),
        script,
        counter.display().to_string(),
    ]
}

fn live(dir: &Path, sub: &[&str], bench: &[String]) -> std::process::Output {
    gate(dir)
        .args(sub)
        .args(["--no-gpu", "--interval", "10ms", "--trace-dir", "traces"])
        .args(bench)
        .output()
        .unwrap()
}

#[test]
fn capture_measures_three_runs_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), THROUGHPUT_TOML).unwrap();
    let bench = bench_args(&d.join("n"), &[100.0, 100.2, 99.8]);
    let out = live(d, &["capture", "--baseline", "b"], &bench);
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let text = std::fs::read_to_string(d.join("baselines/b.toml")).unwrap();
    assert!(text.contains("runs = 3"), "{text}");
    assert_eq!(std::fs::read_to_string(d.join("n")).unwrap(), "3");
    assert!(!stderr.contains("one run:"), "{stderr}");
}

#[test]
fn one_run_capture_warns_that_per_run_numbers_have_no_noise_estimate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), THROUGHPUT_TOML).unwrap();
    let bench = bench_args(&d.join("n"), &[100.0, 90.0, 90.5, 89.5, 90.0, 90.5]);
    let out = live(d, &["capture", "--baseline", "b", "--runs", "1"], &bench);
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("one run:"), "{stderr}");
    // A 10 % drop of a number measured once a run, against one run: no
    // noise estimate. Without reruns: inconclusive, exit 4 (never green).
    let args = ["check", "--baseline", "b", "--format", "json"];
    let out = live(d, &[&args[..], &["--max-reruns", "0"]].concat(), &bench);
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(4), "{stdout}\n{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(r["verdict"], "inconclusive");
    let m = metric(&r, "samples_per_s");
    assert_eq!(m["verdict"], "inconclusive", "{m}");
    assert_eq!(m["why"], "no_noise_estimate", "{m}");
    // By default the live check reruns it (twice): the new runs' spread
    // (90.5, 89.5, 90) is the estimate, and the drop is a regression.
    let out = live(d, &args, &bench);
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let m = metric(&r, "samples_per_s");
    assert_eq!(
        (m["verdict"].as_str(), m["new_runs"].as_u64()),
        (Some("regression"), Some(3)),
        "{m}"
    );
    assert!(stderr.contains("rerun 2/2"), "{stderr}");
}

/// Capture three runs near 100, then `check --confirm 2` over the next
/// three values; returns the exit code, the JSON report and stderr.
fn confirm_after(values: [f64; 3]) -> (i32, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), THROUGHPUT_TOML).unwrap();
    let [a, b, c] = values;
    let bench = bench_args(&d.join("n"), &[100.0, 100.2, 99.8, a, b, c]);
    assert!(live(d, &["capture", "--baseline", "b"], &bench)
        .status
        .success());
    let out = live(
        d,
        &[
            "check",
            "--baseline",
            "b",
            "--confirm",
            "2",
            "--format",
            "json",
        ],
        &bench,
    );
    let (stdout, stderr) = output(&out);
    let r = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}\n{stderr}"));
    (out.status.code().unwrap(), r, stderr)
}

/// A flaky first run fades: no longer a regression; the two runs' mean
/// (-10 %) is inside their own measured spread (one 20 % outlier), so
/// there is no evidence of a change: a pass (exit 0) after one rerun.
#[test]
fn confirm_lets_a_flaky_first_run_fade() {
    // One slow run (80), then two normal ones.
    let (code, r, stderr) = confirm_after([80.0, 100.1, 99.9]);
    assert_eq!(code, 0, "{r}\n{stderr}");
    assert!(
        stderr.contains("the verdict is regression so far; rerun 1/2"),
        "{stderr}"
    );
    // The sequential test stops at the first conclusive look: two runs.
    assert_eq!(r["runs"].as_array().unwrap().len(), 2, "{stderr}");
    assert!(!stderr.contains("rerun 2/2"), "{stderr}");
    let m = metric(&r, "samples_per_s");
    assert_eq!(m["new_runs"], 2, "{m}");
    assert_eq!(m["why"], "within_measured_noise", "{m}");
    assert!(
        r["warnings"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("first run's verdict was regression")),
        "{r}"
    );
}

#[test]
fn confirm_keeps_a_real_regression() {
    let (code, r, stderr) = confirm_after([90.0, 90.1, 89.9]);
    assert_eq!(code, 1, "{r}\n{stderr}");
    let m = metric(&r, "samples_per_s");
    assert_eq!(m["verdict"], "regression", "{m}");
    assert_eq!(m["new_runs"], 3, "{m}");
    assert_eq!(m["noise_source"], "run_to_run", "{m}");
}

#[test]
fn confirm_needs_a_live_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = gate(dir.path())
        .args([
            "check",
            "--baseline",
            "b",
            "--confirm",
            "2",
            "--replay",
            "x.jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--confirm reruns the benchmark"));
    let out = gate(dir.path())
        .args([
            "check",
            "--baseline",
            "b",
            "--max-reruns",
            "1",
            "--replay",
            "x.jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-reruns reruns the benchmark"));
}
