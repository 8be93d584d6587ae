//! Hugging Face TGI (`huggingface_generate`, `/generate`, streaming `/generate_stream`; AIPerf's
//! `huggingface_generate.py`).

use serde_json::{Map, Value};

use super::{Descriptor, json, non_empty_str, turn_texts};
use crate::endpoint::payload::{PayloadParams, TurnBody};
use crate::endpoint::response::ParsedResponse;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    streaming_path: Some("/generate_stream"),
    supports_streaming: true,
    produces_tokens: true,
    ..Descriptor::new("/generate", build, super::text_parts, parse)
};

/// `{"inputs": texts joined by " ", "parameters": {"max_new_tokens"?, …--extra-inputs}}`, then
/// the turn's own extras at the top level. No `model`, no `stream` (the path says it).
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let turn = parts.turn;
    let mut parameters = Map::new();
    if let Some(n) = turn.max_tokens {
        parameters.insert("max_new_tokens".into(), Value::from(n));
    }
    for (k, v) in &params.extra_inputs {
        parameters.insert(k.clone(), v.clone());
    }
    let mut body = Map::new();
    body.insert("inputs".into(), Value::from(turn_texts(turn).join(" ")));
    body.insert("parameters".into(), Value::Object(parameters));
    for (k, v) in &turn.extra {
        body.insert(k.clone(), v.clone());
    }
    body
}

/// Streamed events carry `token.text` (never the final event's accumulated `generated_text`);
/// a whole body carries `generated_text` (an object, or a list's first object). A body has a
/// `token` only when streamed, so one parser serves both.
fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    let Some(value) = json(bytes) else {
        return;
    };
    if let Some(token) = value.get("token") {
        if let Some(text) = non_empty_str(token.get("text")) {
            out.add_text(stamp_ns, text);
        }
        return;
    }
    let whole = match &value {
        Value::Array(list) => list.first(),
        other => Some(other),
    };
    if let Some(text) = non_empty_str(whole.and_then(|w| w.get("generated_text"))) {
        out.add_text(stamp_ns, text);
    }
}
