//! The mock's capacity ([`MockConfig::capacity`](crate::mock::MockConfig::capacity)): at most
//! `N` completion requests in service at once, the rest waiting first come, first served, as a
//! server with `N` batch slots does. What makes a mock whose throughput saturates at a known
//! load, so a search for "the most load under an SLA" has an answer known in advance.
//!
//! The model is planned, not observed: a request's service time is known when it arrives (its
//! TTFT plus one ITL per later token event), so on arrival it takes the slot that frees first
//! and starts when that slot frees (or at once). The slot is then busy until the planned end of
//! its service. Slots are never handed back early (a client that goes away mid-stream still
//! holds its slot to the planned end, as a server that finishes the sequence anyway), and the
//! real end is later than the planned one only by the timer's wake-up lag, so with a fixed
//! service time `S` and a closed loop of `C > N` clients each request waits
//! `(C - N) / N × S` in steady state (one `S` at `C = 2N`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// The instants (raw `CLOCK_MONOTONIC` ns) at which each of the `N` slots is next free.
#[derive(Debug)]
pub(crate) struct Slots {
    free_at: Mutex<BinaryHeap<Reverse<u64>>>,
}

impl Slots {
    /// `n` slots, all free now (`n` at least 1).
    pub(crate) fn new(n: u32) -> Self {
        let n = n.max(1) as usize;
        Self {
            free_at: Mutex::new(std::iter::repeat_n(Reverse(0), n).collect()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BinaryHeap<Reverse<u64>>> {
        // The heap is changed by one pop and one push under the lock; a panic between them cannot
        // happen (neither allocates past the capacity made at start), so a poisoned lock is sound.
        self.free_at.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a request that arrived at `arrival_ns` and is served for `service`: returns how
    /// long it waits for a slot (ns), and keeps that slot busy until its service ends.
    pub(crate) fn admit(&self, arrival_ns: u64, service: Duration) -> u64 {
        let service_ns = u64::try_from(service.as_nanos()).unwrap_or(u64::MAX);
        let mut heap = self.lock();
        let free = heap.pop().map_or(0, |Reverse(t)| t);
        let start = free.max(arrival_ns);
        heap.push(Reverse(start.saturating_add(service_ns)));
        start - arrival_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn requests_within_capacity_never_wait() {
        let s = Slots::new(3);
        let svc = Duration::from_millis(10);
        assert_eq!(
            [0, 1, 2].map(|i| s.admit(100 * MS + i * MS, svc)),
            [0, 0, 0]
        );
        // A slot freed (at 110 ms) before the next arrival: no wait either.
        assert_eq!(s.admit(111 * MS, svc), 0);
    }

    #[test]
    fn the_queue_is_first_come_first_served_over_the_earliest_free_slot() {
        // Two slots, service 10 ms, five requests all at t = 0: they start at 0, 0, 10, 10, 20.
        let s = Slots::new(2);
        let svc = Duration::from_millis(10);
        let waits: Vec<u64> = (0..5).map(|_| s.admit(0, svc)).collect();
        assert_eq!(waits, [0, 0, 10 * MS, 10 * MS, 20 * MS]);
        // The slots are now free at 20 (the 4th's) and 30 (the 5th's): one arriving at 15 ms
        // waits 5 ms, the next at 15 ms waits for the other, 15 ms.
        assert_eq!(s.admit(15 * MS, svc), 5 * MS);
        assert_eq!(s.admit(15 * MS, svc), 15 * MS);
    }

    #[test]
    fn zero_slots_is_read_as_one() {
        let s = Slots::new(0);
        let svc = Duration::from_millis(4);
        assert_eq!([s.admit(0, svc), s.admit(0, svc)], [0, 4 * MS]);
    }
}
