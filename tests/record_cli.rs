//! `gate record` and `gate doctor` through the real binary, on this machine
//! (no GPU: host counters with `--no-gpu`, and the missing-NVML path), plus
//! properties of the traces recorded on the H200 in `fixtures/traces/`.

use assert_cmd::Command;
use gpugate::trace::{EventKind, StopReason, Trace};
use std::path::Path;
use std::time::Duration;

fn gate() -> Command {
    Command::cargo_bin("gate").unwrap()
}

fn host_mean(t: &Trace, id: &str) -> f64 {
    let col = t.host_column(id).unwrap();
    let vals: Vec<f64> = (0..t.sample_count())
        .filter(|&i| !t.warmup[i])
        .map(|i| t.host_value(i, col) as f64)
        .filter(|v| v.is_finite())
        .collect();
    assert!(!vals.is_empty(), "no {id} values");
    vals.iter().sum::<f64>() / vals.len() as f64
}

/// CPU seconds gate saw the target use: each sample's share of a core
/// times the time since the sample before (warm-up included).
fn host_cpu_seconds(t: &Trace) -> f64 {
    let col = t.host_column("target_cpu_pct").unwrap();
    (1..t.sample_count())
        .map(|i| {
            let pct = t.host_value(i, col) as f64;
            let dt = (t.times_ms.at(i) - t.times_ms.at(i - 1)) / 1e3;
            if pct.is_finite() {
                pct / 100.0 * dt
            } else {
                0.0
            }
        })
        .sum()
}

#[test]
fn no_gpu_record_of_a_busy_loop_shows_one_core_and_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("busy.jsonl");
    let started = std::time::Instant::now();
    let assert = gate()
        .args([
            "record",
            "--no-gpu",
            "--warmup",
            "300ms",
            "--tag",
            "kind=busy",
            "-o",
        ])
        .arg(&out)
        .args([
            "--",
            "python3",
            "-c",
            // The loop says how much CPU time the kernel gave it (its own
            // user + system time, startup included): on a loaded machine (CI
            // beside other jobs) that is less than its wall time, and gate
            // must read what the kernel gave, not one whole core.
            "import os, time\nt=time.time()\nwhile time.time()-t<2.0: pass\n\
             print('samples_per_s: 42.5')\n\
             c=os.times()\nprint('cpu_s:', c[0]+c[1])",
        ])
        .assert()
        .success();
    let test_wall = started.elapsed().as_secs_f64();
    // The target's stdout passes through gate unchanged.
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    assert!(stdout.contains("samples_per_s: 42.5"), "{stdout}");
    let t = Trace::load(&out).unwrap();
    assert!(!t.truncated);
    assert_eq!(t.header.tags.get("kind").map(String::as_str), Some("busy"));
    assert_eq!(t.exit_code(), Some(0));
    let got: f64 = (t.output.iter())
        .find_map(|o| o.line.strip_prefix("cpu_s: "))
        .and_then(|v| v.trim().parse().ok())
        .expect("the loop's own CPU time");
    let seen = host_cpu_seconds(&t);
    // Only the time after gate's last sample is lost (one interval, longer
    // when the machine is loaded): at most a quarter of a second, or 15 %.
    assert!(
        (seen - got).abs() <= 0.25 + 0.15 * got,
        "the kernel gave the busy loop {got:.2} CPU s (its own os.times()); gate's samples add up to {seen:.2} s"
    );
    // One thread: no sample shows more than one core (10 ms ticks over a
    // 100 ms interval: 10 % of rounding).
    let col = t.host_column("target_cpu_pct").unwrap();
    let most = (0..t.sample_count())
        .map(|i| t.host_value(i, col) as f64)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    assert!(most <= 125.0, "one thread read as {most:.0} % of a core");
    assert!(host_mean(&t, "target_rss_mib") > 1.0);
    assert!(t.output.iter().any(|o| o.line == "samples_per_s: 42.5"));
    // The loop spins 2 s of wall time; the run lasted no longer than the
    // test waited for it (startup under load can take seconds).
    let wall = t.end.as_ref().unwrap().target_wall_s.unwrap();
    assert!(
        wall >= 1.95 && wall <= test_wall,
        "target wall {wall:.2} s; the loop spins 2 s and gate returned after {test_wall:.2} s"
    );
}

