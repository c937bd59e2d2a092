//! Issue 41 (Reliability 5): every reproduction of the fifth hostile run
//! but item 5 (metric ids: tests/metric_sources.rs), through the real
//! binary. Each test failed on the binary before its fix (main at 9063e33)
//! and passes after it; a test that cannot run here says SKIPPED.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// Longest any one command of these tests may take: a hang is a failure,
/// never a test that runs until CI's time-out.
const LIMIT: Duration = Duration::from_secs(60);

/// A synthetic trace whose embedded metrics file is `text`.
fn with_metrics_file(dir: &Path, name: &str, seed: u64, text: &str) -> PathBuf {
    let path = trace(dir, name, &healthy(seed));
    let body = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = body.lines().map(str::to_string).collect();
    let last = lines.len() - 1;
    let mut end: serde_json::Value = serde_json::from_str(&lines[last]).unwrap();
    end["metrics_file"] = text.into();
    lines[last] = end.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// `gate ARGS` in `d`, killed past `LIMIT` (then its code is None).
fn run(d: &Path, args: &[&str], extra: &[&Path]) -> Output {
    let mut c = gate(d);
    c.args(args).args(extra).timeout(LIMIT);
    c.output().unwrap()
}

/// A checkout with `toml` and a baseline `b` captured from two runs whose
/// metrics files are `base` (one text each run).
fn captured(toml: &str, base: [&str; 2]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), toml).unwrap();
    let a = with_metrics_file(d, "a", 1, base[0]);
    let b = with_metrics_file(d, "b", 2, base[1]);
    let out = run(d, &["capture", "--baseline", "b", "--replay"], &[&a, &b]);
    assert_eq!(out.status.code(), Some(0), "{:?}", output(&out));
    dir
}

fn user_metric(format: &str, settings: &str, direction: &str) -> String {
    format!(
        "[user_metrics.t]\nsource = \"metrics_file\"\nformat = \"{format}\"\n{settings}direction = \"{direction}\"\nunit = \"s\"\n"
    )
}

fn pytest(name: &str, mean: f64, stddev: f64, rounds: f64) -> String {
    serde_json::json!({"benchmarks": [{"name": name, "fullname": format!("t.py::{name}"),
        "stats": {"mean": mean, "stddev": stddev, "rounds": rounds, "median": mean,
                  "iqr": stddev, "min": mean, "max": mean}}]})
    .to_string()
}

fn google(real_time: f64, repetitions: f64) -> String {
    let row = |agg: &str, v: f64| {
        serde_json::json!({"name": format!("BM_x_{agg}"), "run_name": "BM_x",
            "run_type": "aggregate", "aggregate_name": agg, "repetitions": repetitions,
            "real_time": v, "cpu_time": v, "time_unit": "ns"})
    };
    serde_json::json!({"benchmarks": [row("mean", real_time), row("stddev", real_time / 100.0)]})
        .to_string()
}

fn nvbench(mean_s: f64, samples: f64) -> String {
    let s = |tag: &str, v: f64| serde_json::json!({"tag": tag, "data": [{"name": "value", "value": v.to_string()}]});
    serde_json::json!({"benchmarks": [{"name": "copy", "states": [{"name": "Device=0",
        "summaries": [s("nv/cold/time/gpu/mean", mean_s), s("nv/cold/time/gpu/stdev/relative", 0.01),
                      s("nv/cold/sample_size", samples)]}]}]})
    .to_string()
}

// ------------------------------------------------------- 41.1 hangs

