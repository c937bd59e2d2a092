//! The scoreboard: every recorded fixture judged by the real binary, the way
//! a user would (`gate capture` from healthy runs, `gate check --replay`).
//! Every pathology must fail with its own class ranked first, every healthy
//! pair must pass, and no improvement may be given a cause. The table this
//! test renders is kept verbatim in docs/gating.md ("Scoreboard").
//!
//! Fixtures: `fixtures/traces/` (recorded on H200s with `gate record`, see
//! fixtures/README.md). Families: the round-1 MLP (`healthy-*`, extreme
//! pathologies), and the round-2 moderate families `cnn-*` (ResNet-50),
//! `gpt-*` (GPT decoder) on one H200 and `ddp-*` (data-parallel, two H200s
//! over NVLink), and the hold-out `bert-*` (BERT-base, recorded after the
//! rules were settled; fixtures/README.md says what it changed).

use crate::common;

use common::*;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The benchmark's own throughput, as a user would declare it.
const THROUGHPUT: &str = THROUGHPUT_TOML;

/// Wall time off, as for a loop of fixed length.
const WALL_TIME_OFF: &str = "[metrics.wall_time_s]\nenabled = false\n";

struct Family {
    name: &'static str,
    /// Trace name prefix (`cnn-`), empty for the round-1 MLP.
    prefix: &'static str,
    /// (fixture, class that must be ranked first; None = a benign change
    /// that must pass with no cause named)
    cases: &'static [(&'static str, Option<&'static str>)],
}

const FAMILIES: &[Family] = &[
    Family {
        name: "mlp (round 1, extreme)",
        prefix: "",
        cases: &[
            ("launch-storm", Some("kernel_fragmentation")),
            ("fp32-no-tf32", Some("tensor_cores_unused")),
            ("memory-bound", Some("memory_bound")),
            ("pageable-h2d", Some("pcie_h2d_bound")),
            ("sync-stall", Some("sync_stalls")),
            ("host-bound", Some("host_bound")),
            ("contention", Some("gpu_contention")),
        ],
    },
    Family {
        name: "cnn (ResNet-50)",
        prefix: "cnn-",
        cases: &[
            ("sync", Some("sync_stalls")),
            ("launch", Some("kernel_fragmentation")),
            ("input", Some("input_bound")),
            ("contend-in", Some("tree_contention")),
            ("contend-out", Some("gpu_contention")),
            ("memory", Some("memory_bound")),
            ("tensor", Some("tensor_cores_unused")),
        ],
    },
    Family {
        name: "gpt (decoder)",
        prefix: "gpt-",
        cases: &[
            ("sync", Some("sync_stalls")),
            ("launch", Some("kernel_fragmentation")),
            ("input", None),
            ("contend-in", Some("tree_contention")),
            ("contend-out", Some("gpu_contention")),
            ("memory", Some("memory_bound")),
            ("tensor", Some("tensor_cores_unused")),
        ],
    },
    Family {
        name: "bert (hold-out)",
        prefix: "bert-",
        cases: &[
            ("gradlog", Some("sync_stalls")),
            ("fp32", Some("tensor_cores_unused")),
            ("tokenize", Some("host_bound")),
            ("small-batch", Some("kernel_fragmentation")),
            ("eager-attn", Some("memory_bound")),
            ("contend-out", Some("gpu_contention")),
        ],
    },
    Family {
        name: "ddp (2 GPUs)",
        prefix: "ddp-",
        cases: &[
            ("comm", Some("comm_fallback")),
            ("straggler-gpu", Some("gpu_imbalance")),
            ("straggler-host", None),
        ],
    },
];

fn fixture(f: &Family, name: &str) -> PathBuf {
    trace(f.prefix, name)
}

/// `fixtures/traces/<prefix><name>.jsonl`.
fn trace(prefix: &str, name: &str) -> PathBuf {
    PathBuf::from(format!("{ROOT}/fixtures/traces/{prefix}{name}.jsonl"))
}

struct Outcome {
    exit: i32,
    top: Option<String>,
    /// Diagnosis findings of severity medium or high.
    causes: Vec<String>,
    regressed: Vec<String>,
    throughput_pct: Option<f64>,
    /// Something outside the benchmark's tree acted on the run (issue 38).
    disturbed: bool,
}

/// The class of a process outside the benchmark's tree on its GPU: since
/// issue 38 such a run is DISTURBED, never a regression of the change.
const OUTSIDE_THE_TREE: &str = "gpu_contention";

