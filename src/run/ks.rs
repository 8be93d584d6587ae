//! The two-sample Kolmogorov–Smirnov test, two-sided, as `--convergence-mode distribution`
//! judges it (docs/sweeps.md#adaptive-convergence): the statistic `D = sup |F_a - F_b|` over
//! the two empirical distribution functions (ties counted as in any ECDF: a value's whole
//! mass at once), and its p-value under the null that both samples come from one continuous
//! distribution.
//!
//! The p-value follows the same regimes as scipy's `ks_2samp` with `method="auto"`, which
//! AIPerf calls:
//!
//! - both samples at most [`MAX_EXACT`] values: exact. `D` is a multiple of `1 / lcm(n, m)`;
//!   the probability that a uniformly drawn lattice path from (0, 0) to (n, m) ever reaches
//!   `|x / n - y / m| >= D` is computed by a forward pass over the band the path may use,
//!   each step taken with its hypergeometric probability and the mass that leaves the band
//!   summed (a sum of positive terms: small p-values keep their relative precision);
//! - otherwise: the one-sample Kolmogorov distribution `D_k` with `k = round(n m / (n + m))`,
//!   its survival function evaluated as Simard and L'Ecuyer (2011) choose (exact edges, the
//!   Durbin matrix, twice the one-sided Smirnov tail, the Pelz–Good expansion).
//!
//! Nothing here panics: an empty sample or a value that is not finite is an error.

use std::fmt;

/// Largest sample for which the exact p-value is computed (scipy's `MAX_AUTO_N`).
pub const MAX_EXACT: usize = 10_000;

/// How the p-value was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KsMethod {
    /// Exact lattice-path probability.
    Exact,
    /// The Kolmogorov distribution of the effective sample size.
    Asymptotic,
}

/// The outcome of the test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KsTest {
    /// `D`, in [0, 1].
    pub statistic: f64,
    /// The two-sided p-value, in [0, 1].
    pub p_value: f64,
    /// Which regime gave the p-value.
    pub method: KsMethod,
}

/// Inputs the test cannot judge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KsError {
    /// One of the samples has no value.
    Empty,
    /// A value is NaN or infinite.
    NotFinite,
}

impl fmt::Display for KsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KsError::Empty => f.write_str("a sample of the KS test is empty"),
            KsError::NotFinite => f.write_str("a value of the KS test is not a finite number"),
        }
    }
}

impl std::error::Error for KsError {}

/// The two-sided two-sample KS test of `a` against `b`.
///
/// # Errors
/// An empty sample, or a value that is not finite.
pub fn ks_2samp(a: &[f64], b: &[f64]) -> Result<KsTest, KsError> {
    if a.is_empty() || b.is_empty() {
        return Err(KsError::Empty);
    }
    if a.iter().chain(b).any(|v| !v.is_finite()) {
        return Err(KsError::NotFinite);
    }
    let (n, m) = (a.len() as u64, b.len() as u64);
    let g = gcd(n, m);
    let h = max_gap(a, b, m / g, n / g);
    let lcm = (n / g) * m;
    let statistic = h as f64 / lcm as f64;
    if a.len().max(b.len()) <= MAX_EXACT {
        let p_value = if h == 0 {
            1.0
        } else {
            exact_outside(n, m, g, h).clamp(0.0, 1.0)
        };
        return Ok(KsTest {
            statistic,
            p_value,
            method: KsMethod::Exact,
        });
    }
    let (nf, mf) = (n as f64, m as f64);
    let k = (nf * mf / (nf + mf)).round_ties_even();
    Ok(KsTest {
        statistic,
        p_value: kolmogorov_sf(k as u64, statistic).clamp(0.0, 1.0),
        method: KsMethod::Asymptotic,
    })
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `D · lcm(n, m)` as an integer: the largest `|i · (m / g) - j · (n / g)|` after each distinct
/// value, `i` and `j` the values of `a` and `b` at or below it (`g = gcd(n, m)`).
fn max_gap(a: &[f64], b: &[f64], mg: u64, ng: u64) -> u64 {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (mut i, mut j) = (0usize, 0usize);
    let mut best = 0u64;
    while i < a.len() || j < b.len() {
        let v = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) => x.min(y),
            (Some(&x), None) => x,
            (None, Some(&y)) => y,
            (None, None) => break,
        };
        while i < a.len() && a[i] <= v {
            i += 1;
        }
        while j < b.len() && b[j] <= v {
            j += 1;
        }
        let gap = (i as u64 * mg).abs_diff(j as u64 * ng);
        best = best.max(gap);
    }
    best
}

