//! SIGINT / SIGTERM without handlers: the signals are blocked in the calling thread before any
//! other thread is spawned (so every thread inherits the mask and none is interrupted), and one
//! thread takes them synchronously with `sigwait` or a `signalfd` ([`SignalWaiter`], which
//! sleeps until a signal or a wake, with no timeout). Nothing async-signal-unsafe can run.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// The blocked signal set.
#[derive(Clone, Copy)]
pub struct TermSignals(libc::sigset_t);

impl std::fmt::Debug for TermSignals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TermSignals(SIGINT, SIGTERM)")
    }
}

/// Blocks SIGINT and SIGTERM in the calling thread (threads spawned later inherit the mask).
pub fn block_term_signals() -> io::Result<TermSignals> {
    // SAFETY: `sigset_t` is a plain C type for which all-zero bytes are a valid value;
    // `sigemptyset` initialises it properly right after.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable `sigset_t`; these calls only write into it.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
    }
    // SAFETY: `set` is initialised; a null old-set pointer is allowed.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(TermSignals(set))
}

/// Gives SIGPIPE back its default action, for the commands whose only output is a report on
/// stdout (`config`, `analyze-trace`, `validate`): `ringperf config expand F | head` then ends
/// quietly when `head` closes the pipe, as Unix filters do, instead of panicking in `println!`
/// (Rust ignores SIGPIPE, so a write to a closed pipe is an error that `println!` turns into a
/// panic). Runs and servers keep it ignored: a closed stdout must not kill a measurement.
pub fn default_sigpipe() {
    // SAFETY: `signal` with `SIG_DFL` only resets the disposition of one signal; no handler
    // runs, so nothing async-signal-unsafe can happen, and no other thread exists yet.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Unblocks the signals again in the calling thread.
pub fn unblock(set: &TermSignals) {
    // SAFETY: `set.0` is an initialised `sigset_t`; a null old-set pointer is allowed.
    unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set.0, std::ptr::null_mut()) };
}

/// Waits until one of the blocked signals is pending, and consumes it.
pub fn wait_signal(set: &TermSignals) -> io::Result<()> {
    let mut sig: libc::c_int = 0;
    // SAFETY: `set.0` is an initialised `sigset_t` and `sig` is a valid, writable int.
    let rc = unsafe { libc::sigwait(&set.0, &mut sig) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Waits up to `timeout` for one of the blocked signals; returns its name when one came.
pub fn wait_signal_timeout(set: &TermSignals, timeout: Duration) -> Option<&'static str> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    // SAFETY: `set.0` is initialised, `ts` is a valid timespec, and a null siginfo pointer is
    // allowed; the call only reads them.
    let sig = unsafe { libc::sigtimedwait(&set.0, std::ptr::null_mut(), &ts) };
    match sig {
        libc::SIGINT => Some("SIGINT"),
        libc::SIGTERM => Some("SIGTERM"),
        _ => None,
    }
}

/// What ended a [`SignalWaiter::wait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waited {
    /// One of the blocked signals came (and was consumed).
    Signal(&'static str),
    /// Another thread called [`SignalWaiter::wake`].
    Woken,
}

/// Waits with no timeout for one of the blocked signals (through a `signalfd`) or for a wake from
/// another thread (an `eventfd`): the thread that waits sleeps until one of them comes.
#[derive(Debug)]
pub struct SignalWaiter {
    signal: OwnedFd,
    wake: OwnedFd,
}

impl SignalWaiter {
    /// A waiter for the signals of `set`, which must be blocked in every thread.
    pub fn new(set: &TermSignals) -> io::Result<Self> {
        // SAFETY: `set.0` is an initialised `sigset_t` the call only reads; -1 asks for a new
        // descriptor, whose ownership the `OwnedFd` below takes.
        let sfd = unsafe { libc::signalfd(-1, &set.0, libc::SFD_CLOEXEC) };
        if sfd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `sfd` was just created and is owned by nothing else.
        let signal = unsafe { OwnedFd::from_raw_fd(sfd) };
        // SAFETY: plain syscall with constant arguments; a negative return is handled below.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if efd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `efd` was just created and is owned by nothing else.
        let wake = unsafe { OwnedFd::from_raw_fd(efd) };
        Ok(Self { signal, wake })
    }

    /// Ends the current (or the next) [`SignalWaiter::wait`] with [`Waited::Woken`].
    pub fn wake(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: the descriptor is this waiter's open eventfd; the buffer is a live local of
        // the 8 bytes an eventfd write takes, only read by the call.
        unsafe { libc::write(self.wake.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }

    /// Sleeps until a signal or a wake comes. A signal is consumed; a wake stays (every later
    /// wait returns [`Waited::Woken`] at once).
    pub fn wait(&self) -> io::Result<Waited> {
        let mut fds = [
            libc::pollfd {
                fd: self.signal.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        loop {
            // SAFETY: `fds` is a live local array of two initialised `pollfd`, its length given;
            // the call writes only their `revents`.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if fds[0].revents & libc::POLLIN != 0 {
                return self.take_signal();
            }
            if fds[1].revents != 0 {
                return Ok(Waited::Woken);
            }
        }
    }

    /// Reads the pending signal off the signalfd.
    fn take_signal(&self) -> io::Result<Waited> {
        // SAFETY: all-zero bytes are a valid `signalfd_siginfo` (plain integers).
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        // SAFETY: `info` is a live, writable local of `size` bytes; the kernel writes at most
        // that many.
        let n = unsafe {
            libc::read(
                self.signal.as_raw_fd(),
                (&raw mut info).cast::<libc::c_void>(),
                size,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n != size as isize {
            return Err(io::Error::other("short read from the signalfd"));
        }
        Ok(Waited::Signal(match info.ssi_signo as libc::c_int {
            libc::SIGINT => "SIGINT",
            _ => "SIGTERM",
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wait with no timeout ends on a wake from another thread, and on a signal sent to the
    /// waiting thread (thread-directed, so that no other test thread can take it), naming it.
    #[test]
    fn a_waiter_sleeps_until_a_wake_or_a_signal() {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (next_tx, next_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            let set = block_term_signals().unwrap();
            let w = std::sync::Arc::new(SignalWaiter::new(&set).unwrap());
            ready_tx.send(w.clone()).unwrap();
            let first = w.wait().unwrap();
            next_rx.recv().unwrap();
            // A fresh waiter (the first one's wake stays set).
            let w2 = SignalWaiter::new(&set).unwrap();
            // SAFETY: sends SIGTERM to this very thread, where it is blocked: it stays pending
            // until the signalfd takes it.
            assert_eq!(unsafe { libc::raise(libc::SIGTERM) }, 0);
            let second = w2.wait().unwrap();
            unblock(&set);
            (first, second, w.wait().unwrap())
        });
        let w = ready_rx.recv().unwrap();
        w.wake();
        next_tx.send(()).unwrap();
        let (first, second, again) = t.join().unwrap();
        assert_eq!(first, Waited::Woken);
        assert_eq!(second, Waited::Signal("SIGTERM"));
        assert_eq!(again, Waited::Woken, "a wake stays");
    }
}