/// A run beside a neighbour outside the tree, as the contract of
/// docs/gating.md ("Disturbed is not regressed") wants it: disturbed, and
/// never exit 1; exit 3 with the neighbour's class first when a gated
/// number moved the bad way, exit 0 when everything judged held.
fn disturbed_as_contracted(o: &Outcome) -> bool {
    o.disturbed
        && match o.exit {
            3 => o.top.as_deref() == Some(OUTSIDE_THE_TREE),
            0 => o.causes.is_empty(),
            _ => false,
        }
}

fn check(dir: &Path, baseline: &str, trace: &Path) -> Outcome {
    let out = gate(dir)
        .args([
            "check",
            "--baseline",
            baseline,
            "--format",
            "json",
            "--replay",
        ])
        .arg(trace)
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    let r: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{}: {e}\n{stderr}", trace.display()));
    let names = |sev: &[&str]| -> Vec<String> {
        r["diagnosis"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| sev.is_empty() || sev.contains(&d["severity"].as_str().unwrap()))
            .map(|d| d["rule"].as_str().unwrap().to_string())
            .collect()
    };
    let metrics = r["metrics"].as_array().unwrap();
    Outcome {
        exit: out.status.code().unwrap(),
        top: names(&[]).first().cloned(),
        causes: names(&["medium", "high"]),
        regressed: metrics
            .iter()
            .filter(|m| m["verdict"] == "regression")
            .map(|m| {
                let id = m["id"].as_str().unwrap();
                match m["gpu"].as_u64() {
                    Some(g) => format!("{id}[gpu{g}]"),
                    None => id.to_string(),
                }
            })
            .collect(),
        throughput_pct: metrics
            .iter()
            .find(|m| m["id"] == "samples_per_s" && m["gpu"].is_null())
            .and_then(|m| m["change_pct"].as_f64()),
        disturbed: r["disturbance"].as_array().is_some_and(|d| !d.is_empty()),
    }
}

fn capture(dir: &Path, name: &str, traces: &[PathBuf]) {
    gate(dir)
        .args(["capture", "--baseline", name, "--replace", "--replay"])
        .args(traces)
        .assert()
        .success();
}

/// A temporary project directory with this `gate.toml` (or none).
fn project(config: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    if let Some(c) = config {
        std::fs::write(dir.path().join("gate.toml"), c).unwrap();
    }
    dir
}

/// The throughput declared as this repository's gate.toml does, with wall
/// time off (a loop of fixed length takes as long whatever it does).
fn throughput_without_wall_time() -> String {
    format!("{THROUGHPUT}\n{WALL_TIME_OFF}")
}

/// A directory with `gate.toml` (or none) and the family's baselines:
/// `b12` from healthy runs 1 and 2, `b1`/`b2`/`b3` from one run each.
fn setup(f: &Family, config: Option<&str>) -> tempfile::TempDir {
    let dir = project(config);
    let h = |i: usize| fixture(f, &format!("healthy-{i}"));
    capture(dir.path(), "b12", &[h(1), h(2)]);
    for i in 1..=3 {
        capture(dir.path(), &format!("b{i}"), &[h(i)]);
    }
    dir
}

fn pct(v: Option<f64>) -> String {
    v.map(|p| format!("{p:+.1} %"))
        .unwrap_or_else(|| "n/a".into())
}

/// The table of docs/gating.md: the two-run baseline (healthy-1 and 2),
/// defaults only, and with the benchmark's throughput declared.
fn scoreboard() -> (String, Vec<String>) {
    let mut table = String::from(
        "| family | fixture | throughput | exit (defaults) | exit (throughput declared) | ranked first | expected |\n|---|---|---:|---|---|---|---|\n",
    );
    let mut failures = Vec::new();
    for f in FAMILIES {
        let plain = setup(f, None);
        let declared = setup(f, Some(THROUGHPUT));
        let rows = std::iter::once(("healthy-3", None)).chain(f.cases.iter().copied());
        for (name, want) in rows {
            let t = fixture(f, name);
            assert!(t.exists(), "fixture {} missing", t.display());
            let a = check(plain.path(), "b12", &t);
            let b = check(declared.path(), "b12", &t);
            // A benign change never fails; the noise may leave it open
            // (exit 4, issue 17), never green on a real one.
            let expect_exit = if want.is_some() { 1 } else { 0 };
            let exit_ok = |e: i32| e == expect_exit || (want.is_none() && e == 4);
            let neighbour = want == Some(OUTSIDE_THE_TREE);
            let ok = if neighbour {
                disturbed_as_contracted(&a) && disturbed_as_contracted(&b)
            } else {
                // Nothing else recorded is disturbed (docs/gating.md).
                !a.disturbed
                    && !b.disturbed
                    && exit_ok(a.exit)
                    && exit_ok(b.exit)
                    && match want {
                        Some(rule) => {
                            a.top.as_deref() == Some(rule) && b.top.as_deref() == Some(rule)
                        }
                        None => a.causes.is_empty() && b.causes.is_empty(),
                    }
            };
            if !ok {
                failures.push(format!(
                    "{}{name}: exit {} / {} (want {expect_exit}), top {:?} / {:?} (want {want:?}), causes {:?}, regressed {:?}",
                    f.prefix, a.exit, b.exit, a.top, b.top, a.causes, a.regressed
                ));
            }
            table.push_str(&format!(
                "| {} | `{}{name}` | {} | {} | {} | {} | {} |\n",
                f.name,
                f.prefix,
                pct(b.throughput_pct),
                a.exit,
                b.exit,
                a.top
                    .as_deref()
                    .map(|r| format!("`{r}`"))
                    .unwrap_or_else(|| "none".into()),
                match want {
                    _ if neighbour => format!("disturbed: 3 with `{OUTSIDE_THE_TREE}`, or 0"),
                    Some(r) => format!("`{r}`"),
                    None => "pass, no cause".into(),
                },
            ));
        }
    }
    (table, failures)
}

