//! `--prefill-concurrency` (docs/timing.md): at most `limit` requests of a phase wait for a first
//! token at once, over every worker. A slot is taken before a request is written and given back
//! at its first content response (AIPerf's first token: the first SSE message with data, as the
//! endpoint parses it), or when the request ends without one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How long a request waits before looking for a free slot again.
const POLL: Duration = Duration::from_micros(100);

/// The shared limit of one phase.
#[derive(Debug)]
pub struct PrefillGate {
    limit: usize,
    held: AtomicUsize,
}

impl PrefillGate {
    pub fn new(limit: u64) -> Self {
        Self {
            limit: usize::try_from(limit.max(1)).unwrap_or(usize::MAX),
            held: AtomicUsize::new(0),
        }
    }

    /// Takes a slot if one is free.
    pub fn try_acquire(&self) -> bool {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .is_ok()
    }

    /// Takes a slot, waiting for one; `false` (no slot taken) when `give_up` says so first.
    pub async fn acquire(&self, give_up: impl Fn() -> bool) -> bool {
        loop {
            if self.try_acquire() {
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
        assert!(g.try_acquire() && g.try_acquire());
        assert!(!g.try_acquire(), "a third slot of two");
        g.release();
        assert_eq!(g.held(), 1);
        assert!(g.try_acquire());
        g.release();
        g.release();
        g.release(); // never below zero
        assert_eq!(g.held(), 0);
    }
}
