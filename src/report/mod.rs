//! Reporters: one file per output format.

pub mod github;
