//! Rule tests on SYNTHETIC signatures (the H200 means of docs/counters.md): every
//! built-in rule fires on its own signature and stays silent on a healthy run.

use super::*;
use crate::analysis::features;
use crate::summary::{summarize, RunSummary};
use crate::synthetic::{self, Signature};

/// Statistics and features of a synthetic run (no user metrics).
fn run_of(sig: &Signature, ngpu: usize) -> RunSummary {
    summarize(&synthetic::trace(sig, ngpu))
}

fn names(f: &[Finding]) -> Vec<&str> {
    f.iter().map(|x| x.rule.as_str()).collect()
}

fn user(toml_text: &str) -> BTreeMap<String, toml::Value> {
    let t: toml::Table = toml::from_str(toml_text).unwrap();
    t["rules"]
        .as_table()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[test]
fn builtin_rules_parse_and_cover_the_domain() {
    let rs = RuleSet::builtin();
    let want = [
        "gpu_contention",
        "xid_errors",
        "host_contention",
        "host_bound",
        "sync_stalls",
        "blocking_h2d_copy",
        "blocking_d2h_copy",
        "kernel_fragmentation",
        "memory_bound",
        "latency_bound",
        "tensor_cores_unused",
        "pcie_h2d_bound",
        "nvlink_bound",
        "clock_throttle_thermal",
        "clock_power_capped",
        "gpu_imbalance",
        "memory_nearly_full",
        "tree_contention",
        "input_bound",
        "comm_fallback",
        "more_work_per_unit",
    ];
    for w in want {
        let r = rs.get(w).unwrap_or_else(|| panic!("missing rule {w}"));
        assert!(!r.next_steps.is_empty(), "{w} has no next steps");
        assert!(!r.explanation.pieces.is_empty(), "{w} has no explanation");
        assert!(r.change.is_some(), "{w} has no change text");
        assert!(!r.evidence.is_empty(), "{w} has no evidence");
    }
    assert_eq!(rs.rules().len(), want.len());
}

/// (signature, GPUs, rule that must be the top suspect)
fn expectations() -> Vec<(Signature, usize, &'static str)> {
    vec![
        (Signature::contention(), 1, "gpu_contention"),
        (Signature::xid(), 1, "xid_errors"),
        (Signature::host_contention(), 1, "host_contention"),
        (Signature::host_bound(), 1, "host_bound"),
        (Signature::sync_stall(), 1, "sync_stalls"),
        (Signature::periodic_stall(), 1, "sync_stalls"),
        (Signature::stall_demo(), 2, "sync_stalls"),
        (Signature::launch_storm(), 1, "kernel_fragmentation"),
        (Signature::memory_bound(), 1, "memory_bound"),
        (Signature::latency_bound(), 1, "latency_bound"),
        (Signature::fp32_no_tf32(), 1, "tensor_cores_unused"),
        (Signature::pageable_h2d(), 1, "pcie_h2d_bound"),
        (Signature::nvlink_bound(), 2, "nvlink_bound"),
        (Signature::thermal(), 1, "clock_throttle_thermal"),
        (Signature::imbalance(), 4, "gpu_imbalance"),
        (Signature::memory_full(), 1, "memory_nearly_full"),
    ]
}

#[test]
fn each_rule_is_the_top_suspect_of_its_signature() {
    let rs = RuleSet::builtin();
    for (sig, ngpu, rule) in expectations() {
        let f = rs.diagnose(&run_of(&sig, ngpu));
        assert_eq!(
            f.first().map(|x| x.rule.as_str()),
            Some(rule),
            "{}: suspects {:?}",
            sig.name,
            names(&f)
        );
    }
}

#[test]
fn healthy_run_has_no_suspect_above_info() {
    let rs = RuleSet::builtin();
    for ngpu in [1, 2, 8] {
        let f = rs.diagnose(&run_of(&Signature::healthy(), ngpu));
        // The H200 is power-capped on a healthy bf16 matmul: that is the only
        // finding, and only as information.
        assert_eq!(names(&f), vec!["clock_power_capped"], "{ngpu} GPUs");
        assert_eq!(f[0].severity, Severity::Info);
    }
}

#[test]
fn no_rule_fires_on_healthy_except_power_cap() {
    // Stronger than the ranking test: evaluate every condition directly.
    let run = run_of(&Signature::healthy(), 2);
    for r in RuleSet::builtin().rules() {
        let fired = dsl::eval_bool(&r.cond, &run) == Some(true);
        assert_eq!(fired, r.name == "clock_power_capped", "{}", r.name);
    }
}

#[test]
fn rules_never_fire_without_gpm_on_gpm_conditions() {
    // A GPU without GPM: SM/tensor/DRAM are missing. Rules that need them
    // must not fire (missing is not 0); a 0 would have made a healthy
    // run look like fragmentation and unused tensor cores.
    let mut sig = Signature::healthy();
    sig.no_gpm = true;
    let f = RuleSet::builtin().diagnose(&run_of(&sig, 1));
    assert_eq!(names(&f), vec!["clock_power_capped"]);
}

#[test]
fn evidence_shows_values_with_units_and_na() {
    let rs = RuleSet::builtin();
    let f = rs.diagnose(&run_of(&Signature::fp32_no_tf32(), 1));
    let top = &f[0];
    assert!(
        top.evidence
            .iter()
            .any(|e| e.starts_with("tensor_pct.mean = 0 %")),
        "{:?}",
        top.evidence
    );
    assert!(
        top.explanation.contains("FP32 pipe ran at 7"),
        "{}",
        top.explanation
    );
    assert!(top.score > 300.0);
    // A missing value is never cited, neither as 0 nor as n/a (issue
    // 39.3): sync stall without GPM, too few gaps for their regularity.
    let mut sig = Signature::sync_stall();
    sig.no_gpm = true;
    let f = rs.diagnose(&run_of(&sig, 1));
    assert_eq!(f[0].rule, "sync_stalls");
    assert!(
        !f[0]
            .evidence
            .iter()
            .any(|e| e.contains("n/a") || e.starts_with("gpu_busy_pct.gap_regularity")),
        "{:?}",
        f[0].evidence
    );
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.starts_with("gpu_busy_pct.mean = ")),
        "{:?}",
        f[0].evidence
    );
}

