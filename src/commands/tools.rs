//! `gate completions` and `gate man` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct CompletionsArgs {}

#[derive(Debug, Args)]
pub struct ManArgs {}

pub fn completions(_args: CompletionsArgs) -> anyhow::Result<i32> {
    anyhow::bail!("'gate completions' is not implemented yet")
}

pub fn man(_args: ManArgs) -> anyhow::Result<i32> {
    anyhow::bail!("'gate man' is not implemented yet")
}
