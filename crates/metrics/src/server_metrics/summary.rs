//! The computed server-metrics summary: per metric, per series statistics, buckets and
//! timeslices, shaped like AIPerf's `server_metrics_export.json` (`exclude_none`).

use std::collections::BTreeMap;

use serde::Serialize;
use serde::ser::SerializeMap;

/// Gauge / unknown statistics over the in-window samples (docs/output-formats.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GaugeStats {
    /// Mean.
    pub avg: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Sample standard deviation (ddof=1); 0 for one sample.
    pub std: f64,
    /// 1st percentile (NumPy linear).
    pub p1: f64,
    /// 5th percentile.
    pub p5: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 25th percentile.
    pub p25: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// Counter statistics (docs/output-formats.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CounterStats {
    /// Increase over the window, clamped at 0.
    pub total: f64,
    /// `total` per second between the reference and the last in-window sample.
    pub rate: f64,
    /// Mean rate of the complete timeslices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_avg: Option<f64>,
    /// Minimum rate of the complete timeslices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_min: Option<f64>,
    /// Maximum rate of the complete timeslices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_max: Option<f64>,
    /// Sample std (ddof=1) of the complete timeslices' rates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_std: Option<f64>,
    /// Decreases seen between consecutive samples from the reference on (resets; not exported,
    /// for the warning).
    #[serde(skip)]
    pub resets: u32,
}

/// Histogram statistics (docs/output-formats.md); only `count` when it is 0.
#[derive(Clone, Debug, PartialEq, Serialize, Default)]
pub struct HistogramStats {
    /// Observations in the window.
    pub count: u64,
    /// Sum of the observations in the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum: Option<f64>,
    /// `sum / count`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avg: Option<f64>,
    /// Observations per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count_rate: Option<f64>,
    /// Sum per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_rate: Option<f64>,
    /// Estimated p1, p5, p10, p25, p50, p75, p90, p95, p99 (docs/output-formats.md).
    #[serde(skip)]
    pub estimates: Option<[f64; 9]>,
}

/// Names of the histogram percentile estimate fields, in order.
pub const ESTIMATE_KEYS: [&str; 9] = [
    "p1_estimate",
    "p5_estimate",
    "p10_estimate",
    "p25_estimate",
    "p50_estimate",
    "p75_estimate",
    "p90_estimate",
    "p95_estimate",
    "p99_estimate",
];

/// Statistics of one series, by type.
#[derive(Clone, Debug, PartialEq)]
pub enum SeriesStats {
    /// Gauge or unknown.
    Gauge(GaugeStats),
    /// Counter.
    Counter(CounterStats),
    /// Histogram.
    Histogram(HistogramStats),
}

impl Serialize for SeriesStats {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Gauge(g) => g.serialize(s),
            Self::Counter(c) => c.serialize(s),
            Self::Histogram(h) => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("count", &h.count)?;
                let opt = [
                    ("sum", h.sum),
                    ("avg", h.avg),
                    ("count_rate", h.count_rate),
                    ("sum_rate", h.sum_rate),
                ];
                for (k, v) in opt {
                    if let Some(v) = v {
                        m.serialize_entry(k, &v)?;
                    }
                }
                if let Some(est) = &h.estimates {
                    for (k, v) in ESTIMATE_KEYS.iter().zip(est) {
                        m.serialize_entry(k, v)?;
                    }
                }
                m.end()
            }
        }
    }
}

/// Bucket deltas keyed by the `le` text, in bucket order (serialized as a JSON object).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct BucketCounts(pub Vec<(String, u64)>);

impl Serialize for BucketCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Per-type values of one timeslice.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SliceValues {
    /// Gauge slice.
    Gauge {
        /// Mean of the slice's samples.
        avg: f64,
        /// Minimum.
        min: f64,
        /// Maximum.
        max: f64,
    },
    /// Counter slice.
    Counter {
        /// Increase within the slice (≥ 0).
        total: f64,
        /// `total` per second of slice duration.
        rate: f64,
    },
    /// Histogram slice.
    Histogram {
        /// Observations within the slice.
        count: u64,
        /// Their sum.
        sum: f64,
        /// `sum / count` (0 when count is 0).
        avg: f64,
        /// Bucket deltas (absent when a bucket went backwards).
        #[serde(skip_serializing_if = "Option::is_none")]
        buckets: Option<BucketCounts>,
    },
}

/// One timeslice of a series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timeslice {
    /// Slice start (epoch ns).
    pub start_ns: u64,
    /// Slice end (epoch ns, clipped to the window end).
    pub end_ns: u64,
    /// `Some(false)` for a partial slice; complete slices omit the field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_complete: Option<bool>,
    /// Values.
    #[serde(flatten)]
    pub values: SliceValues,
}

/// One series of a metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeriesSummary {
    /// Endpoint URL.
    pub endpoint_url: String,
    /// Labels (omitted when the series has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Statistics.
    pub stats: SeriesStats,
    /// Histogram bucket deltas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buckets: Option<BucketCounts>,
    /// Timeslices (only when a slice duration is set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeslices: Option<Vec<Timeslice>>,
}

/// One metric with all its series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricSummary {
    /// `gauge`, `counter`, `histogram` or `unknown` (the CSV's section). The JSON `type` writes
    /// `unknown` as `gauge`: AIPerf exports untyped metrics with gauge statistics and type.
    #[serde(rename = "type", serialize_with = "json_type")]
    pub kind: &'static str,
    /// HELP text.
    pub description: String,
    /// Inferred unit display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<&'static str>,
    /// Series sorted by (endpoint, labels).
    pub series: Vec<SeriesSummary>,
}

fn json_type<S: serde::Serializer>(kind: &&'static str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(if *kind == "unknown" { "gauge" } else { kind })
}

/// Collection metadata of one endpoint (`summary.endpoint_info.<url>`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EndpointInfo {
    /// Number of fetches.
    pub total_fetches: u64,
    /// First fetch (epoch ns).
    pub first_fetch_ns: u64,
    /// Last fetch (epoch ns).
    pub last_fetch_ns: u64,
    /// Mean fetch latency in ms.
    pub avg_fetch_latency_ms: f64,
    /// Fetches whose body changed.
    pub unique_updates: u64,
    /// First unique update (epoch ns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_update_ns: Option<u64>,
    /// Last unique update (epoch ns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_update_ns: Option<u64>,
    /// First to last unique update, seconds.
    pub duration_seconds: f64,
    /// `duration · 1000 / (unique − 1)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avg_update_interval_ms: Option<f64>,
    /// Median gap between unique updates, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_update_interval_ms: Option<f64>,
    /// ringperf's: lines of the endpoint's pages that did not parse and were left out (the
    /// rest of each page was kept); written only when there were some.
    #[serde(skip_serializing_if = "is_zero")]
    pub malformed_lines: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
