//! `gate watch`'s window engine: trace records in, alerts out. Pure (no
//! clock, no NVML, no terminal): the live watch feeds it the records the
//! recording engine writes, `gate watch --replay` feeds it recorded traces
//! record by record, and both get the same alerts for the same records.
//!
//! Each enabled rule at or above the watch's minimum severity is evaluated
//! on a sliding window: the last `for` of samples (the rule's `for = "5m"`,
//! else the watch's default window). Samples marked warm-up (`--warmup`,
//! `--warmup-until` when the trace was recorded) never enter a window, as
//! they never enter `check`'s steady window. `check` also cuts the idle
//! teardown tail (at most 3 s, `trace::validity`), which a live watch
//! cannot tell from an idle stretch until the process has exited: samples
//! join the windows `HOLD_BACK_MS` after they arrive, so when the target
//! exits its last 3 s are never evaluated, and alerts come that much
//! later. A rule alerts ("firing")
//! when its window is full and its condition holds, and again ("resolved",
//! with each evidence value when it fired and now) when it stops holding.
//! Windows are evaluated every `eval_every` of trace time, not every sample.
//!
//! Windows are incremental (`window`): each sample is added once and
//! dropped once, and an evaluation reads what the window keeps. The
//! straightforward way (summarise the window's samples as `check`
//! summarises a run, `Mode::Recompute`) is kept as the reference the
//! incremental engine is tested against.
//!
//! Besides the rules, two conditions always alert, at once: an Xid event
//! (79: the GPU fell off the bus) and an NVML error event (e.g. GPU lost);
//! they are recorded, never fatal.
//!
//! Memory is bounded: samples older than the longest window are dropped,
//! so a watch that runs for days holds at most one window of samples.

pub mod replay;
pub mod window;

#[cfg(test)]
mod engines_tests;

use crate::analysis::feature::Feature;
use crate::diagnose::rules::{with_unit, Rule};
use crate::diagnose::{RuleSet, Severity};
use crate::stats::MetricSource;
use crate::trace::{EventKind, EventRecord, Header, ProcessesRecord, Record, Trace};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;
use window::{FeatureColumns, Ring, Window, WindowView};

/// Where an alert stands: a closed set, written `firing` / `resolved`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AlertState {
    /// The rule's condition holds over a full window.
    Firing,
    /// It held before and no longer does.
    Resolved,
}

impl AlertState {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertState::Firing => "firing",
            AlertState::Resolved => "resolved",
        }
    }
}

/// One alert line (JSON on stdout or a file; a human line on stderr).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Alert {
    pub state: AlertState,
    /// Rule name, or "xid" / "nvml_error" for the built-in alerts.
    pub rule: String,
    pub severity: Severity,
    pub title: String,
    /// Trace time of the evaluation, ms since the watch started.
    pub(crate) t_ms: f64,
    /// The window the rule was evaluated over.
    pub window_s: f64,
    pub(crate) window_start_ms: f64,
    pub(crate) window_end_ms: f64,
    /// Firing: "metric = value" lines, as in `gate report`. Resolved:
    /// "metric then -> now", the value when it fired and now.
    pub evidence: Vec<String>,
    pub explanation: String,
    /// Resolved: when the alert fired (trace time, ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fired_at_ms: Option<f64>,
    /// Processes on the GPUs during the window (NVML's lists), the
    /// target's and others', with their last known SM share.
    pub pids: Vec<PidShare>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PidShare {
    pub pid: u32,
    pub name: String,
    pub gpu: u32,
    pub in_target: bool,
    pub(crate) sm_share_pct: Option<f64>,
    pub(crate) gpu_mem_mib: Option<f64>,
}

impl Alert {
    /// The human line for stderr (every string from the trace escaped for
    /// a terminal).
    pub fn human(&self) -> String {
        let term = crate::escape::terminal;
        let pids = self
            .pids
            .iter()
            .map(|p| {
                format!(
                    "{} {} (GPU {}{}{})",
                    p.pid,
                    term(&p.name),
                    p.gpu,
                    if p.in_target { ", target" } else { "" },
                    p.sm_share_pct
                        .map(|s| format!(", SM {s:.0} %"))
                        .unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "gate watch: {} {} [{}] at {:.1} s{} over {} s: {}{}{}",
            self.state.as_str().to_uppercase(),
            self.rule,
            self.severity.as_str(),
            self.t_ms / 1000.0,
            self.fired_at_ms
                .map(|f| format!(" (fired at {:.1} s)", f / 1000.0))
                .unwrap_or_default(),
            crate::format::number(self.window_s),
            term(&self.title),
            if self.evidence.is_empty() {
                String::new()
            } else {
                format!("; {}", term(&self.evidence.join("; ")))
            },
            if pids.is_empty() {
                String::new()
            } else {
                format!("; PIDs: {pids}")
            }
        )
    }
}

/// How a watch evaluates: windows, cadence, and which alerts it raises.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct WatchPlan {
    /// Window of rules without a `for`.
    pub(crate) default_window: Duration,
    /// Trace time between evaluations.
    pub(crate) eval_every: Duration,
    /// Rules (and built-in alerts) below this severity are not evaluated.
    pub(crate) min_severity: Severity,
}

/// How a window's statistics are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// From what each window keeps, updated sample by sample (`window`).
    Incremental,
    /// By summarising the window's samples at each evaluation, exactly as
    /// `check` summarises a run: the reference, for tests (only they
    /// choose it).
    #[cfg_attr(not(test), allow(dead_code))]
    Recompute,
}

