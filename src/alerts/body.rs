//! A notice rendered for each kind of receiver: Alertmanager's API v2
//! alert list, a Slack incoming-webhook message (text plus blocks), and
//! gate's own JSON document with its signature header.
//!
//! Slack reads `<...>` as links and mentions (`<!channel>`) and `&` as the
//! start of an entity in every mrkdwn text: each value that came from the
//! benchmark, the trace or gate.toml goes through `mrkdwn` (Slack's three
//! escapes, control characters as spaces), so a benchmark named
//! `<!channel>` neither pages a channel nor becomes a link.

use super::Notice;
use crate::config::alerts::Destination;
use hmac::{KeyInit, Mac};
use std::time::{Duration, SystemTime};

/// RFC 3339 UTC with milliseconds (Alertmanager compares them).
pub fn rfc3339_ms(t: SystemTime) -> String {
    let d = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    let s = crate::format::rfc3339_from_unix(d.as_secs());
    format!("{}.{:03}Z", s.trim_end_matches('Z'), d.subsec_millis())
}

/// Alertmanager's `POST /api/v2/alerts` body: a list of one alert.
pub fn alertmanager(n: &Notice, d: &Destination, now: SystemTime) -> Vec<u8> {
    let mut labels = serde_json::Map::new();
    labels.insert("alertname".into(), n.name.clone().into());
    labels.insert("severity".into(), n.severity.clone().into());
    for (k, v) in n.labels.iter().chain(&d.labels) {
        labels.insert(k.clone(), v.clone().into());
    }
    let mut annotations = serde_json::Map::new();
    let mut put = |k: &str, v: String| {
        if !v.is_empty() {
            annotations.insert(k.into(), v.into());
        }
    };
    put("title", n.title.clone());
    put("evidence", n.evidence.join("\n"));
    put("description", n.explanation.clone());
    put("what_to_try", n.next_steps.join("\n"));
    put("url", n.url.clone().unwrap_or_default());
    let mut alert = serde_json::json!({
        "labels": labels,
        "annotations": annotations,
        "startsAt": rfc3339_ms(n.starts_at),
    });
    // Firing in a watch: valid for four re-send periods, so an alert whose
    // watch died resolves by itself (Prometheus does the same).
    let ends = match (n.ends_at, n.firing && n.renewed) {
        (Some(e), _) => Some(e.max(n.starts_at)),
        (None, true) => Some(now + d.resend * 4),
        (None, false) => None,
    };
    if let Some(e) = ends {
        alert["endsAt"] = rfc3339_ms(e).into();
    }
    if let Some(u) = &n.url {
        alert["generatorURL"] = u.clone().into();
    }
    serde_json::to_vec(&[alert]).unwrap_or_default()
}

/// Slack's escaping of a value in mrkdwn text: `&`, `<`, `>` as entities
/// (the three Slack asks for), control characters as spaces, a zero-width
/// space in `://` so that a bare URL in a name is not made a link, and at
/// most `max` characters.
pub fn mrkdwn(s: &str, max: usize) -> String {
    entities(s, max).replace("://", ":\u{200b}//")
}

