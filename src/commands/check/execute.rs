//! A check's plan carried out: acquire (run the benchmark, or load the
//! replayed traces, each summarised as it is loaded) -> derive -> judge
//! (`gate::check`, with the history's prior) -> reruns while the noise
//! leaves the verdict open -> the history's reads (drift, trend). No report
//! is written here (the check's or the suite's writer does) and the run is
//! not yet appended to the history (`HistoryTail::finish`).
//!
//! `acquire` and `conclude` are separate steps so that a suite can acquire
//! its replayed workloads at once and judge them in its own order.

use super::plan::CheckPlan;
use crate::commands::measure;
use crate::gate::{self, CheckReport};
use crate::history::pipeline::{self, CheckHistory, PendingCheck};
use crate::summary::Run;

/// The runs measured so far, each derived (`Run::derive`) and its trace
/// dropped.
pub(crate) struct Acquired {
    runs: Vec<Run>,
}

/// A judged check whose run is not yet in the history: the reports are
/// written first, then `history.finish()`.
pub struct Judged {
    pub report: CheckReport,
    pub history: HistoryTail,
}

/// The history's second step of one check (appending the run), if any.
pub struct HistoryTail(Option<PendingCheck>);

impl HistoryTail {
    /// Append the run (bounded). None, or the exit code when
    /// `--history-required` and the store failed (the verdict is out; the
    /// exit code says the infrastructure failed).
    pub fn finish(self) -> Option<i32> {
        let e = pipeline::finish_check(self.0?).err()?;
        crate::gate_eprintln!("gate: error: {}", crate::escape::terminal(&e.to_string()));
        Some(crate::error::exit_code_of(&e.into()))
    }
}

impl CheckPlan {
    /// Whether the runs come from recorded traces (nothing is run).
    pub(crate) fn is_replay(&self) -> bool {
        self.measure.is_replay()
    }

    /// Measure (or replay) and judge: `acquire` then `conclude`.
    pub fn execute(&self) -> anyhow::Result<Judged> {
        let first = self.acquire()?;
        self.conclude(first)
    }

    /// One measurement: a live run, or every replayed trace (loaded on
    /// several cores). Each trace is derived into its `Run` as it is loaded
    /// and dropped: the verdict reads only runs, so 64 nodes cost one
    /// node's samples.
    pub(crate) fn acquire(&self) -> anyhow::Result<Acquired> {
        let runs = measure::acquire_runs(
            &self.measure,
            1,
            &self.trace_dir,
            &self.config,
            measure::Keep {
                samples: false,
                series: self.plots,
                timeline: None,
            },
            |_| Ok(()),
        )?;
        Ok(Acquired { runs })
    }

    /// Judge the first measurement, rerun while the verdict is open (live
    /// runs only), then read the history (drift may raise the verdict).
    pub(crate) fn conclude(&self, first: Acquired) -> anyhow::Result<Judged> {
        let Acquired { mut runs } = first;
        // The history store, opened once: its healthy checks are the noise
        // model's prior; drift and the trend are read from it after the verdict.
        let mut history = self.history_plan.clone().map(CheckHistory::open);
        let history_spread = history
            .as_mut()
            .map(|h| h.healthy_spread(&self.baseline))
            .unwrap_or_default();
        let verdict = |runs: &[Run]| self.verdict_of(runs, &history_spread);
        let mut report = verdict(&runs);
        let first = report.verdict();
        let max_reruns = self.max_reruns;
        let mut reruns = 0;
        while reruns < max_reruns && needs_rerun(&report, reruns < self.confirm) {
            reruns += 1;
            crate::gate_eprintln!(
                "gate: the verdict is {} so far; rerun {reruns}/{max_reruns} to judge the runs together",
                report.verdict().as_str(),
            );
            if let (gate::RunVerdict::Disturbed, Some(limit), Some(last)) =
                (report.verdict(), self.wait_clean, runs.last())
            {
                let left = super::wait_clean::wait_for_quiet_gpus(last, limit);
                if !left.is_empty() {
                    crate::gate_eprintln!(
                        "gate: --wait-clean ran out with {} process(es) still on the GPU; rerunning anyway",
                        left.len()
                    );
                }
            }
            runs.extend(self.acquire()?.runs);
            report = verdict(&runs);
        }
        if reruns > 0 {
            report.warn(format!(
                "the first run's verdict was {}; {} runs were judged together (their spread is the new side's noise; {} looks at a Bonferroni-split 5 %)",
                first.as_str(),
                runs.len(),
                1 + max_reruns
            ));
        }
        // History in two bounded steps around the reports: drift (which may add
        // findings) is read before they are rendered; the run is appended only
        // after the verdict and every report are out, so nothing the store does
        // can take them away (history::pipeline).
        let pending = history.map(|h| {
            pipeline::before_check_report(
                h,
                &self.history,
                &self.config,
                &self.baseline,
                &runs,
                &self.cli_tags,
                &mut report,
            )
        });
        Ok(Judged {
            report,
            history: HistoryTail(pending),
        })
    }

