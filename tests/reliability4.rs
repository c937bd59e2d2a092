//! Issue 29 (Reliability 4) and issue 28.9's JUnit part: every reproduction
//! of the fourth hostile run, through the real binary on the recorded H200
//! fixtures and this repository's gate.toml and baselines. Each test failed
//! on the binary before the fix (gate 0.3.0 at 8dbd5be) and passes after it.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn fixture(name: &str) -> PathBuf {
    repo(&format!("fixtures/traces/{name}.jsonl"))
}

/// A checkout: this repository's gate.toml (plus `extra`) and baselines.
fn checkout(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let toml = std::fs::read_to_string(repo("gate.toml")).unwrap();
    std::fs::write(d.join("gate.toml"), format!("{toml}\n{extra}")).unwrap();
    std::fs::create_dir_all(d.join("baselines")).unwrap();
    for b in ["cnn-h200", "gpt-h200", "train-h200"] {
        std::fs::copy(
            repo(&format!("baselines/{b}.toml")),
            d.join(format!("baselines/{b}.toml")),
        )
        .unwrap();
    }
    dir
}

/// Every file under `dir` (recursively), as lossy text.
fn all_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(all_files(&p));
        } else if let Ok(b) = std::fs::read(&p) {
            out.push((p, String::from_utf8_lossy(&b).into_owned()));
        }
    }
    out
}

// ------------------------------------------------------------ 29.1 secrets

/// splitmix64: a fixed, seeded generator (the property is over the same
/// passwords on every run, so a failure reproduces).
struct Gen(u64);
impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// 8 to 23 characters: any printable ASCII (space included) and a
    /// few non-ASCII ones.
    fn password(&mut self) -> String {
        const EXTRA: [char; 4] = ['é', 'ß', '密', '🔑'];
        let len = 8 + (self.next() % 16) as usize;
        (0..len)
            .map(|_| match self.next() % 100 {
                0..=3 => EXTRA[(self.next() % 4) as usize],
                _ => char::from(0x20 + (self.next() % 95) as u8),
            })
            .collect()
    }
}

