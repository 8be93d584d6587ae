//! Worker threads: one per core, pinned, each with its own monoio runtime, connections, buffers
//! and ring producer. Workers only send, read and stamp; everything else is the aggregator's.
//!
//! A worker is driven phase by phase over a control channel: the main thread sends a
//! [`PhasePlan`], the worker runs it to completion (all its requests answered, failed or cut at
//! the hard deadline) and reports [`PhaseDone`].

pub mod adaptive;
mod agentic;
mod client;
mod ctx;
mod encode;
mod idle;
mod pacer;
mod phase;
mod pre_session;
pub mod prefill;
mod session;
mod think;
pub mod tree;
mod video_job;
pub mod warm;

pub use session::TurnTiming;

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use crossbeam_queue::ArrayQueue;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use ringperf_io::runtime::IoDriver;
use ringperf_wire::clock::Clock;
use ringperf_wire::conversation::Sampling;
use ringperf_wire::endpoint::{EndpointKind, PayloadParams};
use ringperf_wire::http::EncodedRequest;
use ringperf_wire::record::ring::Producer;
use ringperf_wire::record::{Credit, Phase, RawRecord};
use ringperf_workload::schedule::Shard;
use ringperf_workload::workload::{Prepared, PreparedTurn};

pub use ringperf_io::runtime::{self, DriverKind};

/// How requests use connections (`--connection-reuse-strategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionReuse {
    Pooled,
    Never,
    /// One connection per session, closed after its last turn.
    StickyUserSessions,
}

/// Read-only state shared by every worker.
#[derive(Debug)]
pub struct Shared {
    pub clock: Clock,
    /// Resolved address of every base URL.
    pub urls: Vec<SocketAddr>,
    /// Per base URL: the URL each request goes to, `scheme://host:port/path`, as a failed
    /// request's error message names it.
    pub request_urls: Vec<String>,
    /// Per base URL: the TLS connector of an `https://` URL, `None` for `http://`.
    pub tls: Vec<Option<ringperf_io::net::Connector>>,
    /// The conversations (bodies moved out into `templates`).
    pub dataset: Prepared,
    /// Index of each conversation's first turn among all turns.
    pub turn_offsets: Vec<usize>,
    /// Pre-encoded requests: `templates[url][turn]` over all turns in dataset order; `None`
    /// for a turn whose body carries its conversation's history and is built when due.
    pub templates: Vec<Vec<Option<EncodedRequest>>>,
    /// How a built body becomes a request: `Host` and path per URL, headers, affinity copies.
    pub encoding: Encoding,
    /// Endpoint and payload parameters of built bodies.
    pub kind: EndpointKind,
    pub payload: PayloadParams,
    pub request_timeout: Duration,
    /// Most connections a worker holds open at once (`AIPERF_HTTP_CONNECTION_LIMIT`).
    pub connection_limit: usize,
    /// Seconds between a video job's status polls (`AIPERF_HTTP_VIDEO_POLL_INTERVAL`).
    pub video_poll_interval: Duration,
    pub reuse: ConnectionReuse,
    /// Largest response body accepted.
    pub max_body_bytes: u64,
    pub seed: u64,
    /// Early stop (signal, error budget): stop issuing, cut in-flight requests at a deadline.
    pub control: Arc<ringperf_io::control::RunControl>,
    /// `--export-http-trace`: each record keeps its response head (reason phrase and headers
    /// for `trace_data`). Off, the worker copies nothing.
    pub http_trace: bool,
    /// Where answers are read (`response_field`, `raw` / `template`), for first-token
    /// detection under `--prefill-concurrency`; `None` auto-detects.
    pub response_field: Option<Arc<ringperf_wire::endpoint::FieldPath>>,
    /// Read requests with kernel receive stamps (`--timestamps kernel`, when available).
    pub kernel_stamps: bool,
    /// Read each request's connection `TCP_INFO` round-trip estimate as its response completes
    /// (with `--network-latency-*`).
    pub tcp_info: bool,
    /// Records are compact: a streamed response keeps each message's extracted delta, not its
    /// raw bytes (every `--export-level` but `raw`, which exports the raw messages).
    pub compact_records: bool,
    /// Batched wake-ups ([`ringperf_io::net::batch`]): the longest nap, when reads carry kernel
    /// stamps and `--batch-wakeups-us` is not 0.
    pub batch_wakeups: Option<Duration>,
    /// A streamed trace replay: the slots its requests are built into while it runs (every
    /// `templates` entry is `None`).
    pub stream: Option<Arc<ringperf_workload::workload::stream::Stream>>,
    /// `--download-video-content`: a finished video job's content is fetched (`video_job`).
    pub download_video_content: bool,
    /// `--cache-bust`: the markers put into the requests as they are sent (`session`).
    pub cache_bust: Option<ringperf_workload::workload::cache_bust::Buster>,
}

/// Everything besides the body that goes into a request.
#[derive(Clone, Debug, Default)]
pub struct Encoding {
    /// `(Host header, request path)` of every base URL.
    pub targets: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    /// Session-affinity headers carrying a copy of the correlation id.
    pub correlation_copies: Vec<&'static str>,
    /// Name of the header carrying the correlation id (`--session-header`); empty: the default
    /// `X-Correlation-ID`.
    pub correlation_header: String,
    /// `--request-content-type multipart/form-data`: each body is a form payload, sent as its
    /// multipart form (`Content-Type` with the boundary; `headers` then has none), boundaries
    /// drawn from this seed. `None`: bodies are JSON, sent as they are.
    pub form_seed: Option<u64>,
}

impl Encoding {
    /// The header carrying the correlation id.
    pub fn correlation_header(&self) -> &str {
        if self.correlation_header.is_empty() {
            ringperf_wire::http::request::CORRELATION_ID_HEADER
        } else {
            &self.correlation_header
        }
    }
}

