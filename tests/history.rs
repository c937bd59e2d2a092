//! History on SQLite, end to end: `capture` and `check` append runs to a
//! real SQLite file, `gate history` lists them (text and JSON) and draws the
//! trend page, drift over a slow slide is reported (and fails only when
//! gate.toml says so), a dead database never changes a verdict, concurrent
//! writers (threads and processes) never lose a row, and a database of
//! schema 1 is migrated. Traces are SYNTHETIC (gpugate::synthetic).

use crate::common;

use common::*;
use gpugate::history::{self, Location, MetricFilter, MetricRow, Query, RunKind, RunRecord};
use std::collections::BTreeMap;
use std::path::Path;

const CONFIG: &str = r#"
[user_metrics.samples_per_s]
regex = 'samples_per_s: ([0-9.eE+-]+)'
direction = "higher_is_better"
unit = "1/s"
relative = 0.10
"#;

/// Capture baseline `name` from three healthy runs whose throughput
/// differs by +-1 % (the run-to-run noise drift is measured against).
fn capture(d: &Path, name: &str, db: &Path) {
    let runs: Vec<_> = [0.99, 1.0, 1.01]
        .iter()
        .enumerate()
        .map(|(i, s)| {
            trace(
                d,
                &format!("base-{i}.jsonl"),
                &throughput(healthy(i as u64 + 1), *s),
            )
        })
        .collect();
    gate(d)
        .args(["capture", "--baseline", name, "--commit", "base000"])
        .arg("--history")
        .arg(db)
        .args(["--branch", "main", "--tag", "model=resnet", "--replay"])
        .args(&runs)
        .assert()
        .success();
}

/// `gate check` of a run with `scale` x the healthy throughput, recorded
/// on `main` at commit `commit`.
fn check(d: &Path, db: &Path, seed: u64, scale: f64, commit: &str) -> std::process::Output {
    let t = trace(
        d,
        &format!("run-{seed}.jsonl"),
        &throughput(healthy(seed), scale),
    );
    gate(d)
        .env("CI_COMMIT_SHA", commit)
        .args([
            "check",
            "--baseline",
            "train",
            "--branch",
            "main",
            "--history",
        ])
        .arg(db)
        .arg("--replay")
        .arg(t)
        .output()
        .unwrap()
}

fn history_json(d: &Path, db: &Path, extra: &[&str]) -> serde_json::Value {
    let out = gate(d)
        .args(["history", "--format", "json", "--history"])
        .arg(db)
        .args(extra)
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn capture_and_check_are_recorded_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), CONFIG).unwrap();
    let db = d.join("hist/history.sqlite");
    capture(d, "train", &db);
    let ok = check(d, &db, 11, 1.0, "c0ffee1111");
    assert_eq!(ok.status.code(), Some(0), "{:?}", output(&ok));
    assert!(output(&ok).1.contains("gate: recorded run 2 in sqlite:"));
    let slow = check(d, &db, 12, 0.7, "badbad2222");
    assert_eq!(
        slow.status.code(),
        Some(1),
        "a regression stays a regression"
    );

    let j = history_json(d, &db, &["--baseline", "train"]);
    assert_eq!(j["schema_version"], 1);
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "{j:#}");
    // Newest first.
    assert_eq!(runs[0]["kind"], "check");
    assert_eq!(runs[0]["verdict"], "regression");
    assert_eq!(runs[0]["commit"], "badbad2222");
    assert_eq!(runs[0]["branch"], "main");
    assert_eq!(runs[0]["regressions"], 1);
    assert_eq!(runs[0]["exit_code"], 1);
    assert_eq!(runs[0]["gpu_model"], "NVIDIA H200");
    assert_eq!(runs[0]["environment"]["gpu_count"], 1);
    let sps = runs[0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "samples_per_s")
        .expect("throughput recorded");
    assert_eq!(sps["verdict"], "regression");
    assert!(sps["change_pct"].as_f64().unwrap() < -25.0, "{sps}");
    assert!(sps["baseline_sd"].as_f64().unwrap() > 0.0, "{sps}");
    assert_eq!(runs[1]["verdict"], "pass");
    assert_eq!(runs[1]["commit"], "c0ffee1111");
    assert_eq!(runs[2]["kind"], "capture");
    assert_eq!(runs[2]["verdict"], "captured");
    assert_eq!(runs[2]["commit"], "base000");
    assert_eq!(runs[2]["tags"]["model"], "resnet");
    // Every run was judged against the captured baseline version.
    assert_eq!(runs[0]["baseline_created"], runs[2]["baseline_created"]);

    // Regressions only, and one metric's series, in the terminal.
    let j = history_json(d, &db, &["--regressions"]);
    assert_eq!(j["runs"].as_array().unwrap().len(), 1);
    let out = gate(d)
        .args(["history", "--metric", "samples_per_s", "--history"])
        .arg(&db)
        .output()
        .unwrap();
    let (text, _) = output(&out);
    assert!(text.contains("metric 'samples_per_s'"), "{text}");
    assert!(
        text.contains("badbad2222") && text.contains("regression"),
        "{text}"
    );
    assert!(text.contains("captured"), "{text}");
    let out = gate(d)
        .args(["history", "--history"])
        .arg(&db)
        .output()
        .unwrap();
    let (text, _) = output(&out);
    assert!(text.contains("3 runs, newest first"), "{text}");
    assert!(
        text.contains("run 3: regressed samples_per_s -30"),
        "{text}"
    );

    // The trend page: self-contained, with the band, the refresh and the regression.
    let page = d.join("trend.html");
    gate(d)
        .args(["history", "--baseline", "train", "--history"])
        .arg(&db)
        .arg("--html")
        .arg(&page)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<svg") && html.contains("samples_per_s"));
    assert!(html.contains("baseline refreshed"));
    assert!(
        html.contains(">regression</span> -30"),
        "regression listed in words"
    );
    for external in ["<script", "http://", "https://", "<link", "<img", "@import"] {
        let hits: Vec<_> = html
            .match_indices(external)
            .filter(|(i, _)| !html[*i..].starts_with("http://www.w3.org/2000/svg"))
            .collect();
        assert!(hits.is_empty(), "trend page references {external}");
    }
}

