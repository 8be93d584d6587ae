//! `--network-latency-*`: the network-adjusted latencies against AIPerf 0.13's own run
//! (tests/data/aiperf-network-latency), and end to end against the mock: a fixed mean, the
//! automatic probes and their JSONL, AIPerf's refusals.

use crate::common;

use common::{read_json, read_jsonl};

use std::path::Path;
use std::time::Duration;

use ringperf_metrics::aggregate::{
    Accumulator, MetricConfig, MetricId, MetricValue, RecordMetrics, Summary,
};
use ringperf_mock::mock::{MockConfig, MockServer, OutputLen};

fn data() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-network-latency")
}

/// From AIPerf's own per-record latencies, the same 5 ms subtracted gives AIPerf's
/// `network_adjusted_*` and `network_rtt`: every statistic, the JSON keys and their order, the
/// CSV rows and the console rows.
#[test]
fn adjusted_latencies_of_aiperfs_records_are_aiperfs() {
    let mut acc = Accumulator::new(MetricConfig::new(true, false));
    for line in read_jsonl(&data().join("records.jsonl")) {
        let ns = |tag: &str| -> i64 {
            let ms = line["metrics"][tag]["value"].as_f64().expect("a latency");
            (ms * 1e6).round() as i64
        };
        let m = RecordMetrics {
            values: vec![
                (
                    MetricId::TimeToFirstToken,
                    MetricValue::Int(ns("time_to_first_token")),
                ),
                (
                    MetricId::TimeToFirstOutputToken,
                    MetricValue::Int(ns("time_to_first_output_token")),
                ),
                (
                    MetricId::RequestLatency,
                    MetricValue::Int(ns("request_latency")),
                ),
            ],
        };
        acc.add(&ringperf_metrics::aggregate::testing::facts(), &m);
    }
    let ours = acc.network_adjusted(5e6);
    let theirs = read_json(&data().join("summary.json"));
    // AIPerf's order, after `effective_latency` (the last metric before them).
    let tags: Vec<&str> = ours.iter().map(|r| r.def.tag).collect();
    let tail: Vec<&str> = theirs["key_order_tail"]
        .as_array()
        .expect("keys")
        .iter()
        .filter_map(|k| k.as_str())
        .filter(|k| k.starts_with("network_"))
        .collect();
    assert_eq!(tags, tail);
    for r in &ours {
        let json = ringperf_metrics::export::json::metric_json(r);
        let want = &theirs[r.def.tag];
        let (a, b) = (json.as_object().expect("o"), want.as_object().expect("o"));
        let (ka, kb): (Vec<&String>, Vec<&String>) = (a.keys().collect(), b.keys().collect());
        assert_eq!(ka, kb, "{}: the same keys, no count", r.def.tag);
        for (k, v) in b {
            match v.as_f64() {
                Some(w) => {
                    let got = a[k].as_f64().expect("a number");
                    assert!(
                        (got - w).abs() <= 1e-9 * w.abs().max(1.0),
                        "{}.{k}: {got} vs {w}",
                        r.def.tag
                    );
                }
                None => assert_eq!(&a[k], v, "{}.{k}", r.def.tag),
            }
        }
    }

    let summary = Summary {
        results: ours,
        error_summary: Vec::new(),
        dispatch_lag: None,
        receive_lag: None,
        kernel_rtt: None,
        spec_decode_histogram: Vec::new(),
        skipped_context_overflows: 0,
    };
    // CSV rows, as AIPerf writes them, in its order (by tag).
    let csv = ringperf_metrics::export::csv::summary_csv(&summary);
    let rows: Vec<&str> = csv.lines().filter(|l| l.starts_with("Network")).collect();
    let want = std::fs::read_to_string(data().join("csv_rows.csv")).expect("csv");
    assert_eq!(rows, want.lines().collect::<Vec<_>>());
    // Console rows (the table's width differs: compare each row's cells).
    use ringperf_metrics::export::console::{render_table, rows_of};
    let console = render_table(
        "LLM Metrics",
        &rows_of(&summary, ringperf_metrics::aggregate::ConsoleGroup::Default),
    );
    let cells = |text: &str| -> Vec<Vec<String>> {
        text.lines()
            .filter(|l| l.starts_with('│'))
            .map(|l| l.split('│').map(|c| c.trim().to_owned()).collect())
            .collect()
    };
    let want = std::fs::read_to_string(data().join("console_rows.txt")).expect("console");
    assert_eq!(cells(&console), cells(&want));
}

