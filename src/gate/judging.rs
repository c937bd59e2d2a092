//! Metric judging: each metric's policy resolved once (`Policies`), both
//! sides' observations collected, and every metric judged by the decision
//! rule (`decide::judge`) into a `MetricResult`.

use super::decide::{judge, Observation, Prior, Verdict, Why};
use super::report::MetricResult;
use super::CheckInput;
use crate::baseline::{Baseline, BaselineMetric};
use crate::config::verdict::Policy;
use crate::config::Config;
use crate::metrics::{self, Direction, Statistic};
use crate::stats::MetricStats;
use crate::summary::Run;
use std::collections::BTreeMap;

/// The baseline's observation of `statistic`: each run's value and interval
/// (the pooled statistic, without interval, for a baseline without runs).
pub(crate) fn baseline_observation(
    m: &BaselineMetric,
    statistic: Statistic,
) -> Option<Observation> {
    Observation::from_baseline(m, statistic)
}

impl Observation {
    /// See `baseline_observation`.
    pub(crate) fn from_baseline(m: &BaselineMetric, statistic: Statistic) -> Option<Observation> {
        if m.runs.is_empty() {
            let v = m.get_stat(statistic.into());
            return Observation::from_runs(&[(v, None)]);
        }
        let per_run: Vec<(f64, Option<f64>)> =
            m.runs.iter().map(|r| (r.get(statistic), r.ci95)).collect();
        Observation::from_runs(&per_run)
    }
}

/// Where a metric lives, for extracting values from runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Kind {
    Sampled,
    WallTime,
    User,
}

pub(super) fn kind_of(id: &str, config: &Config) -> Kind {
    if id == metrics::WALL_TIME.id {
        Kind::WallTime
    } else if config.is_user_metric(id) {
        Kind::User
    } else {
        Kind::Sampled
    }
}

/// A run's `(statistic, ci95)` of `id` on `gpu` (None = aggregate/host).
pub(super) fn run_value(
    r: &Run,
    id: &str,
    kind: Kind,
    gpu: Option<usize>,
    stat: Statistic,
) -> Option<(f64, Option<f64>)> {
    let of = |m: &MetricStats| (m.get(stat), m.mean_ci95);
    match (kind, gpu) {
        (Kind::WallTime, None) => r.summary.wall_time_s.map(|v| (v, None)),
        (Kind::User, None) => r.user.get(id).map(|u| (u.value, u.ci95)),
        (Kind::Sampled, None) => r
            .summary
            .gpu_aggregate
            .get(id)
            .or_else(|| r.summary.host.get(id))
            .map(of),
        (Kind::Sampled, Some(g)) => r.summary.gpus.get(g)?.metrics.get(id).map(of),
        _ => None,
    }
}

/// The new side's observation over a set of runs (or nodes).
pub(super) fn observe(
    runs: &[&Run],
    id: &str,
    kind: Kind,
    gpu: Option<usize>,
    stat: Statistic,
    nodes: bool,
) -> Option<Observation> {
    let per: Vec<(f64, Option<f64>)> = runs
        .iter()
        .filter_map(|r| run_value(r, id, kind, gpu, stat))
        .collect();
    if nodes && kind == Kind::WallTime {
        // A multi-node run takes as long as its slowest node.
        let max = per.iter().map(|p| p.0).fold(f64::NAN, f64::max);
        return Observation::from_runs(&[(max, None)]);
    }
    let o = Observation::from_runs(&per)?;
    // The nodes of one run are not repeats: their spread is not noise.
    Some(if nodes { o.nodes() } else { o })
}

/// Every metric's effective policy, resolved once per check from the
/// catalogue, `gate.toml` and `--threshold` (the same for every GPU, node
/// and run), plus what the baseline says it gated at capture time.
pub(crate) struct Policies {
    by_id: BTreeMap<String, Policy>,
    /// Where the baseline's recorded statistic or gating differs from the
    /// policy judged now, one entry per metric: (id, baseline's, now).
    pub(crate) drifted: Vec<(String, String, String)>,
}

