//! Issue 20.2: several workloads in one invocation (`gate check --suite`,
//! `gate capture --suite`), through the real binary on the recorded H200
//! fixture families and their committed baselines, with one report of each
//! kind (JUnit validated with xmllint, OpenMetrics parsed, JSON validated
//! against the check-report schema) and the documented exit-code order.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn trace(name: &str) -> String {
    repo(&format!("fixtures/traces/{name}.jsonl"))
        .display()
        .to_string()
}

const DDP: &str = r#"
[[suite.workload]]
name = "ddp"
baseline = "ddp-h200x2"
command = ["python3", "fixtures/workloads/ddp.py", "--mode", "healthy", "--seconds", "20"]
tags = { model = "ddp-mlp" }
"#;

/// A checkout with this repository's gate.toml (its suite: train, cnn,
/// gpt) plus `extra`, and the committed baselines.
fn checkout(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let toml = std::fs::read_to_string(repo("gate.toml")).unwrap();
    std::fs::write(d.join("gate.toml"), format!("{toml}\n{extra}")).unwrap();
    std::fs::create_dir_all(d.join("baselines")).unwrap();
    for b in ["train-h200", "cnn-h200", "gpt-h200", "ddp-h200x2"] {
        std::fs::copy(
            repo(&format!("baselines/{b}.toml")),
            d.join(format!("baselines/{b}.toml")),
        )
        .unwrap();
    }
    dir
}

fn suite_check(d: &Path, replays: &[(&str, &str)], extra: &[&str]) -> std::process::Output {
    let mut c = gate(d);
    c.args(["check", "--suite"]);
    for (w, t) in replays {
        c.arg("--suite-replay").arg(format!("{w}={}", trace(t)));
    }
    c.args(extra).output().unwrap()
}

#[test]
fn a_suite_judges_each_workload_against_its_own_baseline_with_one_report_each() {
    let dir = checkout(DDP);
    let d = dir.path();
    let out = suite_check(
        d,
        &[
            ("train", "healthy-3"),
            ("cnn", "cnn-sync"),
            ("gpt", "gpt-healthy-3"),
            ("ddp", "ddp-healthy-3"),
        ],
        &[
            "--junit",
            "j.xml",
            "--openmetrics",
            "m.txt",
            "--markdown",
            "r.md",
            "--json",
            "r.json",
            "--pr-comment",
            "pr/c.md",
        ],
    );
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    for w in ["train", "cnn", "gpt", "ddp"] {
        assert!(
            stdout.contains(&format!("== workload {w} (baseline ")),
            "{stdout}"
        );
    }
    assert!(
        stdout.contains("SUITE VERDICT: REGRESSION (exit 1; worst of 4 workload(s))"),
        "{stdout}"
    );
    assert!(
        stderr.contains("gate: suite: workload 2/4 'cnn' against baseline 'cnn-h200'"),
        "{stderr}"
    );

    // JSON: one report per workload, each valid against the check schema.
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(
        (r["verdict"].as_str(), r["exit_code"].as_i64()),
        (Some("regression"), Some(1))
    );
    let verdicts: Vec<(&str, &str)> = r["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["name"].as_str().unwrap(), w["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("train", "pass"),
            ("cnn", "regression"),
            ("gpt", "pass"),
            ("ddp", "pass")
        ]
    );
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo("schemas/check-report.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for w in r["workloads"].as_array().unwrap() {
        assert!(validator.is_valid(&w["report"]), "{}", w["name"]);
        assert_eq!(w["report"]["baseline"]["name"], w["baseline"]);
    }

    // JUnit: one <testsuites>, one <testsuite> per workload, valid.
    let junit = std::fs::read_to_string(d.join("j.xml")).unwrap();
    assert_valid_junit(&d.join("j.xml"));
    assert_eq!(junit.matches("<testsuites ").count(), 1, "{junit}");
    for b in ["train-h200", "cnn-h200", "gpt-h200", "ddp-h200x2"] {
        assert_eq!(
            junit
                .matches(&format!("<testsuite name=\"gate.{b}\""))
                .count(),
            1,
            "{b}"
        );
    }
    let head = junit.lines().nth(1).unwrap();
    let cases = junit.matches("<testcase ").count();
    assert!(head.contains(&format!("tests=\"{cases}\"")), "{head}");
    assert!(!head.contains("failures=\"0\""), "{head}");

    // OpenMetrics: a baseline label on every series; per-GPU series in
    // their own families with the GPU's index, UUID and model.
    let om = std::fs::read_to_string(d.join("m.txt")).unwrap();
    assert!(om.ends_with("# EOF\n"));
    let mut families = std::collections::BTreeSet::new();
    for l in om.lines() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            assert!(
                families.insert(rest.split(' ').next().unwrap().to_string()),
                "{l} twice"
            );
        } else if !l.starts_with('#') {
            assert!(l.contains("baseline=\""), "no baseline label: {l}");
            let name = l.split(['{', ' ']).next().unwrap();
            let per_gpu = l.contains(",gpu=\"") || l.contains("{gpu=\"");
            assert_eq!(name.starts_with("gate_per_gpu_"), per_gpu, "{l}");
            if per_gpu {
                assert!(
                    l.contains("uuid=\"GPU-") && l.contains("model_name=\"NVIDIA H200\""),
                    "{l}"
                );
            }
        }
    }
    assert!(
        om.contains("gate_sm_active_ratio{baseline=\"cnn-h200\",statistic=\"mean\"}"),
        "{om}"
    );
    assert!(om.contains("gate_per_gpu_sm_active_ratio{baseline=\"ddp-h200x2\",statistic=\"mean\",gpu=\"1\",uuid=\"GPU-"), "{om}");
    assert!(
        om.contains("gate_run_info{baseline=\"gpt-h200\",verdict=\"pass\"} 1"),
        "{om}"
    );

    // Markdown and the one PR comment.
    let md = std::fs::read_to_string(d.join("r.md")).unwrap();
    assert!(
        md.starts_with("## gate suite: REGRESSION (exit 1, worst of 4 workloads)"),
        "{md}"
    );
    assert!(
        md.contains("| `cnn` | `cnn-h200` | regression | 1 |"),
        "{md}"
    );
    let c = std::fs::read_to_string(d.join("pr/c.md")).unwrap();
    let first: Vec<&str> = c.lines().take(3).collect();
    assert_eq!(
        first[0],
        "**gate suite: :x: REGRESSION**: 1 of 4 workloads not passing (exit 1)"
    );
    assert!(first[1].starts_with("Top cause: `cnn`: "), "{c}");
    assert_eq!(
        first[2],
        "Workloads: `train` pass, `cnn` regression, `gpt` pass, `ddp` pass"
    );
    assert_eq!(
        c.matches("<!-- gate-pr-comment:").count(),
        1,
        "one marker: {c}"
    );
    assert!(c.contains("<!-- gate-pr-comment:suite -->\n<!-- gate-changed:yes -->"));
    assert!(c.contains("<details open><summary>workload <code>cnn</code>: regression</summary>"));
}

