//! Every endpoint type against the in-process mock: the requests arrive at the type's path
//! (streamed when the type streams), the record counts and token counts agree with the mock's
//! truth log, and the metrics AIPerf drops for the type (PRODUCES_TOKENS_ONLY without tokens;
//! ISL where AIPerf's payload walk finds no text) are absent from `profile_export_aiperf.json`.

use crate::common;

use std::collections::HashMap;

use common::{config, read_json, read_jsonl, recording_mock};
use ringperf_mock::mock::TruthEntry;
use serde_json::Value;

const REQUESTS: usize = 6;
const OUTPUT_TOKENS: u64 = 5;

struct Run {
    summary: Value,
    records: Vec<Value>,
    truth: HashMap<String, TruthEntry>,
}

fn run(endpoint_type: &str, extra: &str) -> Run {
    let server = recording_mock(OUTPUT_TOKENS);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --endpoint-type {endpoint_type} --concurrency 2 \
         --request-count {REQUESTS} --isl 12 --random-seed 7 --ui none --artifact-dir {} {extra}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!(out.successes, REQUESTS as u64, "{endpoint_type} {extra}");
    let truth = server
        .truth()
        .entries()
        .into_iter()
        .filter_map(|e| e.request_id.map(|id| (id.to_string(), e)))
        .collect();
    Run {
        summary: read_json(&dir.path().join("profile_export_aiperf.json")),
        records: read_jsonl(&dir.path().join("profile_export.jsonl")),
        truth,
    }
}

impl Run {
    /// Every record's truth entry, checked to be at `path`, streamed or not.
    fn entries(&self, path: &str, stream: bool) -> Vec<(&Value, &TruthEntry)> {
        assert_eq!(self.records.len(), REQUESTS);
        assert_eq!(
            self.truth.len(),
            REQUESTS,
            "the mock saw every request once"
        );
        self.records
            .iter()
            .map(|rec| {
                let id = rec["metadata"]["x_request_id"]
                    .as_str()
                    .expect("request id");
                let t = &self.truth[id];
                assert_eq!(t.path, path);
                assert_eq!(t.stream, stream, "{path}");
                (rec, t)
            })
            .collect()
    }

    fn has(&self, tag: &str) -> bool {
        self.summary.get(tag).is_some()
    }
}

fn value(rec: &Value, tag: &str) -> Option<u64> {
    rec["metrics"][tag]["value"].as_u64()
}

/// The metrics that need generated tokens.
/// Metrics of token-producing endpoints only. (`output_sequence_length` is not one of them: AIPerf
/// 0.13 computes it for every endpoint while the client counts tokens, as a dependency of the
/// usage differences, and an embedding or a ranking has 0 output tokens;
/// `tests/data/aiperf-keys/`.)
const TOKEN_METRICS: [&str; 2] = ["output_token_throughput", "output_token_count"];

/// Every record of `r` has `output_sequence_length` 0, as AIPerf 0.13 writes for embeddings
/// and rankings.
fn zero_output_tokens(r: &Run, kind: &str) {
    let osl = &r.summary["output_sequence_length"];
    assert_eq!(
        (osl["max"].as_f64(), osl["sum"].as_f64()),
        (Some(0.0), Some(0.0)),
        "{kind}"
    );
    for rec in &r.records {
        assert_eq!(value(rec, "output_sequence_length"), Some(0), "{kind}");
    }
}

#[test]
fn embeddings_family_produce_no_token_metrics() {
    for (kind, batch) in [
        ("embeddings", 3),
        ("nim-embeddings", 2),
        ("chat-embeddings", 1),
    ] {
        // --streaming is turned off for a type that cannot stream.
        let r = run(kind, &format!("--streaming --batch-size {batch}"));
        for (rec, t) in r.entries("/v1/embeddings", false) {
            assert_eq!(t.content_tokens, 0);
            // The mock counted the prompt tokens of the texts it was sent; the client tokenized
            // the same `input` texts.
            assert_eq!(
                value(rec, "input_sequence_length"),
                Some(t.prompt_tokens),
                "{kind}"
            );
            let body: Value = serde_json::from_slice(t.request_body.as_deref().unwrap()).unwrap();
            match kind {
                "chat-embeddings" => assert_eq!(body["messages"].as_array().unwrap().len(), 1),
                _ => assert_eq!(body["input"].as_array().unwrap().len(), batch),
            }
        }
        for tag in TOKEN_METRICS {
            assert!(!r.has(tag), "{kind}: {tag} must be dropped");
        }
        zero_output_tokens(&r, kind);
        assert!(!r.has("time_to_first_token"), "{kind} does not stream");
        assert!(
            r.has("request_latency") && r.has("input_sequence_length"),
            "{kind}"
        );
    }
}

