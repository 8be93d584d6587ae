//! Per-API request bodies and response extraction for the OpenAI-compatible endpoints
//! (docs/endpoints.md).
//!
//! - [`payload`] builds the JSON body a dataset entry sends, and recovers the input text from a
//!   wire payload for client-side ISL counting.
//! - [`response`] turns a worker's [`crate::record::RawRecord`] (body + SSE message spans) into
//!   content stamps, output/reasoning text, usage and errors. It runs on the aggregator thread,
//!   never on a worker.

pub mod form;
pub mod kinds;
pub mod media_parts;
pub mod payload;
pub mod response;
mod wire;

pub use kinds::messages::ANTHROPIC_VERSION;
pub use kinds::template::{FieldPath, NAMED_TEMPLATES, PayloadTemplate};
pub use kinds::{Auth, Descriptor};
pub use media_parts::MediaCaps;
pub use payload::{
    PayloadInputs, PayloadParams, TurnBody, build_payload, build_turn, payload_input,
    payload_inputs, payload_texts, turn_message,
};
pub use response::{ParsedResponse, is_content_message, parse_record};

/// The id of the stored Responses answer in `rec`, for the next turn's `previous_response_id`
/// (`--extra-inputs store:true`); `None` when the answer failed or carried none.
pub fn stored_response_id(rec: &crate::record::RawRecord) -> Option<String> {
    kinds::responses::response_id(rec)
}

use std::fmt;
use std::str::FromStr;

/// The endpoint types ringperf speaks (`--endpoint-type`). What each one does lives in its own
/// file under [`kinds`], reached through [`EndpointKind::descriptor`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum EndpointKind {
    /// OpenAI Chat Completions (`chat`).
    #[default]
    Chat,
    /// OpenAI (legacy) Completions (`completions`).
    Completions,
    /// OpenAI Responses API (`responses`).
    Responses,
    /// Anthropic Messages (`messages`).
    Messages,
    /// OpenAI Embeddings (`embeddings`).
    Embeddings,
    /// Chat-shaped request, embeddings response (`chat_embeddings`).
    ChatEmbeddings,
    /// NVIDIA NIM Embeddings (`nim_embeddings`).
    NimEmbeddings,
    /// NVIDIA NIM Rankings (`nim_rankings`).
    NimRankings,
    /// Cohere Rerank (`cohere_rankings`).
    CohereRankings,
    /// Hugging Face TEI rerank (`hf_tei_rankings`).
    HfTeiRankings,
    /// Hugging Face TGI generate (`huggingface_generate`).
    HuggingfaceGenerate,
    /// OpenAI image generation (`image_generation`).
    ImageGeneration,
    /// OpenAI image edit, a multipart/form-data upload (`image_edit`).
    ImageEdit,
    /// OpenAI audio transcription, a multipart/form-data upload (`audio_transcription`).
    AudioTranscription,
    /// Solido RAG (`solido_rag`).
    SolidoRag,
    /// NVIDIA NIM image retrieval (`image_retrieval`).
    ImageRetrieval,
    /// OpenAI / SGLang video generation, a polled job (`video_generation`).
    VideoGeneration,
    /// Verbatim dataset payloads to the URL as given (`raw`).
    Raw,
    /// A user's Jinja payload template to the URL as given (`template`).
    Template,
}

impl EndpointKind {
    /// Every supported type, in AIPerf's registry order.
    pub const ALL: [EndpointKind; 19] = [
        EndpointKind::Chat,
        EndpointKind::CohereRankings,
        EndpointKind::Completions,
        EndpointKind::Responses,
        EndpointKind::Messages,
        EndpointKind::ChatEmbeddings,
        EndpointKind::Embeddings,
        EndpointKind::HfTeiRankings,
        EndpointKind::HuggingfaceGenerate,
        EndpointKind::ImageGeneration,
        EndpointKind::ImageEdit,
        EndpointKind::ImageRetrieval,
        EndpointKind::NimEmbeddings,
        EndpointKind::NimRankings,
        EndpointKind::SolidoRag,
        EndpointKind::VideoGeneration,
        EndpointKind::AudioTranscription,
        EndpointKind::Raw,
        EndpointKind::Template,
    ];

