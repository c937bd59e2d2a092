//! The check page (`gate check --html F`, and `gate check --suite --html F`:
//! one page for every workload): what a reviewer of a red pipeline asks,
//! "what moved between the baseline and this run?", as a picture. The
//! verdict, the regressed numbers and the first cause on top
//! (`html_lead.rs`), then the reasons, the warnings folded; then each
//! diagnosis finding with its
//! evidence beside the curves it cites; then every decisive metric and
//! every metric that moved beyond its noise, each as the baseline's band
//! (its value, the noise band and the practical floor) behind the new run's
//! series over time, one line per GPU (and per run, after reruns).
//!
//! Self-contained (inline CSS and SVG, no script, no external resource),
//! every string from a file, a flag or the benchmark escaped
//! (`escape::html`), and bounded by what is kept, not by what is read: each
//! line holds at most `MAX_POINTS` points whatever the trace's length, a
//! workload draws at most `MAX_CHARTS` charts of at most `MAX_LINES` lines,
//! and past `HTML_BUDGET_BYTES` a workload's section keeps its verdict and
//! table but not its charts.
//!
//! Series come from the runs (`RunInfo::series`), taken from each trace
//! at derive (`summary::RunSeries`): no trace is opened again here.

use super::html_svg::Band;
use super::{change_text, noise_text, tolerance_text};
use crate::escape::html as esc;
use crate::format::value_with_unit;
use crate::gate::{CheckReport, MetricResult, RunVerdict, Verdict};
pub use crate::summary::series::{Points, MAX_LINES, MAX_POINTS};
pub use crate::summary::RunSeries;
use std::fmt::Write as _;

/// Charts per workload at most; further metrics stay in the table.
pub const MAX_CHARTS: usize = 24;
/// The size a page is kept to: sections past it lose their charts.
pub const HTML_BUDGET_BYTES: usize = 6 << 20;
/// Findings shown with their curves.
const MAX_FINDINGS: usize = 5;

