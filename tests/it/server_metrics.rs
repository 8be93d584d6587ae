//! End-to-end server-metrics collection: `ringperf profile` (the binary, so stderr warnings and
//! the environment variables are real) against in-process mock servers whose `/metrics` is put
//! in each mode, then the four export files, the TRT-LLM fallback, auto-disable, and re-processing.

use crate::common;

use common::read_json;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use ringperf_mock::mock::{MetricsMode, MockConfig, MockServer, OutputLen};
use serde_json::Value;

fn mock(mode: MetricsMode) -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(16),
        metrics_mode: mode,
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// Runs `ringperf profile` against `server` with fast collection timing; `extra` is appended.
fn profile(server: &MockServer, dir: &Path, requests: u32, extra: &[&str]) -> Output {
    profile_every(server, dir, requests, extra, "0.05")
}

/// [`profile`] with a given collection interval (seconds).
fn profile_every(
    server: &MockServer,
    dir: &Path,
    requests: u32,
    extra: &[&str],
    interval: &str,
) -> Output {
    profile_env(
        server,
        dir,
        requests,
        extra,
        &[("AIPERF_SERVER_METRICS_COLLECTION_INTERVAL", interval)],
    )
}

/// [`profile`] with more environment variables for the child (they win over the defaults).
fn profile_env(
    server: &MockServer,
    dir: &Path,
    requests: u32,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    common::profile_binary(server, dir, requests, extra, env)
}

fn warnings(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("WARNING"))
        .map(str::to_owned)
        .collect()
}

fn parquet_meta(path: &Path) -> std::collections::HashMap<String, String> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    reader
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .into_iter()
        .flatten()
        .map(|kv| (kv.key.clone(), kv.value.clone().unwrap_or_default()))
        .collect()
}

/// Sum of `stats.total` over every series of a counter.
fn counter_total(doc: &Value, name: &str) -> f64 {
    doc["metrics"][name]["series"]
        .as_array()
        .unwrap_or_else(|| panic!("{name} exported"))
        .iter()
        .map(|s| s["stats"]["total"].as_f64().expect("total"))
        .sum()
}

#[test]
fn profile_run_writes_all_four_files_with_one_benchmark_id() {
    let server = mock(MetricsMode::Vllm);
    let dir = tempfile::tempdir().unwrap();
    let out = profile(
        &server,
        dir.path(),
        40,
        &[
            "--server-metrics-formats",
            "json",
            "csv",
            "jsonl",
            "parquet",
            "--slice-duration",
            "0.1",
        ],
    );
    assert!(warnings(&out).is_empty(), "{:?}", warnings(&out));
    let d = dir.path();
    let id = read_json(&d.join("profile_export_aiperf.json"))["benchmark_id"]
        .as_str()
        .expect("run benchmark_id")
        .to_owned();
    let doc = read_json(&d.join("server_metrics_export.json"));
    assert_eq!(doc["benchmark_id"], id.as_str());
    let csv = std::fs::read_to_string(d.join("server_metrics_export.csv")).unwrap();
    assert!(
        csv.contains(&format!("# benchmark_id: {id}\n")),
        "{}",
        &csv[..300.min(csv.len())]
    );
    let meta = parquet_meta(&d.join("server_metrics_export.parquet"));
    assert_eq!(meta.get("aiperf.benchmark_id"), Some(&id));

    // The baseline scrape precedes every request and the final scrape follows them all, so the
    // server-side success counter over the window is exactly the request count.
    assert_eq!(counter_total(&doc, "vllm:request_success"), 40.0);
    let url = format!("http://{}/metrics", server.addr);
    assert_eq!(doc["summary"]["endpoints_successful"][0], url.as_str());
    let info = &doc["summary"]["endpoint_info"][url.as_str()];
    let fetches = info["total_fetches"].as_u64().unwrap();
    let unique = info["unique_updates"].as_u64().unwrap();
    assert!(fetches >= 3 && unique <= fetches, "{info}");
    // Timeslices of 0.1 s exist for the success counter.
    let series = &doc["metrics"]["vllm:request_success"]["series"][0];
    assert!(
        series["timeslices"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );

    // JSONL: one line per unique update, stamped at the first byte, sent before it.
    let jsonl = std::fs::read_to_string(d.join("server_metrics_export.jsonl")).unwrap();
    let lines: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len() as u64, unique);
    for l in &lines {
        assert_eq!(l["endpoint_url"], url.as_str());
        assert_eq!(l["first_byte_ns"], l["timestamp_ns"]);
        assert!(l["request_sent_ns"].as_u64() <= l["timestamp_ns"].as_u64());
    }
    let phases: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["benchmark_phase"].as_str())
        .collect();
    assert!(phases.contains(&"profiling"), "{phases:?}");
    assert!(
        lines[0]["benchmark_phase"].is_null(),
        "the baseline has no phase"
    );
    assert_eq!(
        lines.last().unwrap()["benchmark_phase"],
        "profiling",
        "flush-period and final scrapes belong to profiling"
    );

    // The console footer lists the exports AIPerf lists, and the streamed JSONL (which AIPerf
    // leaves out) after them under ringperf's own label.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let jsonl_line = format!(
        "Server Metrics JSONL Export: {}",
        d.join("server_metrics_export.jsonl").display()
    );
    assert!(stdout.lines().any(|l| l == jsonl_line), "{stdout}");
    for f in [
        "server_metrics_export.json",
        "server_metrics_export.csv",
        "server_metrics_export.parquet",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("Server Metrics") && l.ends_with(f)),
            "{f} in footer: {stdout}"
        );
    }

    // Re-processing the JSONL over the same window gives the same counter total.
    let re = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["server-metrics", "--from-jsonl"])
        .arg(d.join("server_metrics_export.jsonl"))
        .args(["--server-metrics-formats", "json", "--artifact-dir"])
        .arg(re.path())
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let again = read_json(&re.path().join("server_metrics_export.json"));
    assert_eq!(
        again["benchmark_id"],
        id.as_str(),
        "taken from the sibling JSON"
    );
    assert_eq!(counter_total(&again, "vllm:request_success"), 40.0);
}

