//! Typed access to one record's fields, each failure naming the file, the line and the field;
//! and the text turn shared by `single_turn`, `multi_turn` and `random_pool` (AIPerf's
//! `SingleTurn` / `RandomPool` models, text modality only).

use std::path::Path;

use serde_json::{Map, Value};

use ringperf_wire::conversation::{Content, Media, Turn};

use super::media_fields::Kind as MediaKind;

use super::error::{LoadError, LoadErrorKind};

/// Fields of AIPerf's media models: read by `single_turn`, `multi_turn` and `random_pool`
/// records ([`super::media_fields`]), rejected by name elsewhere.
pub const MEDIA_FIELDS: &[&str] = &[
    "image",
    "images",
    "image_uuids",
    "audio",
    "audios",
    "video",
    "videos",
];

/// Where a record is: its file and line.
#[derive(Clone, Copy, Debug)]
pub struct Ctx<'a> {
    pub path: &'a Path,
    pub line: u64,
}

impl Ctx<'_> {
    /// An error about `field` of this record.
    pub fn err(&self, field: impl Into<String>, kind: LoadErrorKind) -> LoadError {
        LoadError::at(self.path, self.line, field, kind)
    }
}

/// One JSON object of a record (the record itself or a nested one), its fields taken out one
/// by one with their types checked. `prefix` names nested objects in errors (`turns[2].`).
#[derive(Debug)]
pub struct Obj<'a> {
    pub ctx: Ctx<'a>,
    prefix: String,
    map: Map<String, Value>,
}

impl<'a> Obj<'a> {
    pub fn new(ctx: Ctx<'a>, prefix: impl Into<String>, map: Map<String, Value>) -> Self {
        Self {
            ctx,
            prefix: prefix.into(),
            map,
        }
    }

    /// The full name of `key` in errors.
    pub fn name(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// An error about `key`.
    pub fn err(&self, key: &str, kind: LoadErrorKind) -> LoadError {
        self.ctx.err(self.name(key), kind)
    }

    /// Fails on the first field (in file order) that is a media field or not in `allowed`.
    pub fn check_fields(&self, allowed: &[&str]) -> Result<(), LoadError> {
        for key in self.map.keys() {
            if MEDIA_FIELDS.contains(&key.as_str()) {
                return Err(self.err(key, LoadErrorKind::NotText));
            }
            if !allowed.contains(&key.as_str()) {
                return Err(self.err(key, LoadErrorKind::UnknownField));
            }
        }
        Ok(())
    }

    /// Whether the record has `key` (not null).
    pub fn has(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(|v| !v.is_null())
    }

    /// Whether neither `text` nor `texts` is left in the record.
    pub fn lacks_text(&self) -> bool {
        !self.has("text") && !self.has("texts")
    }

    /// Takes `key` out; `null` counts as absent (AIPerf's optional fields accept it).
    pub fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    pub fn string(&mut self, key: &str) -> Result<Option<String>, LoadError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err(key, LoadErrorKind::WrongType("a string"))),
        }
    }

    /// A number of milliseconds (integer or float), finite and not negative.
    pub fn millis(&mut self, key: &str) -> Result<Option<f64>, LoadError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
                _ => Err(self.err(
                    key,
                    LoadErrorKind::Invalid("must be a number of milliseconds ≥ 0".into()),
                )),
            },
            Some(_) => Err(self.err(key, LoadErrorKind::WrongType("a number"))),
        }
    }

    /// An integer ≥ 0 that fits in `u32`.
    pub fn count(&mut self, key: &str) -> Result<Option<u32>, LoadError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_u64().map(u32::try_from) {
                Some(Ok(v)) => Ok(Some(v)),
                _ => Err(self.err(key, LoadErrorKind::WrongType("an integer ≥ 0"))),
            },
            Some(_) => Err(self.err(key, LoadErrorKind::WrongType("an integer"))),
        }
    }

    /// An integer > 0 that fits in `u32` (AIPerf's `output_length`, `gt=0`).
    pub fn positive(&mut self, key: &str) -> Result<Option<u32>, LoadError> {
        match self.count(key)? {
            Some(0) => Err(self.err(key, LoadErrorKind::Invalid("must be greater than 0".into()))),
            other => Ok(other),
        }
    }

    pub fn object(&mut self, key: &str) -> Result<Option<Map<String, Value>>, LoadError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(self.err(key, LoadErrorKind::WrongType("a JSON object"))),
        }
    }

    pub fn array(&mut self, key: &str) -> Result<Option<Vec<Value>>, LoadError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(_) => Err(self.err(key, LoadErrorKind::WrongType("a list"))),
        }
    }

    /// AIPerf's `type` discriminator: absent, or exactly `expected`.
    pub fn type_tag(&mut self, expected: &str) -> Result<(), LoadError> {
        match self.string("type")? {
            None => Ok(()),
            Some(t) if t == expected => Ok(()),
            Some(t) => Err(self.err(
                "type",
                LoadErrorKind::Invalid(format!("is {t:?}, expected {expected:?}")),
            )),
        }
    }
}

