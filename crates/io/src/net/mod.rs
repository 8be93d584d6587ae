//! HTTP/1.1 exchanges on a monoio runtime: the one place that takes a pooled keep-alive
//! connection (or connects), writes an encoded request, reads with a stamp taken as each read
//! completes, and drives the pure [`ringperf_wire::http`] decoders over the bytes.
//!
//! Both clients send through [`Exchange::run`]: the worker's request loop
//! (`crates/engine/src/worker/client.rs`), whose [`Sink`] frames SSE and records events, and the scraper
//! (`ringperf_engine::scrape::fetch`), whose sink keeps the page and its first-byte stamp. Each maps the
//! one [`Error`] enum to its own reporting (AIPerf's error shape for requests, fetch errors for
//! scrapes). The parsers stay in [`ringperf_wire::http`], free of I/O; this module is the I/O around
//! them. An `https://` connection carries TLS ([`tls`]); the exchange sees the same stream.
//! Reads carry the kernel's receive stamp beside the user-space one when asked ([`rxstamp`]).

pub mod batch;
pub mod coalesce;
pub mod exchange;
pub mod multishot;
pub mod pool;
pub mod rxstamp;
pub mod tcpinfo;
pub mod tls;
pub mod trust;
pub mod waiters;

pub use exchange::{AfterHead, Cut, Error, Exchange, Limits, Sink};
pub use pool::Pool;
pub use rxstamp::ReadStamp;
pub use tls::{Connector, TlsClient, TlsError, TlsSetupError, Verify};
pub use trust::Refusal;

#[cfg(test)]
mod tests;
