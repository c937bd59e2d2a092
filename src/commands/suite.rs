//! `gate check --suite` and `gate capture --suite`: several workloads in
//! one invocation, declared in gate.toml (`[[suite.workload]]`: a name, its
//! baseline, its command, and per-workload tags, warm-up and duration),
//! run one after another on the same GPUs, each judged against its own
//! baseline exactly as `gate check --baseline B -- CMD` would judge it.
//!
//! One report of each kind for the whole suite: a JUnit file with one
//! `<testsuite>` per workload, one OpenMetrics file (every series labelled
//! with its `baseline`), one Markdown report, one JSON document, one PR
//! comment. A workload that cannot be judged (its baseline is missing, its
//! benchmark crashed) is reported as such and the others still run.
//!
//! The suite's exit code is the worst of its workloads', in this order
//! (`worst_exit_code`), worst first: 2 (usage: the suite's own
//! configuration is broken), 5 (a benchmark failed), 1 (regression), 3
//! (could not measure; retryable), 4 (inconclusive), 0. Deterministic
//! failures rank above
//! the retryable one, so CI does not rerun a whole suite on the GPU when a
//! regression or a crash is already certain.

use super::check::{self, CheckArgs};
use super::Format;
use crate::config::{Config, WorkloadDef};
use crate::error::GateError;
use crate::exit_code;
use crate::gate::CheckReport;
use crate::report::check::{self as report, Reporter};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::exit_code::{worst_exit_code, EXIT_CODE_ORDER};

/// One workload, validated.
#[derive(Debug, Clone)]
pub struct Workload {
    pub name: String,
    pub baseline: String,
    pub command: Vec<String>,
    pub tags: Vec<(String, String)>,
    pub warmup: Option<Duration>,
    pub duration: Option<Duration>,
    pub warmup_until: Option<String>,
    pub until: Option<String>,
    pub metrics_file: Option<PathBuf>,
    /// `--suite-replay NAME=TRACE` traces (replay mode).
    pub replay: Vec<PathBuf>,
}

/// The suite's workloads from gate.toml, narrowed to `only` (all when
/// empty), with the replayed traces of `replay` (`NAME=TRACE`).
pub fn workloads(
    config: &Config,
    only: &[String],
    replay: &[String],
) -> Result<Vec<Workload>, GateError> {
    let origin = config.origin.as_deref().unwrap_or("gate.toml");
    let defs: &[WorkloadDef] = config
        .file
        .suite
        .as_ref()
        .map(|s| s.workload.as_slice())
        .unwrap_or(&[]);
    if defs.is_empty() {
        return Err(GateError::usage(format!(
            "--suite: '{origin}' declares no [[suite.workload]]; add one per workload (name, baseline, command), see docs/suites.md"
        )));
    }
    for o in only {
        if !defs.iter().any(|d| &d.name == o) {
            return Err(GateError::usage(format!(
                "--workload '{o}' is not a [[suite.workload]] of '{origin}' (it has: {})",
                names(defs)
            )));
        }
    }
    let mut traces: Vec<(String, PathBuf)> = Vec::new();
    for r in replay {
        let Some((name, path)) = r.split_once('=') else {
            return Err(GateError::usage(format!(
                "--suite-replay '{r}': write NAME=TRACE, e.g. --suite-replay resnet50=runs/resnet50.jsonl"
            )));
        };
        if !defs.iter().any(|d| d.name == name) {
            return Err(GateError::usage(format!(
                "--suite-replay '{r}': '{name}' is not a [[suite.workload]] of '{origin}' (it has: {})",
                names(defs)
            )));
        }
        traces.push((name.to_string(), PathBuf::from(path)));
    }
    let mut out = Vec::new();
    for d in defs
        .iter()
        .filter(|d| only.is_empty() || only.contains(&d.name))
    {
        let at = |field: &str, v: &str| -> Result<Duration, GateError> {
            super::measure::parse_duration(v).map_err(|e| {
                GateError::bad_file(
                    origin,
                    format!("[[suite.workload]] '{}' {field} = {v:?}: {e}", d.name),
                )
            })
        };
        let replay: Vec<PathBuf> = traces
            .iter()
            .filter(|(n, _)| n == &d.name)
            .map(|(_, p)| p.clone())
            .collect();
        if !traces.is_empty() && replay.is_empty() {
            return Err(GateError::usage(format!(
                "--suite-replay gives traces for some workloads but none for '{}'; give one for each workload run (or narrow with --workload)",
                d.name
            )));
        }
        let mut tags: Vec<(String, String)> =
            d.tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        if !tags.iter().any(|(k, _)| k == "workload") {
            tags.push(("workload".into(), d.name.clone()));
        }
        out.push(Workload {
            name: d.name.clone(),
            baseline: d.baseline.clone(),
            command: d.command.clone(),
            tags,
            warmup: d.warmup.as_deref().map(|v| at("warmup", v)).transpose()?,
            duration: d
                .duration
                .as_deref()
                .map(|v| at("duration", v))
                .transpose()?,
            warmup_until: d.warmup_until.clone(),
            until: d.until.clone(),
            metrics_file: d.metrics_file.as_ref().map(PathBuf::from),
            replay,
        });
    }
    Ok(out)
}

