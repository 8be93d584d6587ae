//! Runs of `ringperf profile --input-file ...` against the in-process mock: the prompts of a
//! dataset file are what is sent, and a bad file ends the run before anything is written.
//!
//! The mock records every request body (`MockConfig::record_bodies`), so the checks read what
//! the server received: the prompts (or, replayed, the whole bodies) are exactly the file's.
//! Besides, every record's conversation is one of the file's and its ISL is the file prompt's
//! token count (by tiktoken o200k here), as is the mock's own count of what it received.

use crate::common;
use common::{config, read_json};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command as Process;

use ringperf_mock::mock::MockServer;
use serde_json::Value;

fn mock() -> MockServer {
    common::recording_mock(2)
}

/// The request body the mock received, as JSON.
fn body(t: &ringperf_mock::mock::TruthEntry) -> Value {
    serde_json::from_slice(t.request_body.as_deref().expect("bodies recorded")).expect("JSON body")
}

fn o200k(text: &str) -> u64 {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len() as u64
}

fn records(dir: &Path) -> Vec<Value> {
    common::read_jsonl(&dir.join("profile_export.jsonl"))
}

/// Prompts of one text each, with their session ids, as written below.
const PROMPTS: &[(&str, &str)] = &[
    ("a", "What is deep learning?"),
    ("b", "Name three prime numbers larger than one hundred."),
    (
        "c",
        "Write a haiku about the sea at night, with the moon in it.",
    ),
    ("d", "Why is the sky blue?"),
    (
        "e",
        "Translate 'good morning' into French, German and Italian.",
    ),
];