impl Shared {
    /// Turns of conversation `c`.
    pub fn turns_of(&self, c: u32) -> usize {
        self.dataset
            .conversations
            .get(c as usize)
            .map_or(0, |c| c.turns.len())
    }

    /// Turn `t` of conversation `c`.
    pub(crate) fn turn(&self, c: u32, t: u32) -> &PreparedTurn {
        &self.dataset.conversations[c as usize].turns[t as usize]
    }

    /// Index of turn `t` of conversation `c` among all turns.
    pub(crate) fn flat_turn(&self, c: u32, t: u32) -> usize {
        self.turn_offsets[c as usize] + t as usize
    }

    /// Encodes a request of JSON `body` for base URL `url` (a later turn of a conversation,
    /// built when due: the form-data types send every turn alone, encoded before the run by
    /// [`Encoding::encode_turn`]).
    pub fn encode(
        &self,
        url: usize,
        body: &[u8],
    ) -> Result<EncodedRequest, ringperf_wire::http::HttpError> {
        let (host, path) = &self.encoding.targets[url];
        ringperf_wire::http::encode_post_with(
            host,
            path,
            &self.encoding.headers,
            body,
            self.encoding.correlation_header(),
            &self.encoding.correlation_copies,
        )
    }
}

/// Where a phase's credits come from.
#[derive(Debug, Clone)]
pub enum CreditSource {
    /// Closed loop: `slots` session loops on this worker, each running one conversation after
    /// another, turn by turn (AIPerf's session concurrency). `ramp_offsets_ns[i]`: slot `i`
    /// starts this long after the phase start (`--concurrency-ramp-duration`; empty: at once).
    Closed {
        slots: usize,
        ramp_offsets_ns: Vec<u64>,
    },
    /// Open loop: credits with absolute intended times, fed by the dispatcher. A session holds
    /// its slot from its first turn to its last answer, as AIPerf's session slots do: `cap`
    /// bounds this worker's sessions alive (session starts), `slots` the phase's over every
    /// worker (rate ticks).
    Open {
        queue: Arc<ArrayQueue<Credit>>,
        fed: Arc<AtomicBool>,
        /// The intended time of the next credit not yet queued, published by the feeder
        /// (`run::dispatch`: 0 when unknown or imminent, `u64::MAX` when none is left): an empty
        /// queue is looked at again shortly before it, not polled.
        next_ns: Arc<AtomicU64>,
        cap: Option<usize>,
        /// Rate ticks: the phase's session slots (its `--concurrency`), shared by every worker.
        slots: Option<Arc<adaptive::SessionSlots>>,
        /// How a credit is used.
        kind: OpenKind,
    },
    /// Agentic replay: this worker's lanes.
    Agentic(Arc<AgenticWork>),
}

/// Agentic replay (docs/timing.md): this worker's lanes, each a session tree resumed where its
/// trajectory puts it ([`ringperf_workload::schedule::agentic`]).
#[derive(Debug, Clone)]
pub struct AgenticWork {
    /// The warmup phase: each stream sends the one turn before its lane's `t*`, then stops.
    /// Else profiling: the streams resume at `t*`, and a lane whose tree has finished starts
    /// the next root the sampler draws, from its first turn.
    pub warm: bool,
    pub lanes: Vec<AgenticLane>,
    /// The sampler's draws taken so far over every worker (the next root of a lane is draw
    /// `draws`, then it grows by one).
    pub draws: Arc<AtomicU64>,
    /// `--agentic-cache-warmup-duration` (the warmup only): after the priming requests, each
    /// lane's tree goes on from `resume` with no recorded idle and one output token a request,
    /// until the stage's end; then where each session is is handed to the profiling phase.
    pub accel: Option<Arc<Accel>>,
    /// With `accel`: the lanes as profiling would resume them (same indices as `lanes`).
    pub resume: Vec<AgenticLane>,
}

/// The accelerated cache warmup, shared by every worker of the warmup.
#[derive(Debug)]
pub struct Accel {
    /// How long the stage issues requests.
    pub duration_ns: u64,
    /// How long its last answers are waited for after that.
    pub grace_ns: Option<u64>,
    /// Priming requests not yet answered, over every worker: the stage starts at 0.
    pub priming_left: AtomicU64,
    /// Run-clock ns when the stage stops issuing (0: not started yet).
    pub until_ns: AtomicU64,
    /// Where each lane's sessions are when the stage has drained, by lane index.
    pub handoff: std::sync::Mutex<Vec<Option<Handoff>>>,
}

impl Accel {
    /// A stage of `duration`, drained for `grace` at most, after `priming` requests, of `lanes`.
    pub fn new(duration: Duration, grace: Option<Duration>, priming: u64, lanes: usize) -> Self {
        Self {
            duration_ns: duration.as_nanos() as u64,
            grace_ns: grace.map(|g| g.as_nanos() as u64),
            priming_left: AtomicU64::new(priming),
            until_ns: AtomicU64::new(0),
            handoff: std::sync::Mutex::new(vec![None; lanes]),
        }
    }

    /// The stage starts at run-clock `now_ns` (the first lane to see the priming answered
    /// starts it for all); its end.
    pub fn start(&self, now_ns: u64) -> u64 {
        let until = now_ns.saturating_add(self.duration_ns).max(1);
        match (self.until_ns).compare_exchange(0, until, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => until,
            Err(set) => set,
        }
    }

    /// The stage has stopped issuing by run-clock `now_ns`.
    pub fn over(&self, now_ns: u64) -> bool {
        let until = self.until_ns.load(Ordering::Acquire);
        until != 0 && now_ns >= until
    }

    /// When an answer still coming is cut (`None`: before the stage, or no limit).
    pub fn cut_ns(&self) -> Option<u64> {
        let until = self.until_ns.load(Ordering::Acquire);
        (until != 0)
            .then_some(self.grace_ns)
            .flatten()
            .map(|g| until.saturating_add(g))
    }