#[test]
fn a_slow_slide_that_every_check_passes_is_reported_as_drift() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), CONFIG).unwrap();
    let db = d.join("history.sqlite");
    capture(d, "train", &db);
    // Healthy runs first: no drift.
    for (i, seed) in (20..24).enumerate() {
        let out = check(
            d,
            &db,
            seed,
            [1.0, 0.995, 1.005, 1.0][i],
            &format!("ok{seed}"),
        );
        let (stdout, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
        assert!(
            !stdout.contains("drift"),
            "healthy run {seed} flagged: {stdout}"
        );
    }
    // Then -1 % per change.
    let mut found = None;
    for step in 1..=10u64 {
        let out = check(
            d,
            &db,
            30 + step,
            1.0 - 0.01 * step as f64,
            &format!("slide{step:02}"),
        );
        let (stdout, stderr) = output(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "step {step}: drift is reported, not failed, by default\n{stdout}{stderr}"
        );
        if stdout.contains("drift: samples_per_s") {
            found = Some((step, stdout));
            break;
        }
    }
    let (step, stdout) = found.expect("the slide was never reported as drift");
    assert!(step <= 8, "found late, at step {step}");
    assert!(stdout.contains("starting at commit slide"), "{stdout}");
    assert!(stdout.contains("VERDICT: PASS"), "{stdout}");
    let j = history_json(d, &db, &["--limit", "1"]);
    let drift = &j["runs"][0]["drift"][0];
    assert_eq!(drift["metric"], "samples_per_s", "{j:#}");
    assert_eq!(drift["failed"], false);
    assert!(drift["shift_pct"].as_f64().unwrap() < -4.0);

    // gate.toml can make drift fail the run.
    std::fs::write(
        d.join("gate.toml"),
        format!("{CONFIG}\n[history.drift]\nfail = true\n"),
    )
    .unwrap();
    let out = check(d, &db, 60, 1.0 - 0.01 * step as f64, "slidefail");
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("drift: samples_per_s"), "{stdout}");
    let j = history_json(d, &db, &["--limit", "1"]);
    assert_eq!(j["runs"][0]["verdict"], "regression");
    assert_eq!(j["runs"][0]["drift"][0]["failed"], true);
}

