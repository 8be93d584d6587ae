//! Stopping a run early: by a signal (Ctrl-C / SIGTERM) or by the error budget
//! (`--failed-request-threshold`). Workers stop issuing at once; requests in flight get the
//! grace period, then the workers cut them (recorded as cancelled, excluded from metrics).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ringperf_wire::clock::Clock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Why a run stopped before its own end.
#[derive(Clone, Debug, PartialEq)]
pub enum StopReason {
    /// SIGINT or SIGTERM.
    Signal(&'static str),
    /// Failed / total records of a profiling phase crossed its error budget:
    /// `--failed-request-threshold`, or a config file's later phase's `failed_request_threshold`
    /// (`phase` names it).
    ErrorBudget {
        failed: u64,
        total: u64,
        threshold: f64,
        phase: Option<String>,
    },
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::Signal(s) => write!(f, "cancelled by {s}"),
            StopReason::ErrorBudget {
                failed,
                total,
                threshold,
                phase,
            } => {
                let share = 100.0 * *failed as f64 / (*total).max(1) as f64;
                match phase {
                    None => write!(
                        f,
                        "{failed} of {total} requests failed ({share:.1} %), over \
                         --failed-request-threshold {threshold}"
                    ),
                    Some(p) => write!(
                        f,
                        "{failed} of {total} requests of phase {p} failed ({share:.1} %), over \
                         its failed_request_threshold {threshold}"
                    ),
                }
            }
        }
    }
}

/// Shared by main, the workers, the aggregator and the signal thread.
#[derive(Debug)]
pub struct RunControl {
    /// The run's clock (deadlines are on its scale).
    clock: Clock,
    stop: AtomicBool,
    /// Monotonic ns after which requests still in flight are cut (`u64::MAX`: never).
    cut_at_ns: AtomicU64,
    reason: Mutex<Option<StopReason>>,
    /// Written on a stop: the eventfds that idle workers sleep on.
    on_stop: Mutex<Vec<Arc<WakeFd>>>,
}

/// An eventfd another thread writes to wake a sleeper (a worker reads it through io_uring).
#[derive(Debug)]
pub struct WakeFd(OwnedFd);