    /// Lane `lane`'s sessions where the stage left them.
    pub fn hand_off(&self, lane: u32, h: Handoff) {
        if let Ok(mut v) = self.handoff.lock()
            && let Some(slot) = v.get_mut(lane as usize)
        {
            *slot = Some(h);
        }
    }
}

#[cfg(test)]
mod accel_tests {
    use super::Accel;
    use std::time::Duration;

    #[test]
    fn the_stage_starts_once_and_ends_its_duration_later() {
        let a = Accel::new(
            Duration::from_millis(10),
            Some(Duration::from_millis(5)),
            2,
            1,
        );
        assert!(!a.over(u64::MAX), "not started: never over");
        assert_eq!(a.cut_ns(), None);
        assert_eq!(a.start(1_000), 10_001_000);
        // A later lane starting it finds it started.
        assert_eq!(a.start(2_000_000), 10_001_000);
        assert!(!a.over(10_000_999) && a.over(10_001_000));
        assert_eq!(a.cut_ns(), Some(15_001_000));
        let unbounded = Accel::new(Duration::from_millis(10), None, 0, 1);
        unbounded.start(0);
        assert_eq!(unbounded.cut_ns(), None);
    }
}

/// A lane's tree where the accelerated cache warmup left it.
#[derive(Debug, Clone, Default)]
pub struct Handoff {
    /// Its root conversation (a lane may have moved on to another trace).
    pub root: u32,
    /// Every session with a turn left: its next turn, when its last answer ended (run-clock
    /// ns; 0: it sent nothing yet), its branch of the root (`None`: the root).
    pub streams: Vec<HandoffStream>,
    /// The requests of the tree that have ended (its barriers go on from there).
    pub ended: Vec<(u32, u32)>,
}

/// One session of a [`Handoff`].
#[derive(Debug, Clone)]
pub struct HandoffStream {
    pub conversation: u32,
    pub turn: u32,
    pub last_end_ns: u64,
    pub branch: Option<u32>,
    pub id: uuid::Uuid,
    pub marker: Option<ringperf_workload::workload::cache_bust::Marker>,
}

/// `--system-idle-gap-cap-seconds` (agentic replay): whenever no request of the phase is in
/// flight on any worker, every pending wait of the phase is brought forward by one shift, so
/// that the earliest goes no later than the cap after the idle spell began; their order and
/// spacing are kept. The workers publish their earliest waits and count their requests here; the
/// thread driving the phase computes the shift ([`IdleCap::enforce`]) and pokes them.
#[derive(Debug)]
pub struct IdleCap {
    pub cap_ns: u64,
    /// How far every wait of the phase has been brought forward so far, ns.
    shift_ns: AtomicU64,
    /// Requests of the phase in flight, over every worker.
    in_flight: AtomicU64,
    /// Requests answered so far: each starts a new idle spell.
    returns: AtomicU64,
    /// Each worker's earliest pending wait (run-clock ns before the shift; `u64::MAX`: none).
    earliest: Vec<AtomicU64>,
}

/// What [`IdleCap::enforce`] keeps between its looks.
#[derive(Debug, Default, Clone, Copy)]
pub struct IdleWatch {
    /// When the current idle spell began (run-clock ns).
    since: Option<u64>,
    /// Answers counted at the previous look.
    returns: u64,
    /// Shifts made, and their total, ns.
    pub jumps: u64,
    pub skipped_ns: u64,
}

impl IdleCap {
    pub fn new(cap: Duration, workers: usize) -> Self {
        Self {
            cap_ns: cap.as_nanos() as u64,
            shift_ns: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            returns: AtomicU64::new(0),
            earliest: (0..workers).map(|_| AtomicU64::new(u64::MAX)).collect(),
        }
    }

    /// The shift so far, ns.
    pub fn shift(&self) -> u64 {
        self.shift_ns.load(Ordering::Acquire)
    }

