//! SYNTHETIC multi-benchmark runs: a Google Benchmark program whose
//! benchmarks run one after another in one process, each with its own GPU
//! shape (a `Signature`) and length, each ending with the result rows the
//! library's console reporter prints as a benchmark ends, and the run's
//! `--benchmark_out` JSON in the end record. For the tests of per-benchmark
//! spans (`summary::spans`); not a measurement.

use super::{closing, gpu_row, header, host_row, processes, Noise, Signature};
use crate::trace::{EventKind, EventRecord, OutputRecord, Record, SampleRecord};

/// One benchmark of a synthetic suite.
#[derive(Debug, Clone)]
pub struct Phase {
    /// Google Benchmark's run name, e.g. `BM_Gemm/4096`.
    pub name: String,
    /// The GPU while it runs.
    pub sig: Signature,
    /// Its length in samples.
    pub samples: usize,
    /// Its real time per iteration, ns (the number gated).
    pub ns: f64,
    /// Its result rows are printed (false: a console line lost).
    pub printed: bool,
}

impl Phase {
    pub fn new(name: &str, sig: Signature, samples: usize, ns: f64) -> Phase {
        Phase {
            name: name.to_string(),
            sig,
            samples,
            ns,
            printed: true,
        }
    }
}

/// The records of a suite run: `head`'s header, warm-up and end record
/// (its `seed` is the run's noise), then each phase's samples and, as it
/// ends, its three repetitions and `_mean`/`_stddev` rows.
pub fn records(head: &Signature, phases: &[Phase]) -> Vec<Record> {
    let mut noise = Noise::new(head.name, head.seed);
    let mut out = vec![Record::Header(Box::new(header(head, 1)))];
    out.push(Record::Event(EventRecord {
        t: 0.0,
        kind: EventKind::TargetStart,
        gpu: None,
        pid: Some(4242),
        code: None,
        message: String::new(),
    }));
    out.push(processes(0.0, 0, head));
    let interval = head.interval_ms as f64;
    let (_, warm) = head.sample_counts();
    let mut i = 0usize;
    let mut energy = 0.0f64;
    let mut sample = |sig: &Signature, i: usize, noise: &mut Noise, out: &mut Vec<Record>| {
        let g = vec![gpu_row(sig, 1, 0, false, false, &mut energy, noise)];
        let h = host_row(sig, noise);
        out.push(Record::Sample(SampleRecord {
            t: i as f64 * interval,
            w: i < warm,
            g,
            h,
        }));
    };
    while i < warm {
        sample(head, i, &mut noise, &mut out);
        i += 1;
    }
    let line = |t: f64, l: String| Record::Output(OutputRecord { t, line: l });
    let rule = "-".repeat(84);
    let t0 = (i.max(1) - 1) as f64 * interval;
    out.push(line(t0, rule.clone()));
    out.push(line(
        t0,
        "Benchmark                          Time             CPU   Iterations".into(),
    ));
    out.push(line(t0, rule));
    let mut rows = Vec::new();
    for p in phases {
        for _ in 0..p.samples {
            sample(&p.sig, i, &mut noise, &mut out);
            i += 1;
        }
        let t = (i - 1) as f64 * interval;
        let reps: Vec<f64> = (0..3).map(|_| p.ns * (1.0 + 0.01 * noise.next())).collect();
        let mean = reps.iter().sum::<f64>() / 3.0;
        let sd = (reps.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        let iters = (1e9 / p.ns).max(1.0).round() as u64;
        let mut printed = Vec::new();
        for r in &reps {
            printed.push(format!("{:<28}{r:>10.0} ns{r:>13.0} ns{iters:>13}", p.name));
            rows.push(row(&p.name, "iteration", None, *r, iters));
        }
        printed.push(format!(
            "{:<28}{mean:>10.0} ns{mean:>13.0} ns{:>13}",
            format!("{}_mean", p.name),
            3
        ));
        printed.push(format!(
            "{:<28}{sd:>10.0} ns{sd:>13.0} ns{:>13}",
            format!("{}_stddev", p.name),
            3
        ));
        rows.push(row(&p.name, "aggregate", Some("mean"), mean, 3));
        rows.push(row(&p.name, "aggregate", Some("stddev"), sd, 3));
        if p.printed {
            out.extend(printed.into_iter().map(|l| line(t, l)));
        }
    }
    let end_t = i as f64 * interval;
    closing(head, 1, i, end_t, &mut out);
    let json = serde_json::json!({
        "context": {"library_build_type": "release", "note": "SYNTHETIC"},
        "benchmarks": rows,
    });
    for r in out.iter_mut() {
        if let Record::End(e) = r {
            e.metrics_file = Some(json.to_string());
        }
    }
    out
}

/// One row of Google Benchmark's JSON.
fn row(name: &str, run_type: &str, agg: Option<&str>, ns: f64, iters: u64) -> serde_json::Value {
    let mut v = serde_json::json!({
        "name": match agg { Some(a) => format!("{name}_{a}"), None => name.to_string() },
        "run_name": name,
        "run_type": run_type,
        "repetitions": 3,
        "iterations": iters,
        "real_time": ns,
        "cpu_time": ns,
        "time_unit": "ns",
    });
    if let Some(a) = agg {
        v["aggregate_name"] = a.into();
    }
    v
}

/// Write a suite run as `path` (JSON lines, as a recorder writes them).
pub fn write(
    head: &Signature,
    phases: &[Phase],
    path: &std::path::Path,
) -> Result<(), crate::error::GateError> {
    let mut text = String::new();
    for r in records(head, phases) {
        text.push_str(&serde_json::to_string(&r).expect("records serialise"));
        text.push('\n');
    }
    std::fs::write(path, text)
        .map_err(|e| crate::error::GateError::infra(format!("{}: {e}", path.display())))
}
