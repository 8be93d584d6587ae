//! The fault matrix: `ringperf profile` against an in-process mock that misbehaves on a share of
//! its completion requests, one test per fault. Each run must end within its bounds, count every
//! failure as an error record of the right type (the JSONL `error` and the JSON `error_summary`),
//! write its artifacts, and succeed exactly on the requests the mock's truth log says it served
//! normally.

use crate::common;
use common::{config, read_json, read_jsonl};

use std::collections::HashMap;
use std::time::{Duration, Instant};

use clap::Parser;
use ringperf::cli::Cli;
use ringperf::run::Outcome;
use ringperf_mock::mock::{Fault, FaultSpec, MockConfig, MockServer, OutputLen, TruthEntry};
use serde_json::Value;

/// Output tokens of every normal response.
const TOKENS: u64 = 8;

fn mock(faults: Vec<FaultSpec>) -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(TOKENS),
        truth_log: true,
        seed: 11,
        faults,
        ..MockConfig::default()
    })
    .expect("mock starts")
}

fn only(kind: Fault, fraction: f64) -> Vec<FaultSpec> {
    vec![FaultSpec { kind, fraction }]
}

/// One finished run and everything it left behind.
struct Run {
    out: Outcome,
    elapsed: Duration,
    summary: Value,
    recs: Vec<Value>,
    /// Request id → the mock's last entry for it (a request retried on a fresh connection has
    /// two; the last one decided its outcome).
    truth: HashMap<String, TruthEntry>,
    /// The URL every request went to, as a connection error names it.
    url: String,
    _dir: tempfile::TempDir,
}

impl Run {
    /// The mock's entry for a record.
    fn truth_of(&self, rec: &Value) -> &TruthEntry {
        let id = rec["metadata"]["x_request_id"]
            .as_str()
            .expect("request id");
        self.truth
            .get(id)
            .unwrap_or_else(|| panic!("the mock saw request {id}"))
    }

    /// `(code, type, message) → count` of the JSON `error_summary`.
    fn error_summary(&self) -> HashMap<(Option<u64>, String, String), u64> {
        self.summary["error_summary"]
            .as_array()
            .expect("error_summary list")
            .iter()
            .map(|e| {
                let d = &e["error_details"];
                (
                    (
                        d["code"].as_u64(),
                        d["type"].as_str().expect("type").to_string(),
                        d["message"].as_str().expect("message").to_string(),
                    ),
                    e["count"].as_u64().expect("count"),
                )
            })
            .collect()
    }
}

/// Runs `ringperf profile` with `flags` against `server` and checks what every run must satisfy:
/// artifacts written, one record per request, successes + errors = requests, the JSON's error
/// counts agree with the records, and the mock saw every request.
fn run_against(server: &MockServer, flags: &str, n: u64) -> Run {
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --request-count {n} --isl 16 --osl {TOKENS} \
         --random-seed 3 --ui none {flags} --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let t = Instant::now();
    let out = ringperf::run::run(cfg).expect("the run completes");
    let elapsed = t.elapsed();
    for f in [
        "profile_export_aiperf.json",
        "profile_export_aiperf.csv",
        "profile_export.jsonl",
        "profile_export_console.txt",
        "inputs.json",
    ] {
        assert!(dir.path().join(f).is_file(), "artifact {f} is written");
    }
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let recs = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(out.successes + out.errors, n, "{out:?}");
    assert_eq!(recs.len() as u64, n);
    let failed = recs.iter().filter(|r| r.get("error").is_some()).count() as u64;
    assert_eq!(failed, out.errors);
    let summed: u64 = summary["error_summary"]
        .as_array()
        .expect("error_summary")
        .iter()
        .map(|e| e["count"].as_u64().expect("count"))
        .sum();
    assert_eq!(summed, out.errors, "error_summary counts every failure");
    if out.errors > 0 {
        assert_eq!(
            summary["error_request_count"]["avg"].as_f64(),
            Some(out.errors as f64)
        );
    }
    if out.successes > 0 {
        assert_eq!(
            summary["request_count"]["avg"].as_f64(),
            Some(out.successes as f64)
        );
    }

    // The mock records a request when it is done with it; one that never answers or trickles is
    // done when it notices the client left, which may be just after the run returned.
    let ids: Vec<String> = recs
        .iter()
        .map(|r| {
            r["metadata"]["x_request_id"]
                .as_str()
                .expect("id")
                .to_string()
        })
        .collect();
    let waited = Instant::now();
    let truth = loop {
        let mut by_id = HashMap::new();
        for e in server.truth().entries() {
            if let Some(id) = e.request_id {
                by_id.insert(id.to_string(), e);
            }
        }
        if ids.iter().all(|id| by_id.contains_key(id)) || waited.elapsed() > Duration::from_secs(30)
        {
            break by_id;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        out,
        elapsed,
        summary,
        recs,
        truth,
        url: format!("http://{}/v1/chat/completions", server.addr),
        _dir: dir,
    }
}

/// The error a faulted request must end with.
struct Expected<'a> {
    code: Option<u64>,
    kind: &'a str,
    message: &'a str,
    /// A failure of the connection: the message is `<url>: <message>`.
    at_url: bool,
}

