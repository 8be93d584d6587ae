//! Response extraction: a worker's [`RawRecord`] → content stamps, output and reasoning text,
//! usage and error (spec §2.3 steps 3–5, §2.5).
//!
//! A *content response* is a response object that carries data: text, reasoning or tool-call
//! text. Usage-only chunks, `[DONE]`, empty deltas and unparsable messages are not content
//! responses. Their stamps are what TTFT, ITL and request latency are computed from.

use std::borrow::Cow;

use super::EndpointKind;
use super::wire::Body;
use crate::record::{RawRecord, RequestError, Usage};

/// AIPerf's error type for a record with no content response.
pub const NO_CONTENT_ERROR_KIND: &str = "InvalidInferenceResultError";
/// AIPerf's explanation for a record with no content response (the note its
/// `InvalidInferenceResultError` carries).
pub const NO_CONTENT_ERROR_MESSAGE: &str = "No responses with actual content were received from \
     the server (only usage/metadata, null/empty data, or [DONE] markers)";
/// AIPerf's error type for an `event: error` SSE message.
pub const SSE_ERROR_KIND: &str = "SSEResponseError";
/// AIPerf's pseudo-HTTP code for an `event: error` SSE message.
pub const SSE_ERROR_CODE: u16 = 502;

/// What one request's response said. Reused across records: [`parse_record`] clears it and
/// fills it, so its buffers only grow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedResponse {
    /// Stamp of every content response, in arrival order.
    pub content_stamps_ns: Vec<u64>,
    /// Stamp of the first content response that carried non-reasoning output (text or tool
    /// calls).
    pub first_output_stamp_ns: Option<u64>,
    /// Output text: text content, the content that came with reasoning, and tool-call text,
    /// concatenated with no separator (AIPerf tokenizes `"".join(outputs)` once).
    pub output_text: String,
    /// Reasoning text (`reasoning_content` / `reasoning`), concatenated.
    pub reasoning_text: String,
    /// The usage of the last response that had a non-empty `usage` (no per-field merging).
    pub usage: Option<Usage>,
    /// The record's own error if it has one; else an `event: error` SSE message; else the
    /// no-content error when no content response arrived.
    pub error: Option<RequestError>,
    /// Scratch for SSE messages whose data must be joined or repaired.
    data_buf: Vec<u8>,
}

impl ParsedResponse {
    /// Empties every field, keeping the allocations.
    pub fn clear(&mut self) {
        self.content_stamps_ns.clear();
        self.first_output_stamp_ns = None;
        self.output_text.clear();
        self.reasoning_text.clear();
        self.usage = None;
        self.error = None;
        self.data_buf.clear();
    }

    /// Number of content responses.
    pub fn content_responses(&self) -> usize {
        self.content_stamps_ns.len()
    }
}

/// Parses every event of `rec` into `out` (cleared first).
///
/// For an SSE record each event is one raw SSE message (without its blank-line terminator);
/// its fields are parsed as AIPerf does (spec §2.3). An `event: error` message stops the parse
/// with an [`SSE_ERROR_KIND`] error. For a non-SSE record the single event spans the JSON body.
pub fn parse_record(kind: EndpointKind, rec: &RawRecord, out: &mut ParsedResponse) {
    out.clear();
    let mut scratch = std::mem::take(&mut out.data_buf);
    for ev in &rec.events {
        let bytes = rec.event_bytes(ev);
        let json: &[u8] = if rec.is_sse {
            match sse_data(bytes, &mut scratch) {
                SseData::Json(DataRef::Message(start, end)) => bytes.get(start..end).unwrap_or(&[]),
                SseData::Json(DataRef::Scratch(start, end)) => {
                    scratch.get(start..end).unwrap_or(&[])
                }
                SseData::Skip => continue,
                SseData::Error(message) => {
                    out.error = Some(RequestError::new(
                        Some(SSE_ERROR_CODE),
                        SSE_ERROR_KIND,
                        message,
                    ));
                    break;
                }
            }
        } else {
            trim(bytes)
        };
        if json.is_empty() {
            continue;
        }
        parse_object(kind, json, ev.stamp_ns, out);
    }
    out.data_buf = scratch;
    if let Some(e) = &rec.error {
        out.error = Some(e.clone());
    } else if out.error.is_none() && out.content_stamps_ns.is_empty() {
        out.error = Some(RequestError::new(
            None,
            NO_CONTENT_ERROR_KIND,
            NO_CONTENT_ERROR_MESSAGE,
        ));
    }
}

