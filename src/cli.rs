//! Command-line surface (clap derive) and the top of the house: each
//! subcommand's flags live beside its implementation in `commands/`; this
//! file assembles them and hands each to its command. Dependencies point
//! one way: main -> cli -> commands -> the library.

use crate::commands::{
    ab, capture, check, diff, doctor, history, metrics, record, report, suite, tools, watch,
};
use clap::{CommandFactory, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "gate",
    version,
    about = "Keep GPU performance from silently regressing",
    long_about = long_about(),
    arg_required_else_help = true,
    after_help = "Start with:  gate capture --baseline train-h200 --runs 3 -- python train.py\n\
Then:        gate check --baseline train-h200 --junit gate.xml -- python train.py\n\
In CI:       gate check --baseline train-h200 --baseline-ref origin/main -- python train.py\n\
Explain:     gate report .gate/traces/<run>.jsonl --html report.html"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// More gate flags as ONE string, split like a shell line by gate itself (quotes
    /// honoured; no variables, globs or substitutions, nothing is run): for CI inputs that
    /// can only be strings, e.g. --args-string "--duration 5m --warmup-until '^step 20 '".
    /// Flags and their values only: '--', a command or other positional word,
    /// --command-string, --help and --version are refused
    #[arg(long, global = true, value_name = "FLAGS", allow_hyphen_values = true)]
    pub(crate) args_string: Option<String>,
}

/// `gate --help`'s (and the man page's) description; the exit codes come
/// from their one source, `exit_code::ALL`.
fn long_about() -> String {
    format!(
        "gate records GPU (NVML + GPM) and host (/proc) counters of a benchmark with zero \
intrusion, stores baselines as TOML in your repository (utilisations on their mean, \
the benchmark's own numbers first), compares new runs against them \
with noise-aware thresholds, explains why a run regressed, and fails the pipeline with JUnit \
XML and a nonzero exit code.\n\n{}\n\n\
Baselines are reviewed like code: see docs/baselines.md. CI templates: ci-templates/README.md.",
        crate::exit_code::help_paragraph()
    )
}

/// `gate check`'s summary line, with every exit code.
fn check_about() -> String {
    format!(
        "Measure a run and judge it against a baseline (exit {})",
        crate::exit_code::short_listing()
    )
}

/// `gate check --help`'s description, with every exit code.
fn check_long_about() -> String {
    format!(
        "Measure a run (or replay traces) and judge it against a baseline.\n\n{}",
        crate::exit_code::help_paragraph()
    )
}

/// Parse gate's command line: clap, then `--args-string` expanded in place
/// (its shell-like words replace it) and parsed again, so those flags are
/// checked exactly like flags typed on the command line.
pub fn parse_from<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::Parser;
    let invalid =
        |msg: String| clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{msg}\n"));
    let argv: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
    let mut cli = Cli::try_parse_from(&argv).map_err(|e| forgotten_dashdash(e, &argv))?;
    if cli.args_string.is_some() {
        cli = Cli::try_parse_from(expand_args_string(&argv).map_err(invalid)?)?;
    }
    let measure = match &mut cli.command {
        Command::Record(a) => Some(&mut a.measure),
        Command::Capture(a) => Some(&mut a.measure),
        Command::Check(a) => Some(&mut a.measure),
        Command::Report(a) => Some(&mut a.measure),
        _ => None,
    };
    if let Some(m) = measure {
        m.split_command_string().map_err(invalid)?;
    }
    Ok(cli)
}

