//! Snapshot tests (insta) of what users read: every reporter and the
//! baseline TOML, reviewed as text in `src/snapshots/`. Inputs are fixed:
//! the hand-built check report of `report::check::tests_support` (names hold
//! the characters that break naive writers), a sample baseline and SYNTHETIC
//! traces, so a change in any output shows up as a diff to review, never as
//! a silently accepted string.
//!
//! Refresh after an intended change (README, "Tests"):
//! `INSTA_UPDATE=always cargo test --locked`, then review `git diff`.
//! Redacted: gate's version, RFC 3339 times and temporary paths.

use crate::report::check::{
    github, json::Json, junit::Junit, markdown::Markdown, openmetrics::OpenMetrics, pr_comment,
    terminal::Terminal, tests_support::sample_report, Reporter,
};
use crate::report::run::{self, RunReport, RunReporter};
use crate::synthetic::{self, Signature};

/// Settings every snapshot here uses: the redactions.
fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter(&regex::escape(crate::GATE_VERSION), "[gate-version]");
    s.add_filter(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", "[time]");
    s.add_filter(
        &regex::escape(&std::env::temp_dir().display().to_string()),
        "[tmp]",
    );
    s.set_prepend_module_to_snapshot(false);
    s
}

fn snap(name: &str, text: &str) {
    settings().bind(|| insta::assert_snapshot!(name, text));
}

#[test]
fn check_reporters() {
    let r = sample_report();
    let plain = Terminal {
        color: false,
        width: None,
    };
    snap("check_terminal", &plain.render(&r));
    let coloured = Terminal {
        color: true,
        width: None,
    };
    snap("check_terminal_color", &coloured.render(&r));
    // On an 80-column terminal: the words wrap (header, why, reasons,
    // warnings); the table keeps one row a metric.
    let narrow = Terminal {
        color: false,
        width: Some(80),
    };
    snap("check_terminal_80_columns", &narrow.render(&r));
    snap("check_markdown", &Markdown.render(&r));
    snap("check_json", &Json.render(&r));
    snap("check_junit", &Junit.render(&r));
    snap("check_openmetrics", &OpenMetrics.render(&r));
    snap(
        "check_github_annotations",
        &github::annotations(&r).join("\n"),
    );
    snap("check_pr_comment", &pr_comment::PrComment.render(&r));
    snap(
        "check_pr_comment_error",
        &pr_comment::render_error("demo", 2, "baseline 'demo' not found; run <capture>"),
    );
    snap(
        "check_junit_error",
        &crate::report::check::junit::render_error("demo", "usage", "bad <file>\nline 2"),
    );
}

/// The check page (issue 30.1) of the sample report, with made-up series
/// for the metrics it charts (two GPUs, a warm-up, a gap): what a reviewer
/// reads.
#[test]
fn check_html_page() {
    use crate::report::check::html;
    let r = sample_report();
    let mut run = html::RunSeries {
        warmup_s: 2.0,
        end_s: 20.0,
        ..Default::default()
    };
    for m in html::charted(&r) {
        let Some(new) = m.new else { continue };
        for gpu in [0, 1] {
            let pts = (0..20)
                .map(|i| {
                    let v = if i == 12 {
                        f64::NAN
                    } else {
                        new * (1.0 + 0.01 * (i % 3) as f64)
                    };
                    (i as f64, v + gpu as f64)
                })
                .collect();
            run.lines.insert((m.id.clone(), Some(gpu)), pts);
        }
    }
    snap("check_html", &html::render(&r, vec![&run]));
}

fn run_report(sig: &Signature, ngpu: usize) -> RunReport {
    let trace = synthetic::trace(sig, ngpu);
    RunReport::build(&trace, &crate::diagnose::RuleSet::builtin(), 1000.0)
}

#[test]
fn run_reporters() {
    // Contention: another process on the GPU with a hostile command line;
    // short (6 s), so the snapshots stay small enough to review.
    let sig = Signature::contention()
        .with_warmup_samples(10)
        .with_samples(50);
    let runs = [run_report(&sig, 1)];
    snap("run_text", &run::text::Text { color: false }.render(&runs));
    snap("run_markdown", &run::markdown::Markdown.render(&runs));
    snap("run_json", &run::json::Json.render(&runs));
    snap("run_html", &run::html::Html.render(&runs));
}

#[test]
fn baseline_toml() {
    let b = crate::baseline::store::tests::sample_baseline();
    let hint = crate::baseline::refresh_hint(&b.name, &b.capture.command);
    snap("baseline_toml", &crate::baseline::to_toml(&b, &hint));
}

/// Issue 40.2: a harness benchmark read by a glob table reads by its own
/// name (`py.test_sum[0]`, not its id) and its microseconds as µs, in the
/// terminal and in Markdown; the baseline keeps the name beside the id.
#[test]
fn harness_names_and_scaled_units() {
    let mut r = sample_report();
    let mut m = r.metrics[0].clone();
    m.id = "py.test_sum_0_888b45".into();
    m.benchmark = Some("test_sum[0]".into());
    m.node = None;
    m.gpu = None;
    m.unit = "s".into();
    m.baseline = Some(7.336e-6);
    m.new = Some(9.102e-6);
    m.change = Some(9.102e-6 - 7.336e-6);
    m.change_pct = Some((9.102e-6 - 7.336e-6) / 7.336e-6 * 100.0);
    m.tolerance = Some(7.336e-8);
    m.noise = Some(1.89e-7);
    r.metrics = vec![m];
    let plain = Terminal {
        color: false,
        width: None,
    };
    snap("harness_names_terminal", &plain.render(&r));
    snap("harness_names_markdown", &Markdown.render(&r));
    let mut b = crate::baseline::store::tests::sample_baseline();
    let mut entry = b.metrics.values().next().unwrap().clone();
    entry.benchmark = Some("test_sum[0]".into());
    b.metrics.insert("py.test_sum_0_888b45".into(), entry);
    let toml = crate::baseline::to_toml(&b, "");
    let at = toml.find("[metrics.\"py.test_sum_0_888b45\"]").unwrap();
    snap(
        "harness_names_baseline_entry",
        &toml[at..at + 200.min(toml.len() - at)],
    );
}
