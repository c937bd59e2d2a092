//! The SYNTHETIC traces committed under `tests/data/` (replayed by the CI
//! template test when the H200 fixtures are absent, and for trying `gate`
//! by hand) are exactly what the generator (`gpugate::synthetic`) writes
//! today.
//!
//! They are refreshed like every snapshot (README, "Tests"):
//! `INSTA_UPDATE=always cargo test --locked`, then review `git diff`.

use gpugate::synthetic::{self, Signature};
use std::path::{Path, PathBuf};

/// Each committed trace: file name, signature, GPUs.
fn committed() -> Vec<(String, Signature, usize)> {
    let named = |name: &str| {
        Signature::all()
            .into_iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no synthetic signature '{name}'"))
    };
    let mut out: Vec<(String, Signature, usize)> = (1..=3)
        .map(|run| {
            // Three runs of one healthy benchmark: 20 warm-up and 200 steady
            // samples on one GPU, a different noise seed each.
            let sig = Signature::healthy()
                .with_seed(run)
                .with_warmup_samples(20)
                .with_samples(200);
            (format!("synthetic-healthy-{run}.jsonl"), sig, 1)
        })
        .collect();
    out.push(("synthetic-stall-demo.jsonl".into(), named("stall-demo"), 2));
    out.push((
        "synthetic-launch-storm.jsonl".into(),
        named("launch-storm"),
        1,
    ));
    out
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// insta's switch, so one command refreshes snapshots and these files alike.
fn refreshing() -> bool {
    std::env::var("INSTA_UPDATE").is_ok_and(|v| v == "always")
}

#[test]
fn committed_synthetic_traces_match_the_generator() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, sig, ngpu) in committed() {
        let fresh = tmp.path().join(&name);
        synthetic::write(&sig, ngpu, &fresh).unwrap();
        let path = data_dir().join(&name);
        if refreshing() {
            std::fs::create_dir_all(data_dir()).unwrap();
            std::fs::copy(&fresh, &path).unwrap();
        }
        assert!(
            std::fs::read(&fresh).unwrap() == std::fs::read(&path).unwrap_or_default(),
            "{} differs from what gpugate::synthetic writes; refresh with \
             INSTA_UPDATE=always cargo test --locked and review the diff",
            path.display()
        );
        let t = gpugate::trace::Trace::load(&path).unwrap();
        let note = t.header.note.as_deref().unwrap_or("").to_lowercase();
        assert!(note.starts_with("synthetic"), "{name}: note {note:?}");
        assert!(!t.truncated, "{name}");
    }
}

#[test]
fn the_healthy_runs_read_as_healthy() {
    for run in 1..=3 {
        let path = data_dir().join(format!("synthetic-healthy-{run}.jsonl"));
        let t = gpugate::trace::Trace::load(&path).unwrap();
        let sm = gpugate::summary::summarize(&t)
            .metric("sm_active_pct")
            .expect("sm_active_pct");
        assert!(
            (sm.mean - 97.0).abs() < 1.5,
            "steady SM active ~97: {}",
            sm.mean
        );
    }
}

/// Issue 21.1: the recording dates fixtures/README.md states are the
/// traces' own. Every recorded trace's date (its header's `start_time`)
/// is one the README names, and each hold-out folder's README names its
/// traces' date.
#[test]
fn the_fixture_docs_name_the_traces_recording_dates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("fixtures/README.md")).unwrap();
    let mut checked = 0;
    for dir in [
        "fixtures/traces",
        "fixtures/holdout-jax/gpm",
        "fixtures/holdout-gnn/gpm",
        "fixtures/holdout-gnn/rerecorded/gpm",
    ] {
        let local = root.join(dir).parent().unwrap().join("README.md");
        let local = std::fs::read_to_string(&local).unwrap_or_default();
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            let first = std::fs::read_to_string(&path).unwrap();
            let header: serde_json::Value =
                serde_json::from_str(first.lines().next().unwrap()).unwrap();
            let Some(start) = header["start_time"].as_str() else {
                continue;
            };
            let date = &start[..10];
            assert!(
                readme.contains(date) && (dir == "fixtures/traces" || local.contains(date)),
                "{}: recorded {date}, a date its README does not name",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 80, "only {checked} traces checked");
}
