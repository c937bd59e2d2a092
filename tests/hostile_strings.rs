//! Issue 9, item 3: text that came from a file, a flag or the benchmark
//! reaches no output raw. One hostile string goes into every field gate
//! reads (trace header, fingerprint, events, processes, output lines, file
//! names; baseline `created`/`commit`/tags; gate.toml rule texts; flags),
//! and every output is checked: terminal and CI log (stdout, stderr, under
//! `GITHUB_ACTIONS=true`), JSON, JUnit (xmllint against the vendored
//! schema), Markdown, HTML, OpenMetrics, GitHub annotations, `$GITHUB_OUTPUT`
//! and the step summary, the PR comment, `diff`, `capture`, `record`, errors.

use crate::common;

use common::*;
use gpugate::escape::is_hostile;
use std::path::{Path, PathBuf};

/// Everything at once: ANSI colour, an OSC title ended by BEL, CR/LF with
/// GitHub workflow commands (the issue's `::add-mask::`), a bidi override,
/// HTML, XML's `]]>`, Markdown table and code characters, `%`, `:` and `,`.
const H: &str = "X\u{1b}[31mRED\u{7}\u{1b}]0;pwned\u{7}\r\n::add-mask::SECRET\n::error title=x::injected\u{202e}<script>alert(1)</script>\"'&]]>|*`%:,Y";

/// The issue's baseline `created`, with ESC and BEL added.
const CREATED: &str = "2026\\n::add-mask::SECRET\\n::error title=x::injected\\u001b[31m\\u0007";

/// An injected workflow command at the start of a line (the runner would
/// execute it). gate's own annotations start with `::error title=gate`.
fn injected_command(line: &str) -> bool {
    let l = line.trim_start();
    l.starts_with("::") && !l.starts_with("::error title=gate")
}

/// Terminal / CI-log text: no hostile character but the line breaks, no
/// injected workflow command.
fn assert_terminal_clean(what: &str, text: &str) {
    if let Some(c) = text.chars().find(|&c| c != '\n' && is_hostile(c)) {
        panic!("{what}: raw {c:?} in:\n{text}");
    }
    if let Some(l) = text.lines().find(|l| injected_command(l)) {
        panic!("{what}: injected workflow command line {l:?}");
    }
}

/// A document (Markdown, HTML, XML, OpenMetrics): no hostile character but
/// line breaks, and no raw `<script>` from the input. (A file is not a CI
/// log: the runner does not read workflow commands from it; each format's
/// own structure is checked where it is parsed: xmllint, JSON, OpenMetrics.)
fn assert_document_clean(what: &str, text: &str) {
    if let Some(c) = text.chars().find(|&c| c != '\n' && is_hostile(c)) {
        panic!("{what}: raw {c:?} in:\n{text}");
    }
    assert!(
        !text.contains("<script>alert"),
        "{what}: raw <script> from the input"
    );
}