impl Policies {
    pub fn resolve<'i>(
        ids: impl IntoIterator<Item = &'i String>,
        config: &Config,
        cli_threshold: Option<f64>,
        baseline: &Baseline,
    ) -> Policies {
        let mut by_id = BTreeMap::new();
        let mut drifted = Vec::new();
        for id in ids {
            let p = config
                .policy(id, cli_threshold)
                .unwrap_or_else(|| unknown_column(id, baseline));
            // gate.toml (from the target branch) is authoritative; a baseline
            // captured under another policy is judged by today's, and says so.
            if let Some(m) = baseline.metrics.get(id) {
                if m.statistic != p.statistic {
                    drifted.push((
                        id.clone(),
                        format!("statistic {}", m.statistic.as_str()),
                        format!("statistic {}", p.statistic.as_str()),
                    ));
                }
                if m.gated != p.gated {
                    let word = |g: bool| if g { "gated" } else { "not gated" };
                    drifted.push((id.clone(), word(m.gated).into(), word(p.gated).into()));
                }
            }
            by_id.insert(id.clone(), p);
        }
        Policies { by_id, drifted }
    }

    pub fn get(&self, id: &str) -> &Policy {
        &self.by_id[id]
    }
}

/// A column this gate's catalogue does not know (a newer recorder): report,
/// never gate.
pub(super) fn unknown_column(id: &str, baseline: &Baseline) -> Policy {
    Policy {
        id: id.to_string(),
        unit: baseline
            .metrics
            .get(id)
            .map(|m| m.unit.clone())
            .unwrap_or_default(),
        direction: Direction::Neutral,
        statistic: Statistic::Mean,
        relative: 0.0,
        absolute: 0.0,
        gated: false,
        first_class: false,
        explicit: false,
    }
}

pub(super) fn compare(
    policy: &Policy,
    base: Option<&BaselineMetric>,
    new: Option<Observation>,
    node: Option<usize>,
    gpu: Option<usize>,
    prior: &Prior,
) -> Option<MetricResult> {
    let base_obs = base.and_then(|m| baseline_observation(m, policy.statistic));
    let runs = |o: &Option<Observation>| {
        o.as_ref()
            .map_or(0, |o| if o.repeats { o.runs.len() } else { 1 })
    };
    let mut r = MetricResult {
        id: policy.id.clone(),
        benchmark: base.and_then(|m| m.benchmark.clone()),
        node,
        gpu,
        unit: policy.unit.clone(),
        direction: policy.direction,
        statistic: policy.statistic,
        gated: policy.gated,
        first_class: policy.first_class,
        baseline: base_obs.as_ref().map(|o| o.value),
        new: new.as_ref().map(|o| o.value),
        change: None,
        change_pct: None,
        threshold_rel: policy.relative,
        threshold_abs: policy.absolute,
        threshold_explicit: policy.explicit,
        tolerance: None,
        noise: None,
        noise_source: None,
        detectable: None,
        z: None,
        baseline_runs: runs(&base_obs),
        new_runs: runs(&new),
        verdict: Verdict::Info,
        why: Why::NotGated,
        accepted: None,
    };
    match (&base_obs, &new) {
        (None, None) => return None,
        (Some(b), Some(n)) => {
            let j = judge(policy, b, n, prior);
            r.change = Some(j.delta);
            r.change_pct = (b.value != 0.0).then(|| j.delta / b.value.abs() * 100.0);
            r.tolerance = Some(j.floor);
            r.noise = j.noise.map(|n| n.band);
            r.noise_source = j.noise.map(|n| n.source);
            r.detectable = j.noise.map(|n| super::detectable::minimum_detectable(&n));
            r.z = j.z();
            r.verdict = j.verdict;
            r.why = j.why;
        }
        (None, Some(_)) => {
            r.why = Why::NotInBaseline;
            if policy.gated {
                r.verdict = Verdict::Missing;
            }
        }
        (Some(_), None) => {
            r.why = Why::NotMeasured;
            if policy.gated {
                r.verdict = Verdict::Missing;
            }
        }
    }
    Some(r)
}