#[test]
fn exit_status_is_carried_through_and_a_failed_benchmark_exits_5() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fail.jsonl");
    gate()
        .args(["record", "--no-gpu", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c", "sleep 0.3; exit 7"])
        .assert()
        .code(5)
        .stderr(predicates::str::contains(
            "the benchmark exited with code 7",
        ));
    let t = Trace::load(&out).unwrap();
    assert_eq!(t.exit_code(), Some(7));
    assert!(t
        .events
        .iter()
        .any(|e| e.kind == EventKind::TargetExit && e.code == Some(7)));
}

#[test]
fn duration_stops_a_long_command_and_counts_as_complete() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("long.jsonl");
    let started = std::time::Instant::now();
    gate()
        .args([
            "record",
            "--no-gpu",
            "--warmup",
            "200ms",
            "--duration",
            "500ms",
            "-o",
        ])
        .arg(&out)
        .args(["--", "sleep", "30"])
        .assert()
        .success();
    assert!(started.elapsed() < Duration::from_secs(15));
    let t = Trace::load(&out).unwrap();
    let end = t.end.as_ref().unwrap();
    assert_eq!(end.reason, StopReason::DurationReached);
    assert_eq!(end.signal, Some(15));
    assert!(t.warmup.iter().any(|w| *w) && t.warmup.iter().any(|w| !*w));
}

#[test]
fn attach_by_pid_samples_without_touching_the_process() {
    let mut child = std::process::Command::new("sleep")
        .arg("20")
        .spawn()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("attach.jsonl");
    gate()
        .args(["record", "--no-gpu", "--duration", "600ms", "--pid"])
        .arg(child.id().to_string())
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    // Still running: gate never signals an attached process.
    assert!(
        child.try_wait().unwrap().is_none(),
        "attached process was disturbed"
    );
    let _ = child.kill();
    let _ = child.wait();
    let t = Trace::load(&out).unwrap();
    assert_eq!(t.header.attach_pid, Some(child.id()));
    assert!(t.header.command.is_empty());
    assert!(t.sample_count() >= 4, "{} samples", t.sample_count());
    assert!(host_mean(&t, "target_cpu_pct") < 20.0, "sleep is idle");
}

