//! Client-metric timeslices (`--slice-duration S`): `profile_export_aiperf_timeslices.json`
//! and `.csv`, AIPerf 0.13's `_compute_timeslices` and its two timeslice exporters.
//!
//! # Windows
//!
//! The grid starts at the earliest request start of the profiling records (`t0`) and covers
//! up to the latest start or end (`t1`): `n = floor((t1 − t0) / S) + 1` windows
//! `[t0 + i·S, t0 + (i+1)·S)`. A record belongs to the window its start falls in, so every
//! record is in exactly one. Windows without a record are left out (positions stay dense). A
//! window that reaches past `t1` ends at `t1` and is marked `is_complete: false`; complete
//! windows have no `is_complete` key. Each window's metrics are those of its records alone,
//! computed by the same [`Accumulator`] as the whole run, except two families (AIPerf 0.13's
//! timeslice rule):
//!
//! - the sweep-line (time-weighted) metrics come from the curves of *every* record of the run,
//!   windowed to `[window start, window end]`: a request that runs across a window's edge
//!   counts for the part inside it, and one that started in an earlier window still counts;
//! - `credit_to_start_latency` and `effective_latency` are left out (AIPerf adds them to the
//!   whole-run results only).
//!
//! # Format
//!
//! JSON: `{"timeslices": [{"start_ns", "end_ns", "is_complete"?, "<tag>": {unit, avg, …}}…],
//! "input_config": {…}}`, 2-space indent. CSV: `Timeslice,Start_NS,End_NS,Metric,Unit,Stat,Value`,
//! one row per window, metric (sorted by tag) and stat present (avg, min, max, sum, p1…p99,
//! std), the value as `%.2f`, CRLF line ends.

use serde_json::{Map, Value};

use crate::aggregate::stats::PERCENTILE_KEYS;
use crate::aggregate::{
    Accumulator, MetricConfig, MetricId, MetricResult, RecordMetrics, ResultValue,
};
use ringperf_wire::record::RecordFacts;

/// One window and the metrics of the records that started in it.
#[derive(Debug)]
pub struct Timeslice {
    /// Wall-clock epoch ns.
    pub start_ns: u64,
    /// Wall-clock epoch ns; the end of the records' span for an incomplete last window.
    pub end_ns: u64,
    /// `false` for a window cut short by the end of the run.
    pub is_complete: bool,
    /// Indices (in the order given) of the records in this window.
    pub records: Vec<usize>,
}

/// The windows of records whose wall-clock `(start, end)` ns are `spans`, `size_ns` long
/// (AIPerf's grid, see the module docs). Empty when there is no record or `size_ns` is 0.
pub fn windows(spans: &[(u64, u64)], size_ns: u64) -> Vec<Timeslice> {
    let Some(t0) = spans.iter().map(|s| s.0).min() else {
        return Vec::new();
    };
    if size_ns == 0 {
        return Vec::new();
    }
    let t1 = spans.iter().map(|s| s.0.max(s.1)).max().unwrap_or(t0);
    let n = (t1 - t0) / size_ns + 1;
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); n as usize];
    for (i, s) in spans.iter().enumerate() {
        let bin = ((s.0 - t0) / size_ns).min(n - 1);
        members[bin as usize].push(i);
    }
    members
        .into_iter()
        .enumerate()
        .filter(|(_, m)| !m.is_empty())
        .map(|(i, records)| {
            let start_ns = t0 + i as u64 * size_ns;
            let raw_end = start_ns + size_ns;
            let is_complete = raw_end <= t1;
            Timeslice {
                start_ns,
                end_ns: if is_complete { raw_end } else { t1 },
                is_complete,
                records,
            }
        })
        .collect()
}

/// Keeps the profiling records of a run with `--slice-duration` and summarizes each window.
#[derive(Debug)]
pub struct TimesliceCollector {
    cfg: MetricConfig,
    size_ns: u64,
    records: Vec<(RecordFacts, RecordMetrics)>,
}

/// A window with its metric results.
#[derive(Debug)]
pub struct SliceResult {
    /// The window.
    pub slice: Timeslice,
    /// Visible metric results of its records.
    pub results: Vec<MetricResult>,
}

impl TimesliceCollector {
    /// Windows of `size_ns`; metrics as `cfg` defines them.
    pub fn new(cfg: MetricConfig, size_ns: u64) -> Self {
        Self {
            cfg,
            size_ns,
            records: Vec::new(),
        }
    }

    /// Keeps one profiling record.
    pub fn add(&mut self, f: &RecordFacts, m: &RecordMetrics) {
        self.records.push((f.clone(), m.clone()));
    }

