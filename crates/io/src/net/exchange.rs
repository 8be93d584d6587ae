//! One HTTP/1.1 exchange: take a pooled keep-alive connection or connect, write the request,
//! read the response, and hand every piece of it to the caller's [`Sink`] as it arrives.
//!
//! Each read is stamped the moment it completes, before any parsing, and the stamp goes with
//! everything that read brought (head, body bytes, end). With kernel stamps on
//! ([`Exchange::kernel_stamps`]), every socket gets `SO_TIMESTAMPING` at connect and each read
//! carries the kernel's receive stamp beside the user-space one ([`ReadStamp`]); the hooks that
//! take one `stamp_ns` get [`ReadStamp::best_ns`], the kernel's when there is one. The response head goes through
//! [`parse_head`] and the body through [`BodyDecoder`] (content-length, chunked or until-close),
//! which appends straight into the sink's buffer: no copy of the payload besides the decoder's.
//!
//! A pooled connection that fails before any response byte arrives (the server may have closed
//! it while it was idle) is retried once on a fresh connection. Every other failure is one
//! [`Error`], which each caller maps to its own reporting.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use monoio::net::TcpStream;

use crate::control::RunControl;
use ringperf_wire::clock::Clock;
use ringperf_wire::http::{
    BodyDecoder, BodyKind, Head, HttpError, MAX_HEAD_BYTES, Status, parse_head,
};

use super::batch;
use super::multishot::Multishot;
use super::pool::{Conn, Pool};
use super::rxstamp::{self, ReadStamp};
use super::tls::{self, Connector, Stream, TlsError};

/// Smallest growth of a read buffer that is full while the head is still partial.
const MIN_READ_BUF_BYTES: usize = 4 * 1024;

/// What the exchange does once the final response head has arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterHead {
    /// Read and decode the body.
    ReadBody,
    /// End the exchange here, successfully, without reading the body; the connection is closed.
    Stop,
}

/// The caller's side of an exchange: it supplies the request and keeps what it needs of the
/// response. The exchange is generic over it, so every call is static; the calls are per read,
/// never per byte.
pub trait Sink {
    /// An attempt begins, `start_ns` stamped before a pooled connection is taken or a fresh
    /// one opened. Called once per attempt, first.
    fn on_attempt(&mut self, start_ns: u64) {
        let _ = start_ns;
    }

    /// A fresh connection opened for this attempt: `start_ns` before the TCP connect,
    /// `ready_ns` once it (and, for `https`, the TLS handshake) completed.
    fn on_connected(&mut self, start_ns: u64, ready_ns: u64) {
        let _ = (start_ns, ready_ns);
    }

    /// The attempt runs on a connection whose socket's local address is `local` (read once
    /// when the connection opened, so the same for every request on it). Called once per
    /// attempt, before [`Sink::encode`].
    fn on_socket(&mut self, local: Option<SocketAddr>) {
        let _ = local;
    }

    /// Writes the request into `wbuf` (empty; freed once the request is written, so a stream
    /// awaiting its response holds no copy of its request). `reused`: the connection comes from
    /// the pool. Called once per attempt.
    fn encode(&mut self, wbuf: &mut Vec<u8>, reused: bool);

    /// Bytes to write after [`Sink::encode`]'s, straight from where they are kept (no copy
    /// into the connection's buffer): a large body shared by every request that sends it.
    /// Called once per attempt, right after `encode`.
    fn shared_tail(&mut self) -> Option<bytes::Bytes> {
        None
    }

    /// The request is about to be written; `sent_ns` is stamped just before the write.
    fn on_send(&mut self, sent_ns: u64);

    /// The whole request, `bytes` long, was written; `stamp_ns` was taken when the write
    /// completed.
    fn on_sent(&mut self, bytes: usize, stamp_ns: u64) {
        let _ = (bytes, stamp_ns);
    }

    /// A read brought `bytes` (> 0) response bytes, with `stamp`; the hooks that follow for the
    /// same read get its [`ReadStamp::best_ns`].
    fn on_read(&mut self, bytes: usize, stamp: ReadStamp) {
        let _ = (bytes, stamp);
    }

    /// The final (non-1xx) response head, parsed from the start of `raw`, arrived with the read
    /// stamped `stamp_ns`.
    fn on_head(&mut self, head: &Head, raw: &[u8], stamp_ns: u64) -> AfterHead;

    /// Where decoded body bytes are appended.
    fn body(&mut self) -> &mut Vec<u8>;

