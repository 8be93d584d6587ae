//! One connection: read requests (httparse for the head, `Content-Length` bodies), route them,
//! answer (completions through `respond`, the metrics routes through `metrics_modes`, the rest
//! here), and loop while the connection is kept alive. Back-to-back (pipelined) requests already
//! in the buffer are answered in order before the next read. [`serve_until_closed`] also ends
//! the connection when its thread's [`Closer`](super::worker::Closer) says so.

use std::future::Future;
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;

use monoio::buf::SliceMut;
use monoio::io::AsyncReadRent;
use monoio::net::TcpStream;
use uuid::Uuid;

use super::body::{Endpoint, parse_request_body};
use super::control::{Control, ControlCall};
use super::metrics_modes;
use super::misbehave;
use super::respond::{After, Completion, Recorded};
use super::wire::{self, send};
use super::worker::Worker;
use ringperf_io::timer::Timer;
use ringperf_wire::clock::monotonic_raw_ns;
use ringperf_wire::http::form_parse::ParsedPart as FormPart;

/// Largest request head accepted (431 beyond).
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest request body accepted (413 beyond).
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// Most headers accepted in one request (431 beyond).
const MAX_HEADERS: usize = 64;

/// Serves one connection until it ends or the thread closes its connections
/// ([`Worker::close_connections`]); either way the connection is dropped before this returns.
pub(crate) async fn serve_until_closed(stream: TcpStream, worker: Rc<Worker>) {
    let slot = worker.closer.slot();
    {
        let mut conn = std::pin::pin!(serve_connection(stream, Rc::clone(&worker)));
        std::future::poll_fn(|cx| {
            if worker.closer.closed.get() || conn.as_mut().poll(cx).is_ready() {
                return Poll::Ready(());
            }
            worker.closer.register(slot, cx.waker());
            Poll::Pending
        })
        .await;
    }
    worker.closer.release(slot);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Get,
    Head,
    Post,
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// A completion, embeddings or rankings API.
    Api(Endpoint),
    Models,
    Health,
    Metrics,
    PrometheusMetrics,
    /// The DCGM exporter page (see `super::dcgm`).
    Dcgm,
    /// A control-plane route (see `super::control`).
    Control(Control),
    /// The video job API (see `super::videos`).
    Video(super::videos::VideoRoute),
    Unknown,
}

/// A parsed request head.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    method: Method,
    route: Route,
    close: bool,
    request_id: Option<Uuid>,
    /// Where the `X-Correlation-ID` value (trimmed) lies in the parsed bytes; copied out only
    /// when the truth log keeps it.
    correlation: Option<Range<usize>>,
    /// Where the `Content-Type` value (trimmed) lies: the multipart APIs need its boundary.
    content_type: Option<Range<usize>>,
    /// `Expect: 100-continue`: the client waits for an interim 100 before sending the body.
    expect_continue: bool,
    head_len: usize,
    body_len: usize,
}

