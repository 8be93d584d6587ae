//! The metric registry (docs/metrics.md): tag, header, unit, display unit, display order, flags and
//! console group of every client metric ringperf computes, in the sections General, Streaming,
//! Token Based, Reasoning, Usage Field, Usage Discrepancy, OSL Mismatch and Error.

/// Units of measure; `as_str` is the string written in exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// `ns`
    Nanoseconds,
    /// `ms`
    Milliseconds,
    /// `sec`
    Seconds,
    /// `tokens`
    Tokens,
    /// `tokens/sec`
    TokensPerSecond,
    /// `tokens/sec/user`
    TokensPerSecondPerUser,
    /// `requests`
    Requests,
    /// `requests/sec`
    RequestsPerSecond,
    /// `%`
    Percent,
    /// `ratio`
    Ratio,
    /// `count`
    Count,
    /// `B` (bytes)
    Bytes,
    /// `KB` (kibibytes: AIPerf divides bytes by 1024)
    Kilobytes,
    /// `MB` (a server-reported size, kept as reported)
    Megabytes,
    /// `images`
    Images,
    /// `images/sec`
    ImagesPerSecond,
    /// `ms/image`
    MsPerImage,
    /// `W`
    Watts,
    /// `J`
    Joules,
    /// `tokens/J`
    TokensPerJoule,
    /// `mJ/token`
    MillijoulesPerToken,
    /// `joules/request`
    JoulesPerRequest,
    /// `joules/user`
    JoulesPerUser,
    /// `J*s` (energy per request times mean request latency)
    JouleSeconds,
    /// `requests/sec/W`
    RequestsPerSecondPerWatt,
    /// `tokens/sec/W`
    TokensPerSecondPerWatt,
    /// `good-req/s/W`
    GoodputPerWatt,
}

impl Unit {
    /// The unit as AIPerf prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Nanoseconds => "ns",
            Unit::Milliseconds => "ms",
            Unit::Seconds => "sec",
            Unit::Tokens => "tokens",
            Unit::TokensPerSecond => "tokens/sec",
            Unit::TokensPerSecondPerUser => "tokens/sec/user",
            Unit::Requests => "requests",
            Unit::RequestsPerSecond => "requests/sec",
            Unit::Percent => "%",
            Unit::Ratio => "ratio",
            Unit::Count => "count",
            Unit::Bytes => "B",
            Unit::Kilobytes => "KB",
            Unit::Megabytes => "MB",
            Unit::Images => "images",
            Unit::ImagesPerSecond => "images/sec",
            Unit::MsPerImage => "ms/image",
            Unit::Watts => "W",
            Unit::Joules => "J",
            Unit::TokensPerJoule => "tokens/J",
            Unit::MillijoulesPerToken => "mJ/token",
            Unit::JoulesPerRequest => "joules/request",
            Unit::JoulesPerUser => "joules/user",
            Unit::JouleSeconds => "J*s",
            Unit::RequestsPerSecondPerWatt => "requests/sec/W",
            Unit::TokensPerSecondPerWatt => "tokens/sec/W",
            Unit::GoodputPerWatt => "good-req/s/W",
        }
    }
}

/// How a metric is computed (AIPerf's metric types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One value per request.
    Record,
    /// A running reduction over records (counter, min, max).
    Aggregate,
    /// Computed at summary time from other results.
    Derived,
    /// Time-weighted statistics of a step function over the phase window (the sweep-line
    /// metrics, see [`super::sweep`]).
    Sweep,
    /// Joined after aggregation from another collector's data and the phase's results (the
    /// GPU energy-efficiency metrics, see [`crate::gpu_telemetry::energy`]; the network-adjusted
    /// latencies, see [`super::Accumulator::network_adjusted`]). AIPerf writes no `count` for
    /// them.
    Joined,
}

/// Which console table a metric belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsoleGroup {
    /// The main `LLM Metrics` table.
    Default,
    /// The `LLM Metrics: Usage` table.
    Usage,
    /// The `LLM Metrics: Effective` table (sweep-line and CO-aware metrics).
    Effective,
    /// The `LLM Metrics: Active` table (sweep-line metrics over active time only).
    Active,
    /// The `LLM Metrics: Spec Decode` table, with the pooled histogram's line under it.
    SpecDecode,
    /// The `GPU Power Efficiency (NVIDIA)` table (one `avg` column).
    GpuPowerEfficiencyNvidia,
    /// Never shown on the console.
    None,
}

/// Metric flags (AIPerf's metric flags), a bit set.
pub mod flags {
    /// Only when the run streams.
    pub const STREAMING_ONLY: u32 = 1 << 0;
    /// Only for endpoints that produce tokens.
    pub const PRODUCES_TOKENS_ONLY: u32 = 1 << 1;
    /// Only for endpoints whose input is tokenized.
    pub const TOKENIZES_INPUT_ONLY: u32 = 1 << 2;
    /// Only for endpoints that carry audio.
    pub const SUPPORTS_AUDIO_ONLY: u32 = 1 << 3;
    /// Only for endpoints that can return reasoning content.
    pub const SUPPORTS_REASONING: u32 = 1 << 4;
    /// Only when client token counts and server usage both exist.
    pub const USAGE_DIFF_ONLY: u32 = 1 << 5;
    /// Computed for error records only.
    pub const ERROR_ONLY: u32 = 1 << 6;
    /// Hidden from every export.
    pub const INTERNAL: u32 = 1 << 7;
    /// Hidden from every export.
    pub const EXPERIMENTAL: u32 = 1 << 8;
    /// Never written per record.
    pub const NO_INDIVIDUAL_RECORDS: u32 = 1 << 9;
    /// Goodput direction: larger values are better.
    pub const LARGER_IS_BETTER: u32 = 1 << 10;
    /// Also reported as `adj_<tag>` with failures as +inf.
    pub const PERCENTILE_INCLUDES_FAILED_REQUESTS: u32 = 1 << 11;
    /// Disabled in accuracy mode.
    pub const DISABLE_ON_ACCURACY: u32 = 1 << 12;
    /// Only when `--goodput` gives SLOs.
    pub const GOODPUT: u32 = 1 << 13;
    /// Measured from the HTTP transport's trace stamps (always available in ringperf).
    pub const HTTP_TRACE_ONLY: u32 = 1 << 15;
    /// Only when the profiling phase replays a fixed schedule (`--fixed-schedule`).
    pub const FIXED_SCHEDULE_ONLY: u32 = 1 << 16;
    /// Only for endpoints that take images (AIPerf's `supports_images`).
    pub const SUPPORTS_IMAGE_ONLY: u32 = 1 << 17;
    /// Only for endpoints that produce videos (AIPerf's `produces_videos`).
    pub const PRODUCES_VIDEO_ONLY: u32 = 1 << 18;
}

