//! Start-up: what a run does before its first request (perf/README, "Start-up"). The builtin
//! tokenizer's table is most of a short run's CPU; a run that needs no token count of its own
//! must never build it.

use std::collections::HashMap;

use crate::common::{profile_binary, read_json, read_jsonl, recording_mock};

/// Three chat prompts from a `single_turn` file, against a mock that counts their prompt tokens
/// exactly; `extra` flags appended. Returns the summary and, per record, (its ISL, the mock's
/// own count of that request's prompt tokens).
fn file_prompts_run(extra: &[&str]) -> (serde_json::Value, Vec<(Option<u64>, u64)>) {
    let server = recording_mock(3);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prompts.jsonl");
    std::fs::write(
        &file,
        "{\"text\": \"Shall I compare thee to a summer's day?\"}\n\
         {\"text\": \"Thou art more lovely and more temperate.\"}\n\
         {\"text\": \"Rough winds do shake the darling buds of May\"}\n",
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let mut args = vec![
        "--no-server-metrics",
        "--endpoint-type",
        "chat",
        "--input-file",
        file.to_str().unwrap(),
        "--custom-dataset-type",
        "single_turn",
    ];
    args.extend_from_slice(extra);
    profile_binary(&server, &out_dir, 3, &args, &[]);
    let truth: HashMap<String, u64> = server
        .truth()
        .entries()
        .into_iter()
        .filter_map(|e| e.request_id.map(|id| (id.to_string(), e.prompt_tokens)))
        .collect();
    let pairs = read_jsonl(&out_dir.join("profile_export.jsonl"))
        .iter()
        .map(|rec| {
            let id = rec["metadata"]["x_request_id"]
                .as_str()
                .expect("request id");
            let isl = rec["metrics"]["input_sequence_length"]["value"].as_u64();
            (isl, *truth.get(id).expect("the mock saw the request"))
        })
        .collect();
    (
        read_json(&out_dir.join("profile_export_aiperf.json")),
        pairs,
    )
}

/// Prompts from a file and token counts from the server: nothing to count, so the tokenizer is
/// never built, and every ISL is still the server's exact count.
#[test]
fn a_run_that_counts_no_tokens_never_builds_the_tokenizer() {
    let (summary, pairs) = file_prompts_run(&["--use-server-token-count"]);
    assert_eq!(
        summary["ringperf"]["tokenizer_loaded"],
        serde_json::json!(false),
        "{}",
        summary["ringperf"]
    );
    assert_eq!(pairs.len(), 3);
    for (isl, truth) in pairs {
        assert_eq!(isl, Some(truth));
    }
}

/// The same prompts counted by the client: the tokenizer is built (so the flag above is not
/// constant), and the client's counts equal the mock's.
#[test]
fn a_run_that_counts_prompts_builds_the_tokenizer() {
    let (summary, pairs) = file_prompts_run(&[]);
    assert_eq!(
        summary["ringperf"]["tokenizer_loaded"],
        serde_json::json!(true),
        "{}",
        summary["ringperf"]
    );
    assert_eq!(pairs.len(), 3);
    for (isl, truth) in pairs {
        assert_eq!(isl, Some(truth));
    }
}
