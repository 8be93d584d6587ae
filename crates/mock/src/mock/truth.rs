//! The truth log: when the mock really wrote each part of each response, on the raw
//! `CLOCK_MONOTONIC` scale of [`ringperf_wire::clock::monotonic_raw_ns`], so a client's stamps can be
//! compared with the server's directly.
//!
//! Each server thread owns one shard (a mutex it takes once per finished request, never
//! contended except by readers), so recording costs one uncontended lock and one insert.

use std::collections::HashMap;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use uuid::Uuid;

use super::control::ControlCall;
use super::fault::Fault;

/// What the mock did for one completion request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TruthEntry {
    /// The request's `X-Request-ID` header, when it held a UUID.
    pub request_id: Option<Uuid>,
    /// The connection the request came on: the server numbers its connections from 0 in the
    /// order it accepts them (which connection a client reused, or opened anew).
    pub connection: u64,
    /// When the server accepted that connection (raw `CLOCK_MONOTONIC`, as every stamp here):
    /// a connection opened ahead of its requests was accepted long before they arrived.
    pub connection_accepted_ns: u64,
    /// The request's `X-Correlation-ID` header as sent (surrounding whitespace trimmed; bytes
    /// that are not UTF-8 replaced by U+FFFD), whatever it holds: the session id a client keeps
    /// for every turn of one conversation. `None` when the header is absent.
    pub correlation_id: Option<String>,
    /// The whole request body as received, byte for byte; only with
    /// [`MockConfig::record_bodies`](crate::mock::MockConfig::record_bodies), else `None`.
    pub request_body: Option<Arc<[u8]>>,
    /// The answer's text exactly as the client received it; only with
    /// [`MockConfig::record_bodies`](crate::mock::MockConfig::record_bodies), else `None`.
    /// Chat: the `content` (the concatenation of the streamed `delta.content` values, or
    /// `message.content`), never the `reasoning_content`. Completions: the `text` (the API has no
    /// reasoning field, so reasoning tokens go out as text and are part of it). A stream cut by a
    /// fault: the text of the token events written before the cut. `None` as well when the
    /// request got no completion text (a fault that answers with a status, resets before
    /// answering or never answers, or cuts a non-streamed body).
    pub reply_text: Option<String>,
    /// The answer's own id, as its `id` field writes it in hex (`chatcmpl-…`, `resp_…`).
    pub response_id: u64,
    /// Request path (`/v1/chat/completions` or `/v1/completions`).
    pub path: &'static str,
    /// Whether the response was streamed.
    pub stream: bool,
    /// How many vectors, scores or images the request asked for (embeddings `input` strings,
    /// rankings passages, the images API's `n`; 1 otherwise): what such an answer holds.
    pub items: u64,
    /// When the whole request (head and body) had been read.
    pub arrival_ns: u64,
    /// The kernel's receive stamp of the read that completed the request (`SO_TIMESTAMPING`,
    /// converted to raw `CLOCK_MONOTONIC`): when its last byte reached the server's socket,
    /// before the server woke to read it. `None` where the kernel gave no stamp.
    pub arrival_kernel_ns: Option<u64>,
    /// Just before the write of the response head (for chat streams, head plus role chunk).
    pub head_ns: u64,
    /// Just before the write that carried each token event: reasoning events first, then content
    /// events. Events due at the same instant (zero TTFT or zero ITL) share one write and so one
    /// stamp; events due at different instants never share a write. A non-streamed response has
    /// one entry, the write of the whole response.
    pub event_ns: Vec<u64>,
    /// Just before the write of the response's last bytes (finish chunk, usage, `[DONE]`, the
    /// chunked terminator, which go out with the last token event); equal to `head_ns` for a
    /// non-streamed response.
    pub end_ns: u64,
    /// Content tokens sent.
    pub content_tokens: u64,
    /// Reasoning tokens sent (before the content).
    pub reasoning_tokens: u64,
    /// Tokens packed into each event (the last event of each kind may carry fewer).
    pub tokens_per_event: u64,
    /// The prompt tokens the mock reported in `usage` (exact with a prompt tokenizer, else the
    /// whitespace-word approximation).
    pub prompt_tokens: u64,
    /// `true` when the response went out whole as planned (for a fault, the fault's whole
    /// answer: an error status, an `event: error` stream, a huge body); `false` when the
    /// connection was reset or cut, the fault never answers, or the client went away first.
    pub completed: bool,
    /// The fault this request got ([`crate::mock::MockConfig::faults`]), if any.
    pub fault: Option<Fault>,
    /// How long the request waited for a service slot before its TTFT began, ns (a mock with a
    /// [`capacity`](crate::mock::MockConfig::capacity); 0 without one): its first token event
    /// was due at `arrival_ns + queue_wait_ns + ttft`.
    pub queue_wait_ns: u64,
    /// The images, audio and video of a chat body, decoded and read from their headers
    /// (docs/multimodal.md); empty for a body without any.
    pub media: Vec<super::media::MediaSeen>,
}

