//! `server_metrics_export.jsonl`: one slim line per non-duplicate scrape (no types, no HELP).
//!
//! [`ScrapeRecord`] is both the writer's record and the reader's, so a run can be re-processed
//! from its JSONL: [`ScrapeRecord::to_scrape`] rebuilds a [`Scrape`] given each metric's type and
//! description (from a previous JSON export, for example; histograms are recognized by shape).

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use ringperf_wire::prom::{Family, HistogramValue, LabelSet, MetricType, Scrape, SeriesValue};

/// One series value in a record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleRecord {
    /// Labels (absent when the series has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Gauge / counter / unknown value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// Histogram cumulative buckets keyed by `le` text, in bucket order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<serde_json::Map<String, serde_json::Value>>,
    /// Histogram `_sum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum: Option<f64>,
    /// Histogram `_count`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<f64>,
}

/// One JSONL line: one scrape of one endpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScrapeRecord {
    /// Endpoint URL.
    pub endpoint_url: String,
    /// Sample timestamp (epoch ns of the first response byte).
    pub timestamp_ns: u64,
    /// Fetch latency (ns).
    pub endpoint_latency_ns: u64,
    /// Series values per metric name.
    pub metrics: BTreeMap<String, Vec<SampleRecord>>,
    /// When the request was sent (epoch ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_sent_ns: Option<u64>,
    /// When the first response byte arrived (epoch ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_ns: Option<u64>,
    /// Phase the scrape is attributed to (`warmup` / `profiling`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark_phase: Option<String>,
    /// Index of that phase among the run's phases (warmup 0 when there is one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_index: Option<u32>,
    /// Index of that phase among the profiling phases (absent for warmup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiling_index: Option<u32>,
    /// The phase's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_name: Option<String>,
    /// The phase's kind (`warmup` / `profiling`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_kind: Option<String>,
}

fn labels_map(labels: &LabelSet) -> Option<BTreeMap<String, String>> {
    (!labels.is_empty()).then(|| labels.iter().cloned().collect())
}

impl ScrapeRecord {
    /// Builds the record of one scrape (optional fields unset).
    #[must_use]
    pub fn from_scrape(url: &str, timestamp_ns: u64, latency_ns: u64, scrape: &Scrape) -> Self {
        let mut metrics = BTreeMap::new();
        for f in &scrape.families {
            let samples: Vec<SampleRecord> = f
                .series
                .iter()
                .map(|(labels, value)| match value {
                    SeriesValue::Scalar(v) => SampleRecord {
                        labels: labels_map(labels),
                        value: Some(*v),
                        buckets: None,
                        sum: None,
                        count: None,
                    },
                    SeriesValue::Histogram(h) => SampleRecord {
                        labels: labels_map(labels),
                        value: None,
                        buckets: Some(
                            h.le_text
                                .iter()
                                .zip(&h.buckets)
                                .map(|(t, b)| (t.clone(), serde_json::Value::from(b.1)))
                                .collect(),
                        ),
                        sum: Some(h.sum),
                        count: Some(h.count),
                    },
                })
                .collect();
            metrics
                .entry(f.name.clone())
                .or_insert_with(Vec::new)
                .extend(samples);
        }
        Self {
            endpoint_url: url.to_owned(),
            timestamp_ns,
            endpoint_latency_ns: latency_ns,
            metrics,
            request_sent_ns: None,
            first_byte_ns: None,
            benchmark_phase: None,
            phase_index: None,
            profiling_index: None,
            phase_name: None,
            phase_kind: None,
        }
    }

    /// Rebuilds the scrape. `catalog` gives each metric's type and description; a metric absent
    /// from it is a histogram if its samples carry buckets, `unknown` otherwise.
    #[must_use]
    pub fn to_scrape(&self, catalog: &BTreeMap<String, (MetricType, String)>) -> Scrape {
        let mut families = Vec::new();
        for (name, samples) in &self.metrics {
            let mut series = Vec::new();
            for s in samples {
                let labels: LabelSet = s
                    .labels
                    .iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let value = match (&s.buckets, s.value) {
                    (Some(b), _) => {
                        let mut buckets = Vec::new();
                        let mut le_text = Vec::new();
                        for (t, c) in b {
                            let le = match t.as_str() {
                                "+Inf" | "Inf" | "inf" => f64::INFINITY,
                                other => match other.parse::<f64>() {
                                    Ok(v) => v,
                                    Err(_) => continue,
                                },
                            };
                            buckets.push((le, c.as_f64().unwrap_or(0.0)));
                            le_text.push(t.clone());
                        }
                        SeriesValue::Histogram(HistogramValue {
                            buckets,
                            le_text,
                            sum: s.sum.unwrap_or(0.0),
                            count: s.count.unwrap_or(0.0),
                        })
                    }
                    (None, Some(v)) => SeriesValue::Scalar(v),
                    (None, None) => continue,
                };
                series.push((labels, value));
            }
            let Some(first) = series.first() else {
                continue;
            };
            let (kind, description) = catalog.get(name).cloned().unwrap_or_else(|| {
                let kind = match first.1 {
                    SeriesValue::Histogram(_) => MetricType::Histogram,
                    SeriesValue::Scalar(_) => MetricType::Unknown,
                };
                (kind, String::new())
            });
            families.push(Family {
                name: name.clone(),
                kind,
                description,
                series,
            });
        }
        Scrape {
            families,
            ..Scrape::default()
        }
    }

    /// Writes the record as one JSON line.
    ///
    /// # Errors
    /// I/O errors of `out`.
    pub fn write_line(&self, out: &mut impl Write) -> io::Result<()> {
        serde_json::to_writer(&mut *out, self).map_err(io::Error::other)?;
        out.write_all(b"\n")
    }
}

/// Reads every record of a JSONL export; blank lines are skipped.
///
/// # Errors
/// The first line that is not a valid record (with its 1-based line number).
pub fn read_records(text: &str) -> Result<Vec<ScrapeRecord>, (usize, serde_json::Error)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| (i + 1, e)))
        .collect()
}
