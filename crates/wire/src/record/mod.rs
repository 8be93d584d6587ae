//! What a worker hands to the aggregator: one [`RawRecord`] per request, success or failure.
//!
//! A worker does only what timestamps need: it frames HTTP and SSE and stamps every read. The
//! decoded body and the span + stamp of every SSE message travel in the record; JSON field
//! extraction, tokenization and metrics happen on the aggregator thread.

/// Value of `record_processor_id` in the exports (and AIPerf's OpenTelemetry point attribute
/// `aiperf.record_processor.id`): ringperf has one aggregator thread.
pub const RECORD_PROCESSOR_ID: &str = "record_processor_0";

pub mod ring;
pub mod spec_decode;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

/// The phase a request belongs to. Warmup records are excluded from every profiling metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Warmup,
    Profiling,
}

impl Phase {
    /// The name AIPerf writes in `benchmark_phase`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Warmup => "warmup",
            Phase::Profiling => "profiling",
        }
    }
}

/// Permission to send one request: which one, and when it was meant to go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Credit {
    pub phase: Phase,
    /// The phase's position among the run's phases (AIPerf's `phase_index`: a warmup first,
    /// then each profiling phase in order).
    pub phase_index: u8,
    /// Index of the request within its phase (0-based, dense).
    pub index: u64,
    /// The conversation (dataset index) this request belongs to.
    pub conversation: u32,
    /// The turn of that conversation this request sends (0 for the first).
    pub turn: u32,
    /// Cancel the request this long after it was fully written (`--request-cancellation-*`).
    pub cancel_after_ns: Option<u64>,
    /// A session started by this credit sends at most this many turns (a user-centric user
    /// who joins mid-conversation).
    pub max_turns: Option<u32>,
    /// Monotonic ns (see [`crate::clock::Clock`]) at which the request was meant to be sent.
    /// Closed-loop credits are meant to go when their slot frees.
    pub intended_ns: u64,
}

/// One SSE message (or, for a non-SSE body, the whole body): `stamp_ns` is the time of the read
/// that completed it: the kernel's receive stamp of that read when there is one, else the
/// user-space stamp of its completion. `start..end` spans its bytes, in the record's `body`
/// for a [`EventForm::Raw`] event and in its `text` otherwise (see [`EventForm`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub stamp_ns: u64,
    pub start: u32,
    pub end: u32,
    /// What the span holds: the raw message, or what the endpoint extracted from it.
    pub form: EventForm,
    /// The client's receive lag of that read: user-space stamp minus kernel stamp, ns
    /// (saturating at `u32::MAX`, 4.3 s). `None`: the read had no kernel stamp, so `stamp_ns`
    /// is the user-space stamp.
    pub lag_ns: Option<u32>,
}

/// What an [`Event`]'s span holds. A worker keeps raw messages ([`EventForm::Raw`]) unless
/// the record is compact (every `--export-level` but `raw`, a 2xx SSE response, an endpoint
/// with a compactor): then it extracts each message's text delta as it arrives and drops the
/// raw bytes, keeping them (copied, [`EventForm::Kept`]) only for a message its fast
/// extraction does not recognize, so that the aggregator parses those exactly as before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventForm {
    /// `body[start..end]` is the raw message.
    Raw,
    /// `text[start..end]` is the raw message, kept for the full parser.
    Kept,
    /// The message was extracted and is not a content response (a role-only or empty delta,
    /// `[DONE]`, an empty data value): nothing but its stamp is left.
    Empty,
    /// A content response of output text `text[start..end]` (never empty).
    Text,
    /// A content response of reasoning `text[start..split]` with the content that came with it,
    /// `text[split..end]` (`content`: the message had non-empty content).
    Reasoning { split: u32, content: bool },
}

/// Why a request failed, in AIPerf's error shape (`{code, type, message}`, docs/output-formats.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestError {
    /// HTTP status for HTTP errors; AIPerf's pseudo-codes otherwise (499 cancelled, 502 SSE error).
    pub code: Option<u16>,
    /// `type`: the HTTP reason phrase for HTTP errors, or an error class name.
    pub kind: String,
    pub message: String,
}

