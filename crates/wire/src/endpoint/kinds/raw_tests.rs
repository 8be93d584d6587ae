//! `raw`: the body sent verbatim, its ISL texts, and AIPerf 0.13's response auto-detection on
//! hand-written captures (each expectation checked against `RawEndpoint.parse_response`).

use serde_json::{Value, json};

use crate::conversation::{Content, Turn};
use crate::endpoint::EndpointKind as K;
use crate::endpoint::payload::{PayloadParams, TurnBody, build_turn, payload_input};
use crate::endpoint::response::{NO_CONTENT_ERROR_KIND, ParsedResponse, parse_record};
use crate::record::testing::{json_record, sse_record};

fn parse(rec: &crate::record::RawRecord) -> ParsedResponse {
    let mut out = ParsedResponse::default();
    parse_record(K::Raw, rec, &mut out);
    out
}

fn whole(body: &str) -> (String, usize) {
    let out = parse(&json_record(body.as_bytes()));
    let n = out.content_responses();
    (out.output_text, n)
}

#[test]
fn the_body_is_sent_byte_for_byte_and_nothing_is_added() {
    let payload: Value = serde_json::from_str(
        r#"{"model":"x","messages":[{"role":"user","content":"hi there"}],"stream":true,"z":[1,2.5,null]}"#,
    )
    .unwrap();
    let turn = Turn {
        content: Content::Raw(payload),
        max_tokens: Some(3),
        ..Turn::default()
    };
    let p = PayloadParams {
        model: "ignored".into(),
        streaming: false,
        extra_inputs: json!({"extra": 1}).as_object().unwrap().clone(),
        ..PayloadParams::default()
    };
    let body = build_turn(K::Raw, &p, &TurnBody::alone(&turn));
    assert_eq!(
        std::str::from_utf8(&body).unwrap(),
        r#"{"model":"x","messages":[{"role":"user","content":"hi there"}],"stream":true,"z":[1,2.5,null]}"#
    );
    assert_eq!(payload_input(K::Raw, &body).as_deref(), Some("hi there"));
    // The generic walk: prompt, input strings, query + passages, inputs.
    assert_eq!(
        payload_input(K::Raw, br#"{"prompt":"a b"}"#).as_deref(),
        Some("a b")
    );
    assert_eq!(
        payload_input(K::Raw, br#"{"input":["a","b"]}"#).as_deref(),
        Some("a b")
    );
    assert_eq!(
        payload_input(K::Raw, br#"{"query":"q","passages":["p",{"text":"r"}]}"#).as_deref(),
        Some("q p r")
    );
    assert_eq!(
        payload_input(K::Raw, br#"{"inputs":"t"}"#).as_deref(),
        Some("t")
    );
    assert_eq!(payload_input(K::Raw, br#"{"foo":"t"}"#), None);
    assert_eq!(K::Raw.default_path(), "");
    assert_eq!(K::Raw.metrics_title(), "LLM Metrics");
    let d = K::Raw.descriptor();
    assert!(d.supports_streaming && d.produces_tokens && d.tokenizes_input);
}

#[test]
fn whole_bodies_are_auto_detected() {
    // Text: the first string among text/content/response/output/result; a list of strings joined.
    assert_eq!(whole(r#"{"content":"c","text":"t"}"#), ("t".into(), 1));
    assert_eq!(whole(r#"{"response":["a","b"]}"#), ("ab".into(), 1));
    assert_eq!(whole(r#"{"output":"o","result":"r"}"#), ("o".into(), 1));
    // An empty string field ends the search with nothing.
    assert_eq!(
        whole(r#"{"text":"","choices":[{"text":"x"}]}"#),
        (String::new(), 0)
    );
    // OpenAI completions, chat, chat chunk; an empty `text` falls through to `message`.
    assert_eq!(whole(r#"{"choices":[{"text":"cmp"}]}"#), ("cmp".into(), 1));
    assert_eq!(
        whole(r#"{"choices":[{"text":"","message":{"content":"chat"}}]}"#),
        ("chat".into(), 1)
    );
    assert_eq!(
        whole(r#"{"choices":[{"delta":{"content":"d"}}]}"#),
        ("d".into(), 1)
    );
    // Embeddings before rankings before text.
    assert_eq!(
        whole(r#"{"data":[{"object":"embedding","embedding":[0.1]}],"text":"t"}"#),
        (String::new(), 1)
    );
    assert_eq!(whole(r#"{"embedding":[true]}"#), (String::new(), 1));
    assert_eq!(whole(r#"{"embeddings":[[]]}"#), (String::new(), 1));
    assert_eq!(whole(r#"{"results":[],"text":"t"}"#), (String::new(), 1));
    assert_eq!(whole(r#"{"rankings":[{"index":0}]}"#), (String::new(), 1));
    // TGI's generated_text, Responses and Messages shapes are none of these.
    assert_eq!(whole(r#"{"generated_text":"g"}"#), (String::new(), 0));
    assert_eq!(
        whole(r#"{"type":"message","content":[{"type":"text","text":"x"}]}"#),
        (String::new(), 0)
    );
    // Values that are not objects: converted by shape.
    assert_eq!(whole(r#"[{"index":0,"score":1}]"#), (String::new(), 1));
    assert_eq!(whole(r#"[[1,2]]"#), (String::new(), 1));
    assert_eq!(whole(r#"[1,2]"#), (String::new(), 1));
    assert_eq!(whole(r#""str""#), ("str".into(), 1));
    assert_eq!(whole(r#"["a"]"#), (String::new(), 0));
    // Falsy JSON and non-JSON are their own text.
    assert_eq!(whole("{}"), ("{}".into(), 1));
    assert_eq!(whole("0"), ("0".into(), 1));
    assert_eq!(whole("plain words"), ("plain words".into(), 1));
    let out = parse(&json_record(br#"{"usage":{"prompt_tokens":3}}"#));
    assert_eq!(out.error.as_ref().unwrap().kind, NO_CONTENT_ERROR_KIND);
    assert_eq!(out.usage, None, "raw reads no usage");
}

#[test]
fn streams_are_read_message_by_message_and_done_is_text() {
    let sse = b"data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n\
: keep-alive\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n\
data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\n\
data: [DONE]\n\n";
    let out = parse(&sse_record(sse));
    assert_eq!(out.output_text, "Hello[DONE]");
    assert_eq!(out.content_stamps_ns, vec![200, 400, 600]);
    assert_eq!(out.usage, None);
    // Other types still skip `[DONE]`.
    let mut chat = ParsedResponse::default();
    parse_record(K::Chat, &sse_record(b"data: [DONE]\n\n"), &mut chat);
    assert!(chat.content_stamps_ns.is_empty());
    // First-token detection agrees.
    let mut scratch = ParsedResponse::default();
    assert!(crate::endpoint::is_content_message(
        K::Raw,
        b"data: [DONE]",
        &mut scratch
    ));
    assert!(!crate::endpoint::is_content_message(
        K::Chat,
        b"data: [DONE]",
        &mut scratch
    ));
}

/// `--extra-inputs response_field:<path>` (AIPerf's JMESPath mixin): a truthy value found at the
/// path is the answer, converted by shape; a path that finds nothing falls back to
/// auto-detection (unlike `template`, where no match is no content).
#[test]
fn response_field_reads_the_path_and_falls_back_to_auto_detection() {
    let read = |field: &str, body: &str| {
        let path = std::sync::Arc::new(crate::endpoint::FieldPath::parse(field).unwrap());
        let mut out = ParsedResponse::with_response_field(Some(path));
        parse_record(K::Raw, &json_record(body.as_bytes()), &mut out);
        (out.output_text.clone(), out.content_responses())
    };
    let chat = r#"{"object":"chat.completion","model":"m-1","choices":[{"message":{"content":"the reply"}}]}"#;
    assert_eq!(read("model", chat), ("m-1".to_string(), 1));
    assert_eq!(
        read("choices[0].message.content", chat),
        ("the reply".to_string(), 1)
    );
    // No match, or a falsy value: auto-detection reads the choices' text.
    assert_eq!(read("nope.deeper", chat), whole(chat));
    assert_eq!(read("choices[3]", chat), whole(chat));
    let empty = r#"{"model":"","choices":[{"message":{"content":"the reply"}}]}"#;
    assert_eq!(read("model", empty), whole(empty));
    // An embedding found at the path is data, not text.
    let emb = r#"{"result":{"vec":[0.1,0.2]}}"#;
    let (text, n) = read("result.vec", emb);
    assert_eq!((text.as_str(), n), ("", 1));
}
