//! `--command-string` and `--args-string`: CI inputs that can only be strings
//! reach gate whole and gate splits them (shlex rules). Real binary, real
//! child process: nothing in the strings is ever evaluated by a shell.

use crate::common;

use common::gate;

#[test]
fn command_string_runs_argv_without_a_shell() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = gate(d)
        .args(["record", "--no-gpu", "-o", "t.jsonl", "--command-string"])
        .arg("printf '%s|' 'two words' $HOME $(touch pwned) `id` ';' && echo x")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "two words|$HOME|$(touch|pwned)|`id`|;|&&|echo|x|"
    );
    assert!(!d.join("pwned").exists(), "a $(...) in the string ran");
}

#[test]
fn args_string_flags_are_parsed_like_typed_flags() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = gate(d)
        .args(["record", "--no-gpu", "-o", "t.jsonl"])
        .args(["--args-string", "--tag 'note=a b' --warmup 1m30s"])
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = gpugate::trace::Trace::load(&d.join("t.jsonl")).unwrap();
    assert_eq!(t.header.tags.get("note").map(String::as_str), Some("a b"));

    let bad = gate(d)
        .args([
            "record",
            "--no-gpu",
            "--args-string",
            "--warmup '3s",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("--args-string") && err.contains("unclosed quote"),
        "{err}"
    );

    let unknown = gate(d)
        .args([
            "record",
            "--no-gpu",
            "--args-string",
            "--no-such-flag",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("--no-such-flag"));
}

#[test]
fn huge_durations_are_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = gate(dir.path())
        .args([
            "record",
            "--no-gpu",
            "--duration",
            "100000000000000h",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("7 days") && !err.contains("panicked"), "{err}");
}

/// Issue 19.9: `--args-string` may only add gate flags. A `--`, a positional
/// word, `--command-string`, `--help` or `--version` inside it is refused
/// with one line (exit 2), nothing is launched, and it is never joined to
/// the command given after `--`.
#[test]
fn args_string_cannot_add_a_command_or_end_the_job_without_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mark = d.join("launched");
    let touch = format!("touch {}", mark.display());
    for (sub, extra, tail) in [
        ("record", format!("-- {touch}"), vec![]),
        ("record", format!("-- {touch}"), vec!["--", "true"]),
        ("record", touch.clone(), vec!["--", "true"]),
        ("record", format!("--command-string '{touch}'"), vec![]),
        ("check", "--help".to_string(), vec!["--", "true"]),
        ("check", "-h".to_string(), vec!["--", "true"]),
        ("check", "--version".to_string(), vec!["--", "true"]),
        ("check", "-V".to_string(), vec!["--", "true"]),
        (
            "check",
            "--json r.json help".to_string(),
            vec!["--", "true"],
        ),
    ] {
        let mut c = gate(d);
        c.arg(sub);
        if sub == "record" {
            c.args(["--no-gpu", "-o", "t.jsonl"]);
        } else {
            c.args(["--baseline", "b"]);
        }
        let out = c
            .args(["--args-string", &extra])
            .args(&tail)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{sub} {extra:?}: {err}");
        assert!(
            err.contains("it may only add gate flags"),
            "{sub} {extra:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(!mark.exists(), "{sub} {extra:?} launched a command");
    }
    // Flags with values that look like words are still fine.
    let out = gate(d)
        .args(["record", "--no-gpu", "-o", "t.jsonl"])
        .args([
            "--args-string",
            "--tag note=x --warmup 0s --note 'two words'",
        ])
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The help text states the rule the code enforces.
#[test]
fn the_args_string_help_says_flags_only() {
    let out = gate(std::path::Path::new("."))
        .args(["check", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains("Flags and their values only: '--', a command or other positional word, --command-string, --help and --version are refused"),
        "{help}"
    );
}
