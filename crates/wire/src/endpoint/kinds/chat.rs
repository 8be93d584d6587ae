//! OpenAI Chat Completions (`chat`, `/v1/chat/completions`; AIPerf's `openai_chat.py`).

use serde_json::{Map, Value};

use super::{Descriptor, History, merge_extras, truthy};
use crate::conversation::{Content, Turn};
use crate::endpoint::EndpointKind;
use crate::endpoint::payload::{PayloadParams, TurnBody, ensure_include_usage, turn_message};
use crate::endpoint::response::{ParsedResponse, parse_record};
use crate::endpoint::wire::Body;
use crate::record::RawRecord;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    supports_streaming: true,
    produces_tokens: true,
    consumes_system_message: true,
    history: Some(History {
        turn: history_turn,
        reply,
    }),
    compact: Some(super::chat_compact::compact),
    media: crate::endpoint::MediaCaps::IMAGE_URL_PARTS,
    isl_texts,
    ..Descriptor::new("/v1/chat/completions", build, input_texts, parse)
};

/// `{"messages":[system?, user context?, history…, this turn's message(s)],"model","stream"}` +
/// the token limit (`max_completion_tokens`, or `max_tokens` with the legacy flag) when the turn
/// has one, then the extras, then `stream_options` when the merged body streams.
pub(super) fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let turn = parts.turn;
    let mut body = Map::new();
    body.insert("messages".into(), Value::Array(messages(parts)));
    body.insert("model".into(), Value::from(params.model_for(parts.turn)));
    body.insert("stream".into(), Value::Bool(params.streaming));
    if let Some(n) = turn.max_tokens {
        let field = if params.use_legacy_max_tokens {
            "max_tokens"
        } else {
            "max_completion_tokens"
        };
        body.insert(field.into(), Value::from(n));
    }
    merge_extras(&mut body, params, turn);
    if body.get("stream").is_some_and(truthy) {
        ensure_include_usage(&mut body, params.per_chunk_usage);
    }
    body
}

/// The chat `messages` of a turn: system, user context, history, then the turn's own.
pub(super) fn messages(parts: &TurnBody<'_>) -> Vec<Value> {
    let turn = parts.turn;
    let mut messages = Vec::with_capacity(parts.history.len() + 3);
    if let Some(system) = parts.system {
        messages.push(serde_json::json!({"role": "system", "content": system}));
    }
    if let Some(context) = parts.user_context {
        messages.push(serde_json::json!({"role": "user", "content": context}));
    }
    messages.extend(parts.history.iter().cloned());
    match &turn.content {
        Content::Messages(list) => messages.extend(list.iter().cloned()),
        _ => messages.extend(turn_message(turn)),
    }
    messages
}

/// A user turn in the history: its message list as it is, else its chat message.
pub(super) fn history_turn(turn: &Turn, history: &mut Vec<Value>) {
    match &turn.content {
        Content::Messages(list) => history.extend(list.iter().cloned()),
        _ => history.extend(turn_message(turn)),
    }
}

/// The server's reply in the history: `{"role":"assistant","content"}` with the reply's output
/// text (its reasoning when it has only reasoning); nothing for a failed or empty reply.
fn reply(rec: &RawRecord, history: &mut Vec<Value>) {
    if rec.error.is_some() {
        return;
    }
    let mut parsed = ParsedResponse::default();
    parse_record(EndpointKind::Chat, rec, &mut parsed);
    let text = if parsed.output_text.is_empty() {
        parsed.reasoning_text
    } else {
        parsed.output_text
    };
    if parsed.error.is_none() && !text.is_empty() {
        history.push(serde_json::json!({"role": "assistant", "content": text}));
    }
}

/// Each message's string `content`, or the `text` of its `{"type":"text"}` parts.
pub(super) fn input_texts<'a>(value: &'a Value, texts: &mut Vec<&'a str>) {
    walk(value, texts, false);
}

/// [`input_texts`], each message's replayed `tool_calls` after its content: every call's
/// `function.name` and `function.arguments` (non-empty strings), tokens the model generated
/// that the server reads again (AIPerf counts them in the ISL).
pub(super) fn isl_texts<'a>(value: &'a Value, texts: &mut Vec<&'a str>) {
    walk(value, texts, true);
}

fn walk<'a>(value: &'a Value, texts: &mut Vec<&'a str>, tool_calls: bool) {
    let messages = value.get("messages").and_then(Value::as_array);
    for message in messages.into_iter().flatten() {
        content_texts(message, texts);
        let calls = message.get("tool_calls").and_then(Value::as_array);
        for call in calls.into_iter().flatten().filter(|_| tool_calls) {
            let function = call.get("function");
            for key in ["name", "arguments"] {
                if let Some(t) = function.and_then(|f| f.get(key)).and_then(Value::as_str) {
                    texts.push(t);
                }
            }
        }
    }
}

/// A message's string `content`, or the `text` of its `{"type":"text"}` parts.
fn content_texts<'a>(message: &'a Value, texts: &mut Vec<&'a str>) {
    match message.get("content") {
        Some(Value::String(s)) => texts.push(s),
        Some(Value::Array(parts)) => {
            for part in parts {
                let is_text = part.get("type").and_then(Value::as_str) == Some("text");
                if let (true, Some(t)) = (is_text, part.get("text").and_then(Value::as_str)) {
                    texts.push(t);
                }
            }
        }
        _ => {}
    }
}

/// `chat.completion` → `choices[0].message`, `chat.completion.chunk` → `choices[0].delta`;
/// reasoning, then tool calls, then content (docs/endpoints.md).
pub(super) fn parse(json: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    // A whole body of the common shape is read by a strict scan (`chat_compact`); anything
    // else, and every streamed chunk the worker kept raw, by the full parser.
    if !super::chat_compact::completion(json, stamp_ns, out) {
        parse_full(json, stamp_ns, out);
    }
}

/// The full parser (sonic-rs into the lenient wire types of `crate::endpoint::wire`).
pub(super) fn parse_full(json: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    let Ok(mut body) = sonic_rs::from_slice::<Body<'_>>(json) else {
        return;
    };
    out.spec_decode_payload(body.metrics.speculative_decoding.take());
    let usage_completion = body.usage.present.then(|| {
        let u = body.usage.normalize();
        let completion = u.completion_tokens;
        out.usage = Some(u);
        completion
    });
    let before = out.content_responses();
    parse_data(body, stamp_ns, out);
    if let Some(c) = usage_completion
        && out.content_responses() > before
    {
        out.content_usage(c);
    }
}

/// The data of a parsed body: its reasoning, tool calls or content.
fn parse_data(body: Body<'_>, stamp_ns: u64, out: &mut ParsedResponse) {
    let object = body.object.0.as_deref().unwrap_or("");
    let Some(choice) = body.choices.0 else {
        return;
    };
    let data = match object {
        "chat.completion" => choice.message.0,
        "chat.completion.chunk" => choice.delta.0,
        _ => None,
    };
    let Some(data) = data else {
        return;
    };
    let content = data.content.non_empty();
    let reasoning = data
        .reasoning_content
        .non_empty()
        .or(data.reasoning.non_empty());
    let tool_text = data.tool_calls.0.as_str();
    if let Some(reasoning) = reasoning {
        out.add_reasoning(stamp_ns, reasoning, content);
    } else if !tool_text.is_empty() {
        out.add_tool_call(stamp_ns, content, tool_text);
    } else if let Some(content) = content {
        out.add_text(stamp_ns, content);
    }
}
