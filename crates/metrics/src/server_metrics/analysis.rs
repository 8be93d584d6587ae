//! Window statistics and timeslices of stored series (docs/output-formats.md, "Server metrics").

use std::collections::BTreeMap;

use super::estimator::{estimate_percentiles, learn_bucket_stats};
use super::stats::{PERCENTILES, mean, percentile_sorted, std_ddof1};
use super::store::{EndpointStore, HistogramSeries, ScalarSeries, SeriesData, Store};
use super::summary::{
    BucketCounts, CounterStats, EndpointInfo, GaugeStats, HistogramStats, MetricSummary,
    SeriesStats, SeriesSummary, SliceValues, Timeslice,
};
use super::units::infer_unit;
use ringperf_wire::prom::MetricType;
use ringperf_wire::record::Phase;

/// How a window's bounds meet the stored samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bounds {
    /// The window exactly as given (warmup; tests).
    #[default]
    Exact,
    /// A live run's window, AIPerf 0.13's rule: each endpoint's window is narrowed to its own
    /// fetches inside `[start, end]` — from the first fetch at or after the phase start to the
    /// last one, the final scrape after the flush period. The store holds every fetch
    /// (duplicates included), so gauge statistics count each fetch of the window and the
    /// counter / histogram durations run from the last fetch before the window to the final one.
    Fetches,
    /// A live run's phase, AIPerf 0.13's phase-filtered rule: each endpoint's window runs from
    /// the first to the last of its fetches that were *sent* during the phase (the end-of-warmup
    /// scrape, the profiling phase's final scrape after the flush period included), whenever
    /// their answers arrived. Statistics count every such fetch; the reference is the fetch
    /// before the first one; histogram bucket means are learned from the reference to the
    /// phase's last fetch only (AIPerf summarizes a series cut to those samples).
    Phase(Phase),
    /// [`Bounds::Phase`] of one phase of a run of several of its kind: the fetches sent during
    /// the run's phase number `.1` (a config file's profiling phases, each on its own).
    PhaseRun(Phase, u8),
    /// A re-processed JSONL: its lines are unique updates only (the duplicate fetches between
    /// them are not written), so a value holds until the next line. The reference value is
    /// read at the window start and the final value at the window end, and rates are taken
    /// over that span.
    Held,
}

/// The summarized window: `[start_ns, end_ns]` inclusive, optional slice duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Window start (epoch ns).
    pub start_ns: u64,
    /// Window end (epoch ns).
    pub end_ns: u64,
    /// Timeslice length in ns (`--slice-duration`), `None` for no timeslices.
    pub slice_ns: Option<u64>,
    /// How the bounds meet the samples.
    pub bounds: Bounds,
}

impl Window {
    /// A live run's profiling window: the phase-filtered rule ([`Bounds::Phase`]) when the
    /// store knows which fetches were sent during profiling, else the fetches from the phase
    /// start to the final one ([`Bounds::Fetches`]). `end_ns` is widened to the last fetch of
    /// any endpoint (as AIPerf 0.13 computes its window).
    #[must_use]
    pub fn profiling(store: &Store, start_ns: u64, end_ns: u64, slice_ns: Option<u64>) -> Self {
        if let Some(w) = Self::phase(store, Phase::Profiling, start_ns, end_ns, slice_ns) {
            return w;
        }
        let last = store
            .endpoints
            .iter()
            .filter_map(|e| e.fetch_ts_ns.iter().max().copied())
            .max();
        Self {
            start_ns,
            end_ns: last.map_or(end_ns, |l| l.max(end_ns)),
            slice_ns,
            bounds: Bounds::Fetches,
        }
    }

