//! SQLite history store: one file, embedded (rusqlite with SQLite bundled
//! into the binary, so no system library is needed), the default engine.
//!
//! Concurrency and atomicity, for parallel CI jobs on one runner writing one
//! file:
//! - WAL journal: readers never block the writer and vice versa;
//! - every append is ONE `BEGIN IMMEDIATE` transaction (run row, metric
//!   rows, drift rows): it takes the write lock up front, so two writers
//!   queue instead of failing halfway with SQLITE_BUSY on lock upgrade;
//! - `busy_timeout` of `--history-timeout` (10 s by default): a writer
//!   waits that long for the lock rather than giving up (an append holds
//!   it for milliseconds), and no longer (a store locked by a stuck
//!   process must not hold the check);
//! - the location is a path, never an SQLite URI: `file::memory:` or
//!   `:memory:` is a file of that name in the current folder, never an
//!   in-memory database that would "record" runs and lose them;
//! - `synchronous = FULL`: a committed run survives a power cut (the cost
//!   per append is measured in BENCHMARKS.md).
//!
//! A file on a network file system (NFS, SMB) does not give WAL its shared
//! memory: keep the file on local disk and move it between pipelines as a
//! CI cache or artifact (docs/history.md), or use PostgreSQL.

use super::schema::{self, MIGRATIONS};
use super::sql::{self, Param};
use super::{
    DriftRow, HistoryError, HistoryStore, Location, MetricRow, Query, RunKind, RunRecord, Stored,
};
use rusqlite::{params_from_iter, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use std::path::Path;
use std::time::Duration;

pub(crate) struct SqliteStore {
    conn: Connection,
    location: Location,
}

impl SqliteStore {
    /// Open the file at `path` (creating it and its folder when `create`),
    /// set it up for concurrent writers and migrate it to the current schema.
    pub fn open(path: &Path, create: bool, timeout: Duration) -> Result<SqliteStore, HistoryError> {
        let location = Location::Sqlite(path.to_path_buf());
        let path = &literal_path(path);
        let fail = |e: &dyn std::fmt::Display| HistoryError::unavailable(&location, e);
        if !create && !path.exists() {
            return Err(HistoryError::unavailable(
                &location,
                "no such file; runs are recorded by 'gate check --history FILE' (or [history] in gate.toml)",
            ));
        }
        if create {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| fail(&format!("cannot create folder '{}': {e}", dir.display())))?;
            }
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn = Connection::open_with_flags(path, flags).map_err(|e| fail(&e))?;
        conn.busy_timeout(timeout).map_err(|e| fail(&e))?;
        // journal_mode needs the lock briefly. The mode persists in the file.
        let mode: String = retry_busy(timeout, || {
            conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        })
        .map_err(|e| fail(&format!("not an SQLite database, or unreadable: {e}")))?;
        if !mode.eq_ignore_ascii_case("wal") {
            // E.g. a file system without shared memory: still correct (the
            // rollback journal is atomic too), only readers wait on writers.
            crate::gate_eprintln!(
                "gate: warning: {}: journal mode is '{mode}', not WAL; readers will wait for writers",
                location.display()
            );
        }
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .map_err(|e| fail(&e))?;
        let mut store = SqliteStore { conn, location };
        store.migrate()?;
        Ok(store)
    }

    fn fail(&self, e: impl std::fmt::Display) -> HistoryError {
        HistoryError::unavailable(&self.location, e)
    }

    /// Apply the migrations above the file's version, one transaction each.
    fn migrate(&mut self) -> Result<(), HistoryError> {
        loop {
            let loc = self.location.clone();
            let fail = |e: &dyn std::fmt::Display| HistoryError::unavailable(&loc, e);
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| fail(&e))?;
            let version = current_version(&tx).map_err(|e| fail(&e))?;
            if version > schema::CURRENT_VERSION {
                return Err(fail(&schema::too_new(version)));
            }
            if version == schema::CURRENT_VERSION {
                tx.commit().map_err(|e| fail(&e))?;
                return Ok(());
            }
            let m = &MIGRATIONS[version as usize];
            tx.execute_batch(m.sqlite).map_err(|e| {
                fail(&format!(
                    "migration to schema {} ({}) failed: {e}",
                    m.version, m.what
                ))
            })?;
            tx.execute(
                "UPDATE gate_schema SET version = ?1",
                rusqlite::params![m.version],
            )
            .map_err(|e| fail(&e))?;
            tx.commit().map_err(|e| fail(&e))?;
        }
    }
}