    /// Every non-empty window with its metrics.
    pub fn finish(&self) -> Vec<SliceResult> {
        let spans: Vec<(u64, u64)> = self
            .records
            .iter()
            .map(|(f, _)| (f.request_start_wall_ns, f.request_end_wall_ns))
            .collect();
        let slices = windows(&spans, self.size_ns);
        // The sweep-line curves of the whole run, cut to each window.
        let mut all = Accumulator::new(self.cfg.clone());
        for (f, m) in &self.records {
            all.add(f, m);
        }
        let bounds: Vec<(u64, u64)> = slices.iter().map(|s| (s.start_ns, s.end_ns)).collect();
        slices
            .into_iter()
            .zip(all.sweep_windows(&bounds))
            .map(|(slice, sweep)| {
                let mut acc = Accumulator::new(self.cfg.clone());
                for &i in &slice.records {
                    let (f, m) = &self.records[i];
                    acc.add(f, m);
                }
                let results = acc
                    .finish()
                    .results
                    .into_iter()
                    .filter(in_timeslice)
                    .chain(sweep.into_iter().filter(|r| !r.def.hidden()))
                    .collect();
                SliceResult { slice, results }
            })
            .collect()
    }
}

/// Whether a window's own result is exported: visible, not time-weighted (those come from the
/// whole run's curves), not one of the whole-run-only metrics (the two credit latencies, and
/// the replay schedule family: anchoring each slice at its own least-late request would hide
/// the run's drift).
fn in_timeslice(r: &MetricResult) -> bool {
    !r.def.hidden()
        && !matches!(r.value, ResultValue::TimeWeighted(_))
        && !matches!(
            r.def.id,
            MetricId::CreditToStartLatency
                | MetricId::EffectiveLatency
                | MetricId::ReplaySchedLagP50
                | MetricId::ReplaySchedLagP90
                | MetricId::ReplaySchedLagP99
                | MetricId::ReplaySchedDegraded
        )
}

/// The timeslice JSON document.
pub fn timeslices_json(slices: &[SliceResult], input_config: &Value) -> Value {
    let list = slices
        .iter()
        .map(|s| {
            let mut m = Map::new();
            m.insert("start_ns".into(), Value::from(s.slice.start_ns));
            m.insert("end_ns".into(), Value::from(s.slice.end_ns));
            if !s.slice.is_complete {
                m.insert("is_complete".into(), Value::from(false));
            }
            for r in &s.results {
                m.insert(r.tag().into_owned(), super::json::metric_json(r));
            }
            Value::Object(m)
        })
        .collect();
    let mut doc = Map::new();
    doc.insert("timeslices".into(), Value::Array(list));
    doc.insert("input_config".into(), input_config.clone());
    Value::Object(doc)
}

