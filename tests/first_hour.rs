//! What a new user meets in the first hour (issue 40 items 1-3) and metric
//! ids that are unique by construction (issue 41 item 5), through the real
//! binary: the README's main job without a warning nobody can act on, the
//! harness's own names and readable units in every output and in the
//! baseline, a benchmark that failed at run time (exit 5 with the
//! harness's text, from the real Google Benchmark library), hints that name
//! the metrics file, `gate.toml` found from a subdirectory, and two
//! benchmarks never folded into one metric.

use crate::common;
use common::*;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn zst(name: &str) -> String {
    let path = Path::new(ROOT).join("tests/data").join(name);
    String::from_utf8(zstd::decode_all(std::fs::File::open(path).unwrap()).unwrap()).unwrap()
}

fn both(o: &std::process::Output) -> String {
    let (out, err) = output(o);
    format!("{out}{err}")
}

const BMF_GLOB: &str = "[metrics.wall_time_s]\nenabled = false\n[user_metrics.b]\nsource = \"metrics_file\"\nformat = \"bmf\"\nbenchmark = \"*\"\nmeasure = \"latency\"\ndirection = \"lower_is_better\"\nunit = \"s\"\n";

fn bmf(names: &[&str]) -> String {
    let mut doc = serde_json::Map::new();
    for n in names {
        doc.insert(
            n.to_string(),
            serde_json::json!({"latency": {"value": 0.002}}),
        );
    }
    serde_json::Value::Object(doc).to_string()
}

/// Item 40.1: the README's main job judges a replay of healthy-3 against
/// the baseline of healthy-1/2. The runs differ in their `--seed` and the
/// fixture tag by design (gate.toml `[compare] vary`): no warning.
#[test]
fn the_readme_main_job_prints_no_warning_a_newcomer_cannot_act_on() {
    let out = gate(Path::new(ROOT))
        .args([
            "check",
            "--baseline",
            "train-h200",
            "--replay",
            "fixtures/traces/healthy-3.jsonl",
        ])
        .output()
        .unwrap();
    let all = both(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    // The one warning left is what this two-run baseline cannot see
    // (issue 38.2): it names its fix, and the README says why it is there.
    for line in all.lines().filter(|l| l.to_lowercase().contains("warning")) {
        assert!(
            line.contains("cannot see changes as small as its floor") && line.contains("Fix: "),
            "a warning without a fix: {line}"
        );
    }
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    assert!(readme.contains("two-run baseline cannot see"), "README");
    assert!(!all.contains("--seed"), "{all}");
    // A seed that is not listed still differs, and the warning says where
    // to list it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gate.toml"),
        std::fs::read_to_string(Path::new(ROOT).join("gate.toml"))
            .unwrap()
            .replace("vary = [\"--seed\", \"fixture\"]", ""),
    )
    .unwrap();
    let out = gate(dir.path())
        .args(["check", "--baseline", "train-h200", "--baseline-dir"])
        .arg(Path::new(ROOT).join("baselines"))
        .arg("--replay")
        .arg(Path::new(ROOT).join("fixtures/traces/healthy-3.jsonl"))
        .output()
        .unwrap();
    let all = both(&out);
    assert!(
        all.contains("--seed 3") && all.contains("[compare] vary"),
        "{all}"
    );
}

/// The README's main job, swapped for each recorded pathology it names:
/// exit 1 with a diagnosis, and `contention` (another job on the GPU) exit
/// 3, disturbed, as the README says.
#[test]
fn the_readme_pathologies_exit_as_the_readme_says() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("(`contention` exits 3: another process shared the GPU, so that run is disturbed, not regressed)"), "README");
    for (fixture, code) in [
        ("fp32-no-tf32", 1),
        ("launch-storm", 1),
        ("memory-bound", 1),
        ("pageable-h2d", 1),
        ("sync-stall", 1),
        ("host-bound", 1),
        ("contention", 3),
    ] {
        assert!(
            flat.contains(&format!("`{fixture}`")),
            "README lacks {fixture}"
        );
        let out = gate(Path::new(ROOT))
            .args(["check", "--baseline", "train-h200", "--replay"])
            .arg(format!("fixtures/traces/{fixture}.jsonl"))
            .output()
            .unwrap();
        let all = both(&out);
        assert_eq!(out.status.code(), Some(code), "{fixture}: {all}");
        if code == 1 {
            assert!(
                all.contains("Diagnosis") || all.contains("diagnosis"),
                "{fixture}: {all}"
            );
        } else {
            assert!(all.contains("DISTURBED"), "{fixture}: {all}");
        }
    }
}

