//! The one clock of a run: `u64` nanoseconds on `CLOCK_MONOTONIC` since an origin taken at
//! start, plus one wall-clock anchor to convert monotonic stamps to epoch nanoseconds for exports.
//!
//! [`monotonic_raw_ns`] is the same clock without the origin; the mock server's truth log uses it,
//! so a client stamp and a server stamp taken on one machine can be compared directly.
//!
//! The kernel stamps received data on `CLOCK_REALTIME` (`SO_TIMESTAMPING` software stamps). The
//! offset from `CLOCK_REALTIME` to `CLOCK_MONOTONIC` is calibrated once, at [`Clock::start`]
//! ([`RealtimeOffset`]), and converts those stamps to the run's clock. The two clocks run at the
//! same rate (NTP slews both alike), so the offset holds until someone steps the wall clock.

use std::time::{SystemTime, UNIX_EPOCH};

/// `CLOCK_MONOTONIC` in nanoseconds (the clock `std::time::Instant` uses on Linux).
#[inline]
pub fn monotonic_raw_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time the calling thread has used so far, in ns (`CLOCK_THREAD_CPUTIME_ID`: user and
/// system time, the scheduler's own account of the thread, exact to the nanosecond). Each thread
/// of a run reads it once as it ends, for `ringperf.threads` in the summary JSON.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Time the calling thread has spent runnable but waiting for a CPU (another thread had it), ns:
/// the scheduler's own account, the second field of `/proc/thread-self/schedstat`. `None` where
/// the kernel does not keep it. A thread reads it as it ends, for the client-health verdict.
pub fn thread_run_queue_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// Wall-clock epoch nanoseconds now.
pub fn wall_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// `clock_gettime(id)` in nanoseconds (0 if the clock is not supported): `CLOCK_MONOTONIC` and the
/// calling thread's CPU clock always exist on Linux; `CLOCK_REALTIME` for the calibration.
#[inline]
fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes into it, and an
    // unsupported clock id makes it fail without writing (`ts` stays zero).
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Readings of `CLOCK_REALTIME` bracketed by `CLOCK_MONOTONIC` readings taken by [`RealtimeOffset::calibrate`].
const CALIBRATION_PAIRS: usize = 16;

/// `CLOCK_REALTIME − CLOCK_MONOTONIC`, measured once: converts a kernel receive stamp
/// (`CLOCK_REALTIME`) to raw `CLOCK_MONOTONIC` ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RealtimeOffset {
    /// Realtime ns minus monotonic ns of the same instant.
    pub offset_ns: u64,
    /// Half the width of the tightest bracket: the offset is exact within ± this.
    pub uncertainty_ns: u64,
}

impl RealtimeOffset {
    /// Reads `CLOCK_REALTIME` between two `CLOCK_MONOTONIC` readings several times and keeps the
    /// tightest bracket, pairing the realtime reading with the bracket's midpoint.
    pub fn calibrate() -> Self {
        Self::tightest((0..CALIBRATION_PAIRS).map(|_| {
            let before = monotonic_raw_ns();
            let real = clock_ns(libc::CLOCK_REALTIME);
            let after = monotonic_raw_ns();
            (before, real, after)
        }))
    }

    /// A `CLOCK_REALTIME` stamp as raw `CLOCK_MONOTONIC` ns (`None`: before the monotonic
    /// clock's zero, i.e. not a stamp of this boot).
    #[must_use]
    pub fn to_monotonic_raw(self, realtime_ns: u64) -> Option<u64> {
        realtime_ns.checked_sub(self.offset_ns)
    }

    /// The offset of the tightest of `(monotonic before, realtime, monotonic after)` readings.
    fn tightest(readings: impl Iterator<Item = (u64, u64, u64)>) -> Self {
        let best = readings
            .filter(|&(before, _, after)| after >= before)
            .min_by_key(|&(before, _, after)| after - before);
        match best {
            Some((before, real, after)) => {
                let mid = before + (after - before) / 2;
                Self {
                    offset_ns: real.saturating_sub(mid),
                    uncertainty_ns: (after - before).div_ceil(2),
                }
            }
            None => Self {
                offset_ns: 0,
                uncertainty_ns: u64::MAX,
            },
        }
    }
}

/// A monotonic origin with its wall-clock anchor and the realtime offset. Cheap to copy; every
/// thread holds one.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin_raw_ns: u64,
    wall_origin_ns: u64,
    realtime: RealtimeOffset,
}

impl Clock {
    /// Takes the origin now and calibrates the realtime offset.
    pub fn start() -> Self {
        let realtime = RealtimeOffset::calibrate();
        let origin_raw_ns = monotonic_raw_ns();
        let wall_origin_ns = wall_now_ns();
        Self {
            origin_raw_ns,
            wall_origin_ns,
            realtime,
        }
    }

    /// The realtime offset calibrated at start.
    pub fn realtime_offset(&self) -> RealtimeOffset {
        self.realtime
    }

    /// Converts a `CLOCK_REALTIME` stamp (a kernel receive stamp) to this clock; `None` when it
    /// falls before the origin (a stamp from before the run, or a wall clock stepped back).
    #[inline]
    pub fn from_realtime_ns(&self, realtime_ns: u64) -> Option<u64> {
        realtime_ns
            .checked_sub(self.realtime.offset_ns)?
            .checked_sub(self.origin_raw_ns)
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
        // The run's stamps convert to the raw scale within well under a millisecond: a raw
        // reading lies between the converted stamps taken just before and just after it (the
        // bracket, not a bound on how fast two reads follow each other, so a preempted thread
        // cannot fail it).
        let before = c.raw_ns(c.now_ns());
        let raw = monotonic_raw_ns();
        let after = c.raw_ns(c.now_ns());
        assert!(
            before.saturating_sub(1_000_000) <= raw && raw <= after + 1_000_000,
            "{before} <= {raw} <= {after}"
        );
    }

    #[test]
    fn the_tightest_bracket_wins() {
        let readings = [(100, 5_000, 180), (200, 5_110, 210), (300, 5_300, 400)];
        let o = RealtimeOffset::tightest(readings.into_iter());
        assert_eq!(
            o,
            RealtimeOffset {
                offset_ns: 4_905,
                uncertainty_ns: 5
            }
        );
        // A bracket running backwards is no reading; none at all leaves the offset unknown.
        let o = RealtimeOffset::tightest([(10, 50, 5)].into_iter());
        assert_eq!(o.uncertainty_ns, u64::MAX);
    }

    #[test]
    fn realtime_stamps_convert_to_the_run_clock() {
        let c = Clock::start();
        let o = c.realtime_offset();
        assert_ne!(o.uncertainty_ns, u64::MAX, "{o:?}");
        let before = c.now_ns();
        let converted = c.from_realtime_ns(clock_ns(libc::CLOCK_REALTIME)).unwrap();
        let after = c.now_ns();
        let slack = o.uncertainty_ns;
        assert!(
            converted + slack >= before && converted <= after + slack,
            "{before} {converted} {after}"
        );
        // Before the origin: no stamp rather than a wrapped one.
        assert_eq!(c.from_realtime_ns(o.offset_ns), None);
        assert_eq!(c.from_realtime_ns(0), None);
    }
}
