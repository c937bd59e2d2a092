//! Every finding's words agree with its numbers, on every recorded fixture
//! (`fixtures/traces/*`, judged against its family's committed baseline, or
//! its family's first healthy run where none is committed) and as one run
//! (`gate report`): `diagnose::audit` checks that each number the text shows
//! is in the evidence table with the same digits, that "rose"/"fell" agree
//! with the sign, that the table holds known values under human names, and
//! that a check never sends the reader to a section only `gate report` has.

use gpugate::diagnose::{audit, Finding, RuleSet};
use gpugate::stats::MetricSource;
use gpugate::summary::{summarize, RunSummary};
use gpugate::trace::Trace;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// What a trace is judged against: its family's committed baseline, or
/// (no baseline committed, or a GPM-stripped twin) the family's first
/// healthy run in the same folder.
enum Against {
    Baseline(&'static str),
    Trace(String),
}

fn against(name: &str) -> Against {
    let (sub, file) = match name.rsplit_once('/') {
        Some((d, f)) => (format!("{d}/"), f),
        None => (String::new(), name),
    };
    let family = match file.split('-').next().unwrap_or("") {
        "live" => "cnn",
        f @ ("cnn" | "gpt" | "ddp" | "bert" | "decode" | "recsys" | "vit") => f,
        // Round 1: healthy-N and the extreme pathologies of the MLP.
        _ => "",
    };
    if sub.is_empty() {
        match family {
            "cnn" => return Against::Baseline("cnn-h200"),
            "gpt" => return Against::Baseline("gpt-h200"),
            "ddp" => return Against::Baseline("ddp-h200x2"),
            "" => return Against::Baseline("train-h200"),
            _ => {}
        }
    }
    let healthy = match family {
        "" => "healthy-1.jsonl".to_string(),
        f => format!("{f}-healthy-1.jsonl"),
    };
    Against::Trace(format!("{sub}{healthy}"))
}

fn load(name: &str) -> RunSummary {
    let path = Path::new(ROOT).join("fixtures/traces").join(name);
    summarize(&Trace::load(&path).unwrap_or_else(|e| panic!("{name}: {e}")))
}

fn check(f: &Finding, rules: &RuleSet, context: &str, problems: &mut Vec<String>) {
    for p in audit::problems(f, rules.get(&f.rule)) {
        problems.push(format!("{context}: {p}"));
    }
    if f.rows.is_empty() {
        problems.push(format!("{context}: {} has an empty evidence table", f.rule));
    }
}

#[test]
fn every_finding_on_every_fixture_agrees_with_its_numbers() {
    let rules = RuleSet::builtin();
    // The recordings, and their GPM-stripped twins (fixtures/traces/nogpm).
    let dir = Path::new(ROOT).join("fixtures/traces");
    let mut names: Vec<String> = Vec::new();
    for sub in ["", "nogpm/"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            if n.ends_with(".jsonl") {
                names.push(format!("{sub}{n}"));
            }
        }
    }
    names.sort();
    assert!(names.len() >= 60, "fixtures missing in {}", dir.display());
    let mut problems = Vec::new();
    let (mut findings, mut fired) = (0, std::collections::BTreeSet::new());
    for name in &names {
        let run = load(name);
        for f in rules.diagnose(&run) {
            check(&f, &rules, &format!("report {name}"), &mut problems);
            findings += 1;
            fired.insert(f.rule.clone());
        }
        let committed;
        let healthy;
        let baseline: &dyn MetricSource = match against(name) {
            Against::Baseline(b) => {
                let path = Path::new(ROOT).join("baselines").join(format!("{b}.toml"));
                committed = gpugate::baseline::load(&path, b).unwrap();
                &committed
            }
            Against::Trace(t) => {
                healthy = load(&t);
                &healthy
            }
        };
        for f in rules.explain_change(baseline, &run) {
            let context = format!("check {name}");
            check(&f, &rules, &context, &mut problems);
            for step in &f.next_steps {
                if step.starts_with("See the Processes section") {
                    problems.push(format!(
                        "{context}: {}: '{step}' (only gate report has it)",
                        f.rule
                    ));
                }
            }
            findings += 1;
            fired.insert(f.rule.clone());
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The fixtures exercise most rules; the synthetic signatures the rest
    // (diagnose::tests).
    assert!(
        findings > 80 && fired.len() >= 12,
        "{findings} findings of {fired:?}"
    );
}
