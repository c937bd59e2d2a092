//! Issue 20.3: a change acknowledges an intended regression (an accept file
//! from the change, or a reviewer's label), bounded by the target branch's
//! `gate.toml`. Through the real binary, on the recorded H200 fixture
//! `gpt-tensor` (one block's projections in fp32: throughput -12.6 %)
//! against the committed baseline `gpt-h200` and this repository's
//! gate.toml (throughput declared).

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A checkout: gate.toml (with `extra` appended) and the gpt baseline.
fn checkout(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let toml = std::fs::read_to_string(repo("gate.toml")).unwrap();
    std::fs::write(d.join("gate.toml"), format!("{toml}\n{extra}")).unwrap();
    std::fs::create_dir_all(d.join("baselines")).unwrap();
    std::fs::copy(
        repo("baselines/gpt-h200.toml"),
        d.join("baselines/gpt-h200.toml"),
    )
    .unwrap();
    dir
}

const ACCEPT_15: &str = "[[accept]]\nbaseline = \"gpt-h200\"\nmetrics = [\"samples_per_s\"]\nmax_change_pct = 15\nreason = \"fp32 projections in block 3 for accuracy (#812)\"\n";

fn check(d: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let out = check_replay(
        d,
        "gpt-h200",
        extra,
        repo("fixtures/traces/gpt-tensor.jsonl"),
    );
    let (o, e) = output(&out);
    (out.status.code(), o, e)
}

#[test]
fn an_accepted_regression_exits_0_and_every_output_says_so() {
    let dir = checkout("");
    let d = dir.path();
    let (code, _, _) = check(d, &[]);
    assert_eq!(code, Some(1), "the fixture regresses without acceptance");

    std::fs::write(d.join("gate-accept.toml"), ACCEPT_15).unwrap();
    let files = [
        "--junit",
        "j.xml",
        "--markdown",
        "r.md",
        "--json",
        "r.json",
        "--pr-comment",
        "c.md",
        "--history",
        "h.sqlite",
    ];
    let mut args = vec!["--accept", "gate-accept.toml"];
    args.extend(files);
    let (code, stdout, stderr) = check(d, &args);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("VERDICT: ACCEPTED (exit 0)"), "{stdout}");
    assert!(
        stdout.contains("ACCEPTED: 1 regression acknowledged by the change: samples_per_s -12.6 % (within 15 %, gate-accept.toml entry 1: fp32 projections in block 3 for accuracy (#812))"),
        "{stdout}"
    );

    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(
        (r["verdict"].as_str(), r["exit_code"].as_i64()),
        (Some("accepted"), Some(0))
    );
    assert_eq!(r["counts"]["accepted"], 1);
    assert_eq!(r["counts"]["regression"], 0);
    let m = metric(&r, "samples_per_s");
    assert_eq!(m["verdict"], "accepted");
    assert_eq!(m["accepted"]["by"], "gate-accept.toml entry 1");
    assert_eq!(m["accepted"]["max_change_pct"], 15.0);
    assert!(
        m["reason"]
            .as_str()
            .unwrap()
            .starts_with("ACCEPTED regression: "),
        "{m}"
    );

    // JUnit: a passed testcase whose system-out says ACCEPTED, valid.
    let junit = std::fs::read_to_string(d.join("j.xml")).unwrap();
    assert_valid_junit(&d.join("j.xml"));
    let case = junit
        .split("<testcase ")
        .find(|c| c.contains("name=\"samples_per_s\""))
        .unwrap();
    assert!(
        !case.contains("<failure") && !case.contains("<skipped"),
        "{case}"
    );
    assert!(
        case.contains("<system-out>samples_per_s mean") && case.contains("ACCEPTED regression"),
        "{case}"
    );
    assert!(junit.contains("failures=\"0\""), "{junit}");

    let md = std::fs::read_to_string(d.join("r.md")).unwrap();
    assert!(
        md.starts_with("### gate: ACCEPTED (regressions acknowledged by the change)"),
        "{md}"
    );
    let comment = std::fs::read_to_string(d.join("c.md")).unwrap();
    assert!(
        comment.starts_with("**gate: :warning: ACCEPTED regression**"),
        "{comment}"
    );
    assert!(
        comment.contains("> :warning: **ACCEPTED regression** `samples_per_s` -12.6 %, up to 15 % acknowledged by gate-accept.toml entry 1: fp32 projections in block 3 for accuracy (\\#&#8203;812)"),
        "{comment}"
    );

    // History: the run and its metric are recorded as accepted.
    let out = gate(d)
        .args(["history", "--history", "h.sqlite", "--format", "json"])
        .output()
        .unwrap();
    let h = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{h}");
    let h: serde_json::Value = serde_json::from_str(&h).unwrap();
    assert_eq!(h["runs"][0]["verdict"], "accepted", "{h}");
}

