//! Broken inputs: every one exits 2 with a one-line error naming the file
//! and the line/column, leaves the baseline untouched, and still produces a
//! valid JUnit report so CI shows the cause.

use crate::common;

use common::*;
use std::path::Path;

fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t1 = trace(d, "h1.jsonl", &healthy(1));
    gate(d)
        .args([
            "capture",
            "--baseline",
            "train",
            "--commit",
            "c",
            "--replay",
        ])
        .arg(&t1)
        .assert()
        .success();
    let t3 = trace(d, "h3.jsonl", &healthy(3));
    (dir, t3)
}

/// Run check, expect exit 2 with `needles` in the error line, a valid JUnit
/// error report, and the baseline file byte-identical afterwards.
fn expect_usage_error(d: &Path, t3: &Path, needles: &[&str]) {
    let bpath = d.join("baselines/train.toml");
    let before = std::fs::read(&bpath).unwrap();
    let _ = std::fs::remove_file(d.join("j.xml"));
    let out = check_replay(d, "train", &["--junit", "j.xml"], t3);
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("gate: error:"))
        .unwrap_or_else(|| panic!("no error line in {stderr}"));
    for n in needles {
        assert!(line.contains(n), "{n:?} not in {line:?}");
    }
    assert_eq!(std::fs::read(&bpath).unwrap(), before, "baseline unchanged");
    assert_valid_junit(&d.join("j.xml"));
    let xml = std::fs::read_to_string(d.join("j.xml")).unwrap();
    assert!(xml.contains("<error type=\"usage\""), "{xml}");
}

fn edit_baseline(d: &Path, f: impl Fn(&str) -> String) {
    let p = d.join("baselines/train.toml");
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, f(&text)).unwrap();
}

fn line_of(d: &Path, needle: &str) -> usize {
    std::fs::read_to_string(d.join("baselines/train.toml"))
        .unwrap()
        .lines()
        .position(|l| l.contains(needle))
        .unwrap()
        + 1
}

#[test]
fn corrupted_baseline() {
    let (dir, t3) = setup();
    let d = dir.path();
    edit_baseline(d, |t| {
        t.replace("[environment]", "[environment\ngarbage ]]")
    });
    let l = line_of(d, "[environment");
    expect_usage_error(
        d,
        &t3,
        &[
            "baselines/train.toml",
            &format!("line {l}, column"),
            "re-capture",
        ],
    );
}

#[test]
fn truncated_baseline() {
    let (dir, t3) = setup();
    let d = dir.path();
    edit_baseline(d, |t| {
        let cut = t.find("[metrics.tensor_pct]").unwrap() + 12;
        t[..cut].to_string()
    });
    expect_usage_error(d, &t3, &["baselines/train.toml", "line "]);
    // Cut at a line boundary instead: the schema notices missing tables.
    edit_baseline(d, |t| t.lines().take(12).collect::<Vec<_>>().join("\n"));
    expect_usage_error(d, &t3, &["baselines/train.toml", "missing field"]);
}

#[test]
fn wrong_schema_version() {
    let (dir, t3) = setup();
    let d = dir.path();
    edit_baseline(d, |t| t.replace("schema_version = 1", "schema_version = 7"));
    let l = line_of(d, "schema_version = 7");
    expect_usage_error(
        d,
        &t3,
        &[
            "baselines/train.toml",
            &format!("line {l}, column 18"),
            "schema_version 7 is not supported",
            "gate capture --baseline",
        ],
    );
}

#[test]
fn unknown_field_in_baseline() {
    let (dir, t3) = setup();
    let d = dir.path();
    edit_baseline(d, |t| {
        t.replace(
            "[metrics.gpu_busy_pct]\n",
            "[metrics.gpu_busy_pct]\nthreshold = 0.5\n",
        )
    });
    let l = line_of(d, "threshold = 0.5");
    expect_usage_error(
        d,
        &t3,
        &[
            "baselines/train.toml",
            &format!("line {l}, column 1"),
            "threshold",
        ],
    );
}