    /// A live run's warmup window: the phase-filtered rule ([`Bounds::Phase`]) when the store
    /// knows which fetches were sent during warmup, else exactly `[start, end]`. With the rule,
    /// `end_ns` is widened to the last warmup fetch (the end-of-warmup scrape), as AIPerf 0.13
    /// widens `phase_time_ranges.warmup`.
    #[must_use]
    pub fn warmup(store: &Store, start_ns: u64, end_ns: u64, slice_ns: Option<u64>) -> Self {
        Self::phase(store, Phase::Warmup, start_ns, end_ns, slice_ns).unwrap_or(Self {
            start_ns,
            end_ns,
            slice_ns,
            bounds: Bounds::Exact,
        })
    }

    /// `[start, max(end, last fetch sent in phase)]` under [`Bounds::Phase`]; `None` when no
    /// endpoint has a fetch sent during `phase`.
    #[must_use]
    pub fn phase(
        store: &Store,
        phase: Phase,
        start_ns: u64,
        end_ns: u64,
        slice_ns: Option<u64>,
    ) -> Option<Self> {
        let last = store
            .endpoints
            .iter()
            .filter_map(|e| e.phase_span(phase).map(|s| s.1))
            .max()?;
        Some(Self {
            start_ns,
            end_ns: last.max(end_ns),
            slice_ns,
            bounds: Bounds::Phase(phase),
        })
    }

    /// The Parquet export's window: `[start, max(end, last unique update of any endpoint)]`
    /// (AIPerf 0.13 writes the samples of this span, the phase's own bounds widened to the
    /// last changed scrape).
    #[must_use]
    pub fn widened(store: &Store, start_ns: u64, end_ns: u64) -> Self {
        let last = store
            .endpoints
            .iter()
            .filter_map(|e| e.update_ts_ns.iter().max().copied())
            .max();
        Self {
            start_ns,
            end_ns: last.map_or(end_ns, |l| l.max(end_ns)),
            slice_ns: None,
            bounds: Bounds::Exact,
        }
    }

    /// The window one endpoint is summarized over; `None` when a [`Bounds::Fetches`] window
    /// holds none of its fetches, or no fetch of it was sent during a [`Bounds::Phase`] phase.
    #[must_use]
    pub fn for_endpoint(&self, ep: &EndpointStore) -> Option<Self> {
        let span = match self.bounds {
            Bounds::Phase(p) => Some(ep.phase_span(p)),
            Bounds::PhaseRun(p, i) => Some(ep.phase_run_span(p, i)),
            _ => None,
        };
        if let Some(span) = span {
            let (first, last) = span?;
            return Some(Self {
                start_ns: first,
                end_ns: last,
                ..*self
            });
        }
        if self.bounds != Bounds::Fetches {
            return Some(*self);
        }
        let inside = ep
            .fetch_ts_ns
            .iter()
            .copied()
            .filter(|t| (self.start_ns..=self.end_ns).contains(t));
        let (first, last) = inside.fold(None, |acc: Option<(u64, u64)>, t| {
            Some(acc.map_or((t, t), |(a, b)| (a.min(t), b.max(t))))
        })?;
        Some(Self {
            start_ns: first,
            end_ns: last,
            ..*self
        })
    }

    /// The times a delta runs between: the reference and last samples' own times, or under
    /// [`Bounds::Held`] the window's bounds where the value held there.
    fn delta_span(&self, t_ref: u64, t_last: u64) -> (u64, u64) {
        if self.bounds == Bounds::Held {
            (t_ref.max(self.start_ns), t_last.max(self.end_ns))
        } else {
            (t_ref, t_last)
        }
    }
}

/// One timeslice boundary: `(start, end, is_complete)`.
pub type Boundary = (u64, u64, bool);

/// Timeslice bounds (docs/output-formats.md): `arange(start, end, size)`, the last cut at `end`.
#[must_use]
pub fn timeslice_boundaries(start_ns: u64, end_ns: u64, size_ns: u64) -> Vec<Boundary> {
    let mut out = Vec::new();
    if size_ns == 0 {
        return out;
    }
    let mut s = start_ns;
    while s < end_ns {
        let e = s.saturating_add(size_ns);
        out.push((s, e.min(end_ns), e <= end_ns));
        s = e;
    }
    out
}

