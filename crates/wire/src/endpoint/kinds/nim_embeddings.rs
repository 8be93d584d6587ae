//! NVIDIA NIM Embeddings (`nim_embeddings`, `/v1/embeddings`; AIPerf's `nim_embeddings.py`): the
//! OpenAI embeddings body and parsing (images are not sent by ringperf). Non-streaming; produces
//! no tokens.

use serde_json::{Map, Value};

use super::{Descriptor, embeddings, turn_texts};
use crate::endpoint::payload::{PayloadParams, TurnBody};

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    metrics_title: "NIM Embeddings Metrics",
    media: crate::endpoint::MediaCaps::IMAGE_URL_PARTS,
    ..Descriptor::new(
        "/v1/embeddings",
        build,
        super::text_parts,
        embeddings::parse,
    )
};

/// `{"model","input":[texts]}` + extras (a text-only turn: AIPerf's `inputs = texts`).
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let texts = turn_texts(parts.turn);
    embeddings::body(params, parts, texts.into_iter().map(Value::from).collect())
}