#[test]
fn default_formats_and_prefix() {
    let server = mock(MetricsMode::Vllm);
    let dir = tempfile::tempdir().unwrap();
    profile(
        &server,
        dir.path(),
        6,
        &["--profile-export-prefix", "run7.json"],
    );
    for f in ["json", "csv"] {
        assert!(
            dir.path().join(format!("run7_server_metrics.{f}")).exists(),
            "{f}"
        );
    }
    // AIPerf 0.13 writes JSON and CSV unless asked: Parquet and JSONL are asked for by name.
    for f in ["jsonl", "parquet"] {
        assert!(
            !dir.path().join(format!("run7_server_metrics.{f}")).exists(),
            "{f} is opt-in"
        );
    }
}

/// The footer lists the exports with AIPerf 0.13's labels in its order, checked against the
/// footer AIPerf printed for the same flags (`tests/data/aiperf-console/`), less the log file
/// ringperf does not write (with AIPerf's default formats, JSON and CSV, the same server-metrics
/// lines); ringperf's own lines (the per-record JSONL, the console
/// file, inputs.json, the per-phase files, the marker) come after all of AIPerf's. The console
/// file is named after the prefix and holds the tables without the footer.
#[test]
fn console_footer_and_file_follow_aiperf() {
    let reference = include_str!("../data/aiperf-console/footer.txt");
    let server = mock(MetricsMode::Vllm);
    let dir = tempfile::tempdir().unwrap();
    let out = profile(
        &server,
        dir.path(),
        8,
        &[
            "--export-level",
            "raw",
            "--slice-duration",
            "1",
            "--profile-export-prefix",
            "foo",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ours: Vec<(String, String)> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("CSV Export: "))
        .map_while(|l| l.split_once(": "))
        .map(|(label, path)| (label.to_owned(), path.to_owned()))
        .collect();
    // AIPerf's lines with ringperf's directory, less its log file, plus the Parquet line.
    let mut expected: Vec<(String, String)> = reference
        .lines()
        .filter(|l| !l.starts_with("Log File: "))
        .map(|l| {
            let (label, path) = l.split_once(": ").unwrap();
            let name = path.strip_prefix("/tmp/console_ref/").unwrap();
            (
                label.to_owned(),
                dir.path().join(name).display().to_string(),
            )
        })
        .collect();
    // ringperf's own two lines last, after AIPerf's: the per-record JSONL and the console file.
    for (label, name) in [
        ("Records Export", "foo.jsonl"),
        ("Console Export", "foo_console.txt"),
    ] {
        expected.push((
            label.to_owned(),
            dir.path().join(name).display().to_string(),
        ));
    }
    // Then ringperf names the rest of what it wrote (inputs.json, the per-phase files, the
    // marker…), after every line of AIPerf's.
    assert_eq!(ours[..expected.len()], expected, "{stdout}");
    let rest: Vec<&str> = ours[expected.len()..]
        .iter()
        .map(|(l, _)| l.as_str())
        .collect();
    assert!(
        rest.contains(&"Inputs Export") && rest.contains(&"Results Ready Marker"),
        "{rest:?}"
    );
    assert!(
        rest.iter().all(|l| expected.iter().all(|(e, _)| e != l)),
        "{rest:?}"
    );
    for (_, path) in &ours {
        assert!(Path::new(path).is_file(), "{path}");
    }

    assert!(!dir.path().join("profile_export_console.txt").exists());
    let file = std::fs::read_to_string(dir.path().join("foo_console.txt")).unwrap();
    assert!(file.contains("ringperf | LLM Metrics"), "{file}");
    for footer in [
        "CLI Command:",
        "Benchmark Duration:",
        "Export: ",
        "Raw Records: ",
    ] {
        assert!(!file.contains(footer), "{footer} in {file}");
    }
    // Stdout is the console export, then the footer.
    assert!(stdout.starts_with(&file), "{stdout}");
    assert!(
        stdout[file.len()..].starts_with("CLI Command: "),
        "{stdout}"
    );
}

#[test]
fn trtllm_fallback_swaps_to_prometheus_path() {
    let server = mock(MetricsMode::TrtLlm);
    let dir = tempfile::tempdir().unwrap();
    let out = profile(&server, dir.path(), 10, &["--warmup-request-count", "4"]);
    assert!(warnings(&out).is_empty(), "{:?}", warnings(&out));
    let doc = read_json(&dir.path().join("server_metrics_export.json"));
    // Warmup is summarized on its own window, before profiling.
    let ranges = &doc["summary"]["phase_time_ranges"];
    assert!(ranges["warmup"]["end_ns"].as_u64() <= ranges["profiling"]["start_ns"].as_u64());
    assert!(doc["warmup_metrics"]["vllm:num_requests_running"].is_object());
    let alt = format!("http://{}/prometheus/metrics", server.addr);
    assert_eq!(
        doc["summary"]["endpoints_successful"],
        serde_json::json!([alt])
    );
    assert_eq!(counter_total(&doc, "vllm:request_success"), 10.0);
}

#[test]
fn json_only_endpoint_is_disabled_with_one_warning() {
    let server = mock(MetricsMode::JsonOnly);
    let dir = tempfile::tempdir().unwrap();
    let out = profile(&server, dir.path(), 10, &[]);
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{w:?}");
    let url = format!("http://{}/metrics", server.addr);
    assert!(
        w[0].starts_with(&format!(
            "WARNING  Disabling server metrics collection for {url}: endpoint '{url}' returned \
             non-Prometheus content-type 'application/json'"
        )),
        "{}",
        w[0]
    );
    assert!(w[0].contains("return_perf_metrics: true"), "{}", w[0]);
    assert!(w[0].ends_with("To suppress this warning, pass --no-server-metrics."));
    assert!(!dir.path().join("server_metrics_export.json").exists());
    // The benchmark itself is unaffected.
    assert!(dir.path().join("profile_export_aiperf.json").exists());

    // --no-server-metrics silences it all.
    let quiet = tempfile::tempdir().unwrap();
    let out = profile(&server, quiet.path(), 4, &["--no-server-metrics"]);
    assert!(warnings(&out).is_empty());
    assert!(!quiet.path().join("server_metrics_export.json").exists());
}

/// An OpenMetrics page names its counter as AIPerf's parser for its content type does: served as
/// `application/openmetrics-text`, the family `mock_served` (a counter); served as classic
/// `text/plain`, Python's classic parser (which AIPerf uses then) reads the `mock_served_total`
/// samples as an untyped family of their own, and so does ringperf (the JSON writes an untyped
/// family's type as `gauge`, as AIPerf's does).
#[test]
fn an_openmetrics_pages_counter_is_named_by_its_content_type() {
    for (openmetrics_type, name, kind) in [
        (true, "mock_served", "counter"),
        (false, "mock_served_total", "gauge"),
    ] {
        let server = mock(MetricsMode::OpenMetrics { openmetrics_type });
        let dir = tempfile::tempdir().unwrap();
        let out = profile(&server, dir.path(), 4, &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc = common::read_json(&dir.path().join("server_metrics_export.json"));
        let metrics = doc["metrics"].as_object().expect("metrics");
        assert_eq!(
            metrics[name]["type"],
            kind,
            "{openmetrics_type}: {:?}",
            metrics.keys()
        );
        let other = if openmetrics_type {
            "mock_served_total"
        } else {
            "mock_served"
        };
        assert!(
            !metrics.contains_key(other),
            "{openmetrics_type}: {:?}",
            metrics.keys()
        );
        assert!(!metrics.contains_key("mock_served_created"));
        assert_eq!(metrics["mock_load"]["type"], "gauge");
    }
}

#[test]
fn garbage_endpoint_is_disabled_and_others_carry_on() {
    let bad = mock(MetricsMode::Garbage);
    let good = mock(MetricsMode::Vllm);
    let dir = tempfile::tempdir().unwrap();
    let good_url = format!("http://{}/metrics", good.addr);
    let out = profile(
        &bad,
        dir.path(),
        10,
        &["--server-metrics", &format!("{}", good.addr)],
    );
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("not Prometheus exposition format"),
        "{}",
        w[0]
    );
    let doc = read_json(&dir.path().join("server_metrics_export.json"));
    let bad_url = format!("http://{}/metrics", bad.addr);
    assert_eq!(
        doc["summary"]["endpoints_configured"],
        serde_json::json!([bad_url, good_url])
    );
    assert_eq!(
        doc["summary"]["endpoints_successful"],
        serde_json::json!([good_url])
    );
    assert!(doc["metrics"]["vllm:num_requests_running"]["series"][0]["endpoint_url"] == good_url);
}

/// One line of a page that does not parse (a sample whose value is not a number) costs that
/// line, not the endpoint (#40 item 3): the page's other families are exported, the endpoint
/// stays among the successful ones, the lines are counted in its `endpoint_info`, and one
/// warning says so for the whole run (the endpoint used to be disabled for the run).
#[test]
fn a_malformed_line_costs_the_line_not_the_endpoint() {
    let server = mock(MetricsMode::MalformedLine);
    let dir = tempfile::tempdir().unwrap();
    let out = profile(&server, dir.path(), 10, &[]);
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("did not parse and were left out"), "{}", w[0]);
    assert!(w[0].contains("InvalidValue"), "{}", w[0]);
    let doc = read_json(&dir.path().join("server_metrics_export.json"));
    let url = format!("http://{}/metrics", server.addr);
    assert_eq!(
        doc["summary"]["endpoints_successful"],
        serde_json::json!([url])
    );
    let metrics = doc["metrics"].as_object().expect("metrics");
    assert!(metrics.contains_key("vllm:num_requests_running"));
    assert_eq!(
        metrics["mock_after_malformed"]["series"][0]["stats"]["avg"],
        3.0
    );
    assert!(!metrics.contains_key("mock_malformed_gauge"));
    let info = &doc["summary"]["endpoint_info"][url.as_str()];
    let fetches = info["total_fetches"].as_u64().unwrap();
    // One malformed line a page, every page counted.
    assert_eq!(info["malformed_lines"].as_u64(), Some(fetches), "{info}");
}

