//! Issue 30.1 and 30.2 through the real binary: `gate check --html F` draws
//! the check (verdict on top, the baseline's band and the new run over
//! time, the diagnosis beside its curves), self-contained, escaped and
//! bounded; `gate check --suite --html F` draws every workload on one page;
//! every reporter shows the metrics that moved beyond their noise, a
//! counter at 0 in the baseline included.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The synthetic runs print `samples_per_s: N` once a second.
const SYNTHETIC_THROUGHPUT: &str = r#"
[user_metrics.samples_per_s]
regex = '^samples_per_s: ([0-9.eE+-]+)'
direction = "higher_is_better"
unit = "1/s"
"#;

/// A baseline `b` of two healthy synthetic runs, the throughput declared.
fn baseline(d: &Path) {
    std::fs::write(d.join("gate.toml"), SYNTHETIC_THROUGHPUT).unwrap();
    let t1 = trace(d, "h1.jsonl", &healthy(1));
    let t2 = trace(d, "h2.jsonl", &healthy(2));
    let out = gate(d)
        .args(["capture", "--baseline", "b", "--replay"])
        .arg(&t1)
        .arg(&t2)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", output(&out).1);
}

/// Points of every `<polyline>` of a page.
fn polylines(page: &str) -> Vec<usize> {
    page.match_indices("<polyline")
        .map(|(at, _)| {
            let rest = &page[at..];
            let pts = rest.split("points=\"").nth(1).unwrap_or("");
            pts[..pts.find('"').unwrap_or(0)].split(' ').count()
        })
        .collect()
}

/// Self-contained: no script, no external resource (the SVG namespace is a
/// name, not a fetch).
fn assert_self_contained(page: &str) {
    let lower = page.to_lowercase();
    assert!(!lower.contains("<script"), "a script");
    assert!(!lower.contains("<link"), "a link element");
    assert!(!lower.contains(" src="), "an external resource");
    let urls = lower.replace("http://www.w3.org/2000/svg", "");
    assert!(
        !urls.contains("http://") && !urls.contains("https://"),
        "a URL"
    );
}

#[test]
fn the_check_page_draws_the_verdict_the_band_and_the_diagnosis() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    baseline(d);
    // Another job on the GPU: fewer samples/s, contention's counters 0 -> 42 %.
    let t = trace(
        d,
        "contended.jsonl",
        &run(
            throughput(gpugate::synthetic::Signature::contention(), 0.7),
            3,
        ),
    );
    let out = check_replay(d, "b", &["--html", "out/check.html"], &t);
    let (stdout, stderr) = output(&out);
    // A job outside the benchmark's tree: DISTURBED (exit 3, issue 38),
    // drawn and diagnosed like a regression.
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("gate: wrote the --html report 'out/check.html'"),
        "{stderr}"
    );
    let page = std::fs::read_to_string(d.join("out/check.html")).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert_self_contained(&page);
    // The verdict and its reasons come first.
    let verdict = page
        .find("VERDICT: DISTURBED (exit 3)")
        .expect("the verdict");
    let first_chart = page.find("<svg").expect("a chart");
    assert!(verdict < first_chart);
    assert!(page.contains("class=\"reasons\""));
    // The decisive metric, with the baseline's band, and the counter that
    // moved from 0 with its absolute change.
    let rows: Vec<&str> = page
        .split("<tr><td><a href=")
        .skip(1)
        .map(|r| &r[..r.find("</a>").unwrap_or(0)])
        .collect();
    assert!(
        rows.iter().any(|r| r.ends_with(">tensor_pct")),
        "a decisive metric: {rows:?}\n{stdout}"
    );
    assert!(page.contains("noise band ±"), "a band legend");
    assert!(page.contains("other_sm_share_pct"), "the moved counter");
    assert!(
        page.contains("from 0"),
        "an absolute change where the baseline is 0"
    );
    // The diagnosis beside the curves it cites.
    let finding = page.find("class=\"finding\"").expect("a finding");
    let curves = &page[finding..];
    let curves = &curves[..curves.find("</div></div>").unwrap()];
    assert!(curves.contains("Other processes share the GPU"), "{curves}");
    assert!(curves.contains("<svg"), "the finding's curves beside it");
    for n in polylines(&page) {
        assert!(n <= gpugate::report::check::html::MAX_POINTS, "{n} points");
    }
}

/// A checkout with this repository's gate.toml (the benchmark's number
/// decides: counters are context) and its committed baselines.
fn checkout(baselines: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(repo("gate.toml"), d.join("gate.toml")).unwrap();
    std::fs::create_dir_all(d.join("baselines")).unwrap();
    for b in baselines {
        std::fs::copy(
            repo(&format!("baselines/{b}.toml")),
            d.join(format!("baselines/{b}.toml")),
        )
        .unwrap();
    }
    dir
}

