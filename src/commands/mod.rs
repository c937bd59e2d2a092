//! One file per subcommand: its flags (clap) and its `run`, which turns
//! them into domain types, calls the library, writes files and stdout, and
//! returns the process exit code. The only layer that sees both CLI types
//! and domain types; `cli::run` dispatches here.

pub mod capture;
pub mod check;
pub mod diff;
pub mod doctor;
pub mod history;
pub mod measure;
pub mod record;
pub mod report;
pub mod tools;

/// `--color WHEN` for the commands that colour their terminal output; the
/// decision itself is `console::color_enabled`, the one place for it.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ColorArgs {
    /// Colour the terminal output: auto (a terminal; NO_COLOR set to anything, even empty,
    /// turns it off and CLICOLOR_FORCE=1 forces it on), always, never
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
