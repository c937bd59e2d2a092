//! History: every `capture` and `check` kept in a real database, so a
//! baseline (a snapshot) gains a past: trend charts per metric, the list of
//! regressions over time, and the slow drift no single check can see.
//!
//! Owns
//! - the data model of one recorded run (`RunRecord`, `MetricRow`,
//!   `DriftRow`) and of a query (`Query`);
//! - ONE small interface, `HistoryStore` (append a run atomically, read
//!   runs back), implemented on two real engines: SQLite (`sqlite.rs`,
//!   embedded, bundled with the binary, the default) and PostgreSQL
//!   (`postgres.rs`, for teams whose CI runners are ephemeral);
//! - the versioned schema and its migrations (`schema.rs`), shared by both;
//! - the closed sets a row holds (verdicts, direction, statistic) as types
//!   stored as the same words (`stored.rs`);
//! - where a database is (`Location::parse`: a path, `sqlite:PATH` or
//!   `postgres://...`), with passwords kept out of every message;
//! - building a record from a `CheckReport` or a new baseline (`record.rs`);
//! - drift detection over the recent runs (`drift.rs`, CUSUM, cited there);
//! - the terminal/JSON listing (`listing.rs`) and the trend page (`html.rs`).
//!
//! What it does not own: when to write (the `check` and `capture` commands
//! call one hook each, `history::pipeline`), and the verdict (`gate/`). A
//! database that cannot be reached is a warning there and never changes a
//! verdict, unless the user asked for `--history-required`.

pub mod drift;
pub mod html;
pub mod listing;
pub mod pipeline;
pub mod postgres;
pub mod record;
pub mod redact;
pub mod schema;
pub mod sql;
pub mod sqlite;
pub mod stored;
pub mod trend;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
pub use stored::{
    RowVerdict, Stored, StoredDirection, StoredRunVerdict, StoredStatistic, StoredVerdict,
};

/// Where history goes when `[history]` is present in gate.toml without a
/// `url`, and where `gate history` looks when nothing is configured.
pub(crate) const DEFAULT_SQLITE_PATH: &str = ".gate/history.sqlite";

/// What went wrong talking to a history database. The message never holds
/// a password (see `Location::display`).
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The location itself is malformed (bad URL, unknown scheme): exit 2.
    #[error("{0}")]
    BadLocation(String),
    /// The database could not be opened, read or written.
    #[error("history database {location}: {message}")]
    Unavailable { location: String, message: String },
}

impl HistoryError {
    pub(crate) fn unavailable(location: &Location, message: impl std::fmt::Display) -> Self {
        HistoryError::Unavailable {
            location: location.display(),
            message: redact_text(&message.to_string(), location),
        }
    }
}

/// A history database: an SQLite file or a PostgreSQL server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// The full connection URL (may hold a password: never print it raw).
    Postgres(String),
}

