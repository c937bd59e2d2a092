//! The explanation of one run, as `gate report` shows it: panorama, ranked
//! suspects, processes on each GPU, and p50/p99/max of every metric. Built
//! once from a trace (pure), then rendered as text, Markdown, JSON or HTML.

pub mod html;

use crate::diagnose::panorama::{self, Panorama};
use crate::diagnose::{Finding, RuleSet, Severity};
use crate::metrics;
use crate::stats::{MetricStats, RunSummary};
use crate::trace::Trace;
use serde::Serialize;
use std::collections::BTreeMap;

pub const REPORT_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize)]
pub struct GpuLabel {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    pub gpm_supported: bool,
}

/// One process seen on a GPU, merged over all `processes` records.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessRow {
    pub gpu: u32,
    pub pid: u32,
    pub name: String,
    pub cmdline: String,
    pub in_target: bool,
    pub first_seen_s: f64,
    pub last_seen_s: f64,
    /// Mean SM share over the records that had one.
    pub sm_share_pct: Option<f64>,
    pub gpu_mem_mib_max: Option<f64>,
    pub cpu_pct_mean: Option<f64>,
    pub rss_mib_max: Option<f64>,
}

/// p50/p99/max (and mean, n) of one metric in one scope.
#[derive(Debug, Clone, Serialize)]
pub struct StatRow {
    /// "gpu0", "gpu1"..., "gpus" (mean over GPUs) or "host".
    pub scope: String,
    pub metric: String,
    pub unit: String,
    /// None when the metric was not measured (shown n/a, never 0).
    pub n: usize,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub source: String,
    pub note: Option<String>,
    pub command: Vec<String>,
    pub attach_pid: Option<u32>,
    pub gpus: Vec<GpuLabel>,
    pub interval_ms: u64,
    pub warmup_ms: u64,
    pub total_samples: usize,
    pub steady_samples: usize,
    pub steady_start_ms: f64,
    pub steady_end_ms: f64,
    pub truncated: bool,
    pub exit_code: Option<i32>,
    pub wall_time_s: Option<f64>,
    pub panorama: Panorama,
    pub suspects: Vec<Finding>,
    pub processes: Vec<ProcessRow>,
    pub stats: Vec<StatRow>,
    pub features: BTreeMap<String, f64>,
}

impl RunReport {
    /// Report of `trace` summarised without user metrics.
    pub fn build(trace: &Trace, rules: &RuleSet, slice_ms: f64) -> RunReport {
        Self::build_with(trace, rules, slice_ms, crate::diagnose::run_summary(trace))
    }

    /// Report of `trace` from its summary `run` (`RunInput::new` fills in
    /// the user metrics of gate.toml, so user rules can use them).
    pub fn build_with(trace: &Trace, rules: &RuleSet, slice_ms: f64, run: RunSummary) -> RunReport {
        let suspects = rules.diagnose(&run);
        let h = &trace.header;
        RunReport {
            source: trace.path.display().to_string(),
            note: h.note.clone(),
            command: h.command.clone(),
            attach_pid: h.attach_pid,
            gpus: h
                .fingerprint
                .gpus
                .iter()
                .map(|g| GpuLabel {
                    index: g.index,
                    name: g.name.clone(),
                    uuid: g.uuid.clone(),
                    gpm_supported: g.gpm_supported,
                })
                .collect(),
            interval_ms: h.interval_ms,
            warmup_ms: h.warmup_ms,
            total_samples: run.total_samples,
            steady_samples: run.steady_samples,
            steady_start_ms: run.steady_start_ms,
            steady_end_ms: run.steady_end_ms,
            truncated: run.truncated,
            exit_code: run.exit_code,
            wall_time_s: run.wall_time_s,
            panorama: panorama::build(trace, slice_ms),
            suspects,
            processes: processes(trace),
            stats: stat_rows(trace, &run),
            features: run.features.clone(),
        }
    }

    pub fn has_high_severity(&self) -> bool {
        self.suspects.iter().any(|f| f.severity == Severity::High)
    }
}

