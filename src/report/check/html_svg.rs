//! The SVG chart of the check page (`html.rs`): one metric over time, the
//! baseline's band (value, noise band, practical floor) behind the new
//! run's lines, the warm-up shaded and the new run's judged value drawn
//! across the steady window. The scale takes in the band, the lines and
//! the new value, so a run that fell far below its baseline shows how far.

use crate::escape::html as esc;
use crate::format::number;
use crate::scale::nice_step;
use std::fmt::Write as _;

const HEIGHT: f64 = 210.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 30.0;
const BAND: &str = "#4c78a8";
const NEW: &str = "#c0392b";

/// The baseline's band of a metric: its value, the noise band around it
/// and the practical floor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Band {
    pub value: f64,
    pub noise: Option<f64>,
    pub floor: Option<f64>,
}

/// What one chart draws.
pub(crate) struct Chart<'a> {
    pub title: &'a str,
    pub(crate) width: f64,
    /// (label, (t s, value) points; NaN breaks a line).
    pub lines: &'a [(String, &'a [(f64, f64)])],
    pub(crate) colors: &'a [&'a str],
    pub band: Option<&'a Band>,
    /// The new run's judged value (its statistic over the steady window).
    pub new: Option<f64>,
    pub(crate) end_s: f64,
    pub(crate) warmup_s: f64,
    /// A percentage: the axis stays within 0-100 % when the data do.
    pub(crate) percent: bool,
}

/// The value range: every point, the band with its floor, the new value;
/// from 0 when the data sit closer to 0 than their own span.
fn y_range(c: &Chart) -> (f64, f64) {
    // Within the scale's limit: a span of f64::MAX values is finite.
    let span = |vs: &mut dyn Iterator<Item = f64>| {
        vs.map(crate::scale::clamp)
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    };
    let (data_lo, data_hi) = span(
        &mut c
            .lines
            .iter()
            .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
            .chain(c.new),
    );
    let band: Vec<f64> = c
        .band
        .map(|b| {
            let reach = b.noise.unwrap_or(0.0).max(b.floor.unwrap_or(0.0));
            vec![b.value - reach, b.value + reach]
        })
        .unwrap_or_default();
    let (band_lo, band_hi) = span(&mut band.into_iter());
    let (mut lo, hi) = (data_lo.min(band_lo), data_hi.max(band_hi));
    // A band reaching below 0 around values that never do (a count, a
    // share) is cut at 0, not drawn into negative numbers.
    let never_negative = data_lo >= 0.0;
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if never_negative {
        lo = lo.max(0.0);
    }
    if lo >= 0.0 && lo < hi - lo {
        lo = 0.0;
    }
    let (lo, hi) = crate::scale::ordered(lo, hi);
    let step = nice_step(hi - lo, 4.0);
    let (lo, hi) = crate::scale::ordered((lo / step).floor() * step, (hi / step).ceil() * step);
    // A share reads on the whole 0-100 % scale, never past it (the nice
    // step made 97 % run to 150 %); a band's edge past 100 % is cut there.
    if c.percent && data_lo >= 0.0 && data_hi <= 100.0 {
        return (0.0, 100.0);
    }
    (lo, hi)
}

