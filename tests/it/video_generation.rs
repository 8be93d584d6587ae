//! `video-generation` against the mock's video job API: the job is submitted, polled until it
//! ends and (with `--download-video-content`) downloaded, as the mock's own record of each job
//! says; a failed job, a job that never ends and a poll whose connection is reset are each one
//! counted error.

use std::path::Path;
use std::time::Duration;

use ringperf::mock::{MockConfig, MockServer, VideoJobConfig};
use serde_json::Value;

use crate::common::read_jsonl;

fn mock(jobs: VideoJobConfig) -> MockServer {
    ringperf::mock::start(MockConfig {
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