/// The outcome of looking at the start of the buffer.
#[derive(Debug, PartialEq, Eq)]
enum Parsed {
    Complete(Head),
    Partial,
    /// Unanswerable request: status and message; the connection is closed after the reply.
    Bad(u16, &'static str),
}

fn route_of(path: &str) -> Route {
    let path = path.split('?').next().unwrap_or(path);
    match path {
        "/v1/models" => Route::Models,
        "/health" => Route::Health,
        "/metrics" => Route::Metrics,
        "/prometheus/metrics" => Route::PrometheusMetrics,
        "/dcgm/metrics" => Route::Dcgm,
        other if other.starts_with("/v1/videos") => {
            super::videos::VideoRoute::at(other).map_or(Route::Unknown, Route::Video)
        }
        other => Control::at(other)
            .map(Route::Control)
            .unwrap_or_else(|| Endpoint::at(other).map_or(Route::Unknown, Route::Api)),
    }
}

#[cfg(test)]
fn parse_head(buf: &[u8]) -> Parsed {
    parse_head_named(buf, "x-correlation-id")
}

/// Parses a request head whose correlation id is in the header `correlation_header` (any
/// case).
fn parse_head_named(buf: &[u8], correlation_header: &str) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            return if buf.len() > MAX_HEAD_BYTES {
                Parsed::Bad(431, "request head too large")
            } else {
                Parsed::Partial
            };
        }
        Err(httparse::Error::TooManyHeaders) => return Parsed::Bad(431, "too many headers"),
        Err(_) => return Parsed::Bad(400, "malformed HTTP request"),
    };
    let method = match req.method {
        Some("GET") => Method::Get,
        Some("HEAD") => Method::Head,
        Some("POST") => Method::Post,
        _ => Method::Other,
    };
    let route = route_of(req.path.unwrap_or(""));
    let mut close = req.version == Some(0);
    let mut body_len = 0usize;
    let mut request_id = None;
    let mut correlation = None;
    let mut content_type = None;
    let mut expect_continue = false;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let Some(n) = std::str::from_utf8(h.value)
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
            else {
                return Parsed::Bad(400, "invalid content-length");
            };
            body_len = n;
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Parsed::Bad(
                411,
                "chunked request bodies are not supported; send content-length",
            );
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let t = token.trim_ascii();
                if t.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if t.eq_ignore_ascii_case(b"keep-alive") {
                    close = false;
                }
            }
        } else if h.name.eq_ignore_ascii_case("x-request-id") {
            request_id = Uuid::try_parse_ascii(h.value.trim_ascii()).ok();
        } else if h.name.eq_ignore_ascii_case(correlation_header) {
            // httparse's values are slices of `buf`: their place is an address difference.
            let v = h.value.trim_ascii();
            let at = v.as_ptr().addr().wrapping_sub(buf.as_ptr().addr());
            correlation = Some(at..at + v.len());
        } else if h.name.eq_ignore_ascii_case("content-type") {
            let v = h.value.trim_ascii();
            let at = v.as_ptr().addr().wrapping_sub(buf.as_ptr().addr());
            content_type = Some(at..at + v.len());
        } else if h.name.eq_ignore_ascii_case("expect") {
            expect_continue = h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        }
    }
    if body_len > MAX_BODY_BYTES {
        return Parsed::Bad(413, "request body too large");
    }
    Parsed::Complete(Head {
        method,
        route,
        close,
        request_id,
        correlation,
        content_type,
        expect_continue,
        head_len,
        body_len,
    })
}

thread_local! {
    /// `CLOCK_REALTIME − CLOCK_MONOTONIC` for this mock thread: converts the kernel's receive
    /// stamps of requests to the truth log's scale.
    static REALTIME: ringperf_wire::clock::RealtimeOffset = ringperf_wire::clock::RealtimeOffset::calibrate();
}

