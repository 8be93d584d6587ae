//! Compact per-series time series of every scraped endpoint (docs/output-formats.md).
//!
//! Per endpoint, one entry per `(metric name, sorted label set)`: timestamps and values for
//! scalars, timestamps / sums / counts and a row-major bucket matrix for histograms. The fetch
//! log (timestamps, latencies, unique updates) feeds the `endpoint_info` summary.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use ringperf_wire::prom::{LabelSet, MetricType, Scrape, SeriesValue};
use ringperf_wire::record::Phase;

/// Scalar (gauge / counter / unknown) samples, sorted by time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScalarSeries {
    /// Sample timestamps (epoch ns), ascending.
    pub ts_ns: Vec<u64>,
    /// Values aligned with `ts_ns`.
    pub values: Vec<f64>,
}

/// Histogram samples, sorted by time; the bucket schema is fixed by the first sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistogramSeries {
    /// Bucket upper bounds, ascending, `+Inf` last.
    pub les: Vec<f64>,
    /// The `le` label text of each bound as first seen (JSON bucket keys).
    pub le_text: Vec<String>,
    /// Sample timestamps (epoch ns), ascending.
    pub ts_ns: Vec<u64>,
    /// `_sum` per sample.
    pub sums: Vec<f64>,
    /// `_count` per sample.
    pub counts: Vec<f64>,
    /// Cumulative bucket counts, row-major: `les.len()` values per sample.
    pub buckets: Vec<f64>,
}

impl HistogramSeries {
    /// The cumulative bucket counts of sample `i` (empty if out of range).
    #[must_use]
    pub fn row(&self, i: usize) -> &[f64] {
        let n = self.les.len();
        self.buckets.get(i * n..(i + 1) * n).unwrap_or(&[])
    }

    /// All rows as slices (for the estimator).
    #[must_use]
    pub fn rows(&self) -> Vec<&[f64]> {
        (0..self.ts_ns.len()).map(|i| self.row(i)).collect()
    }
}

/// The samples of one series.
#[derive(Clone, Debug, PartialEq)]
pub enum SeriesData {
    /// Gauge, counter or unknown.
    Scalar(ScalarSeries),
    /// Histogram.
    Histogram(HistogramSeries),
}

/// One stored series with its family metadata.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesEntry {
    /// Family type (fixed by the first sample).
    pub kind: MetricType,
    /// HELP text.
    pub description: String,
    /// Samples.
    pub data: SeriesData,
}

/// Everything recorded for one endpoint.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EndpointStore {
    /// Endpoint URL as configured (normalized).
    pub url: String,
    /// Timestamp of every fetch (epoch ns), in arrival order.
    pub fetch_ts_ns: Vec<u64>,
    /// Latency of every fetch (ns), aligned with `fetch_ts_ns`.
    pub fetch_latency_ns: Vec<u64>,
    /// Timestamps of fetches whose body differed from the previous one.
    pub update_ts_ns: Vec<u64>,
    /// The phase each fetch was sent in (`None`: before any phase, or between phases), aligned
    /// with `fetch_ts_ns`; empty when the fetches were not attributed (re-processed JSONL).
    pub fetch_phase: Vec<Option<Phase>>,
    /// The run's phase number (`phase_index`) each tagged fetch was sent in, aligned with
    /// `fetch_phase` (0 where untagged): several profiling phases are told apart by it.
    pub fetch_phase_index: Vec<u8>,
    /// Series keyed by `(metric name, sorted labels)`.
    pub series: BTreeMap<(String, LabelSet), SeriesEntry>,
    /// Lines of this endpoint's pages that did not parse and were left out (ringperf's
    /// `endpoint_info.malformed_lines`).
    pub malformed_lines: u64,
    last_hash: Option<u64>,
}