fn write_single_turn(dir: &Path) -> PathBuf {
    let path = dir.join("prompts.jsonl");
    let body: String = PROMPTS
        .iter()
        .map(|(id, text)| {
            serde_json::json!({"session_id": id, "text": text, "output_length": 2}).to_string()
                + "\n"
        })
        .collect();
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn single_turn_file_sends_exactly_its_prompts() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let file = write_single_turn(tmp.path());
    let out_dir = tmp.path().join("out");
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --input-file {} --custom-dataset-type single-turn \
         --request-count 5 --concurrency 1 --random-seed 9 --ui none --no-server-metrics \
         --artifact-dir {}",
        server.addr,
        file.display(),
        out_dir.display()
    ));
    let out = ringperf::run::run(cfg).expect("run completes");
    assert_eq!((out.successes, out.errors), (5, 0));

    let expected: BTreeMap<&str, &str> = PROMPTS.iter().copied().collect();
    // inputs.json holds the file's prompts, one conversation per session id.
    let inputs = read_json(&out_dir.join("inputs.json"));
    let sent: BTreeMap<String, String> = inputs["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|e| {
            let msg = &e["payloads"][0]["messages"][0];
            assert_eq!(msg["role"], "user");
            assert_eq!(e["payloads"][0]["max_completion_tokens"], 2);
            (
                e["session_id"].as_str().unwrap().to_string(),
                msg["content"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let sent: BTreeMap<&str, &str> = sent.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(sent, expected);

    // Every request: one of the file's conversations (one pass: each exactly once), its ISL the
    // file prompt's token count, and the mock counted the same tokens in what it received.
    let recs = records(&out_dir);
    assert_eq!(recs.len(), 5);
    let mut seen = BTreeSet::new();
    for rec in &recs {
        let cid = rec["metadata"]["conversation_id"]
            .as_str()
            .expect("conversation id");
        let prompt = expected
            .get(cid)
            .unwrap_or_else(|| panic!("{cid} is not in the file"));
        let tokens = o200k(prompt);
        assert_eq!(
            rec["metrics"]["input_sequence_length"]["value"].as_u64(),
            Some(tokens)
        );
        assert_eq!(
            rec["metrics"]["usage_prompt_tokens"]["value"].as_u64(),
            Some(tokens)
        );
        seen.insert(cid.to_string());
    }
    assert_eq!(seen.len(), 5, "each conversation once: {seen:?}");
    // single_turn samples sequentially by default: at concurrency 1, file order.
    let mut by_start: Vec<(u64, &str)> = recs
        .iter()
        .map(|r| {
            (
                r["metadata"]["request_start_ns"].as_u64().unwrap(),
                r["metadata"]["conversation_id"].as_str().unwrap(),
            )
        })
        .collect();
    by_start.sort_unstable();
    let order: Vec<&str> = by_start.iter().map(|&(_, id)| id).collect();
    assert_eq!(order, ["a", "b", "c", "d", "e"]);

    let truth = server.truth().entries();
    assert_eq!(truth.len(), 5, "the mock answered exactly five requests");
    let mut received: Vec<u64> = truth.iter().map(|t| t.prompt_tokens).collect();
    let mut in_file: Vec<u64> = PROMPTS.iter().map(|(_, p)| o200k(p)).collect();
    received.sort_unstable();
    in_file.sort_unstable();
    assert_eq!(received, in_file);
    let bodies: BTreeSet<String> = truth
        .iter()
        .map(|t| {
            body(t)["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let want: BTreeSet<String> = PROMPTS.iter().map(|(_, p)| p.to_string()).collect();
    assert_eq!(
        bodies, want,
        "the server received exactly the file's prompts"
    );
}

#[test]
fn inputs_json_is_replayed_verbatim() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("inputs.json");
    let data: Vec<Value> = PROMPTS
        .iter()
        .map(|(id, text)| {
            serde_json::json!({"session_id": id, "payloads": [{
                "model": "mock-model",
                "messages": [{"role": "user", "content": text}],
                "max_tokens": 2
            }]})
        })
        .collect();
    std::fs::write(&file, serde_json::json!({ "data": data }).to_string()).unwrap();
    let out_dir = tmp.path().join("out");
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --input-file {} --request-count 5 --random-seed 2 \
         --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        file.display(),
        out_dir.display()
    ));
    let out = ringperf::run::run(cfg).expect("run completes, type detected from the file");
    assert_eq!((out.successes, out.errors), (5, 0));
    let mut received: Vec<String> = server
        .truth()
        .entries()
        .iter()
        .map(|t| body(t).to_string())
        .collect();
    let mut in_file: Vec<String> = data.iter().map(|d| d["payloads"][0].to_string()).collect();
    received.sort_unstable();
    in_file.sort_unstable();
    assert_eq!(
        received, in_file,
        "each payload sent as it is, nothing added"
    );
}

#[test]
fn a_bad_dataset_ends_the_run_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("data.jsonl");
    std::fs::write(&file, "{\"text\": \"fine\"}\n{\"text\": 17}\n").unwrap();
    let out_dir = tmp.path().join("out");
    let cfg = config(&format!(
        "ringperf profile --mock --input-file {} --custom-dataset-type single_turn \
         --request-count 2 --ui none --no-server-metrics --artifact-dir {}",
        file.display(),
        out_dir.display()
    ));
    let err = ringperf::run::run(cfg).expect_err("a bad line is a setup error");
    let msg = err.to_string();
    assert!(
        msg.contains("data.jsonl:2: field \"text\": expected a string"),
        "{msg}"
    );
    assert!(!out_dir.exists(), "nothing written");

    // The binary exits 2 and says the same.
    let o = Process::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "--mock", "--input-file"])
        .arg(&file)
        .args(["--request-count", "2", "--ui", "none", "--artifact-dir"])
        .arg(&out_dir)
        .output()
        .expect("binary runs");
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("data.jsonl:2: field \"text\": expected a string"),
        "{stderr}"
    );
    assert!(!out_dir.exists());

    // A missing ShareGPT copy says where it looked and how to get it, exit 2.
    let o = Process::new(env!("CARGO_BIN_EXE_ringperf"))
        .current_dir(tmp.path())
        .args([
            "profile",
            "--mock",
            "--public-dataset",
            "sharegpt",
            "--ui",
            "none",
        ])
        .env("HOME", tmp.path())
        .output()
        .expect("binary runs");
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(".cache/aiperf/datasets/ShareGPT_V3_unfiltered_cleaned_split.json")
            && stderr.contains("curl -L -o"),
        "{stderr}"
    );
}

