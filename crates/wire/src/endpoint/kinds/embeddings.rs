//! OpenAI Embeddings (`embeddings`, `/v1/embeddings`; AIPerf's `openai_embeddings.py`).
//! Non-streaming; produces no tokens.

use serde_json::{Map, Value};

use super::{Descriptor, json, merge_extras, turn_texts};
use crate::endpoint::payload::{PayloadParams, TurnBody};
use crate::endpoint::response::ParsedResponse;
use crate::record::RequestError;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    metrics_title: "Embeddings Metrics",
    ..Descriptor::new("/v1/embeddings", build, super::text_parts, parse)
};

/// `{"model","input":[texts]}` + extras; `max_tokens` is not sent.
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let texts = turn_texts(parts.turn);
    body(params, parts, texts.into_iter().map(Value::from).collect())
}

/// The embeddings body around `inputs` (shared with `nim_embeddings`).
pub(super) fn body(
    params: &PayloadParams,
    parts: &TurnBody<'_>,
    inputs: Vec<Value>,
) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), Value::from(params.model_for(parts.turn)));
    body.insert("input".into(), Value::Array(inputs));
    merge_extras(&mut body, params, parts.turn);
    body
}

/// `data` must be a non-empty list of `{"object":"embedding"}` items; one with an `embedding`
/// makes the body a content response. A list holding anything else is the record's error (AIPerf
/// raises `ValueError`).
pub(super) fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    let Some(value) = json(bytes) else {
        return;
    };
    let Some(data) = value.get("data").and_then(Value::as_array) else {
        return;
    };
    if data.is_empty() {
        return;
    }
    let all_embeddings = data
        .iter()
        .all(|item| item.get("object").and_then(Value::as_str) == Some("embedding"));
    if !all_embeddings {
        out.error = Some(RequestError::new(
            None,
            "ValueError",
            "Received invalid list in response: the `data` items are not all embeddings",
        ));
        return;
    }
    if data
        .iter()
        .any(|item| item.get("embedding").is_some_and(|e| !e.is_null()))
    {
        out.add_data(stamp_ns);
    }
}
