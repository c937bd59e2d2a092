//! (not yet implemented)