/// Checks a run where `fault` was the only fault: every request the truth log says got it
/// failed with exactly `expected` (or, with `None`, succeeded like the others), every other
/// request succeeded with the full output, and the JSON summary counts exactly those failures.
/// Returns how many requests got the fault.
fn check_single_fault(r: &Run, fault: Fault, expected: Option<&Expected<'_>>) -> u64 {
    let message = expected.map(|e| {
        if e.at_url {
            format!("{}: {}", r.url, e.message)
        } else {
            e.message.to_string()
        }
    });
    let mut faulted = 0;
    for rec in &r.recs {
        let t = r.truth_of(rec);
        let got = t.fault == Some(fault);
        faulted += u64::from(got);
        match (got, expected) {
            (true, Some(e)) => {
                let err = &rec["error"];
                assert_eq!(err["code"].as_u64(), e.code, "{rec}");
                assert_eq!(err["type"], e.kind, "{rec}");
                assert_eq!(
                    err["message"],
                    message.as_deref().unwrap_or_default(),
                    "{rec}"
                );
                assert!(rec["metrics"].get("output_sequence_length").is_none());
            }
            _ => {
                assert!(rec.get("error").is_none(), "{rec}");
                assert!(t.completed, "served whole: {t:?}");
                assert_eq!(
                    rec["metrics"]["output_sequence_length"]["value"], TOKENS,
                    "{rec}"
                );
            }
        }
    }
    let failures = if expected.is_some() { faulted } else { 0 };
    assert_eq!(r.out.errors, failures);
    assert_eq!(r.out.successes, r.recs.len() as u64 - failures);
    let summary = r.error_summary();
    match expected {
        Some(e) if faulted > 0 => {
            let key = (
                e.code,
                e.kind.to_string(),
                message.clone().unwrap_or_default(),
            );
            assert_eq!(summary, HashMap::from([(key, faulted)]));
        }
        _ => assert!(summary.is_empty(), "{summary:?}"),
    }
    faulted
}

/// Every request the truth log says got `fault` at fraction 0.5: some, not all (the draws are
/// seeded, so this is deterministic, not a coin toss).
fn assert_some_not_all(faulted: u64, n: u64) {
    assert!(faulted > 0 && faulted < n, "{faulted} of {n} faulted");
}

#[test]
fn reset_before_response_is_a_connection_error() {
    let expected = Expected {
        code: None,
        kind: "ClientOSError",
        message: "Connection reset by peer (os error 104)",
        at_url: true,
    };
    // A fresh connection per request: no retries, so the draws alone decide the failures.
    // A reset must fail its request at once; one that waited instead would end as a request
    // timeout, an error `check_single_fault` refuses (a count, not a time).
    let server = mock(only(Fault::ResetBeforeResponse, 0.5));
    let n = 20;
    let r = run_against(
        &server,
        "--streaming --concurrency 2 --connection-reuse-strategy never \
         --request-timeout-seconds 60",
        n,
    );
    let faulted = check_single_fault(&r, Fault::ResetBeforeResponse, Some(&expected));
    assert_some_not_all(faulted, n);
    assert_eq!(server.truth().len() as u64, n);

    // Pooled: a reset on a kept-alive connection is retried once on a fresh one (the server may
    // have closed an idle connection), and the retry draws again. Which requests end up failed
    // then depends on which connections were reused, but the truth log still says exactly:
    // each request's last attempt decides, and every extra attempt is the retry of a reset.
    let server = mock(only(Fault::ResetBeforeResponse, 0.5));
    let r = run_against(&server, "--streaming --concurrency 2", n);
    let faulted = check_single_fault(&r, Fault::ResetBeforeResponse, Some(&expected));
    let entries = server.truth().entries();
    let resets = entries
        .iter()
        .filter(|e| e.fault == Some(Fault::ResetBeforeResponse))
        .count() as u64;
    assert!(resets > 0, "some attempt was reset");
    assert_eq!(entries.len() as u64 - n, resets - faulted);
    assert!(entries.iter().all(|e| e.completed != e.fault.is_some()));
}

