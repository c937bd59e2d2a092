//! The checks every section of gate.toml shares, and that the other TOML
//! files (baselines, accept files) use too (a room of its own, below every
//! room that reads a file, so no room imports `config` back): safe names, fractions and
//! tolerances, and where in the text a TOML error is (line, column) with
//! the one-line message that names it.

use crate::error::GateError;

/// An absolute tolerance: a finite number from 0 to
/// `limits::MAX_ABS_VALUE` (beyond it a tolerance waves everything through).
pub(crate) fn check_absolute(v: f64) -> Result<(), String> {
    if v.is_finite() && (0.0..=crate::limits::MAX_ABS_VALUE).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "{v} is not a tolerance; use a number from 0 to {:e} (the metric's unit)",
            crate::limits::MAX_ABS_VALUE
        ))
    }
}

/// A relative tolerance: a fraction from 0 to 10.
pub(crate) fn check_fraction(v: f64) -> Result<(), String> {
    if v.is_finite() && (0.0..=10.0).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "{v} is not a fraction; write 0.10 for 10 % (0 to 10 allowed)"
        ))
    }
}

/// Names that are safe as a file stem, a JUnit classname part and an
/// OpenMetrics name part.
pub(crate) fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        && !s.starts_with('.')
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let mut cut = offset;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let before = &text[..cut];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    (line, before[line_start..].chars().count() + 1)
}

/// A one-line error for a TOML parse/deserialize failure: `origin: line L,
/// column C: message; fix`.
pub(crate) fn toml_error(origin: &str, text: &str, e: &toml::de::Error, fix: &str) -> GateError {
    let message = e.message().trim().replace('\n', " ");
    let location = match e.span() {
        Some(span) => {
            let (l, c) = line_col(text, span.start);
            format!("line {l}, column {c}: ")
        }
        None => String::new(),
    };
    GateError::bad_file(origin, format!("{location}{message}; {fix}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\ncé d", 7), (2, 4));
        assert_eq!(line_col("x", 0), (1, 1));
    }
}
