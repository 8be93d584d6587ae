//! The trace samples of tests/data/traces (`bailian_trace`, `burst_gpt_trace`,
//! `sagemaker_data_capture`) against AIPerf 0.13's own runs of them
//! (tests/data/traces/aiperf/*.json, reduced from AIPerf's records and the mock's record of what
//! it received: see the README there), and replayed end to end against the in-process mock.
//!
//! AIPerf writes no `inputs.json` for a trace, so the fixtures hold what its requests were: each
//! one's conversation, turn, credit time, `max_completion_tokens`, prompt tokens and, for the
//! captures, the messages sent.

use crate::common;
use common::{config, read_json};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ringperf_wire::conversation::{Content, Dataset};
use ringperf_workload::workload::Tokenizer;
use ringperf_workload::workload::loader::{DatasetKind, LoadSpec, Source, load, peek_trace};
use serde_json::Value;

const SAMPLES: [(&str, DatasetKind); 3] = [
    ("bailian_trace.jsonl", DatasetKind::BailianTrace),
    ("burst_gpt_trace.csv", DatasetKind::BurstGptTrace),
    (
        "sagemaker_data_capture.jsonl",
        DatasetKind::SagemakerDataCapture,
    ),
];

/// AIPerf's requests may start this much later than their trace time (its dispatch jitter, up
/// to 30 ms in these runs; a later turn waits for the previous answer too).
const AIPERF_SLACK_MS: f64 = 40.0;

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/traces")
        .join(name)
}

fn fixture(kind: DatasetKind) -> Value {
    read_json(&sample(&format!("aiperf/{kind}.json")))
}

fn load_sample(name: &str, kind: DatasetKind) -> Dataset {
    let spec = LoadSpec {
        source: Source::File {
            path: sample(name),
            kind: Some(kind),
        },
        // AIPerf ran with --random-seed 7: sequential session ids.
        seed: 7,
        seeded: true,
        entries: 1,
        block_size: None,
        ignore_trace_delays: false,
        system_message: true,
        osl_given: false,
        hash_path: None,
        uuid_and_strip: false,
        pool_batch: Default::default(),
        weka: Default::default(),
        baseten: Default::default(),
    };
    load(&spec, &Tokenizer::builtin()).expect("the sample loads")
}

/// Tokens of `text` as a server counts them (special tokens spelled in it are one each).
fn server_tokens(text: &str) -> u64 {
    tiktoken_rs::o200k_base_singleton()
        .encode_with_special_tokens(text)
        .len() as u64
}

/// The fixture's requests by conversation id, each conversation's in turn order.
fn aiperf_sessions(fx: &Value) -> BTreeMap<String, Vec<Value>> {
    let mut sessions: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for r in fx["requests"].as_array().unwrap() {
        sessions
            .entry(r["conversation_id"].as_str().unwrap().to_string())
            .or_default()
            .push(r.clone());
    }
    for turns in sessions.values_mut() {
        turns.sort_by_key(|r| r["turn_index"].as_u64());
    }
    sessions
}

