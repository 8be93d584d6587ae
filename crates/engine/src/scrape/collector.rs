//! The scraper thread (docs/output-formats.md): its own OS thread, pinned on a free core, its own
//! monoio runtime (io_uring, fallback epoll).
//!
//! Lifecycle, driven from the run through a [`Scraper`] handle:
//! 1. [`Scraper::start`]: reachability check of every endpoint (`HEAD`, else `GET`, 200 OK), then
//!    a baseline scrape of each reachable one; returns once both are done (before warmup).
//! 2. Every `interval` a scrape of every active endpoint is spawned as its own task: a slow
//!    endpoint never delays the next tick, and scrapes may overlap. Phase marks trigger an extra
//!    boundary scrape.
//! 3. [`Scraper::finish`]: collection continues until profiling end + flush period, scrapes still
//!    in flight get up to the shutdown delay, then one final scrape of every endpoint is awaited.
//!
//! Each sample is stamped with the wall-clock ns of its first response byte. A page identical to
//! the previous one of its endpoint is a duplicate: stored and counted as a fetch, not as a
//! unique update, and not written to the JSONL. An endpoint answering `application/json` or a
//! body that is not Prometheus text gets one TRT-LLM `/prometheus/metrics` probe; if that fails
//! too it is disabled for the run with a single `WARNING` line; other endpoints carry on.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::rc::Rc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::endpoint::{self, Target, trtllm_fallback};
use super::fetch::{FetchError, Pool, Response, Timeouts, fetch};
use super::settings::Settings;
use ringperf_io::net::TlsClient;
use ringperf_io::runtime::IoDriver;
use ringperf_metrics::export::jsonl::PhaseTag;
use ringperf_metrics::server_metrics::export::jsonl::ScrapeRecord;
use ringperf_metrics::server_metrics::store::Store;
use ringperf_wire::clock::Clock;
use ringperf_wire::prom::{Dialect, ParseError, Scrape, parse_scrape_as};
use ringperf_wire::record::Phase;

/// What the scraper thread is started with.
#[derive(Clone, Debug)]
pub struct StartOptions {
    /// Normalized endpoint URLs, de-duplicated.
    pub endpoints: Vec<String>,
    /// Timing and batching.
    pub settings: Settings,
    /// monoio driver choice.
    pub io_driver: IoDriver,
    /// Core to pin the thread to (`None`: not pinned).
    pub core: Option<usize>,
    /// The run's clock (stamps share its timeline).
    pub clock: Clock,
    /// Where to stream the JSONL export (`None`: not requested).
    pub jsonl: Option<PathBuf>,
    /// The run's TLS client (roots, verification), for `https` endpoints; `None` when no
    /// endpoint is `https`.
    pub tls: Option<TlsClient>,
    /// Log unreachable endpoints and scrape errors on stderr.
    pub verbose: bool,
    /// Called on the scraper thread with every page parsed (its endpoint URL, the page, and
    /// the store it was just added to): the live dashboard's and the live API's feed. `None`:
    /// nothing is called.
    pub on_page: Option<PageHook>,
    /// What the pages are: the wording of the messages, and whether a page that is not
    /// Prometheus text earns the TRT-LLM probe.
    pub role: Role,
    /// How the run's phases are numbered and named (the JSONL lines' phase fields).
    pub phases: ringperf_metrics::export::jsonl::PhaseLayout,
}

/// A function the scraper thread calls with each parsed page ([`StartOptions::on_page`]).
#[derive(Clone)]
pub struct PageHook(std::sync::Arc<std::sync::Mutex<HookFn>>);

/// The function inside a [`PageHook`].
type HookFn = dyn FnMut(&str, &Scrape, &Store) + Send;

impl PageHook {
    /// Wraps `f`.
    pub fn new(f: impl FnMut(&str, &Scrape, &Store) + Send + 'static) -> Self {
        Self(std::sync::Arc::new(std::sync::Mutex::new(f)))
    }

    fn call(&self, url: &str, page: &Scrape, store: &Store) {
        if let Ok(mut f) = self.0.lock() {
            f(url, page, store);
        }
    }
}

impl fmt::Debug for PageHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PageHook")
    }
}

/// What a scraper collects: server metrics or DCGM GPU telemetry (docs/output-formats.md). The
/// scraping is the same; the messages name the right subsystem and its `--no-…` flag, and only
/// server metrics try TRT-LLM's `/prometheus/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// `--server-metrics`.
    #[default]
    ServerMetrics,
    /// `--gpu-telemetry` (DCGM exporters).
    GpuTelemetry,
}