#[test]
fn every_pathology_fails_with_its_class_first_and_the_table_is_documented() {
    let (table, failures) = scoreboard();
    assert!(failures.is_empty(), "scoreboard:\n{}", failures.join("\n"));
    let doc = std::fs::read_to_string(format!("{ROOT}/docs/gating.md")).unwrap();
    assert!(
        doc.contains(&table),
        "docs/gating.md's scoreboard is out of date; the table is now:\n\n{table}"
    );
}

/// Where the causes differ without GPM (the GPM-stripped twins in
/// `fixtures/traces/nogpm/`, what an A100 or `gate record --no-gpm`
/// records): `(fixture, what is ranked first)`; None = nothing of medium or
/// high severity ("unexplained", or a pass). Every other pathology keeps
/// the cause it has with GPM. Each is a pair NVML's counters cannot tell
/// apart, and the finding's text says which causes remain open.
const NOGPM_DIFFERS: &[(&str, Option<&str>)] = &[
    // A pageable copy idles the GPU with the same CPU, as small kernels do;
    // no PCIe counter without GPM (the text names the blocking copy).
    ("pageable-h2d", Some("kernel_fragmentation")),
    // Busy stays, memory-controller work per busy second falls, as for fp32
    // matmuls (the text names smaller or unfused kernels).
    ("gpt-launch", Some("tensor_cores_unused")),
    // Tensor activity fell, nothing NVML reads moved beyond its noise.
    ("cnn-tensor", None),
    // NVLink counters come from GPM; NVML's own are not recorded.
    ("ddp-comm", None),
    // Extra compute on one rank: more GPU time per unit of output, which it
    // is; telling which GPU takes SM activity per GPU.
    ("ddp-straggler-gpu", Some("more_work_per_unit")),
];

/// Without GPM this one fails on fewer counters: against the two healthy
/// runs of the noisy bert family its throughput drop (-20.5 %) is
/// inconclusive (exit 4: never green; a live check reruns) and the
/// diagnosis names the cause "if confirmed" (severity low).
const NOGPM_INCONCLUSIVE: &[&str] = &["bert-eager-attn"];

/// `fixtures/traces/nogpm/<prefix><name>.jsonl`.
fn twin(prefix: &str, name: &str) -> PathBuf {
    PathBuf::from(format!("{ROOT}/fixtures/traces/nogpm/{prefix}{name}.jsonl"))
}

