//! Server-metrics collection (docs/output-formats.md): the scraper thread, what it needs to reach
//! endpoints. The pure analysis and the exports live in [`ringperf_metrics::server_metrics`]; the text
//! parser in [`ringperf_wire::prom`].
//!
//! [`collector`] runs the scraper thread (reachability, baseline, periodic and final scrapes,
//! TRT-LLM fallback, auto-disable) over [`fetch`] and [`endpoint`], timed by [`settings`] (the
//! `AIPERF_SERVER_METRICS_*` variables). Each page goes through [`ringperf_wire::prom::parse_scrape`]
//! into a [`ringperf_metrics::server_metrics::store::Store`], and, with JSONL on, into
//! [`ringperf_metrics::server_metrics::export::jsonl`].

pub mod collector;
pub mod endpoint;
pub mod fetch;
pub mod settings;
