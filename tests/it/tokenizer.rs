//! The Tokenizer group (docs/tokenizer.md): `--tokenizer-revision` in a hand-built Hugging Face
//! cache (`HF_HUB_CACHE` set for the child only) and `--apply-chat-template`, whose ISL is checked
//! against the token ids transformers' `apply_chat_template` gave for the same tokenizer and
//! conversation (tests/data/chat_template/expected.json).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use ringperf_mock::mock::{MockConfig, MockServer, OutputLen};
use serde_json::{Value, json};

use crate::common::{read_json, read_jsonl};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/chat_template");
const PROMPT: &str = "Hello, how are you today?";
const MAIN: &str = "1111111111111111111111111111111111111111";
const V1: &str = "2222222222222222222222222222222222222222";

fn mock() -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(1),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(2),
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// A hub cache holding `acme/chat`: `main` is the `named` test tokenizer, tag `v1` the `chatml`
/// one (their chat templates differ, so which one was read shows in the ISL).
fn hub_cache(root: &Path) -> PathBuf {
    let model = root.join("hub/models--acme--chat");
    std::fs::create_dir_all(model.join("refs")).unwrap();
    for (commit, from) in [(MAIN, "named"), (V1, "chatml")] {
        let snap = model.join("snapshots").join(commit);
        std::fs::create_dir_all(&snap).unwrap();
        for f in ["tokenizer.json", "tokenizer_config.json"] {
            std::fs::copy(Path::new(DATA).join(from).join(f), snap.join(f)).unwrap();
        }
    }
    std::fs::write(model.join("refs/main"), MAIN).unwrap();
    std::fs::write(model.join("refs/v1"), format!("{V1}\n")).unwrap();
    root.join("hub")
}

/// transformers' token count for `[{"role": "user", "content": PROMPT}]` with the generation
/// prompt, through the test tokenizer `dir`.
fn transformers_isl(dir: &str) -> u64 {
    let expected = read_json(&Path::new(DATA).join("expected.json"));
    let row = expected[dir]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["case"] == "one user turn" && r["add_generation_prompt"] == true)
        .unwrap();
    row["ids"].as_array().unwrap().len() as u64
}

/// `ringperf profile` over three single-turn requests of [`PROMPT`], tokenizer `acme/chat` from
/// `cache`, then `extra`.
fn run(server: &MockServer, cache: &Path, out: &Path, extra: &[&str]) -> Output {
    let input = out.with_extension("jsonl");
    std::fs::write(&input, format!("{}\n", json!({ "text": PROMPT })).repeat(3)).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .env("HF_HUB_CACHE", cache)
        // The cache is all there is: a revision it lacks is not fetched from the Hub
        // (tests/it/hub.rs fetches from a local one).
        .env("HF_HUB_OFFLINE", "1")
        .args(["profile", "-m", "acme/chat", "--tokenizer", "acme/chat"])
        .args([
            "--endpoint-type",
            "chat",
            "--ui-type",
            "none",
            "--workers-max",
            "1",
        ])
        .args([
            "--no-server-metrics",
            "--no-gpu-telemetry",
            "--request-count",
            "3",
        ])
        .args(["--custom-dataset-type", "single_turn", "--input-file"])
        .arg(&input)
        .arg("--url")
        .arg(format!("http://{}", server.addr))
        .arg("--artifact-dir")
        .arg(out)
        .args(extra)
        .output()
        .expect("the binary runs")
}

