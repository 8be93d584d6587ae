//! The process's descriptor limit and the kernel's accept-queue cap.
//!
//! An open-loop run at tens of thousands of requests a second holds one socket per request in
//! flight, and the mock one per connection; the soft `RLIMIT_NOFILE` (often 1024) is far below
//! what either needs while the hard limit usually is not. [`raise_nofile`] lifts the soft limit
//! to the hard one once at start (client and mock); [`somaxconn`] is the largest listen backlog
//! the kernel honours, which the mock asks for so that a burst of connects is not answered with
//! dropped SYNs (and a one-second retransmission) at a full accept queue.

use std::io;

/// The soft and hard `RLIMIT_NOFILE` after raising the soft limit to the hard one (a soft
/// limit already at the hard one is left alone).
pub fn raise_nofile() -> io::Result<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable local `rlimit`; the call writes only into it.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `raised` is a valid local `rlimit` read only by the call; raising the soft
        // limit up to the hard one needs no privilege and changes no memory of ours.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            return Err(io::Error::last_os_error());
        }
        lim = raised;
    }
    Ok((lim.rlim_cur, lim.rlim_max))
}

/// The kernel's cap on a listen backlog (`/proc/sys/net/core/somaxconn`), 4096 when it cannot
/// be read (the kernel default since Linux 5.4).
pub fn somaxconn() -> i32 {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raising_leaves_the_soft_limit_at_the_hard_one() {
        let (soft, hard) = raise_nofile().expect("getrlimit/setrlimit");
        assert_eq!(soft, hard);
        // Raising twice is a no-op, not an error.
        assert_eq!(raise_nofile().expect("second raise"), (soft, hard));
    }

    #[test]
    fn somaxconn_is_positive() {
        assert!(somaxconn() > 0);
    }
}
