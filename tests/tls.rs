//! TLS end to end (placeholder).