#[test]
fn a_huge_count_in_a_harness_file_never_hangs_capture_or_check() {
    type File = Box<dyn Fn(f64) -> String>;
    let cases: Vec<(String, File)> = vec![
        (
            user_metric(
                "pytest_benchmark",
                "benchmark = \"test_step\"\nstat = \"mean\"\n",
                "lower_is_better",
            ),
            Box::new(|n| pytest("test_step", 0.5, 0.01, n)),
        ),
        (
            user_metric(
                "google_benchmark",
                "benchmark = \"BM_x\"\nstat = \"real_time\"\n",
                "lower_is_better",
            ),
            Box::new(|n| google(100.0, n)),
        ),
        (
            user_metric(
                "nvbench",
                "benchmark = \"copy\"\nstat = \"nv/cold/time/gpu/mean\"\n",
                "lower_is_better",
            ),
            Box::new(|n| nvbench(0.001, n)),
        ),
    ];
    for (toml, file) in &cases {
        for n in [3e7, 1e8, 1e22] {
            let started = Instant::now();
            let dir = captured(toml, [&file(n), &file(n)]);
            let d = dir.path();
            let c = with_metrics_file(d, "c", 3, &file(n));
            let out = run(d, &["check", "--baseline", "b", "--replay"], &[&c]);
            let (stdout, stderr) = output(&out);
            assert_eq!(out.status.code(), Some(0), "count {n}: {stdout}{stderr}");
            assert!(
                started.elapsed() < LIMIT,
                "count {n}: {:?}",
                started.elapsed()
            );
        }
    }
}

const REGEX_METRIC: &str = "[user_metrics.t]\nregex = 'value=([0-9.eE+-]+)'\nsource = \"metrics_file\"\ndirection = \"lower_is_better\"\nunit = \"s\"\n";

#[test]
fn a_value_of_f64_max_gives_a_bounded_check_page() {
    let dir = captured(REGEX_METRIC, ["value=120\n", "value=121\n"]);
    let d = dir.path();
    for (i, v) in [
        "1.7976931348623157e308",
        "1e308",
        "1e200",
        "-1.7976931348623157e308",
    ]
    .iter()
    .enumerate()
    {
        let c = with_metrics_file(d, &format!("c{i}"), 3, &format!("value={v}\n"));
        let out = run(
            d,
            &["check", "--baseline", "b", "--html", "p.html", "--replay"],
            &[&c],
        );
        let (stdout, stderr) = output(&out);
        assert!(out.status.code().is_some(), "{v}: killed at {LIMIT:?}");
        assert!(!stderr.contains("panicked"), "{v}: {stderr}");
        assert_ne!(out.status.code(), Some(0), "{v}: {stdout}");
        let page = std::fs::metadata(d.join("p.html")).unwrap().len();
        assert!(page < 6 << 20, "{v}: page of {page} bytes");
    }
}

// ------------------------------------------------------- 41.3 panic

#[test]
fn the_history_page_after_a_huge_number_never_panics() {
    let dir = captured(REGEX_METRIC, ["value=120\n", "value=121\n"]);
    let d = dir.path();
    let db = d.join("h.sqlite");
    for (i, v) in ["120.5", "1e200", "1.7976931348623157e308", "1e-300"]
        .iter()
        .enumerate()
    {
        let c = with_metrics_file(d, &format!("c{i}"), 3 + i as u64, &format!("value={v}\n"));
        let out = run(
            d,
            &[
                "check",
                "--baseline",
                "b",
                "--history",
                "h.sqlite",
                "--replay",
            ],
            &[&c],
        );
        assert!(out.status.code().is_some(), "{v}: killed");
    }
    assert!(db.exists());
    let out = run(
        d,
        &["history", "--history", "h.sqlite", "--html", "trend.html"],
        &[],
    );
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let html = std::fs::read_to_string(d.join("trend.html")).unwrap();
    assert!(html.contains("<svg"), "{html}");
    assert!(
        !html.contains("NaN") && !html.contains("inf\""),
        "a coordinate is not a number"
    );
}

// --------------------------------------- 41.4 baselines check refuses

#[test]
fn capture_never_writes_a_baseline_its_check_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("gate.toml"), REGEX_METRIC).unwrap();
    let a = with_metrics_file(d, "a", 1, "value=1e16\n");
    let b = with_metrics_file(d, "b", 2, "value=1.1e16\n");
    let out = run(d, &["capture", "--baseline", "big", "--replay"], &[&a, &b]);
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("check cannot read") && stderr.contains("nothing was written"),
        "{stderr}"
    );
    assert!(!d.join("baselines/big.toml").exists());
}

