//! Fuzzing the parsers on stable Rust, inside `cargo test`:
//! - every file of the committed corpus (`fuzz/corpus/<target>/`) and of
//!   the crash inputs found so far (`fuzz/regressions/<target>/`) runs
//!   through its target (`gpugate::fuzz_targets`): a crash found once stays
//!   fixed;
//! - a bounded mutation campaign per target: seeded, so a failure repeats;
//!   `GATE_FUZZ_SECONDS` (default 2) is each target's time budget (CI runs
//!   15 s each, see .ci/run), `GATE_FUZZ_SEED` picks another sequence.
//!
//! The mutator knows each format's troublemakers (1e308, nan, deep
//! nesting, records after the end, huge repeats). A failing input is saved
//! under `target/fuzz-crashes/` with the command to keep it as a regression.
//! Coverage-guided campaigns (cargo-fuzz, nightly) use the same targets:
//! see `fuzz/README.md`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

type Target = fn(&[u8]);

struct Spec {
    name: &'static str,
    run: Target,
    /// Tokens worth inserting: what broke gate before, and the syntax.
    dictionary: &'static [&'static str],
}

const TARGETS: &[Spec] = &[
    Spec {
        name: "trace",
        run: gpugate::fuzz_targets::trace,
        dictionary: &[
            "1e308", "-1", "1e13", "NaN", "null", "-0", "1e-320", "18446744073709551616",
            "{\"type\":\"end\",\"t\":5,\"samples\":1,\"late_samples\":0,\"exit_code\":0,\"target_wall_s\":1,\"reason\":\"target_exited\"}\n",
            "{\"type\":\"sample\",\"t\":0,\"g\":[[1]],\"h\":[]}\n",
            "{\"type\":\"output\",\"t\":1,\"line\":\"x\"}\n",
            "{\"type\":\"event\",\"t\":2,\"kind\":\"xid\",\"code\":79}\n",
            "\"target_gpus\":[0,1,7]", "\"w\":true", "\n", "\\u0000", "\u{1b}[31m", "\"", "[", "]",
        ],
    },
    Spec {
        name: "baseline",
        run: gpugate::fuzz_targets::baseline,
        dictionary: &[
            "1e308", "nan", "inf", "-inf", "-1000.0", "-5", "0.0", "1e15", "1e16",
            "\n[metrics.x]\n", "\n[gpus.gpu0]\nindex = 0\nname = \"x\"\n", "runs = []\n",
            "ci95 = -1.0, ", "statistic = \"p99\"\n", "direction = \"lower_is_better\"\n",
            "gated = false\n", "\"\"\"", "'", "\\u001b", "=", "\n",
        ],
    },
    Spec {
        name: "config",
        run: gpugate::fuzz_targets::config,
        dictionary: &[
            "inf", "nan", "-5.0", "1e308", "11.0", "\n[metrics.power_w]\nenabled = true\n",
            "\n[user_metrics.u]\nregex = '(x)'\ndirection = \"higher_is_better\"\n",
            "regex = '((((((((((x))))))))))'\n", "regex = '(a*)*b'\n",
            "\n[rules.r]\nwhen = \"gpu_count > 1\"\n", "when = \"((((((((((((((((", "))))",
            "explanation = \"{gpu_busy_pct.mean\"\n", "evidence = [\"x\"]\n", "severity = \"high\"\n",
            "\"", "\n",
        ],
    },
    Spec {
        name: "rule",
        run: gpugate::fuzz_targets::rule,
        dictionary: &[
            "(", ")", " and ", " or ", "not ", "-", "/ 0", "* 1e308", "1e308", "1e-320", ".",
            "gpu_min(", "gpu_max(", "spread(", "coalesce(", "known(", "abs(", ",", " < ", " == ",
            "gpu_count", "sm_active_pct.mean", "gpu_busy_pct.idle_frac", "\u{0}", "é",
        ],
    },
    Spec {
        name: "history_location",
        run: gpugate::fuzz_targets::history_location,
        dictionary: &[
            "postgres://", "postgresql://", "@", ":", "/", "?", "#", "&", "=", "'", "\\", " ",
            "%40", "%2F", "password=", "PASSWORD=", "sslpassword=", "Pass%77ord=", "host=h ",
            "user=u ", "port=1 ", "dbname=d ", "sqlite:", "file::memory:", "é", "\u{0}",
        ],
    },
    Spec {
        name: "metrics_file",
        run: gpugate::fuzz_targets::metrics_file,
        dictionary: &[
            "3e7", "1e22", "1e308", "1.7976931348623157e308", "-0", "0", "1e-300", "5e-324",
            "NaN", "\"rounds\": ", "\"repetitions\": ", "\"nv/cold/sample_size\"",
            "\"stddev\": ", "\"real_time\": ", "\"aggregate_name\": \"mean\"",
            "\"run_type\": \"aggregate\"", "\"time_unit\": \"s\"", "{", "}", "[", "]", ",",
            "\"", ":",
        ],
    },
    Spec {
        name: "mountinfo",
        run: gpugate::fuzz_targets::mountinfo,
        dictionary: &[
            " - cgroup2 cgroup2 rw\n", "\\040", "\\134", "\\0", "\\", "0::/", "0::",
            "/sys/fs/cgroup", " ", "\n", "\u{0}", "/..", "é",
        ],
    },
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    out.retain(|p| p.file_name().is_some_and(|n| n != ".gitkeep"));
    out.sort();
    out
}