/// `op`, again while SQLite says the database is busy or locked, for up to
/// `timeout`. `busy_timeout` waits for a lock held by another
/// writer, but where waiting could deadlock (two connections of a fresh
/// file switching it to WAL at once) SQLite answers "database is locked"
/// at once, without waiting: 1 of 12 connections opening one fresh file
/// together failed so (tests/history.rs).
fn retry_busy<T>(
    timeout: Duration,
    mut op: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let start = std::time::Instant::now();
    let mut pause_ms = 1u64;
    loop {
        match op() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && start.elapsed() < timeout =>
            {
                std::thread::sleep(Duration::from_millis(pause_ms));
                pause_ms = (pause_ms * 2).min(50);
            }
            other => return other,
        }
    }
}

/// `path` as SQLite must take it to read it as a file name: a relative
/// path that SQLite would read as something else (`:memory:`, an empty
/// name, or a `file:` URI, which this SQLite build interprets even without
/// `SQLITE_OPEN_URI`) gets a leading `./`.
fn literal_path(path: &Path) -> std::path::PathBuf {
    let text = path.as_os_str().as_encoded_bytes();
    let special = text.is_empty() || text.starts_with(b":") || text.starts_with(b"file:");
    if special && path.is_relative() {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    }
}

/// The version recorded in `gate_schema`, creating that table (at 0) in a
/// fresh file. Runs inside the caller's write transaction.
fn current_version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.execute_batch(schema::SCHEMA_TABLE_SQL)?;
    let v: Option<i64> = conn
        .query_row("SELECT version FROM gate_schema", [], |r| r.get(0))
        .optional()?;
    match v {
        Some(v) => Ok(v.max(0) as u32),
        None => {
            conn.execute("INSERT INTO gate_schema (version) VALUES (0)", [])?;
            Ok(0)
        }
    }
}

fn bind(p: &Param) -> rusqlite::types::Value {
    match p {
        Param::Text(s) => rusqlite::types::Value::Text(s.clone()),
    }
}

impl HistoryStore for SqliteStore {
    fn append(&mut self, run: &RunRecord) -> Result<i64, HistoryError> {
        let loc = self.location.clone();
        let fail = |e: rusqlite::Error| HistoryError::unavailable(&loc, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail)?;
        let tags = serde_json::to_string(&run.tags).unwrap_or_else(|_| "{}".into());
        let env = run.environment.to_string();
        tx.execute(
            &sql::insert("runs", sql::INSERT_RUN_COLUMNS, sql::sqlite_ph),
            rusqlite::params![
                run.recorded_at,
                run.kind.as_str(),
                run.baseline,
                run.baseline_created,
                run.baseline_runs as i64,
                run.commit,
                run.branch,
                tags,
                run.gpu_model,
                env,
                run.verdict.as_str(),
                run.exit_code,
                run.regressions as i64,
                run.top_rule,
                run.top_cause,
                run.gate_version,
                run.source,
            ],
        )
        .map_err(fail)?;
        let id = tx.last_insert_rowid();
        {
            let mut stmt = tx
                .prepare_cached(&sql::insert(
                    "run_metrics",
                    sql::INSERT_METRIC_COLUMNS,
                    sql::sqlite_ph,
                ))
                .map_err(fail)?;
            for m in &run.metrics {
                stmt.execute(rusqlite::params![
                    id,
                    m.metric,
                    m.unit,
                    m.direction.as_str(),
                    m.statistic.as_str(),
                    m.gated,
                    m.baseline_value,
                    m.baseline_sd,
                    m.value,
                    m.change_pct,
                    m.tolerance,
                    m.noise,
                    m.verdict.as_str(),
                ])
                .map_err(fail)?;
            }
            let mut stmt = tx
                .prepare_cached(&sql::insert(
                    "drift_findings",
                    sql::INSERT_DRIFT_COLUMNS,
                    sql::sqlite_ph,
                ))
                .map_err(fail)?;
            for d in &run.drift {
                stmt.execute(rusqlite::params![
                    id,
                    d.metric,
                    d.shift,
                    d.shift_pct,
                    d.cusum,
                    d.runs as i64,
                    d.since_commit,
                    d.failed,
                    d.message,
                ])
                .map_err(fail)?;
            }
        }
        tx.commit().map_err(fail)?;
        Ok(id)
    }

