//! Adaptive convergence of a variation's trials (`--convergence-*`, AIPerf 0.13's
//! `ci_width` and `cv` criteria): after each trial, the chosen metric's statistic across the
//! trials that count is judged; once it is stable the variation runs no further trial.
//! `--num-profile-runs` is the cap, and nothing is judged before three trials.

use crate::aggregate::confidence::t_critical;
use crate::config::convergence::{Convergence, ConvergenceMode};
use crate::export::aggregate::RunResult;

/// The decision after a trial.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The criterion is met: stop this variation's trials.
    pub converged: bool,
    /// The values judged, one per trial that counts and has the metric.
    pub values: Vec<f64>,
    /// The figure compared with the threshold (CI width over |mean|, or the CV); `None` when
    /// too few values or a zero mean.
    pub figure: Option<f64>,
}

impl Decision {
    /// The console line of the decision.
    pub fn message(&self, c: &Convergence, label: &str) -> String {
        let what = match c.mode {
            ConvergenceMode::CiWidth => "CI width / mean",
            ConvergenceMode::Cv => "CV",
        };
        match self.figure {
            Some(f) if self.converged => format!(
                "Convergence ({label}): {}_{} converged after {} runs ({what} {f:.4} < {})",
                c.metric,
                c.stat,
                self.values.len(),
                c.threshold
            ),
            Some(f) => format!(
                "Convergence ({label}): {}_{} not yet converged after {} runs ({what} {f:.4} >= {})",
                c.metric,
                c.stat,
                self.values.len(),
                c.threshold
            ),
            None => format!(
                "Convergence ({label}): {}_{}: {} of at least {} runs with the metric, not judged yet",
                c.metric,
                c.stat,
                self.values.len(),
                c.min_runs.max(2)
            ),
        }
    }
}

/// The values of `c`'s metric and statistic in the runs that count.
pub fn values_of(c: &Convergence, runs: &[RunResult]) -> Vec<f64> {
    runs.iter()
        .filter_map(|r| r.outcome.as_ref().ok())
        .filter_map(|metrics| {
            let m = metrics.iter().find(|m| m.tag == c.metric)?;
            m.stats.iter().find(|(s, _)| *s == c.stat).map(|(_, v)| *v)
        })
        .collect()
}

/// Judges `runs` (the variation's trials so far) by `c` at confidence `level`.
pub fn judge(c: &Convergence, runs: &[RunResult], level: f64) -> Decision {
    decide(c, values_of(c, runs), level)
}

/// The decision over the per-trial `values` (AIPerf's rules): fewer than
/// `max(min_runs, 2)` values (`min_runs` for cv) or a zero mean: not converged. ci-width:
/// `2 * t(1 - (1 - level) / 2, n - 1) * s / sqrt(n) / |mean| < threshold`; cv:
/// `s / |mean| < threshold` (`s` with n - 1).
pub fn decide(c: &Convergence, values: Vec<f64>, level: f64) -> Decision {
    let n = values.len();
    let needed = match c.mode {
        ConvergenceMode::CiWidth => c.min_runs.max(2),
        ConvergenceMode::Cv => c.min_runs.max(2),
    };
    let undecided = |values| Decision {
        converged: false,
        values,
        figure: None,
    };
    if n < needed {
        return undecided(values);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if mean == 0.0 || !mean.is_finite() {
        return undecided(values);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let std = var.sqrt();
    let figure = match c.mode {
        ConvergenceMode::CiWidth => {
            let se = std / (n as f64).sqrt();
            2.0 * t_critical(level, (n - 1) as u64) * se / mean.abs()
        }
        ConvergenceMode::Cv => std / mean.abs(),
    };
    Decision {
        converged: figure < c.threshold,
        values,
        figure: Some(figure),
    }
}
