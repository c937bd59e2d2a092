//! Delivery that never holds the verdict: each attempt bounded by the
//! destination's `timeout`, a bounded number of retries with exponential
//! backoff (on connection errors, timeouts, 429 and 5xx; never on another
//! 4xx, which a retry cannot fix), failures as warnings with the reason.
//!
//! A watch delivers through an `Outbox`: one thread and one bounded queue
//! per destination, so a dead receiver neither blocks sampling nor grows
//! memory (past `queue` alerts the oldest is dropped and counted), and the
//! same alert (fingerprint, state, start) is never queued twice. A check
//! delivers with `deliver_all` once its verdict and exit code are out.
//!
//! The URL and the secret live in `Target` only: its `Debug` hides them,
//! and no message is built from them or from the HTTP client's error text
//! (which may quote the URL); reasons are gate's own words.

use super::{body, Notice};
use crate::config::alerts::{AlertsConfig, Destination, Kind};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// A destination with its URL and secret read from the environment.
pub struct Target {
    pub dest: Destination,
    url: String,
    secret: Option<Vec<u8>>,
    agent: ureq::Agent,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Target({}, url from ${})",
            self.dest.name, self.dest.url_env
        )
    }
}

/// A destination that cannot be used: its variable is unset or holds no
/// http(s) URL. Says which variable, never its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Unusable {
    pub dest: String,
    pub required: bool,
    /// A variable is unset or empty (the destination is off here), rather
    /// than holding something that is not a URL (a mistake).
    pub unset: bool,
    pub message: String,
}

/// Read each destination's URL (and secret) through `env`.
pub fn targets(
    cfg: &AlertsConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> (Vec<Target>, Vec<Unusable>) {
    let mut ok = Vec::new();
    let mut bad = Vec::new();
    for d in &cfg.destinations {
        match target(d, env) {
            Ok(t) => ok.push(t),
            Err((unset, message)) => bad.push(Unusable {
                dest: d.name.clone(),
                required: d.required,
                unset,
                message: format!("[alerts.{}] ({}): {message}", d.name, d.kind.as_str()),
            }),
        }
    }
    (ok, bad)
}

/// The target of `d`, or why not: `(unset, message)`.
fn target(d: &Destination, env: &dyn Fn(&str) -> Option<String>) -> Result<Target, (bool, String)> {
    let var = &d.url_env;
    let url = env(var)
        .map(|u| u.trim().to_string())
        .filter(|u| !u.is_empty())
        .ok_or_else(|| (true, format!("${var} is not set; set it to the receiver's URL (a CI secret), or remove the table")))?;
    let scheme_ok = ["http://", "https://"].iter().any(|p| {
        url.len() > p.len()
            && url
                .get(..p.len())
                .is_some_and(|s| s.eq_ignore_ascii_case(p))
    });
    if !scheme_ok || ureq::http::Uri::try_from(url.as_str()).is_err() {
        return Err((false, format!(
            "${var} does not hold an http:// or https:// URL (its value is not shown); set it to the receiver's URL"
        )));
    }
    let url = match d.kind {
        Kind::Alertmanager if !url.trim_end_matches('/').ends_with("/api/v2/alerts") => {
            format!("{}/api/v2/alerts", url.trim_end_matches('/'))
        }
        _ => url,
    };
    let secret = match &d.secret_env {
        Some(s) => Some(
            env(s)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| (true, format!("${s} (secret_env) is not set; set it to the signing key the receiver checks")))?
                .into_bytes(),
        ),
        None => None,
    };
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(d.timeout))
        .http_status_as_error(false)
        .max_redirects(0)
        .user_agent(format!("gate/{}", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    Ok(Target {
        dest: d.clone(),
        url,
        secret,
        agent,
    })
}

/// How one notice's delivery went.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub attempts: u32,
    /// The last failure's reason (gate's words), or None when delivered.
    pub failure: Option<String>,
}

/// The longest wait between two attempts, a receiver's `Retry-After`
/// included.
pub const MAX_WAIT: Duration = Duration::from_secs(4);

