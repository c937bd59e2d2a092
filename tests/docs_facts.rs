//! Facts README, docs/ and `--help` state about the code, checked against
//! the code (issue 21.1): every `src/...`, `tests/...`, `scripts/...` and
//! `docs/...` path they name exists; every `--flag` is one of gate's flags
//! (from its clap definition) or a flag of the script or workload it
//! belongs to; the dependency table and the package count match
//! `Cargo.toml` and `Cargo.lock` (the rule count: tests/scoreboard.rs); and the
//! help texts state the real defaults (threshold floors from `config`).

use clap::CommandFactory;
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
    for (what, text) in [
        ("gate --help", about.as_str()),
        ("Cargo.toml", cargo.as_str()),
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
