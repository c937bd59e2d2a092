//! Facts README, docs/ and `--help` state about the code, checked against
//! the code (issue 21.1): every `src/...`, `tests/...`, `scripts/...` and
//! `docs/...` path they name exists; every `--flag` is one of gate's flags
//! (from its clap definition) or a flag of the script or workload it
//! belongs to; the dependency table and the package count match
//! `Cargo.toml` and `Cargo.lock` (the rule count: tests/scoreboard.rs); and the
//! help texts state the real defaults (threshold floors from `config`); the
//! README's cost figures are ones BENCHMARKS.md reports.

use crate::common;

use clap::CommandFactory;
use common::*;
use std::collections::BTreeSet;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// What users read: the README, the docs, and the other top-level guides.
fn documents() -> Vec<(String, String)> {
    let mut names = vec![
        "README.md".to_string(),
        "BENCHMARKS.md".to_string(),
        "fixtures/README.md".to_string(),
        "ci-templates/README.md".to_string(),
    ];
    for e in std::fs::read_dir(Path::new(ROOT).join("docs")).unwrap() {
        let n = e.unwrap().file_name().to_string_lossy().into_owned();
        if n.ends_with(".md") {
            names.push(format!("docs/{n}"));
        }
    }
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(Path::new(ROOT).join(&n)).unwrap();
            (n, text)
        })
        .collect()
}

/// Tokens of `text` starting with `prefix` at a word start, made of
/// `[A-Za-z0-9_./-]`, trailing punctuation dropped.
fn tokens(text: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices(prefix) {
        let before = text[..at].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || "_./-".contains(c)) {
            continue;
        }
        let tok: String = text[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || "_./-".contains(*c))
            .collect();
        let tok = tok.trim_end_matches(['.', ',', ':', '-']).to_string();
        if tok.len() > prefix.len() {
            out.push(tok);
        }
    }
    out
}

