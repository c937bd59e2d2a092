//! Terminal reporter: a compact table, first-class metrics first, the
//! verdict last (where the eye lands). Colour only when asked for (the
//! command decides with `console::color_enabled`: `--color`, `NO_COLOR`,
//! `CLICOLOR_FORCE`, `CLICOLOR`, a TTY).

use super::{change_text, noise_text, tolerance_text, Reporter, CONTEXT_MIN_CHANGE_PCT};
use crate::escape;
use crate::format::value_with_unit;
use crate::gate::{CheckReport, MetricResult, RunVerdict, Verdict};

pub struct Terminal {
    pub color: bool,
    /// Wrap the words (reasons, why, warnings) to this width: the
    /// terminal's; None in a pipe, where each stays one line.
    pub(crate) width: Option<usize>,
}

impl Terminal {
    fn paint(&self, text: &str, code: &str) -> String {
        if self.color && !code.is_empty() {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn verdict_code(v: Verdict) -> &'static str {
        match v {
            Verdict::Regression => "1;31",
            Verdict::Accepted => "1;35",
            Verdict::Improvement => "32",
            Verdict::Inconclusive | Verdict::Missing => "33",
            Verdict::Pass => "32",
            Verdict::Info => "2",
        }
    }
}

fn row(m: &MetricResult) -> [String; 8] {
    [
        escape::terminal(&m.shown_name()),
        m.statistic.as_str().to_string(),
        escape::terminal(&value_with_unit(m.baseline, &m.unit)),
        escape::terminal(&value_with_unit(m.new, &m.unit)),
        escape::terminal(&change_text(m)),
        escape::terminal(&tolerance_text(m)),
        escape::terminal(&noise_text(m)),
        m.verdict.as_str().to_string(),
    ]
}

impl Reporter for Terminal {
    fn render(&self, r: &CheckReport) -> String {
        let mut out = String::new();
        let mut head = String::new();
        self.header(r, &mut head);
        for line in head.lines() {
            out.push_str(&crate::console::wrap(line, self.width, 2));
        }
        out.push('\n');
        self.table(r, &mut out);
        if let Some(s) = crate::gate::detectable::statement(&r.metrics) {
            let line = format!(
                "detectable change (95 % confidence, {:.0} % power): {}",
                crate::gate::detectable::POWER * 100.0,
                escape::terminal(&s)
            );
            out.push_str(&crate::console::wrap(&line, self.width, 2));
        }
        explanations(r, self.width, &mut out);
        out.push('\n');
        self.verdict(r, &mut out);
        out
    }
}

impl Terminal {
    /// What was judged: the baseline, then one line per run.
    fn header(&self, r: &CheckReport, out: &mut String) {
        for line in r.ab.iter().flat_map(super::words::ab_lines) {
            out.push_str(&escape::terminal(&line));
            out.push('\n');
        }
        let b = &r.baseline;
        out.push_str(&format!(
            "gate check against baseline '{}' ({} run{}, {}{}{})\n",
            escape::terminal(&b.name),
            b.runs,
            if b.runs == 1 { "" } else { "s" },
            escape::terminal(&crate::format::gpus_text(&b.gpu_model, b.gpu_count)),
            if b.created.is_empty() {
                String::new()
            } else {
                format!(", captured {}", escape::terminal(&b.created))
            },
            b.commit
                .as_ref()
                .map(|c| format!(
                    ", commit {}",
                    escape::terminal(&c.chars().take(12).collect::<String>())
                ))
                .unwrap_or_default()
        ));
        for run in &r.runs {
            out.push_str(&format!(
                "{}{}: {} steady samples ({} valid), wall {}, exit {}{}\n",
                run.node.map(|n| format!("node{n} ")).unwrap_or_default(),
                escape::terminal(&run.source),
                run.steady_samples,
                run.valid_samples,
                super::wall_text(run),
                run.exit_code
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "n/a".into()),
                if run.truncated { ", TRUNCATED" } else { "" }
            ));
        }
    }

