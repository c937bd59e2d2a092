//! Samplers (not yet implemented).