/// The scoreboard on the GPM-stripped twins: the same baselines and
/// checks, the cause ranked first without GPM, and whether it is the cause
/// named with GPM. Kept verbatim in docs/rules.md ("Without GPM").
fn scoreboard_without_gpm() -> (String, Vec<String>, usize, usize) {
    let mut table = String::from(
        "| fixture | exit (defaults) | exit (throughput declared) | ranked first without GPM | with GPM |\n|---|---|---|---|---|\n",
    );
    let (mut right, mut pathologies) = (0, 0);
    let mut failures = Vec::new();
    for f in FAMILIES {
        let dir = |config: Option<&str>| {
            let d = project(config);
            let h = |i: usize| twin(f.prefix, &format!("healthy-{i}"));
            capture(d.path(), "b12", &[h(1), h(2)]);
            d
        };
        let (plain, declared) = (dir(None), dir(Some(THROUGHPUT)));
        let rows = std::iter::once(("healthy-3", None)).chain(f.cases.iter().copied());
        for (name, with_gpm) in rows {
            let id = format!("{}{name}", f.prefix);
            let want = NOGPM_DIFFERS
                .iter()
                .find(|(n, _)| *n == id)
                .map(|(_, w)| *w)
                .unwrap_or(with_gpm);
            let t = twin(f.prefix, name);
            let a = check(plain.path(), "b12", &t);
            let b = check(declared.path(), "b12", &t);
            // With the throughput declared every pathology fails; the cause
            // is read there (with defaults a slower benchmark whose NVML
            // counters stay may pass).
            let named = |o: &Outcome| o.top.clone().filter(|r| r != "unexplained");
            let first = named(&b);
            let first = first.as_deref();
            if with_gpm.is_some() {
                pathologies += 1;
                right += usize::from(first == with_gpm);
            }
            let want_exit = if NOGPM_INCONCLUSIVE.contains(&id.as_str()) {
                4
            } else if with_gpm.is_some() {
                1
            } else {
                0
            };
            // A benign change never fails; the noise may leave it open.
            let exit_ok = |e: i32| e == want_exit || (with_gpm.is_none() && e == 4);
            let plain_wrong = a.exit == 1 && want.is_some() && named(&a).as_deref() != want;
            let wrong = if want == Some(OUTSIDE_THE_TREE) {
                // Disturbed (issue 38): with the number declared it fell
                // beside the neighbour, exit 3 with the class first.
                !disturbed_as_contracted(&a) || !disturbed_as_contracted(&b) || first != want
            } else {
                !exit_ok(b.exit) || first != want || plain_wrong
            };
            if wrong {
                failures.push(format!(
                    "{id} without GPM: exit {} / {} (want {want_exit}), first {:?} / {first:?} (want {want:?})",
                    a.exit, b.exit, a.top
                ));
            }
            table.push_str(&format!(
                "| `{id}` | {} | {} | {} | {} |\n",
                a.exit,
                b.exit,
                first
                    .map(|r| format!("`{r}`"))
                    .unwrap_or_else(|| "none".into()),
                match (with_gpm, first == with_gpm) {
                    (None, _) => "pass, no cause".to_string(),
                    (Some(_), true) => "same".to_string(),
                    (Some(r), false) => format!("`{r}`"),
                },
            ));
        }
    }
    (table, failures, right, pathologies)
}

#[test]
fn without_gpm_the_causes_nvml_can_show_are_named_and_the_table_is_documented() {
    let (table, failures, right, total) = scoreboard_without_gpm();
    assert!(
        failures.is_empty(),
        "scoreboard without GPM:\n{}",
        failures.join("\n")
    );
    let summary =
        format!("Without GPM, {right} of {total} pathologies have their cause ranked first");
    // The target: at least 4 in 5.
    assert!(right * 5 >= total * 4, "{summary}");
    let readme = std::fs::read_to_string(format!("{ROOT}/README.md")).unwrap();
    assert!(
        readme.contains(&format!(
            "cause is ranked first for {right} of {total} pathologies of the scoreboard's five"
        )),
        "README.md's count without GPM is out of date: {summary}"
    );
    let doc = std::fs::read_to_string(format!("{ROOT}/docs/rules.md")).unwrap();
    assert!(
        doc.contains(&table) && doc.contains(&summary),
        "docs/rules.md's scoreboard without GPM is out of date; it is now:\n\n{summary}\n\n{table}"
    );
}

/// Healthy runs never fail against one-run baselines; a move the noise
/// leaves open is inconclusive (exit 4), not a pass (issue 17).
#[test]
fn every_healthy_pair_never_fails_against_one_run_baselines() {
    for f in FAMILIES {
        for config in [None, Some(THROUGHPUT)] {
            let dir = setup(f, config);
            for b in 1..=3 {
                for n in (1..=3).filter(|&n| n != b) {
                    let t = fixture(f, &format!("healthy-{n}"));
                    let o = check(dir.path(), &format!("b{b}"), &t);
                    assert!(
                        o.exit != 1 && o.causes.is_empty(),
                        "{}healthy-{n} against one-run b{b} (throughput declared: {}): exit {}, regressed {:?}, causes {:?}",
                        f.prefix,
                        config.is_some(),
                        o.exit,
                        o.regressed,
                        o.causes
                    );
                }
            }
        }
    }
}

/// One run a side, the band is widened for the run-to-run spread one run
/// cannot show (`noise::WITHIN_RUN_UNDERSTATES`): a moderate pathology may
/// then be inconclusive instead of failing, and still gets its cause named.
/// These are the ones that do, against which one-run baselines.
const ONE_RUN_INCONCLUSIVE: &[(&str, usize)] = &[("bert-eager-attn", 2)];

