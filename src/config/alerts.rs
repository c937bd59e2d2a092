//! `[alerts]` of gate.toml: where alerts go (`[alerts.NAME]`, several at
//! once) and what a check sends (`on`). A leaf of `config`, which assembles
//! the document from it; `alerts` delivers by it.
//!
//! ```toml
//! [alerts]
//! on = ["regression", "drift", "invalid"]   # check and suites; none by default
//!
//! [alerts.oncall]
//! type = "alertmanager"        # or "slack", "webhook"
//! url_env = "GATE_ALERTMANAGER_URL"
//! labels = { team = "ml-perf" }
//! required = false             # true: a failed delivery exits 3 in check
//! timeout = "5s"               # per attempt
//! retries = 2                  # attempts after the first, with backoff
//! queue = 100                  # watch: alerts held while the receiver is down
//! resend = "1m"                # alertmanager: re-send while firing
//! secret_env = "..."           # webhook only: HMAC-SHA256 signature key
//! ```
//!
//! The URL (and the webhook's secret) come from environment variables
//! only: a Slack webhook URL is a credential, and gate.toml is committed.
//! The file names the variable; gate never prints or stores its value.

use std::collections::BTreeMap;
use std::time::Duration;

/// What a check or suite sends an alert for (`[alerts] on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Trigger {
    /// The run regressed (exit 1).
    Regression,
    /// The history found drift (`[history.drift]`).
    Drift,
    /// The run could not be judged (verdict invalid, unmeasured or error).
    Invalid,
}

impl Trigger {
    pub const ALL: [Trigger; 3] = [Trigger::Regression, Trigger::Drift, Trigger::Invalid];

    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Regression => "regression",
            Trigger::Drift => "drift",
            Trigger::Invalid => "invalid",
        }
    }
}

/// The kind of receiver (`type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Alertmanager's API v2 (`POST /api/v2/alerts`).
    Alertmanager,
    /// A Slack incoming webhook.
    Slack,
    /// gate's own JSON document, optionally signed.
    Webhook,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Alertmanager, Kind::Slack, Kind::Webhook];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Alertmanager => "alertmanager",
            Kind::Slack => "slack",
            Kind::Webhook => "webhook",
        }
    }
}

/// One `[alerts.NAME]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct Destination {
    pub name: String,
    pub kind: Kind,
    /// The environment variable that holds the URL (never the URL).
    pub url_env: String,
    /// Webhook: the variable that holds the HMAC-SHA256 key.
    pub secret_env: Option<String>,
    /// Extra labels on every alert sent here.
    pub labels: BTreeMap<String, String>,
    /// A failed delivery fails a check (exit 3) instead of a warning.
    pub required: bool,
    /// Per attempt, connection to response.
    pub timeout: Duration,
    /// Attempts after the first (connection errors, timeouts, 429, 5xx).
    pub retries: u32,
    /// Watch: alerts held per destination; beyond it the oldest is dropped.
    pub queue: usize,
    /// Alertmanager: a firing alert is re-sent this often.
    pub resend: Duration,
}

/// `[alerts]`: the destinations, in file order, and what a check sends.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(try_from = "toml::Table")]
pub struct AlertsConfig {
    pub on: Vec<Trigger>,
    pub destinations: Vec<Destination>,
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);
pub const DEFAULT_RETRIES: u32 = 2;
pub const MAX_RETRIES: u32 = 10;
pub const DEFAULT_QUEUE: usize = 100;
pub const MAX_QUEUE: usize = 10_000;
/// Prometheus re-sends firing alerts every minute (its `resend-delay`).
pub const DEFAULT_RESEND: Duration = Duration::from_secs(60);
const MAX_DESTINATIONS: usize = 16;
const MAX_LABELS: usize = 32;

/// Label names as Alertmanager (Prometheus) accepts them.
fn is_label_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        && s.len() <= 128
}

/// Environment variable names a shell can set.
fn is_env_name(s: &str) -> bool {
    is_label_name(s)
}

/// The labels gate sets itself; a user label may not take their place.
pub const OWN_LABELS: [&str; 7] = [
    "alertname",
    "severity",
    "gpu",
    "host",
    "benchmark",
    "baseline",
    "workload",
];

impl TryFrom<toml::Table> for AlertsConfig {
    type Error = String;

    fn try_from(t: toml::Table) -> Result<Self, String> {
        let mut cfg = AlertsConfig::default();
        for (key, value) in t {
            if key == "on" {
                cfg.on = triggers(&value)?;
                continue;
            }
            let toml::Value::Table(table) = value else {
                return Err(format!(
                    "[alerts] {key}: expected a table [alerts.{key}] with type and url_env, or `on = [\"regression\", \"drift\", \"invalid\"]`"
                ));
            };
            cfg.destinations.push(destination(&key, table)?);
        }
        if cfg.destinations.len() > MAX_DESTINATIONS {
            return Err(format!(
                "[alerts]: {} destinations; give at most {MAX_DESTINATIONS}",
                cfg.destinations.len()
            ));
        }
        if !cfg.on.is_empty() && cfg.destinations.is_empty() {
            return Err(
                "[alerts] on is set but no [alerts.NAME] destination is: add one (type and url_env)"
                    .into(),
            );
        }
        Ok(cfg)
    }
}