/// Markdown: as any document, except that inside a code span (where
/// `escape::markdown_code` put it, backticks replaced) `<script>` is
/// literal text, not HTML.
fn assert_markdown_clean(what: &str, text: &str) {
    let outside_code: String = text
        .lines()
        .map(|l| {
            l.split('`')
                .enumerate()
                .filter(|(i, _)| i % 2 == 0)
                .map(|(_, part)| part)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_document_clean(what, &outside_code);
    if let Some(c) = text.chars().find(|&c| c != '\n' && is_hostile(c)) {
        panic!("{what}: raw {c:?}");
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A synthetic trace (`sig`) with `H` in every free-text field, written
/// under a file name that is itself hostile (`name` after the hostile part).
fn hostile_trace(dir: &Path, sig: &Signature, name: &str) -> PathBuf {
    let plain = trace(dir, "plain.jsonl", sig);
    let mut out = Vec::new();
    for line in read(&plain).lines() {
        let mut r: serde_json::Value = serde_json::from_str(line).unwrap();
        match r["type"].as_str() {
            Some("header") => {
                r["command"] = serde_json::json!(["python3", H, "--tag", H]);
                r["note"] = H.into();
                r["tags"] = serde_json::json!({ H: H, "model": H });
                let host = &mut r["fingerprint"]["host"];
                for k in ["hostname", "cpu_model", "kernel", "os"] {
                    host[k] = H.into();
                }
                r["fingerprint"]["driver_version"] = H.into();
                let gpu = &mut r["fingerprint"]["gpus"][0];
                gpu["uuid"] = H.into();
                gpu["pci_bus_id"] = H.into();
                gpu["unsupported"] = serde_json::json!([H]);
            }
            Some("event") => r["message"] = H.into(),
            Some("end") => r["metrics_file"] = format!("samples_per_s: 5 {H}").into(),
            _ => {}
        }
        out.push(r.to_string());
        if r["type"] == "header" {
            out.push(serde_json::json!({"type": "output", "t": 1, "line": format!("samples_per_s: 5 {H}")}).to_string());
            out.push(
                serde_json::json!({"type": "processes", "t": 1, "gpu": 0,
                "procs": [{"pid": 5, "name": H, "cmdline": H, "in_target": true}]})
                .to_string(),
            );
        }
    }
    let path = dir.join(format!("run\u{1b}[1m\n::error title=p::{name}.jsonl"));
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
    path
}

/// gate.toml: a user metric, and a rule that always fires with `H` in
/// every text it shows.
fn hostile_config(dir: &Path) {
    let toml_h = gpugate::escape::toml_string(H);
    std::fs::write(
        dir.join("gate.toml"),
        format!(
            r#"
[user_metrics.samples_per_s]
regex = 'samples_per_s: ([0-9.]+)'
direction = "higher_is_better"
unit = "1/s"

[rules.hostile_rule]
when = "samples_per_s.mean < 700"
severity = "high"
title = {toml_h}
explanation = {toml_h}
change = {toml_h}
next_steps = [{toml_h}]
"#
        ),
    )
    .unwrap();
}

fn github_env(cmd: &mut assert_cmd::Command, d: &Path) {
    cmd.env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", d.join("gh-output"))
        .env("GITHUB_STEP_SUMMARY", d.join("gh-summary.md"));
}

#[test]
fn hostile_strings_reach_no_output_raw() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    hostile_config(d);
    let t = hostile_trace(d, &healthy(1), "healthy");
    // Half the throughput: a regression, so annotations (with the hostile
    // rule's diagnosis) are printed too.
    let slow = hostile_trace(d, &throughput(healthy(2), 0.5), "slow");

    // capture: its stdout and stderr, and the baseline it writes.
    let mut cap = gate(d);
    cap.args(["capture", "--baseline", "hb", "--commit", H, "--tag"])
        .arg(format!("k={H}"))
        .arg("--replay")
        .arg(&t);
    let out = cap.output().unwrap();
    let (stdout, stderr) = output(&out);
    assert!(out.status.success(), "{stderr}");
    assert_terminal_clean("capture stdout", &stdout);
    assert_terminal_clean("capture stderr", &stderr);
    // The issue's `created`.
    let bpath = d.join("baselines/hb.toml");
    let text = read(&bpath);
    let created = text.lines().find(|l| l.starts_with("created = ")).unwrap();
    std::fs::write(
        &bpath,
        text.replace(created, &format!("created = \"{CREATED}\"")),
    )
    .unwrap();

    // check, text and JSON, every report file, under GitHub Actions.
    for format in ["text", "json"] {
        let mut c = gate(d);
        c.args(["check", "--baseline", "hb", "--format", format])
            .args(["--junit", "j.xml", "--markdown", "c.md", "--json", "c.json"])
            .args([
                "--openmetrics",
                "c.om",
                "--pr-comment",
                "pr/comment.md",
                "--replay",
            ])
            .arg(&slow);
        github_env(&mut c, d);
        let out = c.output().unwrap();
        let (stdout, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_terminal_clean(&format!("check --format {format} stderr"), &stderr);
        if format == "json" {
            serde_json::from_str::<serde_json::Value>(&stdout).expect("stdout is JSON");
        } else {
            assert_terminal_clean("check stdout", &stdout);
            // Annotations were printed, one line each, gate's own title,
            // with the hostile rule's diagnosis inside.
            assert!(stdout.contains("::error title=gate"), "{stdout}");
            assert!(
                stdout.contains("add-mask::RULE") || stdout.contains("SECRET"),
                "{stdout}"
            );
        }
    }
    serde_json::from_str::<serde_json::Value>(&read(&d.join("c.json"))).expect("--json is JSON");
    assert_valid_junit(&d.join("j.xml"));
    assert_document_clean("JUnit", &read(&d.join("j.xml")));
    for f in ["c.md", "pr/comment.md", "gh-summary.md"] {
        assert_markdown_clean(f, &read(&d.join(f)));
    }
    let om = read(&d.join("c.om"));
    assert_document_clean("OpenMetrics", &om);
    let line_re = regex::Regex::new(
        r#"^(# (HELP|TYPE|UNIT) [a-zA-Z_:][a-zA-Z0-9_:]* .*|# EOF|[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? \S+)$"#,
    )
    .unwrap();
    for l in om.lines() {
        assert!(line_re.is_match(l), "OpenMetrics line {l:?}");
    }
    assert!(om.ends_with("# EOF\n"));
    for l in read(&d.join("gh-output")).lines() {
        assert!(
            l.starts_with("verdict=") || l.starts_with("regressions="),
            "$GITHUB_OUTPUT line {l:?}"
        );
    }

    // report: text, JSON, Markdown, HTML.
    let mut r = gate(d);
    r.arg("report")
        .arg(&slow)
        .args(["--json", "r.json", "--markdown", "r.md", "--html", "r.html"]);
    github_env(&mut r, d);
    let out = r.output().unwrap();
    let (stdout, stderr) = output(&out);
    assert!(out.status.success(), "{stderr}");
    assert_terminal_clean("report stdout", &stdout);
    assert_terminal_clean("report stderr", &stderr);
    assert!(stdout.contains("hostile_rule"), "the rule fired: {stdout}");
    serde_json::from_str::<serde_json::Value>(&read(&d.join("r.json"))).expect("report JSON");
    assert_markdown_clean("report Markdown", &read(&d.join("r.md")));
    assert_document_clean("report HTML", &read(&d.join("r.html")));

    // diff: a baseline against the trace, text and JSON.
    for format in ["text", "json"] {
        let out = gate(d)
            .args(["diff", "baselines/hb.toml", "--format", format])
            .arg(&t)
            .output()
            .unwrap();
        let (stdout, stderr) = output(&out);
        assert!(out.status.success(), "{stderr}");
        assert_terminal_clean(&format!("diff {format} stderr"), &stderr);
        if format == "json" {
            serde_json::from_str::<serde_json::Value>(&stdout).expect("diff JSON");
        } else {
            assert_terminal_clean("diff stdout", &stdout);
        }
    }

    // record: a note and tags from flags; its messages and the trace.
    let out = gate(d)
        .args(["record", "--no-gpu", "--note", H, "--tag"])
        .arg(format!("k={H}"))
        .args(["-o", "rec.jsonl", "--", "true"])
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert!(out.status.success(), "{stderr}");
    assert_terminal_clean("record stderr", &stderr);
    let out = gate(d).args(["report", "rec.jsonl"]).output().unwrap();
    assert_terminal_clean("report of a hostile recording", &output(&out).0);
}

#[test]
fn error_messages_quote_inputs_without_raw_control_characters() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = trace(d, "t.jsonl", &healthy(1));
    let key = gpugate::escape::toml_string(H);
    for config in [
        format!("[metrics.{key}]\nrelative = 0.1\n"),
        format!("[defaults]\n{key} = 1\n"),
        format!("[rules.r]\nwhen = {key}\n"),
        format!(
            "[user_metrics.u]\nregex = '(x)'\ndirection = \"higher_is_better\"\nunit = {key}\n"
        ),
    ] {
        std::fs::write(d.join("gate.toml"), &config).unwrap();
        let mut c = gate(d);
        c.arg("report").arg(&t);
        c.env("GITHUB_ACTIONS", "true");
        let out = c.output().unwrap();
        let (stdout, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(2), "{config}: {stderr}");
        assert_terminal_clean("error", &stderr);
        assert_terminal_clean("stdout on error", &stdout);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}