    fn runs(&mut self, query: &Query) -> Result<Vec<RunRecord>, HistoryError> {
        let s = sql::select(query, sql::sqlite_ph);
        let loc = self.location.clone();
        let fail = |e: &dyn std::fmt::Display| HistoryError::unavailable(&loc, e);
        // One read transaction: the three reads see the same snapshot even
        // while other jobs append.
        let tx = self.conn.transaction().map_err(|e| fail(&e))?;
        let mut runs = Vec::new();
        {
            let mut stmt = tx.prepare(&s.runs).map_err(|e| fail(&e))?;
            let mut rows = stmt
                .query(params_from_iter(s.runs_params.iter().map(bind)))
                .map_err(|e| fail(&e))?;
            while let Some(r) = rows.next().map_err(|e| fail(&e))? {
                runs.push(read_run(r).map_err(|e| fail(&e))?);
            }
        }
        let mut metrics = Vec::new();
        if let Some(msql) = &s.metrics {
            let mut stmt = tx.prepare(msql).map_err(|e| fail(&e))?;
            let mut rows = stmt
                .query(params_from_iter(s.metrics_params.iter().map(bind)))
                .map_err(|e| fail(&e))?;
            while let Some(r) = rows.next().map_err(|e| fail(&e))? {
                metrics.push(read_metric(r).map_err(|e| fail(&e))?);
            }
        }
        let mut drift = Vec::new();
        {
            let mut stmt = tx.prepare(&s.drift).map_err(|e| fail(&e))?;
            let mut rows = stmt
                .query(params_from_iter(s.runs_params.iter().map(bind)))
                .map_err(|e| fail(&e))?;
            while let Some(r) = rows.next().map_err(|e| fail(&e))? {
                drift.push(read_drift(r).map_err(|e| fail(&e))?);
            }
        }
        tx.commit().map_err(|e| fail(&e))?;
        sql::attach(&mut runs, metrics, drift);
        Ok(runs)
    }

    fn schema_version(&mut self) -> Result<u32, HistoryError> {
        let v: i64 = self
            .conn
            .query_row("SELECT version FROM gate_schema", [], |r| r.get(0))
            .map_err(|e| self.fail(e))?;
        Ok(v.max(0) as u32)
    }

    fn location(&self) -> String {
        self.location.display()
    }
}

/// A read error with the column at fault.
#[derive(Debug)]
struct RowError(String);

impl std::fmt::Display for RowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<rusqlite::Error> for RowError {
    fn from(e: rusqlite::Error) -> Self {
        RowError(e.to_string())
    }
}

fn read_run(r: &rusqlite::Row) -> Result<RunRecord, RowError> {
    let id: i64 = r.get(0)?;
    let kind: String = r.get(2)?;
    let tags: String = r.get(8)?;
    let env: String = r.get(10)?;
    Ok(RunRecord {
        id: Some(id),
        recorded_at: r.get(1)?,
        kind: RunKind::parse(&kind)
            .ok_or_else(|| RowError(format!("run {id}: unknown kind '{kind}'")))?,
        baseline: r.get(3)?,
        baseline_created: r.get(4)?,
        baseline_runs: r.get::<_, i64>(5)?.max(0) as usize,
        commit: r.get(6)?,
        branch: r.get(7)?,
        tags: sql::json_column(&tags, "tags", id).map_err(RowError)?,
        gpu_model: r.get(9)?,
        environment: sql::json_column(&env, "environment", id).map_err(RowError)?,
        verdict: Stored::parse(&r.get::<_, String>(11)?),
        exit_code: r.get(12)?,
        regressions: r.get::<_, i64>(13)?.max(0) as usize,
        top_rule: r.get(14)?,
        top_cause: r.get(15)?,
        gate_version: r.get(16)?,
        source: r.get(17)?,
        metrics: Vec::new(),
        drift: Vec::new(),
    })
}

fn read_metric(r: &rusqlite::Row) -> Result<(i64, MetricRow), RowError> {
    Ok((
        r.get(0)?,
        MetricRow {
            metric: r.get(1)?,
            unit: r.get(2)?,
            direction: Stored::parse(&r.get::<_, String>(3)?),
            statistic: Stored::parse(&r.get::<_, String>(4)?),
            gated: r.get(5)?,
            baseline_value: r.get(6)?,
            baseline_sd: r.get(7)?,
            value: r.get(8)?,
            change_pct: r.get(9)?,
            tolerance: r.get(10)?,
            noise: r.get(11)?,
            verdict: Stored::parse(&r.get::<_, String>(12)?),
        },
    ))
}

fn read_drift(r: &rusqlite::Row) -> Result<(i64, DriftRow), RowError> {
    Ok((
        r.get(0)?,
        DriftRow {
            metric: r.get(1)?,
            shift: r.get(2)?,
            shift_pct: r.get(3)?,
            cusum: r.get(4)?,
            runs: r.get::<_, i64>(5)?.max(0) as usize,
            since_commit: r.get(6)?,
            failed: r.get(7)?,
            message: r.get(8)?,
        },
    ))
}