#[test]
fn a_dead_database_is_a_warning_and_never_changes_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), CONFIG).unwrap();
    let db = d.join("ok.sqlite");
    capture(d, "train", &db);
    let t = trace(d, "run.jsonl", &healthy(5));
    let slow = trace(d, "slow.jsonl", &throughput(healthy(6), 0.7));
    // Not a database: a text file where the SQLite file should be.
    let junk = d.join("junk.sqlite");
    std::fs::write(
        &junk,
        "this is not an SQLite database, it is a text file\n".repeat(200),
    )
    .unwrap();
    // A PostgreSQL port where nothing listens.
    let dead_pg = "postgres://gate:secret-pw@127.0.0.1:9/none";
    for (target, expect) in [
        (junk.display().to_string(), "junk.sqlite"),
        (dead_pg.to_string(), "postgres://gate:***@127.0.0.1:9/none"),
    ] {
        for (trace, code) in [(&t, 0), (&slow, 1)] {
            let out = check_replay(d, "train", &["--history", &target], trace);
            let (stdout, stderr) = output(&out);
            assert_eq!(out.status.code(), Some(code), "{stdout}{stderr}");
            assert!(
                stderr.contains("gate: warning: history database"),
                "{stderr}"
            );
            assert!(stderr.contains(expect), "{stderr}");
            assert!(stderr.contains("the verdict and reports stand"), "{stderr}");
            assert!(!stderr.contains("secret-pw") && !stdout.contains("secret-pw"));
        }
        // Unless asked: then it is an infrastructure failure (exit 3).
        let out = check_replay(
            d,
            "train",
            &[
                "--history",
                &target,
                "--history-required",
                "--junit",
                "j.xml",
            ],
            &t,
        );
        let (stdout, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
        assert!(stderr.contains("--history-required"), "{stderr}");
        assert!(!stderr.contains("secret-pw"));
        // The verdict's report is written before the history is tried.
        assert!(std::fs::read_to_string(d.join("j.xml"))
            .unwrap()
            .contains("name=\"gate.verdict\" value=\"pass\""));
    }
    // A malformed location is a configuration error, whatever.
    let out = check_replay(d, "train", &["--history", "mysql://x/y"], &t);
    assert_eq!(out.status.code(), Some(2));
    // The url_env secret missing (a fork's pipeline): warning, not recorded.
    std::fs::write(
        d.join("gate.toml"),
        format!("{CONFIG}\n[history]\nurl_env = \"GATE_TEST_UNSET_HISTORY_URL\"\n"),
    )
    .unwrap();
    let out = check_replay(d, "train", &[], &t);
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stderr.contains("GATE_TEST_UNSET_HISTORY_URL\" but that variable is not set"),
        "{stderr}"
    );
    // --no-history wins over everything.
    let out = gate(d)
        .env("GATE_HISTORY_URL", &junk)
        .args(["check", "--baseline", "train", "--no-history", "--replay"])
        .arg(&t)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!output(&out).1.contains("history"), "{}", output(&out).1);
}

#[test]
fn gate_toml_history_section_selects_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("gate.toml"),
        format!("{CONFIG}\n[history]\nurl = \"sqlite:db/h.sqlite\"\n"),
    )
    .unwrap();
    let t = trace(d, "b.jsonl", &healthy(1));
    gate(d)
        .args(["capture", "--baseline", "train", "--replay"])
        .arg(&t)
        .assert()
        .success();
    assert!(d.join("db/h.sqlite").exists());
    // `gate history` reads the same place without being told.
    let out = gate(d)
        .args(["history", "--format", "json"])
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_str(&output(&out).0).unwrap();
    assert_eq!(j["database"], "sqlite:db/h.sqlite");
    assert_eq!(j["runs"].as_array().unwrap().len(), 1);
    // A bad drift setting is a gate.toml error naming the key.
    std::fs::write(d.join("gate.toml"), "[history.drift]\nwindow = 1\n").unwrap();
    let out = gate(d).args(["history"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        output(&out).1.contains("[history.drift] window = 1"),
        "{:?}",
        output(&out)
    );
    // No database yet: an empty history (exit 0, not the infrastructure
    // failure 3) and one line saying how to make one.
    let empty = tempfile::tempdir().unwrap();
    let out = gate(empty.path()).args(["history"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        output(&out).1.contains("gate check --history"),
        "{:?}",
        output(&out)
    );
    assert!(
        !empty.path().join(".gate").exists(),
        "a read creates nothing"
    );
}

/// A run as a test writes it: `metrics` gated metrics, values by index.
pub fn synthetic_run(worker: usize, i: usize, metrics: usize) -> RunRecord {
    RunRecord {
        id: None,
        recorded_at: format!("2026-11-30T00:{:02}:{:02}Z", worker % 60, i % 60),
        kind: RunKind::Check,
        baseline: "train".into(),
        baseline_created: "2026-11-29T00:00:00Z".into(),
        baseline_runs: 3,
        commit: Some(format!("w{worker}-{i}")),
        branch: Some(format!("job-{worker}")),
        tags: BTreeMap::from([("worker".to_string(), worker.to_string())]),
        gpu_model: "NVIDIA H200".into(),
        environment: serde_json::json!({"gpu_model": "NVIDIA H200"}),
        verdict: "pass".into(),
        exit_code: 0,
        regressions: 0,
        top_rule: None,
        top_cause: None,
        gate_version: "test".into(),
        source: format!("w{worker}/{i}.jsonl"),
        metrics: (0..metrics)
            .map(|m| MetricRow {
                metric: format!("metric_{m:02}"),
                unit: "%".into(),
                direction: "higher_is_better".into(),
                statistic: "mean".into(),
                gated: true,
                baseline_value: Some(90.0),
                baseline_sd: Some(1.0),
                value: Some(90.0 + (i % 7) as f64 * 0.1),
                change_pct: Some(0.0),
                tolerance: Some(9.0),
                noise: Some(2.0),
                verdict: "pass".into(),
            })
            .collect(),
        drift: Vec::new(),
    }
}

#[test]
fn concurrent_writers_never_lose_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.sqlite");
    let loc = Location::Sqlite(db.clone());
    // Threads, each with its own connection, as parallel jobs would have.
    let workers = 8;
    let per_worker = 25;
    std::thread::scope(|s| {
        for w in 0..workers {
            let loc = loc.clone();
            s.spawn(move || {
                let mut store = history::open(&loc, true).expect("open");
                for i in 0..per_worker {
                    store.append(&synthetic_run(w, i, 20)).expect("append");
                }
            });
        }
    });
    // And processes: six `gate check` at once on the same file.
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), CONFIG).unwrap();
    let b = trace(d, "b.jsonl", &healthy(1));
    gate(d)
        .args(["capture", "--baseline", "train", "--replay"])
        .arg(&b)
        .assert()
        .success();
    let traces: Vec<_> = (0..6)
        .map(|i| trace(d, &format!("p{i}.jsonl"), &healthy(40 + i)))
        .collect();
    let children: Vec<_> = traces
        .iter()
        .map(|t| {
            let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_gate"));
            c.current_dir(d)
                .env_remove("GATE_HISTORY_URL")
                .args([
                    "check",
                    "--baseline",
                    "train",
                    "--branch",
                    "ci",
                    "--history-required",
                    "--history",
                ])
                .arg(&db)
                .arg("--replay")
                .arg(t)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut store = history::open(&loc, false).unwrap();
    let all = store
        .runs(&Query {
            metrics: MetricFilter::All,
            ..Query::default()
        })
        .unwrap();
    assert_eq!(all.len(), workers * per_worker + 6);
    let mut ids: Vec<i64> = all.iter().map(|r| r.id.unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), all.len(), "ids are unique");
    for w in 0..workers {
        let mine: Vec<_> = all
            .iter()
            .filter(|r| r.branch.as_deref() == Some(&format!("job-{w}")))
            .collect();
        assert_eq!(mine.len(), per_worker, "worker {w}");
        assert!(
            mine.iter().all(|r| r.metrics.len() == 20),
            "whole runs only"
        );
    }
    assert_eq!(
        all.iter()
            .filter(|r| r.branch.as_deref() == Some("ci"))
            .count(),
        6
    );
}

