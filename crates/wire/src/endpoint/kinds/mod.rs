//! One file per endpoint type. Each file owns its type's metadata (paths, streaming, metric
//! applicability, console title), its request body, the input text it contributes to ISL and the
//! parsing of its response objects, and exposes them as one [`Descriptor`]. The rest of the code
//! asks [`super::EndpointKind::descriptor`] and never branches on the type itself.
//!
//! Payload and parsing facts follow AIPerf 0.13's `aiperf/endpoints/*.py` (docs/endpoints.md).

pub(super) mod audio_transcription;
pub(super) mod chat;
mod chat_compact;
pub(super) mod chat_embeddings;
pub(super) mod cohere_rankings;
pub(super) mod completions;
pub(super) mod embeddings;
pub(super) mod hf_tei_rankings;
pub(super) mod huggingface_generate;
pub(super) mod image_edit;
pub(super) mod image_generation;
pub(super) mod image_retrieval;
pub(super) mod messages;
pub(super) mod nim_embeddings;
pub(super) mod nim_rankings;
pub(super) mod raw;
pub(super) mod responses;
pub(super) mod solido_rag;
pub(super) mod template;
pub(super) mod video_generation;

use serde_json::{Map, Value};

use super::payload::{PayloadParams, TurnBody};
use super::response::ParsedResponse;
use crate::conversation::{Content, Turn};
use crate::record::RawRecord;

/// The chat parser's two readings of one whole response body, for the fuzz target: the strict
/// scan's (`None` when it declines the body) and the full parser's.
#[cfg(any(test, feature = "testing"))]
pub fn chat_body_readings(json: &[u8]) -> (Option<ParsedResponse>, ParsedResponse) {
    let mut fast = ParsedResponse::default();
    let taken = chat_compact::completion(json, 1, &mut fast);
    let mut full = ParsedResponse::default();
    chat::parse_full(json, 1, &mut full);
    (taken.then_some(fast), full)
}

/// A form-data type's check of one turn ([`form_checker`]).
pub type FormCheck = fn(&Turn) -> Result<(), super::form::FormInputError>;

/// The check of a turn before a multipart/form-data type sends it (what AIPerf's
/// `format_payload` refuses); `None` for a type whose body is not a form of media.
pub fn form_checker(kind: super::EndpointKind) -> Option<FormCheck> {
    match kind {
        super::EndpointKind::ImageEdit => Some(image_edit::check),
        super::EndpointKind::AudioTranscription => Some(audio_transcription::check),
        _ => None,
    }
}

/// How `--api-key` is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer <key>` (every OpenAI-style endpoint).
    Bearer,
    /// `x-api-key: <key>` plus `anthropic-version` (Anthropic Messages).
    AnthropicKey,
}