/// `compare`, judged on the per-round differences of `gate ab` when both
/// sides have the metric in a complete round (`paired`); A's runs are the
/// baseline's, so a metric missing on one side is `compare`'s verdict.
pub(super) fn compare_paired(
    policy: &Policy,
    base: Option<&BaselineMetric>,
    new: Option<Observation>,
    gpu: Option<usize>,
    prior: &Prior,
    pairs: Option<super::paired::Pairs>,
) -> Option<MetricResult> {
    let mut r = compare(policy, base, new, None, gpu, prior)?;
    let (Some(p), Some(_)) = (pairs, r.baseline.zip(r.new)) else {
        return Some(r);
    };
    let j = super::paired::judge_paired(policy, &p, prior.looks);
    let a = p.mean_a();
    r.baseline = Some(a);
    r.new = Some(p.mean_b());
    r.change = Some(j.delta);
    r.change_pct = (a != 0.0).then(|| j.delta / a.abs() * 100.0);
    r.tolerance = Some(j.floor);
    r.noise = j.noise.map(|n| n.band);
    r.noise_source = j.noise.map(|n| n.source);
    r.z = j.z();
    r.verdict = j.verdict;
    r.why = j.why;
    r.baseline_runs = p.len();
    r.new_runs = p.len();
    Some(r)
}

/// Each round's A and B values of one metric (`gate ab`).
fn pairs_of(
    a_runs: &[Run],
    b_runs: &[Run],
    id: &str,
    kind: Kind,
    gpu: Option<usize>,
    stat: Statistic,
) -> Option<super::paired::Pairs> {
    super::paired::Pairs::new(a_runs.iter().zip(b_runs).map(|(a, b)| {
        (
            run_value(a, id, kind, gpu, stat),
            run_value(b, id, kind, gpu, stat),
        )
    }))
}

/// Each complete round's `B - A` of metric `id` (aggregate), in round
/// order: what `gate ab`'s report lists beside the interval.
pub(crate) fn round_differences(
    config: &Config,
    a_runs: &[Run],
    b_runs: &[Run],
    id: &str,
    stat: Statistic,
) -> Vec<f64> {
    pairs_of(a_runs, b_runs, id, kind_of(id, config), None, stat)
        .map(|p| p.differences())
        .unwrap_or_default()
}

/// Whether a metric is gated (fails a run) or context, as `check` judges
/// and `gate diff` marks it: `gated` is its policy (catalogue, gate.toml),
/// `decides` whether a benchmark metric declared in gate.toml could be
/// judged (`decides_the_run`); it outranks the sampled counters.
pub(crate) fn is_gated(gated: bool, first_class: bool, benchmark_decides: bool) -> bool {
    gated && (first_class || !benchmark_decides)
}

/// A metric that decides the run when it can be judged: declared in
/// gate.toml as the benchmark's own number. Wall time does not decide: a
/// fixed-length benchmark takes as long when it does less work.
pub(crate) fn decides_the_run(id: &str, first_class: bool) -> bool {
    first_class && id != metrics::WALL_TIME.id
}

/// The metrics of this check in report order: the benchmark's own numbers
/// (wall time, user metrics), then the catalogue's sampled metrics, then
/// columns this catalogue does not know (a newer recorder).
pub(super) fn metric_ids(input: &CheckInput) -> (Vec<String>, Vec<String>) {
    // Glob tables' metrics are the benchmarks the runs and the baseline have.
    let seen = input
        .runs
        .iter()
        .flat_map(|r| r.user.keys())
        .chain(input.baseline.metrics.keys());
    let first_class: Vec<String> = std::iter::once(metrics::WALL_TIME.id.to_string())
        .chain(input.config.user_metric_ids(seen))
        .collect();
    let mut sampled: Vec<String> = metrics::GPU_METRICS
        .iter()
        .chain(metrics::HOST_METRICS.iter())
        .map(|d| d.id.to_string())
        .collect();
    for r in input.runs {
        for id in r.summary.gpu_aggregate.keys().chain(r.summary.host.keys()) {
            if !sampled.contains(id) {
                sampled.push(id.clone());
            }
        }
    }
    (first_class, sampled)
}

