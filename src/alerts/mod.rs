//! Alerts that leave the machine: `[alerts.NAME]` destinations of gate.toml
//! (Alertmanager's API v2, a Slack incoming webhook, a webhook with gate's
//! own JSON), fed by `gate watch` (every FIRING and RESOLVED) and by
//! `check` and suites (`[alerts] on`).
//!
//! The flow: an alert (a watch `Alert`, a check's verdict) becomes one
//! destination-independent `Notice` here; `body` renders it for each kind
//! of receiver; `send` posts it with bounded timeouts and retries, through
//! a bounded queue per destination in a watch (`send::Outbox`) or at once
//! after the verdict is out in a check (`send::deliver_all`). Nothing here
//! decides a verdict: delivery only ever adds warnings (or exit 3 for a
//! `required` destination in check).

pub mod body;
pub mod send;

use crate::config::alerts::Trigger;
use crate::diagnose::RuleSet;
use crate::gate::{CheckReport, RunVerdict};
use crate::trace::Header;
use crate::watch::{Alert, AlertState};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::time::SystemTime;

/// One alert as every destination receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub firing: bool,
    /// The rule (watch), or the trigger (`regression`, `drift`, `invalid`).
    pub name: String,
    pub severity: String,
    pub title: String,
    pub evidence: Vec<String>,
    pub explanation: String,
    pub next_steps: Vec<String>,
    /// gpu, host, benchmark, baseline (those known; never empty values).
    pub labels: BTreeMap<String, String>,
    /// The run's page (`--html-url`).
    pub url: Option<String>,
    pub starts_at: SystemTime,
    /// Resolved: when it stopped holding.
    pub ends_at: Option<SystemTime>,
    /// A watch's firing alert is kept alive by re-sending it (Alertmanager
    /// ends it after `4 x resend` without one, as for Prometheus); a
    /// check's is sent once.
    pub renewed: bool,
    /// The webhook's body: the `--alerts` line's object (a watch), or the
    /// check's alert object of the same shape (schemas/alert.schema.json).
    pub document: serde_json::Value,
}

/// Longest label value sent (Alertmanager keeps labels in memory per alert).
const MAX_LABEL_CHARS: usize = 200;

fn label_value(s: &str) -> String {
    let clean: String = s
        .chars()
        .map(|c| if crate::escape::is_hostile(c) { ' ' } else { c })
        .collect();
    clean.trim().chars().take(MAX_LABEL_CHARS).collect()
}

impl Notice {
    /// Stable across FIRING and RESOLVED, runs and processes: the alert's
    /// name and labels (as Alertmanager's own fingerprint), 16 hex digits.
    pub fn fingerprint(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.name.as_bytes());
        for (k, v) in &self.labels {
            h.update([0]);
            h.update(k.as_bytes());
            h.update([0]);
            h.update(v.as_bytes());
        }
        h.finalize()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    pub fn state(&self) -> &'static str {
        if self.firing {
            "firing"
        } else {
            "resolved"
        }
    }

    fn set_label(&mut self, k: &str, v: &str) {
        let v = label_value(v);
        if !v.is_empty() {
            self.labels.insert(k.to_string(), v);
        }
    }
}

/// The benchmark as a label: its command line, or the PID it attached to.
fn benchmark_of(command: &[String], attach_pid: Option<u32>) -> String {
    if command.is_empty() {
        return attach_pid.map(|p| format!("pid {p}")).unwrap_or_default();
    }
    command.join(" ")
}

/// A watch's alerts as notices: the context of the trace being watched,
/// and when each firing alert started (its RESOLVED carries the same
/// `startsAt`).
#[derive(Debug, Default)]
pub struct WatchNotices {
    labels: BTreeMap<String, String>,
    /// The `benchmark` label of a node-wide watch (`--all`), whose
    /// recordings name gate's own PID, different at every start.
    node_wide: Option<String>,
    next_steps: BTreeMap<String, Vec<String>>,
    started: BTreeMap<String, SystemTime>,
}

