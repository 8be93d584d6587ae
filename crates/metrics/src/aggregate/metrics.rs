//! Per-record metrics (docs/metrics.md): what one [`RecordFacts`] contributes, computed once on the
//! aggregator thread and shared by the accumulator and the per-record export.

use super::registry::{MetricId, flags};
use ringperf_wire::record::RecordFacts;

/// What decides which metrics apply to a run, and the thresholds of the warning counters.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricConfig {
    /// `--streaming`: STREAMING_ONLY metrics exist only then.
    pub streaming: bool,
    /// `--use-server-token-count`: token counts come from `usage`, so the USAGE_DIFF_ONLY
    /// metrics (client tokenization vs usage) do not apply.
    pub use_server_token_count: bool,
    /// The endpoint produces tokens (chat, completions): PRODUCES_TOKENS_ONLY metrics apply.
    pub produces_tokens: bool,
    /// The endpoint's input is tokenized (chat, completions): TOKENIZES_INPUT_ONLY apply.
    pub tokenizes_input: bool,
    /// The endpoint can return separate reasoning content (chat): SUPPORTS_REASONING apply.
    pub supports_reasoning: bool,
    /// The endpoint carries audio: SUPPORTS_AUDIO_ONLY apply (false for text chat).
    pub supports_audio: bool,
    /// The endpoint takes images: SUPPORTS_IMAGE_ONLY apply (chat, image retrieval, ...).
    pub supports_images: bool,
    /// The endpoint's answers are videos: PRODUCES_VIDEO_ONLY apply (video generation).
    pub produces_videos: bool,
    /// `AIPERF_METRICS_USAGE_PCT_DIFF_THRESHOLD` (default 10.0 %).
    pub usage_pct_diff_threshold: f64,
    /// `AIPERF_METRICS_OSL_MISMATCH_PCT_THRESHOLD` (default 5.0 %).
    pub osl_mismatch_pct_threshold: f64,
    /// `AIPERF_METRICS_OSL_MISMATCH_MAX_TOKEN_THRESHOLD` (default 50 tokens).
    pub osl_mismatch_max_token_threshold: f64,
    /// The profiling phase replays a fixed schedule: FIXED_SCHEDULE_ONLY metrics apply.
    pub fixed_schedule: bool,
    /// `--goodput` SLOs: `(metric, threshold in the metric's base unit)`, validated by
    /// `config::goodput` (per-request metrics that apply to the run). Empty: no GOODPUT metrics.
    pub goodput: Vec<(MetricId, f64)>,
}

impl MetricConfig {
    /// A text chat / completions run with AIPerf's default thresholds.
    pub fn new(streaming: bool, use_server_token_count: bool) -> Self {
        Self {
            streaming,
            use_server_token_count,
            produces_tokens: true,
            tokenizes_input: true,
            supports_reasoning: true,
            supports_audio: false,
            supports_images: false,
            produces_videos: false,
            usage_pct_diff_threshold: 10.0,
            osl_mismatch_pct_threshold: 5.0,
            osl_mismatch_max_token_threshold: 50.0,
            fixed_schedule: false,
            goodput: Vec::new(),
        }
    }

    /// Whether a metric applies to this run at all: its gating flags allow it, or a metric
    /// that applies needs it (AIPerf computes every dependency of an applicable metric,
    /// whatever the dependency's own flags, and exports it when it has a value).
    pub fn applies(&self, id: MetricId) -> bool {
        self.flags_allow(id) || self.needed_by_usage_diff(id)
    }

