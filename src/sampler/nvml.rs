//! GPU counters through NVML and, on Hopper and newer, its GPM metrics.
//! The only file that imports `nvml_wrapper`.
//!
//! Rules this file keeps (the measurements behind them: docs/counters.md):
//! - NVML is initialised once per process and leaked: devices and GPM
//!   samples borrow it for the whole recording.
//! - GPM metrics come from two samples more than 100 ms apart
//!   (`MIN_GPM_PAIR`), whatever the sampling interval; ticks between pairs
//!   carry no GPM value (null), never a repeated or zero one.
//! - A GPM reading that is NaN, or the all-zero glitch while NVML says the
//!   GPU is busy, is missing data (null + a `gpm_invalid` event).
//! - `nvmlDeviceGetPcieThroughput` blocks ~21 ms: never called in the
//!   sampling loop. With GPM, PCIe comes from GPM 20/21; without it, from
//!   that counter read on a thread of its own (`pcie.rs`).
//! - What a GPU cannot report (`NotSupported`) is listed in the header's
//!   `unsupported` and recorded as null.
//! - Process utilization returns `NotFound` when nothing is newer than the
//!   timestamp given: "no new sample", not an error.

use super::source::GpuSource;
pub use super::source::TickExtras;
use crate::error::GateError;
use crate::metrics::GPU_METRICS;
use crate::trace::{EventKind, EventRecord, Fingerprint, GpuInfo, ProcessInfo, ProcessesRecord};
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::gpm::{gpm_metrics_get, GpmSample};
use nvml_wrapper::{Device, EventSet, Nvml};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::{Duration, Instant};

// The cost probe of `examples/nvml-probe.rs`: not in the release binary.
mod pcie;
#[cfg(any(test, feature = "testkit"))]
pub mod probe;

/// Minimum spacing of a GPM pair. Pairs exactly 100 ms apart glitched about
/// once in 200 on the H200; 120 ms keeps a margin for timer jitter.
pub const MIN_GPM_PAIR: Duration = Duration::from_millis(120);
/// Default GPM period (`--gpm-interval`). A GPM pair averages the counters
/// over the whole time between its two samples, so a longer period loses
/// time resolution but no coverage: means stay exact. One sample+readout
/// costs ~1.8 ms of CPU on the H200 VM, so 500 ms keeps it near 0.4 %.
pub const DEFAULT_GPM_PERIOD: Duration = Duration::from_millis(500);
/// Process lists and per-process utilization refresh at most this often
/// by default (`Cadence::process_period`): NVML refreshes process
/// utilization only every ~200 ms anyway, and the calls cost ~2.7 ms of CPU
/// together on the H200 VM (process utilization alone 2.66 ms,
/// docs/counters.md). Memory info (66 us) is read with them.
pub(crate) const PROCESS_REFRESH: Duration = Duration::from_millis(1000);

/// How often the costly NVML calls are made (the cheap ones come every
/// sampling tick). What each costs: docs/counters.md and
/// `examples/nvml-probe.rs`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cadence {
    /// GPM sample + metrics readout (at least `MIN_GPM_PAIR`).
    pub gpm_period: Duration,
    /// Process lists, per-process utilization and memory info.
    pub process_period: Duration,
    /// Read GPM where the GPU has it; false (`--no-gpm`) records what a GPU
    /// without GPM gives: every GPM column null and listed unsupported.
    pub gpm: bool,
}

impl Default for Cadence {
    fn default() -> Self {
        Cadence {
            gpm_period: DEFAULT_GPM_PERIOD,
            process_period: PROCESS_REFRESH,
            gpm: true,
        }
    }
}
/// Xid events are polled this often (non-blocking).
pub(crate) const XID_POLL: Duration = Duration::from_millis(500);
/// Without any process-utilization sample for this long, nothing ran on the
/// SMs: shares read 0 rather than the last value.
const PROCESS_UTIL_STALE: Duration = Duration::from_secs(1);

/// GPM metrics we read, with the column they fill.
const GPM_COLUMNS: &[(GpmMetricId, &str)] = &[
    (GpmMetricId::GraphicsUtil, "graphics_pct"),
    (GpmMetricId::SmUtil, "sm_active_pct"),
    (GpmMetricId::SmOccupancy, "sm_occupancy_pct"),
    (GpmMetricId::IntegerUtil, "integer_pct"),
    (GpmMetricId::AnyTensorUtil, "tensor_pct"),
    (GpmMetricId::DfmaTensorUtil, "dfma_tensor_pct"),
    (GpmMetricId::HmmaTensorUtil, "hmma_tensor_pct"),
    (GpmMetricId::ImmaTensorUtil, "imma_tensor_pct"),
    (GpmMetricId::DramBwUtil, "dram_pct"),
    (GpmMetricId::Fp64Util, "fp64_pct"),
    (GpmMetricId::Fp32Util, "fp32_pct"),
    (GpmMetricId::Fp16Util, "fp16_pct"),
    (GpmMetricId::PcieTxPerSec, "pcie_tx_mib_s"),
    (GpmMetricId::PcieRxPerSec, "pcie_rx_mib_s"),
    (GpmMetricId::NvlinkTotalTxPerSec, "nvlink_tx_mib_s"),
    (GpmMetricId::NvlinkTotalRxPerSec, "nvlink_rx_mib_s"),
];

