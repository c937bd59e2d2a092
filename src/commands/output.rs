//! The one writer of every page a command writes (`Pages`, `write_pages`:
//! check, suite, report, history and the error path), and where a check's
//! results go, for a single check and a suite alike: the report files
//! asked for (`Output`, one per `--junit`, `--markdown`, ... flag), stdout
//! (text or JSON), and what GitHub Actions reads (annotations, the step
//! summary, `verdict=`), with the `--html-url` link in the Markdown report,
//! the step summary and the PR comment. What each document says is the
//! reporters' (`report::check`, `report::check::suite` for a suite).

use super::Format;
use crate::error::GateError;
use crate::files::Inputs;
use crate::gate::CheckReport;
use crate::report::check::{self as report, suite, Reporter};
use std::path::Path;

/// A report file a check can write, one per flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    Junit,
    Markdown,
    Json,
    OpenMetrics,
    PrComment,
    Bmf,
    Html,
}

impl Output {
    /// The flag that asks for it (and names it in messages).
    pub fn flag(self) -> &'static str {
        match self {
            Output::Junit => "--junit",
            Output::Markdown => "--markdown",
            Output::Json => "--json",
            Output::OpenMetrics => "--openmetrics",
            Output::PrComment => "--pr-comment",
            Output::Bmf => "--bmf",
            Output::Html => "--html",
        }
    }
}

/// Where the results go: the report files asked for (in the order they are
/// written), the `--html-url` link, and stdout's format and color.
pub(crate) struct Outputs<'a> {
    pub files: Vec<(Output, &'a Path)>,
    pub(crate) html_url: Option<&'a str>,
    pub format: Format,
    pub color: bool,
}

/// What the writer writes: one check's report, or a suite's.
pub(crate) trait Document {
    /// The report file `output` (the `--html-url` link added by `write`).
    fn render(&self, output: Output) -> String;
    /// What stdout shows.
    fn stdout(&self, format: Format, color: bool) -> String;
    /// The GitHub annotations (capped and escaped by `github`).
    fn annotations(&self) -> Vec<report::github::Item>;
    /// `verdict=` for `$GITHUB_OUTPUT`.
    fn verdict(&self) -> String;
    /// `regressions=` for `$GITHUB_OUTPUT`.
    fn regressions(&self) -> usize;
}

impl Document for CheckReport {
    fn render(&self, output: Output) -> String {
        match output {
            Output::Junit => report::junit::Junit.render(self),
            Output::Markdown => report::markdown::Markdown.render(self),
            Output::Json => report::json::Json.render(self),
            Output::OpenMetrics => report::openmetrics::OpenMetrics.render(self),
            Output::PrComment => report::pr_comment::PrComment.render(self),
            Output::Bmf => report::bmf::Bmf.render(self),
            Output::Html => report::html::render(self, report::html::series_for(self)),
        }
    }

    fn stdout(&self, format: Format, color: bool) -> String {
        match format {
            Format::Text => {
                let width = crate::console::stdout_width();
                report::terminal::Terminal { color, width }.render(self)
            }
            Format::Json => report::json::Json.render(self),
        }
    }

    fn annotations(&self) -> Vec<report::github::Item> {
        report::github::items(self, "")
    }

    fn verdict(&self) -> String {
        self.verdict().as_str().to_string()
    }

    fn regressions(&self) -> usize {
        self.counts.regression
    }
}

/// A suite's results: every workload's outcome and the suite's exit code.
pub(crate) struct Suite<'a> {
    pub(crate) outcomes: &'a [suite::Outcome],
    pub code: i32,
}

impl Document for Suite<'_> {
    fn render(&self, output: Output) -> String {
        let (o, code) = (self.outcomes, self.code);
        match output {
            Output::Junit => suite::render_junit(o),
            Output::Markdown => suite::render_markdown(o, code),
            Output::Json => suite::render_json(o, code),
            Output::OpenMetrics => suite::render_openmetrics(o),
            Output::PrComment => suite::render_pr_comment(o, code),
            Output::Bmf => suite::render_bmf(o),
            Output::Html => suite::render_html(o, code),
        }
    }

    fn stdout(&self, format: Format, color: bool) -> String {
        match format {
            Format::Json => suite::render_json(self.outcomes, self.code),
            Format::Text => suite::render_terminal(
                self.outcomes,
                self.code,
                color,
                crate::console::stdout_width(),
            ),
        }
    }

    // Capped over the whole suite, each workload's prefixed with its name.
    fn annotations(&self) -> Vec<report::github::Item> {
        self.outcomes
            .iter()
            .flat_map(|o| match &o.result {
                Ok(r) => report::github::items(r, &format!("{}: ", o.name)),
                Err((_, m)) => vec![report::github::Item::error(
                    format!("gate: {}: {}", o.name, o.verdict()),
                    m.clone(),
                )],
            })
            .collect()
    }

    fn verdict(&self) -> String {
        suite::verdict_word(self.code).to_lowercase()
    }

    fn regressions(&self) -> usize {
        suite::Outcome::judged(self.outcomes)
            .map(|r| r.counts.regression)
            .sum()
    }
}

/// One page a command writes: the flag that asks for it, what it is (in
/// messages: "the --json report"), where it goes, and what makes its bytes
/// (called as it is written, so one page is held at a time).
pub(crate) struct Page<'a> {
    pub flag: &'static str,
    pub what: String,
    pub path: &'a Path,
    pub bytes: Box<dyn Fn() -> Vec<u8> + 'a>,
}

