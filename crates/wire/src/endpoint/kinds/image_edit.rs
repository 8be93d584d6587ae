//! OpenAI Image Edit (`image_edit`, `/v1/images/edits`; AIPerf's `openai_image_edit.py`): the
//! turn's first image uploaded with its first text as the prompt, as a multipart/form-data body
//! (docs/endpoints.md). Non-streaming; produces images, not tokens.
//!
//! The body is built as AIPerf's payload dict, the image a `{"b64_data","filename",
//! "content_type"}` object (what `inputs.json` shows); [`crate::endpoint::form`] turns it into
//! the form sent on the wire.

use serde_json::{Map, Value};

use super::{Descriptor, json, turn_texts};
use crate::conversation::{Media, Turn};
use crate::endpoint::form::{FormInputError, file_field, image_mime};
use crate::endpoint::payload::{PayloadParams, TurnBody};
use crate::endpoint::response::ParsedResponse;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    metrics_title: "Image Edit Metrics",
    media: crate::endpoint::MediaCaps::IMAGE_URL_PARTS,
    ..Descriptor::new("/v1/images/edits", build, super::text_parts, parse)
};

/// Keys the endpoint owns: `--extra-inputs` and a turn's extras cannot replace them (AIPerf
/// warns and drops them).
const RESERVED: [&str; 4] = ["prompt", "image", "url", "mask"];

/// `{"prompt","model","response_format":"b64_json","n":1}`, then `"url"` for an image given as
/// an `http(s)://` URL or `"image"` (the file) for one given inline, then the extras but the
/// reserved keys. A turn [`check`] refuses gets no image field.
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let turn = parts.turn;
    let mut body = Map::new();
    body.insert(
        "prompt".into(),
        Value::from(prompt(turn).unwrap_or_default()),
    );
    body.insert("model".into(), Value::from(params.model_for(turn)));
    body.insert("response_format".into(), Value::from("b64_json"));
    body.insert("n".into(), Value::from(1));
    match first_image(turn) {
        Some(url) if is_http(url) => {
            body.insert("url".into(), Value::from(url));
        }
        Some(inline) => {
            if let Ok((mime, b64)) = image_mime(inline) {
                let ext = mime.strip_prefix("image/").unwrap_or("png");
                let ext = if ext == "jpeg" { "jpg" } else { ext };
                body.insert(
                    "image".into(),
                    file_field(b64, &format!("image.{ext}"), mime),
                );
            }
        }
        None => {}
    }
    for (k, v) in params.extra_inputs.iter().chain(&turn.extra) {
        if !RESERVED.contains(&k.as_str()) {
            body.insert(k.clone(), v.clone());
        }
    }
    body
}

/// The turn's first non-empty text (AIPerf's `turn.texts[0].contents[0]`), as image
/// generation takes its prompt.
fn prompt(turn: &Turn) -> Option<String> {
    turn_texts(turn).into_iter().next()
}

/// The turn's first image (a URL or a `data:` URI / raw base64).
fn first_image(turn: &Turn) -> Option<&str> {
    turn.media.iter().find_map(Media::image_url)
}

fn is_http(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// A JSON object is a data response (AIPerf's `ImageResponseData`, even with no images); usage,
/// when present, is kept.
fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    let Some(value) = json(bytes).filter(|v| v.as_object().is_some_and(|o| !o.is_empty())) else {
        return;
    };
    if let Some(usage) = super::usage_of(value.get("usage")) {
        out.usage = Some(usage);
    }
    out.add_data(stamp_ns);
}

/// What AIPerf refuses for a turn (its `format_payload` errors), before anything is sent: no
/// text prompt, no image, an empty image, or inline bytes that are not a known image format.
pub(crate) fn check(turn: &Turn) -> Result<(), FormInputError> {
    if prompt(turn).is_none() {
        return Err(FormInputError::NoPrompt);
    }
    match first_image(turn) {
        None => Err(FormInputError::NoMedia("image")),
        Some("") => Err(FormInputError::EmptyMedia("image")),
        Some(url) if is_http(url) => Ok(()),
        Some(inline) => image_mime(inline).map(|_| ()),
    }
}
