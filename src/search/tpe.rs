//! The Tree-structured Parzen Estimator (`--search-planner optuna --optuna-sampler tpe`):
//! ringperf's own version of the algorithm Optuna's default sampler runs (Bergstra et al.,
//! 2011), independent per dimension as Optuna's default (`multivariate=False`) is.
//!
//! The points run so far are ranked (feasible before infeasible, then by the objective); the
//! best `ceil(0.1 n)` (at most 25, Optuna's default `gamma`) are the good set, the rest the bad
//! set. Each set gives, per dimension of the unit cube, a Parzen estimator: one normal per
//! point, truncated to `[0, 1]`, plus one wide prior normal at the centre (mean 0.5, sd 1), each
//! of equal weight; a point's width is the larger gap to its sorted neighbours (the bounds
//! count as neighbours), clipped to `[1 / min(100, n + 1), 1]`. 24 candidates are drawn from the
//! good estimator; the one of highest `l(x) / g(x)` (good density over bad) is run next.

/// Candidates drawn from the good estimator per suggestion (Optuna's `n_ei_candidates`).
pub const CANDIDATES: usize = 24;
const PRIOR_SD: f64 = 1.0;

/// One point run, in the unit cube, ranked by `rank` (smaller is better).
#[derive(Clone, Debug, PartialEq)]
pub struct Trial {
    /// Position in the unit cube.
    pub u: Vec<f64>,
    /// Its rank key: `(0, -objective)` feasible, `(1, …)` infeasible; compared as a pair.
    pub rank: (u8, f64),
}

/// The size of the good set among `n` points (Optuna's default `gamma`).
pub fn good_count(n: usize) -> usize {
    n.div_ceil(10).clamp(1, 25)
}

/// A 1-D Parzen estimator over `[0, 1]`: truncated normals `(mean, sd)`, equal weights.
#[derive(Clone, Debug, PartialEq)]
pub struct Parzen {
    /// The components, the prior last.
    pub parts: Vec<(f64, f64)>,
}

fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// `erfc` (Numerical Recipes' Chebyshev fit, relative error under 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

impl Parzen {
    /// The estimator of the points `xs` (unit-cube coordinates of one dimension).
    pub fn fit(xs: &[f64]) -> Self {
        let mut sorted: Vec<f64> = xs.iter().map(|x| x.clamp(0.0, 1.0)).collect();
        sorted.sort_by(f64::total_cmp);
        let min_sd = 1.0 / (sorted.len() as f64 + 1.0).min(100.0);
        let mut parts = Vec::with_capacity(sorted.len() + 1);
        for (i, &x) in sorted.iter().enumerate() {
            let left = if i == 0 { 0.0 } else { sorted[i - 1] };
            let right = sorted.get(i + 1).copied().unwrap_or(1.0);
            let sd = (x - left).max(right - x).clamp(min_sd, 1.0);
            parts.push((x, sd));
        }
        parts.push((0.5, PRIOR_SD));
        Parzen { parts }
    }

    /// The density at `x` in `[0, 1]`.
    pub fn density(&self, x: f64) -> f64 {
        let w = 1.0 / self.parts.len() as f64;
        self.parts
            .iter()
            .map(|&(m, s)| {
                let mass = normal_cdf((1.0 - m) / s) - normal_cdf(-m / s);
                let z = (x - m) / s;
                w * (-0.5 * z * z).exp() / (s * (2.0 * std::f64::consts::PI).sqrt() * mass)
            })
            .sum()
    }

