//! Ramps (`--request-rate-ramp-duration`, `--concurrency-ramp-duration` and their warmup
//! variants), as AIPerf 0.13 runs them (`timing/ramping.py`, `timing/phase/runner.py`):
//!
//! - **Rate**: linear, continuous mode. The rate is `start = target · u / D` from the phase
//!   start (`u` = the update interval, 100 ms, `AIPERF_TIMING_RATE_RAMP_UPDATE_INTERVAL`), and
//!   at every update `k·u` (k ≥ 1) becomes `start + (target − start) · k·u / D`, or `target`
//!   once `k·u ≥ D` (the last update). Between updates the rate is constant.
//! - **Concurrency**: linear, discrete mode from 1 to `N` in steps of 1: the limit becomes `k`
//!   at `D · (k − 1) / (N − 1)`, so slot `i` (0-based) may start at `D · i / (N − 1)`.

use std::time::Duration;

/// AIPerf's rate-ramp update interval (`AIPERF_TIMING_RATE_RAMP_UPDATE_INTERVAL`, 0.1 s).
pub const RATE_RAMP_UPDATE_NS: u64 = 100_000_000;

/// A linear request-rate ramp from `target · u / D` to `target` over `D`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateRamp {
    target: f64,
    start: f64,
    duration_ns: f64,
    update_ns: f64,
}

impl RateRamp {
    pub fn new(target: f64, duration: Duration) -> Self {
        let duration_ns = duration.as_nanos() as f64;
        let update_ns = RATE_RAMP_UPDATE_NS as f64;
        Self {
            target,
            start: target * (update_ns / duration_ns.max(1.0)),
            duration_ns,
            update_ns,
        }
    }

    /// The rate in force from the phase start until the first update.
    pub fn start_rate(&self) -> f64 {
        self.start
    }

    /// Time of update `k` (k ≥ 1) from the phase start, in ns.
    pub fn update_at_ns(&self, k: u64) -> f64 {
        k as f64 * self.update_ns
    }

    /// The rate set by update `k` (k ≥ 1), and whether it is the last one.
    pub fn rate_after_update(&self, k: u64) -> (f64, bool) {
        let t = self.update_at_ns(k);
        if t >= self.duration_ns {
            (self.target, true)
        } else {
            (
                self.start + (self.target - self.start) * (t / self.duration_ns),
                false,
            )
        }
    }
}

/// When slot `slot` (0-based) of `slots` may first start under a concurrency ramp of
/// `duration`, in ns from the phase start. Slot 0 starts at once; with one slot there is no
/// ramp.
pub fn concurrency_slot_start_ns(slot: u64, slots: u64, duration: Duration) -> u64 {
    if slots <= 1 || slot == 0 {
        return 0;
    }
    let slot = slot.min(slots - 1);
    let d = duration.as_nanos() as f64;
    (d * slot as f64 / (slots - 1) as f64).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_curve_is_aiperf_linear_continuous() {
        // Target 10/s over 1 s, updates every 100 ms: start = 10 · 0.1 / 1 = 1/s.
        // (`Arrivals::ramped` reads the ramp through these three calls.)
        let r = RateRamp::new(10.0, Duration::from_secs(1));
        assert_eq!(r.start_rate(), 1.0);
        // Update k at k·100 ms sets 1 + 9 · k/10; update 10 (at 1 s) is the last, at the target.
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        for (k, at_ns, rate) in [(1, 1e8, 1.9), (5, 5e8, 5.5), (9, 9e8, 9.1)] {
            assert_eq!(r.update_at_ns(k), at_ns);
            let (got, last) = r.rate_after_update(k);
            assert!(close(got, rate) && !last, "update {k}: {got}, last {last}");
        }
        assert_eq!(r.update_at_ns(10), 1e9);
        assert_eq!(r.rate_after_update(10), (10.0, true));
        assert_eq!(r.rate_after_update(11), (10.0, true));
    }

    #[test]
    fn start_rate_is_proportional_below_one_qps() {
        let r = RateRamp::new(0.5, Duration::from_secs(10));
        assert!((r.start_rate() - 0.005).abs() < 1e-12);
    }

    #[test]
    fn concurrency_slots_start_evenly() {
        let d = Duration::from_secs(3);
        let v: Vec<u64> = (0..4).map(|i| concurrency_slot_start_ns(i, 4, d)).collect();
        assert_eq!(v, vec![0, 1_000_000_000, 2_000_000_000, 3_000_000_000]);
        assert_eq!(concurrency_slot_start_ns(0, 1, d), 0);
        assert_eq!(
            concurrency_slot_start_ns(2, 3, Duration::from_secs(1)),
            1_000_000_000
        );
        assert_eq!(
            concurrency_slot_start_ns(1, 3, Duration::from_secs(1)),
            500_000_000
        );
    }
}
