//! Build a demo history with the real `gate` binary over SYNTHETIC traces,
//! then draw its trend page: what `docs/history-screenshot.png` shows.
//!
//! ```text
//! cargo run --example history-demo -- OUT_DIR      # GATE=target/debug/gate by default
//! ```
//!
//! The story on branch `main` (each step a `gate check` with `--history`):
//! a baseline captured from 3 runs, healthy checks, a launch-storm change
//! that regressed (and was reverted), a slow slide of -1 % per change that
//! every check passes and drift catches, a baseline refresh at the new
//! level, and a sync-stall regression. Commits are made-up hex ids. The
//! traces are synthetic (`gpugate::synthetic`), never measurements.

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

fn gate(dir: &Path, bin: &Path, args: &[&str], commit: &str) -> i32 {
    let out = Command::new(bin)
        .current_dir(dir)
        .env("CI_COMMIT_SHA", commit)
        .env_remove("GATE_HISTORY_URL")
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

fn main() {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| {
        eprintln!("usage: history-demo OUT_DIR");
        std::process::exit(2)
    }));
    let bin = PathBuf::from(std::env::var("GATE").unwrap_or_else(|_| "target/debug/gate".into()))
        .canonicalize()
        .expect("gate binary (build it, or set GATE)");
    std::fs::create_dir_all(&out).unwrap();
    let _ = std::fs::remove_file(out.join("history.sqlite"));
    std::fs::write(out.join("gate.toml"), CONFIG).unwrap();
    let mut n = 0u64;
    let mut commit = || {
        n += 1;
        format!("{:07x}{:05x}", 0x3a1c0de + n * 7919, n)
    };
    let trace =
        |name: &str, s: &Signature| write_in(s, 1, &out, name).unwrap().display().to_string();
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
        gate(&out, &bin, &args, commit);
    };
    let check = |name: &str, s: Signature, commit: &str| {
        let t = trace(name, &s);
        gate(
            &out,
            &bin,
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
    let page = out.join("trend.html");
    let code = Command::new(&bin)
        .current_dir(&out)
        .args(["history", "--baseline", "train-h200", "--html"])
        .arg(&page)
        .status()
        .unwrap();
    assert!(code.success());
    println!("{}", page.display());
}