/// `(lo, hi)`: indices of the in-window samples `start ≤ t ≤ end`.
fn in_window(ts: &[u64], w: &Window) -> (usize, usize) {
    (
        ts.partition_point(|&t| t < w.start_ns),
        ts.partition_point(|&t| t <= w.end_ns),
    )
}

/// Last sample before the window, else the first in-window sample.
fn reference(lo: usize, hi: usize) -> Option<usize> {
    if lo > 0 {
        Some(lo - 1)
    } else if lo < hi {
        Some(lo)
    } else {
        None
    }
}

/// Index of the last `t ≤ at` (searchsorted right − 1, clipped to 0).
fn at_or_before(ts: &[u64], at: u64) -> usize {
    ts.partition_point(|&t| t <= at).saturating_sub(1)
}

fn ns_to_s(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn slice_of(b: Boundary, values: SliceValues) -> Timeslice {
    Timeslice {
        start_ns: b.0,
        end_ns: b.1,
        is_complete: (!b.2).then_some(false),
        values,
    }
}

/// Gauge statistics and timeslices over the in-window samples; `None` if the window is empty.
#[must_use]
pub fn gauge_summary(s: &ScalarSeries, w: &Window) -> Option<(GaugeStats, Option<Vec<Timeslice>>)> {
    let (lo, hi) = in_window(&s.ts_ns, w);
    let values = s.values.get(lo..hi)?;
    let avg = mean(values)?;
    let std = std_ddof1(values)?;
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut p = [0.0; 9];
    for (slot, q) in p.iter_mut().zip(PERCENTILES) {
        *slot = percentile_sorted(&sorted, q)?;
    }
    let stats = GaugeStats {
        avg,
        min: *sorted.first()?,
        max: *sorted.last()?,
        std,
        p1: p[0],
        p5: p[1],
        p10: p[2],
        p25: p[3],
        p50: p[4],
        p75: p[5],
        p90: p[6],
        p95: p[7],
        p99: p[8],
    };
    // Gauge timeslices are omitted (None) with fewer than 2 samples or no non-empty slice.
    let slices = w.slice_ns.filter(|_| values.len() >= 2).and_then(|size| {
        let ts = s.ts_ns.get(lo..hi).unwrap_or(&[]);
        let bounds = timeslice_boundaries(w.start_ns, w.end_ns, size);
        let last = bounds.len().saturating_sub(1);
        let mut out = Vec::new();
        for (i, b) in bounds.into_iter().enumerate() {
            let a = ts.partition_point(|&t| t < b.0);
            let z = if i == last {
                ts.partition_point(|&t| t <= b.1)
            } else {
                ts.partition_point(|&t| t < b.1)
            };
            let Some(v) = values.get(a..z).filter(|v| !v.is_empty()) else {
                continue;
            };
            let (mn, mx) = v
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                    (a.min(x), b.max(x))
                });
            let avg = mean(v).unwrap_or(0.0);
            out.push(slice_of(
                b,
                SliceValues::Gauge {
                    avg,
                    min: mn,
                    max: mx,
                },
            ));
        }
        (!out.is_empty()).then_some(out)
    });
    Some((stats, slices))
}

