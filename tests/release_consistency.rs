//! What a release promises, checked on every run: one version everywhere
//! (Cargo.toml's, in the README, docs, templates, workflows and the wheel's
//! name), `rust-version` equal to what Cargo.lock needs, the LICENSE that
//! Cargo.toml names, and scripts/wheel.py's manylinux check.

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn manifest() -> toml::Table {
    read("Cargo.toml").parse().unwrap()
}

fn package_field(field: &str) -> String {
    manifest()["package"][field]
        .as_str()
        .unwrap_or_else(|| panic!("Cargo.toml has no package.{field}"))
        .to_string()
}

/// Files that tell a user which gate to install.
fn stated_in() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("README.md")];
    for dir in ["docs", "ci-templates", "templates", ".github/workflows"] {
        let mut stack = vec![Path::new(ROOT).join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if matches!(
                    p.extension().and_then(|x| x.to_str()),
                    Some("md" | "yml" | "yaml" | "sh" | "txt")
                ) || p.file_name().is_some_and(|n| n == "pre-push")
                {
                    files.push(p.strip_prefix(ROOT).unwrap().to_path_buf());
                }
            }
        }
    }
    files.push("scripts/release.sh".into());
    files.push("scripts/ci-pipelines.sh".into());
    files.sort();
    files
}

/// Every `X.Y.Z` (with an optional `-pre`) in `line`, not part of a longer
/// dotted number (an IP address, a four-part version).
fn versions_in(line: &str) -> Vec<String> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r"[0-9]+\.[0-9]+\.[0-9]+(-(?:rc|alpha|beta|pre|dev)\.?[0-9]+)?").unwrap()
    });
    re.find_iter(line)
        .filter(|m| {
            let before = line[..m.start()].chars().next_back();
            let longer_number = line[m.end()..].starts_with('.')
                && line[m.end() + 1..].starts_with(|c: char| c.is_ascii_digit());
            !(before.is_some_and(|c| c.is_ascii_digit() || c == '.') || longer_number)
        })
        .map(|m| m.as_str().trim_end_matches('.').to_string())
        .collect()
}

/// Numbers that look like versions but are not gate's: pinned tools (each
/// named on its line), the format example of a version, a textbook section,
/// the NVIDIA driver and PyTorch of a recording.
fn is_other_version(token: &str, line: &str) -> bool {
    const TOOLS: [&str; 13] = [
        "RUST_TOOLCHAIN",
        "ZIG_VERSION",
        "ziglang",
        "CARGO_ZIGBUILD_VERSION",
        "cargo-zigbuild",
        "check-jsonschema",
        "actionlint",
        "auditwheel",
        "junit-report",
        "127.0.0.1",
        "section ",
        "driver ",
        "torch ",
    ];
    matches!(token, "1.2.3" | "1.2.3-rc.1") || TOOLS.iter().any(|t| line.contains(t))
}

