//! AIPerf's "polynomial histogram" percentile estimator (docs/output-formats.md).
//!
//! Prometheus buckets only say how many observations fell between two bounds. This estimator
//! learns per-bucket means (and variances) from scrape intervals where every new observation
//! landed in a single bucket, rebuilds a plausible set of observations that honours the bucket
//! counts and the observed sum, back-fills the `+Inf` bucket, and takes NumPy-linear percentiles.

use super::stats::{PERCENTILES, np_sum, percentile_sorted, var_ddof1};

/// Above this many observations the counts are scaled down before generating points.
const MAX_OBSERVATIONS: f64 = 100_000.0;

/// What was learned about one bucket from single-bucket scrape intervals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LearnedBucket {
    /// Count-weighted mean of the interval means.
    pub mean: f64,
    /// Sample variance (ddof=1) of the interval means, when at least 3 intervals were seen.
    pub variance: Option<f64>,
}

/// Learns per-bucket means from consecutive scrapes starting at `start_idx` (phase 1).
///
/// `bucket_rows[i]` holds the cumulative bucket counts of scrape `i`, aligned with `les`.
/// Returns one entry per bucket (`None` if no single-bucket interval hit it).
#[must_use]
pub fn learn_bucket_stats(
    les: &[f64],
    sums: &[f64],
    counts: &[f64],
    bucket_rows: &[&[f64]],
    start_idx: usize,
) -> Vec<Option<LearnedBucket>> {
    let nb = les.len();
    // Per bucket: recorded (mean, weight) pairs.
    let mut seen: Vec<Vec<(f64, f64)>> = vec![Vec::new(); nb];
    let n = sums.len().min(counts.len()).min(bucket_rows.len());
    let mut per_bucket = vec![0.0; nb];
    for i in start_idx.saturating_add(1)..n {
        let (Some(c1), Some(c0), Some(s1), Some(s0), Some(r1), Some(r0)) = (
            counts.get(i),
            counts.get(i - 1),
            sums.get(i),
            sums.get(i - 1),
            bucket_rows.get(i),
            bucket_rows.get(i - 1),
        ) else {
            continue;
        };
        // NumPy `astype(int64)` truncates toward zero.
        let count_delta = (c1 - c0).trunc();
        if count_delta.is_nan() || count_delta <= 0.0 {
            continue;
        }
        let sum_delta = s1 - s0;
        let mut prev_cum = 0.0;
        for (j, slot) in per_bucket.iter_mut().enumerate() {
            let cum =
                (r1.get(j).copied().unwrap_or(0.0) - r0.get(j).copied().unwrap_or(0.0)).max(0.0);
            *slot = if j == 0 {
                cum
            } else {
                (cum - prev_cum).max(0.0)
            };
            prev_cum = cum;
        }
        let mut hit = per_bucket.iter().enumerate().filter(|(_, v)| **v > 0.0);
        if let (Some((j, _)), None) = (hit.next(), hit.next())
            && let Some(list) = seen.get_mut(j)
        {
            list.push((sum_delta / count_delta, count_delta));
        }
    }
    seen.into_iter()
        .map(|list| {
            let weight: f64 = list.iter().map(|(_, w)| w).sum();
            if list.is_empty() || weight <= 0.0 {
                return None;
            }
            let mean = list.iter().map(|(m, w)| m * w).sum::<f64>() / weight;
            let means: Vec<f64> = list.iter().map(|(m, _)| *m).collect();
            let variance = (list.len() >= 3).then(|| var_ddof1(&means)).flatten();
            Some(LearnedBucket { mean, variance })
        })
        .collect()
}

/// One finite bucket prepared for generation.
struct Bucket {
    lower: f64,
    upper: f64,
    count: f64,
    learned: Option<LearnedBucket>,
}

impl Bucket {
    fn width(&self) -> f64 {
        self.upper - self.lower
    }
    fn mid(&self) -> f64 {
        (self.lower + self.upper) / 2.0
    }
    /// The learned mean when strictly inside the bucket bounds.
    fn valid_mean(&self) -> Option<f64> {
        self.learned
            .map(|l| l.mean)
            .filter(|m| *m > self.lower && *m < self.upper)
    }
}

