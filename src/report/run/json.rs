//! A run's report as JSON (`gate report --format json` / `--json FILE`):
//! field names are part of the interface.
//!
//! Bounded like the HTML: the statistics, suspects and problem intervals
//! are exact, and the timeline (each GPU's panorama slices) keeps to
//! `TIMELINE_POINTS` slices per GPU in the whole document, whatever the
//! runs' length: each run keeps `timeline_rows(runs)`, consecutive slices
//! joined when it has more (`Panorama::joined`). A 1-hour report was 7.0 MB and
//! a 24-hour one 5.7 MB (2,000 and 1,440 slices per GPU), a 64-node one
//! 450 MB.

use super::{RunReport, RunReporter, REPORT_SCHEMA_VERSION, TIMELINE_POINTS};
use serde::Serialize;
use std::io::Write as _;

/// The JSON document of `gate report --format json` / `--json FILE`: all
/// runs in one document with `schema_version`.
pub(crate) struct Json;

impl RunReporter for Json {
    fn render(&self, runs: &[RunReport]) -> String {
        let reports: Vec<&RunReport> = runs.iter().collect();
        render(&reports)
    }
}

impl Json {
    /// `render`, written to `out` as it is made (the same bytes): a report
    /// of many nodes is never held whole.
    pub fn write(&self, runs: &[RunReport], out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let reports: Vec<&RunReport> = runs.iter().collect();
        let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
        serde_json::to_writer_pretty(&mut out, &doc(&reports))?;
        out.write_all(b"\n")?;
        out.flush()
    }
}

#[derive(Serialize)]
struct Doc<'a> {
    schema_version: u32,
    gate_version: &'a str,
    runs: Vec<Bounded<'a>>,
}

/// A run's report with its timeline kept to `rows` slices per GPU.
struct Bounded<'a> {
    report: &'a RunReport,
    rows: usize,
}

impl Serialize for Bounded<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.report.panorama.joined(self.rows) {
            None => self.report.serialize(s),
            // One run's copy at a time, dropped once written.
            Some(panorama) => RunReport {
                panorama,
                ..self.report.clone()
            }
            .serialize(s),
        }
    }
}

/// Slices each GPU of each run keeps when a document holds `runs` runs:
/// `TIMELINE_POINTS` shared among them, at least one.
pub(crate) fn timeline_rows(runs: usize) -> usize {
    (TIMELINE_POINTS / runs.max(1)).max(1)
}

