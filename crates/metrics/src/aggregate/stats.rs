//! Exact statistics over every value of a metric (docs/metrics.md): no sketches, no sampling.
//!
//! Percentiles follow NumPy's default `"linear"` method; the error-adjusted variant (`adj_<tag>`)
//! adds one `+inf` per failed request and uses NumPy's `"nearest"` method.

/// The percentiles AIPerf reports, in `STAT_KEYS` order.
pub const PERCENTILES: [f64; 9] = [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

/// Names of [`PERCENTILES`] as they appear in exports.
pub const PERCENTILE_KEYS: [&str; 9] =
    ["p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99"];

/// The statistics of one record metric, in its base unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// Mean (`sum / count`).
    pub avg: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Running sum in arrival order.
    pub sum: f64,
    /// Values at [`PERCENTILES`], in order.
    pub pct: [f64; 9],
    /// Population standard deviation (ddof = 0); `None` for the error-adjusted variant.
    pub std: Option<f64>,
    /// Number of values.
    pub count: u64,
}

impl Stats {
    /// Statistics of `values` (in arrival order; `sum` is the running sum in that order).
    /// Returns `None` for an empty slice.
    pub fn compute(values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let sum: f64 = values.iter().sum();
        let avg = sum / n;
        let var = values.iter().map(|v| (v - avg) * (v - avg)).sum::<f64>() / n;
        let mut sorted = values.to_vec();
        sorted.sort_unstable_by(f64::total_cmp);
        let pct = PERCENTILES.map(|q| linear(&sorted, q));
        Some(Self {
            avg,
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            sum,
            pct,
            std: Some(var.sqrt()),
            count: values.len() as u64,
        })
    }

    /// The error-adjusted statistics: `values` plus `errors` times `+inf`. Percentiles use the
    /// `"nearest"` method; `avg`, `sum` and `max` are `+inf`, `std` is `None`. Returns `None`
    /// when there are no errors (AIPerf emits no `adj_` result then) or no values at all.
    pub fn adjusted(values: &[f64], errors: u64) -> Option<Self> {
        if errors == 0 {
            return None;
        }
        let mut all = values.to_vec();
        all.extend(std::iter::repeat_n(f64::INFINITY, errors as usize));
        all.sort_unstable_by(f64::total_cmp);
        let pct = PERCENTILES.map(|q| nearest(&all, q));
        Some(Self {
            avg: f64::INFINITY,
            min: all[0],
            max: f64::INFINITY,
            sum: f64::INFINITY,
            pct,
            std: None,
            count: all.len() as u64,
        })
    }

    /// The value of percentile key `p1`..`p99`.
    pub fn percentile(&self, key: &str) -> Option<f64> {
        PERCENTILE_KEYS
            .iter()
            .position(|k| *k == key)
            .map(|i| self.pct[i])
    }

    /// Every statistic multiplied by `factor` (display-unit conversion).
    pub fn scaled(&self, factor: f64) -> Self {
        Self {
            avg: self.avg * factor,
            min: self.min * factor,
            max: self.max * factor,
            sum: self.sum * factor,
            pct: self.pct.map(|v| v * factor),
            std: self.std.map(|v| v * factor),
            count: self.count,
        }
    }
}

/// NumPy `percentile(method="linear")` of a sorted, non-empty slice; `q` in 0..=100.
pub fn linear(sorted: &[f64], q: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return f64::NAN;
    };
    let idx = q / 100.0 * last as f64;
    let lo = (idx.floor() as usize).min(last);
    let hi = (lo + 1).min(last);
    interpolate(sorted[lo], sorted[hi], idx - lo as f64)
}

/// NumPy's linear step from `a` (the order statistic at `⌊idx⌋`) to `b` (the next one) by the
/// fraction `t` of `idx`: [`linear`]'s last step, shared with the realtime block's selection.
pub(crate) fn interpolate(a: f64, b: f64, t: f64) -> f64 {
    if a == b {
        // Also keeps inf − inf from producing NaN.
        return a;
    }
    // NumPy interpolates up from the lower neighbour below the midpoint and down from the
    // upper one from it on, which decides the last bit.
    if t < 0.5 {
        a + (b - a) * t
    } else {
        b - (b - a) * (1.0 - t)
    }
}

