//! Host activity per role (main process, workers, outside the tree) and
//! where the tree's counters come from (a cgroup of gate's own, or
//! `/proc`), through the real binary on this machine (`--no-gpu`: the
//! main process is the tree's root).

use assert_cmd::Command;
use gpugate::metrics::ROLE_METRIC_IDS;
use gpugate::trace::Trace;
use std::path::Path;

fn gate() -> Command {
    Command::cargo_bin("gate").unwrap()
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
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("roles.jsonl");
    // Warm-up past the first tree refresh (1 s): the children count from
    // their second host sample.
    gate()
        .args(["record", "--no-gpu", "--warmup", "1300ms", "-o"])
        .arg(&out)
        .args(["--", "python3", "-c", MAIN_WITH_BUSY_CHILDREN])
        .assert()
        .success();
    let t = Trace::load(&out).unwrap();
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
    // What two spinners get depends on the machine's load (a fifth of a
    // core each at least, on a 2-core machine shared by five builds); the
    // waiting main next to nothing; the tree's CPU is the two roles'.
    let tree_cpu = host_mean(&t, "target_cpu_pct").unwrap();
    assert!(
        workers_cpu > 40.0 && main_cpu < 10.0 && workers_cpu > 5.0 * main_cpu,
        "workers {workers_cpu} %, main {main_cpu} %"
    );
    assert!(
        (tree_cpu - workers_cpu - main_cpu).abs() < 0.1 * tree_cpu + 5.0,
        "tree {tree_cpu} % vs main {main_cpu} % + workers {workers_cpu} %"
    );
    let busy = host_mean(&t, "workers_busy_pct").unwrap();
    assert!(
        (busy - workers_cpu / 2.0).abs() < 0.15 * workers_cpu,
        "mean worker {busy} % of {workers_cpu} % over 2 workers"
    );
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