#[test]
fn a_schema_1_database_is_migrated_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v1.sqlite");
    {
        // The database as the first schema left it, with one run.
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(history::schema::SCHEMA_TABLE_SQL).unwrap();
        c.execute_batch(history::schema::MIGRATIONS[0].sqlite)
            .unwrap();
        c.execute("INSERT INTO gate_schema (version) VALUES (1)", [])
            .unwrap();
        c.execute(
            "INSERT INTO runs (recorded_at, kind, baseline, baseline_created, baseline_runs, commit_sha, branch, tags, gpu_model, environment, verdict, exit_code, regressions, top_rule, top_cause, gate_version, source)
             VALUES ('2026-11-01T00:00:00Z', 'check', 'train', 'v', 3, 'old1', 'main', '{}', 'NVIDIA H200', '{}', 'regression', 1, 1, 'sync_stalls', 'Sync stalls', '0.1.0', 'old.jsonl')",
            [],
        )
        .unwrap();
        c.execute(
            "INSERT INTO run_metrics (run_id, metric, unit, direction, statistic, gated, baseline_value, value, change_pct, verdict)
             VALUES (1, 'sm_active_pct', '%', 'higher_is_better', 'mean', 1, 90.0, 60.0, -33.3, 'regression')",
            [],
        )
        .unwrap();
    }
    let loc = Location::Sqlite(db.clone());
    let mut store = history::open(&loc, false).unwrap();
    assert_eq!(
        store.schema_version().unwrap(),
        history::schema::CURRENT_VERSION
    );
    let runs = store
        .runs(&Query {
            metrics: MetricFilter::All,
            ..Query::default()
        })
        .unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].top_rule.as_deref(), Some("sync_stalls"));
    let m = &runs[0].metrics[0];
    assert_eq!(
        (m.value, m.baseline_sd, m.tolerance),
        (Some(60.0), None, None)
    );
    // New runs go in with the new columns; reopening changes nothing.
    store.append(&synthetic_run(0, 1, 3)).unwrap();
    drop(store);
    let mut again = history::open(&loc, false).unwrap();
    assert_eq!(again.runs(&Query::default()).unwrap().len(), 2);
    // A database from a newer gate is refused, never written.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("UPDATE gate_schema SET version = 99", [])
        .unwrap();
    let err = history::open(&loc, false)
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("schema version 99 is newer"), "{err}");
}

