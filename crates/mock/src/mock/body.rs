//! What the mock reads from a completion request: which API it came in on ([`Endpoint`]) and the
//! few fields of its body it needs: `stream`, the output cap (`max_completion_tokens` /
//! `max_tokens`), `stream_options.include_usage`, and a rough prompt size from `messages` /
//! `prompt`. Errors are [`Error`].
//!
//! The rough prompt size here is the count of whitespace-separated words in every text the
//! body carries (`messages[*].content` as a string or as `{"text": ..}` parts, `prompt` as a
//! string or a list of strings): what the mock reports when it has no prompt tokenizer (with one,
//! the exact count is computed elsewhere, once per distinct body). The counting is done while the
//! JSON is parsed, without building a document tree or allocating per string.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Which API a request came in on (by its path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Chat,
    Completions,
    /// OpenAI Responses (`/v1/responses`).
    Responses,
    /// Anthropic Messages (`/v1/messages`).
    Messages,
    /// `/v1/embeddings`: OpenAI, NIM and chat-style embeddings requests alike.
    Embeddings,
    /// NIM rankings (`/v1/ranking`).
    NimRankings,
    /// Cohere rerank (`/v2/rerank`).
    CohereRankings,
    /// TEI rerank (`/rerank`).
    TeiRankings,
    /// TGI `/generate` (whole).
    Generate,
    /// TGI `/generate_stream` (always streamed).
    GenerateStream,
    /// OpenAI image generation (`/v1/images/generations`).
    ImageGenerations,
    /// Solido RAG (`/rag/api/prompt`).
    SolidoRag,
    /// NIM image retrieval (`/v1/infer`).
    ImageRetrieval,
    /// OpenAI image edit (`/v1/images/edits`): a multipart/form-data upload.
    ImageEdits,
    /// OpenAI audio transcription (`/v1/audio/transcriptions`): a multipart/form-data upload.
    AudioTranscriptions,
}

impl Endpoint {
    /// Every API, for routing.
    const ALL: [Endpoint; 15] = [
        Endpoint::Chat,
        Endpoint::Completions,
        Endpoint::Responses,
        Endpoint::Messages,
        Endpoint::Embeddings,
        Endpoint::NimRankings,
        Endpoint::CohereRankings,
        Endpoint::TeiRankings,
        Endpoint::Generate,
        Endpoint::GenerateStream,
        Endpoint::ImageGenerations,
        Endpoint::SolidoRag,
        Endpoint::ImageRetrieval,
        Endpoint::ImageEdits,
        Endpoint::AudioTranscriptions,
    ];

    pub(crate) fn path(self) -> &'static str {
        match self {
            Endpoint::Chat => "/v1/chat/completions",
            Endpoint::Completions => "/v1/completions",
            Endpoint::Responses => "/v1/responses",
            Endpoint::Messages => "/v1/messages",
            Endpoint::Embeddings => "/v1/embeddings",
            Endpoint::NimRankings => "/v1/ranking",
            Endpoint::CohereRankings => "/v2/rerank",
            Endpoint::TeiRankings => "/rerank",
            Endpoint::Generate => "/generate",
            Endpoint::GenerateStream => "/generate_stream",
            Endpoint::ImageGenerations => "/v1/images/generations",
            Endpoint::SolidoRag => "/rag/api/prompt",
            Endpoint::ImageRetrieval => "/v1/infer",
            Endpoint::ImageEdits => "/v1/images/edits",
            Endpoint::AudioTranscriptions => "/v1/audio/transcriptions",
        }
    }

    /// The API served at `path` (query string ignored).
    pub(crate) fn at(path: &str) -> Option<Self> {
        let path = path.split('?').next().unwrap_or(path);
        Self::ALL.into_iter().find(|e| e.path() == path)
    }

    /// The client's endpoint type whose input texts this API's bodies carry (the prompt count).
    pub(crate) fn kind(self) -> ringperf_wire::endpoint::EndpointKind {
        use ringperf_wire::endpoint::EndpointKind as K;
        match self {
            Endpoint::Chat => K::Chat,
            Endpoint::Completions => K::Completions,
            Endpoint::Responses => K::Responses,
            Endpoint::Messages => K::Messages,
            Endpoint::Embeddings => K::Embeddings,
            Endpoint::NimRankings => K::NimRankings,
            Endpoint::CohereRankings => K::CohereRankings,
            Endpoint::TeiRankings => K::HfTeiRankings,
            Endpoint::Generate | Endpoint::GenerateStream => K::HuggingfaceGenerate,
            // Multipart bodies hold no JSON texts: the form's prompt is counted when it is read.
            Endpoint::ImageGenerations | Endpoint::ImageEdits | Endpoint::AudioTranscriptions => {
                K::ImageGeneration
            }
            Endpoint::SolidoRag => K::SolidoRag,
            Endpoint::ImageRetrieval => K::ImageRetrieval,
        }
    }

    /// The API generates text (the others answer with vectors, scores or images at once).
    pub(crate) fn generates(self) -> bool {
        !matches!(
            self,
            Endpoint::Embeddings
                | Endpoint::NimRankings
                | Endpoint::CohereRankings
                | Endpoint::TeiRankings
                | Endpoint::ImageGenerations
                | Endpoint::ImageRetrieval
                | Endpoint::ImageEdits
                | Endpoint::AudioTranscriptions
        )
    }

    /// The API's requests are multipart/form-data uploads, not JSON.
    pub(crate) fn multipart(self) -> bool {
        matches!(self, Endpoint::ImageEdits | Endpoint::AudioTranscriptions)
    }

    /// The API has a reasoning channel apart from its text (the others send reasoning as text).
    pub(crate) fn has_reasoning(self) -> bool {
        matches!(
            self,
            Endpoint::Chat | Endpoint::Responses | Endpoint::Messages
        )
    }
}

