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

use ringperf_mock::mock::{MockConfig, MockServer, MockTls, OutputLen, TruthEntry};
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
    ringperf_mock::mock::start(MockConfig {
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
    assert_eq!(ringperf::exit::of_run(&out), 0);
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
    assert_eq!(
        ringperf::exit::of_run(&out),
        1,
        "a run with no success exits 1"
    );
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
    let mock = ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(2),
        output_tokens: OutputLen::Fixed(TOKENS),
        metrics_mode: ringperf_mock::mock::MetricsMode::Vllm,
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
    let mock = ringperf_mock::mock::start(MockConfig {
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

/// Whether `openssl` runs here (a missing one fails the test under `CI=true`).
fn have_openssl() -> bool {
    common::require_tool(
        "openssl",
        common::tool_runs("openssl", "version"),
        "openssl not found: skipping a test of openssl-made certificates",
    )
}

/// Runs `openssl args…` in `dir`; it must succeed.
fn openssl(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A self-signed certificate made the common way, `openssl req -x509 -newkey KEY -nodes -subj
/// SUBJ [-addext subjectAltName=SAN]`, with openssl's defaults for everything else (among them
/// `basicConstraints=critical,CA:TRUE`): `NAME.pem` and `NAME.key` in `dir`.
fn openssl_self_signed(
    dir: &Path,
    name: &str,
    newkey: &[&str],
    subj: &str,
    san: Option<&str>,
) -> MockTls {
    let (cert, key) = (format!("{name}.pem"), format!("{name}.key"));
    let mut args = vec!["req", "-x509", "-newkey"];
    args.extend_from_slice(newkey);
    args.extend_from_slice(&["-nodes", "-keyout", &key, "-out", &cert, "-subj", subj]);
    let ext = san.map(|s| format!("subjectAltName={s}"));
    if let Some(ext) = &ext {
        args.extend_from_slice(&["-addext", ext]);
    }
    openssl(dir, &args);
    MockTls {
        cert: dir.join(cert),
        key: dir.join(key),
    }
}

/// What openssl itself says of `cert`'s basic constraints.
fn openssl_basic_constraints(cert: &Path) -> String {
    let path = cert.to_str().expect("utf-8 path");
    openssl(
        cert.parent().expect("dir"),
        &["x509", "-in", path, "-noout", "-ext", "basicConstraints"],
    )
}

/// A run against the mock serving `tls`, trusting the PEM bundle `trusted` (as
/// `SSL_CERT_FILE` does): its outcome and records.
fn run_trusting(tls: MockTls, trusted: &Path) -> (MockServer, ringperf::run::Outcome, Vec<Value>) {
    let mock = ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(TOKENS),
        truth_log: true,
        tls: Some(tls),
        ..MockConfig::default()
    })
    .expect("mock starts with TLS");
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&profile_line(&mock, dir.path()));
    cfg.tls.ca_file = Some(trusted.to_owned());
    let out = ringperf::run::run(cfg).expect("the run itself completes");
    let recs = read_jsonl(&dir.path().join("profile_export.jsonl"));
    if out.successes > 0 {
        check_against_truth(&mock, dir.path());
    }
    (mock, out, recs)
}

/// Every request was refused for its certificate before anything reached the mock: the message
/// of each (all alike).
fn refused_message(tls: MockTls, trusted: &Path) -> String {
    let (mock, out, recs) = run_trusting(tls, trusted);
    assert_eq!((out.successes, out.errors), (0, REQUESTS as u64));
    assert!(mock.truth().is_empty(), "no request reached the mock");
    assert_eq!(recs.len(), REQUESTS);
    let first = recs[0]["error"]["message"].as_str().expect("message");
    for rec in &recs {
        assert_eq!(rec["error"]["type"], "ClientConnectorCertificateError");
        let msg = rec["error"]["message"].as_str().expect("message");
        assert_eq!(without_clock_reading(msg), without_clock_reading(first));
    }
    assert!(first.starts_with(&format!("https://127.0.0.1:{}", mock.addr.port())));
    first.to_owned()
}

/// `msg` with the epoch second after "verification time " blanked: an expiry refusal names the
/// second each connection was checked, which differs between two requests that straddle a tick.
fn without_clock_reading(msg: &str) -> String {
    // The reading itself, and how long ago the certificate expired (rustls counts it from the
    // reading: two refusals a second apart differ there too).
    let mut out = msg.to_owned();
    for (at, end) in [("verification time ", ""), ("(", " seconds ago)")] {
        let mut from = 0;
        while let Some(i) = out[from..].find(at).map(|i| i + from) {
            let start = i + at.len();
            let digits = out[start..].bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 && out[start + digits..].starts_with(end) {
                out.replace_range(start..start + digits, "<t>");
            }
            from = start;
        }
    }
    out
}

#[test]
fn the_clock_reading_of_an_expiry_refusal_is_blanked_and_nothing_else() {
    let a = "x: certificate expired: verification time 1796542271 (UNIX), but certificate is not valid after 1609459200";
    let b = "x: certificate expired: verification time 1796542270 (UNIX), but certificate is not valid after 1609459200";
    assert_eq!(without_clock_reading(a), without_clock_reading(b));
    let c = "x: expired: verification time 5 (UNIX), but not valid after 1 (187152319 seconds ago)";
    let d = "x: expired: verification time 6 (UNIX), but not valid after 1 (187152318 seconds ago)";
    assert_eq!(without_clock_reading(c), without_clock_reading(d));
    assert_ne!(
        without_clock_reading(a),
        without_clock_reading(&b.replace("1609459200", "1609459201"))
    );
    assert_eq!(without_clock_reading("no clock here"), "no clock here");
}

/// The certificate `openssl req -x509` makes by default is `CA:TRUE`; trusted itself, it is
/// accepted (as curl and AIPerf accept it), with an RSA key and with an EC P-256 key.
#[test]
#[cfg_attr(
    missing_tool_openssl,
    ignore = "openssl is not on PATH (docs/testing.md)"
)]
fn openssl_default_self_signed_certificates_are_accepted() {
    if !have_openssl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, newkey) in [
        ("rsa", &["rsa:2048"][..]),
        ("ec", &["ec", "-pkeyopt", "ec_paramgen_curve:P-256"][..]),
    ] {
        let tls = openssl_self_signed(
            dir.path(),
            name,
            newkey,
            "/CN=127.0.0.1",
            Some("IP:127.0.0.1"),
        );
        let constraints = openssl_basic_constraints(&tls.cert);
        assert!(constraints.contains("CA:TRUE"), "{name}: {constraints}");
        let trusted = tls.cert.clone();
        let (_mock, out, _) = run_trusting(tls, &trusted);
        assert_eq!((out.successes, out.errors), (REQUESTS as u64, 0), "{name}");
    }
}