/// Every `gate` command line and `extra-args` in the history templates,
/// with GitHub/GitLab variables left as words.
fn template_commands() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut take = |origin: &str, text: &str| {
        for line in text.lines().map(str::trim) {
            if line.starts_with("gate ") {
                out.push((origin.to_string(), line.to_string()));
            }
        }
    };
    let gh = "ci-templates/github/workflows/gpu-gate-history.yml";
    let wf: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(root.join(gh)).unwrap()).unwrap();
    for (name, job) in wf["jobs"].as_mapping().unwrap() {
        for step in job["steps"].as_sequence().unwrap() {
            if let Some(run) = step["run"].as_str() {
                assert_eq!(
                    step["shell"].as_str(),
                    Some("bash"),
                    "{name:?}: run needs shell"
                );
                take(gh, run);
            }
            if let Some(extra) = step["with"]["extra-args"].as_str() {
                // The action runs `gate check ... EXTRA`.
                take(gh, &format!("gate check {extra}"));
            }
            if step["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/cache/save"))
            {
                assert_eq!(
                    step["if"].as_str(),
                    Some("always()"),
                    "save after a failed check too"
                );
            }
        }
    }
    let gl = "ci-templates/gitlab/history.gitlab-ci.yml";
    let ci: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(root.join(gl)).unwrap()).unwrap();
    for (_, job) in ci.as_mapping().unwrap() {
        for key in ["script", "after_script"] {
            for line in job[key].as_sequence().into_iter().flatten() {
                take(gl, line.as_str().unwrap());
            }
        }
    }
    out
}

#[test]
fn history_templates_use_only_flags_gate_knows() {
    let commands = template_commands();
    assert!(commands.len() >= 8, "{commands:?}");
    let dir = tempfile::tempdir().unwrap();
    let mut help = BTreeMap::new();
    for (origin, line) in &commands {
        let words: Vec<&str> = line.split_whitespace().collect();
        let sub = words[1];
        let text = help.entry(sub.to_string()).or_insert_with(|| {
            let out = gate(dir.path()).args([sub, "--help"]).output().unwrap();
            assert!(out.status.success(), "{origin}: gate {sub} --help");
            output(&out).0
        });
        for w in words.iter().take_while(|w| **w != "--") {
            if w.starts_with("--") {
                let flag = w.split('=').next().unwrap();
                assert!(
                    text.contains(&format!("{flag} ")) || text.contains(&format!("{flag}\n")),
                    "{origin}: 'gate {sub}' has no flag {flag} ({line})"
                );
            }
        }
    }
    // Both engines appear, and the history is always saved / published.
    let all: String = commands.iter().map(|c| c.1.clone() + "\n").collect();
    assert!(all.contains("--history .gate/history.sqlite"));
    assert!(all.contains("--history-required"));
    assert!(all.contains("--html .gate/ci/trend.html"));
}

#[test]
fn hostile_branch_names_never_reach_a_terminal_or_page_raw() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), CONFIG).unwrap();
    let db = d.join("h.sqlite");
    let evil = "feat/\u{1b}]0;pwned\u{7}<script>alert(1)</script>\u{202e}";
    let t = trace(d, "b.jsonl", &healthy(1));
    gate(d)
        .args([
            "capture",
            "--baseline",
            "train",
            "--branch",
            evil,
            "--history",
        ])
        .arg(&db)
        .arg("--replay")
        .arg(&t)
        .assert()
        .success();
    let page = d.join("p.html");
    let out = gate(d)
        .args(["history", "--history"])
        .arg(&db)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    let (text, _) = output(&out);
    assert!(text.contains("feat/\\u{1b}]0;pwned\\u{7}"), "{text}");
    let html = std::fs::read_to_string(&page).unwrap();
    for (what, s) in [("terminal", &text), ("page", &html)] {
        assert!(
            !s.contains('\u{1b}') && !s.contains('\u{7}') && !s.contains('\u{202e}'),
            "{what}"
        );
    }
    assert!(!html.contains("<script>"), "escaped in HTML");
    // JSON keeps the exact bytes (escaped by JSON itself).
    let j = history_json(d, &db, &[]);
    assert_eq!(j["runs"][0]["branch"], evil);
}

