//! `video-generation` against the mock's video job API: the job is submitted, polled until it
//! ends and (with `--download-video-content`) downloaded, as the mock's own record of each job
//! says; a failed job, a job that never ends and a poll whose connection is reset are each one
//! counted error. The same command as AIPerf 0.13's against the mock gives AIPerf's metric keys
//! (`tests/data/aiperf-endpoints-mm/video_generation.json`).

use std::path::Path;
use std::time::Duration;

use ringperf_mock::mock::{MockConfig, MockServer, VideoJobConfig};
use serde_json::Value;

use crate::common::{read_json, read_jsonl};

fn mock(jobs: VideoJobConfig) -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        video_jobs: jobs,
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// Runs `requests` video requests (concurrency 2, polls every 20 ms) with `extra` flags; the
/// JSONL records. `ok`: some request succeeds (exit 0), else none does (exit 1).
fn run(server: &MockServer, dir: &Path, requests: u32, extra: &[&str], ok: bool) -> Vec<Value> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .env("AIPERF_HTTP_VIDEO_POLL_INTERVAL", "0.02")
        .args(["profile", "-m", "mock-model", "--ui", "none"])
        .args(["--endpoint-type", "video-generation"])
        .args(["--tokenizer", "builtin", "--concurrency", "2"])
        .args(["--no-server-metrics", "--no-gpu-telemetry"])
        .arg("--url")
        .arg(format!("http://{}", server.addr))
        .arg("--request-count")
        .arg(requests.to_string())
        .arg("--artifact-dir")
        .arg(dir)
        .args(extra)
        .output()
        .expect("the binary runs");
    assert_eq!(
        out.status.code(),
        Some(if ok { 0 } else { 1 }),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    read_jsonl(&dir.join("profile_export.jsonl"))
}

fn latency_ms(rec: &Value) -> f64 {
    rec["metrics"]["request_latency"]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("request_latency in {rec}"))
}