impl WatchNotices {
    pub fn new(rules: &RuleSet) -> Self {
        WatchNotices {
            next_steps: rules
                .rules()
                .iter()
                .map(|r| (r.name.clone(), r.next_steps.clone()))
                .collect(),
            ..Default::default()
        }
    }

    /// A watch of every process on the GPUs: `benchmark` is `what`, the
    /// same across restarts (so is the alerts' fingerprint).
    pub fn node_wide(&mut self, what: &str) {
        self.node_wide = Some(what.to_string());
    }

    /// Take the labels of a (new) recording's header.
    pub fn header(&mut self, h: &Header) {
        let gpus: Vec<String> = h
            .fingerprint
            .gpus
            .iter()
            .map(|g| g.index.to_string())
            .collect();
        let benchmark = match &self.node_wide {
            Some(w) => w.clone(),
            None => benchmark_of(&h.command, h.attach_pid),
        };
        let mut n = self.blank();
        n.labels.clear();
        n.set_label("gpu", &gpus.join(","));
        n.set_label("host", &h.fingerprint.host.hostname);
        n.set_label("benchmark", &benchmark);
        self.labels = n.labels;
    }

    fn blank(&self) -> Notice {
        Notice {
            firing: true,
            name: String::new(),
            severity: String::new(),
            title: String::new(),
            evidence: Vec::new(),
            explanation: String::new(),
            next_steps: Vec::new(),
            labels: self.labels.clone(),
            url: None,
            starts_at: SystemTime::now(),
            ends_at: None,
            renewed: true,
            document: serde_json::Value::Null,
        }
    }

    /// The notice of one alert, raised now.
    pub(crate) fn notice(&mut self, a: &Alert) -> Notice {
        let now = SystemTime::now();
        let mut n = self.blank();
        n.firing = a.state == AlertState::Firing;
        n.name = a.rule.clone();
        n.severity = a.severity.as_str().to_string();
        n.title = a.title.clone();
        n.evidence = a.evidence.clone();
        n.explanation = a.explanation.clone();
        n.next_steps = self.next_steps.get(&a.rule).cloned().unwrap_or_default();
        n.document = serde_json::to_value(a).unwrap_or_default();
        let fp = n.fingerprint();
        if n.firing {
            self.started.insert(fp, now);
            n.starts_at = now;
        } else {
            n.starts_at = self.started.remove(&fp).unwrap_or(now);
            n.ends_at = Some(now);
        }
        n
    }
}

/// The alerts a judged check raises under `[alerts] on`: at most one per
/// trigger, each FIRING (a check has no later moment to resolve it).
pub fn check_notices(
    report: &CheckReport,
    on: &[Trigger],
    html_url: Option<&str>,
    scope: Option<&str>,
) -> Vec<Notice> {
    on.iter()
        .filter_map(|t| check_notice(report, *t, html_url, scope))
        .collect()
}