// ------------------------------------------ 41.2 measured nothing

/// A live checkout (no GPU) whose benchmark prints `value=1` and sleeps:
/// a baseline `w` of two such runs at 10 ms sampling.
fn live_checkout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("gate.toml"),
        "[user_metrics.t]\nregex = '^value=([0-9.]+)'\ndirection = \"lower_is_better\"\nunit = \"s\"\n",
    )
    .unwrap();
    let out = run(
        d,
        &[
            "capture",
            "--baseline",
            "w",
            "--no-gpu",
            "--interval",
            "10ms",
            "--runs",
            "2",
            "--",
            "sh",
            "-c",
            "echo value=1; sleep 0.5",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{:?}", output(&out));
    dir
}

#[test]
fn a_warm_up_that_never_ends_fails_the_run_never_passes() {
    let dir = live_checkout();
    let d = dir.path();
    // Never printed, or printed on stderr only: every sample is warm-up.
    for script in [
        "echo value=1; sleep 0.5",
        "echo value=1; echo ready >&2; sleep 0.5",
    ] {
        let out = run(
            d,
            &[
                "check",
                "--baseline",
                "w",
                "--no-gpu",
                "--interval",
                "10ms",
                "--warmup-until",
                "^ready",
                "--",
                "sh",
                "-c",
                script,
            ],
            &[],
        );
        let (stdout, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(3), "{script}: {stdout}{stderr}");
        assert!(!stdout.contains("PASS"), "{stdout}");
        assert!(
            format!("{stdout}{stderr}").contains("nothing was measured"),
            "{stdout}{stderr}"
        );
    }
}

#[test]
fn a_pattern_that_matches_every_line_is_refused_before_anything_runs() {
    let dir = live_checkout();
    let d = dir.path();
    for flag in ["--until", "--warmup-until"] {
        for pattern in ["\\w", "\\b|y", ".", "", "x*", "(?s).*"] {
            let out = run(
                d,
                &[
                    "check",
                    "--baseline",
                    "w",
                    "--no-gpu",
                    flag,
                    pattern,
                    "--",
                    "touch",
                    "ran",
                ],
                &[],
            );
            let (stdout, stderr) = output(&out);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{flag} {pattern:?}: {stdout}{stderr}"
            );
            assert!(stderr.contains("matches every line"), "{stderr}");
            assert!(
                !d.join("ran").exists(),
                "{flag} {pattern:?} ran the benchmark"
            );
        }
    }
    // A real marker is taken.
    let out = run(
        d,
        &[
            "check",
            "--baseline",
            "w",
            "--no-gpu",
            "--interval",
            "10ms",
            "--until",
            "^timed done",
            "--",
            "sh",
            "-c",
            "echo value=1; sleep 0.5; echo timed done",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{:?}", output(&out));
}

#[test]
fn a_suite_refuses_every_workloads_bad_pattern_before_the_first_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("gate.toml"),
        "[[suite.workload]]\nname = \"one\"\nbaseline = \"one\"\ncommand = [\"touch\", \"first-ran\"]\n\n\
         [[suite.workload]]\nname = \"two\"\nbaseline = \"two\"\ncommand = [\"true\"]\nuntil = '\\w'\n",
    )
    .unwrap();
    let out = run(d, &["check", "--suite", "--no-gpu"], &[]);
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("'two' until") && stderr.contains("matches every line"),
        "{stderr}"
    );
    assert!(!d.join("first-ran").exists(), "the first workload ran");
}

/// The `t` of the trace's first note starting with `prefix`.
fn note_time(trace: &Path, prefix: &str) -> Option<f64> {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            (v["type"] == "event" && v["message"].as_str()?.starts_with(prefix))
                .then(|| v["t"].as_f64())
                .flatten()
        })
}

