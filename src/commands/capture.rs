//! `gate capture`: measure known-good runs (or replay traces) and store
//! them as `baselines/NAME.toml`. Refuses to baseline a failed run, and
//! never overwrites an existing baseline silently: it shows the diff and
//! wants `--replace`. Its flags become a `CapturePlan` (every validation
//! before anything runs), which `execute` measures and stores; a suite is
//! one plan per workload.

use super::measure::{self, MeasureArgs, Measurement};
use crate::baseline::{self, BuildMeta, Environment, StoreOutcome};
use crate::config::Config;
use crate::error::GateError;
use crate::gate;
use crate::summary::Run;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Clone, Args)]
pub struct CaptureArgs {
    /// Name of the baseline (file baselines/NAME.toml); letters, digits, '.', '_', '-'
    #[arg(long, value_name = "NAME", required_unless_present = "suite")]
    pub baseline: Option<String>,

    /// Capture the baseline of every [[suite.workload]] of gate.toml, one after another
    /// (docs/suites.md)
    #[arg(long, conflicts_with_all = ["baseline", "multi_node", "replay", "pid", "command", "command_string"])]
    pub suite: bool,

    /// With --suite: only this workload (repeatable)
    #[arg(long, value_name = "NAME", requires = "suite")]
    pub workload: Vec<String>,

    /// With --suite: replay TRACE for workload NAME (repeatable: one trace per run)
    #[arg(long, value_name = "NAME=TRACE", requires = "suite")]
    pub(crate) suite_replay: Vec<String>,

    /// Directory of baseline files
    #[arg(long, value_name = "DIR", default_value = "baselines")]
    pub baseline_dir: PathBuf,

    /// Gating policy file (statistics, user metrics) [default: gate.toml, optional]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Measure the command N times; the spread between runs becomes the noise band
    /// [default: 3 for a launched command, 1 with --pid; with --replay: the number of traces]
    #[arg(long, value_name = "N")]
    pub runs: Option<usize>,

    /// Overwrite an existing baseline (the diff is shown either way)
    #[arg(long)]
    pub replace: bool,

    /// Keep a run that something outside the benchmark's process tree disturbed (a process
    /// on its GPU, throttling, an Xid, a saturated CPU) instead of refusing it (exit 3)
    #[arg(long)]
    pub allow_disturbed: bool,

    /// Where live runs write their traces
    #[arg(long, value_name = "DIR", default_value = ".gate/traces")]
    pub(crate) trace_dir: PathBuf,

    /// Commit of the code under test [default: $CI_COMMIT_SHA, $GITHUB_SHA, or git rev-parse HEAD]
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,

    /// The given traces are the nodes of ONE run, not repeated runs
    #[arg(long)]
    pub multi_node: bool,

    #[command(flatten)]
    pub measure: MeasureArgs,

    #[command(flatten)]
    pub history: super::history::HistoryArgs,
}

/// Runs a live capture makes by default: the fewest that estimate the
/// run-to-run noise usefully. With one run a number measured once per run
/// (wall time, a throughput line) has no noise estimate and is never judged
/// a regression; two runs give one degree of freedom (95 % t = 12.7), three
/// give two (t = 4.3, docs/gating.md). `--runs 1` opts out; an attached
/// process (`--pid`) is measured once, since gate cannot rerun it.
pub(crate) const DEFAULT_LIVE_RUNS: usize = 3;

pub fn run(args: CaptureArgs) -> anyhow::Result<i32> {
    CapturePlan::build(&args, CaptureTarget::of(&args))?.execute()
}

/// What one capture makes: a baseline (its name), the workload whose part
/// of gate.toml applies (a suite's; None: all of it), how it is measured
/// and how many runs (None: `--runs`' default for the measurement).
#[derive(Debug, Clone)]
pub(crate) struct CaptureTarget {
    pub baseline: String,
    pub scope: Option<String>,
    pub measure: MeasureArgs,
    pub runs: Option<usize>,
}

impl CaptureTarget {
    /// The target of one `gate capture` (empty baseline with `--suite`).
    pub fn of(args: &CaptureArgs) -> CaptureTarget {
        CaptureTarget {
            baseline: args.baseline.clone().unwrap_or_default(),
            scope: None,
            measure: args.measure.clone(),
            runs: args.runs,
        }
    }
}

/// One capture, validated, with gate.toml read and the baseline's path
/// checked against every input: `execute` measures and stores it.
pub(crate) struct CapturePlan {
    name: String,
    runs: usize,
    multi_node: bool,
    config: Config,
    history_plan: Option<crate::history::pipeline::HistoryPlan>,
    measure: Measurement,
    trace_dir: PathBuf,
    baseline_dir: PathBuf,
    replace: bool,
    /// `--allow-disturbed`: keep a disturbed run (`gate::disturbance`).
    allow_disturbed: bool,
    commit: Option<String>,
    history: crate::history::pipeline::HistorySettings,
}