    /// The aligned table: gated metrics, then context metrics that moved.
    fn table(&self, r: &CheckReport, out: &mut String) {
        let shown: Vec<&MetricResult> = r.metrics.iter().filter(|m| super::shown(m)).collect();
        let hidden = r.metrics.len() - shown.len();
        let header = [
            "metric", "stat", "baseline", "new", "change", "floor", "noise", "verdict",
        ]
        .map(String::from);
        let rows: Vec<[String; 8]> = shown.iter().map(|m| row(m)).collect();
        let mut width = [0usize; 8];
        for rw in std::iter::once(&header).chain(rows.iter()) {
            for (i, c) in rw.iter().enumerate() {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String; 8]| -> Vec<String> {
            cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let pad = width[i] - c.chars().count();
                    // Numbers right-aligned, words left-aligned.
                    if (2..=6).contains(&i) {
                        format!("{}{c}", " ".repeat(pad))
                    } else {
                        format!("{c}{}", " ".repeat(pad))
                    }
                })
                .collect()
        };
        out.push_str(&self.paint(line(&header).join("  ").trim_end(), "1"));
        out.push('\n');
        let mut context_started = false;
        for (m, cells) in shown.iter().zip(rows.iter()) {
            if !m.gated && !context_started {
                context_started = true;
                out.push_str(&self.paint(
                    &format!(
                        "-- context, not gated (moved beyond their noise, or >= {CONTEXT_MIN_CHANGE_PCT:.0} %):"
                    ),
                    "2",
                ));
                out.push('\n');
            }
            let mut parts = line(cells);
            let v = parts.pop().unwrap_or_default();
            let painted = self.paint(v.trim_end(), Self::verdict_code(m.verdict));
            parts.push(painted);
            out.push_str(parts.join("  ").trim_end());
            out.push('\n');
        }
        if hidden > 0 {
            out.push_str(&format!(
                "({hidden} more context metrics moved less than {CONTEXT_MIN_CHANGE_PCT:.0} % and within their noise; see --format json)\n"
            ));
        }
    }

    /// The verdict line and its reasons, last, where the eye lands.
    fn verdict(&self, r: &CheckReport, out: &mut String) {
        let code = match r.verdict() {
            RunVerdict::Pass => "1;32",
            RunVerdict::Accepted => "1;35",
            RunVerdict::Regression | RunVerdict::Error | RunVerdict::Invalid => "1;31",
            RunVerdict::Inconclusive | RunVerdict::Unmeasured | RunVerdict::Disturbed => "1;33",
        };
        let headline = format!(
            "VERDICT: {} (exit {})",
            r.verdict().as_str().to_uppercase(),
            r.exit_code()
        );
        out.push_str(&self.paint(&headline, code));
        if r.reasons().is_empty() {
            out.push_str(&format!(
                ": {} gated metric(s) within tolerance\n",
                r.counts.pass + r.counts.improvement
            ));
        } else {
            out.push('\n');
            for reason in r.reasons() {
                let line = format!("  - {}", escape::terminal(reason));
                out.push_str(&crate::console::wrap(&line, self.width, 4));
            }
        }
        // A disturbed run that passed says so beside its verdict too.
        if r.verdict() != RunVerdict::Disturbed {
            for d in &r.disturbance {
                let line = format!("  DISTURBED: {}", escape::terminal(&d.text()));
                out.push_str(&self.paint(&crate::console::wrap(&line, self.width, 4), "1;33"));
            }
        }
    }
}

/// Why each regression failed, the diagnosis, and the warnings.
fn explanations(r: &CheckReport, width: Option<usize>, out: &mut String) {
    use crate::console::wrap;
    let regressions: Vec<&MetricResult> = r.regressions().collect();
    if !regressions.is_empty() {
        out.push_str("\nWhy:\n");
        for m in regressions {
            let line = format!(
                "  {}: {}",
                escape::terminal(&m.shown_name()),
                escape::terminal(&super::words::metric_reason(m))
            );
            out.push_str(&wrap(&line, width, 4));
        }
    }
    if !r.diagnosis.is_empty() {
        out.push_str("\nDiagnosis (what changed, most likely cause first):\n");
        for (i, d) in r.diagnosis.iter().enumerate() {
            // The finding's parts, one a line, indented under its number.
            for (k, line) in d.text_lines(&escape::terminal).iter().enumerate() {
                match k {
                    0 => out.push_str(&format!("  {}. {line}\n", i + 1)),
                    _ => out.push_str(&format!("     {line}\n")),
                }
            }
        }
    }
    if !r.warnings().is_empty() {
        out.push('\n');
    }
    for w in r.warnings() {
        out.push_str(&wrap(
            &format!("warning: {}", escape::terminal(w)),
            width,
            2,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_when_asked_and_table_is_aligned() {
        let r = crate::report::check::tests_support::sample_report();
        let plain = Terminal {
            color: false,
            width: None,
        }
        .render(&r);
        assert!(!plain.contains('\x1b'), "{plain}");
        assert!(plain.contains("VERDICT: REGRESSION (exit 1)"));
        assert!(plain.contains("Diagnosis (what changed"));
        let header = plain.lines().find(|l| l.starts_with("metric")).unwrap();
        let row = plain
            .lines()
            .find(|l| l.starts_with("sm_active_pct[gpu1]"))
            .unwrap();
        let col = header.chars().position(|c| c == 'v').unwrap();
        let cell: String = row.chars().skip(col).take(10).collect();
        assert_eq!(cell, "regression", "{header}\n{row}");
        let coloured = Terminal {
            color: true,
            width: None,
        }
        .render(&r);
        assert!(coloured.contains("\x1b[1;31mregression\x1b[0m"));
        // Context metrics that moved a lot are shown, marked as not gated.
        assert!(plain.contains("-- context, not gated"));
        assert!(plain.contains("dram_pct"));
    }
}