use flags::*;

/// Identifies a metric; its discriminant is its index in [`REGISTRY`]. Each variant is the
/// CamelCase of the metric's tag (`TimeToFirstToken` is `time_to_first_token`); header, unit and
/// flags are in the variant's [`MetricDef`].
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MetricId {
    TimeToFirstToken,
    TimeToSecondToken,
    TimeToFirstOutputToken,
    RequestLatency,
    DecodeDuration,
    InterTokenLatency,
    OutputTokenThroughputPerUser,
    E2eOutputTokenThroughput,
    OutputSequenceLength,
    ErrorIsl,
    InputSequenceLength,
    UsagePromptTokens,
    UsagePromptCacheReadTokens,
    UsagePromptCacheWriteTokens,
    UsagePromptAudioTokens,
    UsageCompletionTokens,
    UsageReasoningTokens,
    UsageCompletionAudioTokens,
    UsageAcceptedPredictionTokens,
    UsageRejectedPredictionTokens,
    UsageTotalTokens,
    InterChunkLatency,
    OslMismatchDiffPct,
    OutputTokenCount,
    PrefillThroughputPerUser,
    ReasoningTokenCount,
    RequestedOsl,
    ThinkingEfficiency,
    UsageCompletionTokensDiffPct,
    UsagePromptTokensDiffPct,
    UsageReasoningTokensDiffPct,
    RequestCount,
    ErrorRequestCount,
    ContextOverflowCount,
    MinRequestTimestamp,
    MaxResponseTimestamp,
    OslMismatchCount,
    UsageDiscrepancyCount,
    GoodRequestCount,
    OutputTokenThroughput,
    InputTokenThroughput,
    RequestThroughput,
    CompletedRequestCount,
    RequestErrorRate,
    TotalUsagePromptTokens,
    TotalUsagePromptCacheReadTokens,
    OverallUsagePromptCacheReadPct,
    TotalUsagePromptCacheWriteTokens,
    TotalUsagePromptAudioTokens,
    TotalUsageCompletionTokens,
    TotalUsageReasoningTokens,
    TotalUsageCompletionAudioTokens,
    TotalUsageAcceptedPredictionTokens,
    TotalUsageRejectedPredictionTokens,
    TotalUsageTotalTokens,
    BenchmarkDuration,
    OverallThinkingEfficiency,
    TotalErrorIsl,
    TotalIsl,
    TotalOsl,
    TotalOutputTokens,
    TotalReasoningTokens,
    TotalTokenThroughput,
    Goodput,
    GoodRequestFraction,
    EffectiveConcurrency,
    EffectiveDecodeThroughput,
    EffectivePrefillThroughput,
    EffectiveDecodeConcurrency,
    EffectivePrefillConcurrency,
    EffectiveTotalThroughput,
    EffectiveDecodeThroughputPerUser,
    EffectivePrefillThroughputPerUser,
    TokensInFlight,
    ActiveDecodeThroughput,
    ActivePrefillThroughput,
    ActiveDecodeThroughputPerUser,
    ActivePrefillThroughputPerUser,
    ActiveTotalThroughput,
    CreditToStartLatency,
    EffectiveLatency,
    HttpReqBlocked,
    HttpReqDnsLookup,
    HttpReqConnecting,
    HttpReqSending,
    HttpReqWaiting,
    HttpReqReceiving,
    HttpReqConnectionReused,
    HttpReqDataSent,
    HttpReqChunksSent,
    HttpReqDataReceived,
    HttpReqChunksReceived,
    HttpReqConnectionOverhead,
    HttpReqDuration,
    HttpReqTotal,
    ReplaySendScheduleOffset,
    ReplaySchedLagP50,
    ReplaySchedLagP90,
    ReplaySchedLagP99,
    ReplaySchedDegraded,
    AudioDuration,
    Rtfx,
    NumImages,
    ImageThroughput,
    ImageLatency,
    VideoInferenceTime,
    VideoPeakMemory,
    NvidiaEnergyDelayProduct,
    NvidiaPerformancePerWatt,
    NvidiaOutputTpsPerWatt,
    NvidiaGoodputPerWatt,
    NvidiaAverageGpuPower,
    NvidiaTotalGpuEnergy,
    NvidiaTotalGpuPower,
    NvidiaEnergyPerTotalToken,
    NvidiaEnergyPerOutputToken,
    NvidiaEnergyPerRequest,
    NvidiaOutputTokensPerJoule,
    NvidiaEnergyPerUser,
    NetworkAdjustedTimeToFirstToken,
    NetworkAdjustedTimeToFirstOutputToken,
    NetworkAdjustedRequestLatency,
    NetworkRtt,
    SpecDecodeAcceptanceLength,
    SpecDecodeDraftAcceptanceRate,
    SpecDecodeAcceptedPerVerified,
    SpecDecodeSteps,
    SpecDecodeAcceptedDraftTokens,
    SpecDecodeDraftTokens,
    TotalSpecDecodeSteps,
    TotalAcceptedDraftTokens,
    TotalDraftTokens,
    SpecDecodeTokenWeightedAcceptanceLength,
    SpecDecodeOverallDraftAcceptanceRate,
    TheoreticalPrefixCacheHit,
}