impl Location {
    /// `PATH`, `sqlite:PATH`, `sqlite://PATH` (SQLite), `postgres://...` /
    /// `postgresql://...` or a libpq keyword string such as `host=db
    /// user=gate password=... dbname=gate` (PostgreSQL). A bare path that
    /// holds `=`, white space or a control character is refused rather than
    /// taken as a file name: it is most likely a mistyped connection string,
    /// which may carry a password (write `sqlite:PATH` for such a file). No
    /// message quotes the value unredacted.
    pub fn parse(url: &str) -> Result<Location, HistoryError> {
        let url = url.trim();
        if url.is_empty() {
            return Err(HistoryError::BadLocation(
                "the history location is empty; give a file (.gate/history.sqlite) or a postgres:// URL".into(),
            ));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Location::postgres(url);
        }
        if let Some(rest) = url.strip_prefix("sqlite:") {
            // `sqlite:///abs` and `sqlite://rel` as well as `sqlite:rel`.
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err(HistoryError::BadLocation(format!(
                    "history location '{}' names no file; write sqlite:.gate/history.sqlite",
                    crate::escape::terminal(url)
                )));
            }
            return Ok(Location::Sqlite(PathBuf::from(path)));
        }
        if let Some((scheme, _)) = url.split_once("://") {
            return Err(HistoryError::BadLocation(format!(
                "history location scheme '{}' is not supported; use a file path, sqlite:PATH or postgres://USER@HOST/DB",
                crate::escape::terminal(scheme)
            )));
        }
        if is_keyword_string(url) {
            return Location::postgres(url);
        }
        if url.contains('=')
            || url.chars().any(|c| c.is_whitespace() || c.is_control())
            || redact::looks_like_credentials(url)
        {
            // Not echoed: a mistyped connection string may hold a password.
            return Err(HistoryError::BadLocation(
                "the history location (not shown: it may hold a password) is neither a file path, sqlite:PATH, a postgres:// URL nor a libpq keyword string (host=HOST user=USER dbname=DB ...); write sqlite:PATH for a file whose name holds '=' or spaces".into(),
            ));
        }
        Ok(Location::Sqlite(PathBuf::from(url)))
    }

    /// A PostgreSQL location, checked by the driver's own parser now, so a
    /// malformed one is exit 2 before anything runs (not after the verdict).
    fn postgres(conn: &str) -> Result<Location, HistoryError> {
        let location = Location::Postgres(conn.to_string());
        if let Some(why) = redact::parse_error(conn) {
            return Err(location.malformed(&why));
        }
        Ok(location)
    }

    /// The exit-2 error of a PostgreSQL location the driver refuses; `why`
    /// is already free of secrets (`redact::parse_error`).
    pub fn malformed(&self, why: &str) -> HistoryError {
        HistoryError::BadLocation(format!(
            "history location '{}' is not a valid PostgreSQL URL or keyword string: {}; write postgres://USER:PASSWORD@HOST:PORT/DB or host=HOST user=USER dbname=DB",
            crate::escape::terminal(&self.display()),
            crate::escape::terminal(why)
        ))
    }

    /// For messages: the SQLite path, or the PostgreSQL connection string
    /// with its password replaced by `***` (`redact`).
    pub fn display(&self) -> String {
        match self {
            // A file named like user info (`sqlite:u:pw@h`) shows none.
            Location::Sqlite(p) => format!(
                "sqlite:{}",
                redact::redact_malformed(&p.display().to_string())
            ),
            Location::Postgres(url) => redact(url),
        }
    }

    pub fn engine(&self) -> &'static str {
        match self {
            Location::Sqlite(_) => "sqlite",
            Location::Postgres(_) => "postgresql",
        }
    }

    /// The files an SQLite store consists of (the database and the journal
    /// files SQLite keeps next to it): inputs no output may replace.
    pub fn files(&self) -> Vec<PathBuf> {
        match self {
            Location::Sqlite(p) => {
                let mut files = vec![p.clone()];
                for suffix in ["-wal", "-shm", "-journal"] {
                    let mut name = p.as_os_str().to_owned();
                    name.push(suffix);
                    files.push(PathBuf::from(name));
                }
                files
            }
            Location::Postgres(_) => Vec::new(),
        }
    }
}

/// The libpq keywords (PostgreSQL docs, 34.1.2 "Parameter Key Words") that
/// may start a keyword connection string.
const LIBPQ_KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "connect_timeout",
    "options",
    "application_name",
    "sslmode",
    "target_session_attrs",
    "keepalives",
    "keepalives_idle",
    "service",
    "channel_binding",
];

/// `host=db user=gate ...`: a libpq keyword string (the first word is a
/// known keyword followed by `=`).
fn is_keyword_string(s: &str) -> bool {
    let first = s.split_whitespace().next().unwrap_or("");
    let key = first.split('=').next().unwrap_or("").trim();
    (first.contains('=') || s[first.len()..].trim_start().starts_with('='))
        && LIBPQ_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(key))
}

pub(crate) use redact::redact;

/// A driver's error text about `location`, fit to print (`redact::driver_text`).
fn redact_text(text: &str, location: &Location) -> String {
    match location {
        Location::Postgres(conn) => redact::driver_text(text, conn),
        Location::Sqlite(_) => text.to_string(),
    }
}

