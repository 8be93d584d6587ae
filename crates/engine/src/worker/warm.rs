//! The warm connection pool of an open-loop phase.
//!
//! An open loop sends at its schedule whatever the answers do, so a request that finds no idle
//! connection has to connect on its own time: a TCP handshake (a TLS one for `https`) in its
//! latency, and at tens of thousands of requests a second a burst of connects at the server's
//! accept queue. Each worker therefore keeps, per base URL, as many connections open as the
//! load needs plus a margin:
//!
//! - before the phase starts (before its first intended send: [`super::Workers::warm`] is
//!   answered before the run takes the phase's start instant), it opens [`target`] connections
//!   for its share of the rate and the latency seen so far ([`FIRST_GUESS_NS`] before any
//!   answer; a warmup phase's answers size the profiling phase);
//! - while the phase runs, a keeper task looks every [`TICK`] at the longest latency and the
//!   most requests in flight of the last two [`WINDOW_NS`] windows and opens what is missing
//!   (idle plus in flight below the target), off every request's path. The phase ends after
//!   the keeper does (at its next tick; a connect it started is bounded by
//!   [`KEEP_CONNECT_LIMIT`]), so no task outlives the phase.
//!
//! Little's law gives the size: a worker sending `rate` requests a second that each take
//! `latency` has `rate · latency` in flight on average; the target is that (or the peak in
//! flight seen, whichever is larger) times [`HEADROOM`], plus [`MARGIN`], never above the
//! phase's concurrency cap nor the worker's share of the descriptor limit. A connection the
//! server closes while idle is replaced by the exchange's own retry (one fresh connect), and
//! connections are never closed for being more than the target: the pool holds at most what the
//! run needed at its peak.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use ringperf_io::net::{Exchange, Limits};

use super::{Shared, WorkerState};

/// Connections kept beyond what the load needs, per worker.
pub const MARGIN: usize = 8;
/// Factor on the expected number in flight (arrivals bunch; latency varies).
pub const HEADROOM: f64 = 1.25;
/// The latency assumed before any request has been answered.
pub const FIRST_GUESS_NS: u64 = 5_000_000;
/// How often the keeper looks at the load while a phase runs.
pub const TICK: Duration = Duration::from_millis(5);
/// The keeper's observation window: what it sizes for is the worse of the current and the
/// previous window.
pub const WINDOW_NS: u64 = 100_000_000;
/// Connects started at once.
const OPEN_AT_ONCE: usize = 64;
/// Bound on a connect the keeper starts while a phase runs (and on the batches of one tick).
const KEEP_CONNECT_LIMIT: Duration = Duration::from_millis(250);
/// Longest a worker spends opening its pool before a phase (the phase starts anyway).
pub const WARM_LIMIT: Duration = Duration::from_secs(2);

/// What a worker's pool is sized for in one phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Warm {
    /// Requests a second this worker sends (the phase's rate, over shards and workers).
    pub rate: f64,
    /// This worker's cap on requests in flight, if the phase has one.
    pub cap: Option<usize>,
    /// Connections this worker may hold open: its share of half the descriptor limit, at most
    /// its connection limit (`AIPERF_HTTP_CONNECTION_LIMIT`).
    pub fd_budget: usize,
}

/// Connections the pool holds (idle plus in flight, over every URL) for `rate` requests a second
/// taking `latency_ns` each, with `peak_in_flight` seen at once.
pub fn target(warm: Warm, latency_ns: u64, peak_in_flight: usize) -> usize {
    let little = warm.rate.max(0.0) * latency_ns as f64 / 1e9;
    let expected = little.max(peak_in_flight as f64) * HEADROOM;
    // A float past usize's range saturates.
    let mut want = (expected.ceil() as usize).saturating_add(MARGIN);
    if let Some(cap) = warm.cap {
        want = want.min(cap);
    }
    want.min(warm.fd_budget)
}

/// What a worker has seen of its own load: the longest latency and the most requests in flight,
/// in the current and the previous window; and what its keeper opened.
#[derive(Debug, Default)]
pub struct Observed {
    window_start_ns: Cell<u64>,
    latency_ns: Cell<[u64; 2]>,
    peak_in_flight: Cell<[usize; 2]>,
    /// Connections opened ahead of the requests (before and during phases).
    pub opened: Cell<u64>,
    /// Ahead-of-time connects that failed.
    pub failed: Cell<u64>,
    /// A request started (what an idle keeper sleeps for).
    pub(crate) started: super::idle::Nudge,
}

