//! ringperf: a thread-per-core io_uring benchmark for LLM inference servers.
//!
//! The crate is a library with a thin binary (`src/main.rs`). The map of crates, threads, data
//! flow and modules is in `docs/architecture.md`. The pure core (parsers, records, the clock,
//! endpoint wire formats) is the `ringperf-wire` crate; what is here is the engine and the CLI:
//! workers on monoio, the aggregator, the scraper, exports, tokenizers and the mock server.

pub mod aggregator;
pub mod chat;
pub mod cli;
pub mod config;
pub mod error;
pub mod exit;
pub mod merge;
pub mod run;
pub mod scrape;
pub mod search;
pub mod sweep;
pub mod trace_tools;
pub mod ui;
pub mod worker;

pub use error::Error;
