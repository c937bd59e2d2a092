//! `gate watch`: a long-running, low-cost attach that evaluates the rules
//! over sliding windows and alerts. Live, it runs the recording engine
//! (`record::record_observed`) in rotated segments and feeds every record
//! to the window engine (`crate::watch`); `--replay` feeds recorded traces
//! to the same engine, so a replay reproduces a live watch's alerts.
//!
//! Default cadence (from the per-call costs, docs/counters.md): basic
//! counters and /proc every 1 s, GPM every 2 s, process lists and memory
//! every 5 s. By those costs: GPM ~2 ms a pair -> 0.10 %, process
//! utilization 2.7 ms / 5 s -> 0.05 %, the rest < 0.05 %: about 0.2 % of one
//! core on one GPU (to be confirmed by scripts/gpu-perf.sh).

use super::measure::parse_duration;
use crate::config::Config;
use crate::console::Echo;
use crate::diagnose::{RuleSet, Severity};
use crate::error::GateError;
use crate::limits::duration_text;
use crate::record::{self, RecordPlan};
use crate::sampler::nvml::GpuSelection;
use crate::trace::{Record, StopReason};
use crate::watch::{Alert, WatchPlan, WindowEngine};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Watch this process (and its children); the watch ends when it exits
    #[arg(long, value_name = "PID", conflicts_with_all = ["all", "replay"])]
    pub pid: Option<u32>,

    /// Watch the whole GPU(s), whoever runs there (survives jobs restarting; the host
    /// 'target_*' columns then describe gate itself)
    #[arg(long, conflicts_with = "replay")]
    pub all: bool,

    /// Replay recorded trace(s) through the window engine instead of watching live
    #[arg(long, num_args = 1.., value_name = "TRACE")]
    pub replay: Vec<PathBuf>,

    /// GPUs to watch: '0,2' or 'all' (default: every visible GPU)
    #[arg(long, value_name = "LIST")]
    pub gpu: Option<String>,

    /// Sampling interval of the basic NVML and host counters
    #[arg(long, value_parser = parse_duration, default_value = "1s", value_name = "DURATION")]
    pub interval: Duration,

    /// GPM period (SM active, tensor, DRAM...)
    #[arg(long, value_parser = parse_duration, default_value = "2s", value_name = "DURATION")]
    pub(crate) gpm_interval: Duration,

    /// Read no GPM, as on a GPU without it (A100, L4, T4): NVML and host counters only
    #[arg(long)]
    pub no_gpm: bool,

    /// Process lists, per-process SM shares and memory used
    #[arg(long, value_parser = parse_duration, default_value = "5s", value_name = "DURATION")]
    pub(crate) process_interval: Duration,

    /// gate.toml whose [rules.*] (with `for = "5m"`) are evaluated and whose [alerts.*]
    /// destinations (Alertmanager, Slack, webhooks) get every alert (default: ./gate.toml if
    /// present)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Window of rules without a `for`
    #[arg(long, value_parser = parse_duration, default_value = "1m", value_name = "DURATION")]
    pub window: Duration,

    /// How often the windows are evaluated (at least the sampling interval, at most the
    /// shortest window)
    #[arg(long, value_parser = parse_duration, default_value = "5s", value_name = "DURATION")]
    pub(crate) eval_every: Duration,

    /// Alert only on rules of this severity or higher: info, low, medium, high (low: every
    /// warning; info rules describe normal behaviour, docs/rules.md)
    #[arg(long, value_parser = parse_min_severity, default_value = "low", value_name = "SEVERITY")]
    pub(crate) min_severity: Severity,

    /// Append alerts as JSON lines to FILE instead of stdout (a regular file; never an
    /// input, a FIFO or a symbolic link)
    #[arg(long, value_name = "FILE")]
    pub alerts: Option<PathBuf>,

    /// Stop at the first alert (at or above --min-severity) with exit code 1 (for CI jobs)
    #[arg(long)]
    pub(crate) exit_on_alert: bool,

    /// Where the rotated traces go (zstd-compressed)
    #[arg(long, value_name = "DIR", default_value = ".gate/watch")]
    pub(crate) trace_dir: PathBuf,

    /// Start a new trace file this often
    #[arg(long, value_parser = parse_duration, default_value = "1h", value_name = "DURATION")]
    pub(crate) rotate: Duration,

    /// Keep this many trace files; older ones are deleted
    #[arg(long, default_value_t = 24, value_name = "N")]
    pub keep: usize,
}