impl Role {
    /// The subsystem's name in messages.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Role::ServerMetrics => "server metrics",
            Role::GpuTelemetry => "GPU telemetry",
        }
    }

    fn off_flag(self) -> &'static str {
        match self {
            Role::ServerMetrics => "--no-server-metrics",
            Role::GpuTelemetry => "--no-gpu-telemetry",
        }
    }

    fn none_reachable(self) -> &'static str {
        match self {
            Role::ServerMetrics => "no Prometheus endpoints reachable",
            Role::GpuTelemetry => "no DCGM exporter reachable",
        }
    }
}

/// Everything the thread collected.
#[derive(Debug, Default)]
pub struct Collected {
    /// Every sample, per endpoint.
    pub store: Store,
    /// The endpoints as finally scraped (a TRT-LLM swap replaces the configured URL).
    pub endpoints: Vec<String>,
    /// The `WARNING` lines printed (one per disabled endpoint).
    pub warnings: Vec<String>,
    /// Fetch attempts (reachability checks excluded).
    pub scrapes: u64,
    /// Failed scrapes (connect, timeout, non-200, …), excluding incompatible pages.
    pub errors: u64,
    /// CPU time of the scraper thread (ns, `CLOCK_THREAD_CPUTIME_ID` as it ends).
    pub cpu_ns: Option<u64>,
    /// The JSONL file written, if any line was.
    pub jsonl: Option<PathBuf>,
    /// The first JSONL write error, if any.
    pub jsonl_error: Option<String>,
}

/// Why the scraper thread could not be started.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The OS refused the thread.
    Spawn(std::io::Error),
    /// The thread's monoio runtime could not be built.
    Runtime(std::io::Error),
    /// The thread ended without saying it was ready.
    Vanished,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Spawn(e) => write!(f, "cannot start the server-metrics thread: {e}"),
            Error::Runtime(e) => write!(f, "cannot build the server-metrics runtime: {e}"),
            Error::Vanished => f.write_str("the server-metrics thread ended before it was ready"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Spawn(e) | Error::Runtime(e) => Some(e),
            Error::Vanished => None,
        }
    }
}

/// Messages from the run to the thread.
enum Control {
    /// A phase starts (its kind and its number in the run): later scrapes are attributed to it.
    Phase(Phase, u8),
    /// A phase ended: one boundary scrape; attribution stays (the flush-period and final scrapes
    /// belong to the last profiling phase).
    Boundary,
    /// Warmup ended: the end-of-warmup scrape, awaited and acknowledged; then the phase is
    /// retired, so scrapes sent before profiling starts belong to no phase (as in AIPerf 0.13).
    WarmupEnd(Sender<()>),
    Stop(Instant),
}

/// Handle on a running scraper thread.
#[derive(Debug)]
pub struct Scraper {
    tx: Sender<Control>,
    thread: JoinHandle<Collected>,
    clock: Clock,
    flush_period: Duration,
    scrape_timeout: Duration,
    /// `(phase, start wall ns, end wall ns)` in order.
    marks: Vec<(Phase, u64, Option<u64>)>,
    profiling_end: Option<Instant>,
}

/// The windows the phases ran in (wall ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseWindows {
    /// Warmup `[start, end]`, if warmup ran.
    pub warmup: Option<(u64, u64)>,
    /// Profiling `[start, end]`.
    pub profiling: Option<(u64, u64)>,
}

