//! `bailian_trace`, `burst_gpt_trace` and `sagemaker_data_capture` read as AIPerf 0.13 reads
//! them: sessions, turn order, lengths and times from small files, the type detected from the
//! content, the trace peek, and every bad input an error naming its file, line and field. The
//! samples in tests/data/traces are compared with AIPerf's own runs in the binary's tests
//! (tests/it/traces.rs).

use std::path::{Path, PathBuf};

use ringperf_wire::conversation::{Content, Dataset};

use super::*;

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, body).unwrap();
    path
}

fn spec(path: &Path, kind: Option<DatasetKind>) -> LoadSpec {
    LoadSpec {
        source: Source::File {
            path: path.to_path_buf(),
            kind,
        },
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
    }
}

fn load_as(path: &Path, kind: DatasetKind) -> Result<Dataset, LoadError> {
    load(&spec(path, Some(kind)), &Tokenizer::builtin())
}

/// A turn as these tests see it: its timestamp (ms), `max_tokens` and prompt tokens.
type TurnShape = (Option<f64>, Option<u32>, usize);

/// Each conversation's id and its turns.
fn shape(d: &Dataset) -> Vec<(String, Vec<TurnShape>)> {
    let tokenizer = Tokenizer::builtin();
    d.conversations
        .iter()
        .map(|c| {
            let turns = c
                .turns
                .iter()
                .map(|t| {
                    let n = match &t.content {
                        Content::Texts(texts) => tokenizer.count(&texts.concat()),
                        _ => 0,
                    };
                    (t.timestamp_ms, t.max_tokens, n)
                })
                .collect();
            (c.session_id.clone(), turns)
        })
        .collect()
}

const BAILIAN: &str = r#"{"chat_id": 159, "parent_chat_id": -1, "timestamp": 61.114, "input_length": 48, "output_length": 13, "type": "text", "turn": 1, "hash_ids": [1, 2, 3]}
{"chat_id": 7, "parent_chat_id": -1, "timestamp": 61.2, "input_length": 5, "output_length": 2, "type": "search"}

{"chat_id": 161, "parent_chat_id": 160, "timestamp": 63.5, "input_length": 70, "output_length": 9, "type": "text", "turn": 3, "hash_ids": [1, 2, 3, 4, 5]}
{"chat_id": 160, "parent_chat_id": 159, "timestamp": 62.5, "input_length": 50, "output_length": 8, "type": "text", "turn": 2, "hash_ids": [1, 2, 3, 9]}
{"chat_id": 300, "parent_chat_id": 299, "timestamp": 64, "input_length": 3, "output_length": 1, "turn": 2}
"#;

/// Chains lead to their first request, which names the conversation; conversations are in
/// order of their first row, turns by `turn`; seconds become milliseconds; a row whose parent
/// is not in the file is a conversation of its own; prompts have exactly `input_length`
/// tokens, from 16-token blocks.
#[test]
fn bailian_rows_group_by_their_chains_and_sort_by_turn() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "b.jsonl", BAILIAN);
    let d = load_as(&path, DatasetKind::BailianTrace).unwrap();
    let ms = |s: f64| Some(s * 1000.0);
    assert_eq!(
        shape(&d),
        [
            (
                "159".to_string(),
                vec![
                    (ms(61.114), Some(13), 48),
                    (ms(62.5), Some(8), 50),
                    (ms(63.5), Some(9), 70)
                ]
            ),
            ("7".to_string(), vec![(ms(61.2), Some(2), 5)]),
            ("300".to_string(), vec![(ms(64.0), Some(1), 3)]),
        ]
    );
    assert_eq!(d.default_sampling, Sampling::Sequential);
    assert!(d.replay, "no inputs.json, as AIPerf");
    // The shared hash ids are a shared prefix: three whole 16-token blocks.
    let text = |c: usize, t: usize| match &d.conversations[c].turns[t].content {
        Content::Texts(t) => t.concat(),
        other => panic!("{other:?}"),
    };
    let tokens = |s: &str| Tokenizer::builtin().encode(s);
    let (a, b) = (tokens(&text(0, 0)), tokens(&text(0, 1)));
    assert_eq!(a[..48], b[..48]);
    // Detected from its first record (a request `type` is no dataset type).
    assert_eq!(detect(&path), Ok(DatasetKind::BailianTrace));
    assert_eq!(
        peek_trace(&path, Some(DatasetKind::BailianTrace)),
        Some((true, 5))
    );
}

