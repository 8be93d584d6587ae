//! The `server_metrics_export.{json,csv,jsonl,parquet}` exporters (docs/output-formats.md).
//!
//! [`compute_report`] turns an in-memory [`Store`] and the run's windows into a
//! [`ServerMetricsReport`]; the writers take the report (JSON, CSV) or the store (Parquet)
//! plus an [`ExportContext`] with the run's identity.

pub mod csv;
pub mod json;
pub mod jsonl;
pub mod parquet;
pub mod phase;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

pub use super::analysis::Window;
use super::analysis::{endpoint_info, summarize_metrics};
use super::store::Store;
use super::summary::{EndpointInfo, MetricSummary};

/// Run identity and configuration that the exports carry.
#[derive(Clone, Debug)]
pub struct ExportContext<'a> {
    /// Tool version written as `aiperf_version` (`None` → null).
    pub aiperf_version: Option<&'a str>,
    /// Benchmark UUID (`None` → null).
    pub benchmark_id: Option<&'a str>,
    /// Every configured endpoint URL, in configuration order.
    pub endpoints_configured: &'a [String],
    /// The serialized user configuration.
    pub input_config: &'a serde_json::Value,
}

/// The windows of one export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windows {
    /// The profiling statistics window (see [`super::analysis::Bounds`]).
    pub profiling: Window,
    /// The profiling phase itself, `(start, end)` epoch ns: `summary.start_time` / `end_time`
    /// and `phase_time_ranges.profiling` (the phase's end, not the final scrape).
    pub profiling_range: (u64, u64),
    /// The span the Parquet export's samples are taken from.
    pub parquet: Window,
    /// The warmup window, when warmup ran.
    pub warmup: Option<Window>,
}

/// Everything the JSON and CSV exports show.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerMetricsReport {
    /// The profiling window the metrics were summarized over.
    pub profiling: Window,
    /// The profiling phase, `(start, end)` epoch ns.
    pub profiling_range: (u64, u64),
    /// The warmup window, when warmup ran.
    pub warmup: Option<Window>,
    /// Per-endpoint collection metadata, keyed by URL.
    pub endpoint_info: BTreeMap<String, EndpointInfo>,
    /// Profiling-phase metrics keyed by name.
    pub metrics: BTreeMap<String, MetricSummary>,
    /// Warmup-phase metrics keyed by name (only with a warmup window).
    pub warmup_metrics: Option<BTreeMap<String, MetricSummary>>,
}

/// Summarizes `store` over the profiling window (and the warmup window, if any).
#[must_use]
pub fn compute_report(store: &Store, w: &Windows) -> ServerMetricsReport {
    ServerMetricsReport {
        profiling: w.profiling,
        profiling_range: w.profiling_range,
        warmup: w.warmup,
        endpoint_info: endpoint_info(store),
        metrics: summarize_metrics(store, &w.profiling),
        warmup_metrics: w.warmup.map(|w| summarize_metrics(store, &w)),
    }
}

/// AIPerf's display form of an endpoint URL in its console tables: host:port and path, without
/// the scheme and a trailing `/metrics` (`https://h:1/dcgm/metrics` → `h:1/dcgm`).
#[must_use]
pub fn endpoint_with_path(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (host, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    let path = path.split(['?', '#']).next().unwrap_or("");
    let path = path.strip_suffix("/metrics").unwrap_or(path);
    format!("{host}{path}")
}

/// `http://host:port/metrics` → `host:port` (the CSV "Endpoint" column).
#[must_use]
pub fn endpoint_display(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let rest = rest.strip_suffix("/metrics").unwrap_or(rest);
    rest.split('/').next().unwrap_or(rest)
}
