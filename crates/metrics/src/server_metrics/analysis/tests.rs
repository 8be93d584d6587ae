//! Window statistics and timeslices over hand-built stores: hand-computed values and property
//! tests.

use super::*;
use crate::server_metrics::store::EndpointStore;
use ringperf_wire::prom::parse_scrape;

const S: u64 = 1_000_000_000;

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-9, "{a} vs {b}");
}

fn scalar(ts: &[u64], values: &[f64]) -> ScalarSeries {
    ScalarSeries {
        ts_ns: ts.to_vec(),
        values: values.to_vec(),
    }
}

#[test]
fn boundaries_match_spec_examples() {
    let b = timeslice_boundaries(0, 10 * S, 3 * S);
    assert_eq!(
        b,
        vec![
            (0, 3 * S, true),
            (3 * S, 6 * S, true),
            (6 * S, 9 * S, true),
            (9 * S, 10 * S, false)
        ]
    );
    assert_eq!(timeslice_boundaries(0, 9 * S, 3 * S).len(), 3);
    assert!(timeslice_boundaries(0, 9 * S, 3 * S).iter().all(|b| b.2));
    assert_eq!(
        timeslice_boundaries(0, 2 * S, 3 * S),
        vec![(0, 2 * S, false)]
    );
    assert!(timeslice_boundaries(5, 5, 3).is_empty());
}

#[test]
fn gauge_window_stats_and_slices() {
    let s = scalar(&[5, 10, 20, 30, 40], &[100.0, 1.0, 2.0, 3.0, 10.0]);
    let w = Window {
        start_ns: 10,
        end_ns: 40,
        slice_ns: Some(15),
        bounds: Bounds::Exact,
    };
    let (g, slices) = gauge_summary(&s, &w).unwrap();
    // In-window values 1, 2, 3, 10 (the sample at t=5 is before the window).
    assert_eq!((g.avg, g.min, g.max), (4.0, 1.0, 10.0));
    close(g.std, (50.0f64 / 3.0).sqrt());
    close(g.p25, 1.75);
    close(g.p50, 2.5);
    close(g.p99, 9.79);
    let slices = slices.unwrap();
    assert_eq!(slices.len(), 2);
    assert_eq!(
        slices[0].values,
        SliceValues::Gauge {
            avg: 1.5,
            min: 1.0,
            max: 2.0
        }
    );
    // The last slice includes the sample exactly at the window end.
    assert_eq!(
        slices[1].values,
        SliceValues::Gauge {
            avg: 6.5,
            min: 3.0,
            max: 10.0
        }
    );
    assert_eq!(slices[1].is_complete, None);
}

#[test]
fn gauge_single_sample_and_empty_window() {
    let s = scalar(&[10], &[7.0]);
    let w = Window {
        start_ns: 0,
        end_ns: 20,
        slice_ns: Some(5),
        bounds: Bounds::Exact,
    };
    let (g, slices) = gauge_summary(&s, &w).unwrap();
    assert_eq!((g.avg, g.std, g.p1, g.p99), (7.0, 0.0, 7.0, 7.0));
    assert_eq!(slices, None, "gauge timeslices need two samples");
    let empty = Window {
        start_ns: 11,
        end_ns: 20,
        slice_ns: None,
        bounds: Bounds::Exact,
    };
    assert!(gauge_summary(&s, &empty).is_none());
}

#[test]
fn counter_total_rate_reset_and_slices() {
    let s = scalar(&[0, 10 * S, 20 * S, 30 * S], &[100.0, 110.0, 105.0, 130.0]);
    let w = Window {
        start_ns: 5 * S,
        end_ns: 30 * S,
        slice_ns: Some(10 * S),
        bounds: Bounds::Exact,
    };
    let (c, slices) = counter_summary(&s, &w).unwrap();
    // Reference is the sample at t=0 (before the window): 130 − 100 over 30 s; one reset.
    assert_eq!((c.total, c.rate, c.resets), (30.0, 1.0, 1));
    let slices = slices.unwrap();
    let got: Vec<_> = slices
        .iter()
        .map(|t| (t.start_ns, t.end_ns, t.is_complete))
        .collect();
    assert_eq!(
        got,
        vec![
            (5 * S, 15 * S, None),
            (15 * S, 25 * S, None),
            (25 * S, 30 * S, Some(false))
        ]
    );
    assert_eq!(
        slices[0].values,
        SliceValues::Counter {
            total: 10.0,
            rate: 1.0
        }
    );
    // The drop 110 → 105 is a reset: clamped to 0.
    assert_eq!(
        slices[1].values,
        SliceValues::Counter {
            total: 0.0,
            rate: 0.0
        }
    );
    // Partial slice normalized by its actual 5 s duration.
    assert_eq!(
        slices[2].values,
        SliceValues::Counter {
            total: 25.0,
            rate: 5.0
        }
    );
    // rate_* over the two complete slices only: rates 1 and 0.
    assert_eq!(
        (c.rate_avg, c.rate_min, c.rate_max),
        (Some(0.5), Some(0.0), Some(1.0))
    );
    close(c.rate_std.unwrap(), 0.5f64.sqrt());
}

