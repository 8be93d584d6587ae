//! Line-level lexer for the Prometheus text (0.0.4) and OpenMetrics text formats.
//!
//! [`Lexer`] is an iterator of borrowed [`Entry`] values: it never allocates, never panics and
//! stops at the first malformed line with a [`ParseError`] carrying the byte offset;
//! [`Lexer::tolerant`] reports each malformed line and goes on with the next one.

use std::borrow::Cow;
use std::fmt;

/// A metric family type as declared by a `# TYPE` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetricType {
    /// `counter`: monotonically increasing.
    Counter,
    /// `gauge`: a value that goes up and down.
    Gauge,
    /// `histogram`: cumulative `_bucket{le}` plus `_sum` and `_count`.
    Histogram,
    /// `summary`: quantiles plus `_sum` and `_count` (skipped by the collector).
    Summary,
    /// `untyped` (Prometheus) or `unknown` (OpenMetrics).
    Unknown,
    /// OpenMetrics `gaugehistogram` (tolerated, skipped by the collector).
    GaugeHistogram,
    /// OpenMetrics `info` (tolerated, skipped by the collector).
    Info,
    /// OpenMetrics `stateset` (tolerated, skipped by the collector).
    StateSet,
}

impl MetricType {
    /// Parses a `# TYPE` keyword; unknown keywords are `None`.
    #[must_use]
    pub fn from_keyword(word: &str) -> Option<Self> {
        Some(match word {
            "counter" => Self::Counter,
            "gauge" => Self::Gauge,
            "histogram" => Self::Histogram,
            "summary" => Self::Summary,
            "untyped" | "unknown" => Self::Unknown,
            "gaugehistogram" => Self::GaugeHistogram,
            "info" => Self::Info,
            "stateset" => Self::StateSet,
            _ => return None,
        })
    }

    /// The name AIPerf exports for this type (`unknown` for untyped families).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
            Self::Summary => "summary",
            Self::Unknown => "unknown",
            Self::GaugeHistogram => "gaugehistogram",
            Self::Info => "info",
            Self::StateSet => "stateset",
        }
    }
}

/// What went wrong on a malformed line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The page is not valid UTF-8.
    InvalidUtf8,
    /// A metric or label name is missing or contains an invalid character.
    InvalidName,
    /// A label set is not of the form `{name="value",...}`.
    InvalidLabels,
    /// A label value has an unknown escape or is not terminated.
    InvalidEscape,
    /// The sample value is missing or is not a number.
    InvalidValue,
    /// The timestamp is not a number.
    InvalidTimestamp,
    /// A `# TYPE` line names an unknown type or misses fields.
    InvalidType,
    /// A `# HELP` line misses the metric name.
    InvalidHelp,
    /// Unexpected characters after the value / timestamp.
    TrailingGarbage,
}

/// A malformed page: what and where (byte offset from the start of the parsed slice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Byte offset of the offending character.
    pub offset: usize,
    /// What was wrong.
    pub kind: ErrorKind,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "malformed metrics text at byte {}: {:?}",
            self.offset, self.kind
        )
    }
}

impl std::error::Error for ParseError {}

/// A label value as it appears between the quotes, with its escapes still in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LabelValue<'a> {
    raw: &'a str,
    escaped: bool,
}

impl<'a> LabelValue<'a> {
    /// The raw text between the quotes (escapes not resolved).
    #[must_use]
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// The value with `\\`, `\"` and `\n` resolved: borrowed when the raw text has no escape.
    #[must_use]
    pub fn value(&self) -> Cow<'a, str> {
        if self.escaped {
            let mut out = String::with_capacity(self.raw.len());
            unescape_into(self.raw, &mut out);
            Cow::Owned(out)
        } else {
            Cow::Borrowed(self.raw)
        }
    }
}

/// Resolves `\\`, `\"`, `\n` (an unknown escape is kept verbatim, as Prometheus does for HELP).
pub fn unescape_into(raw: &str, out: &mut String) {
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
}

/// The label block of a sample (text between the braces, already validated).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Labels<'a> {
    raw: &'a str,
}