const STYLE: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px;color:#1d2330;background:#fff;max-width:1320px}
h1{font-size:22px;margin:0 0 6px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d5d9e0;padding-bottom:4px}
h3{font-size:15px;margin:14px 0 4px}
.verdict{font-size:20px;font-weight:700;padding:10px 14px;border-radius:6px;margin:8px 0;color:#fff}
.v-pass{background:#1e8449}.v-regression,.v-error,.v-invalid{background:#c0392b}.v-inconclusive,.v-unmeasured{background:#7d6608}.v-accepted{background:#8e44ad}
.reasons li{margin:2px 0}.warn{color:#8a5a00}
.meta{color:#4a5568;font-size:13px;line-height:1.5}.meta code{background:#f1f3f6;padding:1px 4px;border-radius:3px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid #d5d9e0;padding:4px 7px;vertical-align:top;text-align:left}
th{background:#f1f3f6}td.n{text-align:right;font-variant-numeric:tabular-nums}
td.regression{color:#c0392b;font-weight:700}td.improvement,td.pass{color:#1e8449}td.inconclusive{color:#7d6608;font-weight:600}td.accepted{color:#8e44ad;font-weight:600}
.sev{display:inline-block;padding:1px 7px;border-radius:9px;font-size:12px;font-weight:600;color:#fff}
.finding{display:flex;gap:18px;border:1px solid #d5d9e0;border-radius:6px;padding:10px;margin:10px 0}
.finding .text{flex:0 0 420px;font-size:14px}.finding .curves{flex:1;min-width:0}
.title{font-weight:600}.rule{color:#6b7280;font-size:12px}.evidence td,.evidence th{padding:1px 10px 1px 0;font-size:13px;border:none}
svg{display:block;margin:2px 0 8px}svg text{font-size:11px;fill:#4a5568}
.legend span{display:inline-block;margin-right:12px;font-size:12px}.sw{display:inline-block;width:12px;height:12px;vertical-align:-2px;margin-right:4px;border-radius:2px}
.grid{display:flex;flex-wrap:wrap;gap:10px}.grid>div{flex:0 0 640px}
.note{color:#6b7280;font-size:13px}
footer{margin-top:30px;color:#6b7280;font-size:12px}
section+section{border-top:3px solid #d5d9e0;margin-top:30px;padding-top:10px}
.lead{border-left:4px solid #c0392b;padding:2px 12px;margin:8px 0;font-size:15px}.lead p{margin:4px 0}.lead .num{white-space:nowrap}
details.warns summary{cursor:pointer;font-size:14px;margin:4px 0}
svg{max-width:100%;height:auto}
@media (max-width:760px){body{margin:10px}.finding{flex-direction:column}.finding .text{flex:none}.grid>div{flex:1 1 100%;min-width:0}table{display:block;overflow-x:auto}.lead .num{white-space:normal}}
"#;

/// Line colours, one per run x GPU (colour-blind-safe Tableau-ish palette).
const COLORS: [&str; MAX_LINES] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#17becf", "#8c564b", "#e377c2", "#7f7f7f",
];
const BAND: &str = "#4c78a8";

/// Lines of a chart: label and points.
type Lines<'a> = Vec<(String, &'a [(f64, f64)])>;

/// One workload of the page: its report and its runs' series.
pub struct Workload<'a> {
    pub report: &'a CheckReport,
    pub runs: Vec<&'a RunSeries>,
}

/// The metrics a workload's page draws, in order: decisive metrics (gated,
/// and not a plain pass, or the benchmark's own numbers), then the context
/// metrics shown by every reporter (`super::shown`), then those the
/// findings cite; at most `MAX_CHARTS`. Rows over the GPUs and nodes only:
/// a chart draws each GPU itself.
pub(crate) fn charted(r: &CheckReport) -> Vec<&MetricResult> {
    let whole = |m: &&MetricResult| m.gpu.is_none() && m.node.is_none();
    let decisive = |m: &&MetricResult| {
        m.gated && (m.first_class || !matches!(m.verdict, Verdict::Pass | Verdict::Info))
    };
    let cited: Vec<String> = r
        .diagnosis
        .iter()
        .take(MAX_FINDINGS)
        .flat_map(|f| f.rows.iter().flat_map(|row| cited_ids(&row.expr)))
        .collect();
    let mut out: Vec<&MetricResult> = Vec::new();
    let tiers: [&dyn Fn(&&MetricResult) -> bool; 3] =
        [&decisive, &|m| !m.gated && super::shown(m), &|m| {
            cited.contains(&m.id)
        }];
    for tier in tiers {
        for m in r.metrics.iter().filter(whole).filter(|m| tier(m)) {
            if out.len() < MAX_CHARTS && !out.iter().any(|o| o.id == m.id) {
                out.push(m);
            }
        }
    }
    out
}

/// Metric ids an evidence expression names (`sm_active_pct.mean /
/// gpu_busy_pct.mean` -> both), those of the catalogue only.
fn cited_ids(expr: &str) -> Vec<String> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| crate::metrics::find(w).is_some())
        .map(str::to_string)
        .collect()
}

/// The series a workload's page needs: its runs', taken at derive,
/// borrowed.
pub(crate) fn series_for(r: &CheckReport) -> Vec<&RunSeries> {
    use crate::summary::series::NO_SERIES;
    (r.runs.iter())
        .map(|run| run.series.as_deref().unwrap_or(&NO_SERIES))
        .collect()
}

/// The page for one check.
pub fn render(report: &CheckReport, runs: Vec<&RunSeries>) -> String {
    render_page(&[Workload { report, runs }], None, HTML_BUDGET_BYTES)
}

/// A suite: its exit code and word, and the workloads that could not be
/// judged (name, exit code, why).
pub(crate) struct Suite<'a> {
    pub exit_code: i32,
    pub word: &'a str,
    pub failed: &'a [(String, i32, String)],
}

/// One page for one check or a suite's workloads: (a suite's verdict and
/// the table of its workloads, then) each workload's section, in order,
/// each within what is left of `budget` (past it: without charts).
pub(crate) fn render_page(workloads: &[Workload], suite: Option<&Suite>, budget: usize) -> String {
    let mut out = String::with_capacity(128 * 1024);
    let head = match (workloads, suite) {
        ([one], None) => format!("gate check: baseline {}", one.report.baseline.name),
        _ => format!("gate check --suite: {} workloads", workloads.len()),
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{STYLE}</style></head><body>\n",
        esc(&head)
    );
    if let Some(suite) = suite {
        out.push_str(&suite_table(workloads, suite));
    }
    // Past the budget a section loses its charts; past it even so, a
    // suite's further sections are left out and counted (its table above
    // names every workload): 1,000 workloads made a 15.9 MB page (issue
    // 41.10). One check's section always stays.
    let mut left_out = 0;
    for (i, w) in workloads.iter().enumerate() {
        let section = section(w, i, true);
        if out.len() + section.len() <= budget {
            out.push_str(&section);
            continue;
        }
        let bare = section_without_charts(w, i);
        if out.len() + bare.len() <= budget || (i == 0 && suite.is_none()) {
            out.push_str(&bare);
        } else {
            left_out += 1;
        }
    }
    if left_out > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">{left_out} more workload section(s) left out: the page reached its size limit (docs/limits.md); the table above names every workload and the JSON report has every number.</p>"
        );
    }
    let _ = write!(
        out,
        "<footer>Generated by gate {} from the baseline and the recorded trace(s); self-contained: no script, no external resource.</footer>\n</body></html>\n",
        esc(crate::GATE_VERSION)
    );
    out
}

fn section_without_charts(w: &Workload, i: usize) -> String {
    let mut s = section(w, i, false);
    s.push_str("<p class=\"note\">Charts left out: the page reached its size limit (docs/limits.md); the JSON report has every number.</p>");
    s
}

fn verdict_class(v: RunVerdict) -> &'static str {
    match v {
        RunVerdict::Pass => "v-pass",
        RunVerdict::Regression => "v-regression",
        RunVerdict::Error => "v-error",
        RunVerdict::Invalid => "v-invalid",
        RunVerdict::Inconclusive => "v-inconclusive",
        RunVerdict::Unmeasured => "v-unmeasured",
        RunVerdict::Disturbed => "v-unmeasured",
        RunVerdict::Accepted => "v-accepted",
    }
}

fn suite_table(workloads: &[Workload], suite: &Suite) -> String {
    let class = match suite.exit_code {
        crate::exit_code::PASS => "v-pass",
        crate::exit_code::INCONCLUSIVE => "v-inconclusive",
        _ => "v-regression",
    };
    let mut s = format!(
        "<h1>gate check --suite</h1><div class=\"verdict {class}\">SUITE: {} (exit {})</div>",
        esc(suite.word),
        suite.exit_code
    );
    // The first failing workload's lead, on the first screen with the verdict.
    if let Some((i, w)) = workloads
        .iter()
        .enumerate()
        .find(|(_, w)| w.report.exit_code() != crate::exit_code::PASS)
    {
        let lead = super::html_lead::lead(w.report, i);
        if !lead.is_empty() {
            let _ = write!(
                s,
                "<p class=\"note\">First failing workload: <a href=\"#w{i}\">{}</a></p>{lead}",
                esc(&w.report.baseline.name)
            );
        }
    }
    s.push_str("<table><tr><th>workload (baseline)</th><th>verdict</th><th>exit</th><th>first reason</th></tr>");
    for (name, code, why) in suite.failed {
        let _ = write!(
            s,
            "<tr><td>{}</td><td class=\"regression\">NOT JUDGED</td><td class=\"n\">{code}</td><td>{}</td></tr>",
            esc(name),
            esc(why)
        );
    }
    for (i, w) in workloads.iter().enumerate() {
        let r = w.report;
        let _ = write!(
            s,
            "<tr><td><a href=\"#w{i}\">{}</a></td><td class=\"{}\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            esc(&r.baseline.name),
            esc(r.verdict().as_str()),
            esc(&r.verdict().as_str().to_uppercase()),
            r.exit_code(),
            esc(r.reasons().first().map(String::as_str).unwrap_or(""))
        );
    }
    s.push_str("</table>");
    s
}

/// One workload: verdict and reasons, provenance, the table, the findings
/// beside their curves, the other charts.
fn section(w: &Workload, idx: usize, charts: bool) -> String {
    let r = w.report;
    let mut s = format!("<section id=\"w{idx}\">");
    let _ = write!(
        s,
        "<h1>gate check against baseline {}</h1><div class=\"verdict {}\">VERDICT: {} (exit {})</div>",
        esc(&r.baseline.name),
        verdict_class(r.verdict()),
        esc(&r.verdict().as_str().to_uppercase()),
        r.exit_code()
    );
    // The first screen: verdict, regressed numbers, first cause; then the
    // reasons, the warnings folded (they once pushed the cause 1,100 px down).
    s.push_str(&super::html_lead::lead(r, idx));
    if !r.reasons().is_empty() {
        s.push_str("<ul class=\"reasons\">");
        for reason in r.reasons() {
            let _ = write!(s, "<li>{}</li>", esc(reason));
        }
        s.push_str("</ul>");
    }
    if !r.warnings().is_empty() {
        let _ = write!(
            s,
            "<details class=\"warns\"><summary class=\"warn\">{} warning(s)</summary><ul class=\"reasons\">",
            r.warnings().len()
        );
        for warning in r.warnings() {
            let _ = write!(s, "<li class=\"warn\">warning: {}</li>", esc(warning));
        }
        s.push_str("</ul></details>");
    }
    s.push_str(&provenance(r));
    let shown = charted(r);
    s.push_str(&metric_table(r, &shown));
    if let Some(d) = crate::gate::detectable::statement(&r.metrics) {
        let _ = write!(
            s,
            "<p class=\"note\">Detectable change (95 % confidence, {:.0} % power): {}</p>",
            crate::gate::detectable::POWER * 100.0,
            esc(&d)
        );
    }
    let mut drawn: Vec<&str> = Vec::new();
    if !r.diagnosis.is_empty() {
        s.push_str("<h2>Diagnosis: what changed, most likely cause first</h2>");
        for (k, f) in r.diagnosis.iter().take(MAX_FINDINGS).enumerate() {
            let ids: Vec<String> = f.rows.iter().flat_map(|row| cited_ids(&row.expr)).collect();
            let mut curves = String::new();
            for m in shown.iter().filter(|m| ids.contains(&m.id)) {
                if charts && !drawn.contains(&m.id.as_str()) {
                    curves.push_str(&metric_chart(m, &w.runs, 620.0, &anchor(r, m)));
                    drawn.push(&m.id);
                } else if charts {
                    let _ = write!(
                        curves,
                        "<p class=\"note\">{}: drawn above.</p>",
                        esc(&m.shown_name())
                    );
                }
            }
            let _ = write!(
                s,
                "<div class=\"finding\" id=\"{}\"><div class=\"text\">{}</div><div class=\"curves\">{curves}</div></div>",
                super::html_lead::finding_id(idx, k),
                crate::report::finding::html(f)
            );
        }
    }
    let rest: Vec<&&MetricResult> = shown
        .iter()
        .filter(|m| !drawn.contains(&m.id.as_str()))
        .collect();
    if charts && !rest.is_empty() {
        s.push_str("<h2>Decisive and moved metrics over time</h2><div class=\"grid\">");
        for m in rest {
            let _ = write!(
                s,
                "<div>{}</div>",
                metric_chart(m, &w.runs, 640.0, &anchor(r, m))
            );
        }
        s.push_str("</div>");
    }
    s.push_str("</section>\n");
    s
}

fn provenance(r: &CheckReport) -> String {
    let b = &r.baseline;
    let mut s = format!(
        "<div class=\"meta\">Baseline <code>{}</code>: {} run(s) on {}, captured {}{}<br>",
        esc(&b.source),
        b.runs,
        esc(&crate::format::gpus_text(&b.gpu_model, b.gpu_count)),
        esc(&b.created),
        b.commit
            .as_ref()
            .map(|c| format!(" at commit <code>{}</code>", esc(c)))
            .unwrap_or_default()
    );
    for run in &r.runs {
        let _ = write!(
            s,
            "Run <code>{}</code> (<code>{}</code>): {} steady samples ({} valid), wall {}, exit {}<br>",
            esc(&run.source),
            esc(if run.command.is_empty() {
                "attached to a PID"
            } else {
                &run.command
            }),
            run.steady_samples,
            run.valid_samples,
            esc(&super::wall_text(run)),
            run.exit_code
                .map(|c| c.to_string())
                .unwrap_or_else(|| "n/a".into())
        );
    }
    s.push_str("</div>");
    s
}

fn metric_table(r: &CheckReport, shown: &[&MetricResult]) -> String {
    let mut s = String::from("<h2>Decisive and moved metrics</h2>");
    if shown.is_empty() {
        s.push_str("<p class=\"note\">No gated metric could be compared, and no other metric moved beyond its noise.</p>");
        return s;
    }
    s.push_str("<table><tr><th>metric</th><th>stat</th><th>baseline</th><th>new</th><th>change</th><th>floor</th><th>noise</th><th>verdict</th><th>why</th></tr>");
    for m in shown {
        let _ = write!(
            s,
            "<tr><td><a href=\"#{}\">{}</a></td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
            anchor(r, m),
            esc(&m.shown_name()),
            m.statistic.as_str(),
            esc(&value_with_unit(m.baseline, &m.unit)),
            esc(&value_with_unit(m.new, &m.unit)),
            esc(&change_text(m)),
            esc(&tolerance_text(m)),
            esc(&noise_text(m)),
            m.verdict.as_str(),
            m.verdict.as_str(),
            esc(&super::words::metric_reason(m))
        );
    }
    let more = r.metrics.iter().filter(|m| super::shown(m)).count();
    let _ = write!(
        s,
        "</table><p class=\"note\">{} of {} compared rows shown here (per GPU and node: the JSON report).</p>",
        shown.len(),
        more.max(shown.len())
    );
    s
}

fn anchor(r: &CheckReport, m: &MetricResult) -> String {
    // Baseline names and metric ids are [A-Za-z0-9._-] once validated;
    // anything else (a user metric's odd id) becomes '-'.
    let keep = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    let name: String = format!("{}--{}", r.baseline.name, m.id)
        .chars()
        .map(|c| if keep(c) { c } else { '-' })
        .collect();
    format!("m-{name}")
}

/// The lines of one metric: each run's, each GPU's, at most `MAX_LINES`.
fn lines_of<'a>(m: &MetricResult, runs: &[&'a RunSeries]) -> (Lines<'a>, usize) {
    let mut lines = Vec::new();
    let mut total = 0;
    for (ri, run) in runs.iter().enumerate() {
        // Lines not kept at derive: runs before this one fill the chart.
        total += run.left_out.get(&m.id).copied().unwrap_or(0);
        for ((id, gpu), pts) in &run.lines {
            if id != &m.id {
                continue;
            }
            total += 1;
            if lines.len() < MAX_LINES {
                let mut label = String::new();
                if runs.len() > 1 {
                    label.push_str(&format!("run {}", ri + 1));
                }
                if let Some(g) = gpu {
                    if !label.is_empty() {
                        label.push_str(" · ");
                    }
                    label.push_str(&format!("GPU {g}"));
                }
                if label.is_empty() {
                    label.push_str("new run");
                }
                lines.push((label, pts.as_slice()));
            }
        }
    }
    (lines, total)
}

/// One metric's chart: the baseline band behind the new run's lines.
fn metric_chart(m: &MetricResult, runs: &[&RunSeries], width: f64, anchor: &str) -> String {
    let (lines, total) = lines_of(m, runs);
    let end_s = runs.iter().map(|r| r.end_s).fold(0.0, f64::max);
    let warmup_s = runs.iter().map(|r| r.warmup_s).fold(0.0, f64::max);
    let mut s = format!(
        "<h3 id=\"{anchor}\">{} ({}{})</h3>",
        esc(&m.shown_name()),
        m.statistic.as_str(),
        if m.unit.is_empty() {
            String::new()
        } else {
            format!(", {}", esc(&m.unit))
        }
    );
    let band = band_of(m);
    s.push_str(&super::html_svg::chart(&super::html_svg::Chart {
        title: &m.shown_name(),
        width,
        lines: &lines,
        colors: &COLORS,
        band: band.as_ref(),
        new: m.new,
        end_s,
        warmup_s,
        percent: m.unit == "%",
    }));
    s.push_str("<div class=\"legend\">");
    if let Some(b) = &band {
        let pm = |v: Option<f64>| match v {
            Some(v) => format!("±{}", value_with_unit(Some(v), &m.unit)),
            None => "none".into(),
        };
        let _ = write!(
            s,
            "<span><i class=\"sw\" style=\"background:{BAND};opacity:.35\"></i>baseline {}, noise band {}</span><span><i class=\"sw\" style=\"background:none;border:1px dashed {BAND}\"></i>floor {}</span>",
            esc(&value_with_unit(Some(b.value), &m.unit)),
            esc(&pm(b.noise)),
            esc(&pm(b.floor))
        );
    }
    for (i, (label, _)) in lines.iter().enumerate() {
        let _ = write!(
            s,
            "<span><i class=\"sw\" style=\"background:{}\"></i>{}</span>",
            COLORS[i % COLORS.len()],
            esc(label)
        );
    }
    if m.new.is_some() {
        let _ = write!(
            s,
            "<span><i class=\"sw\" style=\"background:#c0392b\"></i>new {} {}</span>",
            m.statistic.as_str(),
            esc(&value_with_unit(m.new, &m.unit))
        );
    }
    if total > lines.len() {
        let _ = write!(
            s,
            "<span>{} more lines left out</span>",
            total - lines.len()
        );
    }
    if lines.is_empty() {
        s.push_str("<span>one number per run (no series over time)</span>");
    }
    s.push_str("</div>");
    s
}

/// The baseline's band of a metric: its value, the noise band around it
/// and the practical floor.
fn band_of(m: &MetricResult) -> Option<Band> {
    Some(Band {
        value: m.baseline.filter(|v| v.is_finite())?,
        noise: m.noise.filter(|n| n.is_finite() && *n > 0.0),
        floor: m.tolerance.filter(|t| t.is_finite() && *t > 0.0),
    })
}

/// Longest `--html-url` accepted: a link, not a document.
pub const MAX_URL_BYTES: usize = 1024;

/// `--html-url`: an http(s) URL of printable ASCII without the characters
/// that could end a Markdown link or an HTML attribute early.
pub(crate) fn validate_url(url: &str) -> Result<(), String> {
    let fix =
        "give the http(s) address where CI keeps the --html page, e.g. the run's artifacts page";
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(format!(
            "--html-url '{}' is not an http(s) URL; {fix}",
            crate::escape::terminal(url)
        ));
    }
    if url.len() > MAX_URL_BYTES {
        return Err(format!(
            "--html-url is {} bytes, more than {MAX_URL_BYTES}; {fix}",
            url.len()
        ));
    }
    if let Some(c) = url
        .chars()
        .find(|c| !c.is_ascii_graphic() || "()<>\"'`[]\\{}|^".contains(*c))
    {
        return Err(format!(
            "--html-url '{}' contains {c:?}, which a link cannot hold; percent-encode it",
            crate::escape::terminal(url)
        ));
    }
    Ok(())
}

/// The line that links the page (Markdown), `url` validated.
fn link_line(url: &str) -> String {
    format!("Picture of this check (baseline band and new run over time, diagnosis beside its curves): [the check page]({url})\n")
}

/// The Markdown report (and step summary) with the link under its heading.
pub(crate) fn link_markdown(markdown: &str, url: &str) -> String {
    match markdown.find("\n\n") {
        Some(at) => format!(
            "{}\n\n{}{}",
            &markdown[..at],
            link_line(url),
            &markdown[at + 1..]
        ),
        None => format!("{markdown}\n{}", link_line(url)),
    }
}

/// The PR comment with the link above its hidden markers (which stay last).
pub(crate) fn link_pr_comment(comment: &str, url: &str) -> String {
    let line = format!("\n{}", link_line(url));
    match comment.rfind("\n<!-- gate-pr-comment:") {
        Some(at) => format!("{}{line}{}", &comment[..at], &comment[at..]),
        None => format!("{comment}{line}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thousand_workloads_keep_the_page_within_its_budget() {
        let report = super::super::tests_support::sample_report();
        let workloads: Vec<Workload> = (0..1000)
            .map(|_| Workload {
                report: &report,
                runs: Vec::new(),
            })
            .collect();
        let failed: Vec<(String, i32, String)> = Vec::new();
        let suite = Suite {
            exit_code: 1,
            word: "REGRESSION",
            failed: &failed,
        };
        let page = render_page(&workloads, Some(&suite), HTML_BUDGET_BYTES);
        // The suite's table row per workload, past the budget.
        assert!(
            page.len() < HTML_BUDGET_BYTES + 512 * 1024,
            "{} bytes",
            page.len()
        );
        assert!(page.contains("more workload section(s) left out"));
        assert!(page.ends_with("</body></html>\n"));
    }
}
