//! Anthropic Messages (`messages`, `/v1/messages`; AIPerf's `anthropic_messages.py`): the key
//! goes in `x-api-key` with an `anthropic-version` header, the system prompt is top-level, and
//! `max_tokens` is required.

use serde_json::{Map, Value};

use super::{
    Auth, Descriptor, History, json, merge_extras, non_empty_str, reply_text, usage_of, walk_texts,
};
use crate::endpoint::EndpointKind;
use crate::endpoint::payload::{PartDialect, PayloadParams, TurnBody, turn_message_in};
use crate::endpoint::response::ParsedResponse;
use crate::endpoint::response::for_each_object;
use crate::record::RawRecord;

/// The `anthropic-version` header value AIPerf sends unless the user sets one.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `max_tokens` when the turn asks for none (the Messages API requires it).
const DEFAULT_MAX_TOKENS: u32 = 1024;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    supports_streaming: true,
    produces_tokens: true,
    consumes_system_message: true,
    history: Some(History {
        turn: history_turn,
        reply,
    }),
    auth: Auth::AnthropicKey,
    media: crate::endpoint::MediaCaps {
        images: crate::endpoint::media_parts::ImageParts::Parts(&["image"]),
        produces_videos: false,
    },
    ..Descriptor::new("/v1/messages", build, input_texts, parse)
};

/// `{"model","messages":[user context?, history…, this turn's message(s)],"max_tokens"}` + `"stream":true`
/// only when streaming + `system` when there is one, then the extras.
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let turn = parts.turn;
    let mut messages = Vec::new();
    if let Some(context) = parts.user_context {
        messages.push(serde_json::json!({"role": "user", "content": context}));
    }
    messages.extend(parts.history.iter().cloned());
    history_turn(turn, &mut messages);
    let mut body = Map::new();
    body.insert("model".into(), Value::from(params.model_for(parts.turn)));
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

