//! The published JSON Schema of `gate check --format json` / `--json FILE`
//! (schemas/check-report.schema.json) checked against real output of the
//! real binary: a pass, a regression with a diagnosis, a multi-node run and
//! a failed benchmark (error verdict), on the shipped H200 traces.

use crate::common;

use common::gate;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn fixture(name: &str) -> PathBuf {
    Path::new(ROOT).join("fixtures/traces").join(name)
}

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(Path::new(ROOT).join("schemas/check-report.schema.json"))
        .expect("schemas/check-report.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::draft202012::new(&schema).expect("a valid draft 2020-12 schema")
}

fn assert_valid(v: &jsonschema::Validator, doc: &serde_json::Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

/// `gate check ... --format json --json FILE`: stdout and the file, both parsed.
fn check(
    dir: &Path,
    args: &[&str],
    replay: &[PathBuf],
) -> (i32, serde_json::Value, serde_json::Value) {
    let out = gate(dir)
        .args([
            "check",
            "--baseline",
            "healthy",
            "--format",
            "json",
            "--json",
            "report.json",
        ])
        .args(args)
        .arg("--replay")
        .args(replay)
        .output()
        .unwrap();
    let stdout: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    (out.status.code().unwrap(), stdout, file)
}

/// A project with baseline `healthy` captured from healthy-1 and healthy-2.
fn with_healthy_baseline() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    gate(dir.path())
        .args(["capture", "--baseline", "healthy", "--replay"])
        .arg(fixture("healthy-1.jsonl"))
        .arg(fixture("healthy-2.jsonl"))
        .assert()
        .success();
    // The same from one run, in one/: wall time has no noise estimate.
    gate(dir.path())
        .args(["capture", "--baseline", "healthy", "--baseline-dir", "one"])
        .arg("--replay")
        .arg(fixture("healthy-1.jsonl"))
        .assert()
        .success();
    dir
}

#[test]
fn check_json_output_matches_the_published_schema() {
    let v = validator();
    let dir = with_healthy_baseline();
    let d = dir.path();
    // (what, flags, traces, exit code, verdict)
    type Case<'a> = (&'a str, Vec<&'a str>, Vec<PathBuf>, i32, &'a str);
    let cases: Vec<Case> = vec![
        ("pass", vec![], vec![fixture("healthy-2.jsonl")], 0, "pass"),
        (
            // Wall time +9 % against one run: nothing estimates its noise.
            "inconclusive",
            vec!["--baseline-dir", "one"],
            vec![fixture("healthy-3.jsonl")],
            4,
            "inconclusive",
        ),
        (
            "regression",
            vec![],
            vec![fixture("launch-storm.jsonl")],
            1,
            "regression",
        ),
        (
            "multi-node",
            vec!["--multi-node"],
            vec![fixture("healthy-3.jsonl"), fixture("sync-stall.jsonl")],
            1,
            "regression",
        ),
    ];
    for (what, args, replay, code, verdict) in cases {
        let (exit, stdout, file) = check(d, &args, &replay);
        assert_eq!(exit, code, "{what}");
        assert_eq!(stdout, file, "{what}: --format json and --json differ");
        assert_eq!(stdout["verdict"], verdict, "{what}");
        assert_valid(&v, &stdout, what);
    }
    let (_, regression, _) = check(d, &[], &[fixture("launch-storm.jsonl")]);
    assert!(!regression["diagnosis"].as_array().unwrap().is_empty());
}

#[test]
fn a_failed_benchmark_report_matches_the_schema_too() {
    let v = validator();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Host counters only, so it runs here: a baseline from a run, then a
    // benchmark that exits 7 (an `error` verdict, exit 3).
    gate(d)
        .args([
            "capture",
            "--baseline",
            "healthy",
            "--no-gpu",
            "--command-string",
        ])
        .arg("python3 -c 'import time\nt=time.time()\nwhile time.time()-t<2.5: pass'")
        .assert()
        .success();
    let out = gate(d)
        .args([
            "check",
            "--baseline",
            "healthy",
            "--no-gpu",
            "--format",
            "json",
            "--",
        ])
        .args([
            "python3",
            "-c",
            "import time,sys\nt=time.time()\nwhile time.time()-t<2.5: pass\nsys.exit(7)",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(gpugate::exit_code::BENCHMARK_FAILED),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["verdict"], "error");
    assert_eq!(doc["exit_code"], gpugate::exit_code::BENCHMARK_FAILED);
    assert_valid(&v, &doc, "failed benchmark");
}

#[test]
fn the_schema_rejects_what_it_should() {
    let v = validator();
    let dir = with_healthy_baseline();
    let d = dir.path();
    let (_, doc, _) = check(d, &[], &[fixture("healthy-3.jsonl")]);
    let mut missing = doc.clone();
    missing.as_object_mut().unwrap().remove("verdict");
    assert!(!v.is_valid(&missing), "a report without a verdict passed");
    let mut wrong = doc.clone();
    wrong["metrics"][0]["verdict"] = "fine".into();
    assert!(!v.is_valid(&wrong), "an unknown metric verdict passed");
    let mut extra = doc;
    extra["surprise"] = 1.into();
    assert!(!v.is_valid(&extra), "an undocumented field passed");
}

/// schemas/suite-report.schema.json is what the suite envelope's types
/// generate (schemars), with the check-report schema embedded: a change of
/// the types without the file fails here. `GATE_UPDATE_SCHEMAS=1` writes it.
#[test]
fn the_suite_schema_is_generated_from_the_types() {
    use gpugate::report::check::suite_json;
    let check: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(ROOT).join("schemas/check-report.schema.json")).unwrap(),
    )
    .unwrap();
    let generated = serde_json::to_string_pretty(&suite_json::schema(check)).unwrap() + "\n";
    let path = Path::new(ROOT).join(suite_json::SCHEMA_PATH);
    if std::env::var_os("GATE_UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is not what the types generate: run GATE_UPDATE_SCHEMAS=1 cargo test --test integration json_schema::the_suite_schema",
        suite_json::SCHEMA_PATH
    );
    // It is a valid draft 2020-12 schema.
    let schema: serde_json::Value = serde_json::from_str(&committed).unwrap();
    jsonschema::draft202012::new(&schema).expect("a valid draft 2020-12 schema");
}

