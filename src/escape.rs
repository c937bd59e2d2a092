//! The one escaping module. Text that came from outside gate (trace headers,
//! paths, command lines, the benchmark's output, rule files, gate.toml,
//! environment variables) reaches an output only through ONE function here,
//! chosen by where it lands:
//!
//! | output context                              | function            |
//! |---------------------------------------------|---------------------|
//! | terminal / CI log line (stdout, stderr)     | [`terminal`]        |
//! | Markdown prose, list item, table cell       | [`markdown_text`]   |
//! | Markdown inside a `` `code span` ``         | [`markdown_code`]   |
//! | HTML element text or quoted attribute       | [`html`]            |
//! | XML element text (JUnit)                    | [`xml_text`]        |
//! | XML double-quoted attribute (JUnit)         | [`xml_attr`]        |
//! | GitHub workflow command message (`::error`) | [`github_data`]     |
//! | GitHub workflow command property (`title=`) | [`github_property`] |
//! | OpenMetrics label value / HELP text         | [`openmetrics_label`] |
//! | TOML basic string (`"..."`)                 | [`toml_string`]     |
//! | TOML comment (`# ...`)                      | [`toml_comment`]    |
//! | one shell word the user may copy and run    | [`shell_word`]      |
//!
//! One rule for characters that could drive a terminal or hide text
//! ([`is_hostile`]: C0 controls such as ESC, BEL, CR, LF and TAB, DEL, C1
//! controls, and the Unicode bidi overrides and isolates of "Trojan
//! Source", CVE-2021-42574): wherever the format has no safe raw form for
//! them, they are shown VISIBLY in Rust's escape notation (`\u{1b}`, `\n`,
//! `\t`), so nothing silently disappears and nothing is interpreted.
//! Functions never fail and never truncate; bounding sizes is the caller's
//! job.

/// Whether `c` must not reach a human-facing output raw: it moves the
/// cursor, rings, starts an escape sequence (ESC, 8-bit CSI), or reorders
/// what the reader sees (bidi controls).
pub fn is_hostile(c: char) -> bool {
    c.is_control() // C0, DEL, C1 (U+0080..=U+009F)
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Push the visible form of a hostile character: `\n`, `\r`, `\t`, or
/// `\u{1b}` (lowercase hex, Rust's notation).
fn push_visible(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => out.extend(c.escape_unicode()),
    }
}

