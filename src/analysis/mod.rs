//! Run analysis, the wing under the summary: what a trace says beyond its
//! percentiles, computed once and stored in the run's summary.
//!
//! Layout: `feature` (the features' one vocabulary, `Feature`), `features` (time-window features of a trace, keyed
//! "metric.feature", stored in `RunSummary::features`), `framework` (which
//! framework a benchmark runs on), `panorama` (the trace cut into time
//! slices, with problem intervals marked). The rules (`crate::diagnose`)
//! read the features by name from the summary; nothing here reads a rule.

pub mod feature;
pub mod features;
pub mod framework;
pub mod panorama;
pub(crate) mod series;
