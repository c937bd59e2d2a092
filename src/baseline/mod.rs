//! Baselines: the known-good statistics of a benchmark, stored as TOML in the
//! repository (`baselines/NAME.toml`) and reviewed in merge requests.
//!
//! Owns the schema, building a baseline from run traces, the review-friendly
//! TOML rendering (stable key order, 4 significant digits, header comment),
//! loading with `file: line L, column C` errors, and the never-lose-data
//! store (lock file, diff on replace, temp file + fsync + rename).
//!
//! What a metric entry holds: statistics pooled over all steady samples of
//! all runs (`n`, `mean`, `stdev`, percentiles), and each run's own summary
//! (`runs`), so the gate knows how much the statistic moves between two
//! runs of the same code (see `gate.rs` and docs/gating.md).

use crate::config::{toml_error, Config, UserMetricValue};
use crate::error::GateError;
use crate::metrics::{Direction, Statistic};
use crate::stats::{MetricSource, MetricStats, RunSummary};
use crate::trace::Trace;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Version of the baseline file format. Bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Significant digits kept in the TOML file: enough to gate at 0.1 %,
/// few enough that a re-capture does not rewrite every line.
pub const SIGNIFICANT_DIGITS: usize = 4;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub schema_version: u32,
    pub name: String,
    pub gate_version: String,
    /// When it was captured, RFC 3339 UTC.
    pub created: String,
    /// Commit of the code under test, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    pub environment: Environment,
    pub capture: CaptureSettings,
    /// Derived features (`diagnose::features`), averaged over runs, so rules
    /// can evaluate the baseline like a run.
    #[serde(default)]
    pub features: BTreeMap<String, f64>,
    /// GPU metrics aggregated over GPUs (per-sample mean), host metrics,
    /// `wall_time_s` and user metrics.
    #[serde(default)]
    pub metrics: BTreeMap<String, BaselineMetric>,
    /// Per-GPU metrics, keyed `gpu<slot>`; only when there are several GPUs
    /// (with one, the aggregate is that GPU).
    #[serde(default)]
    pub gpus: BTreeMap<String, GpuBaseline>,
}

/// What must match for a new run to be comparable, plus provenance.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    pub gpu_model: String,
    pub gpu_count: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_major: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_driver_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvml_version: Option<String>,
    #[serde(default)]
    pub gpm_supported: bool,
    #[serde(default)]
    pub hostname: String,
    #[serde(default)]
    pub cpu_model: String,
    #[serde(default)]
    pub cpu_count: u32,
    #[serde(default)]
    pub kernel: String,
    #[serde(default)]
    pub os: String,
}

impl Environment {
    pub fn from_fingerprint(fp: &crate::trace::Fingerprint) -> Environment {
        Environment {
            gpu_model: fp.gpu_model(),
            gpu_count: fp.gpus.len(),
            driver_version: fp.driver_version.clone(),
            driver_major: fp.driver_major(),
            cuda_driver_version: fp.cuda_driver_version.clone(),
            nvml_version: fp.nvml_version.clone(),
            gpm_supported: !fp.gpus.is_empty() && fp.gpus.iter().all(|g| g.gpm_supported),
            hostname: fp.host.hostname.clone(),
            cpu_model: fp.host.cpu_model.clone(),
            cpu_count: fp.host.cpu_count,
            kernel: fp.host.kernel.clone(),
            os: fp.host.os.clone(),
        }
    }

