//! Server-metrics collection core (spec §7): everything but the scraper thread.
//!
//! Pipeline: a page's bytes → [`prom::parse_scrape`] (borrowed lexing, AIPerf's family rules) →
//! [`store::EndpointStore::insert`] (per-series time series; [`store::EndpointStore::check_duplicate`]
//! and [`store::EndpointStore::record_fetch`] keep the fetch log) → at the end of the run,
//! [`export::compute_report`] over an [`analysis::Window`] → the writers in [`export`]. The
//! JSONL records ([`export::jsonl::ScrapeRecord`]) can be read back to rebuild a store.

pub mod analysis;
pub mod estimator;
pub mod export;
pub mod prom;
pub mod stats;
pub mod store;
pub mod summary;
pub mod units;
