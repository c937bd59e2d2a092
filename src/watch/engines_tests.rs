//! The two engines speak one vocabulary: over the same samples, the window
//! engine (`window::WindowView`) gives every feature the batch engine
//! (`analysis::features`, through `summary::summarize`) gives, or refuses
//! it with a reason; and every built-in rule finds the same on both.
//! Traces are SYNTHETIC (`synthetic::Signature::all`), with a framework
//! named on their command line.

use super::window::{refused_in_a_window, FeatureColumns, Ring, Window, WindowView};
use crate::analysis::feature::{Feature, Scope};
use crate::diagnose::RuleSet;
use crate::stats::MetricSource;
use crate::synthetic::{self, Signature};
use crate::trace::Trace;
use std::collections::BTreeSet;

/// A window holding exactly the steady samples of `trace`, with all its
/// events and process lists (the batch engine counts those over the whole
/// recording), read as `WindowView` reads it.
fn with_steady_window<R>(trace: &Trace, read: impl FnOnce(&WindowView) -> R) -> R {
    let header = &trace.header;
    let (ngpu, ncols, nhost) = (
        trace.gpu_count(),
        header.gpu_columns.len(),
        header.host_columns.len(),
    );
    let mut ring = Ring::new(ngpu, ncols, nhost);
    let mut window = Window::new(f64::MAX, FeatureColumns::of(header), ring.end());
    for i in crate::summary::steady_window(trace).iter() {
        let gpu: Vec<f32> = (0..ngpu)
            .flat_map(|g| (0..ncols).map(move |c| (g, c)))
            .map(|(g, c)| trace.gpu_value(i, g, c))
            .collect();
        let host: Vec<f32> = (0..nhost).map(|c| trace.host_value(i, c)).collect();
        ring.push(trace.times_ms.at(i), &gpu, &host);
        window.advance(&ring, ring.end() - 1);
    }
    let frameworks = crate::analysis::features::frameworks(trace);
    let view = WindowView {
        ring: &ring,
        window: &window,
        header,
        events: trace.events.iter().collect(),
        processes: trace.processes.iter().collect(),
        frameworks: &frameworks,
    };
    read(&view)
}

fn traces() -> Vec<(String, Trace)> {
    let mut out = Vec::new();
    for (i, mut sig) in Signature::all().into_iter().enumerate() {
        // Half of them launched the way a torch job is (`framework.torch`).
        if i % 2 == 0 {
            sig.command = Some(vec!["torchrun".into(), "train.py".into()]);
        }
        let name = sig.name.to_string();
        out.push((name, synthetic::trace(&sig.with_samples(240), 2)));
    }
    out
}

#[test]
fn every_feature_the_batch_engine_knows_is_computed_in_a_window_or_refused() {
    let mut seen = BTreeSet::new();
    for (name, trace) in traces() {
        let batch = crate::summary::summarize(&trace);
        with_steady_window(&trace, |view| {
            for f in Feature::ALL {
                let (b, w) = (batch.feature(f.name()), view.feature(f.name()));
                if let Some(why) = refused_in_a_window(f) {
                    assert_eq!(f.scope(), Scope::BenchmarkOutput, "{f:?}");
                    assert!(why.contains("benchmark's output"), "{why}");
                    assert_eq!(w, None, "{name}: {} refused yet read", f.name());
                    continue;
                }
                match (b, w) {
                    (Some(b), Some(w)) => {
                        assert!(
                            (b - w).abs() <= 1e-9 * b.abs().max(1.0),
                            "{name}: {} batch {b} window {w}",
                            f.name()
                        );
                        seen.insert(f);
                    }
                    (None, None) => {}
                    _ => panic!("{name}: {} batch {b:?} window {w:?}", f.name()),
                }
            }
        });
    }
    // The comparison is not vacuous: every feature but the refused one
    // and the frameworks no trace names had a value on both sides.
    let never: Vec<&str> = Feature::ALL
        .into_iter()
        .filter(|f| !seen.contains(f) && refused_in_a_window(*f).is_none())
        .filter(|f| !matches!(f, Feature::Framework(fw) if fw.name() != "torch"))
        .map(Feature::name)
        .collect();
    assert!(never.is_empty(), "never compared with a value: {never:?}");
}

#[test]
fn every_builtin_rule_finds_the_same_in_a_window_covering_the_run_as_on_the_run() {
    let rules = super::window_rules(&RuleSet::builtin()).expect("the built-in rules load");
    let mut fired = BTreeSet::new();
    for (name, trace) in traces() {
        let batch: Vec<String> = rules
            .diagnose(&crate::summary::summarize(&trace))
            .into_iter()
            .map(|f| f.rule)
            .collect();
        let window: Vec<String> = with_steady_window(&trace, |view| {
            rules.diagnose(view).into_iter().map(|f| f.rule).collect()
        });
        assert_eq!(batch, window, "{name}");
        fired.extend(batch);
    }
    assert!(
        fired.len() >= 8,
        "too few rules fired to compare: {fired:?}"
    );
}

#[test]
fn a_user_rule_on_the_benchmarks_rate_is_refused_and_the_builtin_one_left_out() {
    let user: std::collections::BTreeMap<String, toml::Value> = toml::from_str::<toml::Table>(
        "[slow]\nseverity = \"high\"\ntitle = \"Slow\"\nwhen = \"benchmark.work_rate < 10\"\n",
    )
    .unwrap()
    .into_iter()
    .collect();
    let rules = RuleSet::builtin().with_user_rules(&user).unwrap();
    let e = super::window_rules(&rules).unwrap_err();
    assert!(
        e.contains("rule 'slow'") && e.contains("benchmark.work_rate") && e.contains("gate report"),
        "{e}"
    );
    let builtin = super::window_rules(&RuleSet::builtin()).unwrap();
    let all = RuleSet::builtin();
    let out: Vec<&str> = all
        .rules()
        .iter()
        .filter(|r| r.enabled && builtin.get(&r.name).is_none())
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(out, ["more_work_per_unit"]);
}