#[test]
fn rankings_family_send_query_and_passages() {
    for (kind, path, list) in [
        ("nim-rankings", "/v1/ranking", "passages"),
        ("cohere-rankings", "/v2/rerank", "documents"),
        ("hf-tei-rankings", "/rerank", "texts"),
    ] {
        let r = run(
            kind,
            "--rankings-passages-mean 3 --rankings-passages-prompt-token-mean 8 \
             --rankings-query-prompt-token-mean 4",
        );
        for (_, t) in r.entries(path, false) {
            let body: Value = serde_json::from_slice(t.request_body.as_deref().unwrap()).unwrap();
            assert_eq!(body[list].as_array().unwrap().len(), 3, "{kind}");
            assert!(body.get("query").is_some());
            assert_eq!(body.get("model").is_some(), kind != "hf-tei-rankings");
            assert_eq!(t.content_tokens, 0);
        }
        for tag in TOKEN_METRICS {
            assert!(!r.has(tag), "{kind}: {tag} must be dropped");
        }
        // AIPerf 0.13's payload walk finds no text in any rankings body (it needs a string
        // `query` with `passages`), so there is no ISL.
        assert!(!r.has("input_sequence_length"), "{kind}");
        assert!(r.has("request_latency"), "{kind}");
        zero_output_tokens(&r, kind);
    }
}

/// A generating type: OSL is the mock's content tokens, and where the API reports usage the
/// usage metrics are the mock's counts.
fn check_generating(kind: &str, path: &str, streaming: bool, usage: bool) {
    let r = run(kind, if streaming { "--streaming" } else { "" });
    for (rec, t) in r.entries(path, streaming) {
        assert_eq!(t.content_tokens, OUTPUT_TOKENS);
        assert_eq!(
            value(rec, "output_sequence_length"),
            Some(OUTPUT_TOKENS),
            "{kind}"
        );
        assert_eq!(
            value(rec, "input_sequence_length"),
            Some(t.prompt_tokens),
            "{kind}"
        );
        if usage {
            assert_eq!(
                value(rec, "usage_prompt_tokens"),
                Some(t.prompt_tokens),
                "{kind}"
            );
            assert_eq!(
                value(rec, "usage_completion_tokens"),
                Some(OUTPUT_TOKENS),
                "{kind}"
            );
        } else {
            assert_eq!(rec["metrics"].get("usage_prompt_tokens"), None, "{kind}");
        }
    }
    assert!(r.has("output_token_throughput") && r.has("input_sequence_length"));
    assert_eq!(r.has("time_to_first_token"), streaming, "{kind}");
}

#[test]
fn huggingface_generate_whole_and_streamed() {
    check_generating("huggingface-generate", "/generate", false, false);
    check_generating("huggingface-generate", "/generate_stream", true, false);
}

#[test]
fn responses_whole_and_streamed() {
    check_generating("responses", "/v1/responses", false, true);
    check_generating("responses", "/v1/responses", true, true);
}

#[test]
fn messages_whole_and_streamed() {
    check_generating("messages", "/v1/messages", false, true);
    check_generating("messages", "/v1/messages", true, true);
}

#[test]
fn messages_sends_the_key_the_anthropic_way() {
    let cfg =
        config("ringperf profile -m m -u 127.0.0.1:1 --endpoint-type messages --api-key sk-1");
    let names: Vec<(&str, &str)> = cfg
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![("x-api-key", "sk-1"), ("anthropic-version", "2023-06-01")]
    );
    let cfg = config(
        "ringperf profile -m m -u 127.0.0.1:1 --endpoint-type messages -H anthropic-version:2024",
    );
    assert_eq!(
        cfg.headers,
        vec![("anthropic-version".into(), "2024".into())]
    );
    let cfg = config("ringperf profile -m m -u 127.0.0.1:1 --endpoint-type embeddings --api-key k");
    assert_eq!(
        cfg.headers,
        vec![("Authorization".into(), "Bearer k".into())]
    );
    assert_eq!(cfg.path, "/v1/embeddings");
    assert!(
        !config("ringperf profile -m m -u 127.0.0.1:1 --endpoint-type embeddings --streaming")
            .streaming
    );
}

