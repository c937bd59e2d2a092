//! The counters of each benchmark's own span (`summary::spans`), kept in
//! the baseline so a regressed benchmark of a multi-benchmark run is
//! explained against the same span of the baseline runs. Kept for a
//! benchmark whose span every baseline run found; the GPU aggregate and
//! host columns only (per-GPU values stay the whole window's).

use super::{Baseline, BaselineMetric};
use crate::stats::MetricStats;
use crate::summary::{Column, Run};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One benchmark's span in the baseline runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SpanBaseline {
    /// The benchmark as its harness names it.
    pub benchmark: String,
    /// What found the span (`Progress::describe`).
    pub found_by: String,
    /// The span's length, seconds, mean over the runs.
    pub seconds: f64,
    #[serde(default)]
    pub features: BTreeMap<String, f64>,
    #[serde(default)]
    pub metrics: BTreeMap<String, BaselineMetric>,
}

/// A metric entry from its pooled statistics and each run's (the
/// builder's, with the metric's unit, direction and statistic).
pub(super) type Entry<'a> = dyn Fn(&str, &MetricStats, &[MetricStats]) -> BaselineMetric + 'a;

/// The spans of every benchmark that each of `inputs` (runs, not the nodes
/// of one) found, by metric id.
pub(super) fn build(inputs: &[Run], entry: &Entry) -> BTreeMap<String, SpanBaseline> {
    let Some(first) = inputs.first() else {
        return BTreeMap::new();
    };
    let header = &first.header;
    let columns: Vec<Column> = (header.gpu_columns.iter().map(|id| Column::GpuMean { id }))
        .chain(header.host_columns.iter().map(|id| Column::Host { id }))
        .collect();
    let mut out = BTreeMap::new();
    for (id, span) in &first.spans {
        let all: Vec<_> = inputs
            .iter()
            .filter_map(|r| r.spans.get(id).filter(|s| s.summary.is_some()))
            .collect();
        if all.len() != inputs.len() {
            continue;
        }
        let mut metrics = BTreeMap::new();
        for column in &columns {
            let per_run: Vec<MetricStats> = all
                .iter()
                .filter_map(|s| s.summary.as_ref()?.column_stats(column))
                .collect();
            if per_run.len() != inputs.len() {
                continue;
            }
            let pooled = match per_run.as_slice() {
                [one] => Some(one.clone()),
                _ => MetricStats::from_finite(
                    inputs
                        .iter()
                        .zip(&all)
                        .flat_map(|(r, s)| r.finite(&s.steady, column))
                        .collect(),
                ),
            };
            let Some(pooled) = pooled else { continue };
            let id = column.id();
            metrics.insert(id.to_string(), entry(id, &pooled, &per_run));
        }
        let k = all.len() as f64;
        out.insert(
            id.clone(),
            SpanBaseline {
                benchmark: span.benchmark.clone(),
                found_by: span.found_by.to_string(),
                seconds: all.iter().map(|s| s.end_s - s.start_s).sum::<f64>() / k,
                features: mean_features(all.iter().filter_map(|s| s.summary.as_ref())),
                metrics,
            },
        );
    }
    out
}

/// Each feature averaged over the spans that have a finite value.
fn mean_features<'a>(
    summaries: impl Iterator<Item = &'a crate::summary::RunSummary>,
) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for s in summaries {
        for (k, v) in s.features.iter().filter(|(_, v)| v.is_finite()) {
            let e = sums.entry(k.clone()).or_insert((0.0, 0));
            e.0 += v;
            e.1 += 1;
        }
    }
    sums.into_iter()
        .map(|(k, (s, n))| (k, s / n as f64))
        .collect()
}

/// Benchmarks named in the warning about spans not kept.
const NAMES_SHOWN: usize = 3;

impl Baseline {
    /// The warning `capture` prints when benchmarks of a run of many got
    /// no span in this baseline (built from `inputs`): how many, the first
    /// few with why, and what that means for a regression of theirs.
    pub fn spans_not_kept(&self, inputs: &[Run]) -> Option<String> {
        let first = inputs.first()?;
        let missing: Vec<String> = (first.spans.iter())
            .filter(|(id, _)| !self.spans.contains_key(*id))
            .map(|(id, _)| {
                let why = (inputs.iter())
                    .find_map(|r| r.spans.get(id)?.fallback.clone())
                    .unwrap_or_else(|| "not found in every run".into());
                format!("{id}: {why}")
            })
            .collect();
        let shown = missing
            .iter()
            .take(NAMES_SHOWN)
            .cloned()
            .collect::<Vec<_>>();
        (!missing.is_empty()).then(|| {
            format!(
                "{} of {} benchmarks have no span in the baseline ({}{}); a regression of theirs is explained with the whole window",
                missing.len(),
                first.spans.len(),
                shown.join("; "),
                if missing.len() > NAMES_SHOWN { "; ..." } else { "" }
            )
        })
    }

    /// The baseline as the rules read it for benchmark `id`: its span's
    /// counters and features in place of the whole window's. None when
    /// the baseline keeps no span of it.
    pub fn span_view(&self, id: &str) -> Option<Baseline> {
        let span = self.spans.get(id)?;
        Some(Baseline {
            schema_version: self.schema_version,
            name: self.name.clone(),
            gate_version: self.gate_version.clone(),
            created: self.created.clone(),
            commit: self.commit.clone(),
            tags: self.tags.clone(),
            environment: self.environment.clone(),
            capture: self.capture.clone(),
            features: span.features.clone(),
            metrics: span.metrics.clone(),
            gpus: BTreeMap::new(),
            spans: BTreeMap::new(),
        })
    }
}
