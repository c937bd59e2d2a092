//! Issue 40.4: the real consumers of gate's outputs accept them, run on the
//! real binary's output of the recorded H200 fixtures: `promtool check
//! metrics` (Prometheus, apt `prometheus`) on the OpenMetrics file,
//! `check-jsonschema` (pip, in .ci/run's venv) on the suite JSON against
//! the generated schema, xmllint on a JUnit file whose INCONCLUSIVE is a
//! `<skipped>` with its reason, and the Bencher Metric Format's bounds. A
//! consumer that is not installed makes its test say "SKIPPED ...", never
//! pass silently (.ci/run installs them and counts the skips).

use crate::common;
use common::*;
use std::io::Write;
use std::path::{Path, PathBuf};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn trace(name: &str) -> String {
    repo(&format!("fixtures/traces/{name}.jsonl"))
        .display()
        .to_string()
}

/// A tool on PATH (or at `$env_var`), or None after saying SKIPPED.
fn consumer(test: &str, tool: &str, env_var: &str, install: &str) -> Option<PathBuf> {
    let candidate = std::env::var_os(env_var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(tool));
    let found = std::process::Command::new(&candidate)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        Some(candidate)
    } else {
        // Straight to the handle: the harness hides what the macros print.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test} ({tool}): not installed ({install}; or set {env_var})"
        );
        None
    }
}

/// This repository's gate.toml and committed baselines in a temporary
/// checkout (its suite: train, cnn, gpt).
fn checkout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(repo("gate.toml"), d.join("gate.toml")).unwrap();
    std::fs::create_dir_all(d.join("baselines")).unwrap();
    for b in ["train-h200", "cnn-h200", "gpt-h200"] {
        std::fs::copy(
            repo(&format!("baselines/{b}.toml")),
            d.join(format!("baselines/{b}.toml")),
        )
        .unwrap();
    }
    dir
}

/// `gate check --suite` of train (healthy), cnn (a host sync) and gpt, with `extra`.
fn suite(d: &Path, extra: &[&str]) -> std::process::Output {
    let out = gate(d)
        .args(["check", "--suite"])
        .args(["--suite-replay", &format!("train={}", trace("healthy-3"))])
        .args(["--suite-replay", &format!("cnn={}", trace("cnn-sync"))])
        .args(["--suite-replay", &format!("gpt={}", trace("gpt-healthy-3"))])
        .args(extra)
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    out
}

/// `promtool check metrics < FILE`: its exit code and what it said.
fn promtool(tool: &Path, file: &Path) -> (bool, String) {
    let out = std::process::Command::new(tool)
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(file).unwrap())
        .output()
        .unwrap();
    let (o, e) = output(&out);
    (out.status.success(), format!("{o}{e}"))
}

#[test]
fn promtool_accepts_the_openmetrics_of_a_check_and_of_a_suite_without_a_lint() {
    let test =
        "consumers::promtool_accepts_the_openmetrics_of_a_check_and_of_a_suite_without_a_lint";
    let Some(tool) = consumer(
        test,
        "promtool",
        "GATE_TEST_PROMTOOL",
        "apt-get install prometheus",
    ) else {
        return;
    };
    let dir = checkout();
    let d = dir.path();
    // One check of a two-GPU run (per-GPU families with their labels).
    let out = check_replay(
        d,
        "cnn-h200",
        &["--openmetrics", "one.txt"],
        trace("cnn-sync"),
    );
    assert_eq!(out.status.code(), Some(1), "{}", output(&out).1);
    suite(d, &["--openmetrics", "suite.txt"]);
    for f in ["one.txt", "suite.txt"] {
        let text = std::fs::read_to_string(d.join(f)).unwrap();
        assert!(text.contains("gate_run_info{baseline="), "{text}");
        let (ok, said) = promtool(&tool, &d.join(f));
        // promtool prints lint problems and exits 3 for them; nothing at all
        // when the file is clean.
        assert!(
            ok && said.trim().is_empty(),
            "promtool on {f}: {said}\n{text}"
        );
    }
    // promtool does reject what gate wrote before (the OpenMetrics `info`
    // type; camelCase labels): the check above is not vacuous.
    std::fs::write(
        d.join("old.txt"),
        "# TYPE gate_run info\ngate_run_info{baseline=\"b\"} 1\n# EOF\n",
    )
    .unwrap();
    assert!(
        !promtool(&tool, &d.join("old.txt")).0,
        "promtool took the info type"
    );
    std::fs::write(
        d.join("camel.txt"),
        "# HELP gate_x x\n# TYPE gate_x gauge\ngate_x{modelName=\"H200\"} 1\n",
    )
    .unwrap();
    let (_, said) = promtool(&tool, &d.join("camel.txt"));
    assert!(
        said.contains("camelCase") || said.contains("snake_case"),
        "{said}"
    );
}

