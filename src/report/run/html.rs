//! `gate report --html`: ONE self-contained HTML file (inline CSS and SVG,
//! no scripts, no fonts or images to fetch), so it can be attached to a CI
//! job and opened offline years later.
//!
//! Contents per run: provenance, the ranked suspects, time-series plots of
//! the main counters per GPU (warm-up and problem intervals shaded), the
//! host CPU plot, the panorama table, processes and statistics.
//!
//! Everything that comes from a trace or a rule file is escaped
//! (`crate::escape::html`). Output is byte-for-byte deterministic for a
//! given trace: no clock, numbers printed with fixed precision, maps
//! iterated in order. The charts are drawn by `svg.rs`.

use super::svg::{chart, Line, Shade, HALF, WARM_COLOR, WIDTH};
use super::{RunReport, RunReporter};
use crate::analysis::panorama::{self, Problem};
use crate::diagnose::Severity;
use crate::escape::html as escape;
use crate::format::{number as format_number, number_or_na as num};
use crate::summary::timeline::Plots;
use std::collections::BTreeMap;
use std::fmt::Write as _;

const STYLE: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px;color:#1d2330;background:#fff;max-width:1320px}
h1{font-size:22px;margin:0 0 6px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d5d9e0;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
.meta{color:#4a5568;font-size:13px;line-height:1.5}.meta code{background:#f1f3f6;padding:1px 4px;border-radius:3px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid #d5d9e0;padding:4px 7px;vertical-align:top;text-align:left}
th{background:#f1f3f6}td.n{text-align:right;font-variant-numeric:tabular-nums}
.sev{display:inline-block;padding:1px 7px;border-radius:9px;font-size:12px;font-weight:600;color:#fff}
.sev-high{background:#c0392b}.sev-medium{background:#9c5700}.sev-low{background:#1f6fa3}.sev-info{background:#5f6b6d}
.suspects td ul{margin:0;padding-left:18px}.suspects .title{font-weight:600}.evidence{border-collapse:collapse;margin:4px 0}.evidence td,.evidence th{padding:1px 10px 1px 0;font-size:13px}.rule{color:#6b7280;font-size:12px}
.ok{color:#1e8449;font-weight:600}
tr.p-starved td{background:#fde2e0}tr.p-idle td{background:#fdf2cc}tr.p-contended td{background:#eadfdb}tr.warm td{color:#6b7280}
svg{display:block;margin:4px 0 10px}svg text{font-size:11px;fill:#4a5568}
.legend span{display:inline-block;margin-right:14px;font-size:12px}.sw{display:inline-block;width:12px;height:12px;vertical-align:-2px;margin-right:4px;border-radius:2px}
.pair{display:flex;flex-wrap:wrap;gap:16px}.pair>div{min-width:0;max-width:100%}
details summary{cursor:pointer;font-size:14px;margin:6px 0}
.cmd{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px;word-break:break-all}
footer{margin-top:30px;color:#6b7280;font-size:12px}
svg{max-width:100%;height:auto}
@media (max-width:760px){body{margin:10px}table{display:block;overflow-x:auto}}
"#;

/// Colours of the plotted series (colour-blind-safe Tableau-ish palette).
const C_BUSY: &str = "#1f77b4";
const C_SM: &str = "#2ca02c";
const C_TENSOR: &str = "#9467bd";
const C_DRAM: &str = "#ff7f0e";
const C_RX: &str = "#17becf";
const C_TX: &str = "#8c564b";
const C_POWER: &str = "#d62728";
const C_CLOCK: &str = "#7f7f7f";

fn shade_color(p: Problem) -> (&'static str, f64) {
    match p {
        Problem::Starved => ("#e41a1c", 0.16),
        Problem::Idle => ("#f0b400", 0.22),
        Problem::Contended => ("#8c564b", 0.18),
    }
}

fn shades_for(r: &RunReport, gpu: Option<u32>) -> Vec<Shade> {
    let mut v = Vec::new();
    if r.panorama.warmup_end_ms > 0.0 {
        v.push(Shade {
            start_s: 0.0,
            end_s: r.panorama.warmup_end_ms / 1000.0,
            color: WARM_COLOR.0,
            opacity: WARM_COLOR.1,
        });
    }
    for i in &r.panorama.intervals {
        if gpu.is_none_or(|g| g == i.gpu) {
            let (color, opacity) = shade_color(i.problem);
            v.push(Shade {
                start_s: i.start_ms / 1000.0,
                end_s: i.end_ms / 1000.0,
                color,
                opacity,
            });
        }
    }
    v
}

fn shade_legend() -> String {
    let mut s = String::from(r#"<div class="legend">Shaded: "#);
    let _ = write!(
        s,
        r#"<span><i class="sw" style="background:{};opacity:.5"></i>warm-up (excluded from statistics)</span>"#,
        WARM_COLOR.0
    );
    for p in Problem::ALL {
        let (c, _) = shade_color(p);
        let _ = write!(
            s,
            r#"<span><i class="sw" style="background:{c};opacity:.5"></i>{}: {}</span>"#,
            p.as_str(),
            escape(p.describe())
        );
    }
    s.push_str("</div>");
    s
}

fn sev_badge(s: Severity) -> String {
    format!(r#"<span class="sev sev-{0}">{0}</span>"#, s.as_str())
}

/// One run: provenance, then the answer (suspects), then the evidence to
/// check it against (plots, panorama, processes, statistics).
fn run_section(out: &mut String, r: &RunReport, plots: &Plots, idx: usize) {
    let _ = write!(out, r#"<section id="run-{idx}">"#);
    provenance(out, r);
    suspects(out, r);
    time_series(out, r, plots);
    panorama_tables(out, r);
    processes(out, r);
    statistics(out, r);
    out.push_str("</section>");
}

/// Title, command, note, GPUs and the sample window.
fn provenance(out: &mut String, r: &RunReport) {
    let _ = write!(out, "<h1>gate report: {}</h1>", escape(&r.source));
    out.push_str(r#"<div class="meta">"#);
    if !r.command.is_empty() {
        let _ = write!(
            out,
            r#"Command: <code class="cmd">{}</code><br>"#,
            escape(&r.command.join(" "))
        );
    }
    if let Some(pid) = r.attach_pid {
        let _ = write!(out, "Attached to PID {pid}<br>");
    }
    if let Some(n) = &r.note {
        let _ = write!(out, "Note: {}<br>", escape(n));
    }
    let gpus: Vec<String> = r
        .gpus
        .iter()
        .map(|g| {
            format!(
                "{} {}{}",
                g.index,
                escape(&g.name),
                if g.gpm_supported {
                    ""
                } else {
                    " (no GPM: SM/tensor/DRAM not measured)"
                }
            )
        })
        .collect();
    let _ = write!(
        out,
        "GPUs: {}<br>Samples: {} ({} steady, {}&ndash;{} s), interval {} ms, warm-up {} s{}{}",
        if gpus.is_empty() {
            "none".into()
        } else {
            gpus.join(", ")
        },
        r.total_samples,
        r.steady_samples,
        crate::format::secs(r.steady_start_ms),
        crate::format::secs(r.steady_end_ms),
        r.interval_ms,
        crate::format::secs(r.warmup_ms as f64),
        r.exit_code
            .map(|c| format!(", exit code {c}"))
            .unwrap_or_default(),
        if r.truncated {
            ", <b>truncated</b> (recording was cut short)"
        } else {
            ""
        }
    );
    out.push_str("</div>");
}

/// The ranked suspects with their evidence and next steps.
fn suspects(out: &mut String, r: &RunReport) {
    out.push_str("<h2>Suspects (ranked)</h2>");
    if r.suspects.is_empty() {
        out.push_str(r#"<p class="ok">No suspects: no rule's condition held. Conditions on unmeasured metrics never fire.</p>"#);
    } else {
        out.push_str(
            r#"<table class="suspects"><tr><th>#</th><th>severity</th><th>suspect</th></tr>"#,
        );
        for (i, f) in r.suspects.iter().enumerate() {
            let _ = write!(
                out,
                r#"<tr><td class="n">{}</td><td>{}</td><td>{}</td></tr>"#,
                i + 1,
                sev_badge(f.severity),
                crate::report::finding::html(f)
            );
        }
        out.push_str("</table>");
    }
}

/// What each chart of a GPU plots: (metric, label, colour).
type Series = [(&'static str, &'static str, &'static str)];
const UTIL: &Series = &[
    ("gpu_busy_pct", "GPU busy", C_BUSY),
    ("sm_active_pct", "SM active", C_SM),
    ("tensor_pct", "tensor active", C_TENSOR),
    ("dram_pct", "DRAM bandwidth", C_DRAM),
];
const PCIE: &Series = &[
    ("pcie_rx_mib_s", "PCIe RX (to GPU)", C_RX),
    ("pcie_tx_mib_s", "PCIe TX (from GPU)", C_TX),
];
const POWER: &Series = &[("power_w", "board power", C_POWER)];
const CLOCK: &Series = &[("sm_clock_mhz", "SM clock", C_CLOCK)];
const HOST: &Series = &[
    ("target_cpu_pct", "target CPU (100 = one core)", C_BUSY),
    ("host_cpu_busy_pct", "machine CPU (100 = all cores)", C_DRAM),
    ("host_iowait_pct", "machine iowait", C_POWER),
];

/// The GPU and the host metrics the plots draw, in order: what `gate
/// report --html` takes of each trace at derive (`summary::timeline`).
pub(crate) fn plotted() -> (Vec<&'static str>, Vec<&'static str>) {
    let ids = |which: &[&Series]| -> Vec<&'static str> {
        which
            .iter()
            .flat_map(|s| s.iter().map(|(id, _, _)| *id))
            .collect()
    };
    (ids(&[UTIL, PCIE, POWER, CLOCK]), ids(&[HOST]))
}

/// The lines of one chart: each of `which` the run has a series of.
fn lines<'a>(which: &Series, points: &'a BTreeMap<&'static str, Vec<(f64, f64)>>) -> Vec<Line<'a>> {
    (which.iter())
        .filter_map(|(id, label, color)| {
            Some(Line {
                label,
                color,
                points: points.get(id)?,
            })
        })
        .collect()
}

/// Plots of the main counters per GPU and of the host CPU, problem
/// intervals and warm-up shaded.
fn time_series(out: &mut String, r: &RunReport, plots: &Plots) {
    out.push_str("<h2>Time series</h2>");
    out.push_str(&shade_legend());
    let t_end_s = plots.t_end_s;
    for (g, points) in r.gpus.iter().zip(&plots.gpus) {
        let [util, pcie, power, clock] = [UTIL, PCIE, POWER, CLOCK].map(|w| lines(w, points));
        let _ = write!(out, "<h3>GPU {} ({})</h3>", g.index, escape(&g.name));
        let shades = shades_for(r, Some(g.index));
        out.push_str(&chart(
            "Utilization",
            "%",
            Some(100.0),
            &util,
            t_end_s,
            &shades,
            WIDTH,
        ));
        out.push_str(&chart(
            "PCIe traffic",
            "MiB/s",
            None,
            &pcie,
            t_end_s,
            &shades,
            WIDTH,
        ));
        // Power and clock side by side: secondary, read together.
        out.push_str(r#"<div class="pair"><div>"#);
        out.push_str(&chart("Power", "W", None, &power, t_end_s, &shades, HALF));
        out.push_str("</div><div>");
        out.push_str(&chart(
            "SM clock", "MHz", None, &clock, t_end_s, &shades, HALF,
        ));
        out.push_str("</div></div>");
    }
    out.push_str("<h3>Host</h3>");
    out.push_str(&chart(
        "Host CPU",
        "%",
        None,
        &lines(HOST, &plots.host),
        t_end_s,
        &shades_for(r, None),
        WIDTH,
    ));
}

/// The panorama: problem intervals, then one table of slices per GPU.
fn panorama_tables(out: &mut String, r: &RunReport) {
    let p = &r.panorama;
    let _ = write!(
        out,
        "<h2>Utilization panorama ({} s slices)</h2>",
        crate::format::secs(p.slice_ms)
    );
    if p.intervals.is_empty() {
        out.push_str("<p>No problem intervals.</p>");
    } else {
        out.push_str("<ul>");
        for i in &p.intervals {
            let _ = write!(
                out,
                "<li>GPU {}: <b>{}</b> ({}) from {} s to {} s</li>",
                i.gpu,
                i.problem.as_str(),
                escape(i.problem.describe()),
                crate::format::secs(i.start_ms),
                crate::format::secs(i.end_ms)
            );
        }
        out.push_str("</ul>");
    }
    for g in &p.gpus {
        let open = if g.slices.len() <= 120 { " open" } else { "" };
        let _ = write!(
            out,
            "<details{open}><summary>GPU {} ({}): {} slices</summary><table><tr><th>t s</th>",
            g.gpu,
            escape(&g.name),
            g.slices.len()
        );
        for c in panorama::GPU_COLUMNS {
            let _ = write!(out, "<th>{}</th>", escape(c.1));
        }
        let _ = write!(
            out,
            "<th>{}</th><th>flags</th></tr>",
            panorama::HOST_COLUMN.1
        );
        for s in &g.slices {
            let class = match (s.problems.first(), s.warmup) {
                (Some(p), _) => format!(r#" class="p-{}""#, p.as_str()),
                (None, true) => r#" class="warm""#.to_string(),
                _ => String::new(),
            };
            let _ = write!(
                out,
                r#"<tr{class}><td class="n">{}</td>"#,
                crate::format::secs(s.start_ms)
            );
            for v in &s.values {
                let _ = write!(out, r#"<td class="n">{}</td>"#, num(*v));
            }
            let mut flags: Vec<&str> = s.problems.iter().map(|p| p.as_str()).collect();
            if s.warmup {
                flags.push("warm-up");
            }
            let _ = write!(
                out,
                r#"<td class="n">{}</td><td>{}</td></tr>"#,
                num(s.target_cpu_pct),
                flags.join(", ")
            );
        }
        out.push_str("</table></details>");
    }
}

/// Processes seen on each GPU (other tenants in bold).
fn processes(out: &mut String, r: &RunReport) {
    out.push_str("<h2>Processes on the GPUs</h2>");
    if r.processes.is_empty() {
        out.push_str("<p>No process records in the trace.</p>");
    } else {
        out.push_str("<table><tr><th>GPU</th><th>PID</th><th>who</th><th>SM share %</th><th>GPU memory MiB</th><th>CPU %</th><th>RSS MiB</th><th>seen (s)</th><th>command</th></tr>");
        for pr in &r.processes {
            let _ = write!(
                out,
                r#"<tr><td class="n">{}</td><td class="n">{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}&ndash;{}</td><td class="cmd">{}</td></tr>"#,
                pr.gpu,
                pr.pid,
                if pr.in_target {
                    "target"
                } else {
                    "<b>other</b>"
                },
                num(pr.sm_share_pct),
                num(pr.gpu_mem_mib_max),
                num(pr.cpu_pct_mean),
                num(pr.rss_mib_max),
                format_number(pr.first_seen_s),
                format_number(pr.last_seen_s),
                escape(if pr.cmdline.is_empty() {
                    &pr.name
                } else {
                    &pr.cmdline
                })
            );
        }
        out.push_str("</table>");
    }
}

/// p50/p99/max of every metric, one folded table per scope.
fn statistics(out: &mut String, r: &RunReport) {
    out.push_str("<h2>Statistics of the steady window</h2>");
    let mut scope: Option<&str> = None;
    for s in &r.stats {
        if scope != Some(s.scope.as_str()) {
            if scope.is_some() {
                out.push_str("</table></details>");
            }
            scope = Some(&s.scope);
            let _ = write!(
                out,
                "<details><summary>{}</summary><table><tr><th>metric</th><th>unit</th><th>mean</th><th>p50</th><th>p99</th><th>max</th><th>n</th></tr>",
                escape(&super::scope_title(r, &s.scope))
            );
        }
        let _ = write!(
            out,
            r#"<tr><td>{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td></tr>"#,
            escape(&s.metric),
            escape(&s.unit),
            num(s.mean),
            num(s.p50),
            num(s.p99),
            num(s.max),
            s.n
        );
    }
    if scope.is_some() {
        out.push_str("</table></details>");
    }
}

/// One self-contained HTML document for all runs (the plots read each
/// run's `Plots`, taken at derive).
pub(crate) struct Html;

impl RunReporter for Html {
    fn render(&self, runs: &[RunReport]) -> String {
        render(runs, HTML_BUDGET_BYTES)
    }
}

/// The size a document of several runs is kept to: a run of 8 GPUs takes
/// ~4 MB in full (plots of every GPU, the panorama table), so a report of
/// 64 nodes was 257 MB. Runs are shown in full while they fit; past that
/// the document opens with one table of every run, the most severe runs
/// are shown in full in what room is left, and the others by their
/// suspects (~2 kB each): under 10 MB up to ~4,000 runs.
const HTML_BUDGET_BYTES: usize = 9 << 20;

/// The whole document; `budget` is `HTML_BUDGET_BYTES` but in tests.
fn render(runs: &[RunReport], budget: usize) -> String {
    let mut out = String::with_capacity(256 * 1024);
    let title = runs.first().map(|r| r.source.as_str()).unwrap_or("no runs");
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>gate report: {}</title><style>{}</style></head><body>\n",
        escape(title),
        STYLE
    );
    // The most severe runs first (then in order); sections past the
    // budget are never rendered.
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(top_severity(&runs[i])), i));
    let mut full: Vec<Option<String>> = (0..runs.len()).map(|_| None).collect();
    let mut used = 0usize;
    let mut all_fit = true;
    for &i in &order {
        let section = full_section(&runs[i], i);
        if used + section.len() > budget && runs.len() > 1 {
            all_fit = false;
            break;
        }
        used += section.len();
        full[i] = Some(section);
    }
    if all_fit {
        if runs.len() > 1 {
            out.push_str("<p>Runs: ");
            for (i, r) in runs.iter().enumerate() {
                let _ = write!(out, "<a href=\"#run-{i}\">{}</a> ", escape(&r.source));
            }
            out.push_str("</p>");
        }
        for section in full.into_iter().flatten() {
            out.push_str(&section);
            out.push('\n');
        }
    } else {
        // Every run by its suspects, then in full the most severe ones the
        // room left takes (the table's size, all compact, bounds its final
        // size: "in full" is shorter than "suspects").
        let compact: Vec<String> = (runs.iter().enumerate())
            .map(|(i, r)| compact_section(r, i))
            .collect();
        let none: Vec<Option<String>> = (0..runs.len()).map(|_| None).collect();
        let fixed =
            runs_table(runs, &none).len() + compact.iter().map(|c| c.len() + 1).sum::<usize>();
        let mut room = budget.saturating_sub(fixed);
        let mut drawn = std::mem::replace(&mut full, none);
        for &i in &order {
            let section = drawn[i].take().unwrap_or_else(|| full_section(&runs[i], i));
            let extra = section.len().saturating_sub(compact[i].len());
            if extra > room {
                break;
            }
            room -= extra;
            full[i] = Some(section);
        }
        out.push_str(&runs_table(runs, &full));
        for (section, compact) in full.into_iter().zip(compact) {
            out.push_str(&section.unwrap_or(compact));
            out.push('\n');
        }
    }
    let _ = write!(
        out,
        "<footer>Generated by gate {} from the recorded trace(s); self-contained, no external resources.</footer>\n</body></html>\n",
        escape(crate::GATE_VERSION)
    );
    out
}

/// The highest severity among a run's suspects (None: no suspect).
fn top_severity(r: &RunReport) -> Option<Severity> {
    r.suspects.iter().map(|f| f.severity).max()
}

/// One run in full: its section (`run_section`), plots from its `Plots`
/// (none when it has none).
fn full_section(run: &RunReport, idx: usize) -> String {
    let none = Plots::default();
    let plots = run.plots.as_deref().unwrap_or(&none);
    let mut out = String::new();
    run_section(&mut out, run, plots, idx);
    out
}

/// The summary of many runs: one row each, linking to its section.
fn runs_table(runs: &[RunReport], full: &[Option<String>]) -> String {
    let mut out = String::new();
    let shown = full.iter().filter(|s| s.is_some()).count();
    let _ = write!(
        out,
        "<h1>gate report: {} runs</h1><p class=\"meta\">{shown} shown in full (the most severe first); the others by their suspects, so the document stays small. <code>gate report TRACE --html FILE</code> shows any of them in full.</p>",
        runs.len()
    );
    out.push_str("<table><tr><th>#</th><th>trace</th><th>GPUs</th><th>steady samples</th><th>wall time s</th><th>exit</th><th>suspects</th><th>first suspect</th><th>shown</th></tr>");
    for (i, (r, section)) in runs.iter().zip(full).enumerate() {
        let first = r
            .suspects
            .first()
            .map(|f| format!("{} {}", sev_badge(f.severity), escape(&f.title)))
            .unwrap_or_else(|| "&ndash;".into());
        let _ = write!(
            out,
            "<tr><td class=\"n\"><a href=\"#run-{i}\">{i}</a></td><td class=\"cmd\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{first}</td><td>{}</td></tr>",
            escape(&r.source),
            r.gpus.len(),
            r.steady_samples,
            num(r.wall_time_s),
            r.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "&ndash;".into()),
            r.suspects.len(),
            if section.is_some() { "in full" } else { "suspects" },
        );
    }
    out.push_str("</table>");
    out
}

/// A run past the budget: provenance and suspects.
fn compact_section(r: &RunReport, idx: usize) -> String {
    let mut out = String::new();
    let _ = write!(out, r#"<section id="run-{idx}">"#);
    provenance(&mut out, r);
    suspects(&mut out, r);
    out.push_str("<p class=\"meta\">Plots, panorama, processes and statistics left out (see the table of runs above).</p></section>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::RuleSet;
    use crate::synthetic::{self, Signature};
    use crate::trace::Trace;

    fn html(sig: &Signature, ngpu: usize) -> String {
        let t = synthetic::trace(sig, ngpu);
        let r = RunReport::build(&t, &RuleSet::builtin(), 1000.0);
        render(&[r], HTML_BUDGET_BYTES)
    }

    #[test]
    fn html_is_self_contained_escaped_and_deterministic() {
        let a = html(&Signature::contention(), 2);
        let b = html(&Signature::contention(), 2);
        assert_eq!(a, b);
        // No network: nothing fetched, no scripts.
        for bad in ["<script", "src=\"http", "href=\"http", "@import", "url("] {
            assert!(!a.contains(bad), "found {bad}");
        }
        // The hostile command line is escaped, never live markup.
        assert!(!a.contains("<b>&amp;</b>"));
        assert!(a.contains("print(&#39;&lt;b&gt;&amp;amp;&lt;/b&gt;&#39;)"));
        // Plots per GPU, shaded warm-up and contention, suspects table.
        assert_eq!(a.matches("<svg").count(), 2 * 4 + 1);
        assert!(a.contains(r##"fill="#8a8f98""##));
        assert!(a.contains(r##"fill="#8c564b" fill-opacity"##));
        assert!(a.contains("sev-high"));
        assert!(a.contains("Other processes share the GPU"));
    }

    #[test]
    fn many_runs_keep_to_the_budget_with_one_table() {
        let sigs = [
            Signature::healthy().with_seed(1),
            Signature::healthy().with_seed(2),
            Signature::contention(),
        ];
        let traces: Vec<Trace> = sigs.iter().map(|s| synthetic::trace(s, 2)).collect();
        let rules = RuleSet::builtin();
        let runs: Vec<RunReport> = (traces.iter())
            .map(|t| RunReport::build(t, &rules, 1000.0))
            .collect();
        let all = render(&runs, HTML_BUDGET_BYTES);
        assert!(all.contains("<p>Runs: ") && !all.contains("shown in full"));
        assert_eq!(all.matches("<svg").count(), 3 * (2 * 4 + 1));
        // Room for one: the contention run (high severity) is the one in
        // full, the others show their suspects; one table lists all three.
        let one = full_section(&runs[2], 2).len();
        let small = render(&runs, one + 16 * 1024);
        assert!(small.contains("gate report: 3 runs"));
        assert!(small.contains("1 shown in full"));
        assert_eq!(small.matches("<svg").count(), 2 * 4 + 1);
        assert_eq!(small.matches("<section id=\"run-").count(), 3);
        assert_eq!(small.matches("<td>suspects</td>").count(), 2);
        assert!(small.contains(&full_section(&runs[2], 2)));
        assert!(
            small.len() < all.len() / 2,
            "{} vs {}",
            small.len(),
            all.len()
        );
        assert!(small.len() < one + 16 * 1024 + 4096, "{}", small.len());
        // No room: every run by its suspects, still one table.
        let tiny = render(&runs, 1);
        assert!(tiny.contains("0 shown in full") && !tiny.contains("<svg"));
    }

    #[test]
    fn unmeasured_series_say_so() {
        let mut sig = Signature::healthy();
        sig.no_gpm = true;
        let h = html(&sig, 1);
        assert!(h.contains("SM active (not measured)"));
        assert!(h.contains("no GPM"));
    }
}
