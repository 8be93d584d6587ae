//! `baseten_trace` end to end: Baseten-style Parquet traces replayed against the mock, checked
//! request by request against what AIPerf 0.13 sent for the same files and flags to the same
//! mock (tests/data/baseten/expected.json): the order, the prompt, `max_tokens`, `min_tokens`, the
//! KV hints, and for the runs that keep the trace's time, when each request arrived.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/baseten")
}

fn expected(case: &str) -> Value {
    common::read_json(&data().join("expected.json"))[case].clone()
}

/// The mock AIPerf was run against: first token after 5 ms, one more every ms, as many tokens
/// as asked (up to 64).
fn mock() -> ringperf_mock::mock::MockServer {
    ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(1),
        output_tokens: ringperf_mock::mock::OutputLen::Fixed(64),
        truth_log: true,
        record_bodies: true,
        ..ringperf_mock::mock::MockConfig::default()
    })
    .expect("mock starts")
}

/// `ringperf profile` on `file` with `flags`; the output and what the mock received, in
/// arrival order.
fn run(
    server: &ringperf_mock::mock::MockServer,
    file: &str,
    endpoint: &str,
    flags: &[&str],
) -> (std::process::Output, Vec<ringperf_mock::mock::TruthEntry>) {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-m",
            "mock-model",
            "--ui",
            "none",
            "--tokenizer",
            "builtin",
        ])
        .args([
            "--streaming",
            "--no-server-metrics",
            "--endpoint-type",
            endpoint,
        ])
        .arg("--url")
        .arg(format!("http://{}", server.addr))
        .arg("--input-file")
        .arg(data().join(file))
        .args(["--custom-dataset-type", "baseten_trace", "--artifact-dir"])
        .arg(dir.path())
        .args(flags)
        .output()
        .expect("the binary runs");
    let mut truth = server.truth().entries();
    truth.sort_by_key(|t| t.arrival_ns);
    (out, truth)
}

