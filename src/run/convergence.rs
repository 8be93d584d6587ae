//! Adaptive convergence of a variation's trials (`--convergence-*`, AIPerf 0.13's
//! `ci_width`, `cv` and `distribution` criteria): after each trial, the chosen metric's
//! statistic across the trials that count (or, for `distribution`, its per-request values) is
//! judged; once it is stable the variation runs no further trial. `--num-profile-runs` is the
//! cap, and nothing is judged before three trials.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::ks;
use crate::config::convergence::{Convergence, ConvergenceMode};
use ringperf_metrics::aggregate::confidence::t_critical;
use ringperf_metrics::export::aggregate::RunResult;

/// The decision after a trial.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The criterion is met: stop this variation's trials.
    pub converged: bool,
    /// The values judged, one per trial that counts and has the metric.
    pub values: Vec<f64>,
    /// The figure compared with the threshold (CI width over |mean|, the CV, or the KS
    /// p-value); `None` when too few values or a zero mean.
    pub figure: Option<f64>,
}

impl Decision {
    /// The console line of the decision.
    pub fn message(&self, c: &Convergence, label: &str) -> String {
        let what = match c.mode {
            ConvergenceMode::CiWidth => "CI width / mean",
            ConvergenceMode::Cv => "CV",
            ConvergenceMode::Distribution => return self.ks_message(c, label),
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

impl Decision {
    /// The console line of a `distribution` decision.
    fn ks_message(&self, c: &Convergence, label: &str) -> String {
        let runs = self.values.len();
        match self.figure {
            Some(p) if self.converged => format!(
                "Convergence ({label}): {} distribution converged after {runs} runs (KS p-value \
                 {p:.4} > {})",
                c.metric, c.threshold
            ),
            Some(p) => format!(
                "Convergence ({label}): {} distribution not yet converged after {runs} runs (KS \
                 p-value {p:.4} <= {})",
                c.metric, c.threshold
            ),
            None => format!(
                "Convergence ({label}): {} distribution: {runs} of at least {} runs with \
                 per-request values, not judged yet",
                c.metric, c.min_runs
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

/// Judges `runs` (the variation's trials so far) by `c` at confidence `level`; `records[i]`
/// is run `i`'s per-request JSONL (read only by `distribution`).
pub fn judge(c: &Convergence, runs: &[RunResult], records: &[PathBuf], level: f64) -> Decision {
    if c.mode == ConvergenceMode::Distribution {
        let per_run = runs
            .iter()
            .zip(records)
            .filter(|(r, _)| r.outcome.is_ok())
            .map(|(_, path)| request_values(path, &c.metric))
            .collect();
        return decide_distribution(c, per_run);
    }
    decide(c, values_of(c, runs), level)
}

/// The values of `metric` in the per-request JSONL at `path`, as AIPerf reads them: the
/// profiling phase's records without an error whose `metrics.<metric>.value` is a number. A
/// missing file, a line that is not a JSON object and a record without the metric add nothing.
pub fn request_values(path: &Path, metric: &str) -> Vec<f64> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in std::io::BufReader::new(file).lines() {
        let Ok(line) = line else {
            break;
        };
        let Ok(record) = serde_json::from_str::<serde_json::Value>(line.trim()) else {
            continue;
        };
        if record["metadata"]["benchmark_phase"] != "profiling" || !record["error"].is_null() {
            continue;
        }
        if let Some(v) = record["metrics"][metric]["value"].as_f64() {
            out.push(v);
        }
    }
    out
}

/// The `distribution` decision over each counted run's per-request values (AIPerf's rule):
/// fewer than `min_runs` runs: not judged; runs 1..N-1 pooled against run N by the two-sample
/// KS test; fewer than two values on a side: not converged; converged when the p-value is
/// above the threshold. `values` keeps one entry per run (its number of values).
pub fn decide_distribution(c: &Convergence, per_run: Vec<Vec<f64>>) -> Decision {
    let values = per_run.iter().map(|v| v.len() as f64).collect();
    let undecided = |values| Decision {
        converged: false,
        values,
        figure: None,
    };
    let Some((last, earlier)) = per_run.split_last() else {
        return undecided(values);
    };
    if per_run.len() < c.min_runs {
        return undecided(values);
    }
    let pooled: Vec<f64> = earlier.iter().flatten().copied().collect();
    if pooled.len() < 2 || last.len() < 2 {
        return undecided(values);
    }
    match ks::ks_2samp(&pooled, last) {
        Ok(t) => Decision {
            converged: t.p_value > c.threshold,
            values,
            figure: Some(t.p_value),
        },
        Err(_) => undecided(values),
    }
}

/// The decision over the per-trial `values` (AIPerf's rules): fewer than
/// `max(min_runs, 2)` values (`min_runs` for cv) or a zero mean: not converged. ci-width:
/// `2 * t(1 - (1 - level) / 2, n - 1) * s / sqrt(n) / |mean| < threshold`; cv:
/// `s / |mean| < threshold` (`s` with n - 1).
pub fn decide(c: &Convergence, values: Vec<f64>, level: f64) -> Decision {
    let n = values.len();
    let needed = c.min_runs.max(2);
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
        ConvergenceMode::Cv | ConvergenceMode::Distribution => std / mean.abs(),
    };
    Decision {
        converged: figure < c.threshold,
        values,
        figure: Some(figure),
    }
}
