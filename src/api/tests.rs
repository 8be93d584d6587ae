//! The live API's state and routes without a network, and its server over loopback.

use super::*;
use ringperf_metrics::lab::timing::PhaseStats;
use std::io::{Read, Write};
use std::net::TcpStream;

fn live() -> Arc<Live> {
    Arc::new(Live::new(Arc::new(Hub::default())))
}

fn get(live: &Live, method: &str, path: &str) -> Response {
    live.handle(&Request {
        method: method.into(),
        path: path.into(),
        query: String::new(),
    })
}

fn body(r: &Response) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

fn start(expected: Option<u64>) -> PhaseStart {
    PhaseStart {
        phase: Phase::Profiling,
        index: 1,
        profiling_index: Some(0),
        name: "profiling".into(),
        start_wall_ns: 1_000_000_000,
        expected_requests: expected,
        expected_duration_sec: None,
        expected_sessions: None,
        grace_sec: Some(30.0),
    }
}

fn progress(at_s: f64, completed: u64, sent: u64) -> PhaseProgress {
    PhaseProgress {
        phase: Phase::Profiling,
        stats: PhaseStats {
            requests_sent: sent,
            requests_completed: completed,
            sent_sessions: sent,
            completed_sessions: completed,
            total_session_turns: sent,
            ..PhaseStats::default()
        },
        success_records: completed,
        error_records: 0,
        sending_complete: false,
        ended: false,
        all_records: false,
        now_wall_ns: 1_000_000_000 + (at_s * 1e9) as u64,
    }
}

#[test]
fn progress_has_aiperfs_fields_rates_and_etas() {
    let l = live();
    l.phase_start(&start(Some(100)));
    l.progress(&[progress(4.0, 20, 22)], &[]);
    let p = body(&get(&l, "GET", "/api/progress"));
    let s = &p["phases"]["profiling"];
    let keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, PHASE_FIELDS);
    assert_eq!(s["phase_index"], 1);
    assert_eq!(s["profiling_index"], 0);
    assert_eq!(s["requests_sent"], 22);
    // 20 answers in 4 s: 5 a second; 80 left: 16 s.
    assert_eq!(s["requests_per_second"], 5.0);
    assert_eq!(s["requests_eta_sec"], 16.0);
    assert_eq!(s["expected_grace_period_sec"], 30.0);
    assert_eq!(s["sent_end_ns"], Value::Null);
    assert_eq!(p["results_exported"], false);
    // The messages carry AIPerf's subsets: credit counters without the records, records
    // without the credit counters, neither with the rates.
    let st = lock(&l.state);
    let credit = st.phases[0].credit()["stats"].clone();
    assert_eq!(credit["requests_sent"], 22);
    assert!(credit.get("success_records").is_none() && credit.get("requests_per_second").is_none());
    assert!(credit.get("sent_end_ns").is_none(), "nulls are left out");
    let records = Value::Object(st.phases[0].records());
    assert_eq!(
        (
            records["success_records"].clone(),
            records["error_records"].clone()
        ),
        (json!(20), json!(0))
    );
    assert!(records.get("requests_sent").is_none() && records.get("records_eta_sec").is_none());
    assert_eq!(records["phase_name"], "profiling");
    drop(st);
    // Without an expected count there is no ETA.
    let l = live();
    l.phase_start(&start(None));
    l.progress(&[progress(4.0, 20, 22)], &[]);
    let p = body(&get(&l, "GET", "/api/progress"));
    assert_eq!(p["phases"]["profiling"]["requests_eta_sec"], Value::Null);
}

#[test]
fn the_phase_end_fills_the_final_counts_once() {
    let l = live();
    l.phase_start(&start(Some(10)));
    let mut end = progress(2.0, 10, 10);
    end.sending_complete = true;
    end.ended = true;
    l.progress(&[end], &[]);
    let mut later = progress(3.0, 10, 10);
    later.sending_complete = true;
    later.ended = true;
    later.all_records = true;
    l.progress(&[later], &[]);
    let s = body(&get(&l, "GET", "/api/progress"))["phases"]["profiling"].clone();
    assert_eq!(s["final_requests_sent"], 10);
    assert_eq!(s["final_requests_completed"], 10);
    // The end is stamped at the first report that saw it, not a later one.
    assert_eq!(s["requests_end_ns"], 3_000_000_000u64);
    assert_eq!(s["sent_end_ns"], 3_000_000_000u64);
    assert_eq!(s["records_end_ns"], 4_000_000_000u64);
}

