//! The live controls of an adaptive phase (AIPerf 0.13's `adaptive_scale`, docs/timing.md):
//! the session limit the controller moves, over every worker, and the stop it gives when it
//! ends.
//!
//! A closed-loop slot takes a permit before it starts a session and gives it back when the
//! session ends; so does an open loop's tick that starts a session (AIPerf's session slot of a
//! rate phase, [`SessionSlots`]). Raising the limit lets waiting slots start at once; lowering it cancels
//! nothing: sessions in flight run to their end and no new one starts until fewer than the
//! limit are running (AIPerf's debt). Closing the gate stops the phase's sending: no new
//! session or turn starts, requests in flight end normally.
//!
//! A user-centric phase moving its users keeps its count of live users here too: the feeder
//! counts a user when it starts one, the worker running it when its last turn ends; a user's
//! turn gap (`users / rate`) moves with the target, and every worker reads it for the turns it
//! schedules next.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// How long a slot first waits before looking for a free permit again; each look that finds
/// none doubles it, up to [`POLL_MAX`]. A slot whose session ended takes its permit back at
/// once (it does not wait), so at a steady limit the running slots keep their places and only
/// a raised limit waits for a look: slots beyond the limit cost a wake-up each `POLL_MAX`.
const POLL: Duration = Duration::from_millis(1);
const POLL_MAX: Duration = Duration::from_millis(25);

/// A phase's session slots over every worker: a session takes one before its first turn goes
/// and gives it back when its last turn is answered (AIPerf's session concurrency of a rate
/// phase: its later turns need no slot). Taking one never waits: a rate tick that finds none
/// free goes unused.
#[derive(Debug)]
pub struct SessionSlots {
    limit: AtomicUsize,
    held: AtomicUsize,
}

impl SessionSlots {
    /// `limit` slots (at least one), none taken.
    pub fn new(limit: usize) -> Self {
        Self {
            limit: AtomicUsize::new(limit.max(1)),
            held: AtomicUsize::new(0),
        }
    }

    /// Takes a slot if one is free now.
    pub fn try_acquire(&self) -> bool {
        let limit = self.limit();
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .is_ok()
    }

    /// Gives a slot back (never below none taken).
    pub fn release(&self) {
        let _ = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// Sets the limit (at least one); lowering it takes no slot back.
    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit.max(1), Ordering::Release);
    }

    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Acquire)
    }

    /// Slots taken.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

/// The shared controls of one adaptive phase.
#[derive(Debug)]
pub struct AdaptiveGate {
    /// The session limit the controller moves, and the sessions holding it.
    slots: Arc<SessionSlots>,
    closed: AtomicBool,
    /// The phase's slots are gated (the controller moves the concurrency).
    gated: AtomicBool,
    /// Users started and not yet ended (a user-centric phase moving its users).
    users: AtomicUsize,
    /// A user's turn gap in ns while the controller moves the users (0: the phase's own).
    turn_gap_ns: AtomicU64,
}

impl AdaptiveGate {
    /// A gate at `limit` sessions; `gated`: the slots take permits.
    pub fn new(limit: usize, gated: bool) -> Self {
        Self {
            slots: Arc::new(SessionSlots::new(limit)),
            closed: AtomicBool::new(false),
            gated: AtomicBool::new(gated),
            users: AtomicUsize::new(0),
            turn_gap_ns: AtomicU64::new(0),
        }
    }

    /// `n` users started (the feeder's count, before their first turn goes).
    pub fn users_started(&self, n: usize) {
        self.users.fetch_add(n, Ordering::AcqRel);
    }

