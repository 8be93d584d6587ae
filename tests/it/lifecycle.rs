//! The server lifecycle around a run (docs/integrations.md): `--wait-for-model-*`,
//! `--reset-kv-cache*`, `--server-profiler*`, driven by the binary against the in-process mock.
//! Ground truth is the mock's own record of the control calls it answered
//! ([`ringperf_mock::mock::ControlCall`]: order, status, time on the wall clock and on the mock's
//! monotonic clock) against the run's records and the mock's record of every completion.

use std::collections::HashSet;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use ringperf_mock::mock::{ControlCall, MockConfig, MockServer, OutputLen};
use serde_json::Value;

use crate::common::read_jsonl;

/// A mock whose model loads for `ready_after` and its first `loading` readiness-relevant
/// requests, and which answers 503 to its first `busy_resets` resets.
fn mock_loading(ready_after: Duration, loading: u32, busy_resets: u32) -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        output_tokens: OutputLen::Fixed(4),
        ttft: Duration::from_millis(2),
        truth_log: true,
        model_ready_after: ready_after,
        loading_answers: loading,
        busy_resets,
        ..MockConfig::default()
    })
    .expect("mock starts")
}

fn mock(ready_after: Duration, busy_resets: u32) -> MockServer {
    mock_loading(ready_after, 0, busy_resets)
}

/// The binary against `server` (chat, streaming, builtin tokenizer, no UI), `extra` appended;
/// the exit status is the caller's to check.
fn run(server: &MockServer, dir: &Path, extra: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "mock-model", "--streaming", "--ui", "none"])
        .args(["--tokenizer", "builtin", "--no-server-metrics"])
        .arg("--url")
        .arg(format!("http://{}", server.addr))
        .arg("--artifact-dir")
        .arg(dir)
        .args(extra)
        .output()
        .expect("the binary runs")
}

fn ok(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "exit {:?}: {err}", out.status);
    err
}

fn calls(server: &MockServer, path: &str) -> Vec<ControlCall> {
    server
        .truth()
        .controls()
        .into_iter()
        .filter(|c| c.path == path)
        .collect()
}

fn meta_u64(r: &Value, key: &str) -> u64 {
    r["metadata"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key}"))
}

/// The request ids of the run's records of `phase`.
fn ids(recs: &[Value], phase: &str) -> HashSet<String> {
    recs.iter()
        .filter(|r| r["metadata"]["benchmark_phase"] == phase)
        .map(|r| r["metadata"]["x_request_id"].as_str().unwrap().to_owned())
        .collect()
}

/// One run with a warmup, the reset and the profiler: reset, start, stop, in that order, once
/// each; the reset before the first request of the run, the start after the last warmup answer
/// and before the first profiling request, the stop after the last profiling answer — on the
/// wall clock against the run's records, and on the mock's own clock against what it served.
#[test]
fn the_reset_and_the_profiler_bracket_the_run_and_its_profiling_phase() {
    let server = mock(Duration::ZERO, 0);
    let dir = tempfile::tempdir().unwrap();
    ok(&run(
        &server,
        dir.path(),
        &[
            "--concurrency",
            "2",
            "--warmup-request-count",
            "4",
            "--request-count",
            "8",
            "--reset-kv-cache",
            "--server-profiler",
        ],
    ));
    let controls = server.truth().controls();
    let order: Vec<(&str, &str, u16)> = controls
        .iter()
        .map(|c| (c.method, c.path, c.status))
        .collect();
    assert_eq!(
        order,
        [
            ("POST", "/reset_prefix_cache", 200),
            ("POST", "/start_profile", 200),
            ("POST", "/stop_profile", 200)
        ]
    );
    let (reset, start, stop) = (&controls[0], &controls[1], &controls[2]);

    let recs = read_jsonl(&dir.path().join("profile_export.jsonl"));
    let (warm, prof) = (ids(&recs, "warmup"), ids(&recs, "profiling"));
    assert_eq!((warm.len(), prof.len()), (4, 8));
    for r in &recs {
        let (s, e) = (
            meta_u64(r, "request_start_ns"),
            meta_u64(r, "request_end_ns"),
        );
        assert!(reset.wall_ns < s, "the reset comes before every request");
        if r["metadata"]["benchmark_phase"] == "warmup" {
            assert!(
                e < start.wall_ns,
                "the profiler starts after the warmup's answers"
            );
        } else {
            assert!(
                start.wall_ns < s,
                "the profiler starts before profiling requests"
            );
            assert!(
                e < stop.wall_ns,
                "the profiler stops after the profiling answers"
            );
        }
    }
    // The mock's own clock: what it served, by the ids the run recorded per phase.
    let entries = server.truth().entries();
    assert_eq!(entries.len(), 12);
    for e in &entries {
        let id = e.request_id.unwrap().hyphenated().to_string();
        assert!(reset.arrival_ns < e.arrival_ns);
        if warm.contains(&id) {
            assert!(e.end_ns < start.arrival_ns, "{id}");
        } else {
            assert!(prof.contains(&id), "{id}");
            assert!(
                start.arrival_ns < e.arrival_ns && e.end_ns < stop.arrival_ns,
                "{id}"
            );
        }
    }
}

