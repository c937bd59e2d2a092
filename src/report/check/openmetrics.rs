//! OpenMetrics text for GitLab's metrics report (`artifacts:reports:metrics`).
//!
//! - Names are in base units, with the unit as the name's suffix and a
//!   `# UNIT` line: `%` becomes a ratio (0..1), MiB bytes, MHz hertz, ms
//!   seconds (`gate_sm_active_ratio`, `gate_mem_used_bytes`,
//!   `gate_wall_time_seconds`); counts and user metrics without a known unit
//!   keep their value and get no `# UNIT`.
//! - Every series carries its `baseline` (a suite's workloads share one
//!   file, and GitLab keys a value by name and labels); the statistic is a
//!   label (`statistic="mean"`), as is `node`.
//! - One GPU's values are their own family (`gate_per_gpu_sm_active_ratio`),
//!   apart from the value over the GPUs (`gate_sm_active_ratio`), labelled
//!   with what dcgm-exporter labels them by, in snake_case as Prometheus'
//!   linter wants: `gpu` (NVML index), `uuid`, `model_name` (dcgm-exporter's
//!   `UUID`, `modelName`), so a join on the values works.
//! - The run's baseline and verdict are the Prometheus `_info` convention: a
//!   gauge `gate_run_info` of value 1 whose labels carry them (not the
//!   OpenMetrics `info` type, which `promtool check metrics` rejects).
//! - Values carry 3 significant digits: GitLab compares the values between
//!   the merge request and its target branch as strings, and 16 digits made
//!   every metric "changed".
//! - One `# TYPE` per family, its samples together, `# EOF` last.
//!
//! Only the new run's values are written: the target branch's pipeline
//! writes its own (the `gate-check` component runs there too).

use super::Reporter;
use crate::escape;
use crate::gate::CheckReport;

pub struct OpenMetrics;

/// Significant digits of every value.
pub(crate) const SIGNIFICANT_DIGITS: usize = 3;