    /// The body bytes of the read stamped `stamp_ns` were appended to [`Sink::body`].
    fn on_body(&mut self, stamp_ns: u64) {
        let _ = stamp_ns;
    }

    /// The body is complete; `stamp_ns` is the stamp of the read that completed it.
    fn on_end(&mut self, stamp_ns: u64);

    /// The kernel's RTT estimate of the connection as the response completed (only when
    /// [`Exchange::tcp_info`] asks for it and the socket gives one).
    fn on_tcp_info(&mut self, _rtt: super::tcpinfo::Rtt) {}
}

/// Bounds on an exchange that a client keeps once for all its exchanges (each exchange borrows
/// them); a request's own bounds are [`Exchange::deadline_ns`] and
/// [`Exchange::cancel_after_sent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bound on the TCP connect and, for `https`, the TLS handshake (`None`: only the attempt's
    /// bounds apply).
    pub connect_timeout: Option<Duration>,
    /// Bound on each read of the response, head or body.
    pub read_timeout: Option<Duration>,
    /// Bound on each attempt (connect, write and read), from its start.
    pub attempt_timeout: Option<Duration>,
    /// Largest decoded body accepted.
    pub max_body_bytes: u64,
}

/// How a run cuts its exchanges short (the worker's requests; the scraper has no cut).
#[derive(Clone, Copy, Debug)]
pub struct Cut<'a> {
    /// Its cut time: no request is written once it has passed.
    pub control: &'a RunControl,
    /// Sockets of exchanges in flight, kept for the owner to shut down at the cut so that their
    /// pending reads end at once. A socket is removed before its connection is pooled or dropped.
    pub open_fds: &'a RefCell<HashSet<RawFd>>,
}

/// How long a request that found no free descriptor waits before it tries to connect again.
const DESCRIPTOR_RETRY: Duration = Duration::from_millis(1);

