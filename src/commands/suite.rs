//! `gate check --suite` and `gate capture --suite`: several workloads in
//! one invocation, declared in gate.toml (`[[suite.workload]]`: a name, its
//! baseline, its command, and per-workload tags, warm-up and duration),
//! run one after another on the same GPUs, each judged against its own
//! baseline exactly as `gate check --baseline B -- CMD` would judge it.
//!
//! One report of each kind for the whole suite: a JUnit file with one
//! `<testsuite>` per workload, one OpenMetrics file (every series labelled
//! with its `baseline`), one Markdown report, one JSON document, one PR
//! comment. A workload that cannot be judged (its baseline is missing, its
//! benchmark crashed) is reported as such and the others still run.
//!
//! The suite's exit code is the worst of its workloads', in this order
//! (`worst_exit_code`), worst first: 2 (usage: the suite's own
//! configuration is broken), 5 (a benchmark failed), 1 (regression), 3
//! (could not measure; retryable), 4 (inconclusive), 0. Deterministic
//! failures rank above
//! the retryable one, so CI does not rerun a whole suite on the GPU when a
//! regression or a crash is already certain.
//!
//! The suite is one `CheckPlan` per workload, built before anything runs.
//! Live workloads run one after another (they share the GPUs); when every
//! workload replays recorded traces, their traces are loaded and summarised
//! at once on the cores (`parallel`), then judged in the suite's order, so
//! every report and every line on stdout and stderr is the same bytes as
//! one after another.

use super::check::{self, CheckArgs, CheckPlan};
use crate::config::suite::WorkloadDef;
use crate::config::Config;
use crate::error::GateError;
use crate::report::check::suite::Outcome;
use std::path::PathBuf;
use std::time::Duration;

pub use crate::exit_code::{worst_exit_code, EXIT_CODE_ORDER};
pub(crate) use crate::report::check::suite::verdict_word;

/// One workload, validated.
#[derive(Debug, Clone)]
pub struct Workload {
    pub name: String,
    pub baseline: String,
    pub command: Vec<String>,
    /// `gate ab --suite`: A's and B's argv, when the workload has them.
    pub ab: Option<(Vec<String>, Vec<String>)>,
    pub tags: Vec<(String, String)>,
    pub warmup: Option<Duration>,
    pub duration: Option<Duration>,
    pub(crate) warmup_until: Option<String>,
    pub until: Option<String>,
    pub metrics_file: Option<PathBuf>,
    /// `--suite-replay NAME=TRACE` traces (replay mode).
    pub replay: Vec<PathBuf>,
}

/// The suite's workloads from gate.toml, narrowed to `only` (all when
/// empty), with the replayed traces of `replay` (`NAME=TRACE`).
pub fn workloads(
    config: &Config,
    only: &[String],
    replay: &[String],
) -> Result<Vec<Workload>, GateError> {
    let origin = config.origin.as_deref().unwrap_or("gate.toml");
    let defs: &[WorkloadDef] = config
        .file
        .suite
        .as_ref()
        .map(|s| s.workload.as_slice())
        .unwrap_or(&[]);
    if defs.is_empty() {
        return Err(GateError::usage(format!(
            "--suite: '{origin}' declares no [[suite.workload]]; add one per workload (name, baseline, command), see docs/suites.md"
        )));
    }
    for o in only {
        if !defs.iter().any(|d| &d.name == o) {
            return Err(GateError::usage(format!(
                "--workload '{o}' is not a [[suite.workload]] of '{origin}' (it has: {})",
                names(defs)
            )));
        }
    }
    let mut traces: Vec<(String, PathBuf)> = Vec::new();
    for r in replay {
        let Some((name, path)) = r.split_once('=') else {
            return Err(GateError::usage(format!(
                "--suite-replay '{r}': write NAME=TRACE, e.g. --suite-replay resnet50=runs/resnet50.jsonl"
            )));
        };
        if !defs.iter().any(|d| d.name == name) {
            return Err(GateError::usage(format!(
                "--suite-replay '{r}': '{name}' is not a [[suite.workload]] of '{origin}' (it has: {})",
                names(defs)
            )));
        }
        traces.push((name.to_string(), PathBuf::from(path)));
    }
    let mut out = Vec::new();
    for d in defs
        .iter()
        .filter(|d| only.is_empty() || only.contains(&d.name))
    {
        let at = |field: &str, v: &str| -> Result<Duration, GateError> {
            super::measure::parse_duration(v).map_err(|e| {
                GateError::bad_file(
                    origin,
                    format!("[[suite.workload]] '{}' {field} = {v:?}: {e}", d.name),
                )
            })
        };
        let replay: Vec<PathBuf> = traces
            .iter()
            .filter(|(n, _)| n == &d.name)
            .map(|(_, p)| p.clone())
            .collect();
        if !traces.is_empty() && replay.is_empty() {
            return Err(GateError::usage(format!(
                "--suite-replay gives traces for some workloads but none for '{}'; give one for each workload run (or narrow with --workload)",
                d.name
            )));
        }
        check_patterns(d, origin)?;
        let mut tags: Vec<(String, String)> =
            d.tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        if !tags.iter().any(|(k, _)| k == "workload") {
            tags.push(("workload".into(), d.name.clone()));
        }
        out.push(Workload {
            name: d.name.clone(),
            baseline: d.baseline.clone(),
            command: d.command.clone(),
            ab: d.a.clone().zip(d.b.clone()),
            tags,
            warmup: d.warmup.as_deref().map(|v| at("warmup", v)).transpose()?,
            duration: d
                .duration
                .as_deref()
                .map(|v| at("duration", v))
                .transpose()?,
            warmup_until: d.warmup_until.clone(),
            until: d.until.clone(),
            metrics_file: d.metrics_file.as_ref().map(PathBuf::from),
            replay,
        });
    }
    Ok(out)
}