/// Serves one connection until the peer closes it, asks to close it, or an error.
pub(crate) async fn serve_connection(mut stream: TcpStream, worker: Rc<Worker>) {
    let accepted_ns = ringperf_wire::clock::monotonic_raw_ns();
    worker
        .shared
        .truth
        .record_connection(worker.index, accepted_ns);
    let _ = stream.set_nodelay(true);
    // Grown by the first answer to what it needs (a streamed answer's head and one event),
    // not reserved ahead: a mock holds tens of thousands of connections (#41).
    let mut wbuf: Vec<u8> = Vec::new();
    let mut ev: Vec<u8> = Vec::new();
    // Paces this connection's responses; its timerfd is made by the first wait that needs one.
    let mut timer = Timer::new(worker.on_io_uring);
    let connection = worker
        .shared
        .connections
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut inbox = Inbox {
        buf: Vec::new(),
        start: 0,
        // With a truth log, requests are read with the kernel's receive stamps: the truth then
        // holds when each request reached the socket, before this thread woke to read it.
        kernel_stamps: worker.shared.truth.enabled()
            && ringperf_io::net::rxstamp::enable(std::os::fd::AsRawFd::as_raw_fd(&stream)).is_ok(),
        last_read_rt: None,
        continued: false,
    };
    let correlation_header = worker
        .shared
        .cfg
        .session_header
        .as_deref()
        .unwrap_or("x-correlation-id");
    loop {
        let parsed = parse_head_named(
            inbox.buf.get(inbox.start..).unwrap_or_default(),
            correlation_header,
        );
        let head = match parsed {
            Parsed::Complete(h) if inbox.buf.len() - inbox.start >= h.head_len + h.body_len => h,
            Parsed::Complete(_) | Parsed::Partial => {
                if let Parsed::Complete(h) = &parsed
                    && h.expect_continue
                    && !inbox.continued
                {
                    inbox.continued = true;
                    wbuf.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                    if send(&mut stream, &mut wbuf).await.is_err() {
                        return;
                    }
                }
                if inbox.read(&mut stream).await {
                    continue;
                }
                return;
            }
            Parsed::Bad(code, msg) => {
                let body = wire::error_body(code, msg);
                wire::head(&mut wbuf, code, "application/json", body.len(), true);
                wbuf.extend_from_slice(&body);
                let _ = send(&mut stream, &mut wbuf).await;
                return;
            }
        };
        let arrival_ns = monotonic_raw_ns();
        let close = head.close;
        // Everything the answer needs from the body is extracted here, before any await.
        let action = plan(&worker, &head, &inbox, connection, accepted_ns, arrival_ns);
        inbox.start += head.head_len + head.body_len;
        inbox.continued = false;
        inbox.release_if_consumed();
        let ok = match action {
            Action::Complete(c) => {
                match c
                    .run(&worker, &mut stream, &mut wbuf, &mut ev, &mut timer, close)
                    .await
                {
                    Ok(After::KeepAlive | After::Close) => true,
                    Ok(After::Cut) | Err(_) => false,
                    Ok(After::Reset) => {
                        misbehave::reset_on_close(&stream);
                        false
                    }
                }
            }
            Action::Static(route, head_only) => {
                answer_static(&worker, &mut stream, &mut wbuf, route, head_only, close).await
            }
            Action::Models(listed) => {
                let body = worker.shared.models_body_for(listed);
                wire::head(&mut wbuf, 200, "application/json", body.len(), close);
                wbuf.extend_from_slice(&body);
                send(&mut stream, &mut wbuf).await.is_ok()
            }
            Action::Ok => {
                wire::head(&mut wbuf, 200, "application/json", 2, close);
                wbuf.extend_from_slice(b"{}");
                send(&mut stream, &mut wbuf).await.is_ok()
            }
            Action::Reply(Some((code, ctype, body))) => {
                wire::head(&mut wbuf, code, ctype, body.len(), close);
                wbuf.extend_from_slice(&body);
                send(&mut stream, &mut wbuf).await.is_ok()
            }
            Action::Reply(None) => {
                misbehave::reset_on_close(&stream);
                false
            }
            Action::Error(code, msg) => {
                let body = wire::error_body(code, &msg);
                wire::head(&mut wbuf, code, "application/json", body.len(), close);
                wbuf.extend_from_slice(&body);
                send(&mut stream, &mut wbuf).await.is_ok()
            }
        };
        if !ok || close {
            return;
        }
    }
}

/// A connection's read side: the bytes read and not yet answered from `start` on, and how
/// they are read.
struct Inbox {
    buf: Vec<u8>,
    /// Where the next request starts in `buf`.
    start: usize,
    /// Reads take the kernel's receive stamps.
    kernel_stamps: bool,
    /// The kernel stamp of the latest read (`CLOCK_REALTIME` ns).
    last_read_rt: Option<u64>,
    /// The request being read was already sent its `100 Continue`.
    continued: bool,
}

impl Inbox {
    /// Frees the buffer once every byte in it has been answered: a connection streaming a long
    /// answer, or idle between requests, holds no read buffer (the next read allocates one).
    /// Pipelined bytes keep it.
    fn release_if_consumed(&mut self) {
        if self.start >= self.buf.len() {
            self.buf = Vec::new();
            self.start = 0;
        }
    }

    /// Drops the answered requests, makes room, and reads more; false when the peer closed
    /// the connection or the read failed.
    async fn read(&mut self, stream: &mut TcpStream) -> bool {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        // Read into the spare capacity after the bytes already held (a plain `Vec` would be
        // overwritten from its start).
        let res = if self.kernel_stamps {
            // Readiness first, holding no more buffer than the bytes already held: an idle
            // connection waits with none (#41).
            loop {
                if let Err(e) = stream.readable(false).await {
                    break Err(e);
                }
                Self::make_room(&mut self.buf);
                let fd = std::os::fd::AsRawFd::as_raw_fd(&*stream);
                match ringperf_io::net::rxstamp::recv(fd, &mut self.buf) {
                    Ok((n, rt)) => {
                        self.last_read_rt = rt;
                        break Ok(n);
                    }
                    Err(e) if ringperf_io::net::rxstamp::is_not_ready(&e) => {}
                    Err(e) => break Err(e),
                }
            }
        } else {
            Self::make_room(&mut self.buf);
            // The buffer moves into the read and back out: `take` leaves an empty `Vec` (no
            // allocation) for the moment it is away.
            let buf = std::mem::take(&mut self.buf);
            let (len, cap) = (buf.len(), buf.capacity());
            let (res, b) = stream.read(SliceMut::new(buf, len, cap)).await;
            self.buf = b.into_inner();
            res
        };
        matches!(res, Ok(n) if n > 0)
    }

