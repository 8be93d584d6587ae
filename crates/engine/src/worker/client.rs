//! The one request loop: take a credit, write the pre-encoded request, read and stamp every
//! read before parsing it, frame HTTP and SSE, and hand one [`RawRecord`] back — success or
//! failure. Every mode (closed loop, open loop, fixed schedule, warmup) sends through [`send`],
//! a turn of a session at a time (`super::session`).

use std::rc::Rc;
use std::time::Duration;

use ringperf_io::net::{self, AfterHead, Cut, Exchange, Limits, ReadStamp, Sink};
use ringperf_wire::endpoint::kinds::Compactor;
use ringperf_wire::http::{EncodedRequest, Head};
use ringperf_wire::record::{Credit, Event, EventForm, HttpTrace, RawRecord, RequestError};
use ringperf_wire::sse::Framer;
use ringperf_workload::workload::cache_bust::Marker;

use super::{Shared, WorkerState};

/// Initial read buffer of a connection (it grows only while a large response head is partial).
pub(super) const READ_BUF_BYTES: usize = 16 * 1024;

/// The encoded request a turn sends: its pre-encoded one, borrowed from the run; or one made
/// for this turn (a body carrying history, or a streamed replay's), owned by the request's
/// future while it runs, so that no step above it keeps an owner beside it (#41).
pub(crate) enum Request<'a> {
    Shared(&'a EncodedRequest),
    Built(Box<EncodedRequest>),
}

impl Request<'_> {
    pub(crate) fn get(&self) -> &EncodedRequest {
        match self {
            Request::Shared(r) => r,
            Request::Built(r) => r,
        }
    }
}

/// One request to send: its credit, its encoded bytes, the session's correlation id and URL,
/// and the connection pool it goes through (a sticky session's own, or the worker's).
pub(crate) struct Outgoing<'a> {
    pub credit: Credit,
    pub request: Request<'a>,
    pub correlation_id: uuid::Uuid,
    pub url: usize,
    /// A sticky session's own pool; `None`: the worker's.
    pub pool: Option<&'a ringperf_io::net::Pool>,
    /// The body, when it was built for this request (a turn carrying history): the aggregator
    /// counts its ISL from it.
    pub request_body: Option<Vec<u8>>,
    /// A prefill slot this request holds, given back at its first content response or its end.
    pub prefill: Option<&'a super::prefill::PrefillGate>,
    /// `--cache-bust`: the marker to splice into the pre-encoded body at this body offset.
    pub splice: Option<(usize, Marker)>,
}

/// A record for a request whose body could not be encoded (its history made an invalid
/// request): a failure like any other, never a panic.
pub(crate) fn unsendable(
    shared: &Shared,
    state: &WorkerState,
    credit: Credit,
    e: &ringperf_wire::http::HttpError,
) -> RawRecord {
    unprepared(
        shared,
        state,
        credit,
        format!("cannot encode the request: {e}"),
    )
}

/// The record of a request that was never sent because it could not be made: `why`.
pub(crate) fn unprepared(
    shared: &Shared,
    state: &WorkerState,
    credit: Credit,
    why: String,
) -> RawRecord {
    let now = shared.clock.now_ns();
    let mut rec = empty_record(state, credit, 0, uuid::Uuid::nil());
    rec.start_ns = now;
    rec.end_ns = now;
    rec.error = Some(Box::new(RequestError::new(
        None,
        "RequestEncodingError",
        why,
    )));
    rec
}

fn empty_record(
    state: &WorkerState,
    credit: Credit,
    url: usize,
    correlation_id: uuid::Uuid,
) -> RawRecord {
    RawRecord {
        credit,
        worker_id: state.id,
        url_index: url as u16,
        request_id: state.new_id(),
        correlation_id,
        start_ns: 0,
        head_ns: None,
        end_ns: 0,
        status: 0,
        is_sse: false,
        body: Vec::new(),
        text: Vec::new(),
        events: Vec::new(),
        coalesced_reads: 0,
        error: None,
        conn_reused: false,
        bytes_sent: 0,
        bytes_received: 0,
        was_cancelled: false,
        request_body: None,
        marker: None,
        trace: None,
        response_head: Box::default(),
        tcp_rtt_us: None,
        lineage: None,
    }
}

