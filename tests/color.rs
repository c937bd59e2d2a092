//! Colour conventions as anstream reads them, through the real binary
//! (stdout is a pipe, or a pseudo-terminal from `script`): `--color
//! always|never` wins, a non-empty `NO_COLOR` turns colour off (an empty
//! one is unset, no-color.org), `CLICOLOR_FORCE` other than `0` turns it on
//! for a pipe, `CLICOLOR=0` turns it off on a terminal.

use assert_cmd::Command;
use std::io::Write;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const ESC: &str = "\x1b[";

fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut c = Command::cargo_bin("gate").unwrap();
    c.current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR")
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
    // NO_COLOR set but empty is unset (no-color.org); set, it beats the force.
    assert!(with(&[], &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "1")]).contains(ESC));
    assert!(!with(&[], &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")]).contains(ESC));
    // CLICOLOR_FORCE beats CLICOLOR=0 (bixense.com/clicolors).
    assert!(with(&[], &[("CLICOLOR", "0"), ("CLICOLOR_FORCE", "1")]).contains(ESC));
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
    assert!(!report(&[], &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")]).contains(ESC));
    assert!(report(&[], &[("CLICOLOR_FORCE", "1")]).contains(ESC));
}

/// `gate report` on a pseudo-terminal (util-linux `script`): coloured with
/// `TERM=xterm-256color`, not with `CLICOLOR=0` or `TERM=dumb`.
#[test]
fn a_terminal_is_coloured_unless_clicolor_is_zero() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        // Straight to the handle: the harness hides what the macros print.
        let _ = writeln!(std::io::stderr(), "SKIPPED color::a_terminal_is_coloured_unless_clicolor_is_zero (script): util-linux `script` not installed, no terminal to give gate");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let gate = env!("CARGO_BIN_EXE_gate");
    let storm = format!("{ROOT}/fixtures/traces/launch-storm.jsonl");
    let on_tty = |env: &[(&str, &str)]| -> String {
        let mut c = std::process::Command::new("script");
        // argv of `script -c` is one shell line: the paths are quoted.
        c.current_dir(dir.path())
            .args(["-q", "-e", "-c"])
            .arg(format!("'{gate}' report '{storm}'"))
            .arg("/dev/null")
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE")
            .env_remove("CLICOLOR")
            .env_remove("CI")
            .env("TERM", "xterm-256color");
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(on_tty(&[]).contains(ESC), "a terminal is coloured");
    assert!(!on_tty(&[("CLICOLOR", "0")]).contains(ESC), "CLICOLOR=0");
    assert!(!on_tty(&[("TERM", "dumb")]).contains(ESC), "TERM=dumb");
    assert!(!on_tty(&[("NO_COLOR", "1")]).contains(ESC), "NO_COLOR=1");
    assert!(on_tty(&[("NO_COLOR", "")]).contains(ESC), "NO_COLOR empty");
}
