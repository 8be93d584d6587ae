#![warn(missing_docs)]
//! Metrics: the registry of client metrics, per-record computation, exact statistics and the
//! per-phase accumulator that produces the run's [`Summary`].
//!
//! Flow on the aggregator thread: [`RecordFacts`](ringperf_wire::record::RecordFacts) →
//! [`record_metrics`] → [`Accumulator::add`] (and the per-record JSONL writer) → at the end
//! [`Accumulator::finish`] → exporters.

pub mod accumulator;
mod audio;
pub mod confidence;
pub mod health;
pub mod http_trace;
pub mod live;
mod media;
pub mod metrics;
pub mod realtime;
pub mod registry;
pub mod spec_decode;
pub mod stats;
pub mod sweep;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use accumulator::{Accumulator, ErrorCount, LagSummary, MetricResult, ResultValue, Summary};
pub use metrics::{MetricConfig, MetricValue, RecordMetrics, record_metrics};
pub use registry::{ConsoleGroup, Kind, MetricDef, MetricId, REGISTRY, Unit};
pub use stats::Stats;

#[cfg(test)]
pub(crate) mod tests;
