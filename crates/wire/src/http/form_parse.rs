//! Incremental `multipart/form-data` parsing (RFC 7578 / RFC 2046 §5.1), for the mock's reading
//! of image-edit and audio-transcription uploads.
//!
//! [`FormParser::feed`] takes whatever bytes arrived; any split of a body gives the same parts
//! and the same outcome. The parser never panics and its memory is bounded: part headers by
//! [`MAX_PART_HEAD_BYTES`], the part count by [`MAX_PARTS`], the data by the caller's limit.

use std::fmt;

/// Longest header block of one part, in bytes.
pub const MAX_PART_HEAD_BYTES: usize = 8 * 1024;

/// Most parts one body may hold.
pub const MAX_PARTS: usize = 256;

/// Longest boundary RFC 2046 allows.
const MAX_BOUNDARY: usize = 70;

/// Longest line after a delimiter (transport padding before its CRLF).
const MAX_PADDING: usize = 64;

/// One form field as received.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedPart {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub data: Vec<u8>,
}

/// Why a body is not a readable `multipart/form-data` body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormError {
    /// The boundary is empty, longer than 70 bytes, or holds CR or LF.
    BadBoundary,
    /// A delimiter is followed by something other than `--` or padding and CRLF.
    BadDelimiter,
    /// A part's header block is longer than [`MAX_PART_HEAD_BYTES`].
    HeadTooLarge,
    /// A part header line has no colon, or the part has no `Content-Disposition: form-data`
    /// with a name.
    BadPartHeader,
    /// More than [`MAX_PARTS`] parts.
    TooManyParts,
    /// The parts' data exceed the parser's limit.
    TooLarge,
    /// The body ended before the closing delimiter.
    Truncated,
}

impl fmt::Display for FormError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FormError::BadBoundary => "multipart boundary is empty, too long or holds a line break",
            FormError::BadDelimiter => "multipart delimiter is followed by junk",
            FormError::HeadTooLarge => "multipart part headers are too long",
            FormError::BadPartHeader => "multipart part has a bad header or no form-data name",
            FormError::TooManyParts => "multipart body has too many parts",
            FormError::TooLarge => "multipart body exceeds the size limit",
            FormError::Truncated => "multipart body ends before its closing delimiter",
        })
    }
}

impl std::error::Error for FormError {}

/// The `boundary` parameter of a `multipart/form-data` `Content-Type` value, unquoted.
pub fn boundary_of(content_type: &str) -> Option<&str> {
    let (mime, params) = content_type.split_once(';')?;
    if !mime.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    params.split(';').find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| v.trim().trim_matches('"'))
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Preamble,
    AfterDelimiter,
    Headers,
    Body,
    Done,
}

/// An incremental `multipart/form-data` parser.
#[derive(Debug)]
pub struct FormParser {
    /// `\r\n--{boundary}`.
    delimiter: Vec<u8>,
    state: State,
    /// Bytes not yet settled: a possible delimiter's start, an unfinished header block.
    pending: Vec<u8>,
    current: ParsedPart,
    parts: Vec<ParsedPart>,
    data_bytes: usize,
    max_data_bytes: usize,
    failed: Option<FormError>,
}

impl FormParser {
    /// A parser for a body delimited by `boundary`, keeping at most `max_data_bytes` of part data.
    pub fn new(boundary: &str, max_data_bytes: usize) -> Result<Self, FormError> {
        if boundary.is_empty()
            || boundary.len() > MAX_BOUNDARY
            || boundary.bytes().any(|b| b == b'\r' || b == b'\n')
        {
            return Err(FormError::BadBoundary);
        }
        let mut delimiter = b"\r\n--".to_vec();
        delimiter.extend_from_slice(boundary.as_bytes());
        Ok(Self {
            delimiter,
            state: State::Preamble,
            // The body's first delimiter has no CRLF before it: start as if one came.
            pending: b"\r\n".to_vec(),
            current: ParsedPart::default(),
            parts: Vec::new(),
            data_bytes: 0,
            max_data_bytes,
            failed: None,
        })
    }

