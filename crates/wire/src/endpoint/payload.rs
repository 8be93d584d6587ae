//! Request bodies and the input text of a wire payload (docs/endpoints.md), dispatched to
//! each endpoint type's own file in [`super::kinds`].
//!
//! Bodies are built once per turn before the run, as JSON bytes that workers send verbatim,
//! except the later turns of a chat conversation, which carry the server's replies and are
//! built when they are due ([`build_turn`] with the history). Key order follows AIPerf's dict insertion order: the endpoint fields, then the
//! `--extra-inputs` merged on top (an existing key keeps its place and takes the new value, a new
//! key is appended), then `stream_options` when the merged payload streams.

use serde_json::{Map, Value};

use super::EndpointKind;
use crate::conversation::{Content, Media, Turn};

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
    /// `--extra-inputs`, merged into the top level after the endpoint fields (TGI: into
    /// `parameters`).
    pub extra_inputs: Map<String, Value>,
    /// `--use-server-token-count` (Responses asks for streamed usage with it).
    pub use_server_token_count: bool,
    /// `template` only: the compiled `payload_template` (`extra_inputs` then holds the other
    /// extras).
    pub template: Option<std::sync::Arc<super::PayloadTemplate>>,
}

impl PayloadParams {
    /// The `model` a turn's body names: the turn's own (`--model-selection-strategy`), else
    /// [`PayloadParams::model`].
    /// `--extra-inputs store:true` (a bool, or the text `true` in any case): a Responses
    /// conversation chains its turns by `previous_response_id` (AIPerf's stateful mode).
    pub fn stores_responses(&self) -> bool {
        match self.extra_inputs.get("store") {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
            _ => false,
        }
    }

    pub fn model_for<'x>(&'x self, turn: &'x Turn) -> &'x str {
        turn.model.as_deref().unwrap_or(&self.model)
    }
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
    /// Responses chaining (`store: true`): the id of the conversation's last stored response;
    /// the turn then goes alone with `previous_response_id`, the server holding the rest.
    pub previous_response_id: Option<&'a str>,
}

impl<'a> TurnBody<'a> {
    /// A turn with no system message, no context and no history.
    pub fn alone(turn: &'a Turn) -> Self {
        Self {
            system: None,
            user_context: None,
            history: &[],
            turn,
            previous_response_id: None,
        }
    }
}

/// The chat message a turn adds to the conversation: `{"role", "content"}` with one text as a
/// plain string and several as `{"type":"text"}` parts, then its media as `image_url`,
/// `input_audio` and `video_url` parts (docs/endpoints.md, docs/multimodal.md). `None` for a turn
/// whose content is a message list or a verbatim body.
pub fn turn_message(turn: &Turn) -> Option<Value> {
    turn_message_in(PartDialect::Chat, turn)
}

/// [`turn_message`] with `dialect`'s content parts (Anthropic Messages' message list has chat's
/// shape with its own image blocks).
pub fn turn_message_in(dialect: PartDialect, turn: &Turn) -> Option<Value> {
    let Content::Texts(texts) = &turn.content else {
        return None;
    };
    let mut message = Map::new();
    message.insert(
        "role".into(),
        Value::from(turn.role.as_deref().unwrap_or("user")),
    );
    let content = match (texts.as_slice(), turn.media.is_empty()) {
        ([one], true) => Value::from(one.as_str()),
        (many, _) => {
            let mut parts: Vec<Value> = many
                .iter()
                // With media, an empty text is left out as AIPerf leaves it out.
                .filter(|t| turn.media.is_empty() || !t.is_empty())
                .map(|t| dialect.text_part(t))
                .collect();
            media_parts_in(dialect, &turn.media, &mut parts);
            Value::Array(parts)
        }
    };
    message.insert("content".into(), content);
    Some(Value::Object(message))
}

/// How an endpoint type spells a turn's content parts (AIPerf's `_render_*_part` hooks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartDialect {
    /// OpenAI chat: `text`, `image_url` (`{"url"}`, with a dataset's cache `uuid` beside it),
    /// `input_audio`, `video_url`.
    Chat,
    /// OpenAI Responses: `input_text`, `input_image` (the URL as a plain string, no UUID),
    /// `input_audio` as chat; no video (refused before the run: [`unsupported_media`]).
    Responses,
    /// Anthropic Messages: `text`, `image` blocks with a `base64` source (a `data:` URI) or a
    /// `url` source; no audio or video (refused before the run).
    Anthropic,
}

impl PartDialect {
    /// A text content part.
    pub fn text_part(self, text: &str) -> Value {
        match self {
            PartDialect::Responses => serde_json::json!({"type": "input_text", "text": text}),
            PartDialect::Chat | PartDialect::Anthropic => {
                serde_json::json!({"type": "text", "text": text})
            }
        }
    }

