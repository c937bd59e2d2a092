//! The recorder tells the framework of a benchmark from the libraries its
//! processes map (/proc/PID/maps), without touching the process: a real
//! `gate record` of a Python process that maps a file named like PyTorch's
//! CUDA library, and of one that maps none.

use assert_cmd::Command;
use gpugate::summary::summarize;
use gpugate::trace::{EventKind, Trace};

const MAP_AND_WAIT: &str = "import mmap, sys, time\n\
f = open(sys.argv[1], 'rb')\n\
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n\
time.sleep(3)\n";

fn record(dir: &std::path::Path, argv: &[&str]) -> Trace {
    let out = dir.join("t.jsonl");
    Command::cargo_bin("gate")
        .unwrap()
        .args(["record", "--no-gpu", "-o"])
        .arg(&out)
        .arg("--")
        .args(argv)
        .assert()
        .success();
    Trace::load(&out).unwrap()
}

#[test]
fn a_mapped_framework_library_is_recorded_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("site-packages/torch/lib");
    std::fs::create_dir_all(&lib).unwrap();
    let so = lib.join("libtorch_cuda.so");
    std::fs::write(&so, vec![0u8; 4096]).unwrap();
    let t = record(
        dir.path(),
        &["python3", "-c", MAP_AND_WAIT, so.to_str().unwrap()],
    );
    let found: Vec<&str> = t
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Framework)
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(found, ["torch"], "{:?}", t.events);
    assert_eq!(summarize(&t).features.get("framework.torch"), Some(&1.0));
}

#[test]
fn a_process_without_framework_libraries_names_none() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("data.bin");
    std::fs::write(&plain, vec![0u8; 4096]).unwrap();
    let t = record(
        dir.path(),
        &["python3", "-c", MAP_AND_WAIT, plain.to_str().unwrap()],
    );
    assert!(t.events.iter().all(|e| e.kind != EventKind::Framework));
    let s = summarize(&t);
    assert!(!s.features.keys().any(|k| k.starts_with("framework.")));
}
