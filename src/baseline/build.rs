//! How a baseline is built: from the summaries of one or more runs (or of
//! the nodes of one run) and the gating policy of gate.toml.

use super::{
    gpu_key, Baseline, BaselineMetric, CaptureSettings, Environment, GpuBaseline, RunStat,
    SourceRun, SCHEMA_VERSION,
};
use crate::config::Config;
use crate::error::GateError;
use crate::metrics::{Direction, Statistic};
use crate::stats::MetricStats;
use crate::summary::{Column, Run, UserMetricValue};
use crate::trace::Header;
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
/// into that run's summary). Runs pooled with others kept their samples
/// (`Run::keep_samples`, parked in scratch files): pooled statistics read
/// each run's own column and select across them. A baseline of one run
/// reads none: its statistics are its summary's.
pub fn build(
    name: &str,
    inputs: &[Run],
    config: &Config,
    multi_node: bool,
    meta: &BuildMeta,
) -> Result<Baseline, GateError> {
    let first = inputs
        .first()
        .ok_or_else(|| GateError::usage("no run to build a baseline from"))?;
    let header = &first.header;
    let runs = Runs {
        groups: if multi_node {
            vec![(0..inputs.len()).collect()]
        } else {
            (0..inputs.len()).map(|i| vec![i]).collect()
        },
        inputs,
        config,
    };
    // Columns are independent: spread over the cores, kept in order.
    let columns: Vec<Column> = (header.gpu_columns.iter().map(|id| Column::GpuMean { id }))
        .chain(header.host_columns.iter().map(|id| Column::Host { id }))
        .collect();
    let mut metrics = BTreeMap::new();
    for (column, m) in columns.iter().zip(runs.sampled_all(&columns)?) {
        if let Some(m) = m {
            metrics.insert(column.id().to_string(), m);
        }
    }
    let wall = crate::metrics::WALL_TIME.id;
    if let Some(m) = runs.run_level(wall, runs.wall_times()) {
        metrics.insert(wall.to_string(), m);
    }
    for user in config.user_metric_ids(inputs.iter().flat_map(|r| r.user.keys())) {
        if let Some(mut m) = runs.run_level(&user, runs.user_values(&user)) {
            m.benchmark = inputs
                .iter()
                .find_map(|r| r.user_benchmarks.get(&user).cloned());
            metrics.insert(user, m);
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
        capture: capture_settings(header, inputs, runs.groups.len(), multi_node),
        features: mean_features(inputs),
        metrics,
        gpus: runs.per_gpu(header)?,
        // The nodes of one run are one run: no span of a node is the run's.
        spans: if multi_node {
            BTreeMap::new()
        } else {
            super::spans::build(inputs, &|id, all, per_run| runs.entry(id, all, per_run))
        },
    })
}

/// The inputs grouped into runs (indices: one input each, or all the nodes
/// of one multi-node run), where their steady values come from, and the
/// policy that describes each metric.
struct Runs<'a> {
    groups: Vec<Vec<usize>>,
    inputs: &'a [Run],
    config: &'a Config,
}

