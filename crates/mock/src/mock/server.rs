//! A running server ([`MockServer`], [`start`]) and its threads: binding,
//! spawning, pinning, runtime choice (io_uring or epoll), the accept loop, and stopping.
//!
//! Accepting: a thread waits until the listener is readable (through monoio, either driver) and
//! then takes the connection with std's `accept4(…, SOCK_CLOEXEC)`, so no child process spawned
//! meanwhile inherits it (monoio's io_uring accept sets no `SOCK_CLOEXEC`; see
//! `accept_cloexec`). Every other descriptor the mock creates (listener and its duplicates,
//! ring, eventfd, epoll) is already close-on-exec.
//!
//! Stopping without losing or leaking a connection: `stop` raises a flag and then connects to the
//! listener once per thread. A thread that sees the listener readable while the flag is up leaves
//! its loop without accepting, so the wake-up connection stays pending for the threads still
//! waiting; `threads` wake-up connections therefore end every thread, and no wait is ever
//! abandoned mid-flight. Before leaving, a thread ends its
//! connections and waits for them to be dropped (a monoio runtime does not drop waiting tasks),
//! so a stop or [`MockServer::pause`] really closes every socket, the listener included,
//! and the port can be bound again by [`MockServer::resume`].

use std::io;
use std::net::{
    Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener as StdListener, TcpStream as StdStream,
};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use monoio::{IoUringDriver, LegacyDriver, RuntimeBuilder};

use super::conn::serve_until_closed;
use super::fault;
use super::settings::{Driver, MockConfig};
use super::shared::Shared;
use super::tls::{serve_tls_until_closed, server_config};
use super::truth::TruthLog;
use super::worker::Worker;

/// A running mock server. Dropping it stops it.
pub struct MockServer {
    /// The address the server listens on (the real port when `bind` had port 0).
    pub addr: SocketAddr,
    truth: Arc<TruthLog>,
    inner: Option<Running>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// Binds, spawns the server threads and returns once every thread is serving.
///
/// Fails when the address cannot be bound, a runtime cannot be built (e.g. [`Driver::Uring`]
/// without io_uring), or the config is unusable (zero `tokens_per_event`, TLS files that cannot
/// be read or do not fit).
pub fn start(cfg: MockConfig) -> io::Result<MockServer> {
    let running = Running::start(cfg)?;
    Ok(MockServer {
        addr: running.addr(),
        truth: running.truth(),
        inner: Some(running),
    })
}

impl MockServer {
    /// The truth log (empty unless `truth_log` was set).
    pub fn truth(&self) -> Arc<TruthLog> {
        Arc::clone(&self.truth)
    }

    /// The current `/metrics` page.
    pub fn metrics_text(&self) -> String {
        self.inner
            .as_ref()
            .map(Running::metrics_text)
            .unwrap_or_default()
    }

    /// Requests answered (or, in [`super::MetricsMode::Hang`], held) at `/metrics` and
    /// `/prometheus/metrics` so far, `HEAD` included, over every thread.
    pub fn metrics_requests(&self) -> u64 {
        self.inner.as_ref().map_or(0, |r| {
            r.shared
                .metrics
                .iter()
                .map(|t| t.pages.load(std::sync::atomic::Ordering::Relaxed))
                .sum()
        })
    }

    /// Completion requests refused so far because their prompt and `max_tokens` were over
    /// [`MockConfig::max_model_len`] (vLLM's 400; these are not in the truth log).
    pub fn context_overflows(&self) -> u64 {
        self.inner.as_ref().map_or(0, |r| {
            r.shared
                .over_context
                .load(std::sync::atomic::Ordering::Relaxed)
        })
    }

    /// Every DCGM page served by `GET` at `/dcgm/metrics` so far, in order (empty unless
    /// [`MockConfig::dcgm_gpus`] is set).
    pub fn dcgm_pages(&self) -> Vec<super::DcgmPage> {
        self.inner
            .as_ref()
            .map(|r| r.shared.dcgm.pages())
            .unwrap_or_default()
    }

    /// Every video job submitted so far (`POST /v1/videos`), in order, with its polls and the
    /// content bytes served.
    pub fn video_jobs(&self) -> Vec<super::VideoJob> {
        self.inner
            .as_ref()
            .map(|r| r.shared.videos.snapshot())
            .unwrap_or_default()
    }

    /// The server goes away: stops accepting, closes the listening socket and every connection
    /// (in-flight responses are cut and are not in the truth log), and joins the threads. Clients
    /// then get connection refused until [`Self::resume`]. Does nothing when already paused.
    pub fn pause(&mut self) {
        if let Some(r) = self.inner.as_mut() {
            r.pause();
        }
    }