/// The rules that share one window length.
struct Group {
    window: Window,
    rules: RuleSet,
    /// The window became full at least once.
    filled: bool,
}

/// A firing alert and its evidence values when it fired.
struct Firing {
    alert: Alert,
    evidence: Vec<Option<f64>>,
}

/// Samples join the windows this long after they arrive: the longest
/// teardown tail `check` cuts (`trace::validity`, 3 s), so the tail of a
/// target that exits is never evaluated. The price: alerts 3 s later.
pub const HOLD_BACK_MS: f64 = 3_000.0;

/// Longer than this without a sample (a restart, a lost GPU) starts the
/// windows over: a window is never filled across it.
const MAX_GAP_MS: f64 = 60_000.0;

/// The engine. Feed it records with `push`; it returns the alerts they cause.
pub(crate) struct WindowEngine {
    header: Header,
    plan: WatchPlan,
    mode: Mode,
    groups: Vec<Group>,
    eval_every_ms: f64,
    longest_ms: f64,
    /// Where the current recording's t = 0 lies on the watch's clock.
    offset_ms: f64,
    /// Start of the data without a gap (a window is full only after it).
    since_ms: Option<f64>,
    /// The longest stretch of samples without a gap seen, ms.
    longest_span_ms: f64,
    steady_samples: u64,
    ring: Ring,
    /// The next sample (ring seq) to join the windows (`HOLD_BACK_MS`).
    joined: u64,
    /// Who was on each GPU: the lists within the longest window, and the
    /// last one before it.
    procs: VecDeque<ProcessesRecord>,
    events: VecDeque<EventRecord>,
    last_eval_ms: f64,
    firing: BTreeMap<String, Firing>,
    /// The frameworks the recorder's `framework` events named since the
    /// watch started (`features::frameworks_of`).
    frameworks_found: BTreeSet<&'static str>,
}

impl WindowEngine {
    pub fn new(header: Header, rules: RuleSet, plan: WatchPlan) -> Self {
        Self::with_mode(header, rules, plan, Mode::Incremental)
    }

    pub(crate) fn with_mode(header: Header, rules: RuleSet, plan: WatchPlan, mode: Mode) -> Self {
        let ring = Ring::new(
            header.fingerprint.gpus.len(),
            header.gpu_columns.len(),
            header.host_columns.len(),
        );
        let columns = FeatureColumns::of(&header);
        let mut by_len: BTreeMap<Duration, Vec<String>> = BTreeMap::new();
        for r in rules
            .rules()
            .iter()
            .filter(|r| r.enabled && r.severity >= plan.min_severity)
        {
            by_len
                .entry(r.hold_for.unwrap_or(plan.default_window))
                .or_default()
                .push(r.name.clone());
        }
        let groups: Vec<Group> = by_len
            .into_iter()
            .map(|(len, names)| Group {
                window: Window::new(len.as_secs_f64() * 1000.0, columns.clone(), ring.end()),
                rules: rules.only(|r| names.contains(&r.name)),
                filled: false,
            })
            .collect();
        let longest_ms = groups
            .iter()
            .map(|g| g.window.len_ms)
            .fold(plan.default_window.as_secs_f64() * 1000.0, f64::max);
        WindowEngine {
            header,
            plan,
            mode,
            groups,
            eval_every_ms: plan.eval_every.as_secs_f64() * 1000.0,
            longest_ms,
            offset_ms: 0.0,
            since_ms: None,
            longest_span_ms: 0.0,
            steady_samples: 0,
            joined: ring.end(),
            ring,
            procs: VecDeque::new(),
            events: VecDeque::new(),
            last_eval_ms: f64::NEG_INFINITY,
            firing: BTreeMap::new(),
            frameworks_found: BTreeSet::new(),
        }
    }

    /// A new recording (a rotated segment, the next replayed trace) starts
    /// `offset_ms` after the watch did. Its header must have the same
    /// columns and GPUs; a different one restarts the windows.
    pub(crate) fn start_segment(&mut self, header: &Header, offset_ms: f64) {
        let same = header.gpu_columns == self.header.gpu_columns
            && header.host_columns == self.header.host_columns
            && header.fingerprint.gpus.len() == self.header.fingerprint.gpus.len();
        if !same {
            self.header = header.clone();
            self.ring.clear_to(
                header.fingerprint.gpus.len(),
                header.gpu_columns.len(),
                header.host_columns.len(),
            );
            let columns = FeatureColumns::of(header);
            self.joined = self.ring.end();
            for g in &mut self.groups {
                g.window.reset(columns.clone(), self.joined);
            }
            self.since_ms = None;
        }
        self.offset_ms = offset_ms;
    }

    /// Samples held now (bounded by the longest window and the hold-back).
    #[cfg(test)]
    pub fn held_samples(&self) -> usize {
        self.ring.len()
    }