/// The bounds of a worker's requests: the attempt's (`--request-timeout-seconds`) and the
/// largest body; no connect or read bound of their own.
pub(crate) fn limits(shared: &Shared) -> Limits {
    Limits {
        connect_timeout: None,
        read_timeout: None,
        attempt_timeout: Some(shared.request_timeout),
        max_body_bytes: shared.max_body_bytes,
    }
}

/// Performs one request and returns its record, retrying once on a fresh connection when a
/// kept-alive connection turns out to be closed before any response byte arrived.
///
/// The request is taken apart before the future is made, and the future is an `async` block
/// that keeps only what it captures: an `async fn` keeps its arguments (the request, 168 bytes)
/// beside the locals made of them for as long as the response takes (#41).
pub(crate) fn send<'a>(
    shared: &'a Shared,
    state: &'a Rc<WorkerState>,
    out: Outgoing<'a>,
    hard_deadline_ns: Option<u64>,
) -> impl std::future::Future<Output = Box<RawRecord>> + 'a {
    let Outgoing {
        credit,
        request,
        correlation_id,
        url,
        pool,
        request_body,
        prefill,
        splice,
    } = out;
    let mut rec = empty_record(state, credit, url, correlation_id);
    rec.request_body = request_body.map(Vec::into_boxed_slice);
    // Boxed: a request without a `--cache-bust` marker keeps a word for it, not 40 bytes.
    let splice = splice.map(Box::new);
    // It borrows the address, clock and limits it is given: they are kept once per run or
    // worker, not in every in-flight request.
    let exchange = Exchange {
        addr: &shared.urls[url],
        tls: shared.tls.get(url).and_then(Option::as_ref),
        pool: pool.unwrap_or(&state.pool),
        slot: url,
        reuse: pool.is_some() || state.pool_enabled,
        head_request: false,
        clock: &shared.clock,
        kernel_stamps: shared.kernel_stamps,
        tcp_info: shared.tcp_info,
        limits: &state.limits,
        deadline_ns: hard_deadline_ns,
        cancel_after_sent: credit.cancel_after_ns.map(Duration::from_nanos),
        cut: Some(Cut {
            control: &shared.control,
            open_fds: &state.open_fds,
        }),
    };
    // Made here, not in the block: the block keeps the exchange and the recorder (which owns
    // the record being filled), not the parts they are made of (the URL's index and the
    // deadline are read from the exchange, not captured again).
    let mut recorder = Recorder {
        request,
        splice,
        state,
        framer: Framer::default(),
        rec,
        read_lag_ns: 0,
        has_read_lag: false,
        keep_head: shared.http_trace,
        compact: if shared.compact_records {
            shared.kind.descriptor().compact
        } else {
            None
        },
        dropped: 0,
        prefill: prefill.map(|gate| {
            Box::new(Prefill {
                gate,
                kind: shared.kind,
                scratch: ringperf_wire::endpoint::ParsedResponse::with_response_field(
                    shared.response_field.clone(),
                ),
            })
        }),
    };
    async move {
        // The outcome is settled in a function of its own: the exchange's result is not kept
        // beside the exchange's future (a taken-apart `Result` keeps its room, #41).
        let result = exchange.run(&mut recorder).await;
        settle(shared, &exchange, &mut recorder, result);
        let rec = &mut recorder.rec;
        if rec.error.is_none()
            && shared.kind == ringperf_wire::endpoint::EndpointKind::VideoGeneration
        {
            let failures = super::video_job::Failures {
                cut,
                cancelled: cancelled_error,
                request: request_error,
            };
            // Boxed: only video jobs follow up, and the follow-up's future (~4 KiB) would otherwise
            // be reserved in every in-flight request's.
            Box::pin(super::video_job::follow(
                shared,
                recorder.state,
                rec,
                exchange.slot,
                // The exchange's own (a word fewer kept by every request's future than the
                // session's pool as given).
                (exchange.pool, exchange.reuse),
                exchange.deadline_ns,
                failures,
            ))
            .await;
        }
        // Boxed: a caller that awaits a record by value keeps room for it from the start of
        // the request.
        Box::new(recorder.rec)
    }
}

