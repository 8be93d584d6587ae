//! Confidence statistics over repeated runs (`--num-profile-runs`, docs/output-formats.md): for one
//! `(metric, stat)` pair, the per-run values reduced to a mean, its spread and a Student-t
//! confidence interval of the mean.
//!
//! Pure arithmetic on `&[f64]`; the t quantile comes from `statrs`. What a "value" is (one
//! run's `time_to_first_token.p99`, say) is the caller's business (`export::aggregate`).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The statistics of one `(metric, stat)` pair across runs, named as in AIPerf's
/// `profile_export_aiperf_aggregate.json`.
#[derive(Clone, Debug, PartialEq)]
pub struct Confidence {
    /// Sample mean of the per-run values.
    pub mean: f64,
    /// Sample standard deviation (ddof = 1).
    pub std: f64,
    /// Smallest per-run value.
    pub min: f64,
    /// Largest per-run value.
    pub max: f64,
    /// Coefficient of variation `std / mean`, a ratio (not %); `inf` when the mean is 0.
    pub cv: f64,
    /// Standard error of the mean, `std / sqrt(n)`.
    pub se: f64,
    /// `mean - t_critical * se`.
    pub ci_low: f64,
    /// `mean + t_critical * se`.
    pub ci_high: f64,
    /// Student-t quantile at `1 - alpha/2` with `n - 1` degrees of freedom; NaN for a single
    /// value (no interval can be drawn from one observation).
    pub t_critical: f64,
}

/// Student-t quantile at `1 - alpha/2`, `alpha = 1 - level`, with `df` degrees of freedom.
/// NaN when `df` is 0 or `level` is not inside (0, 1).
pub fn t_critical(level: f64, df: u64) -> f64 {
    if df == 0 || !(level > 0.0 && level < 1.0) {
        return f64::NAN;
    }
    match StudentsT::new(0.0, 1.0, df as f64) {
        Ok(t) => t.inverse_cdf(1.0 - (1.0 - level) / 2.0),
        Err(_) => f64::NAN,
    }
}

impl Confidence {
    /// The statistics of `values` at confidence `level`. Non-finite values are skipped;
    /// `None` when no finite value is left. One value gives the degraded form: std, cv and se
    /// 0, the interval collapsed to the value, `t_critical` NaN.
    pub fn of(values: &[f64], level: f64) -> Option<Self> {
        let vals: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let n = vals.len();
        if n == 0 {
            return None;
        }
        let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if n == 1 {
            return Some(Self::single(vals[0]));
        }
        let nf = n as f64;
        let mean = vals.iter().sum::<f64>() / nf;
        let ss: f64 = vals.iter().map(|v| (v - mean) * (v - mean)).sum();
        let std = (ss / (nf - 1.0)).sqrt();
        let cv = if mean == 0.0 {
            f64::INFINITY
        } else {
            std / mean
        };
        let se = std / nf.sqrt();
        let t = t_critical(level, n as u64 - 1);
        let margin = t * se;
        Some(Self {
            mean,
            std,
            min,
            max,
            cv,
            se,
            ci_low: mean - margin,
            ci_high: mean + margin,
            t_critical: t,
        })
    }

