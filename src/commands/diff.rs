//! `gate diff` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct DiffArgs {}

pub fn run(_args: DiffArgs) -> anyhow::Result<i32> {
    anyhow::bail!("'gate diff' is not implemented yet")
}
