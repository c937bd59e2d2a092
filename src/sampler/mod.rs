//! Samplers: where counters come from. `nvml` (GPU, the only NVML user),
//! `host` (/proc). The deterministic twin of both is a recorded trace
//! (`--replay`), loaded by `trace::Trace::load`.

pub mod host;
pub mod nvml;
