//! `gate history --html FILE`: one self-contained trend page (inline CSS and
//! SVG; no script, font, image or network), per baseline and metric gated in
//! any of its runs (a counter that the benchmark's declared number made
//! context in the checks is still charted, marked as context, with its
//! moves: it is never "unchanged" because its rows are ungated):
//!
//! - each run's value, one line per branch;
//! - the baseline's band (baseline value +- the metric's tolerance) as a
//!   shaded step, which moves where the baseline was refreshed;
//! - baseline refreshes (a `capture`, or a new baseline version between two
//!   checks) as dashed vertical lines;
//! - regressions as red dots labelled with their top cause's rule, drift
//!   findings as orange triangles; both also listed in words under the chart
//!   (a screenshot or a printout has no tooltips).
//!
//! Deterministic for the same runs (no clock): numbers at fixed precision,
//! maps iterated in order. Every string from the database is escaped.

use super::{RunKind, RunRecord, StoredDirection, StoredStatistic};
use crate::escape::html as escape;
use crate::format::number as fmt_num;
use crate::gate::Verdict;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

const WIDTH: f64 = 1200.0;
const HEIGHT: f64 = 240.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 24.0;
const BOTTOM: f64 = 34.0;
/// Said in the gap of a broken axis.
const BREAK_NOTE: &str = "axis broken: runs off the main scale, at their true values";
/// At most this many regression labels per chart (the list below has all).
const MAX_LABELS: usize = 12;
const PALETTE: [&str; 6] = [
    "#1f6feb", "#8250df", "#1a7f37", "#bf8700", "#0a7e8c", "#6e7781",
];