/// The PCIe columns: GPM's where the GPU has it, else NVML's counter.
const PCIE_COLUMNS: [&str; 2] = ["pcie_tx_mib_s", "pcie_rx_mib_s"];

/// NVLink GPM columns: requested only from a GPU with an active link.
const NVLINK_COLUMNS: [&str; 2] = ["nvlink_tx_mib_s", "nvlink_rx_mib_s"];
/// NVML_NVLINK_MAX_LINKS: links probed once when a sampler starts.
const MAX_NVLINKS: u32 = 18;

/// The GPM metrics to request from `device`: all of `GPM_COLUMNS`, less the
/// NVLink ones when no NVLink link is active (a GPU without NVLink has
/// nothing to report there; `metrics get` costs more with every id). Ids
/// the GPU answers NotSupported for are dropped after the first readout.
pub(crate) fn gpm_ids_for(device: &Device) -> Vec<(GpmMetricId, &'static str)> {
    let nvlink =
        (0..MAX_NVLINKS).any(|l| matches!(device.link_wrapper_for(l).is_active(), Ok(true)));
    GPM_COLUMNS
        .iter()
        .copied()
        .filter(|(_, c)| nvlink || !NVLINK_COLUMNS.contains(c))
        .collect()
}

/// `nvmlDeviceGetMemoryInfo` (v1: used and total bytes). nvml-wrapper
/// exposes only v2, which also computes reserved memory; the probe
/// measures both, and the sampler uses this one when it is cheaper.
pub(crate) fn memory_info_v1(device: &Device) -> Result<(u64, u64), NvmlError> {
    let lib = device.nvml().lib();
    let sym = lib
        .nvmlDeviceGetMemoryInfo
        .as_ref()
        .map_err(|_| NvmlError::FailedToLoadSymbol("nvmlDeviceGetMemoryInfo".into()))?;
    // SAFETY: the symbol comes from the loaded NVML; the device handle is
    // valid while `device` lives; the struct is ours and zero-initialised.
    unsafe {
        let mut info: nvml_wrapper_sys::bindings::nvmlMemory_t = std::mem::zeroed();
        match sym(device.handle(), &mut info) {
            0 => Ok((info.used, info.total)),
            code => Err(nvml_wrapper::error::nvml_try(code)
                .err()
                .unwrap_or(NvmlError::Unknown)),
        }
    }
}

/// Column of a GPU metric in the sample vector. A `const fn`, so the hot
/// path writes `const { col("gpu_busy_pct") }` and pays nothing at run time
/// (an unknown id fails the build).
pub const fn col(id: &str) -> usize {
    let mut i = 0;
    while i < GPU_METRICS.len() {
        if str_eq(GPU_METRICS[i].id, id) {
            return i;
        }
        i += 1;
    }
    panic!("unknown GPU metric id")
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The message for a missing NVML library: names it and the fix.
pub(crate) fn missing_nvml_message(err: &str) -> String {
    format!(
        "NVML (libnvidia-ml.so.1) could not be loaded ({err}): install the NVIDIA driver, or in a container \
         run with the GPU runtime (--gpus all) so the library and /dev/nvidia* are mounted; \
         use --no-gpu to record host counters only"
    )
}

/// NVML opened on the GPUs `selection` names: the driver versions and each GPU's
/// description go into `fingerprint`, and the sampler on them is returned
/// (`record` primes it with a probe tick).
pub fn open(
    selection: &GpuSelection,
    start: Instant,
    cadence: Cadence,
    fingerprint: &mut Fingerprint,
) -> Result<GpuSampler, GateError> {
    let nvml = NvmlContext::init()?;
    let v = nvml.versions();
    fingerprint.driver_version = v.driver;
    fingerprint.nvml_version = v.nvml;
    fingerprint.cuda_driver_version = v.cuda_driver;
    let indices = nvml.select(selection)?;
    for &i in &indices {
        let mut info = nvml.gpu_info(i)?;
        // Recorded as a GPU without GPM would be (`--no-gpm`): the header's
        // `gpm_supported` says what this trace has, not the silicon.
        info.gpm_supported &= cadence.gpm;
        fingerprint.gpus.push(info);
    }
    nvml.sampler(&indices, start, cadence)
}

/// `--gpu` parsed before NVML is opened: every GPU the process may see
/// (no flag; CUDA_VISIBLE_DEVICES applied), all of them ('all'), or the
/// indices of a list ('0,2'; checked against the machine by `select`).
#[derive(Debug, Clone)]
pub enum GpuSelection {
    Visible,
    All,
    /// The indices in the order given, without repeats, and the flag's
    /// text (for messages).
    Indices {
        spec: String,
        indices: Vec<u32>,
    },
}

impl GpuSelection {
    /// `--gpu LIST`; a list that names no GPU index is a usage error.
    pub fn parse(spec: Option<&str>) -> Result<GpuSelection, GateError> {
        let Some(spec) = spec.map(str::trim) else {
            return Ok(GpuSelection::Visible);
        };
        if spec.eq_ignore_ascii_case("all") {
            return Ok(GpuSelection::All);
        }
        let shown = crate::escape::terminal(spec);
        let mut indices = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let idx: u32 = part.parse().map_err(|_| {
                GateError::usage(format!(
                    "--gpu '{shown}': '{}' is not a GPU index; use e.g. --gpu 0,2 or --gpu all",
                    crate::escape::terminal(part)
                ))
            })?;
            if !indices.contains(&idx) {
                indices.push(idx);
            }
        }
        if indices.is_empty() {
            return Err(GateError::usage(format!(
                "--gpu '{shown}' selects no GPU; use e.g. --gpu 0 or --gpu all"
            )));
        }
        Ok(GpuSelection::Indices {
            spec: shown,
            indices,
        })
    }
}