fn triggers(v: &toml::Value) -> Result<Vec<Trigger>, String> {
    let fix = "write e.g. on = [\"regression\", \"drift\", \"invalid\"]";
    let list = v
        .as_array()
        .ok_or_else(|| format!("[alerts] on: expected a list; {fix}"))?;
    let mut out = Vec::new();
    for item in list {
        let s = item.as_str().unwrap_or("");
        let t = Trigger::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "[alerts] on: unknown '{}'; {fix}",
                    crate::escape::terminal(&item.to_string())
                )
            })?;
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out.sort();
    Ok(out)
}

/// One `[alerts.NAME]` table, every key checked.
fn destination(name: &str, mut t: toml::Table) -> Result<Destination, String> {
    let at = format!("[alerts.{name}]");
    if !is_label_name(name) {
        return Err(format!(
            "{at}: a destination name is letters, digits and '_' (it names the destination in warnings)"
        ));
    }
    let mut take_str = |key: &str| -> Result<Option<String>, String> {
        match t.remove(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!(
                "{at} {key}: expected a string, found {}",
                other.type_str()
            )),
        }
    };
    let kinds = Kind::ALL.map(Kind::as_str).join("\", \"");
    let kind = match take_str("type")? {
        Some(k) => Kind::ALL
            .into_iter()
            .find(|x| x.as_str() == k)
            .ok_or_else(|| {
                format!(
                    "{at} type: unknown '{}'; use one of \"{kinds}\"",
                    crate::escape::terminal(&k)
                )
            })?,
        None => return Err(format!("{at}: no type; add type = one of \"{kinds}\"")),
    };
    let url_env = take_str("url_env")?.ok_or_else(|| {
        format!("{at}: no url_env; name the environment variable that holds the URL (url_env = \"MY_URL\"): the URL itself never goes in gate.toml")
    })?;
    let secret_env = take_str("secret_env")?;
    for (key, v) in [
        ("url_env", Some(&url_env)),
        ("secret_env", secret_env.as_ref()),
    ] {
        if let Some(v) = v.filter(|v| !is_env_name(v)) {
            return Err(format!(
                "{at} {key}: '{}' is not an environment variable name (letters, digits, '_'); name the variable, not its value",
                crate::escape::terminal(v)
            ));
        }
    }
    if secret_env.is_some() && kind != Kind::Webhook {
        return Err(format!(
            "{at} secret_env: only a webhook signs its body; remove it or set type = \"webhook\""
        ));
    }
    let timeout = duration(
        &at,
        "timeout",
        take_str("timeout")?,
        DEFAULT_TIMEOUT,
        MAX_TIMEOUT,
    )?;
    let resend = duration(
        &at,
        "resend",
        take_str("resend")?,
        DEFAULT_RESEND,
        Duration::from_secs(3600),
    )?;
    if resend < Duration::from_secs(1) {
        return Err(format!("{at} resend: at least 1s (Prometheus uses 1m)"));
    }
    let (retries, queue, required) = counts(&at, &mut t)?;
    let labels = labels(&at, t.remove("labels"))?;
    if let Some(key) = t.keys().next() {
        return Err(format!(
            "{at}: unknown key '{}'; known: type, url_env, secret_env, labels, required, timeout, retries, queue, resend",
            crate::escape::terminal(key)
        ));
    }
    Ok(Destination {
        name: name.to_string(),
        kind,
        url_env,
        secret_env,
        labels,
        required,
        timeout,
        retries,
        queue,
        resend,
    })
}

/// `retries`, `queue` and `required` of a destination's table.
fn counts(at: &str, t: &mut toml::Table) -> Result<(u32, usize, bool), String> {
    let int = |v: Option<toml::Value>, key: &str, default: i64, max: i64, min: i64| {
        match v {
        None => Ok(default),
        Some(toml::Value::Integer(i)) if (min..=max).contains(&i) => Ok(i),
        Some(other) => Err(format!(
            "{at} {key}: {other} is out of range; give a whole number from {min} to {max} (default {default})"
        )),
    }
    };
    let retries = int(
        t.remove("retries"),
        "retries",
        DEFAULT_RETRIES.into(),
        MAX_RETRIES.into(),
        0,
    )? as u32;
    let queue = int(
        t.remove("queue"),
        "queue",
        DEFAULT_QUEUE as i64,
        MAX_QUEUE as i64,
        1,
    )? as usize;
    let required = match t.remove("required") {
        None => false,
        Some(toml::Value::Boolean(b)) => b,
        Some(other) => {
            return Err(format!(
                "{at} required: expected true or false, found {other}"
            ))
        }
    };
    Ok((retries, queue, required))
}