    /// Samples that entered the windows (warm-up excluded).
    pub(crate) fn steady_samples(&self) -> u64 {
        self.steady_samples
    }

    /// The longest stretch of samples without a gap that joined the
    /// windows so far, in ms (warm-up and the hold-back excluded): a window
    /// this long (plus one sampling interval) or shorter fills.
    pub(crate) fn longest_span_ms(&self) -> f64 {
        self.longest_span_ms
    }

    /// Window lengths that never filled, with their rules.
    pub(crate) fn unfilled(&self) -> Vec<(Duration, Vec<String>)> {
        self.groups
            .iter()
            .filter(|g| !g.filled)
            .map(|g| {
                (
                    Duration::from_secs_f64(g.window.len_ms / 1000.0),
                    g.rules.rules().iter().map(|r| r.name.clone()).collect(),
                )
            })
            .collect()
    }

    pub fn push(&mut self, record: &Record) -> Vec<Alert> {
        match record {
            Record::Sample(s) => {
                let ncols = self.header.gpu_columns.len();
                if s.g.len() != self.header.fingerprint.gpus.len()
                    || s.g.iter().any(|g| g.len() != ncols)
                    || s.h.len() != self.header.host_columns.len()
                {
                    return Vec::new(); // not this header's shape: skip
                }
                let f32_of = |v: &Option<f64>| v.map(|x| x as f32).unwrap_or(f32::NAN);
                let gpu: Vec<f32> = s.g.iter().flat_map(|g| g.iter().map(f32_of)).collect();
                let host: Vec<f32> = s.h.iter().map(f32_of).collect();
                self.push_row(s.t, s.w, &gpu, &host)
            }
            Record::Processes(p) => {
                let mut p = p.clone();
                p.t += self.offset_ms;
                self.procs.push_back(p);
                Vec::new()
            }
            Record::Event(e) => {
                let mut e = e.clone();
                e.t += self.offset_ms;
                let alert = self.event_alert(&e);
                self.frameworks_found
                    .extend(crate::analysis::features::framework_event(&e));
                self.events.push_back(e);
                alert.into_iter().collect()
            }
            _ => Vec::new(),
        }
    }

    /// One sample: time in ms since its recording started, its warm-up
    /// flag, the GPU values `[gpu][column]` flattened and the host values
    /// (NaN = missing), in the current header's shape.
    pub(crate) fn push_row(
        &mut self,
        t_ms: f64,
        warmup: bool,
        gpu: &[f32],
        host: &[f32],
    ) -> Vec<Alert> {
        if warmup {
            return Vec::new(); // outside every window, as outside check's
        }
        let t = self.offset_ms + t_ms;
        if self.ring.last_t().is_some_and(|last| t - last > MAX_GAP_MS) {
            self.since_ms = None;
        }
        self.since_ms.get_or_insert(t);
        self.steady_samples += 1;
        self.ring.push(t, gpu, host);
        let mut out = Vec::new();
        while self.joined < self.ring.end() && self.ring.t(self.joined) <= t - HOLD_BACK_MS {
            let seq = self.joined;
            self.joined += 1;
            for g in &mut self.groups {
                g.window.advance(&self.ring, seq);
            }
            let now = self.ring.t(seq);
            if let Some(since) = self.since_ms {
                self.longest_span_ms = self.longest_span_ms.max(now - since);
            }
            self.forget_before(now - self.longest_ms);
            if now - self.last_eval_ms >= self.eval_every_ms {
                self.last_eval_ms = now;
                out.extend(self.evaluate(now));
            }
        }
        out
    }

    /// Xid and NVML errors alert at once (never a crash, never a hang).
    fn event_alert(&self, e: &EventRecord) -> Option<Alert> {
        let (rule, severity, title) = match e.kind {
            EventKind::Xid if e.code == Some(79) => (
                "xid",
                Severity::High,
                "Xid 79: the GPU fell off the bus".to_string(),
            ),
            EventKind::Xid => (
                "xid",
                Severity::High,
                format!(
                    "Xid {} reported by the driver",
                    e.code.map(|c| c.to_string()).unwrap_or_else(|| "?".into())
                ),
            ),
            EventKind::NvmlError => (
                "nvml_error",
                Severity::Medium,
                "NVML error (recorded; sampling goes on)".to_string(),
            ),
            _ => return None,
        };
        if severity < self.plan.min_severity {
            return None;
        }
        let start = e.t - self.plan.default_window.as_secs_f64() * 1000.0;
        Some(Alert {
            state: AlertState::Firing,
            rule: rule.into(),
            severity,
            title,
            t_ms: e.t,
            window_s: 0.0,
            window_start_ms: e.t,
            window_end_ms: e.t,
            evidence: vec![e.message.clone()],
            explanation: String::new(),
            fired_at_ms: None,
            pids: pid_shares(&window_procs(&self.procs, start, e.t)),
        })
    }

