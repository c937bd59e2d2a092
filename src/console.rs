//! What gate writes to a terminal besides its reports, and the one decision
//! about colour.
//!
//! - Colour: [`color_enabled`] is the only place that decides, as anstream
//!   (cargo's, clap's) does, the environment read by anstyle-query:
//!   `--color always|never` wins; with `auto`, a non-empty `NO_COLOR`
//!   turns colour off (no-color.org: an empty one is unset), then
//!   `CLICOLOR_FORCE` set to anything but empty or `0` turns it on,
//!   `CLICOLOR=0` turns it off (bixense.com/clicolors), and otherwise the
//!   stream must be a terminal whose `TERM` is set and not `dumb` (or
//!   `CLICOLOR` set, or a CI).
//! - The live status that `gate record` draws on a terminal's stderr
//!   ([`start_live`], [`show_live`]: an indicatif bar with how far and how
//!   long is left when the window is known) and the benchmark's own stdout
//!   lines that gate passes through ([`echo_line`]) share one lock: a
//!   passed-through line suspends the bar, so the two never share a row.
//!   In a log (stderr not a terminal) `record` prints plain progress lines
//!   instead ([`progress_words`]).
//! - Where the benchmark's stdout goes ([`Echo`]): to gate's stdout when
//!   gate prints nothing else there (`gate record`), to stderr whenever
//!   stdout carries a report (`check`, `capture`, `report`), so that
//!   `gate check --format json -- CMD | jq` sees JSON only.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

/// `--color` as the user chose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// What the environment says about colour (see the module's words).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ColorEnv {
    /// `NO_COLOR` set and not empty.
    pub no_color: bool,
    /// `CLICOLOR_FORCE` set to anything but empty or `0`.
    pub clicolor_force: bool,
    /// `CLICOLOR`: `Some(false)` for `0`, `Some(true)` for any other value.
    pub clicolor: Option<bool>,
    /// `TERM` set and not `dumb`.
    pub term_supports_color: bool,
    /// `CI` set (CI logs show colour though stdout is a pipe or a pty).
    pub is_ci: bool,
}

impl ColorEnv {
    /// This process's environment, read by anstyle-query as anstream reads
    /// it. anstyle-query takes `CLICOLOR_FORCE=0` as forcing; the standard
    /// (bixense.com/clicolors) says "other than 0", so `0` is refused here.
    pub(crate) fn of_process() -> ColorEnv {
        ColorEnv {
            no_color: anstyle_query::no_color(),
            clicolor_force: anstyle_query::clicolor_force()
                && std::env::var_os("CLICOLOR_FORCE").is_none_or(|v| v != "0"),
            clicolor: anstyle_query::clicolor(),
            term_supports_color: anstyle_query::term_supports_color(),
            is_ci: anstyle_query::is_ci(),
        }
    }
}

/// Whether to colour a stream, given the choice, whether the stream is a
/// terminal, and the environment (a value, so tests need not touch the
/// process environment). The order is anstream's `AutoStream::choice`.
pub(crate) fn color_enabled(choice: ColorChoice, is_terminal: bool, env: ColorEnv) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            if env.no_color {
                false
            } else if env.clicolor_force {
                true
            } else if env.clicolor == Some(false) {
                false
            } else {
                is_terminal && (env.term_supports_color || env.clicolor == Some(true) || env.is_ci)
            }
        }
    }
}

/// Colour for what goes to stdout.
pub(crate) fn stdout_color(choice: ColorChoice) -> bool {
    color_enabled(
        choice,
        std::io::stdout().is_terminal(),
        ColorEnv::of_process(),
    )
}

/// Where the benchmark's own stdout lines are passed through to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Echo {
    /// gate's stdout: only when gate prints no report there (`gate record`).
    Stdout,
    /// gate's stderr: whenever stdout carries a report or data.
    Stderr,
}

/// The live status of a recording on a terminal's stderr (indicatif): a
/// bar with how far and how long is left when the window is known, else
/// one line with the elapsed time; None when none is shown. Passed-through
/// lines of the benchmark suspend it (`echo_line`), so the two never share
/// a row.
static LIVE: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);