/// Item 40.2: `test_sum[0]` of a real 222-test pytest-benchmark file is
/// shown by its own name in the terminal, JSON, JUnit and Markdown, kept
/// in the baseline beside its id, and its microseconds read as µs.
#[test]
fn harness_names_and_readable_units_in_every_output_and_the_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("gate.toml"),
        "[metrics.wall_time_s]\nenabled = false\n[user_metrics.py]\nsource = \"metrics_file\"\nformat = \"pytest_benchmark\"\nbenchmark = \"test_sum[1?]\"\ndirection = \"lower_is_better\"\nunit = \"s\"\n",
    )
    .unwrap();
    let file = zst("pytest-benchmark-bulk.json.zst");
    let t = run_with_file(d, "py.jsonl", 1, &file);
    let out = gate(d)
        .args(["capture", "--baseline", "py", "--replay"])
        .arg(&t)
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("  py.test_sum[10] (mean): "), "{stdout}");
    let base = std::fs::read_to_string(d.join("baselines/py.toml")).unwrap();
    let v: toml::Value = toml::from_str(&base).unwrap();
    let id = "py.test_sum_10_d99f71";
    let entry = &v["metrics"].as_table().unwrap();
    let (id, m) = entry
        .iter()
        .find(|(k, m)| k.starts_with("py.test_sum_10_") && m.get("benchmark").is_some())
        .unwrap_or_else(|| panic!("no py.test_sum_10_* with its name ({id}?) in {base}"));
    assert_eq!(m["benchmark"].as_str(), Some("test_sum[10]"), "{base}");
    let out = gate(d)
        .args(["check", "--baseline", "py", "--json", "r.json"])
        .args(["--junit", "r.xml", "--markdown", "r.md"])
        .args(["--bmf", "r.bmf.json", "--openmetrics", "r.om", "--replay"])
        .arg(&t)
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("py.test_sum[10]"), "{stdout}");
    // Bencher's file and the metrics file name it too (the OpenMetrics
    // family stays the id: a metric name has no brackets).
    let bmf: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.bmf.json")).unwrap()).unwrap();
    assert!(bmf["py"]["py.test_sum[10]"]["value"].is_number(), "{bmf}");
    assert!(bmf["py"].get(id.as_str()).is_none(), "{bmf}");
    let om = std::fs::read_to_string(d.join("r.om")).unwrap();
    assert!(om.contains("benchmark=\"py.test_sum[10]\""), "{om}");
    assert!(!stdout.contains(id.as_str()), "the sanitised id: {stdout}");
    assert!(
        stdout.contains(" µs") && !stdout.contains("0.0000"),
        "times scaled: {stdout}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    let m = metric(&r, id);
    assert_eq!(m["benchmark"], "test_sum[10]", "{m}");
    let junit = std::fs::read_to_string(d.join("r.xml")).unwrap();
    assert!(junit.contains("name=\"py.test_sum[10]\""), "{junit}");
    assert_valid_junit(&d.join("r.xml"));
    let md = std::fs::read_to_string(d.join("r.md")).unwrap();
    assert!(md.contains("py.test_sum[10]") && md.contains("µs"), "{md}");
    let out = gate(d).args(["diff", "py"]).arg(&t).output().unwrap();
    let (stdout, stderr) = output(&out);
    assert!(stdout.contains("py.test_sum[10] "), "{stdout}{stderr}");
}