#[test]
fn reset_mid_stream_is_a_payload_error() {
    let server = mock(only(Fault::ResetMidStream, 0.5));
    let n = 20;
    let r = run_against(
        &server,
        "--streaming --concurrency 2 --request-timeout-seconds 60",
        n,
    );
    let faulted = check_single_fault(
        &r,
        Fault::ResetMidStream,
        Some(&Expected {
            code: None,
            kind: "ClientPayloadError",
            message: "Connection reset by peer (os error 104)",
            at_url: true,
        }),
    );
    assert_some_not_all(faulted, n);
    // Half of the 8 token events went out before the reset.
    for e in server.truth().entries() {
        if e.fault == Some(Fault::ResetMidStream) {
            assert_eq!(e.event_ns.len(), 4, "{e:?}");
            assert!(!e.completed);
        }
    }
}

#[test]
fn reset_mid_body_of_a_whole_response_is_a_payload_error() {
    let server = mock(only(Fault::ResetMidStream, 1.0));
    let n = 4;
    let r = run_against(&server, "--concurrency 1", n);
    check_single_fault(
        &r,
        Fault::ResetMidStream,
        Some(&Expected {
            code: None,
            kind: "ClientPayloadError",
            message: "Connection reset by peer (os error 104)",
            at_url: true,
        }),
    );
    assert_eq!((r.out.successes, r.out.errors), (0, 4));
    assert_eq!(ringperf::exit::of_run(&r.out), 1);
}

fn status_body(code: u16, kind: &str) -> String {
    format!(
        "{{\"error\":{{\"message\":\"mock fault: injected HTTP {code}\",\"type\":\"{kind}\",\
         \"param\":null,\"code\":{code}}}}}"
    )
}

#[test]
fn error_statuses_carry_code_reason_and_body() {
    for (code, reason, kind) in [
        (429, "Too Many Requests", "RateLimitError"),
        (500, "Internal Server Error", "InternalServerError"),
        (503, "Service Unavailable", "ServiceUnavailableError"),
    ] {
        let server = mock(only(Fault::Status(code), 0.5));
        let n = 16;
        let r = run_against(&server, "--streaming --concurrency 2", n);
        let body = status_body(code, kind);
        let faulted = check_single_fault(
            &r,
            Fault::Status(code),
            Some(&Expected {
                code: Some(u64::from(code)),
                kind: reason,
                message: &body,
                at_url: false,
            }),
        );
        assert_some_not_all(faulted, n);
        // The error answers keep the connection: nothing was retried.
        assert_eq!(server.truth().len() as u64, n);
    }
}

#[test]
fn never_answering_server_times_out_each_request() {
    let server = mock(only(Fault::NeverAnswer, 0.5));
    let n = 8;
    let r = run_against(
        &server,
        "--streaming --concurrency 4 --request-timeout-seconds 0.5",
        n,
    );
    let faulted = check_single_fault(
        &r,
        Fault::NeverAnswer,
        Some(&Expected {
            code: None,
            kind: "TimeoutError",
            message: "Request did not complete within --request-timeout-seconds (0.5 s)",
            at_url: false,
        }),
    );
    assert_some_not_all(faulted, n);
    // No wall-clock bound on the run (a loaded machine stretches it); a timeout that never
    // fired would hang the run, which nextest's slow-timeout ends. Each timed-out request ran
    // its full timeout, never less.
    for rec in &r.recs {
        if rec.get("error").is_some() {
            let lat = rec["metadata"]["request_end_ns"].as_u64().unwrap()
                - rec["metadata"]["request_start_ns"].as_u64().unwrap();
            assert!(lat >= 490_000_000, "timed out after {lat} ns");
        }
    }
}

