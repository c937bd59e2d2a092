//! The benchmark's own numbers from the formats teams already write
//! (`src/metric_sources.rs`), through the real `gate` binary: a JSON stdout
//! line, pytest-benchmark's JSON, MLPerf LoadGen's summary (its INVALID
//! result fails the run) and Bencher's BMF; and `gate metrics`, the listing
//! of every metric id. The format samples are in tests/data (README there
//! says where each format comes from).

mod common;
use common::*;
use std::path::{Path, PathBuf};

fn data(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name),
    )
    .unwrap()
}

/// A synthetic healthy run whose end record carries `metrics_file` as the
/// text of the benchmark's `--metrics-file` (what `gate record` embeds).
fn run_with_file(dir: &Path, name: &str, seed: u64, metrics_file: &str) -> PathBuf {
    let plain = trace(dir, &format!("plain-{name}"), &healthy(seed));
    let mut out = Vec::new();
    for line in std::fs::read_to_string(&plain).unwrap().lines() {
        let mut r: serde_json::Value = serde_json::from_str(line).unwrap();
        if r["type"] == "end" {
            r["metrics_file"] = metrics_file.into();
        }
        out.push(r.to_string());
    }
    let path = dir.join(name);
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
    path
}

fn capture(dir: &Path, name: &str, runs: &[PathBuf]) -> std::process::Output {
    gate(dir)
        .args(["capture", "--baseline", name, "--replay"])
        .args(runs)
        .output()
        .unwrap()
}

fn json_check(dir: &Path, baseline: &str, t: &Path) -> (Option<i32>, serde_json::Value) {
    let out = check_replay(dir, baseline, &["--format", "json"], t);
    let (stdout, stderr) = output(&out);
    let r = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    (out.status.code(), r)
}

#[test]
fn pytest_benchmark_json_gates_a_slower_mean() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("gate.toml"),
        "[user_metrics.resnet_forward_s]\nsource = \"metrics_file\"\nformat = \"pytest_benchmark\"\nbenchmark = \"test_resnet50_forward\"\nstat = \"mean\"\ndirection = \"lower_is_better\"\nunit = \"s\"\n",
    )
    .unwrap();
    let file = data("pytest-benchmark.json");
    // Three baseline runs whose means differ a little, as repeated runs do.
    let runs: Vec<PathBuf> = ["0.0312478", "0.0313102", "0.0311890"]
        .iter()
        .enumerate()
        .map(|(i, mean)| {
            let f = file.replace("\"mean\": 0.0312478", &format!("\"mean\": {mean}"));
            run_with_file(d, &format!("b{i}.jsonl"), i as u64 + 1, &f)
        })
        .collect();
    assert!(capture(d, "models", &runs).status.success());
    let base = std::fs::read_to_string(d.join("baselines/models.toml")).unwrap();
    assert!(base.contains("resnet_forward_s"), "{base}");

    let same = run_with_file(d, "same.jsonl", 7, &file);
    let (code, r) = json_check(d, "models", &same);
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(metric(&r, "resnet_forward_s")["verdict"], "pass");

    // 20 % slower forward pass: a regression of the declared metric.
    let slow = run_with_file(
        d,
        "slow.jsonl",
        8,
        &file.replace("\"mean\": 0.0312478", "\"mean\": 0.0374974"),
    );
    let (code, r) = json_check(d, "models", &slow);
    assert_eq!(code, Some(1), "{r}");
    let m = metric(&r, "resnet_forward_s");
    assert_eq!(m["verdict"], "regression", "{m}");
    assert!((m["new"].as_f64().unwrap() - 0.0374974).abs() < 1e-9, "{m}");

    // A benchmark renamed in the file: not measured, and the warning says why.
    let renamed = run_with_file(
        d,
        "renamed.jsonl",
        9,
        &file
            .replace(
                "\"name\": \"test_resnet50_forward\"",
                "\"name\": \"test_rn50\"",
            )
            .replace("::test_resnet50_forward", "::test_rn50"),
    );
    let (_, r) = json_check(d, "models", &renamed);
    assert_eq!(metric(&r, "resnet_forward_s")["verdict"], "missing");
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("benchmark 'test_resnet50_forward' is not in the pytest-benchmark file (it has: test_rn50, test_gpt_decode_step)"),
        "{warnings}"
    );
}