fn processes(trace: &Trace) -> Vec<ProcessRow> {
    // (gpu, pid) -> row plus the SM-share and CPU samples to average.
    type Acc = (ProcessRow, Vec<f64>, Vec<f64>);
    let mut rows: BTreeMap<(u32, u32), Acc> = BTreeMap::new();
    let max_opt = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    };
    for rec in &trace.processes {
        for p in &rec.procs {
            let t_s = rec.t / 1000.0;
            let entry = rows.entry((rec.gpu, p.pid)).or_insert_with(|| {
                (
                    ProcessRow {
                        gpu: rec.gpu,
                        pid: p.pid,
                        name: p.name.clone(),
                        cmdline: p.cmdline.clone(),
                        in_target: p.in_target,
                        first_seen_s: t_s,
                        last_seen_s: t_s,
                        sm_share_pct: None,
                        gpu_mem_mib_max: None,
                        cpu_pct_mean: None,
                        rss_mib_max: None,
                    },
                    Vec::new(),
                    Vec::new(),
                )
            });
            let (row, sm, cpu) = entry;
            row.first_seen_s = row.first_seen_s.min(t_s);
            row.last_seen_s = row.last_seen_s.max(t_s);
            if row.cmdline.is_empty() {
                row.cmdline = p.cmdline.clone();
            }
            row.gpu_mem_mib_max = max_opt(row.gpu_mem_mib_max, p.gpu_mem_mib);
            row.rss_mib_max = max_opt(row.rss_mib_max, p.rss_mib);
            sm.extend(p.sm_share_pct.filter(|v| v.is_finite()));
            cpu.extend(p.cpu_pct.filter(|v| v.is_finite()));
        }
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    rows.into_values()
        .map(|(mut row, sm, cpu)| {
            row.sm_share_pct = mean(&sm);
            row.cpu_pct_mean = mean(&cpu);
            row
        })
        .collect()
}

fn stat_row(scope: &str, metric: &str, s: Option<&MetricStats>) -> StatRow {
    StatRow {
        scope: scope.to_string(),
        metric: metric.to_string(),
        unit: metrics::find(metric)
            .map(|d| d.unit.to_string())
            .unwrap_or_default(),
        n: s.map(|s| s.n).unwrap_or(0),
        mean: s.map(|s| s.mean),
        p50: s.map(|s| s.p50),
        p99: s.map(|s| s.p99),
        max: s.map(|s| s.max),
    }
}

fn stat_rows(trace: &Trace, run: &RunSummary) -> Vec<StatRow> {
    let mut out = Vec::new();
    for g in &run.gpus {
        let scope = format!("gpu{}", g.index);
        for id in &trace.header.gpu_columns {
            out.push(stat_row(&scope, id, g.metrics.get(id)));
        }
    }
    if run.gpus.len() > 1 {
        for id in &trace.header.gpu_columns {
            out.push(stat_row("gpus", id, run.gpu_aggregate.get(id)));
        }
    }
    for id in &trace.header.host_columns {
        out.push(stat_row("host", id, run.host.get(id)));
    }
    out
}

// ---------------------------------------------------------------- text

fn num(v: Option<f64>) -> String {
    v.map(crate::diagnose::dsl::format_number)
        .unwrap_or_else(|| "n/a".into())
}

/// "GPU 0 (NVIDIA H200)", "Host (...)" for a statistics scope key.
pub fn scope_title(r: &RunReport, scope: &str) -> String {
    match scope {
        "host" => "Host (target process tree and machine)".into(),
        "gpus" => "All GPUs (per-sample mean over GPUs)".into(),
        s => {
            let idx: u32 = s.trim_start_matches("gpu").parse().unwrap_or(0);
            let name = r
                .gpus
                .iter()
                .find(|g| g.index == idx)
                .map(|g| g.name.as_str())
                .unwrap_or("");
            format!("GPU {idx} ({name})")
        }
    }
}

/// Severity label, coloured when `color` (a TTY without NO_COLOR).
fn severity_label(s: Severity, color: bool) -> String {
    let label = s.as_str().to_uppercase();
    if !color {
        return label;
    }
    let code = match s {
        Severity::High => "1;31",
        Severity::Medium => "33",
        Severity::Low => "36",
        Severity::Info => "2",
    };
    format!("\x1b[{code}m{label}\x1b[0m")
}

