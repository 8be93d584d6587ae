//! Request bodies for chat and completions (spec §2.4) and the input text of a wire payload
//! (spec §2.6).
//!
//! Bodies are built once per turn before the run, as JSON bytes that workers send verbatim,
//! except the later turns of a chat conversation, which carry the server's replies and are
//! built when they are due ([`build_turn`] with the history). Key order follows AIPerf's dict insertion order: the endpoint fields, then the
//! `--extra-inputs` merged on top (an existing key keeps its place and takes the new value, a new
//! key is appended), then `stream_options` when the merged payload streams.

use serde_json::{Map, Value};

use super::EndpointKind;
use crate::conversation::{Content, Turn};

/// Everything besides the prompt that shapes a request body.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PayloadParams {
    /// `model` field (the first `--model-names` entry).
    pub model: String,
    /// `stream` field (`--streaming`).
    pub streaming: bool,
    /// Chat only: send `max_tokens` instead of `max_completion_tokens` (`--use-legacy-max-tokens`).
    pub use_legacy_max_tokens: bool,
    /// Chat only: add `stream_options.continuous_usage_stats=true` (`--per-chunk-usage`).
    pub per_chunk_usage: bool,
    /// `--extra-inputs`, merged into the top level after the endpoint fields.
    pub extra_inputs: Map<String, Value>,
}

/// Builds the JSON body of a single-turn request of one prompt (see [`build_turn`]).
pub fn build_payload(
    kind: EndpointKind,
    params: &PayloadParams,
    prompt: &str,
    max_tokens: Option<u32>,
) -> Vec<u8> {
    let turn = Turn {
        max_tokens,
        ..Turn::text(prompt)
    };
    build_turn(kind, params, &TurnBody::alone(&turn))
}

/// What one turn's body is made of besides the endpoint's parameters: the conversation's
/// system and user-context messages, its history so far, and the turn itself.
#[derive(Clone, Copy, Debug)]
pub struct TurnBody<'a> {
    pub system: Option<&'a str>,
    pub user_context: Option<&'a str>,
    /// Earlier messages of the conversation (each user turn, then the server's reply), in
    /// order. Chat only; other endpoints send each turn alone.
    pub history: &'a [Value],
    pub turn: &'a Turn,
}

impl<'a> TurnBody<'a> {
    /// A turn with no system message, no context and no history.
    pub fn alone(turn: &'a Turn) -> Self {
        Self {
            system: None,
            user_context: None,
            history: &[],
            turn,
        }
    }
}

/// The chat message a turn adds to the conversation: `{"role", "content"}` with one text as a
/// plain string and several as `{"type":"text"}` parts (spec §2.4). `None` for a turn whose
/// content is a message list or a verbatim body.
pub fn turn_message(turn: &Turn) -> Option<Value> {
    let Content::Texts(texts) = &turn.content else {
        return None;
    };
    let mut message = Map::new();
    message.insert(
        "role".into(),
        Value::from(turn.role.as_deref().unwrap_or("user")),
    );
    let content = match texts.as_slice() {
        [one] => Value::from(one.as_str()),
        many => Value::Array(
            many.iter()
                .map(|t| serde_json::json!({"type": "text", "text": t}))
                .collect(),
        ),
    };
    message.insert("content".into(), content);
    Some(Value::Object(message))
}

