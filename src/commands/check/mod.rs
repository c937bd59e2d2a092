//! `gate check`: measure a run (or replay traces), judge it against a stored
//! baseline, write the reports and return the exit code of the verdict.
//! The baseline and gate.toml come from the working tree, or from a git ref
//! with `--baseline-ref` (`git_show`), so a change cannot loosen its own gate.

use super::measure::{self, MeasureArgs};
use super::Format;
use crate::baseline::{self, Baseline};
use crate::config::Config;
use crate::error::GateError;
use crate::files::Inputs;
use crate::gate::{self, CheckReport};
use crate::report::check::{self as report, Reporter};
use crate::summary::RunInput;
use clap::Args;
use std::path::{Path, PathBuf};

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
    pub suite_replay: Vec<String>,

    /// The suite workload this check is for (set by `--suite`, never a
    /// flag): its gate.toml sees only that workload's user metrics.
    #[arg(skip)]
    pub scope: Option<String>,

    /// Directory of baseline files
    #[arg(long, value_name = "DIR", default_value = "baselines")]
    pub baseline_dir: PathBuf,

    /// Read the baseline and gate.toml from this git ref (e.g. origin/main) instead of the
    /// working tree, so a merge request cannot loosen its own gate
    #[arg(long, value_name = "REF")]
    pub baseline_ref: Option<String>,

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
    pub max_reruns: Option<usize>,

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
    pub accept_labels: Vec<String>,

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
    pub html_url: Option<String>,

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
    pub trace_dir: PathBuf,

    #[command(flatten)]
    pub measure: MeasureArgs,

    #[command(flatten)]
    pub history: super::history::HistoryArgs,
}

pub fn run(args: CheckArgs) -> anyhow::Result<i32> {
    // What the command reads, filled in as it learns it (the history store
    // comes with gate.toml): the error path below must not write over it either.
    let mut inputs = base_inputs(&args);
    match run_inner(&args, &mut inputs) {
        Ok(code) => Ok(code),
        Err(err) => {
            // CI still gets a well-formed report naming the problem.
            let code = crate::error::exit_code_of(&err);
            let message = err
                .chain()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(": ");
            let kind = if code == crate::exit_code::USAGE {
                "usage"
            } else {
                "error"
            };
            // Not over an input: that refusal may be the very error.
            let writable = |p: &&PathBuf| inputs.find(p).is_none();
            if let Some(path) = args.junit.as_ref().filter(writable) {
                let xml = report::junit::render_error(args.baseline_name(), kind, &message);
                if let Err(e) = write_report(&inputs, "--junit", path, &xml) {
                    crate::gate_eprintln!(
                        "gate: warning: {}",
                        crate::escape::terminal(&e.to_string())
                    );
                }
            }
            if let Some(path) = args.pr_comment.as_ref().filter(writable) {
                let text = report::pr_comment::render_error(args.baseline_name(), code, &message);
                let written = path
                    .parent()
                    .filter(|d| !d.as_os_str().is_empty())
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .map_err(|e| GateError::usage(e.to_string()))
                    .and_then(|_| write_report(&inputs, "--pr-comment", path, &text));
                if let Err(e) = written {
                    crate::gate_eprintln!(
                        "gate: warning: cannot write '{}': {}",
                        crate::escape::terminal(&path.display().to_string()),
                        crate::escape::terminal(&e.to_string())
                    );
                }
            }
            super::github::output(&inputs, "error", 0);
            Err(err)
        }
    }
}

impl CheckArgs {
    /// The baseline judged (empty with --suite, whose workloads name theirs).
    pub fn baseline_name(&self) -> &str {
        self.baseline.as_deref().unwrap_or("")
    }

    /// The same check writing no report files (a suite's workloads: the
    /// suite writes one of each).
    pub fn without_outputs(&self) -> CheckArgs {
        CheckArgs {
            junit: None,
            markdown: None,
            json: None,
            openmetrics: None,
            pr_comment: None,
            bmf: None,
            html: None,
            ..self.clone()
        }
    }
}