/// One line describing where the run came from.
fn provenance(r: &RunReport) -> Vec<String> {
    let mut lines = vec![format!("gate report: {}", r.source)];
    if !r.command.is_empty() {
        lines.push(format!("  command: {}", r.command.join(" ")));
    }
    if let Some(pid) = r.attach_pid {
        lines.push(format!("  attached to PID {pid}"));
    }
    if let Some(n) = &r.note {
        lines.push(format!("  note: {n}"));
    }
    let gpus: Vec<String> = r
        .gpus
        .iter()
        .map(|g| {
            format!(
                "{} {}{}",
                g.index,
                g.name,
                if g.gpm_supported { "" } else { " (no GPM)" }
            )
        })
        .collect();
    lines.push(format!(
        "  GPUs: {}",
        if gpus.is_empty() {
            "none".into()
        } else {
            gpus.join(", ")
        }
    ));
    lines.push(format!(
        "  samples: {} ({} steady, {}-{} s), interval {} ms, warm-up {} s{}{}",
        r.total_samples,
        r.steady_samples,
        panorama::secs(r.steady_start_ms),
        panorama::secs(r.steady_end_ms),
        r.interval_ms,
        panorama::secs(r.warmup_ms as f64),
        match r.exit_code {
            Some(c) => format!(", exit code {c}"),
            None => String::new(),
        },
        if r.truncated {
            ", TRUNCATED (recording was cut short)"
        } else {
            ""
        }
    ));
    lines
}