    /// `gate::check` of the runs so far.
    fn verdict_of(
        &self,
        runs: &[Run],
        history_spread: &std::collections::BTreeMap<String, (f64, f64)>,
    ) -> CheckReport {
        let j = &self.judging;
        // Judge the clean runs when there are any (issue 38): a disturbed
        // run is no evidence about the change. The nodes of one run stay
        // together.
        let found: Vec<Option<gate::disturbance::Disturbance>> = runs
            .iter()
            .map(|r| gate::disturbance::detect(r, Some(&self.baseline)))
            .collect();
        let disturbed: Vec<bool> = found.iter().map(Option::is_some).collect();
        let left_out = disturbed.iter().filter(|d| **d).count();
        let clean: Vec<Run>;
        let inputs: &[Run] = if !j.multi_node && left_out > 0 && left_out < runs.len() {
            clean = (runs.iter().zip(&disturbed))
                .filter(|(_, d)| !**d)
                .map(|(r, _)| r.clone())
                .collect();
            &clean
        } else {
            runs
        };
        let mut report = gate::check(&gate::CheckInput {
            baseline: &self.baseline,
            baseline_source: self.baseline_source.clone(),
            config: &self.config,
            cli_threshold: j.threshold,
            runs: inputs,
            multi_node: j.multi_node,
            allow_env_mismatch: j.allow_env_mismatch,
            allow_command_change: j.allow_command_change,
            cli_tags: self.cli_tags.clone(),
            fail_on_improvement: j.fail_on_improvement,
            rules: &self.rules,
            acceptances: Some(&self.acceptances),
            looks: 1 + self.max_reruns,
            history_spread: history_spread.clone(),
        });
        if inputs.len() < runs.len() && !j.multi_node {
            let what: Vec<String> = found.iter().flatten().map(|d| d.text()).collect();
            report.warn_first(format!(
                "{left_out} of {} runs were DISTURBED (something outside the benchmark's process tree acted on them) and left out; the {} clean run(s) were judged: {}",
                runs.len(),
                inputs.len(),
                what.join(" | ")
            ));
        }
        report
    }
}

/// Whether a live check should rerun: a gated metric moved the bad way and
/// the noise left it open (the sequential test goes on), or, within
/// `--confirm`'s reruns, the run regressed. A failed benchmark, an
/// environment mismatch or too few samples are not noise: rerunning does
/// not judge them.
fn needs_rerun(r: &CheckReport, confirming: bool) -> bool {
    use gate::{RunVerdict, Verdict};
    match r.verdict() {
        RunVerdict::Error | RunVerdict::Invalid | RunVerdict::Unmeasured => false,
        // Every regression was acknowledged: nothing left to decide.
        RunVerdict::Accepted => false,
        RunVerdict::Regression => confirming,
        // Every run so far was disturbed: a rerun may be clean.
        RunVerdict::Inconclusive | RunVerdict::Disturbed => true,
        // A gated metric left open that did not decide the run (wall time
        // beside the benchmark's number): --confirm may still look again.
        RunVerdict::Pass => {
            confirming
                && r.metrics
                    .iter()
                    .any(|m| m.gated && m.verdict == Verdict::Inconclusive)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disturbed run is rerun (it may be clean next time); a regression
    /// only when confirming, a failed benchmark never.
    #[test]
    fn a_disturbed_run_is_rerun() {
        let mut r = crate::report::check::tests_support::sample_report();
        let mut at = |v: gate::RunVerdict| {
            r.set_verdict_for_test(v, v.exit_code(), Vec::new());
            r.clone()
        };
        assert!(needs_rerun(&at(gate::RunVerdict::Disturbed), false));
        let regression = at(gate::RunVerdict::Regression);
        assert!(!needs_rerun(&regression, false) && needs_rerun(&regression, true));
        assert!(!needs_rerun(&at(gate::RunVerdict::Error), true));
    }
}