/// Issue 19.2: `check --history h.sqlite --json h.sqlite` replaced the
/// whole history with a JSON report. Every report flag, every spelling of
/// the path (relative, `..`, a symbolic link, a hard link) and a database
/// that does not exist yet: one line naming both, exit 2, history untouched.
#[test]
fn an_output_named_like_the_history_database_is_refused_and_the_history_survives() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), CONFIG).unwrap();
    let db = d.join("h.sqlite");
    capture(d, "train", &db);
    let before = std::fs::read(&db).unwrap();
    let t = trace(d, "run.jsonl", &healthy(5));
    std::fs::create_dir(d.join("sub")).unwrap();
    std::os::unix::fs::symlink(&db, d.join("link.sqlite")).unwrap();
    std::fs::hard_link(&db, d.join("hard.sqlite")).unwrap();
    for flag in [
        "--json",
        "--junit",
        "--markdown",
        "--openmetrics",
        "--pr-comment",
    ] {
        for (history, out) in [
            ("h.sqlite", "h.sqlite"),
            ("h.sqlite", "./h.sqlite"),
            ("sqlite:h.sqlite", "sub/../h.sqlite"),
            ("h.sqlite", "link.sqlite"),
            ("h.sqlite", "hard.sqlite"),
            ("h.sqlite", "h.sqlite-journal"),
        ] {
            let res = check_replay(d, "train", &["--history", history, flag, out], &t);
            let (stdout, stderr) = output(&res);
            assert_eq!(res.status.code(), Some(2), "{flag} {out}: {stdout}{stderr}");
            assert!(
                stderr.contains(&format!("refusing to write {flag} '{out}'"))
                    && stderr.contains("the history database"),
                "{flag} {out}: {stderr}"
            );
            assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
            assert!(!stderr.contains("recorded run"), "{stderr}");
            assert_eq!(std::fs::read(&db).unwrap(), before, "{flag} {out}");
        }
    }
    // A history that does not exist yet is an input too.
    let res = check_replay(
        d,
        "train",
        &["--history", "new.sqlite", "--json", "new.sqlite"],
        &t,
    );
    assert_eq!(res.status.code(), Some(2), "{}", output(&res).1);
    assert!(!d.join("new.sqlite").exists());
    // capture: the baseline it writes is never the history.
    let res = gate(d)
        .args([
            "capture",
            "--baseline",
            "h2",
            "--history",
            "baselines/h2.toml",
            "--replay",
        ])
        .arg(&t)
        .output()
        .unwrap();
    let (_, stderr) = output(&res);
    assert_eq!(res.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the history database"), "{stderr}");
    assert!(!d.join("baselines/h2.toml").exists());
}

/// Issue 19.2: `$GITHUB_STEP_SUMMARY` / `$GITHUB_OUTPUT` naming a trace,
/// the baseline, gate.toml or the history: refused (exit 2), nothing
/// appended; a report flag naming gate.toml or the baseline too.
#[test]
fn ci_files_and_reports_named_like_an_input_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), CONFIG).unwrap();
    let db = d.join("h.sqlite");
    capture(d, "train", &db);
    let t = trace(d, "run.jsonl", &healthy(5));
    let inputs = ["run.jsonl", "baselines/train.toml", "gate.toml", "h.sqlite"];
    let snapshot = || -> Vec<Vec<u8>> {
        inputs
            .iter()
            .map(|p| std::fs::read(d.join(p)).unwrap())
            .collect()
    };
    let before = snapshot();
    for var in ["GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"] {
        for input in inputs {
            let res = gate(d)
                .env(var, d.join(input))
                .env("GITHUB_ACTIONS", "true")
                .args([
                    "check",
                    "--baseline",
                    "train",
                    "--history",
                    "h.sqlite",
                    "--replay",
                ])
                .arg(&t)
                .output()
                .unwrap();
            let (stdout, stderr) = output(&res);
            assert_eq!(
                res.status.code(),
                Some(2),
                "{var}={input}: {stdout}{stderr}"
            );
            assert!(
                stderr.contains(&format!("refusing to write ${var}")),
                "{var}={input}: {stderr}"
            );
            assert_eq!(snapshot(), before, "{var}={input} changed an input");
        }
    }
    for (flag, input) in [
        ("--json", "gate.toml"),
        ("--markdown", "baselines/train.toml"),
        ("--junit", "run.jsonl"),
    ] {
        let res = check_replay(d, "train", &[flag, input], &t);
        let (_, stderr) = output(&res);
        assert_eq!(res.status.code(), Some(2), "{flag} {input}: {stderr}");
        assert!(stderr.contains("it is the input"), "{stderr}");
        assert_eq!(snapshot(), before);
    }
}

/// Issue 19.3: a libpq keyword string was taken for a file name: its
/// password went to the CI log and became a file in the working directory.
/// Now it is a PostgreSQL location (here nothing listens: a warning naming
/// the cause, the verdict stands), and nothing ever prints the password.
#[test]
fn a_libpq_keyword_string_is_postgres_and_its_password_never_shows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), CONFIG).unwrap();
    let db = d.join("h.sqlite");
    capture(d, "train", &db);
    let t = trace(d, "run.jsonl", &healthy(5));
    let before: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let conn = "host=127.0.0.1 port=9 user=gate password=LEAK7 dbname=gate";
    let res = check_replay(d, "train", &["--history", conn], &t);
    let (stdout, stderr) = output(&res);
    assert_eq!(res.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stderr.contains("password=***"), "{stderr}");
    assert!(stderr.contains("Connection refused"), "the cause: {stderr}");
    assert!(
        !stdout.contains("LEAK7") && !stderr.contains("LEAK7"),
        "{stderr}"
    );
    let after: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before.len(), after.len(), "a file appeared: {after:?}");
    // Neither a path nor a URL nor a keyword string: refused, not echoed.
    for bad in ["hots=127.0.0.1 password=LEAK7", "gate:LEAK7 at db"] {
        let res = check_replay(d, "train", &["--history", bad], &t);
        let (stdout, stderr) = output(&res);
        assert_eq!(res.status.code(), Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("neither a file path"), "{stderr}");
        assert!(
            !stdout.contains("LEAK7") && !stderr.contains("LEAK7"),
            "{stderr}"
        );
    }
}

