//! Server-metrics collection core: Prometheus text parsing, per-series storage, statistics,
//! timeslices, histogram percentile estimation, unit inference and the four exporters.

pub mod analysis;
pub mod estimator;
pub mod export;
pub mod prom;
pub mod stats;
pub mod store;
pub mod summary;
pub mod units;
