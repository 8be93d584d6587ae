//! Waiting until an absolute `CLOCK_MONOTONIC` instant, precisely and without spinning.
//!
//! monoio's timers have millisecond granularity: a wait for 2 ms ends 2 to 3 ms later, which
//! would make an open-loop send up to a millisecond late, or a mock configured for a 2 ms
//! inter-token delay deliver ~3 ms. On io_uring a [`Timer`] instead arms a `timerfd` at the
//! absolute deadline (`CLOCK_MONOTONIC`, the scale of `ringperf_wire::clock::monotonic_raw_ns`,
//! high-resolution) and reads it through the ring: the task sleeps, the thread's other tasks keep
//! running, and it wakes within microseconds of the deadline. On the epoll driver a file read
//! would block the whole thread, so the timer falls back to monoio's (late by up to a
//! millisecond, never early).
//!
//! One timer serves one waiter at a time and is reused for every wait (one descriptor per
//! open-loop worker); a [`TimerQueue`] serves every waiter of a thread with one descriptor (the
//! mock's paced streams, a worker's slots and sessions). A timer's descriptor is made on the
//! first wait that has to wait: a deadline already passed returns at once with no syscall
//! beyond reading the clock, and a user whose deadlines are always passed (a zero-delay mock)
//! never makes one.
//!
//! Used by the worker's open-loop pacer (`ringperf_engine::worker`) and the mock's response pacing
//! (`ringperf_mock::mock`); it imports neither.

use std::io;
use std::os::fd::{FromRawFd, RawFd};
use std::time::Duration;

use ringperf_wire::clock::monotonic_raw_ns;

mod queue;
pub use queue::{Sleep, TimerQueue};

/// Which timer serves a [`Timer`]'s waits (tests assert it: a timing bound alone cannot tell the
/// two apart reliably).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    /// A `timerfd` read through io_uring: microsecond precision.
    Timerfd,
    /// monoio's millisecond timer.
    Coarse,
}

/// A reusable precise timer for one task on one monoio runtime.
#[derive(Debug)]
pub struct Timer {
    state: State,
    /// Waits the timerfd could not serve (it could not be made, armed or read), so the coarse
    /// timer did.
    fallbacks: u64,
}

#[derive(Debug)]
enum State {
    /// On io_uring; the timerfd is made by the first wait that needs it.
    Unmade,
    Fd {
        file: monoio::fs::File,
        fd: RawFd,
        buf: Option<Vec<u8>>,
    },
    Coarse,
}

impl Timer {
    /// A timer for a task on a runtime whose driver is io_uring (`on_io_uring`) or epoll. Pass
    /// the driver the thread actually runs on: a timerfd read on the epoll driver blocks the
    /// thread.
    pub fn new(on_io_uring: bool) -> Self {
        Self {
            state: if on_io_uring {
                State::Unmade
            } else {
                State::Coarse
            },
            fallbacks: 0,
        }
    }

    /// The timer that serves (or will serve) this timer's waits.
    pub fn kind(&self) -> TimerKind {
        match self.state {
            State::Unmade | State::Fd { .. } => TimerKind::Timerfd,
            State::Coarse => TimerKind::Coarse,
        }
    }

    /// Whether a timerfd has been made (false until a wait had to wait).
    #[cfg(test)]
    pub(crate) fn has_fd(&self) -> bool {
        matches!(self.state, State::Fd { .. })
    }

    /// How many waits an io_uring timer had to leave to the coarse timer (0 for a timer built for
    /// epoll, whose waits are all coarse by construction).
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks
    }

    /// Returns at or after the raw `CLOCK_MONOTONIC` time `raw_ns` (immediately, with no timer,
    /// if it has passed).
    pub async fn wait_until(&mut self, raw_ns: u64) {
        let now = monotonic_raw_ns();
        if raw_ns <= now {
            return;
        }
        if matches!(self.state, State::Unmade) {
            self.state = make_fd().unwrap_or_else(|_| {
                // Counted once here; every later wait is coarse by construction.
                self.fallbacks += 1;
                State::Coarse
            });
        }
        // Known to the thread while it waits, so a batched wake-up never oversleeps it.
        let _pending = Pending::register(raw_ns);
        match &mut self.state {
            State::Fd { file, fd, buf } => {
                if arm(*fd, raw_ns).is_ok() {
                    let b = buf.take().unwrap_or_else(|| Vec::with_capacity(8));
                    let (res, mut b) = file.read_at(b, 0).await;
                    b.clear();
                    *buf = Some(b);
                    if res.is_ok() {
                        return;
                    }
                }
                // The timerfd failed: never return early.
                self.fallbacks += 1;
                coarse_until(raw_ns).await;
            }
            State::Unmade | State::Coarse => coarse_until(raw_ns).await,
        }
    }
}