/// The timeslice JSON text (2-space indent, trailing newline as the summary JSON).
pub fn timeslices_json_string(slices: &[SliceResult], input_config: &Value) -> String {
    let mut s = serde_json::to_string_pretty(&timeslices_json(slices, input_config))
        .unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

/// The timeslice CSV text.
pub fn timeslices_csv(slices: &[SliceResult]) -> String {
    let mut out = String::from("Timeslice,Start_NS,End_NS,Metric,Unit,Stat,Value\r\n");
    for (index, s) in slices.iter().enumerate() {
        let mut results: Vec<&MetricResult> = s.results.iter().collect();
        results.sort_by(|a, b| a.tag().cmp(&b.tag()));
        for r in results {
            let d = r.def;
            let header = r.header();
            let unit = d.shown_unit();
            let mut stats: Vec<(&str, f64)> = Vec::new();
            // Time-weighted (sweep-line) values are already in the display unit.
            let display_ready = matches!(r.value, ResultValue::TimeWeighted(_));
            let shown = |v: f64| if display_ready { v } else { d.to_display(v) };
            match &r.value {
                ResultValue::TimeWeighted(t) => {
                    stats.extend([
                        ("avg", t.avg),
                        ("min", t.min),
                        ("max", t.max),
                        ("p50", t.p50),
                        ("p90", t.p90),
                        ("p95", t.p95),
                        ("p99", t.p99),
                        ("std", t.std),
                    ]);
                }
                ResultValue::Scalar(v) => stats.push(("avg", *v)),
                ResultValue::Share { avg, .. } => stats.push(("avg", *avg)),
                ResultValue::Dist(st) => {
                    stats.extend([
                        ("avg", st.avg),
                        ("min", st.min),
                        ("max", st.max),
                        ("sum", st.sum),
                    ]);
                    stats.extend(PERCENTILE_KEYS.iter().copied().zip(st.pct));
                    if let Some(std) = st.std {
                        stats.push(("std", std));
                    }
                }
            }
            for (stat, v) in stats {
                let cells = [
                    index.to_string(),
                    s.slice.start_ns.to_string(),
                    s.slice.end_ns.to_string(),
                    super::csv::field(&header),
                    super::csv::field(unit.as_str()),
                    stat.to_string(),
                    super::csv::fmt2(shown(v)),
                ];
                out.push_str(&cells.join(","));
                out.push_str("\r\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000;

    fn bounds(w: &[Timeslice]) -> Vec<(u64, u64, bool, Vec<usize>)> {
        w.iter()
            .map(|t| (t.start_ns, t.end_ns, t.is_complete, t.records.clone()))
            .collect()
    }

    /// Hand-worked: t0 = 100, t1 = max end = 3_450, S = 1_000 → n = floor(3_350/1_000)+1 = 4
    /// windows [100,1100) [1100,2100) [2100,3100) [3100,4100→3450). Starts 100, 1_099 → w0;
    /// 1_100 → w1 (left-closed); nothing starts in w2 (skipped); 3_100 → w3, cut at 3_450.
    #[test]
    fn windows_hand_checked() {
        let spans = [(1_100, 1_500), (100, 900), (3_100, 3_200), (1_099, 3_450)];
        let w = windows(&spans, S);
        assert_eq!(
            bounds(&w),
            [
                (100, 1_100, true, vec![1, 3]),
                (1_100, 2_100, true, vec![0]),
                (3_100, 3_450, false, vec![2]),
            ]
        );
    }

    /// A span that ends exactly on a boundary: t1 = 2_100 = t0 + 2·S → n = 3; the third
    /// window [2100, 3100) has no start in it; the first two are complete.
    #[test]
    fn window_end_on_a_boundary() {
        let w = windows(&[(100, 2_100), (1_500, 1_600)], S);
        assert_eq!(
            bounds(&w),
            [(100, 1_100, true, vec![0]), (1_100, 2_100, true, vec![1])]
        );
        // Shorter than one window: a single incomplete window.
        let w = windows(&[(5, 50), (7, 9)], S);
        assert_eq!(bounds(&w), [(5, 50, false, vec![0, 1])]);
        assert!(windows(&[], S).is_empty());
        assert!(windows(&[(1, 2)], 0).is_empty());
    }

    /// Two requests, windows of 10 µs from t0 = W: A runs [W, W+15 µs], B [W+12 µs, W+18 µs].
    /// Grid: t1 = W+18 µs → 2 windows, [W, W+10) with A and [W+10, W+18] (cut) with B. The
    /// time-weighted concurrency of a window comes from both requests' curve cut to the window:
    /// window 0 is all A → 1; window 1 has A alone for 2 µs, A and B for 3 µs, B alone for 3 µs
    /// → (2·1 + 3·2 + 3·1) / 8 = 1.375 (B's own curve alone would give 6/8). Neither window
    /// carries `credit_to_start_latency` or `effective_latency`; each counts its own request.
    #[test]
    fn sweep_metrics_cut_the_whole_runs_curve_to_each_window() {
        use crate::aggregate::record_metrics;
        use crate::aggregate::testing::facts;
        const W: u64 = 1_700_000_000_000_000_000;
        let cfg = MetricConfig::new(true, false);
        let mut c = TimesliceCollector::new(cfg.clone(), 10_000);
        for (i, (a, z)) in [(0, 15_000), (12_000, 18_000)].into_iter().enumerate() {
            let f = RecordFacts {
                session_num: i as u64,
                request_start_wall_ns: W + a,
                request_end_wall_ns: W + z,
                ..facts()
            };
            c.add(&f, &record_metrics(&cfg, &f));
        }
        let slices = c.finish();
        let shape: Vec<_> = slices
            .iter()
            .map(|s| {
                (
                    s.slice.start_ns - W,
                    s.slice.end_ns - W,
                    s.slice.is_complete,
                )
            })
            .collect();
        assert_eq!(shape, [(0, 10_000, true), (10_000, 18_000, false)]);
        let find = |s: &SliceResult, id: MetricId| {
            s.results
                .iter()
                .find(|r| r.def.id == id)
                .map(|r| r.value.clone())
        };
        let concurrency = |s: &SliceResult| match find(s, MetricId::EffectiveConcurrency) {
            Some(ResultValue::TimeWeighted(t)) => t.avg,
            other => panic!("effective_concurrency: {other:?}"),
        };
        assert!((concurrency(&slices[0]) - 1.0).abs() < 1e-12);
        assert!((concurrency(&slices[1]) - 1.375).abs() < 1e-12);
        for s in &slices {
            assert_eq!(
                find(s, MetricId::RequestCount),
                Some(ResultValue::Scalar(1.0))
            );
            assert!(find(s, MetricId::CreditToStartLatency).is_none());
            assert!(find(s, MetricId::EffectiveLatency).is_none());
            // One result per metric: the window's own time-weighted results are not kept.
            let mut tags: Vec<_> = s.results.iter().map(MetricResult::tag).collect();
            let n = tags.len();
            tags.sort();
            tags.dedup();
            assert_eq!(tags.len(), n);
        }
    }

    /// Every record lands in exactly one window, whatever the spans.
    #[test]
    fn every_record_in_exactly_one_window() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for size in [1, 7, 1_000, 1 << 40] {
            let spans: Vec<(u64, u64)> = (0..500)
                .map(|_| {
                    let s = 1_700_000_000_000_000_000 + next() % 10_000_000;
                    (s, s + next() % 3_000_000)
                })
                .collect();
            let w = windows(&spans, size);
            let mut seen = vec![0u32; spans.len()];
            for t in &w {
                assert!(t.start_ns < t.end_ns || !t.is_complete);
                for &i in &t.records {
                    seen[i] += 1;
                    assert!(spans[i].0 >= t.start_ns && spans[i].0 < t.start_ns + size);
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "size {size}");
        }
    }
}
