//! Load shape over time against the in-process mock: `--request-rate-series` (how many requests
//! go in each segment of the series, against the integral of its rate computed by hand) and
//! `--prefill-concurrency-ramp-duration` with its warmup twin (how many requests the mock had in
//! prefill at once, from its own truth log, against the limit of AIPerf's ramp at that time).

use crate::common;
use common::{config, read_jsonl};

use std::collections::HashSet;
use std::io::Write;
use std::time::Duration;

use ringperf_mock::mock::{MockConfig, OutputLen, TruthEntry};
use serde_json::Value;

fn mock(ttft_ms: u64) -> ringperf_mock::mock::MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(ttft_ms),
        itl: Duration::ZERO,
        output_tokens: OutputLen::Fixed(4),
        truth_log: true,
        ..MockConfig::default()
    })
    .expect("mock starts")
}

fn run(server: &ringperf_mock::mock::MockServer, flags: &str) -> (tempfile::TempDir, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} {flags} --isl 8 --osl 4 --random-seed 7 \
         --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    ringperf::run::run(cfg).unwrap();
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    (dir, records)
}

fn md_u64(r: &Value, key: &str) -> u64 {
    r["metadata"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in {r}"))
}

/// `--request-rate-series`, constant arrivals: 10/s to 0.5 s, up to 60/s at 1.0 s, held after;
/// issuing stops at 1.5 s. AIPerf applies the series every 100 ms (the rate at `k·0.1 s` holds
/// until the next update), so the rate integrated by hand over each segment is:
///
/// - [0, 0.5): 10/s · 0.5 s = 5;
/// - [0.5, 1.0): 0.1 s · (10 + 20 + 30 + 40 + 50)/s = 15 (the straight line would give 17.5;
///   a rate still at 10/s would give 5, one already at 60/s 30);
/// - [1.0, 1.5): 60/s · 0.5 s = 30.
///
/// Tolerance: constant arrivals put r·T ± 1 requests in a window of rate r; a rate increase
/// moves the pending request earlier (to the change plus one new interval), which adds at most
/// one more per increase inside the segment. So 5 ± 1, 15 ± 5 (4 increases: 0.6 … 0.9 s) and
/// 30 ± 2 (the increase at 1.0 s). The times counted are the intended send times the series
/// governs, from the phase start (the first request's, offset 0); the mock received every one.
#[test]
fn request_rate_series_sends_the_integral_of_its_rate_per_segment() {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(
        br#"{"points": [{"time_s": 0, "qps": 10}, {"time_s": 0.5, "qps": 10},
            {"time_s": 1.0, "qps": 60}]}"#,
    )
    .unwrap();
    let server = mock(0);
    let (_dir, records) = run(
        &server,
        &format!(
            "--request-rate-series {} --arrival-pattern constant --benchmark-duration 1.5",
            f.path().display()
        ),
    );
    let mut issued: Vec<u64> = records
        .iter()
        .map(|r| md_u64(r, "credit_issued_ns"))
        .collect();
    issued.sort_unstable();
    let t0 = issued[0];
    let count = |a: f64, b: f64| {
        issued
            .iter()
            .filter(|&&t| {
                let e = (t - t0) as f64 / 1e9;
                a <= e && e < b
            })
            .count() as i64
    };
    for (a, b, integral, tolerance) in [(0.0, 0.5, 5, 1), (0.5, 1.0, 15, 5), (1.0, 1.5, 30, 2)] {
        let n = count(a, b);
        assert!(
            (n - integral).abs() <= tolerance,
            "[{a}, {b}) s: {n} requests, the rate's integral {integral} ± {tolerance}"
        );
    }
    assert_eq!(
        count(1.5, f64::INFINITY),
        0,
        "nothing issued after the duration"
    );
    // The mock received each of them once.
    let sent: HashSet<String> = records
        .iter()
        .map(|r| r["metadata"]["x_request_id"].as_str().unwrap().to_owned())
        .collect();
    let truth = server.truth().entries();
    let received: HashSet<String> = truth
        .iter()
        .filter_map(|e| e.request_id.map(|u| u.to_string()))
        .collect();
    assert_eq!(truth.len(), records.len());
    assert_eq!(sent, received);
}

/// AIPerf's prefill ramp (a stepped linear ramp 1 → N over D, as the concurrency ramp): the
/// limit at `e` seconds into the phase is `min(N, 1 + ⌊e·(N − 1)/D⌋)`.
fn ramp_limit(e_s: f64, n: u64, d_s: f64) -> u64 {
    if e_s < 0.0 {
        return 1;
    }
    (1 + (e_s * (n - 1) as f64 / d_s).floor() as u64).min(n)
}