/// Every workload's `warmup_until` and `until`, checked as the flags are,
/// before the first workload runs (issue 41.10).
fn check_patterns(d: &WorkloadDef, origin: &str) -> Result<(), GateError> {
    for (field, flag, p) in [
        ("warmup_until", "--warmup-until", &d.warmup_until),
        ("until", "--until", &d.until),
    ] {
        if let Some(p) = p {
            super::measure::output_pattern(flag, p, "'^timed section done'").map_err(|e| {
                GateError::bad_file(
                    origin,
                    format!("[[suite.workload]] '{}' {field}: {e}", d.name),
                )
            })?;
        }
    }
    Ok(())
}

fn names(defs: &[WorkloadDef]) -> String {
    defs.iter()
        .map(|d| d.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One workload's measurement settings on top of the command line's.
pub(crate) fn measure_for(
    base: &super::measure::MeasureArgs,
    w: &Workload,
) -> super::measure::MeasureArgs {
    let mut m = base.clone();
    m.replay = w.replay.clone();
    m.command = if w.replay.is_empty() {
        w.command.clone()
    } else {
        Vec::new()
    };
    m.command_string = None;
    m.pid = None;
    m.tags.extend(w.tags.iter().cloned());
    if let Some(d) = w.warmup {
        m.warmup = d;
    }
    if w.duration.is_some() {
        m.duration = w.duration;
    }
    if w.warmup_until.is_some() {
        m.warmup_until = w.warmup_until.clone();
    }
    if w.until.is_some() {
        m.until = w.until.clone();
    }
    if w.metrics_file.is_some() {
        m.metrics_file = w.metrics_file.clone();
    }
    m
}

/// `gate check --suite`. A suite that cannot start still writes its JUnit
/// file and PR comment naming the problem and tells GitHub Actions
/// (`verdict=error`), as one check does (`output::write_error`).
pub fn check(args: &CheckArgs) -> anyhow::Result<i32> {
    let mut inputs = check::base_inputs(args, &check::Target::of(args));
    check_inner(args, &mut inputs).inspect_err(|e| {
        super::output::write_error(&check::outputs_of(args), &inputs, "suite", e);
    })
}

/// Each workload as one check of its own target, writing no report files
/// (the suite writes one of each).
fn targets(args: &CheckArgs, workloads: Vec<Workload>) -> Vec<(Workload, check::Target)> {
    (workloads.into_iter())
        .map(|w| {
            let target = check::Target {
                baseline: w.baseline.clone(),
                scope: Some(w.name.clone()),
                measure: measure_for(&args.measure, &w),
            };
            (w, target)
        })
        .collect()
}

/// One workload of the suite and its plan, or why it has none.
struct Planned {
    workload: Workload,
    plan: Result<CheckPlan, (i32, String)>,
    /// What the suite said on stderr while planning it (held, and written
    /// in the suite's order when its turn comes).
    said: String,
}

/// `inputs`: what the suite reads, filled in as it learns it (the error
/// path must not write over any of it either).
fn check_inner(args: &CheckArgs, inputs: &mut crate::files::Inputs) -> anyhow::Result<i32> {
    // The flags every workload shares, checked once: a bad --until is the
    // suite's mistake (exit 2), found before any workload runs.
    super::measure::Measurement::build(&args.measure)?;
    let config = check::load_config(args, None)?;
    let workloads = workloads(&config, &args.workload, &args.suite_replay)?;
    let alerting = check::Alerting::resolve(&config, args.html_url.as_deref())?;
    let targets = targets(args, workloads);
    // Outputs first: a path that would be refused must not cost live runs,
    // nor replace anything the suite reads (the history database included).
    for (_, target) in &targets {
        inputs.extend(check::base_inputs(args, target));
    }
    let history_plan =
        crate::history::pipeline::HistoryPlan::resolve(&args.history.settings(), &config)?;
    inputs.add_all(
        "the history database",
        history_plan.iter().flat_map(|r| r.files()),
    );
    let outputs = check::outputs(args);
    check::refuse_shared_outputs(&outputs)?;
    for (flag, path) in &outputs {
        inputs
            .check_output(path, flag)
            .map_err(|e| GateError::usage(e.to_string()))?;
    }
    let mut plans = plan_all(args, targets, inputs);
    // Replays are loaded a window at a time, on the cores, and judged in
    // the suite's order: the suite holds a window's traces, never all of
    // them (1,000 workloads).
    let window = replay_window(&plans);
    let mut outcomes = Vec::new();
    let mut pending = Vec::new();
    while !plans.is_empty() {
        let chunk: Vec<Planned> = plans
            .drain(..window.unwrap_or(plans.len()).min(plans.len()))
            .collect();
        let mut acquired = match window {
            Some(_) => acquire_replays(&chunk),
            None => Vec::new(),
        };
        for (i, p) in chunk.into_iter().enumerate() {
            crate::console::err_text(&p.said);
            let result = p.plan.and_then(|plan| {
                let judged = match acquired.get_mut(i).and_then(Option::take) {
                    Some((first, said)) => {
                        crate::console::err_text(&said);
                        first.and_then(|first| plan.conclude(first))
                    }
                    None => plan.execute(),
                };
                judged.map_err(|e| failed(&p.workload, &e))
            });
            let result = result.map(|j| {
                pending.push(j.history);
                j.report
            });
            outcomes.push(Outcome {
                name: p.workload.name,
                baseline: p.workload.baseline,
                result,
            });
        }
    }
    let code = worst_exit_code(outcomes.iter().map(Outcome::exit_code));
    let suite = super::output::Suite {
        outcomes: &outcomes,
        code,
    };
    super::output::write(&check::outputs_of(args), inputs, &suite)?;
    // The history after every report (history::pipeline): a store that
    // fails can only raise the exit code with --history-required.
    let history_codes: Vec<i32> = pending
        .into_iter()
        .filter_map(check::HistoryTail::finish)
        .collect();
    let code = worst_exit_code(std::iter::once(code).chain(history_codes));
    // Alerts last, one per workload and trigger (`check::Alerting`).
    Ok(match alerting {
        Some(a) => {
            let reports: Vec<_> = outcomes
                .iter()
                .filter_map(|o| Some((o.result.as_ref().ok()?, Some(o.name.as_str()))))
                .collect();
            a.deliver(&reports, "of the suite", code)
        }
        None => code,
    })
}

/// The suite as plans, one per workload in the suite's order (a workload
/// whose plan fails, e.g. its baseline is missing, is reported as such and
/// the others still run). What each says on stderr is held for its turn.
fn plan_all(
    args: &CheckArgs,
    targets: Vec<(Workload, check::Target)>,
    inputs: &crate::files::Inputs,
) -> Vec<Planned> {
    let n = targets.len();
    targets
        .into_iter()
        .enumerate()
        .map(|(i, (workload, target))| {
            let (plan, said) = crate::console::hold_err(|| {
                crate::gate_eprintln!(
                    "gate: suite: workload {}/{n} '{}' against baseline '{}'",
                    i + 1,
                    crate::escape::terminal(&workload.name),
                    crate::escape::terminal(&workload.baseline)
                );
                let mut judged_inputs = inputs.clone();
                CheckPlan::build(args, target, &[], &mut judged_inputs)
                    .map_err(|e| failed(&workload, &e))
            });
            Planned {
                workload,
                plan,
                said,
            }
        })
        .collect()
}

/// The first measurement of every workload, when all of them replay
/// recorded traces: acquired at once on the cores (`parallel`), as many at
/// a time as their loads fit in the memory budget (a trace over the spill
/// threshold: one workload at a time, so a suite's peak memory is one long
/// trace's, as before), each one's stderr held and returned
/// beside it, in the suite's order. Empty when the suite runs its
/// benchmarks (they share the GPUs: one after another) or when one thread
/// is all it may use (each workload is then executed in its turn).
type Held = (anyhow::Result<check::Acquired>, String);
/// How many workloads' replays are loaded at once: twice the threads
/// that load them (so the cores stay busy while one window is judged);
/// None when they are loaded one at a time, as each workload's turn comes
/// (a live suite, or traces too large to load side by side).
fn replay_window(plans: &[Planned]) -> Option<usize> {
    let replayed = plans
        .iter()
        .all(|p| p.plan.as_ref().map_or(true, CheckPlan::is_replay));
    if !replayed {
        return None;
    }
    let traces: Vec<PathBuf> = plans
        .iter()
        .filter_map(|p| p.plan.as_ref().ok())
        .flat_map(|p| p.measure.replay.iter().cloned())
        .collect();
    let threads = super::measure::load_threads(&traces);
    (threads > 1).then_some(threads * 2)
}

/// Every workload's replays of `plans`, loaded and summarised on the cores.
fn acquire_replays(plans: &[Planned]) -> Vec<Option<Held>> {
    let traces: Vec<PathBuf> = plans
        .iter()
        .filter_map(|p| p.plan.as_ref().ok())
        .flat_map(|p| p.measure.replay.iter().cloned())
        .collect();
    let threads = super::measure::load_threads(&traces).max(1);
    crate::parallel::map_with(threads, plans, |p| {
        let plan = p.plan.as_ref().ok()?;
        Some(crate::console::hold_err(|| plan.acquire()))
    })
}

/// A workload that could not be judged: its exit code and message, said
/// on stderr.
fn failed(w: &Workload, e: &anyhow::Error) -> (i32, String) {
    workload_failed("suite", &w.name, e)
}

/// A workload of `what` (`suite`, `ab suite`) that could not be judged:
/// its exit code and message, said on stderr.
pub(crate) fn workload_failed(what: &str, name: &str, e: &anyhow::Error) -> (i32, String) {
    let code = crate::error::exit_code_of(e);
    let message = crate::error::chain_line(e);
    crate::gate_eprintln!(
        "gate: {what}: workload '{}': {}",
        crate::escape::terminal(name),
        crate::escape::terminal(&message)
    );
    (code, message)
}

/// `gate capture --suite`: every workload's baseline, one after another
/// (from the working tree's gate.toml: capture runs on the default
/// branch). A workload that fails does not stop the others; the exit code
/// is the worst.
pub fn capture(args: &super::capture::CaptureArgs) -> anyhow::Result<i32> {
    let config = Config::from_flag(args.config.as_deref())?;
    let workloads = workloads(&config, &args.workload, &args.suite_replay)?;
    let n = workloads.len();
    let mut codes = Vec::new();
    for (i, w) in workloads.into_iter().enumerate() {
        crate::gate_eprintln!(
            "gate: suite: capturing workload {}/{n} '{}' as baseline '{}'",
            i + 1,
            crate::escape::terminal(&w.name),
            crate::escape::terminal(&w.baseline)
        );
        // Replayed: one run per trace; live: --runs (or the default).
        let target = super::capture::CaptureTarget {
            baseline: w.baseline.clone(),
            scope: Some(w.name.clone()),
            measure: measure_for(&args.measure, &w),
            runs: if w.replay.is_empty() { args.runs } else { None },
        };
        let captured =
            super::capture::CapturePlan::build(args, target).and_then(|plan| plan.execute());
        let code = match captured {
            Ok(c) => c,
            Err(e) => {
                crate::gate_eprintln!(
                    "gate: suite: workload '{}': {}",
                    crate::escape::terminal(&w.name),
                    crate::escape::terminal(&crate::error::chain_line(&e))
                );
                crate::error::exit_code_of(&e)
            }
        };
        codes.push(code);
    }
    let code = worst_exit_code(codes);
    crate::console::outln(format_args!(
        "gate: suite: {n} workload(s) captured, exit {code} ({})",
        verdict_word(code)
    ));
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_exit_code_follows_the_documented_order() {
        assert_eq!(worst_exit_code([0, 1, 3]), 1);
        assert_eq!(worst_exit_code([0, 3, 4]), 3);
        assert_eq!(worst_exit_code([1, 5]), 5);
        assert_eq!(worst_exit_code([5, 2, 1]), 2);
        assert_eq!(worst_exit_code([0, 4]), 4);
        assert_eq!(worst_exit_code([]), 0);
        assert_eq!(worst_exit_code([0, 0]), 0);
    }
}