/// A turn in the message list: its own messages verbatim, else chat's message shape with
/// Anthropic's `image` blocks for its images.
fn history_turn(turn: &crate::conversation::Turn, history: &mut Vec<Value>) {
    match &turn.content {
        crate::conversation::Content::Messages(list) => history.extend(list.iter().cloned()),
        _ => history.extend(turn_message_in(PartDialect::Anthropic, turn)),
    }
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

/// What a reply's blocks add up to (AIPerf's assistant-replay accumulators).
#[derive(Default)]
struct Blocks {
    text: String,
    /// Thinking blocks by index, without their `type`.
    thinking: Vec<(i64, Map<String, Value>)>,
    /// `tool_use` blocks by index, without their `type`; a streamed block's input JSON text
    /// accumulates in `partial`.
    tool_uses: Vec<(i64, Map<String, Value>, Option<String>)>,
}

impl Blocks {
    fn absorb(&mut self, value: &Value) {
        match value.get("type").and_then(Value::as_str) {
            Some("message") => {
                let blocks = value.get("content").and_then(Value::as_array);
                for block in blocks.into_iter().flatten() {
                    let Some(block) = block.as_object() else {
                        continue;
                    };
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            self.text
                                .push_str(block.get("text").and_then(Value::as_str).unwrap_or(""));
                        }
                        Some("thinking") => {
                            let at = self.thinking.len() as i64;
                            self.thinking.push((at, untyped(block)));
                        }
                        Some("tool_use") => {
                            let at = self.tool_uses.len() as i64;
                            self.tool_uses.push((at, untyped(block), None));
                        }
                        _ => {}
                    }
                }
            }
            Some("content_block_start") => {
                let Some(block) = value.get("content_block").and_then(Value::as_object) else {
                    return;
                };
                let index = value.get("index").and_then(Value::as_i64);
                match block.get("type").and_then(Value::as_str) {
                    Some("thinking") => {
                        let mut fields = untyped(block);
                        fields.entry("thinking").or_insert_with(|| Value::from(""));
                        fields.entry("signature").or_insert_with(|| Value::from(""));
                        let at = index.unwrap_or(self.thinking.len() as i64);
                        upsert(&mut self.thinking, at, fields);
                    }
                    Some("tool_use") => {
                        let at = index.unwrap_or(self.tool_uses.len() as i64);
                        self.tool_uses.retain(|(i, ..)| *i != at);
                        self.tool_uses
                            .push((at, untyped(block), Some(String::new())));
                    }
                    _ => {}
                }
            }
            Some("content_block_delta") => {
                let Some(delta) = value.get("delta") else {
                    return;
                };
                let fragment = |key: &str| delta.get(key).and_then(Value::as_str);
                let ty = delta.get("type").and_then(Value::as_str);
                if ty == Some("text_delta") {
                    self.text.push_str(fragment("text").unwrap_or(""));
                    return;
                }
                let Some(index) = value.get("index").and_then(Value::as_i64) else {
                    return;
                };
                let thinking = self.thinking.iter_mut().find(|(i, _)| *i == index);
                let tool = self.tool_uses.iter_mut().find(|(i, ..)| *i == index);
                match (ty, thinking, tool) {
                    (Some("thinking_delta"), Some((_, fields)), _) => {
                        append(fields, "thinking", fragment("thinking"));
                    }
                    (Some("signature_delta"), Some((_, fields)), _) => {
                        append(fields, "signature", fragment("signature"));
                    }
                    (Some("input_json_delta"), _, Some((_, _, partial))) => {
                        if let Some(Value::String(s)) = delta.get("partial_json") {
                            partial.get_or_insert_default().push_str(s);
                        } else {
                            partial.get_or_insert_default();
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

/// A block's fields but its `type`.
fn untyped(block: &Map<String, Value>) -> Map<String, Value> {
    let mut fields = block.clone();
    fields.shift_remove("type");
    fields
}

fn upsert(list: &mut Vec<(i64, Map<String, Value>)>, at: i64, fields: Map<String, Value>) {
    match list.iter_mut().find(|(i, _)| *i == at) {
        Some(slot) => slot.1 = fields,
        None => list.push((at, fields)),
    }
}

/// Appends a string fragment to a string field (a field that is not a string is replaced).
fn append(fields: &mut Map<String, Value>, key: &str, fragment: Option<&str>) {
    let Some(fragment) = fragment else {
        return;
    };
    let mut text = fields
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    text.push_str(fragment);
    fields.insert(key.into(), Value::from(text));
}

/// A block with its `type` first and its null fields dropped.
fn typed(ty: &str, fields: Map<String, Value>) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), Value::from(ty));
    block.extend(fields.into_iter().filter(|(_, v)| !v.is_null()));
    Value::Object(block)
}

/// The reply in the history (AIPerf's `build_assistant_turn`): with thinking or `tool_use`
/// blocks (a whole `message`, or streamed `content_block_start` + deltas by index), one
/// assistant message of its blocks: thinking (with its signature), then the text, then each
/// `tool_use` (a streamed input parsed from its JSON text, kept as a string when it is not JSON,
/// `{}` when none came). Otherwise `{"role":"assistant","content": text}` of the reply's text
/// (nothing when it is empty).
fn reply(rec: &RawRecord, history: &mut Vec<Value>) {
    let mut blocks = Blocks::default();
    for_each_object(rec, |bytes| {
        if let Some(value) = json(bytes).filter(|v| v.as_object().is_some_and(|o| !o.is_empty())) {
            blocks.absorb(&value);
        }
    });
    if blocks.thinking.is_empty() && blocks.tool_uses.is_empty() {
        let text = reply_text(EndpointKind::Messages, rec);
        if !text.is_empty() {
            history.push(serde_json::json!({"role": "assistant", "content": text}));
        }
        return;
    }
    let mut content = Vec::new();
    blocks.thinking.sort_by_key(|(i, _)| *i);
    content.extend(
        blocks
            .thinking
            .into_iter()
            .map(|(_, f)| typed("thinking", f)),
    );
    if !blocks.text.is_empty() {
        content.push(serde_json::json!({"type": "text", "text": blocks.text}));
    }
    blocks.tool_uses.sort_by_key(|(i, ..)| *i);
    for (_, mut fields, partial) in blocks.tool_uses {
        match partial.as_deref() {
            Some("") => {
                fields
                    .entry("input")
                    .or_insert_with(|| Value::Object(Map::new()));
            }
            Some(raw) => {
                let input = serde_json::from_str(raw).unwrap_or_else(|_| Value::from(raw));
                fields.insert("input".into(), input);
            }
            None => {}
        }
        content.push(typed("tool_use", fields));
    }
    history.push(serde_json::json!({"role": "assistant", "content": content}));
}
