//! cargo-fuzz target: see gpugate::fuzz_targets::mountinfo and fuzz/README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gpugate::fuzz_targets::mountinfo(data));
