//! Issue 9, items 7-10: resource bombs and absurd values in inputs and
//! flags end with one clear line and exit 2, never a panic, a stack
//! overflow, a huge allocation or a process left behind. The limits are
//! listed in docs/limits.md.

mod common;

use common::*;
use std::path::Path;

/// `gate report TRACE --config gate.toml` in `dir`: (exit code, stderr).
fn report_with_config(dir: &Path, config_text: &str) -> (Option<i32>, String) {
    std::fs::write(dir.join("gate.toml"), config_text).unwrap();
    let t = trace(dir, "t.jsonl", &healthy(1));
    let out = gate(dir)
        .args(["report", "--config", "gate.toml"])
        .arg(&t)
        .output()
        .unwrap();
    (out.status.code(), output(&out).1)
}

fn one_error_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line, got {stderr:?}");
    assert!(lines[0].starts_with("gate: error: "), "{stderr}");
    assert!(
        lines[0].len() < 1000,
        "error line is {} bytes",
        lines[0].len()
    );
    lines[0]
}

/// Item 8: a rule `when` nested 5,000 deep, or a 100,000-term `and`,
/// overflowed the stack (exit 134).
#[test]
fn deep_or_long_rule_conditions_are_refused_with_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let deep = format!(
        "[rules.deep]\nwhen = \"{}gpu_busy_pct.mean > 1{}\"\n",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    let (code, stderr) = report_with_config(dir.path(), &deep);
    assert_eq!(code, Some(2), "{stderr}");
    let line = one_error_line(&stderr);
    assert!(
        line.contains("gate.toml: line 2: [rules.deep] when"),
        "{line}"
    );
    assert!(line.contains("over the limit of 4096"), "{line}");

    let long = format!(
        "[rules.long]\nwhen = \"{}\"\n",
        vec!["gpu_busy_pct.mean > 1"; 100_000].join(" and ")
    );
    let (code, stderr) = report_with_config(dir.path(), &long);
    assert_eq!(code, Some(2), "{stderr}");
    one_error_line(&stderr);

    let nested = format!(
        "[rules.nested]\nwhen = \"{}gpu_busy_pct.mean > 1{}\"\n",
        "(".repeat(100),
        ")".repeat(100)
    );
    let (code, stderr) = report_with_config(dir.path(), &nested);
    assert_eq!(code, Some(2), "{stderr}");
    let line = one_error_line(&stderr);
    assert!(line.contains("nested more than 32 levels"), "{line}");
}