/// A timestamped trace given without any timing flag: the run is promoted to a fixed schedule
/// (AIPerf's trace auto-promotion) and sends one request per record.
#[test]
fn mooncake_trace_sends_its_texts_and_exact_synthetic_lengths() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("trace.jsonl");
    let mut trace = String::new();
    for (i, (_, text)) in PROMPTS.iter().enumerate() {
        trace += &serde_json::json!({"timestamp": i * 10, "text_input": text, "output_length": 2})
            .to_string();
        trace.push('\n');
    }
    for (i, n) in [7u64, 30, 111].iter().enumerate() {
        trace += &serde_json::json!({"timestamp": 100 + i, "input_length": n, "output_length": 2})
            .to_string();
        trace.push('\n');
    }
    std::fs::write(&file, trace).unwrap();
    let out_dir = tmp.path().join("out");
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --input-file {} --custom-dataset-type \
         mooncake_trace --random-seed 4 --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        file.display(),
        out_dir.display()
    ));
    let out = ringperf::run::run(cfg).expect("run completes");
    // No --request-count: the promoted replay sends the whole trace, once.
    assert_eq!((out.successes, out.errors), (8, 0));
    // The run's own record of its timing mode: the first record's timestamp promoted it.
    let summary = read_json(&out_dir.join("profile_export_aiperf.json"));
    let profiling = &summary["input_config"]["phases"][0];
    assert_eq!(profiling["type"], "fixed_schedule", "{profiling}");
    assert_eq!(profiling["requests"], 8, "{profiling}");
    let mut received: Vec<u64> = server
        .truth()
        .entries()
        .iter()
        .map(|t| t.prompt_tokens)
        .collect();
    let mut expected: Vec<u64> = PROMPTS.iter().map(|(_, p)| o200k(p)).collect();
    expected.extend([7, 30, 111]);
    received.sort_unstable();
    expected.sort_unstable();
    assert_eq!(
        received, expected,
        "the texts, and synthetic prompts of exactly input_length"
    );
    let texts: BTreeSet<String> = server
        .truth()
        .entries()
        .iter()
        .map(|t| {
            body(t)["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    for (_, p) in PROMPTS {
        assert!(texts.contains(*p), "{p} was sent");
    }
    let ids: BTreeSet<String> = records(&out_dir)
        .iter()
        .map(|r| {
            r["metadata"]["conversation_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let want: BTreeSet<String> = (0..8).map(|i| format!("session_{i:06}")).collect();
    assert_eq!(ids, want, "seeded ids, one conversation per row");
    // A trace replay writes no inputs.json, as AIPerf.
    assert!(!out_dir.join("inputs.json").exists());
}

/// Trace replay: each request is meant to go at its timestamp's offset from the first one,
/// divided by `--replay-speedup` (the intended times are exact), is never sent early, and reaches
/// the mock within its own measured dispatch lag (plus loopback transit) of that time.
#[test]
fn trace_replay_sends_at_the_trace_times_scaled_by_the_speedup() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("trace.jsonl");
    let stamps_ms = [1_000u64, 1_100, 1_250, 1_400, 1_600, 1_610];
    let trace: String = stamps_ms
        .iter()
        .map(|ts| format!("{{\"timestamp\": {ts}, \"input_length\": 20, \"output_length\": 2}}\n"))
        .collect();
    std::fs::write(&file, trace).unwrap();
    let out_dir = tmp.path().join("out");
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --input-file {} --custom-dataset-type \
         mooncake_trace --fixed-schedule --fixed-schedule-auto-offset --replay-speedup 2 \
         --random-seed 4 --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        file.display(),
        out_dir.display()
    ));
    let out = ringperf::run::run(cfg).expect("run completes");
    assert_eq!((out.successes, out.errors), (6, 0));
    let summary = read_json(&out_dir.join("profile_export_aiperf.json"));
    let clock = &summary["ringperf"]["clock"];
    let wall0 = clock["wall_origin_ns"].as_u64().unwrap();
    let mono0 = clock["monotonic_origin_ns"].as_u64().unwrap();
    let raw = |wall: u64| wall - wall0 + mono0;
    let truth: BTreeMap<String, u64> = server
        .truth()
        .entries()
        .iter()
        .map(|t| (t.request_id.unwrap().to_string(), t.arrival_ns))
        .collect();
    let mut rows: Vec<(u64, u64, u64)> = records(&out_dir)
        .iter()
        .map(|r| {
            let md = &r["metadata"];
            let intended = raw(md["credit_issued_ns"].as_u64().unwrap());
            let start = raw(md["request_start_ns"].as_u64().unwrap());
            (intended, start, truth[md["x_request_id"].as_str().unwrap()])
        })
        .collect();
    rows.sort_unstable();
    let first = rows[0].0;
    for (i, &(intended, start, arrival)) in rows.iter().enumerate() {
        let want = (stamps_ms[i] - stamps_ms[0]) * 1_000_000 / 2;
        assert!(
            (intended - first).abs_diff(want) <= 2,
            "request {i} meant for {} ns, trace says {want} ns",
            intended - first
        );
        assert!(start >= intended, "request {i} sent early");
        let lag = start - intended;
        assert!(arrival >= intended, "request {i} arrived early");
        assert!(
            arrival - intended <= lag + 50_000_000,
            "request {i}: arrived {} ns after its time, dispatch lag {lag} ns",
            arrival - intended
        );
    }
}

#[test]
fn multi_turn_file_sends_its_turns_with_history_and_system_prompt() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("chats.jsonl");
    std::fs::write(
        &file,
        "{\"session_id\": \"c1\", \"turns\": [{\"role\": \"system\", \"text\": \"Be brief.\"}, \
         {\"text\": \"First question?\"}, {\"text\": \"Second question?\", \"delay\": 5}]}\n",
    )
    .unwrap();
    let out_dir = tmp.path().join("out");
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --input-file {} --custom-dataset-type multi_turn \
         --request-count 2 --concurrency 1 --random-seed 1 --ui none --no-server-metrics \
         --artifact-dir {}",
        server.addr,
        file.display(),
        out_dir.display()
    ));
    let out = ringperf::run::run(cfg).expect("run completes");
    assert_eq!((out.successes, out.errors), (2, 0));
    let mut truth = server.truth().entries();
    truth.sort_by_key(|t| t.arrival_ns);
    let first = body(&truth[0]);
    let second = body(&truth[1]);
    let roles = |b: &Value| -> Vec<String> {
        b["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        roles(&first),
        ["system", "user"],
        "the system turn is hoisted: {first}"
    );
    assert_eq!(first["messages"][0]["content"], "Be brief.");
    assert_eq!(first["messages"][1]["content"], "First question?");
    assert_eq!(
        roles(&second),
        ["system", "user", "assistant", "user"],
        "{second}"
    );
    assert_eq!(second["messages"][1]["content"], "First question?");
    assert_eq!(
        second["messages"][2]["content"].as_str(),
        truth[0].reply_text.as_deref(),
        "turn 2 carries the mock's real reply"
    );
    assert_eq!(second["messages"][3]["content"], "Second question?");
}