/// `gate check --baseline b python3 bench.py`: clap's "unexpected argument
/// 'python3'" gets the fix, since the benchmark command must follow `--`.
fn forgotten_dashdash(e: clap::Error, argv: &[std::ffi::OsString]) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let sub = argv.get(1).and_then(|a| a.to_str()).unwrap_or("");
    let launches = matches!(sub, "record" | "capture" | "check");
    if e.kind() != ErrorKind::UnknownArgument || !launches || argv.iter().any(|a| a == "--") {
        return e;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    if arg.starts_with('-') {
        return e;
    }
    let at = argv.iter().position(|a| a.to_str() == Some(arg.as_str()));
    let (flags, command) = match at {
        Some(i) => (&argv[1..i], &argv[i..]),
        None => (&argv[1..], &argv[argv.len()..]),
    };
    let words = |a: &[std::ffi::OsString]| {
        a.iter()
            .map(|w| crate::escape::shell_word(&w.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    clap::Error::raw(
        ErrorKind::UnknownArgument,
        format!(
            "unexpected argument '{}'; put -- before the benchmark command: gate {} -- {}\n",
            crate::escape::terminal(arg),
            crate::escape::terminal(&words(flags)),
            crate::escape::terminal(&words(command))
        ),
    )
}

/// `argv` with every `--args-string VALUE` (or `--args-string=VALUE`) before
/// a `--` replaced by VALUE's shell-like words. The words may only be gate
/// flags and their values: a `--`, a positional word (a command, a trace),
/// `--command-string`, or a flag that prints and exits (`--help`,
/// `--version`) is refused, so a CI template's "extra args" input can
/// neither run a command nor turn the job into an exit 0 without a verdict.
pub(crate) fn expand_args_string(
    argv: &[std::ffi::OsString],
) -> Result<Vec<std::ffi::OsString>, String> {
    const FLAG: &str = "--args-string";
    // Which flags take values, from the subcommand the line names.
    let mut cli = Cli::command();
    cli.build();
    let sub_name = argv
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .take_while(|a| *a != "--")
        .find(|a| cli.find_subcommand(a).is_some())
        .map(str::to_string);
    let scope = match &sub_name {
        Some(name) => cli.find_subcommand(name).cloned().unwrap_or(cli.clone()),
        None => cli.clone(),
    };
    let mut out = Vec::with_capacity(argv.len());
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let text = arg.to_str();
        let value = match text {
            Some("--") => {
                out.push(arg.clone());
                out.extend(it.by_ref().cloned());
                break;
            }
            Some(FLAG) => it
                .next()
                .map(|v| v.to_string_lossy().into_owned())
                .ok_or_else(|| format!("{FLAG} needs a value"))?,
            Some(t) if t.starts_with("--args-string=") => t[FLAG.len() + 1..].to_string(),
            _ => {
                out.push(arg.clone());
                continue;
            }
        };
        let words = crate::shell_words::split(&value, FLAG)?;
        only_flags(&words, &scope).map_err(|why| {
            format!(
                "{FLAG} '{}' {why}; it may only add gate flags (give the command with --command-string or after '--')",
                value.escape_debug()
            )
        })?;
        out.extend(words.into_iter().map(Into::into));
    }
    Ok(out)
}

/// Err(why) unless `words` are flags of `scope` (a subcommand, or gate
/// itself) and the values those flags take.
fn only_flags(words: &[String], scope: &clap::Command) -> Result<(), String> {
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        i += 1;
        if w == "--" {
            return Err("contains '--'".into());
        }
        let arg = if let Some(long) = w.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, _)) => (n, true),
                None => (long, false),
            };
            if matches!(name, "help" | "version" | "args-string" | "command-string") {
                return Err(format!("contains '--{name}'"));
            }
            // An unknown flag is left to clap, which names it.
            match scope.get_arguments().find(|a| a.get_long() == Some(name)) {
                Some(a) if !inline => a,
                _ => continue,
            }
        } else if let Some(shorts) = w.strip_prefix('-').filter(|s| !s.is_empty()) {
            if shorts.starts_with(['h', 'V']) {
                return Err(format!("contains '{w}'"));
            }
            let Some(c) = shorts.chars().next() else {
                continue;
            };
            match scope.get_arguments().find(|a| a.get_short() == Some(c)) {
                // `-oFILE` carries its value; `-o FILE` takes the next word.
                Some(a) if shorts.len() == 1 => a,
                _ => continue,
            }
        } else {
            return Err(format!(
                "contains the word '{}', which is not a flag",
                w.escape_debug()
            ));
        };
        let takes = arg.get_num_args().unwrap_or_default();
        if !takes.takes_values() {
            continue;
        }
        // The values: one word, or (for a flag taking several, like
        // --replay A B) every following word that is not a flag.
        let mut taken = 0;
        while i < words.len() && taken < takes.max_values() {
            if taken >= takes.min_values().max(1) && words[i].starts_with('-') {
                break;
            }
            i += 1;
            taken += 1;
        }
    }
    Ok(())
}

