//! A run's report as JSON (`gate report --format json` / `--json FILE`):
//! field names are part of the interface.

use super::{Run, RunReport, RunReporter, REPORT_SCHEMA_VERSION};
use serde::Serialize;
use std::io::Write as _;

/// The JSON document of `gate report --format json` / `--json FILE`: all
/// runs in one document with `schema_version`.
pub struct Json;

impl RunReporter for Json {
    fn render(&self, runs: &[Run]) -> String {
        let reports: Vec<&RunReport> = runs.iter().map(|r| &r.report).collect();
        render(&reports)
    }
}

impl Json {
    /// `render`, written to `out` as it is made (the same bytes): a report
    /// of many nodes is never held whole.
    pub fn write(&self, runs: &[Run], out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let reports: Vec<&RunReport> = runs.iter().map(|r| &r.report).collect();
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
    runs: &'a [&'a RunReport],
}

fn doc<'a>(reports: &'a [&'a RunReport]) -> Doc<'a> {
    Doc {
        schema_version: REPORT_SCHEMA_VERSION,
        gate_version: crate::GATE_VERSION,
        runs: reports,
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
    use crate::report::run::tests_support::report;
    use crate::synthetic::Signature;

    #[test]
    fn the_streamed_document_is_the_rendered_one() {
        let t = crate::synthetic::trace(&Signature::contention(), 2);
        let r = RunReport::build(&t, &crate::diagnose::RuleSet::builtin(), 1000.0);
        let runs = [Run::new(r.clone(), &t), Run::new(r, &t)];
        let mut streamed = Vec::new();
        Json.write(&runs, &mut streamed).unwrap();
        assert_eq!(String::from_utf8(streamed).unwrap(), Json.render(&runs));
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
