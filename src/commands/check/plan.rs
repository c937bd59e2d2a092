//! A check's plan: what `gate check` will do, built once from its flags and
//! files with every validation (flags that contradict each other, the
//! baseline's name, gate.toml and the baseline from the working tree or
//! `--baseline-ref`, the history store's location, the outputs against the
//! inputs, the rules and what may accept a regression) before anything
//! runs. `execute` then only measures and judges.
//!
//! One check is a plan of its flags (`Target::of`); a suite is one plan per
//! `[[suite.workload]]` (`Target` of the workload: its baseline, its scope
//! in gate.toml, its measurement), with the suite's flags shared.

use super::CheckArgs;
use crate::baseline::{self, Baseline};
use crate::commands::measure::{MeasureArgs, Measurement};
use crate::config::Config;
use crate::diagnose::RuleSet;
use crate::error::GateError;
use crate::files::Inputs;
use crate::history::pipeline::{HistoryPlan, HistorySettings};
use crate::report::check as report;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What one check judges: a baseline, the workload whose part of gate.toml
/// applies (a suite's; None: all of it), and how the run is measured.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub baseline: String,
    pub scope: Option<String>,
    pub measure: MeasureArgs,
}

impl Target {
    /// The target of one `gate check` (empty baseline with `--suite`).
    pub fn of(args: &CheckArgs) -> Target {
        Target {
            baseline: args.baseline_name().to_string(),
            scope: None,
            measure: args.measure.clone(),
        }
    }
}

/// How the runs are judged against the baseline (the flags of
/// `gate::CheckInput`).
#[derive(Debug, Clone)]
pub(crate) struct Judging {
    pub threshold: Option<f64>,
    pub multi_node: bool,
    pub allow_env_mismatch: bool,
    pub allow_command_change: bool,
    pub fail_on_improvement: bool,
}

/// One check, validated and with its files read: `execute` measures and
/// judges it (`check::execute`).
pub(crate) struct CheckPlan {
    pub config: Config,
    pub baseline: Baseline,
    pub baseline_source: String,
    pub history_plan: Option<HistoryPlan>,
    pub rules: RuleSet,
    pub acceptances: crate::accept::Acceptances,
    /// `--tag`s, which win over the traces' own.
    pub cli_tags: BTreeMap<String, String>,
    pub measure: Measurement,
    pub(crate) trace_dir: PathBuf,
    pub judging: Judging,
    /// `--confirm`: reruns that look again even after a regression.
    pub confirm: usize,
    /// Reruns this check may make (0 on replay): the sequential test's
    /// looks are 1 + that many.
    pub(crate) max_reruns: usize,
    /// `--wait-clean`: how long to wait for a neighbour to leave the GPU
    /// before a disturbed run is rerun.
    pub(crate) wait_clean: Option<std::time::Duration>,
    pub history: HistorySettings,
    /// A check page is written (`--html`): each run's series are taken at
    /// derive (`Run::plot`).
    pub(crate) plots: bool,
}

impl CheckPlan {
    /// Every validation of a check of `target`, in the order a user meets
    /// them, then its files read. `outputs` (the report files this check
    /// writes itself; none for a suite's workload) and the GitHub files are
    /// checked against `inputs`, which gains the history database.
    pub fn build(
        args: &CheckArgs,
        target: Target,
        outputs: &[(&'static str, &Path)],
        inputs: &mut Inputs,
    ) -> anyhow::Result<CheckPlan> {
        baseline::validate_name(&target.baseline)?;
        refuse_contradictions(args, &target.measure)?;
        let measure = Measurement::build(&target.measure)?;
        let (config, baseline, baseline_source) = load_inputs(args, &target)?;
        crate::commands::measure::warn_unread_metrics_file(&measure, &config);
        let mut history = args.history.settings();
        let history_plan = HistoryPlan::resolve(&history, &config)?;
        if history_plan.is_some() {
            history.commit = crate::commands::detect_commit(None);
        }
        inputs.add_all(
            "the history database",
            history_plan.iter().flat_map(|r| r.files()),
        );
        // Outputs before anything runs: a path that would be refused must not
        // cost a live run, nor replace an input (the history database included).
        for (flag, path) in outputs {
            inputs
                .check_output(path, flag)
                .map_err(|e| GateError::usage(e.to_string()))?;
        }
        refuse_shared_outputs(outputs)?;
        for var in GITHUB_FILES {
            if let Some(path) = std::env::var_os(var) {
                inputs
                    .check_output(Path::new(&path), &format!("${var}"))
                    .map_err(|e| GateError::usage(e.to_string()))?;
            }
        }
        let rules = config.rule_set()?;
        let acceptances = load_acceptances(args, &config)?;
        let max_reruns = if measure.is_live() {
            args.max_reruns
                .or(config.file.verdict.max_reruns)
                .unwrap_or(crate::config::verdict::DEFAULT_MAX_RERUNS)
                .max(args.confirm)
        } else {
            0
        };
        Ok(CheckPlan {
            cli_tags: measure.tags.iter().cloned().collect(),
            config,
            baseline,
            baseline_source,
            history_plan,
            rules,
            acceptances,
            measure,
            trace_dir: args.trace_dir.clone(),
            judging: Judging {
                threshold: args.threshold,
                multi_node: args.multi_node,
                allow_env_mismatch: args.allow_env_mismatch,
                allow_command_change: args.allow_command_change,
                fail_on_improvement: args.fail_on_improvement,
            },
            confirm: args.confirm,
            max_reruns,
            wait_clean: args.wait_clean,
            history,
            plots: args.html.is_some(),
        })
    }
}

/// Flags that cannot hold together, refused before any file is read.
fn refuse_contradictions(args: &CheckArgs, measure: &MeasureArgs) -> Result<(), GateError> {
    if let Some(url) = &args.html_url {
        report::html::validate_url(url).map_err(GateError::usage)?;
    }
    if let Some(t) = args.threshold {
        if !(t.is_finite() && (0.0..=10.0).contains(&t)) {
            return Err(GateError::usage(format!(
                "--threshold {t} is not a fraction; write 0.10 for 10 %"
            )));
        }
    }
    if args.multi_node && !measure.is_replay() {
        return Err(GateError::usage(
            "--multi-node needs one recorded trace per node: --replay NODE0.jsonl NODE1.jsonl ...",
        ));
    }
    if args.confirm > 0 && !measure.is_live() {
        return Err(GateError::usage(
            "--confirm reruns the benchmark, so it needs a live run (-- CMD); with --replay, pass every trace at once",
        ));
    }
    if args.wait_clean.is_some() && !measure.is_live() {
        return Err(GateError::usage(
            "--wait-clean waits before rerunning the benchmark, so it needs a live run (-- CMD); a replayed disturbed run cannot be rerun",
        ));
    }
    if args.max_reruns.is_some() && !measure.is_live() {
        return Err(GateError::usage(
            "--max-reruns reruns the benchmark, so it needs a live run (-- CMD); a replay cannot rerun, and a move the noise leaves open is INCONCLUSIVE (exit 4)",
        ));
    }
    Ok(())
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
        commit: crate::commands::detect_commit(None),
        today: crate::format::rfc3339_utc(std::time::SystemTime::now())[..10].to_string(),
        notes,
    })
}