/// o200k ids of `text` with special tokens spelled in it as one id each, as a server's tokenizer
/// (and AIPerf's `allowed_special="all"`) counts them.
fn o200k_server_ids(text: &str) -> Vec<u32> {
    tiktoken_rs::o200k_base_singleton().encode_with_special_tokens(text)
}

/// `hash_ids` prompts of a production trace (the first rows of the Mooncake conversation trace,
/// tests/data/mooncake-conversation, plus a prefix-only row and an exact-tile one): the ISL
/// ringperf reports for each request is the count, by tiktoken, of the prompt the mock received,
/// which is the row's `input_length`; and two prompts share tokens only as far as they share hash
/// ids (the rows share block 0 only), plus the next block's separator and at most the 6 digits
/// of the block's id code.
#[test]
fn hash_ids_prompts_report_the_isl_the_server_receives() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let excerpt = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/mooncake-conversation/first-300.jsonl"),
    )
    .unwrap();
    let mut rows: Vec<Value> = excerpt
        .lines()
        .take(10)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    rows.push(serde_json::json!({"timestamp": 0, "input_length": 1100, "output_length": 2, "hash_ids": [0, 1]}));
    rows.push(serde_json::json!({"timestamp": 0, "input_length": 1024, "output_length": 2, "hash_ids": [0, 1]}));
    let file = tmp.path().join("trace.jsonl");
    let mut trace = String::new();
    for row in &mut rows {
        row["output_length"] = 2.into();
        trace += &format!("{row}\n");
    }
    std::fs::write(&file, trace).unwrap();
    let out_dir = tmp.path().join("out");
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --input-file {} --custom-dataset-type \
         mooncake_trace --random-seed 4 --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        file.display(),
        out_dir.display()
    ));
    let out = ringperf::run::run(cfg).expect("run completes");
    assert_eq!((out.successes, out.errors), (12, 0));
    let truth = server.truth().entries();
    let received: BTreeMap<String, Vec<u32>> = truth
        .iter()
        .map(|t| {
            let text = body(t)["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_string();
            (t.request_id.unwrap().to_string(), o200k_server_ids(&text))
        })
        .collect();
    // Each request: the ISL reported is the count of what was received, and the mock's own count.
    let mut isls = Vec::new();
    for rec in records(&out_dir) {
        let id = rec["metadata"]["x_request_id"].as_str().unwrap();
        let isl = rec["metrics"]["input_sequence_length"]["value"]
            .as_u64()
            .unwrap();
        assert_eq!(isl, received[id].len() as u64, "{rec}");
        assert_eq!(
            rec["metrics"]["usage_prompt_tokens"]["value"].as_u64(),
            Some(isl)
        );
        isls.push(isl);
    }
    isls.sort_unstable();
    let mut want: Vec<u64> = rows
        .iter()
        .map(|r| r["input_length"].as_u64().unwrap())
        .collect();
    want.sort_unstable();
    assert_eq!(isls, want, "every row's input_length, exactly");
    // Pairs of prompts: shared tokens follow shared hash ids.
    let by_len: BTreeMap<usize, &Vec<u32>> =
        received.values().map(|ids| (ids.len(), ids)).collect();
    let prompt_of = |row: &Value| by_len[&(row["input_length"].as_u64().unwrap() as usize)];
    let ids_of = |row: &Value| -> Vec<i64> {
        row["hash_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect()
    };
    for (i, a) in rows.iter().enumerate() {
        for b in &rows[i + 1..] {
            let (ia, ib) = (ids_of(a), ids_of(b));
            let same = common_prefix(&ia, &ib);
            let shared = same * 512;
            let cp = common_prefix(prompt_of(a), prompt_of(b));
            // Both rows have a block after the shared ones: its separator is shared too.
            let blocks_follow = ia.len() > same && ib.len() > same;
            let low = shared + usize::from(blocks_follow);
            assert!(
                (low..=shared + 6).contains(&cp),
                "{cp} tokens shared for {shared}: {a} {b}"
            );
        }
    }
}

/// How many leading items `a` and `b` share.
fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// A long trace replay is streamed: its first request goes when at most the producer's window
/// of prompts (1024) has been built, not all 3000, and it is the first row's prompt of exactly
/// its length (the mock's count). The rows after it are 10 minutes later, past the one request
/// the run sends.
#[test]
fn a_long_trace_sends_its_first_request_before_its_prompts_are_built() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("long.jsonl");
    let mut trace = String::new();
    for i in 0..3000u64 {
        let at = if i == 0 { 0 } else { 600_000 + i };
        trace += &serde_json::json!({"timestamp": at, "input_length": 40, "output_length": 2})
            .to_string();
        trace.push('\n');
    }
    std::fs::write(&file, trace).unwrap();
    let path = file.display().to_string();
    let out = common::profile_binary(
        &server,
        &tmp.path().join("out"),
        1,
        &[
            "--input-file",
            &path,
            "--custom-dataset-type",
            "mooncake_trace",
            "--fixed-schedule",
            "--no-server-metrics",
            "--verbose",
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let built: u64 = stderr
        .split("streamed trace: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of prompts built: {stderr}"));
    assert!(
        built <= 1025,
        "{built} prompts built before the first request"
    );
    let sent: Vec<u64> = server
        .truth()
        .entries()
        .iter()
        .map(|t| t.prompt_tokens)
        .collect();
    assert_eq!(sent, vec![40]);
}

/// A streamed replay checks every row before it starts: a row whose hash ids cannot fit its
/// length at line 2001 ends the run before anything is sent or written, naming the line.
#[test]
fn a_bad_row_at_the_end_of_a_long_trace_fails_before_the_start() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.jsonl");
    let mut trace = String::new();
    for i in 0..2000u64 {
        trace += &serde_json::json!({"timestamp": i, "input_length": 600, "hash_ids": [2 * i, 2 * i + 1]})
            .to_string();
        trace.push('\n');
    }
    trace += "{\"timestamp\": 2000, \"input_length\": 10, \"hash_ids\": [1, 2]}\n";
    std::fs::write(&file, trace).unwrap();
    let out_dir = tmp.path().join("out");
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --input-file {} --custom-dataset-type \
         mooncake_trace --fixed-schedule --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        file.display(),
        out_dir.display()
    ));
    let err = ringperf::run::run(cfg).expect_err("a bad row is a setup error");
    let msg = err.to_string();
    assert!(
        msg.contains("bad.jsonl:2001: field \"hash_ids\"") && msg.contains("do not fit"),
        "{msg}"
    );
    assert!(!out_dir.exists(), "nothing written");
    assert!(server.truth().entries().is_empty(), "nothing sent");
}