#[test]
fn every_path_the_docs_name_exists() {
    let mut missing = Vec::new();
    for (doc, text) in documents() {
        for prefix in ["src/", "tests/", "scripts/", "docs/"] {
            for path in tokens(&text, prefix) {
                if !Path::new(ROOT).join(&path).exists() {
                    missing.push(format!("{doc}: {path}"));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths that do not exist:\n{}",
        missing.join("\n")
    );
}

/// Every long flag of gate, its subcommands included.
fn gate_flags() -> BTreeSet<String> {
    fn walk(c: &clap::Command, out: &mut BTreeSet<String>) {
        for a in c.get_arguments() {
            if let Some(l) = a.get_long() {
                out.insert(format!("--{l}"));
            }
            for alias in a.get_all_aliases().into_iter().flatten() {
                out.insert(format!("--{alias}"));
            }
        }
        for s in c.get_subcommands() {
            walk(s, out);
        }
    }
    let mut out = BTreeSet::from(["--help".to_string(), "--version".to_string()]);
    walk(&gpugate::cli::Cli::command(), &mut out);
    out
}

/// Flags of the other tools the docs show, by tool.
const OTHER_TOOLS: &[(&str, &[&str])] = &[
    (
        "cargo",
        &[
            "--release",
            "--example",
            "--locked",
            "--path",
            "--timings",
            "--test",
            "--target",
            "--all",
            "--all-targets",
            "--check",
            "--nocapture",
            "--test-threads",
            "--bin",
            "--features",
            "--no-default-features",
            "--doc",
            "--lib",
            "--filter-platform",
            "--format-version",
        ],
    ),
    ("git", &["--no-verify", "--ff-only"]),
    ("pip", &["--require-hashes", "--index-url", "--user"]),
    ("cargo, offline", &["--offline"]),
    ("pytest-benchmark", &["--benchmark-json"]),
    (
        "Google Benchmark",
        &[
            "--benchmark_format",
            "--benchmark_out",
            "--benchmark_out_format",
            "--benchmark_repetitions",
        ],
    ),
    ("nvidia-smi", &["--gpm-metrics", "--query-gpu", "--format"]),
    // The benchmark's floor (BENCHMARKS.md, section 2).
    ("examples/check-floor.rs", &["--threads", "--verify"]),
];

#[test]
fn every_flag_the_docs_name_exists() {
    let gate = gate_flags();
    // Flags of the repository's own scripts and workloads count when that
    // script or workload defines them.
    let mut own = String::new();
    for dir in ["scripts", "fixtures/workloads"] {
        for e in std::fs::read_dir(Path::new(ROOT).join(dir)).unwrap() {
            own.push_str(&std::fs::read_to_string(e.unwrap().path()).unwrap_or_default());
        }
    }
    let other: BTreeSet<&str> = OTHER_TOOLS
        .iter()
        .flat_map(|(_, f)| f.iter().copied())
        .collect();
    let mut unknown = Vec::new();
    for (doc, text) in documents() {
        for flag in tokens(&text, "--") {
            let flag = flag.trim_end_matches(['.', '/']).to_string();
            if flag.len() < 4 || !flag[2..].starts_with(|c: char| c.is_ascii_lowercase()) {
                continue;
            }
            let defined_here = own.contains(&format!("\"{flag}\""))
                || own.contains(&format!("'{flag}'"))
                || own.contains(&format!("{flag})"));
            if !gate.contains(&flag) && !other.contains(flag.as_str()) && !defined_here {
                unknown.push(format!("{doc}: {flag}"));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "flags no gate command, script or named tool has:\n{}",
        unknown.join("\n")
    );
}

#[test]
fn the_dependency_table_lists_every_dependency_and_the_package_count() {
    let cargo: toml::Table =
        toml::from_str(&std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap())
            .unwrap();
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let table = &readme[readme
        .find("## Dependencies")
        .expect("a Dependencies section")..];
    let table = &table[..table[3..].find("\n## ").map_or(table.len(), |i| i + 3)];
    let mut missing = Vec::new();
    for section in ["dependencies", "dev-dependencies"] {
        for name in cargo[section].as_table().unwrap().keys() {
            if name == "gpugate" {
                continue;
            }
            let row = table.lines().filter(|l| l.starts_with("| ")).any(|l| {
                l.split('|')
                    .nth(1)
                    .unwrap_or("")
                    .split([',', ' '])
                    .any(|w| w == name)
            });
            if !row {
                missing.push(name.clone());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "README's dependency table lacks {missing:?}"
    );
    let lock = std::fs::read_to_string(Path::new(ROOT).join("Cargo.lock")).unwrap();
    let packages = lock.lines().filter(|l| l.starts_with("name = ")).count();
    assert!(
        table.contains(&format!("Cargo.lock holds {packages} packages")),
        "README should say 'Cargo.lock holds {packages} packages'"
    );
}

#[test]
fn help_states_the_real_defaults() {
    let help = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_gate"))
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let pct = |f: f64| format!("{} %", gpugate::format::number(f * 100.0));
    let floors = format!(
        "else {} for the benchmark's own metrics and {} for counters",
        pct(gpugate::config::FIRST_CLASS_FLOOR),
        pct(gpugate::config::COUNTER_FLOOR)
    );
    for sub in ["check", "capture"] {
        let h = help(&[sub, "--help"]);
        if h.contains("--threshold") {
            assert!(h.contains(&floors), "gate {sub} --help: {h}");
        }
    }
    // Utilisations are gated on their mean (docs/gating.md), not a p95.
    let about = help(&["--help"]);
    let cargo = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
    // The wheel's summary (PyPI's one line) too (issue 30.4).
    let wheel = std::fs::read_to_string(Path::new(ROOT).join("scripts/wheel.py")).unwrap();
    for (what, text) in [
        ("gate --help", about.as_str()),
        ("Cargo.toml", cargo.as_str()),
        ("scripts/wheel.py", wheel.as_str()),
    ] {
        assert!(
            !text.contains("p95 baselines"),
            "{what} still says p95 baselines"
        );
    }
    assert_eq!(
        gpugate::metrics::find("sm_active_pct").unwrap().statistic,
        gpugate::metrics::Statistic::Mean
    );
}

/// The README's numbers on columns kept in a scratch file are the code's.
#[test]
fn the_readme_states_the_spill_threshold_and_resident_budget() {
    use gpugate::trace::columns;
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let readme = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    for fact in [
        format!("columns pass {} MiB", columns::DEFAULT_SPILL_MB),
        format!(
            "holds about {} MiB at a time",
            columns::RESIDENT_BYTES >> 20
        ),
        format!("a number from 0 to {}", columns::MAX_SPILL_MB),
        "`GATE_SPILL_MB=N`".to_string(),
    ] {
        assert!(readme.contains(&fact), "README should say '{fact}'");
    }
}

/// Issue 32.4-6: the README's memory budget and the report JSON's
/// timeline bound (docs/limits.md) are the code's.
#[test]
fn the_docs_state_the_memory_budget_and_the_json_timeline_bound() {
    let squash = |f: &str| {
        let t = std::fs::read_to_string(Path::new(ROOT).join(f)).unwrap();
        t.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let readme = squash("README.md");
    let budget = format!("one budget of {} MiB", gpugate::budget::BUDGET_BYTES >> 20);
    assert!(readme.contains(&budget), "README should say '{budget}'");
    let points = gpugate::report::run::TIMELINE_POINTS;
    let with_comma = format!("{},{:03}", points / 1000, points % 1000);
    let timeline = format!("timeline to {with_comma} slices per GPU");
    assert!(readme.contains(&timeline), "README should say '{timeline}'");
    let limits = squash("docs/limits.md");
    let row = limits
        .split("| report JSON timeline")
        .nth(1)
        .expect("docs/limits.md has the report JSON timeline row");
    for fact in [
        format!("{with_comma} panorama slices per GPU in the whole document"),
        format!("each of N runs keeps {with_comma} / N"),
        format!("the same {with_comma} points"),
    ] {
        assert!(row.contains(&fact), "docs/limits.md should say '{fact}'");
    }
}

/// Issue 30.3: every place that lists exit codes names all six, from their
/// one source (`exit_code::ALL`): `gate --help`, the man page, `gate check
/// --help` (its summary line too), the README's table, docs/local.md's
/// pre-push hook, and the OpenMetrics `gate_exit_code` HELP of a real check.
#[test]
fn every_exit_code_listing_names_every_code() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_gate"))
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let full = gpugate::exit_code::listing();
    let short = gpugate::exit_code::short_listing();
    let check_help = run(&["check", "--help"]);
    let check_summary = run(&["check", "-h"]);
    let top = run(&["--help"]);
    let man = run(&["man"]).replace("\\-", "-");
    for (what, text, listing) in [
        ("gate --help", &top, &full),
        ("gate man", &man, &full),
        ("gate check --help", &check_help, &full),
        ("gate check -h", &check_summary, &short),
        ("gate --help's command list", &top, &short),
    ] {
        assert!(
            text.contains(listing.as_str()),
            "{what} lacks '{listing}':\n{text}"
        );
    }
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let table = &readme[readme.find("### Exit codes").expect("README's exit codes")..];
    for m in gpugate::exit_code::ALL {
        assert!(
            table.contains(&format!("\n| {} | ", m.code)),
            "README's exit code table lacks {}",
            m.code
        );
    }
    let local = std::fs::read_to_string(Path::new(ROOT).join("docs/local.md")).unwrap();
    let local = local.split_whitespace().collect::<Vec<_>>().join(" ");
    let hook = &local[local.find("pre-push hook").expect("the hook")..];
    for m in gpugate::exit_code::ALL {
        let named = [format!("(exit {})", m.code), format!("({})", m.code)]
            .iter()
            .chain(&[format!("({}:", m.code)])
            .any(|w| hook.contains(w.as_str()));
        assert!(named, "docs/local.md's hook lacks exit {}", m.code);
    }
    // The hook does what the doc says: it blocks 1, 2 and 5, passes 3 and 4.
    let script =
        std::fs::read_to_string(Path::new(ROOT).join("ci-templates/local/pre-push")).unwrap();
    assert!(script.contains("3) echo") && script.contains("4) echo"));
    assert!(script.contains("*) exit \"$code\""));
    // OpenMetrics: a real check's report.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = Path::new(ROOT).join("tests/data");
    let gate = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_gate"))
            .current_dir(d)
            .args(args)
            .output()
            .unwrap()
    };
    let t = |n: u32| {
        data.join(format!("synthetic-healthy-{n}.jsonl"))
            .to_string_lossy()
            .into_owned()
    };
    let cap = gate(&["capture", "--baseline", "b", "--replay", &t(1), &t(2)]);
    assert!(
        cap.status.success(),
        "{}",
        String::from_utf8_lossy(&cap.stderr)
    );
    let chk = gate(&[
        "check",
        "--baseline",
        "b",
        "--openmetrics",
        "m.txt",
        "--replay",
        &t(3),
    ]);
    assert!(chk.status.code().is_some(), "{chk:?}");
    let metrics = std::fs::read_to_string(d.join("m.txt")).unwrap();
    let help = metrics
        .lines()
        .find(|l| l.starts_with("# HELP gate_exit_code "))
        .expect("gate_exit_code HELP");
    assert!(help.contains(&full), "{help}");
}

/// Issue 30.4: the project's documents stand alone: no document, source file
/// or test cites notes outside the repository (DOMAIN.md, ../shared) or a
/// file that is gone (`gate.rs`, now the folder `src/gate/`).
#[test]
fn nothing_cites_notes_outside_the_repository() {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p
                .extension()
                .is_some_and(|x| x == "rs" || x == "md" || x == "toml" || x == "snap")
            {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    for dir in ["src", "docs", "tests", "scripts"] {
        walk(&Path::new(ROOT).join(dir), &mut files);
    }
    for f in ["README.md", "BENCHMARKS.md", "fixtures/README.md"] {
        files.push(Path::new(ROOT).join(f));
    }
    let this = Path::new(ROOT).join("tests/docs_facts.rs");
    let mut cites = Vec::new();
    for f in files.iter().filter(|f| **f != this) {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for bad in ["DOMAIN.md", "../shared", "`gate.rs`"] {
            if text.contains(bad) {
                cites.push(format!("{}: {bad}", f.display()));
            }
        }
    }
    assert!(
        cites.is_empty(),
        "citations of outside notes:\n{}",
        cites.join("\n")
    );
}

/// docs/counters.md's table names every metric gate records, and only those.
#[test]
fn the_counters_page_lists_every_metric() {
    let page = std::fs::read_to_string(Path::new(ROOT).join("docs/counters.md")).unwrap();
    let table = &page[page.find("## The counters").unwrap()..];
    let table = &table[..table[3..].find("\n## ").unwrap()];
    let listed: BTreeSet<String> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect();
    let known: BTreeSet<String> = gpugate::metrics::GPU_METRICS
        .iter()
        .chain(gpugate::metrics::HOST_METRICS)
        .map(|m| m.id.to_string())
        .collect();
    assert_eq!(
        listed, known,
        "docs/counters.md's table against src/metrics.rs"
    );
    // The measured constants it states are the code's.
    assert_eq!(gpugate::sampler::nvml::MIN_GPM_PAIR.as_millis(), 120);
    assert!(page.contains("at least 120 ms apart"));
    assert!(page.contains("default 500 ms period"));
    assert_eq!(gpugate::sampler::nvml::DEFAULT_GPM_PERIOD.as_millis(), 500);
}

/// README: `gate capture`, `check`, `report` and `watch` accept `--replay`;
/// `gate record` measures live only: its help does not offer the flag and
/// it refuses it (issue 30.4).
#[test]
fn record_does_not_offer_replay() {
    let dir = tempfile::tempdir().unwrap();
    let help = gate(dir.path())
        .args(["record", "--help"])
        .output()
        .unwrap();
    let (stdout, _) = output(&help);
    assert!(stdout.contains("--pid"), "{stdout}");
    assert!(
        !stdout.contains("--replay"),
        "gate record --help offers --replay:\n{stdout}"
    );
    for sub in ["capture", "check", "report", "watch"] {
        let (h, _) = output(&gate(dir.path()).args([sub, "--help"]).output().unwrap());
        assert!(h.contains("--replay"), "gate {sub} --help lacks --replay");
    }
    let t = trace(dir.path(), "t.jsonl", &healthy(1));
    let out = gate(dir.path())
        .args(["record", "--replay"])
        .arg(&t)
        .output()
        .unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("measures live"), "{stderr}");
}

/// README: "every command reads either kind" of trace: `gate diff` of a
/// plain and a zstd-compressed trace (issue 30.4).
#[test]
fn diff_reads_a_compressed_trace() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = trace(d, "a.jsonl", &healthy(1));
    let b = trace(d, "b.jsonl", &healthy(2));
    let packed = zstd::encode_all(std::fs::File::open(&b).unwrap(), 3).unwrap();
    std::fs::write(d.join("b.jsonl.zst"), packed).unwrap();
    // The same bytes under a name that does not say so: read by their magic.
    std::fs::copy(d.join("b.jsonl.zst"), d.join("b-packed")).unwrap();
    let plain = gate(d).args(["diff"]).arg(&a).arg(&b).output().unwrap();
    for other in ["b.jsonl.zst", "b-packed"] {
        let out = gate(d).arg("diff").arg(&a).arg(other).output().unwrap();
        let (stdout, stderr) = output(&out);
        assert_eq!(out.status.code(), plain.status.code(), "{other}: {stderr}");
        assert!(stdout.contains("sm_active_pct"), "{other}: {stdout}");
        assert_eq!(
            stdout.replace(other, "b.jsonl"),
            output(&plain)
                .0
                .replace(&b.display().to_string(), "b.jsonl"),
            "{other}: the compressed trace reads as the plain one"
        );
    }
}

/// README: a run that ends early is "unmeasured" (exit 3) with fewer than
/// 20 valid samples, unless a gated metric regressed even in those few
/// (exit 1); a one-run baseline on replay is never a regression: exit 4.
#[test]
fn few_samples_and_one_run_baselines_end_as_the_readme_says() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // No number declared: the counters and wall time are gated.
    let t1 = trace(d, "h1.jsonl", &healthy(1));
    let t2 = trace(d, "h2.jsonl", &healthy(2));
    let cap = gate(d)
        .args(["capture", "--baseline", "b", "--replay"])
        .arg(&t1)
        .arg(&t2)
        .output()
        .unwrap();
    assert!(cap.status.success(), "{}", output(&cap).1);
    let short = |sig: gpugate::synthetic::Signature| sig.with_samples(15);
    let fine = trace(d, "few.jsonl", &short(healthy(3)));
    // The change lost the tensor cores: their share (gated) falls. (Another
    // job on the GPU did this before issue 38; that run is now DISTURBED,
    // exit 3, not a regression: tests/disturbed.rs.)
    let fp32 = run(gpugate::synthetic::Signature::fp32_no_tf32(), 4);
    let slow = trace(d, "few-slow.jsonl", &short(fp32));
    let out = check_replay(d, "b", &[], &fine);
    let (stdout, stderr) = output(&out);
    assert!(stdout.contains("UNMEASURED (exit 3)"), "{stdout}\n{stderr}");
    assert_eq!(out.status.code(), Some(3));
    let out = check_replay(d, "b", &[], &slow);
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("only 15 valid steady samples"), "{stdout}");
    // One baseline run: the wall time (one number per run) has no noise.
    let cap = gate(d)
        .args(["capture", "--baseline", "one", "--replay"])
        .arg(&t1)
        .output()
        .unwrap();
    assert!(cap.status.success(), "{}", output(&cap).1);
    let slower = trace(d, "slow.jsonl", &healthy(5).with_samples(700));
    let out = check_replay(d, "one", &[], &slower);
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(4), "{stdout}\n{stderr}");
    assert!(stdout.contains("wall_time_s"), "{stdout}");
}

/// README: installing from source keeps Cargo.lock's versions (issue 30.6).
#[test]
fn the_readme_installs_with_the_lock_file() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    for (at, _) in readme.match_indices("cargo install --path") {
        let line = readme[at..].lines().next().unwrap_or("");
        assert!(line.contains("--locked"), "README: {line}");
    }
    // The report example writes under .gate/ (ignored), not the repository root.
    assert!(
        !readme.contains("--html report.html"),
        "README leaves report.html in the root"
    );
    let ignore = std::fs::read_to_string(Path::new(ROOT).join(".gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "/.gate/"));
}

/// The README's headline output is what the command it names prints
/// (issue 30.4: it showed a noise band and a memory figure of an older
/// build). Lines are compared with their whitespace normalised (the table's
/// widths and the text's wrapping depend on rows and terminal left out);
/// "..." marks what the README leaves out.
#[test]
fn the_readme_headline_output_is_what_gate_prints() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let block = &readme[readme.find("```console\n$ gate capture").unwrap() + 11..];
    let block = &block[..block.find("```").unwrap()];
    let cmd = "gate check --baseline gpt-h200 --replay fixtures/traces/gpt-memory.jsonl";
    assert!(readme.contains(&format!("(Abridged from `{cmd}`")));
    let out = gate(Path::new(ROOT))
        .args(["check", "--baseline", "gpt-h200", "--replay"])
        .arg("fixtures/traces/gpt-memory.jsonl")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let printed = words(&output(&out).0);
    let mut paragraph = String::new();
    for line in block.lines().filter(|l| !l.starts_with("$ ")) {
        let shown = line.trim_end().trim_end_matches("...");
        paragraph.push_str(shown);
        paragraph.push(' ');
        if line.trim() == "..." || line.ends_with("...") || !line.starts_with("     ") {
            let want = words(&paragraph);
            assert!(
                printed.contains(&want),
                "README shows '{want}', gate prints:\n{printed}"
            );
            paragraph.clear();
        }
    }
}

/// README's progress line is the one gate prints in a log (issue 30.6).
#[test]
fn the_readme_shows_the_progress_line_gate_prints() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let s = std::time::Duration::from_secs;
    let words = gpugate::console::progress_words(s(72), s(180));
    assert!(
        readme.contains(&format!("`gate: recording: {words}`")),
        "README should show `gate: recording: {words}`"
    );
}

/// README's layout names every committed baseline (issue 30.4: it said
/// "the demo baseline" of a folder holding four).
#[test]
fn the_readme_names_every_committed_baseline() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("baselines/ "))
        .expect("README's layout has a baselines/ line");
    for e in std::fs::read_dir(Path::new(ROOT).join("baselines")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".toml") {
            assert!(line.contains(stem), "README's '{line}' leaves out {stem}");
        }
    }
}