/// Builds the JSON body of one turn.
///
/// - chat: `{"messages":[system?, user context?, history…, this turn's message(s)],"model",
///   "stream"}` + the token limit (`max_completion_tokens`, or `max_tokens` with the legacy flag)
///   when the turn has one.
/// - completions: `{"prompt","model","stream"}` (one text as a string, several as a list) +
///   `max_tokens` when it is `Some` and non-zero; history is not sent.
/// - a [`Content::Raw`] turn: its body, verbatim, whatever the endpoint.
///
/// Extras are merged next (`--extra-inputs`, then the turn's own `extra`). If the merged
/// `stream` is truthy, `stream_options.include_usage` is set to `true` unless the user set it,
/// keeping every other user key (chat also adds `continuous_usage_stats` with
/// `per_chunk_usage`); a non-object `stream_options` is left alone.
pub fn build_turn(kind: EndpointKind, params: &PayloadParams, parts: &TurnBody<'_>) -> Vec<u8> {
    let turn = parts.turn;
    if let Content::Raw(body) = &turn.content {
        return serde_json::to_vec(body).unwrap_or_default();
    }
    let mut body = Map::new();
    match kind {
        EndpointKind::Chat => {
            let mut messages = Vec::with_capacity(parts.history.len() + 3);
            if let Some(system) = parts.system {
                messages.push(serde_json::json!({"role": "system", "content": system}));
            }
            if let Some(context) = parts.user_context {
                messages.push(serde_json::json!({"role": "user", "content": context}));
            }
            messages.extend(parts.history.iter().cloned());
            match &turn.content {
                Content::Messages(list) => messages.extend(list.iter().cloned()),
                _ => messages.extend(turn_message(turn)),
            }
            body.insert("messages".into(), Value::Array(messages));
            body.insert("model".into(), Value::from(params.model.as_str()));
            body.insert("stream".into(), Value::Bool(params.streaming));
            if let Some(n) = turn.max_tokens {
                let field = if params.use_legacy_max_tokens {
                    "max_tokens"
                } else {
                    "max_completion_tokens"
                };
                body.insert(field.into(), Value::from(n));
            }
        }
        EndpointKind::Completions => {
            let texts = turn_texts(turn);
            let prompt = match texts.as_slice() {
                [one] => Value::from(one.as_str()),
                many => Value::Array(many.iter().map(|t| Value::from(t.as_str())).collect()),
            };
            body.insert("prompt".into(), prompt);
            body.insert("model".into(), Value::from(params.model.as_str()));
            body.insert("stream".into(), Value::Bool(params.streaming));
            if let Some(n) = turn.max_tokens.filter(|&n| n > 0) {
                body.insert("max_tokens".into(), Value::from(n));
            }
        }
    }
    for (k, v) in params.extra_inputs.iter().chain(&turn.extra) {
        body.insert(k.clone(), v.clone());
    }
    if body.get("stream").is_some_and(truthy) {
        let continuous = kind == EndpointKind::Chat && params.per_chunk_usage;
        ensure_include_usage(&mut body, continuous);
    }
    // Serializing a map of `Value`s cannot fail: keys are strings and numbers are finite.
    serde_json::to_vec(&Value::Object(body)).unwrap_or_default()
}

/// A turn's texts for an endpoint that takes plain text: its texts, or the string contents of
/// its messages.
fn turn_texts(turn: &Turn) -> Vec<String> {
    match &turn.content {
        Content::Texts(texts) => texts.clone(),
        Content::Messages(list) => list
            .iter()
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .map(str::to_string)
            .collect(),
        Content::Raw(_) => Vec::new(),
    }
}

/// Python truthiness of a JSON value, as AIPerf's `if payload.get("stream")` sees it.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn ensure_include_usage(body: &mut Map<String, Value>, continuous: bool) {
    let mut options = match body.get("stream_options") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(user)) => user.clone(),
        Some(_) => return,
    };
    options.entry("include_usage").or_insert(Value::Bool(true));
    if continuous {
        options
            .entry("continuous_usage_stats")
            .or_insert(Value::Bool(true));
    }
    body.insert("stream_options".into(), Value::Object(options));
}

