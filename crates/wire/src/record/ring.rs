//! The bounded lock-free queue from one worker to the aggregator.
//!
//! One ring per worker (single producer, single consumer), of boxed records: a slot is a
//! pointer, so a ring of 16,384 slots is 256 KiB, not the 8.5 MB of 16,384 records held in
//! place, every one of whose pages the queue's set-up writes (perf/README, "Seventh look"); the
//! worker's record is boxed already and the box goes through as it is. A full ring is
//! back-pressure: the
//! producer is told so, waits, and counts the stall; a record is never dropped. The ring is
//! bounded both in records and in bytes (the response bodies it holds), so a burst of large
//! responses cannot pile up unbounded memory while the aggregator catches up; a single record
//! larger than the byte budget still passes when the ring is empty.
//!
//! The rings of a run may share a [`Doorbell`]: the consumer, finding every ring empty, parks
//! its thread, and the first push after that unparks it. A producer pays the wake only on that
//! edge (the consumer asleep); otherwise a push costs one fence and one load more.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;

use super::RawRecord;

/// Shared state of one ring.
#[derive(Debug)]
struct Shared {
    queue: ArrayQueue<Box<RawRecord>>,
    /// Times the producer found the ring full.
    stalls: AtomicU64,
    /// The producer is gone: once the queue is empty, nothing more will come.
    closed: AtomicBool,
    /// Bytes held by the records in the queue (bodies and event lists).
    bytes: AtomicU64,
    /// Most bytes the queue may hold.
    max_bytes: u64,
    /// Rung after every push and when the producer goes.
    bell: Option<Arc<Doorbell>>,
}

/// What wakes a consumer thread parked until one of its rings gets a record or loses its
/// producer.
#[derive(Debug, Default)]
pub struct Doorbell {
    /// The consumer is parked (or about to park) and wants a wake.
    asleep: AtomicBool,
    /// The consumer's thread, known from its first sleep on.
    sleeper: OnceLock<Thread>,
    /// Times the consumer woke from a sleep (a ring, a timeout, or a spurious unpark).
    wakes: AtomicU64,
}

/// How [`Doorbell::sleep_unless`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woke {
    /// There was news already: no sleep.
    Ready,
    /// A producer rang.
    Rung,
    /// The timeout passed first.
    TimedOut,
}

impl Doorbell {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Parks the calling thread (always the same one) until a producer rings or `timeout`
    /// passes, unless `ready()` is already true. `ready` must look at everything the producers
    /// publish before they ring (their records, their going).
    pub fn sleep_unless(&self, timeout: Option<Duration>, ready: impl Fn() -> bool) -> Woke {
        let me = self.sleeper.get_or_init(std::thread::current);
        debug_assert_eq!(me.id(), std::thread::current().id(), "one consumer thread");
        self.asleep.store(true, Ordering::SeqCst);
        // Pairs with the fence in `ring`: either the producer sees `asleep`, or this thread sees
        // what the producer published before ringing.
        fence(Ordering::SeqCst);
        if ready() {
            self.asleep.store(false, Ordering::Relaxed);
            return Woke::Ready;
        }
        let until = timeout.map(|t| Instant::now() + t);
        let mut woke = Woke::Rung;
        while self.asleep.load(Ordering::Acquire) {
            match until {
                None => std::thread::park(),
                Some(u) => {
                    let now = Instant::now();
                    if now >= u {
                        woke = Woke::TimedOut;
                        break;
                    }
                    std::thread::park_timeout(u - now);
                    // Past the deadline: the timeout ended this park, whether or not a ring
                    // came meanwhile without its unpark.
                    if Instant::now() >= u {
                        woke = Woke::TimedOut;
                        break;
                    }
                }
            }
        }
        self.asleep.store(false, Ordering::Relaxed);
        self.wakes.fetch_add(1, Ordering::Relaxed);
        woke
    }

    /// Wakes the consumer if it sleeps (the wake is paid only then).
    pub fn ring(&self) {
        fence(Ordering::SeqCst);
        if self.asleep.load(Ordering::Relaxed)
            && self.asleep.swap(false, Ordering::AcqRel)
            && let Some(t) = self.sleeper.get()
        {
            t.unpark();
        }
    }

    /// Times the consumer has woken from a sleep so far.
    pub fn wakes(&self) -> u64 {
        self.wakes.load(Ordering::Relaxed)
    }
}

