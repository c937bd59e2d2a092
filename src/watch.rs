//! `gate watch`'s window engine: trace records in, alerts out. Pure (no
//! clock, no NVML, no terminal): the live watch feeds it the records the
//! recording engine writes, `gate watch --replay` feeds it a recorded trace,
//! and both get the same alerts for the same records.
//!
//! Each enabled rule is evaluated on the statistics and features of a
//! sliding window: the last `for` of samples (the rule's `for = "5m"`,
//! else the watch's default window), summarised exactly as `check` and
//! `report` summarise a whole run (`summary::summarize`). A rule alerts
//! ("firing") when its window is full and its condition holds, and again
//! ("resolved") when it stops holding. Windows are evaluated every
//! `eval_every` of trace time, not every sample, to keep the CPU low.
//!
//! Besides the rules, two conditions always alert, at once: an Xid event
//! (79: the GPU fell off the bus) and an NVML error event (e.g. GPU lost);
//! they are recorded, never fatal.
//!
//! Memory is bounded: samples older than the longest window are dropped,
//! so a watch that runs for days holds at most one window of samples.

use crate::diagnose::{RuleSet, Severity};
use crate::trace::{EventKind, EventRecord, Header, ProcessesRecord, Record, Trace};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// One alert line (JSON on stdout or a file; a human line on stderr).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alert {
    /// "firing" or "resolved".
    pub state: String,
    /// Rule name, or "xid" / "nvml_error" for the built-in alerts.
    pub rule: String,
    pub severity: Severity,
    pub title: String,
    /// Trace time of the evaluation, ms since the watch started.
    pub t_ms: f64,
    /// The window the rule was evaluated over.
    pub window_s: f64,
    pub window_start_ms: f64,
    pub window_end_ms: f64,
    /// "metric = value" lines, as in `gate report`.
    pub evidence: Vec<String>,
    pub explanation: String,
    /// Processes on the GPUs during the window (NVML's lists), the
    /// target's and others', with their last known SM share.
    pub pids: Vec<PidShare>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PidShare {
    pub pid: u32,
    pub name: String,
    pub gpu: u32,
    pub in_target: bool,
    pub sm_share_pct: Option<f64>,
    pub gpu_mem_mib: Option<f64>,
}

