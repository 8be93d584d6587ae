//! Response extraction: a worker's [`RawRecord`] → content stamps, output and reasoning text,
//! usage and error (docs/endpoints.md).
//!
//! A *content response* is a response object that carries data: text, reasoning or tool-call
//! text. Usage-only chunks, `[DONE]`, empty deltas and unparsable messages are not content
//! responses. Their stamps are what TTFT, ITL and request latency are computed from.

use super::EndpointKind;
use crate::record::{EventForm, RawRecord, RequestError, Usage};
use crate::sse::{MessageData, message_data};

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
#[derive(Clone, Debug, Default, PartialEq)]
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
    /// The `completion_tokens` of the usage of the first content response that carried a
    /// non-empty one (`Some(None)`: it had no such count); `None` when none did. With
    /// `--per-chunk-usage`, the tokens delivered up to the first content chunk. Only the chat
    /// parser reads it (the only endpoint that asks for usage on every chunk).
    pub first_content_usage: Option<Option<u64>>,
    /// With [`ParsedResponse::keep_response_text`]: the text of every content response in
    /// arrival order, each one's reasoning before its content and its content before its
    /// tool-call text (AIPerf's `get_text` of each, joined): `outputs.json`'s `response_text`.
    pub response_text: String,
    /// The record's own error if it has one; else an `event: error` SSE message; else the
    /// no-content error when no content response arrived.
    pub error: Option<RequestError>,
    /// Scratch for SSE messages whose data must be joined or repaired.
    data_buf: Vec<u8>,
    /// Responses API: the `(output_index, content_index)` parts whose text came in deltas (their
    /// `done` event then carries no new text).
    pub(super) streamed_parts: Vec<(Option<i64>, Option<i64>)>,
    /// `template` only: where answers are read (`response_field`); `None` auto-detects. Set
    /// once by the owner ([`ParsedResponse::with_response_field`]); [`Self::clear`] keeps it.
    pub(super) response_field: Option<std::sync::Arc<super::FieldPath>>,
    /// Fill [`Self::response_text`] (set once by the owner; [`Self::clear`] keeps it).
    keep_response_text: bool,
    /// `video_generation` only: the figures the job reported.
    pub video: VideoFigures,
    /// The last non-empty `metrics.speculative_decoding` object (chat and completions).
    pub spec_decode: Option<serde_json::Value>,
    /// How many response objects carried a non-empty one (AIPerf keeps the record only when
    /// exactly one did).
    pub spec_decode_responses: u32,
}

/// What a video job reports about itself (SGLang's fields, read by AIPerf's
/// `VideoResponseData`): the first response object that carries each number gives it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VideoFigures {
    /// `inference_time_s`: the server's generation time, seconds.
    pub inference_time_s: Option<f64>,
    /// `peak_memory_mb`: the server's peak memory, MB.
    pub peak_memory_mb: Option<f64>,
}

impl ParsedResponse {
    /// An empty response that reads `template` answers at `field` (`None`: auto-detection).
    pub fn with_response_field(field: Option<std::sync::Arc<super::FieldPath>>) -> Self {
        Self {
            response_field: field,
            ..Self::default()
        }
    }

    /// Also gathers [`Self::response_text`] (`--export-outputs-json`).
    #[must_use]
    pub fn keep_response_text(mut self, keep: bool) -> Self {
        self.keep_response_text = keep;
        self
    }

    /// Empties every field but the response path, keeping the allocations.
    pub fn clear(&mut self) {
        self.first_content_usage = None;
        self.response_text.clear();
        self.content_stamps_ns.clear();
        self.first_output_stamp_ns = None;
        self.output_text.clear();
        self.reasoning_text.clear();
        self.usage = None;
        self.error = None;
        self.data_buf.clear();
        self.streamed_parts.clear();
        self.video = VideoFigures::default();
        self.spec_decode = None;
        self.spec_decode_responses = 0;
    }

    /// A response object's `metrics.speculative_decoding`, when it is a non-empty object.
    pub(super) fn spec_decode_payload(&mut self, payload: Option<serde_json::Value>) {
        if let Some(p) = payload.filter(|p| p.as_object().is_some_and(|o| !o.is_empty())) {
            self.spec_decode = Some(p);
            self.spec_decode_responses += 1;
        }
    }

    /// Files a content response at `stamp_ns`; `output` says it carried non-reasoning output.
    fn content(&mut self, stamp_ns: u64, output: bool) {
        self.content_stamps_ns.push(stamp_ns);
        if output && self.first_output_stamp_ns.is_none() {
            self.first_output_stamp_ns = Some(stamp_ns);
        }
    }

    /// Appends `parts` to [`Self::response_text`] when it is kept.
    fn response_parts(&mut self, parts: [&str; 2]) {
        if self.keep_response_text {
            for p in parts {
                self.response_text.push_str(p);
            }
        }
    }

    /// A content response of output text (AIPerf's `TextResponseData`; may be empty).
    pub(super) fn add_text(&mut self, stamp_ns: u64, text: &str) {
        self.output_text.push_str(text);
        self.response_parts([text, ""]);
        self.content(stamp_ns, true);
    }

    /// A content response of reasoning, with the content that came with it.
    pub(super) fn add_reasoning(&mut self, stamp_ns: u64, reasoning: &str, content: Option<&str>) {
        self.reasoning_text.push_str(reasoning);
        self.output_text.push_str(content.unwrap_or(""));
        self.response_parts([reasoning, content.unwrap_or("")]);
        self.content(stamp_ns, content.is_some());
    }