/// Item 41.5: ids unique by construction. Two names whose 24-bit hashed
/// ids meet, and a clean name equal to another's hashed id, are refused
/// with both names (exit 2), never one silently dropped.
#[test]
fn names_whose_ids_would_meet_are_refused_with_both_names() {
    // Found by search: the same clean form `a_b_c_d_e_f`, and FNV-1a's
    // low 24 bits equal.
    let (x, y) = ("a b:c]d/e[f", "a/b/c(d[e f");
    assert_eq!(
        gpugate::metric_sources::bulk_id("b", x),
        gpugate::metric_sources::bulk_id("b", y)
    );
    let clean = gpugate::metric_sources::bulk_id("b", "test_sum[0]");
    let clean = clean.strip_prefix("b.").unwrap().to_string();
    for (one, other) in [(x, y), ("test_sum[0]", clean.as_str())] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("gate.toml"), BMF_GLOB).unwrap();
        let t = run_with_file(d, "b.jsonl", 1, &bmf(&[one, other, "c"]));
        let out = gate(d)
            .args(["capture", "--baseline", "b", "--replay"])
            .arg(&t)
            .output()
            .unwrap();
        let all = both(&out);
        assert_eq!(out.status.code(), Some(2), "{all}");
        assert!(
            all.contains(&format!("'{one}'")) && all.contains(&format!("'{other}'")),
            "{all}"
        );
        assert!(!d.join("baselines/b.toml").exists());
    }
}

