//! AIPerf 0.13's speculative-decoding metrics (docs/metrics.md, "Speculative decoding"), from
//! each request's acceptance record (vLLM's `metrics.speculative_decoding`): six per request,
//! three sums, two pooled ratios, and the histogram of accepted drafts pooled over the phase.

use super::registry::MetricId;
use ringperf_wire::record::spec_decode::SpecDecode;

/// AIPerf's cap of the console line's buckets: `j ≥ 8` fold into `>=8`.
pub const CONSOLE_BUCKETS: u32 = 8;

/// The per-request values, base units (the rate in %):
///
/// - `spec_decode_acceptance_length`: `mean_acceptance_length` as sent;
/// - `spec_decode_draft_acceptance_rate`: `draft_acceptance_rate` × 100;
/// - `spec_decode_accepted_per_verified`: (accepted + steps) / (drafted + steps), none at 0;
/// - `spec_decode_steps`, `spec_decode_accepted_draft_tokens`, `spec_decode_draft_tokens`.
pub(super) fn values(s: &SpecDecode) -> [(MetricId, Option<f64>); 6] {
    let per_verified = s.drafted + s.steps;
    [
        (
            MetricId::SpecDecodeAcceptanceLength,
            Some(s.mean_acceptance_length),
        ),
        (
            MetricId::SpecDecodeDraftAcceptanceRate,
            Some(s.draft_acceptance_rate * 100.0),
        ),
        (
            MetricId::SpecDecodeAcceptedPerVerified,
            (per_verified > 0).then(|| (s.accepted + s.steps) as f64 / per_verified as f64),
        ),
        (MetricId::SpecDecodeSteps, Some(s.steps as f64)),
        (
            MetricId::SpecDecodeAcceptedDraftTokens,
            Some(s.accepted as f64),
        ),
        (MetricId::SpecDecodeDraftTokens, Some(s.drafted as f64)),
    ]
}

/// The phase's figures from the sums of the per-request steps, accepted and drafted tokens:
/// the three sums, then `1 + accepted / steps` and `accepted / drafted × 100` (each left out
/// when its denominator is 0). `None` sums: no request had stats.
pub(super) fn derived(
    steps: Option<f64>,
    accepted: Option<f64>,
    drafted: Option<f64>,
) -> Vec<(MetricId, f64)> {
    use MetricId as M;
    let mut out = Vec::new();
    for (id, v) in [
        (M::TotalSpecDecodeSteps, steps),
        (M::TotalAcceptedDraftTokens, accepted),
        (M::TotalDraftTokens, drafted),
    ] {
        out.extend(v.map(|v| (id, v)));
    }
    if let (Some(s), Some(a)) = (steps, accepted)
        && s > 0.0
    {
        out.push((M::SpecDecodeTokenWeightedAcceptanceLength, 1.0 + a / s));
    }
    if let (Some(d), Some(a)) = (drafted, accepted)
        && d > 0.0
    {
        out.push((M::SpecDecodeOverallDraftAcceptanceRate, a / d * 100.0));
    }
    out
}

/// Adds one request's histogram to the pooled one (`pooled[j]`: steps that accepted `j`).
pub(super) fn pool(pooled: &mut Vec<u64>, s: &SpecDecode) {
    for (j, c) in &s.histogram {
        let j = *j as usize;
        if pooled.len() <= j {
            pooled.resize(j + 1, 0);
        }
        pooled[j] += c;
    }
}

