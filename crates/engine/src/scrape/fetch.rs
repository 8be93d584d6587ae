//! One HTTP/1.1 fetch of a metrics page on the scraper's monoio runtime, through the shared
//! [`ringperf_io::net::Exchange`].
//!
//! Connect (bounded by the connect timeout), write a pre-encoded `GET`/`HEAD`, read with every
//! read bounded by the read timeout (a server that sends its head and then stalls is caught, as
//! with AIPerf's `sock_read`), and stamp the first response byte. A `Content-Type:
//! application/json` answer, or any status but 200, is returned as soon as its head is parsed,
//! without reading the body. Keep-alive connections are pooled per endpoint by the caller
//! ([`Pool`]).

use std::net::SocketAddr;
use std::time::Duration;

use ringperf_io::net::{self, AfterHead, Exchange, Limits, Sink};
use ringperf_wire::clock::Clock;
use ringperf_wire::http::{BodyKind, Head, HttpError};

use super::endpoint::Target;

pub use ringperf_io::net::Pool;

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
    /// `Content-Type` is `application/openmetrics-text`: the page is grouped as OpenMetrics.
    pub openmetrics: bool,
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

/// A pool for one endpoint's connections.
#[must_use]
pub fn endpoint_pool() -> Pool {
    Pool::new(1, READ_CHUNK)
}

/// Sends the target's `GET` (or, `head_only`, its `HEAD`) and reads the answer, over TLS for an
/// `https` target. Retries once on a fresh connection when a pooled one turns out closed before
/// any response byte.
///
/// # Errors
/// The connect (TLS handshake included), write or read failed or timed out, or the answer is
/// not HTTP/1.1.
pub async fn fetch(
    target: &Target,
    head_only: bool,
    pool: &Pool,
    clock: &Clock,
    t: Timeouts,
) -> Result<Response, FetchError> {
    let request = if head_only { &target.head } else { &target.get };
    let limits = Limits {
        connect_timeout: Some(t.connect),
        read_timeout: Some(t.read),
        attempt_timeout: None,
        max_body_bytes: MAX_PAGE_BYTES,
    };
    let exchange = Exchange {
        addr: &target.addr,
        tls: target.tls.as_ref(),
        pool,
        slot: 0,
        reuse: true,
        head_request: head_only,
        clock,
        // The scraper's first-byte stamps are user-space ones.
        kernel_stamps: false,
        tcp_info: false,
        limits: &limits,
        deadline_ns: None,
        cancel_after_sent: None,
        cut: None,
    };
    let mut page = Page {
        request,
        head_only,
        response: Response {
            status: 0,
            json: false,
            openmetrics: false,
            body: Vec::new(),
            sent_ns: 0,
            first_byte_ns: 0,
            end_ns: 0,
        },
        first_byte_ns: None,
    };
    exchange
        .run(&mut page)
        .await
        .map_err(|e| fetch_error(target.addr, e))?;
    Ok(page.response)
}

/// The scraper's reading of an exchange failure.
fn fetch_error(addr: SocketAddr, e: net::Error) -> FetchError {
    use net::Error as E;
    match e {
        E::Connect(e) => FetchError::Io(format!("cannot connect to {addr}: {e}")),
        E::ConnectTimeout => FetchError::Timeout("connect"),
        E::Write(e) => FetchError::Io(format!("write failed: {e}")),
        E::Read { error, .. } => FetchError::Io(format!("read failed: {error}")),
        E::ReadTimeout { .. } => FetchError::Timeout("read"),
        E::Closed { received: false } => {
            FetchError::Io("server closed the connection before answering".into())
        }
        E::Closed { received: true } => FetchError::Http(HttpError::UnexpectedEof),
        E::Head(e) | E::Body(e) => FetchError::Http(e),
        // Names the URL and says whether the certificate was refused.
        E::Tls(e) => FetchError::Io(e.to_string()),
        // None is set up for a fetch (no cut, no attempt bound, no cancellation); said as what
        // they are.
        E::Cut | E::TimedOut | E::Cancelled => FetchError::Io(e.to_string()),
    }
}

/// The scraper's side of an exchange: the page and its stamps.
struct Page<'a> {
    request: &'a [u8],
    head_only: bool,
    response: Response,
    first_byte_ns: Option<u64>,
}

impl Page<'_> {
    fn end(&mut self, stamp_ns: u64) {
        self.response.first_byte_ns = self.first_byte_ns.unwrap_or(stamp_ns);
        self.response.end_ns = stamp_ns;
    }
}

impl Sink for Page<'_> {
    fn encode(&mut self, wbuf: &mut Vec<u8>, _reused: bool) {
        wbuf.extend_from_slice(self.request);
    }

    fn on_send(&mut self, sent_ns: u64) {
        self.response.sent_ns = sent_ns;
    }

    fn on_read(&mut self, _bytes: usize, stamp: ringperf_io::net::ReadStamp) {
        self.first_byte_ns.get_or_insert(stamp.best_ns());
    }

    fn on_head(&mut self, head: &Head, _raw: &[u8], stamp_ns: u64) -> AfterHead {
        self.response.status = head.status;
        self.response.json = head.content_type_json;
        self.response.openmetrics = head.content_type_openmetrics;
        // Rejected without reading the body; the connection is dropped.
        if head.content_type_json || head.status != 200 {
            self.end(stamp_ns);
            return AfterHead::Stop;
        }
        if let BodyKind::Length(n) = BodyKind::from_head(head, self.head_only) {
            let n = usize::try_from(n.min(MAX_PAGE_BYTES)).unwrap_or(0);
            self.response.body.reserve(n);
        }
        AfterHead::ReadBody
    }

    fn body(&mut self) -> &mut Vec<u8> {
        &mut self.response.body
    }

    fn on_end(&mut self, stamp_ns: u64) {
        self.end(stamp_ns);
    }
}