/// The texts of a record: `text` (one string) or `texts` (strings, or AIPerf's
/// `{"name", "contents": [..]}` objects, flattened in order). Exactly one must be non-empty,
/// as AIPerf requires at least one modality and never both spellings.
pub fn texts(obj: &mut Obj<'_>) -> Result<Vec<String>, LoadError> {
    let text = obj.string("text")?.filter(|t| !t.is_empty());
    let texts = match obj.array("texts")? {
        None => Vec::new(),
        Some(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let name = obj.name(&format!("texts[{i}]"));
                match item {
                    Value::String(s) => out.push(s),
                    Value::Object(map) => {
                        let mut inner = Obj::new(obj.ctx, format!("{name}."), map);
                        inner.check_fields(&["name", "contents"])?;
                        inner.string("name")?;
                        let contents = inner
                            .array("contents")?
                            .ok_or_else(|| inner.err("contents", LoadErrorKind::Missing))?;
                        for (j, c) in contents.into_iter().enumerate() {
                            match c {
                                Value::String(s) => out.push(s),
                                _ => {
                                    return Err(inner.err(
                                        &format!("contents[{j}]"),
                                        LoadErrorKind::WrongType("a string"),
                                    ));
                                }
                            }
                        }
                    }
                    _ => {
                        return Err(obj.ctx.err(
                            name,
                            LoadErrorKind::WrongType(
                                "a string or a {\"name\", \"contents\"} object",
                            ),
                        ));
                    }
                }
            }
            out
        }
    };
    match (text, texts.is_empty()) {
        (Some(_), false) => Err(obj.err(
            "texts",
            LoadErrorKind::Invalid("\"text\" and \"texts\" cannot be set together".into()),
        )),
        (Some(t), true) => Ok(vec![t]),
        (None, false) => Ok(texts),
        (None, true) => Err(obj.err("text", LoadErrorKind::Missing)),
    }
}

/// The fields of AIPerf's `SingleTurn` (without media).
pub const TURN_FIELDS: &[&str] = &[
    "type",
    "text",
    "texts",
    "timestamp",
    "delay",
    "role",
    "session_id",
    "output_length",
    "extra",
];

/// One `SingleTurn` record: its `session_id` (if any) and the turn.
pub fn text_turn(obj: &mut Obj<'_>) -> Result<(Option<String>, Turn), LoadError> {
    let uuids = image_uuids(obj)?;
    let media = media(obj, uuids)?;
    obj.check_fields(TURN_FIELDS)?;
    obj.type_tag("single_turn")?;
    // A record of media alone is one modality, as AIPerf allows.
    let texts = if !media.is_empty() && obj.lacks_text() {
        Vec::new()
    } else {
        texts(obj)?
    };
    let timestamp_ms = obj.millis("timestamp")?;
    let delay_ms = obj.millis("delay")?;
    // AIPerf's rule is on truthiness: a zero in either is allowed.
    if timestamp_ms.is_some_and(|t| t != 0.0) && delay_ms.is_some_and(|d| d != 0.0) {
        return Err(obj.err(
            "delay",
            LoadErrorKind::Invalid("\"timestamp\" and \"delay\" cannot be set together".into()),
        ));
    }
    let role = obj.string("role")?;
    let session_id = obj.string("session_id")?;
    let max_tokens = obj.positive("output_length")?;
    let extra = obj.object("extra")?.unwrap_or_default();
    Ok((
        session_id,
        Turn {
            content: Content::Texts(texts),
            role,
            max_tokens,
            timestamp_ms,
            delay_ms,
            extra,
            media,
            model: None,
            ..Turn::default()
        },
    ))
}

/// Takes `image_uuids` out (AIPerf's `SingleTurn`: cache UUIDs aligned one to one with
/// `images`, which default to UUID-only references when absent), checked as AIPerf checks it.
pub fn image_uuids(obj: &mut Obj<'_>) -> Result<Option<Vec<String>>, LoadError> {
    let Some(items) = obj.array("image_uuids")? else {
        return Ok(None);
    };
    let bad = |m: String| Err(obj.err("image_uuids", LoadErrorKind::Invalid(m)));
    if obj.has("image") {
        return bad("cannot be used with the singular \"image\" field".into());
    }
    let mut uuids = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        match item {
            Value::String(s) if s.is_empty() => return bad("must not contain empty strings".into()),
            Value::String(s) => uuids.push(s),
            _ => {
                let field = obj.name(&format!("image_uuids[{i}]"));
                return Err(obj.ctx.err(field, LoadErrorKind::WrongType("a string")));
            }
        }
    }
    match obj.map.get("images") {
        None | Some(Value::Null) => {
            let empty = vec![Value::String(String::new()); uuids.len()];
            obj.map.insert("images".into(), Value::Array(empty));
        }
        Some(Value::Array(images)) if images.len() != uuids.len() => {
            return bad(format!(
                "length ({}) must match \"images\" length ({})",
                uuids.len(),
                images.len()
            ));
        }
        Some(_) => {}
    }
    Ok(Some(uuids))
}