thread_local! {
    /// Connects on this thread that found the process out of descriptors and waited.
    static DESCRIPTOR_WAITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Requests on this thread that found their pool at its connection limit and waited.
    static CONNECTION_WAITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many requests on this thread found their pool at its connection limit and waited.
pub fn connection_waits() -> u64 {
    CONNECTION_WAITS.with(std::cell::Cell::get)
}

/// How many times a connect on this thread found the process out of file descriptors
/// (`EMFILE`, or `ENFILE` for the whole system) and waited for one.
pub fn descriptor_waits() -> u64 {
    DESCRIPTOR_WAITS.with(std::cell::Cell::get)
}

fn is_descriptor_exhaustion(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// One exchange to describe; [`Exchange::run`] performs it. Built per request from borrowed
/// parts, so building it costs nothing, and it borrows what its client keeps once (the
/// address, the clock, the limits) rather than copying it: a streaming request keeps its
/// exchange for as long as the response takes (#41: 200 bytes with those copied, 104 now).
#[derive(Clone, Copy, Debug)]
pub struct Exchange<'a> {
    /// Where a fresh connection goes.
    pub addr: &'a SocketAddr,
    /// `https`: the TLS session every fresh connection opens (its handshake is part of the
    /// connect); `None` for plain `http`.
    pub tls: Option<&'a Connector>,
    /// Idle connections to `addr` live in `pool[slot]`.
    pub pool: &'a Pool,
    pub slot: usize,
    /// Put the connection back into the pool after a complete keep-alive response.
    pub reuse: bool,
    /// The request is a `HEAD`: the response has no body whatever its headers say.
    pub head_request: bool,
    /// The clock of every stamp.
    pub clock: &'a Clock,
    /// Enable kernel receive stamps on every fresh connection and read with them. A socket
    /// that refuses the option is read with user-space stamps only.
    pub kernel_stamps: bool,
    /// Read the connection's `TCP_INFO` round-trip estimate as each response completes
    /// ([`Sink::on_tcp_info`]).
    pub tcp_info: bool,
    pub limits: &'a Limits,
    /// No attempt of this exchange runs past this monotonic ns.
    pub deadline_ns: Option<u64>,
    /// Abandon the response this long after the request was fully written, closing the
    /// connection ([`Error::Cancelled`]): AIPerf's request cancellation, whose timer starts once
    /// the server has the whole request. Zero disconnects right after the write.
    pub cancel_after_sent: Option<Duration>,
    pub cut: Option<Cut<'a>>,
}

/// Why an exchange failed.
#[derive(Debug)]
pub enum Error {
    /// The TCP connect failed.
    Connect(io::Error),
    /// The TCP connect (with the TLS handshake, for `https`) did not finish within
    /// [`Limits::connect_timeout`].
    ConnectTimeout,
    /// The TLS handshake failed (a refused certificate among others). Boxed: the error is
    /// 88 bytes, and every caller that awaits an exchange keeps room for its result.
    Tls(Box<TlsError>),
    /// The run's cut time had passed before the request was written.
    Cut,
    /// Writing the request failed.
    Write(io::Error),
    /// A read failed; `received`: some response byte had arrived before it.
    Read { error: io::Error, received: bool },
    /// A read did not complete within [`Limits::read_timeout`].
    ReadTimeout { received: bool },
    /// The server closed the connection before the response head was complete.
    Closed { received: bool },
    /// The response head is malformed or too large.
    Head(HttpError),
    /// The body breaks its framing, ends early or exceeds [`Limits::max_body_bytes`].
    Body(HttpError),
    /// The attempt did not finish within [`Limits::attempt_timeout`] or by
    /// [`Exchange::deadline_ns`].
    TimedOut,
    /// The response was abandoned [`Exchange::cancel_after_sent`] after the request was
    /// written.
    Cancelled,
}

impl Error {
    /// The failure came before any response byte, so a pooled connection may just have been
    /// closed by the server while idle.
    fn before_response(&self) -> bool {
        match self {
            Error::Write(_) => true,
            Error::Read { received, .. }
            | Error::ReadTimeout { received }
            | Error::Closed { received } => !received,
            _ => false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Connect(e) => write!(f, "cannot connect: {e}"),
            Error::ConnectTimeout => f.write_str("connect timed out"),
            Error::Tls(e) => write!(f, "{e}"),
            Error::Cut => f.write_str("the run was cut before the request was written"),
            Error::Write(e) => write!(f, "write failed: {e}"),
            Error::Read { error, .. } => write!(f, "read failed: {error}"),
            Error::ReadTimeout { .. } => f.write_str("read timed out"),
            Error::Closed { received: false } => {
                f.write_str("server closed the connection before answering")
            }
            Error::Closed { received: true } => {
                f.write_str("server closed the connection before the response head was complete")
            }
            Error::Head(e) | Error::Body(e) => write!(f, "{e}"),
            Error::TimedOut => f.write_str("exchange timed out"),
            Error::Cancelled => f.write_str("the request was cancelled after it was sent"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Connect(e) | Error::Write(e) | Error::Read { error: e, .. } => Some(e),
            Error::Head(e) | Error::Body(e) => Some(e),
            Error::Tls(e) => Some(&**e),
            _ => None,
        }
    }
}

/// A failed attempt. `stale`: it ran on a pooled connection and failed before any response
/// byte, so one retry on a fresh connection is safe.
struct Failed {
    error: Error,
    stale: bool,
}

impl Failed {
    fn new(error: Error, reused: bool) -> Self {
        let stale = reused && error.before_response();
        Self { error, stale }
    }
}

/// Keeps a socket in the cut's in-flight set while alive.
struct InFlight<'a> {
    open_fds: &'a RefCell<HashSet<RawFd>>,
    fd: RawFd,
}

impl<'a> InFlight<'a> {
    fn register(open_fds: &'a RefCell<HashSet<RawFd>>, fd: RawFd) -> Self {
        open_fds.borrow_mut().insert(fd);
        Self { open_fds, fd }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.open_fds.borrow_mut().remove(&self.fd);
    }
}

/// Awaits `$read` (a read or a wait for one) of exchange `$ex`, bounded by its read timeout when
/// one is set (boxed then, so that an unbounded read, the worker's, reserves no timer); a
/// `Result` whose error is [`Error::ReadTimeout`] with `received: $received`.
///
/// A macro, not an `async fn`: a future passed to an `async fn` is kept twice in its state (the
/// argument, and the awaited copy), and the plain read's future is the largest part of an
/// in-flight request's read path.
macro_rules! within_read_timeout {
    ($ex:expr, $read:expr, $received:expr) => {
        match $ex.limits.read_timeout {
            None => Ok($read.await),
            Some(t) => Box::pin(monoio::time::timeout(t, $read))
                .await
                .map_err(|_| Error::ReadTimeout {
                    received: $received,
                }),
        }
    };
}

impl Exchange<'_> {
    /// Sends the request `sink` encodes and reads the response into `sink`, on a pooled
    /// connection when one is idle; retries once on a fresh connection when the pooled one
    /// fails before any response byte.
    ///
    /// The exchange's steps are functions that return an `async` block, not `async fn`s: an
    /// `async fn` keeps each argument twice (as passed, and the binding it is moved into) for as
    /// long as it runs, and these run for as long as a response takes.
    ///
    /// # Errors
    /// The failure of the last attempt.
    #[allow(clippy::manual_async_fn)] // an `async fn` keeps its arguments twice (see `run`)
    pub fn run<S: Sink>(&self, sink: &mut S) -> impl Future<Output = Result<(), Error>> {
        async move {
            // A loop, not a `match` on the first attempt's result with the retry in an arm: the
            // retry awaits in the same place as the first attempt, and no failure is kept
            // beside it. Each attempt is bounded by the attempt timeout and the deadline when
            // either is set, in this block (one level of the request's future, not two, each
            // keeping the exchange and the sink: #41).
            let mut may_reuse = true;
            loop {
                // Pinned in place: the timeout holds a pointer to the attempt, not a copy of its
                // (large) state.
                let attempt = std::pin::pin!(self.attempt(sink, may_reuse));
                let result = match self.attempt_budget() {
                    None => attempt.await,
                    // The pinned reference moves into the timeout: no second one is kept beside
                    // it.
                    Some(budget) => monoio::time::timeout(budget, attempt)
                        .await
                        .unwrap_or_else(|_| Err(Failed::new(Error::TimedOut, false))),
                };
                match result {
                    Err(Failed { stale: true, .. }) if may_reuse => may_reuse = false,
                    r => return r.map_err(|f| f.error),
                }
            }
        }
    }

    /// Time left for an attempt starting now, if it is bounded.
    fn attempt_budget(&self) -> Option<Duration> {
        let (attempt_timeout, deadline_ns) = (self.limits.attempt_timeout, self.deadline_ns);
        if attempt_timeout.is_none() && deadline_ns.is_none() {
            return None;
        }
        let now = self.clock.now_ns();
        let timeout_ns = attempt_timeout.map_or(u64::MAX, |t| {
            t.as_nanos().min(u128::from(u64::MAX / 4)) as u64
        });
        let deadline = now
            .saturating_add(timeout_ns)
            .min(deadline_ns.unwrap_or(u64::MAX));
        Some(Duration::from_nanos(deadline.saturating_sub(now)))
    }

    #[allow(clippy::manual_async_fn)] // an `async fn` keeps its arguments twice (see `run`)
    fn attempt<S: Sink>(
        &self,
        sink: &mut S,
        may_reuse: bool,
    ) -> impl Future<Output = Result<(), Failed>> {
        async move {
            sink.on_attempt(self.clock.now_ns());
            // `if let`, not a `match` on a binding: the pooled `Option` is gone before the
            // connect's await, so the request's future does not keep room for it beside `conn`.
            // A fresh connection (its waits, the connect, the TLS handshake) is boxed: its state
            // is kept only while it opens, not in every request's future for as long as the
            // response takes.
            let (mut conn, reused) =
                if let Some(c) = may_reuse.then(|| self.pool.take(self.slot)).flatten() {
                    (c, true)
                } else {
                    Box::pin(self.fresh(sink, may_reuse)).await?
                };
            let in_flight = self
                .cut
                .map(|c| InFlight::register(c.open_fds, conn.stream.as_raw_fd()));

            sink.on_socket(conn.local.get());
            // Neither part is a local that is borrowed or kept: both move into the write, whose
            // future frees the request's copy once written, so a stream in flight holds no write
            // buffer (each request's is its own) and its future keeps no room for one.
            let (wbuf, tail) = encode(sink, reused);
            if let Some(c) = self.cut
                && self.clock.now_ns() >= c.control.cut_at_ns()
            {
                return Err(Failed::new(Error::Cut, reused));
            }
            sink.on_send(self.clock.now_ns());
            // A plain connection's request in one write of its own; TLS and a large shared body
            // (two writes) through `write_request`. Both boxed while they run (one allocation a
            // request, freed once the request is written): a request writes once but reads for as
            // long as the response takes, so the attempt's future keeps room for the read only
            // (#41: the plain write, 208 bytes, was its largest state beside the read's 216).
            // (`matches!`, not `is_none`: a borrowed local keeps its room across the write; and the
            // empty tail is dropped before it, or its drop at the end would keep it there.) The
            // write's result lives in a block of its own, so the read keeps no room for it.
            #[allow(clippy::redundant_pattern_matching)] // `is_none` borrows `tail`
            let one_write = matches!(tail, None) && matches!(conn.stream, Stream::Plain(_));
            let sent_ns = {
                let res = match &mut conn.stream {
                    Stream::Plain(tcp) if one_write => {
                        drop(tail);
                        Box::pin(Stream::write_plain(tcp, wbuf)).await.0
                    }
                    stream => Box::pin(stream.write_request(wbuf, tail)).await,
                };
                let sent_ns = self.clock.now_ns();
                match res {
                    Ok(n) => sink.on_sent(n, sent_ns),
                    Err(e) => return Err(Failed::new(Error::Write(e), reused)),
                }
                sent_ns
            };

            let response = self.read_response(&mut conn, sink, sent_ns);
            let read = match self.cancel_after_sent {
                None => response.await,
                // Dropping the read abandons the connection: the server sees the client go away.
                Some(after) => Box::pin(monoio::time::timeout(after, response))
                    .await
                    .unwrap_or(Err(Error::Cancelled)),
            };
            let keep_alive = read.map_err(|e| Failed::new(e, reused))?;
            // Out of the in-flight set before the connection is pooled (no await in between).
            drop(in_flight);
            if keep_alive
                && conn.rbuf.is_empty()
                && conn.stream.is_drained()
                && conn.multishot.as_ref().is_none_or(Multishot::is_idle)
                && self.reuse
            {
                self.pool.put(self.slot, conn);
            }
            Ok(())
        }
    }

    /// A connection for an attempt that found none idle (or may not reuse one): waits while the
    /// pool is at its limit (taking a connection that comes back idle, when it may), then
    /// connects, waiting for a descriptor while the process has none. Returns the connection
    /// and whether it came from the pool.
    async fn fresh<S: Sink>(&self, sink: &mut S, may_reuse: bool) -> Result<(Conn, bool), Failed> {
        loop {
            // At the pool's connection limit (`AIPERF_HTTP_CONNECTION_LIMIT`, as aiohttp's
            // connector `limit`): wait for a connection to come back idle or to close. The
            // wait is the request's (its latency runs); the attempt's time bounds and the
            // run's cut end it.
            if self.pool.at_limit() {
                CONNECTION_WAITS.with(|w| w.set(w.get() + 1));
                while self.pool.at_limit() {
                    if let Some(c) = may_reuse.then(|| self.pool.take(self.slot)).flatten() {
                        return Ok((c, true));
                    }
                    if self.pool.evict_other(self.slot) {
                        continue;
                    }
                    let wait = self.pool.wait();
                    match self.cut {
                        Some(c) => {
                            let left = c.control.cut_at_ns().saturating_sub(self.clock.now_ns());
                            if left == 0 {
                                return Err(Failed::new(Error::Cut, false));
                            }
                            // Looks at the cut again at least every 200 ms (a cut run's
                            // requests end by the cut, not by the pool).
                            let bound = Duration::from_nanos(left.min(200_000_000));
                            // Boxed, as the other rare waits below: a timer reserves
                            // room in the future of every request that opens a connection.
                            let _ = Box::pin(monoio::time::timeout(bound, wait)).await;
                        }
                        None => wait.await,
                    }
                }
            }
            let start_ns = self.clock.now_ns();
            let e = match self.connect().await {
                Ok(conn) => {
                    sink.on_connected(start_ns, self.clock.now_ns());
                    return Ok((conn, false));
                }
                Err(e) => e,
            };
            // Out of descriptors: the client's limit, not the server's failure. The request
            // waits for a descriptor to be freed, or for a connection to come back to the pool,
            // rather than failing: each wait is counted ([`descriptor_waits`]) and the
            // client-health verdict names the limit. The attempt's own time bounds and the run's
            // cut still end the wait.
            if !matches!(&e, Error::Connect(e) if is_descriptor_exhaustion(e)) {
                return Err(Failed::new(e, false));
            }
            DESCRIPTOR_WAITS.with(|w| w.set(w.get() + 1));
            if let Some(c) = self.cut
                && self.clock.now_ns() >= c.control.cut_at_ns()
            {
                return Err(Failed::new(e, false));
            }
            drop(e);
            monoio::time::sleep(DESCRIPTOR_RETRY).await;
            if let Some(c) = may_reuse.then(|| self.pool.take(self.slot)).flatten() {
                return Ok((c, true));
            }
        }
    }

    /// Opens a fresh connection (as [`Exchange::run`] would, bounded by the connect timeout)
    /// and leaves it idle in the pool, for a later exchange to take: a connection opened ahead
    /// of the requests that will use it.
    ///
    /// # Errors
    /// The connect's failure (nothing is pooled).
    pub async fn open_idle(&self) -> Result<(), Error> {
        let conn = self.connect().await?;
        self.pool.put(self.slot, conn);
        Ok(())
    }

    /// A fresh connection to `addr`, TLS handshake included for `https`, bounded by the connect
    /// timeout when set.
    async fn connect(&self) -> Result<Conn, Error> {
        let connect = self.open();
        match self.limits.connect_timeout {
            None => connect.await,
            // Boxed: a timer only for a connect that is bounded (the worker's are not).
            Some(t) => Box::pin(monoio::time::timeout(t, connect))
                .await
                .unwrap_or(Err(Error::ConnectTimeout)),
        }
    }

    async fn open(&self) -> Result<Conn, Error> {
        let open = self.pool.reserve();
        let tcp = TcpStream::connect_addr(*self.addr)
            .await
            .map_err(Error::Connect)?;
        let _ = tcp.set_nodelay(true);
        let kernel_stamps = self.kernel_stamps && rxstamp::enable(tcp.as_raw_fd()).is_ok();
        // One getsockname per connection; every request on it carries the answer.
        let local = tcp.local_addr().ok();
        let stream = match self.tls {
            None => Stream::Plain(tcp),
            Some(connector) => {
                // A cut ends a handshake waiting on the server as it ends any read.
                let _in_flight = self
                    .cut
                    .map(|c| InFlight::register(c.open_fds, tcp.as_raw_fd()));
                // Boxed: a plain connection's connect does not reserve the handshake's state.
                Box::pin(tls::handshake(tcp, connector))
                    .await
                    .map_err(|e| Error::Tls(Box::new(e)))?
            }
        };
        let mut conn = self.pool.wrap(stream, local, open);
        conn.kernel_stamps = kernel_stamps;
        if kernel_stamps && let Stream::Plain(tcp) = &conn.stream {
            conn.multishot = Multishot::start(tcp.as_raw_fd());
        }
        Ok(conn)
    }

    /// Reads one response into `sink`. Returns whether the connection may be reused.
    ///
    /// A read's stamp is never earlier than `sent_ns`, the stamp of the request's write
    /// completion: a fast server's answer can reach the kernel before the write returns to user
    /// space, and the exchange's phases (sending, then waiting) stay in order.
    ///
    /// A kernel-stamped plain connection with nothing carried over reads into the thread's
    /// [`READ_SCRATCH`]: it waits for readiness holding no buffer, and keeps only what a read
    /// leaves undecoded (a partial head, bytes after the body), so a connection in flight owns
    /// no read buffer. Other streams read into the connection's own buffer, allocated at its
    /// first read.
    #[allow(clippy::manual_async_fn)] // an `async fn` keeps its arguments twice (see `run`)
    fn read_response<S: Sink>(
        &self,
        conn: &mut Conn,
        sink: &mut S,
        sent_ns: u64,
    ) -> impl Future<Output = Result<bool, Error>> {
        async move {
            let mut st = ReadState::default();
            conn.rbuf.clear();
            loop {
                let step = if let Some(ms) = conn.multishot.as_ref() {
                    // The wait is the multishot slot's (a word): what a stream waiting for its
                    // next event keeps; the read itself takes no await.
                    within_read_timeout!(self, ms.ready(), st.received)?;
                    self.take_multishot(conn, &mut st, sink, sent_ns)?
                } else if conn.rbuf.is_empty()
                    && conn.kernel_stamps
                    && matches!(conn.stream, Stream::Plain(_))
                {
                    // Boxed per wait: monoio's readiness wait (104 bytes) is the readiness
                    // path's, not the multishot one's, and would otherwise be reserved in every
                    // request's future (one allocation per wait on this path, none on the
                    // multishot one); and no reference to the socket is kept beside it.
                    let ready = within_read_timeout!(self, readable(&conn.stream), st.received)?;
                    ready.map_err(|error| Error::Read {
                        error,
                        received: st.received,
                    })?;
                    let fd = conn.stream.as_raw_fd();
                    let max = self.pool.read_buf_bytes();
                    READ_SCRATCH.with_borrow_mut(|buf| {
                        buf.clear();
                        buf.reserve(max);
                        let (n, realtime_ns) = match rxstamp::recv_at_most(fd, buf, max) {
                            Ok(r) => r,
                            // A stale readiness: wait again.
                            Err(e) if rxstamp::is_not_ready(&e) => return Ok(Step::Again),
                            Err(error) => {
                                return Err(Error::Read {
                                    error,
                                    received: st.received,
                                });
                            }
                        };
                        let stamp = ReadStamp::now(self.clock, realtime_ns);
                        let step = self.take_read(&mut st, buf, n, stamp, sent_ns, sink);
                        // Whatever the read left undecoded stays with the connection.
                        conn.rbuf.extend_from_slice(buf);
                        buf.clear();
                        step
                    })?
                } else {
                    // Read after whatever is still buffered. Only a partial head stays buffered (a
                    // decoder consumes every byte it is fed until its body ends), so only a head
                    // grows the buffer, up to the largest head accepted.
                    if conn.rbuf.capacity() == 0 {
                        // The connection's first read into its own buffer.
                        conn.rbuf.reserve_exact(self.pool.read_buf_bytes());
                    } else if st.decoder.is_none() && conn.rbuf.len() == conn.rbuf.capacity() {
                        if conn.rbuf.capacity() >= MAX_HEAD_BYTES {
                            return Err(Error::Head(HttpError::HeadTooLarge));
                        }
                        conn.rbuf
                            .reserve(conn.rbuf.capacity().max(MIN_READ_BUF_BYTES));
                    }
                    let buf = std::mem::take(&mut conn.rbuf);
                    // Stamped as the socket read completes, before any decryption or parsing.
                    // Boxed: this read (TLS, user-space stamps, a head carried over) keeps
                    // ~0.4 KiB of state that the kernel-stamped paths above, a waiting stream's,
                    // would otherwise reserve in every request's future.
                    let read = Box::pin(conn.stream.read_into(buf, self.clock, conn.kernel_stamps));
                    let (res, buf) = within_read_timeout!(self, read, st.received)?;
                    conn.rbuf = buf;
                    let (n, read_stamp) = res.map_err(|error| Error::Read {
                        error,
                        received: st.received,
                    })?;
                    self.take_read(&mut st, &mut conn.rbuf, n, read_stamp, sent_ns, sink)?
                };
                if let Step::Done { keep_alive } = step {
                    if self.tcp_info
                        && let Some(rtt) = super::tcpinfo::read(conn.stream.as_raw_fd())
                    {
                        sink.on_tcp_info(rtt);
                    }
                    return Ok(keep_alive);
                }
            }
        }
    }

    /// One read of a connection with a multishot receive, once its wait for a completion
    /// ended: hands the completion to [`Exchange::take_read`], through the thread's
    /// [`READ_SCRATCH`] when nothing is carried over (as the readiness path does), after the
    /// carried bytes otherwise. Not `async`: the wait is the caller's, so a waiting stream keeps
    /// no copy of these arguments (#41: 104 bytes as an `async fn` awaiting the wait).
    fn take_multishot<S: Sink>(
        &self,
        conn: &mut Conn,
        st: &mut ReadState,
        sink: &mut S,
        sent_ns: u64,
    ) -> Result<Step, Error> {
        let Some(ms) = conn.multishot.as_mut() else {
            return Ok(Step::Again);
        };
        let received = st.received;
        let max = self.pool.read_buf_bytes();
        let taken = |ms: &mut Multishot, buf: &mut Vec<u8>| match ms.take(buf, max) {
            Ok((n, realtime_ns)) => Ok(Some((n, ReadStamp::now(self.clock, realtime_ns)))),
            // The ring ran dry (the receive is armed again) or nothing was queued.
            Err(e) if rxstamp::is_not_ready(&e) => Ok(None),
            Err(error) => Err(Error::Read { error, received }),
        };
        if conn.rbuf.is_empty() {
            return READ_SCRATCH.with_borrow_mut(|buf| {
                buf.clear();
                let Some((n, stamp)) = taken(ms, buf)? else {
                    return Ok(Step::Again);
                };
                let step = self.take_read(st, buf, n, stamp, sent_ns, sink);
                // Whatever the read left undecoded stays with the connection.
                conn.rbuf.extend_from_slice(buf);
                buf.clear();
                step
            });
        }
        // Only a partial head stays buffered: it may grow up to the largest head accepted.
        if st.decoder.is_none() && conn.rbuf.len() >= MAX_HEAD_BYTES {
            return Err(Error::Head(HttpError::HeadTooLarge));
        }
        let Some((n, stamp)) = taken(ms, &mut conn.rbuf)? else {
            return Ok(Step::Again);
        };
        self.take_read(st, &mut conn.rbuf, n, stamp, sent_ns, sink)
    }

    /// Hands one read of `n` bytes, now at the end of `buf`, to the response's head parser or
    /// body decoder and the sink; drains what was consumed from `buf`.
    fn take_read<S: Sink>(
        &self,
        st: &mut ReadState,
        buf: &mut Vec<u8>,
        n: usize,
        read_stamp: ReadStamp,
        sent_ns: u64,
        sink: &mut S,
    ) -> Result<Step, Error> {
        let stamp = read_stamp.best_ns().max(sent_ns);
        if n == 0 {
            // End of stream: the end of an until-close body, or a failure.
            let Some(d) = st.decoder.as_mut() else {
                return Err(Error::Closed {
                    received: st.received,
                });
            };
            d.finish_eof().map_err(Error::Body)?;
            sink.on_end(stamp);
            return Ok(Step::Done { keep_alive: false });
        }
        st.received = true;
        sink.on_read(n, read_stamp);
        if let Some(k) = read_stamp.kernel_ns {
            batch::note_read(st.has_last_kernel.then(|| k.saturating_sub(st.last_kernel)));
            st.last_kernel = k;
            st.has_last_kernel = true;
        }
        while st.decoder.is_none() {
            let head = match parse_head(buf).map_err(Error::Head)? {
                Status::Partial => return Ok(Step::Again),
                Status::Complete(head) => head,
            };
            if head.is_interim() {
                // An interim head (`100 Continue`): the final one may follow in the same read.
                buf.drain(..head.head_len);
                continue;
            }
            st.keep_alive = head.keep_alive;
            if sink.on_head(&head, buf, stamp) == AfterHead::Stop {
                return Ok(Step::Done { keep_alive: false });
            }
            st.decoder = Some(
                BodyDecoder::new(BodyKind::from_head(&head, self.head_request))
                    .with_max_body_bytes(self.limits.max_body_bytes),
            );
            buf.drain(..head.head_len);
        }
        let Some(d) = st.decoder.as_mut() else {
            return Ok(Step::Again);
        };
        let feed = d.feed(buf, sink.body()).map_err(Error::Body)?;
        buf.drain(..feed.consumed);
        sink.on_body(stamp);
        if feed.done {
            sink.on_end(stamp);
            return Ok(Step::Done {
                keep_alive: st.keep_alive,
            });
        }
        Ok(Step::Again)
    }
}

