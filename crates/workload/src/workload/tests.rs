//! Dataset building: exact ISL, OSL sampling, determinism, body shape and `inputs.json`.

use serde_json::Value;

use super::*;
use ringperf_wire::conversation::{Content, Conversation, Dataset, Turn};
use ringperf_wire::endpoint::{EndpointKind, PayloadParams};

fn params(seed: Option<u64>) -> SyntheticParams {
    SyntheticParams {
        isl_mean: 100,
        num_dataset_entries: 8,
        seed,
        ..SyntheticParams::default()
    }
}

fn payload(streaming: bool) -> PayloadParams {
    PayloadParams {
        model: "tiny-llm".into(),
        streaming,
        ..Default::default()
    }
}

fn prompt_of(c: &Conversation) -> &str {
    match &c.turns[0].content {
        Content::Texts(t) => &t[0],
        other => panic!("not a text turn: {other:?}"),
    }
}

#[test]
fn defaults_match_aiperf() {
    let p = SyntheticParams::default();
    assert_eq!((p.isl_mean, p.isl_stddev, p.osl_mean), (550, 0.0, None));
    assert_eq!(p.num_dataset_entries, 100);
}

#[test]
fn chat_dataset_has_exact_isl_and_wire_bodies() {
    let tok = Tokenizer::builtin();
    let mut p = params(Some(11));
    p.osl_mean = Some(16);
    let ds = synthetic::build(&p, &tok);
    assert_eq!(ds.conversations.len(), 8);
    let prepared = prepare(ds.clone(), EndpointKind::Chat, &payload(true), &tok);
    for (c, pc) in ds.conversations.iter().zip(&prepared.conversations) {
        assert_eq!(c.turns.len(), 1);
        assert_eq!(tok.count(prompt_of(c)), 100);
        let t = &pc.turns[0];
        // One user message: the wire text is the prompt itself.
        assert_eq!(t.isl_tokens, Some(100));
        assert_eq!(t.max_tokens, Some(16));
        assert!(t.source.is_none(), "a single turn needs no history");
        let body: Value = serde_json::from_slice(t.body.as_ref().unwrap()).unwrap();
        assert_eq!(body["messages"][0]["content"].as_str(), Some(prompt_of(c)));
        assert_eq!(body["max_completion_tokens"], 16);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert!(
            uuid::Uuid::parse_str(&c.session_id).is_ok(),
            "{}",
            c.session_id
        );
    }
    let ids: std::collections::HashSet<_> =
        ds.conversations.iter().map(|c| &c.session_id).collect();
    assert_eq!(ids.len(), 8);
}

#[test]
fn completions_dataset_without_osl() {
    let tok = Tokenizer::builtin();
    let ds = synthetic::build(&params(Some(5)), &tok);
    let prepared = prepare(ds.clone(), EndpointKind::Completions, &payload(false), &tok);
    for (c, pc) in ds.conversations.iter().zip(&prepared.conversations) {
        let t = &pc.turns[0];
        assert_eq!(t.max_tokens, None);
        let body: Value = serde_json::from_slice(t.body.as_ref().unwrap()).unwrap();
        assert_eq!(body["prompt"].as_str(), Some(prompt_of(c)));
        assert!(body.get("max_tokens").is_none());
        assert!(body.get("stream_options").is_none());
        assert_eq!(t.isl_tokens, Some(100));
    }
}

#[test]
fn seeded_datasets_repeat() {
    let tok = Tokenizer::builtin();
    let a = synthetic::build(&params(Some(99)), &tok);
    let b = synthetic::build(&params(Some(99)), &tok);
    let c = synthetic::build(&params(Some(100)), &tok);
    assert_eq!(a, b);
    assert_ne!(
        prompt_of(&a.conversations[0]),
        prompt_of(&c.conversations[0])
    );
    assert_ne!(a.conversations[0].session_id, c.conversations[0].session_id);
    // Unseeded runs differ.
    let d = synthetic::build(&params(None), &tok);
    let e = synthetic::build(&params(None), &tok);
    assert_ne!(d.conversations[0].session_id, e.conversations[0].session_id);
}