#[test]
fn slow_endpoint_never_delays_the_schedule() {
    // Each answer takes 400 ms; scrapes every 50 ms overlap instead of queueing behind it.
    let server = mock(MetricsMode::Slow { delay_ms: 400 });
    let dir = tempfile::tempdir().unwrap();
    let out = profile(&server, dir.path(), 60, &[]);
    assert!(warnings(&out).is_empty());
    let doc = read_json(&dir.path().join("server_metrics_export.json"));
    let url = format!("http://{}/metrics", server.addr);
    let info = &doc["summary"]["endpoint_info"][url.as_str()];
    let fetches = info["total_fetches"].as_u64().unwrap();
    let span_ns =
        info["last_fetch_ns"].as_u64().unwrap() - info["first_fetch_ns"].as_u64().unwrap();
    // Every answer took the mock's 400 ms (its delays are never early).
    let delay_ns = 400_000_000;
    assert!(
        info["avg_fetch_latency_ms"].as_f64().unwrap() >= 400.0,
        "{info}"
    );
    // Fetches that waited on each other would be 400 ms apart at least, so n of them would span
    // (n - 1) x 400 ms or more: a shorter span (the run's own stamps, whatever the machine's
    // load) means some fetches were in flight together.
    assert!(
        fetches >= 3 && span_ns < (fetches - 1) * delay_ns,
        "{fetches} fetches over {span_ns} ns: {info}"
    );
}