impl RequestError {
    pub fn new(code: Option<u16>, kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            kind: kind.into(),
            message: message.into(),
        }
    }
}

/// The stamps and counts of one request's HTTP exchange, taken in the worker's I/O path for
/// AIPerf's HTTP trace metrics (`ringperf_metrics::aggregate::http_trace`). All stamps are monotonic ns of
/// the run's [`crate::clock::Clock`]. They describe the attempt that carried the request (a
/// retry after a stale pooled connection starts them afresh). A few words, no allocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpTrace {
    /// The attempt began, before a pooled connection was taken or a fresh one opened
    /// (aiohttp's `on_request_start`, which also fires before the connection is acquired).
    pub request_start_ns: u64,
    /// A fresh connection's connect start and ready stamps: TCP connect plus, for `https`, the
    /// TLS handshake. `None` when the connection came from the pool.
    pub connect_ns: Option<(u64, u64)>,
    /// The connection came from the pool (kept alive from an earlier request).
    pub reused: bool,
    /// The write of the whole request completed (`None`: it never did).
    pub send_end_ns: Option<u64>,
    /// Request body bytes written (the head excluded, as aiohttp counts its body chunks).
    pub request_bytes: u64,
    /// Write calls that carried request body bytes (ringperf writes head and body in one).
    pub request_chunks: u32,
    /// Reads that brought decoded body bytes: the first and the last one's stamps and their
    /// count (framing-only reads, such as a chunked terminator alone, are not counted).
    pub response_start_ns: Option<u64>,
    pub response_end_ns: Option<u64>,
    pub response_chunks: u32,
    /// Decoded body bytes received (chunked framing and the head excluded).
    pub response_bytes: u64,
    /// The local address of the connection's socket (`getsockname` once per connection).
    pub local: Option<std::net::SocketAddr>,
}

/// Everything a worker measured about one request.
#[derive(Clone, Debug)]
pub struct RawRecord {
    pub credit: Credit,
    pub worker_id: u16,
    /// Index into the configured `--url` list.
    pub url_index: u16,
    /// `X-Request-ID` sent with the request.
    pub request_id: uuid::Uuid,
    /// `X-Correlation-ID`: the session's id, the same for every turn of a conversation.
    pub correlation_id: uuid::Uuid,
    /// Monotonic ns just before the request's first byte was written.
    pub start_ns: u64,
    /// Monotonic ns of the read that completed the response head.
    pub head_ns: Option<u64>,
    /// Monotonic ns when the body completed, or when the failure was seen.
    pub end_ns: u64,
    /// HTTP status (0 when no head was received).
    pub status: u16,
    /// The response had `Content-Type: text/event-stream`.
    pub is_sse: bool,
    /// Decoded body (chunked framing removed). In a compact record only the bytes of the
    /// message still arriving are kept here; the spans of the events are in `text`.
    pub body: Vec<u8>,
    /// A compact record's extracted text deltas and kept raw messages (see [`EventForm`]).
    pub text: Vec<u8>,
    /// SSE messages (or the single non-SSE body) with the stamp of the read that completed each.
    pub events: Vec<Event>,
    /// Reads that completed more than one SSE message (the messages share the read's stamp).
    pub coalesced_reads: u32,
    /// Why the request failed. Boxed: few records have one, and every record in flight or in a
    /// ring would otherwise keep its 56 bytes.
    pub error: Option<Box<RequestError>>,
    /// The request went out on a kept-alive connection.
    pub conn_reused: bool,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// The request was cancelled: cut by the end of a duration run's grace period, or by
    /// `--request-cancellation-rate`.
    pub was_cancelled: bool,
    /// The body sent, when it was built for this request (a turn carrying its conversation's
    /// history); `None` when it was the pre-encoded body of its turn. A boxed slice: every
    /// record would keep a capacity's word for what only such turns have (#41).
    pub request_body: Option<Box<[u8]>>,
    /// The `--cache-bust` marker spliced into the pre-encoded body as it was sent (ASCII,
    /// zero-padded): the aggregator adds its tokens to the turn's counted ISL. `None` when none
    /// was, or when it is in `request_body`. Boxed: few requests have one, and every record
    /// in flight or in a ring would otherwise keep its 21 bytes and their padding (#41).
    pub marker: Option<Box<[u8; 20]>>,
    /// The HTTP trace stamps; `None` when no attempt began (the request could not be encoded).
    pub trace: Option<HttpTrace>,
    /// The final response head (status line and headers) exactly as received, kept only with
    /// `--export-http-trace` (its `response_reason` and `response_headers`); empty otherwise.
    /// A boxed slice, not a `Vec`: every record would keep a capacity's word for what only
    /// that option fills (#41).
    pub response_head: Box<[u8]>,
    /// The kernel's smoothed RTT of the request's connection as the response completed, µs
    /// (`TCP_INFO`, read only with `--network-latency-*`).
    pub tcp_rtt_us: Option<u32>,
    /// A child session's place in its session tree (agent traces); `None` for a root session.
    pub lineage: Option<Box<Lineage>>,
}

