//! The reply shapes of the APIs besides chat and completions (those are `wire`'s): the OpenAI
//! Responses API, Anthropic Messages, TGI generate, embeddings and the three rankings APIs.
//! Streamed replies are split as `respond` paces them: events due with the head
//! ([`stream_opening`]), one event per token run ([`token_events`]), and the events due with the
//! last token ([`stream_closing`]); a whole reply is [`whole_body`].
//!
//! Shapes follow each API's documentation as AIPerf 0.13 parses it: Responses
//! `response.output_text.delta` / `response.reasoning_text.delta` / `response.output_text.done` /
//! `response.completed` (usage), Anthropic `message_start` (input usage) /
//! `content_block_delta` (`text_delta`, `thinking_delta`) / `message_delta` (output usage) /
//! `message_stop`, TGI `token.text` events and `generated_text`, embeddings
//! `data[*].object == "embedding"`, NIM `rankings`, Cohere `results`, TEI a top-level list.

use std::io::Write as _;

use super::body::Endpoint;
use super::wire::{Meta, TokenEvents, Usage, Words};

/// The image every images-API answer carries, base64: a 1×1 PNG (one grey pixel).
pub(crate) const IMAGE_B64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNoAAAAggCBd81ytgAAAABJRU5ErkJggg==";

/// Length of every embedding vector the mock returns.
const EMBEDDING_DIM: usize = 4;