/// An initialised NVML, leaked for the life of the process.
pub struct NvmlContext {
    nvml: &'static Nvml,
}

pub struct Versions {
    pub driver: Option<String>,
    pub nvml: Option<String>,
    pub(crate) cuda_driver: Option<String>,
}

impl NvmlContext {
    pub fn init() -> Result<NvmlContext, GateError> {
        match Nvml::init() {
            Ok(nvml) => Ok(NvmlContext {
                nvml: Box::leak(Box::new(nvml)),
            }),
            Err(e @ (NvmlError::LibloadingError(_) | NvmlError::LibraryNotFound)) => {
                Err(GateError::infra(missing_nvml_message(&e.to_string())))
            }
            Err(NvmlError::NoPermission) => Err(GateError::infra(
                "NVML refused access (NoPermission): run as a user that can open /dev/nvidia*, \
                 or use --no-gpu to record host counters only",
            )),
            Err(NvmlError::DriverNotLoaded) => Err(GateError::infra(
                "NVML found no loaded NVIDIA driver (DriverNotLoaded): load the driver (nvidia-smi should work), \
                 or use --no-gpu to record host counters only",
            )),
            Err(e) => Err(GateError::infra(format!(
                "NVML initialisation failed: {e}; check that nvidia-smi works, or use --no-gpu"
            ))),
        }
    }

    pub fn versions(&self) -> Versions {
        let cuda = self.nvml.sys_cuda_driver_version().ok().map(|v| {
            format!(
                "{}.{}",
                nvml_wrapper::cuda_driver_version_major(v),
                nvml_wrapper::cuda_driver_version_minor(v)
            )
        });
        Versions {
            driver: self.nvml.sys_driver_version().ok(),
            nvml: self.nvml.sys_nvml_version().ok(),
            cuda_driver: cuda,
        }
    }

    pub(crate) fn device_count(&self) -> Result<u32, GateError> {
        self.nvml
            .device_count()
            .map_err(|e| GateError::infra(format!("NVML could not count GPUs: {e}")))
    }

