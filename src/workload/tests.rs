//! Dataset building: exact ISL, OSL sampling, determinism, body shape and `inputs.json`.

use super::*;

fn params(seed: Option<u64>) -> WorkloadParams {
    WorkloadParams {
        isl_mean: 100,
        num_dataset_entries: 8,
        seed,
        payload: PayloadParams {
            model: "tiny-llm".into(),
            streaming: true,
            ..Default::default()
        },
        ..WorkloadParams::default()
    }
}

#[test]
fn defaults_match_aiperf() {
    let p = WorkloadParams::default();
    assert_eq!((p.isl_mean, p.isl_stddev, p.osl_mean), (550, 0.0, None));
    assert_eq!(p.num_dataset_entries, 100);
    assert_eq!(p.kind, EndpointKind::Chat);
}

#[test]
fn chat_dataset_has_exact_isl_and_wire_bodies() {
    let tok = Tokenizer::builtin();
    let mut p = params(Some(11));
    p.osl_mean = Some(16);
    let ds = build_dataset(&p, &tok);
    assert_eq!(ds.entries.len(), 8);
    for e in &ds.entries {
        assert_eq!(tok.count(&e.prompt), 100);
        // One user message: the wire text is the prompt itself.
        assert_eq!(e.isl_tokens, 100);
        assert_eq!(e.max_tokens, Some(16));
        let body: Value = serde_json::from_slice(&e.payload).unwrap();
        assert_eq!(
            body["messages"][0]["content"].as_str(),
            Some(e.prompt.as_str())
        );
        assert_eq!(body["max_completion_tokens"], 16);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert!(uuid::Uuid::parse_str(&e.id).is_ok(), "{}", e.id);
    }
    let ids: std::collections::HashSet<_> = ds.entries.iter().map(|e| &e.id).collect();
    assert_eq!(ids.len(), 8);
}

#[test]
fn completions_dataset_without_osl() {
    let tok = Tokenizer::builtin();
    let mut p = params(Some(5));
    p.kind = EndpointKind::Completions;
    p.payload.streaming = false;
    let ds = build_dataset(&p, &tok);
    for e in &ds.entries {
        assert_eq!(e.max_tokens, None);
        let body: Value = serde_json::from_slice(&e.payload).unwrap();
        assert_eq!(body["prompt"].as_str(), Some(e.prompt.as_str()));
        assert!(body.get("max_tokens").is_none());
        assert!(body.get("stream_options").is_none());
        assert_eq!(e.isl_tokens, 100);
    }
}

#[test]
fn seeded_datasets_repeat() {
    let tok = Tokenizer::builtin();
    let a = build_dataset(&params(Some(99)), &tok);
    let b = build_dataset(&params(Some(99)), &tok);
    let c = build_dataset(&params(Some(100)), &tok);
    assert_eq!(a.entries, b.entries);
    assert_ne!(a.entries[0].prompt, c.entries[0].prompt);
    assert_ne!(a.entries[0].id, c.entries[0].id);
    // Unseeded runs differ.
    let d = build_dataset(&params(None), &tok);
    let e = build_dataset(&params(None), &tok);
    assert_ne!(d.entries[0].id, e.entries[0].id);
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
    let ds = build_dataset(&p, &tok);
    let isl: Vec<u64> = ds.entries.iter().map(|e| e.isl_tokens).collect();
    for e in &ds.entries {
        assert_eq!(tok.count(&e.prompt) as u64, e.isl_tokens);
    }
    assert!(isl.iter().any(|&n| n != isl[0]), "{isl:?}");
    assert!(isl.iter().all(|&n| n >= 1));
    let mean = isl.iter().sum::<u64>() as f64 / isl.len() as f64;
    assert!((mean - 60.5).abs() < 8.0, "mean {mean}");
    let osl: Vec<u32> = ds.entries.iter().filter_map(|e| e.max_tokens).collect();
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
    let ds = build_dataset(&p, &tok);
    let v = inputs_json(&ds);
    let text = serde_json::to_string(&v).unwrap();
    assert!(text.starts_with(r#"{"data":[{"session_id":""#), "{text}");
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    for (d, e) in data.iter().zip(&ds.entries) {
        assert_eq!(d["session_id"].as_str(), Some(e.id.as_str()));
        let payloads = d["payloads"].as_array().unwrap();
        assert_eq!(payloads.len(), 1);
        // The body keeps the wire key order.
        assert_eq!(serde_json::to_vec(&payloads[0]).unwrap(), e.payload);
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
        inputs_json(&Dataset::default()),
        serde_json::json!({"data": []})
    );
}