/// The terminal report of one run.
pub fn render_text(r: &RunReport, color: bool) -> String {
    let mut out = provenance(r).join("\n");
    out.push_str("\n\n== 1. Utilization panorama ==\n");
    out.push_str(&panorama::render_text(&r.panorama));

    out.push_str("\n== 2. Suspects (ranked) ==\n");
    if r.suspects.is_empty() {
        out.push_str("No suspects: no rule's condition held (conditions on unmeasured metrics never fire).\n");
    }
    for (i, f) in r.suspects.iter().enumerate() {
        out.push_str(&format!(
            "\n{}. [{}] {} ({}, score {})\n",
            i + 1,
            severity_label(f.severity, color),
            f.title,
            f.rule,
            f.score
        ));
        out.push_str(&format!("   Why: {}\n", f.explanation));
        out.push_str("   Evidence:\n");
        for e in &f.evidence {
            out.push_str(&format!("     - {e}\n"));
        }
        out.push_str("   Next steps:\n");
        for s in &f.next_steps {
            out.push_str(&format!("     - {s}\n"));
        }
    }

    out.push_str("\n== 3. Processes on the GPUs ==\n");
    if r.processes.is_empty() {
        out.push_str("No process records in the trace.\n");
    } else {
        let header: Vec<String> = [
            "gpu", "pid", "who", "sm%", "gpu MiB", "cpu%", "rss MiB", "seen s", "command",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let rows: Vec<Vec<String>> = r
            .processes
            .iter()
            .map(|p| {
                vec![
                    p.gpu.to_string(),
                    p.pid.to_string(),
                    if p.in_target { "target" } else { "OTHER" }.into(),
                    num(p.sm_share_pct),
                    num(p.gpu_mem_mib_max),
                    num(p.cpu_pct_mean),
                    num(p.rss_mib_max),
                    format!("{}-{}", p.first_seen_s, p.last_seen_s),
                    printable(if p.cmdline.is_empty() {
                        &p.name
                    } else {
                        &p.cmdline
                    }),
                ]
            })
            .collect();
        out.push_str(&panorama::table(&header, &rows));
    }

    out.push_str("\n== 4. Statistics of the steady window ==\n");
    let header: Vec<String> = ["metric", "unit", "mean", "p50", "p99", "max", "n"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut scope = "";
    let mut rows = Vec::new();
    for s in &r.stats {
        if s.scope != scope {
            if !rows.is_empty() {
                out.push_str(&panorama::table(&header, &rows));
                rows.clear();
            }
            scope = &s.scope;
            out.push_str(&format!("\n{}\n", scope_title(r, scope)));
        }
        rows.push(vec![
            s.metric.clone(),
            s.unit.clone(),
            num(s.mean),
            num(s.p50),
            num(s.p99),
            num(s.max),
            s.n.to_string(),
        ]);
    }
    if !rows.is_empty() {
        out.push_str(&panorama::table(&header, &rows));
    }
    out
}

/// Replace control characters (a command line could carry escape
/// sequences that rewrite the user's terminal).
pub fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

// ---------------------------------------------------------------- markdown

/// Escape text for a Markdown table cell or paragraph: no raw HTML, no
/// table breaks, no emphasis surprises.
pub fn md_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' => out.push_str("\\|"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

fn md_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n", header.join(" | "));
    out.push_str(&format!(
        "|{}\n",
        header.iter().map(|_| "---|").collect::<String>()
    ));
    for r in rows {
        out.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    out
}

pub fn render_markdown(r: &RunReport) -> String {
    let mut out = format!("## gate report: {}\n\n", md_escape(&r.source));
    for line in provenance(r).iter().skip(1) {
        out.push_str(&format!("- {}\n", md_escape(line.trim())));
    }
    out.push_str("\n### Suspects\n\n");
    if r.suspects.is_empty() {
        out.push_str("No suspects.\n");
    } else {
        let rows: Vec<Vec<String>> = r
            .suspects
            .iter()
            .enumerate()
            .map(|(i, f)| {
                vec![
                    (i + 1).to_string(),
                    f.severity.as_str().to_string(),
                    format!("**{}** (`{}`)", md_escape(&f.title), f.rule),
                    md_escape(&f.evidence.join("; ")),
                ]
            })
            .collect();
        out.push_str(&md_table(&["#", "severity", "suspect", "evidence"], &rows));
        for (i, f) in r.suspects.iter().enumerate() {
            out.push_str(&format!(
                "\n**{}. {}**: {}\n\n",
                i + 1,
                md_escape(&f.title),
                md_escape(&f.explanation)
            ));
            for s in &f.next_steps {
                out.push_str(&format!("- {}\n", md_escape(s)));
            }
        }
    }

    out.push_str("\n### Utilization panorama\n\n");
    let p = &r.panorama;
    out.push_str(&format!(
        "{} s slices. Flags: {}; w = warm-up.\n",
        panorama::secs(p.slice_ms),
        panorama::Problem::ALL
            .iter()
            .map(|x| format!("{} = {}", x.flag(), md_escape(x.describe())))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if p.intervals.is_empty() {
        out.push_str("\nNo problem intervals.\n");
    } else {
        out.push_str("\nProblem intervals:\n\n");
        for i in &p.intervals {
            out.push_str(&format!(
                "- GPU {}: {} from {} s to {} s\n",
                i.gpu,
                i.problem.as_str(),
                panorama::secs(i.start_ms),
                panorama::secs(i.end_ms)
            ));
        }
    }
    for g in &p.gpus {
        out.push_str(&format!("\n**GPU {} ({})**\n\n", g.gpu, md_escape(&g.name)));
        let mut header: Vec<&str> = vec!["t s"];
        header.extend(panorama::GPU_COLUMNS.iter().map(|c| c.1));
        header.push(panorama::HOST_COLUMN.1);
        header.push("flags");
        let rows: Vec<Vec<String>> = g
            .slices
            .iter()
            .map(|s| {
                let mut row = vec![panorama::secs(s.start_ms)];
                row.extend(s.values.iter().map(|v| num(*v)));
                row.push(num(s.target_cpu_pct));
                let mut flags: String = s.problems.iter().map(|x| x.flag()).collect();
                if s.warmup {
                    flags.push('w');
                }
                row.push(flags);
                row
            })
            .collect();
        out.push_str(&md_table(&header, &rows));
    }

    out.push_str("\n### Processes\n\n");
    if r.processes.is_empty() {
        out.push_str("No process records in the trace.\n");
    } else {
        let rows: Vec<Vec<String>> = r
            .processes
            .iter()
            .map(|p| {
                vec![
                    p.gpu.to_string(),
                    p.pid.to_string(),
                    if p.in_target { "target" } else { "**other**" }.into(),
                    num(p.sm_share_pct),
                    num(p.gpu_mem_mib_max),
                    num(p.cpu_pct_mean),
                    num(p.rss_mib_max),
                    md_escape(if p.cmdline.is_empty() {
                        &p.name
                    } else {
                        &p.cmdline
                    }),
                ]
            })
            .collect();
        out.push_str(&md_table(
            &[
                "gpu", "pid", "who", "sm %", "gpu MiB", "cpu %", "rss MiB", "command",
            ],
            &rows,
        ));
    }

    out.push_str("\n### Statistics (steady window)\n");
    let mut scope = "";
    let mut rows = Vec::new();
    let header = ["metric", "unit", "mean", "p50", "p99", "max", "n"];
    for s in &r.stats {
        if s.scope != scope {
            if !rows.is_empty() {
                out.push_str(&md_table(&header, &rows));
                rows.clear();
            }
            scope = &s.scope;
            out.push_str(&format!("\n**{}**\n\n", md_escape(&scope_title(r, scope))));
        }
        rows.push(vec![
            md_escape(&s.metric),
            md_escape(&s.unit),
            num(s.mean),
            num(s.p50),
            num(s.p99),
            num(s.max),
            s.n.to_string(),
        ]);
    }
    if !rows.is_empty() {
        out.push_str(&md_table(&header, &rows));
    }
    out
}

/// The JSON document of `gate report --format json` / `--json FILE`.
pub fn render_json(reports: &[RunReport]) -> String {
    #[derive(Serialize)]
    struct Doc<'a> {
        schema_version: u32,
        gate_version: &'a str,
        runs: &'a [RunReport],
    }
    let mut s = serde_json::to_string_pretty(&Doc {
        schema_version: REPORT_SCHEMA_VERSION,
        gate_version: crate::GATE_VERSION,
        runs: reports,
    })
    .expect("report serialises");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{self, Signature};

    fn report(sig: &Signature, ngpu: usize) -> RunReport {
        RunReport::build(&synthetic::trace(sig, ngpu), &RuleSet::builtin(), 1000.0)
    }

    #[test]
    fn processes_are_merged_per_gpu_and_pid() {
        let r = report(&Signature::contention(), 2);
        assert_eq!(r.processes.len(), 4);
        let other = r.processes.iter().find(|p| !p.in_target).unwrap();
        assert_eq!(other.pid, 5151);
        assert_eq!(other.first_seen_s, 0.0);
        assert_eq!(other.last_seen_s, 33.0);
        assert_eq!(other.sm_share_pct, Some(42.0));
    }

    #[test]
    fn stats_cover_every_column_and_say_na_for_unmeasured() {
        let mut sig = Signature::healthy();
        sig.no_gpm = true;
        let r = report(&sig, 2);
        let ncols = crate::metrics::GPU_METRICS.len();
        let nhost = crate::metrics::HOST_METRICS.len();
        assert_eq!(r.stats.len(), 3 * ncols + nhost);
        let sm = r
            .stats
            .iter()
            .find(|s| s.scope == "gpu1" && s.metric == "sm_active_pct")
            .unwrap();
        assert_eq!((sm.n, sm.p50), (0, None));
        let text = render_text(&r, false);
        assert!(text.contains("sm_active_pct"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.contains("sm_active_pct") && l.contains("n/a")),
            "{text}"
        );
    }

    #[test]
    fn text_sections_come_in_order_and_rank_suspects() {
        let text = render_text(&report(&Signature::launch_storm(), 1), false);
        let pos = |s: &str| {
            text.find(s)
                .unwrap_or_else(|| panic!("no '{s}' in\n{text}"))
        };
        assert!(pos("== 1.") < pos("== 2.") && pos("== 2.") < pos("== 3."));
        assert!(pos("== 3.") < pos("== 4."));
        assert!(text.contains("1. [HIGH] Kernel fragmentation"), "{text}");
        assert!(!text.contains('\x1b'));
        assert!(render_text(&report(&Signature::launch_storm(), 1), true).contains("\x1b[1;31m"));
    }

    #[test]
    fn markdown_escapes_hostile_command_lines() {
        let md = render_markdown(&report(&Signature::contention(), 1));
        assert!(!md.contains("<b>"), "raw HTML leaked");
        assert!(md.contains("&lt;b&gt;&amp;amp;&lt;/b&gt;"), "{md}");
        assert!(md.contains("a&lt;b &amp;&amp; c&gt;d"), "{md}");
        assert!(md.contains("| 1 | high | **Other processes share the GPU**"));
    }

    #[test]
    fn json_is_deterministic_and_missing_is_null() {
        let mut sig = Signature::healthy();
        sig.no_gpm = true;
        let a = render_json(&[report(&sig, 1)]);
        let b = render_json(&[report(&sig, 1)]);
        assert_eq!(a, b);
        let v: serde_json::Value = serde_json::from_str(&a).unwrap();
        let run = &v["runs"][0];
        let sm = run["stats"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["metric"] == "sm_active_pct")
            .unwrap();
        assert!(sm["p50"].is_null());
        assert_eq!(run["suspects"][0]["rule"], "clock_power_capped");
        assert!(run["panorama"]["gpus"][0]["slices"][5]["values"][1].is_null());
    }
}