#[derive(Default)]
struct Shard {
    by_id: HashMap<Uuid, usize>,
    entries: Vec<TruthEntry>,
    /// When each connection of this thread was accepted, in order.
    accepted: Vec<u64>,
}

/// Per-request ground truth of every server thread. Cheap to share (`Arc`).
pub struct TruthLog {
    enabled: bool,
    shards: Box<[Mutex<Shard>]>,
    /// Control-plane calls, in arrival order ([`super::control`]).
    controls: Mutex<Vec<ControlCall>>,
}

impl std::fmt::Debug for TruthLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TruthLog")
            .field("enabled", &self.enabled)
            .field("len", &self.len())
            .finish()
    }
}

fn lock(m: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
    // A panic while holding the lock cannot leave a shard half-written (pushes are atomic from
    // the reader's point of view), so a poisoned lock is still safe to use.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl TruthLog {
    /// A log with one shard per server thread; a disabled log records nothing.
    pub(crate) fn new(enabled: bool, threads: usize) -> Self {
        Self {
            enabled,
            shards: (0..threads.max(1)).map(|_| Mutex::default()).collect(),
            controls: Mutex::default(),
        }
    }

    /// Whether recording is on (`MockConfig::truth_log`).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Records one request from server thread `thread`.
    pub(crate) fn record(&self, thread: usize, entry: TruthEntry) {
        if !self.enabled {
            return;
        }
        let Some(shard) = self.shards.get(thread % self.shards.len()) else {
            return;
        };
        let mut s = lock(shard);
        if let Some(id) = entry.request_id {
            let at = s.entries.len();
            s.by_id.insert(id, at);
        }
        s.entries.push(entry);
    }

    /// Records that server thread `thread` accepted a connection at `accepted_ns`.
    pub(crate) fn record_connection(&self, thread: usize, accepted_ns: u64) {
        if !self.enabled {
            return;
        }
        if let Some(shard) = self.shards.get(thread % self.shards.len()) {
            lock(shard).accepted.push(accepted_ns);
        }
    }

    /// Records a control-plane call.
    pub(crate) fn record_control(&self, call: ControlCall) {
        if self.enabled {
            self.controls
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(call);
        }
    }

    /// Every control-plane call ([`ControlCall`]), in arrival order.
    pub fn controls(&self) -> Vec<ControlCall> {
        let mut all = self
            .controls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        all.sort_by_key(|c| c.arrival_ns);
        all
    }

    /// When every connection was accepted (whether a request came on it or not), in order.
    pub fn connections_accepted(&self) -> Vec<u64> {
        let mut all: Vec<u64> = self
            .shards
            .iter()
            .flat_map(|m| lock(m).accepted.clone())
            .collect();
        all.sort_unstable();
        all
    }

    /// The entry of the request with this `X-Request-ID` (the latest one if the id was reused).
    pub fn get(&self, id: &Uuid) -> Option<TruthEntry> {
        self.shards.iter().find_map(|m| {
            let s = lock(m);
            s.by_id.get(id).and_then(|&i| s.entries.get(i)).cloned()
        })
    }

    /// Number of recorded requests (with or without an id).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|m| lock(m).entries.len()).sum()
    }

    /// Whether nothing has been recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every recorded request, ordered by arrival.
    pub fn entries(&self) -> Vec<TruthEntry> {
        let mut all: Vec<TruthEntry> = self
            .shards
            .iter()
            .flat_map(|m| lock(m).entries.clone())
            .collect();
        all.sort_by_key(|e| e.arrival_ns);
        all
    }

    /// Writes every entry as one JSON object per line, ordered by arrival. Field names are those
    /// of [`TruthEntry`]; `request_id` is the hyphenated UUID or null; `correlation_id`,
    /// `request_body` (the body's text; a completion body the mock answered is always UTF-8
    /// JSON, so nothing is lost) and `reply_text` are strings or null; all stamps are raw
    /// `CLOCK_MONOTONIC` nanoseconds. The control-plane calls follow, one `{"control": …}`
    /// object a line ([`ControlCall`]'s fields).
    pub fn write_jsonl(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let mut out = BufWriter::new(std::fs::File::create(path)?);
        for e in self.entries() {
            let line = JsonlEntry {
                request_id: e.request_id.map(|u| u.hyphenated().to_string()),
                connection: e.connection,
                connection_accepted_ns: e.connection_accepted_ns,
                correlation_id: e.correlation_id.as_deref(),
                path: e.path,
                stream: e.stream,
                items: e.items,
                arrival_ns: e.arrival_ns,
                arrival_kernel_ns: e.arrival_kernel_ns,
                head_ns: e.head_ns,
                event_ns: &e.event_ns,
                end_ns: e.end_ns,
                content_tokens: e.content_tokens,
                reasoning_tokens: e.reasoning_tokens,
                tokens_per_event: e.tokens_per_event,
                prompt_tokens: e.prompt_tokens,
                completed: e.completed,
                fault: e.fault.map(|f| f.to_string()),
                request_body: e.request_body.as_deref().map(String::from_utf8_lossy),
                reply_text: e.reply_text.as_deref(),
                queue_wait_ns: e.queue_wait_ns,
                media: &e.media,
            };
            serde_json::to_writer(&mut out, &line)?;
            out.write_all(b"\n")?;
        }
        // Then the control-plane calls, one `{"control": {...}}` object a line.
        for c in self.controls() {
            serde_json::to_writer(&mut out, &serde_json::json!({ "control": c }))?;
            out.write_all(b"\n")?;
        }
        out.flush()
    }
}