/// The record's outcome once its exchange ended with `result`: the prefill slot given back,
/// the failure (or the cut) recorded, the end and start stamps of a request that never got
/// as far as writing, an HTTP error's status and body.
fn settle(
    shared: &Shared,
    exchange: &Exchange<'_>,
    recorder: &mut Recorder<'_>,
    result: Result<(), net::Error>,
) {
    if let Some(p) = recorder.prefill.take() {
        p.gate.release();
    }
    let rec = &mut recorder.rec;
    if let Err(e) = result {
        rec.error = Some(Box::new(match e {
            net::Error::TimedOut if cut(shared, exchange.deadline_ns) => {
                rec.was_cancelled = true;
                cancelled_error()
            }
            net::Error::Cancelled => {
                rec.was_cancelled = true;
                request_error(shared, e, exchange.slot)
            }
            e => request_error(shared, e, exchange.slot),
        }));
    }
    if rec.error.is_some() && !rec.was_cancelled && cut(shared, exchange.deadline_ns) {
        // The failure is the cut itself (the socket was shut down at the deadline).
        rec.was_cancelled = true;
        rec.error = Some(Box::new(cancelled_error()));
    }
    if rec.end_ns == 0 {
        rec.end_ns = shared.clock.now_ns();
    }
    if rec.start_ns == 0 {
        // Never got as far as writing (connect failed or timed out): the attempt began now-ish.
        rec.start_ns = rec.end_ns;
    }
    if rec.error.is_none() && !(200..300).contains(&rec.status) {
        rec.error = Some(Box::new(RequestError::new(
            Some(rec.status),
            recorder.state.take_reason(),
            String::from_utf8_lossy(&rec.body).into_owned(),
        )));
    }
}

/// An exchange failure in AIPerf's error shape (aiohttp's exception names). A failure of the
/// connection (connect, reset, early close, a broken or cut body) names the request's URL
/// (`scheme://host:port/path`, of base URL `url`); a TLS failure names its base URL itself.
fn request_error(shared: &Shared, e: net::Error, url: usize) -> RequestError {
    use net::Error as E;
    let at = shared
        .request_urls
        .get(url)
        .map_or("the server", String::as_str);
    match e {
        E::Connect(e) => RequestError::new(
            None,
            "ClientConnectorError",
            format!("cannot connect to {at}: {e}"),
        ),
        // aiohttp's names: a refused certificate, or another TLS failure while connecting.
        E::Tls(e) if e.is_certificate() => {
            RequestError::new(None, "ClientConnectorCertificateError", e.to_string())
        }
        E::Tls(e) => RequestError::new(None, "ClientConnectorSSLError", e.to_string()),
        // No response byte yet: the connection failed, not the payload (aiohttp's
        // ClientOSError, e.g. a reset right after the request was sent).
        E::Write(e)
        | E::Read {
            error: e,
            received: false,
        } => RequestError::new(None, "ClientOSError", format!("{at}: {e}")),
        E::Read { error: e, .. } => {
            RequestError::new(None, "ClientPayloadError", format!("{at}: {e}"))
        }
        E::Closed { .. } => RequestError::new(
            None,
            "ServerDisconnectedError",
            format!("{at}: Server disconnected before the response head was complete"),
        ),
        // A malformed or oversized response head.
        E::Head(e) => RequestError::new(None, "ClientResponseError", format!("{at}: {e}")),
        // A body that breaks its framing, ends early or exceeds the limit.
        E::Body(e) => RequestError::new(None, "ClientPayloadError", format!("{at}: {e}")),
        E::Cut => cancelled_error(),
        E::Cancelled => RequestError::new(
            Some(499),
            "RequestCancellationError",
            "Request was cancelled by --request-cancellation-rate",
        ),
        // The worker sets no connect or read timeout: only the attempt's bound applies.
        E::TimedOut | E::ConnectTimeout | E::ReadTimeout { .. } => RequestError::new(
            None,
            "TimeoutError",
            format!(
                "Request did not complete within --request-timeout-seconds ({} s)",
                shared.request_timeout.as_secs_f64()
            ),
        ),
    }
}