/// A sweep resets before each variation and repeated runs before each run: one reset per run,
/// each before that run's first request and after the previous run's last answer.
#[test]
fn every_sweep_variation_and_every_repeated_run_is_reset_first() {
    for (flags, runs) in [
        (&["--concurrency", "1,2", "--request-count", "3"][..], 2),
        (
            &[
                "--concurrency",
                "1",
                "--request-count",
                "3",
                "--num-profile-runs",
                "3",
                "--profile-run-cooldown-seconds",
                "0",
            ][..],
            3,
        ),
    ] {
        let server = mock(Duration::ZERO, 0);
        let dir = tempfile::tempdir().unwrap();
        let mut args = flags.to_vec();
        args.push("--reset-kv-cache");
        ok(&run(&server, dir.path(), &args));
        let resets = calls(&server, "/reset_prefix_cache");
        assert_eq!(resets.len(), runs, "{flags:?}");
        let entries = server.truth().entries();
        assert_eq!(entries.len(), 3 * runs, "{flags:?}");
        // Run k's requests all lie between reset k and reset k+1.
        for (k, chunk) in entries.chunks(3).enumerate() {
            for e in chunk {
                assert!(resets[k].arrival_ns < e.arrival_ns, "{flags:?} run {k}");
                if let Some(next) = resets.get(k + 1) {
                    assert!(e.end_ns < next.arrival_ns, "{flags:?} run {k}");
                }
            }
        }
    }
}