/// The input text of a wire payload, as AIPerf tokenizes it for ISL: every text of the payload
/// joined with `" "` (spec §2.6). Chat: each message's string `content`, or the `text` of its
/// `{"type":"text"}` parts; completions: `prompt` (a string or a list of strings). Empty texts
/// are skipped. A body that is not JSON yields `""`.
pub fn payload_texts(kind: EndpointKind, payload: &[u8]) -> String {
    let Ok(value) = serde_json::from_slice::<Value>(payload) else {
        return String::new();
    };
    let mut texts: Vec<&str> = Vec::new();
    match kind {
        EndpointKind::Chat => {
            let messages = value.get("messages").and_then(Value::as_array);
            for message in messages.into_iter().flatten() {
                match message.get("content") {
                    Some(Value::String(s)) => texts.push(s),
                    Some(Value::Array(parts)) => {
                        for part in parts {
                            let is_text = part.get("type").and_then(Value::as_str) == Some("text");
                            if let (true, Some(t)) =
                                (is_text, part.get("text").and_then(Value::as_str))
                            {
                                texts.push(t);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        EndpointKind::Completions => match value.get("prompt") {
            Some(Value::String(s)) => texts.push(s),
            Some(Value::Array(items)) => texts.extend(items.iter().filter_map(Value::as_str)),
            _ => {}
        },
    }
    texts.retain(|t| !t.is_empty());
    texts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(streaming: bool) -> PayloadParams {
        PayloadParams {
            model: "tiny-llm".into(),
            streaming,
            ..PayloadParams::default()
        }
    }

    fn text(bytes: &[u8]) -> &str {
        std::str::from_utf8(bytes).unwrap()
    }

    #[test]
    fn chat_non_streaming_with_osl() {
        let body = build_payload(EndpointKind::Chat, &params(false), "Hi there", Some(16));
        assert_eq!(
            text(&body),
            r#"{"messages":[{"role":"user","content":"Hi there"}],"model":"tiny-llm","stream":false,"max_completion_tokens":16}"#
        );
    }

    #[test]
    fn chat_streaming_forces_include_usage_and_legacy_field() {
        let mut p = params(true);
        p.use_legacy_max_tokens = true;
        let body = build_payload(EndpointKind::Chat, &p, "x", Some(7));
        assert_eq!(
            text(&body),
            r#"{"messages":[{"role":"user","content":"x"}],"model":"tiny-llm","stream":true,"max_tokens":7,"stream_options":{"include_usage":true}}"#
        );
    }

    #[test]
    fn chat_no_max_tokens_when_osl_unset() {
        let body = build_payload(EndpointKind::Chat, &params(false), "x", None);
        assert_eq!(
            text(&body),
            r#"{"messages":[{"role":"user","content":"x"}],"model":"tiny-llm","stream":false}"#
        );
    }

    #[test]
    fn extras_override_in_place_and_append_new_keys() {
        let mut p = params(true);
        p.per_chunk_usage = true;
        let extras: Value = serde_json::from_str(
            r#"{"ignore_eos":true,"model":"other","stream_options":{"include_usage":false,"x":1}}"#,
        )
        .unwrap();
        p.extra_inputs = extras.as_object().unwrap().clone();
        let body = build_payload(EndpointKind::Chat, &p, "x", Some(3));
        // `model` keeps its slot with the new value; user stream_options keys are kept and the
        // user's explicit include_usage=false wins (setdefault semantics).
        assert_eq!(
            text(&body),
            r#"{"messages":[{"role":"user","content":"x"}],"model":"other","stream":true,"max_completion_tokens":3,"ignore_eos":true,"stream_options":{"include_usage":false,"x":1,"continuous_usage_stats":true}}"#
        );
    }

    #[test]
    fn extras_can_turn_streaming_off_which_drops_stream_options() {
        let mut p = params(true);
        p.extra_inputs.insert("stream".into(), Value::Bool(false));
        let body = build_payload(EndpointKind::Chat, &p, "x", None);
        assert_eq!(
            text(&body),
            r#"{"messages":[{"role":"user","content":"x"}],"model":"tiny-llm","stream":false}"#
        );
    }

    #[test]
    fn completions_shape() {
        let body = build_payload(EndpointKind::Completions, &params(false), "Once", Some(16));
        assert_eq!(
            text(&body),
            r#"{"prompt":"Once","model":"tiny-llm","stream":false,"max_tokens":16}"#
        );
        let body = build_payload(EndpointKind::Completions, &params(true), "Once", Some(0));
        assert_eq!(
            text(&body),
            r#"{"prompt":"Once","model":"tiny-llm","stream":true,"stream_options":{"include_usage":true}}"#
        );
        // per_chunk_usage is a chat-only knob.
        let mut p = params(true);
        p.per_chunk_usage = true;
        let body = build_payload(EndpointKind::Completions, &p, "Once", None);
        assert!(!text(&body).contains("continuous_usage_stats"));
    }

    #[test]
    fn texts_from_wire_payloads() {
        let chat = br#"{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"a b"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"c"}]}],"model":"m"}"#;
        assert_eq!(payload_texts(EndpointKind::Chat, chat), "Be brief. a b c");
        let built = build_payload(EndpointKind::Chat, &params(true), "hello world", Some(5));
        assert_eq!(payload_texts(EndpointKind::Chat, &built), "hello world");
        let comp = br#"{"prompt":["one","two"],"model":"m"}"#;
        assert_eq!(payload_texts(EndpointKind::Completions, comp), "one two");
        let built = build_payload(EndpointKind::Completions, &params(false), "p q", None);
        assert_eq!(payload_texts(EndpointKind::Completions, &built), "p q");
        assert_eq!(payload_texts(EndpointKind::Chat, b"not json"), "");
        assert_eq!(
            payload_texts(EndpointKind::Completions, br#"{"prompt":5}"#),
            ""
        );
    }
}
