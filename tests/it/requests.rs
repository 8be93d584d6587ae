//! Per-request endpoint shaping checked on the wire: the model each request names
//! (`--model-selection-strategy`), read from the bodies the mock received.

use serde_json::Value;

use crate::common::{self, config};

const MODELS: [&str; 3] = ["alpha", "beta", "gamma"];

fn body(t: &ringperf_mock::mock::TruthEntry) -> Value {
    serde_json::from_slice(t.request_body.as_deref().expect("bodies recorded")).expect("JSON body")
}

/// The text of the last user message of a chat body: the turn it sends.
fn last_user_text(b: &Value) -> String {
    let messages = b["messages"].as_array().expect("chat body");
    let last = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .expect("a user message");
    last["content"].as_str().expect("text content").to_string()
}

/// Round robin over a multi-turn file: the n-th turn of the file, counted across conversations
/// in file order, names model n mod 3, whether it was built before the run (first turns) or
/// when due with the history (later turns).
#[test]
fn round_robin_gives_the_nth_turn_of_the_dataset_model_n_mod_len() {
    let server = common::recording_mock(1);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("chats.jsonl");
    // Conversations of 2, 3 and 2 turns; turn j of conversation i says "c{i} t{j}". The run
    // stops after three sessions, not after 7 requests: with two slots, a slot that ends c0 and
    // c2 before c1 ends would start c0 again under a request count.
    let lens = [2usize, 3, 2];
    let mut text = String::new();
    for (i, &n) in lens.iter().enumerate() {
        let turns: Vec<Value> = (0..n)
            .map(|j| serde_json::json!({"text": format!("c{i} t{j}")}))
            .collect();
        text += &serde_json::json!({"session_id": format!("s{i}"), "turns": turns}).to_string();
        text.push('\n');
    }
    std::fs::write(&file, text).unwrap();
    let total: usize = lens.iter().sum();
    let out_dir = tmp.path().join("out");
    let cfg = config(&format!(
        "ringperf profile -m alpha,beta,gamma -u {} --input-file {} --custom-dataset-type \
         multi_turn --dataset-sampling-strategy sequential --conversation-num 3 \
         --concurrency 2 --random-seed 3 --ui none --no-server-metrics --tokenizer builtin \
         --artifact-dir {}",
        server.addr,
        file.display(),
        out_dir.display()
    ));
    let out = ringperf::run::run(cfg).expect("run completes");
    assert_eq!((out.successes, out.errors), (total as u64, 0));
    // Hand-computed: flat index of "c{i} t{j}" is the turns of the conversations before it
    // plus j.
    let mut expected = std::collections::HashMap::new();
    let mut n = 0;
    for (i, &len) in lens.iter().enumerate() {
        for j in 0..len {
            expected.insert(format!("c{i} t{j}"), MODELS[n % 3]);
            n += 1;
        }
    }
    let truth = server.truth().entries();
    assert_eq!(truth.len(), total);
    let mut seen = std::collections::HashSet::new();
    for t in &truth {
        let b = body(t);
        let turn = last_user_text(&b);
        assert_eq!(b["model"], expected[&turn], "{turn}: {b}");
        seen.insert(turn);
    }
    assert_eq!(seen.len(), total, "every turn sent once");
}

/// A streamed trace replay (fixed schedule) draws the models row by row in file order: row k
/// (told apart on the wire by its `output_length` k + 1) names model k mod 3.
#[test]
fn a_streamed_trace_names_model_k_mod_len_on_row_k() {
    let server = common::recording_mock(1);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("trace.jsonl");
    let rows = 7u64;
    let mut trace = String::new();
    for k in 0..rows {
        trace += &serde_json::json!({"timestamp": k, "input_length": 20,
                                     "output_length": k + 1, "hash_ids": [k]})
        .to_string();
        trace.push('\n');
    }
    std::fs::write(&file, trace).unwrap();
    let out_dir = tmp.path().join("out");
    let cfg = config(&format!(
        "ringperf profile -m alpha,beta,gamma -u {} --input-file {} --custom-dataset-type \
         mooncake_trace --fixed-schedule --isl-block-size 20 --ui none --no-server-metrics \
         --tokenizer builtin --artifact-dir {}",
        server.addr,
        file.display(),
        out_dir.display()
    ));
    let out = ringperf::run::run(cfg).expect("run completes");
    assert_eq!((out.successes, out.errors), (rows, 0));
    let truth = server.truth().entries();
    assert_eq!(truth.len(), rows as usize);
    for t in &truth {
        let b = body(t);
        let k = b["max_completion_tokens"]
            .as_u64()
            .expect("output_length sent")
            - 1;
        assert_eq!(b["model"], MODELS[(k % 3) as usize], "row {k}: {b}");
    }
}