#[test]
fn every_reporter_shows_a_counter_that_moved_from_zero() {
    // Issue 30.2: the recorded contention fixture against train-h200: the
    // throughput decides, and another job's SM share went 0 -> 47 %, a
    // context counter with no relative change.
    let dir = checkout(&["train-h200"]);
    let d = dir.path();
    let out = check_replay(
        d,
        "train-h200",
        &[
            "--markdown",
            "r.md",
            "--junit",
            "j.xml",
            "--json",
            "r.json",
            "--pr-comment",
            "pr.md",
            "--html",
            "p.html",
        ],
        repo("fixtures/traces/contention.jsonl"),
    );
    let (stdout, stderr) = output(&out);
    // Another job outside the tree: DISTURBED, exit 3 (issue 38).
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    for id in ["other_sm_share_pct", "other_processes"] {
        let m = metric(&report, id);
        assert_eq!(m["baseline"], 0.0, "{m}");
        assert_eq!(m["gated"], false, "context here: {m}");
        assert_eq!(m["moved"], true, "{m}");
        let line = stdout
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("terminal leaves out {id}:\n{stdout}"));
        assert!(line.contains("from 0"), "{line}");
        for file in ["r.md", "j.xml", "pr.md", "p.html"] {
            let text = std::fs::read_to_string(d.join(file)).unwrap();
            assert!(text.contains(id), "{file} leaves out {id}");
        }
        let md = std::fs::read_to_string(d.join("r.md")).unwrap();
        let folded = md.find("<details>").unwrap_or(md.len());
        assert!(md[..folded].contains(id), "markdown folds {id} away");
    }
    // What stayed within its noise is still folded, and said to be.
    assert!(
        stdout.contains("within their noise; see --format json"),
        "{stdout}"
    );
}

#[test]
fn the_page_escapes_what_it_shows_and_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    baseline(d);
    // A trace path with markup, and a long 4-GPU run: every line is cut to
    // MAX_POINTS, at most MAX_LINES a chart.
    let hostile = d.join("<b>x&y");
    std::fs::create_dir_all(&hostile).unwrap();
    let long = gpugate::synthetic::Signature::imbalance();
    let long = run(throughput(long, 0.8), 4).with_samples(5000);
    let t = trace_gpus(&hostile, "t.jsonl", &long, 4);
    let out = check_replay(d, "b", &["--html", "p.html", "--allow-env-mismatch"], &t);
    let (stdout, stderr) = output(&out);
    assert!(out.status.code().is_some(), "{stdout}\n{stderr}");
    let page = std::fs::read_to_string(d.join("p.html")).unwrap();
    assert!(!page.contains("<b>x"), "unescaped path");
    assert!(page.contains("&lt;b&gt;x&amp;y"), "the path, escaped");
    assert_self_contained(&page);
    let lines = polylines(&page);
    assert!(!lines.is_empty());
    for n in &lines {
        assert!(*n <= gpugate::report::check::html::MAX_POINTS, "{n} points");
    }
    assert!(page.len() < gpugate::report::check::html::HTML_BUDGET_BYTES);
    assert!(page.contains("GPU 3"), "a line per GPU");
}

#[test]
fn a_suite_draws_every_workload_on_one_page() {
    let dir = checkout(&["train-h200", "cnn-h200", "gpt-h200"]);
    let d = dir.path();
    let fixture = |n: &str| {
        repo(&format!("fixtures/traces/{n}.jsonl"))
            .display()
            .to_string()
    };
    let out = gate(d)
        .args(["check", "--suite", "--html", "suite.html"])
        .arg("--suite-replay")
        .arg(format!("train={}", fixture("healthy-3")))
        .arg("--suite-replay")
        .arg(format!("cnn={}", fixture("cnn-sync")))
        .arg("--suite-replay")
        .arg(format!("gpt={}", fixture("gpt-healthy-3")))
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let page = std::fs::read_to_string(d.join("suite.html")).unwrap();
    assert_self_contained(&page);
    assert!(
        page.contains("SUITE: REGRESSION (exit 1)"),
        "the suite's verdict on top"
    );
    for b in ["train-h200", "cnn-h200", "gpt-h200"] {
        assert!(
            page.contains(&format!("gate check against baseline {b}")),
            "{b}'s section"
        );
    }
    assert!(page.matches("<section").count() == 3);
}

#[test]
fn the_link_to_the_page_reaches_the_markdown_and_the_pr_comment() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    baseline(d);
    let t = trace(d, "h3.jsonl", &healthy(3));
    let url = "https://ci.example/run/7/artifacts";
    let summary = d.join("summary.md");
    let out = gate(d)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args([
            "check",
            "--baseline",
            "b",
            "--html",
            "p.html",
            "--html-url",
            url,
        ])
        .args(["--markdown", "r.md", "--pr-comment", "c/pr.md", "--replay"])
        .arg(&t)
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let link = format!("[the check page]({url})");
    for f in ["r.md", "c/pr.md", "summary.md"] {
        let text = std::fs::read_to_string(d.join(f)).unwrap();
        assert!(text.contains(&link), "{f}:\n{text}");
    }
    // The PR comment's hidden markers stay last.
    let pr = std::fs::read_to_string(d.join("c/pr.md")).unwrap();
    assert!(pr.trim_end().ends_with("-->"), "{pr}");
    // A URL that could break out of the link is refused: a usage error.
    let out = check_replay(d, "b", &["--html-url", "https://x/a)b"], &t);
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--html-url"), "{stderr}");
}

/// docs/limits.md states the page's bounds as the code keeps them.
#[test]
fn the_limits_page_states_the_check_page_bounds() {
    use gpugate::report::check::html;
    let doc = std::fs::read_to_string(repo("docs/limits.md")).unwrap();
    let row = doc
        .lines()
        .find(|l| l.starts_with("| check page (`check --html`) |"))
        .expect("a row for the check page");
    for fact in [
        format!("{} points a line", html::MAX_POINTS),
        format!("{} charts a workload", html::MAX_CHARTS),
        format!("{} lines a chart", html::MAX_LINES),
        format!("{} MiB a page", html::HTML_BUDGET_BYTES >> 20),
        format!("`--html-url` {} bytes", html::MAX_URL_BYTES),
    ] {
        assert!(
            row.contains(&fact),
            "docs/limits.md should say {fact}: {row}"
        );
    }
}