#[test]
fn many_series_page_is_collected() {
    let server = mock(MetricsMode::ManySeries { series: 12_000 });
    let dir = tempfile::tempdir().unwrap();
    // The default interval: a 12k-series page is parsed on every scrape.
    profile_every(
        &server,
        dir.path(),
        10,
        &["--server-metrics-formats", "json"],
        "0.333",
    );
    let doc = read_json(&dir.path().join("server_metrics_export.json"));
    let series = doc["metrics"]["mock_shard_load"]["series"]
        .as_array()
        .unwrap();
    assert_eq!(series.len(), 12_000);
    let s77 = series
        .iter()
        .find(|s| s["labels"]["shard"] == "77")
        .expect("shard 77");
    assert_eq!(s77["stats"]["avg"], 77.0);
}

/// The client side of a run whose metrics endpoint could not be used: every request counted
/// (`request_count` is the run's, no error), the client artifacts written, and no server-metrics
/// file at all (collection was off for the run).
fn assert_client_artifacts_only(dir: &Path, requests: u64) {
    for f in [
        "profile_export_aiperf.json",
        "profile_export_aiperf.csv",
        "profile_export.jsonl",
        "profile_export_console.txt",
        "inputs.json",
    ] {
        assert!(dir.join(f).is_file(), "artifact {f} is written");
    }
    let summary = read_json(&dir.join("profile_export_aiperf.json"));
    assert_eq!(
        summary["request_count"]["avg"].as_f64(),
        Some(requests as f64)
    );
    assert!(summary["error_request_count"].is_null(), "{summary}");
    let records = std::fs::read_to_string(dir.join("profile_export.jsonl")).unwrap();
    assert_eq!(records.lines().count() as u64, requests);
    let server_files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("server_metrics"))
        .collect();
    assert!(server_files.is_empty(), "{server_files:?}");
}

/// The `ringperf: server metrics…` lines of stderr (`--verbose` diagnostics).
fn server_metrics_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("ringperf: server metrics"))
        .map(str::to_owned)
        .collect()
}

/// Sends one raw request and returns what arrived before the peer closed, the read timed out
/// (`None` then if nothing arrived) or `limit` passed.
fn raw_exchange(
    addr: std::net::SocketAddr,
    request: &str,
    limit: Duration,
) -> (std::net::TcpStream, Option<String>) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connects");
    s.write_all(request.as_bytes()).expect("request sent");
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = vec![0u8; 4096];
    let got = match s.read(&mut buf) {
        Ok(n) => Some(String::from_utf8_lossy(&buf[..n]).into_owned()),
        Err(_) => None,
    };
    (s, got)
}

#[test]
fn not_found_endpoint_is_unreachable_and_the_run_carries_on() {
    let server = mock(MetricsMode::NotFound);
    for path in ["/metrics", "/prometheus/metrics"] {
        for method in ["GET", "HEAD"] {
            let (_, got) = raw_exchange(
                server.addr,
                &format!("{method} {path} HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n"),
                Duration::from_secs(5),
            );
            let got = got.expect("an answer");
            assert!(got.starts_with("HTTP/1.1 404 "), "{method} {path}: {got}");
        }
    }
    // A 404 answers at once, so no timeout is ever waited on: the run must end inside the
    // reachability timeout, here 60 s (the whole run takes about 2.5 s under load, so no load
    // comes near it).
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = profile_env(
        &server,
        dir.path(),
        10,
        &["--verbose"],
        &[("AIPERF_SERVER_METRICS_REACHABILITY_TIMEOUT", "60")],
    );
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");
    // An unreachable endpoint is not a WARNING (AIPerf logs it at debug level and the
    // "no Prometheus endpoints reachable" status at info); ringperf prints that status line
    // always and the per-endpoint reason under --verbose.
    assert!(warnings(&out).is_empty(), "{:?}", warnings(&out));
    let url = format!("http://{}/metrics", server.addr);
    assert_eq!(
        server_metrics_lines(&out),
        [
            format!("ringperf: server metrics endpoint {url} is not reachable: HTTP 404"),
            "ringperf: server metrics disabled: no Prometheus endpoints reachable".to_owned(),
        ]
    );
    assert_client_artifacts_only(dir.path(), 10);
}

/// The reachability timeout of the hanging-endpoint runs, s. The check (`HEAD`, else `GET`) is
/// the only time the run waits on an endpoint that never answers: it is disabled after it. That
/// the check costs one timeout, not one for the `HEAD` and another for a `GET` after it, is
/// counted, not timed: the hanging endpoint sees exactly one request. The healthy endpoint's
/// check must answer within this timeout too, on a loaded CI machine: a few milliseconds of it.
const HANG_REACHABILITY_S: u64 = 2;

#[test]
fn hanging_endpoint_costs_one_reachability_timeout() {
    let server = mock(MetricsMode::Hang);
    let dir = tempfile::tempdir().unwrap();
    let t = HANG_REACHABILITY_S.to_string();
    let out = profile_env(
        &server,
        dir.path(),
        10,
        &["--verbose"],
        &[("AIPERF_SERVER_METRICS_REACHABILITY_TIMEOUT", &t)],
    );
    assert_eq!(
        server.metrics_requests(),
        1,
        "one reachability request, no GET after the HEAD timed out, no scrape after"
    );
    assert!(warnings(&out).is_empty(), "{:?}", warnings(&out));
    let url = format!("http://{}/metrics", server.addr);
    assert_eq!(
        server_metrics_lines(&out),
        [
            format!(
                "ringperf: server metrics endpoint {url} is not reachable: no answer within \
                 {HANG_REACHABILITY_S} s"
            ),
            "ringperf: server metrics disabled: no Prometheus endpoints reachable".to_owned(),
        ]
    );
    assert_client_artifacts_only(dir.path(), 10);
}