/// `random` draws every turn's model from the list (both models over 24 turns: a seeded draw,
/// so the same on every run), and the same seed gives the same models to the same turns.
#[test]
fn random_draws_from_the_list_reproducibly_per_seed() {
    let run = || {
        let server = common::recording_mock(1);
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config(&format!(
            "ringperf profile -m alpha,beta --model-selection-strategy random -u {} \
             --request-count 24 --num-dataset-entries 24 --dataset-sampling-strategy sequential \
             --isl 8 --isl-stddev 0 --osl 1 --concurrency 2 --random-seed 11 --ui none \
             --no-server-metrics --tokenizer builtin --artifact-dir {}",
            server.addr,
            tmp.path().display()
        ));
        ringperf::run::run(cfg).expect("run completes");
        let mut by_prompt: Vec<(String, String)> = server
            .truth()
            .entries()
            .iter()
            .map(|t| {
                let b = body(t);
                (last_user_text(&b), b["model"].as_str().unwrap().to_string())
            })
            .collect();
        by_prompt.sort();
        by_prompt
    };
    let first = run();
    assert_eq!(first.len(), 24);
    for model in ["alpha", "beta"] {
        assert!(first.iter().any(|(_, m)| m == model), "{model} drawn");
    }
    assert!(first.iter().all(|(_, m)| m == "alpha" || m == "beta"));
    assert_eq!(first, run(), "same seed, same models");
}

/// `weighted` is refused, as AIPerf refuses it without per-model weights (no flag gives one).
#[test]
fn weighted_is_refused_with_the_reason() {
    let err =
        crate::common::config_error("ringperf profile -m a,b --model-selection-strategy weighted");
    assert_eq!(err.kind(), ringperf::config::ErrorKind::Flag);
    assert!(
        err.message()
            .contains("all models must have weights specified"),
        "{err}"
    );
}

/// Runs a file of three two-turn conversations ("c{i} t{j}") with `extra` flags against a mock
/// that keeps the value of `header` as each request's correlation id; returns (turn text,
/// correlation id) per request.
fn sessions_seen(header: Option<&str>, extra: &str) -> Vec<(String, Option<String>)> {
    let server = ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        output_tokens: ringperf_mock::mock::OutputLen::Fixed(1),
        truth_log: true,
        record_bodies: true,
        session_header: header.map(str::to_string),
        ..ringperf_mock::mock::MockConfig::default()
    })
    .expect("mock starts");
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("chats.jsonl");
    let mut text = String::new();
    for i in 0..3 {
        let turns: Vec<Value> = (0..2)
            .map(|j| serde_json::json!({"text": format!("c{i} t{j}")}))
            .collect();
        text += &serde_json::json!({"session_id": format!("s{i}"), "turns": turns}).to_string();
        text.push('\n');
    }
    std::fs::write(&file, text).unwrap();
    let cfg = config(&format!(
        "ringperf profile -m m -u {} --input-file {} --custom-dataset-type multi_turn \
         --dataset-sampling-strategy sequential --request-count 6 --concurrency 1 \
         --ui none --no-server-metrics --tokenizer builtin --artifact-dir {} {extra}",
        server.addr,
        file.display(),
        tmp.path().join("out").display()
    ));
    let out = ringperf::run::run(cfg).expect("run completes");
    assert_eq!((out.successes, out.errors), (6, 0));
    server
        .truth()
        .entries()
        .iter()
        .map(|t| (last_user_text(&body(t)), t.correlation_id.clone()))
        .collect()
}

/// `--session-header X-Session-ID` moves each session's id to that header: the mock finds it
/// there, the same on both turns of a conversation and different between conversations, and
/// finds no `X-Correlation-ID` at all; without the flag the id is in `X-Correlation-ID` and not
/// in `X-Session-ID`.
#[test]
fn session_header_carries_the_session_id_in_place_of_x_correlation_id() {
    let per_conversation = |seen: &[(String, Option<String>)]| {
        let mut ids = std::collections::BTreeMap::new();
        for (turn, id) in seen {
            let id = id
                .clone()
                .unwrap_or_else(|| panic!("{turn}: no session id"));
            let conversation = turn.split(' ').next().unwrap().to_string();
            let first = ids.entry(conversation).or_insert_with(|| id.clone());
            assert_eq!(*first, id, "{turn}: one id per conversation: {seen:?}");
        }
        let distinct: std::collections::BTreeSet<_> = ids.values().collect();
        assert_eq!(
            distinct.len(),
            3,
            "a different id per conversation: {ids:?}"
        );
    };
    let flag = "--session-header X-Session-ID";
    let seen = sessions_seen(Some("x-session-id"), flag);
    assert_eq!(seen.len(), 6);
    per_conversation(&seen);
    let seen = sessions_seen(None, flag);
    assert!(
        seen.iter().all(|(_, id)| id.is_none()),
        "no X-Correlation-ID: {seen:?}"
    );
    // The default, for contrast: X-Correlation-ID carries it, X-Session-ID does not exist.
    per_conversation(&sessions_seen(None, ""));
    let seen = sessions_seen(Some("X-Session-ID"), "");
    assert!(seen.iter().all(|(_, id)| id.is_none()), "{seen:?}");
}