/// Estimates p1…p99 (docs/output-formats.md) from cumulative window bucket deltas.
///
/// `les` are sorted ascending (`+Inf`, if present, last) and aligned with `cumulative` and
/// `learned`. Returns `None` where AIPerf reports no estimate.
#[must_use]
pub fn estimate_percentiles(
    les: &[f64],
    cumulative: &[f64],
    total_sum: f64,
    total_count: f64,
    learned: &[Option<LearnedBucket>],
) -> Option<[f64; 9]> {
    if total_count.is_nan()
        || total_count <= 0.0
        || les.is_empty()
        || !total_sum.is_finite()
        || total_sum < 0.0
    {
        return None;
    }
    if total_sum == 0.0 {
        return Some([0.0; 9]);
    }
    // Phase 0: per-bucket counts.
    let mut buckets: Vec<Bucket> = Vec::new();
    let mut inf_cum = None;
    let mut prev_cum = 0.0;
    let mut lower = 0.0;
    for (j, (&le, &cum)) in les.iter().zip(cumulative).enumerate() {
        if le.is_infinite() {
            inf_cum = Some(cum);
            continue;
        }
        let count = if buckets.is_empty() {
            cum
        } else {
            cum - prev_cum
        };
        let learned_j = learned.get(j).copied().flatten();
        buckets.push(Bucket {
            lower,
            upper: le,
            count: count.max(0.0),
            learned: learned_j,
        });
        prev_cum = cum;
        lower = le;
    }
    let max_finite = buckets.last()?.upper;
    let mut inf_count_f = inf_cum.map_or(0.0, |c| (c - prev_cum).max(0.0));
    let mut total_sum = total_sum;
    let total: f64 = buckets.iter().map(|b| b.count).sum::<f64>() + inf_count_f;
    if total > MAX_OBSERVATIONS {
        let ratio = MAX_OBSERVATIONS / total;
        buckets.iter_mut().for_each(|b| b.count *= ratio);
        inf_count_f *= ratio;
        total_sum *= ratio;
    }
    let inf_count = if inf_count_f > 0.0 {
        inf_count_f.ceil() as usize
    } else {
        0
    };

    // Phase 2: estimated finite sum.
    let finite_sum: f64 = buckets
        .iter()
        .filter(|b| b.count > 0.0)
        .map(|b| b.count * b.valid_mean().unwrap_or_else(|| b.mid()))
        .sum();

    // Phase 3: back-calculate the +Inf observations.
    let mut inf_obs = Vec::with_capacity(inf_count);
    if inf_count > 0 {
        let inf_sum = total_sum - finite_sum;
        let mut inf_avg = inf_sum / inf_count as f64;
        if inf_sum <= 0.0 || inf_avg <= max_finite {
            inf_avg = 1.5 * max_finite;
        }
        let mut upper_est = 2.0 * inf_avg - max_finite;
        if upper_est <= max_finite {
            upper_est = 2.0 * max_finite;
        }
        if inf_count == 1 {
            inf_obs.push(inf_avg);
        } else {
            let step = (upper_est - max_finite) / (inf_count - 1) as f64;
            inf_obs.extend((0..inf_count).map(|i| max_finite + step * i as f64));
            if let Some(last) = inf_obs.last_mut() {
                *last = upper_est;
            }
        }
    }
    let actual_finite_sum = total_sum - np_sum(&inf_obs);

    // Phase 4: finite observations with the sum constraint.
    let mut obs = generate_finite(&mut buckets, actual_finite_sum);
    obs.extend(inf_obs);
    if obs.is_empty() {
        return None;
    }
    obs.sort_by(f64::total_cmp);
    let mut out = [0.0; 9];
    for (slot, q) in out.iter_mut().zip(PERCENTILES) {
        *slot = percentile_sorted(&obs, q)?;
    }
    Some(out)
}

fn generate_finite(buckets: &mut [Bucket], target: f64) -> Vec<f64> {
    let mut target = target;
    let finite_total: f64 = buckets.iter().map(|b| b.count).sum();
    if finite_total > MAX_OBSERVATIONS {
        let ratio = MAX_OBSERVATIONS / finite_total;
        buckets.iter_mut().for_each(|b| b.count *= ratio);
        target *= ratio;
    }
    let finite_total: f64 = buckets.iter().map(|b| b.count).sum();
    if finite_total <= 0.0 {
        return Vec::new();
    }
    let avg = target / finite_total;
    let max_count = buckets.iter().map(|b| b.count).fold(0.0, f64::max);
    let dominant = if max_count / finite_total >= 0.95 {
        buckets.iter().position(|b| b.count == max_count)
    } else {
        None
    };
    let mut obs = Vec::new();
    // (start, end, bucket index) of each bucket's run of observations.
    let mut ranges = Vec::new();
    for (bi, b) in buckets.iter().enumerate() {
        let n = b.count as usize;
        if n == 0 {
            continue;
        }
        let start = obs.len();
        fill_bucket(b, n, dominant == Some(bi), avg, &mut obs);
        ranges.push((start, obs.len(), bi));
    }
    // Sum correction (single pass).
    let g = np_sum(&obs);
    if g <= 0.0 || target <= 0.0 {
        return obs;
    }
    let d = target - g;
    if (d / target).abs() < 0.001 {
        return obs;
    }
    for (start, end, bi) in ranges {
        let (Some(b), Some(run)) = (buckets.get(bi), obs.get_mut(start..end)) else {
            continue;
        };
        let n = run.len() as f64;
        let w = np_sum(run) / g;
        let limit = 0.4 * b.width();
        let shift = (d * w / n).clamp(-limit, limit);
        for x in run.iter_mut() {
            *x = (*x + shift).clamp(b.lower, b.upper);
        }
    }
    obs
}

