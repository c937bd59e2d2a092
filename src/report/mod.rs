//! Reporters (not yet implemented).
