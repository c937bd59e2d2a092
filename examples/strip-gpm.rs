//! Write the GPM-stripped twin of recorded traces (`gpugate::trace::nogpm`):
//! what the same runs hold on a GPU without GPM.
//!
//! ```text
//! cargo run --example strip-gpm -- OUT_DIR TRACE.jsonl...
//! ```
//! Each twin is `OUT_DIR/<name of the trace>`; its header note names the
//! trace it comes from. `scripts/strip-gpm.sh` runs it over the fixtures.

use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((out_dir, traces)) = args.split_first().filter(|(_, t)| !t.is_empty()) else {
        eprintln!("usage: strip-gpm OUT_DIR TRACE.jsonl...");
        std::process::exit(2);
    };
    for t in traces {
        let path = Path::new(t);
        let name = path.file_name().expect("a trace file name");
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| fail(t, &e.to_string()));
        let source = format!("fixtures/traces/{}", name.to_string_lossy());
        let twin = gpugate::trace::nogpm::strip_gpm(&text, &source).unwrap_or_else(|e| fail(t, &e));
        let out = Path::new(out_dir).join(name);
        gpugate::files::write_output(&out, "twin", twin.as_bytes(), &[path])
            .unwrap_or_else(|e| fail(&out.display().to_string(), &e.to_string()));
    }
}

fn fail(what: &str, e: &str) -> ! {
    eprintln!("strip-gpm: '{what}': {e}");
    std::process::exit(1);
}
