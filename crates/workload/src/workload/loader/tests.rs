use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::*;
use ringperf_wire::conversation::{Content, Conversation, Turn};

fn builtin() -> &'static Tokenizer {
    static T: OnceLock<Tokenizer> = OnceLock::new();
    T.get_or_init(Tokenizer::builtin)
}

fn data(name: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("tests/data/datasets")
        .join(name)
}

fn spec(source: Source) -> LoadSpec {
    LoadSpec {
        source,
        seed: 42,
        seeded: true,
        entries: 4,
        block_size: Some(16),
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

fn file(name: &str, kind: DatasetKind) -> LoadSpec {
    spec(Source::File {
        path: data(name),
        kind: Some(kind),
    })
}

fn conv(id: &str, turns: Vec<Turn>) -> Conversation {
    Conversation {
        session_id: id.into(),
        turns,
        ..Conversation::default()
    }
}

fn texts(t: &[&str]) -> Content {
    Content::Texts(t.iter().map(|s| s.to_string()).collect())
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn texts_of(c: &Conversation) -> Vec<String> {
    c.turns
        .iter()
        .flat_map(|t| match &t.content {
            Content::Texts(v) => v.clone(),
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn single_turn_groups_rows_by_session_id() {
    let d = load(
        &file("single_turn.jsonl", DatasetKind::SingleTurn),
        builtin(),
    )
    .unwrap();
    let expected = vec![
        conv("session_000000", vec![Turn::text("What is deep learning?")]),
        conv(
            "user-7",
            vec![
                Turn {
                    max_tokens: Some(12),
                    ..Turn::text("Who are you?")
                },
                Turn {
                    content: texts(&["Hello", "world"]),
                    role: Some("user".into()),
                    delay_ms: Some(500.0),
                    ..Turn::default()
                },
            ],
        ),
        conv(
            "session_000001",
            vec![Turn {
                content: texts(&["A", "B"]),
                timestamp_ms: Some(1000.0),
                extra: obj(json!({"temperature": 0.5})),
                ..Turn::default()
            }],
        ),
    ];
    assert_eq!(d.conversations, expected);
    assert_eq!(d.default_sampling, Sampling::Sequential);
}

#[test]
fn unseeded_session_ids_are_uuids() {
    let mut s = file("single_turn.jsonl", DatasetKind::SingleTurn);
    s.seeded = false;
    let d = load(&s, builtin()).unwrap();
    let id = &d.conversations[0].session_id;
    assert!(uuid::Uuid::parse_str(id).is_ok(), "{id}");
    assert_ne!(d.conversations[0].session_id, d.conversations[2].session_id);
}

#[test]
fn multi_turn_appends_sessions_and_hoists_the_system_turn() {
    let d = load(&file("multi_turn.jsonl", DatasetKind::MultiTurn), builtin()).unwrap();
    let expected = vec![
        Conversation {
            session_id: "chat-1".into(),
            system: Some("Be brief.".into()),
            user_context: None,
            turns: vec![
                Turn::text("Hi"),
                Turn {
                    delay_ms: Some(1000.0),
                    ..Turn::text("Bye")
                },
                Turn::text("Again"),
            ],
            ..Conversation::default()
        },
        conv(
            "session_000000",
            vec![
                Turn {
                    timestamp_ms: Some(0.0),
                    ..Turn::text("Solo")
                },
                Turn {
                    timestamp_ms: Some(2000.0),
                    max_tokens: Some(8),
                    ..Turn::text("Later")
                },
            ],
        ),
    ];
    assert_eq!(d.conversations, expected);
    // An endpoint without a system message keeps the system turn as a turn.
    let mut s = file("multi_turn.jsonl", DatasetKind::MultiTurn);
    s.system_message = false;
    let d = load(&s, builtin()).unwrap();
    assert_eq!(d.conversations[0].system, None);
    assert_eq!(
        d.conversations[0].turns[0],
        Turn {
            role: Some("system".into()),
            ..Turn::text("Be brief.")
        }
    );
}

#[test]
fn a_lone_system_turn_is_not_hoisted() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.jsonl");
    std::fs::write(
        &p,
        "{\"turns\": [{\"role\": \"system\", \"text\": \"S\"}]}\n\
         {\"turns\": [{\"role\": \"system\", \"text\": \"A\"}, {\"role\": \"system\", \"text\": \"B\"}]}\n",
    )
    .unwrap();
    let d = load(
        &spec(Source::File {
            path: p,
            kind: Some(DatasetKind::MultiTurn),
        }),
        builtin(),
    )
    .unwrap();
    for c in &d.conversations {
        assert_eq!(c.system, None);
    }
    assert_eq!(texts_of(&d.conversations[0]), ["S"]);
    assert_eq!(texts_of(&d.conversations[1]), ["A", "B"]);
}

#[test]
fn random_pool_file_draws_entries_with_replacement() {
    let d = load(
        &file("random_pool.jsonl", DatasetKind::RandomPool),
        builtin(),
    )
    .unwrap();
    assert_eq!(d.default_sampling, Sampling::Shuffle);
    assert_eq!(
        d.conversations.len(),
        4,
        "--num-dataset-entries conversations"
    );
    let records: [&[&str]; 3] = [&["alpha"], &["beta"], &["gamma", "delta"]];
    for (i, c) in d.conversations.iter().enumerate() {
        assert_eq!(c.session_id, format!("session_{i:06}"));
        assert_eq!(c.turns.len(), 1);
        let got = texts_of(c);
        assert!(records.iter().any(|r| got == *r), "{got:?}");
    }
    // Deterministic for a seed.
    let again = load(
        &file("random_pool.jsonl", DatasetKind::RandomPool),
        builtin(),
    )
    .unwrap();
    assert_eq!(d, again);
}

#[test]
fn random_pool_directory_merges_one_record_of_each_pool() {
    let d = load(&file("random_pool", DatasetKind::RandomPool), builtin()).unwrap();
    assert_eq!(d.conversations.len(), 4);
    for c in &d.conversations {
        let got = texts_of(c);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got[0] == "q1" || got[0] == "q2",
            "queries pool first: {got:?}"
        );
        assert_eq!(got[1], "p1", "then the passages pool");
    }
}

#[test]
fn mooncake_trace_loads_every_input_form() {
    let d = load(
        &file("mooncake_trace.jsonl", DatasetKind::MooncakeTrace),
        builtin(),
    )
    .unwrap();
    assert_eq!(d.default_sampling, Sampling::Sequential);
    let ids: Vec<&str> = d
        .conversations
        .iter()
        .map(|c| c.session_id.as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "session_000000",
            "session_000001",
            "s",
            "session_000002",
            "session_000003",
            "session_000004"
        ]
    );
    let c = &d.conversations;
    assert_eq!(c[0].turns[0].max_tokens, Some(10));
    assert_eq!(c[0].turns[0].timestamp_ms, Some(0.0));
    assert_eq!(
        c[2].turns,
        vec![
            Turn {
                timestamp_ms: Some(100.0),
                max_tokens: Some(5),
                ..Turn::text("Hello there")
            },
            Turn {
                timestamp_ms: Some(250.5),
                delay_ms: Some(30.0),
                ..Turn::text("And again")
            },
        ]
    );
    assert_eq!(
        c[3].turns,
        vec![Turn {
            content: Content::Messages(vec![json!({"role": "user", "content": "Hi"})]),
            timestamp_ms: Some(300.0),
            extra: obj(json!({
                "tools": [{"type": "function", "function": {"name": "f"}}],
                "top_p": 0.9
            })),
            ..Turn::default()
        }]
    );
    assert_eq!(
        c[4].turns,
        vec![Turn {
            content: Content::Raw(json!({"model": "m", "prompt": "raw"})),
            timestamp_ms: Some(400.0),
            max_tokens: Some(3),
            ..Turn::default()
        }]
    );
    // Without hash ids: a synthetic prompt of exactly input_length tokens.
    assert_eq!(builtin().count(&texts_of(&c[5])[0]), 20);
}

#[test]
fn equal_hash_ids_give_byte_equal_blocks() {
    let d = load(
        &file("mooncake_trace.jsonl", DatasetKind::MooncakeTrace),
        builtin(),
    )
    .unwrap();
    let a = texts_of(&d.conversations[0]).remove(0);
    let b = texts_of(&d.conversations[1]).remove(0);
    // Every block starts with o200k's separator token, `<|endoftext|>`.
    let blocks_a: Vec<&str> = a.split("<|endoftext|>").collect();
    let blocks_b: Vec<&str> = b.split("<|endoftext|>").collect();
    assert_eq!((blocks_a.len(), blocks_b.len()), (4, 4), "{a:?}\n{b:?}");
    assert_eq!(blocks_a[0], "");
    assert_eq!(blocks_a[1], blocks_b[1], "hash id 1");
    assert_eq!(blocks_a[2], blocks_b[2], "hash id 2");
    assert_ne!(blocks_a[3], blocks_b[3], "hash ids 3 and 4 differ");
    // Byte-equal prefix: separator, block 1, separator, block 2.
    let shared = 2 * "<|endoftext|>".len() + blocks_a[1].len() + blocks_a[2].len();
    assert_eq!(a.as_bytes()[..shared], b.as_bytes()[..shared]);
    assert!(shared > 40, "two 16-token blocks of text");
    // The same file loads the same blocks; another seed gives others.
    let again = load(
        &file("mooncake_trace.jsonl", DatasetKind::MooncakeTrace),
        builtin(),
    )
    .unwrap();
    assert_eq!(texts_of(&again.conversations[0])[0], a);
    let mut other = file("mooncake_trace.jsonl", DatasetKind::MooncakeTrace);
    other.seed = 7;
    let other = load(&other, builtin()).unwrap();
    assert_ne!(texts_of(&other.conversations[0])[0], a);
}

#[test]
fn block_prompts_follow_aiperf_sizes() {
    let mut p = BlockPrompts::new(builtin(), 16, 1, 0);
    // Last block partial: 2 × 16 > 20 → 16 + 4.
    let t = p.tokens(20, &[10, 11]).unwrap();
    assert_eq!(t.len(), 20);
    assert_eq!(t[0], 199_999, "a block starts with the separator");
    assert_eq!(t[16], 199_999);
    // Exact tile, and prefix-only with a fresh tail.
    assert_eq!(p.tokens(32, &[10, 12]).unwrap().len(), 32);
    let tail = p.tokens(40, &[10, 12]).unwrap();
    assert_eq!(tail.len(), 40);
    assert_eq!(tail[..16], t[..16], "hash id 10 is one block everywhere");
    // Hash id 11 was made at 4 tokens: asking it at 16 is an error.
    let e = p.tokens(48, &[11, 13, 14]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "hash id 11 is used at 16 tokens but was first used at 4 tokens; a hash id is one fixed \
         block (a corrupt trace, or a block size that disagrees with the trace's)"
    );
    // Too many ids for the length.
    let e = p.tokens(10, &[1, 2]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "2 hash ids of 16-token blocks do not fit input_length 10: the last block would have -6 \
         tokens (it must be 1..=16); check --prompt-input-tokens-block-size"
    );
    let e = p.tokens(0, &[1]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "input_length 0 and block size 16 must both be greater than 0"
    );
}

#[test]
fn raw_payload_file_and_directory() {
    let d = load(
        &file("raw_payload.jsonl", DatasetKind::RawPayload),
        builtin(),
    )
    .unwrap();
    assert_eq!(d.conversations.len(), 2);
    assert_eq!(
        d.conversations[1].turns[0],
        Turn {
            content: Content::Raw(
                json!({"messages": [{"role": "user", "content": "two"}], "stream": true})
            ),
            role: Some("user".into()),
            ..Turn::default()
        }
    );
    let d = load(&file("raw_payload", DatasetKind::RawPayload), builtin()).unwrap();
    let shape: Vec<(String, usize)> = d
        .conversations
        .iter()
        .map(|c| (c.session_id.clone(), c.turns.len()))
        .collect();
    assert_eq!(
        shape,
        [("session_000000".into(), 2), ("session_000001".into(), 1)]
    );
    assert_eq!(
        d.conversations[0].turns[1].content,
        Content::Raw(json!({"messages": [{"role": "user", "content": "a2"}]}))
    );
}

#[test]
fn inputs_json_replays_sessions_verbatim() {
    let d = load(&file("inputs.json", DatasetKind::InputsJson), builtin()).unwrap();
    let raw = |v: Value| Turn {
        content: Content::Raw(v),
        role: Some("user".into()),
        ..Turn::default()
    };
    assert_eq!(
        d.conversations,
        vec![
            conv(
                "a",
                vec![
                    raw(
                        json!({"messages": [{"role": "user", "content": "first"}], "model": "m", "stream": false})
                    ),
                    raw(json!({"messages": [{"role": "user", "content": "second"}], "model": "m"})),
                ]
            ),
            conv(
                "b",
                vec![raw(
                    json!({"prompt": "third", "model": "m", "max_tokens": 7})
                )]
            ),
        ]
    );
}

#[test]
fn inputs_json_reads_ringperfs_own_inputs_json() {
    use ringperf_wire::endpoint::{EndpointKind, PayloadParams};
    let synthetic = crate::workload::synthetic::build(
        &crate::workload::SyntheticParams {
            isl_mean: 12,
            num_dataset_entries: 3,
            seed: Some(5),
            ..Default::default()
        },
        builtin(),
    );
    let params = PayloadParams {
        model: "m".into(),
        streaming: true,
        use_legacy_max_tokens: false,
        per_chunk_usage: false,
        extra_inputs: Map::new(),
        use_server_token_count: false,
        template: None,
    };
    let prepared = crate::workload::prepare(synthetic, EndpointKind::Chat, &params, builtin());
    let written = crate::workload::inputs_json(&prepared, EndpointKind::Chat, &params);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("inputs.json");
    std::fs::write(&p, serde_json::to_vec_pretty(&written).unwrap()).unwrap();
    let d = load(
        &spec(Source::File {
            path: p,
            kind: None,
        }),
        builtin(),
    )
    .unwrap();
    assert_eq!(d.conversations.len(), 3);
    for (c, w) in d
        .conversations
        .iter()
        .zip(written["data"].as_array().unwrap())
    {
        assert_eq!(c.session_id, w["session_id"].as_str().unwrap());
        assert_eq!(c.turns[0].content, Content::Raw(w["payloads"][0].clone()));
    }
}

#[test]
fn sharegpt_pairs_and_filters_as_aiperf() {
    let d = load(
        &spec(Source::ShareGpt {
            input_file: Some(data("sharegpt.json")),
        }),
        builtin(),
    )
    .unwrap();
    assert_eq!(d.default_sampling, Sampling::Sequential);
    let prompts: Vec<Vec<String>> = d.conversations.iter().map(texts_of).collect();
    assert_eq!(
        prompts,
        vec![
            vec![
                "Tell me a short story about a brave little toaster.".to_string(),
                "And then what happened next?".to_string()
            ],
            vec!["What is the capital city of France?".to_string()],
        ]
    );
    let reply = "Once upon a time a toaster crossed the kitchen to save the bread.";
    assert_eq!(
        d.conversations[0].turns[0].max_tokens,
        Some(builtin().count(reply) as u32)
    );
    assert_eq!(d.conversations[1].session_id, "session_000001");
}

#[test]
fn sharegpt_missing_says_where_it_looked_and_how_to_get_it() {
    let e = sharegpt::locate(Some(Path::new("/nonexistent/sg.json"))).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("/nonexistent/sg.json"), "{msg}");
    assert!(msg.contains("curl -L -o"), "{msg}");
    assert!(msg.contains("huggingface.co"), "{msg}");
    let looked = sharegpt::candidates(None);
    assert_eq!(
        looked[0],
        Path::new(".cache/aiperf/datasets/ShareGPT_V3_unfiltered_cleaned_split.json")
    );
}

#[test]
fn ignore_trace_delays_strips_timestamps_and_delays() {
    let mut s = file("mooncake_trace.jsonl", DatasetKind::MooncakeTrace);
    s.ignore_trace_delays = true;
    let d = load(&s, builtin()).unwrap();
    assert!(
        d.conversations
            .iter()
            .flat_map(|c| &c.turns)
            .all(|t| t.timestamp_ms.is_none() && t.delay_ms.is_none())
    );
}

#[test]
fn detection_as_aiperf() {
    let kind = |name: &str| detect(&data(name));
    assert_eq!(kind("single_turn.jsonl"), Ok(DatasetKind::SingleTurn));
    assert_eq!(kind("multi_turn.jsonl"), Ok(DatasetKind::MultiTurn));
    assert_eq!(kind("mooncake_trace.jsonl"), Ok(DatasetKind::MooncakeTrace));
    assert_eq!(kind("inputs.json"), Ok(DatasetKind::InputsJson));
    assert_eq!(kind("random_pool"), Ok(DatasetKind::RandomPool));
    assert_eq!(kind("raw_payload"), Ok(DatasetKind::RawPayload));
    // A chat body is both a raw payload and a `messages` trace row: AIPerf asks for the type.
    let e = kind("raw_payload.jsonl").unwrap_err();
    assert!(
        e.to_string().contains("mooncake_trace and raw_payload"),
        "{e}"
    );
    assert!(e.to_string().contains("--custom-dataset-type"), "{e}");
}

#[test]
fn kinds_parse_both_spellings() {
    for k in DatasetKind::ALL {
        assert_eq!(DatasetKind::parse(k.as_str()), Some(k));
        assert_eq!(DatasetKind::parse(&k.as_str().replace('_', "-")), Some(k));
        assert!(AIPERF_CUSTOM_TYPES.contains(&k.as_str()));
    }
    assert_eq!(DatasetKind::parse("dag-jsonl"), Some(DatasetKind::DagJsonl));
    // SPEED-Bench's formats, each by its own name.
    let qa = DatasetKind::parse("speed_bench_qa").unwrap();
    assert_eq!(qa.as_str(), "speed_bench_qa");
    assert_eq!(
        DatasetKind::parse("speed-bench-throughput-8k-mixed").map(DatasetKind::as_str),
        Some("speed_bench_throughput_8k_mixed")
    );
    assert_eq!(DatasetKind::parse("speed_bench_quiz"), None);
}

/// Writes `body` as `data.jsonl` (or `name`) and loads it as `kind`.
fn load_text(name: &str, body: &str, kind: DatasetKind) -> Result<Dataset, LoadError> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, body).unwrap();
    load(
        &spec(Source::File {
            path: p,
            kind: Some(kind),
        }),
        builtin(),
    )
}

