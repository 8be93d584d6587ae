//! Everything the mock can be told ([`MockConfig`]) and the small types it is made of. Plain data:
//! validated when a server starts (`server`), never parsed from flags here.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::fault::FaultSpec;

/// How many output tokens a request gets (before the request's own max tokens cap).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OutputLen {
    /// Always `n` tokens.
    Fixed(u64),
    /// Uniform in `min..=max`, drawn per request from the seeded generator.
    Uniform {
        /// Smallest length.
        min: u64,
        /// Largest length (inclusive).
        max: u64,
    },
}

/// Which monoio driver the server threads run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Driver {
    /// io_uring when the kernel allows it, else the epoll driver.
    #[default]
    Auto,
    /// io_uring only; start fails if it is unavailable.
    Uring,
    /// The epoll (legacy) driver.
    Legacy,
}

/// Everything the mock server can be told.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MockConfig {
    /// Address to listen on; port 0 picks a free port (see [`MockServer::addr`](crate::mock::MockServer::addr)).
    pub bind: SocketAddr,
    /// Server threads (at least 1).
    pub threads: usize,
    /// Cores to pin the threads to (thread `i` to `pin_cores[i % len]`); `None` leaves them free.
    /// A refused pin is reported on stderr and otherwise ignored.
    pub pin_cores: Option<Vec<usize>>,
    /// Delay from a request's arrival to its first token event.
    pub ttft: Duration,
    /// Delay between consecutive token events.
    pub itl: Duration,
    /// Output (content) tokens per request.
    pub output_tokens: OutputLen,
    /// Tokens packed into one SSE event (1 = one token per event; more, like vLLM under load).
    pub tokens_per_event: usize,
    /// Reasoning tokens streamed first as `reasoning_content` (0 = none). They count towards the
    /// request's max tokens, before the content.
    pub reasoning_tokens: usize,
    /// Seed of the output lengths, response ids and fault choices (each thread's generator) and
    /// of the reply words, which are a function of this seed and the request body only: the same
    /// body gets the same text from any thread, in any order, in every run (with a
    /// [`OutputLen::Uniform`] length, the length is still drawn per request, and the text is that
    /// many words of the body's sequence).
    pub seed: u64,
    /// Model name served and reported.
    pub model: String,
    /// Keep the per-request [`TruthLog`](crate::mock::TruthLog).
    pub truth_log: bool,
    /// With `truth_log`, also keep each completion request's body and the reply text it got
    /// ([`TruthEntry::request_body`](crate::mock::TruthEntry::request_body),
    /// [`TruthEntry::reply_text`](crate::mock::TruthEntry::reply_text)): what dataset,
    /// trace-replay and multi-turn tests compare. Off by default, so a performance run copies
    /// no bodies.
    #[serde(default)]
    pub record_bodies: bool,
    /// With `truth_log`, the request header whose value is kept as the
    /// [`TruthEntry::correlation_id`](crate::mock::TruthEntry::correlation_id) instead of
    /// `X-Correlation-ID` (a client's `--session-header`). Case-insensitive.
    #[serde(default)]
    pub session_header: Option<String>,
    /// monoio driver choice.
    pub io_driver: Driver,
    /// Cap the output at the request's `max_completion_tokens` / `max_tokens` (as a real server
    /// does); `false` always sends the configured length.
    pub respect_max_tokens: bool,
    /// Faults injected into completion requests, each into its share of them (see [`Fault`](crate::mock::Fault) and
    /// [`FaultList`](crate::mock::FaultList) for the command-line syntax). Empty: every request is served normally.
    pub faults: Vec<FaultSpec>,
    /// What `/metrics` and `/prometheus/metrics` answer.
    #[serde(default)]
    pub metrics_mode: MetricsMode,
    /// Count `usage.prompt_tokens` exactly with this tokenizer (the text of the payload's
    /// messages or prompt, joined by a space, as a client counts its ISL), cached per distinct
    /// body; without it the count is approximate (whitespace words).
    #[serde(skip)]
    pub prompt_tokenizer: Option<PromptTokenizer>,
    /// Serve HTTPS with this certificate and key (`None`: plain HTTP).
    #[serde(default)]
    pub tls: Option<MockTls>,
    /// Serve a DCGM exporter page for this many GPUs at `/dcgm/metrics` (0: that path is 404).
    /// See [`crate::mock::DcgmPage`] for what it holds.
    #[serde(default)]
    pub dcgm_gpus: u32,
    /// Report vLLM's per-request speculative-decoding stats (`metrics.speculative_decoding`,
    /// `--per-request-spec-decode-metrics`) for this many drafts a step, on a chat or
    /// completions answer's usage chunk or body (0: none; see
    /// [`crate::mock::SpecDecodeStats`]).
    pub spec_decode: u32,
    /// At most this many completion requests in service at once; the rest wait, first come
    /// first served, and their first token is late by the wait (0: no limit). A request's
    /// service time is `ttft + (token events - 1) × itl`; see `capacity` for the model.
    #[serde(default)]
    pub capacity: u32,
    /// The model's context length (vLLM's `--max-model-len`): a completion request whose prompt
    /// and asked output tokens together exceed it gets vLLM's 400 `maximum context length`
    /// error; `None`: no limit.
    #[serde(default)]
    pub max_model_len: Option<u64>,
    /// The fast mode (`mock-server --fast`): streamed chat and completions answers are copied
    /// from bytes built once per response shape (docs/mock.md, "Fast mode"). Every streamed response of a shape then has the
    /// same id, `created` and words, whatever its body; the truth log is as exact as without.
    #[serde(default)]
    pub fast: bool,
    /// The model is still loading this long after the start: `/v1/models` lists nothing and
    /// completion requests get 503 (a server coming up, for `--wait-for-model-*`).
    #[serde(default)]
    pub model_ready_after: Duration,
    /// The model is also still loading for the first N readiness-relevant requests (each
    /// `GET /v1/models` and each completion request counts): a loading server whose end does
    /// not depend on the clock, for tests.
    #[serde(default)]
    pub loading_answers: u32,
    /// The first N `POST /reset_prefix_cache` get 503 (a server busy with other control work,
    /// for the reset's retries).
    #[serde(default)]
    pub busy_resets: u32,
    /// The video job API's behaviour (`/v1/videos`, see `videos`).
    #[serde(default)]
    pub video_jobs: super::videos::VideoJobConfig,
}

