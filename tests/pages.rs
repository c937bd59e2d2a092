//! Issue 40.5: what the pages show a person. On the check page and the
//! suite page the verdict, the regressed numbers and the first cause come
//! first (a structural test of the page order, and their bottom edge
//! measured in headless Chromium at 1280x800); nothing is wider than the
//! window at 1280 and 390 px (charts included); every text colour of every
//! page meets WCAG 2.x AA contrast (4.5:1, computed from the page's own
//! CSS); screenshots at both widths are drawn. Pages come from the real
//! binary on the recorded fixtures; without Chromium the browser test says
//! "SKIPPED ..." (.ci/run installs it).

use crate::common;
use common::*;
use std::io::Write;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

use crate::screenshots::demo;

/// The pages, rendered into `d`: (name, path).
fn pages(d: &Path) -> Vec<(&'static str, PathBuf)> {
    let root = Path::new(ROOT);
    let check = d.join("check.html");
    gate(root)
        .args(["check", "--baseline", "train-h200", "--replay"])
        .arg("fixtures/traces/launch-storm.jsonl")
        .arg("--html")
        .arg(&check)
        .assert()
        .code(1);
    let suite = d.join("suite.html");
    gate(root)
        .args(["check", "--suite"])
        .args(["--suite-replay", "train=fixtures/traces/healthy-3.jsonl"])
        .args(["--suite-replay", "cnn=fixtures/traces/cnn-sync.jsonl"])
        .args(["--suite-replay", "gpt=fixtures/traces/gpt-healthy-3.jsonl"])
        .arg("--html")
        .arg(&suite)
        .assert()
        .code(1);
    let report = d.join("report.html");
    gate(root)
        .args(["report", "fixtures/traces/contention.jsonl", "--html"])
        .arg(&report)
        .assert()
        .success();
    let history = demo::build(&d.join("history"), &assert_cmd::cargo::cargo_bin("gate"));
    vec![
        ("check", check),
        ("suite", suite),
        ("report", report),
        ("history", history),
    ]
}

/// WCAG 2.x relative luminance of `#rgb` / `#rrggbb`.
fn luminance(hex: &str) -> f64 {
    let h = hex.trim_start_matches('#');
    let h: String = if h.len() == 3 {
        h.chars().flat_map(|c| [c, c]).collect()
    } else {
        h.to_string()
    };
    let channel = |i: usize| {
        let c = u8::from_str_radix(&h[i..i + 2], 16).unwrap() as f64 / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4)
}

/// WCAG contrast ratio of two colours (1 to 21).
fn contrast(a: &str, b: &str) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

#[test]
fn contrast_ratios_are_the_wcag_ones() {
    assert!((contrast("#000", "#fff") - 21.0).abs() < 1e-9);
    assert!((contrast("#777", "#fff") - 4.48).abs() < 0.01);
    // The INCONCLUSIVE colour the issue measured.
    assert!((contrast("#b7950b", "#fff") - 2.87).abs() < 0.01);
}

/// The declarations `color:` and `background:` of each CSS rule of a page.
fn colour_rules(css: &str) -> Vec<(String, Option<String>, Option<String>)> {
    let value = |decls: &str, key: &str| {
        decls.split(';').find_map(|d| {
            let (k, v) = d.split_once(':')?;
            (k.trim() == key && v.trim().starts_with('#')).then(|| v.trim().to_string())
        })
    };
    css.split('}')
        .filter_map(|rule| {
            let (selectors, decls) = rule.rsplit_once('{')?;
            let selectors = selectors.rsplit('{').next().unwrap().trim().to_string();
            let fg = value(decls, "color");
            let bg = value(decls, "background").or_else(|| value(decls, "background-color"));
            (fg.is_some() || bg.is_some()).then_some((selectors, fg, bg))
        })
        .collect()
}

