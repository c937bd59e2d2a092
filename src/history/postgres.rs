//! PostgreSQL history store, for teams whose CI runners are ephemeral and
//! share one server (`postgres://USER:PASSWORD@HOST:PORT/DB`, handed to gate
//! through an environment variable or CI secret, never committed).
//!
//! Uses the synchronous `postgres` crate without TLS: meant for a server on
//! loopback, a CI service container or a private network. A URL asking for
//! `sslmode=require` fails to connect with the driver's message; put a TLS
//! proxy (or the service container) next to the runner instead. The
//! location is a `postgres://` URL or a libpq keyword string
//! (`host=... user=... password=... dbname=...`).
//!
//! A server that stalls must not hold up a pipeline: the TCP connect waits
//! at most `CONNECT_TIMEOUT` (or the URL's `connect_timeout`, never more
//! than the step's time-out), every statement and every lock wait is
//! bounded on the server (`statement_timeout`, `lock_timeout`, set for the
//! session at connect time), and the caller bounds the whole step on the
//! client (`history::within`), for a server that accepts TCP and then never
//! answers, which no server-side setting can catch.
//!
//! Errors say what the server said (`password authentication failed for
//! user "gate"`, `database "x" does not exist`), not the driver's bare
//! "db error" (`describe`).
//!
//! Atomicity and concurrency: every append is one transaction (run row with
//! `RETURNING id`, then its metric and drift rows); ids come from a
//! sequence, so parallel jobs never collide. Migrations take a
//! transaction-scoped advisory lock first, so two jobs opening an old
//! database migrate it once.

use super::schema::{self, MIGRATIONS};
use super::sql::{self, Param};
use super::{
    DriftRow, HistoryError, HistoryStore, Location, MetricRow, Query, RunKind, RunRecord, Stored,
};
use postgres::types::ToSql;
use postgres::{Client, NoTls};
use std::time::Duration;

/// Default connect timeout (when the URL sets none).
pub(crate) const CONNECT_TIMEOUT: Duration = crate::limits::HISTORY_CONNECT_TIMEOUT;

/// Key of the advisory lock that serialises migrations ("gatehist" in hex-ish).
const MIGRATION_LOCK_KEY: i64 = 0x6761_7465_6869_7374;

pub(crate) struct PostgresStore {
    client: Client,
    location: Location,
}

impl PostgresStore {
    pub fn connect(url: &str, timeout: Duration) -> Result<PostgresStore, HistoryError> {
        let location = Location::Postgres(url.to_string());
        let fail = |e: &postgres::Error| HistoryError::unavailable(&location, describe(e));
        let mut config: postgres::Config = url.parse().map_err(|_| {
            let why = super::redact::parse_error(url).unwrap_or_default();
            location.malformed(&why)
        })?;
        let connect = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(CONNECT_TIMEOUT)
            .min(timeout);
        config.connect_timeout(connect);
        if config.get_application_name().is_none() {
            config.application_name("gate");
        }
        // Server-side bounds for this session, sent with the start-up
        // packet (no extra round trip), after any options of the URL.
        // The lock wait ends a little earlier than the statement, so a
        // locked table is reported as such ("lock timeout").
        let ms = timeout.as_millis().max(2);
        let lock_ms = ms * 9 / 10;
        let bounds = format!("-c statement_timeout={ms} -c lock_timeout={lock_ms}");
        let options = match config.get_options() {
            Some(o) if !o.trim().is_empty() => format!("{o} {bounds}"),
            _ => bounds,
        };
        config.options(&options);
        let client = config.connect(NoTls).map_err(|e| fail(&e))?;
        let mut store = PostgresStore { client, location };
        store.migrate()?;
        Ok(store)
    }

    fn fail(&self, e: &postgres::Error) -> HistoryError {
        HistoryError::unavailable(&self.location, describe(e))
    }

    fn migrate(&mut self) -> Result<(), HistoryError> {
        loop {
            let loc = self.location.clone();
            let fail = |e: &dyn std::fmt::Display| HistoryError::unavailable(&loc, e);
            let mut tx = self.client.transaction().map_err(|e| fail(&describe(&e)))?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK_KEY])
                .map_err(|e| fail(&describe(&e)))?;
            tx.batch_execute(schema::SCHEMA_TABLE_SQL)
                .map_err(|e| fail(&describe(&e)))?;
            let row = tx
                .query_opt("SELECT version FROM gate_schema", &[])
                .map_err(|e| fail(&describe(&e)))?;
            let version = match row {
                Some(r) => r.get::<_, i32>(0).max(0) as u32,
                None => {
                    tx.execute("INSERT INTO gate_schema (version) VALUES (0)", &[])
                        .map_err(|e| fail(&describe(&e)))?;
                    0
                }
            };
            if version > schema::CURRENT_VERSION {
                return Err(fail(&schema::too_new(version)));
            }
            if version == schema::CURRENT_VERSION {
                tx.commit().map_err(|e| fail(&describe(&e)))?;
                return Ok(());
            }
            let m = &MIGRATIONS[version as usize];
            tx.batch_execute(m.postgres).map_err(|e| {
                fail(&format!(
                    "migration to schema {} ({}) failed: {}",
                    m.version,
                    m.what,
                    describe(&e)
                ))
            })?;
            tx.execute(
                "UPDATE gate_schema SET version = $1",
                &[&(m.version as i32)],
            )
            .map_err(|e| fail(&describe(&e)))?;
            tx.commit().map_err(|e| fail(&describe(&e)))?;
        }
    }
}

