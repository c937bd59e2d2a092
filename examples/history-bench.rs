//! How fast the history is at scale (BENCHMARKS.md, section "History").
//!
//! ```text
//! cargo build --release && cargo run --release --example history-bench -- [RUNS] [METRICS]
//! ```
//!
//! 1. Appends RUNS runs (default 10,000) of METRICS metrics (default 50, 10
//!    of them gated) to a fresh SQLite file, one transaction per run as
//!    `gate check` does (WAL, synchronous=FULL), and reports the append
//!    latency. Runs alternate between branches `main` and `dev`; every 97th
//!    regressed, every 13th carries a drift finding.
//! 2. Times the real binary (`$GATE`, default target/release/gate) answering
//!    `gate history` over that file: the default listing, every run as JSON,
//!    one metric's whole series, the regressions, and the trend page; each
//!    3 times, median of the wall times.
//! 3. Times the read a `gate check` makes for drift (the last 19 runs of a
//!    branch with their gated metrics).
//! 4. With `GATE_BENCH_POSTGRES_URL` set, appends 1,000 runs to that
//!    PostgreSQL database too (it must be empty or a gate history).
//!
//! The runs are made up (values by index), the database and binary are real.

use gpugate::history::{
    self, DriftRow, Location, MetricFilter, MetricRow, Query, RunKind, RunRecord,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

fn run(i: usize, metrics: usize) -> RunRecord {
    let regressed = i.is_multiple_of(97);
    RunRecord {
        id: None,
        recorded_at: format!(
            "2026-11-{:02}T{:02}:{:02}:00Z",
            1 + i / 1440 % 28,
            i / 60 % 24,
            i % 60
        ),
        kind: if i.is_multiple_of(500) {
            RunKind::Capture
        } else {
            RunKind::Check
        },
        baseline: "train-h200".into(),
        baseline_created: format!("v{}", i / 500),
        baseline_runs: 3,
        commit: Some(format!("{:040x}", i * 2_654_435_761)),
        branch: Some(if i.is_multiple_of(2) { "main" } else { "dev" }.into()),
        tags: BTreeMap::from([("model".to_string(), "resnet50".to_string())]),
        gpu_model: "NVIDIA H200".into(),
        environment: serde_json::json!({
            "gpu_model": "NVIDIA H200", "gpu_count": 1, "driver_version": "580.159.04",
            "hostname": "gpu-runner-7", "cpu_model": "AMD EPYC", "cpu_count": 16
        }),
        verdict: if regressed { "regression" } else { "pass" }.into(),
        exit_code: i32::from(regressed),
        regressions: usize::from(regressed),
        top_rule: regressed.then(|| "kernel_fragmentation".to_string()),
        top_cause: regressed.then(|| "Kernel fragmentation".to_string()),
        gate_version: "0.1.0".into(),
        source: format!(".gate/traces/run-{i}.jsonl"),
        metrics: (0..metrics)
            .map(|m| {
                let b = 50.0 + m as f64;
                let v = b * (1.0 + ((i * 31 + m * 7) % 41) as f64 / 1000.0 - 0.02);
                MetricRow {
                    metric: format!("metric_{m:02}"),
                    unit: "%".into(),
                    direction: "higher_is_better".into(),
                    statistic: "mean".into(),
                    gated: m < 10,
                    baseline_value: Some(b),
                    baseline_sd: Some(b * 0.01),
                    value: Some(if regressed && m == 0 { b * 0.6 } else { v }),
                    change_pct: Some((v - b) / b * 100.0),
                    tolerance: Some(b * 0.1),
                    noise: Some(b * 0.02),
                    verdict: if regressed && m == 0 {
                        "regression"
                    } else if m < 10 {
                        "pass"
                    } else {
                        "info"
                    }
                    .into(),
                }
            })
            .collect(),
        drift: if i.is_multiple_of(13) {
            vec![DriftRow {
                metric: "metric_01".into(),
                shift_pct: Some(-6.0),
                shift: -3.06,
                cusum: 7.5,
                runs: 6,
                since_commit: Some("abc123".into()),
                failed: false,
                message: "drift: metric_01 (mean) has slid -6.0 %".into(),
            }]
        } else {
            Vec::new()
        },
    }
}

/// CPU seconds (user + system) of all waited-for children so far: the
/// machine this was measured on is shared, so wall time alone overstates.
fn children_cpu_s() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// CPU seconds (user + system) of this process so far.
fn self_cpu_s() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn append_bench(loc: &Location, runs: usize, metrics: usize) -> String {
    let mut store = history::open(loc, true).expect("open");
    let mut ms = Vec::with_capacity(runs);
    let t = Instant::now();
    for i in 0..runs {
        let r = run(i, metrics);
        let t0 = Instant::now();
        store.append(&r).expect("append");
        ms.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let total = t.elapsed().as_secs_f64();
    ms.sort_by(f64::total_cmp);
    format!(
        "| {} | {runs} runs x {metrics} metrics | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {:.1} s |",
        loc.engine(),
        ms.iter().sum::<f64>() / runs as f64,
        percentile(&ms, 0.5),
        percentile(&ms, 0.95),
        ms[runs - 1],
        total
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args
        .next()
        .map(|a| a.parse().expect("RUNS"))
        .unwrap_or(10_000);
    let metrics: usize = args
        .next()
        .map(|a| a.parse().expect("METRICS"))
        .unwrap_or(50);
    let gate =
        PathBuf::from(std::env::var("GATE").unwrap_or_else(|_| "target/release/gate".into()));
    let dir = tempfile::tempdir().unwrap();
    // GATE_BENCH_KEEP=DIR: build (or reuse) the database there.
    let keep = std::env::var_os("GATE_BENCH_KEEP").map(PathBuf::from);
    let db = keep
        .clone()
        .unwrap_or_else(|| dir.path().to_path_buf())
        .join("history.sqlite");
    let reuse = keep.is_some() && db.exists();
    let loc = Location::Sqlite(db.clone());

    println!("| engine | data | mean append | p50 | p95 | max | total |");
    println!("|---|---|---|---|---|---|---|");
    if !reuse {
        println!("{}", append_bench(&loc, runs, metrics));
    }
    if let Ok(url) = std::env::var("GATE_BENCH_POSTGRES_URL") {
        println!(
            "{}",
            append_bench(&Location::parse(&url).unwrap(), runs.min(1000), metrics)
        );
    }
    let size = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(db.with_extension("sqlite-wal"))
            .map(|m| m.len())
            .unwrap_or(0);
    println!(
        "\nSQLite file: {:.1} MiB for {runs} runs\n",
        size as f64 / 1048576.0
    );

    let html = dir.path().join("trend.html");
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("`gate history` (last 20 runs)", vec![]),
        (
            "`gate history --limit 0` (every run, table)",
            vec!["--limit".to_string(), "0".to_string()],
        ),
        (
            "`gate history --baseline train-h200 --limit 0 --format json` (every run, gated metrics)",
            vec!["--baseline", "train-h200", "--limit", "0", "--format", "json"]
                .into_iter()
                .map(String::from)
                .collect(),
        ),
        (
            "`gate history --metric metric_07 --limit 0` (one metric, every run)",
            vec!["--metric", "metric_07", "--limit", "0"]
                .into_iter()
                .map(String::from)
                .collect(),
        ),
        (
            "`gate history --branch main --regressions --limit 0`",
            vec!["--branch", "main", "--regressions", "--limit", "0"]
                .into_iter()
                .map(String::from)
                .collect(),
        ),
        (
            "`gate history --html F` (last 500 runs, 10 charts)",
            vec!["--html".to_string(), html.display().to_string()],
        ),
        (
            "`gate history --html F --limit 0` (every run, 10 charts)",
            vec![
                "--html".to_string(),
                html.display().to_string(),
                "--limit".into(),
                "0".into(),
            ],
        ),
    ];
    println!("| query over {runs} runs x {metrics} metrics | wall, median of 3 | CPU (user+sys), median | stdout |");
    println!("|---|---|---|---|");
    for (what, extra) in cases
        .into_iter()
        .filter(|_| std::env::var_os("GATE_BENCH_READ_ONLY").is_none())
    {
        let mut times = Vec::new();
        let mut cpu = Vec::new();
        let mut bytes = 0;
        for _ in 0..3 {
            let c0 = children_cpu_s();
            let t = Instant::now();
            let out = Command::new(&gate)
                .arg("history")
                .arg("--history")
                .arg(&db)
                .args(&extra)
                .output()
                .expect("run gate (build it: cargo build --release, or set GATE)");
            times.push(t.elapsed().as_secs_f64());
            cpu.push(children_cpu_s() - c0);
            assert!(
                out.status.success(),
                "{what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            bytes = out.stdout.len();
        }
        times.sort_by(f64::total_cmp);
        cpu.sort_by(f64::total_cmp);
        println!(
            "| {what} | {:.0} ms | {:.0} ms | {:.1} KiB |",
            times[1] * 1e3,
            cpu[1] * 1e3,
            bytes as f64 / 1024.0
        );
    }

    // The drift read of one `gate check`.
    let mut store = history::open(&loc, false).unwrap();
    let t = Instant::now();
    let c0 = self_cpu_s();
    let all = store
        .runs(&Query {
            metrics: MetricFilter::Gated,
            ..Query::default()
        })
        .unwrap();
    println!(
        "\nIn-process read of every run with its gated metrics ({} runs): {:.0} ms wall, {:.0} ms CPU",
        all.len(),
        t.elapsed().as_secs_f64() * 1e3,
        (self_cpu_s() - c0) * 1e3
    );
    let mut ms = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let prev = store
            .runs(&Query {
                baseline: Some("train-h200".into()),
                branch: Some("main".into()),
                kind: Some(RunKind::Check),
                baseline_created: Some(format!("v{}", (runs - 1) / 500)),
                metrics: MetricFilter::Gated,
                limit: Some(19),
                ..Query::default()
            })
            .unwrap();
        assert!(!prev.is_empty());
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    println!(
        "\nDrift read of one check (last 19 runs of a branch, gated metrics): median {:.2} ms",
        percentile(&ms, 0.5)
    );
}