    /// The degraded statistics of a single observation.
    pub fn single(v: f64) -> Self {
        Self {
            mean: v,
            std: 0.0,
            min: v,
            max: v,
            cv: 0.0,
            se: 0.0,
            ci_low: v,
            ci_high: v,
            t_critical: f64::NAN,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    // Expected t quantiles: scipy's `scipy.stats.t.ppf(q, df)`, run in the AIPerf venv that
    // perf/aiperf-env.sh installs; they agree with the printed tables (12.706, 4.303, 2.262,
    // 2.920, 9.925, 1.833, 3.250) to the tables' digits.
    const T_975_DF1: f64 = 12.706204736174694;
    const T_975_DF2: f64 = 4.302652729749462;
    const T_975_DF9: f64 = 2.262157162798205;
    const T_95_DF2: f64 = 2.9199855803537242;
    const T_995_DF2: f64 = 9.924843200918287;
    const T_95_DF9: f64 = 1.833112932656237;
    const T_995_DF9: f64 = 3.249835541592126;

    #[test]
    fn t_critical_matches_scipy() {
        for (level, df, want) in [
            (0.95, 1, T_975_DF1),
            (0.95, 2, T_975_DF2),
            (0.95, 9, T_975_DF9),
            (0.90, 2, T_95_DF2),
            (0.99, 2, T_995_DF2),
            (0.90, 9, T_95_DF9),
            (0.99, 9, T_995_DF9),
        ] {
            let got = t_critical(level, df);
            assert!(close(got, want), "level {level} df {df}: {got} vs {want}");
        }
        assert!(t_critical(0.95, 0).is_nan());
        assert!(t_critical(1.0, 3).is_nan());
    }

    #[test]
    fn two_runs() {
        // 10 and 14: mean 12, deviations ±2, ss 8, std sqrt(8/1) = 2.828427…, se = std/sqrt(2)
        // = 2, margin 2 · 12.7062… .
        let c = Confidence::of(&[10.0, 14.0], 0.95).unwrap();
        assert_eq!(c.mean, 12.0);
        assert!(close(c.std, 8f64.sqrt()));
        assert!(close(c.se, 2.0));
        assert!(close(c.cv, 8f64.sqrt() / 12.0));
        assert_eq!((c.min, c.max), (10.0, 14.0));
        assert!(close(c.t_critical, T_975_DF1));
        assert!(close(c.ci_low, 12.0 - 2.0 * T_975_DF1));
        assert!(close(c.ci_high, 12.0 + 2.0 * T_975_DF1));
    }

    #[test]
    fn three_runs_at_three_levels() {
        // 1, 2, 6: mean 3, deviations −2, −1, 3, ss 14, std sqrt(7) = 2.6457513…, se
        // sqrt(7/3) = 1.5275252….
        let vals = [1.0, 2.0, 6.0];
        let (std, se) = (7f64.sqrt(), (7.0f64 / 3.0).sqrt());
        for (level, t) in [(0.95, T_975_DF2), (0.90, T_95_DF2), (0.99, T_995_DF2)] {
            let c = Confidence::of(&vals, level).unwrap();
            assert_eq!(c.mean, 3.0);
            assert!(close(c.std, std));
            assert!(close(c.se, se));
            assert!(close(c.cv, std / 3.0));
            assert!(close(c.t_critical, t), "{level}");
            assert!(close(c.ci_low, 3.0 - t * se), "{level}");
            assert!(close(c.ci_high, 3.0 + t * se), "{level}");
        }
    }

    #[test]
    fn ten_runs() {
        // 1..=10: mean 5.5, ss = 82.5, std sqrt(82.5/9) = 3.0276504…, se = std/sqrt(10).
        let vals: Vec<f64> = (1..=10).map(f64::from).collect();
        let c = Confidence::of(&vals, 0.95).unwrap();
        let std = (82.5f64 / 9.0).sqrt();
        let se = std / 10f64.sqrt();
        assert_eq!(c.mean, 5.5);
        assert!(close(c.std, std));
        assert!(close(c.se, se));
        assert!(close(c.t_critical, T_975_DF9));
        assert!(close(c.ci_low, 5.5 - T_975_DF9 * se));
        assert!(close(c.ci_high, 5.5 + T_975_DF9 * se));
        let c99 = Confidence::of(&vals, 0.99).unwrap();
        assert!(close(c99.ci_high, 5.5 + T_995_DF9 * se));
    }

    #[test]
    fn zero_mean_gives_infinite_cv() {
        let c = Confidence::of(&[0.0, 0.0, 0.0], 0.95).unwrap();
        assert_eq!((c.std, c.se), (0.0, 0.0));
        assert!(c.cv.is_infinite());
        assert_eq!((c.ci_low, c.ci_high), (0.0, 0.0));
    }

    #[test]
    fn non_finite_values_are_skipped() {
        let c = Confidence::of(&[f64::NAN, 10.0, f64::INFINITY, 14.0], 0.95).unwrap();
        assert_eq!(c, Confidence::of(&[10.0, 14.0], 0.95).unwrap());
        assert!(Confidence::of(&[f64::NAN], 0.95).is_none());
        assert!(Confidence::of(&[], 0.95).is_none());
    }

    #[test]
    fn one_value_is_the_degraded_form() {
        let c = Confidence::of(&[7.5], 0.95).unwrap();
        assert_eq!((c.mean, c.min, c.max), (7.5, 7.5, 7.5));
        assert_eq!((c.std, c.cv, c.se), (0.0, 0.0, 0.0));
        assert_eq!((c.ci_low, c.ci_high), (7.5, 7.5));
        assert!(c.t_critical.is_nan());
    }
}