#[test]
fn counter_reset_no_baseline_single_sample_empty() {
    let reset = scalar(&[0, 10 * S], &[100.0, 50.0]);
    let w = Window {
        start_ns: 0,
        end_ns: 10 * S,
        slice_ns: None,
        bounds: Bounds::Exact,
    };
    let (c, sl) = counter_summary(&reset, &w).unwrap();
    // No sample before the window: the first in-window sample is the reference; reset → 0.
    assert_eq!((c.total, c.rate, c.rate_avg, sl), (0.0, 0.0, None, None));
    let one = scalar(&[5 * S], &[42.0]);
    let (c, _) = counter_summary(&one, &w).unwrap();
    assert_eq!((c.total, c.rate), (0.0, 0.0));
    let w2 = Window {
        start_ns: 6 * S,
        end_ns: 9 * S,
        slice_ns: None,
        bounds: Bounds::Exact,
    };
    assert!(counter_summary(&one, &w2).is_none());
}

fn hist(ts: &[u64], counts: &[f64], sums: &[f64], rows: &[[f64; 2]]) -> HistogramSeries {
    HistogramSeries {
        les: vec![1.0, f64::INFINITY],
        le_text: vec!["1".into(), "+Inf".into()],
        ts_ns: ts.to_vec(),
        sums: sums.to_vec(),
        counts: counts.to_vec(),
        buckets: rows.iter().flatten().copied().collect(),
    }
}

#[test]
fn histogram_deltas_rates_estimates_and_slices() {
    let h = hist(
        &[0, 10 * S, 20 * S],
        &[2.0, 6.0, 10.0],
        &[1.0, 5.0, 13.0],
        &[[1.0, 2.0], [3.0, 6.0], [5.0, 10.0]],
    );
    let w = Window {
        start_ns: 5 * S,
        end_ns: 20 * S,
        slice_ns: Some(10 * S),
        bounds: Bounds::Exact,
    };
    let (st, buckets, slices) = histogram_summary(&h, &w).unwrap();
    assert_eq!(st.count, 8);
    assert_eq!((st.sum, st.avg), (Some(12.0), Some(1.5)));
    assert_eq!((st.count_rate, st.sum_rate), (Some(0.4), Some(0.6)));
    assert_eq!(
        buckets.unwrap().0,
        vec![("1".to_owned(), 4), ("+Inf".to_owned(), 8)]
    );
    // No single-bucket interval → nothing learned. Finite: 4 uniform points in [0,1] at
    // .125/.375/.625/.875 (sum 2 = 12 − 10, no correction); +Inf: sum 10 over 4 → avg 2.5,
    // linspace(1, 4, 4) = 1, 2, 3, 4.
    let e = st.estimates.unwrap();
    close(e[0], 0.125 + 0.07 * 0.25);
    close(e[4], 0.875 + 0.5 * 0.125);
    close(e[8], 3.93);
    let slices = slices.unwrap();
    assert_eq!(slices.len(), 2);
    assert_eq!(
        slices[0].values,
        SliceValues::Histogram {
            count: 4,
            sum: 4.0,
            avg: 1.0,
            buckets: Some(BucketCounts(vec![("1".into(), 2), ("+Inf".into(), 4)]))
        }
    );
    assert_eq!(slices[1].is_complete, Some(false));
    let SliceValues::Histogram {
        count, sum, avg, ..
    } = &slices[1].values
    else {
        panic!()
    };
    assert_eq!((*count, *sum, *avg), (4, 8.0, 2.0));
}