/// The wait before retry `k` (1-based): 250 ms doubling, at most `MAX_WAIT`.
pub fn backoff(k: u32) -> Duration {
    Duration::from_millis(250u64 << (k - 1).min(4)).min(MAX_WAIT)
}

/// The longest one notice's delivery can take: every attempt timing out,
/// and the longest wait between them (a `Retry-After` may ask for it).
pub fn budget(d: &Destination) -> Duration {
    MAX_WAIT * d.retries + d.timeout * (d.retries + 1)
}

/// A receiver's `Retry-After` in seconds (RFC 9110 section 10.2.3; the
/// HTTP-date form is not read: the backoff applies).
fn retry_after(value: Option<&str>) -> Option<Duration> {
    value?.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// One attempt's outcome: delivered, a failure worth retrying, or one that
/// is not.
enum Attempt {
    Delivered,
    /// Why, and the wait the receiver asked for (`Retry-After`).
    Retry(String, Option<Duration>),
    Final(String),
}

fn attempt(t: &Target, n: &Notice, now: SystemTime) -> Attempt {
    let mut req = t
        .agent
        .post(&t.url)
        .header("Content-Type", "application/json")
        .header("X-Gate-Fingerprint", n.fingerprint());
    let body = match t.dest.kind {
        Kind::Alertmanager => body::alertmanager(n, &t.dest, now),
        Kind::Slack => body::slack(n, &t.dest),
        Kind::Webhook => {
            let (b, sig) = body::webhook(n, t.secret.as_deref());
            if let Some(sig) = sig {
                req = req.header("X-Gate-Signature", sig);
            }
            b
        }
    };
    let secs = crate::format::number(t.dest.timeout.as_secs_f64());
    match req.send(&body[..]) {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let asked = retry_after(
                resp.headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok()),
            );
            // Read (bounded) and drop what the receiver said.
            let _ = resp
                .into_body()
                .with_config()
                .limit(64 * 1024)
                .read_to_vec();
            match status {
                200..=299 => Attempt::Delivered,
                429 | 500..=599 => Attempt::Retry(format!("HTTP {status}"), asked),
                _ => Attempt::Final(format!(
                    "HTTP {status} (not retried: check the URL in ${} and the receiver's logs)",
                    t.dest.url_env
                )),
            }
        }
        Err(e) => Attempt::Retry(reason(&e, &secs), None),
    }
}

/// gate's words for a transport failure (never the client's text, which
/// may quote the URL).
fn reason(e: &ureq::Error, secs: &str) -> String {
    use std::io::ErrorKind;
    match e {
        ureq::Error::Timeout(_) => format!("no answer within {secs} s (timeout)"),
        ureq::Error::HostNotFound => "the receiver's host name does not resolve".into(),
        ureq::Error::ConnectionFailed => "cannot connect to the receiver".into(),
        ureq::Error::Io(io) => match io.kind() {
            ErrorKind::ConnectionRefused => "connection refused".into(),
            ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::UnexpectedEof
            | ErrorKind::BrokenPipe => {
                "the receiver closed the connection without an answer".into()
            }
            ErrorKind::TimedOut | ErrorKind::WouldBlock => {
                format!("no answer within {secs} s (timeout)")
            }
            k => format!("I/O error ({k})"),
        },
        ureq::Error::Protocol(_) => "the receiver's answer is not HTTP".into(),
        ureq::Error::Tls(why) => format!("TLS failed ({why})"),
        _ => "the request failed".into(),
    }
}

/// Deliver `n` to `t`: up to `1 + retries` attempts with backoff.
pub fn deliver(t: &Target, n: &Notice) -> Delivery {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let (why, asked) = match attempt(t, n, SystemTime::now()) {
            Attempt::Delivered => {
                return Delivery {
                    attempts,
                    failure: None,
                }
            }
            Attempt::Final(why) => {
                return Delivery {
                    attempts,
                    failure: Some(why),
                }
            }
            Attempt::Retry(why, asked) => (why, asked),
        };
        if attempts > t.dest.retries {
            return Delivery {
                attempts,
                failure: Some(why),
            };
        }
        // The receiver's ask is honoured up to MAX_WAIT; a longer one is
        // not worth a retry now (it would only be refused again).
        let wait = match asked {
            Some(a) if a > MAX_WAIT => {
                return Delivery {
                    attempts,
                    failure: Some(format!(
                        "{why}; the receiver asked to wait {} s (Retry-After), longer than gate waits ({} s)",
                        a.as_secs(),
                        MAX_WAIT.as_secs()
                    )),
                }
            }
            Some(a) => a.max(backoff(attempts)),
            None => backoff(attempts),
        };
        std::thread::sleep(wait);
    }
}