/// The error's text after the directory: `data.jsonl:2: field "text": ...`.
fn bad(name: &str, body: &str, kind: DatasetKind) -> String {
    let e = load_text(name, body, kind).expect_err("bad input is refused");
    let full = e.to_string();
    let at = full.find(name).unwrap_or(0);
    full[at..].to_string()
}

/// Each case's file, loaded as `data.jsonl` of its kind, fails with an error that starts with
/// the expected text (file, line, field and why).
fn assert_bad_inputs(cases: &[(&str, DatasetKind, &str)]) {
    for (body, kind, want) in cases {
        let got = bad("data.jsonl", body, *kind);
        assert!(
            got.starts_with(want),
            "{kind}: {body:?}\n got: {got}\nwant: {want}"
        );
    }
}

#[test]
fn malformed_lines_and_unknown_fields_name_file_line_and_field() {
    use DatasetKind::*;
    assert_bad_inputs(&[
        // Malformed line.
        (
            "{\"text\": \"a\"}\n{\"text\": \n",
            SingleTurn,
            "data.jsonl:2: invalid JSON",
        ),
        (
            "[1, 2]\n",
            SingleTurn,
            "data.jsonl:1: expected each line to be a JSON object",
        ),
        // Unknown field.
        (
            "{\"text\": \"a\", \"txt\": \"b\"}\n",
            SingleTurn,
            "data.jsonl:1: field \"txt\": unknown field",
        ),
        (
            "{\"turns\": [{\"text\": \"a\", \"oops\": 1}]}\n",
            MultiTurn,
            "data.jsonl:1: field \"turns[0].oops\": unknown field",
        ),
        (
            "{\"input_length\": 5, \"prio\": 1}\n",
            MooncakeTrace,
            "data.jsonl:1: field \"prio\": unknown field",
        ),
    ]);
}

