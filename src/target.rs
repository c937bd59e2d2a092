//! Launch or attach (not yet implemented).