thread_local! {
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Panic messages silenced on the thread that holds this, and only there.
/// The panic hook is global to the test binary: a campaign that replaced it
/// with a silent one (as this file did) silenced every other test's failure
/// while it ran, and two campaigns that took and restored it in turn could
/// leave it silent for good: a test that failed under load then printed
/// nothing at all (issue 40).
struct QuietPanics;

impl QuietPanics {
    fn on_this_thread() -> QuietPanics {
        static INSTALL: std::sync::Once = std::sync::Once::new();
        INSTALL.call_once(|| {
            let default = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if !QUIET.with(|q| q.get()) {
                    default(info);
                }
            }));
        });
        QUIET.with(|q| q.set(true));
        QuietPanics
    }
}

impl Drop for QuietPanics {
    fn drop(&mut self) {
        QUIET.with(|q| q.set(false));
    }
}

/// Run by `a_failing_test_prints_why_while_a_campaign_runs` in a child
/// process: a test thread fails while another thread's campaign silences
/// its own panics.
#[test]
#[ignore = "run by a_failing_test_prints_why_while_a_campaign_runs"]
fn fails_beside_a_quiet_campaign() {
    let (release, held) = std::sync::mpsc::channel::<()>();
    let (ready, wait) = std::sync::mpsc::channel::<()>();
    let campaign = std::thread::spawn(move || {
        let _quiet = QuietPanics::on_this_thread();
        let _ = catch_unwind(|| panic!("a fuzz input's panic, silenced"));
        ready.send(()).unwrap();
        let _ = held.recv();
    });
    wait.recv().unwrap();
    let failed = std::thread::spawn(|| panic!("the reason this test failed")).join();
    release.send(()).unwrap();
    campaign.join().unwrap();
    assert!(failed.is_err());
}

#[test]
fn a_failing_test_prints_why_while_a_campaign_runs() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "--nocapture",
            "fuzz_parsers::fails_beside_a_quiet_campaign",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("the reason this test failed"), "{err}");
    assert!(!err.contains("silenced"), "{err}");
}

/// Run `target` on `input`; a panic becomes Err with its message.
fn attempt(target: Target, input: &[u8]) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| target(input))).map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into())
    })
}

#[test]
fn committed_corpus_and_crash_inputs_run_cleanly() {
    let mut ran = 0;
    for spec in TARGETS {
        let corpus = files_in(&root().join("fuzz/corpus").join(spec.name));
        assert!(!corpus.is_empty(), "no corpus for {}", spec.name);
        let crashes = files_in(&root().join("fuzz/regressions").join(spec.name));
        for path in corpus.iter().chain(crashes.iter()) {
            let input = std::fs::read(path).unwrap();
            if let Err(msg) = attempt(spec.run, &input) {
                panic!("{} crashes on {}: {msg}", spec.name, path.display());
            }
            ran += 1;
        }
    }
    assert!(ran >= 20, "only {ran} inputs");
}