fn mock() -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(20),
        itl: Duration::from_millis(2),
        output_tokens: OutputLen::Fixed(8),
        ..MockConfig::default()
    })
    .expect("mock starts")
}

fn stat(doc: &serde_json::Value, tag: &str, key: &str) -> f64 {
    doc[tag][key]
        .as_f64()
        .unwrap_or_else(|| panic!("{tag}.{key}: {}", doc[tag]))
}

#[test]
fn a_fixed_mean_shifts_the_start_anchored_latencies_and_only_those() {
    let server = mock();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = common::profile_binary(
        &server,
        dir.path(),
        30,
        &["--network-latency-mean", "5", "--no-server-metrics"],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("subtracting a fixed mean RTT of 5.000 ms from latency metrics"),
        "{stderr}"
    );
    let doc = read_json(&dir.path().join("profile_export_aiperf.json"));
    // The mock's TTFT is 20 ms: every latency is above 5 ms, so every statistic moves by 5 ms
    // (the standard deviation not at all).
    for (source, adjusted) in [
        ("request_latency", "network_adjusted_request_latency"),
        (
            "time_to_first_token",
            "network_adjusted_time_to_first_token",
        ),
        (
            "time_to_first_output_token",
            "network_adjusted_time_to_first_output_token",
        ),
    ] {
        for key in ["avg", "min", "max", "p50", "p99"] {
            let (a, b) = (stat(&doc, adjusted, key), stat(&doc, source, key) - 5.0);
            assert!((a - b).abs() < 1e-9, "{adjusted}.{key}: {a} vs {b}");
        }
        let (a, b) = (stat(&doc, adjusted, "std"), stat(&doc, source, "std"));
        assert!((a - b).abs() < 1e-9);
        assert!(doc[adjusted].get("count").is_none());
    }
    assert_eq!(stat(&doc, "network_rtt", "p50"), 5.0);
    // Not adjusted: the inter-token latency, the rates.
    assert!(doc.get("network_adjusted_inter_token_latency").is_none());
    assert_eq!(
        doc["input_config"]["network_latency"],
        serde_json::json!({"enabled": true, "mean_ms": 5.0})
    );
    // No probe, no probe file; never in the per-record lines.
    assert!(
        !dir.path()
            .join("profile_export_network_latency.jsonl")
            .exists()
    );
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert!(
        records
            .iter()
            .all(|r| r["metrics"].get("network_rtt").is_none())
    );
    // Beside it, the kernel's RTT estimate of each request's connection: on every record, and
    // summarized in the `ringperf` block and the footer.
    let rtts: Vec<f64> = records
        .iter()
        .map(|r| r["metadata"]["tcp_rtt_us"].as_f64().expect("tcp_rtt_us") * 1e3)
        .collect();
    assert!(rtts.iter().all(|r| *r > 0.0 && *r < 1e9), "{rtts:?}");
    let k = &doc["ringperf"]["kernel_rtt_ns"];
    assert_eq!(k["count"], records.len());
    assert_eq!(k["max"].as_f64(), rtts.iter().copied().reduce(f64::max));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "Network RTT: 5.000 ms subtracted (network_rtt); the connections' kernel estimate p50"
        ),
        "{stdout}"
    );
}

