//! The NVML cost probe (BENCHMARKS.md section 1; issue 12's per-call table).
//!
//! ```text
//! nvml-probe costs [--gpu 0] [--rounds 40] [--spacing 150ms] [--json FILE]
//!     every NVML call gate makes (and the alternatives its levers weigh),
//!     one call per SPACING, median thread CPU time of ROUNDS calls each
//! nvml-probe floor --interval 100ms [--gpu 0] [--seconds 30] [--gpm-interval 500ms]
//!                  [--process-interval 1s] [--no-gpm] [--json FILE]
//!     the NVML floor: only gate's NVML calls (its own sampler code, no
//!     /proc, no trace) at gate's cadences; process CPU over the run
//! ```
//! Build: `cargo build --release --examples`; run on the GPU host next to
//! `target/release/gate` (`scripts/gpu-perf.sh` does both). Without NVML it
//! exits 3 with the same one-line message as `gate record`.

use gpugate::sampler::nvml::{probe, Cadence, NvmlContext};
use std::time::Duration;

fn usage() -> ! {
    eprintln!(
        "usage: nvml-probe costs [--gpu N] [--rounds N] [--spacing DUR] [--json FILE]\n       \
         nvml-probe floor --interval DUR [--gpu N] [--seconds S] [--gpm-interval DUR] [--process-interval DUR] [--no-gpm] [--json FILE]"
    );
    std::process::exit(2)
}

/// `150ms`, `1s`, `1.5s` (kept here so the probe depends on no CLI module).
fn dur(s: &str) -> Duration {
    let (num, scale) = match s.strip_suffix("ms") {
        Some(n) => (n, 1e-3),
        None => (s.strip_suffix('s').unwrap_or(s), 1.0),
    };
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Duration::from_secs_f64(v * scale),
        _ => {
            eprintln!("nvml-probe: '{s}' is not a duration; use e.g. 150ms or 1s");
            std::process::exit(2)
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| usage());
    let (mut gpu, mut rounds, mut spacing) = (0u32, 40usize, Duration::from_millis(150));
    let (mut interval, mut seconds, mut json) = (None, 30.0f64, None::<String>);
    let mut cadence = Cadence::default();
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--gpu" => gpu = val().parse().unwrap_or_else(|_| usage()),
            "--rounds" => rounds = val().parse().unwrap_or_else(|_| usage()),
            "--spacing" => spacing = dur(&val()),
            "--interval" => interval = Some(dur(&val())),
            "--seconds" => seconds = val().parse().unwrap_or_else(|_| usage()),
            "--gpm-interval" => cadence.gpm_period = dur(&val()),
            "--process-interval" => cadence.process_period = dur(&val()),
            // The floor of `gate record --no-gpm`: no GPM calls.
            "--no-gpm" => cadence.gpm = false,
            "--json" => json = Some(val()),
            _ => usage(),
        }
    }
    let ctx = NvmlContext::init().unwrap_or_else(|e| {
        eprintln!("nvml-probe: {e}");
        std::process::exit(3)
    });
    let fail = |e: gpugate::error::GateError| -> ! {
        eprintln!("nvml-probe: {e}");
        std::process::exit(3)
    };
    let text = match mode.as_str() {
        "costs" => {
            let rows = probe::call_costs(&ctx, gpu, rounds, spacing).unwrap_or_else(|e| fail(e));
            println!(
                "NVML cost per call on GPU {gpu}: thread CPU time, one call every {} ms, median of {rounds}",
                spacing.as_millis()
            );
            println!(
                "{:<58} {:>10} {:>10} {:>10} {:>5}",
                "call", "median us", "min us", "max us", "ok"
            );
            for r in &rows {
                println!(
                    "{:<58} {:>10.1} {:>10.1} {:>10.1} {:>5}{}",
                    r.call,
                    r.median_us,
                    r.min_us,
                    r.max_us,
                    r.ok,
                    r.error
                        .as_deref()
                        .map(|e| format!("  error: {e}"))
                        .unwrap_or_default()
                );
            }
            serde_json::to_string_pretty(&rows).expect("plain data")
        }
        "floor" => {
            let interval = interval.unwrap_or_else(|| usage());
            let run =
                probe::floor(&ctx, &[gpu], interval, cadence, seconds).unwrap_or_else(|e| fail(e));
            println!(
                "NVML floor at {} ms (GPM {} ms, processes {} ms) on GPU {gpu}: {:.3} CPU s over {:.1} s = {:.3} % of one core ({} ticks)",
                run.interval_ms,
                cadence.gpm_period.as_millis(),
                cadence.process_period.as_millis(),
                run.cpu_s,
                run.seconds,
                run.cpu_pct_of_one_core,
                run.ticks
            );
            serde_json::to_string_pretty(&run).expect("plain data")
        }
        _ => usage(),
    };
    if let Some(path) = json {
        if let Err(e) = std::fs::write(&path, text + "\n") {
            eprintln!("nvml-probe: cannot write '{path}': {e}");
            std::process::exit(2);
        }
    }
}
