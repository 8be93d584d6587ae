//! AIPerf's HTTP trace metrics end to end, against the mock's truth log: every record carries
//! the 14 `http_req_*` metrics; the bytes sent are the body the mock received; a connection is
//! reused exactly when the mock had already served a request on it; only a fresh connection
//! spends time connecting; the phases add up as AIPerf defines them.

use crate::common;
use common::{config, read_json, read_jsonl, recording_mock};

use std::collections::HashMap;
use std::path::Path;

use ringperf_mock::mock::{MockServer, TruthEntry};
use serde_json::Value;

/// The 14 metrics, in AIPerf's display order.
const TRACE_METRICS: [&str; 14] = [
    "http_req_blocked",
    "http_req_dns_lookup",
    "http_req_connecting",
    "http_req_sending",
    "http_req_waiting",
    "http_req_receiving",
    "http_req_connection_reused",
    "http_req_data_sent",
    "http_req_chunks_sent",
    "http_req_data_received",
    "http_req_chunks_received",
    "http_req_connection_overhead",
    "http_req_duration",
    "http_req_total",
];

const REQUESTS: usize = 12;

/// Runs `extra` flags against `mock` with two requests in flight; returns the artifact dir.
/// One worker holds both slots, so both first requests start before either can end and open a
/// connection each however loaded the machine is (with two workers, a starved one could leave
/// every request to the other's single slot and connection).
fn run(mock: &MockServer, extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u http://{} --concurrency 2 --workers-max 1 \
         --request-count {REQUESTS} \
         --isl 30 --osl 6 --random-seed 3 --ui none --no-server-metrics --artifact-dir {} {extra}",
        mock.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).expect("run completes");
    assert_eq!((out.successes, out.errors), (REQUESTS as u64, 0));
    dir
}

fn value(rec: &Value, tag: &str) -> f64 {
    rec["metrics"][tag]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("{tag} in {}", rec["metrics"]))
}

/// Request id → the mock's entry.
fn truth_by_id(mock: &MockServer) -> HashMap<String, TruthEntry> {
    mock.truth()
        .entries()
        .into_iter()
        .filter_map(|e| e.request_id.map(|id| (id.to_string(), e)))
        .collect()
}

/// The records with their truth entries, after checking what holds for every record.
fn check_records(mock: &MockServer, dir: &Path) -> Vec<(Value, TruthEntry)> {
    let truth = truth_by_id(mock);
    assert_eq!(truth.len(), REQUESTS);
    // The first request the mock served on each connection (by arrival).
    let mut first_on: HashMap<u64, (u64, String)> = HashMap::new();
    for (id, t) in &truth {
        let e = first_on
            .entry(t.connection)
            .or_insert((t.arrival_ns, id.clone()));
        if t.arrival_ns < e.0 {
            *e = (t.arrival_ns, id.clone());
        }
    }
    let recs = read_jsonl(&dir.join("profile_export.jsonl"));
    assert_eq!(recs.len(), REQUESTS);
    let mut out = Vec::new();
    for rec in recs {
        for tag in TRACE_METRICS {
            value(&rec, tag);
        }
        let id = rec["metadata"]["x_request_id"].as_str().unwrap().to_owned();
        let t = truth[&id].clone();
        // Bytes sent: the body the mock received (AIPerf counts body chunks, not the head).
        let body = t.request_body.as_ref().expect("record_bodies").len();
        assert_eq!(rec["metrics"]["http_req_data_sent"]["unit"], "KB");
        assert_eq!(value(&rec, "http_req_data_sent") * 1024.0, body as f64);
        // Reused exactly when an earlier request came on the same connection.
        let fresh = first_on[&t.connection].1 == id;
        assert_eq!(
            value(&rec, "http_req_connection_reused"),
            if fresh { 0.0 } else { 1.0 }
        );
        let connecting = value(&rec, "http_req_connecting");
        if fresh {
            assert!(
                connecting > 0.0,
                "a fresh connection connects: {connecting}"
            );
        } else {
            assert_eq!(connecting, 0.0);
        }
        assert_eq!(value(&rec, "http_req_blocked"), 0.0);
        assert_eq!(value(&rec, "http_req_dns_lookup"), 0.0);
        assert!(value(&rec, "http_req_chunks_sent") >= 1.0);
        assert!(value(&rec, "http_req_chunks_received") >= 1.0);
        // The phases add up (ms values of integer ns: equal up to float rounding).
        let [s, w, r, d] = ["sending", "waiting", "receiving", "duration"]
            .map(|p| value(&rec, &format!("http_req_{p}")));
        assert!((s + w + r - d).abs() < 1e-9, "{s} + {w} + {r} != {d}");
        for p in [s, w, r] {
            assert!(p >= 0.0);
        }
        let overhead = value(&rec, "http_req_connection_overhead");
        assert!((overhead - connecting).abs() < 1e-9);
        let total = value(&rec, "http_req_total");
        assert!((total - (connecting + s + w + r)).abs() < 1e-9);
        out.push((rec, t));
    }
    // Two at a time over keep-alive: both fresh and reused connections were seen.
    let connections = first_on.len();
    assert!(
        (2..REQUESTS).contains(&connections),
        "{connections} connections"
    );
    out
}