    /// A request of the phase is sent (`true`) or answered (`false`).
    pub(crate) fn request(&self, sent: bool) {
        if sent {
            self.in_flight.fetch_add(1, Ordering::AcqRel);
        } else {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            self.returns.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Worker `worker`'s earliest pending wait is now `at_ns` (`u64::MAX`: none).
    pub(crate) fn publish(&self, worker: usize, at_ns: u64) {
        if let Some(slot) = self.earliest.get(worker) {
            slot.store(at_ns, Ordering::Release);
        }
    }

    /// One look at `now`: when nothing is in flight and the earliest wait is further than what
    /// is left of the cap, brings every wait forward by the excess; returns it (ns) when it did.
    pub fn enforce(&self, now: u64, w: &mut IdleWatch) -> Option<u64> {
        let returns = self.returns.load(Ordering::Acquire);
        if self.in_flight.load(Ordering::Acquire) > 0 {
            w.since = None;
            w.returns = returns;
            return None;
        }
        if w.since.is_none() || returns != w.returns {
            w.since = Some(now);
            w.returns = returns;
        }
        let since = w.since.unwrap_or(now);
        let earliest = (self.earliest.iter())
            .map(|e| e.load(Ordering::Acquire))
            .min()
            .unwrap_or(u64::MAX);
        if earliest == u64::MAX {
            return None;
        }
        let shift = self.shift();
        let due = earliest.saturating_sub(shift);
        let left = self.cap_ns.saturating_sub(now.saturating_sub(since));
        let excess = due.saturating_sub(now).saturating_sub(left);
        if excess == 0 {
            return None;
        }
        self.shift_ns.fetch_add(excess, Ordering::AcqRel);
        w.jumps += 1;
        w.skipped_ns += excess;
        Some(excess)
    }
}

/// One lane of agentic replay: the sessions of its first tree alive at its `t*`.
#[derive(Debug, Clone)]
pub struct AgenticLane {
    /// The lane's number (its slot; its sessions' base URL goes round the URLs by it).
    pub index: u32,
    pub root: u32,
    /// The requests of the lane's trace that count as ended when it resumes (those the trace
    /// had ended before `t*`, or that ended in the warmup): the barriers go on from there.
    pub ended: Vec<(u32, u32)>,
    pub streams: Vec<AgenticStream>,
}

/// A session of a lane, resumed at a turn.
#[derive(Debug, Clone)]
pub struct AgenticStream {
    pub conversation: u32,
    /// The first turn it sends in the phase; the turns before it are its history.
    pub turn: u32,
    /// When it goes, ns after the phase start; `None`: the root waits for its subagents.
    pub at_ns: Option<u64>,
    /// A subagent: its branch of the root (by index in the root's branches).
    pub branch: Option<u32>,
    /// Its correlation id, the same in warmup and profiling.
    pub id: uuid::Uuid,
    /// `--cache-bust`: its tree's marker, the same in warmup and profiling.
    pub marker: Option<ringperf_workload::workload::cache_bust::Marker>,
}

/// What an open-loop credit stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenKind {
    /// A rate tick: it sends the next turn of a session whose turn is due (first), or starts
    /// a new session.
    Tick,
    /// The first turn of the credit's conversation (fixed schedule); the session then sends
    /// its later turns on its own, when each is due.
    SessionStart,
}

/// Counters shared by every worker in a phase.
#[derive(Debug, Clone, Default)]
pub struct PhaseCounters {
    /// Next request index (`session_num`): taken by every send.
    pub requests: Arc<AtomicU64>,
    /// Next new-session index.
    pub sessions: Arc<AtomicU64>,
    /// One past the highest session index (the run's) that started: the next phase picks its
    /// conversations after these.
    pub started: Arc<AtomicU64>,
    /// Held while a new session takes its index and its first request's index together: the
    /// pipeline's one lock, taken once per new session (per request for single-turn data).
    /// Measured on a copy of [`Self::start_session`] built with `rustc -O` on the loaded 2-core
    /// development machine (`cargo bench --bench hot -- start_session` times this one): 18–28 ns
    /// a call uncontended, of which the lock is 4–15 ns; 41–53 ns with two threads calling back
    /// to back, the lock adding 15–25 ns to the two shared counters' own cache-line traffic. A
    /// request costs microseconds of system calls, so it stays: without it both counters would
    /// have to move in one atomic step, which needs a 128-bit compare-and-swap (not in stable
    /// `std`) or two 32-bit halves in one `u64` (a long run overflows 2^32 requests).
    starting: Arc<std::sync::Mutex<()>>,
}

impl PhaseCounters {
    /// Takes the next request index (the run's: local `j` is `shard.global(j)`), if it is
    /// below `request_limit`.
    pub fn take_request(&self, shard: Shard, request_limit: u64) -> Option<u64> {
        let i = shard.global(self.requests.fetch_add(1, Ordering::Relaxed));
        (i < request_limit).then_some(i)
    }

    /// Starts a session: its index (below `session_limit`) and its first turn's request index
    /// (below `request_limit`), or `None` when either has run out.
    ///
    /// Both are taken under one lock, so first turns get request indices in session order
    /// whichever worker starts which, and when the requests run out the sessions left unsent
    /// are the last ones. (Taken apart, one worker could take session 5 and another session
    /// 6, the second take request 5 and the first find none left: a sequential single-turn
    /// dataset would skip entry 5 and send entry 0 twice.)
    pub fn start_session(
        &self,
        shard: Shard,
        session_limit: u64,
        request_limit: u64,
    ) -> Option<(u64, u64)> {
        // Every first turn needs a request here: a started session always has one.
        self.start_session_as(shard, session_limit, request_limit, |_| true)
            .map(|(s, first)| (s, first.unwrap_or(u64::MAX)))
    }

