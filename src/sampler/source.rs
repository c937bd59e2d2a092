//! The seam between the recorder and where GPU counters come from: the
//! sampling loop (`record/sampling.rs`) and the end of a recording
//! (`record/finish.rs`) call a `GpuSource` and nothing else of it.
//!
//! NVML, with GPM where the GPU has it, is the one source today
//! (`nvml::GpuSampler`, opened by `nvml::open`). Another (DCGM) is one file
//! here implementing the trait plus its opening function, and the line in
//! `record/gpus.rs` (`open_gpus`) that chooses it: the loop, the header,
//! the end notes and the trace stay as they are.
//!
//! A recorded trace is not a source: `--replay` (`gate watch`, `gate
//! check`) hands on whole records, host columns, events and the end record
//! included, in file order and without a target or a clock
//! (`watch::replay`, `trace::Trace::load`), so it never enters the loop.

use crate::trace::{EventRecord, ProcessesRecord};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Instant;

/// What one tick produced besides the sample vectors.
#[derive(Debug, Default)]
pub struct TickExtras {
    pub events: Vec<EventRecord>,
    /// Emitted when the set of PIDs on a GPU changed.
    pub processes: Vec<ProcessesRecord>,
}

/// A GPU source, opened on the GPUs the header lists (in its order).
pub trait GpuSource {
    /// One sample of every GPU at `now` (`t_ms` on the trace's time axis):
    /// a vector of `GPU_METRICS` columns per GPU (None: not read, not
    /// supported, or not due), and the tick's events and process lists.
    /// `tree` is the target's process tree.
    fn sample(
        &mut self,
        now: Instant,
        t_ms: f64,
        tree: &HashSet<u32>,
    ) -> (Vec<Vec<Option<f64>>>, TickExtras);

    /// Metric ids each GPU cannot report (recorded as null), by GPU index:
    /// read after a first sample for the header, and at the end for what
    /// turned out unsupported since.
    fn unsupported(&self) -> BTreeMap<u32, Vec<String>>;

    /// PIDs on the GPUs at the last process refresh (the host sampler's
    /// main processes are the tree's among them).
    fn gpu_pids(&self) -> Box<dyn Iterator<Item = u32> + '_>;

    /// GPU indices on which a process of the target tree has been seen.
    fn target_gpus(&self) -> &BTreeSet<u32>;

    /// Energy by the GPU's own counter since the source opened, per GPU
    /// index, in joules (none where there is no such counter).
    fn energy_counter_j(&self) -> Vec<(u32, f64)>;

    /// Print where the source's own CPU time went (`GATE_PROFILE`).
    fn print_profile(&self);
}