fn live() -> std::sync::MutexGuard<'static, Option<indicatif::ProgressBar>> {
    // A panic while holding the lock leaves only a handle behind: keep going.
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Ends the live status when dropped, on every path out of a recording
/// (an error included), so what is printed next starts on its own row.
pub(crate) struct LiveGuard;

impl Drop for LiveGuard {
    fn drop(&mut self) {
        end_live();
    }
}

/// Start the live status (callers only do this when stderr is a
/// terminal): a bar over `window` (warm-up and `--duration`) when known.
pub(crate) fn start_live(window: Option<std::time::Duration>) -> LiveGuard {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    let target = ProgressDrawTarget::stderr_with_hz(4);
    let bar = match window {
        Some(w) => {
            let bar = ProgressBar::with_draw_target(Some(w.as_millis() as u64), target);
            if let Ok(style) =
                ProgressStyle::with_template("gate: [{bar:20}] {percent:>3} % {wide_msg}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        }
        None => {
            let bar = ProgressBar::with_draw_target(None, target);
            if let Ok(style) = ProgressStyle::with_template("gate: {wide_msg}") {
                bar.set_style(style);
            }
            bar
        }
    };
    *live() = Some(bar);
    LiveGuard
}

/// Update the live status: how far (`elapsed`) and what it says.
pub(crate) fn show_live(elapsed: std::time::Duration, message: &str) {
    if let Some(bar) = live().as_ref() {
        bar.set_position(elapsed.as_millis() as u64);
        bar.set_message(message.to_string());
    }
}

/// Leave the live status on screen as the last word and move to a new row.
pub(crate) fn end_live() {
    if let Some(bar) = live().take() {
        bar.abandon();
        // The bar stays as the last word; what follows starts a new row.
        if !bar.is_hidden() {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// Write a command's result (a report, JSON, a listing) to stdout. A reader
/// that went away (`gate check ... | head -1`) is its own choice, not an
/// error: the rest is dropped quietly, and the command goes on to write its
/// files and return its exit code (`print!` panicked there: exit 101, and
/// `$GITHUB_OUTPUT` and the step summary were lost). Every command prints
/// its results through this (`clippy::print_stdout` is denied elsewhere).
pub fn out(text: &str) {
    out_with(|w| w.write_all(text.as_bytes()));
}

/// `out` of what `write` writes, as it writes it (a document too large to
/// hold whole: `gate report --format json` of many nodes). The same
/// handling of a reader that went away.
pub(crate) fn out_with(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static CLOSED: AtomicBool = AtomicBool::new(false);
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = write(&mut stdout).and_then(|()| stdout.flush()) {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            drop(stdout);
            let _ = writeln!(
                std::io::stderr(),
                "gate: warning: cannot write to stdout: {e}"
            );
        }
    }
}

/// `eprintln!` that survives a stderr whose reader went away
/// (`gate check ... 2>&1 | head -1`): `eprintln!` panics there (exit 101,
/// the exit code and the CI files lost). Diagnostics are best effort.
#[macro_export]
macro_rules! gate_eprintln {
    ($($arg:tt)*) => {
        $crate::console::err(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that survives a closed stderr pipe (see `gate_eprintln!`).
#[macro_export]
macro_rules! gate_eprint {
    ($($arg:tt)*) => {
        $crate::console::err(format_args!($($arg)*))
    };
}

/// Write to stderr, ignoring a failure (see `gate_eprintln!`); held
/// instead while this thread is inside `hold_err`.
pub fn err(args: std::fmt::Arguments) {
    let held = HELD_ERR.with(|h| {
        let mut h = h.borrow_mut();
        let text = h.as_mut()?;
        let _ = std::fmt::Write::write_fmt(text, args);
        Some(())
    });
    if held.is_some() {
        return;
    }
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_fmt(args);
    let _ = stderr.flush();
}

thread_local! {
    /// What `err` holds on this thread (`hold_err`), None when it writes.
    static HELD_ERR: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// `f`, with what this thread's diagnostics (`gate_eprintln!`) say held
/// rather than written: it comes back beside the result, for the caller to
/// write in its own order (`err_text`). A suite judging its replayed
/// workloads at once writes each one's words in the suite's order, the
/// same bytes as one after another. Nested holds keep their own text.
pub(crate) fn hold_err<R>(f: impl FnOnce() -> R) -> (R, String) {
    let outer = HELD_ERR.with(|h| h.borrow_mut().replace(String::new()));
    let r = f();
    let text = HELD_ERR.with(|h| std::mem::replace(&mut *h.borrow_mut(), outer));
    (r, text.unwrap_or_default())
}

/// Write text `hold_err` held (to stderr, or to the hold around this one).
pub(crate) fn err_text(text: &str) {
    if !text.is_empty() {
        err(format_args!("{text}"));
    }
}

/// "gate: wrote WHAT 'PATH'" on stderr, for every file a command writes
/// (stdout may carry a report or JSON, so never there).
pub fn wrote(what: &str, path: &std::path::Path) {
    crate::gate_eprintln!(
        "gate: wrote {what} '{}'",
        crate::escape::terminal(&path.display().to_string())
    );
}

/// The width to wrap text to on stdout: the terminal's columns, or None
/// in a pipe or a file (text stays as it is, one line per item, for grep).
pub(crate) fn stdout_width() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    terminal_size::terminal_size_of(std::io::stdout())
        .map(|(w, _)| usize::from(w.0))
        .filter(|w| *w >= 40)
}

/// `text` wrapped to `width` (None: as it is), continuation lines
/// indented by `indent` spaces; each line ends with a newline.
pub(crate) fn wrap(text: &str, width: Option<usize>, indent: usize) -> String {
    let Some(width) = width else {
        return format!("{text}\n");
    };
    let pad = " ".repeat(indent);
    // Break at spaces only: a date, a path or a metric id stays whole.
    let options = textwrap::Options::new(width)
        .subsequent_indent(&pad)
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    textwrap::wrap(text, options)
        .iter()
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Rows as an aligned table: each column as wide as its widest cell, two
/// spaces between columns, trailing spaces trimmed.
pub fn aligned(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|r| {
            let line: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{c:<w$}", w = width[i]))
                .collect();
            format!("{}\n", line.join("  ").trim_end())
        })
        .collect()
}

/// How far a recording is through its known window (warm-up and
/// `--duration`) and about how long is left: "1m 12s of 3m, ~1m 48s left".
/// Past the window (a `--warmup-until` that held the warm-up open, the
/// stop's grace time): "finishing".
pub fn progress_words(elapsed: std::time::Duration, total: std::time::Duration) -> String {
    let secs = |d: std::time::Duration| {
        humantime::format_duration(std::time::Duration::from_secs(d.as_secs())).to_string()
    };
    match total.checked_sub(elapsed) {
        Some(left) if !left.is_zero() => format!(
            "{} of {}, ~{} left",
            secs(elapsed),
            secs(total),
            secs(left + std::time::Duration::from_millis(999))
        ),
        _ => format!("{} of {}, finishing", secs(elapsed), secs(total)),
    }
}

/// How often a CI log (stderr not a terminal) gets a progress line: every
/// tenth of the window, at least 10 s apart.
pub(crate) fn plain_progress_every(total: std::time::Duration) -> std::time::Duration {
    (total / 10).max(std::time::Duration::from_secs(10))
}

/// `out` of one formatted line.
pub(crate) fn outln(args: std::fmt::Arguments) {
    out(&format!("{args}\n"));
}

/// Pass one line of the benchmark's output through (bytes as the benchmark
/// wrote them, newline included), clearing the live line first so they do
/// not share a row; the next tick redraws the live line below it.
pub(crate) fn echo_line(to: Echo, line: &[u8]) {
    // A closed pipe downstream (`gate record ... | head`) must not stop the
    // benchmark: write errors are ignored, the trace keeps every line.
    let write = || match to {
        Echo::Stdout => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(line);
            let _ = out.flush();
        }
        Echo::Stderr => {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(line);
            let _ = err.flush();
        }
    };
    match live().as_ref() {
        // The bar is cleared, the line written, the bar drawn again below.
        Some(bar) => bar.suspend(write),
        None => write(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A terminal with `TERM=xterm-256color` and nothing else set.
    fn tty_env() -> ColorEnv {
        ColorEnv {
            term_supports_color: true,
            ..ColorEnv::default()
        }
    }

    #[test]
    fn flag_wins_over_environment() {
        let no_color = ColorEnv {
            no_color: true,
            ..tty_env()
        };
        assert!(color_enabled(ColorChoice::Always, false, no_color));
        let forced = ColorEnv {
            clicolor_force: true,
            ..tty_env()
        };
        assert!(!color_enabled(ColorChoice::Never, true, forced));
    }

    #[test]
    fn no_color_beats_force_and_clicolor_zero_beats_a_terminal() {
        assert!(color_enabled(ColorChoice::Auto, true, tty_env()));
        let no_color = ColorEnv {
            no_color: true,
            clicolor_force: true,
            ..tty_env()
        };
        assert!(!color_enabled(ColorChoice::Auto, true, no_color));
        let clicolor_0 = ColorEnv {
            clicolor: Some(false),
            ..tty_env()
        };
        assert!(!color_enabled(ColorChoice::Auto, true, clicolor_0));
        // CLICOLOR_FORCE beats CLICOLOR=0 (bixense.com/clicolors).
        let both = ColorEnv {
            clicolor_force: true,
            ..clicolor_0
        };
        assert!(color_enabled(ColorChoice::Auto, false, both));
    }

    #[test]
    fn tables_align_and_text_wraps_only_on_a_terminal() {
        let rows = vec![
            vec!["workload".to_string(), "verdict".to_string()],
            vec!["train".to_string(), "regression".to_string()],
        ];
        assert_eq!(aligned(&rows), "workload  verdict\ntrain     regression\n");
        let long = "word ".repeat(30);
        assert_eq!(wrap(long.trim(), None, 2).lines().count(), 1);
        let wrapped = wrap(long.trim(), Some(40), 2);
        assert!(
            wrapped.lines().all(|l| l.chars().count() <= 40),
            "{wrapped}"
        );
        assert!(
            wrapped.lines().skip(1).all(|l| l.starts_with("  ")),
            "{wrapped}"
        );
    }

    #[test]
    fn progress_says_how_far_and_how_long_is_left() {
        use std::time::Duration;
        let s = Duration::from_secs;
        assert_eq!(progress_words(s(72), s(180)), "1m 12s of 3m, ~1m 48s left");
        assert_eq!(progress_words(s(190), s(180)), "3m 10s of 3m, finishing");
        assert_eq!(plain_progress_every(s(20)), s(10));
        assert_eq!(plain_progress_every(s(3600)), s(360));
    }

    #[test]
    fn a_pipe_is_coloured_only_when_forced() {
        assert!(!color_enabled(ColorChoice::Auto, false, tty_env()));
        let forced = ColorEnv {
            clicolor_force: true,
            ..ColorEnv::default()
        };
        assert!(color_enabled(ColorChoice::Auto, false, forced));
    }

    #[test]
    fn a_terminal_needs_a_term_that_is_not_dumb_or_clicolor_or_ci() {
        // TERM unset or dumb: no colour, unless CLICOLOR says yes or a CI.
        assert!(!color_enabled(ColorChoice::Auto, true, ColorEnv::default()));
        let clicolor_1 = ColorEnv {
            clicolor: Some(true),
            ..ColorEnv::default()
        };
        assert!(color_enabled(ColorChoice::Auto, true, clicolor_1));
        let ci = ColorEnv {
            is_ci: true,
            ..ColorEnv::default()
        };
        assert!(color_enabled(ColorChoice::Auto, true, ci));
        assert!(!color_enabled(ColorChoice::Auto, false, ci));
    }
}
