//! The bounded lock-free queue from one worker to the aggregator.
//!
//! One ring per worker (single producer, single consumer). A full ring is back-pressure: the
//! producer is told so, waits, and counts the stall; a record is never dropped. The ring is
//! bounded both in records and in bytes (the response bodies it holds), so a burst of large
//! responses cannot pile up unbounded memory while the aggregator catches up; a single record
//! larger than the byte budget still passes when the ring is empty.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crossbeam_queue::ArrayQueue;

use super::RawRecord;

/// Shared state of one ring.
#[derive(Debug)]
struct Shared {
    queue: ArrayQueue<RawRecord>,
    /// Times the producer found the ring full.
    stalls: AtomicU64,
    /// The producer is gone: once the queue is empty, nothing more will come.
    closed: AtomicBool,
    /// Bytes held by the records in the queue (bodies and event lists).
    bytes: AtomicU64,
    /// Most bytes the queue may hold.
    max_bytes: u64,
}

/// Heap bytes a record holds.
fn weight(rec: &RawRecord) -> u64 {
    (rec.body.capacity()
        + rec.text.capacity()
        + rec.response_head.capacity()
        + rec.events.capacity() * std::mem::size_of::<super::Event>()) as u64
}

/// Producer end, owned by a worker thread.
#[derive(Debug)]
pub struct Producer {
    shared: Arc<Shared>,
}

/// Consumer end, owned by the aggregator.
#[derive(Debug)]
pub struct Consumer {
    shared: Arc<Shared>,
}

/// Creates a ring holding at most `capacity` records (and no byte limit).
pub fn ring(capacity: usize) -> (Producer, Consumer) {
    ring_bounded(capacity, u64::MAX)
}

/// Creates a ring holding at most `capacity` records and `max_bytes` of record bodies.
pub fn ring_bounded(capacity: usize, max_bytes: u64) -> (Producer, Consumer) {
    let shared = Arc::new(Shared {
        queue: ArrayQueue::new(capacity.max(1)),
        stalls: AtomicU64::new(0),
        closed: AtomicBool::new(false),
        bytes: AtomicU64::new(0),
        max_bytes,
    });
    (
        Producer {
            shared: shared.clone(),
        },
        Consumer { shared },
    )
}

impl Producer {
    /// Pushes a record, or gives it back when the ring is full (and counts the stall).
    // Handing the record back by value is the point: the caller retries with it, and boxing it
    // would cost an allocation per request.
    #[allow(clippy::result_large_err)]
    pub fn try_push(&self, rec: RawRecord) -> Result<(), RawRecord> {
        let w = weight(&rec);
        let held = self.shared.bytes.load(Ordering::Acquire);
        if held > 0 && held.saturating_add(w) > self.shared.max_bytes {
            self.shared.stalls.fetch_add(1, Ordering::Relaxed);
            return Err(rec);
        }
        // Count the bytes before the record becomes visible, so the consumer never subtracts
        // more than was added.
        self.shared.bytes.fetch_add(w, Ordering::AcqRel);
        self.shared.queue.push(rec).inspect_err(|_| {
            self.shared.bytes.fetch_sub(w, Ordering::AcqRel);
            self.shared.stalls.fetch_add(1, Ordering::Relaxed);
        })
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
    }
}

impl Consumer {
    pub fn pop(&self) -> Option<RawRecord> {
        let rec = self.shared.queue.pop()?;
        self.shared.bytes.fetch_sub(weight(&rec), Ordering::AcqRel);
        Some(rec)
    }

    /// The producer is gone and every record has been taken.
    pub fn is_finished(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire) && self.shared.queue.is_empty()
    }

    /// Times the producer found this ring full.
    pub fn stalls(&self) -> u64 {
        self.shared.stalls.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty record with request index `i`.
    fn rec(i: u64) -> RawRecord {
        let mut r = crate::record::testing::record(Vec::new(), Vec::new(), false);
        r.credit.index = i;
        r
    }

    #[test]
    fn full_ring_gives_back_and_counts() {
        let (p, c) = ring(2);
        p.try_push(rec(0)).unwrap();
        p.try_push(rec(1)).unwrap();
        let back = p.try_push(rec(2)).unwrap_err();
        assert_eq!(back.credit.index, 2);
        assert_eq!(c.stalls(), 1);
        assert_eq!(c.pop().unwrap().credit.index, 0);
        p.try_push(back).unwrap();
        assert!(!c.is_finished());
        drop(p);
        assert_eq!(c.pop().unwrap().credit.index, 1);
        assert!(!c.is_finished());
        assert_eq!(c.pop().unwrap().credit.index, 2);
        assert!(c.is_finished());
    }

    #[test]
    fn byte_budget_is_back_pressure_but_never_blocks_a_lone_record() {
        let (p, c) = ring_bounded(100, 1000);
        let big = |i| {
            let mut r = rec(i);
            r.body = Vec::with_capacity(600);
            r
        };
        // A record over the budget passes when the ring is empty.
        let mut huge = rec(9);
        huge.body = Vec::with_capacity(5000);
        p.try_push(huge).unwrap();
        assert!(p.try_push(big(0)).is_err(), "5000 held: no room");
        assert_eq!(c.pop().unwrap().credit.index, 9);
        p.try_push(big(0)).unwrap();
        let back = p.try_push(big(1)).unwrap_err();
        assert_eq!(c.stalls(), 2);
        assert_eq!(c.pop().unwrap().credit.index, 0);
        p.try_push(back).unwrap();
        assert_eq!(c.pop().unwrap().credit.index, 1);
        assert!(c.pop().is_none());
    }

    #[test]
    fn order_is_kept_across_threads() {
        let (p, c) = ring(8);
        let t = std::thread::spawn(move || {
            for i in 0..10_000 {
                let mut r = rec(i);
                loop {
                    match p.try_push(r) {
                        Ok(()) => break,
                        Err(back) => {
                            r = back;
                            std::thread::yield_now();
                        }
                    }
                }
            }
        });
        let mut next = 0;
        while !c.is_finished() {
            if let Some(r) = c.pop() {
                assert_eq!(r.credit.index, next);
                next += 1;
            }
        }
        t.join().unwrap();
        assert_eq!(next, 10_000);
    }
}
