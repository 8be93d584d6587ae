//! `--prefill-concurrency` (docs/timing.md): at most `limit` requests of a phase wait for a first
//! token at once, over every worker. A slot is taken before a request is written and given back
//! at its first content response (AIPerf's first token: the first SSE message with data, as the
//! endpoint parses it), or when the request ends without one.
//!
//! With `--prefill-concurrency-ramp-duration D` the limit grows as AIPerf's prefill ramp grows it
//! (a discrete linear ramp from 1, as the concurrency ramp): `k` slots from
//! `D · (k − 1) / (limit − 1)` after the phase start ([`ringperf_workload::schedule::concurrency_slot_start_ns`]).
//! A slot already held stays held; the limit only grows.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How long a request waits before looking for a free slot again.
const POLL: Duration = Duration::from_micros(100);

/// The shared limit of one phase.
#[derive(Debug)]
pub struct PrefillGate {
    /// The limit (an adaptive phase moves it: [`PrefillGate::set_limit`]).
    limit: AtomicUsize,
    held: AtomicUsize,
    /// A ramp: the phase start (run clock, ns) and the ramp's duration.
    ramp: Option<(u64, Duration)>,
}

impl PrefillGate {
    pub fn new(limit: u64) -> Self {
        Self {
            limit: AtomicUsize::new(usize::try_from(limit.max(1)).unwrap_or(usize::MAX)),
            held: AtomicUsize::new(0),
            ramp: None,
        }
    }

    /// The limit ramps from 1 over `duration` from `start_ns` (the run's clock).
    #[must_use]
    pub fn with_ramp(mut self, start_ns: u64, duration: Duration) -> Self {
        self.ramp = Some((start_ns, duration));
        self
    }

    /// Sets the limit (an adaptive phase's controller; slots already held stay held).
    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit.max(1), Ordering::Release);
    }

    /// The limit in force at `now_ns`.
    pub fn limit_at(&self, now_ns: u64) -> usize {
        let limit = self.limit.load(Ordering::Acquire);
        let Some((start_ns, d)) = self.ramp else {
            return limit;
        };
        let slots = limit as u64;
        let elapsed = now_ns.saturating_sub(start_ns);
        // Slots start in order: count those started (a binary search, the limit may be large).
        let (mut lo, mut hi) = (1u64, slots);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if ringperf_workload::schedule::concurrency_slot_start_ns(mid - 1, slots, d) <= elapsed
            {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        usize::try_from(lo).unwrap_or(usize::MAX)
    }

    /// Takes a slot if one is free at `now_ns`.
    pub fn try_acquire(&self, now_ns: u64) -> bool {
        let limit = self.limit_at(now_ns);
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .is_ok()
    }

    /// Takes a slot, waiting for one (`now` reads the run's clock); `false` (no slot taken) when
    /// `give_up` says so first.
    pub async fn acquire(&self, now: impl Fn() -> u64, give_up: impl Fn() -> bool) -> bool {
        loop {
            if self.try_acquire(now()) {
                return true;
            }
            if give_up() {
                return false;
            }
            monoio::time::sleep(POLL).await;
        }
    }

    /// Gives a slot back.
    pub fn release(&self) {
        let _ = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// Slots taken now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_bounded_and_given_back() {
        let g = PrefillGate::new(2);
        assert!(g.try_acquire(0) && g.try_acquire(0));
        assert!(!g.try_acquire(0), "a third slot of two");
        g.release();
        assert_eq!(g.held(), 1);
        assert!(g.try_acquire(0));
        g.release();
        g.release();
        g.release(); // never below zero
        assert_eq!(g.held(), 0);
    }

    #[test]
    fn ramp_grows_the_limit_from_one_as_aiperf_steps_it() {
        // AIPerf's stepped linear ramp 1 → 5 over 2 s: limit k from 2·(k−1)/4 s, i.e. 2 at
        // 0.5 s, 3 at 1 s, 4 at 1.5 s, 5 at 2 s; before the start, 1.
        let start = 10_000_000_000;
        let g = PrefillGate::new(5).with_ramp(start, Duration::from_secs(2));
        let at = |ms: u64| g.limit_at(start + ms * 1_000_000);
        assert_eq!(g.limit_at(0), 1);
        for (ms, want) in [
            (0, 1),
            (499, 1),
            (500, 2),
            (999, 2),
            (1000, 3),
            (1500, 4),
            (1999, 4),
        ] {
            assert_eq!(at(ms), want, "at {ms} ms");
        }
        assert_eq!(at(2000), 5);
        assert_eq!(at(60_000), 5);
        // One slot at the start, a second once the limit is 2.
        assert!(g.try_acquire(start));
        assert!(!g.try_acquire(start + 499_000_000));
        assert!(g.try_acquire(start + 500_000_000));
        assert!(!g.try_acquire(start + 500_000_000));
        // A limit of 1 has nothing to ramp.
        let one = PrefillGate::new(1).with_ramp(start, Duration::from_secs(2));
        assert_eq!(one.limit_at(start + 5_000_000_000), 1);
    }
}