    fn forget_before(&mut self, cut_ms: f64) {
        let keep_from = self
            .groups
            .iter()
            .map(|g| g.window.start())
            .min()
            .unwrap_or(self.ring.end());
        while self.ring.front() < keep_from {
            self.ring.pop_front();
        }
        // Keep, per GPU, the last process list before the cut: who was
        // there when the window opened.
        while self.procs.front().is_some_and(|f| {
            f.t <= cut_ms
                && self
                    .procs
                    .iter()
                    .skip(1)
                    .take_while(|p| p.t <= cut_ms)
                    .any(|p| p.gpu == f.gpu)
        }) {
            self.procs.pop_front();
        }
        while self.events.front().is_some_and(|e| e.t < cut_ms) {
            self.events.pop_front();
        }
    }

    /// Evaluate every rule whose window is full at `now_ms`.
    fn evaluate(&mut self, now_ms: f64) -> Vec<Alert> {
        let since = self.since_ms.unwrap_or(now_ms);
        // Full once the data (without a gap) covers the window, give or
        // take one sampling interval.
        let slack = self.header.interval_ms as f64;
        // As `features::frameworks`: the events' frameworks, else the
        // command line's.
        let frameworks = if self.frameworks_found.is_empty() {
            crate::analysis::framework::from_command(&self.header.command)
        } else {
            self.frameworks_found.clone()
        };
        let mut out = Vec::new();
        for gi in 0..self.groups.len() {
            let len_ms = self.groups[gi].window.len_ms;
            if now_ms - since + slack < len_ms || self.groups[gi].window.len(&self.ring) == 0 {
                continue;
            }
            self.groups[gi].filled = true;
            let start_ms = now_ms - len_ms;
            let events: Vec<&EventRecord> = self
                .events
                .iter()
                .filter(|e| e.t >= start_ms && e.t <= now_ms)
                .collect();
            let procs = window_procs(&self.procs, start_ms, now_ms);
            let at = At {
                now_ms,
                start_ms,
                len_ms,
                pids: pid_shares(&procs),
            };
            let g = &self.groups[gi];
            let alerts = match self.mode {
                Mode::Incremental => {
                    let view = WindowView {
                        ring: &self.ring,
                        window: &g.window,
                        header: &self.header,
                        events,
                        processes: procs,
                        frameworks: &frameworks,
                    };
                    transitions(&g.rules, &mut self.firing, &view, &at)
                }
                Mode::Recompute => {
                    let trace = window_trace(&self.ring, &g.window, &self.header, events, procs);
                    let mut summary = crate::summary::summarize(&trace);
                    // A window's events may not hold the run's `framework`
                    // events: the run's frameworks, as the view reads them.
                    summary.features.retain(|k, _| !k.starts_with("framework."));
                    for fw in &frameworks {
                        summary.features.insert(format!("framework.{fw}"), 1.0);
                    }
                    transitions(&g.rules, &mut self.firing, &summary, &at)
                }
            };
            out.extend(alerts);
        }
        out
    }
}

/// The rules a watch evaluates, or why one cannot be: a rule whose
/// condition reads a feature no sliding window has (`Scope::BenchmarkOutput`:
/// the benchmark's declared rate of work, read from its output with
/// gate.toml's user metrics after the run) is refused, never evaluated to
/// "does not hold" in silence. The built-in rule that reads one
/// (`more_work_per_unit`) is a change-only rule whose own condition never
/// holds (a run alone cannot show it), so it is left out: `gate report`
/// never finds it on one run either.
pub(crate) fn window_rules(rules: &RuleSet) -> Result<RuleSet, String> {
    let mut left_out = Vec::new();
    for rule in rules.rules().iter().filter(|r| r.enabled) {
        let refused = crate::diagnose::dsl::features_read(&rule.cond)
            .into_iter()
            .find_map(|name| {
                Some((
                    name,
                    window::refused_in_a_window(Feature::from_name(name)?)?,
                ))
            });
        let Some((feature, why)) = refused else {
            continue;
        };
        if rule.origin != crate::diagnose::rules::Origin::Builtin {
            return Err(format!(
                "rule '{}': `gate watch` cannot evaluate `{feature}` over a sliding window ({why}); drop it from the rule's `when` or read the run with `gate report`",
                crate::escape::terminal(&rule.name)
            ));
        }
        left_out.push(rule.name.clone());
    }
    Ok(rules.only(|r| !left_out.contains(&r.name)))
}

/// Where and when an evaluation happens.
struct At {
    now_ms: f64,
    start_ms: f64,
    len_ms: f64,
    pids: Vec<PidShare>,
}

/// The alerts of one evaluation of `rules` over `src`: rules that start to
/// hold fire, firing rules that stop holding resolve.
fn transitions(
    rules: &RuleSet,
    firing: &mut BTreeMap<String, Firing>,
    src: &dyn MetricSource,
    at: &At,
) -> Vec<Alert> {
    let fired: BTreeMap<String, crate::diagnose::Finding> = rules
        .diagnose(src)
        .into_iter()
        .map(|f| (f.rule.clone(), f))
        .collect();
    let mut out = Vec::new();
    for rule in rules.rules() {
        let name = &rule.name;
        match (fired.get(name), firing.contains_key(name)) {
            (Some(f), false) => {
                let alert = Alert {
                    state: AlertState::Firing,
                    rule: f.rule.clone(),
                    severity: f.severity,
                    title: f.title.clone(),
                    t_ms: at.now_ms,
                    window_s: at.len_ms / 1000.0,
                    window_start_ms: at.start_ms,
                    window_end_ms: at.now_ms,
                    evidence: f.evidence.clone(),
                    explanation: f.explanation.clone(),
                    fired_at_ms: None,
                    pids: at.pids.clone(),
                };
                let evidence = evidence_values(rule, src);
                firing.insert(
                    name.clone(),
                    Firing {
                        alert: alert.clone(),
                        evidence,
                    },
                );
                out.push(alert);
            }
            (None, true) => {
                let was = firing.remove(name).expect("checked");
                out.push(resolved(rule, was, src, at));
            }
            _ => {}
        }
    }
    out
}

