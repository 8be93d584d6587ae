//! What can go wrong after collection: reading a server-metrics JSONL back, and writing the
//! exports. Each error names the file.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// A re-processing or export failure.
#[derive(Debug)]
pub enum Error {
    /// The input could not be read.
    Read { path: PathBuf, source: io::Error },
    /// A line of the JSONL is not a server-metrics record (`line` is 1-based).
    BadLine {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// The JSONL holds no record.
    NoRecords { path: PathBuf },
    /// The requested window ends before it starts.
    EmptyWindow { start_ns: u64, end_ns: u64 },
    /// An output file or directory could not be created.
    Create { path: PathBuf, source: io::Error },
    /// An export could not be written (I/O, or the Parquet encoder).
    Write { path: PathBuf, message: String },
    /// Files the re-processing would write already exist (a run's own exports) and
    /// `--overwrite` was not given: nothing was written.
    WouldOverwrite { paths: Vec<PathBuf> },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Read { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Error::BadLine {
                path,
                line,
                message,
            } => write!(
                f,
                "{}: line {line} is not a record: {message}",
                path.display()
            ),
            Error::NoRecords { path } => write!(
                f,
                "{}: the file holds no server-metrics record",
                path.display()
            ),
            Error::EmptyWindow { start_ns, end_ns } => write!(
                f,
                "the window is empty: --start-ns {start_ns} is after the end {end_ns}"
            ),
            Error::Create { path, source } => {
                write!(f, "cannot create {}: {source}", path.display())
            }
            Error::Write { path, message } => {
                write!(f, "cannot write {}: {message}", path.display())
            }
            Error::WouldOverwrite { paths } => {
                let list: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                write!(
                    f,
                    "{} already exist{} (a run's own exports): nothing written; write the \
                     recomputed files elsewhere with --artifact-dir DIR, or replace them with \
                     --overwrite",
                    list.join(", "),
                    if paths.len() == 1 { "s" } else { "" }
                )
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Read { source, .. } | Error::Create { source, .. } => Some(source),
            _ => None,
        }
    }
}
