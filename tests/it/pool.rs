//! A worker's connection pool against the mock's truth log (when it accepted each connection,
//! and when each request arrived, on which connection): the warm pool of an open loop
//! (`crates/engine/src/worker/warm.rs`) and the per-worker connection limit (`AIPERF_HTTP_CONNECTION_LIMIT`,
//! `crates/io/src/net/pool.rs`).

use crate::common;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use common::{config, read_json, read_jsonl};
use ringperf_mock::mock::{MockConfig, MockServer, OutputLen};
use serde_json::Value;

fn mock(ttft_ms: u64) -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(ttft_ms),
        output_tokens: OutputLen::Fixed(1),
        truth_log: true,
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// Per phase name: the mock's arrival stamps of its requests and the connections they came on
/// (with when each was accepted); and every request's record.
struct Seen {
    arrivals: HashMap<String, Vec<u64>>,
    connections: HashMap<String, HashSet<(u64, u64)>>,
    records: Vec<Value>,
    summary: Value,
}

fn run(server: &MockServer, flags: &str) -> Seen {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u http://{} --endpoint-type chat --streaming \
         --arrival-pattern constant --export-http-trace --ui none --no-server-metrics \
         --artifact-dir {} {flags}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!(out.errors, 0);
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    let phase_of: HashMap<String, String> = records
        .iter()
        .map(|r| {
            let md = &r["metadata"];
            (
                md["x_request_id"].as_str().unwrap().to_string(),
                md["benchmark_phase"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut seen = Seen {
        arrivals: HashMap::new(),
        connections: HashMap::new(),
        records,
        summary: read_json(&dir.path().join("profile_export_aiperf.json")),
    };
    for e in server.truth().entries() {
        let phase = phase_of[&e.request_id.unwrap().to_string()].clone();
        seen.arrivals
            .entry(phase.clone())
            .or_default()
            .push(e.arrival_ns);
        seen.connections
            .entry(phase)
            .or_default()
            .insert((e.connection, e.connection_accepted_ns));
    }
    seen
}

/// Connections the mock had accepted before the phase's first request arrived (whether a
/// request came on them later or not).
fn open_before_first_request(seen: &Seen, server: &MockServer, phase: &str) -> usize {
    let first = *seen.arrivals[phase].iter().min().unwrap();
    let accepted = server.truth().connections_accepted();
    accepted.iter().filter(|&&at| at < first).count()
}

/// Of the phase's first `n` requests (by intended send time), how many had to open their
/// connection (a request that did has no `connection_reused_ns` in its trace).
fn connected_among_first(records: &[Value], phase: &str, n: usize) -> usize {
    let mut of_phase: Vec<&Value> = records
        .iter()
        .filter(|r| r["metadata"]["benchmark_phase"] == phase)
        .collect();
    of_phase.sort_by_key(|r| r["metadata"]["credit_issued_ns"].as_u64().unwrap());
    of_phase
        .iter()
        .take(n)
        .filter(|r| r["trace_data"].get("connection_reused_ns").is_none())
        .count()
}

/// 400/s over 2 workers with the latency not yet known: each worker opens
/// ⌈200/s × 5 ms × 1.25⌉ + 8 = 10 connections before the phase's start instant, so the mock has
/// accepted at least 20 before the first request arrives, and the first requests of both workers
/// find theirs open (no request of the run's first moments connects).
#[test]
fn an_open_loop_opens_its_connections_before_the_first_intended_send() {
    let server = mock(20);
    let seen = run(
        &server,
        "--request-rate 400 --request-count 40 --workers-max 2",
    );
    assert!(
        open_before_first_request(&seen, &server, "profiling") >= 20,
        "{:?}",
        seen.connections["profiling"]
    );
    // The earliest request of each worker reused a connection the pool had opened.
    let mut firsts: HashMap<&str, &Value> = HashMap::new();
    for r in &seen.records {
        let worker = r["metadata"]["worker_id"].as_str().unwrap();
        let start = r["metadata"]["request_start_ns"].as_u64().unwrap();
        let earlier = firsts
            .get(worker)
            .is_some_and(|f| f["metadata"]["request_start_ns"].as_u64().unwrap() <= start);
        if !earlier {
            firsts.insert(worker, r);
        }
    }
    assert_eq!(firsts.len(), 2);
    // Each worker counts what its pool opened (the JSON's `ringperf.threads`).
    let threads = seen.summary["ringperf"]["threads"].as_array().unwrap();
    let opened: Vec<u64> = threads
        .iter()
        .filter(|t| t["name"].as_str().unwrap().starts_with("worker_"))
        .map(|t| t["warm_pool"]["opened"].as_u64().unwrap())
        .collect();
    assert!(
        opened.len() == 2 && opened.iter().all(|&n| n >= 10),
        "{threads:?}"
    );
    for (worker, r) in firsts {
        assert!(
            r["trace_data"].get("connection_reused_ns").is_some(),
            "{worker}'s first request connected: {}",
            r["trace_data"]
        );
    }
}

/// A warmup's answers size the profiling phase's pool: at 300/s on one worker against a mock that
/// answers after at least 60 ms, ~18 requests are in flight, more than the first guess's
/// ⌈300 × 5 ms × 1.25⌉ + 8 = 10; after the warmup the pool holds at least
/// ⌈300 × 60 ms × 1.25⌉ + 8 = 31 connections before profiling starts, and the first 31
/// profiling requests take them (none connects, whatever the answers' timing).
#[test]
fn a_warmups_latency_sizes_the_profiling_pool() {
    let server = mock(60);
    let seen = run(
        &server,
        "--request-rate 300 --request-count 90 --warmup-request-count 60 --workers-max 1",
    );
    let open = open_before_first_request(&seen, &server, "profiling");
    assert!(open >= 31, "{open} connections open before profiling");
    assert_eq!(connected_among_first(&seen.records, "profiling", 31), 0);
    // Without the warm pool sized from the warmup, the warmup's own requests show the need: more
    // were in flight at once than the first guess holds.
    assert!(seen.connections["warmup"].len() > 10);
}

/// Runs the binary with `AIPERF_HTTP_CONNECTION_LIMIT=limit`: one worker, a closed loop of
/// `concurrency` slots sending `requests` to every server's URL in turn (chat, not streamed),
/// under `timeout` so that a request waiting forever ends the child (killed) instead of the
/// test.
fn limited_run(
    limit: &str,
    servers: &[&MockServer],
    concurrency: u32,
    requests: u32,
    dir: &std::path::Path,
) -> std::process::Output {
    let mut cmd = std::process::Command::new("timeout");
    cmd.args(["-s", "KILL", "60"])
        .arg(env!("CARGO_BIN_EXE_ringperf"))
        .env("AIPERF_HTTP_CONNECTION_LIMIT", limit)
        .args(["profile", "-m", "mock-model", "--ui", "none"])
        .args([
            "--no-server-metrics",
            "--tokenizer",
            "builtin",
            "--workers-max",
            "1",
        ])
        .arg("--concurrency")
        .arg(concurrency.to_string())
        .arg("--request-count")
        .arg(requests.to_string())
        .arg("--artifact-dir")
        .arg(dir);
    for s in servers {
        cmd.arg("--url").arg(format!("http://{}", s.addr));
    }
    cmd.output().expect("timeout runs the binary")
}

/// `AIPERF_HTTP_CONNECTION_LIMIT=3`: 8 closed-loop slots on one worker share 3 connections (the
/// mock saw no more), every request is answered, and the verdict says how many waited and at
/// which limit. A value AIPerf refuses is refused (exit 2) before any request.
#[test]
fn the_connection_limit_holds_a_worker_to_that_many_connections() {
    let server = mock(20);
    let dir = tempfile::tempdir().unwrap();
    let out = limited_run("3", &[&server], 8, 40, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let truth = server.truth().entries();
    assert_eq!(truth.len(), 40);
    let used: HashSet<u64> = truth.iter().map(|e| e.connection).collect();
    assert!(used.len() <= 3, "{} connections", used.len());
    assert!(server.truth().connections_accepted().len() <= 3);
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(summary["request_count"]["avg"], 40.0);
    let h = &summary["ringperf"]["client_health"];
    assert_eq!(h["kept_up"], false, "{h}");
    assert_eq!(h["observed"]["connection_limit"], 3, "{h}");
    assert!(
        h["observed"]["connection_waits"].as_u64().unwrap() > 0,
        "{h}"
    );

    let refused = tempfile::tempdir().unwrap();
    let out = limited_run("0", &[&server], 8, 40, refused.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("AIPERF_HTTP_CONNECTION_LIMIT=0"));
    assert_eq!(server.truth().entries().len(), 40, "no request sent");
}

/// At the limit, a request to one URL does not wait behind connections idle to another: with
/// `AIPERF_HTTP_CONNECTION_LIMIT=1` and two base URLs (requests alternate between them), the
/// one connection is closed and reopened to the other URL as needed, and every request is
/// answered (`timeout` ends the child should a request wait forever).
#[test]
fn at_the_limit_an_idle_connection_to_another_url_makes_room() {
    let servers = [mock(1), mock(1)];
    let dir = tempfile::tempdir().unwrap();
    let [a, b] = &servers;
    let out = limited_run("1", &[a, b], 2, 20, dir.path());
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let served: Vec<usize> = servers.iter().map(|s| s.truth().entries().len()).collect();
    assert_eq!(served, [10, 10]);
    // One connection at a time: each URL's requests came on connections opened after the
    // other URL's was closed, so each mock saw several.
    for s in &servers {
        assert!(s.truth().connections_accepted().len() > 1);
    }
}
