//! The fast mode's thread state ([`super::MockConfig::fast`]): a mock that costs less per token
//! event than a client, so a benchmark of one client core measures the client.
//!
//! Two parts, one of each per server thread:
//!
//! - [`Pacer`]: one timer queue for every paced stream of the thread. A stream waiting for its
//!   next event puts its deadline and its task's waker in a binary heap; one timerfd, armed at
//!   the heap's soonest deadline, is read through io_uring by one task ([`Pacer::drive`]), which
//!   wakes every stream that is due. So a thread of 10 000 streams has one timer, one
//!   `timerfd_settime` when the soonest deadline moves, and one completion per due set, in place
//!   of a timerfd armed and read per stream and event; the streams woken together write in the
//!   same turn of the runtime, so their sends go to the kernel in one `io_uring_enter`.
//! - [`FrameCache`]: the bytes of a stream's opening (head, role chunk) and of each token event,
//!   HTTP-chunk framed, built once per response shape and copied from then on. Only the closing
//!   events (finish, usage with the request's prompt count, `[DONE]`) are built per request.
//!
//! What the fast mode changes in the answer, so the bytes can be shared: every streamed response
//! of a shape carries the same id and `created`, and the reply words are the same sequence
//! whatever the body (the seed still picks them). The truth log is unchanged: each write is
//! stamped just before it goes, and the reply text is kept under `record_bodies`.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::future::Future;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use ringperf_io::timer;
use ringperf_wire::clock::monotonic_raw_ns;

/// One waiting stream: its deadline, an insertion number (ties keep their order) and its waker.
struct Entry {
    due: u64,
    seq: u64,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(other.due, other.seq))
    }
}

/// A thread's one timer for all its paced streams (see the module documentation).
pub(crate) struct Pacer {
    heap: RefCell<BinaryHeap<Reverse<Entry>>>,
    seq: Cell<u64>,
    /// The deadline the timerfd is armed at (`u64::MAX`: not armed).
    armed: Cell<u64>,
    fd: RawFd,
    /// Taken by [`Pacer::drive`].
    file: RefCell<Option<monoio::fs::File>>,
    /// Raised on stop; the driver returns at its next wake-up.
    stopped: Cell<bool>,
    /// Wake-ups of the driver (each one timerfd read completed), for the perf figures.
    wakeups: Cell<u64>,
}

impl Pacer {
    /// A pacer with its timerfd; `None` where no timerfd can be made (the streams then keep the
    /// per-connection timer).
    pub(crate) fn new() -> Option<Self> {
        let (file, fd) = timer::shared_fd().ok()?;
        Some(Self {
            heap: RefCell::new(BinaryHeap::new()),
            seq: Cell::new(0),
            armed: Cell::new(u64::MAX),
            fd,
            file: RefCell::new(Some(file)),
            stopped: Cell::new(false),
            wakeups: Cell::new(0),
        })
    }

    /// Returns at or after the raw `CLOCK_MONOTONIC` time `due` (at once, with no syscall, if it
    /// has passed).
    pub(crate) fn sleep_until(&self, due: u64) -> Sleep<'_> {
        Sleep {
            pacer: self,
            due,
            queued: false,
        }
    }

    /// Arms the timerfd at `due` if that is sooner than what it is armed at.
    fn arm_sooner(&self, due: u64) {
        if due < self.armed.get() {
            self.armed.set(due);
            if timer::arm(self.fd, due).is_err() {
                // Never early, never lost: a failed arm leaves the deadline to the next wake-up
                // of a sooner one; the stop path arms it again.
                self.armed.set(u64::MAX);
            }
        }
    }

    /// Ends [`Pacer::drive`] (at once) and wakes every waiting stream.
    pub(crate) fn stop(&self) {
        self.stopped.set(true);
        self.armed.set(0);
        let _ = timer::arm(self.fd, 1);
        for Reverse(e) in self.heap.borrow_mut().drain() {
            e.waker.wake();
        }
    }

    /// How many times the driver woke.
    #[cfg(test)]
    pub(crate) fn wakeups(&self) -> u64 {
        self.wakeups.get()
    }

    /// The thread's driver task: waits on the timerfd, then wakes every stream whose deadline
    /// has passed and arms the timerfd at the next one. Returns after [`Pacer::stop`].
    pub(crate) async fn drive(self: Rc<Self>) {
        let Some(file) = self.file.borrow_mut().take() else {
            return;
        };
        let mut buf = Vec::with_capacity(8);
        while !self.stopped.get() {
            let (res, b) = file.read_at(buf, 0).await;
            buf = b;
            buf.clear();
            if res.is_err() {
                // Unreadable timerfd: a short sleep keeps the streams going, late but never early.
                monoio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            self.wakeups.set(self.wakeups.get() + 1);
            self.wake_due();
        }
    }

    /// Wakes the streams due by now; arms the timerfd at the soonest one left.
    fn wake_due(&self) {
        let now = monotonic_raw_ns();
        let mut heap = self.heap.borrow_mut();
        while heap.peek().is_some_and(|Reverse(e)| e.due <= now) {
            if let Some(Reverse(e)) = heap.pop() {
                e.waker.wake();
            }
        }
        self.armed.set(u64::MAX);
        if let Some(Reverse(next)) = heap.peek() {
            let due = next.due;
            drop(heap);
            self.arm_sooner(due);
        }
    }
}