    /// `usage_discrepancy_count` (USAGE_DIFF_ONLY: whenever the client counts tokens) needs the
    /// prompt and completion diffs, which need `usage_prompt_tokens`, `usage_completion_tokens`,
    /// `input_sequence_length` and `output_sequence_length`. So an endpoint that produces no
    /// tokens (embeddings, rankings) still reports `output_sequence_length`: 0 for every valid
    /// response, as AIPerf 0.13 does.
    fn needed_by_usage_diff(&self, id: MetricId) -> bool {
        use MetricId as M;
        // An endpoint whose input is not tokenized (image retrieval) counts no tokens at all.
        self.tokenizes_input
            && self.flags_allow(M::UsageDiscrepancyCount)
            && matches!(
                id,
                M::UsagePromptTokensDiffPct
                    | M::UsageCompletionTokensDiffPct
                    | M::UsagePromptTokens
                    | M::UsageCompletionTokens
                    | M::InputSequenceLength
                    | M::OutputSequenceLength
            )
    }

    /// Whether the metric's gating flags allow it in this run.
    pub fn flags_allow(&self, id: MetricId) -> bool {
        let d = id.def();
        !((d.has(flags::STREAMING_ONLY) && !self.streaming)
            || (d.has(flags::PRODUCES_TOKENS_ONLY) && !self.produces_tokens)
            || (d.has(flags::TOKENIZES_INPUT_ONLY) && !self.tokenizes_input)
            || (d.has(flags::SUPPORTS_REASONING) && !self.supports_reasoning)
            || (d.has(flags::SUPPORTS_AUDIO_ONLY) && !self.supports_audio)
            || (d.has(flags::SUPPORTS_IMAGE_ONLY) && !self.supports_images)
            || (d.has(flags::PRODUCES_VIDEO_ONLY) && !self.produces_videos)
            || (d.has(flags::USAGE_DIFF_ONLY) && self.use_server_token_count)
            || (d.has(flags::GOODPUT) && self.goodput.is_empty())
            || (d.has(flags::FIXED_SCHEDULE_ONLY) && !self.fixed_schedule))
    }

    /// Whether a record with these metrics meets every `--goodput` SLO (AIPerf's
    /// `GoodRequestCountMetric`): it must have each SLO metric, at or under the threshold for
    /// smaller-is-better metrics, at or over it for LARGER_IS_BETTER ones.
    pub fn is_good(&self, values: &[(MetricId, MetricValue)]) -> bool {
        self.goodput.iter().all(|&(id, threshold)| {
            let value = values
                .iter()
                .find(|(m, _)| *m == id)
                .and_then(|(_, v)| v.as_f64());
            match value {
                None => false,
                Some(v) if id.def().has(flags::LARGER_IS_BETTER) => v >= threshold,
                Some(v) => v <= threshold,
            }
        })
    }
}

/// One record metric's value, in the metric's base unit.
#[derive(Clone, Debug, PartialEq)]
pub enum MetricValue {
    /// Counts and nanosecond latencies.
    Int(i64),
    /// Ratios, rates and averages.
    Float(f64),
    /// A list metric (inter-chunk latency, ns).
    List(Vec<i64>),
}

impl MetricValue {
    /// The value of a scalar metric as f64 (`None` for a list).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            MetricValue::Int(v) => Some(*v as f64),
            MetricValue::Float(v) => Some(*v),
            MetricValue::List(_) => None,
        }
    }
}

/// The metrics of one record: only those that apply to the run and could be computed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordMetrics {
    /// `(metric, value)` in registry order.
    pub values: Vec<(MetricId, MetricValue)>,
}

impl RecordMetrics {
    /// The value of one metric, if the record has it.
    pub fn get(&self, id: MetricId) -> Option<&MetricValue> {
        self.values.iter().find(|(m, _)| *m == id).map(|(_, v)| v)
    }

    /// The value of a scalar metric as f64.
    pub fn f64(&self, id: MetricId) -> Option<f64> {
        self.get(id).and_then(MetricValue::as_f64)
    }