impl Scraper {
    /// Starts the thread; returns after the reachability check and the baseline scrape.
    /// `Ok(None)` when no endpoint is reachable (collection is off for the run).
    ///
    /// # Errors
    /// The thread or its runtime could not be started.
    pub fn start(opts: StartOptions) -> Result<Option<Self>, Error> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let (ready_tx, ready_rx) = crossbeam_channel::bounded::<Result<usize, Error>>(1);
        let clock = opts.clock;
        let flush_period = opts.settings.flush_period;
        let scrape_timeout = opts.settings.scrape_timeout;
        let thread = std::thread::Builder::new()
            .name("ringperf-scraper".into())
            .spawn(move || thread_main(opts, rx, ready_tx))
            .map_err(Error::Spawn)?;
        match ready_rx.recv() {
            Ok(Ok(0)) => {
                let _ = thread.join();
                Ok(None)
            }
            Ok(Ok(_)) => Ok(Some(Self {
                tx,
                thread,
                clock,
                flush_period,
                scrape_timeout,
                marks: Vec::new(),
                profiling_end: None,
            })),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(Error::Vanished)
            }
        }
    }

    /// Marks the start of `phase`, the run's phase number `index` (now); scrapes are attributed
    /// to it and a boundary scrape runs.
    pub fn phase_start(&mut self, phase: Phase, index: u8) {
        let now = self.clock.wall_ns(self.clock.now_ns());
        self.marks.push((phase, now, None));
        let _ = self.tx.send(Control::Phase(phase, index));
    }

    /// A config file's next profiling phase, the run's phase number `index`, starts (now): later
    /// scrapes are attributed to it and a boundary scrape runs. The profiling window
    /// ([`Scraper::windows`]) spans every profiling phase.
    pub fn next_profiling_phase(&mut self, index: u8) {
        let _ = self.tx.send(Control::Phase(Phase::Profiling, index));
    }

    /// Marks the end of `phase` (now). At the end of warmup this waits for a boundary scrape
    /// of every endpoint (bounded by the scrape timeout), so profiling's reference sample counts
    /// every warmup request.
    pub fn phase_end(&mut self, phase: Phase) {
        self.phase_end_waiting(phase, phase == Phase::Warmup);
    }

    /// [`Self::phase_end`]; `wait`: for the end-of-warmup scrape (a warmup handing over to a
    /// seamless phase does not: its requests are still in flight, and the next phase starts
    /// now).
    pub fn phase_end_waiting(&mut self, phase: Phase, wait: bool) {
        let now = self.clock.wall_ns(self.clock.now_ns());
        if let Some(m) = self
            .marks
            .iter_mut()
            .rev()
            .find(|m| m.0 == phase && m.2.is_none())
        {
            m.2 = Some(now);
        }
        if phase == Phase::Profiling {
            self.profiling_end = Some(Instant::now());
        }
        if wait {
            let (ack, done) = crossbeam_channel::bounded(1);
            if self.tx.send(Control::WarmupEnd(ack)).is_ok() {
                let _ = done.recv_timeout(self.scrape_timeout);
            }
        } else {
            let _ = self.tx.send(Control::Boundary);
        }
    }

    /// The phase windows marked so far (an unfinished phase ends now).
    #[must_use]
    pub fn windows(&self) -> PhaseWindows {
        let now = self.clock.wall_ns(self.clock.now_ns());
        let find = |p: Phase| {
            self.marks
                .iter()
                .rev()
                .find(|m| m.0 == p)
                .map(|m| (m.1, m.2.unwrap_or(now)))
        };
        PhaseWindows {
            warmup: find(Phase::Warmup),
            profiling: find(Phase::Profiling),
        }
    }

    /// How long [`Self::finish`] will wait from now for the flush period to end (zero once it
    /// has), before the final scrape.
    #[must_use]
    pub fn flush_wait(&self) -> Duration {
        let end = self.profiling_end.unwrap_or_else(Instant::now) + self.flush_period;
        end.saturating_duration_since(Instant::now())
    }

    /// A run stopped by the signal `name` takes its final scrape at once: the flush period is not
    /// waited for (said on stderr when it would have been).
    pub fn skip_flush(&mut self, name: &str) {
        if self.flush_wait() >= Duration::from_millis(100) {
            eprintln!(
                "ringperf: {name}: final server-metrics scrape now, without the flush period"
            );
        }
        self.flush_period = Duration::ZERO;
    }

    /// Waits until profiling end + flush period, lets the final scrape run, stops the thread
    /// and returns what it collected with the phase windows.
    pub fn finish(self) -> (Collected, PhaseWindows) {
        let windows = self.windows();
        let end = self.profiling_end.unwrap_or_else(Instant::now);
        let _ = self.tx.send(Control::Stop(end + self.flush_period));
        let collected = self.thread.join().unwrap_or_default();
        (collected, windows)
    }
}

/// Per-endpoint scraping state.
#[derive(Debug)]
struct Endpoint {
    target: RefCell<Rc<Target>>,
    pool: Pool,
    state: Cell<State>,
    fallback_tried: Cell<bool>,
    logged_error: Cell<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Active,
    /// The TRT-LLM probe is running: other scrapes of this endpoint stand aside.
    Probing,
    Disabled,
}

/// Streaming JSONL sink, created on the first line.
#[derive(Debug)]
struct JsonlSink {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    pending: usize,
    batch: usize,
    error: Option<String>,
}

impl JsonlSink {
    fn write(&mut self, rec: &ScrapeRecord) {
        if self.error.is_some() {
            return;
        }
        if self.out.is_none() {
            match File::create(&self.path) {
                Ok(f) => self.out = Some(BufWriter::with_capacity(1 << 20, f)),
                Err(e) => {
                    self.error = Some(format!("cannot create {}: {e}", self.path.display()));
                    return;
                }
            }
        }
        let Some(out) = self.out.as_mut() else {
            return;
        };
        let mut r = rec.write_line(out);
        self.pending += 1;
        if r.is_ok() && self.pending >= self.batch {
            self.pending = 0;
            r = out.flush();
        }
        if let Err(e) = r {
            self.error = Some(format!("cannot write {}: {e}", self.path.display()));
        }
    }