/// Item 41.5 with the real pytest-benchmark: `test_fwd` of two modules
/// under `benchmark = "*"` are two metrics (by their full names), and the
/// second module's 5x slower forward fails the check.
#[test]
fn two_modules_test_fwd_are_both_kept_and_the_slower_one_fails() {
    let Some(py) = harness_python("two_modules_test_fwd_are_both_kept_and_the_slower_one_fails")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), "[metrics.wall_time_s]\nenabled = false\n[user_metrics.py]\nsource = \"metrics_file\"\nformat = \"pytest_benchmark\"\nbenchmark = \"*\"\ndirection = \"lower_is_better\"\nunit = \"s\"\n").unwrap();
    for (module, var) in [("test_enc", "ENC_S"), ("test_dec", "DEC_S")] {
        std::fs::write(
            d.join(format!("{module}.py")),
            format!("import os, time\n\ndef test_fwd(benchmark):\n    s = float(os.environ.get('{var}', '0.002'))\n    benchmark.pedantic(time.sleep, args=(s,), rounds=15, iterations=1)\n"),
        )
        .unwrap();
    }
    let argv = [
        py.as_str(),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--benchmark-json=m.json",
        "test_enc.py",
        "test_dec.py",
    ];
    let live = |what: &[&str], dec_s: &str| {
        gate(d)
            .args(what)
            .args(["--no-gpu", "--metrics-file", "m.json", "--"])
            .args(argv)
            .env("DEC_S", dec_s)
            .output()
            .unwrap()
    };
    let out = live(&["capture", "--baseline", "fwd", "--runs", "1"], "0.002");
    assert!(out.status.success(), "{}", both(&out));
    let base = std::fs::read_to_string(d.join("baselines/fwd.toml")).unwrap();
    for full in ["test_enc.py::test_fwd", "test_dec.py::test_fwd"] {
        assert!(base.contains(&format!("benchmark = \"{full}\"")), "{base}");
    }
    let out = live(&["check", "--baseline", "fwd", "--json", "r.json"], "0.010");
    let all = both(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    let regressed: Vec<&str> = (r["metrics"].as_array().unwrap().iter())
        .filter(|m| m["verdict"] == "regression")
        .map(|m| m["benchmark"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(regressed, ["test_dec.py::test_fwd"], "{all}");
    assert!(all.contains("py.test_dec.py::test_fwd"), "{all}");
}

const GBENCH: &str = r#"
#include <benchmark/benchmark.h>
#include <vector>
// A user counter whose name ends in _time: written as set, never scaled.
static void BM_Wait(benchmark::State& state) {
  std::vector<int> v(64, 1);
  for (auto _ : state) benchmark::DoNotOptimize(v.data());
  state.counters["wait_time"] = 0.0025;
}
BENCHMARK(BM_Wait);
// A benchmark that fails at run time, as a CUDA error would make it.
static void BM_Fails(benchmark::State& state) {
  state.SkipWithError("simulated CUDA error: out of memory");
  for (auto _ : state) {}
}
BENCHMARK(BM_Fails);
BENCHMARK_MAIN();
"#;

/// Item 40.2 with the real Google Benchmark library: a user counter named
/// `wait_time` is read as the benchmark set it (0.0025, not 2.5e-12), and
/// a benchmark that called `SkipWithError` (`error_occurred` in the JSON)
/// is exit 5 with the library's error text, not exit 2.
#[test]
fn google_benchmark_time_counter_and_run_time_failure() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("b.cc"), GBENCH).unwrap();
    let built = std::process::Command::new("g++")
        .args([
            "-O1",
            "-std=c++17",
            "b.cc",
            "-o",
            "b",
            "-lbenchmark",
            "-lpthread",
        ])
        .current_dir(d)
        .output();
    if !built.as_ref().is_ok_and(|o| o.status.success()) {
        skipped("SKIPPED google_benchmark_time_counter_and_run_time_failure: g++ or libbenchmark-dev missing (apt-get install -y g++ libbenchmark-dev)");
        return;
    }
    let run = |toml: &str, what: &[&str]| {
        std::fs::write(d.join("gate.toml"), toml).unwrap();
        gate(d)
            .args(what)
            .args(["--no-gpu", "--metrics-file", "m.json", "--", "./b"])
            .args([
                "--benchmark_min_time=0.01",
                "--benchmark_out=m.json",
                "--benchmark_out_format=json",
            ])
            .output()
            .unwrap()
    };
    let table = |bench: &str, stat: &str| {
        format!("[metrics.wall_time_s]\nenabled = false\n[user_metrics.gb]\nsource = \"metrics_file\"\nformat = \"google_benchmark\"\nbenchmark = \"{bench}\"\nstat = \"{stat}\"\ndirection = \"lower_is_better\"\nunit = \"s\"\n")
    };
    let out = run(
        &table("BM_Wait", "wait_time"),
        &["capture", "--baseline", "wait", "--runs", "1"],
    );
    assert!(out.status.success(), "{}", both(&out));
    let base = std::fs::read_to_string(d.join("baselines/wait.toml")).unwrap();
    let v: toml::Value = toml::from_str(&base).unwrap();
    assert_eq!(
        v["metrics"]["gb"]["mean"].as_float(),
        Some(0.0025),
        "{base}"
    );
    for bench in ["BM_Fails", "*"] {
        let out = run(
            &table(bench, "real_time"),
            &["capture", "--baseline", "all", "--runs", "1"],
        );
        let all = both(&out);
        assert_eq!(out.status.code(), Some(5), "{bench}: {all}");
        assert!(
            all.contains("simulated CUDA error: out of memory")
                && all.contains("failed at run time")
                && all.contains("BM_Fails"),
            "{all}"
        );
        assert!(!all.contains("fix gate.toml"), "{all}");
    }
}

/// Item 40.2: an nvbench state whose sampling threw is skipped by nvbench's
/// runner with "Unexpected error: ..." (NVIDIA/nvbench runner.cu): the
/// benchmark failed (exit 5). The file is nvbench's own test_ref.json with
/// one state marked so, as the runner marks it.
#[test]
fn an_nvbench_state_that_threw_is_a_failed_benchmark() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), "[metrics.wall_time_s]\nenabled = false\n[user_metrics.nv]\nsource = \"metrics_file\"\nformat = \"nvbench\"\nbenchmark = \"simple/Device=0\"\ndirection = \"lower_is_better\"\nunit = \"s\"\n").unwrap();
    let mut doc: serde_json::Value =
        serde_json::from_str(&zst("nvbench-axes-test_ref.json.zst")).unwrap();
    let state = (doc["benchmarks"].as_array_mut().unwrap().iter_mut())
        .find(|b| b["name"] == "simple")
        .and_then(|b| b["states"].as_array_mut())
        .and_then(|s| s.iter_mut().find(|s| s["name"] == "Device=0"))
        .unwrap();
    state["is_skipped"] = true.into();
    state["skip_reason"] = "Unexpected error: cudaErrorIllegalAddress".into();
    let t = run_with_file(d, "nv.jsonl", 1, &doc.to_string());
    let out = gate(d)
        .args(["capture", "--baseline", "nv", "--replay"])
        .arg(&t)
        .output()
        .unwrap();
    let all = both(&out);
    assert_eq!(out.status.code(), Some(5), "{all}");
    assert!(
        all.contains("Unexpected error: cudaErrorIllegalAddress"),
        "{all}"
    );
}