    /// A content response of tool-call text, after the prose content that came with it.
    pub(super) fn add_tool_call(&mut self, stamp_ns: u64, content: Option<&str>, tool_text: &str) {
        self.output_text.push_str(content.unwrap_or(""));
        self.output_text.push_str(tool_text);
        self.response_parts([content.unwrap_or(""), tool_text]);
        self.content(stamp_ns, true);
    }

    /// A response object that was a content response (it added one) carried a non-empty usage
    /// whose `completion_tokens` is `completion`: kept if it is the first such
    /// ([`Self::first_content_usage`]).
    pub(super) fn content_usage(&mut self, completion: Option<u64>) {
        if self.first_content_usage.is_none() {
            self.first_content_usage = Some(completion);
        }
    }

    /// A content response that carries no text (embeddings, rankings).
    pub(super) fn add_data(&mut self, stamp_ns: u64) {
        self.content(stamp_ns, true);
    }

    /// Number of content responses.
    pub fn content_responses(&self) -> usize {
        self.content_stamps_ns.len()
    }
}

/// The data of an SSE `[DONE]` message.
const DONE: &[u8] = b"[DONE]";

/// Parses every event of `rec` into `out` (cleared first).
///
/// For an SSE record each event is one raw SSE message (without its blank-line terminator);
/// its fields are parsed as AIPerf does (docs/endpoints.md). An `event: error` message stops it
/// with an [`SSE_ERROR_KIND`] error. For a non-SSE record the single event spans the JSON body.
pub fn parse_record(kind: EndpointKind, rec: &RawRecord, out: &mut ParsedResponse) {
    out.clear();
    let mut scratch = std::mem::take(&mut out.data_buf);
    for ev in &rec.events {
        let bytes = rec.event_bytes(ev);
        // A compact record's extracted events: the worker did the parse of the common shape.
        match ev.form {
            EventForm::Raw | EventForm::Kept => {}
            EventForm::Empty => continue,
            EventForm::Text => {
                out.add_text(ev.stamp_ns, &String::from_utf8_lossy(bytes));
                continue;
            }
            EventForm::Reasoning { split, content } => {
                let (reasoning, text) = bytes.split_at((split as usize).min(bytes.len()));
                let text = String::from_utf8_lossy(text);
                let content = content.then_some(&*text);
                out.add_reasoning(ev.stamp_ns, &String::from_utf8_lossy(reasoning), content);
                continue;
            }
        }
        let json: &[u8] = if rec.is_sse {
            match message_data(bytes, &mut scratch) {
                MessageData::Json(at) => at.bytes(bytes, &scratch),
                MessageData::Done if kind.descriptor().sse_done_is_text => DONE,
                MessageData::Skip | MessageData::Done => continue,
                MessageData::Error(message) => {
                    out.error = Some(RequestError::new(
                        Some(SSE_ERROR_CODE),
                        SSE_ERROR_KIND,
                        message,
                    ));
                    break;
                }
            }
        } else {
            bytes.trim_ascii()
        };
        if json.is_empty() {
            continue;
        }
        parse_object(kind, json, ev.stamp_ns, out);
    }
    out.data_buf = scratch;
    if let Some(e) = &rec.error {
        out.error = Some(RequestError::clone(e));
    } else if out.error.is_none() && out.content_stamps_ns.is_empty() {
        out.error = Some(RequestError::new(
            None,
            NO_CONTENT_ERROR_KIND,
            NO_CONTENT_ERROR_MESSAGE,
        ));
    }
}

/// Calls `f` with every response object of `rec` in arrival order (an SSE message's JSON data,
/// or the whole body), as [`parse_record`] sees them: undecodable or empty data is skipped and
/// an `event: error` message ends the walk (then `true` is returned). Only raw messages are walked: the types that read
/// records this way have no compactor, so their records keep every message raw.
pub(crate) fn for_each_object(rec: &RawRecord, mut f: impl FnMut(&[u8])) -> bool {
    let mut scratch = Vec::new();
    for ev in &rec.events {
        let Some(bytes) = rec.raw_event_bytes(ev) else {
            continue;
        };
        let json: &[u8] = if rec.is_sse {
            match message_data(bytes, &mut scratch) {
                MessageData::Json(at) => at.bytes(bytes, &scratch),
                MessageData::Done => DONE,
                MessageData::Skip => continue,
                MessageData::Error(_) => return true,
            }
        } else {
            bytes.trim_ascii()
        };
        if !json.is_empty() {
            f(json);
        }
    }
    false
}

/// Whether one SSE message is a content response (text, reasoning or tool calls; never a
/// usage-only chunk, a role chunk or `[DONE]`): AIPerf's first token, which gives a prefill slot
/// back. `scratch` keeps its allocations between calls.
pub fn is_content_message(
    kind: EndpointKind,
    message: &[u8],
    scratch: &mut ParsedResponse,
) -> bool {
    scratch.clear();
    let mut buf = std::mem::take(&mut scratch.data_buf);
    match message_data(message, &mut buf) {
        MessageData::Json(at) => {
            let json = at.bytes(message, &buf);
            if !json.is_empty() {
                parse_object(kind, json, 0, scratch);
            }
        }
        MessageData::Done if kind.descriptor().sse_done_is_text => {
            parse_object(kind, DONE, 0, scratch);
        }
        _ => {}
    }
    scratch.data_buf = buf;
    !scratch.content_stamps_ns.is_empty()
}

/// Applies one response object (docs/endpoints.md) with the endpoint type's parser. Invalid JSON is
/// skipped silently, like AIPerf.
fn parse_object(kind: EndpointKind, json: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    (kind.descriptor().parse)(json, stamp_ns, out);
}

#[cfg(test)]
mod tests;