/// The warning of a failed delivery.
pub fn failure_line(t: &Target, n: &Notice, d: &Delivery) -> String {
    format!(
        "alert {} {} to '{}' ({}) not delivered after {} attempt(s): {}",
        n.state().to_uppercase(),
        crate::escape::terminal(&n.name),
        t.dest.name,
        t.dest.kind.as_str(),
        d.attempts,
        d.failure.as_deref().unwrap_or("")
    )
}

/// A check's delivery to one destination.
#[derive(Debug)]
pub struct Sent<'a> {
    pub target: &'a Target,
    pub delivered: usize,
    /// Attempts beyond the first, over all notices.
    pub retries: u32,
    /// Warning lines, one per notice not delivered.
    pub failures: Vec<String>,
}

/// Deliver every notice to one target, in order.
fn deliver_each<'a>(t: &'a Target, notices: &[Notice]) -> Sent<'a> {
    let mut sent = Sent {
        target: t,
        delivered: 0,
        retries: 0,
        failures: Vec::new(),
    };
    for n in notices {
        let d = deliver(t, n);
        sent.retries += d.attempts - 1;
        match d.failure {
            None => sent.delivered += 1,
            Some(_) => sent.failures.push(failure_line(t, n, &d)),
        }
    }
    sent
}

/// Deliver every notice to every target, the destinations in parallel
/// (each bounded by `budget` per notice); where no thread can be started
/// (a process limit), one after the other.
pub fn deliver_all<'a>(targets: &'a [Target], notices: &[Notice]) -> Vec<Sent<'a>> {
    std::thread::scope(|s| {
        let started: Vec<_> = targets
            .iter()
            .map(|t| {
                std::thread::Builder::new()
                    .spawn_scoped(s, move || deliver_each(t, notices))
                    .map_err(|_| t)
            })
            .collect();
        started
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().expect("a delivery thread panicked"),
                Err(t) => deliver_each(t, notices),
            })
            .collect()
    })
}

/// What one destination of a watch did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub delivered: u64,
    pub failed: u64,
    /// Attempts beyond the first.
    pub retries: u64,
    /// Dropped because the queue was full (the oldest first).
    pub dropped: u64,
    /// Still queued when the watch ended and its grace ran out.
    pub unsent: u64,
    /// The same alert again (fingerprint, state, start), not queued.
    pub duplicates: u64,
    /// Alertmanager: firing alerts sent again to keep them alive.
    pub resent: u64,
}

/// Keys of alerts already queued or sent, for deduplication (bounded).
const DEDUP_KEYS: usize = 1024;

#[derive(Default)]
struct Lane {
    queue: VecDeque<Notice>,
    seen: VecDeque<(String, bool, SystemTime)>,
    closed: Option<Instant>,
    stats: Stats,
}

/// One destination's queue (shared with its thread), the thread, and the
/// destination's name as warnings say it.
type LaneHandle = (
    Arc<(Mutex<Lane>, Condvar)>,
    std::thread::JoinHandle<()>,
    String,
);

/// A watch's per-destination queues and their delivery threads.
pub struct Outbox {
    lanes: Vec<LaneHandle>,
    /// Where warnings go (`gate watch: warning: ...`).
    prefix: &'static str,
}

impl Outbox {
    /// One delivery thread per destination; an error when one cannot be
    /// started (a process limit), before anything is watched.
    pub fn start(targets: Vec<Target>, prefix: &'static str) -> std::io::Result<Outbox> {
        let mut lanes = Vec::new();
        for t in targets {
            let shared = Arc::new((Mutex::new(Lane::default()), Condvar::new()));
            let name = format!("'{}' ({})", t.dest.name, t.dest.kind.as_str());
            let worker = Arc::clone(&shared);
            let handle = std::thread::Builder::new()
                .name(format!("alerts-{}", t.dest.name))
                .spawn(move || run_lane(&t, &worker, prefix))?;
            lanes.push((shared, handle, name));
        }
        Ok(Outbox { lanes, prefix })
    }

