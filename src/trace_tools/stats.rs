//! The seven figures AIPerf's trace tools give of a list of values (mean, population standard
//! deviation, minimum, 25th percentile, median, 75th percentile, maximum) with NumPy's
//! arithmetic (pairwise sums in the values' own order, linear percentiles), and the correctly
//! rounded mean Python's `statistics.mean` gives.

use serde::Serialize;

use ringperf_metrics::server_metrics::stats::{np_sum, percentile_sorted};

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
    /// The figures of `values` (in the order they were gathered: NumPy's sums depend on it),
    /// or `None` when there are none. `np.std`: the mean, then the pairwise sum of the squared
    /// deviations over `n`.
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = np_sum(values) / n;
        let squares: Vec<f64> = values.iter().map(|v| (v - mean) * (v - mean)).collect();
        let std_dev = (np_sum(&squares) / n).sqrt();
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let pct = |q| percentile_sorted(&sorted, q).unwrap_or(f64::NAN);
        Some(Self {
            mean,
            std_dev,
            min: sorted[0],
            p25: pct(25.0),
            median: pct(50.0),
            p75: pct(75.0),
            max: sorted[sorted.len() - 1],
        })
    }
}

/// `statistics.mean(values)`: the exact sum of the values (as a rational) divided by their
/// count, rounded once to the nearest `f64` (ties to even). 0 for no values; NaN when a value is
/// not finite.
pub fn exact_mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    if values.iter().any(|v| !v.is_finite()) {
        return f64::NAN;
    }
    let mut pos = Fixed::default();
    let mut neg = Fixed::default();
    for &v in values {
        if v > 0.0 {
            pos.add(v);
        } else if v < 0.0 {
            neg.add(-v);
        }
    }
    let (sign, magnitude) = match pos.cmp(&neg) {
        std::cmp::Ordering::Less => (-1.0, neg.minus(&pos)),
        _ => (1.0, pos.minus(&neg)),
    };
    sign * magnitude.div_round(values.len() as u64)
}

/// A non-negative number `limbs × 2^-1074` (little-endian 64-bit limbs): every finite `f64` is
/// an integer multiple of 2^-1074, so sums of them are exact here.
#[derive(Default, Clone, PartialEq, Eq)]
struct Fixed {
    limbs: Vec<u64>,
}

/// The smallest exponent of an `f64` bit (the subnormals' unit, 2^-1074).
const UNIT_EXP: i32 = -1074;

impl Fixed {
    /// Adds a positive finite `v`.
    fn add(&mut self, v: f64) {
        let bits = v.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1 << 52) - 1);
        // v = mantissa × 2^(exp); subnormals have no hidden bit and the least exponent.
        let (mantissa, exp) = if biased == 0 {
            (frac, UNIT_EXP)
        } else {
            (frac | (1 << 52), biased - 1075)
        };
        let shift = (exp - UNIT_EXP) as usize;
        let (limb, bit) = (shift / 64, shift % 64);
        let wide = u128::from(mantissa) << bit;
        self.add_at(limb, wide as u64);
        self.add_at(limb + 1, (wide >> 64) as u64);
    }

    /// Adds `x` at limb `i`, carrying upwards.
    fn add_at(&mut self, mut i: usize, mut x: u64) {
        while x != 0 {
            if self.limbs.len() <= i {
                self.limbs.resize(i + 1, 0);
            }
            let (sum, carry) = self.limbs[i].overflowing_add(x);
            self.limbs[i] = sum;
            x = u64::from(carry);
            i += 1;
        }
    }

    fn trimmed(&self) -> &[u64] {
        let len = self
            .limbs
            .iter()
            .rposition(|&l| l != 0)
            .map_or(0, |i| i + 1);
        &self.limbs[..len]
    }

    fn cmp(&self, other: &Fixed) -> std::cmp::Ordering {
        let (a, b) = (self.trimmed(), other.trimmed());
        a.len()
            .cmp(&b.len())
            .then_with(|| a.iter().rev().cmp(b.iter().rev()))
    }

    /// `self − other`, `other` not larger.
    fn minus(&self, other: &Fixed) -> Fixed {
        let mut out = self.limbs.clone();
        let mut borrow = false;
        for (i, slot) in out.iter_mut().enumerate() {
            let b = other.limbs.get(i).copied().unwrap_or(0);
            let (d1, o1) = slot.overflowing_sub(b);
            let (d2, o2) = d1.overflowing_sub(u64::from(borrow));
            *slot = d2;
            borrow = o1 || o2;
        }
        Fixed { limbs: out }
    }

    /// `self / n` rounded to the nearest `f64`, ties to even.
    fn div_round(&self, n: u64) -> f64 {
        let limbs = self.trimmed();
        if limbs.is_empty() {
            return 0.0;
        }
        // Two zero limbs below give the quotient at least 64 bits more than needed for any
        // divisor, so the bits past the 53 kept (and the remainder) decide the rounding.
        let mut num = vec![0u64, 0];
        num.extend_from_slice(limbs);
        let mut quotient = vec![0u64; num.len()];
        let mut rem: u128 = 0;
        for i in (0..num.len()).rev() {
            let cur = (rem << 64) | u128::from(num[i]);
            quotient[i] = (cur / u128::from(n)) as u64;
            rem = cur % u128::from(n);
        }
        // The quotient's value is quotient × 2^(UNIT_EXP − 128).
        round_to_f64(&quotient, UNIT_EXP - 128, rem != 0)
    }
}