/// The worker's side of an exchange: writes the request with this request's ids and records the
/// response into the [`RawRecord`]: head, body, one SSE event per complete message.
struct Recorder<'a> {
    request: Request<'a>,
    /// The `--cache-bust` marker and its body offset, spliced into each attempt's copy (boxed:
    /// a request without one keeps a word for it, not 40 bytes, while it runs).
    splice: Option<Box<(usize, Marker)>>,
    state: &'a WorkerState,
    framer: Framer,
    /// The record being filled (owned: the request's future keeps the recorder, not the record
    /// beside a reference to it).
    rec: RawRecord,
    /// The receive lag of the latest read, when `has_read_lag` (it had a kernel stamp): a
    /// `u32` and a flag packed with `keep_head`, not an `Option<u32>` (#41).
    read_lag_ns: u32,
    has_read_lag: bool,
    /// `--export-http-trace`: copy the response head into the record.
    keep_head: bool,
    /// The endpoint's compactor when records are compact (not `--export-level raw`): a 2xx
    /// SSE response keeps each message's extracted delta, not its raw bytes.
    compact: Option<Compactor>,
    /// Body bytes already dropped from the front of `rec.body` (a compact record's consumed
    /// messages).
    dropped: u64,
    /// The prefill slot held until the first content response (boxed: its parse scratch is
    /// ~0.4 KiB that every in-flight request's future would otherwise reserve).
    prefill: Option<Box<Prefill<'a>>>,
}

/// A held prefill slot and what finding the first token takes.
struct Prefill<'a> {
    gate: &'a super::prefill::PrefillGate,
    kind: ringperf_wire::endpoint::EndpointKind,
    scratch: ringperf_wire::endpoint::ParsedResponse,
}

/// A compact record's body holding a partial message keeps up to this much capacity between
/// reads (or twice its bytes): a read's worth of a multishot receive (4 KiB) stays, so a burst
/// of reads that each end inside a message does not reallocate on every read; a larger read
/// (up to the pool's read size, 16 KiB) is given back.
const KEPT_BODY_BYTES: usize = 16 * 1024;

/// Bodies from this size on are written from the dataset's own bytes, after the head (a
/// second write); smaller ones are copied behind the head and go in one write.
const SHARED_BODY_MIN: usize = 64 * 1024;

impl Recorder<'_> {
    /// Whether this attempt writes its body from the shared request bytes, not from a copy:
    /// a large body with nothing spliced into it (the ids are all in the head).
    fn body_is_shared(&self) -> bool {
        self.splice.is_none()
            && self
                .request
                .get()
                .bytes
                .len()
                .saturating_sub(self.request.get().head_len)
                >= SHARED_BODY_MIN
    }

    /// The receive lag of the latest read (`None`: it had no kernel stamp).
    fn read_lag(&self) -> Option<u32> {
        self.has_read_lag.then_some(self.read_lag_ns)
    }

    /// The trace of the current attempt (begun by [`Sink::on_attempt`]).
    fn trace(&mut self) -> &mut HttpTrace {
        self.rec.trace.get_or_insert_with(HttpTrace::default)
    }
}