/// Issue 19.1: a PostgreSQL server that accepts TCP and never answers held
/// `check` until the CI killed it, with no verdict and no JUnit. Now the
/// step gives up after --history-timeout (+ the client's grace), AFTER
/// the verdict and every report are written; the exit code is the
/// verdict's, or 3 with --history-required.
#[test]
fn a_server_that_never_answers_costs_a_bounded_wait_and_never_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), CONFIG).unwrap();
    capture(d, "train", &d.join("h.sqlite"));
    let healthy_run = trace(d, "run.jsonl", &healthy(5));
    let slow = trace(d, "slow.jsonl", &throughput(healthy(6), 0.7));
    // Accepts every connection and keeps it open without a byte.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    let url = format!("postgres://gate:pw@127.0.0.1:{port}/gate");
    for (t, extra, code) in [
        (&healthy_run, None, 0),
        (&slow, None, 1),
        (&healthy_run, Some("--history-required"), 3),
    ] {
        let _ = std::fs::remove_file(d.join("j.xml"));
        let started = std::time::Instant::now();
        let mut args = vec![
            "--history",
            &url,
            "--history-timeout",
            "1s",
            "--junit",
            "j.xml",
            "--json",
            "r.json",
        ];
        args.extend(extra);
        let res = check_replay(d, "train", &args, t);
        let took = started.elapsed();
        let (stdout, stderr) = output(&res);
        assert_eq!(res.status.code(), Some(code), "{stdout}{stderr}");
        assert!(took < std::time::Duration::from_secs(15), "took {took:?}");
        assert!(stderr.contains("no answer within 3 s"), "{stderr}");
        assert!(
            stdout.contains("PASS") || stdout.contains("REGRESSION"),
            "{stdout}"
        );
        assert_valid_junit(&d.join("j.xml"));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
        assert_eq!(json["exit_code"], if code == 1 { 1 } else { 0 });
        assert!(!stderr.contains(":pw@"), "{stderr}");
    }
    // capture: the baseline is written, the record bounded.
    let started = std::time::Instant::now();
    let res = gate(d)
        .args([
            "capture",
            "--baseline",
            "b2",
            "--history",
            &url,
            "--history-timeout",
            "1s",
            "--replay",
        ])
        .arg(&healthy_run)
        .output()
        .unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert_eq!(res.status.code(), Some(0), "{}", output(&res).1);
    assert!(d.join("baselines/b2.toml").exists());
}

/// Many connections opening one fresh file at once: each sets WAL and
/// migrates the schema. SQLite answers "database is locked" at once,
/// without waiting, to one side of a lock upgrade it would otherwise
/// deadlock on; opening retries that instead of failing (a CI run of
/// `concurrent_writers_never_lose_a_row` once lost a worker to it).
#[test]
fn many_connections_opening_a_fresh_file_at_once_all_succeed() {
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let loc = Location::Sqlite(dir.path().join(format!("fresh-{round}.sqlite")));
        let barrier = std::sync::Barrier::new(12);
        std::thread::scope(|s| {
            for _ in 0..12 {
                let (loc, barrier) = (loc.clone(), &barrier);
                s.spawn(move || {
                    barrier.wait();
                    history::open(&loc, true).map(|_| ()).expect("open");
                });
            }
        });
    }
}