/// What the mock takes from a completion request body.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct RequestBody {
    /// `"stream": true`.
    pub(crate) stream: bool,
    /// `max_completion_tokens`, else `max_tokens` (the newer name wins when both are set).
    pub(crate) max_tokens: Option<u64>,
    /// `stream_options.include_usage`.
    pub(crate) include_usage: bool,
    /// `stream_options.continuous_usage_stats` with `include_usage`: usage on every chunk, as
    /// vLLM sends it (it needs both).
    pub(crate) continuous_usage: bool,
    /// Approximate prompt tokens (whitespace words of all prompt texts).
    pub(crate) prompt_words: u64,
    /// How many vectors, scores or images an embeddings / rankings / images reply holds: the
    /// `input` strings (1 for a single string or a chat-style body), else the passages /
    /// documents / texts, else the images API's `n`.
    pub(crate) items: u64,
}

#[derive(Deserialize)]
struct Wire {
    stream: Option<bool>,
    max_tokens: Option<u64>,
    max_completion_tokens: Option<u64>,
    /// Responses API.
    max_output_tokens: Option<u64>,
    /// TGI: `parameters.max_new_tokens`.
    parameters: Option<WireParameters>,
    stream_options: Option<WireStreamOptions>,
    messages: Option<TextWords>,
    prompt: Option<TextWords>,
    /// Embeddings / Responses.
    input: Option<Counted>,
    /// TGI.
    inputs: Option<TextWords>,
    /// Anthropic.
    system: Option<TextWords>,
    /// Responses.
    instructions: Option<TextWords>,
    /// Rankings.
    query: Option<TextWords>,
    passages: Option<Counted>,
    documents: Option<Counted>,
    texts: Option<Counted>,
    /// Images API: how many images.
    n: Option<u64>,
}

#[derive(Deserialize)]
struct WireParameters {
    max_new_tokens: Option<u64>,
}

/// The words of a value and, when it is a list, its length (1 for anything else).
struct Counted {
    words: u64,
    len: u64,
}

impl<'de> Deserialize<'de> for Counted {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let len = v.as_array().map_or(1, |a| a.len() as u64);
        let words = TextWords::deserialize(&v).map_or(0, |t| t.0);
        Ok(Counted { words, len })
    }
}

#[derive(Deserialize)]
struct WireStreamOptions {
    include_usage: Option<bool>,
    continuous_usage_stats: Option<bool>,
}

/// Why a request body could not be used; its message is the 400 response's.
#[derive(Debug)]
pub(crate) enum Error {
    /// Not JSON, or JSON of the wrong shape (not an object, a field of the wrong type).
    InvalidJson(serde_json::Error),
    /// A multipart/form-data API's body without a boundary in its `Content-Type`.
    NotMultipart,
    /// A multipart/form-data body that does not parse.
    Multipart(ringperf_wire::http::form_parse::FormError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidJson(e) => write!(f, "invalid JSON body: {e}"),
            Error::NotMultipart => {
                f.write_str("expected Content-Type: multipart/form-data; boundary=...")
            }
            Error::Multipart(e) => write!(f, "invalid multipart body: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::InvalidJson(e) => Some(e),
            Error::Multipart(e) => Some(e),
            Error::NotMultipart => None,
        }
    }
}