impl MetricId {
    /// The metric's definition.
    pub fn def(self) -> &'static MetricDef {
        &REGISTRY[self as usize]
    }
}

/// The static definition of one metric.
#[derive(Debug)]
pub struct MetricDef {
    /// Its identity (index in [`REGISTRY`]).
    pub id: MetricId,
    /// Export key, e.g. `time_to_first_token`.
    pub tag: &'static str,
    /// Human-readable name, e.g. `Time to First Token`.
    pub header: &'static str,
    /// Record, aggregate or derived.
    pub kind: Kind,
    /// Base unit (values are kept in it).
    pub unit: Unit,
    /// Unit used in exports and on the console, if different from `unit`.
    pub display_unit: Option<Unit>,
    /// Console sort key; `None` sorts last.
    pub display_order: Option<u32>,
    /// A set of [`flags`] bits.
    pub flags: u32,
    /// Console table the metric belongs to.
    pub console_group: ConsoleGroup,
    /// Per-record values are integers (token counts, ns latencies) and stay integers in the
    /// per-record export when the display unit equals the base unit.
    pub integer: bool,
}

impl PartialEq for MetricDef {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl MetricDef {
    /// Whether any of `bits` is set.
    pub fn has(&self, bits: u32) -> bool {
        self.flags & bits != 0
    }

    /// The unit shown in exports.
    pub fn shown_unit(&self) -> Unit {
        self.display_unit.unwrap_or(self.unit)
    }

    /// Converts a base-unit value to the display unit as AIPerf 0.13's `convert_to` does: the
    /// value times the ratio of the units (`1000 / 1e9` = `1e-6` for ns → ms), which is not
    /// always the quotient's float (13_610_620 ns is 13.610619999999999 ms, not 13.61062).
    pub fn to_display(&self, v: f64) -> f64 {
        match (self.unit, self.display_unit) {
            (Unit::Nanoseconds, Some(Unit::Milliseconds)) => v * (1_000.0 / 1e9),
            (Unit::Nanoseconds, Some(Unit::Seconds)) => v * (1.0 / 1e9),
            (Unit::Bytes, Some(Unit::Kilobytes)) => v / 1024.0,
            // AIPerf's time conversion: `value * (other.per_second / self.per_second)`.
            (Unit::Seconds, Some(Unit::Milliseconds)) => v * 1000.0,
            _ => v,
        }
    }

    /// Looks a metric up by its export tag.
    pub fn by_tag(tag: &str) -> Option<&'static MetricDef> {
        REGISTRY.iter().find(|d| d.tag == tag)
    }

    /// Converts a display-unit value to the base unit (the inverse of [`Self::to_display`]):
    /// a `--goodput` threshold in ms becomes ns.
    pub fn from_display(&self, v: f64) -> f64 {
        match (self.unit, self.display_unit) {
            (Unit::Nanoseconds, Some(Unit::Milliseconds)) => v * 1e6,
            (Unit::Nanoseconds, Some(Unit::Seconds)) => v * 1e9,
            (Unit::Bytes, Some(Unit::Kilobytes)) => v * 1024.0,
            (Unit::Seconds, Some(Unit::Milliseconds)) => v / 1000.0,
            _ => v,
        }
    }

    /// Hidden everywhere (INTERNAL or EXPERIMENTAL).
    pub fn hidden(&self) -> bool {
        self.has(INTERNAL | EXPERIMENTAL)
    }
}

macro_rules! def {
    ($id:ident, $tag:literal, $header:literal, $kind:ident, $unit:ident, $disp:expr, $order:expr,
     $flags:expr, $group:ident, $int:literal) => {
        MetricDef {
            id: MetricId::$id,
            tag: $tag,
            header: $header,
            kind: Kind::$kind,
            unit: Unit::$unit,
            display_unit: $disp,
            display_order: $order,
            flags: $flags,
            console_group: ConsoleGroup::$group,
            integer: $int,
        }
    };
}

const MS: Option<Unit> = Some(Unit::Milliseconds);
const SEC: Option<Unit> = Some(Unit::Seconds);
const STREAM_TOK: u32 = STREAMING_ONLY | PRODUCES_TOKENS_ONLY;
const PCT_FAIL: u32 = PERCENTILE_INCLUDES_FAILED_REQUESTS;
const TOK_LB: u32 = PRODUCES_TOKENS_ONLY | LARGER_IS_BETTER;

