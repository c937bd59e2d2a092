//! How values print, one rule each, for every report and message.
//!
//! Measured values ([`number`], [`value_with_unit`]): 4 significant digits
//! of the one stored number (baselines keep full precision, so a value
//! reads the same in `gate capture`, `gate check`, `gate report`, `gate
//! diff` and `gate history`, and its leading digits in the baseline file),
//! but the integer part is never rounded (20270.4 prints 20270), no exponent,
//! trailing zeros dropped (5.0 prints 5), `n/a` when not finite or absent.
//! So 12.345 prints 12.35 in every report (before this rule, `gate report`
//! printed it 12.3 and `gate check` 12.35).
//!
//! Three quantities are not measured values and keep their own, documented
//! shapes: relative changes ([`percent_change`], one decimal, none from
//! 100 % up: "+12.3 %"), times within a recording ([`secs`], to the
//! millisecond, so adjacent slices never print alike), and timestamps
//! ([`rfc3339_utc`]). Baseline files store floats at full
//! round-trip precision (`baseline` store.rs: the noise band is computed
//! from them; a TOML float always has a decimal point). JSON carries full precision; OpenMetrics values
//! are [`significant`] (3 digits: GitLab compares them as strings).

use std::time::SystemTime;

/// Significant digits of a measured value in reports: enough to read a
/// 0.1 % change. Display only: baselines store full precision.
pub(crate) const SIGNIFICANT_DIGITS: usize = 4;

/// A measured value for people: at least [`SIGNIFICANT_DIGITS`]
/// significant digits, integer part never rounded, no trailing zeros,
/// `n/a` when not finite.
///
/// ```
/// use gpugate::format::number;
/// assert_eq!(number(12.345), "12.35");
/// assert_eq!(number(0.0412), "0.0412");
/// assert_eq!(number(20270.4), "20270");
/// assert_eq!(number(5.0), "5");
/// ```
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    // Decimals that leave SIGNIFICANT_DIGITS digits (at most 9 for tiny values).
    let magnitude = a.log10().floor() as i32; // 97.1 -> 1, 0.0123 -> -2
    let decimals = (SIGNIFICANT_DIGITS as i32 - 1 - magnitude).clamp(0, 9) as usize;
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// `v` rounded to `digits` significant digits for a machine format, in
/// Rust's shortest round-trip form (integer part rounded too, unlike
/// [`number`]): `NaN`, `+Inf`, `-Inf` as OpenMetrics spells them, and never
/// `-0`.
///
/// ```
/// use gpugate::format::significant;
/// assert_eq!(significant(97.14999, 3), "97.1");
/// assert_eq!(significant(1234567.0, 3), "1230000");
/// assert_eq!(significant(0.0123456, 3), "0.0123");
/// ```
pub fn significant(v: f64, digits: usize) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let sci = format!("{:.*e}", digits.max(1) - 1, v);
    let rounded: f64 = sci.parse().unwrap_or(v);
    if rounded == 0.0 {
        return "0".into();
    }
    format!("{rounded}")
}

/// [`number`], or `n/a` for a value that was not measured (never 0).
pub(crate) fn number_or_na(v: Option<f64>) -> String {
    v.map(number).unwrap_or_else(|| "n/a".into())
}

/// A measured value with its unit (`97.12 %`, `312 W`, `42`), `n/a` when
/// absent, scaled to a unit people read: a time below a second in ms, µs
/// or ns (`7.336 µs`, not `0.000007336 s`), and a count or a rate from
/// 1,000 up with k, M or G (`91.85k 1/s`). Counts and unit-less values
/// print bare. Display only: JSON, OpenMetrics and baselines keep the
/// number in the declared unit.
///
/// ```
/// use gpugate::format::value_with_unit;
/// assert_eq!(value_with_unit(Some(0.000007336), "s"), "7.336 µs");
/// assert_eq!(value_with_unit(Some(0.0312478), "s"), "31.25 ms");
/// assert_eq!(value_with_unit(Some(2.5), "s"), "2.5 s");
/// assert_eq!(value_with_unit(Some(91845.2), "1/s"), "91.85k 1/s");
/// assert_eq!(value_with_unit(Some(291.0), "1/s"), "291 1/s");
/// assert_eq!(value_with_unit(Some(39867.0), "MiB"), "39867 MiB");
/// assert_eq!(value_with_unit(Some(2.5e9), ""), "2.5G");
/// assert_eq!(value_with_unit(Some(3451.0), "1/s"), "3.451k 1/s");
/// ```
pub fn value_with_unit(v: Option<f64>, unit: &str) -> String {
    let Some(v) = v else {
        return "n/a".into();
    };
    if !v.is_finite() || v == 0.0 {
        return match unit {
            "" | "count" => number(v),
            _ => format!("{} {unit}", number(v)),
        };
    }
    if let Some(seconds) = time_unit_s(unit) {
        return time_text(v * seconds);
    }
    let (v, prefix) = if counts_or_rate(unit) {
        [(1e9, "G"), (1e6, "M"), (1e3, "k")]
            .into_iter()
            .find(|(from, _)| v.abs() >= *from)
            .map_or((v, ""), |(by, p)| (v / by, p))
    } else {
        (v, "")
    };
    match unit {
        "" | "count" => format!("{}{prefix}", number(v)),
        _ => format!("{}{prefix} {unit}", number(v)),
    }
}

