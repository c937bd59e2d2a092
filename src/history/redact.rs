//! Secrets kept out of every message: THE redaction of a PostgreSQL
//! location (a `postgres://` URL or a libpq keyword string), used by every
//! path that prints one (warnings, errors, JSON, Markdown, JUnit, the
//! history listing and trend page), through `Location::display` and
//! `driver_text`.
//!
//! It parses a location the way the drivers do, and hides the whole place
//! a password can be, not the password's text:
//! - URL user info runs to the LAST `@` after `://` (libpq and the WHATWG
//!   URL parser take the last `@` of the authority; the Rust driver takes
//!   the first `@` of the rest, which lies inside that span), and the
//!   password from the first `:` of it, so a password holding `/`, `?`,
//!   `#` or `@` is hidden whole; `password=` / `sslpassword=` query
//!   parameters (any case, percent-encoded keys too) up to the next `&`.
//! - Keyword strings with libpq's quoting: `key = value`, a value either
//!   single-quoted or bare, with backslash escapes in both
//!   (`password=my\ secret` is one value); keys compared case-insensitively
//!   (`PASSWORD=`). A string that stops parsing hides everything from the
//!   parameter that broke it onwards.
//!
//! A driver's error text is never "redacted" by replacing occurrences of
//! the password in it: with a short password that reveals it by its holes
//! (`error connecting to ***rver`). Messages are built from the redacted
//! location; a driver text that shares four consecutive characters with a
//! password form is left out as a whole (`driver_text`).

/// The keys whose values are secrets, in a URL query or a keyword string.
const SECRET_KEYS: &[&str] = &["password", "sslpassword"];

const HIDDEN: &str = "***";

/// Shown in place of a driver message that may quote a password.
pub(crate) const WITHHELD: &str =
    "(the driver's message is not shown: it may quote part of the password)";

fn is_secret_key(key: &str) -> bool {
    let decoded = percent_encoding::percent_decode_str(key).decode_utf8_lossy();
    SECRET_KEYS
        .iter()
        .any(|k| decoded.trim().eq_ignore_ascii_case(k))
}

/// Where a URL's authority starts, when `conn` is one: as the driver
/// decides, by its scheme alone. Anything else is a keyword string, even
/// when a value holds `://` (`password='x://y'`).
fn url_start(conn: &str) -> Option<usize> {
    let lead = conn.len() - conn.trim_start().len();
    ["postgres://", "postgresql://"]
        .iter()
        .find(|p| conn[lead..].starts_with(*p))
        .map(|p| lead + p.len())
}

/// The location with every password replaced by `***`.
pub(crate) fn redact(conn: &str) -> String {
    match url_start(conn) {
        Some(start) => redact_url(conn, start),
        None => redact_keywords(conn).0,
    }
}

/// Whether a location that is not a PostgreSQL URL or keyword string may
/// still be a mistyped one holding a password (`postgres:/u:pw@h/db`,
/// `u:pw@h/db`, `postgres//u:pw@h`): it starts like the scheme, or has
/// user info (a `:` before its last `@`). Taken as a file name, its
/// password would be printed and written into the file system.
pub(crate) fn looks_like_credentials(loc: &str) -> bool {
    let lower = loc.trim_start().to_ascii_lowercase();
    let after_scheme = ["postgresql", "postgres"]
        .iter()
        .find_map(|p| lower.strip_prefix(p));
    after_scheme.is_some_and(|rest| rest.starts_with(':') || rest.starts_with("//"))
        || loc.rfind('@').is_some_and(|at| loc[..at].contains(':'))
}

/// A location string that is not a URL or keyword string, for messages:
/// any user-info-like span (from the first `:` to the last `@`) hidden,
/// the way `redact_url` hides a URL's.
pub(crate) fn redact_malformed(loc: &str) -> String {
    match (loc.find(':'), loc.rfind('@')) {
        (Some(colon), Some(at)) if colon < at => {
            format!("{}{HIDDEN}{}", &loc[..=colon], &loc[at..])
        }
        _ => loc.to_string(),
    }
}

/// `(user info, rest)` of a URL whose authority starts at `start`: user
/// info up to the last `@` (None without one).
fn split_userinfo(url: &str, start: usize) -> (Option<&str>, &str) {
    let rest = &url[start..];
    match rest.rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    }
}

fn redact_url(url: &str, start: usize) -> String {
    let mut out = url[..start].to_string();
    let (userinfo, rest) = split_userinfo(url, start);
    if let Some(userinfo) = userinfo {
        match userinfo.find(':') {
            Some(colon) => {
                out.push_str(&userinfo[..=colon]);
                out.push_str(HIDDEN);
            }
            None => out.push_str(userinfo),
        }
        out.push('@');
    }
    match rest.find('?') {
        Some(q) => {
            out.push_str(&rest[..=q]);
            let parts: Vec<String> = rest[q + 1..]
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if is_secret_key(k) => format!("{k}={HIDDEN}"),
                    _ => kv.to_string(),
                })
                .collect();
            out.push_str(&parts.join("&"));
        }
        None => out.push_str(rest),
    }
    out
}

