//! The history schema and its migrations, for both engines.
//!
//! The version lives in a one-row table `gate_schema(version)`. Opening a
//! database applies every migration above its version in order, each in
//! its own transaction together with the version bump, so a crash leaves
//! the database at a whole version. Two processes opening an old database
//! at once serialise on the engine's write lock (SQLite `BEGIN IMMEDIATE`,
//! PostgreSQL `pg_advisory_xact_lock`) and the second finds the work done.
//! A database at a version newer than this gate knows is refused with a
//! message to upgrade gate: an old binary must not write rows a newer
//! schema would misread.
//!
//! History of the schema:
//! 1. `runs` (one row per capture/check) and `run_metrics` (one row per
//!    metric of a run: the judged statistic, baseline value, verdict).
//! 2. What drift detection needs: the baseline's run-to-run spread,
//!    tolerance and noise band per metric row; `drift_findings`; indexes
//!    for the by-branch and by-metric reads (measured in BENCHMARKS.md).
//!
//! Never edit a released migration: add a new one. The statements are
//! written per engine (types differ: `REAL`/`DOUBLE PRECISION`, rowid vs
//! `BIGSERIAL`) but must produce the same tables and columns.

/// The schema version this gate writes.
pub const CURRENT_VERSION: u32 = 2;

/// The version table, created (empty) before the first migration.
pub const SCHEMA_TABLE_SQL: &str =
    "CREATE TABLE IF NOT EXISTS gate_schema (version INTEGER NOT NULL)";

/// One step from `version - 1` to `version`.
pub struct Migration {
    pub version: u32,
    pub what: &'static str,
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        what: "runs and per-metric rows",
        sqlite: r#"
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    recorded_at TEXT NOT NULL,
    kind TEXT NOT NULL,
    baseline TEXT NOT NULL,
    baseline_created TEXT NOT NULL,
    baseline_runs INTEGER NOT NULL,
    commit_sha TEXT,
    branch TEXT,
    tags TEXT NOT NULL,
    gpu_model TEXT NOT NULL,
    environment TEXT NOT NULL,
    verdict TEXT NOT NULL,
    exit_code INTEGER NOT NULL,
    regressions INTEGER NOT NULL,
    top_rule TEXT,
    top_cause TEXT,
    gate_version TEXT NOT NULL,
    source TEXT NOT NULL
);
CREATE TABLE run_metrics (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    direction TEXT NOT NULL,
    statistic TEXT NOT NULL,
    gated INTEGER NOT NULL,
    baseline_value REAL,
    value REAL,
    change_pct REAL,
    verdict TEXT NOT NULL,
    PRIMARY KEY (run_id, metric)
);
CREATE INDEX runs_by_baseline ON runs (baseline, id);
"#,
        postgres: r#"
CREATE TABLE runs (
    id BIGSERIAL PRIMARY KEY,
    recorded_at TEXT NOT NULL,
    kind TEXT NOT NULL,
    baseline TEXT NOT NULL,
    baseline_created TEXT NOT NULL,
    baseline_runs BIGINT NOT NULL,
    commit_sha TEXT,
    branch TEXT,
    tags TEXT NOT NULL,
    gpu_model TEXT NOT NULL,
    environment TEXT NOT NULL,
    verdict TEXT NOT NULL,
    exit_code INTEGER NOT NULL,
    regressions BIGINT NOT NULL,
    top_rule TEXT,
    top_cause TEXT,
    gate_version TEXT NOT NULL,
    source TEXT NOT NULL
);
CREATE TABLE run_metrics (
    run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    direction TEXT NOT NULL,
    statistic TEXT NOT NULL,
    gated BOOLEAN NOT NULL,
    baseline_value DOUBLE PRECISION,
    value DOUBLE PRECISION,
    change_pct DOUBLE PRECISION,
    verdict TEXT NOT NULL,
    PRIMARY KEY (run_id, metric)
);
CREATE INDEX runs_by_baseline ON runs (baseline, id);
"#,
    },
    Migration {
        version: 2,
        what:
            "drift: baseline spread, tolerance and noise per metric; drift findings; read indexes",
        sqlite: r#"
ALTER TABLE run_metrics ADD COLUMN baseline_sd REAL;
ALTER TABLE run_metrics ADD COLUMN tolerance REAL;
ALTER TABLE run_metrics ADD COLUMN noise REAL;
CREATE TABLE drift_findings (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    metric TEXT NOT NULL,
    shift REAL NOT NULL,
    shift_pct REAL,
    cusum REAL NOT NULL,
    runs INTEGER NOT NULL,
    since_commit TEXT,
    failed INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (run_id, metric)
);
CREATE INDEX runs_by_branch ON runs (baseline, branch, id);
CREATE INDEX run_metrics_by_metric ON run_metrics (metric, run_id);
"#,
        postgres: r#"
ALTER TABLE run_metrics ADD COLUMN baseline_sd DOUBLE PRECISION;
ALTER TABLE run_metrics ADD COLUMN tolerance DOUBLE PRECISION;
ALTER TABLE run_metrics ADD COLUMN noise DOUBLE PRECISION;
CREATE TABLE drift_findings (
    run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    metric TEXT NOT NULL,
    shift DOUBLE PRECISION NOT NULL,
    shift_pct DOUBLE PRECISION,
    cusum DOUBLE PRECISION NOT NULL,
    runs BIGINT NOT NULL,
    since_commit TEXT,
    failed BOOLEAN NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (run_id, metric)
);
CREATE INDEX runs_by_branch ON runs (baseline, branch, id);
CREATE INDEX run_metrics_by_metric ON run_metrics (metric, run_id);
"#,
    },
];

/// Message for a database written by a newer gate.
pub(crate) fn too_new(found: u32) -> String {
    format!(
        "schema version {found} is newer than this gate knows ({CURRENT_VERSION}); upgrade gate (a newer gate wrote to it)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_one_by_one_up_to_the_current_version() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version as usize, i + 1, "{}", m.what);
            assert!(!m.sqlite.trim().is_empty() && !m.postgres.trim().is_empty());
        }
        assert_eq!(MIGRATIONS.last().unwrap().version, CURRENT_VERSION);
    }

    #[test]
    fn both_engines_create_the_same_tables_and_columns() {
        // Column names per CREATE/ALTER, engine types aside.
        fn names(sql: &str) -> Vec<String> {
            sql.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(|l| {
                    l.trim_start_matches("ALTER TABLE run_metrics ADD COLUMN ")
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .to_string()
                })
                .collect()
        }
        for m in MIGRATIONS {
            assert_eq!(
                names(m.sqlite),
                names(m.postgres),
                "migration {}",
                m.version
            );
        }
    }
}