    fn device(&self, index: u32) -> Result<Device<'static>, GateError> {
        self.nvml.device_by_index(index).map_err(|e| {
            GateError::usage(format!(
                "GPU {index} cannot be opened ({e}); 'gate doctor' lists the GPUs this machine has"
            ))
        })
    }

    /// Static facts about a GPU for the trace header.
    pub(crate) fn gpu_info(&self, index: u32) -> Result<GpuInfo, GateError> {
        let d = self.device(index)?;
        let gpm = d.gpm_support().unwrap_or(false);
        Ok(GpuInfo {
            index,
            uuid: d.uuid().unwrap_or_default(),
            name: d.name().unwrap_or_else(|_| "unknown".into()),
            pci_bus_id: d.pci_info().map(|p| p.bus_id).unwrap_or_default(),
            memory_total_mib: d
                .memory_info()
                .map(|m| m.total as f64 / 1048576.0)
                .unwrap_or(0.0),
            power_limit_w: d.enforced_power_limit().ok().map(|mw| mw as f64 / 1000.0),
            mig_enabled: d.mig_mode().ok().map(|m| m.current == 1),
            ecc_enabled: d.is_ecc_enabled().ok().map(|e| e.currently_enabled),
            gpm_supported: gpm,
            unsupported: Vec::new(),
        })
    }

    /// The GPU indices `selection` names, checked against this machine's.
    pub(crate) fn select(&self, selection: &GpuSelection) -> Result<Vec<u32>, GateError> {
        let count = self.device_count()?;
        let all: Vec<u32> = (0..count).collect();
        match selection {
            GpuSelection::Visible => Ok(self.visible(&all)),
            GpuSelection::All => Ok(all),
            GpuSelection::Indices { spec, indices } => {
                if let Some(idx) = indices.iter().find(|&&i| i >= count) {
                    return Err(GateError::usage(format!(
                        "--gpu '{spec}': GPU {idx} does not exist (this machine has {count}: 0..{})",
                        count.saturating_sub(1)
                    )));
                }
                Ok(indices.clone())
            }
        }
    }

    /// Honour CUDA_VISIBLE_DEVICES (indices or UUID prefixes), as the
    /// target will.
    fn visible(&self, all: &[u32]) -> Vec<u32> {
        let Ok(spec) = std::env::var("CUDA_VISIBLE_DEVICES") else {
            return all.to_vec();
        };
        let mut out = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if let Ok(i) = part.parse::<u32>() {
                if all.contains(&i) {
                    out.push(i);
                }
            } else if part.starts_with("GPU-") {
                for &i in all {
                    if self
                        .device(i)
                        .ok()
                        .and_then(|d| d.uuid().ok())
                        .is_some_and(|u| u.starts_with(part))
                    {
                        out.push(i);
                    }
                }
            }
        }
        if out.is_empty() {
            all.to_vec()
        } else {
            out
        }
    }

    pub fn sampler(
        &self,
        indices: &[u32],
        start: Instant,
        cadence: Cadence,
    ) -> Result<GpuSampler, GateError> {
        let mut gpus = Vec::new();
        for &index in indices {
            let device = self.device(index)?;
            let gpm_supported = cadence.gpm && device.gpm_support().unwrap_or(false);
            let energy_start_mj = device.total_energy_consumption().ok();
            let gpm_ids = if gpm_supported {
                gpm_ids_for(&device)
            } else {
                Vec::new()
            };
            let mut unsupported = BTreeSet::new();
            if gpm_supported && gpm_ids.len() < GPM_COLUMNS.len() {
                // No active NVLink: nothing to report, recorded as null.
                unsupported.extend(NVLINK_COLUMNS);
            }
            gpus.push(GpuState {
                index,
                slot: gpus.len(),
                device,
                gpm_supported,
                gpm_ids,
                gpm_prev: None,
                gpm_period: cadence.gpm_period.max(MIN_GPM_PAIR),
                process_period: cadence.process_period,
                energy_start_mj,
                energy_j: 0.0,
                last_power: None,
                unsupported,
                errors_seen: BTreeSet::new(),
                procs_at: None,
                proc_util_ts: 0,
                proc_util_at: None,
                proc_cols: ProcCols::default(),
                last_pids: BTreeSet::new(),
                last_busy_pct: None,
            });
        }
        let xid = self.xid_events(&gpus);
        // Without GPM, PCIe from NVML's byte counter on its own thread.
        let pcie = gpus
            .iter()
            .any(|g| !g.gpm_supported)
            .then(|| pcie::PcieReader::start(self.nvml, gpus.iter().map(|g| g.index).collect()));
        Ok(GpuSampler {
            nvml: self.nvml,
            gpus,
            pcie,
            xid,
            xid_polled_at: start,
            target_gpus: BTreeSet::new(),
            profile: super::CpuProfile::from_env(),
        })
    }

    /// One event set for critical Xid errors on all sampled GPUs; None when
    /// unsupported (noted in the trace, never fatal).
    fn xid_events(&self, gpus: &[GpuState]) -> Option<EventSet<'static>> {
        let mut set = self.nvml.create_event_set().ok()?;
        for g in gpus {
            set = match g
                .device
                .register_events(EventTypes::CRITICAL_XID_ERROR, set)
            {
                Ok(s) => s,
                Err(_) => self.nvml.create_event_set().ok()?,
            };
        }
        Some(set)
    }
}

/// Per-process columns refreshed every `PROCESS_REFRESH`, carried between.
#[derive(Debug, Clone, Default)]
struct ProcCols {
    processes: Option<f64>,
    other_processes: Option<f64>,
    target_mem_mib: Option<f64>,
    target_sm_share_pct: Option<f64>,
    other_sm_share_pct: Option<f64>,
    mem_used_mib: Option<f64>,
    mem_used_pct: Option<f64>,
    /// Latest SM share by PID (for the processes table).
    sm_by_pid: BTreeMap<u32, f64>,
    mem_by_pid: BTreeMap<u32, Option<f64>>,
}

