//! `gate record` (not yet implemented).

use super::measure::MeasureArgs;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct RecordArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,
    /// Trace file to write
    #[arg(short, long, default_value = "gate-trace.jsonl")]
    pub output: PathBuf,
}

pub fn run(_args: RecordArgs) -> anyhow::Result<i32> {
    anyhow::bail!("'gate record' is not implemented yet")
}

/// Record `args`' target into `path`; returns the final trace path.
pub fn record_to(_args: &MeasureArgs, _path: &Path) -> anyhow::Result<PathBuf> {
    anyhow::bail!("live recording is not implemented yet")
}