#[test]
fn slow_loris_times_out_and_the_mock_stops_trickling() {
    let server = mock(only(Fault::SlowLoris, 0.5));
    let n = 8;
    let r = run_against(
        &server,
        "--streaming --concurrency 4 --request-timeout-seconds 0.5",
        n,
    );
    let faulted = check_single_fault(
        &r,
        Fault::SlowLoris,
        Some(&Expected {
            code: None,
            kind: "TimeoutError",
            message: "Request did not complete within --request-timeout-seconds (0.5 s)",
            at_url: false,
        }),
    );
    assert_some_not_all(faulted, n);
    // The truth log has every trickled request (so the mock noticed the client leaving) and none
    // of them was completed.
    for rec in &r.recs {
        let t = r.truth_of(rec);
        if t.fault == Some(Fault::SlowLoris) {
            assert!(!t.completed);
            // Some bytes did arrive before the timeout.
            assert!(rec["error"]["type"] == "TimeoutError");
        }
    }
}

#[test]
fn bad_chunk_size_is_a_parse_error() {
    for flags in ["--streaming --concurrency 2", "--concurrency 2"] {
        let server = mock(only(Fault::BadChunkSize, 0.5));
        let n = 16;
        let r = run_against(&server, flags, n);
        let faulted = check_single_fault(
            &r,
            Fault::BadChunkSize,
            Some(&Expected {
                code: None,
                kind: "ClientPayloadError",
                message: "invalid chunk size line",
                at_url: true,
            }),
        );
        assert_some_not_all(faulted, n);
    }
}

#[test]
fn garbage_in_sse_is_skipped_and_the_valid_events_count() {
    let server = mock(only(Fault::GarbageSse, 0.5));
    let n = 16;
    let r = run_against(&server, "--streaming --concurrency 2", n);
    let faulted = check_single_fault(&r, Fault::GarbageSse, None);
    assert_some_not_all(faulted, n);
    // The garbage messages are no content responses: 8 content events, 7 gaps.
    for rec in &r.recs {
        assert_eq!(
            rec["metrics"]["inter_chunk_latency"]["value"]
                .as_array()
                .map(Vec::len),
            Some(7),
            "{rec}"
        );
    }
}

#[test]
fn garbage_sse_answer_to_a_non_streaming_request_is_parsed_as_sse() {
    let server = mock(only(Fault::GarbageSse, 1.0));
    let r = run_against(&server, "--concurrency 1", 3);
    check_single_fault(&r, Fault::GarbageSse, None);
    assert_eq!(r.out.successes, 3);
}

#[test]
fn sse_error_event_is_a_502_with_the_comment() {
    let server = mock(only(Fault::SseErrorEvent, 0.5));
    let n = 16;
    let r = run_against(&server, "--streaming --concurrency 2", n);
    let message = format!(
        "Error occurred in SSE response: {}",
        ringperf_mock::mock::SSE_ERROR_COMMENT
    );
    let faulted = check_single_fault(
        &r,
        Fault::SseErrorEvent,
        Some(&Expected {
            code: Some(502),
            kind: "SSEResponseError",
            message: &message,
            at_url: false,
        }),
    );
    assert_some_not_all(faulted, n);
    // The error streams end cleanly, so their connections are reused: nothing retried.
    assert_eq!(server.truth().len() as u64, n);
}

/// A line of /proc/self/status, in KiB.
fn proc_status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"))
}

