//! OpenAI Responses API (`responses`, `/v1/responses`; AIPerf's `openai_responses.py`).

use serde_json::{Map, Value};

use super::{
    Descriptor, History, json, merge_extras, non_empty_str, reply_text, usage_of, walk_texts,
};
use crate::conversation::{Content, Turn};
use crate::endpoint::EndpointKind;
use crate::endpoint::payload::{PartDialect, PayloadParams, TurnBody, media_parts_in};
use crate::endpoint::response::ParsedResponse;
use crate::endpoint::response::for_each_object;
use crate::record::RawRecord;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    supports_streaming: true,
    produces_tokens: true,
    consumes_system_message: true,
    history: Some(History {
        turn: history_turn,
        reply,
    }),
    media: crate::endpoint::MediaCaps {
        images: crate::endpoint::media_parts::ImageParts::Parts(&["input_image"]),
        produces_videos: false,
    },
    ..Descriptor::new("/v1/responses", build, input_texts, parse)
};

/// `{"input":[user context?, history…, this turn's item(s)], "model", "stream",
/// "instructions"?: system, "max_output_tokens"?}` + extras; with streaming and `--use-server-token-count`,
/// `stream_options.include_usage` is added unless the user set it.
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let turn = parts.turn;
    let mut input = Vec::new();
    // Chained (`previous_response_id`): the server holds the rest; the turn goes alone.
    if parts.previous_response_id.is_none() {
        if let Some(context) = parts.user_context {
            input.push(serde_json::json!({"type": "message", "role": "user", "content": context}));
        }
        input.extend(parts.history.iter().cloned());
    }
    history_turn(turn, &mut input);
    let mut body = Map::new();
    body.insert("input".into(), Value::Array(input));
    body.insert("model".into(), Value::from(params.model_for(parts.turn)));
    body.insert("stream".into(), Value::Bool(params.streaming));
    if let Some(id) = parts.previous_response_id {
        body.insert("previous_response_id".into(), Value::from(id));
    }
    if let Some(system) = parts.system.filter(|s| !s.is_empty()) {
        body.insert("instructions".into(), Value::from(system));
    }
    if let Some(n) = turn.max_tokens {
        body.insert("max_output_tokens".into(), Value::from(n));
    }
    merge_extras(&mut body, params, turn);
    if params.streaming && params.use_server_token_count {
        match body.get_mut("stream_options") {
            Some(Value::Object(options)) => {
                options.entry("include_usage").or_insert(Value::Bool(true));
            }
            _ => {
                body.insert(
                    "stream_options".into(),
                    serde_json::json!({"include_usage": true}),
                );
            }
        }
    }
    body
}

/// Output item types the Responses API only takes back as input with a tool configured or a
/// stored response: AIPerf drops them when it replays a conversation.
const REPLAY_UNSAFE: [&str; 6] = [
    "web_search_call",
    "file_search_call",
    "image_generation_call",
    "code_interpreter_call",
    "computer_call",
    "reasoning",
];

fn replayable(item: &Value) -> bool {
    !item
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| REPLAY_UNSAFE.contains(&t))
}

/// A turn's input items: its message list (less the replay-unsafe items), else its item.
fn history_turn(turn: &Turn, input: &mut Vec<Value>) {
    match &turn.content {
        Content::Messages(list) => input.extend(list.iter().filter(|i| replayable(i)).cloned()),
        _ => input.push(item(turn)),
    }
}

/// Stream-end failure events: the reply's items are then not replayed, only its text.
const FAILURE_EVENTS: [&str; 4] = [
    "response.failed",
    "response.incomplete",
    "response.error",
    "error",
];

/// The id of the stored response a turn's answer made, for the next turn's
/// `previous_response_id`: the last non-empty `id` of the answer's response objects (under
/// `response` in streamed lifecycle events, at the top of a whole body); `None` when the answer
/// failed (a failure event, or a `failed` / `incomplete` status) or carried no id.
pub(crate) fn response_id(rec: &RawRecord) -> Option<String> {
    let mut id = None;
    let mut failed = false;
    // An `event: error` message ends the answer as a failure too.
    let errored = for_each_object(rec, |bytes| {
        if failed {
            return;
        }
        let Some(value) = json(bytes) else {
            return;
        };
        let ty = value.get("type").and_then(Value::as_str);
        let source = value
            .get("response")
            .filter(|r| r.is_object())
            .unwrap_or(&value);
        let status = source.get("status").and_then(Value::as_str);
        if ty.is_some_and(|t| FAILURE_EVENTS.contains(&t))
            || status.is_some_and(|s| matches!(s, "failed" | "incomplete"))
        {
            failed = true;
            return;
        }
        if let Some(s) = source
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            id = Some(s.to_owned());
        }
    });
    if failed || errored { None } else { id }
}

