//! Reporters, organised by the two things they render, one trait each:
//! - `check`: a check's verdict (`gate::CheckReport`) through
//!   `check::Reporter`: terminal text, Markdown, JSON, JUnit XML,
//!   OpenMetrics, the PR comment, and GitHub annotations;
//! - `run`: a run's explanation (`run::RunReport`, what `gate report`
//!   shows) through `run::RunReporter`: text, Markdown, JSON and HTML with
//!   inline SVG.
//!
//! Reporters are pure: they return text, the same input gives the same
//! bytes, and files, stdout and environment variables are the commands' job.

pub mod check;
pub mod finding;
pub mod run;
