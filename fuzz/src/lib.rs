//! The parser modules of ringperf, compiled from the main crate's sources.
//!
//! `http`, `sse`, `record`, `endpoint` and the Prometheus parser (`prom`, here `prom`)
//! are pure (no I/O, no monoio), so they build on their own with httparse, memchr, uuid,
//! crossbeam-queue, serde/serde_json and sonic-rs. Including them by path keeps the instrumented
//! build small: depending on the whole ringperf library, even without its default features,
//! would also instrument monoio, Parquet/Arrow, tiktoken, clap and the rest.

#[path = "../../src/endpoint/mod.rs"]
pub mod endpoint;
#[path = "../../src/http/mod.rs"]
pub mod http;
#[path = "../../src/scrape/prom/mod.rs"]
pub mod prom;
#[path = "../../src/record/mod.rs"]
pub mod record;
#[path = "../../src/sse/mod.rs"]
pub mod sse;
