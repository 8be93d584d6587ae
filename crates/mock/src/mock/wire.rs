//! Response bytes, written by hand into reused buffers: HTTP heads, chunked framing, and the
//! vLLM-shaped JSON of chat and completion responses (streamed chunks and whole bodies), and
//! [`send`], which writes such a buffer to a stream.
//!
//! Mock words never need JSON escaping (they are plain ASCII letters and spaces); the model name
//! is escaped once at start-up.

use std::io::{self, Write as _};

use monoio::io::{AsyncWriteRent, AsyncWriteRentExt};

use super::tokens::word;

/// Per-response constants shared by every event of one response.
pub(crate) struct Meta<'a> {
    /// Random part of the response id (`chatcmpl-…` / `cmpl-…`).
    pub(crate) id: u64,
    /// Unix seconds of the request.
    pub(crate) created: u64,
    /// The model name as a JSON string literal, quotes included.
    pub(crate) model_json: &'a str,
}

/// A run of mock words: tokens `from..from + count` of the stream starting at word `start`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Words {
    pub(crate) start: u64,
    pub(crate) from: u64,
    pub(crate) count: u64,
}

impl Words {
    /// Byte length of the text.
    pub(crate) fn len(self) -> usize {
        (self.from..self.from + self.count)
            .map(|i| word(self.start, i).len())
            .sum()
    }

    pub(crate) fn write(self, out: &mut Vec<u8>) {
        for i in self.from..self.from + self.count {
            out.extend_from_slice(word(self.start, i).as_bytes());
        }
    }

    /// Appends the text to `out` (what the truth log keeps as a reply's text).
    pub(crate) fn push_to(self, out: &mut String) {
        for i in self.from..self.from + self.count {
            out.push_str(word(self.start, i));
        }
    }

    /// The text as a string (tests compare what went out with it).
    #[cfg(test)]
    pub(crate) fn text(self) -> String {
        let mut s = String::new();
        self.push_to(&mut s);
        s
    }
}

/// Reason phrase of a status code: `http`'s canonical phrase (the one uvicorn and vLLM send for
/// every code the mock uses), `Error` for a code without one.
fn reason(code: u16) -> &'static str {
    http::StatusCode::from_u16(code)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error")
}