#[test]
fn mlperf_summary_invalid_result_fails_the_run_and_cannot_be_a_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("gate.toml"),
        "[user_metrics.offline_sps]\nsource = \"metrics_file\"\nformat = \"mlperf_summary\"\ndirection = \"higher_is_better\"\nunit = \"1/s\"\n",
    )
    .unwrap();
    let valid = data("mlperf_log_summary-offline.txt");
    let runs: Vec<PathBuf> = ["91845.2", "91790.4", "91902.8"]
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let f = valid.replace(
                "Samples per second: 91845.2",
                &format!("Samples per second: {v}"),
            );
            run_with_file(d, &format!("b{i}.jsonl"), i as u64 + 1, &f)
        })
        .collect();
    assert!(capture(d, "mlperf", &runs).status.success());
    let (code, r) = json_check(d, "mlperf", &run_with_file(d, "ok.jsonl", 5, &valid));
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(metric(&r, "offline_sps")["new"], 91845.2);

    // Same throughput, but LoadGen says INVALID: the run fails on its own.
    let invalid = valid
        .replace("Result is : VALID", "Result is : INVALID")
        .replace(
            "Min duration satisfied : Yes",
            "Min duration satisfied : NO",
        );
    let bad = run_with_file(d, "invalid.jsonl", 6, &invalid);
    let (code, r) = json_check(d, "mlperf", &bad);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(r["verdict"], "regression");
    let reasons = r["reasons"].to_string();
    assert!(
        reasons.contains("MLPerf LoadGen says 'Result is : INVALID' (Min duration satisfied: NO)"),
        "{reasons}"
    );
    assert_eq!(
        metric(&r, "offline_sps")["verdict"],
        "pass",
        "the number itself held"
    );

    // An INVALID run is no baseline.
    let out = capture(d, "from-invalid", &[bad.clone(), bad.clone(), bad]);
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a baseline must come from valid runs"),
        "{stderr}"
    );
}

#[test]
fn json_stdout_lines_and_bmf_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("gate.toml"),
        "[user_metrics.tput]\nformat = \"json\"\npointer = \"/train/samples_per_s\"\ndirection = \"higher_is_better\"\naggregate = \"median\"\n",
    )
    .unwrap();
    let with_lines = |name: &str, seed: u64, values: &[f64]| {
        let sig = gpugate::synthetic::Signature {
            extra_output: values
                .iter()
                .map(|v| format!("{{\"step\": 100, \"train\": {{\"samples_per_s\": {v}}}}}"))
                .chain(["not json: samples_per_s 1".to_string()])
                .collect(),
            ..healthy(seed)
        };
        trace(d, name, &sig)
    };
    let runs: Vec<PathBuf> = (0..3)
        .map(|i| {
            with_lines(
                &format!("b{i}.jsonl"),
                i + 1,
                &[2750.0 + i as f64, 2752.0, 2748.0],
            )
        })
        .collect();
    assert!(capture(d, "json", &runs).status.success());
    let (code, r) = json_check(
        d,
        "json",
        &with_lines("slow.jsonl", 9, &[2000.0, 2010.0, 1990.0]),
    );
    assert_eq!(code, Some(1), "{r}");
    let m = metric(&r, "tput");
    assert_eq!(
        (m["verdict"].as_str(), m["new"].as_f64()),
        (Some("regression"), Some(2000.0))
    );

    // BMF: an export another tool (or a harness) wrote, read as a file.
    std::fs::write(
        d.join("gate.toml"),
        "[user_metrics.rn50]\nsource = \"metrics_file\"\nformat = \"bmf\"\nbenchmark = \"resnet50_train\"\nmeasure = \"throughput\"\ndirection = \"higher_is_better\"\n",
    )
    .unwrap();
    let bmf = data("bencher-bmf.json");
    let runs: Vec<PathBuf> = (0..3)
        .map(|i| {
            run_with_file(
                d,
                &format!("m{i}.jsonl"),
                i + 1,
                &bmf.replace("2750.3", &format!("275{i}.3")),
            )
        })
        .collect();
    assert!(capture(d, "bmf", &runs).status.success());
    let slow = run_with_file(d, "mslow.jsonl", 9, &bmf.replace("2750.3", "2200.0"));
    let (code, r) = json_check(d, "bmf", &slow);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(metric(&r, "rn50")["verdict"], "regression");

    // And the other way: `check --bmf` exports the run in BMF, which the
    // same reader reads back.
    let out = check_replay(d, "bmf", &["--bmf", "export.json"], &slow);
    assert_eq!(out.status.code(), Some(1));
    let export: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("export.json")).unwrap()).unwrap();
    assert_eq!(export["bmf"]["rn50"]["value"], 2200.0, "{export}");
    assert!(
        export["bmf"]["sm_active_pct"]["value"].is_number(),
        "{export}"
    );
    let reread = gpugate::metric_sources::Reader::Bmf {
        benchmark: "bmf".into(),
        measure: "rn50".into(),
        stat: "value".into(),
    }
    .read_file(&export.to_string());
    assert_eq!(reread.values, vec![2200.0]);
}