    fn close(&mut self) {
        if let Some(out) = self.out.as_mut()
            && let Err(e) = out.flush()
            && self.error.is_none()
        {
            self.error = Some(format!("cannot write {}: {e}", self.path.display()));
        }
    }
}

/// State shared by the thread's tasks (single-threaded runtime: `RefCell`, never held across
/// an await).
#[derive(Debug)]
struct Shared {
    clock: Clock,
    /// The TLS client `https` endpoints (and their fallbacks) connect with.
    tls: Option<TlsClient>,
    settings: Settings,
    verbose: bool,
    role: Role,
    endpoints: Vec<Endpoint>,
    store: RefCell<Store>,
    phase: Cell<Option<(Phase, u8)>>,
    /// A warmup phase started: the profiling phase is the run's second (`phase_index` 1).
    phases: ringperf_metrics::export::jsonl::PhaseLayout,
    jsonl: RefCell<Option<JsonlSink>>,
    warnings: RefCell<Vec<String>>,
    nonfinite_warned: RefCell<BTreeSet<String>>,
    scrapes: Cell<u64>,
    errors: Cell<u64>,
    in_flight: Cell<usize>,
    on_page: Option<PageHook>,
}

fn thread_main(
    opts: StartOptions,
    rx: Receiver<Control>,
    ready: Sender<Result<usize, Error>>,
) -> Collected {
    if let Some(core) = opts.core {
        let _ = ringperf_io::runtime::pin_to(core);
    }
    let driver = opts.io_driver;
    let ready2 = ready.clone();
    let result = ringperf_io::runtime::block_on(driver, move |_| run(opts, rx, ready2));
    match result {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(Error::Runtime(e)));
            Collected::default()
        }
    }
}

fn timeouts(s: &Settings) -> Timeouts {
    Timeouts {
        connect: s.reachability_timeout,
        read: s.read_timeout,
    }
}

async fn run(
    opts: StartOptions,
    rx: Receiver<Control>,
    ready: Sender<Result<usize, Error>>,
) -> Collected {
    let shared = shared_state(opts);
    let reachable_count = check_reachable(&shared).await;
    if reachable_count == 0 {
        // Said at the default log level (AIPerf logs this status at info); the reason per
        // endpoint is printed above under --verbose.
        eprintln!(
            "ringperf: {} disabled: {}",
            shared.role.label(),
            shared.role.none_reachable()
        );
        let _ = ready.send(Ok(0));
        return Collected::default();
    }

    // Baseline scrape (attributed to no phase), awaited.
    scrape_all_awaited(&shared).await;
    let _ = ready.send(Ok(reachable_count));
    scrape_until_stopped(&shared, &rx).await;

    // Scrapes still in flight get up to the shutdown delay, then the final scrape.
    let waited = Instant::now();
    while shared.in_flight.get() > 0 && waited.elapsed() < shared.settings.shutdown_delay {
        monoio::time::sleep(Duration::from_millis(5)).await;
    }
    scrape_all_awaited(&shared).await;
    collected(&shared)
}

/// The collector's state: the endpoints that resolve (each that does not is said under
/// `--verbose`), an empty store, the JSONL sink when one is asked for.
fn shared_state(opts: StartOptions) -> Rc<Shared> {
    let mut endpoints = Vec::new();
    for url in &opts.endpoints {
        match Target::resolve(url, opts.tls.as_ref()) {
            Ok(t) => endpoints.push(Endpoint {
                target: RefCell::new(Rc::new(t)),
                pool: super::fetch::endpoint_pool(),
                state: Cell::new(State::Active),
                fallback_tried: Cell::new(false),
                logged_error: Cell::new(false),
            }),
            Err(e) => {
                if opts.verbose {
                    eprintln!("ringperf: {}: {e}", opts.role.label());
                }
            }
        }
    }
    Rc::new(Shared {
        clock: opts.clock,
        tls: opts.tls.clone(),
        settings: opts.settings,
        verbose: opts.verbose,
        role: opts.role,
        endpoints,
        store: RefCell::new(Store::default()),
        phase: Cell::new(None),
        phases: opts.phases.clone(),
        jsonl: RefCell::new(opts.jsonl.map(|path| JsonlSink {
            path,
            out: None,
            pending: 0,
            batch: opts.settings.export_batch_size,
            error: None,
        })),
        warnings: RefCell::new(Vec::new()),
        nonfinite_warned: RefCell::new(BTreeSet::new()),
        scrapes: Cell::new(0),
        errors: Cell::new(0),
        in_flight: Cell::new(0),
        on_page: opts.on_page.clone(),
    })
}