/// `q × 2^exp`, with `sticky` standing for a non-zero rest below `q`'s last bit, rounded to the
/// nearest `f64` (ties to even), subnormal results included.
fn round_to_f64(q: &[u64], exp: i32, sticky: bool) -> f64 {
    let top = match q.iter().rposition(|&l| l != 0) {
        Some(i) => i,
        None => return 0.0,
    };
    let len = top as i32 * 64 + (64 - q[top].leading_zeros() as i32);
    // Bits to drop: keep 53, and never a bit below 2^-1074.
    let drop = (len - 53).max(UNIT_EXP - exp).max(0);
    let bit = |k: i32| -> bool {
        let (i, b) = ((k / 64) as usize, k % 64);
        q.get(i).is_some_and(|l| (l >> b) & 1 == 1)
    };
    let mut mantissa: u64 = 0;
    for k in (drop..len).rev() {
        mantissa = (mantissa << 1) | u64::from(bit(k));
    }
    if drop > 0 {
        let half = bit(drop - 1);
        let rest = sticky || (0..drop - 1).any(bit);
        if half && (rest || mantissa & 1 == 1) {
            mantissa += 1;
        }
    }
    // mantissa ≤ 2^53 is exact as an f64; the scaling is by powers of two in two steps, so
    // no intermediate underflows, and the result is representable by construction.
    let scale = exp + drop;
    let half_scale = scale / 2;
    mantissa as f64 * pow2(half_scale) * pow2(scale - half_scale)
}

/// 2^k for −1074 ≤ k ≤ 1023.
fn pow2(k: i32) -> f64 {
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (k + 1074))
    }
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

    /// Figures printed by Python 3.11's `statistics.mean`; the sequential sums over the count
    /// are 0.20000000000000004 and 0.020942212934331673.
    #[test]
    fn exact_mean_is_pythons_statistics_mean() {
        assert_eq!(exact_mean(&[0.1, 0.2, 0.3]), 0.2);
        assert_ne!((0.1 + 0.2 + 0.3) / 3.0, 0.2);
        let v: Vec<f64> = (0..300).map(|i| 1.0 / f64::from(i + 1)).collect();
        assert_eq!(exact_mean(&v), 0.02094221293433168);
        assert_eq!(exact_mean(&[5e-324, 5e-324, 5e-324]), 5e-324);
        assert_eq!(exact_mean(&[3e-320, 1e-320]), 2e-320);
        // The sum overflows an f64; the exact one does not.
        assert_eq!(exact_mean(&[1e308, 1e308, -1e308]), 3.333333333333333e307);
        assert_eq!(exact_mean(&[-0.1, -0.2, -0.3, 0.05]), -0.1375);
        assert_eq!(exact_mean(&[]), 0.0);
        assert!(exact_mean(&[1.0, f64::NAN]).is_nan());
    }

    /// Against an independent exact computation: values `k / 2^20` with |k| < 2^30 sum exactly
    /// in an `i128` (|sum| < 2^36), and the true mean `sum / (n · 2^20)` is then the quotient of
    /// two exact `f64`s, which IEEE division rounds correctly.
    #[test]
    fn exact_mean_rounds_the_true_mean() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for round in 0..2_000 {
            let n = 1 + round % 37;
            let mut ks = Vec::new();
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ks.push((x % (1 << 31)) as i128 - (1 << 30));
            }
            let values: Vec<f64> = ks.iter().map(|&k| k as f64 / 1_048_576.0).collect();
            let sum: i128 = ks.iter().sum();
            let want = sum as f64 / (n as f64 * 1_048_576.0);
            assert_eq!(exact_mean(&values), want, "{ks:?}");
        }
    }
}