fn evidence_values(rule: &Rule, src: &dyn MetricSource) -> Vec<Option<f64>> {
    rule.evidence
        .iter()
        .map(|(_, e)| crate::diagnose::dsl::eval_num(e, src, None))
        .collect()
}

/// The RESOLVED alert: what changed since it fired, evidence by evidence.
fn resolved(rule: &Rule, was: Firing, src: &dyn MetricSource, at: &At) -> Alert {
    let now = evidence_values(rule, src);
    let evidence = rule
        .evidence
        .iter()
        .zip(was.evidence.iter().zip(&now))
        .map(|((label, e), (then, now))| {
            format!("{label} {} -> {}", with_unit(*then, e), with_unit(*now, e))
        })
        .collect();
    let fired_at = was.alert.t_ms;
    Alert {
        state: AlertState::Resolved,
        t_ms: at.now_ms,
        window_s: at.len_ms / 1000.0,
        window_start_ms: at.start_ms,
        window_end_ms: at.now_ms,
        evidence,
        explanation: format!(
            "The condition no longer holds over the last {} s (`{}`); it fired at {:.1} s. Each evidence line reads: when it fired -> now.",
            crate::format::number(at.len_ms / 1000.0),
            rule.when,
            fired_at / 1000.0
        ),
        fired_at_ms: Some(fired_at),
        pids: at.pids.clone(),
        ..was.alert
    }
}

/// The process lists of a window: per GPU the last list at or before its
/// start (who was there when it opened), then every list up to its end.
fn window_procs(
    procs: &VecDeque<ProcessesRecord>,
    start_ms: f64,
    end_ms: f64,
) -> Vec<&ProcessesRecord> {
    let mut opening: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, p) in procs
        .iter()
        .enumerate()
        .take_while(|(_, p)| p.t <= start_ms)
    {
        opening.insert(p.gpu, i);
    }
    let first_after = procs.partition_point(|p| p.t <= start_ms);
    let mut idx: Vec<usize> = opening.into_values().collect();
    idx.extend((first_after..procs.len()).take_while(|&i| procs[i].t <= end_ms));
    idx.sort_unstable();
    idx.into_iter().map(|i| &procs[i]).collect()
}

/// Every PID listed on a GPU in `lists`, with its latest SM share.
fn pid_shares(lists: &[&ProcessesRecord]) -> Vec<PidShare> {
    let mut by: BTreeMap<(u32, u32), PidShare> = BTreeMap::new();
    for rec in lists {
        for p in &rec.procs {
            by.insert(
                (rec.gpu, p.pid),
                PidShare {
                    pid: p.pid,
                    name: p.name.clone(),
                    gpu: rec.gpu,
                    in_target: p.in_target,
                    sm_share_pct: p.sm_share_pct,
                    gpu_mem_mib: p.gpu_mem_mib,
                },
            );
        }
    }
    by.into_values().collect()
}

/// A window's samples, events and process lists as a trace the summariser
/// reads (the reference path, `Mode::Recompute`).
fn window_trace(
    ring: &Ring,
    window: &Window,
    header: &Header,
    events: Vec<&EventRecord>,
    procs: Vec<&ProcessesRecord>,
) -> Trace {
    let mut header = header.clone();
    header.warmup_ms = 0;
    let seqs = window.seqs(ring);
    let columns = crate::trace::Columns::new(
        header.fingerprint.gpus.len(),
        header.gpu_columns.len(),
        header.host_columns.len(),
    );
    let mut trace = Trace {
        path: "watch-window".into(),
        header,
        columns,
        events: events.into_iter().cloned().collect(),
        processes: procs.into_iter().cloned().collect(),
        ..Default::default()
    };
    for q in seqs {
        let (gpu, host) = ring.row(q);
        trace.times_ms.push(ring.t(q));
        trace.warmup.push(false);
        // One window, held in memory (never spilled: no scratch file to fail).
        trace
            .columns
            .push_row(&gpu, &host, usize::MAX)
            .expect("columns in memory always take a row");
    }
    trace
}