fn names(defs: &[WorkloadDef]) -> String {
    defs.iter()
        .map(|d| d.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One workload's measurement settings on top of the command line's.
pub fn measure_for(
    base: &super::measure::MeasureArgs,
    w: &Workload,
) -> super::measure::MeasureArgs {
    let mut m = base.clone();
    m.replay = w.replay.clone();
    m.command = if w.replay.is_empty() {
        w.command.clone()
    } else {
        Vec::new()
    };
    m.command_string = None;
    m.pid = None;
    m.tags.extend(w.tags.iter().cloned());
    if let Some(d) = w.warmup {
        m.warmup = d;
    }
    if w.duration.is_some() {
        m.duration = w.duration;
    }
    if w.warmup_until.is_some() {
        m.warmup_until = w.warmup_until.clone();
    }
    if w.until.is_some() {
        m.until = w.until.clone();
    }
    if w.metrics_file.is_some() {
        m.metrics_file = w.metrics_file.clone();
    }
    m
}

/// What one workload of a check gave.
pub struct Outcome {
    pub workload: Workload,
    pub result: Result<CheckReport, (i32, String)>,
}

impl Outcome {
    pub fn exit_code(&self) -> i32 {
        match &self.result {
            Ok(r) => r.exit_code,
            Err((code, _)) => *code,
        }
    }

    pub fn verdict(&self) -> &'static str {
        match &self.result {
            Ok(r) => r.verdict.as_str(),
            Err((code, _)) if *code == exit_code::USAGE => "usage error",
            Err(_) => "error",
        }
    }
}

/// `gate check --suite`. A suite that cannot start still tells GitHub
/// Actions (`verdict=error`), as one check does.
pub fn check(args: &CheckArgs) -> anyhow::Result<i32> {
    check_inner(args).inspect_err(|_| {
        super::github::output(&check::base_inputs(args), "error", 0);
    })
}

fn check_inner(args: &CheckArgs) -> anyhow::Result<i32> {
    let config = check::load_config(args)?;
    let workloads = workloads(&config, &args.workload, &args.suite_replay)?;
    // Each workload is one check without report files (the suite writes
    // one of each).
    let checks: Vec<(Workload, CheckArgs)> = workloads
        .into_iter()
        .map(|w| {
            let wargs = CheckArgs {
                baseline: Some(w.baseline.clone()),
                suite: false,
                scope: Some(w.name.clone()),
                measure: measure_for(&args.measure, &w),
                ..args.without_outputs()
            };
            (w, wargs)
        })
        .collect();
    // Outputs first: a path that would be refused must not cost live runs,
    // nor replace anything the suite reads (the history database included).
    let mut inputs = crate::files::Inputs::default();
    for (_, wargs) in &checks {
        inputs.extend(check::base_inputs(wargs));
    }
    let recorder = super::history::Recorder::resolve(&args.history, &config)?;
    inputs.add_all(
        "the history database",
        recorder.iter().flat_map(|r| r.files()),
    );
    check::refuse_shared_outputs(args)?;
    for (flag, path) in check::outputs(args) {
        inputs
            .check_output(path, flag)
            .map_err(|e| GateError::usage(e.to_string()))?;
    }
    let n = checks.len();
    let mut outcomes = Vec::new();
    let mut pending = Vec::new();
    for (i, (w, wargs)) in checks.into_iter().enumerate() {
        crate::gate_eprintln!(
            "gate: suite: workload {}/{n} '{}' against baseline '{}'",
            i + 1,
            crate::escape::terminal(&w.name),
            crate::escape::terminal(&w.baseline)
        );
        let mut judged_inputs = inputs.clone();
        let result = check::judge(&wargs, &mut judged_inputs).map_err(|e| {
            let code = crate::error::exit_code_of(&e);
            let message = e
                .chain()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(": ");
            crate::gate_eprintln!(
                "gate: suite: workload '{}': {}",
                crate::escape::terminal(&w.name),
                crate::escape::terminal(&message)
            );
            (code, message)
        });
        let result = result.map(|j| {
            pending.push(j.history);
            j.report
        });
        outcomes.push(Outcome {
            workload: w,
            result,
        });
    }
    let code = worst_exit_code(outcomes.iter().map(Outcome::exit_code));
    emit(args, &outcomes, code, &inputs)?;
    // The history after every report (commands::history): a store that
    // fails can only raise the exit code with --history-required.
    let history_codes: Vec<i32> = pending
        .into_iter()
        .filter_map(check::HistoryTail::finish)
        .collect();
    Ok(worst_exit_code(std::iter::once(code).chain(history_codes)))
}

/// `gate capture --suite`: every workload's baseline, one after another
/// (from the working tree's gate.toml: capture runs on the default
/// branch). A workload that fails does not stop the others; the exit code
/// is the worst.
pub fn capture(args: &super::capture::CaptureArgs) -> anyhow::Result<i32> {
    let path = args
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from("gate.toml"));
    let config = Config::load(&path, args.config.is_some())?;
    let workloads = workloads(&config, &args.workload, &args.suite_replay)?;
    let n = workloads.len();
    let mut codes = Vec::new();
    for (i, w) in workloads.into_iter().enumerate() {
        crate::gate_eprintln!(
            "gate: suite: capturing workload {}/{n} '{}' as baseline '{}'",
            i + 1,
            crate::escape::terminal(&w.name),
            crate::escape::terminal(&w.baseline)
        );
        let wargs = super::capture::CaptureArgs {
            baseline: Some(w.baseline.clone()),
            suite: false,
            workload: Vec::new(),
            suite_replay: Vec::new(),
            scope: Some(w.name.clone()),
            measure: measure_for(&args.measure, &w),
            // Replayed: one run per trace; live: --runs (or the default).
            runs: if w.replay.is_empty() { args.runs } else { None },
            ..args.clone()
        };
        let code = match super::capture::run(wargs) {
            Ok(c) => c,
            Err(e) => {
                crate::gate_eprintln!(
                    "gate: suite: workload '{}': {}",
                    crate::escape::terminal(&w.name),
                    crate::escape::terminal(
                        &e.chain()
                            .map(|c| c.to_string())
                            .collect::<Vec<_>>()
                            .join(": ")
                    )
                );
                crate::error::exit_code_of(&e)
            }
        };
        codes.push(code);
    }
    let code = worst_exit_code(codes);
    crate::console::outln(format_args!(
        "gate: suite: {n} workload(s) captured, exit {code} ({})",
        verdict_word(code)
    ));
    Ok(code)
}