/// The chart as one `<svg>` element.
pub fn chart(c: &Chart) -> String {
    let pw = c.width - LEFT - RIGHT;
    let ph = HEIGHT - TOP - BOTTOM;
    let (lo, hi) = y_range(c);
    let end = if c.end_s > 0.0 { c.end_s } else { 1.0 };
    let x = |t: f64| LEFT + (t / end).clamp(0.0, 1.0) * pw;
    // Within the plot: only a band's edge cut at 0 ever reaches past it.
    let y = |v: f64| TOP + ph - ((v - lo) / (hi - lo)).clamp(0.0, 1.0) * ph;
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{HEIGHT}" viewBox="0 0 {w} {HEIGHT}" role="img" aria-label="{t}"><rect x="{LEFT}" y="{TOP}" width="{pw:.1}" height="{ph:.1}" fill="#fbfcfd" stroke="#d5d9e0"/>"##,
        w = c.width,
        t = esc(c.title)
    );
    if c.warmup_s > 0.0 && !c.lines.is_empty() {
        let _ = write!(
            s,
            r##"<rect x="{LEFT}" y="{TOP}" width="{:.1}" height="{ph:.1}" fill="#8a8f98" fill-opacity="0.18"/><text x="{:.1}" y="{:.1}">warm-up</text>"##,
            x(c.warmup_s) - LEFT,
            LEFT + 4.0,
            TOP + 12.0
        );
    }
    band(&mut s, c, &y, pw);
    grid(&mut s, c, lo, hi, &y, &x, pw, end);
    for (i, (_, pts)) in c.lines.iter().enumerate() {
        polyline(&mut s, pts, c.colors[i % c.colors.len()], &x, &y);
    }
    if let Some(v) = c.new.filter(|v| v.is_finite()) {
        let from = if c.lines.is_empty() { 0.0 } else { c.warmup_s };
        let _ = write!(
            s,
            r#"<line x1="{:.1}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{NEW}" stroke-width="2" stroke-dasharray="7 4"/>"#,
            x(from),
            LEFT + pw,
            yy = y(v)
        );
    }
    s.push_str("</svg>");
    s
}

/// The baseline's band: noise band filled, value solid, floor dashed.
fn band(s: &mut String, c: &Chart, y: &dyn Fn(f64) -> f64, pw: f64) {
    let Some(b) = c.band else { return };
    if let Some(n) = b.noise {
        let (top, bottom) = (y(b.value + n), y(b.value - n));
        let _ = write!(
            s,
            r#"<rect x="{LEFT}" y="{top:.1}" width="{pw:.1}" height="{:.1}" fill="{BAND}" fill-opacity="0.22"/>"#,
            (bottom - top).max(1.0)
        );
    }
    if let Some(f) = b.floor {
        for v in [b.value - f, b.value + f] {
            let _ = write!(
                s,
                r#"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{BAND}" stroke-dasharray="3 3"/>"#,
                LEFT + pw,
                yy = y(v)
            );
        }
    }
    let _ = write!(
        s,
        r#"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{BAND}" stroke-width="1.6"/>"#,
        LEFT + pw,
        yy = y(b.value)
    );
}

/// Value grid and labels (five at most, never overlapping: a nice step
/// over the range), time ticks.
#[allow(clippy::too_many_arguments)]
fn grid(
    s: &mut String,
    c: &Chart,
    lo: f64,
    hi: f64,
    y: &dyn Fn(f64) -> f64,
    x: &dyn Fn(f64) -> f64,
    pw: f64,
    end: f64,
) {
    let step = nice_step(hi - lo, 4.0);
    for v in crate::scale::ticks(lo, hi, step) {
        let yy = y(v);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#e6e9ee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            yy + 4.0,
            number(if v.abs() < step * 1e-9 { 0.0 } else { v })
        );
    }
    if c.lines.is_empty() {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">one number per run</text>"#,
            LEFT + pw,
            HEIGHT - 8.0
        );
        return;
    }
    let tstep = nice_step(end, (pw / 90.0).max(2.0));
    for t in crate::scale::ticks(0.0, end, tstep) {
        let xx = x(t);
        let _ = write!(
            s,
            r##"<line x1="{xx:.1}" y1="{b:.1}" x2="{xx:.1}" y2="{:.1}" stroke="#9aa1ab"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP + ph_of() + 4.0,
            TOP + ph_of() + 16.0,
            number(t),
            b = TOP + ph_of()
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end">time (s)</text>"#,
        LEFT + pw,
        HEIGHT - 2.0
    );
}

fn ph_of() -> f64 {
    HEIGHT - TOP - BOTTOM
}