/// `raw`: every dataset body goes byte for byte to the URL as given (no path appended),
/// streamed when the body asks; the answer is auto-detected (chat `message.content`, or each
/// chunk's `delta.content` and the `[DONE]` text, as AIPerf 0.13 reads them), no usage is read,
/// and ISL is the body's texts.
/// `raw` with `--extra-inputs response_field:model`: every answer is read at that path (the
/// served model's name, not the reply text), and a path that finds nothing falls back to
/// auto-detection (the reply, as the mock's truth log has it).
#[test]
fn raw_reads_answers_at_the_response_field() {
    let server = recording_mock(OUTPUT_TOKENS);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (0..REQUESTS)
        .map(|i| {
            format!(
                r#"{{"messages":[{{"role":"user","content":"field prompt {i}"}}],"model":"mock-model","stream":false,"max_tokens":{OUTPUT_TOKENS}}}"#
            )
        })
        .collect();
    let file = dir.path().join("bodies.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let tokenizer = ringperf_workload::workload::Tokenizer::builtin();
    for (field, expect_model) in [("model", true), ("no_such.field", false)] {
        let out_dir = dir.path().join(field);
        let cfg = config(&format!(
            "ringperf profile -m mock-model -u http://{}/v1/chat/completions --endpoint-type raw \
             --input-file {} --custom-dataset-type raw_payload --concurrency 2 --request-count \
             {REQUESTS} --extra-inputs response_field:{field} --ui none --no-server-metrics \
             --artifact-dir {}",
            server.addr,
            file.display(),
            out_dir.display()
        ));
        let out = ringperf::run::run(cfg).unwrap();
        assert_eq!((out.successes, out.errors), (REQUESTS as u64, 0), "{field}");
        let truth: HashMap<String, TruthEntry> = server
            .truth()
            .entries()
            .into_iter()
            .map(|e| (e.request_id.unwrap().to_string(), e))
            .collect();
        for rec in read_jsonl(&out_dir.join("profile_export.jsonl")) {
            let t = &truth[rec["metadata"]["x_request_id"].as_str().unwrap()];
            let answer = if expect_model {
                "mock-model".to_string()
            } else {
                t.reply_text.clone().unwrap()
            };
            assert_eq!(
                value(&rec, "output_sequence_length"),
                Some(tokenizer.count(&answer) as u64),
                "{field}"
            );
        }
    }
}

#[test]
fn raw_sends_the_dataset_bodies_verbatim() {
    let server = recording_mock(OUTPUT_TOKENS);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (0..REQUESTS)
        .map(|i| {
            format!(
                r#"{{"messages":[{{"role":"user","content":"raw prompt number {i} with words"}}],"model":"mock-model","stream":{},"max_tokens":{OUTPUT_TOKENS}}}"#,
                i % 2 == 1
            )
        })
        .collect();
    let file = dir.path().join("bodies.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u http://{}/v1/chat/completions --endpoint-type raw \
         --input-file {} --custom-dataset-type raw_payload --concurrency 2 --request-count \
         {REQUESTS} --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        file.display(),
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!((out.successes, out.errors), (REQUESTS as u64, 0));
    let tokenizer = ringperf_workload::workload::Tokenizer::builtin();
    let truth: HashMap<String, TruthEntry> = server
        .truth()
        .entries()
        .into_iter()
        .map(|e| (e.request_id.unwrap().to_string(), e))
        .collect();
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), REQUESTS);
    let mut sent: Vec<String> = Vec::new();
    for rec in &records {
        let t = &truth[rec["metadata"]["x_request_id"].as_str().unwrap()];
        assert_eq!(t.path, "/v1/chat/completions");
        let body = std::str::from_utf8(t.request_body.as_deref().unwrap()).unwrap();
        let line = lines
            .iter()
            .position(|l| l == body)
            .expect("a dataset body, verbatim");
        assert_eq!(t.stream, line % 2 == 1, "the body's own `stream`");
        sent.push(body.to_string());
        let reply = t.reply_text.clone().unwrap();
        let output = if t.stream {
            format!("{reply}[DONE]")
        } else {
            reply
        };
        assert_eq!(
            value(rec, "output_sequence_length"),
            Some(tokenizer.count(&output) as u64)
        );
        assert_eq!(value(rec, "input_sequence_length"), Some(t.prompt_tokens));
        assert_eq!(rec["metrics"].get("usage_prompt_tokens"), None);
    }
    sent.sort();
    let mut want = lines.clone();
    want.sort();
    assert_eq!(sent, want, "each body once");
}