#[test]
fn missing_and_mistyped_fields_name_file_line_and_field() {
    use DatasetKind::*;
    assert_bad_inputs(&[
        // Missing required field.
        (
            "{\"text\": \"a\"}\n\n{\"role\": \"user\"}\n",
            SingleTurn,
            "data.jsonl:3: field \"text\": required but missing",
        ),
        (
            "{\"session_id\": \"x\"}\n",
            MultiTurn,
            "data.jsonl:1: field \"turns\": required but missing",
        ),
        (
            "{\"timestamp\": 5}\n",
            MooncakeTrace,
            "data.jsonl:1: field \"input_length\": required but missing",
        ),
        (
            "{\"model\": \"m\"}\n",
            RawPayload,
            "data.jsonl:1: field \"messages\": required but missing",
        ),
        // Wrong type.
        (
            "{\"text\": 17}\n",
            SingleTurn,
            "data.jsonl:1: field \"text\": expected a string",
        ),
        (
            "{\"text\": \"a\", \"output_length\": \"ten\"}\n",
            SingleTurn,
            "data.jsonl:1: field \"output_length\": expected an integer",
        ),
        (
            "{\"input_length\": 5, \"hash_ids\": [1, \"x\"]}\n",
            MooncakeTrace,
            "data.jsonl:1: field \"hash_ids[1]\": expected an integer",
        ),
        (
            "{\"turns\": \"hi\"}\n",
            MultiTurn,
            "data.jsonl:1: field \"turns\": expected a list",
        ),
    ]);
}

