//! Reporters: one file per output format.

pub mod github;
pub mod html;
pub mod panorama;
pub mod run_report;
