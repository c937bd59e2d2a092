//! The history pipeline of `check` and `capture`: where the database is
//! (`HistoryPlan::resolve`), the noise prior read from it, drift and the
//! trend read before the reports (`before_check_report`), the run appended
//! after them (`finish_check`, `after_capture`). Built from
//! `HistorySettings`, the domain form of the history flags.
//!
//! Where the database is, first match wins: `--history URL` (or
//! `$GATE_HISTORY_URL`), then gate.toml `[history] url_env = "VAR"` (the URL
//! in that variable, a CI secret), then `[history] url`, then
//! `.gate/history.sqlite` when `[history]` is present without either. With
//! none of these, `check` and `capture` record nothing.
//!
//! `check` writes its verdict (stdout) and every report BEFORE it appends
//! the run, so nothing the store does (a stalled server, a locked table, a
//! full disk) can take them away. Each history step (open and read for
//! drift, then append) is bounded: `--history-timeout` (default
//! `limits::HISTORY_TIMEOUT`) on the server as statement and lock time-out,
//! and a little later on the client (`history::within`).
//!
//! A database that cannot be opened, read or written in time is a warning
//! on stderr and never changes the verdict or the exit code, unless
//! `--history-required` or `[history] required = true`: then the verdict
//! and reports are still written, and a pass becomes exit 3 (an
//! infrastructure problem; a regression stays 1, `exit_code::EXIT_CODE_ORDER`).
//! A malformed location is a configuration error (exit 2), found before
//! anything runs.

use super::record::{self, Provenance};
use super::{HistoryError, Location, MetricFilter, Query, RunKind, RunRecord};
use crate::baseline::{Baseline, Environment};
use crate::config::history::HistoryConfig;
use crate::config::Config;
use crate::error::GateError;
use crate::gate::{CheckReport, RunVerdict};
use crate::summary::Run;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The history flags of `check` and `capture`, as the pipeline needs them.
#[derive(Debug, Clone, Default)]
pub struct HistorySettings {
    /// `--history URL` (or `$GATE_HISTORY_URL`).
    pub url: Option<String>,
    /// `--no-history`: record nothing.
    pub off: bool,
    /// `--history-required`: a store that fails fails the command (exit 3).
    pub required: bool,
    /// `--branch`: recorded with the run.
    pub branch: Option<String>,
    /// `--history-timeout`: the longest one step may take.
    pub timeout: Duration,
    /// The commit a check records with its run (`$CI_COMMIT_SHA`,
    /// `$GITHUB_SHA`, or git's HEAD).
    pub commit: Option<String>,
}

/// The database to use, if any; an error only for a malformed setting.
pub fn resolve(
    flag: Option<&str>,
    config: Option<&HistoryConfig>,
    required: bool,
) -> Result<Option<Location>, GateError> {
    if let Some(url) = flag.filter(|u| !u.trim().is_empty()) {
        return Location::parse(url).map(Some).map_err(to_gate);
    }
    let Some(cfg) = config else {
        return Ok(None);
    };
    if let Some(var) = &cfg.url_env {
        match std::env::var(var) {
            Ok(url) if !url.trim().is_empty() => {
                return Location::parse(&url).map(Some).map_err(to_gate)
            }
            _ => {
                // E.g. a fork's pipeline, which gets no secrets.
                let msg = format!(
                    "gate.toml [history] url_env = \"{}\" but that variable is not set",
                    crate::history::record::clean(var)
                );
                if required {
                    return Err(GateError::infra(format!(
                        "{msg}; set it (a CI secret) or drop --history-required"
                    )));
                }
                crate::gate_eprintln!(
                    "gate: warning: {msg}; this run is not recorded in the history"
                );
                return Ok(None);
            }
        }
    }
    let url = cfg
        .url
        .clone()
        .unwrap_or_else(|| super::DEFAULT_SQLITE_PATH.to_string());
    Location::parse(&url).map(Some).map_err(to_gate)
}

/// Healthy checks read back for the noise model's history prior.
const PRIOR_RUNS: usize = 50;