#[test]
fn hanging_endpoint_beside_a_healthy_one_only_the_healthy_one_is_exported() {
    let good = mock(MetricsMode::Vllm);
    let hang = mock(MetricsMode::Hang);
    let dir = tempfile::tempdir().unwrap();
    let t = HANG_REACHABILITY_S.to_string();
    let out = profile_env(
        &good,
        dir.path(),
        10,
        &["--server-metrics", &hang.addr.to_string()],
        &[("AIPERF_SERVER_METRICS_REACHABILITY_TIMEOUT", &t)],
    );
    assert_eq!(hang.metrics_requests(), 1, "one reachability request");
    assert!(
        good.metrics_requests() >= 3,
        "reachability, baseline and final scrape of the healthy endpoint: {}",
        good.metrics_requests()
    );
    assert!(warnings(&out).is_empty(), "{:?}", warnings(&out));
    let doc = read_json(&dir.path().join("server_metrics_export.json"));
    let good_url = format!("http://{}/metrics", good.addr);
    let hang_url = format!("http://{}/metrics", hang.addr);
    assert_eq!(
        doc["summary"]["endpoints_configured"],
        serde_json::json!([good_url, hang_url])
    );
    assert_eq!(
        doc["summary"]["endpoints_successful"],
        serde_json::json!([good_url])
    );
    // The healthy endpoint is the one the requests went to: baseline before the first, final
    // scrape after the last.
    assert_eq!(counter_total(&doc, "vllm:request_success"), 10.0);
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(summary["request_count"]["avg"].as_f64(), Some(10.0));
}

#[test]
fn hanging_connections_end_when_the_mock_stops() {
    let server = mock(MetricsMode::Hang);
    let mut held = Vec::new();
    for path in ["/metrics", "/prometheus/metrics"] {
        let (s, got) = raw_exchange(
            server.addr,
            &format!("GET {path} HTTP/1.1\r\nHost: m\r\n\r\n"),
            Duration::from_millis(300),
        );
        assert_eq!(got, None, "{path} never answers");
        held.push(s);
    }
    // The stop waits at most 2 s for connections that will not end; these must end at once.
    let stopping = std::time::Instant::now();
    server.stop();
    assert!(
        stopping.elapsed() < Duration::from_secs(1),
        "{:?}",
        stopping.elapsed()
    );
    for mut s in held {
        use std::io::Read;
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buf = [0u8; 64];
        match s.read(&mut buf) {
            Ok(0) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            other => panic!("the mock's stop closes the connection: {other:?}"),
        }
    }
}

/// AIPerf 0.13's own server-metrics files of a short run against ringperf's mock (see the
/// README in that directory for the command).
const AIPERF_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/aiperf-server-metrics"
);

/// `rate`, `count_rate`, `sum_rate`: AIPerf divides by the time from its reference fetch (the
/// last fetch before the window) to the final fetch. That reference fetch is a duplicate of
/// the page before it, and AIPerf's JSONL leaves duplicates out, so its time is not in the file.
const REFERENCE_TIMED: [&str; 3] = ["rate", "count_rate", "sum_rate"];

/// Compares every number, string and key of `ours` with AIPerf's `theirs` (relative 1e-9),
/// except the [`REFERENCE_TIMED`] stats, which are returned as `(path, ours, theirs)`.
fn compare(theirs: &Value, ours: &Value, path: &str, skipped: &mut Vec<(String, f64, f64)>) {
    match (theirs, ours) {
        (Value::Object(a), Value::Object(b)) => {
            let (ka, kb): (Vec<_>, Vec<_>) = (a.keys().collect(), b.keys().collect());
            assert_eq!(ka, kb, "keys of {path}");
            for (k, v) in a {
                compare(v, &b[k], &format!("{path}/{k}"), skipped);
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "length of {path}");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                compare(x, y, &format!("{path}[{i}]"), skipped);
            }
        }
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            if path.contains("/stats/") && REFERENCE_TIMED.iter().any(|k| path.ends_with(k)) {
                skipped.push((path.to_owned(), y, x));
                return;
            }
            let tol = 1e-9 * x.abs().max(y.abs());
            assert!((x - y).abs() <= tol, "{path}: AIPerf {x}, ringperf {y}");
        }
        _ => assert_eq!(theirs, ours, "{path}"),
    }
}

