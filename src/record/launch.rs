//! The target's side of a recording: the launched command confirmed in
//! its cgroup, the first events (what started, whether its I/O counters
//! are readable), and, when the recording fails, the tree stopped (the
//! target and its watchdog: `target.rs`) and the trace kept as `.partial`.

use super::{event, Progress, RecordPlan};
use crate::error::GateError;
use crate::sampler::cgroup::TreeCgroup;
use crate::target::{self, Target};
use crate::trace::{
    round_value, EndRecord, EventKind, EventRecord, Record, StopReason, TraceWriter,
};

/// The launched command's cgroup, if the command is in it (it moved
/// itself between fork and exec; a refused move leaves it outside, and
/// the recording falls back to `/proc`). A command already gone cannot be
/// checked and keeps the cgroup: its descendants are in there.
pub(super) fn confirm_cgroup(
    cgroup: Result<TreeCgroup, String>,
    pid: u32,
) -> Result<TreeCgroup, String> {
    let cgroup = cgroup?;
    if cgroup.members(&mut Vec::new()).contains(&pid) || !target::process_alive(pid) {
        return Ok(cgroup);
    }
    Err(format!(
        "the command could not be moved into {}",
        cgroup.dir().display()
    ))
}

/// Whatever failed (a full disk, a sampler), the benchmark does not outlive
/// the recording, and what was recorded stays readable under the .partial
/// name, which the returned error names.
pub(super) fn close_failed(
    e: GateError,
    mut writer: TraceWriter,
    target: &mut Target,
    progress: &Progress,
) -> GateError {
    target.stop(libc::SIGTERM, target::STOP_GRACE);
    let t = target
        .started()
        .map(|s| round_value(s.elapsed().as_secs_f64() * 1000.0))
        .unwrap_or(0.0);
    let _ = writer.write(&Record::Event(event(
        t,
        EventKind::Note,
        format!("the recording failed: {e}"),
    )));
    let exit = target.wait();
    let partial = writer.close_as_partial(EndRecord {
        t,
        samples: progress.samples,
        late_samples: progress.late,
        exit_code: exit.and_then(|e| e.code),
        signal: exit.and_then(|e| e.signal),
        target_wall_s: None,
        reason: StopReason::Error,
        metrics_file: None,
        metrics_file_problem: None,
        target_gpus: None,
    });
    let kept = format!("what was recorded is in '{}'", partial.display());
    match e {
        GateError::Infra(m) => GateError::Infra(format!("{m}; {kept}")),
        GateError::Usage(m) => GateError::Usage(format!("{m}; {kept}")),
        other => other,
    }
}

/// The first events: what started, and whether its I/O counters are readable.
pub(super) fn write_start(
    plan: &RecordPlan,
    writer: &mut TraceWriter,
    target: &Target,
) -> Result<(), GateError> {
    writer.write(&Record::Event(EventRecord {
        pid: Some(target.pid()),
        ..event(
            0.0,
            EventKind::TargetStart,
            if plan.command.is_empty() {
                format!("attached to PID {}", target.pid())
            } else {
                plan.command.join(" ")
            },
        )
    }))?;
    if plan.pid.is_some() && std::fs::File::open(format!("/proc/{}/io", target.pid())).is_err() {
        // Another user's process: /proc/PID/io is theirs (and root's) only.
        let message = format!(
            "cannot read /proc/{}/io (another user's process?): read/write bytes are recorded as null; run gate as that user or as root to measure them",
            target.pid()
        );
        crate::gate_eprintln!("gate: warning: {message}");
        writer.write(&Record::Event(EventRecord {
            pid: Some(target.pid()),
            ..event(0.0, EventKind::Note, message)
        }))?;
    }
    Ok(())
}
