//! SIGINT / SIGTERM without handlers: the signals are blocked in the calling thread before any
//! other thread is spawned (so every thread inherits the mask and none is interrupted), and one
//! thread takes them synchronously with `sigwait` / `sigtimedwait`. Nothing async-signal-unsafe
//! can run.

use std::io;
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