/// Every text colour of every page against what it is drawn on: a rule's
/// colour on the page's white (or its own background); a state's background
/// (`.v-*` verdict banners, `.sev-*` badges) under the white text its
/// parent class sets, any other background under the body's text.
#[test]
fn every_state_and_text_colour_meets_wcag_aa() {
    const AA: f64 = 4.5;
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, page) in pages(dir.path()) {
        let html = std::fs::read_to_string(&page).unwrap();
        let css = &html[html.find("<style>").unwrap() + 7..html.find("</style>").unwrap()];
        let rules = colour_rules(css);
        let body_text = rules
            .iter()
            .find(|(s, _, _)| s == "body")
            .and_then(|(_, fg, _)| fg.clone())
            .unwrap_or_else(|| "#000".into());
        for (selectors, fg, bg) in &rules {
            // White text without a background of its own (`.verdict`,
            // `.sev`): its backgrounds are the state classes, checked below.
            if fg.as_deref().is_some_and(|c| luminance(c) == 1.0) && bg.is_none() {
                continue;
            }
            let white_text = selectors
                .split(',')
                .all(|s| s.trim().starts_with(".v-") || s.trim().starts_with(".sev-"));
            let (fg, bg) = match (fg, bg) {
                (Some(fg), Some(bg)) => (fg.clone(), bg.clone()),
                (Some(fg), None) => (fg.clone(), "#fff".into()),
                (None, Some(bg)) if white_text => ("#fff".into(), bg.clone()),
                (None, Some(bg)) => (body_text.clone(), bg.clone()),
                (None, None) => continue,
            };
            checked += 1;
            let ratio = contrast(&fg, &bg);
            if ratio < AA {
                failures.push(format!("{name}: {selectors}: {fg} on {bg} is {ratio:.2}:1"));
            }
        }
        // Every verdict state of the check page has a colour that was checked.
        if name == "check" {
            for state in [
                "v-pass",
                "v-regression",
                "v-inconclusive",
                "v-accepted",
                "td.inconclusive",
            ] {
                assert!(
                    rules.iter().any(|(s, _, _)| s.contains(state)),
                    "{state} has no colour rule"
                );
            }
        }
    }
    assert!(checked > 20, "only {checked} colours found");
    assert!(
        failures.is_empty(),
        "below WCAG AA {AA}:1:\n{}",
        failures.join("\n")
    );
}

/// Where `needle` first occurs in `hay` (panics naming it when absent).
fn at(hay: &str, needle: &str) -> usize {
    hay.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not on the page"))
}

/// The page order a reviewer reads: verdict, regressed numbers, first
/// cause, then the reasons, the (folded) warnings and the tables.
#[test]
fn verdict_numbers_and_first_cause_come_before_tables_and_warnings() {
    let dir = tempfile::tempdir().unwrap();
    for (name, page) in pages(dir.path()).into_iter().take(2) {
        let html = std::fs::read_to_string(&page).unwrap();
        let body = &html[at(&html, "<body>")..];
        let verdict = at(body, "class=\"verdict");
        let numbers = at(body, "<b>Regressed:</b>");
        let cause = at(body, "<b>First cause:</b>");
        let table = at(body, "<table");
        let warning = at(body, "warning: ");
        assert!(
            verdict < numbers && numbers < cause && cause < table && cause < warning,
            "{name}: verdict {verdict}, numbers {numbers}, cause {cause}, table {table}, warning {warning}"
        );
        // The warnings are folded, the cause links to its finding.
        assert!(
            body[..warning].contains("<details class=\"warns\">"),
            "{name}"
        );
        let link = &body[cause..];
        let target = link[link.find("href=\"#").unwrap() + 7..]
            .split('"')
            .next()
            .unwrap();
        assert!(
            body.contains(&format!("id=\"{target}\"")),
            "{name}: #{target}"
        );
    }
}

