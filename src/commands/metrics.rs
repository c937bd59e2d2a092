//! `gate metrics`: every metric id gate knows, from the one catalogue
//! (`metrics.rs`), plus the user metrics of gate.toml with the reader each
//! uses (`metric_sources`): what can go under `[metrics.ID]`, `--metric` and
//! rule conditions, and what each needs from the machine.

use super::Format;
use crate::config::user_metrics::UserSource;
use crate::config::Config;
use crate::metrics;
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Columns: id, unit, direction, gated by default (with gate.toml applied), \
statistic judged, scope (gpu: one value per GPU and their mean; host; run), what the machine \
needs (GPM (Hopper+), NVML, /proc, the benchmark's exit, or the benchmark's output for \
[user_metrics]) and where the number comes from."
)]
pub struct MetricsArgs {
    /// Gating policy file whose [metrics] overrides and [user_metrics] are applied
    /// [default: gate.toml, optional]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Output format on stdout
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// One row of the listing (also the JSON shape).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricRow {
    pub id: String,
    pub unit: String,
    pub direction: &'static str,
    /// Gated under the effective policy (catalogue + gate.toml).
    pub gated: bool,
    pub statistic: &'static str,
    pub scope: &'static str,
    pub needs: String,
    pub source: String,
    pub description: String,
}

/// The listing: the catalogue in trace order, then wall time, then the
/// user metrics of `config`.
pub fn rows(config: &Config) -> Vec<MetricRow> {
    let mut out = Vec::new();
    for d in metrics::all() {
        let p = config.policy(d.id, None).expect("catalogue metric");
        out.push(MetricRow {
            id: d.id.to_string(),
            unit: d.unit.to_string(),
            direction: p.direction.as_str(),
            gated: p.gated,
            statistic: p.statistic.as_str(),
            scope: d.scope_name(),
            needs: d.needs().to_string(),
            source: d.source.to_string(),
            description: d.description.to_string(),
        });
    }
    for (name, reader) in &config.user_sources {
        let def = &config.file.user_metrics[name.as_str()];
        let p = config.policy(name, None).expect("user metric");
        let from = match def.source {
            UserSource::Stdout => "stdout lines",
            UserSource::MetricsFile => "--metrics-file",
        };
        out.push(MetricRow {
            id: name.clone(),
            unit: p.unit.clone(),
            direction: p.direction.as_str(),
            gated: p.gated,
            statistic: p.statistic.as_str(),
            scope: "run",
            needs: format!("the benchmark's {from}"),
            source: format!(
                "gate.toml [user_metrics.{name}], format {}",
                reader.format().as_str()
            ),
            description: "declared by the benchmark's team".into(),
        });
    }
    out
}

pub fn run(args: MetricsArgs) -> anyhow::Result<i32> {
    MetricsPlan::build(&args)?.execute()
}

/// The listing asked for: gate.toml read (its overrides and declared
/// numbers) and the format on stdout.
struct MetricsPlan {
    config: Config,
    format: Format,
}

impl MetricsPlan {
    fn build(args: &MetricsArgs) -> anyhow::Result<MetricsPlan> {
        Ok(MetricsPlan {
            config: Config::from_flag(args.config.as_deref())?,
            format: args.format,
        })
    }

    fn execute(&self) -> anyhow::Result<i32> {
        let rows = rows(&self.config);
        match self.format {
            Format::Json => {
                let text = serde_json::to_string_pretty(&rows)?;
                crate::console::out(&format!("{text}\n"));
            }
            Format::Text => crate::console::out(&render_text(&rows)),
        }
        Ok(crate::exit_code::PASS)
    }
}

/// The terminal table (no description column: `--format json` has it).
pub(crate) fn render_text(rows: &[MetricRow]) -> String {
    let headers = [
        "id",
        "unit",
        "direction",
        "gated",
        "statistic",
        "scope",
        "needs",
        "source",
    ];
    let cells: Vec<[String; 8]> = rows
        .iter()
        .map(|r| {
            [
                r.id.clone(),
                r.unit.clone(),
                r.direction.to_string(),
                if r.gated { "yes" } else { "no" }.to_string(),
                r.statistic.to_string(),
                r.scope.to_string(),
                r.needs.clone(),
                r.source.clone(),
            ]
            .map(|c| crate::escape::terminal(&c))
        })
        .collect();
    let mut widths = headers.map(|h| h.chars().count());
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cols: Vec<&str>| {
        let mut s = String::new();
        for (i, (c, w)) in cols.iter().zip(widths).enumerate() {
            if i + 1 == cols.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(headers.to_vec());
    for row in &cells {
        out.push_str(&line(row.iter().map(|s| s.as_str()).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogue_metric_is_listed_once_with_its_needs() {
        let rows = rows(&Config::default());
        assert_eq!(rows.len(), metrics::all().count());
        let sm = rows.iter().find(|r| r.id == "sm_active_pct").unwrap();
        assert_eq!((sm.needs.as_str(), sm.gated), ("GPM (Hopper+)", true));
        let text = render_text(&rows);
        assert!(text.starts_with("id "), "{text}");
        assert_eq!(text.lines().count(), rows.len() + 1);
    }
}
