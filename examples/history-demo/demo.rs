//! The demo history behind `docs/history-screenshot.png`: the real `gate`
//! binary run over SYNTHETIC traces, then its trend page drawn. Used by the
//! `history-demo` example (`main.rs`, which scripts/screenshots.sh runs) and
//! by tests/screenshots.rs (which checks the committed screenshot was drawn
//! from the page gate renders today), so both build the same page.
//!
//! The story on branch `main` (each step a `gate check` with `--history`):
//! a baseline captured from 3 runs, healthy checks, a launch-storm change
//! that regressed (and was reverted), a slow slide of -1 % per change that
//! every check passes and drift catches, a baseline refresh at the new
//! level, and a sync-stall regression. Commits are made-up hex ids. The
//! traces are synthetic (`gpugate::synthetic`), never measurements.
//!
//! The page is the same bytes on every build: gate stamps each run with the
//! wall clock, so once the story is recorded the demo rewrites those stamps
//! in the SQLite file to a made-up clock (run N on day N, from
//! [`FIRST_DAY`]); trace paths are relative to the output directory, and CI
//! variables are cleared for every `gate` run.

use gpugate::synthetic::{write_in, Signature};
use std::path::{Path, PathBuf};
use std::process::Command;

const CONFIG: &str = r#"# demo gate.toml (history-demo)
[user_metrics.samples_per_s]
regex = 'samples_per_s: ([0-9.eE+-]+)'
direction = "higher_is_better"
unit = "1/s"
relative = 0.10

[history]
url = "sqlite:history.sqlite"
"#;

fn sig(base: Signature, seed: u64, scale: f64) -> Signature {
    let s = Signature {
        seed,
        gpu_name: "NVIDIA H200".into(),
        glitch_period: None,
        ..base
    }
    .with_warmup_samples(20)
    .with_samples(300);
    Signature {
        samples_per_s: s.samples_per_s * scale,
        ..s
    }
}

/// The made-up clock: run 1 is recorded at this time (Unix seconds,
/// 2026-10-27T09:30:00Z), run N a day per run later.
pub const FIRST_DAY: u64 = 1_793_093_400;

/// Environment variables gate reads for the commit, the branches, the
/// history location and CI outputs: cleared, so the host cannot change
/// the story.
const CLEARED: [&str; 11] = [
    "GATE_HISTORY_URL",
    "GITHUB_SHA",
    "GITHUB_HEAD_REF",
    "GITHUB_REF_NAME",
    "GITHUB_BASE_REF",
    "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
    "CI_MERGE_REQUEST_TARGET_BRANCH_NAME",
    "CI_COMMIT_REF_NAME",
    "GITHUB_ACTIONS",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_OUTPUT",
];

fn command(dir: &Path, bin: &Path) -> Command {
    let mut c = Command::new(bin);
    c.current_dir(dir);
    for var in CLEARED {
        c.env_remove(var);
    }
    c
}

