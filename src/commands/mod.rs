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
