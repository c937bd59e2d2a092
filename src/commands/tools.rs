//! `gate completions` and `gate man`: the shell-facing extras for local use.
//!
//! Both are generated from the same clap definition as the parser
//! (`crate::cli::Cli::command()`), so they cannot drift from the real flags.
//! Output is deterministic (no date in the man page), which lets packagers
//! commit the generated files and diff them on upgrade.

use crate::error::GateError;
use clap::{Args, CommandFactory};
use clap_complete::Shell;
use std::io::Write;
use std::path::PathBuf;

/// The binary name completions are registered for. Completion scripts key on
/// the name the user types, not on the package name (`gpugate`).
const BIN_NAME: &str = "gate";

#[derive(Debug, Args)]
#[command(after_help = "Install, for example:\n  \
bash: gate completions bash > ~/.local/share/bash-completion/completions/gate\n  \
zsh:  gate completions zsh > \"${fpath[1]}/_gate\"\n  \
fish: gate completions fish > ~/.config/fish/completions/gate.fish")]
pub struct CompletionsArgs {
    /// Shell to generate the completion script for
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

#[derive(Debug, Args)]
#[command(after_help = "Read it now:  gate man | man -l -\n\
One page per subcommand:  gate man --out-dir /usr/local/share/man/man1")]
pub struct ManArgs {
    /// Print the page of one subcommand (e.g. 'check') instead of the top-level page
    #[arg(value_name = "SUBCOMMAND")]
    pub subcommand: Option<String>,

    /// Write gate.1 and one gate-<subcommand>.1 per subcommand into DIR instead of printing
    #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
    pub out_dir: Option<PathBuf>,
}

/// `gate completions SHELL`: print the completion script to stdout.
pub fn completions(args: CompletionsArgs) -> anyhow::Result<i32> {
    let mut cmd = crate::cli::Cli::command();
    // Render into memory first: clap_complete panics on a write error, and
    // `gate completions bash | head` must not print a panic.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, BIN_NAME, &mut script);
    write_stdout(&script)
}

/// Write a generated document to stdout. A closed pipe (`| head`) is the
/// reader's choice, not an error.
fn write_stdout(bytes: &[u8]) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(crate::exit_code::PASS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(crate::exit_code::PASS),
        Err(e) => Err(GateError::usage(format!("writing to stdout: {e}")).into()),
    }
}

/// The top-level command as man pages see it: built (so subcommands carry
/// their `gate-check` display names) and without clap's `help` subcommand.
fn man_command() -> clap::Command {
    let mut cmd = crate::cli::Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// One page per command, every page stamped with the same source
/// ("gate 0.1.0") rather than clap_mangen's default of the subcommand name.
fn man_page(cmd: clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd).source(format!("gate {}", crate::GATE_VERSION))
}

fn render_page(cmd: clap::Command) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    man_page(cmd).render(&mut buf)?;
    Ok(buf)
}

/// `gate man [SUBCOMMAND] [--out-dir DIR]`: roff man page(s).
pub fn man(args: ManArgs) -> anyhow::Result<i32> {
    let cmd = man_command();
    if let Some(dir) = args.out_dir {
        let written = write_pages(cmd, &dir).map_err(|e| {
            GateError::usage(format!(
                "cannot write man pages into '{}': {e}; pass a writable --out-dir",
                dir.display()
            ))
        })?;
        eprintln!(
            "gate: wrote {} man pages to '{}'",
            written.len(),
            dir.display()
        );
        return Ok(crate::exit_code::PASS);
    }
    let page = match args.subcommand {
        None => cmd,
        Some(name) => match cmd.find_subcommand(&name) {
            Some(sub) => sub.clone(),
            None => {
                let known: Vec<&str> = cmd
                    .get_subcommands()
                    .filter(|s| !s.is_hide_set())
                    .map(|s| s.get_name())
                    .collect();
                return Err(GateError::usage(format!(
                    "no subcommand '{name}'; choose one of: {}",
                    known.join(", ")
                ))
                .into());
            }
        },
    };
    write_stdout(&render_page(page)?)
}

/// Write `gate.1` and `gate-<sub>.1` for every visible subcommand into `dir`;
/// returns the files written.
fn write_pages(cmd: clap::Command, dir: &std::path::Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    let subs: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    for page in std::iter::once(cmd).chain(subs) {
        let man = man_page(page);
        written.push(man.generate_to(dir)?);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render_completions(shell: Shell) -> String {
        let mut cmd = crate::cli::Cli::command();
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
        let render = || String::from_utf8(render_page(man_command()).unwrap()).unwrap();
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
        let written = write_pages(man_command(), dir.path()).unwrap();
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