fn run_inner(args: &CheckArgs, inputs: &mut Inputs) -> anyhow::Result<i32> {
    let Judged { report, history } = judge(args, inputs)?;
    emit(args, inputs, &report)?;
    // A failed record (--history-required) ranks like any exit code: it
    // never hides a regression (1 outranks 3).
    let codes = std::iter::once(report.exit_code).chain(history.finish());
    Ok(crate::exit_code::worst_exit_code(codes))
}

/// A judged check whose run is not yet in the history: the reports are
/// written first (`emit`, or the suite's), then `history.finish()`.
pub struct Judged {
    pub report: CheckReport,
    pub history: HistoryTail,
}

/// The history's second step of one check (appending the run), if any.
pub struct HistoryTail(Option<super::history::PendingCheck>);

impl HistoryTail {
    /// Append the run (bounded). None, or the exit code when
    /// `--history-required` and the store failed (the verdict is out; the
    /// exit code says the infrastructure failed).
    pub fn finish(self) -> Option<i32> {
        let e = super::history::finish_check(self.0?).err()?;
        crate::gate_eprintln!("gate: error: {}", crate::escape::terminal(&e.to_string()));
        Some(crate::error::exit_code_of(&e.into()))
    }
}

/// Measure (or replay) and judge one check, the history's reads (drift,
/// trend) included; no report is written (`emit` does, or the suite) and
/// the run is not appended (`HistoryTail::finish`). `inputs` gains the
/// history database; every output of `args` is checked against them
/// before anything runs.
pub fn judge(args: &CheckArgs, inputs: &mut Inputs) -> anyhow::Result<Judged> {
    baseline::validate_name(args.baseline_name())?;
    if let Some(url) = &args.html_url {
        report::html::validate_url(url).map_err(GateError::usage)?;
    }
    if let Some(t) = args.threshold {
        if !(t.is_finite() && (0.0..=10.0).contains(&t)) {
            return Err(GateError::usage(format!(
                "--threshold {t} is not a fraction; write 0.10 for 10 %"
            ))
            .into());
        }
    }
    if args.multi_node && !args.measure.is_replay() {
        return Err(GateError::usage(
            "--multi-node needs one recorded trace per node: --replay NODE0.jsonl NODE1.jsonl ...",
        )
        .into());
    }
    if args.confirm > 0 && !args.measure.is_live() {
        return Err(GateError::usage(
            "--confirm reruns the benchmark, so it needs a live run (-- CMD); with --replay, pass every trace at once",
        )
        .into());
    }
    if args.max_reruns.is_some() && !args.measure.is_live() {
        return Err(GateError::usage(
            "--max-reruns reruns the benchmark, so it needs a live run (-- CMD); a replay cannot rerun, and a move the noise leaves open is INCONCLUSIVE (exit 4)",
        )
        .into());
    }
    let (config, baseline, baseline_source) = load_inputs(args)?;
    let recorder = super::history::Recorder::resolve(&args.history, &config)?;
    inputs.add_all(
        "the history database",
        recorder.iter().flat_map(|r| r.files()),
    );
    // Outputs before anything runs: a path that would be refused must not
    // cost a live run, nor replace an input (the history database included).
    for (flag, path) in outputs(args) {
        inputs
            .check_output(path, flag)
            .map_err(|e| GateError::usage(e.to_string()))?;
    }
    refuse_shared_outputs(args)?;
    for var in GITHUB_FILES {
        if let Some(path) = std::env::var_os(var) {
            inputs
                .check_output(Path::new(&path), &format!("${var}"))
                .map_err(|e| GateError::usage(e.to_string()))?;
        }
    }
    let rules = config.rule_set()?;
    let acceptances = load_acceptances(args, &config)?;
    let cli_tags: std::collections::BTreeMap<String, String> =
        args.measure.tags.iter().cloned().collect();

    // Each trace is summarised as it is loaded and its samples freed: the
    // verdict needs only summaries, so 64 nodes cost one node's samples.
    let derive = |t: &crate::trace::Trace| Some(RunInput::derive(t, &config));
    let (mut traces, mut derived) = unzip_derived(measure::acquire_each(
        &args.measure,
        1,
        &args.trace_dir,
        derive,
    )?);
    // Reruns this check may make: the sequential test's looks are 1 + that
    // many, and every look is judged at the Bonferroni-split level
    // (noise::moderated), so looking again cannot inflate false alarms.
    let max_reruns = if args.measure.is_live() {
        args.max_reruns
            .or(config.file.verdict.max_reruns)
            .unwrap_or(crate::config::DEFAULT_MAX_RERUNS)
            .max(args.confirm)
    } else {
        0
    };
    // The history store, opened once: its healthy checks are the noise
    // model's prior; drift and the trend are read from it after the verdict.
    let mut history = recorder.map(super::history::CheckHistory::open);
    let history_spread = history
        .as_mut()
        .map(|h| h.healthy_spread(&baseline))
        .unwrap_or_default();
    let judge = |traces: &[crate::trace::Trace], derived: &[crate::summary::RunDerived]| {
        let inputs: Vec<RunInput> = traces
            .iter()
            .zip(derived)
            .map(|(t, d)| RunInput::from_parts(t, d.clone()))
            .collect();
        gate::check(&gate::CheckInput {
            baseline: &baseline,
            baseline_source: baseline_source.clone(),
            config: &config,
            cli_threshold: args.threshold,
            runs: &inputs,
            multi_node: args.multi_node,
            allow_env_mismatch: args.allow_env_mismatch,
            allow_command_change: args.allow_command_change,
            cli_tags: cli_tags.clone(),
            fail_on_improvement: args.fail_on_improvement,
            rules: &rules,
            acceptances: Some(&acceptances),
            looks: 1 + max_reruns,
            history_spread: history_spread.clone(),
        })
    };
    let mut report = judge(&traces, &derived);
    let first = report.verdict;
    let mut reruns = 0;
    while reruns < max_reruns && needs_rerun(&report, reruns < args.confirm) {
        reruns += 1;
        crate::gate_eprintln!(
            "gate: the verdict is {} so far; rerun {reruns}/{max_reruns} to judge the runs together",
            report.verdict.as_str(),
        );
        let (more, more_derived) = unzip_derived(measure::acquire_each(
            &args.measure,
            1,
            &args.trace_dir,
            derive,
        )?);
        traces.extend(more);
        derived.extend(more_derived);
        report = judge(&traces, &derived);
    }
    if reruns > 0 {
        report.warnings.push(format!(
            "the first run's verdict was {}; {} runs were judged together (their spread is the new side's noise; {} looks at a Bonferroni-split 5 %)",
            first.as_str(),
            traces.len(),
            1 + max_reruns
        ));
    }
    // History in two bounded steps around the reports: drift (which may add
    // findings) is read before they are rendered; the run is appended only
    // after the verdict and every report are out, so nothing the store does
    // can take them away (commands::history).
    let pending = history.map(|h| {
        super::history::before_check_report(
            h,
            &args.history,
            &config,
            &baseline,
            &traces,
            &cli_tags,
            &mut report,
        )
    });
    Ok(Judged {
        report,
        history: HistoryTail(pending),
    })
}

