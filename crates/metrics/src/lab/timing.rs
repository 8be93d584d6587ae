//! The `timing` stream domain (docs/integrations.md#opentelemetry): AIPerf 0.13's phase counters
//! and gauges (`aiperf.timing.*`), made from snapshots of each phase's progress.
//!
//! The thread that drives the phases marks their start and end on a [`PhaseBoard`]; the
//! aggregator counts each phase's answers as it takes them ([`PhaseTally`]) and, at each phase
//! event and every export interval, turns a snapshot ([`PhaseStats`]) into the changes AIPerf
//! emits ([`Deltas`]): a counter moves by its rise (a fall is skipped), a gauge by the change of
//! its value, and nothing is emitted for no change.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ringperf_wire::record::Phase;

/// The counters (monotonic sums, unit `1`), as AIPerf names them, and the phase field each
/// counts.
pub const COUNTERS: [(&str, &str); 8] = [
    ("aiperf.timing.requests.sent", "requests_sent"),
    ("aiperf.timing.requests.completed", "requests_completed"),
    ("aiperf.timing.requests.cancelled", "requests_cancelled"),
    ("aiperf.timing.requests.errors", "request_errors"),
    ("aiperf.timing.sessions.sent", "sent_sessions"),
    ("aiperf.timing.sessions.completed", "completed_sessions"),
    ("aiperf.timing.sessions.cancelled", "cancelled_sessions"),
    ("aiperf.timing.sessions.turns_total", "total_session_turns"),
];

/// The gauges (up-down counters), their phase field and unit (`s` for the one ending `_sec`).
pub const GAUGES: [(&str, &str, &str); 6] = [
    (
        "aiperf.timing.requests.in_flight",
        "in_flight_requests",
        "1",
    ),
    (
        "aiperf.timing.sessions.in_flight",
        "in_flight_sessions",
        "1",
    ),
    (
        "aiperf.timing.phase.timeout_triggered",
        "timeout_triggered",
        "1",
    ),
    (
        "aiperf.timing.phase.grace_timeout_triggered",
        "grace_period_timeout_triggered",
        "1",
    ),
    ("aiperf.timing.phase.was_cancelled", "was_cancelled", "1"),
    (
        "aiperf.timing.phase.elapsed_sec",
        "requests_elapsed_time",
        "s",
    ),
];

fn slot(p: Phase) -> usize {
    match p {
        Phase::Warmup => 0,
        Phase::Profiling => 1,
    }
}

/// One phase's progress at one moment (the fields of AIPerf's `CreditPhaseStats` the timing
/// strategy reads).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhaseStats {
    pub requests_sent: u64,
    pub requests_completed: u64,
    pub requests_cancelled: u64,
    pub request_errors: u64,
    pub sent_sessions: u64,
    pub completed_sessions: u64,
    pub cancelled_sessions: u64,
    pub total_session_turns: u64,
    pub timeout_triggered: bool,
    pub grace_timeout_triggered: bool,
    pub was_cancelled: bool,
    pub elapsed_sec: f64,
}

impl PhaseStats {
    fn counters(&self) -> [u64; 8] {
        [
            self.requests_sent,
            self.requests_completed,
            self.requests_cancelled,
            self.request_errors,
            self.sent_sessions,
            self.completed_sessions,
            self.cancelled_sessions,
            self.total_session_turns,
        ]
    }

    fn gauges(&self) -> [f64; 6] {
        let in_flight =
            |sent: u64, done: u64, cancelled: u64| sent as f64 - (done + cancelled) as f64;
        [
            in_flight(
                self.requests_sent,
                self.requests_completed,
                self.requests_cancelled,
            ),
            in_flight(
                self.sent_sessions,
                self.completed_sessions,
                self.cancelled_sessions,
            ),
            f64::from(u8::from(self.timeout_triggered)),
            f64::from(u8::from(self.grace_timeout_triggered)),
            f64::from(u8::from(self.was_cancelled)),
            self.elapsed_sec,
        ]
    }
}

/// One change to emit: a counter's rise or a gauge's change, by index into [`COUNTERS`] or
/// [`GAUGES`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Delta {
    Counter(usize, f64),
    Gauge(usize, f64),
}

