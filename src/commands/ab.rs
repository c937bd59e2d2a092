//! `gate ab`: A and B on one runner, interleaved. Two commands (`--a LINE`,
//! `--b LINE`, split like `--command-string`, never through a shell) run in
//! ABBA order (A B, B A, A B, ...) for at most `--rounds N` rounds, each run
//! recorded as `record` records it (counters, declared numbers, harness
//! files: `measure::acquire_each_checked`). A's runs become the baseline
//! (`baseline::build`, as `capture` builds one) and B's the new runs, judged
//! by `gate::check_paired`: every metric on its per-round differences
//! (`gate::paired`), with check's floors, noise rule, passes and diagnosis.
//! The report is a check report with its `ab` section, written by check's
//! writer (`output`), so every output of `check` exists for `ab` too.
//!
//! It judges after each ABBA block from the second on and stops as soon as
//! a look decides (`gate::paired::looks_at`, Bonferroni-split).

use super::check::{load_config, refuse_shared_outputs, CheckArgs};
use super::measure::{self, MeasureArgs, Measurement};
use super::output;
use crate::baseline::{self, Baseline, BuildMeta};
use crate::config::Config;
use crate::error::GateError;
use crate::files::Inputs;
use crate::gate::{self, paired, AbDifferences, AbInfo, AbRound, CheckReport, RunVerdict};
use crate::history::pipeline::{self, CheckHistory, HistoryPlan, HistorySettings};
use crate::summary::Run;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Args)]
pub struct AbArgs {
    /// A, the reference (e.g. the target branch's build): its command line, split into words
    /// like --command-string (quotes and backslashes honoured; never run through a shell)
    #[arg(
        long = "a",
        value_name = "LINE",
        help_heading = "A/B",
        required_unless_present = "suite",
        conflicts_with = "suite"
    )]
    pub a: Option<String>,

    /// B, the change (e.g. the pull request's build), split like --a
    #[arg(
        long = "b",
        value_name = "LINE",
        help_heading = "A/B",
        required_unless_present = "suite",
        conflicts_with = "suite"
    )]
    pub b: Option<String>,

    /// The most rounds (one A run and one B run each, in ABBA order: A B, B A, A B, ...);
    /// judged after every ABBA block from the second on, stopping when a look decides
    #[arg(long, value_name = "N", default_value_t = DEFAULT_ROUNDS, help_heading = "A/B")]
    pub rounds: usize,

    #[command(flatten)]
    pub check: CheckArgs,
}

/// `--rounds` by default: looks after rounds 4, 6 and 8.
pub const DEFAULT_ROUNDS: usize = 8;

/// The most `--rounds` taken: two runs each, every one a benchmark run.
pub const MAX_ROUNDS: usize = 1000;

/// The name of the comparison when `--baseline` does not give one.
pub const DEFAULT_NAME: &str = "ab";

/// The history tag every `gate ab` row carries (`mode=ab`).
pub const HISTORY_TAG: (&str, &str) = ("mode", "ab");

pub fn run(args: AbArgs) -> anyhow::Result<i32> {
    let mut inputs = Inputs::default();
    match run_inner(&args, &mut inputs) {
        Ok(code) => Ok(code),
        Err(err) => {
            // CI still gets a JUnit file and PR comment naming the problem.
            let outputs = super::check::outputs_of(&args.check);
            output::write_error(&outputs, &inputs, name_of(&args), &err);
            Err(err)
        }
    }
}

fn name_of(args: &AbArgs) -> &str {
    args.check.baseline.as_deref().unwrap_or(DEFAULT_NAME)
}

fn run_inner(args: &AbArgs, inputs: &mut Inputs) -> anyhow::Result<i32> {
    let shared = Shared::build(args, inputs)?;
    if args.check.suite {
        return run_suite(args, shared, inputs);
    }
    let name = name_of(args).to_string();
    baseline::validate_name(&name)?;
    let measure = &args.check.measure;
    let (a, b) = (
        Side::of_line("--a", &args.a, measure)?,
        Side::of_line("--b", &args.b, measure)?,
    );
    let config = shared.config.clone();
    let plan = shared.plan(args, name, (a, b), config)?;
    let (report, pending) = plan.execute()?;
    output::write(&super::check::outputs_of(&args.check), inputs, &report)?;
    let codes = std::iter::once(report.exit_code()).chain(finish_history(pending));
    Ok(crate::exit_code::worst_exit_code(codes))
}

