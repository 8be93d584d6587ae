//! The receive path on io_uring (the multishot `RECVMSG` into the worker's provided-buffer
//! ring): a ring of two buffers under bursts of long streams loses no byte, against the mock's
//! truth log of the text it sent; and the epoll driver's readiness path still reads the same.

use std::collections::HashMap;

use ringperf_mock::mock::TruthEntry;
use serde_json::Value;

use crate::common::{self, read_json, read_jsonl};

/// The text of one raw-export line: the `delta.content` of every streamed chunk, in order.
fn streamed_text(line: &Value) -> String {
    let mut text = String::new();
    for r in line["responses"].as_array().expect("responses") {
        for p in r["packets"].as_array().expect("SSE packets") {
            if p["name"] != "data" || p["value"] == "[DONE]" {
                continue;
            }
            let chunk: Value = serde_json::from_str(p["value"].as_str().unwrap()).unwrap();
            if let Some(c) = chunk["choices"][0]["delta"]["content"].as_str() {
                text.push_str(c);
            }
        }
    }
    text
}

/// A run of 12 streams of 400 tokens each, two at a time (the mock writes each stream at once),
/// with `env`;
/// checks every reply against the truth log and returns the summary's io driver.
fn run_against_truth(io_driver: &str, env: &[(&str, &str)]) -> String {
    let server = common::recording_mock(400);
    let dir = tempfile::tempdir().unwrap();
    let out = common::profile_binary(
        &server,
        dir.path(),
        12,
        &[
            "--export-level",
            "raw",
            "--no-server-metrics",
            "--timestamps",
            "kernel",
            "--io-driver",
            io_driver,
        ],
        env,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let truth: HashMap<String, TruthEntry> = server
        .truth()
        .entries()
        .into_iter()
        .map(|e| (e.request_id.unwrap().to_string(), e))
        .collect();
    let lines = read_jsonl(&dir.path().join("profile_export_raw.jsonl"));
    assert_eq!(lines.len(), 12, "{stderr}");
    for line in &lines {
        let id = line["metadata"]["x_request_id"].as_str().unwrap();
        let sent = truth[id].reply_text.clone().unwrap();
        assert!(sent.len() > 400, "{sent}");
        assert_eq!(streamed_text(line), sent, "{id} ({io_driver})");
    }
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(summary["error_summary"], serde_json::json!([]), "{stderr}");
    assert_eq!(summary["request_count"]["avg"].as_f64(), Some(12.0));
    assert!(
        !stderr.contains("multishot receive unavailable"),
        "{stderr}"
    );
    summary["ringperf"]["io_driver"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_two_buffer_ring_under_bursts_loses_no_byte_of_what_the_mock_sent() {
    let hook = ringperf_io::net::multishot::TEST_BUFFERS_ENV;
    let driver = run_against_truth("auto", &[(hook, "2")]);
    if driver != "io_uring" {
        assert!(
            std::env::var_os("CI").is_none_or(|v| v != "true"),
            "CI runs on io_uring"
        );
        eprintln!("skipped: no io_uring here ({driver})");
    }
}

#[test]
fn the_epoll_driver_keeps_the_readiness_path_and_reads_the_same() {
    assert_eq!(run_against_truth("legacy", &[]), "epoll");
}
