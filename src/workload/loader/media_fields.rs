//! The media fields of AIPerf's `SingleTurn` records (`image`/`images`, `audio`/`audios`,
//! `video`/`videos`), in `single_turn` and `multi_turn` files (docs/multimodal.md): a URL or an
//! already encoded value is sent as it is, a file path is read and base64-encoded (as given,
//! else relative to the dataset file). A bad value is one error naming file, line and field.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::error::{LoadError, LoadErrorKind};
use super::fields::Obj;
use crate::conversation::Media;
use crate::workload::media::{data_uri, probe};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Image,
    Audio,
    Video,
}

/// Takes the record's media fields out (images, then audio, then video, AIPerf's order).
pub fn media(obj: &mut Obj<'_>) -> Result<Vec<Media>, LoadError> {
    let mut out = Vec::new();
    for (one, many, kind) in [
        ("image", "images", Kind::Image),
        ("audio", "audios", Kind::Audio),
        ("video", "videos", Kind::Video),
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
        for (field, value) in values {
            let Value::String(text) = value else {
                return Err(obj.ctx.err(field, LoadErrorKind::WrongType("a string")));
            };
            let content = content(&text, kind, obj.ctx.path)
                .map_err(|reason| obj.ctx.err(field, LoadErrorKind::Invalid(reason)))?;
            out.push(match kind {
                Kind::Image => Media::Image(content),
                Kind::Audio => Media::Audio(content),
                Kind::Video => Media::Video(content),
            });
        }
    }
    Ok(out)
}

/// One value as AIPerf handles it: encoded already, a URL, or a file to read.
fn content(text: &str, kind: Kind, dataset: &Path) -> Result<Arc<str>, String> {
    let encoded = match kind {
        Kind::Image | Kind::Video => text.starts_with("data:"),
        Kind::Audio => text
            .split_once(',')
            .is_some_and(|(f, _)| matches!(f.to_ascii_lowercase().as_str(), "wav" | "mp3")),
    };
    if encoded {
        return Ok(Arc::from(text));
    }
    if let Some((scheme, rest)) = text.split_once("://") {
        let host = rest.split('/').next().unwrap_or("");
        if scheme.is_empty() || host.is_empty() {
            return Err(format!(
                "a valid URL must have both a scheme and a host: {text:?}"
            ));
        }
        return Ok(Arc::from(text));
    }
    let path = locate(text, dataset).ok_or_else(|| {
        format!(
            "{text:?} is not a URL, not encoded, and no such file (as given or beside the dataset)"
        )
    })?;
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match kind {
        Kind::Image => match probe::probe(&bytes) {
            Some(probe::Probed::Image { format, .. }) => {
                Ok(Arc::from(data_uri(&format!("image/{format}"), &bytes)))
            }
            _ => Err(format!("{}: not a PNG or JPEG image", path.display())),
        },
        Kind::Audio => match extension.as_str() {
            "wav" | "mp3" => {
                let mut clip = format!("{extension},");
                crate::workload::media::base64_into(&bytes, &mut clip);
                Ok(Arc::from(clip))
            }
            other => Err(format!(
                "'.{other}' is not one of the supported audio formats: wav, mp3"
            )),
        },
        Kind::Video => match extension.as_str() {
            "mp4" | "webm" => Ok(Arc::from(data_uri(&format!("video/{extension}"), &bytes))),
            other => Err(format!(
                "'.{other}' is not one of the supported video formats: mp4, webm"
            )),
        },
    }
}

/// The file as given (relative to the working directory, as AIPerf opens it), else beside the
/// dataset file.
fn locate(text: &str, dataset: &Path) -> Option<PathBuf> {
    let given = PathBuf::from(text);
    if given.is_file() {
        return Some(given);
    }
    let beside = dataset.parent()?.join(text);
    beside.is_file().then_some(beside)
}

#[cfg(test)]
mod tests {
    use super::super::fields::Ctx;
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
        let got = media(&mut obj).unwrap();
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
            let err = media(&mut obj).unwrap_err().to_string();
            assert!(
                err.contains("data.jsonl:7: ") && err.contains(said),
                "{err}"
            );
        }
    }
}
