//! CPU time of the phases of a check's analysis of one trace (BENCHMARKS.md,
//! section 2, "A byte-scanner floor"): `Trace::load` (parse, columns,
//! validity rules), `analysis::features::compute` and `summary::summarize`
//! (the statistics of every column and the features again), each as the
//! process's CPU time (user + system) around it.
//!
//! ```text
//! GATE_THREADS=1 cargo run --release --example check-phases -- TRACE.jsonl
//! ```
//! (`GATE_SPILL_MB=100000`: the columns in memory, not in a scratch file.)

fn cpu() -> f64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: check-phases TRACE.jsonl");
        std::process::exit(2)
    };
    let c0 = cpu();
    let trace = gpugate::trace::Trace::load(std::path::Path::new(&path)).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let c1 = cpu();
    let steady = gpugate::summary::steady_window(&trace);
    let features = gpugate::analysis::features::compute(&trace, &steady);
    let c2 = cpu();
    let run = gpugate::summary::summarize(&trace);
    let c3 = cpu();
    std::hint::black_box((&features, &run));
    println!(
        "{} samples: load {:.3} s, features {:.3} s, summarize (statistics + features) {:.3} s CPU",
        trace.sample_count(),
        c1 - c0,
        c2 - c1,
        c3 - c2
    );
}