    /// The server comes back on the same address (same port), with the same configuration,
    /// truth log and metrics (the per-thread generators start again from the seed). Does nothing
    /// when not paused. Fails when the
    /// address cannot be bound again (another process took the port meanwhile).
    pub fn resume(&mut self) -> io::Result<()> {
        match self.inner.as_mut() {
            Some(r) => r.resume(),
            None => Ok(()),
        }
    }

    /// Whether the server is paused (see [`Self::pause`]).
    pub fn is_paused(&self) -> bool {
        self.inner.as_ref().is_some_and(Running::is_paused)
    }

    /// Stops accepting, ends every thread (in-flight responses are cut) and joins them.
    pub fn stop(mut self) {
        if let Some(r) = self.inner.take() {
            r.stop();
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(r) = self.inner.take() {
            r.stop();
        }
    }
}

/// The running threads behind a [`MockServer`].
pub(crate) struct Running {
    addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Running {
    pub(crate) fn start(mut cfg: MockConfig) -> io::Result<Self> {
        if cfg.tokens_per_event == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "tokens_per_event must be at least 1",
            ));
        }
        fault::validate(&cfg.faults)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.0))?;
        cfg.threads = cfg.threads.max(1);
        let listener = bind_listener(cfg.bind)?;
        let addr = listener.local_addr()?;
        let tls = cfg.tls.as_ref().map(server_config).transpose()?;
        let mut shared = Shared::new(cfg);
        shared.tls = tls;
        let shared = Arc::new(shared);
        let mut running = Running {
            addr,
            shared,
            threads: Vec::new(),
        };
        running.serve(listener)?;
        Ok(running)
    }

    /// Spawns the server threads on `listener` and returns once every one is serving.
    fn serve(&mut self, listener: StdListener) -> io::Result<()> {
        listener.set_nonblocking(true)?;
        self.shared.stop.store(false, Ordering::SeqCst);
        let (ready_tx, ready_rx) = mpsc::channel::<io::Result<()>>();
        for index in 0..self.shared.cfg.threads {
            let l = match listener.try_clone() {
                Ok(l) => l,
                Err(e) => {
                    self.shutdown();
                    return Err(e);
                }
            };
            let sh = Arc::clone(&self.shared);
            let tx = ready_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("mock-{index}"))
                .spawn(move || thread_main(index, sh, l, tx));
            match spawned {
                Ok(h) => self.threads.push(h),
                Err(e) => {
                    self.shutdown();
                    return Err(e);
                }
            }
        }
        drop(ready_tx);
        // Every thread reports once; the listener (and its duplicates) is ready to accept
        // already, so clients may connect as soon as this returns.
        for _ in 0..self.threads.len() {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    self.shutdown();
                    return Err(e);
                }
                Err(_) => {
                    self.shutdown();
                    return Err(io::Error::other("a mock server thread died while starting"));
                }
            }
        }
        Ok(())
    }

    /// Ends every thread, which closes the listener and every connection.
    pub(crate) fn pause(&mut self) {
        self.shutdown();
    }

    /// Binds the same address again and serves on it.
    pub(crate) fn resume(&mut self) -> io::Result<()> {
        if !self.threads.is_empty() {
            return Ok(());
        }
        let listener = bind_listener(self.addr)?;
        self.serve(listener)
    }

    pub(crate) fn is_paused(&self) -> bool {
        self.threads.is_empty()
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn truth(&self) -> Arc<TruthLog> {
        Arc::clone(&self.shared.truth)
    }

    pub(crate) fn metrics_text(&self) -> String {
        self.shared.metrics_text()
    }

    pub(crate) fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let target = wake_addr(self.addr);
        for h in &self.threads {
            if !h.is_finished() {
                // The stream is closed at once; the accepting thread sees the flag and leaves.
                let _ = StdStream::connect_timeout(&target, Duration::from_secs(1));
            }
        }
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

/// Binds and listens on `addr` with the kernel's largest accept backlog (`somaxconn`), not the
/// standard library's 128: an open-loop client opening thousands of connections at once would
/// otherwise see SYNs dropped at the full accept queue and retransmitted a second later.
fn bind_listener(addr: SocketAddr) -> io::Result<StdListener> {
    let listener = StdListener::bind(addr)?;
    // Listening again on a listening socket only changes its backlog (Linux `listen(2)`).
    // SAFETY: the descriptor is the listener's own, open for the duration of the call; `listen`
    // touches no memory of ours.
    if unsafe { libc::listen(listener.as_raw_fd(), ringperf_io::fdlimit::somaxconn()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(listener)
}

/// Where to connect to reach a listener bound to `addr` (loopback for a wildcard address).
fn wake_addr(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V4(a) if a.ip().is_unspecified() => (Ipv4Addr::LOCALHOST, a.port()).into(),
        SocketAddr::V6(a) if a.ip().is_unspecified() => (Ipv6Addr::LOCALHOST, a.port()).into(),
        a => a,
    }
}

fn thread_main(
    index: usize,
    shared: Arc<Shared>,
    listener: StdListener,
    ready: mpsc::Sender<io::Result<()>>,
) {
    let core = shared
        .cfg
        .pin_cores
        .as_ref()
        .and_then(|c| c.get(index.checked_rem(c.len())?));
    if let Some(&id) = core
        && !core_affinity::set_for_current(core_affinity::CoreId { id })
    {
        eprintln!("ringperf mock: could not pin thread {index} to core {id}; running unpinned");
    }
    let result = match shared.cfg.io_driver {
        Driver::Uring => run_uring(index, &shared, listener, &ready),
        Driver::Legacy => run_legacy(index, &shared, listener, &ready),
        Driver::Auto => match RuntimeBuilder::<IoUringDriver>::new()
            .enable_timer()
            .build()
        {
            Ok(mut rt) => rt.block_on(accept_loop(
                index,
                Arc::clone(&shared),
                listener,
                ready.clone(),
                true,
            )),
            Err(_) => run_legacy(index, &shared, listener, &ready),
        },
    };
    if let Err(e) = result {
        let _ = ready.send(Err(e));
    }
}

fn run_uring(
    index: usize,
    shared: &Arc<Shared>,
    l: StdListener,
    ready: &mpsc::Sender<io::Result<()>>,
) -> io::Result<()> {
    let mut rt = RuntimeBuilder::<IoUringDriver>::new()
        .enable_timer()
        .build()?;
    rt.block_on(accept_loop(
        index,
        Arc::clone(shared),
        l,
        ready.clone(),
        true,
    ))
}

fn run_legacy(
    index: usize,
    shared: &Arc<Shared>,
    l: StdListener,
    ready: &mpsc::Sender<io::Result<()>>,
) -> io::Result<()> {
    let mut rt = RuntimeBuilder::<LegacyDriver>::new()
        .enable_timer()
        .build()?;
    rt.block_on(accept_loop(
        index,
        Arc::clone(shared),
        l,
        ready.clone(),
        false,
    ))
}

async fn accept_loop(
    index: usize,
    shared: Arc<Shared>,
    l: StdListener,
    ready: mpsc::Sender<io::Result<()>>,
    on_io_uring: bool,
) -> io::Result<()> {
    // monoio waits for a pending connection on one descriptor of the listening socket; the
    // connection is taken by std on another (see `accept_cloexec`).
    let readiness = monoio::net::TcpListener::from_std(l.try_clone()?)?;
    let worker = Rc::new(Worker::new(index, shared, on_io_uring));
    if let Some(p) = &worker.pacer {
        monoio::spawn(Rc::clone(p).drive());
    }
    let _ = ready.send(Ok(()));
    loop {
        let readable = readiness.readable(false).await;
        if worker.shared.stop.load(Ordering::SeqCst) {
            drop(readiness);
            drop(l);
            if let Some(p) = &worker.pacer {
                p.stop();
            }
            worker.close_connections(Duration::from_secs(2)).await;
            return Ok(());
        }
        if readable.is_err() {
            monoio::time::sleep(Duration::from_millis(5)).await;
            continue;
        }
        match accept_cloexec(&l) {
            Ok(stream) => match &worker.shared.tls {
                None => {
                    monoio::spawn(serve_until_closed(stream, Rc::clone(&worker)));
                }
                Some(tls) => {
                    monoio::spawn(serve_tls_until_closed(
                        stream,
                        Arc::clone(tls),
                        Rc::clone(&worker),
                    ));
                }
            },
            // Another thread took the connection, or the client gave up before it was taken.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::Interrupted
                        | io::ErrorKind::ConnectionAborted
                ) => {}
            Err(_) => {
                // Out of descriptors: back off briefly.
                monoio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
}

/// Takes one pending connection off the non-blocking `l`, as a socket that is closed on `exec`.
///
/// Why not monoio's accept: on io_uring it submits `IORING_OP_ACCEPT` without `SOCK_CLOEXEC`,
/// so every child process spawned meanwhile (by any thread of the process) inherits the
/// connection and keeps it open after the mock closes its own descriptor: a stop or pause
/// would not end it. std's accept is `accept4(…, SOCK_CLOEXEC)`, which sets the flag
/// atomically (setting it after an accept would leave a window for a concurrent fork).
fn accept_cloexec(l: &StdListener) -> io::Result<monoio::net::TcpStream> {
    let (stream, _) = l.accept()?;
    // The epoll driver reads until `WouldBlock`, so it needs a non-blocking socket; io_uring wants
    // the blocking one accept makes (as its own accept does), or a read with nothing to read
    // could fail instead of waiting.
    if monoio::utils::is_legacy() {
        stream.set_nonblocking(true)?;
    }
    monoio::net::TcpStream::from_std(stream)
}
