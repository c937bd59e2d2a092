//! Entry points for fuzzing the parsers of user-supplied text: a trace, a
//! baseline, a `gate.toml`, a rule condition, a history location, a
//! harness's metrics file, the cgroup mount table. Each takes arbitrary
//! bytes, parses them the way the commands do, and when the input is
//! accepted, drives it through what the commands do next (statistics,
//! judging, reports, rule evaluation), so a value the parser lets through
//! cannot crash a later stage. A panic anywhere is a bug; an `Err` is the
//! expected answer to most inputs.
//!
//! Two drivers call these: the cargo-fuzz targets in `fuzz/` (libFuzzer,
//! coverage-guided, nightly; see docs/limits.md for long campaigns), and
//! `tests/fuzz_parsers.rs` (stable, in `cargo test`), which replays the
//! committed corpus and crash inputs and runs a bounded mutation campaign.

use crate::baseline;
use crate::config::Config;
use crate::diagnose::dsl::{self, Type, Vocabulary};
use crate::diagnose::RuleSet;
use crate::summary::Run as DerivedRun;
use crate::trace::Trace;
use std::path::Path;
use std::sync::OnceLock;

/// A small real trace (the synthetic generator's healthy run): what
/// baselines are judged against and rules evaluated on.
fn reference_trace() -> &'static Trace {
    static TRACE: OnceLock<Trace> = OnceLock::new();
    TRACE.get_or_init(|| {
        let sig = crate::synthetic::Signature::healthy()
            .with_warmup_samples(5)
            .with_samples(60);
        crate::synthetic::trace(&sig, 1)
    })
}

fn default_config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(Config::default)
}

/// The reference run summarised once (summarising is the slow part).
fn reference_run() -> &'static DerivedRun {
    static RUN: OnceLock<DerivedRun> = OnceLock::new();
    RUN.get_or_init(|| DerivedRun::derive(reference_trace(), default_config()))
}

fn builtin_rules() -> &'static RuleSet {
    static RULES: OnceLock<RuleSet> = OnceLock::new();
    RULES.get_or_init(RuleSet::builtin)
}

/// A trace file's bytes: parse, then summarise, diagnose and report it as
/// `gate report` does.
pub fn trace(data: &[u8]) {
    let Ok(t) = Trace::read(std::io::Cursor::new(data), Path::new("fuzz.jsonl")) else {
        return;
    };
    if t.sample_count() == 0 {
        return;
    }
    use crate::report::run::{html, json, markdown, text, RunReport, RunReporter};
    let mut run = DerivedRun::derive(&t, default_config());
    run.explain(&t, &crate::report::run::plan(1000.0, None, true));
    let runs = [RunReport::of(run, builtin_rules())];
    let _ = text::Text { color: false }.render(&runs);
    let _ = markdown::Markdown.render(&runs);
    let _ = json::Json.render(&runs);
    let _ = html::Html.render(&runs);
}

/// A baseline file's bytes: parse (with its load-time checks), render it
/// back, and judge the reference run against it as `gate check` does.
pub fn baseline(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(b) = baseline::parse(text, "fuzz.toml") else {
        return;
    };
    // What gate writes, it reads back.
    let rendered = baseline::to_toml(&b, "fuzz");
    let again = baseline::parse(&rendered, "rendered.toml")
        .unwrap_or_else(|e| panic!("a rendered baseline does not load: {e}\n{rendered}"));
    assert_eq!(
        rendered,
        baseline::to_toml(&again, "fuzz"),
        "rendering is not stable"
    );
    let _ = crate::gate::check(&crate::gate::CheckInput {
        baseline: &b,
        baseline_source: "fuzz.toml".into(),
        config: default_config(),
        cli_threshold: None,
        runs: std::slice::from_ref(reference_run()),
        multi_node: false,
        allow_env_mismatch: true,
        allow_command_change: true,
        cli_tags: Default::default(),
        fail_on_improvement: false,
        rules: builtin_rules(),
        acceptances: None,
        looks: 1,
        history_spread: Default::default(),
    });
}

/// A `gate.toml`'s bytes: parse, build its rule set, resolve every policy
/// and extract its user metrics from the reference run.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(c) = Config::parse(text, "fuzz.toml") else {
        return;
    };
    if let Ok(rules) = c.rule_set() {
        let run = DerivedRun::derive(reference_trace(), &c);
        let _ = rules.diagnose(&run.summary);
    }
    for d in crate::metrics::GPU_METRICS
        .iter()
        .chain(crate::metrics::HOST_METRICS)
    {
        let _ = c.policy(d.id, Some(0.2));
    }
    for name in c.user_metric_names() {
        let _ = c.policy(&name, None);
    }
    let _ = crate::summary::user_metric_values(&c, reference_trace());
}

