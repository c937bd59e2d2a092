//! cargo-fuzz target: see gpugate::fuzz_targets::metrics_file and fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gpugate::fuzz_targets::metrics_file(data));
