//! What lets a worker's tasks sleep while nothing is due.
//!
//! A task waits for its next due time (a timer) together with the events that can make it act
//! sooner: the end of its phase, and the run's early stop. The stop comes from another thread:
//! [`ringperf_io::control::RunControl::stop`] writes the worker's eventfd, which a task of the worker
//! ([`listen`]) reads through io_uring and turns into the worker's [`Latch`] `stop_seen`. While
//! it listens, no task polls for a stop: an idle worker sleeps until its next credit. On the
//! epoll driver (a file read would block the thread) nobody listens, and waits are cut into
//! [`IDLE_POLL`] slices instead.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::os::fd::{AsRawFd, FromRawFd};
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Duration;

use ringperf_io::control::{RunControl, WakeFd};

/// Longest nap of a task that waits for a stop on a worker that does not [`listen`] for it (the
/// epoll driver): such a worker wakes a few times a second, and sees a stop within this.
pub(crate) const IDLE_POLL: Duration = Duration::from_millis(200);

/// A one-way event local to a worker (a phase's end, the run's stop seen): once set it stays
/// set, and every task waiting for it is woken.
#[derive(Debug, Default)]
pub(crate) struct Latch {
    set: Cell<bool>,
    waiters: RefCell<Vec<Waker>>,
}

impl Latch {
    pub(crate) fn set(&self) {
        self.set.set(true);
        for w in self.waiters.borrow_mut().drain(..) {
            w.wake();
        }
    }

    pub(crate) fn is_set(&self) -> bool {
        self.set.get()
    }

    /// Wakes every waiting task without setting the latch (they look again at what they wait
    /// for).
    pub(crate) fn wake_all(&self) {
        for w in self.waiters.borrow_mut().drain(..) {
            w.wake();
        }
    }