/// One parameter of a keyword string, as libpq reads it.
struct Param<'a> {
    key: &'a str,
    /// The value as written (quotes and escapes included).
    raw: &'a str,
    /// The value as the driver reads it.
    value: String,
}

/// Read `key = value` at the start of `s` (no leading white space); the
/// parameter and the rest, or None when `s` does not parse there.
fn param(s: &str) -> Option<(Param<'_>, &str)> {
    let key_len = s.find(|c: char| c.is_whitespace() || c == '=')?;
    let key = &s[..key_len];
    if key.is_empty() {
        return None;
    }
    let after = s[key_len..].trim_start().strip_prefix('=')?;
    let v = after.trim_start();
    let (value, len) = value_of(v)?;
    Some((
        Param {
            key,
            raw: &v[..len],
            value,
        },
        &v[len..],
    ))
}

/// A value at the start of `v`: `'quoted \' value'` or bare up to white
/// space, backslash escaping the next character in both. Its decoded text
/// and its length as written; None when a quote never closes.
fn value_of(v: &str) -> Option<(String, usize)> {
    let mut value = String::new();
    let (quoted, body) = match v.strip_prefix('\'') {
        Some(inner) => (true, inner),
        None => (false, v),
    };
    let offset = usize::from(quoted);
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, next)) = chars.next() {
                    value.push(next);
                }
            }
            '\'' if quoted => return Some((value, offset + i + 1)),
            c if !quoted && c.is_whitespace() => return Some((value, i)),
            c => value.push(c),
        }
    }
    if quoted {
        None
    } else {
        Some((value, v.len()))
    }
}

/// The keyword string redacted, and the passwords it holds (as written and
/// as read). A part that does not parse is hidden to the end.
fn redact_keywords(s: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut secrets = Vec::new();
    let mut rest = s;
    loop {
        let trimmed = rest.trim_start();
        out.push_str(&rest[..rest.len() - trimmed.len()]);
        rest = trimmed;
        if rest.is_empty() {
            break;
        }
        match param(rest) {
            Some((p, after)) => {
                if is_secret_key(p.key) {
                    out.push_str(p.key);
                    out.push('=');
                    out.push_str(HIDDEN);
                    // `password='x'host=y`: keep `***` a word of its own.
                    if !after.is_empty() && !after.starts_with(char::is_whitespace) {
                        out.push(' ');
                    }
                    secrets.push(p.raw.to_string());
                    secrets.push(p.value);
                } else {
                    out.push_str(&rest[..rest.len() - after.len()]);
                }
                rest = after;
            }
            None => {
                if !out.is_empty() && !out.ends_with(char::is_whitespace) {
                    out.push(' ');
                }
                out.push_str(HIDDEN);
                secrets.push(rest.to_string());
                break;
            }
        }
    }
    (out, secrets)
}

/// Every form of every password `conn` holds: as written, as decoded by
/// the driver, and the whole span a password may occupy.
pub fn secrets(conn: &str) -> Vec<String> {
    let mut found = Vec::new();
    match url_start(conn) {
        Some(start) => {
            let (userinfo, rest) = split_userinfo(conn, start);
            if let Some((_, pw)) = userinfo.and_then(|u| u.split_once(':')) {
                found.push(pw.to_string());
                found.push(
                    percent_encoding::percent_decode_str(pw)
                        .decode_utf8_lossy()
                        .into_owned(),
                );
                // The Rust driver ends the password at the first '@'.
                if let Some((first, _)) = pw.split_once('@') {
                    found.push(first.to_string());
                }
            }
            if let Some((_, query)) = rest.split_once('?') {
                for (k, v) in query.split('&').filter_map(|kv| kv.split_once('=')) {
                    if is_secret_key(k) {
                        found.push(v.to_string());
                        found.push(
                            percent_encoding::percent_decode_str(v)
                                .decode_utf8_lossy()
                                .into_owned(),
                        );
                    }
                }
            }
        }
        None => found = redact_keywords(conn).1,
    }
    if let Ok(config) = conn.parse::<::postgres::Config>() {
        if let Some(p) = config.get_password() {
            found.push(String::from_utf8_lossy(p).into_owned());
        }
    }
    found.retain(|p| !p.is_empty());
    found.sort();
    found.dedup();
    found
}

/// Whether `text` holds four consecutive characters of `secret` (all of it
/// when shorter).
fn shares_a_piece(text: &str, secret: &str) -> bool {
    let chars: Vec<char> = secret.chars().collect();
    let width = chars.len().min(4);
    chars.windows(width).any(|w| {
        let piece: String = w.iter().collect();
        text.contains(&piece)
    })
}

