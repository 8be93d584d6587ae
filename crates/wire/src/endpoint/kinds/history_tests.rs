//! Conversation replay for `responses` and `messages`: the item(s) a reply adds to the history,
//! from hand-written captures (whole and streamed) following AIPerf 0.13's
//! `build_assistant_turn`, and the body of a later turn that carries them.

use serde_json::{Value, json};

use crate::conversation::Turn;
use crate::endpoint::EndpointKind as K;
use crate::endpoint::payload::{PayloadParams, TurnBody, build_turn, payload_texts};
use crate::record::testing::{json_record, sse_record};

fn replay(kind: K, rec: &crate::record::RawRecord) -> Vec<Value> {
    let history = kind.descriptor().history.expect("replays conversations");
    let mut out = Vec::new();
    (history.reply)(rec, &mut out);
    out
}

fn user(kind: K, text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    (kind.descriptor().history.unwrap().turn)(&Turn::text(text), &mut out);
    out
}

#[test]
fn responses_whole_reply_replays_its_output_items_less_reasoning() {
    let body = br#"{"id":"resp_1","object":"response","status":"completed","output":[
        {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"hmm"}]},
        {"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hi there","annotations":[]}]},
        {"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
        {"type":"web_search_call","id":"ws_1"}
    ],"usage":{"input_tokens":3,"output_tokens":2}}"#;
    assert_eq!(
        replay(K::Responses, &json_record(body)),
        vec![
            json!({"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hi there","annotations":[]}]}),
            json!({"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}),
        ]
    );
}

#[test]
fn responses_streamed_reply_unions_completed_output_and_done_items() {
    let sse = b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\"}\n\n\
event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"message\",\"id\":\"msg_1\",\"content\":[{\"type\":\"output_text\",\"text\":\"stale\"}]}}\n\n\
event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"function_call\",\"call_id\":\"c9\",\"name\":\"g\",\"arguments\":\"{}\"}}\n\n\
event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"note\"}}\n\n\
event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"note\"}}\n\n\
event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"object\":\"response\",\"output\":[{\"type\":\"message\",\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi\"}]}]}}\n\n";
    // `completed`'s ordering first; a done item with a known id is dropped; identical id-less
    // items collapse to one.
    assert_eq!(
        replay(K::Responses, &sse_record(sse)),
        vec![
            json!({"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hi"}]}),
            json!({"type":"function_call","call_id":"c9","name":"g","arguments":"{}"}),
            json!({"type":"note"}),
        ]
    );
}

#[test]
fn responses_reply_without_items_or_after_a_failure_is_its_text() {
    // Deltas only: no item anywhere, so the text (done text of a streamed part not doubled).
    let sse = b"data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hel\"}\n\n\
data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"lo\"}\n\n\
data: {\"type\":\"response.output_text.done\",\"output_index\":0,\"content_index\":0,\"text\":\"Hello\"}\n\n";
    assert_eq!(
        replay(K::Responses, &sse_record(sse)),
        vec![json!({"role":"assistant","content":"Hello","type":"message"})]
    );
    // A failure event: the completed items are not replayed, the text is.
    let sse = b"data: {\"type\":\"response.reasoning_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"th\"}\n\n\
data: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"message\",\"id\":\"m\"}}\n\n\
data: {\"type\":\"response.failed\",\"response\":{}}\n\n";
    assert_eq!(
        replay(K::Responses, &sse_record(sse)),
        vec![json!({"role":"assistant","content":"th","type":"message"})]
    );
    // Nothing to replay at all.
    assert!(replay(K::Responses, &json_record(br#"{"error":"x"}"#)).is_empty());
}

#[test]
fn messages_whole_reply_with_thinking_and_tool_use_is_one_block_message() {
    let body = br#"{"id":"msg_1","type":"message","role":"assistant","content":[
        {"type":"text","text":"Let me "},
        {"type":"thinking","thinking":"hmm","signature":"sig"},
        {"type":"tool_use","id":"tu_1","name":"f","input":{"a":1}},
        {"type":"text","text":"check."}
    ],"usage":{"input_tokens":3,"output_tokens":9}}"#;
    assert_eq!(
        replay(K::Messages, &json_record(body)),
        vec![json!({"role":"assistant","content":[
            {"type":"thinking","thinking":"hmm","signature":"sig"},
            {"type":"text","text":"Let me check."},
            {"type":"tool_use","id":"tu_1","name":"f","input":{"a":1}},
        ]})]
    );
}

#[test]
fn messages_streamed_blocks_are_reassembled_by_index() {
    let sse = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"a \"}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"b\"}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"S\"}}\n\n\
data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n\
data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t3\",\"name\":\"h\",\"input\":{}}}\n\n\
data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"g\",\"input\":{},\"caller\":null}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"q\\\":\"}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"2}\"}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{bad\"}}\n\n\
data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":7}}\n\n";
    // Thinking keeps its signature; tool inputs are parsed (kept as a string when not JSON),
    // in index order; null fields are dropped.
    assert_eq!(
        replay(K::Messages, &sse_record(sse)),
        vec![json!({"role":"assistant","content":[
            {"type":"thinking","thinking":"a b","signature":"S"},
            {"type":"text","text":"Hi"},
            {"type":"tool_use","id":"t2","name":"g","input":{"q":2}},
            {"type":"tool_use","id":"t3","name":"h","input":"{bad"},
        ]})]
    );
}

