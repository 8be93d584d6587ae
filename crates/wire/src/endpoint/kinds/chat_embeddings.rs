//! Chat-style embeddings (`chat_embeddings`, `/v1/embeddings`; AIPerf's `chat_embeddings.py`):
//! the request is a chat body (vLLM multimodal embedding models), the response an embeddings
//! list. Non-streaming; produces no tokens.

use serde_json::Value;

use super::{Descriptor, chat, json};
use crate::endpoint::response::ParsedResponse;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    metrics_title: "Embeddings Metrics",
    consumes_system_message: true,
    media: crate::endpoint::MediaCaps::IMAGE_URL_PARTS,
    ..Descriptor::new("/v1/embeddings", chat::build, chat::input_texts, parse)
};

/// AIPerf's `try_extract_embeddings`: `data[0].object == "embedding"` with some `embedding`;
/// else a non-empty `embeddings` / `embedding` list of numbers or of lists.
fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    let Some(value) = json(bytes) else {
        return;
    };
    if has_embeddings(&value) {
        out.add_data(stamp_ns);
    }
}

/// AIPerf's `try_extract_embeddings` on an object (shared with the auto-detecting endpoints).
pub(super) fn has_embeddings(value: &Value) -> bool {
    if let Some(data) = value.get("data").and_then(Value::as_array)
        && data
            .first()
            .is_some_and(|d| d.get("object").and_then(Value::as_str) == Some("embedding"))
        && data.iter().any(|d| d.get("embedding").is_some())
    {
        return true;
    }
    ["embeddings", "embedding"].iter().any(|field| {
        value
            .get(field)
            .and_then(Value::as_array)
            .and_then(|v| v.first())
            .is_some_and(|first| first.is_number() || first.is_array())
    })
}