#[test]
fn from_jsonl_reproduces_aiperfs_counter_and_histogram_statistics() {
    let theirs = read_json(&Path::new(AIPERF_DIR).join("server_metrics_export.json"));
    let url = "http://127.0.0.1:18711/metrics";
    let info = &theirs["summary"]["endpoint_info"][url];
    let last_fetch = info["last_fetch_ns"].as_u64().unwrap();
    // AIPerf's window starts at the first fetch of the profiling phase: a duplicate, so not a
    // JSONL line; its timeslices start there.
    let ttft = &theirs["metrics"]["vllm:time_to_first_token_seconds"]["series"][0];
    let start = ttft["timeslices"][0]["start_ns"].as_u64().unwrap();
    let profiling = &theirs["summary"]["phase_time_ranges"]["profiling"];
    assert!(start >= profiling["start_ns"].as_u64().unwrap());
    assert!(last_fetch > profiling["end_ns"].as_u64().unwrap());

    let dir = tempfile::tempdir().unwrap();
    ringperf_metrics::server_metrics::reprocess::run(
        &ringperf_metrics::server_metrics::reprocess::Options {
            from_jsonl: Path::new(AIPERF_DIR).join("server_metrics_export.jsonl"),
            start_ns: Some(start),
            end_ns: Some(last_fetch),
            slice: Some(Duration::from_secs(1)),
            formats: vec![ringperf_metrics::server_metrics::output::Format::Json],
            artifact_dir: Some(dir.path().to_path_buf()),
            overwrite: false,
        },
    )
    .expect("re-processes");
    let ours = read_json(&dir.path().join("server_metrics_export.json"));

    let mut skipped = Vec::new();
    let mut compared = 0;
    for (name, metric) in theirs["metrics"].as_object().unwrap() {
        if metric["type"] == "gauge" {
            // A gauge's statistics count every fetch, duplicates included: not in a JSONL.
            continue;
        }
        compare(metric, &ours["metrics"][name], name, &mut skipped);
        compared += 1;
    }
    assert_eq!(compared, 7, "3 counters and 4 histograms");
    // Timeslices: from the first fetch in the phase to the final fetch, the last one partial.
    let slices = ttft["timeslices"].as_array().unwrap();
    let last = slices.last().unwrap();
    assert_eq!(last["end_ns"].as_u64(), Some(last_fetch));
    assert_eq!(last["is_complete"], false);
    assert!(
        slices[..slices.len() - 1]
            .iter()
            .all(|s| s.get("is_complete").is_none())
    );

    // The rates ringperf gives: the window's total over the window's span (values hold between
    // JSONL lines). AIPerf's divide by a span that starts at its reference fetch instead, which
    // lies between the last JSONL line before the window and the window start.
    let lines = ringperf_metrics::server_metrics::export::jsonl::read_records(
        &std::fs::read_to_string(Path::new(AIPERF_DIR).join("server_metrics_export.jsonl"))
            .unwrap(),
    )
    .unwrap();
    let before = lines
        .iter()
        .map(|r| r.timestamp_ns)
        .filter(|&t| t < start)
        .max()
        .unwrap();
    assert_eq!(skipped.len(), 14, "{skipped:?}");
    let span_s = (last_fetch - start) as f64 / 1e9;
    for (path, our_rate, their_rate) in &skipped {
        let stats = path.rsplit_once("/stats/").unwrap().0;
        let m = &ours["metrics"];
        let (name, rest) = stats.split_once('/').unwrap();
        let i: usize = rest
            .trim_start_matches("series[")
            .trim_end_matches(']')
            .parse()
            .unwrap();
        let st = &m[name]["series"][i]["stats"];
        let total = if path.ends_with("sum_rate") {
            st["sum"].as_f64().unwrap()
        } else if path.ends_with("count_rate") {
            st["count"].as_f64().unwrap()
        } else {
            st["total"].as_f64().unwrap()
        };
        let want = total / span_s;
        assert!((our_rate - want).abs() <= 1e-9 * want.abs(), "{path}");
        if total > 0.0 {
            let their_ref_ns = last_fetch as f64 - total / their_rate * 1e9;
            assert!(
                (before as f64) < their_ref_ns && their_ref_ns < start as f64,
                "{path}: AIPerf's reference fetch at {their_ref_ns} is not between {before} and {start}"
            );
        }
    }
}