/// Where alerts go: JSON lines (stdout or a file), a human line on stderr,
/// and the `[alerts.NAME]` destinations of gate.toml (`alerts::send::Outbox`:
/// queued, never waited for).
struct Sink {
    json: Box<dyn Write>,
    fired: usize,
    notices: crate::alerts::WatchNotices,
    outbox: crate::alerts::send::Outbox,
    /// Each destination's queue length.
    queues: Vec<usize>,
}

impl Sink {
    fn emit(&mut self, alerts: Vec<Alert>) {
        for a in alerts {
            crate::gate_eprintln!("{}", a.human());
            if let Ok(line) = serde_json::to_string(&a) {
                // A closed stdout must not stop the watch: the human line
                // went to stderr already.
                let _ = writeln!(self.json, "{line}").and_then(|_| self.json.flush());
            }
            if !self.outbox.is_empty() {
                let n = self.notices.notice(&a);
                self.outbox.push(&n, |i| self.queues[i]);
            }
            if a.state == crate::watch::AlertState::Firing {
                self.fired += 1;
            }
        }
    }

    /// A recording's header: the labels of the alerts that follow.
    fn header(&mut self, h: &crate::trace::Header) {
        self.notices.header(h);
    }

    /// Let the destinations deliver what they hold (bounded) and say what
    /// each did.
    fn finish(self) {
        for (name, s) in self.outbox.finish() {
            crate::gate_eprintln!(
                "gate watch: alerts to {name}: {} delivered, {} failed, {} retries, {} dropped (queue full), {} unsent at exit, {} duplicates, {} re-sent",
                s.delivered, s.failed, s.retries, s.dropped, s.unsent, s.duplicates, s.resent
            );
        }
    }
}

/// The destinations of `[alerts]`, each with its URL from the environment.
/// One that cannot be used stops the watch before it starts (exit 2): a
/// watch that runs for hours without reaching anyone looks like a quiet one.
fn destinations(config: &Config) -> Result<Vec<crate::alerts::send::Target>, GateError> {
    let (targets, unusable) =
        crate::alerts::send::targets(&config.file.alerts, &|k| std::env::var(k).ok());
    match unusable.first() {
        Some(u) => Err(GateError::usage(format!(
            "{}: {}",
            config.origin.as_deref().unwrap_or("gate.toml"),
            u.message
        ))),
        None => Ok(targets),
    }
}

fn parse_min_severity(s: &str) -> Result<Severity, String> {
    crate::diagnose::rules::parse_severity(s.trim()).ok_or_else(|| {
        format!(
            "'{}' is not a severity; use info, low, medium or high",
            s.escape_debug()
        )
    })
}

pub fn run(args: WatchArgs) -> anyhow::Result<i32> {
    let config_path = args.config.clone().unwrap_or_else(|| "gate.toml".into());
    let config = Config::load(&config_path, args.config.is_some())?;
    let rules = crate::watch::window_rules(&config.rule_set()?).map_err(GateError::usage)?;
    check_cadence(&args, &rules, None)?;
    let mut inputs: Vec<&Path> = args.replay.iter().map(PathBuf::as_path).collect();
    inputs.push(&config_path);
    let pid = match (args.pid, args.all) {
        _ if !args.replay.is_empty() => 0,
        (Some(p), _) => p,
        (None, true) => std::process::id(),
        (None, false) => {
            return Err(GateError::usage(
                "nothing to watch: give --pid PID, --all, or --replay TRACE...",
            )
            .into())
        }
    };
    let live = (args.replay.is_empty())
        .then(|| WatchJob::build(&args, pid))
        .transpose()?;
    let targets = destinations(&config)?;
    let mut sink = Sink {
        json: alerts_output(args.alerts.as_deref(), &inputs)?,
        fired: 0,
        notices: crate::alerts::WatchNotices::new(&rules),
        queues: targets.iter().map(|t| t.dest.queue).collect(),
        outbox: crate::alerts::send::Outbox::start(targets, "gate watch").map_err(|e| {
            GateError::infra(format!(
                "cannot start a thread to deliver alerts ({e}); raise the process limit, or remove [alerts.*] from gate.toml"
            ))
        })?,
    };
    if args.all && args.replay.is_empty() {
        sink.notices.node_wide("all GPU processes");
    }
    let result = match &live {
        Some(job) => job.watch_live(&rules, &mut sink),
        None => replay(&args, &rules, &mut sink),
    };
    sink.finish();
    result
}