#[test]
fn attach_to_a_missing_pid_is_a_usage_error() {
    gate()
        .args([
            "record",
            "--no-gpu",
            "--pid",
            "4000000000",
            "-o",
            "/tmp/never.jsonl",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no such running process"));
}

#[test]
fn without_nvml_record_and_doctor_exit_3_naming_the_library() {
    if Path::new("/dev/nvidiactl").exists() {
        eprintln!("SKIP: this machine has an NVIDIA driver");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.jsonl");
    let assert = gate()
        .args(["record", "-o"])
        .arg(&out)
        .args(["--", "true"])
        .assert()
        .code(3);
    let err = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("libnvidia-ml.so.1") && err.contains("--no-gpu"),
        "{err}"
    );
    assert!(!out.exists(), "no trace without a measurement");
    gate()
        .arg("doctor")
        .assert()
        .code(3)
        .stdout(predicates::str::contains("libnvidia-ml.so.1"));
}

#[test]
fn a_trace_path_in_a_missing_directory_is_created_and_bad_intervals_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a/b/t.jsonl");
    gate()
        .args(["record", "--no-gpu", "-o"])
        .arg(&out)
        .args(["--", "true"])
        .assert()
        .success();
    assert!(out.exists());
    gate()
        .args(["record", "--no-gpu", "--interval", "1ms", "--", "true"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--interval"));
    gate()
        .args(["record", "--no-gpu", "--", "definitely-not-a-command-xyz"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("definitely-not-a-command-xyz"));
}

fn fixture(name: &str) -> Trace {
    Trace::load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/traces")
            .join(name),
    )
    .unwrap()
}

#[test]
fn recorded_fixtures_say_where_they_were_recorded_and_are_complete() {
    for name in [
        "healthy-1.jsonl",
        "healthy-2.jsonl",
        "healthy-3.jsonl",
        "launch-storm.jsonl",
        "fp32-no-tf32.jsonl",
        "memory-bound.jsonl",
        "pageable-h2d.jsonl",
        "sync-stall.jsonl",
        "host-bound.jsonl",
        "contention.jsonl",
    ] {
        let t = fixture(name);
        assert!(!t.truncated, "{name}");
        let note = t.header.note.clone().unwrap_or_default();
        assert!(
            note.contains("NVIDIA H200") && note.contains("580.159.04"),
            "{name}: {note}"
        );
        assert_eq!(t.header.fingerprint.gpus[0].name, "NVIDIA H200");
        assert!(t.header.fingerprint.gpus[0].gpm_supported);
        assert_eq!(t.exit_code(), Some(0), "{name}");
        assert!(t.sample_count() > 250, "{name}: {}", t.sample_count());
    }
}

#[test]
fn recorded_gpm_values_come_from_pairs_more_than_100ms_apart() {
    // On the H200 the recorder took a GPM sample only when >= 120 ms had
    // passed since the last one: at a 100 ms interval every other sample
    // carries GPM values and the rest are null (missing), never 0.
    let t = fixture("healthy-1.jsonl");
    let sm = t.gpu_column("sm_active_pct").unwrap();
    let busy = t.gpu_column("gpu_busy_pct").unwrap();
    let with_gpm: Vec<f64> = (0..t.sample_count())
        .filter(|&i| t.gpu_value(i, 0, sm).is_finite())
        .map(|i| t.times_ms.at(i))
        .collect();
    assert!(with_gpm.len() > 100);
    for pair in with_gpm.windows(2) {
        assert!(
            pair[1] - pair[0] > 100.0,
            "GPM values {} ms apart",
            pair[1] - pair[0]
        );
    }
    // NVML counters are present on every sample.
    assert!((0..t.sample_count()).all(|i| t.gpu_value(i, 0, busy).is_finite()));
    // No glitch reached the data: while busy, SM active is never exactly 0.
    let steady_busy_zero_sm = (0..t.sample_count())
        .filter(|&i| !t.warmup[i] && t.gpu_value(i, 0, busy) >= 90.0)
        .filter(|&i| t.gpu_value(i, 0, sm) == 0.0)
        .count();
    assert_eq!(steady_busy_zero_sm, 0);
}

#[test]
fn contention_fixture_sees_the_other_process_outside_the_target_tree() {
    let t = fixture("contention.jsonl");
    let others = t.gpu_column("other_processes").unwrap();
    let max_others = (0..t.sample_count())
        .map(|i| t.gpu_value(i, 0, others))
        .filter(|v| v.is_finite())
        .fold(0.0f32, f32::max);
    assert!(max_others >= 1.0);
    let procs = t.processes.iter().flat_map(|p| p.procs.iter());
    let (mut target, mut foreign) = (false, false);
    for p in procs {
        target |= p.in_target;
        foreign |= !p.in_target && p.cmdline.contains("competitor.py");
    }
    assert!(
        target && foreign,
        "expected the target and competitor.py on the GPU"
    );
}

#[test]
fn live_capture_then_check_through_the_recorder() {
    // The live path of capture/check: launch, record a trace into
    // --trace-dir, judge it. Host counters only, so it runs without a GPU.
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    let baselines = dir.path().join("baselines");
    let cmd = [
        "--",
        "sh",
        "-c",
        "sleep 2.5; echo 'final_samples_per_s: 100'",
    ];
    gate()
        .current_dir(dir.path()) // not this repository's gate.toml
        .args(["capture", "--baseline", "live", "--runs", "2", "--no-gpu"])
        .arg("--baseline-dir")
        .arg(&baselines)
        .arg("--trace-dir")
        .arg(&traces)
        .args(cmd)
        .assert()
        .success();
    assert!(baselines.join("live.toml").exists());
    assert_eq!(
        std::fs::read_dir(&traces).unwrap().count(),
        2,
        "one trace per run"
    );
    let junit = dir.path().join("gate.xml");
    gate()
        .current_dir(dir.path())
        .args(["check", "--baseline", "live", "--no-gpu"])
        .arg("--baseline-dir")
        .arg(&baselines)
        .arg("--trace-dir")
        .arg(&traces)
        .arg("--junit")
        .arg(&junit)
        .args(cmd)
        .assert()
        .success();
    assert!(std::fs::read_to_string(&junit)
        .unwrap()
        .contains("wall_time_s"));
    // A benchmark that fails is an error (exit 5, the benchmark's own
    // failure), never a pass.
    gate()
        .current_dir(dir.path())
        .args(["check", "--baseline", "live", "--no-gpu"])
        .arg("--baseline-dir")
        .arg(&baselines)
        .arg("--trace-dir")
        .arg(&traces)
        .args(["--", "sh", "-c", "sleep 2.5; exit 1"])
        .assert()
        .code(5);
}

#[test]
fn warmup_until_starts_the_steady_window_at_the_benchmarks_own_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.jsonl");
    gate()
        .args([
            "record",
            "--no-gpu",
            "--warmup-until",
            "^training started$",
            "-o",
        ])
        .arg(&out)
        .args([
            "--",
            "sh",
            "-c",
            "sleep 0.8; echo 'training started'; sleep 1",
        ])
        .assert()
        .success();
    let t = Trace::load(&out).unwrap();
    let first_steady = (0..t.sample_count())
        .find(|&i| !t.warmup[i])
        .expect("steady samples");
    assert!(
        t.times_ms.at(first_steady) >= 800.0,
        "steady from {} ms",
        t.times_ms.at(first_steady)
    );
    assert!((0..first_steady).all(|i| t.warmup[i]));
    assert!(t
        .events
        .iter()
        .any(|e| e.message.contains("warm-up released")));

    // Never matched: everything is warm-up, and the trace says why.
    let out2 = dir.path().join("never.jsonl");
    gate()
        .args(["record", "--no-gpu", "--warmup-until", "^never$", "-o"])
        .arg(&out2)
        .args(["--", "sleep", "0.5"])
        .assert()
        .success();
    let t2 = Trace::load(&out2).unwrap();
    assert!(t2.warmup.iter().all(|w| *w));
    assert!(t2
        .events
        .iter()
        .any(|e| e.message.contains("never matched")));

    // It needs the benchmark's stdout: refused with --pid, and a bad regex is a usage error.
    gate()
        .args(["record", "--no-gpu", "--pid", "1", "--warmup-until", "x"])
        .assert()
        .code(2);
    gate()
        .current_dir(dir.path())
        .args(["record", "--no-gpu", "--warmup-until", "(", "--", "true"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--warmup-until"));
    // Refused before anything started: no trace, not even a partial one.
    assert!(!dir.path().join("gate-trace.jsonl.partial").exists());
    assert!(!dir.path().join("gate-trace.jsonl").exists());
}

/// `doctor --gpu` with a list that names no GPU index is the command
/// line's mistake: exit 2 with one line naming the flag, before anything
/// is probed (no report on stdout), whether or not this machine has NVML.
#[test]
fn doctor_refuses_a_bad_gpu_list_before_probing() {
    for (list, says) in [
        (
            "0,x",
            "--gpu '0,x': 'x' is not a GPU index; use e.g. --gpu 0,2 or --gpu all",
        ),
        (",", "--gpu ',' selects no GPU"),
    ] {
        let out = gate().args(["doctor", "--gpu", list]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{list}: {stderr}");
        assert!(out.stdout.is_empty(), "{list}: probed anyway");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{list}: {stderr}");
    }
}

/// build.rs links the functions the sampling loop runs into one section at
/// the start of gate's code (`link/sampling.ld`): the gate under test has
/// that section, the sampler's code lies in it (also what is listed by a
/// name whose hashes this build does not share) and the configuration's
/// parser does not. What it saves is measured in BENCHMARKS.md (section 1).
#[test]
fn the_sampling_loop_is_linked_in_one_section() {
    let exe = assert_cmd::cargo::cargo_bin("gate");
    let run = |tool: &str, args: &[&str]| {
        let out = std::process::Command::new(tool)
            .args(args)
            .arg(&exe)
            .output()
            .unwrap_or_else(|e| panic!("{tool} (binutils) is needed for this test: {e}"));
        assert!(out.status.success(), "{tool} failed on {}", exe.display());
        String::from_utf8(out.stdout).unwrap()
    };
    let sections = run("readelf", &["-SW"]);
    let line = sections
        .lines()
        .find(|l| l.contains(" .text.sampling "))
        .unwrap_or_else(|| {
            panic!(
                "no .text.sampling section in {}:\n{sections}",
                exe.display()
            )
        });
    let fields: Vec<&str> = line.split_whitespace().collect();
    let at = fields.iter().position(|f| *f == ".text.sampling").unwrap();
    let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
    let (start, size) = (hex(fields[at + 2]), hex(fields[at + 4]));
    assert!(
        size > 16 * 1024,
        "the section holds only {size} bytes: {line}"
    );
    let symbols = run("nm", &[]);
    let address = |part: &str| {
        let line = symbols
            .lines()
            .find(|l| l.contains(part))
            .unwrap_or_else(|| panic!("no symbol {part}"));
        hex(line.split_whitespace().next().unwrap())
    };
    let inside = |a: u64| (start..start + size).contains(&a);
    let dropped = address("7sampler8resident18drop_startup_pages");
    assert!(
        inside(dropped),
        "drop_startup_pages at {dropped:#x}, section {start:#x}+{size:#x}"
    );
    // Listed by name with its hashes as wildcards: this build (the test
    // profile) names it with other hashes than the layout build did.
    let poll_exit = address("6target6Target9poll_exit");
    assert!(
        inside(poll_exit),
        "Target::poll_exit at {poll_exit:#x}, section {start:#x}+{size:#x}"
    );
    // Start-up only (the loop's dumps end where gate exits, so cli::run,
    // which the loop returns into, is listed).
    let config = address("6config6Config5parse");
    assert!(
        !inside(config),
        "Config::parse at {config:#x} is inside the sampling section"
    );
}