const BMF_ONE: &str = "[metrics.wall_time_s]\nenabled = false\n[user_metrics.latency]\nsource = \"metrics_file\"\nformat = \"bmf\"\nbenchmark = \"bench\"\nmeasure = \"latency\"\ndirection = \"lower_is_better\"\nunit = \"s\"\n";

fn capture_live(d: &Path, code: &str) -> std::process::Output {
    gate(d)
        .args(["capture", "--baseline", "x", "--runs", "1", "--no-gpu"])
        .args(["--metrics-file", "m.json", "--", "python3", "-c", code])
        .output()
        .unwrap()
}

/// Item 40.2: hints name the metrics file and the real cause: a FIFO is not
/// a file the benchmark wrote, an oversized file is over the limit (both
/// exit 2, and neither blames gate.toml), and a stale file shows
/// milliseconds, so its two times never read alike.
#[test]
fn metrics_file_hints_name_the_file_and_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), BMF_ONE).unwrap();
    // A FIFO.
    let fifo = std::ffi::CString::new(d.join("m.json").display().to_string()).unwrap();
    // SAFETY: a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let out = capture_live(d, "pass");
    let all = both(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        all.contains("'m.json'") && all.contains("regular file"),
        "{all}"
    );
    assert!(!all.contains("fix gate.toml"), "{all}");
    std::fs::remove_file(d.join("m.json")).unwrap();
    // Over the kept size and not JSON.
    let out = capture_live(d, "open('m.json', 'w').write('x' * (3 << 20))");
    let all = both(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(all.contains("'m.json'") && all.contains("MiB"), "{all}");
    assert!(!all.contains("fix gate.toml"), "{all}");
    // Stale by half a second: written just before the run, not by it.
    std::fs::write(
        d.join("m.json"),
        r#"{"bench": {"latency": {"value": 1.0}}}"#,
    )
    .unwrap();
    let f = std::fs::File::options()
        .write(true)
        .open(d.join("m.json"))
        .unwrap();
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_millis(500))
        .unwrap();
    let out = capture_live(d, "pass");
    let all = both(&out);
    assert_eq!(out.status.code(), Some(5), "{all}");
    let times: Vec<&str> = all
        .split_whitespace()
        .filter(|w| w.contains('T') && w.contains(':') && w.contains('.'))
        .map(|w| w.trim_end_matches([',', ';']))
        .collect();
    assert_eq!(times.len(), 2, "two sub-second times: {all}");
    assert_ne!(times[0], times[1], "{all}");
    assert!(all.contains(" ms before this run started"), "{all}");
}

/// Item 40.2: `--metrics-file` that no `[user_metrics]` table reads is
/// said before the run, and a file the run left absent is said in the
/// report, never ignored in silence.
#[test]
fn a_metrics_file_nothing_reads_is_said_and_so_is_its_absence() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("gate.toml"),
        "[user_metrics.sps]\nregex = '^sps: ([0-9.]+)'\ndirection = \"higher_is_better\"\naggregate = \"last\"\n",
    )
    .unwrap();
    let code = "import time; time.sleep(0.5); print('sps: 100')";
    let out = gate(d)
        .args(["capture", "--baseline", "x", "--runs", "1", "--no-gpu"])
        .args(["--", "python3", "-c", code])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let out = gate(d)
        .args(["check", "--baseline", "x", "--no-gpu"])
        .args([
            "--metrics-file",
            "nothing.json",
            "--",
            "python3",
            "-c",
            code,
        ])
        .output()
        .unwrap();
    let all = both(&out);
    assert!(
        all.contains("--metrics-file 'nothing.json' is given, but no [user_metrics] table"),
        "{all}"
    );
    assert!(
        all.contains("'nothing.json' does not exist after the run"),
        "{all}"
    );
}