/// Parses a request body.
pub(crate) fn parse_request_body(body: &[u8]) -> Result<RequestBody, Error> {
    let wire: Wire = serde_json::from_slice(body).map_err(Error::InvalidJson)?;
    let include_usage = wire
        .stream_options
        .as_ref()
        .and_then(|o| o.include_usage)
        .unwrap_or(false);
    Ok(RequestBody {
        stream: wire.stream.unwrap_or(false),
        include_usage,
        continuous_usage: include_usage
            && wire
                .stream_options
                .as_ref()
                .and_then(|o| o.continuous_usage_stats)
                .unwrap_or(false),
        max_tokens: wire
            .max_completion_tokens
            .or(wire.max_tokens)
            .or(wire.max_output_tokens)
            .or(wire.parameters.and_then(|p| p.max_new_tokens)),
        prompt_words: [
            wire.messages.map(|t| t.0),
            wire.prompt.map(|t| t.0),
            wire.input.as_ref().map(|c| c.words),
            wire.inputs.map(|t| t.0),
            wire.system.map(|t| t.0),
            wire.instructions.map(|t| t.0),
            wire.query.map(|t| t.0),
            wire.passages.as_ref().map(|c| c.words),
            wire.documents.as_ref().map(|c| c.words),
            wire.texts.as_ref().map(|c| c.words),
        ]
        .into_iter()
        .flatten()
        .fold(0u64, u64::saturating_add),
        items: [&wire.input, &wire.passages, &wire.documents, &wire.texts]
            .into_iter()
            .flatten()
            .map(|c| c.len)
            .next()
            .or(wire.n)
            .unwrap_or(1),
    })
}

/// Parses a multipart/form-data request (image edit, audio transcription): `stream` and `n` as
/// the JSON APIs read them, the `prompt` field's words; the parts are returned for the truth log.
pub(crate) fn parse_form_body(
    body: &[u8],
    content_type: Option<&str>,
) -> Result<
    (
        RequestBody,
        Vec<ringperf_wire::http::form_parse::ParsedPart>,
    ),
    Error,
> {
    use ringperf_wire::http::form_parse::{FormParser, boundary_of};
    let boundary = content_type
        .and_then(boundary_of)
        .ok_or(Error::NotMultipart)?;
    let mut parser = FormParser::new(boundary, body.len()).map_err(Error::Multipart)?;
    parser.feed(body).map_err(Error::Multipart)?;
    let parts = parser.finish().map_err(Error::Multipart)?;
    let text = |name: &str| {
        parts
            .iter()
            .find(|p| p.name == name && p.filename.is_none())
            .map(|p| String::from_utf8_lossy(&p.data).into_owned())
    };
    let request = RequestBody {
        stream: text("stream").is_some_and(|v| v.trim() == "true"),
        max_tokens: None,
        include_usage: false,
        continuous_usage: false,
        prompt_words: text("prompt").map_or(0, |p| count_words(&p)),
        items: text("n").and_then(|n| n.trim().parse().ok()).unwrap_or(1),
    };
    Ok((request, parts))
}

/// Whitespace words of every text in a JSON value: strings count themselves, arrays sum their
/// items, objects sum their `content` and `text` members; numbers, booleans and null count zero.
struct TextWords(u64);

fn count_words(s: &str) -> u64 {
    s.split_ascii_whitespace().count() as u64
}

impl<'de> Deserialize<'de> for TextWords {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextWordsVisitor)
    }
}

struct TextWordsVisitor;

