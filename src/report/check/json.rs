//! JSON reporter: the whole `CheckReport` (with `schema_version`), for
//! scripts and dashboards. Field names are part of the interface.

use super::Reporter;
use crate::gate::CheckReport;

pub(crate) struct Json;

impl Reporter for Json {
    fn render(&self, report: &CheckReport) -> String {
        let mut s =
            serde_json::to_string_pretty(&value(report)).expect("a JSON value always serializes");
        s.push('\n');
        s
    }
}

/// The JSON document as a value (a suite's JSON holds one per workload).
pub fn value(report: &CheckReport) -> serde_json::Value {
    let mut v = serde_json::to_value(report).expect("a check report always serializes");
    // The verdict's sentence beside its machine-readable `why`.
    if let Some(metrics) = v.get_mut("metrics").and_then(|m| m.as_array_mut()) {
        for (json, m) in metrics.iter_mut().zip(&report.metrics) {
            json["reason"] = super::words::metric_reason(m).into();
            // What every other reporter shows of the context metrics
            // (issue 30.2): moved beyond the floor and the noise.
            json["moved"] = super::moved_beyond_noise(m).into();
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_schema_version_and_verdict() {
        let r = crate::report::check::tests_support::sample_report();
        let v: serde_json::Value = serde_json::from_str(&Json.render(&r)).unwrap();
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["verdict"], "regression");
        assert_eq!(v["metrics"][0]["id"], "wall_time_s");
        assert!(v["metrics"][0]["reason"].as_str().unwrap().contains("->"));
        assert!(v["metrics"][0]["why"].is_string());
        assert!(v["metrics"][0]["moved"].is_boolean());
    }
}
