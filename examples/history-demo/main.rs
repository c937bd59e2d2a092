//! Build the demo history with the real `gate` binary over SYNTHETIC traces,
//! then draw its trend page: what `docs/history-screenshot.png` shows (the
//! story is in `demo.rs`; scripts/screenshots.sh runs this).
//!
//! ```text
//! cargo run --example history-demo -- OUT_DIR      # GATE=target/debug/gate by default
//! ```
//!
//! Prints the page's path, OUT_DIR/trend.html.

mod demo;

use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| {
        eprintln!("usage: history-demo OUT_DIR");
        std::process::exit(2)
    }));
    let bin = PathBuf::from(std::env::var("GATE").unwrap_or_else(|_| "target/debug/gate".into()));
    println!("{}", demo::build(&out, &bin).display());
}
