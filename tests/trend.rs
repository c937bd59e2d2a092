//! Issue 20.6: with `--history`, the PR comment and the JSON report show
//! each gated metric's recent past on the target branch (a sparkline and
//! the numbers) and the check's drift findings; without it, nothing.
//! Through the real binary on recorded H200 fixtures against the committed
//! `gpt-h200` baseline: three healthy checks on `main`, then a pull request
//! (`gpt-tensor`, -12.6 % throughput) whose base is `main`.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn checkout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(repo("gate.toml"), d.join("gate.toml")).unwrap();
    std::fs::create_dir_all(d.join("baselines")).unwrap();
    std::fs::copy(
        repo("baselines/gpt-h200.toml"),
        d.join("baselines/gpt-h200.toml"),
    )
    .unwrap();
    dir
}

fn check(d: &Path, fixture: &str, env: &[(&str, &str)], extra: &[&str]) -> std::process::Output {
    let mut c = gate(d);
    c.env_remove("GITHUB_BASE_REF")
        .env_remove("CI_MERGE_REQUEST_TARGET_BRANCH_NAME");
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(["check", "--baseline", "gpt-h200", "--replay"])
        .arg(repo(&format!("fixtures/traces/{fixture}.jsonl")))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn the_pr_comment_and_json_show_the_trend_on_the_target_branch_only_with_history() {
    let dir = checkout();
    let d = dir.path();
    // Without --history: no trend anywhere.
    let out = check(
        d,
        "gpt-tensor",
        &[],
        &["--json", "r.json", "--pr-comment", "c.md"],
    );
    assert_eq!(out.status.code(), Some(1));
    let json = std::fs::read_to_string(d.join("r.json")).unwrap();
    assert!(!json.contains("\"trend\""), "{json}");
    assert!(!std::fs::read_to_string(d.join("c.md"))
        .unwrap()
        .contains("Trend"));

    // Three checks on main, one on another branch (not shown).
    let h = ["--history", "h.sqlite"];
    for f in ["gpt-healthy-1", "gpt-healthy-2", "gpt-healthy-3"] {
        let out = check(d, f, &[("GITHUB_REF_NAME", "main")], &h);
        assert_eq!(out.status.code(), Some(0), "{}", output(&out).1);
    }
    let out = check(d, "gpt-memory", &[("GITHUB_REF_NAME", "other")], &h);
    assert_eq!(out.status.code(), Some(1));

    // The pull request, based on main.
    let pr = [
        ("GITHUB_HEAD_REF", "fp32-block"),
        ("GITHUB_BASE_REF", "main"),
    ];
    let mut args = h.to_vec();
    args.extend(["--json", "r.json", "--pr-comment", "c.md"]);
    let out = check(d, "gpt-tensor", &pr, &args);
    assert_eq!(out.status.code(), Some(1), "{}", output(&out).1);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    let t = &r["trend"];
    assert_eq!(
        (t["branch"].as_str(), t["runs"].as_u64()),
        (Some("main"), Some(3)),
        "{t}"
    );
    let tput = t["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "samples_per_s")
        .unwrap_or_else(|| panic!("{t}"));
    let values: Vec<f64> = tput["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(values.len(), 4, "three earlier runs and this one");
    assert_eq!(
        values[3],
        metric(&r, "samples_per_s")["new"].as_f64().unwrap()
    );
    let spark: Vec<char> = tput["sparkline"].as_str().unwrap().chars().collect();
    assert_eq!(spark.len(), 4);
    assert_eq!(spark[3], '▁', "the slower PR run is the lowest: {spark:?}");
    assert!(spark[..3].iter().all(|&c| c >= '▆'), "{spark:?}");
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo("schemas/check-report.schema.json")).unwrap(),
    )
    .unwrap();
    assert!(jsonschema::validator_for(&schema).unwrap().is_valid(&r));

    let c = std::fs::read_to_string(d.join("c.md")).unwrap();
    assert!(
        c.contains("**Trend on `main`** (3 earlier runs, oldest first, this run last):"),
        "{c}"
    );
    let row = c
        .lines()
        .find(|l| l.starts_with("| `samples_per_s` |"))
        .unwrap();
    assert!(
        row.contains(&format!("`{}`", tput["sparkline"].as_str().unwrap())),
        "{row}"
    );
    assert!(row.contains(" · **"), "this run last, in bold: {row}");
}

/// README and docs/history.md say what the test above checks.
#[test]
fn the_docs_state_the_trend() {
    let doc = std::fs::read_to_string(repo("docs/history.md")).unwrap();
    assert!(doc.contains("reads the last 10 checks of the same baseline on the **target branch**"));
    assert_eq!(gpugate::history::trend::TREND_RUNS, 10);
    assert!(doc.contains("`| metric | trend | values |`"));
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    assert!(
        readme.contains("JSON report then show each gated metric's last runs on the target branch")
    );
}
