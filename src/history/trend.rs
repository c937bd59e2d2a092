//! The recent past of a check's gated metrics, for the PR comment and the
//! JSON report: the last runs recorded on the target branch against the
//! same baseline, each gated metric's values (oldest first, this run last)
//! drawn as a sparkline of unicode blocks, and the drift findings of this
//! check. Pure: built from rows already read from the store.

use super::{DriftRow, RunRecord};
use crate::gate::{CheckReport, MetricTrend, Trend, TrendDrift};

/// How many earlier runs a trend shows (plus this run).
pub const TREND_RUNS: usize = 10;

/// Eight heights, lowest first (U+2581..U+2588).
const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
/// A run without a value for the metric.
const GAP: char = '·';

/// `values` as blocks scaled from their minimum to their maximum (all
/// equal: the middle block); `None` is a gap.
pub fn sparkline(values: &[Option<f64>]) -> String {
    let finite: Vec<f64> = values
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    let (lo, hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    values
        .iter()
        .map(|v| match v.filter(|v| v.is_finite()) {
            None => GAP,
            Some(_) if hi <= lo => BLOCKS[3],
            Some(v) => {
                let i = ((v - lo) / (hi - lo) * (BLOCKS.len() - 1) as f64).round() as usize;
                BLOCKS[i.min(BLOCKS.len() - 1)]
            }
        })
        .collect()
}

/// The trend of `report`'s gated metrics (the value over GPUs and nodes)
/// from `previous` (newest first, as the store returns them) on `branch`,
/// and this check's `drift` findings.
pub fn build(
    report: &CheckReport,
    previous: &[RunRecord],
    branch: Option<String>,
    drift: &[DriftRow],
) -> Trend {
    let earlier: Vec<&RunRecord> = previous.iter().take(TREND_RUNS).rev().collect();
    let metrics = report
        .metrics
        .iter()
        .filter(|m| m.gated && m.gpu.is_none() && m.node.is_none())
        .map(|m| {
            let label = m.label();
            let mut values: Vec<Option<f64>> = earlier
                .iter()
                .map(|r| {
                    r.metrics
                        .iter()
                        .find(|x| x.metric == label)
                        .and_then(|x| x.value)
                })
                .collect();
            values.push(m.new);
            MetricTrend {
                metric: label,
                unit: m.unit.clone(),
                sparkline: sparkline(&values),
                values,
            }
        })
        .collect();
    Trend {
        branch,
        runs: earlier.len(),
        commits: earlier.iter().map(|r| r.commit.clone()).collect(),
        metrics,
        drift: drift
            .iter()
            .map(|d| TrendDrift {
                metric: d.metric.clone(),
                shift_pct: d.shift_pct,
                failed: d.failed,
                message: d.message.clone(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_scales_from_min_to_max_with_gaps() {
        assert_eq!(
            sparkline(&[Some(1.0), Some(2.0), None, Some(8.0), Some(4.5)]),
            "▁▂·█▅"
        );
        assert_eq!(sparkline(&[Some(3.0), Some(3.0)]), "▄▄");
        assert_eq!(sparkline(&[]), "");
        assert_eq!(sparkline(&[None, Some(f64::NAN)]), "··");
    }
}