/// A trace's first pass keeps a bounded state per row, whatever the row's hash ids or length
/// (docs/datasets.md, "Large traces"): the bytes the load leaves allocated (the test binary's
/// counting allocator) over 20,000 rows are the same with 1 or 64 hash ids a row, and under
/// 256 a row (its skeleton turn, its session id and where it is in the file; before, its
/// `Turn`, its hash ids and the dataset's conversation, over 1 KB).
#[test]
fn a_trace_first_pass_keeps_a_bounded_state_per_row() {
    const ROWS: i64 = 20_000;
    let tmp = tempfile::tempdir().unwrap();
    let tokenizer = ringperf_workload::workload::Tokenizer::builtin();
    let mut kept = Vec::new();
    for ids in [1i64, 64] {
        let file = tmp.path().join(format!("trace-{ids}.jsonl"));
        let mut trace = String::new();
        for i in 0..ROWS {
            // Blocks shared across rows (as a production trace's are), a whole block each.
            let hash_ids: Vec<i64> = (0..ids).map(|k| (i + k) % 500).collect();
            trace += &serde_json::json!({"timestamp": i, "input_length": 16 * ids,
                                         "output_length": 8, "hash_ids": hash_ids})
            .to_string();
            trace.push('\n');
        }
        std::fs::write(&file, trace).unwrap();
        let spec = ringperf_workload::workload::loader::LoadSpec {
            source: ringperf_workload::workload::loader::Source::File {
                path: file,
                kind: Some(ringperf_workload::workload::loader::DatasetKind::MooncakeTrace),
            },
            seed: 1,
            seeded: true,
            entries: 1,
            block_size: Some(16),
            ignore_trace_delays: false,
            system_message: true,
            osl_given: false,
            hash_path: None,
            uuid_and_strip: false,
            pool_batch: Default::default(),
            weka: Default::default(),
            baseten: Default::default(),
        };
        let before = common::live_bytes();
        let loaded = ringperf_workload::workload::loader::load_deferred(&spec, &tokenizer).unwrap();
        let per_row = (common::live_bytes() - before) as f64 / ROWS as f64;
        drop(loaded);
        kept.push(per_row);
    }
    eprintln!("bytes kept a row with 1 and 64 hash ids: {kept:?}");
    assert!(
        (kept[0] - kept[1]).abs() < 1.0,
        "bytes kept a row with 1 and 64 hash ids: {kept:?}"
    );
    assert!(kept[1] < 256.0, "bytes kept a row: {kept:?}");
}

