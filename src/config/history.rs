//! The history's settings: `[history]` of gate.toml (where runs are
//! recorded) and `[history.drift]` (how drift is judged), with their
//! defaults and validation. A leaf of `config`, which assembles the
//! document from it; `history` reads it.

use serde::Deserialize;

/// Fewest runs a drift window may hold (`history::drift` judges no fewer).
pub(crate) const DRIFT_MIN_RUNS: usize = 5;

/// Settings of `[history]` in gate.toml.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryConfig {
    /// `sqlite:PATH`, a path, or `postgres://...` (better: `url_env`, so no
    /// password sits in the repository).
    pub url: Option<String>,
    /// Name of an environment variable holding the URL (a CI secret).
    pub url_env: Option<String>,
    /// A database that cannot be written fails the command (exit 3) instead
    /// of a warning. Same as `--history-required`.
    #[serde(default)]
    pub required: bool,
    /// Drift detection settings.
    #[serde(default)]
    pub drift: DriftConfig,
}

/// `[history.drift]` in gate.toml.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriftConfig {
    /// Judge drift at all (with history).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// A drift finding fails the run (exit 1) instead of a warning.
    #[serde(default)]
    pub fail: bool,
    /// How many recent runs (this one included) are judged together.
    #[serde(default = "default_window")]
    pub window: usize,
    /// The recent level must be worse by at least this share of the
    /// metric's tolerance.
    #[serde(default = "default_min_share")]
    pub min_share: f64,
}

fn yes() -> bool {
    true
}
fn default_window() -> usize {
    20
}
fn default_min_share() -> f64 {
    0.5
}

impl Default for DriftConfig {
    fn default() -> Self {
        DriftConfig {
            enabled: true,
            fail: false,
            window: default_window(),
            min_share: default_min_share(),
        }
    }
}

impl DriftConfig {
    /// One line naming the bad setting, or Ok.
    pub fn validate(&self) -> Result<(), String> {
        if self.window < DRIFT_MIN_RUNS || self.window > 10_000 {
            return Err(format!(
                "[history.drift] window = {}: give a number of runs between {DRIFT_MIN_RUNS} and 10000 (default 20)",
                self.window
            ));
        }
        if !(self.min_share.is_finite() && (0.0..=10.0).contains(&self.min_share)) {
            return Err(format!(
                "[history.drift] min_share = {}: give a fraction of the tolerance, e.g. 0.5",
                self.min_share
            ));
        }
        Ok(())
    }
}