/// Real `gate check --suite --format json` output, judged and failed
/// workloads, valid against the generated suite schema; a broken envelope
/// is not.
#[test]
fn real_suite_output_is_valid_against_the_suite_schema() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("schemas/suite-report.schema.json"))
        .expect("schemas/suite-report.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let v = jsonschema::draft202012::new(&schema).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let toml = std::fs::read_to_string(Path::new(ROOT).join("gate.toml")).unwrap();
    // vit-h200 is not committed: that workload is an error, not a report.
    std::fs::write(
        d.join("gate.toml"),
        format!("{toml}\n[[suite.workload]]\nname = \"vit\"\nbaseline = \"vit-h200\"\ncommand = [\"python3\", \"vit.py\"]\n"),
    )
    .unwrap();
    std::fs::create_dir_all(d.join("baselines")).unwrap();
    for b in ["train-h200", "cnn-h200", "gpt-h200"] {
        std::fs::copy(
            Path::new(ROOT).join(format!("baselines/{b}.toml")),
            d.join(format!("baselines/{b}.toml")),
        )
        .unwrap();
    }
    let replay = |w: &str, t: &str| format!("{w}={}", fixture(&format!("{t}.jsonl")).display());
    let out = gate(d)
        .args(["check", "--suite", "--format", "json"])
        .args(["--suite-replay", &replay("train", "healthy-3")])
        .args(["--suite-replay", &replay("cnn", "cnn-sync")])
        .args(["--suite-replay", &replay("gpt", "gpt-healthy-3")])
        .args(["--suite-replay", &replay("vit", "vit-healthy-1")])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["verdict"], "usage error");
    assert!(
        doc["workloads"][3]["error"].is_string(),
        "{}",
        doc["workloads"][3]
    );
    assert_valid(&v, &doc, "suite");
    // The schema has teeth: a report with a made-up verdict, a workload with
    // both a report and an error, an unknown envelope field.
    doc["workloads"][1]["report"]["verdict"] = "maybe".into();
    assert!(!v.is_valid(&doc));
    doc["workloads"][1]["report"] = doc["workloads"][0]["report"].clone();
    doc["workloads"][0]["error"] = "x".into();
    assert!(!v.is_valid(&doc));
    doc["workloads"][0].as_object_mut().unwrap().remove("error");
    assert!(v.is_valid(&doc));
    doc["extra"] = 1.into();
    assert!(!v.is_valid(&doc));
}

/// The `gate ab` reports written on the H200 (benchmarks/raw-output/2026-12-03-h200-ab,
/// docs/gating.md "On the H200") match the schema and say what the table
/// says: batch 96 against 128 regressed (exit 1, decided at round 4 of 5),
/// the same command twice passed, and a round disturbed by a neighbour
/// outside the tree was dropped, named and redone.
#[test]
fn the_h200_gate_ab_reports_match_the_schema_and_the_docs_table() {
    let v = validator();
    let dir = Path::new(ROOT).join("benchmarks/raw-output/2026-12-03-h200-ab");
    let read = |name: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(dir.join(name).join("ab.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    for (name, verdict, exit, judged_rounds, redone) in [
        ("ab-128-vs-96", "regression", 1, 4, false),
        ("aa-128-vs-128", "pass", 0, 4, false),
        ("aa-disturbed", "pass", 0, 4, true),
    ] {
        let r = read(name);
        assert_valid(&v, &r, name);
        assert_eq!(r["verdict"], verdict, "{name}");
        assert_eq!(r["exit_code"], exit, "{name}");
        assert_eq!(
            r["ab"]["rounds"].as_array().unwrap().len(),
            judged_rounds,
            "{name}"
        );
        let first_warning = r["warnings"][0].as_str().unwrap_or("");
        assert_eq!(
            first_warning.contains("1 round(s) were DISTURBED")
                && first_warning.contains("pid 1715 'python3'"),
            redone,
            "{name}: {first_warning}"
        );
    }
    let docs = std::fs::read_to_string(Path::new(ROOT).join("docs/gating.md")).unwrap();
    for row in [
        "| batch 128 / batch 96 | 4 (5)",
        "| 1 | 4172 / 3563 |",
        "| 0 | 4214 / 4224 |",
        "4 (4) + 1 redone",
    ] {
        assert!(docs.contains(row), "docs/gating.md lost '{row}'");
    }
}