struct GpuState {
    index: u32,
    slot: usize,
    device: Device<'static>,
    gpm_supported: bool,
    /// GPM metrics requested from this GPU (see `gpm_ids_for`).
    gpm_ids: Vec<(GpmMetricId, &'static str)>,
    gpm_prev: Option<(GpmSample<'static>, Instant)>,
    gpm_period: Duration,
    process_period: Duration,
    energy_start_mj: Option<u64>,
    energy_j: f64,
    last_power: Option<(f64, f64)>,
    unsupported: BTreeSet<&'static str>,
    errors_seen: BTreeSet<String>,
    procs_at: Option<Instant>,
    proc_util_ts: u64,
    proc_util_at: Option<Instant>,
    proc_cols: ProcCols,
    last_pids: BTreeSet<u32>,
    last_busy_pct: Option<f64>,
}

pub struct GpuSampler {
    nvml: &'static Nvml,
    gpus: Vec<GpuState>,
    /// NVML's PCIe counter, read off the loop, for GPUs sampled without GPM.
    pcie: Option<pcie::PcieReader>,
    xid: Option<EventSet<'static>>,
    xid_polled_at: Instant,
    /// GPUs on which a process of the target tree has been seen.
    pub target_gpus: BTreeSet<u32>,
    pub(crate) profile: super::CpuProfile,
}

impl GpuSampler {
    /// Energy by the NVML counter since the sampler started, per GPU index,
    /// in joules (one call per GPU: see the cost note in `sample_basic`).
    pub(crate) fn energy_counter_j(&self) -> Vec<(u32, f64)> {
        self.gpus
            .iter()
            .filter_map(|g| {
                let now = g.device.total_energy_consumption().ok()?;
                Some((
                    g.index,
                    now.saturating_sub(g.energy_start_mj?) as f64 / 1000.0,
                ))
            })
            .collect()
    }

    /// Metric ids each GPU turned out not to support, by GPU index.
    pub fn unsupported(&self) -> BTreeMap<u32, Vec<String>> {
        self.gpus
            .iter()
            .map(|g| {
                let mut u: Vec<String> = g.unsupported.iter().map(|s| s.to_string()).collect();
                if !g.gpm_supported {
                    // PCIe comes from NVML's counter unless it refused.
                    let nvml_pcie = self.pcie.as_ref().is_some_and(|p| !p.unsupported(g.slot));
                    u.extend(
                        GPM_COLUMNS
                            .iter()
                            .map(|(_, c)| *c)
                            .filter(|c| !(nvml_pcie && PCIE_COLUMNS.contains(c)))
                            .map(str::to_string),
                    );
                }
                (g.index, u)
            })
            .collect()
    }

    /// PIDs NVML listed on the sampled GPUs at its last process refresh
    /// (the host sampler's main processes are the tree's among them).
    pub(crate) fn gpu_pids(&self) -> impl Iterator<Item = u32> + '_ {
        (self.gpus.iter()).flat_map(|g| g.proc_cols.mem_by_pid.keys().copied())
    }

    /// Take one sample of every GPU. `tree` is the target's process tree.
    pub fn sample(
        &mut self,
        now: Instant,
        t_ms: f64,
        tree: &HashSet<u32>,
    ) -> (Vec<Vec<Option<f64>>>, TickExtras) {
        let mut extras = TickExtras::default();
        let mut out = Vec::with_capacity(self.gpus.len());
        for g in &mut self.gpus {
            let mut v = vec![None; GPU_METRICS.len()];
            let c = self.profile.start();
            g.sample_basic(&mut v, t_ms, &mut extras.events, &mut self.profile);
            self.profile.stop("nvml_basic", c);
            let c = self.profile.start();
            g.sample_processes(&mut v, now, t_ms, tree, &mut extras);
            self.profile.stop("nvml_procs", c);
            if g.proc_cols.last_pids_in_target(tree) {
                self.target_gpus.insert(g.index);
            }
            let c = self.profile.start();
            g.sample_gpm(self.nvml, &mut v, now, t_ms, &mut extras.events);
            self.profile.stop("nvml_gpm", c);
            if let (false, Some(p)) = (g.gpm_supported, &self.pcie) {
                if let Some((tx, rx)) = p.latest(g.slot, now) {
                    v[const { col("pcie_tx_mib_s") }] = Some(tx);
                    v[const { col("pcie_rx_mib_s") }] = Some(rx);
                }
            }
            out.push(v);
        }
        if now.duration_since(self.xid_polled_at) >= XID_POLL {
            self.xid_polled_at = now;
            let c = self.profile.start();
            self.poll_xid(t_ms, &mut extras.events);
            self.profile.stop("nvml_xid", c);
        }
        (out, extras)
    }

    fn poll_xid(&mut self, t_ms: f64, events: &mut Vec<EventRecord>) {
        let Some(set) = &self.xid else { return };
        // Drain what is queued; wait(0) returns Timeout when nothing is.
        for _ in 0..16 {
            match set.wait(0) {
                Ok(data) => {
                    let code = match data.event_data {
                        Some(XidError::Value(x)) => Some(x as i64),
                        _ => None,
                    };
                    let uuid = data.device.uuid().unwrap_or_default();
                    let gpu = self
                        .gpus
                        .iter()
                        .find(|g| g.device.uuid().ok().as_deref() == Some(uuid.as_str()))
                        .map(|g| g.index);
                    events.push(EventRecord {
                        t: t_ms,
                        kind: EventKind::Xid,
                        gpu,
                        pid: None,
                        code,
                        message: format!(
                            "Xid {} on {uuid}",
                            code.map(|c| c.to_string()).unwrap_or_else(|| "?".into())
                        ),
                    });
                }
                Err(_) => break,
            }
        }
    }
}

/// The recorder's view of the NVML sampler (`sampler::source`).
impl GpuSource for GpuSampler {
    fn sample(
        &mut self,
        now: Instant,
        t_ms: f64,
        tree: &HashSet<u32>,
    ) -> (Vec<Vec<Option<f64>>>, TickExtras) {
        GpuSampler::sample(self, now, t_ms, tree)
    }

    fn unsupported(&self) -> BTreeMap<u32, Vec<String>> {
        GpuSampler::unsupported(self)
    }

    fn gpu_pids(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        Box::new(GpuSampler::gpu_pids(self))
    }

    fn target_gpus(&self) -> &BTreeSet<u32> {
        &self.target_gpus
    }

    fn energy_counter_j(&self) -> Vec<(u32, f64)> {
        GpuSampler::energy_counter_j(self)
    }

