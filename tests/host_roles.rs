//! Host activity per role (main process, workers, outside the tree) and
//! where the tree's counters come from (a cgroup of gate's own, or
//! `/proc`), through the real binary on this machine (`--no-gpu`: the
//! main process is the tree's root).

use assert_cmd::Command;
use gpugate::metrics::ROLE_METRIC_IDS;
use gpugate::trace::{StopReason, Trace};
use std::path::Path;

fn gate() -> Command {
    Command::cargo_bin("gate").unwrap()
}

/// The tests that spin processes run one at a time: on a 2-core machine
/// each would otherwise take the others' CPU.
static SPINNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    SPINNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Mean of a host column over the steady samples that have a value.
fn host_mean(t: &Trace, id: &str) -> Option<f64> {
    let col = t.host_column(id)?;
    let vals: Vec<f64> = (0..t.sample_count())
        .filter(|&i| !t.warmup[i])
        .map(|i| t.host_value(i, col) as f64)
        .filter(|v| v.is_finite())
        .collect();
    (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
}

fn host_max(t: &Trace, id: &str) -> Option<f64> {
    let col = t.host_column(id)?;
    (0..t.sample_count())
        .map(|i| t.host_value(i, col) as f64)
        .filter(|v| v.is_finite())
        .reduce(f64::max)
}

/// A Python main that forks two spinning children and waits for them.
const MAIN_WITH_BUSY_CHILDREN: &str = "import os, time
kids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        t = time.time()
        while time.time() - t < 3.2:
            pass
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
print('done')
";

#[test]
fn a_recorded_main_with_busy_children_has_its_cpu_under_workers() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("roles.jsonl");
    // Warm-up past the first tree refresh (1 s): the children count from
    // their second host sample. The per-process path, where the roles are
    // read at every sample with the tree's total (the cgroup path is
    // compared with it below).
    gate()
        .env("GATE_CGROUP", "0")
        .args(["record", "--no-gpu", "--warmup", "1300ms", "-o"])
        .arg(&out)
        .args(["--", "python3", "-c", MAIN_WITH_BUSY_CHILDREN])
        .assert()
        .success();
    let t = Trace::load(&out).unwrap();
    assert_eq!(
        host_path(&t),
        "host counters: per process from /proc (GATE_CGROUP=0)"
    );
    for id in ROLE_METRIC_IDS {
        assert!(
            t.host_column(id).is_some(),
            "{id} not in {:?}",
            t.header.host_columns
        );
    }
    assert_eq!(host_max(&t, "workers"), Some(2.0));
    let workers_cpu = host_mean(&t, "workers_cpu_pct").unwrap();
    let main_cpu = host_mean(&t, "main_cpu_pct").unwrap();
    // What two spinners get depends on the machine's load (on this 2-core
    // machine shared by five builds, from a twentieth of a core up); the
    // waiting main gets next to nothing; the tree's CPU is the two roles'.
    let tree_cpu = host_mean(&t, "target_cpu_pct").unwrap();
    assert!(
        workers_cpu > 10.0 && main_cpu < 10.0 && workers_cpu > 5.0 * main_cpu,
        "workers {workers_cpu} %, main {main_cpu} %"
    );
    assert!(
        (tree_cpu - workers_cpu - main_cpu).abs() < 0.1 * tree_cpu + 5.0,
        "tree {tree_cpu} % vs main {main_cpu} % + workers {workers_cpu} %"
    );
    // The mean worker's share, sample by sample (trace values keep 4
    // significant digits).
    let col = |id: &str| t.host_column(id).unwrap();
    let (n, cpu, busy) = (
        col("workers"),
        col("workers_cpu_pct"),
        col("workers_busy_pct"),
    );
    let mut checked = 0;
    for i in 0..t.sample_count() {
        let (n, cpu, busy) = (
            t.host_value(i, n),
            t.host_value(i, cpu),
            t.host_value(i, busy),
        );
        if n > 0.0 && cpu.is_finite() {
            assert!(
                (busy - cpu / n).abs() <= 1e-3 * cpu.max(1.0),
                "{busy} vs {cpu} / {n}"
            );
            checked += 1;
        } else {
            assert!(!busy.is_finite() || n > 0.0, "{busy} with {n} workers");
        }
    }
    assert!(checked > 10, "{checked} samples with workers");
    for id in [
        "main_vol_ctx_switches_per_s",
        "workers_ctx_switches_per_s",
        "outside_cpu_pct",
    ] {
        assert!(host_mean(&t, id).is_some(), "{id} has no value");
    }
    // The run summary (what `check`, `report` and the features read)
    // holds them like every host metric.
    let run = gpugate::summary::summarize(&t);
    let stats = &run.host["workers_cpu_pct"];
    assert!((stats.mean - workers_cpu).abs() < 1e-3, "{stats:?}");
    assert!(
        run.host.contains_key("outside_cpu_pct"),
        "{:?}",
        run.host.keys()
    );
}