    /// Ready once the latch is set.
    pub(crate) fn wait(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(|cx| {
            if self.set.get() {
                return Poll::Ready(());
            }
            // Each waiting task once (its waker stays the same from one wait to the next).
            let mut waiters = self.waiters.borrow_mut();
            if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
                waiters.push(cx.waker().clone());
            }
            Poll::Pending
        })
    }

    /// Sleeps `nap` (`None`: no timer); `false` (at once) when this latch is set before the
    /// nap ends. `early` (unless already set) ends the nap sooner, with `true`.
    pub(crate) async fn sleep(&self, nap: Option<Duration>, early: &Latch) -> bool {
        if self.is_set() {
            return false;
        }
        let timer = async {
            match nap {
                Some(d) => monoio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        let early = async {
            if early.is_set() {
                std::future::pending::<()>().await;
            }
            early.wait().await;
        };
        monoio::select! {
            () = self.wait() => false,
            () = early => true,
            () = timer => !self.is_set(),
        }
    }
}

/// A nudge from a worker's tasks to one waiting task of the same worker (a request started or
/// ended): the waiter sleeps until the next one.
#[derive(Debug, Default)]
pub(crate) struct Nudge {
    hit: Cell<bool>,
    waiter: RefCell<Option<Waker>>,
}

impl Nudge {
    /// Wakes the waiting task, if any (no system call: the waker is this thread's).
    pub(crate) fn nudge(&self) {
        self.hit.set(true);
        if let Some(w) = self.waiter.borrow_mut().take() {
            w.wake();
        }
    }

    /// Ready at the first nudge since the last wait ended.
    pub(crate) fn wait(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(|cx| {
            if self.hit.replace(false) {
                return Poll::Ready(());
            }
            *self.waiter.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
    }
}

/// The worker's side of the run's stop and of the main thread's pokes: whether a task
/// [`listen`]s for them, what it sets, and how many times a listening worker woke.
#[derive(Debug, Default)]
pub(crate) struct StopWatch {
    /// A task reads the worker's eventfd: waits need no bound to see a stop or a poke.
    pub(crate) listening: Cell<bool>,
    /// The run's stop was seen.
    pub(crate) seen: Latch,
    /// Pokes read so far (the main thread's "look again": another worker ended its phase, so
    /// the phase's requests may be exhausted), and the tasks waiting for the next one.
    pokes: Cell<u64>,
    poked: RefCell<Vec<Waker>>,
    /// Reads of the eventfd that ended (a stop, the worker's own end).
    pub(crate) wakes: Cell<u64>,
    /// The worker is ending: the listener returns at its next wake.
    pub(crate) ending: Cell<bool>,
    /// Times an open loop's wait with nothing due (an empty queue, the next credit's time known
    /// and not imminent) ended: its next credit near, a stop, a poke, or the bound on a worker
    /// that does not listen.
    pub(crate) idle_wakes: Cell<u64>,
}

impl StopWatch {
    /// Ready at the run's stop, or at the next poke after this call.
    pub(crate) fn event(&self) -> impl Future<Output = ()> + '_ {
        let since = self.pokes.get();
        std::future::poll_fn(move |cx| {
            if self.seen.is_set() || self.pokes.get() != since {
                return Poll::Ready(());
            }
            // The stop's latch wakes this task too.
            let _ = std::pin::pin!(self.seen.wait()).poll(cx);
            let mut w = self.poked.borrow_mut();
            if !w.iter().any(|w| w.will_wake(cx.waker())) {
                w.push(cx.waker().clone());
            }
            Poll::Pending
        })
    }

    fn poke(&self) {
        self.pokes.set(self.pokes.get() + 1);
        for w in self.poked.borrow_mut().drain(..) {
            w.wake();
        }
    }

    /// The longest a wait may last before looking at the stop itself: none while a task
    /// listens, [`IDLE_POLL`] otherwise.
    pub(crate) fn bound(&self) -> Option<Duration> {
        (!self.listening.get()).then_some(IDLE_POLL)
    }
}

/// Reads the worker's eventfd through io_uring until the run stops (sets `watch.seen`) or the
/// worker ends; every other read is a poke (the tasks waiting for [`StopWatch::event`] look
/// again) (`watch.ending`, then [`WakeFd::wake`] by the worker itself). Only on io_uring:
/// on the epoll driver the read would block the thread. Leaves `watch.listening` false (so waits
/// stay bounded) when the descriptor cannot be duplicated or read.
pub(crate) async fn listen(fd: Arc<WakeFd>, control: Arc<RunControl>, watch: Rc<StopWatch>) {
    // SAFETY: `fd` is an open eventfd owned by the `WakeFd`, alive across the call; `dup` only
    // makes a new descriptor for the same eventfd, owned by the file made below.
    let dup = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return;
    }
    // SAFETY: `dup` was just made and is owned by nothing else; the file closes it once.
    let std_file = unsafe { std::fs::File::from_raw_fd(dup) };
    let Ok(file) = monoio::fs::File::from_std(std_file) else {
        return;
    };
    watch.listening.set(true);
    // Registered only now: a stop before this point is seen by the first check below.
    let mut buf = Vec::with_capacity(8);
    loop {
        if control.stopped() {
            watch.seen.set();
            break;
        }
        if watch.ending.get() {
            break;
        }
        let (res, b) = file.read_at(buf, 0).await;
        buf = b;
        buf.clear();
        watch.wakes.set(watch.wakes.get() + 1);
        watch.poke();
        if res.is_err() {
            // Waits sleeping without a bound look again, and from now on are bounded.
            watch.listening.set(false);
            watch.seen.wake_all();
            watch.poke();
            return;
        }
    }
    watch.listening.set(false);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_io::control::StopReason;
    use ringperf_io::runtime::IoDriver;
    use ringperf_io::timer::Timer;
    use ringperf_wire::clock::Clock;

    /// How a parked task's wait ended, and the listener's reads.
    #[derive(Debug, PartialEq)]
    struct Ended {
        by_event: bool,
        stop_seen: bool,
        listener_reads: u64,
    }

    /// Parks a task on io_uring with its timer `far` away, beside [`listen`]; `act` runs on
    /// another thread once the task is parked (it must wake it). Returns how the wait ended.
    fn park_then(act: impl FnOnce(&RunControl, &WakeFd) + Send + 'static) -> Ended {
        let control = Arc::new(RunControl::new(Clock::start()));
        let fd = Arc::new(WakeFd::new().unwrap());
        control.wake_on_stop(fd.clone());
        let (parked_tx, parked_rx) = std::sync::mpsc::channel::<()>();
        let waker_thread = {
            let (control, fd) = (control.clone(), fd.clone());
            std::thread::spawn(move || {
                parked_rx.recv().unwrap();
                act(&control, &fd);
            })
        };
        let watch = Rc::new(StopWatch::default());
        let ended = ringperf_io::runtime::block_on(IoDriver::Uring, |_| {
            let (control, watch) = (control.clone(), watch.clone());
            async move {
                let listener = monoio::spawn(listen(fd.clone(), control.clone(), watch.clone()));
                // Let the listener submit its read.
                monoio::time::sleep(Duration::from_millis(1)).await;
                assert!(watch.listening.get() && watch.bound().is_none());
                let mut timer = Timer::new(true);
                // Far away: the wait ends by the event, or (the event broken) by this timer, 20 s
                // later, and the test fails on `by_event`.
                let far = ringperf_wire::clock::monotonic_raw_ns() + 20_000_000_000;
                parked_tx.send(()).unwrap();
                let by_event = monoio::select! {
                    () = timer.wait_until(far) => false,
                    () = watch.event() => true,
                };
                let stop_seen = watch.seen.is_set();
                let listener_reads = watch.wakes.get();
                watch.ending.set(true);
                fd.wake();
                listener.await;
                Ended {
                    by_event,
                    stop_seen,
                    listener_reads,
                }
            }
        })
        .expect("io_uring runtime");
        waker_thread.join().unwrap();
        ended
    }

    #[test]
    fn a_task_parked_until_far_away_is_woken_by_the_runs_stop() {
        let ended = park_then(|c, _| c.stop(StopReason::Signal("SIGINT"), u64::MAX));
        assert_eq!(
            ended,
            Ended {
                by_event: true,
                stop_seen: true,
                listener_reads: 1,
            }
        );
    }

    #[test]
    fn a_poke_wakes_a_parked_task_without_a_stop() {
        let ended = park_then(|_, fd| fd.wake());
        assert_eq!(
            ended,
            Ended {
                by_event: true,
                stop_seen: false,
                listener_reads: 1,
            }
        );
    }
}