    pub fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }

    /// Queue `n` on every destination; never blocks on a receiver.
    pub fn push(&self, n: &Notice, capacity: impl Fn(usize) -> usize) {
        let key = (n.fingerprint(), n.firing, n.starts_at);
        for (i, (shared, _, name)) in self.lanes.iter().enumerate() {
            let (lock, cv) = &**shared;
            let mut lane = lock.lock().unwrap_or_else(|e| e.into_inner());
            if lane.seen.contains(&key) {
                lane.stats.duplicates += 1;
                continue;
            }
            if lane.seen.len() == DEDUP_KEYS {
                lane.seen.pop_front();
            }
            lane.seen.push_back(key.clone());
            if lane.queue.len() >= capacity(i) {
                lane.queue.pop_front();
                lane.stats.dropped += 1;
                if lane.stats.dropped == 1 {
                    crate::gate_eprintln!(
                        "{}: warning: alerts to {name} are not getting through; the oldest queued alert was dropped (the queue holds {})",
                        self.prefix,
                        capacity(i)
                    );
                }
            }
            lane.queue.push_back(n.clone());
            cv.notify_all();
        }
    }

    /// Close the queues, let each deliver what it holds for one alert's
    /// delivery budget after the close (the one in flight may take its own
    /// budget on top), all at once, and return what each destination did.
    pub fn finish(self) -> Vec<(String, Stats)> {
        for (shared, _, _) in &self.lanes {
            let (lock, cv) = &**shared;
            lock.lock().unwrap_or_else(|e| e.into_inner()).closed = Some(Instant::now());
            cv.notify_all();
        }
        self.lanes
            .into_iter()
            .map(|(shared, handle, name)| {
                let _ = handle.join();
                let stats = shared
                    .0
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .stats
                    .clone();
                (name, stats)
            })
            .collect()
    }
}

/// What a lane's thread does next.
enum Job {
    Send(Notice),
    Resend(Notice),
    Stop,
}

