//! `gate record`: record a live run into a trace file (the engine is
//! `crate::record`; window semantics are documented there).

use super::measure::MeasureArgs;
use crate::console::Echo;
use crate::error::GateError;
use crate::exit_code;
use crate::record::{record, RecordOutcome, RecordPlan};
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
    RecordJob::build(&args)?.execute()
}

/// One recording: its plan (every flag checked) and the trace file.
struct RecordJob {
    plan: RecordPlan,
    output: PathBuf,
}

impl RecordJob {
    fn build(args: &RecordArgs) -> Result<RecordJob, GateError> {
        if args.measure.is_replay() {
            return Err(GateError::usage("'gate record' measures live: give a command after '--' or --pid PID (--replay is for check, capture and report)"));
        }
        Ok(RecordJob {
            plan: args.measure.record_plan()?,
            output: args.output.clone(),
        })
    }

    fn execute(&self) -> anyhow::Result<i32> {
        // `gate record` prints no report on stdout: the benchmark's output stays there.
        let outcome = record(&self.plan, &self.output, Echo::Stdout)?;
        crate::gate_eprintln!(
            "gate: trace written to '{}' ({} samples, {})",
            crate::escape::terminal(&outcome.path.display().to_string()),
            outcome.end.samples,
            outcome.end.reason
        );
        Ok(exit_code_of(&outcome))
    }
}

/// 0 when the target ran to completion (or gate stopped it at the end of
/// the window); 5 when the benchmark itself failed, 3 when the measurement
/// did (`gate::end_failure` says which): a failed benchmark is never a pass.
fn exit_code_of(outcome: &RecordOutcome) -> i32 {
    let src = outcome.path.display().to_string();
    let Some(failure) = crate::gate::end_failure(&outcome.end, &src) else {
        return exit_code::PASS;
    };
    if outcome.end.reason == crate::trace::StopReason::WarmupTimeout {
        crate::gate_eprintln!(
            "gate: --warmup-until never matched a line of the benchmark's stdout within --warmup-timeout, so nothing was measured; check the pattern against the output kept in the trace, or raise --warmup-timeout"
        );
    } else {
        crate::gate_eprintln!(
            "gate: {}; the trace is kept for diagnosis",
            crate::escape::terminal(&failure.message)
        );
    }
    failure.exit_code()
}
