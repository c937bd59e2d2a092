//! A run's report as terminal text: provenance, the utilization panorama,
//! ranked suspects, processes, and the statistics of the steady window.

use super::{scope_title, RunReport, RunReporter};
use crate::analysis::panorama::{self, Panorama};
use crate::diagnose::Severity;
use crate::escape;
use crate::format::number_or_na as num;

/// Terminal text, one report per run; colour only when asked for (the
/// command decides: `--color`, a terminal, `NO_COLOR`).
pub(crate) struct Text {
    pub color: bool,
}

impl RunReporter for Text {
    /// Each run's timeline keeps to the JSON's share of `TIMELINE_POINTS`
    /// (`json::timeline_rows`, `Panorama::joined`): many runs' text stays
    /// bounded (64 one-hour nodes wrote 54 MB before, docs/limits.md).
    fn render(&self, runs: &[RunReport]) -> String {
        let rows = super::json::timeline_rows(runs.len());
        runs.iter()
            .map(|r| match r.panorama.joined(rows) {
                None => render(r, self.color),
                Some(panorama) => render(
                    &RunReport {
                        panorama,
                        ..r.clone()
                    },
                    self.color,
                ),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Severity label, coloured when `color` (decided by `console::color_enabled`).
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
pub(super) fn provenance(r: &RunReport) -> Vec<String> {
    // Every field below came from the trace file: shown through
    // escape::terminal, never raw (a hostile note could drive the terminal
    // or start a CI workflow command on a line of its own).
    let mut lines = vec![format!("gate report: {}", escape::terminal(&r.source))];
    if !r.command.is_empty() {
        lines.push(format!(
            "  command: {}",
            escape::terminal(&r.command.join(" "))
        ));
    }
    if let Some(pid) = r.attach_pid {
        lines.push(format!("  attached to PID {pid}"));
    }
    if let Some(n) = &r.note {
        lines.push(format!("  note: {}", escape::terminal(n)));
    }
    let gpus: Vec<String> = r
        .gpus
        .iter()
        .map(|g| {
            format!(
                "{} {}{}",
                g.index,
                escape::terminal(&g.name),
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
        crate::format::secs(r.steady_start_ms),
        crate::format::secs(r.steady_end_ms),
        r.interval_ms,
        crate::format::secs(r.warmup_ms as f64),
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
fn render(r: &RunReport, color: bool) -> String {
    let mut out = provenance(r).join("\n");
    out.push_str("\n\n== 1. Utilization panorama ==\n");
    out.push_str(&panorama(&r.panorama));

    out.push_str("\n== 2. Suspects (ranked) ==\n");
    if r.suspects.is_empty() {
        out.push_str("No suspects: no rule's condition held (conditions on unmeasured metrics never fire).\n");
    }
    for (i, f) in r.suspects.iter().enumerate() {
        out.push_str(&format!(
            "\n{}. [{}] {} ({}, score {})\n",
            i + 1,
            severity_label(f.severity, color),
            escape::terminal(&f.title),
            escape::terminal(&f.rule),
            f.score
        ));
        // The headline is above; the rest as `check` prints it.
        for line in f.text_lines(&escape::terminal).iter().skip(1) {
            out.push_str(&format!("   {line}\n"));
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
                    escape::terminal(if p.cmdline.is_empty() {
                        &p.name
                    } else {
                        &p.cmdline
                    }),
                ]
            })
            .collect();
        out.push_str(&table(&header, &rows));
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
                out.push_str(&table(&header, &rows));
                rows.clear();
            }
            scope = &s.scope;
            out.push_str(&format!("\n{}\n", escape::terminal(&scope_title(r, scope))));
        }
        rows.push(vec![
            escape::terminal(&s.metric),
            escape::terminal(&s.unit),
            num(s.mean),
            num(s.p50),
            num(s.p99),
            num(s.max),
            s.n.to_string(),
        ]);
    }
    if !rows.is_empty() {
        out.push_str(&table(&header, &rows));
    }
    out
}

/// The panorama as plain-text tables, one per GPU, then the merged
/// problem intervals.
pub fn panorama(p: &Panorama) -> String {
    let mut out = String::new();
    let legend: Vec<String> = panorama::Problem::ALL
        .iter()
        .map(|x| format!("{} = {}", x.flag(), x.describe()))
        .collect();
    out.push_str(&format!(
        "{} s slices; flags: {}; w = warm-up (not flagged)\n",
        crate::format::secs(p.slice_ms),
        legend.join(", ")
    ));
    for g in &p.gpus {
        out.push_str(&format!(
            "\nGPU {} ({})\n",
            g.gpu,
            escape::terminal(&g.name)
        ));
        let mut header = vec!["t_s".to_string()];
        header.extend(panorama::GPU_COLUMNS.iter().map(|c| c.1.to_string()));
        header.push(panorama::HOST_COLUMN.1.into());
        header.push("flags".into());
        let rows = super::panorama_rows(g);
        out.push_str(&table(&header, &rows));
    }
    if p.intervals.is_empty() {
        out.push_str("\nNo problem intervals.\n");
    } else {
        out.push_str("\nProblem intervals:\n");
        for i in &p.intervals {
            out.push_str(&format!(
                "  GPU {} {} {}-{} s ({})\n",
                i.gpu,
                i.problem.as_str(),
                crate::format::secs(i.start_ms),
                crate::format::secs(i.end_ms),
                i.problem.describe()
            ));
        }
    }
    out
}

/// A right-aligned plain-text table (first column left-aligned).
pub(super) fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < w.len() {
                w[i] = w[i].max(c.chars().count());
            }
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::from(" ");
        for (i, c) in cells.iter().enumerate() {
            let pad = w[i].saturating_sub(c.chars().count());
            s.push(' ');
            if i == 0 || i + 1 == cells.len() {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header);
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::run::tests_support::report;
    use crate::synthetic;
    use crate::synthetic::Signature;

    /// Issue 44.2: many runs' text keeps each GPU's timeline to the JSON's
    /// share of `TIMELINE_POINTS`, its header saying the joined width; the
    /// statistics are the full report's.
    #[test]
    fn many_runs_keep_their_timeline_to_the_jsons_share() {
        use crate::report::run::{json, TIMELINE_POINTS};
        let mut sig = Signature::contention();
        sig.duration_s = 900.0;
        let t = synthetic::trace(&sig, 1);
        let r = RunReport::build(&t, &crate::diagnose::RuleSet::builtin(), 1000.0);
        let full = r.panorama.gpus[0].slices.len();
        let runs: Vec<RunReport> = (0..5).map(|_| r.clone()).collect();
        let rows = json::timeline_rows(runs.len());
        assert_eq!(rows, TIMELINE_POINTS / 5);
        let k = full.div_ceil(rows);
        assert!(k >= 2, "{full} slices should not fit {rows}");
        let text = Text { color: false }.render(&runs);
        let joined = crate::format::secs(r.panorama.slice_ms * k as f64);
        assert_eq!(text.matches(&format!("{joined} s slices;")).count(), 5);
        // Each run's panorama table: a header and one line per joined slice.
        let one = render(&r, false);
        let table_lines = |t: &str| {
            t.lines()
                .skip_while(|l| !l.starts_with("GPU "))
                .skip(1)
                .take_while(|l| !l.is_empty())
                .count()
        };
        let first = text.split("gate report:").nth(1).unwrap();
        assert_eq!(table_lines(first), 1 + full.div_ceil(k));
        assert_eq!(table_lines(&one), 1 + full);
        // The statistics section is the full report's.
        let stats = |t: &str| t.split("== 4.").nth(1).unwrap().trim_end().to_string();
        assert_eq!(stats(first), stats(&one));
        // One run (under the cap) is the report as before.
        assert_eq!(Text { color: false }.render(&runs[..1]), one);
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
        let text = render(&r, false);
        assert!(text.contains("sm_active_pct"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.contains("sm_active_pct") && l.contains("n/a")),
            "{text}"
        );
    }

    #[test]
    fn text_sections_come_in_order_and_rank_suspects() {
        let text = render(&report(&Signature::launch_storm(), 1), false);
        let pos = |s: &str| {
            text.find(s)
                .unwrap_or_else(|| panic!("no '{s}' in\n{text}"))
        };
        assert!(pos("== 1.") < pos("== 2.") && pos("== 2.") < pos("== 3."));
        assert!(pos("== 3.") < pos("== 4."));
        assert!(text.contains("1. [HIGH] Launch-bound"), "{text}");
        assert!(!text.contains('\x1b'));
        assert!(render(&report(&Signature::launch_storm(), 1), true).contains("\x1b[1;31m"));
    }

    #[test]
    fn text_marks_missing_as_na_and_flags_rows() {
        let mut sig = Signature::sync_stall();
        sig.no_gpm = true;
        let text = panorama(&panorama::build(&synthetic::trace(&sig, 1), 5000.0));
        assert!(text.contains("n/a"), "{text}");
        assert!(text.contains(" I\n"), "{text}");
        assert!(text.contains("GPU 0 idle 5-35 s"), "{text}");
    }
}
