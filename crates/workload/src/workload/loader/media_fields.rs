//! The media values of AIPerf's `SingleTurn` records (`image`/`images`, `audio`/`audios`,
//! `video`/`videos`; read in [`super::fields`]), as AIPerf handles each (docs/multimodal.md): a
//! URL or an already encoded value is sent as it is, a file path is read and base64-encoded (as
//! given, else relative to the dataset file).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::LoadErrorKind;
use crate::workload::media::{data_uri, probe};

/// Which medium a value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Image,
    Audio,
    Video,
}

/// One value as AIPerf handles it: encoded already, a URL, or a file to read.
/// A bad value is [`LoadErrorKind::Invalid`] saying why.
pub fn content(text: &str, kind: Kind, dataset: &Path) -> Result<Arc<str>, LoadErrorKind> {
    let bad = LoadErrorKind::Invalid;
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
            return Err(bad(format!(
                "a valid URL must have both a scheme and a host: {text:?}"
            )));
        }
        return Ok(Arc::from(text));
    }
    let path = locate(text, dataset).ok_or_else(|| {
        bad(format!(
            "{text:?} is not a URL, not encoded, and no such file (as given or beside the dataset)"
        ))
    })?;
    let bytes = std::fs::read(&path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
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
            _ => Err(bad(format!("{}: not a PNG or JPEG image", path.display()))),
        },
        Kind::Audio => match extension.as_str() {
            "wav" | "mp3" => {
                let mut clip = format!("{extension},");
                crate::workload::media::base64_into(&bytes, &mut clip);
                Ok(Arc::from(clip))
            }
            other => Err(bad(format!(
                "'.{other}' is not one of the supported audio formats: wav, mp3"
            ))),
        },
        Kind::Video => match extension.as_str() {
            "mp4" | "webm" => Ok(Arc::from(data_uri(&format!("video/{extension}"), &bytes))),
            other => Err(bad(format!(
                "'.{other}' is not one of the supported video formats: mp4, webm"
            ))),
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