    fn print_profile(&self) {
        self.profile.print();
    }
}

impl ProcCols {
    fn last_pids_in_target(&self, tree: &HashSet<u32>) -> bool {
        self.mem_by_pid.keys().any(|p| tree.contains(p))
    }
}

impl GpuState {
    /// Record an NVML result: NotSupported marks the metric unsupported;
    /// other errors become one `nvml_error` event per (metric, error).
    fn ok<T>(
        &mut self,
        metric: &'static str,
        r: Result<T, NvmlError>,
        t_ms: f64,
        events: &mut Vec<EventRecord>,
    ) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(NvmlError::NotSupported) => {
                self.unsupported.insert(metric);
                None
            }
            Err(e) => {
                let key = format!("{metric}: {e}");
                if self.errors_seen.insert(key.clone()) {
                    events.push(EventRecord {
                        t: t_ms,
                        kind: EventKind::NvmlError,
                        gpu: Some(self.index),
                        pid: None,
                        code: None,
                        message: key,
                    });
                }
                None
            }
        }
    }

    fn sample_basic(
        &mut self,
        v: &mut [Option<f64>],
        t_ms: f64,
        events: &mut Vec<EventRecord>,
        prof: &mut super::CpuProfile,
    ) {
        let d = &self.device;
        macro_rules! timed {
            ($name:literal, $e:expr) => {{
                let c = prof.start();
                let r = $e;
                prof.stop($name, c);
                r
            }};
        }
        let util = timed!("utilization", d.utilization_rates());
        let sm_clock = timed!("clock_sm", d.clock_info(Clock::SM));
        let mem_clock = timed!("clock_mem", d.clock_info(Clock::Memory));
        // Deprecated in CUDA 13 but still served (docs/counters.md).
        let reasons = timed!("throttle", d.current_throttle_reasons());
        let power = timed!("power", d.power_usage());
        let temp = timed!("temperature", d.temperature(TemperatureSensor::Gpu));
        if let Some(u) = self.ok("gpu_busy_pct", util, t_ms, events) {
            v[const { col("gpu_busy_pct") }] = Some(u.gpu as f64);
            v[const { col("mem_busy_pct") }] = Some(u.memory as f64);
            self.last_busy_pct = Some(u.gpu as f64);
        } else {
            self.last_busy_pct = None;
        }
        v[const { col("sm_clock_mhz") }] = self
            .ok("sm_clock_mhz", sm_clock, t_ms, events)
            .map(|c| c as f64);
        v[const { col("mem_clock_mhz") }] = self
            .ok("mem_clock_mhz", mem_clock, t_ms, events)
            .map(|c| c as f64);
        if let Some(r) = self.ok("throttle_power_pct", reasons, t_ms, events) {
            let pct = |mask: ThrottleReasons| if r.intersects(mask) { 100.0 } else { 0.0 };
            v[const { col("throttle_power_pct") }] = Some(pct(
                ThrottleReasons::SW_POWER_CAP | ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN
            ));
            v[const { col("throttle_thermal_pct") }] = Some(pct(
                ThrottleReasons::SW_THERMAL_SLOWDOWN | ThrottleReasons::HW_THERMAL_SLOWDOWN,
            ));
            v[const { col("throttle_other_pct") }] = Some(pct(ThrottleReasons::HW_SLOWDOWN
                | ThrottleReasons::SYNC_BOOST
                | ThrottleReasons::APPLICATIONS_CLOCKS_SETTING
                | ThrottleReasons::DISPLAY_CLOCK_SETTING));
        }
        v[const { col("power_w") }] = self
            .ok("power_w", power, t_ms, events)
            .map(|mw| mw as f64 / 1000.0);
        // Energy is the running integral of power (trapezoid rule): the NVML
        // energy counter costs ~5 ms of CPU per call on the H200 VM (measured
        // with GATE_PROFILE), so it is read only at the start and the end.
        if let Some(w) = v[const { col("power_w") }] {
            if let Some((prev_t_ms, prev_w)) = self.last_power {
                self.energy_j += (w + prev_w) / 2.0 * (t_ms - prev_t_ms).max(0.0) / 1000.0;
            }
            self.last_power = Some((t_ms, w));
            v[const { col("energy_j") }] = Some(self.energy_j);
        }
        v[const { col("temperature_c") }] = self
            .ok("temperature_c", temp, t_ms, events)
            .map(|c| c as f64);
    }

    fn sample_processes(
        &mut self,
        v: &mut [Option<f64>],
        now: Instant,
        t_ms: f64,
        tree: &HashSet<u32>,
        extras: &mut TickExtras,
    ) {
        let due = self
            .procs_at
            .is_none_or(|t| now.duration_since(t) >= self.process_period);
        if due {
            self.procs_at = Some(now);
            // Memory info with the process refresh: 66 us per call on the
            // H200 VM, the costliest of the per-tick calls, for a value that
            // moves with allocations, not with every 100 ms tick.
            let mem = memory_info_v1(&self.device);
            match self.ok("mem_used_mib", mem, t_ms, &mut extras.events) {
                Some((used, total)) => {
                    self.proc_cols.mem_used_mib = Some(used as f64 / 1048576.0);
                    self.proc_cols.mem_used_pct =
                        (total > 0).then(|| used as f64 / total as f64 * 100.0);
                }
                None => {
                    self.proc_cols.mem_used_mib = None;
                    self.proc_cols.mem_used_pct = None;
                }
            }
            let compute = self.device.running_compute_processes();
            let graphics = self.device.running_graphics_processes();
            let compute = self.ok("processes", compute, t_ms, &mut extras.events);
            let graphics = graphics.ok();
            if let Some(compute) = compute {
                let mut mem_by_pid: BTreeMap<u32, Option<f64>> = BTreeMap::new();
                for p in compute.iter().chain(graphics.iter().flatten()) {
                    let mib = match p.used_gpu_memory {
                        nvml_wrapper::enums::device::UsedGpuMemory::Used(b) => {
                            Some(b as f64 / 1048576.0)
                        }
                        nvml_wrapper::enums::device::UsedGpuMemory::Unavailable => None,
                    };
                    mem_by_pid.insert(p.pid, mib);
                }
                let others = mem_by_pid.keys().filter(|p| !tree.contains(p)).count();
                self.proc_cols.processes = Some(mem_by_pid.len() as f64);
                self.proc_cols.other_processes = Some(others as f64);
                let target_mem: f64 = mem_by_pid
                    .iter()
                    .filter(|(p, _)| tree.contains(p))
                    .filter_map(|(_, m)| *m)
                    .sum();
                self.proc_cols.target_mem_mib = Some(target_mem);
                self.proc_cols.mem_by_pid = mem_by_pid;
            }
            self.sample_process_util(now, t_ms, tree, &mut extras.events);
            let pids: BTreeSet<u32> = self.proc_cols.mem_by_pid.keys().copied().collect();
            if pids != self.last_pids {
                self.last_pids = pids;
                extras.processes.push(self.processes_record(t_ms, tree));
            }
        }
        let c = &self.proc_cols;
        v[const { col("mem_used_mib") }] = c.mem_used_mib;
        v[const { col("mem_used_pct") }] = c.mem_used_pct;
        v[const { col("processes") }] = c.processes;
        v[const { col("other_processes") }] = c.other_processes;
        v[const { col("target_mem_mib") }] = c.target_mem_mib;
        v[const { col("target_sm_share_pct") }] = c.target_sm_share_pct;
        v[const { col("other_sm_share_pct") }] = c.other_sm_share_pct;
    }

    fn sample_process_util(
        &mut self,
        now: Instant,
        t_ms: f64,
        tree: &HashSet<u32>,
        events: &mut Vec<EventRecord>,
    ) {
        match self.device.process_utilization_stats(self.proc_util_ts) {
            Ok(samples) if !samples.is_empty() => {
                let mut by_pid: BTreeMap<u32, (f64, u32)> = BTreeMap::new();
                for s in &samples {
                    self.proc_util_ts = self.proc_util_ts.max(s.timestamp);
                    let e = by_pid.entry(s.pid).or_insert((0.0, 0));
                    e.0 += s.sm_util as f64;
                    e.1 += 1;
                }
                let share: BTreeMap<u32, f64> = by_pid
                    .into_iter()
                    .map(|(p, (sum, n))| (p, sum / n as f64))
                    .collect();
                self.proc_cols.target_sm_share_pct = Some(
                    share
                        .iter()
                        .filter(|(p, _)| tree.contains(p))
                        .map(|(_, s)| s)
                        .sum(),
                );
                self.proc_cols.other_sm_share_pct = Some(
                    share
                        .iter()
                        .filter(|(p, _)| !tree.contains(p))
                        .map(|(_, s)| s)
                        .sum(),
                );
                self.proc_cols.sm_by_pid = share;
                self.proc_util_at = Some(now);
            }
            // Empty or NotFound: nothing newer than our timestamp.
            Ok(_) | Err(NvmlError::NotFound) => {
                let stale = self
                    .proc_util_at
                    .is_none_or(|t| now.duration_since(t) >= PROCESS_UTIL_STALE);
                if stale {
                    self.proc_cols.target_sm_share_pct = Some(0.0);
                    self.proc_cols.other_sm_share_pct = Some(0.0);
                    self.proc_cols.sm_by_pid.clear();
                }
            }
            Err(e) => {
                let _ = self.ok::<()>("target_sm_share_pct", Err(e), t_ms, events);
                self.proc_cols.target_sm_share_pct = None;
                self.proc_cols.other_sm_share_pct = None;
            }
        }
    }

    fn processes_record(&self, t_ms: f64, tree: &HashSet<u32>) -> ProcessesRecord {
        let procs = self
            .proc_cols
            .mem_by_pid
            .iter()
            .map(|(&pid, &mem)| {
                let (name, cmdline) = super::host::process_name(pid);
                ProcessInfo {
                    pid,
                    name,
                    cmdline,
                    in_target: tree.contains(&pid),
                    gpu_mem_mib: mem,
                    sm_share_pct: self.proc_cols.sm_by_pid.get(&pid).copied(),
                    cpu_pct: None,
                    rss_mib: None,
                }
            })
            .collect();
        ProcessesRecord {
            t: t_ms,
            gpu: self.index,
            procs,
        }
    }

    fn sample_gpm(
        &mut self,
        nvml: &'static Nvml,
        v: &mut [Option<f64>],
        now: Instant,
        t_ms: f64,
        events: &mut Vec<EventRecord>,
    ) {
        if !self.gpm_supported {
            return;
        }
        if let Some((_, at)) = &self.gpm_prev {
            if now.duration_since(*at) < self.gpm_period {
                return;
            }
        }
        let sample = match self.device.gpm_sample() {
            Ok(s) => s,
            Err(e) => {
                let _ = self.ok::<()>("sm_active_pct", Err(e), t_ms, events);
                return;
            }
        };
        let Some((prev, _)) = self.gpm_prev.replace((sample, now)) else {
            return;
        };
        let current = &self.gpm_prev.as_ref().expect("just set").0;
        let ids: Vec<GpmMetricId> = self.gpm_ids.iter().map(|c| c.0).collect();
        let results = match gpm_metrics_get(nvml, &prev, current, &ids) {
            Ok(r) => r,
            Err(e) => {
                let _ = self.ok::<()>("sm_active_pct", Err(e), t_ms, events);
                return;
            }
        };
        let mut values: Vec<Option<f64>> = Vec::with_capacity(results.len());
        let mut any_nan = false;
        let mut dropped = Vec::new();
        for (r, (_, column)) in results.into_iter().zip(&self.gpm_ids) {
            match r {
                Ok(m) if m.value.is_finite() => values.push(Some(m.value)),
                Ok(_) => {
                    any_nan = true;
                    values.push(None);
                }
                Err(NvmlError::NotSupported) => {
                    self.unsupported.insert(column);
                    dropped.push(*column);
                    values.push(None);
                }
                Err(_) => {
                    any_nan = true;
                    values.push(None);
                }
            }
        }
        let columns: Vec<&'static str> = self.gpm_ids.iter().map(|c| c.1).collect();
        // Never ask again for what this GPU does not support.
        self.gpm_ids.retain(|(_, c)| !dropped.contains(c));
        if is_gpm_glitch(&values, any_nan, self.last_busy_pct) {
            events.push(EventRecord {
                t: t_ms,
                kind: EventKind::GpmInvalid,
                gpu: Some(self.index),
                pid: None,
                code: None,
                message: "GPM pair read all zero/NaN while the GPU was busy; recorded as missing"
                    .into(),
            });
            return;
        }
        for (value, column) in values.into_iter().zip(columns) {
            v[col(column)] = value;
        }
        let _ = self.slot;
    }
}