/// A driver's message about `conn`, fit to print: the connection string
/// itself replaced by its redaction, and the whole message withheld when
/// it still holds a piece of a password.
pub(crate) fn driver_text(text: &str, conn: &str) -> String {
    let text = if conn.is_empty() {
        text.to_string()
    } else {
        text.replace(conn, &redact(conn))
    };
    if secrets(conn).iter().any(|s| shares_a_piece(&text, s)) {
        return WITHHELD.to_string();
    }
    text
}

/// Why the driver's parser refused `conn`, told from the redacted string:
/// the driver's own error on it, or, when only the password was at fault,
/// a sentence that says so without quoting anything of it.
pub(crate) fn parse_error(conn: &str) -> Option<String> {
    conn.parse::<::postgres::Config>().err()?;
    let shown = redact(conn);
    Some(match shown.parse::<::postgres::Config>() {
        Err(e) => driver_text(&error_chain(&e), conn),
        Ok(_) => "the password (not shown) does not parse".to_string(),
    })
}

/// An error and its causes on one line (a parse error has no server
/// fields: `postgres::describe` is for errors of a connection).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !s.contains(&text) {
            s.push_str(&format!(": {text}"));
        }
        cause = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistyped_url_is_told_from_a_file_name() {
        for typo in [
            "postgres:/u:pw@h/db",
            "POSTGRESQL:u@h",
            "postgres//u:pw@h",
            "u:pw@h/db",
        ] {
            assert!(looks_like_credentials(typo), "{typo}");
            assert!(!redact_malformed(typo).contains("pw"), "{typo}");
        }
        for file in [
            "postgres.sqlite",
            "postgres/history.db",
            "a@b.sqlite",
            ".gate/h.sqlite",
        ] {
            assert!(!looks_like_credentials(file), "{file}");
        }
    }

    #[test]
    fn url_user_info_runs_to_the_last_at() {
        for (url, want) in [
            (
                "postgres://gate:Ab/Cd+Ef==@127.0.0.1:1/postgres",
                "postgres://gate:***@127.0.0.1:1/postgres",
            ),
            (
                "postgres://gate:a?b@c#d@h/db?sslmode=disable",
                "postgres://gate:***@h/db?sslmode=disable",
            ),
            (
                "postgresql://u@h/db?PASSWORD=x&Pass%77ord=y&sslpassword=z&a=b",
                "postgresql://u@h/db?PASSWORD=***&Pass%77ord=***&sslpassword=***&a=b",
            ),
            ("postgres://gate@localhost/h", "postgres://gate@localhost/h"),
            ("postgres://h:5432/db", "postgres://h:5432/db"),
        ] {
            assert_eq!(redact(url), want, "{url}");
        }
    }

    #[test]
    fn keyword_strings_follow_libpq_quoting_and_case() {
        for (text, want) in [
            ("password=my\\ secret host=x", "password=*** host=x"),
            ("host=x PASSWORD=s3cret", "host=x PASSWORD=***"),
            ("password = 'it\\'s a b' host=x", "password=*** host=x"),
            // A value that never ends hides the rest, key and all.
            ("dbname=a password='unclosed secret", "dbname=a ***"),
            ("host=x password", "host=x ***"),
            ("user=password password=p", "user=password password=***"),
            // Found by the fuzz campaign: a value holding "://" is no URL.
            (
                "host=h password='ipostgresql://t\\'s a b' dbname=d",
                "host=h password=*** dbname=d",
            ),
            ("mysql://u:pw@h/db", "***"),
        ] {
            assert_eq!(redact(text), want, "{text}");
        }
        let s = secrets("host=x password=my\\ secret");
        assert!(s.contains(&"my secret".to_string()), "{s:?}");
        assert!(s.contains(&"my\\ secret".to_string()), "{s:?}");
    }

    #[test]
    fn a_driver_text_is_kept_whole_or_withheld_never_holed() {
        let conn = "postgres://gate:rver@127.0.0.1:1/db";
        assert_eq!(
            driver_text("error connecting to server", conn),
            WITHHELD,
            "a message holding the password is withheld, not holed"
        );
        let conn = "postgres://gate:Zq9!xW@127.0.0.1:1/db";
        assert_eq!(
            driver_text(&format!("cannot reach {conn}: refused"), conn),
            "cannot reach postgres://gate:***@127.0.0.1:1/db: refused"
        );
    }

    #[test]
    fn parse_errors_are_told_from_the_redacted_string() {
        let e = parse_error("host=x PASSWORD=s3cret").unwrap();
        assert!(!e.contains("s3cret"), "{e}");
        assert!(e.contains("PASSWORD"), "{e}");
        let e = parse_error("host=x password='s3cret").unwrap();
        assert!(!e.contains("s3cret"), "{e}");
        assert!(parse_error("host=x password=ok").is_none());
    }
}
