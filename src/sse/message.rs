//! The fields of one SSE message: `data`, `event` and comments, borrowed from the message bytes.
//!
//! Field rules (spec §2.3 and the SSE standard): a line splits at its first `:`; a line with no
//! colon is a field with an empty value; an empty field name is a comment. The field name is
//! trimmed (AIPerf strips it); the value loses ONE leading space, as the SSE standard says, and
//! its trailing whitespace (including a stray CR). Blank lines are skipped.
//!
//! # JSON repair (spec §2.3 step 3)
//!
//! Some servers put raw newlines inside a JSON `data:` value, so the JSON continues on lines
//! that are not fields. The rule, as AIPerf applies it: while the current `data` value starts
//! with `{` and does not (yet) end with `}`, a following line that does not start with `data:`
//! is a continuation of that value, not a field. [`Message::data`] rejoins such a value only when
//! there is a continuation: if the break falls inside a JSON string it is written as the
//! two-byte escape `\n` (a raw newline is not allowed there), otherwise as a raw newline (JSON
//! whitespace). Messages without continuations are returned exactly as sent.

use memchr::{memchr, memchr2};

/// `data` value of the message that ends an OpenAI-style stream.
const DONE: &[u8] = b"[DONE]";

/// True when `data` is the end-of-stream marker `[DONE]`.
pub fn is_done(data: &[u8]) -> bool {
    data == DONE
}

/// One parsed SSE message. Parsing reads the lines once and keeps only offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message<'a> {
    bytes: &'a [u8],
    /// Range of the first `data` value.
    first_data: Option<(usize, usize)>,
    /// Number of `data` fields.
    data_fields: usize,
    /// Range of the last `event` value.
    event: Option<(usize, usize)>,
    /// Range of the last comment text.
    comment: Option<(usize, usize)>,
    /// Some `event` value is `error`, compared case-insensitively.
    error_event: bool,
    /// Some line is a JSON continuation (see the module docs).
    continued: bool,
}

impl<'a> Message<'a> {
    /// Reads the fields of `bytes` (one message, as returned by [`crate::sse::Framer`]).
    pub fn parse(bytes: &'a [u8]) -> Message<'a> {
        let mut m = Message {
            bytes,
            first_data: None,
            data_fields: 0,
            event: None,
            comment: None,
            error_event: false,
            continued: false,
        };
        for field in Fields::new(bytes) {
            let range = Some((field.start, field.end));
            match field.kind {
                Kind::Data => {
                    m.data_fields += 1;
                    if m.first_data.is_none() {
                        m.first_data = range;
                    }
                }
                Kind::Event => {
                    m.event = range;
                    m.error_event |= field.value(bytes).eq_ignore_ascii_case(b"error");
                }
                Kind::Comment => m.comment = range,
                Kind::Continuation => m.continued = true,
                Kind::Other => {}
            }
        }
        m
    }

    /// The message bytes as given to [`Message::parse`].
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The values of the `data` fields, in order (continuation lines are not included).
    pub fn data_values(&self) -> impl Iterator<Item = &'a [u8]> + use<'a> {
        let bytes = self.bytes;
        Fields::new(bytes)
            .filter(|f| f.kind == Kind::Data)
            .map(move |f| f.value(bytes))
    }

    /// The value of the last `event` field.
    pub fn event(&self) -> Option<&'a [u8]> {
        self.event.and_then(|(s, e)| self.bytes.get(s..e))
    }

    /// The text of the last comment line (`: text`).
    pub fn comment(&self) -> Option<&'a [u8]> {
        self.comment.and_then(|(s, e)| self.bytes.get(s..e))
    }

    /// Some `event` field is `error` (case-insensitive): AIPerf fails the request with code 502
    /// and the comment as message (spec §2.3 step 4).
    pub fn is_error_event(&self) -> bool {
        self.error_event
    }

    /// The data of the message: the single `data` value borrowed, or all values joined by `\n`
    /// into `scratch` (cleared first), with JSON continuations repaired (see the module docs).
    /// `None` when there is no `data` field.
    pub fn data<'s>(&'s self, scratch: &'s mut Vec<u8>) -> Option<&'s [u8]> {
        let first = self.first_data.and_then(|(s, e)| self.bytes.get(s..e))?;
        if self.data_fields == 1 && !self.continued {
            return Some(first);
        }
        scratch.clear();
        let mut json = JsonString::default();
        let mut first_field = true;
        for field in Fields::new(self.bytes) {
            let value = field.value(self.bytes);
            match field.kind {
                Kind::Data => {
                    if !first_field {
                        scratch.push(b'\n');
                        json.feed(b"\n");
                    }
                    first_field = false;
                }
                Kind::Continuation if json.in_string => {
                    scratch.extend_from_slice(b"\\n");
                    json.escaped = false;
                }
                Kind::Continuation => scratch.push(b'\n'),
                _ => continue,
            }
            scratch.extend_from_slice(value);
            json.feed(value);
        }
        Some(scratch.as_slice())
    }

    /// The message is the single data value `[DONE]`.
    pub fn is_done(&self) -> bool {
        self.data_fields == 1
            && !self.continued
            && self.first_data.and_then(|(s, e)| self.bytes.get(s..e)) == Some(DONE)
    }
}

