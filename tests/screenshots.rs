//! The screenshots in docs/ show what gate renders today (issue 21 item 1).
//!
//! `scripts/screenshots.sh` draws docs/report-screenshot.png,
//! docs/check-screenshot.png and docs/history-screenshot.png in headless Chromium and records in
//! docs/screenshots.sha256 the SHA-256 of each page it drew and of each PNG.
//! Chromium's pixels vary between versions, so this test compares the
//! pages, not the pictures: it renders both pages again with the `gate`
//! binary built for the tests (no Chromium) and fails, naming the script,
//! when either hashes differently from the recorded sum. It also checks the
//! committed PNGs are the ones recorded (a PNG replaced by hand, or a sums
//! file written without its PNGs, fails here too).

use crate::common;

#[allow(dead_code)]
#[path = "../examples/history-demo/demo.rs"]
pub(crate) mod demo;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const SUMS: &str = "docs/screenshots.sha256";
const FIX: &str = "run `bash scripts/screenshots.sh` (needs chromium: apt-get install -y chromium) and commit docs/";

/// docs/screenshots.sha256: file name -> recorded SHA-256.
fn recorded() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(Path::new(ROOT).join(SUMS))
        .unwrap_or_else(|e| panic!("{SUMS}: {e}; {FIX}"));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (sha, name) = l
                .split_once("  ")
                .unwrap_or_else(|| panic!("{SUMS}: not a sha256sum line: {l:?}"));
            assert!(
                sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
                "{SUMS}: not a SHA-256: {l:?}"
            );
            (name.to_string(), sha.to_string())
        })
        .collect()
}

fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(out.status.success(), "sha256sum {}", path.display());
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

/// The page behind `docs/<name>.png`, just rendered at `page`, must hash as
/// recorded.
fn assert_current(name: &str, page: &Path) {
    let want = recorded()
        .remove(&format!("{name}.html"))
        .unwrap_or_else(|| panic!("{SUMS} records no {name}.html; {FIX}"));
    let got = sha256(page);
    assert_eq!(
        got, want,
        "docs/{name}.png was drawn from a page gate no longer renders: the page \
         hashes {got} now, {SUMS} records {want}; {FIX}"
    );
}

#[test]
fn sums_name_both_screenshots_and_match_the_committed_pngs() {
    let sums = recorded();
    let names: Vec<&str> = sums.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "check-screenshot.html",
            "check-screenshot.png",
            "history-screenshot.html",
            "history-screenshot.png",
            "report-screenshot.html",
            "report-screenshot.png",
        ],
        "{SUMS}; {FIX}"
    );
    for name in [
        "report-screenshot.png",
        "check-screenshot.png",
        "history-screenshot.png",
    ] {
        let path = Path::new(ROOT).join("docs").join(name);
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 10_000,
            "docs/{name} is not a screenshot ({} bytes); {FIX}",
            bytes.len()
        );
        assert_eq!(
            sha256(&path),
            sums[name],
            "docs/{name} is not the PNG {SUMS} records; {FIX}"
        );
    }
}

#[test]
fn report_screenshot_is_of_the_page_gate_renders_now() {
    // As the script runs it: from the repository root, the trace path
    // relative (the page's title is the path as given).
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report-screenshot.html");
    common::gate(Path::new(ROOT))
        .args(["report", "fixtures/traces/contention.jsonl", "--html"])
        .arg(&page)
        .assert()
        .success();
    assert_current("report-screenshot", &page);
}

#[test]
fn check_screenshot_is_of_the_page_gate_renders_now() {
    // As the script runs it: the committed baseline, the recorded fixture,
    // from the repository root; another job on the GPU, so the run is
    // DISTURBED (exit 3, issue 38), with its page.
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("check-screenshot.html");
    common::gate(Path::new(ROOT))
        .args(["check", "--baseline", "train-h200", "--replay"])
        .arg("fixtures/traces/contention.jsonl")
        .arg("--html")
        .arg(&page)
        .assert()
        .code(3);
    assert_current("check-screenshot", &page);
}

#[test]
fn history_screenshot_is_of_the_page_gate_renders_now() {
    let dir = tempfile::tempdir().unwrap();
    let page = demo::build(dir.path(), &assert_cmd::cargo::cargo_bin("gate"));
    assert_current("history-screenshot", &page);
}