impl WakeFd {
    pub fn new() -> std::io::Result<Self> {
        // SAFETY: plain syscall with constant arguments; a negative return is handled below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Makes the eventfd readable (its count saturating is not an error: it stays readable).
    pub fn wake(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: the descriptor is this value's open eventfd; the buffer is a live local of the
        // 8 bytes an eventfd write takes, only read by the call.
        unsafe { libc::write(self.0.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }
}

impl AsRawFd for WakeFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

impl RunControl {
    pub fn new(clock: Clock) -> Self {
        Self {
            clock,
            stop: AtomicBool::new(false),
            cut_at_ns: AtomicU64::new(u64::MAX),
            reason: Mutex::new(None),
            on_stop: Mutex::new(Vec::new()),
        }
    }

    /// Has `fd` written at the stop (at once if the run has stopped already).
    pub fn wake_on_stop(&self, fd: Arc<WakeFd>) {
        if let Ok(mut v) = self.on_stop.lock() {
            v.push(fd.clone());
        }
        // After the push: a stop between the two is seen here, or it wakes the fd itself.
        if self.stopped() {
            fd.wake();
        }
    }

    /// The run's clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Stops issuing now; requests in flight are cut after `grace` (None: never).
    pub fn stop_after(&self, reason: StopReason, grace: Option<Duration>) {
        let cut = grace.map_or(u64::MAX, |g| {
            self.clock
                .now_ns()
                .saturating_add(g.as_nanos().min(u128::from(u64::MAX / 2)) as u64)
        });
        self.stop(reason, cut);
    }

    /// Stops issuing; in-flight requests are cut at `cut_at_ns`. The first reason is kept.
    pub fn stop(&self, reason: StopReason, cut_at_ns: u64) {
        if let Ok(mut r) = self.reason.lock()
            && r.is_none()
        {
            *r = Some(reason);
        }
        self.cut_at_ns.fetch_min(cut_at_ns, Ordering::AcqRel);
        self.stop.store(true, Ordering::Release);
        if let Ok(v) = self.on_stop.lock() {
            for fd in v.iter() {
                fd.wake();
            }
        }
    }

    /// No new request may be issued.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Requests in flight must be cut at this monotonic ns (`u64::MAX`: never).
    #[inline]
    pub fn cut_at_ns(&self) -> u64 {
        self.cut_at_ns.load(Ordering::Acquire)
    }

    pub fn reason(&self) -> Option<StopReason> {
        self.reason.lock().ok().and_then(|r| r.clone())
    }
}

/// Set by the binary's signal thread on the first SIGINT / SIGTERM, for the loops that run before
/// a run has workers and hold no [`RunControl`]: the tokenizer wait, dataset loading, prompt
/// building, request encoding. Each checks [`interrupted`] per record (or conversation) and stops
/// early; the stage that called it then sees the run's stop and ends the run (README, "Stopping,
/// errors and exit codes"). Never set by an embedded run (`ringperf::run::run`), so a library
/// caller's loops never see it.
static INTERRUPTED: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Says that the signal `name` came: preparation loops stop at their next check.
pub fn interrupt(name: &'static str) {
    let _ = INTERRUPTED.set(name);
}

/// Whether a SIGINT / SIGTERM came (see [`interrupt`]): a preparation loop stops early, its
/// partial result to be thrown away by its caller.
#[inline]
pub fn interrupted() -> bool {
    INTERRUPTED.get().is_some()
}

/// The signal that [`interrupt`]ed the process, if one did.
pub fn interrupted_by() -> Option<&'static str> {
    INTERRUPTED.get().copied()
}

/// Check of `--failed-request-threshold` (README.md, "Stopping, errors and exit codes"): armed once
/// max(concurrency, 10) profiling records have been seen.
#[derive(Clone, Copy, Debug)]
pub struct ErrorBudget {
    pub threshold: f64,
    pub floor: u64,
}

impl ErrorBudget {
    /// Whether `failed` of `total` crosses the budget.
    pub fn crossed(&self, failed: u64, total: u64) -> bool {
        total >= self.floor && total > 0 && failed as f64 / total as f64 > self.threshold
    }
}

/// What a force quit does (the second Ctrl-C, the dashboard's stop key pressed twice): set once
/// by the binary, which decides its exit code.
static FORCE_QUIT: std::sync::OnceLock<fn() -> !> = std::sync::OnceLock::new();

/// Sets what [`force_quit`] does; the first call wins.
pub fn on_force_quit(quit: fn() -> !) {
    let _ = FORCE_QUIT.set(quit);
}

/// Ends the process at once, as the binary said ([`on_force_quit`]); without that, aborts.
pub fn force_quit() -> ! {
    match FORCE_QUIT.get() {
        Some(quit) => quit(),
        None => std::process::abort(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_reason_and_earliest_cut_win() {
        let c = RunControl::new(Clock::start());
        assert!(!c.stopped());
        assert_eq!(c.cut_at_ns(), u64::MAX);
        c.stop(StopReason::Signal("SIGINT"), 500);
        c.stop(StopReason::Signal("SIGTERM"), 900);
        c.stop(StopReason::Signal("SIGTERM"), 100);
        assert!(c.stopped());
        assert_eq!(c.cut_at_ns(), 100);
        assert_eq!(c.reason(), Some(StopReason::Signal("SIGINT")));
    }

    #[test]
    fn budget_is_armed_by_the_floor_and_strict() {
        let b = ErrorBudget {
            threshold: 0.5,
            floor: 10,
        };
        assert!(!b.crossed(9, 9), "not armed below the floor");
        assert!(!b.crossed(5, 10), "exactly the threshold does not cross");
        assert!(b.crossed(6, 10));
        let zero = ErrorBudget {
            threshold: 0.0,
            floor: 10,
        };
        assert!(zero.crossed(1, 10));
        assert!(!zero.crossed(0, 10));
    }
}
