//! Every endpoint type's body against a hand-written expectation taken from AIPerf 0.13's
//! `format_payload` (key order is its dict insertion order), its ISL texts, and its parsing of
//! hand-written responses, whole and streamed.

use serde_json::{Map, Value};

use crate::conversation::{Content, Turn};
use crate::endpoint::EndpointKind as K;
use crate::endpoint::payload::{PayloadParams, TurnBody, build_turn, payload_texts};
use crate::endpoint::response::{NO_CONTENT_ERROR_KIND, ParsedResponse, parse_record};
use crate::record::Usage;
use crate::record::testing::{json_record, sse_record};

fn params(streaming: bool, extras: &str) -> PayloadParams {
    let extra: Value = serde_json::from_str(extras).unwrap();
    PayloadParams {
        model: "m".into(),
        streaming,
        extra_inputs: extra.as_object().cloned().unwrap_or_default(),
        ..PayloadParams::default()
    }
}

fn body(kind: K, p: &PayloadParams, turn: &Turn, system: Option<&str>) -> String {
    let parts = TurnBody {
        system,
        user_context: None,
        history: &[],
        turn,
        previous_response_id: None,
    };
    String::from_utf8(build_turn(kind, p, &parts)).unwrap()
}

fn texts(list: &[&str], max_tokens: Option<u32>) -> Turn {
    Turn {
        content: Content::Texts(list.iter().map(|s| s.to_string()).collect()),
        max_tokens,
        ..Turn::default()
    }
}

fn rankings() -> Turn {
    Turn {
        content: Content::Rankings {
            query: "what is x".into(),
            passages: vec!["x is a".into(), "y is b".into()],
        },
        max_tokens: Some(9),
        ..Turn::default()
    }
}

fn parse(kind: K, rec: &crate::record::RawRecord) -> ParsedResponse {
    let mut out = ParsedResponse::default();
    parse_record(kind, rec, &mut out);
    out
}

