//! The fields of one SSE message, read as AIPerf reads them (docs/endpoints.md, "Streams (SSE)").
//!
//! A message is stripped (Python's `str.strip()`); an empty one says nothing. A single `data:`
//! line is the fast path: its value, stripped, is borrowed from the message. Otherwise every
//! line is stripped and split at its first `:` into a field name and a stripped value; an empty
//! name is a comment (the first one is kept); `data` values are joined with `\n`; `event: error`
//! (any case) makes the message an error whose text is the comment, or the whole message when
//! there is none.
//!
//! JSON repair: some servers put raw newlines inside a JSON `data:` value, so the JSON continues
//! on lines that are not fields. While the current `data` value starts with `{` and does not end
//! with `}`, a following line that does not start with `data:` continues that value (even
//! `event: error`), glued on with an escaped newline `\n` as AIPerf does.
//!
//! A data value that is empty says nothing ([`MessageData::Skip`]); `[DONE]` is
//! [`MessageData::Done`], which most endpoint types skip too.

use std::borrow::Cow;

/// Where the JSON text of an SSE message lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataRef {
    /// `message[start..end]`.
    Message(usize, usize),
    /// `scratch[start..end]` (several data fields joined, or a repaired value).
    Scratch(usize, usize),
}

/// What one SSE message says, by AIPerf's field rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MessageData {
    /// JSON text to parse (never empty, never `[DONE]`).
    Json(DataRef),
    /// No data or empty data.
    Skip,
    /// The `[DONE]` sentinel.
    Done,
    /// An `event: error` message, with AIPerf's error text.
    Error(String),
}

/// Python's `str.strip()` over ASCII whitespace.
fn trim(b: &[u8]) -> &[u8] {
    b.trim_ascii()
}

/// The field parse of one SSE message (docs/endpoints.md): `message` is the message's bytes
/// without its blank-line terminator; `scratch` holds joined or repaired values and is
/// overwritten.
pub fn message_data(message: &[u8], scratch: &mut Vec<u8>) -> MessageData {
    let lead = message.len() - message.trim_ascii_start().len();
    let msg = trim(message);
    if msg.is_empty() {
        return MessageData::Skip;
    }
    // Fast path: a single `data:` line, borrowed from the message.
    if !msg.contains(&b'\n') && msg.starts_with(b"data:") {
        let rest = &msg[5..];
        let start = lead + 5 + (rest.len() - rest.trim_ascii_start().len());
        let value = trim(rest);
        return data_or_skip(value, DataRef::Message(start, start + value.len()));
    }

    scratch.clear();
    let mut data_fields = 0usize;
    // Start of the current data field's value in `scratch`, when the last field was data.
    let mut open_data: Option<usize> = None;
    let mut is_error = false;
    let mut comment: Option<&[u8]> = None;
    let mut last_value_open = false;
    for raw_line in msg.split(|&b| b == b'\n') {
        let line = trim(raw_line);
        if line.is_empty() {
            continue;
        }
        // Repair of raw newlines inside a JSON value: AIPerf glues the line back with an
        // escaped newline so the JSON stays valid.
        if last_value_open && !line.starts_with(b"data:") {
            // The value goes on (a data value into `scratch`; any other field's is dropped,
            // as only data is used), and stays open until a line ends it with `}`.
            if open_data.is_some() {
                scratch.extend_from_slice(b"\\n");
                scratch.extend_from_slice(line);
            }
            last_value_open = !line.ends_with(b"}");
            continue;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => (trim(&line[..i]), trim(&line[i + 1..])),
            None => (line, &b""[..]),
        };
        last_value_open = json_value_open(value);
        open_data = None;
        match name {
            b"" => {
                comment.get_or_insert(value);
            }
            b"data" => {
                if data_fields > 0 {
                    scratch.push(b'\n');
                }
                data_fields += 1;
                open_data = Some(scratch.len());
                scratch.extend_from_slice(value);
            }
            _ if name.eq_ignore_ascii_case(b"event") && value.eq_ignore_ascii_case(b"error") => {
                is_error = true;
            }
            _ => {}
        }
    }
    if is_error {
        let text = match comment {
            Some(c) => String::from_utf8_lossy(c),
            None => Cow::Owned(format!(
                "Unknown error in SSE response: {}",
                String::from_utf8_lossy(msg)
            )),
        };
        return MessageData::Error(format!("Error occurred in SSE response: {text}"));
    }
    if data_fields == 0 {
        return MessageData::Skip;
    }
    let start = scratch.len() - scratch.trim_ascii_start().len();
    let end = scratch.trim_ascii_end().len().max(start);
    data_or_skip(trim(scratch), DataRef::Scratch(start, end))
}

