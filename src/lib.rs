//! ringperf: a thread-per-core io_uring benchmark for LLM inference servers.
//!
//! The crate is a library with a thin binary (`src/main.rs`). The map of threads, data flow and
//! modules is in `docs/architecture.md`.

pub mod aggregate;
pub mod cli;
pub mod clock;
pub mod config;
pub mod control;
pub mod endpoint;
pub mod export;
pub mod http;
pub mod mock;
pub mod net;
pub mod prom;
pub mod record;
pub mod run;
pub mod schedule;
pub mod scrape;
pub mod server_metrics;
pub mod signals;
pub mod sse;
pub mod ui;
pub mod worker;
pub mod workload;