/// The integration tests are one binary (`autotests = false`, README):
/// a file in tests/ that tests/tests.rs does not name would never be
/// compiled nor run, so every one must be named there.
#[test]
fn every_test_file_is_a_module_of_the_one_test_binary() {
    let root = Path::new(ROOT);
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("autotests = false")
            && manifest.contains("[[test]]\nname = \"integration\"\npath = \"tests/tests.rs\""),
        "Cargo.toml should declare the one test binary"
    );
    let tests_rs = std::fs::read_to_string(root.join("tests/tests.rs")).unwrap();
    let named: BTreeSet<String> = (tests_rs.lines())
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .map(String::from)
        .collect();
    let files: BTreeSet<String> = std::fs::read_dir(root.join("tests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs") || p.join("mod.rs").exists())
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|n| n != "tests")
        .collect();
    assert!(files.len() > 40, "{files:?}");
    assert_eq!(
        named, files,
        "tests/tests.rs should name every file in tests/"
    );
}

/// Every `cargo test ... --test NAME FILE::` the docs and CI give names
/// the one test binary and a module of it.
#[test]
fn every_test_command_the_docs_give_names_a_real_target() {
    let mut texts = documents();
    for f in [".ci/run", "fuzz/README.md"] {
        texts.push((
            f.to_string(),
            std::fs::read_to_string(Path::new(ROOT).join(f)).unwrap(),
        ));
    }
    let target = regex::Regex::new(r"--test ([a-z_]+)(?: ([a-z_]+)::)?").unwrap();
    let mut seen = 0;
    for (name, text) in &texts {
        for c in target.captures_iter(text) {
            seen += 1;
            assert_eq!(&c[1], "integration", "{name}: {}", &c[0]);
            if let Some(m) = c.get(2) {
                let file = Path::new(ROOT).join(format!("tests/{}.rs", m.as_str()));
                assert!(file.exists(), "{name}: {} names no test file", &c[0]);
            }
        }
    }
    assert!(seen >= 4, "found {seen} test commands");
}