/// The client-side deadline of one history step whose server-side bound
/// is `timeout`: a little later, so the store can report its own time-out
/// first (PostgreSQL's statement and lock time-outs, SQLite's busy
/// time-out, both set to `timeout`).
pub(crate) fn step_deadline(
    _location: &Location,
    timeout: std::time::Duration,
) -> std::time::Duration {
    timeout + crate::limits::HISTORY_CLIENT_GRACE
}

/// Run `work` (which talks to the store at `location`) with a deadline:
/// a server that accepts TCP and then never answers must not hold the
/// command for ever (the driver bounds only the TCP connect). On time-out
/// the worker thread is abandoned: it holds nothing but its socket, and the
/// process ends soon after.
pub fn within<T: Send + 'static>(
    location: &Location,
    deadline: std::time::Duration,
    work: impl FnOnce() -> Result<T, HistoryError> + Send + 'static,
) -> Result<T, HistoryError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("gate-history".into())
        .spawn(move || {
            let _ = tx.send(work());
        });
    if let Err(e) = spawned {
        return Err(HistoryError::unavailable(
            location,
            format!("cannot start its thread: {e}"),
        ));
    }
    // A signal ends the wait (issue 41.9): caught while waiting, so the
    // command ends with exit 3 after its verdict, never ignored for the
    // whole time-out nor killed half-way through writing.
    let _guard = crate::target::InterruptGuard::install();
    let signals = crate::target::stop_signals();
    let started = std::time::Instant::now();
    let waited = loop {
        let slice = deadline
            .saturating_sub(started.elapsed())
            .min(std::time::Duration::from_millis(100));
        match rx.recv_timeout(slice) {
            Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                if crate::target::stop_signals() > signals =>
            {
                return Err(HistoryError::unavailable(
                    location,
                    format!("{INTERRUPTED}: gave up waiting for the store"),
                ));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if started.elapsed() < deadline => {
                continue
            }
            other => break other,
        }
    };
    match waited {
        Ok(result) => result,
        Err(_) => Err(HistoryError::unavailable(
            location,
            format!(
                "no answer within {} s (--history-timeout); the server accepts connections but does not respond, or holds a lock",
                deadline.as_secs_f64()
            ),
        )),
    }
}

/// How a history step that a signal ended begins its message.
pub(crate) const INTERRUPTED: &str = "interrupted by a signal";

/// Which command recorded a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// `gate capture`: a baseline was (re)written; trend pages mark it.
    Capture,
    /// `gate check`: a run judged against a baseline.
    Check,
}

impl RunKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Capture => "capture",
            RunKind::Check => "check",
        }
    }

    pub fn parse(s: &str) -> Option<RunKind> {
        match s {
            "capture" => Some(RunKind::Capture),
            "check" => Some(RunKind::Check),
            _ => None,
        }
    }
}

/// One run, as appended to the history (and read back, with `id` set).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Database id, increasing in append order (None before appending).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// When gate recorded it, RFC 3339 UTC.
    pub recorded_at: String,
    pub kind: RunKind,
    pub baseline: String,
    /// `created` of the baseline judged against (for a capture: of the new
    /// baseline). A refresh changes it, which resets drift detection.
    pub baseline_created: String,
    /// Independent runs behind the baseline (its `capture.runs`).
    pub baseline_runs: usize,
    pub commit: Option<String>,
    pub branch: Option<String>,
    pub tags: BTreeMap<String, String>,
    /// GPU model of the run (also inside `environment`; a column for filters).
    pub gpu_model: String,
    /// The environment fingerprint (`baseline::Environment`) as JSON.
    pub environment: serde_json::Value,
    /// Run verdict (`pass`, `regression`, ...; `captured` for a capture).
    pub verdict: StoredRunVerdict,
    pub exit_code: i32,
    /// Gated metrics that regressed in this run.
    pub regressions: usize,
    /// Rule name of the top diagnosis finding, e.g. `tensor_cores_unused`.
    pub top_rule: Option<String>,
    /// Its headline, e.g. "Matrix math is not on the tensor cores".
    pub top_cause: Option<String>,
    pub gate_version: String,
    /// The trace file(s) behind the run.
    pub source: String,
    pub metrics: Vec<MetricRow>,
    /// Drift findings `check` made with this run (schema 2).
    #[serde(default)]
    pub drift: Vec<DriftRow>,
}

