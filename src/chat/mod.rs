//! `ringperf chat`: AIPerf 0.13's interactive sanity check. One streamed chat completion per
//! message, the reply printed as it arrives, then the turn's TTFT, tokens per second, ITL and
//! prompt-cache share (docs/commands.md, "chat"). Plain `http://` only, one connection a turn,
//! on the blocking standard library: nothing here is on the benchmark's path.

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use ringperf_wire::http::Status;
use ringperf_wire::http::body::{BodyDecoder, BodyKind};
use ringperf_wire::http::response::parse_head;
use ringperf_wire::sse::{Framer, MessageData, message_data};
use ringperf_workload::workload::tokenizer::Tokenizer;

/// Why a turn or the command failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ChatError {
    /// The URL is not `http://host[:port][/path]`.
    Url(String),
    /// Connecting, writing or reading failed.
    Io(std::io::Error),
    /// The server answered with an error status; its body's first 500 bytes.
    Status(u16, String),
    /// The response could not be parsed, or the stream carried an error event.
    Protocol(String),
    /// The tokenizer could not be loaded.
    Tokenizer(String),
}

impl std::fmt::Display for ChatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Url(u) => write!(
                f,
                "unsupported URL {u:?}: chat speaks plain http://host:port"
            ),
            Self::Io(e) => write!(f, "{e}"),
            Self::Status(s, body) if body.is_empty() => write!(f, "HTTP {s}"),
            Self::Status(s, body) => write!(f, "HTTP {s}: {body}"),
            Self::Protocol(s) | Self::Tokenizer(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for ChatError {}

impl From<std::io::Error> for ChatError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

/// Where the requests go: `host:port` and the chat-completions path.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub authority: String,
    pub path: String,
}

/// As AIPerf: a bare base gets `/v1/chat/completions`, a `/v1` base `/chat/completions`, a full
/// path is kept; no scheme means `http://`.
///
/// # Errors
/// An `https://` URL or one without a host.
pub fn target(url: &str) -> Result<Target, ChatError> {
    let rest = if let Some(r) = url.strip_prefix("http://") {
        r
    } else if url.contains("://") {
        return Err(ChatError::Url(url.to_string()));
    } else {
        url
    };
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    if authority.is_empty() {
        return Err(ChatError::Url(url.to_string()));
    }
    let authority = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let base = format!("/{}", path.trim_end_matches('/'));
    let base = base.trim_end_matches('/');
    let path = if base.ends_with("/chat/completions") {
        base.to_string()
    } else if base.ends_with("/v1") {
        format!("{base}/chat/completions")
    } else {
        format!("{base}/v1/chat/completions")
    };
    Ok(Target { authority, path })
}

/// One turn's reply and its timing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    pub content: String,
    pub reasoning: String,
    pub ttft: Option<Duration>,
    pub latency: Duration,
    pub usage: Option<Value>,
}

/// Sends `messages` as one streamed chat completion, printing the reply's text to `out` as it
/// arrives.
///
/// # Errors
/// Connection, status or stream faults.
pub fn send(
    target: &Target,
    headers: &[(String, String)],
    model: &str,
    messages: &[Value],
    out: &mut dyn Write,
) -> Result<Turn, ChatError> {
    let body = json!({
        "messages": messages,
        "model": model,
        "stream": true,
        "stream_options": {"include_usage": true},
    })
    .to_string();
    let mut req = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        target.path,
        target.authority,
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    let start = Instant::now();
    let mut sock = TcpStream::connect(&target.authority)?;
    sock.write_all(req.as_bytes())?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let head = loop {
        let n = sock.read(&mut buf)?;
        if n == 0 {
            return Err(ChatError::Protocol(
                "connection closed before a response".into(),
            ));
        }
        raw.extend_from_slice(&buf[..n]);
        match parse_head(&raw) {
            Ok(Status::Complete(h)) if h.is_interim() => {
                raw.drain(..h.head_len);
            }
            Ok(Status::Complete(h)) => break h,
            Ok(Status::Partial) => {}
            Err(e) => return Err(ChatError::Protocol(format!("bad response head: {e:?}"))),
        }
    };
    let mut decoder = BodyDecoder::new(BodyKind::from_head(&head, false));
    let mut decoded = Vec::new();
    let mut turn = Turn::default();
    let mut framer = Framer::new();
    let mut pending: Vec<u8> = raw[head.head_len..].to_vec();
    loop {
        let fed = decoder
            .feed(&pending, &mut decoded)
            .map_err(|e| ChatError::Protocol(format!("bad response body: {e:?}")))?;
        if head.status >= 300 {
            if fed.done {
                break;
            }
        } else {
            while let Some(span) = framer.next_message(&decoded) {
                event(&decoded[span], start, &mut turn, out)?;
            }
        }
        if fed.done {
            break;
        }
        let n = sock.read(&mut buf)?;
        if n == 0 {
            decoder
                .finish_eof()
                .map_err(|e| ChatError::Protocol(format!("body cut short: {e:?}")))?;
            break;
        }
        pending = buf[..n].to_vec();
    }
    if head.status >= 300 {
        let text = String::from_utf8_lossy(&decoded);
        let text: String = text.trim().chars().take(500).collect();
        return Err(ChatError::Status(head.status, text));
    }
    if let Some(span) = framer.finish(&decoded) {
        event(&decoded[span], start, &mut turn, out)?;
    }
    turn.latency = start.elapsed();
    Ok(turn)
}