impl<'de> Visitor<'de> for TextWordsVisitor {
    type Value = TextWords;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<TextWords, E> {
        Ok(TextWords(count_words(v)))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<TextWords, E> {
        Ok(TextWords(0))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<TextWords, E> {
        Ok(TextWords(0))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<TextWords, E> {
        Ok(TextWords(0))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<TextWords, E> {
        Ok(TextWords(0))
    }

    fn visit_unit<E: de::Error>(self) -> Result<TextWords, E> {
        Ok(TextWords(0))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TextWords, A::Error> {
        let mut n = 0u64;
        while let Some(TextWords(k)) = seq.next_element()? {
            n = n.saturating_add(k);
        }
        Ok(TextWords(n))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TextWords, A::Error> {
        let mut n = 0u64;
        while let Some(key) = map.next_key::<KeyKind>()? {
            match key {
                KeyKind::Text => n = n.saturating_add(map.next_value::<TextWords>()?.0),
                KeyKind::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(TextWords(n))
    }
}

/// A map key sorted into "carries prompt text" or not, without allocating it.
enum KeyKind {
    Text,
    Other,
}

impl<'de> Deserialize<'de> for KeyKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = KeyKind;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<KeyKind, E> {
                Ok(if v == "content" || v == "text" {
                    KeyKind::Text
                } else {
                    KeyKind::Other
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_body_fields_and_word_count() {
        let b = br#"{"model":"m","messages":[{"role":"system","content":"be brief"},
            {"role":"user","content":[{"type":"text","text":"hello big world"},
            {"type":"image_url","image_url":{"url":"data:x"}}]}],
            "stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":12,
            "max_tokens":99}"#;
        let r = parse_request_body(b).unwrap();
        assert_eq!(
            r,
            RequestBody {
                stream: true,
                max_tokens: Some(12),
                include_usage: true,
                continuous_usage: false,
                prompt_words: 5,
                items: 1,
            }
        );
    }

    #[test]
    fn continuous_usage_needs_include_usage_as_in_vllm() {
        let parse = |opts: &str| {
            let b = format!(r#"{{"messages":[],"stream":true,"stream_options":{opts}}}"#);
            parse_request_body(b.as_bytes()).unwrap().continuous_usage
        };
        assert!(parse(
            r#"{"include_usage":true,"continuous_usage_stats":true}"#
        ));
        assert!(!parse(r#"{"continuous_usage_stats":true}"#));
        assert!(!parse(
            r#"{"include_usage":true,"continuous_usage_stats":false}"#
        ));
        assert!(!parse(r#"{"include_usage":true}"#));
    }

    #[test]
    fn completions_prompt_string_or_list_and_defaults() {
        let r = parse_request_body(br#"{"prompt":"a b  c\nd","max_tokens":3}"#).unwrap();
        assert_eq!(
            r,
            RequestBody {
                stream: false,
                max_tokens: Some(3),
                include_usage: false,
                continuous_usage: false,
                prompt_words: 4,
                items: 1,
            }
        );
        let r = parse_request_body(br#"{"prompt":["x y","z"],"max_tokens":null}"#).unwrap();
        assert_eq!(r.prompt_words, 3);
        assert_eq!(r.max_tokens, None);
        let r = parse_request_body(br#"{}"#).unwrap();
        assert_eq!(
            r,
            RequestBody {
                items: 1,
                ..RequestBody::default()
            }
        );
    }

    proptest::proptest! {
        /// Any bytes: an answer or an error, never a panic.
        #[test]
        fn qc_parse_body_never_panics(raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = parse_request_body(&raw);
        }

        /// The word count matches the obvious count over the prompt strings.
        #[test]
        fn qc_prompt_words_match_naive(words in proptest::collection::vec("[a-z]{1,6}", 0..40), sep in "[ \t\n]{1,3}") {
            let text = words.join(&sep);
            let body = serde_json::json!({"prompt": [text.clone(), text]}).to_string();
            let r = parse_request_body(body.as_bytes()).unwrap();
            proptest::prop_assert_eq!(r.prompt_words, 2 * words.len() as u64);
        }
    }

    #[test]
    fn escaped_strings_are_counted_and_bad_json_is_an_error() {
        let r = parse_request_body(br#"{"prompt":"one\u0020two\tthree \"q\""}"#).unwrap();
        assert_eq!(r.prompt_words, 4);
        let e = parse_request_body(b"{\"stream\":").unwrap_err();
        assert!(matches!(e, Error::InvalidJson(_)), "{e:?}");
        assert!(e.to_string().starts_with("invalid JSON body: "), "{e}");
        assert!(std::error::Error::source(&e).is_some());
        assert!(parse_request_body(b"[1,2]").is_err());
        assert!(parse_request_body(br#"{"stream":"yes"}"#).is_err());
        assert!(parse_request_body(b"\xff\xfe").is_err());
    }
}