#[derive(Serialize)]
struct JsonlEntry<'a> {
    request_id: Option<String>,
    connection: u64,
    connection_accepted_ns: u64,
    correlation_id: Option<&'a str>,
    path: &'a str,
    stream: bool,
    items: u64,
    arrival_ns: u64,
    arrival_kernel_ns: Option<u64>,
    head_ns: u64,
    event_ns: &'a [u64],
    end_ns: u64,
    content_tokens: u64,
    reasoning_tokens: u64,
    tokens_per_event: u64,
    prompt_tokens: u64,
    completed: bool,
    /// The fault in its command-line spelling (`status=503`, `reset-before`, …) or null.
    fault: Option<String>,
    request_body: Option<std::borrow::Cow<'a, str>>,
    reply_text: Option<&'a str>,
    queue_wait_ns: u64,
    media: &'a [super::media::MediaSeen],
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: Option<Uuid>, arrival_ns: u64) -> TruthEntry {
        TruthEntry {
            request_id: id,
            connection: 0,
            connection_accepted_ns: 0,
            correlation_id: None,
            request_body: None,
            reply_text: None,
            response_id: 0,
            path: "/v1/completions",
            stream: true,
            items: 1,
            arrival_ns,
            arrival_kernel_ns: None,
            head_ns: arrival_ns + 1,
            event_ns: vec![arrival_ns + 2, arrival_ns + 3],
            end_ns: arrival_ns + 4,
            content_tokens: 3,
            reasoning_tokens: 1,
            tokens_per_event: 2,
            prompt_tokens: 5,
            completed: true,
            fault: None,
            queue_wait_ns: 0,
            media: Vec::new(),
        }
    }

    #[test]
    fn records_by_id_across_shards_and_orders_by_arrival() {
        let log = TruthLog::new(true, 2);
        let a = Uuid::from_u128(1);
        let b = Uuid::from_u128(2);
        log.record(1, entry(Some(a), 50));
        log.record(0, entry(Some(b), 10));
        log.record(0, entry(None, 30));
        assert_eq!(log.len(), 3);
        assert_eq!(log.get(&a).map(|e| e.arrival_ns), Some(50));
        assert_eq!(log.get(&b).map(|e| e.arrival_ns), Some(10));
        assert_eq!(log.get(&Uuid::from_u128(3)), None);
        let order: Vec<u64> = log.entries().iter().map(|e| e.arrival_ns).collect();
        assert_eq!(order, [10, 30, 50]);
    }

    #[test]
    fn disabled_log_records_nothing() {
        let log = TruthLog::new(false, 1);
        log.record(0, entry(Some(Uuid::from_u128(1)), 1));
        assert!(log.is_empty());
    }

    #[test]
    fn jsonl_has_one_parsable_line_per_entry() {
        let log = TruthLog::new(true, 1);
        let a = Uuid::from_u128(0xabc);
        log.record(0, entry(Some(a), 7));
        let mut faulted = entry(None, 9);
        faulted.fault = Some(Fault::Status(503));
        faulted.correlation_id = Some("session-7".to_owned());
        faulted.request_body = Some(Arc::from(&br#"{"prompt":"a \"q\""}"#[..]));
        faulted.reply_text = Some(" the of".to_owned());
        log.record(0, faulted);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("truth.jsonl");
        log.write_jsonl(&p).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["request_id"], a.hyphenated().to_string());
        assert_eq!(lines[0]["event_ns"], serde_json::json!([9, 10]));
        assert!(lines[1]["request_id"].is_null());
        assert!(lines[0]["fault"].is_null());
        assert_eq!(lines[1]["fault"], "status=503");
        assert_eq!(lines[1]["end_ns"], 13);
        for absent in ["correlation_id", "request_body", "reply_text"] {
            assert!(lines[0][absent].is_null(), "{absent}");
        }
        assert_eq!(lines[1]["correlation_id"], "session-7");
        assert_eq!(lines[1]["request_body"], r#"{"prompt":"a \"q\""}"#);
        assert_eq!(lines[1]["reply_text"], " the of");
    }
}
