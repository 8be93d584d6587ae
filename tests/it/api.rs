//! `--api-port`: the live API end to end. A real run against the mock with the API on; a client
//! that polls its routes and listens on its WebSocket as a lab's dashboard would; every figure
//! it serves checked against the run's own files and the mock's record of what it served.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ringperf_wire::ws::{self, Opcode};
use serde_json::Value;

/// A free loopback port (bound, read, released: the run binds it a moment later).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// One HTTP/1.1 request; the status and the body (`Connection: close`).
fn http(port: u16, method: &str, path: &str) -> Option<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let at = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..at]).to_string();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, raw[at + 4..].to_vec()))
}

fn get_json(port: u16, path: &str) -> Value {
    let (status, body) = http(port, "GET", path).expect("the API answers");
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).expect("JSON")
}

/// A WebSocket client subscribed to every message type.
struct Socket {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Socket {
    fn connect(port: u16) -> Self {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        write!(
            s,
            "GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let at = loop {
            let n = s.read(&mut chunk).expect("handshake");
            assert!(n > 0, "closed during the handshake");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at;
            }
        };
        let head = String::from_utf8_lossy(&buf[..at]).to_lowercase();
        assert!(head.starts_with("http/1.1 101"), "{head}");
        // RFC 6455's example key and its accept value.
        assert!(
            head.contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo="),
            "{head}"
        );
        buf.drain(..at + 4);
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        Self { s, buf }
    }

    fn send(&mut self, text: &str) {
        let mut out = Vec::new();
        ws::encode_masked(Opcode::Text, true, text.as_bytes(), [1, 2, 3, 4], &mut out);
        self.s.write_all(&out).unwrap();
    }

    /// Every frame until the server closes or `limit` passes: text frames as JSON, and the
    /// close frame's code.
    fn read_until_close(&mut self, limit: Duration) -> (Vec<Value>, Option<u16>) {
        let start = Instant::now();
        let mut texts = Vec::new();
        let mut chunk = [0u8; 65536];
        while start.elapsed() < limit {
            while let Some((op, payload, used)) = ws::decode_server_frame(&self.buf) {
                let payload = payload.to_vec();
                self.buf.drain(..used);
                match op {
                    Opcode::Text => texts.push(serde_json::from_slice(&payload).expect("JSON")),
                    Opcode::Close => {
                        let code = (payload.len() >= 2)
                            .then(|| u16::from_be_bytes([payload[0], payload[1]]));
                        return (texts, code);
                    }
                    _ => {}
                }
            }
            match self.s.read(&mut chunk) {
                Ok(0) => return (texts, None),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(_) => {}
            }
        }
        (texts, None)
    }
}

fn spawn(server_addr: SocketAddr, dir: &Path, port: u16, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "mock-model", "--streaming", "--ui", "none"])
        .args(["--tokenizer", "builtin", "--concurrency", "2"])
        .env("AIPERF_SERVER_METRICS_COLLECTION_INTERVAL", "0.1")
        .env("AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD", "0.2")
        .args(["--request-count", "40", "--stats-interval", "0.2"])
        .arg("--url")
        .arg(format!("http://{server_addr}"))
        .arg("--artifact-dir")
        .arg(dir)
        .args(["--api-port", &port.to_string()])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