impl CapturePlan {
    /// Every validation of a capture of `target`, before anything runs.
    pub fn build(args: &CaptureArgs, target: CaptureTarget) -> anyhow::Result<CapturePlan> {
        let name = target.baseline;
        baseline::validate_name(&name)?;
        let measure = target.measure;
        let runs = match (measure.is_replay(), target.runs) {
            (_, Some(0)) => return Err(GateError::usage("--runs must be at least 1").into()),
            (true, Some(n)) if n != measure.replay.len() && !args.multi_node => {
                return Err(GateError::usage(format!(
                    "--runs {n} but {} trace(s) given to --replay; each trace is one run (drop --runs)",
                    measure.replay.len()
                ))
                .into())
            }
            (true, _) => measure.replay.len(),
            (false, Some(n)) => n,
            (false, None) if measure.pid.is_some() => 1,
            (false, None) => DEFAULT_LIVE_RUNS,
        };
        if args.multi_node && !measure.is_replay() {
            return Err(GateError::usage(
                "--multi-node needs one recorded trace per node: --replay NODE0.jsonl NODE1.jsonl ...",
            )
            .into());
        }
        let measure = Measurement::build(&measure)?;
        let config_path = args
            .config
            .clone()
            .unwrap_or_else(|| PathBuf::from("gate.toml"));
        let config = Config::load(&config_path, args.config.is_some())?;
        let config = match &target.scope {
            Some(w) => config.for_workload(w),
            None => config,
        };
        measure::warn_unread_metrics_file(&measure, &config);
        let history = args.history.settings();
        let history_plan = crate::history::pipeline::HistoryPlan::resolve(&history, &config)?;
        // The baseline path is checked before anything is measured: never a
        // FIFO, a device or a directory, never a file this command reads (a
        // trace it is built from, gate.toml, the history database).
        let mut inputs = crate::files::Inputs::default();
        for t in &measure.replay {
            inputs.add("the replayed trace", t);
        }
        inputs.add("the gate config", &config_path);
        inputs.add_all(
            "the history database",
            history_plan.iter().flat_map(|r| r.files()),
        );
        inputs
            .check_output(
                &baseline::path_for(&args.baseline_dir, &name),
                "the baseline",
            )
            .map_err(|e| GateError::usage(e.to_string()))?;
        Ok(CapturePlan {
            name,
            runs,
            multi_node: args.multi_node,
            config,
            history_plan,
            measure,
            trace_dir: args.trace_dir.clone(),
            baseline_dir: args.baseline_dir.clone(),
            replace: args.replace,
            allow_disturbed: args.allow_disturbed,
            commit: args.commit.clone(),
            history,
        })
    }

    /// Measure (or replay) the runs, build the baseline, store it, and
    /// record it in the history.
    pub fn execute(&self) -> anyhow::Result<i32> {
        let (name, config, multi_node) = (&self.name, &self.config, self.multi_node);
        // Each run is derived as it is loaded (its load holding room in
        // the memory budget), then its trace is dropped; when the baseline
        // pools several runs (or the nodes of one), its samples are kept,
        // parked in a scratch file: the pooled statistics read every run's
        // own column back, a column at a time, and select across them (no
        // pooled copy).
        let inputs = self.acquire(self.runs > 1 || multi_node)?;

        ensure_known_good(&inputs, config, multi_node, self.allow_disturbed)?;
        for d in inputs
            .iter()
            .filter_map(|r| gate::disturbance::detect(r, None))
        {
            crate::gate_eprintln!(
                "gate: warning: kept a DISTURBED run (--allow-disturbed): {}",
                crate::escape::terminal(&d.text())
            );
        }

        let meta = BuildMeta {
            created: crate::format::now_rfc3339(),
            commit: super::detect_commit(self.commit.as_deref()),
            tags: self.measure.tags.iter().cloned().collect(),
        };
        // One run: its statistics are its summary's, no values are read.
        let b = baseline::build(name, &inputs, config, multi_node, &meta)?;
        ensure_something_gated(&b)?;
        self.store(&b)?;
        print_summary(&b);
        for w in gate::detectable::capture_warnings(&b, config) {
            crate::gate_eprintln!("gate: warning: {}", crate::escape::terminal(&w));
        }
        // A harness's number carries its own within-run interval (pytest-
        // benchmark rounds, repetitions): only the others lack a noise estimate.
        let no_noise: Vec<&str> = b
            .metrics
            .iter()
            .filter(|(_, m)| m.gated && m.runs.iter().all(|r| r.ci95.is_none()))
            .map(|(id, _)| id.as_str())
            .collect();
        if b.capture.runs < 2 && !multi_node && !no_noise.is_empty() {
            crate::gate_eprintln!(
                "gate: warning: one run: {} measured once per run with no interval of its own: no noise estimate, so a check can call it inconclusive but never a regression; capture --runs 3 (or replay several traces), or check with --confirm N",
                crate::escape::terminal(&no_noise.join(", "))
            );
        }
        if let Some(w) = b.spans_not_kept(&inputs) {
            crate::gate_eprintln!("gate: warning: {}", crate::escape::terminal(&w));
        }
        if let Some(rec) = &self.history_plan {
            crate::history::pipeline::after_capture(rec, &self.history, &b, &inputs)?;
        }
        Ok(crate::exit_code::PASS)
    }