#[test]
fn messages_plain_reply_is_its_text_and_reasoning_fills_in() {
    // Thinking deltas at an index opened as a text block make no thinking block: the text
    // replay takes each response's content, else its reasoning, in order.
    let sse = b"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"think \"}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n\
data: {\"type\":\"message_stop\"}\n\n";
    assert_eq!(
        replay(K::Messages, &sse_record(sse)),
        vec![json!({"role":"assistant","content":"think Hello"})]
    );
    let body = br#"{"type":"message","content":[{"type":"text","text":"Hi"}]}"#;
    assert_eq!(
        replay(K::Messages, &json_record(body)),
        vec![json!({"role":"assistant","content":"Hi"})]
    );
    assert!(replay(K::Messages, &json_record(br#"{"type":"error"}"#)).is_empty());
}

fn later_turn(kind: K, history: &[Value], system: Option<&str>) -> String {
    let p = PayloadParams {
        model: "m".into(),
        ..PayloadParams::default()
    };
    let turn = Turn::text("and then?");
    let parts = TurnBody {
        system,
        user_context: Some("ctx"),
        history,
        turn: &turn,
        previous_response_id: None,
    };
    String::from_utf8(build_turn(kind, &p, &parts)).unwrap()
}

#[test]
fn responses_later_turn_carries_the_history() {
    let mut history = user(K::Responses, "hi");
    history.extend(replay(
        K::Responses,
        &json_record(
            br#"{"object":"response","output":[{"type":"message","id":"m1","role":"assistant","content":[{"type":"output_text","text":"yo"}]}]}"#,
        ),
    ));
    let b = later_turn(K::Responses, &history, Some("sys"));
    assert_eq!(
        b,
        r#"{"input":[{"type":"message","role":"user","content":"ctx"},{"role":"user","content":"hi","type":"message"},{"type":"message","id":"m1","role":"assistant","content":[{"type":"output_text","text":"yo"}]},{"role":"user","content":"and then?","type":"message"}],"model":"m","stream":false,"instructions":"sys"}"#
    );
    // The replayed `output_text` counts for ISL.
    assert_eq!(
        payload_texts(K::Responses, b.as_bytes()),
        "sys ctx hi yo and then?"
    );
}

#[test]
fn messages_later_turn_carries_the_history() {
    let mut history = user(K::Messages, "hi");
    history.extend(replay(
        K::Messages,
        &json_record(br#"{"type":"message","content":[{"type":"text","text":"yo"}]}"#),
    ));
    let b = later_turn(K::Messages, &history, None);
    assert_eq!(
        b,
        r#"{"model":"m","messages":[{"role":"user","content":"ctx"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"and then?"}],"max_tokens":1024}"#
    );
    assert_eq!(
        payload_texts(K::Messages, b.as_bytes()),
        "ctx hi yo and then?"
    );
}

/// The stored response's id for the next turn's `previous_response_id`, as AIPerf takes it:
/// the last id of the answer's response objects (nested `response` of streamed events, the top
/// of a whole body); none when the answer failed or was cut (`incomplete`).
#[test]
fn the_stored_response_id_is_the_answers_unless_it_failed() {
    use crate::endpoint::stored_response_id;
    use crate::record::testing::{json_record, sse_record};
    let streamed = b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n\n\
        event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"delta\":\"a\"}\n\n\
        event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_2\",\"status\":\"completed\"}}\n\n";
    assert_eq!(
        stored_response_id(&sse_record(streamed)),
        Some("resp_2".into())
    );
    let cut = b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n\n\
        event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"incomplete\"}}\n\n";
    assert_eq!(stored_response_id(&sse_record(cut)), None);
    let failed = b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\"}}\n\n\
        event: error\ndata: {\"type\":\"error\",\"message\":\"boom\"}\n\n";
    assert_eq!(stored_response_id(&sse_record(failed)), None);
    let whole = br#"{"id":"resp_9","object":"response","status":"completed","output":[]}"#;
    assert_eq!(
        stored_response_id(&json_record(whole)),
        Some("resp_9".into())
    );
    let no_id = br#"{"object":"response","status":"completed","output":[]}"#;
    assert_eq!(stored_response_id(&json_record(no_id)), None);
}
