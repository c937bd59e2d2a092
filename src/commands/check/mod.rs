//! `gate check`: measure a run (or replay traces), judge it against a stored
//! baseline, write the reports and return the exit code of the verdict.
//! Its flags become a `CheckPlan` (`plan`: every validation, the files
//! read), which `execute` measures and judges.
//! The baseline and gate.toml come from the working tree, or from a git ref
//! with `--baseline-ref` (`git_show`), so a change cannot loosen its own gate.

use super::measure::MeasureArgs;
use super::output::{Output, Outputs};
use super::Format;
use crate::files::Inputs;
use clap::Args;
use std::path::{Path, PathBuf};

mod alerting;
mod execute;
mod plan;
pub(crate) use alerting::Alerting;
pub(crate) use execute::Acquired;
pub use execute::{HistoryTail, Judged};
pub(crate) use plan::{base_inputs, load_config, refuse_shared_outputs, CheckPlan, Target};

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Baseline and judging")]
pub struct CheckArgs {
    /// Name of the baseline to judge against (baselines/NAME.toml)
    #[arg(long, value_name = "NAME", required_unless_present = "suite")]
    pub baseline: Option<String>,

    /// Run every [[suite.workload]] of gate.toml one after another, each judged against its
    /// own baseline, with one report of each kind; exit code: the worst (2 > 5 > 1 > 3 > 4 >
    /// 0, docs/suites.md)
    #[arg(long, conflicts_with_all = ["baseline", "multi_node", "replay", "pid", "command", "command_string"])]
    pub suite: bool,

    /// With --suite: only this workload (repeatable)
    #[arg(long, value_name = "NAME", requires = "suite")]
    pub workload: Vec<String>,

    /// With --suite: replay TRACE for workload NAME instead of running its command
    /// (repeatable; several traces for one workload are several runs)
    #[arg(long, value_name = "NAME=TRACE", requires = "suite")]
    pub(crate) suite_replay: Vec<String>,

    /// Directory of baseline files
    #[arg(long, value_name = "DIR", default_value = "baselines")]
    pub baseline_dir: PathBuf,

    /// Read the baseline and gate.toml from this git ref (e.g. origin/main) instead of the
    /// working tree, so a merge request cannot loosen its own gate
    #[arg(long, value_name = "REF")]
    pub(crate) baseline_ref: Option<String>,

    /// Gating policy file [default: gate.toml, optional]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Default relative tolerance: a percentage (5%) or a fraction (0.05); a bare number
    /// above 1 is refused. Per-metric settings in gate.toml win [default: gate.toml
    /// [defaults] threshold, else 1 % for the benchmark's own metrics and 3 % for counters]
    #[arg(long, value_name = "PCT%|FRACTION", value_parser = parse_threshold)]
    pub threshold: Option<f64>,

    /// Judge even when GPU model, GPU count or driver major differ from the baseline
    #[arg(long)]
    pub allow_env_mismatch: bool,

    /// Judge a run of another benchmark (program, script or [compare] tags differ from the
    /// baseline's) with a warning instead of refusing it (as [compare] allow_command_change)
    #[arg(long)]
    pub allow_command_change: bool,

    /// Fail (exit 1) on improvements beyond the threshold too (baseline out of date)
    #[arg(long)]
    pub fail_on_improvement: bool,

    /// When a live run regresses or a metric is inconclusive, run the benchmark up to N
    /// more times and judge all runs together (their spread is measured noise): a flaky
    /// alarm fades, a real regression stays
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub confirm: usize,

    /// When a live run's gated metric moved the bad way beyond its floor but inside the noise,
    /// rerun the benchmark up to N times, stopping as soon as the pooled runs decide
    /// (sequential test, Bonferroni-split level) [default: gate.toml [verdict] max_reruns,
    /// else 2]; still open after them: INCONCLUSIVE (exit 4)
    #[arg(long, value_name = "N")]
    pub(crate) max_reruns: Option<usize>,

    /// Before rerunning a DISTURBED run (a process outside the benchmark's tree was on its
    /// GPU), wait up to DURATION (e.g. 5m) for the GPU to be free of other processes
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub(crate) wait_clean: Option<std::time::Duration>,

    /// The given traces are the nodes of ONE run: judge each node and their aggregate
    #[arg(long)]
    pub multi_node: bool,

