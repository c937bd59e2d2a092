//! SYNTHETIC traces for tests, documentation and demos: signatures of the
//! bottlenecks in docs/counters.md (means measured on an H200), turned
//! into full traces with deterministic noise, a warm-up, a GPM glitch every
//! ~200 samples (recorded as missing, as the real sampler does), process
//! records and benchmark output. Every trace made here says "synthetic" in
//! its header note; none of them is a measurement.
//!
//! The one generator of the code base: unit tests, the integration tests
//! (`gate capture/check/diff` end to end), the committed examples under
//! `tests/data/` and `examples/make-big-trace.rs` (benchmarks) all use it.
//! A `Signature` is plain data: tests change its fields (seed, samples, GPU
//! name, exit code, a straggler GPU...) with struct update syntax or the
//! `with_*` helpers.

use crate::metrics::{GPU_METRICS, HOST_METRICS};
use crate::trace::{
    EndRecord, EventKind, EventRecord, Fingerprint, GpuInfo, Header, HostInfo, OutputRecord,
    ProcessInfo, ProcessesRecord, Record, SampleRecord, Trace, TraceWriter, SCHEMA_VERSION,
};
use std::collections::BTreeMap;
use std::path::Path;

pub mod suite;

/// GPM-derived columns (missing on GPUs without GPM, and in glitch samples).
const GPM_COLUMNS: &[&str] = &[
    "graphics_pct",
    "sm_active_pct",
    "sm_occupancy_pct",
    "integer_pct",
    "tensor_pct",
    "dfma_tensor_pct",
    "hmma_tensor_pct",
    "imma_tensor_pct",
    "dram_pct",
    "fp64_pct",
    "fp32_pct",
    "fp16_pct",
    "pcie_tx_mib_s",
    "pcie_rx_mib_s",
    "nvlink_tx_mib_s",
    "nvlink_rx_mib_s",
];

/// Columns that drop to ~0 while the GPU sits idle in a periodic stall.
const ACTIVITY_COLUMNS: &[&str] = &[
    "gpu_busy_pct",
    "mem_busy_pct",
    "graphics_pct",
    "sm_active_pct",
    "sm_occupancy_pct",
    "tensor_pct",
    "hmma_tensor_pct",
    "dram_pct",
    "fp32_pct",
    "target_sm_share_pct",
];

const MEMORY_TOTAL_MIB: f64 = 143_771.0;
const TARGET_PID: u32 = 4242;
const OTHER_PID: u32 = 5151;

/// The shape of one synthetic workload.
#[derive(Debug, Clone)]
pub struct Signature {
    pub name: &'static str,
    /// Mean of each GPU metric (unlisted ones take healthy-idle defaults).
    pub gpu: BTreeMap<&'static str, f64>,
    /// Mean of each host metric.
    pub host: BTreeMap<&'static str, f64>,
    /// Relative jitter (uniform, +-) applied to every value.
    pub jitter: f64,
    /// `(period, idle)` in samples: the last `idle` samples of every period
    /// have the GPU idle (a stall at a fixed point of the step).
    pub periodic_idle: Option<(usize, usize)>,
    /// No GPM on this GPU: GPM columns are missing (null), never 0.
    pub no_gpm: bool,
    /// Multiply activity columns of the LAST GPU by this (a straggler).
    pub last_gpu_factor: f64,
    /// A process outside the target tree holds a context on the GPU.
    pub foreign_process: bool,
    /// An Xid event during the steady window.
    pub xid: bool,
    /// Throughput the benchmark prints every 10 samples (`samples_per_s: X`).
    pub samples_per_s: f64,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub interval_ms: u64,
    /// Run-to-run seed: 0 is the signature's own noise (from its name),
    /// any other value a different, equally deterministic run.
    pub seed: u64,
    /// A GPM glitch (GPM columns missing, a `gpm_invalid` event) every this
    /// many samples; `None` for none.
    pub glitch_period: Option<usize>,
    /// GPU columns never measured (null in every sample).
    pub missing_columns: Vec<&'static str>,
    /// GPU index -> its own means (a straggler behaving like another
    /// signature; see `with_gpu_like`).
    pub per_gpu: BTreeMap<usize, BTreeMap<&'static str, f64>>,
    /// `None`: `python train.py --synthetic --variant=NAME`.
    pub command: Option<Vec<String>>,
    pub gpu_name: String,
    pub driver: String,
    pub exit_code: Option<i32>,
    /// Killed by this signal (the end record then has no exit code).
    pub signal: Option<i32>,
    /// No end record and a cut-off last line (the recorder died).
    pub truncated: bool,
    /// Lines the benchmark prints after its last sample.
    pub extra_output: Vec<String>,
    /// The end record carries a metrics file
    /// `throughput_samples_per_s=<samples_per_s>`.
    pub metrics_file: bool,
}