/// `gate ab --suite`: every `[[suite.workload]]` with `a` and `b` (or those
/// `--workload` names), one comparison after another, one report of each
/// kind for all of them (check's suite writer).
fn run_suite(args: &AbArgs, shared: Shared, inputs: &Inputs) -> anyhow::Result<i32> {
    let all = super::suite::workloads(&shared.config, &args.check.workload, &[])?;
    let without: Vec<&str> = (all.iter())
        .filter(|w| w.ab.is_none())
        .map(|w| w.name.as_str())
        .collect();
    if !args.check.workload.is_empty() && !without.is_empty() {
        return Err(GateError::usage(format!(
            "gate ab --suite: workload(s) {} have no a and b commands in [[suite.workload]]; add a = [...] and b = [...] (argv), see docs/suites.md",
            without.join(", ")
        ))
        .into());
    }
    let chosen: Vec<_> = all.iter().filter(|w| w.ab.is_some()).collect();
    if chosen.is_empty() {
        return Err(GateError::usage(
            "gate ab --suite: no [[suite.workload]] has a and b commands; add a = [...] and b = [...] (argv) to the workloads to compare, see docs/suites.md",
        )
        .into());
    }
    let mut outcomes = Vec::new();
    let mut pending = Vec::new();
    for w in chosen {
        crate::gate_eprintln!(
            "gate: ab suite: workload '{}'",
            crate::escape::terminal(&w.name)
        );
        let measure = super::suite::measure_for(&args.check.measure, w);
        let (a, b) = w.ab.clone().expect("chosen for its a and b");
        let config = shared.config.for_workload(&w.name);
        let sides = Side::of_argv(a, &measure).and_then(|a| Ok((a, Side::of_argv(b, &measure)?)));
        let result = (sides.map_err(anyhow::Error::from))
            .and_then(|sides| shared.plan(args, w.baseline.clone(), sides, config))
            .and_then(|plan| plan.execute())
            .map(|(report, p)| {
                pending.push(p);
                report
            })
            .map_err(|e| super::suite::workload_failed("ab suite", &w.name, &e));
        outcomes.push(crate::report::check::suite::Outcome {
            name: w.name.clone(),
            baseline: w.baseline.clone(),
            result,
        });
    }
    let code = crate::exit_code::worst_exit_code(outcomes.iter().map(|o| o.exit_code()));
    let suite = output::Suite {
        outcomes: &outcomes,
        code,
    };
    output::write(&super::check::outputs_of(&args.check), inputs, &suite)?;
    let history = pending.into_iter().filter_map(finish_history);
    Ok(crate::exit_code::worst_exit_code(
        std::iter::once(code).chain(history),
    ))
}

/// Append the comparison to the history (after every report): an exit
/// code only when `--history-required` and the store failed.
fn finish_history(pending: Option<pipeline::PendingCheck>) -> Option<i32> {
    let e = pipeline::finish_check(pending?).err()?;
    crate::gate_eprintln!("gate: error: {}", crate::escape::terminal(&e.to_string()));
    Some(crate::error::exit_code_of(&e.into()))
}

/// One side of the comparison: its command line as given, and how it runs
/// (built once: every round reuses it).
struct Side {
    line: String,
    measure: Measurement,
}

impl Side {
    /// `--a LINE` / `--b LINE`, split like `--command-string`.
    fn of_line(flag: &str, line: &Option<String>, base: &MeasureArgs) -> Result<Side, GateError> {
        let line = line.clone().unwrap_or_default();
        let argv = crate::shell_words::split(&line, flag).map_err(GateError::usage)?;
        if argv.is_empty() {
            return Err(GateError::usage(format!(
                "{flag} is empty; give the benchmark command, e.g. {flag} 'python bench.py --batch 64'"
            )));
        }
        let mut measure = base.clone();
        measure.command = argv;
        let measure = Measurement::build(&measure)?;
        Ok(Side { line, measure })
    }

    /// A suite workload's `a` or `b` argv.
    fn of_argv(argv: Vec<String>, base: &MeasureArgs) -> Result<Side, GateError> {
        let line = argv.join(" ");
        let mut measure = base.clone();
        measure.command = argv;
        let measure = Measurement::build(&measure)?;
        Ok(Side { line, measure })
    }

    /// The argv this side runs.
    fn command(&self) -> String {
        (self.measure.record.as_ref()).map_or(String::new(), |r| r.command.join(" "))
    }
}

/// What every comparison of one invocation shares, validated once: the
/// (unscoped) gate.toml, the history store, the outputs checked.
struct Shared {
    config: Config,
    history_plan: Option<HistoryPlan>,
    history: HistorySettings,
}