/// The last value seen of each counter and gauge of each phase.
#[derive(Debug, Default)]
pub struct Deltas {
    counters: [[Option<u64>; 8]; 2],
    gauges: [[Option<f64>; 6]; 2],
}

impl Deltas {
    /// What a snapshot of `phase` changes, in AIPerf's order (the counters, then the gauges).
    pub fn of(&mut self, phase: Phase, s: &PhaseStats) -> Vec<Delta> {
        let i = slot(phase);
        let mut out = Vec::new();
        for (k, v) in s.counters().into_iter().enumerate() {
            let last = self.counters[i][k].replace(v);
            // A counter that fell is not emitted (AIPerf warns of a reset and skips it).
            let rise = v.saturating_sub(last.unwrap_or(0));
            if rise > 0 {
                out.push(Delta::Counter(k, rise as f64));
            }
        }
        for (k, v) in s.gauges().into_iter().enumerate() {
            let last = self.gauges[i][k].replace(v);
            let change = v - last.unwrap_or(0.0);
            if change.abs() >= 1e-9 {
                out.push(Delta::Gauge(k, change));
            }
        }
        out
    }
}

/// Where the phases' driver marks their start and end, read by the aggregator.
#[derive(Debug, Default)]
pub struct PhaseBoard {
    phases: [Mark; 2],
    /// Bumped at each start and end: the aggregator takes a snapshot when it moves.
    generation: AtomicU64,
}

/// The index counters a phase's workers take requests and sessions from.
type Taken = (Arc<AtomicU64>, Arc<AtomicU64>);

/// What a phase may send: its (local) request and session limits, and when its duration ends
/// (wall ns); `u64::MAX` for none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub requests: u64,
    pub sessions: u64,
    pub issue_end_wall_ns: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            requests: u64::MAX,
            sessions: u64::MAX,
            issue_end_wall_ns: u64::MAX,
        }
    }
}

#[derive(Debug, Default)]
struct Mark {
    start_wall_ns: AtomicU64,
    limits: Mutex<Limits>,
    end_wall_ns: AtomicU64,
    final_sent: AtomicU64,
    timeout: AtomicBool,
    grace: AtomicBool,
    cancelled: AtomicBool,
    taken: Mutex<Option<Taken>>,
}

/// How a phase ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseEnd {
    /// Requests the workers sent (each makes exactly one record).
    pub sent: u64,
    /// The duration ran out while the phase still had requests to send.
    pub timeout: bool,
    /// The grace period after the duration ran out, with requests still in flight.
    pub grace: bool,
    /// The run was stopped (a signal, the error budget) during the phase.
    pub cancelled: bool,
}