#[test]
fn without_the_flags_nothing_is_adjusted_and_no_socket_is_asked() {
    let server = mock();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = common::profile_binary(&server, dir.path(), 5, &["--no-server-metrics"], &[]);
    let doc = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert!(
        doc.as_object()
            .expect("o")
            .keys()
            .all(|k| !k.starts_with("network_"))
    );
    assert!(doc["ringperf"].get("kernel_rtt_ns").is_none());
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert!(
        records
            .iter()
            .all(|r| r["metadata"].get("tcp_rtt_us").is_none())
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Network RTT"));
}

#[test]
fn automatic_probes_the_server_writes_each_probe_and_subtracts_their_mean() {
    let server = mock();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = common::profile_binary(
        &server,
        dir.path(),
        40,
        &[
            "--network-latency-automatic",
            "--network-latency-ping-interval",
            "0.05",
            "--no-server-metrics",
        ],
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let file = dir.path().join("profile_export_network_latency.jsonl");
    assert!(
        stdout.contains(&format!("Network Latency JSONL Export: {}", file.display())),
        "{stdout}"
    );
    let probes = read_jsonl(&file);
    let ours: Vec<Vec<&str>> = probes
        .iter()
        .map(|p| {
            p.as_object()
                .expect("o")
                .keys()
                .map(String::as_str)
                .collect()
        })
        .collect();
    // AIPerf's line, key for key.
    let theirs = read_jsonl(&data().join("probes.jsonl"));
    let their_keys: Vec<&str> = theirs[0]
        .as_object()
        .expect("o")
        .keys()
        .map(String::as_str)
        .collect();
    assert!(ours.iter().all(|k| *k == their_keys), "{ours:?}");
    let ok: Vec<u64> = probes
        .iter()
        .inspect(|p| {
            assert_eq!(p["target_host"], "127.0.0.1");
            assert_eq!(p["target_port"], server.addr.port());
            assert_eq!(p["target_url"], format!("http://{}", server.addr).as_str());
            assert_eq!(p["probe_type"], "tcp_connect");
        })
        .filter_map(|p| p["rtt_ns"].as_u64())
        .collect();
    // At least the top-up's five, all successful on a listening mock.
    assert!(ok.len() >= 5 && ok.len() == probes.len(), "{probes:?}");
    // Stamped in time order, from the profiling phase's start on.
    let (start, _) = common::profiling_window(dir.path());
    let stamps: Vec<u64> = probes
        .iter()
        .filter_map(|p| p["timestamp_ns"].as_u64())
        .collect();
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]) && stamps[0] >= start);
    let doc = read_json(&dir.path().join("profile_export_aiperf.json"));
    let mean_ms = ok.iter().sum::<u64>() as f64 / ok.len() as f64 / 1e6;
    assert!((stat(&doc, "network_rtt", "avg") - mean_ms).abs() < 1e-9);
    assert_eq!(
        doc["input_config"]["network_latency"],
        serde_json::json!({"enabled": true, "ping_interval": 0.05})
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("over {} TCP-handshake probes", ok.len())),
        "{stderr}"
    );
}

#[test]
fn aiperfs_refusals_and_its_automatic_echo() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .args([
                "profile",
                "-m",
                "m",
                "--url",
                "http://127.0.0.1:9",
                "--request-count",
                "1",
            ])
            .args(args)
            .output()
            .expect("runs")
    };
    for (args, says) in [
        (
            &["--network-latency-automatic", "--network-latency-mean", "5"][..],
            "Cannot use both --network-latency-automatic and --network-latency-mean together.",
        ),
        (
            &["--network-latency-ping-interval", "2"][..],
            "--network-latency-ping-interval only applies when --network-latency-automatic is set",
        ),
        (
            &[
                "--network-latency-mean",
                "5",
                "--network-latency-ping-interval",
                "2",
            ][..],
            "only applies with --network-latency-automatic, not with --network-latency-mean.",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // `config expand` echoes the automatic mode as AIPerf's input_config does.
    let theirs = read_json(&data().join("echo_automatic.json"));
    let argv: Vec<String> = [
        "ringperf",
        "profile",
        "-m",
        "m",
        "--url",
        "http://127.0.0.1:9",
        "--network-latency-automatic",
        "--network-latency-ping-interval",
        "0.5",
    ]
    .map(String::from)
    .to_vec();
    let plan = ringperf::plan::Plan::parse(&argv).expect("parses");
    let cfg = ringperf::config::Config::from_plan(&plan, false).expect("resolves");
    assert_eq!(cfg.input_config()["network_latency"], theirs["automatic"]);
}