#[test]
fn every_pathology_fails_with_its_class_first_against_one_run_baselines() {
    let mut inconclusive = Vec::new();
    for f in FAMILIES {
        let dir = setup(f, None);
        for (name, want) in f.cases {
            for b in 1..=3 {
                let o = check(dir.path(), &format!("b{b}"), &fixture(f, name));
                let id = format!("{}{name}", f.prefix);
                if want.is_some() && o.exit == 4 {
                    inconclusive.push((id.clone(), b));
                }
                let want_exit = if ONE_RUN_INCONCLUSIVE.contains(&(id.as_str(), b)) {
                    4
                } else {
                    1
                };
                match want {
                    Some(OUTSIDE_THE_TREE) => assert!(
                        disturbed_as_contracted(&o),
                        "{}{name} against b{b}: exit {}, disturbed {}, top {:?}",
                        f.prefix,
                        o.exit,
                        o.disturbed,
                        o.top
                    ),
                    Some(rule) => assert_eq!(
                        (o.exit, o.top.as_deref()),
                        (want_exit, Some(*rule)),
                        "{}{name} against b{b}: regressed {:?}",
                        f.prefix,
                        o.regressed
                    ),
                    None => assert!(
                        o.exit != 1 && o.causes.is_empty(),
                        "{}{name} against b{b}: exit {}, causes {:?}",
                        f.prefix,
                        o.exit,
                        o.causes
                    ),
                }
            }
        }
    }
    let listed: Vec<(String, usize)> = ONE_RUN_INCONCLUSIVE
        .iter()
        .map(|(n, b)| (n.to_string(), *b))
        .collect();
    assert_eq!(inconclusive, listed);
}

/// The hold-out's healthy runs differ far more than the other families'
/// (GPU busy 89.9-97.4 %, throughput 1041-1135 samples/s): against every
/// three-run baseline drawn from its five healthy runs, the other two pass.
/// (Against one-run baselines they do not always: fixtures/README.md.)
/// Wall time is disabled as this repository's gate.toml does for a loop of
/// fixed length: it is Python start-up plus a constant, and three start-ups
/// that happened to lie within 0.25 s of each other made two healthy runs
/// (0.8 and 0.9 s slower to start) fail on it.
#[test]
fn noisy_healthy_runs_pass_against_every_three_run_baseline() {
    let dir = project(Some(WALL_TIME_OFF));
    let h = |i: usize| trace("bert-", &format!("healthy-{i}"));
    let mut alarms = Vec::new();
    for a in 1..=5 {
        for b in a + 1..=5 {
            for c in b + 1..=5 {
                capture(dir.path(), "b3", &[h(a), h(b), h(c)]);
                for other in (1..=5).filter(|i| ![a, b, c].contains(i)) {
                    let o = check(dir.path(), "b3", &h(other));
                    // Exit 4 (left open by the noise) is not an alarm.
                    if o.exit == 1 {
                        alarms.push(format!(
                            "healthy-{other} against healthy-{a},{b},{c}: exit {}, regressed {:?}",
                            o.exit, o.regressed
                        ));
                    }
                }
            }
        }
    }
    assert!(alarms.is_empty(), "false alarms:\n{}", alarms.join("\n"));
}

/// One run a side, the hold-outs' healthy runs (run-to-run sd of GPU busy,
/// SM active and tensor 3.4-4.2 %, twice their within-run error) used to
/// fail 7 of 40 pairs at 1.96 within-run errors; the old 2x widened band
/// failed none, the moderated variance's learned prior (worth 2.7 runs,
/// t = 3.3) fails one: 1 of 40, the nominal one-sided 2.5 % (docs/gating.md,
/// "Calibration"). Moves the noise leaves open exit 4, not 1.
const ONE_RUN_HEALTHY_ALARMS: &[&str] = &["vit-healthy-3 against one-run vit-healthy-4"];

#[test]
fn noisy_healthy_runs_pass_against_every_one_run_baseline() {
    let mut known = Vec::new();
    for prefix in ["bert-", "vit-"] {
        let dir = project(Some(WALL_TIME_OFF));
        let h = |i: usize| trace(prefix, &format!("healthy-{i}"));
        let mut alarms = Vec::new();
        for b in 1..=5 {
            capture(dir.path(), &format!("one{b}"), &[h(b)]);
            for n in (1..=5).filter(|&n| n != b) {
                let o = check(dir.path(), &format!("one{b}"), &h(n));
                let pair = format!("{prefix}healthy-{n} against one-run {prefix}healthy-{b}");
                let alarm = o.exit == 1 || !o.causes.is_empty();
                if alarm && ONE_RUN_HEALTHY_ALARMS.contains(&pair.as_str()) {
                    known.push(pair);
                } else if alarm {
                    alarms.push(format!(
                        "{prefix}healthy-{n} against one-run {prefix}healthy-{b}: exit {}, regressed {:?}, causes {:?}",
                        o.exit, o.regressed, o.causes
                    ));
                }
            }
        }
        assert!(alarms.is_empty(), "false alarms:\n{}", alarms.join("\n"));
    }
    assert_eq!(known, ONE_RUN_HEALTHY_ALARMS, "the documented alarm moved");
}

