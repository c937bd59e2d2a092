//! Bencher Metric Format (BMF) export: the new run's numbers as
//! `{"benchmark": {"measure": {"value": x}}}`
//! (bencher.dev/docs/reference/bencher-metric-format), so `bencher run
//! --adapter json --file FILE` or any BMF reader can track them. The
//! benchmark is the baseline's name (`NAME.gpuG`, `NAME.nodeN` for one GPU
//! or node), the measure the metric as people read it (`shown_id`: a
//! harness benchmark by its own name, `py.test_sum[10]`, else the metric
//! id); metrics not measured in this run are left out.
//!
//! `lower_value`/`upper_value` are the value minus and plus its noise band
//! (the 95 % half-width of a change, `MetricResult::noise`) when the band is
//! known: the range a run must leave before gate calls it a change, so
//! Bencher draws what gate would not flag. It is a band of the change, wider
//! than an interval of this one value (it holds the baseline's spread too),
//! and is left out, not guessed, when the noise could not be estimated.

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
        let mut measure = serde_json::json!({ "value": value });
        if let Some(band) = m.noise.filter(|b| b.is_finite() && *b >= 0.0) {
            measure["lower_value"] = (value - band).into();
            measure["upper_value"] = (value + band).into();
        }
        entry[m.shown_id().as_str()] = measure;
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
            let measure = &bench[m.id.as_str()];
            assert_eq!(measure["value"].as_f64(), m.new, "{}", m.id);
            let (v, band) = (m.new.unwrap(), m.noise.unwrap());
            assert_eq!(measure["lower_value"].as_f64(), Some(v - band), "{}", m.id);
            assert_eq!(measure["upper_value"].as_f64(), Some(v + band), "{}", m.id);
        }
        // No noise estimate: the value alone, no made-up bounds.
        let mut r = r;
        r.metrics.iter_mut().for_each(|m| m.noise = None);
        let v: serde_json::Value = serde_json::from_str(&Bmf.render(&r)).unwrap();
        let measure = &v[r.baseline.name.as_str()]["wall_time_s"];
        assert!(measure.get("lower_value").is_none(), "{measure}");
        assert!(measure.get("upper_value").is_none(), "{measure}");
    }
}