impl Shared {
    fn build(args: &AbArgs, inputs: &mut Inputs) -> anyhow::Result<Shared> {
        let c = &args.check;
        refuse_check_only_flags(args)?;
        inputs.add(
            "the gate config",
            c.config
                .clone()
                .unwrap_or_else(|| PathBuf::from("gate.toml")),
        );
        if let Some(m) = &c.measure.metrics_file {
            inputs.add("the --metrics-file", m);
        }
        let config = load_config(c, None)?;
        let mut history = c.history.settings();
        let history_plan = HistoryPlan::resolve(&history, &config)?;
        if history_plan.is_some() {
            history.commit = super::detect_commit(None);
        }
        inputs.add_all(
            "the history database",
            history_plan.iter().flat_map(|r| r.files()),
        );
        let outputs = super::check::outputs(c);
        for (flag, path) in &outputs {
            inputs
                .check_output(path, flag)
                .map_err(|e| GateError::usage(e.to_string()))?;
        }
        refuse_shared_outputs(&outputs)?;
        Ok(Shared {
            config,
            history_plan,
            history,
        })
    }

    /// One comparison named `name` of sides `(a, b)` under `config`.
    fn plan(
        &self,
        args: &AbArgs,
        name: String,
        (a, b): (Side, Side),
        config: Config,
    ) -> anyhow::Result<AbPlan> {
        let config_max_reruns = config.file.verdict.max_reruns;
        Ok(AbPlan {
            name,
            a,
            b,
            rules: config.rule_set()?,
            config,
            history_plan: self.history_plan.clone(),
            history: self.history.clone(),
            trace_dir: args.check.trace_dir.clone(),
            rounds: args.rounds,
            looks: paired::looks_at(args.rounds),
            max_redos: args
                .check
                .max_reruns
                .or(config_max_reruns)
                .unwrap_or(crate::config::verdict::DEFAULT_MAX_RERUNS),
            wait_clean: args.check.wait_clean,
            args: args.check.clone(),
        })
    }
}

/// A `gate ab`, validated and with its files read.
struct AbPlan {
    name: String,
    a: Side,
    b: Side,
    config: Config,
    rules: crate::diagnose::RuleSet,
    history_plan: Option<HistoryPlan>,
    history: HistorySettings,
    trace_dir: PathBuf,
    rounds: usize,
    looks: Vec<usize>,
    /// Disturbed rounds run again before giving up (`--max-reruns`).
    max_redos: usize,
    /// `--wait-clean`: wait for neighbours to leave before a round is redone.
    wait_clean: Option<std::time::Duration>,
    args: CheckArgs,
}

/// A round's runs so far, each side's in round order.
#[derive(Default)]
struct Rounds {
    a: Vec<Run>,
    b: Vec<Run>,
    order: Vec<&'static str>,
    /// The last run of each dropped (disturbed) round, for `--wait-clean`.
    dropped: Vec<Run>,
}

impl Rounds {
    /// Why the last complete round was disturbed, if it was: A's run or
    /// B's, each judged on its own (no baseline: A and B share the machine).
    fn last_disturbed(&self) -> Option<String> {
        let i = self.complete().checked_sub(1)?;
        let found: Vec<String> = [&self.a[i], &self.b[i]]
            .into_iter()
            .filter_map(|r| gate::disturbance::detect(r, None))
            .map(|d| d.text())
            .collect();
        (!found.is_empty()).then(|| found.join("; "))
    }

    /// Forget the last complete round (both runs).
    fn drop_last(&mut self) {
        self.a.pop();
        self.dropped.extend(self.b.pop());
    }

    /// Complete rounds.
    fn complete(&self) -> usize {
        self.a.len().min(self.b.len())
    }

    /// Each side's runs over the complete rounds.
    fn inputs(&self) -> (&[Run], &[Run]) {
        let n = self.complete();
        (&self.a[..n], &self.b[..n])
    }
}

