//! cargo-fuzz target: see gpugate::fuzz_targets::baseline and fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gpugate::fuzz_targets::baseline(data));