/// The binary trusts the openssl-made certificate through `SSL_CERT_FILE` and through an
/// `SSL_CERT_DIR` directory (hashed by `openssl rehash`, as OpenSSL needs it).
#[test]
#[cfg_attr(
    missing_tool_openssl,
    ignore = "openssl is not on PATH (docs/testing.md)"
)]
fn the_binary_trusts_an_openssl_certificate_from_the_environment() {
    if !have_openssl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    std::fs::create_dir(&certs).unwrap();
    let tls = openssl_self_signed(
        dir.path(),
        "server",
        &["rsa:2048"],
        "/CN=127.0.0.1",
        Some("IP:127.0.0.1"),
    );
    std::fs::copy(&tls.cert, certs.join("server.pem")).unwrap();
    openssl(&certs, &["rehash", "."]);
    let mock = https_mock_with(tls.clone());
    for var in ["SSL_CERT_FILE", "SSL_CERT_DIR"] {
        let value = if var == "SSL_CERT_FILE" {
            tls.cert.clone()
        } else {
            certs.clone()
        };
        let out_dir = tempfile::tempdir().unwrap();
        let line = profile_line(&mock, out_dir.path());
        let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .args(line.split_whitespace().skip(1))
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .env_remove("AIPERF_HTTP_SSL_VERIFY")
            .env(var, &value)
            .output()
            .expect("ringperf runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{var}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let recs = read_jsonl(&out_dir.path().join("profile_export.jsonl"));
        assert_eq!(recs.len(), REQUESTS);
        assert!(recs.iter().all(|r| r["error"].is_null()), "{var}");
    }
    assert_eq!(mock.truth().len(), 2 * REQUESTS);
}

fn https_mock_with(tls: MockTls) -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(TOKENS),
        truth_log: true,
        tls: Some(tls),
        ..MockConfig::default()
    })
    .expect("mock starts with TLS")
}

