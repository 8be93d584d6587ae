//! Synthetic media for multimodal requests (docs/multimodal.md): noise images (PNG, JPEG),
//! noise audio (WAV, MP3 through FFmpeg) and synthetic video (MP4, WebM through FFmpeg), drawn
//! as AIPerf 0.13's generators draw them, plus the base64 and data-URI forms a body carries.
//!
//! Everything here runs before the run (the dataset is built before the first send); the
//! result is an [`EncodedMedia`] whose bytes are shared (`Arc`) by every request that uses it.
//! [`probe`] reads back what a body carried (the mock's truth log).

use std::sync::Arc;

pub mod audio;
pub mod ffmpeg;
pub mod image;
pub mod probe;
pub mod video;

pub use audio::{AudioFormat, AudioSpec, generate_audio};
pub use image::{ImageFormat, ImageSpec, generate_image};
pub use video::{VideoFormat, VideoSpec, VideoSynthType, generate_video};

/// One encoded medium: the file's bytes, its MIME type, and what it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct EncodedMedia {
    /// The encoded file (PNG, JPEG, WAV, MP3, MP4, WebM), shared by every request using it.
    pub bytes: Arc<[u8]>,
    /// `image/png`, `audio/wav`, `video/mp4`, ...
    pub mime: &'static str,
    /// The short format name AIPerf writes (`png`, `jpeg`, `wav`, `mp3`, `mp4`, `webm`).
    pub format: &'static str,
    /// Pixels across (images and video; 0 for audio).
    pub width: u32,
    /// Pixels down (images and video; 0 for audio).
    pub height: u32,
    /// Seconds of audio or video (0 for images).
    pub duration_s: f64,
}

impl EncodedMedia {
    /// `data:<mime>;base64,<bytes>`: how AIPerf sends an image or a video.
    pub fn data_uri(&self) -> String {
        data_uri(self.mime, &self.bytes)
    }

    /// `<format>,<base64>`: AIPerf's internal form of an audio clip (the chat part carries the
    /// base64 as `data` and the format as `format`).
    pub fn format_and_base64(&self) -> String {
        let mut out = String::with_capacity(self.format.len() + 1 + base64_len(self.bytes.len()));
        out.push_str(self.format);
        out.push(',');
        base64_into(&self.bytes, &mut out);
        out
    }

    /// The bytes as standard base64 (with padding).
    pub fn base64(&self) -> String {
        let mut out = String::with_capacity(base64_len(self.bytes.len()));
        base64_into(&self.bytes, &mut out);
        out
    }
}

/// Why a medium could not be made.
#[derive(Debug)]
pub enum MediaError {
    /// A size or parameter outside what the format can hold, named by its flag.
    Invalid { flag: &'static str, reason: String },
    /// The encoder failed.
    Encode { what: &'static str, reason: String },
    /// FFmpeg is needed (video, MP3) and was not found, or it failed.
    Ffmpeg(String),
    /// Reading a source file (`--image-source DIR`) or a scratch file.
    Io {
        path: String,
        source: std::io::Error,
    },
}

impl std::fmt::Display for MediaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Invalid { flag, reason } => write!(f, "{flag}: {reason}"),
            Self::Encode { what, reason } => write!(f, "encoding {what}: {reason}"),
            Self::Ffmpeg(msg) => f.write_str(msg),
            Self::Io { path, source } => write!(f, "{path}: {source}"),
        }
    }
}

impl std::error::Error for MediaError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// `data:<mime>;base64,<base64 of bytes>`.
pub fn data_uri(mime: &str, bytes: &[u8]) -> String {
    let mut out = String::with_capacity(13 + mime.len() + base64_len(bytes.len()));
    out.push_str("data:");
    out.push_str(mime);
    out.push_str(";base64,");
    base64_into(bytes, &mut out);
    out
}

/// Characters of the padded base64 of `n` bytes.
pub const fn base64_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Appends the standard, padded base64 (RFC 4648 §4) of `bytes` to `out`.
pub fn base64_into(bytes: &[u8], out: &mut String) {
    out.reserve(base64_len(bytes.len()));
    let mut chunks = bytes.chunks_exact(3);
    for c in &mut chunks {
        let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
        for shift in [18, 12, 6, 0] {
            out.push(char::from(B64[((n >> shift) & 63) as usize]));
        }
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let b1 = rest.get(1).copied().unwrap_or(0);
        let n = (u32::from(rest[0]) << 16) | (u32::from(b1) << 8);
        out.push(char::from(B64[((n >> 18) & 63) as usize]));
        out.push(char::from(B64[((n >> 12) & 63) as usize]));
        if rest.len() == 2 {
            out.push(char::from(B64[((n >> 6) & 63) as usize]));
        } else {
            out.push('=');
        }
        out.push('=');
    }
}

/// Decodes standard base64 (padding optional, no whitespace); `None` on any other character.
pub fn base64_decode(text: &[u8]) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    }
    let text = text
        .strip_suffix(b"==")
        .or_else(|| text.strip_suffix(b"="))
        .unwrap_or(text);
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 2);
    for chunk in text.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        // RFC 4648 §10.
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            let mut out = String::new();
            base64_into(plain.as_bytes(), &mut out);
            assert_eq!(out, encoded);
            assert_eq!(base64_len(plain.len()), encoded.len());
            assert_eq!(base64_decode(encoded.as_bytes()).unwrap(), plain.as_bytes());
        }
        // Every byte value, and the two characters beyond the alphanumerics.
        let all: Vec<u8> = (0..=255).collect();
        let mut out = String::new();
        base64_into(&all, &mut out);
        assert!(out.contains('+') && out.contains('/'));
        assert_eq!(base64_decode(out.as_bytes()).unwrap(), all);
        assert_eq!(base64_decode(b"Zm9v!"), None);
        assert_eq!(base64_decode(b"Z"), None);
    }

    #[test]
    fn data_uri_shape() {
        assert_eq!(data_uri("image/png", b"foo"), "data:image/png;base64,Zm9v");
    }
}