/// What a request carried, as the expectation spells it.
fn request_facts(body: &Value, endpoint: &str) -> Value {
    let text = match endpoint {
        "completions" => body["prompt"].clone(),
        _ => body["messages"][0]["content"].clone(),
    };
    let key = if body.get("max_completion_tokens").is_some() {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    serde_json::json!({
        "text": text,
        "max_tokens_key": key,
        "max_tokens": body[key],
        "min_tokens": body.get("min_tokens"),
        "hash_ids": body.get("hash_ids"),
        "block_size": body.get("block_size"),
    })
}

/// Checks every request against AIPerf's, in arrival order; `timing_ms` the tolerance of the
/// arrival times (from the first), `None` to check the order and bodies only.
fn check(case: &str, file: &str, flags: &[&str], timing_ms: Option<f64>) {
    let want = expected(case);
    assert_eq!(want["exit"], 0, "{case}: AIPerf's run failed");
    let endpoint = want["endpoint_type"].as_str().unwrap_or("chat").to_owned();
    let server = mock();
    let (out, truth) = run(&server, file, &endpoint, flags);
    assert!(
        out.status.success(),
        "{case}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = want["requests"].as_array().unwrap();
    assert_eq!(truth.len(), reqs.len(), "{case}: requests sent");
    let t0 = truth[0].arrival_ns;
    for (t, w) in truth.iter().zip(reqs) {
        let body: Value = serde_json::from_slice(t.request_body.as_deref().unwrap()).unwrap();
        let got = request_facts(&body, &endpoint);
        for k in [
            "text",
            "max_tokens_key",
            "max_tokens",
            "min_tokens",
            "hash_ids",
            "block_size",
        ] {
            assert_eq!(got[k], w[k], "{case}: {k} of {w}");
        }
        if let Some(tol) = timing_ms {
            let at = (t.arrival_ns - t0) as f64 / 1e6;
            let aiperf = w["t_ms"].as_f64().unwrap();
            assert!(
                (at - aiperf).abs() <= tol,
                "{case}: {} arrived at {at:.1} ms, AIPerf's at {aiperf:.1} ms",
                w["text"]
            );
        }
    }
}

#[test]
fn open_loop_with_the_idle_gap_cap_sends_what_and_when_aiperf_sent() {
    // 66 s of trace, the 60 s of dead air cut to 5 s: every request within 60 ms of AIPerf's.
    check(
        "idlecap",
        "multi.parquet",
        &["--max-idle-gap-cap-seconds", "5"],
        Some(60.0),
    );
}

#[test]
fn closed_loop_follows_the_answers_as_aiperf_did() {
    check(
        "closed_idlecap",
        "multi.parquet",
        &["--no-open-loop-replay", "--max-idle-gap-cap-seconds", "5"],
        Some(80.0),
    );
}

#[test]
fn completions_send_the_prompt_and_max_tokens() {
    check(
        "completions",
        "multi.parquet",
        &["--max-idle-gap-cap-seconds", "5", "--replay-speedup", "4"],
        None,
    );
}

#[test]
fn the_body_hints_follow_their_flags() {
    // Sped up (the order and the bodies do not depend on the pace).
    check(
        "nominttok",
        "multi.parquet",
        &[
            "--no-force-min-tokens",
            "--max-idle-gap-cap-seconds",
            "5",
            "--replay-speedup",
            "4",
        ],
        None,
    );
    check(
        "omitkv",
        "multi.parquet",
        &[
            "--omit-kv-hints",
            "--max-idle-gap-cap-seconds",
            "5",
            "--replay-speedup",
            "4",
        ],
        None,
    );
    check(
        "x_extra_min_noforce",
        "poor.parquet",
        &[
            "--random-seed",
            "7",
            "--extra-inputs",
            "min_tokens:5",
            "--no-force-min-tokens",
        ],
        None,
    );
}

#[test]
fn sessions_come_from_the_session_columns() {
    // `poor_man_session_id` when there is no `provided_session_id`; a row without either is a
    // session of its own (`session_000000` with a seed).
    check("poor", "poor.parquet", &["--random-seed", "7"], Some(60.0));
    // Strict open loop: every row its own session, at its own time (sped up 40×: 66 s of
    // trace in under 2 s).
    check(
        "strict",
        "multi.parquet",
        &["--open-loop-strict", "--replay-speedup", "40"],
        None,
    );
}

#[test]
fn sampling_keeps_the_sessions_aiperf_keeps_for_the_seed() {
    // Seed 7 at 0.5: AIPerf keeps only sess-C of the three (its draws are Python's Mersenne
    // Twister from the seed it derives, which ringperf draws the same).
    check(
        "sample",
        "multi.parquet",
        &["--trace-session-sample-ratio", "0.5", "--random-seed", "7"],
        Some(60.0),
    );
    // None of the poor-man sessions draws under 0.5: one is chosen (7), and the row without a
    // session is drawn on its own (kept).
    check(
        "poor_sample",
        "poor.parquet",
        &["--trace-session-sample-ratio", "0.5", "--random-seed", "7"],
        Some(60.0),
    );
}

#[test]
fn refusals_name_the_problem() {
    let server = mock();
    let refused = |file: &str, flags: &[&str]| {
        let (out, truth) = run(&server, file, "chat", flags);
        assert_eq!(out.status.code(), Some(2), "{file} {flags:?}");
        assert!(truth.is_empty(), "nothing is sent");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // AIPerf's own sentences.
    for (case, flags) in [
        (
            "f_strict_closed",
            &["--open-loop-strict", "--no-open-loop-replay"][..],
        ),
        ("f_extra_min", &["--extra-inputs", "min_tokens:5"][..]),
    ] {
        let aiperf = expected(case)["error"].as_str().unwrap().to_owned();
        let err = refused("multi.parquet", flags);
        let sentence = aiperf
            .split("Value error, ")
            .nth(1)
            .unwrap_or(&aiperf)
            .split(" [type=")
            .next()
            .unwrap()
            .to_owned();
        assert!(err.contains(&sentence), "{case}: {err}\nAIPerf: {sentence}");
    }
    // Files AIPerf also refuses, with the row and the field named.
    let err = refused("bad_negative.parquet", &[]);
    assert!(
        err.contains("field \"input_tokens\": must be at least 0, got -5"),
        "{err}"
    );
    let err = refused("bad_nonstring_prompt.parquet", &[]);
    assert!(err.contains("field \"prompt\": expected a string"), "{err}");
    let err = refused("bad_missing_col.parquet", &[]);
    assert!(err.contains("missing column(s) output_tokens"), "{err}");
    let err = refused("bad_empty.parquet", &[]);
    assert!(err.contains("no records"), "{err}");
    let err = refused("bad_zero_bytes.parquet", &[]);
    assert!(err.contains("not a readable Parquet file"), "{err}");
}