impl Runs<'_> {
    /// Unit, direction, statistic and gating of a metric, from gate.toml
    /// and the catalogue (unknown: neutral, not gated).
    fn describe(&self, id: &str) -> (String, Direction, Statistic, bool) {
        match self.config.policy(id, None) {
            Some(p) => (p.unit, p.direction, p.statistic, p.gated),
            None => (String::new(), Direction::Neutral, Statistic::Mean, false),
        }
    }

    /// The entry of metric `id` from its pooled and per-run statistics.
    fn entry(&self, id: &str, all: &MetricStats, per_run: &[MetricStats]) -> BaselineMetric {
        let (unit, direction, statistic, gated) = self.describe(id);
        let runs = (per_run.iter())
            .map(|s| RunStat::from_stats(s, statistic))
            .collect();
        metric_entry(unit, direction, statistic, gated, all, runs)
    }

    /// `sampled` of every column, on the cores (`parallel`).
    fn sampled_all(&self, columns: &[Column]) -> Result<Vec<Option<BaselineMetric>>, GateError> {
        // Each job reads every run's column in place (`from_visits`): its
        // memory is at most `VISIT_BYTES` whatever the runs' lengths (a
        // copy of all the pooled values grew with them: issue 44.2).
        crate::parallel::map_within(crate::stats::VISIT_BYTES, columns, |c| {
            self.sampled(c, c.id())
        })
        .into_iter()
        .collect()
    }

    /// The statistics of the steady values of `column` in the inputs
    /// `group`, read from each run's own column one after another, in
    /// place: `MetricStats::from_finite` of their copy, the same bits.
    fn pooled(&self, group: &[usize], column: &Column) -> Option<MetricStats> {
        let most = group.iter().map(|&i| self.inputs[i].steady.len()).sum();
        MetricStats::from_visits(most, |f| {
            for &i in group {
                let r = &self.inputs[i];
                r.visit(&r.steady, column, f);
            }
        })
    }

    /// A sampled metric: each run's statistics over its steady samples (a
    /// multi-node run pools its nodes'), and all runs' samples pooled. A
    /// run of one trace reuses its summary's statistics (the same series,
    /// the same numbers: capture used to compute them twice), and one run
    /// alone is its own pool.
    fn sampled(&self, column: &Column, id: &str) -> Result<Option<BaselineMetric>, GateError> {
        let (unit, direction, statistic, gated) = self.describe(id);
        let per_run: Vec<Option<MetricStats>> = (self.groups.iter())
            .map(|group| match group.as_slice() {
                [one] => Ok(self.inputs[*one].summary.column_stats(column)),
                nodes => Ok(self.pooled(nodes, column)),
            })
            .collect::<Result<_, GateError>>()?;
        let all = match per_run.as_slice() {
            [one] => one.clone(),
            _ => {
                let every: Vec<usize> = self.groups.iter().flatten().copied().collect();
                self.pooled(&every, column)
            }
        };
        let Some(all) = all else {
            return Ok(None);
        };
        let runs = (per_run.iter().flatten())
            .map(|s| RunStat::from_stats(s, statistic))
            .collect();
        Ok(Some(metric_entry(
            unit, direction, statistic, gated, &all, runs,
        )))
    }

    /// A run-level number (wall time, user metric): one value per run, with
    /// its 95 % half-width when known.
    fn run_level(&self, id: &str, per_group: Vec<(f64, Option<f64>)>) -> Option<BaselineMetric> {
        if per_group.is_empty() {
            return None;
        }
        let (unit, direction, statistic, gated) = self.describe(id);
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
    }

    /// Each run's wall time: a multi-node run's is its slowest node's.
    fn wall_times(&self) -> Vec<(f64, Option<f64>)> {
        self.groups
            .iter()
            .filter_map(|g| {
                g.iter()
                    .filter_map(|&i| self.inputs[i].summary.wall_time_s)
                    .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
                    .map(|v| (v, None))
            })
            .collect()
    }

    /// Each run's value of a user metric: a multi-node run's is the mean
    /// over its nodes.
    fn user_values(&self, name: &str) -> Vec<(f64, Option<f64>)> {
        self.groups
            .iter()
            .filter_map(|g| {
                let vals: Vec<&UserMetricValue> = g
                    .iter()
                    .filter_map(|&i| self.inputs[i].user.get(name))
                    .collect();
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
            .collect()
    }

    /// Per-GPU metrics, keyed `gpu<slot>`; only with several GPUs (with
    /// one, the aggregate is that GPU).
    fn per_gpu(&self, header: &Header) -> Result<BTreeMap<String, GpuBaseline>, GateError> {
        let mut gpus = BTreeMap::new();
        if header.fingerprint.gpus.len() <= 1 {
            return Ok(gpus);
        }
        for (slot, info) in header.fingerprint.gpus.iter().enumerate() {
            let columns: Vec<Column> = (header.gpu_columns.iter())
                .map(|id| Column::Gpu { slot, id })
                .collect();
            let mut metrics = BTreeMap::new();
            for (column, m) in columns.iter().zip(self.sampled_all(&columns)?) {
                if let Some(m) = m {
                    metrics.insert(column.id().to_string(), m);
                }
            }
            gpus.insert(
                gpu_key(slot),
                GpuBaseline {
                    index: info.index,
                    name: info.name.clone(),
                    metrics,
                },
            );
        }
        Ok(gpus)
    }
}

/// Each derived feature averaged over the inputs that have a finite value.
fn mean_features(inputs: &[Run]) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for r in inputs {
        for (k, v) in &r.summary.features {
            if v.is_finite() {
                let e = sums.entry(k.clone()).or_insert((0.0, 0));
                e.0 += v;
                e.1 += 1;
            }
        }
    }
    sums.into_iter()
        .map(|(k, (s, n))| (k, s / n as f64))
        .collect()
}

/// How the runs were measured, and one entry per trace.
fn capture_settings(
    header: &Header,
    inputs: &[Run],
    runs: usize,
    multi_node: bool,
) -> CaptureSettings {
    CaptureSettings {
        interval_ms: header.interval_ms,
        warmup_ms: header.warmup_ms,
        duration_ms: header.duration_ms,
        steady_window: format!(
            "samples after the first {} ms of warm-up of each run, to the end of the recording; missing values skipped",
            header.warmup_ms
        ),
        runs,
        multi_node,
        command: header.command.clone(),
        sources: inputs
            .iter()
            .map(|r| SourceRun {
                trace: r.source.clone(),
                steady_start_ms: r.summary.steady_start_ms,
                steady_end_ms: r.summary.steady_end_ms,
                steady_samples: r.summary.steady_samples,
                total_samples: r.summary.total_samples,
                wall_time_s: r.summary.wall_time_s,
                startup_s: r.summary.startup_s,
                teardown_s: r.summary.teardown_s,
            })
            .collect(),
    }
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
        benchmark: None,
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
