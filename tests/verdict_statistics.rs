//! The verdict's statistics as a user meets them, through the real binary
//! (issue 17): user metrics over the steady window, full-precision
//! baselines, the noise model with few baseline runs, INCONCLUSIVE (exit 4),
//! a run of another command.

use crate::common;
use common::gate;
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// The `[metrics.NAME]` table of a baseline file, parsed.
fn baseline_metric(dir: &Path, baseline: &str, name: &str) -> toml::Table {
    let text = std::fs::read_to_string(dir.join(format!("baselines/{baseline}.toml"))).unwrap();
    let t: toml::Table = toml::from_str(&text).unwrap();
    t["metrics"][name].as_table().unwrap().clone()
}

/// A benchmark that prints 10 per step while it warms up (4 x 0.2 s) and
/// 100 per step after, run by `sh` (argv, no shell of gate's own).
const WARMING_BENCHMARK: &str = "for i in 1 2 3 4; do echo 'step_rate: 10'; sleep 0.1; done; \
     sleep 0.3; echo warm; \
     for i in $(seq 25); do echo 'step_rate: 100'; sleep 0.1; done";

#[test]
fn user_metrics_skip_the_warmup_lines() {
    // Printing 10 then 100 stored 55-ish before: every line counted.
    for (aggregate, warmup) in [
        ("mean", ["--warmup", "0.7s"]),
        ("median", ["--warmup-until", "^warm$"]),
    ] {
        {
            let dir = tempfile::tempdir().unwrap();
            write(
                dir.path(),
                "gate.toml",
                &format!(
                    "[user_metrics.step_rate]\nregex = '^step_rate: ([0-9.]+)'\ndirection = \"higher_is_better\"\naggregate = \"{aggregate}\"\n"
                ),
            );
            gate(dir.path())
                .args(["capture", "--baseline", "w", "--runs", "1", "--no-gpu"])
                .args(warmup)
                .args(["--", "sh", "-c", WARMING_BENCHMARK])
                .assert()
                .success();
            let m = baseline_metric(dir.path(), "w", "step_rate");
            assert_eq!(
                m["mean"].as_float(),
                Some(100.0),
                "{aggregate} {warmup:?}: {m:?}"
            );
            let runs = m["runs"].as_array().unwrap();
            assert_eq!(runs[0]["value"].as_float(), Some(100.0), "{m:?}");
        }
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn json_metric<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    report["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id && m.get("gpu").is_none() && m.get("node").is_none())
        .unwrap_or_else(|| panic!("{id} not in {report}"))
}

/// Issue 17 item 2: per-run values were stored at 4 digits, so two DDP runs
/// at 1201.992 and 1202.307 were both `1202.0` and the committed baseline
/// checked with a band of +-0 (`stdev = 0.2227` in the same file).
#[test]
fn the_committed_ddp_baseline_has_a_real_noise_band() {
    let out = gate(repo())
        .args(["check", "--baseline", "ddp-h200x2", "--format", "json"])
        .args(["--replay", "fixtures/traces/ddp-healthy-3.jsonl"])
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = json_metric(&r, "samples_per_s");
    let runs: Vec<f64> = baseline_metric(repo(), "ddp-h200x2", "samples_per_s")["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"].as_float().unwrap())
        .collect();
    assert_eq!(runs, [1201.992, 1202.307], "stored exactly as printed");
    let band = m["noise"].as_f64().unwrap();
    assert!(band > 0.3, "noise band +-{band}: {m}");
}

/// One number for one quantity: capture's summary, the TOML and check show
/// the same baseline value (capture said 345129, the TOML 345100 and check
/// 345150 before).
#[test]
fn capture_the_toml_and_check_agree_on_the_baseline_value() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "gate.toml", common::THROUGHPUT_TOML);
    let traces: Vec<String> = (1..=3)
        .map(|i| format!("{}/fixtures/traces/healthy-{i}.jsonl", repo().display()))
        .collect();
    let cap = gate(dir.path())
        .args(["capture", "--baseline", "t", "--replay"])
        .args(&traces[..2])
        .output()
        .unwrap();
    assert!(cap.status.success());
    let stored = baseline_metric(dir.path(), "t", "samples_per_s")["mean"]
        .as_float()
        .unwrap();
    // As every report prints it: 345129 is `345.1k 1/s`.
    let shown = gpugate::format::value_with_unit(Some(stored), "1/s");
    let cap_text = String::from_utf8_lossy(&cap.stdout);
    assert!(
        cap_text.contains(&format!("samples_per_s (mean): {shown}")),
        "{shown} {cap_text}"
    );
    let check = gate(dir.path())
        .args(["check", "--baseline", "t", "--replay", &traces[2]])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    let row = text
        .lines()
        .find(|l| l.starts_with("samples_per_s "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains(&format!(" {shown} ")), "{shown}: {row}");
    let json = gate(dir.path())
        .args([
            "check",
            "--baseline",
            "t",
            "--format",
            "json",
            "--replay",
            &traces[2],
        ])
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        json_metric(&r, "samples_per_s")["baseline"].as_f64(),
        Some(stored)
    );
}

