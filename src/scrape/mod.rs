//! Server-metrics collection (spec §7): the scraper thread and the pure core it feeds.
//!
//! Pipeline: a page's bytes → [`prom::parse_scrape`] (borrowed lexing, AIPerf's family rules) →
//! [`store::EndpointStore::insert`] (per-series time series; [`store::EndpointStore::check_duplicate`]
//! and [`store::EndpointStore::record_fetch`] keep the fetch log) → at the end of the run,
//! [`export::compute_report`] over an [`analysis::Window`] → the writers in [`export`]. The
//! JSONL records ([`export::jsonl::ScrapeRecord`]) can be read back to rebuild a store
//! ([`reprocess`], `ringperf server-metrics --from-jsonl`).
//!
//! The I/O side: [`collector`] runs the scraper thread (reachability, baseline, periodic and
//! final scrapes, TRT-LLM fallback, auto-disable) over [`fetch`] and [`endpoint`], timed by
//! [`settings`] (the `AIPERF_SERVER_METRICS_*` variables).

pub mod analysis;
pub mod collector;
pub mod endpoint;
pub mod estimator;
pub mod export;
pub mod fetch;
pub mod output;
pub mod prom;
pub mod reprocess;
pub mod settings;
pub mod stats;
pub mod store;
pub mod summary;
pub mod units;
