//! `https://` end to end: ringperf against the mock serving HTTPS with certificates made here (a
//! test CA and a server certificate it signs for `localhost` and `127.0.0.1`). Trusted through
//! `SSL_CERT_FILE`, a streaming run succeeds and matches the mock's truth log request by
//! request; untrusted, every request is one certificate error record; with
//! `AIPERF_HTTP_SSL_VERIFY=false` the untrusted server is accepted; keep-alive connections are
//! reused over TLS.

use crate::common;
use common::{config, read_json, read_jsonl};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ringperf::mock::{MockConfig, MockServer, MockTls, OutputLen, TruthEntry};
use serde_json::Value;

/// Output tokens of every response.
const TOKENS: u64 = 6;
/// Requests of every run.
const REQUESTS: usize = 12;

/// PEM files of one test PKI.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    /// A CA and a leaf for `localhost` / `127.0.0.1` signed by it.
    fn new() -> Self {
        Self::for_names(&["localhost", "127.0.0.1"])
    }

    /// A CA and a leaf for `names` signed by it.
    fn for_names(names: &[&str]) -> Self {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
        };
        let dir = tempfile::tempdir().unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "ringperf test CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, ca_key);
        let leaf_key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut leaf = CertificateParams::new(names.clone()).unwrap();
        leaf.distinguished_name.push(DnType::CommonName, &names[0]);
        let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca_cert.pem()).unwrap();
        std::fs::write(dir.path().join("cert.pem"), leaf_cert.pem()).unwrap();
        std::fs::write(dir.path().join("key.pem"), leaf_key.serialize_pem()).unwrap();
        Self { dir }
    }

    fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    fn mock_tls(&self) -> MockTls {
        MockTls {
            cert: self.dir.path().join("cert.pem"),
            key: self.dir.path().join("key.pem"),
        }
    }
}

fn https_mock(pki: &Pki) -> MockServer {
    ringperf::mock::start(MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(TOKENS),
        truth_log: true,
        tls: Some(pki.mock_tls()),
        ..MockConfig::default()
    })
    .expect("mock starts with TLS")
}

fn profile_line(mock: &MockServer, dir: &Path) -> String {
    format!(
        "ringperf profile -m mock-model -u https://127.0.0.1:{} --streaming --concurrency 2 \
         --request-count {REQUESTS} --isl 20 --osl {TOKENS} --random-seed 5 --ui none \
         --no-server-metrics --artifact-dir {}",
        mock.addr.port(),
        dir.display()
    )
}

/// Request id → the mock's entry.
fn truth_by_id(mock: &MockServer) -> HashMap<String, TruthEntry> {
    mock.truth()
        .entries()
        .into_iter()
        .filter_map(|e| e.request_id.map(|id| (id.to_string(), e)))
        .collect()
}

/// Every record succeeded and is the request the mock says it served whole.
fn check_against_truth(mock: &MockServer, dir: &Path) -> Vec<TruthEntry> {
    let truth = truth_by_id(mock);
    let recs = read_jsonl(&dir.join("profile_export.jsonl"));
    assert_eq!(recs.len(), REQUESTS);
    assert_eq!(truth.len(), REQUESTS, "the mock served each request once");
    let summary = read_json(&dir.join("profile_export_aiperf.json"));
    assert_eq!(
        summary["request_count"]["avg"].as_f64(),
        Some(REQUESTS as f64)
    );
    let mut served = Vec::new();
    for rec in &recs {
        assert!(rec["error"].is_null(), "{}", rec["error"]);
        let id = rec["metadata"]["x_request_id"]
            .as_str()
            .expect("request id");
        let t = truth.get(id).unwrap_or_else(|| panic!("the mock saw {id}"));
        assert!(t.completed && t.stream && t.fault.is_none());
        assert_eq!(t.event_ns.len(), TOKENS as usize);
        assert_eq!(
            rec["metrics"]["output_sequence_length"]["value"].as_u64(),
            Some(t.content_tokens)
        );
        // Causality: the first token cannot be read before the mock wrote it (both sides read
        // CLOCK_MONOTONIC).
        let start = raw_start(rec, &summary);
        let ttft_ns = rec["metrics"]["time_to_first_token"]["value"]
            .as_f64()
            .expect("ttft")
            * 1e6;
        assert!(ttft_ns >= (t.event_ns[0] - start) as f64 - 1_000.0);
        served.push(t.clone());
    }
    served
}