/// The probability that a uniformly drawn monotone lattice path from (0, 0) to (n, m) reaches
/// a point with `|x · (m / g) - y · (n / g)| >= h`: `P(D >= h / lcm)` under the null.
fn exact_outside(n: u64, m: u64, g: u64, h: u64) -> f64 {
    let (mg, ng) = ((m / g) as i128, (n / g) as i128);
    let h = h as i128;
    // Column x: the y with |x·mg - y·ng| < h, clamped to [0, m].
    let band = |x: u64| -> (i128, i128) {
        let c = x as i128 * mg;
        let lo = (c - h).div_euclid(ng) + 1;
        let hi = (c + h + ng - 1).div_euclid(ng) - 1;
        (lo.max(0), hi.min(m as i128))
    };
    let mut out = 0.0f64;
    let (mut lo, mut hi) = band(0);
    // (0, 0) is inside: h >= 1.
    let mut cur = vec![0.0f64; (hi - lo + 1).max(0) as usize];
    if let Some(first) = cur.first_mut() {
        *first = 1.0;
    }
    for x in 0..=n {
        let (nlo, nhi) = if x < n { band(x + 1) } else { (0, -1) };
        let mut next = vec![0.0f64; (nhi - nlo + 1).max(0) as usize];
        for idx in 0..cur.len() {
            let mass = cur[idx];
            if mass == 0.0 {
                continue;
            }
            let y = lo + idx as i128;
            let rem_x = (n - x) as f64;
            let rem_y = (m as i128 - y) as f64;
            let rem = rem_x + rem_y;
            if rem == 0.0 {
                continue;
            }
            // A step up, within this column.
            if rem_y > 0.0 {
                let up = mass * rem_y / rem;
                if y < hi {
                    cur[idx + 1] += up;
                } else {
                    out += up;
                }
            }
            // A step right, into the next column.
            if rem_x > 0.0 {
                let right = mass * rem_x / rem;
                if y >= nlo && y <= nhi {
                    next[(y - nlo) as usize] += right;
                } else {
                    out += right;
                }
            }
        }
        (lo, hi) = (nlo, nhi);
        cur = next;
    }
    out
}

/// `P(D_k >= d)` for the one-sample two-sided Kolmogorov statistic of `k` values, with the
/// regimes of Simard and L'Ecuyer (2011) as scipy's `kstwo` chooses them.
fn kolmogorov_sf(k: u64, d: f64) -> f64 {
    if k == 0 {
        return f64::NAN;
    }
    if d >= 1.0 {
        return 0.0;
    }
    if d <= 0.0 {
        return 1.0;
    }
    let kf = k as f64;
    let t = kf * d;
    if t <= 1.0 {
        // Ruben and Gambino: P(D_k < d) = k! / k^k · (2t - 1)^k for 1/2 <= t <= 1.
        if t <= 0.5 {
            return 1.0;
        }
        let cdf = (ln_fact_over_pow(k) + kf * (2.0 * t - 1.0).ln()).exp();
        return 1.0 - cdf;
    }
    if t >= kf - 1.0 {
        return 2.0 * (1.0 - d).powf(kf);
    }
    if d >= 0.5 {
        return 2.0 * smirnov_sf(k, d);
    }
    let kx2 = t * d;
    if k <= 140 {
        if kx2 <= 4.0 {
            return 1.0 - durbin_cdf(k, d);
        }
        return 2.0 * smirnov_sf(k, d);
    }
    if kx2 >= 370.0 {
        return 0.0;
    }
    if kx2 >= 2.2 {
        return 2.0 * smirnov_sf(k, d);
    }
    let cdf = if k <= 100_000 && kf * d.powf(1.5) <= 1.4 {
        durbin_cdf(k, d)
    } else {
        pelz_good_cdf(k, d)
    };
    1.0 - cdf
}