    /// One medium's content part; `None` for a kind the dialect has no part for.
    fn media_part(self, m: &Media) -> Option<Value> {
        Some(match (self, m) {
            (PartDialect::Chat, Media::Image(url)) => {
                serde_json::json!({"type": "image_url", "image_url": {"url": &**url}})
            }
            // AIPerf's chat passes a dataset's cache UUID through beside the URL.
            (PartDialect::Chat, Media::ImageUuid { url, uuid }) => {
                serde_json::json!({"type": "image_url", "image_url": {"url": &**url}, "uuid": &**uuid})
            }
            (PartDialect::Responses, Media::Image(url) | Media::ImageUuid { url, .. }) => {
                serde_json::json!({"type": "input_image", "image_url": &**url})
            }
            (PartDialect::Anthropic, Media::Image(url) | Media::ImageUuid { url, .. }) => {
                anthropic_image(url)
            }
            (PartDialect::Chat | PartDialect::Responses, Media::Audio(clip)) => {
                let (format, data) = audio_format_and_data(clip);
                serde_json::json!({"type": "input_audio", "input_audio": {"data": data, "format": format}})
            }
            (PartDialect::Chat, Media::Video(url)) => {
                serde_json::json!({"type": "video_url", "video_url": {"url": &**url}})
            }
            (PartDialect::Anthropic, Media::Audio(_))
            | (PartDialect::Responses | PartDialect::Anthropic, Media::Video(_)) => return None,
        })
    }
}

/// An Anthropic image block: a `data:<type>;base64,<b64>` URI as a `base64` source with its
/// media type (`image/png` when the URI names none), anything else as a `url` source.
fn anthropic_image(url: &str) -> Value {
    if let Some(rest) = url.strip_prefix("data:") {
        let (header, data) = rest.split_once(',').unwrap_or((rest, ""));
        let media_type = header
            .split(';')
            .next()
            .filter(|t| !t.is_empty())
            .unwrap_or("image/png");
        return serde_json::json!({
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        });
    }
    serde_json::json!({"type": "image", "source": {"type": "url", "url": url}})
}

/// Appends a turn's media as chat content parts, in AIPerf's order: images, audio, video. An
/// audio clip `<format>,<base64>` (or a `data:audio/<format>;base64,` URI) becomes
/// `{"data": <base64>, "format": <format>}`.
pub fn media_parts(media: &[Media], parts: &mut Vec<Value>) {
    media_parts_in(PartDialect::Chat, media, parts);
}

/// [`media_parts`] in `dialect`'s spelling; an image whose URL is empty (a UUID-only reference)
/// is kept by chat only, as AIPerf skips empty contents elsewhere.
pub fn media_parts_in(dialect: PartDialect, media: &[Media], parts: &mut Vec<Value>) {
    let order = |m: &Media| match m {
        Media::Image(_) | Media::ImageUuid { .. } => 0,
        Media::Audio(_) => 1,
        Media::Video(_) => 2,
    };
    for pass in 0..3 {
        for m in media.iter().filter(|m| order(m) == pass) {
            let empty_url = m.image_url().is_some_and(str::is_empty);
            if empty_url && dialect != PartDialect::Chat {
                continue;
            }
            parts.extend(dialect.media_part(m));
        }
    }
}

/// AIPerf's refusal of a turn whose media `kind` has no content part for, as its endpoint
/// raises it when it formats the request: video on Responses, audio and video on Anthropic
/// Messages.
pub fn unsupported_media(kind: EndpointKind, turn: &Turn) -> Option<&'static str> {
    let has = |video: bool| {
        turn.media.iter().any(|m| match m {
            Media::Video(_) => video,
            Media::Audio(_) => !video,
            Media::Image(_) | Media::ImageUuid { .. } => false,
        })
    };
    refused_media(kind, has(false), has(true))
}

/// [`unsupported_media`] of a turn with audio (`audio`) or video (`video`).
pub fn refused_media(kind: EndpointKind, audio: bool, video: bool) -> Option<&'static str> {
    match kind {
        EndpointKind::Responses if video => Some(
            "Responses API does not support video input. Use endpoint=chat for video turns, \
             or remove the video content.",
        ),
        EndpointKind::Messages if audio => Some(
            "Anthropic Messages API does not support audio input. Use a different endpoint, \
             or remove audio content from the turn.",
        ),
        EndpointKind::Messages if video => Some(
            "Anthropic Messages API does not support video input. Use a different endpoint, \
             or remove video content from the turn.",
        ),
        _ => None,
    }
}