    /// At least 8 KiB of spare capacity for the next read (16 KiB more when less is left).
    fn make_room(buf: &mut Vec<u8>) {
        if buf.capacity() - buf.len() < 8 * 1024 {
            buf.reserve(16 * 1024);
        }
    }
}

/// What to answer the complete request `head` at the inbox's `start` (its body follows the
/// head): a completion planned from its body, a static page, or an error.
#[inline]
fn plan(
    worker: &Worker,
    head: &Head,
    inbox: &Inbox,
    connection: u64,
    accepted_ns: u64,
    arrival_ns: u64,
) -> Action {
    let (buf, start) = (&inbox.buf, inbox.start);
    let body_at = start + head.head_len;
    let body = buf
        .get(body_at..body_at + head.body_len)
        .unwrap_or_default();
    match (head.route, head.method) {
        (Route::Api(endpoint), Method::Post) if worker.shared.loading() => {
            record_control(worker, "POST", endpoint.path(), 503, None, arrival_ns);
            Action::Error(503, "the model is loading".to_owned())
        }
        (Route::Control(c), Method::Post) => {
            let status = worker.shared.control_status(c);
            record_control(worker, "POST", c.path(), status, None, arrival_ns);
            if status == 200 {
                Action::Ok
            } else {
                Action::Error(status, "the server is busy; try again".to_owned())
            }
        }
        (Route::Control(_), _) => Action::Error(405, "use POST".to_owned()),
        (Route::Video(v), m) => Action::Reply(worker.shared.videos.answer(
            &worker.shared.cfg.video_jobs,
            &worker.shared.model_json,
            v,
            m == Method::Post,
            body,
        )),
        (Route::Models, Method::Get) => {
            let listed = !worker.shared.loading();
            record_control(worker, "GET", "/v1/models", 200, Some(listed), arrival_ns);
            Action::Models(listed)
        }
        (Route::Api(endpoint), Method::Post) => match read_body(endpoint, head, inbox) {
            Ok((b, form)) => {
                let mut b = b;
                b.prompt_words = worker.prompt_tokens(endpoint, body, b.prompt_words);
                if let Some(limit) = worker.shared.cfg.max_model_len {
                    let asked = b.max_tokens.unwrap_or(0);
                    let total = b.prompt_words + asked;
                    if total > limit {
                        (worker.shared.over_context)
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        return Action::Error(
                            400,
                            format!(
                                "This model's maximum context length is {limit} tokens. However, \
                                 you requested {total} tokens ({} in the messages, {asked} in \
                                 the completion). Please reduce the length of the messages or \
                                 completion.",
                                b.prompt_words
                            ),
                        );
                    }
                }
                let recorded = if worker.shared.truth.enabled() {
                    let keep_bodies = worker.shared.cfg.record_bodies;
                    Recorded {
                        connection,
                        connection_accepted_ns: accepted_ns,
                        correlation_id: head
                            .correlation
                            .as_ref()
                            .and_then(|r| buf.get(start + r.start..start + r.end))
                            .map(|v| String::from_utf8_lossy(v).into_owned()),
                        request_body: keep_bodies.then(|| Arc::from(body)),
                        reply_text: keep_bodies,
                        arrival_kernel_ns: inbox
                            .last_read_rt
                            .and_then(|rt| REALTIME.with(|o| o.to_monotonic_raw(rt))),
                        media: match &form {
                            Some(parts) => super::media::media_in_form(parts),
                            None => super::media::media_in(body),
                        },
                    }
                } else {
                    Recorded::default()
                };
                Action::Complete(Completion::plan(
                    worker,
                    endpoint,
                    &b,
                    body,
                    head.request_id,
                    recorded,
                    arrival_ns,
                ))
            }
            Err(e) => Action::Error(400, e.to_string()),
        },
        (Route::Api(_), _) => Action::Error(405, "use POST".to_owned()),
        (
            Route::Models | Route::Health | Route::Metrics | Route::PrometheusMetrics | Route::Dcgm,
            Method::Get | Method::Head,
        ) => Action::Static(head.route, head.method == Method::Head),
        (
            Route::Models | Route::Health | Route::Metrics | Route::PrometheusMetrics | Route::Dcgm,
            _,
        ) => Action::Error(405, "use GET or HEAD".to_owned()),
        (Route::Unknown, _) => Action::Error(404, "not found".to_owned()),
    }
}

