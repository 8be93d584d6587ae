//! JSON Lines read one line at a time through a `BufReader`: memory is bounded by the longest
//! line, never by the file. Blank lines are skipped (AIPerf strips and skips them too).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::error::{LoadError, LoadErrorKind};

/// Capacity of the read buffer (the `BufReader`'s, not a limit on lines).
const READ_BUFFER_BYTES: usize = 256 * 1024;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// One line's object and its 1-based line number.
pub type Numbered = (u64, Map<String, Value>);

/// The JSON objects of a JSONL file, with their 1-based line numbers.
#[derive(Debug)]
pub struct JsonLines<R> {
    path: PathBuf,
    reader: R,
    buf: String,
    line: u64,
    /// Bytes read before the current line.
    offset: u64,
    /// `None`: the content hash is not kept ([`JsonLines::unhashed`]).
    hash: Option<u64>,
}

/// The first two bytes of a gzip stream (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// What a truncated gzip stream reports: Python's `gzip` message, which AIPerf shows.
const GZIP_TRUNCATED: &str = "Compressed file ended before the end-of-stream marker was reached";

/// A dataset file's text, decompressed when it is gzipped.
pub type DatasetReader = Box<dyn BufRead + Send>;

/// Opens `path` for reading its text, gunzipping it when its first two bytes are the gzip magic
/// (whatever its name), as AIPerf's `open_text_maybe_gzip` does; concatenated members are read
/// as one stream, as Python's `gzip` reads them.
///
/// # Errors
/// The `io::Error` of opening or sniffing the file.
pub fn open_maybe_gzip(path: &Path) -> std::io::Result<DatasetReader> {
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, File::open(path)?);
    let head = reader.fill_buf()?;
    if head.len() >= 2 && head[..2] == GZIP_MAGIC {
        let gz = flate2::bufread::MultiGzDecoder::new(reader);
        return Ok(Box::new(BufReader::with_capacity(READ_BUFFER_BYTES, gz)));
    }
    Ok(Box::new(reader))
}

/// Whether `path` starts with the gzip magic ([`open_maybe_gzip`]'s test).
///
/// # Errors
/// The `io::Error` of opening or reading the file.
pub fn is_gzip(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut head = [0u8; 2];
    let mut file = File::open(path)?;
    let mut got = 0;
    while got < 2 {
        match file.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got == 2 && head == GZIP_MAGIC)
}

/// The message of a read error of a dataset file: Python's for a truncated gzip stream.
fn read_error_message(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        GZIP_TRUNCATED.to_owned()
    } else {
        e.to_string()
    }
}

impl JsonLines<DatasetReader> {
    /// Opens `path` for reading, gunzipping it when it is gzipped ([`open_maybe_gzip`]).
    ///
    /// # Errors
    /// [`LoadErrorKind::Io`] when the file cannot be opened.
    pub fn open(path: &Path) -> Result<Self, LoadError> {
        let reader = open_maybe_gzip(path)
            .map_err(|e| LoadError::file(path, LoadErrorKind::Io(e.to_string())))?;
        Ok(Self::new(path, reader))
    }
}

impl<R: BufRead> JsonLines<R> {
    /// Reads JSON Lines from `reader`; `path` names it in errors.
    pub fn new(path: &Path, reader: R) -> Self {
        Self {
            path: path.to_path_buf(),
            reader,
            buf: String::new(),
            line: 0,
            offset: 0,
            hash: Some(FNV_OFFSET),
        }
    }

    /// Keeps no content hash (a caller that hashes the file on its own, [`file_hash`]).
    #[must_use]
    pub fn unhashed(mut self) -> Self {
        self.hash = None;
        self
    }

    /// FNV-1a of every byte read so far: after the last line, of the whole file. Trace loaders
    /// scope `hash_ids` blocks to it, so two different files give different blocks.
    pub fn content_hash(&self) -> u64 {
        self.hash.unwrap_or(FNV_OFFSET)
    }