/// AIPerf's one console line under the table: each bucket from 0 to the largest observed as a
/// whole percentage of the steps, buckets from [`CONSOLE_BUCKETS`] on folded into one; `None`
/// without a step.
#[must_use]
pub fn histogram_line(pooled: &[(u32, u64)]) -> Option<String> {
    let total: u64 = pooled.iter().map(|(_, c)| c).sum();
    let max = pooled
        .iter()
        .filter(|(_, c)| *c > 0)
        .map(|(j, _)| *j)
        .max()?;
    if total == 0 {
        return None;
    }
    // `{:.0}` rounds the exact binary value half to even, as Python's `f"{v:.0f}"` does.
    let share = |n: u64| format!("{:.0}%", n as f64 / total as f64 * 100.0);
    let count = |j: u32| pooled.iter().find(|(b, _)| *b == j).map_or(0, |(_, c)| *c);
    let folded = max >= CONSOLE_BUCKETS;
    let top = if folded { CONSOLE_BUCKETS - 1 } else { max };
    let mut parts: Vec<String> = (0..=top)
        .map(|j| format!("{j}: {}", share(count(j))))
        .collect();
    if folded {
        let rest: u64 = pooled
            .iter()
            .filter(|(j, _)| *j >= CONSOLE_BUCKETS)
            .map(|(_, c)| c)
            .sum();
        parts.push(format!(">={CONSOLE_BUCKETS}: {}", share(rest)));
    }
    Some(format!(
        "Accepted drafts per step (% of steps):  {}",
        parts.join("   ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(hist: &[(u32, u64)], drafted: u64) -> SpecDecode {
        let steps = hist.iter().map(|(_, c)| c).sum();
        let accepted = hist.iter().map(|(j, c)| u64::from(*j) * c).sum();
        SpecDecode {
            mean_acceptance_length: 1.0 + accepted as f64 / steps as f64,
            draft_acceptance_rate: accepted as f64 / drafted as f64,
            histogram: hist.to_vec(),
            accepted,
            drafted,
            steps,
        }
    }

    #[test]
    fn per_request_values_by_hand() {
        // 4 steps accepting 0, 1, 2, 3 of 3 drafts: 6 of 12, (6 + 4) / (12 + 4).
        let v = values(&s(&[(0, 1), (1, 1), (2, 1), (3, 1)], 12));
        let get = |id| v.iter().find(|(m, _)| *m == id).and_then(|(_, x)| *x);
        assert_eq!(get(MetricId::SpecDecodeAcceptanceLength), Some(2.5));
        assert_eq!(get(MetricId::SpecDecodeDraftAcceptanceRate), Some(50.0));
        assert_eq!(get(MetricId::SpecDecodeAcceptedPerVerified), Some(0.625));
        assert_eq!(get(MetricId::SpecDecodeSteps), Some(4.0));
        // No step and no draft: no accepted-per-verified.
        let none = values(&SpecDecode {
            mean_acceptance_length: 1.0,
            draft_acceptance_rate: 0.0,
            histogram: Vec::new(),
            accepted: 0,
            drafted: 0,
            steps: 0,
        });
        assert_eq!(none[2].1, None);
    }

    #[test]
    fn pooled_ratios_and_the_console_line() {
        let d = derived(Some(506.0), Some(669.0), Some(1518.0));
        assert_eq!(d[0], (MetricId::TotalSpecDecodeSteps, 506.0));
        assert_eq!(d[3].0, MetricId::SpecDecodeTokenWeightedAcceptanceLength);
        assert!((d[3].1 - (1.0 + 669.0 / 506.0)).abs() < 1e-12);
        assert!((d[4].1 - 669.0 / 1518.0 * 100.0).abs() < 1e-12);
        assert!(derived(None, None, None).is_empty());
        assert_eq!(derived(Some(0.0), Some(0.0), Some(0.0)).len(), 3);
        let mut pooled = Vec::new();
        pool(&mut pooled, &s(&[(0, 2), (3, 1)], 9));
        pool(&mut pooled, &s(&[(1, 1)], 3));
        assert_eq!(pooled, [2, 1, 0, 1]);
        // AIPerf's line of its own run (tests/data/aiperf-spec-decode).
        let line = histogram_line(&[(0, 149), (1, 151), (2, 100), (3, 106)]).unwrap();
        assert_eq!(
            line,
            "Accepted drafts per step (% of steps):  0: 29%   1: 30%   2: 20%   3: 21%"
        );
        // Buckets from 8 on fold into one.
        let line = histogram_line(&[(0, 1), (9, 1), (12, 2)]).unwrap();
        assert!(line.ends_with("7: 0%   >=8: 75%"), "{line}");
        assert_eq!(histogram_line(&[]), None);
    }
}