fn doc<'a>(reports: &'a [&'a RunReport]) -> Doc<'a> {
    let rows = timeline_rows(reports.len());
    Doc {
        schema_version: REPORT_SCHEMA_VERSION,
        gate_version: crate::GATE_VERSION,
        runs: reports
            .iter()
            .map(|&report| Bounded { report, rows })
            .collect(),
    }
}

fn render(reports: &[&RunReport]) -> String {
    let mut s = serde_json::to_string_pretty(&doc(reports)).expect("report serialises");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::panorama::Problem;
    use crate::report::run::tests_support::report;
    use crate::synthetic::Signature;

    #[test]
    fn the_streamed_document_is_the_rendered_one() {
        let t = crate::synthetic::trace(&Signature::contention(), 2);
        let r = RunReport::build(&t, &crate::diagnose::RuleSet::builtin(), 1000.0);
        let runs = [r.clone(), r];
        let mut streamed = Vec::new();
        Json.write(&runs, &mut streamed).unwrap();
        assert_eq!(String::from_utf8(streamed).unwrap(), Json.render(&runs));
    }

    /// A report of one GPU over `seconds`, at 1 s slices.
    fn long_report(seconds: f64, seed: u64) -> (crate::trace::Trace, RunReport) {
        let mut sig = Signature::contention().with_seed(seed);
        sig.duration_s = seconds;
        let t = crate::synthetic::trace(&sig, 1);
        let r = RunReport::build(&t, &crate::diagnose::RuleSet::builtin(), 1000.0);
        (t, r)
    }

    fn slices(doc: &serde_json::Value, run: usize) -> &Vec<serde_json::Value> {
        doc["runs"][run]["panorama"]["gpus"][0]["slices"]
            .as_array()
            .unwrap()
    }

    #[test]
    fn the_timeline_keeps_to_the_same_rule_at_every_length_and_the_statistics_stay_exact() {
        for (seconds, runs) in [(900.0, 1), (3000.0, 1), (7000.0, 1), (900.0, 2), (900.0, 5)] {
            let made: Vec<_> = (0..runs).map(|i| long_report(seconds, i as u64)).collect();
            let reports: Vec<&RunReport> = made.iter().map(|(_, r)| r).collect();
            let doc: serde_json::Value = serde_json::from_str(&render(&reports)).unwrap();
            let rows = timeline_rows(runs);
            assert_eq!(rows, TIMELINE_POINTS / runs);
            for (i, (_, r)) in made.iter().enumerate() {
                let full = r.panorama.gpus[0].slices.len();
                let kept = slices(&doc, i).len();
                let k = full.div_ceil(rows).max(1);
                assert_eq!(kept, full.div_ceil(k), "{seconds} s, {runs} runs");
                assert!(
                    kept <= rows && (k == 1 || kept > rows / 2),
                    "{kept} of {rows}"
                );
                let width = doc["runs"][i]["panorama"]["slice_ms"].as_f64().unwrap();
                assert_eq!(width, r.panorama.slice_ms * k as f64);
                // Exact: the statistics and the problem intervals are the
                // full report's, value for value.
                let exact = serde_json::to_value(r).unwrap();
                for key in ["stats", "suspects", "features", "processes"] {
                    assert_eq!(doc["runs"][i][key], exact[key], "{key}");
                }
                assert_eq!(
                    doc["runs"][i]["panorama"]["intervals"],
                    exact["panorama"]["intervals"]
                );
            }
        }
    }

    #[test]
    fn a_joined_slice_is_the_mean_of_its_members() {
        let (_, r) = long_report(3000.0, 7);
        let full = &r.panorama.gpus[0].slices;
        let joined = (r.panorama.joined(TIMELINE_POINTS)).expect("3000 slices are joined");
        let k = full.len().div_ceil(TIMELINE_POINTS);
        assert!(k >= 2, "{} slices", full.len());
        assert_eq!(joined.slice_ms, r.panorama.slice_ms * k as f64);
        for (j, s) in joined.gpus[0].slices.iter().enumerate() {
            let members = &full[j * k..((j + 1) * k).min(full.len())];
            assert_eq!(s.start_ms, members[0].start_ms);
            assert_eq!(s.end_ms, members[members.len() - 1].end_ms);
            for c in 0..s.values.len() {
                let got: Vec<f64> = members.iter().filter_map(|m| m.values[c]).collect();
                let want = (!got.is_empty()).then(|| got.iter().sum::<f64>() / got.len() as f64);
                assert_eq!(s.values[c], want, "slice {j}, column {c}");
            }
            for p in Problem::ALL {
                let any = members.iter().any(|m| m.problems.contains(&p));
                assert_eq!(s.problems.contains(&p), any);
            }
        }
        assert!(r.panorama.joined(full.len()).is_none());
    }

    #[test]
    fn json_is_deterministic_and_missing_is_null() {
        let mut sig = Signature::healthy();
        sig.no_gpm = true;
        let a = render(&[&report(&sig, 1)]);
        let b = render(&[&report(&sig, 1)]);
        assert_eq!(a, b);
        let v: serde_json::Value = serde_json::from_str(&a).unwrap();
        let run = &v["runs"][0];
        let sm = run["stats"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["metric"] == "sm_active_pct")
            .unwrap();
        assert!(sm["p50"].is_null());
        assert_eq!(run["suspects"][0]["rule"], "clock_power_capped");
        assert!(run["panorama"]["gpus"][0]["slices"][5]["values"][1].is_null());
    }
}