/// Seconds per one of `unit`, when it is a time.
fn time_unit_s(unit: &str) -> Option<f64> {
    Some(match unit.trim() {
        "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        _ => return None,
    })
}

/// A time in seconds in the largest of s, ms, µs, ns that leaves at least 1.
fn time_text(s: f64) -> String {
    let (scale, unit) = [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs")]
        .into_iter()
        .find(|(at, _)| s.abs() >= *at)
        .unwrap_or((1e-9, "ns"));
    format!("{} {unit}", number(s / scale))
}

/// Counts and rates take k, M, G: no unit, `count`, and a rate of a plain
/// word (`1/s`, `samples/s`, `B/s`); never a unit that has its own prefix
/// (`MiB`, `MHz`) or a percentage.
fn counts_or_rate(unit: &str) -> bool {
    match unit.strip_suffix("/s") {
        Some(what) => {
            what == "1"
                || what == "B"
                || (!what.is_empty() && what.chars().all(|c| c.is_ascii_lowercase()))
        }
        None => matches!(unit, "" | "count"),
    }
}

/// A relative change in percent, signed, without the `%` sign: one
/// decimal, none from 100 up (`+12.3`, `-40`, `+150`).
pub(crate) fn percent_change(p: f64) -> String {
    let sign = if p >= 0.0 { "+" } else { "" };
    if p.abs() >= 100.0 {
        format!("{sign}{p:.0}")
    } else {
        format!("{sign}{p:.1}")
    }
}

/// RFC 3339 UTC timestamp of `t` (seconds precision).
pub(crate) fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339_from_unix(secs)
}

/// Current time, RFC 3339 UTC, second precision. Only capture uses it.
pub(crate) fn now_rfc3339() -> String {
    rfc3339_utc(SystemTime::now())
}

/// Seconds since the Unix epoch as RFC 3339 UTC (`2026-11-30T00:53:20Z`),
/// written by humantime. A time past 9999-12-31T23:59:59Z (a file's mtime
/// can say anything) is written as that second: humantime writes 4-digit
/// years only.
pub fn rfc3339_from_unix(secs: u64) -> String {
    const LAST_4_DIGIT_YEAR_SECOND: u64 = 253_402_300_799;
    let secs = secs.min(LAST_4_DIGIT_YEAR_SECOND);
    let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// Seconds with up to 3 decimals and no trailing zeros ("1.5", "12").
pub fn secs(ms: f64) -> String {
    let s = format!("{:.3}", ms / 1000.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn numbers_keep_four_significant_digits_and_their_integer_part() {
        assert_eq!(number(97.123), "97.12");
        assert_eq!(number(97.46), "97.46");
        assert_eq!(number(12.345), "12.35");
        assert_eq!(number(0.0123456), "0.01235");
        assert_eq!(number(0.04), "0.04");
        assert_eq!(number(20270.4), "20270");
        assert_eq!(number(1234.6), "1235");
        assert_eq!(number(5.0), "5");
        assert_eq!(number(1.5), "1.5");
        assert_eq!(number(-3.25), "-3.25");
        assert_eq!(number(-0.0), "0");
        assert_eq!(number(-1e-12), "0");
        assert_eq!(number(f64::NAN), "n/a");
        assert_eq!(number(f64::INFINITY), "n/a");
        assert_eq!(number_or_na(None), "n/a");
    }

    #[test]
    fn values_carry_their_unit_and_changes_their_sign() {
        assert_eq!(value_with_unit(Some(97.123), "%"), "97.12 %");
        assert_eq!(value_with_unit(Some(312.0), "W"), "312 W");
        assert_eq!(value_with_unit(Some(3.0), "count"), "3");
        assert_eq!(value_with_unit(None, "%"), "n/a");
        assert_eq!(percent_change(12.34), "+12.3");
        assert_eq!(percent_change(-40.0), "-40.0");
        assert_eq!(percent_change(150.4), "+150");
        assert_eq!(percent_change(0.0), "+0.0");
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_from_unix(1_796_000_000), "2026-11-30T00:53:20Z");
        assert_eq!(rfc3339_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_from_unix(u64::MAX), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339_utc(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_910_400); // 2026-11-29
        assert_eq!(rfc3339_utc(t), "2026-11-29T00:00:00Z");
    }
}

/// "NVIDIA H200 x2", or "no GPU (host counters only)" for a run recorded
/// with `--no-gpu` (its model is "none", its count 0).
pub(crate) fn gpus_text(model: &str, count: usize) -> String {
    if count == 0 {
        "no GPU (host counters only)".to_string()
    } else {
        format!("{model} x{count}")
    }
}

#[cfg(test)]
mod gpus_text_tests {
    #[test]
    fn no_gpu_is_said_in_words() {
        assert_eq!(super::gpus_text("none", 0), "no GPU (host counters only)");
        assert_eq!(super::gpus_text("NVIDIA H200", 2), "NVIDIA H200 x2");
    }
}