    /// The runs, each judged fit for a baseline as soon as it ends (a
    /// failed or invalid first run is refused before the next one costs
    /// GPU time); with `pools`, each run's samples kept (parked) for the
    /// pooled statistics.
    fn acquire(&self, pools: bool) -> anyhow::Result<Vec<Run>> {
        let fit_so_far = |so_far: &[Run]| {
            Ok(ensure_known_good(
                so_far,
                &self.config,
                self.multi_node,
                self.allow_disturbed,
            )?)
        };
        measure::acquire_runs(
            &self.measure,
            self.runs,
            &self.trace_dir,
            &self.config,
            measure::Keep {
                samples: pools,
                series: false,
                timeline: None,
            },
            fit_so_far,
        )
    }

    /// Write the baseline (a diff and `--replace` to overwrite one).
    fn store(&self, b: &crate::baseline::Baseline) -> anyhow::Result<()> {
        let name = &self.name;
        let text = baseline::to_toml(b, &baseline::refresh_hint(name, &b.capture.command));
        let path = baseline::path_for(&self.baseline_dir, name);
        // Read back with check's reader before anything is written.
        baseline::verify_readable(&text, &path).map_err(|e| {
            GateError::usage(format!(
                "capture would write a baseline that check cannot read, so nothing was written: {e}; gate a smaller selection of metrics (benchmark, measure) or a number within 1e15 (docs/limits.md)"
            ))
        })?;
        match baseline::store(&path, &text, self.replace)? {
            StoreOutcome::Refused { diff } => {
                crate::gate_eprint!("{}", terminal_lines(&diff));
                return Err(GateError::usage(format!(
                "baseline '{}' already exists at '{}'; review the diff above and pass --replace to overwrite it",
                name,
                path.display()
            ))
            .into());
            }
            StoreOutcome::Replaced { diff } => {
                crate::gate_eprint!("{}", terminal_lines(&diff));
                crate::console::outln(format_args!(
                    "gate: replaced baseline '{}' ({})",
                    name,
                    crate::escape::terminal(&path.display().to_string())
                ));
            }
            StoreOutcome::Created => {
                crate::console::outln(format_args!(
                    "gate: wrote baseline '{}' ({})",
                    name,
                    crate::escape::terminal(&path.display().to_string())
                ));
            }
        }
        Ok(())
    }
}

/// A baseline is a promise of "known good": never build one from a run
/// that failed, was cut short, is too short to mean anything, or was
/// measured somewhere else than the others.
fn ensure_known_good(
    inputs: &[Run],
    config: &Config,
    multi_node: bool,
    allow_disturbed: bool,
) -> Result<(), GateError> {
    let Some(first) = inputs.first() else {
        return Ok(());
    };
    let first_env = Environment::from_fingerprint(&first.header.fingerprint);
    for (i, r) in inputs.iter().enumerate() {
        if let Some(f) = &r.ending.failure {
            return Err(f.error(format!(
                "run {}: {f}; a baseline must come from successful runs",
                i + 1
            )));
        }
        if let Some(invalid) = r.user_invalid.first() {
            return Err(GateError::usage(format!(
                "run {} ('{}'): {invalid}; a baseline must come from valid runs: fix the benchmark's settings (target QPS, duration) and capture again",
                i + 1,
                r.source
            )));
        }
        // Nodes of one run: the number of one node (rank 0 prints it) is
        // the run's.
        let elsewhere = |m: &str| multi_node && inputs.iter().any(|o| o.user.contains_key(m));
        unread_user_metrics(i, r, config, &elsewhere)?;
        let valid = gate::valid_samples(r, config);
        if valid < gate::MIN_STEADY_SAMPLES && !gate::harness_number_decides(r, config) {
            return Err(GateError::infra(format!(
                "run {} ('{}'): only {valid} valid steady samples (at least {} needed); measure longer (--duration) or shorten --warmup",
                i + 1,
                r.source,
                gate::MIN_STEADY_SAMPLES
            )));
        }
        if let Some(d) = gate::disturbance::detect(r, None).filter(|_| !allow_disturbed) {
            return Err(GateError::infra(format!(
                "run {} was DISTURBED, so it cannot be a baseline run: {}; a baseline measures the benchmark alone: capture again on a quiet GPU, or pass --allow-disturbed to keep it",
                i + 1,
                d.text()
            )));
        }
        let env = Environment::from_fingerprint(&r.header.fingerprint);
        let mism = first_env.mismatches(&env);
        if !mism.is_empty() {
            return Err(GateError::infra(format!(
                "run {} ('{}') was measured on another environment than run 1 ({}); one baseline, one environment",
                i + 1,
                r.source,
                mism.join("; ").replace("(baseline)", "(run 1)")
            )));
        }
    }
    Ok(())
}