/// Each aggregate metric's `(variance, n - 1)` over the values of the
/// checks that passed: the history prior of the verdict's moderated
/// variance (`noise::moderated`).
fn spread_of_passes(runs: &[RunRecord]) -> BTreeMap<String, (f64, f64)> {
    let mut out = BTreeMap::new();
    let mut values: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.verdict == RunVerdict::Pass) {
        for m in &run.metrics {
            if let Some(v) = m.value.filter(|v| v.is_finite()) {
                values.entry(m.metric.as_str()).or_default().push(v);
            }
        }
    }
    for (metric, v) in values {
        if v.len() < 2 {
            continue;
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        out.insert(metric.to_string(), (var, n - 1.0));
    }
    out
}

pub(crate) fn to_gate(e: HistoryError) -> GateError {
    match e {
        HistoryError::BadLocation(m) => GateError::usage(m),
        other => GateError::infra(other.to_string()),
    }
}

/// `--branch`, else the CI's variables (the PR/MR source branch first),
/// else `git rev-parse --abbrev-ref HEAD` (None on a detached HEAD).
fn detect_branch(flag: Option<&str>) -> Option<String> {
    let clean = |s: String| {
        let s = s.trim().to_string();
        (!s.is_empty()).then_some(s)
    };
    if let Some(b) = flag.and_then(|f| clean(f.to_string())) {
        return Some(b);
    }
    for var in [
        "GITHUB_HEAD_REF",
        "GITHUB_REF_NAME",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
        "CI_COMMIT_REF_NAME",
    ] {
        if let Some(b) = std::env::var(var).ok().and_then(clean) {
            return Some(b);
        }
    }
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--abbrev-ref", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout)
        .ok()
        .and_then(clean)
        .filter(|b| b != "HEAD")
}

/// The branch a pull/merge request targets, from the CI's variables.
fn target_branch() -> Option<String> {
    ["GITHUB_BASE_REF", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok())
        .map(|b| b.trim().to_string())
        .filter(|b| !b.is_empty())
}