/// Heap bytes a record holds.
fn weight(rec: &RawRecord) -> u64 {
    (rec.body.capacity()
        + rec.text.capacity()
        + rec.response_head.len()
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
    ring_with_bell(capacity, max_bytes, None)
}

/// [`ring_bounded`] whose pushes (and whose producer's going) ring `bell`.
pub fn ring_with_bell(
    capacity: usize,
    max_bytes: u64,
    bell: Option<Arc<Doorbell>>,
) -> (Producer, Consumer) {
    let shared = Arc::new(Shared {
        queue: ArrayQueue::new(capacity.max(1)),
        stalls: AtomicU64::new(0),
        closed: AtomicBool::new(false),
        bytes: AtomicU64::new(0),
        max_bytes,
        bell,
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
    pub fn try_push(&self, rec: Box<RawRecord>) -> Result<(), Box<RawRecord>> {
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
        })?;
        if let Some(b) = &self.shared.bell {
            b.ring();
        }
        Ok(())
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        if let Some(b) = &self.shared.bell {
            b.ring();
        }
    }
}

impl Consumer {
    pub fn pop(&self) -> Option<Box<RawRecord>> {
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

    /// The doorbell this ring's producer rings, if it has one.
    pub fn bell(&self) -> Option<&Arc<Doorbell>> {
        self.shared.bell.as_ref()
    }

    /// A record is waiting.
    pub fn has_records(&self) -> bool {
        !self.shared.queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty record with request index `i`.
    fn rec(i: u64) -> Box<RawRecord> {
        let mut r = crate::record::testing::record(Vec::new(), Vec::new(), false);
        r.credit.index = i;
        Box::new(r)
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

    /// What a consumer of `rings` must not sleep through: a record, or the last producer's
    /// going.
    fn news(rings: &[Consumer]) -> bool {
        rings.iter().any(Consumer::has_records) || rings.iter().all(Consumer::is_finished)
    }

    /// A consumer parked on the bell is woken by a push and by the last producer's going; every
    /// sleep ends by a ring (or finds news at once), none by its timeout, and the wakes counted
    /// are one per step at most.
    #[test]
    fn a_parked_consumer_wakes_on_a_push_and_on_the_last_close() {
        let bell = Doorbell::new();
        let (p0, c0) = ring_with_bell(8, u64::MAX, Some(bell.clone()));
        let (p1, c1) = ring_with_bell(8, u64::MAX, Some(bell.clone()));
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let producers = std::thread::spawn(move || {
            // Each step waits until the consumer is about to sleep.
            go_rx.recv().unwrap();
            p0.try_push(rec(7)).unwrap();
            go_rx.recv().unwrap();
            drop(p0);
            p1.try_push(rec(8)).unwrap();
            go_rx.recv().unwrap();
            drop(p1);
        });
        let rings = [c0, c1];
        let mut got = Vec::new();
        let mut ends = Vec::new();
        loop {
            for c in &rings {
                while let Some(r) = c.pop() {
                    got.push(r.credit.index);
                }
            }
            if rings.iter().all(Consumer::is_finished) {
                break;
            }
            let _ = go_tx.send(());
            // The timeout only keeps a lost wake from hanging the test; it must never end a
            // sleep.
            ends.push(bell.sleep_unless(Some(Duration::from_secs(60)), || news(&rings)));
        }
        producers.join().unwrap();
        assert_eq!(got, vec![7, 8]);
        assert!(!ends.contains(&Woke::TimedOut), "{ends:?}");
        assert!(ends.len() <= 4 && bell.wakes() <= 4, "{ends:?}");
    }

    #[test]
    fn ringing_with_nobody_asleep_costs_no_wake() {
        let bell = Doorbell::new();
        let (p, c) = ring_with_bell(4, u64::MAX, Some(bell.clone()));
        p.try_push(rec(1)).unwrap();
        let rings = [c];
        assert_eq!(bell.sleep_unless(None, || news(&rings)), Woke::Ready);
        assert_eq!(bell.wakes(), 0);
        assert_eq!(rings[0].pop().unwrap().credit.index, 1);
        // Nobody rings: the timeout ends it.
        let end = bell.sleep_unless(Some(Duration::from_millis(1)), || news(&rings));
        assert_eq!((end, bell.wakes()), (Woke::TimedOut, 1));
        drop(p);
        assert_eq!(bell.sleep_unless(None, || news(&rings)), Woke::Ready);
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
