//! Colour conventions of cargo and ripgrep, through the real binary (stdout
//! is a pipe here): `--color always|never` wins, `NO_COLOR` set to any value
//! (even empty) turns colour off, `CLICOLOR_FORCE` turns it on for a pipe.

use assert_cmd::Command;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const ESC: &str = "\x1b[";

fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut c = Command::cargo_bin("gate").unwrap();
    c.current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("GITHUB_ACTIONS")
        .args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn check_and_report_follow_the_flag_then_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let trace = |n: &str| format!("{ROOT}/fixtures/traces/{n}.jsonl");
    let (h1, h2, storm) = (
        trace("healthy-1"),
        trace("healthy-2"),
        trace("launch-storm"),
    );
    run(
        d,
        &["capture", "--baseline", "b", "--replay", &h1, &h2],
        &[],
    );
    let check = ["check", "--baseline", "b", "--replay", storm.as_str()];
    let with = |extra: &[&str], env: &[(&str, &str)]| {
        let mut a: Vec<&str> = check.to_vec();
        a.extend(extra);
        run(d, &a, env)
    };
    // A pipe: no colour by default.
    assert!(!with(&[], &[]).contains(ESC));
    assert!(with(&["--color", "always"], &[]).contains(ESC));
    assert!(with(&[], &[("CLICOLOR_FORCE", "1")]).contains(ESC));
    assert!(!with(&[], &[("CLICOLOR_FORCE", "0")]).contains(ESC));
    // NO_COLOR set but empty still means no colour, even when forced.
    assert!(!with(&[], &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "1")]).contains(ESC));
    // The flag beats the environment both ways.
    assert!(with(&["--color", "always"], &[("NO_COLOR", "1")]).contains(ESC));
    assert!(!with(&["--color", "never"], &[("CLICOLOR_FORCE", "1")]).contains(ESC));

    // gate report uses the same decision.
    let report = |extra: &[&str], env: &[(&str, &str)]| {
        let mut a = vec!["report", storm.as_str()];
        a.extend(extra);
        run(d, &a, env)
    };
    assert!(report(&["--color", "always"], &[]).contains(ESC));
    assert!(!report(&[], &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "1")]).contains(ESC));
    assert!(report(&[], &[("CLICOLOR_FORCE", "1")]).contains(ESC));
}