    /// The next non-blank line, trimmed, as `(line number, byte offset of the text, text)`, or
    /// `None` at the end, or as soon as a signal came ([`ringperf_io::control::interrupted`]).
    ///
    /// # Errors
    /// A read error, or a line that is not UTF-8.
    pub fn next_line(&mut self) -> Result<Option<(u64, u64, &str)>, LoadError> {
        loop {
            if ringperf_io::control::interrupted() {
                return Ok(None);
            }
            self.buf.clear();
            self.line += 1;
            let n = self.reader.read_line(&mut self.buf).map_err(|e| {
                let kind = if e.kind() == std::io::ErrorKind::InvalidData {
                    LoadErrorKind::Json("the line is not UTF-8".into())
                } else {
                    LoadErrorKind::Io(read_error_message(&e))
                };
                LoadError::line(&self.path, self.line, kind)
            })?;
            if n == 0 {
                return Ok(None);
            }
            let start = self.offset;
            self.offset += n as u64;
            if let Some(hash) = &mut self.hash {
                for &b in self.buf.as_bytes() {
                    *hash = (*hash ^ u64::from(b)).wrapping_mul(FNV_PRIME);
                }
            }
            let lead = self.buf.len() - self.buf.trim_start().len();
            let len = self.buf.trim().len();
            if len > 0 {
                let text = &self.buf[lead..lead + len];
                return Ok(Some((self.line, start + lead as u64, text)));
            }
        }
    }

    /// The next non-blank line as `(line number, object)`, or `None` at the end, or as soon as
    /// a signal came ([`ringperf_io::control::interrupted`]: the caller drops what was loaded).
    ///
    /// # Errors
    /// A read error, a line that is not UTF-8 or not JSON, or JSON that is not an object.
    pub fn next_object(&mut self) -> Result<Option<Numbered>, LoadError> {
        let Some(line) = self.next_line()?.map(|(line, _, _)| line) else {
            return Ok(None);
        };
        let text = self.buf.trim();
        let value: Value = serde_json::from_str(text)
            .map_err(|e| LoadError::line(&self.path, line, LoadErrorKind::Json(e.to_string())))?;
        match value {
            Value::Object(map) => Ok(Some((line, map))),
            _ => Err(LoadError::line(
                &self.path,
                line,
                LoadErrorKind::WrongType("each line to be a JSON object"),
            )),
        }
    }
}

/// A line's length as the `u32` a re-read offset keeps.
///
/// # Errors
/// [`LoadErrorKind::Invalid`] naming `path` and `line` for a line of 4 GiB or more.
pub fn line_len(path: &Path, line: u64, text: &str) -> Result<u32, LoadError> {
    u32::try_from(text.len()).map_err(|_| {
        LoadError::line(
            path,
            line,
            LoadErrorKind::Invalid("line longer than 4 GiB".into()),
        )
    })
}

/// FNV-1a of every byte of `path`: what [`JsonLines::content_hash`] gives after its last line,
/// read in large blocks (a trace's first pass runs it on another thread).
///
/// # Errors
/// [`LoadErrorKind::Io`] when the file cannot be read.
pub fn file_hash(path: &Path) -> Result<u64, LoadError> {
    use std::io::Read;
    let io = |e: std::io::Error| LoadError::file(path, LoadErrorKind::Io(e.to_string()));
    let mut file = File::open(path).map_err(io)?;
    let mut buf = vec![0u8; READ_BUFFER_BYTES];
    let mut hash = FNV_OFFSET;
    loop {
        if ringperf_io::control::interrupted() {
            return Ok(hash);
        }
        let n = match file.read(&mut buf) {
            Ok(0) => return Ok(hash),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        for &b in &buf[..n] {
            hash = (hash ^ u64::from(b)).wrapping_mul(FNV_PRIME);
        }
    }
}