fn duration(
    at: &str,
    key: &str,
    v: Option<String>,
    default: Duration,
    max: Duration,
) -> Result<Duration, String> {
    let Some(s) = v else {
        return Ok(default);
    };
    match humantime::parse_duration(s.trim()) {
        Ok(d) if !d.is_zero() && d <= max => Ok(d),
        _ => Err(format!(
            "{at} {key}: '{}' is not a duration up to {}; write e.g. \"{}\"",
            crate::escape::terminal(&s),
            humantime::format_duration(max),
            humantime::format_duration(default)
        )),
    }
}

fn labels(at: &str, v: Option<toml::Value>) -> Result<BTreeMap<String, String>, String> {
    let Some(v) = v else {
        return Ok(BTreeMap::new());
    };
    let table = v.as_table().ok_or_else(|| {
        format!("{at} labels: expected a table, e.g. labels = {{ team = \"ml\" }}")
    })?;
    if table.len() > MAX_LABELS {
        return Err(format!("{at} labels: at most {MAX_LABELS}"));
    }
    let mut out = BTreeMap::new();
    for (k, v) in table {
        if !is_label_name(k) || OWN_LABELS.contains(&k.as_str()) {
            return Err(format!(
                "{at} labels: '{}' is not a label you can set (letters, digits, '_'; not one of gate's own: {})",
                crate::escape::terminal(k),
                OWN_LABELS.join(", ")
            ));
        }
        let s = v
            .as_str()
            .filter(|s| !s.is_empty() && s.len() <= 1024)
            .ok_or_else(|| format!("{at} labels.{k}: expected a non-empty string"))?;
        out.insert(k.clone(), s.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AlertsConfig, String> {
        #[derive(serde::Deserialize)]
        struct Doc {
            alerts: AlertsConfig,
        }
        toml::from_str::<Doc>(text)
            .map(|d| d.alerts)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn three_destinations_and_the_triggers() {
        let c = parse(
            r#"
[alerts]
on = ["invalid", "regression"]
[alerts.am]
type = "alertmanager"
url_env = "AM_URL"
labels = { team = "ml" }
resend = "30s"
[alerts.chat]
type = "slack"
url_env = "SLACK_URL"
required = true
[alerts.hook]
type = "webhook"
url_env = "HOOK_URL"
secret_env = "HOOK_SECRET"
timeout = "2s"
retries = 0
queue = 5
"#,
        )
        .unwrap();
        assert_eq!(c.on, [Trigger::Regression, Trigger::Invalid]);
        let names: Vec<&str> = c.destinations.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["am", "chat", "hook"], "file order");
        assert_eq!(c.destinations[0].resend, Duration::from_secs(30));
        assert_eq!(c.destinations[0].labels["team"], "ml");
        assert!(c.destinations[1].required);
        assert_eq!(c.destinations[1].timeout, DEFAULT_TIMEOUT);
        let h = &c.destinations[2];
        assert_eq!((h.retries, h.queue), (0, 5));
        assert_eq!(h.secret_env.as_deref(), Some("HOOK_SECRET"));
    }

    #[test]
    fn mistakes_name_the_table_and_the_fix() {
        for (text, want) in [
            (
                "[alerts.x]\ntype = \"slack\"\nurl = \"https://hooks.slack.com/x\"\n",
                "no url_env",
            ),
            (
                "[alerts.x]\ntype = \"pager\"\nurl_env = \"U\"\n",
                "unknown 'pager'",
            ),
            (
                "[alerts.x]\ntype = \"slack\"\nurl_env = \"https://x\"\n",
                "not an environment variable name",
            ),
            (
                "[alerts.x]\ntype = \"slack\"\nurl_env = \"U\"\nsecret_env = \"S\"\n",
                "only a webhook",
            ),
            (
                "[alerts.x]\ntype = \"slack\"\nurl_env = \"U\"\nretries = 99\n",
                "retries",
            ),
            (
                "[alerts.x]\ntype = \"slack\"\nurl_env = \"U\"\ntimeout = \"2h\"\n",
                "timeout",
            ),
            (
                "[alerts.x]\ntype = \"slack\"\nurl_env = \"U\"\nlabels = { alertname = \"y\" }\n",
                "gate's own",
            ),
            (
                "[alerts.x]\ntype = \"slack\"\nurl_env = \"U\"\ncolour = 1\n",
                "unknown key 'colour'",
            ),
            (
                "[alerts]\non = [\"regresion\"]\n[alerts.x]\ntype = \"slack\"\nurl_env = \"U\"\n",
                "unknown '\"regresion\"'",
            ),
            ("[alerts]\non = [\"drift\"]\n", "no [alerts.NAME]"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
            assert!(err.contains("[alerts"), "{err}");
        }
    }
}
