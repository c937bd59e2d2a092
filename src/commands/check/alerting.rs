//! A check's (or a suite's) alerts under `[alerts] on`: resolved before
//! anything runs (a variable that holds no URL is a configuration mistake,
//! exit 2, found before the benchmark costs anything; an unset one turns
//! its destination off here, as on pull requests, where CI gives no
//! secrets), delivered after the verdict, every report and the history
//! are out, and after a line that says the verdict and exit code: a
//! receiver that never answers delays the job by its bounded budget, never
//! the verdict. A failed delivery is a warning; to a `required`
//! destination it is exit 3 (which never hides a regression: 1 outranks 3).

use crate::alerts::send::{self, Target};
use crate::config::alerts::Trigger;
use crate::config::Config;
use crate::error::GateError;
use crate::gate::CheckReport;

/// The destinations a check sends to, and on what.
pub(crate) struct Alerting {
    on: Vec<Trigger>,
    targets: Vec<Target>,
    /// Destinations whose variable is unset here: said only when an alert
    /// would have gone to them.
    off: Vec<String>,
    html_url: Option<String>,
}

impl Alerting {
    /// None when gate.toml sends nothing from a check (`[alerts] on` empty,
    /// the default).
    pub(crate) fn resolve(
        config: &Config,
        html_url: Option<&str>,
    ) -> Result<Option<Alerting>, GateError> {
        let cfg = &config.file.alerts;
        if cfg.on.is_empty() {
            return Ok(None);
        }
        let (targets, unusable) = send::targets(cfg, &|k| std::env::var(k).ok());
        let origin = config.origin.as_deref().unwrap_or("gate.toml");
        if let Some(u) = unusable.iter().find(|u| !u.unset) {
            return Err(GateError::usage(format!("{origin}: {}", u.message)));
        }
        Ok(Some(Alerting {
            on: cfg.on.clone(),
            targets,
            off: unusable
                .into_iter()
                .map(|u| format!("{origin}: {}", u.message))
                .collect(),
            html_url: html_url.map(str::to_string),
        }))
    }

    /// Send the alerts of `reports` (each with its suite workload, if any);
    /// `verdict` and `code` are said first. Returns the exit code: `code`,
    /// or 3 where it ranks worse and a required destination failed.
    pub(crate) fn deliver(
        &self,
        reports: &[(&CheckReport, Option<&str>)],
        verdict: &str,
        code: i32,
    ) -> i32 {
        let notices: Vec<_> = reports
            .iter()
            .flat_map(|(r, scope)| {
                crate::alerts::check_notices(r, &self.on, self.html_url.as_deref(), *scope)
            })
            .collect();
        if notices.is_empty() {
            return code;
        }
        for off in &self.off {
            crate::gate_eprintln!(
                "gate: warning: {off}; {} alert(s) not sent there",
                notices.len()
            );
        }
        if self.targets.is_empty() {
            return code;
        }
        crate::gate_eprintln!(
            "gate: verdict {verdict}, exit code {code}; sending {} alert(s) to {} destination(s)",
            notices.len(),
            self.targets.len()
        );
        let mut failed_required = false;
        for sent in send::deliver_all(&self.targets, &notices) {
            let t = sent.target;
            let level = if t.dest.required { "error" } else { "warning" };
            for line in &sent.failures {
                crate::gate_eprintln!("gate: {level}: {line}");
            }
            failed_required |= t.dest.required && !sent.failures.is_empty();
            crate::gate_eprintln!(
                "gate: alerts to '{}' ({}): {} of {} delivered, {} retries",
                t.dest.name,
                t.dest.kind.as_str(),
                sent.delivered,
                notices.len(),
                sent.retries
            );
        }
        if failed_required {
            crate::exit_code::worst_exit_code([code, crate::exit_code::INFRA])
        } else {
            code
        }
    }
}