/// Item 40.3: `gate.toml` and `baselines/` are found from a subdirectory of
/// the repository (the command says which file it used), and a baseline
/// whose declared number has no gate.toml to read it is refused (exit 2),
/// never judged without it in silence.
#[test]
fn gate_toml_is_found_from_anywhere_in_the_repository() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    std::fs::create_dir(repo.join(".git")).unwrap();
    std::fs::write(
        repo.join("gate.toml"),
        "[user_metrics.samples_per_s]\nregex = '^samples_per_s: ([0-9.]+)'\ndirection = \"higher_is_better\"\nunit = \"1/s\"\n",
    )
    .unwrap();
    let t1 = trace(repo, "h1.jsonl", &healthy(1));
    let t2 = trace(repo, "h2.jsonl", &healthy(2));
    let out = gate(repo)
        .args(["capture", "--baseline", "h", "--replay"])
        .args([&t1, &t2])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let sub = repo.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let out = gate(&sub)
        .args([
            "check",
            "--baseline",
            "h",
            "--format",
            "json",
            "--replay",
            "../../h2.jsonl",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("using '../../gate.toml'") && stderr.contains("'../../baselines'"),
        "{stderr}"
    );
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(metric(&r, "samples_per_s")["gated"], true, "{stdout}");
    // --config wins.
    std::fs::write(sub.join("mine.toml"), "").unwrap();
    let out = gate(&sub)
        .args(["check", "--baseline", "h", "--config", "mine.toml"])
        .args([
            "--baseline-dir",
            "../../baselines",
            "--replay",
            "../../h2.jsonl",
        ])
        .output()
        .unwrap();
    assert!(!both(&out).contains("using '"), "{}", both(&out));
    // Without any gate.toml, the declared number cannot be judged: refused.
    std::fs::remove_file(repo.join("gate.toml")).unwrap();
    let out = gate(repo)
        .args(["check", "--baseline", "h", "--replay", "h2.jsonl"])
        .output()
        .unwrap();
    let all = both(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        all.contains("samples_per_s") && all.contains("no gate.toml was found"),
        "{all}"
    );
}

/// Item 40.1: the release workflow fills `release-checksums.txt` (and the
/// GitLab components' copy, which tests/templates.rs keeps equal) with the
/// sums of what it built, through scripts/pin-checksums.sh, when it runs on
/// a version that has none pinned; then it tags and publishes that commit.
#[test]
fn the_release_workflow_pins_the_sums_it_built() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for f in [
        "ci-templates/release-checksums.txt",
        "templates/gate-check.yml",
        "templates/gate-capture.yml",
    ] {
        std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
        std::fs::copy(Path::new(ROOT).join(f), root.join(f)).unwrap();
    }
    // Four files named as release.sh names them, summed by sha256sum.
    let dist = root.join("dist");
    std::fs::create_dir(&dist).unwrap();
    let names = [
        "gate-9.8.7-x86_64-unknown-linux-gnu.tar.gz",
        "gate-9.8.7-aarch64-unknown-linux-gnu.tar.gz",
        "gpugate-9.8.7-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "gpugate-9.8.7-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
    ];
    for n in names {
        std::fs::write(dist.join(n), n).unwrap();
    }
    let sums = std::process::Command::new("sha256sum")
        .args(names)
        .current_dir(&dist)
        .output()
        .unwrap();
    assert!(sums.status.success());
    std::fs::write(dist.join("SHA256SUMS"), &sums.stdout).unwrap();
    let out = std::process::Command::new("bash")
        .arg(Path::new(ROOT).join("scripts/pin-checksums.sh"))
        .arg(dist.join("SHA256SUMS"))
        .arg("--root")
        .arg(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let mut want: Vec<String> = String::from_utf8(sums.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    want.sort_by(|a, b| {
        a.split_once("  ")
            .unwrap()
            .1
            .cmp(b.split_once("  ").unwrap().1)
    });
    let list = std::fs::read_to_string(root.join("ci-templates/release-checksums.txt")).unwrap();
    let pinned: Vec<&str> = list.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(pinned, want, "{list}");
    for t in ["templates/gate-check.yml", "templates/gate-capture.yml"] {
        let text = std::fs::read_to_string(root.join(t)).unwrap();
        let block = &text[text.find("# --- BEGIN release-checksums ---").unwrap()
            ..text.find("# --- END release-checksums ---").unwrap()];
        for l in &want {
            assert!(block.contains(&format!("\n      {l}\n")), "{t}: {block}");
        }
    }
    // The workflow runs it by hand on a version with no sums, and then
    // publishes the tag it made.
    let wf: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(Path::new(ROOT).join(".github/workflows/release.yml")).unwrap(),
    )
    .unwrap();
    assert!(wf["on"].get("workflow_dispatch").is_some());
    let steps = wf["jobs"]["publish"]["steps"].as_sequence().unwrap();
    let pin = steps
        .iter()
        .find(|s| s["id"] == "sums")
        .expect("the publish job's sums step");
    let run = pin["run"].as_str().unwrap();
    assert!(
        run.contains("scripts/pin-checksums.sh dist/SHA256SUMS")
            && run.contains("workflow_dispatch")
            && run.contains("git tag")
            && run.contains("git push"),
        "{run}"
    );
    let publish = steps
        .iter()
        .find(|s| s["name"] == "Publish the release")
        .unwrap();
    assert_eq!(publish["if"], "steps.sums.outputs.tag != ''");
}

