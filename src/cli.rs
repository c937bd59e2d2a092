//! Command-line surface (clap derive). Each subcommand's flags live beside
//! its implementation in `commands/`; this file only assembles them.

use crate::commands::{capture, check, diff, doctor, history, record, report, tools};
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "gate",
    version,
    about = "Keep GPU performance from silently regressing",
    long_about = "gate records GPU (NVML + GPM) and host (/proc) counters of a benchmark with zero \
intrusion, stores p95 baselines as TOML in your repository, compares new runs against them \
with noise-aware thresholds, explains why a run regressed, and fails the pipeline with JUnit \
XML and a nonzero exit code.\n\nExit codes: 0 pass, 1 regression, 2 usage/config/input error, \
3 measurement or infrastructure problem (no GPU, benchmark failed, environment mismatch).\n\n\
Baselines are reviewed like code: see docs/baselines.md. CI templates: ci-templates/README.md.",
    arg_required_else_help = true,
    after_help = "Start with:  gate capture --baseline train-h200 --runs 3 -- python train.py\n\
Then:        gate check --baseline train-h200 --junit gate.xml -- python train.py\n\
In CI:       gate check --baseline train-h200 --baseline-ref origin/main -- python train.py\n\
Explain:     gate report .gate/traces/<run>.jsonl --html report.html"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size difference between variants is irrelevant.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Record GPU and host counters of a command or PID into a trace file
    Record(record::RecordArgs),
    /// Check that NVML, GPM and permissions work on this machine
    Doctor(doctor::DoctorArgs),
    /// Measure a known-good run and store it as a baseline (TOML); --replace refreshes one
    Capture(capture::CaptureArgs),
    /// Measure a run and judge it against a baseline (exit 1 regression, 3 could not measure)
    Check(check::CheckArgs),
    /// Compare two baselines, or a baseline and a trace, metric by metric
    Diff(diff::DiffArgs),
    /// Explain a run: utilization timeline, ranked suspects, processes
    Report(report::ReportArgs),
    /// List recorded runs, regressions and drift; --html draws a trend page
    History(history::HistoryCmdArgs),
    /// Print shell completions (bash, zsh, fish, elvish, powershell)
    Completions(tools::CompletionsArgs),
    /// Print the man page (roff); SUBCOMMAND for one command, --out-dir for all pages
    Man(tools::ManArgs),
}
