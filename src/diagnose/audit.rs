//! Checks a finding's words against its own numbers: every number the text
//! shows (other than the rule's fixed words, such as "100 % = one core") is
//! in its evidence table with the same digits, "rose from A to B" has B
//! above A and "fell" below, the table holds only known values under human
//! names, and no value is "n/a". The tests run it on every rule over every
//! recorded fixture and synthetic signature (`tests/diagnosis_prose.rs`,
//! `diagnose::tests`), so a text that its numbers contradict fails CI.

use super::rules::{Piece, Rule, Template};
use super::Finding;

/// What is wrong with `f`'s text (empty: nothing). `rule` is the rule that
/// made it (its fixed words may hold numbers of their own).
pub fn problems(f: &Finding, rule: Option<&Rule>) -> Vec<String> {
    let mut out = Vec::new();
    let who = &f.rule;
    let mut fixed: Vec<String> = Vec::new();
    if let Some(r) = rule {
        literal_numbers(&r.explanation, &mut fixed);
        for t in [&r.change, &r.change_nogpm].into_iter().flatten() {
            literal_numbers(t, &mut fixed);
        }
    }
    let mut table: Vec<String> = Vec::new();
    for row in &f.rows {
        table.extend(numbers(&row.value_text()));
        if let Some(b) = row.baseline_text() {
            table.extend(numbers(&b));
        }
        // A benchmark's own metric is called by its id; the catalogue's
        // metrics and features never are.
        let internal = crate::metrics::all()
            .map(|d| d.id)
            .chain(crate::analysis::feature::Feature::names())
            .filter(|id| id.contains(['_', '.']))
            .any(|id| row.label.contains(id));
        if internal {
            out.push(format!("{who}: row '{}' shows an internal id", row.label));
        }
        if !row.value.is_finite() || row.baseline.is_some_and(|b| !b.is_finite()) {
            out.push(format!("{who}: row '{}' holds a missing value", row.label));
        }
    }
    if f.explanation.contains("n/a") {
        out.push(format!("{who}: the text shows n/a: {}", f.explanation));
    }
    for n in numbers(&f.explanation) {
        if !table.contains(&n) && !fixed.contains(&n) {
            out.push(format!(
                "{who}: the text shows {n}, which its evidence table does not: {}",
                f.explanation
            ));
        }
    }
    for (word, a, b) in moves(&f.explanation) {
        let ok = match word {
            "rose" => b > a,
            "fell" => b < a,
            _ => true,
        };
        if !ok {
            out.push(format!(
                "{who}: says '{word} from {a} to {b}': {}",
                f.explanation
            ));
        }
    }
    out
}

/// Unsigned decimal numbers in `s`, as printed ("82.2", "20270").
pub fn numbers(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let digit_dot =
            c == '.' && !cur.is_empty() && chars.get(i + 1).is_some_and(|n| n.is_ascii_digit());
        if c.is_ascii_digit() || digit_dot {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Every "rose from A to B" / "fell from A to B" of a text, as numbers.
fn moves(s: &str) -> Vec<(&'static str, f64, f64)> {
    let mut out = Vec::new();
    for word in ["rose", "fell"] {
        let pat = format!("{word} from ");
        for (at, _) in s.match_indices(&pat) {
            let rest = &s[at + pat.len()..];
            let Some(to) = rest.find(" to ") else {
                continue;
            };
            let a = numbers(&rest[..to]);
            let b = numbers(&rest[to + 4..]);
            let (Some(a), Some(b)) = (a.first(), b.first()) else {
                continue;
            };
            let sign = |text: &str, n: &str| {
                if text.trim_start().starts_with('-') {
                    -n.parse::<f64>().unwrap_or(f64::NAN)
                } else {
                    n.parse::<f64>().unwrap_or(f64::NAN)
                }
            };
            out.push((word, sign(&rest[..to], a), sign(&rest[to + 4..], b)));
        }
    }
    out
}

fn literal_numbers(t: &Template, out: &mut Vec<String>) {
    for p in &t.pieces {
        match p {
            Piece::Text(s) => out.extend(numbers(s)),
            Piece::If(_, body) => literal_numbers(body, out),
            Piece::Expr(..) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_its_numbers_contradict_is_caught() {
        let row = |label: &str, b: f64, v: f64| super::super::EvidenceRow {
            label: label.into(),
            expr: "x".into(),
            baseline: Some(b),
            value: v,
            unit: Some("%".into()),
        };
        let mut f = super::super::unexplained(&[], true);
        f.rows = vec![row("GPU busy", 99.88, 82.2)];
        f.explanation = "busy fell from 99.88 % to 82.2 %".into();
        assert!(problems(&f, None).is_empty(), "{:?}", problems(&f, None));
        f.explanation = "busy rose from 99.88 % to 82.2 %".into();
        assert_eq!(problems(&f, None).len(), 1);
        f.explanation = "busy fell from 99.88 % to 82.21 %".into();
        assert!(problems(&f, None)[0].contains("82.21"));
        f.explanation = "busy is n/a".into();
        f.rows = vec![row("gpu_busy_pct.mean", 1.0, 2.0)];
        assert_eq!(problems(&f, None).len(), 2, "{:?}", problems(&f, None));
    }

    #[test]
    fn numbers_and_moves_are_read_as_printed() {
        assert_eq!(
            numbers("busy fell from 99.88 % to 82.2 %."),
            ["99.88", "82.2"]
        );
        assert_eq!(numbers("(.item(), 100 % = one core)"), ["100"]);
        assert_eq!(
            moves("fell from 0.9616 to 0.5881 and rose from 3 % to 77 %"),
            [("rose", 3.0, 77.0), ("fell", 0.9616, 0.5881)]
        );
    }
}