/// `template`: a chat-shaped template from a file goes to the URL as given, rendered per turn
/// with the extras merged (`inputs.json` holds what was rendered, the mock's log what arrived);
/// answers are read at `response_field` when given, else auto-detected (streamed: each
/// `delta.content` and the `[DONE]` text, as AIPerf 0.13 reads them); ISL is the rendered text.
#[test]
fn template_renders_each_turn_into_the_body_sent() {
    for streaming in [false, true] {
        let server = recording_mock(OUTPUT_TOKENS);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("chat.jinja");
        std::fs::write(
            &file,
            r#"{"messages": [{"role": "user", "content": {{ text|tojson }}}], "model": "{{ model }}", "stream": {{ stream|tojson }}}"#,
        )
        .unwrap();
        let (flag, field) = if streaming {
            ("--streaming", String::new())
        } else {
            (
                "",
                "--extra-inputs response_field:choices[0].message.content".to_string(),
            )
        };
        let cfg = config(&format!(
            "ringperf profile -m mock-model -u http://{}/v1/chat/completions --endpoint-type \
             template --extra-inputs payload_template:{} --extra-inputs ignore_eos:true {field} \
             {flag} --concurrency 2 --request-count {REQUESTS} --isl 12 --random-seed 7 --ui none \
             --no-server-metrics --artifact-dir {}",
            server.addr,
            file.display(),
            dir.path().display()
        ));
        let out = ringperf::run::run(cfg).unwrap();
        assert_eq!((out.successes, out.errors), (REQUESTS as u64, 0));
        let inputs = read_json(&dir.path().join("inputs.json"));
        let rendered: Vec<String> = inputs["data"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["payloads"].as_array().unwrap().iter())
            .map(|p| serde_json::to_string(p).unwrap())
            .collect();
        let tokenizer = ringperf_workload::workload::Tokenizer::builtin();
        let truth: HashMap<String, TruthEntry> = server
            .truth()
            .entries()
            .into_iter()
            .map(|e| (e.request_id.unwrap().to_string(), e))
            .collect();
        assert_eq!(truth.len(), REQUESTS);
        let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
        assert_eq!(records.len(), REQUESTS);
        for rec in &records {
            let t = &truth[rec["metadata"]["x_request_id"].as_str().unwrap()];
            assert_eq!((t.path, t.stream), ("/v1/chat/completions", streaming));
            let body = std::str::from_utf8(t.request_body.as_deref().unwrap()).unwrap();
            assert!(
                rendered.iter().any(|r| r == body),
                "a rendered body: {body}"
            );
            let sent: Value = serde_json::from_str(body).unwrap();
            let prompt = sent["messages"][0]["content"].as_str().unwrap();
            assert!(!prompt.is_empty());
            assert_eq!(
                body,
                format!(
                    r#"{{"messages":[{{"role":"user","content":{}}}],"model":"mock-model","stream":{streaming},"ignore_eos":true}}"#,
                    serde_json::to_string(prompt).unwrap()
                )
            );
            let reply = t.reply_text.clone().unwrap();
            let output = if streaming {
                format!("{reply}[DONE]")
            } else {
                reply
            };
            assert_eq!(
                value(rec, "output_sequence_length"),
                Some(tokenizer.count(&output) as u64)
            );
            assert_eq!(value(rec, "input_sequence_length"), Some(t.prompt_tokens));
        }
    }
}

/// `template` with a `response_field` that matches nothing: every answer is a no-content
/// error (AIPerf does not fall back to auto-detection), and the mock still saw every request.
#[test]
fn template_response_field_that_matches_nothing_is_no_content() {
    let server = recording_mock(OUTPUT_TOKENS);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u http://{}/v1/embeddings --endpoint-type template \
         --extra-inputs payload_template:nv-embedqa --extra-inputs response_field:data[0].nope \
         --extra-inputs input:[\"x\"] --request-count {REQUESTS} --ui none --no-server-metrics \
         --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!((out.successes, out.errors), (0, REQUESTS as u64));
    let truth = server.truth().entries();
    assert_eq!(truth.len(), REQUESTS);
    for t in &truth {
        let body: Value = serde_json::from_slice(t.request_body.as_deref().unwrap()).unwrap();
        let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["text", "input"],
            "nv-embedqa's `text`, then the extra"
        );
        assert!(body["text"][0].as_str().is_some_and(|s| !s.is_empty()));
    }
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), REQUESTS);
    for rec in &records {
        assert_eq!(rec["error"]["type"], "InvalidInferenceResultError", "{rec}");
    }
}