    /// Whether the record has no metric at all.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// `later − earlier` in signed ns, saturating (stamps from a broken clock never panic).
fn diff_ns(later: u64, earlier: u64) -> i64 {
    (later as i64).saturating_sub(earlier as i64)
}

fn abs_pct(server: u64, client: u64) -> Option<f64> {
    (client > 0).then(|| (server as f64 - client as f64).abs() / client as f64 * 100.0)
}

/// Computes every applicable record metric of one request (docs/metrics.md). Error
/// records get only the ERROR_ONLY metrics; valid records never get them.
pub fn record_metrics(cfg: &MetricConfig, f: &RecordFacts) -> RecordMetrics {
    use MetricId as M;
    use MetricValue::Int;
    let mut out: Vec<(MetricId, MetricValue)> = Vec::with_capacity(24);
    let mut push = |id: MetricId, v: Option<MetricValue>| {
        if let Some(v) = v
            && cfg.applies(id)
        {
            out.push((id, v));
        }
    };

    if f.error.is_some() {
        push(M::ErrorIsl, f.input_tokens.map(|n| Int(n as i64)));
        return RecordMetrics { values: out };
    }

    let d = Derived::of(cfg, f);
    push_timing(&mut push, f, &d);
    for (id, v) in super::audio::values(f.audio_seconds, d.latency) {
        push(id, v.map(MetricValue::Float));
    }
    push_usage(&mut push, f.usage.as_ref());
    push_ratios(&mut push, cfg, f, &d);
    if let Some(t) = &f.trace {
        super::http_trace::push_metrics(t, |id, v| push(id, v.map(Int)));
    }
    for (id, v) in super::media::values(&f.media, d.latency) {
        let v = if id.def().integer {
            v.map(|n| Int(n as i64))
        } else {
            v.map(MetricValue::Float)
        };
        push(id, v);
    }
    if let Some(s) = &f.spec_decode {
        for (id, v) in super::spec_decode::values(s) {
            let v = if id.def().integer {
                v.map(|n| Int(n as i64))
            } else {
                v.map(MetricValue::Float)
            };
            push(id, v);
        }
    }
    // Last: it reads the values above. 1 for a good request, 0 otherwise, per valid record.
    if cfg.applies(M::GoodRequestCount) {
        let good = cfg.is_good(&out);
        out.push((M::GoodRequestCount, Int(i64::from(good))));
    }
    RecordMetrics { values: out }
}

/// What several metrics of a valid record are computed from.
struct Derived {
    /// First content stamp − start, ns.
    ttft: Option<i64>,
    /// Last content stamp − start, ns.
    latency: Option<i64>,
    /// `ttft` of a streaming run only.
    ttft_s: Option<i64>,
    /// Output plus reasoning tokens.
    osl: Option<u64>,
    /// Input tokens.
    isl: Option<u64>,
    /// Inter-token latency, ns.
    itl: Option<f64>,
}

impl Derived {
    #[inline]
    fn of(cfg: &MetricConfig, f: &RecordFacts) -> Self {
        let stamps = &f.content_stamps_ns;
        let ttft = stamps.first().map(|&s| diff_ns(s, f.start_ns));
        let latency = stamps.last().map(|&s| diff_ns(s, f.start_ns));
        let ttft_s = ttft.filter(|_| cfg.streaming);
        let osl = match (f.output_tokens, f.reasoning_tokens) {
            (None, None) => None,
            (o, r) => Some(o.unwrap_or(0).saturating_add(r.unwrap_or(0))),
        };
        let itl = match (ttft_s, latency, osl) {
            (Some(t), Some(l), Some(n)) if n >= 2 => Some(
                l.saturating_sub(t) as f64 / decode_tokens(n, f.first_content_chunk_tokens) as f64,
            ),
            _ => None,
        };
        Self {
            ttft,
            latency,
            ttft_s,
            osl,
            isl: f.input_tokens,
            itl,
        }
    }
}

/// The tokens inter-token latency divides the decode time by (AIPerf's
/// `InterTokenLatencyMetric`): those after the first content chunk, `osl − first` when the
/// server's per-chunk usage said how many the first chunk delivered (`--per-chunk-usage`), else
/// `osl − 1`. A reported count that is 0 or leaves no token after it (`first ≥ osl`: usage
/// lagging a chunk, or the whole answer in one chunk) is inconsistent and falls back to
/// `osl − 1` too. `osl` is at least 2.
fn decode_tokens(osl: u64, first: Option<u64>) -> u64 {
    match first {
        Some(k) if k > 0 && k < osl => osl - k,
        _ => osl - 1,
    }
}

/// The latencies, the per-user and end-to-end throughputs, and the sequence lengths.
#[inline]
fn push_timing(push: &mut impl FnMut(MetricId, Option<MetricValue>), f: &RecordFacts, d: &Derived) {
    use MetricId as M;
    use MetricValue::{Float, Int};
    let stamps = &f.content_stamps_ns;
    push(M::TimeToFirstToken, d.ttft.map(Int));
    push(
        M::TimeToSecondToken,
        stamps
            .get(1)
            .zip(stamps.first())
            .map(|(b, a)| Int(diff_ns(*b, *a))),
    );
    push(
        M::TimeToFirstOutputToken,
        f.first_output_stamp_ns.map(|s| Int(diff_ns(s, f.start_ns))),
    );
    push(M::RequestLatency, d.latency.map(Int));
    push(
        M::DecodeDuration,
        d.ttft_s
            .zip(d.latency)
            .map(|(t, l)| Int(l.saturating_sub(t))),
    );
    push(M::InterTokenLatency, d.itl.map(Float));
    push(
        M::OutputTokenThroughputPerUser,
        d.itl.filter(|v| *v > 0.0).map(|v| Float(1e9 / v)),
    );
    push(
        M::E2eOutputTokenThroughput,
        d.osl
            .zip(d.latency.filter(|l| *l > 0))
            .map(|(n, l)| Float(n as f64 / (l as f64 / 1e9))),
    );
    push(M::OutputSequenceLength, d.osl.map(|n| Int(n as i64)));
    push(M::InputSequenceLength, d.isl.map(|n| Int(n as i64)));
}

/// The server's `usage` fields, as reported.
#[inline]
fn push_usage(
    push: &mut impl FnMut(MetricId, Option<MetricValue>),
    usage: Option<&ringperf_wire::record::Usage>,
) {
    use MetricId as M;
    let u = |get: fn(&ringperf_wire::record::Usage) -> Option<u64>| {
        usage.and_then(get).map(|n| MetricValue::Int(n as i64))
    };
    push(M::UsagePromptTokens, u(|u| u.prompt_tokens));
    push(
        M::UsagePromptCacheReadTokens,
        u(|u| u.prompt_cache_read_tokens),
    );
    push(
        M::UsagePromptCacheWriteTokens,
        u(|u| u.prompt_cache_write_tokens),
    );
    push(M::UsagePromptAudioTokens, u(|u| u.prompt_audio_tokens));
    push(M::UsageCompletionTokens, u(|u| u.completion_tokens));
    push(M::UsageReasoningTokens, u(|u| u.reasoning_tokens));
    push(
        M::UsageCompletionAudioTokens,
        u(|u| u.completion_audio_tokens),
    );
    push(
        M::UsageAcceptedPredictionTokens,
        u(|u| u.accepted_prediction_tokens),
    );
    push(
        M::UsageRejectedPredictionTokens,
        u(|u| u.rejected_prediction_tokens),
    );
    push(M::UsageTotalTokens, u(|u| u.total_tokens));
}

/// The inter-chunk latencies, then the counts, ratios and client-vs-server differences.
#[inline]
fn push_ratios(
    push: &mut impl FnMut(MetricId, Option<MetricValue>),
    cfg: &MetricConfig,
    f: &RecordFacts,
    d: &Derived,
) {
    use MetricId as M;
    use MetricValue::{Float, Int};
    let stamps = &f.content_stamps_ns;
    if cfg.streaming && stamps.len() >= 2 {
        let icl = stamps.windows(2).map(|w| diff_ns(w[1], w[0])).collect();
        push(M::InterChunkLatency, Some(MetricValue::List(icl)));
    }
    let requested = f.requested_osl.filter(|r| *r > 0);
    push(
        M::OslMismatchDiffPct,
        d.osl
            .zip(requested)
            .map(|(n, r)| Float((n as f64 - r as f64) / r as f64 * 100.0)),
    );
    push(
        M::OutputTokenCount,
        f.output_tokens.filter(|n| *n > 0).map(|n| Int(n as i64)),
    );
    push(
        M::PrefillThroughputPerUser,
        d.isl
            .zip(d.ttft_s.filter(|t| *t > 0))
            .map(|(n, t)| Float(n as f64 / (t as f64 / 1e9))),
    );
    push(
        M::ReasoningTokenCount,
        f.reasoning_tokens.map(|n| Int(n as i64)),
    );
    push(M::RequestedOsl, f.requested_osl.map(|n| Int(n as i64)));
    // AIPerf: `timestamp_ns - int(scheduled_send_ms * 1e6)`, epoch-scale (only differences
    // between records mean anything).
    push(
        M::ReplaySendScheduleOffset,
        f.scheduled_send_ms
            .map(|ms| Int((f.request_start_wall_ns as i64).saturating_sub((ms * 1e6) as i64))),
    );
    push(
        M::ThinkingEfficiency,
        f.reasoning_tokens
            .zip(f.output_tokens.filter(|n| *n > 0))
            .map(|(r, o)| Float(r as f64 / o as f64)),
    );
    let usage = f.usage.as_ref();
    let diff_pct = |server: Option<u64>, client: Option<u64>| {
        server
            .zip(client)
            .and_then(|(s, c)| abs_pct(s, c))
            .map(Float)
    };
    push(
        M::UsageCompletionTokensDiffPct,
        diff_pct(usage.and_then(|u| u.completion_tokens), d.osl),
    );
    push(
        M::UsagePromptTokensDiffPct,
        diff_pct(usage.and_then(|u| u.prompt_tokens), d.isl),
    );
    push(
        M::UsageReasoningTokensDiffPct,
        diff_pct(usage.and_then(|u| u.reasoning_tokens), f.reasoning_tokens),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::testing::facts;
    use ringperf_wire::record::{RequestError, Usage};

    #[test]
    fn streaming_formulas() {
        let m = record_metrics(&MetricConfig::new(true, false), &facts());
        use MetricId as M;
        assert_eq!(m.get(M::TimeToFirstToken), Some(&MetricValue::Int(10_000)));
        assert_eq!(m.get(M::TimeToSecondToken), Some(&MetricValue::Int(2_000)));
        assert_eq!(
            m.get(M::TimeToFirstOutputToken),
            Some(&MetricValue::Int(12_000))
        );
        // Last content chunk, not stream close (end_ns = 20_000).
        assert_eq!(m.get(M::RequestLatency), Some(&MetricValue::Int(15_000)));
        assert_eq!(m.get(M::DecodeDuration), Some(&MetricValue::Int(5_000)));
        // (15_000 − 10_000) / (5 − 1) = 1_250 ns.
        assert_eq!(m.f64(M::InterTokenLatency), Some(1_250.0));
        assert_eq!(m.f64(M::OutputTokenThroughputPerUser), Some(1e9 / 1_250.0));
        assert_eq!(
            m.get(M::InterChunkLatency),
            Some(&MetricValue::List(vec![2_000, 3_000]))
        );
        // 5 tokens / 15 µs.
        assert_eq!(m.f64(M::E2eOutputTokenThroughput), Some(5.0 / 15e-6));
        // 100 tokens / 10 µs.
        assert_eq!(m.f64(M::PrefillThroughputPerUser), Some(100.0 / 1e-5));
        assert_eq!(m.get(M::OutputSequenceLength), Some(&MetricValue::Int(5)));
        assert_eq!(m.get(M::OutputTokenCount), Some(&MetricValue::Int(5)));
        assert_eq!(m.get(M::InputSequenceLength), Some(&MetricValue::Int(100)));
        assert!(m.get(M::ErrorIsl).is_none());
        assert!(m.get(M::ReasoningTokenCount).is_none());
        assert!(m.get(M::UsagePromptTokens).is_none());
    }

    #[test]
    fn non_streaming_has_no_streaming_keys() {
        let mut f = facts();
        f.content_stamps_ns = vec![16_000];
        f.first_output_stamp_ns = Some(16_000);
        let m = record_metrics(&MetricConfig::new(false, false), &f);
        for (id, _) in &m.values {
            assert!(!id.def().has(flags::STREAMING_ONLY), "{}", id.def().tag);
        }
        assert_eq!(
            m.get(MetricId::RequestLatency),
            Some(&MetricValue::Int(15_000))
        );
        assert!(m.get(MetricId::E2eOutputTokenThroughput).is_some());
    }

    #[test]
    fn itl_needs_two_tokens_and_osl_includes_reasoning() {
        let mut f = facts();
        f.output_tokens = Some(1);
        let m = record_metrics(&MetricConfig::new(true, false), &f);
        assert!(m.get(MetricId::InterTokenLatency).is_none());
        assert!(m.get(MetricId::OutputTokenThroughputPerUser).is_none());
        f.reasoning_tokens = Some(4);
        let m = record_metrics(&MetricConfig::new(true, false), &f);
        assert_eq!(
            m.get(MetricId::OutputSequenceLength),
            Some(&MetricValue::Int(5))
        );
        assert_eq!(
            m.get(MetricId::ReasoningTokenCount),
            Some(&MetricValue::Int(4))
        );
        assert_eq!(m.f64(MetricId::InterTokenLatency), Some(1_250.0));
        assert_eq!(m.f64(MetricId::ThinkingEfficiency), Some(4.0));
    }

    /// `--per-chunk-usage`: ITL divides the decode time by the tokens after the first content
    /// chunk's reported count (AIPerf's formula), with `osl − 1` when it was not reported or
    /// is inconsistent (0, or not below OSL); TPS per user follows it.
    #[test]
    fn itl_subtracts_the_first_chunks_reported_tokens() {
        let mut f = facts();
        f.output_tokens = Some(9);
        // Decode time: last content 16_000 − first 11_000 = 5_000 ns.
        let cases = [
            (None, 5_000.0 / 8.0),
            (Some(3), 5_000.0 / 6.0),
            (Some(8), 5_000.0 / 1.0),
            (Some(0), 5_000.0 / 8.0),
            (Some(9), 5_000.0 / 8.0),
            (Some(12), 5_000.0 / 8.0),
        ];
        for (first, itl) in cases {
            f.first_content_chunk_tokens = first;
            let m = record_metrics(&MetricConfig::new(true, true), &f);
            assert_eq!(m.f64(MetricId::InterTokenLatency), Some(itl), "{first:?}");
            assert_eq!(
                m.f64(MetricId::OutputTokenThroughputPerUser),
                Some(1e9 / itl),
                "{first:?}"
            );
        }
        // OSL below 2: still no ITL.
        f.output_tokens = Some(1);
        f.first_content_chunk_tokens = Some(1);
        let m = record_metrics(&MetricConfig::new(true, true), &f);
        assert!(m.get(MetricId::InterTokenLatency).is_none());
    }

    #[test]
    fn usage_and_diffs() {
        let mut f = facts();
        f.usage = Some(Usage {
            prompt_tokens: Some(110),
            completion_tokens: Some(4),
            total_tokens: Some(114),
            ..Usage::default()
        });
        f.requested_osl = Some(8);
        let m = record_metrics(&MetricConfig::new(true, false), &f);
        assert_eq!(
            m.get(MetricId::UsagePromptTokens),
            Some(&MetricValue::Int(110))
        );
        assert_eq!(
            m.get(MetricId::UsageTotalTokens),
            Some(&MetricValue::Int(114))
        );
        // |110 − 100| / 100 = 10 %; |4 − 5| / 5 = 20 %.
        assert_eq!(m.f64(MetricId::UsagePromptTokensDiffPct), Some(10.0));
        assert_eq!(m.f64(MetricId::UsageCompletionTokensDiffPct), Some(20.0));
        // (5 − 8) / 8 = −37.5 %.
        assert_eq!(m.f64(MetricId::OslMismatchDiffPct), Some(-37.5));
        assert_eq!(m.get(MetricId::RequestedOsl), Some(&MetricValue::Int(8)));
        // Server token counts: no diffs at all.
        let m = record_metrics(&MetricConfig::new(true, true), &f);
        assert!(m.get(MetricId::UsagePromptTokensDiffPct).is_none());
        assert!(m.get(MetricId::UsageCompletionTokensDiffPct).is_none());
        assert!(m.get(MetricId::UsagePromptTokens).is_some());
    }

    #[test]
    fn error_records_get_only_error_metrics() {
        let mut f = facts();
        f.error = Some(Box::new(RequestError::new(
            Some(500),
            "Internal Server Error",
            "boom",
        )));
        let m = record_metrics(&MetricConfig::new(true, false), &f);
        assert_eq!(m.values, vec![(MetricId::ErrorIsl, MetricValue::Int(100))]);
        f.input_tokens = None;
        assert!(record_metrics(&MetricConfig::new(true, false), &f).is_empty());
    }

    #[test]
    fn media_metrics_only_where_the_type_allows() {
        use ringperf_wire::record::MediaFacts;
        let mut f = facts();
        f.media = MediaFacts {
            images: 3,
            video_inference_time_s: Some(1.5),
            video_peak_memory_mb: Some(2048.0),
        };
        let cfg = |images: bool, videos: bool| MetricConfig {
            supports_images: images,
            produces_videos: videos,
            ..MetricConfig::new(true, false)
        };
        let m = record_metrics(&cfg(true, false), &f);
        assert_eq!(m.get(MetricId::NumImages), Some(&MetricValue::Int(3)));
        // 15 µs of latency over 3 images.
        assert!((m.f64(MetricId::ImageLatency).unwrap() - 0.005).abs() < 1e-15);
        assert!(m.get(MetricId::VideoInferenceTime).is_none());
        let m = record_metrics(&cfg(false, true), &f);
        assert!(m.get(MetricId::NumImages).is_none());
        assert_eq!(m.f64(MetricId::VideoPeakMemory), Some(2048.0));
        f.error = Some(Box::new(RequestError::new(Some(500), "x", "y")));
        let m = record_metrics(&cfg(true, true), &f);
        assert!(m.get(MetricId::NumImages).is_none() && m.get(MetricId::VideoPeakMemory).is_none());
    }

    proptest::proptest! {
        /// Any stamps and counts, however inconsistent, give metrics without panicking, and
        /// only applicable ones.
        #[test]
        fn never_panics(
            start in proptest::num::u64::ANY,
            stamps in proptest::collection::vec(proptest::num::u64::ANY, 0..6),
            out in proptest::option::of(proptest::num::u64::ANY),
            reasoning in proptest::option::of(proptest::num::u64::ANY),
            isl in proptest::option::of(proptest::num::u64::ANY),
            streaming in proptest::bool::ANY,
        ) {
            let f = RecordFacts {
                start_ns: start,
                content_stamps_ns: stamps,
                output_tokens: out,
                reasoning_tokens: reasoning,
                input_tokens: isl,
                usage: Some(Usage { prompt_tokens: Some(3), completion_tokens: Some(0), ..Usage::default() }),
                requested_osl: Some(7),
                scheduled_send_ms: None,
                ..facts()
            };
            let cfg = MetricConfig::new(streaming, false);
            let m = record_metrics(&cfg, &f);
            for (id, _) in &m.values {
                proptest::prop_assert!(cfg.applies(*id));
            }
        }
    }
}