/// The public Mooncake conversation trace (first 300 rows, tests/data/mooncake-conversation)
/// replayed from its start: its first instant holds 10 prompts of 6,000–8,000 tokens, the
/// next one (3 s later, 0.3 s at 10×) 16 more. Every request of the replayed span (the first
/// 3 s: 26 rows) is built before the schedule's clock starts, so the first instant's requests
/// wait for no prompt: the count of prompts built when the first request went is all 26 (it
/// was the first one or few, the rest built while the schedule ran and the first instant's
/// requests left up to 84 ms late).
#[test]
fn a_streamed_trace_builds_its_first_requests_before_the_schedule_starts() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let trace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/mooncake-conversation/first-300.jsonl")
        .display()
        .to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "mock-model", "--ui", "none", "--verbose"])
        .args(["--tokenizer", "builtin", "--no-server-metrics", "--url"])
        .arg(format!("http://{}", server.addr))
        .arg("--artifact-dir")
        .arg(tmp.path().join("out"))
        .args([
            "--input-file",
            &trace,
            "--custom-dataset-type",
            "mooncake_trace",
        ])
        .args(["--fixed-schedule", "--fixed-schedule-end-offset", "3000"])
        .args(["--replay-speedup", "10"])
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let built: u64 = stderr
        .split("streamed trace: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of prompts built: {stderr}"));
    assert_eq!(built, 26, "{stderr}");
    assert!(
        stderr.contains("26 requests of the trace built ahead in "),
        "{stderr}"
    );
    assert_eq!(common::truth_of(&server, 26).len(), 26);
}