/// `--prompt-input-tokens-block-size` overrides Bailian's 16: the same rows no longer fit.
#[test]
fn bailian_blocks_are_sixteen_tokens_unless_told() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "b.jsonl", BAILIAN);
    let mut s = spec(&path, Some(DatasetKind::BailianTrace));
    s.block_size = Some(32);
    let err = load(&s, &Tokenizer::builtin()).unwrap_err();
    assert_eq!(
        (err.line, err.field.as_deref()),
        (Some(1), Some("hash_ids"))
    );
}

#[test]
fn bad_bailian_rows_name_their_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let good = r#"{"chat_id": 1, "timestamp": 0.5, "input_length": 4, "output_length": 2}"#;
    let cases = [
        (
            r#"{"timestamp": 1, "input_length": 4, "output_length": 2}"#,
            "chat_id",
            "required but missing",
        ),
        (
            r#"{"chat_id": "x", "timestamp": 1, "input_length": 4, "output_length": 2}"#,
            "chat_id",
            "expected an integer",
        ),
        (
            r#"{"chat_id": 2, "timestamp": "soon", "input_length": 4, "output_length": 2}"#,
            "timestamp",
            "expected a number",
        ),
        (
            r#"{"chat_id": 2, "timestamp": -1, "input_length": 4, "output_length": 2}"#,
            "timestamp",
            "seconds",
        ),
        (
            r#"{"chat_id": 2, "timestamp": 1, "output_length": 2}"#,
            "input_length",
            "required but missing",
        ),
        (
            r#"{"chat_id": 2, "timestamp": 1, "input_length": 4, "output_length": 0}"#,
            "output_length",
            "greater than 0",
        ),
        (
            r#"{"chat_id": 2, "timestamp": 1, "input_length": 4, "output_length": 2, "hash_ids": [1, "b"]}"#,
            "hash_ids[1]",
            "expected an integer",
        ),
        (
            r#"{"chat_id": 2, "timestamp": 1, "input_length": 4, "output_length": 2, "hash_ids": [1, 2]}"#,
            "hash_ids",
            "",
        ),
        (
            r#"{"chat_id": 2, "timestamp": 1, "input_length": 4, "output_length": 2, "turns": 2}"#,
            "turns",
            "unknown field",
        ),
    ];
    for (row, field, says) in cases {
        let path = write(dir.path(), "bad.jsonl", &format!("{good}\n{row}\n"));
        let err = load_as(&path, DatasetKind::BailianTrace).unwrap_err();
        let msg = err.to_string();
        assert_eq!(
            (err.line, err.field.as_deref()),
            (Some(2), Some(field)),
            "{msg}"
        );
        assert!(
            msg.starts_with(&format!("{}:2: field", path.display())),
            "{msg}"
        );
        assert!(msg.contains(says), "{msg}");
    }
    let path = write(
        dir.path(),
        "bad.jsonl",
        &format!("{good}\n{{\"chat_id\": 2,\n"),
    );
    let err = load_as(&path, DatasetKind::BailianTrace).unwrap_err();
    assert!(
        matches!(err.kind, LoadErrorKind::Json(_)) && err.line == Some(2),
        "{err}"
    );
}

const BURST: &str = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45,ChatGPT,1087,230,1317,Conversation log

45,GPT-4,0,276,276,API log
";

/// Every row a conversation of its own (seeded ids in file order), seconds as milliseconds, a
/// 0-token request a 1-token prompt (AIPerf's length floor), the other columns ignored.
#[test]
fn burst_gpt_rows_are_single_requests_in_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "b.csv", BURST);
    let d = load_as(&path, DatasetKind::BurstGptTrace).unwrap();
    assert_eq!(
        shape(&d),
        [
            (
                "session_000000".to_string(),
                vec![(Some(5000.0), Some(18), 472)]
            ),
            (
                "session_000001".to_string(),
                vec![(Some(45000.0), Some(230), 1087)]
            ),
            (
                "session_000002".to_string(),
                vec![(Some(45000.0), Some(276), 1)]
            ),
        ]
    );
    // Detected from its header; its first line is not JSON, so no auto-promotion, and the
    // header counts as a record (AIPerf's line count).
    assert_eq!(detect(&path), Ok(DatasetKind::BurstGptTrace));
    assert_eq!(peek_trace(&path, None), Some((false, 4)));
    // BurstGPT_3's layout: two columns before the ones read, found by name.
    let path = write(
        dir.path(),
        "b3.csv",
        "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
         1.5,\"a,b\",2.0,ChatGPT,10,3,13,Conversation log\n",
    );
    let d = load_as(&path, DatasetKind::BurstGptTrace).unwrap();
    assert_eq!(shape(&d)[0].1, [(Some(1500.0), Some(3), 10)]);
}

