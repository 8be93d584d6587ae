//! Answering one completion request: deciding its length, pacing its events (TTFT before the
//! first token event, ITL between token events), writing each event with its own write, stamping
//! just before each write, and reporting to the metrics and the truth log.
//!
//! Pacing uses the thread's timer queue on io_uring (one timerfd for every stream of the thread,
//! read through the ring, microseconds late: `ringperf_io::timer::TimerQueue`), else the
//! connection's [`Timer`] (monoio's millisecond timer on epoll), always at an absolute raw `CLOCK_MONOTONIC` deadline:
//! token event k (from 0) at `arrival + ttft + k × itl`; a whole (non-streamed) response at
//! `arrival + ttft + (events - 1) × itl`. Deadlines are absolute, never counted from the
//! previous write (with a capacity, `arrival` here means when the request's slot came free): the
//! timer's wake-up lag (tens of µs) is paid once per event instead of being
//! summed over the stream, so the measured mean ITL is the configured one plus nothing that
//! grows with the length (a write that was late is followed by a shorter gap, as a server that
//! keeps its schedule would do). A deadline already passed waits on nothing at all (zero
//! delays never touch a timer).

use std::io;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use monoio::net::TcpStream;
use uuid::Uuid;

use super::apis;
use super::body::{Endpoint, RequestBody};
use super::fast::{FrameKey, Frames};
use super::fault::{self, Fault};
use super::metrics::Finished;
use super::misbehave;
use super::settings::OutputLen;
use super::tokens::reply_start;
use super::truth::TruthEntry;
use super::wire::{self, ChatDelta, Meta, TokenEvents, Usage, Words, send};
use super::worker::Worker;
use ringperf_io::timer::{self, Timer};
use ringperf_wire::clock::monotonic_raw_ns;

/// What the connection does after a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum After {
    /// The response is complete; read the next request.
    KeepAlive,
    /// The response is complete; the client asked to close.
    Close,
    /// A fault cut the response: close the connection.
    Cut,
    /// A fault ends the connection with a reset (RST).
    Reset,
}

impl After {
    fn done(close: bool) -> Self {
        if close {
            After::Close
        } else {
            After::KeepAlive
        }
    }
}

/// What the truth log keeps of a request beyond its timing, taken from the request before the
/// answer starts (all empty when the truth log is off).
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    /// The number of the connection the request came on (0 for the server's first).
    pub(crate) connection: u64,
    /// When the connection was accepted.
    pub(crate) connection_accepted_ns: u64,
    /// The `X-Correlation-ID` value.
    pub(crate) correlation_id: Option<String>,
    /// The whole body (`MockConfig::record_bodies`).
    pub(crate) request_body: Option<Arc<[u8]>>,
    /// Keep the reply text (`MockConfig::record_bodies`).
    pub(crate) reply_text: bool,
    /// The kernel's receive stamp of the read that completed the request, raw
    /// `CLOCK_MONOTONIC` ns (`None` where the kernel gave none).
    pub(crate) arrival_kernel_ns: Option<u64>,
    /// The images, audio and video the body carried, decoded.
    pub(crate) media: Vec<super::media::MediaSeen>,
}

/// Everything decided about a response before the first byte is written.
pub(crate) struct Completion {
    endpoint: Endpoint,
    stream: bool,
    include_usage: bool,
    /// Usage on every chunk (`stream_options.continuous_usage_stats`, chat and completions).
    continuous_usage: bool,
    prompt_tokens: u64,
    reasoning_tokens: u64,
    content_tokens: u64,
    /// The request's max tokens cut the output (`finish_reason: "length"`).
    capped: bool,
    /// Drafts a speculative step ([`super::MockConfig::spec_decode`]; 0: none reported).
    spec_k: u32,
    tokens_per_event: u64,
    /// Vectors or scores in an embeddings / rankings reply.
    items: u64,
    /// Where the reply's words start ([`reply_start`] of the seed and the body): reasoning
    /// takes words `0..reasoning_tokens`, the content the next `content_tokens`.
    word_start: u64,
    id: u64,
    created: u64,
    request_id: Option<Uuid>,
    recorded: Recorded,
    arrival_ns: u64,
    /// The wait for a service slot ([`super::MockConfig::capacity`]), ns: every deadline of
    /// the answer is this much later than without a capacity.
    queue_wait_ns: u64,
    fault: Option<Fault>,
}

