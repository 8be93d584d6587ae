//! ringperf-engine: what runs while a benchmark is measured. The workers, one per core on their
//! own monoio runtime, with the one request loop, sessions, the open-loop pacer and the warm pool
//! ([`worker`]); the Prometheus scraper of server metrics and GPU telemetry ([`scrape`]); the
//! aggregator stage, rings in, records and statistics out ([`aggregator`]); and the live
//! dashboard's board and screen ([`ui`]). It builds on `ringperf-wire`, `ringperf-io`,
//! `ringperf-workload` and `ringperf-metrics`, and takes its settings as plain values: the
//! binary's configuration and run stages drive it.

pub mod aggregator;
pub mod scrape;
pub mod ui;
pub mod worker;