fn provenance(
    settings: &HistorySettings,
    runs: &[Run],
    cli_tags: &BTreeMap<String, String>,
    commit: Option<String>,
) -> Provenance {
    // The runs' tags (first run wins), then --tag on this command line.
    let mut tags = BTreeMap::new();
    for t in runs.iter().rev() {
        tags.extend(t.header.tags.clone());
    }
    tags.extend(cli_tags.clone());
    Provenance {
        recorded_at: super::now_rfc3339(),
        commit,
        branch: detect_branch(settings.branch.as_deref()),
        tags,
        environment: runs
            .first()
            .map(|t| Environment::from_fingerprint(&t.header.fingerprint))
            .unwrap_or_default(),
        source: runs
            .iter()
            .map(|r| r.source.clone())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Where `check` or `capture` records its run in the history, whether that
/// is required, and its time-out: resolved once before anything runs (a
/// malformed location is exit 2 at once), a plan like `CheckPlan`. (The
/// recorder is the recording engine, `record.rs`; the store is the
/// database behind `HistoryStore`.)
#[derive(Clone)]
pub(crate) struct HistoryPlan {
    location: Location,
    required: bool,
    timeout: Duration,
}

impl HistoryPlan {
    /// None: nothing is recorded (no location, or `--no-history`).
    pub fn resolve(
        settings: &HistorySettings,
        config: &Config,
    ) -> Result<Option<HistoryPlan>, GateError> {
        if settings.off {
            return Ok(None);
        }
        let cfg = config.file.history.as_ref();
        let required = settings.required || cfg.is_some_and(|c| c.required);
        let Some(location) = resolve(settings.url.as_deref(), cfg, required)? else {
            return Ok(None);
        };
        Ok(Some(HistoryPlan {
            location,
            required,
            timeout: settings.timeout,
        }))
    }

    /// The files of the store (an SQLite database and its journals): inputs
    /// of the command, which no output may replace.
    pub fn files(&self) -> Vec<PathBuf> {
        self.location.files()
    }

    /// One bounded step against the store (see the module doc).
    fn step<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T, HistoryError> + Send + 'static,
    ) -> Result<T, HistoryError> {
        super::within(
            &self.location,
            super::step_deadline(&self.location, self.timeout),
            work,
        )
    }

    /// The error of a store this process gave up on earlier (`open`).
    fn skipped(&self) -> Option<HistoryError> {
        given_up(&self.location).map(|message| HistoryError::Unavailable {
            location: self.location.display(),
            message: format!("{message} (earlier in this run; not tried again)"),
        })
    }

    /// Open the store, once per process: after a store failed (a dead or
    /// stalled server, a locked file), later workloads of a suite get the
    /// same error at once instead of paying the time-out again each.
    fn open(&self) -> Result<Box<dyn super::HistoryStore>, HistoryError> {
        if let Some(e) = self.skipped() {
            return Err(e);
        }
        let (location, timeout) = (self.location.clone(), self.timeout);
        let opened = self.step(move || super::open_bounded(&location, true, timeout));
        if let Err(e) = &opened {
            give_up(&self.location, e);
        }
        opened
    }

    /// A failed step: a warning, or (required) the error for the caller to
    /// report after the verdict is out.
    fn failed(&self, e: HistoryError) -> Result<(), GateError> {
        if let HistoryError::BadLocation(m) = e {
            return Err(GateError::usage(m));
        }
        if self.required {
            return Err(GateError::infra(format!(
                "{e}; the run was not recorded (--history-required)"
            )));
        }
        // Interrupted is exit 3 everywhere, required or not.
        if e.to_string().contains(super::INTERRUPTED) {
            return Err(GateError::infra(format!("{e}; the run was not recorded")));
        }
        crate::gate_eprintln!(
            "gate: warning: {}; the run was NOT recorded in the history (the verdict and reports stand; pass --history-required to make this exit 3)",
            crate::escape::terminal(&e.to_string())
        );
        Ok(())
    }
}

/// Stores this process gave up on, with why: each is tried once per run.
static GIVEN_UP: std::sync::Mutex<Vec<(Location, String)>> = std::sync::Mutex::new(Vec::new());

fn given_up(location: &Location) -> Option<String> {
    let list = GIVEN_UP.lock().unwrap_or_else(|p| p.into_inner());
    list.iter()
        .find(|(l, _)| l == location)
        .map(|(_, m)| m.clone())
}

fn give_up(location: &Location, e: &HistoryError) {
    if let HistoryError::Unavailable { message, .. } = e {
        let mut list = GIVEN_UP.lock().unwrap_or_else(|p| p.into_inner());
        if !list.iter().any(|(l, _)| l == location) {
            list.push((location.clone(), message.clone()));
        }
    }
}

/// One check's history store, opened once (bounded) after the run is
/// measured: the noise prior, drift and the trend are read from it before
/// the reports, and the run is appended after them (`finish_check`).
pub(crate) struct CheckHistory {
    plan: HistoryPlan,
    store: Option<Box<dyn super::HistoryStore>>,
    /// The first step that failed: reported once the verdict is out.
    failure: Option<HistoryError>,
}

impl CheckHistory {
    pub fn open(plan: HistoryPlan) -> CheckHistory {
        let (store, failure) = match plan.open() {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(e)),
        };
        CheckHistory {
            plan,
            store,
            failure,
        }
    }

    /// One bounded read; None once a step has failed (the store is then
    /// given up: a stalled server is not asked again).
    fn read<T: Send + 'static>(
        &mut self,
        work: impl FnOnce(&mut dyn super::HistoryStore) -> Result<T, HistoryError> + Send + 'static,
    ) -> Option<T> {
        let mut store = self.store.take()?;
        match self.plan.step(move || {
            let t = work(store.as_mut())?;
            Ok((store, t))
        }) {
            Ok((store, t)) => {
                self.store = Some(store);
                Some(t)
            }
            Err(e) => {
                give_up(&self.plan.location, &e);
                self.failure.get_or_insert(e);
                None
            }
        }
    }

    /// The history prior (`spread_of_passes`) from the checks of this version
    /// of the baseline. Empty without them, or when they cannot be read (it
    /// is only a prior: the check goes on, and `finish_check` reports the
    /// store's error).
    pub(crate) fn healthy_spread(&mut self, baseline: &Baseline) -> BTreeMap<String, (f64, f64)> {
        let query = Query {
            baseline: Some(baseline.name.clone()),
            kind: Some(RunKind::Check),
            baseline_created: Some(baseline.created.clone()),
            metrics: MetricFilter::All,
            limit: Some(PRIOR_RUNS),
            ..Query::default()
        };
        self.read(move |s| s.runs(&query))
            .map(|runs| spread_of_passes(&runs))
            .unwrap_or_default()
    }
}

