//! Gathers the sampling loop's code at the start of gate's code (the
//! linker script `link/sampling.ld`). A recording runs for hours, and the
//! kernel maps up to 64 KiB of the binary around every page the loop runs:
//! spread over 11 MB of code, the loop's few hundred functions kept about
//! 5 MB of gate resident; gathered, about 1 MB (BENCHMARKS.md, section 1).
//! Only the layout changes: the same code, at other addresses.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=link/sampling.ld");
    println!("cargo:rerun-if-changed=build.rs");
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    // A linker the user chose (mold, say) may not read GNU linker scripts:
    // then gate links as before, in the default layout.
    if env::var_os("RUSTC_LINKER").is_some() {
        return;
    }
    let rustflags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if rustflags.split('\x1f').any(|flag| flag.contains("linker")) {
        return;
    }
    let manifest = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let script = Path::new(&manifest).join("link").join("sampling.ld");
    // -Xlinker passes the path whole (-Wl, would split it at commas).
    for arg in ["-Xlinker", "-T", "-Xlinker"] {
        println!("cargo:rustc-link-arg-bin=gate={arg}");
    }
    println!("cargo:rustc-link-arg-bin=gate={}", script.display());
}