/// Reasoning and content lengths after the max-tokens cap: reasoning first, then content.
/// Returns `(reasoning, content, capped)`; `capped` when the cap is at or below the wanted total.
pub(crate) fn apply_cap(reasoning: u64, content: u64, cap: Option<u64>) -> (u64, u64, bool) {
    let wanted = reasoning.saturating_add(content);
    match cap {
        Some(c) if c <= wanted => {
            let r = reasoning.min(c);
            (r, c - r, true)
        }
        _ => (reasoning, content, false),
    }
}

impl Completion {
    /// Plans the answer to a request whose body `raw` parsed into `body`.
    pub(crate) fn plan(
        worker: &Worker,
        endpoint: Endpoint,
        body: &RequestBody,
        raw: &[u8],
        request_id: Option<Uuid>,
        recorded: Recorded,
        arrival_ns: u64,
    ) -> Self {
        let cfg = &worker.shared.cfg;
        let mut rng = worker.rng.borrow_mut();
        let configured = match cfg.output_tokens {
            OutputLen::Fixed(n) => n,
            OutputLen::Uniform { min, max } => rng.uniform_inclusive(min, max),
        };
        let cap = if cfg.respect_max_tokens {
            body.max_tokens
        } else {
            None
        };
        let (reasoning_tokens, content_tokens, capped) = if endpoint.generates() {
            let reasoning = cfg.reasoning_tokens as u64;
            apply_cap(reasoning, configured, cap)
        } else {
            (0, 0, false)
        };
        // Drawn in this order (id, then fault), so a seed picks the same faulted requests as ever.
        let id = rng.next_u64();
        let fault = if cfg.faults.is_empty() {
            None
        } else {
            fault::choose(&cfg.faults, rng.next_u64())
        };
        let tokens_per_event = cfg.tokens_per_event.max(1) as u64;
        // A slot is taken only by an answer that generates and is not a fault.
        let queue_wait_ns = match &worker.shared.slots {
            Some(slots) if endpoint.generates() && fault.is_none() => {
                let events = reasoning_tokens.div_ceil(tokens_per_event)
                    + content_tokens.div_ceil(tokens_per_event);
                let gaps = u32::try_from(events.saturating_sub(1)).unwrap_or(u32::MAX);
                slots.admit(
                    arrival_ns,
                    cfg.ttft.saturating_add(cfg.itl.saturating_mul(gaps)),
                )
            }
            _ => 0,
        };
        let stream = match endpoint {
            Endpoint::GenerateStream => true,
            Endpoint::Chat
            | Endpoint::Completions
            | Endpoint::Responses
            | Endpoint::Messages
            | Endpoint::ImageGenerations
            | Endpoint::SolidoRag => body.stream,
            _ => false,
        };
        Self {
            endpoint,
            stream,
            items: body.items,
            include_usage: body.include_usage,
            continuous_usage: body.continuous_usage
                && matches!(endpoint, Endpoint::Chat | Endpoint::Completions),
            prompt_tokens: body.prompt_words,
            reasoning_tokens,
            content_tokens,
            capped,
            spec_k: cfg.spec_decode,
            tokens_per_event,
            // The fast mode's bytes are shared by every body: its words start where an empty
            // body's do.
            word_start: reply_start(cfg.seed, if cfg.fast { &[] } else { raw }),
            id,
            fault,
            queue_wait_ns,
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            request_id,
            recorded,
            arrival_ns,
        }
    }

