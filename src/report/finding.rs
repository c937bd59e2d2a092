//! How one diagnosis finding is laid out in Markdown and HTML, for the
//! check and the run reports alike: the headline, the explanation, the
//! evidence table (human names, known values only), then "Try:" and the
//! next steps. Plain text (terminal, JUnit) is `Finding::text_lines`, the
//! same parts in the same order.

use crate::diagnose::Finding;
use crate::escape;
use std::fmt::Write as _;

/// A finding in Markdown, numbered `number` (1 = most likely cause).
pub fn markdown(f: &Finding, number: usize) -> String {
    let mut out = format!(
        "**{number}. {}** ({}, `{}`)\n\n",
        escape::markdown_text(&f.title),
        f.severity.as_str(),
        escape::markdown_code(&f.rule)
    );
    if let Some(w) = &f.window {
        let _ = write!(out, "_{}_\n\n", escape::markdown_text(w));
    }
    if !f.explanation.is_empty() {
        let _ = write!(out, "{}\n\n", escape::markdown_text(&f.explanation));
    }
    if !f.rows.is_empty() {
        let change = f.rows.iter().any(|r| r.baseline.is_some());
        out.push_str(if change {
            "| evidence | baseline | new |\n|---|---|---|\n"
        } else {
            "| evidence | value |\n|---|---|\n"
        });
        for r in &f.rows {
            let label = escape::markdown_text(&r.label);
            let value = escape::markdown_text(&r.value_text());
            if change {
                let base = r.baseline_text().unwrap_or_default();
                let _ = writeln!(
                    out,
                    "| {label} | {} | {value} |",
                    escape::markdown_text(&base)
                );
            } else {
                let _ = writeln!(out, "| {label} | {value} |");
            }
        }
        out.push('\n');
    }
    if !f.next_steps.is_empty() {
        out.push_str("Try:\n\n");
        for s in &f.next_steps {
            let _ = writeln!(out, "- {}", escape::markdown_text(s));
        }
        out.push('\n');
    }
    out
}

/// A finding in HTML (a fragment: headline, explanation, evidence table,
/// next steps).
pub fn html(f: &Finding) -> String {
    let mut out = format!(
        r#"<div class="title">{}</div><div class="rule">{} &middot; {}</div>"#,
        escape::html(&f.title),
        f.severity.as_str(),
        escape::html(&f.rule)
    );
    if let Some(w) = &f.window {
        let _ = write!(out, r#"<div class="rule">{}</div>"#, escape::html(w));
    }
    if !f.explanation.is_empty() {
        let _ = write!(out, "<p>{}</p>", escape::html(&f.explanation));
    }
    if !f.rows.is_empty() {
        let change = f.rows.iter().any(|r| r.baseline.is_some());
        out.push_str(r#"<table class="evidence">"#);
        out.push_str(if change {
            "<tr><th>evidence</th><th>baseline</th><th>new</th></tr>"
        } else {
            "<tr><th>evidence</th><th>value</th></tr>"
        });
        for r in &f.rows {
            let _ = write!(out, "<tr><td>{}</td>", escape::html(&r.label));
            if change {
                let _ = write!(
                    out,
                    r#"<td class="n">{}</td>"#,
                    escape::html(&r.baseline_text().unwrap_or_default())
                );
            }
            let _ = write!(
                out,
                r#"<td class="n">{}</td></tr>"#,
                escape::html(&r.value_text())
            );
        }
        out.push_str("</table>");
    }
    if !f.next_steps.is_empty() {
        out.push_str("<p>Try:</p><ul>");
        for s in &f.next_steps {
            let _ = write!(out, "<li>{}</li>", escape::html(s));
        }
        out.push_str("</ul>");
    }
    out
}
