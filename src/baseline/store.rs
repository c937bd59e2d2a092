//! How a baseline is stored: the review-friendly TOML text (stable key
//! order, floats at full round-trip precision, header comment saying how to refresh it),
//! loading with `file: line L, column C` errors and a clear message for a
//! future schema, and the never-lose-data write (lock file, diff on
//! replace, temp file + fsync + rename).

use super::{Baseline, SCHEMA_VERSION};
use crate::error::GateError;
use crate::escape;
use crate::validate::toml_error;
use serde::Deserialize;
use std::io::Write;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------- rendering

/// The review-friendly TOML text of a baseline: header comment, fields in
/// schema order, maps sorted, floats at full precision, each run's
/// summary on one line.
pub fn to_toml(b: &Baseline, refresh_hint: &str) -> String {
    let value = toml::Value::try_from(b).expect("a baseline always serializes to TOML");
    let table = match value {
        toml::Value::Table(t) => t,
        _ => unreachable!("a struct serializes to a table"),
    };
    let mut out = String::new();
    out.push_str(&format!(
        "# gate baseline '{}' (schema_version {}), written by gate {}.\n",
        escape::toml_comment(&b.name),
        SCHEMA_VERSION,
        escape::toml_comment(&b.gate_version)
    ));
    out.push_str("# Refresh it (after an intended performance change) with:\n");
    out.push_str(&format!("#   {}\n", escape::toml_comment(refresh_hint)));
    out.push_str("# Review changes like code: a lower baseline loosens the gate for everyone.\n\n");
    write_table(&mut out, &mut Vec::new(), &table);
    out
}

/// The command that refreshes a baseline, for its header comment.
pub fn refresh_hint(name: &str, command: &[String]) -> String {
    let mut s = format!("gate capture --baseline {name} --replace");
    if command.is_empty() {
        s.push_str(" [--runs N] -- CMD");
    } else {
        s.push_str(" --");
        for a in command {
            s.push(' ');
            s.push_str(&escape::shell_word(a));
        }
    }
    s
}

fn is_nested_table(v: &toml::Value) -> bool {
    matches!(v, toml::Value::Table(_))
}

fn write_table(out: &mut String, path: &mut Vec<String>, table: &toml::Table) {
    let has_scalars = table.values().any(|v| !is_nested_table(v));
    if !path.is_empty() && (has_scalars || table.is_empty()) {
        let header: Vec<String> = path.iter().map(|k| key(k)).collect();
        out.push_str(&format!("\n[{}]\n", header.join(".")));
    }
    for (k, v) in table {
        if !is_nested_table(v) {
            out.push_str(&format!("{} = {}\n", key(k), value_text(v, true)));
        }
    }
    for (k, v) in table {
        if let toml::Value::Table(t) = v {
            path.push(k.clone());
            write_table(out, path, t);
            path.pop();
        }
    }
}

fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        escape::toml_string(k)
    }
}

/// The storage form of a float: the shortest text that reads back as
/// exactly the same number (Rust's round-trip `Display`), always with a
/// decimal point (it is a TOML float). Full precision, because the noise
/// band is computed from these numbers: rounding per-run values to 4
/// digits made a stable throughput's between-run spread a rounding
/// artefact (`runs = [1202.0, 1202.0]` for 1201.992 and 1202.307, a band
/// of +-0). Reports round for display (`format::number`).
pub(crate) fn format_float(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let v = if v == 0.0 { 0.0 } else { v }; // no "-0.0"
    let s = format!("{v}");
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
}

