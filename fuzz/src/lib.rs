//! The parser modules of ringperf, compiled from the main crate's sources.
//!
//! `http` and `sse` are pure (no I/O, no monoio), so they build on their own with only
//! httparse, memchr and uuid; including them by path keeps fuzz builds small and fast.

#[path = "../../src/http/mod.rs"]
pub mod http;
#[path = "../../src/sse/mod.rs"]
pub mod sse;