/// A record's wall-clock `request_start_ns` as raw CLOCK_MONOTONIC ns (the run's anchors).
fn raw_start(rec: &Value, summary: &Value) -> u64 {
    let wall = rec["metadata"]["request_start_ns"].as_u64().unwrap();
    let clock = &summary["ringperf"]["clock"];
    wall - clock["wall_origin_ns"].as_u64().unwrap()
        + clock["monotonic_origin_ns"].as_u64().unwrap()
}

#[test]
fn trusted_https_run_matches_the_truth_log_and_reuses_connections() {
    let pki = Pki::new();
    let mock = https_mock(&pki);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&profile_line(&mock, dir.path()));
    // What `SSL_CERT_FILE` sets (read from the environment in `Config::from_args`).
    cfg.tls.ca_file = Some(pki.ca());
    assert!(cfg.tls.verify);
    let out = ringperf::run::run(cfg).expect("run completes");
    assert_eq!((out.successes, out.errors), (REQUESTS as u64, 0));
    assert_eq!(out.exit_code(), 0);
    let served = check_against_truth(&mock, dir.path());
    // Keep-alive over TLS: two at a time, so at least two connections, and far fewer than
    // requests (a pooled connection is dropped only if the server closed it).
    let connections: std::collections::HashSet<u64> = served.iter().map(|t| t.connection).collect();
    assert!(
        connections.len() >= 2 && connections.len() < REQUESTS,
        "{} TLS connections for {REQUESTS} requests",
        connections.len()
    );
}

#[test]
fn untrusted_certificate_is_one_clear_error_per_request() {
    let pki = Pki::new();
    let mock = https_mock(&pki);
    let dir = tempfile::tempdir().unwrap();
    // The test CA is not trusted: no `SSL_CERT_FILE`.
    let cfg = config(&profile_line(&mock, dir.path()));
    let out = ringperf::run::run(cfg).expect("the run itself completes");
    assert_eq!((out.successes, out.errors), (0, REQUESTS as u64));
    assert_eq!(out.exit_code(), 1, "a run with no success exits 1");
    assert!(mock.truth().is_empty(), "no request reached the mock");
    let url = format!("https://127.0.0.1:{}", mock.addr.port());
    for rec in read_jsonl(&dir.path().join("profile_export.jsonl")) {
        let e = &rec["error"];
        assert_eq!(e["type"], "ClientConnectorCertificateError", "{e}");
        assert!(e["code"].is_null(), "{e}");
        let msg = e["message"].as_str().expect("message");
        assert!(msg.starts_with(&url), "{msg}");
        assert!(msg.contains("certificate"), "{msg}");
        assert!(msg.contains("UnknownIssuer"), "{msg}");
    }
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let errors = summary["error_summary"].as_array().expect("error summary");
    assert_eq!(errors.len(), 1, "one kind of error: {errors:?}");
    assert_eq!(errors[0]["count"].as_u64(), Some(REQUESTS as u64));
}

#[test]
fn wrong_host_is_a_certificate_error() {
    // A trusted CA, but its certificate names another host than the URL's.
    let pki = Pki::for_names(&["other.example"]);
    let mock = https_mock(&pki);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&profile_line(&mock, dir.path()));
    cfg.tls.ca_file = Some(pki.ca());
    let out = ringperf::run::run(cfg).expect("the run itself completes");
    assert_eq!((out.successes, out.errors), (0, REQUESTS as u64));
    assert!(mock.truth().is_empty(), "no request reached the mock");
    for rec in read_jsonl(&dir.path().join("profile_export.jsonl")) {
        let msg = rec["error"]["message"].as_str().expect("message");
        assert_eq!(rec["error"]["type"], "ClientConnectorCertificateError");
        assert!(
            msg.contains("certificate not valid for name \"127.0.0.1\""),
            "{msg}"
        );
    }
}

