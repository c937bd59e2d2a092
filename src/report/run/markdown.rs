//! A run's report as Markdown (for artifacts and merge-request comments).

use super::text::provenance;
use super::{scope_title, RunReport, RunReporter};
use crate::analysis::panorama;
use crate::escape;
use crate::format::number_or_na as num;

/// Markdown, one section per run.
pub struct Markdown;

impl RunReporter for Markdown {
    fn render(&self, runs: &[RunReport]) -> String {
        runs.iter().map(render).collect::<Vec<_>>().join("\n")
    }
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

/// The Markdown report of one run: provenance, suspects, panorama,
/// processes, statistics.
fn render(r: &RunReport) -> String {
    let mut out = format!("## gate report: {}\n\n", escape::markdown_text(&r.source));
    for line in provenance(r).iter().skip(1) {
        out.push_str(&format!("- {}\n", escape::markdown_text(line.trim())));
    }
    suspects(r, &mut out);
    panorama_tables(r, &mut out);
    processes(r, &mut out);
    statistics(r, &mut out);
    out
}

/// Ranked suspects: a summary table, then each one's explanation and next steps.
fn suspects(r: &RunReport, out: &mut String) {
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
                    format!(
                        "{} (`{}`)",
                        escape::markdown_text(&f.title),
                        escape::markdown_code(&f.rule)
                    ),
                ]
            })
            .collect();
        out.push_str(&md_table(&["#", "severity", "suspect"], &rows));
        for (i, f) in r.suspects.iter().enumerate() {
            out.push('\n');
            out.push_str(&crate::report::finding::markdown(f, i + 1));
        }
    }
}

/// Problem intervals, then one table of slices per GPU.
fn panorama_tables(r: &RunReport, out: &mut String) {
    out.push_str("\n### Utilization panorama\n\n");
    let p = &r.panorama;
    out.push_str(&format!(
        "{} s slices. Flags: {}; w = warm-up.\n",
        crate::format::secs(p.slice_ms),
        panorama::Problem::ALL
            .iter()
            .map(|x| format!("{} = {}", x.flag(), escape::markdown_text(x.describe())))
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
                crate::format::secs(i.start_ms),
                crate::format::secs(i.end_ms)
            ));
        }
    }
    for g in &p.gpus {
        out.push_str(&format!(
            "\n**GPU {} ({})**\n\n",
            g.gpu,
            escape::markdown_text(&g.name)
        ));
        let mut header: Vec<&str> = vec!["t s"];
        header.extend(panorama::GPU_COLUMNS.iter().map(|c| c.1));
        header.push(panorama::HOST_COLUMN.1);
        header.push("flags");
        let rows = super::panorama_rows(g);
        out.push_str(&md_table(&header, &rows));
    }
}

/// Processes seen on each GPU.
fn processes(r: &RunReport, out: &mut String) {
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
                    escape::markdown_text(if p.cmdline.is_empty() {
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
}

/// p50/p99/max of every metric, one table per scope.
fn statistics(r: &RunReport, out: &mut String) {
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
            out.push_str(&format!(
                "\n**{}**\n\n",
                escape::markdown_text(&scope_title(r, scope))
            ));
        }
        rows.push(vec![
            escape::markdown_text(&s.metric),
            escape::markdown_text(&s.unit),
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::run::tests_support::report;
    use crate::synthetic::Signature;

    #[test]
    fn markdown_escapes_hostile_command_lines() {
        let md = render(&report(&Signature::contention(), 1));
        assert!(!md.contains("<b>"), "raw HTML leaked");
        assert!(md.contains("&lt;b&gt;&amp;amp;&lt;/b&gt;"), "{md}");
        assert!(md.contains("a&lt;b &amp;&amp; c&gt;d"), "{md}");
        assert!(
            md.contains("| 1 | high | Other processes share the GPU (`gpu_contention`) |"),
            "{md}"
        );
        assert!(
            md.contains("**1. Other processes share the GPU** (high, `gpu_contention`)"),
            "{md}"
        );
    }
}