/// The hand-picked passwords of the report, then generated ones.
fn passwords() -> Vec<String> {
    let mut list: Vec<String> = [
        "Ab/Cd+Ef==",
        "p@ss/w?rd#1",
        "it's \\ \"q\" x",
        "my secret pw",
        "sl/ash?q@at#h",
        "ünïcødé-密码🔑",
        "a'b\\'c''d",
        "@@@@////????",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut g = Gen(29);
    list.extend((0..14).map(|_| g.password()));
    list
}

/// Every way `pw` may be written by an output: as is, and as each of
/// gate's escapers (JSON, XML, Markdown, HTML, terminal, GitHub) writes it.
fn forms(pw: &str) -> Vec<String> {
    use gpugate::escape;
    let json = serde_json::to_string(pw).unwrap();
    let mut f = vec![
        pw.to_string(),
        json[1..json.len() - 1].to_string(),
        escape::xml_text(pw),
        escape::xml_attr(pw),
        escape::markdown_text(pw),
        escape::markdown_code(pw),
        escape::html(pw),
        escape::terminal(pw),
        escape::github_data(pw),
    ];
    f.sort();
    f.dedup();
    f
}

fn percent_encoded(pw: &str) -> String {
    pw.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// libpq's quoting: a backslash before `\` and `'` (and, bare, white space).
fn libpq_escaped(pw: &str, bare: bool) -> String {
    let mut out = String::new();
    for c in pw.chars() {
        if c == '\\' || c == '\'' || (bare && c.is_whitespace()) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[test]
fn no_password_ever_reaches_any_output_of_a_failing_history() {
    let started = Instant::now();
    let dir = checkout("");
    let d = dir.path();
    let trace = fixture("cnn-healthy-1");
    for (i, pw) in passwords().iter().enumerate() {
        let locations = [
            format!("postgres://gate:{pw}@127.0.0.1:1/postgres"),
            format!(
                "postgres://gate:{}@127.0.0.1:1/postgres?sslmode=disable",
                percent_encoded(pw)
            ),
            format!(
                "host=127.0.0.1 port=1 user=gate password='{}' dbname=postgres",
                libpq_escaped(pw, false)
            ),
            format!("host=127.0.0.1 port=1 PASSWORD={}", libpq_escaped(pw, true)),
            format!(
                "postgresql://u@127.0.0.1:1/db?Password={}",
                percent_encoded(pw)
            ),
        ];
        for (j, location) in locations.iter().enumerate() {
            let run = d.join(format!("run-{i}-{j}"));
            std::fs::create_dir_all(&run).unwrap();
            let mut c = gate(d);
            c.args(["check", "--baseline", "cnn-h200", "--replay"])
                .arg(&trace)
                .arg("--history")
                .arg(location)
                .args(["--history-timeout", "2s"])
                .arg("--json")
                .arg(run.join("r.json"))
                .arg("--markdown")
                .arg(run.join("r.md"))
                .arg("--junit")
                .arg(run.join("j.xml"))
                .arg("--pr-comment")
                .arg(run.join("pr/c.md"))
                .env("GITHUB_ACTIONS", "true")
                .env("GITHUB_STEP_SUMMARY", run.join("summary.md"))
                .env("GITHUB_OUTPUT", run.join("output.txt"));
            if (i + j) % 2 == 0 {
                c.arg("--history-required");
            }
            let out = c.output().unwrap();
            // The listing path too: `gate history` on the same location.
            let listed = gate(d)
                .args(["history", "--history-timeout", "2s", "--history"])
                .arg(location)
                .output()
                .unwrap();
            let mut texts = vec![
                ("stdout".to_string(), output(&out).0),
                ("stderr".to_string(), output(&out).1),
                ("history stdout".to_string(), output(&listed).0),
                ("history stderr".to_string(), output(&listed).1),
            ];
            texts.extend(
                all_files(&run)
                    .into_iter()
                    .map(|(p, t)| (p.display().to_string(), t)),
            );
            assert!(
                texts.iter().any(|(_, t)| t.contains("history")),
                "the failing history is reported somewhere: {texts:?}"
            );
            for form in forms(pw) {
                for (what, text) in &texts {
                    assert!(
                        !text.contains(&form),
                        "password {pw:?} (as {form:?}) in {what} of --history {location:?}:\n{text}"
                    );
                }
            }
        }
    }
    eprintln!(
        "{} passwords x 5 locations in {:.1} s",
        passwords().len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_short_password_is_never_revealed_by_the_holes_of_a_redacted_message() {
    // "rver" is in "error connecting to server": replacing it by *** would
    // print "error connecting to se***" and so reveal it.
    let dir = checkout("");
    let d = dir.path();
    let out = check_replay(
        d,
        "cnn-h200",
        &["--history", "postgres://gate:rver@127.0.0.1:1/postgres"],
        fixture("cnn-healthy-1"),
    );
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        !stderr.contains("***rver") && !stderr.contains("se***"),
        "{stderr}"
    );
    assert!(
        stderr.contains("postgres://gate:***@127.0.0.1:1/postgres"),
        "{stderr}"
    );
}

// ------------------------------------------- 29.2 / 28.9 JUnit and ACCEPTED

const ACCEPT_15: &str = "[[accept]]\nbaseline = \"gpt-h200\"\nmetrics = [\"samples_per_s\"]\nmax_change_pct = 15\nreason = \"fp32 projections in block 3 for accuracy (#812)\"\n";

fn tensor_check(d: &Path, extra: &[&str]) -> Output {
    gate(d)
        .args(["check", "--baseline", "gpt-h200", "--junit", "j.xml"])
        .args(extra)
        .arg("--replay")
        .arg(fixture("gpt-tensor"))
        .env("GITHUB_ACTIONS", "true")
        .output()
        .unwrap()
}

#[test]
fn an_accepted_run_is_a_passing_testcase_that_says_so_and_no_error_annotation() {
    let dir = checkout("");
    let d = dir.path();
    std::fs::write(d.join("gate-accept.toml"), ACCEPT_15).unwrap();
    let out = tensor_check(d, &["--accept", "gate-accept.toml"]);
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_valid_junit(&d.join("j.xml"));
    let junit = std::fs::read_to_string(d.join("j.xml")).unwrap();
    assert!(
        junit.contains("failures=\"0\" errors=\"0\""),
        "an accepted run is no error: {junit}"
    );
    assert!(
        !junit.contains("<error") && !junit.contains("<failure"),
        "{junit}"
    );
    assert!(
        junit.contains("<property name=\"gate.accepted\" value=\"samples_per_s (gate-accept.toml entry 1: fp32 projections in block 3 for accuracy (#812))\"/>"),
        "{junit}"
    );
    let run_case = junit
        .split("<testcase ")
        .find(|c| c.contains("name=\"run verdict\""))
        .unwrap();
    assert!(
        run_case.contains("<system-out>ACCEPTED: 1 regression acknowledged by the change"),
        "{run_case}"
    );
    assert!(!stdout.contains("::error"), "{stdout}");
    assert!(
        stdout.contains("::warning title=gate%3A samples_per_s accepted::"),
        "{stdout}"
    );
}

#[test]
fn one_regression_is_exactly_one_junit_failure() {
    let dir = checkout("");
    let d = dir.path();
    let out = tensor_check(d, &[]);
    assert_eq!(out.status.code(), Some(1), "{:?}", output(&out));
    assert_valid_junit(&d.join("j.xml"));
    let junit = std::fs::read_to_string(d.join("j.xml")).unwrap();
    let gated_regressions = {
        let json = gate(d)
            .args([
                "check",
                "--baseline",
                "gpt-h200",
                "--format",
                "json",
                "--replay",
            ])
            .arg(fixture("gpt-tensor"))
            .output()
            .unwrap();
        let r: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        r["counts"]["regression"].as_u64().unwrap() as usize
    };
    assert_eq!(gated_regressions, 1);
    assert_eq!(junit.matches("<failure ").count(), 1, "{junit}");
    assert!(junit.contains(" failures=\"1\" errors=\"0\""), "{junit}");
    // The run's reasons and diagnosis are still there, as system-out.
    let run_case = junit
        .split("<testcase ")
        .find(|c| c.contains("name=\"run verdict\""))
        .unwrap();
    assert!(
        run_case.contains("<system-out>1 regression beyond"),
        "{run_case}"
    );
}

// ------------------------------------------- 29.3 / 29.4 suites and GitHub

/// A suite of `n` workloads, each the cnn fixture against its own copy of
/// the cnn baseline.
fn cnn_suite(n: usize) -> tempfile::TempDir {
    let mut toml = String::new();
    for i in 0..n {
        toml.push_str(&format!(
            "[[suite.workload]]\nname = \"w{i:03}\"\nbaseline = \"cnn-{i:03}\"\ncommand = [\"true\"]\n\n"
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = std::fs::read_to_string(repo("gate.toml")).unwrap();
    // This repository's suite is replaced by the test's.
    let base: String = base.split("[[suite.workload]]").next().unwrap().to_string();
    std::fs::write(d.join("gate.toml"), format!("{base}\n{toml}")).unwrap();
    std::fs::create_dir_all(d.join("baselines")).unwrap();
    let cnn = std::fs::read_to_string(repo("baselines/cnn-h200.toml")).unwrap();
    for i in 0..n {
        std::fs::write(
            d.join(format!("baselines/cnn-{i:03}.toml")),
            cnn.replace("name = \"cnn-h200\"", &format!("name = \"cnn-{i:03}\"")),
        )
        .unwrap();
    }
    dir
}

fn suite_check(d: &Path, n: usize, trace: &str, extra: &[&str], env: &[(&str, PathBuf)]) -> Output {
    let mut c = gate(d);
    c.args(["check", "--suite"]);
    for i in 0..n {
        c.arg("--suite-replay")
            .arg(format!("w{i:03}={}", fixture(trace).display()));
    }
    c.args(extra).env("GITHUB_ACTIONS", "true");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn a_suite_writes_the_same_github_outputs_as_one_check_capped_and_escaped() {
    let n = 12;
    let dir = cnn_suite(n);
    let d = dir.path();
    assert!(
        std::fs::read_to_string(d.join("baselines/cnn-003.toml"))
            .unwrap()
            .contains("name = \"cnn-003\""),
        "the baselines are renamed copies"
    );
    // Earlier steps filled the summary up to 100 bytes below GitHub's cap.
    let summary = d.join("summary.md");
    std::fs::write(&summary, "x".repeat(1024 * 1024 - 100)).unwrap();
    let outputs = d.join("output.txt");
    let out = suite_check(
        d,
        n,
        "cnn-sync",
        &[],
        &[
            ("GITHUB_STEP_SUMMARY", summary.clone()),
            ("GITHUB_OUTPUT", outputs.clone()),
        ],
    );
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let written = std::fs::read_to_string(&outputs).unwrap();
    assert!(
        written.starts_with("verdict=regression\nregressions="),
        "{written}"
    );
    assert!(std::fs::metadata(&summary).unwrap().len() <= 1024 * 1024);
    let annotations: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("::error") || l.starts_with("::warning"))
        .collect();
    assert_eq!(annotations.len(), 10, "{stdout}");
    assert!(
        annotations[0].starts_with("::error title=gate%3A w000%3A "),
        "{}",
        annotations[0]
    );
    assert!(
        annotations[9].contains("more regressions"),
        "{}",
        annotations[9]
    );
    assert!(annotations.iter().all(|a| !a[2..].contains("\n")));

    // With room, the whole suite summary goes in.
    std::fs::write(&summary, "").unwrap();
    let out = suite_check(
        d,
        2,
        "cnn-healthy-1",
        &["--workload", "w000", "--workload", "w001"],
        &[
            ("GITHUB_STEP_SUMMARY", summary.clone()),
            ("GITHUB_OUTPUT", outputs.clone()),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{:?}", output(&out));
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(
        text.starts_with("## gate suite: PASS (exit 0, worst of 2 workloads)"),
        "{text}"
    );
    let written = std::fs::read_to_string(&outputs).unwrap();
    assert!(
        written.ends_with("verdict=pass\nregressions=0\n"),
        "{written}"
    );
}

#[test]
fn a_suite_that_cannot_start_still_says_verdict_error() {
    let dir = cnn_suite(1);
    let d = dir.path();
    let outputs = d.join("output.txt");
    let out = gate(d)
        .args(["check", "--suite", "--workload", "nope"])
        .env("GITHUB_OUTPUT", &outputs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{:?}", output(&out));
    assert_eq!(
        std::fs::read_to_string(&outputs).unwrap(),
        "verdict=error\nregressions=0\n"
    );
}

#[test]
fn a_large_suites_pr_comment_is_capped_whole_and_counts_what_it_cut() {
    // 150 regressed workloads made 101,665 characters (GitHub takes 65,536).
    let n = 120;
    let dir = cnn_suite(n);
    let d = dir.path();
    let out = suite_check(d, n, "cnn-sync", &["--pr-comment", "pr/c.md"], &[]);
    assert_eq!(out.status.code(), Some(1), "{:?}", output(&out));
    let c = std::fs::read_to_string(d.join("pr/c.md")).unwrap();
    assert!(
        c.len() <= gpugate::limits::MAX_PR_COMMENT_BYTES,
        "{}",
        c.len()
    );
    assert_eq!(
        c.matches("<details").count(),
        c.matches("</details>").count(),
        "no <details> left open"
    );
    let shown = c.matches("<summary>workload <code>").count();
    let cut: usize = c
        .lines()
        .find_map(|l| l.strip_prefix("... "))
        .and_then(|l| l.split(' ').next())
        .map_or(0, |k| k.parse().unwrap());
    assert_eq!(shown + cut, n, "every workload is shown or counted:\n{c}");
    assert!(c.ends_with("<!-- gate-pr-comment:suite -->\n<!-- gate-changed:yes -->\n"));
}

// ------------------------------------------------------ 29.5 thread spawns

#[test]
fn a_failed_thread_spawn_degrades_to_fewer_threads_never_a_panic() {
    use std::os::unix::process::CommandExt;
    let dir = checkout("");
    let d = dir.path();
    // The child may run as nobody: everything it reads must be readable.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("gate"));
    c.current_dir(d)
        .args(["check", "--baseline", "cnn-h200", "--replay"])
        .arg(fixture("cnn-healthy-1"))
        .env("GATE_THREADS", "64")
        .env_remove("GITHUB_ACTIONS");
    // RLIMIT_NPROC binds an unprivileged user only, and counts every
    // process of that user: as root the child becomes nobody, and in a
    // user namespace of its own it counts only its own threads.
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(|| {
            let root = libc::geteuid() == 0;
            if root
                && (libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(65534) != 0
                    || libc::setuid(65534) != 0)
            {
                return Err(std::io::Error::last_os_error());
            }
            if libc::unshare(libc::CLONE_NEWUSER) != 0 && !root {
                return Err(std::io::Error::last_os_error());
            }
            // One task, gate's main thread: every spawn fails. A higher
            // limit was timing-dependent: workers that finish their items
            // before the next spawn never hold 8 tasks at once.
            let lim = libc::rlimit {
                rlim_cur: 1,
                rlim_max: 1,
            };
            if libc::setrlimit(libc::RLIMIT_NPROC, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = match c.output() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("SKIPPED: cannot run gate under a small RLIMIT_NPROC here (no user namespace for an unprivileged user: {e})");
            return;
        }
    };
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("VERDICT: PASS"), "{stdout}");
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("worker threads"))
        .collect();
    assert_eq!(warned.len(), 1, "one warning line: {stderr}");
    assert!(
        warned[0].starts_with("gate: warning: could start only "),
        "{stderr}"
    );
}

// ---------------------------------------------------- 29.6 trace names

#[test]
fn concurrent_runs_sharing_a_trace_dir_never_collide() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // All 24 started at once (a barrier), as parallel CI jobs on one
    // runner are: trace names by the millisecond collided (1 round in 3
    // before the fix on this repository's 2-core machine; 4 rounds here).
    for round in 1..=4 {
        concurrent_round(d, round);
    }
}

fn concurrent_round(d: &Path, round: usize) {
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(24));
    let threads: Vec<_> = (0..24)
        .map(|_| {
            let barrier = barrier.clone();
            let d = d.to_path_buf();
            std::thread::spawn(move || {
                let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("gate"));
                c.current_dir(&d)
                    .args([
                        "report",
                        "--no-gpu",
                        "--trace-dir",
                        "traces",
                        "--duration",
                        "2s",
                    ])
                    .args(["--", "sleep", "0.3"])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped());
                barrier.wait();
                c.output().unwrap()
            })
        })
        .collect();
    for t in threads {
        let out = t.join().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let names: Vec<String> = std::fs::read_dir(d.join("traces"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 24 * round, "{names:?}");
    assert!(names.iter().all(|n| n.ends_with("-1.jsonl")), "{names:?}");
}

// ------------------------------------------------------------- 29.7 SQLite

#[test]
fn an_sqlite_location_is_a_path_never_an_in_memory_uri() {
    let dir = checkout("");
    let d = dir.path();
    for name in ["file::memory:", ":memory:"] {
        let out = check_replay(
            d,
            "cnn-h200",
            &["--history", name, "--history-required"],
            fixture("cnn-healthy-1"),
        );
        assert_eq!(out.status.code(), Some(0), "{:?}", output(&out));
        // A real file of that name holds the run.
        assert!(d.join(name).is_file(), "{name}");
        let listed = gate(d)
            .args(["history", "--format", "json", "--history"])
            .arg(format!("sqlite:./{name}"))
            .output()
            .unwrap();
        let h: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
        assert_eq!(h["runs"].as_array().unwrap().len(), 1, "{name}: {h}");
    }
}

// ---------------------------------------------------- 29.8 git injection

#[test]
fn a_baseline_ref_never_reaches_git_as_an_option() {
    let dir = checkout("");
    let d = dir.path();
    assert!(std::process::Command::new("git")
        .current_dir(d)
        .args(["init", "-q"])
        .status()
        .unwrap()
        .success());
    let out = check_replay(
        d,
        "cnn-h200",
        &["--baseline-ref=--output=pwn"],
        fixture("cnn-healthy-1"),
    );
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!d.join("pwn").exists(), "git wrote a file");
    assert!(stderr.contains("is not a git ref"), "{stderr}");
}

// ------------------------------------------------- 29.9 history time-out

/// Hold SQLite's write lock on `db` until the returned child is killed.
fn lock_sqlite(db: &Path) -> std::process::Child {
    let mut child = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import sqlite3,sys,time\n\
             c=sqlite3.connect(sys.argv[1],isolation_level=None)\n\
             c.execute('BEGIN EXCLUSIVE')\n\
             print('locked',flush=True)\n\
             time.sleep(120)\n",
        )
        .arg(db)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "locked");
    child
}

#[test]
fn history_timeout_bounds_a_locked_sqlite_store_and_a_suite_pays_it_once() {
    let dir = cnn_suite(3);
    let d = dir.path();
    // A store with its schema, then locked by another process.
    let out = suite_check(
        d,
        1,
        "cnn-healthy-1",
        &["--workload", "w000", "--history", "h.sqlite"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{:?}", output(&out));
    let mut lock = lock_sqlite(&d.join("h.sqlite"));
    let t = Instant::now();
    let one = check_replay(
        d,
        "cnn-000",
        &["--history", "h.sqlite", "--history-timeout", "2s"],
        fixture("cnn-healthy-1"),
    );
    let single = t.elapsed();
    let t = Instant::now();
    let suite = suite_check(
        d,
        3,
        "cnn-healthy-1",
        &["--history", "h.sqlite", "--history-timeout", "2s"],
        &[],
    );
    let whole = t.elapsed();
    lock.kill().unwrap();
    lock.wait().unwrap();
    let (_, stderr) = output(&one);
    assert_eq!(one.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("database is locked"), "{stderr}");
    assert!(
        single < Duration::from_secs(8),
        "one check took {single:?} with a 2 s time-out"
    );
    let (_, stderr) = output(&suite);
    assert_eq!(suite.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("not tried again"), "{stderr}");
    assert!(
        whole < single + Duration::from_secs(5),
        "the suite paid the locked store per workload: {whole:?} (one check {single:?})"
    );
}

// ------------------------------------------------ 29.10 bounded warnings

/// A trace of `sig` whose embedded metrics file is `text`.
fn trace_with_metrics_file(dir: &Path, name: &str, seed: u64, text: &str) -> PathBuf {
    let path = trace(dir, name, &healthy(seed));
    let body = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = body.lines().map(str::to_string).collect();
    let last = lines.len() - 1;
    let mut end: serde_json::Value = serde_json::from_str(&lines[last]).unwrap();
    end["metrics_file"] = text.into();
    lines[last] = end.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn pytest_file(names: impl Iterator<Item = String>) -> String {
    let list: Vec<serde_json::Value> = names
        .map(|n| serde_json::json!({"name": n, "fullname": format!("t.py::{n}"), "stats": {"mean": 0.5}}))
        .collect();
    serde_json::json!({ "benchmarks": list }).to_string()
}

#[test]
fn a_readers_warning_is_bounded_in_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("gate.toml"),
        "[user_metrics.step_s]\nsource = \"metrics_file\"\nformat = \"pytest_benchmark\"\nbenchmark = \"test_step\"\nstat = \"mean\"\ndirection = \"lower_is_better\"\nunit = \"s\"\n",
    )
    .unwrap();
    let good = pytest_file(["test_step".to_string()].into_iter());
    let a = trace_with_metrics_file(d, "a", 1, &good);
    let b = trace_with_metrics_file(d, "b", 2, &good);
    let out = gate(d)
        .args(["capture", "--baseline", "b", "--replay"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", output(&out));
    let many = pytest_file((0..12_000).map(|i| format!("test_case_number_{i:05}")));
    let c = trace_with_metrics_file(d, "c", 3, &many);
    let out = gate(d)
        .args([
            "check",
            "--baseline",
            "b",
            "--json",
            "r.json",
            "--markdown",
            "r.md",
            "--replay",
        ])
        .arg(&c)
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert!(
        stdout.contains("is not in the pytest-benchmark file"),
        "{stdout}{stderr}"
    );
    for (what, text) in [
        ("stdout", stdout.clone()),
        ("json", std::fs::read_to_string(d.join("r.json")).unwrap()),
        ("markdown", std::fs::read_to_string(d.join("r.md")).unwrap()),
    ] {
        assert!(text.len() < 64 * 1024, "{what}: {} bytes", text.len());
        assert!(!text.contains("test_case_number_11999"), "{what}");
    }
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    for w in r["warnings"].as_array().unwrap() {
        assert!(w.as_str().unwrap().len() <= 1100, "{w}");
    }
}

// ------------------------------------------- 29.11 one file, two outputs

#[test]
fn two_outputs_naming_one_file_are_refused_before_anything_runs() {
    let dir = checkout("");
    let d = dir.path();
    for (a, b) in [
        ("o.txt", "o.txt"),
        ("o.txt", "./o.txt"),
        ("sub/../o.txt", "o.txt"),
    ] {
        std::fs::create_dir_all(d.join("sub")).unwrap();
        let out = check_replay(
            d,
            "cnn-h200",
            &["--json", a, "--markdown", b],
            fixture("cnn-healthy-1"),
        );
        let (_, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(2), "{a} {b}: {stderr}");
        assert!(stderr.contains("one would replace the other"), "{stderr}");
        assert!(!d.join("o.txt").exists());
    }
    let out = gate(d)
        .args([
            "check",
            "--baseline",
            "cnn-h200",
            "--markdown",
            "s.md",
            "--replay",
        ])
        .arg(fixture("cnn-healthy-1"))
        .env("GITHUB_STEP_SUMMARY", d.join("s.md"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{:?}", output(&out));
}

// ------------------------------------------------------- 29.12 SIGXFSZ

#[test]
fn a_file_size_limit_is_a_clean_error_not_sigxfsz() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let dir = checkout("");
    let d = dir.path();
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("gate"));
    c.current_dir(d)
        .args([
            "check",
            "--baseline",
            "cnn-h200",
            "--json",
            "big.json",
            "--replay",
        ])
        .arg(fixture("cnn-healthy-1"));
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 4096,
                rlim_max: 4096,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = c.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), None, "killed: {stderr}");
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    let last = stderr.lines().last().unwrap_or("");
    assert!(
        last.starts_with("gate: error: cannot write the --json report")
            && last.contains("too large"),
        "{stderr}"
    );
    assert!(!d.join("big.json").exists(), "no partial report");
}

// ---------------------------------------------- 29.13 / 29.14 / 29.16 readers

#[test]
fn loadgen_invalid_is_matched_in_any_case_and_spacing() {
    use gpugate::metric_sources::Reader;
    let r = Reader::MlperfSummary {
        field: "Samples per second".into(),
    };
    for line in [
        "Result is : INVALID",
        "result  is : INVALID",
        "RESULT IS :   invalid ",
    ] {
        let text = format!("Samples per second : 100.5\n{line}\n");
        let got = r.read_file(&text);
        assert!(got.invalid.is_some(), "{line:?} passed as valid");
    }
    let valid = r.read_file("Samples per second : 100.5\nresult is : valid\n");
    assert_eq!(valid.invalid, None);
}

#[test]
fn a_negative_time_is_invalid_never_an_improvement() {
    use gpugate::metric_sources::Reader;
    let r = Reader::PytestBenchmark {
        benchmark: "test_step".into(),
        stat: "mean".into(),
    };
    let got = r.read_file(r#"{"benchmarks":[{"name":"test_step","stats":{"mean":-0.2}}]}"#);
    assert!(got.values.is_empty(), "{got:?}");
    assert!(got.invalid.unwrap().contains("negative"));
    // End to end, a stdout reading in seconds.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("gate.toml"),
        "[user_metrics.wall]\nregex = 'throughput_samples_per_s=([0-9.eE+-]+)'\nsource = \"metrics_file\"\ndirection = \"lower_is_better\"\nunit = \"s\"\n",
    )
    .unwrap();
    let a = trace_with_metrics_file(d, "a", 1, "throughput_samples_per_s=120\n");
    let b = trace_with_metrics_file(d, "b", 2, "throughput_samples_per_s=121\n");
    let out = gate(d)
        .args(["capture", "--baseline", "b", "--replay"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", output(&out));
    let c = trace_with_metrics_file(d, "c", 3, "throughput_samples_per_s=-1920\n");
    let out = check_replay(d, "b", &[], &c);
    let (stdout, stderr) = output(&out);
    assert_ne!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("never negative"), "{stdout}");
}

#[test]
fn duplicate_pytest_benchmark_names_are_warned_about() {
    use gpugate::metric_sources::Reader;
    let r = Reader::PytestBenchmark {
        benchmark: "test_a".into(),
        stat: "mean".into(),
    };
    let got = r.read_file(
        r#"{"benchmarks":[{"name":"test_a","fullname":"x.py::test_a","stats":{"mean":1}},{"name":"test_a","fullname":"y.py::test_a","stats":{"mean":2}}]}"#,
    );
    assert_eq!(got.values, vec![1.0]);
    assert!(got.problem.unwrap().text.contains("appears 2 times"));
}

#[test]
fn an_upper_case_commit_in_an_accept_entry_matches() {
    let dir = checkout("");
    let d = dir.path();
    std::fs::write(
        d.join("gate-accept.toml"),
        format!("{ACCEPT_15}commit = \"ABCDEF0\"\n"),
    )
    .unwrap();
    let out = gate(d)
        .args([
            "check",
            "--baseline",
            "gpt-h200",
            "--accept",
            "gate-accept.toml",
            "--replay",
        ])
        .arg(fixture("gpt-tensor"))
        .env("GITHUB_SHA", "abcdef0123456789abcdef0123456789abcdef01")
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("VERDICT: ACCEPTED"), "{stdout}");
}

#[test]
fn a_metrics_file_is_never_read_from_proc() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = gate(d)
        .args([
            "report",
            "--no-gpu",
            "--trace-dir",
            "t",
            "--metrics-file",
            "m.json",
        ])
        .args(["--", "ln", "-s", "/proc/self/environ", "m.json"])
        .env("GATE_TEST_SECRET", "hunter2-ci-token")
        .output()
        .unwrap();
    let (stdout, stderr) = output(&out);
    assert!(out.status.code().is_some(), "{stderr}");
    for (p, text) in all_files(d) {
        assert!(!text.contains("hunter2-ci-token"), "{}", p.display());
    }
    assert!(!stdout.contains("hunter2") && !stderr.contains("hunter2"));
}

#[test]
fn a_long_name_is_refused_for_its_length() {
    let dir = checkout("");
    let d = dir.path();
    let name = "a".repeat(200);
    let out = check_replay(d, &name, &[], fixture("cnn-healthy-1"));
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is 200 characters long; at most 128"),
        "{stderr}"
    );
    let toml =
        format!("[[suite.workload]]\nname = \"{name}\"\nbaseline = \"b\"\ncommand = [\"true\"]\n");
    std::fs::write(d.join("gate.toml"), toml).unwrap();
    let out = gate(d).args(["check", "--suite"]).output().unwrap();
    let (_, stderr) = output(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is 200 characters long"), "{stderr}");
}

#[test]
fn watch_replay_of_a_zst_missing_its_checksum_fails_like_check() {
    let dir = checkout("");
    let d = dir.path();
    let plain = std::fs::read(fixture("cnn-healthy-1")).unwrap();
    // As the zstd tool writes it (with the frame's checksum), then cut
    // by those last 4 bytes: every line decodes, the frame never ends.
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    enc.include_checksum(true).unwrap();
    std::io::Write::write_all(&mut enc, &plain).unwrap();
    let zst = enc.finish().unwrap();
    let cut = d.join("cut.jsonl.zst");
    std::fs::write(&cut, &zst[..zst.len() - 4]).unwrap();
    let check = check_replay(d, "cnn-h200", &[], &cut);
    assert_eq!(check.status.code(), Some(3), "{:?}", output(&check));
    let watch = gate(d)
        .args(["watch", "--replay"])
        .arg(&cut)
        .output()
        .unwrap();
    let (_, stderr) = output(&watch);
    assert_eq!(watch.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("is truncated"), "{stderr}");
}

#[test]
fn a_damaged_zst_says_where_it_breaks() {
    let dir = checkout("");
    let d = dir.path();
    let plain = std::fs::read(fixture("cnn-healthy-1")).unwrap();
    // Several frames (as gate's writer flushes them): damage the last one.
    let mut zst = Vec::new();
    for part in plain.chunks(plain.len() / 4 + 1) {
        zst.extend(zstd::stream::encode_all(part, 3).unwrap());
    }
    let at = zst.len() - 200;
    for b in &mut zst[at..at + 50] {
        *b ^= 0x55;
    }
    let bad = d.join("bad.jsonl.zst");
    std::fs::write(&bad, &zst).unwrap();
    for args in [vec!["report"], vec!["watch", "--replay"]] {
        let out = gate(d).args(&args).arg(&bad).output().unwrap();
        let (_, stderr) = output(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        let line: usize = stderr
            .split(": line ")
            .nth(1)
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(
            line > 1,
            "{args:?}: the line reached, not always 1: {stderr}"
        );
        assert!(
            stderr.contains("past compressed byte ")
                && stderr.contains(&format!("of {}", zst.len())),
            "{args:?}: {stderr}"
        );
    }
}