impl AbPlan {
    /// Run the rounds, judging at each look until one decides; then the
    /// history's reads. The report is not written here.
    fn execute(&self) -> anyhow::Result<(CheckReport, Option<pipeline::PendingCheck>)> {
        let mut rounds = Rounds::default();
        let mut judged = None;
        let mut redone: Vec<String> = Vec::new();
        while rounds.complete() < self.rounds {
            let round = rounds.complete();
            let ab = round % 2 == 0;
            crate::gate_eprintln!(
                "gate: ab round {}/{}: {}",
                round + 1,
                self.rounds,
                if ab { "A then B" } else { "B then A" }
            );
            for first in [ab, !ab] {
                if first {
                    rounds.a.push(self.measure(&self.a, true, "A", round)?);
                } else {
                    rounds.b.push(self.measure(&self.b, false, "B", round)?);
                }
            }
            // A disturbed round is no evidence about A against B (issue 38):
            // it is dropped and run again, within the rerun budget.
            if let Some(why) = rounds.last_disturbed() {
                if redone.len() >= self.max_redos {
                    return Err(GateError::infra(format!(
                        "round {} of gate ab was DISTURBED and the rerun budget ({} redone round(s), --max-reruns) is spent: {why}; run gate ab on a quiet GPU, or give --max-reruns/--wait-clean room",
                        round + 1,
                        redone.len()
                    ))
                    .into());
                }
                crate::gate_eprintln!(
                    "gate: ab round {} was DISTURBED and is run again: {}",
                    round + 1,
                    crate::escape::terminal(&why)
                );
                redone.push(format!("round {}: {why}", round + 1));
                rounds.drop_last();
                if let Some(limit) = self.wait_clean {
                    if let Some(last) = rounds.dropped.last() {
                        super::check::wait_for_quiet_gpus(last, limit);
                    }
                }
                continue;
            }
            rounds.order.push(if ab { "AB" } else { "BA" });
            let b_failed = rounds.b.last().is_some_and(|r| r.ending.failure.is_some());
            if !(self.looks.contains(&(round + 1)) || b_failed) {
                continue;
            }
            let (report, base) = self.judge(&rounds)?;
            let decided = report.verdict() != RunVerdict::Inconclusive;
            judged = Some((report, base));
            if decided || b_failed {
                break;
            }
        }
        let (mut report, base) = judged.expect("the last round is a look");
        report.ab = Some(self.ab_info(&rounds, &report));
        if !redone.is_empty() {
            report.warn_first(format!(
                "{} round(s) were DISTURBED (something outside the benchmarks' process trees acted on them), dropped and run again: {}",
                redone.len(),
                redone.join(" | ")
            ));
        }
        let pending = self.history_plan.clone().map(|rec| {
            let mut tags: std::collections::BTreeMap<String, String> =
                self.a.measure.tags.iter().cloned().collect();
            tags.insert(HISTORY_TAG.0.into(), HISTORY_TAG.1.into());
            pipeline::before_check_report(
                CheckHistory::open(rec),
                &self.history,
                &self.config,
                &base,
                &rounds.b,
                &tags,
                &mut report,
            )
        });
        Ok((report, pending))
    }

    /// One run of one side, recorded like `record`; A's samples are kept
    /// (parked) for the baseline's pooled statistics. A failed A run stops the
    /// comparison (nothing to compare against); a failed B run is judged.
    fn measure(&self, side: &Side, park: bool, which: &str, round: usize) -> anyhow::Result<Run> {
        let run = measure::acquire_runs(
            &side.measure,
            1,
            &self.trace_dir,
            &self.config,
            measure::Keep {
                samples: park,
                // B's runs are the page's.
                series: !park && self.args.html.is_some(),
                timeline: None,
            },
            |_| Ok(()),
        )?
        .pop()
        .ok_or_else(|| {
            GateError::infra(format!(
                "{which} run of round {} recorded nothing",
                round + 1
            ))
        })?;
        if which == "A" {
            if let Some(f) = &run.ending.failure {
                return Err(f
                    .error(format!(
                        "A ('{}') failed in round {}: {f}; A is the reference, so nothing can be compared",
                        crate::escape::terminal(&side.line),
                        round + 1
                    ))
                    .into());
            }
        }
        Ok(run)
    }

    /// The paired verdict of the rounds so far: A's runs built into a
    /// baseline as `capture` builds one, B's judged against it round by round.
    fn judge(&self, rounds: &Rounds) -> anyhow::Result<(CheckReport, Baseline)> {
        let (a, b) = rounds.inputs();
        let meta = BuildMeta {
            created: crate::format::now_rfc3339(),
            commit: super::detect_commit(None),
            tags: self.a.measure.tags.iter().cloned().collect(),
        };
        let mut base = baseline::build(&self.name, a, &self.config, false, &meta)?;
        // A and B are different commands by design: the comparability
        // check of a stored baseline does not apply.
        if let Some(r) = rounds.b.first() {
            base.capture.command = r.header.command.clone();
        }
        let report = gate::check_paired(
            &gate::CheckInput {
                baseline: &base,
                baseline_source: format!("A: {}", self.a.line),
                config: &self.config,
                cli_threshold: self.args.threshold,
                runs: b,
                multi_node: false,
                allow_env_mismatch: self.args.allow_env_mismatch,
                allow_command_change: true,
                cli_tags: self.a.measure.tags.iter().cloned().collect(),
                fail_on_improvement: self.args.fail_on_improvement,
                rules: &self.rules,
                acceptances: None,
                looks: self.looks.len(),
                history_spread: Default::default(),
            },
            a,
        );
        Ok((report, base))
    }

