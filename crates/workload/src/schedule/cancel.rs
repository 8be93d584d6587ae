//! Request cancellation (`--request-cancellation-rate` / `-delay`): which requests are cut, and
//! when. The decision is a pure function of (seed, phase, request index), so the dispatcher and
//! any worker compute the same answer without sharing a random stream.

use std::time::Duration;

use ringperf_wire::record::Phase;

use super::{child_seed, splitmix64};

/// The validated cancellation settings of a phase and the seed of its decisions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CancelPlan {
    /// A request is cut when its 64-bit draw is below this (`rate% · 2^64`).
    threshold: u64,
    /// Every cut request uses the same delay (AIPerf's rule).
    delay_ns: u64,
    seed: u64,
}

impl CancelPlan {
    /// `rate_pct` in (0, 100]; `delay` counted from the moment the request is fully written.
    pub fn new(rate_pct: f64, delay: Duration, root_seed: u64) -> Self {
        let p = (rate_pct / 100.0).clamp(0.0, 1.0);
        // 2^64 · p, saturating at the top so 100 % cuts every request.
        let threshold = if p >= 1.0 {
            u64::MAX
        } else {
            (p * 18_446_744_073_709_551_616.0) as u64
        };
        Self {
            threshold,
            delay_ns: u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX),
            seed: child_seed(root_seed, "timing.request.cancellation"),
        }
    }

    /// The delay after which request `index` of `phase` is cancelled, or `None` to let it
    /// finish. Warmup requests are never cancelled (AIPerf keeps warmup undisturbed).
    pub fn delay_for(&self, phase: Phase, index: u64) -> Option<u64> {
        if phase == Phase::Warmup || self.threshold == 0 {
            return None;
        }
        let draw = splitmix64(self.seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        (self.threshold == u64::MAX || draw < self.threshold).then_some(self.delay_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_the_requested_fraction_within_four_sigma() {
        let n = 100_000u64;
        for rate in [1.0, 12.5, 50.0, 90.0] {
            let c = CancelPlan::new(rate, Duration::from_millis(250), 42);
            let cut = (0..n)
                .filter_map(|i| c.delay_for(Phase::Profiling, i))
                .inspect(|d| assert_eq!(*d, 250_000_000))
                .count() as f64;
            let p = rate / 100.0;
            let sigma = (n as f64 * p * (1.0 - p)).sqrt();
            assert!(
                (cut - n as f64 * p).abs() < 4.0 * sigma,
                "rate {rate}: {cut} cut of {n}"
            );
        }
    }

    #[test]
    fn is_deterministic_and_seeded() {
        let a = CancelPlan::new(30.0, Duration::ZERO, 7);
        let b = CancelPlan::new(30.0, Duration::ZERO, 7);
        let c = CancelPlan::new(30.0, Duration::ZERO, 8);
        let pick = |p: &CancelPlan| -> Vec<bool> {
            (0..1000)
                .map(|i| p.delay_for(Phase::Profiling, i).is_some())
                .collect()
        };
        assert_eq!(pick(&a), pick(&b));
        assert_ne!(pick(&a), pick(&c));
        // Any order of asking gives the same answer.
        assert_eq!(
            a.delay_for(Phase::Profiling, 999),
            b.delay_for(Phase::Profiling, 999)
        );
        assert_eq!(
            a.delay_for(Phase::Profiling, 3),
            Some(0).filter(|_| pick(&a)[3])
        );
    }

    #[test]
    fn never_in_warmup_and_always_at_100() {
        let all = CancelPlan::new(100.0, Duration::from_secs(1), 1);
        assert!((0..1000).all(|i| all.delay_for(Phase::Profiling, i) == Some(1_000_000_000)));
        assert!((0..1000).all(|i| all.delay_for(Phase::Warmup, i).is_none()));
    }
}