impl PhaseBoard {
    /// The phase started; `requests` and `sessions` are the index counters its workers take
    /// from (each take below its limit is one request or session about to be sent).
    pub fn start(&self, phase: Phase, (requests, sessions): Taken, limits: Limits) {
        let m = &self.phases[slot(phase)];
        if let Ok(mut t) = m.taken.lock() {
            *t = Some((requests, sessions));
        }
        if let Ok(mut l) = m.limits.lock() {
            *l = limits;
        }
        // A phase of the same kind that runs again (a later profiling phase) is running anew.
        m.end_wall_ns.store(0, Ordering::Release);
        m.start_wall_ns.store(
            ringperf_wire::clock::wall_now_ns().max(1),
            Ordering::Release,
        );
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// The phase ended: every worker reported done.
    pub fn end(&self, phase: Phase, end: PhaseEnd) {
        let m = &self.phases[slot(phase)];
        m.final_sent.store(end.sent, Ordering::Relaxed);
        m.timeout.store(end.timeout, Ordering::Relaxed);
        m.grace.store(end.grace, Ordering::Relaxed);
        m.cancelled.store(end.cancelled, Ordering::Relaxed);
        m.end_wall_ns.store(
            ringperf_wire::clock::wall_now_ns().max(1),
            Ordering::Release,
        );
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// The phase started and ended (every worker reported done).
    pub fn ended(&self, phase: Phase) -> bool {
        let m = &self.phases[slot(phase)];
        m.start_wall_ns.load(Ordering::Acquire) != 0 && m.end_wall_ns.load(Ordering::Acquire) != 0
    }

    /// When the phase started and ended (wall ns; 0 for not yet).
    pub fn times(&self, phase: Phase) -> (u64, u64) {
        let m = &self.phases[slot(phase)];
        (
            m.start_wall_ns.load(Ordering::Acquire),
            m.end_wall_ns.load(Ordering::Acquire),
        )
    }

    /// Moves at each start and end.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The requests and sessions taken so far by a running phase, each at most its limit.
    fn taken(&self, phase: Phase) -> (u64, u64) {
        let m = &self.phases[slot(phase)];
        let l = m.limits.lock().map(|l| *l).unwrap_or_default();
        let (r, s) = m
            .taken
            .lock()
            .ok()
            .and_then(|t| {
                t.as_ref()
                    .map(|(r, s)| (r.load(Ordering::Relaxed), s.load(Ordering::Relaxed)))
            })
            .unwrap_or((0, 0));
        (r.min(l.requests), s.min(l.sessions))
    }

    /// A running phase has sent all it will: its requests or sessions are all taken, or its
    /// duration is over (AIPerf's "sending complete").
    pub fn sending_complete(&self, phase: Phase, now_wall_ns: u64) -> bool {
        let m = &self.phases[slot(phase)];
        if m.start_wall_ns.load(Ordering::Acquire) == 0
            || m.end_wall_ns.load(Ordering::Acquire) != 0
        {
            return false;
        }
        let l = m.limits.lock().map(|l| *l).unwrap_or_default();
        let (r, s) = self.taken(phase);
        r >= l.requests || s >= l.sessions || now_wall_ns >= l.issue_end_wall_ns
    }
}

/// The aggregator's count of one phase's answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseCount {
    pub completed: u64,
    pub cancelled: u64,
    pub errors: u64,
    /// First turns seen (sessions that sent), and the turns those sessions have.
    pub sessions: u64,
    pub session_turns: u64,
    pub sessions_completed: u64,
    pub sessions_cancelled: u64,
}

/// The aggregator's counts of both phases, and the snapshots made from them.
#[derive(Debug, Default)]
pub struct PhaseTally {
    counts: [PhaseCount; 2],
}

impl PhaseTally {
    /// One answer of `phase`: turn `turn` of a conversation of `turns` turns.
    pub fn record(&mut self, phase: Phase, turn: u32, turns: u32, cancelled: bool, error: bool) {
        let c = &mut self.counts[slot(phase)];
        if cancelled {
            c.cancelled += 1;
        } else {
            c.completed += 1;
            c.errors += u64::from(error);
        }
        if turn == 0 {
            c.sessions += 1;
            c.session_turns += u64::from(turns.max(1));
        }
        if turn + 1 >= turns {
            if cancelled {
                c.sessions_cancelled += 1;
            } else {
                c.sessions_completed += 1;
            }
        }
    }

    pub fn count(&self, phase: Phase) -> PhaseCount {
        self.counts[slot(phase)]
    }