pub(crate) use crate::trace::validity::is_gpm_glitch;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gpm_column_is_a_gpu_metric() {
        // The sampler writes GPM values at `col(column)` at run time.
        for (_, c) in GPM_COLUMNS {
            assert_eq!(GPU_METRICS[col(c)].id, *c);
        }
    }

    #[test]
    fn missing_library_message_names_it_and_the_fix() {
        let m = missing_nvml_message("libnvidia-ml.so.1: cannot open shared object file");
        assert!(m.contains("libnvidia-ml.so.1"));
        assert!(m.contains("--no-gpu"));
    }
}

/// What `gate doctor` learns about one GPU beyond the trace header.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceProbe {
    pub gpm_supported: bool,
    /// "ok", "no new sample yet (ok)", "not supported", or the NVML error.
    pub(crate) process_utilization: String,
    pub(crate) process_utilization_ok: bool,
    /// PIDs NVML reports that are not visible in this /proc (container PID namespace).
    pub(crate) invisible_pids: Vec<u32>,
}

impl NvmlContext {
    pub fn probe(&self, index: u32) -> Result<DeviceProbe, GateError> {
        let d = self.device(index)?;
        let (process_utilization, process_utilization_ok) = match d.process_utilization_stats(0) {
            Ok(_) => ("ok".to_string(), true),
            Err(NvmlError::NotFound) => ("ok (no process sample yet)".to_string(), true),
            Err(NvmlError::NotSupported) => ("not supported".to_string(), false),
            Err(e) => (format!("error: {e}"), false),
        };
        let mut invisible_pids = Vec::new();
        for p in d.running_compute_processes().unwrap_or_default() {
            if !std::path::Path::new(&format!("/proc/{}", p.pid)).exists() {
                invisible_pids.push(p.pid);
            }
        }
        Ok(DeviceProbe {
            gpm_supported: d.gpm_support().unwrap_or(false),
            process_utilization,
            process_utilization_ok,
            invisible_pids,
        })
    }

    /// The PIDs holding a compute or graphics context on GPU `index` now
    /// (`check --wait-clean` waits for a neighbour to leave).
    pub fn context_pids(&self, index: u32) -> Result<Vec<u32>, GateError> {
        let d = self.device(index)?;
        let compute = d.running_compute_processes().map_err(|e| {
            GateError::infra(format!("GPU {index}: listing its processes failed ({e})"))
        })?;
        let graphics = d.running_graphics_processes().unwrap_or_default();
        let mut pids: Vec<u32> = compute.iter().chain(&graphics).map(|p| p.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        Ok(pids)
    }
}