#[test]
fn embeddings_bodies() {
    let p = params(true, r#"{"encoding_format":"float","model":"other"}"#);
    let t = texts(&["a b", "", "c"], Some(5));
    // `model`, `input` (non-empty texts), extras on top; no stream, no max_tokens.
    let want = r#"{"model":"other","input":["a b","c"],"encoding_format":"float"}"#;
    assert_eq!(body(K::Embeddings, &p, &t, None), want);
    assert_eq!(body(K::NimEmbeddings, &p, &t, None), want);
    assert_eq!(payload_texts(K::Embeddings, want.as_bytes()), "a b c");
    // chat_embeddings is a chat body (streaming is off for it: the config turns it off).
    let p = params(false, "{}");
    assert_eq!(
        body(K::ChatEmbeddings, &p, &texts(&["hi"], None), Some("sys")),
        r#"{"messages":[{"role":"system","content":"sys"},{"role":"user","content":"hi"}],"model":"m","stream":false}"#
    );
}

#[test]
fn rankings_bodies() {
    let p = params(false, r#"{"top_n":1}"#);
    let t = rankings();
    let nim = body(K::NimRankings, &p, &t, None);
    assert_eq!(
        nim,
        r#"{"model":"m","query":{"text":"what is x"},"passages":[{"text":"x is a"},{"text":"y is b"}],"top_n":1}"#
    );
    let cohere = body(K::CohereRankings, &p, &t, None);
    assert_eq!(
        cohere,
        r#"{"model":"m","query":"what is x","documents":["x is a","y is b"],"top_n":1}"#
    );
    let tei = body(K::HfTeiRankings, &p, &t, None);
    assert_eq!(
        tei,
        r#"{"query":"what is x","texts":["x is a","y is b"],"top_n":1}"#
    );
    // AIPerf 0.13's payload walk needs a string `query` *and* `passages`: none of the three
    // shapes has both, so no input text is counted (checked against AIPerf's extract_inputs).
    for (kind, b) in [
        (K::NimRankings, &nim),
        (K::CohereRankings, &cohere),
        (K::HfTeiRankings, &tei),
    ] {
        assert_eq!(payload_texts(kind, b.as_bytes()), "", "{kind}");
    }
    assert_eq!(
        payload_texts(
            K::NimRankings,
            br#"{"query":"q","passages":["a",{"text":"b"}]}"#
        ),
        "q a b"
    );
}

#[test]
fn tgi_body_puts_extras_in_parameters() {
    let p = params(true, r#"{"temperature":0.5,"max_new_tokens":3}"#);
    let mut t = texts(&["a", "b c"], Some(8));
    t.extra = serde_json::from_str::<Value>(r#"{"seed":1}"#)
        .unwrap()
        .as_object()
        .cloned()
        .unwrap();
    let b = body(K::HuggingfaceGenerate, &p, &t, None);
    assert_eq!(
        b,
        r#"{"inputs":"a b c","parameters":{"max_new_tokens":3,"temperature":0.5},"seed":1}"#
    );
    assert_eq!(payload_texts(K::HuggingfaceGenerate, b.as_bytes()), "a b c");
    let b = body(
        K::HuggingfaceGenerate,
        &params(false, "{}"),
        &texts(&["x"], None),
        None,
    );
    assert_eq!(b, r#"{"inputs":"x","parameters":{}}"#);
    assert_eq!(K::HuggingfaceGenerate.path(true), "/generate_stream");
    assert_eq!(K::HuggingfaceGenerate.path(false), "/generate");
}

#[test]
fn responses_bodies() {
    let b = body(
        K::Responses,
        &params(true, r#"{"store":false}"#),
        &texts(&["hi"], Some(7)),
        Some("be brief"),
    );
    assert_eq!(
        b,
        r#"{"input":[{"role":"user","content":"hi","type":"message"}],"model":"m","stream":true,"instructions":"be brief","max_output_tokens":7,"store":false}"#
    );
    assert_eq!(payload_texts(K::Responses, b.as_bytes()), "be brief hi");
    // Several texts are input_text parts; streaming with server counts asks for usage.
    let mut p = params(true, "{}");
    p.use_server_token_count = true;
    let b = body(K::Responses, &p, &texts(&["a", "b"], None), None);
    assert_eq!(
        b,
        r#"{"input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}],"type":"message"}],"model":"m","stream":true,"stream_options":{"include_usage":true}}"#
    );
    assert_eq!(payload_texts(K::Responses, b.as_bytes()), "a b");
}

#[test]
fn messages_bodies() {
    let b = body(
        K::Messages,
        &params(true, r#"{"temperature":0}"#),
        &texts(&["hi"], Some(7)),
        Some("sys"),
    );
    assert_eq!(
        b,
        r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":7,"stream":true,"system":"sys","temperature":0}"#
    );
    assert_eq!(payload_texts(K::Messages, b.as_bytes()), "sys hi");
    // Not streaming: no `stream` key; no max tokens: 1024.
    let b = body(
        K::Messages,
        &params(false, "{}"),
        &texts(&["hi"], None),
        None,
    );
    assert_eq!(
        b,
        r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1024}"#
    );
}

#[test]
fn metadata_matches_aiperfs_registry() {
    let rows = [
        (K::Chat, "/v1/chat/completions", true, true, "LLM Metrics"),
        (K::Completions, "/v1/completions", true, true, "LLM Metrics"),
        (K::Responses, "/v1/responses", true, true, "LLM Metrics"),
        (K::Messages, "/v1/messages", true, true, "LLM Metrics"),
        (
            K::Embeddings,
            "/v1/embeddings",
            false,
            false,
            "Embeddings Metrics",
        ),
        (
            K::ChatEmbeddings,
            "/v1/embeddings",
            false,
            false,
            "Embeddings Metrics",
        ),
        (
            K::NimEmbeddings,
            "/v1/embeddings",
            false,
            false,
            "NIM Embeddings Metrics",
        ),
        (
            K::NimRankings,
            "/v1/ranking",
            false,
            false,
            "Rankings Metrics",
        ),
        (
            K::CohereRankings,
            "/v2/rerank",
            false,
            false,
            "Ranking Metrics",
        ),
        (K::HfTeiRankings, "/rerank", false, false, "Ranking Metrics"),
        (
            K::HuggingfaceGenerate,
            "/generate",
            true,
            true,
            "LLM Metrics",
        ),
        (
            K::ImageGeneration,
            "/v1/images/generations",
            true,
            false,
            "Image Generation Metrics",
        ),
        (
            K::SolidoRag,
            "/rag/api/prompt",
            true,
            true,
            "SOLIDO RAG Metrics",
        ),
    ];
    for (kind, path, streams, produces, title) in rows {
        let d = kind.descriptor();
        assert_eq!(d.default_path, path, "{kind}");
        assert_eq!(d.supports_streaming, streams, "{kind}");
        assert_eq!(d.produces_tokens, produces, "{kind}");
        assert!(d.tokenizes_input, "{kind}");
        assert_eq!(d.metrics_title, title, "{kind}");
        assert_eq!(kind.as_str().parse::<K>(), Ok(kind));
    }
}

#[test]
fn embeddings_and_rankings_responses() {
    let ok = br#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"usage":{"prompt_tokens":3,"total_tokens":3}}"#;
    for kind in [K::Embeddings, K::NimEmbeddings, K::ChatEmbeddings] {
        let out = parse(kind, &json_record(ok));
        assert_eq!(out.content_stamps_ns, vec![500], "{kind}");
        assert_eq!(out.error, None);
        // AIPerf's embeddings endpoints do not read usage.
        assert_eq!(out.usage, None);
        assert_eq!(out.output_text, "");
    }
    let bad = br#"{"data":[{"object":"embedding","embedding":[1]},{"object":"other"}]}"#;
    let out = parse(K::Embeddings, &json_record(bad));
    assert_eq!(
        out.error.as_ref().map(|e| e.kind.as_str()),
        Some("ValueError")
    );
    let empty = br#"{"data":[]}"#;
    let out = parse(K::Embeddings, &json_record(empty));
    assert_eq!(
        out.error.as_ref().map(|e| e.kind.as_str()),
        Some(NO_CONTENT_ERROR_KIND)
    );
    // chat_embeddings also takes the simple `embeddings` shape.
    let out = parse(
        K::ChatEmbeddings,
        &json_record(br#"{"embeddings":[[1,2]]}"#),
    );
    assert_eq!(out.content_responses(), 1);

    let cases: [(K, &[u8], bool); 8] = [
        (
            K::NimRankings,
            br#"{"rankings":[{"index":0,"logit":0.5}]}"#,
            true,
        ),
        (K::NimRankings, br#"{"rankings":[]}"#, false),
        (K::NimRankings, br#"{"results":[{"index":0}]}"#, false),
        (
            K::CohereRankings,
            br#"{"id":"x","results":[{"index":1,"relevance_score":0.9}]}"#,
            true,
        ),
        (K::CohereRankings, br#"{"rankings":[{"index":0}]}"#, false),
        (K::HfTeiRankings, br#"[{"index":0,"score":0.9}]"#, true),
        (
            K::HfTeiRankings,
            br#"{"results":[{"index":0,"score":0.9}]}"#,
            true,
        ),
        (K::HfTeiRankings, br#"[]"#, false),
    ];
    for (kind, body, content) in cases {
        let out = parse(kind, &json_record(body));
        assert_eq!(
            out.content_responses() == 1,
            content,
            "{kind}: {}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn tgi_responses() {
    let out = parse(
        K::HuggingfaceGenerate,
        &json_record(br#"{"generated_text":"a b"}"#),
    );
    assert_eq!(out.output_text, "a b");
    let out = parse(
        K::HuggingfaceGenerate,
        &json_record(br#"[{"generated_text":"x"}]"#),
    );
    assert_eq!(out.output_text, "x");
    // Streamed: `token.text` of every event; the last event's accumulated `generated_text` is
    // never counted.
    let sse = b"data:{\"index\":1,\"token\":{\"id\":1,\"text\":\"He\",\"special\":false},\"generated_text\":null}\n\n\
data:{\"index\":2,\"token\":{\"id\":2,\"text\":\"\",\"special\":true},\"generated_text\":null}\n\n\
data:{\"index\":3,\"token\":{\"id\":3,\"text\":\"llo\",\"special\":false},\"generated_text\":\"Hello\"}\n\n";
    let out = parse(K::HuggingfaceGenerate, &sse_record(sse));
    assert_eq!(out.output_text, "Hello");
    assert_eq!(out.content_stamps_ns, vec![100, 300]);
    assert_eq!(out.usage, None);
}

#[test]
fn image_generation_bodies() {
    // The turn's first text is the prompt; `stream` only when streaming; extras replace `n`.
    let b = body(
        K::ImageGeneration,
        &params(false, "{}"),
        &texts(&["a cat", "ignored"], Some(5)),
        Some("sys"),
    );
    assert_eq!(
        b,
        r#"{"prompt":"a cat","model":"m","response_format":"b64_json","n":1}"#
    );
    assert_eq!(payload_texts(K::ImageGeneration, b.as_bytes()), "a cat");
    let b = body(
        K::ImageGeneration,
        &params(true, r#"{"n":4,"size":"1024x1024"}"#),
        &texts(&["x"], None),
        None,
    );
    assert_eq!(
        b,
        r#"{"prompt":"x","model":"m","response_format":"b64_json","n":4,"stream":true,"size":"1024x1024"}"#
    );
}

#[test]
fn image_generation_responses() {
    // A whole body is one data response, whatever its images; usage is read.
    let whole = br#"{"created":1,"data":[{"b64_json":"AA=="},{"url":"http://x/1.png"}],"usage":{"input_tokens":3,"output_tokens":7,"total_tokens":10}}"#;
    let out = parse(K::ImageGeneration, &json_record(whole));
    assert_eq!(out.content_stamps_ns, vec![500]);
    assert_eq!(out.output_text, "");
    let u = out.usage.expect("usage");
    assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(3), Some(7)));
    // Streamed: every event with its own `b64_json` (partials and the final image) is one.
    let sse = concat!(
        "event: image_generation.partial_image\n",
        r#"data: {"type":"image_generation.partial_image","b64_json":"AA==","partial_image_index":0}"#,
        "\n\nevent: image_generation.completed\n",
        r#"data: {"type":"image_generation.completed","b64_json":"AB=="}"#,
        "\n\n"
    )
    .as_bytes();
    let out = parse(K::ImageGeneration, &sse_record(sse));
    assert_eq!(out.content_stamps_ns, vec![100, 200]);
    // An empty object or undecodable data is no response.
    for odd in [&b"{}"[..], b"not json", b"[]"] {
        assert_eq!(
            parse(K::ImageGeneration, &json_record(odd)).content_responses(),
            0
        );
    }
}

#[test]
fn solido_rag_body_and_responses() {
    let p = params(true, r#"{"filters":{"family":"X"}}"#);
    let b = body(K::SolidoRag, &p, &texts(&["q1", "", "q2"], Some(9)), None);
    // Every non-empty text in `query`; extras replace the default filters; no `stream`, no
    // `max_tokens`, the model as `inference_model`.
    assert_eq!(
        b,
        r#"{"query":["q1","q2"],"filters":{"family":"X"},"inference_model":"m"}"#
    );
    // AIPerf's payload walk takes no text from a list `query`.
    assert_eq!(payload_texts(K::SolidoRag, b.as_bytes()), "");
    let out = parse(
        K::SolidoRag,
        &json_record(br#"{"content":"an answer","sources":[{"id":1}]}"#),
    );
    assert_eq!(out.output_text, "an answer");
    assert_eq!(out.content_stamps_ns, vec![500]);
    let sse = b"data: {\"content\":\"He\"}\n\ndata: {\"content\":\"\"}\n\ndata: {\"content\":\"llo\"}\n\n";
    let out = parse(K::SolidoRag, &sse_record(sse));
    assert_eq!(out.output_text, "Hello");
    assert_eq!(out.content_stamps_ns, vec![100, 300]);
    assert_eq!(
        parse(K::SolidoRag, &json_record(br#"{"content":null}"#)).content_responses(),
        0
    );
}

fn usage(prompt: u64, completion: u64) -> Usage {
    Usage {
        prompt_tokens: Some(prompt),
        completion_tokens: Some(completion),
        ..Usage::default()
    }
}

#[test]
fn responses_stream_and_whole() {
    let sse = b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"object\":\"response\"}}\n\n\
event: response.reasoning_text.delta\ndata: {\"type\":\"response.reasoning_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"think\"}\n\n\
event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":1,\"content_index\":0,\"delta\":\"Hel\"}\n\n\
event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":1,\"content_index\":0,\"delta\":\"lo\"}\n\n\
event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"output_index\":1,\"content_index\":0,\"text\":\"Hello\"}\n\n\
event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"output_index\":2,\"content_index\":0,\"text\":\"!\"}\n\n\
event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"delta\":\"{}\"}\n\n\
event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"object\":\"response\",\"usage\":{\"input_tokens\":4,\"output_tokens\":6,\"output_tokens_details\":{\"reasoning_tokens\":1}}}}\n\n";
    let out = parse(K::Responses, &sse_record(sse));
    // The done event of a part that streamed deltas is an empty content response; a done-only
    // part carries its text.
    assert_eq!(out.output_text, "Hello!{}");
    assert_eq!(out.reasoning_text, "think");
    assert_eq!(out.content_stamps_ns, vec![200, 300, 400, 500, 600, 700]);
    assert_eq!(out.first_output_stamp_ns, Some(300));
    assert_eq!(
        out.usage,
        Some(Usage {
            reasoning_tokens: Some(1),
            ..usage(4, 6)
        })
    );

    let whole = br#"{"id":"r","object":"response","output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"why"}]},{"type":"message","content":[{"type":"output_text","text":"A"},{"type":"refusal","text":"no"},{"type":"output_text","text":"B"}]}],"usage":{"input_tokens":2,"output_tokens":3}}"#;
    let out = parse(K::Responses, &json_record(whole));
    assert_eq!(
        (out.reasoning_text.as_str(), out.output_text.as_str()),
        ("why", "AB")
    );
    assert_eq!(out.usage, Some(usage(2, 3)));
    let convenience = br#"{"object":"response","output_text":"plain"}"#;
    assert_eq!(
        parse(K::Responses, &json_record(convenience)).output_text,
        "plain"
    );
    let tool = br#"{"object":"response","output":[{"type":"function_call","name":"f","arguments":"{\"a\":1}"}]}"#;
    assert_eq!(
        parse(K::Responses, &json_record(tool)).output_text,
        "f{\"a\":1}"
    );
}

#[test]
fn messages_stream_and_whole() {
    let sse = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"content\":[],\"usage\":{\"input_tokens\":12,\"output_tokens\":1,\"cache_read_input_tokens\":2}}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: ping\ndata: {\"type\":\"ping\"}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"s\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\"}}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let out = parse(K::Messages, &sse_record(sse));
    assert_eq!(out.reasoning_text, "hm");
    assert_eq!(out.output_text, "Hi{\"a");
    assert_eq!(out.content_stamps_ns, vec![400, 600, 700]);
    assert_eq!(out.first_output_stamp_ns, Some(600));
    // message_delta's output count wins; message_start's input and cache counts fill in.
    assert_eq!(
        out.usage,
        Some(Usage {
            prompt_cache_read_tokens: Some(2),
            ..usage(12, 15)
        })
    );

    let whole = br#"{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"Sure. "},{"type":"tool_use","id":"t","name":"get","input":{"city":"Paris","n":1}}],"usage":{"input_tokens":5,"output_tokens":9}}"#;
    let out = parse(K::Messages, &json_record(whole));
    assert_eq!(out.output_text, r#"Sure. get{"city":"Paris","n":1}"#);
    assert_eq!(out.usage, Some(usage(5, 9)));
    let out = parse(
        K::Messages,
        &json_record(br#"{"type":"error","error":{"type":"overloaded_error"}}"#),
    );
    assert_eq!(
        out.error.as_ref().map(|e| e.kind.as_str()),
        Some(NO_CONTENT_ERROR_KIND)
    );
}

#[test]
fn parsers_never_panic_on_odd_shapes() {
    let odd: [&[u8]; 10] = [
        b"",
        b"null",
        b"[]",
        b"[1]",
        b"\"x\"",
        b"{\"data\":{}}",
        b"{\"token\":5}",
        b"{\"type\":5}",
        b"{\"output\":[1,null,{\"type\":\"message\",\"content\":7}],\"object\":\"response\"}",
        b"{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":null}],\"usage\":[]}",
    ];
    let _ = Map::<String, Value>::new();
    for kind in K::ALL {
        for body in odd {
            let _ = parse(kind, &json_record(body));
        }
    }
}