    /// What this type sends, how it parses, and which metrics apply.
    pub fn descriptor(self) -> &'static Descriptor {
        match self {
            EndpointKind::Chat => &kinds::chat::DESCRIPTOR,
            EndpointKind::Completions => &kinds::completions::DESCRIPTOR,
            EndpointKind::Responses => &kinds::responses::DESCRIPTOR,
            EndpointKind::Messages => &kinds::messages::DESCRIPTOR,
            EndpointKind::Embeddings => &kinds::embeddings::DESCRIPTOR,
            EndpointKind::ChatEmbeddings => &kinds::chat_embeddings::DESCRIPTOR,
            EndpointKind::NimEmbeddings => &kinds::nim_embeddings::DESCRIPTOR,
            EndpointKind::NimRankings => &kinds::nim_rankings::DESCRIPTOR,
            EndpointKind::CohereRankings => &kinds::cohere_rankings::DESCRIPTOR,
            EndpointKind::HfTeiRankings => &kinds::hf_tei_rankings::DESCRIPTOR,
            EndpointKind::HuggingfaceGenerate => &kinds::huggingface_generate::DESCRIPTOR,
            EndpointKind::ImageGeneration => &kinds::image_generation::DESCRIPTOR,
            EndpointKind::ImageEdit => &kinds::image_edit::DESCRIPTOR,
            EndpointKind::AudioTranscription => &kinds::audio_transcription::DESCRIPTOR,
            EndpointKind::SolidoRag => &kinds::solido_rag::DESCRIPTOR,
            EndpointKind::ImageRetrieval => &kinds::image_retrieval::DESCRIPTOR,
            EndpointKind::VideoGeneration => &kinds::video_generation::DESCRIPTOR,
            EndpointKind::Raw => &kinds::raw::DESCRIPTOR,
            EndpointKind::Template => &kinds::template::DESCRIPTOR,
        }
    }

    /// The URL path used when `--endpoint` is not given (the streaming path when there is one
    /// and `streaming`).
    pub fn path(self, streaming: bool) -> &'static str {
        let d = self.descriptor();
        match d.streaming_path {
            Some(p) if streaming => p,
            _ => d.default_path,
        }
    }

    /// The URL path used when `--endpoint` is not given and the run does not stream.
    pub fn default_path(self) -> &'static str {
        self.descriptor().default_path
    }

    /// The title of the console metrics table.
    pub fn metrics_title(self) -> &'static str {
        self.descriptor().metrics_title
    }

    /// Whether a dataset of query + passages (the Rankings flags) is what this type sends.
    pub fn is_rankings(self) -> bool {
        matches!(
            self,
            EndpointKind::NimRankings | EndpointKind::CohereRankings | EndpointKind::HfTeiRankings
        )
    }

    /// The body is AIPerf's form payload, sent as multipart/form-data by default
    /// (`requires_form_data` in AIPerf's registry; `--request-content-type`).
    pub fn requires_form_data(self) -> bool {
        kinds::form_checker(self).is_some() || self == EndpointKind::VideoGeneration
    }

    /// The `--endpoint-type` spelling AIPerf writes in its outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            EndpointKind::Chat => "chat",
            EndpointKind::Completions => "completions",
            EndpointKind::Responses => "responses",
            EndpointKind::Messages => "messages",
            EndpointKind::Embeddings => "embeddings",
            EndpointKind::ChatEmbeddings => "chat_embeddings",
            EndpointKind::NimEmbeddings => "nim_embeddings",
            EndpointKind::NimRankings => "nim_rankings",
            EndpointKind::CohereRankings => "cohere_rankings",
            EndpointKind::HfTeiRankings => "hf_tei_rankings",
            EndpointKind::HuggingfaceGenerate => "huggingface_generate",
            EndpointKind::ImageGeneration => "image_generation",
            EndpointKind::ImageEdit => "image_edit",
            EndpointKind::AudioTranscription => "audio_transcription",
            EndpointKind::SolidoRag => "solido_rag",
            EndpointKind::ImageRetrieval => "image_retrieval",
            EndpointKind::VideoGeneration => "video_generation",
            EndpointKind::Raw => "raw",
            EndpointKind::Template => "template",
        }
    }
}

impl fmt::Display for EndpointKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An `--endpoint-type` value that is not one ringperf supports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownEndpointKind(pub String);

impl fmt::Display for UnknownEndpointKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = EndpointKind::ALL.iter().map(|k| k.as_str()).collect();
        write!(
            f,
            "unsupported endpoint type {:?} (supported: {})",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownEndpointKind {}

impl FromStr for EndpointKind {
    type Err = UnknownEndpointKind;

    /// Accepts AIPerf's spellings: case-insensitive, `-` and `_` interchangeable, and the
    /// enum-style names (`chat_completions`, `openai_chat`, `text_completions`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm: String = s
            .trim()
            .chars()
            .map(|c| {
                if c == '-' {
                    '_'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect();
        match norm.as_str() {
            "chat" | "chat_completions" | "openai_chat" | "openai_chat_completions" => {
                Ok(EndpointKind::Chat)
            }
            "completions" | "completion" | "text_completions" | "openai_completions" => {
                Ok(EndpointKind::Completions)
            }
            other => EndpointKind::ALL
                .into_iter()
                .find(|k| k.as_str() == other)
                .ok_or_else(|| UnknownEndpointKind(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_paths_titles_and_names() {
        assert_eq!(EndpointKind::Chat.default_path(), "/v1/chat/completions");
        assert_eq!(EndpointKind::Completions.default_path(), "/v1/completions");
        assert_eq!(EndpointKind::Chat.metrics_title(), "LLM Metrics");
        assert_eq!(EndpointKind::Completions.metrics_title(), "LLM Metrics");
        assert_eq!(EndpointKind::Chat.to_string(), "chat");
        assert_eq!(EndpointKind::Completions.as_str(), "completions");
    }

    #[test]
    fn kind_from_str_accepts_aiperf_spellings() {
        for s in [
            "chat",
            "CHAT",
            " chat ",
            "chat-completions",
            "chat_completions",
        ] {
            assert_eq!(s.parse::<EndpointKind>(), Ok(EndpointKind::Chat), "{s}");
        }
        for s in ["completions", "Completions", "text-completions"] {
            assert_eq!(
                s.parse::<EndpointKind>(),
                Ok(EndpointKind::Completions),
                "{s}"
            );
        }
        for s in [
            "NIM-Rankings",
            "nim_rankings",
            "HuggingFace-Generate",
            "messages",
        ] {
            assert!(s.parse::<EndpointKind>().is_ok(), "{s}");
        }
        let err = "image-edits".parse::<EndpointKind>().unwrap_err();
        assert!(err.to_string().contains("\"image-edits\""));
        assert_eq!("Image-Edit".parse(), Ok(EndpointKind::ImageEdit));
        assert_eq!(
            "audio-transcription".parse(),
            Ok(EndpointKind::AudioTranscription)
        );
    }
}
