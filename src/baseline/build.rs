//! How a baseline is built: from the summaries of one or more runs (or of
//! the nodes of one run) and the gating policy of gate.toml.

use super::{
    gpu_key, Baseline, BaselineMetric, CaptureSettings, Environment, GpuBaseline, RunStat,
    SourceRun, SCHEMA_VERSION,
};
use crate::config::{Config, UserMetricValue};
use crate::error::GateError;
use crate::metrics::{Direction, Statistic};
use crate::stats::MetricStats;
use crate::summary::{steady_series, Column, RunInput};
use std::collections::BTreeMap;

/// Provenance that does not come from the traces.
#[derive(Debug, Clone, Default)]
pub struct BuildMeta {
    pub created: String,
    pub commit: Option<String>,
    /// Extra tags (command line); they win over the traces' header tags.
    pub tags: BTreeMap<String, String>,
}

/// Build a baseline from runs. Without `multi_node` each input is one run;
/// with it, all inputs are the nodes of one run (their samples are pooled
/// into that run's summary).
pub fn build(
    name: &str,
    inputs: &[RunInput],
    config: &Config,
    multi_node: bool,
    meta: &BuildMeta,
) -> Result<Baseline, GateError> {
    let first = inputs
        .first()
        .ok_or_else(|| GateError::usage("no run to build a baseline from"))?;
    let header = &first.trace.header;
    // Groups of inputs that form one run.
    let groups: Vec<Vec<&RunInput>> = if multi_node {
        vec![inputs.iter().collect()]
    } else {
        inputs.iter().map(|r| vec![r]).collect()
    };
    let policy_of = |id: &str| config.policy(id, None);
    let describe = |id: &str| -> (String, Direction, Statistic, bool) {
        match policy_of(id) {
            Some(p) => (p.unit, p.direction, p.statistic, p.gated),
            None => (String::new(), Direction::Neutral, Statistic::Mean, false),
        }
    };
    let sampled = |column: &Column, id: &str| -> Option<BaselineMetric> {
        let (unit, direction, statistic, gated) = describe(id);
        let mut pooled = Vec::new();
        let mut runs = Vec::new();
        for group in &groups {
            let mut series = Vec::new();
            for r in group {
                series.extend(steady_series(r.trace, column));
            }
            if let Some(s) = MetricStats::from_series(series.iter().copied()) {
                runs.push(RunStat::from_stats(&s, statistic));
            }
            pooled.extend(series);
        }
        let all = MetricStats::from_series(pooled)?;
        Some(metric_entry(unit, direction, statistic, gated, &all, runs))
    };

    let mut metrics = BTreeMap::new();
    for id in &header.gpu_columns {
        if let Some(m) = sampled(&Column::GpuMean { id }, id) {
            metrics.insert(id.clone(), m);
        }
    }
    for id in &header.host_columns {
        if let Some(m) = sampled(&Column::Host { id }, id) {
            metrics.insert(id.clone(), m);
        }
    }
    // Run-level numbers: one value per run (a multi-node run's wall time is
    // its slowest node's; its user metric the mean over nodes).
    let run_level = |id: &str, per_group: Vec<(f64, Option<f64>)>| -> Option<BaselineMetric> {
        if per_group.is_empty() {
            return None;
        }
        let (unit, direction, statistic, gated) = describe(id);
        let runs: Vec<RunStat> = per_group
            .iter()
            .map(|&(v, ci)| {
                let mut s = MetricStats::single(v);
                s.mean_ci95 = ci;
                RunStat::from_stats(&s, statistic)
            })
            .collect();
        let all = MetricStats::from_series(per_group.iter().map(|p| p.0))?;
        Some(metric_entry(unit, direction, statistic, gated, &all, runs))
    };
    let walls: Vec<(f64, Option<f64>)> = groups
        .iter()
        .filter_map(|g| {
            g.iter()
                .filter_map(|r| r.summary.wall_time_s)
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
                .map(|v| (v, None))
        })
        .collect();
    if let Some(m) = run_level(crate::metrics::WALL_TIME.id, walls) {
        metrics.insert(crate::metrics::WALL_TIME.id.to_string(), m);
    }
    for name in config.user_metric_names() {
        let per_group: Vec<(f64, Option<f64>)> = groups
            .iter()
            .filter_map(|g| {
                let vals: Vec<&UserMetricValue> =
                    g.iter().filter_map(|r| r.user.get(&name)).collect();
                if vals.is_empty() {
                    return None;
                }
                let k = vals.len() as f64;
                let mean = vals.iter().map(|v| v.value).sum::<f64>() / k;
                // Half-width of a mean of k independent estimates.
                let ci = vals
                    .iter()
                    .map(|v| v.ci95.map(|c| c * c))
                    .sum::<Option<f64>>()
                    .map(|s| s.sqrt() / k);
                Some((mean, ci))
            })
            .collect();
        if let Some(m) = run_level(&name, per_group) {
            metrics.insert(name, m);
        }
    }

    let gpu_count = header.fingerprint.gpus.len();
    let mut gpus = BTreeMap::new();
    if gpu_count > 1 {
        for (slot, info) in header.fingerprint.gpus.iter().enumerate() {
            let mut gm = BTreeMap::new();
            for id in &header.gpu_columns {
                if let Some(m) = sampled(&Column::Gpu { slot, id }, id) {
                    gm.insert(id.clone(), m);
                }
            }
            gpus.insert(
                gpu_key(slot),
                GpuBaseline {
                    index: info.index,
                    name: info.name.clone(),
                    metrics: gm,
                },
            );
        }
    }

    let mut features: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for r in inputs {
        for (k, v) in &r.summary.features {
            if v.is_finite() {
                let e = features.entry(k.clone()).or_insert((0.0, 0));
                e.0 += v;
                e.1 += 1;
            }
        }
    }

    let mut tags = header.tags.clone();
    tags.extend(meta.tags.clone());
    Ok(Baseline {
        schema_version: SCHEMA_VERSION,
        name: name.to_string(),
        gate_version: crate::GATE_VERSION.to_string(),
        created: meta.created.clone(),
        commit: meta.commit.clone(),
        tags,
        environment: Environment::from_fingerprint(&header.fingerprint),
        capture: CaptureSettings {
            interval_ms: header.interval_ms,
            warmup_ms: header.warmup_ms,
            duration_ms: header.duration_ms,
            steady_window: format!(
                "samples after the first {} ms of warm-up of each run, to the end of the recording; missing values skipped",
                header.warmup_ms
            ),
            runs: groups.len(),
            multi_node,
            command: header.command.clone(),
            sources: inputs
                .iter()
                .map(|r| SourceRun {
                    trace: r.trace.path.display().to_string(),
                    steady_start_ms: r.summary.steady_start_ms,
                    steady_end_ms: r.summary.steady_end_ms,
                    steady_samples: r.summary.steady_samples,
                    total_samples: r.summary.total_samples,
                    wall_time_s: r.summary.wall_time_s,
                })
                .collect(),
        },
        features: features
            .into_iter()
            .map(|(k, (s, n))| (k, s / n as f64))
            .collect(),
        metrics,
        gpus,
    })
}

pub(super) fn metric_entry(
    unit: String,
    direction: Direction,
    statistic: Statistic,
    gated: bool,
    all: &MetricStats,
    runs: Vec<RunStat>,
) -> BaselineMetric {
    BaselineMetric {
        unit,
        direction,
        statistic,
        gated,
        n: all.n,
        mean: all.mean,
        stdev: all.stdev,
        min: all.min,
        p5: all.p5,
        p50: all.p50,
        p95: all.p95,
        p99: all.p99,
        max: all.max,
        runs,
    }
}
