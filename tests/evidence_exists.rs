//! Issue 39.3: a rule never fires on a counter the trace did not record.
//! Every built-in rule runs on the GPM-stripped copy of every recorded
//! fixture (`gpugate::trace::nogpm::strip_gpm`, what `scripts/strip-gpm.sh`
//! writes): one run's diagnosis of each, and each run's change against its
//! family's first healthy run. No finding may cite a column the copy lacks:
//! no value reads "n/a" in its text or evidence, no row of its evidence
//! table shows a GPM counter, and every finding shows at least one recorded
//! number besides its share of the slowdown.

use gpugate::diagnose::{Finding, RuleSet};
use gpugate::summary::{summarize, RunSummary};
use gpugate::trace::Trace;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Every recorded trace: fixtures/traces/*.jsonl and each hold-out family's
/// gpm/ folder (their GPM recordings; the no-GPM recordings are checked as
/// recorded, below).
fn recorded(sub: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = Vec::new();
    if sub == "gpm" {
        dirs.push(Path::new(ROOT).join("fixtures/traces"));
    }
    for e in std::fs::read_dir(Path::new(ROOT).join("fixtures")).unwrap() {
        let p = e.unwrap().path();
        if p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("holdout-"))
        {
            dirs.push(p.join(sub));
        }
    }
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn stripped(path: &Path, tmp: &Path) -> RunSummary {
    let text = std::fs::read_to_string(path).unwrap();
    let twin = gpugate::trace::nogpm::strip_gpm(&text, &path.display().to_string())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let out = tmp.join(path.file_name().unwrap());
    std::fs::write(&out, twin).unwrap();
    summarize(&Trace::load(&out).unwrap())
}

/// The first healthy run of the trace's family: `cnn-healthy-1.jsonl` for
/// `cnn-sync.jsonl`, `healthy-1.jsonl` for the round-1 traces.
fn healthy_of(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let dir = path.parent().unwrap();
    let family = name.split('-').next().unwrap_or("");
    let candidate = dir.join(format!("{family}-healthy-1.jsonl"));
    if candidate.exists() {
        candidate
    } else {
        dir.join("healthy-1.jsonl")
    }
}

/// Why a finding cites what the run did not record (empty: it does not).
fn cites_missing(f: &Finding) -> Vec<String> {
    let mut out = Vec::new();
    if f.explanation.contains("n/a") {
        out.push(format!("its text shows n/a: {}", f.explanation));
    }
    for e in f.evidence.iter().filter(|e| e.contains("n/a")) {
        out.push(format!("its evidence shows n/a: {e}"));
    }
    for r in &f.rows {
        let gpm = r
            .expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| gpugate::metrics::find(w).is_some_and(|d| d.needs().starts_with("GPM")));
        if gpm && !r.expr.contains("pcie_") {
            out.push(format!("its evidence table shows GPM's {}", r.expr));
        }
    }
    if !f.rows.iter().any(|r| r.expr != "explains") {
        out.push("it shows no recorded number".into());
    }
    out
}

fn check_all(traces: &[PathBuf], strip: bool) -> (usize, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let load = |p: &Path| {
        if strip {
            stripped(p, tmp.path())
        } else {
            summarize(&Trace::load(p).unwrap())
        }
    };
    let rules = RuleSet::builtin();
    let (mut findings, mut bad) = (0, Vec::new());
    for t in traces {
        let run = load(t);
        let base = load(&healthy_of(t));
        let one = rules.diagnose(&run);
        let change = rules.explain_change(&base, &run);
        for f in one.iter().chain(&change) {
            findings += 1;
            for why in cites_missing(f) {
                bad.push(format!("{} ({}): {why}", t.display(), f.rule));
            }
        }
    }
    (findings, bad)
}

#[test]
fn no_rule_cites_a_column_a_gpm_stripped_fixture_lacks() {
    let traces = recorded("gpm");
    assert!(traces.len() > 100, "fixtures missing: {}", traces.len());
    let (findings, bad) = check_all(&traces, true);
    // The check must have had something to check.
    assert!(findings > 100, "only {findings} findings");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn no_rule_cites_a_column_a_recording_without_gpm_lacks() {
    let traces = recorded("nogpm-recorded");
    assert!(traces.len() > 40, "recordings missing: {}", traces.len());
    let (findings, bad) = check_all(&traces, false);
    assert!(findings > 20, "only {findings} findings");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