/// A wait on a [`Pacer`] (see [`Pacer::sleep_until`]).
pub(crate) struct Sleep<'a> {
    pacer: &'a Pacer,
    due: u64,
    queued: bool,
}

impl Future for Sleep<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.pacer.stopped.get() || monotonic_raw_ns() >= self.due {
            return Poll::Ready(());
        }
        if !self.queued {
            let p = self.pacer;
            let seq = p.seq.get();
            p.seq.set(seq + 1);
            p.heap.borrow_mut().push(Reverse(Entry {
                due: self.due,
                seq,
                waker: cx.waker().clone(),
            }));
            p.arm_sooner(self.due);
            self.queued = true;
        }
        // Woken by the driver once due (an entry outlives a dropped wait harmlessly: its waker
        // is woken once, for nothing).
        Poll::Pending
    }
}

/// What makes two streamed responses' opening and token events the same bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FrameKey {
    /// The endpoint, as `Endpoint as u8`.
    pub(crate) endpoint: u8,
    pub(crate) reasoning_tokens: u64,
    pub(crate) content_tokens: u64,
    pub(crate) tokens_per_event: u64,
    /// The head says `connection: close`.
    pub(crate) close: bool,
}

/// A stream's precomputed bytes: the opening, then each token event (framed as an HTTP chunk)
/// at `events[k]..events[k + 1]` of `bytes`.
#[derive(Debug)]
pub(crate) struct Frames {
    /// `created` of every response built from these frames.
    pub(crate) created: u64,
    /// The opening (head and role chunk) then every token event.
    pub(crate) bytes: Vec<u8>,
    /// Where each token event starts in `bytes`, and (last) where the bytes end; the opening is
    /// `bytes[..events[0]]`.
    pub(crate) events: Vec<usize>,
    /// The reply text (what is not sent on a reasoning channel), for the truth log.
    pub(crate) text: String,
}

impl Frames {
    /// The bytes of the opening.
    pub(crate) fn opening(&self) -> &[u8] {
        self.bytes
            .get(..self.events.first().copied().unwrap_or(0))
            .unwrap_or_default()
    }

    /// The bytes of token events `from..to` (empty when out of range).
    pub(crate) fn events(&self, from: usize, to: usize) -> &[u8] {
        match (self.events.get(from), self.events.get(to)) {
            (Some(&a), Some(&b)) => self.bytes.get(a..b).unwrap_or_default(),
            _ => &[],
        }
    }

    /// Token events in the frames.
    pub(crate) fn count(&self) -> usize {
        self.events.len().saturating_sub(1)
    }
}

/// A thread's frames by shape (at most [`FrameCache::LIMIT`] shapes; then it starts afresh).
#[derive(Default)]
pub(crate) struct FrameCache {
    map: RefCell<HashMap<FrameKey, Rc<Frames>>>,
}

impl FrameCache {
    const LIMIT: usize = 4096;