thread_local! {
    /// Whether this thread keeps [`PENDING`]: only a thread that asked ([`track_pending`], a
    /// worker with batched wake-ups) pays for the map; every other wait registers nothing.
    static TRACKING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Deadlines of this thread's timers now waiting, with how many wait for each.
    static PENDING: std::cell::RefCell<std::collections::BTreeMap<u64, u32>> =
        const { std::cell::RefCell::new(std::collections::BTreeMap::new()) };
}

/// From now on this thread's timer waits register their deadlines ([`soonest_pending`]).
pub fn track_pending() {
    TRACKING.with(|t| t.set(true));
}

/// The soonest deadline (`CLOCK_MONOTONIC` ns) a [`Timer`] of this thread is waiting for, if any
/// (always `None` on a thread that does not [`track_pending`]).
/// A worker's batched wake-ups (`crate::net::batch`) end their naps before it.
#[must_use]
pub fn soonest_pending() -> Option<u64> {
    PENDING.with(|p| p.borrow().keys().next().copied())
}

/// One wait's entry in [`PENDING`], removed when the wait ends or is dropped.
struct Pending(u64);

impl Pending {
    /// `None` on a thread that does not track its deadlines.
    fn register(raw_ns: u64) -> Option<Self> {
        if !TRACKING.with(std::cell::Cell::get) {
            return None;
        }
        PENDING.with(|p| *p.borrow_mut().entry(raw_ns).or_insert(0) += 1);
        Some(Self(raw_ns))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        PENDING.with(|p| {
            let mut p = p.borrow_mut();
            if let Some(n) = p.get_mut(&self.0) {
                *n -= 1;
                if *n == 0 {
                    p.remove(&self.0);
                }
            }
        });
    }
}

/// monoio's timer until `raw_ns` (rounded up to its millisecond ticks, so never early).
async fn coarse_until(raw_ns: u64) {
    let left = raw_ns.saturating_sub(monotonic_raw_ns());
    if left > 0 {
        monoio::time::sleep(Duration::from_nanos(left)).await;
    }
}

/// A non-blocking `CLOCK_MONOTONIC` timerfd as a monoio file, with its descriptor for [`arm`]:
/// the one timer a thread shares among many waiters ([`TimerQueue`]).
pub fn shared_fd() -> io::Result<(monoio::fs::File, RawFd)> {
    match make_fd()? {
        State::Fd { file, fd, .. } => Ok((file, fd)),
        State::Unmade | State::Coarse => Err(io::Error::other("no timerfd")),
    }
}

/// A non-blocking `CLOCK_MONOTONIC` timerfd owned by a monoio file.
fn make_fd() -> io::Result<State> {
    // SAFETY: plain syscall with constant arguments; a negative return is handled below.
    let fd = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_CLOEXEC | libc::TFD_NONBLOCK,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created by timerfd_create and is owned by nobody else; the std File
    // takes ownership and closes it exactly once.
    let std = unsafe { std::fs::File::from_raw_fd(fd) };
    let file = monoio::fs::File::from_std(std)?;
    Ok(State::Fd {
        file,
        fd,
        buf: Some(Vec::with_capacity(8)),
    })
}

