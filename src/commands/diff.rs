//! `gate diff A B`: two baselines (or a baseline and a trace, or two
//! traces) side by side: environment differences, each metric's change,
//! marked gated or context as `check` would judge it (`gate::is_gated`),
//! and with `--toml-diff` the unified diff of their TOML text (what a
//! reviewer sees in a merge request when a baseline is refreshed; some
//! 1,200 lines for a re-capture). Informational: exit 0.

use super::Format;
use crate::baseline::{self, Baseline, BuildMeta};
use crate::config::Config;
use crate::error::GateError;
use crate::format::number as fmt_num;
use crate::format::value_with_unit;
use crate::metrics;
use crate::summary::Run;
use crate::trace::Trace;
use clap::Args;
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Baseline file, baseline name (in --baseline-dir) or trace (.jsonl or .jsonl.zst)
    #[arg(value_name = "A")]
    pub a: String,

    /// Baseline file, baseline name (in --baseline-dir) or trace (.jsonl or .jsonl.zst)
    #[arg(value_name = "B")]
    pub b: String,

    /// Directory of baseline files, for names
    #[arg(long, value_name = "DIR", default_value = "baselines")]
    pub baseline_dir: PathBuf,

    /// Gating policy file (which statistic each metric is compared on) [default: gate.toml, optional]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Output format on stdout
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,

    /// Also show the unified diff of the two TOML texts
    #[arg(long)]
    pub toml_diff: bool,
}

/// One side: the baseline and the TOML text it was read from (or rendered to).
struct Side {
    label: String,
    baseline: Baseline,
    text: String,
}

/// A trace, plain (`.jsonl`) or zstd-compressed (`.jsonl.zst`, as `record
/// -o F.jsonl.zst` and `watch` write it), by name or by its first bytes.
fn is_trace(path: &Path) -> bool {
    if path.extension().is_some_and(|e| e == "jsonl") || crate::trace::is_compressed_path(path) {
        return true;
    }
    // A trace's first byte is '{' (its JSON header); a baseline's is '#' or
    // a key. Only the start is read: the file may be a large trace.
    use std::io::Read;
    let mut head = Vec::new();
    crate::files::open_input(path, crate::limits::MAX_TRACE_BYTES)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .ok()
        .and_then(|_| {
            // zstd's frame magic: a compressed trace under another name.
            if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
                return Some(b'{');
            }
            head.iter().copied().find(|c| !c.is_ascii_whitespace())
        })
        == Some(b'{')
}

fn resolve(arg: &str, dir: &Path, config: &Config) -> anyhow::Result<Side> {
    let as_path = PathBuf::from(arg);
    if as_path.is_file() {
        if is_trace(&as_path) {
            // Derived, then the trace dropped: the rest reads the Run.
            let input = Run::derive(&Trace::load(&as_path)?, config);
            let name = as_path
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .map(|n| {
                    n.trim_end_matches(".zst")
                        .trim_end_matches(".jsonl")
                        .to_string()
                })
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "trace".into());
            // Deterministic: the trace's own start time, not "now".
            let meta = BuildMeta {
                created: input.header.start_time.clone(),
                ..Default::default()
            };
            let b = baseline::build(&name, &[input], config, false, &meta)?;
            let text = baseline::to_toml(&b, &baseline::refresh_hint(&name, &b.capture.command));
            return Ok(Side {
                label: arg.to_string(),
                baseline: b,
                text,
            });
        }
        let text = crate::files::read_input_string(&as_path, crate::limits::MAX_BASELINE_BYTES)
            .map_err(|e| GateError::bad_file(&as_path, format!("cannot read: {e}")))?;
        let b = baseline::parse(&text, arg)?;
        return Ok(Side {
            label: arg.to_string(),
            baseline: b,
            text,
        });
    }
    if baseline::validate_name(arg).is_ok() {
        let path = baseline::path_for(dir, arg);
        let b = baseline::load(&path, arg)?;
        let text = crate::files::read_input_string(&path, crate::limits::MAX_BASELINE_BYTES)
            .unwrap_or_default();
        return Ok(Side {
            label: path.display().to_string(),
            baseline: b,
            text,
        });
    }
    Err(GateError::usage(format!(
        "'{arg}' is neither a file nor a baseline name; give a baseline .toml, a trace .jsonl or .jsonl.zst, or a name in '{}'",
        dir.display()
    ))
    .into())
}