#[test]
fn streaming_records_carry_the_trace_metrics_the_truth_log_confirms() {
    let mock = recording_mock(6);
    let dir = run(&mock, "--streaming");
    for (rec, t) in check_records(&mock, dir.path()) {
        // A stream's body is at least the text it carried.
        let received = value(&rec, "http_req_data_received") * 1024.0;
        let text = t.reply_text.as_ref().expect("record_bodies").len();
        assert!(
            received > text as f64,
            "{received} bytes for {text} bytes of text"
        );
    }
    // Summaries: every metric in the JSON with AIPerf's display units, and in the CSV with
    // AIPerf's labels.
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    for tag in TRACE_METRICS {
        let unit = summary[tag]["unit"]
            .as_str()
            .unwrap_or_else(|| panic!("{tag}"));
        let expected = match tag {
            "http_req_connection_reused" => "ratio",
            "http_req_data_sent" | "http_req_data_received" => "KB",
            "http_req_chunks_sent" | "http_req_chunks_received" => "count",
            _ => "ms",
        };
        assert_eq!(unit, expected, "{tag}");
        assert_eq!(
            summary[tag]["count"].as_u64(),
            Some(REQUESTS as u64),
            "{tag}"
        );
    }
    let csv = std::fs::read_to_string(dir.path().join("profile_export_aiperf.csv")).unwrap();
    for label in [
        "HTTP Waiting (TTFB) (ms),",
        "HTTP Data Sent (KB),",
        "HTTP Duration (excl. conn) (ms),",
        "HTTP Connection Reused (ratio),",
        "HTTP Chunks Received,",
    ] {
        assert!(
            csv.lines().any(|l| l.starts_with(label)),
            "{label} in\n{csv}"
        );
    }
}

#[test]
fn a_non_streamed_body_is_one_chunk_received_at_once() {
    let mock = recording_mock(6);
    let dir = run(&mock, "");
    for (rec, _) in check_records(&mock, dir.path()) {
        assert_eq!(value(&rec, "http_req_chunks_received"), 1.0);
        assert_eq!(value(&rec, "http_req_receiving"), 0.0);
    }
}

/// `--export-http-trace` adds `trace_data` to every record (absent without it), its stamps on
/// the records' wall clock and its counts equal to the metrics; `--show-trace-timing` prints the
/// trace table (absent without it) before the other tables.
#[test]
fn trace_flags_add_trace_data_and_the_console_table() {
    let mock = recording_mock(6);
    let plain = run(&mock, "--streaming");
    for rec in read_jsonl(&plain.path().join("profile_export.jsonl")) {
        assert!(rec.get("trace_data").is_none());
    }
    let console = std::fs::read_to_string(plain.path().join("profile_export_console.txt")).unwrap();
    assert!(!console.contains("HTTP Trace Timing"));

    let mock = recording_mock(6);
    let dir = run(&mock, "--streaming --export-http-trace --show-trace-timing");
    let truth = truth_by_id(&mock);
    for rec in read_jsonl(&dir.path().join("profile_export.jsonl")) {
        let t = &rec["trace_data"];
        assert_eq!(t["trace_type"], "aiohttp");
        let id = rec["metadata"]["x_request_id"].as_str().unwrap();
        let body = truth[id].request_body.as_ref().unwrap().len() as u64;
        assert_eq!(t["request_bytes_total"].as_u64(), Some(body));
        let ns = |k: &str| t[k].as_u64().unwrap_or_else(|| panic!("{k} in {t}"));
        // Ordered stamps on the record's wall clock: the attempt starts before the request is
        // written, and the last body byte is read by the record's end.
        let start = ns("request_send_start_ns");
        assert!(start <= rec["metadata"]["request_start_ns"].as_u64().unwrap());
        assert!(start <= ns("request_send_end_ns"));
        assert!(ns("request_send_end_ns") <= ns("response_receive_start_ns"));
        assert!(ns("response_receive_start_ns") <= ns("response_receive_end_ns"));
        assert_eq!(
            ns("response_receive_end_ns"),
            rec["metadata"]["request_end_ns"].as_u64().unwrap()
        );
        // The durations are the metrics', in ns.
        for (k, tag) in [
            ("sending_ns", "http_req_sending"),
            ("waiting_ns", "http_req_waiting"),
            ("receiving_ns", "http_req_receiving"),
            ("duration_ns", "http_req_duration"),
        ] {
            assert!((ns(k) as f64 / 1e6 - value(&rec, tag)).abs() < 1e-9, "{k}");
        }
        assert_eq!(
            t["response_chunks_count"].as_f64(),
            Some(value(&rec, "http_req_chunks_received"))
        );
        let reused = value(&rec, "http_req_connection_reused") == 1.0;
        assert_eq!(t.get("tcp_connect_start_ns").is_none(), reused, "{t}");
        assert_eq!(t.get("connection_reused_ns").is_some(), reused, "{t}");
    }
    let console = std::fs::read_to_string(dir.path().join("profile_export_console.txt")).unwrap();
    let table = console
        .find("ringperf | HTTP Trace Timing")
        .expect("trace table");
    assert!(table < console.find("ringperf | LLM Metrics").expect("main table"));
    for label in [
        "HTTP Blocked (ms)",
        "HTTP Waiting (TTFB) (ms)",
        "HTTP Total Time (ms)",
    ] {
        assert!(console.contains(label), "{label}");
    }
}

