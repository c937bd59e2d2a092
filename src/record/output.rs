//! The target's stdout in the trace: kept up to a cap, and read for the
//! `--warmup-until` and `--until` markers.

use super::{event, Clock};
use crate::error::GateError;
use crate::target::Target;
use crate::trace::{EventKind, OutputRecord, Record, TraceWriter};
use std::time::Instant;

/// Stdout kept in the trace, at most (the rest still passes through).
const OUTPUT_CAP_BYTES: usize = crate::limits::MAX_KEPT_OUTPUT_BYTES;

/// Keeps the target's stdout lines in the trace (up to a cap) and watches
/// them for the `--warmup-until` pattern.
pub(super) struct OutputKeeper {
    bytes: usize,
    capped: bool,
    warmup_until: Option<regex::Regex>,
    /// When the first line matching `warmup_until` arrived.
    pub(super) warmup_matched: Option<Instant>,
    /// `--until`, until its line has been seen (then None).
    until: Option<regex::Regex>,
    /// The end of `--warmup`: an `--until` line before it does not count
    /// (docs: the window closes at the first such line after warm-up).
    warmup_ends: Instant,
}

impl OutputKeeper {
    pub(super) fn new(
        warmup_until: Option<regex::Regex>,
        until: Option<regex::Regex>,
        warmup_ends: Instant,
    ) -> OutputKeeper {
        OutputKeeper {
            bytes: 0,
            capped: false,
            warmup_until,
            warmup_matched: None,
            until,
            warmup_ends,
        }
    }

    /// The steady window may start: the pattern matched, or there is none.
    pub(super) fn warmup_released(&self) -> bool {
        self.warmup_until.is_none() || self.warmup_matched.is_some()
    }

    pub(super) fn drain(
        &mut self,
        writer: &mut TraceWriter,
        target: &Target,
        clock: Clock,
    ) -> Result<(), GateError> {
        for (at, line) in target.drain_output() {
            if self.warmup_matched.is_none()
                && self
                    .warmup_until
                    .as_ref()
                    .is_some_and(|re| re.is_match(&line))
            {
                self.warmup_matched = Some(at);
                writer.write(&Record::Event(event(
                    clock.ms(at),
                    EventKind::Note,
                    format!("{}{line}", crate::trace::WARMUP_RELEASED_NOTE),
                )))?;
            }
            // The window closes at the first --until line after warm-up
            // (a line that released the warm-up does not also close it).
            else if self.warmup_released()
                && at >= self.warmup_ends
                && self.until.as_ref().is_some_and(|re| re.is_match(&line))
            {
                self.until = None;
                writer.write(&Record::Event(event(
                    clock.ms(at),
                    EventKind::Note,
                    // The line as far as the note needs it: a benchmark's
                    // line may be 64 KiB.
                    format!(
                        "{}{}",
                        crate::trace::WINDOW_CLOSED_NOTE,
                        line.chars().take(200).collect::<String>()
                    ),
                )))?;
            }
            if self.bytes + line.len() > OUTPUT_CAP_BYTES {
                if !self.capped {
                    self.capped = true;
                    writer.write(&Record::Event(event(
                        clock.ms(at),
                        EventKind::OutputTruncated,
                        format!(
                            "stdout beyond {OUTPUT_CAP_BYTES} bytes is passed through but not kept in the trace"
                        ),
                    )))?;
                }
                continue;
            }
            self.bytes += line.len();
            writer.write(&Record::Output(OutputRecord {
                t: clock.ms(at),
                line,
            }))?;
        }
        Ok(())
    }
}