/// The request's body as `endpoint` reads it: JSON, or a multipart/form-data upload (whose parts
/// are returned too, for the truth log).
fn read_body(
    endpoint: super::body::Endpoint,
    head: &Head,
    inbox: &Inbox,
) -> Result<(super::body::RequestBody, Option<Vec<FormPart>>), super::body::Error> {
    let (buf, start) = (&inbox.buf, inbox.start);
    let body_at = start + head.head_len;
    let body = buf
        .get(body_at..body_at + head.body_len)
        .unwrap_or_default();
    if !endpoint.multipart() {
        return parse_request_body(body).map(|b| (b, None));
    }
    let content_type = head
        .content_type
        .as_ref()
        .and_then(|r| buf.get(start + r.start..start + r.end))
        .and_then(|v| std::str::from_utf8(v).ok());
    let (b, parts) = super::body::parse_form_body(body, content_type)?;
    Ok((b, Some(parts)))
}

/// Answers a `GET` (or, `head_only`, a `HEAD`) of a page that is not a completion; false when
/// the connection is done (a send failed, or a hanging metrics mode held it).
async fn answer_static(
    worker: &Worker,
    stream: &mut TcpStream,
    wbuf: &mut Vec<u8>,
    route: Route,
    head_only: bool,
    close: bool,
) -> bool {
    let (status, ctype, text): (u16, &str, Vec<u8>) = match route {
        Route::Models => (200, "application/json", worker.shared.models_body_for(true)),
        Route::Metrics | Route::PrometheusMetrics => {
            let r = worker
                .shared
                .metrics_reply(worker.index, route == Route::PrometheusMetrics);
            if r.hang {
                metrics_modes::hang(stream).await;
                return false;
            }
            if !r.delay.is_zero() {
                monoio::time::sleep(r.delay).await;
            }
            (r.status, r.content_type, r.body)
        }
        Route::Dcgm => match worker.shared.dcgm_page(!head_only) {
            Some(page) => (
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                page.into_bytes(),
            ),
            None => (
                404,
                "application/json",
                wire::error_body(404, "no DCGM page: start the mock with --dcgm-gpus"),
            ),
        },
        _ => (200, "text/plain; charset=utf-8", Vec::new()),
    };
    wire::head(wbuf, status, ctype, text.len(), close);
    if !head_only {
        wbuf.extend_from_slice(&text);
    }
    send(stream, wbuf).await.is_ok()
}

enum Action {
    Complete(Completion),
    Static(Route, bool),
    Error(u16, String),
    /// 200 with an empty JSON object (a control call done).
    Ok,
    /// A whole answer: status, content type, body (the video job API's).
    Reply(super::videos::Reply),
    /// `GET /v1/models`: the list, with the model or (loading) without.
    Models(bool),
}