#[test]
fn stddev_spreads_lengths_and_osl() {
    let tok = Tokenizer::builtin();
    let mut p = params(Some(3));
    p.num_dataset_entries = 40;
    p.isl_mean = 60;
    p.isl_stddev = 15.0;
    p.osl_mean = Some(30);
    p.osl_stddev = 5.0;
    let ds = synthetic::build(&p, &tok);
    let prepared = prepare(ds.clone(), EndpointKind::Chat, &payload(false), &tok);
    let isl: Vec<u64> = prepared
        .conversations
        .iter()
        .map(|c| c.turns[0].isl_tokens.unwrap())
        .collect();
    for (c, &n) in ds.conversations.iter().zip(&isl) {
        assert_eq!(tok.count(prompt_of(c)) as u64, n);
    }
    assert!(isl.iter().any(|&n| n != isl[0]), "{isl:?}");
    assert!(isl.iter().all(|&n| n >= 1));
    let mean = isl.iter().sum::<u64>() as f64 / isl.len() as f64;
    assert!((mean - 60.5).abs() < 8.0, "mean {mean}");
    let osl: Vec<u32> = ds
        .conversations
        .iter()
        .filter_map(|c| c.turns[0].max_tokens)
        .collect();
    assert_eq!(osl.len(), 40);
    assert!(osl.iter().any(|&n| n != osl[0]));
}

#[test]
fn child_streams_are_independent_and_stable() {
    assert_eq!(derive_seed(1, "a"), derive_seed(1, "a"));
    assert_ne!(derive_seed(1, "a"), derive_seed(1, "b"));
    assert_ne!(derive_seed(1, "a"), derive_seed(2, "a"));
}

#[test]
fn inputs_json_shape() {
    let tok = Tokenizer::builtin();
    let mut p = params(Some(1));
    p.num_dataset_entries = 2;
    p.isl_mean = 5;
    p.osl_mean = Some(4);
    let ds = synthetic::build(&p, &tok);
    let params = payload(true);
    let prepared = prepare(ds.clone(), EndpointKind::Chat, &params, &tok);
    let v = inputs_json(&prepared, EndpointKind::Chat, &params);
    let text = serde_json::to_string(&v).unwrap();
    assert!(text.starts_with(r#"{"data":[{"session_id":""#), "{text}");
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    for (d, c) in data.iter().zip(&prepared.conversations) {
        assert_eq!(d["session_id"].as_str(), Some(c.session_id.as_str()));
        let payloads = d["payloads"].as_array().unwrap();
        assert_eq!(payloads.len(), 1);
        // The body keeps the wire key order.
        assert_eq!(
            &serde_json::to_vec(&payloads[0]).unwrap(),
            c.turns[0].body.as_ref().unwrap()
        );
        let keys: Vec<&str> = payloads[0]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "messages",
                "model",
                "stream",
                "max_completion_tokens",
                "stream_options"
            ]
        );
    }
    assert_eq!(
        inputs_json(&Prepared::default(), EndpointKind::Chat, &params),
        serde_json::json!({"data": []})
    );
}

#[test]
fn later_chat_turns_wait_for_the_replies_and_inputs_json_sends_each_alone() {
    let tok = Tokenizer::builtin();
    let conversation = Conversation {
        session_id: "s".into(),
        system: Some("be brief".into()),
        turns: vec![
            Turn::text("first question"),
            Turn {
                max_tokens: Some(7),
                ..Turn::text("second question")
            },
        ],
        ..Conversation::default()
    };
    let ds = Dataset {
        conversations: vec![conversation],
        ..Dataset::default()
    };
    let params = payload(false);
    let prepared = prepare(ds, EndpointKind::Chat, &params, &tok);
    let turns = &prepared.conversations[0].turns;
    // The first turn is encoded now, with the system message; its ISL counts both texts.
    let first: Value = serde_json::from_slice(turns[0].body.as_ref().unwrap()).unwrap();
    assert_eq!(
        first["messages"],
        serde_json::json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "first question"}
        ])
    );
    assert_eq!(
        turns[0].isl_tokens,
        Some(tok.count("be brief first question") as u64)
    );
    // The second needs the first reply: no body, no ISL yet, its source kept.
    assert!(turns[1].body.is_none() && turns[1].isl_tokens.is_none());
    assert!(turns[1].source.is_some() && turns[0].source.is_some());
    // inputs.json shows each turn alone (AIPerf formats `turns=[turn]`).
    let v = inputs_json(&prepared, EndpointKind::Chat, &params);
    let second = &v["data"][0]["payloads"][1];
    assert_eq!(
        second["messages"],
        serde_json::json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "second question"}
        ])
    );
    assert_eq!(second["max_completion_tokens"], 7);
    // Completions never carry history: every turn is encoded up front.
    let ds = Dataset {
        conversations: vec![Conversation {
            turns: vec![Turn::text("a"), Turn::text("b")],
            ..Conversation::default()
        }],
        ..Dataset::default()
    };
    let prepared = prepare(ds, EndpointKind::Completions, &params, &tok);
    assert!(
        prepared.conversations[0]
            .turns
            .iter()
            .all(|t| t.body.is_some())
    );
}
