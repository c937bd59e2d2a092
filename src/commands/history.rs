//! `gate history`, and the history flags of `check` and `capture`
//! (`HistoryArgs`), which become the pipeline's `HistorySettings`
//! (`history::pipeline`: where the database is, the reads before the
//! reports and the append after them).

use super::Format;
use crate::config::Config;
use crate::history::listing::{self, Filter, Listing};
use crate::history::pipeline::{resolve, to_gate, HistorySettings};
use crate::history::{self, Location, MetricFilter, Query, RunRecord};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// History flags shared by `check` and `capture`.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "History (runs recorded for trends and drift)")]
pub struct HistoryArgs {
    /// Record this run in a history database: a file (SQLite, e.g. .gate/history.sqlite),
    /// sqlite:PATH, or postgres://USER:PASSWORD@HOST/DB [default: gate.toml [history]; off
    /// when neither is set]
    #[arg(
        long,
        value_name = "URL",
        env = "GATE_HISTORY_URL",
        hide_env_values = true
    )]
    pub history: Option<String>,

    /// Record nothing, whatever --history, $GATE_HISTORY_URL or gate.toml say
    #[arg(long)]
    pub(crate) no_history: bool,

    /// A history database that cannot be written fails the command (exit 3) instead of a warning
    #[arg(long)]
    pub(crate) history_required: bool,

    /// Branch recorded with the run (drift is judged per branch) [default: the CI's branch
    /// variables, else git]
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,

    /// Longest one history step may take (opening and reading the database, then appending
    /// the run); PostgreSQL gets it as statement and lock timeout. Past it the run is not
    /// recorded (a warning; exit 3 with --history-required), the verdict stands
    #[arg(long, value_name = "DURATION", value_parser = super::measure::parse_duration, default_value = "10s")]
    pub(crate) history_timeout: Duration,
}

impl HistoryArgs {
    /// What the history pipeline needs of these flags (the commit is
    /// detected by a check that records its run).
    pub fn settings(&self) -> HistorySettings {
        HistorySettings {
            url: self.history.clone(),
            off: self.no_history,
            required: self.history_required,
            branch: self.branch.clone(),
            timeout: self.history_timeout,
            commit: None,
        }
    }
}

#[derive(Debug, Args)]
pub struct HistoryCmdArgs {
    /// History database [default: $GATE_HISTORY_URL, gate.toml [history], else
    /// .gate/history.sqlite]
    #[arg(
        long,
        value_name = "URL",
        env = "GATE_HISTORY_URL",
        hide_env_values = true
    )]
    pub history: Option<String>,

    /// Gating policy file, for its [history] section [default: gate.toml, optional]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Only runs of this baseline
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,

    /// Only runs on this branch
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,

    /// Show this metric's value in every run (label as in check's report, e.g.
    /// samples_per_s or sm_active_pct[gpu1])
    #[arg(long, value_name = "ID")]
    pub metric: Option<String>,

    /// Only runs in which a gated metric regressed
    #[arg(long)]
    pub regressions: bool,

    /// How many of the most recent runs (0 = all) [default: 20; 500 with --html]
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,

    /// Output format on stdout
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,

    /// Write a self-contained trend page (HTML with inline SVG) to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Longest wait for the database (PostgreSQL statement and lock timeout, and the client's
    /// deadline)
    #[arg(long, value_name = "DURATION", value_parser = super::measure::parse_duration, default_value = "10s")]
    pub(crate) history_timeout: Duration,
}

/// `--metric ID` that no listed run recorded: most likely a typo, so say
/// so with the closest id (the listing would only say "not recorded").
fn warn_if_unrecorded(id: &str, runs: &[RunRecord], config: &Config) {
    if runs.is_empty()
        || runs
            .iter()
            .any(|r| r.metrics.iter().any(|m| m.metric == id))
    {
        return;
    }
    let users = config
        .file
        .user_metrics
        .keys()
        .map(|k| k.get_ref().as_str());
    let recorded = runs
        .iter()
        .flat_map(|r| r.metrics.iter().map(|m| m.metric.as_str()));
    let hint = crate::metrics::did_you_mean(id, users.chain(recorded));
    crate::gate_eprintln!(
        "gate: warning: no listed run recorded metric '{}'{}; 'gate metrics' lists every id",
        crate::escape::terminal(id),
        crate::escape::terminal(&hint)
    );
}

/// `gate history`.
pub fn run(args: HistoryCmdArgs) -> anyhow::Result<i32> {
    ListingPlan::build(&args)?.execute()
}

/// A listing of the history, built once from its flags: the database's
/// location (flag, environment or gate.toml), the query and the filter it
/// shows, and where the trend page goes.
struct ListingPlan {
    config: Config,
    location: Location,
    query: Query,
    filter: Filter,
    format: Format,
    html: Option<PathBuf>,
    timeout: Duration,
}