fn value_text(v: &toml::Value, top: bool) -> String {
    match v {
        toml::Value::String(s) => escape::toml_string(s),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => format_float(*f),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::Array(a) => {
            if top && !a.is_empty() && a.iter().all(is_nested_table) {
                // Arrays of small tables (per-run summaries): one per line.
                let mut s = String::from("[\n");
                for item in a {
                    s.push_str("  ");
                    s.push_str(&value_text(item, false));
                    s.push_str(",\n");
                }
                s.push(']');
                s
            } else {
                let items: Vec<String> = a.iter().map(|x| value_text(x, false)).collect();
                format!("[{}]", items.join(", "))
            }
        }
        toml::Value::Table(t) => {
            if t.is_empty() {
                return "{}".into();
            }
            let items: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{} = {}", key(k), value_text(v, false)))
                .collect();
            format!("{{ {} }}", items.join(", "))
        }
    }
}

// ------------------------------------------------------------------ loading

/// Where baseline `name` lives in `dir`.
pub fn path_for(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.toml"))
}

/// Names of the baselines in `dir` (`NAME.toml`), sorted; empty when the
/// folder cannot be read.
pub fn available(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.strip_suffix(".toml")?.to_string();
            crate::validate::valid_name(&name).then_some(name)
        })
        .collect();
    names.sort();
    names
}

/// Load a baseline file; a missing file names the closest existing
/// baseline (a typo), the ones there are, and the capture command to run.
pub fn load(path: &Path, name_hint: &str) -> Result<Baseline, GateError> {
    let text = crate::files::read_input_string(path, crate::limits::MAX_BASELINE_BYTES).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            let dir = path
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let available = available(path.parent().unwrap_or(Path::new(".")));
            // A typo: at most one edit in four characters (two at least).
            let limit = (name_hint.chars().count() / 4).max(2);
            let close = available
                .iter()
                .map(|a| (crate::spelling::levenshtein(name_hint, a), a))
                .filter(|(d, _)| *d <= limit)
                .min();
            let hint = match close {
                Some((_, close)) => format!("did you mean '{close}'? "),
                None => String::new(),
            };
            let listed = if available.is_empty() {
                "none yet".to_string()
            } else {
                available.join(", ")
            };
            GateError::usage(format!(
                "baseline '{name_hint}' not found in '{dir}/' (available: {listed}); {hint}run 'gate capture --baseline {name_hint}' first"
            ))
        } else {
            GateError::bad_file(path, format!("cannot read baseline: {e}"))
        }
    })?;
    read_back(&text, path)
}

/// The baseline `text` as `load` reads it from `path`: parsed, checked, and
/// its name equal to the file's.
fn read_back(text: &str, path: &Path) -> Result<Baseline, GateError> {
    let origin = path.display().to_string();
    let b = parse(text, &origin)?;
    if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
        super::check::check_name(&b, text, &origin, stem)?;
    }
    Ok(b)
}

/// Whether `text`, written at `path`, would read back through `load` (its
/// size limit and its reader): `capture` never writes a baseline that its
/// own check refuses (values of 1e16 and more, a 19 MiB BMF baseline:
/// issue 41.4). The error says why it would not.
pub fn verify_readable(text: &str, path: &Path) -> Result<(), GateError> {
    let max = crate::limits::MAX_BASELINE_BYTES;
    if text.len() as u64 > max {
        return Err(GateError::bad_file(
            path,
            format!(
                "is {}, over the {} limit for a baseline (docs/limits.md)",
                crate::limits::bytes_text(text.len() as u64),
                crate::limits::bytes_text(max)
            ),
        ));
    }
    read_back(text, path).map(|_| ())
}