#[test]
fn check_jsonschema_accepts_the_suite_json_against_the_generated_schema() {
    let test = "consumers::check_jsonschema_accepts_the_suite_json_against_the_generated_schema";
    let Some(tool) = consumer(
        test,
        "check-jsonschema",
        "GATE_TEST_CHECK_JSONSCHEMA",
        "pip install check-jsonschema in a venv (.ci/run does)",
    ) else {
        return;
    };
    let dir = checkout();
    let d = dir.path();
    suite(d, &["--json", "suite.json"]);
    let out = std::process::Command::new(&tool)
        .arg("--schemafile")
        .arg(repo("schemas/suite-report.schema.json"))
        .arg(d.join("suite.json"))
        .output()
        .unwrap();
    let (o, e) = output(&out);
    assert!(out.status.success(), "check-jsonschema: {o}{e}");
    // And it refuses a document that breaks the envelope.
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("suite.json")).unwrap()).unwrap();
    doc["workloads"][0]["report"]["verdict"] = "maybe".into();
    std::fs::write(d.join("bad.json"), doc.to_string()).unwrap();
    let out = std::process::Command::new(&tool)
        .arg("--schemafile")
        .arg(repo("schemas/suite-report.schema.json"))
        .arg(d.join("bad.json"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "check-jsonschema took a bad verdict");
}

#[test]
fn bmf_carries_the_noise_band_as_lower_and_upper_value() {
    let dir = checkout();
    let d = dir.path();
    let out = check_replay(d, "cnn-h200", &["--bmf", "b.json"], trace("cnn-sync"));
    assert_eq!(out.status.code(), Some(1), "{}", output(&out).1);
    let bmf: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("b.json")).unwrap()).unwrap();
    let bench = &bmf["cnn-h200"];
    let mut banded = 0;
    for (id, m) in bench.as_object().unwrap() {
        let v = m["value"].as_f64().unwrap();
        match (m["lower_value"].as_f64(), m["upper_value"].as_f64()) {
            (Some(lo), Some(hi)) => {
                assert!(lo <= v && v <= hi, "{id}: {lo} <= {v} <= {hi}");
                assert!(
                    (v - lo - (hi - v)).abs() <= 1e-9 * v.abs().max(1.0),
                    "{id}: symmetric"
                );
                banded += 1;
            }
            (None, None) => {}
            other => panic!("{id}: one bound only: {other:?}"),
        }
    }
    assert!(banded > 0, "no measure with a noise band: {bench}");
}

/// An INCONCLUSIVE check (a one-run baseline: wall time has no noise
/// estimate; SYNTHETIC traces) in JUnit: with `[verdict] inconclusive =
/// "pass"` the run's testcase and the undecided metric are `<skipped>` with
/// a `message` and a text that says why (GitLab shows the text), counted in
/// the suite's `skipped`, and the file validates against the Jenkins xunit
/// schema with xmllint.
#[test]
fn junit_inconclusive_is_skipped_with_its_reason_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t1 = common::trace(d, "h1.jsonl", &healthy(1));
    let cap = gate(d)
        .args(["capture", "--baseline", "one", "--replay"])
        .arg(&t1)
        .output()
        .unwrap();
    assert!(cap.status.success(), "{}", output(&cap).1);
    let slower = common::trace(d, "slow.jsonl", &healthy(5).with_samples(700));
    let out = check_replay(d, "one", &["--junit", "j4.xml"], &slower);
    assert_eq!(out.status.code(), Some(4), "{}", output(&out).1);
    std::fs::write(d.join("gate.toml"), "[verdict]\ninconclusive = \"pass\"\n").unwrap();
    let out = check_replay(d, "one", &["--junit", "j0.xml"], &slower);
    assert_eq!(out.status.code(), Some(0), "{}", output(&out).1);
    for (file, run_skipped) in [("j4.xml", false), ("j0.xml", true)] {
        let xml = std::fs::read_to_string(d.join(file)).unwrap();
        assert_valid_junit(&d.join(file));
        let skipped: Vec<&str> = xml
            .split("<skipped ")
            .skip(1)
            .map(|rest| {
                &rest[..rest
                    .find("</skipped>")
                    .unwrap_or_else(|| panic!("{file}: a skipped element without text: {xml}"))]
            })
            .collect();
        assert!(!skipped.is_empty(), "{file}: nothing skipped: {xml}");
        for e in &skipped {
            let (attrs, text) = e.split_once('>').unwrap();
            assert!(attrs.contains("message=\""), "{file}: {e}");
            assert!(
                text.contains("wall_time_s"),
                "{file}: the text says why: {e}"
            );
        }
        let count = format!("skipped=\"{}\"", skipped.len());
        assert!(
            xml.contains(&count),
            "{file}: the suite counts {count}: {xml}"
        );
        assert_eq!(
            xml.contains("<skipped type=\"inconclusive\" message=\"inconclusive: "),
            run_skipped,
            "{file}: {xml}"
        );
    }
}