#[test]
fn histogram_no_observations_and_reset() {
    let flat = hist(
        &[0, 10],
        &[3.0, 3.0],
        &[2.0, 2.0],
        &[[1.0, 3.0], [1.0, 3.0]],
    );
    let w = Window {
        start_ns: 0,
        end_ns: 10,
        slice_ns: None,
        bounds: Bounds::Exact,
    };
    let (st, buckets, _) = histogram_summary(&flat, &w).unwrap();
    assert_eq!(
        serde_json::to_string(&SeriesStats::Histogram(st)).unwrap(),
        r#"{"count":0}"#
    );
    assert_eq!(
        buckets.unwrap().0,
        vec![("1".to_owned(), 0), ("+Inf".to_owned(), 0)]
    );
    // Only a sample before the window: reference and final coincide → count 0.
    let late = Window {
        start_ns: 20,
        end_ns: 30,
        slice_ns: None,
        bounds: Bounds::Exact,
    };
    let (st, buckets, _) = histogram_summary(&flat, &late).unwrap();
    assert_eq!((st.count, buckets.map(|b| b.0.len())), (0, Some(2)));
    assert!(
        histogram_summary(
            &flat,
            &Window {
                start_ns: 0,
                end_ns: 0,
                slice_ns: None,
                bounds: Bounds::Exact,
            }
        )
        .is_some()
    );
    let before = Window {
        start_ns: 0,
        end_ns: 5,
        slice_ns: None,
        bounds: Bounds::Exact,
    };
    let only_later = hist(&[10], &[1.0], &[1.0], &[[1.0, 1.0]]);
    assert!(histogram_summary(&only_later, &before).is_none());
    // A bucket going backwards: buckets omitted, percentiles skipped, count/sum clamped.
    let reset = hist(
        &[0, 10],
        &[5.0, 6.0],
        &[9.0, 1.0],
        &[[4.0, 5.0], [1.0, 6.0]],
    );
    let (st, buckets, _) = histogram_summary(&reset, &w).unwrap();
    assert_eq!((st.count, st.sum, st.estimates), (1, Some(0.0), None));
    assert!(buckets.is_none());
}

#[test]
fn endpoint_info_intervals() {
    let mut store = Store::default();
    let ep = store.endpoint_mut("http://h:1/metrics");
    for (t, lat, dup) in [(1, 2, false), (2, 4, false), (3, 6, true), (5, 8, false)] {
        ep.record_fetch(t * S, lat * 1_000_000, dup);
    }
    let info = &endpoint_info(&store)["http://h:1/metrics"];
    assert_eq!((info.total_fetches, info.unique_updates), (4, 3));
    assert_eq!((info.first_fetch_ns, info.last_fetch_ns), (S, 5 * S));
    assert_eq!(info.avg_fetch_latency_ms, 5.0);
    assert_eq!(info.duration_seconds, 4.0);
    assert_eq!(info.avg_update_interval_ms, Some(2000.0));
    assert_eq!(info.median_update_interval_ms, Some(2000.0));
}

#[test]
fn summarize_sorts_metrics_and_series() {
    let mut store = Store::default();
    let page = b"# HELP b_seconds B.\n# TYPE b_seconds gauge\nb_seconds{x=\"2\"} 1\nb_seconds{x=\"10\"} 3\n\
        # TYPE a_requests_total counter\na_requests_total 4\n";
    for url in ["http://z:1/metrics", "http://a:1/metrics"] {
        let ep: &mut EndpointStore = store.endpoint_mut(url);
        ep.record_fetch(10, 1, false);
        ep.insert(10, &parse_scrape(page).unwrap());
    }
    let w = Window::profiling(&store, 0, 20, None);
    let m = summarize_metrics(&store, &w);
    assert_eq!(m.keys().collect::<Vec<_>>(), ["a_requests", "b_seconds"]);
    let b = &m["b_seconds"];
    assert_eq!(
        (b.kind, b.unit, b.description.as_str()),
        ("gauge", Some("seconds"), "B.")
    );
    let order: Vec<(String, String)> = b
        .series
        .iter()
        .map(|s| {
            (
                s.endpoint_url.clone(),
                s.labels.as_ref().unwrap()["x"].clone(),
            )
        })
        .collect();
    // str(labels) ordering: "{'x': '10'}" < "{'x': '2'}".
    let want = [
        ("http://a:1/metrics", "10"),
        ("http://a:1/metrics", "2"),
        ("http://z:1/metrics", "10"),
        ("http://z:1/metrics", "2"),
    ];
    assert_eq!(order, want.map(|(a, b)| (a.to_owned(), b.to_owned())));
    let json = serde_json::to_value(&m["a_requests"]).unwrap();
    assert_eq!(json["type"], "counter");
    assert_eq!(json["unit"], "requests");
    assert!(json["series"][0].get("labels").is_none());
    assert_eq!(
        json["series"][0]["stats"],
        serde_json::json!({"total": 0.0, "rate": 0.0})
    );
}