/// Whether a live check should rerun: a gated metric moved the bad way and
/// the noise left it open (the sequential test goes on), or, within
/// `--confirm`'s reruns, the run regressed. A failed benchmark, an
/// environment mismatch or too few samples are not noise: rerunning does
/// not judge them.
fn needs_rerun(r: &CheckReport, confirming: bool) -> bool {
    use gate::{RunVerdict, Verdict};
    match r.verdict {
        RunVerdict::Error | RunVerdict::Invalid | RunVerdict::Unmeasured => false,
        // Every regression was acknowledged: nothing left to decide.
        RunVerdict::Accepted => false,
        RunVerdict::Regression => confirming,
        RunVerdict::Inconclusive => true,
        // A gated metric left open that did not decide the run (wall time
        // beside the benchmark's number): --confirm may still look again.
        RunVerdict::Pass => {
            confirming
                && r.metrics
                    .iter()
                    .any(|m| m.gated && m.verdict == Verdict::Inconclusive)
        }
    }
}

/// The report files asked for, with their flags.
pub fn outputs(args: &CheckArgs) -> Vec<(&'static str, &Path)> {
    [
        ("--junit", &args.junit),
        ("--markdown", &args.markdown),
        ("--json", &args.json),
        ("--openmetrics", &args.openmetrics),
        ("--pr-comment", &args.pr_comment),
        ("--bmf", &args.bmf),
        ("--html", &args.html),
    ]
    .into_iter()
    .filter_map(|(flag, p)| p.as_deref().map(|p| (flag, p)))
    .collect()
}