/// `trace_data`'s headers, status and addresses against what went over the wire: the request
/// headers are the raw export's plus `Host` and `Content-Length`, their ids and body length
/// are what the mock received; the response head is the one the mock writes; the remote port
/// is the mock's, and the local port is one per connection the mock saw.
#[test]
fn trace_data_headers_status_and_addresses_are_the_wire_s() {
    let mock = recording_mock(6);
    let dir = run(&mock, "--streaming --export-http-trace --export-level raw");
    let truth = truth_by_id(&mock);
    let raw: HashMap<String, Value> = read_jsonl(&dir.path().join("profile_export_raw.jsonl"))
        .into_iter()
        .map(|r| {
            (
                r["metadata"]["x_request_id"].as_str().unwrap().to_owned(),
                r,
            )
        })
        .collect();
    // The mock's streamed head, as `name: value` pairs in order.
    let mock_head = String::from_utf8(ringperf_mock::mock::stream_response_head()).unwrap();
    let mut mock_lines = mock_head.split("\r\n");
    assert_eq!(mock_lines.next(), Some("HTTP/1.1 200 OK"));
    let mock_headers: Vec<(String, Value)> = mock_lines
        .filter_map(|l| l.split_once(": "))
        .map(|(n, v)| (n.to_ascii_lowercase(), Value::from(v)))
        .collect();
    assert!(mock_headers.len() >= 3, "{mock_head:?}");
    let mut port_of_connection: HashMap<u64, u64> = HashMap::new();
    for rec in read_jsonl(&dir.path().join("profile_export.jsonl")) {
        let t = &rec["trace_data"];
        let id = rec["metadata"]["x_request_id"].as_str().unwrap();
        let truth = &truth[id];
        // Request headers: the raw export's, with Host first and Content-Length last.
        let sent = t["request_headers"].as_object().expect("request_headers");
        let names: Vec<&str> = sent.keys().map(String::as_str).collect();
        assert_eq!(names.first(), Some(&"Host"), "{names:?}");
        assert_eq!(names.last(), Some(&"Content-Length"), "{names:?}");
        assert_eq!(sent["Host"], mock.addr.to_string());
        let body = truth.request_body.as_ref().unwrap().len();
        assert_eq!(sent["Content-Length"], body.to_string());
        let mut rest = sent.clone();
        rest.remove("Host");
        rest.remove("Content-Length");
        assert_eq!(Value::Object(rest), raw[id]["request_headers"]);
        assert_eq!(sent["X-Request-ID"], id);
        assert_eq!(
            sent["X-Correlation-ID"].as_str(),
            truth.correlation_id.as_deref()
        );
        assert_eq!(sent["X-Session-Affinity"], "<redacted>");
        // Sent when the one write of head and body completed.
        assert_eq!(t["request_headers_sent_ns"], t["request_send_end_ns"]);
        // The response head as the mock wrote it.
        assert_eq!(t["response_status_code"], 200);
        assert_eq!(t["response_reason"], "OK");
        // Names in aiohttp's spelling of the names it knows, as AIPerf writes them.
        let got: Vec<(String, Value)> = t["response_headers"]
            .as_object()
            .expect("response_headers")
            .iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
            .collect();
        assert_eq!(got, mock_headers);
        for name in ["Server", "Content-Type", "Transfer-Encoding"] {
            assert!(t["response_headers"].get(name).is_some(), "{name} in {t}");
        }
        // Addresses: the mock's socket, and one local port per connection.
        assert_eq!(t["remote_ip"], mock.addr.ip().to_string());
        assert_eq!(t["remote_port"], mock.addr.port());
        assert_eq!(t["local_ip"], "127.0.0.1");
        let port = t["local_port"].as_u64().expect("local_port");
        assert_eq!(
            *port_of_connection.entry(truth.connection).or_insert(port),
            port,
            "connection {}",
            truth.connection
        );
    }
    // Several connections, each its own local port.
    let ports: std::collections::HashSet<u64> = port_of_connection.values().copied().collect();
    assert!(port_of_connection.len() >= 2);
    assert_eq!(
        ports.len(),
        port_of_connection.len(),
        "{port_of_connection:?}"
    );
}
