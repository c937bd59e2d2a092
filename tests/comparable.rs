//! Issue 17.5: a run of another benchmark than the baseline's is not
//! comparable (exit 3, like another GPU count), or judged with a warning
//! when gate.toml or the flag allows it; other arguments and tags warn, or
//! are refused with `[compare] arguments = "refuse"`.

use crate::common;
use common::*;
use gpugate::synthetic::Signature;
use std::path::Path;

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_str(&output(out).0).unwrap_or_else(|e| panic!("{e}: {}", output(out).1))
}

fn with_command(d: &Path, name: &str, command: &[&str], seed: u64) -> std::path::PathBuf {
    trace(
        d,
        name,
        &Signature {
            command: Some(command.iter().map(|s| s.to_string()).collect()),
            ..healthy(seed)
        },
    )
}

#[test]
fn another_program_is_not_comparable_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base: Vec<_> = (1..=3)
        .map(|i| {
            with_command(
                d,
                &format!("b{i}.jsonl"),
                &["python3", "/builds/a/train.py", "--seed", &i.to_string()],
                i,
            )
        })
        .collect();
    gate(d)
        .args(["capture", "--baseline", "train", "--replay"])
        .args(&base)
        .assert()
        .success();

    // Another checkout folder and another seed: the same benchmark, judged,
    // with a warning that names the differing arguments.
    let same = with_command(
        d,
        "same.jsonl",
        &["/usr/bin/python3", "/home/runner/train.py", "--seed", "9"],
        9,
    );
    let out = check_replay(d, "train", &["--format", "json"], &same);
    let r = json(&out);
    assert_eq!(out.status.code(), Some(0), "{r}");
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("arguments") && warnings.contains("--seed 9"),
        "{warnings}"
    );

    // Another script: not comparable, exit 3, with the fix in one reason.
    let other = with_command(d, "other.jsonl", &["python3", "infer.py"], 4);
    let out = check_replay(d, "train", &["--format", "json"], &other);
    let r = json(&out);
    assert_eq!(out.status.code(), Some(3), "{r}");
    assert_eq!(r["verdict"], "invalid");
    let reason = r["reasons"][0].as_str().unwrap();
    assert!(
        reason.contains("'python3 train.py'")
            && reason.contains("'python3 infer.py'")
            && reason.contains("allow_command_change"),
        "{reason}"
    );

    // Allowed by the flag or by gate.toml: judged, with a warning.
    let out = check_replay(d, "train", &["--allow-command-change"], &other);
    assert_eq!(out.status.code(), Some(0), "{}", output(&out).1);
    assert!(output(&out).0.contains("not the baseline's benchmark"));
    std::fs::write(
        d.join("gate.toml"),
        "[compare]\nallow_command_change = true\n",
    )
    .unwrap();
    let out = check_replay(d, "train", &[], &other);
    assert_eq!(out.status.code(), Some(0), "{}", output(&out).1);

    // Other arguments refused when asked.
    std::fs::write(d.join("gate.toml"), "[compare]\narguments = \"refuse\"\n").unwrap();
    let out = check_replay(d, "train", &["--format", "json"], &same);
    assert_eq!(out.status.code(), Some(3), "{}", output(&out).1);
    assert!(json(&out)["reasons"]
        .to_string()
        .contains("arguments = \\\"warn\\\""));
}

#[test]
fn tags_listed_in_compare_name_the_benchmark() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let b = trace(d, "b.jsonl", &healthy(1));
    gate(d)
        .args([
            "capture",
            "--baseline",
            "m",
            "--tag",
            "model=resnet50",
            "--replay",
        ])
        .arg(&b)
        .assert()
        .success();
    let t = trace(d, "t.jsonl", &healthy(2));
    // Not listed: another model only warns.
    let out = check_replay(d, "m", &["--tag", "model=vit", "--format", "json"], &t);
    assert_eq!(out.status.code(), Some(0), "{}", output(&out).1);
    assert!(json(&out)["warnings"].to_string().contains("tag model"));
    // Listed: another benchmark.
    std::fs::write(d.join("gate.toml"), "[compare]\ntags = [\"model\"]\n").unwrap();
    let out = check_replay(d, "m", &["--tag", "model=vit", "--format", "json"], &t);
    assert_eq!(out.status.code(), Some(3), "{}", output(&out).1);
    assert!(json(&out)["reasons"]
        .to_string()
        .contains("tag model = 'resnet50'"));
    let out = check_replay(d, "m", &["--tag", "model=resnet50"], &t);
    assert_eq!(out.status.code(), Some(0), "{}", output(&out).1);
    // A bad value is one line naming where it is and the choices.
    std::fs::write(d.join("gate.toml"), "[compare]\narguments = \"maybe\"\n").unwrap();
    let out = check_replay(d, "m", &[], &t);
    assert_eq!(out.status.code(), Some(2));
    let stderr = output(&out).1;
    assert!(
        stderr.contains("gate.toml: line 2") && stderr.contains("`warn` or `refuse`"),
        "{stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
}