/// Keeps a control-plane exchange in the truth log, stamped on both clocks.
fn record_control(
    worker: &Worker,
    method: &'static str,
    path: &'static str,
    status: u16,
    listed: Option<bool>,
    arrival_ns: u64,
) {
    worker.shared.truth.record_control(ControlCall {
        method,
        path,
        status,
        listed,
        wall_ns: ringperf_wire::clock::wall_now_ns(),
        arrival_ns,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection whose every read byte has been answered holds no read buffer while its
    /// answer streams or it idles (#41: tens of thousands of connections a mock); bytes of a
    /// pipelined request keep theirs.
    #[test]
    fn an_answered_inbox_holds_no_buffer_but_pipelined_bytes_keep_it() {
        let first = b"GET /health HTTP/1.1\r\n\r\n";
        let mut buf = Vec::with_capacity(16 * 1024);
        buf.extend_from_slice(first);
        buf.extend_from_slice(b"GET /hea");
        let mut inbox = Inbox {
            buf,
            start: first.len(),
            kernel_stamps: false,
            last_read_rt: None,
            continued: false,
        };
        inbox.release_if_consumed();
        assert_eq!(&inbox.buf[inbox.start..], b"GET /hea");
        inbox.start = inbox.buf.len();
        inbox.release_if_consumed();
        assert_eq!((inbox.buf.capacity(), inbox.start), (0, 0));
    }

    fn complete(raw: &[u8]) -> Head {
        match parse_head(raw) {
            Parsed::Complete(h) => h,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn head_fields_are_extracted() {
        let id = "7f3c2a1e-0000-4000-8000-000000000001";
        let raw = format!(
            "POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\
             X-Request-ID: {id}\r\nConnection: keep-alive, Close\r\n\
             x-correlation-id:  sess-1 \r\ncontent-TYPE: multipart/form-data; boundary=b\r\n\r\n"
        );
        let h = complete(raw.as_bytes());
        let at = raw.find("sess-1").unwrap();
        let ct = raw.find("multipart/").unwrap();
        assert_eq!(
            h,
            Head {
                method: Method::Post,
                route: Route::Api(Endpoint::Chat),
                close: true,
                request_id: Uuid::parse_str(id).ok(),
                correlation: Some(at..at + "sess-1".len()),
                content_type: Some(ct..ct + "multipart/form-data; boundary=b".len()),
                expect_continue: false,
                head_len: raw.len(),
                body_len: 12,
            }
        );
        let h = complete(b"GET /metrics HTTP/1.0\r\nX-Request-ID: nope\r\n\r\n");
        assert_eq!(
            (h.route, h.method, h.close, h.request_id, h.body_len),
            (Route::Metrics, Method::Get, true, None, 0)
        );
        assert_eq!(h.correlation, None);
        let h = complete(b"HEAD /nothing HTTP/1.1\r\n\r\n");
        assert_eq!(
            (h.route, h.method, h.close),
            (Route::Unknown, Method::Head, false)
        );
    }

    proptest::proptest! {
        /// Any bytes: no panic, and a complete head never claims more bytes than it was given.
        #[test]
        fn qc_parse_head_never_panics(raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            if let Parsed::Complete(h) = parse_head(&raw) {
                proptest::prop_assert!(h.head_len <= raw.len());
            }
        }

        /// A valid head is found whole however much of it has arrived: every strict prefix is
        /// `Partial`, the whole is `Complete` with its exact length.
        #[test]
        fn qc_head_prefixes_are_partial(cut in 0usize..60, len in 0usize..100_000) {
            let raw = format!("POST /v1/completions HTTP/1.1\r\nContent-Length: {len}\r\n\r\n");
            let cut = cut.min(raw.len() - 1);
            proptest::prop_assert_eq!(parse_head(&raw.as_bytes()[..cut]), Parsed::Partial);
            match parse_head(raw.as_bytes()) {
                Parsed::Complete(h) => {
                    proptest::prop_assert_eq!((h.head_len, h.body_len), (raw.len(), len));
                }
                other => proptest::prop_assert!(false, "{:?}", other),
            }
        }
    }

    #[test]
    fn partial_and_bad_heads() {
        assert_eq!(
            parse_head(b"POST /v1/completions HTTP/1.1\r\nContent-Le"),
            Parsed::Partial
        );
        assert_eq!(parse_head(b""), Parsed::Partial);
        assert!(matches!(
            parse_head(b"\x00\x01 / HTTP/1.1\r\n\r\n"),
            Parsed::Bad(400, _)
        ));
        assert!(matches!(
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n"),
            Parsed::Bad(400, _)
        ));
        assert!(matches!(
            parse_head(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Parsed::Bad(411, _)
        ));
        let many: String = (0..MAX_HEADERS + 1)
            .map(|i| format!("h{i}: v\r\n"))
            .collect();
        assert!(matches!(
            parse_head(format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes()),
            Parsed::Bad(431, _)
        ));
        let huge = vec![b'a'; MAX_HEAD_BYTES + 10];
        let mut raw = b"GET /".to_vec();
        raw.extend_from_slice(&huge);
        assert!(matches!(parse_head(&raw), Parsed::Bad(431, _)));
    }
}