fn check_notice(
    r: &CheckReport,
    trigger: Trigger,
    html_url: Option<&str>,
    scope: Option<&str>,
) -> Option<Notice> {
    let drift: Vec<String> = r
        .trend
        .iter()
        .flat_map(|t| t.drift.iter().map(|d| d.message.clone()))
        .collect();
    let (severity, evidence) = match trigger {
        Trigger::Regression if r.verdict() == RunVerdict::Regression => {
            ("high", r.reasons().to_vec())
        }
        Trigger::Invalid
            if matches!(
                r.verdict(),
                RunVerdict::Invalid
                    | RunVerdict::Unmeasured
                    | RunVerdict::Error
                    | RunVerdict::Disturbed
            ) =>
        {
            ("medium", r.reasons().to_vec())
        }
        Trigger::Drift if !drift.is_empty() => ("medium", drift),
        _ => return None,
    };
    let baseline = &r.baseline.name;
    let title = match trigger {
        Trigger::Drift => format!("Drift in the history of baseline {baseline}"),
        _ => format!(
            "{} against baseline {baseline} (exit {})",
            r.verdict().as_str(),
            r.exit_code()
        ),
    };
    let top = r.diagnosis.first();
    let mut n = Notice {
        firing: true,
        name: trigger.as_str().to_string(),
        severity: severity.to_string(),
        title,
        evidence,
        explanation: r.diagnosis_text.first().cloned().unwrap_or_default(),
        next_steps: top.map(|f| f.next_steps.clone()).unwrap_or_default(),
        labels: BTreeMap::new(),
        url: html_url.map(str::to_string),
        starts_at: SystemTime::now(),
        ends_at: None,
        renewed: false,
        document: serde_json::Value::Null,
    };
    let run = r.runs.first();
    n.set_label("baseline", baseline);
    if let Some(s) = scope {
        n.set_label("workload", s);
    }
    n.set_label(
        "benchmark",
        &run.map(|r| r.command.clone())
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| baseline.clone()),
    );
    n.set_label("gpu", &run.map(|r| r.gpu_model.clone()).unwrap_or_default());
    n.set_label("host", &this_host());
    n.document = serde_json::json!({
        "state": "firing",
        "rule": n.name,
        "severity": n.severity,
        "title": n.title,
        "evidence": n.evidence,
        "explanation": n.explanation,
        "baseline": baseline,
        "verdict": r.verdict().as_str(),
        "exit_code": r.exit_code(),
        "url": n.url,
    });
    if let Some(s) = scope {
        n.document["workload"] = s.into();
    }
    Some(n)
}

/// The host a check runs on (its alerts' `host` label).
fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_is_the_name_and_labels_not_the_state_or_time() {
        let mut w = WatchNotices::default();
        let mut n = w.blank();
        n.name = "host_bound".into();
        n.set_label("host", "h1");
        let fp = n.fingerprint();
        assert_eq!(fp.len(), 16);
        let mut later = n.clone();
        later.firing = false;
        later.starts_at = SystemTime::UNIX_EPOCH;
        assert_eq!(later.fingerprint(), fp);
        later.set_label("gpu", "1");
        assert_ne!(later.fingerprint(), fp);
        // Control characters never reach a label; empty values are left out.
        n.set_label("benchmark", "a\u{1b}[31m\nb");
        assert_eq!(n.labels["benchmark"], "a [31m b");
        n.set_label("baseline", " \n ");
        assert!(!n.labels.contains_key("baseline"));
        w.labels = n.labels.clone();
    }

    #[test]
    fn a_watch_labels_its_alerts_from_the_header_and_resolves_with_its_start() {
        use crate::synthetic::{self, Signature};
        let mut trace = synthetic::trace(&Signature::healthy(), 1);
        trace.header.command = Vec::new();
        trace.header.attach_pid = Some(4242);
        let mut w = WatchNotices::new(&RuleSet::builtin());
        w.header(&trace.header);
        assert_eq!(w.labels["benchmark"], "pid 4242");
        assert_eq!(w.labels["gpu"], "0");
        // --all: one name across restarts, not gate's own PID.
        w.node_wide("all GPU processes");
        w.header(&trace.header);
        assert_eq!(w.labels["benchmark"], "all GPU processes");
        // RESOLVED carries its FIRING's start, and when it ended.
        let mut a = Alert {
            state: AlertState::Firing,
            rule: "host_bound".into(),
            severity: crate::diagnose::Severity::High,
            title: "t".into(),
            t_ms: 1.0,
            window_s: 1.0,
            window_start_ms: 0.0,
            window_end_ms: 1.0,
            evidence: Vec::new(),
            explanation: String::new(),
            fired_at_ms: None,
            pids: Vec::new(),
        };
        let fired = w.notice(&a);
        assert!(fired.firing && fired.ends_at.is_none());
        assert!(!fired.next_steps.is_empty(), "the rule's next steps");
        assert_eq!(fired.document, serde_json::to_value(&a).unwrap());
        std::thread::sleep(std::time::Duration::from_millis(5));
        a.state = AlertState::Resolved;
        let resolved = w.notice(&a);
        assert_eq!(resolved.starts_at, fired.starts_at);
        assert!(resolved.ends_at.unwrap() > fired.starts_at);
        assert_eq!(resolved.fingerprint(), fired.fingerprint());
    }
}
