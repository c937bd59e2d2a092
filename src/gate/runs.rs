//! The run-level checks made before any metric is judged: a failed
//! benchmark (the run's `Ending`, derived with it), another environment or benchmark than the
//! baseline's (`comparable`), too few valid samples, the user metrics'
//! problems; and `RunLevel`, the run verdict as it is assembled (the
//! strongest reason wins) with its exit code.

use super::comparable;
use super::report::{GpuIdentity, RunInfo, RunVerdict};
use super::CheckInput;
use crate::baseline::Environment;
use crate::config::Config;
use crate::exit_code;
use crate::summary::Run;

/// Fewer valid steady samples than this give no verdict: 20 samples at
/// 100 ms is 2 s, less than two batch-means batches, too little to tell a
/// regression from a pause.
pub const MIN_STEADY_SAMPLES: usize = 20;

/// Valid steady samples: the largest count any gated sampled metric has
/// (a GPM glitch sample counts as missing, not as a sample); the steady
/// sample count when no gated metric is sampled (host-only runs).
pub fn valid_samples(r: &Run, config: &Config) -> usize {
    let s = &r.summary;
    let gated = |id: &&String| config.policy(id, None).map(|p| p.gated).unwrap_or(false);
    s.gpu_aggregate
        .iter()
        .chain(s.host.iter())
        .filter(|(id, _)| gated(id))
        .map(|(_, m)| m.n)
        .max()
        .unwrap_or(s.steady_samples)
}

/// The exit code of a run verdict under gate.toml: `[verdict]
/// inconclusive = "pass"` makes an inconclusive run green (still reported
/// as inconclusive).
pub fn exit_code_of(verdict: RunVerdict, config: &Config) -> i32 {
    verdict.exit_code_under(config.file.verdict.inconclusive)
}

/// The run verdict as it is assembled: the strongest reason wins.
#[derive(Default)]
pub(super) struct RunLevel {
    pub(super) verdict: RunVerdict,
    pub(super) reasons: Vec<String>,
    pub(super) warnings: Vec<String>,
    /// A run failed by the benchmark's own fault (`RunFailure::by_benchmark`).
    pub(super) benchmark_failed: bool,
    /// A reader of gate.toml asked for what the file does not have, or the
    /// metrics file is over its limit: the input is wrong (exit 2).
    pub(super) input_error: bool,
    /// The runs were too short for the counters, but the benchmark's own
    /// number is there: it is judged, the counters are context.
    pub(super) counters_unmeasured: bool,
}

impl RunLevel {
    /// A failed benchmark decides the exit code over every other reason:
    /// retrying it (exit 3) would only fail again.
    pub(super) fn exit_code(&self, config: &Config) -> i32 {
        if self.input_error {
            exit_code::USAGE
        } else if self.benchmark_failed {
            exit_code::BENCHMARK_FAILED
        } else {
            exit_code_of(self.verdict, config)
        }
    }

    pub(super) fn raise(&mut self, to: RunVerdict, reason: String) {
        self.verdict = self.verdict.max(to);
        self.reasons.push(reason);
    }
}

