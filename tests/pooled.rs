//! Issue 32.5: a capture pools several runs (or the nodes of one) by
//! selecting across the runs' own columns, parked in scratch files, with
//! no pooled copy; its percentiles are still exact. Checked on recorded
//! fixture traces against the definition itself: every run's steady
//! values of a column, concatenated, sorted and interpolated
//! (`stats::percentile_sorted`), computed here from traces loaded anew.
//! And the warning when those scratch files are memory (`TMPDIR` on a
//! tmpfs): one escaped line naming their size.

use crate::common;

use common::*;
use gpugate::summary::{Column, Run};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/traces")
        .join(name)
}

/// `gate capture` of `traces` in `dir` with `env`; the baseline it wrote.
fn capture(
    dir: &Path,
    env: &[(&str, &str)],
    extra: &[&str],
    traces: &[PathBuf],
) -> gpugate::baseline::Baseline {
    let out = gate(dir)
        .envs(env.iter().copied())
        .args(["capture", "--baseline", "p", "--replace", "--commit", "t"])
        .args(extra)
        .arg("--replay")
        .args(traces)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = dir.join("baselines/p.toml");
    gpugate::baseline::load(&path, "p").unwrap()
}

/// Percentiles of the runs' steady values of every pooled column, from
/// the definition; compared bit for bit with the baseline's.
fn assert_exact(b: &gpugate::baseline::Baseline, traces: &[PathBuf]) {
    let config = gpugate::config::Config::default();
    let loaded: Vec<gpugate::trace::Trace> = traces
        .iter()
        .map(|p| gpugate::trace::Trace::load(p).unwrap())
        .collect();
    let h = loaded[0].header.clone();
    let inputs: Vec<Run> = (loaded.into_iter())
        .map(|t| {
            let mut run = Run::derive(&t, &config);
            run.keep_samples_in_place(t);
            run
        })
        .collect();
    let columns = (h.gpu_columns.iter().map(|id| Column::GpuMean { id }))
        .chain(h.host_columns.iter().map(|id| Column::Host { id }));
    let mut checked = 0;
    for column in columns {
        let mut all: Vec<f64> = inputs
            .iter()
            .flat_map(|r| r.finite(&r.steady, &column))
            .collect();
        let Some(m) = b.metrics.get(column.id()) else {
            assert!(all.is_empty(), "{} has values but no entry", column.id());
            continue;
        };
        all.sort_by(|a, b| a.total_cmp(b));
        assert_eq!(m.n, all.len(), "{}", column.id());
        let pct = |p: f64| gpugate::stats::percentile_sorted(&all, p).to_bits();
        let got = [m.min, m.p5, m.p50, m.p95, m.p99, m.max].map(f64::to_bits);
        let want = [
            all[0].to_bits(),
            pct(5.0),
            pct(50.0),
            pct(95.0),
            pct(99.0),
            all[all.len() - 1].to_bits(),
        ];
        assert_eq!(got, want, "{}", column.id());
        checked += 1;
    }
    assert!(checked > 10, "only {checked} pooled metrics");
}

#[test]
fn pooled_percentiles_are_the_selection_across_the_runs_own_columns() {
    let dir = tempfile::tempdir().unwrap();
    let runs = [
        fixture("bert-healthy-1.jsonl"),
        fixture("bert-healthy-2.jsonl"),
        fixture("bert-healthy-3.jsonl"),
    ];
    let nodes = [
        fixture("ddp-healthy-1.jsonl"),
        fixture("ddp-straggler-gpu.jsonl"),
        fixture("ddp-comm.jsonl"),
    ];
    // Columns in memory until parked, and in scratch files from the
    // first sample (`GATE_SPILL_MB=0`); one thread and several.
    for env in [
        &[("GATE_THREADS", "1")][..],
        &[("GATE_SPILL_MB", "0"), ("GATE_THREADS", "3")][..],
    ] {
        let b = capture(dir.path(), env, &[], &runs);
        assert_eq!(b.capture.runs, 3);
        assert_exact(&b, &runs);
        let b = capture(dir.path(), env, &["--multi-node"], &nodes);
        assert_exact(&b, &nodes);
    }
}

/// The tmpfs `/dev/shm`, where this system has one.
fn shm() -> Option<PathBuf> {
    let p = PathBuf::from("/dev/shm");
    gpugate::scratch::is_tmpfs(&p).then_some(p)
}

#[test]
fn scratch_files_on_a_tmpfs_are_named_in_one_warning() {
    let Some(shm) = shm() else {
        eprintln!("no tmpfs at /dev/shm: nothing to check here");
        return;
    };
    let home = tempfile::tempdir().unwrap();
    // A TMPDIR whose name would move the terminal's cursor.
    let tmp = tempfile::Builder::new()
        .prefix("gate-\x1b[2J-")
        .tempdir_in(&shm)
        .unwrap();
    let runs = [fixture("healthy-1.jsonl"), fixture("healthy-2.jsonl")];
    let out = gate(home.path())
        .env("TMPDIR", tmp.path())
        .args(["capture", "--baseline", "t", "--commit", "t", "--replay"])
        .args(&runs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("tmpfs")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    let line = lines[0];
    assert!(!line.contains('\x1b'), "unescaped: {line:?}");
    assert!(line.starts_with("gate: warning: TMPDIR '"), "{line}");
    // The size of the first run's parked columns, in MB.
    let t = gpugate::trace::Trace::load(&runs[0]).unwrap();
    let series = t.gpu_count() * t.header.gpu_columns.len() + t.header.host_columns.len();
    let bytes = (t.sample_count() * series * 4) as f64;
    let mb = line
        .split("the ~")
        .nth(1)
        .and_then(|r| r.split(" MB").next())
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no size in {line}"));
    assert!(
        mb >= bytes / 1e6 && mb <= bytes / 1e6 * 1.2 + 1.0,
        "{mb} MB named for {bytes} bytes of columns: {line}"
    );
    // On a disk: no warning.
    let disk = tempfile::tempdir_in(home.path()).unwrap();
    let out = gate(home.path())
        .env("TMPDIR", disk.path())
        .args(["capture", "--baseline", "d", "--commit", "t", "--replay"])
        .args(&runs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    if !gpugate::scratch::is_tmpfs(disk.path()) {
        assert!(!String::from_utf8_lossy(&out.stderr).contains("tmpfs"));
    }
}