fn isls(dir: &Path) -> Vec<u64> {
    read_jsonl(&dir.join("profile_export.jsonl"))
        .iter()
        .map(|r| {
            r["metrics"]["input_sequence_length"]["value"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn chat_template_isl_at_a_cached_revision_is_transformers_count() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let cache = hub_cache(tmp.path());

    // Tag v1 (refs/v1): the ChatML template, ISL as transformers counts it.
    let a = tmp.path().join("v1");
    let flags = ["--tokenizer-revision", "v1", "--apply-chat-template"];
    ok(&run(&server, &cache, &a, &flags));
    assert_eq!(isls(&a), vec![transformers_isl("chatml"); 3]);
    let echo = &read_json(&a.join("profile_export_aiperf.json"))["input_config"]["tokenizer"];
    assert_eq!(
        echo,
        &json!({"name": "acme/chat", "revision": "v1", "apply_chat_template": true})
    );

    // No revision: refs/main, the other template.
    let b = tmp.path().join("main");
    ok(&run(&server, &cache, &b, &["--apply-chat-template"]));
    assert_eq!(isls(&b), vec![transformers_isl("named"); 3]);
    assert_ne!(transformers_isl("named"), transformers_isl("chatml"));

    // A commit hash names its snapshot directly; without the flag the prompt text is counted
    // bare: "hello , how are you today ?", 7 words of the word-level tokenizer.
    let c = tmp.path().join("commit");
    ok(&run(&server, &cache, &c, &["--tokenizer-revision", V1]));
    assert_eq!(isls(&c), vec![7; 3]);
    let echo: &Value = &read_json(&c.join("profile_export_aiperf.json"))["input_config"];
    assert_eq!(
        echo["tokenizer"],
        json!({"name": "acme/chat", "revision": V1})
    );

    // A revision the cache does not have, offline: a setup error naming what was looked for.
    let d = tmp.path().join("missing");
    let out = run(&server, &cache, &d, &["--tokenizer-revision", "v2"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("(revision \"v2\") is not in the local Hugging Face cache"),
        "{err}"
    );
    assert!(err.contains("offline mode is on"), "{err}");
    assert!(err.contains("models--acme--chat/refs/v2"), "{err}");
    assert!(
        err.contains("models--acme--chat/snapshots/v2/tokenizer.json"),
        "{err}"
    );
}

/// Synthetic single-turn prompts are shortened by the template's overhead, as AIPerf's first
/// turns: the templated ISL counted is `--isl` (the overhead, 15 tokens here, is checked against
/// transformers' count in crates/workload/src/workload/chat_template.rs).
#[test]
fn synthetic_isl_with_a_chat_template_is_the_isl_asked_for() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let tokenizer = Path::new(DATA).join("chatml");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "acme/chat", "--tokenizer"])
        .arg(&tokenizer)
        .args([
            "--apply-chat-template",
            "--endpoint-type",
            "chat",
            "--isl",
            "40",
        ])
        .args(["--osl", "2", "--request-count", "3", "--random-seed", "3"])
        .args([
            "--ui-type",
            "none",
            "--no-server-metrics",
            "--no-gpu-telemetry",
        ])
        .arg("--url")
        .arg(format!("http://{}", server.addr))
        .arg("--artifact-dir")
        .arg(tmp.path())
        .output()
        .expect("the binary runs");
    ok(&out);
    assert_eq!(isls(tmp.path()), vec![40; 3]);
}

/// Runs `profile` with the `chatml` test tokenizer and `--apply-chat-template` against a
/// recording mock, `extra` flags added; returns the run's directory and the mock.
fn templated_run(extra: &[&str]) -> (tempfile::TempDir, MockServer) {
    let server = crate::common::recording_mock(2);
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "acme/chat", "--tokenizer"])
        .arg(Path::new(DATA).join("chatml"))
        .args([
            "--apply-chat-template",
            "--endpoint-type",
            "chat",
            "--osl",
            "2",
        ])
        .args([
            "--random-seed",
            "3",
            "--ui-type",
            "none",
            "--no-server-metrics",
        ])
        .args([
            "--no-gpu-telemetry",
            "--url",
            &format!("http://{}", server.addr),
        ])
        .args(extra)
        .arg("--artifact-dir")
        .arg(tmp.path())
        .output()
        .expect("the binary runs");
    ok(&out);
    (tmp, server)
}

/// `--seq-dist` and multi-turn conversations are compensated as AIPerf compensates them: a
/// first turn's templated ISL is the length drawn (here 40, the only one `--seq-dist` draws, or
/// `--isl`'s), and a later turn's new user text is the length drawn less one message's wrap
/// (its share of the templated count), that wrap being the template's own (measured by
/// `ChatTemplate::overheads`, itself checked against transformers in the unit tests).
#[test]
fn seq_dist_and_later_turns_are_compensated_for_the_template() {
    let (dir, _) = templated_run(&["--seq-dist", "40,2:100", "--request-count", "3"]);
    assert_eq!(isls(dir.path()), vec![40; 3]);

    let (dir, server) = templated_run(&[
        "--isl",
        "40",
        "--conversation-num",
        "2",
        "--conversation-turn-mean",
        "3",
        "--concurrency",
        "1",
    ]);
    let tokenizer = ringperf_workload::workload::tokenizer::load_with(
        Path::new(DATA).join("chatml").to_str().unwrap(),
        &ringperf_workload::workload::tokenizer::LoadOptions {
            apply_chat_template: true,
            ..Default::default()
        },
    )
    .unwrap();
    let (_, wrap) = tokenizer
        .chat_template()
        .unwrap()
        .overheads(|t| tokenizer.count(t));
    assert!(wrap > 0);
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 6);
    for r in &records {
        if r["metadata"]["turn_index"] == 0 {
            assert_eq!(r["metrics"]["input_sequence_length"]["value"], 40, "{r}");
        }
    }
    let mut later = 0;
    for e in server.truth().entries() {
        let body: Value = serde_json::from_slice(e.request_body.as_deref().unwrap()).unwrap();
        let messages = body["messages"].as_array().unwrap();
        if messages.len() > 1 {
            let text = messages.last().unwrap()["content"].as_str().unwrap();
            assert_eq!(tokenizer.count(text) as u32, 40 - wrap, "{text:?}");
            later += 1;
        }
    }
    assert_eq!(later, 4, "two later turns in each of two conversations");
}