#[test]
fn missing_baseline_names_the_capture_command() {
    let (dir, t3) = setup();
    let d = dir.path();
    let out = check_replay(d, "other", &["--junit", "j.xml"], &t3);
    assert_eq!(out.status.code(), Some(2));
    let stderr = output(&out).1;
    assert!(
        stderr.contains(
            "baseline 'other' not found in 'baselines/' (available: train); run 'gate capture --baseline other' first"
        ),
        "{stderr}"
    );
    assert_valid_junit(&d.join("j.xml"));
    // A typo gets the closest name (edit distance) besides the list.
    let out = check_replay(d, "trian", &[], &t3);
    assert_eq!(out.status.code(), Some(2));
    let stderr = output(&out).1;
    assert!(
        stderr.contains("baseline 'trian' not found in 'baselines/' (available: train); did you mean 'train'? run 'gate capture --baseline trian' first"),
        "{stderr}"
    );
}

#[test]
fn bad_gate_toml() {
    let (dir, t3) = setup();
    let d = dir.path();
    let cases: [(&str, &[&str]); 5] = [
        (
            "[defaults]\nthreshold = 0.1\nthresold = 0.2\n",
            &["gate.toml: line 3, column 1", "thresold"],
        ),
        (
            "[metrics.sm_active]\nrelative = 0.1\n",
            &["gate.toml: line 1, column 10", "unknown metric 'sm_active'"],
        ),
        (
            "[metrics.sm_active_pct]\nstatistic = \"p97\"\n",
            &["gate.toml: line 2, column 13", "unknown statistic 'p97'"],
        ),
        (
            "[user_metrics.tput]\nregex = '[0-9]+'\ndirection = \"higher_is_better\"\n",
            &["gate.toml: line 2", "one capture group"],
        ),
        ("[defaults\nthreshold = 0.1\n", &["gate.toml: line 1"]),
    ];
    for (text, needles) in cases {
        std::fs::write(d.join("gate.toml"), text).unwrap();
        expect_usage_error(d, &t3, needles);
    }
    // --config pointing nowhere is an error, the default path is optional.
    std::fs::remove_file(d.join("gate.toml")).unwrap();
    let out = check_replay(d, "train", &["--config", "nope.toml"], &t3);
    assert_eq!(out.status.code(), Some(2));
    assert!(output(&out).1.contains("nope.toml"));
}

#[test]
fn corrupt_trace_is_a_usage_error_naming_the_line() {
    let (dir, _) = setup();
    let d = dir.path();
    let t = d.join("h1.jsonl");
    let mut text = std::fs::read_to_string(&t).unwrap();
    text = text.replacen("{\"type\":\"sample\"", "{\"type\":\"sampel\"", 1);
    let bad = d.join("bad.jsonl");
    std::fs::write(&bad, text).unwrap();
    let out = check_replay(d, "train", &["--junit", "j.xml"], &bad);
    assert_eq!(out.status.code(), Some(2));
    let stderr = output(&out).1;
    // Line 4: header, target_start event, processes record, first sample.
    assert!(stderr.contains("bad.jsonl: line 4, column 16"), "{stderr}");
    assert_valid_junit(&d.join("j.xml"));
}

#[test]
fn bad_flags_and_names() {
    let (dir, t3) = setup();
    let d = dir.path();
    let out = gate(d)
        .args(["check", "--baseline", "../etc/x", "--replay"])
        .arg(&t3)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = check_replay(d, "train", &["--threshold", "15"], &t3);
    assert_eq!(out.status.code(), Some(2));
    let err = output(&out).1;
    assert!(
        err.contains("--threshold") && err.contains("'15' is ambiguous"),
        "{err}"
    );
    // `--threshold 5` meant 500 % and let a -61.9 % regression pass: a bare
    // number above 1 is refused with both spellings of what was meant.
    let out = check_replay(d, "train", &["--threshold", "5"], &t3);
    assert_eq!(out.status.code(), Some(2));
    let err = output(&out).1;
    assert!(err.contains("write 5% for 5 %, or 0.05"), "{err}");
    for ok in ["5%", "0.05", "12.5%"] {
        let out = check_replay(d, "train", &["--threshold", ok], &t3);
        assert_ne!(out.status.code(), Some(2), "{ok}: {}", output(&out).1);
    }
    let out = gate(d)
        .args(["capture", "--baseline", "x", "--runs", "3", "--replay"])
        .arg(&t3)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = gate(d)
        .args(["check", "--baseline", "train"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(output(&out).1.contains("nothing to measure"));
}
