//! OpenAI Image Generation (`image_generation`, `/v1/images/generations`; AIPerf's
//! `openai_image_generation.py`). Streams when asked; produces images, not tokens.

use serde_json::{Map, Value};

use super::{Descriptor, json, merge_extras, turn_texts};
use crate::endpoint::payload::{PayloadParams, TurnBody};
use crate::endpoint::response::ParsedResponse;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    supports_streaming: true,
    metrics_title: "Image Generation Metrics",
    ..Descriptor::new("/v1/images/generations", build, super::text_parts, parse)
};

/// `{"prompt","model","response_format":"b64_json","n":1}`, `"stream":true` when streaming,
/// then extras (which may replace `response_format` or `n`). The prompt is the turn's first
/// text; `max_tokens` is not sent.
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let prompt = turn_texts(parts.turn)
        .into_iter()
        .next()
        .unwrap_or_default();
    let mut body = Map::new();
    body.insert("prompt".into(), Value::from(prompt));
    body.insert("model".into(), Value::from(params.model_for(parts.turn)));
    body.insert("response_format".into(), Value::from("b64_json"));
    body.insert("n".into(), Value::from(1));
    if params.streaming {
        body.insert("stream".into(), Value::Bool(true));
    }
    merge_extras(&mut body, params, parts.turn);
    body
}

/// A JSON object is a data response (AIPerf's `ImageResponseData`, even with no images); usage,
/// when present, is kept.
fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    let Some(value) = json(bytes) else {
        return;
    };
    if value.as_object().is_none_or(Map::is_empty) {
        return;
    }
    if let Some(usage) = super::usage_of(value.get("usage")) {
        out.usage = Some(usage);
    }
    out.add_data(stamp_ns);
}
