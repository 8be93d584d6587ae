//! Per-request endpoint shaping checked on the wire: the model each request names
//! (`--model-selection-strategy`), read from the bodies the mock received.

use serde_json::Value;

use crate::common::{self, config};

const MODELS: [&str; 3] = ["alpha", "beta", "gamma"];

fn body(t: &ringperf::mock::TruthEntry) -> Value {
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
    // Conversations of 2, 3 and 2 turns; turn j of conversation i says "c{i} t{j}".
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
         multi_turn --dataset-sampling-strategy sequential --request-count {total} \
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
    use clap::Parser;
    let line = "ringperf profile -m a,b --model-selection-strategy weighted";
    let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    let ringperf::cli::Command::Profile(p) = ringperf::cli::Cli::try_parse_from(&argv)
        .expect("flags parse")
        .command
    else {
        panic!("not a profile command")
    };
    let err = ringperf::config::Config::from_args(&p, &argv, false).expect_err("refused");
    assert_eq!(err.kind(), ringperf::config::ErrorKind::Flag);
    assert!(
        err.message()
            .contains("all models must have weights specified"),
        "{err}"
    );
}