#[test]
fn every_signature_s_findings_agree_with_their_numbers() {
    // Each rule on its synthetic signature, as one run and as a change
    // from a healthy run: the words never contradict the table, and "of
    // the same size" is said only when SM active per busy second kept it
    // (the escape clause for a nearly idle GPU chooses other words).
    let rs = RuleSet::builtin();
    let mut problems = Vec::new();
    let mut fired = std::collections::BTreeSet::new();
    for (sig, ngpu, _) in expectations() {
        let base = run_of(&Signature::healthy(), ngpu);
        let new = run_of(&sig, ngpu);
        let mut all = rs.diagnose(&new);
        all.extend(rs.explain_change(&base, &new));
        for f in &all {
            fired.insert(f.rule.clone());
            for p in super::audit::problems(f, rs.get(&f.rule)) {
                problems.push(format!("{}: {p}", sig.name));
            }
            if f.explanation.contains("of the same size") {
                let kept = f.rows.iter().any(|r| {
                    r.label == "SM active per busy second"
                        && r.baseline.is_some_and(|b| r.value / b > 0.93)
                });
                if !kept {
                    problems.push(format!(
                        "{}: {}: 'same size' with {:?}",
                        sig.name, f.rule, f.rows
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(fired.len() >= 14, "{fired:?}");
}

#[test]
fn reading_order_puts_fragmentation_before_bandwidth() {
    // Both fire (user rule makes PCIe fire too): same severity, fragmentation first.
    let rs = RuleSet::builtin()
        .with_user_rules(&user(
            r#"
[rules.pcie_h2d_bound]
when = "pcie_rx_mib_s.mean > 100"
"#,
        ))
        .unwrap();
    let f = rs.diagnose(&run_of(&Signature::launch_storm(), 1));
    assert_eq!(
        &names(&f)[..2],
        &["kernel_fragmentation", "pcie_h2d_bound"],
        "{:?}",
        names(&f)
    );
}

#[test]
fn explain_change_words_the_tensor_core_regression() {
    let rs = RuleSet::builtin();
    let base = run_of(&Signature::healthy(), 1);
    let new = run_of(&Signature::fp32_no_tf32(), 1);
    let f = rs.explain_change(&base, &new);
    assert_eq!(
        names(&f),
        vec!["tensor_cores_unused"],
        "power cap fires on both"
    );
    let text = &f[0].explanation;
    assert!(
        text.starts_with(
            "Part of the matrix math left the tensor cores: tensor activity fell from 9"
        ) && text.contains("% to 0 %"),
        "{text}"
    );
    assert!(text.contains("while the FP32 pipe rose from 1"), "{text}");
    assert!(text.contains("without TF32, or outside autocast"), "{text}");
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.starts_with("tensor_pct.mean 9") && e.ends_with("-> 0 %")),
        "{:?}",
        f[0].evidence
    );
    // Nothing new in the other direction... except that healthy fires nothing new.
    assert!(rs.explain_change(&new, &base).is_empty());
    // Same run twice: nothing changed.
    assert!(rs.explain_change(&base, &base).is_empty());
}

#[test]
fn user_rules_add_override_disable_and_rethreshold() {
    let rs = RuleSet::builtin()
        .with_user_metrics(["samples_per_s".to_string()])
        .with_user_rules(&user(
            r#"
[rules.low_throughput]
when = "gpu_busy_pct.mean > 90 and samples_per_s.mean < 5000"
severity = "high"
title = "Throughput below target"
explanation = "Busy {gpu_busy_pct.mean} yet the benchmark is slow."
next_steps = ["Profile it"]

[rules.clock_power_capped]
enabled = false

[rules.kernel_fragmentation]
when = "gpu_busy_pct.mean > 99"
severity = "low"
"#,
        ))
        .unwrap();
    let mut run = run_of(&Signature::healthy(), 1);
    run.user_metrics.insert("samples_per_s".into(), 1000.0);
    let f = rs.diagnose(&run);
    // The user rule fires; the disabled power rule does not; the
    // re-thresholded fragmentation rule fires on a healthy run at its new
    // severity, keeping its built-in texts.
    assert_eq!(names(&f), vec!["low_throughput", "kernel_fragmentation"]);
    assert_eq!(f[0].explanation, "Busy 99.53 % yet the benchmark is slow.");
    assert_eq!(f[1].severity, Severity::Low);
    assert!(f[1].title.starts_with("Launch-bound"));
    assert_eq!(
        rs.get("kernel_fragmentation").unwrap().origin,
        rules::Origin::Overridden
    );
    // Default evidence of a user rule: the operands of its condition.
    assert_eq!(
        f[0].evidence,
        vec!["gpu_busy_pct.mean = 99.53 %", "samples_per_s.mean = 1000"]
    );
}

#[test]
fn user_rule_errors_name_rule_field_and_column() {
    let err = |text: &str| {
        RuleSet::builtin()
            .with_user_rules(&user(text))
            .unwrap_err()
            .to_string()
    };
    let e = err("[rules.mine]\nwhen = \"gpu_busy_pct.mean > (80\"\n");
    assert!(e.starts_with("[rules.mine] when: column 24:"), "{e}");
    let e = err(
        "[rules.mine]\nwhen = \"gpu_busy_pct.mean > 1\"\nexplanation = \"x {sm_activ_pct.mean}\"\n",
    );
    assert!(e.contains("explanation: column 4:"), "{e}");
    assert!(e.contains("did you mean 'sm_active_pct'"), "{e}");
    let e = err("[rules.mine]\nseverity = \"high\"\n");
    assert!(
        e.contains("missing 'when'") && e.contains("not a built-in rule"),
        "{e}"
    );
    let e = err("[rules.memory_bound]\nwehn = \"1 > 0\"\n");
    assert!(e.contains("unknown field 'wehn'"), "{e}");
    let e = err("[rules.memory_bound]\nseverity = \"urgent\"\n");
    assert!(e.contains("'urgent'"), "{e}");
    let e = err("[rules.mine]\nwhen = \"samples_per_s.mean < 3\"\n");
    assert!(e.contains("unknown metric 'samples_per_s'"), "{e}");
    let e = err("[rules.Bad-Name]\nwhen = \"1 < 2\"\n");
    assert!(e.contains("lowercase"), "{e}");
    // Errors are usage errors: exit 2.
    let g = RuleSet::builtin()
        .with_user_rules(&user("[rules.x]\nwhen = \"(\"\n"))
        .unwrap_err();
    assert_eq!(g.exit_code(), crate::exit_code::USAGE);
}

#[test]
fn templates_render_values_changes_and_literal_braces() {
    let vocab = dsl::Vocabulary::standard();
    let t = rules::Template::parse(
        "{{x}} busy {gpu_busy_pct.mean}, was {base:gpu_busy_pct.mean}: {change:gpu_busy_pct.mean}",
        &vocab,
    )
    .unwrap();
    let base = run_of(&Signature::healthy(), 1);
    let new = run_of(&Signature::sync_stall(), 1);
    let s = t.render(Some(&base), &new);
    assert_eq!(
        s,
        "{x} busy 5.971 %, was 99.53 %: fell from 99.53 % to 5.971 %"
    );
    let s = t.render(None, &new);
    assert_eq!(s, "{x} busy 5.971 %, was n/a: is 5.971 %");
    let e = rules::Template::parse("a {gpu_busy_pct.mean", &vocab).unwrap_err();
    assert_eq!(e.column, 3);
    let e = rules::Template::parse("a } b", &vocab).unwrap_err();
    assert_eq!(e.column, 3);
}

#[test]
fn findings_are_deterministic() {
    let rs = RuleSet::builtin();
    let a = rs.diagnose(&run_of(&Signature::contention(), 2));
    let b = rs.diagnose(&run_of(&Signature::contention(), 2));
    assert_eq!(a, b);
    assert!(a
        .iter()
        .all(|f| f.score == (f.score * 1000.0).round() / 1000.0));
}

const RULES_DOC: &str = include_str!("../../docs/rules.md");

#[test]
fn docs_list_every_builtin_rule_exactly() {
    for r in RuleSet::builtin().rules() {
        let row = format!(
            "| `{}` | {} | {} | {} | `{}` |",
            r.name,
            r.severity.as_str(),
            r.order,
            r.title,
            r.when.replace('|', "\\|")
        );
        assert!(
            RULES_DOC.contains(&row),
            "docs/rules.md is out of date for {}; expected row:\n{row}",
            r.name
        );
    }
    for f in crate::analysis::feature::Feature::names() {
        assert!(
            RULES_DOC.contains(&format!("`{f}`")),
            "feature {f} undocumented"
        );
    }
}

#[test]
fn docs_gate_toml_example_loads_and_its_rule_fires() {
    let start = RULES_DOC.find("## In gate.toml").unwrap();
    let block = &RULES_DOC[start..];
    let toml_text = &block[block.find("```toml\n").unwrap() + 8..];
    let toml_text = &toml_text[..toml_text.find("```").unwrap()];
    let rs = RuleSet::builtin()
        .with_user_rules(&user(toml_text))
        .unwrap();
    assert!(!rs.get("clock_power_capped").unwrap().enabled);
    let mut storm = Signature::launch_storm();
    storm.gpu.insert("gpu_busy_pct", 97.0);
    storm.jitter = 0.02;
    let f = rs.diagnose(&run_of(&storm, 1));
    assert!(names(&f).contains(&"sm_starved_median"), "{:?}", names(&f));
    // The function example of the docs parses and evaluates.
    let e = dsl::parse(
        "gpu_max(gpu_busy_pct.mean - sm_active_pct.mean) > 60",
        dsl::Type::Bool,
        &dsl::Vocabulary::standard(),
    )
    .unwrap();
    assert_eq!(dsl::eval_bool(&e, &run_of(&storm, 2)), Some(true));
}

const README: &str = include_str!("../../README.md");

/// docs/rules.md ("Without GPM") and the README say for every built-in
/// rule what it needs, as `Rule::needs` reads it from rules.toml.
#[test]
fn docs_and_readme_say_what_each_rule_needs() {
    let mut missing = Vec::new();
    let rules = RuleSet::builtin();
    for r in rules.rules() {
        let row = format!("| `{}` | {} |", r.name, r.needs().as_str());
        if !RULES_DOC.contains(&row) {
            missing.push(format!("docs/rules.md: {row}"));
        }
    }
    for needs in [
        rules::Needs::Nvml,
        rules::Needs::GpmOrNvml,
        rules::Needs::Gpm,
    ] {
        let names: Vec<String> = rules
            .rules()
            .iter()
            .filter(|r| r.needs() == needs)
            .map(|r| format!("`{}`", r.name))
            .collect();
        let line = format!("- {}: {}.", needs.as_str(), names.join(", "));
        if !README.contains(&line) {
            missing.push(format!("README.md: {line}"));
        }
    }
    assert!(missing.is_empty(), "out of date:\n{}", missing.join("\n"));
}

#[test]
fn framework_steps_name_known_frameworks_and_rules_without_them_stay_generic() {
    let rs = RuleSet::builtin();
    let sync = rs.get("sync_stalls").unwrap();
    assert!(sync.next_steps_for.contains_key("jax"));
    let bad = user("[rules.sync_stalls]\nnext_steps_for = { pytorch = [\"x\"] }\n");
    let e = RuleSet::builtin()
        .with_user_rules(&bad)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown framework 'pytorch'"), "{e}");
}

/// More GPU work per unit of output: the same kernels as busy as before
/// while the benchmark's declared rate fell by a quarter (recompute). Not
/// without the declared number, and not when the rate barely moved.
#[test]
fn more_work_per_unit_needs_the_declared_rate() {
    let rs = RuleSet::builtin();
    let with_rate = |seed_sig: &Signature, rate: Option<f64>| {
        let mut r = run_of(seed_sig, 1);
        if let Some(v) = rate {
            r.features.insert(features::WORK_RATE.to_string(), v);
        }
        r
    };
    let healthy = Signature::healthy();
    let base = with_rate(&healthy, Some(1000.0));
    let fired =
        |new: &RunSummary| names(&rs.explain_change(&base, new)).contains(&"more_work_per_unit");
    assert!(fired(&with_rate(&healthy, Some(750.0))));
    assert!(
        !fired(&with_rate(&healthy, Some(950.0))),
        "5 % is within healthy spread"
    );
    assert!(
        !fired(&with_rate(&healthy, None)),
        "no declared rate, nothing to compare"
    );
}

#[test]
fn an_unexplained_change_says_how_to_declare_the_work_rate() {
    let moved = [("samples_per_s".to_string(), Some(-20.0))];
    let undeclared = super::unexplained(&moved, false);
    assert_eq!(undeclared.next_steps[0], super::UNDECLARED_WORK_RATE);
    assert!(undeclared.next_steps[0].contains("[user_metrics."));
    let declared = super::unexplained(&moved, true);
    assert!(!declared
        .next_steps
        .iter()
        .any(|s| s.contains("could not be checked")));
}

/// The built-in rules are parsed once and shared: a suite of a thousand
/// workloads held a thousand copies (280 KB each) before.
#[test]
fn builtin_rules_are_shared_between_rule_sets() {
    let (a, b) = (RuleSet::builtin(), RuleSet::builtin());
    assert_eq!(a.rules().len(), b.rules().len());
    assert!(a
        .rules()
        .iter()
        .zip(b.rules())
        .all(|(x, y)| std::sync::Arc::ptr_eq(x, y)));
}