impl ListingPlan {
    fn build(args: &HistoryCmdArgs) -> anyhow::Result<ListingPlan> {
        let config = Config::from_flag(args.config.as_deref())?;
        let location = match resolve(args.history.as_deref(), config.file.history.as_ref(), true)? {
            Some(l) => l,
            None => Location::Sqlite(PathBuf::from(history::DEFAULT_SQLITE_PATH)),
        };
        let limit = match args.limit {
            Some(0) => None,
            Some(n) => Some(n),
            None if args.html.is_some() => Some(500),
            None => Some(20),
        };
        Ok(ListingPlan {
            config,
            location,
            query: query(args, limit),
            filter: Filter {
                baseline: args.baseline.clone(),
                branch: args.branch.clone(),
                metric: args.metric.clone(),
                regressions_only: args.regressions,
                limit,
            },
            format: args.format,
            html: args.html.clone(),
            timeout: args.history_timeout,
        })
    }

    /// Read the runs, write the trend page, list them on stdout.
    fn execute(self) -> anyhow::Result<i32> {
        let runs = read_runs(&self.location, self.timeout, self.query)?;
        if let Some(m) = &self.filter.metric {
            warn_if_unrecorded(m, &runs, &self.config);
        }
        if let Some(path) = &self.html {
            write_page(path, &self.filter, &runs, &self.location)?;
        }
        let l = Listing {
            schema_version: listing::JSON_SCHEMA_VERSION,
            database: self.location.display(),
            filter: self.filter,
            runs,
        };
        match self.format {
            Format::Text => crate::console::out(&listing::render_text(&l)),
            Format::Json => crate::console::out(&listing::render_json(&l)),
        }
        Ok(crate::exit_code::PASS)
    }
}

/// The runs `gate history` asks for, at most `limit` of them.
fn query(args: &HistoryCmdArgs, limit: Option<usize>) -> Query {
    // What each output shows: a metric's series loads that metric; JSON
    // carries the gated rows; the table (what regressed, and the context
    // counters that moved) and the trend page (a metric gated in a capture
    // is context in the checks the benchmark's number decided) read all.
    let metrics = match (&args.metric, args.html.is_some(), args.format) {
        (Some(m), _, _) => MetricFilter::Only(vec![m.clone()]),
        (None, false, Format::Json) => MetricFilter::Gated,
        (None, _, _) => MetricFilter::All,
    };
    Query {
        baseline: args.baseline.clone(),
        branch: args.branch.clone(),
        kind: None,
        baseline_created: None,
        regressions_only: args.regressions,
        metrics,
        limit,
    }
}

/// The runs `query` selects at `location`, within `timeout`.
fn read_runs(
    location: &Location,
    timeout: Duration,
    query: Query,
) -> anyhow::Result<Vec<RunRecord>> {
    // A repository that has not recorded a run yet has no database: that is
    // an empty history (exit 0), not a broken one (exit 3).
    Ok(match location {
        Location::Sqlite(p) if !p.exists() => {
            crate::gate_eprintln!(
                "gate: no history yet: '{}' does not exist; run 'gate check --history {} ...' (or set [history] in gate.toml) to record runs",
                crate::escape::terminal(&p.display().to_string()),
                crate::escape::shell_word(&p.display().to_string())
            );
            Vec::new()
        }
        _ => {
            let deadline = history::step_deadline(location, timeout);
            let loc = location.clone();
            history::within(location, deadline, move || {
                history::open_bounded(&loc, false, timeout)?.runs(&query)
            })
            .map_err(to_gate)?
        }
    })
}

/// `--html FILE`: the trend page of `runs`.
struct TrendPage<'a> {
    path: &'a std::path::Path,
    filter: &'a Filter,
    runs: &'a [RunRecord],
    location: &'a Location,
}

impl super::output::Pages for TrendPage<'_> {
    fn pages(&self) -> Vec<super::output::Page<'_>> {
        vec![super::output::Page {
            flag: "--html",
            what: "the --html trend page".into(),
            path: self.path,
            bytes: Box::new(|| {
                let scope = scope(self.filter);
                history::html::render(self.runs, &self.location.display(), &scope).into_bytes()
            }),
        }]
    }
}

/// What the trend page shows: the filters, or all baselines.
fn scope(filter: &Filter) -> String {
    let scope = [
        filter.baseline.as_ref().map(|b| format!("baseline {b}")),
        filter.branch.as_ref().map(|b| format!("branch {b}")),
        filter.metric.as_ref().map(|m| format!("metric {m}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    if scope.is_empty() {
        "all baselines".to_string()
    } else {
        scope
    }
}

/// `--html FILE`, never over the database itself (`--html
/// .gate/history.sqlite`).
fn write_page(
    path: &std::path::Path,
    filter: &Filter,
    runs: &[RunRecord],
    location: &Location,
) -> anyhow::Result<()> {
    let mut inputs = crate::files::Inputs::default();
    inputs.add_all("the input", location.files());
    let page = TrendPage {
        path,
        filter,
        runs,
        location,
    };
    Ok(super::output::write_pages(&page, &inputs)?)
}