fn gate(dir: &Path, bin: &Path, args: &[&str], commit: &str) -> i32 {
    let out = command(dir, bin)
        .env("CI_COMMIT_SHA", commit)
        .args(args)
        .output()
        .expect("run gate");
    let code = out.status.code().unwrap_or(-1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let drift = stdout.lines().any(|l| l.contains("drift:"));
    eprintln!(
        "{commit}: gate {} -> exit {code}{}",
        args[0],
        if drift { " (drift reported)" } else { "" }
    );
    code
}

/// Record the demo history in `out` (a fresh `history.sqlite` there, the
/// traces beside it) with the `gate` binary `bin`, and draw its trend page:
/// returns the page's path, `out/trend.html`.
pub fn build(out: &Path, bin: &Path) -> PathBuf {
    let bin = bin
        .canonicalize()
        .expect("gate binary (build it, or set GATE)");
    let bin = bin.as_path();
    std::fs::create_dir_all(out).unwrap();
    let _ = std::fs::remove_file(out.join("history.sqlite"));
    std::fs::write(out.join("gate.toml"), CONFIG).unwrap();
    let mut n = 0u64;
    let mut commit = || {
        n += 1;
        format!("{:07x}{:05x}", 0x3a1c0de + n * 7919, n)
    };
    // Relative to `out`, the directory gate runs in: the history records
    // the trace paths.
    let trace = |name: &str, s: &Signature| {
        write_in(s, 1, out, name).unwrap();
        name.to_string()
    };
    let capture = |scale: f64, seed: u64, commit: &str| {
        let runs: Vec<String> = (0..3)
            .map(|i| {
                trace(
                    &format!("base-{seed}-{i}.jsonl"),
                    &sig(
                        Signature::healthy(),
                        seed + i,
                        scale * [0.99, 1.0, 1.01][i as usize],
                    ),
                )
            })
            .collect();
        let mut args = vec![
            "capture",
            "--baseline",
            "train-h200",
            "--replace",
            "--branch",
            "main",
            "--commit",
            commit,
            "--replay",
        ];
        args.extend(runs.iter().map(String::as_str));
        gate(out, bin, &args, commit);
    };
    let check = |name: &str, s: Signature, commit: &str| {
        let t = trace(name, &s);
        gate(
            out,
            bin,
            &[
                "check",
                "--baseline",
                "train-h200",
                "--branch",
                "main",
                "--replay",
                &t,
            ],
            commit,
        );
    };
    let jitter = [1.0, 0.997, 1.004, 0.999, 1.003, 0.996, 1.002, 1.0];
    capture(1.0, 100, &commit());
    let mut seed = 200;
    for j in jitter {
        seed += 1;
        check(
            &format!("run-{seed}.jsonl"),
            sig(Signature::healthy(), seed, j),
            &commit(),
        );
    }
    seed += 1;
    check(
        &format!("run-{seed}.jsonl"),
        sig(Signature::launch_storm(), seed, 1.0),
        &commit(),
    );
    for j in &jitter[..5] {
        seed += 1;
        check(
            &format!("run-{seed}.jsonl"),
            sig(Signature::healthy(), seed, *j),
            &commit(),
        );
    }
    for step in 1..=8 {
        seed += 1;
        let j = jitter[step % jitter.len()];
        check(
            &format!("run-{seed}.jsonl"),
            sig(Signature::healthy(), seed, (1.0 - 0.01 * step as f64) * j),
            &commit(),
        );
    }
    capture(0.92, 300, &commit());
    for j in &jitter[..6] {
        seed += 1;
        check(
            &format!("run-{seed}.jsonl"),
            sig(Signature::healthy(), seed, 0.92 * j),
            &commit(),
        );
    }
    seed += 1;
    check(
        &format!("run-{seed}.jsonl"),
        sig(Signature::sync_stall(), seed, 0.92),
        &commit(),
    );
    for j in &jitter[..4] {
        seed += 1;
        check(
            &format!("run-{seed}.jsonl"),
            sig(Signature::healthy(), seed, 0.92 * j),
            &commit(),
        );
    }
    set_clock(&out.join("history.sqlite"));
    let page = out.join("trend.html");
    let run = command(out, bin)
        .args(["history", "--baseline", "train-h200", "--html"])
        .arg(&page)
        .output()
        .expect("run gate history");
    assert!(
        run.status.success(),
        "gate history --html: {}\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    page
}

/// Restamp the recorded runs with the made-up clock: run N at
/// [`FIRST_DAY`] + N - 1 days, and each run's baseline version (the time
/// its baseline was captured) with the time of the capture run it follows.
fn set_clock(db: &Path) {
    let db = rusqlite::Connection::open(db).expect("open the demo history");
    let ids: Vec<i64> = db
        .prepare("SELECT id FROM runs ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (day, id) in ids.iter().enumerate() {
        let at = gpugate::format::rfc3339_from_unix(FIRST_DAY + 86_400 * day as u64);
        db.execute(
            "UPDATE runs SET recorded_at = ?1 WHERE id = ?2",
            rusqlite::params![at, id],
        )
        .unwrap();
    }
    db.execute(
        "UPDATE runs SET baseline_created = (SELECT c.recorded_at FROM runs c \
         WHERE c.kind = 'capture' AND c.id <= runs.id ORDER BY c.id DESC LIMIT 1)",
        [],
    )
    .unwrap();
}