/// The body the mock received for `t`, as JSON.
fn body_of(t: &TruthEntry) -> Value {
    serde_json::from_slice(t.request_body.as_deref().expect("bodies recorded")).unwrap()
}

#[test]
fn solido_rag_sends_query_filters_and_model() {
    // AIPerf's body has no `stream` field; a server that streams is asked with an extra input.
    for (extra, streamed) in [
        ("", false),
        ("--streaming --extra-inputs stream:true", true),
    ] {
        let r = run("solido-rag", extra);
        for (rec, t) in r.entries("/rag/api/prompt", streamed) {
            let body = body_of(t);
            let query = body["query"].as_array().expect("query is a list");
            assert_eq!(query.len(), 1);
            assert!(query[0].as_str().is_some_and(|q| !q.is_empty()));
            assert_eq!(
                body["filters"],
                serde_json::json!({"family": "Solido", "tool": "SDE"})
            );
            assert_eq!(body["inference_model"], "mock-model");
            assert_eq!(body.get("model"), None);
            assert_eq!(body.get("max_tokens"), None);
            // The client read back every token the mock wrote as `content`.
            assert_eq!(t.content_tokens, OUTPUT_TOKENS);
            assert_eq!(value(rec, "output_sequence_length"), Some(OUTPUT_TOKENS));
        }
        assert!(r.has("output_token_throughput"));
        // AIPerf's payload walk takes no text from a list `query`: no ISL, as there.
        assert!(!r.has("input_sequence_length"));
        assert_eq!(r.has("time_to_first_token"), streamed);
        assert_eq!(r.has("inter_token_latency"), streamed);
    }
}

#[test]
fn image_generation_sends_the_prompt_and_reads_the_images() {
    for (extra, streamed, n) in [
        ("", false, 1),
        ("--extra-inputs n:3", false, 3),
        ("--streaming --extra-inputs n:2", true, 2),
    ] {
        let r = run("image-generation", extra);
        for (rec, t) in r.entries("/v1/images/generations", streamed) {
            let body = body_of(t);
            assert!(body["prompt"].as_str().is_some_and(|p| !p.is_empty()));
            assert_eq!(body["model"], "mock-model");
            assert_eq!(body["response_format"], "b64_json");
            assert_eq!(body["n"], n);
            assert_eq!(body.get("stream").is_some(), streamed);
            assert_eq!(body.get("max_tokens"), None);
            // The mock answered as many images as were asked for.
            assert_eq!(t.items, n);
            // The client tokenized the prompt the mock counted.
            assert_eq!(
                value(rec, "input_sequence_length"),
                Some(t.prompt_tokens),
                "{extra}"
            );
        }
        for tag in TOKEN_METRICS {
            assert!(!r.has(tag), "{tag} must be dropped");
        }
        zero_output_tokens(&r, "image-generation");
        assert!(r.has("request_latency"));
    }
}

#[test]
fn image_retrieval_sends_the_turns_images_only() {
    let r = run(
        "image-retrieval",
        "--image-width-mean 40 --image-height-mean 24 --image-batch-size 3 --image-format png",
    );
    for (_, t) in r.entries("/v1/infer", false) {
        let body = body_of(t);
        // AIPerf's body: the images and nothing else (no model, no text).
        assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
        let input = body["input"].as_array().unwrap();
        assert_eq!(input.len(), 3);
        // The mock answered one item per image it received.
        assert_eq!(t.items, 3);
        for item in input {
            assert_eq!(item["type"], "image_url");
            let uri = item["url"].as_str().unwrap();
            let b64 = uri
                .strip_prefix("data:image/png;base64,")
                .expect("a PNG data URI");
            let png = ringperf_workload::workload::media::base64_decode(b64.as_bytes()).unwrap();
            // Decoded from what was sent: the size asked for (no stddev).
            assert_eq!(
                ringperf_workload::workload::media::probe::probe(&png),
                Some(ringperf_workload::workload::media::probe::Probed::Image {
                    format: "png",
                    width: 40,
                    height: 24
                })
            );
        }
    }
    // Neither tokenized input nor tokens: no ISL and no OSL, as AIPerf 0.13.
    assert!(!r.has("input_sequence_length"));
    assert!(!r.has("output_sequence_length"));
    assert!(r.has("request_latency"));
}

#[test]
fn image_retrieval_without_images_is_refused() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-m",
            "m",
            "-u",
            "127.0.0.1:1",
            "--endpoint-type",
            "image-retrieval",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--image-width-mean"), "{err}");
}