/// Resets this process's peak RSS (`VmHWM`) to its current RSS; false where the kernel refuses.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Runs `n` huge responses and returns how far the peak RSS rose above the RSS before, in MiB.
fn huge_run_peak_growth_mib(bytes: u64, n: u64) -> u64 {
    let server = mock(only(Fault::Huge { bytes }, 1.0));
    let reset = reset_peak_rss();
    let before = proc_status_kib(if reset { "VmRSS:" } else { "VmHWM:" });
    let r = run_against(&server, "--concurrency 1 --request-timeout-seconds 300", n);
    let peak = proc_status_kib("VmHWM:");
    let after = proc_status_kib("VmRSS:");
    let grown = peak.saturating_sub(before) / 1024;
    eprintln!(
        "huge: {n} x {bytes} bytes in {:?}; RSS before {before} kB, peak {peak} kB \
         (+{grown} MiB; peak reset: {reset}), after {after} kB",
        r.elapsed
    );
    // Every body is freed once aggregated: nothing body-sized stays behind (what does stay is
    // the run's tokenizer, about 60 MiB, loaded once per process).
    if reset {
        let kept = after.saturating_sub(before) / 1024;
        assert!(
            kept < bytes / (1024 * 1024),
            "{kept} MiB still resident after the run"
        );
    }
    // The client's limit is 256 MiB (`MAX_BODY_BYTES`), so these bodies are accepted, their
    // padding ignored and their 8 tokens counted.
    check_single_fault(&r, Fault::Huge { bytes }, None);
    assert_eq!(r.out.successes, n);
    for rec in &r.recs {
        assert_eq!(rec["metrics"]["output_sequence_length"]["value"], TOKENS);
    }
    grown
}

#[test]
fn huge_response_is_accepted_within_the_body_limit_and_memory_stays_bounded() {
    const HUGE: u64 = 100 * 1024 * 1024;
    const HUGE_MIB: u64 = HUGE / (1024 * 1024);
    let one = huge_run_peak_growth_mib(HUGE, 1);
    // One body in flight: the client holds it while growing its buffer (one reallocation copy)
    // and the aggregator parses it once; never more than four body-sized copies.
    assert!(
        one < 4 * HUGE_MIB,
        "one huge response raised the peak by {one} MiB"
    );
    if reset_peak_rss() {
        // Records wait in the worker's ring until the aggregator has parsed them, so when
        // parsing is slower than receiving (a debug build), every finished body can be resident
        // at once: the peak may grow with the count, but only by one body each (the receive
        // buffer's growth copies do not pile up).
        let three = huge_run_peak_growth_mib(HUGE, 3);
        assert!(
            three < one + 2 * HUGE_MIB + HUGE_MIB / 4,
            "three huge responses raised the peak by {three} MiB, one by {one} MiB"
        );
    }
}