/// Another benchmark than the baseline's (`comparable`): not comparable,
/// or warned about when allowed; other arguments or tags: a warning, or
/// not comparable with `[compare] arguments = "refuse"`.
pub(super) fn comparable(
    input: &CheckInput,
    header: &crate::trace::Header,
    who: &str,
    run: &mut RunLevel,
) {
    let cfg = &input.config.file.compare;
    let mut tags = header.tags.clone();
    tags.extend(input.cli_tags.clone());
    tags.retain(|k, _| !cfg.vary.contains(k));
    let d = comparable::differences(
        &comparable::without_varying(&input.baseline.capture.command, &cfg.vary),
        &input.baseline.tags,
        &comparable::without_varying(&header.command, &cfg.vary),
        &tags,
        &cfg.tags,
    );
    let allowed = input.allow_command_change || cfg.allow_command_change;
    if !d.identity.is_empty() {
        let text = format!(
            "{who}: not the baseline's benchmark: {}",
            d.identity.join("; ")
        );
        if allowed {
            run.warnings.push(format!(
                "{text} (judged anyway: allowed by [compare] allow_command_change)"
            ));
        } else {
            run.raise(RunVerdict::Invalid, format!(
                "{text}; judge a run of the same benchmark, capture a baseline for this one, or set [compare] allow_command_change = true in gate.toml"
            ));
        }
    }
    if !d.details.is_empty() {
        let text = format!(
            "{who}: differs from the baseline's run: {} (what differs by design, such as a seed, goes in [compare] vary in gate.toml)",
            d.details.join("; ")
        );
        if cfg.arguments == crate::config::verdict::ArgumentsPolicy::Refuse && !allowed {
            run.raise(
                RunVerdict::Invalid,
                format!(
                "{text}; compare like with like, or set [compare] arguments = \"warn\" in gate.toml"
            ),
            );
        } else {
            run.warnings.push(text);
        }
    }
}

/// Checked before any metric: a failed benchmark, another environment,
/// too few samples. One `RunInfo` per run (or node).
pub(super) fn check_runs(input: &CheckInput, run: &mut RunLevel) -> Vec<RunInfo> {
    let mut runs_info = Vec::new();
    for (i, r) in input.runs.iter().enumerate() {
        let env = Environment::from_fingerprint(&r.header.fingerprint);
        let valid = valid_samples(r, input.config);
        let who = if input.multi_node {
            format!("node {i}")
        } else if input.runs.len() > 1 {
            format!("run {}", i + 1)
        } else {
            "this run".to_string()
        };
        let failure = r.ending.failure.as_ref();
        // Cut short by gate or the runner (a signal, no steady sample):
        // the number the benchmark never got to print is not its failure
        // (exit 3, not 5: issue 41.9).
        let cut_short = failure.as_ref().is_some_and(|f| !f.by_benchmark);
        if let Some(f) = failure {
            run.benchmark_failed |= f.by_benchmark;
            run.raise(
                RunVerdict::Error,
                format!("{who}: {f}; a failed benchmark is never a pass"),
            );
        }
        let mism = input.baseline.environment.mismatches(&env);
        if !mism.is_empty() {
            let text = format!(
                "{who}: environment differs from the baseline: {}",
                mism.join("; ")
            );
            if input.allow_env_mismatch {
                run.warnings
                    .push(format!("{text} (allowed by --allow-env-mismatch)"));
            } else {
                run.raise(RunVerdict::Invalid, format!(
                    "{text}; compare like with like, re-capture on this hardware, or pass --allow-env-mismatch"
                ));
            }
        }
        comparable(input, &r.header, &who, run);
        // The benchmark's own verdict on itself (MLPerf LoadGen's `Result
        // is : INVALID`: latency or early-stopping constraints not met) is
        // a gate of its own: the run fails as a regression would.
        for invalid in &r.user_invalid {
            run.raise(
                RunVerdict::Regression,
                format!("{who}: {invalid}; the benchmark's own result check failed"),
            );
        }
        // Nodes of one run: a number one node printed (rank 0) is the run's.
        let elsewhere =
            |m: &str| input.multi_node && input.runs.iter().any(|o| o.user.contains_key(m));
        let failed_before = run.benchmark_failed;
        user_problems(r, input.config, &who, &elsewhere, run);
        if cut_short {
            run.benchmark_failed = failed_before;
        }
        if valid < MIN_STEADY_SAMPLES {
            if harness_number_decides(r, input.config) {
                run.counters_unmeasured = true;
                run.warnings.push(format!(
                    "{who}: only {valid} valid steady samples (at least {MIN_STEADY_SAMPLES} needed for the counters): judged on the benchmark's own number, the counters are unmeasured context"
                ));
            } else {
                run.raise(RunVerdict::Unmeasured, format!(
                    "{who}: only {valid} valid steady samples (at least {MIN_STEADY_SAMPLES} needed); measure longer (--duration) or shorten --warmup"
                ));
            }
        }
        runs_info.push(RunInfo {
            source: r.source.clone(),
            command: r.header.command.join(" "),
            node: input.multi_node.then_some(i),
            gpu_model: env.gpu_model,
            gpu_count: env.gpu_count,
            steady_samples: r.summary.steady_samples,
            valid_samples: valid,
            total_samples: r.summary.total_samples,
            wall_time_s: r.summary.wall_time_s,
            startup_s: r.summary.startup_s,
            teardown_s: r.summary.teardown_s,
            closed_by_until: r.summary.closed_by_until,
            exit_code: r.ending.exit_code,
            signal: r.ending.signal,
            truncated: r.ending.truncated,
            gpus: r
                .summary
                .gpus
                .iter()
                .map(|g| GpuIdentity {
                    index: g.index,
                    uuid: g.uuid.clone(),
                    model: g.name.clone(),
                })
                .collect(),
            series: r.series.clone(),
        });
    }
    runs_info
}

