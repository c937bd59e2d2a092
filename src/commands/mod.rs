//! One file per subcommand: its flags (clap) and its `run`, which builds
//! the command's plan from them (domain values, every validation before
//! anything runs: docs/architecture.md lists each), executes it, writes
//! files through the one writer (`output::write_pages`) and stdout, and
//! returns the process exit code. The only layer that sees both CLI types
//! and domain types; `cli::run` dispatches here.

pub mod ab;
pub mod capture;
pub mod check;
pub mod diff;
pub mod doctor;
pub mod github;
pub mod history;
pub mod measure;
pub mod metrics;
mod output;
pub mod record;
pub mod report;
pub mod suite;
pub mod tools;
pub mod watch;

/// `--color WHEN` for the commands that colour their terminal output; the
/// decision itself is `console::color_enabled`, the one place for it.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ColorArgs {
    /// Colour the terminal output: auto (a terminal; a non-empty NO_COLOR turns it off,
    /// CLICOLOR_FORCE=1 forces it on, CLICOLOR=0 turns it off), always, never
    #[arg(long, value_enum, default_value = "auto", value_name = "WHEN")]
    pub color: ColorWhen,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorArgs {
    /// Whether stdout gets colour.
    pub fn stdout(self) -> bool {
        crate::console::stdout_color(match self.color {
            ColorWhen::Auto => crate::console::ColorChoice::Auto,
            ColorWhen::Always => crate::console::ColorChoice::Always,
            ColorWhen::Never => crate::console::ColorChoice::Never,
        })
    }
}

// Shared by several subcommands (kept here, not in one of them, so that
// subcommands never import each other).

/// `--format` of check, diff and history: what goes to stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
}

/// `--commit`, else `$CI_COMMIT_SHA` (GitLab), `$GITHUB_SHA`, else
/// `git rev-parse HEAD` when the current directory is in a repository.
pub(crate) fn detect_commit(flag: Option<&str>) -> Option<String> {
    let clean = |s: String| {
        let s = s.trim().to_string();
        (!s.is_empty()).then_some(s)
    };
    if let Some(c) = flag.and_then(|f| clean(f.to_string())) {
        return Some(c);
    }
    for var in ["CI_COMMIT_SHA", "GITHUB_SHA"] {
        if let Some(c) = std::env::var(var).ok().and_then(clean) {
            return Some(c);
        }
    }
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout).ok().and_then(clean)
}