    /// Differences that make two runs incomparable: GPU model, GPU count,
    /// driver major version. Empty when comparable.
    pub fn mismatches(&self, other: &Environment) -> Vec<String> {
        let mut out = Vec::new();
        if self.gpu_model != other.gpu_model {
            out.push(format!(
                "GPU model '{}' (baseline) vs '{}' (this run)",
                self.gpu_model, other.gpu_model
            ));
        }
        if self.gpu_count != other.gpu_count {
            out.push(format!(
                "GPU count {} (baseline) vs {} (this run)",
                self.gpu_count, other.gpu_count
            ));
        }
        if self.driver_major != other.driver_major {
            out.push(format!(
                "driver major version {} (baseline) vs {} (this run)",
                self.driver_major.as_deref().unwrap_or("unknown"),
                other.driver_major.as_deref().unwrap_or("unknown")
            ));
        }
        out
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct CaptureSettings {
    pub interval_ms: u64,
    pub warmup_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Which samples the statistics use, in words.
    pub steady_window: String,
    /// Independent runs behind the statistics.
    pub runs: usize,
    /// The traces were the nodes of one run, not repeated runs.
    #[serde(default)]
    pub multi_node: bool,
    #[serde(default)]
    pub command: Vec<String>,
    /// One entry per trace, in order.
    #[serde(default)]
    pub sources: Vec<SourceRun>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct SourceRun {
    pub trace: String,
    pub steady_start_ms: f64,
    pub steady_end_ms: f64,
    pub steady_samples: usize,
    pub total_samples: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct GpuBaseline {
    pub index: u32,
    pub name: String,
    #[serde(default)]
    pub metrics: BTreeMap<String, BaselineMetric>,
}

/// One metric of a baseline.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BaselineMetric {
    pub unit: String,
    pub direction: Direction,
    /// The statistic the gate judged this metric on at capture time.
    pub statistic: Statistic,
    pub gated: bool,
    /// Steady samples pooled over all runs (for run-level metrics: runs).
    pub n: usize,
    pub mean: f64,
    pub stdev: f64,
    pub min: f64,
    pub p5: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    /// Each run's own summary, in capture order.
    pub runs: Vec<RunStat>,
}

/// One run's summary of one metric.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RunStat {
    /// This run's value of the metric's `statistic`.
    pub value: f64,
    pub n: usize,
    pub mean: f64,
    /// 95 % half-width of this run's mean (batch means), when n allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95: Option<f64>,
    pub p5: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
}

impl RunStat {
    pub fn from_stats(s: &MetricStats, statistic: Statistic) -> RunStat {
        RunStat {
            value: s.get(statistic),
            n: s.n,
            mean: s.mean,
            ci95: s.mean_ci95,
            p5: s.p5,
            p50: s.p50,
            p95: s.p95,
            p99: s.p99,
            min: s.min,
            max: s.max,
        }
    }

    pub fn get(&self, stat: Statistic) -> f64 {
        self.as_stats().get(stat)
    }

    /// The same numbers as `MetricStats`, so one lookup serves both.
    fn as_stats(&self) -> MetricStats {
        MetricStats {
            n: self.n,
            mean: self.mean,
            stdev: 0.0,
            min: self.min,
            p5: self.p5,
            p50: self.p50,
            p95: self.p95,
            p99: self.p99,
            max: self.max,
            mean_ci95: self.ci95,
        }
    }
}

impl BaselineMetric {
    /// A statistic by name ("mean", "p95", "stdev", "n"...), as the rules read it.
    pub fn get_named(&self, name: &str) -> Option<f64> {
        MetricStats {
            n: self.n,
            mean: self.mean,
            stdev: self.stdev,
            min: self.min,
            p5: self.p5,
            p50: self.p50,
            p95: self.p95,
            p99: self.p99,
            max: self.max,
            mean_ci95: None,
        }
        .get_named(name)
    }
}

impl MetricSource for Baseline {
    fn stat(&self, metric: &str, stat: &str, gpu: Option<usize>) -> Option<f64> {
        self.metric(metric, gpu)?.get_named(stat)
    }

    fn feature(&self, name: &str) -> Option<f64> {
        self.features.get(name).copied()
    }

    fn gpu_count(&self) -> usize {
        self.environment.gpu_count
    }
}

impl Baseline {
    /// A metric of GPU slot `gpu`, or the aggregate/host/run-level entry for
    /// None. With a single GPU, slot 0 is the aggregate.
    pub fn metric(&self, id: &str, gpu: Option<usize>) -> Option<&BaselineMetric> {
        match gpu {
            None => self.metrics.get(id),
            Some(g) => match self.gpus.get(&gpu_key(g)) {
                Some(gb) => gb.metrics.get(id),
                None if g == 0 && self.environment.gpu_count <= 1 => self.metrics.get(id),
                None => None,
            },
        }
    }
}

pub fn gpu_key(slot: usize) -> String {
    format!("gpu{slot}")
}

/// Steady-window series of one column of one trace (NaN = missing, kept so
/// batch means see the real time structure; `from_series` skips NaN).
pub enum Column<'a> {
    Gpu {
        slot: usize,
        id: &'a str,
    },
    /// Per-sample mean over the trace's GPUs.
    GpuMean {
        id: &'a str,
    },
    Host {
        id: &'a str,
    },
}

pub fn steady_series(trace: &Trace, column: &Column) -> Vec<f64> {
    let steady = (0..trace.sample_count()).filter(|&i| !trace.warmup[i]);
    match *column {
        Column::Gpu { slot, id } => match trace.gpu_column(id) {
            Some(col) if slot < trace.gpu_count() => steady
                .map(|i| trace.gpu_value(i, slot, col) as f64)
                .collect(),
            _ => Vec::new(),
        },
        Column::GpuMean { id } => match trace.gpu_column(id) {
            Some(col) => steady.map(|i| trace.gpu_mean_at(i, col)).collect(),
            None => Vec::new(),
        },
        Column::Host { id } => match trace.host_column(id) {
            Some(col) => steady.map(|i| trace.host_value(i, col) as f64).collect(),
            None => Vec::new(),
        },
    }
}

/// One measured run (or node) with what the commands derived from it.
pub struct RunInput<'a> {
    pub trace: &'a Trace,
    /// `stats::summarize` plus user metrics and features.
    pub summary: RunSummary,
    pub user: BTreeMap<String, UserMetricValue>,
}