/// A declared number the run did not give fails it: the reader's mistake
/// (exit 2) or the benchmark's (exit 5, "did not produce its number").
/// An `optional = true` metric is only warned about.
pub(super) fn user_problems(
    r: &Run,
    config: &Config,
    who: &str,
    elsewhere: &dyn Fn(&str) -> bool,
    run: &mut RunLevel,
) {
    if let Some(w) = unread_metrics_file(r, config) {
        run.warnings.push(format!("{who}: {w}"));
    }
    for p in r.user_problems.iter().filter(|p| !elsewhere(&p.metric)) {
        if p.optional {
            run.warnings.push(format!(
                "{who}: {p} (optional in gate.toml: judged without it)"
            ));
            continue;
        }
        match p.fault {
            crate::metric_sources::Fault::Config => {
                run.input_error = true;
                run.raise(
                    RunVerdict::Error,
                    format!("{who}: {p}; fix {}", config.user_table_at(&p.metric)),
                );
            }
            crate::metric_sources::Fault::MetricsFile => {
                run.input_error = true;
                run.raise(RunVerdict::Error, format!("{who}: {p}"));
            }
            crate::metric_sources::Fault::Failed => {
                run.benchmark_failed = true;
                run.raise(RunVerdict::Error, format!("{who}: {p}"));
            }
            crate::metric_sources::Fault::NotProduced => {
                run.benchmark_failed = true;
                run.raise(
                    RunVerdict::Error,
                    format!("{who}: {p}; a run without its declared number is never a pass (set optional = true in gate.toml if it may be absent)"),
                );
            }
        }
    }
}

/// A run recorded with `--metrics-file` that gave nothing (absent,
/// stale...) while no `[user_metrics]` table reads it: said, never
/// ignored in silence (`measure::warn_unread_metrics_file` says the rest
/// before a live run).
fn unread_metrics_file(r: &Run, config: &Config) -> Option<String> {
    use crate::config::user_metrics::UserSource;
    let problem = r.ending.metrics_file_problem.as_ref()?;
    let read = (config.file.user_metrics.values()).any(|d| d.source == UserSource::MetricsFile);
    (!read).then(|| {
        format!(
            "{}; no [user_metrics] table of gate.toml reads --metrics-file (source = \"metrics_file\"), so nothing of it was to be judged",
            problem
        )
    })
}

/// The benchmark's own number decides this run: a gated user metric was
/// read. Its value does not depend on how many samples the counters got.
pub fn harness_number_decides(r: &Run, config: &Config) -> bool {
    r.user
        .keys()
        .any(|id| config.policy(id, None).is_some_and(|p| p.gated))
}
