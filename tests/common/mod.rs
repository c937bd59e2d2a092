//! Shared helpers of the integration tests: synthetic traces, running the
//! real `gate` binary, JUnit validation with xmllint.

#![allow(dead_code)]

pub mod synth;

use std::path::{Path, PathBuf};

#[allow(unused_imports)] // not every test file uses both
pub use synth::{Profile, Synth};

/// The `gate` binary, run in `dir`, with CI variables cleared so the
/// host's environment cannot change what a test sees.
pub fn gate(dir: &Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("gate").unwrap();
    c.current_dir(dir);
    for var in [
        "GITHUB_ACTIONS",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_OUTPUT",
        "CI_COMMIT_SHA",
        "GITHUB_SHA",
        "NO_COLOR",
    ] {
        c.env_remove(var);
    }
    c
}

/// Write a synthetic trace `name` in `dir` and return its path.
pub fn trace(dir: &Path, name: &str, s: &Synth) -> PathBuf {
    let p = dir.join(name);
    synth::write(&p, s);
    p
}

pub fn healthy(seed: u64) -> Synth {
    Synth {
        seed,
        ..Default::default()
    }
}

pub fn output(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Validate a JUnit file against the Jenkins xunit schema with xmllint.
/// The schema is vendored in tests/schemas (a copy of ../shared/schemas).
/// Without xmllint it skips loudly on a developer machine, and fails in CI
/// (`CI` set), where `.ci/run` installs it.
pub fn assert_valid_junit(path: &Path) {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/junit-10.xsd");
    assert!(
        schema.exists(),
        "JUnit schema missing at {}",
        schema.display()
    );
    let out = match std::process::Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&schema)
        .arg(path)
        .output()
    {
        Ok(o) => o,
        Err(_) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "xmllint not installed: apt-get install -y libxml2-utils (.ci/run does)"
            );
            eprintln!("SKIP: xmllint not installed (apt-get install -y libxml2-utils)");
            return;
        }
    };
    assert!(
        out.status.success(),
        "JUnit {} does not validate:\n{}\n---\n{}",
        path.display(),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(path).unwrap_or_default()
    );
}
