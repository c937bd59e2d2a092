//! Reporters, organised by the two things they render, one trait each:
//! - `check`: a check's verdict (`gate::CheckReport`) through
//!   `check::Reporter`: terminal text, Markdown, JSON, JUnit XML,
//!   OpenMetrics, the PR comment, and GitHub annotations;
//! - `run`: a run's explanation (`run::RunReport`, what `gate report`
//!   shows) through `run::RunReporter`: text, Markdown, JSON and HTML with
//!   inline SVG.
//!
//! A reporter's render is a function of its input: the same input gives the
//! same bytes (no clock, no host lookups, no environment variables), and
//! where the bytes go (files, stdout) is the commands' job; `run::json`
//! can also write them as it makes them, to a writer the command hands it.
//! What the renders need beyond the report came with it: the check page's
//! series are the runs' own, taken at derive (`summary::RunSeries`); no
//! reporter of a check opens a trace.

pub mod check;
pub mod finding;
pub mod run;