/// The reply in the history (AIPerf's `build_assistant_turn`): every output item, verbatim, from
/// the whole `response` body or `response.completed`'s `response.output`, then the
/// `response.output_item.done` items not already there (one per `id`, else `call_id`, else
/// `item_id`, else identical content), less the replay-unsafe ones. With no item at all, or
/// after a failure event, an assistant message of the reply's text (nothing when it is empty).
fn reply(rec: &RawRecord, history: &mut Vec<Value>) {
    let mut items: Vec<(String, Value)> = Vec::new();
    let mut done: Vec<Value> = Vec::new();
    let mut failed = false;
    for_each_object(rec, |bytes| {
        let Some(value) = json(bytes).filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
        else {
            return;
        };
        let ty = value.get("type").and_then(Value::as_str);
        failed |= ty.is_some_and(|t| FAILURE_EVENTS.contains(&t));
        if failed {
            return;
        }
        if value.get("object").and_then(Value::as_str) == Some("response") {
            merge_output(&mut items, value.get("output"));
        } else if ty == Some("response.completed") {
            merge_output(
                &mut items,
                value.get("response").and_then(|r| r.get("output")),
            );
        } else if ty == Some("response.output_item.done")
            && let Some(item @ Value::Object(_)) = value.get("item")
        {
            done.push(item.clone());
        }
    });
    for item in done {
        merge_item(&mut items, item);
    }
    if failed || items.is_empty() {
        let text = reply_text(EndpointKind::Responses, rec);
        if !text.is_empty() {
            history
                .push(serde_json::json!({"role": "assistant", "content": text, "type": "message"}));
        }
        return;
    }
    history.extend(items.into_iter().map(|(_, v)| v).filter(replayable));
}

fn merge_output(items: &mut Vec<(String, Value)>, output: Option<&Value>) {
    for item in output.and_then(Value::as_array).into_iter().flatten() {
        if item.is_object() {
            merge_item(items, item.clone());
        }
    }
}

/// Keeps `item` unless an item with its key is already kept.
fn merge_item(items: &mut Vec<(String, Value)>, item: Value) {
    let id = ["id", "call_id", "item_id"]
        .into_iter()
        .filter_map(|k| item.get(k))
        .find(|v| super::truthy(v));
    let key = match id {
        Some(v) => format!("id:{v}"),
        None => format!(
            "{}::{item}",
            item.get("type").and_then(Value::as_str).unwrap_or("?")
        ),
    };
    if !items.iter().any(|(k, _)| *k == key) {
        items.push((key, item));
    }
}

/// A turn as a Responses input item: `{"role","content","type":"message"}`, the content a plain
/// string for one text without media, else `input_text` parts then the media's `input_image`
/// and `input_audio` parts.
fn item(turn: &Turn) -> Value {
    let texts: &[String] = match &turn.content {
        Content::Texts(t) => t,
        _ => &[],
    };
    let content = match texts {
        [one] if turn.media.is_empty() => Value::from(one.as_str()),
        many => {
            let mut parts: Vec<Value> = many
                .iter()
                .filter(|t| !t.is_empty())
                .map(|t| PartDialect::Responses.text_part(t))
                .collect();
            media_parts_in(PartDialect::Responses, &turn.media, &mut parts);
            if parts.is_empty() {
                Value::from("")
            } else {
                Value::Array(parts)
            }
        }
    };
    serde_json::json!({
        "role": turn.role.as_deref().unwrap_or("user"),
        "content": content,
        "type": "message",
    })
}

