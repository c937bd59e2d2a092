//! Shared helpers of the integration tests: synthetic traces (the library's
//! `gpugate::synthetic`), running the real `gate` binary, JUnit validation
//! with xmllint.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub use gpugate::synthetic::Signature;

/// gate.toml declaring the fixture workloads' throughput (they print
/// `final_samples_per_s: N` at the end), as this repository's gate.toml does.
pub const THROUGHPUT_TOML: &str = r#"
[user_metrics.samples_per_s]
regex = '^final_samples_per_s: ([0-9.eE+-]+)'
direction = "higher_is_better"
unit = "1/s"
aggregate = "last"
"#;

/// The `gate` binary, run in `dir`, with CI variables cleared so the
/// host's environment cannot change what a test sees.
pub fn gate(dir: &Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("gate").unwrap();
    c.current_dir(dir);
    for var in [
        "GITHUB_ACTIONS",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_OUTPUT",
        "CI_COMMIT_SHA",
        "GITHUB_SHA",
        "NO_COLOR",
        "CLICOLOR_FORCE",
        "CLICOLOR",
        // History: where runs go, and the branch they are recorded on.
        "GATE_HISTORY_URL",
        "GITHUB_HEAD_REF",
        "GITHUB_REF_NAME",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
        "CI_COMMIT_REF_NAME",
    ] {
        c.env_remove(var);
    }
    c
}

/// `sig` as the capture/check tests run it: run `seed`, 20 warm-up and 600
/// steady samples at 100 ms, GPU model "NVIDIA H200", a metrics file, and
/// no GPM glitches (so every steady sample counts: `n = 1200` for two runs).
pub fn run(sig: Signature, seed: u64) -> Signature {
    Signature {
        seed,
        gpu_name: "NVIDIA H200".into(),
        glitch_period: None,
        metrics_file: true,
        ..sig
    }
    .with_warmup_samples(20)
    .with_samples(600)
}

pub fn healthy(seed: u64) -> Signature {
    run(Signature::healthy(), seed)
}

/// `sig` with its printed throughput multiplied by `scale`.
pub fn throughput(sig: Signature, scale: f64) -> Signature {
    Signature {
        samples_per_s: sig.samples_per_s * scale,
        ..sig
    }
}

/// Write a one-GPU synthetic trace `name` in `dir` and return its path.
pub fn trace(dir: &Path, name: &str, s: &Signature) -> PathBuf {
    trace_gpus(dir, name, s, 1)
}

pub fn trace_gpus(dir: &Path, name: &str, s: &Signature, gpus: usize) -> PathBuf {
    gpugate::synthetic::write_in(s, gpus, dir, name).unwrap()
}

pub fn output(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Validate a JUnit file against the Jenkins xunit schema with xmllint.
/// The schema is vendored in tests/schemas (the Jenkins xunit schema, vendored).
/// Without xmllint it skips loudly on a developer machine, and fails in CI
/// (`CI` set), where `.ci/run` installs it.
pub fn assert_valid_junit(path: &Path) {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/junit-10.xsd");
    assert!(
        schema.exists(),
        "JUnit schema missing at {}",
        schema.display()
    );
    let out = match std::process::Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&schema)
        .arg(path)
        .output()
    {
        Ok(o) => o,
        Err(_) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "xmllint not installed: apt-get install -y libxml2-utils (.ci/run does)"
            );
            eprintln!("SKIP: xmllint not installed (apt-get install -y libxml2-utils)");
            return;
        }
    };
    assert!(
        out.status.success(),
        "JUnit {} does not validate:\n{}\n---\n{}",
        path.display(),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(path).unwrap_or_default()
    );
}

/// The entry of metric `id` in a `gate check --format json` report.
pub fn metric<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    report["metrics"]
        .as_array()
        .expect("metrics array")
        .iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("metric {id} not in the report"))
}

/// `gate check --baseline NAME EXTRA... --replay TRACE` in `dir`, run to completion.
pub fn check_replay(
    dir: &Path,
    baseline: &str,
    extra: &[&str],
    trace: impl AsRef<std::ffi::OsStr>,
) -> std::process::Output {
    gate(dir)
        .args(["check", "--baseline", baseline])
        .args(extra)
        .arg("--replay")
        .arg(trace)
        .output()
        .unwrap()
}

/// gate's own peak resident set in KiB (`VmHWM`, which gate prints last
/// under `GATE_PROFILE`), from its stderr.
pub fn peak_kib(stderr: &str) -> u64 {
    (stderr.lines())
        .find_map(|l| l.strip_prefix("gate: GATE_PROFILE peak resident set: "))
        .and_then(|v| v.trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak resident set in {stderr:?}"))
}

/// A synthetic healthy run whose end record carries `metrics_file` as the
/// text of the benchmark's `--metrics-file` (what `gate record` embeds).
pub fn run_with_file(dir: &Path, name: &str, seed: u64, metrics_file: &str) -> PathBuf {
    let plain = trace(dir, &format!("plain-{name}"), &healthy(seed));
    let mut out = Vec::new();
    for line in std::fs::read_to_string(&plain).unwrap().lines() {
        let mut r: serde_json::Value = serde_json::from_str(line).unwrap();
        if r["type"] == "end" {
            r["metrics_file"] = metrics_file.into();
        }
        out.push(r.to_string());
    }
    let path = dir.join(name);
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
    path
}

/// Say on stderr that a test could not run (`SKIPPED ...`: .ci/run counts
/// these lines; a skipped test never counts as passed).
pub fn skipped(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// A Python with pytest-benchmark (`GATE_TEST_PYTHON`, which .ci/run sets,
/// the venv .ci/run makes, else `python3`); None: the test says SKIPPED.
pub fn harness_python(test: &str) -> Option<String> {
    let venv = format!(
        "{}/target/harness-venv/bin/python3",
        env!("CARGO_MANIFEST_DIR")
    );
    let candidates = std::env::var("GATE_TEST_PYTHON")
        .into_iter()
        .chain([venv, "python3".to_string()]);
    for py in candidates {
        let ok = std::process::Command::new(&py)
            .args(["-c", "import pytest_benchmark"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(py);
        }
    }
    skipped(&format!("SKIPPED {test} (pytest-benchmark): no Python with pytest-benchmark; set GATE_TEST_PYTHON or pip install pytest-benchmark"));
    None
}
