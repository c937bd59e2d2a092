//! `--command-string` and `--args-string`: CI inputs that can only be strings
//! reach gate whole and gate splits them (shlex rules). Real binary, real
//! child process: nothing in the strings is ever evaluated by a shell.

mod common;

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