#[test]
fn one_version_everywhere_cargo_tomls() {
    let version = package_field("version");
    assert_eq!(version, "0.3.0", "this round's release");
    // The lock records the package's own version too.
    assert!(
        read("Cargo.lock").contains(&format!("name = \"gpugate\"\nversion = \"{version}\"")),
        "Cargo.lock is not at {version}: run cargo update -p gpugate"
    );
    let mut stated = 0;
    let mut wrong = Vec::new();
    for file in stated_in() {
        let text = read(file.to_str().unwrap());
        for (n, line) in text.lines().enumerate() {
            for token in versions_in(line) {
                if token == version {
                    stated += 1;
                } else if !is_other_version(&token, line) {
                    wrong.push(format!(
                        "{}:{}: {token}: {}",
                        file.display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "versions other than Cargo.toml's {version}:\n{}",
        wrong.join("\n")
    );
    // The places a user copies from state it: component refs, the inputs'
    // defaults, the example workflow, the wheel's name.
    assert!(stated >= 10, "only {stated} mentions of {version}");
    for (file, needle) in [
        ("templates/gate-check.yml", format!("gate-check@{version}")),
        (
            "templates/gate-capture.yml",
            format!("gate-capture@{version}"),
        ),
        (
            "ci-templates/github/workflows/gpu-gate.yml",
            format!("GATE_VERSION: \"{version}\""),
        ),
        ("README.md", format!("gpugate=={version}")),
        (
            "docs/release.md",
            format!("gpugate-{version}-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
        ),
    ] {
        assert!(read(file).contains(&needle), "{file} does not say {needle}");
    }
    let components = ["templates/gate-check.yml", "templates/gate-capture.yml"];
    for file in components {
        let doc: serde_yaml::Value =
            serde_yaml::from_str(read(file).split("\n---\n").next().unwrap()).unwrap();
        assert_eq!(
            doc["spec"]["inputs"]["gate-version"]["default"].as_str(),
            Some(version.as_str()),
            "{file}: the gate-version default"
        );
    }
    let action: serde_yaml::Value =
        serde_yaml::from_str(&read("ci-templates/github/action.yml")).unwrap();
    assert_eq!(
        action["inputs"]["gate-version"]["default"].as_str(),
        Some(version.as_str())
    );
}

/// (major, minor) of "1.88" or "1.88.0".
fn major_minor(v: &str) -> (u32, u32) {
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap());
    (parts.next().unwrap(), parts.next().unwrap_or(0))
}

#[test]
fn rust_version_is_what_the_locked_crates_need() {
    // cargo metadata lists each locked package with its rust-version; for
    // this host's platform (what `cargo test` has already downloaded, so
    // --offline works on a fresh clone after the build).
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let host = std::process::Command::new("rustc")
        .arg("-vV")
        .output()
        .unwrap();
    let host = String::from_utf8(host.stdout).unwrap();
    let host = host
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string();
    let metadata = |offline: bool| {
        let mut c = std::process::Command::new(&cargo);
        c.current_dir(ROOT)
            .args(["metadata", "--locked", "--format-version", "1"])
            .args(["--filter-platform", &host]);
        if offline {
            c.arg("--offline");
        }
        c.output().unwrap()
    };
    // Offline first (what the build downloaded is enough); a registry
    // cache without some manifest asks the registry once.
    let mut out = metadata(true);
    if !out.status.success() {
        out = metadata(false);
    }
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let resolved: std::collections::HashSet<&str> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    let (needed, by) = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] != "gpugate" && resolved.contains(p["id"].as_str().unwrap()))
        .filter_map(|p| {
            let v = p["rust_version"].as_str()?;
            Some((major_minor(v), format!("{} {}", p["name"], p["version"])))
        })
        .max()
        .expect("some locked crate states a rust-version");
    let declared = package_field("rust-version");
    assert_eq!(
        major_minor(&declared),
        needed,
        "Cargo.toml's rust-version {declared} vs {}.{} that {by} needs",
        needed.0,
        needed.1
    );
    let readme_says = format!("a Rust toolchain ({}.{}+", needed.0, needed.1);
    assert!(
        read("README.md").contains(&readme_says),
        "README must say {readme_says}"
    );
}

#[test]
fn the_license_file_is_the_apache_2_0_text_cargo_toml_names() {
    assert_eq!(package_field("license"), "Apache-2.0");
    let text = read("LICENSE");
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    assert_eq!(
        &lines[1..3],
        ["Apache License", "Version 2.0, January 2004"]
    );
    for needle in [
        "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
        "9. Accepting Warranty or Additional Liability.",
        "END OF TERMS AND CONDITIONS",
        "APPENDIX: How to apply the Apache License to your work.",
    ] {
        assert!(text.contains(needle), "LICENSE lacks '{needle}'");
    }
    assert_eq!(
        lines.len(),
        202,
        "the full text, as apache.org publishes it"
    );
}

#[test]
fn the_wheel_refuses_a_binary_that_needs_a_newer_glibc_than_2_17() {
    // This build's debug binary is linked against this host's glibc.
    let gate = assert_cmd::cargo::cargo_bin("gate");
    let info = std::process::Command::new("readelf")
        .args(["-W", "--version-info"])
        .arg(&gate)
        .output()
        .expect("readelf (binutils)");
    let text = String::from_utf8_lossy(&info.stdout);
    let newest = regex::Regex::new(r"GLIBC_([0-9]+)\.([0-9]+)")
        .unwrap()
        .captures_iter(&text)
        .map(|c| (c[1].parse::<u32>().unwrap(), c[2].parse::<u32>().unwrap()))
        .max()
        .unwrap();
    if newest <= (2, 17) {
        eprintln!(
            "SKIP: this host's binary needs only GLIBC_{}.{}: the refusal is not exercised",
            newest.0, newest.1
        );
        return;
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("python3")
        .current_dir(ROOT)
        .arg("scripts/wheel.py")
        .arg("--binary")
        .arg(&gate)
        .args([
            "--version",
            &package_field("version"),
            "--arch",
            std::env::consts::ARCH,
            "--out",
        ])
        .arg(out_dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("needs GLIBC_{}.{}", newest.0, newest.1))
            && err.contains("manylinux_2_17"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(out_dir.path()).unwrap().count(),
        0,
        "no wheel written"
    );
}

/// The jobs of a GitLab component (its second YAML document).
fn component_jobs(rel: &str) -> serde_yaml::Mapping {
    let text = read(rel);
    let jobs = text
        .split("\n---\n")
        .nth(1)
        .expect("spec, then ---, then jobs");
    serde_yaml::from_str(jobs).unwrap()
}

fn yaml_text(v: &serde_yaml::Value) -> String {
    serde_yaml::to_string(v).unwrap()
}

#[test]
fn cargo_never_runs_on_a_gpu_runner_and_the_fallback_is_a_build_job() {
    let rust_version = package_field("rust-version");
    let rust_image = format!("rust:{rust_version}-bullseye");
    // The installer of both platforms installs a pinned wheel and never builds.
    let installer = read("ci-templates/install-gate.sh");
    let code: Vec<&str> = installer
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    assert!(
        code.iter().all(|l| !l.contains("cargo")),
        "install-gate.sh must not build"
    );
    assert!(installer.contains("--require-hashes"));

    // GitLab: the GPU job (tags: [runner-tag]) runs no cargo; the job
    // <job-name>-build does, in the Rust image, in stage .pre, only with
    // install: build, and hands .gate/build/gate on as an artifact.
    for (rel, job) in [
        ("templates/gate-check.yml", "gate-check"),
        ("templates/gate-capture.yml", "gate-capture"),
    ] {
        let spec: serde_yaml::Value =
            serde_yaml::from_str(read(rel).split("\n---\n").next().unwrap()).unwrap();
        let inputs = &spec["spec"]["inputs"];
        assert_eq!(
            inputs["install"]["default"].as_str(),
            Some("wheel"),
            "{rel}"
        );
        assert_eq!(
            inputs["rust-image"]["default"].as_str(),
            Some(rust_image.as_str()),
            "{rel}: the build image carries Cargo.toml's rust-version"
        );
        let jobs = component_jobs(rel);
        let gpu = &jobs["$[[ inputs.job-name ]]"];
        assert!(gpu["tags"].is_sequence(), "{rel}: the GPU job");
        let gpu_text = yaml_text(gpu);
        assert!(!gpu_text.contains("cargo"), "{rel}: cargo in the GPU job");
        assert!(
            gpu_text.contains("gate_install || exit $?") && gpu_text.contains(".gate/build/gate")
        );
        let build = &jobs["$[[ inputs.job-name ]]-build"];
        assert!(
            build.get("tags").is_none(),
            "{rel}: the build job runs on an ordinary runner"
        );
        assert_eq!(build["stage"].as_str(), Some(".pre"), "{rel}");
        assert_eq!(
            build["image"].as_str(),
            Some("$[[ inputs.rust-image ]]"),
            "{rel}"
        );
        assert_eq!(
            build["rules"][0]["if"].as_str(),
            Some("\"$[[ inputs.install ]]\" != \"build\""),
            "{rel}: absent unless install is build"
        );
        assert_eq!(build["rules"][0]["when"].as_str(), Some("never"), "{rel}");
        assert!(
            yaml_text(build).contains("cargo build --locked --release --bin gate"),
            "{rel}"
        );
        assert_eq!(
            build["artifacts"]["paths"][0].as_str(),
            Some(".gate/build/gate"),
            "{rel}"
        );
        assert!(
            jobs.keys().all(|k| !k.as_str().unwrap().contains(job)),
            "job names come from the input"
        );
    }

    // GitHub: the composite action (which runs on the GPU runner) runs no
    // cargo; the example workflow's build-gate job builds on a GitHub-hosted
    // runner in the Rust image and the GPU jobs take its artifact.
    let action: serde_yaml::Value =
        serde_yaml::from_str(&read("ci-templates/github/action.yml")).unwrap();
    for step in action["runs"]["steps"].as_sequence().unwrap() {
        assert!(!yaml_text(step).contains("cargo"), "{}", yaml_text(step));
    }
    let wf: serde_yaml::Value =
        serde_yaml::from_str(&read("ci-templates/github/workflows/gpu-gate.yml")).unwrap();
    assert_eq!(
        wf["env"]["GATE_RUST_IMAGE"].as_str(),
        Some(rust_image.as_str())
    );
    assert_eq!(wf["env"]["GATE_INSTALL"].as_str(), Some("wheel"));
    let build = &wf["jobs"]["build-gate"];
    assert_eq!(build["runs-on"].as_str(), Some("ubuntu-latest"));
    assert!(yaml_text(build).contains("cargo build --locked --release --bin gate"));
    for name in ["check", "capture"] {
        let job = &wf["jobs"][name];
        assert_eq!(job["needs"].as_str(), Some("build-gate"), "{name}");
        assert!(yaml_text(&job["runs-on"]).contains("gpu"), "{name}");
        let text = yaml_text(job);
        assert!(!text.contains("cargo"), "{name}: cargo on the GPU runner");
        assert!(
            text.contains("gate-binary: ${{ needs.build-gate.outputs.built == 'true'"),
            "{name}"
        );
    }
}