/// A response head with a `content-length`.
pub(crate) fn head(out: &mut Vec<u8>, code: u16, content_type: &str, len: usize, close: bool) {
    let _ = write!(
        out,
        "HTTP/1.1 {code} {}\r\nserver: ringperf-mock\r\ncontent-type: {content_type}\r\n\
         content-length: {len}\r\n",
        reason(code)
    );
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// The head of a streamed (SSE, chunked) response.
pub(crate) fn stream_head(out: &mut Vec<u8>, close: bool) {
    out.extend_from_slice(
        b"HTTP/1.1 200 OK\r\nserver: ringperf-mock\r\n\
          content-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n",
    );
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends `payload` as one HTTP chunk.
pub(crate) fn chunk(out: &mut Vec<u8>, payload: &[u8]) {
    let _ = write!(out, "{:x}\r\n", payload.len());
    out.extend_from_slice(payload);
    out.extend_from_slice(b"\r\n");
}

/// The terminating zero-length chunk.
pub(crate) fn last_chunk(out: &mut Vec<u8>) {
    out.extend_from_slice(b"0\r\n\r\n");
}

/// An OpenAI-shaped error body (`{"error":{"message","type","code"}}`).
pub(crate) fn error_body(code: u16, message: &str) -> Vec<u8> {
    let kind = match code {
        404 => "NotFoundError",
        405 => "MethodNotAllowed",
        429 => "RateLimitError",
        503 => "ServiceUnavailableError",
        500..=599 => "InternalServerError",
        _ => "BadRequestError",
    };
    let v = serde_json::json!({"error": {"message": message, "type": kind, "param": null, "code": code}});
    serde_json::to_vec(&v).unwrap_or_default()
}

/// What a chat stream event carries.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ChatDelta<'a> {
    /// The opening `{"role":"assistant","content":""}`.
    Role,
    /// Reasoning tokens (`reasoning_content`). The server uses [`TokenEvents`]; this one-shot
    /// form is its naive twin in tests.
    #[cfg(test)]
    Reasoning(Words),
    /// Answer tokens (`content`); test twin of [`TokenEvents`] like `Reasoning`.
    #[cfg(test)]
    Content(Words),
    /// The closing empty delta with `finish_reason`.
    Finish(&'a str),
}

/// `data: {chat.completion.chunk}\n\n`.
pub(crate) fn sse_chat(out: &mut Vec<u8>, m: &Meta<'_>, delta: ChatDelta<'_>) {
    let _ = write!(
        out,
        "data: {{\"id\":\"chatcmpl-{:016x}\",\"object\":\"chat.completion.chunk\",\"created\":{},\
         \"model\":{},\"choices\":[{{\"index\":0,\"delta\":",
        m.id, m.created, m.model_json
    );
    let finish = match delta {
        ChatDelta::Role => {
            out.extend_from_slice(b"{\"role\":\"assistant\",\"content\":\"\"}");
            None
        }
        #[cfg(test)]
        ChatDelta::Reasoning(w) => {
            out.extend_from_slice(b"{\"reasoning_content\":\"");
            w.write(out);
            out.extend_from_slice(b"\"}");
            None
        }
        #[cfg(test)]
        ChatDelta::Content(w) => {
            out.extend_from_slice(b"{\"content\":\"");
            w.write(out);
            out.extend_from_slice(b"\"}");
            None
        }
        ChatDelta::Finish(reason) => {
            out.extend_from_slice(b"{}");
            Some(reason)
        }
    };
    finish_tail(out, finish);
}

fn finish_tail(out: &mut Vec<u8>, finish: Option<&str>) {
    match finish {
        Some(r) => {
            let _ = write!(
                out,
                ",\"logprobs\":null,\"finish_reason\":\"{r}\",\"stop_reason\":null}}]}}\n\n"
            );
        }
        None => out.extend_from_slice(b",\"logprobs\":null,\"finish_reason\":null}]}\n\n"),
    }
}

/// The token events of one response, with their constant JSON around the words built once, so
/// each event costs a chunk header and three copies.
pub(crate) struct TokenEvents {
    prefix: Vec<u8>,
    suffix: &'static [u8],
}

const CHAT_SUFFIX: &[u8] = b"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
const COMPLETION_SUFFIX: &[u8] = b"\",\"logprobs\":null,\"finish_reason\":null}]}\n\n";

impl TokenEvents {
    /// Events of `prefix`, the words, then `suffix` (the other APIs' shapes, `apis`).
    pub(crate) fn new(prefix: Vec<u8>, suffix: &'static [u8]) -> Self {
        Self { prefix, suffix }
    }

    /// Chat events whose delta carries the words in `field` (`content` or `reasoning_content`).
    pub(crate) fn chat(m: &Meta<'_>, field: &str) -> Self {
        let mut prefix = Vec::with_capacity(192);
        let _ = write!(
            prefix,
            "data: {{\"id\":\"chatcmpl-{:016x}\",\"object\":\"chat.completion.chunk\",\"created\":{},\
             \"model\":{},\"choices\":[{{\"index\":0,\"delta\":{{\"{field}\":\"",
            m.id, m.created, m.model_json
        );
        Self {
            prefix,
            suffix: CHAT_SUFFIX,
        }
    }

    /// Completion events carrying the words in `text`.
    pub(crate) fn completion(m: &Meta<'_>) -> Self {
        let mut prefix = Vec::with_capacity(192);
        let _ = write!(
            prefix,
            "data: {{\"id\":\"cmpl-{:016x}\",\"object\":\"text_completion\",\"created\":{},\
             \"model\":{},\"choices\":[{{\"index\":0,\"text\":\"",
            m.id, m.created, m.model_json
        );
        Self {
            prefix,
            suffix: COMPLETION_SUFFIX,
        }
    }

    /// Appends one event carrying `words` to `ev`, unframed (an event to add a usage to).
    pub(crate) fn write_event(&self, ev: &mut Vec<u8>, words: Words) {
        ev.extend_from_slice(&self.prefix);
        words.write(ev);
        ev.extend_from_slice(self.suffix);
    }

    /// Appends one event carrying `words`, framed as one HTTP chunk.
    pub(crate) fn push_chunk(&self, out: &mut Vec<u8>, words: Words) {
        let len = self.prefix.len() + words.len() + self.suffix.len();
        let _ = write!(out, "{len:x}\r\n");
        out.extend_from_slice(&self.prefix);
        words.write(out);
        out.extend_from_slice(self.suffix);
        out.extend_from_slice(b"\r\n");
    }
}

/// `data: {text_completion}\n\n`: some words, or (with `finish`) the empty closing event.
pub(crate) fn sse_completion(
    out: &mut Vec<u8>,
    m: &Meta<'_>,
    text: Option<Words>,
    finish: Option<&str>,
) {
    let _ = write!(
        out,
        "data: {{\"id\":\"cmpl-{:016x}\",\"object\":\"text_completion\",\"created\":{},\
         \"model\":{},\"choices\":[{{\"index\":0,\"text\":\"",
        m.id, m.created, m.model_json
    );
    if let Some(w) = text {
        w.write(out);
    }
    out.push(b'"');
    finish_tail(out, finish);
}

/// Token counts of one response.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Usage {
    pub(crate) prompt: u64,
    pub(crate) reasoning: u64,
    pub(crate) content: u64,
    /// Drafts per speculative step (`MockConfig::spec_decode`); 0: no spec-decode stats.
    pub(crate) spec_k: u32,
}

/// What a speculative decoder did for one request, as the mock reports it (vLLM's
/// `--per-request-spec-decode-metrics` payload, `metrics.speculative_decoding`): every
/// generated token comes from a verification step that proposed `k` drafts and accepted
/// `(3·i + 1) mod (k + 1)` of them (step `i`, from 0), fewer when the request has fewer tokens
/// left, plus the bonus token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecDecodeStats {
    /// Verification steps.
    pub steps: u64,
    /// Drafts accepted, bonus tokens excluded.
    pub accepted: u64,
    /// Drafts proposed (`k` a step).
    pub drafted: u64,
    /// Steps by drafts accepted, `k + 1` buckets (dense, as vLLM sends it).
    pub histogram: Vec<u64>,
}

