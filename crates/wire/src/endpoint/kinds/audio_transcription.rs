//! OpenAI Audio Transcription (`audio_transcription`, `/v1/audio/transcriptions`; AIPerf's
//! `openai_audio_transcription.py`): the turn's first audio clip uploaded as a
//! multipart/form-data body (docs/endpoints.md). Non-streaming; its input is not tokenized and it
//! produces no tokens; the transcript is the answer's `text`.
//!
//! The body is built as AIPerf's payload dict, the clip a `{"b64_data","filename",
//! "content_type"}` object (what `inputs.json` shows); [`crate::endpoint::form`] turns it into
//! the form sent on the wire.

use serde_json::{Map, Value};

use super::{Descriptor, json, non_empty_str};
use crate::conversation::{Media, Turn};
use crate::endpoint::form::{FormInputError, file_field};
use crate::endpoint::payload::{PayloadParams, TurnBody, audio_format_and_data};
use crate::endpoint::response::ParsedResponse;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    tokenizes_input: false,
    metrics_title: "Audio Transcription Metrics",
    ..Descriptor::new("/v1/audio/transcriptions", build, input_texts, parse)
};

/// `{"file": <the clip>, "model"}`, then the extras but `file` (the endpoint's own).
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let turn = parts.turn;
    let mut body = Map::new();
    if let Some(clip) = first_clip(turn).filter(|c| !c.is_empty()) {
        let (format, b64) = audio_format_and_data(clip);
        let format = format.to_ascii_lowercase();
        body.insert(
            "file".into(),
            file_field(b64, &format!("audio.{format}"), &mime_of(&format)),
        );
    }
    body.insert("model".into(), Value::from(params.model_for(turn)));
    for (k, v) in params.extra_inputs.iter().chain(&turn.extra) {
        if k != "file" {
            body.insert(k.clone(), v.clone());
        }
    }
    body
}

/// AIPerf's media type of an audio format: OpenAI's transcription formats, else `audio/<fmt>`.
fn mime_of(format: &str) -> String {
    match format {
        "wav" => "audio/wav",
        "mp3" | "mpga" | "mpeg" => "audio/mpeg",
        "flac" => "audio/flac",
        "ogg" => "audio/ogg",
        "m4a" | "mp4" => "audio/mp4",
        "webm" => "audio/webm",
        other => return format!("audio/{other}"),
    }
    .to_owned()
}

/// The turn's first audio clip (`<format>,<base64>` or a `data:audio/…` URI).
fn first_clip(turn: &Turn) -> Option<&str> {
    turn.media.iter().find_map(|m| match m {
        Media::Audio(clip) => Some(&**clip),
        _ => None,
    })
}

/// No text: the body holds a clip.
fn input_texts<'a>(_payload: &'a Value, _out: &mut Vec<&'a str>) {}

/// A JSON answer's `text` (`json` / `verbose_json`), else a body that is not JSON as the
/// transcript itself (`text`, `srt`, `vtt`); an empty transcript is no response.
fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    match json(bytes) {
        Some(value) => {
            if let Some(text) = non_empty_str(value.get("text")) {
                out.add_text(stamp_ns, text);
            }
            if let Some(usage) = super::usage_of(value.get("usage")) {
                out.usage = Some(usage);
            }
        }
        None => {
            let text = String::from_utf8_lossy(bytes);
            if !text.is_empty() {
                out.add_text(stamp_ns, &text);
            }
        }
    }
}

/// What AIPerf refuses for a turn (its `format_payload` errors), before anything is sent: no
/// audio clip, or an empty one. A clip without a `<format>,` prefix is taken as WAV.
pub(crate) fn check(turn: &Turn) -> Result<(), FormInputError> {
    match first_clip(turn) {
        None => Err(FormInputError::NoMedia("audio")),
        Some(clip) if audio_format_and_data(clip).1.is_empty() => {
            Err(FormInputError::EmptyMedia("audio"))
        }
        Some(_) => Ok(()),
    }
}
