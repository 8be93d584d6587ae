//! Compact records end to end: the same seeded streaming workload against the in-process mock,
//! once with compact records (`--export-level records`) and once with raw bodies kept
//! (`--export-level raw`), gives every request the same token metrics, and both match the
//! mock's own count of what it sent.

use crate::common;
use common::{config, read_jsonl};

use std::collections::BTreeMap;
use std::sync::Arc;

use ringperf_mock::mock::{MockConfig, MockServer, OutputLen, PromptTokenizer};
use serde_json::Value;

/// Output tokens of every reply, of which `reasoning` stream first as reasoning.
const TOKENS: u64 = 12;

fn mock(reasoning: usize, per_event: usize) -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        output_tokens: OutputLen::Fixed(TOKENS),
        reasoning_tokens: reasoning,
        tokens_per_event: per_event,
        truth_log: true,
        prompt_tokenizer: Some(PromptTokenizer(Arc::new(
            ringperf_workload::workload::Tokenizer::builtin(),
        ))),
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// Metrics that do not depend on timing, per request (by session number).
const COUNTS: &[&str] = &[
    "input_sequence_length",
    "output_token_count",
    "output_sequence_length",
    "reasoning_token_count",
    "usage_prompt_tokens",
    "usage_completion_tokens",
    "usage_total_tokens",
    "usage_reasoning_tokens",
];

/// Runs the workload at `level`; returns, per session number, the values of [`COUNTS`] and the
/// number of inter-token latencies (one per content response after the first).
fn run(server: &MockServer, level: &str) -> BTreeMap<u64, (Vec<Option<f64>>, usize)> {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --streaming --concurrency 3 --request-count 9 \
         --isl 16 --osl {TOKENS} --random-seed 11 --tokenizer builtin --export-level {level} \
         --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!((out.successes, out.errors), (9, 0), "{level}");
    read_jsonl(&dir.path().join("profile_export.jsonl"))
        .iter()
        .map(|line: &Value| {
            let m = &line["metrics"];
            let counts = COUNTS.iter().map(|k| m[*k]["value"].as_f64()).collect();
            let itls = m["inter_chunk_latency"]["value"]
                .as_array()
                .map_or(0, Vec::len);
            (
                line["metadata"]["session_num"].as_u64().unwrap(),
                (counts, itls),
            )
        })
        .collect()
}

fn check(reasoning: usize, per_event: usize) {
    let server = mock(reasoning, per_event);
    let compact = run(&server, "records");
    let raw = run(&server, "raw");
    assert_eq!(compact.len(), 9);
    assert_eq!(
        compact, raw,
        "reasoning {reasoning}, {per_event} tokens per event"
    );
    // Against the mock: every reply carried TOKENS tokens, `reasoning` of them reasoning.
    let osl = COUNTS
        .iter()
        .position(|k| *k == "output_sequence_length")
        .unwrap();
    let rsn = COUNTS
        .iter()
        .position(|k| *k == "reasoning_token_count")
        .unwrap();
    for (counts, _) in compact.values() {
        assert_eq!(counts[osl], Some(TOKENS as f64), "{counts:?}");
        let want = (reasoning > 0).then_some(reasoning as f64);
        assert_eq!(counts[rsn], want, "{counts:?}");
    }
    let truth = server.truth().entries();
    assert_eq!(truth.len(), 18, "both runs reached the mock");
}

#[test]
fn compact_and_raw_records_give_the_same_token_metrics() {
    check(0, 1);
}

#[test]
fn compact_reasoning_and_multi_token_events_match_raw() {
    check(4, 3);
}