/// A project with `gate.toml` = `config` and baseline `b3` captured from
/// `healthy-1..3` (as `trace_of` names them).
fn three_run_baseline(
    trace_of: impl Fn(&str) -> PathBuf,
    config: Option<&str>,
) -> tempfile::TempDir {
    let dir = project(config);
    let healthy: Vec<PathBuf> = (1..=3).map(|i| trace_of(&format!("healthy-{i}"))).collect();
    capture(dir.path(), "b3", &healthy);
    dir
}

/// The second hold-out, ViT-B/16 inference (fixtures/README.md): recorded
/// after the bert changes, judged before any change; one threshold moved
/// after it (workers count as saturated above 80 % of a core each, not 50:
/// a per-batch read-back was called input-bound while 3 workers used 61 %).
/// Its table does not fit the scoreboard's: with the throughput declared,
/// the read-back's -8.9 % is within three runs' spread (inconclusive), so
/// the counters stay gated, and GPU busy fails beyond its moderated band
/// with the sync named first (it passed with a warning before issue 17's
/// noise model, as it did with defaults); a foreign process that did not
/// slow the benchmark passes.
#[test]
fn the_vit_inference_hold_out() {
    let t = |n: &str| trace("vit-", n);
    let cases = [
        ("readback", "sync_stalls"),
        ("preprocess", "host_bound"),
        ("fp32", "tensor_cores_unused"),
        ("small-batch", "kernel_fragmentation"),
        ("contend-out", "gpu_contention"),
    ];
    let declared = throughput_without_wall_time();
    for config in [None, Some(declared.as_str())] {
        let dir = three_run_baseline(t, config);
        for h in ["healthy-4", "healthy-5"] {
            let o = check(dir.path(), "b3", &t(h));
            assert_eq!(o.exit, 0, "{h}: regressed {:?}", o.regressed);
            assert!(o.causes.is_empty(), "{h}: causes {:?}", o.causes);
        }
        for (name, rule) in cases {
            let o = check(dir.path(), "b3", &t(name));
            let declared = config.is_some();
            // Beside a neighbour outside the tree nothing the change owns
            // moved: a pass, disturbed (before issue 38: exit 1 with
            // defaults, on the neighbour's own counters).
            let want_exit = match name {
                "contend-out" => 0,
                _ => 1,
            };
            assert_eq!(
                o.exit, want_exit,
                "{name} (throughput declared: {declared}): regressed {:?}",
                o.regressed
            );
            if name == "contend-out" {
                assert!(disturbed_as_contracted(&o), "{name}: not disturbed");
            } else {
                assert_eq!(
                    o.top.as_deref(),
                    Some(rule),
                    "{name} (throughput declared: {declared})"
                );
            }
        }
    }
}

/// The third hold-out, GPT-2-medium decoding bound by kernel launches
/// (fixtures/README.md), judged before anything changed after it: the
/// verdicts as recorded. fp32 weights leave the speed unchanged (the GPU
/// still waits for the host) and pass; the per-token read-back (-5.2 %)
/// is inside the spread of a baseline with one 15 % slower healthy run
/// (exit 4 before the plug-in band of issue 17, now a pass).
#[test]
fn the_decode_hold_out() {
    let t = |n: &str| trace("decode-", n);
    let declared = throughput_without_wall_time();
    for config in [None, Some(declared.as_str())] {
        let dir = three_run_baseline(t, config);
        for (name, exit, top) in [
            ("healthy-4", 0, None),
            ("healthy-5", 0, None),
            ("fp32", 0, None),
            // -5.2 %, inside the spread the baseline measured (one healthy
            // run 15 % slower): no evidence of a change.
            ("stream", 0, None),
            ("batch4", 1, Some("kernel_fragmentation")),
            // Beside a neighbour outside the tree (-1.8 %, inside the
            // spread): disturbed, and a pass once the neighbour's own
            // counters are context (exit 1 before issue 38).
            ("contend-out", 0, None),
        ] {
            let o = check(dir.path(), "b3", &t(name));
            assert_eq!(o.disturbed, name == "contend-out", "decode-{name}");
            assert_eq!(
                (o.exit, o.top.as_deref()),
                (exit, top),
                "decode-{name} (throughput declared: {}): regressed {:?}",
                config.is_some(),
                o.regressed
            );
        }
    }
}

