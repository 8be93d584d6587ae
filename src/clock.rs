//! The one clock of a run: `u64` nanoseconds on `CLOCK_MONOTONIC` since an origin taken at
//! start, plus one wall-clock anchor to convert monotonic stamps to epoch nanoseconds for exports.
//!
//! [`monotonic_raw_ns`] is the same clock without the origin; the mock server's truth log uses it,
//! so a client stamp and a server stamp taken on one machine can be compared directly.

use std::time::{SystemTime, UNIX_EPOCH};

/// `CLOCK_MONOTONIC` in nanoseconds (the clock `std::time::Instant` uses on Linux).
#[inline]
pub fn monotonic_raw_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and CLOCK_MONOTONIC is always supported on
    // Linux; the call only writes into `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time the calling thread has used so far, in ns (`CLOCK_THREAD_CPUTIME_ID`: user and
/// system time, the scheduler's own account of the thread, exact to the nanosecond). Each thread
/// of a run reads it once as it ends, for `ringperf.threads` in the summary JSON.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and CLOCK_THREAD_CPUTIME_ID is always supported
    // on Linux for the calling thread; the call only writes into `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wall-clock epoch nanoseconds now.
pub fn wall_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// A monotonic origin with its wall-clock anchor. Cheap to copy; every thread holds one.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin_raw_ns: u64,
    wall_origin_ns: u64,
}

impl Clock {
    /// Takes the origin now.
    pub fn start() -> Self {
        let origin_raw_ns = monotonic_raw_ns();
        let wall_origin_ns = wall_now_ns();
        Self {
            origin_raw_ns,
            wall_origin_ns,
        }
    }

    /// Monotonic nanoseconds since the origin.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        monotonic_raw_ns().saturating_sub(self.origin_raw_ns)
    }

    /// Converts a stamp of this clock to raw `CLOCK_MONOTONIC` ns (the mock's truth-log scale).
    #[inline]
    pub fn raw_ns(&self, mono_ns: u64) -> u64 {
        self.origin_raw_ns + mono_ns
    }

    /// Converts a monotonic stamp to wall-clock epoch nanoseconds.
    #[inline]
    pub fn wall_ns(&self, mono_ns: u64) -> u64 {
        self.wall_origin_ns + mono_ns
    }

    /// Wall-clock epoch nanoseconds of the origin.
    pub fn wall_origin_ns(&self) -> u64 {
        self.wall_origin_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_time_counts_work_not_sleep() {
        let t0 = thread_cpu_ns();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(5) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let t1 = thread_cpu_ns();
        assert!(t1 > t0, "a busy thread's CPU time grows");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let t2 = thread_cpu_ns();
        // Sleeping costs (almost) no CPU: far less than the 20 ms slept.
        assert!(t2 - t1 < 10_000_000, "slept 20 ms, charged {} ns", t2 - t1);
    }

    #[test]
    fn monotonic_and_anchored() {
        let c = Clock::start();
        let a = c.now_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = c.now_ns();
        assert!(b >= a + 2_000_000, "{a} {b}");
        assert_eq!(c.wall_ns(5), c.wall_origin_ns() + 5);
        assert!(c.wall_origin_ns() > 1_600_000_000_000_000_000);
        // The run's stamps convert to the raw scale within well under a millisecond.
        let raw = monotonic_raw_ns();
        let via_clock = c.raw_ns(c.now_ns());
        assert!(raw.abs_diff(via_clock) < 1_000_000);
    }
}
