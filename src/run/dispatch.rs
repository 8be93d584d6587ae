//! The open-loop feeder: generates intended send times from one arrival process for the whole
//! run and deals the credits round-robin into each worker's queue, a bounded distance ahead of
//! the clock. One process for all workers keeps gamma and Poisson arrivals exact (a gamma
//! process does not split into independent per-worker ones).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_queue::ArrayQueue;

use crate::config::Arrival;
use crate::record::{Credit, Phase};
use crate::schedule::{Arrivals, TemplatePicker, child_seed};

/// How far ahead of the clock credits are generated.
const LOOKAHEAD_NS: u64 = 50_000_000;
/// Credits a worker queue holds at most.
const QUEUE_CAPACITY: usize = 64 * 1024;

#[derive(Debug)]
pub struct Dispatcher {
    pub queues: Vec<Arc<ArrayQueue<Credit>>>,
    /// Set once every credit of the phase has been queued.
    pub fed: Arc<AtomicBool>,
    arrivals: Arrivals,
    picker: TemplatePicker,
    phase: Phase,
    start_ns: u64,
    next_index: u64,
    limit: u64,
    issue_deadline_ns: Option<u64>,
    /// A credit generated but not yet queued (its queue was full).
    pending: Option<Credit>,
}

impl Dispatcher {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        workers: usize,
        rate: f64,
        arrival: Arrival,
        seed: u64,
        phase: Phase,
        entries: usize,
        start_ns: u64,
        limit: u64,
        issue_deadline_ns: Option<u64>,
    ) -> Self {
        let name = format!("timing.{}.arrivals", phase.as_str());
        Self {
            queues: (0..workers.max(1))
                .map(|_| Arc::new(ArrayQueue::new(QUEUE_CAPACITY)))
                .collect(),
            fed: Arc::new(AtomicBool::new(false)),
            arrivals: Arrivals::new(rate, arrival, child_seed(seed, &name)),
            picker: TemplatePicker::new(entries, seed),
            phase,
            start_ns,
            next_index: 0,
            limit,
            issue_deadline_ns,
            pending: None,
        }
    }

    pub fn is_fed(&self) -> bool {
        self.fed.load(Ordering::Acquire)
    }

    /// Queues every credit meant to go before `now + LOOKAHEAD`. Marks the phase fed when the
    /// request count or the duration is exhausted, or when `stop` is set.
    pub fn feed(&mut self, now_ns: u64, stop: bool) {
        if self.is_fed() {
            return;
        }
        if stop {
            self.fed.store(true, Ordering::Release);
            return;
        }
        loop {
            let credit = match self.pending.take() {
                Some(c) => c,
                None => {
                    if self.next_index >= self.limit {
                        self.fed.store(true, Ordering::Release);
                        return;
                    }
                    let at = self.start_ns + self.arrivals.next_offset_ns();
                    if self.issue_deadline_ns.is_some_and(|d| at >= d) {
                        self.fed.store(true, Ordering::Release);
                        return;
                    }
                    let index = self.next_index;
                    self.next_index += 1;
                    Credit {
                        phase: self.phase,
                        index,
                        conversation: self.picker.pick(index),
                        turn: 0,
                        cancel_after_ns: None,
                        intended_ns: at,
                    }
                }
            };
            if credit.intended_ns > now_ns + LOOKAHEAD_NS {
                self.pending = Some(credit);
                return;
            }
            let q = &self.queues[(credit.index % self.queues.len() as u64) as usize];
            if let Err(c) = q.push(credit) {
                self.pending = Some(c);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deals_round_robin_with_lookahead_and_limit() {
        let mut d = Dispatcher::new(
            2,
            100.0,
            Arrival::Constant,
            1,
            Phase::Profiling,
            3,
            1_000,
            5,
            None,
        );
        d.feed(1_000, false);
        // 10 ms apart, 50 ms lookahead: indices 0..=5 fit, the limit of 5 stops at 4.
        assert!(d.is_fed());
        let a: Vec<Credit> = std::iter::from_fn(|| d.queues[0].pop()).collect();
        let b: Vec<Credit> = std::iter::from_fn(|| d.queues[1].pop()).collect();
        assert_eq!(a.iter().map(|c| c.index).collect::<Vec<_>>(), vec![0, 2, 4]);
        assert_eq!(b.iter().map(|c| c.index).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(a[1].intended_ns, 1_000 + 20_000_000);
    }

    #[test]
    fn stops_at_the_duration_and_waits_for_the_clock() {
        let mut d = Dispatcher::new(
            1,
            10.0,
            Arrival::Constant,
            1,
            Phase::Profiling,
            3,
            0,
            u64::MAX,
            Some(1_000_000_000),
        );
        d.feed(0, false);
        assert!(!d.is_fed());
        assert_eq!(d.queues[0].len(), 1); // 0 ms; 100 ms is beyond the lookahead
        d.feed(2_000_000_000, false);
        assert!(d.is_fed());
        assert_eq!(d.queues[0].len(), 10); // 0, 100, ..., 900 ms; 1 s is the deadline
    }
}
