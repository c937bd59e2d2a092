//! SYNTHETIC traces for tests and benchmarks: written with the library's
//! `TraceWriter`, header note "synthetic", shaped after the H200 signatures
//! in DOMAIN.md section 7 (healthy bf16 training and the pathologies the
//! real fixtures record). Deterministic: a seed drives a xorshift generator.

#![allow(dead_code)]

use gpugate::metrics::{GPU_METRICS, HOST_METRICS};
use gpugate::trace::{
    EndRecord, EventKind, EventRecord, Fingerprint, GpuInfo, Header, HostInfo, OutputRecord,
    Record, SampleRecord, TraceWriter, SCHEMA_VERSION,
};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Profile {
    Healthy,
    LaunchStorm,
    Fp32NoTf32,
    MemoryBound,
    PageableH2d,
    SyncStall,
    HostBound,
    Contention,
}

impl Profile {
    pub const PATHOLOGIES: [Profile; 7] = [
        Profile::LaunchStorm,
        Profile::Fp32NoTf32,
        Profile::MemoryBound,
        Profile::PageableH2d,
        Profile::SyncStall,
        Profile::HostBound,
        Profile::Contention,
    ];

    /// Mean of a GPU metric under this profile.
    pub fn gpu_mean(self, id: &str) -> f64 {
        use Profile::*;
        // (busy, sm, occ, tensor, dram, fp32, pcie_rx, power)
        let (busy, sm, occ, tensor, dram, fp32, rx, power) = match self {
            Healthy => (100.0, 97.0, 14.0, 90.0, 18.0, 0.5, 16.0, 690.0),
            LaunchStorm => (24.0, 0.04, 0.0, 0.0, 0.0, 0.0, 190.0, 124.0),
            Fp32NoTf32 => (100.0, 97.0, 12.0, 0.0, 5.0, 77.0, 5.0, 673.0),
            MemoryBound => (100.0, 99.0, 80.0, 0.0, 88.0, 0.0, 34.0, 407.0),
            PageableH2d => (43.0, 0.0, 0.0, 0.0, 0.4, 0.0, 20270.0, 126.0),
            SyncStall => (6.0, 5.0, 0.7, 5.0, 1.0, 0.0, 2.0, 176.0),
            HostBound => (30.0, 28.0, 4.0, 25.0, 5.0, 0.0, 10.0, 250.0),
            Contention => (100.0, 97.0, 14.0, 45.0, 18.0, 0.5, 16.0, 690.0),
        };
        let contention = self == Contention;
        match id {
            "gpu_busy_pct" => busy,
            "mem_busy_pct" => dram * 0.8,
            "sm_clock_mhz" => 1470.0,
            "mem_clock_mhz" => 2619.0,
            "throttle_power_pct" => pick(power > 600.0, 100.0, 0.0),
            "throttle_thermal_pct" | "throttle_other_pct" => 0.0,
            "power_w" => power,
            "energy_j" => 1000.0,
            "temperature_c" => 40.0 + power / 20.0,
            "mem_used_mib" => 40000.0,
            "mem_used_pct" => 28.0,
            "target_mem_mib" => 38000.0,
            "processes" => pick(contention, 2.0, 1.0),
            "other_processes" => pick(contention, 1.0, 0.0),
            "target_sm_share_pct" => pick(contention, 50.0, sm),
            "other_sm_share_pct" => pick(contention, 50.0, 0.0),
            "graphics_pct" => busy,
            "sm_active_pct" => sm,
            "sm_occupancy_pct" => occ,
            "integer_pct" => 2.0,
            "tensor_pct" | "hmma_tensor_pct" => tensor,
            "dfma_tensor_pct" | "imma_tensor_pct" | "fp64_pct" | "fp16_pct" => 0.0,
            "dram_pct" => dram,
            "fp32_pct" => fp32,
            "pcie_tx_mib_s" => rx / 2.0,
            "pcie_rx_mib_s" => rx,
            "nvlink_tx_mib_s" | "nvlink_rx_mib_s" => 0.0,
            _ => 0.0,
        }
    }