#[test]
fn empty_files_backward_timestamps_and_media_name_file_line_and_field() {
    use DatasetKind::*;
    assert_bad_inputs(&[
        // Empty file.
        ("", SingleTurn, "data.jsonl: no records"),
        ("\n  \n", MooncakeTrace, "data.jsonl: no records"),
        // Timestamps going backwards.
        (
            "{\"timestamp\": 10, \"input_length\": 5}\n{\"timestamp\": 9, \"input_length\": 5}\n",
            MooncakeTrace,
            "data.jsonl:2: field \"timestamp\": timestamp 9 ms is earlier than the previous one (10 ms)",
        ),
        (
            "{\"turns\": [{\"text\": \"a\", \"timestamp\": 5}, {\"text\": \"b\", \"timestamp\": 1}]}\n",
            MultiTurn,
            "data.jsonl:1: field \"timestamp\": timestamp 1 ms",
        ),
        // Image, audio, video.
        (
            "{\"text\": \"a\", \"image\": \"cat.png\"}\n",
            SingleTurn,
            "data.jsonl:1: field \"image\": \"cat.png\" is not a URL, not encoded, and no such file",
        ),
        (
            "{\"text\": \"a\", \"image\": \"data:image/png;base64,x\", \"images\": []}\n",
            SingleTurn,
            "data.jsonl:1: field \"images\": \"image\" and \"images\" cannot be set together",
        ),
        (
            "{\"text\": \"a\", \"images\": [\"https://\"]}\n",
            SingleTurn,
            "data.jsonl:1: field \"images[0]\": a valid URL must have both a scheme and a host",
        ),
        // `image_uuids` as AIPerf's `SingleTurn` checks it.
        (
            "{\"text\": \"a\", \"image\": \"data:image/png;base64,x\", \"image_uuids\": [\"u\"]}\n",
            SingleTurn,
            "data.jsonl:1: field \"image_uuids\": cannot be used with the singular \"image\" field",
        ),
        (
            "{\"text\": \"a\", \"images\": [\"data:image/png;base64,x\"], \"image_uuids\": [\"u\", \"v\"]}\n",
            SingleTurn,
            "data.jsonl:1: field \"image_uuids\": length (2) must match \"images\" length (1)",
        ),
        (
            "{\"turns\": [{\"text\": \"a\"}]}\n{\"turns\": [{\"text\": \"a\", \"image_uuids\": [\"u\", \"\"]}]}\n",
            MultiTurn,
            "data.jsonl:2: field \"turns[0].image_uuids\": must not contain empty strings",
        ),
        (
            "{\"text\": \"a\", \"images\": [\"\", \"data:image/png;base64,x\"]}\n",
            SingleTurn,
            "data.jsonl:1: field \"images[0]\": \"\" is not a URL",
        ),
        (
            "{\"text\": \"a\", \"image_uuids\": [\"u\"]}\n",
            RandomPool,
            "data.jsonl:1: field \"image_uuids\": unknown field",
        ),
        (
            "{\"text\": \"a\"}\n{\"turns\": [{\"text\": \"a\", \"audios\": []}]}\n",
            MultiTurn,
            "data.jsonl:1: field \"text\": unknown field",
        ),
        (
            "{\"turns\": [{\"text\": \"a\"}]}\n{\"turns\": [{\"text\": \"a\", \"audios\": [7]}]}\n",
            MultiTurn,
            "data.jsonl:2: field \"turns[0].audios[0]\": expected a string",
        ),
        (
            "{\"text\": \"a\"}\n{\"videos\": [\"https://h/v.mp4\", \"v.mp4\"]}\n",
            RandomPool,
            "data.jsonl:2: field \"videos[1]\": \"v.mp4\" is not a URL, not encoded, and no such file",
        ),
        (
            "{\"image\": 3}\n",
            RandomPool,
            "data.jsonl:1: field \"image\": expected a string",
        ),
        (
            "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": {\"url\": \"x\"}}]}]}\n",
            MooncakeTrace,
            "data.jsonl:1: field \"messages[0].content[0]\": image, audio and video",
        ),
    ]);
}

#[test]
fn format_rule_breaks_name_file_line_and_field() {
    use DatasetKind::*;
    assert_bad_inputs(&[
        // Format rules.
        (
            "{\"text\": \"a\", \"texts\": [\"b\"]}\n",
            SingleTurn,
            "data.jsonl:1: field \"texts\": \"text\" and \"texts\" cannot be set together",
        ),
        (
            "{\"text\": \"a\", \"output_length\": 0}\n",
            SingleTurn,
            "data.jsonl:1: field \"output_length\": must be greater than 0",
        ),
        (
            "{\"input_length\": 5, \"text_input\": \"x\"}\n",
            MooncakeTrace,
            "data.jsonl:1: field \"text_input\": \"input_length\" and \"text_input\" cannot be given together",
        ),
        (
            "{\"text_input\": \"x\", \"hash_ids\": [1]}\n",
            MooncakeTrace,
            "data.jsonl:1: field \"hash_ids\": only allowed with \"input_length\"",
        ),
        (
            "{\"text_input\": \"x\", \"tools\": [{}]}\n",
            MooncakeTrace,
            "data.jsonl:1: field \"tools\": only allowed with \"messages\"",
        ),
        (
            "{\"messages\": [{\"content\": \"x\"}]}\n",
            MooncakeTrace,
            "data.jsonl:1: field \"messages[0].role\": required but missing",
        ),
        (
            "{\"session_id\": \"s\", \"payload\": {\"a\": 1}}\n{\"session_id\": \"s\", \"text_input\": \"x\"}\n",
            MooncakeTrace,
            "data.jsonl:2: field \"text_input\": session \"s\" mixes",
        ),
        (
            "{\"input_length\": 10, \"hash_ids\": [1, 2]}\n",
            MooncakeTrace,
            "data.jsonl:1: field \"hash_ids\": 2 hash ids of 16-token blocks do not fit input_length 10",
        ),
        (
            "{\"type\": \"multi_turn\", \"text\": \"a\"}\n",
            SingleTurn,
            "data.jsonl:1: field \"type\": is \"multi_turn\", expected \"single_turn\"",
        ),
    ]);
}

#[test]
fn bad_json_documents_name_the_line_and_field() {
    use DatasetKind::InputsJson;
    let cases: &[(&str, &str)] = &[
        (
            "{\"data\": [\n {\"session_id\": \"a\", \"payloads\": [{}]},\n {\"session_id\": \"a\", \"payloads\": [{}]}\n]}",
            "inputs.json:3: field \"data[1].session_id\": \"a\" is declared twice",
        ),
        (
            "{\"data\": [{\"payloads\": [{}]}]}",
            "inputs.json:1: field \"data[0].session_id\": required but missing",
        ),
        (
            "{\"data\": [{\"session_id\": \"a\", \"payloads\": []}]}",
            "inputs.json:1: field \"data[0].payloads\": must hold at least one payload",
        ),
        (
            "{\"data\": [{\"session_id\": \"a\", \"payloads\": [3]}]}",
            "inputs.json:1: field \"data[0].payloads[0]\": expected a JSON object",
        ),
        (
            "{\"data\": [], \"extra\": 1}",
            "inputs.json:1: field \"extra\": unknown field",
        ),
        (
            "{\"sessions\": []}",
            "inputs.json:1: field \"sessions\": unknown field",
        ),
        ("{}", "inputs.json:1: field \"data\": required but missing"),
        ("{\"data\": []}", "inputs.json: no records"),
        ("", "inputs.json: no records"),
        (
            "{\"data\": [\n{\"session_id\": \"a\",\n \"payloads\": [{]}]}",
            "inputs.json:3: invalid JSON",
        ),
    ];
    for (body, want) in cases {
        let got = bad("inputs.json", body, InputsJson);
        assert!(got.starts_with(want), "{body:?}\n got: {got}\nwant: {want}");
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sg.json");
    std::fs::write(&p, "[\n{\"conversations\": 3}\n]").unwrap();
    let e = load(
        &spec(Source::ShareGpt {
            input_file: Some(p),
        }),
        builtin(),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .ends_with("sg.json:2: field \"[0].conversations\": expected a list"),
        "{e}"
    );
}

#[test]
fn missing_files_and_wrong_shapes_are_errors() {
    let e = load(&file("nope.jsonl", DatasetKind::SingleTurn), builtin()).unwrap_err();
    assert!(matches!(e.kind, LoadErrorKind::NotFound { .. }), "{e}");
    let e = load(&file("random_pool", DatasetKind::SingleTurn), builtin()).unwrap_err();
    assert!(e.to_string().contains("is a directory"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let e = load(
        &spec(Source::File {
            path: dir.path().to_path_buf(),
            kind: Some(DatasetKind::RandomPool),
        }),
        builtin(),
    )
    .unwrap_err();
    assert_eq!(e.kind, LoadErrorKind::Empty);
}

#[test]
fn a_long_file_is_streamed_line_by_line() {
    // 20,000 rows with one bad row near the end: the error names it, whatever precedes it.
    let mut body = String::new();
    for i in 0..20_000 {
        body.push_str(&format!(
            "{{\"text\": \"row {i}\", \"session_id\": \"s{}\"}}\n",
            i % 7
        ));
    }
    body.push_str("{\"text\": 1}\n");
    let got = bad("big.jsonl", &body, DatasetKind::SingleTurn);
    assert!(got.starts_with("big.jsonl:20001: field \"text\""), "{got}");
    body.truncate(body.len() - "{\"text\": 1}\n".len());
    let d = load_text("big.jsonl", &body, DatasetKind::SingleTurn).unwrap();
    assert_eq!(d.conversations.len(), 7);
    assert_eq!(d.turn_count(), 20_000);
}

/// AIPerf strips repeated images in `single_turn` files only: `multi_turn` with
/// `--uuid-and-strip` is refused, naming the file.
#[test]
fn uuid_and_strip_refuses_multi_turn() {
    let mut s = file("multi_turn.jsonl", DatasetKind::MultiTurn);
    assert!(load(&s, builtin()).is_ok());
    s.uuid_and_strip = true;
    let err = load(&s, builtin()).unwrap_err().to_string();
    assert!(
        err.contains("multi_turn.jsonl: ")
            && err.contains("--uuid-and-strip is not supported with multi_turn"),
        "{err}"
    );
}

#[test]
fn a_gzipped_file_loads_as_its_plain_text_by_magic_bytes_not_by_name() {
    let plain = load(&file("multi_turn.jsonl", DatasetKind::MultiTurn), builtin()).unwrap();
    let gz = load(
        &file("gzip/multi_turn.jsonl.gz", DatasetKind::MultiTurn),
        builtin(),
    )
    .unwrap();
    assert_eq!(gz.conversations, plain.conversations);
    // No `.gz` suffix: AIPerf sniffs the first two bytes, and so does the type detection.
    assert_eq!(
        detect(&data("gzip/single_turn.data")),
        Ok(DatasetKind::SingleTurn)
    );
    let plain = load(
        &file("single_turn.jsonl", DatasetKind::SingleTurn),
        builtin(),
    )
    .unwrap();
    let gz = load(
        &file("gzip/single_turn.data", DatasetKind::SingleTurn),
        builtin(),
    )
    .unwrap();
    assert_eq!(gz.conversations, plain.conversations);
}

#[test]
fn a_truncated_gzip_is_an_error_with_pythons_message() {
    let e = load(
        &file("gzip/truncated.jsonl.gz", DatasetKind::MultiTurn),
        builtin(),
    )
    .unwrap_err();
    assert_eq!(
        e.kind,
        LoadErrorKind::Io(
            "Compressed file ended before the end-of-stream marker was reached".into()
        ),
        "{e}"
    );
}

#[test]
fn a_gzipped_trace_reads_its_rows_again_from_the_decompressed_text() {
    let plain = load(
        &file("mooncake_trace.jsonl", DatasetKind::MooncakeTrace),
        builtin(),
    )
    .unwrap();
    let mut gz = file("gzip/mooncake_trace.jsonl.gz", DatasetKind::MooncakeTrace);
    // The blocks are scoped by the hash of the file's bytes (compressed ones, as AIPerf hashes
    // them): scoped by the plain file's, the gzipped copy must give the plain file's dataset.
    gz.hash_path = Some(data("mooncake_trace.jsonl"));
    let gz = load(&gz, builtin()).unwrap();
    assert_eq!(gz.conversations, plain.conversations);
}
