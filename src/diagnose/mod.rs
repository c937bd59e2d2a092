//! Rules engine (not yet implemented).
