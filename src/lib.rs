//! ringperf: a thread-per-core io_uring benchmark for LLM inference servers.
//!
//! The crate is a library with a thin binary (`src/main.rs`): the CLI and its flag table,
//! configuration, the run's stages, sweeps, search, merge, chat, errors and exit codes. The
//! engine they drive (workers, scraper, aggregator, dashboard) is `ringperf-engine`, on the
//! other crates of the workspace; `docs/architecture.md` has the map of crates, threads and data
//! flow.

pub mod api;
pub mod chat;
pub mod cli;
pub mod config;
pub mod error;
pub mod exit;
pub mod invocation;
pub mod merge;
pub mod plan;
pub mod run;
pub mod search;
pub mod sweep;
pub mod trace_tools;

pub use error::Error;