/// `instructions` (a string, or the texts of a list), then the `input` items' `input_text` /
/// `output_text` parts and string contents.
fn input_texts<'a>(value: &'a Value, texts: &mut Vec<&'a str>) {
    match value.get("instructions") {
        Some(Value::String(s)) => texts.push(s),
        Some(Value::Array(parts)) => {
            for part in parts {
                match part {
                    Value::String(s) if !s.is_empty() => texts.push(s),
                    Value::Object(o) => texts.extend(non_empty_str(o.get("text"))),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    walk_texts(value, &["input_text", "output_text"], texts);
}

/// Streamed events are told by `type`: `response.output_text.delta` (text),
/// `response.reasoning_text.delta` (reasoning), `response.function_call_arguments.delta` (tool
/// text), `response.output_text.done` (the whole text: counted only when no delta carried that
/// part's text, else an empty content response at its stamp), `response.completed` (usage). A
/// whole body (`object: "response"`) is read from `output[]`: reasoning summaries, else message
/// `output_text`, else function calls; else the `output_text` convenience field.
fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    let Some(value) = json(bytes) else {
        return;
    };
    if value.as_object().is_none_or(|o| o.is_empty()) {
        return;
    }
    if let Some(ty) = value.get("type") {
        streamed_event(ty.as_str().unwrap_or(""), &value, stamp_ns, out);
    } else if value.get("object").and_then(Value::as_str) == Some("response") {
        whole(&value, stamp_ns, out);
    }
}

fn part_key(value: &Value) -> (Option<i64>, Option<i64>) {
    (
        value.get("output_index").and_then(Value::as_i64),
        value.get("content_index").and_then(Value::as_i64),
    )
}

fn streamed_event(ty: &str, value: &Value, stamp_ns: u64, out: &mut ParsedResponse) {
    match ty {
        "response.output_text.delta" => {
            if let Some(delta) = non_empty_str(value.get("delta")) {
                out.streamed_parts.push(part_key(value));
                out.add_text(stamp_ns, delta);
            }
        }
        "response.output_text.done" => {
            if out.streamed_parts.contains(&part_key(value)) {
                out.add_text(stamp_ns, "");
            } else if let Some(text) = non_empty_str(value.get("text")) {
                out.add_text(stamp_ns, text);
            }
        }
        "response.reasoning_text.delta" => {
            if let Some(delta) = non_empty_str(value.get("delta")) {
                out.add_reasoning(stamp_ns, delta, None);
            }
        }
        "response.function_call_arguments.delta" => {
            if let Some(delta) = non_empty_str(value.get("delta")) {
                out.add_tool_call(stamp_ns, None, delta);
            }
        }
        "response.completed" => {
            if let Some(usage) = usage_of(value.get("response").and_then(|r| r.get("usage"))) {
                out.usage = Some(usage);
            }
        }
        _ => {}
    }
}

fn whole(value: &Value, stamp_ns: u64, out: &mut ParsedResponse) {
    if let Some(usage) = usage_of(value.get("usage")) {
        out.usage = Some(usage);
    }
    let (mut text, mut reasoning, mut tool) = (String::new(), String::new(), String::new());
    let output = value.get("output").and_then(Value::as_array);
    for item in output.into_iter().flatten() {
        match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => collect_parts(item.get("summary"), "summary_text", &mut reasoning),
            Some("message") => collect_parts(item.get("content"), "output_text", &mut text),
            Some("function_call") => {
                tool.push_str(non_empty_str(item.get("name")).unwrap_or(""));
                tool.push_str(non_empty_str(item.get("arguments")).unwrap_or(""));
            }
            _ => {}
        }
    }
    if output.is_some() {
        if !reasoning.is_empty() {
            let content = (!text.is_empty()).then_some(text.as_str());
            out.add_reasoning(stamp_ns, &reasoning, content);
            return;
        }
        if !text.is_empty() {
            out.add_text(stamp_ns, &text);
            return;
        }
        if !tool.is_empty() {
            out.add_tool_call(stamp_ns, None, &tool);
            return;
        }
    }
    if let Some(text) = non_empty_str(value.get("output_text")) {
        out.add_text(stamp_ns, text);
    }
}

/// Appends the non-empty `text` of every part of `parts` whose `type` is `ty`.
fn collect_parts(parts: Option<&Value>, ty: &str, into: &mut String) {
    for part in parts.and_then(Value::as_array).into_iter().flatten() {
        if part.get("type").and_then(Value::as_str) == Some(ty) {
            into.push_str(non_empty_str(part.get("text")).unwrap_or(""));
        }
    }
}