/// Refuse cadences that make no sense: an evaluation more often than
/// samples arrive (`interval_ms`: the trace's, or `--interval` live)
/// re-reads the same window; one less often than the shortest window
/// leaves samples that no evaluation ever looks at. The window/evaluation
/// ratio itself costs nothing: windows are incremental (`watch::window`).
fn check_cadence(
    args: &WatchArgs,
    rules: &RuleSet,
    trace_interval: Option<(&Path, Duration)>,
) -> Result<(), GateError> {
    let every = args.eval_every;
    if every.is_zero() {
        return Err(GateError::usage(
            "--eval-every 0 evaluates without end; use e.g. --eval-every 5s",
        ));
    }
    let (interval, whose) = match trace_interval {
        Some((path, i)) => (i, format!("the sampling interval of '{}'", path.display())),
        None if args.replay.is_empty() => (
            args.interval
                .clamp(record::MIN_INTERVAL, record::MAX_INTERVAL),
            "--interval".to_string(),
        ),
        None => (Duration::ZERO, String::new()),
    };
    if every < interval {
        return Err(GateError::usage(format!(
            "--eval-every {} is shorter than {whose} ({}): the windows change only when a sample arrives; use --eval-every {} or more",
            duration_text(every),
            duration_text(interval),
            duration_text(interval)
        )));
    }
    let shortest = rules
        .rules()
        .iter()
        .filter(|r| r.enabled && r.severity >= args.min_severity)
        .map(|r| {
            (
                r.hold_for.unwrap_or(args.window),
                r.hold_for.map(|_| r.name.as_str()),
            )
        })
        .min_by_key(|w| w.0);
    if let Some((w, rule)) = shortest {
        if every > w {
            let which = match rule {
                Some(name) => format!("rule '{name}''s for = \"{}\"", duration_text(w)),
                None => format!("the {} --window", duration_text(w)),
            };
            return Err(GateError::usage(format!(
                "--eval-every {} is longer than {which}: samples between evaluations would never be looked at; use --eval-every {} or less",
                duration_text(every),
                duration_text(w)
            )));
        }
    }
    Ok(())
}

/// Where JSON alerts go: appended to `--alerts FILE` (through the safe
/// output path: never an input, a FIFO or a link), else stdout.
fn alerts_output(path: Option<&Path>, inputs: &[&Path]) -> Result<Box<dyn Write>, GateError> {
    Ok(match path {
        Some(p) => Box::new(
            crate::files::open_append_output(p, "--alerts", inputs).map_err(|e| {
                crate::files::output_error(
                    format!(
                        "cannot open '{}' for alerts: {e}; choose a writable --alerts file",
                        p.display()
                    ),
                    &e,
                )
            })?,
        ),
        None => Box::new(std::io::stdout()),
    })
}

fn plan(args: &WatchArgs) -> WatchPlan {
    WatchPlan {
        default_window: args.window,
        eval_every: args.eval_every,
        min_severity: args.min_severity,
    }
}

fn new_engine(h: &crate::trace::Header, rules: &RuleSet, args: &WatchArgs) -> WindowEngine {
    WindowEngine::new(h.clone(), rules.clone(), plan(args))
}

/// Say on stderr which windows never filled, and what would fill them: a
/// watch that is silent because it never evaluated looks like a healthy one.
fn report_unfilled(engine: &WindowEngine, args: &WatchArgs, what: &str) {
    let span_ms = engine.longest_span_ms();
    // The longest whole-second window the data covered.
    let fits = Duration::from_secs((span_ms / 1000.0).floor() as u64);
    let held = if engine.steady_samples() == 0 {
        format!("{what} held no sample after warm-up")
    } else {
        format!(
            "{what} covered {} s without a gap (warm-up and the last {} s held back excluded)",
            crate::format::number(span_ms / 1000.0),
            crate::format::number(crate::watch::HOLD_BACK_MS / 1000.0)
        )
    };
    for (len, names) in engine.unfilled() {
        let default = len == args.window;
        let who = if default {
            format!(
                "the {} window (--window) never filled, so no rule without a `for` was evaluated",
                duration_text(len)
            )
        } else {
            format!(
                "the {} window of rule(s) {} (their `for`) never filled, so they were never evaluated",
                duration_text(len),
                crate::escape::terminal(&names.join(", "))
            )
        };
        let fix = if fits.is_zero() {
            "record longer, or mark less of it warm-up".to_string()
        } else if default {
            format!(
                "pass --window {} (any window up to {} fills)",
                duration_text(fits.min(Duration::from_secs(10))),
                duration_text(fits)
            )
        } else {
            format!(
                "shorten their `for` in gate.toml to {} or less",
                duration_text(fits)
            )
        };
        crate::gate_eprintln!("gate watch: {who}: {held}; {fix}");
    }
}