/// Polls `done` every 10 ms until it holds; fails after `limit` (a bound no run comes near),
/// naming `what` it waited for.
fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let waiting = Instant::now();
    while !done() {
        assert!(waiting.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The request start (wall ns) of every whole line of a JSONL the run is still writing.
fn starts_so_far(jsonl: &std::path::Path) -> Vec<u64> {
    let text = std::fs::read_to_string(jsonl).unwrap_or_default();
    let whole = text.rfind('\n').map_or("", |end| &text[..end]);
    whole
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|r| r["metadata"]["request_start_ns"].as_u64())
        .collect()
}

fn end_ns(rec: &Value) -> u64 {
    rec["metadata"]["request_end_ns"].as_u64().unwrap()
}

#[test]
fn server_going_away_mid_run_and_coming_back() {
    let mut server = mock(Vec::new());
    let addr = server.addr;
    let truth = server.truth();
    let n = 120;
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("profile_export.jsonl");
    // Requests starting within this margin of the pause or of the resume may go either way.
    let margin = 30_000_000;
    // The outage starts once the mock has served 5 requests, and ends once the run's JSONL
    // (flushed as the run goes, at least every second) holds 6 requests that started well inside
    // it, the last of them a margin before the resume: whatever the machine's load, the outage
    // is seen by that many requests, and requests remain to see the server come back.
    let outage = std::thread::spawn(move || {
        let served = || truth.entries().iter().filter(|e| e.completed).count();
        wait_until(Duration::from_secs(60), "5 requests served", || {
            served() >= 5
        });
        let paused_at = wall_ns();
        server.pause();
        assert!(server.is_paused());
        let mut inside = Vec::new();
        wait_until(
            Duration::from_secs(60),
            "6 requests started during the outage",
            || {
                inside = starts_so_far(&jsonl);
                inside.retain(|&s| s > paused_at + margin);
                inside.len() >= 6
            },
        );
        let last = inside.iter().copied().max().unwrap_or_default();
        wait_until(Duration::from_secs(1), "a margin after the last", || {
            wall_ns() > last + margin
        });
        let resumed_at = wall_ns();
        server.resume().expect("the mock comes back on its port");
        (server, paused_at, resumed_at)
    });
    // 120 requests at 40/s: three seconds, at most two of them (two JSONL flushes) with the
    // server gone.
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {addr} --streaming --request-rate 40 \
         --arrival-pattern constant --request-count {n} --isl 16 --osl {TOKENS} --ui none \
         --request-timeout-seconds 5 --artifact-dir {}",
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).expect("the run completes");
    let (server, paused_at, resumed_at) = outage.join().expect("outage thread");
    assert_eq!(server.addr, addr);
    assert_eq!(out.successes + out.errors, n);
    let recs = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(recs.len() as u64, n);
    let (mut refused, mut back) = (0, 0);
    for rec in &recs {
        let start = rec["metadata"]["request_start_ns"].as_u64().unwrap();
        let err = rec.get("error");
        if start > paused_at + margin && start + margin < resumed_at {
            let e = err.unwrap_or_else(|| panic!("succeeded while the server was away: {rec}"));
            assert_eq!(e["type"], "ClientConnectorError", "{rec}");
            // Refused at once, not failed by waiting out the 5 s request timeout.
            assert!(end_ns(rec) - start < 5_000_000_000, "{rec}");
            refused += 1;
        } else if start > resumed_at + margin || end_ns(rec) + margin < paused_at {
            // Its whole life with the server up (one still streaming when the server went away
            // may be cut: an edge case below, however early it started).
            assert!(err.is_none(), "failed while the server was up: {rec}");
            back += u64::from(start > resumed_at + margin);
        } else if let Some(e) = err {
            // Around the edges: refused, or cut by the server going away.
            let kind = e["type"].as_str().unwrap();
            assert!(
                [
                    "ClientConnectorError",
                    "ServerDisconnectedError",
                    "ClientPayloadError",
                    "ClientOSError",
                    "ClientPayloadError",
                ]
                .contains(&kind),
                "{rec}"
            );
        }
    }
    assert!(refused >= 6, "{refused} requests refused during the outage");
    assert!(back > 0, "no request was sent after the server came back");
    // The successes are exactly the responses the mock completed (cut ones are not logged).
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let completed = server
        .truth()
        .entries()
        .iter()
        .filter(|e| e.completed)
        .count() as u64;
    assert_eq!(out.successes, completed);
    let counted: u64 = summary["error_summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, out.errors);
    let connector = summary["error_summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["error_details"]["type"] == "ClientConnectorError")
        .expect("refused connections are summarised");
    assert!(connector["count"].as_u64().unwrap() >= refused);
}

fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[test]
fn mock_faults_flag_drives_the_embedded_mock() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile --mock --mock-faults status=503:0.5 --mock-ttft-ms 1 --mock-itl-ms 0 \
         --mock-output-tokens 4 --streaming --concurrency 2 --request-count 20 --isl 8 --ui none \
         --artifact-dir {}",
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).expect("the run completes");
    assert_eq!(out.successes + out.errors, 20);
    assert!(out.successes > 0 && out.errors > 0, "{out:?}");
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let errors = summary["error_summary"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["count"].as_u64(), Some(out.errors));
    assert_eq!(errors[0]["error_details"]["code"], 503);
    assert_eq!(errors[0]["error_details"]["type"], "Service Unavailable");
    assert_eq!(
        errors[0]["error_details"]["message"],
        status_body(503, "ServiceUnavailableError")
    );

    let bad = Cli::try_parse_from(["ringperf", "profile", "--mock", "--mock-faults", "nope:0.1"]);
    assert!(bad.is_err(), "an unknown fault is a usage error");
}

#[test]
fn response_over_the_body_limit_is_a_payload_error() {
    // 300 MiB against the client's 256 MiB limit (`MAX_BODY_BYTES`): the request fails with a
    // counted error instead of growing memory without bound.
    let server = mock(only(
        Fault::Huge {
            bytes: 300 * 1024 * 1024,
        },
        1.0,
    ));
    let r = run_against(&server, "--concurrency 1", 1);
    check_single_fault(
        &r,
        Fault::Huge {
            bytes: 300 * 1024 * 1024,
        },
        Some(&Expected {
            code: None,
            kind: "ClientPayloadError",
            message: "response body exceeds the size limit",
            at_url: true,
        }),
    );
    assert_eq!((r.out.successes, r.out.errors), (0, 1));
}