/// Item 40.1: the README's install section starts with what works today
/// (from source, the archive or wheel of a release CI built) and says
/// plainly that PyPI needs a publisher: nothing is there while the
/// committed list pins no sums.
#[test]
fn the_readme_install_section_starts_with_what_works_today() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let at = readme
        .find("\n## Install\n")
        .expect("README's Install section");
    let section = &readme[at..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |e| e + 1)];
    let section = section.split_whitespace().collect::<Vec<_>>().join(" ");
    let from_source = section.find("cargo install --path . --locked").unwrap();
    let release = section.find("sha256sum -c SHA256SUMS").unwrap();
    let pip = section.find("pip install gpugate==").unwrap();
    assert!(from_source < pip && release < pip, "{section}");
    let list = std::fs::read_to_string(Path::new(ROOT).join("ci-templates/release-checksums.txt"))
        .unwrap();
    let none_pinned = list
        .lines()
        .all(|l| l.starts_with('#') || l.trim().is_empty());
    assert_eq!(
        section.contains("Nothing is on PyPI yet"),
        none_pinned,
        "the README's word on PyPI must match ci-templates/release-checksums.txt: {section}"
    );
    assert!(section.contains("trusted publisher"), "{section}");
}

/// Item 40.2: a CPU-only benchmark that regressed is diagnosed in words
/// that fit it: no kernels, no "print samples_per_s".
#[test]
fn a_cpu_only_regression_is_diagnosed_without_gpu_words() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), BMF_ONE).unwrap();
    let bench = |v: f64| {
        format!(
            "import json, time; time.sleep(0.4); json.dump({{'bench': {{'latency': {{'value': {v}, 'lower_value': {}, 'upper_value': {}}}}}}}, open('m.json', 'w'))",
            v * 0.99,
            v * 1.01
        )
    };
    let out = gate(d)
        .args(["capture", "--baseline", "cpu", "--runs", "2", "--no-gpu"])
        .args([
            "--metrics-file",
            "m.json",
            "--",
            "python3",
            "-c",
            &bench(0.010),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let out = gate(d)
        .args(["check", "--baseline", "cpu", "--no-gpu"])
        .args([
            "--metrics-file",
            "m.json",
            "--",
            "python3",
            "-c",
            &bench(0.050),
        ])
        .output()
        .unwrap();
    let all = both(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("no GPU activity"), "{all}");
    assert!(all.contains("50 ms"), "scaled: {all}");
    for gpu_words in ["inside the kernels", "samples_per_s", "kernel times"] {
        assert!(!all.contains(gpu_words), "{gpu_words}: {all}");
    }
}
