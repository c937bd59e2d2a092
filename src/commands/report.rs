//! `gate report`: explain a run. Utilization panorama, ranked suspects with
//! evidence and next steps, processes on each GPU, and statistics; as text
//! (stdout), JSON, Markdown and a self-contained HTML file.
//!
//! Runs come from trace files (positional or `--replay`) or are measured
//! live (`-- CMD`, `--pid`), which records a trace first: either way each
//! trace is derived into its `Run` (with what the report shows of it, its
//! `Timeline`) and dropped, and the report is built from the runs, so a
//! replay reproduces it byte for byte.

use super::measure::{self, parse_duration, MeasureArgs, Measurement};
use crate::config::Config;
use crate::diagnose::RuleSet;
use crate::error::GateError;
use crate::files::Inputs;
use crate::report::run::{html::Html, json::Json, markdown::Markdown, text::Text};
use crate::report::run::{RunReport, RunReporter};
use crate::summary::Run;
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where live runs are recorded before they are reported.
const LIVE_TRACE_DIR: &str = ".gate/traces";
const DEFAULT_CONFIG: &str = "gate.toml";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Recorded trace(s) to explain (as with --replay); or measure live with -- CMD / --pid
    #[arg(value_name = "TRACE")]
    pub traces: Vec<PathBuf>,

    /// Width of a time slice in the utilization panorama (e.g. 1s, 500ms, 10s)
    #[arg(long, value_parser = parse_duration, default_value = "1s", value_name = "DURATION")]
    pub slice: Duration,

    /// gate.toml with [rules.<name>] tables that add, override or disable rules
    /// (default: ./gate.toml when it exists)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Format of the report on stdout
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReportFormat,

    /// Also write the JSON report to FILE
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Also write a Markdown report to FILE
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,

    /// Also write a self-contained HTML report (inline SVG plots) to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Where live runs write their traces
    #[arg(long, value_name = "DIR", default_value = LIVE_TRACE_DIR)]
    pub(crate) trace_dir: PathBuf,

    #[command(flatten)]
    pub measure: MeasureArgs,

    #[command(flatten)]
    pub color: super::ColorArgs,
}

pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    ReportPlan::build(&args)?.execute()
}

/// A report, built once from its flags with every validation (the slice,
/// the outputs against the inputs, gate.toml's rules, what is measured)
/// before anything is loaded or launched: `execute` only acquires,
/// explains and writes.
struct ReportPlan {
    slice: Duration,
    config: Config,
    rules: RuleSet,
    measurement: Measurement,
    trace_dir: PathBuf,
    format: ReportFormat,
    color: bool,
    json: Option<PathBuf>,
    markdown: Option<PathBuf>,
    html: Option<PathBuf>,
    /// What the report reads (traces, gate.toml): no page may replace one.
    inputs: Inputs,
}

impl ReportPlan {
    fn build(args: &ReportArgs) -> anyhow::Result<ReportPlan> {
        if args.slice < Duration::from_millis(10) {
            return Err(GateError::usage(format!(
                "--slice {:?} is too short; use at least 10ms (the sampling interval is usually 100ms)",
                args.slice
            ))
            .into());
        }
        // Outputs first: a path that would be refused must not cost a live run.
        let inputs = inputs_of(args);
        for (flag, path) in [
            ("--json", &args.json),
            ("--markdown", &args.markdown),
            ("--html", &args.html),
        ] {
            if let Some(p) = path {
                (inputs.check_output(p, flag)).map_err(|e| GateError::usage(e.to_string()))?;
            }
        }
        // Rules first: a broken gate.toml fails before any measurement.
        let config = load_config(args.config.as_deref())?;
        let rules = config.rule_set()?;
        Ok(ReportPlan {
            slice: args.slice,
            rules,
            config,
            measurement: measurement(args)?,
            trace_dir: args.trace_dir.clone(),
            format: args.format,
            color: args.color.stdout(),
            json: args.json.clone(),
            markdown: args.markdown.clone(),
            html: args.html.clone(),
            inputs,
        })
    }

    /// Load or record the runs, explain each, write the report.
    fn execute(&self) -> anyhow::Result<i32> {
        let slice_ms = self.slice.as_secs_f64() * 1000.0;
        // When JSON is all it writes, each run keeps only the timeline the JSON
        // document keeps (`json::timeline_rows`), joined as the document would
        // join it: 64 nodes' full panoramas were most of the report's memory.
        let runs_given = self.measurement.replay.len().max(1);
        let json_only = matches!(self.format, ReportFormat::Json)
            && self.markdown.is_none()
            && self.html.is_none();
        let keep_rows = json_only.then(|| crate::report::run::json::timeline_rows(runs_given));
        // Each run is derived as it is loaded, with what the report shows of
        // its trace (`Run::explain`: panorama, processes, and the series its
        // HTML plots draw), then its trace is dropped: a report of 64 nodes
        // holds 64 explanations, not 64 traces.
        let plan = crate::report::run::plan(slice_ms, keep_rows, self.html.is_some());
        let keep = measure::Keep {
            timeline: Some(&plan),
            ..Default::default()
        };
        // Each run's report is made as soon as it is derived: the report,
        // not the run's summary, is what waits for the other runs.
        let explain = |run: Run| Explained {
            source: run.source.clone(),
            truncated: run.ending.truncated,
            report: (run.timeline.is_some()).then(|| RunReport::of(run, &self.rules)),
        };
        let runs = measure::acquire_runs_into(
            &self.measurement,
            &self.trace_dir,
            &self.config,
            keep,
            explain,
        )?;
        let reports = explained(runs)?;
        self.write_reports(&reports)?;
        Ok(crate::exit_code::PASS)
    }