/// Counter statistics and timeslices; `None` if the window holds no sample.
#[must_use]
pub fn counter_summary(
    s: &ScalarSeries,
    w: &Window,
) -> Option<(CounterStats, Option<Vec<Timeslice>>)> {
    let (lo, hi) = in_window(&s.ts_ns, w);
    let r = reference(lo, hi)?;
    if hi <= lo {
        return None;
    }
    let last = hi - 1;
    let (v_ref, v_last) = (*s.values.get(r)?, *s.values.get(last)?);
    let (t_ref, t_last) = (*s.ts_ns.get(r)?, *s.ts_ns.get(last)?);
    let total = (v_last - v_ref).max(0.0);
    let (t_from, t_to) = w.delta_span(t_ref, t_last);
    let dur = ns_to_s(t_to.saturating_sub(t_from));
    let rate = if dur > 0.0 { total / dur } else { 0.0 };
    let resets = s
        .values
        .get(lo..hi)
        .unwrap_or(&[])
        .windows(2)
        .filter(|p| p.get(1) < p.first())
        .count() as u32;
    let mut stats = CounterStats {
        total,
        rate,
        rate_avg: None,
        rate_min: None,
        rate_max: None,
        rate_std: None,
        resets,
    };
    let slices = w.slice_ns.map(|size| {
        // Points: the reference, then the in-window samples.
        let mut ts = vec![t_ref];
        let mut vs = vec![v_ref];
        ts.extend_from_slice(s.ts_ns.get(lo..hi).unwrap_or(&[]));
        vs.extend_from_slice(s.values.get(lo..hi).unwrap_or(&[]));
        if ts.len() < 2 {
            return Vec::new();
        }
        let value_at = |at: u64| vs.get(at_or_before(&ts, at)).copied().unwrap_or(0.0);
        timeslice_boundaries(w.start_ns, w.end_ns, size)
            .into_iter()
            .map(|b| {
                let total = (value_at(b.1) - value_at(b.0)).max(0.0);
                let d = ns_to_s(b.1 - b.0);
                let rate = if d > 0.0 { total / d } else { 0.0 };
                slice_of(b, SliceValues::Counter { total, rate })
            })
            .collect::<Vec<_>>()
    });
    if let Some(sl) = &slices {
        let rates: Vec<f64> = sl
            .iter()
            .filter(|t| t.is_complete.is_none())
            .filter_map(|t| match t.values {
                SliceValues::Counter { rate, .. } => Some(rate),
                _ => None,
            })
            .collect();
        if !rates.is_empty() {
            stats.rate_avg = mean(&rates);
            stats.rate_min = rates.iter().copied().reduce(f64::min);
            stats.rate_max = rates.iter().copied().reduce(f64::max);
            stats.rate_std = std_ddof1(&rates);
        }
    }
    Some((stats, slices))
}

/// Bucket deltas between two rows; `None` if any is negative.
fn bucket_deltas(h: &HistogramSeries, from: usize, to: usize) -> Option<Vec<f64>> {
    let (a, b) = (h.row(from), h.row(to));
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    (d.len() == h.les.len() && d.iter().all(|v| *v >= 0.0)).then_some(d)
}

fn bucket_counts(h: &HistogramSeries, deltas: &[f64]) -> BucketCounts {
    BucketCounts(
        h.le_text
            .iter()
            .cloned()
            .zip(deltas.iter().map(|d| d.round() as u64))
            .collect(),
    )
}