/// The word of a suite's exit code.
pub fn verdict_word(code: i32) -> &'static str {
    match code {
        exit_code::PASS => "PASS",
        exit_code::REGRESSION => "REGRESSION",
        exit_code::USAGE => "USAGE ERROR",
        exit_code::INCONCLUSIVE => "INCONCLUSIVE",
        exit_code::BENCHMARK_FAILED => "BENCHMARK FAILED",
        _ => "ERROR",
    }
}

fn emit(
    args: &CheckArgs,
    outcomes: &[Outcome],
    code: i32,
    inputs: &crate::files::Inputs,
) -> anyhow::Result<()> {
    let write = |flag: &str, path: &Path, text: &str| -> Result<(), GateError> {
        crate::console::make_parent(path);
        inputs
            .write_output(path, flag, text.as_bytes())
            .map_err(|e| {
                crate::files::output_error(
                    format!("cannot write the {flag} report '{}': {e}", path.display()),
                    &e,
                )
            })?;
        crate::console::wrote(&format!("the {flag} report"), path);
        Ok(())
    };
    let link = |text: String, f: fn(&str, &str) -> String| match &args.html_url {
        Some(url) => f(&text, url),
        None => text,
    };
    let markdown = link(render_markdown(outcomes, code), report::html::link_markdown);
    for (flag, path) in check::outputs(args) {
        let text = match flag {
            "--junit" => render_junit(outcomes),
            "--markdown" => markdown.clone(),
            "--json" => render_json(outcomes, code),
            "--openmetrics" => {
                let ok: Vec<&CheckReport> = outcomes
                    .iter()
                    .filter_map(|o| o.result.as_ref().ok())
                    .collect();
                report::openmetrics::render_many(&ok)
            }
            "--pr-comment" => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        GateError::usage(format!(
                            "cannot create '{}' for --pr-comment: {e}",
                            dir.display()
                        ))
                    })?;
                }
                link(
                    render_pr_comment(outcomes, code),
                    report::html::link_pr_comment,
                )
            }
            "--bmf" => {
                let mut all = serde_json::Map::new();
                for r in outcomes.iter().filter_map(|o| o.result.as_ref().ok()) {
                    let one: serde_json::Value = serde_json::from_str(&report::bmf::Bmf.render(r))?;
                    if let serde_json::Value::Object(o) = one {
                        all.extend(o);
                    }
                }
                serde_json::to_string_pretty(&all)? + "\n"
            }
            "--html" => render_html(outcomes, code),
            _ => continue,
        };
        write(flag, path, &text)?;
    }
    match args.format {
        Format::Json => crate::console::out(&render_json(outcomes, code)),
        Format::Text => crate::console::out(&render_terminal(outcomes, code, args.color.stdout())),
    }
    // GitHub Actions: the same writer as one check's (annotations capped
    // over the whole suite, the summary under 1 MiB, verdict= for the action).
    let items: Vec<report::github::Item> = outcomes
        .iter()
        .flat_map(|o| match &o.result {
            Ok(r) => report::github::items(r, &format!("{}: ", o.workload.name)),
            Err((_, m)) => vec![report::github::Item::error(
                format!("gate: {}: {}", o.workload.name, o.verdict()),
                m.clone(),
            )],
        })
        .collect();
    let lines = super::github::annotation_lines(&items);
    super::github::print_annotations(&lines, args.format == Format::Json);
    let verdict = verdict_word(code).to_lowercase();
    super::github::finish(
        inputs,
        &super::github::Step {
            markdown: &markdown,
            verdict: &verdict,
            regressions: outcomes
                .iter()
                .filter_map(|o| o.result.as_ref().ok())
                .map(|r| r.counts.regression)
                .sum(),
        },
    );
    Ok(())
}

