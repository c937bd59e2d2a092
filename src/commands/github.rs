//! What a check tells GitHub Actions, written by ONE writer for a single
//! check and a suite alike: annotations (at most ten a step, escaped),
//! the Markdown report appended to `$GITHUB_STEP_SUMMARY` (the file kept
//! under GitHub's 1 MiB, earlier steps' text included), and `verdict=` /
//! `regressions=` appended to `$GITHUB_OUTPUT` (the action's outputs).
//! The text itself (escaping, caps) is `report::check::github`'s.

use crate::files::Inputs;
use crate::report::check::github;
use std::path::Path;

/// The GitHub side of one finished check or suite.
pub struct Step<'a> {
    pub markdown: &'a str,
    pub verdict: &'a str,
    pub regressions: usize,
}

/// Whether this process runs as a GitHub Actions step.
pub(crate) fn in_actions() -> bool {
    std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true")
}

/// The annotation lines to print (none outside GitHub Actions).
pub(crate) fn annotation_lines(items: &[github::Item]) -> Vec<String> {
    if in_actions() {
        github::render(items)
    } else {
        Vec::new()
    }
}

/// Print `lines` where the runner reads them: stdout, or stderr when
/// stdout is a JSON document that must stay parseable.
pub(crate) fn print_annotations(lines: &[String], json_stdout: bool) {
    for a in lines {
        if json_stdout {
            crate::gate_eprintln!("{a}");
        } else {
            crate::console::out(&format!("{a}\n"));
        }
    }
}

/// Append the step summary and the outputs (each only when its variable is
/// set); a failure is a warning, never a changed verdict.
pub fn finish(inputs: &Inputs, step: &Step) {
    if let Err(e) = append_step_summary(inputs, step.markdown) {
        crate::gate_eprintln!(
            "gate: warning: cannot append to $GITHUB_STEP_SUMMARY: {}",
            crate::escape::terminal(&e.to_string())
        );
    }
    output(inputs, step.verdict, step.regressions);
}

/// Append to `$GITHUB_STEP_SUMMARY` when it is set, keeping the file under
/// GitHub's cap (what earlier steps wrote counts).
fn append_step_summary(inputs: &Inputs, markdown: &str) -> std::io::Result<bool> {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY") else {
        return Ok(false);
    };
    let path = Path::new(&path);
    inputs.check_output(path, "$GITHUB_STEP_SUMMARY")?;
    let existing = std::fs::metadata(path)
        .map(|m| m.len() as usize)
        .unwrap_or(0);
    let room = github::STEP_SUMMARY_MAX_BYTES.saturating_sub(existing);
    let text = github::cap_summary(markdown, room);
    let mut f = crate::files::open_append(path)?;
    use std::io::Write;
    f.write_all(text.as_bytes())?;
    Ok(true)
}

/// Append `verdict=` and `regressions=` to `$GITHUB_OUTPUT` when set.
pub fn output(inputs: &Inputs, verdict: &str, regressions: usize) {
    let Some(path) = std::env::var_os("GITHUB_OUTPUT") else {
        return;
    };
    let res = inputs
        .check_output(Path::new(&path), "$GITHUB_OUTPUT")
        .and_then(|()| crate::files::open_append(Path::new(&path)))
        .and_then(|mut f| {
            use std::io::Write;
            writeln!(f, "verdict={verdict}\nregressions={regressions}")
        });
    if let Err(e) = res {
        crate::gate_eprintln!(
            "gate: warning: cannot append to $GITHUB_OUTPUT: {}",
            crate::escape::terminal(&e.to_string())
        );
    }
}