    /// The snapshot of `phase` now (`None` before it started). Before the phase ends, its sent
    /// counts come from the index counters (never below what has answered); once it ended,
    /// from what the workers reported sending.
    pub fn snapshot(
        &self,
        board: &PhaseBoard,
        phase: Phase,
        now_wall_ns: u64,
    ) -> Option<PhaseStats> {
        let m = &board.phases[slot(phase)];
        let start = m.start_wall_ns.load(Ordering::Acquire);
        if start == 0 {
            return None;
        }
        let end = m.end_wall_ns.load(Ordering::Acquire);
        let c = self.count(phase);
        let answered = c.completed + c.cancelled;
        let (sent, sessions) = if end != 0 {
            (
                m.final_sent.load(Ordering::Relaxed).max(answered),
                c.sessions,
            )
        } else {
            let (r, s) = board.taken(phase);
            (r.max(answered), s.max(c.sessions))
        };
        let until = if end != 0 { end } else { now_wall_ns };
        Some(PhaseStats {
            requests_sent: sent,
            requests_completed: c.completed,
            requests_cancelled: c.cancelled,
            request_errors: c.errors,
            sent_sessions: sessions,
            completed_sessions: c.sessions_completed,
            cancelled_sessions: c.sessions_cancelled,
            total_session_turns: c.session_turns,
            timeout_triggered: end != 0 && m.timeout.load(Ordering::Relaxed),
            grace_timeout_triggered: end != 0 && m.grace.load(Ordering::Relaxed),
            was_cancelled: end != 0 && m.cancelled.load(Ordering::Relaxed),
            elapsed_sec: until.saturating_sub(start) as f64 / 1e9,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_emit_their_rise_and_gauges_their_change_as_aiperf_does() {
        let mut d = Deltas::default();
        let mut s = PhaseStats {
            requests_sent: 3,
            ..PhaseStats::default()
        };
        // First snapshot: every non-zero value whole; zero values (and zero gauges) nothing.
        assert_eq!(
            d.of(Phase::Profiling, &s),
            [Delta::Counter(0, 3.0), Delta::Gauge(0, 3.0)]
        );
        s.requests_completed = 2;
        s.request_errors = 1;
        s.elapsed_sec = 0.5;
        assert_eq!(
            d.of(Phase::Profiling, &s),
            [
                Delta::Counter(1, 2.0),
                Delta::Counter(3, 1.0),
                Delta::Gauge(0, -2.0),
                Delta::Gauge(5, 0.5)
            ]
        );
        // No change: nothing. A counter that falls: skipped, and its next rise counts from
        // the fallen value.
        assert_eq!(d.of(Phase::Profiling, &s), []);
        s.requests_sent = 1;
        s.requests_completed = 1;
        let got = d.of(Phase::Profiling, &s);
        assert!(
            !got.iter().any(|x| matches!(x, Delta::Counter(..))),
            "{got:?}"
        );
        // Each phase keeps its own last values.
        assert_eq!(
            d.of(
                Phase::Warmup,
                &PhaseStats {
                    requests_sent: 1,
                    ..PhaseStats::default()
                }
            ),
            [Delta::Counter(0, 1.0), Delta::Gauge(0, 1.0)]
        );
    }

    #[test]
    fn a_snapshot_reads_the_board_and_the_answers() {
        let board = PhaseBoard::default();
        let mut t = PhaseTally::default();
        assert_eq!(t.snapshot(&board, Phase::Warmup, 0), None);
        let (r, s) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        board.start(
            Phase::Profiling,
            (r.clone(), s.clone()),
            Limits {
                requests: 4,
                ..Limits::default()
            },
        );
        assert!(!board.sending_complete(Phase::Profiling, 0));
        // Two-turn sessions: 4 taken (and 2 more that failed to, past the limit), 3 answered
        // (one an error, one cancelled).
        r.store(6, Ordering::Relaxed);
        s.store(2, Ordering::Relaxed);
        t.record(Phase::Profiling, 0, 2, false, false);
        t.record(Phase::Profiling, 1, 2, false, true);
        t.record(Phase::Profiling, 0, 2, true, false);
        let now = ringperf_wire::clock::wall_now_ns();
        let live = t.snapshot(&board, Phase::Profiling, now).unwrap();
        assert_eq!(
            (
                live.requests_sent,
                live.requests_completed,
                live.requests_cancelled
            ),
            (4, 2, 1)
        );
        assert_eq!(live.request_errors, 1);
        assert_eq!((live.sent_sessions, live.completed_sessions), (2, 1));
        assert_eq!((live.total_session_turns, live.cancelled_sessions), (4, 0));
        assert_eq!(live.gauges()[0], 1.0);
        assert!(board.sending_complete(Phase::Profiling, now));
        board.end(
            Phase::Profiling,
            PhaseEnd {
                sent: 3,
                timeout: true,
                ..PhaseEnd::default()
            },
        );
        assert!(!board.sending_complete(Phase::Profiling, now));
        let last = t.snapshot(&board, Phase::Profiling, u64::MAX).unwrap();
        assert_eq!(last.requests_sent, 3);
        assert_eq!(last.gauges()[0], 0.0);
        assert!(last.timeout_triggered && !last.was_cancelled);
        // An ended phase's elapsed time stops at its end.
        assert!(last.elapsed_sec < 60.0);
    }
}
