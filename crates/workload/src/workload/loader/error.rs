//! The one error every loader returns: which file, which line, which field, and what is wrong.

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a dataset could not be loaded. Displayed as `file:line: field "name": message`, with
/// the line and the field left out when they do not apply (`data.jsonl: the file is empty`).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    /// The file (or directory) as the user named it.
    pub path: PathBuf,
    /// 1-based line of the offending record, when the error is about one.
    pub line: Option<u64>,
    /// The offending field, as a path inside the record (`turns[1].text`).
    pub field: Option<String>,
    pub kind: LoadErrorKind,
}

/// What is wrong.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum LoadErrorKind {
    /// The file could not be opened or read.
    Io(String),
    /// The file does not exist; `looked` lists every place tried, `hint` says how to get it.
    NotFound { looked: Vec<PathBuf>, hint: String },
    /// The line is not valid JSON (or the document is not, at that line).
    Json(String),
    /// The field is not one this dataset type knows.
    UnknownField,
    /// A required field is absent.
    Missing,
    /// The field has the wrong JSON type; the text says what was expected.
    WrongType(&'static str),
    /// An image, audio or video field: ringperf sends text only.
    NotText,
    /// A trace timestamp smaller than the previous one.
    TimestampBackwards { previous_ms: f64, this_ms: f64 },
    /// The file (or directory) holds no record.
    Empty,
    /// Any other rule of the format, in words.
    Invalid(String),
}

impl LoadError {
    /// An error about the whole file.
    pub fn file(path: &Path, kind: LoadErrorKind) -> Self {
        Self {
            path: path.to_path_buf(),
            line: None,
            field: None,
            kind,
        }
    }

    /// An error about one line's field.
    pub fn at(path: &Path, line: u64, field: impl Into<String>, kind: LoadErrorKind) -> Self {
        Self {
            path: path.to_path_buf(),
            line: Some(line),
            field: Some(field.into()),
            kind,
        }
    }

    /// An error about one line as a whole.
    pub fn line(path: &Path, line: u64, kind: LoadErrorKind) -> Self {
        Self {
            path: path.to_path_buf(),
            line: Some(line),
            field: None,
            kind,
        }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        f.write_str(": ")?;
        if let Some(field) = &self.field {
            write!(f, "field \"{field}\": ")?;
        }
        match &self.kind {
            LoadErrorKind::Io(e) => write!(f, "cannot read: {e}"),
            LoadErrorKind::NotFound { looked, hint } => {
                f.write_str("not found; looked at ")?;
                for (i, p) in looked.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", p.display())?;
                }
                write!(f, ". {hint}")
            }
            LoadErrorKind::Json(e) => write!(f, "invalid JSON: {e}"),
            LoadErrorKind::UnknownField => f.write_str("unknown field"),
            LoadErrorKind::Missing => f.write_str("required but missing"),
            LoadErrorKind::WrongType(expected) => write!(f, "expected {expected}"),
            LoadErrorKind::NotText => f.write_str(
                "image, audio and video inputs are not supported (ringperf sends text only)",
            ),
            LoadErrorKind::TimestampBackwards {
                previous_ms,
                this_ms,
            } => write!(
                f,
                "timestamp {this_ms} ms is earlier than the previous one ({previous_ms} ms); \
                 a trace must be in time order"
            ),
            LoadErrorKind::Empty => f.write_str("no records (the dataset is empty)"),
            LoadErrorKind::Invalid(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for LoadError {}
