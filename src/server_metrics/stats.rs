//! Descriptive statistics with NumPy's conventions (linear percentiles, ddof=1 std).

/// The percentiles AIPerf reports, in order.
pub const PERCENTILES: [f64; 9] = [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

/// `np.percentile(sorted, q)` with the default linear method; `None` for an empty slice.
#[must_use]
pub fn percentile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let rank = (q / 100.0).clamp(0.0, 1.0) * last as f64;
    let lo = rank.floor() as usize;
    let hi = (lo + 1).min(last);
    let frac = rank - lo as f64;
    let a = *sorted.get(lo)?;
    let b = *sorted.get(hi)?;
    Some(if frac == 0.0 { a } else { a + (b - a) * frac })
}

/// Arithmetic mean; `None` when empty.
#[must_use]
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Sample standard deviation (ddof=1); 0 for a single value, `None` when empty.
#[must_use]
pub fn std_ddof1(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    if values.len() < 2 {
        return Some(0.0);
    }
    let ss: f64 = values.iter().map(|v| (v - m).powi(2)).sum();
    Some((ss / (values.len() - 1) as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

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
