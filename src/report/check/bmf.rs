//! Bencher Metric Format (BMF) export: the new run's numbers as
//! `{"benchmark": {"measure": {"value": x}}}`
//! (bencher.dev/docs/reference/bencher-metric-format), so `bencher run
//! --adapter json --file FILE` or any BMF reader can track them. The
//! benchmark is the baseline's name (`NAME.gpuG`, `NAME.nodeN` for one GPU
//! or node), the measure the metric id; metrics not measured in this run are
//! left out. Only values: gate's noise bands are about a change, not
//! bounds of the value.

use super::Reporter;
use crate::gate::CheckReport;

pub struct Bmf;

impl Reporter for Bmf {
    fn render(&self, report: &CheckReport) -> String {
        let mut s = serde_json::to_string_pretty(&serde_json::Value::Object(document(report)))
            .expect("a JSON value always serializes");
        s.push('\n');
        s
    }
}

/// The document's benchmarks, by name (a suite's BMF merges its workloads').
pub fn document(report: &CheckReport) -> serde_json::Map<String, serde_json::Value> {
    let mut doc = serde_json::Map::new();
    for m in &report.metrics {
        let Some(value) = m.new.filter(|v| v.is_finite()) else {
            continue;
        };
        let mut bench = report.baseline.name.clone();
        if let Some(n) = m.node {
            bench.push_str(&format!(".node{n}"));
        }
        if let Some(g) = m.gpu {
            bench.push_str(&format!(".gpu{g}"));
        }
        let entry = doc
            .entry(bench)
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
        entry[m.id.as_str()] = serde_json::json!({ "value": value });
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_measured_metric_is_a_measure_of_the_baseline() {
        let r = crate::report::check::tests_support::sample_report();
        let v: serde_json::Value = serde_json::from_str(&Bmf.render(&r)).unwrap();
        let bench = &v[r.baseline.name.as_str()];
        for m in r
            .metrics
            .iter()
            .filter(|m| m.new.is_some() && m.gpu.is_none() && m.node.is_none())
        {
            assert_eq!(bench[m.id.as_str()]["value"].as_f64(), m.new, "{}", m.id);
        }
    }
}