/// The fourth hold-out, DLRM-style recommender training (fixtures/README.md):
/// memory traffic and a 41 MB host-to-device copy a step. Judged before any
/// change, it had 2 of 5 causes first; then the starved-GPU rules took the
/// verdict's 1-pt floor for busy, `blocking_h2d_copy` told a pageable copy
/// from another sync by the bytes it moves, and wall time left start-up
/// out. With defaults, `sync` and `host-input` move no counter beyond its
/// 3 % floor and pass (misses, said so); with the throughput declared,
/// every pathology fails with its cause first.
#[test]
fn the_recsys_hold_out() {
    let t = |n: &str| trace("recsys-", n);
    let declared = throughput_without_wall_time();
    for config in [None, Some(declared.as_str())] {
        let dir = three_run_baseline(t, config);
        let defaults = config.is_none();
        for (name, top) in [
            ("healthy-4", None),
            ("healthy-5", None),
            ("unpinned", Some("blocking_h2d_copy")),
            ("fp32", Some("tensor_cores_unused")),
            ("contend-out", Some("gpu_contention")),
            ("sync", Some("sync_stalls")),
            ("host-input", Some("host_bound")),
        ] {
            // -3.3 and -1.6 %: with defaults no counter moves past its floor.
            let missed = defaults && matches!(name, "sync" | "host-input");
            let o = check(dir.path(), "b3", &t(name));
            if name == "contend-out" {
                // Disturbed (issue 38): with the throughput declared it fell
                // 2.0 % beside the neighbour (exit 3, the class first); with
                // defaults only the neighbour's own counters moved (exit 0).
                assert!(
                    disturbed_as_contracted(&o),
                    "recsys-{name}: exit {}",
                    o.exit
                );
                assert_eq!(o.exit, if defaults { 0 } else { 3 }, "recsys-{name}");
                continue;
            }
            let exit = if top.is_some() && !missed { 1 } else { 0 };
            assert_eq!(
                o.exit, exit,
                "recsys-{name} (throughput declared: {}): regressed {:?}",
                !defaults, o.regressed
            );
            if !missed {
                assert_eq!(
                    o.top.as_deref(),
                    top,
                    "recsys-{name} (throughput declared: {}): causes {:?}",
                    !defaults,
                    o.causes
                );
            }
        }
    }
}

/// The fifth hold-out, JAX training (fixtures/holdout-jax/README.md),
/// recorded on an H200 with GPM and again with `gate record --no-gpm`,
/// judged before any change (benchmarks/raw-output/2026-12-01-h200-holdout-jax/).
/// One lesson taken: a JIT recompiling every step spawns short-lived
/// compiler processes (target_processes.max 1 -> 8, median 1), which made
/// the recompile look like an input pipeline with GPM; input_bound now needs
/// worker processes alive most of the run (median >= 2). `small-batch` is
/// memory-bound, not fragmented: its SMs stay full (SM active per busy
/// second 0.94 -> 0.89, occupancy up) while DRAM rises 58 % (docs/rules.md).
/// With defaults `remat` passes in both modes (no counter moves: expected),
/// and `small-batch` passes without GPM (only tensor activity moved).
#[test]
fn the_jax_hold_out() {
    let declared = throughput_without_wall_time();
    for dir_name in ["gpm", "nogpm-recorded"] {
        let t = |n: &str| {
            PathBuf::from(format!(
                "{ROOT}/fixtures/holdout-jax/{dir_name}/jax-{n}.jsonl"
            ))
        };
        for config in [None, Some(declared.as_str())] {
            let dir = three_run_baseline(t, config);
            let defaults = config.is_none();
            for (name, top) in [
                ("healthy-4", None),
                ("fp32", Some("tensor_cores_unused")),
                ("hostsync", Some("sync_stalls")),
                ("recompile", Some("host_bound")),
                ("remat", Some("more_work_per_unit")),
                ("small-batch", Some("memory_bound")),
            ] {
                let missed =
                    defaults && (name == "remat" || (name == "small-batch" && dir_name != "gpm"));
                let o = check(dir.path(), "b3", &t(name));
                let exit = if top.is_some() && !missed { 1 } else { 0 };
                assert_eq!(
                    o.exit, exit,
                    "jax-{name} ({dir_name}, throughput declared: {}): regressed {:?}",
                    !defaults, o.regressed
                );
                if !missed {
                    assert_eq!(
                        o.top.as_deref(),
                        top,
                        "jax-{name} ({dir_name}, throughput declared: {}): causes {:?}",
                        !defaults,
                        o.causes
                    );
                }
            }
        }
    }
}

