//! The multipart/form-data body of a form payload (docs/endpoints.md), as AIPerf 0.13's
//! transport makes it (`_build_form_data`): one field per payload key in order, `null` skipped;
//! an object with a string `b64_data` is a file (its bytes decoded once, here, before the run;
//! `filename` else the key, `content_type` else `application/octet-stream`); any other value a
//! text field as Python's `str` writes it (booleans lowercase).

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use ringperf_wire::endpoint::form::field_text;
use ringperf_wire::http::multipart::{FormPart, MultipartBody};

/// A payload that cannot be sent as a form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormBodyError {
    /// The payload is not a JSON object.
    NotAnObject,
    /// A file field's `b64_data` is not valid base64 (the field's name).
    BadBase64(String),
}

impl fmt::Display for FormBodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormBodyError::NotAnObject => f.write_str("a form payload must be a JSON object"),
            FormBodyError::BadBase64(key) => {
                write!(f, "field {key:?}: 'b64_data' is not valid base64")
            }
        }
    }
}

impl std::error::Error for FormBodyError {}

/// Why a turn's body cannot be sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The form payload cannot be made into a form.
    Form(FormBodyError),
    /// The request for base URL `url` cannot be written.
    Http {
        url: usize,
        error: ringperf_wire::http::HttpError,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::Form(e) => write!(f, "cannot make the form: {e}"),
            EncodeError::Http { url, error } => {
                write!(f, "cannot encode the request for URL {url}: {error}")
            }
        }
    }
}

impl std::error::Error for EncodeError {}

/// The form of the JSON `payload`, delimited by a boundary made of `boundary_id`. Each file's
/// bytes are decoded once into a shared buffer.
pub fn form_body(payload: &[u8], boundary_id: u128) -> Result<MultipartBody, FormBodyError> {
    let value: Value = serde_json::from_slice(payload).map_err(|_| FormBodyError::NotAnObject)?;
    let Value::Object(fields) = value else {
        return Err(FormBodyError::NotAnObject);
    };
    let mut parts = Vec::with_capacity(fields.len());
    for (key, value) in &fields {
        if value.is_null() {
            continue;
        }
        if let Some(b64) = value.get("b64_data").and_then(Value::as_str) {
            let bytes = super::media::base64_decode(b64.as_bytes())
                .ok_or_else(|| FormBodyError::BadBase64(key.clone()))?;
            let text = |name: &str| {
                value
                    .get(name)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
            };
            parts.push(FormPart::file(
                key.as_str(),
                text("filename").unwrap_or(key),
                text("content_type").unwrap_or("application/octet-stream"),
                Arc::from(bytes),
            ));
            continue;
        }
        parts.push(FormPart::text(key.as_str(), field_text(value)));
    }
    Ok(MultipartBody::new(&parts, boundary_id))
}

/// The length in seconds of the audio clip a form payload uploads as its `file` (`None` when
/// it has none, or one whose header does not say): frames over the sample rate for WAV, the
/// frames' durations for MP3 (`super::media::probe`).
pub fn clip_seconds(payload: &[u8]) -> Option<f64> {
    let value: Value = serde_json::from_slice(payload).ok()?;
    let b64 = value.get("file")?.get("b64_data")?.as_str()?;
    let bytes = super::media::base64_decode(b64.as_bytes())?;
    match super::media::probe::probe(&bytes)? {
        super::media::probe::Probed::Audio { seconds, .. } => Some(seconds),
        _ => None,
    }
}

/// The length in seconds of the first `input_audio` clip of a chat body's last message (a
/// Responses body's last `input` item) (`None` when it has none, or one whose header does not
/// say), as [`clip_seconds`] reads a form's.
pub fn chat_clip_seconds(payload: &[u8]) -> Option<f64> {
    let value: Value = serde_json::from_slice(payload).ok()?;
    let list = value.get("messages").or_else(|| value.get("input"))?;
    let parts = list.as_array()?.last()?.get("content")?;
    let b64 = parts
        .as_array()?
        .iter()
        .find(|p| p.get("type").and_then(Value::as_str) == Some("input_audio"))?
        .get("input_audio")?
        .get("data")?
        .as_str()?;
    let bytes = super::media::base64_decode(b64.as_bytes())?;
    match super::media::probe::probe(&bytes)? {
        super::media::probe::Probed::Audio { seconds, .. } => Some(seconds),
        _ => None,
    }
}

/// The boundary of turn `turn`'s form in a run of `seed`: the same seed gives the same bytes
/// (SplitMix64 of both, twice, for 128 bits).
pub fn boundary_id(seed: u64, turn: u64) -> u128 {
    fn mix(mut z: u64) -> u64 {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let hi = mix(seed ^ mix(turn));
    let lo = mix(hi ^ turn.rotate_left(32));
    (u128::from(hi) << 64) | u128::from(lo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_wire::http::form_parse::{FormParser, boundary_of};

    /// Parses a body back with the mock's form parser (an independent reader of the wire).
    fn parse(body: &MultipartBody) -> Vec<ringperf_wire::http::form_parse::ParsedPart> {
        let ct = body.content_type();
        let boundary = boundary_of(&ct).unwrap();
        let bytes = body.to_vec();
        let mut p = FormParser::new(boundary, bytes.len()).unwrap();
        p.feed(&bytes).unwrap();
        p.finish().unwrap()
    }

    #[test]
    fn a_payload_becomes_fields_in_order_with_decoded_files() {
        // "aGVsbG8=" is base64 for "hello".
        let payload = br#"{"prompt":"make it blue","model":"m","response_format":"b64_json","n":1,
            "image":{"b64_data":"aGVsbG8=","filename":"image.png","content_type":"image/png"},
            "skip":null,"flag":true,"temp":0.5,"bare":{"b64_data":"AAEC"}}"#;
        let body = form_body(payload, 42).unwrap();
        let parts = parse(&body);
        let names: Vec<&str> = parts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "prompt",
                "model",
                "response_format",
                "n",
                "image",
                "flag",
                "temp",
                "bare"
            ]
        );
        let text = |i: usize| String::from_utf8(parts[i].data.to_vec()).unwrap();
        assert_eq!(text(0), "make it blue");
        assert_eq!(text(3), "1");
        assert_eq!(text(5), "true");
        assert_eq!(text(6), "0.5");
        assert_eq!(&parts[4].data[..], b"hello");
        assert_eq!(parts[4].filename.as_deref(), Some("image.png"));
        assert_eq!(parts[4].content_type.as_deref(), Some("image/png"));
        // A file without a name or a type: the key, and octet-stream.
        assert_eq!(&parts[7].data[..], &[0u8, 1, 2]);
        assert_eq!(parts[7].filename.as_deref(), Some("bare"));
        assert_eq!(
            parts[7].content_type.as_deref(),
            Some("application/octet-stream")
        );
    }

    #[test]
    fn bad_payloads_are_errors() {
        assert_eq!(
            form_body(br#"{"file":{"b64_data":"a*b="}}"#, 1).unwrap_err(),
            FormBodyError::BadBase64("file".into())
        );
        assert_eq!(
            form_body(b"[1,2]", 1).unwrap_err(),
            FormBodyError::NotAnObject
        );
        assert_eq!(
            form_body(b"not json", 1).unwrap_err(),
            FormBodyError::NotAnObject
        );
    }

    #[test]
    fn boundaries_depend_on_seed_and_turn() {
        assert_eq!(boundary_id(1, 2), boundary_id(1, 2));
        assert_ne!(boundary_id(1, 2), boundary_id(1, 3));
        assert_ne!(boundary_id(1, 2), boundary_id(2, 2));
    }
}
