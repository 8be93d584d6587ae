//! NVIDIA NIM Image Retrieval (`image_retrieval`, `/v1/infer`; AIPerf's
//! `nim_image_retrieval.py`). Non-streaming; neither tokenizes its input nor produces tokens.

use serde_json::{Map, Value};

use super::{Descriptor, data_if_listed, merge_extras};
use crate::conversation::Media;
use crate::endpoint::payload::{PayloadParams, TurnBody};
use crate::endpoint::response::ParsedResponse;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    tokenizes_input: false,
    metrics_title: "Image Retrieval Metrics",
    media: crate::endpoint::MediaCaps {
        images: crate::endpoint::media_parts::ImageParts::InputList,
        produces_videos: false,
    },
    ..Descriptor::new("/v1/infer", build, input_texts, parse)
};

/// `{"input":[{"type":"image_url","url":<URL or data URI>}…]}` (one item per non-empty image
/// of the turn, in order) + extras. No model, no texts, no `max_tokens`.
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let input = parts
        .turn
        .media
        .iter()
        .filter_map(Media::image_url)
        .filter(|url| !url.is_empty())
        .map(|url| serde_json::json!({ "type": "image_url", "url": url }))
        .collect();
    let mut body = Map::new();
    body.insert("input".into(), Value::Array(input));
    merge_extras(&mut body, params, parts.turn);
    body
}

/// No text: the body holds only images.
fn input_texts<'a>(_payload: &'a Value, _out: &mut Vec<&'a str>) {}

/// `data`, a non-empty list (what it holds is not read).
fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    data_if_listed(bytes, stamp_ns, out, |v| v.get("data")?.as_array());
}