    /// The text (or JSON) on stdout and the report files the flags ask for.
    fn write_reports(&self, runs: &[RunReport]) -> anyhow::Result<()> {
        // The JSON document is streamed to stdout at the end (64 nodes' is
        // ~460 MB: never held whole); the text is rendered first, as before.
        let text = match self.format {
            ReportFormat::Json => None,
            ReportFormat::Text => Some(Text { color: self.color }.render(runs)),
        };
        super::output::write_pages(&ReportPages { plan: self, runs }, &self.inputs)?;
        match text {
            Some(text) => crate::console::out(&text),
            None => crate::console::out_with(|w| Json.write(runs, w)),
        }
        Ok(())
    }
}

/// The files the report reads (traces, replays, gate.toml): no output may
/// overwrite one.
fn inputs_of(args: &ReportArgs) -> Inputs {
    let mut inputs = Inputs::default();
    let paths = (args.traces.iter().chain(&args.measure.replay)).chain(&args.config);
    for p in paths {
        inputs.add("the input", p);
    }
    inputs
}

/// What is reported: the trace files (positional and `--replay`), or a
/// live target; never both, never neither.
fn measurement(args: &ReportArgs) -> Result<Measurement, GateError> {
    if !args.traces.is_empty() {
        if args.measure.is_live() {
            return Err(GateError::usage(
                "give either trace files or a live target (-- CMD / --pid), not both",
            ));
        }
        let mut m = args.measure.clone();
        m.replay = args.traces.clone();
        m.replay.extend(args.measure.replay.iter().cloned());
        return Measurement::build(&m);
    }
    if !args.measure.is_replay() && !args.measure.is_live() {
        return Err(GateError::usage(
            "nothing to report: give a trace file (gate report run.jsonl), --replay TRACE, -- CMD or --pid PID",
        ));
    }
    Measurement::build(&args.measure)
}

/// One derived run as the report keeps it: its report (None: its trace
/// had no samples, so nothing was explained), and the trace's path and
/// whether it was cut short, for the lines below.
struct Explained {
    source: String,
    truncated: bool,
    report: Option<RunReport>,
}

/// The reports of the runs; a trace cut short is warned about, one without
/// samples (not explained) is an error.
fn explained(runs: Vec<Explained>) -> anyhow::Result<Vec<RunReport>> {
    let mut reports = Vec::with_capacity(runs.len());
    for run in runs {
        if run.truncated {
            crate::gate_eprintln!(
                "gate: warning: '{}' was cut short (no end record); reporting its complete prefix",
                crate::escape::terminal(&run.source)
            );
        }
        let Some(report) = run.report else {
            return Err(GateError::bad_file(
                Path::new(&run.source),
                "the trace has no samples; record a run that lasts at least one interval",
            )
            .into());
        };
        reports.push(report);
    }
    Ok(reports)
}

/// The report files the flags ask for, each rendered from the runs.
struct ReportPages<'a> {
    plan: &'a ReportPlan,
    runs: &'a [RunReport],
}

impl super::output::Pages for ReportPages<'_> {
    fn pages(&self) -> Vec<super::output::Page<'_>> {
        let files: [(&'static str, &Option<PathBuf>, &dyn RunReporter); 3] = [
            ("--json", &self.plan.json, &Json),
            ("--markdown", &self.plan.markdown, &Markdown),
            ("--html", &self.plan.html, &Html),
        ];
        (files.into_iter())
            .filter_map(|(flag, path, reporter)| {
                Some(super::output::Page {
                    flag,
                    what: format!("the {flag} report"),
                    path: path.as_deref()?,
                    bytes: Box::new(move || reporter.render(self.runs).into_bytes()),
                })
            })
            .collect()
    }
}

/// The active rules: built-in plus `[rules]` of gate.toml (`--config`, else
/// `./gate.toml` when present). The whole file is validated by the same
/// loader `check` uses, so a gate.toml that `report` accepts, `check` does too.
pub fn load_rules(config: Option<&Path>) -> anyhow::Result<RuleSet> {
    Ok(load_config(config)?.rule_set()?)
}

/// gate.toml from `--config`, else `./gate.toml` when present, else defaults.
fn load_config(config: Option<&Path>) -> anyhow::Result<Config> {
    let (path, explicit) = match config {
        Some(p) => (p, true),
        None => (Path::new(DEFAULT_CONFIG), false),
    };
    if explicit && !path.exists() {
        return Err(GateError::usage(format!(
            "config file '{}' not found; pass an existing gate.toml or leave --config out",
            path.display()
        ))
        .into());
    }
    Ok(Config::load(path, explicit)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_errors_point_at_the_line_of_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gate.toml");
        std::fs::write(
            &path,
            "[defaults]\nthreshold = 0.1\n\n[rules.mine]\nseverity = \"high\"\nwhen = \"gpu_busy_pct.mean > (80\"\n",
        )
        .unwrap();
        let err = load_rules(Some(&path)).unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains("gate.toml: line 6: [rules.mine] when: column 24"),
            "{msg}"
        );
        assert_eq!(crate::error::exit_code_of(&err), crate::exit_code::USAGE);
    }

    #[test]
    fn broken_toml_names_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gate.toml");
        std::fs::write(&path, "[rules.mine\nwhen = 1\n").unwrap();
        let msg = format!("{:#}", load_rules(Some(&path)).unwrap_err());
        assert!(msg.contains("line 1, column"), "{msg}");
    }

    #[test]
    fn explicit_config_must_exist_default_is_optional() {
        let err = load_rules(Some(Path::new("/nonexistent/gate.toml"))).unwrap_err();
        assert!(err.to_string().contains("not found"));
        // The crate root's gate.toml has no [rules]: the built-in rules.
        assert_eq!(
            load_rules(None).unwrap().rules().len(),
            RuleSet::builtin().rules().len()
        );
    }
}