/// Parse the text of a baseline file; `origin` names it in messages.
pub fn parse(text: &str, origin: &str) -> Result<Baseline, GateError> {
    let recapture = "fix the file or re-capture it with 'gate capture --baseline NAME --replace'";
    // Syntax first, then the version (so a future file gets the version
    // message, not a confusing unknown-field one), then the schema.
    let table: toml::Table =
        toml::from_str(text).map_err(|e| toml_error(origin, text, &e, recapture))?;
    #[derive(Deserialize)]
    struct Probe {
        schema_version: Option<toml::Spanned<toml::Value>>,
    }
    let probe: Probe = toml::from_str(text).map_err(|e| toml_error(origin, text, &e, recapture))?;
    match probe.schema_version {
        None => {
            return Err(GateError::bad_file(
                origin,
                format!(
                    "line 1, column 1: missing schema_version; not a gate baseline? {recapture}"
                ),
            ))
        }
        Some(v) if v.get_ref().as_integer() != Some(SCHEMA_VERSION as i64) => {
            let (l, c) = crate::validate::line_col(text, v.span().start);
            let written_by = table
                .get("gate_version")
                .and_then(|g| g.as_str())
                .map(|g| format!(" (written by gate {g})"))
                .unwrap_or_default();
            return Err(GateError::bad_file(
                origin,
                format!(
                    "line {l}, column {c}: baseline schema_version {} is not supported by this gate (it reads {SCHEMA_VERSION}){written_by}; re-capture with 'gate capture --baseline NAME --replace' or use the gate version that wrote it",
                    v.get_ref()
                ),
            ));
        }
        Some(_) => {}
    }
    let b: Baseline = toml::from_str(text).map_err(|e| toml_error(origin, text, &e, recapture))?;
    super::check::check(&b, text, origin)?;
    Ok(b)
}

// ------------------------------------------------------------------ storing

/// What `store` did.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreOutcome {
    Created,
    /// Replaced an existing file; the unified diff old -> new.
    Replaced {
        diff: String,
    },
    /// The file exists and `replace` was false: nothing written.
    Refused {
        diff: String,
    },
}

/// Write `text` to `path` without ever losing data:
/// - an exclusive lock on `PATH.lock` (fs4) serialises concurrent captures
///   of one baseline, so the existence check and the rename are one step
///   (the lock file is removed afterwards, see `LockGuard`);
/// - an existing file is only replaced with `replace`, and the diff is
///   returned either way for the user to review;
/// - the write goes to a temp file in the same directory, is fsynced, then
///   renamed over the target (atomic on POSIX), and the directory fsynced;
/// - the temp file is named after the baseline (`.NAME.toml.XXXXXX.gate-tmp`),
///   so under the lock any such file is a leftover of a killed capture and
///   is removed (as are legacy `.gate-baseline-*.tmp` files over an hour old);
/// - neither the lock file nor the baseline may be a symbolic link to
///   follow, a FIFO or a device; a full disk is an infrastructure error.
pub fn store(path: &Path, text: &str, replace: bool) -> Result<StoreOutcome, GateError> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let io_err = |what: &str, e: std::io::Error| {
        crate::files::output_error(
            format!(
                "{what} '{}': {e}; pass --baseline-dir to a writable directory",
                path.display()
            ),
            &e,
        )
    };
    std::fs::create_dir_all(&dir).map_err(|e| io_err("cannot create the directory of", e))?;
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let _lock = LockGuard::acquire(PathBuf::from(lock_path))
        .map_err(|e| io_err("cannot lock (NAME.toml.lock)", e))?;
    crate::files::check_output(path, "the baseline", &[]).map_err(|e| io_err("cannot store", e))?;
    remove_stale_temps(&dir, path);

    let outcome = match crate::files::read_input_string(path, crate::limits::MAX_BASELINE_BYTES) {
        Ok(old) => {
            let diff = unified_diff(&old, text, &path.display().to_string());
            if !replace {
                return Ok(StoreOutcome::Refused { diff });
            }
            StoreOutcome::Replaced { diff }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => StoreOutcome::Created,
        Err(e) => return Err(io_err("cannot read existing baseline", e)),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(&temp_prefix(path))
        .rand_bytes(TEMP_RAND_CHARS)
        .suffix(TEMP_SUFFIX)
        .tempfile_in(&dir)
        .map_err(|e| io_err("cannot create a temp file next to", e))?;
    tmp.write_all(text.as_bytes())
        .map_err(|e| io_err("cannot write", e))?;
    #[cfg(unix)]
    {
        // tempfile creates 0600; a baseline is a file for the repository.
        use std::os::unix::fs::PermissionsExt;
        let _ = tmp
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644));
    }
    tmp.as_file()
        .sync_all()
        .map_err(|e| io_err("cannot fsync", e))?;
    tmp.persist(path)
        .map_err(|e| io_err("cannot rename the temp file onto", e.error))?;
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all(); // make the rename durable
    }
    Ok(outcome)
}

