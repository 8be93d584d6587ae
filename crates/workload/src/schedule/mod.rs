//! Where credits come from: the arrival process of open-loop phases, the shared counter of
//! closed-loop phases, and which dataset entry each request sends.
//!
//! Open-loop times are absolute: request `i` is meant to go at `phase_start + Σ intervals`, never
//! "interval after the previous send", so a slow client shows up as dispatch lag instead of a
//! silently lower rate (coordinated omission).

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Exp1, Gamma};

use ringperf_wire::conversation::Sampling;

pub mod agentic;
pub mod cancel;
pub mod fixed;
pub mod ramp;
pub mod series;
pub mod shard;
pub mod user_centric;

pub use cancel::CancelPlan;
pub use fixed::{FixedSchedule, Replay, ScheduleEntry, ScheduleError, Window, after_delay_ns};
pub use ramp::{RATE_RAMP_UPDATE_NS, RateRamp, concurrency_slot_start_ns};
pub use series::{RateSeries, SeriesError};
pub use shard::Shard;
pub use user_centric::{InitialUser, Spawner, UserCentric};

/// Derives an independent seed for a named stream from the run's root seed (FNV-1a of the
/// name mixed with the seed through SplitMix64), so every random choice is reproducible alone.
pub fn child_seed(root: u64, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    splitmix64(root ^ h)
}

pub(crate) fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Inter-arrival distribution of an open-loop phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrival {
    Constant,
    Poisson,
    /// Gamma with shape `smoothness` (1.0 = Poisson).
    Gamma {
        smoothness: f64,
    },
}

/// Inter-arrival times of an open-loop phase, in nanoseconds.
#[derive(Debug)]
pub struct Arrivals {
    rng: StdRng,
    kind: ArrivalKind,
    /// Requests per second in force.
    rate: f64,
    /// Offset of the next request, as f64 ns (kept in float so rounding never accumulates).
    offset_ns: f64,
    /// A request-rate ramp and the index of its next update.
    ramp: Option<(RateRamp, u64)>,
    /// A request-rate series, its start offset in ns, and the index of its next update.
    series: Option<(Arc<RateSeries>, f64, u64)>,
}

/// Interval distributions at rate 1/s (scaled by `1e9 / rate` when drawn).
#[derive(Debug)]
enum ArrivalKind {
    Constant,
    Poisson(Exp1),
    /// Shape k, scale 1/k: mean 1, variance 1/k.
    Gamma(Gamma<f64>),
}

fn valid_rate(rate: f64) -> f64 {
    if rate.is_finite() && rate > 0.0 {
        rate
    } else {
        1.0
    }
}

impl Arrivals {
    /// Arrivals at `rate` per second. The first request goes at offset 0.
    pub fn new(rate: f64, arrival: Arrival, seed: u64) -> Self {
        let kind = match arrival {
            Arrival::Constant => ArrivalKind::Constant,
            Arrival::Poisson => ArrivalKind::Poisson(Exp1),
            Arrival::Gamma { smoothness } => match Gamma::new(smoothness, 1.0 / smoothness) {
                Ok(d) => ArrivalKind::Gamma(d),
                Err(_) => ArrivalKind::Constant,
            },
        };
        Self {
            rng: StdRng::seed_from_u64(seed),
            kind,
            rate: valid_rate(rate),
            offset_ns: 0.0,
            ramp: None,
            series: None,
        }
    }

    /// Arrivals whose rate follows `ramp` (AIPerf's linear rate ramp). The first request goes
    /// at offset 0; at every ramp update that changes the rate, the pending request moves to
    /// `min(its time, update time + one interval at the new rate)`, as AIPerf's rate loop
    /// reschedules on a rate change. Times stay absolute from the phase start.
    pub fn ramped(ramp: RateRamp, arrival: Arrival, seed: u64) -> Self {
        let mut a = Self::new(ramp.start_rate(), arrival, seed);
        a.ramp = Some((ramp, 1));
        a
    }

    /// Makes the rate follow `series` from `start` after the phase start (the end of a rate
    /// ramp, else 0): its update `k` is applied at `start + k · 100 ms` as a ramp update is
    /// (below). Call before the first [`Arrivals::next_offset_ns`].
    pub fn follow_series(&mut self, series: Arc<RateSeries>, start: std::time::Duration) {
        if self.ramp.is_none() {
            self.rate = valid_rate(series.initial_qps());
        }
        self.series = Some((series, start.as_nanos() as f64, 0));
    }