#[test]
fn bad_burst_gpt_rows_name_their_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let head = "Timestamp,Model,Request tokens,Response tokens\n5,ChatGPT,4,2\n";
    let cases = [
        ("x,ChatGPT,4,2", "Timestamp", "not a number of seconds"),
        ("5,ChatGPT,4.5,2", "Request tokens", "expected an integer"),
        ("5,ChatGPT,-4,2", "Request tokens", "expected an integer"),
        ("5,ChatGPT,4", "Response tokens", "required but missing"),
        ("5,ChatGPT,4,0", "Response tokens", "at least 1"),
    ];
    for (row, column, says) in cases {
        let path = write(dir.path(), "bad.csv", &format!("{head}{row}\n"));
        let err = load_as(&path, DatasetKind::BurstGptTrace).unwrap_err();
        let msg = err.to_string();
        assert_eq!(
            (err.line, err.field.as_deref()),
            (Some(3), Some(column)),
            "{msg}"
        );
        assert!(msg.contains(says), "{msg}");
    }
    let path = write(dir.path(), "bad.csv", "Timestamp,Model,Tokens\n1,a,2\n");
    let msg = load_as(&path, DatasetKind::BurstGptTrace)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("missing required columns \"Request tokens\", \"Response tokens\""),
        "{msg}"
    );
    let path = write(
        dir.path(),
        "empty.csv",
        "Timestamp,Request tokens,Response tokens\n",
    );
    let err = load_as(&path, DatasetKind::BurstGptTrace).unwrap_err();
    assert_eq!(err.kind, LoadErrorKind::Empty);
    let missing = dir.path().join("missing.csv");
    let msg = load_as(&missing, DatasetKind::BurstGptTrace)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("not found"), "{msg}");
}

/// A capture record: `body` as the captured request (JSON text, or base64 of it), at `time`.
fn capture(time: &str, body: &str, base64: bool) -> String {
    let data = if base64 {
        let mut out = String::new();
        crate::workload::media::base64_into(body.as_bytes(), &mut out);
        out
    } else {
        body.to_string()
    };
    let encoding = if base64 { "BASE64" } else { "JSON" };
    serde_json::json!({
        "captureData": {
            "endpointInput": {"observedContentType": "application/json", "mode": "INPUT", "data": data, "encoding": encoding},
            "endpointOutput": {"data": "{\"usage\": {\"prompt_tokens\": 9}}", "encoding": "JSON"}
        },
        "eventMetadata": {"eventId": "e", "inferenceTime": time},
        "eventVersion": "0"
    })
    .to_string()
        + "\n"
}

/// Records in time order (the file's order for ties), relative to the earliest, each its own
/// conversation; the messages and tools as captured; `max_tokens`, else
/// `max_completion_tokens`; a directory reads every `*.jsonl` under it.
#[test]
fn sagemaker_captures_replay_their_messages_in_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let hi =
        r#"{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5, "temperature": 1}"#;
    let tools = r#"{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "w"}], "max_completion_tokens": 7, "tools": [{"type": "function", "function": {"name": "f"}}]}"#;
    let bare = r#"{"messages": [{"role": "user", "content": "b"}]}"#;
    let body = capture("2026-04-29T00:03:19.5Z", hi, true)
        + &capture("2026-04-29T00:03:18Z", tools, false)
        + &capture("2026-04-29T02:03:19.5+02:00", bare, true);
    let path = write(dir.path(), "cap/a/x.jsonl", &body);
    let d = load_as(&path, DatasetKind::SagemakerDataCapture).unwrap();
    // Each conversation's id, its turn's timestamp and `max_tokens`, its messages, its tools.
    type Capture = (String, Option<f64>, Option<u32>, usize, bool);
    let got: Vec<Capture> = d
        .conversations
        .iter()
        .map(|c| {
            let t = &c.turns[0];
            let Content::Messages(m) = &t.content else {
                panic!("{:?}", t.content)
            };
            (
                c.session_id.clone(),
                t.timestamp_ms,
                t.max_tokens,
                m.len(),
                t.extra.contains_key("tools"),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("session_000000".into(), Some(0.0), Some(7), 2, true),
            ("session_000001".into(), Some(1500.0), Some(5), 1, false),
            ("session_000002".into(), Some(1500.0), None, 1, false),
        ]
    );
    assert_eq!(detect(&path), Ok(DatasetKind::SagemakerDataCapture));
    assert_eq!(peek_trace(&path, None), Some((false, 3)));
    // A directory: every capture file under it, in path order.
    write(
        dir.path(),
        "cap/b.jsonl",
        &capture("2026-04-29T00:03:17Z", hi, false),
    );
    write(dir.path(), "cap/notes.txt", "not a capture");
    let root = dir.path().join("cap");
    let d = load_as(&root, DatasetKind::SagemakerDataCapture).unwrap();
    assert_eq!(d.conversations.len(), 4);
    assert_eq!(d.conversations[1].turns[0].timestamp_ms, Some(1000.0));
    assert_eq!(detect(&root), Ok(DatasetKind::SagemakerDataCapture));
    assert_eq!(
        peek_trace(&root, Some(DatasetKind::SagemakerDataCapture)),
        Some((false, 4))
    );
}

