//! One file per subcommand. The only layer that sees both CLI types and
//! domain types; each `run` returns the process exit code.

pub mod capture;
pub mod check;
pub mod diff;
pub mod doctor;
pub mod history;
pub mod measure;
pub mod record;
pub mod report;
pub mod tools;

use crate::cli::{Cli, Command};

pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Record(a) => record::run(a),
        Command::Doctor(a) => doctor::run(a),
        Command::Capture(a) => capture::run(a),
        Command::Check(a) => check::run(a),
        Command::Diff(a) => diff::run(a),
        Command::Report(a) => report::run(a),
        Command::History(a) => history::run(a),
        Command::Completions(a) => tools::completions(a),
        Command::Man(a) => tools::man(a),
    }
}