#[test]
fn an_until_line_counts_only_after_the_warm_up() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // An --until line during --warmup 1s does not close the window.
    let out = run(
        d,
        &[
            "record",
            "--no-gpu",
            "--interval",
            "10ms",
            "--warmup",
            "1s",
            "--until",
            "^done",
            "-o",
            "t.jsonl",
            "--",
            "sh",
            "-c",
            "echo done; sleep 1.4; echo done; sleep 0.3",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{:?}", output(&out));
    let closed = note_time(&d.join("t.jsonl"), "window closed by --until").expect("closed");
    assert!(
        closed >= 1000.0,
        "closed at {closed} ms, inside the 1 s warm-up"
    );
    // The line that releases the warm-up does not also close the window
    // when --until is given to a replay.
    let out = run(
        d,
        &[
            "record",
            "--no-gpu",
            "--interval",
            "10ms",
            "--warmup-until",
            "^go",
            "-o",
            "g.jsonl",
            "--",
            "sh",
            "-c",
            "sleep 0.2; echo go; echo value=1; sleep 0.5",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{:?}", output(&out));
    std::fs::write(
        d.join("gate.toml"),
        "[user_metrics.t]\nregex = '^value=([0-9.]+)'\ndirection = \"lower_is_better\"\nunit = \"s\"\n",
    )
    .unwrap();
    let out = run(
        d,
        &[
            "capture",
            "--baseline",
            "g",
            "--until",
            "^go",
            "--replay",
            "g.jsonl",
        ],
        &[],
    );
    let (_, stderr) = output(&out);
    assert!(stderr.contains("matched no output line"), "{stderr}");
}

// ------------------------------------------------ 41.6 mentions, links

/// The text outside Markdown code spans.
fn outside_code(md: &str) -> String {
    md.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

/// What GitHub would turn into a mention, an issue link or a link.
fn github_triggers(text: &str) -> Vec<String> {
    // The zero-width space, as an entity, breaks each of them.
    let t = outside_code(text).replace("&#8203;", "\u{200B}");
    let b = t.as_bytes();
    let mut found = Vec::new();
    for (i, w) in b.windows(2).enumerate() {
        let next = w[1];
        if (w[0] == b'@' && next.is_ascii_alphanumeric()) || (w[0] == b'#' && next.is_ascii_digit())
        {
            found.push(t[i..(i + 20).min(t.len())].to_string());
        }
    }
    let lower = t.to_ascii_lowercase();
    for needle in ["://", "www."] {
        if let Some(i) = lower.find(needle) {
            found.push(t[i.saturating_sub(8)..(i + 20).min(t.len())].to_string());
        }
    }
    found
}

#[test]
fn no_benchmark_name_mentions_or_links_in_a_pr_comment_or_summary() {
    let names = [
        "@octocat",
        "@acme/security-team",
        "https://evil.example/login",
        "#1",
        "www.evil.example",
    ];
    let file = |mean: f64| {
        let list: Vec<serde_json::Value> = names
            .iter()
            .map(|n| serde_json::json!({"name": n, "fullname": n,
                "stats": {"mean": mean, "stddev": mean / 100.0, "rounds": 50, "median": mean, "iqr": 0.0}}))
            .collect();
        serde_json::json!({ "benchmarks": list }).to_string()
    };
    // The names, and a rule's words from a merge request's gate.toml.
    let toml = user_metric(
        "pytest_benchmark",
        "benchmark = \"*\"\nstat = \"mean\"\n",
        "lower_is_better",
    ) + "\n[rules.ping]\nwhen = \"gpu_count >= 1\"\nchange_when = \"gpu_count >= 1\"\nseverity = \"high\"\norder = 0\n\
         title = \"Ask @octocat\"\n\
         explanation = \"see #1 and https://evil.example/login or www.evil.example, cc @acme/security-team\"\n";
    let dir = captured(&toml, [&file(0.5), &file(0.501)]);
    let d = dir.path();
    let c = with_metrics_file(d, "c", 3, &file(2.5));
    let mut cmd = gate(d);
    cmd.args([
        "check",
        "--baseline",
        "b",
        "--pr-comment",
        "c.md",
        "--markdown",
        "r.md",
        "--replay",
    ])
    .arg(&c)
    .env("GITHUB_ACTIONS", "true")
    .env("GITHUB_STEP_SUMMARY", d.join("summary.md"))
    .timeout(LIMIT);
    let out = cmd.output().unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    for f in ["c.md", "r.md", "summary.md"] {
        let text = std::fs::read_to_string(d.join(f)).unwrap();
        assert!(text.contains("REGRESSION"), "{f}: {text}");
        let found = github_triggers(&text);
        assert!(found.is_empty(), "{f}: {found:?}\n{text}");
    }
}

// ------------------------------------- 41.7 secrets in malformed locations

/// Every path under `dir`, as text.
fn paths_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        out.push(p.display().to_string());
        if p.is_dir() {
            out.extend(paths_under(&p));
        }
    }
    out
}

#[test]
fn a_mistyped_postgres_location_never_shows_or_files_its_password() {
    let dir = captured(REGEX_METRIC, ["value=120\n", "value=121\n"]);
    let d = dir.path();
    let c = with_metrics_file(d, "c", 3, "value=120.5\n");
    let pw = "s3cretPW";
    for location in [
        format!("postgres:/gate:{pw}@db.example/gate"),
        format!("postgres:gate:{pw}@db.example/gate"),
        format!("postgres//gate:{pw}@db.example/gate"),
        format!("gate:{pw}@db.example/gate"),
        format!("//gate:{pw}@db.example//gate"),
        format!("POSTGRESQL:/gate:{pw}@db.example/gate"),
    ] {
        for cmd in [
            vec![
                "check",
                "--baseline",
                "b",
                "--history",
                &location,
                "--replay",
            ],
            vec!["history", "--history", &location],
        ] {
            let replay: &[&Path] = if cmd[0] == "check" { &[&c] } else { &[] };
            let out = run(d, &cmd, replay);
            let (stdout, stderr) = output(&out);
            assert_eq!(out.status.code(), Some(2), "{location}: {stdout}{stderr}");
            assert!(
                !stdout.contains(pw) && !stderr.contains(pw),
                "{location}: {stdout}{stderr}"
            );
            let leaked: Vec<String> = paths_under(d)
                .into_iter()
                .filter(|p| p.contains(pw))
                .collect();
            assert!(leaked.is_empty(), "{location}: {leaked:?}");
        }
    }
}

// ----------------------------------------------- 41.8 arithmetic

#[test]
fn a_huge_time_against_a_small_baseline_is_never_a_pass() {
    let toml = user_metric(
        "pytest_benchmark",
        "benchmark = \"test_step\"\nstat = \"mean\"\n",
        "lower_is_better",
    );
    let dir = captured(
        &toml,
        [
            &pytest("test_step", 0.001, 1e-5, 50.0),
            &pytest("test_step", 0.00101, 1e-5, 50.0),
        ],
    );
    let d = dir.path();
    for (i, (mean, sd)) in [
        (1e200, 1e199),
        (1e200, 0.0),
        (1e300, 1e299),
        (f64::MAX, 1e307),
    ]
    .iter()
    .enumerate()
    {
        let c = with_metrics_file(
            d,
            &format!("c{i}"),
            3,
            &pytest("test_step", *mean, *sd, 50.0),
        );
        let out = run(d, &["check", "--baseline", "b", "--replay"], &[&c]);
        let (stdout, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(1), "mean {mean}: {stdout}{stderr}");
        assert!(!stdout.contains("PASS (exit 0)"), "{stdout}");
    }
}

#[test]
fn a_zero_negative_zero_or_subpicosecond_time_is_refused() {
    let toml = user_metric(
        "google_benchmark",
        "benchmark = \"BM_x\"\nstat = \"real_time\"\n",
        "lower_is_better",
    );
    let dir = captured(&toml, [&google(100.0, 5.0), &google(101.0, 5.0)]);
    let d = dir.path();
    for (i, t) in ["0", "-0", "1e-300"].iter().enumerate() {
        let file = google(100.0, 5.0).replace("\"real_time\":100.0", &format!("\"real_time\":{t}"));
        assert!(file.contains(&format!("\"real_time\":{t}")), "{file}");
        let c = with_metrics_file(d, &format!("c{i}"), 3, &file);
        let out = run(d, &["check", "--baseline", "b", "--replay"], &[&c]);
        let (stdout, stderr) = output(&out);
        assert_ne!(out.status.code(), Some(0), "{t}: {stdout}{stderr}");
        assert!(
            !stdout.contains("IMPROVEMENT") && !stdout.contains("improved"),
            "{t}: {stdout}"
        );
        assert!(
            stdout.contains("a time is positive"),
            "{t}: {stdout}{stderr}"
        );
    }
}

#[test]
fn a_metrics_file_dated_after_the_run_is_not_this_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = run(
        d,
        &[
            "record",
            "--no-gpu",
            "--interval",
            "10ms",
            "--metrics-file",
            "m.json",
            "-o",
            "t.jsonl",
            "--",
            "sh",
            "-c",
            "echo '{\"v\": 1}' > m.json; touch -d '+1 day' m.json",
        ],
        &[],
    );
    let (stdout, stderr) = output(&out);
    assert!(out.status.code().is_some(), "{stdout}{stderr}");
    let text = std::fs::read_to_string(d.join("t.jsonl")).unwrap();
    let end: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert!(end["metrics_file"].is_null(), "{end}");
    assert!(end.to_string().contains("after this run ended"), "{end}");
}

// ------------------------------------------------- 41.9 signals

/// `gate ARGS` started in `d`, sent `sig` after `after`; its exit code.
fn signalled(d: &Path, args: &[&str], sig: i32, after: Duration) -> (Option<i32>, Duration) {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("gate"))
        .current_dir(d)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let sent = Instant::now();
    unsafe { libc::kill(child.id() as i32, sig) };
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code(), sent.elapsed());
        }
        if sent.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return (None, sent.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// No benchmark runs while gate replays and judges: SIGINT or SIGTERM then
/// ends it at once with exit 3 and a line saying so, never the shell's
/// 130/143 (a suite of 300 replayed workloads keeps it busy for seconds).
#[test]
fn a_signal_while_judging_replays_is_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/traces");
    let out = common::gate(d)
        .args(["capture", "--baseline", "w", "--replay"])
        .args([root.join("healthy-1.jsonl"), root.join("healthy-2.jsonl")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let base = std::fs::read_to_string(d.join("baselines/w.toml")).unwrap();
    let (mut toml, mut args) = (String::new(), vec!["check".to_string(), "--suite".into()]);
    for i in 0..300 {
        std::fs::write(
            d.join(format!("baselines/w{i}.toml")),
            base.replace("name = \"w\"", &format!("name = \"w{i}\"")),
        )
        .unwrap();
        toml.push_str(&format!(
            "[[suite.workload]]\nname = \"w{i}\"\nbaseline = \"w{i}\"\ncommand = [\"true\"]\n\n"
        ));
        args.push("--suite-replay".into());
        args.push(format!("w{i}={}", root.join("healthy-3.jsonl").display()));
    }
    std::fs::write(d.join("gate.toml"), toml).unwrap();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let (code, took) = signalled(d, &args, sig, Duration::from_millis(1500));
        assert_eq!(code, Some(3), "signal {sig}");
        assert!(took < Duration::from_secs(2), "signal {sig}: {took:?}");
    }
    // What it says: one line, on stderr.
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("gate"))
        .current_dir(d)
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("gate: interrupted by a signal before the verdict was complete: exit 3"),
        "{err}"
    );
}