    /// The reasoning words (streamed first) and the content words of the reply.
    fn words(&self) -> (Words, Words) {
        let reasoning = Words {
            start: self.word_start,
            from: 0,
            count: self.reasoning_tokens,
        };
        let content = Words {
            start: self.word_start,
            from: self.reasoning_tokens,
            count: self.content_tokens,
        };
        (reasoning, content)
    }

    /// A buffer for the reply text when the truth log keeps it.
    fn reply_buffer(&self) -> Option<String> {
        self.recorded.reply_text.then(String::new)
    }

    fn finish_reason(&self) -> &'static str {
        if self.capped { "length" } else { "stop" }
    }

    fn usage(&self) -> Usage {
        Usage {
            prompt: self.prompt_tokens,
            reasoning: self.reasoning_tokens,
            content: self.content_tokens,
            spec_k: self.spec_k,
        }
    }

    /// The usage after the first `sent` generated tokens (reasoning first, then content): what
    /// a chunk carries with `continuous_usage`.
    fn usage_after(&self, sent: u64) -> Usage {
        let reasoning = sent.min(self.reasoning_tokens);
        Usage {
            prompt: self.prompt_tokens,
            reasoning,
            content: sent.saturating_sub(reasoning).min(self.content_tokens),
            spec_k: 0,
        }
    }

    /// When service starts: on arrival, or after the wait for a slot.
    fn start_ns(&self) -> u64 {
        self.arrival_ns.saturating_add(self.queue_wait_ns)
    }

    fn events(&self, tokens: u64) -> u64 {
        tokens.div_ceil(self.tokens_per_event)
    }

    /// Sends the response (or the request's fault), pacing it with the connection's `timer`.
    /// `Err` means the connection is unusable (the client went away).
    pub(crate) async fn run(
        mut self,
        worker: &Worker,
        stream: &mut TcpStream,
        wbuf: &mut Vec<u8>,
        ev: &mut Vec<u8>,
        timer: &mut Timer,
        close: bool,
    ) -> io::Result<After> {
        let metrics = worker.shared.metrics.get(worker.index);
        let kv = self.prompt_tokens + self.reasoning_tokens + self.content_tokens;
        if let Some(m) = metrics {
            m.admit(kv);
        }
        let mut truth = TruthEntry {
            request_id: self.request_id,
            connection: self.recorded.connection,
            connection_accepted_ns: self.recorded.connection_accepted_ns,
            correlation_id: self.recorded.correlation_id.take(),
            request_body: self.recorded.request_body.take(),
            reply_text: None,
            response_id: self.id,
            path: self.endpoint.path(),
            stream: self.stream,
            items: self.items,
            arrival_ns: self.arrival_ns,
            arrival_kernel_ns: self.recorded.arrival_kernel_ns,
            head_ns: 0,
            event_ns: Vec::new(),
            end_ns: 0,
            content_tokens: self.content_tokens,
            reasoning_tokens: self.reasoning_tokens,
            tokens_per_event: self.tokens_per_event,
            prompt_tokens: self.prompt_tokens,
            completed: false,
            fault: self.fault,
            queue_wait_ns: self.queue_wait_ns,
            media: std::mem::take(&mut self.recorded.media),
        };
        let result = match self.fault {
            Some(Fault::ResetBeforeResponse) => Ok(After::Reset),
            Some(Fault::NeverAnswer) => {
                misbehave::drain_until_closed(stream).await;
                Ok(After::Cut)
            }
            Some(Fault::Status(code)) => {
                misbehave::status_response(wbuf, code, close);
                let now = monotonic_raw_ns();
                truth.head_ns = now;
                truth.end_ns = now;
                send(stream, wbuf).await.map(|()| After::done(close))
            }
            Some(Fault::Huge { bytes }) => {
                self.run_huge(worker, stream, wbuf, ev, timer, close, bytes, &mut truth)
                    .await
            }
            Some(Fault::GarbageSse | Fault::SseErrorEvent) => {
                self.run_stream(worker, stream, wbuf, ev, timer, close, &mut truth)
                    .await
            }
            None if self.stream
                && worker.shared.cfg.fast
                && !self.continuous_usage
                && matches!(self.endpoint, Endpoint::Chat | Endpoint::Completions) =>
            {
                self.run_fast(worker, stream, wbuf, ev, timer, close, &mut truth)
                    .await
            }
            _ if self.stream => {
                self.run_stream(worker, stream, wbuf, ev, timer, close, &mut truth)
                    .await
            }
            _ => {
                self.run_whole(worker, stream, wbuf, ev, timer, close, &mut truth)
                    .await
            }
        };
        let completed = matches!(result, Ok(After::KeepAlive | After::Close));
        if let Some(m) = metrics {
            m.release(kv);
            if completed && self.fault.is_none_or(Fault::serves_completion) {
                m.finish(&Finished {
                    prompt_tokens: self.prompt_tokens,
                    generated_tokens: self.reasoning_tokens + self.content_tokens,
                    capped: self.capped,
                    arrival_ns: self.arrival_ns,
                    event_ns: &truth.event_ns,
                    end_ns: truth.end_ns,
                });
            }
        }
        truth.completed = completed;
        worker.shared.truth.record(worker.index, truth);
        result
    }

    /// Writes `wbuf` whole (a byte at a time for [`Fault::SlowLoris`]) and hands it back cleared.
    async fn out(&self, stream: &mut TcpStream, wbuf: &mut Vec<u8>) -> io::Result<()> {
        if self.fault == Some(Fault::SlowLoris) {
            misbehave::trickle(stream, wbuf).await
        } else {
            send(stream, wbuf).await
        }
    }

    /// What a fault does at its point in a stream (after half of the token events). `Some` ends
    /// the response there.
    async fn stream_fault_point(
        &self,
        stream: &mut TcpStream,
        wbuf: &mut Vec<u8>,
        ev: &mut Vec<u8>,
        close: bool,
        pending: &mut Pending,
        truth: &mut TruthEntry,
    ) -> io::Result<Option<After>> {
        match self.fault {
            Some(Fault::ResetMidStream) => {
                pending.flush(self, stream, wbuf, truth).await?;
                Ok(Some(After::Reset))
            }
            Some(Fault::BadChunkSize) => {
                misbehave::bad_chunk(wbuf);
                pending.flush(self, stream, wbuf, truth).await?;
                Ok(Some(After::Cut))
            }
            Some(Fault::SseErrorEvent) => {
                misbehave::error_event_chunk(wbuf);
                wire::sse_done(ev);
                wire::chunk(wbuf, ev);
                ev.clear();
                wire::last_chunk(wbuf);
                truth.end_ns = pending.flush(self, stream, wbuf, truth).await?;
                Ok(Some(After::done(close)))
            }
            _ => Ok(None),
        }
    }

    async fn run_stream(
        &self,
        worker: &Worker,
        stream: &mut TcpStream,
        wbuf: &mut Vec<u8>,
        ev: &mut Vec<u8>,
        timer: &mut Timer,
        close: bool,
        truth: &mut TruthEntry,
    ) -> io::Result<After> {
        let cfg = &worker.shared.cfg;
        let meta = Meta {
            id: self.id,
            created: self.created,
            model_json: &worker.shared.model_json,
        };
        let garbage = self.fault == Some(Fault::GarbageSse);
        // Bytes are written when the next event has to wait (or at the end), so events that share
        // an intended time share a write and events with different times never do. Each write is
        // stamped just before it goes; the stamp applies to everything in it.
        let mut pending = Pending {
            head: true,
            events: 0,
        };
        self.stream_opening(wbuf, ev, &meta, close, garbage);
        // The reply text grows with each content event put in the buffer.
        truth.reply_text = self.reply_buffer();
        let total_events = self.events(self.reasoning_tokens) + self.events(self.content_tokens);
        truth.event_ns.reserve_exact(total_events as usize);
        let fault_at = fault_point(total_events);
        if fault_at == 0
            && let Some(after) = self
                .stream_fault_point(stream, wbuf, ev, close, &mut pending, truth)
                .await?
        {
            return Ok(after);
        }
        let first_deadline = timer::after(self.start_ns(), cfg.ttft);
        let mut events = 0u64;
        // Each channel's encoder is made when its first event comes (most replies have no
        // reasoning tokens).
        let mut encoders: [Option<TokenEvents>; 2] = [None, None];
        for (reasoning, words) in self.event_words() {
            let enc = encoders[usize::from(!reasoning)]
                .get_or_insert_with(|| self.token_events(&meta, reasoning));
            // The client's text: what is not sent on a reasoning channel.
            let is_text = !(self.endpoint.has_reasoning() && reasoning);
            let must_wait = if events == 0 {
                first_deadline > monotonic_raw_ns()
            } else {
                !cfg.itl.is_zero()
            };
            if must_wait {
                // What is pending (the head, or the previous event) goes now; the next gap is
                // counted from this write's stamp.
                pending.flush(self, stream, wbuf, truth).await?;
                // Absolute: token event k is due at arrival + ttft + k × itl, so the timer's
                // wake-up lag is paid once, never summed over the stream.
                let gaps = u32::try_from(events).unwrap_or(u32::MAX);
                let due = timer::after(first_deadline, cfg.itl.saturating_mul(gaps));
                worker.sleep_until(timer, due).await;
            }
            if self.continuous_usage {
                // The count of tokens generated so far.
                enc.write_event(ev, words);
                wire::add_usage(ev, self.usage_after(words.from + words.count));
                wire::chunk(wbuf, ev);
                ev.clear();
            } else {
                enc.push_chunk(wbuf, words);
            }
            if is_text && let Some(text) = truth.reply_text.as_mut() {
                words.push_to(text);
            }
            pending.events += 1;
            events += 1;
            if garbage {
                misbehave::garbage_chunk(wbuf, events);
            }
            if events == fault_at
                && let Some(after) = self
                    .stream_fault_point(stream, wbuf, ev, close, &mut pending, truth)
                    .await?
            {
                return Ok(after);
            }
        }
        // The finish event, usage and [DONE] are due with the last token event.
        self.stream_closing(wbuf, ev, &meta);
        wire::last_chunk(wbuf);
        truth.end_ns = pending.flush(self, stream, wbuf, truth).await?;
        Ok(After::done(close))
    }

    /// A stream in the fast mode (`MockConfig::fast`): the same events at the same deadlines
    /// and writes as [`Completion::run_stream`], copied from the thread's frames of this shape.
    async fn run_fast(
        &self,
        worker: &Worker,
        stream: &mut TcpStream,
        wbuf: &mut Vec<u8>,
        ev: &mut Vec<u8>,
        timer: &mut Timer,
        close: bool,
        truth: &mut TruthEntry,
    ) -> io::Result<After> {
        let cfg = &worker.shared.cfg;
        let key = FrameKey {
            endpoint: self.endpoint as u8,
            reasoning_tokens: self.reasoning_tokens,
            content_tokens: self.content_tokens,
            tokens_per_event: self.tokens_per_event,
            close,
        };
        let frames = worker
            .frames
            .get_or_build(key, || self.build_frames(worker, close));
        let mut pending = Pending {
            head: true,
            events: 0,
        };
        wbuf.extend_from_slice(frames.opening());
        truth.reply_text = self.reply_buffer().map(|_| frames.text.clone());
        let total = frames.count();
        truth.event_ns.reserve_exact(total);
        let first_deadline = timer::after(self.start_ns(), cfg.ttft);
        let mut k = 0usize;
        while k < total {
            let due = timer::after(
                first_deadline,
                cfg.itl.saturating_mul(u32::try_from(k).unwrap_or(u32::MAX)),
            );
            // As `run_stream`: with an ITL every event has its own write; the first waits for
            // its deadline only if that has not passed.
            if (k > 0 && !cfg.itl.is_zero()) || due > monotonic_raw_ns() {
                pending.flush(self, stream, wbuf, truth).await?;
                worker.sleep_until(timer, due).await;
            }
            // Events due at the same instant (no ITL) share a write.
            let to = if cfg.itl.is_zero() { total } else { k + 1 };
            wbuf.extend_from_slice(frames.events(k, to));
            pending.events += to - k;
            k = to;
        }
        let meta = Meta {
            id: 0,
            created: frames.created,
            model_json: &worker.shared.model_json,
        };
        self.stream_closing(wbuf, ev, &meta);
        wire::last_chunk(wbuf);
        truth.end_ns = pending.flush(self, stream, wbuf, truth).await?;
        Ok(After::done(close))
    }

    /// The reply's token events in order, reasoning first: whether each is on the reasoning
    /// channel, and its words (`tokens_per_event` of them, the last of each run fewer). The one
    /// token loop of both stream modes ([`Completion::run_stream`], [`Completion::build_frames`]).
    fn event_words(&self) -> impl Iterator<Item = (bool, Words)> + '_ {
        let (reasoning_words, content_words) = self.words();
        let per = self.tokens_per_event.max(1);
        [(true, reasoning_words), (false, content_words)]
            .into_iter()
            .flat_map(move |(reasoning, run)| {
                let end = run.from + run.count;
                std::iter::successors(Some(run.from), move |&from| Some(from + per))
                    .take_while(move |&from| from < end)
                    .map(move |from| {
                        let words = Words {
                            start: self.word_start,
                            from,
                            count: per.min(end - from),
                        };
                        (reasoning, words)
                    })
            })
    }

    /// The fast mode's bytes of a stream of this shape: the opening, then each token event
    /// framed as an HTTP chunk (id 0, `created` now).
    fn build_frames(&self, worker: &Worker, close: bool) -> Frames {
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let meta = Meta {
            id: 0,
            created,
            model_json: &worker.shared.model_json,
        };
        let (mut bytes, mut ev) = (Vec::new(), Vec::new());
        self.stream_opening(&mut bytes, &mut ev, &meta, close, false);
        let mut events = vec![bytes.len()];
        let mut text = String::new();
        let mut encoders: [Option<TokenEvents>; 2] = [None, None];
        for (reasoning, words) in self.event_words() {
            encoders[usize::from(!reasoning)]
                .get_or_insert_with(|| self.token_events(&meta, reasoning))
                .push_chunk(&mut bytes, words);
            if !(self.endpoint.has_reasoning() && reasoning) {
                words.push_to(&mut text);
            }
            events.push(bytes.len());
        }
        Frames {
            created,
            bytes,
            events,
            text,
        }
    }

    /// A stream's head and (chat) role chunk or (other APIs) opening events, due at once as vLLM
    /// sends them; a garbage chunk after them for [`Fault::GarbageSse`].
    #[inline]
    fn stream_opening(
        &self,
        wbuf: &mut Vec<u8>,
        ev: &mut Vec<u8>,
        meta: &Meta<'_>,
        close: bool,
        garbage: bool,
    ) {
        wire::stream_head(wbuf, close);
        if self.endpoint == Endpoint::Chat {
            wire::sse_chat(ev, meta, ChatDelta::Role);
            if self.continuous_usage {
                wire::add_usage(ev, self.usage_after(0));
            }
        } else if !matches!(self.endpoint, Endpoint::Chat | Endpoint::Completions) {
            apis::stream_opening(self.endpoint, ev, meta, self.usage());
        }
        if !ev.is_empty() {
            wire::chunk(wbuf, ev);
            ev.clear();
        }
        if garbage {
            misbehave::garbage_chunk(wbuf, 0);
        }
    }

    /// The encoder of the reasoning (`reasoning`) or content token events.
    #[inline]
    fn token_events(&self, meta: &Meta<'_>, reasoning: bool) -> TokenEvents {
        match (self.endpoint, reasoning) {
            (Endpoint::Chat, true) => TokenEvents::chat(meta, "reasoning_content"),
            (Endpoint::Chat, false) => TokenEvents::chat(meta, "content"),
            // The completions API has no reasoning field: reasoning goes out as text.
            (Endpoint::Completions, _) => TokenEvents::completion(meta),
            (other, _) => apis::token_events(other, meta, self.usage(), reasoning),
        }
    }

    /// A stream's closing chunks after its last token event (the finish event, usage and
    /// `[DONE]` for the OpenAI APIs; the API's own closing events otherwise), before the last
    /// chunk.
    #[inline]
    fn stream_closing(&self, wbuf: &mut Vec<u8>, ev: &mut Vec<u8>, meta: &Meta<'_>) {
        let chat = self.endpoint == Endpoint::Chat;
        if !matches!(self.endpoint, Endpoint::Chat | Endpoint::Completions) {
            let (reasoning, content) = self.words();
            apis::stream_closing(
                self.endpoint,
                ev,
                meta,
                self.capped,
                self.usage(),
                reasoning,
                content,
                self.items,
            );
            if !ev.is_empty() {
                wire::chunk(wbuf, ev);
                ev.clear();
            }
            return;
        }
        if chat {
            wire::sse_chat(ev, meta, ChatDelta::Finish(self.finish_reason()));
        } else {
            wire::sse_completion(ev, meta, None, Some(self.finish_reason()));
        }
        if self.continuous_usage {
            wire::add_usage(ev, self.usage());
        }
        wire::chunk(wbuf, ev);
        ev.clear();
        if self.include_usage {
            wire::sse_usage(ev, meta, chat, self.usage());
            wire::chunk(wbuf, ev);
            ev.clear();
        }
        wire::sse_done(ev);
        wire::chunk(wbuf, ev);
        ev.clear();
    }

    async fn run_whole(
        &self,
        worker: &Worker,
        stream: &mut TcpStream,
        wbuf: &mut Vec<u8>,
        ev: &mut Vec<u8>,
        timer: &mut Timer,
        close: bool,
        truth: &mut TruthEntry,
    ) -> io::Result<After> {
        self.whole_body(worker, ev, timer).await;
        if !matches!(
            self.fault,
            Some(Fault::ResetMidStream | Fault::BadChunkSize)
        ) {
            truth.reply_text = self.whole_text();
        }
        let half = ev.len() / 2;
        match self.fault {
            Some(Fault::ResetMidStream) => {
                wire::head(wbuf, 200, "application/json", ev.len(), close);
                wbuf.extend_from_slice(ev.get(..half).unwrap_or_default());
            }
            Some(Fault::BadChunkSize) => {
                misbehave::chunked_head(wbuf, "application/json", close);
                wire::chunk(wbuf, ev.get(..half).unwrap_or_default());
                misbehave::bad_chunk(wbuf);
            }
            _ => {
                wire::head(wbuf, 200, "application/json", ev.len(), close);
                wbuf.extend_from_slice(ev);
            }
        }
        ev.clear();
        let now = monotonic_raw_ns();
        truth.head_ns = now;
        truth.event_ns.push(now);
        truth.end_ns = now;
        self.out(stream, wbuf).await?;
        Ok(match self.fault {
            Some(Fault::ResetMidStream) => After::Reset,
            Some(Fault::BadChunkSize) => After::Cut,
            _ => After::done(close),
        })
    }

    /// A [`Fault::Huge`] response: the whole body, padded to `bytes`.
    #[allow(clippy::too_many_arguments)]
    async fn run_huge(
        &self,
        worker: &Worker,
        stream: &mut TcpStream,
        wbuf: &mut Vec<u8>,
        ev: &mut Vec<u8>,
        timer: &mut Timer,
        close: bool,
        bytes: u64,
        truth: &mut TruthEntry,
    ) -> io::Result<After> {
        self.whole_body(worker, ev, timer).await;
        truth.reply_text = self.whole_text();
        let mut stamps = Vec::with_capacity(2);
        let sent = misbehave::send_huge(stream, wbuf, ev, bytes, close, || {
            stamps.push(monotonic_raw_ns());
        })
        .await;
        ev.clear();
        if let (Some(&first), Some(&last)) = (stamps.first(), stamps.last()) {
            truth.head_ns = first;
            truth.event_ns.push(first);
            truth.end_ns = last;
        }
        sent.map(|()| After::done(close))
    }

    /// Waits until the whole (non-streamed) response is due and writes its body into `ev`.
    async fn whole_body(&self, worker: &Worker, ev: &mut Vec<u8>, timer: &mut Timer) {
        let cfg = &worker.shared.cfg;
        // Ready when the last token would have been streamed.
        let events = self.events(self.reasoning_tokens) + self.events(self.content_tokens);
        let gaps = u32::try_from(events.saturating_sub(1)).unwrap_or(u32::MAX);
        let due = timer::after(
            self.start_ns(),
            cfg.ttft.saturating_add(cfg.itl.saturating_mul(gaps)),
        );
        worker.sleep_until(timer, due).await;
        let meta = Meta {
            id: self.id,
            created: self.created,
            model_json: &worker.shared.model_json,
        };
        let (reasoning, content) = self.words();
        match self.endpoint {
            Endpoint::Chat => wire::chat_body(
                ev,
                &meta,
                reasoning,
                content,
                self.finish_reason(),
                self.usage(),
            ),
            Endpoint::Completions => wire::completion_body(
                ev,
                &meta,
                self.all_words(),
                self.finish_reason(),
                self.usage(),
            ),
            other => apis::whole_body(
                other,
                ev,
                &meta,
                self.capped,
                self.usage(),
                self.words(),
                self.items,
            ),
        }
    }

    /// Reasoning and content as one run (what a completion's `text` carries).
    fn all_words(&self) -> Words {
        Words {
            start: self.word_start,
            from: 0,
            count: self.reasoning_tokens + self.content_tokens,
        }
    }

    /// The text of a whole (non-streamed) body, when the truth log keeps it: `message.content`
    /// for chat, `text` for completions.
    fn whole_text(&self) -> Option<String> {
        let mut text = self.reply_buffer()?;
        if self.endpoint.has_reasoning() {
            self.words().1.push_to(&mut text);
        } else {
            self.all_words().push_to(&mut text);
        }
        Some(text)
    }
}