/// `ln(k! / k^k)`.
fn ln_fact_over_pow(k: u64) -> f64 {
    let kf = k as f64;
    (1..=k).map(|i| (i as f64 / kf).ln()).sum()
}

/// `P(D_k^+ >= d)`, the one-sided Smirnov tail, by the Birnbaum–Tingey sum
/// `d · Σ_j C(k, j) (1 - d - j/k)^(k-j) (d + j/k)^(j-1)`, each term in logarithms.
fn smirnov_sf(k: u64, d: f64) -> f64 {
    let kf = k as f64;
    let last = (kf * (1.0 - d)).floor() as u64;
    let mut ln_binom = 0.0f64;
    let mut sum = 0.0f64;
    for j in 0..=last.min(k) {
        if j > 0 {
            ln_binom += ((k - j + 1) as f64).ln() - (j as f64).ln();
        }
        let jf = j as f64;
        let left = 1.0 - d - jf / kf;
        let right = d + jf / kf;
        if left <= 0.0 && k > j {
            continue;
        }
        let ln_term =
            ln_binom + if k > j { (kf - jf) * left.ln() } else { 0.0 } + (jf - 1.0) * right.ln();
        sum += ln_term.exp();
    }
    d * sum
}

/// `P(D_k < d)` by Durbin's matrix formula (Marsaglia, Tsang and Wang 2003): with
/// `k·d = q - e`, `q` an integer and `0 <= e < 1`, it is `k!/k^k · (H^k)[q-1][q-1]` for an
/// `(2q - 1)`-square matrix `H` built from `e`. The power keeps its scale in a separate
/// power of two.
fn durbin_cdf(k: u64, d: f64) -> f64 {
    let kd = k as f64 * d;
    let q = kd.floor() as usize + 1;
    let e = q as f64 - kd;
    let size = 2 * q - 1;
    let mut fact = vec![1.0f64; size + 1];
    for i in 1..=size {
        fact[i] = fact[i - 1] * i as f64;
    }
    let mut hm = vec![0.0f64; size * size];
    for i in 0..size {
        for j in 0..size {
            if i + 1 >= j {
                hm[i * size + j] = 1.0 / fact[i + 1 - j];
            }
        }
    }
    for i in 0..size {
        hm[i * size] -= e.powi(i as i32 + 1) / fact[i + 1];
        hm[(size - 1) * size + i] -= e.powi((size - i) as i32) / fact[size - i];
    }
    if 2.0 * e - 1.0 > 0.0 {
        hm[(size - 1) * size] += (2.0 * e - 1.0).powi(size as i32) / fact[size];
    }
    let (value, exp2) = matrix_power_entry(&hm, size, k, q - 1);
    if value <= 0.0 {
        return 0.0;
    }
    (ln_fact_over_pow(k) + value.ln() + exp2 as f64 * std::f64::consts::LN_2).exp()
}