    /// A user's last turn ended (or its session could not start).
    pub fn user_ended(&self) {
        let _ = self
            .users
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// Users started and not yet ended.
    pub fn active_users(&self) -> usize {
        self.users.load(Ordering::Acquire)
    }

    /// Sets the turn gap every user's next turn is scheduled with.
    pub fn set_turn_gap_ns(&self, ns: u64) {
        self.turn_gap_ns.store(ns.max(1), Ordering::Release);
    }

    /// The turn gap the controller set, if it moves the users.
    pub fn turn_gap_ns(&self) -> Option<u64> {
        Some(self.turn_gap_ns.load(Ordering::Acquire)).filter(|&n| n > 0)
    }

    /// Sets the session limit.
    pub fn set_limit(&self, limit: usize) {
        self.slots.set_limit(limit);
    }

    pub fn limit(&self) -> usize {
        self.slots.limit()
    }

    /// Sessions running under the gate.
    pub fn held(&self) -> usize {
        self.slots.held()
    }

    /// The session slots a gated phase's sessions take (`None`: the phase is not gated).
    pub fn slots(&self) -> Option<&Arc<SessionSlots>> {
        self.gated().then_some(&self.slots)
    }

    /// The controller ended: the phase sends nothing more.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The phase's sessions take permits.
    pub fn gated(&self) -> bool {
        self.gated.load(Ordering::Acquire)
    }

    /// Takes a permit if one is free now.
    pub fn try_acquire(&self) -> bool {
        self.slots.try_acquire()
    }

    /// Takes a permit for a session, waiting for one; `false` (none taken) when the gate
    /// closes or `give_up` says so first. An ungated phase takes none and never waits.
    pub async fn acquire(&self, give_up: impl Fn() -> bool) -> bool {
        if !self.gated.load(Ordering::Acquire) {
            return !self.closed();
        }
        let mut wait = POLL;
        loop {
            if self.closed() || give_up() {
                return false;
            }
            if self.try_acquire() {
                return true;
            }
            monoio::time::sleep(wait).await;
            wait = (wait * 2).min(POLL_MAX);
        }
    }

    /// Gives a session's permit back.
    pub fn release(&self) {
        if self.gated.load(Ordering::Acquire) {
            self.slots.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowering_the_limit_cancels_nothing_and_blocks_new_sessions() {
        let g = AdaptiveGate::new(2, true);
        assert!(g.try_acquire() && g.try_acquire());
        assert!(!g.try_acquire());
        g.set_limit(1);
        g.release();
        assert_eq!(g.held(), 1);
        assert!(!g.try_acquire(), "one still running under a limit of one");
        g.release();
        assert!(g.try_acquire());
        g.set_limit(4);
        assert!(g.try_acquire() && g.try_acquire() && g.try_acquire());
        assert!(!g.try_acquire());
        assert!(!g.closed());
        g.close();
        assert!(g.closed());
    }

    #[test]
    fn session_slots_never_wait_and_never_go_below_none() {
        let s = SessionSlots::new(0);
        assert_eq!(s.limit(), 1, "at least one slot");
        assert!(s.try_acquire());
        assert!(!s.try_acquire(), "a second of one");
        s.release();
        s.release();
        assert_eq!(s.held(), 0);
        s.set_limit(2);
        assert!(s.try_acquire() && s.try_acquire() && !s.try_acquire());
    }

    #[test]
    fn a_gated_phase_shares_its_slots_and_an_ungated_one_has_none() {
        let g = AdaptiveGate::new(2, true);
        let slots = g.slots().expect("gated").clone();
        assert!(slots.try_acquire());
        assert_eq!(g.held(), 1, "one count for the gate and its slots");
        g.set_limit(1);
        assert!(!slots.try_acquire());
        assert!(AdaptiveGate::new(2, false).slots().is_none());
    }

    #[test]
    fn users_are_counted_from_their_start_to_their_end() {
        let g = AdaptiveGate::new(2, false);
        assert_eq!((g.active_users(), g.turn_gap_ns()), (0, None));
        g.users_started(3);
        g.user_ended();
        assert_eq!(g.active_users(), 2);
        g.user_ended();
        g.user_ended();
        g.user_ended();
        assert_eq!(g.active_users(), 0, "never below zero");
        g.set_turn_gap_ns(400_000_000);
        assert_eq!(g.turn_gap_ns(), Some(400_000_000));
        assert!(
            g.try_acquire(),
            "an ungated gate's permits are not the users'"
        );
    }
}