/// What a command's pages are: every report file its flags ask for, in
/// the order they are written (`write_pages`).
pub(crate) trait Pages {
    fn pages(&self) -> Vec<Page<'_>>;
}

/// A check's or a suite's report files: `doc` rendered for each, with the
/// `--html-url` link in the Markdown report and the PR comment.
struct CheckPages<'a> {
    to: &'a Outputs<'a>,
    doc: &'a dyn Document,
    /// Also the step summary's text, so rendered once.
    markdown: &'a str,
}

impl Pages for CheckPages<'_> {
    fn pages(&self) -> Vec<Page<'_>> {
        (self.to.files.iter())
            .map(|&(output, path)| Page {
                flag: output.flag(),
                what: format!("the {} report", output.flag()),
                path,
                bytes: Box::new(move || match output {
                    Output::Markdown => self.markdown.as_bytes().to_vec(),
                    Output::PrComment => link(
                        self.to,
                        self.doc.render(output),
                        report::html::link_pr_comment,
                    )
                    .into_bytes(),
                    _ => self.doc.render(output).into_bytes(),
                }),
            })
            .collect()
    }
}

/// `text` with the `--html-url` link added by `f`, when there is one.
fn link(to: &Outputs, text: String, f: fn(&str, &str) -> String) -> String {
    match to.html_url {
        Some(url) => f(&text, url),
        None => text,
    }
}

/// Write every requested output of `doc`, print stdout, and talk to GitHub.
pub(crate) fn write(to: &Outputs, inputs: &Inputs, doc: &dyn Document) -> anyhow::Result<()> {
    let markdown = link(
        to,
        doc.render(Output::Markdown),
        report::html::link_markdown,
    );
    write_pages(
        &CheckPages {
            to,
            doc,
            markdown: &markdown,
        },
        inputs,
    )?;
    crate::console::out(&doc.stdout(to.format, to.color));
    let annotations = super::github::annotation_lines(&doc.annotations());
    super::github::print_annotations(&annotations, to.format == Format::Json);
    super::github::finish(
        inputs,
        &super::github::Step {
            markdown: &markdown,
            verdict: &doc.verdict(),
            regressions: doc.regressions(),
        },
    );
    Ok(())
}

/// Write every page of `pages`, in order, never over one of `inputs`: the
/// first that fails stops the command (`write_page`).
pub(crate) fn write_pages(pages: &dyn Pages, inputs: &Inputs) -> Result<(), GateError> {
    pages
        .pages()
        .iter()
        .try_for_each(|page| write_page(inputs, page))
}

/// Write one page whole (temporary + rename; see `files`), its missing
/// folder created first (the CI templates keep the PR comment in a folder
/// of its own). A failure names the flag and the path: exit 3 when the
/// machine failed (disk full, I/O error), else 2 (a path that cannot be
/// written is the command line's mistake).
pub(crate) fn write_page(inputs: &Inputs, page: &Page) -> Result<(), GateError> {
    let (flag, path) = (page.flag, page.path);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            crate::files::output_error(
                format!(
                    "cannot create '{}' for {flag}: {e}; {}",
                    dir.display(),
                    fix_for(&e)
                ),
                &e,
            )
        })?;
    }
    inputs
        .write_output(path, flag, &(page.bytes)())
        .map_err(|e| {
            crate::files::output_error(
                format!(
                    "cannot write {} '{}': {e}; {}",
                    page.what,
                    path.display(),
                    fix_for(&e)
                ),
                &e,
            )
        })?;
    crate::console::wrote(&page.what, path);
    Ok(())
}

/// What to do about a page that could not be written.
fn fix_for(e: &std::io::Error) -> &'static str {
    if crate::files::is_infra_io(e) {
        "free space there or write it elsewhere"
    } else {
        "choose a writable path"
    }
}

/// The reports of a check or suite that failed before it had results (a
/// bad gate.toml, a missing baseline, a benchmark that could not start):
/// the JUnit file and the PR comment name the problem (`name`: the
/// baseline, or "suite"), so CI shows the cause instead of a missing
/// report, and GitHub Actions reads `verdict=error`. A file that cannot be
/// written is a warning: the error itself is what the command exits with.
pub(crate) fn write_error(to: &Outputs, inputs: &Inputs, name: &str, err: &anyhow::Error) {
    let code = crate::error::exit_code_of(err);
    let message = crate::error::chain_line(err);
    let kind = if code == crate::exit_code::USAGE {
        "usage"
    } else {
        "error"
    };
    for &(output, path) in &to.files {
        // Not over an input: that refusal may be the very error.
        if inputs.find(path).is_some() {
            continue;
        }
        let text = match output {
            Output::Junit => report::junit::render_error(name, kind, &message),
            Output::PrComment => report::pr_comment::render_error(name, code, &message),
            Output::Markdown | Output::Json | Output::OpenMetrics | Output::Bmf | Output::Html => {
                continue;
            }
        };
        let page = Page {
            flag: output.flag(),
            what: format!("the {} report", output.flag()),
            path,
            bytes: Box::new(move || text.as_bytes().to_vec()),
        };
        if let Err(e) = write_page(inputs, &page) {
            crate::gate_eprintln!(
                "gate: warning: cannot write '{}': {}",
                crate::escape::terminal(&path.display().to_string()),
                crate::escape::terminal(&e.to_string())
            );
        }
    }
    super::github::output(inputs, "error", 0);
}