/// Splits an audio clip into its format and base64 data: `wav,<b64>` or
/// `data:audio/wav;base64,<b64>` (a URI without a format says `wav`).
pub fn audio_format_and_data(clip: &str) -> (&str, &str) {
    if let Some(rest) = clip.strip_prefix("data:audio/") {
        let (header, data) = rest.split_once(',').unwrap_or((rest, ""));
        let format = header
            .split(';')
            .next()
            .filter(|f| !f.is_empty())
            .unwrap_or("wav");
        return (format, data);
    }
    clip.split_once(',').unwrap_or(("wav", clip))
}

/// Builds the JSON body of one turn: a [`Content::Raw`] turn's body verbatim whatever the
/// endpoint, else the endpoint type's body (see its file in [`super::kinds`]). Key order is
/// AIPerf's dict insertion order; `--extra-inputs` then the turn's own `extra` are merged as the
/// endpoint merges them.
pub fn build_turn(kind: EndpointKind, params: &PayloadParams, parts: &TurnBody<'_>) -> Vec<u8> {
    if let Content::Raw(body) = &parts.turn.content {
        return serde_json::to_vec(body).unwrap_or_default();
    }
    let body = (kind.descriptor().build)(params, parts);
    // Serializing a map of `Value`s cannot fail: keys are strings and numbers are finite.
    serde_json::to_vec(&Value::Object(body)).unwrap_or_default()
}

/// Sets `stream_options.include_usage` to `true` unless the user set it, keeping every other
/// user key (`continuous_usage_stats` too with `continuous`); a non-object `stream_options` is
/// left alone.
pub(super) fn ensure_include_usage(body: &mut Map<String, Value>, continuous: bool) {
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
/// joined with `" "` (docs/endpoints.md), as the endpoint type finds them (chat: a message's string
/// `content` or `{"type":"text"}` parts; completions: `prompt`; embeddings: `input`; TGI:
/// `inputs`; ...). Empty texts are skipped. A body that is not JSON yields `""`.
pub fn payload_texts(kind: EndpointKind, payload: &[u8]) -> String {
    payload_input(kind, payload).unwrap_or_default()
}

/// [`payload_texts`], or `None` when the payload holds no text at all for the endpoint type
/// (AIPerf then counts no ISL: a rankings body, a body that is not JSON).
pub fn payload_input(kind: EndpointKind, payload: &[u8]) -> Option<String> {
    let value = serde_json::from_slice::<Value>(payload).ok()?;
    input_text(kind, &value)
}

fn input_text(kind: EndpointKind, value: &Value) -> Option<String> {
    let mut texts: Vec<&str> = Vec::new();
    (kind.descriptor().isl_texts)(value, &mut texts);
    let schemas = tool_schema_texts(value);
    if texts.is_empty() && schemas.is_empty() {
        return None;
    }
    // AIPerf walks a message (or Responses item) array before the schemas, and a flat
    // `prompt` / `input` after them.
    let items = ["messages", "input"].iter().any(|k| {
        value.get(*k).and_then(Value::as_array).is_some_and(|a| {
            a.iter()
                .any(|i| i.get("role").is_some() || i.get("type").is_some())
        })
    });
    let mut all: Vec<&str> = Vec::with_capacity(texts.len() + schemas.len());
    if items {
        all.extend(&texts);
        all.extend(schemas.iter().map(String::as_str));
    } else {
        all.extend(schemas.iter().map(String::as_str));
        all.extend(&texts);
    }
    all.retain(|t| !t.is_empty());
    Some(all.join(" "))
}

/// The `tools` schemas' text of a wire payload joined by `" "` (what a chat template leaves
/// out, so AIPerf adds its tokens to a templated ISL); `None` without schemas or JSON.
pub fn payload_tool_schemas(payload: &[u8]) -> Option<String> {
    let value = serde_json::from_slice::<Value>(payload).ok()?;
    let texts = tool_schema_texts(&value);
    (!texts.is_empty()).then(|| texts.join(" "))
}

/// The top-level `tools` schemas' text, which a server puts before every prompt (AIPerf counts
/// it in the ISL): of each tool's `function` object, then of the tool itself, the `name` and
/// `description` strings and the `parameters` object as compact JSON.
fn tool_schema_texts(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let tools = value.get("tools").and_then(Value::as_array);
    for tool in tools.into_iter().flatten().filter(|t| t.is_object()) {
        let function = tool.get("function").filter(|f| f.is_object());
        for source in function.into_iter().chain(std::iter::once(tool)) {
            for key in ["name", "description"] {
                if let Some(t) = source
                    .get(key)
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push(t.to_owned());
                }
            }
            if let Some(p) = source.get("parameters").filter(|p| p.is_object()) {
                out.extend(serde_json::to_string(p).ok());
            }
        }
    }
    out
}

/// What one read of a wire payload gives (AIPerf's single-pass `extract_payload_inputs`): the
/// ISL text when `text` is asked for, and the image parts the type counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PayloadInputs {
    pub text: Option<String>,
    pub images: u32,
}