impl Observed {
    /// A request was answered (or failed) after `latency_ns`.
    pub fn request_done(&self, latency_ns: u64) {
        let [now, prev] = self.latency_ns.get();
        self.latency_ns.set([now.max(latency_ns), prev]);
    }

    /// `n` requests are in flight.
    pub fn in_flight(&self, n: usize) {
        let [now, prev] = self.peak_in_flight.get();
        self.peak_in_flight.set([now.max(n), prev]);
        self.started.nudge();
    }

    /// Starts a new window once the current one is [`WINDOW_NS`] old.
    fn roll(&self, now_ns: u64) {
        if now_ns.saturating_sub(self.window_start_ns.get()) >= WINDOW_NS {
            self.window_start_ns.set(now_ns);
            self.latency_ns.set([0, self.latency_ns.get()[0]]);
            self.peak_in_flight.set([0, self.peak_in_flight.get()[0]]);
        }
    }

    /// The latency to size for: the longest of the two windows, the first guess before any.
    fn latency(&self) -> u64 {
        let [now, prev] = self.latency_ns.get();
        match now.max(prev) {
            0 => FIRST_GUESS_NS,
            l => l,
        }
    }

    fn peak(&self) -> usize {
        let [now, prev] = self.peak_in_flight.get();
        now.max(prev)
    }
}

/// Opens connections until each URL's share of the target is open (idle or in flight), at most
/// [`OPEN_AT_ONCE`] connects at a time, each bounded by `connect_timeout`; stops at the first
/// failed connect (the requests will meet the same server and report it) or at `deadline_ns`
/// on the run clock. Returns how many it opened.
async fn fill(
    shared: &Arc<Shared>,
    state: &Rc<WorkerState>,
    want: usize,
    connect_timeout: Duration,
    deadline_ns: u64,
) -> usize {
    let urls = shared.urls.len().max(1);
    let per_url = want.div_ceil(urls);
    let mut opened = 0;
    for url in 0..shared.urls.len() {
        loop {
            let busy = state.in_flight.get().div_ceil(urls);
            let need = per_url
                .saturating_sub(state.pool.idle(url) + busy)
                .min(state.pool.room());
            if need == 0 || shared.clock.now_ns() >= deadline_ns || shared.control.stopped() {
                break;
            }
            let batch: Vec<_> = (0..need.min(OPEN_AT_ONCE))
                .map(|_| {
                    monoio::spawn(open_one(
                        shared.clone(),
                        state.clone(),
                        url,
                        connect_timeout,
                    ))
                })
                .collect();
            let mut ok = true;
            for handle in batch {
                if handle.await {
                    opened += 1;
                } else {
                    ok = false;
                }
            }
            if !ok {
                return opened;
            }
        }
    }
    opened
}

/// Opens one connection to URL `url` into the worker's pool.
async fn open_one(
    shared: Arc<Shared>,
    state: Rc<WorkerState>,
    url: usize,
    connect_timeout: Duration,
) -> bool {
    let limits = Limits {
        connect_timeout: Some(connect_timeout),
        read_timeout: None,
        attempt_timeout: None,
        max_body_bytes: shared.max_body_bytes,
    };
    let exchange = Exchange {
        addr: &shared.urls[url],
        tls: shared.tls.get(url).and_then(Option::as_ref),
        pool: &state.pool,
        slot: url,
        reuse: true,
        head_request: false,
        clock: &shared.clock,
        kernel_stamps: shared.kernel_stamps,
        tcp_info: false,
        limits: &limits,
        deadline_ns: None,
        cancel_after_sent: None,
        cut: None,
    };
    let ok = exchange.open_idle().await.is_ok();
    let counter = if ok {
        &state.warm.opened
    } else {
        &state.warm.failed
    };
    counter.set(counter.get() + 1);
    ok
}

/// The connect bound of a connection opened ahead: the request timeout, at most
/// [`WARM_LIMIT`].
fn connect_timeout(shared: &Shared) -> Duration {
    shared.request_timeout.min(WARM_LIMIT)
}

/// Before a phase: opens the pool `warm` needs, within [`WARM_LIMIT`]. Returns how many
/// connections it opened.
pub(crate) async fn before_phase(
    shared: &Arc<Shared>,
    state: &Rc<WorkerState>,
    warm: Warm,
) -> usize {
    let want = target(warm, state.warm.latency(), state.warm.peak());
    let deadline = shared.clock.now_ns() + WARM_LIMIT.as_nanos() as u64;
    fill(shared, state, want, connect_timeout(shared), deadline).await
}

