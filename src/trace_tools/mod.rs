//! AIPerf 0.13's trace commands: `analyze-trace` (a mooncake trace's length distributions and
//! prefix-cache hit rates), `validate --target mooncake-trace` and `synthesize` (a reshaped
//! mooncake trace, or agentic-coding sessions from a distribution config) (docs/commands.md).

pub mod agentic;
pub mod analyze;
pub mod stats;
pub mod synthesize;
pub mod validate;

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a trace command failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum TraceToolError {
    /// The input file does not exist.
    NotFound(PathBuf),
    /// A file could not be read or written.
    Io { path: PathBuf, err: std::io::Error },
    /// A row of the trace is not what the command reads.
    Row {
        path: PathBuf,
        line: u64,
        field: String,
        why: String,
    },
    /// A flag's value is out of range.
    Usage(String),
}

impl TraceToolError {
    pub(crate) fn io(path: &Path, err: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            err,
        }
    }
}

impl fmt::Display for TraceToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound(p) => write!(f, "Input file not found: {}", p.display()),
            Self::Io { path, err } => write!(f, "{}: {err}", path.display()),
            Self::Row {
                path,
                line,
                field,
                why,
            } if field.is_empty() => write!(f, "{}:{line}: {why}", path.display()),
            Self::Row {
                path,
                line,
                field,
                why,
            } => write!(f, "{}:{line}: field \"{field}\": {why}", path.display()),
            Self::Usage(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for TraceToolError {}

/// Writes `value` as indented JSON to `path`, its parent directory made first.
pub(crate) fn write_json<T: serde::Serialize>(
    path: &Path,
    value: &T,
) -> Result<(), TraceToolError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| TraceToolError::io(dir, e))?;
    }
    let text = serde_json::to_string_pretty(value).map_err(|e| TraceToolError::Io {
        path: path.to_path_buf(),
        err: std::io::Error::other(e),
    })?;
    std::fs::write(path, text).map_err(|e| TraceToolError::io(path, e))
}