/// Take the next job: a queued notice, a firing alert due for its re-send
/// (Alertmanager), or stop (closed and drained, or out of grace).
fn next_job(t: &Target, shared: &(Mutex<Lane>, Condvar), firing: &mut [(Notice, Instant)]) -> Job {
    let (lock, cv) = shared;
    let mut lane = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(closed) = lane.closed {
            if closed.elapsed() > budget(&t.dest) {
                lane.stats.unsent += lane.queue.len() as u64;
                lane.queue.clear();
                return Job::Stop;
            }
        }
        if let Some(n) = lane.queue.pop_front() {
            return Job::Send(n);
        }
        if lane.closed.is_some() {
            return Job::Stop;
        }
        let now = Instant::now();
        let due = firing
            .iter()
            .position(|(_, last)| now >= *last + t.dest.resend);
        if let Some(i) = due {
            firing[i].1 = now;
            return Job::Resend(firing[i].0.clone());
        }
        let wait = firing
            .iter()
            .map(|(_, last)| (*last + t.dest.resend).saturating_duration_since(now))
            .min()
            .unwrap_or(Duration::from_secs(3600));
        lane = cv
            .wait_timeout(lane, wait)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

fn run_lane(t: &Target, shared: &(Mutex<Lane>, Condvar), prefix: &str) {
    // Alertmanager's firing alerts, re-sent every `resend` (bounded as the
    // dedup keys are).
    let mut firing: Vec<(Notice, Instant)> = Vec::new();
    loop {
        let (n, resend) = match next_job(t, shared, &mut firing) {
            Job::Stop => return,
            Job::Send(n) => (n, false),
            Job::Resend(n) => (n, true),
        };
        let d = deliver(t, &n);
        if t.dest.kind == Kind::Alertmanager && !resend {
            let fp = n.fingerprint();
            firing.retain(|(f, _)| f.fingerprint() != fp);
            if n.firing && n.renewed && firing.len() < DEDUP_KEYS {
                firing.push((n.clone(), Instant::now()));
            }
        }
        let (lock, _) = shared;
        let mut lane = lock.lock().unwrap_or_else(|e| e.into_inner());
        lane.stats.retries += u64::from(d.attempts - 1);
        match (&d.failure, resend) {
            (None, false) => lane.stats.delivered += 1,
            (None, true) => lane.stats.resent += 1,
            (Some(_), _) => {
                lane.stats.failed += 1;
                drop(lane);
                crate::gate_eprintln!("{prefix}: warning: {}", failure_line(t, &n, &d));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loopback receiver that answers 200 to every request and keeps
    /// the bodies (at most `max` connections, 30 s).
    fn receiver(max: usize) -> (String, Arc<Mutex<Vec<String>>>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let got = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&got);
        std::thread::spawn(move || {
            for stream in listener.incoming().take(max) {
                let Ok(mut s) = stream else { continue };
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                // Headers, then the body by its Content-Length.
                let body = loop {
                    let n = s.read(&mut chunk).unwrap_or(0);
                    if n == 0 {
                        break None;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).into_owned();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let len: usize = text[..end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse().unwrap())
                            })
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + len {
                            break Some(text[end + 4..end + 4 + len].to_string());
                        }
                    }
                };
                keep.lock().unwrap().extend(body);
                let _ = s.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        (url, got)
    }

    fn notice(firing: bool) -> Notice {
        Notice {
            firing,
            name: "busy".into(),
            severity: "high".into(),
            title: "t".into(),
            evidence: Vec::new(),
            explanation: String::new(),
            next_steps: Vec::new(),
            labels: [("host".to_string(), "h".to_string())].into(),
            url: None,
            starts_at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
            ends_at: (!firing).then(|| SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_100)),
            renewed: true,
            document: serde_json::Value::Null,
        }
    }

    /// A receiver that answers `responses` in turn (then 200), counting
    /// the requests it got.
    fn answering(responses: Vec<&'static str>) -> (String, Arc<Mutex<usize>>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let n = Arc::new(Mutex::new(0usize));
        let keep = Arc::clone(&n);
        std::thread::spawn(move || {
            for stream in listener.incoming().take(8) {
                let Ok(mut s) = stream else { continue };
                s.set_read_timeout(Some(Duration::from_millis(300)))
                    .unwrap();
                let mut chunk = [0u8; 4096];
                while s.read(&mut chunk).unwrap_or(0) > 0 {}
                let mut k = keep.lock().unwrap();
                let head = responses.get(*k).copied().unwrap_or("200 OK");
                *k += 1;
                let _ = s.write_all(
                    format!("HTTP/1.1 {head}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                        .as_bytes(),
                );
            }
        });
        (url, n)
    }

    /// `Retry-After` up to `MAX_WAIT` is waited for; a longer one ends the
    /// retries with the reason.
    #[test]
    fn retry_after_is_honoured_up_to_the_longest_wait() {
        let cfg: AlertsConfig =
            toml::from_str("[w]\ntype = \"webhook\"\nurl_env = \"U\"\nretries = 2\n").unwrap();
        let (url, n) = answering(vec!["429 Too Many Requests\r\nRetry-After: 2"]);
        let (ok, _) = targets(&cfg, &|_| Some(url.clone()));
        let t0 = Instant::now();
        let d = deliver(&ok[0], &notice(true));
        assert_eq!((d.attempts, d.failure.as_deref()), (2, None));
        assert!(t0.elapsed() >= Duration::from_secs(2), "{:?}", t0.elapsed());
        assert_eq!(*n.lock().unwrap(), 2);

        let (url, n) = answering(vec!["503 Service Unavailable\r\nRetry-After: 60"]);
        let (ok, _) = targets(&cfg, &|_| Some(url.clone()));
        let t0 = Instant::now();
        let d = deliver(&ok[0], &notice(true));
        let why = d.failure.unwrap();
        assert_eq!(d.attempts, 1, "{why}");
        assert!(
            why.contains("HTTP 503") && why.contains("Retry-After"),
            "{why}"
        );
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert_eq!(*n.lock().unwrap(), 1);
    }

    /// Alertmanager: a firing alert is re-sent every `resend` (its
    /// `endsAt` moving ahead) until its RESOLVED, then no more; the same
    /// alert pushed twice is queued once.
    #[test]
    fn a_firing_alert_is_re_sent_until_it_resolves_and_never_queued_twice() {
        let (url, got) = receiver(20);
        let cfg: AlertsConfig =
            toml::from_str("[am]\ntype = \"alertmanager\"\nurl_env = \"U\"\nresend = \"1s\"\n")
                .unwrap();
        let (ok, _) = targets(&cfg, &|_| Some(url.clone()));
        let outbox = Outbox::start(ok, "test").unwrap();
        let t0 = Instant::now();
        outbox.push(&notice(true), |_| 10);
        outbox.push(&notice(true), |_| 10);
        let count = || got.lock().unwrap().len();
        let wait_for = |n: usize| {
            let deadline = Instant::now() + Duration::from_secs(15);
            while count() < n && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            count()
        };
        assert_eq!(wait_for(3), 3, "the first send and two re-sends");
        assert!(
            t0.elapsed() >= Duration::from_millis(1900),
            "{:?}",
            t0.elapsed()
        );
        outbox.push(&notice(false), |_| 10);
        let firing = {
            let deadline = Instant::now() + Duration::from_secs(15);
            loop {
                let b = got.lock().unwrap().clone();
                if b.iter().any(|x| x.contains("2027-01-15T08:01:40.000Z"))
                    || Instant::now() > deadline
                {
                    break b.len() - 1;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        // No re-send after RESOLVED (one period and a half later).
        std::thread::sleep(Duration::from_millis(1500));
        let stats = outbox.finish().remove(0).1;
        let bodies = got.lock().unwrap().clone();
        assert_eq!(bodies.len(), firing + 1, "no re-send after RESOLVED");
        assert_eq!((stats.delivered, stats.duplicates), (2, 1), "{stats:?}");
        assert_eq!(stats.resent as usize, firing - 1, "{stats:?}");
        let ends: Vec<String> = bodies
            .iter()
            .map(|b| {
                serde_json::from_str::<serde_json::Value>(b).unwrap()[0]["endsAt"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert!(ends[..firing].windows(2).all(|w| w[0] < w[1]), "{ends:?}");
        assert_eq!(
            ends[firing], "2027-01-15T08:01:40.000Z",
            "RESOLVED ends when it resolved"
        );
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let b: Vec<u64> = (1..=7).map(|k| backoff(k).as_millis() as u64).collect();
        assert_eq!(b, [250, 500, 1000, 2000, 4000, 4000, 4000]);
    }

    #[test]
    fn an_unset_or_bad_variable_is_named_and_its_value_never_shown() {
        let cfg: AlertsConfig = toml::from_str(
            "[a]\ntype = \"slack\"\nurl_env = \"A_URL\"\n[b]\ntype = \"webhook\"\nurl_env = \"B_URL\"\nrequired = true\n",
        )
        .unwrap();
        let env = |k: &str| (k == "B_URL").then(|| "ftp://user:hunter2@x/".to_string());
        let (ok, bad) = targets(&cfg, &env);
        assert!(ok.is_empty());
        assert!(bad[0].message.contains("$A_URL is not set"), "{:?}", bad[0]);
        assert!(bad[1].required);
        assert!(
            bad[1].message.contains("$B_URL does not hold"),
            "{:?}",
            bad[1]
        );
        assert!(!format!("{bad:?}").contains("hunter2"));
        // A value with multibyte characters where the scheme would be.
        let env = |_: &str| Some("httéé://x/y".to_string());
        assert_eq!(targets(&cfg, &env).1.len(), 2);
        let env = |_: &str| Some("http://127.0.0.1:9/hooks/T0KEN".to_string());
        let (ok, _) = targets(&cfg, &env);
        assert!(!format!("{ok:?}").contains("T0KEN"), "{ok:?}");
    }
}
