//! The verdict module's settings: `[verdict]` (what an inconclusive run
//! exits with, how many reruns a live check may make) and `[compare]` (what
//! must match between a run and its baseline) of gate.toml, and `Policy`,
//! one metric's effective gating policy that `config::Config::policy`
//! resolves from the file and the command line and `decide::judge` applies.

use crate::metrics::{Direction, Statistic};
use serde::Deserialize;

/// The effective gating policy of one metric after all overrides.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub id: String,
    pub unit: String,
    pub direction: Direction,
    pub statistic: Statistic,
    /// Fraction of the baseline value.
    pub relative: f64,
    /// In the metric's unit.
    pub absolute: f64,
    /// Judged (can fail the run) rather than only reported.
    pub gated: bool,
    /// Numbers of the benchmark itself (wall time, user metrics): listed first.
    pub(crate) first_class: bool,
    /// The user set this metric's floor (gate.toml, `--threshold`): it then
    /// decides alone where no noise estimate exists (`gate::decide`).
    pub(crate) explicit: bool,
}

/// Reruns a live `check` makes by default when the decisive metric moved
/// the bad way inside the noise (`--max-reruns`, `[verdict] max_reruns`).
pub(crate) const DEFAULT_MAX_RERUNS: usize = 2;

/// What an inconclusive run (a bad move the noise left open) exits with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InconclusiveExit {
    /// Exit 4 (`exit_code::INCONCLUSIVE`): not green.
    #[default]
    Fail,
    /// Exit 0, still reported as inconclusive.
    Pass,
}

/// Settings of `[verdict]` in gate.toml.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictConfig {
    #[serde(default)]
    pub inconclusive: InconclusiveExit,
    /// Reruns of a live check (default `DEFAULT_MAX_RERUNS`).
    pub(crate) max_reruns: Option<usize>,
}

/// Settings of `[compare]` in gate.toml.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareConfig {
    /// A run of another benchmark (program, script, or a tag of `tags`)
    /// than the baseline's is only warned about, not refused.
    #[serde(default)]
    pub allow_command_change: bool,
    /// Tags that name the benchmark: a different value is another
    /// benchmark (`gate::comparable`).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Other arguments or tags than the baseline's: warn (default) or refuse.
    #[serde(default)]
    pub arguments: ArgumentsPolicy,
    /// Flags (with their value: `--seed 3`, `--seed=3`) and tags that
    /// differ between runs of one benchmark by design (a seed, a run id):
    /// never a difference (`gate::comparable::without_varying`).
    #[serde(default)]
    pub vary: Vec<String>,
}

/// `[compare] arguments`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgumentsPolicy {
    /// Judged, with a warning naming the differences (seeds, paths).
    #[default]
    Warn,
    /// Not comparable, like another benchmark.
    Refuse,
}