    /// The report's `ab` section: the rounds and each gated metric's
    /// per-round differences with its interval.
    fn ab_info(&self, rounds: &Rounds, report: &CheckReport) -> AbInfo {
        let n = rounds.complete();
        let (a, b) = rounds.inputs();

        let differences = report
            .metrics
            .iter()
            .filter(|m| m.gated && m.node.is_none() && m.gpu.is_none())
            .map(|m| AbDifferences {
                metric: m.id.clone(),
                unit: m.unit.clone(),
                values: gate::round_differences(&self.config, a, b, &m.id, m.statistic),
                interval: m.change.zip(m.noise).map(|(c, w)| [c - w, c + w]),
            })
            .collect();
        AbInfo {
            a_command: self.a.command(),
            b_command: self.b.command(),
            rounds_planned: self.rounds,
            looks: self.looks.clone(),
            stopped_early: n < self.rounds,
            rounds: (0..n)
                .map(|i| AbRound {
                    order: rounds.order[i].to_string(),
                    a_trace: rounds.a[i].source.clone(),
                    b_trace: rounds.b[i].source.clone(),
                })
                .collect(),
            differences,
        }
    }
}

/// The flags of `check` that have no meaning here, refused by name.
fn refuse_check_only_flags(args: &AbArgs) -> Result<(), GateError> {
    let c = &args.check;
    let m = &c.measure;
    let refused = [
        (
            m.is_replay() || !c.suite_replay.is_empty(),
            "--replay/--suite-replay",
        ),
        (m.pid.is_some(), "--pid"),
        (
            !m.command.is_empty() || m.command_string.is_some(),
            "a command after '--' (or --command-string)",
        ),
        (c.multi_node, "--multi-node"),
        (c.confirm > 0, "--confirm"),
        (
            c.accept.is_some() || !c.accept_labels.is_empty(),
            "--accept/--accept-labels",
        ),
        (c.baseline_dir != Path::new("baselines"), "--baseline-dir"),
    ];
    if let Some((_, flag)) = refused.iter().find(|(given, _)| *given) {
        return Err(GateError::usage(format!(
            "gate ab does not take {flag}: it runs --a LINE and --b LINE itself, in rounds (--rounds N), and reads no stored baseline; use gate check for that"
        )));
    }
    if !(2..=MAX_ROUNDS).contains(&args.rounds) {
        return Err(GateError::usage(format!(
            "--rounds {} is out of range: give 2 to {MAX_ROUNDS} (a paired interval needs two rounds; {DEFAULT_ROUNDS} by default)",
            args.rounds
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{trace, Signature};

    fn rounds_of(pairs: &[(Signature, Signature)]) -> Rounds {
        let config = Config::default();
        let mut r = Rounds::default();
        for (a, b) in pairs {
            for (sig, runs) in [(a, &mut r.a), (b, &mut r.b)] {
                runs.push(Run::derive(&trace(sig, 1), &config));
            }
        }
        r
    }

    /// A round with a neighbour on the GPU in either run is found
    /// disturbed and dropped whole; a clean round is kept.
    #[test]
    fn a_disturbed_round_is_found_and_dropped_whole() {
        let clean = (Signature::healthy(), Signature::healthy());
        assert_eq!(
            rounds_of(std::slice::from_ref(&clean)).last_disturbed(),
            None
        );
        for last in [
            (Signature::contention(), Signature::healthy()),
            (Signature::healthy(), Signature::contention()),
        ] {
            let mut r = rounds_of(&[clean.clone(), last]);
            let why = r.last_disturbed().expect("a neighbour disturbs the round");
            assert!(
                why.contains("outside the benchmark's process tree"),
                "{why}"
            );
            r.drop_last();
            assert_eq!((r.a.len(), r.b.len()), (1, 1));
            assert_eq!(r.dropped.len(), 1);
            assert_eq!(r.last_disturbed(), None);
        }
    }
}
