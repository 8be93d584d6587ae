//! The dashboard's live fold against hand-computed figures.

use super::*;
use crate::aggregate::testing::facts;
use crate::aggregate::{MetricConfig, record_metrics};
use ringperf_wire::record::RequestError;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// A streaming record sent on time at `start`, first token `ttft` later, 4 more tokens 1 ms
/// apart, ending at `end` (all ns).
fn rec(start: u64, ttft: u64, end: u64) -> RecordFacts {
    let first = start + ttft;
    RecordFacts {
        intended_ns: start,
        start_ns: start,
        head_ns: Some(start + 1),
        end_ns: end,
        content_stamps_ns: (0..5).map(|i| first + i * MS).collect(),
        first_output_stamp_ns: Some(first),
        output_tokens: Some(5),
        ..facts()
    }
}

fn fold(stats: &mut LiveStats, records: &[RecordFacts]) {
    let cfg = MetricConfig::new(true, false);
    for f in records {
        stats.add(f, &record_metrics(&cfg, f));
    }
}

#[test]
fn percentiles_are_numpys_linear_ones_in_ms() {
    // TTFT 1, 2, …, 100 ms: p50 = 50.5, p90 = 90.1, p99 = 99.01 (index q/100 · 99).
    let records: Vec<_> = (1..=100u64)
        .map(|i| rec(0, i * MS, i * MS + 10 * MS))
        .collect();
    let mut s = LiveStats::default();
    fold(&mut s, &records);
    let snap = s.snapshot(0, 0);
    let ttft = snap.ttft_ms.unwrap();
    assert_eq!(ttft.n, 100);
    assert!((ttft.p50 - 50.5).abs() < 1e-9, "{ttft:?}");
    assert!((ttft.p90 - 90.1).abs() < 1e-9, "{ttft:?}");
    assert!((ttft.p99 - 99.01).abs() < 1e-9, "{ttft:?}");
    // ITL: 4 gaps of 1 ms each, every record.
    let itl = snap.itl_ms.unwrap();
    assert!(
        (itl.p50 - 1.0).abs() < 1e-9 && (itl.p99 - 1.0).abs() < 1e-9,
        "{itl:?}"
    );
    // Request latency = last response − start (AIPerf's) = TTFT + 4 ms.
    assert!((snap.latency_ms.unwrap().p50 - 54.5).abs() < 1e-9);
    // Sent on time: no dispatch lag.
    assert_eq!(snap.dispatch_lag_ms.unwrap().p99, 0.0);
    assert_eq!((snap.done, snap.errors, snap.output_tokens), (100, 0, 500));
}

#[test]
fn only_the_most_recent_records_count() {
    // TTFT 1 … 3000 ms: the window holds the last 2048, 953 … 3000 ms; p50 at index 1023.5.
    let records: Vec<_> = (1..=3000u64).map(|i| rec(0, i * MS, i * MS + MS)).collect();
    let mut s = LiveStats::default();
    fold(&mut s, &records);
    let ttft = s.snapshot(0, 0).ttft_ms.unwrap();
    assert_eq!(ttft.n, RECENT);
    assert!((ttft.p50 - (953.0 + 1023.5)).abs() < 1e-9, "{ttft:?}");
    // The counts are of the whole phase, not the window.
    assert_eq!(s.snapshot(0, 0).done, 3000);
}

#[test]
fn rates_are_per_whole_second_by_completion_and_the_current_second_waits() {
    let mut s = LiveStats::default();
    // The phase's seconds count from the first record's intended send time (10 s on the clock).
    let t0 = 10 * S;
    fold(
        &mut s,
        &[
            rec(t0, MS, t0 + S / 2),               // second 0
            rec(t0, MS, t0 + S + S / 5),           // second 1
            rec(t0 + S, MS, t0 + S + 7 * S / 10),  // second 1
            rec(t0 + 2 * S, MS, t0 + 3 * S + 1),   // second 3
            rec(t0 + 4 * S, MS, t0 + 4 * S + 100), // second 4, in progress at 4.5 s
        ],
    );
    let snap = s.snapshot(t0 + 4 * S + S / 2, 7);
    assert_eq!(snap.requests_per_s, [1, 2, 0, 1]);
    assert_eq!(snap.tokens_per_s, [5, 10, 0, 5]);
    assert_eq!(snap.done, 5);
    assert_eq!(snap.ring_stalls, 7);
    // Before a whole second has passed there is no rate yet.
    assert!(s.snapshot(t0 + S / 2, 0).requests_per_s.is_empty());
}

#[test]
fn the_series_keeps_its_last_seconds() {
    let mut s = LiveStats::default();
    let records: Vec<_> = (0..200u64).map(|i| rec(0, MS, i * S + 1)).collect();
    fold(&mut s, &records);
    let snap = s.snapshot(200 * S, 0);
    assert_eq!(snap.requests_per_s.len(), SERIES_SECONDS);
    assert!(snap.requests_per_s.iter().all(|&n| n == 1));
}

#[test]
fn failures_are_counted_by_kind_and_add_no_latency() {
    let err = |code, kind: &str| RecordFacts {
        error: Some(Box::new(RequestError::new(code, kind, "x"))),
        output_tokens: None,
        ..rec(0, MS, 2 * MS)
    };
    let mut s = LiveStats::default();
    fold(
        &mut s,
        &[
            err(Some(500), "Internal Server Error"),
            err(None, "ConnectionError"),
            err(Some(500), "Internal Server Error"),
            rec(0, 3 * MS, 4 * MS),
        ],
    );
    let snap = s.snapshot(0, 0);
    assert_eq!(
        snap.errors_by_kind,
        [
            ("500 Internal Server Error".to_string(), 2),
            ("ConnectionError".to_string(), 1)
        ]
    );
    assert_eq!((snap.done, snap.errors, snap.output_tokens), (4, 3, 5));
    assert_eq!(snap.ttft_ms.unwrap().n, 1);
    // Dispatch lag counts every record, failed or not.
    assert_eq!(snap.dispatch_lag_ms.unwrap().n, 4);
}

#[test]
fn a_new_phase_starts_afresh() {
    let mut s = LiveStats::default();
    let warm = RecordFacts {
        phase: Phase::Warmup,
        ..rec(0, 50 * MS, 60 * MS)
    };
    fold(&mut s, &[warm.clone(), warm]);
    assert_eq!(s.snapshot(0, 0).phase, Some(Phase::Warmup));
    fold(&mut s, &[rec(S, 2 * MS, S + 3 * MS)]);
    let snap = s.snapshot(S, 0);
    assert_eq!(snap.phase, Some(Phase::Profiling));
    assert_eq!(snap.done, 1);
    assert_eq!(snap.ttft_ms.unwrap().p50, 2.0);
}
