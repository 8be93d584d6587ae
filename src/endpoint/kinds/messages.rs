//! Anthropic Messages (`messages`, `/v1/messages`; AIPerf's `anthropic_messages.py`): the key
//! goes in `x-api-key` with an `anthropic-version` header, the system prompt is top-level, and
//! `max_tokens` is required.

use serde_json::{Map, Value};

use super::{Auth, Descriptor, json, merge_extras, non_empty_str, usage_of, walk_texts};
use crate::conversation::Content;
use crate::endpoint::payload::{PayloadParams, TurnBody, turn_message};
use crate::endpoint::response::ParsedResponse;

/// The `anthropic-version` header value AIPerf sends unless the user sets one.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `max_tokens` when the turn asks for none (the Messages API requires it).
const DEFAULT_MAX_TOKENS: u32 = 1024;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    default_path: "/v1/messages",
    streaming_path: None,
    supports_streaming: true,
    produces_tokens: true,
    tokenizes_input: true,
    metrics_title: "LLM Metrics",
    consumes_system_message: true,
    carries_history: false,
    auth: Auth::AnthropicKey,
    build,
    input_texts,
    parse,
};

/// `{"model","messages":[user context?, this turn's message(s)],"max_tokens"}` + `"stream":true`
/// only when streaming + `system` when there is one, then the extras.
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let turn = parts.turn;
    let mut messages = Vec::new();
    if let Some(context) = parts.user_context {
        messages.push(serde_json::json!({"role": "user", "content": context}));
    }
    match &turn.content {
        Content::Messages(list) => messages.extend(list.iter().cloned()),
        _ => messages.extend(turn_message(turn)),
    }
    let mut body = Map::new();
    body.insert("model".into(), Value::from(params.model.as_str()));
    body.insert("messages".into(), Value::Array(messages));
    body.insert(
        "max_tokens".into(),
        Value::from(turn.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if params.streaming {
        body.insert("stream".into(), Value::Bool(true));
    }
    if let Some(system) = parts.system.filter(|s| !s.is_empty()) {
        body.insert("system".into(), Value::from(system));
    }
    merge_extras(&mut body, params, turn);
    body
}

/// `system` (a string, or the texts of its blocks), then the `messages` texts.
fn input_texts<'a>(value: &'a Value, texts: &mut Vec<&'a str>) {
    match value.get("system") {
        Some(Value::String(s)) if !s.is_empty() => texts.push(s),
        Some(Value::Array(blocks)) => {
            for block in blocks {
                match block {
                    Value::String(s) if !s.is_empty() => texts.push(s),
                    Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("text") => {
                        texts.extend(non_empty_str(o.get("text")));
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    walk_texts(value, &["text"], texts);
}

/// By `type`: `message` (a whole body: its `content` blocks and `usage`), `message_start`
/// (`message.usage`), `content_block_delta` (`text_delta` text, `thinking_delta` reasoning,
/// `input_json_delta` tool text), `message_delta` (`usage`). Usage of later events wins field
/// by field, earlier events fill what they omit (`message_delta` carries only `output_tokens`).
fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    let Some(value) = json(bytes) else {
        return;
    };
    if value.as_object().is_none_or(|o| o.is_empty()) {
        return;
    }
    match value.get("type").and_then(Value::as_str) {
        Some("message") => whole(&value, stamp_ns, out),
        Some("message_start") => {
            merge_usage(out, value.get("message").and_then(|m| m.get("usage")))
        }
        Some("message_delta") => merge_usage(out, value.get("usage")),
        Some("content_block_delta") => {
            let delta = value.get("delta");
            let text = |key| non_empty_str(delta.and_then(|d: &Value| d.get(key)));
            match delta.and_then(|d| d.get("type")).and_then(Value::as_str) {
                Some("text_delta") => {
                    if let Some(t) = text("text") {
                        out.add_text(stamp_ns, t);
                    }
                }
                Some("thinking_delta") => {
                    if let Some(t) = text("thinking") {
                        out.add_reasoning(stamp_ns, t, None);
                    }
                }
                Some("input_json_delta") => {
                    if let Some(t) = text("partial_json") {
                        out.add_tool_call(stamp_ns, None, t);
                    }
                }
                _ => {}
            }
        }
        _ => {}
    }
}

/// AIPerf folds the keys of earlier usages into the last one (`setdefault`): the newest value
/// of each count wins, an older one fills a count the newest omits.
fn merge_usage(out: &mut ParsedResponse, usage: Option<&Value>) {
    let Some(mut new) = usage_of(usage) else {
        return;
    };
    if let Some(old) = &out.usage {
        let fill = |n: &mut Option<u64>, o: Option<u64>| *n = n.or(o);
        fill(&mut new.prompt_tokens, old.prompt_tokens);
        fill(&mut new.completion_tokens, old.completion_tokens);
        fill(&mut new.total_tokens, old.total_tokens);
        fill(&mut new.reasoning_tokens, old.reasoning_tokens);
        fill(
            &mut new.prompt_cache_read_tokens,
            old.prompt_cache_read_tokens,
        );
        fill(
            &mut new.prompt_cache_write_tokens,
            old.prompt_cache_write_tokens,
        );
        fill(&mut new.prompt_audio_tokens, old.prompt_audio_tokens);
        fill(
            &mut new.completion_audio_tokens,
            old.completion_audio_tokens,
        );
        fill(
            &mut new.accepted_prediction_tokens,
            old.accepted_prediction_tokens,
        );
        fill(
            &mut new.rejected_prediction_tokens,
            old.rejected_prediction_tokens,
        );
    }
    out.usage = Some(new);
}

/// A whole `message` body: thinking blocks (reasoning, with the text), else `tool_use` blocks
/// (name + serialized input, with the text), else text.
fn whole(value: &Value, stamp_ns: u64, out: &mut ParsedResponse) {
    merge_usage(out, value.get("usage"));
    let Some(blocks) = value.get("content").and_then(Value::as_array) else {
        return;
    };
    let (mut text, mut thinking, mut tool) = (String::new(), String::new(), String::new());
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(non_empty_str(block.get("text")).unwrap_or("")),
            Some("thinking") => {
                thinking.push_str(non_empty_str(block.get("thinking")).unwrap_or(""));
            }
            Some("tool_use") => {
                tool.push_str(non_empty_str(block.get("name")).unwrap_or(""));
                if let Some(input) = block.get("input").filter(|i| super::truthy(i)) {
                    tool.push_str(&input.to_string());
                }
            }
            _ => {}
        }
    }
    let content = (!text.is_empty()).then_some(text.as_str());
    if !thinking.is_empty() {
        out.add_reasoning(stamp_ns, &thinking, content);
    } else if !tool.is_empty() {
        out.add_tool_call(stamp_ns, content, &tool);
    } else if let Some(text) = content {
        out.add_text(stamp_ns, text);
    }
}
