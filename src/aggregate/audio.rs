//! AIPerf 0.13's audio metrics (`audio_duration_metric.py`, `rtfx_metric.py`; docs/metrics.md),
//! for the types that carry audio (SUPPORTS_AUDIO_ONLY): the length of the clip a request sent,
//! and the inverse real-time factor, that length over the request's latency.

use super::metrics::MetricValue;
use super::registry::MetricId;
use crate::record::RecordFacts;

/// Pushes `audio_duration` (seconds) and `rtfx` of a valid record whose request sent a clip of
/// known length; `latency_ns` is its request latency. No value without a positive length, and
/// no `rtfx` without a positive latency, as AIPerf raises `NoMetricValue` then.
pub(super) fn push_metrics(
    push: &mut impl FnMut(MetricId, Option<MetricValue>),
    f: &RecordFacts,
    latency_ns: Option<i64>,
) {
    let Some(seconds) = f.audio_seconds.filter(|s| *s > 0.0) else {
        return;
    };
    push(MetricId::AudioDuration, Some(MetricValue::Float(seconds)));
    let rtfx = latency_ns
        .filter(|&l| l > 0)
        .map(|l| MetricValue::Float(seconds / (l as f64 / 1e9)));
    push(MetricId::Rtfx, rtfx);
}

#[cfg(test)]
mod tests {
    use super::super::metrics::{MetricConfig, record_metrics};
    use super::*;

    #[test]
    fn duration_and_rtfx_by_hand() {
        let mut cfg = MetricConfig::new(false, false);
        cfg.supports_audio = true;
        let mut f = super::super::metrics::tests::facts();
        // 10 s of audio transcribed in 0.5 s of request latency: 20× real time.
        f.audio_seconds = Some(10.0);
        f.end_ns = f.start_ns + 500_000_000;
        f.content_stamps_ns = vec![f.end_ns];
        f.first_output_stamp_ns = Some(f.end_ns);
        let m = record_metrics(&cfg, &f);
        assert_eq!(m.f64(MetricId::AudioDuration), Some(10.0));
        assert_eq!(m.f64(MetricId::Rtfx), Some(20.0));
        // Not for a type without audio, nor for a request without a clip.
        cfg.supports_audio = false;
        assert_eq!(record_metrics(&cfg, &f).f64(MetricId::AudioDuration), None);
        cfg.supports_audio = true;
        f.audio_seconds = None;
        assert_eq!(record_metrics(&cfg, &f).f64(MetricId::Rtfx), None);
    }
}