/// ringperf builds what AIPerf sent: the same conversations with the same turns in the same
/// order, each turn's `max_tokens`, its prompt's length (AIPerf's Bailian block prompts drift by
/// a token at most: it decodes blocks without re-encoding them) or, for a capture, its messages
/// and tools, and first turns at their trace times, relative to the first (AIPerf's credits
/// within its dispatch jitter, in the same order). The default request count of a replay is
/// AIPerf's.
#[test]
fn samples_build_the_requests_aiperf_sent() {
    for (name, kind) in SAMPLES {
        let fx = fixture(kind);
        let theirs = aiperf_sessions(&fx);
        let ours = load_sample(name, kind);
        let ids: Vec<&str> = ours
            .conversations
            .iter()
            .map(|c| c.session_id.as_str())
            .collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            theirs.keys().map(String::as_str).collect::<Vec<_>>(),
            "{kind}: the conversations"
        );
        let first_ms = ours
            .conversations
            .iter()
            .filter_map(|c| c.turns[0].timestamp_ms)
            .fold(f64::INFINITY, f64::min);
        let mut requests = 0;
        let mut isl = (0u64, 0u64);
        for c in &ours.conversations {
            let aiperf = &theirs[&c.session_id];
            assert_eq!(
                c.turns.len(),
                aiperf.len(),
                "{kind} {}: turns",
                c.session_id
            );
            for (t, (turn, a)) in c.turns.iter().zip(aiperf).enumerate() {
                let at = format!("{kind} {} turn {t}", c.session_id);
                requests += 1;
                assert_eq!(
                    turn.max_tokens.map(u64::from),
                    a["max_completion_tokens"].as_u64(),
                    "{at}: max tokens"
                );
                match &turn.content {
                    Content::Texts(texts) => {
                        let n = server_tokens(&texts.concat());
                        let theirs = a["prompt_tokens"].as_u64().unwrap();
                        let drift = if kind == DatasetKind::BailianTrace {
                            1
                        } else {
                            0
                        };
                        assert!(
                            n.abs_diff(theirs) <= drift,
                            "{at}: {n} tokens, AIPerf {theirs}"
                        );
                        isl.0 += n;
                        isl.1 += theirs;
                    }
                    Content::Messages(m) => {
                        assert_eq!(
                            Value::Array(m.clone()),
                            a["sent_messages"],
                            "{at}: messages"
                        );
                        assert_eq!(turn.extra.get("tools"), a.get("tools"), "{at}: tools");
                    }
                    other => panic!("{at}: {other:?}"),
                }
                if t == 0 {
                    let ours_ms = turn.timestamp_ms.unwrap() - first_ms;
                    let theirs_ms = a["credit_offset_ms"].as_f64().unwrap();
                    assert!(
                        (theirs_ms - ours_ms).abs() <= AIPERF_SLACK_MS,
                        "{at}: at {ours_ms} ms, AIPerf's credit at {theirs_ms} ms"
                    );
                }
            }
        }
        assert_eq!(requests, fx["requests"].as_array().unwrap().len());
        eprintln!(
            "{kind}: {requests} requests, prompt tokens ringperf {} AIPerf {}",
            isl.0, isl.1
        );
        // AIPerf's first turns, in the order it sent them, go in ringperf's time order.
        let mut firsts: Vec<(f64, f64)> = theirs
            .values()
            .map(|turns| {
                let id = turns[0]["conversation_id"].as_str().unwrap();
                let c = ours
                    .conversations
                    .iter()
                    .find(|c| c.session_id == id)
                    .unwrap();
                (
                    turns[0]["credit_offset_ms"].as_f64().unwrap(),
                    c.turns[0].timestamp_ms.unwrap(),
                )
            })
            .collect();
        firsts.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in firsts.windows(2) {
            assert!(
                w[0].1 <= w[1].1 + AIPERF_SLACK_MS,
                "{kind}: {w:?} out of order"
            );
        }
        // The replay's default request count, echoed by AIPerf (a CSV's header line counts).
        let (timestamped, records) = peek_trace(&sample(name), Some(kind)).unwrap();
        assert_eq!(
            Some(records),
            fx["profiling_phase"]["requests"].as_u64(),
            "{kind}: the default request count"
        );
        assert_eq!(
            timestamped,
            kind == DatasetKind::BailianTrace,
            "{kind}: promoted"
        );
    }
}

/// Each sample replayed on a fixed schedule (10× faster) against the mock: every row sent once
/// (the BurstGPT replay stops at its 91 rows though its default request count, AIPerf's, is 92),
/// the ISL ringperf reports is what the mock counted in what it received, and AIPerf's (the
/// captures' `tools` schemas included, as AIPerf counts them), and each body asks AIPerf's
/// `max_completion_tokens`.
#[test]
fn samples_replay_against_the_mock() {
    for (name, kind) in SAMPLES {
        let server = common::recording_mock(2);
        let tmp = tempfile::tempdir().unwrap();
        let out_dir = tmp.path().join("out");
        let cfg = config(&format!(
            "ringperf profile -m mock-model -u {} --streaming --input-file {} \
             --custom-dataset-type {kind} --fixed-schedule --replay-speedup 10 --random-seed 7 \
             --ui none --no-server-metrics --artifact-dir {}",
            server.addr,
            sample(name).display(),
            out_dir.display()
        ));
        let out = ringperf::run::run(cfg).expect("run completes");
        let fx = fixture(kind);
        let want = fx["requests"].as_array().unwrap();
        assert_eq!(
            (out.successes, out.errors),
            (want.len() as u64, 0),
            "{kind}"
        );
        let summary = read_json(&out_dir.join("profile_export_aiperf.json"));
        assert_eq!(
            summary["input_config"]["phases"][0]["requests"], fx["profiling_phase"]["requests"],
            "{kind}: the request count echoed"
        );
        assert!(
            !out_dir.join("inputs.json").exists(),
            "{kind}: a trace writes none"
        );
        let truth = common::truth_of(&server, want.len());
        assert_eq!(truth.len(), want.len(), "{kind}: requests received");
        let received: BTreeMap<String, u64> = truth
            .iter()
            .map(|t| (t.request_id.unwrap().to_string(), t.prompt_tokens))
            .collect();
        let bodies: BTreeMap<String, Value> = truth
            .iter()
            .map(|t| {
                let body = serde_json::from_slice(t.request_body.as_deref().unwrap()).unwrap();
                (t.request_id.unwrap().to_string(), body)
            })
            .collect();
        let theirs: BTreeMap<(String, u64), &Value> = want
            .iter()
            .map(|r| {
                let key = (
                    r["conversation_id"].as_str().unwrap().to_string(),
                    r["turn_index"].as_u64().unwrap(),
                );
                (key, r)
            })
            .collect();
        let (mut ours_isl, mut aiperf_isl) = (0u64, 0u64);
        for rec in common::read_jsonl(&out_dir.join("profile_export.jsonl")) {
            let md = &rec["metadata"];
            let id = md["x_request_id"].as_str().unwrap();
            let isl = rec["metrics"]["input_sequence_length"]["value"]
                .as_u64()
                .unwrap();
            assert_eq!(
                isl, received[id],
                "{kind}: the ISL is what the mock received"
            );
            let key = (
                md["conversation_id"].as_str().unwrap().to_string(),
                md["turn_index"].as_u64().unwrap(),
            );
            let a = theirs[&key];
            assert_eq!(
                bodies[id]["max_completion_tokens"], a["max_completion_tokens"],
                "{kind} {key:?}"
            );
            // A first turn's ISL is its prompt's (later turns carry the mock's replies).
            if key.1 == 0 {
                ours_isl += isl;
                aiperf_isl += a["input_sequence_length"].as_u64().unwrap();
            }
        }
        let drift = if kind == DatasetKind::BailianTrace {
            2
        } else {
            0
        };
        assert!(
            ours_isl.abs_diff(aiperf_isl) <= drift,
            "{kind}: first-turn ISL {ours_isl}, AIPerf {aiperf_isl}"
        );
    }
}