impl<'a> Labels<'a> {
    /// Iterates `(name, value)` pairs in page order.
    #[must_use]
    pub fn iter(&self) -> LabelIter<'a> {
        LabelIter { rest: self.raw }
    }

    /// True when the sample has no labels.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// The value of label `name`, if present.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<LabelValue<'a>> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

/// Iterator over a validated label block.
#[derive(Clone, Debug)]
pub struct LabelIter<'a> {
    rest: &'a str,
}

impl<'a> Iterator for LabelIter<'a> {
    type Item = (&'a str, LabelValue<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        // The block was validated by `scan_labels`, so a failure here only ends iteration.
        let (name, value, rest) = scan_one_label(self.rest).ok()??;
        self.rest = rest;
        Some((name, value))
    }
}

/// One sample line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample<'a> {
    /// Sample name (e.g. `foo_bucket`).
    pub name: &'a str,
    /// Its labels.
    pub labels: Labels<'a>,
    /// Its value (may be NaN or ±Inf).
    pub value: f64,
    /// Optional timestamp as written (milliseconds in Prometheus text, seconds in OpenMetrics).
    pub timestamp: Option<f64>,
}

/// One meaningful line of a page.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Entry<'a> {
    /// `# HELP name text` (text raw: `\\` and `\n` escapes unresolved).
    Help {
        /// Family name.
        name: &'a str,
        /// Raw help text.
        text: &'a str,
    },
    /// `# TYPE name type`.
    Type {
        /// Family name as written.
        name: &'a str,
        /// Declared type.
        kind: MetricType,
    },
    /// A sample line.
    Sample(Sample<'a>),
    /// `# EOF` (OpenMetrics); nothing after it is read.
    Eof,
}

/// Iterator over the entries of a page. After an error or `# EOF` it yields nothing more
/// (a [`Lexer::tolerant`] one goes on after a malformed line; invalid UTF-8 still ends it).
#[derive(Clone, Debug)]
pub struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    done: bool,
    utf8_error: Option<ParseError>,
    tolerant: bool,
}

impl<'a> Lexer<'a> {
    /// Starts lexing `input`; invalid UTF-8 is reported as the first item.
    #[must_use]
    pub fn new(input: &'a [u8]) -> Self {
        match std::str::from_utf8(input) {
            Ok(text) => Self {
                text,
                pos: 0,
                done: false,
                utf8_error: None,
                tolerant: false,
            },
            Err(e) => Self {
                text: "",
                pos: 0,
                done: false,
                utf8_error: Some(ParseError {
                    offset: e.valid_up_to(),
                    kind: ErrorKind::InvalidUtf8,
                }),
                tolerant: false,
            },
        }
    }

    /// As [`Lexer::new`], but a malformed line is reported (its error) and lexing goes on at
    /// the next line: one bad line costs that line, not the page.
    #[must_use]
    pub fn tolerant(input: &'a [u8]) -> Self {
        Self {
            tolerant: true,
            ..Self::new(input)
        }
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Result<Entry<'a>, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Some(e) = self.utf8_error.take() {
            self.done = true;
            return Some(Err(e));
        }
        while self.pos < self.text.len() {
            let start = self.pos;
            let rest = self.text.get(start..).unwrap_or("");
            let (line, advance) = match memchr::memchr(b'\n', rest.as_bytes()) {
                Some(i) => (rest.get(..i).unwrap_or(""), i + 1),
                None => (rest, rest.len()),
            };
            self.pos = start + advance;
            let line = line.strip_suffix('\r').unwrap_or(line);
            match lex_line(line, start) {
                Ok(None) => continue,
                Ok(Some(entry)) => {
                    if entry == Entry::Eof {
                        self.done = true;
                    }
                    return Some(Ok(entry));
                }
                Err(e) => {
                    self.done = !self.tolerant;
                    return Some(Err(e));
                }
            }
        }
        self.done = true;
        None
    }
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b':'
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b':'
}