fn params(ps: &[Param]) -> Vec<Box<dyn ToSql + Sync>> {
    ps.iter()
        .map(|p| -> Box<dyn ToSql + Sync> {
            match p {
                Param::Text(s) => Box::new(s.clone()),
            }
        })
        .collect()
}

fn refs(ps: &[Box<dyn ToSql + Sync>]) -> Vec<&(dyn ToSql + Sync)> {
    ps.iter().map(|b| b.as_ref()).collect()
}

impl HistoryStore for PostgresStore {
    fn append(&mut self, run: &RunRecord) -> Result<i64, HistoryError> {
        let loc = self.location.clone();
        let fail = |e: postgres::Error| HistoryError::unavailable(&loc, describe(&e));
        let mut tx = self.client.transaction().map_err(fail)?;
        let tags = serde_json::to_string(&run.tags).unwrap_or_else(|_| "{}".into());
        let env = run.environment.to_string();
        let insert_run = format!(
            "{} RETURNING id",
            sql::insert("runs", sql::INSERT_RUN_COLUMNS, sql::postgres_ph)
        );
        let row = tx
            .query_one(
                &insert_run,
                &[
                    &run.recorded_at,
                    &run.kind.as_str(),
                    &run.baseline,
                    &run.baseline_created,
                    &(run.baseline_runs as i64),
                    &run.commit,
                    &run.branch,
                    &tags,
                    &run.gpu_model,
                    &env,
                    &run.verdict.as_str(),
                    &run.exit_code,
                    &(run.regressions as i64),
                    &run.top_rule,
                    &run.top_cause,
                    &run.gate_version,
                    &run.source,
                ],
            )
            .map_err(fail)?;
        let id: i64 = row.get(0);
        if !run.metrics.is_empty() {
            let stmt = tx
                .prepare(&sql::insert(
                    "run_metrics",
                    sql::INSERT_METRIC_COLUMNS,
                    sql::postgres_ph,
                ))
                .map_err(fail)?;
            for m in &run.metrics {
                tx.execute(
                    &stmt,
                    &[
                        &id,
                        &m.metric,
                        &m.unit,
                        &m.direction.as_str(),
                        &m.statistic.as_str(),
                        &m.gated,
                        &m.baseline_value,
                        &m.baseline_sd,
                        &m.value,
                        &m.change_pct,
                        &m.tolerance,
                        &m.noise,
                        &m.verdict.as_str(),
                    ],
                )
                .map_err(fail)?;
            }
        }
        if !run.drift.is_empty() {
            let stmt = tx
                .prepare(&sql::insert(
                    "drift_findings",
                    sql::INSERT_DRIFT_COLUMNS,
                    sql::postgres_ph,
                ))
                .map_err(fail)?;
            for d in &run.drift {
                tx.execute(
                    &stmt,
                    &[
                        &id,
                        &d.metric,
                        &d.shift,
                        &d.shift_pct,
                        &d.cusum,
                        &(d.runs as i64),
                        &d.since_commit,
                        &d.failed,
                        &d.message,
                    ],
                )
                .map_err(fail)?;
            }
        }
        tx.commit().map_err(fail)?;
        Ok(id)
    }

    fn runs(&mut self, query: &Query) -> Result<Vec<RunRecord>, HistoryError> {
        let s = sql::select(query, sql::postgres_ph);
        let loc = self.location.clone();
        let fail = |e: &dyn std::fmt::Display| HistoryError::unavailable(&loc, e);
        // REPEATABLE READ: the three reads see one snapshot while other
        // jobs append.
        let mut tx = self
            .client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(|e| fail(&describe(&e)))?;
        let run_params = params(&s.runs_params);
        let mut runs = Vec::new();
        for r in tx
            .query(&s.runs, &refs(&run_params))
            .map_err(|e| fail(&describe(&e)))?
        {
            runs.push(read_run(&r).map_err(|e| fail(&e))?);
        }
        let mut metrics = Vec::new();
        if let Some(msql) = &s.metrics {
            let mp = params(&s.metrics_params);
            for r in tx
                .query(msql, &refs(&mp))
                .map_err(|e| fail(&describe(&e)))?
            {
                metrics.push(read_metric(&r).map_err(|e| fail(&e))?);
            }
        }
        let mut drift = Vec::new();
        for r in tx
            .query(&s.drift, &refs(&run_params))
            .map_err(|e| fail(&describe(&e)))?
        {
            drift.push(read_drift(&r).map_err(|e| fail(&e))?);
        }
        tx.commit().map_err(|e| fail(&describe(&e)))?;
        sql::attach(&mut runs, metrics, drift);
        Ok(runs)
    }