    /// [`Self::start_session`] for a session whose first turn may send no request:
    /// `needs(s)` (with the session's index) says whether it does. One that does not (an
    /// orchestrator's, AIPerf's `no_request` credit) takes none, but starts only while requests
    /// are left.
    pub fn start_session_as(
        &self,
        shard: Shard,
        session_limit: u64,
        request_limit: u64,
        needs: impl FnOnce(u64) -> bool,
    ) -> Option<(u64, Option<u64>)> {
        let _starting = self
            .starting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let s = shard.global(self.sessions.fetch_add(1, Ordering::Relaxed));
        let first = (s < session_limit)
            .then(|| {
                if needs(s) {
                    self.take_request(shard, request_limit).map(Some)
                } else {
                    let taken = shard.global(self.requests.load(Ordering::Relaxed));
                    (taken < request_limit).then_some(None)
                }
            })
            .flatten();
        let Some(first) = first else {
            // Not started: the count (the live progress's `sessions.sent`) stays at the sessions
            // that did, whichever slot looked for one more after the last.
            self.sessions.fetch_sub(1, Ordering::Relaxed);
            return None;
        };
        self.started.fetch_max(s + 1, Ordering::Relaxed);
        Some((s, first))
    }
}

/// One phase for one worker.
#[derive(Debug, Clone)]
pub struct PhasePlan {
    pub phase: Phase,
    /// The phase's position among the run's phases (warmup first), carried by every record.
    pub phase_index: u8,
    /// Sessions the run's earlier phases started: this phase's session `s` sends conversation
    /// `pick(first_session + s)`, so the phases walk the dataset as one sequence (AIPerf's one
    /// sampler for the run).
    pub first_session: u64,
    pub source: CreditSource,
    pub counters: PhaseCounters,
    /// This process's shard of the run: the counters below count its own items, local item
    /// `j` being the run's index `shard.global(j)`.
    pub shard: Shard,
    /// Requests the phase sends at most (over all workers, and all shards: a limit on the
    /// run's request index).
    pub request_limit: u64,
    /// Sessions the phase starts at most (`--conversation-num`; over all workers and shards).
    pub session_limit: u64,
    /// How new sessions pick their conversation.
    pub sampling: Sampling,
    /// Run-clock ns of the phase start.
    pub start_ns: u64,
    /// When later turns are due.
    pub timing: TurnTiming,
    /// `--request-cancellation-rate`: which requests are cancelled, by request index.
    pub cancel: Option<ringperf_workload::schedule::CancelPlan>,
    /// `--prefill-concurrency`: the phase's limit on requests waiting for their first token.
    pub prefill: Option<Arc<prefill::PrefillGate>>,
    /// Stop taking closed-loop credits at this monotonic ns (duration runs).
    pub issue_deadline_ns: Option<u64>,
    /// Cut every request still in flight at this monotonic ns (end of the grace period).
    pub hard_deadline_ns: Option<u64>,
    /// An open-loop phase on pooled connections: keep the pool sized for this load while the
    /// phase runs ([`warm`]).
    pub warm: Option<warm::Warm>,
    /// `--system-idle-gap-cap-seconds` (agentic replay's profiling phase).
    pub idle_cap: Option<Arc<IdleCap>>,
    /// An adaptive phase's controls: its session limit and its stop ([`adaptive`]).
    pub adaptive: Option<Arc<adaptive::AdaptiveGate>>,
    /// AIPerf's `seamless` (docs/config-files.md): `.0`, the next phase is seamless, so this one
    /// ends once it issues nothing more, its requests in flight finishing on their own (still
    /// its records); `.1`, this phase is seamless, so its closed loop counts the previous
    /// phase's sessions still alive against its concurrency.
    pub seamless: (bool, bool),
}

/// A worker thread's own account of its CPU use, taken as it ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerCpu {
    /// CPU time of the thread (`CLOCK_THREAD_CPUTIME_ID`), ns.
    pub cpu_ns: u64,
    /// Wall-clock time from the thread's start to its end, ns.
    pub wall_ns: u64,
    /// Time it was runnable but waited for a CPU another thread held, ns
    /// ([`ringperf_wire::clock::thread_run_queue_ns`]; `None`: not known).
    pub run_queue_ns: Option<u64>,
    /// What its batched wake-ups did (`None`: off).
    pub naps: Option<ringperf_io::net::batch::NapStats>,
    /// Connects that found the process out of file descriptors and waited for one.
    pub descriptor_waits: u64,
    /// Requests that found the worker at its connection limit and waited for a connection.
    pub connection_waits: u64,
    /// Connections its warm pool opened ahead of the requests ([`warm`]), and connects of it
    /// that failed.
    pub warm_opened: u64,
    pub warm_failed: u64,
    /// Times its open loop's wait with nothing due ended (`ringperf.threads[].idle_wakes`).
    pub idle_wakes: u64,
}

impl WorkerCpu {
    /// The share of its lifetime the thread was on a CPU (0 when it lived no measurable time).
    pub fn busy_fraction(&self) -> f64 {
        if self.wall_ns == 0 {
            0.0
        } else {
            self.cpu_ns as f64 / self.wall_ns as f64
        }
    }
}

/// Testing hook: `RINGPERF_TEST_WORKER_STALL_MS=N` makes every worker block its thread for N ms
/// before each request it sends, a deliberately starved client (`tests/it/health.rs`). Read once per
/// worker at start; without the variable (or with 0) it does nothing. Compiled only with the
/// `test-hooks` feature (test builds): a release binary has neither the hook nor its check.
#[cfg(feature = "test-hooks")]
pub const TEST_STALL_ENV: &str = "RINGPERF_TEST_WORKER_STALL_MS";

#[cfg(feature = "test-hooks")]
fn test_stall() -> Option<Duration> {
    std::env::var(TEST_STALL_ENV)
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|&ms| ms > 0)
        .map(Duration::from_millis)
}

/// A worker finished its part of a phase.
#[derive(Debug, Clone, Copy)]
pub struct PhaseDone {
    pub worker: u16,
    pub sent: u64,
    /// How the phase's session trees' branches went on this worker.
    pub branches: tree::BranchCounts,
}

enum Control {
    /// Run a phase (boxed: a plan is over 250 bytes, the other variant a few words).
    Run(Box<PhasePlan>),
    /// Open the pool for the coming phase, then say how many connections were opened.
    Warm(warm::Warm, Sender<usize>),
}

/// Per-worker mutable state, shared by that worker's tasks only.
#[derive(Debug)]
pub(crate) struct WorkerState {
    pub id: u16,
    pub pool: ringperf_io::net::Pool,
    pub pool_enabled: bool,
    rng: RefCell<StdRng>,
    reason: RefCell<String>,
    pub(crate) in_flight: Cell<usize>,
    /// Closed-loop sessions alive on this worker, of every phase (a seamless phase's cap).
    pub(crate) sessions_live: Cell<usize>,
    /// Sockets of requests in flight, shut down when the run is cut short.
    pub(crate) open_fds: RefCell<HashSet<RawFd>>,
    producer: Producer,
    /// [`TEST_STALL_ENV`]: block this long before each send (`None` outside tests).
    #[cfg(feature = "test-hooks")]
    pub(crate) test_stall: Option<Duration>,
    /// What the batched wake-ups did on this worker.
    pub(crate) naps: Rc<Cell<ringperf_io::net::batch::NapStats>>,
    /// The load the warm pool is sized for, and what it opened.
    pub(crate) warm: warm::Observed,
    /// The run's stop, as this worker sees it.
    pub(crate) stop: Rc<idle::StopWatch>,
    /// One timer for every slot and session of the worker that waits (io_uring; `None` on
    /// epoll): see [`pacer::Pacer::shared`].
    pub(crate) timers: Option<Rc<ringperf_io::timer::TimerQueue>>,
    /// The bounds of every request's exchange (`--request-timeout-seconds`, the largest body),
    /// kept once: each exchange borrows them (#41: 88 bytes in every in-flight request).
    pub(crate) limits: ringperf_io::net::Limits,
}

