//! Server-metrics analysis and export (docs/output-formats.md): all that follows a page's parse,
//! shared by the live run (`ringperf::run` feeding it from `ringperf_engine::scrape`) and by re-processing
//! (`ringperf server-metrics --from-jsonl`, [`reprocess`]), which never scrapes.
//!
//! Pipeline: a parsed page ([`ringperf_wire::prom::Scrape`]) → [`store::EndpointStore::insert`]
//! (per-series time series; [`store::EndpointStore::check_duplicate`] and
//! [`store::EndpointStore::record_fetch`] keep the fetch log) → at the end of the run,
//! [`export::compute_report`] over an [`analysis::Window`] ([`stats`], [`estimator`] for
//! histogram percentiles, [`units`] for unit inference, [`summary`] for the result types) → the
//! writers in [`export`], chosen and placed by [`output`]. The JSONL records
//! ([`export::jsonl::ScrapeRecord`]) can be read back to rebuild a store ([`reprocess`]).

pub mod analysis;
pub mod estimator;
pub mod export;
pub mod live;
pub mod output;
pub mod reprocess;
pub mod sglang_spec;
pub mod stats;
pub mod store;
pub mod summary;
pub mod units;

mod error;
pub use error::Error;
