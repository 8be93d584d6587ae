//! `--convergence-*` (docs/sweeps.md): when a variation's or a repeated run's trials may stop
//! early. The decision itself is [`crate::run::convergence`].

use std::fmt;

use crate::cli::ProfileArgs;
use crate::cli::sweep::ConvergenceModeArg;

/// Adaptive convergence of the trials (`--convergence-*`).
#[derive(Clone, Debug, PartialEq)]
pub struct Convergence {
    /// The metric's tag (`time_to_first_token`).
    pub metric: String,
    /// The statistic (`avg`, `p99`).
    pub stat: String,
    /// The criterion.
    pub mode: ConvergenceMode,
    /// Its threshold (the mode's default when not given).
    pub threshold: f64,
    /// Fewest trials before the criterion is judged: a config file's `min_runs`, else 3 (the
    /// default of AIPerf's criteria and the minimum its warning recommends).
    pub min_runs: usize,
}

impl Convergence {
    /// AIPerf's warning for a minimum below the recommended 3, when there is one.
    pub fn warning(&self) -> Option<String> {
        (self.min_runs < 3).then(|| {
            format!(
                "convergence.min_runs={} is below the recommended minimum of 3. Convergence \
                 checks will have reduced statistical power.",
                self.min_runs
            )
        })
    }
}

/// How convergence is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvergenceMode {
    /// The Student-t interval's width over |mean| below the threshold (default 0.10).
    CiWidth,
    /// The coefficient of variation below the threshold (default 0.05).
    Cv,
    /// The two-sample KS test of the last trial's per-request values against the earlier
    /// trials' pooled: its p-value above the threshold (default 0.05).
    Distribution,
}

/// A `--convergence-*` value ringperf refuses.
#[derive(Debug, Clone, PartialEq)]
pub enum ConvergenceError {
    /// A non-positive `--convergence-threshold`.
    BadThreshold {
        /// The value.
        value: f64,
    },
    /// `--convergence-mode distribution` with `--export-level summary` (no per-request
    /// records to compare).
    DistributionNeedsRecords,
    /// `--convergence-metric` with `--shard-count` over 1: each shard would judge its own share
    /// of the requests and could stop after another trial than the others.
    Sharded,
}

impl fmt::Display for ConvergenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConvergenceError::BadThreshold { value } => {
                write!(f, "--convergence-threshold must be above 0, not {value}")
            }
            ConvergenceError::DistributionNeedsRecords => f.write_str(
                "--convergence-mode distribution requires per-request JSONL data, but \
                 --export-level is set to 'summary'. Use --export-level records or \
                 --export-level raw.",
            ),
            ConvergenceError::Sharded => f.write_str(
                "--convergence-metric cannot be combined with --shard-count over 1: each shard \
                 would judge only its own share of the requests and could stop after another \
                 trial than the others; give a fixed --num-profile-runs",
            ),
        }
    }
}

impl std::error::Error for ConvergenceError {}

/// The `--convergence-*` flags as a [`Convergence`], if `--convergence-metric` is given;
/// `min_runs` a config file's `multi_run.convergence.min_runs`.
///
/// # Errors
/// `--convergence-mode distribution` with `--export-level summary`, a sharded run, or a
/// threshold not above 0.
pub fn from_args(
    args: &ProfileArgs,
    min_runs: Option<u32>,
) -> Result<Option<Convergence>, ConvergenceError> {
    let sw = &args.sweep;
    let Some(metric) = &sw.convergence_metric else {
        return Ok(None);
    };
    if args.shard.shard_count.is_some_and(|n| n > 1) {
        return Err(ConvergenceError::Sharded);
    }
    let mode = match sw.convergence_mode {
        None | Some(ConvergenceModeArg::CiWidth) => ConvergenceMode::CiWidth,
        Some(ConvergenceModeArg::Cv) => ConvergenceMode::Cv,
        Some(ConvergenceModeArg::Distribution) => ConvergenceMode::Distribution,
    };
    if mode == ConvergenceMode::Distribution
        && !crate::config::ExportLevel::from(args.export_level).records()
    {
        return Err(ConvergenceError::DistributionNeedsRecords);
    }
    let threshold = sw.convergence_threshold.unwrap_or(match mode {
        ConvergenceMode::CiWidth => 0.10,
        ConvergenceMode::Cv | ConvergenceMode::Distribution => 0.05,
    });
    if !(threshold.is_finite() && threshold > 0.0) {
        return Err(ConvergenceError::BadThreshold { value: threshold });
    }
    Ok(Some(Convergence {
        metric: metric.clone(),
        stat: sw.convergence_stat.clone().unwrap_or_else(|| "avg".into()),
        mode,
        threshold,
        min_runs: min_runs.map_or(3, |n| n as usize),
    }))
}