/// Takes the record's media fields out (images, then audio, then video, AIPerf's order);
/// with `uuids` (from [`image_uuids`]), image `i` carries `uuids[i]`, and an empty image is a
/// UUID-only reference.
pub fn media(obj: &mut Obj<'_>, uuids: Option<Vec<String>>) -> Result<Vec<Media>, LoadError> {
    let mut out = Vec::new();
    for (one, many, kind) in [
        ("image", "images", MediaKind::Image),
        ("audio", "audios", MediaKind::Audio),
        ("video", "videos", MediaKind::Video),
    ] {
        let single = obj.take(one);
        let list = obj.take(many);
        let values: Vec<(String, Value)> = match (single, list) {
            (Some(_), Some(_)) => {
                return Err(obj.err(
                    many,
                    LoadErrorKind::Invalid(format!(
                        "\"{one}\" and \"{many}\" cannot be set together"
                    )),
                ));
            }
            (Some(v), None) => vec![(obj.name(one), v)],
            (None, Some(Value::Array(items))) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (obj.name(&format!("{many}[{i}]")), v))
                .collect(),
            (None, Some(_)) => return Err(obj.err(many, LoadErrorKind::WrongType("a list"))),
            (None, None) => Vec::new(),
        };
        for (i, (field, value)) in values.into_iter().enumerate() {
            let Value::String(text) = value else {
                return Err(obj.ctx.err(field, LoadErrorKind::WrongType("a string")));
            };
            let uuid = uuids
                .as_ref()
                .filter(|_| kind == MediaKind::Image)
                .map(|u| &u[i]);
            if let Some(uuid) = uuid {
                let url = if text.is_empty() {
                    std::sync::Arc::from("")
                } else {
                    super::media_fields::content(&text, kind, obj.ctx.path)
                        .map_err(|kind| obj.ctx.err(field, kind))?
                };
                out.push(Media::ImageUuid {
                    url,
                    uuid: std::sync::Arc::from(uuid.as_str()),
                });
                continue;
            }
            let content = super::media_fields::content(&text, kind, obj.ctx.path)
                .map_err(|kind| obj.ctx.err(field, kind))?;
            out.push(match kind {
                MediaKind::Image => Media::Image(content),
                MediaKind::Audio => Media::Audio(content),
                MediaKind::Video => Media::Video(content),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::workload::media::{ImageFormat, ImageSpec, generate_image, image::ImageRngs};

    #[test]
    fn files_beside_the_dataset_urls_and_encoded_values() {
        let dir = tempfile::tempdir().unwrap();
        let dataset = dir.path().join("data.jsonl");
        let img = generate_image(
            &ImageSpec::fixed(6, 5, ImageFormat::Jpeg),
            &mut ImageRngs::new(Some(1)),
        )
        .unwrap();
        // A JPEG named .png: the header decides, not the name.
        std::fs::write(dir.path().join("cat.png"), &img.bytes[..]).unwrap();
        std::fs::write(dir.path().join("a.wav"), b"RIFF-bytes").unwrap();
        let record = serde_json::json!({
            "text": "t",
            "images": ["cat.png", "https://example.invalid/x.png", "data:image/png;base64,AAAA"],
            "audio": "a.wav",
            "videos": ["data:video/mp4;base64,AAAA"],
        });
        let Value::Object(map) = record else { panic!() };
        let mut obj = Obj::new(
            Ctx {
                path: &dataset,
                line: 3,
            },
            "",
            map,
        );
        let got = media(&mut obj, None).unwrap();
        assert_eq!(got.len(), 5);
        assert_eq!(got[0], Media::Image(Arc::from(img.data_uri())));
        assert_eq!(
            got[1],
            Media::Image(Arc::from("https://example.invalid/x.png"))
        );
        assert_eq!(
            got[2],
            Media::Image(Arc::from("data:image/png;base64,AAAA"))
        );
        assert_eq!(got[3], Media::Audio(Arc::from("wav,UklGRi1ieXRlcw==")));
        assert_eq!(
            got[4],
            Media::Video(Arc::from("data:video/mp4;base64,AAAA"))
        );
    }

    #[test]
    fn unreadable_media_name_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let dataset = dir.path().join("data.jsonl");
        std::fs::write(dir.path().join("notes.txt"), b"hello").unwrap();
        std::fs::write(dir.path().join("clip.flac"), b"fLaC").unwrap();
        for (record, said) in [
            (
                serde_json::json!({"image": "notes.txt"}),
                "field \"image\": ",
            ),
            (
                serde_json::json!({"audios": ["clip.flac"]}),
                "field \"audios[0]\": '.flac' is not",
            ),
            (
                serde_json::json!({"video": "notes.txt"}),
                "field \"video\": '.txt' is not",
            ),
            (
                serde_json::json!({"images": "cat.png"}),
                "field \"images\": expected a list",
            ),
        ] {
            let Value::Object(map) = record else { panic!() };
            let mut obj = Obj::new(
                Ctx {
                    path: &dataset,
                    line: 7,
                },
                "",
                map,
            );
            let err = media(&mut obj, None).unwrap_err().to_string();
            assert!(
                err.contains("data.jsonl:7: ") && err.contains(said),
                "{err}"
            );
        }
    }
}
