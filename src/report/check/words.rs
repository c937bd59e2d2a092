//! The words of a metric's verdict: what `gate::decide` found, as one
//! sentence. Every check reporter takes its explanation from here, so a
//! verdict reads the same in the terminal, Markdown, JUnit and JSON.

use crate::format::number as fmt_num;
use crate::gate::{MetricResult, NoiseSource, Verdict, Why};

/// One sentence: what moved, against which floor and noise band, and why
/// that gives this verdict (with what to do when it is inconclusive).
pub fn metric_reason(m: &MetricResult) -> String {
    let unit = if m.unit.is_empty() || m.unit == "count" {
        String::new()
    } else {
        format!(" {}", m.unit)
    };
    let moved = || match (m.baseline, m.new) {
        (Some(b), Some(x)) => format!(
            "{} {} -> {}{unit} ({}{}{unit})",
            m.statistic.as_str(),
            fmt_num(b),
            fmt_num(x),
            if x >= b { "+" } else { "" },
            fmt_num(x - b)
        ),
        _ => m.statistic.as_str().to_string(),
    };
    let floor = || {
        let f = m.tolerance.map(fmt_num).unwrap_or_else(|| "n/a".into());
        let whose = if m.threshold_explicit {
            "your threshold"
        } else {
            "the practical floor"
        };
        format!(
            "{whose} {f}{unit} (max of {} % of the baseline and {}{unit})",
            fmt_num(m.threshold_rel * 100.0),
            fmt_num(m.threshold_abs)
        )
    };
    let band = || {
        let b = m.noise.map(fmt_num).unwrap_or_else(|| "n/a".into());
        let from = match m.noise_source {
            Some(NoiseSource::RunToRun) => format!(
                "from the spread of {} baseline and {} new run(s)",
                m.baseline_runs, m.new_runs
            ),
            Some(NoiseSource::WithinRun) => {
                "from each run's own interval and the learned run-to-run prior".to_string()
            }
            Some(NoiseSource::Moderated) => format!(
                "from the spread of {} baseline and {} new run(s) pooled with the prior",
                m.baseline_runs, m.new_runs
            ),
            Some(NoiseSource::Paired) => {
                let interval = m.change.zip(m.noise).map_or(String::new(), |(c, n)| {
                    format!(
                        "; paired 95 % interval of B - A: [{}, {}]{unit}",
                        fmt_num(c - n),
                        fmt_num(c + n)
                    )
                });
                format!(
                    "paired t on the B - A differences of {} interleaved round(s){interval}",
                    m.new_runs
                )
            }
            None => String::new(),
        };
        format!("the noise band ±{b}{unit} ({from})")
    };
    if let (Verdict::Accepted, Some(a)) = (m.verdict, &m.accepted) {
        let how = match m.why {
            Why::BeyondExplicitThreshold => format!("is worse than {}", floor()),
            _ => format!("is worse than {} and {}", floor(), band()),
        };
        return format!(
            "ACCEPTED regression: {} {how}; acknowledged by {} (up to {} % the bad way): {}",
            moved(),
            a.by,
            fmt_num(a.max_change_pct),
            a.reason
        );
    }
    match (m.why, m.verdict) {
        (Why::BeyondFloorAndNoise, Verdict::Improvement) => format!(
            "{} is better by more than {} and {}; consider refreshing the baseline",
            moved(),
            floor(),
            band()
        ),
        (Why::BeyondFloorAndNoise, _) => {
            format!("{} is worse than {} and {}", moved(), floor(), band())
        }
        (Why::WithinNoise, _) => format!(
            "{} exceeds {} but not {}: inconclusive; a live check reruns the benchmark (--max-reruns N), or capture the baseline with more --runs",
            moved(),
            floor(),
            band()
        ),
        (Why::WithinMeasuredNoise, _) => format!(
            "{} exceeds {} but not the runs' measured spread (the wider {} allows for how little {} baseline run(s) know of it): no evidence of a change",
            moved(),
            floor(),
            band(),
            m.baseline_runs
        ),
        (Why::NoNoiseEstimate, _) => format!(
            "{} exceeds {}, but nothing estimates its noise (one value per run, {} baseline run(s), {} new run(s)), so it is inconclusive; capture the baseline with --runs 3, or let a live check rerun (--max-reruns N)",
            moved(),
            floor(),
            m.baseline_runs,
            m.new_runs
        ),
        (Why::BeyondExplicitThreshold, _) => format!(
            "{} is worse than {}; nothing estimates its noise, so your threshold alone decides",
            moved(),
            floor()
        ),
        (Why::WithinFloor, _) => format!("{} within {}", moved(), floor()),
        (Why::NotGated, _) => "not gated (neutral or disabled): reported for context".into(),
        (Why::DecidedByBenchmark, _) => format!(
            "{}; not gated in this check: the benchmark's own number (gate.toml) decided, this counter explains",
            moved()
        ),
        (Why::FasterMath, _) => format!(
            "{}; not a regression: tensor-core activity rose beyond its noise, so the GPU did its math faster and waited more (busy time is not speed; declare the benchmark's throughput in gate.toml to judge speed)",
            moved()
        ),
        (Why::NotComparable, _) => format!(
            "{}; not judged: one side counts from the end of warm-up, the other from the start (see the warnings)",
            moved()
        ),
        (Why::Disturbance, _) => format!(
            "{}; not gated in this run: something outside the benchmark's process tree moved it (see the disturbance warning)",
            moved()
        ),
        (Why::NotInBaseline, Verdict::Missing) => {
            "not in the baseline, so not judged; re-capture the baseline to gate it".into()
        }
        (Why::NotInBaseline, _) => "not in the baseline".into(),
        (Why::NotMeasured, Verdict::Missing) => format!(
            "in the baseline but not measured in this run ({} unsupported, GPM unavailable, or the benchmark did not print it)",
            m.shown_name()
        ),
        (Why::NotMeasured, _) => "not measured in this run".into(),
    }
}

/// `gate ab`'s rounds in words, one line each (unescaped: each reporter
/// escapes for its medium): what ran, in which order, when it stopped, and
/// each gated metric's per-round `B - A` with its paired interval.
pub fn ab_lines(ab: &crate::gate::AbInfo) -> Vec<String> {
    let n = ab.rounds.len();
    let mut lines = vec![
        format!(
            "gate ab: B judged against A over {n} interleaved round(s) in ABBA order ({}), paired t on the per-round differences; looks after round(s) {}{}",
            ab.rounds.iter().map(|r| r.order.as_str()).collect::<Vec<_>>().join(" "),
            ab.looks.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", "),
            if ab.stopped_early {
                format!(": stopped after round {n} of {}, the interval decided", ab.rounds_planned)
            } else {
                String::new()
            }
        ),
        format!("A: {}", ab.a_command),
        format!("B: {}", ab.b_command),
    ];
    for d in &ab.differences {
        let unit = if d.unit.is_empty() || d.unit == "count" {
            String::new()
        } else {
            format!(" {}", d.unit)
        };
        let mean = if d.values.is_empty() {
            f64::NAN
        } else {
            d.values.iter().sum::<f64>() / d.values.len() as f64
        };
        lines.push(format!(
            "{}: B - A = {}{unit}, paired 95 % interval {} (per round: {})",
            d.metric,
            fmt_num(mean),
            d.interval
                .map(|[lo, hi]| format!("[{}, {}]{unit}", fmt_num(lo), fmt_num(hi)))
                .unwrap_or_else(|| "n/a (nothing estimates its noise)".into()),
            d.values
                .iter()
                .map(|v| fmt_num(*v))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    lines
}
