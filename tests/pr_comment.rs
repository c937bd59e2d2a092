//! `gate check --pr-comment FILE` through the real binary: what the CI
//! templates post as the one pull/merge request comment.

use crate::common;

use common::gate;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn trace(name: &str) -> String {
    format!("{ROOT}/fixtures/traces/{name}.jsonl")
}

#[test]
fn regression_comment_puts_verdict_cause_and_movers_first() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    gate(d)
        .args(["capture", "--baseline", "train", "--replay"])
        .args([trace("healthy-1"), trace("healthy-2")])
        .assert()
        .success();
    gate(d)
        .args([
            "check",
            "--baseline",
            "train",
            "--pr-comment",
            "out/c.md",
            "--replay",
        ])
        .arg(trace("fp32-no-tf32"))
        .assert()
        .code(1);
    let text = std::fs::read_to_string(d.join("out/c.md")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("**gate: :x: REGRESSION** against baseline `train`"),
        "{text}"
    );
    assert!(lines[1].starts_with("Top cause: "), "{text}");
    assert!(
        lines[1].to_lowercase().contains("tensor"),
        "the fp32 fixture's cause: {text}"
    );
    assert!(lines[2].starts_with("Moved: `tensor_pct`"), "{text}");
    assert!(
        text.ends_with("<!-- gate-pr-comment:train -->\n<!-- gate-changed:yes -->\n"),
        "{text}"
    );

    // A clean pass (one of the baseline's own runs: healthy-3's wall time
    // is inside the noise, exit 4): a body to update an existing comment
    // with, not a new one.
    gate(d)
        .args([
            "check",
            "--baseline",
            "train",
            "--pr-comment",
            "out/c.md",
            "--replay",
        ])
        .arg(trace("healthy-2"))
        .assert()
        .success();
    let text = std::fs::read_to_string(d.join("out/c.md")).unwrap();
    assert!(
        text.starts_with("**gate: :white_check_mark: PASS**"),
        "{text}"
    );
    assert!(text.ends_with("<!-- gate-changed:no -->\n"), "{text}");
}

#[test]
fn a_check_that_cannot_run_still_leaves_a_comment() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    gate(d)
        .args([
            "check",
            "--baseline",
            "missing",
            "--pr-comment",
            "c.md",
            "--replay",
        ])
        .arg(trace("healthy-3"))
        .assert()
        .code(2);
    let text = std::fs::read_to_string(d.join("c.md")).unwrap();
    assert!(
        text.starts_with("**gate: :warning: ERROR** for baseline `missing`"),
        "{text}"
    );
    assert!(text.lines().nth(1).unwrap().contains("missing"), "{text}");
    assert!(
        text.contains("<!-- gate-pr-comment:missing -->\n<!-- gate-changed:yes -->"),
        "{text}"
    );
}