/// The README's rule count is the number of built-in rules in
/// src/diagnose/rules.toml (issue 40.6: it said 19 when there were 20).
#[test]
fn the_readme_counts_the_built_in_rules() {
    let rules: toml::Table = toml::from_str(
        &std::fs::read_to_string(Path::new(ROOT).join("src/diagnose/rules.toml")).unwrap(),
    )
    .unwrap();
    let n = rules["rules"].as_table().unwrap().len();
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let said: Vec<&str> = readme
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[1].trim_end_matches([',', '.']) == "rules" && w[0].parse::<usize>().is_ok())
        .map(|w| w[0])
        .collect();
    assert!(!said.is_empty(), "README names no rule count");
    assert!(
        said.iter().all(|c| *c == n.to_string()),
        "README says {said:?} rules; rules.toml has {n}"
    );
}

/// docs/limits.md: "a reader names at most N of a file's benchmarks (`and
/// N more`)": a benchmark missing from a file of 15 gets exactly that.
#[test]
fn a_missing_benchmark_lists_as_many_names_as_the_limits_say() {
    let limits = std::fs::read_to_string(Path::new(ROOT).join("docs/limits.md")).unwrap();
    let at = limits
        .find("a reader names at most ")
        .expect("docs/limits.md states the cap")
        + "a reader names at most ".len();
    let cap: usize = limits[at..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        limits[at..].starts_with(&format!("{cap} of a file's benchmarks (`and N more`)")),
        "{}",
        &limits[at..at + 60]
    );
    let file: serde_json::Map<String, serde_json::Value> = (0..15)
        .map(|i| {
            (
                format!("bench_{i:02}"),
                serde_json::json!({"t": {"value": i}}),
            )
        })
        .collect();
    let reading = gpugate::metric_sources::Reader::Bmf {
        benchmark: "missing".into(),
        measure: "t".into(),
        stat: "value".into(),
    }
    .read_file(&serde_json::Value::Object(file).to_string());
    let text = reading
        .problem
        .expect("a missing benchmark is a problem")
        .text;
    let named = (0..15)
        .filter(|i| text.contains(&format!("bench_{i:02}")))
        .count();
    assert_eq!(named, cap, "{text}");
    assert!(text.contains(&format!(" and {} more", 15 - cap)), "{text}");
}