/// Feed a loaded trace's records to `each` in time order (samples, and the
/// events and process lists up to each sample's time), as a recorder
/// emits them. Stops when `each` returns false.
pub fn replay_records(trace: &Trace, mut each: impl FnMut(&Record) -> bool) {
    use crate::trace::SampleRecord;
    let (ngpu, ncols, nhost) = (
        trace.gpu_count(),
        trace.header.gpu_columns.len(),
        trace.header.host_columns.len(),
    );
    let opt = |v: f32| (!v.is_nan()).then_some(v as f64);
    let (mut ei, mut pi) = (0, 0);
    for (i, t) in trace.times_ms.iter().enumerate() {
        while ei < trace.events.len() && trace.events[ei].t <= t {
            if !each(&Record::Event(trace.events[ei].clone())) {
                return;
            }
            ei += 1;
        }
        while pi < trace.processes.len() && trace.processes[pi].t <= t {
            if !each(&Record::Processes(trace.processes[pi].clone())) {
                return;
            }
            pi += 1;
        }
        let g = (0..ngpu)
            .map(|gpu| {
                (0..ncols)
                    .map(|c| opt(trace.gpu_value(i, gpu, c)))
                    .collect()
            })
            .collect();
        let h = (0..nhost).map(|c| opt(trace.host_value(i, c))).collect();
        let sample = Record::Sample(SampleRecord {
            t,
            w: trace.warmup[i],
            g,
            h,
        });
        if !each(&sample) {
            return;
        }
    }
    for e in &trace.events[ei..] {
        if !each(&Record::Event(e.clone())) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{self, Signature};

    fn rules(extra: &str) -> RuleSet {
        let table: toml::Table = toml::from_str(extra).unwrap();
        let user: BTreeMap<String, toml::Value> = table
            .get("rules")
            .and_then(|r| r.as_table())
            .map(|t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        RuleSet::builtin().with_user_rules(&user).unwrap()
    }

    fn plan(window_s: f64, eval_s: f64, min: Severity) -> WatchPlan {
        WatchPlan {
            default_window: Duration::from_secs_f64(window_s),
            eval_every: Duration::from_secs_f64(eval_s),
            min_severity: min,
        }
    }

    fn replay_with(
        trace: &Trace,
        rules: RuleSet,
        plan: WatchPlan,
        mode: Mode,
    ) -> (Vec<Alert>, usize) {
        let mut e = WindowEngine::with_mode(trace.header.clone(), rules, plan, mode);
        let mut alerts = Vec::new();
        let mut held = 0;
        replay_records(trace, |rec| {
            alerts.extend(e.push(rec));
            held = held.max(e.held_samples());
            true
        });
        (alerts, held)
    }

    fn replay(trace: &Trace, rules: RuleSet, window_s: u64) -> (Vec<Alert>, usize) {
        let p = plan(window_s as f64, 1.0, Severity::Info);
        replay_with(trace, rules, p, Mode::Incremental)
    }

    #[test]
    fn a_rule_fires_once_its_for_window_is_full_and_resolves_saying_what_changed() {
        // Busy GPU for the first half, idle after.
        let mut trace = synthetic::trace(&Signature::healthy(), 1);
        let n = trace.sample_count();
        let col = trace.gpu_column("gpu_busy_pct").unwrap();
        for v in &mut trace.columns.gpu_mut(0, col)[n / 2..] {
            *v = 0.0;
        }
        let r = rules(
            "[rules.busy]\nwhen = \"gpu_busy_pct.mean > 50\"\nfor = \"10s\"\nseverity = \"medium\"\n",
        );
        let (alerts, _) = replay(&trace, r, 60);
        let busy: Vec<&Alert> = alerts.iter().filter(|a| a.rule == "busy").collect();
        assert_eq!(busy.len(), 2, "{alerts:#?}");
        assert_eq!(busy[0].state, AlertState::Firing);
        assert_eq!(busy[0].window_s, 10.0);
        // Not before the window is full (samples every 100 ms from t = 0).
        assert!(busy[0].t_ms >= 9_900.0, "{}", busy[0].t_ms);
        assert!(busy[0].evidence.iter().any(|e| e.contains("gpu_busy_pct")));
        assert_eq!(busy[1].state, AlertState::Resolved);
        assert!(busy[1].t_ms > busy[0].t_ms);
        // RESOLVED reads "then -> now", not FIRING's evidence again.
        assert_eq!(busy[1].fired_at_ms, Some(busy[0].t_ms));
        assert_ne!(busy[1].evidence, busy[0].evidence);
        let line = &busy[1].evidence[0];
        assert!(line.starts_with("gpu_busy_pct.mean "), "{line}");
        let (then, now) = line["gpu_busy_pct.mean ".len()..]
            .split_once(" -> ")
            .unwrap();
        let pct = |s: &str| s.trim_end_matches(" %").parse::<f64>().unwrap();
        assert!(pct(then) > 50.0 && pct(now) <= 50.0, "{line}");
        assert!(
            busy[1].human().contains("(fired at "),
            "{}",
            busy[1].human()
        );
    }

    #[test]
    fn memory_holds_one_window_not_the_run() {
        let trace = synthetic::trace(&Signature::healthy().with_samples(3000), 2);
        let r = rules("[rules.busy]\nwhen = \"gpu_busy_pct.mean > 50\"\nfor = \"5s\"\n");
        let (_, held) = replay(&trace, r, 5);
        // 5 s at 100 ms = 50 samples (+1 at the edge) and 3 s held back,
        // of 3000.
        assert!(held <= 52 + 30, "{held}");
    }

    #[test]
    fn warm_up_samples_never_enter_a_window() {
        // Python start-up: the GPU idle, one core busy, marked warm-up.
        let mut trace = synthetic::trace(&Signature::healthy().with_warmup_samples(150), 1);
        let busy = trace.gpu_column("gpu_busy_pct").unwrap();
        let cpu = trace.host_column("target_cpu_pct").unwrap();
        let warm: Vec<usize> = (0..trace.sample_count())
            .filter(|&i| trace.warmup[i])
            .collect();
        assert_eq!(warm.len(), 150);
        for &i in &warm {
            trace.columns.gpu_mut(0, busy)[i] = 0.0;
            trace.columns.host_mut(cpu)[i] = 100.0;
        }
        let p = plan(10.0, 1.0, Severity::Low);
        let (alerts, _) = replay_with(&trace, RuleSet::builtin(), p, Mode::Incremental);
        assert!(alerts.iter().all(|a| a.rule != "host_bound"), "{alerts:#?}");
        // The same samples unmarked do fire: the exclusion is what held it.
        trace.warmup.fill(false);
        let (alerts, _) = replay_with(&trace, RuleSet::builtin(), p, Mode::Incremental);
        assert!(alerts.iter().any(|a| a.rule == "host_bound"), "{alerts:#?}");
    }

    #[test]
    fn min_severity_leaves_info_rules_out() {
        let trace = synthetic::trace(&Signature::healthy(), 1);
        let r = rules(
            "[rules.note]\nwhen = \"gpu_busy_pct.mean > 50\"\nfor = \"5s\"\nseverity = \"info\"\n",
        );
        let (all, _) = replay_with(
            &trace,
            r.clone(),
            plan(5.0, 1.0, Severity::Info),
            Mode::Incremental,
        );
        assert!(all.iter().any(|a| a.rule == "note"), "{all:#?}");
        let (low, _) = replay_with(&trace, r, plan(5.0, 1.0, Severity::Low), Mode::Incremental);
        assert!(low.iter().all(|a| a.rule != "note"), "{low:#?}");
    }

    /// Rules that read every kind of statistic the windows keep.
    const EVERY_STATISTIC: &str = r#"
[rules.p_and_extremes]
when = "gpu_busy_pct.p95 > 50 and gpu_busy_pct.p5 < 99 and power_w.max > 100 and power_w.min > 0 and sm_active_pct.p50 >= 0 and gpu_busy_pct.p99 >= 0"
for = "5s"
severity = "low"
[rules.spread_and_stdev]
when = "spread(gpu_busy_pct.mean) >= 0 and gpu_busy_pct.stdev >= 0 and gpu_busy_pct.n > 10 and gpu_max(sm_active_pct.p95) >= 0"
for = "3s"
severity = "low"
[rules.every_feature]
when = "known(gpu_busy_pct.idle_frac) and coalesce(gpu_busy_pct.cv, 0) >= 0 and coalesce(gpu_busy_pct.idle_gaps_per_min, 0) >= 0 and coalesce(gpu_busy_pct.idle_gap_mean_s, 0) >= 0 and coalesce(gpu_busy_pct.gap_regularity, 0) >= 0 and coalesce(sm_active_pct.busy_ratio, 0) >= 0 and coalesce(sm_active_pct.starved_frac, 0) >= 0 and coalesce(target_cpu_pct.cores, 0) >= 0 and coalesce(target_cpu_pct.busy_when_gpu_idle, 0) >= 0 and coalesce(host_cpu_busy_pct.others_pct, 0) >= 0 and coalesce(gpu_busy_pct.gpu_spread, 0) >= 0 and coalesce(sm_active_pct.gpu_spread, 0) >= 0 and coalesce(tensor_pct.gpu_spread, 0) >= 0 and coalesce(gpu_busy_pct.straggler_gpu, 0) >= 0 and other_processes.distinct_pids >= 0 and xid.count >= 0 and gpm.invalid_count >= 0 and coalesce(gpu_busy_pct.periodicity, 0) >= 0 and coalesce(gpu_busy_pct.period_s, 0) >= 0"
evidence = ["gpu_busy_pct.idle_frac", "gpu_busy_pct.cv", "gpu_busy_pct.idle_gaps_per_min", "gpu_busy_pct.idle_gap_mean_s", "gpu_busy_pct.gap_regularity", "sm_active_pct.busy_ratio", "sm_active_pct.starved_frac", "target_cpu_pct.cores", "target_cpu_pct.busy_when_gpu_idle", "host_cpu_busy_pct.others_pct", "gpu_busy_pct.gpu_spread", "gpu_busy_pct.straggler_gpu", "gpu_busy_pct.periodicity", "gpu_busy_pct.period_s", "other_processes.distinct_pids"]
for = "4s"
severity = "low"
[rules.flapping]
when = "gpu_busy_pct.mean > 60"
for = "2s"
severity = "low"
"#;

    /// The incremental engine's alerts, evidence text included, equal those
    /// of summarising each window from its samples (`Mode::Recompute`, the
    /// `check` path), on recorded fixtures of every workload and pathology
    /// and every synthetic signature, with rules that read every kept
    /// statistic and feature. (All 82 fixtures took 400 s in a debug
    /// build, the recomputation being the slow side; these cover the
    /// workload families, one and two GPUs, foreign processes and events.)
    #[test]
    fn incremental_alerts_equal_a_recomputation() {
        let r = rules(EVERY_STATISTIC);
        let mut traces: Vec<Trace> = Vec::new();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/traces");
        for name in [
            "contention",
            "cnn-sync",
            "ddp-straggler-gpu",
            "bert-tokenize",
            "healthy-1",
            "cnn-launch",
        ] {
            traces.push(Trace::load(&dir.join(format!("{name}.jsonl"))).unwrap());
        }
        for sig in Signature::all() {
            traces.push(synthetic::trace(&sig, 2));
        }
        // Long enough for the sums to be rebuilt many times.
        traces.push(synthetic::trace(
            &Signature::periodic_stall().with_samples(700),
            3,
        ));
        let mut compared = 0;
        for t in &traces {
            let p = plan(6.0, 1.0, Severity::Info);
            let (inc, _) = replay_with(t, r.clone(), p, Mode::Incremental);
            let (rec, _) = replay_with(t, r.clone(), p, Mode::Recompute);
            assert_eq!(inc, rec, "{}", t.path.display());
            compared += inc.len();
        }
        assert!(compared > 50, "too few alerts compared: {compared}");
    }

    #[test]
    fn windows_that_never_fill_are_reported_with_the_span_that_would() {
        let trace = synthetic::trace(&Signature::healthy(), 1);
        let mut e = WindowEngine::new(
            trace.header.clone(),
            rules("[rules.slow]\nwhen = \"gpu_busy_pct.mean > 50\"\nfor = \"5m\"\n"),
            plan(60.0, 5.0, Severity::Low),
        );
        replay_records(&trace, |rec| {
            e.push(rec);
            true
        });
        let unfilled = e.unfilled();
        assert!(unfilled
            .iter()
            .any(|(d, names)| *d == Duration::from_secs(300) && names == &["slow"]));
        assert!(unfilled.iter().any(|(d, _)| *d == Duration::from_secs(60)));
        let span = e.longest_span_ms();
        let last = trace.times_ms.last().unwrap();
        assert!(span > 0.0 && span <= last, "{span}");
    }

    /// `gate watch --replay` streams the file (`replay::stream`); a live
    /// watch pushes the records it records. Both reach the same engine and
    /// give the same alerts as replaying the loaded trace's records.
    #[test]
    fn a_streamed_replay_equals_the_records_pushed_one_by_one() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/traces");
        let r = rules(EVERY_STATISTIC);
        for name in ["contention", "cnn-sync", "ddp-straggler-gpu", "healthy-1"] {
            let path = dir.join(format!("{name}.jsonl"));
            let trace = Trace::load(&path).unwrap();
            let p = plan(6.0, 1.0, Severity::Info);
            let (pushed, _) = replay_with(&trace, r.clone(), p, Mode::Incremental);
            let mut engine: Option<WindowEngine> = None;
            let mut streamed = Vec::new();
            replay::stream(&path, &mut |item| {
                match item {
                    replay::Item::Header(h) => {
                        engine = Some(WindowEngine::new(h.clone(), r.clone(), p));
                    }
                    replay::Item::Sample {
                        t_ms,
                        warmup,
                        gpu,
                        host,
                    } => {
                        streamed.extend(engine.as_mut().unwrap().push_row(t_ms, warmup, gpu, host))
                    }
                    replay::Item::Record(rec) => {
                        streamed.extend(engine.as_mut().unwrap().push(rec))
                    }
                }
                true
            })
            .unwrap();
            assert!(!pushed.is_empty(), "{name}");
            assert_eq!(streamed, pushed, "{name}");
        }
    }

    #[test]
    fn xid_79_and_nvml_errors_alert_at_once() {
        let trace = synthetic::trace(&Signature::healthy(), 1);
        let mut e = WindowEngine::new(
            trace.header.clone(),
            RuleSet::builtin(),
            plan(60.0, 10.0, Severity::Low),
        );
        let xid = Record::Event(EventRecord {
            t: 1234.0,
            kind: EventKind::Xid,
            gpu: Some(0),
            pid: None,
            code: Some(79),
            message: "Xid 79 on GPU-x\u{1b}[31m".into(),
        });
        let a = e.push(&xid);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].rule, "xid");
        assert!(a[0].title.contains("fell off the bus"));
        assert!(!a[0].human().contains('\u{1b}'), "{}", a[0].human());
        let err = Record::Event(EventRecord {
            t: 2000.0,
            kind: EventKind::NvmlError,
            gpu: Some(0),
            pid: None,
            code: None,
            message: "gpu_busy_pct: GPU is lost".into(),
        });
        assert_eq!(e.push(&err)[0].rule, "nvml_error");
    }

    #[test]
    fn contention_alert_names_the_other_pids() {
        let trace = synthetic::trace(&Signature::contention(), 1);
        let r = rules("[rules.shared]\nwhen = \"other_sm_share_pct.mean > 5\"\nfor = \"5s\"\n");
        let (alerts, _) = replay(&trace, r, 60);
        let a = alerts
            .iter()
            .find(|a| a.rule == "shared" && a.state == AlertState::Firing)
            .unwrap_or_else(|| panic!("{alerts:#?}"));
        assert!(a.pids.iter().any(|p| !p.in_target), "{:?}", a.pids);
    }
}