proptest::proptest! {
    #[test]
    fn window_functions_never_panic(
        mut ts in proptest::collection::vec(0u64..100, 0..12),
        vals in proptest::collection::vec(-5.0f64..5.0, 12),
        start in 0u64..100,
        len in 0u64..100,
        slice in proptest::option::of(1u64..40),
    ) {
        ts.sort_unstable();
        let n = ts.len();
        let s = scalar(&ts, &vals[..n]);
        let w = Window { start_ns: start, end_ns: start + len, slice_ns: slice, bounds: Bounds::Exact };
        let g = gauge_summary(&s, &w);
        let c = counter_summary(&s, &w);
        proptest::prop_assert_eq!(g.is_some(), c.is_some());
        if let Some((c, _)) = c {
            proptest::prop_assert!(c.total >= 0.0 && c.rate >= 0.0);
        }
        let rows: Vec<[f64; 2]> = vals[..n].iter().map(|v| [v.abs(), v.abs() * 2.0]).collect();
        let h = hist(&ts, &vals[..n], &vals[..n], &rows);
        let _ = histogram_summary(&h, &w);
    }
}

#[test]
fn untyped_metrics_export_as_gauges() {
    let mut store = Store::default();
    store
        .endpoint_mut("u")
        .insert(5, &parse_scrape(b"stray 3\n").unwrap());
    let m = summarize_metrics(
        &store,
        &Window {
            start_ns: 0,
            end_ns: 9,
            slice_ns: None,
            bounds: Bounds::Exact,
        },
    );
    assert_eq!(m["stray"].kind, "unknown");
    let json = serde_json::to_value(&m["stray"]).unwrap();
    assert_eq!(json["type"], "gauge");
    assert_eq!(json["series"][0]["stats"]["avg"], 3.0);
}

/// A live store: every fetch is stored, duplicates included.
fn fetched(fetches: &[(u64, &[u8])]) -> Store {
    let mut store = Store::default();
    let ep = store.endpoint_mut("http://h:1/metrics");
    for (t, page) in fetches {
        let dup = ep.check_duplicate(page);
        ep.record_fetch(t * S, 1, dup);
        ep.insert(t * S, &parse_scrape(page).unwrap());
    }
    store
}

#[test]
fn live_window_runs_from_the_first_fetch_in_the_phase_to_the_final_fetch() {
    let idle: &[u8] = b"# TYPE c_total counter\nc_total 0\n# TYPE g gauge\ng 0\n";
    let busy: &[u8] = b"# TYPE c_total counter\nc_total 6\n# TYPE g gauge\ng 3\n";
    // Baseline at 1 s, a duplicate at 2 s, the phase runs 3–6 s, the final scrape (a duplicate)
    // at 7 s after the flush period.
    let store = fetched(&[(1, idle), (2, idle), (4, busy), (5, busy), (7, busy)]);
    let w = Window::profiling(&store, 3 * S, 6 * S, Some(S));
    assert_eq!((w.end_ns, w.bounds), (7 * S, Bounds::Fetches));
    let ew = w.for_endpoint(&store.endpoints[0]).unwrap();
    assert_eq!((ew.start_ns, ew.end_ns), (4 * S, 7 * S));
    let m = summarize_metrics(&store, &w);
    let c = &m["c"].series[0];
    let SeriesStats::Counter(cs) = &c.stats else {
        panic!("counter")
    };
    // Reference = the duplicate fetch at 2 s, last = the final fetch at 7 s: 6 / 5 s.
    assert_eq!((cs.total, cs.rate), (6.0, 1.2));
    let bounds: Vec<_> = c
        .timeslices
        .as_ref()
        .unwrap()
        .iter()
        .map(|t| (t.start_ns / S, t.end_ns / S, t.is_complete))
        .collect();
    assert_eq!(bounds, [(4, 5, None), (5, 6, None), (6, 7, None)]);
    // The gauge counts every fetch of [4 s, 7 s]: 3, 3, 3 (two of them duplicates).
    let SeriesStats::Gauge(g) = &m["g"].series[0].stats else {
        panic!("gauge")
    };
    assert_eq!((g.avg, g.std, g.min), (3.0, 0.0, 3.0));
    // An endpoint without a fetch in the window is left out.
    let late = Window::profiling(&store, 8 * S, 9 * S, None);
    assert!(summarize_metrics(&store, &late).is_empty());
}