#[derive(Debug, Serialize)]
struct MetricDiff {
    id: String,
    /// A harness benchmark's own name (`test_sum[0]`), as the baselines keep it.
    #[serde(skip_serializing_if = "Option::is_none")]
    benchmark: Option<String>,
    unit: String,
    statistic: String,
    gated: bool,
    a: Option<f64>,
    b: Option<f64>,
    change: Option<f64>,
    change_pct: Option<f64>,
}

#[derive(Debug, Serialize)]
struct DiffReport {
    schema_version: u32,
    a: String,
    b: String,
    environment_differences: Vec<String>,
    metrics: Vec<MetricDiff>,
    /// With --toml-diff only.
    #[serde(skip_serializing_if = "Option::is_none")]
    toml_diff: Option<String>,
}

pub fn run(args: DiffArgs) -> anyhow::Result<i32> {
    DiffPlan::build(&args)?.execute()
}

/// A comparison, built once from its flags: gate.toml and both sides
/// read (a baseline by name or file, or a trace summarised as one).
struct DiffPlan {
    config: Config,
    a: Side,
    b: Side,
    format: Format,
    toml_diff: bool,
}

impl DiffPlan {
    fn build(args: &DiffArgs) -> anyhow::Result<DiffPlan> {
        let config = Config::from_flag(args.config.as_deref())?;
        Ok(DiffPlan {
            a: resolve(&args.a, &args.baseline_dir, &config)?,
            b: resolve(&args.b, &args.baseline_dir, &config)?,
            config,
            format: args.format,
            toml_diff: args.toml_diff,
        })
    }

    /// Compare the sides metric by metric; print the report.
    fn execute(&self) -> anyhow::Result<i32> {
        let (config, a, b) = (&self.config, &self.a, &self.b);
        let ids = metric_ids(config, &a.baseline, &b.baseline);
        let report = DiffReport {
            schema_version: crate::gate::REPORT_SCHEMA_VERSION,
            a: a.label.clone(),
            b: b.label.clone(),
            environment_differences: a
                .baseline
                .environment
                .mismatches(&b.baseline.environment)
                .into_iter()
                .map(|m| m.replace("(baseline)", "(A)").replace("(this run)", "(B)"))
                .collect(),
            metrics: metric_rows(config, &a.baseline, &b.baseline, ids),
            toml_diff: self.toml_diff.then(|| toml_diff(a, b)),
        };
        match self.format {
            Format::Json => {
                crate::console::out(&format!("{}\n", serde_json::to_string_pretty(&report)?));
            }
            Format::Text => crate::console::out(&render_text(&report)),
        }
        Ok(crate::exit_code::PASS)
    }
}

