//! Data on stdout only: whenever gate prints a report on stdout, the
//! benchmark's own stdout goes to gate's stderr. Real binary, real child
//! process (host counters only, `--no-gpu`, so it runs without a GPU).

use crate::common;

use common::gate;

/// A benchmark that prints on stdout while it runs for about three seconds.
const BENCH: &[&str] = &[
    "python3",
    "-c",
    "import time\nfor i in range(6):\n    print(f'step {i} samples_per_s: 41.5', flush=True)\n    t=time.time()\n    while time.time()-t<0.5: pass\n",
];

#[test]
fn check_format_json_prints_only_json_and_passes_the_benchmark_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let capture = gate(d)
        .args([
            "capture",
            "--baseline",
            "host-only",
            "--runs",
            "2",
            "--no-gpu",
            "--",
        ])
        .args(BENCH)
        .output()
        .unwrap();
    assert!(
        capture.status.success(),
        "capture failed: {}",
        String::from_utf8_lossy(&capture.stderr)
    );
    let cap_out = String::from_utf8_lossy(&capture.stdout);
    assert!(
        !cap_out.contains("samples_per_s: 41.5"),
        "capture prints its summary on stdout, so the benchmark's lines belong on stderr:\n{cap_out}"
    );
    assert!(String::from_utf8_lossy(&capture.stderr).contains("step 4 samples_per_s: 41.5"));

    let check = gate(d)
        .args([
            "check",
            "--baseline",
            "host-only",
            "--format",
            "json",
            "--no-gpu",
            "--",
        ])
        .args(BENCH)
        .output()
        .unwrap();
    let stdout = String::from_utf8(check.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(
        matches!(check.status.code(), Some(0 | 1 | 3)),
        "exit {:?}: {stderr}",
        check.status.code()
    );
    let json: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{stdout}"));
    assert_eq!(json["baseline"]["name"], "host-only", "{json}");
    for i in 0..6 {
        assert!(
            stderr.contains(&format!("step {i} samples_per_s: 41.5\n")),
            "benchmark line {i} missing from stderr:\n{stderr}"
        );
    }
}

#[test]
fn record_keeps_the_benchmark_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let out = gate(dir.path())
        .args(["record", "--no-gpu", "-o", "t.jsonl", "--"])
        .args(BENCH)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 6, "{stdout}");
    assert!(
        stdout.starts_with("step 0 samples_per_s: 41.5\n"),
        "{stdout}"
    );
}

/// On a terminal, `gate record` redraws a live status line on stderr every
/// second; a passed-through benchmark line must never share its row. Runs
/// gate under a real pseudo-terminal (util-linux `script`) and reads the
/// bytes the terminal got.
#[test]
fn live_line_clears_itself_before_each_benchmark_line() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("util-linux 'script' is needed to run gate under a pseudo-terminal");
    }
    let dir = tempfile::tempdir().unwrap();
    let gate = env!("CARGO_BIN_EXE_gate");
    // Lines 1.3 s apart, so live lines (every 1 s) come between them.
    let cmd = format!(
        "{gate} record --no-gpu -o t.jsonl -- python3 -c \
         'import time\nfor i in range(4):\n    print(\"step\", i, flush=True)\n    time.sleep(1.3)\n'"
    );
    let out = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .current_dir(dir.path())
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(
        screen.contains("target CPU"),
        "no live line drawn: {screen:?}"
    );
    let mut steps = 0;
    for row in screen.split('\n') {
        if let Some(p) = row.find("step ") {
            steps += 1;
            // What stays visible on the row is what follows the last "erase line".
            let visible = row.rsplit("\x1b[2K").next().unwrap();
            assert!(
                visible.trim_start_matches('\r').starts_with("step "),
                "a benchmark line shares its row with the live line: {row:?}"
            );
            let _ = p;
        }
    }
    assert_eq!(steps, 4, "{screen:?}");
}