#[test]
fn bad_sagemaker_records_name_their_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let hi = r#"{"messages": [{"role": "user", "content": "hi"}]}"#;
    let good = capture("2026-04-29T00:03:18Z", hi, false);
    let cases = [
        (
            capture("noon", hi, false),
            "eventMetadata.inferenceTime",
            "not an ISO 8601",
        ),
        (
            capture("2026-04-29T00:03:18Z", r#"{"prompt": "hi"}"#, false),
            "captureData.endpointInput.data.messages",
            "chat endpoints",
        ),
        (
            capture(
                "2026-04-29T00:03:18Z",
                r#"{"messages": [{"content": "x"}]}"#,
                true,
            ),
            "captureData.endpointInput.data.messages[0].role",
            "required",
        ),
        (
            capture(
                "2026-04-29T00:03:18Z",
                r#"{"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}"#,
                false,
            ),
            "captureData.endpointInput.data.max_tokens",
            "greater than 0",
        ),
        (
            capture("2026-04-29T00:03:18Z", "{not json", false),
            "captureData.endpointInput.data",
            "invalid JSON",
        ),
        (
            good.replacen("\"encoding\":\"JSON\"", "\"encoding\":\"BASE64\"", 1),
            "captureData.endpointInput.data",
            "base64",
        ),
        (
            good.replace("\"eventMetadata\"", "\"metadata\""),
            "eventMetadata",
            "required but missing",
        ),
    ];
    for (record, field, says) in cases {
        let path = write(dir.path(), "bad.jsonl", &format!("{good}{record}"));
        let err = load_as(&path, DatasetKind::SagemakerDataCapture).unwrap_err();
        let msg = err.to_string();
        assert_eq!(
            (err.line, err.field.as_deref()),
            (Some(2), Some(field)),
            "{msg}"
        );
        assert!(msg.contains(says), "{msg}");
    }
    let empty = dir.path().join("none");
    std::fs::create_dir_all(&empty).unwrap();
    let msg = load_as(&empty, DatasetKind::SagemakerDataCapture)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("no .jsonl files"), "{msg}");
}

/// A Bailian row without its request `type` reads as a `mooncake_trace` row too: AIPerf's
/// detection finds two types and asks, and so does ringperf's; a directory is refused by name
/// for the trace types that read files.
#[test]
fn detection_asks_when_two_types_can_read_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "t.jsonl",
        "{\"chat_id\": 1, \"timestamp\": 1, \"input_length\": 4, \"output_length\": 2}\n",
    );
    let msg = detect(&path).unwrap_err().to_string();
    assert!(
        msg.contains("mooncake_trace and bailian_trace can all read this"),
        "{msg}"
    );
    let msg = load_as(dir.path(), DatasetKind::BailianTrace)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains(
            "only random_pool, sagemaker_data_capture, raw_payload, weka_trace read directories"
        ),
        "{msg}"
    );
}

/// Every type ringperf reads has its section in docs/datasets.md (the one list of types: the
/// flag help points there).
#[test]
fn every_type_is_documented() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/datasets.md"
    ))
    .unwrap();
    for k in DatasetKind::ALL {
        assert!(
            doc.contains(&format!("\n## `{k}`\n")),
            "docs/datasets.md has no section for {k}"
        );
    }
}