/// Reads `payload` once for its ISL text (when `text`) and its image count (when the type
/// takes images). Nothing to read (or not JSON): no text, no images.
pub fn payload_inputs(kind: EndpointKind, payload: &[u8], text: bool) -> PayloadInputs {
    let media = kind.descriptor().media;
    if !text && !media.supports_images() {
        return PayloadInputs::default();
    }
    let Ok(value) = serde_json::from_slice::<Value>(payload) else {
        return PayloadInputs::default();
    };
    PayloadInputs {
        text: if text { input_text(kind, &value) } else { None },
        images: media.count_images(&value),
    }
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

    /// Tool text counts in the ISL as AIPerf 0.13's payload walk finds it: a message's replayed
    /// `tool_calls` after its content, the `tools` schemas after the messages (before a flat
    /// `prompt`), parameters as compact JSON in their own key order. The expected strings are
    /// what AIPerf's `extract_inputs` joins for the same payloads.
    #[test]
    fn tool_calls_and_tool_schemas_count_as_aiperf_counts_them() {
        let chat = br#"{"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":[{"type":"text","text":"Weather in Paris?"},{"type":"image_url","image_url":{"url":"x"}}]},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"18 C, sunny"}],"model":"m","tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name, e.g. Paris"}},"required":["city"]}}}]}"#;
        assert_eq!(
            payload_texts(EndpointKind::Chat, chat),
            r#"You are terse. Weather in Paris? get_weather {"city": "Paris"} 18 C, sunny get_weather Current weather for a city {"type":"object","properties":{"city":{"type":"string","description":"City name, e.g. Paris"}},"required":["city"]}"#
        );
        let flat = r#"{"prompt":"Say hi","tools":[{"name":"f","description":"d","parameters":{"b":1,"a":[1.5,"é"]}}]}"#;
        assert_eq!(
            payload_texts(EndpointKind::Completions, flat.as_bytes()),
            r#"f d {"b":1,"a":[1.5,"é"]} Say hi"#
        );
        // A chat template sees the message content only (the tool calls ride beside it).
        let mut content = Vec::new();
        let v: Value = serde_json::from_slice(chat).unwrap();
        (EndpointKind::Chat.descriptor().input_texts)(&v, &mut content);
        assert_eq!(
            content,
            ["You are terse.", "Weather in Paris?", "", "18 C, sunny"]
        );
    }

    /// Each dialect's parts for one image (a data URI, a URL, a UUID-only reference), a clip
    /// and a video, by hand from AIPerf's `_render_*_part` hooks.
    #[test]
    fn media_parts_in_each_dialect() {
        use std::sync::Arc;
        let media = [
            Media::Video(Arc::from("https://v/x.mp4")),
            Media::Audio(Arc::from("wav,UklGRg==")),
            Media::Image(Arc::from("data:image/jpeg;base64,/9j/4A==")),
            Media::Image(Arc::from("https://i/y.png")),
            Media::ImageUuid {
                url: Arc::from(""),
                uuid: Arc::from("u1"),
            },
        ];
        let parts = |d| {
            let mut out = Vec::new();
            media_parts_in(d, &media, &mut out);
            Value::Array(out)
        };
        assert_eq!(
            parts(PartDialect::Responses),
            serde_json::json!([
                {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/4A=="},
                {"type": "input_image", "image_url": "https://i/y.png"},
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            ])
        );
        assert_eq!(
            parts(PartDialect::Anthropic),
            serde_json::json!([
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4A=="}},
                {"type": "image", "source": {"type": "url", "url": "https://i/y.png"}},
            ])
        );
        // Chat keeps the UUID-only reference (its UUID is the point of it) and the video.
        let chat = parts(PartDialect::Chat);
        assert_eq!(chat.as_array().unwrap().len(), 5);
        assert_eq!(
            chat[2],
            serde_json::json!({"type": "image_url", "image_url": {"url": ""}, "uuid": "u1"})
        );
        assert_eq!(chat[4]["type"], "video_url");
        // A data URI without a media type: AIPerf's `image/png`.
        assert_eq!(
            anthropic_image("data:;base64,AAAA")["source"]["media_type"],
            "image/png"
        );
    }

    /// What each API refuses, and only that.
    #[test]
    fn refused_media_by_type() {
        use EndpointKind::*;
        assert!(refused_media(Responses, true, false).is_none());
        assert!(
            refused_media(Responses, false, true)
                .unwrap()
                .contains("video")
        );
        assert!(
            refused_media(Messages, true, false)
                .unwrap()
                .contains("audio")
        );
        assert!(
            refused_media(Messages, false, true)
                .unwrap()
                .contains("video")
        );
        assert!(refused_media(Chat, true, true).is_none());
        assert!(refused_media(Template, true, true).is_none());
    }
}