    /// The earliest pending rate update, its time and its rate, consumed (the ramp's first on a
    /// tie); `None` when none is left or the earliest is not before `before`.
    fn next_update(&mut self, before: f64) -> Option<(f64, f64)> {
        let ramp_at = self.ramp.map(|(r, k)| r.update_at_ns(k));
        let series_at = (self.series.as_ref()).map(|(_, s0, k)| s0 + RateSeries::update_at_ns(*k));
        let from_ramp = match (ramp_at, series_at) {
            (Some(r), Some(s)) => r <= s,
            (r, s) => r.is_some() && s.is_none(),
        };
        if from_ramp {
            let (ramp, k) = self.ramp?;
            let t = ramp.update_at_ns(k);
            if t >= before {
                return None;
            }
            let (rate, last) = ramp.rate_after_update(k);
            self.ramp = (!last).then_some((ramp, k + 1));
            Some((t, rate))
        } else {
            let (series, s0, k) = self.series.as_mut()?;
            let t = *s0 + RateSeries::update_at_ns(*k);
            if t >= before {
                return None;
            }
            let (rate, last) = series.rate_after_update(*k);
            *k += 1;
            if last {
                self.series = None;
            }
            Some((t, rate))
        }
    }

    fn interval_ns(&mut self) -> f64 {
        let unit = match &self.kind {
            ArrivalKind::Constant => 1.0,
            ArrivalKind::Poisson(d) => d.sample(&mut self.rng),
            ArrivalKind::Gamma(d) => d.sample(&mut self.rng),
        };
        unit * 1e9 / self.rate
    }

    /// Sets the rate from `at_ns` after the phase start on (an adaptive phase's controller):
    /// the next request not yet drawn moves to `min(its time, at + one interval at the new
    /// rate)`, as a ramp update moves it.
    pub fn set_rate(&mut self, at_ns: u64, rate: f64) {
        let rate = valid_rate(rate);
        if rate != self.rate {
            self.rate = rate;
            let next = at_ns as f64 + self.interval_ns();
            self.offset_ns = self.offset_ns.min(next);
        }
    }

    /// Offset from the phase start of the next request, in ns.
    pub fn next_offset_ns(&mut self) -> u64 {
        let mut at = self.offset_ns;
        while let Some((t, rate)) = self.next_update(at) {
            let rate = valid_rate(rate);
            if rate != self.rate {
                self.rate = rate;
                at = at.min(t + self.interval_ns());
            }
        }
        self.offset_ns = at + self.interval_ns();
        at as u64
    }
}

/// Which conversation new session `i` runs, by `--dataset-sampling-strategy` (docs/datasets.md):
/// `sequential` walks the dataset in order and wraps; `random` draws with replacement; `shuffle`
/// uses every conversation once per pass in a random order, reshuffled every pass (the synthetic
/// default). Deterministic for a seed, and computable by any thread for any index.
#[derive(Debug, Clone)]
pub struct TemplatePicker {
    n: u32,
    seed: u64,
    sampling: Sampling,
    epoch: u64,
    perm: Vec<u32>,
}

impl TemplatePicker {
    /// A shuffling picker over `n` conversations.
    pub fn new(n: usize, seed: u64) -> Self {
        Self::with_sampling(n, seed, Sampling::Shuffle)
    }

    pub fn with_sampling(n: usize, seed: u64, sampling: Sampling) -> Self {
        let n = u32::try_from(n.max(1)).unwrap_or(u32::MAX);
        let mut p = Self {
            n,
            seed,
            sampling,
            epoch: u64::MAX,
            perm: Vec::new(),
        };
        if sampling == Sampling::Shuffle {
            p.load_epoch(0);
        }
        p
    }

    fn load_epoch(&mut self, epoch: u64) {
        self.perm.clear();
        self.perm.extend(0..self.n);
        let mut rng = StdRng::seed_from_u64(splitmix64(self.seed ^ epoch.wrapping_mul(0x9e37)));
        for i in (1..self.perm.len()).rev() {
            let j = rng.random_range(0..=i);
            self.perm.swap(i, j);
        }
        self.epoch = epoch;
    }

