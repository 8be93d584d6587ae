//! OpenAI / SGLang Video Generation (`video_generation`, `/v1/videos`; AIPerf's
//! `openai_video_generation.py`). The answer is a job, polled to its end by the worker
//! (`worker::video_job`); the record then holds two response objects, the submission's answer
//! and the job's final status.

use serde_json::{Map, Value};

use super::{Descriptor, json, merge_extras, turn_texts};
use crate::endpoint::payload::{PayloadParams, TurnBody};
use crate::endpoint::response::ParsedResponse;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    metrics_title: "Video Generation Metrics",
    media: crate::endpoint::MediaCaps {
        images: crate::endpoint::media_parts::ImageParts::None,
        produces_videos: true,
    },
    ..Descriptor::new("/v1/videos", build, super::text_parts, parse)
};

/// `{"prompt","model"}` (the turn's first text), then extras (`size`, `seconds`, `seed`, ...).
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let prompt = turn_texts(parts.turn)
        .into_iter()
        .next()
        .unwrap_or_default();
    let mut body = Map::new();
    body.insert("prompt".into(), Value::from(prompt));
    body.insert("model".into(), Value::from(params.model.as_str()));
    merge_extras(&mut body, params, parts.turn);
    body
}

/// A JSON object is a data response (AIPerf's `VideoResponseData`); usage, when present, is
/// kept.
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
    let number = |key: &str| value.get(key).and_then(Value::as_f64);
    let video = &mut out.video;
    video.inference_time_s = video
        .inference_time_s
        .or_else(|| number("inference_time_s"));
    video.peak_memory_mb = video.peak_memory_mb.or_else(|| number("peak_memory_mb"));
    out.add_data(stamp_ns);
}