/// One check page for every workload (`--html`): the suite's verdict and
/// table, then each judged workload's section with its curves.
fn render_html(outcomes: &[Outcome], code: i32) -> String {
    use report::html;
    let judged: Vec<html::Workload> = outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().ok())
        .map(|r| html::Workload {
            report: r,
            runs: html::series_for(r),
        })
        .collect();
    let failed: Vec<(String, i32, String)> = outcomes
        .iter()
        .filter_map(|o| {
            let (c, why) = o.result.as_ref().err()?;
            Some((o.workload.name.clone(), *c, why.clone()))
        })
        .collect();
    let suite = html::Suite {
        exit_code: code,
        word: verdict_word(code),
        failed: &failed,
    };
    html::render_page(&judged, Some(&suite), html::HTML_BUDGET_BYTES)
}

/// `| workload | baseline | verdict | exit |` rows.
fn summary_rows(outcomes: &[Outcome]) -> Vec<[String; 4]> {
    outcomes
        .iter()
        .map(|o| {
            [
                o.workload.name.clone(),
                o.workload.baseline.clone(),
                o.verdict().to_string(),
                o.exit_code().to_string(),
            ]
        })
        .collect()
}

pub fn render_terminal(outcomes: &[Outcome], code: i32, color: bool) -> String {
    use crate::escape::terminal;
    let mut out = String::new();
    for o in outcomes {
        out.push_str(&format!(
            "== workload {} (baseline {}) ==\n",
            terminal(&o.workload.name),
            terminal(&o.workload.baseline)
        ));
        match &o.result {
            Ok(r) => out.push_str(
                &report::terminal::Terminal {
                    color,
                    width: crate::console::stdout_width(),
                }
                .render(r),
            ),
            Err((c, m)) => out.push_str(&format!(
                "VERDICT: {} (exit {c}): {}\n",
                o.verdict().to_uppercase(),
                terminal(m)
            )),
        }
        out.push('\n');
    }
    let mut rows = vec![["workload", "baseline", "verdict", "exit"]
        .map(String::from)
        .to_vec()];
    rows.extend(
        summary_rows(outcomes)
            .iter()
            .map(|row| row.iter().map(|c| terminal(c)).collect()),
    );
    out.push_str(&crate::console::aligned(&rows));
    out.push_str(&format!(
        "SUITE VERDICT: {} (exit {code}; worst of {} workload(s))\n",
        verdict_word(code),
        outcomes.len()
    ));
    out
}