/// The shape mkcert makes: a local CA (trusted) and a leaf it signs (`CA:FALSE`, serverAuth,
/// names only in subjectAltName, no CN).
#[test]
#[cfg_attr(
    missing_tool_openssl,
    ignore = "openssl is not on PATH (docs/testing.md)"
)]
fn a_mkcert_style_ca_and_leaf_are_accepted() {
    if !have_openssl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-subj",
            "/O=mkcert development CA/OU=test",
            "-addext",
            "keyUsage=critical,keyCertSign",
        ],
    );
    openssl(
        d,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "leaf.key",
            "-out",
            "leaf.csr",
            "-subj",
            "/O=mkcert development certificate/OU=test",
        ],
    );
    std::fs::write(
        d.join("leaf.ext"),
        "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n\
         basicConstraints=critical,CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .unwrap();
    openssl(
        d,
        &[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "30",
            "-extfile",
            "leaf.ext",
            "-out",
            "leaf.pem",
        ],
    );
    let tls = MockTls {
        cert: d.join("leaf.pem"),
        key: d.join("leaf.key"),
    };
    let (_mock, out, _) = run_trusting(tls, &d.join("ca.pem"));
    assert_eq!((out.successes, out.errors), (REQUESTS as u64, 0));
}

/// Only a trusted certificate is taken as its own anchor: a `CA:TRUE` certificate that a
/// trusted CA signed is refused, and so is one trusted itself that is not self-signed; each
/// message says why.
#[test]
fn a_ca_certificate_signed_by_a_trusted_ca_is_refused() {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let dir = tempfile::tempdir().unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "trusted CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut server = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    server.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    server
        .distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    let server_cert = server.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.path().join("ca.pem"), ca_cert.pem()).unwrap();
    std::fs::write(dir.path().join("cert.pem"), server_cert.pem()).unwrap();
    std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
    let tls = MockTls {
        cert: dir.path().join("cert.pem"),
        key: dir.path().join("key.pem"),
    };
    let msg = refused_message(tls.clone(), &dir.path().join("ca.pem"));
    assert!(
        msg.ends_with(
            "TLS certificate verification failed: the server's certificate is a CA \
             certificate (basicConstraints CA:TRUE) that is not itself trusted; a CA \
             certificate is accepted as a server's own only when it is self-signed and trusted \
             itself (SSL_CERT_FILE / SSL_CERT_DIR). Give the server a leaf certificate \
             (CA:FALSE), or trust a self-signed one"
        ),
        "{msg}"
    );
    let msg = refused_message(tls, &dir.path().join("cert.pem"));
    assert!(
        msg.contains(
            "is trusted but is a CA certificate (basicConstraints CA:TRUE) issued by another CA"
        ),
        "{msg}"
    );
}

/// A trusted self-signed `CA:TRUE` certificate past its `notAfter` is refused as expired.
#[test]
fn an_expired_self_signed_anchor_is_refused() {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, date_time_ymd};
    let dir = tempfile::tempdir().unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    params.not_before = date_time_ymd(2020, 1, 1);
    params.not_after = date_time_ymd(2021, 1, 1);
    let cert = params.self_signed(&key).unwrap();
    std::fs::write(dir.path().join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
    let tls = MockTls {
        cert: dir.path().join("cert.pem"),
        key: dir.path().join("key.pem"),
    };
    let msg = refused_message(tls, &dir.path().join("cert.pem"));
    // 2021-01-01T00:00:00Z is 1609459200.
    assert!(
        msg.contains("certificate expired: verification time ")
            && msg.contains("but certificate is not valid after 1609459200"),
        "{msg}"
    );
}

/// A trusted openssl-made self-signed certificate for another address is refused for its name.
#[test]
#[cfg_attr(
    missing_tool_openssl,
    ignore = "openssl is not on PATH (docs/testing.md)"
)]
fn a_self_signed_anchor_for_another_name_is_refused() {
    if !have_openssl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tls = openssl_self_signed(
        dir.path(),
        "other",
        &["rsa:2048"],
        "/CN=127.0.0.2",
        Some("IP:127.0.0.2"),
    );
    let trusted = tls.cert.clone();
    let msg = refused_message(tls, &trusted);
    assert!(
        msg.contains(
            "certificate not valid for name \"127.0.0.1\"; certificate is only valid for \
             IpAddress(127.0.0.2)"
        ),
        "{msg}"
    );
}