impl WorkerState {
    /// A fresh UUID v4 from the worker's RNG (request ids, session correlation ids).
    pub fn new_id(&self) -> uuid::Uuid {
        let bytes: [u8; 16] = self.rng.borrow_mut().random();
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    }

    pub fn set_reason(&self, r: &str) {
        let mut s = self.reason.borrow_mut();
        s.clear();
        s.push_str(r);
    }

    pub fn take_reason(&self) -> String {
        std::mem::take(&mut *self.reason.borrow_mut())
    }
}

/// Handle to the running workers.
#[derive(Debug)]
pub struct Workers {
    controls: Vec<Sender<Control>>,
    /// Each worker's eventfd (written by the run's stop and by [`Workers::poke`]).
    wakes: Vec<Arc<ringperf_io::control::WakeFd>>,
    done_rx: Receiver<PhaseDone>,
    threads: Vec<JoinHandle<WorkerCpu>>,
    /// Driver each worker runs on.
    pub drivers: Vec<DriverKind>,
    /// Cores the workers were pinned to (None where pinning was refused or not attempted).
    pub pinned: Vec<Option<usize>>,
}

impl Workers {
    /// Spawns `n` workers, pinned to cores `cores[i % cores.len()]` when given, each owning one
    /// ring producer. Fails if a runtime cannot be built.
    pub fn spawn(
        shared: Arc<Shared>,
        producers: Vec<Producer>,
        driver: IoDriver,
        cores: &[usize],
    ) -> std::io::Result<Self> {
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let (ready_tx, ready_rx) =
            crossbeam_channel::unbounded::<(u16, std::io::Result<DriverKind>, Option<usize>)>();
        let mut controls = Vec::new();
        let mut threads = Vec::new();
        let mut wakes = Vec::new();
        let n = producers.len();
        for (i, producer) in producers.into_iter().enumerate() {
            let (ctl_tx, ctl_rx) = crossbeam_channel::unbounded::<Control>();
            controls.push(ctl_tx);
            let shared = shared.clone();
            let done_tx = done_tx.clone();
            let ready_tx = ready_tx.clone();
            let core = (!cores.is_empty()).then(|| cores[i % cores.len()]);
            let id = i as u16;
            // What the run's stop writes to wake this worker (none: its waits stay bounded).
            let wake = ringperf_io::control::WakeFd::new().ok().map(Arc::new);
            if let Some(w) = &wake {
                shared.control.wake_on_stop(w.clone());
                wakes.push(w.clone());
            }
            let t = std::thread::Builder::new()
                .name(format!("ringperf-worker-{i}"))
                .spawn(move || {
                    let born_ns = ringperf_wire::clock::monotonic_raw_ns();
                    let pinned = core.filter(|&c| runtime::pin_to(c));
                    let res = runtime::block_on(driver, |kind| {
                        let ready_tx = ready_tx.clone();
                        async move {
                            let _ = ready_tx.send((id, Ok(kind), pinned));
                            let ends = (producer, ctl_rx, done_tx);
                            worker_main(id, kind, shared, wake, ends).await
                        }
                    });
                    let end = match res {
                        Ok(end) => end,
                        Err(e) => {
                            let _ = ready_tx.send((id, Err(e), pinned));
                            WorkerEnd::default()
                        }
                    };
                    WorkerCpu {
                        cpu_ns: ringperf_wire::clock::thread_cpu_ns(),
                        wall_ns: ringperf_wire::clock::monotonic_raw_ns().saturating_sub(born_ns),
                        run_queue_ns: ringperf_wire::clock::thread_run_queue_ns(),
                        naps: end.naps,
                        descriptor_waits: ringperf_io::net::exchange::descriptor_waits(),
                        connection_waits: ringperf_io::net::exchange::connection_waits(),
                        warm_opened: end.warm_opened,
                        warm_failed: end.warm_failed,
                        idle_wakes: end.idle_wakes,
                    }
                })?;
            threads.push(t);
        }
        drop(ready_tx);
        let mut drivers = vec![DriverKind::Legacy; n];
        let mut pinned = vec![None; n];
        for _ in 0..n {
            let (id, res, core) = ready_rx
                .recv()
                .map_err(|_| std::io::Error::other("a worker thread exited during start-up"))?;
            drivers[id as usize] = res?;
            pinned[id as usize] = core;
        }
        Ok(Self {
            controls,
            wakes,
            done_rx,
            threads,
            drivers,
            pinned,
        })
    }

    /// Starts a phase on every worker (one plan per worker).
    pub fn start_phase(&self, plans: Vec<PhasePlan>) {
        for (ctl, plan) in self.controls.iter().zip(plans) {
            let _ = ctl.send(Control::Run(Box::new(plan)));
        }
    }

    /// Has every worker open its warm pool for the coming phase (`warms[i]` for worker `i`) and
    /// returns once all have answered, after at most [`warm::WARM_LIMIT`] and a second: the
    /// phase's start instant, taken after this, comes after the pool is open. Returns how many
    /// connections were opened.
    pub fn warm(&self, warms: &[warm::Warm]) -> usize {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut asked = 0;
        for (ctl, &w) in self.controls.iter().zip(warms) {
            if ctl.send(Control::Warm(w, tx.clone())).is_ok() {
                asked += 1;
            }
        }
        drop(tx);
        let until = std::time::Instant::now() + warm::WARM_LIMIT + Duration::from_secs(1);
        let mut opened = 0;
        for _ in 0..asked {
            match rx.recv_deadline(until) {
                Ok(n) => opened += n,
                Err(_) => break,
            }
        }
        opened
    }

    /// Has every worker look again at what its idle tasks wait for (a worker ended its phase:
    /// the phase's requests may be exhausted, which the others do not see while they sleep).
    pub fn poke(&self) {
        for w in &self.wakes {
            w.wake();
        }
    }

    /// Waits up to `timeout` for one worker to finish its phase.
    pub fn wait_done(&self, timeout: Duration) -> Option<PhaseDone> {
        self.done_rx.recv_timeout(timeout).ok()
    }