impl RawRecord {
    /// The bytes of one event's span: the raw message for [`EventForm::Raw`] and
    /// [`EventForm::Kept`], the extracted text otherwise.
    pub fn event_bytes(&self, e: &Event) -> &[u8] {
        let buf = match e.form {
            EventForm::Raw => &self.body,
            _ => &self.text,
        };
        buf.get(e.start as usize..e.end as usize).unwrap_or(&[])
    }

    /// The raw message of one event, when the record still holds it (not for an extracted
    /// event of a compact record).
    pub fn raw_event_bytes(&self, e: &Event) -> Option<&[u8]> {
        matches!(e.form, EventForm::Raw | EventForm::Kept).then(|| self.event_bytes(e))
    }
}

/// Token usage a server reported (`usage` of the last response that had one), normalized over
/// OpenAI / vLLM / Anthropic field names (docs/endpoints.md). Absent fields are `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    pub prompt_cache_read_tokens: Option<u64>,
    pub prompt_cache_write_tokens: Option<u64>,
    pub prompt_audio_tokens: Option<u64>,
    pub completion_audio_tokens: Option<u64>,
    pub accepted_prediction_tokens: Option<u64>,
    pub rejected_prediction_tokens: Option<u64>,
}

/// Everything the metrics need about one request, after the aggregator has parsed the response
/// and counted tokens. Stamps named `*_ns` without `wall` are monotonic ns of the run's
/// [`crate::clock::Clock`]; `*_wall_ns` are epoch ns.
#[derive(Clone, Debug)]
pub struct RecordFacts {
    pub phase: Phase,
    /// Request index within its phase (AIPerf `session_num`).
    pub session_num: u64,
    pub x_request_id: uuid::Uuid,
    pub x_correlation_id: uuid::Uuid,
    /// Dataset entry the request was built from.
    pub conversation_id: String,
    pub turn_index: u32,
    pub worker_id: u16,
    pub intended_ns: u64,
    pub start_ns: u64,
    pub head_ns: Option<u64>,
    pub end_ns: u64,
    pub credit_issued_wall_ns: u64,
    pub request_start_wall_ns: u64,
    pub request_ack_wall_ns: Option<u64>,
    pub request_end_wall_ns: u64,
    /// Stamps of the content responses (responses with data: text, reasoning or tool calls;
    /// never usage-only chunks or `[DONE]`), in order.
    pub content_stamps_ns: Vec<u64>,
    /// Stamp of the first content response that carried non-reasoning output.
    pub first_output_stamp_ns: Option<u64>,
    /// ISL (client tokenization of the wire payload, or usage with `--use-server-token-count`).
    pub input_tokens: Option<u64>,
    /// Output tokens, reasoning excluded.
    pub output_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    pub usage: Option<Usage>,
    /// `--per-chunk-usage`: the `completion_tokens` of the usage on the first content response
    /// that carried one (the tokens delivered up to it), which inter-token latency subtracts
    /// instead of 1; `None` without the flag or when no content response carried a usage.
    pub first_content_chunk_tokens: Option<u64>,
    /// `max_tokens` the request asked for, if any.
    pub requested_osl: Option<u64>,
    /// The turn's own trace timestamp (ms) when a fixed schedule sent it at an absolute time
    /// (AIPerf's `scheduled_send_ms`); `None` for a turn due after its predecessor's answer
    /// and outside fixed-schedule replay.
    pub scheduled_send_ms: Option<f64>,
    pub error: Option<Box<RequestError>>,
    pub was_cancelled: bool,
    pub conn_reused: bool,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// The HTTP trace of the request as AIPerf reads its trace data (a non-streamed body counts
    /// as one chunk received at its end); `None`: the record has no trace.
    pub trace: Option<HttpTrace>,
    /// Kernel-vs-user receive facts of the record's events.
    pub receive: ReceiveFacts,
    /// Length in seconds of the audio clip the request uploaded (`audio_transcription`), read
    /// from the clip's header before the run; `None` for a request without one.
    pub audio_seconds: Option<f64>,
    /// The images the request carried and the video figures its answer reported.
    pub media: MediaFacts,
    /// The server's speculative-decoding acceptance for the request (vLLM's
    /// `metrics.speculative_decoding`); `None` when it sent none, sent it on more than one
    /// response, or sent one that does not add up.
    pub spec_decode: Option<spec_decode::SpecDecode>,
    /// `(hits, total)` KV blocks of the turn's prompt an earlier request of its agent trace
    /// had already sent (`theoretical_prefix_cache_hit`); `None` outside agent traces.
    pub prefix_blocks: Option<(u32, u32)>,
    /// A child session's place in its session tree; `None` for a root session.
    pub lineage: Option<Box<Lineage>>,
    /// Where an agent trace's turn came from (AIPerf's `source_*` record keys).
    pub source: Option<crate::conversation::TurnSource>,
}