/// A declared number a run did not give refuses the baseline: it would
/// gate wall time or nothing where the team declared its number decisive.
/// The reader's mistake is exit 2, the benchmark's ("did not produce its
/// number") 5; `optional = true` metrics may be absent.
fn unread_user_metrics(
    i: usize,
    r: &Run,
    config: &Config,
    elsewhere: &dyn Fn(&str) -> bool,
) -> Result<(), GateError> {
    let problems = || r.user_problems.iter().filter(|p| !elsewhere(&p.metric));
    for p in problems().filter(|p| p.optional) {
        crate::gate_eprintln!(
            "gate: warning: run {}: {} (optional in gate.toml: the baseline is written without it)",
            i + 1,
            crate::escape::terminal(&p.to_string())
        );
    }
    let Some(p) = problems().find(|p| !p.optional) else {
        return Ok(());
    };
    let fix = match p.fault {
        crate::metric_sources::Fault::Config => format!("fix {}", config.user_table_at(&p.metric)),
        crate::metric_sources::Fault::NotProduced => {
            "set optional = true in gate.toml if the number may be absent".to_string()
        }
        crate::metric_sources::Fault::Failed => "fix the benchmark".to_string(),
        crate::metric_sources::Fault::MetricsFile => "fix --metrics-file".to_string(),
    };
    let msg = format!(
        "run {} ('{}'): {p}; no baseline written: a baseline without the declared number would gate something else ({fix})",
        i + 1,
        r.source
    );
    Err(match p.fault {
        crate::metric_sources::Fault::Config | crate::metric_sources::Fault::MetricsFile => {
            GateError::usage(msg)
        }
        crate::metric_sources::Fault::NotProduced | crate::metric_sources::Fault::Failed => {
            GateError::BenchmarkFailed(msg)
        }
    })
}

/// A baseline that gates nothing is no gate: every metric of it is
/// disabled, neutral or missing.
fn ensure_something_gated(b: &baseline::Baseline) -> Result<(), GateError> {
    if b.metrics.values().any(|m| m.gated) {
        return Ok(());
    }
    Err(GateError::usage(format!(
        "baseline '{}' would gate nothing: every metric measured is disabled or neutral; declare the benchmark's number under [user_metrics] or enable a metric in gate.toml (no baseline written)",
        b.name
    )))
}

/// What was stored, for the terminal: each gated metric's value and how
/// much it moved between runs.
fn print_summary(b: &baseline::Baseline) {
    crate::console::outln(format_args!(
        "{} run(s){} on {}; gated metrics (mean over runs, spread between runs):",
        b.capture.runs,
        if b.capture.multi_node {
            format!(" of {} nodes", b.capture.sources.len())
        } else {
            String::new()
        },
        crate::escape::terminal(&crate::format::gpus_text(
            &b.environment.gpu_model,
            b.environment.gpu_count
        ))
    ));
    for (id, m) in b.metrics.iter().filter(|(_, m)| m.gated) {
        let o = gate::Observation::from_baseline(m, m.statistic);
        if let Some(o) = o {
            let shown = crate::metric_sources::shown_name(id, m.benchmark.as_deref());
            crate::console::outln(format_args!(
                "  {} ({}): {}{}",
                crate::escape::terminal(&shown),
                m.statistic.as_str(),
                crate::escape::terminal(&crate::format::value_with_unit(Some(o.value), &m.unit)),
                o.run_stdev()
                    .map(|s| format!(" (sd {} between runs)", crate::format::number(s)))
                    .unwrap_or_default()
            ));
        }
    }
}

/// The diff of two baseline texts for the terminal: each line through
/// escape::terminal (the old file may hold anything TOML allows).
fn terminal_lines(text: &str) -> String {
    text.lines()
        .map(|l| crate::escape::terminal(l) + "\n")
        .collect()
}
