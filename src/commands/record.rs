//! `gate record`: record a live run into a trace file (the engine is
//! `crate::record`; window semantics are documented there).

use super::measure::MeasureArgs;
use crate::console::Echo;
use crate::error::GateError;
use crate::record::record;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct RecordArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,
    /// Trace file to write (JSON Lines; written as `FILE.partial` until the recording ends)
    #[arg(short, long, default_value = "gate-trace.jsonl", value_name = "FILE")]
    pub output: PathBuf,
}

pub fn run(args: RecordArgs) -> anyhow::Result<i32> {
    if args.measure.is_replay() {
        return Err(GateError::usage("'gate record' measures live: give a command after '--' or --pid PID (--replay is for check, capture and report)").into());
    }
    // `gate record` prints no report on stdout: the benchmark's output stays there.
    let outcome = record(&args.measure, &args.output, Echo::Stdout)?;
    eprintln!(
        "gate: trace written to '{}' ({} samples, {})",
        outcome.path.display(),
        outcome.end.samples,
        outcome.end.reason
    );
    Ok(outcome.exit_code())
}
