//! The sweep flags of `profile` (AIPerf 0.13's Multi-Run sweep group, docs/sweeps.md): how list
//! values (`--concurrency 1,2,4`) and `--variant` become variations, the order and seeds of the
//! runs, and adaptive convergence of the trials. Checked and expanded in `crate::sweep`.

use clap::{Args, ValueEnum};

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SweepArgs {
    /// How several list-valued flags combine: `grid` (every combination) or `zip` (element by
    /// element; the lists must have equal length).
    #[arg(
        long = "sweep-type",
        value_enum,
        ignore_case = true,
        help_heading = "Multi-Run"
    )]
    pub sweep_type: Option<SweepTypeArg>,

    /// One variation of a scenario sweep, `[name:] key=value, key=value` (keys: flag names
    /// without `--`); repeat it for each variation (at least two).
    #[arg(
        long = "variant",
        visible_alias = "sweep-variant",
        value_name = "SPEC",
        help_heading = "Multi-Run"
    )]
    pub variants: Vec<String>,

    /// Loop order of variations and trials: `repeated` (trials outside: every variation in
    /// trial 1, then in trial 2) or `independent` (all trials of one variation, then the next).
    #[arg(
        long = "parameter-sweep-mode",
        value_enum,
        ignore_case = true,
        help_heading = "Multi-Run"
    )]
    pub parameter_sweep_mode: Option<SweepModeArg>,

    /// Pause between variations, in seconds.
    #[arg(
        long = "parameter-sweep-cooldown-seconds",
        value_name = "SECONDS",
        help_heading = "Multi-Run"
    )]
    pub parameter_sweep_cooldown_seconds: Option<f64>,

    /// Every variation uses the same seed (`--random-seed`, required) instead of seed + index.
    #[arg(
        long = "parameter-sweep-same-seed",
        overrides_with = "no_parameter_sweep_same_seed",
        help_heading = "Multi-Run"
    )]
    pub parameter_sweep_same_seed: bool,

    /// Each variation uses seed + its index (the default).
    #[arg(
        long = "no-parameter-sweep-same-seed",
        overrides_with = "parameter_sweep_same_seed",
        help_heading = "Multi-Run"
    )]
    pub no_parameter_sweep_same_seed: bool,

    /// Each trial of a variation gets its own seed (derived from the seed, the variation's
    /// label and the trial), so trials also sample different inputs.
    #[arg(
        long = "vary-seed-per-trial",
        overrides_with = "no_vary_seed_per_trial",
        help_heading = "Multi-Run"
    )]
    pub vary_seed_per_trial: bool,

    /// All trials of a variation share its seed (the default).
    #[arg(
        long = "no-vary-seed-per-trial",
        overrides_with = "vary_seed_per_trial",
        help_heading = "Multi-Run"
    )]
    pub no_vary_seed_per_trial: bool,

    /// Do not print the sweep table (also left out when stdout is not a terminal, with the
    /// dashboard, or for a one-variation sweep).
    #[arg(long = "no-sweep-table", help_heading = "Multi-Run")]
    pub no_sweep_table: bool,

    /// Metric whose trials decide adaptive convergence (e.g. `time_to_first_token`): with
    /// --num-profile-runs over 1, trials stop once it is stable (--num-profile-runs is the cap).
    #[arg(
        long = "convergence-metric",
        value_name = "METRIC",
        help_heading = "Multi-Run"
    )]
    pub convergence_metric: Option<String>,

    /// The statistic of --convergence-metric judged (avg, p50, p90, p95, p99, ...).
    #[arg(
        long = "convergence-stat",
        value_name = "STAT",
        help_heading = "Multi-Run"
    )]
    pub convergence_stat: Option<String>,

    /// Threshold of --convergence-mode (ci-width: CI width over the mean, default 0.10; cv:
    /// coefficient of variation, default 0.05).
    #[arg(
        long = "convergence-threshold",
        value_name = "X",
        help_heading = "Multi-Run"
    )]
    pub convergence_threshold: Option<f64>,

    /// How convergence is judged: `ci-width` (Student-t interval), `cv`, or `distribution`
    /// (not supported by ringperf yet).
    #[arg(
        long = "convergence-mode",
        value_enum,
        ignore_case = true,
        help_heading = "Multi-Run"
    )]
    pub convergence_mode: Option<ConvergenceModeArg>,
}

/// `--sweep-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SweepTypeArg {
    Grid,
    Zip,
}

/// `--parameter-sweep-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SweepModeArg {
    Repeated,
    Independent,
}

/// `--convergence-mode` (AIPerf spells them `ci_width`, `cv`, `distribution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConvergenceModeArg {
    #[value(name = "ci_width", alias = "ci-width")]
    CiWidth,
    Cv,
    Distribution,
}