/// One SSE message: its text printed and kept, the first one's arrival as TTFT, usage kept.
fn event(
    msg: &[u8],
    start: Instant,
    turn: &mut Turn,
    out: &mut dyn Write,
) -> Result<(), ChatError> {
    let mut scratch = Vec::new();
    let data = match message_data(msg, &mut scratch) {
        MessageData::Json(at) => at.bytes(msg, &scratch).to_vec(),
        MessageData::Error(e) => return Err(ChatError::Protocol(e)),
        _ => return Ok(()),
    };
    let Ok(chunk) = serde_json::from_slice::<Value>(&data) else {
        return Ok(());
    };
    if chunk.get("usage").is_some_and(|u| !u.is_null()) {
        turn.usage = chunk.get("usage").cloned();
    }
    let delta = &chunk["choices"][0]["delta"];
    let text = |k: &str| {
        delta
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let content = text("content");
    let reasoning = {
        let r = text("reasoning_content");
        if r.is_empty() { text("reasoning") } else { r }
    };
    if content.is_empty() && reasoning.is_empty() {
        return Ok(());
    }
    turn.ttft.get_or_insert_with(|| start.elapsed());
    let _ = write!(out, "{reasoning}{content}");
    let _ = out.flush();
    turn.reasoning.push_str(&reasoning);
    turn.content.push_str(&content);
    Ok(())
}

/// The stats block after a reply (AIPerf's lines): TTFT, TPS over the whole request, ITL when
/// two tokens or more, and the prompt-cache share when the server reports cached tokens.
pub fn stats(turn: &Turn, tokenizer: &Tokenizer) -> String {
    let reasoning = tokenizer.count(&turn.reasoning);
    let osl = tokenizer.count(&turn.content) + reasoning;
    let Some(ttft) = turn.ttft.filter(|_| osl > 0) else {
        return "(no tokens received)".into();
    };
    let secs = turn.latency.as_secs_f64();
    let tps = if secs > 0.0 { osl as f64 / secs } else { 0.0 };
    let mut desc = format!("{osl} tokens");
    if reasoning > 0 {
        desc.push_str(&format!(", {reasoning} reasoning"));
    }
    let mut lines = vec![
        format!("TTFT: {:.2} ms", ttft.as_secs_f64() * 1e3),
        format!("TPS:  {tps:.2} tokens/s ({desc} in {secs:.2}s)"),
    ];
    if osl >= 2 {
        let itl = (turn.latency - ttft).as_secs_f64() / (osl - 1) as f64;
        if itl > 0.0 {
            lines.push(format!(
                "ITL:  {:.2} ms/token (decode {:.2} tokens/s)",
                itl * 1e3,
                1.0 / itl
            ));
        }
    }
    let usage = turn.usage.as_ref();
    let isl = usage.and_then(|u| u["prompt_tokens"].as_u64());
    let cached = usage.and_then(|u| u["prompt_tokens_details"]["cached_tokens"].as_u64());
    if let (Some(isl), Some(cached)) = (isl.filter(|&n| n > 0), cached) {
        let rate = 100.0 * cached as f64 / isl as f64;
        lines.push(format!(
            "Cache: {cached}/{isl} prompt tokens cached ({rate:.1}%)"
        ));
    }
    lines.join("\n")
}

/// What `ringperf chat` was asked.
#[derive(Debug, Clone)]
pub struct ChatOptions {
    pub model: String,
    pub url: String,
    pub system_prompt: Option<String>,
    pub quick: Option<String>,
    pub history: bool,
    pub api_key: Option<String>,
    pub tokenizer: String,
}

/// The chat loop: `--quick` sends one message; otherwise each line of `input` is a message
/// until end of input, a failed turn reported on stderr and the loop kept.
///
/// # Errors
/// A bad URL or tokenizer, or a failed `--quick` turn.
pub fn run(o: &ChatOptions, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<(), ChatError> {
    let target = target(&o.url)?;
    let tokenizer = ringperf_workload::workload::tokenizer::load(&o.tokenizer)
        .map_err(|e| ChatError::Tokenizer(e.to_string()))?;
    let mut headers = Vec::new();
    if let Some(key) = o
        .api_key
        .clone()
        .or_else(|| std::env::var("OPENAI_API_KEY").ok())
    {
        headers.push(("Authorization".to_string(), format!("Bearer {key}")));
    }
    let system: Vec<Value> = o
        .system_prompt
        .iter()
        .map(|s| json!({"role": "system", "content": s}))
        .collect();
    let turn = |history: &[Value], msg: &str, out: &mut dyn Write| {
        let mut messages = system.clone();
        messages.extend_from_slice(history);
        messages.push(json!({"role": "user", "content": msg}));
        let t = send(&target, &headers, &o.model, &messages, out)?;
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", stats(&t, &tokenizer));
        Ok::<Turn, ChatError>(t)
    };
    if let Some(q) = &o.quick {
        return turn(&[], q, out).map(|_| ());
    }
    let _ = writeln!(
        out,
        "Please enter a message for the chat model (Ctrl-D to exit):"
    );
    let mut history: Vec<Value> = Vec::new();
    let mut line = String::new();
    loop {
        let _ = write!(out, "> ");
        let _ = out.flush();
        line.clear();
        if input.read_line(&mut line)? == 0 {
            let _ = writeln!(out);
            return Ok(());
        }
        let msg = line.trim_end_matches(['\n', '\r']).to_string();
        match turn(&history, &msg, out) {
            Err(e) => eprintln!("request failed: {e}"),
            Ok(t) if o.history => {
                history.push(json!({"role": "user", "content": msg}));
                let reply = if t.content.is_empty() {
                    t.reasoning
                } else {
                    t.content
                };
                history.push(json!({"role": "assistant", "content": reply}));
            }
            Ok(_) => {}
        }
    }
}

#[cfg(test)]
mod tests;