/// Feed recorded traces, one after the other on one time axis, to the
/// window engine: the alerts a live watch would have raised.
fn replay(args: &WatchArgs, rules: &RuleSet, sink: &mut Sink) -> anyhow::Result<i32> {
    use crate::watch::replay::{stream, Item};
    let mut engine: Option<WindowEngine> = None;
    let mut offset_ms = 0.0;
    for path in &args.replay {
        let mut refused: Option<GateError> = None;
        let streamed = stream(path, &mut |item| {
            let alerts = match item {
                Item::Header(h) => {
                    let interval = Duration::from_millis(h.interval_ms);
                    if let Err(e) = check_cadence(args, rules, Some((path, interval))) {
                        refused = Some(e);
                        return false;
                    }
                    engine
                        .get_or_insert_with(|| new_engine(h, rules, args))
                        .start_segment(h, offset_ms);
                    sink.header(h);
                    return true;
                }
                Item::Sample {
                    t_ms,
                    warmup,
                    gpu,
                    host,
                } => engine
                    .as_mut()
                    .map(|e| e.push_row(t_ms, warmup, gpu, host))
                    .unwrap_or_default(),
                Item::Record(rec) => engine.as_mut().map(|e| e.push(rec)).unwrap_or_default(),
            };
            sink.emit(alerts);
            !(args.exit_on_alert && sink.fired > 0)
        })?;
        if let Some(e) = refused {
            return Err(e.into());
        }
        if streamed.stopped {
            return Ok(crate::exit_code::REGRESSION);
        }
        if streamed.truncated {
            // As `check` judges such a trace: an error, never a clean pass.
            return Err(GateError::infra(format!(
                "trace '{}' is truncated (its zstd stream breaks off before its end or checksum): the recording was cut short; the alerts above cover what was read",
                crate::escape::terminal(&path.display().to_string())
            ))
            .into());
        }
        offset_ms += streamed.last_t_ms + streamed.interval_ms as f64;
    }
    if let Some(e) = &engine {
        report_unfilled(e, args, "the replay");
    }
    Ok(crate::exit_code::PASS)
}

/// A live watch, built once from its flags before anything is recorded:
/// whom it watches and the recording plan every rotated segment reuses.
struct WatchJob<'a> {
    args: &'a WatchArgs,
    pid: u32,
    segment: RecordPlan,
}

