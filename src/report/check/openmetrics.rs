//! OpenMetrics text for GitLab's metrics report (`artifacts:reports:metrics`):
//! flat names that carry the metric, its statistic and so its unit
//! (`gate_sm_active_pct_mean{gpu="0"} 97.1`), one `# TYPE` per family, all
//! samples of a family together, and the mandatory `# EOF` last line.
//! GitLab compares these values between the merge request and its target
//! branch, so only the new run's values are written.

use super::Reporter;
use crate::escape;
use crate::gate::CheckReport;

pub struct OpenMetrics;

/// A metric name part: `[a-zA-Z0-9_]`, anything else becomes `_`.
fn name_part(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

impl Reporter for OpenMetrics {
    fn render(&self, r: &CheckReport) -> String {
        // (family, help, lines) in first-seen order.
        let mut families: Vec<(String, String, Vec<String>)> = Vec::new();
        let mut add = |family: String, help: String, labels: Vec<(String, String)>, v: f64| {
            let labels = if labels.is_empty() {
                String::new()
            } else {
                let inner: Vec<String> = labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", escape::openmetrics_label(v)))
                    .collect();
                format!("{{{}}}", inner.join(","))
            };
            let line = format!("{family}{labels} {}", number(v));
            match families.iter_mut().find(|f| f.0 == family) {
                Some(f) => f.2.push(line),
                None => families.push((family, help, vec![line])),
            }
        };
        let baseline = vec![("baseline".to_string(), r.baseline.name.clone())];
        add(
            "gate_verdict".into(),
            "Run verdict of gate check: 1 for the verdict of this run".into(),
            vec![
                ("baseline".into(), r.baseline.name.clone()),
                ("verdict".into(), r.verdict.as_str().into()),
            ],
            1.0,
        );
        add(
            "gate_regressions".into(),
            "Metrics that regressed beyond threshold and noise".into(),
            baseline.clone(),
            r.counts.regression as f64,
        );
        add(
            "gate_exit_code".into(),
            "Exit code of gate check".into(),
            baseline,
            r.exit_code as f64,
        );
        for m in &r.metrics {
            let Some(v) = m.new else { continue };
            let family = format!("gate_{}_{}", name_part(&m.id), m.statistic.as_str());
            let help = format!(
                "{} of {} in {} over the steady window{}",
                m.statistic.as_str(),
                m.id,
                if m.unit.is_empty() { "units" } else { &m.unit },
                if m.gated { " (gated)" } else { "" }
            );
            let mut labels = Vec::new();
            if let Some(n) = m.node {
                labels.push(("node".to_string(), n.to_string()));
            }
            if let Some(g) = m.gpu {
                labels.push(("gpu".to_string(), g.to_string()));
            }
            add(family, help, labels, v);
        }
        let mut out = String::new();
        for (family, help, lines) in families {
            out.push_str(&format!("# TYPE {family} gauge\n"));
            out.push_str(&format!(
                "# HELP {family} {}\n",
                escape::openmetrics_label(&help)
            ));
            for l in lines {
                out.push_str(&l);
                out.push('\n');
            }
        }
        out.push_str("# EOF\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_contiguous_and_end_with_eof() {
        let r = crate::report::check::tests_support::sample_report();
        let text = OpenMetrics.render(&r);
        assert!(text.ends_with("# EOF\n"));
        assert!(text.contains("gate_sm_active_pct_mean 45\n"), "{text}");
        assert!(
            text.contains("gate_sm_active_pct_mean{gpu=\"1\"} 40\n"),
            "{text}"
        );
        assert!(text.contains("gate_verdict{baseline=\"demo\",verdict=\"regression\"} 1"));
        // Each family's TYPE line appears once and its samples follow it.
        let types: Vec<&str> = text.lines().filter(|l| l.starts_with("# TYPE")).collect();
        let mut uniq = types.clone();
        uniq.dedup();
        assert_eq!(types.len(), uniq.len());
        let mut seen = std::collections::BTreeSet::new();
        let mut current = String::new();
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let fam = l.split(['{', ' ']).next().unwrap().to_string();
            if fam != current {
                assert!(seen.insert(fam.clone()), "family {fam} split");
                current = fam;
            }
        }
    }
}