/// A plain connection's readiness wait, boxed (a TLS connection's is ready at once: the
/// exchange reads it through [`Stream::read_into`]).
fn readable(stream: &Stream) -> std::pin::Pin<Box<impl Future<Output = io::Result<()>> + '_>> {
    Box::pin(async move {
        match stream {
            Stream::Plain(tcp) => tcp.readable(false).await,
            Stream::Tls(_) => Ok(()),
        }
    })
}

/// The request `sink` encodes for an attempt (`reused`: on a pooled connection), and the shared
/// bytes to write after it.
fn encode<S: Sink>(sink: &mut S, reused: bool) -> (Vec<u8>, Option<bytes::Bytes>) {
    let mut wbuf = Vec::new();
    sink.encode(&mut wbuf, reused);
    (wbuf, sink.shared_tail())
}

thread_local! {
    /// The read buffer a kernel-stamped plain connection reads into (one per thread: each
    /// worker's runtime runs one read at a time, and a read is taken whole before the next
    /// await).
    static READ_SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Where a response read stands between two socket reads.
#[derive(Default)]
struct ReadState {
    decoder: Option<BodyDecoder>,
    keep_alive: bool,
    /// Any response byte arrived.
    received: bool,
    /// The previous kernel-stamped read of this response (for the batched wake-ups' gap),
    /// when `has_last_kernel`: a stamp and a flag packed with the others, not an `Option<u64>`
    /// (a streaming request keeps its read state for as long as the response takes, #41).
    last_kernel: u64,
    has_last_kernel: bool,
}

/// After one read: read again, or the response is over.
enum Step {
    Again,
    Done { keep_alive: bool },
}
