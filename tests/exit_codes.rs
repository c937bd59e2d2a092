//! The exit-code contract (src/exit_code.rs) with real processes: the
//! benchmark's own failure (an ImportError, `exit 1`, a SIGSEGV or SIGABRT it
//! raised itself) is 5 from `record`, `capture` and `check`; what gate or the
//! runner could not measure (no NVML, a signal gate received and forwarded)
//! stays 3. And the documented tables (README, docs/gating.md, `--help`)
//! against the constants, so the docs cannot drift from the code.

use crate::common;

use common::gate;
use gpugate::exit_code;
use gpugate::trace::{StopReason, Trace};
use std::path::Path;
use std::time::{Duration, Instant};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A Python benchmark whose import fails: Python prints the traceback and
/// exits 1. Run through argv, never a shell.
const IMPORT_ERROR: [&str; 4] = [
    "--",
    "python3",
    "-c",
    "import gpugate_no_such_module_for_the_test",
];

fn stderr_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn an_import_error_is_the_benchmarks_failure_in_record_capture_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // record
    let out = gate(d)
        .args(["record", "--no-gpu", "-o", "import.jsonl"])
        .args(IMPORT_ERROR)
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(
        out.status.code(),
        Some(exit_code::BENCHMARK_FAILED),
        "{err}"
    );
    assert!(
        err.contains("ModuleNotFoundError"),
        "the benchmark's own stderr passes through: {err}"
    );
    assert!(err.contains("exited with code 1"), "{err}");
    assert_eq!(
        Trace::load(&d.join("import.jsonl")).unwrap().exit_code(),
        Some(1)
    );

    // capture: no baseline from a failed run
    let out = gate(d)
        .args(["capture", "--baseline", "imp", "--runs", "1", "--no-gpu"])
        .args(["--baseline-dir", "baselines", "--trace-dir", "traces"])
        .args(IMPORT_ERROR)
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(
        out.status.code(),
        Some(exit_code::BENCHMARK_FAILED),
        "{err}"
    );
    assert!(err.contains("exited with code 1"), "{err}");
    assert!(!d.join("baselines/imp.toml").exists());

    // check, live, against a baseline of a good run of the same host-only kind
    let good = gate(d)
        .args([
            "record",
            "--no-gpu",
            "-o",
            "good.jsonl",
            "--",
            "sleep",
            "2.5",
        ])
        .output()
        .unwrap();
    assert_eq!(
        good.status.code(),
        Some(exit_code::PASS),
        "{}",
        stderr_of(&good)
    );
    let cap = gate(d)
        .args([
            "capture",
            "--baseline",
            "live",
            "--baseline-dir",
            "baselines",
        ])
        .args(["--replay", "good.jsonl"])
        .output()
        .unwrap();
    assert_eq!(
        cap.status.code(),
        Some(exit_code::PASS),
        "{}",
        stderr_of(&cap)
    );
    for (what, argv) in [
        ("ImportError", IMPORT_ERROR.to_vec()),
        ("sh exit 1", vec!["--", "sh", "-c", "exit 1"]),
    ] {
        let out = gate(d)
            .args(["check", "--baseline", "live", "--no-gpu"])
            .args(["--baseline-dir", "baselines", "--trace-dir", "traces"])
            .args(["--json", "check.json", "--junit", "check.xml"])
            .args(&argv)
            .output()
            .unwrap();
        let (stdout, err) = common::output(&out);
        assert_eq!(
            out.status.code(),
            Some(exit_code::BENCHMARK_FAILED),
            "{what}: {stdout}\n{err}"
        );
        assert!(stdout.contains("VERDICT: ERROR"), "{what}: {stdout}");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("check.json")).unwrap()).unwrap();
        assert_eq!(report["exit_code"], exit_code::BENCHMARK_FAILED, "{what}");
        assert_eq!(report["verdict"], "error", "{what}");
        assert!(
            report["reasons"][0]
                .as_str()
                .unwrap()
                .contains("the benchmark exited with code 1"),
            "{what}: {}",
            report["reasons"]
        );
        common::assert_valid_junit(&d.join("check.xml"));
    }
}

#[test]
fn a_benchmark_killed_by_its_own_sigsegv_or_sigabrt_failed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, argv, signal) in [
        (
            "SIGSEGV",
            vec![
                "python3",
                "-c",
                "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
            ],
            libc::SIGSEGV,
        ),
        (
            "SIGABRT",
            vec!["python3", "-c", "import os; os.abort()"],
            libc::SIGABRT,
        ),
    ] {
        let trace = d.join(format!("{name}.jsonl"));
        let out = gate(d)
            .args(["record", "--no-gpu", "-o"])
            .arg(&trace)
            .arg("--")
            .args(&argv)
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(
            out.status.code(),
            Some(exit_code::BENCHMARK_FAILED),
            "{name}: {err}"
        );
        assert!(
            err.contains(&format!("killed by signal {signal} ({name})")),
            "{name}: {err}"
        );
        let end = Trace::load(&trace).unwrap().end.unwrap();
        assert_eq!(
            (end.signal, end.reason),
            (Some(signal), StopReason::TargetExited)
        );
    }
}