/// One line for a terminal or CI log: every hostile character (ESC, BEL,
/// CR, LF, TAB, other controls, bidi overrides) shown visibly, so a field
/// can neither drive the terminal (colours, cursor moves, title changes,
/// hyperlinks) nor break or disguise the line.
///
/// ```
/// assert_eq!(gpugate::escape::terminal("a\u{1b}[31mb\n"), "a\\u{1b}[31mb\\n");
/// ```
pub fn terminal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_hostile(c) {
            push_visible(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// Markdown text (paragraph, list item, heading, table cell): no raw HTML,
/// no table break, no emphasis, link, heading or code surprises, one line.
/// Markdown punctuation is backslash-escaped (it renders as itself), `<`,
/// `>` and `&` become entities, line breaks become spaces, other hostile
/// characters are shown visibly.
pub fn markdown_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' => out.push_str("\\|"),
            // GitHub's mentions (`@team`), issue references (`#1`) and
            // autolinks (`https://`, `www.`) act on rendered text, where a
            // backslash is gone: a zero-width space after the trigger
            // breaks them and shows nothing (issue 41.6).
            '@' => out.push_str("@&#8203;"),
            '#' => out.push_str("\\#&#8203;"),
            ':' if rest.starts_with("//") => out.push_str(":&#8203;"),
            '.' if out.len() >= 3
                && out.as_bytes()[out.len() - 3..].eq_ignore_ascii_case(b"www") =>
            {
                out.push_str("&#8203;.")
            }
            '\\' | '`' | '*' | '_' | '[' | ']' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c if is_hostile(c) => push_visible(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// The inside of a single-backtick Markdown code span (also in a table
/// cell). Code spans render their content literally (entities and
/// backslashes are not decoded), so only what could end the span or the
/// table cell is replaced: a backtick becomes `'`, `|` is escaped (GitHub
/// removes that one backslash inside tables), line breaks become spaces.
pub fn markdown_code(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '`' => out.push('\''),
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            c if is_hostile(c) => push_visible(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// HTML element text and single- or double-quoted attribute values. Line
/// breaks and tabs are kept (they are plain whitespace in HTML); other
/// hostile characters are shown visibly.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if is_hostile(c) => push_visible(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// XML 1.0 `Char` production: what an XML document may contain at all.
fn is_xml_char(c: char) -> bool {
    matches!(c as u32,
        0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
}

fn xml(s: &str, attr: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            // `>` too, so `]]>` can never appear in text.
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Attribute values normalise raw whitespace: keep it as refs.
            '\n' if attr => out.push_str("&#10;"),
            '\n' => out.push('\n'),
            '\r' => out.push_str("&#13;"),
            '\t' if attr => out.push_str("&#9;"),
            '\t' => out.push('\t'),
            // Not XML at all (NUL, ESC, U+FFFE...) or hostile to whoever
            // reads the report: shown, never dropped or written raw.
            c if !is_xml_char(c) || is_hostile(c) => push_visible(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// XML element text (JUnit failure bodies, `system-out`): well-formed
/// whatever the input (`]]>`, NUL and ESC included); line breaks kept.
pub fn xml_text(s: &str) -> String {
    xml(s, false)
}

/// A double-quoted XML attribute value: as [`xml_text`], with line breaks
/// and tabs as character references so they survive attribute
/// normalisation.
pub fn xml_attr(s: &str) -> String {
    xml(s, true)
}

/// The message of a GitHub workflow command (`::error title=...::MESSAGE`),
/// as @actions/core `escapeData`: `%`, CR and LF percent-encoded (a
/// multi-line message stays one command). Other hostile characters are
/// shown visibly (the runner log renders ANSI sequences).
pub fn github_data(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c if is_hostile(c) => push_visible(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// A property value of a GitHub workflow command (`title=`), as
/// @actions/core `escapeProperty`: as [`github_data`], plus `:` and `,`.
/// `%` is encoded first, so `%3A` never becomes `%253A`.
pub(crate) fn github_property(s: &str) -> String {
    github_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// An OpenMetrics label value (inside `"..."`) or `# HELP` text: `\`, `"`
/// and LF escaped as the exposition format defines.
pub(crate) fn openmetrics_label(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            // OpenMetrics has no escape for them: shown visibly, with the
            // backslash doubled so the label stays valid (`\\u{1b}`).
            c if is_hostile(c) => {
                let mut visible = String::new();
                push_visible(&mut visible, c);
                out.push_str(&visible.replace('\\', "\\\\"));
            }
            c => out.push(c),
        }
    }
    out
}

/// A TOML basic string, quotes included: `"`, `\` and control characters
/// escaped as TOML defines, so any text reads back unchanged.
pub fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Text inside a TOML comment: comments end at a line break and cannot
/// hold control characters, so hostile characters are shown visibly.
pub(crate) fn toml_comment(s: &str) -> String {
    terminal(s)
}

/// One POSIX shell word: plain words as they are, anything else in single
/// quotes (a `'` inside becomes `'\''`), so a printed command can be
/// copied and run as it was recorded.
pub(crate) fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The strings that break naive writers, in one place.
    const HOSTILE: &str =
        "a\u{1b}[31mred\u{7}\r\n<b>&amp;</b> | `x` ]]> \"q\" 'p' %25 \u{202e}evil\u{9b}2J";

    #[test]
    fn terminal_shows_every_control_and_bidi_character() {
        let t = terminal(HOSTILE);
        assert!(!t.chars().any(is_hostile), "{t:?}");
        assert!(t.starts_with("a\\u{1b}[31mred\\u{7}\\r\\n<b>"), "{t}");
        assert!(t.contains("\\u{202e}evil\\u{9b}2J"), "{t}");
        assert_eq!(terminal("plain text, 97 %"), "plain text, 97 %");
    }

    #[test]
    fn markdown_text_cannot_open_html_tables_or_emphasis() {
        let m = markdown_text(HOSTILE);
        assert!(
            !m.contains('<') && !m.contains('\n') && !m.contains(" | "),
            "{m}"
        );
        assert!(
            m.contains("&lt;b&gt;&amp;amp;&lt;/b&gt; \\| \\`x\\`"),
            "{m}"
        );
        assert!(!m.chars().any(is_hostile), "{m:?}");
        assert_eq!(markdown_text("sm_active_pct *"), "sm\\_active\\_pct \\*");
    }

    #[test]
    fn markdown_code_cannot_close_the_span_or_the_cell() {
        assert_eq!(markdown_code("a`b|c\nd<e>"), "a'b\\|c d<e>");
        assert!(!markdown_code(HOSTILE).chars().any(is_hostile));
    }

    #[test]
    fn html_escapes_markup_quotes_and_controls() {
        assert_eq!(
            html(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(html("a\u{1b}[31mb\nc"), "a\\u{1b}[31mb\nc");
    }

    #[test]
    fn xml_drops_nothing_silently_and_never_leaves_cdata_end() {
        let s = "a\u{1b}[31m]]>\"<'&\u{0}\u{FFFE}\n";
        assert_eq!(
            xml_text(s),
            "a\\u{1b}[31m]]&gt;&quot;&lt;&apos;&amp;\\u{0}\\u{fffe}\n"
        );
        assert_eq!(xml_attr("x\ny\tz"), "x&#10;y&#9;z");
    }

    #[test]
    fn github_commands_are_escaped_like_actions_core() {
        assert_eq!(github_data("50% down\r\nnext"), "50%25 down%0D%0Anext");
        assert_eq!(github_property("gpu:0, sm"), "gpu%3A0%2C sm");
        assert_eq!(
            github_property("p95: 12%, gpu:1"),
            "p95%3A 12%25%2C gpu%3A1"
        );
        assert_eq!(github_data("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
    }

    #[test]
    fn toml_and_shell_quote_what_they_must() {
        assert_eq!(toml_string("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
        assert_eq!(toml_comment("x\ny"), "x\\ny");
        assert_eq!(shell_word("train.py"), "train.py");
        assert_eq!(shell_word("it's here"), "'it'\\''s here'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn openmetrics_labels_escape_backslash_quote_newline() {
        assert_eq!(openmetrics_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    }
}