/// Entry (`at`, `at`) of `m^p` as `value · 2^exp2`.
fn matrix_power_entry(m: &[f64], size: usize, mut p: u64, at: usize) -> (f64, i64) {
    let mul = |a: &[f64], b: &[f64]| -> Vec<f64> {
        let mut c = vec![0.0f64; size * size];
        for i in 0..size {
            for l in 0..size {
                let ail = a[i * size + l];
                if ail == 0.0 {
                    continue;
                }
                for j in 0..size {
                    c[i * size + j] += ail * b[l * size + j];
                }
            }
        }
        c
    };
    // Keeps every entry below 2^400 by moving the scale into the exponent.
    let rescale = |v: &mut Vec<f64>, exp2: &mut i64| {
        let big = v.iter().fold(0.0f64, |acc, x| acc.max(x.abs()));
        if big > 1e120 || (big < 1e-120 && big > 0.0) {
            let shift = big.log2().floor() as i64;
            let factor = (-(shift as f64) * std::f64::consts::LN_2).exp();
            for x in v.iter_mut() {
                *x *= factor;
            }
            *exp2 += shift;
        }
    };
    let mut result: Option<(Vec<f64>, i64)> = None;
    let mut base = (m.to_vec(), 0i64);
    while p > 0 {
        if p & 1 == 1 {
            result = Some(match result {
                None => base.clone(),
                Some((r, e)) => {
                    let mut prod = mul(&r, &base.0);
                    let mut e2 = e + base.1;
                    rescale(&mut prod, &mut e2);
                    (prod, e2)
                }
            });
        }
        p >>= 1;
        if p > 0 {
            let mut sq = mul(&base.0, &base.0);
            let mut e2 = 2 * base.1;
            rescale(&mut sq, &mut e2);
            base = (sq, e2);
        }
    }
    match result {
        Some((r, e)) => (r[at * size + at], e),
        None => (1.0, 0),
    }
}

/// `P(D_k <= d)` by the Pelz–Good (1976) expansion in `1/sqrt(k)` of the Li-Chien and
/// Korolyuk terms `K0 + K1/√k + K2/k + K3/k^1.5`, each in its theta-function form for small
/// `z = d·√k`.
fn pelz_good_cdf(k: u64, d: f64) -> f64 {
    use std::f64::consts::PI;
    let kf = k as f64;
    let z = kf.sqrt() * d;
    let z2 = z * z;
    let ln_q = -PI * PI / 8.0 / z2;
    if ln_q < -708.0 {
        return 0.0;
    }
    let (pi2, pi4, pi6) = (PI * PI, PI.powi(4), PI.powi(6));
    let (z4, z6, z8) = (z2 * z2, z2 * z2 * z2, z2 * z2 * z2 * z2);
    let terms = (16.0 * z / PI).ceil() as i64;
    // Sums over odd j = 2i - 1 of c(j) · q^(j²), for the four coefficient polynomials.
    let mut sums = [0.0f64; 4];
    for i in 1..=terms {
        let j = (2 * i - 1) as f64;
        let (j2, j4, j6) = (j * j, j.powi(4), j.powi(6));
        let w = (ln_q * j2).exp();
        sums[0] += w;
        sums[1] += w * (pi2 * j2 / 4.0 - z2);
        sums[2] += w
            * (6.0 * z6
                + 2.0 * z4
                + pi2 * (2.0 * z4 - 5.0 * z2) * j2 / 4.0
                + pi4 * (1.0 - 2.0 * z2) * j4 / 16.0);
        sums[3] += w
            * (-30.0 * z6 - 90.0 * z8
                + pi2 * (135.0 * z4 - 96.0 * z6) * j2 / 4.0
                + pi4 * (212.0 * z4 - 60.0 * z2) * j4 / 16.0
                + pi6 * (5.0 - 30.0 * z2) * j6 / 64.0);
    }
    let root = (2.0 * PI).sqrt();
    let k0 = root * sums[0] / z;
    let k1 = root * sums[1] / (6.0 * z4);
    let mut k2 = root * sums[2] / (72.0 * z.powi(7));
    let mut k3 = root * sums[3] / (6480.0 * z.powi(10));
    // The terms over all integers i: q' = exp(-π² / (2 z²)).
    let ln_q2 = -pi2 / 2.0 / z2;
    let mut extra2 = 0.0f64;
    let mut extra3 = 0.0f64;
    for i in 1..=terms {
        let fi = i as f64;
        let w = (ln_q2 * fi * fi).exp();
        extra2 += fi * fi * w;
        extra3 += (3.0 * z2 - pi2 * fi * fi) * fi * fi * w;
    }
    k2 += extra2 * pi2 * root / (-36.0 * z.powi(3));
    k3 += extra3 * pi2 * root / (216.0 * z6);
    k0 + k1 / kf.sqrt() + k2 / kf + k3 / kf.powf(1.5)
}

#[cfg(test)]
mod tests;