const TEMP_SUFFIX: &str = ".gate-tmp";
/// Random characters between prefix and suffix: with them, the temp files
/// of baseline `a` are told from those of `a.toml.b`.
const TEMP_RAND_CHARS: usize = 6;

/// `.NAME.toml.`: what this baseline's temp files start with.
fn temp_prefix(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".{name}.")
}

/// Called under the baseline's lock: no other capture of it is writing, so
/// its temp files are leftovers of a capture that was killed. Legacy
/// `.gate-baseline-*.tmp` files (any baseline) go once over an hour old.
fn remove_stale_temps(dir: &Path, path: &Path) {
    let prefix = temp_prefix(path);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let ours = name.len() == prefix.len() + TEMP_RAND_CHARS + TEMP_SUFFIX.len()
            && name.starts_with(&prefix)
            && name.ends_with(TEMP_SUFFIX)
            && name
                .get(prefix.len()..prefix.len() + TEMP_RAND_CHARS)
                .is_some_and(|r| r.chars().all(|c| c.is_ascii_alphanumeric()));
        let legacy = name.starts_with(".gate-baseline-")
            && name.ends_with(".tmp")
            && entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > std::time::Duration::from_secs(3600));
        // Regular files only: never follow or remove anything else.
        let regular = entry.file_type().is_ok_and(|t| t.is_file());
        if (ours || legacy) && regular {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Exclusive lock on `NAME.toml.lock`, removed again on drop so no stale
/// lock files are left next to baselines. Removing a lock file is only safe
/// if a waiter that then gets the lock notices it locked an unlinked file:
/// after locking, the path must still name the inode we locked, else retry.
struct LockGuard {
    file: std::fs::File,
    path: PathBuf,
}

impl LockGuard {
    fn acquire(path: PathBuf) -> std::io::Result<LockGuard> {
        use fs4::fs_std::FileExt;
        loop {
            // Never through a symlink planted at NAME.toml.lock (it would
            // create or lock its target), never a FIFO (the open would block).
            let file = crate::files::open_lock_file(&path)?;
            FileExt::lock_exclusive(&file)?;
            if same_file(&file, &path) {
                return Ok(LockGuard { file, path });
            }
            // Another capture removed it between our open and our lock.
        }
    }
}

#[cfg(unix)]
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &std::fs::File, path: &Path) -> bool {
    path.exists()
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Unlink while still holding the lock; closing the file unlocks.
        #[cfg(unix)]
        let _ = std::fs::remove_file(&self.path);
        let _ = &self.file;
    }
}