/// xorshift64*: small, seeded, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// One to four random edits of `input`.
fn mutate(rng: &mut Rng, input: &[u8], spec: &Spec, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(9) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = b"\x00\n\r\"'\\{}[]=,.-+0123456789eE \x1b\x7f\xff"[rng.below(31)];
            }
            2 | 3 => {
                let tok = spec.dictionary[rng.below(spec.dictionary.len())];
                out.splice(at..at, tok.bytes());
            }
            4 if !out.is_empty() => {
                let end = (at + 1 + rng.below(64)).min(out.len());
                out.drain(at.min(end)..end);
            }
            5 => out.truncate(at),
            6 if !out.is_empty() => {
                // Repeat a chunk many times: nesting, long lines, big tables.
                let start = rng.below(out.len());
                let end = (start + 1 + rng.below(16)).min(out.len());
                let chunk = out[start..end].to_vec();
                let times = [2, 10, 100, 5000][rng.below(4)];
                let rep: Vec<u8> = chunk
                    .iter()
                    .copied()
                    .cycle()
                    .take(chunk.len() * times)
                    .collect();
                out.splice(start..start, rep);
            }
            7 => {
                // Splice with another corpus entry.
                let other = &corpus[rng.below(corpus.len())];
                let from = rng.below(other.len() + 1);
                out.truncate(at);
                out.extend_from_slice(&other[from..]);
            }
            _ if !out.is_empty() => {
                // Swap two lines' worth of bytes around a newline.
                if let Some(nl) = out[at.min(out.len() - 1)..]
                    .iter()
                    .position(|&b| b == b'\n')
                {
                    let cut = (at.min(out.len() - 1) + nl + 1).min(out.len());
                    out.rotate_left(cut);
                }
            }
            _ => {}
        }
        // Keep inputs to a size that iterates quickly.
        out.truncate(256 * 1024);
    }
    out
}

fn budget() -> Duration {
    let secs: f64 = std::env::var("GATE_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    Duration::from_secs_f64(secs)
}

fn campaign(name: &str) {
    let spec = TARGETS.iter().find(|s| s.name == name).unwrap();
    let mut corpus: Vec<Vec<u8>> = files_in(&root().join("fuzz/corpus").join(name))
        .iter()
        .chain(files_in(&root().join("fuzz/regressions").join(name)).iter())
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let seed: u64 = std::env::var("GATE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15);
    let mut rng = Rng(seed ^ name.len() as u64 ^ 0xA5A5);
    let deadline = Instant::now() + budget();
    let mut runs = 0u64;
    // Silence the panic message per iteration, on this thread only; the
    // failure below reports the one that matters.
    let quiet = QuietPanics::on_this_thread();
    let mut failure = None;
    while Instant::now() < deadline || runs < 20 {
        let base = corpus[rng.below(corpus.len())].clone();
        let input = mutate(&mut rng, &base, spec, &corpus);
        runs += 1;
        if let Err(msg) = attempt(spec.run, &input) {
            failure = Some((input, msg));
            break;
        }
        // Keep some mutants as new bases: a cheap stand-in for coverage.
        if corpus.len() < 200 && rng.below(16) == 0 {
            corpus.push(input);
        }
    }
    drop(quiet);
    if let Some((input, msg)) = failure {
        let dir = root().join("target/fuzz-crashes");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}-{seed:x}-{runs}"));
        std::fs::write(&path, &input).unwrap();
        panic!(
            "fuzz target '{name}' failed after {runs} inputs: {msg}\ninput saved to {}; fix it, then keep it: cp {} fuzz/regressions/{name}/",
            path.display(),
            path.display()
        );
    }
    eprintln!("fuzz {name}: {runs} inputs in {:?}, no failure", budget());
}

#[test]
fn fuzz_trace_reader() {
    campaign("trace");
}

#[test]
fn fuzz_baseline_loader() {
    campaign("baseline");
}

#[test]
fn fuzz_gate_toml() {
    campaign("config");
}

#[test]
fn fuzz_rule_conditions() {
    campaign("rule");
}

#[test]
fn fuzz_history_locations() {
    campaign("history_location");
}

#[test]
fn fuzz_metrics_files() {
    campaign("metrics_file");
}

#[test]
fn fuzz_cgroup_mount_table() {
    campaign("mountinfo");
}
