//! Every core, the same bytes: `capture`, `check`, `report` and the
//! multi-node commands give byte-identical output with `GATE_THREADS=1`
//! (the single-threaded path) and with many threads, on recorded H200
//! fixtures and on an 8-GPU SYNTHETIC trace (`gpugate::parallel`). The
//! same holds with every trace's columns in a scratch file
//! (`GATE_SPILL_MB=0`, `gpugate::trace::Columns`) and in memory.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/traces")
        .join(name)
}

/// stdout of `gate ARGS` in `dir` with the environment `env`; the exit
/// code must be 0, 1 or 3 (pass, regression, or disturbed: `contention`
/// shares the GPU with another job), never another error.
fn run(dir: &Path, env: &[(&str, &str)], args: &[&str], traces: &[PathBuf]) -> Vec<u8> {
    let out = gate(dir)
        .envs(env.iter().copied())
        .args(args)
        .args(traces)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1 | 3)),
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

/// Every output (stdout, baselines without their creation time) of the
/// commands above, run in a fresh directory with the environment `env`.
/// `eight` is an 8-GPU trace.
fn outputs(env: &[(&str, &str)], eight: &Path) -> (Vec<Vec<u8>>, [String; 3]) {
    let eight = eight.to_path_buf();
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
    {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut out = Vec::new();
        let cap = ["capture", "--baseline", "b", "--commit", "c", "--replay"];
        out.push(run(d, env, &cap, &runs));
        let cap8 = ["capture", "--baseline", "e", "--commit", "c", "--replay"];
        out.push(run(d, env, &cap8, std::slice::from_ref(&eight)));
        let capmn = [
            "capture",
            "--baseline",
            "mn",
            "--commit",
            "c",
            "--multi-node",
            "--replay",
        ];
        out.push(run(d, env, &capmn, &nodes[..1]));
        for t in ["contention.jsonl", "host-bound.jsonl", "sync-stall.jsonl"] {
            let check = ["check", "--baseline", "b", "--format", "json", "--replay"];
            out.push(run(d, env, &check, &[fixture(t)]));
            out.push(run(d, env, &["report", "--format", "json"], &[fixture(t)]));
        }
        let check8 = ["check", "--baseline", "e", "--format", "json", "--replay"];
        out.push(run(d, env, &check8, std::slice::from_ref(&eight)));
        out.push(run(
            d,
            env,
            &["report", "--format", "json"],
            std::slice::from_ref(&eight),
        ));
        // The HTML report draws every series (a value at a time).
        let html = d.join("r.html");
        let html_arg = html.to_str().unwrap();
        run(
            d,
            env,
            &["report", "--html", html_arg],
            std::slice::from_ref(&eight),
        );
        out.push(std::fs::read(&html).unwrap());
        let checkmn = [
            "check",
            "--baseline",
            "mn",
            "--multi-node",
            "--format",
            "json",
            "--replay",
        ];
        out.push(run(d, env, &checkmn, &nodes));
        // Reports name when the baseline was captured: the same for both.
        let text = |o: &Vec<u8>| {
            String::from_utf8_lossy(o)
                .lines()
                .filter(|l| !l.contains("\"created\""))
                .collect::<Vec<_>>()
                .join("\n")
                .into_bytes()
        };
        (
            out.iter().map(text).collect(),
            ["b", "e", "mn"].map(|n| baseline_text(d, n)),
        )
    }
}

/// `outputs` under two environments are the same bytes.
fn assert_same(a_env: &[(&str, &str)], b_env: &[(&str, &str)]) {
    let tmp = tempfile::tempdir().unwrap();
    let eight = trace_gpus(tmp.path(), "eight.jsonl", &Signature::healthy(), 8);
    let (a, a_base) = outputs(a_env, &eight);
    let (b, b_base) = outputs(b_env, &eight);
    assert_eq!(a.len(), b.len());
    for (k, (a, b)) in a.iter().zip(&b).enumerate() {
        assert!(!a.is_empty(), "output {k} is empty");
        assert!(a == b, "output {k} differs between {a_env:?} and {b_env:?}");
    }
    assert_eq!(a_base, b_base);
}

#[test]
fn one_thread_and_many_give_the_same_bytes() {
    assert_same(&[("GATE_THREADS", "1")], &[("GATE_THREADS", "7")]);
}

#[test]
fn columns_in_a_scratch_file_give_the_same_bytes_as_in_memory() {
    assert_same(&[("GATE_SPILL_MB", "0")], &[]);
}

/// Each of `bads` as `var` is refused before any work: exit 2, one line
/// saying `VAR='bad' <what>`.
fn assert_bad_env_refused(var: &str, bads: &[&str], what: &str) {
    let dir = tempfile::tempdir().unwrap();
    for bad in bads {
        let out = gate(dir.path())
            .env(var, bad)
            .args(["report", "--format", "json"])
            .arg(fixture("healthy-1.jsonl"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{var}='{bad}' {what}")),
            "{bad}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

#[test]
fn a_bad_spill_size_is_refused_in_one_line() {
    assert_bad_env_refused(
        "GATE_SPILL_MB",
        &["-1", "lots", "1048577"],
        "is not a size in MiB",
    );
}

/// No room for the scratch file: one line naming the trace and TMPDIR,
/// exit 3 (infrastructure), nothing written.
#[test]
fn no_scratch_room_is_an_error_naming_tmpdir() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir");
    let out = gate(dir.path())
        .env("GATE_SPILL_MB", "0")
        .env("TMPDIR", &missing)
        .args(["capture", "--baseline", "b", "--commit", "c", "--replay"])
        .arg(fixture("healthy-1.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("healthy-1.jsonl"), "{err}");
    assert!(err.contains("set TMPDIR to a directory with room"), "{err}");
    assert!(err.contains(&missing.display().to_string()), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!dir.path().join("baselines/b.toml").exists());
}

#[test]
fn a_bad_thread_count_is_refused_in_one_line() {
    assert_bad_env_refused(
        "GATE_THREADS",
        &["0", "many", "-3", "100000"],
        "is not a thread count",
    );
}