fn fill_bucket(b: &Bucket, n: usize, dominant: bool, avg: f64, out: &mut Vec<f64>) {
    let (lower, upper, width, mid) = (b.lower, b.upper, b.width(), b.mid());
    let nf = n as f64;
    let frac = |i: usize| (i as f64 + 0.5) / nf;
    let mean = b.valid_mean();
    let var = b.learned.and_then(|l| l.variance);
    if let (Some(mean), Some(var)) = (mean, var)
        && var > 0.0
    {
        let std = var.sqrt();
        let spread = 4.0 * std / width;
        let offset = (mean - mid).abs() / width;
        if spread < 0.01 {
            let x = lower;
            let a = if mean - x > 0.0 {
                mean + var / (mean - x)
            } else {
                upper
            };
            let a = a.clamp(lower, upper);
            let denom = var + (mean - x).powi(2);
            let p = if denom == 0.0 { 0.5 } else { var / denom }.clamp(0.0, 1.0);
            let k = ((nf * p) as usize).min(n);
            out.extend(std::iter::repeat_n(x, k));
            out.extend(std::iter::repeat_n(a, n - k));
            return;
        }
        let variance_aware = |f: f64| {
            let (s_lo, s_hi) = if std == 0.0 {
                (3.0, 3.0)
            } else {
                (
                    ((mean - lower) / std).min(3.0),
                    ((upper - mean) / std).min(3.0),
                )
            };
            let pos = if f < 0.5 {
                mean - s_lo * std * (1.0 - 2.0 * f)
            } else {
                mean + s_hi * std * (2.0 * f - 1.0)
            };
            pos.clamp(lower, upper)
        };
        if spread < 0.2 && offset < 0.3 {
            out.extend((0..n).map(|i| {
                let f = frac(i);
                let uniform = (lower + width * f + (mean - mid)).clamp(lower, upper);
                0.5 * uniform + 0.5 * variance_aware(f)
            }));
        } else {
            out.extend((0..n).map(|i| variance_aware(frac(i))));
        }
        return;
    }
    let mut center = mean.unwrap_or(mid);
    if dominant && avg > lower && avg < upper {
        center = avg;
    }
    out.extend((0..n).map(|i| (lower + width * frac(i) + (center - mid)).clamp(lower, upper)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: [f64; 9], want: [f64; 9]) {
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "got {got:?}\nwant {want:?}");
        }
    }

    const INF: f64 = f64::INFINITY;

    #[test]
    fn vector_without_learned_stats() {
        let les = [0.1, 0.5, 1.0, INF];
        let got = estimate_percentiles(&les, &[20.0, 60.0, 90.0, 100.0], 45.0, 100.0, &[]);
        let want = [
            0.0, 0.019504, 0.044254, 0.106391, 0.353521, 0.629636, 0.887923, 1.45, 1.89,
        ];
        close(got.unwrap(), want);
    }

    #[test]
    fn vector_with_learned_stats() {
        let les = [0.1, 0.5, 1.0, INF];
        let sums = [0.0, 0.5, 1.1, 1.6, 3.0, 4.0];
        let counts = [0.0, 10.0, 20.0, 30.0, 40.0, 45.0];
        let rows: [&[f64]; 6] = [
            &[0.0, 0.0, 0.0, 0.0],
            &[10.0, 10.0, 10.0, 10.0],
            &[20.0, 20.0, 20.0, 20.0],
            &[30.0, 30.0, 30.0, 30.0],
            &[30.0, 40.0, 40.0, 40.0],
            &[30.0, 40.0, 45.0, 45.0],
        ];
        let learned = learn_bucket_stats(&les, &sums, &counts, &rows, 0);
        let b0 = learned[0].unwrap();
        assert!((b0.mean - 0.053333).abs() < 1e-6);
        assert!((b0.variance.unwrap() - 3.3333e-05).abs() < 1e-9);
        assert_eq!(
            learned[1].map(|l| ((l.mean * 1e6).round(), l.variance)),
            Some((140000.0, None))
        );
        assert!((learned[2].unwrap().mean - 0.2).abs() < 1e-12);
        assert_eq!(learned[3], None);
        let got = estimate_percentiles(&les, &[30.0, 40.0, 45.0, 45.0], 4.0, 45.0, &learned);
        let want = [
            0.013939, 0.015972, 0.018512, 0.026133, 0.038835, 0.1, 0.398125, 0.54, 0.706,
        ];
        close(got.unwrap(), want);
    }

    #[test]
    fn guards() {
        let les = [1.0, INF];
        assert_eq!(estimate_percentiles(&les, &[0.0, 0.0], 1.0, 0.0, &[]), None);
        assert_eq!(estimate_percentiles(&[], &[], 1.0, 3.0, &[]), None);
        assert_eq!(
            estimate_percentiles(&les, &[1.0, 1.0], f64::NAN, 1.0, &[]),
            None
        );
        assert_eq!(
            estimate_percentiles(&les, &[1.0, 1.0], -1.0, 1.0, &[]),
            None
        );
        assert_eq!(
            estimate_percentiles(&les, &[1.0, 1.0], 0.0, 1.0, &[]),
            Some([0.0; 9])
        );
        assert_eq!(estimate_percentiles(&[INF], &[3.0], 3.0, 3.0, &[]), None);
    }

    #[test]
    fn single_inf_observation_uses_back_calculated_average() {
        // One observation in (0,1] at midpoint 0.5, one in +Inf: inf_avg = 10 - 0.5 = 9.5.
        let got = estimate_percentiles(&[1.0, INF], &[1.0, 2.0], 10.0, 2.0, &[]).unwrap();
        assert!((got[8] - (0.5 + 0.99 * 9.0)).abs() < 1e-9, "{got:?}");
        assert!((got[0] - (0.5 + 0.01 * 9.0)).abs() < 1e-9);
    }

    #[test]
    fn two_point_when_spread_is_tiny() {
        // Learned mean 0.5, variance 1e-6 in [0,10): spread = 4e-3/10 < 0.01 → two points at 0
        // and 0.5 + 1e-6/0.5; p = 1e-6/(1e-6+0.25) ≈ 4e-6 → int(100·p) = 0 at x=0.
        let learned = [
            Some(LearnedBucket {
                mean: 0.5,
                variance: Some(1e-6),
            }),
            None,
        ];
        let a = 0.5 + 1e-6 / 0.5;
        let got = estimate_percentiles(&[10.0, INF], &[100.0, 100.0], 100.0 * a, 100.0, &learned);
        close(got.unwrap(), [a; 9]);
    }

    #[test]
    fn blended_when_spread_is_moderate() {
        // mean 0.5, std 0.025 in [0,1): spread 0.1, offset 0 → 0.5·uniform + 0.5·variance-aware.
        // f = .25/.75: uniform .25/.75; variance-aware .5 ∓ 3·.025·.5 = .4625/.5375.
        let learned = [Some(LearnedBucket {
            mean: 0.5,
            variance: Some(0.000625),
        })];
        let got = estimate_percentiles(&[1.0], &[2.0], 1.0, 2.0, &learned).unwrap();
        let (a, b) = (0.35625, 0.64375);
        close(got, PERCENTILES.map(|q| a + (b - a) * q / 100.0));
    }

    #[test]
    fn dominant_bucket_centres_on_the_average() {
        // All 100 observations in (1,2], sum 130 → centre 1.3: values max(1, .805 + i/100),
        // sum 132 → one −0.02 shift, clipped at 1.
        let got = estimate_percentiles(&[1.0, 2.0, INF], &[0.0, 100.0, 100.0], 130.0, 100.0, &[])
            .unwrap();
        assert!((got[0] - 1.0).abs() < 1e-9);
        assert!((got[4] - 1.28).abs() < 1e-9, "{got:?}");
        assert!((got[8] - 1.7651).abs() < 1e-9, "{got:?}");
    }

    proptest::proptest! {
        #[test]
        fn estimates_are_sorted_and_non_negative(
            incs in proptest::collection::vec(0u32..50, 1..6),
            inf_extra in 0u32..20,
            sum in 0.0f64..1e4,
        ) {
            let les: Vec<f64> = (1..=incs.len()).map(|i| i as f64 * 0.5)
                .chain(std::iter::once(INF)).collect();
            let mut cum = Vec::new();
            let mut acc = 0.0;
            for i in &incs {
                acc += f64::from(*i);
                cum.push(acc);
            }
            cum.push(acc + f64::from(inf_extra));
            let total = acc + f64::from(inf_extra);
            if let Some(p) = estimate_percentiles(&les, &cum, sum, total, &[]) {
                proptest::prop_assert!(p.windows(2).all(|w| w[0] <= w[1]));
                proptest::prop_assert!(p.iter().all(|v| *v >= 0.0 && v.is_finite()));
            }
        }
    }
}