    /// A draw: a component chosen evenly, then its normal until it falls in `[0, 1]` (clamped
    /// after 64 tries). `unit` gives uniform draws in `[0, 1)`.
    pub fn sample(&self, unit: &mut impl FnMut() -> f64) -> f64 {
        let k = ((unit() * self.parts.len() as f64) as usize).min(self.parts.len() - 1);
        let (m, s) = self.parts[k];
        let mut x = m;
        for _ in 0..64 {
            // Box-Muller.
            let (a, b) = (unit().max(f64::MIN_POSITIVE), unit());
            x = m + s * (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos();
            if (0.0..=1.0).contains(&x) {
                return x;
            }
        }
        x.clamp(0.0, 1.0)
    }
}

/// The candidates from the good estimator, best `l / g` first (unit cube; `dims` dimensions).
/// `trials` must not be empty.
pub fn candidates(trials: &[Trial], dims: usize, unit: &mut impl FnMut() -> f64) -> Vec<Vec<f64>> {
    let mut ranked: Vec<&Trial> = trials.iter().collect();
    ranked.sort_by(|a, b| a.rank.0.cmp(&b.rank.0).then(a.rank.1.total_cmp(&b.rank.1)));
    let (good, bad) = ranked.split_at(good_count(ranked.len()).min(ranked.len()));
    let fit =
        |set: &[&Trial], d: usize| Parzen::fit(&set.iter().map(|t| t.u[d]).collect::<Vec<_>>());
    let l: Vec<Parzen> = (0..dims).map(|d| fit(good, d)).collect();
    let g: Vec<Parzen> = (0..dims).map(|d| fit(bad, d)).collect();
    let mut scored: Vec<(f64, Vec<f64>)> = (0..CANDIDATES)
        .map(|_| {
            let x: Vec<f64> = l.iter().map(|p| p.sample(unit)).collect();
            let score = x
                .iter()
                .zip(l.iter().zip(&g))
                .map(|(&v, (l, g))| l.density(v).ln() - g.density(v).ln())
                .sum::<f64>();
            (score, x)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().map(|(_, x)| x).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed stream of uniform draws (a 64-bit LCG, Knuth's MMIX constants).
    fn lcg(seed: u64) -> impl FnMut() -> f64 {
        let mut s = seed;
        move || {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    #[test]
    fn erfc_and_the_good_set_size_are_the_published_figures() {
        // erfc(0.5) = 0.4795001221869535, erfc(1) = 0.1572992070502851 (Abramowitz & Stegun).
        assert!((erfc(0.5) - 0.479_500_122_186_953_5).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207_050_285_1).abs() < 1e-7);
        assert!((erfc(-1.0) - (2.0 - 0.157_299_207_050_285_1)).abs() < 1e-7);
        // Optuna's default gamma: min(ceil(0.1 n), 25).
        assert_eq!(
            [1, 9, 10, 11, 100, 251, 1000].map(good_count),
            [1, 1, 1, 2, 10, 25, 25]
        );
    }

    #[test]
    fn a_parzen_estimator_is_a_density_with_the_hand_computed_widths() {
        // Points 0.2 and 0.7: gaps 0.2|0.5 and 0.5|0.3; floor 1/3.
        let close = |got: &[(f64, f64)], want: &[(f64, f64)]| {
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(want) {
                assert!(
                    (g.0 - w.0).abs() < 1e-12 && (g.1 - w.1).abs() < 1e-12,
                    "{got:?}"
                );
            }
        };
        let p = Parzen::fit(&[0.7, 0.2]);
        close(&p.parts, &[(0.2, 0.5), (0.7, 0.5), (0.5, 1.0)]);
        // One point at 0.5 with the 1/2 floor: widths 0.5 (its gap to either bound).
        close(&Parzen::fit(&[0.5]).parts, &[(0.5, 0.5), (0.5, 1.0)]);
        // Points bunched at 0.5: the floor 1/min(100, n + 1) = 1/4 holds.
        close(
            &Parzen::fit(&[0.5, 0.5, 0.5]).parts,
            &[(0.5, 0.5), (0.5, 0.25), (0.5, 0.5), (0.5, 1.0)],
        );
        // Integrates to 1 over [0, 1] (midpoint rule, 10,000 steps).
        let n = 10_000;
        let area: f64 = (0..n)
            .map(|i| p.density((i as f64 + 0.5) / n as f64) / n as f64)
            .sum();
        assert!((area - 1.0).abs() < 1e-6, "{area}");
        let mut u = lcg(3);
        assert!((0..1000).all(|_| (0.0..=1.0).contains(&p.sample(&mut u))));
    }

    /// On a 1-D quadratic with its peak at 0.3, the best-ranked candidate lies near the good
    /// points and away from the bad ones.
    #[test]
    fn the_best_candidate_is_in_the_good_region_of_a_quadratic() {
        let f = |x: f64| -(x - 0.3) * (x - 0.3);
        let xs = [
            0.05, 0.28, 0.33, 0.5, 0.62, 0.75, 0.81, 0.9, 0.95, 0.99, 0.15, 0.7,
        ];
        let trials: Vec<Trial> = xs
            .iter()
            .map(|&x| Trial {
                u: vec![x],
                rank: (0, -f(x)),
            })
            .collect();
        for seed in 0..20 {
            let best = candidates(&trials, 1, &mut lcg(seed))[0][0];
            assert!((0.1..=0.5).contains(&best), "seed {seed}: {best}");
        }
    }

    /// Infeasible points rank after every feasible one, whatever their objective.
    #[test]
    fn infeasible_points_are_never_the_good_set() {
        let mut trials: Vec<Trial> = (0..9)
            .map(|i| Trial {
                u: vec![0.9 + f64::from(i) * 0.01],
                rank: (1, -1e9),
            })
            .collect();
        trials.push(Trial {
            u: vec![0.1],
            rank: (0, -1.0),
        });
        for seed in 0..20 {
            let best = candidates(&trials, 1, &mut lcg(seed))[0][0];
            assert!(best < 0.6, "seed {seed}: {best}");
        }
    }
}