impl Sink for Recorder<'_> {
    fn on_attempt(&mut self, start_ns: u64) {
        self.rec.trace = Some(HttpTrace {
            request_start_ns: start_ns,
            ..HttpTrace::default()
        });
    }

    fn on_connected(&mut self, start_ns: u64, ready_ns: u64) {
        self.trace().connect_ns = Some((start_ns, ready_ns));
    }

    fn on_socket(&mut self, local: Option<std::net::SocketAddr>) {
        self.trace().local = local;
    }

    fn on_tcp_info(&mut self, rtt: ringperf_io::net::tcpinfo::Rtt) {
        self.rec.tcp_rtt_us = Some(rtt.rtt_us);
    }

    fn encode(&mut self, wbuf: &mut Vec<u8>, reused: bool) {
        self.rec.conn_reused = reused;
        self.trace().reused = reused;
        if let Some(&(at, marker)) = self.splice.as_deref() {
            let (text, len) = marker.json_escaped();
            let (req, cor) = (&self.rec.request_id, &self.rec.correlation_id);
            if self
                .request
                .get()
                .write_spliced(wbuf, at, &text[..len], req, cor)
            {
                self.rec.marker = Some(Box::new(marker.padded()));
                return;
            }
        }
        let bytes = &self.request.get().bytes;
        let copied = if self.body_is_shared() {
            &bytes[..self.request.get().head_len]
        } else {
            &bytes[..]
        };
        wbuf.extend_from_slice(copied);
        self.request
            .get()
            .write_ids(wbuf, &self.rec.request_id, &self.rec.correlation_id);
    }

    fn shared_tail(&mut self) -> Option<bytes::Bytes> {
        self.body_is_shared().then(|| {
            bytes::Bytes::from_owner(self.request.get().bytes.clone())
                .slice(self.request.get().head_len..)
        })
    }

    fn on_send(&mut self, sent_ns: u64) {
        self.rec.start_ns = sent_ns;
    }

    fn on_sent(&mut self, bytes: usize, stamp_ns: u64) {
        self.rec.bytes_sent = bytes as u64;
        let body = bytes.saturating_sub(self.request.get().head_len) as u64;
        let t = self.trace();
        t.send_end_ns = Some(stamp_ns);
        t.request_bytes = body;
        t.request_chunks = u32::from(body > 0);
    }

    fn on_read(&mut self, bytes: usize, stamp: ReadStamp) {
        self.rec.bytes_received += bytes as u64;
        let lag = stamp.lag_ns().map(|l| u32::try_from(l).unwrap_or(u32::MAX));
        self.has_read_lag = lag.is_some();
        self.read_lag_ns = lag.unwrap_or(0);
    }

    fn on_head(&mut self, head: &Head, raw: &[u8], stamp_ns: u64) -> AfterHead {
        self.rec.head_ns = Some(stamp_ns);
        self.rec.status = head.status;
        self.rec.is_sse = head.event_stream;
        if self.keep_head {
            self.rec.response_head = raw.get(..head.head_len).unwrap_or(raw).into();
        }
        if !(200..300).contains(&head.status) {
            self.state.set_reason(head.reason_str(raw));
        }
        AfterHead::ReadBody
    }

    fn body(&mut self) -> &mut Vec<u8> {
        &mut self.rec.body
    }

    fn on_body(&mut self, stamp_ns: u64) {
        let body_len = self.dropped + self.rec.body.len() as u64;
        let t = self.trace();
        if body_len > t.response_bytes {
            t.response_bytes = body_len;
            t.response_chunks += 1;
            t.response_start_ns.get_or_insert(stamp_ns);
            t.response_end_ns = Some(stamp_ns);
        }
        if self.rec.is_sse {
            let first_new = self.rec.events.len();
            let lag = self.read_lag();
            while let Some(r) = self.framer.next_message(&self.rec.body) {
                // The first token gives the prefill slot back (after the stamp: off the timing
                // path).
                if let Some(p) = self.prefill.as_mut()
                    && ringperf_wire::endpoint::is_content_message(
                        p.kind,
                        self.rec.body.get(r.clone()).unwrap_or(&[]),
                        &mut p.scratch,
                    )
                    && let Some(p) = self.prefill.take()
                {
                    p.gate.release();
                }
                push_event(&mut self.rec, r, stamp_ns, lag, self.compact);
            }
            if self.rec.events.len() - first_new > 1 {
                self.rec.coalesced_reads += 1;
            }
            self.drop_consumed();
        }
    }

    fn on_end(&mut self, stamp_ns: u64) {
        self.rec.end_ns = stamp_ns;
        let (compact, lag) = (self.compact, self.read_lag());
        finish_events(&mut self.rec, &mut self.framer, stamp_ns, lag, compact);
        // Every message, the trailing one included, is now an event.
        if compact.is_some() && compactable(&self.rec) {
            self.dropped += self.rec.body.len() as u64;
            self.rec.body = Vec::new();
        }
    }
}

impl Recorder<'_> {
    /// A compact record drops the bytes of the messages already extracted or kept, so the
    /// body holds only the message still arriving.
    ///
    /// What the read brought is consumed here, so the buffer it was decoded into is not kept
    /// while the stream waits for its next read: an empty body gives its allocation back, and
    /// one that keeps only a partial message keeps at most [`KEPT_BODY_BYTES`] (or twice its
    /// bytes), so a large read does not leave every in-flight stream holding its capacity.
    fn drop_consumed(&mut self) {
        if self.compact.is_some() && compactable(&self.rec) {
            self.dropped += self.framer.compact(&mut self.rec.body) as u64;
            let body = &mut self.rec.body;
            if body.is_empty() {
                *body = Vec::new();
            } else if body.capacity() > KEPT_BODY_BYTES.max(2 * body.len()) {
                body.shrink_to(body.len());
            }
        }
    }
}

/// A record whose messages are compacted (given a compactor): a 2xx SSE response. An error
/// status keeps its body whole for the error message.
fn compactable(rec: &RawRecord) -> bool {
    rec.is_sse && (200..300).contains(&rec.status)
}