impl<'a> RunInput<'a> {
    /// The single place a run is summarised before it is judged or stored:
    /// statistics, diagnosis features and the user metrics of `config`.
    pub fn new(trace: &'a Trace, config: &Config) -> RunInput<'a> {
        let mut summary = crate::diagnose::run_summary(trace);
        let user = config.user_metric_values(trace);
        summary.user_metrics = user.iter().map(|(k, v)| (k.clone(), v.value)).collect();
        RunInput {
            trace,
            summary,
            user,
        }
    }
}

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

fn metric_entry(
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

// ---------------------------------------------------------------- rendering

/// The review-friendly TOML text of a baseline: header comment, fields in
/// schema order, maps sorted, floats at `SIGNIFICANT_DIGITS`, each run's
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
        comment_safe(&b.name),
        SCHEMA_VERSION,
        comment_safe(&b.gate_version)
    ));
    out.push_str("# Refresh it (after an intended performance change) with:\n");
    out.push_str(&format!("#   {}\n", comment_safe(refresh_hint)));
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
            s.push_str(&shell_word(a));
        }
    }
    s
}

fn shell_word(a: &str) -> String {
    if !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

/// Comments cannot hold line breaks or control characters.
fn comment_safe(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
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
        quote(k)
    }
}

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Round to `SIGNIFICANT_DIGITS` and print the shortest text that reads
/// back as that number (always with a decimal point: it is a float).
pub fn format_float(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let rounded: f64 = format!("{:.*e}", SIGNIFICANT_DIGITS - 1, v)
        .parse()
        .unwrap_or(v);
    let rounded = if rounded == 0.0 { 0.0 } else { rounded }; // no "-0.0"
    let s = format!("{rounded}");
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
}

fn value_text(v: &toml::Value, top: bool) -> String {
    match v {
        toml::Value::String(s) => quote(s),
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

/// Baseline names become file names and JUnit class names: keep them plain.
pub fn validate_name(name: &str) -> Result<(), GateError> {
    if crate::config::valid_name(name) && name.len() <= 128 {
        Ok(())
    } else {
        Err(GateError::usage(format!(
            "baseline name '{}' may only use letters, digits, '.', '_' and '-' (e.g. resnet50-h200)",
            name.escape_debug()
        )))
    }
}

/// Load a baseline file; a missing file names the capture command to run.
pub fn load(path: &Path, name_hint: &str) -> Result<Baseline, GateError> {
    let text = crate::files::read_input_string(path, crate::limits::MAX_BASELINE_BYTES).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            let dir = path
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            GateError::usage(format!(
                "baseline '{name_hint}' not found in '{dir}/'; run 'gate capture --baseline {name_hint}' first"
            ))
        } else {
            GateError::bad_file(path, format!("cannot read baseline: {e}"))
        }
    })?;
    parse(&text, &path.display().to_string())
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
            let (l, c) = crate::config::line_col(text, v.span().start);
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
    toml::from_str(text).map_err(|e| toml_error(origin, text, &e, recapture))
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
///   renamed over the target (atomic on POSIX), and the directory fsynced.
pub fn store(path: &Path, text: &str, replace: bool) -> Result<StoreOutcome, GateError> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let io_err = |what: &str, e: std::io::Error| {
        GateError::usage(format!(
            "{what} '{}': {e}; pass --baseline-dir to a writable directory",
            path.display()
        ))
    };
    std::fs::create_dir_all(&dir).map_err(|e| io_err("cannot create the directory of", e))?;
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let _lock = LockGuard::acquire(PathBuf::from(lock_path))
        .map_err(|e| io_err("cannot lock (NAME.toml.lock)", e))?;

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
        .prefix(".gate-baseline-")
        .suffix(".tmp")
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
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)?;
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
pub fn unified_diff(old: &str, new: &str, label: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{label}"), &format!("b/{label}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_baseline() -> Baseline {
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
            gate_version: "0.1.0".into(),
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
                    wall_time_s: Some(12.5),
                }],
                ..Default::default()
            },
            features,
            metrics,
            gpus: BTreeMap::new(),
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
            text.contains("\"gpu_busy_pct.idle_frac\" = 0.01235"),
            "{text}"
        );
        assert!(text.contains("runs = [\n  { value = "), "{text}");
        let back = parse(&text, "demo.toml").unwrap();
        assert_eq!(back.name, "demo");
        assert_eq!(back.tags["model"], "resnet \"50\"");
        let m = &back.metrics["sm_active_pct"];
        assert_eq!(m.runs.len(), 2);
        assert!((m.mean - b.metrics["sm_active_pct"].mean).abs() < 0.01);
        // Same input, same text: stable order.
        assert_eq!(
            text,
            to_toml(&back, &refresh_hint("demo", &b.capture.command))
        );
    }

    #[test]
    fn floats_keep_four_significant_digits() {
        assert_eq!(format_float(97.12345), "97.12");
        assert_eq!(format_float(20270.4), "20270.0");
        assert_eq!(format_float(0.000123456), "0.0001235");
        assert_eq!(format_float(3.0), "3.0");
        assert_eq!(format_float(-0.00001), "-0.00001");
        assert_eq!(format_float(1234567.0), "1235000.0");
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
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
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

    #[test]
    fn names_are_validated() {
        assert!(validate_name("resnet50-h200.v2").is_ok());
        assert!(validate_name("../etc/passwd").is_err());
        assert!(validate_name("a b").is_err());
        assert!(validate_name("").is_err());
    }
}
