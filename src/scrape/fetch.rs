//! One HTTP/1.1 fetch of a metrics page on the scraper's monoio runtime.
//!
//! Connect (bounded by the connect timeout), write a pre-encoded `GET`/`HEAD`, read with every
//! read bounded by the read timeout (a server that sends its head and then stalls is caught, as
//! with AIPerf's `sock_read`), and stamp the first response byte. A `Content-Type:
//! application/json` answer is returned as soon as its head is parsed, without reading the body.
//! Keep-alive connections are pooled per endpoint by the caller ([`Pool`]).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::time::Duration;

use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::TcpStream;

use crate::clock::Clock;
use crate::http::{BodyDecoder, BodyKind, HttpError, Status, parse_head};

/// Largest metrics page accepted (a 10k-series page is about 1 MB).
pub const MAX_PAGE_BYTES: u64 = 256 << 20;

/// Read buffer size of one connection.
const READ_CHUNK: usize = 64 * 1024;

/// Timeouts of one fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP connect.
    pub connect: Duration,
    /// Each read of the response (head or body).
    pub read: Duration,
}

/// A successful exchange (any status).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// `Content-Type` is `application/json` (or `+json`); the body was not read.
    pub json: bool,
    /// Decoded body (empty for `HEAD`, for JSON and for non-200 answers).
    pub body: Vec<u8>,
    /// Monotonic stamp just before the request was written.
    pub sent_ns: u64,
    /// Monotonic stamp of the read that brought the first response byte.
    pub first_byte_ns: u64,
    /// Monotonic stamp after the body was read.
    pub end_ns: u64,
}

/// Why a fetch failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchError {
    /// Connect, write or read failed at the socket.
    Io(String),
    /// The response does not parse as HTTP/1.1.
    Http(HttpError),
    /// A connect or read took longer than its timeout.
    Timeout(&'static str),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Io(e) => f.write_str(e),
            FetchError::Http(e) => write!(f, "{e}"),
            FetchError::Timeout(what) => write!(f, "{what} timed out"),
        }
    }
}

/// Idle keep-alive connections of one endpoint (the scraper is single-threaded).
#[derive(Debug, Default)]
pub struct Pool {
    idle: RefCell<Vec<TcpStream>>,
}

impl Pool {
    /// Drops every idle connection (after the endpoint's address changed).
    pub fn clear(&self) {
        self.idle.borrow_mut().clear();
    }
}

