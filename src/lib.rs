//! `gate`: keeps GPU performance from silently regressing.
//!
//! Data flows one way:
//! target -> samplers (nvml | host | replay) -> trace -> stats -> baseline /
//! diagnose -> gate verdicts -> reporters -> exit code.
//! Everything after `trace` is pure: no NVML, no clock, no terminal.

// Results go to stdout through `console::out`, diagnostics to stderr
// through `gate_eprintln!`: both survive a reader that went away (`| head`),
// where `print!`/`eprintln!` panic.
#![deny(clippy::print_stdout, clippy::print_stderr)]

/// Acknowledged regressions: the accept file, labels, the target's `[accept]`.
pub mod accept;
/// Alerts delivered to Alertmanager, Slack and webhooks (`[alerts]`).
pub mod alerts;
/// Run analysis under the summary: time-window features, framework, panorama.
pub mod analysis;
pub mod baseline;
/// One memory budget shared by every thread: loads wait for room.
pub mod budget;
pub mod cli;
pub mod commands;
pub mod config;
pub mod console;
pub mod diagnose;
pub mod error;
pub mod escape;
pub mod exit_code;
/// Opening inputs and outputs safely (regular files, size caps, no-follow temporaries).
pub mod files;
pub mod format;
/// Fuzzing entry points for the four parsers (cargo-fuzz targets and
/// tests/fuzz_parsers.rs). Test support like `synthetic`: feature `testkit`.
#[doc(hidden)]
#[cfg(any(test, feature = "testkit"))]
pub mod fuzz_targets;
pub mod gate;
pub mod history;
/// Every size and time limit on inputs (docs/limits.md).
pub mod limits;
/// Readers of the benchmark's own numbers: regex, JSON, pytest-benchmark, MLPerf, BMF.
pub mod metric_sources;
pub mod metrics;
/// How much a statistic moves between runs: noise bands for verdicts and rules.
pub mod noise;
/// Independent work (columns, runs, nodes) on every core, output unchanged.
pub mod parallel;
pub mod record;
pub mod report;
pub mod sampler;
/// Finite, ordered chart bounds and bounded ticks for every renderer.
pub mod scale;
/// Where scratch files go, and the warning when that is a tmpfs.
pub mod scratch;
pub mod shell_words;
/// Edit distance for did-you-mean hints.
pub mod spelling;
pub mod stats;
pub mod summary;
/// Test support, not part of the release library: SYNTHETIC traces (header
/// note says "synthetic"; never a measurement), the one generator behind
/// the tests, benchmarks and docs examples. Built for unit tests and with
/// the `testkit` feature (tests and examples enable it through Cargo.toml).
#[cfg(any(test, feature = "testkit"))]
pub mod synthetic;
pub mod target;
pub mod trace;
/// The checks every file gate reads shares: names, tolerances, TOML errors.
pub mod validate;
pub mod watch;
/// Makes a launched tree die with gate, even when gate is killed (SIGKILL).
pub mod watchdog;

/// The version stamped into traces and baselines.
pub const GATE_VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(test)]
mod snapshot_tests;