/// The words of a table's TEXT column, in row order, with their SQLite type.
fn stored_words(db: &Path, sql: &str) -> Vec<(String, String)> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut stmt = c.prepare(sql).unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn closed_set_words_are_stored_as_before_and_unknown_ones_read_back_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), CONFIG).unwrap();
    let db = d.join("history.sqlite");
    capture(d, "train", &db);
    let ok = check(d, &db, 11, 1.0, "c0ffee1111");
    assert_eq!(ok.status.code(), Some(0), "{:?}", output(&ok));
    // The same TEXT words the string fields stored: nothing else in the file.
    let runs = stored_words(&db, "SELECT verdict, typeof(verdict) FROM runs ORDER BY id");
    assert_eq!(
        runs,
        [("captured", "text"), ("pass", "text")].map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let words = stored_words(
        &db,
        "SELECT direction || ' ' || statistic || ' ' || verdict, typeof(direction) || typeof(statistic) || typeof(verdict) FROM run_metrics WHERE metric = 'samples_per_s' ORDER BY run_id",
    );
    assert_eq!(words.len(), 2, "{words:?}");
    assert_eq!(words[0].0, "higher_is_better mean captured");
    assert_eq!(words[1].0, "higher_is_better mean pass");
    assert!(words.iter().all(|(_, t)| t == "texttexttext"), "{words:?}");

    // A newer or foreign writer's words: kept, shown and serialised verbatim.
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "INSERT INTO runs (recorded_at, kind, baseline, baseline_created, baseline_runs, commit_sha, branch, tags, gpu_model, environment, verdict, exit_code, regressions, top_rule, top_cause, gate_version, source)
         SELECT '2026-12-01T00:00:00Z', 'check', baseline, baseline_created, baseline_runs, 'f0re16n', 'main', '{}', gpu_model, environment, 'vetoed', 0, 0, NULL, NULL, '9.9.9', 'foreign.jsonl' FROM runs WHERE id = 2",
        [],
    )
    .unwrap();
    c.execute(
        "INSERT INTO run_metrics (run_id, metric, unit, direction, statistic, gated, baseline_value, value, change_pct, verdict)
         VALUES (3, 'samples_per_s', '1/s', 'sideways', 'p42', 1, 1000.0, 500.0, -50.0, 'waived')",
        [],
    )
    .unwrap();
    drop(c);
    let j = history_json(d, &db, &["--metric", "samples_per_s"]);
    let newest = &j["runs"][0];
    assert_eq!(newest["verdict"], "vetoed", "{j:#}");
    let m = &newest["metrics"][0];
    assert_eq!(
        (&m["direction"], &m["statistic"], &m["verdict"]),
        (
            &serde_json::json!("sideways"),
            &serde_json::json!("p42"),
            &serde_json::json!("waived")
        ),
        "{j:#}"
    );
    let out = gate(d)
        .args(["history", "--metric", "samples_per_s", "--history"])
        .arg(&db)
        .output()
        .unwrap();
    let (text, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{stderr}");
    assert!(text.contains("waived"), "{text}");
    let page = d.join("trend.html");
    gate(d)
        .args(["history", "--history"])
        .arg(&db)
        .arg("--html")
        .arg(&page)
        .assert()
        .success();
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .contains("samples_per_s"));

    // Through the library: unknown words are `Stored::Unknown`, match no
    // known value, and a copy appended elsewhere stores the same bytes.
    let loc = Location::Sqlite(db.clone());
    let mut store = history::open(&loc, false).unwrap();
    let read = store
        .runs(&Query {
            metrics: MetricFilter::All,
            limit: Some(1),
            ..Query::default()
        })
        .unwrap();
    let run = &read[0];
    assert_eq!(run.verdict, history::Stored::Unknown("vetoed".into()));
    assert!(run.verdict != gpugate::gate::RunVerdict::Pass);
    assert_eq!(run.metrics[0].direction.known(), None);
    assert_eq!(run.metrics[0].statistic.as_str(), "p42");
    let copy = d.join("copy.sqlite");
    history::open(&Location::Sqlite(copy.clone()), true)
        .unwrap()
        .append(run)
        .unwrap();
    assert_eq!(
        stored_words(&copy, "SELECT verdict, typeof(verdict) FROM runs")[0].0,
        "vetoed"
    );
    assert_eq!(
        stored_words(
            &copy,
            "SELECT direction || ' ' || statistic || ' ' || verdict, '' FROM run_metrics"
        )[0]
        .0,
        "sideways p42 waived"
    );

    // A later check reads those rows for drift and its trend: still judged.
    let again = check(d, &db, 12, 1.0, "c0ffee3333");
    assert_eq!(again.status.code(), Some(0), "{:?}", output(&again));
}

/// `history --html` goes through the one writer: a missing folder is
/// created; a path that cannot be written is one line naming the flag
/// (exit 2: the command line's), a full disk exit 3 (the machine's).
#[test]
fn the_trend_page_creates_its_folder_and_a_failed_write_names_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let db = d.join("h.sqlite");
    capture(d, "train", &db);
    for seed in 1..=2 {
        check(d, &db, seed, 1.0, "c");
    }
    let out = gate(d)
        .args(["history", "--history"])
        .arg(&db)
        .args(["--html", "pages/new/trend.html"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", output(&out).1);
    // Larger than the 4 KiB disk below holds.
    let page = std::fs::metadata(d.join("pages/new/trend.html")).unwrap();
    assert!(page.len() > 8192, "{}", page.len());
    std::fs::write(d.join("a-file"), "").unwrap();
    let out = gate(d)
        .args(["history", "--history"])
        .arg(&db)
        .args(["--html", "a-file/trend.html"])
        .output()
        .unwrap();
    let stderr = output(&out).1;
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("--html") && errors[0].contains("a-file"),
        "{stderr}"
    );
    let args = format!("history --history {} --html full/trend.html", db.display());
    let Some((code, stderr)) = crate::outputs::with_full_disk(d, &args) else {
        eprintln!("SKIP: cannot mount a tmpfs here (no user namespaces); disk-full case not run");
        return;
    };
    assert_eq!(code, Some(3), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("No space left"))
        .unwrap();
    assert!(
        line.contains("--html") && line.contains("full/trend.html"),
        "{line}"
    );
}