#[test]
fn jobs_are_polled_to_completion_and_downloaded() {
    let job = Duration::from_millis(100);
    let server = mock(VideoJobConfig {
        duration: job,
        content_bytes: 10_000,
        ..VideoJobConfig::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let recs = run(&server, dir.path(), 4, &["--download-video-content"], true);
    let jobs = server.video_jobs();
    assert_eq!(recs.len(), 4);
    assert_eq!(jobs.len(), 4, "one job per request");
    for rec in &recs {
        assert!(rec.get("error").is_none(), "{rec}");
        // The mock answers `completed` only once the job's duration has passed since its
        // submission: the request's latency spans it.
        assert!(latency_ms(rec) >= job.as_secs_f64() * 1e3, "{rec}");
    }
    for j in &jobs {
        assert_eq!(j.model.as_deref(), Some("mock-model"), "{j:?}");
        assert!(j.prompt.as_ref().is_some_and(|p| !p.is_empty()), "{j:?}");
        // Not done at the first poll, so polled again; polling stops at the first `completed`.
        assert!(j.polls >= 2, "{j:?}");
        assert_eq!(j.polls_after_end, 1, "{j:?}");
        assert_eq!(j.bytes_served, 10_000, "{j:?}");
    }
}

#[test]
fn without_download_the_content_is_not_fetched() {
    let server = mock(VideoJobConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let recs = run(&server, dir.path(), 2, &[], true);
    assert!(recs.iter().all(|r| r.get("error").is_none()), "{recs:?}");
    let jobs = server.video_jobs();
    assert_eq!(jobs.len(), 2);
    assert!(
        jobs.iter()
            .all(|j| j.bytes_served == 0 && j.polls_after_end == 1),
        "{jobs:?}"
    );
}

#[test]
fn a_failed_job_is_a_counted_error() {
    let server = mock(VideoJobConfig {
        fail: true,
        ..VideoJobConfig::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let recs = run(&server, dir.path(), 3, &["--download-video-content"], false);
    assert_eq!(recs.len(), 3);
    for rec in &recs {
        let e = &rec["error"];
        assert_eq!(e["type"], "VideoGenerationError", "{rec}");
        assert_eq!(
            e["message"], "Video generation failed: the mock was told to fail video jobs",
            "{rec}"
        );
        assert_eq!(e["code"], 500, "{rec}");
    }
    assert!(server.video_jobs().iter().all(|j| j.bytes_served == 0));
}

#[test]
fn a_job_that_never_ends_times_out() {
    let server = mock(VideoJobConfig {
        duration: Duration::from_secs(3600),
        ..VideoJobConfig::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let recs = run(
        &server,
        dir.path(),
        2,
        &["--request-timeout-seconds", "0.2"],
        false,
    );
    assert_eq!(recs.len(), 2);
    for rec in &recs {
        let e = &rec["error"];
        assert_eq!(e["type"], "TimeoutError", "{rec}");
        assert_eq!(
            e["message"], "Video generation timed out after 0.2s",
            "{rec}"
        );
        assert_eq!(e["code"], 504, "{rec}");
    }
    for j in server.video_jobs() {
        assert_eq!(j.polls_after_end, 0, "{j:?}");
        assert!(j.polls >= 2, "{j:?}");
    }
}

#[test]
fn same_metric_keys_and_body_as_aiperf() {
    let fixture = read_json(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/aiperf-endpoints-mm/video_generation.json"),
    );
    let server = mock(VideoJobConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = fixture["argv"].as_array().unwrap()[1..]
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    for (flag, value) in [
        ("--url", format!("http://{}", server.addr)),
        ("--artifact-dir", dir.path().display().to_string()),
    ] {
        let at = args.iter().position(|a| a == flag).expect(flag);
        args[at + 1] = value;
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(&args)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let ours = read_json(&dir.path().join("profile_export_aiperf.json"));
    let ours: Vec<(String, String)> = ours
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.get("unit")?.as_str()?.to_owned())))
        .collect();
    let theirs: Vec<(String, String)> = fixture["json_metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_owned(),
                p[1].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let sorted = |mut v: Vec<(String, String)>| {
        v.sort();
        v
    };
    assert_eq!(sorted(ours), sorted(theirs), "JSON metric keys and units");

    let csv = std::fs::read_to_string(dir.path().join("profile_export_aiperf.csv")).unwrap();
    let ours: Vec<&str> = csv
        .lines()
        .map(|l| l.split(',').next().unwrap_or_default())
        .take_while(|c| *c != "Endpoint")
        .filter(|c| !c.is_empty())
        .collect();
    let theirs: Vec<&str> = fixture["csv_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(ours, theirs, "CSV rows");

    // The job's body: AIPerf's keys in its order.
    let inputs = read_json(&dir.path().join("inputs.json"));
    let body = inputs["data"][0]["payloads"][0].as_object().unwrap();
    let keys: Vec<&String> = body.keys().collect();
    let theirs: Vec<&String> = fixture["payload"].as_object().unwrap().keys().collect();
    assert_eq!(keys, theirs);
    assert_eq!(body["model"], "mock-model");
    let jobs = server.video_jobs();
    assert_eq!(jobs.len(), 6);
    assert!(jobs.iter().all(|j| j.bytes_served == 4096), "{jobs:?}");
}

#[test]
fn a_poll_whose_connection_is_reset_is_a_counted_error() {
    let server = mock(VideoJobConfig {
        duration: Duration::from_secs(3600),
        reset_poll: Some(2),
        ..VideoJobConfig::default()
    });
    let dir = tempfile::tempdir().unwrap();
    // The timeout only bounds the test should the reset go unnoticed.
    let recs = run(
        &server,
        dir.path(),
        2,
        &["--request-timeout-seconds", "5"],
        false,
    );
    assert_eq!(recs.len(), 2);
    for rec in &recs {
        let e = &rec["error"];
        // A reset before any response byte: aiohttp's ClientOSError, or ServerDisconnectedError
        // when the kernel reports the reset as an end of stream.
        assert!(
            e["type"] == "ClientOSError" || e["type"] == "ServerDisconnectedError",
            "{rec}"
        );
        assert!(
            e["message"].as_str().unwrap().contains("/v1/videos"),
            "the error names the URL: {rec}"
        );
    }
    // The second poll was reset on its kept-alive connection and retried once on a fresh one,
    // which was reset too: polling stopped there.
    for j in server.video_jobs() {
        assert_eq!(j.polls, 3, "{j:?}");
    }
}
