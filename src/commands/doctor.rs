//! `gate doctor` (not yet implemented).

use clap::Args;

#[derive(Debug, Args)]
pub struct DoctorArgs {}

pub fn run(_args: DoctorArgs) -> anyhow::Result<i32> {
    anyhow::bail!("'gate doctor' is not implemented yet")
}