/// Sends `request` to `addr` and reads the answer; `head_only` for a `HEAD` request. Retries once
/// on a fresh connection when a pooled one turns out closed before any response byte.
pub async fn fetch(
    addr: SocketAddr,
    request: &[u8],
    head_only: bool,
    pool: &Pool,
    clock: &Clock,
    t: Timeouts,
) -> Result<Response, FetchError> {
    let pooled = pool.idle.borrow_mut().pop();
    if let Some(stream) = pooled {
        match exchange(stream, request, head_only, clock, t).await {
            Ok((resp, keep)) => {
                if let Some(s) = keep {
                    pool.idle.borrow_mut().push(s);
                }
                return Ok(resp);
            }
            Err((_, false)) => {}
            Err((e, true)) => return Err(e),
        }
    }
    let stream = match monoio::time::timeout(t.connect, TcpStream::connect_addr(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(FetchError::Io(format!("cannot connect to {addr}: {e}"))),
        Err(_) => return Err(FetchError::Timeout("connect")),
    };
    let _ = stream.set_nodelay(true);
    match exchange(stream, request, head_only, clock, t).await {
        Ok((resp, keep)) => {
            if let Some(s) = keep {
                pool.idle.borrow_mut().push(s);
            }
            Ok(resp)
        }
        Err((e, _)) => Err(e),
    }
}

/// One request on `stream`. On error, the flag says whether any response byte arrived (a
/// pooled connection that failed before that may be retried).
async fn exchange(
    mut stream: TcpStream,
    request: &[u8],
    head_only: bool,
    clock: &Clock,
    t: Timeouts,
) -> Result<(Response, Option<TcpStream>), (FetchError, bool)> {
    let sent_ns = clock.now_ns();
    let (res, _) = stream.write_all(request.to_vec()).await;
    if let Err(e) = res {
        return Err((FetchError::Io(format!("write failed: {e}")), false));
    }
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut first_byte_ns = None;
    let mut head = None;
    let mut decoder: Option<BodyDecoder> = None;
    let mut body = Vec::new();
    loop {
        if buf.len() == buf.capacity() {
            buf.reserve(READ_CHUNK);
        }
        let len = buf.len();
        let cap = buf.capacity();
        let read = stream.read(monoio::buf::IoBufMut::slice_mut(buf, len..cap));
        let (res, slice) = match monoio::time::timeout(t.read, read).await {
            Ok(r) => r,
            Err(_) => return Err((FetchError::Timeout("read"), first_byte_ns.is_some())),
        };
        let stamp = clock.now_ns();
        buf = slice.into_inner();
        let got_any = first_byte_ns.is_some();
        let n = match res {
            Ok(n) => n,
            Err(e) => return Err((FetchError::Io(format!("read failed: {e}")), got_any)),
        };
        if n == 0 {
            if let Some(d) = decoder.as_mut()
                && d.finish_eof().is_ok()
                && let Some((status, json, _)) = head
            {
                let resp = Response {
                    status,
                    json,
                    body,
                    sent_ns,
                    first_byte_ns: first_byte_ns.unwrap_or(stamp),
                    end_ns: stamp,
                };
                return Ok((resp, None));
            }
            let e = if got_any {
                FetchError::Http(HttpError::UnexpectedEof)
            } else {
                FetchError::Io("server closed the connection before answering".into())
            };
            return Err((e, got_any));
        }
        first_byte_ns.get_or_insert(stamp);
        if decoder.is_none() {
            let h = match parse_head(&buf) {
                Ok(Status::Complete(h)) => h,
                Ok(Status::Partial) => continue,
                Err(e) => return Err((FetchError::Http(e), true)),
            };
            if h.is_interim() {
                buf.drain(..h.head_len);
                continue;
            }
            head = Some((h.status, h.content_type_json, h.keep_alive));
            // Rejected without reading the body; the connection is dropped.
            if h.content_type_json || h.status != 200 {
                let resp = Response {
                    status: h.status,
                    json: h.content_type_json,
                    body: Vec::new(),
                    sent_ns,
                    first_byte_ns: first_byte_ns.unwrap_or(stamp),
                    end_ns: stamp,
                };
                return Ok((resp, None));
            }
            let kind = BodyKind::from_head(&h, head_only);
            let mut d = BodyDecoder::new(kind).with_max_body_bytes(MAX_PAGE_BYTES);
            if let BodyKind::Length(n) = kind {
                body.reserve(usize::try_from(n.min(MAX_PAGE_BYTES)).unwrap_or(0));
            }
            buf.drain(..h.head_len);
            let fed = d
                .feed(&buf, &mut body)
                .map_err(|e| (FetchError::Http(e), true))?;
            buf.drain(..fed.consumed);
            decoder = Some(d);
        } else if let Some(d) = decoder.as_mut() {
            let fed = d
                .feed(&buf, &mut body)
                .map_err(|e| (FetchError::Http(e), true))?;
            buf.drain(..fed.consumed);
        }
        if let (Some(d), Some((status, json, keep_alive))) = (decoder.as_ref(), head)
            && d.is_done()
        {
            let resp = Response {
                status,
                json,
                body,
                sent_ns,
                first_byte_ns: first_byte_ns.unwrap_or(stamp),
                end_ns: stamp,
            };
            let reuse = keep_alive && buf.is_empty();
            return Ok((resp, reuse.then_some(stream)));
        }
    }
}