fn data_or_skip(value: &[u8], at: DataRef) -> MessageData {
    if value.is_empty() {
        MessageData::Skip
    } else if value == b"[DONE]" {
        MessageData::Done
    } else {
        MessageData::Json(at)
    }
}

/// A value that starts a JSON object and does not end it yet.
fn json_value_open(value: &[u8]) -> bool {
    value.starts_with(b"{") && !value.ends_with(b"}")
}

impl DataRef {
    /// The JSON text: a span of `message` or of `scratch` (as filled by [`message_data`]).
    #[must_use]
    pub fn bytes<'a>(&self, message: &'a [u8], scratch: &'a [u8]) -> &'a [u8] {
        match *self {
            DataRef::Message(start, end) => message.get(start..end).unwrap_or_default(),
            DataRef::Scratch(start, end) => scratch.get(start..end).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON text of `message`, or how it said nothing / failed.
    fn json(message: &[u8]) -> Result<Vec<u8>, MessageData> {
        let mut scratch = Vec::new();
        match message_data(message, &mut scratch) {
            MessageData::Json(at) => Ok(at.bytes(message, &scratch).to_vec()),
            other => Err(other),
        }
    }

    #[test]
    fn single_data_line_is_borrowed_and_stripped() {
        let message = b"  data:   {\"a\":1}  \r";
        let mut scratch = Vec::new();
        let MessageData::Json(at) = message_data(message, &mut scratch) else {
            panic!("one data line is JSON");
        };
        assert!(matches!(at, DataRef::Message(..)), "borrowed, not copied");
        assert_eq!(at.bytes(message, &scratch), b"{\"a\":1}");
        assert!(scratch.is_empty());
    }

    #[test]
    fn data_lines_join_with_newline_and_other_fields_are_ignored() {
        assert_eq!(
            json(b"id: 7\ndata: [1,\ndata:  2]\nretry: 10").unwrap(),
            b"[1,\n2]"
        );
        assert_eq!(json(b": keep-alive\ndata: {}").unwrap(), b"{}");
    }

    #[test]
    fn done_is_told_apart() {
        for m in [
            &b"data: [DONE]"[..],
            b"data:[DONE]  ",
            b"id: 1\ndata: [DONE]",
        ] {
            assert_eq!(
                json(m),
                Err(MessageData::Done),
                "{:?}",
                String::from_utf8_lossy(m)
            );
        }
    }

    #[test]
    fn nothing_to_say() {
        for m in [
            &b""[..],
            b"   \r\n ",
            b": comment only",
            b"event: message",
            b"data:",
        ] {
            assert_eq!(
                json(m),
                Err(MessageData::Skip),
                "{:?}",
                String::from_utf8_lossy(m)
            );
        }
    }

    #[test]
    fn error_event_text_is_the_comment_or_the_message() {
        assert_eq!(
            json(b"event: error\n: upstream timed out\ndata: {}"),
            Err(MessageData::Error(
                "Error occurred in SSE response: upstream timed out".into()
            ))
        );
        assert_eq!(
            json(b"EVENT: Error\ndata: x"),
            Err(MessageData::Error(
                "Error occurred in SSE response: Unknown error in SSE response: EVENT: Error\ndata: x"
                    .into()
            ))
        );
    }

    #[test]
    fn broken_json_is_glued_with_an_escaped_newline() {
        assert_eq!(
            json(b"data: {\"t\": \"a\nb\"}").unwrap(),
            br#"{"t": "a\nb"}"#
        );
        // A continuation line is part of the value even when it looks like a field.
        assert_eq!(
            json(b"data: {\"t\": \"x\nevent: error\n\"}").unwrap(),
            br#"{"t": "x\nevent: error\n"}"#
        );
        // A comment's value is repaired the same way (AIPerf looks at the previous field,
        // whatever its name), and closes the same way.
        assert_eq!(json(b": {\nevent: error\ndata: {}").unwrap(), b"{}");
        assert!(matches!(
            json(b": {\nx}\nevent: error\ndata: {}"),
            Err(MessageData::Error(_))
        ));
        // The value is closed: the next line is a field again.
        assert_eq!(
            json(b"data: {\"t\":\n1}\nevent: error"),
            Err(MessageData::Error(
                "Error occurred in SSE response: Unknown error in SSE response: \
                 data: {\"t\":\n1}\nevent: error"
                    .into()
            ))
        );
    }
}