#[test]
fn bad_reader_tables_are_one_line_naming_the_key_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases = [
        (
            "[user_metrics.x]\nformat = \"pytest_benchmark\"\nbenchmark = \"t\"\ndirection = \"lower_is_better\"\n",
            "format = \"pytest_benchmark\" reads a whole file: set source = \"metrics_file\"",
        ),
        (
            "[user_metrics.x]\nformat = \"json\"\ndirection = \"lower_is_better\"\n",
            "format = \"json\" needs pointer, e.g. pointer = \"/throughput\"",
        ),
        (
            "[user_metrics.x]\nformat = \"json\"\npointer = \"a/b\"\ndirection = \"lower_is_better\"\n",
            "is not a JSON pointer (RFC 6901); start it with '/'",
        ),
        (
            "[user_metrics.x]\nformat = \"json\"\npointer = \"/a\"\nregex = '(x)'\ndirection = \"lower_is_better\"\n",
            "'regex' belongs to format = \"regex\"",
        ),
        (
            "[user_metrics.x]\nsource = \"metrics_file\"\nformat = \"pytest_benchmark\"\nbenchmark = \"t\"\nstat = \"p99\"\ndirection = \"lower_is_better\"\n",
            "stat = \"p99\" is not one of min, max, mean",
        ),
        (
            "[user_metrics.x]\nsource = \"metrics_file\"\nformat = \"bmf\"\nbenchmark = \"b\"\ndirection = \"lower_is_better\"\n",
            "format = \"bmf\" needs measure",
        ),
        (
            "[user_metrics.x]\nformat = \"yaml\"\ndirection = \"lower_is_better\"\n",
            "unknown variant `yaml`",
        ),
    ];
    for (toml, want) in cases {
        std::fs::write(d.join("gate.toml"), toml).unwrap();
        let out = gate(d).args(["metrics"]).output().unwrap();
        let (_, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(2), "{toml}: {stderr}");
        assert!(stderr.contains(want), "{toml}: {stderr}");
        assert!(stderr.contains("gate.toml: line "), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
}

#[test]
fn gate_metrics_lists_the_catalogue_and_the_user_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = gate(d)
        .args(["metrics", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    for d in gpugate::metrics::all() {
        assert!(ids.contains(&d.id), "{} not listed", d.id);
    }
    let row = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(row("tensor_pct")["needs"], "GPM (Hopper+)");
    assert_eq!(row("gpu_busy_pct")["needs"], "NVML");
    assert_eq!(row("wall_time_s")["direction"], "lower_is_better");
    assert_eq!(row("dram_pct")["gated"], false);

    // gate.toml applies: a direction set on purpose gates dram_pct, and a
    // user metric is listed with its reader.
    std::fs::write(
        d.join("gate.toml"),
        "[metrics.dram_pct]\ndirection = \"lower_is_better\"\n[user_metrics.sps]\nsource = \"metrics_file\"\nformat = \"mlperf_summary\"\ndirection = \"higher_is_better\"\nunit = \"1/s\"\n",
    )
    .unwrap();
    let out = gate(d).args(["metrics"]).output().unwrap();
    let (stdout, _) = output(&out);
    assert!(out.status.success());
    let line = |id: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("{id}: {stdout}"))
            .to_string()
    };
    assert!(line("dram_pct").contains(" yes "), "{stdout}");
    let sps = line("sps");
    assert!(
        sps.contains("the benchmark's --metrics-file") && sps.contains("format mlperf_summary"),
        "{sps}"
    );
    assert!(line("sm_active_pct").contains("GPM (Hopper+)"));
}

/// Every ```toml block of docs/gating.md's "Where the benchmark's number
/// comes from" is a gate.toml that `gate metrics` accepts, listing its
/// metric with the documented format.
#[test]
fn the_documented_reader_tables_are_accepted() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/gating.md"))
        .unwrap();
    let start = doc
        .find("### Where the benchmark's number comes from")
        .unwrap();
    let section = &doc[start..];
    let section = &section[..section[4..].find("\n## ").map_or(section.len(), |i| i + 4)];
    let blocks: Vec<&str> = section
        .split("```toml\n")
        .skip(1)
        .map(|b| &b[..b.find("```").unwrap()])
        .collect();
    assert_eq!(blocks.len(), 5, "one block per documented reader");
    let dir = tempfile::tempdir().unwrap();
    for block in blocks {
        std::fs::write(dir.path().join("gate.toml"), block).unwrap();
        let out = gate(dir.path())
            .args(["metrics", "--format", "json"])
            .output()
            .unwrap();
        let (stdout, stderr) = output(&out);
        assert!(out.status.success(), "{block}\n{stderr}");
        let name = block
            .lines()
            .next()
            .unwrap()
            .trim_start_matches("[user_metrics.")
            .trim_end_matches(']');
        let format = block
            .lines()
            .find_map(|l| l.strip_prefix("format = \""))
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
        let row = rows
            .iter()
            .find(|r| r["id"] == name)
            .unwrap_or_else(|| panic!("{name}"));
        assert!(
            row["source"]
                .as_str()
                .unwrap()
                .ends_with(&format!("format {format}")),
            "{row}"
        );
    }
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(readme.contains("`gate metrics [--format json]`"));
}