pub fn render_markdown(outcomes: &[Outcome], code: i32) -> String {
    use crate::escape::{markdown_code as mcode, markdown_text as text};
    let mut out = format!(
        "## gate suite: {} (exit {code}, worst of {} workloads)\n\n| workload | baseline | verdict | exit |\n|---|---|---|---:|\n",
        verdict_word(code),
        outcomes.len()
    );
    for row in summary_rows(outcomes) {
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} |\n",
            mcode(&row[0]),
            mcode(&row[1]),
            text(&row[2]),
            row[3]
        ));
    }
    out.push('\n');
    for o in outcomes {
        match &o.result {
            Ok(r) => out.push_str(&report::markdown::Markdown.render(r)),
            Err((c, m)) => out.push_str(&format!(
                "### gate: {} for workload `{}` (exit {c})\n\n{}\n",
                o.verdict().to_uppercase(),
                mcode(&o.workload.name),
                text(m)
            )),
        }
        out.push('\n');
    }
    out
}

pub fn render_junit(outcomes: &[Outcome]) -> String {
    let docs: Vec<String> = outcomes
        .iter()
        .map(|o| match &o.result {
            Ok(r) => report::junit::Junit.render(r),
            Err((c, m)) => report::junit::render_error(
                &o.workload.baseline,
                if *c == exit_code::USAGE {
                    "usage"
                } else {
                    "error"
                },
                m,
            ),
        })
        .collect();
    report::junit::combine(&docs)
}

/// Version of the suite JSON document.
pub const SUITE_SCHEMA_VERSION: u32 = 1;

pub fn render_json(outcomes: &[Outcome], code: i32) -> String {
    let workloads: Vec<serde_json::Value> = outcomes
        .iter()
        .map(|o| {
            let mut v = serde_json::json!({
                "name": o.workload.name,
                "baseline": o.workload.baseline,
                "exit_code": o.exit_code(),
                "verdict": o.verdict(),
            });
            match &o.result {
                Ok(r) => {
                    v["report"] = serde_json::from_str(&report::json::Json.render(r))
                        .expect("the JSON reporter writes JSON")
                }
                Err((_, m)) => v["error"] = m.as_str().into(),
            }
            v
        })
        .collect();
    let doc = serde_json::json!({
        "suite_schema_version": SUITE_SCHEMA_VERSION,
        "gate_version": crate::GATE_VERSION,
        "verdict": verdict_word(code).to_lowercase(),
        "exit_code": code,
        "workloads": workloads,
    });
    serde_json::to_string_pretty(&doc).expect("a JSON value always serializes") + "\n"
}

/// The suite's marker: the CI templates edit the comment that carries it.
pub const SUITE_MARKER: &str = "<!-- gate-pr-comment:suite -->";

/// One comment for the suite: the suite verdict and the worst workload's
/// top cause in its first three lines, then each workload's own comment
/// (its marker removed) in a folded section, the regressed ones open.
pub fn render_pr_comment(outcomes: &[Outcome], code: i32) -> String {
    use crate::escape::{markdown_code as mcode, markdown_text as text};
    let worst = outcomes.iter().min_by_key(|o| {
        EXIT_CODE_ORDER
            .iter()
            .position(|&x| x == o.exit_code())
            .unwrap_or(0)
    });
    let icon = match code {
        exit_code::PASS => ":white_check_mark:",
        exit_code::REGRESSION => ":x:",
        _ => ":warning:",
    };
    let failing = outcomes
        .iter()
        .filter(|o| o.exit_code() != exit_code::PASS)
        .count();
    let mut out = format!(
        "**gate suite: {icon} {}**: {failing} of {} workloads not passing (exit {code})\n",
        verdict_word(code),
        outcomes.len()
    );
    let cause = match worst.map(|o| &o.result) {
        Some(Ok(r)) if code != exit_code::PASS => r
            .diagnosis
            .first()
            .map(|d| format!("{}: {}", d.title, d.explanation))
            .or_else(|| r.reasons.first().cloned())
            .unwrap_or_default(),
        Some(Err((_, m))) => m.clone(),
        _ => "Every workload passed.".to_string(),
    };
    let who = worst
        .filter(|_| code != exit_code::PASS)
        .map(|o| format!("`{}`: ", mcode(&o.workload.name)))
        .unwrap_or_default();
    out.push_str(&format!("Top cause: {who}{}\n", text(&cause)));
    let list: Vec<String> = outcomes
        .iter()
        .map(|o| format!("`{}` {}", mcode(&o.workload.name), o.verdict()))
        .collect();
    // Cut to one line by `fit_sections` (with "…") for a large suite.
    out.push_str(&format!("Workloads: {}\n", list.join(", ")));
    let sections: Vec<report::pr_comment::Section> = outcomes.iter().map(section).collect();
    let changed = outcomes.iter().any(|o| match &o.result {
        Ok(r) => report::pr_comment::changed(r),
        Err(_) => true,
    });
    let tail = format!(
        "\n{SUITE_MARKER}\n{}",
        if changed {
            "<!-- gate-changed:yes -->\n"
        } else {
            "<!-- gate-changed:no -->\n"
        }
    );
    report::pr_comment::fit_sections(&out, &sections, &tail)
}