/// Checks every endpoint's reachability at once, disabling those that fail (the reason said
/// under `--verbose`); returns how many are reachable.
async fn check_reachable(shared: &Rc<Shared>) -> usize {
    let checks: Vec<_> = (0..shared.endpoints.len())
        .map(|i| monoio::spawn(reachable(shared.clone(), i)))
        .collect();
    let mut reachable_count = 0;
    for (i, h) in checks.into_iter().enumerate() {
        match h.await {
            Ok(()) => reachable_count += 1,
            Err(why) => {
                shared.endpoints[i].state.set(State::Disabled);
                if shared.verbose {
                    let url = shared.endpoints[i].target.borrow().url.clone();
                    eprintln!(
                        "ringperf: {} endpoint {url} is not reachable: {why}",
                        shared.role.label()
                    );
                }
            }
        }
    }
    reachable_count
}

/// Scrapes every interval and at each control message's point until the run says stop (or
/// drops its handle).
async fn scrape_until_stopped(shared: &Rc<Shared>, rx: &Receiver<Control>) {
    let interval = shared.settings.interval;
    let mut next = Instant::now() + interval;
    let mut stop_at: Option<Instant> = None;
    let poll = Duration::from_millis(20);
    loop {
        loop {
            match rx.try_recv() {
                Ok(Control::Phase(p, index)) => {
                    shared.phase.set(Some((p, index)));
                    spawn_all(shared);
                }
                Ok(Control::Boundary) => spawn_all(shared),
                Ok(Control::WarmupEnd(ack)) => {
                    scrape_all_awaited(shared).await;
                    shared.phase.set(None);
                    let _ = ack.send(());
                }
                Ok(Control::Stop(at)) => stop_at = Some(at),
                Err(crossbeam_channel::TryRecvError::Empty) => break,
                Err(crossbeam_channel::TryRecvError::Disconnected) => {
                    // The run dropped its handle without finishing: stop now.
                    stop_at.get_or_insert_with(Instant::now);
                    break;
                }
            }
        }
        let now = Instant::now();
        if stop_at.is_some_and(|s| now >= s) {
            break;
        }
        if now >= next {
            spawn_all(shared);
            next += interval;
            if next <= now {
                next = now + interval;
            }
        }
        let mut wake = next.min(now + poll);
        if let Some(s) = stop_at {
            wake = wake.min(s);
        }
        monoio::time::sleep(wake.saturating_duration_since(Instant::now())).await;
    }
}

/// What the collector hands back after its final scrape: the store, the endpoints, the
/// warnings and counts, the JSONL (closed) and its error.
fn collected(shared: &Shared) -> Collected {
    let mut jsonl = shared.jsonl.borrow_mut().take();
    if let Some(j) = jsonl.as_mut() {
        j.close();
    }
    let endpoints = shared
        .endpoints
        .iter()
        .map(|e| e.target.borrow().url.clone())
        .collect();
    Collected {
        store: std::mem::take(&mut *shared.store.borrow_mut()),
        endpoints,
        warnings: shared.warnings.borrow().clone(),
        scrapes: shared.scrapes.get(),
        errors: shared.errors.get(),
        cpu_ns: Some(ringperf_wire::clock::thread_cpu_ns()),
        jsonl: jsonl
            .as_ref()
            .and_then(|j| j.out.is_some().then(|| j.path.clone())),
        jsonl_error: jsonl.and_then(|j| j.error),
    }
}

/// Why an endpoint failed its reachability check.
#[derive(Debug)]
enum Unreachable {
    /// Neither request was answered within the reachability timeout.
    NoAnswer(Duration),
    /// The `GET` was answered with this status.
    Status(u16),
    /// The `GET` failed.
    Fetch(FetchError),
}

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unreachable::NoAnswer(limit) => write!(f, "no answer within {} s", limit.as_secs_f64()),
            Unreachable::Status(code) => write!(f, "HTTP {code}"),
            Unreachable::Fetch(e) => write!(f, "{e}"),
        }
    }
}

/// `HEAD` → 200, else `GET` → 200 (docs/output-formats.md), all bounded by the reachability
/// timeout: an endpoint that never answers costs that timeout once, not once per request (its
/// `HEAD` timing out ends the check, as in AIPerf, where the timeout error skips the `GET`).
async fn reachable(shared: Rc<Shared>, i: usize) -> Result<(), Unreachable> {
    let limit = shared.settings.reachability_timeout;
    monoio::time::timeout(limit, head_then_get(shared, i))
        .await
        .unwrap_or(Err(Unreachable::NoAnswer(limit)))
}