/// One metric of one run: the statistic the gate judged and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricRow {
    /// `MetricResult::label()`: `sm_active_pct`, `sm_active_pct[gpu1]`,
    /// `node0/wall_time_s`.
    pub metric: String,
    pub unit: String,
    /// `higher_is_better` | `lower_is_better` | `neutral`.
    pub direction: StoredDirection,
    /// Which statistic `value` is (`mean`, `p95`, ...).
    pub statistic: StoredStatistic,
    pub gated: bool,
    pub baseline_value: Option<f64>,
    /// Standard deviation of the statistic between the baseline's runs
    /// (None with one baseline run; schema 2).
    pub baseline_sd: Option<f64>,
    pub value: Option<f64>,
    pub change_pct: Option<f64>,
    /// Effective tolerance in the metric's unit (schema 2).
    pub tolerance: Option<f64>,
    /// Noise band in the metric's unit (schema 2).
    pub noise: Option<f64>,
    /// `gate::Verdict::as_str()`; `captured` for a capture.
    pub verdict: StoredVerdict,
}

/// A drift finding as stored with the run that raised it (schema 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftRow {
    pub metric: String,
    /// Recent level minus baseline, in percent of the baseline.
    pub shift_pct: Option<f64>,
    /// Recent level minus baseline, in the metric's unit.
    pub shift: f64,
    /// CUSUM statistic at this run, in noise units (alarm above `h`).
    pub cusum: f64,
    /// Runs in the drifting segment.
    pub runs: usize,
    /// Commit of the first run of the segment, when known.
    pub since_commit: Option<String>,
    /// Whether gate.toml made it fail the run.
    pub failed: bool,
    /// The sentence reported to the user.
    pub message: String,
}

/// Which runs to read back. Every filter is optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    pub baseline: Option<String>,
    pub branch: Option<String>,
    pub kind: Option<RunKind>,
    /// Only runs judged against this version (`baseline_created`).
    pub baseline_created: Option<String>,
    /// Only runs in which at least one metric regressed.
    pub regressions_only: bool,
    /// Which metric rows to load with each run.
    pub metrics: MetricFilter,
    /// Newest first, at most this many runs (None: all).
    pub limit: Option<usize>,
}

/// Which metric rows `runs()` loads with each run.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum MetricFilter {
    /// None: the run list alone (cheapest).
    #[default]
    None,
    /// Gated metrics only (what trends and drift look at).
    Gated,
    /// Metrics that regressed (what a run listing names).
    Regressed,
    /// These metric labels only.
    Only(Vec<String>),
    /// Every stored metric.
    All,
}

/// The one interface both engines implement. Small on purpose: everything
/// else (drift, listings, the trend page) is computed from what `runs`
/// returns, so it behaves the same on either engine.
pub trait HistoryStore: Send {
    /// Append one run and its metric and drift rows in ONE transaction:
    /// either all of it is stored or none. Safe with concurrent writers.
    /// Returns the new run's id.
    fn append(&mut self, run: &RunRecord) -> Result<i64, HistoryError>;
    /// Runs matching `query`, newest first (highest id first).
    fn runs(&mut self, query: &Query) -> Result<Vec<RunRecord>, HistoryError>;
    /// The schema version the database is at (after migrating).
    fn schema_version(&mut self) -> Result<u32, HistoryError>;
    /// Where it is, for messages (no password).
    fn location(&self) -> String;
}

/// Open (and create, and migrate to the current schema) the database at
/// `location`. `create`: make a missing SQLite file (and its folder); a
/// reader such as `gate history` passes false and gets an error instead.
pub fn open(location: &Location, create: bool) -> Result<Box<dyn HistoryStore>, HistoryError> {
    open_bounded(location, create, crate::limits::HISTORY_TIMEOUT)
}