/// `--osl` over a file whose turns name no output length: each such turn asks for it, a turn
/// with its own `output_length` keeps that — as AIPerf 0.13 finalizes a file's turns. Against
/// AIPerf's own `inputs.json` for the same files and flags (`tests/data/aiperf-osl-files`:
/// `single_turn` six records, the third with `output_length` 7; `multi_turn` four
/// conversations of three turns), conversation by conversation, turn by turn; and every body
/// the mock received asks for what `inputs.json` says.
#[test]
fn osl_fills_a_files_turns_as_aiperf_does() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-osl-files");
    let asked = |inputs: &Value| -> Vec<(String, Vec<Value>)> {
        (inputs["data"].as_array().expect("data").iter())
            .map(|c| {
                let lengths = (c["payloads"].as_array().unwrap().iter())
                    .map(|p| p["max_completion_tokens"].clone())
                    .collect();
                (c["session_id"].as_str().unwrap().to_owned(), lengths)
            })
            .collect()
    };
    for (kind, requests) in [("single_turn", 6), ("multi_turn", 12)] {
        let server = mock();
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config(&format!(
            "ringperf profile -m mock-model -u {} --endpoint-type chat --streaming \
             --input-file {} --custom-dataset-type {kind} --osl 20 --random-seed 42 \
             --request-count {requests} --concurrency 1 --ui none --no-server-metrics \
             --artifact-dir {}",
            server.addr,
            data.join(format!("{kind}.jsonl")).display(),
            tmp.path().display()
        ));
        let out = ringperf::run::run(cfg).expect("run completes");
        assert_eq!((out.successes, out.errors), (requests, 0), "{kind}");
        let ours = asked(&read_json(&tmp.path().join("inputs.json")));
        let aiperf = asked(&read_json(&data.join(format!("{kind}.inputs.json"))));
        assert_eq!(ours, aiperf, "{kind}");
        let mut received: Vec<u64> = (server.truth().entries().iter())
            .map(|e| body(e)["max_completion_tokens"].as_u64().expect("asked"))
            .collect();
        received.sort_unstable();
        let mut written: Vec<u64> = (ours.iter())
            .flat_map(|(_, l)| l.iter().map(|v| v.as_u64().unwrap()))
            .collect();
        written.sort_unstable();
        assert_eq!(received, written, "{kind}: what the mock received");
    }
}

/// `--system-prompt` over a file: every conversation's first message is it, before the system
/// message the file gives (joined by a blank line, one message, as AIPerf 0.13 joins them); a
/// file of raw bodies, which ringperf sends as written, is refused before anything is sent.
#[test]
fn a_system_prompt_goes_before_a_files_own_system_message() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("mt.jsonl");
    std::fs::write(
        &file,
        "{\"session_id\": \"a\", \"turns\": [{\"role\": \"system\", \"text\": \"Own rules.\"}, {\"text\": \"hi\"}]}\n\
         {\"session_id\": \"b\", \"turns\": [{\"text\": \"hello\"}]}\n",
    )
    .unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --endpoint-type chat --input-file {} \
         --custom-dataset-type multi_turn --system-prompt Brief. --request-count 2 \
         --concurrency 1 --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        file.display(),
        tmp.path().join("out").display()
    ));
    let out = ringperf::run::run(cfg).expect("run completes");
    assert_eq!((out.successes, out.errors), (2, 0));
    let mut firsts: Vec<(String, String)> = (server.truth().entries().iter())
        .map(|e| {
            let b = body(e);
            let first = &b["messages"][0];
            assert_eq!(first["role"], "system", "{b}");
            let user = b["messages"][1]["content"].as_str().unwrap().to_owned();
            (user, first["content"].as_str().unwrap().to_owned())
        })
        .collect();
    firsts.sort();
    assert_eq!(
        firsts,
        [
            ("hello".to_owned(), "Brief.".to_owned()),
            ("hi".to_owned(), "Brief.\n\nOwn rules.".to_owned())
        ]
    );
    let raw = tmp.path().join("raw.jsonl");
    std::fs::write(
        &raw,
        "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n",
    )
    .unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --endpoint-type chat --input-file {} \
         --custom-dataset-type raw_payload --system-prompt Brief. --request-count 1 \
         --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        raw.display(),
        tmp.path().join("out2").display()
    ));
    let e = ringperf::run::run(cfg).expect_err("refused").to_string();
    assert!(e.contains("--system-prompt / --system-prompt-file"), "{e}");
}