    pub fn len(&self) -> usize {
        self.controls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.controls.is_empty()
    }

    /// Stops the workers and joins their threads (dropping their ring producers); returns each
    /// worker's CPU account, in worker order (a worker that panicked reports zeros).
    pub fn shutdown(mut self) -> Vec<WorkerCpu> {
        self.controls.clear();
        self.threads
            .drain(..)
            .map(|t| t.join().unwrap_or_default())
            .collect()
    }
}

/// What a worker's runtime hands back as it ends.
#[derive(Default)]
struct WorkerEnd {
    idle_wakes: u64,
    naps: Option<ringperf_io::net::batch::NapStats>,
    warm_opened: u64,
    warm_failed: u64,
}

async fn worker_main(
    id: u16,
    driver: DriverKind,
    shared: Arc<Shared>,
    wake: Option<Arc<ringperf_io::control::WakeFd>>,
    (producer, ctl_rx, done_tx): (Producer, Receiver<Control>, Sender<PhaseDone>),
) -> WorkerEnd {
    let state = Rc::new(WorkerState {
        id,
        pool: ringperf_io::net::Pool::new(shared.urls.len(), client::READ_BUF_BYTES)
            .with_limit(shared.connection_limit),
        pool_enabled: shared.reuse == ConnectionReuse::Pooled,
        // Request ids are unique, not reproducible (AIPerf's are uuid4): drawn from entropy, so
        // neither two runs with one `--random-seed` nor the shards of one run share them.
        rng: RefCell::new(StdRng::seed_from_u64(rand::random())),
        reason: RefCell::new(String::new()),
        in_flight: Cell::new(0),
        sessions_live: Cell::new(0),
        open_fds: RefCell::new(HashSet::new()),
        producer,
        #[cfg(feature = "test-hooks")]
        test_stall: test_stall(),
        naps: Rc::new(Cell::new(ringperf_io::net::batch::NapStats::default())),
        warm: warm::Observed::default(),
        stop: Rc::default(),
        timers: (driver == DriverKind::Uring)
            .then(ringperf_io::timer::TimerQueue::new)
            .flatten()
            .map(Rc::new),
        limits: client::limits(&shared),
    });
    let timers = state.timers.clone().map(|q| monoio::spawn(q.drive()));
    // On io_uring a task sleeps on the stop's eventfd, so that idle waits need no bound.
    let listener = wake
        .clone()
        .filter(|_| driver == DriverKind::Uring)
        .map(|fd| monoio::spawn(idle::listen(fd, shared.control.clone(), state.stop.clone())));
    if shared.kernel_stamps && driver == DriverKind::Uring {
        // Kernel stamps keep each event's arrival: the worker's waits may gather completions.
        ringperf_io::net::coalesce::install(ringperf_io::net::coalesce::configured_us());
    }
    if let Some(max) = shared.batch_wakeups {
        // Lives as long as the runtime: it waits for reads between phases.
        monoio::spawn(ringperf_io::net::batch::Napper::new(
            max,
            state.naps.clone(),
        ));
    }
    // Between phases nothing is in flight, so blocking this thread on the channel is fine; but
    // after a phase that handed over to a seamless one, its requests still in flight are driven
    // until the next phase's plan comes (or, the run over, until they end).
    let busy = |s: &WorkerState| s.in_flight.get() > 0 || s.sessions_live.get() > 0;
    loop {
        let control = if busy(&state) {
            match ctl_rx.try_recv() {
                Ok(c) => c,
                Err(crossbeam_channel::TryRecvError::Empty) => {
                    monoio::time::sleep(Duration::from_micros(50)).await;
                    continue;
                }
                Err(crossbeam_channel::TryRecvError::Disconnected) => {
                    let over = Rc::new(idle::Latch::default());
                    let cut = monoio::spawn(watch_cut(shared.clone(), state.clone(), over.clone()));
                    while busy(&state) {
                        monoio::time::sleep(Duration::from_millis(1)).await;
                    }
                    over.set();
                    cut.await;
                    break;
                }
            }
        } else {
            match ctl_rx.recv() {
                Ok(c) => c,
                Err(_) => break,
            }
        };
        match control {
            Control::Run(plan) => {
                let (sent, branches) = phase::run(&shared, &state, *plan, driver).await;
                let _ = done_tx.send(PhaseDone {
                    worker: id,
                    sent,
                    branches,
                });
            }
            Control::Warm(w, opened_tx) => {
                let _ = opened_tx.send(warm::before_phase(&shared, &state, w).await);
            }
        }
    }
    ringperf_io::net::coalesce::uninstall();
    if let (Some(q), Some(driver)) = (&state.timers, timers) {
        q.stop();
        driver.await;
    }
    if let (Some(listener), Some(fd)) = (listener, wake) {
        state.stop.ending.set(true);
        fd.wake();
        listener.await;
    }
    WorkerEnd {
        idle_wakes: state.stop.idle_wakes.get(),
        naps: shared.batch_wakeups.map(|_| state.naps.get()),
        warm_opened: state.warm.opened.get(),
        warm_failed: state.warm.failed.get(),
    }
}

