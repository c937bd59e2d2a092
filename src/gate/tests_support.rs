//! A hand-built report for the reporters' unit tests (names hold the
//! characters that break naive writers).

use crate::diagnose::{Finding, Severity};
use crate::gate::*;
use crate::metrics::{Direction, Statistic};

fn metric(
    id: &str,
    gpu: Option<usize>,
    b: f64,
    n: f64,
    verdict: Verdict,
    gated: bool,
) -> MetricResult {
    MetricResult {
        id: id.into(),
        benchmark: None,
        node: None,
        gpu,
        // A user metric's unit comes from gate.toml: free text, so it carries
        // the characters that break naive writers into the verdict sentence.
        unit: if id == "wall_time_s" {
            "s".into()
        } else if id == "dram_pct" {
            "% a|b <x> ]]> \u{1b}[0m".into()
        } else {
            "%".into()
        },
        direction: Direction::HigherIsBetter,
        statistic: Statistic::Mean,
        gated,
        first_class: id == "wall_time_s",
        baseline: Some(b),
        new: Some(n),
        change: Some(n - b),
        change_pct: Some((n - b) / b * 100.0),
        threshold_rel: 0.1,
        threshold_abs: 5.0,
        threshold_explicit: false,
        tolerance: Some(9.7),
        noise: Some(1.5),
        noise_source: Some(NoiseSource::RunToRun),
        detectable: None,
        z: Some((b - n) / 1.5),
        baseline_runs: 2,
        new_runs: 1,
        verdict,
        why: match verdict {
            Verdict::Regression | Verdict::Improvement | Verdict::Accepted => {
                Why::BeyondFloorAndNoise
            }
            Verdict::Inconclusive => Why::WithinNoise,
            Verdict::Info => Why::NotGated,
            Verdict::Missing => Why::NotMeasured,
            Verdict::Pass => Why::WithinFloor,
        },
        accepted: None,
    }
}

pub(crate) fn sample_report() -> CheckReport {
    let mut r = CheckReport {
        schema_version: REPORT_SCHEMA_VERSION,
        gate_version: crate::GATE_VERSION.into(),
        baseline: BaselineInfo {
            name: "demo".into(),
            source: "baselines/demo.toml".into(),
            created: "2026-11-29T10:00:00Z".into(),
            commit: Some("abc123".into()),
            runs: 2,
            gpu_model: "NVIDIA H200".into(),
            gpu_count: 2,
        },
        verdict: RunVerdict::Regression,
        exit_code: 1,
        inconclusive: Default::default(),
        reasons: vec!["1 regression beyond the floor and the noise: sm_active_pct".into()],
        warnings: vec![],
        multi_node: false,
        fail_on_improvement: false,
        trend: None,
        disturbance: Vec::new(),
        ab: None,
        runs: vec![RunInfo {
            source: "run\u{7}\"1\".jsonl".into(),
            command: "python train.py --tag ]]> \u{1b}[0m".into(),
            node: None,
            gpu_model: "NVIDIA H200".into(),
            gpu_count: 2,
            steady_samples: 600,
            valid_samples: 600,
            total_samples: 620,
            wall_time_s: Some(62.0),
            startup_s: Some(3.0),
            teardown_s: None,
            closed_by_until: false,
            exit_code: Some(0),
            signal: None,
            truncated: false,
            gpus: (0..2)
                .map(|i| crate::gate::GpuIdentity {
                    index: i + 4,
                    uuid: format!("GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd"),
                    model: "NVIDIA H200".into(),
                })
                .collect(),
            series: None,
        }],
        metrics: vec![
            metric("wall_time_s", None, 60.0, 62.0, Verdict::Pass, true),
            metric("sm_active_pct", None, 97.0, 45.0, Verdict::Regression, true),
            metric(
                "sm_active_pct",
                Some(0),
                97.0,
                50.0,
                Verdict::Regression,
                true,
            ),
            metric(
                "sm_active_pct",
                Some(1),
                97.0,
                40.0,
                Verdict::Regression,
                true,
            ),
            metric("dram_pct", None, 18.0, 88.0, Verdict::Info, false),
        ],
        diagnosis_text: vec![],
        diagnosis: vec![Finding {
            rule: "kernels_too_small".into(),
            severity: Severity::High,
            title: "Kernels too small".into(),
            evidence: vec!["sm_active_pct.mean 97 -> 45".into()],
            explanation: "SMs idle between <tiny> kernels".into(),
            next_steps: vec!["fuse ops".into()],
            score: 1.0,
            rows: vec![crate::diagnose::EvidenceRow {
                label: "SM active".into(),
                expr: "sm_active_pct.mean".into(),
                baseline: Some(97.0),
                value: 45.0,
                unit: Some("%".into()),
            }],
            explains_pct: None,
            benchmark: None,
            window: None,
        }],
        counts: Counts {
            pass: 1,
            regression: 3,
            info: 1,
            ..Default::default()
        },
    };
    r.diagnosis_text = r.diagnosis.iter().map(Finding::text).collect();
    r
}