    /// Conversation of session `index` (cheap when indices arrive roughly in order).
    pub fn pick(&mut self, index: u64) -> u32 {
        let n = u64::from(self.n);
        match self.sampling {
            Sampling::Sequential => (index % n) as u32,
            Sampling::Random => (splitmix64(self.seed ^ splitmix64(index)) % n) as u32,
            Sampling::Shuffle => {
                let epoch = index / n;
                if epoch != self.epoch {
                    self.load_epoch(epoch);
                }
                self.perm[(index % n) as usize]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_is_exact_and_absolute() {
        let mut a = Arrivals::new(3.0, Arrival::Constant, 1);
        let v: Vec<u64> = (0..4).map(|_| a.next_offset_ns()).collect();
        assert_eq!(v, vec![0, 333_333_333, 666_666_666, 1_000_000_000]);
    }

    fn mean_and_cv(arrival: Arrival) -> (f64, f64) {
        let mut a = Arrivals::new(1000.0, arrival, 42);
        let offs: Vec<f64> = (0..20_001).map(|_| a.next_offset_ns() as f64).collect();
        let d: Vec<f64> = offs.windows(2).map(|w| w[1] - w[0]).collect();
        let m = d.iter().sum::<f64>() / d.len() as f64;
        let var = d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / d.len() as f64;
        (m, var.sqrt() / m)
    }

    #[test]
    fn poisson_and_gamma_have_the_right_moments() {
        // Mean interval 1 ms; CV 1 for Poisson, 1/sqrt(k) for gamma. 20k samples: the standard
        // error of the mean is 1/sqrt(20000) ≈ 0.7 % of it, so 3 % bounds are > 4 sigma.
        let (m, cv) = mean_and_cv(Arrival::Poisson);
        assert!((m / 1e6 - 1.0).abs() < 0.03, "mean {m}");
        assert!((cv - 1.0).abs() < 0.05, "cv {cv}");
        let (m, cv) = mean_and_cv(Arrival::Gamma { smoothness: 4.0 });
        assert!((m / 1e6 - 1.0).abs() < 0.03, "mean {m}");
        assert!((cv - 0.5).abs() < 0.03, "cv {cv}");
    }

    #[test]
    fn arrivals_are_seeded() {
        let mut a = Arrivals::new(50.0, Arrival::Poisson, 7);
        let mut b = Arrivals::new(50.0, Arrival::Poisson, 7);
        let mut c = Arrivals::new(50.0, Arrival::Poisson, 8);
        let va: Vec<u64> = (0..10).map(|_| a.next_offset_ns()).collect();
        let vb: Vec<u64> = (0..10).map(|_| b.next_offset_ns()).collect();
        let vc: Vec<u64> = (0..10).map(|_| c.next_offset_ns()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
    }

    #[test]
    fn picker_uses_every_entry_once_per_pass() {
        let mut p = TemplatePicker::new(7, 3);
        for pass in 0..3u64 {
            let mut seen: Vec<u32> = (0..7).map(|i| p.pick(pass * 7 + i)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..7).collect::<Vec<_>>());
        }
        // Any thread computing the same index gets the same entry.
        let mut q = TemplatePicker::new(7, 3);
        assert_eq!(q.pick(15), p.pick(15));
        assert_eq!(q.pick(2), TemplatePicker::new(7, 3).pick(2));
    }

    #[test]
    fn sequential_and_random_sampling() {
        let mut s = TemplatePicker::with_sampling(3, 9, Sampling::Sequential);
        let v: Vec<u32> = (0..7).map(|i| s.pick(i)).collect();
        assert_eq!(v, [0, 1, 2, 0, 1, 2, 0]);
        // Random: uniform within 5 sigma, the same for a seed and index.
        let mut r = TemplatePicker::with_sampling(4, 9, Sampling::Random);
        let draws: Vec<u32> = (0..4000).map(|i| r.pick(i)).collect();
        let mut counts = [0u32; 4];
        for &d in &draws {
            counts[d as usize] += 1;
        }
        // Binomial(4000, 1/4): sigma = sqrt(4000 * 0.25 * 0.75) ≈ 27.4.
        assert!(
            counts.iter().all(|&c| (c as i64 - 1000).abs() < 137),
            "{counts:?}"
        );
        let mut again = TemplatePicker::with_sampling(4, 9, Sampling::Random);
        assert_eq!(again.pick(1234), draws[1234]);
    }

    #[test]
    fn child_seeds_differ_by_name() {
        assert_ne!(child_seed(1, "a"), child_seed(1, "b"));
        assert_eq!(child_seed(1, "a"), child_seed(1, "a"));
        assert_ne!(child_seed(1, "a"), child_seed(2, "a"));
    }
}