/// Issue 17 item 5: with the throughput declared, counters are context in
/// every check and stored ungated; the trend page listed them as
/// "Unchanged: equal to the baseline in every run" after they fell.
#[test]
fn history_shows_context_counters_as_context_with_their_moves() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(repo().join("gate.toml"), d.join("gate.toml")).unwrap();
    let t = |n: &str| format!("{}/fixtures/traces/bert-{n}.jsonl", repo().display());
    gate(d)
        .args([
            "capture",
            "--baseline",
            "b",
            "--history",
            "h.db",
            "--replay",
        ])
        .args([t("healthy-1"), t("healthy-2"), t("healthy-3")])
        .assert()
        .success();
    // Host-bound tokenisation: throughput -18 %, GPU busy falls with it.
    gate(d)
        .args(["check", "--baseline", "b", "--history", "h.db", "--replay"])
        .arg(t("tokenize"))
        .assert()
        .code(1);
    let out = gate(d)
        .args(["history", "--history", "h.db", "--html", "page.html"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let page = std::fs::read_to_string(d.join("page.html")).unwrap();
    let unchanged = page.split("<h2>Unchanged</h2>").nth(1).unwrap_or("");
    assert!(!unchanged.contains("gpu_busy_pct"), "{unchanged}");
    assert!(
        page.contains("<h2>gpu_busy_pct <span class=\"meta\">(mean %, higher is better; baseline 'b'); context, not gated, in 1 of 2 run(s)"),
        "{page}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let note = text
        .lines()
        .find(|l| l.contains("context (not gated) moved"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(note.contains("sm_active_pct -18.6 %"), "{note}");
}

/// Issue 17.1, end to end: the history store's healthy checks of the same
/// baseline are prior degrees of freedom of the verdict's variance. A
/// throughput measured once per run (its final line) against a two-run
/// baseline: -7.5 % is beyond the runs' measured spread but inside t(1)'s
/// band without history (inconclusive, exit 4), and a regression once five
/// healthy checks are in the history (t on 1 + 4 degrees of freedom).
#[test]
fn healthy_checks_in_the_history_narrow_the_band_of_a_few_run_baseline() {
    use gpugate::synthetic::Signature;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "gate.toml",
        &format!(
            "{}\n[metrics.wall_time_s]\nenabled = false\n",
            common::THROUGHPUT_TOML
        ),
    );
    let run = |name: &str, value: f64, seed: u64| {
        common::trace(
            d,
            name,
            &Signature {
                extra_output: vec![format!("final_samples_per_s: {value}")],
                ..common::healthy(seed)
            },
        )
    };
    let (b1, b2) = (run("b1.jsonl", 1000.0, 1), run("b2.jsonl", 1010.0, 2));
    common::gate(d)
        .args(["capture", "--baseline", "b", "--replay"])
        .arg(&b1)
        .arg(&b2)
        .assert()
        .success();
    let slow = run("slow.jsonl", 930.0, 9);
    let check = |history: bool| {
        let mut c = common::gate(d);
        c.args(["check", "--baseline", "b", "--format", "json"]);
        if history {
            c.args(["--history", "h.sqlite", "--branch", "main"]);
        }
        let out = c.arg("--replay").arg(&slow).output().unwrap();
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code(), json_metric(&r, "samples_per_s").clone())
    };
    let (code, m) = check(false);
    assert_eq!(
        (code, m["verdict"].as_str()),
        (Some(4), Some("inconclusive")),
        "{m}"
    );
    let band_without = m["noise"].as_f64().unwrap();

    for (i, v) in [1005.0, 995.0, 1012.0, 998.0, 1003.0].iter().enumerate() {
        let t = run(&format!("h{i}.jsonl"), *v, 20 + i as u64);
        common::gate(d)
            .args([
                "check",
                "--baseline",
                "b",
                "--history",
                "h.sqlite",
                "--branch",
                "main",
            ])
            .arg("--replay")
            .arg(&t)
            .assert()
            .success();
    }
    let (code, m) = check(true);
    assert_eq!(
        (code, m["verdict"].as_str()),
        (Some(1), Some("regression")),
        "{m}"
    );
    let band_with = m["noise"].as_f64().unwrap();
    assert!(
        band_with < band_without / 3.0,
        "history narrows the band: {band_with} vs {band_without}"
    );
}