fn map(pairs: &[(&'static str, f64)]) -> BTreeMap<&'static str, f64> {
    pairs.iter().copied().collect()
}

impl Signature {
    fn base(name: &'static str, gpu: &[(&'static str, f64)], host: &[(&'static str, f64)]) -> Self {
        let mut g = map(&[
            ("gpu_busy_pct", 0.0),
            ("mem_busy_pct", 0.0),
            ("sm_clock_mhz", 1980.0),
            ("mem_clock_mhz", 3201.0),
            ("throttle_power_pct", 0.0),
            ("throttle_thermal_pct", 0.0),
            ("throttle_other_pct", 0.0),
            ("power_w", 123.0),
            ("temperature_c", 45.0),
            ("mem_used_mib", 40_000.0),
            ("target_mem_mib", 39_000.0),
            ("processes", 1.0),
            ("other_processes", 0.0),
            ("other_sm_share_pct", 0.0),
            ("pcie_rx_mib_s", 5.0),
            ("pcie_tx_mib_s", 5.0),
            ("nvlink_rx_mib_s", 0.0),
            ("nvlink_tx_mib_s", 0.0),
        ]);
        for (k, v) in gpu {
            g.insert(k, *v);
        }
        // Derived defaults a real GPU reports consistently.
        let busy = g["gpu_busy_pct"];
        let tensor = *g.get("tensor_pct").unwrap_or(&0.0);
        let mem_pct = g["mem_used_mib"] / MEMORY_TOTAL_MIB * 100.0;
        g.entry("graphics_pct").or_insert(busy);
        g.entry("target_sm_share_pct").or_insert(busy);
        g.entry("hmma_tensor_pct").or_insert(tensor);
        g.entry("mem_used_pct").or_insert(mem_pct);
        for c in GPM_COLUMNS {
            g.entry(c).or_insert(0.0);
        }
        let mut h = map(&[
            ("target_cpu_pct", 100.0),
            ("target_rss_mib", 6_000.0),
            ("target_threads", 24.0),
            ("target_processes", 1.0),
            ("target_read_mib_s", 0.0),
            ("target_write_mib_s", 0.1),
            ("target_ctx_switches_per_s", 300.0),
            ("target_vol_ctx_switches_per_s", 150.0),
            ("host_iowait_pct", 0.1),
        ]);
        for (k, v) in host {
            h.insert(k, *v);
        }
        let cpu = h["target_cpu_pct"];
        h.entry("target_cpu_user_pct").or_insert(cpu * 0.9);
        h.entry("target_cpu_sys_pct").or_insert(cpu * 0.1);
        // 16 cores (the lent H200 host): the target's share plus ~1 % of daemons.
        h.entry("host_cpu_busy_pct").or_insert(cpu / 16.0 + 1.0);
        Signature {
            name,
            gpu: g,
            host: h,
            jitter: 0.02,
            periodic_idle: None,
            no_gpm: false,
            last_gpu_factor: 1.0,
            foreign_process: false,
            xid: false,
            samples_per_s: 1000.0,
            duration_s: 30.0,
            warmup_s: 3.0,
            interval_ms: 100,
            seed: 0,
            glitch_period: Some(197),
            missing_columns: Vec::new(),
            per_gpu: BTreeMap::new(),
            command: None,
            gpu_name: "NVIDIA H200 (synthetic)".into(),
            driver: "580.159.04".into(),
            exit_code: Some(0),
            signal: None,
            truncated: false,
            extra_output: Vec::new(),
            metrics_file: false,
        }
    }

    /// The signature called `name` (as in `all()`), if any.
    pub fn named(name: &str) -> Option<Self> {
        Self::all().into_iter().find(|s| s.name == name)
    }

    /// `steady` samples after the warm-up (the duration follows).
    pub fn with_samples(mut self, steady: usize) -> Self {
        self.duration_s = (steady as u64 * self.interval_ms) as f64 / 1000.0;
        self
    }

    /// `warmup` samples of warm-up.
    pub fn with_warmup_samples(mut self, warmup: usize) -> Self {
        self.warmup_s = (warmup as u64 * self.interval_ms) as f64 / 1000.0;
        self
    }

    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// GPU `gpu` runs like `other` (a straggler); the rest keep this shape.
    pub fn with_gpu_like(mut self, gpu: usize, other: &Signature) -> Self {
        self.per_gpu.insert(gpu, other.gpu.clone());
        self
    }

    /// Samples in the trace, warm-up included, and those of the warm-up.
    fn sample_counts(&self) -> (usize, usize) {
        let interval = self.interval_ms as f64;
        let total = ((self.warmup_s + self.duration_s) * 1000.0 / interval).round() as usize;
        let warm = (self.warmup_s * 1000.0 / interval).round() as usize;
        (total, warm)
    }

    fn command_line(&self) -> Vec<String> {
        self.command.clone().unwrap_or_else(|| {
            vec![
                "python".into(),
                "train.py".into(),
                "--synthetic".into(),
                format!("--variant={}", self.name),
            ]
        })
    }

    /// bf16 training step: busy 100, SM 97, tensor ~90, DRAM 18, power-capped.
    pub fn healthy() -> Self {
        Self::base(
            "healthy",
            &[
                ("gpu_busy_pct", 100.0),
                ("mem_busy_pct", 20.0),
                ("sm_active_pct", 97.0),
                ("sm_occupancy_pct", 14.0),
                ("tensor_pct", 90.0),
                ("dram_pct", 18.0),
                ("fp32_pct", 1.0),
                ("integer_pct", 2.0),
                ("pcie_rx_mib_s", 16.0),
                ("power_w", 691.0),
                ("throttle_power_pct", 100.0),
                ("sm_clock_mhz", 1469.0),
                ("temperature_c", 62.0),
            ],
            &[],
        )
    }

    /// fp32 matmuls with TF32 off: tensor 0, FP32 77.
    pub fn fp32_no_tf32() -> Self {
        let mut s = Self::base(
            "fp32-no-tf32",
            &[
                ("gpu_busy_pct", 100.0),
                ("mem_busy_pct", 6.0),
                ("sm_active_pct", 97.0),
                ("sm_occupancy_pct", 12.0),
                ("tensor_pct", 0.0),
                ("dram_pct", 5.0),
                ("fp32_pct", 77.0),
                ("power_w", 673.0),
                ("throttle_power_pct", 100.0),
                ("sm_clock_mhz", 1500.0),
            ],
            &[],
        );
        s.samples_per_s = 310.0;
        s
    }

    /// 1000 tiny elementwise kernels per loop: busy ~24, SM active 0.04.
    pub fn launch_storm() -> Self {
        let mut s = Self::base(
            "launch-storm",
            &[
                ("gpu_busy_pct", 24.0),
                ("sm_active_pct", 0.04),
                ("pcie_rx_mib_s", 190.0),
                ("pcie_tx_mib_s", 40.0),
                ("power_w", 124.0),
            ],
            &[("target_cpu_pct", 100.0)],
        );
        s.jitter = 0.3;
        s.samples_per_s = 90.0;
        s
    }

    /// A 1 GiB device copy: DRAM 88, SM 99, tensor 0.
    pub fn memory_bound() -> Self {
        let mut s = Self::base(
            "memory-bound",
            &[
                ("gpu_busy_pct", 100.0),
                ("mem_busy_pct", 85.0),
                ("sm_active_pct", 99.0),
                ("sm_occupancy_pct", 80.0),
                ("dram_pct", 88.0),
                ("pcie_rx_mib_s", 34.0),
                ("power_w", 407.0),
            ],
            &[],
        );
        s.samples_per_s = 420.0;
        s
    }

    /// Contended atomics (the counters of fixtures/holdout-rawkernel's
    /// `atomic` run): SM active 96, DRAM 1, every pipe near 0, 145 W.
    pub fn latency_bound() -> Self {
        let mut s = Self::base(
            "latency-bound",
            &[
                ("gpu_busy_pct", 99.0),
                ("mem_busy_pct", 2.0),
                ("sm_active_pct", 96.0),
                ("sm_occupancy_pct", 88.0),
                ("tensor_pct", 0.1),
                ("dram_pct", 1.1),
                ("fp32_pct", 0.6),
                ("fp16_pct", 0.0),
                ("fp64_pct", 0.0),
                ("integer_pct", 1.1),
                ("power_w", 145.0),
            ],
            &[],
        );
        s.samples_per_s = 14.0;
        s
    }

    /// 256 MiB pageable host-to-device copies: busy 43, SM 0, PCIe RX 20 GB/s.
    pub fn pageable_h2d() -> Self {
        let mut s = Self::base(
            "pageable-h2d",
            &[
                ("gpu_busy_pct", 43.0),
                ("sm_active_pct", 0.0),
                ("dram_pct", 0.4),
                ("pcie_rx_mib_s", 20_270.0),
                ("pcie_tx_mib_s", 60.0),
                ("power_w", 126.0),
            ],
            &[("target_cpu_pct", 100.0)],
        );
        s.jitter = 0.1;
        s.samples_per_s = 150.0;
        s
    }

    /// matmul + `.item()` + 20 ms sleep per step: busy 6, SM 5, host waiting.
    pub fn sync_stall() -> Self {
        let mut s = Self::base(
            "sync-stall",
            &[
                ("gpu_busy_pct", 6.0),
                ("sm_active_pct", 5.0),
                ("sm_occupancy_pct", 0.7),
                ("tensor_pct", 5.0),
                ("dram_pct", 1.0),
                ("pcie_rx_mib_s", 2.0),
                ("power_w", 176.0),
            ],
            &[
                ("target_cpu_pct", 12.0),
                ("target_vol_ctx_switches_per_s", 480.0),
            ],
        );
        s.jitter = 0.25;
        s.samples_per_s = 45.0;
        s
    }

    /// A stall at a fixed point of every 1 s step (period longer than the
    /// sampling interval, so the gaps are visible sample by sample).
    pub fn periodic_stall() -> Self {
        let mut s = Self::healthy();
        s.name = "periodic-stall";
        s.host.insert("target_cpu_pct", 35.0);
        s.host.insert("host_cpu_busy_pct", 35.0 / 16.0 + 1.0);
        s.periodic_idle = Some((10, 2));
        s.samples_per_s = 800.0;
        s
    }

    /// For the docs: a healthy step that stalls 1.5 s out of every 5 s,
    /// long enough to show as idle intervals in 1 s slices.
    pub fn stall_demo() -> Self {
        let mut s = Self::periodic_stall();
        s.name = "stall-demo";
        s.periodic_idle = Some((50, 15));
        s.samples_per_s = 650.0;
        s
    }

    /// CPU preprocessing in the main thread: GPU waits, one core pinned.
    pub fn host_bound() -> Self {
        let mut s = Self::base(
            "host-bound",
            &[
                ("gpu_busy_pct", 30.0),
                ("sm_active_pct", 28.0),
                ("sm_occupancy_pct", 4.0),
                ("tensor_pct", 26.0),
                ("dram_pct", 5.0),
                ("power_w", 260.0),
            ],
            &[("target_cpu_pct", 100.0)],
        );
        s.jitter = 0.15;
        s.samples_per_s = 300.0;
        s
    }

    /// A second process outside the target tree shares the GPU.
    pub fn contention() -> Self {
        let mut s = Self::base(
            "contention",
            &[
                ("gpu_busy_pct", 100.0),
                ("mem_busy_pct", 22.0),
                ("sm_active_pct", 97.0),
                ("sm_occupancy_pct", 20.0),
                ("tensor_pct", 70.0),
                ("dram_pct", 25.0),
                ("power_w", 690.0),
                ("throttle_power_pct", 100.0),
                ("processes", 2.0),
                ("other_processes", 1.0),
                ("target_sm_share_pct", 55.0),
                ("other_sm_share_pct", 42.0),
                ("mem_used_mib", 60_000.0),
            ],
            &[],
        );
        s.foreign_process = true;
        s.samples_per_s = 560.0;
        s
    }

    /// Healthy, but held down by temperature.
    pub fn thermal() -> Self {
        let mut s = Self::healthy();
        s.name = "thermal";
        s.gpu.insert("throttle_thermal_pct", 60.0);
        s.gpu.insert("temperature_c", 88.0);
        s.gpu.insert("sm_clock_mhz", 1100.0);
        s
    }

    /// The last GPU of several runs at half speed (a straggler).
    pub fn imbalance() -> Self {
        let mut s = Self::healthy();
        s.name = "imbalance";
        s.last_gpu_factor = 0.45;
        s
    }

    /// Healthy, with the framebuffer 98 % full.
    pub fn memory_full() -> Self {
        let mut s = Self::healthy();
        s.name = "memory-full";
        s.gpu.insert("mem_used_mib", 141_000.0);
        s.gpu
            .insert("mem_used_pct", 141_000.0 / MEMORY_TOTAL_MIB * 100.0);
        s.gpu.insert("target_mem_mib", 140_000.0);
        s
    }

    /// All-reduce dominated step: NVLink busy, SMs mostly waiting.
    pub fn nvlink_bound() -> Self {
        Self::base(
            "nvlink-bound",
            &[
                ("gpu_busy_pct", 100.0),
                ("sm_active_pct", 18.0),
                ("sm_occupancy_pct", 3.0),
                ("tensor_pct", 9.0),
                ("dram_pct", 30.0),
                ("nvlink_rx_mib_s", 140_000.0),
                ("nvlink_tx_mib_s", 140_000.0),
                ("power_w", 300.0),
            ],
            &[],
        )
    }

    /// Other jobs on the host eat the CPU and disk; the GPU is under-fed.
    pub fn host_contention() -> Self {
        let mut s = Self::base(
            "host-contention",
            &[
                ("gpu_busy_pct", 55.0),
                ("sm_active_pct", 50.0),
                ("tensor_pct", 45.0),
                ("dram_pct", 10.0),
                ("power_w", 400.0),
            ],
            &[
                ("target_cpu_pct", 90.0),
                ("host_cpu_busy_pct", 88.0),
                ("host_iowait_pct", 14.0),
            ],
        );
        s.jitter = 0.1;
        s
    }

    /// Healthy, but the driver reported an Xid.
    pub fn xid() -> Self {
        let mut s = Self::healthy();
        s.name = "xid";
        s.xid = true;
        s
    }

    pub fn all() -> Vec<Signature> {
        vec![
            Self::healthy(),
            Self::fp32_no_tf32(),
            Self::launch_storm(),
            Self::memory_bound(),
            Self::pageable_h2d(),
            Self::sync_stall(),
            Self::periodic_stall(),
            Self::stall_demo(),
            Self::host_bound(),
            Self::contention(),
            Self::thermal(),
            Self::imbalance(),
            Self::memory_full(),
            Self::nvlink_bound(),
            Self::host_contention(),
            Self::xid(),
        ]
    }
}

/// Deterministic noise (PCG-style LCG) seeded from the signature's name
/// and its run seed.
struct Noise(u64);

impl Noise {
    fn new(name: &str, seed: u64) -> Noise {
        // FNV-1a of the name: the same signature always gives the same trace.
        let mut h = 0xcbf29ce484222325u64;
        for b in name.bytes() {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
        }
        Noise(h ^ seed.wrapping_mul(0x9E3779B97F4A7C15))
    }

    /// Uniform in [-1, 1).
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

fn is_pct(id: &str) -> bool {
    id.ends_with("_pct")
}

/// Header of a synthetic trace with `ngpu` GPUs.
pub fn header(sig: &Signature, ngpu: usize) -> Header {
    let gpus = (0..ngpu)
        .map(|i| GpuInfo {
            index: i as u32,
            uuid: format!("GPU-synthetic-{i}"),
            name: sig.gpu_name.clone(),
            pci_bus_id: format!("00000000:{:02X}:00.0", 0x18 + i),
            memory_total_mib: MEMORY_TOTAL_MIB,
            power_limit_w: Some(700.0),
            mig_enabled: Some(false),
            ecc_enabled: Some(true),
            gpm_supported: !sig.no_gpm,
            unsupported: if sig.no_gpm {
                GPM_COLUMNS.iter().map(|s| s.to_string()).collect()
            } else {
                Vec::new()
            },
        })
        .collect();
    Header {
        schema_version: SCHEMA_VERSION,
        // Fixed, so committed synthetic examples do not churn with releases.
        gate_version: "synthetic".into(),
        start_time: "2026-01-01T00:00:00Z".into(),
        interval_ms: sig.interval_ms,
        warmup_ms: (sig.warmup_s * 1000.0) as u64,
        duration_ms: Some((sig.duration_s * 1000.0) as u64),
        command: sig.command_line(),
        attach_pid: None,
        tags: [("workload".to_string(), sig.name.to_string())].into(),
        fingerprint: Fingerprint {
            host: HostInfo {
                hostname: "synthetic-host".into(),
                cpu_model: "Synthetic CPU".into(),
                cpu_count: 16,
                kernel: "6.1.0".into(),
                os: "Debian GNU/Linux 12".into(),
            },
            gpus,
            driver_version: Some(sig.driver.clone()),
            nvml_version: Some("13.580.159.04".into()),
            cuda_driver_version: Some("13.0".into()),
        },
        gpu_columns: GPU_METRICS.iter().map(|d| d.id.to_string()).collect(),
        host_columns: HOST_METRICS.iter().map(|d| d.id.to_string()).collect(),
        note: Some(format!(
            "SYNTHETIC trace '{}' (seed {}) generated by gpugate::synthetic from the H200 means of docs/counters.md; not a measurement",
            sig.name, sig.seed
        )),
    }
}

/// All records of a synthetic trace (header first, end last; no end record
/// when `sig.truncated`).
pub fn records(sig: &Signature, ngpu: usize) -> Vec<Record> {
    let mut out = Vec::new();
    each_record(sig, ngpu, &mut |r| out.push(r));
    out
}

/// `records`, handed to `emit` one at a time in the same order (a 24-hour
/// trace of 8 GPUs is 864,000 samples: written as they are made, never all
/// held at once).
pub fn each_record(sig: &Signature, ngpu: usize, emit: &mut dyn FnMut(Record)) {
    let mut noise = Noise::new(sig.name, sig.seed);
    let mut out = Chunk {
        records: vec![Record::Header(Box::new(header(sig, ngpu)))],
        emit,
    };
    let interval = sig.interval_ms as f64;
    let (total, warm) = sig.sample_counts();
    out.push(Record::Event(EventRecord {
        t: 0.0,
        kind: EventKind::TargetStart,
        gpu: None,
        pid: Some(TARGET_PID),
        code: None,
        message: String::new(),
    }));
    for g in 0..ngpu {
        out.push(processes(0.0, g as u32, sig));
    }
    let mut energy = vec![0.0f64; ngpu];
    for i in 0..total {
        let t = i as f64 * interval;
        let idle = sig
            .periodic_idle
            .is_some_and(|(period, idle)| i % period >= period - idle);
        let glitch = sig.glitch_period.is_some_and(|p| i % p == 150 % p);
        // Noise is drawn in a fixed order (GPUs, host, output): the
        // committed example traces depend on it.
        let g = energy
            .iter_mut()
            .enumerate()
            .map(|(slot, energy)| gpu_row(sig, ngpu, slot, idle, glitch, energy, &mut noise))
            .collect();
        let h = host_row(sig, &mut noise);
        out.push(Record::Sample(SampleRecord {
            t,
            w: i < warm,
            g,
            h,
        }));
        sample_events(sig, i, warm, t, glitch, &mut noise, &mut out.records);
        out.drain();
    }
    let end_t = total as f64 * interval;
    for line in &sig.extra_output {
        out.push(Record::Output(OutputRecord {
            t: end_t,
            line: line.clone(),
        }));
    }
    if !sig.truncated {
        closing(sig, ngpu, total, end_t, &mut out.records);
    }
    out.drain();
}

/// Records made but not yet handed on (`each_record`).
struct Chunk<'a> {
    records: Vec<Record>,
    emit: &'a mut dyn FnMut(Record),
}

impl Chunk<'_> {
    fn push(&mut self, r: Record) {
        self.records.push(r);
    }

    fn drain(&mut self) {
        for r in self.records.drain(..) {
            (self.emit)(r);
        }
    }
}

/// The processes on one GPU: the target, and a foreign one when the
/// signature has one.
fn processes(t: f64, gpu: u32, sig: &Signature) -> Record {
    let mut procs = vec![ProcessInfo {
        pid: TARGET_PID,
        name: "python".into(),
        cmdline: format!("python train.py --variant={}", sig.name),
        in_target: true,
        gpu_mem_mib: Some(sig.gpu["target_mem_mib"]),
        sm_share_pct: Some(sig.gpu["target_sm_share_pct"]),
        cpu_pct: Some(sig.host["target_cpu_pct"]),
        rss_mib: Some(sig.host["target_rss_mib"]),
    }];
    if sig.foreign_process {
        procs.push(ProcessInfo {
            pid: OTHER_PID,
            name: "python3".into(),
            // Deliberately hostile text: reports must escape it.
            cmdline: "python3 -c \"import torch; x = a<b && c>d; print('<b>&amp;</b>')\"".into(),
            in_target: false,
            gpu_mem_mib: Some(20_000.0),
            sm_share_pct: Some(sig.gpu["other_sm_share_pct"]),
            cpu_pct: Some(99.0),
            rss_mib: Some(3_100.0),
        });
    }
    Record::Processes(ProcessesRecord { t, gpu, procs })
}

/// One GPU's values for one sample: the signature's means with jitter,
/// missing GPM columns on a glitch, activity dropped while idle, the last
/// GPU slowed by `last_gpu_factor`, energy integrated from power.
fn gpu_row(
    sig: &Signature,
    ngpu: usize,
    slot: usize,
    idle: bool,
    glitch: bool,
    energy: &mut f64,
    noise: &mut Noise,
) -> Vec<Option<f64>> {
    let interval = sig.interval_ms as f64;
    let means = sig.per_gpu.get(&slot).unwrap_or(&sig.gpu);
    let mut row = Vec::with_capacity(GPU_METRICS.len());
    for d in GPU_METRICS {
        let id = d.id;
        if id == "energy_j" {
            *energy += means["power_w"] * interval / 1000.0;
            row.push(Some(crate::trace::round_value(*energy)));
            continue;
        }
        let gpm = GPM_COLUMNS.contains(&id);
        if (gpm && (sig.no_gpm || glitch)) || sig.missing_columns.contains(&id) {
            row.push(None);
            continue;
        }
        let mut v = means.get(id).copied().unwrap_or(0.0);
        let activity = ACTIVITY_COLUMNS.contains(&id);
        if activity && slot == ngpu - 1 && ngpu > 1 {
            v *= sig.last_gpu_factor;
        }
        if activity && idle {
            v = 0.5;
        }
        // Counts and throttle shares are exact; rates and utilizations jitter.
        let exact = matches!(id, "processes" | "other_processes")
            || id.starts_with("throttle_")
            || id.ends_with("_mhz");
        if !exact {
            v *= 1.0 + sig.jitter * noise.next();
        }
        if is_pct(id) {
            v = v.clamp(0.0, 100.0);
        }
        row.push(Some(crate::trace::round_value(v.max(0.0))));
    }
    row
}

/// The host's values for one sample, with jitter (thread and process
/// counts exact).
fn host_row(sig: &Signature, noise: &mut Noise) -> Vec<Option<f64>> {
    HOST_METRICS
        .iter()
        .map(|d| {
            // A role column the signature does not set is missing, as in a
            // trace recorded before roles existed (not a worker-less 0).
            let set = sig.host.get(d.id).copied();
            if set.is_none() && crate::metrics::ROLE_METRIC_IDS.contains(&d.id) {
                return None;
            }
            let mut v = set.unwrap_or(0.0);
            if !matches!(d.id, "target_threads" | "target_processes") {
                v *= 1.0 + sig.jitter * noise.next();
            }
            Some(crate::trace::round_value(v.max(0.0)))
        })
        .collect()
}

/// What follows sample `i`: a throughput line every 10 samples, the Xid of
/// an `xid` signature, the event of a GPM glitch.
fn sample_events(
    sig: &Signature,
    i: usize,
    warm: usize,
    t: f64,
    glitch: bool,
    noise: &mut Noise,
    out: &mut Vec<Record>,
) {
    if i % 10 == 9 {
        let rate = sig.samples_per_s * (1.0 + 0.01 * noise.next());
        out.push(Record::Output(OutputRecord {
            t,
            line: format!("samples_per_s: {rate:.1}"),
        }));
    }
    if sig.xid && i == warm + 50 {
        out.push(Record::Event(EventRecord {
            t,
            kind: EventKind::Xid,
            gpu: Some(0),
            pid: None,
            code: Some(79),
            message: "GPU has fallen off the bus (synthetic)".into(),
        }));
    }
    if glitch && !sig.no_gpm {
        out.push(Record::Event(EventRecord {
            t,
            kind: EventKind::GpmInvalid,
            gpu: None,
            pid: None,
            code: None,
            message: "GPM sample pair invalid; recorded as missing".into(),
        }));
    }
}

/// The last processes records, the target's exit and the end record.
fn closing(sig: &Signature, ngpu: usize, total: usize, end_t: f64, out: &mut Vec<Record>) {
    for g in 0..ngpu {
        out.push(processes(end_t, g as u32, sig));
    }
    let exit_code = if sig.signal.is_some() {
        None
    } else {
        sig.exit_code
    };
    out.push(Record::Event(EventRecord {
        t: end_t,
        kind: EventKind::TargetExit,
        gpu: None,
        pid: Some(TARGET_PID),
        code: exit_code.map(i64::from),
        message: String::new(),
    }));
    out.push(Record::End(EndRecord {
        t: end_t,
        samples: total as u64,
        late_samples: 0,
        exit_code,
        signal: sig.signal,
        target_wall_s: Some(end_t / 1000.0),
        reason: crate::trace::StopReason::TargetExited,
        metrics_file: sig
            .metrics_file
            .then(|| format!("throughput_samples_per_s={:.1}\n", sig.samples_per_s)),
        metrics_file_problem: None,
        target_gpus: None,
    }));
}

/// The cut-off last line of a truncated trace (a recorder killed mid-write).
const CUT_LINE: &str = "{\"type\":\"sample\",\"t\":";

/// A synthetic trace in memory, read back through the real trace reader.
pub fn trace(sig: &Signature, ngpu: usize) -> Trace {
    let mut text = String::new();
    for r in records(sig, ngpu) {
        text.push_str(&serde_json::to_string(&r).expect("records serialise"));
        text.push('\n');
    }
    if sig.truncated {
        text.push_str(CUT_LINE);
    }
    let path = format!("synthetic-{}.jsonl", sig.name);
    Trace::read(std::io::Cursor::new(text), Path::new(&path)).expect("synthetic trace reads back")
}

/// Write a synthetic trace file (for fixtures of tests and docs, and the
/// benchmarks' long traces: records are written as they are made).
pub fn write(sig: &Signature, ngpu: usize, path: &Path) -> Result<(), crate::error::GateError> {
    let mut w: Option<TraceWriter> = None;
    let mut end = None;
    let mut failed = None;
    each_record(sig, ngpu, &mut |r| {
        if failed.is_some() {
            return;
        }
        let done = match (&mut w, r) {
            (None, Record::Header(h)) => TraceWriter::create(path, &h).map(|created| {
                w = Some(created);
            }),
            (Some(_), Record::End(e)) => {
                end = Some(e);
                Ok(())
            }
            (Some(w), other) => w.write(&other),
            (None, _) => unreachable!("each_record starts with the header"),
        };
        failed = done.err();
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let mut w = w.expect("each_record starts with the header");
    if let Some(end) = end {
        w.finish(end)?;
        return Ok(());
    }
    // Truncated: what the writer flushed plus a cut-off line, under the
    // final name (as a recorder killed mid-write leaves it).
    let partial = w.partial_path().to_path_buf();
    w.flush()?;
    drop(w);
    let io =
        |e: std::io::Error| crate::error::GateError::infra(format!("{}: {e}", partial.display()));
    let mut text = std::fs::read_to_string(&partial).map_err(io)?;
    text.push_str(CUT_LINE);
    std::fs::write(path, text).map_err(io)?;
    std::fs::remove_file(&partial).map_err(io)?;
    Ok(())
}

/// Write `sig` as `dir/name` and return the path (for tests).
pub fn write_in(
    sig: &Signature,
    ngpu: usize,
    dir: &Path,
    name: &str,
) -> Result<std::path::PathBuf, crate::error::GateError> {
    let path = dir.join(name);
    write(sig, ngpu, &path)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_traces_are_deterministic_and_marked() {
        let a = trace(&Signature::healthy(), 2);
        let b = trace(&Signature::healthy(), 2);
        let bits = |t: &Trace| {
            let ncols = t.header.gpu_columns.len();
            (0..t.gpu_count())
                .flat_map(|g| (0..ncols).map(move |c| (g, c)))
                .flat_map(|(g, c)| t.columns.gpu(g, c).iter().map(|x| x.to_bits()))
                .collect::<Vec<u32>>()
        };
        assert_eq!(bits(&a), bits(&b));
        assert!(!bits(&a).is_empty());
        assert!(a.header.note.as_deref().unwrap().contains("SYNTHETIC"));
        assert_eq!(a.sample_count(), 330);
        assert_eq!(a.warmup.iter().filter(|w| **w).count(), 30);
    }

    #[test]
    fn seeds_exits_and_stragglers_change_only_what_they_say() {
        let col = |t: &Trace, id: &str| t.gpu_column(id).unwrap();
        let a = trace(&Signature::healthy().with_seed(1), 1);
        let b = trace(&Signature::healthy().with_seed(2), 1);
        let busy = col(&a, "gpu_busy_pct");
        assert_ne!(a.gpu_value(40, 0, busy), b.gpu_value(40, 0, busy));
        let sig = Signature {
            signal: Some(9),
            ..Signature::healthy()
        };
        let end = trace(&sig, 1).end.unwrap();
        assert_eq!((end.exit_code, end.signal), (None, Some(9)));
        let sig = Signature {
            truncated: true,
            ..Signature::healthy().with_samples(10)
        };
        assert!(trace(&sig, 1).truncated);
        let t = trace(
            &Signature::healthy().with_gpu_like(1, &Signature::sync_stall()),
            2,
        );
        let sm = col(&t, "sm_active_pct");
        assert!(t.gpu_value(40, 0, sm) > 90.0 && t.gpu_value(40, 1, sm) < 10.0);
    }

    #[test]
    fn glitches_and_missing_gpm_are_null_not_zero() {
        let t = trace(&Signature::healthy(), 1);
        let col = t.gpu_column("sm_active_pct").unwrap();
        assert!(t.gpu_value(150, 0, col).is_nan());
        assert!(t.gpu_value(151, 0, col) > 50.0);
        let mut sig = Signature::healthy();
        sig.no_gpm = true;
        let t = trace(&sig, 1);
        assert!((0..t.sample_count()).all(|i| t.gpu_value(i, 0, col).is_nan()));
    }
}