/// Histogram statistics, bucket deltas and timeslices; `None` if no sample is at or before the
/// window end.
#[must_use]
pub fn histogram_summary(
    h: &HistogramSeries,
    w: &Window,
) -> Option<(HistogramStats, Option<BucketCounts>, Option<Vec<Timeslice>>)> {
    let (lo, hi) = in_window(&h.ts_ns, w);
    // Final = last sample ≤ end; reference = last sample < start, else the first sample. With
    // only pre-window samples both are the same sample: `{count: 0}` (as AIPerf reports it).
    let last = hi.checked_sub(1)?;
    let r = lo.saturating_sub(1);
    let count_d = (h.counts.get(last)? - h.counts.get(r)?).max(0.0);
    let sum_d = (h.sums.get(last)? - h.sums.get(r)?).max(0.0);
    let deltas = bucket_deltas(h, r, last);
    let count = count_d as u64;
    if count == 0 {
        // No observations: `{count: 0}` and the (zero) bucket deltas, no timeslices.
        let buckets = deltas.map(|d| bucket_counts(h, &d));
        return Some((HistogramStats::default(), buckets, None));
    }
    let slices = w
        .slice_ns
        .filter(|_| last > r)
        .and_then(|size| histogram_slices(h, w, size));
    let (t_from, t_to) = w.delta_span(*h.ts_ns.get(r)?, *h.ts_ns.get(last)?);
    let dur = ns_to_s(t_to.saturating_sub(t_from));
    let estimates = deltas.as_ref().and_then(|d| {
        // Bucket means are learned from every sample from the reference on (to the window's
        // last sample under the phase-filtered rule).
        let mut rows = h.rows();
        if matches!(w.bounds, Bounds::Phase(_) | Bounds::PhaseRun(..)) {
            rows.truncate(hi);
        }
        let learned = learn_bucket_stats(&h.les, &h.sums, &h.counts, &rows, r);
        estimate_percentiles(&h.les, d, sum_d, count as f64, &learned)
    });
    let stats = HistogramStats {
        count,
        sum: Some(sum_d),
        avg: Some(sum_d / count as f64),
        count_rate: (dur > 0.0).then(|| count as f64 / dur),
        sum_rate: (dur > 0.0).then(|| sum_d / dur),
        estimates,
    };
    Some((stats, deltas.map(|d| bucket_counts(h, &d)), slices))
}

fn histogram_slices(h: &HistogramSeries, w: &Window, size: u64) -> Option<Vec<Timeslice>> {
    let mut out = Vec::new();
    for b in timeslice_boundaries(w.start_ns, w.end_ns, size) {
        let (i0, i1) = (at_or_before(&h.ts_ns, b.0), at_or_before(&h.ts_ns, b.1));
        let (Some(c0), Some(c1), Some(s0), Some(s1)) = (
            h.counts.get(i0),
            h.counts.get(i1),
            h.sums.get(i0),
            h.sums.get(i1),
        ) else {
            continue;
        };
        let (count, sum) = (c1 - c0, s1 - s0);
        if count < 0.0 || sum < 0.0 {
            continue;
        }
        let avg = if count > 0.0 { sum / count } else { 0.0 };
        let buckets = bucket_deltas(h, i0, i1).map(|d| bucket_counts(h, &d));
        out.push(slice_of(
            b,
            SliceValues::Histogram {
                count: count as u64,
                sum,
                avg,
                buckets,
            },
        ));
    }
    (!out.is_empty()).then_some(out)
}

/// Python-style `str(labels)` used to order series (empty for no labels).
fn labels_repr(labels: &[(String, String)]) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("'{k}': '{v}'"))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// Summarizes every series of every endpoint over `w`; metrics keyed (and so sorted) by name.
#[must_use]
pub fn summarize_metrics(store: &Store, w: &Window) -> BTreeMap<String, MetricSummary> {
    summarize_endpoints(&store.endpoints, w)
}