/// Everything ringperf knows about one endpoint type.
#[derive(Clone, Copy)]
pub struct Descriptor {
    /// Path appended to the base URL when `--endpoint` is not given.
    pub default_path: &'static str,
    /// Path used instead of `default_path` when streaming (TGI's `/generate_stream`).
    pub streaming_path: Option<&'static str>,
    /// `--streaming` is honoured; otherwise it is turned off.
    pub supports_streaming: bool,
    /// The endpoint generates tokens: PRODUCES_TOKENS_ONLY metrics apply.
    pub produces_tokens: bool,
    /// The endpoint's input is tokenized: TOKENIZES_INPUT_ONLY metrics apply.
    pub tokenizes_input: bool,
    /// The console table's title.
    pub metrics_title: &'static str,
    /// A conversation's system / user-context messages are sent.
    pub consumes_system_message: bool,
    /// Later turns of a conversation carry the earlier turns and the server's replies, as these
    /// hooks write them; `None`: every turn is sent alone.
    pub history: Option<History>,
    pub auth: Auth,
    /// The body of one turn, before serialization (extras merged as the endpoint merges them).
    pub build: fn(&PayloadParams, &TurnBody<'_>) -> Map<String, Value>,
    /// The texts of a wire payload's messages as a chat template sees them (content text
    /// only), in order.
    pub input_texts: for<'a> fn(&'a Value, &mut Vec<&'a str>),
    /// The texts AIPerf tokenizes for ISL, in order: [`Self::input_texts`] and, where the type
    /// replays them, the tool calls of earlier turns (the `tools` schemas are added for every
    /// type by [`crate::endpoint::payload::payload_input`]).
    pub isl_texts: for<'a> fn(&'a Value, &mut Vec<&'a str>),
    /// Applies one response object (an SSE message's data or a whole body) stamped `stamp_ns`.
    pub parse: fn(&[u8], u64, &mut ParsedResponse),
    /// An SSE message whose data is `[DONE]` is a response object of that text (AIPerf's
    /// auto-detecting endpoints read an undecodable message as text); otherwise it is skipped.
    pub sse_done_is_text: bool,
    /// The worker's extraction of one SSE message for a compact record (see
    /// [`crate::record::EventForm`]): appends the message's text delta to the buffer and says
    /// what it is, or declines (`None`) for a message only the full parser reads. `None`: the
    /// type's records keep their raw messages.
    pub compact: Option<Compactor>,
    /// Images in, videos out: the media metrics that apply (docs/metrics.md, "Media").
    pub media: super::MediaCaps,
}

impl Descriptor {
    /// A type's descriptor from what every type has its own of (its default path, body builder,
    /// ISL texts and response parser), the rest at their defaults: no streaming path, no
    /// streaming, no tokens produced, input tokenized, the "LLM Metrics" title, no system
    /// message, no history, bearer auth, `[DONE]` skipped, no compactor, no media metrics. A
    /// type's `DESCRIPTOR` names what differs (`..Descriptor::new(…)`).
    pub const fn new(
        default_path: &'static str,
        build: fn(&PayloadParams, &TurnBody<'_>) -> Map<String, Value>,
        input_texts: for<'a> fn(&'a Value, &mut Vec<&'a str>),
        parse: fn(&[u8], u64, &mut ParsedResponse),
    ) -> Self {
        Descriptor {
            default_path,
            streaming_path: None,
            supports_streaming: false,
            produces_tokens: false,
            tokenizes_input: true,
            metrics_title: "LLM Metrics",
            consumes_system_message: false,
            history: None,
            auth: Auth::Bearer,
            build,
            input_texts,
            isl_texts: input_texts,
            parse,
            sse_done_is_text: false,
            compact: None,
            media: super::MediaCaps::NONE,
        }
    }
}

/// An endpoint's extraction of one SSE message for a compact record ([`Descriptor::compact`]).
pub type Compactor = fn(&[u8], &mut Vec<u8>) -> Option<crate::record::EventForm>;

/// How a type replays a conversation (AIPerf's `build_messages` and `build_assistant_turn`).
#[derive(Clone, Copy)]
pub struct History {
    /// Appends the items a user turn adds to the history (its message as the type renders it).
    pub turn: fn(&Turn, &mut Vec<Value>),
    /// Appends the items the server's reply adds (nothing when it has no replayable content).
    pub reply: fn(&RawRecord, &mut Vec<Value>),
}

/// AIPerf's default assistant text (`_build_assistant_turn_from_parsed`): per response object,
/// its content, else its reasoning, concatenated; `kind` parses the objects.
pub(super) fn reply_text(kind: super::EndpointKind, rec: &RawRecord) -> String {
    let mut parsed = ParsedResponse::default();
    let mut text = String::new();
    let parse = kind.descriptor().parse;
    super::response::for_each_object(rec, |json| {
        let (out_at, reasoning_at) = (parsed.output_text.len(), parsed.reasoning_text.len());
        parse(json, 0, &mut parsed);
        let content = &parsed.output_text[out_at..];
        if !content.is_empty() {
            text.push_str(content);
        } else {
            text.push_str(&parsed.reasoning_text[reasoning_at..]);
        }
    });
    text
}

/// Merges `--extra-inputs`, then the turn's own extras, into `body` (AIPerf's `dict.update`: an
/// existing key keeps its place and takes the new value, a new key is appended).
pub(super) fn merge_extras(body: &mut Map<String, Value>, params: &PayloadParams, turn: &Turn) {
    for (k, v) in params.extra_inputs.iter().chain(&turn.extra) {
        body.insert(k.clone(), v.clone());
    }
}

/// A turn's non-empty texts for an endpoint that takes plain text (AIPerf's
/// `[c for text in turn.texts for c in text.contents if c]`): its texts, the string contents of
/// its messages, or a rankings turn's query then passages.
pub(super) fn turn_texts(turn: &Turn) -> Vec<String> {
    let mut out: Vec<String> = match &turn.content {
        Content::Texts(texts) => texts.clone(),
        Content::Messages(list) => list
            .iter()
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .map(str::to_string)
            .collect(),
        Content::Rankings { query, passages } => {
            std::iter::once(query).chain(passages).cloned().collect()
        }
        Content::Raw(_) => Vec::new(),
    };
    out.retain(|t| !t.is_empty());
    out
}

/// Python truthiness of a JSON value, as AIPerf's `if payload.get("stream")` sees it.
pub(super) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// A non-empty JSON string.
pub(super) fn non_empty_str(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// The usage object of a response, when it is a non-empty object (AIPerf ignores `{}`, `null`).
pub(super) fn usage_of(v: Option<&Value>) -> Option<crate::record::Usage> {
    let v = v?;
    if v.as_object().is_none_or(|o| o.is_empty()) {
        return None;
    }
    serde::Deserialize::deserialize(v)
        .ok()
        .map(|u: super::wire::WireUsage| u.normalize())
}

/// [`walk_texts`] with chat's `text` parts: the input texts of every endpoint that uses AIPerf's
/// generic walk unchanged.
pub(super) fn text_parts<'a>(value: &'a Value, texts: &mut Vec<&'a str>) {
    walk_texts(value, &["text"], texts);
}

/// One whole response that counts as data when `list` finds a non-empty list in it (the
/// rankings endpoints; what the list holds is not read).
pub(super) fn data_if_listed(
    bytes: &[u8],
    stamp_ns: u64,
    out: &mut ParsedResponse,
    list: impl Fn(&Value) -> Option<&Vec<Value>>,
) {
    if json(bytes).is_some_and(|v| list(&v).is_some_and(|l| !l.is_empty())) {
        out.add_data(stamp_ns);
    }
}

/// AIPerf's generic payload walk (`payload_extraction.extract_inputs`) for the endpoints that
/// use it: the `messages` / `input` item arrays (string `content`, or parts whose `type` is one of
/// `text_types`); when there are none, the flat shapes `prompt`, `input` (a string or a list of
/// strings), rankings `query` + `passages`, TGI `inputs`.
pub(super) fn walk_texts<'a>(payload: &'a Value, text_types: &[&str], out: &mut Vec<&'a str>) {
    let mut found = false;
    for field in ["messages", "input"] {
        let Some(items) = payload.get(field).and_then(Value::as_array) else {
            continue;
        };
        let shaped = items
            .iter()
            .any(|i| i.get("role").is_some() || i.get("type").is_some());
        if items.is_empty() || !shaped {
            continue;
        }
        found = true;
        for item in items {
            match item.get("content") {
                Some(Value::String(s)) => out.push(s),
                Some(Value::Array(parts)) => {
                    for part in parts {
                        let ty = part.get("type").and_then(Value::as_str).unwrap_or("");
                        if text_types.contains(&ty)
                            && let Some(t) = part.get("text").and_then(Value::as_str)
                        {
                            out.push(t);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    if found {
        return;
    }
    for key in ["prompt", "input"] {
        match payload.get(key) {
            Some(Value::String(s)) => {
                out.push(s);
                return;
            }
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
                out.extend(items.iter().filter_map(Value::as_str));
                return;
            }
            _ => {}
        }
    }
    if let (Some(Value::String(query)), Some(Value::Array(passages))) =
        (payload.get("query"), payload.get("passages"))
    {
        out.push(query);
        for p in passages {
            match p {
                Value::String(s) => out.push(s),
                Value::Object(o) => out.extend(o.get("text").and_then(Value::as_str)),
                _ => {}
            }
        }
        return;
    }
    if let Some(Value::String(s)) = payload.get("inputs") {
        out.push(s);
    }
}

/// Parses a response object as a JSON value; `None` (skipped, as AIPerf skips undecodable data)
/// when it is not JSON.
pub(super) fn json(bytes: &[u8]) -> Option<Value> {
    serde_json::from_slice(bytes).ok()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod history_tests;

#[cfg(test)]
mod raw_tests;

#[cfg(test)]
mod template_tests;