/// Whether the end of the JSON text seen so far is inside a string.
#[derive(Default)]
struct JsonString {
    in_string: bool,
    /// The previous byte was a backslash inside a string.
    escaped: bool,
}

impl JsonString {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.escaped {
                self.escaped = false;
            } else if self.in_string && b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = !self.in_string;
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Data,
    Event,
    Comment,
    /// A raw line continuing a broken JSON `data` value.
    Continuation,
    /// Any other field (`id`, `retry`, unknown names).
    Other,
}

/// A field of a message: its kind and the byte range of its value.
struct Field {
    kind: Kind,
    start: usize,
    end: usize,
}

impl Field {
    fn value<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        bytes.get(self.start..self.end).unwrap_or_default()
    }
}

/// Iterator over the fields of a message, applying the JSON continuation rule.
struct Fields<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// The current `data` value starts with `{` and does not end with `}` yet.
    open_json: bool,
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8]) -> Fields<'a> {
        Fields {
            bytes,
            pos: 0,
            open_json: false,
        }
    }

    /// The next line (content range, terminator excluded), or `None` at the end.
    fn next_line(&mut self) -> Option<(usize, usize)> {
        let rest = self.bytes.get(self.pos..).filter(|r| !r.is_empty())?;
        let start = self.pos;
        match memchr2(b'\n', b'\r', rest) {
            None => {
                self.pos = self.bytes.len();
                Some((start, self.bytes.len()))
            }
            Some(i) => {
                let end = start + i;
                let crlf = rest.get(i..i + 2) == Some(b"\r\n");
                self.pos = end + if crlf { 2 } else { 1 };
                Some((start, end))
            }
        }
    }
}