// Parsed once per process: the size difference between variants is irrelevant.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Record GPU and host counters of a command or PID into a trace file
    // Record measures live: the shared measurement flags' --replay is not
    // offered (hidden from help and completions; given anyway, refused).
    #[command(mut_arg("replay", |a| a.hide(true)))]
    Record(record::RecordArgs),
    /// Check that NVML, GPM and permissions work on this machine
    Doctor(doctor::DoctorArgs),
    /// Measure a known-good run and store it as a baseline (TOML); --replace refreshes one
    Capture(capture::CaptureArgs),
    /// Measure a run and judge it against a baseline (exit codes: `gate check --help`)
    #[command(about = check_about(), long_about = check_long_about())]
    Check(check::CheckArgs),
    /// Run A and B interleaved on this runner (ABBA rounds) and judge B against A, paired
    // The flags of check that ab refuses (it runs --a and --b itself and
    // reads no stored baseline) are hidden from its help.
    #[command(mut_arg("baseline", |a| a
        .required_unless_present("a")
        .help("Name of this comparison in the reports and the history (no baseline file is read) [default: ab]")))]
    #[command(
        mut_arg("command", |a| a.hide(true)),
        mut_arg("command_string", |a| a.hide(true)),
        mut_arg("replay", |a| a.hide(true)),
        mut_arg("suite_replay", |a| a.hide(true)),
        mut_arg("pid", |a| a.hide(true)),
        mut_arg("multi_node", |a| a.hide(true)),
        mut_arg("confirm", |a| a.hide(true)),
        mut_arg("max_reruns", |a| a.help("Rounds found DISTURBED (something outside the benchmarks' process trees acted on them) are dropped and run again at most N times before exit 3 [default: 2]")),
        mut_arg("accept", |a| a.hide(true)),
        mut_arg("accept_labels", |a| a.hide(true)),
        mut_arg("baseline_dir", |a| a.hide(true)),
        mut_arg("suite", |a| a.help("Compare A and B of every [[suite.workload]] of gate.toml that has a and b (argv lists), one after another, with one report of each kind; exit code: the worst (docs/suites.md)"))
    )]
    Ab(ab::AbArgs),
    /// Compare two baselines, or a baseline and a trace, metric by metric
    Diff(diff::DiffArgs),
    /// Explain a run: utilization timeline, ranked suspects, processes
    Report(report::ReportArgs),
    /// List recorded runs, regressions and drift; --html draws a trend page
    History(history::HistoryCmdArgs),
    /// Watch a PID or the whole GPU for hours at low cost; alert when a rule holds over a window
    Watch(watch::WatchArgs),
    /// List every metric id: unit, direction, gating, what it needs (GPM, NVML), its source
    Metrics(metrics::MetricsArgs),
    /// Print shell completions (bash, zsh, fish, elvish, powershell)
    Completions(tools::CompletionsArgs),
    /// Print the man page (roff); SUBCOMMAND for one command, --out-dir for all pages
    Man(tools::ManArgs),
}

