//! `gate capture` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct CaptureArgs {}

pub fn run(_args: CaptureArgs) -> anyhow::Result<i32> {
    anyhow::bail!("'gate capture' is not implemented yet")
}