/// The most requests the mock had in prefill (arrived, first token not yet written) at any
/// arrival of `entries`, as (that arrival, the count), one per arrival.
fn in_prefill(entries: &[&TruthEntry]) -> Vec<(u64, u64)> {
    entries
        .iter()
        .map(|e| {
            let t = e.arrival_ns;
            let n = entries
                .iter()
                .filter(|o| o.arrival_ns <= t && t < o.event_ns[0])
                .count() as u64;
            (t, n)
        })
        .collect()
}

/// Each request holds its prefill slot from before its write until its first token arrives,
/// which covers the span the mock sees it in prefill (from its arrival to the write of its
/// first token): so the mock can never have more requests in prefill at once than the limit.
/// The limit is taken at a time measured from a moment no later than the phase start, so it is
/// never below the ramp's own.
fn assert_within_ramp(entries: &[&TruthEntry], start_lower_ns: u64, n: u64, d_s: f64) {
    for (t, count) in in_prefill(entries) {
        let e = t.saturating_sub(start_lower_ns) as f64 / 1e9;
        let limit = ramp_limit(e, n, d_s);
        assert!(
            count <= limit,
            "{count} requests in prefill {e:.3} s into the phase; the ramp allows {limit}"
        );
    }
}

/// `--prefill-concurrency 4 --prefill-concurrency-ramp-duration 1.2`: 1 request in prefill until
/// 0.4 s, 2 until 0.8 s, 3 until 1.2 s, then 4; TTFT 100 ms, so the limit binds (without the
/// ramp, the 4 slots of `--concurrency 4` start 4 requests at once).
#[test]
fn prefill_ramp_bounds_the_requests_in_prefill() {
    let server = mock(100);
    let (_dir, records) = run(
        &server,
        "--streaming --concurrency 4 --prefill-concurrency 4 \
         --prefill-concurrency-ramp-duration 1.2 --request-count 40",
    );
    assert_eq!(records.len(), 40);
    // The phase start is the first request's intended time (slot 0 starts at once); records
    // are in wall-clock ns, the truth log in raw monotonic ns. 5 ms of margin covers the
    // conversion, earlier (so the limit computed is never below the ramp's).
    let offset = ringperf_wire::clock::RealtimeOffset::calibrate();
    let start_wall = records
        .iter()
        .map(|r| md_u64(r, "credit_issued_ns"))
        .min()
        .unwrap();
    let start_lower = offset.to_monotonic_raw(start_wall).unwrap() - 5_000_000;
    let truth = server.truth().entries();
    assert_eq!(truth.len(), 40);
    let entries: Vec<&TruthEntry> = truth.iter().collect();
    assert_within_ramp(&entries, start_lower, 4, 1.2);
    // After the ramp the limit has grown: the mock sees several requests in prefill together.
    let late = in_prefill(&entries)
        .into_iter()
        .filter(|(t, _)| *t > start_lower + 1_250_000_000)
        .map(|(_, n)| n)
        .max()
        .unwrap_or(0);
    assert!(late >= 2, "at most {late} in prefill after the ramp");
}

/// `--warmup-prefill-concurrency-ramp-duration`: the warmup's prefill limit ramps (1 → 4 over
/// 0.9 s: 1 until 0.3 s), the profiling phase's does not (4 at once from its start).
#[test]
fn warmup_prefill_ramp_applies_to_the_warmup_only() {
    let server = mock(100);
    // No later than the warmup's start, on the truth log's clock.
    let before = ringperf_wire::clock::monotonic_raw_ns();
    let (_dir, records) = run(
        &server,
        "--streaming --concurrency 4 --prefill-concurrency 4 --warmup-request-count 8 \
         --warmup-prefill-concurrency-ramp-duration 0.9 --request-count 8",
    );
    let profiling: HashSet<String> = records
        .iter()
        .filter(|r| r["metadata"]["benchmark_phase"] == "profiling")
        .map(|r| r["metadata"]["x_request_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(profiling.len(), 8);
    let truth = server.truth().entries();
    assert_eq!(truth.len(), 16);
    let (prof, warm): (Vec<&TruthEntry>, Vec<&TruthEntry>) = truth.iter().partition(|e| {
        e.request_id
            .is_some_and(|u| profiling.contains(&u.to_string()))
    });
    assert_eq!((warm.len(), prof.len()), (8, 8));
    assert_within_ramp(&warm, before, 4, 0.9);
    // Profiling: no ramp; its 4 slots start together, each request 100 ms in prefill.
    let most = in_prefill(&prof).into_iter().map(|(_, n)| n).max().unwrap();
    // (The warmup's ramp applied here would keep it at 2: 1 until 0.3 s, 2 until 0.6 s, by
    // when the 8 requests of 100 ms are done.)
    assert!(
        most >= 3,
        "at most {most} in prefill in the profiling phase"
    );
}