/// Every metric ringperf knows, indexed by [`MetricId`]. The order is also the order results
/// appear in exports among the non-declared keys (record, then aggregate, then derived).
#[rustfmt::skip]
pub static REGISTRY: [MetricDef; 135] = [
    def!(TimeToFirstToken, "time_to_first_token", "Time to First Token", Record, Nanoseconds, MS, Some(100), STREAM_TOK | PCT_FAIL, Default, true),
    def!(TimeToSecondToken, "time_to_second_token", "Time to Second Token", Record, Nanoseconds, MS, Some(200), STREAM_TOK, Default, true),
    def!(TimeToFirstOutputToken, "time_to_first_output_token", "Time to First Output Token", Record, Nanoseconds, MS, Some(210), STREAM_TOK | SUPPORTS_REASONING, Default, true),
    def!(RequestLatency, "request_latency", "Request Latency", Record, Nanoseconds, MS, Some(300), PCT_FAIL, Default, true),
    def!(DecodeDuration, "decode_duration", "Decode Duration", Record, Nanoseconds, MS, Some(350), STREAM_TOK | PCT_FAIL, Default, true),
    def!(InterTokenLatency, "inter_token_latency", "Inter Token Latency", Record, Nanoseconds, MS, Some(400), STREAM_TOK | PCT_FAIL, Default, false),
    def!(OutputTokenThroughputPerUser, "output_token_throughput_per_user", "Output Token Throughput Per User", Record, TokensPerSecondPerUser, None, Some(500), STREAM_TOK | LARGER_IS_BETTER, Default, false),
    def!(E2eOutputTokenThroughput, "e2e_output_token_throughput", "E2E Output Token Throughput", Record, TokensPerSecondPerUser, None, Some(510), TOK_LB, Default, false),
    def!(OutputSequenceLength, "output_sequence_length", "Output Sequence Length", Record, Tokens, None, Some(600), TOK_LB, Default, true),
    def!(ErrorIsl, "error_isl", "Error Input Sequence Length", Record, Tokens, None, Some(700), ERROR_ONLY | LARGER_IS_BETTER | TOKENIZES_INPUT_ONLY, None, true),
    def!(InputSequenceLength, "input_sequence_length", "Input Sequence Length", Record, Tokens, None, Some(700), LARGER_IS_BETTER | TOKENIZES_INPUT_ONLY, Default, true),
    def!(UsagePromptTokens, "usage_prompt_tokens", "Usage Prompt Tokens", Record, Tokens, None, Some(1000), LARGER_IS_BETTER | TOKENIZES_INPUT_ONLY, Usage, true),
    def!(UsagePromptCacheReadTokens, "usage_prompt_cache_read_tokens", "Usage Prompt Cache Read Tokens", Record, Tokens, None, Some(1010), LARGER_IS_BETTER, Usage, true),
    def!(UsagePromptCacheWriteTokens, "usage_prompt_cache_write_tokens", "Usage Prompt Cache Write Tokens", Record, Tokens, None, Some(1015), 0, Usage, true),
    def!(UsagePromptAudioTokens, "usage_prompt_audio_tokens", "Usage Prompt Audio Tokens", Record, Tokens, None, Some(1020), LARGER_IS_BETTER | SUPPORTS_AUDIO_ONLY, Usage, true),
    def!(UsageCompletionTokens, "usage_completion_tokens", "Usage Completion Tokens", Record, Tokens, None, Some(1100), TOK_LB, Usage, true),
    def!(UsageReasoningTokens, "usage_reasoning_tokens", "Usage Reasoning Tokens", Record, Tokens, None, Some(1110), TOK_LB, Usage, true),
    def!(UsageCompletionAudioTokens, "usage_completion_audio_tokens", "Usage Completion Audio Tokens", Record, Tokens, None, Some(1120), TOK_LB | SUPPORTS_AUDIO_ONLY, Usage, true),
    def!(UsageAcceptedPredictionTokens, "usage_accepted_prediction_tokens", "Usage Accepted Prediction Tokens", Record, Tokens, None, Some(1130), TOK_LB, Usage, true),
    def!(UsageRejectedPredictionTokens, "usage_rejected_prediction_tokens", "Usage Rejected Prediction Tokens", Record, Tokens, None, Some(1140), PRODUCES_TOKENS_ONLY, Usage, true),
    def!(UsageTotalTokens, "usage_total_tokens", "Usage Total Tokens", Record, Tokens, None, Some(1200), TOK_LB, Usage, true),
    def!(InterChunkLatency, "inter_chunk_latency", "Inter Chunk Latency", Record, Nanoseconds, MS, None, STREAM_TOK, None, true),
    def!(OslMismatchDiffPct, "osl_mismatch_diff_pct", "OSL Mismatch Diff %", Record, Percent, None, None, PRODUCES_TOKENS_ONLY | DISABLE_ON_ACCURACY, None, false),
    def!(OutputTokenCount, "output_token_count", "Output Token Count", Record, Tokens, None, None, TOK_LB, None, true),
    def!(PrefillThroughputPerUser, "prefill_throughput_per_user", "Prefill Throughput Per User", Record, TokensPerSecondPerUser, None, None, STREAM_TOK | LARGER_IS_BETTER | TOKENIZES_INPUT_ONLY, None, false),
    def!(ReasoningTokenCount, "reasoning_token_count", "Reasoning Token Count", Record, Tokens, None, None, TOK_LB | SUPPORTS_REASONING, None, true),
    def!(RequestedOsl, "requested_osl", "Requested OSL", Record, Tokens, None, None, PRODUCES_TOKENS_ONLY | INTERNAL, None, true),
    def!(ThinkingEfficiency, "thinking_efficiency", "Thinking Efficiency", Record, Ratio, None, None, PRODUCES_TOKENS_ONLY | SUPPORTS_REASONING | EXPERIMENTAL, Default, false),
    def!(UsageCompletionTokensDiffPct, "usage_completion_tokens_diff_pct", "Usage Completion Diff %", Record, Percent, None, None, PRODUCES_TOKENS_ONLY | USAGE_DIFF_ONLY, None, false),
    def!(UsagePromptTokensDiffPct, "usage_prompt_tokens_diff_pct", "Usage Prompt Diff %", Record, Percent, None, None, TOKENIZES_INPUT_ONLY | USAGE_DIFF_ONLY, None, false),
    def!(UsageReasoningTokensDiffPct, "usage_reasoning_tokens_diff_pct", "Usage Reasoning Diff %", Record, Percent, None, None, PRODUCES_TOKENS_ONLY | SUPPORTS_REASONING | USAGE_DIFF_ONLY, None, false),
    def!(RequestCount, "request_count", "Request Count", Aggregate, Requests, None, Some(1100), LARGER_IS_BETTER | NO_INDIVIDUAL_RECORDS, Default, true),
    def!(ErrorRequestCount, "error_request_count", "Error Request Count", Aggregate, Requests, None, None, ERROR_ONLY | NO_INDIVIDUAL_RECORDS, Default, true),
    def!(ContextOverflowCount, "context_overflow_count", "Context Overflow Count", Aggregate, Requests, None, None, ERROR_ONLY | NO_INDIVIDUAL_RECORDS, Default, true),
    def!(MinRequestTimestamp, "min_request_timestamp", "Minimum Request Timestamp", Aggregate, Nanoseconds, None, None, INTERNAL | NO_INDIVIDUAL_RECORDS, None, true),
    def!(MaxResponseTimestamp, "max_response_timestamp", "Maximum Response Timestamp", Aggregate, Nanoseconds, None, None, INTERNAL | NO_INDIVIDUAL_RECORDS, None, true),
    def!(OslMismatchCount, "osl_mismatch_count", "OSL Mismatch Count", Aggregate, Requests, None, None, PRODUCES_TOKENS_ONLY | NO_INDIVIDUAL_RECORDS | DISABLE_ON_ACCURACY, None, true),
    def!(UsageDiscrepancyCount, "usage_discrepancy_count", "Usage Discrepancy Count", Aggregate, Requests, None, None, NO_INDIVIDUAL_RECORDS | USAGE_DIFF_ONLY, None, true),
    def!(GoodRequestCount, "good_request_count", "Good Request Count", Aggregate, Requests, None, None, GOODPUT, None, true),
    def!(OutputTokenThroughput, "output_token_throughput", "Output Token Throughput", Derived, TokensPerSecond, None, Some(800), TOK_LB, Default, false),
    def!(InputTokenThroughput, "input_token_throughput", "Input Token Throughput", Derived, TokensPerSecond, None, Some(805), LARGER_IS_BETTER, Default, false),
    def!(RequestThroughput, "request_throughput", "Request Throughput", Derived, RequestsPerSecond, None, Some(900), LARGER_IS_BETTER, Default, false),
    def!(CompletedRequestCount, "completed_request_count", "Completed Requests (Success + Error)", Derived, Requests, None, Some(1075), NO_INDIVIDUAL_RECORDS, Default, true),
    def!(RequestErrorRate, "request_error_rate", "Request Error Rate", Derived, Percent, None, Some(1080), NO_INDIVIDUAL_RECORDS, Default, false),
    def!(TotalUsagePromptTokens, "total_usage_prompt_tokens", "Total Usage Prompt Tokens", Derived, Tokens, None, Some(2000), LARGER_IS_BETTER | TOKENIZES_INPUT_ONLY, Usage, true),
    def!(TotalUsagePromptCacheReadTokens, "total_usage_prompt_cache_read_tokens", "Total Usage Prompt Cache Read Tokens", Derived, Tokens, None, Some(2010), LARGER_IS_BETTER, Usage, true),
    def!(OverallUsagePromptCacheReadPct, "overall_usage_prompt_cache_read_pct", "Overall Usage Prompt Cache Read %", Derived, Percent, None, Some(2012), LARGER_IS_BETTER, Usage, false),
    def!(TotalUsagePromptCacheWriteTokens, "total_usage_prompt_cache_write_tokens", "Total Usage Prompt Cache Write Tokens", Derived, Tokens, None, Some(2015), 0, Usage, true),
    def!(TotalUsagePromptAudioTokens, "total_usage_prompt_audio_tokens", "Total Usage Prompt Audio Tokens", Derived, Tokens, None, Some(2020), LARGER_IS_BETTER | SUPPORTS_AUDIO_ONLY, Usage, true),
    def!(TotalUsageCompletionTokens, "total_usage_completion_tokens", "Total Usage Completion Tokens", Derived, Tokens, None, Some(2100), TOK_LB, Usage, true),
    def!(TotalUsageReasoningTokens, "total_usage_reasoning_tokens", "Total Usage Reasoning Tokens", Derived, Tokens, None, Some(2110), TOK_LB, Usage, true),
    def!(TotalUsageCompletionAudioTokens, "total_usage_completion_audio_tokens", "Total Usage Completion Audio Tokens", Derived, Tokens, None, Some(2120), TOK_LB | SUPPORTS_AUDIO_ONLY, Usage, true),
    def!(TotalUsageAcceptedPredictionTokens, "total_usage_accepted_prediction_tokens", "Total Usage Accepted Prediction Tokens", Derived, Tokens, None, Some(2130), TOK_LB, Usage, true),
    def!(TotalUsageRejectedPredictionTokens, "total_usage_rejected_prediction_tokens", "Total Usage Rejected Prediction Tokens", Derived, Tokens, None, Some(2140), PRODUCES_TOKENS_ONLY, Usage, true),
    def!(TotalUsageTotalTokens, "total_usage_total_tokens", "Total Usage Total Tokens", Derived, Tokens, None, Some(2200), TOK_LB, Usage, true),
    def!(BenchmarkDuration, "benchmark_duration", "Benchmark Duration", Derived, Nanoseconds, SEC, None, 0, None, true),
    def!(OverallThinkingEfficiency, "overall_thinking_efficiency", "Overall Thinking Efficiency", Derived, Ratio, None, None, PRODUCES_TOKENS_ONLY | SUPPORTS_REASONING | EXPERIMENTAL, Default, false),
    def!(TotalErrorIsl, "total_error_isl", "Total Error Input Sequence Length", Derived, Tokens, None, None, ERROR_ONLY | LARGER_IS_BETTER | TOKENIZES_INPUT_ONLY, None, true),
    def!(TotalIsl, "total_isl", "Total Input Sequence Length", Derived, Tokens, None, None, LARGER_IS_BETTER | TOKENIZES_INPUT_ONLY, None, true),
    def!(TotalOsl, "total_osl", "Total Output Sequence Length", Derived, Tokens, None, None, TOK_LB, None, true),
    def!(TotalOutputTokens, "total_output_tokens", "Total Output Tokens", Derived, Tokens, None, None, TOK_LB, None, true),
    def!(TotalReasoningTokens, "total_reasoning_tokens", "Total Reasoning Tokens", Derived, Tokens, None, None, TOK_LB, None, true),
    def!(TotalTokenThroughput, "total_token_throughput", "Total Token Throughput", Derived, TokensPerSecond, None, None, TOK_LB, None, false),
    def!(Goodput, "goodput", "Goodput", Derived, RequestsPerSecond, None, Some(1000), GOODPUT, Default, false),
    def!(GoodRequestFraction, "good_request_fraction", "GoodRequestFraction", Derived, Ratio, None, None, GOODPUT | LARGER_IS_BETTER, None, false),
    // Sweep-line (time-weighted) metrics, in AIPerf's `SWEEP_LINE_METRIC_SPECS` order, then the
    // active-only variants. Not in AIPerf's registry: injected at summary time, no display order.
    def!(EffectiveConcurrency, "effective_concurrency", "Effective Concurrency", Sweep, Requests, None, None, NO_INDIVIDUAL_RECORDS, Effective, false),
    def!(EffectiveDecodeThroughput, "effective_decode_throughput", "Effective Decode Throughput", Sweep, TokensPerSecond, None, None, NO_INDIVIDUAL_RECORDS, Effective, false),
    def!(EffectivePrefillThroughput, "effective_prefill_throughput", "Effective Prefill Throughput", Sweep, TokensPerSecond, None, None, NO_INDIVIDUAL_RECORDS, Effective, false),
    def!(EffectiveDecodeConcurrency, "effective_decode_concurrency", "Effective Decode Concurrency", Sweep, Requests, None, None, NO_INDIVIDUAL_RECORDS, Effective, false),
    def!(EffectivePrefillConcurrency, "effective_prefill_concurrency", "Effective Prefill Concurrency", Sweep, Requests, None, None, NO_INDIVIDUAL_RECORDS, Effective, false),
    def!(EffectiveTotalThroughput, "effective_total_throughput", "Effective Total Throughput", Sweep, TokensPerSecond, None, None, NO_INDIVIDUAL_RECORDS, Effective, false),
    def!(EffectiveDecodeThroughputPerUser, "effective_decode_throughput_per_user", "Effective Decode Throughput Per User", Sweep, TokensPerSecondPerUser, None, None, NO_INDIVIDUAL_RECORDS, Effective, false),
    def!(EffectivePrefillThroughputPerUser, "effective_prefill_throughput_per_user", "Effective Prefill Throughput Per User", Sweep, TokensPerSecondPerUser, None, None, NO_INDIVIDUAL_RECORDS, Effective, false),
    def!(TokensInFlight, "tokens_in_flight", "Tokens In Flight", Sweep, Tokens, None, None, NO_INDIVIDUAL_RECORDS, Effective, false),
    def!(ActiveDecodeThroughput, "active_decode_throughput", "Active Decode Throughput", Sweep, TokensPerSecond, None, None, NO_INDIVIDUAL_RECORDS, Active, false),
    def!(ActivePrefillThroughput, "active_prefill_throughput", "Active Prefill Throughput", Sweep, TokensPerSecond, None, None, NO_INDIVIDUAL_RECORDS, Active, false),
    def!(ActiveDecodeThroughputPerUser, "active_decode_throughput_per_user", "Active Decode Throughput Per User", Sweep, TokensPerSecondPerUser, None, None, NO_INDIVIDUAL_RECORDS, Active, false),
    def!(ActivePrefillThroughputPerUser, "active_prefill_throughput_per_user", "Active Prefill Throughput Per User", Sweep, TokensPerSecondPerUser, None, None, NO_INDIVIDUAL_RECORDS, Active, false),
    def!(ActiveTotalThroughput, "active_total_throughput", "Active Total Throughput", Sweep, TokensPerSecond, None, None, NO_INDIVIDUAL_RECORDS, Active, false),
    // Derived per-record latencies from stored stamps (AIPerf `derived_latency.py`).
    def!(CreditToStartLatency, "credit_to_start_latency", "Credit-to-Start Latency", Derived, Nanoseconds, MS, None, NO_INDIVIDUAL_RECORDS, None, true),
    def!(EffectiveLatency, "effective_latency", "Effective Latency (CO-aware)", Derived, Nanoseconds, MS, None, NO_INDIVIDUAL_RECORDS, Effective, true),
    // HTTP trace metrics (AIPerf `http_trace_metrics.py`), see `super::http_trace`.
    def!(HttpReqBlocked, "http_req_blocked", "HTTP Blocked", Record, Nanoseconds, MS, Some(2000), HTTP_TRACE_ONLY, None, true),
    def!(HttpReqDnsLookup, "http_req_dns_lookup", "HTTP DNS Lookup", Record, Nanoseconds, MS, Some(2010), HTTP_TRACE_ONLY, None, true),
    def!(HttpReqConnecting, "http_req_connecting", "HTTP Connecting", Record, Nanoseconds, MS, Some(2020), HTTP_TRACE_ONLY, None, true),
    def!(HttpReqSending, "http_req_sending", "HTTP Sending", Record, Nanoseconds, MS, Some(2030), HTTP_TRACE_ONLY, None, true),
    def!(HttpReqWaiting, "http_req_waiting", "HTTP Waiting (TTFB)", Record, Nanoseconds, MS, Some(2040), HTTP_TRACE_ONLY, None, true),
    def!(HttpReqReceiving, "http_req_receiving", "HTTP Receiving", Record, Nanoseconds, MS, Some(2050), HTTP_TRACE_ONLY, None, true),
    def!(HttpReqConnectionReused, "http_req_connection_reused", "HTTP Connection Reused", Record, Ratio, None, Some(2060), HTTP_TRACE_ONLY, None, true),
    def!(HttpReqDataSent, "http_req_data_sent", "HTTP Data Sent", Record, Bytes, Some(Unit::Kilobytes), Some(2070), HTTP_TRACE_ONLY, None, true),
    def!(HttpReqChunksSent, "http_req_chunks_sent", "HTTP Chunks Sent", Record, Count, None, Some(2080), HTTP_TRACE_ONLY, None, true),
    def!(HttpReqDataReceived, "http_req_data_received", "HTTP Data Received", Record, Bytes, Some(Unit::Kilobytes), Some(2090), HTTP_TRACE_ONLY, None, true),
    def!(HttpReqChunksReceived, "http_req_chunks_received", "HTTP Chunks Received", Record, Count, None, Some(2100), HTTP_TRACE_ONLY, None, true),
    def!(HttpReqConnectionOverhead, "http_req_connection_overhead", "HTTP Connection Overhead", Record, Nanoseconds, MS, Some(2110), HTTP_TRACE_ONLY, None, true),
    def!(HttpReqDuration, "http_req_duration", "HTTP Duration (excl. conn)", Record, Nanoseconds, MS, Some(2120), HTTP_TRACE_ONLY, None, true),
    def!(HttpReqTotal, "http_req_total", "HTTP Total Time", Record, Nanoseconds, MS, Some(2130), HTTP_TRACE_ONLY, None, true),
    // Replay schedule fidelity (AIPerf `replay_sched_lag_metrics.py`, docs/metrics.md): the raw
    // per-request send offset, then the run-scoped lag percentiles and flag computed from it.
    def!(ReplaySendScheduleOffset, "replay_send_schedule_offset", "Replay Send Schedule Offset", Record, Nanoseconds, None, None, INTERNAL | FIXED_SCHEDULE_ONLY, None, true),
    def!(ReplaySchedLagP50, "replay_sched_lag_p50", "Replay Schedule Lag p50", Derived, Milliseconds, None, None, FIXED_SCHEDULE_ONLY, None, false),
    def!(ReplaySchedLagP90, "replay_sched_lag_p90", "Replay Schedule Lag p90", Derived, Milliseconds, None, None, FIXED_SCHEDULE_ONLY, None, false),
    def!(ReplaySchedLagP99, "replay_sched_lag_p99", "Replay Schedule Lag p99", Derived, Milliseconds, None, None, FIXED_SCHEDULE_ONLY, None, false),
    def!(ReplaySchedDegraded, "replay_sched_degraded", "Replay Schedule Degraded", Derived, Count, None, None, FIXED_SCHEDULE_ONLY, None, true),
    // Audio (AIPerf `audio_duration_metric.py`, `rtfx_metric.py`), see `super::audio`.
    def!(AudioDuration, "audio_duration", "Audio Duration", Record, Seconds, None, Some(870), SUPPORTS_AUDIO_ONLY, None, false),
    def!(Rtfx, "rtfx", "Inverse Real-Time Factor (RTFx)", Record, Ratio, None, Some(850), SUPPORTS_AUDIO_ONLY | LARGER_IS_BETTER, Default, false),
    // Media (AIPerf `image_metrics.py`, `video_generation_metrics.py`), see `super::media`.
    def!(NumImages, "num_images", "Number of Images", Record, Images, None, None, SUPPORTS_IMAGE_ONLY, None, true),
    def!(ImageThroughput, "image_throughput", "Image Throughput", Record, ImagesPerSecond, None, Some(860), SUPPORTS_IMAGE_ONLY, Default, false),
    def!(ImageLatency, "image_latency", "Image Latency", Record, MsPerImage, None, Some(861), SUPPORTS_IMAGE_ONLY, Default, false),
    def!(VideoInferenceTime, "video_inference_time", "Video Inference Time", Record, Seconds, MS, Some(310), PRODUCES_VIDEO_ONLY, Default, false),
    def!(VideoPeakMemory, "video_peak_memory", "Video Peak Memory", Record, Megabytes, None, Some(311), PRODUCES_VIDEO_ONLY, Default, false),
    // GPU energy efficiency (AIPerf `power_efficiency_metrics.py`): joined from the DCGM samples
    // of the profiling window and the results above, see `crate::gpu_telemetry::energy`.
    def!(NvidiaEnergyDelayProduct, "nvidia_energy_delay_product", "Energy Delay Product", Joined, JouleSeconds, None, Some(700), 0, GpuPowerEfficiencyNvidia, false),
    def!(NvidiaPerformancePerWatt, "nvidia_performance_per_watt", "Performance per Watt", Joined, RequestsPerSecondPerWatt, None, Some(710), LARGER_IS_BETTER, GpuPowerEfficiencyNvidia, false),
    def!(NvidiaOutputTpsPerWatt, "nvidia_output_tps_per_watt", "Output Tokens per Second per Watt", Joined, TokensPerSecondPerWatt, None, Some(712), TOK_LB, GpuPowerEfficiencyNvidia, false),
    def!(NvidiaGoodputPerWatt, "nvidia_goodput_per_watt", "Goodput per Watt", Joined, GoodputPerWatt, None, Some(714), LARGER_IS_BETTER, GpuPowerEfficiencyNvidia, false),
    def!(NvidiaAverageGpuPower, "nvidia_average_gpu_power", "Average GPU Power", Joined, Watts, None, Some(720), 0, GpuPowerEfficiencyNvidia, false),
    def!(NvidiaTotalGpuEnergy, "nvidia_total_gpu_energy", "Total GPU Energy", Joined, Joules, None, Some(730), 0, GpuPowerEfficiencyNvidia, false),
    def!(NvidiaTotalGpuPower, "nvidia_total_gpu_power", "Total GPU Power", Joined, Watts, None, Some(740), 0, GpuPowerEfficiencyNvidia, false),
    def!(NvidiaEnergyPerTotalToken, "nvidia_energy_per_total_token", "Energy per Total Token", Joined, MillijoulesPerToken, None, Some(745), 0, GpuPowerEfficiencyNvidia, false),
    def!(NvidiaEnergyPerOutputToken, "nvidia_energy_per_output_token", "Energy per Output Token", Joined, MillijoulesPerToken, None, Some(750), PRODUCES_TOKENS_ONLY, GpuPowerEfficiencyNvidia, false),
    def!(NvidiaEnergyPerRequest, "nvidia_energy_per_request", "Energy per Request", Joined, JoulesPerRequest, None, Some(755), 0, GpuPowerEfficiencyNvidia, false),
    def!(NvidiaOutputTokensPerJoule, "nvidia_output_tokens_per_joule", "Output Tokens per Joule", Joined, TokensPerJoule, None, Some(760), TOK_LB, GpuPowerEfficiencyNvidia, false),
    def!(NvidiaEnergyPerUser, "nvidia_energy_per_user", "Energy per User", Joined, JoulesPerUser, None, Some(765), 0, GpuPowerEfficiencyNvidia, false),
    // Network-adjusted latencies (AIPerf `network_adjusted_metrics.py`): the start-anchored
    // latencies less the RTT, see `Accumulator::network_adjusted`.
    def!(NetworkAdjustedTimeToFirstToken, "network_adjusted_time_to_first_token", "Network-Adjusted Time to First Token", Joined, Nanoseconds, MS, Some(101), STREAM_TOK, Default, false),
    def!(NetworkAdjustedTimeToFirstOutputToken, "network_adjusted_time_to_first_output_token", "Network-Adjusted Time to First Output Token", Joined, Nanoseconds, MS, Some(211), STREAM_TOK | SUPPORTS_REASONING, Default, false),
    def!(NetworkAdjustedRequestLatency, "network_adjusted_request_latency", "Network-Adjusted Request Latency", Joined, Nanoseconds, MS, Some(301), 0, Default, false),
    def!(NetworkRtt, "network_rtt", "Network RTT", Joined, Nanoseconds, MS, Some(305), NO_INDIVIDUAL_RECORDS, Default, false),
    // Speculative decoding (AIPerf `spec_decode_metrics.py`): per request from the server's
    // `metrics.speculative_decoding`, then the sums and the pooled ratios.
    def!(SpecDecodeAcceptanceLength, "spec_decode_acceptance_length", "Acceptance Length", Record, Ratio, None, Some(5000), LARGER_IS_BETTER, SpecDecode, false),
    def!(SpecDecodeDraftAcceptanceRate, "spec_decode_draft_acceptance_rate", "Draft Acceptance Rate", Record, Percent, None, Some(5020), LARGER_IS_BETTER, SpecDecode, false),
    def!(SpecDecodeAcceptedPerVerified, "spec_decode_accepted_per_verified", "Accepted per Verified", Record, Ratio, None, Some(5030), LARGER_IS_BETTER, SpecDecode, false),
    def!(SpecDecodeSteps, "spec_decode_steps", "Spec Decode Steps", Record, Count, None, Some(5040), 0, SpecDecode, true),
    def!(SpecDecodeAcceptedDraftTokens, "spec_decode_accepted_draft_tokens", "Accepted Draft Tokens", Record, Tokens, None, Some(5050), 0, None, true),
    def!(SpecDecodeDraftTokens, "spec_decode_draft_tokens", "Draft Tokens", Record, Tokens, None, Some(5060), 0, None, true),
    def!(TotalSpecDecodeSteps, "total_spec_decode_steps", "Total Spec Decode Steps", Derived, Count, None, Some(5140), 0, None, true),
    def!(TotalAcceptedDraftTokens, "total_accepted_draft_tokens", "Total Accepted Draft Tokens", Derived, Tokens, None, Some(5150), 0, None, true),
    def!(TotalDraftTokens, "total_draft_tokens", "Total Draft Tokens", Derived, Tokens, None, Some(5160), 0, None, true),
    def!(SpecDecodeTokenWeightedAcceptanceLength, "spec_decode_token_weighted_acceptance_length", "Token-Weighted Acceptance Length", Derived, Ratio, None, Some(5010), LARGER_IS_BETTER, SpecDecode, false),
    def!(SpecDecodeOverallDraftAcceptanceRate, "spec_decode_overall_draft_acceptance_rate", "Overall Draft Acceptance Rate", Derived, Percent, None, Some(5025), LARGER_IS_BETTER, SpecDecode, false),
    // Agent traces (AIPerf `theoretical_prefix_cache.py`): the share of the valid requests'
    // KV blocks an earlier request of the same trace had already sent.
    def!(TheoreticalPrefixCacheHit, "theoretical_prefix_cache_hit", "Theoretical Prefix Cache Hit", Derived, Percent, None, Some(1110), LARGER_IS_BETTER | NO_INDIVIDUAL_RECORDS, Default, false),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Looks a metric up by tag.
    fn by_tag(tag: &str) -> Option<&'static MetricDef> {
        REGISTRY.iter().find(|d| d.tag == tag)
    }

    #[test]
    fn ids_index_the_registry_and_tags_are_unique() {
        for (i, d) in REGISTRY.iter().enumerate() {
            assert_eq!(d.id as usize, i, "{}", d.tag);
            assert_eq!(
                REGISTRY.iter().filter(|o| o.tag == d.tag).count(),
                1,
                "{}",
                d.tag
            );
        }
        assert_eq!(
            MetricId::TheoreticalPrefixCacheHit as usize,
            REGISTRY.len() - 1
        );
    }

    #[test]
    fn spec_rows_spot_checks() {
        let ttft = by_tag("time_to_first_token").unwrap();
        assert_eq!(ttft.display_order, Some(100));
        assert_eq!(ttft.shown_unit().as_str(), "ms");
        assert!(ttft.has(PERCENTILE_INCLUDES_FAILED_REQUESTS) && ttft.has(STREAMING_ONLY));
        let bd = MetricId::BenchmarkDuration.def();
        assert_eq!(bd.shown_unit(), Unit::Seconds);
        assert_eq!(bd.to_display(34_502_655.0), 0.034502655);
        assert_eq!(
            MetricId::RequestLatency.def().to_display(1_516_322.453125),
            1.516322453125
        );
        assert!(MetricId::RequestedOsl.def().hidden());
        assert_eq!(
            by_tag("usage_prompt_tokens_diff_pct").unwrap().header,
            "Usage Prompt Diff %"
        );
        assert!(by_tag("isl").is_none());
    }
}
