//! The GPU source of a recording (`sampler::source::GpuSource`): chosen
//! and opened before the header is written (the header says what it
//! cannot report), and its notes at the end. NVML (+GPM) is the source
//! today; another one (DCGM) is one file under `sampler/` implementing the
//! trait, and the line in `open_gpus` that chooses it.

use super::{event, Clock, RecordPlan};
use crate::error::GateError;
use crate::sampler::host;
use crate::sampler::nvml;
use crate::sampler::source::GpuSource;
use crate::trace::{EventKind, EventRecord, Fingerprint, Header, Record, TraceWriter};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// The GPU source opened on the selected GPUs: the fingerprint the header
/// carries (with what each GPU cannot report) and a primed source; no
/// source with `--no-gpu`.
pub(super) fn open_gpus(
    plan: &RecordPlan,
    start: Instant,
) -> Result<(Fingerprint, Option<Box<dyn GpuSource>>), GateError> {
    let mut fingerprint = Fingerprint {
        host: host::host_info(),
        ..Default::default()
    };
    let mut gpu_sampler: Option<Box<dyn GpuSource>> = None;
    if !plan.no_gpu {
        let cadence = nvml::Cadence {
            gpm_period: plan.gpm_interval,
            // NVML refreshes process utilization every ~200 ms: faster
            // asks only cost CPU.
            process_period: plan.process_interval.max(Duration::from_millis(200)),
            gpm: !plan.no_gpm,
        };
        // The source: NVML (+GPM). Another one is chosen here.
        let mut sampler: Box<dyn GpuSource> =
            Box::new(nvml::open(&plan.gpu, start, cadence, &mut fingerprint)?);
        // A probe tick discovers what each GPU cannot report, so the header
        // can say so, and primes the first GPM sample.
        let _ = sampler.sample(Instant::now(), 0.0, &HashSet::new());
        for g in fingerprint.gpus.iter_mut() {
            if let Some(u) = sampler.unsupported().get(&g.index) {
                g.unsupported = u.clone();
            }
        }
        gpu_sampler = Some(sampler);
    }
    Ok((fingerprint, gpu_sampler))
}

/// Per-GPU notes at the end: the energy counter over the recording, and
/// what turned out unsupported after the header was written.
pub(super) fn write_gpu_notes(
    sampler: &dyn GpuSource,
    header: &Header,
    writer: &mut TraceWriter,
    clock: Clock,
) -> Result<(), GateError> {
    for (gpu, joules) in sampler.energy_counter_j() {
        writer.write(&Record::Event(EventRecord {
            gpu: Some(gpu),
            ..event(
                clock.now_ms(),
                EventKind::Note,
                format!("NVML energy counter over the recording: {joules:.1} J (energy_j integrates power samples)"),
            )
        }))?;
    }
    for (gpu, unsupported) in sampler.unsupported() {
        let header_knew = header
            .fingerprint
            .gpus
            .iter()
            .find(|g| g.index == gpu)
            .map(|g| g.unsupported.clone())
            .unwrap_or_default();
        let new: Vec<String> = unsupported
            .into_iter()
            .filter(|u| !header_knew.contains(u))
            .collect();
        if !new.is_empty() {
            writer.write(&Record::Event(EventRecord {
                gpu: Some(gpu),
                ..event(
                    clock.now_ms(),
                    EventKind::Note,
                    format!(
                        "unsupported on this GPU (recorded as null): {}",
                        new.join(", ")
                    ),
                )
            }))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::source::TickExtras;
    use crate::trace::GpuInfo;
    use std::collections::{BTreeMap, BTreeSet};

    /// A second GPU source, as a DCGM one would be: the recorder's end
    /// notes come from the trait alone.
    struct Scripted {
        target: BTreeSet<u32>,
    }

    impl GpuSource for Scripted {
        fn sample(
            &mut self,
            _: Instant,
            _: f64,
            _: &HashSet<u32>,
        ) -> (Vec<Vec<Option<f64>>>, TickExtras) {
            (
                vec![vec![None; crate::metrics::GPU_METRICS.len()]],
                TickExtras::default(),
            )
        }
        fn unsupported(&self) -> BTreeMap<u32, Vec<String>> {
            [(0, vec!["power_w".to_string(), "tensor_pct".to_string()])].into()
        }
        fn gpu_pids(&self) -> Box<dyn Iterator<Item = u32> + '_> {
            Box::new(std::iter::empty())
        }
        fn target_gpus(&self) -> &BTreeSet<u32> {
            &self.target
        }
        fn energy_counter_j(&self) -> Vec<(u32, f64)> {
            vec![(0, 12.34)]
        }
        fn print_profile(&self) {}
    }

    #[test]
    fn another_source_gets_the_same_end_notes() {
        let dir = std::env::temp_dir().join(format!("gate-gpus-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.jsonl");
        let mut header = Header::default();
        header.fingerprint.gpus.push(GpuInfo {
            index: 0,
            unsupported: vec!["power_w".into()],
            ..Default::default()
        });
        let mut writer = TraceWriter::create(&path, &header).unwrap();
        let source = Scripted {
            target: BTreeSet::new(),
        };
        let clock = Clock { t0: Instant::now() };
        write_gpu_notes(&source, &header, &mut writer, clock).unwrap();
        writer.flush().unwrap();
        let text = std::fs::read_to_string(dir.join("t.jsonl.partial")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            text.contains("NVML energy counter over the recording: 12.3 J"),
            "{text}"
        );
        assert!(
            text.contains("unsupported on this GPU (recorded as null): tensor_pct\""),
            "{text}"
        );
    }
}