impl SpecDecodeStats {
    /// The stats of a request that generated `tokens` tokens with `k` drafts a step.
    #[must_use]
    pub fn of(tokens: u64, k: u32) -> Self {
        let mut s = Self {
            steps: 0,
            accepted: 0,
            drafted: 0,
            histogram: vec![0; k as usize + 1],
        };
        let mut left = tokens;
        while left > 0 {
            let pattern = (3 * s.steps + 1) % (u64::from(k) + 1);
            let accepted = pattern.min(left - 1);
            s.histogram[accepted as usize] += 1;
            s.steps += 1;
            s.accepted += accepted;
            s.drafted += u64::from(k);
            left -= accepted + 1;
        }
        s
    }

    /// `mean_acceptance_length`: tokens a step, the bonus token included.
    #[must_use]
    pub fn mean_acceptance_length(&self) -> f64 {
        if self.steps == 0 {
            return 1.0;
        }
        1.0 + self.accepted as f64 / self.steps as f64
    }

    /// `draft_acceptance_rate`: the share of drafts accepted (0..1).
    #[must_use]
    pub fn draft_acceptance_rate(&self) -> f64 {
        if self.drafted == 0 {
            return 0.0;
        }
        self.accepted as f64 / self.drafted as f64
    }
}

/// `,"metrics":{"speculative_decoding":{…}}` after a response's usage, when `u.spec_k > 0`.
fn spec_decode_json(out: &mut Vec<u8>, u: Usage) {
    if u.spec_k == 0 {
        return;
    }
    let s = SpecDecodeStats::of(u.reasoning + u.content, u.spec_k);
    let histogram: Vec<String> = s.histogram.iter().map(u64::to_string).collect();
    let _ = write!(
        out,
        ",\"metrics\":{{\"speculative_decoding\":{{\"mean_acceptance_length\":{:?},\
         \"draft_acceptance_rate\":{:?},\"acceptance_histogram\":[{}],\
         \"num_accepted_draft_tokens\":{},\"num_draft_tokens\":{},\"num_spec_steps\":{},\
         \"num_spec_tokens\":{}}}}}",
        s.mean_acceptance_length(),
        s.draft_acceptance_rate(),
        histogram.join(","),
        s.accepted,
        s.drafted,
        s.steps,
        u.spec_k
    );
}