/// A busy server (503 to the first reset) is retried after the backoff, and the run goes on.
#[test]
fn a_busy_reset_is_retried_and_a_refused_one_fails_the_run() {
    let server = mock(Duration::ZERO, 1);
    let dir = tempfile::tempdir().unwrap();
    let err = ok(&run(
        &server,
        dir.path(),
        &["--request-count", "2", "--reset-kv-cache"],
    ));
    let statuses: Vec<u16> = calls(&server, "/reset_prefix_cache")
        .iter()
        .map(|c| c.status)
        .collect();
    assert_eq!(statuses, [503, 200]);
    assert!(err.contains("retrying in 1 s"), "{err}");
    assert_eq!(server.truth().entries().len(), 2);

    // A path the server does not have (404) is not retried: exit 2, nothing sent.
    let server = mock(Duration::ZERO, 0);
    let out = run(
        &server,
        dir.path(),
        &["--request-count", "2", "--reset-kv-cache-path", "/nope"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("reset_kv_cache failed before the run") && err.contains("HTTP 404"),
        "{err}"
    );
    assert!(server.truth().entries().is_empty());
}

/// A config file's `reset_kv_cache.max_retry_seconds` (AIPerf 0.13's budget for retrying a busy
/// reset; no flag sets it): 0 retries nothing, so the busy server's 503 fails the run before
/// anything is sent; the default budget retried the same 503 above.
#[test]
fn a_files_reset_retry_budget_bounds_the_retries() {
    let server = mock(Duration::ZERO, 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("reset.yaml");
    std::fs::write(
        &file,
        format!(
            "benchmark:\n  model: mock-model\n  endpoint:\n    url: http://{}\n    streaming: true\n    \
             reset_kv_cache: {{max_retry_seconds: 0}}\n  dataset: {{type: synthetic}}\n  \
             tokenizer: {{name: builtin}}\n  phases: {{type: concurrency, concurrency: 1, requests: 2}}\n  \
             artifacts: {{dir: {}}}\n",
            server.addr,
            dir.path().join("out").display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "--config"])
        .arg(&file)
        .args(["--ui", "none", "--no-server-metrics"])
        .output()
        .expect("the binary runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("reset_kv_cache failed before the run"),
        "{err}"
    );
    let statuses: Vec<u16> = calls(&server, "/reset_prefix_cache")
        .iter()
        .map(|c| c.status)
        .collect();
    assert_eq!(statuses, [503]);
    assert!(server.truth().entries().is_empty());
}

/// A profiler that cannot start fails the run before profiling sends anything; one that
/// cannot stop is a warning and the run stands.
#[test]
fn a_failed_profiler_start_fails_the_run_and_a_failed_stop_is_a_warning() {
    let server = mock(Duration::ZERO, 0);
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &server,
        dir.path(),
        &[
            "--warmup-request-count",
            "2",
            "--request-count",
            "4",
            "--server-profiler-start-path",
            "/nope",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("server_profiler start failed: POST http://"),
        "{err}"
    );
    assert_eq!(
        server.truth().entries().len(),
        2,
        "only the warmup was sent"
    );

    let server = mock(Duration::ZERO, 0);
    let err = ok(&run(
        &server,
        dir.path(),
        &[
            "--request-count",
            "3",
            "--server-profiler-stop-path",
            "/nope",
        ],
    ));
    assert!(
        err.contains("warning: server_profiler stop failed"),
        "{err}"
    );
    assert_eq!(calls(&server, "/start_profile").len(), 1);
    assert_eq!(server.truth().entries().len(), 3);
}

/// `--wait-for-model-mode both` against a model still loading (for its first three
/// `/v1/models` answers): `/v1/models` is polled until it lists the model, then a one-token
/// request is answered, then the run starts; the progress is on stderr.
#[test]
fn the_run_waits_for_a_loading_model() {
    let server = mock_loading(Duration::ZERO, 3, 0);
    let dir = tempfile::tempdir().unwrap();
    let err = ok(&run(
        &server,
        dir.path(),
        &[
            "--request-count",
            "3",
            "--wait-for-model-timeout",
            "30",
            "--wait-for-model-interval",
            "0.2",
            "--wait-for-model-mode",
            "both",
        ],
    ));
    let lists = calls(&server, "/v1/models");
    let listed: Vec<bool> = lists.iter().map(|c| c.listed.unwrap()).collect();
    assert_eq!(listed, [false, false, false, true]);
    // Probes are an interval apart at least (never sooner: each waits the interval).
    for w in lists.windows(2) {
        assert!(w[1].arrival_ns - w[0].arrival_ns >= 200_000_000);
    }
    assert!(err.contains("model 'mock-model' not yet listed"), "{err}");
    assert!(
        err.contains(&format!(
            "model 'mock-model' ready at http://{}",
            server.addr
        )),
        "{err}"
    );
    assert!(err.contains("inference probe ready at"), "{err}");
    // The probe is the first completion the mock served, after the model was listed; then the
    // run's three.
    let entries = server.truth().entries();
    assert_eq!(entries.len(), 4);
    assert!(lists.last().unwrap().arrival_ns < entries[0].arrival_ns);
    let recs = read_jsonl(&dir.path().join("profile_export.jsonl"));
    let run_ids = ids(&recs, "profiling");
    assert!(
        !run_ids.contains(
            &entries[0]
                .request_id
                .map_or(String::new(), |u| u.to_string())
        )
    );
    assert!(
        entries[1..]
            .iter()
            .all(|e| run_ids.contains(&e.request_id.unwrap().to_string()))
    );
}

/// The default (`inference`) mode retries the 503 of a loading server (its first three
/// completion requests) until it answers.
#[test]
fn the_inference_probe_retries_503_until_the_model_answers() {
    let server = mock_loading(Duration::ZERO, 3, 0);
    let dir = tempfile::tempdir().unwrap();
    let err = ok(&run(
        &server,
        dir.path(),
        &[
            "--request-count",
            "2",
            "--wait-for-model-timeout",
            "30",
            "--wait-for-model-interval",
            "0.1",
        ],
    ));
    let refused = calls(&server, "/v1/chat/completions");
    assert_eq!(refused.len(), 3);
    assert!(refused.iter().all(|c| c.status == 503));
    assert!(
        calls(&server, "/v1/models").is_empty(),
        "inference mode lists nothing"
    );
    assert!(err.contains("answered 503"), "{err}");
    assert_eq!(
        server.truth().entries().len(),
        3,
        "the probe and the run's two"
    );
    assert!(refused.last().unwrap().arrival_ns < server.truth().entries()[0].arrival_ns);
}

/// Out of time: exit 2 with the URL, the model and the attempts; nothing is sent.
#[test]
fn a_model_that_never_loads_is_a_clear_error() {
    let server = mock(Duration::from_secs(3600), 0);
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &server,
        dir.path(),
        &[
            "--request-count",
            "2",
            "--wait-for-model-timeout",
            "0.5",
            "--wait-for-model-interval",
            "0.1",
            "--wait-for-model-mode",
            "models",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let n = calls(&server, "/v1/models").len();
    assert!(n >= 2, "{n}");
    assert!(
        err.contains(&format!(
            "timed out after 0.5 s waiting for model 'mock-model' to be ready at http://{} \
             (checked {n} times)",
            server.addr
        )),
        "{err}"
    );
    assert!(server.truth().entries().is_empty());
}