/// The Action's `threshold` input states gate's real floors (issue 40.6:
/// it said "default 0.10").
#[test]
fn the_action_states_the_real_default_floors() {
    let action =
        std::fs::read_to_string(Path::new(ROOT).join("ci-templates/github/action.yml")).unwrap();
    let y: serde_yaml::Value = serde_yaml::from_str(&action).unwrap();
    let text = y["inputs"]["threshold"]["description"]
        .as_str()
        .unwrap()
        .replace('\n', " ");
    for (floor, what) in [
        (
            gpugate::config::FIRST_CLASS_FLOOR,
            "the benchmark's own numbers",
        ),
        (gpugate::config::COUNTER_FLOOR, "sampled counters"),
    ] {
        let pct = format!("{} % for {what}", floor * 100.0);
        assert!(text.contains(&pct), "threshold says {text:?}, not {pct:?}");
    }
    assert!(!text.contains("0.10"), "{text}");
}

/// The README's "Cost of measuring" says its numbers come from
/// BENCHMARKS.md: each figure with decimals it gives is tied here to the
/// BENCHMARKS.md subsection that measured it, and that subsection reports
/// it at the README's precision (a figure without a source fails too).
#[test]
fn the_readmes_costs_are_benchmarks_figures() {
    const SOURCES: &[(&str, &str)] = &[
        ("0.60", "### Start-up pages dropped before sampling"),
        ("0.74", "### Attached and launched on one loan"),
        ("1.15", "### Attached and launched on one loan"),
        ("1.35", "### Attached and launched on one loan"),
        ("1.20", "### Attached and launched on one loan"),
        ("1.09", "### Attached and launched on one loan"),
        ("1.10", "### Attached and launched on one loan"),
        ("24.9", "### Attached and launched on one loan"),
        ("22.0", "### Attached and launched on one loan"),
        ("1.16", "### Launched, after the start-up pages are dropped"),
        ("1.08", "### Launched, after the start-up pages are dropped"),
        ("0.9997", "### Results (gate at commit \"Cut sampler CPU\""),
        ("0.23", "### The NVML floor, the levers and `gate watch`"),
        ("6.4", "### Statistics over blocks, the first copy kept"),
        ("1.20", "### Statistics over blocks, the first copy kept"),
    ];
    let read = |f: &str| std::fs::read_to_string(Path::new(ROOT).join(f)).unwrap();
    let readme = read("README.md");
    let benchmarks = read("BENCHMARKS.md");
    let section = &readme[readme.find("## Cost of measuring").unwrap()..];
    let section = &section[..section[3..].find("\n## ").unwrap()];
    // Numbers as written: digits with at most one point inside.
    let numbers = |text: &str| -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = String::new();
        for c in text.chars().chain([' ']) {
            if c.is_ascii_digit() || (c == '.' && !cur.is_empty() && !cur.contains('.')) {
                cur.push(c);
            } else if !cur.is_empty() {
                out.push(cur.trim_end_matches('.').to_string());
                cur.clear();
            }
        }
        out
    };
    let subsection = |heading: &str| {
        let at =
            (benchmarks.find(heading)).unwrap_or_else(|| panic!("no {heading} in BENCHMARKS.md"));
        let rest = &benchmarks[at + heading.len()..];
        let end = rest
            .find("\n### ")
            .or_else(|| rest.find("\n## "))
            .unwrap_or(rest.len());
        &benchmarks[at..at + heading.len() + end]
    };
    let reports = |heading: &str, figure: &str| {
        let scale = 10f64.powi(figure.split('.').nth(1).unwrap().len() as i32);
        let x: f64 = figure.parse().unwrap();
        (numbers(subsection(heading)).iter())
            .filter_map(|n| n.parse::<f64>().ok())
            .any(|t| ((t * scale).round() - x * scale).abs() < 0.5)
    };
    let figures: Vec<String> = (numbers(section).into_iter())
        .filter(|n| n.contains('.'))
        .collect();
    assert!(figures.len() >= 10, "{figures:?}");
    let unsourced: Vec<&String> = (figures.iter())
        .filter(|f| {
            !(SOURCES.iter())
                .filter(|(figure, _)| figure == f)
                .any(|(figure, heading)| reports(heading, figure))
        })
        .collect();
    assert!(
        unsourced.is_empty(),
        "README's cost figures without a BENCHMARKS.md subsection that reports them: {unsourced:?}"
    );
}