impl<'a> WatchJob<'a> {
    /// A bad `--gpu` list is refused here, before the first segment.
    fn build(args: &'a WatchArgs, pid: u32) -> Result<WatchJob<'a>, GateError> {
        let segment = RecordPlan {
            command: Vec::new(),
            pid: Some(pid),
            interval: args
                .interval
                .clamp(record::MIN_INTERVAL, record::MAX_INTERVAL),
            gpm_interval: args.gpm_interval,
            process_interval: args.process_interval,
            warmup: Duration::ZERO,
            warmup_until: None,
            until: None,
            warmup_timeout: Duration::ZERO,
            duration: Some(args.rotate.max(Duration::from_secs(10))),
            gpu: GpuSelection::parse(args.gpu.as_deref())?,
            no_gpu: false,
            no_gpm: args.no_gpm,
            tags: [("gate".to_string(), "watch".to_string())].into(),
            metrics_file: None,
            note: None,
            live_status: false,
            progress_lines: false,
        };
        Ok(WatchJob { args, pid, segment })
    }

    /// The recording plan of rotated segment `n`.
    fn segment_plan(&self, n: usize) -> RecordPlan {
        RecordPlan {
            note: Some(format!("gate watch segment {n}")),
            ..self.segment.clone()
        }
    }

    /// Record rotated segments of the PID (gate's own with --all) until it
    /// exits, a signal arrives, or an alert ends the watch (--exit-on-alert).
    fn watch_live(&self, rules: &RuleSet, sink: &mut Sink) -> anyhow::Result<i32> {
        let (args, pid) = (self.args, self.pid);
        std::fs::create_dir_all(&args.trace_dir).map_err(|e| {
            GateError::usage(format!(
                "cannot create '{}': {e}; pass --trace-dir to a writable place",
                args.trace_dir.display()
            ))
        })?;
        let started = Instant::now();
        let stamp = crate::format::rfc3339_utc(std::time::SystemTime::now()).replace(':', "-");
        let mut engine: Option<WindowEngine> = None;
        let mut segment = 0usize;
        let mut failures = 0u32;
        crate::gate_eprintln!(
            "gate watch: {} every {} ms (GPM {} ms, processes {} ms); {} rule(s); Ctrl-C stops",
            if args.all {
                "all GPU processes".to_string()
            } else {
                format!("PID {pid}")
            },
            args.interval.as_millis(),
            args.gpm_interval.as_millis(),
            args.process_interval.as_millis(),
            rules.rules().iter().filter(|r| r.enabled).count()
        );
        loop {
            let plan = self.segment_plan(segment);
            let path = args.trace_dir.join(format!(
                "watch-{stamp}-{}-{segment:05}.jsonl.zst",
                std::process::id()
            ));
            let offset_ms = started.elapsed().as_secs_f64() * 1000.0;
            let mut stop = false;
            let outcome = record::record_observed(&plan, &path, Echo::Stderr, &mut |rec| {
                if let Record::Header(h) = rec {
                    engine
                        .get_or_insert_with(|| new_engine(h, rules, args))
                        .start_segment(h, offset_ms);
                    sink.header(h);
                    return true;
                }
                if let Some(e) = engine.as_mut() {
                    sink.emit(e.push(rec));
                }
                stop = args.exit_on_alert && sink.fired > 0;
                !stop
            });
            match outcome {
                Ok(o) => {
                    failures = 0;
                    prune(&args.trace_dir, args.keep);
                    match o.end.reason {
                        StopReason::DurationReached => {}
                        StopReason::Stopped => return Ok(crate::exit_code::REGRESSION),
                        StopReason::TargetExited => {
                            crate::gate_eprintln!("gate watch: PID {pid} exited; the watch ends (use --all to survive restarts)");
                            break;
                        }
                        _ => break, // interrupted
                    }
                }
                // NVML or the GPU went away mid-watch: say so and retry, never
                // crash; the first segment failing means it cannot watch at all.
                Err(e) if segment > 0 || failures > 0 => {
                    failures += 1;
                    crate::gate_eprintln!("gate watch: recording failed ({e}); retrying in 10 s");
                    if let Some(en) = engine.as_mut() {
                        sink.emit(en.push(&Record::Event(crate::trace::EventRecord {
                            t: started.elapsed().as_secs_f64() * 1000.0 - offset_ms,
                            kind: crate::trace::EventKind::NvmlError,
                            gpu: None,
                            pid: None,
                            code: None,
                            message: e.to_string(),
                        })));
                    }
                    if args.exit_on_alert {
                        return Ok(crate::exit_code::REGRESSION);
                    }
                    std::thread::sleep(Duration::from_secs(10));
                    if crate::target::interrupted() {
                        break;
                    }
                }
                Err(e) => return Err(e.into()),
            }
            if stop {
                return Ok(crate::exit_code::REGRESSION);
            }
            segment += 1;
        }
        if let Some(e) = &engine {
            report_unfilled(e, args, "the watch");
        }
        Ok(if args.exit_on_alert && sink.fired > 0 {
            crate::exit_code::REGRESSION
        } else {
            crate::exit_code::PASS
        })
    }
}

/// Keep the newest `keep` watch traces in `dir` (names sort by time).
fn prune(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("watch-") && n.ends_with(".jsonl.zst"))
        })
        .collect();
    files.sort();
    let excess = files.len().saturating_sub(keep.max(1));
    for old in &files[..excess] {
        let _ = std::fs::remove_file(old);
    }
}
