//! What a request carried besides text: each `image_url`, `input_audio` and `video_url` (chat),
//! `input_image` (Responses) and `image` (Anthropic Messages)
//! content part decoded from its base64 and read from its own header
//! ([`ringperf_workload::workload::media::probe`]), for the truth log (docs/multimodal.md). Runs only when
//! the truth log is on.

use serde::Serialize;
use serde_json::Value;

use ringperf_workload::workload::media::probe::{Probed, probe};

/// One medium as the mock received it. Numbers the header does not give are 0.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MediaSeen {
    /// `image`, `audio` or `video` (the content part's type).
    pub kind: &'static str,
    /// What the bytes are (`png`, `jpeg`, `wav`, `mp3`, `mp4`, `webm`); `url` for a part that
    /// names a URL; `unreadable` for bytes or base64 the probe cannot read.
    pub format: &'static str,
    /// Decoded bytes (0 for a URL).
    pub bytes: u64,
    pub width: u32,
    pub height: u32,
    pub sample_rate: u32,
    pub channels: u16,
    /// Bits per sample (WAV).
    pub depth: u16,
    /// Audio length in microseconds (truncated).
    pub duration_us: u64,
}

impl MediaSeen {
    fn new(kind: &'static str, format: &'static str, bytes: usize) -> Self {
        Self {
            kind,
            format,
            bytes: bytes as u64,
            width: 0,
            height: 0,
            sample_rate: 0,
            channels: 0,
            depth: 0,
            duration_us: 0,
        }
    }
}

/// Every medium of a body's messages (chat and Anthropic Messages: `messages`; Responses:
/// `input`), in order; empty for a body that is not JSON or has none.
pub fn media_in(body: &[u8]) -> Vec<MediaSeen> {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    let parts = ["messages", "input"]
        .into_iter()
        .filter_map(|key| value.get(key).and_then(Value::as_array))
        .flatten()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten();
    let mut out = Vec::new();
    for part in parts {
        let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
        let seen = match kind {
            "image_url" => url_part(part, "image_url", "image"),
            "video_url" => url_part(part, "video_url", "video"),
            // Responses: the URL as a plain string.
            "input_image" => part
                .get("image_url")
                .and_then(Value::as_str)
                .map(|url| url_seen("image", url)),
            // Anthropic: a `base64` or a `url` source.
            "image" => {
                part.get("source")
                    .map(|source| match source.get("type").and_then(Value::as_str) {
                        Some("base64") => decoded(
                            "image",
                            source.get("data").and_then(Value::as_str).unwrap_or(""),
                        ),
                        _ => MediaSeen::new("image", "url", 0),
                    })
            }
            "input_audio" => part
                .get("input_audio")
                .and_then(|a| a.get("data"))
                .and_then(Value::as_str)
                .map(|data| decoded("audio", data)),
            _ => None,
        };
        out.extend(seen);
    }
    out
}

/// Every file part of a multipart/form-data request, in order, decoded from its own bytes; the
/// kind is the part's media type's (`image/…`, `audio/…`, `video/…`), else `file`.
pub fn media_in_form(parts: &[ringperf_wire::http::form_parse::ParsedPart]) -> Vec<MediaSeen> {
    parts
        .iter()
        .filter(|p| p.filename.is_some())
        .map(|p| {
            let ctype = p.content_type.as_deref().unwrap_or("");
            let kind = ["image", "audio", "video"]
                .into_iter()
                .find(|k| ctype.strip_prefix(k).is_some_and(|r| r.starts_with('/')))
                .unwrap_or("file");
            probed(kind, &p.data)
        })
        .collect()
}

fn url_part(part: &Value, key: &str, kind: &'static str) -> Option<MediaSeen> {
    let url = part.get(key)?.get("url")?.as_str()?;
    Some(url_seen(kind, url))
}

/// A `data:…;base64,` URI decoded, any other URL as a URL.
fn url_seen(kind: &'static str, url: &str) -> MediaSeen {
    match url
        .strip_prefix("data:")
        .and_then(|r| r.split_once(";base64,"))
    {
        Some((_, data)) => decoded(kind, data),
        None => MediaSeen::new(kind, "url", 0),
    }
}

fn decoded(kind: &'static str, base64: &str) -> MediaSeen {
    let Some(bytes) = ringperf_workload::workload::media::base64_decode(base64.as_bytes()) else {
        return MediaSeen::new(kind, "unreadable", 0);
    };
    probed(kind, &bytes)
}

/// What `bytes` are, from their own header.
fn probed(kind: &'static str, bytes: &[u8]) -> MediaSeen {
    let mut seen = MediaSeen::new(kind, "unreadable", bytes.len());
    match probe(bytes) {
        Some(Probed::Image {
            format,
            width,
            height,
        }) => {
            seen.format = format;
            seen.width = width;
            seen.height = height;
        }
        Some(Probed::Audio {
            format,
            sample_rate,
            channels,
            depth,
            seconds,
        }) => {
            seen.format = format;
            seen.sample_rate = sample_rate;
            seen.channels = channels;
            seen.depth = depth;
            seen.duration_us = (seconds * 1e6) as u64;
        }
        Some(Probed::Video { format }) => seen.format = format,
        None => {}
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_workload::workload::media::{
        ImageFormat, ImageSpec, generate_image, image::ImageRngs,
    };

    #[test]
    fn parts_are_decoded_in_order_and_junk_is_named_not_fatal() {
        let img = generate_image(
            &ImageSpec::fixed(12, 7, ImageFormat::Jpeg),
            &mut ImageRngs::new(Some(2)),
        )
        .unwrap();
        let body = serde_json::json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "hi"},
            {"type": "image_url", "image_url": {"url": img.data_uri()}},
            {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png"}},
            {"type": "input_audio", "input_audio": {"data": "!!", "format": "wav"}},
        ]}]});
        let seen = media_in(body.to_string().as_bytes());
        assert_eq!(seen.len(), 3);
        assert_eq!((seen[0].kind, seen[0].format), ("image", "jpeg"));
        assert_eq!((seen[0].width, seen[0].height), (12, 7));
        assert_eq!(seen[0].bytes, img.bytes.len() as u64);
        assert_eq!((seen[1].format, seen[1].bytes), ("url", 0));
        assert_eq!((seen[2].kind, seen[2].format), ("audio", "unreadable"));
        assert!(media_in(b"{not json").is_empty());
    }
}