#[test]
fn a_signal_while_waiting_for_the_warm_up_line_is_exit_3() {
    let dir = live_checkout();
    let d = dir.path();
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let (code, took) = signalled(
            d,
            &[
                "check",
                "--baseline",
                "w",
                "--no-gpu",
                "--interval",
                "10ms",
                "--warmup-until",
                "^never",
                "--",
                "sleep",
                "30",
            ],
            sig,
            Duration::from_millis(1500),
        );
        assert_eq!(code, Some(3), "signal {sig}");
        assert!(took < Duration::from_secs(15), "signal {sig}: {took:?}");
    }
}

#[test]
fn a_signal_ends_a_history_wait_with_exit_3() {
    let dir = captured(REGEX_METRIC, ["value=120\n", "value=121\n"]);
    let d = dir.path();
    let c = with_metrics_file(d, "c", 3, "value=120.5\n");
    // Accepts every connection and keeps it open without a byte.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    let url = format!("postgres://gate@127.0.0.1:{port}/gate");
    let c = c.display().to_string();
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let (code, took) = signalled(
            d,
            &[
                "check",
                "--baseline",
                "b",
                "--history",
                &url,
                "--history-timeout",
                "40s",
                "--replay",
                &c,
            ],
            sig,
            Duration::from_millis(2500),
        );
        assert_eq!(code, Some(3), "signal {sig}");
        assert!(took < Duration::from_secs(5), "signal {sig}: {took:?}");
    }
}