/// `--threshold`: `5%` (a percentage) or `0.05` (a fraction). A bare
/// number above 1 is refused: `--threshold 5` meant 500 % and let a -61.9 %
/// regression pass.
pub fn parse_threshold(s: &str) -> Result<f64, String> {
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

/// What may acknowledge a regression in this check: the target's
/// `[accept]` (from the config just loaded, `--baseline-ref` included), the
/// change's accept file, the request's labels, the commit and today.
fn load_acceptances(
    args: &CheckArgs,
    config: &Config,
) -> Result<crate::accept::Acceptances, GateError> {
    let mut notes = Vec::new();
    let file = match &args.accept {
        Some(path) => {
            let text = crate::files::read_input_string(path, crate::limits::MAX_CONFIG_BYTES)
                .map_err(|e| {
                    GateError::bad_file(
                        path,
                        format!("cannot read the accept file: {e}; pass --accept only when the change has one"),
                    )
                })?;
            let origin = path.display().to_string();
            let file = crate::accept::parse_file(&text, &origin)?;
            notes = crate::accept::check_baselines(&file, &text, &origin, &args.baseline_dir)?;
            Some((file, origin))
        }
        None => None,
    };
    Ok(crate::accept::Acceptances {
        policy: config.file.accept.clone(),
        policy_origin: config
            .origin
            .clone()
            .unwrap_or_else(|| "gate's defaults (no gate.toml)".into()),
        file,
        labels: args
            .accept_labels
            .iter()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect(),
        commit: super::detect_commit(None),
        today: crate::format::rfc3339_utc(std::time::SystemTime::now())[..10].to_string(),
        notes,
    })
}

/// The files any check reads, which no output may replace; the history
/// database joins them once gate.toml is read (`judge`).
pub(super) fn base_inputs(args: &CheckArgs) -> Inputs {
    let mut inputs = Inputs::default();
    for t in &args.measure.replay {
        inputs.add("the replayed trace", t);
    }
    inputs.add(
        "the baseline",
        baseline::path_for(&args.baseline_dir, args.baseline_name()),
    );
    inputs.add(
        "the gate config",
        args.config
            .clone()
            .unwrap_or_else(|| PathBuf::from("gate.toml")),
    );
    if let Some(m) = &args.measure.metrics_file {
        inputs.add("the --metrics-file", m);
    }
    if let Some(a) = &args.accept {
        inputs.add("the accept file", a);
    }
    inputs
}

/// Two outputs naming one file (`--json o.txt --markdown o.txt`, or a
/// report over `$GITHUB_STEP_SUMMARY`) are refused before anything runs:
/// one would silently replace the other.
pub fn refuse_shared_outputs(args: &CheckArgs) -> Result<(), GateError> {
    let mut named: Vec<(String, PathBuf)> = outputs(args)
        .into_iter()
        .map(|(flag, p)| (flag.to_string(), p.to_path_buf()))
        .collect();
    for var in GITHUB_FILES {
        if let Some(p) = std::env::var_os(var) {
            named.push((format!("${var}"), PathBuf::from(p)));
        }
    }
    for (i, (flag, path)) in named.iter().enumerate() {
        if let Some((other, _)) = named[..i]
            .iter()
            .find(|(_, p)| p == path || crate::files::same_file(p, path))
        {
            return Err(GateError::usage(format!(
                "{other} and {flag} both name '{}'; one would replace the other: give each output its own path",
                crate::escape::terminal(&path.display().to_string())
            )));
        }
    }
    Ok(())
}

/// The files GitHub Actions asks steps to append to.
const GITHUB_FILES: [&str; 2] = ["GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"];

/// Write one report file whole (temporary + rename; see `files`).
fn write_report(inputs: &Inputs, flag: &str, path: &Path, text: &str) -> Result<(), GateError> {
    crate::console::make_parent(path);
    inputs
        .write_output(path, flag, text.as_bytes())
        .map_err(|e| {
            crate::files::output_error(
                format!("cannot write the {flag} report '{}': {e}", path.display()),
                &e,
            )
        })?;
    crate::console::wrote(&format!("the {flag} report"), path);
    Ok(())
}

/// Config and baseline, from the working tree or `--baseline-ref`.
fn load_inputs(args: &CheckArgs) -> anyhow::Result<(Config, Baseline, String)> {
    let bpath = baseline::path_for(&args.baseline_dir, args.baseline_name());
    let config = load_config(args)?;
    let Some(reference) = &args.baseline_ref else {
        let b = baseline::load(&bpath, args.baseline_name())?;
        return Ok((config, b, bpath.display().to_string()));
    };
    let origin = |p: &Path| format!("{reference}:{}", p.display());
    let text = git_show(reference, &bpath)?.ok_or_else(|| {
        GateError::usage(format!(
            "baseline '{}' not found at git ref '{reference}' ('{}'); capture it and merge it into {reference} first",
            args.baseline_name(),
            bpath.display()
        ))
    })?;
    warn_if_differs(&bpath, &text, reference);
    let b = baseline::parse(&text, &origin(&bpath))?;
    Ok((config, b, origin(&bpath)))
}

/// gate.toml from the working tree, or from `--baseline-ref` (the target
/// branch's: thresholds, acceptance and the suite are never the change's).
pub fn load_config(args: &CheckArgs) -> anyhow::Result<Config> {
    let config = load_config_unscoped(args)?;
    Ok(match &args.scope {
        Some(w) => config.for_workload(w),
        None => config,
    })
}

fn load_config_unscoped(args: &CheckArgs) -> anyhow::Result<Config> {
    let cpath = args
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from("gate.toml"));
    let Some(reference) = &args.baseline_ref else {
        return Ok(Config::load(&cpath, args.config.is_some())?);
    };
    Ok(match git_show(reference, &cpath)? {
        Some(text) => {
            warn_if_differs(&cpath, &text, reference);
            Config::parse(&text, &format!("{reference}:{}", cpath.display()))?
        }
        None if args.config.is_some() => {
            return Err(GateError::usage(format!(
                "'{}' does not exist at git ref '{reference}'; commit it there or drop --config",
                cpath.display()
            ))
            .into())
        }
        None => Config::default(),
    })
}

