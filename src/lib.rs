//! ringperf: a thread-per-core io_uring benchmark for LLM inference servers.
//!
//! The crate is a library with a thin binary (`src/main.rs`). The map of threads, data flow and
//! modules is in `docs/architecture.md`.
//!
//! Two layers. The pure core — [`clock`], [`http`], [`sse`], [`prom`], [`record`],
//! [`conversation`], [`endpoint`] and [`x509`] — takes bytes and returns values: no I/O runtime, no threads of its own, so it is
//! fuzzed, benched and property-tested alone and builds with `--no-default-features`. Everything
//! else is the engine (feature `engine`, on by default): workers on monoio, the aggregator, the
//! scraper, exports, tokenizers, the CLI and the mock server.

// The pure core.
pub mod clock;
pub mod conversation;
pub mod endpoint;
pub mod http;
pub mod prom;
pub mod record;
pub mod sse;
pub mod x509;

// The engine.
#[cfg(feature = "engine")]
pub mod aggregate;
#[cfg(feature = "engine")]
pub mod cli;
#[cfg(feature = "engine")]
pub mod config;
#[cfg(feature = "engine")]
pub mod control;
#[cfg(feature = "engine")]
pub mod error;
#[cfg(feature = "engine")]
pub mod export;
#[cfg(feature = "engine")]
pub mod fdlimit;
#[cfg(feature = "engine")]
pub mod gpu_telemetry;
#[cfg(feature = "engine")]
pub mod merge;
#[cfg(feature = "engine")]
pub mod mock;
#[cfg(feature = "engine")]
pub mod net;
#[cfg(feature = "engine")]
pub mod plot;
#[cfg(feature = "engine")]
pub mod run;
#[cfg(feature = "engine")]
pub mod schedule;
#[cfg(feature = "engine")]
pub mod scrape;
#[cfg(feature = "engine")]
pub mod search;
#[cfg(feature = "engine")]
pub mod server_metrics;
#[cfg(feature = "engine")]
pub mod signals;
#[cfg(feature = "engine")]
pub mod sweep;
#[cfg(feature = "engine")]
pub mod timer;
#[cfg(feature = "engine")]
pub mod ui;
#[cfg(feature = "engine")]
pub mod worker;
#[cfg(feature = "engine")]
pub mod workload;

#[cfg(feature = "engine")]
pub use error::Error;