/// The two requests of [`reachable`].
async fn head_then_get(shared: Rc<Shared>, i: usize) -> Result<(), Unreachable> {
    let ep = &shared.endpoints[i];
    let t = ep.target.borrow().clone();
    let to = Timeouts {
        connect: shared.settings.reachability_timeout,
        read: shared.settings.reachability_timeout,
    };
    let clock = shared.clock;
    let head = fetch(&t, true, &ep.pool, &clock, to).await;
    if matches!(&head, Ok(r) if r.status == 200) {
        return Ok(());
    }
    match fetch(&t, false, &ep.pool, &clock, to).await {
        Ok(r) if r.status == 200 => Ok(()),
        Ok(r) => Err(Unreachable::Status(r.status)),
        Err(e) => Err(Unreachable::Fetch(e)),
    }
}

/// Spawns one scrape per active endpoint (fire and forget).
fn spawn_all(shared: &Rc<Shared>) {
    for i in 0..shared.endpoints.len() {
        if shared.endpoints[i].state.get() == State::Active {
            monoio::spawn(scrape(shared.clone(), i));
        }
    }
}

/// One scrape per active endpoint, all awaited, each bounded by the scrape timeout.
async fn scrape_all_awaited(shared: &Rc<Shared>) {
    let limit = shared.settings.scrape_timeout;
    let handles: Vec<_> = (0..shared.endpoints.len())
        .filter(|&i| shared.endpoints[i].state.get() == State::Active)
        .map(|i| monoio::spawn(monoio::time::timeout(limit, scrape(shared.clone(), i))))
        .collect();
    for h in handles {
        let _ = h.await;
    }
}

/// Why a page was not usable.
#[derive(Debug)]
enum Failure {
    /// The fetch failed (reported, the loop carries on).
    Fetch(FetchError),
    /// The answer was not 200 (reported, the loop carries on).
    Status(u16),
    /// The endpoint answered `application/json`: not Prometheus text.
    Json {
        /// The endpoint.
        url: String,
    },
    /// The body does not parse as Prometheus text.
    NotPrometheus {
        /// The endpoint.
        url: String,
        /// The parser's reason.
        error: ParseError,
        /// The first 200 characters of the body.
        sample: String,
    },
    /// The TRT-LLM fallback URL cannot be reached at all.
    Target(endpoint::Error),
}

impl Failure {
    /// Not Prometheus text (JSON content type, or a body that does not parse): the endpoint
    /// gets the TRT-LLM probe, then is disabled.
    fn is_incompatible(&self) -> bool {
        matches!(self, Failure::Json { .. } | Failure::NotPrometheus { .. })
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Fetch(e) => write!(f, "{e}"),
            Failure::Status(code) => write!(f, "HTTP {code}"),
            Failure::Json { url } => write!(
                f,
                "endpoint '{url}' returned non-Prometheus content-type 'application/json'; \
                 expected text/plain (Prometheus exposition format)"
            ),
            Failure::NotPrometheus { url, error, sample } => write!(
                f,
                "endpoint '{url}' returned a body that is not Prometheus exposition format \
                 ({error}); body starts with {sample:?}"
            ),
            Failure::Target(e) => write!(f, "{e}"),
        }
    }
}

/// Classifies a fetch result; on success returns the parsed page.
fn classify(url: &str, res: Result<Response, FetchError>) -> Result<(Response, Scrape), Failure> {
    let resp = res.map_err(Failure::Fetch)?;
    if resp.status != 200 {
        return Err(Failure::Status(resp.status));
    }
    if resp.json {
        return Err(Failure::Json {
            url: url.to_owned(),
        });
    }
    // AIPerf reads an OpenMetrics page with Python's OpenMetrics parser and anything else with
    // its classic text parser, which name counters differently.
    let dialect = if resp.openmetrics {
        Dialect::OpenMetrics
    } else {
        Dialect::Classic
    };
    match parse_scrape_as(&resp.body, dialect) {
        Ok(s) => Ok((resp, s)),
        Err(error) => {
            let sample: String = String::from_utf8_lossy(&resp.body)
                .chars()
                .take(200)
                .collect();
            Err(Failure::NotPrometheus {
                url: url.to_owned(),
                error,
                sample,
            })
        }
    }
}

/// Scrapes endpoint `i` once and records the sample, or handles the failure.
async fn scrape(shared: Rc<Shared>, i: usize) {
    let ep = &shared.endpoints[i];
    if ep.state.get() != State::Active {
        return;
    }
    let t = ep.target.borrow().clone();
    // A scrape belongs to the phase it was sent in, whenever its answer arrives.
    let phase = shared.phase.get();
    shared.in_flight.set(shared.in_flight.get() + 1);
    shared.scrapes.set(shared.scrapes.get() + 1);
    let res = fetch(
        &t,
        false,
        &ep.pool,
        &shared.clock,
        timeouts(&shared.settings),
    )
    .await;
    shared
        .in_flight
        .set(shared.in_flight.get().saturating_sub(1));
    // Disabled or probing meanwhile: this result no longer matters.
    if ep.state.get() != State::Active {
        return;
    }
    match classify(&t.url, res) {
        Ok((resp, page)) => record(&shared, &t.url, &resp, &page, phase),
        Err(why) if why.is_incompatible() => incompatible(&shared, i, &t, &why, phase).await,
        Err(why) => {
            shared.errors.set(shared.errors.get() + 1);
            if shared.verbose && !ep.logged_error.replace(true) {
                eprintln!(
                    "ringperf: {} scrape of {} failed: {why}",
                    shared.role.label(),
                    t.url
                );
            }
        }
    }
}