    fn schema_version(&mut self) -> Result<u32, HistoryError> {
        let row = self
            .client
            .query_one("SELECT version FROM gate_schema", &[])
            .map_err(|e| self.fail(&e))?;
        Ok(row.get::<_, i32>(0).max(0) as u32)
    }

    fn location(&self) -> String {
        self.location.display()
    }
}

/// What went wrong, in the server's words when the server said something
/// (the driver's own text for a server error is only "db error"):
/// `password authentication failed for user "gate" (SQLSTATE 28P01)`,
/// `canceling statement due to lock timeout (SQLSTATE 55P03)`; else the
/// driver's text with its causes (`error connecting to server: Connection
/// refused (os error 111)`).
pub(crate) fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = format!("{} (SQLSTATE {})", db.message(), db.code().code());
        if let Some(d) = db.detail() {
            s.push_str(&format!("; {d}"));
        }
        if let Some(h) = db.hint() {
            s.push_str(&format!("; hint: {h}"));
        }
        return s;
    }
    let mut s = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !s.contains(&text) {
            s.push_str(&format!(": {text}"));
        }
        cause = c.source();
    }
    s
}

fn read_run(r: &postgres::Row) -> Result<RunRecord, String> {
    let e = |x: postgres::Error| x.to_string();
    let id: i64 = r.try_get(0).map_err(e)?;
    let kind: String = r.try_get(2).map_err(e)?;
    let tags: String = r.try_get(8).map_err(e)?;
    let env: String = r.try_get(10).map_err(e)?;
    Ok(RunRecord {
        id: Some(id),
        recorded_at: r.try_get(1).map_err(e)?,
        kind: RunKind::parse(&kind).ok_or_else(|| format!("run {id}: unknown kind '{kind}'"))?,
        baseline: r.try_get(3).map_err(e)?,
        baseline_created: r.try_get(4).map_err(e)?,
        baseline_runs: r.try_get::<_, i64>(5).map_err(e)?.max(0) as usize,
        commit: r.try_get(6).map_err(e)?,
        branch: r.try_get(7).map_err(e)?,
        tags: sql::json_column(&tags, "tags", id)?,
        gpu_model: r.try_get(9).map_err(e)?,
        environment: sql::json_column(&env, "environment", id)?,
        verdict: Stored::parse(r.try_get::<_, &str>(11).map_err(e)?),
        exit_code: r.try_get(12).map_err(e)?,
        regressions: r.try_get::<_, i64>(13).map_err(e)?.max(0) as usize,
        top_rule: r.try_get(14).map_err(e)?,
        top_cause: r.try_get(15).map_err(e)?,
        gate_version: r.try_get(16).map_err(e)?,
        source: r.try_get(17).map_err(e)?,
        metrics: Vec::new(),
        drift: Vec::new(),
    })
}

fn read_metric(r: &postgres::Row) -> Result<(i64, MetricRow), String> {
    let e = |x: postgres::Error| x.to_string();
    Ok((
        r.try_get(0).map_err(e)?,
        MetricRow {
            metric: r.try_get(1).map_err(e)?,
            unit: r.try_get(2).map_err(e)?,
            direction: Stored::parse(r.try_get::<_, &str>(3).map_err(e)?),
            statistic: Stored::parse(r.try_get::<_, &str>(4).map_err(e)?),
            gated: r.try_get(5).map_err(e)?,
            baseline_value: r.try_get(6).map_err(e)?,
            baseline_sd: r.try_get(7).map_err(e)?,
            value: r.try_get(8).map_err(e)?,
            change_pct: r.try_get(9).map_err(e)?,
            tolerance: r.try_get(10).map_err(e)?,
            noise: r.try_get(11).map_err(e)?,
            verdict: Stored::parse(r.try_get::<_, &str>(12).map_err(e)?),
        },
    ))
}

fn read_drift(r: &postgres::Row) -> Result<(i64, DriftRow), String> {
    let e = |x: postgres::Error| x.to_string();
    Ok((
        r.try_get(0).map_err(e)?,
        DriftRow {
            metric: r.try_get(1).map_err(e)?,
            shift: r.try_get(2).map_err(e)?,
            shift_pct: r.try_get(3).map_err(e)?,
            cusum: r.try_get(4).map_err(e)?,
            runs: r.try_get::<_, i64>(5).map_err(e)?.max(0) as usize,
            since_commit: r.try_get(6).map_err(e)?,
            failed: r.try_get(7).map_err(e)?,
            message: r.try_get(8).map_err(e)?,
        },
    ))
}
