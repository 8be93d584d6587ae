//! An orchestrator's think time (`dag_jsonl`'s `think_time_ms`, `think_time_sigma`): the wait
//! before each round, as AIPerf 0.13's branch orchestrator draws it (`_sample_think_ms`).
//!
//! Without a distribution the wait is the turn's delay. With one it is a lognormal draw whose
//! median is that delay, `median * exp(min(N(0, sigma), 700))` (a non-finite draw falls back
//! to the median), then clamped to the bounds. Each (instance, round) draws from its own
//! stream, NumPy's `default_rng` seeded with AIPerf's derivation of the run's seed and
//! `dag_think:{instance}:{round}`, the instance being the session's sampling ordinal (its
//! index among the run's new sessions), so a seeded run draws AIPerf's values. A child
//! orchestrator has no ordinal: AIPerf keys it by its random correlation id, as ringperf does
//! (its draws differ run to run, within the bounds).

use ringperf_wire::conversation::ThinkTime;
use ringperf_workload::workload::nprandom::NpRandom;
use ringperf_workload::workload::pyrandom::aiperf_derive;

/// The wait, ms, before round `round` (the turn's index) of the orchestrator instance
/// `instance` (its ordinal, else its correlation id), whose turn's delay is `median_ms`.
pub(super) fn think_ms(
    seed: u64,
    instance: &str,
    round: u32,
    median_ms: f64,
    spec: Option<ThinkTime>,
) -> f64 {
    let Some(spec) = spec else {
        return median_ms;
    };
    if median_ms <= 0.0 {
        return median_ms;
    }
    let mut rng = NpRandom::new(aiperf_derive(
        seed,
        &format!("dag_think:{instance}:{round}"),
    ));
    let normal = rng.standard_normal() * spec.sigma;
    let mut draw = median_ms * normal.min(700.0).exp();
    if !draw.is_finite() {
        draw = median_ms;
    }
    if let Some(lo) = spec.min_ms {
        draw = draw.max(lo);
    }
    if let Some(hi) = spec.max_ms {
        draw = draw.min(hi);
    }
    draw
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_without_a_distribution_or_a_median() {
        assert_eq!(think_ms(7, "0", 1, 25.0, None), 25.0);
        let spec = ThinkTime {
            sigma: 1.0,
            min_ms: Some(5.0),
            max_ms: None,
        };
        assert_eq!(think_ms(7, "0", 1, 0.0, Some(spec)), 0.0);
    }

    /// AIPerf's draws for `--random-seed 7`, sigma 0.5, median 40 ms (its
    /// `_rng.derive(f"dag_think:{ordinal}:{round}").normal(0.0, 0.5)`, run in its venv).
    #[test]
    fn a_seeded_draw_is_aiperfs() {
        let spec = Some(ThinkTime {
            sigma: 0.5,
            min_ms: None,
            max_ms: None,
        });
        for (instance, round, want) in [
            ("0", 0, 14.327820911273747),
            ("0", 1, 21.005751891445264),
            ("1", 0, 39.09995200160612),
            ("3", 2, 52.71511605403873),
        ] {
            let got = think_ms(7, instance, round, 40.0, spec);
            assert!(
                (got - want).abs() < 1e-9,
                "{instance}:{round}: {got} != {want}"
            );
        }
        let bounded = Some(ThinkTime {
            sigma: 0.5,
            min_ms: Some(20.0),
            max_ms: Some(45.0),
        });
        assert_eq!(think_ms(7, "0", 0, 40.0, bounded), 20.0);
        assert_eq!(think_ms(7, "3", 2, 40.0, bounded), 45.0);
    }

    /// Unseeded (a drawn seed, as AIPerf's unseeded streams), the draws vary but keep their
    /// bounds, and half of them fall below the median.
    #[test]
    fn unseeded_draws_keep_their_bounds_around_the_median() {
        let spec = |min_ms, max_ms| {
            Some(ThinkTime {
                sigma: 1.0,
                min_ms,
                max_ms,
            })
        };
        let draws: Vec<f64> = (0..400u64)
            .map(|i| think_ms(rand::random(), &i.to_string(), 0, 50.0, spec(None, None)))
            .collect();
        let below = draws.iter().filter(|&&d| d < 50.0).count();
        assert!(
            (140..=260).contains(&below),
            "{below} of 400 below the median"
        );
        for i in 0..400u64 {
            let d = think_ms(
                rand::random(),
                &i.to_string(),
                1,
                50.0,
                spec(Some(30.0), Some(70.0)),
            );
            assert!((30.0..=70.0).contains(&d), "{d}");
        }
    }
}