    /// Accept file of the change (the PR head's working tree, e.g. gate-accept.toml):
    /// [[accept]] entries that acknowledge intended regressions (baseline, metrics,
    /// max_change_pct, reason, optional expires/commit), bounded by [accept] of the
    /// (target branch's) gate.toml. Matching regressions become ACCEPTED (exit 0)
    #[arg(
        long,
        help_heading = "Accepting an intended regression",
        value_name = "FILE"
    )]
    pub accept: Option<PathBuf>,

    /// The pull/merge request's labels, comma-separated (the CI templates pass them):
    /// the label named by [accept] label in gate.toml accepts regressions up to its
    /// label_max_change_pct
    #[arg(
        long,
        help_heading = "Accepting an intended regression",
        value_name = "LIST",
        value_delimiter = ','
    )]
    pub(crate) accept_labels: Vec<String>,

    /// Output format on stdout
    #[arg(long, help_heading = "Reports", value_enum, default_value = "text")]
    pub format: Format,

    /// Write a JUnit XML report (one testcase per gated metric and one for the run)
    #[arg(long, help_heading = "Reports", value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// Write a Markdown report
    #[arg(long, help_heading = "Reports", value_name = "FILE")]
    pub markdown: Option<PathBuf>,

    /// Write the JSON report
    #[arg(long, help_heading = "Reports", value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write OpenMetrics text (GitLab metrics report)
    #[arg(long, help_heading = "Reports", value_name = "FILE")]
    pub openmetrics: Option<PathBuf>,

    /// Write the new run's numbers in Bencher Metric Format (JSON: benchmark = baseline
    /// name, measure = metric id)
    #[arg(long, help_heading = "Reports", value_name = "FILE")]
    pub bmf: Option<PathBuf>,

    /// Write the check page (HTML, self-contained: the verdict on top, each decisive and
    /// moved metric as the baseline's band behind the new run over time, the diagnosis beside
    /// the curves it cites), for a CI artifact
    #[arg(long, help_heading = "Reports", value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Where CI keeps the --html page (its run's artifacts page): linked from the Markdown
    /// report, the step summary and the PR comment
    #[arg(long, help_heading = "Reports", value_name = "URL")]
    pub(crate) html_url: Option<String>,

    /// Write the pull/merge request comment (Markdown: verdict and top cause in the first
    /// three lines, hidden markers the CI templates use to edit one comment per baseline)
    #[arg(long, help_heading = "Reports", value_name = "FILE")]
    pub pr_comment: Option<PathBuf>,

    #[command(flatten, next_help_heading = "Reports")]
    pub color: super::ColorArgs,

    /// Where live runs write their traces
    #[arg(
        long,
        value_name = "DIR",
        default_value = ".gate/traces",
        help_heading = "Measurement (what runs, for how long, how it is sampled)"
    )]
    pub(crate) trace_dir: PathBuf,

    #[command(flatten)]
    pub measure: MeasureArgs,

    #[command(flatten)]
    pub history: super::history::HistoryArgs,
}

pub fn run(args: CheckArgs) -> anyhow::Result<i32> {
    // What the command reads, filled in as it learns it (the history store
    // comes with gate.toml): the error path below must not write over it either.
    let mut inputs = base_inputs(&args, &Target::of(&args));
    match run_inner(&args, &mut inputs) {
        Ok(code) => Ok(code),
        Err(err) => {
            // CI still gets a well-formed report naming the problem.
            super::output::write_error(&outputs_of(&args), &inputs, args.baseline_name(), &err);
            Err(err)
        }
    }
}

impl CheckArgs {
    /// The baseline judged (empty with --suite, whose workloads name theirs).
    pub(crate) fn baseline_name(&self) -> &str {
        self.baseline.as_deref().unwrap_or("")
    }
}

fn run_inner(args: &CheckArgs, inputs: &mut Inputs) -> anyhow::Result<i32> {
    let plan = CheckPlan::build(args, Target::of(args), &outputs(args), inputs)?;
    let alerting = Alerting::resolve(&plan.config, args.html_url.as_deref())?;
    let Judged { report, history } = plan.execute()?;
    super::output::write(&outputs_of(args), inputs, &report)?;
    // A failed record (--history-required) ranks like any exit code: it
    // never hides a regression (1 outranks 3).
    let codes = std::iter::once(report.exit_code()).chain(history.finish());
    let code = crate::exit_code::worst_exit_code(codes);
    // Alerts last: the verdict, the reports and the history are out.
    Ok(match alerting {
        Some(a) => a.deliver(&[(&report, None)], report.verdict().as_str(), code),
        None => code,
    })
}

/// The report files asked for, with their flags.
pub fn outputs(args: &CheckArgs) -> Vec<(&'static str, &Path)> {
    outputs_of(args)
        .files
        .into_iter()
        .map(|(o, p)| (o.flag(), p))
        .collect()
}

/// Where the results of `args` go (a check's or a suite's).
pub(crate) fn outputs_of(args: &CheckArgs) -> Outputs<'_> {
    let files = [
        (Output::Junit, &args.junit),
        (Output::Markdown, &args.markdown),
        (Output::Json, &args.json),
        (Output::OpenMetrics, &args.openmetrics),
        (Output::PrComment, &args.pr_comment),
        (Output::Bmf, &args.bmf),
        (Output::Html, &args.html),
    ]
    .into_iter()
    .filter_map(|(o, p)| p.as_deref().map(|p| (o, p)))
    .collect();
    Outputs {
        files,
        html_url: args.html_url.as_deref(),
        format: args.format,
        color: args.color.stdout(),
    }
}

/// `--threshold`: `5%` (a percentage) or `0.05` (a fraction). A bare
/// number above 1 is refused: `--threshold 5` meant 500 % and let a -61.9 %
/// regression pass.
pub(crate) fn parse_threshold(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, pct) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (t, false),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a threshold; write 5% or 0.05"))?;
    let frac = if pct { v / 100.0 } else { v };
    if !v.is_finite() || frac < 0.0 {
        return Err(format!("'{s}' is not a threshold; write 5% or 0.05"));
    }
    if !pct && v > 1.0 {
        return Err(format!(
            "'{s}' is ambiguous: a bare number is a fraction ({s} = {} %); write {s}% for {s} %, or {} for it as a fraction",
            v * 100.0,
            v / 100.0
        ));
    }
    if frac > 10.0 {
        return Err(format!("'{s}' is over 1000 %; write 5% or 0.05"));
    }
    Ok(frac)
}

/// `--wait-clean`: waiting for a neighbour to leave the GPU before a rerun.
mod wait_clean;
pub(crate) use wait_clean::wait_for_quiet_gpus;
