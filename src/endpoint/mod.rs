//! Per-API request bodies and response extraction for the OpenAI-compatible endpoints
//! (spec §2.1, §2.4–§2.6).
//!
//! - [`payload`] builds the JSON body a dataset entry sends, and recovers the input text from a
//!   wire payload for client-side ISL counting.
//! - [`response`] turns a worker's [`crate::record::RawRecord`] (body + SSE message spans) into
//!   content stamps, output/reasoning text, usage and errors. It runs on the aggregator thread,
//!   never on a worker.

pub mod payload;
pub mod response;
mod wire;

pub use payload::{
    PayloadParams, TurnBody, build_payload, build_turn, payload_texts, turn_message,
};
pub use response::{ParsedResponse, is_content_message, parse_record};

use std::fmt;
use std::str::FromStr;

/// The endpoint types ringperf speaks (`--endpoint-type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum EndpointKind {
    /// OpenAI Chat Completions (`chat`).
    #[default]
    Chat,
    /// OpenAI (legacy) Completions (`completions`).
    Completions,
}

impl EndpointKind {
    /// The URL path used when `--endpoint` is not given.
    pub fn default_path(self) -> &'static str {
        match self {
            EndpointKind::Chat => "/v1/chat/completions",
            EndpointKind::Completions => "/v1/completions",
        }
    }

    /// The title of the console metrics table.
    pub fn metrics_title(self) -> &'static str {
        "LLM Metrics"
    }

    /// The `--endpoint-type` spelling AIPerf writes in its outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            EndpointKind::Chat => "chat",
            EndpointKind::Completions => "completions",
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
        write!(
            f,
            "unsupported endpoint type {:?} (supported: chat, completions)",
            self.0
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
            _ => Err(UnknownEndpointKind(s.to_owned())),
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
        let err = "embeddings".parse::<EndpointKind>().unwrap_err();
        assert!(err.to_string().contains("\"embeddings\""));
    }
}