/// The files a check of `target` reads, which no output may replace; the
/// history database joins them once gate.toml is read (`CheckPlan::build`).
pub(crate) fn base_inputs(args: &CheckArgs, target: &Target) -> Inputs {
    let mut inputs = Inputs::default();
    for t in &target.measure.replay {
        inputs.add("the replayed trace", t);
    }
    inputs.add(
        "the baseline",
        baseline::path_for(&args.baseline_dir, &target.baseline),
    );
    inputs.add(
        "the gate config",
        args.config
            .clone()
            .unwrap_or_else(|| PathBuf::from("gate.toml")),
    );
    if let Some(m) = &target.measure.metrics_file {
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
pub(crate) fn refuse_shared_outputs(outputs: &[(&'static str, &Path)]) -> Result<(), GateError> {
    let mut named: Vec<(String, PathBuf)> = outputs
        .iter()
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

/// Config and baseline, from the working tree or `--baseline-ref`.
fn load_inputs(args: &CheckArgs, target: &Target) -> anyhow::Result<(Config, Baseline, String)> {
    let name = target.baseline.as_str();
    let bpath = baseline::path_for(&args.baseline_dir, name);
    let config = load_config(args, target.scope.as_deref())?;
    let Some(reference) = &args.baseline_ref else {
        let b = baseline::load(&bpath, name)?;
        declared_needs_config(&config, &b)?;
        return Ok((config, b, bpath.display().to_string()));
    };
    let origin = |p: &Path| format!("{reference}:{}", p.display());
    let text = git_show(reference, &bpath)?.ok_or_else(|| {
        GateError::usage(format!(
            "baseline '{name}' not found at git ref '{reference}' ('{}'); capture it and merge it into {reference} first",
            bpath.display()
        ))
    })?;
    warn_if_differs(&bpath, &text, reference);
    let b = baseline::parse(&text, &origin(&bpath))?;
    declared_needs_config(&config, &b)?;
    Ok((config, b, origin(&bpath)))
}

/// A baseline holds a number gate.toml declared (a user metric: no metric
/// of the catalogue), but no gate.toml was found: refused, never judged
/// without it in silence.
fn declared_needs_config(config: &Config, b: &Baseline) -> Result<(), GateError> {
    if config.origin.is_some() {
        return Ok(());
    }
    let declared = b
        .metrics
        .keys()
        .find(|id| *id != crate::metrics::WALL_TIME.id && crate::metrics::find(id).is_none());
    match declared {
        None => Ok(()),
        Some(id) => Err(GateError::usage(format!(
            "baseline '{}' judges '{}', a number declared in gate.toml, but no gate.toml was found here or above up to the repository root; run gate inside the repository, or pass --config FILE",
            b.name,
            crate::escape::terminal(id)
        ))),
    }
}

/// gate.toml from the working tree, or from `--baseline-ref` (the target
/// branch's: thresholds, acceptance and the suite are never the change's),
/// narrowed to the suite workload `scope` when there is one.
pub(crate) fn load_config(args: &CheckArgs, scope: Option<&str>) -> anyhow::Result<Config> {
    let config = load_config_unscoped(args)?;
    Ok(match scope {
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
pub(crate) fn git_show(reference: &str, path: &Path) -> Result<Option<String>, GateError> {
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