fn warn_if_differs(path: &Path, ref_text: &str, reference: &str) {
    // Capped like any input: only a warning depends on it.
    if let Ok(local) = crate::files::read_input_string(path, crate::limits::MAX_BASELINE_BYTES) {
        if local != ref_text {
            crate::gate_eprintln!(
                "gate: warning: '{}' in the working tree differs from '{reference}'; judging against '{reference}' (a change cannot loosen its own gate)",
                crate::escape::terminal(&path.display().to_string()),
                reference = crate::escape::terminal(reference)
            );
        }
    }
}

/// `git show REF:./PATH`: Some(text), None when the path does not exist at
/// that ref; an error for a bad ref or no repository.
pub fn git_show(reference: &str, path: &Path) -> Result<Option<String>, GateError> {
    if path.is_absolute() {
        return Err(GateError::usage(format!(
            "with --baseline-ref, '{}' must be relative to the current directory",
            path.display()
        )));
    }
    // The spec is one argument of `git show`: one starting with '-' would
    // be read as an option (`--output=FILE` writes a file), so such a ref
    // is refused, as git's own check-ref-format refuses it.
    if reference.is_empty() || reference.starts_with('-') || reference.chars().any(char::is_control)
    {
        return Err(GateError::usage(format!(
            "--baseline-ref '{}' is not a git ref (a ref never starts with '-' nor holds control characters); write a branch, tag or commit such as origin/main",
            crate::escape::terminal(reference)
        )));
    }
    let spec = format!("{reference}:./{}", path.display());
    let out = std::process::Command::new("git")
        .args(["show", &spec])
        .output()
        .map_err(|e| GateError::usage(format!("--baseline-ref needs git: {e}")))?;
    if out.status.success() {
        return String::from_utf8(out.stdout).map(Some).map_err(|_| {
            GateError::bad_file(spec.clone(), "not UTF-8 text; is this a baseline file?")
        });
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("does not exist in") || err.contains("exists on disk, but not in") {
        return Ok(None);
    }
    Err(GateError::usage(format!(
        "git show '{spec}' failed: {}; check --baseline-ref (fetch the branch first in CI: git fetch origin main)",
        err.trim().lines().next().unwrap_or("unknown error")
    )))
}

/// Write every requested output, print stdout, and talk to GitHub.
fn emit(args: &CheckArgs, inputs: &Inputs, r: &CheckReport) -> anyhow::Result<()> {
    let link = |text: String, f: fn(&str, &str) -> String| match &args.html_url {
        Some(url) => f(&text, url),
        None => text,
    };
    let markdown = link(
        report::markdown::Markdown.render(r),
        report::html::link_markdown,
    );
    if let Some(p) = &args.pr_comment {
        // The CI templates keep the comment in a folder of its own (it is
        // uploaded alone for the comment job): create it.
        if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                GateError::usage(format!(
                    "cannot create '{}' for --pr-comment: {e}",
                    dir.display()
                ))
            })?;
        }
    }
    for (flag, path) in outputs(args) {
        let text = match flag {
            "--junit" => report::junit::Junit.render(r),
            "--markdown" => markdown.clone(),
            "--json" => report::json::Json.render(r),
            "--pr-comment" => link(
                report::pr_comment::PrComment.render(r),
                report::html::link_pr_comment,
            ),
            "--bmf" => report::bmf::Bmf.render(r),
            "--html" => report::html::render(r, report::html::series_for(r)),
            _ => report::openmetrics::OpenMetrics.render(r),
        };
        write_report(inputs, flag, path, &text)?;
    }
    let annotations = super::github::annotation_lines(&report::github::items(r, ""));
    match args.format {
        Format::Text => {
            let color = args.color.stdout();
            let width = crate::console::stdout_width();
            crate::console::out(&report::terminal::Terminal { color, width }.render(r));
        }
        Format::Json => crate::console::out(&report::json::Json.render(r)),
    }
    super::github::print_annotations(&annotations, args.format == Format::Json);
    super::github::finish(
        inputs,
        &super::github::Step {
            markdown: &markdown,
            verdict: r.verdict.as_str(),
            regressions: r.counts.regression,
        },
    );
    Ok(())
}

/// The traces and what `RunInput::derive` made of each (every trace has it).
fn unzip_derived(
    loaded: Vec<(crate::trace::Trace, Option<crate::summary::RunDerived>)>,
) -> (Vec<crate::trace::Trace>, Vec<crate::summary::RunDerived>) {
    loaded
        .into_iter()
        .filter_map(|(t, d)| d.map(|d| (t, d)))
        .unzip()
}