    pub fn host_mean(self, id: &str) -> f64 {
        let host_bound = self == Profile::HostBound;
        match id {
            "target_cpu_pct" => pick(host_bound, 100.0, 60.0),
            "target_cpu_user_pct" => pick(host_bound, 92.0, 50.0),
            "target_cpu_sys_pct" => pick(host_bound, 8.0, 10.0),
            "target_rss_mib" => 4096.0,
            "target_threads" => 24.0,
            "target_processes" => 1.0,
            "target_ctx_switches_per_s" => 2000.0,
            "target_vol_ctx_switches_per_s" => 1500.0,
            "host_cpu_busy_pct" => pick(host_bound, 55.0, 30.0),
            _ => 0.0,
        }
    }

    /// Throughput the synthetic training loop prints (`samples_per_s: X`).
    pub fn samples_per_s(self) -> f64 {
        use Profile::*;
        match self {
            Healthy => 1000.0,
            LaunchStorm => 150.0,
            Fp32NoTf32 => 310.0,
            MemoryBound => 420.0,
            PageableH2d => 120.0,
            SyncStall => 90.0,
            HostBound => 280.0,
            Contention => 520.0,
        }
    }
}

/// `yes` when `cond`, else `no` (keeps the profile tables one line per metric).
fn pick(cond: bool, yes: f64, no: f64) -> f64 {
    if cond {
        yes
    } else {
        no
    }
}

pub struct Synth {
    pub profile: Profile,
    pub gpus: usize,
    pub samples: usize,
    pub warmup_samples: usize,
    pub interval_ms: u64,
    pub seed: u64,
    pub gpu_name: String,
    pub driver: String,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// No end record and a cut-off last line.
    pub truncated: bool,
    pub command: Vec<String>,
    /// One GPU behaves like another profile (a straggler).
    pub degrade_gpu: Option<(usize, Profile)>,
    /// Multiplies the printed throughput (user-metric tests).
    pub throughput_scale: f64,
    /// Extra lines printed by the benchmark.
    pub extra_output: Vec<String>,
    pub no_gpu_columns: Vec<String>,
}

