//! The Multi-Run group checked: how many times the profile runs, the pause between runs, the
//! confidence level of the aggregate, and whether later runs keep the warmup.

use std::time::Duration;

use super::{ConfigError, err};
use crate::cli::multi_run::MultiRunArgs;

/// Most runs AIPerf allows.
pub const MAX_RUNS: u32 = 10;

/// The seed `--set-consistent-seed` (the default) gives a repeated run without `--random-seed`.
pub const CONSISTENT_SEED: u64 = 42;

/// Repeated profile runs (`--num-profile-runs` over 1) and their aggregate.
#[derive(Clone, Debug, PartialEq)]
pub struct MultiRunConfig {
    /// How many times the whole profile runs (1: an ordinary single run).
    pub runs: u32,
    /// Pause between one run's end and the next one's start.
    pub cooldown: Duration,
    /// Confidence level of the intervals, in (0, 1).
    pub confidence_level: f64,
    /// The cooldown as given, in seconds (echoed as `cooldown_seconds` in the aggregate).
    pub cooldown_seconds: f64,
    /// Runs after the first have no warmup phase.
    pub warmup_first_run_only: bool,
    /// `--set-consistent-seed` (default on): a repeated run without `--random-seed` uses
    /// [`CONSISTENT_SEED`].
    pub consistent_seed: bool,
    /// Set by the runner on the configuration of each run of a repeated profile (never from
    /// the command line): the run's place, written in its `run_info`.
    pub trial: Option<ringperf_metrics::export::Trial>,
    /// `--convergence-*`: stop the runs early once the metric is stable (`runs` is the cap).
    pub convergence: Option<super::convergence::Convergence>,
}

impl Default for MultiRunConfig {
    fn default() -> Self {
        Self {
            runs: 1,
            cooldown: Duration::ZERO,
            confidence_level: 0.95,
            cooldown_seconds: 0.0,
            warmup_first_run_only: true,
            consistent_seed: true,
            trial: None,
            convergence: None,
        }
    }
}

impl MultiRunConfig {
    /// Checks the Multi-Run flags.
    pub fn from_args(a: &MultiRunArgs) -> Result<Self, ConfigError> {
        if !(1..=MAX_RUNS).contains(&a.num_profile_runs) {
            return err(format!(
                "--num-profile-runs must be between 1 and {MAX_RUNS} (got {})",
                a.num_profile_runs
            ));
        }
        let level = a.confidence_level;
        if !(level > 0.0 && level < 1.0) {
            return err(format!(
                "--confidence-level must be strictly between 0 and 1, e.g. 0.90, 0.95 or 0.99 \
                 (got {level})"
            ));
        }
        let secs = a.profile_run_cooldown_seconds;
        if !(secs.is_finite() && secs >= 0.0) {
            return err(format!(
                "--profile-run-cooldown-seconds must be a non-negative number of seconds (got \
                 {secs})"
            ));
        }
        // Each pair is "last one wins" (clap's overrides_with): at most one of the two is set.
        Ok(Self {
            runs: a.num_profile_runs,
            cooldown: Duration::from_secs_f64(secs),
            confidence_level: level,
            cooldown_seconds: secs,
            warmup_first_run_only: !a.warmup_every_run,
            consistent_seed: !a.no_consistent_seed,
            trial: None,
            convergence: None,
        })
    }

    /// More than one run: the profile is repeated and aggregated.
    pub fn is_repeated(&self) -> bool {
        self.runs > 1
    }

    /// The seed a repeated run uses when none was given: [`CONSISTENT_SEED`] unless
    /// `--no-set-consistent-seed`.
    pub fn default_seed(&self) -> Option<u64> {
        (self.is_repeated() && self.consistent_seed).then_some(CONSISTENT_SEED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(runs: u32, secs: f64, level: f64) -> MultiRunArgs {
        MultiRunArgs {
            num_profile_runs: runs,
            profile_run_cooldown_seconds: secs,
            confidence_level: level,
            ..MultiRunArgs::default()
        }
    }

    #[test]
    fn bounds() {
        assert!(MultiRunConfig::from_args(&args(1, 0.0, 0.95)).is_ok());
        assert!(MultiRunConfig::from_args(&args(10, 2.5, 0.99)).is_ok());
        let e = MultiRunConfig::from_args(&args(0, 0.0, 0.95)).unwrap_err();
        assert!(e.message().contains("between 1 and 10"), "{e}");
        assert!(MultiRunConfig::from_args(&args(11, 0.0, 0.95)).is_err());
        for bad in [0.0, 1.0, -0.5, 1.5, f64::NAN] {
            let e = MultiRunConfig::from_args(&args(3, 0.0, bad)).unwrap_err();
            assert!(e.message().contains("--confidence-level"), "{e}");
        }
        for bad in [-1.0, f64::INFINITY, f64::NAN] {
            assert!(MultiRunConfig::from_args(&args(3, bad, 0.95)).is_err());
        }
    }

    #[test]
    fn consistent_seed_only_for_repeated_runs() {
        let one = MultiRunConfig::from_args(&args(1, 0.0, 0.95)).unwrap();
        assert_eq!(one.default_seed(), None);
        let three = MultiRunConfig::from_args(&args(3, 0.0, 0.95)).unwrap();
        assert_eq!(three.default_seed(), Some(42));
        let off = MultiRunConfig::from_args(&MultiRunArgs {
            no_consistent_seed: true,
            ..args(3, 0.0, 0.95)
        })
        .unwrap();
        assert_eq!(off.default_seed(), None);
        assert!(three.warmup_first_run_only);
    }
}
