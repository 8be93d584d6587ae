//! `artifacts.user_files`: files a config file asks to be written into the run's artifact
//! directory before the benchmark starts (AIPerf 0.13's `UserFile`), each with its content as
//! the file has it. Their templates are rendered when the run starts, with the `variables:`
//! block and the run's own names (`crate::run::user_files`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How a user file's content is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserFileFormat {
    /// As orjson writes it with a two-space indent (no newline at the end).
    Json,
    /// As PyYAML's `safe_dump` writes it in block style, keys in the file's order.
    Yaml,
    /// The rendered text as is.
    Text,
}

impl UserFileFormat {
    /// AIPerf's name of the format.
    pub fn name(self) -> &'static str {
        match self {
            UserFileFormat::Json => "json",
            UserFileFormat::Yaml => "yaml",
            UserFileFormat::Text => "text",
        }
    }
}

/// One file to write.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserFile {
    /// Relative to the artifact directory (checked: not absolute, no `..`, no control
    /// characters).
    pub path: String,
    pub format: UserFileFormat,
    /// A string for `text`; any value for `json` / `yaml`. Its strings are templates.
    pub content: Value,
}

/// The files, and the `variables:` block their templates read (resolved at load time).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserFiles {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<UserFile>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub variables: Map<String, Value>,
}

impl UserFiles {
    /// No file to write.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}