/// `check`'s run, between its two history steps: read before the reports
/// are rendered, appended after they are written.
pub(crate) struct PendingCheck {
    history: CheckHistory,
    run: RunRecord,
}

/// `check`'s first step: judge drift over the recent runs (which may add
/// findings to `report`) and build the trend. Bounded; a failure is kept
/// for `finish_check`, never stops the verdict.
pub(crate) fn before_check_report(
    mut history: CheckHistory,
    settings: &HistorySettings,
    config: &Config,
    baseline: &Baseline,
    runs: &[Run],
    cli_tags: &BTreeMap<String, String>,
    report: &mut CheckReport,
) -> PendingCheck {
    let cfg = config.file.history.as_ref();
    let drift_cfg = cfg.map(|c| c.drift.clone()).unwrap_or_default();
    let prov = provenance(settings, runs, cli_tags, settings.commit.clone());
    let mut run = record::from_check(report, baseline, prov);
    // Reads, in one bounded step: the recent runs on this branch for drift,
    // and the trend (the last checks of this baseline on the target branch,
    // a pull request's base, else on this run's branch).
    let drift_query = (drift_cfg.enabled && run.branch.is_some()).then(|| Query {
        baseline: Some(run.baseline.clone()),
        branch: run.branch.clone(),
        kind: Some(RunKind::Check),
        baseline_created: Some(run.baseline_created.clone()),
        metrics: MetricFilter::Gated,
        limit: Some(drift_cfg.window.saturating_sub(1)),
        ..Query::default()
    });
    let target = target_branch().or_else(|| run.branch.clone());
    let trend_query = Query {
        baseline: Some(run.baseline.clone()),
        branch: target.clone(),
        kind: Some(RunKind::Check),
        metrics: MetricFilter::Gated,
        limit: Some(super::trend::TREND_RUNS),
        ..Query::default()
    };
    let read = history.read(move |store| {
        let previous = match &drift_query {
            Some(q) => Some(store.runs(q)?),
            None => None,
        };
        Ok((previous, store.runs(&trend_query)?))
    });
    if let Some((previous, earlier)) = read {
        if let Some(previous) = previous {
            run.drift = record::find_drift(&run, &previous, &drift_cfg);
            record::apply_drift(report, &run.drift);
            run.verdict = report.verdict().into();
            run.exit_code = report.exit_code();
        }
        report.trend = Some(super::trend::build(report, &earlier, target, &run.drift));
    }
    PendingCheck { history, run }
}

/// `check`'s second step, after the verdict and reports are written:
/// append the run. Ok, or a warning; an error only with `required`.
pub(crate) fn finish_check(pending: PendingCheck) -> Result<(), GateError> {
    let PendingCheck { mut history, run } = pending;
    let plan = &history.plan;
    let appended = match (history.failure.take(), history.store.take()) {
        (Some(e), _) => Err(e),
        (None, Some(mut store)) => match plan.skipped() {
            Some(e) => Err(e),
            None => plan.step(move || store.append(&run)),
        },
        (None, None) => return Ok(()),
    };
    if let Err(e) = &appended {
        give_up(&plan.location, e);
    }
    match appended {
        Ok(id) => {
            crate::gate_eprintln!(
                "gate: recorded run {id} in {}",
                crate::escape::terminal(&plan.location.display())
            );
            Ok(())
        }
        Err(e) => plan.failed(e),
    }
}

/// `capture`'s hook, after the baseline is written: append it as a
/// `capture` run (trend pages mark it as a refresh). Bounded like `check`.
pub(crate) fn after_capture(
    plan: &HistoryPlan,
    settings: &HistorySettings,
    baseline: &Baseline,
    runs: &[Run],
) -> Result<(), GateError> {
    let prov = provenance(settings, runs, &baseline.tags, baseline.commit.clone());
    let run = record::from_capture(baseline, prov);
    let appended = plan
        .open()
        .and_then(|mut store| plan.step(move || store.append(&run)));
    match appended {
        Ok(id) => {
            crate::gate_eprintln!(
                "gate: recorded capture {id} in {}",
                crate::escape::terminal(&plan.location.display())
            );
            Ok(())
        }
        Err(e) => plan.failed(e),
    }
}
