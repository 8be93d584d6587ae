//! What the multipart/form-data endpoint types (`image_edit`, `audio_transcription`) share
//! (docs/endpoints.md): their payload is AIPerf's dict, a file field an object
//! `{"b64_data","filename","content_type"}` kept as base64 so the payload stays JSON (what
//! `inputs.json` shows); the request's form is made from it once, before the run
//! (`ringperf_workload::workload::form`).

use std::fmt;

use serde_json::{Map, Value};

/// A file field of a form payload, as AIPerf writes it.
pub fn file_field(b64: &str, filename: &str, content_type: &str) -> Value {
    let mut file = Map::new();
    file.insert("b64_data".into(), Value::from(b64));
    file.insert("filename".into(), Value::from(filename));
    file.insert("content_type".into(), Value::from(content_type));
    Value::Object(file)
}

/// The base64 prefixes of the image formats AIPerf recognises in raw base64: PNG, JPEG, GIF,
/// RIFF (taken as WebP), BMP.
const B64_PREFIXES: [(&str, &str); 6] = [
    ("iVBORw0KGgo", "image/png"),
    ("/9j/", "image/jpeg"),
    ("R0lGODlh", "image/gif"),
    ("R0lGODdh", "image/gif"),
    ("UklGR", "image/webp"),
    ("Qk", "image/bmp"),
];

/// The media type and base64 of an inline image: a `data:` URI's `image/…` type (any other
/// claimed type is sniffed instead), else the type its base64 starts with, as AIPerf's
/// `_build_image_field` finds it.
pub fn image_mime(content: &str) -> Result<(&str, &str), FormInputError> {
    let (claimed, b64) = match content.strip_prefix("data:") {
        Some(rest) => {
            let (header, b64) = rest
                .split_once(',')
                .ok_or(FormInputError::DataUriWithoutComma)?;
            let claimed = header
                .split_once(';')
                .map(|(mime, _)| mime)
                .filter(|m| m.starts_with("image/"));
            (claimed, b64)
        }
        None => (None, content),
    };
    let mime = claimed
        .or_else(|| {
            B64_PREFIXES
                .iter()
                .find(|(prefix, _)| b64.starts_with(prefix))
                .map(|&(_, mime)| mime)
        })
        .ok_or(FormInputError::UnknownImage)?;
    Ok((mime, b64))
}

/// A turn a form endpoint cannot send (AIPerf's `format_payload` refusals).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormInputError {
    /// `image_edit` takes its prompt from the turn's first text.
    NoPrompt,
    /// The turn has no medium of this kind (`image`, `audio`).
    NoMedia(&'static str),
    /// The turn's first medium of this kind is empty.
    EmptyMedia(&'static str),
    /// A `data:` URI with no `,` before its data.
    DataUriWithoutComma,
    /// Inline image bytes of no format AIPerf recognises.
    UnknownImage,
}

impl fmt::Display for FormInputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormInputError::NoPrompt => f.write_str("image edit requires a text prompt"),
            FormInputError::NoMedia("image") => f.write_str(
                "image edit requires a reference image in the turn (`--image-width-mean` and \
                     `--image-height-mean`, or a dataset's `image` field)",
            ),
            FormInputError::NoMedia(kind) => write!(
                f,
                "audio transcription requires {kind} in the turn (`--audio-length-mean` or a \
                 dataset's `audio` field)"
            ),
            FormInputError::EmptyMedia(kind) => write!(f, "the turn's {kind} content is empty"),
            FormInputError::DataUriWithoutComma => {
                f.write_str("malformed data URL for image content (missing comma)")
            }
            FormInputError::UnknownImage => f.write_str(
                "image content is not a recognized image format; expected a data URL or raw \
                 base64 image (PNG/JPEG/WebP/GIF/BMP)",
            ),
        }
    }
}

impl std::error::Error for FormInputError {}

/// A form field's text as AIPerf's transport writes a non-file value (`str(value)`, booleans
/// lowercase): strings as they are, numbers as Python prints them, lists and objects in
/// Python's `repr`.
pub fn field_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        other => {
            let mut out = String::new();
            python_repr(other, &mut out);
            out
        }
    }
}

/// Python's `repr()` of the string `s`, appended to `out`: single quotes unless `s` holds one
/// and no double quote; backslash, quote, `\n`, `\r`, `\t` and other control characters
/// escaped as Python escapes them.
pub fn python_str_repr(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c < ' ' || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// A JSON string as Python's `json.dumps` writes it, appended to `out`: `"`, `\\`, `\n`, `\r`,
/// `\t`, `\b`, `\f` escaped by name, other control characters (and, with `ensure_ascii`,
/// everything past `~`) as `\uXXXX` UTF-16 units.
pub fn python_json_str(s: &str, ensure_ascii: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ensure_ascii && (c as u32) > 0x7e) => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr()` of a JSON value (`None`, `True`, `[1, 'a']`, `{'k': 0.5}`), appended to
/// `out`.
pub fn python_repr(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (None, Some(u), _) => out.push_str(&u.to_string()),
            (None, None, Some(x)) => out.push_str(&python_float(x)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => python_str_repr(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_repr(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_repr(&Value::from(k.as_str()), out);
                out.push_str(": ");
                python_repr(v, out);
            }
            out.push('}');
        }
    }
}

/// Python's `repr` of a float: the shortest digits that read back, `.0` on an integral value,
/// exponent form (`1e-05`, `1e+16`) outside `1e-4 ≤ |x| < 1e16`.
fn python_float(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let abs = x.abs();
    if abs != 0.0 && !(1e-4..1e16).contains(&abs) {
        let s = format!("{x:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let s = format!("{x}");
    if s.contains('.') { s } else { format!("{s}.0") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_text_is_pythons_str() {
        let cases = [
            (Value::from("en"), "en"),
            (Value::from(true), "true"),
            (Value::from(false), "false"),
            (Value::from(3), "3"),
            (Value::from(-7), "-7"),
            (Value::from(0.5), "0.5"),
            (Value::from(2.0), "2.0"),
            (Value::from(1e-5), "1e-05"),
            (Value::from(1.5e16), "1.5e+16"),
            (Value::Null, "None"),
            (
                serde_json::json!(["a", 1, true, null, "it's"]),
                "['a', 1, True, None, \"it's\"]",
            ),
            (serde_json::json!({"k": {"x": 0.25}}), "{'k': {'x': 0.25}}"),
        ];
        for (value, want) in cases {
            assert_eq!(field_text(&value), want, "{value}");
        }
    }

    #[test]
    fn inline_images_are_typed_as_aiperf_types_them() {
        assert_eq!(
            image_mime("data:image/jpeg;base64,AAAA"),
            Ok(("image/jpeg", "AAAA"))
        );
        // A claimed type that is not an image is sniffed from the data instead.
        assert_eq!(
            image_mime("data:text/html;base64,iVBORw0KGgoAAA"),
            Ok(("image/png", "iVBORw0KGgoAAA"))
        );
        assert_eq!(image_mime("/9j/4AAQ"), Ok(("image/jpeg", "/9j/4AAQ")));
        assert_eq!(image_mime("R0lGODdhAA").map(|m| m.0), Ok("image/gif"));
        assert_eq!(image_mime("UklGRxx").map(|m| m.0), Ok("image/webp"));
        assert_eq!(image_mime("Qk0AAA").map(|m| m.0), Ok("image/bmp"));
        assert_eq!(image_mime("AAAA"), Err(FormInputError::UnknownImage));
        assert_eq!(
            image_mime("data:image/png;base64"),
            Err(FormInputError::DataUriWithoutComma)
        );
    }
}