/// [`summarize_metrics`] of the given endpoints only (one endpoint: AIPerf's per-endpoint
/// `metrics` of a phase).
#[must_use]
pub fn summarize_endpoints<'a>(
    endpoints: impl IntoIterator<Item = &'a EndpointStore>,
    w: &Window,
) -> BTreeMap<String, MetricSummary> {
    let mut out: BTreeMap<String, MetricSummary> = BTreeMap::new();
    let mut order: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for ep in endpoints {
        let Some(ew) = w.for_endpoint(ep) else {
            continue;
        };
        let w = &ew;
        for ((name, labels), entry) in &ep.series {
            let (stats, buckets, timeslices) = match (&entry.data, entry.kind) {
                (SeriesData::Scalar(s), MetricType::Counter) => match counter_summary(s, w) {
                    Some((st, sl)) => (SeriesStats::Counter(st), None, sl),
                    None => continue,
                },
                (SeriesData::Scalar(s), _) => match gauge_summary(s, w) {
                    Some((st, sl)) => (SeriesStats::Gauge(st), None, sl),
                    None => continue,
                },
                (SeriesData::Histogram(h), _) => match histogram_summary(h, w) {
                    Some((st, b, sl)) => (SeriesStats::Histogram(st), b, sl),
                    None => continue,
                },
            };
            let metric = out.entry(name.clone()).or_insert_with(|| MetricSummary {
                kind: entry.kind.as_str(),
                description: entry.description.clone(),
                unit: infer_unit(name, &entry.description),
                series: Vec::new(),
            });
            order
                .entry(name.clone())
                .or_default()
                .push((ep.url.clone(), labels_repr(labels)));
            metric.series.push(SeriesSummary {
                endpoint_url: ep.url.clone(),
                labels: (!labels.is_empty()).then(|| labels.iter().cloned().collect()),
                stats,
                buckets,
                timeslices,
            });
        }
    }
    for (name, metric) in &mut out {
        let keys = order.remove(name).unwrap_or_default();
        let mut paired: Vec<_> = keys
            .into_iter()
            .zip(std::mem::take(&mut metric.series))
            .collect();
        paired.sort_by(|a, b| a.0.cmp(&b.0));
        metric.series = paired.into_iter().map(|(_, s)| s).collect();
    }
    out
}

/// `summary.endpoint_info` for every endpoint that was fetched at least once.
#[must_use]
pub fn endpoint_info(store: &Store) -> BTreeMap<String, EndpointInfo> {
    store
        .endpoints
        .iter()
        .filter_map(|ep| Some((ep.url.clone(), endpoint_info_in(ep, None)?)))
        .collect()
}

/// The collection metadata of one endpoint, of every fetch or of the fetches stamped inside
/// `range` (inclusive; AIPerf's per-phase `info`); `None` when no fetch counts.
#[must_use]
pub fn endpoint_info_in(ep: &EndpointStore, range: Option<(u64, u64)>) -> Option<EndpointInfo> {
    let keep = |t: &u64| range.is_none_or(|(a, b)| (a..=b).contains(t));
    let fetches: Vec<(u64, u64)> = ep
        .fetch_ts_ns
        .iter()
        .zip(&ep.fetch_latency_ns)
        .filter(|(t, _)| keep(t))
        .map(|(&t, &l)| (t, l))
        .collect();
    let first = fetches.iter().map(|f| f.0).min()?;
    let last = fetches.iter().map(|f| f.0).max()?;
    // AIPerf: the exact integer sum of the latencies (ns) over their count, then in ms.
    let lat_sum: u128 = fetches.iter().map(|f| u128::from(f.1)).sum();
    let mut updates: Vec<u64> = ep.update_ts_ns.iter().copied().filter(keep).collect();
    updates.sort_unstable();
    let (fu, lu) = (updates.first().copied(), updates.last().copied());
    let duration = match (fu, lu) {
        (Some(a), Some(b)) => ns_to_s(b - a),
        _ => 0.0,
    };
    let n = updates.len();
    // AIPerf: `np.median` of the gaps in ns, then in ms.
    let mut gaps: Vec<f64> = updates.windows(2).map(|p| (p[1] - p[0]) as f64).collect();
    gaps.sort_by(f64::total_cmp);
    Some(EndpointInfo {
        total_fetches: fetches.len() as u64,
        first_fetch_ns: first,
        last_fetch_ns: last,
        avg_fetch_latency_ms: lat_sum as f64 / fetches.len() as f64 / 1e6,
        unique_updates: n as u64,
        first_update_ns: fu,
        last_update_ns: lu,
        duration_seconds: duration,
        avg_update_interval_ms: (n > 1).then(|| duration * 1000.0 / (n - 1) as f64),
        median_update_interval_ms: percentile_sorted(&gaps, 50.0).map(|ns| ns / 1e6),
        malformed_lines: ep.malformed_lines,
    })
}

#[cfg(test)]
mod tests;