/// One line; NaN values break it.
fn polyline(
    s: &mut String,
    pts: &[(f64, f64)],
    color: &str,
    x: &dyn Fn(f64) -> f64,
    y: &dyn Fn(f64) -> f64,
) {
    let mut run = String::new();
    let flush = |run: &mut String, s: &mut String| {
        if run.contains(' ') {
            let _ = write!(
                s,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.3" points="{}"/>"#,
                run.trim_end()
            );
        }
        run.clear();
    };
    for &(t, v) in pts {
        if !(t.is_finite() && v.is_finite()) {
            flush(&mut run, s);
            continue;
        }
        let _ = write!(run, "{:.1},{:.1} ", x(t), y(v));
    }
    flush(&mut run, s);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart_of<'a>(
        lines: &'a [(String, &'a [(f64, f64)])],
        band: Option<&'a Band>,
        percent: bool,
    ) -> Chart<'a> {
        Chart {
            title: "m",
            width: 620.0,
            lines,
            colors: &["#1f77b4"],
            band,
            new: None,
            end_s: 10.0,
            warmup_s: 0.0,
            percent,
        }
    }

    /// The value labels of a chart's y axis.
    fn y_labels(svg: &str) -> Vec<f64> {
        svg.split("text-anchor=\"end\">")
            .skip(1)
            .filter_map(|t| t.split('<').next()?.parse().ok())
            .collect()
    }

    #[test]
    fn a_percentage_axis_stays_within_0_and_100() {
        // 97 % with a floor of 9.7: the nice step once ran the axis to 150 %.
        let pts = [(0.0, 96.0), (5.0, 98.0)];
        let lines = [("GPU 0".to_string(), &pts[..])];
        let band = Band {
            value: 97.0,
            noise: Some(1.5),
            floor: Some(9.7),
        };
        let pct = y_range(&chart_of(&lines, Some(&band), true));
        assert_eq!(pct, (0.0, 100.0));
        let labels = y_labels(&chart(&chart_of(&lines, Some(&band), true)));
        assert_eq!(labels.first(), Some(&0.0), "{labels:?}");
        assert_eq!(labels.last(), Some(&100.0), "{labels:?}");
        // Not a percentage: the nice range, past 100.
        assert!(y_range(&chart_of(&lines, Some(&band), false)).1 > 100.0);
    }

    #[test]
    fn a_positive_series_gets_no_negative_tick() {
        // A throughput of 5 whose floor reaches to -15.
        let pts = [(0.0, 4.0), (5.0, 6.0)];
        let lines = [("GPU 0".to_string(), &pts[..])];
        let band = Band {
            value: 5.0,
            noise: Some(1.0),
            floor: Some(20.0),
        };
        let labels = y_labels(&chart(&chart_of(&lines, Some(&band), false)));
        assert!(labels.iter().all(|v| *v >= 0.0), "{labels:?}");
    }

    /// Every pair of extreme finite values (`scale::EXTREMES`) as the
    /// line, the band and the new value: a bounded chart (f64::MAX grew
    /// the page past 3 GB: issue 41.1) whose coordinates are numbers.
    #[test]
    fn extreme_values_draw_a_bounded_chart() {
        for &a in &crate::scale::EXTREMES {
            for &b in &crate::scale::EXTREMES {
                let pts = [(0.0, a), (5.0, b)];
                let lines = [("run".to_string(), &pts[..])];
                let band = Band {
                    value: a,
                    noise: Some(b.abs()),
                    floor: Some(a.abs()),
                };
                let svg = chart(&Chart {
                    title: "t",
                    width: 600.0,
                    lines: &lines,
                    colors: &["#000"],
                    band: Some(&band),
                    new: Some(b),
                    end_s: 5.0,
                    warmup_s: 1.0,
                    percent: false,
                });
                assert!(svg.len() < 16 * 1024, "{a} {b}: {} bytes", svg.len());
                assert!(
                    !svg.contains("NaN") && !svg.contains("inf"),
                    "{a} {b}: {svg}"
                );
            }
        }
    }
}
