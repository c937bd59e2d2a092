//! Thin entry point: parse, run, map the outcome to the exit-code contract.
//! Nothing else in the program calls `process::exit`.

use gpugate::{cli, error::exit_code_of};

fn main() {
    // A write beyond RLIMIT_FSIZE (a CI job's `ulimit -f`) must fail with
    // EFBIG and gate's clean "file too large" error, not kill gate with
    // SIGXFSZ (exit 153) halfway through a trace or report. The benchmark
    // gets the default back (target.rs).
    // SAFETY: setting a signal disposition before any thread starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // `gate __watchdog ...`: the helper that makes a launched tree die with
    // gate (src/watchdog.rs); otherwise this notes that it is available.
    if let Some(code) = gpugate::watchdog::main_if_requested() {
        std::process::exit(code);
    }
    // Ctrl-C or SIGTERM outside a recording is exit 3 (target.rs).
    gpugate::target::exit_3_on_interrupt();
    // clap, plus --args-string expanded into real flags (cli::parse_from).
    let args = cli::parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit());
    let code = match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            // One line: the outermost context, then the cause chain.
            let msg = gpugate::error::chain_line(&err);
            // One line whatever the causes printed (regex and TOML errors
            // draw multi-line pictures): CI logs and annotations stay tidy.
            let msg = msg.split_whitespace().collect::<Vec<_>>().join(" ");
            // Messages quote inputs (a key from gate.toml, a path): no raw
            // escape sequence reaches the terminal or the CI log.
            let msg = gpugate::escape::terminal(&msg);
            gpugate::gate_eprintln!("gate: error: {msg}");
            exit_code_of(&err)
        }
    };
    gpugate::sampler::CpuProfile::from_env().print_peak_rss();
    std::process::exit(code);
}
