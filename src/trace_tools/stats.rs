//! The seven figures AIPerf's trace tools give of a list of values (mean, population standard
//! deviation, minimum, 25th percentile, median, 75th percentile, maximum), percentiles by linear
//! interpolation between the closest ranks (numpy's default).

use serde::Serialize;

/// One metric's figures, as `analyze-trace` writes them (AIPerf's `MetricStats` keys).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MetricStats {
    pub mean: f64,
    pub std_dev: f64,
    pub min: f64,
    pub p25: f64,
    pub median: f64,
    pub p75: f64,
    pub max: f64,
}

impl MetricStats {
    /// The figures of `values`, or `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len() as f64;
        let mean = sorted.iter().sum::<f64>() / n;
        let var = sorted.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        Some(Self {
            mean,
            std_dev: var.sqrt(),
            min: sorted[0],
            p25: percentile(&sorted, 25.0),
            median: percentile(&sorted, 50.0),
            p75: percentile(&sorted, 75.0),
            max: sorted[sorted.len() - 1],
        })
    }
}

/// The `p`th percentile of sorted, non-empty `sorted`: rank `p/100 * (n-1)`, interpolated.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    let frac = rank - lo as f64;
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_of_a_hand_computed_list() {
        // 1, 2, 3, 4: mean 2.5; deviations ±0.5, ±1.5 → variance (0.25+2.25)*2/4 = 1.25.
        // Ranks: p25 at 0.75 → 1.75; median at 1.5 → 2.5; p75 at 2.25 → 3.25.
        let s = MetricStats::of(&[4.0, 1.0, 3.0, 2.0]).expect("values");
        assert_eq!(s.mean, 2.5);
        assert_eq!(s.std_dev, 1.25f64.sqrt());
        assert_eq!(
            (s.min, s.p25, s.median, s.p75, s.max),
            (1.0, 1.75, 2.5, 3.25, 4.0)
        );
        assert_eq!(MetricStats::of(&[]), None);
        let one = MetricStats::of(&[7.0]).expect("one value");
        assert_eq!((one.std_dev, one.p25, one.p75), (0.0, 7.0, 7.0));
    }
}