/// Run the parsed command line; returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    crate::parallel::threads_from_env().map_err(crate::error::GateError::usage)?;
    crate::trace::spill_mb_from_env().map_err(crate::error::GateError::usage)?;
    let mut cli = cli;
    find_config(&mut cli.command);
    match cli.command {
        Command::Record(a) => record::run(a),
        Command::Doctor(a) => doctor::run(a),
        // A suite runs the one-workload commands once per workload.
        Command::Capture(a) if a.suite => suite::capture(&a),
        Command::Capture(a) => capture::run(a),
        Command::Check(a) if a.suite => suite::check(&a),
        Command::Check(a) => check::run(a),
        Command::Ab(a) => ab::run(a),
        Command::Diff(a) => diff::run(a),
        Command::Report(a) => report::run(a),
        Command::History(a) => history::run(a),
        Command::Watch(a) => watch::run(a),
        Command::Metrics(a) => metrics::run(a),
        Command::Completions(a) => tools::completions(a, Cli::command()),
        Command::Man(a) => tools::man(a, Cli::command()),
    }
}

/// `gate.toml` and `baselines/` from anywhere in the repository
/// (`config::locate`), for every command that reads them.
fn find_config(command: &mut Command) {
    use crate::config::locate::use_found;
    match command {
        Command::Capture(a) => use_found(&mut a.config, Some(&mut a.baseline_dir)),
        Command::Check(a) => use_found(&mut a.config, Some(&mut a.baseline_dir)),
        Command::Diff(a) => use_found(&mut a.config, Some(&mut a.baseline_dir)),
        Command::Report(a) => use_found(&mut a.config, None),
        Command::History(a) => use_found(&mut a.config, None),
        Command::Watch(a) => use_found(&mut a.config, None),
        Command::Metrics(a) => use_found(&mut a.config, None),
        _ => {}
    }
}

// Completions and man pages are tested here, with the real CLI: `tools`
// itself never imports `cli` (no import cycle).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::tools::{man_command, render_page, write_pages, BIN_NAME};
    use clap_complete::Shell;

    fn render_completions(shell: Shell) -> String {
        let mut cmd = Cli::command();
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut cmd, BIN_NAME, &mut buf);
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn every_shell_gets_a_script_naming_the_subcommands() {
        for shell in [
            Shell::Bash,
            Shell::Zsh,
            Shell::Fish,
            Shell::Elvish,
            Shell::PowerShell,
        ] {
            let script = render_completions(shell);
            for sub in ["capture", "check", "report", "completions"] {
                assert!(script.contains(sub), "{shell:?} completion lacks '{sub}'");
            }
        }
        // bash registers the function for the binary name users type.
        assert!(render_completions(Shell::Bash).contains("complete -F _gate"));
    }

    #[test]
    fn man_page_is_roff_and_deterministic() {
        let render =
            || String::from_utf8(render_page(man_command(Cli::command())).unwrap()).unwrap();
        let page = render();
        assert!(page.starts_with(".ie"), "{}", &page[..40.min(page.len())]);
        assert!(page.contains(".TH gate 1"));
        assert!(
            page.contains("Exit codes"),
            "long_about must reach the page"
        );
        assert_eq!(page, render(), "no date or other varying content");
    }

    #[test]
    fn out_dir_gets_one_page_per_subcommand() {
        let dir = tempfile::tempdir().unwrap();
        let written = write_pages(man_command(Cli::command()), dir.path()).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert!(names.contains(&"gate.1".to_string()), "{names:?}");
        assert!(names.contains(&"gate-check.1".to_string()), "{names:?}");
        assert!(!names.iter().any(|n| n == "gate-help.1"), "{names:?}");
        let check = std::fs::read_to_string(dir.path().join("gate-check.1")).unwrap();
        let title = check.lines().find(|l| l.starts_with(".TH")).unwrap_or("");
        assert!(
            title.contains(&format!("\"gate {}\"", crate::GATE_VERSION)),
            "subcommand pages carry gate's version as source: {title}"
        );
    }
}