/// Chromium: the page in an iframe of `width` x `height` (headless
/// Chromium keeps its window at least 500 px wide; a frame is the viewport
/// a phone gives), measured by a script of the wrapper, which writes what
/// it found into the DOM that `--dump-dom` prints. The page itself carries
/// no script.
fn measure(browser: &Path, page: &Path, width: u32, height: u32) -> serde_json::Value {
    let wrapper = page.with_extension(format!("frame-{width}.html"));
    let name = page.file_name().unwrap().to_string_lossy();
    let script = r#"<script>
const f = document.getElementById('f');
f.addEventListener('load', () => {
  const d = f.contentDocument, w = f.contentWindow;
  const bottom = s => { const e = d.querySelector(s); return e ? Math.round(e.getBoundingClientRect().bottom) : -1; };
  const out = { verdict: bottom('.verdict'), numbers: bottom('.lead .numbers'), cause: bottom('.lead .cause'),
    scroll_width: d.documentElement.scrollWidth, width: w.innerWidth, height: w.innerHeight };
  const p = document.createElement('pre'); p.id = 'gate-measure'; p.textContent = JSON.stringify(out); document.body.appendChild(p);
});
</script>"#;
    std::fs::write(
        &wrapper,
        format!("<!DOCTYPE html><html><body style=\"margin:0\"><iframe id=\"f\" src=\"{name}\" style=\"width:{width}px;height:{height}px;border:0\"></iframe>{script}</body></html>"),
    )
    .unwrap();
    let out = chromium(browser, page.parent().unwrap())
        .args([
            "--allow-file-access-from-files",
            "--dump-dom",
            "--window-size=1400,1000",
        ])
        .arg(format!("file://{}", wrapper.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let json = dom
        .split("<pre id=\"gate-measure\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!(
                "no measurement from chromium: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    serde_json::from_str(json).unwrap()
}

/// Headless Chromium, networking off, its profile in `dir`.
fn chromium(browser: &Path, dir: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(browser);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!(
        "--user-data-dir={}",
        tempfile::tempdir_in(dir).unwrap().keep().display()
    ));
    c
}

#[test]
fn in_chromium_the_first_cause_is_above_the_fold_and_nothing_overflows() {
    let test = "pages::in_chromium_the_first_cause_is_above_the_fold_and_nothing_overflows";
    let Some(browser) = ["chromium", "chromium-browser"].into_iter().find(|b| {
        std::process::Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test} (chromium): not installed (apt-get install -y chromium; .ci/run does)"
        );
        return;
    };
    let browser = PathBuf::from(browser);
    let dir = tempfile::tempdir().unwrap();
    // GATE_PAGE_SHOTS=DIR keeps the screenshots for a person to look at.
    let shots = std::env::var_os("GATE_PAGE_SHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().join("shots"));
    std::fs::create_dir_all(&shots).unwrap();
    for (name, page) in pages(dir.path()) {
        // The run report and the history page at 1280 px (their charts
        // once overflowed it); the check and suite pages on a phone too.
        let sizes: &[(u32, u32)] = if matches!(name, "check" | "suite") {
            &[(1280, 800), (390, 844)]
        } else {
            &[(1280, 800)]
        };
        for &(width, height) in sizes {
            let m = measure(&browser, &page, width, height);
            assert_eq!(m["width"], width, "{name}: {m}");
            assert!(
                m["scroll_width"].as_i64().unwrap() <= width as i64,
                "{name} at {width} px is wider than the window: {m}"
            );
            if matches!(name, "check" | "suite") {
                if width == 1280 {
                    for part in ["verdict", "numbers", "cause"] {
                        let bottom = m[part].as_i64().unwrap();
                        assert!(
                            (1..=height as i64).contains(&bottom),
                            "{name} at {width}x{height}: the {part} ends at {bottom} px: {m}"
                        );
                    }
                }
                let png = shots.join(format!("{name}-{width}.png"));
                let out = chromium(&browser, dir.path())
                    .arg(format!("--screenshot={}", png.display()))
                    .arg(format!("--window-size={width},{height}"))
                    .arg(format!("file://{}", page.display()))
                    .output()
                    .unwrap();
                let bytes = std::fs::read(&png).unwrap_or_default();
                assert!(
                    bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 10_000,
                    "{name} at {width}: no screenshot: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
}

/// The y-axis labels of each chart of a page: (the chart's heading, labels).
fn axes(html: &str, heading: &str) -> Vec<(String, Vec<f64>)> {
    html.split(heading)
        .skip(1)
        .map(|part| {
            let title = part.split('<').next().unwrap_or("").to_string();
            let head_end = part.find("</svg>").unwrap_or(part.len());
            let labels = part[..head_end]
                .split("text-anchor=\"end\"")
                .skip(1)
                .filter_map(|t| t.split_once('>')?.1.split('<').next()?.parse().ok())
                .collect();
            (
                format!("{title}{}", &part[..part.find('\n').unwrap_or(0).min(120)]),
                labels,
            )
        })
        .collect()
}

/// Axes that fit the data: a bounded percentage runs 0-100 % (not to
/// 150 %; a process tree's CPU %, which counts cores, runs to its data), and
/// series that are never negative (every one of these pages') get no
/// negative tick, though a floor around their baseline reaches below 0.
#[test]
fn chart_axes_fit_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let pages = pages(dir.path());
    let mut percent_charts = 0;
    for (name, heading) in [("check", "<h3 id="), ("history", "<h2>")] {
        let page = &pages.iter().find(|(n, _)| *n == name).unwrap().1;
        let html = std::fs::read_to_string(page).unwrap();
        let charts = axes(&html, heading);
        assert!(
            charts.iter().any(|(_, l)| !l.is_empty()),
            "{name}: no axis found"
        );
        for (title, labels) in charts.iter().filter(|(_, l)| !l.is_empty()) {
            assert!(
                labels.iter().all(|v| *v >= 0.0),
                "{name}: {title}: {labels:?}"
            );
            // A share bounded at 100 % (a GPU's busy, SM activity, a
            // host's CPU): a process tree's CPU % counts cores and may not be.
            let id = title.rsplit('>').next().unwrap_or(title);
            let id = id.split(" (").next().unwrap_or(id).trim();
            let bounded = gpugate::metrics::range(id) == Some(100.0);
            let percent = title.contains(", %)") || title.contains("(mean %,");
            if percent && bounded {
                percent_charts += 1;
                let (lo, hi) = labels
                    .iter()
                    .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
                assert_eq!((lo, hi), (0.0, 100.0), "{name}: {title}: {labels:?}");
            }
        }
    }
    assert!(
        percent_charts >= 3,
        "only {percent_charts} percentage charts seen"
    );
}