#[test]
fn signals_gate_sends_itself_are_not_the_benchmarks_failure() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // gate's own stop at the end of --duration: a complete run.
    let out = gate(d)
        .args([
            "record",
            "--no-gpu",
            "--warmup",
            "100ms",
            "--duration",
            "300ms",
        ])
        .args(["-o", "window.jsonl", "--", "sleep", "30"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(exit_code::PASS),
        "{}",
        stderr_of(&out)
    );

    // The job is cancelled: gate receives SIGTERM and forwards it. The
    // benchmark dies of it, but that is not its failure: 3, retryable.
    let bin = assert_cmd::cargo::cargo_bin("gate");
    let child = std::process::Command::new(bin)
        .current_dir(d)
        .args([
            "record",
            "--no-gpu",
            "-o",
            "cancelled.jsonl",
            "--",
            "sleep",
            "30",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until it is recording (the partial trace exists), then signal it.
    let started = Instant::now();
    while !d.join("cancelled.jsonl.partial").exists() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "gate never started recording"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) on the pid of our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(exit_code::INFRA), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
    let end = Trace::load(&d.join("cancelled.jsonl"))
        .unwrap()
        .end
        .unwrap();
    assert_eq!(end.reason, StopReason::Interrupted);
}

#[test]
fn without_nvml_a_live_capture_is_3_not_the_benchmarks_failure() {
    if Path::new("/dev/nvidiactl").exists() {
        eprintln!("SKIP: this machine has an NVIDIA driver, so NVML is not missing (the test did not run)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = gate(dir.path())
        .args([
            "capture",
            "--baseline",
            "b",
            "--runs",
            "1",
            "--",
            "sh",
            "-c",
            "exit 1",
        ])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(exit_code::INFRA), "{err}");
    assert!(err.contains("libnvidia-ml.so.1"), "{err}");
}

/// `pub const NAME: i32 = N;` of src/exit_code.rs.
fn contract() -> Vec<(String, i32)> {
    let text = std::fs::read_to_string(Path::new(ROOT).join("src/exit_code.rs")).unwrap();
    let re = regex::Regex::new(r"(?m)^pub const ([A-Z_]+): i32 = (\d+);").unwrap();
    let codes: Vec<(String, i32)> = re
        .captures_iter(&text)
        .map(|c| (c[1].to_string(), c[2].parse().unwrap()))
        .collect();
    assert!(codes.len() >= 6, "{codes:?}");
    codes
}

/// The rows `| N | meaning | what to do |` of README's "### Exit codes".
fn readme_rows() -> Vec<(i32, String)> {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let section = readme
        .split("### Exit codes")
        .nth(1)
        .expect("README has '### Exit codes'");
    let section = section.split("\n#").next().unwrap();
    section
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let code = cells.get(1)?.parse().ok()?;
            Some((code, cells[2..].join(" | ")))
        })
        .collect()
}

#[test]
fn readme_docs_and_help_state_the_exit_code_contract_of_src_exit_code_rs() {
    let contract = contract();
    let rows = readme_rows();
    let documented: Vec<i32> = rows.iter().map(|(c, _)| *c).collect();
    let defined: Vec<i32> = contract.iter().map(|(_, c)| *c).collect();
    assert_eq!(
        documented, defined,
        "README's exit-code table vs src/exit_code.rs"
    );
    let row = |code: i32| rows.iter().find(|(c, _)| *c == code).unwrap().1.as_str();
    assert!(
        row(exit_code::INFRA).contains("retry"),
        "{}",
        row(exit_code::INFRA)
    );
    assert!(row(exit_code::INFRA).contains("could not measure"));
    assert!(row(exit_code::BENCHMARK_FAILED).contains("benchmark itself failed"));
    assert!(row(exit_code::BENCHMARK_FAILED).contains("never retried"));

    // docs/gating.md: every exit in its run-level table is a defined code,
    // and the benchmark's failure (5) is told apart from the measurement's (3).
    let gating = std::fs::read_to_string(Path::new(ROOT).join("docs/gating.md")).unwrap();
    let table = gating
        .split("## Run-level verdict and exit code")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    let exits: Vec<i32> = table
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            l.trim_end_matches('|')
                .rsplit('|')
                .next()
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(exits.iter().all(|c| defined.contains(c)), "{exits:?}");
    for code in [exit_code::INFRA, exit_code::BENCHMARK_FAILED] {
        assert!(
            exits.contains(&code),
            "docs/gating.md has no row with exit {code}"
        );
    }

    // gate --help names the two failure codes a pipeline must tell apart.
    let help = gate(Path::new(ROOT)).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).replace('\n', " ");
    for (code, needle) in [
        (exit_code::INFRA, "3 gate or the runner could not measure"),
        (exit_code::BENCHMARK_FAILED, "5 the benchmark itself failed"),
    ] {
        assert!(help.contains(needle), "--help lacks exit {code}: {help}");
    }
}