#[test]
fn ssl_verify_false_accepts_the_untrusted_server() {
    let pki = Pki::new();
    let mock = https_mock(&pki);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&profile_line(&mock, dir.path()));
    // What `AIPERF_HTTP_SSL_VERIFY=false` sets.
    cfg.tls.verify = false;
    let out = ringperf::run::run(cfg).expect("run completes");
    assert_eq!((out.successes, out.errors), (REQUESTS as u64, 0));
    check_against_truth(&mock, dir.path());
}

/// The binary reads `SSL_CERT_FILE` and `AIPERF_HTTP_SSL_VERIFY` from its environment.
#[test]
fn the_binary_takes_the_ssl_environment() {
    let pki = Pki::new();
    let mock = https_mock(&pki);
    let run = |env: &[(&str, &Path)], verify: Option<&str>| {
        let dir = tempfile::tempdir().unwrap();
        let line = profile_line(&mock, dir.path());
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringperf"));
        cmd.args(line.split_whitespace().skip(1))
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .env_remove("AIPERF_HTTP_SSL_VERIFY");
        for (k, v) in env {
            cmd.env(k, v);
        }
        if let Some(v) = verify {
            cmd.env("AIPERF_HTTP_SSL_VERIFY", v);
        }
        let out = cmd.output().expect("ringperf runs");
        let jsonl = dir.path().join("profile_export.jsonl");
        let recs = if jsonl.exists() {
            read_jsonl(&jsonl)
        } else {
            Vec::new()
        };
        (out, recs)
    };
    let (out, recs) = run(&[("SSL_CERT_FILE", &pki.ca())], None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(recs.len(), REQUESTS);
    assert!(recs.iter().all(|r| r["error"].is_null()));

    let (out, recs) = run(&[], None);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        recs.iter()
            .all(|r| r["error"]["type"] == "ClientConnectorCertificateError")
    );

    let (out, recs) = run(&[], Some("false"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(recs.iter().all(|r| r["error"].is_null()));

    let (out, recs) = run(&[], Some("maybe"));
    assert!(recs.is_empty(), "a setup error sends nothing");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("AIPERF_HTTP_SSL_VERIFY=maybe"));
}

/// The `/metrics` of an `https` URL and an `https` `--server-metrics` URL are scraped over TLS
/// with the run's trust settings: the mock's success counter over the run's window is exactly
/// the requests it served.
#[test]
fn server_metrics_are_scraped_over_https() {
    let pki = Pki::new();
    let mock = ringperf::mock::start(MockConfig {
        ttft: Duration::from_millis(2),
        output_tokens: OutputLen::Fixed(TOKENS),
        metrics_mode: ringperf::mock::MetricsMode::Vllm,
        tls: Some(pki.mock_tls()),
        ..MockConfig::default()
    })
    .expect("mock starts with TLS");
    // A second spelling of the same server, so that it is a separate endpoint.
    let extra = format!("https://localhost:{}/metrics", mock.addr.port());
    let dir = tempfile::tempdir().unwrap();
    let line = profile_line(&mock, dir.path()).replace("--no-server-metrics", "");
    let mut cfg = config(&format!("{line} --server-metrics {extra}"));
    cfg.tls.ca_file = Some(pki.ca());
    let out = ringperf::run::run(cfg).expect("run completes");
    assert_eq!((out.successes, out.errors), (REQUESTS as u64, 0));
    let doc = read_json(&dir.path().join("server_metrics_export.json"));
    let url = format!("https://127.0.0.1:{}/metrics", mock.addr.port());
    let ok: Vec<&str> = doc["summary"]["endpoints_successful"]
        .as_array()
        .expect("endpoints_successful")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(ok, vec![url.as_str(), extra.as_str()], "{}", doc["summary"]);
    for u in [&url, &extra] {
        let info = &doc["summary"]["endpoint_info"][u.as_str()];
        assert!(
            info["total_fetches"].as_u64().unwrap_or(0) >= 2,
            "{u}: {info}"
        );
    }
    // Each endpoint's window covers every request: the success counter grew by the request
    // count on each.
    let total: f64 = doc["metrics"]["vllm:request_success"]["series"]
        .as_array()
        .expect("request_success exported")
        .iter()
        .map(|s| s["stats"]["total"].as_f64().expect("total"))
        .sum();
    assert_eq!(total, 2.0 * REQUESTS as f64);
}

/// TTFT and inter-chunk latency over HTTPS against the mock's truth log, with the bounds of the
/// plain-HTTP test (`e2e::streaming_ground_truth`): no value below the truth, none more than
/// 50 ms above it, the median TTFT excess under 2 ms and the median (reported gap - true gap)
/// within 1 ms of zero. The mock stamps an event as it hands it to its TLS relay, so the excess
/// is the relay, the encryption, loopback and the client's decryption. A TLS socket left with
/// Nagle's algorithm holds the first event behind the unacknowledged response head until the
/// client's delayed ACK (tens of ms): the median TTFT excess then fails the 2 ms bound.
#[test]
fn https_ttft_and_gaps_match_the_truth_log() {
    const EVENTS: usize = 12;
    let pki = Pki::new();
    let mock = ringperf::mock::start(MockConfig {
        ttft: Duration::from_millis(25),
        itl: Duration::from_millis(4),
        output_tokens: OutputLen::Fixed(EVENTS as u64),
        truth_log: true,
        tls: Some(pki.mock_tls()),
        ..MockConfig::default()
    })
    .expect("mock starts with TLS");
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&format!(
        "ringperf profile -m mock-model -u https://127.0.0.1:{} --streaming --concurrency 3 \
         --request-count 24 --isl 40 --osl {EVENTS} --random-seed 7 --ui none \
         --no-server-metrics --artifact-dir {}",
        mock.addr.port(),
        dir.path().display()
    ));
    cfg.tls.ca_file = Some(pki.ca());
    let out = ringperf::run::run(cfg).expect("run completes");
    assert_eq!((out.successes, out.errors), (24, 0));
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let truth = truth_by_id(&mock);
    let recs = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(recs.len(), 24);
    let (mut ttft_excess, mut gap_excess) = (Vec::new(), Vec::new());
    for rec in &recs {
        let id = rec["metadata"]["x_request_id"].as_str().expect("id");
        let t = truth.get(id).unwrap_or_else(|| panic!("the mock saw {id}"));
        assert_eq!(t.event_ns.len(), EVENTS);
        let start = raw_start(rec, &summary);
        assert!(start <= t.arrival_ns, "sent before the mock received it");
        let ttft_ns = rec["metrics"]["time_to_first_token"]["value"]
            .as_f64()
            .expect("ttft")
            * 1e6;
        let excess = ttft_ns - (t.event_ns[0] - start) as f64;
        assert!(
            (-1_000.0..50e6).contains(&excess),
            "TTFT excess {excess} ns"
        );
        ttft_excess.push(excess);
        let icl = rec["metrics"]["inter_chunk_latency"]["value"]
            .as_array()
            .expect("icl list");
        assert_eq!(icl.len(), EVENTS - 1);
        for (k, v) in icl.iter().enumerate() {
            let d = v.as_f64().expect("gap") * 1e6 - (t.event_ns[k + 1] - t.event_ns[k]) as f64;
            assert!(d.abs() < 50e6, "gap {k} off by {d} ns");
            gap_excess.push(d);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let ttft_median = median(&mut ttft_excess);
    assert!(ttft_median < 2e6, "median TTFT excess {ttft_median} ns");
    let gap_median = median(&mut gap_excess);
    assert!(gap_median.abs() < 1e6, "median gap excess {gap_median} ns");
}