/// Splits a leading metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`) off `s`.
fn take_name(s: &str) -> Option<(&str, &str)> {
    let bytes = s.as_bytes();
    if !bytes.first().is_some_and(|&c| is_name_start(c)) {
        return None;
    }
    let end = bytes
        .iter()
        .position(|&c| !is_name_char(c))
        .unwrap_or(bytes.len());
    Some((s.get(..end)?, s.get(end..)?))
}

fn offset_in(line: &str, part: &str, line_start: usize) -> usize {
    line_start + (part.as_ptr() as usize).saturating_sub(line.as_ptr() as usize)
}

fn lex_line(line: &str, at: usize) -> Result<Option<Entry<'_>>, ParseError> {
    let trimmed = line.trim_start_matches([' ', '\t']);
    if trimmed.is_empty() {
        return Ok(None);
    }
    if let Some(comment) = trimmed.strip_prefix('#') {
        return lex_comment(line, comment, at);
    }
    let err = |part: &str, kind| ParseError {
        offset: offset_in(line, part, at),
        kind,
    };
    let (name, rest) = take_name(trimmed).ok_or_else(|| err(trimmed, ErrorKind::InvalidName))?;
    // Blanks may stand between the name and its labels (`name {a="1"} 8`), as Go's `expfmt`
    // and Python's `prometheus_client` read them.
    let (labels, rest) = if let Some(inner) = rest.trim_start_matches([' ', '\t']).strip_prefix('{')
    {
        let close = scan_labels(inner).map_err(|(part, kind)| err(part, kind))?;
        let raw = inner.get(..close).unwrap_or("");
        (Labels { raw }, inner.get(close + 1..).unwrap_or(""))
    } else {
        (Labels::default(), rest)
    };
    let rest_trim = rest.trim_start_matches([' ', '\t']);
    if rest_trim.len() == rest.len() {
        return Err(err(rest, ErrorKind::InvalidValue));
    }
    let (value_text, rest) = split_token(rest_trim);
    let value = parse_float(value_text).ok_or_else(|| err(value_text, ErrorKind::InvalidValue))?;
    let rest = rest.trim_start_matches([' ', '\t']);
    let (timestamp, rest) = if rest.is_empty() || rest.starts_with('#') {
        (None, rest)
    } else {
        let (ts_text, after) = split_token(rest);
        let ts = parse_float(ts_text)
            .filter(|t| t.is_finite())
            .ok_or_else(|| err(ts_text, ErrorKind::InvalidTimestamp))?;
        (Some(ts), after.trim_start_matches([' ', '\t']))
    };
    if !rest.is_empty() && !rest.starts_with('#') {
        return Err(err(rest, ErrorKind::TrailingGarbage));
    }
    // An exemplar (`# {labels} value [ts]`) is tolerated and ignored.
    Ok(Some(Entry::Sample(Sample {
        name,
        labels,
        value,
        timestamp,
    })))
}

fn split_token(s: &str) -> (&str, &str) {
    let end = s.find([' ', '\t']).unwrap_or(s.len());
    (s.get(..end).unwrap_or(""), s.get(end..).unwrap_or(""))
}

/// Parses a sample value: decimal/scientific floats, `NaN`, `+Inf`, `-Inf`, `Inf`.
fn parse_float(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ => {
            let b = s.as_bytes();
            // Rust also accepts "infinity"; restrict to plain numbers here.
            if b.is_empty()
                || !b
                    .iter()
                    .all(|c| c.is_ascii_digit() || b"+-.eE_".contains(c))
            {
                return None;
            }
            if b.contains(&b'_') {
                return None;
            }
            s.parse::<f64>().ok()
        }
    }
}

