//! Descriptive statistics with NumPy's conventions (linear percentiles, ddof=1 std).

/// The percentiles AIPerf reports, in order.
pub const PERCENTILES: [f64; 9] = [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

/// `np.percentile(sorted, q)` with the default linear method; `None` for an empty slice.
/// NumPy interpolates from the lower neighbour below the midpoint and from the upper one
/// from it on (`a + (b−a)·t`, `b − (b−a)·(1−t)`), which decides the last bit.
#[must_use]
pub fn percentile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let rank = last as f64 * (q / 100.0).clamp(0.0, 1.0);
    let lo = rank.floor() as usize;
    let hi = (lo + 1).min(last);
    let t = rank - lo as f64;
    let a = *sorted.get(lo)?;
    let b = *sorted.get(hi)?;
    Some(if t == 0.0 {
        a
    } else if t < 0.5 {
        a + (b - a) * t
    } else {
        b - (b - a) * (1.0 - t)
    })
}

/// `np.sum` of a contiguous float64 array: NumPy's pairwise summation (fewer than 8 values in
/// order; up to 128 in eight interleaved partial sums combined as a tree, then the remainder
/// in order; more, split in two at a multiple of 8), so sums, means and deviations match
/// NumPy's to the last bit.
#[must_use]
pub fn np_sum(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 8 {
        return values.iter().fold(-0.0, |acc, v| acc + v);
    }
    if n <= 128 {
        let mut r = [0.0; 8];
        r.copy_from_slice(&values[..8]);
        let whole = n - n % 8;
        for block in values[8..whole].chunks_exact(8) {
            for (acc, v) in r.iter_mut().zip(block) {
                *acc += v;
            }
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for v in &values[whole..] {
            res += v;
        }
        return res;
    }
    let mut half = n / 2;
    half -= half % 8;
    np_sum(&values[..half]) + np_sum(&values[half..])
}

/// Arithmetic mean (`np.mean`); `None` when empty.
#[must_use]
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| np_sum(values) / values.len() as f64)
}

/// Sample variance (`np.var(ddof=1)`); `None` with fewer than 2 values. Equal values have
/// exactly 0 (their float mean may not be exactly the value, which would leave rounding noise
/// such as 1e-17 in the deviations).
#[must_use]
pub fn var_ddof1(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    if values.len() < 2 {
        return None;
    }
    if values.iter().all(|v| v.to_bits() == values[0].to_bits()) {
        return Some(0.0);
    }
    let squares: Vec<f64> = values.iter().map(|v| (v - m) * (v - m)).collect();
    Some(np_sum(&squares) / (values.len() - 1) as f64)
}

/// Sample standard deviation (`np.std(ddof=1)`); 0 for a single value, `None` when empty.
#[must_use]
pub fn std_ddof1(values: &[f64]) -> Option<f64> {
    mean(values)?;
    Some(var_ddof1(values).map_or(0.0, f64::sqrt))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A constant series deviates by exactly nothing, even where its float mean is off by an ulp
    /// (three 0.1s sum to 0.30000000000000004).
    #[test]
    fn equal_values_have_no_deviation() {
        assert_eq!(std_ddof1(&[0.1, 0.1, 0.1]), Some(0.0));
        assert_eq!(var_ddof1(&[7.3; 5]), Some(0.0));
        assert!(std_ddof1(&[0.1, 0.1, 0.2]).is_some_and(|s| s > 0.0));
    }

    #[test]
    fn numpy_linear_percentiles() {
        let v = [1.0, 2.0, 3.0, 4.0];
        // rank = q/100 · 3
        assert_eq!(percentile_sorted(&v, 50.0), Some(2.5));
        assert_eq!(percentile_sorted(&v, 25.0), Some(1.75));
        assert!((percentile_sorted(&v, 99.0).unwrap() - 3.97).abs() < 1e-12);
        assert_eq!(percentile_sorted(&v, 100.0), Some(4.0));
        assert_eq!(percentile_sorted(&[7.0], 1.0), Some(7.0));
        assert_eq!(percentile_sorted(&[], 50.0), None);
    }

    /// `np.percentile([0.298, 0.643, 0.758], 95)` is 0.7465: interpolated down from the upper
    /// neighbour (t = 0.9); up from the lower one it is 0.7464999999999999.
    #[test]
    fn percentiles_interpolate_as_numpy_does_past_the_midpoint() {
        let v = [0.298, 0.643, 0.758];
        assert_eq!(percentile_sorted(&v, 95.0), Some(0.7465));
        assert_ne!(0.643 + (0.758 - 0.643) * 0.8999999999999999, 0.7465);
    }

    /// Figures printed by NumPy 2 (`float(np.sum(a))`, `np.mean`, `np.std(a, ddof=1)`): the
    /// sequential sum of the 300 values is 6.282663880299502, one ulp off.
    #[test]
    fn sums_means_and_deviations_are_numpys_to_the_bit() {
        let a: Vec<f64> = (0..300).map(|i| 1.0 / f64::from(i + 1)).collect();
        assert_eq!(np_sum(&a), 6.282663880299504);
        assert_ne!(a.iter().sum::<f64>(), np_sum(&a));
        assert_eq!(mean(&a), Some(0.02094221293433168));
        assert_eq!(std_ddof1(&a), Some(0.0710653144894432));
        let b: Vec<f64> = (0..13).map(|i| 0.1 * f64::from(i)).collect();
        assert_eq!(mean(&b), Some(0.6000000000000001));
        assert_eq!(std_ddof1(&b), Some(0.3894440481849308));
    }

    #[test]
    fn mean_and_sample_std() {
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&v), Some(5.0));
        // Σ(x−5)² = 32 → sqrt(32/7)
        assert!((std_ddof1(&v).unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(std_ddof1(&[3.0]), Some(0.0));
        assert_eq!(std_ddof1(&[]), None);
    }
}
