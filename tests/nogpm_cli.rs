//! `--no-gpm`: record what a GPU without GPM (A100, L4, T4) gives. Offered
//! wherever gate records (record, capture, check, report, watch); it reads
//! NVML, so it cannot be combined with --no-gpu, which reads none.

use assert_cmd::Command;

fn gate() -> Command {
    Command::cargo_bin("gate").unwrap()
}

#[test]
fn every_recording_command_offers_no_gpm() {
    for cmd in ["record", "capture", "check", "report", "watch"] {
        let out = gate().args([cmd, "--help"]).output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("--no-gpm"), "gate {cmd} --help:\n{help}");
    }
}

#[test]
fn no_gpm_with_no_gpu_is_a_usage_error() {
    let out = gate()
        .args(["record", "--no-gpm", "--no-gpu", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--no-gpm") && err.contains("--no-gpu"),
        "{err}"
    );
}