    /// Takes the next bytes of the body. After an error every later call returns it again.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), FormError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if self.state == State::Done {
            return Ok(());
        }
        self.pending.extend_from_slice(bytes);
        let result = self.run();
        if let Err(e) = result {
            self.failed = Some(e);
            self.pending = Vec::new();
        }
        result
    }

    /// The parts, once the closing delimiter was seen.
    pub fn finish(self) -> Result<Vec<ParsedPart>, FormError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        match self.state {
            State::Done => Ok(self.parts),
            _ => Err(FormError::Truncated),
        }
    }

    /// Advances through `pending` as far as it goes.
    fn run(&mut self) -> Result<(), FormError> {
        loop {
            let progressed = match self.state {
                State::Preamble | State::Body => self.scan_data()?,
                State::AfterDelimiter => self.after_delimiter()?,
                State::Headers => self.headers()?,
                State::Done => {
                    self.pending.clear();
                    return Ok(());
                }
            };
            if !progressed {
                return Ok(());
            }
        }
    }

    /// Preamble or part data up to the next delimiter; keeps back only what may start one.
    fn scan_data(&mut self) -> Result<bool, FormError> {
        let found = memchr::memmem::find(&self.pending, &self.delimiter);
        let settled = match found {
            Some(at) => at,
            None => self.pending.len().saturating_sub(self.delimiter.len() - 1),
        };
        if self.state == State::Body {
            self.data_bytes += settled;
            if self.data_bytes > self.max_data_bytes {
                return Err(FormError::TooLarge);
            }
            self.current
                .data
                .extend_from_slice(&self.pending[..settled]);
        }
        match found {
            Some(at) => {
                self.pending.drain(..at + self.delimiter.len());
                if self.state == State::Body {
                    self.parts.push(std::mem::take(&mut self.current));
                }
                self.state = State::AfterDelimiter;
                Ok(true)
            }
            None => {
                self.pending.drain(..settled);
                Ok(false)
            }
        }
    }

    /// `--` closes the body; padding and CRLF open the next part.
    fn after_delimiter(&mut self) -> Result<bool, FormError> {
        if self.pending.starts_with(b"--") {
            self.state = State::Done;
            return Ok(true);
        }
        if self.pending.first().is_some_and(|&b| b == b'-') && self.pending.len() < 2 {
            return Ok(false);
        }
        let Some(end) = memchr::memmem::find(&self.pending, b"\r\n") else {
            let padding = self
                .pending
                .iter()
                .all(|&b| matches!(b, b' ' | b'\t' | b'\r'));
            return if padding && self.pending.len() < MAX_PADDING + 2 {
                Ok(false)
            } else {
                Err(FormError::BadDelimiter)
            };
        };
        if end > MAX_PADDING || !self.pending[..end].iter().all(|&b| b == b' ' || b == b'\t') {
            return Err(FormError::BadDelimiter);
        }
        if self.parts.len() >= MAX_PARTS {
            return Err(FormError::TooManyParts);
        }
        self.pending.drain(..end + 2);
        self.state = State::Headers;
        Ok(true)
    }

    /// The part's header block, up to its blank line.
    fn headers(&mut self) -> Result<bool, FormError> {
        let end = if self.pending.starts_with(b"\r\n") {
            Some(0)
        } else {
            memchr::memmem::find(&self.pending, b"\r\n\r\n").map(|at| at + 2)
        };
        let Some(end) = end else {
            // A terminator could still end within the limit only while this is short.
            return if self.pending.len() >= MAX_PART_HEAD_BYTES + 2 {
                Err(FormError::HeadTooLarge)
            } else {
                Ok(false)
            };
        };
        if end > MAX_PART_HEAD_BYTES {
            return Err(FormError::HeadTooLarge);
        }
        let block = String::from_utf8_lossy(&self.pending[..end]).into_owned();
        self.current = part_of_headers(&block)?;
        self.pending.drain(..end + 2);
        self.state = State::Body;
        Ok(true)
    }
}

/// A part's name, file name and media type from its header lines (each ending in CRLF).
fn part_of_headers(block: &str) -> Result<ParsedPart, FormError> {
    let mut part = ParsedPart::default();
    let mut named = false;
    for line in block.split("\r\n").filter(|l| !l.is_empty()) {
        let (key, value) = line.split_once(':').ok_or(FormError::BadPartHeader)?;
        let value = value.trim();
        if key.trim().eq_ignore_ascii_case("content-type") {
            part.content_type = Some(value.to_owned());
        } else if key.trim().eq_ignore_ascii_case("content-disposition") {
            let (kind, params) = value.split_once(';').unwrap_or((value, ""));
            if !kind.trim().eq_ignore_ascii_case("form-data") {
                return Err(FormError::BadPartHeader);
            }
            for (k, v) in disposition_params(params) {
                match k.as_str() {
                    "name" => {
                        part.name = v;
                        named = true;
                    }
                    "name*" => {
                        let encoded = v.split_once("''").map_or(v.as_str(), |(_, e)| e);
                        part.name = percent_decode(encoded);
                        named = true;
                    }
                    "filename" => part.filename = Some(percent_decode(&v)),
                    _ => {}
                }
            }
        }
    }
    if !named {
        return Err(FormError::BadPartHeader);
    }
    // ringperf's writer percent-encodes `"`, CR and LF in a name beyond ASCII (browsers do too).
    if !part.name.is_ascii() {
        part.name = part
            .name
            .replace("%22", "\"")
            .replace("%0D", "\r")
            .replace("%0A", "\n");
    }
    Ok(part)
}

/// `; key=value` pairs (keys lowercased), quoted values unescaped; stops at a malformed pair.
fn disposition_params(mut rest: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start_matches([' ', '\t', ';']);
        let Some((key, after)) = rest.split_once('=') else {
            return out;
        };
        let key = key.trim().to_ascii_lowercase();
        let after = after.trim_start();
        if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next().map(|(_, c)| c)),
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    _ => value.push(c),
                }
            }
            let Some(end) = end else {
                return out;
            };
            out.push((key, value));
            rest = &quoted[end..];
        } else {
            let end = after.find(';').unwrap_or(after.len());
            out.push((key, after[..end].trim().to_owned()));
            rest = &after[end..];
        }
    }
}

/// `%XX` sequences decoded (invalid ones kept as they are), then read as UTF-8 (lossily): a
/// form's `filename*` and a URL path's segments.
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && let (Some(h), Some(l)) = (
                b.get(i + 1).and_then(|&c| hex(c)),
                b.get(i + 2).and_then(|&c| hex(c)),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
#[path = "form_parse_tests.rs"]
mod tests;
