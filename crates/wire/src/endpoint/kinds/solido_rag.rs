//! Solido RAG (`solido_rag`, `/rag/api/prompt`; AIPerf's `solido_rag.py`). Streams when the
//! server streams; produces tokens.

use serde_json::{Map, Value};

use super::{Descriptor, json, merge_extras, non_empty_str, turn_texts};
use crate::endpoint::payload::{PayloadParams, TurnBody};
use crate::endpoint::response::ParsedResponse;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    supports_streaming: true,
    produces_tokens: true,
    metrics_title: "SOLIDO RAG Metrics",
    // AIPerf's generic walk takes a `query` only as one string beside `passages`: this type's
    // list of query strings contributes no input text, as there.
    ..Descriptor::new("/rag/api/prompt", build, super::text_parts, parse)
};

/// `{"query":[texts],"filters":{"family":"Solido","tool":"SDE"},"inference_model":model}` +
/// extras. No `stream`, no `max_tokens`: the body has no field for them.
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let mut body = Map::new();
    let query = turn_texts(parts.turn)
        .into_iter()
        .map(Value::from)
        .collect();
    body.insert("query".into(), Value::Array(query));
    body.insert(
        "filters".into(),
        serde_json::json!({ "family": "Solido", "tool": "SDE" }),
    );
    body.insert(
        "inference_model".into(),
        Value::from(params.model_for(parts.turn)),
    );
    merge_extras(&mut body, params, parts.turn);
    body
}

/// A response object (a whole body, or one SSE message's data) is a text response when its
/// `content` is a non-empty string; `sources` are not read.
fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    let Some(value) = json(bytes) else {
        return;
    };
    if let Some(text) = non_empty_str(value.get("content")) {
        out.add_text(stamp_ns, text);
    }
}