impl Iterator for Fields<'_> {
    type Item = Field;

    fn next(&mut self) -> Option<Field> {
        loop {
            let (start, end) = self.next_line()?;
            let line = self.bytes.get(start..end).unwrap_or_default();
            if line.trim_ascii().is_empty() {
                continue;
            }
            if self.open_json && !line.trim_ascii_start().starts_with(b"data:") {
                let kept = line.trim_ascii_end();
                self.open_json = !kept.ends_with(b"}");
                return Some(Field {
                    kind: Kind::Continuation,
                    start,
                    end: start + kept.len(),
                });
            }
            let (name, value_start) = match memchr(b':', line) {
                Some(colon) => (line.get(..colon).unwrap_or_default(), start + colon + 1),
                None => (line, end),
            };
            let mut value = self.bytes.get(value_start..end).unwrap_or_default();
            let mut value_start = value_start;
            if let Some(stripped) = value.strip_prefix(b" ") {
                value = stripped;
                value_start += 1;
            }
            let value_end = value_start + value.trim_ascii_end().len();
            let value = value.trim_ascii_end();
            let kind = match name.trim_ascii() {
                b"data" => Kind::Data,
                b"event" => Kind::Event,
                b"" => Kind::Comment,
                _ => Kind::Other,
            };
            self.open_json =
                kind == Kind::Data && value.starts_with(b"{") && !value.ends_with(b"}");
            return Some(Field {
                kind,
                start: value_start,
                end: value_end,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data_of(bytes: &[u8]) -> Option<Vec<u8>> {
        let mut scratch = Vec::new();
        Message::parse(bytes).data(&mut scratch).map(<[u8]>::to_vec)
    }

    #[test]
    fn single_data_line_is_borrowed() {
        let bytes = b"data: {\"a\":1}  \r";
        let m = Message::parse(bytes);
        let mut scratch = Vec::new();
        let data = m.data(&mut scratch).unwrap();
        assert_eq!(data, b"{\"a\":1}");
        assert_eq!(
            data.as_ptr(),
            bytes[6..].as_ptr(),
            "a single value must be borrowed"
        );
        assert!(scratch.is_empty());
    }

    #[test]
    fn one_leading_space_is_stripped() {
        assert_eq!(data_of(b"data:x"), Some(b"x".to_vec()));
        assert_eq!(data_of(b"data: x"), Some(b"x".to_vec()));
        assert_eq!(data_of(b"data:  x"), Some(b" x".to_vec()));
        assert_eq!(data_of(b"data:"), Some(b"".to_vec()));
        assert_eq!(data_of(b"data"), Some(b"".to_vec()));
        assert_eq!(data_of(b"event: x"), None);
    }

    #[test]
    fn multiple_data_lines_join_with_newline() {
        for bytes in [
            &b"data: a\ndata: b\r\ndata:c"[..],
            b"data: a\rdata: b\rid: 7\ndata: c",
        ] {
            let m = Message::parse(bytes);
            assert_eq!(m.data_values().collect::<Vec<_>>(), [b"a", b"b", b"c"]);
            assert_eq!(data_of(bytes), Some(b"a\nb\nc".to_vec()));
        }
    }

    #[test]
    fn event_comment_and_error() {
        let m = Message::parse(b": upstream failed\nevent: Error\ndata: {\"error\":\"x\"}");
        assert!(m.is_error_event());
        assert_eq!(m.event(), Some(&b"Error"[..]));
        assert_eq!(m.comment(), Some(&b"upstream failed"[..]));
        assert!(!m.is_done());
        let m = Message::parse(b"event: message\ndata: x");
        assert!(!m.is_error_event());
        let m = Message::parse(b"event: error-ish");
        assert!(!m.is_error_event());
        let m = Message::parse(b": keep-alive");
        assert_eq!(m.comment(), Some(&b"keep-alive"[..]));
        assert_eq!(m.data_values().count(), 0);
    }

    #[test]
    fn done_marker() {
        assert!(Message::parse(b"data: [DONE]").is_done());
        assert!(Message::parse(b"data:[DONE]\r\n").is_done());
        assert!(!Message::parse(b"data: [DONE]\ndata: x").is_done());
        assert!(!Message::parse(b"data: [done]").is_done());
        assert!(is_done(b"[DONE]"));
    }

    #[test]
    fn json_broken_inside_a_string_is_escaped() {
        let bytes = b"data: {\"text\":\"line one\nline two\"}";
        let m = Message::parse(bytes);
        assert_eq!(
            data_of(bytes),
            Some(b"{\"text\":\"line one\\nline two\"}".to_vec())
        );
        assert_eq!(
            m.data_values().collect::<Vec<_>>(),
            [&b"{\"text\":\"line one"[..]]
        );
        let parsed: serde_json::Value = serde_json::from_slice(&data_of(bytes).unwrap()).unwrap();
        assert_eq!(parsed["text"], "line one\nline two");
    }

    #[test]
    fn json_broken_between_tokens_keeps_a_raw_newline() {
        let bytes = b"data: {\"a\": 1,\r\n  \"b\": \"x\\\"\"\r\n}";
        assert_eq!(
            data_of(bytes),
            Some(b"{\"a\": 1,\n  \"b\": \"x\\\"\"\n}".to_vec())
        );
        let parsed: serde_json::Value = serde_json::from_slice(&data_of(bytes).unwrap()).unwrap();
        assert_eq!(parsed["b"], "x\"");
    }

    #[test]
    fn continuation_stops_at_the_closing_brace_or_a_data_line() {
        // After `}` closes the value, a non-data line is a field again.
        let m = Message::parse(b"data: {\"a\":\n1}\nevent: error");
        assert!(m.is_error_event());
        // A `data:` line starts a new value even while the JSON is open.
        let bytes = b"data: {\"a\":\ndata: b";
        assert_eq!(data_of(bytes), Some(b"{\"a\":\nb".to_vec()));
        assert_eq!(Message::parse(bytes).data_values().count(), 2);
        // Without an open `{` value, stray lines are fields with no value.
        assert_eq!(data_of(b"data: [1,\n2]"), Some(b"[1,".to_vec()));
    }

    #[test]
    fn blank_and_garbage_lines_never_panic() {
        for bytes in [
            &b""[..],
            b"\n\n\r",
            b":",
            b"::",
            b"data:\r\n\r\n",
            b"\xff\xfe: \xff",
            b" ",
        ] {
            let m = Message::parse(bytes);
            let _ = data_of(bytes);
            let _ = (m.event(), m.comment(), m.is_done(), m.data_values().count());
        }
    }
}