fn wait_up(port: u16) {
    let start = Instant::now();
    while http(port, "GET", "/healthz").is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the API never came up"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_dashboard_client_sees_the_run_as_it_goes_and_its_results_as_written() {
    // Slow tokens (20 ms apart): 40 requests of 16 tokens at concurrency 2 take ~7 s.
    let server = ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        itl: Duration::from_millis(20),
        output_tokens: ringperf_mock::mock::OutputLen::Fixed(16),
        truth_log: true,
        ..ringperf_mock::mock::MockConfig::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let child = spawn(server.addr, dir.path(), port, &[]);
    wait_up(port);
    let mut sock = Socket::connect(port);
    sock.send(r#"{"type":"subscribe","message_types":["*"]}"#);
    sock.send(r#"{"type":"ping"}"#);
    sock.send("[1]");
    // While it runs: the shutdown is refused, the progress moves.
    let (status, body) = http(port, "POST", "/api/shutdown").unwrap();
    assert_eq!(status, 409, "{}", String::from_utf8_lossy(&body));
    let mut seen_running = false;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        let p = get_json(port, "/api/progress");
        let done = p["phases"]["profiling"]["requests_completed"]
            .as_u64()
            .unwrap_or(0);
        if p["system_state"] == "profiling" && done > 0 && done < 40 {
            assert_eq!(p["phases"]["profiling"]["total_expected_requests"], 40);
            assert!(p["phases"]["profiling"]["requests_sent"].as_u64().unwrap() >= done);
            seen_running = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(seen_running, "never saw the profiling phase part done");
    // The server's figures, from the mock's `/metrics` scraped so far.
    let start = Instant::now();
    let server_figures = loop {
        let s = get_json(port, "/api/server-metrics");
        if s.get("snapshot").is_some() {
            break s;
        }
        assert_eq!(s["message"], "No server metrics available yet");
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no server metrics"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let key = server.addr.to_string();
    let endpoint = &server_figures["endpoint_summaries"][&key];
    assert_eq!(endpoint["endpoint_url"], format!("http://{key}/metrics"));
    assert!(endpoint["info"]["total_fetches"].as_u64().unwrap() >= 1);
    assert_eq!(
        endpoint["metrics"]["vllm:num_requests_running"]["type"],
        "gauge"
    );
    let running = server_figures["snapshot"]["num_running"].as_f64().unwrap();
    assert!((0.0..=2.0).contains(&running), "{running}");
    // The results, once written: the same document as the file, the same files as the dir.
    let start = Instant::now();
    let results = loop {
        let r = get_json(port, "/api/results");
        if r["status"] == "complete" {
            break r;
        }
        assert_eq!(r["status"], "running");
        assert!(start.elapsed() < Duration::from_secs(60), "no results");
        std::thread::sleep(Duration::from_millis(50));
    };
    let file = dir.path().join("profile_export_aiperf.json");
    assert_eq!(results["results"], common::read_json(&file));
    let truth = common::truth_of(&server, 40);
    assert_eq!(
        results["results"]["request_count"]["avg"],
        truth.len() as f64
    );
    let list = get_json(port, "/api/results/list");
    assert_eq!(list["ready"], true);
    let listed = list["files"].as_array().unwrap();
    let entry = listed
        .iter()
        .find(|f| f["name"] == "profile_export_aiperf.json")
        .expect("the JSON export is listed");
    assert_eq!(entry["size"], std::fs::metadata(&file).unwrap().len());
    assert!(
        !listed
            .iter()
            .any(|f| f["name"] == ".aiperf_results_ready.json")
    );
    let (status, bytes) =
        http(port, "GET", "/api/results/files/profile_export_aiperf.json").unwrap();
    assert_eq!((status, bytes), (200, std::fs::read(&file).unwrap()));
    let (status, _) = http(port, "GET", "/api/results/files/../etc/passwd").unwrap();
    assert_eq!(status, 400);
    // The progress as it ended: every request the mock served.
    let p = get_json(port, "/api/progress");
    let phase = &p["phases"]["profiling"];
    assert_eq!(phase["final_requests_sent"], truth.len() as u64);
    assert_eq!(phase["final_requests_completed"], truth.len() as u64);
    assert_eq!(phase["success_records"], truth.len() as u64);
    assert_eq!(p["results_exported"], true);
    // The live figures: the Prometheus page and the JSON route say the same.
    let m = get_json(port, "/api/metrics");
    assert_eq!(m["model"], "mock-model");
    assert_eq!(m["concurrency"], 2);
    assert_eq!(m["streaming"], true);
    let count = m["metrics"]["request_latency"]["count"].as_u64().unwrap();
    assert!(count > 0 && count <= 40, "{count}");
    assert_eq!(m["metrics"]["request_latency"]["unit"], "ms");
    let (_, page) = http(port, "GET", "/metrics").unwrap();
    let page = String::from_utf8(page).unwrap();
    assert!(page.starts_with("# HELP aiperf_info AIPerf benchmark information\n"));
    let line = page
        .lines()
        .find(|l| l.starts_with("aiperf_request_latency_ms_count{"))
        .expect("the request latency's count");
    assert!(line.ends_with(&format!(" {count}")), "{line}");
    assert!(line.contains(r#"model="mock-model""#), "{line}");
    // A client's shutdown ends the grace early; the WebSocket is closed with a going-away.
    let (status, body) = http(port, "POST", "/api/shutdown").unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let (messages, close) = sock.read_until_close(Duration::from_secs(10));
    assert_eq!(close, Some(1001));
    let out = child.wait_with_output().expect("the run ends");
    assert!(out.status.success());
    // The realtime block (printed with an API port) carries the server's row.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("  srv    ") && l.contains(" queue=")),
        "{stderr}"
    );
    let types: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["message_type"].as_str().or(m["type"].as_str()))
        .collect();
    assert_eq!(&types[..3], ["subscribed", "pong", "error"], "{types:?}");
    assert_eq!(messages[2]["message"], "Payload must be a JSON object");
    for t in [
        "realtime_metrics",
        "credit_phase_progress",
        "processing_stats",
        "credit_phase_sending_complete",
        "credit_phase_complete",
        "all_records_received",
        "realtime_server_metrics",
    ] {
        assert!(types.contains(&t), "no {t} in {types:?}");
    }
    let complete = messages
        .iter()
        .find(|m| m["message_type"] == "credit_phase_complete")
        .unwrap();
    assert_eq!(
        complete["stats"]["final_requests_completed"],
        truth.len() as u64
    );
    let states: Vec<&str> = messages
        .iter()
        .filter(|m| m["message_type"] == "system_state_changed")
        .filter_map(|m| m["state"].as_str())
        .collect();
    assert!(
        states.ends_with(&["processing", "stopping", "shutdown"]),
        "{states:?}"
    );
}

#[test]
fn a_host_without_a_port_and_a_taken_port_are_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "m", "--mock", "--tokenizer", "builtin"])
        .args([
            "--request-count",
            "1",
            "--api-host",
            "127.0.0.1",
            "--ui",
            "none",
        ])
        .env_remove("AIPERF_API_SERVER_PORT")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("api_host requires api_port (or AIPERF_API_SERVER_PORT) to be set")
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-m",
            "m",
            "--mock",
            "--tokenizer",
            "builtin",
            "--ui",
            "none",
        ])
        .args(["--request-count", "1", "--api-port", &port.to_string()])
        .arg("--artifact-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("API server cannot bind 127.0.0.1:{port}")),
        "{err}"
    );
    // From the variable alone it is a warning: the run goes on without the API.
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-m",
            "m",
            "--mock",
            "--tokenizer",
            "builtin",
            "--ui",
            "none",
        ])
        .args(["--request-count", "3"])
        .env("AIPERF_API_SERVER_PORT", port.to_string())
        .arg("--artifact-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("the run goes on without it"));
    drop(taken);
}
