//! ci-templates/install-gate.sh, the install step of the GitHub action and
//! the GitLab components, run for real: a release archive laid out like
//! scripts/release.sh's (holding a stand-in that answers `--version` like
//! gate, so no release build is needed here), served from a file:// URL,
//! verified by its SHA-256.
//! .ci/run repeats the happy path with the real release archive.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn target() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "x86_64-unknown-linux-gnu",
        "aarch64" => "aarch64-unknown-linux-gnu",
        other => panic!("no release target for {other}"),
    }
}

/// `releases/v<version>/gate-<version>-<target>.tar.gz` and its sha256.
fn fake_release(dir: &Path, version: &str) -> (PathBuf, String) {
    let name = format!("gate-{version}-{}", target());
    let stage = dir.join("stage").join(&name);
    std::fs::create_dir_all(&stage).unwrap();
    // A stand-in that answers --version like gate (the 100+ MB debug binary
    // would make gzip the slowest part of the test); .ci/run installs the
    // real release binary with this same script and runs it.
    let bin = stage.join("gate");
    std::fs::write(&bin, format!("#!/bin/sh\necho 'gate {version}'\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let releases = dir.join("releases").join(format!("v{version}"));
    std::fs::create_dir_all(&releases).unwrap();
    let archive = releases.join(format!("{name}.tar.gz"));
    let ok = Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(dir.join("stage"))
        .arg(&name)
        .status()
        .unwrap()
        .success();
    assert!(ok, "tar failed");
    let out = Command::new("sha256sum").arg(&archive).output().unwrap();
    let sha = String::from_utf8(out.stdout).unwrap()[..64].to_string();
    (dir.join("releases"), sha)
}

fn install(dir: &Path, env: &[(&str, String)]) -> std::process::Output {
    let mut c = Command::new("bash");
    c.arg(Path::new(ROOT).join("ci-templates/install-gate.sh"))
        .env("GATE_CACHE_DIR", dir.join("cache"))
        .env("GATE_BIN_DIR", dir.join("bin"))
        .env_remove("GATE_SOURCE_DIR")
        .env_remove("GATE_SOURCE_GIT")
        .env_remove("GATE_SHA256")
        .env_remove("GATE_CHECKSUMS_FILE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

#[test]
fn a_pinned_release_is_verified_installed_and_cached() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (releases, sha) = fake_release(d, &version());
    let sums = d.join("sums.txt");
    std::fs::write(
        &sums,
        format!("# pinned\n{sha}  gate-{}-{}.tar.gz\n", version(), target()),
    )
    .unwrap();
    let env = [
        ("GATE_VERSION", version()),
        ("GATE_CHECKSUMS_FILE", sums.display().to_string()),
        ("GATE_RELEASE_URL", format!("file://{}", releases.display())),
    ];
    let out = install(d, &env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("verified"), "{stdout}");
    assert!(
        stdout.trim_end().ends_with(&format!("gate {}", version())),
        "{stdout}"
    );
    // Second job: from the cache, no download (the release is gone).
    std::fs::remove_dir_all(&releases).unwrap();
    std::fs::remove_dir_all(d.join("bin")).unwrap();
    let out = install(d, &env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("from the cache"),
        "{stdout}"
    );
}

#[test]
fn a_checksum_mismatch_is_refused_and_never_falls_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (releases, _) = fake_release(d, &version());
    let out = install(
        d,
        &[
            ("GATE_VERSION", version()),
            ("GATE_SHA256", "0".repeat(64)),
            ("GATE_RELEASE_URL", format!("file://{}", releases.display())),
            // A source to fall back to exists: it must not be used.
            ("GATE_SOURCE_DIR", ROOT.to_string()),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("refusing it"), "{stderr}");
    assert!(
        !d.join("bin/gate").exists(),
        "an unverified binary was installed"
    );
}

#[test]
fn without_a_pinned_sum_nothing_is_downloaded_and_the_reason_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (releases, _) = fake_release(d, &version());
    let out = install(
        d,
        &[
            ("GATE_VERSION", version()),
            ("GATE_RELEASE_URL", format!("file://{}", releases.display())),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no pinned SHA-256"), "{stderr}");
    assert!(stderr.contains("no source to build from"), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("downloading"));
}

#[test]
fn the_checked_in_checksum_list_is_well_formed() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("ci-templates/release-checksums.txt"))
        .unwrap();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (sha, file) = line.split_once("  ").expect("sha256sum format");
        assert_eq!(sha.len(), 64, "{line}");
        assert!(
            file.starts_with("gate-") && file.ends_with("-unknown-linux-gnu.tar.gz"),
            "{line}"
        );
    }
}

/// Issue 19.7: the version names cache directories and a git tag, so a
/// version like `../../victim` must be refused before any path is built
/// from it (it used to `rm -rf` a directory outside the cache).
#[test]
fn a_version_that_is_not_a_release_version_is_refused_and_nothing_outside_the_cache_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // GATE_CACHE_DIR is d/cache, so '../../victim' from $cache/src names
    // d/victim: outside the cache, where the old script ran `rm -rf`.
    let victim = d.join("victim/keep.txt");
    std::fs::create_dir_all(victim.parent().unwrap()).unwrap();
    std::fs::write(&victim, "precious").unwrap();
    for bad in [
        "../../victim".to_string(),
        "1.0.0/../../x".to_string(),
        "v1.0.0".to_string(),
        "1.0".to_string(),
        "1.0.0\n".to_string(),
    ] {
        let out = install(
            d,
            &[
                ("GATE_VERSION", bad.clone()),
                ("GATE_SOURCE_GIT", "file:///nonexistent".to_string()),
                ("GATE_SOURCE_DIR", String::new()),
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {stderr}");
        assert!(
            stderr.contains("is not a release version like 0.1.0"),
            "{bad:?}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("cloning"));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }
    // Nothing was created from the bad versions inside the cache either.
    let entries: Vec<_> = std::fs::read_dir(d.join("cache"))
        .map(|r| r.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(entries.is_empty(), "{entries:?}");
}

/// Issue 19.7: a binary planted in the cache that answers `--version`
/// correctly is never copied or run; the pinned archive is fetched again.
#[test]
fn a_planted_cached_binary_is_never_used_and_the_release_is_fetched_again() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (releases, sha) = fake_release(d, &version());
    let env = [
        ("GATE_VERSION", version()),
        ("GATE_SHA256", sha.clone()),
        ("GATE_RELEASE_URL", format!("file://{}", releases.display())),
    ];
    // The planted binary answers --version like the real one and leaves a
    // mark when run.
    let slot = d.join("cache").join(version()).join(target());
    std::fs::create_dir_all(&slot).unwrap();
    let mark = d.join("planted-ran");
    let planted = format!(
        "#!/bin/sh\ntouch '{}'\necho 'gate {}'\n",
        mark.display(),
        version()
    );
    let write_exec = |p: &Path, text: &str| {
        std::fs::write(p, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write_exec(&slot.join("gate"), &planted);
    let out = install(d, &env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("verified"), "{stdout}");
    assert!(!mark.exists(), "the planted binary was run");
    assert!(!std::fs::read_to_string(d.join("bin/gate"))
        .unwrap()
        .contains("touch"));

    // Now the cached archive itself is swapped for one holding the planted
    // binary: its SHA-256 differs from the pin, so it is discarded and the
    // release downloaded again.
    let archive_name = format!("gate-{}-{}.tar.gz", version(), target());
    let evil = d
        .join("evil")
        .join(format!("gate-{}-{}", version(), target()));
    std::fs::create_dir_all(&evil).unwrap();
    write_exec(&evil.join("gate"), &planted);
    let ok = Command::new("tar")
        .arg("-czf")
        .arg(slot.join(&archive_name))
        .arg("-C")
        .arg(d.join("evil"))
        .arg(evil.file_name().unwrap())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let out = install(d, &env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stderr.contains("not the pinned"), "{stderr}");
    assert!(stdout.contains("downloading"), "{stdout}");
    assert!(!mark.exists(), "the planted binary was run");
    assert!(!std::fs::read_to_string(d.join("bin/gate"))
        .unwrap()
        .contains("touch"));

    // Swapped again, and the release is gone: the install fails, nothing
    // is installed and nothing planted runs.
    let ok = Command::new("tar")
        .arg("-czf")
        .arg(slot.join(&archive_name))
        .arg("-C")
        .arg(d.join("evil"))
        .arg(evil.file_name().unwrap())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    std::fs::remove_dir_all(&releases).unwrap();
    std::fs::remove_dir_all(d.join("bin")).unwrap();
    let out = install(d, &env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not the pinned"), "{stderr}");
    assert!(!d.join("bin/gate").exists());
    assert!(!mark.exists(), "the planted binary was run");
}