#[test]
fn beyond_the_maximum_expired_or_for_another_baseline_stays_a_regression() {
    let dir = checkout("");
    let d = dir.path();
    for (file, warning) in [
        (
            ACCEPT_15.replace("max_change_pct = 15", "max_change_pct = 10"),
            "samples_per_s moved 12.6 % the bad way, beyond the 10 % gate-accept.toml entry 1 accepts: still a regression",
        ),
        (
            format!("{ACCEPT_15}expires = \"2020-01-31\"\n"),
            "gate-accept.toml entry 1 expired on 2020-01-31: samples_per_s not accepted",
        ),
        (
            format!("{ACCEPT_15}commit = \"0000000\"\n"),
            "gate-accept.toml entry 1 was written for commit 0000000",
        ),
    ] {
        std::fs::write(d.join("gate-accept.toml"), &file).unwrap();
        let (code, stdout, stderr) = check(d, &["--accept", "gate-accept.toml", "--format", "json"]);
        assert_eq!(code, Some(1), "{file}: {stderr}");
        let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(r["verdict"], "regression");
        assert!(r["warnings"].to_string().contains(warning), "{file}: {}", r["warnings"]);
    }
    // An entry for another baseline (of the suite) is not used, and not
    // warned about here.
    std::fs::copy(
        repo("baselines/cnn-h200.toml"),
        d.join("baselines/cnn-h200.toml"),
    )
    .unwrap();
    std::fs::write(
        d.join("gate-accept.toml"),
        ACCEPT_15.replace("gpt-h200", "cnn-h200"),
    )
    .unwrap();
    let (code, _, _) = check(d, &["--accept", "gate-accept.toml"]);
    assert_eq!(code, Some(1));
    // A misspelt baseline would accept nothing, silently: exit 2 naming
    // the entry's line and the closest baseline there is.
    std::fs::write(
        d.join("gate-accept.toml"),
        format!("# why\n{}", ACCEPT_15.replace("gpt-h200", "gpt-h20")),
    )
    .unwrap();
    let (code, _, stderr) = check(d, &["--accept", "gate-accept.toml"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr
            .contains("gate-accept.toml: line 2: [[accept]] entry 1: baseline 'gpt-h20' is not in")
            && stderr.contains("did you mean 'gpt-h200'?"),
        "{stderr}"
    ); // A baseline of another job (another --baseline-dir): not an error,
       // but never silent either.
    std::fs::write(
        d.join("gate-accept.toml"),
        ACCEPT_15.replace("gpt-h200", "nightly-a100x8"),
    )
    .unwrap();
    let (code, stdout, stderr) = check(d, &["--accept", "gate-accept.toml", "--format", "json"]);
    assert_eq!(code, Some(1), "{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(
        r["warnings"].to_string().contains(
            "baseline 'nightly-a100x8' is not in 'baselines/': it accepts nothing in this check"
        ),
        "{}",
        r["warnings"]
    );
}

#[test]
fn accept_dates_are_days_of_the_calendar() {
    let dir = checkout("");
    let d = dir.path();
    for bad in ["2026-13-45", "2026-02-30", "2025-02-29", "2026-00-10"] {
        std::fs::write(
            d.join("gate-accept.toml"),
            format!("{ACCEPT_15}expires = \"{bad}\"\n"),
        )
        .unwrap();
        let (code, _, stderr) = check(d, &["--accept", "gate-accept.toml"]);
        assert_eq!(code, Some(2), "{bad}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "line 1: [[accept]] entry 1: expires \"{bad}\" is not a date of the calendar"
            )),
            "{stderr}"
        );
    }
    // A leap day exists, and an entry expiring far ahead still accepts.
    std::fs::write(
        d.join("gate-accept.toml"),
        format!("{ACCEPT_15}expires = \"2096-02-29\"\n"),
    )
    .unwrap();
    let (code, _, stderr) = check(d, &["--accept", "gate-accept.toml"]);
    assert_eq!(code, Some(0), "{stderr}");
}