#[test]
fn parquet_schema_matches_aiperfs_file() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let dir = tempfile::tempdir().unwrap();
    let theirs = Path::new(AIPERF_DIR).join("server_metrics_export.parquet");
    let t = read_json(&Path::new(AIPERF_DIR).join("server_metrics_export.json"));
    let url = "http://127.0.0.1:18711/metrics";
    let last_fetch = t["summary"]["endpoint_info"][url]["last_fetch_ns"].as_u64();
    ringperf_metrics::server_metrics::reprocess::run(
        &ringperf_metrics::server_metrics::reprocess::Options {
            from_jsonl: Path::new(AIPERF_DIR).join("server_metrics_export.jsonl"),
            start_ns: t["summary"]["phase_time_ranges"]["profiling"]["start_ns"].as_u64(),
            end_ns: last_fetch,
            slice: None,
            formats: vec![ringperf_metrics::server_metrics::output::Format::Parquet],
            artifact_dir: Some(dir.path().to_path_buf()),
            overwrite: false,
        },
    )
    .expect("re-processes");
    let ours = dir.path().join("server_metrics_export.parquet");
    let read = |p: &Path| SerializedFileReader::new(std::fs::File::open(p).unwrap()).unwrap();
    let (a, b) = (read(&theirs), read(&ours));
    let (fa, fb) = (a.metadata().file_metadata(), b.metadata().file_metadata());
    assert_eq!(fa.version(), 2, "AIPerf's pyarrow writes format 2.6");
    assert_eq!(fb.version(), fa.version());
    let fields = |f: &parquet::file::metadata::FileMetaData| {
        f.schema_descr()
            .columns()
            .iter()
            .map(|c| {
                (
                    c.name().to_owned(),
                    c.physical_type(),
                    c.self_type().get_basic_info().repetition(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(fields(fb), fields(fa));
    let keys = |f: &parquet::file::metadata::FileMetaData| {
        let mut k: Vec<String> = f
            .key_value_metadata()
            .into_iter()
            .flatten()
            .map(|kv| kv.key.clone())
            .collect();
        k.sort();
        k
    };
    // AIPerf's run had a concurrency; the re-processing has none to write.
    let their_keys: Vec<String> = keys(fa)
        .into_iter()
        .filter(|k| k != "aiperf.concurrency")
        .collect();
    let our_keys: Vec<String> = keys(fb)
        .into_iter()
        .filter(|k| k != "aiperf.concurrency")
        .collect();
    assert_eq!(our_keys, their_keys);
    let kv = parquet_meta(&ours);
    assert!(kv["aiperf.pyarrow_version"].starts_with("parquet-rs version "));
    assert!(kv["aiperf.python_version"].starts_with("ringperf "));
}

#[test]
fn live_window_ends_at_the_final_fetch_and_the_phase_range_at_the_phase_end() {
    let server = mock(MetricsMode::Vllm);
    let dir = tempfile::tempdir().unwrap();
    profile(
        &server,
        dir.path(),
        20,
        &[
            "--slice-duration",
            "0.2",
            "--server-metrics-formats",
            "json",
            "jsonl",
        ],
    );
    let doc = read_json(&dir.path().join("server_metrics_export.json"));
    let url = format!("http://{}/metrics", server.addr);
    let info = &doc["summary"]["endpoint_info"][&url];
    let last_fetch = info["last_fetch_ns"].as_u64().unwrap();
    let phase = &doc["summary"]["phase_time_ranges"]["profiling"];
    let (p0, p1) = (
        phase["start_ns"].as_u64().unwrap(),
        phase["end_ns"].as_u64().unwrap(),
    );
    // The final scrape runs after the flush period, past the phase's end.
    assert!(p1 < last_fetch, "phase end {p1}, last fetch {last_fetch}");
    // In µs, rounded as AIPerf's `datetime.fromtimestamp` (its own files are compared by
    // `from_jsonl_of_every_fetch_reproduces_aiperfs_json_exactly`).
    assert_eq!(
        doc["summary"]["end_time"].as_str().unwrap(),
        ringperf_metrics::server_metrics::export::json::iso8601_rounded(p1)
    );
    // Every series' timeslices run from a fetch inside the phase to the final fetch.
    let text = std::fs::read_to_string(dir.path().join("server_metrics_export.jsonl")).unwrap();
    let first_update_in_phase = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok()?["timestamp_ns"].as_u64())
        .find(|&t| t >= p0)
        .unwrap();
    for (name, m) in doc["metrics"].as_object().unwrap() {
        for s in m["series"].as_array().unwrap() {
            let Some(sl) = s["timeslices"].as_array() else {
                continue;
            };
            let (a, z) = (sl.first().unwrap(), sl.last().unwrap());
            let start = a["start_ns"].as_u64().unwrap();
            assert!(
                (p0..=first_update_in_phase).contains(&start),
                "{name}: first slice starts at {start}"
            );
            if m["type"] != "gauge" {
                assert_eq!(z["end_ns"].as_u64(), Some(last_fetch), "{name}");
            }
        }
    }
}

/// AIPerf 0.13's server-metrics JSON and JSONL of a run with warmup against the mock with
/// `--unique-metrics-pages` (README there): every fetch is a JSONL line, as on a real server.
const AIPERF_UNIQUE_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/aiperf-server-metrics-unique"
);

/// Every difference between `theirs` and `ours` (values, key order), by path.
fn differences(theirs: &Value, ours: &Value, path: &str, out: &mut Vec<String>) {
    match (theirs, ours) {
        (Value::Object(a), Value::Object(b)) => {
            let (ka, kb): (Vec<_>, Vec<_>) = (a.keys().collect(), b.keys().collect());
            if ka != kb {
                out.push(format!("{path}: keys {ka:?} != {kb:?}"));
            }
            for (k, v) in a {
                if let Some(w) = b.get(k) {
                    differences(v, w, &format!("{path}/{k}"), out);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                differences(x, y, &format!("{path}[{i}]"), out);
            }
        }
        _ if theirs != ours => out.push(format!("{path}: AIPerf {theirs}, ringperf {ours}")),
        _ => {}
    }
}

/// Re-processing AIPerf's own JSONL gives AIPerf's own JSON, to the bit: every counter,
/// gauge and histogram statistic (rates over the reference line to the phase's last line,
/// NumPy's pairwise sums and percentile interpolation in the histogram estimates), the
/// timeslices, the warmup block and the summary.
#[test]
fn from_jsonl_of_every_fetch_reproduces_aiperfs_json_exactly() {
    let theirs = read_json(&Path::new(AIPERF_UNIQUE_DIR).join("server_metrics_export.json"));
    let info = &theirs["summary"]["endpoint_info"]["http://127.0.0.1:18646/metrics"];
    assert_eq!(
        info["unique_updates"], info["total_fetches"],
        "no duplicate page"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["server-metrics", "--from-jsonl"])
        .arg(Path::new(AIPERF_UNIQUE_DIR).join("server_metrics_export.jsonl"))
        .args(["--slice-duration", "1", "--server-metrics-formats", "json"])
        .arg("--output-artifact-dir")
        .arg(dir.path())
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{out:?}");
    let ours = read_json(&dir.path().join("server_metrics_export.json"));
    let mut diffs = Vec::new();
    differences(&theirs, &ours, "", &mut diffs);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    // What is compared: 11 families (3 gauges, 4 counters, 4 histograms) in both phases.
    assert_eq!(theirs["metrics"].as_object().unwrap().len(), 11);
    assert!(theirs["warmup_metrics"].is_object());
    let prompt = &theirs["metrics"]["vllm:prompt_tokens"]["series"][0]["stats"];
    assert!(prompt["rate"].as_f64().unwrap() > 0.0);
}

/// A live run's own JSONL, re-processed, gives the live run's JSON exactly (warmup, profiling,
/// rates, timeslices, summary) when every page is unique: the store rebuilt from the lines is
/// the live store.
#[test]
fn from_jsonl_of_a_live_run_gives_its_json_back() {
    let server = mock(MetricsMode::PageCounter);
    let dir = tempfile::tempdir().unwrap();
    profile_every(
        &server,
        dir.path(),
        40,
        &[
            "--warmup-request-count",
            "4",
            "--slice-duration",
            "0.25",
            "--server-metrics-formats",
            "json",
            "jsonl",
        ],
        "0.05",
    );
    let live = read_json(&dir.path().join("server_metrics_export.json"));
    let info = &live["summary"]["endpoint_info"][format!("http://{}/metrics", server.addr)];
    assert_eq!(
        info["unique_updates"], info["total_fetches"],
        "no duplicate page"
    );
    assert!(live["warmup_metrics"].is_object());
    let again = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["server-metrics", "--from-jsonl"])
        .arg(dir.path().join("server_metrics_export.jsonl"))
        .args([
            "--slice-duration",
            "0.25",
            "--server-metrics-formats",
            "json",
        ])
        .arg("--output-artifact-dir")
        .arg(again.path())
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{out:?}");
    let ours = read_json(&again.path().join("server_metrics_export.json"));
    let mut diffs = Vec::new();
    differences(&live, &ours, "", &mut diffs);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// `ringperf server-metrics --from-jsonl` in the run's own directory: refused (exit 2, the
/// message naming the files and `--overwrite`), every file of the run left as it was; with
/// `--overwrite` the files are recomputed in place.
#[test]
fn reprocessing_never_replaces_the_runs_exports_unasked() {
    let server = mock(MetricsMode::Vllm);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    profile(
        &server,
        d,
        6,
        &[
            "--server-metrics-formats",
            "json",
            "csv",
            "jsonl",
            "parquet",
        ],
    );
    // A marker in the CSV shows whether it was replaced.
    let csv = d.join("server_metrics_export.csv");
    std::fs::write(&csv, "the run's own CSV\n").unwrap();
    let before: Vec<Vec<u8>> = ["json", "parquet"]
        .map(|e| std::fs::read(d.join(format!("server_metrics_export.{e}"))).unwrap())
        .to_vec();
    let reprocess = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .args(["server-metrics", "--from-jsonl"])
            .arg(d.join("server_metrics_export.jsonl"))
            .args(extra)
            .output()
            .unwrap()
    };
    let refused = reprocess(&[]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--overwrite") && err.contains("--artifact-dir"),
        "{err}"
    );
    assert!(err.contains(&csv.display().to_string()), "{err}");
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "the run's own CSV\n"
    );
    let after: Vec<Vec<u8>> = ["json", "parquet"]
        .map(|e| std::fs::read(d.join(format!("server_metrics_export.{e}"))).unwrap())
        .to_vec();
    assert!(
        before == after,
        "the JSON and Parquet exports are untouched"
    );

    let replaced = reprocess(&["--overwrite"]);
    assert!(replaced.status.success(), "{replaced:?}");
    let stdout = String::from_utf8_lossy(&replaced.stdout);
    assert!(stdout.contains(&csv.display().to_string()), "{stdout}");
    let again = std::fs::read_to_string(&csv).unwrap();
    assert!(
        again.contains("vllm:request_success"),
        "recomputed in place: {again:.300}"
    );
}

/// The gauge series of a `server_metrics_export.json`'s `metrics` entries (AIPerf's shape).
fn gauge_series(
    metrics: &Value,
) -> Vec<ringperf_metrics::server_metrics::sglang_spec::GaugeSeries<'_>> {
    use ringperf_metrics::server_metrics::sglang_spec::GaugeSeries;
    use ringperf_metrics::server_metrics::summary::GaugeStats;
    let mut out = Vec::new();
    for name in ["sglang:spec_accept_rate", "sglang:spec_accept_length"] {
        for s in metrics[name]["series"].as_array().into_iter().flatten() {
            let st = &s["stats"];
            let f = |k: &str| st[k].as_f64().unwrap_or_else(|| panic!("{name}.{k}"));
            out.push(GaugeSeries {
                metric: name,
                endpoint_url: s["endpoint_url"].as_str().expect("url"),
                labels: (s["labels"].as_object().into_iter().flatten())
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect(),
                stats: GaugeStats {
                    avg: f("avg"),
                    min: f("min"),
                    max: f("max"),
                    std: f("std"),
                    p1: f("p1"),
                    p5: f("p5"),
                    p10: f("p10"),
                    p25: f("p25"),
                    p50: f("p50"),
                    p75: f("p75"),
                    p90: f("p90"),
                    p95: f("p95"),
                    p99: f("p99"),
                },
            });
        }
    }
    out
}