/// `mrkdwn` without the URL break: for gate's own link target.
fn entities(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars().take(max) {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c if crate::escape::is_hostile(c) => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A Slack section's text is at most 3000 characters; values are cut well
/// below it.
const SLACK_VALUE: usize = 600;

fn bullets(lines: &[String]) -> String {
    lines
        .iter()
        .take(8)
        .map(|l| format!("• {}", mrkdwn(l, SLACK_VALUE / 2)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A Slack incoming-webhook message: `text` (the notification's words)
/// and blocks (title, evidence, what to try, labels, link).
pub fn slack(n: &Notice, d: &Destination) -> Vec<u8> {
    let state = n.state().to_uppercase();
    let head = format!(
        "{state} {} [{}]: {}",
        mrkdwn(&n.name, 100),
        mrkdwn(&n.severity, 20),
        mrkdwn(&n.title, SLACK_VALUE)
    );
    let section = |text: String| serde_json::json!({"type": "section", "text": {"type": "mrkdwn", "text": text}});
    // The header is plain text (never parsed for links, mentions or
    // formatting), of gate's own words: state, rule name, severity.
    let plain: String = format!("{state} {} [{}]", n.name, n.severity)
        .chars()
        .map(|c| if crate::escape::is_hostile(c) { ' ' } else { c })
        .take(150)
        .collect();
    let mut blocks = vec![
        serde_json::json!({"type": "header", "text": {"type": "plain_text", "text": plain}}),
        section(mrkdwn(&n.title, SLACK_VALUE)),
    ];
    if !n.explanation.is_empty() {
        blocks.push(section(mrkdwn(&n.explanation, SLACK_VALUE)));
    }
    if !n.evidence.is_empty() {
        blocks.push(section(format!("*Evidence*\n{}", bullets(&n.evidence))));
    }
    if n.firing && !n.next_steps.is_empty() {
        blocks.push(section(format!(
            "*What to try*\n{}",
            bullets(&n.next_steps)
        )));
    }
    let labels: Vec<String> = n
        .labels
        .iter()
        .chain(&d.labels)
        .map(|(k, v)| format!("{}: {}", mrkdwn(k, 64), mrkdwn(v, 200)))
        .collect();
    if !labels.is_empty() {
        blocks.push(serde_json::json!({"type": "context", "elements": [
            {"type": "mrkdwn", "text": labels.join(" · ")}
        ]}));
    }
    // A link: `<url|words>`, the URL's own `|` and `>` would end it early.
    if let Some(u) = n.url.as_deref().filter(|u| !u.contains(['|', '<', '>'])) {
        blocks.push(section(format!("<{}|The run's page>", entities(u, 1000))));
    }
    serde_json::to_vec(&serde_json::json!({"text": head, "blocks": blocks})).unwrap_or_default()
}

/// gate's own document (the `--alerts` line's object) and, with a
/// secret, its signature: `sha256=` and the hex HMAC-SHA256 of the body.
pub fn webhook(n: &Notice, secret: Option<&[u8]>) -> (Vec<u8>, Option<String>) {
    let body = serde_json::to_vec(&n.document).unwrap_or_default();
    let sig = secret.map(|key| signature(key, &body));
    (body, sig)
}

/// `sha256=HEX`, the HMAC-SHA256 of `body` under `key` (the header value
/// a receiver recomputes).
pub fn signature(key: &[u8], body: &[u8]) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::alerts::{AlertsConfig, Kind};
    use std::collections::BTreeMap;

    fn dest(kind: Kind) -> Destination {
        let text = format!(
            "[x]\ntype = \"{}\"\nurl_env = \"U\"\nlabels = {{ team = \"ml\" }}\n",
            kind.as_str()
        );
        let c: AlertsConfig = toml::from_str(&text).unwrap();
        c.destinations[0].clone()
    }

    fn notice(hostile: &str) -> Notice {
        Notice {
            firing: true,
            name: "host_bound".into(),
            severity: "medium".into(),
            title: format!("Host-bound {hostile}"),
            evidence: vec![format!("gpu_busy_pct.mean = 11 % {hostile}")],
            explanation: hostile.into(),
            next_steps: vec![hostile.into()],
            labels: BTreeMap::from([("benchmark".to_string(), hostile.to_string())]),
            url: Some("https://ci.example/run/1?a=1&b=2".into()),
            starts_at: SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
            ends_at: None,
            renewed: true,
            document: serde_json::json!({"rule": "host_bound"}),
        }
    }

    #[test]
    fn slack_escapes_every_value_from_the_benchmark() {
        let hostile = "<!channel> <https://evil|click> & \u{1b}[31m\n https://evil.example/login";
        let body = slack(&notice(hostile), &dest(Kind::Slack));
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let text = v.to_string();
        assert!(!text.contains("<!channel>"), "{text}");
        assert!(!text.contains("<https://evil"), "{text}");
        // A bare URL is not autolinked: `://` is broken by a zero-width space.
        assert!(!text.contains("https://evil.example"), "{text}");
        assert!(
            text.contains("https:\u{200b}//evil.example/login"),
            "{text}"
        );
        assert!(text.contains("&lt;!channel&gt;"), "{text}");
        assert!(!text.contains("\\u001b"), "{text}");
        // gate's own link stays a link, its `&` an entity.
        assert!(
            text.contains("<https://ci.example/run/1?a=1&amp;b=2|The run's page>"),
            "{text}"
        );
        assert!(v["text"]
            .as_str()
            .unwrap()
            .starts_with("FIRING host_bound [medium]"));
    }

    #[test]
    fn alertmanager_labels_annotations_and_times() {
        let d = dest(Kind::Alertmanager);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_100);
        let v: serde_json::Value =
            serde_json::from_slice(&alertmanager(&notice("x"), &d, now)).unwrap();
        let a = &v[0];
        assert_eq!(a["labels"]["alertname"], "host_bound");
        assert_eq!(a["labels"]["team"], "ml");
        assert_eq!(a["labels"]["benchmark"], "x");
        assert_eq!(a["startsAt"], "2023-11-14T22:13:20.123Z");
        // Firing in a watch: four re-send periods ahead.
        assert_eq!(a["endsAt"], "2023-11-14T22:19:00.000Z");
        assert_eq!(a["annotations"]["title"], "Host-bound x");
        let mut once = notice("x");
        once.renewed = false;
        let v: serde_json::Value = serde_json::from_slice(&alertmanager(&once, &d, now)).unwrap();
        assert!(v[0].get("endsAt").is_none());
    }

    /// What a Slack channel and Alertmanager receive, reviewed as text
    /// (src/alerts/snapshots/; refresh with `INSTA_UPDATE=always`).
    #[test]
    fn snapshots_of_the_slack_message_and_the_alertmanager_alert() {
        let mut n = notice("<!channel> & *x*");
        n.next_steps = vec!["Move preprocessing to DataLoader workers (num_workers > 0)".into()];
        let pretty = |b: Vec<u8>| {
            serde_json::to_string_pretty(&serde_json::from_slice::<serde_json::Value>(&b).unwrap())
                .unwrap()
        };
        insta::assert_snapshot!("alert_slack", pretty(slack(&n, &dest(Kind::Slack))));
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_100);
        insta::assert_snapshot!(
            "alert_alertmanager",
            pretty(alertmanager(&n, &dest(Kind::Alertmanager), now))
        );
    }

    #[test]
    fn the_signature_is_rfc_4231_hmac_sha256() {
        // RFC 4231, test case 2.
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