/// What the noise band of metric `id` knows beyond the runs: the looks of
/// the sequential test, and the history's healthy runs (kept per
/// aggregate metric: `""` asks for none, per GPU and per node).
pub(super) fn prior_of(input: &CheckInput, id: &str) -> Prior {
    Prior {
        history: input.history_spread.get(id).copied(),
        looks: input.looks.max(1),
    }
}

/// One metric over all runs (or over the nodes of one run) against the
/// baseline, on the per-round differences when A's runs are given (`gate ab`).
fn judge_aggregate(
    input: &CheckInput,
    id: &str,
    p: &Policy,
    all: &[&Run],
    a_runs: Option<&[Run]>,
) -> Option<MetricResult> {
    let kind = kind_of(id, input.config);
    let new = observe(all, id, kind, None, p.statistic, input.multi_node);
    let prior = prior_of(input, id);
    let base = input.baseline.metric(id, None);
    match a_runs {
        Some(a) => {
            let pairs = pairs_of(a, input.runs, id, kind, None, p.statistic);
            compare_paired(p, base, new, None, &prior, pairs)
        }
        None => compare(p, base, new, None, None, &prior),
    }
}

/// Every metric judged: the aggregate (over runs, or over the nodes of one
/// run), then per GPU when there are several (one straggler fails the run
/// even when the average hides it), then per node; context (ungated) last.
pub(super) fn judge_metrics(
    input: &CheckInput,
    policies: &Policies,
    first_class: &[String],
    sampled: &[String],
    a_runs: Option<&[Run]>,
) -> Vec<MetricResult> {
    let b = input.baseline;
    let runs_all = input.runs;
    let all: Vec<&Run> = input.runs.iter().collect();
    let mut results: Vec<MetricResult> = Vec::new();
    let mut context: Vec<MetricResult> = Vec::new();
    for id in first_class.iter().chain(sampled.iter()) {
        if let Some(r) = judge_aggregate(input, id, policies.get(id), &all, a_runs) {
            if r.gated {
                results.push(r);
            } else {
                context.push(r);
            }
        }
    }
    let ngpu = input
        .runs
        .iter()
        .map(|r| r.summary.gpus.len())
        .max()
        .unwrap_or(0);
    let per_gpu = |runs: &[&Run], node: Option<usize>, out: &mut Vec<MetricResult>| {
        if ngpu < 2 {
            return;
        }
        for g in 0..ngpu {
            for d in metrics::GPU_METRICS {
                let p = policies.get(d.id);
                if !p.gated {
                    continue;
                }
                let new = observe(runs, d.id, Kind::Sampled, Some(g), p.statistic, false);
                let prior = prior_of(input, "");
                let base = b.metric(d.id, Some(g));
                let judged = match a_runs {
                    Some(a) => {
                        let pairs =
                            pairs_of(a, runs_all, d.id, Kind::Sampled, Some(g), p.statistic);
                        compare_paired(p, base, new, Some(g), &prior, pairs)
                    }
                    None => compare(p, base, new, node, Some(g), &prior),
                };
                if let Some(r) = judged {
                    out.push(r);
                }
            }
        }
    };
    if !input.multi_node {
        per_gpu(&all, None, &mut results);
    } else {
        // Each node judged on its own against the baseline (a node's run).
        for (i, r) in input.runs.iter().enumerate() {
            let one = [r];
            for id in first_class.iter().chain(sampled.iter()) {
                let p = policies.get(id);
                if !p.gated {
                    continue;
                }
                let new = observe(
                    &one,
                    id,
                    kind_of(id, input.config),
                    None,
                    p.statistic,
                    false,
                );
                let prior = prior_of(input, "");
                if let Some(m) = compare(p, b.metric(id, None), new, Some(i), None, &prior) {
                    results.push(m);
                }
            }
            per_gpu(&one, Some(i), &mut results);
        }
    }
    results.extend(context);
    results
}
