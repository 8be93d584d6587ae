//! The Multi-Run group: repeat the whole profile and report confidence intervals across the
//! runs (`--num-profile-runs` and its companions, docs/flags.md "Multi-Run"). Checked in
//! `config::multi_run`.

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MultiRunArgs {
    /// Number of profile runs (1-10). Over 1, each run goes into
    /// `<artifact-dir>/profile_runs/run_NNNN/` and `<artifact-dir>/aggregate/` gets the mean,
    /// std, CV and confidence interval of every metric across the runs.
    #[arg(
        long = "num-profile-runs",
        default_value_t = 1,
        help_heading = "Multi-Run"
    )]
    pub num_profile_runs: u32,

    /// Pause between profile runs, in seconds (only with --num-profile-runs over 1).
    #[arg(
        long = "profile-run-cooldown-seconds",
        default_value_t = 0.0,
        help_heading = "Multi-Run"
    )]
    pub profile_run_cooldown_seconds: f64,

    /// Confidence level of the intervals, strictly between 0 and 1 (only with
    /// --num-profile-runs over 1).
    #[arg(
        long = "confidence-level",
        default_value_t = 0.95,
        help_heading = "Multi-Run"
    )]
    pub confidence_level: f64,

    /// Only the first run has the warmup phase (the default; only with --num-profile-runs over
    /// 1).
    #[arg(
        long = "profile-run-disable-warmup-after-first",
        overrides_with = "warmup_every_run",
        help_heading = "Multi-Run"
    )]
    pub disable_warmup_after_first: bool,

    /// Every run has the warmup phase.
    #[arg(
        long = "no-profile-run-disable-warmup-after-first",
        overrides_with = "disable_warmup_after_first",
        help_heading = "Multi-Run"
    )]
    pub warmup_every_run: bool,

    /// Use --random-seed 42 when no seed is given, so every run sends the same workload (the
    /// default; only with --num-profile-runs over 1).
    #[arg(
        long = "set-consistent-seed",
        overrides_with = "no_consistent_seed",
        help_heading = "Multi-Run"
    )]
    pub set_consistent_seed: bool,

    /// Leave the seed unset: each run draws its own workload.
    #[arg(
        long = "no-set-consistent-seed",
        overrides_with = "set_consistent_seed",
        help_heading = "Multi-Run"
    )]
    pub no_consistent_seed: bool,
}

impl Default for MultiRunArgs {
    /// The flags' defaults: one run.
    fn default() -> Self {
        Self {
            num_profile_runs: 1,
            profile_run_cooldown_seconds: 0.0,
            confidence_level: 0.95,
            disable_warmup_after_first: false,
            warmup_every_run: false,
            set_consistent_seed: false,
            no_consistent_seed: false,
        }
    }
}
