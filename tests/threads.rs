//! Every core, the same bytes: `capture`, `check`, `report` and the
//! multi-node commands give byte-identical output with `GATE_THREADS=1`
//! (the single-threaded path) and with many threads, on recorded H200
//! fixtures and on an 8-GPU SYNTHETIC trace (`gpugate::parallel`).

mod common;

use common::*;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/traces")
        .join(name)
}

/// stdout of `gate ARGS` in `dir` with `GATE_THREADS=threads`; the exit
/// code must be 0 or 1 (pass or regression), never an error.
fn run(dir: &Path, threads: &str, args: &[&str], traces: &[PathBuf]) -> Vec<u8> {
    let out = gate(dir)
        .env("GATE_THREADS", threads)
        .args(args)
        .args(traces)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A baseline file without its creation time (the only line that may differ).
fn baseline_text(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join("baselines").join(format!("{name}.toml")))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("created"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn one_thread_and_many_give_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let eight = trace_gpus(tmp.path(), "eight.jsonl", &Signature::healthy(), 8);
    let runs = [
        fixture("healthy-1.jsonl"),
        fixture("healthy-2.jsonl"),
        fixture("healthy-3.jsonl"),
    ];
    let nodes = [
        fixture("ddp-healthy-1.jsonl"),
        fixture("ddp-straggler-gpu.jsonl"),
        fixture("ddp-comm.jsonl"),
    ];
    let mut outputs: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut baselines = Vec::new();
    for threads in ["1", "7"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut out = Vec::new();
        let cap = ["capture", "--baseline", "b", "--commit", "c", "--replay"];
        out.push(run(d, threads, &cap, &runs));
        let cap8 = ["capture", "--baseline", "e", "--commit", "c", "--replay"];
        out.push(run(d, threads, &cap8, std::slice::from_ref(&eight)));
        let capmn = [
            "capture",
            "--baseline",
            "mn",
            "--commit",
            "c",
            "--multi-node",
            "--replay",
        ];
        out.push(run(d, threads, &capmn, &nodes[..1]));
        for t in ["contention.jsonl", "host-bound.jsonl", "sync-stall.jsonl"] {
            let check = ["check", "--baseline", "b", "--format", "json", "--replay"];
            out.push(run(d, threads, &check, &[fixture(t)]));
            out.push(run(
                d,
                threads,
                &["report", "--format", "json"],
                &[fixture(t)],
            ));
        }
        let check8 = ["check", "--baseline", "e", "--format", "json", "--replay"];
        out.push(run(d, threads, &check8, std::slice::from_ref(&eight)));
        out.push(run(
            d,
            threads,
            &["report", "--format", "json"],
            std::slice::from_ref(&eight),
        ));
        let checkmn = [
            "check",
            "--baseline",
            "mn",
            "--multi-node",
            "--format",
            "json",
            "--replay",
        ];
        out.push(run(d, threads, &checkmn, &nodes));
        // Reports name when the baseline was captured: the same for both.
        let text = |o: &Vec<u8>| {
            String::from_utf8_lossy(o)
                .lines()
                .filter(|l| !l.contains("\"created\""))
                .collect::<Vec<_>>()
                .join("\n")
                .into_bytes()
        };
        outputs.push(out.iter().map(text).collect());
        baselines.push(["b", "e", "mn"].map(|n| baseline_text(d, n)));
    }
    assert_eq!(outputs[0].len(), outputs[1].len());
    for (k, (a, b)) in outputs[0].iter().zip(&outputs[1]).enumerate() {
        assert!(!a.is_empty(), "output {k} is empty");
        assert!(a == b, "output {k} differs between 1 and 7 threads");
    }
    assert_eq!(baselines[0], baselines[1]);
}

#[test]
fn a_bad_thread_count_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["0", "many", "-3", "100000"] {
        let out = gate(dir.path())
            .env("GATE_THREADS", bad)
            .args(["report", "--format", "json"])
            .arg(fixture("healthy-1.jsonl"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("GATE_THREADS='{bad}' is not a thread count")),
            "{bad}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}