/// A trusted openssl-made self-signed certificate whose signature is damaged (one bit of its
/// last byte) is refused, though it is byte-equal to the trusted one.
#[test]
#[cfg_attr(
    missing_tool_openssl,
    ignore = "openssl is not on PATH (docs/testing.md)"
)]
fn a_self_signed_anchor_with_a_bad_signature_is_refused() {
    if !have_openssl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tls = openssl_self_signed(
        d,
        "good",
        &["rsa:2048"],
        "/CN=127.0.0.1",
        Some("IP:127.0.0.1"),
    );
    openssl(
        d,
        &[
            "x509", "-in", "good.pem", "-outform", "DER", "-out", "good.der",
        ],
    );
    let mut der = std::fs::read(d.join("good.der")).unwrap();
    *der.last_mut().unwrap() ^= 1;
    std::fs::write(d.join("bad.der"), &der).unwrap();
    openssl(
        d,
        &[
            "x509", "-inform", "DER", "-in", "bad.der", "-out", "bad.pem",
        ],
    );
    // The damage is in the signature, as openssl sees it: the certificate no longer verifies
    // against itself.
    let check = Command::new("openssl")
        .current_dir(d)
        .args(["verify", "-check_ss_sig", "-CAfile", "bad.pem", "bad.pem"])
        .output()
        .expect("openssl runs");
    assert!(!check.status.success(), "the damaged certificate verifies");
    let bad = MockTls {
        cert: d.join("bad.pem"),
        key: tls.key,
    };
    let msg = refused_message(bad, &d.join("bad.pem"));
    assert!(
        msg.contains("invalid peer certificate: BadSignature"),
        "{msg}"
    );
}

/// A certificate with only a CN (no subjectAltName) is refused with a message saying why (AIPerf
/// refuses it too for an IP address).
#[test]
#[cfg_attr(
    missing_tool_openssl,
    ignore = "openssl is not on PATH (docs/testing.md)"
)]
fn a_certificate_without_subject_alt_name_is_refused_with_the_reason() {
    if !have_openssl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tls = openssl_self_signed(dir.path(), "cn", &["rsa:2048"], "/CN=127.0.0.1", None);
    let trusted = tls.cert.clone();
    let msg = refused_message(tls, &trusted);
    assert!(
        msg.contains(
            "certificate not valid for name \"127.0.0.1\": it names no host in a \
             subjectAltName extension"
        ),
        "{msg}"
    );
}

/// Bodies of 64 KiB and more are written from the dataset's shared bytes after the head (two
/// writes, no copy into the connection's buffer): over plain TCP and over TLS, every request
/// arrives whole, with its own ids, and every request of one conversation carries the same
/// body bytes, whichever connection sent it.
#[test]
fn large_bodies_arrive_whole_from_the_shared_bytes() {
    let pki = Pki::new();
    for tls in [false, true] {
        let mock = ringperf_mock::mock::start(MockConfig {
            output_tokens: OutputLen::Fixed(TOKENS),
            truth_log: true,
            record_bodies: true,
            tls: tls.then(|| pki.mock_tls()),
            ..MockConfig::default()
        })
        .expect("mock starts");
        let dir = tempfile::tempdir().unwrap();
        let scheme = if tls { "https" } else { "http" };
        let mut cfg = config(&format!(
            "ringperf profile -m mock-model -u {scheme}://127.0.0.1:{} --streaming \
             --concurrency 3 --request-count {REQUESTS} --num-dataset-entries 2 \
             --isl 40000 --osl {TOKENS} --tokenizer builtin --random-seed 5 --ui none \
             --no-server-metrics --artifact-dir {}",
            mock.addr.port(),
            dir.path().display()
        ));
        cfg.tls.ca_file = Some(pki.ca());
        let out = ringperf::run::run(cfg).expect("run completes");
        assert_eq!(
            (out.successes, out.errors),
            (REQUESTS as u64, 0),
            "tls {tls}"
        );
        let truth = truth_by_id(&mock);
        assert_eq!(truth.len(), REQUESTS, "each request served once, tls {tls}");
        let mut bodies: HashMap<String, std::sync::Arc<[u8]>> = HashMap::new();
        for rec in read_jsonl(&dir.path().join("profile_export.jsonl")) {
            let id = rec["metadata"]["x_request_id"].as_str().unwrap();
            let t = &truth[id];
            assert!(t.completed);
            let body = t.request_body.clone().expect("body recorded");
            assert!(body.len() >= 100_000, "a large body: {} bytes", body.len());
            let json: Value = serde_json::from_slice(&body).expect("the whole body, as JSON");
            assert!(json["messages"][0]["content"].is_string());
            let conversation = rec["metadata"]["conversation_id"].as_str().unwrap();
            let first = bodies
                .entry(conversation.to_string())
                .or_insert(body.clone());
            assert!(
                first[..] == body[..],
                "one conversation, one body (tls {tls})"
            );
        }
        assert_eq!(bodies.len(), 2);
    }
}