/// After how many of a stream's `total_events` token events a fault acts: half of them (at
/// least one); with none, 0 (before the end).
#[inline]
fn fault_point(total_events: u64) -> u64 {
    if total_events == 0 {
        0
    } else {
        (total_events / 2).max(1)
    }
}

/// What the write buffer holds that has not been written yet.
struct Pending {
    /// The response head is in it.
    head: bool,
    /// This many token events are in it.
    events: usize,
}

impl Pending {
    /// Stamps, writes the buffer, and files the stamp for everything that was in it. Returns the
    /// stamp.
    async fn flush(
        &mut self,
        completion: &Completion,
        stream: &mut TcpStream,
        wbuf: &mut Vec<u8>,
        truth: &mut TruthEntry,
    ) -> io::Result<u64> {
        let now = monotonic_raw_ns();
        if self.head {
            truth.head_ns = now;
            self.head = false;
        }
        truth.event_ns.extend(std::iter::repeat_n(now, self.events));
        self.events = 0;
        completion.out(stream, wbuf).await?;
        Ok(now)
    }
}

#[cfg(test)]
mod tests {
    use super::apply_cap;

    #[test]
    fn cap_takes_reasoning_first_then_content() {
        assert_eq!(apply_cap(0, 10, None), (0, 10, false));
        assert_eq!(apply_cap(0, 10, Some(11)), (0, 10, false));
        assert_eq!(apply_cap(0, 10, Some(10)), (0, 10, true));
        assert_eq!(apply_cap(0, 10, Some(4)), (0, 4, true));
        assert_eq!(apply_cap(3, 10, Some(5)), (3, 2, true));
        assert_eq!(apply_cap(8, 10, Some(5)), (5, 0, true));
        assert_eq!(apply_cap(2, 3, Some(0)), (0, 0, true));
    }
}