/// A rule condition's bytes: parse; an accepted condition prints as text
/// that parses to the same condition, and evaluates without panicking.
pub fn rule(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let vocab = Vocabulary::standard();
    for want in [Type::Bool, Type::Num] {
        let Ok(e) = dsl::parse(src, want, &vocab) else {
            continue;
        };
        let printed = e.to_string();
        let back = dsl::parse(&printed, want, &vocab).unwrap_or_else(|err| {
            panic!("'{printed}' (printed from '{src}') does not parse: {err}")
        });
        assert_eq!(
            printed,
            back.to_string(),
            "printing is not stable for '{src}'"
        );
        let run = &reference_run().summary;
        match want {
            Type::Bool => {
                let _ = dsl::eval_bool(&e, run);
                let _ = dsl::margin(&e, run);
                let _ = dsl::evidence_operands(&e);
            }
            Type::Num => {
                let _ = dsl::eval_num(&e, run, None);
                let _ = dsl::eval_num(&e, run, Some(0));
            }
        }
    }
}

/// A history location (`--history`, `[history] url`): parse it as the
/// commands do, and check the property the redaction exists for: what
/// any message shows of a PostgreSQL location (`Location::display`), read
/// back by the driver's own parser, carries no password but `***`.
pub fn history_location(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let shown = match crate::history::Location::parse(text) {
        Ok(loc) => loc.display(),
        Err(e) => e.to_string(),
    };
    for s in [crate::history::redact(text), shown] {
        if let Ok(config) = s.parse::<::postgres::Config>() {
            if let Some(pw) = config.get_password() {
                assert_eq!(
                    pw, b"***",
                    "'{text}' is shown as '{s}', which holds a password"
                );
            }
        }
    }
}

/// A benchmark harness's metrics file (pytest-benchmark, Google Benchmark,
/// nvbench, BMF: `--metrics-file`), read by each reader as `check` does,
/// and the numbers driven into the verdict's noise band. The properties
/// issue 41 needed: no count in the file hangs a reader (a quantile at 3e7
/// degrees of freedom never returned), every value and interval a reader
/// keeps is finite, and a band built from any of them is a number (scaled
/// before squaring; infinite only past f64's range).
pub fn metrics_file(data: &[u8]) {
    use crate::metric_sources::{Pattern, Reader};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let any = || Pattern::new("*");
    let readers = [
        Reader::PytestBenchmark {
            benchmark: any(),
            stat: "mean".into(),
        },
        Reader::PytestBenchmark {
            benchmark: any(),
            stat: "median".into(),
        },
        Reader::PytestBenchmark {
            benchmark: any(),
            stat: "ops".into(),
        },
        Reader::GoogleBenchmark {
            benchmark: any(),
            stat: "real_time".into(),
        },
        Reader::Nvbench {
            benchmark: any(),
            stat: "nv/cold/time/gpu/mean".into(),
        },
        Reader::Bmf {
            benchmark: any(),
            measure: "latency".into(),
            stat: "value".into(),
        },
    ];
    for reader in &readers {
        let got = reader.read_file(text);
        let numbers: Vec<(f64, Option<f64>)> = got
            .values
            .iter()
            .map(|v| (*v, got.ci95))
            .chain(got.each.iter().map(|(_, n)| (n.value, n.ci95)))
            .collect();
        for (v, ci) in &numbers {
            assert!(v.is_finite(), "{reader:?} kept {v}");
            assert!(
                ci.is_none_or(|c| c.is_finite()),
                "{reader:?}: interval {ci:?}"
            );
        }
        let Some(new) = crate::noise::Observation::from_runs(&numbers) else {
            continue;
        };
        let base = crate::noise::Observation::from_runs(&[(0.001, Some(1e-5)), (0.0011, None)])
            .expect("a baseline");
        if let Some(n) = crate::noise::moderated(&base, &new, &crate::noise::Prior::default()) {
            // Infinite only past f64's range (values near f64::MAX), which
            // the verdict calls inconclusive; never NaN.
            assert!(
                !n.band.is_nan(),
                "{reader:?}: band {} from {numbers:?}",
                n.band
            );
        }
    }
}

/// `/proc/self/cgroup` and `/proc/self/mountinfo` (split at the first NUL
/// byte), read as the recorder finds its cgroup: never a panic, and a
/// directory only under the mount point it names.
pub fn mountinfo(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (cgroup, mounts) = text.split_once('\0').unwrap_or(("0::/\n", &text));
    let _ = crate::sampler::cgroup::own_cgroup_dir(cgroup, mounts);
}