/// While a phase runs (until `phase_over`): every [`TICK`], opens what the pool lacks for the
/// load of the last two windows. While nothing is in flight and nothing was opened the tick
/// doubles, up to the worker's idle poll (200 ms); on a worker that listens for the run's stop it
/// then sleeps until a request starts instead: an idle phase (a trace's quiet stretch) costs no
/// wake-up.
pub(crate) async fn keep(
    shared: Arc<Shared>,
    state: Rc<WorkerState>,
    warm: Warm,
    phase_over: Rc<super::idle::Latch>,
) {
    // The phase's end waits for this task: a connect it starts is bounded tighter than one
    // before the phase.
    let timeout = connect_timeout(&shared).min(KEEP_CONNECT_LIMIT);
    let mut tick = TICK;
    let idle = super::idle::IDLE_POLL;
    loop {
        if tick >= idle && state.stop.bound().is_none() {
            // Idle, and the stop wakes this worker: sleep until a request starts.
            let started = state.warm.started.wait();
            monoio::select! {
                () = started => {}
                () = phase_over.wait() => return,
                () = state.stop.seen.wait() => return,
            }
        } else if !phase_over.sleep(Some(tick), &state.stop.seen).await {
            return;
        }
        if shared.control.stopped() {
            return;
        }
        let now = shared.clock.now_ns();
        state.warm.roll(now);
        let want = target(warm, state.warm.latency(), state.warm.peak());
        let until = now + KEEP_CONNECT_LIMIT.as_nanos() as u64;
        let opened = fill(&shared, &state, want, timeout, until).await;
        tick = if opened == 0 && state.in_flight.get() == 0 {
            (tick * 2).min(idle)
        } else {
            TICK
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warm(rate: f64) -> Warm {
        Warm {
            rate,
            cap: None,
            fd_budget: 1 << 20,
        }
    }

    #[test]
    fn target_is_littles_law_with_headroom_and_margin() {
        // 40 000/s at 10 ms: 400 in flight, ×1.25 = 500, + 8.
        assert_eq!(target(warm(40_000.0), 10_000_000, 0), 508);
        // 200/s at 5 ms: 1 in flight → 1.25 → 2, + 8.
        assert_eq!(target(warm(200.0), FIRST_GUESS_NS, 0), 10);
        // The peak in flight, when larger, sizes it: 30 × 1.25 = 37.5 → 38, + 8.
        assert_eq!(target(warm(200.0), 5_000_000, 30), 46);
        // No load yet: the margin.
        assert_eq!(target(warm(0.0), 0, 0), MARGIN);
    }

    #[test]
    fn target_never_passes_the_cap_nor_the_descriptor_budget() {
        let capped = Warm {
            cap: Some(16),
            ..warm(40_000.0)
        };
        assert_eq!(target(capped, 10_000_000, 0), 16);
        let scarce = Warm {
            fd_budget: 100,
            ..warm(40_000.0)
        };
        assert_eq!(target(scarce, 10_000_000, 0), 100);
        assert_eq!(target(warm(f64::MAX), u64::MAX, usize::MAX), 1 << 20);
    }

    #[test]
    fn observations_span_two_windows_then_fade() {
        let o = Observed::default();
        assert_eq!((o.latency(), o.peak()), (FIRST_GUESS_NS, 0));
        o.request_done(30_000_000);
        o.in_flight(12);
        o.request_done(10_000_000);
        o.in_flight(3);
        assert_eq!((o.latency(), o.peak()), (30_000_000, 12));
        // A new window: the previous one still counts.
        o.roll(WINDOW_NS);
        o.request_done(1_000_000);
        assert_eq!((o.latency(), o.peak()), (30_000_000, 12));
        // Too early to roll again: nothing changes.
        o.roll(WINDOW_NS + 1);
        assert_eq!(o.latency(), 30_000_000);
        // Two windows on, only the last one's load is left.
        o.roll(2 * WINDOW_NS);
        assert_eq!((o.latency(), o.peak()), (1_000_000, 0));
        o.roll(3 * WINDOW_NS);
        assert_eq!((o.latency(), o.peak()), (FIRST_GUESS_NS, 0));
    }
}
