//! Multi-turn sessions end to end against the in-process mock, checked against what the mock
//! itself recorded: every body it received, the reply text it sent, the correlation id of
//! each request.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use clap::Parser;
use ringperf::cli::{Cli, Command};
use ringperf::config::Config;
use ringperf::mock::{MockConfig, OutputLen, PromptTokenizer, TruthEntry};
use serde_json::{Value, json};

fn config(line: &str) -> Config {
    let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    let Command::Profile(p) = Cli::try_parse_from(&argv).expect("flags parse").command else {
        panic!("not a profile command")
    };
    Config::from_args(&p, &argv, false).expect("valid config")
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("jsonl exists")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

fn recording_mock() -> ringperf::mock::MockServer {
    ringperf::mock::start(MockConfig {
        output_tokens: OutputLen::Fixed(6),
        truth_log: true,
        record_bodies: true,
        prompt_tokenizer: Some(PromptTokenizer(Arc::new(
            ringperf::workload::Tokenizer::builtin(),
        ))),
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// The mock's records grouped by correlation id, each group in arrival order.
fn sessions(truth: Vec<TruthEntry>) -> Vec<Vec<TruthEntry>> {
    let mut by_session: HashMap<String, Vec<TruthEntry>> = HashMap::new();
    for e in truth {
        let id = e
            .correlation_id
            .clone()
            .expect("every request has a correlation id");
        by_session.entry(id).or_default().push(e);
    }
    let mut groups: Vec<Vec<TruthEntry>> = by_session.into_values().collect();
    for g in &mut groups {
        g.sort_by_key(|e| e.arrival_ns);
    }
    groups
}

fn body(e: &TruthEntry) -> Value {
    serde_json::from_slice(e.request_body.as_deref().expect("bodies recorded")).expect("JSON")
}

/// Turn n carries turns 1..n-1 — each user message and the reply the mock really sent — then
/// its own message; one correlation id per session, distinct across sessions; the records say
/// which conversation and turn they are, and their ISL is that of the body really sent.
fn check_history(streaming: bool) {
    let server = recording_mock();
    let dir = tempfile::tempdir().unwrap();
    let stream = if streaming { "--streaming" } else { "" };
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} {stream} --concurrency 2 --conversation-num 4 \
         --conversation-turn-mean 3 --isl 12 --osl 6 --random-seed 5 --ui none \
         --no-server-metrics --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!((out.successes, out.errors), (12, 0));

    let groups = sessions(server.truth().entries());
    assert_eq!(groups.len(), 4, "four sessions, four correlation ids");
    for g in &groups {
        assert_eq!(g.len(), 3, "three turns per session");
        let mut expected: Vec<Value> = Vec::new();
        for (n, e) in g.iter().enumerate() {
            let b = body(e);
            let messages = b["messages"].as_array().expect("messages").clone();
            // Everything before this turn's own message is the history so far.
            assert_eq!(messages.len(), 2 * n + 1, "turn {n}: {messages:?}");
            assert_eq!(&messages[..2 * n], expected.as_slice(), "turn {n}");
            let own = messages[2 * n].clone();
            assert_eq!(own["role"], "user");
            expected.push(own);
            let reply = e.reply_text.clone().expect("reply recorded");
            assert!(!reply.is_empty());
            expected.push(json!({"role": "assistant", "content": reply}));
        }
    }

    // The records: conversation and turn, one correlation id per conversation, ISL of the body
    // sent (the mock counted the same body with the same tokenizer).
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 12);
    let truth_by_id: HashMap<String, TruthEntry> = server
        .truth()
        .entries()
        .into_iter()
        .map(|e| (e.request_id.unwrap().to_string(), e))
        .collect();
    let mut per_conversation: HashMap<String, (String, Vec<u64>)> = HashMap::new();
    for r in &records {
        let md = &r["metadata"];
        let conversation = md["conversation_id"].as_str().unwrap().to_string();
        let correlation = md["x_correlation_id"].as_str().unwrap().to_string();
        let turn = md["turn_index"].as_u64().unwrap();
        let t = &truth_by_id[md["x_request_id"].as_str().unwrap()];
        assert_eq!(t.correlation_id.as_deref(), Some(correlation.as_str()));
        let isl = r["metrics"]["input_sequence_length"]["value"]
            .as_u64()
            .unwrap();
        assert_eq!(isl, t.prompt_tokens, "ISL of turn {turn} is the body sent");
        let entry = per_conversation
            .entry(conversation)
            .or_insert_with(|| (correlation.clone(), Vec::new()));
        assert_eq!(entry.0, correlation, "one correlation id per conversation");
        entry.1.push(turn);
    }
    assert_eq!(per_conversation.len(), 4);
    for (_, (_, mut turns)) in per_conversation {
        turns.sort_unstable();
        assert_eq!(turns, [0, 1, 2]);
    }
}

#[test]
fn later_turns_carry_the_real_replies_streaming() {
    check_history(true);
}

#[test]
fn later_turns_carry_the_real_replies_non_streaming() {
    check_history(false);
}
