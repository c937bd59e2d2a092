//! The measured window is the section the benchmark timed (issue 27.2),
//! and a change's causes are ranked by how much of the slowdown each
//! explains (issue 27.3): checked through the real binary on a harness
//! recorded on the H200 (pytest-benchmark timing a timm ViT for ~5 s
//! inside a ~23 s process, fixtures/holdout-timm) and on a live recording.

use assert_cmd::Command;
use gpugate::trace::{Trace, WINDOW_CLOSED_NOTE};
use serde_json::Value;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn gate() -> Command {
    Command::cargo_bin("gate").unwrap()
}

fn timm(name: &str) -> PathBuf {
    PathBuf::from(format!(
        "{ROOT}/fixtures/holdout-timm/gpm/timm-{name}.jsonl"
    ))
}

/// pytest-benchmark's own mean decides; wall time is not the benchmark's number.
const DECLARED: &str = r#"[user_metrics.forward_s]
source = "metrics_file"
format = "pytest_benchmark"
benchmark = "test_vit_forward"
stat = "mean"
direction = "lower_is_better"
unit = "s"

[metrics.wall_time_s]
enabled = false
"#;

fn project(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gate.toml"), config).unwrap();
    let healthy: Vec<PathBuf> = (1..=3).map(|i| timm(&format!("healthy-{i}"))).collect();
    gate()
        .current_dir(dir.path())
        .args(["capture", "--baseline", "b", "--replay"])
        .args(&healthy)
        .assert()
        .success();
    dir
}

fn check_json(dir: &Path, trace: &Path, extra: &[&str]) -> Value {
    let out = gate()
        .current_dir(dir)
        .args(["check", "--baseline", "b", "--format", "json", "--replay"])
        .arg(trace)
        .args(extra)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}",
            String::from_utf8_lossy(&out.stderr)
                .chars()
                .take(2000)
                .collect::<String>()
        )
    })
}

#[test]
fn the_idle_tail_after_a_timed_section_is_cut_and_reported() {
    let t = Trace::load(&timm("healthy-1")).unwrap();
    let tail = t.teardown_s().expect("the harness's tail is found");
    // pytest-benchmark's statistics, its JSON, a checkpoint and CUDA
    // teardown: several seconds with the GPU idle.
    assert!(tail > 3.0, "teardown {tail} s");
    let dir = project(DECLARED);
    let r = check_json(dir.path(), &timm("healthy-4"), &[]);
    let run = &r["runs"][0];
    let (wall, cut) = (
        run["wall_time_s"].as_f64().unwrap(),
        run["teardown_s"].as_f64().unwrap(),
    );
    assert!(cut > 3.0 && wall < 9.0, "wall {wall} s, teardown {cut} s");
    assert_eq!(r["verdict"], "pass");
}

#[test]
fn until_closes_the_window_at_the_benchmarks_end_marker() {
    let dir = project(DECLARED);
    let r = check_json(
        dir.path(),
        &timm("healthy-4"),
        &["--until", "^gate: timed-end"],
    );
    let run = &r["runs"][0];
    assert_eq!(run["closed_by_until"], true, "{run}");
    assert!(run["teardown_s"].as_f64().unwrap() > 3.0);
    // A pattern no line matches says so once and keeps the idle-tail window.
    let out = gate()
        .current_dir(dir.path())
        .args(["check", "--baseline", "b", "--replay"])
        .arg(timm("healthy-4"))
        .args(["--until", "^never printed$"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("matched no output line"), "{stderr}");
    // A bad pattern is a usage error.
    gate()
        .current_dir(dir.path())
        .args(["check", "--baseline", "b", "--until", "(", "--replay"])
        .arg(timm("healthy-4"))
        .assert()
        .code(2);
}

#[test]
fn a_live_until_line_is_noted_in_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.jsonl");
    gate()
        .args(["record", "--no-gpu", "--until", "^timed done", "-o"])
        .arg(&out)
        .args([
            "--",
            "python3",
            "-c",
            "import time\nt=time.time()\nwhile time.time()-t<1.0: pass\nprint('timed done', flush=True)\ntime.sleep(1.0)",
        ])
        .assert()
        .success();
    let t = Trace::load(&out).unwrap();
    let note = t
        .events
        .iter()
        .find(|e| e.message.starts_with(WINDOW_CLOSED_NOTE))
        .expect("the recorder notes the --until line");
    assert_eq!(t.closed_at_ms, Some(note.t));
    // About a second after the line is left out of the window.
    let cut = t.teardown_s().unwrap();
    assert!((0.5..2.5).contains(&cut), "teardown {cut} s");
}

#[test]
fn causes_are_ranked_by_the_share_of_the_slowdown_they_explain() {
    let dir = project(DECLARED);
    // fp32 without TF32: 6.9x slower, the math left the tensor cores.
    let r = check_json(dir.path(), &timm("fp32"), &[]);
    assert_eq!(r["verdict"], "regression");
    let first = &r["diagnosis"][0];
    assert_eq!(first["rule"], "tensor_cores_unused", "{}", r["diagnosis"]);
    let share = first["explains_pct"].as_f64().unwrap();
    assert!(share > 40.0, "explains {share} %");
    assert!(first["explanation"]
        .as_str()
        .unwrap()
        .contains("of the slowdown"));
    // Every finding with a share comes after no finding with a larger one
    // by more than the ranking's resolution.
    let shares: Vec<f64> = r["diagnosis"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["explains_pct"].as_f64())
        .collect();
    for w in shares.windows(2) {
        assert!(
            w[1] <= w[0] + gpugate::diagnose::SHARE_RESOLUTION_PCT,
            "{shares:?}"
        );
    }
    // The host preprocessing on the CPU: the GPU idles, host_bound first,
    // and it explains most of the slowdown.
    let r = check_json(dir.path(), &timm("cpu-preprocess"), &[]);
    let first = &r["diagnosis"][0];
    assert_eq!(first["rule"], "host_bound", "{}", r["diagnosis"]);
    assert!(first["explains_pct"].as_f64().unwrap() > 80.0);
    // Copies of every block's output to the host: the copy cause of its own.
    let r = check_json(dir.path(), &timm("d2h-copy"), &[]);
    assert_eq!(
        r["diagnosis"][0]["rule"], "blocking_d2h_copy",
        "{}",
        r["diagnosis"]
    );
}

#[test]
fn a_suite_workloads_until_closes_its_window() {
    let dir = project(&format!(
        "{DECLARED}\n[[suite.workload]]\nname = \"vit\"\nbaseline = \"b\"\ncommand = [\"python3\", \"-m\", \"pytest\"]\nuntil = '^gate: timed-end'\n"
    ));
    let out = gate()
        .current_dir(dir.path())
        .args(["check", "--suite", "--format", "json", "--suite-replay"])
        .arg(format!("vit={}", timm("healthy-4").display()))
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let run = &r["workloads"][0]["report"]["runs"][0];
    assert_eq!(run["closed_by_until"], true, "{r}");
    assert!(run["teardown_s"].as_f64().unwrap() > 3.0, "{run}");
}
