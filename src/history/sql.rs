//! SQL text both engines share: the statements are the same but for the
//! placeholder style (`?1` in SQLite, `$1` in PostgreSQL), so a query
//! behaves identically on either. Only values travel as parameters; the
//! text is built from constants (no user string is ever spliced in).

use super::{MetricFilter, Query};
use crate::gate::Verdict;

/// A bound parameter.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    Text(String),
}

pub(crate) const INSERT_RUN_COLUMNS: &str =
    "recorded_at, kind, baseline, baseline_created, baseline_runs, \
commit_sha, branch, tags, gpu_model, environment, verdict, exit_code, regressions, top_rule, \
top_cause, gate_version, source";

pub(crate) const INSERT_METRIC_COLUMNS: &str =
    "run_id, metric, unit, direction, statistic, gated, \
baseline_value, baseline_sd, value, change_pct, tolerance, noise, verdict";

pub(crate) const INSERT_DRIFT_COLUMNS: &str =
    "run_id, metric, shift, shift_pct, cusum, runs, since_commit, failed, message";

/// Columns read back from `runs`, in this order.
pub(crate) const RUN_COLUMNS: &str =
    "id, recorded_at, kind, baseline, baseline_created, baseline_runs, \
commit_sha, branch, tags, gpu_model, environment, verdict, exit_code, regressions, top_rule, \
top_cause, gate_version, source";

/// Columns read back from `run_metrics`, in this order.
pub(crate) const METRIC_COLUMNS: &str = "run_id, metric, unit, direction, statistic, gated, \
baseline_value, baseline_sd, value, change_pct, tolerance, noise, verdict";

pub(crate) const DRIFT_COLUMNS: &str =
    "run_id, metric, shift, shift_pct, cusum, runs, since_commit, failed, message";

/// `INSERT INTO table (cols) VALUES (p1, ..., pn)`.
pub fn insert(table: &str, columns: &str, ph: fn(usize) -> String) -> String {
    let n = columns.split(',').count();
    let values: Vec<String> = (1..=n).map(ph).collect();
    format!(
        "INSERT INTO {table} ({columns}) VALUES ({})",
        values.join(", ")
    )
}

/// The three reads of `runs()`: the runs, their metric rows, their drift
/// rows, all filtered the same way, plus the parameters of each.
pub(crate) struct Select {
    pub runs: String,
    pub(crate) runs_params: Vec<Param>,
    /// None: the query wants no metric rows.
    pub metrics: Option<String>,
    pub(crate) metrics_params: Vec<Param>,
    pub drift: String,
}

/// Build the reads for `q`. The run filter is a subquery so the metric rows
/// come in one statement however many runs match (no `IN (?, ?, ...)`
/// with 10,000 ids).
pub(crate) fn select(q: &Query, ph: fn(usize) -> String) -> Select {
    let mut params = Vec::new();
    let mut cond = Vec::new();
    let mut push = |params: &mut Vec<Param>, col: &str, v: Param| {
        params.push(v);
        cond.push(format!("{col} = {}", ph(params.len())));
    };
    if let Some(b) = &q.baseline {
        push(&mut params, "baseline", Param::Text(b.clone()));
    }
    if let Some(b) = &q.branch {
        push(&mut params, "branch", Param::Text(b.clone()));
    }
    if let Some(k) = q.kind {
        push(&mut params, "kind", Param::Text(k.as_str().into()));
    }
    if let Some(c) = &q.baseline_created {
        push(&mut params, "baseline_created", Param::Text(c.clone()));
    }
    if q.regressions_only {
        cond.push("regressions > 0".into());
    }
    let where_ = if cond.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", cond.join(" AND "))
    };
    let limit = q.limit.map(|n| format!(" LIMIT {n}")).unwrap_or_default();
    let ids = format!("SELECT id FROM runs{where_} ORDER BY id DESC{limit}");
    let runs = format!("SELECT {RUN_COLUMNS} FROM runs{where_} ORDER BY id DESC{limit}");
    let mut metrics_params = params.clone();
    let metrics = match &q.metrics {
        MetricFilter::None => None,
        MetricFilter::All => Some(String::new()),
        MetricFilter::Gated => Some(" AND gated = TRUE".to_string()),
        MetricFilter::Regressed => Some(format!(" AND verdict = '{}'", Verdict::Regression.as_str())),
        MetricFilter::Only(list) => {
            let mut alts = Vec::new();
            for m in list {
                metrics_params.push(Param::Text(m.clone()));
                alts.push(ph(metrics_params.len()));
            }
            if alts.is_empty() {
                None
            } else {
                Some(format!(" AND metric IN ({})", alts.join(", ")))
            }
        }
    }
    .map(|extra| {
        format!(
            "SELECT {METRIC_COLUMNS} FROM run_metrics WHERE run_id IN ({ids}){extra} ORDER BY run_id DESC, metric"
        )
    });
    let drift =
        format!("SELECT {DRIFT_COLUMNS} FROM drift_findings WHERE run_id IN ({ids}) ORDER BY run_id DESC, metric");
    Select {
        runs,
        runs_params: params,
        metrics,
        metrics_params,
        drift,
    }
}

pub(crate) fn sqlite_ph(i: usize) -> String {
    format!("?{i}")
}

pub(crate) fn postgres_ph(i: usize) -> String {
    format!("${i}")
}

/// Group metric and drift rows under their runs (all newest first).
pub fn attach(
    runs: &mut [super::RunRecord],
    metrics: Vec<(i64, super::MetricRow)>,
    drift: Vec<(i64, super::DriftRow)>,
) {
    let index: std::collections::HashMap<i64, usize> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.id.map(|id| (id, i)))
        .collect();
    for (id, m) in metrics {
        if let Some(&i) = index.get(&id) {
            runs[i].metrics.push(m);
        }
    }
    for (id, d) in drift {
        if let Some(&i) = index.get(&id) {
            runs[i].drift.push(d);
        }
    }
}

/// Parse the JSON text columns, naming the column when one is corrupt.
pub(crate) fn json_column<T: serde::de::DeserializeOwned>(
    text: &str,
    column: &str,
    id: i64,
) -> Result<T, String> {
    serde_json::from_str(text)
        .map_err(|e| format!("run {id}: column '{column}' is not the JSON gate wrote ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::RunKind;

    #[test]
    fn filters_become_placeholders_never_spliced_text() {
        let q = Query {
            baseline: Some("x' OR 1=1 --".into()),
            branch: Some("main".into()),
            kind: Some(RunKind::Check),
            metrics: MetricFilter::Only(vec!["a".into(), "b".into()]),
            limit: Some(5),
            ..Query::default()
        };
        let s = select(&q, postgres_ph);
        assert!(!s.runs.contains("OR 1=1"), "{}", s.runs);
        assert!(s
            .runs
            .contains("baseline = $1 AND branch = $2 AND kind = $3"));
        assert!(s.runs.ends_with("ORDER BY id DESC LIMIT 5"));
        assert_eq!(s.runs_params.len(), 3);
        assert!(s.metrics.unwrap().contains("metric IN ($4, $5)"));
        assert_eq!(s.metrics_params.len(), 5);
        assert_eq!(
            insert("t", "a, b, c", sqlite_ph),
            "INSERT INTO t (a, b, c) VALUES (?1, ?2, ?3)"
        );
    }
}