const STYLE: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px;color:#1d2330;background:#fff;max-width:1240px}
h1{font-size:22px;margin:0 0 6px}h2{font-size:17px;margin:26px 0 4px;border-bottom:1px solid #d5d9e0;padding-bottom:4px}
.meta{color:#4a5568;font-size:13px;line-height:1.5}.meta code{background:#f1f3f6;padding:1px 4px;border-radius:3px}
.legend{font-size:12px;color:#4a5568;margin:4px 0}.legend span{margin-right:14px;white-space:nowrap}
.sw{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:-1px;border-radius:2px}
ul.events{font-size:13px;margin:4px 0 0;padding-left:20px}ul.events li{margin:2px 0}
.reg{color:#c0392b;font-weight:600}.drift{color:#b34700;font-weight:600}.ref{color:#555;font-weight:600}
svg{display:block;max-width:100%;height:auto}svg text{font-family:inherit}
"#;

/// One chart's data: a baseline's metric over the runs, oldest first.
struct Chart<'a> {
    baseline: &'a str,
    metric: &'a str,
    unit: String,
    statistic: StoredStatistic,
    direction: StoredDirection,
    /// (x index, run, row) for runs that have this metric.
    points: Vec<(usize, &'a RunRecord, &'a super::MetricRow)>,
    refreshes: Vec<(usize, &'a RunRecord)>,
    runs: usize,
}

/// The page for `runs` (newest first, as the store returns them, gated
/// metric rows loaded). `title_scope` says what was filtered (already
/// plain text; escaped here).
pub fn render(runs: &[RunRecord], database: &str, title_scope: &str) -> String {
    let mut ordered: Vec<&RunRecord> = runs.iter().collect();
    ordered.reverse();
    let mut html = String::new();
    html.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    let _ = writeln!(
        html,
        "<title>gate history: {}</title>\n<style>{STYLE}</style></head><body>",
        escape(title_scope)
    );
    let _ = writeln!(html, "<h1>gate history: {}</h1>", escape(title_scope));
    let first = ordered
        .first()
        .map(|r| r.recorded_at.as_str())
        .unwrap_or("-");
    let last = ordered
        .last()
        .map(|r| r.recorded_at.as_str())
        .unwrap_or("-");
    let _ = writeln!(
        html,
        "<div class=\"meta\">{} run(s) from <code>{}</code>, {} to {}. Each chart: one gated metric of one baseline, runs in the order they were recorded (oldest left).</div>",
        ordered.len(),
        escape(database),
        escape(first),
        escape(last)
    );
    let _ = writeln!(
        html,
        "<div class=\"legend\"><span><i class=\"sw\" style=\"background:#dbe9f7\"></i>baseline ± tolerance</span><span><i class=\"sw\" style=\"background:#2d3748;height:2px\"></i>baseline</span><span><i class=\"sw\" style=\"background:#c0392b;border-radius:6px\"></i>regression (label: top cause)</span><span><i class=\"sw\" style=\"background:#d35400\"></i>drift finding</span><span><i class=\"sw\" style=\"border-left:2px dashed #555;border-radius:0;width:2px\"></i>baseline refreshed</span></div>"
    );
    if ordered.is_empty() {
        html.push_str("<p>No runs recorded for this selection yet.</p>\n</body></html>\n");
        return html;
    }
    let branches: BTreeSet<&str> = ordered
        .iter()
        .map(|r| r.branch.as_deref().unwrap_or("(no branch)"))
        .collect();
    let colour: BTreeMap<&str, &str> = branches
        .iter()
        .enumerate()
        .map(|(i, b)| (*b, PALETTE[i % PALETTE.len()]))
        .collect();
    html.push_str("<div class=\"legend\">branches: ");
    for (b, c) in &colour {
        let _ = write!(
            html,
            "<span><i class=\"sw\" style=\"background:{c}\"></i>{}</span>",
            escape(b)
        );
    }
    html.push_str("</div>\n");
    let mut flat = Vec::new();
    for chart in charts(&ordered) {
        if is_flat(&chart) {
            flat.push(format!("{} ({})", chart.metric, chart.baseline));
        } else {
            draw_chart(&mut html, &chart, &colour);
        }
    }
    if !flat.is_empty() {
        let _ = writeln!(
            html,
            "<h2>Unchanged</h2><p class=\"meta\">Equal to the baseline in every run, no finding: {}.</p>",
            escape(&flat.join(", "))
        );
    }
    html.push_str("</body></html>\n");
    html
}

/// Charts per (baseline, gated metric), baselines and metrics in name order.
fn charts<'a>(ordered: &[&'a RunRecord]) -> Vec<Chart<'a>> {
    let mut keys: BTreeSet<(&str, &str)> = BTreeSet::new();
    for r in ordered {
        for m in r.metrics.iter().filter(|m| m.gated) {
            keys.insert((r.baseline.as_str(), m.metric.as_str()));
        }
    }
    let mut out = Vec::new();
    for (baseline, metric) in keys {
        let runs: Vec<&RunRecord> = ordered
            .iter()
            .copied()
            .filter(|r| r.baseline == baseline)
            .collect();
        let mut points = Vec::new();
        let mut refreshes = Vec::new();
        let mut last_version: Option<&str> = None;
        for (i, r) in runs.iter().enumerate() {
            let changed = last_version.is_some_and(|v| v != r.baseline_created);
            if r.kind == RunKind::Capture || changed {
                refreshes.push((i, *r));
            }
            last_version = Some(r.baseline_created.as_str());
            if let Some(row) = r.metrics.iter().find(|m| m.metric == metric) {
                points.push((i, *r, row));
            }
        }
        let Some(first) = points.first() else {
            continue;
        };
        out.push(Chart {
            baseline,
            metric,
            unit: first.2.unit.clone(),
            statistic: first.2.statistic.clone(),
            direction: first.2.direction.clone(),
            points,
            refreshes,
            runs: runs.len(),
        });
    }
    out
}

/// Every run of the baseline has a value, each equal to its baseline, and
/// nothing to mark: not worth a chart.
fn is_flat(c: &Chart) -> bool {
    c.points.len() == c.runs
        && c.points.iter().all(|(_, r, m)| {
            m.value == m.baseline_value
                && m.verdict != Verdict::Regression
                && !r.drift.iter().any(|d| d.metric == m.metric)
        })
}

fn unit_suffix(unit: &str) -> String {
    if unit.is_empty() || unit == "count" {
        String::new()
    } else {
        format!(" {unit}")
    }
}

fn draw_chart(html: &mut String, c: &Chart, colour: &BTreeMap<&str, &str>) {
    let unit = unit_suffix(&c.unit);
    let context = c.points.iter().filter(|(_, _, m)| !m.gated).count();
    let _ = writeln!(
        html,
        "<h2>{} <span class=\"meta\">({}{}, {}; baseline '{}'){}</span></h2>",
        escape(c.metric),
        escape(c.statistic.as_str()),
        escape(&unit),
        escape(&c.direction.as_str().replace('_', " ")),
        escape(c.baseline),
        if context > 0 {
            format!(
                "; context, not gated, in {context} of {} run(s): the benchmark's own number decided",
                c.points.len()
            )
        } else {
            String::new()
        }
    );
    let Some(s) = Scale::for_chart(c) else {
        html.push_str("<p class=\"meta\">no values recorded for this metric</p>\n");
        return;
    };
    let _ = writeln!(
        html,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"{} over {} runs\">",
        escape(c.metric),
        c.runs
    );
    draw_y_grid(html, &s);
    draw_baseline_band(html, c, &s, &unit);
    draw_refreshes(html, c, &s);
    draw_branches(html, c, &s, colour);
    let mut events = draw_marks(html, c, &s, &unit);
    events.extend(refresh_events(c));
    draw_x_labels(html, c, &s);
    html.push_str("</svg>\n");
    if !events.is_empty() {
        html.push_str("<ul class=\"events\">\n");
        for e in events {
            html.push_str(&e);
            html.push('\n');
        }
        html.push_str("</ul>\n");
    }
}

/// Where a run and a value go on a chart. The main scale takes the values
/// that passed, the baselines and their bands; a regression far outside it
/// (a -95 % cliff) would flatten the slow slide this page exists to show,
/// so it goes on a strip of its own below (or above) the main plot, past a
/// break in the axis, at its true value: the chart shows how far it fell,
/// never a value clamped onto the edge.
struct Scale {
    lo: f64,
    hi: f64,
    /// Slots on the x axis (at least 2).
    n: usize,
    plot_w: f64,
    /// The main plot: top edge and height.
    top: f64,
    plot_h: f64,
    /// Strips past a break: values below `lo`, values above `hi`.
    below: Option<Strip>,
    above: Option<Strip>,
}

/// A strip past a break in the axis: its value range and where it is.
#[derive(Debug, Clone, Copy)]
struct Strip {
    lo: f64,
    hi: f64,
    top: f64,
    h: f64,
}

impl Strip {
    /// Height of a strip, and the gap (with the break marks) before it.
    const H: f64 = 34.0;
    const GAP: f64 = 16.0;

    /// The strip for the values `vs` (None when there are none).
    fn of(vs: &[f64]) -> Option<(f64, f64)> {
        let vs = vs.iter().map(|v| crate::scale::clamp(*v));
        let lo = vs.clone().fold(f64::INFINITY, f64::min);
        let hi = vs.fold(f64::NEG_INFINITY, f64::max);
        if !lo.is_finite() {
            return None;
        }
        let pad = ((hi - lo) * 0.15)
            .max(hi.abs().max(lo.abs()) * 0.02)
            .max(1e-9);
        Some(crate::scale::ordered(lo - pad, hi + pad))
    }

    fn y(&self, v: f64) -> f64 {
        self.top + self.h * (1.0 - ((v - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0))
    }
}

impl Scale {
    /// None when the metric has no value at all.
    fn for_chart(c: &Chart) -> Option<Scale> {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for (_, _, m) in &c.points {
            let value = m.value.filter(|_| m.verdict != Verdict::Regression);
            for v in [value, m.baseline_value].into_iter().flatten() {
                lo = lo.min(crate::scale::clamp(v));
                hi = hi.max(crate::scale::clamp(v));
            }
            if let (Some(b), Some(t)) = (m.baseline_value, m.tolerance) {
                lo = lo.min(crate::scale::clamp(b - t));
                hi = hi.max(crate::scale::clamp(b + t));
            }
        }
        if !lo.is_finite() || !hi.is_finite() {
            // Only regressions: they are the scale.
            for v in c.points.iter().filter_map(|(_, _, m)| m.value) {
                lo = lo.min(crate::scale::clamp(v));
                hi = hi.max(crate::scale::clamp(v));
            }
        }
        if !lo.is_finite() || !hi.is_finite() {
            return None;
        }
        // Finite and ordered, whatever the values (1e200 .. f64::MAX
        // panicked: issue 41.3).
        let (lo, hi) = crate::scale::ordered(lo, hi);
        let pad = (hi - lo) * 0.06;
        let (mut lo, mut hi) = crate::scale::ordered(lo - pad, hi + pad);
        let values: Vec<f64> = c.points.iter().filter_map(|(_, _, m)| m.value).collect();
        // A series that is never negative (a throughput, a share) gets no
        // negative tick, though a floor around its baseline reaches below
        // 0; a share reads on the whole 0-100 % scale.
        let data = || {
            c.points
                .iter()
                .flat_map(|(_, _, m)| [m.value, m.baseline_value])
                .flatten()
        };
        if data().all(|v| v >= 0.0) {
            lo = lo.max(0.0);
            if c.unit == "%" && data().all(|v| v <= 100.0) {
                (lo, hi) = (0.0, 100.0);
            }
        }
        let under: Vec<f64> = values.iter().copied().filter(|v| *v < lo).collect();
        let over: Vec<f64> = values.iter().copied().filter(|v| *v > hi).collect();
        let total_h = HEIGHT - TOP - BOTTOM;
        let strip = Strip::H + Strip::GAP;
        let (above, below) = (Strip::of(&over), Strip::of(&under));
        let top = TOP + if above.is_some() { strip } else { 0.0 };
        let plot_h = total_h - strip * (above.is_some() as u8 + below.is_some() as u8) as f64;
        Some(Scale {
            lo,
            hi,
            n: c.runs.max(2),
            plot_w: WIDTH - LEFT - RIGHT,
            top,
            plot_h,
            above: above.map(|(a, b)| Strip {
                lo: a,
                hi: b,
                top: TOP,
                h: Strip::H,
            }),
            below: below.map(|(a, b)| Strip {
                lo: a,
                hi: b,
                top: top + plot_h + Strip::GAP,
                h: Strip::H,
            }),
        })
    }

    fn x(&self, i: usize) -> f64 {
        LEFT + self.plot_w * (i as f64 + 0.5) / self.n as f64
    }

    /// Width of one run's slot.
    fn step(&self) -> f64 {
        self.plot_w / self.n as f64
    }

    /// A value's height: on the main plot, or on the strip past the break.
    fn y(&self, v: f64) -> f64 {
        match (self.below, self.above) {
            (Some(b), _) if v < self.lo => b.y(v),
            (_, Some(a)) if v > self.hi => a.y(v),
            _ => {
                self.top
                    + self.plot_h * (1.0 - ((v - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0))
            }
        }
    }

    /// The note of each break in the axis: its baseline y and its box.
    fn break_notes(&self) -> Vec<(f64, [f64; 4])> {
        let right = LEFT + self.plot_w - 6.0;
        [self.below, self.above]
            .into_iter()
            .flatten()
            .map(|strip| {
                let gap_mid = if strip.top > self.top {
                    strip.top - Strip::GAP / 2.0
                } else {
                    strip.top + strip.h + Strip::GAP / 2.0
                };
                let y = gap_mid + 3.5;
                (
                    y,
                    [
                        right - BREAK_NOTE.len() as f64 * 5.8,
                        y - 9.0,
                        right,
                        y + 2.0,
                    ],
                )
            })
            .collect()
    }

    /// The whole drawing height (main plot and strips).
    fn bottom(&self) -> f64 {
        self.below.map_or(self.top + self.plot_h, |b| b.top + b.h)
    }
}

fn draw_y_grid(html: &mut String, s: &Scale) {
    let _ = writeln!(
        html,
        "<rect x=\"{LEFT}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#fbfcfd\" stroke=\"#d5d9e0\"/>",
        s.top, s.plot_w, s.plot_h
    );
    // Labels at a nice step (900, 1000, 1100; 0, 25, ... 100), not at
    // fifths of an arbitrary range.
    let step = crate::scale::nice_step(s.hi - s.lo, 4.0);
    let mut v = (s.lo / step).ceil() * step;
    while v <= s.hi + step * 1e-9 {
        let label = if v.abs() < step * 1e-9 { 0.0 } else { v };
        grid_line(html, s.y(label), label);
        v += step;
    }
    for strip in [s.below, s.above].into_iter().flatten() {
        let _ = writeln!(
            html,
            "<rect x=\"{LEFT}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#fdf3f2\" stroke=\"#d5d9e0\"/>",
            strip.top, s.plot_w, strip.h
        );
        // Two labels, the strip's ends: a strip's height apart, and the gap
        // from the main plot's: never overlapping.
        grid_line(html, strip.y(strip.hi), strip.hi);
        grid_line(html, strip.y(strip.lo), strip.lo);
    }
    for (y, _) in s.break_notes() {
        // The break: a double slash across each axis edge in the gap.
        for x in [LEFT, LEFT + s.plot_w] {
            for dx in [-3.0, 3.0] {
                let _ = writeln!(
                    html,
                    "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#4a5568\" stroke-width=\"1.2\"/>",
                    x + dx - 4.0,
                    y - 0.5,
                    x + dx + 4.0,
                    y - 6.5
                );
            }
        }
        let _ = writeln!(
            html,
            "<text x=\"{:.1}\" y=\"{y:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#8a5a00\">{BREAK_NOTE}</text>",
            LEFT + s.plot_w - 6.0
        );
    }
}

fn grid_line(html: &mut String, yy: f64, v: f64) {
    let _ = writeln!(
        html,
        "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#eceef2\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" fill=\"#4a5568\">{}</text>",
        WIDTH - RIGHT,
        LEFT - 6.0,
        yy + 4.0,
        escape(&fmt_num(v))
    );
}

/// Baseline band and line: merged steps of equal (baseline, tolerance).
fn draw_baseline_band(html: &mut String, c: &Chart, s: &Scale, unit: &str) {
    let mut segs: Vec<(usize, usize, f64, Option<f64>)> = Vec::new();
    for (i, _, m) in &c.points {
        let Some(b) = m.baseline_value else { continue };
        match segs.last_mut() {
            Some(s) if s.2 == b && (s.3 == m.tolerance || m.tolerance.is_none()) => s.1 = *i,
            // A capture row has no tolerance: it takes its first check's.
            Some(s) if s.2 == b && s.3.is_none() => {
                s.1 = *i;
                s.3 = m.tolerance;
            }
            _ => segs.push((*i, *i, b, m.tolerance)),
        }
    }
    for (a, z, b, tol) in &segs {
        let x0 = s.x(*a) - s.step() / 2.0;
        let x1 = s.x(*z) + s.step() / 2.0;
        if let Some(t) = tol {
            let _ = writeln!(
                html,
                "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#dbe9f7\" opacity=\"0.8\"><title>baseline {} ± {}{}</title></rect>",
                s.y(b + t),
                x1 - x0,
                (s.y(b - t) - s.y(b + t)).max(0.5),
                escape(&fmt_num(*b)),
                escape(&fmt_num(*t)),
                escape(unit)
            );
        }
        let _ = writeln!(
            html,
            "<line x1=\"{x0:.1}\" x2=\"{x1:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#2d3748\" stroke-width=\"1.5\"/>",
            s.y(*b),
            s.y(*b)
        );
    }
}

fn draw_refreshes(html: &mut String, c: &Chart, s: &Scale) {
    for (i, r) in &c.refreshes {
        let xx = s.x(*i) - s.step() / 2.0;
        let _ = writeln!(
            html,
            "<line x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"#555\" stroke-dasharray=\"5,4\"><title>baseline refreshed ({}, {})</title></line><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#555\">refresh</text>",
            s.bottom(),
            escape(&r.recorded_at),
            escape(r.commit.as_deref().unwrap_or("commit unknown")),
            xx + 3.0,
            TOP + 10.0
        );
    }
}

/// One polyline per branch.
fn draw_branches(html: &mut String, c: &Chart, s: &Scale, colour: &BTreeMap<&str, &str>) {
    let mut by_branch: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for (i, r, m) in &c.points {
        if let Some(v) = m.value {
            by_branch
                .entry(r.branch.as_deref().unwrap_or("(no branch)"))
                .or_default()
                .push((s.x(*i), s.y(v)));
        }
    }
    for (branch, pts) in &by_branch {
        let col = colour.get(branch).copied().unwrap_or(PALETTE[0]);
        let path: Vec<String> = pts.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
        let _ = writeln!(
            html,
            "<polyline fill=\"none\" stroke=\"{col}\" stroke-width=\"1.6\" points=\"{}\"/>",
            path.join(" ")
        );
        if pts.len() <= 300 {
            for (a, b) in pts {
                let _ = writeln!(
                    html,
                    "<circle cx=\"{a:.1}\" cy=\"{b:.1}\" r=\"2.2\" fill=\"{col}\"/>"
                );
            }
        }
    }
}

/// Regressions (red dots, labelled with their top rule) and drift findings
/// (orange triangles). Returns them in words for the list under the chart.
fn draw_marks(html: &mut String, c: &Chart, s: &Scale, unit: &str) -> Vec<String> {
    let mut events = Vec::new();
    // Boxes of the labels drawn so far: a new one goes where it overlaps none.
    let mut placed: Vec<[f64; 4]> = s.break_notes().into_iter().map(|(_, b)| b).collect();
    for (i, r, m) in &c.points {
        let Some(v) = m.value else { continue };
        let (xx, yy) = (s.x(*i), s.y(v));
        let who = run_words(r);
        if m.verdict == Verdict::Regression {
            let cause = match (&r.top_cause, &r.top_rule) {
                (Some(t), Some(rule)) => format!("{t} ({rule})"),
                (None, Some(rule)) => rule.clone(),
                _ => "no rule fired".into(),
            };
            let change = m
                .change_pct
                .map(|p| format!("{p:+.1} %"))
                .unwrap_or_else(|| format!("{}{unit}", fmt_num(v)));
            let _ = writeln!(
                html,
                "<circle cx=\"{xx:.1}\" cy=\"{yy:.1}\" r=\"5.5\" fill=\"#c0392b\" stroke=\"#fff\" stroke-width=\"1.5\"><title>{}: regression {}; top cause: {}</title></circle>",
                escape(&who),
                escape(&change),
                escape(&cause)
            );
            if placed.len() < MAX_LABELS {
                let rule = r.top_rule.as_deref().unwrap_or("regression");
                let label = format!("{rule} ({change})");
                if let Some((lx, ly)) = place_label(&mut placed, xx, yy, &label, s) {
                    let _ = writeln!(
                        html,
                        "<text x=\"{lx:.1}\" y=\"{ly:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#c0392b\" font-weight=\"600\">{}</text>",
                        escape(&label)
                    );
                }
            }
            events.push(format!(
                "<li><span class=\"reg\">regression</span> {} at {}: {}{}; top cause: {}</li>",
                escape(&change),
                escape(&who),
                escape(&fmt_num(v)),
                escape(unit),
                escape(&cause)
            ));
        }
        for d in r.drift.iter().filter(|d| d.metric == m.metric) {
            let _ = writeln!(
                html,
                "<path d=\"M{:.1},{:.1} l6,11 h-12 z\" fill=\"#d35400\" stroke=\"#fff\"><title>{}</title></path>",
                xx,
                yy - 14.0,
                escape(&d.message)
            );
            events.push(format!(
                "<li><span class=\"drift\">drift</span> at {}{}: {}</li>",
                escape(&who),
                if d.failed { " (failed the run)" } else { "" },
                escape(d.message.strip_prefix("drift: ").unwrap_or(&d.message))
            ));
        }
    }
    events
}

/// Where a label of a mark at (x, y) goes: above or below the mark, then
/// further away, centred but kept inside the plot, never over a label drawn
/// before (`placed`, boxes of [x0, y0, x1, y1]). None when no place is free:
/// the list under the chart names every regression anyway.
fn place_label(
    placed: &mut Vec<[f64; 4]>,
    x: f64,
    y: f64,
    text: &str,
    s: &Scale,
) -> Option<(f64, f64)> {
    // 11 px text: ~6.4 px a character, 13 px a line.
    let w = text.chars().count() as f64 * 6.4 + 6.0;
    // A label wider than the plot (a 300-digit number) is centred on it.
    let lx = if w < s.plot_w {
        x.clamp(LEFT + w / 2.0, LEFT + s.plot_w - w / 2.0)
    } else {
        LEFT + s.plot_w / 2.0
    };
    let (top, bottom) = (TOP + 11.0, s.bottom() + 11.0);
    for dy in [-10.0, 19.0, -24.0, 33.0, -38.0, 47.0, -52.0, 61.0] {
        let ly = y + dy;
        if ly < top || ly > bottom {
            continue;
        }
        let bx = [lx - w / 2.0, ly - 11.0, lx + w / 2.0, ly + 2.0];
        let free = placed
            .iter()
            .all(|p| bx[2] <= p[0] || bx[0] >= p[2] || bx[3] <= p[1] || bx[1] >= p[3]);
        if free {
            placed.push(bx);
            return Some((lx, ly));
        }
    }
    None
}

/// "run 12 (date, commit, branch)", plain text.
fn run_words(r: &RunRecord) -> String {
    format!(
        "run {} ({}, {}{})",
        r.id.map(|i| i.to_string()).unwrap_or_default(),
        r.recorded_at,
        r.commit
            .as_deref()
            .map(|c| c.chars().take(12).collect::<String>())
            .unwrap_or_else(|| "commit unknown".into()),
        r.branch
            .as_deref()
            .map(|b| format!(", {b}"))
            .unwrap_or_default()
    )
}

fn refresh_events(c: &Chart) -> Vec<String> {
    c.refreshes
        .iter()
        .map(|(_, r)| {
            format!(
                "<li><span class=\"ref\">baseline refreshed</span> {} ({})</li>",
                escape(&r.recorded_at),
                escape(
                    &r.commit
                        .as_deref()
                        .map(|c| format!("commit {}", c.chars().take(12).collect::<String>()))
                        .unwrap_or_else(|| "commit unknown".into())
                )
            )
        })
        .collect()
}

/// X labels: first, last and a few dates between.
fn draw_x_labels(html: &mut String, c: &Chart, s: &Scale) {
    let ticks = 6.min(c.runs);
    let runs_by_index: BTreeMap<usize, &RunRecord> =
        c.points.iter().map(|(i, r, _)| (*i, *r)).collect();
    let mut last_label = f64::NEG_INFINITY;
    for k in 0..ticks {
        let i = if ticks == 1 {
            0
        } else {
            k * (c.runs - 1) / (ticks - 1)
        };
        let Some((_, r)) = runs_by_index.range(i..).next() else {
            continue;
        };
        let xx = s.x(i);
        if xx - last_label < 120.0 {
            continue;
        }
        last_label = xx;
        let date: String = r.recorded_at.chars().take(10).collect();
        let anchor = if k + 1 == ticks && ticks > 1 {
            "end"
        } else {
            "middle"
        };
        let _ = writeln!(
            html,
            "<text x=\"{xx:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"{anchor}\" fill=\"#4a5568\">{} · run {}</text>",
            HEIGHT - 12.0,
            escape(&date),
            r.id.map(|i| i.to_string()).unwrap_or_default()
        );
    }
}
