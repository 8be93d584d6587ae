//! AIPerf 0.13's audio metrics (`audio_duration_metric.py`, `rtfx_metric.py`; docs/metrics.md),
//! for the types that carry audio (SUPPORTS_AUDIO_ONLY): the length of the clip a request sent,
//! and the inverse real-time factor, that length over the request's latency.

use super::registry::MetricId;

/// `audio_duration` (seconds) and `rtfx` of a valid record whose request sent a clip of
/// `audio_seconds`, its request latency `latency_ns`. No value without a positive length, and no
/// `rtfx` without a positive latency, as AIPerf raises `NoMetricValue` then.
pub(super) fn values(
    audio_seconds: Option<f64>,
    latency_ns: Option<i64>,
) -> [(MetricId, Option<f64>); 2] {
    let seconds = audio_seconds.filter(|s| *s > 0.0);
    let rtfx = seconds
        .zip(latency_ns.filter(|&l| l > 0))
        .map(|(s, l)| s / (l as f64 / 1e9));
    [(MetricId::AudioDuration, seconds), (MetricId::Rtfx, rtfx)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_and_rtfx_by_hand() {
        // 10 s of audio transcribed in 0.5 s of request latency: 20× real time.
        assert_eq!(
            values(Some(10.0), Some(500_000_000)),
            [
                (MetricId::AudioDuration, Some(10.0)),
                (MetricId::Rtfx, Some(20.0))
            ]
        );
        assert_eq!(
            values(Some(10.0), Some(0)),
            [
                (MetricId::AudioDuration, Some(10.0)),
                (MetricId::Rtfx, None)
            ]
        );
        assert_eq!(
            values(None, Some(5)),
            [(MetricId::AudioDuration, None), (MetricId::Rtfx, None)]
        );
        assert_eq!(
            values(Some(0.0), Some(5))[0],
            (MetricId::AudioDuration, None)
        );
    }
}