#[test]
fn every_committed_trace_loads_and_reads_the_role_columns_as_missing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut loaded = 0;
    for dir in ["fixtures/traces", "tests/data"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            let path = entry.path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !(name.ends_with(".jsonl") || name.ends_with(".jsonl.zst")) {
                continue;
            }
            let t = Trace::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            for id in ROLE_METRIC_IDS {
                if let Some(col) = t.host_column(id) {
                    // A trace recorded with them (none committed before).
                    assert_eq!(t.header.host_columns[col], *id);
                } else {
                    assert!(host_mean(&t, id).is_none());
                }
            }
            loaded += 1;
        }
    }
    assert!(loaded > 20, "only {loaded} committed traces found");
}

/// The host-counter path a trace says it took (its "host counters:" note).
fn host_path(t: &Trace) -> String {
    t.events
        .iter()
        .map(|e| e.message.as_str())
        .find(|m| m.starts_with("host counters:"))
        .unwrap_or_else(|| panic!("no host counters note in {:?}", t.events))
        .to_string()
}

/// gate's own cgroup v2 directory, as gate finds it (None: no cgroup v2).
fn own_cgroup_dir() -> Option<std::path::PathBuf> {
    gpugate::sampler::cgroup::own_cgroup_dir(
        &std::fs::read_to_string("/proc/self/cgroup").ok()?,
        &std::fs::read_to_string("/proc/self/mountinfo").ok()?,
    )
    .ok()
}

/// Directories a gate process with PID `pid` left in the cgroup tree.
fn cgroups_left_by(pid: u32) -> Vec<String> {
    let Some(dir) = own_cgroup_dir() else {
        return Vec::new();
    };
    let prefix = format!("gate-{pid}-");
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// A Python main with two children spinning for `secs` seconds.
fn spinning_tree(secs: f64) -> Vec<String> {
    let code = MAIN_WITH_BUSY_CHILDREN.replace("3.2", &secs.to_string());
    vec!["python3".into(), "-c".into(), code]
}

/// `gate record --no-gpu` of `argv` started (not waited for), with
/// GATE_CGROUP set to `cgroup` when given.
fn start_record(
    out: &Path,
    extra: &[&str],
    argv: &[String],
    cgroup: Option<&str>,
) -> std::process::Child {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("gate"));
    c.args(["record", "--no-gpu", "-o"]).arg(out).args(extra);
    if !argv.is_empty() {
        c.arg("--").args(argv);
    }
    c.stdout(std::process::Stdio::null());
    c.stderr(std::process::Stdio::piped());
    match cgroup {
        Some(v) => c.env("GATE_CGROUP", v),
        None => c.env_remove("GATE_CGROUP"),
    };
    c.spawn().unwrap()
}

/// A main that writes its PID to argv[1], waits for the file argv[2],
/// then forks two children that sleep 1.5 s, spin 3 s and sleep 1.5 s
/// (so neither path misses their first or last interval), and prints the
/// CPU the children used, from the kernel's rusage of each.
const TIMED_TREE: &str = "import os, sys, time
pidfile, go = sys.argv[1], sys.argv[2]
open(pidfile + '.tmp', 'w').write(str(os.getpid()))
os.rename(pidfile + '.tmp', pidfile)
while not os.path.exists(go):
    time.sleep(0.02)
print('go', flush=True)
kids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        time.sleep(1.5)
        t = time.time()
        while time.time() - t < 3.0:
            pass
        time.sleep(1.5)
        os._exit(0)
    kids.append(pid)
cpu = 0.0
for k in kids:
    _, _, ru = os.wait4(k, 0)
    cpu += ru.ru_utime + ru.ru_stime
print('children_cpu_s: %.3f' % cpu, flush=True)
time.sleep(0.3)
";

/// The tree's CPU seconds in a trace after `from_ms`: each
/// `target_cpu_pct` rate times the time since the previous host sample
/// (rows without host values are ticks between host samples: the next
/// rate covers them).
fn cpu_seconds(t: &Trace, from_ms: f64) -> f64 {
    let cpu = t.host_column("target_cpu_pct").unwrap();
    let procs = t.host_column("target_processes").unwrap();
    let mut prev: Option<f64> = None;
    let mut total = 0.0;
    for i in 0..t.sample_count() {
        if !t.host_value(i, procs).is_finite() {
            continue;
        }
        let at = t.times_ms.at(i);
        let rate = t.host_value(i, cpu) as f64;
        if let (Some(p), true) = (prev.filter(|p| *p >= from_ms), rate.is_finite()) {
            total += rate / 100.0 * (at - p) / 1000.0;
        }
        prev = Some(at);
    }
    total
}