/// NumPy `percentile(method="nearest")` of a sorted, non-empty slice: the element at
/// `q/100·(n−1)` rounded half to even.
pub fn nearest(sorted: &[f64], q: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return f64::NAN;
    };
    let idx = (q / 100.0 * last as f64).round_ties_even() as usize;
    sorted[idx.min(last)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn spec_test_vector() {
        // The test vector of docs/metrics.md, "Statistics": [1,2,3,4,10]
        let s = Stats::compute(&[1.0, 2.0, 3.0, 4.0, 10.0]).unwrap();
        assert_eq!(s.avg, 4.0);
        assert_eq!(s.sum, 20.0);
        assert_eq!(s.count, 5);
        assert_eq!((s.min, s.max), (1.0, 10.0));
        let want = [1.04, 1.2, 1.4, 2.0, 3.0, 4.0, 7.6, 8.8, 9.76];
        for (got, want) in s.pct.iter().zip(want) {
            assert!(close(*got, want), "{got} vs {want}");
        }
        assert!(close(s.std.unwrap(), 3.16227766017), "{:?}", s.std);
        assert_eq!(s.percentile("p90"), Some(s.pct[6]));
    }

    #[test]
    fn order_does_not_matter_and_single_value() {
        let a = Stats::compute(&[10.0, 3.0, 1.0, 4.0, 2.0]).unwrap();
        let b = Stats::compute(&[1.0, 2.0, 3.0, 4.0, 10.0]).unwrap();
        assert_eq!(a.pct, b.pct);
        let one = Stats::compute(&[7.5]).unwrap();
        assert_eq!(one.pct, [7.5; 9]);
        assert_eq!(one.std, Some(0.0));
        assert!(Stats::compute(&[]).is_none());
    }

    #[test]
    fn adjusted_adds_infinities_with_nearest() {
        // values [1,2,3] + 1 error → [1,2,3,inf]; idx = q/100·3.
        let s = Stats::adjusted(&[3.0, 1.0, 2.0], 1).unwrap();
        assert_eq!(s.count, 4);
        assert_eq!(s.min, 1.0);
        assert!(s.avg.is_infinite() && s.sum.is_infinite() && s.max.is_infinite());
        assert_eq!(s.std, None);
        // p1 idx .03→0, p25 idx .75→1, p50 idx 1.5→2 (half to even), p75 2.25→2, p90 2.7→3.
        assert_eq!(s.percentile("p1"), Some(1.0));
        assert_eq!(s.percentile("p25"), Some(2.0));
        assert_eq!(s.percentile("p50"), Some(3.0));
        assert_eq!(s.percentile("p75"), Some(3.0));
        assert_eq!(s.percentile("p90"), Some(f64::INFINITY));
        assert!(Stats::adjusted(&[1.0], 0).is_none());
        // Only errors: everything is +inf.
        let e = Stats::adjusted(&[], 2).unwrap();
        assert_eq!(e.min, f64::INFINITY);
    }

    #[test]
    fn nearest_rounds_half_to_even() {
        let a = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
        // n−1 = 5: q=50 → 2.5 → 2 (even); q=70 → 3.5 → 4 (even).
        assert_eq!(nearest(&a, 50.0), 2.0);
        assert_eq!(nearest(&a, 70.0), 4.0);
    }

    /// `np.percentile([0.298, 0.643, 0.758], 95)` prints 0.7465 (t = 0.9, taken down from the
    /// upper neighbour); up from the lower one it would be 0.7464999999999999.
    #[test]
    fn linear_interpolates_as_numpy_does_past_the_midpoint() {
        let v = [0.298, 0.643, 0.758];
        assert_eq!(linear(&v, 95.0), 0.7465);
        assert_ne!(0.643 + (0.758 - 0.643) * 0.8999999999999999, 0.7465);
        // Below the midpoint it goes up from the lower one: `np.percentile([0.094, 0.652,
        // 0.789], 20)` (t = 0.4) prints 0.31720000000000004; down from the upper, 0.3172.
        let w = [0.094, 0.652, 0.789];
        assert_eq!(linear(&w, 20.0), 0.31720000000000004);
    }

    #[test]
    fn linear_with_infinite_tail_is_not_nan() {
        let a = [1.0, f64::INFINITY, f64::INFINITY];
        assert_eq!(linear(&a, 99.0), f64::INFINITY);
    }

    proptest::proptest! {
        /// Percentiles are ordered, bounded by min and max, and p50 of an odd-length input is
        /// its middle element (the naive oracle).
        #[test]
        fn percentiles_are_consistent(v in proptest::collection::vec(-1e9f64..1e9, 1..200)) {
            let s = Stats::compute(&v).unwrap();
            for w in s.pct.windows(2) {
                proptest::prop_assert!(w[0] <= w[1]);
            }
            proptest::prop_assert!(s.min <= s.pct[0] && s.pct[8] <= s.max);
            if v.len() % 2 == 1 {
                let mut sorted = v.clone();
                sorted.sort_by(f64::total_cmp);
                proptest::prop_assert_eq!(s.pct[4], sorted[v.len() / 2]);
            }
            proptest::prop_assert!(s.std.unwrap() >= 0.0);
        }
    }
}
