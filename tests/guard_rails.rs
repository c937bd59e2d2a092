//! Guard rails of issue 21.4, each as a user meets it: a mistyped
//! baseline (tests/bad_inputs.rs), a forgotten `--`, `gate history` before
//! any run was recorded, and `gate diff` marking metrics gated or context
//! exactly as `check` judges them.

use crate::common;

use common::*;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn a_forgotten_double_dash_gets_the_fixed_command() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["check", "capture"] {
        let out = gate(dir.path())
            .args([
                sub,
                "--baseline",
                "x",
                "python3",
                "bench.py",
                "--epochs",
                "3",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = output(&out).1;
        assert!(
            stderr.contains(&format!(
                "unexpected argument 'python3'; put -- before the benchmark command: gate {sub} --baseline x -- python3 bench.py --epochs 3"
            )),
            "{stderr}"
        );
    }
    let out = gate(dir.path())
        .args(["record", "-o", "t.jsonl", "python3", "b.py"])
        .output()
        .unwrap();
    assert!(output(&out)
        .1
        .contains("put -- before the benchmark command: gate record -o t.jsonl -- python3 b.py"));
    // A mistyped flag keeps clap's own suggestion.
    let out = gate(dir.path())
        .args(["check", "--baseline", "x", "--jnuit", "j.xml"])
        .output()
        .unwrap();
    let stderr = output(&out).1;
    assert!(!stderr.contains("put --"), "{stderr}");
    assert!(stderr.contains("'--junit'"), "{stderr}");
}

#[test]
fn history_of_a_new_repository_is_empty_not_broken() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = gate(d).args(["history"]).output().unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("no history yet: '.gate/history.sqlite' does not exist; run 'gate check --history .gate/history.sqlite ...'"),
        "{stderr}"
    );
    assert!(stdout.is_empty() || !stdout.contains("error"), "{stdout}");
    // JSON stays a listing (with no runs) for machines.
    let out = gate(d)
        .args(["history", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let j: serde_json::Value = serde_json::from_str(&output(&out).0).unwrap();
    assert_eq!(j["runs"].as_array().map(Vec::len), Some(0), "{j}");
    // Nothing was created by looking.
    assert!(!d.join(".gate").exists());
    // A file that is not a database is still an infrastructure failure.
    std::fs::write(d.join("bad.sqlite"), "not a database").unwrap();
    let out = gate(d)
        .args(["history", "--history", "bad.sqlite"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", output(&out).1);
}

#[test]
fn diff_marks_gated_and_context_as_check_judges_them() {
    // The repository's gate.toml declares the throughput: it decides, and
    // the utilisations are context, in check and in diff alike.
    let root = Path::new(ROOT);
    let trace = "fixtures/traces/cnn-sync.jsonl";
    let out = gate(root)
        .args(["diff", "cnn-h200", trace, "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", output(&out).1);
    let diff: serde_json::Value = serde_json::from_str(&output(&out).0).unwrap();
    assert!(diff.get("toml_diff").is_none(), "only with --toml-diff");
    let out = gate(root)
        .args([
            "check",
            "--baseline",
            "cnn-h200",
            "--format",
            "json",
            "--replay",
            trace,
        ])
        .output()
        .unwrap();
    let check: serde_json::Value = serde_json::from_str(&output(&out).0).unwrap();
    let mut compared = 0;
    for m in check["metrics"].as_array().unwrap() {
        if m.get("gpu").is_some() || m.get("node").is_some() {
            continue;
        }
        let id = m["id"].as_str().unwrap();
        let in_diff = metric(&diff, id);
        assert_eq!(
            in_diff["gated"], m["gated"],
            "{id}: diff {in_diff} vs check {m}"
        );
        compared += 1;
    }
    assert!(compared > 30, "{compared}");
    assert_eq!(metric(&diff, "samples_per_s")["gated"], true);
    assert_eq!(metric(&diff, "gpu_busy_pct")["gated"], false);
}

#[test]
fn skipped_tests_are_counted_as_skipped_not_passed() {
    // What cargo prints when the PostgreSQL tests cannot run: "ok" for each,
    // and the test's own SKIPPED line, which .ci/run counts.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    std::fs::write(
        &log,
        "running 2 tests\nSKIPPED sqlite_and_postgres_agree (PostgreSQL): no server\ntest a ... ok\nSKIPPED check_records (PostgreSQL): no server\ntest b ... ok\ntest result: ok. 2 passed\n",
    )
    .unwrap();
    let script = Path::new(ROOT).join("scripts/ci-skipped.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(&log)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        stdout.starts_with("ci: 2 skipped (not passed):\n  SKIPPED sqlite_and_postgres_agree"),
        "{stdout}"
    );
    std::fs::write(&log, "test result: ok. 2 passed\n").unwrap();
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ci: 0 skipped\n");
    // .ci/run runs the tests through it.
    let ci = std::fs::read_to_string(Path::new(ROOT).join(".ci/run")).unwrap();
    assert!(ci.contains("cargo test --locked 2>&1 | tee target/ci-test.log\nbash scripts/ci-skipped.sh target/ci-test.log"));
}

#[test]
fn ci_installs_python_packages_into_a_virtual_environment() {
    // CI runs as root: a pip install there would change the system's
    // interpreter. Every pip install of the CI scripts runs after the venv's
    // bin/ is first on PATH.
    for script in [
        ".ci/run",
        "scripts/ci-pipelines.sh",
        "scripts/ci-postgres.sh",
    ] {
        let text = std::fs::read_to_string(Path::new(ROOT).join(script)).unwrap();
        let venv = text.find("export PATH=\"$venv/bin:$PATH\"");
        for (at, _) in text.match_indices("pip install") {
            let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
            if text[line_start..at].trim_start().starts_with('#') {
                continue;
            }
            assert!(
                venv.is_some_and(|v| v < at) && text.contains("python3 -m venv \"$venv\""),
                "{script}: pip install outside a virtual environment"
            );
        }
    }
}
