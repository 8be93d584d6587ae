//! OpenAI Responses API (`responses`, `/v1/responses`; AIPerf's `openai_responses.py`).

use serde_json::{Map, Value};

use super::{Auth, Descriptor, json, merge_extras, non_empty_str, usage_of, walk_texts};
use crate::conversation::{Content, Turn};
use crate::endpoint::payload::{PayloadParams, TurnBody};
use crate::endpoint::response::ParsedResponse;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    default_path: "/v1/responses",
    streaming_path: None,
    supports_streaming: true,
    produces_tokens: true,
    tokenizes_input: true,
    metrics_title: "LLM Metrics",
    consumes_system_message: true,
    carries_history: false,
    auth: Auth::Bearer,
    build,
    input_texts,
    parse,
};

/// `{"input":[user context?, this turn's item(s)], "model", "stream", "instructions"?: system,
/// "max_output_tokens"?}` + extras; with streaming and `--use-server-token-count`,
/// `stream_options.include_usage` is added unless the user set it.
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let turn = parts.turn;
    let mut input = Vec::new();
    if let Some(context) = parts.user_context {
        input.push(serde_json::json!({"type": "message", "role": "user", "content": context}));
    }
    match &turn.content {
        Content::Messages(list) => input.extend(list.iter().cloned()),
        _ => input.push(item(turn)),
    }
    let mut body = Map::new();
    body.insert("input".into(), Value::Array(input));
    body.insert("model".into(), Value::from(params.model.as_str()));
    body.insert("stream".into(), Value::Bool(params.streaming));
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

/// A turn as a Responses input item: `{"role","content","type":"message"}`, the content a plain
/// string for one text, else `input_text` parts.
fn item(turn: &Turn) -> Value {
    let texts: &[String] = match &turn.content {
        Content::Texts(t) => t,
        _ => &[],
    };
    let content = match texts {
        [one] => Value::from(one.as_str()),
        many => {
            let parts: Vec<Value> = many
                .iter()
                .filter(|t| !t.is_empty())
                .map(|t| serde_json::json!({"type": "input_text", "text": t}))
                .collect();
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