/// Files the message at `body[r]` as the record's next event: raw, or, with a compactor, its
/// extracted delta (or a copy of the raw message when the compactor declines it).
fn push_event(
    rec: &mut RawRecord,
    r: std::ops::Range<usize>,
    stamp_ns: u64,
    lag_ns: Option<u32>,
    compact: Option<Compactor>,
) {
    let (start, end, form) = match compact.filter(|_| compactable(rec)) {
        None => (r.start, r.end, EventForm::Raw),
        Some(extract) => {
            let message = rec.body.get(r).unwrap_or(&[]);
            let start = rec.text.len();
            let form = extract(message, &mut rec.text).unwrap_or_else(|| {
                rec.text.truncate(start);
                rec.text.extend_from_slice(message);
                EventForm::Kept
            });
            (start, rec.text.len(), form)
        }
    };
    rec.events.push(Event {
        stamp_ns,
        start: start as u32,
        end: end as u32,
        lag_ns,
        form,
    });
}

/// The run's end (grace period over, or an early stop's deadline) has come.
fn cut(shared: &Shared, hard_deadline_ns: Option<u64>) -> bool {
    let now = shared.clock.now_ns();
    hard_deadline_ns.is_some_and(|h| now >= h) || now >= shared.control.cut_at_ns()
}

fn cancelled_error() -> RequestError {
    RequestError::new(
        Some(499),
        "RequestCancellationError",
        "Request was cancelled at the end of the grace period",
    )
}