/// The TRT-LLM probe, then the swap or the single warning and disable.
async fn incompatible(
    shared: &Rc<Shared>,
    i: usize,
    t: &Rc<Target>,
    why: &Failure,
    phase: Option<(Phase, u8)>,
) {
    let ep = &shared.endpoints[i];
    let alt = if ep.fallback_tried.replace(true) || shared.role != Role::ServerMetrics {
        None
    } else {
        trtllm_fallback(&t.url)
    };
    let mut reason = why.to_string();
    if let Some(alt) = alt {
        ep.state.set(State::Probing);
        let probed = match Target::resolve(&alt, shared.tls.as_ref()) {
            Ok(at) => {
                let at = Rc::new(at);
                let pool = super::fetch::endpoint_pool();
                shared.scrapes.set(shared.scrapes.get() + 1);
                let res = fetch(&at, false, &pool, &shared.clock, timeouts(&shared.settings)).await;
                classify(&alt, res).map(|(resp, page)| (at, resp, page))
            }
            Err(e) => Err(Failure::Target(e)),
        };
        match probed {
            Ok((at, resp, page)) => {
                ep.pool.clear();
                *ep.target.borrow_mut() = at.clone();
                shared
                    .store
                    .borrow_mut()
                    .endpoint_mut(&at.url)
                    .reset_dedup();
                ep.state.set(State::Active);
                if shared.verbose {
                    eprintln!(
                        "ringperf: server metrics: {} is not Prometheus; using {} (TRT-LLM)",
                        t.url, at.url
                    );
                }
                record(shared, &at.url, &resp, &page, phase);
                return;
            }
            Err(w) => {
                reason = format!(
                    "{reason}; the TRT-LLM fallback {alt} failed too ({w}): for TRT-LLM, set \
                     `return_perf_metrics: true` in extra_llm_api_options.yaml"
                );
            }
        }
    }
    if ep.state.replace(State::Disabled) == State::Disabled {
        return;
    }
    let line = format!(
        "WARNING  Disabling {} collection for {}: {reason}. To suppress this warning, pass {}.",
        shared.role.label(),
        t.url,
        shared.role.off_flag()
    );
    eprintln!("{line}");
    shared.warnings.borrow_mut().push(line);
}

/// The phase fields of a JSONL line (AIPerf 0.13): `benchmark_phase`, `phase_index` (the
/// phase's place among the run's phases: warmup first), `profiling_index` (among the profiling
/// phases; none for warmup), `phase_name` (the phase's name) and `phase_kind`.
pub(crate) fn set_phase_fields(rec: &mut ScrapeRecord, tag: PhaseTag<'_>) {
    let kind = tag.phase.as_str().to_owned();
    rec.phase_index = tag.shown_index;
    rec.profiling_index = tag.profiling_index;
    rec.benchmark_phase = Some(kind.clone());
    rec.phase_name = Some(tag.name.to_owned());
    rec.phase_kind = Some(kind);
}