#[test]
fn held_window_reads_the_reference_at_its_start_and_the_last_value_at_its_end() {
    let idle: &[u8] = b"# TYPE c_total counter\nc_total 0\n";
    let busy: &[u8] = b"# TYPE c_total counter\nc_total 6\n";
    // Unique updates only (a JSONL): 0 at 1 s, 6 at 4 s; the window is [3 s, 7 s].
    let store = fetched(&[(1, idle), (4, busy)]);
    let w = Window {
        start_ns: 3 * S,
        end_ns: 7 * S,
        slice_ns: None,
        bounds: Bounds::Held,
    };
    let m = summarize_metrics(&store, &w);
    let SeriesStats::Counter(cs) = &m["c"].series[0].stats else {
        panic!("counter")
    };
    assert_eq!((cs.total, cs.rate), (6.0, 1.5));
    let exact = Window {
        bounds: Bounds::Exact,
        ..w
    };
    let SeriesStats::Counter(cs) = &summarize_metrics(&store, &exact)["c"].series[0].stats else {
        panic!("counter")
    };
    assert_eq!((cs.total, cs.rate), (6.0, 2.0));
}

/// A live store whose fetches carry the phase they were sent in.
fn tagged(fetches: &[(u64, Option<Phase>, String)]) -> Store {
    let mut store = Store::default();
    let ep = store.endpoint_mut("http://h:1/metrics");
    for (t, phase, page) in fetches {
        let dup = ep.check_duplicate(page.as_bytes());
        ep.record_phase_fetch(*t, 1, dup, *phase);
        ep.insert(*t, &parse_scrape(page.as_bytes()).unwrap());
    }
    store
}

/// A page: counter `c`, gauge `g`, histogram `h` with observations `n` below 0.1 and `m` in
/// (0.1, 1], summing to `sum`.
fn page(c: f64, g: f64, n: f64, m: f64, sum: f64) -> String {
    format!(
        "# TYPE c_total counter\nc_total {c}\n# TYPE g gauge\ng {g}\n# TYPE h histogram\n\
         h_bucket{{le=\"0.1\"}} {n}\nh_bucket{{le=\"1\"}} {}\nh_bucket{{le=\"+Inf\"}} {}\n\
         h_sum {sum}\nh_count {}\n",
        n + m,
        n + m,
        n + m
    )
}