/// Closes the event list: trailing SSE data without a final blank line, or the single event of
/// a non-SSE body.
fn finish_events(
    rec: &mut RawRecord,
    framer: &mut Framer,
    stamp: u64,
    lag_ns: Option<u32>,
    compact: Option<Compactor>,
) {
    if rec.is_sse {
        while let Some(r) = framer.finish(&rec.body) {
            push_event(rec, r, stamp, lag_ns, compact);
        }
    } else if !rec.body.is_empty() {
        rec.events.push(Event {
            stamp_ns: stamp,
            start: 0,
            end: rec.body.len() as u32,
            lag_ns,
            form: EventForm::Raw,
        });
    }
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};
    use std::collections::HashSet;

    use rand::SeedableRng;

    use super::*;
    use ringperf_wire::record::{Phase, ReceiveFacts};

    fn state() -> WorkerState {
        WorkerState {
            id: 0,
            pool: ringperf_io::net::Pool::new(1, 64),
            pool_enabled: false,
            rng: RefCell::new(rand::rngs::StdRng::seed_from_u64(1)),
            reason: RefCell::new(String::new()),
            in_flight: Cell::new(0),
            sessions_live: Cell::new(0),
            open_fds: RefCell::new(HashSet::new()),
            producer: ringperf_wire::record::ring::ring_bounded(4, 1 << 20).0,
            #[cfg(feature = "test-hooks")]
            test_stall: None,
            naps: std::rc::Rc::new(Cell::new(ringperf_io::net::batch::NapStats::default())),
            warm: crate::worker::warm::Observed::default(),
            stop: std::rc::Rc::default(),
            timers: None,
            limits: Limits {
                connect_timeout: None,
                read_timeout: None,
                attempt_timeout: None,
                max_body_bytes: u64::MAX,
            },
        }
    }

    /// Feeds one read of `bytes` with `stamp` to the recorder, as the exchange does.
    fn read(r: &mut Recorder<'_>, bytes: &[u8], stamp: ReadStamp) {
        r.on_read(bytes.len(), stamp);
        r.rec.body.extend_from_slice(bytes);
        r.on_body(stamp.best_ns());
    }

    /// An empty encoded request: the recorder only reads its slots.
    fn no_request() -> EncodedRequest {
        EncodedRequest {
            bytes: Vec::new().into(),
            id_slots: [0, 0],
            copy_slots: Vec::new(),
            head_len: 0,
        }
    }

    /// A fresh SSE record of a profiling request.
    fn sse_record(state: &WorkerState) -> RawRecord {
        let credit = Credit {
            phase: Phase::Profiling,
            phase_index: 0,
            index: 0,
            conversation: 0,
            turn: 0,
            cancel_after_ns: None,
            max_turns: None,
            intended_ns: 0,
        };
        let mut rec = empty_record(state, credit, 0, uuid::Uuid::nil());
        rec.is_sse = true;
        rec
    }

    /// A recorder of `rec` as a streaming exchange starts it, compacting with `compact`.
    fn recorder<'a>(
        request: &'a EncodedRequest,
        state: &'a WorkerState,
        rec: RawRecord,
        compact: Option<Compactor>,
    ) -> Recorder<'a> {
        Recorder {
            request: Request::Shared(request),
            splice: None,
            state,
            framer: Framer::default(),
            rec,
            read_lag_ns: 0,
            has_read_lag: false,
            keep_head: false,
            compact,
            dropped: 0,
            prefill: None,
        }
    }

    #[test]
    fn events_carry_their_reads_lag_and_coalesced_reads_are_counted() {
        let state = state();
        let request = no_request();
        let rec = sse_record(&state);
        let mut r = recorder(&request, &state, rec, None);
        let kernel = |user_ns, k| ReadStamp {
            user_ns,
            kernel_ns: Some(k),
        };
        read(&mut r, b"data: a\n\n", kernel(1_500, 1_000));
        // Two messages in one read without a kernel stamp: the user-space stamp, no lag.
        read(&mut r, b"data: b\n\ndata: c\n\n", ReadStamp::user(3_000));
        // Three in one read whose lag does not fit 32 bits: it saturates.
        read(
            &mut r,
            b"data: d\n\ndata: e\n\ndata: [DONE]\n\n",
            kernel(u64::MAX, 5_000),
        );
        r.on_end(5_000);
        let rec = r.rec;

        let stamps: Vec<(u64, Option<u32>)> =
            rec.events.iter().map(|e| (e.stamp_ns, e.lag_ns)).collect();
        let max = Some(u32::MAX);
        assert_eq!(
            stamps,
            [
                (1_000, Some(500)),
                (3_000, None),
                (3_000, None),
                (5_000, max),
                (5_000, max),
                (5_000, max)
            ]
        );
        assert_eq!(rec.coalesced_reads, 2);
        assert_eq!(
            ReceiveFacts::of(&rec),
            ReceiveFacts {
                lag_ns: vec![500, u32::MAX, u32::MAX, u32::MAX],
                coalesced_reads: 2,
                tcp_rtt_us: None,
            }
        );
    }

    /// A mock-shaped stream (role chunk, reasoning, content, finish, usage, `[DONE]`).
    const STREAM: &[u8] = b"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\" are\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" has\\n\"},\"logprobs\":null,\"finish_reason\":null}]}\r\n\r\n\
data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" \\u00e9t\\u00e9\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\",\"stop_reason\":null}]}\n\n\
data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"total_tokens\":6,\"completion_tokens\":5,\"completion_tokens_details\":{\"reasoning_tokens\":2}}}\n\n\
data: [DONE]\n\n\
data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":\"tail\"}}]}";

    /// Feeds `STREAM` cut at `cuts` (read boundaries) to a recorder, compact or not, and
    /// returns the record.
    fn recorded(cuts: &[usize], compact: bool, status: u16) -> RawRecord {
        let state = state();
        let request = no_request();
        let mut rec = sse_record(&state);
        rec.status = status;
        let compactor = if compact {
            ringperf_wire::endpoint::EndpointKind::Chat
                .descriptor()
                .compact
        } else {
            None
        };
        let mut r = recorder(&request, &state, rec, compactor);
        r.on_attempt(0);
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % STREAM.len()).collect();
        cuts.extend([0, STREAM.len()]);
        cuts.sort_unstable();
        cuts.dedup();
        for (i, w) in cuts.windows(2).enumerate() {
            let user_ns = 1_000 * (i as u64 + 1);
            read(
                &mut r,
                &STREAM[w[0]..w[1]],
                ReadStamp {
                    user_ns,
                    kernel_ns: Some(user_ns - 7),
                },
            );
        }
        r.on_end(1_000_000);
        r.rec
    }

    fn parsed(rec: &RawRecord) -> ringperf_wire::endpoint::ParsedResponse {
        let mut out = ringperf_wire::endpoint::ParsedResponse::default();
        ringperf_wire::endpoint::parse_record(
            ringperf_wire::endpoint::EndpointKind::Chat,
            rec,
            &mut out,
        );
        out
    }

    proptest::proptest! {
        /// However the stream is cut into reads, a compact record reads exactly as the raw one:
        /// the same parse, stamps, lags, coalesced reads and HTTP trace, from a fraction of the
        /// bytes.
        #[test]
        fn compact_records_read_as_raw_ones(cuts in proptest::collection::vec(0usize..4096, 0..12)) {
            let raw = recorded(&cuts, false, 200);
            let compact = recorded(&cuts, true, 200);
            proptest::prop_assert_eq!(parsed(&compact), parsed(&raw));
            let facts = |r: &RawRecord| (
                r.events.iter().map(|e| (e.stamp_ns, e.lag_ns)).collect::<Vec<_>>(),
                ReceiveFacts::of(r),
                r.trace,
                r.bytes_received,
            );
            proptest::prop_assert_eq!(facts(&compact), facts(&raw));
            let forms: Vec<EventForm> = compact.events.iter().map(|e| e.form).collect();
            // The `\u` chunk and the usage chunk are kept raw; the others are extracted.
            let kept = forms.iter().filter(|f| **f == EventForm::Kept).count();
            proptest::prop_assert_eq!(kept, 2, "{:?}", forms);
            proptest::prop_assert!(forms.contains(&EventForm::Text));
            let reasoning = forms.iter().any(|f| matches!(f, EventForm::Reasoning { .. }));
            proptest::prop_assert!(reasoning);
            proptest::prop_assert!(compact.body.is_empty(), "{:?}", compact.body);
            proptest::prop_assert!(compact.text.len() * 2 < raw.body.len());
        }
    }

    /// A compact stream holds no read's worth of buffer between reads: a read that ends on a
    /// message boundary leaves the body without an allocation, and one that ends inside a
    /// message keeps little more than that message's bytes; the record reads as before.
    #[test]
    fn a_compact_body_gives_its_read_buffer_back_between_reads() {
        let state = state();
        let request = no_request();
        let mut rec = sse_record(&state);
        rec.status = 200;
        let compactor = ringperf_wire::endpoint::EndpointKind::Chat
            .descriptor()
            .compact;
        let mut r = recorder(&request, &state, rec, compactor);
        r.on_attempt(0);
        // Everything before the trailing unterminated message: seven whole messages.
        let whole = STREAM
            .windows(2)
            .rposition(|w| w == b"\n\n")
            .expect("a blank line")
            + 2;
        let mut burst = Vec::new();
        for _ in 0..20 {
            burst.extend_from_slice(&STREAM[..whole]);
        }
        read(&mut r, &burst, ReadStamp::user(1_000));
        assert!(r.rec.body.is_empty());
        assert_eq!(r.rec.body.capacity(), 0, "a consumed read keeps its buffer");
        // A read larger than a stream may keep (26 KB) that ends 10 bytes into a message keeps
        // those bytes, not the read's capacity.
        let mut cut = burst.clone();
        cut.extend_from_slice(&STREAM[..10]);
        read(&mut r, &cut, ReadStamp::user(2_000));
        assert_eq!(r.rec.body, &STREAM[..10]);
        assert!(
            r.rec.body.capacity() <= KEPT_BODY_BYTES,
            "{}",
            r.rec.body.capacity()
        );
        read(&mut r, &STREAM[10..whole], ReadStamp::user(3_000));
        r.on_end(3_000);
        let rec = r.rec;
        let messages = rec.events.len();
        assert_eq!(
            messages,
            2 * 20 * 7 + 7,
            "every message of every read is an event"
        );
        assert_eq!(rec.events.last().map(|e| e.stamp_ns), Some(3_000));
    }

    /// A request's recorder, kept for as long as the response takes, holds a `--cache-bust`
    /// marker boxed (#41: 152 bytes with it inline, in every streaming task), and owns the
    /// record it fills (it held a reference to it, beside the record and the parts it was made
    /// of, each kept by the request's future). It owns a request built for its turn, keeps its
    /// framer's message start and its read's lag as a value and a flag each (112 bytes with
    /// `Option`s and a borrowed request).
    #[test]
    fn a_recorder_stays_small() {
        let size = std::mem::size_of::<Recorder<'_>>() - std::mem::size_of::<RawRecord>();
        assert!(size <= 104, "a recorder is {size} bytes besides its record");
    }

    #[test]
    fn an_error_status_keeps_its_raw_body() {
        let rec = recorded(&[100, 900], true, 500);
        assert_eq!(rec.body, STREAM);
        assert!(rec.events.iter().all(|e| e.form == EventForm::Raw));
        assert!(rec.text.is_empty());
    }
}