#[test]
fn a_signal_during_a_suites_second_workload_is_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let workload = |name: &str, script: &str| {
        format!("[[suite.workload]]\nname = \"{name}\"\nbaseline = \"{name}\"\ncommand = [\"sh\", \"-c\", \"{script}\"]\n\n")
    };
    let quick = "echo value=1; sleep 0.5";
    let metric = "[user_metrics.t]\nregex = '^value=([0-9.]+)'\ndirection = \"lower_is_better\"\nunit = \"s\"\n\n";
    std::fs::write(
        d.join("gate.toml"),
        format!(
            "{metric}{}{}",
            workload("one", quick),
            workload("two", quick)
        ),
    )
    .unwrap();
    let out = run(
        d,
        &[
            "capture",
            "--suite",
            "--no-gpu",
            "--interval",
            "10ms",
            "--runs",
            "2",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{:?}", output(&out));
    std::fs::write(
        d.join("gate.toml"),
        format!(
            "{metric}{}{}",
            workload("one", quick),
            workload("two", "sleep 30; echo value=1")
        ),
    )
    .unwrap();
    let (code, _) = signalled(
        d,
        &["check", "--suite", "--no-gpu", "--interval", "10ms"],
        libc::SIGTERM,
        Duration::from_secs(4),
    );
    assert_eq!(code, Some(3));
}

// ------------------------------------------------------- 41.10 bounds

#[test]
fn a_huge_json_key_in_a_metrics_file_costs_the_kept_limit_not_its_size() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A 200 MB key (the report's was 1 GB: 1.9 GB of memory).
    let mut f = std::io::BufWriter::new(std::fs::File::create(d.join("m.json")).unwrap());
    f.write_all(b"{\"").unwrap();
    let chunk = vec![b'k'; 1 << 20];
    for _ in 0..200 {
        f.write_all(&chunk).unwrap();
    }
    f.write_all(b"\": 1}").unwrap();
    f.flush().unwrap();
    drop(f);
    let out = gate(d)
        .env("GATE_PROFILE", "1")
        .args([
            "record",
            "--no-gpu",
            "--interval",
            "10ms",
            "--metrics-file",
            "m.json",
            "-o",
            "t.jsonl",
            "--",
            "touch",
            "m.json",
        ])
        .timeout(LIMIT)
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert!(out.status.code().is_some(), "{stdout}{stderr}");
    let peak_mib = peak_kib(&stderr) / 1024;
    assert!(peak_mib < 120, "peak {peak_mib} MiB for a 200 MB key");
    let text = std::fs::read_to_string(d.join("t.jsonl")).unwrap();
    assert!(
        text.lines().last().unwrap().contains("JSON string longer"),
        "{stderr}"
    );
}
