//! The SVG line charts of the HTML run report: axes, ticks, shaded
//! intervals (warm-up, problem slices) and one polyline per series. Pure
//! drawing: the points and shades come from `html.rs`.

use crate::escape::html as escape;
use crate::format::number as format_number;
use std::fmt::Write as _;

pub(super) const WIDTH: f64 = 1280.0;
/// Width of each chart of a side-by-side pair.
pub(super) const HALF: f64 = 632.0;
const HEIGHT: f64 = 190.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 26.0;
const BOTTOM: f64 = 28.0;

pub(super) struct Line<'a> {
    pub label: &'static str,
    pub color: &'static str,
    /// (t seconds, value); NaN = missing (breaks the line).
    pub points: &'a [(f64, f64)],
}

/// A "nice" upper bound (1, 2, 2.5, 5 x 10^k) at or above `v`.
fn nice_ceil(v: f64) -> f64 {
    // Within the scale's limit: 2.5 x 10^308 would be infinite.
    let v = crate::scale::clamp(v);
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let exp = 10f64.powf(v.log10().floor());
    let nice = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * exp)
        .find(|s| *s >= v * 0.999_999)
        .unwrap_or(10.0 * exp);
    // A subnormal value's power of ten underflows to 0.
    if nice > 0.0 {
        nice
    } else {
        1.0
    }
}

/// Time-tick step giving roughly 8-12 ticks.
fn tick_step(t_end_s: f64) -> f64 {
    let raw = t_end_s / 10.0;
    [
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0,
        3600.0,
    ]
    .into_iter()
    .find(|s| *s >= raw)
    .unwrap_or(7200.0)
}

/// The warm-up span's shade (the chart labels it).
pub(super) const WARM_COLOR: (&str, f64) = ("#8a8f98", 0.2);

/// A shaded time interval behind the lines.
pub(super) struct Shade {
    pub(crate) start_s: f64,
    pub(crate) end_s: f64,
    pub color: &'static str,
    pub(crate) opacity: f64,
}

/// One SVG line chart with shaded intervals.
#[allow(clippy::too_many_arguments)]
pub(super) fn chart(
    title: &str,
    unit: &str,
    fixed_max: Option<f64>,
    lines: &[Line],
    t_end_s: f64,
    shades: &[Shade],
    width: f64,
) -> String {
    let pw = width - LEFT - RIGHT;
    let ph = HEIGHT - TOP - BOTTOM;
    // Scale to the steady window: a start-up spike in the warm-up (Python
    // importing with every core, say) would flatten what is judged. Warm-up
    // values above the scale are clipped at the top edge.
    let warmup_end_s = shades
        .iter()
        .find(|sh| sh.color == WARM_COLOR.0 && sh.start_s == 0.0)
        .map(|sh| sh.end_s)
        .unwrap_or(0.0);
    let max_from = |from_s: f64| {
        lines
            .iter()
            .flat_map(|l| l.points.iter())
            .filter(|p| p.0 >= from_s && p.1.is_finite())
            .fold(0.0f64, |m, p| m.max(p.1))
    };
    let steady_max = max_from(warmup_end_s);
    let data_max = if steady_max > 0.0 {
        steady_max
    } else {
        max_from(0.0)
    };
    let y_max = fixed_max.unwrap_or_else(|| nice_ceil(data_max));
    let t_end = if t_end_s > 0.0 { t_end_s } else { 1.0 };
    let x = |t: f64| LEFT + (t / t_end).clamp(0.0, 1.0) * pw;
    let y = |v: f64| TOP + ph - (v / y_max).clamp(0.0, 1.02) * ph;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT}" viewBox="0 0 {width} {HEIGHT}" role="img" aria-label="{}">"#,
        escape(title)
    );
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw:.1}" height="{ph:.1}" fill="#fbfcfd" stroke="#d5d9e0"/>"##
    );
    for sh in shades {
        let (x0, x1) = (x(sh.start_s), x(sh.end_s));
        if x1 > x0 {
            let _ = write!(
                s,
                r#"<rect x="{x0:.1}" y="{TOP}" width="{:.1}" height="{ph:.1}" fill="{}" fill-opacity="{}"/>"#,
                x1 - x0,
                sh.color,
                sh.opacity
            );
        }
    }
    // Y grid and labels.
    for k in 0..=4 {
        let v = y_max * k as f64 / 4.0;
        let yy = y(v);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#e6e9ee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            yy + 4.0,
            format_number(v)
        );
    }
    // X ticks (fewer on narrow charts).
    let step = tick_step(t_end * WIDTH / width);
    let mut t = 0.0;
    while t <= t_end + 1e-9 {
        let xx = x(t);
        let _ = write!(
            s,
            r##"<line x1="{xx:.1}" y1="{:.1}" x2="{xx:.1}" y2="{:.1}" stroke="#9aa1ab"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP + ph,
            TOP + ph + 4.0,
            TOP + ph + 16.0,
            format_number(t)
        );
        t += step;
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end">time (s)</text>"#,
        LEFT + pw,
        HEIGHT - 2.0
    );
    let _ = write!(
        s,
        r#"<text x="{LEFT}" y="16" style="font-size:13px;font-weight:600;fill:#1d2330">{} ({})</text>"#,
        escape(title),
        escape(unit)
    );
    for l in lines {
        let mut seg = String::new();
        let flush = |seg: &mut String, s: &mut String| {
            if !seg.is_empty() {
                let _ = write!(
                    s,
                    r#"<polyline fill="none" stroke="{}" stroke-width="1.4" points="{}"/>"#,
                    l.color,
                    seg.trim_end()
                );
                seg.clear();
            }
        };
        for (t, v) in l.points {
            if v.is_finite() {
                let _ = write!(seg, "{:.1},{:.1} ", x(*t), y(*v));
            } else {
                flush(&mut seg, &mut s);
            }
        }
        flush(&mut seg, &mut s);
    }
    s.push_str("</svg>");
    // Legend as HTML below the plot (wraps and stays readable).
    s.push_str(r#"<div class="legend">"#);
    for l in lines {
        let measured = l.points.iter().any(|p| p.1.is_finite());
        let _ = write!(
            s,
            r#"<span><i class="sw" style="background:{}"></i>{}{}</span>"#,
            l.color,
            escape(l.label),
            if measured { "" } else { " (not measured)" }
        );
    }
    s.push_str("</div>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pair of extreme finite values (`scale::EXTREMES`) as a
    /// line: a bounded chart whose coordinates are numbers.
    #[test]
    fn extreme_values_draw_a_bounded_chart() {
        for &a in &crate::scale::EXTREMES {
            for &b in &crate::scale::EXTREMES {
                let line = Line {
                    label: "x",
                    color: "#000",
                    points: &[(0.0, a), (1.0, b), (2.0, f64::NAN)],
                };
                let svg = chart("t", "u", None, &[line], 2.0, &[], WIDTH);
                assert!(svg.len() < 16 * 1024, "{a} {b}: {} bytes", svg.len());
                assert!(
                    !svg.contains("NaN") && !svg.contains("inf"),
                    "{a} {b}: {svg}"
                );
            }
        }
    }

    #[test]
    fn axes_round_up_to_nice_numbers() {
        assert_eq!(nice_ceil(20270.0), 25000.0);
        assert_eq!(nice_ceil(0.04), 0.05);
        assert_eq!(tick_step(33.0), 5.0);
    }
}
