//! `multipart/form-data` request bodies (RFC 7578), written as AIPerf 0.13's aiohttp writes them
//! for its form-data endpoints (`image_edit`, `audio_transcription`; docs/endpoints.md).
//!
//! A body is a list of segments: the framing and text fields are small owned byte strings, a
//! file's bytes are a shared [`Arc<[u8]>`] prepared once before the run and referenced by every
//! body that carries it, so a body of megabytes is built without copying its media. The segments
//! can be written one after another (vectored) or flattened once with [`MultipartBody::to_vec`].
//!
//! The wire shape, per part: `--{boundary}\r\n`, `Content-Type: …\r\n`,
//! `Content-Disposition: form-data; name="…"[; filename="…"]\r\n`, a blank line, the value,
//! `\r\n`; after the last part `--{boundary}--\r\n`. Text fields are
//! `text/plain; charset=utf-8`. Names and file names are quoted as aiohttp quotes them.

use std::sync::Arc;

/// The value of one form field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormValue {
    /// A text field (`Content-Type: text/plain; charset=utf-8`).
    Text(String),
    /// A file upload: its file name, its media type and its bytes (shared, never copied).
    File {
        filename: String,
        content_type: String,
        data: Arc<[u8]>,
    },
}

/// One named form field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormPart {
    pub name: String,
    pub value: FormValue,
}

impl FormPart {
    pub fn text(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: FormValue::Text(value.into()),
        }
    }

    pub fn file(
        name: impl Into<String>,
        filename: impl Into<String>,
        content_type: impl Into<String>,
        data: Arc<[u8]>,
    ) -> Self {
        Self {
            name: name.into(),
            value: FormValue::File {
                filename: filename.into(),
                content_type: content_type.into(),
                data,
            },
        }
    }
}

/// One piece of a body on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// Framing, part headers and text values.
    Owned(Vec<u8>),
    /// A file's bytes, shared with every other body that uploads the same file.
    Shared(Arc<[u8]>),
}

impl Segment {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Segment::Owned(v) => v,
            Segment::Shared(a) => a,
        }
    }
}

/// A complete `multipart/form-data` body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultipartBody {
    boundary: String,
    segments: Vec<Segment>,
    len: usize,
}

impl MultipartBody {
    /// The body of `parts`, in order, delimited by `boundary`: 32 lowercase hex digits of
    /// `boundary_id`, as aiohttp's `uuid4().hex` boundaries are (any 128-bit value works; the
    /// caller draws it from the run's seed so the same seed gives the same bytes). Every file's
    /// bytes are referenced, not copied.
    pub fn new(parts: &[FormPart], boundary_id: u128) -> Self {
        let boundary = format!("{boundary_id:032x}");
        let mut segments = Vec::with_capacity(parts.len() * 2 + 1);
        let mut pending = Vec::new();
        for part in parts {
            pending.extend_from_slice(b"--");
            pending.extend_from_slice(boundary.as_bytes());
            pending.extend_from_slice(b"\r\nContent-Type: ");
            match &part.value {
                FormValue::Text(text) => {
                    pending.extend_from_slice(b"text/plain; charset=utf-8");
                    push_disposition(&mut pending, &part.name, None);
                    pending.extend_from_slice(text.as_bytes());
                }
                FormValue::File {
                    filename,
                    content_type,
                    data,
                } => {
                    pending.extend_from_slice(header_safe(content_type).as_bytes());
                    push_disposition(&mut pending, &part.name, Some(filename));
                    segments.push(Segment::Owned(std::mem::take(&mut pending)));
                    segments.push(Segment::Shared(Arc::clone(data)));
                }
            }
            pending.extend_from_slice(b"\r\n");
        }
        pending.extend_from_slice(b"--");
        pending.extend_from_slice(boundary.as_bytes());
        pending.extend_from_slice(b"--\r\n");
        segments.push(Segment::Owned(pending));
        let len = segments.iter().map(|s| s.as_bytes().len()).sum();
        Self {
            boundary,
            segments,
            len,
        }
    }

    /// The request's `Content-Type` header value.
    pub fn content_type(&self) -> String {
        format!("multipart/form-data; boundary={}", self.boundary)
    }

    pub fn boundary(&self) -> &str {
        &self.boundary
    }

    /// Total body bytes (the `Content-Length`).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The body's pieces in wire order; their concatenation is the body.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The whole body in one buffer (one copy of each file).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len);
        for s in &self.segments {
            out.extend_from_slice(s.as_bytes());
        }
        out
    }
}

/// `\r\nContent-Disposition: form-data; name="…"[; filename="…"]\r\n\r\n`. A name of printable
/// ASCII is quoted as aiohttp's `content_disposition_header` quotes it (space, `"` and `\`
/// escaped by a backslash); aiohttp refuses any other name, so ringperf writes it as browsers do
/// (RFC 7578 §5.1: UTF-8 as is, `"`, CR and LF percent-encoded). A file name is always
/// percent-encoded inside quotes, as aiohttp does.
fn push_disposition(out: &mut Vec<u8>, name: &str, filename: Option<&str>) {
    out.extend_from_slice(b"\r\nContent-Disposition: form-data; name=\"");
    if name
        .bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        for b in name.bytes() {
            if matches!(b, b'"' | b'\\' | b'\t' | b' ') {
                out.push(b'\\');
            }
            out.push(b);
        }
    } else {
        for b in name.bytes() {
            match b {
                b'"' => out.extend_from_slice(b"%22"),
                b'\r' => out.extend_from_slice(b"%0D"),
                b'\n' => out.extend_from_slice(b"%0A"),
                _ => out.push(b),
            }
        }
    }
    out.push(b'"');
    if let Some(filename) = filename {
        out.extend_from_slice(b"; filename=\"");
        percent_encode(out, filename);
        out.push(b'"');
    }
    out.extend_from_slice(b"\r\n\r\n");
}

/// Python's `urllib.parse.quote(s, safe="")`: every byte but `A-Z a-z 0-9 _ . - ~` as `%XX`.
fn percent_encode(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

/// A media type with CR, LF and NUL removed, so a bad value cannot break the part's headers.
fn header_safe(value: &str) -> String {
    value
        .chars()
        .filter(|c| !matches!(c, '\r' | '\n' | '\0'))
        .collect()
}

#[cfg(test)]
#[path = "multipart_tests.rs"]
mod tests;