/// AIPerf's own SGLang speculative-decoding table (tests/data/aiperf-sglang-spec): from the
/// gauges' statistics AIPerf exported, ringperf prints the same table, line for line.
#[test]
fn sglang_speculative_decoding_table_of_aiperfs_gauges_is_aiperfs() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-sglang-spec");
    let metrics = read_json(&data.join("metrics.json"));
    let series = gauge_series(&metrics);
    assert_eq!(series.len(), 4, "two gauges, ranks 0 and 1");
    let ours = ringperf_metrics::server_metrics::sglang_spec::render(
        &series,
        &["mock-model".to_owned()],
        "NVIDIA AIPerf",
    )
    .expect("a table");
    let theirs = std::fs::read_to_string(data.join("console.txt")).expect("console");
    let lines = |s: &str| -> Vec<String> { s.lines().map(|l| l.trim_end().to_owned()).collect() };
    assert_eq!(lines(&ours), lines(&theirs));
}

/// Against the mock's SGLang gauges: the table is on the console, between the LLM metrics and
/// the footer, and its figures are those of the run's own export of the leader series.
#[test]
fn sglang_speculative_decoding_table_follows_the_runs_own_export() {
    let server = mock(MetricsMode::SglangSpec);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = profile(&server, dir.path(), 40, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ringperf | Server Metrics: Speculative Decoding"),
        "{stdout}"
    );
    let doc = read_json(&dir.path().join("server_metrics_export.json"));
    let leader = |name: &str| -> Value {
        doc["metrics"][name]["series"]
            .as_array()
            .expect("series")
            .iter()
            .find(|s| s["labels"]["tp_rank"] == "0")
            .expect("the leader series")["stats"]
            .clone()
    };
    let rate = leader("sglang:spec_accept_rate");
    let row = format!(
        "│ Accept Rate (%) │ {:.1} │ {:.1} │ {:.1} │ {:.1} │ {:.1} │",
        rate["avg"].as_f64().unwrap() * 100.0,
        rate["min"].as_f64().unwrap() * 100.0,
        rate["max"].as_f64().unwrap() * 100.0,
        rate["p50"].as_f64().unwrap() * 100.0,
        rate["p90"].as_f64().unwrap() * 100.0
    );
    // Cells are right-justified to the widest: compare without the padding.
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(squash(&stdout).contains(&squash(&row)), "{row}\n{stdout}");
    // The values cycle over the mock's three pages: a positive accept length, so shown.
    let (_, length) = ringperf_mock::mock::sglang_spec_values(1);
    assert!(leader("sglang:spec_accept_length")["min"].as_f64() >= Some(length));
}
