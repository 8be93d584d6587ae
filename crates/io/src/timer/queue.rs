//! One timer for many waiters on one thread: a [`TimerQueue`].
//!
//! A task that waits with its own [`super::Timer`] holds a timerfd for as long as it lives. A
//! thread with tens of thousands of such tasks (a mock's paced streams, a client's slots waiting
//! for their place in a concurrency ramp or for a session's next turn) then holds as many timer
//! descriptors as sockets, and the process's descriptor limit is reached at half the
//! connections. A queue keeps every waiting task's deadline and waker in a binary heap instead;
//! one timerfd, armed at the heap's soonest deadline, is read through io_uring by one task
//! ([`TimerQueue::drive`]), which wakes every waiter that is due. So a thread has one timer
//! descriptor, one `timerfd_settime` when the soonest deadline moves, and one completion per
//! due set, whatever the number of waiters; the waiters woken together run in the same turn of
//! the runtime. A wait is as precise as a timer's own (the timerfd is armed at its absolute
//! deadline) and never early.
//!
//! io_uring only (a timerfd read on the epoll driver would block the thread): there the waiters
//! keep their own coarse [`super::Timer`].

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use ringperf_wire::clock::monotonic_raw_ns;

use super::Pending;

/// One waiting task: its deadline, an insertion number (ties keep their order) and its waker.
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

/// A thread's one timer for all its waiting tasks (see the module documentation).
pub struct TimerQueue {
    heap: RefCell<BinaryHeap<Reverse<Entry>>>,
    seq: Cell<u64>,
    /// The deadline the timerfd is armed at (`u64::MAX`: not armed).
    armed: Cell<u64>,
    fd: RawFd,
    /// Taken by [`TimerQueue::drive`].
    file: RefCell<Option<monoio::fs::File>>,
    /// Raised on stop; the driver returns at its next wake-up.
    stopped: Cell<bool>,
    /// Wake-ups of the driver (each one timerfd read completed), for the perf figures.
    wakeups: Cell<u64>,
}

impl std::fmt::Debug for TimerQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerQueue")
            .field("queued", &self.queued())
            .field("armed", &self.armed.get())
            .field("wakeups", &self.wakeups.get())
            .finish_non_exhaustive()
    }
}

impl TimerQueue {
    /// A queue with its timerfd; `None` where no timerfd can be made (the waiters then keep a
    /// timer each). Nothing waits until [`TimerQueue::drive`] runs on the same thread.
    pub fn new() -> Option<Self> {
        let (file, fd) = super::shared_fd().ok()?;
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
    pub fn sleep_until(&self, due: u64) -> Sleep<'_> {
        Sleep {
            queue: self,
            due,
            queued: false,
            _pending: None,
        }
    }

    /// Arms the timerfd at `due` if that is sooner than what it is armed at.
    fn arm_sooner(&self, due: u64) {
        if due < self.armed.get() {
            self.armed.set(due);
            if super::arm(self.fd, due).is_err() {
                // Never early, never lost: a failed arm leaves the deadline to the next wake-up
                // of a sooner one; the stop path arms it again.
                self.armed.set(u64::MAX);
            }
        }
    }

    /// Ends [`TimerQueue::drive`] (at once) and wakes every waiter: from then on every wait
    /// returns at once.
    pub fn stop(&self) {
        self.stopped.set(true);
        self.armed.set(0);
        let _ = super::arm(self.fd, 1);
        for Reverse(e) in self.heap.borrow_mut().drain() {
            e.waker.wake();
        }
    }

    /// How many times the driver woke.
    pub fn wakeups(&self) -> u64 {
        self.wakeups.get()
    }

    /// Waits queued now (a wait dropped before its deadline stays queued until then).
    pub fn queued(&self) -> usize {
        self.heap.borrow().len()
    }

    /// The thread's driver task: waits on the timerfd, then wakes every waiter whose deadline
    /// has passed and arms the timerfd at the next one. Returns after [`TimerQueue::stop`].
    pub async fn drive(self: Rc<Self>) {
        let Some(file) = self.file.borrow_mut().take() else {
            return;
        };
        let mut buf = Vec::with_capacity(8);
        while !self.stopped.get() {
            let (res, b) = file.read_at(buf, 0).await;
            buf = b;
            buf.clear();
            if res.is_err() {
                // Unreadable timerfd: a short sleep keeps the waiters going, late but never early.
                monoio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            self.wakeups.set(self.wakeups.get() + 1);
            self.wake_due();
        }
    }

    /// Wakes the waiters due by now; arms the timerfd at the soonest one left.
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

/// A wait on a [`TimerQueue`] (see [`TimerQueue::sleep_until`]).
pub struct Sleep<'a> {
    queue: &'a TimerQueue,
    due: u64,
    queued: bool,
    /// Known to the thread while it waits, so a batched wake-up never oversleeps it.
    _pending: Option<Pending>,
}

impl Future for Sleep<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.queue.stopped.get() || monotonic_raw_ns() >= self.due {
            return Poll::Ready(());
        }
        if !self.queued {
            let p = self.queue;
            let seq = p.seq.get();
            p.seq.set(seq + 1);
            p.heap.borrow_mut().push(Reverse(Entry {
                due: self.due,
                seq,
                waker: cx.waker().clone(),
            }));
            p.arm_sooner(self.due);
            self.queued = true;
            self._pending = Pending::register(self.due);
        }
        // Woken by the driver once due (an entry outlives a dropped wait harmlessly: its waker
        // is woken once, for nothing).
        Poll::Pending
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
            let pacer = Rc::new(TimerQueue::new().expect("timerfd"));
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
            let pacer = Rc::new(TimerQueue::new().expect("timerfd"));
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
}