/// The metrics to compare: catalogue order first (first-class on top),
/// then anything else either side has.
fn metric_ids(config: &Config, a: &Baseline, b: &Baseline) -> Vec<String> {
    let seen = a.metrics.keys().chain(b.metrics.keys());
    let mut ids: Vec<String> = std::iter::once(metrics::WALL_TIME.id.to_string())
        .chain(config.user_metric_ids(seen))
        .chain(
            metrics::GPU_METRICS
                .iter()
                .chain(metrics::HOST_METRICS.iter())
                .map(|d| d.id.to_string()),
        )
        .collect();
    for id in a.metrics.keys().chain(b.metrics.keys()) {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    ids
}

/// One row per metric either side has, gated as check would gate it.
fn metric_rows(config: &Config, a: &Baseline, b: &Baseline, ids: Vec<String>) -> Vec<MetricDiff> {
    // As check: a benchmark metric of gate.toml that both sides measured
    // decides, and the sampled counters are context.
    let policy = |id: &str| config.policy(id, None);
    let benchmark_decides = ids.iter().any(|id| {
        policy(id).is_some_and(|p| crate::gate::decides_the_run(id, p.first_class))
            && a.metrics.contains_key(id)
            && b.metrics.contains_key(id)
    });
    let mut rows = Vec::new();
    for id in ids {
        let (ma, mb) = (a.metrics.get(&id), b.metrics.get(&id));
        if ma.is_none() && mb.is_none() {
            continue;
        }
        let template = ma.or(mb).expect("one side has it");
        let (statistic, unit, gated) = match policy(&id) {
            Some(p) => (
                p.statistic,
                p.unit,
                crate::gate::is_gated(p.gated, p.first_class, benchmark_decides),
            ),
            // A column this gate does not know: reported, never gated (as check).
            None => (template.statistic, template.unit.clone(), false),
        };
        let val = |m: Option<&baseline::BaselineMetric>| {
            m.and_then(|m| crate::gate::Observation::from_baseline(m, statistic))
                .map(|o| o.value)
        };
        let (va, vb) = (val(ma), val(mb));
        let change = va.zip(vb).map(|(x, y)| y - x);
        rows.push(MetricDiff {
            benchmark: template.benchmark.clone(),
            id,
            unit,
            statistic: statistic.as_str().to_string(),
            gated,
            a: va,
            b: vb,
            change,
            change_pct: va
                .zip(vb)
                .filter(|(x, _)| *x != 0.0)
                .map(|(x, y)| (y - x) / x.abs() * 100.0),
        });
    }
    rows
}

/// The unified diff of the two sides' TOML (--toml-diff).
fn toml_diff(a: &Side, b: &Side) -> String {
    similar::TextDiff::from_lines(&a.text, &b.text)
        .unified_diff()
        .context_radius(3)
        // The header is one line each: a file name may hold a line break.
        .header(
            &crate::escape::terminal(&a.label),
            &crate::escape::terminal(&b.label),
        )
        .to_string()
}

fn render_text(r: &DiffReport) -> String {
    // Paths, metric ids, units, environment strings and the TOML text all
    // came from the two files: each goes through escape::terminal.
    let t = crate::escape::terminal;
    let mut out = format!("A: {}\nB: {}\n", t(&r.a), t(&r.b));
    for d in &r.environment_differences {
        out.push_str(&format!("environment: {}\n", t(d)));
    }
    out.push('\n');
    let header = ["metric", "stat", "A", "B", "change", "in check"].map(String::from);
    let rows: Vec<[String; 6]> = r
        .metrics
        .iter()
        .map(|m| {
            [
                t(&crate::metric_sources::shown_name(
                    &m.id,
                    m.benchmark.as_deref(),
                )),
                t(&m.statistic),
                t(&value_with_unit(m.a, &m.unit)),
                t(&value_with_unit(m.b, &m.unit)),
                match (m.change_pct, m.change) {
                    (Some(p), _) => format!("{} %", crate::format::percent_change(p)),
                    (None, Some(c)) => format!("{}{}", if c >= 0.0 { "+" } else { "" }, fmt_num(c)),
                    _ => String::new(),
                },
                if m.gated { "gated" } else { "context" }.to_string(),
            ]
        })
        .collect();
    let mut width = [0usize; 6];
    for row in std::iter::once(&header).chain(rows.iter()) {
        for (i, c) in row.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(rows.iter()) {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = " ".repeat(width[i] - c.chars().count());
                if (2..=4).contains(&i) {
                    format!("{pad}{c}")
                } else {
                    format!("{c}{pad}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    match &r.toml_diff {
        None => out.push_str("\n(--toml-diff shows the diff of the two TOML texts)\n"),
        Some(diff) if diff.is_empty() => out.push_str("\nTOML diff:\n(identical)\n"),
        Some(diff) => {
            out.push_str("\nTOML diff:\n");
            for line in diff.lines() {
                out.push_str(&t(line));
                out.push('\n');
            }
        }
    }
    out
}