#[test]
fn routes_answer_as_aiperfs_before_a_run() {
    let l = live();
    let r = get(&l, "GET", "/api/run");
    assert_eq!(r.status, 503);
    assert_eq!(body(&r), json!({"detail": "No active benchmark run."}));
    assert_eq!(get(&l, "GET", "/healthz").body, b"ok");
    assert_eq!(
        body(&get(&l, "GET", "/api/results")),
        json!({"status": "running", "results": null})
    );
    let r = get(&l, "POST", "/healthz");
    assert_eq!(r.status, 405);
    assert_eq!(r.extra, vec![("allow", "GET".to_owned())]);
    assert_eq!(get(&l, "GET", "/api/shutdown").status, 405);
    let r = get(&l, "POST", "/api/shutdown");
    assert_eq!(r.status, 409);
    assert_eq!(get(&l, "GET", "/nope").status, 404);
    // Before the first snapshot there is no page.
    assert_eq!(get(&l, "GET", "/metrics").body, b"");
}

#[test]
fn artifacts_are_served_from_the_results_directory_only() {
    let l = live();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.json"), b"{}").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/b.csv"), b"x,y\n").unwrap();
    std::fs::write(dir.path().join(MARKER), b"{}").unwrap();
    let r = get(&l, "GET", "/api/results/files/a.json");
    assert_eq!(r.status, 404, "not before the results");
    l.results(json!({"k": 1}), dir.path(), false);
    assert_eq!(get(&l, "GET", "/api/results/files/a.json").body, b"{}");
    assert_eq!(
        get(&l, "GET", "/api/results/files/sub%2Fb.csv").body,
        b"x,y\n"
    );
    for bad in ["../x", "sub/../../x", MARKER, "/etc/passwd", ""] {
        let r = get(&l, "GET", &format!("/api/results/files/{bad}"));
        assert_eq!(r.status, 400, "{bad}");
    }
    assert_eq!(get(&l, "GET", "/api/results/files/none.json").status, 404);
    let list = body(&get(&l, "GET", "/api/results/list"));
    assert_eq!(
        list["files"],
        json!([{"name": "a.json", "size": 2}, {"name": "sub/b.csv", "size": 4}])
    );
    let r = body(&get(&l, "GET", "/api/results"));
    assert_eq!(r, json!({"status": "complete", "results": {"k": 1}}));
    l.results(json!({}), dir.path(), true);
    assert_eq!(body(&get(&l, "GET", "/api/results"))["status"], "cancelled");
}

