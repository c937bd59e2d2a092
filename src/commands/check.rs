//! `gate check` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct CheckArgs {}

pub fn run(_args: CheckArgs) -> anyhow::Result<i32> {
    anyhow::bail!("'gate check' is not implemented yet")
}