/// One workload's folded part of the suite comment: its own comment (its
/// markers removed), open when it is not passing; the short form keeps
/// the comment's first three lines (verdict, top cause, what moved).
fn section(o: &Outcome) -> report::pr_comment::Section {
    let body = match &o.result {
        Ok(r) => report::pr_comment::PrComment.render(r),
        Err((c, m)) => report::pr_comment::render_error(&o.workload.baseline, *c, m),
    };
    let lines: Vec<&str> = body
        .lines()
        .filter(|l| !(l.starts_with("<!-- gate-") && l.ends_with("-->")))
        .collect();
    let failing = o.exit_code() != exit_code::PASS;
    let fold = |text: &str| {
        format!(
            "\n<details{}><summary>workload <code>{}</code>: {}</summary>\n\n{}\n</details>\n",
            if failing { " open" } else { "" },
            crate::escape::html(&o.workload.name),
            o.verdict(),
            text.trim_end()
        )
    };
    let short: String = lines.iter().take(3).map(|l| format!("{l}\n")).collect();
    report::pr_comment::Section {
        name: o.workload.name.clone(),
        full: fold(&lines.join("\n")),
        short: fold(&short),
        first: failing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(i: usize, r: &CheckReport) -> Outcome {
        Outcome {
            workload: Workload {
                name: format!("w{i:03}"),
                baseline: format!("b{i:03}"),
                command: vec!["true".into()],
                tags: Vec::new(),
                warmup: None,
                duration: None,
                warmup_until: None,
                until: None,
                metrics_file: None,
                replay: Vec::new(),
            },
            result: Ok(r.clone()),
        }
    }

    #[test]
    fn a_suite_comment_of_150_regressed_workloads_fits_whole_sections_only() {
        let r = crate::report::check::tests_support::sample_report();
        for n in [1, 10, 150, 2000] {
            let outcomes: Vec<Outcome> = (0..n).map(|i| outcome(i, &r)).collect();
            let c = render_pr_comment(&outcomes, exit_code::REGRESSION);
            assert!(
                c.len() <= crate::limits::MAX_PR_COMMENT_BYTES,
                "{n}: {}",
                c.len()
            );
            assert_eq!(
                c.matches("<details").count(),
                c.matches("</details>").count()
            );
            let shown = c.matches("<summary>workload <code>").count();
            let cut: usize = c
                .lines()
                .find_map(|l| l.strip_prefix("... "))
                .and_then(|l| l.split(' ').next())
                .map_or(0, |k| k.parse().unwrap());
            assert_eq!(shown + cut, n, "{n}: every workload shown or counted");
            assert!(c.ends_with("<!-- gate-changed:yes -->\n"), "{n}");
            assert!(c.lines().all(|l| l.len() <= 2_100), "{n}: a line too long");
        }
    }

    #[test]
    fn the_worst_exit_code_follows_the_documented_order() {
        assert_eq!(worst_exit_code([0, 1, 3]), 1);
        assert_eq!(worst_exit_code([0, 3, 4]), 3);
        assert_eq!(worst_exit_code([1, 5]), 5);
        assert_eq!(worst_exit_code([5, 2, 1]), 2);
        assert_eq!(worst_exit_code([0, 4]), 4);
        assert_eq!(worst_exit_code([]), 0);
        assert_eq!(worst_exit_code([0, 0]), 0);
    }
}