/// Events due with the head (none for TGI).
pub(crate) fn stream_opening(endpoint: Endpoint, ev: &mut Vec<u8>, m: &Meta<'_>, u: Usage) {
    match endpoint {
        Endpoint::Responses => {
            let _ = write!(
                ev,
                "event: response.created\ndata: {{\"type\":\"response.created\",\"response\":\
                 {{\"id\":\"resp_{:016x}\",\"object\":\"response\",\"created_at\":{},\
                 \"status\":\"in_progress\",\"model\":{},\"output\":[]}}}}\n\n",
                m.id, m.created, m.model_json
            );
        }
        Endpoint::Messages => {
            let _ = write!(
                ev,
                "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":\
                 {{\"id\":\"msg_{:016x}\",\"type\":\"message\",\"role\":\"assistant\",\
                 \"model\":{},\"content\":[],\"stop_reason\":null,\"usage\":\
                 {{\"input_tokens\":{},\"output_tokens\":1}}}}}}\n\n\
                 event: content_block_start\ndata: {{\"type\":\"content_block_start\",\
                 \"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n",
                m.id, m.model_json, u.prompt
            );
        }
        _ => {}
    }
}

/// The Responses `output_index` of the reply text (after a reasoning item when there is one).
fn text_index(u: Usage) -> u32 {
    u32::from(u.reasoning > 0)
}

const RESPONSES_SUFFIX: &[u8] = b"\"}\n\n";
const MESSAGES_SUFFIX: &[u8] = b"\"}}\n\n";
const TGI_SUFFIX: &[u8] =
    b"\",\"logprob\":0.0,\"special\":false},\"generated_text\":null,\"details\":null}\n\n";

/// The encoder of one token event: reasoning or text.
pub(crate) fn token_events(
    endpoint: Endpoint,
    m: &Meta<'_>,
    u: Usage,
    reasoning: bool,
) -> TokenEvents {
    let mut prefix = Vec::with_capacity(160);
    let suffix = match (endpoint, reasoning) {
        (Endpoint::Responses, true) => {
            let _ = write!(
                prefix,
                "event: response.reasoning_text.delta\ndata: {{\"type\":\
                 \"response.reasoning_text.delta\",\"item_id\":\"rs_{:016x}\",\"output_index\":0,\
                 \"content_index\":0,\"delta\":\"",
                m.id
            );
            RESPONSES_SUFFIX
        }
        (Endpoint::Responses, false) => {
            let _ = write!(
                prefix,
                "event: response.output_text.delta\ndata: {{\"type\":\
                 \"response.output_text.delta\",\"item_id\":\"msg_{:016x}\",\"output_index\":{},\
                 \"content_index\":0,\"delta\":\"",
                m.id,
                text_index(u)
            );
            RESPONSES_SUFFIX
        }
        (Endpoint::Messages, true) => {
            prefix.extend_from_slice(
                b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\
                  \"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"",
            );
            MESSAGES_SUFFIX
        }
        (Endpoint::Messages, false) => {
            prefix.extend_from_slice(
                b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\
                  \"delta\":{\"type\":\"text_delta\",\"text\":\"",
            );
            MESSAGES_SUFFIX
        }
        (Endpoint::SolidoRag, _) => {
            prefix.extend_from_slice(b"data: {\"content\":\"");
            b"\"}\n\n"
        }
        _ => {
            prefix.extend_from_slice(b"data: {\"index\":0,\"token\":{\"id\":0,\"text\":\"");
            TGI_SUFFIX
        }
    };
    TokenEvents::new(prefix, suffix)
}

/// Events due with the last token: Responses' `output_text.done` and `completed` (with usage),
/// Anthropic's `content_block_stop`, `message_delta` (with usage) and `message_stop`; the images
/// API's one `image_generation.completed` per image (`items` of them).
#[allow(clippy::too_many_arguments)]
pub(crate) fn stream_closing(
    endpoint: Endpoint,
    ev: &mut Vec<u8>,
    m: &Meta<'_>,
    capped: bool,
    u: Usage,
    reasoning: Words,
    content: Words,
    items: u64,
) {
    match endpoint {
        Endpoint::Responses => {
            let _ = write!(
                ev,
                "event: response.output_text.done\ndata: {{\"type\":\"response.output_text.done\",\
                 \"item_id\":\"msg_{:016x}\",\"output_index\":{},\"content_index\":0,\"text\":\"",
                m.id,
                text_index(u)
            );
            content.write(ev);
            ev.extend_from_slice(b"\"}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":");
            responses_object(ev, m, capped, u, reasoning, content);
            ev.extend_from_slice(b"}\n\n");
        }
        Endpoint::Messages => {
            let _ = write!(
                ev,
                "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n\
                 event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":\
                 {{\"stop_reason\":\"{}\",\"stop_sequence\":null}},\"usage\":\
                 {{\"output_tokens\":{}}}}}\n\n\
                 event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n",
                anthropic_stop(capped),
                u.reasoning + u.content
            );
        }
        Endpoint::ImageGenerations => {
            for _ in 0..items {
                let _ = write!(
                    ev,
                    "event: image_generation.completed\ndata: {{\"type\":\
                     \"image_generation.completed\",\"b64_json\":\"{IMAGE_B64}\",\
                     \"created_at\":{},\"size\":\"1x1\",\"output_format\":\"png\"}}\n\n",
                    m.created
                );
            }
        }
        _ => {}
    }
}

fn anthropic_stop(capped: bool) -> &'static str {
    if capped { "max_tokens" } else { "end_turn" }
}

/// A whole Responses object (also the `response` of `response.completed`).
fn responses_object(
    ev: &mut Vec<u8>,
    m: &Meta<'_>,
    capped: bool,
    u: Usage,
    reasoning: Words,
    content: Words,
) {
    let status = if capped { "incomplete" } else { "completed" };
    let _ = write!(
        ev,
        "{{\"id\":\"resp_{:016x}\",\"object\":\"response\",\"created_at\":{},\"status\":\"{status}\",\
         \"model\":{},\"output\":[",
        m.id, m.created, m.model_json
    );
    if reasoning.count > 0 {
        let _ = write!(
            ev,
            "{{\"type\":\"reasoning\",\"id\":\"rs_{:016x}\",\"summary\":[{{\"type\":\"summary_text\",\"text\":\"",
            m.id
        );
        reasoning.write(ev);
        ev.extend_from_slice(b"\"}]},");
    }
    let _ = write!(
        ev,
        "{{\"type\":\"message\",\"id\":\"msg_{:016x}\",\"status\":\"completed\",\"role\":\"assistant\",\
         \"content\":[{{\"type\":\"output_text\",\"text\":\"",
        m.id
    );
    content.write(ev);
    let output = u.reasoning + u.content;
    let _ = write!(
        ev,
        "\",\"annotations\":[]}}]}}],\"usage\":{{\"input_tokens\":{},\"output_tokens\":{output},\
         \"total_tokens\":{},\"output_tokens_details\":{{\"reasoning_tokens\":{}}}}}}}",
        u.prompt,
        u.prompt + output,
        u.reasoning
    );
}

/// A whole (non-streamed) reply. `items` is how many vectors or scores to return.
pub(crate) fn whole_body(
    endpoint: Endpoint,
    ev: &mut Vec<u8>,
    m: &Meta<'_>,
    capped: bool,
    u: Usage,
    (reasoning, content): (Words, Words),
    items: u64,
) {
    match endpoint {
        Endpoint::Responses => responses_object(ev, m, capped, u, reasoning, content),
        Endpoint::Messages => {
            let _ = write!(
                ev,
                "{{\"id\":\"msg_{:016x}\",\"type\":\"message\",\"role\":\"assistant\",\"model\":{},\
                 \"content\":[",
                m.id, m.model_json
            );
            if reasoning.count > 0 {
                ev.extend_from_slice(b"{\"type\":\"thinking\",\"thinking\":\"");
                reasoning.write(ev);
                ev.extend_from_slice(b"\",\"signature\":\"mock\"},");
            }
            ev.extend_from_slice(b"{\"type\":\"text\",\"text\":\"");
            content.write(ev);
            let _ = write!(
                ev,
                "\"}}],\"stop_reason\":\"{}\",\"stop_sequence\":null,\"usage\":{{\"input_tokens\":{},\
                 \"output_tokens\":{}}}}}",
                anthropic_stop(capped),
                u.prompt,
                u.reasoning + u.content
            );
        }
        Endpoint::Generate | Endpoint::GenerateStream => {
            ev.extend_from_slice(b"{\"generated_text\":\"");
            reasoning.write(ev);
            content.write(ev);
            ev.extend_from_slice(b"\"}");
        }
        Endpoint::SolidoRag => {
            ev.extend_from_slice(b"{\"content\":\"");
            reasoning.write(ev);
            content.write(ev);
            ev.extend_from_slice(b"\",\"sources\":[{\"id\":\"mock\",\"score\":1.0}]}");
        }
        Endpoint::ImageRetrieval => {
            ev.extend_from_slice(b"{\"data\":[");
            for i in 0..items {
                if i > 0 {
                    ev.push(b',');
                }
                let _ = write!(
                    ev,
                    "{{\"index\":{i},\"bounding_boxes\":{{\"object\":[{{\"x_min\":0,\"y_min\":0,\
                     \"x_max\":1,\"y_max\":1,\"confidence\":{}}}]}}}}",
                    score(m.id, i, 0)
                );
            }
            ev.extend_from_slice(b"]}");
        }
        Endpoint::AudioTranscriptions => {
            ev.extend_from_slice(b"{\"text\":\"mock transcript\"}");
        }
        Endpoint::ImageGenerations | Endpoint::ImageEdits => {
            let _ = write!(ev, "{{\"created\":{},\"data\":[", m.created);
            for i in 0..items {
                if i > 0 {
                    ev.push(b',');
                }
                let _ = write!(ev, "{{\"b64_json\":\"{IMAGE_B64}\"}}");
            }
            ev.extend_from_slice(b"],\"size\":\"1x1\",\"output_format\":\"png\"}");
        }
        Endpoint::Embeddings => {
            ev.extend_from_slice(b"{\"object\":\"list\",\"data\":[");
            for i in 0..items {
                if i > 0 {
                    ev.push(b',');
                }
                let _ = write!(
                    ev,
                    "{{\"object\":\"embedding\",\"index\":{i},\"embedding\":["
                );
                for d in 0..EMBEDDING_DIM {
                    if d > 0 {
                        ev.push(b',');
                    }
                    let _ = write!(ev, "{}", score(m.id, i, d as u64));
                }
                ev.extend_from_slice(b"]}");
            }
            let _ = write!(
                ev,
                "],\"model\":{},\"usage\":{{\"prompt_tokens\":{},\"total_tokens\":{}}}}}",
                m.model_json, u.prompt, u.prompt
            );
        }
        Endpoint::NimRankings => {
            ev.extend_from_slice(b"{\"rankings\":[");
            scores(ev, m.id, items, "logit");
            ev.extend_from_slice(b"]}");
        }
        Endpoint::CohereRankings => {
            let _ = write!(ev, "{{\"id\":\"{:016x}\",\"results\":[", m.id);
            scores(ev, m.id, items, "relevance_score");
            ev.extend_from_slice(b"],\"meta\":{}}");
        }
        Endpoint::TeiRankings => {
            ev.push(b'[');
            scores(ev, m.id, items, "score");
            ev.push(b']');
        }
        Endpoint::Chat | Endpoint::Completions => {}
    }
}

/// A score in [0, 1) that is a function of the response id, the item and the dimension.
fn score(id: u64, item: u64, d: u64) -> f64 {
    let x = id ^ item.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ d.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// `{"index":i,"<field>":score}` for every item.
fn scores(ev: &mut Vec<u8>, id: u64, items: u64, field: &str) {
    for i in 0..items {
        if i > 0 {
            ev.push(b',');
        }
        let _ = write!(ev, "{{\"index\":{i},\"{field}\":{}}}", score(id, i, 0));
    }
}