fn lex_comment<'a>(
    line: &'a str,
    comment: &'a str,
    at: usize,
) -> Result<Option<Entry<'a>>, ParseError> {
    let body = comment.trim_start_matches([' ', '\t']);
    let (keyword, rest) = split_token(body);
    let err = |part: &str, kind| ParseError {
        offset: offset_in(line, part, at),
        kind,
    };
    match keyword {
        "EOF" if rest.trim().is_empty() => Ok(Some(Entry::Eof)),
        "HELP" => {
            let rest = rest.trim_start_matches([' ', '\t']);
            let (name, text) = take_name(rest).ok_or_else(|| err(rest, ErrorKind::InvalidHelp))?;
            if !(text.is_empty() || text.starts_with([' ', '\t'])) {
                return Err(err(text, ErrorKind::InvalidHelp));
            }
            let text = text.strip_prefix([' ', '\t']).unwrap_or(text);
            Ok(Some(Entry::Help { name, text }))
        }
        "TYPE" => {
            let rest = rest.trim_start_matches([' ', '\t']);
            let (name, tail) = take_name(rest).ok_or_else(|| err(rest, ErrorKind::InvalidType))?;
            let word = tail.trim_matches([' ', '\t']);
            let kind =
                MetricType::from_keyword(word).ok_or_else(|| err(tail, ErrorKind::InvalidType))?;
            Ok(Some(Entry::Type { name, kind }))
        }
        // Any other comment (including `# UNIT`) carries nothing the collector uses.
        _ => Ok(None),
    }
}

/// Validates the label block starting right after `{`; returns the index of the closing `}`.
fn scan_labels(inner: &str) -> Result<usize, (&str, ErrorKind)> {
    let mut rest = inner;
    loop {
        let trimmed = rest.trim_start_matches([' ', '\t']);
        if let Some(after) = trimmed.strip_prefix('}') {
            return Ok(inner.len() - after.len() - 1);
        }
        match scan_one_label(trimmed) {
            Ok(Some((_, _, after))) => {
                if after.len() == trimmed.len() {
                    return Err((trimmed, ErrorKind::InvalidLabels));
                }
                rest = after;
            }
            Ok(None) => return Err((trimmed, ErrorKind::InvalidLabels)),
            Err(e) => return Err(e),
        }
    }
}

type OneLabel<'a> = Option<(&'a str, LabelValue<'a>, &'a str)>;

/// Reads `name="value"` plus an optional `,` from `s`; `Ok(None)` at `}` or end of block.
fn scan_one_label(s: &str) -> Result<OneLabel<'_>, (&str, ErrorKind)> {
    let s = s.trim_start_matches([' ', '\t']);
    if s.is_empty() || s.starts_with('}') {
        return Ok(None);
    }
    let (name, rest) = take_name(s).ok_or((s, ErrorKind::InvalidName))?;
    let rest = rest.trim_start_matches([' ', '\t']);
    let rest = rest
        .strip_prefix('=')
        .ok_or((rest, ErrorKind::InvalidLabels))?;
    let rest = rest.trim_start_matches([' ', '\t']);
    let body = rest
        .strip_prefix('"')
        .ok_or((rest, ErrorKind::InvalidLabels))?;
    let bytes = body.as_bytes();
    let mut i = 0;
    let mut escaped = false;
    loop {
        match bytes.get(i) {
            None => return Err((body, ErrorKind::InvalidEscape)),
            Some(b'"') => break,
            Some(b'\\') => {
                escaped = true;
                // `\\`, `\"` and `\n` are escapes; any other `\x` is kept as written, as
                // `prometheus_client` keeps it (tests/it/prom_corpus.rs). A backslash that ends
                // the line leaves the value unterminated.
                match bytes.get(i + 1) {
                    Some(_) => i += 2,
                    None => return Err((body.get(i..).unwrap_or(body), ErrorKind::InvalidEscape)),
                }
            }
            Some(_) => i += 1,
        }
    }
    let raw = body.get(..i).ok_or((body, ErrorKind::InvalidLabels))?;
    let after = body
        .get(i + 1..)
        .unwrap_or("")
        .trim_start_matches([' ', '\t']);
    let after = match after.strip_prefix(',') {
        Some(a) => a,
        None if after.is_empty() || after.starts_with('}') => after,
        None => return Err((after, ErrorKind::InvalidLabels)),
    };
    Ok(Some((name, LabelValue { raw, escaped }, after)))
}