/// Stores one parsed page of a scrape sent during `phase` and streams its JSONL line when it is
/// a unique update.
fn record(shared: &Shared, url: &str, resp: &Response, page: &Scrape, phase: Option<(Phase, u8)>) {
    if page.malformed.lines > 0 {
        let first_time = {
            let mut store = shared.store.borrow_mut();
            let es = store.endpoint_mut(url);
            let first = es.malformed_lines == 0;
            es.malformed_lines += u64::from(page.malformed.lines);
            first
        };
        // Said once per endpoint; the count is in its `endpoint_info.malformed_lines`.
        if first_time {
            let at = page
                .malformed
                .first
                .map_or_else(String::new, |e| format!(" (the first: {e})"));
            let line = format!(
                "WARNING  {} {url}: {} line(s) of a page did not parse and were left out{at}; \
                 the rest of the page is kept, and every such line is counted in the export's \
                 endpoint_info.malformed_lines",
                shared.role.label(),
                page.malformed.lines
            );
            eprintln!("{line}");
            shared.warnings.borrow_mut().push(line);
        }
    }
    if page.families.is_empty() {
        return;
    }
    // Server metrics stamp a sample with its first response byte (docs/output-formats.md); DCGM's
    // collector stamps its records once the page is read.
    let ts = shared.clock.wall_ns(match shared.role {
        Role::ServerMetrics => resp.first_byte_ns,
        Role::GpuTelemetry => resp.end_ns,
    });
    let latency = resp.end_ns.saturating_sub(resp.sent_ns);
    let dup = {
        let mut store = shared.store.borrow_mut();
        let es = store.endpoint_mut(url);
        let dup = es.check_duplicate(&resp.body);
        es.record_phase_run_fetch(ts, latency, dup, phase);
        es.insert(ts, page);
        dup
    };
    if shared.verbose {
        let mut warned = shared.nonfinite_warned.borrow_mut();
        for name in &page.nonfinite {
            if warned.insert(name.clone()) {
                eprintln!(
                    "ringperf: {}: {name} had NaN/Inf samples (dropped)",
                    shared.role.label()
                );
            }
        }
    }
    if let Some(hook) = &shared.on_page {
        hook.call(url, page, &shared.store.borrow());
    }
    if dup {
        return;
    }
    if let Some(sink) = shared.jsonl.borrow_mut().as_mut() {
        let mut rec = ScrapeRecord::from_scrape(url, ts, latency, page);
        rec.request_sent_ns = Some(shared.clock.wall_ns(resp.sent_ns));
        rec.first_byte_ns = Some(ts);
        if let Some((p, index)) = phase {
            set_phase_fields(&mut rec, shared.phases.tag(p, Some(index)));
        }
        sink.write(&rec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(phase: Phase, had_warmup: bool) -> serde_json::Value {
        fields_in(
            &ringperf_metrics::export::jsonl::PhaseLayout::simple(had_warmup),
            phase,
            None,
        )
    }

    fn fields_in(
        layout: &ringperf_metrics::export::jsonl::PhaseLayout,
        phase: Phase,
        index: Option<u8>,
    ) -> serde_json::Value {
        let mut rec = ScrapeRecord::from_scrape("u", 1, 1, &Scrape::default());
        set_phase_fields(&mut rec, layout.tag(phase, index));
        let mut v = serde_json::to_value(&rec).unwrap();
        for k in [
            "endpoint_url",
            "timestamp_ns",
            "endpoint_latency_ns",
            "metrics",
        ] {
            v.as_object_mut().unwrap().remove(k);
        }
        v
    }

    #[test]
    fn phase_fields_number_the_run_s_phases_warmup_first() {
        use serde_json::json;
        let warmup = json!({"benchmark_phase": "warmup", "phase_index": 0,
            "phase_name": "warmup", "phase_kind": "warmup"});
        assert_eq!(fields(Phase::Warmup, true), warmup);
        let profiling = |i: u32| {
            json!({"benchmark_phase": "profiling", "phase_index": i, "profiling_index": 0,
                "phase_name": "profiling", "phase_kind": "profiling"})
        };
        assert_eq!(fields(Phase::Profiling, true), profiling(1));
        assert_eq!(fields(Phase::Profiling, false), profiling(0));
    }

    #[test]
    fn a_config_file_s_phases_are_named_and_numbered_as_it_gives_them() {
        use serde_json::json;
        let layout = ringperf_metrics::export::jsonl::PhaseLayout {
            phases: vec![
                (Phase::Warmup, "warmup".into()),
                (Phase::Profiling, "poisson_20".into()),
                (Phase::Profiling, "constant_40".into()),
            ],
            shown: Vec::new(),
        };
        assert_eq!(
            fields_in(&layout, Phase::Profiling, Some(2)),
            json!({"benchmark_phase": "profiling", "phase_index": 2, "profiling_index": 1,
                "phase_name": "constant_40", "phase_kind": "profiling"})
        );
        assert_eq!(
            fields_in(&layout, Phase::Profiling, Some(1))["phase_name"],
            "poisson_20"
        );
        // A warmup between two profiling phases: its own number, no profiling number; the
        // profiling phase after it counts the one before.
        let layout = ringperf_metrics::export::jsonl::PhaseLayout {
            phases: vec![
                (Phase::Profiling, "p1".into()),
                (Phase::Warmup, "cool".into()),
                (Phase::Profiling, "p2".into()),
            ],
            shown: Vec::new(),
        };
        assert_eq!(
            fields_in(&layout, Phase::Warmup, Some(1)),
            json!({"benchmark_phase": "warmup", "phase_index": 1,
                "phase_name": "cool", "phase_kind": "warmup"})
        );
        assert_eq!(
            fields_in(&layout, Phase::Profiling, Some(2))["profiling_index"],
            1
        );
        // A number of another kind's phase: the first phase of the record's kind.
        assert_eq!(
            fields_in(&layout, Phase::Profiling, Some(1))["phase_name"],
            "p1"
        );
    }
}