/// Arms `fd` to expire once at the absolute `CLOCK_MONOTONIC` time `raw_ns` (a time already
/// passed expires at once); arming again replaces the previous deadline.
pub fn arm(fd: RawFd, raw_ns: u64) -> io::Result<()> {
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: (raw_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (raw_ns % 1_000_000_000) as libc::c_long,
        },
    };
    // SAFETY: `fd` is a timerfd owned by the timer's open file; `spec` is a valid itimerspec and
    // a null old-value pointer is allowed.
    let rc =
        unsafe { libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `raw_ns + delay`, the delay capped at a year so no configured delay can overflow.
pub fn after(raw_ns: u64, delay: Duration) -> u64 {
    const YEAR_NS: u64 = 365 * 24 * 3600 * 1_000_000_000;
    let d = u64::try_from(delay.as_nanos())
        .unwrap_or(u64::MAX)
        .min(YEAR_NS);
    raw_ns.saturating_add(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_uring<F: std::future::Future>(f: F) -> F::Output {
        monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
            .enable_timer()
            .build()
            .expect("io_uring runtime (this machine has io_uring)")
            .block_on(f)
    }

    /// Deadlines already passed make no descriptor; the first real wait makes one, and every
    /// later wait reuses it (one timerfd per timer, whatever the number of waits).
    #[test]
    fn lazy_single_timerfd_and_never_early() {
        on_uring(async {
            let mut t = Timer::new(true);
            for _ in 0..100 {
                t.wait_until(monotonic_raw_ns()).await;
                t.wait_until(0).await;
            }
            assert!(!t.has_fd(), "a passed deadline made a timerfd");
            let fd_of = |t: &Timer| match t.state {
                State::Fd { fd, .. } => fd,
                _ => -1,
            };
            let mut late = Vec::new();
            let mut first_fd = -1;
            for i in 0..20u64 {
                let at = monotonic_raw_ns() + 200_000 + 50_000 * i;
                t.wait_until(at).await;
                let now = monotonic_raw_ns();
                assert!(now >= at, "woke {} ns early", at - now);
                late.push(now - at);
                if i == 0 {
                    first_fd = fd_of(&t);
                }
                assert_eq!(fd_of(&t), first_fd, "the timerfd was not reused");
            }
            assert!(first_fd >= 0);
            assert_eq!((t.kind(), t.fallbacks()), (TimerKind::Timerfd, 0));
            late.sort_unstable();
            // Tens of µs on a timerfd; monoio's timer is ~1 ms late on sub-ms waits.
            assert!(late[late.len() / 2] < 500_000, "{late:?}");
        });
    }

    #[test]
    fn epoll_timer_is_coarse_and_never_early() {
        let mut rt = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .expect("epoll runtime");
        rt.block_on(async {
            let mut t = Timer::new(false);
            for i in 0..5u64 {
                let at = monotonic_raw_ns() + 300_000 * i;
                t.wait_until(at).await;
                assert!(monotonic_raw_ns() >= at);
            }
            assert!(!t.has_fd());
            assert_eq!((t.kind(), t.fallbacks()), (TimerKind::Coarse, 0));
        });
    }

    /// While a wait is pending the thread knows its deadline; once it ends (or is dropped
    /// mid-wait) the deadline is gone.
    #[test]
    fn pending_deadlines_are_known_while_waiting() {
        on_uring(async {
            // Untracked, a wait registers nothing.
            let mut t0 = Timer::new(true);
            let probe = monoio::spawn(async { soonest_pending() });
            t0.wait_until(monotonic_raw_ns() + 1_000_000).await;
            assert_eq!(probe.await, None);
            track_pending();
            assert_eq!(soonest_pending(), None);
            let at = monotonic_raw_ns() + 2_000_000;
            let seen = std::rc::Rc::new(std::cell::Cell::new(None));
            let s = seen.clone();
            let probe = monoio::spawn(async move { s.set(soonest_pending()) });
            let mut t = Timer::new(true);
            t.wait_until(at).await;
            probe.await;
            assert_eq!(seen.get(), Some(at));
            assert_eq!(soonest_pending(), None);
            // A wait dropped before its deadline leaves nothing behind.
            let mut t2 = Timer::new(true);
            let far = monotonic_raw_ns() + 60_000_000_000;
            let r = monoio::time::timeout(Duration::from_millis(2), t2.wait_until(far)).await;
            assert!(r.is_err());
            assert_eq!(soonest_pending(), None);
        });
    }

    #[test]
    fn after_caps_the_delay() {
        assert_eq!(after(5, Duration::from_nanos(7)), 12);
        assert_eq!(after(5, Duration::MAX), 5 + 365 * 24 * 3600 * 1_000_000_000);
        assert_eq!(after(u64::MAX - 1, Duration::from_secs(1)), u64::MAX);
    }
}