fn git(d: &Path, args: &[&str]) -> bool {
    std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
        .args(args)
        .current_dir(d)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The target branch forbids acceptance; the change's own gate.toml
/// allowing it does not count (`--baseline-ref` reads the target's).
#[test]
fn the_target_branch_can_forbid_acceptance_and_the_change_cannot_override_it() {
    let dir = checkout("[accept]\nallowed = false\n");
    let d = dir.path();
    if !(git(d, &["init", "-q"])
        && git(d, &["add", "."])
        && git(d, &["commit", "-q", "-m", "target"]))
    {
        eprintln!("SKIP: no git on this machine; the --baseline-ref part is not tested");
        assert!(std::env::var_os("CI").is_none(), "git is required in CI");
        return;
    }
    // The change flips the permission in its own copy and adds an accept file.
    let toml = std::fs::read_to_string(d.join("gate.toml")).unwrap();
    std::fs::write(
        d.join("gate.toml"),
        toml.replace("allowed = false", "allowed = true"),
    )
    .unwrap();
    std::fs::write(d.join("gate-accept.toml"), ACCEPT_15).unwrap();
    let (code, stdout, _) = check(
        d,
        &[
            "--accept",
            "gate-accept.toml",
            "--baseline-ref",
            "HEAD",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, Some(1), "{stdout}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(
        r["warnings"].to_string().contains("the target branch forbids accepting regressions ([accept] allowed = false in HEAD:gate.toml)"),
        "{}",
        r["warnings"]
    );
    // Without the ref, the working tree's copy allows it: what a target
    // branch that allows acceptance gives.
    let (code, _, _) = check(d, &["--accept", "gate-accept.toml"]);
    assert_eq!(code, Some(0));
}

#[test]
fn a_reviewers_label_accepts_up_to_the_targets_bound() {
    let dir = checkout("[accept]\nlabel = \"perf-regression-ok\"\nlabel_max_change_pct = 15\n");
    let d = dir.path();
    let (code, stdout, _) = check(
        d,
        &[
            "--accept-labels",
            "bug,perf-regression-ok",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, Some(0), "{stdout}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let m = metric(&r, "samples_per_s");
    assert_eq!(m["accepted"]["by"], "label 'perf-regression-ok'");
    // Another label, or a bound below the change: still a regression.
    assert_eq!(check(d, &["--accept-labels", "bug"]).0, Some(1));
    let toml = std::fs::read_to_string(d.join("gate.toml")).unwrap();
    std::fs::write(
        d.join("gate.toml"),
        toml.replace("label_max_change_pct = 15", "label_max_change_pct = 5"),
    )
    .unwrap();
    assert_eq!(
        check(d, &["--accept-labels", "perf-regression-ok"]).0,
        Some(1)
    );
}

#[test]
fn a_bad_accept_file_is_one_line_with_the_fix() {
    let dir = checkout("");
    let d = dir.path();
    std::fs::write(
        d.join("gate-accept.toml"),
        ACCEPT_15.replace("fp32 projections in block 3 for accuracy (#812)", ""),
    )
    .unwrap();
    let (code, _, stderr) = check(d, &["--accept", "gate-accept.toml"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("gate-accept.toml: line 1: [[accept]] entry 1: reason is empty"),
        "{stderr}"
    );
    let (code, _, stderr) = check(d, &["--accept", "missing.toml"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cannot read the accept file"), "{stderr}");
}

/// The two TOML blocks of docs/gating.md's "Accepting an intended
/// regression" are what gate accepts: an accept file and `[accept]`.
#[test]
fn the_documented_tables_parse() {
    let doc = std::fs::read_to_string(repo("docs/gating.md")).unwrap();
    let start = doc.find("## Accepting an intended regression").unwrap();
    let section = &doc[start..];
    let section = &section[..section[3..].find("\n## ").unwrap() + 3];
    let blocks: Vec<&str> = section
        .split("```toml\n")
        .skip(1)
        .map(|b| &b[..b.find("```").unwrap()])
        .collect();
    assert_eq!(blocks.len(), 2);
    let file = gpugate::accept::parse_file(blocks[0], "docs").unwrap();
    assert_eq!(file.accept[0].max_change_pct, 15.0);
    assert_eq!(file.accept[0].expires.as_deref(), Some("2026-12-31"));
    let c = gpugate::config::Config::parse(blocks[1], "docs").unwrap();
    assert_eq!(c.file.accept.label.as_deref(), Some("perf-regression-ok"));
    assert_eq!(c.file.accept.label_max_change_pct, Some(10.0));
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    assert!(readme.contains("`gate check --accept FILE --accept-labels\nLIST`"));
}