#[test]
fn an_improvement_is_never_given_a_cause() {
    // Reversed: each pathology as the baseline, a healthy run checked.
    for f in FAMILIES {
        let dir = project(None);
        for (name, want) in f.cases {
            if *want == Some(OUTSIDE_THE_TREE) {
                // A run beside a neighbour is refused as a baseline run
                // unless allowed (issue 38); allowed here, on purpose.
                gate(dir.path())
                    .args(["capture", "--baseline", "rev", "--replace"])
                    .args(["--allow-disturbed", "--replay"])
                    .arg(fixture(f, name))
                    .assert()
                    .success();
            } else {
                capture(dir.path(), "rev", &[fixture(f, name)]);
            }
            let o = check(dir.path(), "rev", &fixture(f, "healthy-3"));
            assert!(
                o.causes.is_empty(),
                "healthy-3 against {}{name}: causes {:?}",
                f.prefix,
                o.causes
            );
        }
    }
}

/// Recorded live on an H200 by `gate capture` (three runs, one of them
/// disturbed: GPU busy 91 % against 99.9 and 99.5) and `gate check
/// --confirm 1` of an 18 % per-step host sync: one run alone is within the
/// noisy baseline's band, two runs judged together are a regression, and
/// the diagnosis weighs the same pooled runs (fixtures/README.md, "Live").
#[test]
fn repeated_runs_are_judged_and_diagnosed_together() {
    let dir = project(Some(THROUGHPUT));
    let d = dir.path();
    let live = |n: &str| trace("live-cnn-", n);
    capture(d, "live", &[live("base-1"), live("base-2"), live("base-3")]);
    // One run: the throughput is inside the noisy baseline's band, and the
    // counters it leaves gated regress beyond theirs (the moderated
    // variance); two runs judged together make the throughput decide.
    let one = check(d, "live", &live("sync-1"));
    assert_eq!(one.exit, 1, "one run: {:?}", one.regressed);
    let out = gate(d)
        .args([
            "check",
            "--baseline",
            "live",
            "--format",
            "json",
            "--replay",
        ])
        .arg(live("sync-1"))
        .arg(live("sync-2"))
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(metric(&r, "samples_per_s")["verdict"], "regression");
    assert_eq!(
        r["diagnosis"][0]["rule"], "sync_stalls",
        "{}",
        r["diagnosis"]
    );
    assert_eq!(check(d, "live", &live("healthy")).exit, 0);
}

/// Round 5 (issue 39.2-39.4; fixtures/holdout-rawkernel and -ckpt, with
/// and without GPM): a hand-written kernel that became strided or
/// atomic-bound is latency-bound (without GPM only the atomic one: power
/// and memory-controller work per busy second collapse; the strided one's
/// over-fetch raises both and stays unexplained); gradient checkpointing
/// is more work per unit, ranked above the memory-shaped finding that also
/// fires; a pageable copy that appeared is a blocking copy, told from the
/// per-step sync by PCIe (GPM's, or NVML's counter without GPM). Throughput
/// declared, wall time off, baseline healthy-1..3.
#[test]
fn the_round5_hold_outs() {
    let declared = throughput_without_wall_time();
    let cases: &[(&str, &str, &str, Option<&str>)] = &[
        ("rawkernel", "gpm", "atomic", Some("latency_bound")),
        ("rawkernel", "gpm", "strided", Some("latency_bound")),
        (
            "rawkernel",
            "nogpm-recorded",
            "atomic",
            Some("latency_bound"),
        ),
        (
            "rawkernel",
            "nogpm-recorded",
            "strided",
            Some("unexplained"),
        ),
        ("rawkernel", "gpm", "healthy-4", None),
        ("ckpt", "gpm", "checkpoint", Some("more_work_per_unit")),
        (
            "ckpt",
            "nogpm-recorded",
            "checkpoint",
            Some("more_work_per_unit"),
        ),
        ("ckpt", "gpm", "sync", Some("sync_stalls")),
        ("ckpt", "nogpm-recorded", "sync", Some("sync_stalls")),
        ("ckpt", "gpm", "h2d-copy", Some("blocking_h2d_copy")),
        (
            "ckpt",
            "nogpm-recorded",
            "h2d-copy",
            Some("blocking_h2d_copy"),
        ),
        ("ckpt", "gpm", "healthy-4", None),
    ];
    for (family, mode, name, top) in cases {
        let t = |n: &str| {
            PathBuf::from(format!(
                "{ROOT}/fixtures/holdout-{family}/{mode}/{family}-{n}.jsonl"
            ))
        };
        let dir = three_run_baseline(t, Some(declared.as_str()));
        let o = check(dir.path(), "b3", &t(name));
        let first = o.causes.first().map(String::as_str);
        let got = if top == &Some("unexplained") {
            // `unexplained` is severity info: not among `causes`.
            o.top.as_deref()
        } else {
            first
        };
        assert_eq!(
            (o.exit, got),
            (if top.is_some() { 1 } else { 0 }, *top),
            "{family}-{name} ({mode}): causes {:?}, regressed {:?}",
            o.causes,
            o.regressed
        );
    }
}