#[test]
fn warmup_window_is_the_fetches_sent_during_warmup() {
    let (w, p) = (Some(Phase::Warmup), Some(Phase::Profiling));
    // Baseline (no phase) at 1 s; warmup runs 1.5–3.5 s: its start scrape answers at 2 s, a
    // periodic one at 3 s, and the end-of-warmup scrape, sent at 3.5 s, answers at 4 s. A scrape
    // between the phases (5 s), profiling's at 6 and 7 s, the final one at 9 s.
    let fetches = [
        (S, None, page(0.0, 1.0, 0.0, 0.0, 0.0)),
        (2 * S, w, page(0.0, 1.0, 0.0, 0.0, 0.0)),
        (3 * S, w, page(2.0, 2.0, 1.0, 1.0, 0.55)),
        (4 * S, w, page(4.0, 1.0, 2.0, 2.0, 1.1)),
        (5 * S, None, page(4.0, 0.0, 2.0, 2.0, 1.1)),
        (6 * S, p, page(7.0, 5.0, 2.0, 9.0, 6.0)),
        (7 * S, p, page(9.0, 5.0, 2.0, 20.0, 15.0)),
        (9 * S, p, page(10.0, 0.0, 2.0, 21.0, 15.5)),
    ];
    let store = tagged(&fetches);
    let win = Window::warmup(&store, 3 * S / 2, 7 * S / 2, Some(S));
    // The window reaches the end-of-warmup scrape, past the phase's own end.
    assert_eq!(
        (win.start_ns, win.end_ns, win.bounds),
        (3 * S / 2, 4 * S, Bounds::Phase(Phase::Warmup))
    );
    let ew = win.for_endpoint(&store.endpoints[0]).unwrap();
    assert_eq!((ew.start_ns, ew.end_ns), (2 * S, 4 * S));
    let m = summarize_metrics(&store, &win);
    // Counter: reference = the baseline (0) at 1 s, last = 4 at 4 s → 4 over 3 s.
    let c = &m["c"].series[0];
    let SeriesStats::Counter(cs) = &c.stats else {
        panic!("counter")
    };
    close(cs.total, 4.0);
    close(cs.rate, 4.0 / 3.0);
    // Slices [2, 3) and [3, 4] s, both complete: +2 each.
    let sl: Vec<_> = c
        .timeslices
        .as_ref()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t.start_ns / S,
                t.end_ns / S,
                t.is_complete,
                t.values.clone(),
            )
        })
        .collect();
    let two = SliceValues::Counter {
        total: 2.0,
        rate: 2.0,
    };
    assert_eq!(sl, [(2, 3, None, two.clone()), (3, 4, None, two)]);
    assert_eq!(cs.rate_avg, Some(2.0));
    // Gauge: the three warmup fetches 1, 2, 1 (mean 4/3, sample std √(1/3)).
    let SeriesStats::Gauge(g) = &m["g"].series[0].stats else {
        panic!("gauge")
    };
    close(g.avg, 4.0 / 3.0);
    close(g.std, (1.0f64 / 3.0).sqrt());
    assert_eq!((g.min, g.max), (1.0, 2.0));
    // Histogram: 4 observations summing to 1.1 over 3 s; its percentile estimates learn from
    // the warmup samples only — the same as a store that never saw the later fetches.
    let SeriesStats::Histogram(h) = &m["h"].series[0].stats else {
        panic!("histogram")
    };
    assert_eq!(h.count, 4);
    close(h.sum.unwrap(), 1.1);
    close(h.count_rate.unwrap(), 4.0 / 3.0);
    let cut = tagged(&fetches[..4]);
    let cut_m = summarize_metrics(&cut, &Window::warmup(&cut, 3 * S / 2, 7 * S / 2, Some(S)));
    assert_eq!(m["h"], cut_m["h"]);
    assert!(h.estimates.is_some());
    // The profiling window starts at its own first fetch; its reference is the scrape between
    // the phases, so the two windows tile the counter: 4 + 6 = the final value.
    let prof = Window::profiling(&store, 11 * S / 2, 8 * S, None);
    assert_eq!(prof.bounds, Bounds::Phase(Phase::Profiling));
    let pm = summarize_metrics(&store, &prof);
    let SeriesStats::Counter(pc) = &pm["c"].series[0].stats else {
        panic!("counter")
    };
    assert_eq!((pc.total, prof.end_ns), (6.0, 9 * S));
    // Fetch metadata of the warmup fetches only (the baseline page repeats at 2 s).
    let info = endpoint_info_in(&store.endpoints[0], Some((ew.start_ns, ew.end_ns))).unwrap();
    assert_eq!((info.total_fetches, info.unique_updates), (3, 2));
    assert_eq!(
        (info.first_update_ns, info.last_update_ns),
        (Some(3 * S), Some(4 * S))
    );
}

#[test]
fn untagged_fetches_keep_the_time_windows() {
    let store = fetched(&[(1, b"g 1\n"), (4, b"g 2\n")]);
    assert_eq!(Window::warmup(&store, 0, 2 * S, None).bounds, Bounds::Exact);
    assert_eq!(
        Window::profiling(&store, 3 * S, 5 * S, None).bounds,
        Bounds::Fetches
    );
}
