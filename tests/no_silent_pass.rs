//! Issue 9, item 2: a gate that judged nothing, or judged against absurd
//! numbers, must never pass. Each test is a reproduction from the issue,
//! run through the real binary or the real functions.

use crate::common;

use common::*;
use gpugate::baseline;
use gpugate::config::Config;
use gpugate::gate::Verdict;
use gpugate::summary::Run;
use gpugate::trace::Trace;
use std::path::{Path, PathBuf};

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

/// `train-h200.toml` cut before its first `[metrics.` table: it used to
/// print `VERDICT: PASS (exit 0): 0 gated metric(s)` for a broken run.
#[test]
fn baseline_cut_before_its_metrics_is_unmeasured_not_pass() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = std::fs::read_to_string(repo("baselines/train-h200.toml")).unwrap();
    let cut = &text[..text.find("\n[metrics.").unwrap() + 1];
    std::fs::create_dir_all(d.join("baselines")).unwrap();
    std::fs::write(d.join("baselines/train-h200.toml"), cut).unwrap();
    std::fs::copy(repo("gate.toml"), d.join("gate.toml")).unwrap();
    let out = check_replay(
        d,
        "train-h200",
        &[],
        repo("fixtures/traces/fp32-no-tf32.jsonl"),
    );
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stdout.contains("UNMEASURED"), "{stdout}");
    assert!(stdout.contains("no gated metric was judged"), "{stdout}");
}

/// Every line boundary of the committed baseline: a prefix that still
/// parses either fails the fp32 regression or passes on the metrics it
/// judged while warning about those it lacks; never on nothing.
#[test]
fn no_prefix_of_a_baseline_passes_a_regressed_run() {
    let text = std::fs::read_to_string(repo("baselines/train-h200.toml")).unwrap();
    let config = Config::load(&repo("gate.toml"), true).unwrap();
    let rules = config.rule_set().unwrap();
    let trace = Trace::load(&repo("fixtures/traces/fp32-no-tf32.jsonl")).unwrap();
    let runs = [Run::derive(&trace, &config)];
    let mut parsed = 0;
    let mut at = 0;
    while let Some(nl) = text[at..].find('\n') {
        at += nl + 1;
        // Only a cut at a table boundary can parse (every table has
        // required fields); parsing all ~950 prefixes in a debug build
        // takes half a minute for nothing.
        if !text[at..].starts_with('\n') && !text[at..].starts_with('[') {
            continue;
        }
        let Ok(b) = baseline::parse(&text[..at], "cut.toml") else {
            continue;
        };
        parsed += 1;
        let report = gpugate::gate::check(&gpugate::gate::CheckInput {
            baseline: &b,
            baseline_source: "cut.toml".into(),
            config: &config,
            cli_threshold: None,
            runs: &runs,
            multi_node: false,
            allow_env_mismatch: false,
            allow_command_change: false,
            cli_tags: Default::default(),
            fail_on_improvement: false,
            rules: &rules,
            acceptances: None,
            looks: 1,
            history_spread: Default::default(),
        });
        if report.exit_code() == 0 {
            // Passing is only defensible on what was judged, and the gap
            // must be said out loud.
            let judged = report
                .metrics
                .iter()
                .filter(|m| m.gated && m.verdict != Verdict::Missing)
                .count();
            assert!(
                judged > 0,
                "a baseline cut after byte {at} passed on nothing"
            );
            assert!(
                report
                    .warnings()
                    .iter()
                    .any(|w| w.contains("not in the baseline")),
                "a baseline cut after byte {at} passed without saying what it lacks: {:?}",
                report.warnings()
            );
        }
    }
    assert!(parsed > 10, "only {parsed} prefixes parsed");
}

/// Capture `train` from a healthy synthetic run in `d`; return its text.
fn capture(d: &Path) -> String {
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
    std::fs::read_to_string(d.join("baselines/train.toml")).unwrap()
}

/// In `table` of the baseline text, replace the first match of `pattern`
/// with `value`; return the new text and the 1-based line of the change.
fn edit_in_table(text: &str, table: &str, pattern: &str, value: &str) -> (String, usize) {
    let t = text
        .find(table)
        .unwrap_or_else(|| panic!("{table} not in baseline"));
    let re = regex::Regex::new(pattern).unwrap();
    let m = re
        .find(&text[t..])
        .unwrap_or_else(|| panic!("{pattern} not in {table}"));
    let (a, b) = (t + m.start(), t + m.end());
    let line = text[..a].matches('\n').count() + 1;
    (format!("{}{value}{}", &text[..a], &text[b..]), line)
}

/// Item 2: statistics of 1e308 judged a 99.9 % drop a pass; nan/inf made
/// a metric "missing" without failing; `ci95 = -1000` made a drop
/// "inconclusive". Each is refused at load with file:line, exit 2.
#[test]
fn absurd_baseline_statistics_are_refused_at_load_with_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = capture(d);
    let t3 = trace(d, "h3.jsonl", &healthy(3));
    let cases = [
        (r"(?m)^mean = \S+", "mean = 1e308", "not a measurement"),
        (r"(?m)^mean = \S+", "mean = nan", "not a measurement"),
        (r"(?m)^mean = \S+", "mean = inf", "not a measurement"),
        (r"(?m)^mean = \S+", "mean = -5.0", "is negative"),
        (r"(?m)^stdev = \S+", "stdev = -1.0", "is negative"),
        (r"ci95 = [^,]+", "ci95 = -1000.0", "is negative"),
        (
            r"(?m)^p95 = \S+",
            "p95 = 0.5",
            "percentiles must not decrease",
        ),
    ];
    for (pattern, value, needle) in cases {
        let (bad, line) = edit_in_table(&text, "[metrics.sm_active_pct]", pattern, value);
        std::fs::write(d.join("baselines/train.toml"), &bad).unwrap();
        let out = check_replay(d, "train", &[], &t3);
        let (stdout, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(2), "{value}: {stdout}\n{stderr}");
        let err = stderr
            .lines()
            .find(|l| l.starts_with("gate: error:"))
            .unwrap();
        assert!(
            err.contains(&format!("baselines/train.toml: line {line}, column")),
            "{value}: {err}"
        );
        assert!(err.contains(needle), "{value}: {err}");
    }
}

/// Smaller: a baseline whose `name` differs from its file was accepted.
#[test]
fn a_baseline_named_unlike_its_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = capture(d);
    std::fs::write(d.join("baselines/other.toml"), &text).unwrap();
    let t3 = trace(d, "h3.jsonl", &healthy(3));
    let out = check_replay(d, "other", &[], &t3);
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let line = text.lines().position(|l| l.starts_with("name = ")).unwrap() + 1;
    assert!(
        stderr.contains(&format!("other.toml: line {line}, column 8: name 'train' differs from the file name 'other.toml'")),
        "{stderr}"
    );
}
