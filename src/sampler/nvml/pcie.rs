//! PCIe throughput from NVML's byte counter, for GPUs sampled without GPM
//! (A100, L4, T4, `--no-gpm`): with GPM the columns come from GPM 20/21.
//!
//! `nvmlDeviceGetPcieThroughput` counts bytes over a 20 ms window and
//! blocks for it (~21 ms a call, docs/counters.md), so it never runs in the
//! sampling loop: one thread reads every GPU's TX then RX every
//! `PCIE_PERIOD` and leaves the latest reading where the loop picks it up.
//! A reading covers 20 ms of each period: the mean over a run is an
//! unbiased sample of the traffic unless the copies keep step with the
//! reader, and one tick's value is noisy.

use nvml_wrapper::enum_wrappers::device::PcieUtilCounter;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the reader starts a round (two blocking 20 ms calls a GPU).
pub(crate) const PCIE_PERIOD: Duration = Duration::from_millis(200);
/// A reading older than this is not shown (the reader fell behind).
const PCIE_STALE: Duration = Duration::from_millis(1000);

/// One GPU's state as the reader leaves it.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// (TX MiB/s, RX MiB/s, when read)
    latest: Option<(f64, f64, Instant)>,
    /// The GPU answered NotSupported: nothing more to read.
    unsupported: bool,
}

/// The reader thread; stops (and is joined) when dropped.
pub(crate) struct PcieReader {
    slots: Arc<Mutex<Vec<Slot>>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl PcieReader {
    /// Start reading the GPUs `indices` (slot i = indices[i]).
    pub(crate) fn start(nvml: &'static Nvml, indices: Vec<u32>) -> PcieReader {
        let slots = Arc::new(Mutex::new(vec![Slot::default(); indices.len()]));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (Arc::clone(&slots), Arc::clone(&stop));
        let handle = std::thread::Builder::new()
            .name("gate-pcie".into())
            .spawn(move || read_loop(nvml, &indices, &s, &st))
            .ok();
        PcieReader {
            slots,
            stop,
            handle,
        }
    }

    /// The latest fresh (TX, RX) in MiB/s of slot `slot`.
    pub(crate) fn latest(&self, slot: usize, now: Instant) -> Option<(f64, f64)> {
        let slots = self.slots.lock().ok()?;
        let (tx, rx, at) = slots.get(slot)?.latest?;
        (now.saturating_duration_since(at) <= PCIE_STALE).then_some((tx, rx))
    }

    /// Whether slot `slot` answered NotSupported.
    pub(crate) fn unsupported(&self, slot: usize) -> bool {
        self.slots
            .lock()
            .ok()
            .and_then(|s| s.get(slot).map(|x| x.unsupported))
            .unwrap_or(false)
    }
}

impl Drop for PcieReader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// NVML's KB/s (1024 bytes) in MiB/s.
fn mib_s(kb_s: u32) -> f64 {
    kb_s as f64 / 1024.0
}

fn read_loop(nvml: &'static Nvml, indices: &[u32], slots: &Mutex<Vec<Slot>>, stop: &AtomicBool) {
    let devices: Vec<_> = indices
        .iter()
        .map(|&i| nvml.device_by_index(i).ok())
        .collect();
    while !stop.load(Ordering::Relaxed) {
        let round = Instant::now();
        for (slot, d) in devices.iter().enumerate() {
            let Some(d) = d else { continue };
            if slots.lock().map(|s| s[slot].unsupported).unwrap_or(true) {
                continue;
            }
            let tx = d.pcie_throughput(PcieUtilCounter::Send);
            let rx = d.pcie_throughput(PcieUtilCounter::Receive);
            let Ok(mut s) = slots.lock() else { return };
            match (tx, rx) {
                (Ok(tx), Ok(rx)) => s[slot].latest = Some((mib_s(tx), mib_s(rx), Instant::now())),
                (Err(NvmlError::NotSupported), _) | (_, Err(NvmlError::NotSupported)) => {
                    s[slot].unsupported = true;
                }
                // Another error: no reading this round (the value goes stale).
                _ => {}
            }
        }
        // Sleep out the period in short steps so that a stop is prompt.
        while !stop.load(Ordering::Relaxed) && round.elapsed() < PCIE_PERIOD {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// README.md, docs/counters.md and docs/rules.md state the cadence.
    #[test]
    fn the_docs_state_the_readers_cadence() {
        let ms = PCIE_PERIOD.as_millis();
        for doc in ["README.md", "docs/counters.md", "docs/rules.md"] {
            let text = std::fs::read_to_string(format!("{}/{doc}", env!("CARGO_MANIFEST_DIR")))
                .unwrap()
                .replace('\n', " ");
            assert!(
                text.contains(&format!("every {ms} ms")),
                "{doc} does not say the PCIe reader runs every {ms} ms"
            );
        }
    }

    #[test]
    fn kb_per_second_become_mib_per_second() {
        assert_eq!(mib_s(1024), 1.0);
        assert_eq!(mib_s(20_480_000), 20_000.0);
    }
}
