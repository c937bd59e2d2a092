//! The end of a recording: wait for the target, stop what it left, write
//! the closing events (leftovers, last stdout lines, the exit, the GPU
//! source's notes, the metrics file) and build the end record.

use super::gpus::write_gpu_notes;
use super::metrics_file::read_metrics_file;
use super::output::OutputKeeper;
use super::{event, Clock, Progress, RecordPlan};
use crate::error::GateError;
use crate::sampler::source::GpuSource;
use crate::target::{self, Target};
use crate::trace::{
    round_value, EndRecord, EventKind, EventRecord, Header, Record, StopReason, TraceWriter,
};
use std::time::SystemTime;

/// After the loop: wait for the target, stop what it left running, write
/// the closing events and build the end record.
#[allow(clippy::too_many_arguments)]
pub(super) fn finish(
    plan: &RecordPlan,
    header: &Header,
    gpu_sampler: Option<&dyn GpuSource>,
    writer: &mut TraceWriter,
    target: &mut Target,
    progress: &Progress,
    output: &mut OutputKeeper,
    reason: StopReason,
    clock: Clock,
) -> Result<EndRecord, GateError> {
    let exit = target.wait();
    if reason == StopReason::TargetExited {
        // `sh -c 'server & exit 0'`: what the command left running is
        // stopped, not orphaned.
        let left = target.stop_leftovers(target::STOP_GRACE);
        if !left.is_empty() {
            let pids: Vec<String> = left.iter().map(|p| p.to_string()).collect();
            let message = format!(
                "the benchmark exited and left {} process(es) running (PID {}): stopped them",
                left.len(),
                pids.join(", ")
            );
            crate::gate_eprintln!("gate: {message}");
            writer.write(&Record::Event(event(
                clock.now_ms(),
                EventKind::Note,
                message,
            )))?;
        }
    }
    output.drain(writer, target, clock)?;
    let long_lines = target.long_output_lines();
    if long_lines > 0 {
        writer.write(&Record::Event(event(
            clock.now_ms(),
            EventKind::OutputTruncated,
            format!(
                "{long_lines} stdout line(s) longer than {} were passed through whole but kept cut",
                crate::limits::bytes_text(crate::limits::MAX_OUTPUT_LINE_BYTES as u64)
            ),
        )))?;
    }
    if !output.warmup_released() {
        writer.write(&Record::Event(event(
            clock.now_ms(),
            EventKind::Note,
            crate::trace::WARMUP_NEVER_RELEASED_NOTE,
        )))?;
    }
    if let Some(e) = exit {
        writer.write(&Record::Event(EventRecord {
            pid: Some(target.pid()),
            code: e.code.map(i64::from),
            ..event(
                clock.ms(e.at),
                EventKind::TargetExit,
                match (e.code, e.signal) {
                    (Some(c), _) => format!("exit status {c}"),
                    (_, Some(s)) => format!("killed by signal {s}"),
                    _ if plan.pid.is_some() => "attached process ended (status unknown)".into(),
                    _ => "status unknown".into(),
                },
            )
        }))?;
    }
    if let Some(s) = gpu_sampler {
        write_gpu_notes(s, header, writer, clock)?;
    }
    // The file must be this run's: written after the target started.
    let run_start = SystemTime::now() - clock.t0.elapsed();
    let (metrics_file, metrics_file_problem) = match &plan.metrics_file {
        Some(p) => read_metrics_file(p, run_start, writer, clock.now_ms())?,
        None => (None, None),
    };
    Ok(EndRecord {
        t: clock.now_ms(),
        samples: progress.samples,
        late_samples: progress.late,
        exit_code: exit.and_then(|e| e.code),
        signal: exit.and_then(|e| e.signal),
        target_wall_s: match (target.started(), exit) {
            (Some(s), Some(e)) => Some(round_value(e.at.duration_since(s).as_secs_f64())),
            _ => None,
        },
        reason,
        metrics_file,
        metrics_file_problem,
        target_gpus: match (gpu_sampler, &plan.gpu) {
            (Some(s), crate::sampler::nvml::GpuSelection::Visible)
                if !s.target_gpus().is_empty() =>
            {
                Some(s.target_gpus().iter().copied().collect())
            }
            _ => None,
        },
    })
}