#[test]
fn cgroup_and_proc_paths_agree_on_a_busy_tree_and_the_cgroup_goes_away() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        dir.path().join("cgroup.jsonl"),
        dir.path().join("proc.jsonl"),
        dir.path().join("adopted.jsonl"),
    );
    let (pidfile, go) = (dir.path().join("main.pid"), dir.path().join("go"));
    // One tree recorded three times at once: launched by gate (the cgroup
    // path where the machine allows it), attached to by a second gate on
    // the per-process path (GATE_CGROUP=0: each process's CPU clock), and
    // by a third that adopts the first one's cgroup (the tree's own: the
    // attached path where the tree has one).
    let argv: Vec<String> = vec![
        "python3".into(),
        "-c".into(),
        TIMED_TREE.into(),
        pidfile.display().to_string(),
        go.display().to_string(),
    ];
    let ga = start_record(&a, &[], &argv, None);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let main_pid = loop {
        if let Ok(p) = std::fs::read_to_string(&pidfile) {
            break p;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the tree never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let gb = start_record(&b, &["--pid", &main_pid], &[], Some("0"));
    let gc = start_record(&c, &["--pid", &main_pid], &[], Some("1"));
    // The children start once the attached gate is sampling.
    let partial = dir.path().join("proc.jsonl.partial");
    while std::fs::read_to_string(&partial).map_or(true, |t| !t.contains("\"sample\"")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the attached gate never sampled"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::fs::write(&go, "").unwrap();
    let (pa, pb) = (ga.id(), gb.id());
    let (oa, ob, oc) = (
        ga.wait_with_output().unwrap(),
        gb.wait_with_output().unwrap(),
        gc.wait_with_output().unwrap(),
    );
    assert!(
        oc.status.success(),
        "{}",
        String::from_utf8_lossy(&oc.stderr)
    );
    assert!(
        oa.status.success(),
        "{}",
        String::from_utf8_lossy(&oa.stderr)
    );
    assert!(
        ob.status.success(),
        "{}",
        String::from_utf8_lossy(&ob.stderr)
    );
    let (ta, tb, tc) = (
        Trace::load(&a).unwrap(),
        Trace::load(&b).unwrap(),
        Trace::load(&c).unwrap(),
    );
    assert_eq!(
        host_path(&tb),
        "host counters: per process from /proc (GATE_CGROUP=0)"
    );
    let path_a = host_path(&ta);
    let adopted = path_a.contains("own cgroup");
    if adopted {
        let launched = path_a
            .split(" under ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        assert!(
            host_path(&tc).starts_with(&format!(
                "host counters: the attached process's own cgroup {launched}/gate-{pa}-"
            )),
            "{}",
            host_path(&tc)
        );
    } else {
        // All three traces then come from /proc: they still agree below.
        eprintln!("SKIPPED (the cgroup path): this machine falls back: {path_a}");
    }
    let truth: f64 = (ta.output.iter())
        .find_map(|o| o.line.strip_prefix("children_cpu_s: "))
        .expect("the main printed its children's CPU")
        .parse()
        .unwrap();
    // From the main's "go" line in the launched trace (the start-up before
    // it, pyenv's shim included, is in the cgroup only); all of the
    // attached one, which started before "go".
    let go_ms = (ta.output.iter())
        .find(|o| o.line == "go")
        .expect("go line")
        .t;
    let (ca, cb, cc) = (
        cpu_seconds(&ta, go_ms),
        cpu_seconds(&tb, 0.0),
        cpu_seconds(&tc, 0.0),
    );
    // The kernel's own account of the children's CPU against each path's
    // integral: the cgroup counts microseconds, the CPU clocks nanoseconds;
    // the main's own CPU while it waits adds a little, and a sample
    // straddling "go" a little of the start-up.
    for (path, got) in [("cgroup", ca), ("/proc", cb), ("adopted cgroup", cc)] {
        assert!(
            (got - truth).abs() <= 0.03 * truth + 0.08,
            "{path} path: {got:.3} CPU s, the children used {truth:.3} s (cgroup {ca:.3}, /proc {cb:.3}, adopted {cc:.3})"
        );
    }
    eprintln!("children's CPU {truth:.3} s; cgroup path {ca:.3} s; /proc path {cb:.3} s; adopted {cc:.3} s");
    // The user/system split on the clock path is the last second's
    // shares of the clock's CPU: they add up to it.
    let (all, user, sys) = (
        host_mean(&tb, "target_cpu_pct").unwrap(),
        host_mean(&tb, "target_cpu_user_pct").unwrap(),
        host_mean(&tb, "target_cpu_sys_pct").unwrap(),
    );
    assert!(
        (user + sys - all).abs() <= 0.01 * all + 0.01,
        "{user} + {sys} vs {all}"
    );
    // The two children are the workers while they live (6 s, 60 samples;
    // the launcher's short-lived helpers, pyenv's shim, come and go first).
    let workers = ta.host_column("workers").unwrap();
    let two = (0..ta.sample_count())
        .filter(|&i| ta.host_value(i, workers) == 2.0)
        .count();
    assert!(two >= 40, "{two} samples with the 2 workers");
    assert!(host_mean(&ta, "workers_cpu_pct").unwrap() > 0.0);
    // The recording ended with the tree: nothing left behind.
    assert_eq!(cgroups_left_by(pa), Vec::<String>::new());
    assert_eq!(cgroups_left_by(pb), Vec::<String>::new());
}

#[test]
fn the_cgroup_is_removed_when_the_benchmark_fails_and_when_gate_is_interrupted() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let failing = dir.path().join("fail.jsonl");
    let g = start_record(
        &failing,
        &[],
        &[
            "python3".into(),
            "-c".into(),
            "import sys; sys.exit(3)".into(),
        ],
        None,
    );
    let pid = g.id();
    let out = g.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(cgroups_left_by(pid), Vec::<String>::new());
    // SIGTERM to gate mid-run: forwarded, the trace ends "interrupted".
    let stopped = dir.path().join("stopped.jsonl");
    let g = start_record(&stopped, &[], &spinning_tree(30.0), None);
    let pid = g.id();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let in_run = cgroups_left_by(pid);
    // SAFETY: kill sends a signal to the gate process this test started.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    let out = g.wait_with_output().unwrap();
    let t = Trace::load(&stopped).unwrap();
    assert_eq!(
        t.end.as_ref().unwrap().reason,
        StopReason::Interrupted,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if host_path(&t).contains("own cgroup") {
        assert_eq!(in_run.len(), 1, "the recording's cgroup: {in_run:?}");
    } else {
        eprintln!("SKIPPED (the cgroup path): {}", host_path(&t));
    }
    assert_eq!(cgroups_left_by(pid), Vec::<String>::new());
    // gate killed outright (SIGKILL): its watchdog kills what is in the
    // cgroup and removes it.
    let killed = dir.path().join("killed.jsonl");
    let mut g = start_record(&killed, &[], &spinning_tree(30.0), None);
    let pid = g.id();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let in_run = cgroups_left_by(pid);
    g.kill().unwrap();
    g.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !cgroups_left_by(pid).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(cgroups_left_by(pid), Vec::<String>::new(), "was {in_run:?}");
}

#[test]
fn an_attached_target_and_a_bad_gate_cgroup_take_the_proc_path_or_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let mut sleeper = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let out = dir.path().join("attach.jsonl");
    gate()
        .args(["record", "--no-gpu", "--duration", "300ms", "--pid"])
        .arg(sleeper.id().to_string())
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    // The sleeper shares gate's cgroup (this test's): not the tree's own.
    let path = host_path(&Trace::load(&out).unwrap());
    assert!(
        path.starts_with("host counters: per process from /proc ("),
        "{path}"
    );
    if own_cgroup_dir().is_some() {
        assert!(
            path.contains("attached to a process whose cgroup") && path.contains("also holds gate"),
            "{path}"
        );
    }
    let bad = gate()
        .env("GATE_CGROUP", "yes\x1b[31m")
        .args(["record", "--no-gpu", "-o"])
        .arg(dir.path().join("bad.jsonl"))
        .args(["--", "true"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&bad.get_output().stderr).into_owned();
    assert!(
        err.contains("GATE_CGROUP=yes") && err.contains("is not 0 or 1") && !err.contains('\x1b'),
        "{err}"
    );
    assert!(!dir.path().join("bad.jsonl").exists());
}

#[test]
fn doctor_says_which_path_a_launched_target_would_take() {
    // No NVML here: doctor exits 3, and still says where host counters
    // of a launched benchmark would come from.
    let out = gate().arg("doctor").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("host counters:"))
        .unwrap_or_else(|| panic!("no host counters line in {text}"));
    match own_cgroup_dir() {
        Some(dir) if line.contains("own cgroup") => {
            assert!(line.contains(&dir.display().to_string()), "{line}");
        }
        _ => {
            eprintln!("SKIPPED (the cgroup path): {line}");
            assert!(line.contains("per process from /proc ("), "{line}");
        }
    }
    let off = gate()
        .env("GATE_CGROUP", "0")
        .arg("doctor")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&off.stdout)
            .contains("host counters:    per process from /proc (GATE_CGROUP=0)"),
        "{}",
        String::from_utf8_lossy(&off.stdout)
    );
    let json = gate().args(["doctor", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(v["host_counters"].as_str().is_some(), "{v}");
}
