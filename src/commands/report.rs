//! `gate report` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct ReportArgs {}

pub fn run(_args: ReportArgs) -> anyhow::Result<i32> {
    anyhow::bail!("'gate report' is not implemented yet")
}