/// A bad row is a setup error naming the file, the line and the field: nothing is sent and
/// nothing written.
#[test]
fn a_bad_row_ends_the_run_before_anything_is_sent() {
    let server = common::recording_mock(2);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("burst.csv");
    std::fs::write(
        &file,
        "Timestamp,Model,Request tokens,Response tokens\n0,ChatGPT,4,2\n1,ChatGPT,many,2\n",
    )
    .unwrap();
    let out_dir = tmp.path().join("out");
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --input-file {} --custom-dataset-type \
         burst_gpt_trace --fixed-schedule --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        file.display(),
        out_dir.display()
    ));
    let msg = ringperf::run::run(cfg)
        .expect_err("a setup error")
        .to_string();
    assert!(
        msg.contains("burst.csv:3: field \"Request tokens\": expected an integer"),
        "{msg}"
    );
    assert!(!out_dir.exists() && server.truth().entries().is_empty());
}

/// `--concurrency` on a replayed trace of sessions counts sessions, as AIPerf's session slots:
/// at 1, session `b` (due 10 ms in) waits for session `a`'s last answer, and its lateness is
/// reported as `replay_sched_lag`, not as the client's dispatch lag.
#[test]
fn a_replayed_session_holds_its_concurrency_slot_to_its_last_answer() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("sessions.jsonl");
    let row = |id: &str, at: &str| {
        format!(r#"{{"session_id": "{id}", {at}, "input_length": 20, "output_length": 2}}"#)
    };
    let rows = [
        row("a", r#""timestamp": 0"#),
        row("a", r#""delay": 40"#),
        row("a", r#""delay": 40"#),
        row("b", r#""timestamp": 10"#),
        row("b", r#""delay": 40"#),
    ];
    std::fs::write(&trace, rows.join("\n") + "\n").unwrap();
    let server = common::recording_mock(2);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-m",
            "mock-model",
            "--streaming",
            "--tokenizer",
            "builtin",
        ])
        .args(["--ui", "none", "--no-server-metrics", "--concurrency", "1"])
        .args(["--custom-dataset-type", "mooncake_trace", "--input-file"])
        .arg(&trace)
        .arg("--url")
        .arg(format!("http://{}", server.addr))
        .arg("--artifact-dir")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut truth = common::truth_of(&server, 5);
    assert_eq!(truth.len(), 5);
    truth.sort_by_key(|t| t.arrival_ns);
    // The first three arrivals are one session's, the last two the other's; the second starts
    // after the first's last answer.
    let ids: Vec<&str> = truth
        .iter()
        .map(|t| t.correlation_id.as_deref().unwrap())
        .collect();
    assert!(ids[0] == ids[1] && ids[1] == ids[2] && ids[3] == ids[4] && ids[2] != ids[3]);
    assert!(truth[3].arrival_ns >= truth[2].end_ns, "{truth:?}");
    let j = common::read_json(&dir.path().join("out/profile_export_aiperf.json"));
    let lag = j["replay_sched_lag_p99"]["avg"].as_f64().unwrap_or(0.0);
    assert!(lag > 50.0, "session b waited ~80 ms: {lag}");
    // The wait for the slot is the load's, not the client's lateness: not in the dispatch lag.
    let dispatch_max_ms = j["ringperf"]["dispatch_lag_ns"]["max"].as_f64().unwrap() / 1e6;
    assert!(dispatch_max_ms < lag / 2.0, "{dispatch_max_ms} ms");
}
