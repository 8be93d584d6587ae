//! The one request loop: take a credit, write the pre-encoded request, read and stamp every
//! read before parsing it, frame HTTP and SSE, and hand one [`RawRecord`] back — success or
//! failure. Every mode (closed loop, open loop, warmup) sends through [`send`].

use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::Duration;

use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::TcpStream;

use crate::http::{BodyDecoder, BodyKind, HttpError, Status, parse_head};
use crate::record::{Credit, Event, RawRecord, RequestError};
use crate::sse::Framer;

use super::conn::Conn;
use super::{Shared, WorkerState};

/// Largest response head accepted (the read buffer grows up to this while a head is partial).
const MAX_HEAD_BUFFER: usize = crate::http::MAX_HEAD_BYTES;

/// Builds the record for `credit` and performs the request, retrying once on a fresh connection
/// when a kept-alive connection turns out to be closed before any response byte arrived.
pub(crate) async fn send(
    shared: &Shared,
    state: &Rc<WorkerState>,
    credit: Credit,
    hard_deadline_ns: Option<u64>,
) -> RawRecord {
    let url_index = (credit.index % shared.urls.len() as u64) as u16;
    let (request_id, correlation_id) = state.new_ids();
    let mut rec = RawRecord {
        credit,
        worker_id: state.id,
        url_index,
        request_id,
        correlation_id,
        start_ns: 0,
        head_ns: None,
        end_ns: 0,
        status: 0,
        is_sse: false,
        body: Vec::new(),
        events: Vec::new(),
        error: None,
        conn_reused: false,
        bytes_sent: 0,
        bytes_received: 0,
        was_cancelled: false,
    };
    let timeout_ns = shared
        .request_timeout
        .as_nanos()
        .min(u128::from(u64::MAX / 4)) as u64;
    for attempt in 0..2 {
        let now = shared.clock.now_ns();
        let request_deadline = now.saturating_add(timeout_ns);
        let deadline = hard_deadline_ns.map_or(request_deadline, |h| h.min(request_deadline));
        let budget = Duration::from_nanos(deadline.saturating_sub(now));
        let outcome =
            monoio::time::timeout(budget, attempt_once(shared, state, &mut rec, attempt == 0))
                .await;
        match outcome {
            Ok(Ok(())) => break,
            Ok(Err(Failure::StaleConnection)) if attempt == 0 => {
                rec.body.clear();
                rec.events.clear();
                continue;
            }
            Ok(Err(Failure::StaleConnection)) => {
                rec.error = Some(RequestError::new(
                    None,
                    "ServerDisconnectedError",
                    "Server disconnected before sending a response",
                ));
                break;
            }
            Ok(Err(Failure::Error(e))) => {
                rec.error = Some(e);
                break;
            }
            Err(_) => {
                if cut(shared, hard_deadline_ns) {
                    rec.was_cancelled = true;
                    rec.error = Some(cancelled_error());
                } else {
                    rec.error = Some(RequestError::new(
                        None,
                        "TimeoutError",
                        format!(
                            "Request did not complete within --request-timeout-seconds ({} s)",
                            shared.request_timeout.as_secs_f64()
                        ),
                    ));
                }
                break;
            }
        }
    }
    if rec.error.is_some() && !rec.was_cancelled && cut(shared, hard_deadline_ns) {
        // The failure is the cut itself (the socket was shut down at the deadline).
        rec.was_cancelled = true;
        rec.error = Some(cancelled_error());
    }
    if rec.end_ns == 0 {
        rec.end_ns = shared.clock.now_ns();
    }
    if rec.start_ns == 0 {
        // Never got as far as writing (connect failed or timed out): the attempt began now-ish.
        rec.start_ns = rec.end_ns;
    }
    if rec.error.is_none() && !(200..300).contains(&rec.status) {
        rec.error = Some(RequestError::new(
            Some(rec.status),
            state.take_reason(),
            String::from_utf8_lossy(&rec.body).into_owned(),
        ));
    }
    rec
}

