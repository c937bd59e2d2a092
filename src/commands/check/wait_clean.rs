//! `gate check --wait-clean DURATION`: before a disturbed run is rerun,
//! wait (at most DURATION) for the processes outside the benchmark's tree
//! to leave its GPUs, so that the rerun has a chance to be clean.

use crate::summary::Run;
use std::time::{Duration, Instant};

/// How often the GPUs' process lists are read while waiting.
const POLL: Duration = Duration::from_secs(1);

/// Wait until no process holds a context on the GPUs `last` ran on (the
/// benchmark has exited, so any that remains is a neighbour), or until
/// `limit`. Returns what is still there when the wait ends (empty: clean).
pub(crate) fn wait_for_quiet_gpus(last: &Run, limit: Duration) -> Vec<(u32, u32)> {
    let gpus: Vec<u32> = last
        .header
        .fingerprint
        .gpus
        .iter()
        .map(|g| g.index)
        .collect();
    let Ok(nvml) = crate::sampler::nvml::NvmlContext::init() else {
        return Vec::new(); // no NVML: the rerun itself will say
    };
    let deadline = Instant::now() + limit;
    loop {
        let busy: Vec<(u32, u32)> = gpus
            .iter()
            .flat_map(|&g| {
                nvml.context_pids(g)
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |p| (g, p))
            })
            .collect();
        if busy.is_empty() || Instant::now() >= deadline {
            return busy;
        }
        crate::gate_eprintln!(
            "gate: waiting for {} process(es) outside the benchmark to leave GPU(s) {} (--wait-clean, {} s left)",
            busy.len(),
            gpus.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
            deadline.saturating_duration_since(Instant::now()).as_secs()
        );
        std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
    }
}