#[test]
fn a_workload_that_cannot_be_judged_does_not_stop_the_others_and_the_worst_code_wins() {
    let dir = checkout("[[suite.workload]]\nname = \"vit\"\nbaseline = \"vit-h200\"\ncommand = [\"python3\", \"fixtures/workloads/vit_infer.py\"]\n");
    let d = dir.path();
    // vit-h200 is not committed: a usage error (2), which outranks cnn's 1.
    let out = suite_check(
        d,
        &[
            ("cnn", "cnn-sync"),
            ("gpt", "gpt-healthy-3"),
            ("vit", "vit-healthy-1"),
        ],
        &[
            "--workload",
            "cnn",
            "--workload",
            "gpt",
            "--workload",
            "vit",
            "--format",
            "json",
            "--junit",
            "j.xml",
        ],
    );
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let w = r["workloads"].as_array().unwrap();
    assert_eq!(w.len(), 3, "train was not selected");
    assert_eq!(w[0]["verdict"], "regression");
    assert_eq!(w[1]["verdict"], "pass");
    assert_eq!(
        (w[2]["verdict"].as_str(), w[2]["exit_code"].as_i64()),
        (Some("usage error"), Some(2))
    );
    assert!(
        w[2]["error"].as_str().unwrap().contains("vit-h200"),
        "{}",
        w[2]
    );
    assert_valid_junit(&d.join("j.xml"));
    // Without it, the regression decides.
    let out = suite_check(
        d,
        &[("cnn", "cnn-sync"), ("gpt", "gpt-healthy-3")],
        &["--workload", "cnn", "--workload", "gpt"],
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn bad_suite_input_is_one_line_naming_the_fix() {
    let dir = checkout("");
    let d = dir.path();
    for (args, want) in [
        (vec!["--workload", "bert"], "--workload 'bert' is not a [[suite.workload]] of 'gate.toml' (it has: train, cnn, gpt)"),
        (vec!["--suite-replay", "cnn"], "write NAME=TRACE"),
        (vec!["--suite-replay", "cnn=x.jsonl"], "gives traces for some workloads but none for 'train'"),
    ] {
        let out = gate(d).args(["check", "--suite"]).args(&args).output().unwrap();
        let (_, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    std::fs::write(
        d.join("gate.toml"),
        "[[suite.workload]]\nname = \"a\"\nbaseline = \"b\"\ncommand = []\n",
    )
    .unwrap();
    let out = gate(d).args(["check", "--suite"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        output(&out).1.contains("command is empty"),
        "{}",
        output(&out).1
    );
    std::fs::write(d.join("gate.toml"), "").unwrap();
    let out = gate(d).args(["check", "--suite"]).output().unwrap();
    assert!(output(&out).1.contains("declares no [[suite.workload]]"));
    // --suite and --baseline exclude each other.
    let out = gate(d)
        .args(["check", "--suite", "--baseline", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn capture_suite_writes_each_workloads_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let toml = std::fs::read_to_string(repo("gate.toml")).unwrap();
    std::fs::write(d.join("gate.toml"), &toml).unwrap();
    let out = gate(d)
        .args([
            "capture",
            "--suite",
            "--workload",
            "cnn",
            "--workload",
            "gpt",
        ])
        .args(["--suite-replay", &format!("cnn={}", trace("cnn-healthy-1"))])
        .args(["--suite-replay", &format!("cnn={}", trace("cnn-healthy-2"))])
        .args(["--suite-replay", &format!("gpt={}", trace("gpt-healthy-1"))])
        .args(["--suite-replay", &format!("gpt={}", trace("gpt-healthy-2"))])
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for b in ["cnn-h200", "gpt-h200"] {
        let text = std::fs::read_to_string(d.join(format!("baselines/{b}.toml"))).unwrap();
        assert!(text.contains("runs = 2"), "{b}: {text}");
    }
    assert!(!d.join("baselines/train-h200.toml").exists());
}

/// docs/suites.md's gate.toml block is a suite gate accepts, and its
/// fresh-clone example gives the exit code it states.
#[test]
fn the_documented_suite_works_as_documented() {
    let doc = std::fs::read_to_string(repo("docs/suites.md")).unwrap();
    let block = doc.split("```toml\n").nth(1).unwrap();
    let block = &block[..block.find("```").unwrap()];
    let c = gpugate::config::Config::parse(block, "docs/suites.md").unwrap();
    let w = gpugate::commands::suite::workloads(&c, &[], &[]).unwrap();
    assert_eq!(w.len(), 2);
    assert_eq!(w[0].duration, Some(std::time::Duration::from_secs(30)));
    assert!(w[0].tags.contains(&("model".into(), "resnet50".into())));
    assert!(w[0].tags.contains(&("workload".into(), "cnn".into())));
    assert!(doc.contains("exits 1: `cnn` regressed"));
    let dir = checkout("");
    let out = suite_check(
        dir.path(),
        &[
            ("train", "healthy-3"),
            ("cnn", "cnn-sync"),
            ("gpt", "gpt-healthy-3"),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", output(&out).0);
    // The order the docs state is the one the code applies.
    assert!(doc.contains("**2** (usage: the suite's configuration or a baseline is broken) >\n**5** (a benchmark itself failed) > **1** (regression) > **3**"));
    assert_eq!(
        gpugate::commands::suite::EXIT_CODE_ORDER,
        &[2, 5, 1, 3, 4, 0]
    );
}

/// README's usage row and `gate check --help` state the suite flags and
/// the exit-code order the code applies.
#[test]
fn readme_and_help_describe_the_suite() {
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    assert!(
        readme.contains("`gate check --suite [--workload NAME]... [--suite-replay NAME=TRACE]...`")
    );
    assert!(readme.contains("exit code the worst (2 > 5 > 1 > 3 > 4 > 0"));
    let out = gate(Path::new("."))
        .args(["check", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--suite",
        "--workload <NAME>",
        "--suite-replay <NAME=TRACE>",
        "(2 > 5 > 1 > 3 > 4 >",
    ] {
        assert!(help.contains(flag), "{flag}: {help}");
    }
}

/// Issue 19.1 and 19.2 through a suite: the history database is an input
/// (a report named like it is refused before anything runs, the database
/// untouched), and each workload's run is appended only after the suite's
/// reports are written.
#[test]
fn a_suite_records_each_workload_after_its_reports_and_never_over_the_history() {
    let dir = checkout("");
    let d = dir.path();
    let replays = [("cnn", "cnn-sync"), ("gpt", "gpt-healthy-3")];
    let sel = ["--workload", "cnn", "--workload", "gpt"];
    let with = |extra: &[&str]| {
        let mut all: Vec<&str> = sel.to_vec();
        all.extend_from_slice(&["--history", "h.sqlite", "--branch", "main"]);
        all.extend_from_slice(extra);
        suite_check(d, &replays, &all)
    };
    let out = with(&["--json", "r.json"]);
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.matches("gate: recorded run").count(), 2, "{stderr}");
    assert!(d.join("r.json").exists());
    let before = std::fs::read(d.join("h.sqlite")).unwrap();
    let out = with(&["--json", "h.sqlite"]);
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the history database"), "{stderr}");
    assert!(!stderr.contains("recorded run"), "{stderr}");
    assert_eq!(std::fs::read(d.join("h.sqlite")).unwrap(), before);
    // The database cannot be written (not SQLite): a warning after the
    // reports, the verdict unchanged; with --history-required a pass becomes
    // exit 3, the reports still written.
    std::fs::write(d.join("bad.sqlite"), "not a database\n").unwrap();
    // A regression outranks the failed record (1 before 3).
    for (replays, extra, code) in [
        (&replays[..], &[][..], 1),
        (&replays[..], &["--history-required"][..], 1),
        (&replays[1..], &["--history-required"][..], 3),
    ] {
        let _ = std::fs::remove_file(d.join("r2.json"));
        let mut all: Vec<&str> = vec!["--workload", replays[0].0];
        all.extend_from_slice(&["--history", "bad.sqlite", "--json", "r2.json"]);
        all.extend_from_slice(extra);
        let out = suite_check(d, replays, &all);
        let (_, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(code), "{extra:?}: {stderr}");
        assert!(d.join("r2.json").exists(), "{extra:?}: reports first");
        assert!(stderr.contains("bad.sqlite"), "{stderr}");
    }
}

/// Issue 32.2: replayed workloads are loaded and summarised at once on the
/// cores, then judged in the suite's order: stdout, stderr (each
/// workload's lines under its own heading) and every report are the same
/// bytes as with one thread, one workload after another; a workload that
/// cannot be judged keeps its place.
#[test]
fn replayed_workloads_judged_at_once_give_the_bytes_of_one_after_another() {
    let dir = checkout("[[suite.workload]]\nname = \"vit\"\nbaseline = \"vit-h200\"\ncommand = [\"python3\", \"fixtures/workloads/vit_infer.py\"]\n");
    let d = dir.path();
    let run = |threads: &str, sub: &str| {
        std::fs::create_dir_all(d.join(sub)).unwrap();
        let mut c = gate(d);
        c.env("GATE_THREADS", threads).args(["check", "--suite"]);
        for (w, t) in [
            ("train", "sync-stall"),
            ("cnn", "cnn-healthy-3"),
            ("gpt", "gpt-launch"),
            ("vit", "vit-healthy-1"),
        ] {
            c.arg("--suite-replay").arg(format!("{w}={}", trace(t)));
        }
        for (flag, file) in [
            ("--json", "r.json"),
            ("--junit", "r.xml"),
            ("--markdown", "r.md"),
        ] {
            c.arg(flag).arg(format!("{sub}/{file}"));
        }
        let out = c.output().unwrap();
        let files: Vec<Vec<u8>> = ["r.json", "r.xml", "r.md"]
            .iter()
            .map(|f| std::fs::read(d.join(sub).join(f)).unwrap())
            .collect();
        let stderr = String::from_utf8_lossy(&out.stderr).replace(sub, "OUT");
        (out.status.code(), out.stdout, stderr, files)
    };
    let one = run("1", "out-threads-1");
    let many = run("4", "out-threads-4");
    assert_eq!(one.0, Some(2), "vit-h200 is not committed: {}", one.2);
    assert_eq!(one.0, many.0);
    assert_eq!(one.1, many.1, "stdout");
    assert_eq!(one.2, many.2, "stderr");
    assert_eq!(one.3, many.3, "reports");
    // Each workload's heading precedes its own lines, in the suite's order.
    let at = |s: &str| many.2.find(s).unwrap_or_else(|| panic!("{s}: {}", many.2));
    assert!(at("workload 1/4 'train'") < at("workload 2/4 'cnn'"));
    assert!(at("workload 3/4 'gpt'") < at("workload 4/4 'vit'"));
    assert!(at("workload 4/4 'vit'") < at("workload 'vit': "));
}

/// A bad `--until` is the suite's own mistake: refused once (exit 2, one
/// line naming the flag and the fix) before any workload is planned or
/// run, with the JUnit file and PR comment naming it as a failed check's do.
#[test]
fn a_bad_until_in_a_live_suite_is_refused_before_any_workload_runs() {
    let dir = checkout("");
    let d = dir.path();
    let out = gate(d)
        .args([
            "check",
            "--suite",
            "--no-gpu",
            "--until",
            "(",
            "--no-history",
        ])
        .args(["--junit", "j.xml", "--pr-comment", "comment/pr.md"])
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(!stderr.contains("suite: workload"), "{stderr}");
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("--until")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains("is not a valid regex") && said[0].contains("e.g. --until"));
    for file in ["j.xml", "comment/pr.md"] {
        let text = std::fs::read_to_string(d.join(file)).unwrap();
        assert!(text.contains("--until"), "{file}: {text}");
    }
}