/// A child session's place in its session tree: how deep it is, and the correlation ids of the
/// session that started it and of the tree's root (AIPerf's `agent_depth`,
/// `parent_correlation_id`, `root_correlation_id`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lineage {
    pub depth: u8,
    /// The session that started it; `None` for a `dag_jsonl` pre-session child, which no
    /// session starts (AIPerf writes no `parent_correlation_id` then).
    pub parent: Option<uuid::Uuid>,
    pub root: uuid::Uuid,
}

/// What a request carried and its answer reported about media (docs/metrics.md, "Media").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MediaFacts {
    /// Image parts in the request body (AIPerf's `media_counts.images`).
    pub images: u32,
    /// The video job's server-reported generation time, seconds (`inference_time_s`).
    pub video_inference_time_s: Option<f64>,
    /// The video job's server-reported peak memory, MB (`peak_memory_mb`).
    pub video_peak_memory_mb: Option<f64>,
}

/// The client's receive lag and read coalescing of one record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceiveFacts {
    /// Receive lag (user-space stamp minus kernel stamp), ns, of every event whose read had a
    /// kernel stamp.
    pub lag_ns: Vec<u32>,
    /// Reads that completed more than one SSE message.
    pub coalesced_reads: u32,
    /// The kernel's smoothed RTT of the connection as the response completed, µs (see
    /// [`RawRecord::tcp_rtt_us`]).
    pub tcp_rtt_us: Option<u32>,
}

impl ReceiveFacts {
    /// The facts of `raw`'s events.
    #[must_use]
    pub fn of(raw: &RawRecord) -> Self {
        Self {
            lag_ns: raw.events.iter().filter_map(|e| e.lag_ns).collect(),
            coalesced_reads: raw.coalesced_reads,
            tcp_rtt_us: raw.tcp_rtt_us,
        }
    }
}

#[cfg(test)]
mod size_tests {
    /// A request's record is filled in its task for as long as the response takes, and every
    /// record waits in a ring for the aggregator: a failure's message is boxed, as few records
    /// have one (#41: 512 bytes with it inline), and so is a `--cache-bust` marker; a response
    /// head kept for `--export-http-trace` and a body built for the request are boxed slices
    /// (464 bytes with the marker inline and both `Vec`s).
    #[test]
    fn a_record_keeps_its_rare_error_boxed() {
        let size = std::mem::size_of::<super::RawRecord>();
        assert!(size <= 432, "a record is {size} bytes");
    }
}