fn usage_json(out: &mut Vec<u8>, u: Usage) {
    let completion = u.reasoning + u.content;
    let _ = write!(
        out,
        "\"usage\":{{\"prompt_tokens\":{},\"total_tokens\":{},\"completion_tokens\":{}",
        u.prompt,
        u.prompt + completion,
        completion
    );
    if u.reasoning > 0 {
        let _ = write!(
            out,
            ",\"completion_tokens_details\":{{\"reasoning_tokens\":{}}}",
            u.reasoning
        );
    }
    out.push(b'}');
}

/// Adds `"usage":{…}` as the last member of the chunk object of the one event in `ev` (which
/// ends `}\n\n`): vLLM's shape with `stream_options.continuous_usage_stats`, where every chunk
/// carries the usage so far.
pub(crate) fn add_usage(ev: &mut Vec<u8>, u: Usage) {
    debug_assert!(ev.ends_with(b"}\n\n"), "one whole chunk event");
    ev.truncate(ev.len().saturating_sub(3));
    ev.push(b',');
    usage_json(ev, u);
    ev.extend_from_slice(b"}\n\n");
}

/// The usage-only event (empty `choices`) sent when `stream_options.include_usage` is set.
pub(crate) fn sse_usage(out: &mut Vec<u8>, m: &Meta<'_>, chat: bool, u: Usage) {
    let (prefix, object) = if chat {
        ("chatcmpl", "chat.completion.chunk")
    } else {
        ("cmpl", "text_completion")
    };
    let _ = write!(
        out,
        "data: {{\"id\":\"{prefix}-{:016x}\",\"object\":\"{object}\",\"created\":{},\"model\":{},\
         \"choices\":[],",
        m.id, m.created, m.model_json
    );
    usage_json(out, u);
    spec_decode_json(out, u);
    out.extend_from_slice(b"}\n\n");
}

/// `data: [DONE]\n\n`.
pub(crate) fn sse_done(out: &mut Vec<u8>) {
    out.extend_from_slice(b"data: [DONE]\n\n");
}

/// A whole non-streamed `chat.completion` body.
pub(crate) fn chat_body(
    out: &mut Vec<u8>,
    m: &Meta<'_>,
    reasoning: Words,
    content: Words,
    finish: &str,
    u: Usage,
) {
    let _ = write!(
        out,
        "{{\"id\":\"chatcmpl-{:016x}\",\"object\":\"chat.completion\",\"created\":{},\"model\":{},\
         \"choices\":[{{\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":\"",
        m.id, m.created, m.model_json
    );
    content.write(out);
    out.push(b'"');
    if reasoning.count > 0 {
        out.extend_from_slice(b",\"reasoning_content\":\"");
        reasoning.write(out);
        out.push(b'"');
    }
    let _ = write!(
        out,
        "}},\"logprobs\":null,\"finish_reason\":\"{finish}\",\"stop_reason\":null}}],"
    );
    usage_json(out, u);
    spec_decode_json(out, u);
    out.push(b'}');
}

/// A whole non-streamed `text_completion` body.
pub(crate) fn completion_body(
    out: &mut Vec<u8>,
    m: &Meta<'_>,
    text: Words,
    finish: &str,
    u: Usage,
) {
    let _ = write!(
        out,
        "{{\"id\":\"cmpl-{:016x}\",\"object\":\"text_completion\",\"created\":{},\"model\":{},\
         \"choices\":[{{\"index\":0,\"text\":\"",
        m.id, m.created, m.model_json
    );
    text.write(out);
    let _ = write!(
        out,
        "\",\"logprobs\":null,\"finish_reason\":\"{finish}\",\"stop_reason\":null}}],"
    );
    usage_json(out, u);
    spec_decode_json(out, u);
    out.push(b'}');
}