/// A metric name part: `[a-zA-Z0-9_]`, anything else becomes `_`.
fn name_part(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// A value as written: [`SIGNIFICANT_DIGITS`] significant digits.
pub fn number(v: f64) -> String {
    crate::format::significant(v, SIGNIFICANT_DIGITS)
}

/// How a gate unit maps to a base unit: (the metric id's own suffix for it,
/// the base unit's name, factor to base units).
fn base_unit(unit: &str) -> Option<(&'static str, &'static str, f64)> {
    Some(match unit {
        "%" => ("_pct", "ratio", 0.01),
        "s" => ("_s", "seconds", 1.0),
        "ms" => ("_ms", "seconds", 1e-3),
        "MiB" => ("_mib", "bytes", 1024.0 * 1024.0),
        "MiB/s" => ("_mib_s", "bytes_per_second", 1024.0 * 1024.0),
        "MHz" => ("_mhz", "hertz", 1e6),
        "W" => ("_w", "watts", 1.0),
        "J" => ("_j", "joules", 1.0),
        "C" => ("_c", "celsius", 1.0),
        _ => return None,
    })
}

/// Family name, `# UNIT` (if any) and the factor to base units of a metric.
pub fn family(id: &str, unit: &str) -> (String, Option<&'static str>, f64) {
    match base_unit(unit) {
        Some((suffix, base, factor)) => {
            let stem = id.strip_suffix(suffix).unwrap_or(id);
            (
                format!("gate_{}_{base}", name_part(stem)),
                Some(base),
                factor,
            )
        }
        None => {
            let stem = id.strip_suffix("_per_s").map(|s| format!("{s}_per_second"));
            (
                format!("gate_{}", name_part(stem.as_deref().unwrap_or(id))),
                None,
                1.0,
            )
        }
    }
}

struct Family {
    name: String,
    kind: &'static str,
    unit: Option<&'static str>,
    help: String,
    samples: Vec<String>,
}

impl Reporter for OpenMetrics {
    fn render(&self, r: &CheckReport) -> String {
        render_many(&[r])
    }
}

/// Several checks (a suite's workloads) in one exposition: each family
/// once, every series labelled with its `baseline`.
pub fn render_many(reports: &[&CheckReport]) -> String {
    let mut families: Vec<Family> = Vec::new();
    let mut add = |name: String,
                   kind: &'static str,
                   unit: Option<&'static str>,
                   help: String,
                   labels: Vec<(&str, String)>,
                   v: f64| {
        let labels = if labels.is_empty() {
            String::new()
        } else {
            let inner: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape::openmetrics_label(v)))
                .collect();
            format!("{{{}}}", inner.join(","))
        };
        let line = format!("{name}{labels} {}", number(v));
        match families.iter_mut().find(|f| f.name == name) {
            Some(f) => f.samples.push(line),
            None => families.push(Family {
                name,
                kind,
                unit,
                help,
                samples: vec![line],
            }),
        }
    };
    for r in reports {
        let baseline = || vec![("baseline", r.baseline.name.clone())];
        add(
            "gate_run_info".into(),
            "gauge",
            None,
            "The run gate check judged: its baseline and verdict".into(),
            vec![
                ("baseline", r.baseline.name.clone()),
                ("verdict", r.verdict().as_str().into()),
            ],
            1.0,
        );
        add(
            "gate_regressions".into(),
            "gauge",
            None,
            "Gated metrics that regressed beyond the floor and the noise".into(),
            baseline(),
            r.counts.regression as f64,
        );
        add(
            "gate_exit_code".into(),
            "gauge",
            None,
            format!("Exit code of gate check: {}", crate::exit_code::listing()),
            baseline(),
            r.exit_code() as f64,
        );
        for m in &r.metrics {
            let Some(v) = m.new else { continue };
            let (name, unit, factor) = family(&m.id, &m.unit);
            // One GPU's values are their own family (`gate_per_gpu_*`), apart
            // from the value over the GPUs: a sum or mean over a family
            // then never mixes the two.
            let (name, whose) = match m.gpu {
                Some(_) => (name.replacen("gate_", "gate_per_gpu_", 1), "one GPU's "),
                None => (name, ""),
            };
            let help = format!(
                "{whose}{} over the steady window, in {}{}",
                m.id,
                unit.unwrap_or(if m.unit.is_empty() { "units" } else { &m.unit }),
                if m.gated { " (gated)" } else { "" }
            );
            let mut labels = baseline();
            labels.push(("statistic", m.statistic.as_str().to_string()));
            // A harness benchmark by its own name (the family is its id).
            if m.benchmark.is_some() {
                labels.push(("benchmark", m.shown_id()));
            }
            if let Some(n) = m.node {
                labels.push(("node", n.to_string()));
            }
            if let Some(g) = m.gpu {
                // dcgm-exporter's labels: the NVML index, UUID and model.
                let run = r.runs.get(m.node.unwrap_or(0)).or(r.runs.first());
                match run.and_then(|run| run.gpus.get(g)) {
                    Some(id) => {
                        labels.push(("gpu", id.index.to_string()));
                        labels.push(("uuid", id.uuid.clone()));
                        labels.push(("model_name", id.model.clone()));
                    }
                    None => labels.push(("gpu", g.to_string())),
                }
            }
            add(name, "gauge", unit, help, labels, v * factor);
        }
    }
    let mut out = String::new();
    for f in families {
        out.push_str(&format!("# TYPE {} {}\n", f.name, f.kind));
        if let Some(u) = f.unit {
            out.push_str(&format!("# UNIT {} {u}\n", f.name));
        }
        out.push_str(&format!(
            "# HELP {} {}\n",
            f.name,
            escape::openmetrics_label(&f.help)
        ));
        for l in f.samples {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_units_statistic_labels_and_eof() {
        let r = crate::report::check::tests_support::sample_report();
        let text = OpenMetrics.render(&r);
        assert!(text.ends_with("# EOF\n"));
        // 45 % -> 0.45 as a ratio; the statistic is a label.
        assert!(
            text.contains("gate_sm_active_ratio{baseline=\"demo\",statistic=\"mean\"} 0.45\n"),
            "{text}"
        );
        assert!(
            text.contains("gate_per_gpu_sm_active_ratio{baseline=\"demo\",statistic=\"mean\",gpu=\"5\",uuid=\"GPU-00000001-aaaa-bbbb-cccc-dddddddddddd\",model_name=\"NVIDIA H200\"} 0.4\n"),
            "{text}"
        );
        assert!(
            text.contains("# UNIT gate_sm_active_ratio ratio\n"),
            "{text}"
        );
        assert!(
            text.contains("# UNIT gate_wall_time_seconds seconds\n"),
            "{text}"
        );
        assert!(text.contains(
            "# TYPE gate_run_info gauge\n# HELP gate_run_info The run gate check judged: its baseline and verdict\ngate_run_info{baseline=\"demo\",verdict=\"regression\"} 1\n"
        ), "{text}");
        // Label names are snake_case (promtool's lint).
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((_, labels)) = l.split_once('{') else {
                continue;
            };
            for pair in labels.split("\",") {
                let name = pair.split('=').next().unwrap();
                assert!(
                    name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                    "label {name} in {l}"
                );
            }
        }
        // Each family's TYPE line appears once, its UNIT is its suffix, and
        // its samples follow it.
        let mut seen = std::collections::BTreeSet::new();
        let mut current = String::new();
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                current = rest.split(' ').next().unwrap().to_string();
                assert!(seen.insert(current.clone()), "family {current} twice");
            } else if let Some(rest) = l.strip_prefix("# UNIT ") {
                let (fam, unit) = rest.split_once(' ').unwrap();
                assert_eq!(fam, current);
                assert!(fam.ends_with(&format!("_{unit}")), "{l}");
            } else if !l.starts_with('#') {
                let name = l.split(['{', ' ']).next().unwrap();
                assert!(name.starts_with(current.as_str()), "{l} outside {current}");
            }
        }
    }

    #[test]
    fn values_have_three_significant_digits() {
        assert_eq!(number(97.14999999), "97.1");
        assert_eq!(number(0.0123456), "0.0123");
        assert_eq!(number(1234567.0), "1230000");
        assert_eq!(number(-0.00000001), "-0.00000001");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(-0.0), "0");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::NEG_INFINITY), "-Inf");
        // MiB -> bytes, % -> ratio, MHz -> hertz.
        assert_eq!(
            family("target_mem_mib", "MiB"),
            ("gate_target_mem_bytes".into(), Some("bytes"), 1048576.0)
        );
        assert_eq!(family("sm_clock_mhz", "MHz").0, "gate_sm_clock_hertz");
        assert_eq!(
            family("pcie_tx_mib_s", "MiB/s").0,
            "gate_pcie_tx_bytes_per_second"
        );
        assert_eq!(
            family("target_ctx_switches_per_s", "1/s"),
            ("gate_target_ctx_switches_per_second".into(), None, 1.0)
        );
        assert_eq!(family("samples_per_s", "samples/s").1, None);
    }
}