impl EndpointStore {
    /// An empty store for `url`.
    #[must_use]
    pub fn new(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            ..Self::default()
        }
    }

    /// True when `body` equals the previous response of this endpoint; remembers `body`.
    pub fn check_duplicate(&mut self, body: &[u8]) -> bool {
        let mut h = DefaultHasher::new();
        body.hash(&mut h);
        let hash = h.finish();
        let dup = self.last_hash == Some(hash);
        self.last_hash = Some(hash);
        dup
    }

    /// Forgets the previous response (after switching URL), so the next body is unique.
    pub fn reset_dedup(&mut self) {
        self.last_hash = None;
    }

    /// Records one fetch: its time, latency and whether it brought a unique update.
    pub fn record_fetch(&mut self, ts_ns: u64, latency_ns: u64, is_duplicate: bool) {
        self.fetch_ts_ns.push(ts_ns);
        self.fetch_latency_ns.push(latency_ns);
        if !is_duplicate {
            self.update_ts_ns.push(ts_ns);
        }
    }

    /// [`Self::record_fetch`] of a fetch sent during `phase` (AIPerf 0.13 attributes a scrape to
    /// the phase that was running when it was sent, whenever its answer arrives).
    pub fn record_phase_fetch(
        &mut self,
        ts_ns: u64,
        latency_ns: u64,
        is_duplicate: bool,
        phase: Option<Phase>,
    ) {
        self.record_phase_run_fetch(ts_ns, latency_ns, is_duplicate, phase.map(|p| (p, 0)));
    }

    /// [`Self::record_phase_fetch`] of a fetch sent during the run's phase number `index` (of
    /// kind `phase`).
    pub fn record_phase_run_fetch(
        &mut self,
        ts_ns: u64,
        latency_ns: u64,
        is_duplicate: bool,
        phase: Option<(Phase, u8)>,
    ) {
        // Keep the tags aligned with the fetch log even after untagged fetches.
        self.fetch_phase.resize(self.fetch_ts_ns.len(), None);
        self.fetch_phase_index.resize(self.fetch_ts_ns.len(), 0);
        self.record_fetch(ts_ns, latency_ns, is_duplicate);
        self.fetch_phase.push(phase.map(|(p, _)| p));
        self.fetch_phase_index.push(phase.map_or(0, |(_, i)| i));
    }

    /// `(first, last)` stamp of the fetches sent during the run's phase number `index` (of
    /// kind `phase`); `None` when there is none.
    #[must_use]
    pub fn phase_run_span(&self, phase: Phase, index: u8) -> Option<(u64, u64)> {
        (self.fetch_ts_ns.iter())
            .zip(&self.fetch_phase)
            .zip(&self.fetch_phase_index)
            .filter(|((_, p), i)| **p == Some(phase) && **i == index)
            .fold(None, |acc, ((&t, _), _)| {
                Some(acc.map_or((t, t), |(a, b): (u64, u64)| (a.min(t), b.max(t))))
            })
    }

    /// `(first, last)` stamp of the fetches sent during `phase`; `None` when there is none.
    #[must_use]
    pub fn phase_span(&self, phase: Phase) -> Option<(u64, u64)> {
        self.fetch_ts_ns
            .iter()
            .zip(&self.fetch_phase)
            .filter(|(_, p)| **p == Some(phase))
            .fold(None, |acc, (&t, _)| {
                Some(acc.map_or((t, t), |(a, b): (u64, u64)| (a.min(t), b.max(t))))
            })
    }

    /// Stores every series of `scrape` at `ts_ns` (duplicates included, as AIPerf stores them).
    pub fn insert(&mut self, ts_ns: u64, scrape: &Scrape) {
        for family in &scrape.families {
            for (labels, value) in &family.series {
                let key = (family.name.clone(), labels.clone());
                let entry = self.series.entry(key).or_insert_with(|| SeriesEntry {
                    kind: family.kind,
                    description: family.description.clone(),
                    data: match value {
                        SeriesValue::Scalar(_) => SeriesData::Scalar(ScalarSeries::default()),
                        SeriesValue::Histogram(h) => SeriesData::Histogram(HistogramSeries {
                            les: h.buckets.iter().map(|b| b.0).collect(),
                            le_text: h.le_text.clone(),
                            ..HistogramSeries::default()
                        }),
                    },
                });
                if entry.kind != family.kind {
                    continue;
                }
                match (&mut entry.data, value) {
                    (SeriesData::Scalar(s), SeriesValue::Scalar(v)) => {
                        let at = s.ts_ns.partition_point(|&t| t <= ts_ns);
                        s.ts_ns.insert(at, ts_ns);
                        s.values.insert(at, *v);
                    }
                    (SeriesData::Histogram(s), SeriesValue::Histogram(h)) => {
                        let at = s.ts_ns.partition_point(|&t| t <= ts_ns);
                        s.ts_ns.insert(at, ts_ns);
                        s.sums.insert(at, h.sum);
                        s.counts.insert(at, h.count);
                        // Map onto the fixed schema: missing buckets 0, extra buckets ignored.
                        let row: Vec<f64> = s
                            .les
                            .iter()
                            .map(|le| h.buckets.iter().find(|b| b.0 == *le).map_or(0.0, |b| b.1))
                            .collect();
                        let n = s.les.len();
                        let pos = (at * n).min(s.buckets.len());
                        s.buckets.splice(pos..pos, row);
                    }
                    _ => {}
                }
            }
        }
    }
}