impl Alert {
    /// The human line for stderr (no control characters from the trace).
    pub fn human(&self) -> String {
        let pids = self
            .pids
            .iter()
            .map(|p| {
                format!(
                    "{} {} (GPU {}{}{})",
                    p.pid,
                    clean(&p.name),
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
            "gate watch: {} {} [{}] at {:.1} s over {:.0} s: {}{}{}",
            self.state.to_uppercase(),
            self.rule,
            self.severity.as_str(),
            self.t_ms / 1000.0,
            self.window_s,
            clean(&self.title),
            if self.evidence.is_empty() {
                String::new()
            } else {
                format!("; {}", clean(&self.evidence.join("; ")))
            },
            if pids.is_empty() {
                String::new()
            } else {
                format!("; PIDs: {pids}")
            }
        )
    }
}

/// Text from a trace (process names, NVML messages) made safe for a
/// terminal line: control characters become '?'.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// The engine. Feed it records with `push`; it returns the alerts they cause.
pub struct WindowEngine {
    header: Header,
    rules: RuleSet,
    default_window: Duration,
    eval_every_ms: f64,
    longest_ms: f64,
    /// Where the current recording's t = 0 lies on the watch's clock.
    offset_ms: f64,
    /// Start of the data without a gap (a window is full only after it).
    since_ms: Option<f64>,
    times: VecDeque<f64>,
    gpu: VecDeque<f32>,
    host: VecDeque<f32>,
    /// Who was on each GPU: the latest list, and lists within the window.
    procs: VecDeque<ProcessesRecord>,
    events: VecDeque<EventRecord>,
    last_eval_ms: f64,
    firing: BTreeMap<String, Alert>,
}

impl WindowEngine {
    pub fn new(
        header: Header,
        rules: RuleSet,
        default_window: Duration,
        eval_every: Duration,
    ) -> Self {
        let longest = rules
            .rules()
            .iter()
            .filter(|r| r.enabled)
            .map(|r| r.hold_for.unwrap_or(default_window))
            .max()
            .unwrap_or(default_window);
        WindowEngine {
            header,
            rules,
            default_window,
            eval_every_ms: eval_every.as_secs_f64() * 1000.0,
            longest_ms: longest.as_secs_f64() * 1000.0,
            offset_ms: 0.0,
            since_ms: None,
            times: VecDeque::new(),
            gpu: VecDeque::new(),
            host: VecDeque::new(),
            procs: VecDeque::new(),
            events: VecDeque::new(),
            last_eval_ms: f64::NEG_INFINITY,
            firing: BTreeMap::new(),
        }
    }

    /// A new recording (a rotated segment, the next replayed trace) starts
    /// `offset_ms` after the watch did. Its header must have the same
    /// columns and GPUs; a different one restarts the windows.
    pub fn start_segment(&mut self, header: &Header, offset_ms: f64) {
        let same = header.gpu_columns == self.header.gpu_columns
            && header.host_columns == self.header.host_columns
            && header.fingerprint.gpus.len() == self.header.fingerprint.gpus.len();
        if !same {
            self.times.clear();
            self.gpu.clear();
            self.host.clear();
            self.header = header.clone();
            self.since_ms = None;
        }
        self.offset_ms = offset_ms;
    }

    /// Samples held now (bounded by the longest window).
    pub fn held_samples(&self) -> usize {
        self.times.len()
    }

    pub fn push(&mut self, record: &Record) -> Vec<Alert> {
        match record {
            Record::Sample(s) => {
                let t = self.offset_ms + s.t;
                let ncols = self.header.gpu_columns.len();
                if s.g.len() != self.header.fingerprint.gpus.len()
                    || s.g.iter().any(|g| g.len() != ncols)
                    || s.h.len() != self.header.host_columns.len()
                {
                    return Vec::new(); // not this header's shape: skip
                }
                // A gap of more than a minute (a restart, a lost GPU) starts
                // the windows over: a window is never filled across it.
                if let Some(&last) = self.times.back() {
                    if t - last > 60_000.0 {
                        self.since_ms = None;
                    }
                }
                self.since_ms.get_or_insert(t);
                self.times.push_back(t);
                for g in &s.g {
                    self.gpu
                        .extend(g.iter().map(|v| v.map(|x| x as f32).unwrap_or(f32::NAN)));
                }
                self.host
                    .extend(s.h.iter().map(|v| v.map(|x| x as f32).unwrap_or(f32::NAN)));
                self.forget_before(t - self.longest_ms);
                if t - self.last_eval_ms >= self.eval_every_ms {
                    self.last_eval_ms = t;
                    return self.evaluate(t);
                }
                Vec::new()
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
                self.events.push_back(e);
                alert.into_iter().collect()
            }
            _ => Vec::new(),
        }
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
        Some(Alert {
            state: "firing".into(),
            rule: rule.into(),
            severity,
            title,
            t_ms: e.t,
            window_s: 0.0,
            window_start_ms: e.t,
            window_end_ms: e.t,
            evidence: vec![e.message.clone()],
            explanation: String::new(),
            pids: self.pids_between(e.t - self.default_window.as_secs_f64() * 1000.0, e.t),
        })
    }

    fn forget_before(&mut self, cut_ms: f64) {
        let ngpu = self.header.fingerprint.gpus.len();
        let (gw, hw) = (
            ngpu * self.header.gpu_columns.len(),
            self.header.host_columns.len(),
        );
        while self.times.front().is_some_and(|&t| t < cut_ms) {
            self.times.pop_front();
            self.gpu.drain(..gw);
            self.host.drain(..hw);
        }
        // Keep the last process list before the cut: who was there when
        // the window opened.
        while self.procs.len() > 1 && self.procs[1].t <= cut_ms {
            self.procs.pop_front();
        }
        while self.events.front().is_some_and(|e| e.t < cut_ms) {
            self.events.pop_front();
        }
    }

    /// Evaluate every rule whose window is full at `now_ms`.
    fn evaluate(&mut self, now_ms: f64) -> Vec<Alert> {
        let mut windows: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for r in self.rules.rules().iter().filter(|r| r.enabled) {
            let w = r.hold_for.unwrap_or(self.default_window);
            windows
                .entry(w.as_millis() as u64)
                .or_default()
                .push(r.name.clone());
        }
        let since = self.since_ms.unwrap_or(now_ms);
        let mut out = Vec::new();
        for (w_ms, names) in windows {
            let w_ms = w_ms as f64;
            // Full once the data (without a gap) covers the window, give or
            // take one sampling interval.
            let slack = self.header.interval_ms as f64;
            if now_ms - since + slack < w_ms {
                continue;
            }
            let start = now_ms - w_ms;
            let trace = self.window_trace(start);
            if trace.sample_count() == 0 {
                continue;
            }
            let summary = crate::summary::summarize(&trace);
            let fired: BTreeMap<String, crate::diagnose::Finding> = self
                .rules
                .diagnose(&summary)
                .into_iter()
                .filter(|f| names.contains(&f.rule))
                .map(|f| (f.rule.clone(), f))
                .collect();
            for name in &names {
                match (fired.get(name), self.firing.contains_key(name)) {
                    (Some(f), false) => {
                        let a = Alert {
                            state: "firing".into(),
                            rule: f.rule.clone(),
                            severity: f.severity,
                            title: f.title.clone(),
                            t_ms: now_ms,
                            window_s: w_ms / 1000.0,
                            window_start_ms: start,
                            window_end_ms: now_ms,
                            evidence: f.evidence.clone(),
                            explanation: f.explanation.clone(),
                            pids: self.pids_between(start, now_ms),
                        };
                        self.firing.insert(name.clone(), a.clone());
                        out.push(a);
                    }
                    (None, true) => {
                        let mut a = self.firing.remove(name).expect("checked");
                        a.state = "resolved".into();
                        a.t_ms = now_ms;
                        a.window_start_ms = start;
                        a.window_end_ms = now_ms;
                        a.pids = self.pids_between(start, now_ms);
                        out.push(a);
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// The held samples from `start_ms` on, as a trace the summariser reads.
    fn window_trace(&self, start_ms: f64) -> Trace {
        let first = self.times.partition_point(|&t| t < start_ms);
        let (gw, hw) = (
            self.header.fingerprint.gpus.len() * self.header.gpu_columns.len(),
            self.header.host_columns.len(),
        );
        let mut header = self.header.clone();
        header.warmup_ms = 0;
        Trace {
            path: "watch-window".into(),
            header,
            times_ms: self.times.iter().skip(first).copied().collect(),
            warmup: vec![false; self.times.len() - first],
            gpu_values: self.gpu.iter().skip(first * gw).copied().collect(),
            host_values: self.host.iter().skip(first * hw).copied().collect(),
            events: self
                .events
                .iter()
                .filter(|e| e.t >= start_ms)
                .cloned()
                .collect(),
            processes: self.procs.iter().cloned().collect(),
            output: Vec::new(),
            end: None,
            truncated: false,
            teardown: 0,
        }
    }

    /// Every PID listed on a GPU between `start_ms` and `end_ms` (the list
    /// in force at `start_ms` included), with its latest SM share.
    fn pids_between(&self, start_ms: f64, end_ms: f64) -> Vec<PidShare> {
        let mut by: BTreeMap<(u32, u32), PidShare> = BTreeMap::new();
        let opening = self
            .procs
            .iter()
            .rposition(|p| p.t <= start_ms)
            .unwrap_or(0);
        for rec in self.procs.iter().skip(opening).filter(|p| p.t <= end_ms) {
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
}

/// Feed a loaded trace's records to `each` in time order (samples, and the
/// events and process lists up to each sample's time): what `gate watch
/// --replay` plays through the engine. Stops when `each` returns false.
pub fn replay_records(trace: &Trace, mut each: impl FnMut(&Record) -> bool) {
    use crate::trace::SampleRecord;
    let (ngpu, ncols, nhost) = (
        trace.gpu_count(),
        trace.header.gpu_columns.len(),
        trace.header.host_columns.len(),
    );
    let opt = |v: f32| (!v.is_nan()).then_some(v as f64);
    let (mut ei, mut pi) = (0, 0);
    for i in 0..trace.sample_count() {
        let t = trace.times_ms[i];
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

    fn replay(trace: &Trace, rules: RuleSet, window_s: u64) -> (Vec<Alert>, usize) {
        let mut e = WindowEngine::new(
            trace.header.clone(),
            rules,
            Duration::from_secs(window_s),
            Duration::from_secs(1),
        );
        let mut alerts = Vec::new();
        let mut held = 0;
        replay_records(trace, |rec| {
            alerts.extend(e.push(rec));
            held = held.max(e.held_samples());
            true
        });
        (alerts, held)
    }

    #[test]
    fn a_rule_fires_once_its_for_window_is_full_and_resolves() {
        // Busy GPU for the first half, idle after.
        let mut trace = synthetic::trace(&Signature::healthy(), 1);
        let n = trace.sample_count();
        let col = trace.gpu_column("gpu_busy_pct").unwrap();
        let ncols = trace.header.gpu_columns.len();
        for i in n / 2..n {
            trace.gpu_values[i * ncols + col] = 0.0;
        }
        let r = rules(
            "[rules.busy]\nwhen = \"gpu_busy_pct.mean > 50\"\nfor = \"10s\"\nseverity = \"medium\"\n",
        );
        let (alerts, _) = replay(&trace, r, 60);
        let busy: Vec<&Alert> = alerts.iter().filter(|a| a.rule == "busy").collect();
        assert_eq!(busy.len(), 2, "{alerts:#?}");
        assert_eq!(busy[0].state, "firing");
        assert_eq!(busy[0].window_s, 10.0);
        // Not before the window is full (samples every 100 ms from t = 0).
        assert!(busy[0].t_ms >= 9_900.0, "{}", busy[0].t_ms);
        assert!(busy[0].evidence.iter().any(|e| e.contains("gpu_busy_pct")));
        assert_eq!(busy[1].state, "resolved");
        assert!(busy[1].t_ms > busy[0].t_ms);
    }

    #[test]
    fn memory_holds_one_window_not_the_run() {
        let trace = synthetic::trace(&Signature::healthy().with_samples(3000), 2);
        let r = rules("[rules.busy]\nwhen = \"gpu_busy_pct.mean > 50\"\nfor = \"5s\"\n");
        let (_, held) = replay(&trace, r, 5);
        // 5 s at 100 ms = 50 samples (+1 at the edge), of 3000.
        assert!(held <= 52, "{held}");
    }

    #[test]
    fn xid_79_and_nvml_errors_alert_at_once() {
        let trace = synthetic::trace(&Signature::healthy(), 1);
        let mut e = WindowEngine::new(
            trace.header.clone(),
            RuleSet::builtin(),
            Duration::from_secs(60),
            Duration::from_secs(10),
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
            .find(|a| a.rule == "shared" && a.state == "firing")
            .unwrap_or_else(|| panic!("{alerts:#?}"));
        assert!(a.pids.iter().any(|p| !p.in_target), "{:?}", a.pids);
    }
}