/// Keeps a request's socket in its worker's in-flight set (for shutdown at a cut) while alive.
struct InFlight<'a> {
    state: &'a WorkerState,
    fd: std::os::fd::RawFd,
}

impl<'a> InFlight<'a> {
    fn register(state: &'a WorkerState, fd: std::os::fd::RawFd) -> Self {
        state.open_fds.borrow_mut().insert(fd);
        Self { state, fd }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.state.open_fds.borrow_mut().remove(&self.fd);
    }
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

enum Failure {
    /// A reused connection was closed before any response byte: safe to retry once.
    StaleConnection,
    Error(RequestError),
}

fn io_failure(kind: &str, e: &std::io::Error) -> Failure {
    Failure::Error(RequestError::new(None, kind, e.to_string()))
}

/// A malformed or oversized response head (aiohttp's name for it).
fn head_failure(e: HttpError) -> Failure {
    Failure::Error(RequestError::new(
        None,
        "ClientResponseError",
        e.to_string(),
    ))
}

/// A body that breaks its framing, ends early or exceeds the limit (aiohttp's name for it).
fn body_failure(e: HttpError) -> Failure {
    Failure::Error(RequestError::new(None, "ClientPayloadError", e.to_string()))
}

async fn attempt_once(
    shared: &Shared,
    state: &Rc<WorkerState>,
    rec: &mut RawRecord,
    may_reuse: bool,
) -> Result<(), Failure> {
    let url = rec.url_index as usize;
    let pooled = if may_reuse {
        state.pool.take(url)
    } else {
        None
    };
    let reused = pooled.is_some();
    let mut conn = match pooled {
        Some(c) => c,
        None => {
            let stream = TcpStream::connect_addr(shared.urls[url])
                .await
                .map_err(|e| io_failure("ClientConnectorError", &e))?;
            let _ = stream.set_nodelay(true);
            Conn::new(stream)
        }
    };
    rec.conn_reused = reused;
    let _registered = InFlight::register(state, conn.stream.as_raw_fd());
    if shared.clock.now_ns() >= shared.control.cut_at_ns() {
        return Err(Failure::Error(cancelled_error()));
    }

    let template = &shared.templates[url][rec.credit.template as usize];
    let mut wbuf = std::mem::take(&mut conn.wbuf);
    wbuf.clear();
    wbuf.extend_from_slice(&template.bytes);
    let [rid, cid] = template.id_slots;
    for &slot in &template.copy_slots {
        crate::http::write_uuid(&mut wbuf, slot, &rec.correlation_id);
    }
    crate::http::write_uuid(&mut wbuf, rid, &rec.request_id);
    crate::http::write_uuid(&mut wbuf, cid, &rec.correlation_id);

    rec.start_ns = shared.clock.now_ns();
    let (res, wbuf) = conn.stream.write_all(wbuf).await;
    conn.wbuf = wbuf;
    match res {
        Ok(n) => rec.bytes_sent = n as u64,
        Err(e) if reused => {
            let _ = e;
            return Err(Failure::StaleConnection);
        }
        Err(e) => return Err(io_failure("ClientOSError", &e)),
    }

    let keep_alive = read_response(shared, state, &mut conn, rec, reused).await?;
    if keep_alive && conn.rbuf.is_empty() && state.pool_enabled {
        state.pool.put(url, conn);
    }
    Ok(())
}

/// Reads one response into `rec`. Returns whether the connection may be reused.
async fn read_response(
    shared: &Shared,
    state: &Rc<WorkerState>,
    conn: &mut Conn,
    rec: &mut RawRecord,
    reused: bool,
) -> Result<bool, Failure> {
    let mut decoder: Option<BodyDecoder> = None;
    let mut framer = Framer::default();
    let mut keep_alive = false;
    conn.rbuf.clear();
    loop {
        // Read after whatever is still buffered.
        if conn.rbuf.len() == conn.rbuf.capacity() {
            if decoder.is_none() && conn.rbuf.capacity() < MAX_HEAD_BUFFER {
                conn.rbuf.reserve(conn.rbuf.capacity());
            } else if decoder.is_none() {
                return Err(head_failure(HttpError::HeadTooLarge));
            }
        }
        let buf = std::mem::take(&mut conn.rbuf);
        let len = buf.len();
        let cap = buf.capacity();
        let (res, slice) = conn
            .stream
            .read(monoio::buf::IoBufMut::slice_mut(buf, len..cap))
            .await;
        // The stamp of this read, taken before any parsing.
        let stamp = shared.clock.now_ns();
        conn.rbuf = slice.into_inner();
        let n = match res {
            Ok(n) => n,
            Err(e) if reused && rec.bytes_received == 0 => {
                let _ = e;
                return Err(Failure::StaleConnection);
            }
            // No response byte yet: the connection failed, not the payload (aiohttp's
            // ClientOSError, e.g. a reset right after the request was sent).
            Err(e) if rec.bytes_received == 0 => return Err(io_failure("ClientOSError", &e)),
            Err(e) => return Err(io_failure("ClientPayloadError", &e)),
        };
        if n == 0 {
            // End of stream.
            if let Some(d) = decoder.as_mut() {
                if d.finish_eof().is_ok() {
                    rec.end_ns = stamp;
                    finish_events(rec, &mut framer, stamp);
                    return Ok(false);
                }
                return Err(body_failure(HttpError::UnexpectedEof));
            }
            if reused && rec.bytes_received == 0 {
                return Err(Failure::StaleConnection);
            }
            return Err(Failure::Error(RequestError::new(
                None,
                "ServerDisconnectedError",
                "Server disconnected before the response head was complete",
            )));
        }
        rec.bytes_received += n as u64;

        if decoder.is_none() {
            match parse_head(&conn.rbuf).map_err(head_failure)? {
                Status::Partial => continue,
                Status::Complete(head) => {
                    if head.is_interim() {
                        conn.rbuf.drain(..head.head_len);
                        continue;
                    }
                    rec.head_ns = Some(stamp);
                    rec.status = head.status;
                    rec.is_sse = head.event_stream;
                    keep_alive = head.keep_alive;
                    if !(200..300).contains(&head.status) {
                        state.set_reason(head.reason_str(&conn.rbuf));
                    }
                    decoder = Some(
                        BodyDecoder::new(BodyKind::from_head(&head, false))
                            .with_max_body_bytes(shared.max_body_bytes),
                    );
                    conn.rbuf.drain(..head.head_len);
                }
            }
        }
        let Some(d) = decoder.as_mut() else { continue };
        let feed = d.feed(&conn.rbuf, &mut rec.body).map_err(body_failure)?;
        conn.rbuf.drain(..feed.consumed);
        if rec.is_sse {
            while let Some(r) = framer.next_message(&rec.body) {
                rec.events.push(Event {
                    stamp_ns: stamp,
                    start: r.start as u32,
                    end: r.end as u32,
                });
            }
        }
        if feed.done {
            rec.end_ns = stamp;
            finish_events(rec, &mut framer, stamp);
            return Ok(keep_alive);
        }
    }
}

/// Closes the event list: trailing SSE data without a final blank line, or the single event of
/// a non-SSE body.
fn finish_events(rec: &mut RawRecord, framer: &mut Framer, stamp: u64) {
    if rec.is_sse {
        while let Some(r) = framer.finish(&rec.body) {
            rec.events.push(Event {
                stamp_ns: stamp,
                start: r.start as u32,
                end: r.end as u32,
            });
        }
    } else if !rec.body.is_empty() {
        rec.events.push(Event {
            stamp_ns: stamp,
            start: 0,
            end: rec.body.len() as u32,
        });
    }
}
