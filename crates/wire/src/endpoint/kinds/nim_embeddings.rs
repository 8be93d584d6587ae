//! NVIDIA NIM Embeddings (`nim_embeddings`, `/v1/embeddings`; AIPerf's `nim_embeddings.py`): the
//! OpenAI embeddings body and parsing (images are not sent by ringperf). Non-streaming; produces
//! no tokens.

use serde_json::{Map, Value};

use super::{Auth, Descriptor, embeddings, turn_texts};
use crate::endpoint::payload::{PayloadParams, TurnBody};

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    default_path: "/v1/embeddings",
    streaming_path: None,
    supports_streaming: false,
    produces_tokens: false,
    tokenizes_input: true,
    metrics_title: "NIM Embeddings Metrics",
    consumes_system_message: false,
    history: None,
    auth: Auth::Bearer,
    build,
    input_texts: super::text_parts,
    parse: embeddings::parse,
    sse_done_is_text: false,
    compact: None,
    media: crate::endpoint::MediaCaps::IMAGE_URL_PARTS,
};

/// `{"model","input":[texts]}` + extras (a text-only turn: AIPerf's `inputs = texts`).
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let texts = turn_texts(parts.turn);
    embeddings::body(params, parts, texts.into_iter().map(Value::from).collect())
}