/// The PEM files an HTTPS mock serves with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MockTls {
    /// The certificate chain, leaf first.
    pub cert: std::path::PathBuf,
    /// The leaf's private key (PKCS#8, PKCS#1 or SEC1).
    pub key: std::path::PathBuf,
}

/// A shared tokenizer for exact prompt counts (compared by identity).
#[derive(Clone)]
pub struct PromptTokenizer(pub Arc<ringperf_workload::workload::Tokenizer>);

impl std::fmt::Debug for PromptTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PromptTokenizer")
    }
}

impl PartialEq for PromptTokenizer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            threads: 1,
            pin_cores: None,
            ttft: Duration::ZERO,
            itl: Duration::ZERO,
            output_tokens: OutputLen::Fixed(16),
            tokens_per_event: 1,
            reasoning_tokens: 0,
            seed: 0,
            model: "mock-model".to_owned(),
            truth_log: false,
            record_bodies: false,
            session_header: None,
            io_driver: Driver::Auto,
            respect_max_tokens: true,
            faults: Vec::new(),
            metrics_mode: MetricsMode::Vllm,
            prompt_tokenizer: None,
            tls: None,
            dcgm_gpus: 0,
            spec_decode: 0,
            capacity: 0,
            max_model_len: None,
            fast: false,
            model_ready_after: Duration::ZERO,
            loading_answers: 0,
            busy_resets: 0,
            video_jobs: super::videos::VideoJobConfig::default(),
        }
    }
}

/// The `/metrics` behaviour of the mock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MetricsMode {
    /// The vLLM-shaped page at `/metrics`; `/prometheus/metrics` is 404.
    #[default]
    Vllm,
    /// TRT-LLM: `/metrics` answers an iteration-stats JSON array (`application/json`), the
    /// Prometheus page is at `/prometheus/metrics`.
    TrtLlm,
    /// TRT-LLM without `return_perf_metrics`: JSON at `/metrics`, 404 at `/prometheus/metrics`.
    JsonOnly,
    /// `text/plain` that is not Prometheus exposition format.
    Garbage,
    /// The vLLM page, each answer delayed by `delay_ms`.
    Slow {
        /// Delay before the answer, ms.
        delay_ms: u64,
    },
    /// The vLLM page plus `mock_restarts_total`, a counter that goes 0, 5, 10, 15 and back to 0
    /// over consecutive pages (a server restart every four scrapes).
    CounterReset,
    /// The vLLM page plus NaN / ±Inf samples: `mock_nan_gauge` (NaN), `mock_partial_gauge`
    /// (one NaN series, one finite = 7), and `mock_nan_hist` whose `path="bad"` series has a NaN
    /// `_sum` (dropped whole) beside a finite `path="good"` series.
    NanSamples,
    /// The vLLM page plus `mock_escaped_info` with a HELP text and label values holding `\"`,
    /// `\\` and `\n` escapes.
    Escapes,
    /// The vLLM page plus one malformed line (a sample whose value is not a number) and, after
    /// it, the gauge `mock_after_malformed = 3`.
    MalformedLine,
    /// The vLLM page plus `series` samples of the gauge `mock_shard_load{shard="i"} = i`.
    ManySeries {
        /// Number of series.
        series: u32,
    },
    /// The vLLM page plus `mock_metrics_pages_total`, the pages served so far (this one
    /// included): no two pages are alike, as on a real server whose process counters
    /// (`process_cpu_seconds_total`, …) move between any two scrapes, so a scraper keeps every
    /// page (none is a duplicate).
    PageCounter,
    /// An OpenMetrics page (counter families declared without `_total`, `x_total` and
    /// `x_created` samples, an exemplar, `# EOF`), served as `application/openmetrics-text`
    /// (`openmetrics_type`) or as classic `text/plain`.
    OpenMetrics {
        /// Served with OpenMetrics' content type.
        openmetrics_type: bool,
    },
    /// The vLLM page plus SGLang's speculative-decoding gauges, `sglang:spec_accept_rate` and
    /// `sglang:spec_accept_length`, for the served model on the leader ranks (`tp_rank="0"`,
    /// `pp_rank="0"`) and a duplicate on rank 1; see [`crate::mock::sglang_spec_values`].
    SglangSpec,
    /// No metrics at all: 404 at `/metrics` and at `/prometheus/metrics`.
    NotFound,
    /// Both metrics paths accept the request, read it and never answer: the mock keeps the
    /// connection open (discarding whatever else arrives) until the client closes it or the
    /// mock stops.
    Hang,
}