/// Applies one response object (spec §2.5). Invalid JSON is skipped silently, like AIPerf.
fn parse_object(kind: EndpointKind, json: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    let Ok(body) = sonic_rs::from_slice::<Body<'_>>(json) else {
        return;
    };
    if body.usage.present {
        out.usage = Some(body.usage.normalize());
    }
    let object = body.object.0.as_deref().unwrap_or("");
    let Some(choice) = body.choices.0 else {
        return;
    };
    let (is_content, has_output) = match kind {
        EndpointKind::Chat => {
            let data = match object {
                "chat.completion" => choice.message.0,
                "chat.completion.chunk" => choice.delta.0,
                _ => None,
            };
            let Some(data) = data else {
                return;
            };
            let content = data.content.non_empty();
            let reasoning = data
                .reasoning_content
                .non_empty()
                .or(data.reasoning.non_empty());
            let tool_text = data.tool_calls.0.as_str();
            if let Some(reasoning) = reasoning {
                out.reasoning_text.push_str(reasoning);
                out.output_text.push_str(content.unwrap_or(""));
                (true, content.is_some())
            } else if !tool_text.is_empty() {
                out.output_text.push_str(content.unwrap_or(""));
                out.output_text.push_str(tool_text);
                (true, true)
            } else if let Some(content) = content {
                out.output_text.push_str(content);
                (true, true)
            } else {
                (false, false)
            }
        }
        EndpointKind::Completions => match (object, choice.text.non_empty()) {
            ("completion" | "text_completion", Some(text)) => {
                out.output_text.push_str(text);
                (true, true)
            }
            _ => (false, false),
        },
    };
    if is_content {
        out.content_stamps_ns.push(stamp_ns);
        if has_output && out.first_output_stamp_ns.is_none() {
            out.first_output_stamp_ns = Some(stamp_ns);
        }
    }
}

/// Where the JSON text of an SSE message lies.
enum DataRef {
    /// `message[start..end]`.
    Message(usize, usize),
    /// `scratch[start..end]` (several data fields joined, or a repaired value).
    Scratch(usize, usize),
}

enum SseData {
    Json(DataRef),
    /// No data, empty data or `[DONE]`.
    Skip,
    /// An `event: error` message, with AIPerf's error text.
    Error(String),
}

/// Python's `str.strip()` over ASCII whitespace.
fn trim(b: &[u8]) -> &[u8] {
    b.trim_ascii()
}

/// The field parse of one SSE message (spec §2.3 steps 2–5).
fn sse_data(message: &[u8], scratch: &mut Vec<u8>) -> SseData {
    let lead = message.len() - message.trim_ascii_start().len();
    let msg = trim(message);
    if msg.is_empty() {
        return SseData::Skip;
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
            if let Some(start) = open_data {
                scratch.extend_from_slice(b"\\n");
                scratch.extend_from_slice(line);
                last_value_open = scratch.get(start..).is_some_and(json_value_open);
            }
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
        return SseData::Error(format!("Error occurred in SSE response: {text}"));
    }
    if data_fields == 0 {
        return SseData::Skip;
    }
    let start = scratch.len() - scratch.trim_ascii_start().len();
    let end = scratch.trim_ascii_end().len().max(start);
    data_or_skip(trim(scratch), DataRef::Scratch(start, end))
}

fn data_or_skip(value: &[u8], at: DataRef) -> SseData {
    if value.is_empty() || value == b"[DONE]" {
        SseData::Skip
    } else {
        SseData::Json(at)
    }
}

/// A value that starts a JSON object and does not end it yet.
fn json_value_open(value: &[u8]) -> bool {
    value.starts_with(b"{") && !value.ends_with(b"}")
}

#[cfg(test)]
mod tests;