/// All endpoints of a run, in configuration order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Store {
    /// One entry per endpoint.
    pub endpoints: Vec<EndpointStore>,
}

impl Store {
    /// The store of `url`, created on first use.
    pub fn endpoint_mut(&mut self, url: &str) -> &mut EndpointStore {
        let i = match self.endpoints.iter().position(|e| e.url == url) {
            Some(i) => i,
            None => {
                self.endpoints.push(EndpointStore::new(url));
                self.endpoints.len() - 1
            }
        };
        &mut self.endpoints[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_wire::prom::parse_scrape;

    #[test]
    fn out_of_order_samples_and_bucket_schema() {
        let mut ep = EndpointStore::new("http://h:1/metrics");
        let p1 = b"# TYPE g gauge\ng 1\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n";
        let p2 = b"# TYPE g gauge\ng 2\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 5\nh_bucket{le=\"9\"} 4\nh_sum 7\nh_count 5\n";
        ep.insert(20, &parse_scrape(p1).unwrap());
        ep.insert(10, &parse_scrape(p2).unwrap());
        let g = &ep.series[&("g".to_owned(), vec![])];
        let SeriesData::Scalar(s) = &g.data else {
            panic!()
        };
        assert_eq!(
            (s.ts_ns.as_slice(), s.values.as_slice()),
            (&[10, 20][..], &[2.0, 1.0][..])
        );
        let h = &ep.series[&("h".to_owned(), vec![])];
        let SeriesData::Histogram(s) = &h.data else {
            panic!()
        };
        assert_eq!(s.les, vec![1.0, f64::INFINITY]);
        // Sample at t=10 lacks le=1 (filled 0) and its extra le=9 is ignored.
        assert_eq!(s.row(0), &[0.0, 5.0]);
        assert_eq!(s.row(1), &[1.0, 2.0]);
        assert_eq!(
            (s.sums.clone(), s.counts.clone()),
            (vec![7.0, 3.0], vec![5.0, 2.0])
        );
    }

    #[test]
    fn dedup_and_fetch_log() {
        let mut ep = EndpointStore::new("u");
        assert!(!ep.check_duplicate(b"a 1\n"));
        assert!(ep.check_duplicate(b"a 1\n"));
        assert!(!ep.check_duplicate(b"a 2\n"));
        ep.reset_dedup();
        assert!(!ep.check_duplicate(b"a 2\n"));
        ep.record_fetch(1, 5, false);
        ep.record_fetch(2, 7, true);
        assert_eq!(ep.fetch_ts_ns, vec![1, 2]);
        assert_eq!(ep.update_ts_ns, vec![1]);
    }

    #[test]
    fn phase_span_follows_the_send_tags() {
        let mut ep = EndpointStore::new("u");
        ep.record_fetch(5, 1, false);
        ep.record_phase_fetch(20, 1, false, Some(Phase::Warmup));
        ep.record_phase_fetch(10, 1, true, Some(Phase::Warmup));
        ep.record_phase_fetch(30, 1, true, None);
        ep.record_phase_fetch(40, 1, false, Some(Phase::Profiling));
        assert_eq!(ep.fetch_phase.len(), ep.fetch_ts_ns.len());
        assert_eq!(ep.phase_span(Phase::Warmup), Some((10, 20)));
        assert_eq!(ep.phase_span(Phase::Profiling), Some((40, 40)));
        let mut untagged = EndpointStore::new("u");
        untagged.record_fetch(1, 1, false);
        assert_eq!(untagged.phase_span(Phase::Warmup), None);
    }
}
