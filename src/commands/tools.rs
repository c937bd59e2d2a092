//! `gate completions` and `gate man`: the shell-facing extras for local use.
//!
//! Both are generated from the same clap definition as the parser (the
//! caller, `cli::run`, passes `Cli::command()` in), so they cannot drift
//! from the real flags.
//! Output is deterministic (no date in the man page), which lets packagers
//! commit the generated files and diff them on upgrade.

use crate::error::GateError;
use clap::Args;
use clap_complete::Shell;
use std::io::Write;
use std::path::PathBuf;

/// The binary name completions are registered for. Completion scripts key on
/// the name the user types, not on the package name (`gpugate`).
pub(crate) const BIN_NAME: &str = "gate";

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
    pub(crate) subcommand: Option<String>,

    /// Write gate.1 and one gate-<subcommand>.1 per subcommand into DIR instead of printing
    #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
    pub out_dir: Option<PathBuf>,
}

/// `gate completions SHELL`: print the completion script of `cmd` (the
/// whole CLI) to stdout.
pub(crate) fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<i32> {
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
pub(crate) fn man_command(cli: clap::Command) -> clap::Command {
    let mut cmd = cli.disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// One page per command, every page stamped with the same source
/// ("gate 0.1.0") rather than clap_mangen's default of the subcommand name.
fn man_page(cmd: clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd).source(format!("gate {}", crate::GATE_VERSION))
}

pub(crate) fn render_page(cmd: clap::Command) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    man_page(cmd).render(&mut buf)?;
    Ok(buf)
}

/// `gate man [SUBCOMMAND] [--out-dir DIR]`: roff man page(s) of `cli`
/// (the whole CLI).
pub fn man(args: ManArgs, cli: clap::Command) -> anyhow::Result<i32> {
    let cmd = man_command(cli);
    if let Some(dir) = args.out_dir {
        let written = write_pages(cmd, &dir).map_err(|e| {
            GateError::usage(format!(
                "cannot write man pages into '{}': {e}; pass a writable --out-dir",
                dir.display()
            ))
        })?;
        crate::gate_eprintln!(
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
pub(crate) fn write_pages(
    cmd: clap::Command,
    dir: &std::path::Path,
) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    let subs: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    for page in std::iter::once(cmd).chain(subs) {
        let man = man_page(page);
        let mut roff = Vec::new();
        man.render(&mut roff)?;
        // Whole pages, never over a FIFO or a device someone left there.
        let path = dir.join(man.get_filename());
        crate::files::write_output(&path, "the man page", &roff, &[])?;
        written.push(path);
    }
    Ok(written)
}