impl Default for Synth {
    fn default() -> Self {
        Synth {
            profile: Profile::Healthy,
            gpus: 1,
            samples: 600,
            warmup_samples: 20,
            interval_ms: 100,
            seed: 1,
            gpu_name: "NVIDIA H200".into(),
            driver: "580.159.04".into(),
            exit_code: Some(0),
            signal: None,
            truncated: false,
            command: vec!["python".into(), "train.py".into(), "--synthetic".into()],
            degrade_gpu: None,
            throughput_scale: 1.0,
            extra_output: Vec::new(),
            no_gpu_columns: Vec::new(),
        }
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545F4914F6CDD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn noisy(rng: &mut Rng, mean: f64, unit: &str, run_offset: f64) -> f64 {
    let amp = mean.abs() * 0.02 + if unit == "%" { 0.5 } else { 0.0 };
    let v = mean + amp * (rng.next() - 0.5) * 2.0 + run_offset * mean.abs() * 0.005;
    if unit == "%" {
        v.clamp(0.0, 100.0)
    } else {
        v.max(0.0)
    }
}

pub fn header(s: &Synth) -> Header {
    Header {
        schema_version: SCHEMA_VERSION,
        gate_version: "synthetic".into(),
        start_time: "2026-11-29T00:00:00Z".into(),
        interval_ms: s.interval_ms,
        warmup_ms: s.warmup_samples as u64 * s.interval_ms,
        duration_ms: None,
        command: s.command.clone(),
        attach_pid: None,
        tags: BTreeMap::from([("suite".to_string(), "synthetic".to_string())]),
        fingerprint: Fingerprint {
            host: HostInfo {
                hostname: "synthetic-host".into(),
                cpu_model: "Synthetic CPU".into(),
                cpu_count: 16,
                kernel: "6.1.0".into(),
                os: "Debian 12".into(),
            },
            gpus: (0..s.gpus)
                .map(|i| GpuInfo {
                    index: i as u32,
                    uuid: format!("GPU-synthetic-{i}"),
                    name: s.gpu_name.clone(),
                    memory_total_mib: 143771.0,
                    gpm_supported: true,
                    ..Default::default()
                })
                .collect(),
            driver_version: Some(s.driver.clone()),
            nvml_version: Some("13.580.159.04".into()),
            cuda_driver_version: Some("13.0".into()),
        },
        gpu_columns: GPU_METRICS.iter().map(|d| d.id.to_string()).collect(),
        host_columns: HOST_METRICS.iter().map(|d| d.id.to_string()).collect(),
        note: Some(format!(
            "synthetic {:?} trace written by tests/common/synth.rs (seed {}), not a measurement",
            s.profile, s.seed
        )),
    }
}

/// Write a synthetic trace to `path`.
pub fn write(path: &Path, s: &Synth) {
    let mut rng = Rng(s.seed.wrapping_mul(0x9E3779B97F4A7C15) | 1);
    let run_offset = (rng.next() - 0.5) * 2.0;
    let h = header(s);
    let mut w = TraceWriter::create(path, &h).unwrap();
    w.write(&Record::Event(EventRecord {
        t: 0.0,
        kind: EventKind::TargetStart,
        gpu: None,
        pid: Some(4242),
        code: None,
        message: String::new(),
    }))
    .unwrap();
    let total = s.samples + s.warmup_samples;
    for i in 0..total {
        let t = (i as u64 * s.interval_ms) as f64;
        let g: Vec<Vec<Option<f64>>> = (0..s.gpus)
            .map(|gpu| {
                let profile = match s.degrade_gpu {
                    Some((d, p)) if d == gpu => p,
                    _ => s.profile,
                };
                GPU_METRICS
                    .iter()
                    .map(|d| {
                        if s.no_gpu_columns.iter().any(|c| c == d.id) {
                            return None;
                        }
                        let mean = if d.id == "energy_j" {
                            t * 0.69
                        } else {
                            profile.gpu_mean(d.id)
                        };
                        Some(gpugate::trace::round_value(noisy(
                            &mut rng, mean, d.unit, run_offset,
                        )))
                    })
                    .collect()
            })
            .collect();
        let hv: Vec<Option<f64>> = HOST_METRICS
            .iter()
            .map(|d| {
                Some(gpugate::trace::round_value(noisy(
                    &mut rng,
                    s.profile.host_mean(d.id),
                    d.unit,
                    run_offset,
                )))
            })
            .collect();
        w.write(&Record::Sample(SampleRecord {
            t,
            w: i < s.warmup_samples,
            g,
            h: hv,
        }))
        .unwrap();
        if i % 10 == 9 && i >= s.warmup_samples {
            let tput =
                s.profile.samples_per_s() * s.throughput_scale * (1.0 + (rng.next() - 0.5) * 0.02);
            w.write(&Record::Output(OutputRecord {
                t,
                line: format!("step {i} loss 0.42 samples_per_s: {tput:.1}"),
            }))
            .unwrap();
        }
    }
    for line in &s.extra_output {
        w.write(&Record::Output(OutputRecord {
            t: (total as u64 * s.interval_ms) as f64,
            line: line.clone(),
        }))
        .unwrap();
    }
    let end_t = (total as u64 * s.interval_ms) as f64;
    if s.truncated {
        let partial = w.partial_path().to_path_buf();
        drop(w);
        let mut text = std::fs::read_to_string(&partial).unwrap();
        text.push_str("{\"type\":\"sample\",\"t\":");
        std::fs::write(path, text).unwrap();
        std::fs::remove_file(partial).unwrap();
        return;
    }
    w.finish(EndRecord {
        t: end_t,
        samples: total as u64,
        late_samples: 0,
        exit_code: if s.signal.is_some() {
            None
        } else {
            s.exit_code
        },
        signal: s.signal,
        target_wall_s: Some(end_t / 1000.0),
        reason: "target_exited".into(),
        metrics_file: Some(format!(
            "throughput_samples_per_s={:.1}\n",
            s.profile.samples_per_s() * s.throughput_scale
        )),
        target_gpus: None,
    })
    .unwrap();
}