    /// The frames of `key`, built by `build` the first time.
    pub(crate) fn get_or_build(&self, key: FrameKey, build: impl FnOnce() -> Frames) -> Rc<Frames> {
        if let Some(f) = self.map.borrow().get(&key) {
            return Rc::clone(f);
        }
        let frames = Rc::new(build());
        let mut map = self.map.borrow_mut();
        if map.len() >= Self::LIMIT {
            map.clear();
        }
        map.insert(key, Rc::clone(&frames));
        frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_uring<F: Future>(f: F) -> F::Output {
        monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
            .enable_timer()
            .build()
            .expect("io_uring runtime")
            .block_on(f)
    }

    /// 45 waits on one pacer: five already due, then ten for each of four deadlines spawned in
    /// a scrambled order. Each returns at or after its deadline (the clock read when it
    /// returns), the future ones in deadline order, and the driver woke once per due set (at
    /// most four times), not once per wait.
    #[test]
    fn one_timer_wakes_every_wait_never_early() {
        on_uring(async {
            let pacer = Rc::new(Pacer::new().expect("timerfd"));
            let driver = monoio::spawn(Rc::clone(&pacer).drive());
            let start = monotonic_raw_ns();
            let mut dues: Vec<u64> = (0..5).map(|i| start - 1_000 * (i + 1)).collect();
            dues.extend((0..40u64).map(|i| start + 20_000_000 + (i * 3 % 4) * 5_000_000));
            let order = Rc::new(RefCell::new(Vec::new()));
            let mut tasks = Vec::new();
            for &due in &dues {
                let (p, o) = (Rc::clone(&pacer), Rc::clone(&order));
                tasks.push(monoio::spawn(async move {
                    p.sleep_until(due).await;
                    let woke = monotonic_raw_ns();
                    o.borrow_mut().push(due);
                    (due, woke)
                }));
            }
            for t in tasks {
                let (due, woke) = t.await;
                assert!(woke >= due, "woke {woke} before {due}");
            }
            let order = order.borrow().clone();
            assert_eq!(order.len(), 45);
            let future: Vec<u64> = order.iter().copied().filter(|&d| d > start).collect();
            let mut sorted = future.clone();
            sorted.sort_unstable();
            assert_eq!(future, sorted);
            let wakeups = pacer.wakeups();
            assert!(
                (1..=4).contains(&wakeups),
                "{wakeups} wake-ups for 4 deadlines"
            );
            pacer.stop();
            driver.await;
        });
    }

    /// A wait sooner than the deadline the timer is armed at re-arms it at its own.
    #[test]
    fn a_sooner_deadline_rearms_the_timer() {
        on_uring(async {
            let pacer = Rc::new(Pacer::new().expect("timerfd"));
            let driver = monoio::spawn(Rc::clone(&pacer).drive());
            let far = monotonic_raw_ns() + 10_000_000_000;
            let p = Rc::clone(&pacer);
            let far_task = monoio::spawn(async move { p.sleep_until(far).await });
            monoio::time::sleep(std::time::Duration::from_millis(1)).await;
            assert_eq!(pacer.armed.get(), far);
            let near = monotonic_raw_ns() + 100_000_000;
            let p = Rc::clone(&pacer);
            let near_task = monoio::spawn(async move { p.sleep_until(near).await });
            monoio::time::sleep(std::time::Duration::from_millis(1)).await;
            assert_eq!(pacer.armed.get(), near);
            near_task.await;
            assert!(monotonic_raw_ns() >= near);
            // After the near wake-up the timer is armed at the far deadline again.
            assert_eq!(pacer.armed.get(), far);
            pacer.stop();
            far_task.await;
            driver.await;
        });
    }

    #[test]
    fn frames_slice_by_event() {
        let f = Frames {
            created: 0,
            bytes: b"HEADe0e1e2".to_vec(),
            events: vec![4, 6, 8, 10],
            text: String::new(),
        };
        assert_eq!(f.opening(), b"HEAD");
        assert_eq!(f.count(), 3);
        assert_eq!(f.events(0, 1), b"e0");
        assert_eq!(f.events(1, 3), b"e1e2");
        assert_eq!(f.events(2, 9), b"");
    }
}