/// `open` with every PostgreSQL statement and lock wait bounded by
/// `timeout` on the server (the caller bounds the whole step with `within`).
pub(crate) fn open_bounded(
    location: &Location,
    create: bool,
    timeout: std::time::Duration,
) -> Result<Box<dyn HistoryStore>, HistoryError> {
    match location {
        Location::Sqlite(path) => Ok(Box::new(sqlite::SqliteStore::open(path, create, timeout)?)),
        Location::Postgres(url) => Ok(Box::new(postgres::PostgresStore::connect(url, timeout)?)),
    }
}

/// Unix time now as RFC 3339 UTC (the only clock read of this module,
/// used when a run is recorded).
pub(crate) fn now_rfc3339() -> String {
    crate::format::now_rfc3339()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_to_the_engine_the_user_meant() {
        assert_eq!(
            Location::parse(".gate/history.sqlite").unwrap(),
            Location::Sqlite(".gate/history.sqlite".into())
        );
        assert_eq!(
            Location::parse("sqlite:h.db").unwrap(),
            Location::Sqlite("h.db".into())
        );
        assert_eq!(
            Location::parse("sqlite:///tmp/h.db").unwrap(),
            Location::Sqlite("/tmp/h.db".into())
        );
        assert!(matches!(
            Location::parse("postgresql://u@127.0.0.1/gate").unwrap(),
            Location::Postgres(_)
        ));
        let err = Location::parse("mysql://x/y").unwrap_err().to_string();
        assert!(
            err.contains("'mysql'") && err.contains("postgres://"),
            "{err}"
        );
        assert!(Location::parse("  ").is_err());
        let err = Location::parse("postgres://u:pw9@h:notaport/db")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a valid PostgreSQL URL"), "{err}");
        assert!(!err.contains("pw9"), "{err}");
        assert!(Location::parse("host=h port=x").is_err());
        assert!(Location::parse("sqlite:").is_err());
    }

    #[test]
    fn passwords_never_reach_a_message() {
        let url = "postgres://gate:s3cr3t@db.internal:5432/hist?sslmode=disable&password=other";
        let shown = Location::parse(url).unwrap().display();
        assert_eq!(
            shown,
            "postgres://gate:***@db.internal:5432/hist?sslmode=disable&password=***"
        );
        let loc = Location::parse(url).unwrap();
        let e =
            HistoryError::unavailable(&loc, format!("cannot connect to {url}: s3cr3t rejected"));
        let text = e.to_string();
        assert!(!text.contains("s3cr3t"), "{text}");
        assert!(text.contains("gate:***@db.internal"), "{text}");
        assert_eq!(
            redact("postgres://gate@localhost/h"),
            "postgres://gate@localhost/h"
        );
    }

    #[test]
    fn libpq_keyword_strings_are_postgres_and_their_passwords_are_hidden() {
        let conn = "host=127.0.0.1 user=gate password=LEAK7 dbname=gate";
        let loc = Location::parse(conn).unwrap();
        assert_eq!(loc, Location::Postgres(conn.into()));
        assert_eq!(
            loc.display(),
            "host=127.0.0.1 user=gate password=*** dbname=gate"
        );
        for (text, want) in [
            ("password = 'it\\'s a b' host=x", "password=*** host=x"),
            ("dbname=a password=", "dbname=a password=***"),
            ("user=password password=p", "user=password password=***"),
        ] {
            assert_eq!(redact(text), want, "{text}");
        }
        let e = HistoryError::unavailable(&loc, "auth failed for LEAK7");
        assert!(!e.to_string().contains("LEAK7"), "{e}");
        // Not a path, not a URL, not a keyword string: refused, and the
        // message shows no secret.
        for bad in [
            "hots=127.0.0.1 user=gate password=LEAK7",
            "user:LEAK7 somewhere",
            "a\tb",
        ] {
            let err = Location::parse(bad).unwrap_err().to_string();
            assert!(err.contains("neither a file path"), "{err}");
            assert!(!err.contains("LEAK7"), "{err}");
        }
        // Explicit sqlite: takes any file name.
        assert_eq!(
            Location::parse("sqlite:my history=1.db").unwrap(),
            Location::Sqlite("my history=1.db".into())
        );
    }
}