/// Unified diff of two texts (3 lines of context), `a/` and `b/` headers.
pub(crate) fn unified_diff(old: &str, new: &str, label: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{label}"), &format!("b/{label}"))
        .to_string()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::baseline::build::metric_entry;
    use crate::baseline::{CaptureSettings, Environment, RunStat, SourceRun};
    use crate::metrics::{Direction, Statistic};
    use crate::stats::MetricStats;
    use std::collections::BTreeMap;

    #[test]
    fn a_baseline_over_the_read_limit_would_not_read_back() {
        let text = to_toml(&sample_baseline(), "");
        let path = Path::new("baselines/x.toml");
        let big = format!(
            "{text}\n# {}\n",
            "x".repeat(crate::limits::MAX_BASELINE_BYTES as usize)
        );
        let e = verify_readable(&big, path).unwrap_err().to_string();
        assert!(e.contains("over the 16 MiB limit"), "{e}");
    }

    /// A two-run baseline for tests (a tag holds quotes).
    pub(crate) fn sample_baseline() -> Baseline {
        let stat = MetricStats::from_series((0..100).map(|i| 90.0 + (i % 7) as f64)).unwrap();
        let m = metric_entry(
            "%".into(),
            Direction::HigherIsBetter,
            Statistic::Mean,
            true,
            &stat,
            vec![
                RunStat::from_stats(&stat, Statistic::Mean),
                RunStat::from_stats(&stat, Statistic::Mean),
            ],
        );
        let mut metrics = BTreeMap::new();
        metrics.insert("sm_active_pct".to_string(), m.clone());
        metrics.insert("wall_time_s".to_string(), m);
        let mut features = BTreeMap::new();
        features.insert("gpu_busy_pct.idle_frac".to_string(), 0.012345);
        Baseline {
            schema_version: SCHEMA_VERSION,
            name: "demo".into(),
            gate_version: crate::GATE_VERSION.into(),
            created: "2026-11-29T10:00:00Z".into(),
            commit: Some("abc123".into()),
            tags: BTreeMap::from([("model".to_string(), "resnet \"50\"".to_string())]),
            environment: Environment {
                gpu_model: "NVIDIA H200".into(),
                gpu_count: 1,
                driver_version: Some("580.159.04".into()),
                driver_major: Some("580".into()),
                ..Default::default()
            },
            capture: CaptureSettings {
                interval_ms: 100,
                warmup_ms: 2000,
                steady_window: "after warm-up".into(),
                runs: 2,
                command: vec!["python".into(), "train.py".into()],
                sources: vec![SourceRun {
                    trace: "a.jsonl".into(),
                    steady_start_ms: 2000.0,
                    steady_end_ms: 12000.0,
                    steady_samples: 100,
                    total_samples: 120,
                    wall_time_s: Some(10.5),
                    startup_s: Some(2.0),
                    teardown_s: None,
                }],
                ..Default::default()
            },
            features,
            metrics,
            gpus: BTreeMap::new(),
            spans: BTreeMap::new(),
        }
    }

    #[test]
    fn toml_round_trips_and_reads_well() {
        let b = sample_baseline();
        let text = to_toml(&b, &refresh_hint("demo", &b.capture.command));
        assert!(text.starts_with("# gate baseline 'demo'"), "{text}");
        assert!(text.contains("gate capture --baseline demo --replace -- python train.py"));
        assert!(text.contains("\n[metrics.sm_active_pct]\n"), "{text}");
        assert!(
            text.contains("\"gpu_busy_pct.idle_frac\" = 0.012345"),
            "{text}"
        );
        assert!(text.contains("runs = [\n  { value = "), "{text}");
        let back = parse(&text, "demo.toml").unwrap();
        assert_eq!(back.name, "demo");
        assert_eq!(back.tags["model"], "resnet \"50\"");
        let m = &back.metrics["sm_active_pct"];
        assert_eq!(m.runs.len(), 2);
        assert_eq!(m.mean, b.metrics["sm_active_pct"].mean, "stored exactly");
        // Same input, same text: stable order.
        assert_eq!(
            text,
            to_toml(&back, &refresh_hint("demo", &b.capture.command))
        );
    }

    #[test]
    fn floats_are_stored_round_trip_exact() {
        for v in [
            1201.992,
            1202.307,
            345129.28571428574,
            0.000123456,
            97.12345,
            -0.00001,
            1234567.0,
            1e-300,
            f64::MAX,
        ] {
            let text = format_float(v);
            assert!(text.contains('.') || text.contains('e'), "{text}");
            assert_eq!(text.parse::<f64>().unwrap(), v, "{text}");
        }
        assert_eq!(format_float(3.0), "3.0");
        assert_eq!(format_float(-0.0), "0.0");
    }

    #[test]
    fn unknown_field_and_wrong_version_are_located() {
        let b = sample_baseline();
        let text = to_toml(&b, "x");
        let bad = text.replace(
            "[metrics.sm_active_pct]\n",
            "[metrics.sm_active_pct]\nbogus = 1\n",
        );
        let err = parse(&bad, "b.toml").unwrap_err().to_string();
        let line = bad
            .lines()
            .position(|l| l == "bogus = 1")
            .map(|i| i + 1)
            .unwrap();
        assert!(err.contains(&format!("line {line}, column 1")), "{err}");
        assert!(err.contains("bogus"), "{err}");
        let v2 = text.replace("schema_version = 1", "schema_version = 2");
        let err = parse(&v2, "b.toml").unwrap_err().to_string();
        assert!(err.contains("schema_version 2 is not supported"), "{err}");
        assert!(err.contains("line 6, column 18"), "{err}");
        let cut = &text[..text.len() / 2];
        let err = parse(cut, "b.toml").unwrap_err().to_string();
        assert!(err.starts_with("b.toml: line "), "{err}");
    }

    #[test]
    fn temps_left_by_a_killed_capture_are_removed_and_no_others() {
        // Issue 9: a SIGKILL during capture left `.gate-baseline-*.tmp` behind.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.toml");
        let stale = dir.path().join(".a.toml.Ab12Cd.gate-tmp");
        let other = dir.path().join(".a.toml.b.toml.Xy34Zw.gate-tmp");
        let fresh_legacy = dir.path().join(".gate-baseline-QQQQQQ.tmp");
        for p in [&stale, &other, &fresh_legacy] {
            std::fs::write(p, "partial").unwrap();
        }
        store(&path, "a = 1\n", false).unwrap();
        assert!(!stale.exists(), "this baseline's leftover is removed");
        assert!(other.exists(), "baseline 'a.toml.b' is not ours");
        assert!(fresh_legacy.exists(), "a recent legacy temp may be in use");
    }

    #[test]
    fn a_planted_lock_link_or_special_baseline_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.toml");
        let target = dir.path().join("created-through-link");
        std::os::unix::fs::symlink(&target, dir.path().join("l.toml.lock")).unwrap();
        let err = store(&path, "a = 1\n", false).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        assert!(!target.exists(), "the lock link was followed");
        std::fs::remove_file(dir.path().join("l.toml.lock")).unwrap();
        std::fs::create_dir(&path).unwrap();
        let err = store(&path, "a = 1\n", true).unwrap_err().to_string();
        assert!(err.contains("directory"), "{err}");
    }

    #[test]
    fn store_refuses_overwrite_and_replaces_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.toml");
        assert_eq!(
            store(&path, "a = 1\n", false).unwrap(),
            StoreOutcome::Created
        );
        match store(&path, "a = 2\n", false).unwrap() {
            StoreOutcome::Refused { diff } => {
                assert!(diff.contains("-a = 1") && diff.contains("+a = 2"), "{diff}")
            }
            o => panic!("{o:?}"),
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a = 1\n");
        assert!(matches!(
            store(&path, "a = 2\n", true).unwrap(),
            StoreOutcome::Replaced { .. }
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a = 2\n");
        // No temp files left behind.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names
                .iter()
                .all(|n| !n.ends_with(".tmp") && !n.ends_with(".gate-tmp")),
            "{names:?}"
        );
        assert!(names.iter().all(|n| !n.ends_with(".lock")), "{names:?}");
    }

    #[test]
    fn concurrent_stores_never_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let p = path.clone();
                std::thread::spawn(move || {
                    let body = format!("writer = {i}\n{}", "x = 1\n".repeat(2000));
                    store(&p, &body, true).unwrap()
                })
            })
            .collect();
        let created = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|o| *o == StoreOutcome::Created)
            .count();
        assert_eq!(created, 1, "exactly one writer saw no file");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("writer = "));
        assert_eq!(text.lines().count(), 2001, "a whole file from one writer");
    }
}