/// While a phase runs: once the run is cut short and its cut deadline has passed, shut down
/// every socket still in flight so that its pending read ends at once. Until a stop it sleeps
/// (woken by the stop on a worker that listens for it; otherwise it looks every 50 ms while
/// requests are in flight, every [`idle::IDLE_POLL`] while none is: a request checks the cut
/// itself before it writes); it ends as soon as the phase is over.
pub(super) async fn watch_cut(
    shared: Arc<Shared>,
    state: Rc<WorkerState>,
    phase_over: Rc<idle::Latch>,
) {
    const CUT_POLL: Duration = Duration::from_millis(5);
    const BUSY_POLL: Duration = Duration::from_millis(50);
    while !phase_over.is_set() {
        let now = shared.clock.now_ns();
        let cut = shared.control.cut_at_ns();
        let nap = if now >= cut {
            // Cutting: sockets of requests still finishing are shut as they are seen.
            Some(CUT_POLL)
        } else {
            let poll = state.stop.bound().map(|idle| {
                if state.open_fds.borrow().is_empty() {
                    idle
                } else {
                    BUSY_POLL
                }
            });
            match (cut, poll) {
                (u64::MAX, poll) => poll,
                (cut, poll) => {
                    Some(Duration::from_nanos(cut - now).min(poll.unwrap_or(Duration::MAX)))
                }
            }
        };
        if !phase_over.sleep(nap, &state.stop.seen).await {
            return;
        }
        if shared.clock.now_ns() >= shared.control.cut_at_ns() {
            for &fd in state.open_fds.borrow().iter() {
                // SAFETY: `fd` is the descriptor of a connection owned by a request of this worker
                // that is still in flight (the exchange, `ringperf_io::net::exchange`, removes it from
                // the set before the connection is pooled or dropped), so it is open and ours;
                // shutdown() only changes its state.
                unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
            }
        }
    }
}

/// Hands a record to the aggregator; a full ring is back-pressure (counted by the ring), never a
/// dropped record.
pub(super) async fn push(state: &WorkerState, rec: Box<RawRecord>) {
    if let Err(back) = state.producer.try_push(rec) {
        // Boxed: every request's future would otherwise reserve room for the timer it needs
        // only while the ring is full.
        Box::pin(push_when_room(state, back)).await;
    }
}

/// Retries a push every 200 µs until the ring takes the record.
async fn push_when_room(state: &WorkerState, mut rec: Box<RawRecord>) {
    loop {
        monoio::time::sleep(Duration::from_micros(200)).await;
        match state.producer.try_push(rec) {
            Ok(()) => return,
            Err(back) => rec = back,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slot that looks for a session after the last request was taken (or past the session
    /// limit) starts none, and the count of sessions sent stays at those that started.
    #[test]
    fn a_session_that_cannot_start_is_not_counted() {
        let c = PhaseCounters::default();
        let shard = Shard::default();
        assert_eq!(c.start_session(shard, 10, 2), Some((0, 0)));
        assert_eq!(c.start_session(shard, 10, 2), Some((1, 1)));
        assert_eq!(c.start_session(shard, 10, 2), None, "no request left");
        assert_eq!(c.start_session(shard, 10, 2), None);
        assert_eq!(c.sessions.load(Ordering::Relaxed), 2);
        let c = PhaseCounters::default();
        assert_eq!(c.start_session(shard, 1, 9), Some((0, 0)));
        assert_eq!(c.start_session(shard, 1, 9), None, "no session left");
        assert_eq!(c.sessions.load(Ordering::Relaxed), 1);
    }

    /// The system-idle cap: with nothing in flight the earliest wait is brought within the cap
    /// of the idle spell's start, once; a request in flight, or one answered since, starts the
    /// spell over.
    #[test]
    fn the_idle_cap_brings_the_earliest_wait_within_the_cap() {
        const S: u64 = 1_000_000_000;
        let cap = IdleCap::new(Duration::from_secs(10), 2);
        let mut w = IdleWatch::default();
        assert_eq!(cap.enforce(0, &mut w), None, "no wait pending");
        cap.publish(0, 40 * S);
        cap.publish(1, 35 * S);
        // Idle since 0; the earliest (35 s) is brought to 10 s.
        assert_eq!(cap.enforce(0, &mut w), Some(25 * S));
        assert_eq!(cap.shift(), 25 * S);
        assert_eq!(cap.enforce(S, &mut w), None, "within the cap now");
        // A request goes and comes back at 4 s: a new spell from then, the wait (at 35 s less
        // the shift, 10 s) is within 4 + 10.
        cap.request(true);
        assert_eq!(cap.enforce(2 * S, &mut w), None);
        cap.request(false);
        assert_eq!(cap.enforce(4 * S, &mut w), None);
        // The worker's next wait is at 60 s as kept (35 s effective): brought to 14 s.
        cap.publish(1, 60 * S);
        cap.publish(0, u64::MAX);
        assert_eq!(cap.enforce(5 * S, &mut w), Some(21 * S));
        assert_eq!((w.jumps, w.skipped_ns), (2, 46 * S));
    }

    /// Two threads start sessions and take later turns' requests at once: every session that
    /// got a first request got it in session order, and no request index is given twice.
    #[test]
    fn sessions_take_their_first_requests_in_session_order() {
        for shard in [Shard::default(), Shard::new(1, 3).unwrap()] {
            let counters = PhaseCounters::default();
            let (sessions, requests) = (shard.global(600_000), shard.global(300_000));
            let run = |continuing: bool| {
                let counters = counters.clone();
                std::thread::spawn(move || {
                    let (mut started, mut taken) = (Vec::new(), Vec::new());
                    while let Some(pair) = counters.start_session(shard, sessions, requests) {
                        started.push(pair);
                        if continuing && let Some(i) = counters.take_request(shard, requests) {
                            taken.push(i);
                        }
                    }
                    (started, taken)
                })
            };
            let (a, b) = (run(true), run(false));
            let (mut started, mut taken) = a.join().unwrap();
            let (more, rest) = b.join().unwrap();
            started.extend(more);
            taken.extend(rest);
            started.sort_unstable();
            assert!(started.len() > 1000, "{} sessions started", started.len());
            assert!(
                started.windows(2).all(|w| w[0].1 < w[1].1),
                "first requests out of session order"
            );
            let mut all: Vec<u64> = started.iter().map(|p| p.1).chain(taken).collect();
            all.sort_unstable();
            assert!(all.windows(2).all(|w| w[0] < w[1]), "a request index twice");
            assert!(all.iter().all(|&i| i < requests && shard.owns(i)));
        }
    }
}