/// The `/v1/models` body (vLLM shape) for one model.
pub(crate) fn models_body(model: &str, created: u64) -> Vec<u8> {
    let v = serde_json::json!({
        "object": "list",
        "data": [{
            "id": model, "object": "model", "created": created, "owned_by": "vllm",
            "root": model, "parent": null, "max_model_len": 131072,
            "permission": [{
                "id": "modelperm-ringperf-mock", "object": "model_permission", "created": created,
                "allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true,
                "allow_search_indices": false, "allow_view": true, "allow_fine_tuning": false,
                "organization": "*", "group": null, "is_blocking": false
            }]
        }]
    });
    serde_json::to_vec(&v).unwrap_or_default()
}

/// Writes `buf` whole to `stream` and hands it back cleared.
pub(crate) async fn send(stream: &mut impl AsyncWriteRent, buf: &mut Vec<u8>) -> io::Result<()> {
    let (res, mut owned) = stream.write_all(std::mem::take(buf)).await;
    owned.clear();
    *buf = owned;
    res.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: Meta<'static> = Meta {
        id: 0xab,
        created: 5,
        model_json: "\"m\\\"x\"",
    };

    fn json_of_event(ev: &[u8]) -> serde_json::Value {
        let s = std::str::from_utf8(ev).unwrap();
        let body = s
            .strip_prefix("data: ")
            .unwrap()
            .strip_suffix("\n\n")
            .unwrap();
        serde_json::from_str(body).unwrap()
    }

    #[test]
    fn chat_events_are_valid_vllm_shaped_json() {
        let mut ev = Vec::new();
        sse_chat(&mut ev, &M, ChatDelta::Role);
        let v = json_of_event(&ev);
        assert_eq!(v["id"], "chatcmpl-00000000000000ab");
        assert_eq!(v["model"], "m\"x");
        assert_eq!(
            v["choices"][0]["delta"],
            serde_json::json!({"role":"assistant","content":""})
        );
        ev.clear();
        sse_chat(
            &mut ev,
            &M,
            ChatDelta::Content(Words {
                start: 0,
                from: 1,
                count: 2,
            }),
        );
        let v = json_of_event(&ev);
        let of_and = format!("{}{}", word(0, 1), word(0, 2));
        assert_eq!(v["choices"][0]["delta"]["content"], of_and.as_str());
        assert!(v["choices"][0]["finish_reason"].is_null());
        ev.clear();
        sse_chat(
            &mut ev,
            &M,
            ChatDelta::Reasoning(Words {
                start: 0,
                from: 0,
                count: 1,
            }),
        );
        assert_eq!(
            json_of_event(&ev)["choices"][0]["delta"]["reasoning_content"],
            word(0, 0)
        );
        ev.clear();
        sse_chat(&mut ev, &M, ChatDelta::Finish("length"));
        let v = json_of_event(&ev);
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        assert_eq!(v["choices"][0]["delta"], serde_json::json!({}));
    }

    #[test]
    fn completion_usage_and_bodies() {
        let mut ev = Vec::new();
        sse_completion(
            &mut ev,
            &M,
            Some(Words {
                start: 63,
                from: 0,
                count: 2,
            }),
            None,
        );
        let two = format!("{}{}", word(63, 0), word(63, 1));
        assert_eq!(json_of_event(&ev)["choices"][0]["text"], two.as_str());
        ev.clear();
        sse_usage(
            &mut ev,
            &M,
            false,
            Usage {
                prompt: 3,
                reasoning: 2,
                content: 4,
                spec_k: 3,
            },
        );
        let v = json_of_event(&ev);
        assert_eq!(v["choices"], serde_json::json!([]));
        assert_eq!(
            v["usage"],
            serde_json::json!({"prompt_tokens":3,"total_tokens":9,"completion_tokens":6,
                "completion_tokens_details":{"reasoning_tokens":2}})
        );
        // Six tokens, three drafts a step: steps accepting 1, 0, then 2 of the pattern's 3
        // (two tokens were left), each plus its bonus token.
        assert_eq!(
            v["metrics"]["speculative_decoding"],
            serde_json::json!({"mean_acceptance_length": 2.0,
                "draft_acceptance_rate": 1.0 / 3.0, "acceptance_histogram": [1, 1, 1, 0],
                "num_accepted_draft_tokens": 3, "num_draft_tokens": 9, "num_spec_steps": 3,
                "num_spec_tokens": 3})
        );
        let mut b = Vec::new();
        let w = Words {
            start: 0,
            from: 0,
            count: 1,
        };
        chat_body(
            &mut b,
            &M,
            w,
            Words {
                start: 0,
                from: 1,
                count: 1,
            },
            "stop",
            Usage {
                prompt: 1,
                reasoning: 1,
                content: 1,
                spec_k: 0,
            },
        );
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["choices"][0]["message"]["content"], word(0, 1));
        assert_eq!(v["choices"][0]["message"]["reasoning_content"], word(0, 0));
        assert_eq!(v["usage"]["total_tokens"], 3);
        b.clear();
        completion_body(
            &mut b,
            &M,
            w,
            "length",
            Usage {
                prompt: 0,
                reasoning: 0,
                content: 1,
                spec_k: 0,
            },
        );
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["choices"][0]["text"], w.text().as_str());
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        assert!(v["usage"].get("completion_tokens_details").is_none());
    }

    #[test]
    fn prebuilt_token_events_match_the_one_shot_encoders() {
        let w = Words {
            start: 9,
            from: 3,
            count: 4,
        };
        for (fast, slow) in [
            (TokenEvents::chat(&M, "content"), {
                let mut e = Vec::new();
                sse_chat(&mut e, &M, ChatDelta::Content(w));
                e
            }),
            (TokenEvents::chat(&M, "reasoning_content"), {
                let mut e = Vec::new();
                sse_chat(&mut e, &M, ChatDelta::Reasoning(w));
                e
            }),
            (TokenEvents::completion(&M), {
                let mut e = Vec::new();
                sse_completion(&mut e, &M, Some(w), None);
                e
            }),
        ] {
            let mut framed = Vec::new();
            chunk(&mut framed, &slow);
            let mut out = Vec::new();
            fast.push_chunk(&mut out, w);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                String::from_utf8(framed).unwrap()
            );
        }
    }

    #[test]
    fn chunk_framing_and_heads() {
        let mut out = Vec::new();
        chunk(&mut out, &[b'x'; 26]);
        last_chunk(&mut out);
        assert_eq!(
            out,
            [b"1a\r\n".as_slice(), &[b'x'; 26], b"\r\n0\r\n\r\n"].concat()
        );
        out.clear();
        head(&mut out, 404, "application/json", 7, true);
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with("HTTP/1.1 404 Not Found\r\n"));
        assert!(s.contains("content-length: 7\r\n") && s.ends_with("connection: close\r\n\r\n"));
        let e: serde_json::Value = serde_json::from_slice(&error_body(400, "bad")).unwrap();
        assert_eq!(e["error"]["message"], "bad");
        assert_eq!(e["error"]["code"], 400);
        let m: serde_json::Value = serde_json::from_slice(&models_body("q", 1)).unwrap();
        assert_eq!(m["data"][0]["id"], "q");
    }

    /// The phrases the mock sent before it took them from `http` (and that uvicorn sends, so
    /// error exports carry the same `"error"` text against the mock as against vLLM), written
    /// out by hand from RFC 9110 / RFC 6585.
    #[test]
    fn reason_phrases_are_the_uvicorn_ones() {
        for (code, phrase) in [
            (200, "OK"),
            (400, "Bad Request"),
            (404, "Not Found"),
            (405, "Method Not Allowed"),
            (411, "Length Required"),
            (413, "Payload Too Large"),
            (429, "Too Many Requests"),
            (431, "Request Header Fields Too Large"),
            (500, "Internal Server Error"),
            (501, "Not Implemented"),
            (502, "Bad Gateway"),
            (503, "Service Unavailable"),
            (504, "Gateway Timeout"),
            (599, "Error"),
            (1000, "Error"),
        ] {
            assert_eq!(reason(code), phrase, "{code}");
            let mut out = Vec::new();
            head(&mut out, code, "application/json", 0, false);
            let line = format!("HTTP/1.1 {code} {phrase}\r\n");
            assert!(out.starts_with(line.as_bytes()), "{code}");
        }
    }
}