/// A raw exchange with a server on loopback: what came back.
fn exchange(addr: std::net::SocketAddr, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn the_server_keeps_connections_alive_gzips_and_refuses_bad_requests() {
    let hub = Arc::new(Hub::default());
    let l = Arc::new(Live::new(hub.clone()));
    let handler: Arc<dyn Handler> = l.clone();
    let server = Server::start("127.0.0.1:0".parse().unwrap(), handler, hub, None).unwrap();
    // Two requests on one connection, the second closing it.
    let two = exchange(
        server.addr,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(two.matches("HTTP/1.1 200 OK").count(), 2, "{two}");
    // A body of 500 bytes or more is gzipped for a client that accepts it.
    l.begin(RunIdentity {
        config: json!({"pad": "x".repeat(600)}),
        run_info: json!({}),
        benchmark_id: "b".into(),
        model: "m".into(),
        endpoint_type: "chat".into(),
        streaming: true,
        concurrency: Some(1),
        request_rate: None,
    });
    let zipped = exchange(
        server.addr,
        b"GET /api/config HTTP/1.1\r\nAccept-Encoding: br, gzip;q=0.5\r\nConnection: close\r\n\r\n",
    );
    assert!(zipped.contains("content-encoding: gzip"), "{zipped}");
    let plain = exchange(
        server.addr,
        b"GET /api/config HTTP/1.1\r\nConnection: close\r\n\r\n",
    );
    assert!(!plain.contains("content-encoding"), "{plain}");
    assert!(plain.contains(&"x".repeat(600)));
    let huge = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "y".repeat(20_000));
    assert!(exchange(server.addr, huge.as_bytes()).starts_with("HTTP/1.1 431"));
    assert!(exchange(server.addr, b"\x01\x02 nonsense\r\n\r\n").starts_with("HTTP/1.1 400"));
    let no_upgrade = exchange(
        server.addr,
        b"GET /ws HTTP/1.1\r\nConnection: close\r\n\r\n",
    );
    assert!(no_upgrade.starts_with("HTTP/1.1 400"), "{no_upgrade}");
    server.stop();
}

#[test]
fn websocket_commands_answer_as_aiperfs() {
    let hub = Hub::default();
    let (id, rx) = hub.join().unwrap();
    assert_eq!(
        server::command(
            r#"{"type":"subscribe","message_types":["a","b"]}"#,
            id,
            &hub
        ),
        r#"{"type":"subscribed","message_types":["a","b"]}"#
    );
    assert!(hub.wants("a") && !hub.wants("c"));
    hub.publish("a", "one");
    hub.publish("c", "never");
    assert_eq!(&*rx.try_recv().unwrap(), "one");
    assert!(rx.try_recv().is_err());
    assert_eq!(
        server::command(r#"{"type":"unsubscribe","message_types":["a"]}"#, id, &hub),
        r#"{"type":"unsubscribed","message_types":["a"]}"#
    );
    assert!(!hub.wants("a"));
    assert_eq!(
        server::command(r#"{"type":"subscribe","message_types":"a"}"#, id, &hub),
        r#"{"type":"error","message":"message_types must be a list of strings"}"#
    );
    assert_eq!(
        server::command(r#"{"type":"ping"}"#, id, &hub),
        r#"{"type":"pong"}"#
    );
    assert_eq!(server::command(r#"{"type":"other"}"#, id, &hub), "");
    assert!(
        server::command("{", id, &hub).starts_with(r#"{"type":"error","message":"Invalid JSON: "#)
    );
    server::command(r#"{"type":"subscribe","message_types":["*"]}"#, id, &hub);
    assert!(hub.wants("anything"));
    // At most 100 clients.
    let more: Vec<_> = (1..server::MAX_WEBSOCKETS)
        .map(|_| hub.join().unwrap())
        .collect();
    assert!(hub.join().is_none());
    drop(more);
}

#[test]
fn a_new_run_replaces_what_the_api_shows_of_the_last() {
    let l = live();
    let identity = |id: &str| RunIdentity {
        config: json!({}),
        run_info: json!({"benchmark_id": id}),
        benchmark_id: id.into(),
        model: "m".into(),
        endpoint_type: "chat".into(),
        streaming: false,
        concurrency: Some(1),
        request_rate: None,
    };
    l.begin(identity("first"));
    l.phase_start(&start(Some(10)));
    let dir = tempfile::tempdir().unwrap();
    l.results(json!({"run": 1}), dir.path(), false);
    assert_eq!(body(&get(&l, "GET", "/api/results"))["status"], "complete");
    // The next run of a multi-run, a sweep or a search.
    l.begin(identity("second"));
    assert_eq!(body(&get(&l, "GET", "/api/run"))["benchmark_id"], "second");
    assert_eq!(body(&get(&l, "GET", "/api/progress"))["phases"], json!({}));
    assert_eq!(body(&get(&l, "GET", "/api/results"))["status"], "running");
    assert_eq!(body(&get(&l, "GET", "/api/results/list"))["ready"], false);
    let page = String::from_utf8(get(&l, "GET", "/metrics").body).unwrap();
    assert!(page.contains(r#"benchmark_id="second""#), "{page}");
}
