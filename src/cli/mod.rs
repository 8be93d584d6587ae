//! Command line: clap definitions only. Values are checked and defaults resolved in
//! [`crate::config`]; nothing here is used by the engine directly.
//!
//! Flag names, aliases, defaults and choices follow AIPerf 0.13's `aiperf profile` (docs/flags.md).
//! An AIPerf flag that ringperf does not implement yet is rejected by [`reject_unsupported`] with
//! a message naming it, never silently ignored.

pub mod agentic;
pub mod analyze;
pub mod chat;
pub mod endpoint;
pub mod flags;
pub mod form;
pub mod goodput;
pub mod http_trace;
pub mod input;
pub mod lab;
pub mod load_shape;
pub mod media;
pub mod merge;
pub mod multi_run;
pub mod network;
pub mod otel;
pub mod outputs;
pub mod parse;
pub mod plot;
pub mod prompt;
pub mod random_prompt;
pub mod requests;
pub mod search;
pub mod shard;
pub mod sweep;
pub mod timing;
pub mod tokenizer;
pub mod trace_tools;
pub mod uuid_strip;
pub mod video;
pub mod yaml;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use parse::{Given, parse, profile_args};

/// ringperf: benchmark LLM inference servers (drop-in for `aiperf profile`).
#[derive(Debug, Parser)]
#[command(name = "ringperf", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a benchmark against an OpenAI-compatible server (same flags as `aiperf profile`).
    #[command(allow_negative_numbers = true)]
    Profile(Box<ProfileArgs>),
    /// Serve the mock OpenAI-compatible server until interrupted.
    MockServer(MockArgs),
    /// Recompute the server-metrics exports from a server-metrics JSONL (ringperf's or AIPerf's).
    ServerMetrics(ServerMetricsArgs),
    /// Merge the artifact directories of a run's shards into one set of artifacts, statistics
    /// recomputed from all their records.
    Merge(merge::MergeArgs),
    /// Write report.html (inline SVG charts, data as JSON) and PNG / SVG charts from one or
    /// more artifact directories.
    Plot(plot::PlotArgs),
    /// Check, expand or start AIPerf 0.13 YAML config files.
    Config(yaml::ConfigArgs),
    /// Analyze a mooncake trace file for ISL/OSL distributions and cache hit rates.
    AnalyzeTrace(trace_tools::AnalyzeTraceArgs),
    /// Post-run analysis of finished artifacts (`swim-lane`: per-session timelines with the
    /// concurrency curve under them).
    Analyze(analyze::AnalyzeArgs),
    /// Validate a benchmark artifact (a mooncake trace).
    Validate(trace_tools::ValidateArgs),
    /// Synthesize a mooncake trace from a recorded one, its prefix tree reshaped.
    Synthesize(trace_tools::SynthesizeArgs),
    /// Chat interactively with an endpoint, printing per-turn speed stats.
    Chat(chat::ChatArgs),
}

/// Flags of `ringperf profile`.
#[derive(Debug, Args, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProfileArgs {
    // ----- Endpoint -----
    /// Model name(s) to benchmark (comma-separated list or repeated).
    #[arg(long = "model-names", visible_aliases = ["model"], short = 'm', value_delimiter = ',', help_heading = "Endpoint")]
    pub model_names: Vec<String>,

    /// Custom endpoint path (e.g. /v1/custom), overriding the endpoint type's default path.
    #[arg(
        long = "custom-endpoint",
        visible_alias = "endpoint",
        help_heading = "Endpoint"
    )]
    pub custom_endpoint: Option<String>,

    /// API endpoint type.
    #[arg(
        long = "endpoint-type",
        default_value = "chat",
        value_enum,
        ignore_case = true,
        help_heading = "Endpoint"
    )]
    pub endpoint_type: EndpointTypeArg,

    /// Stream responses (SSE); enables TTFT / ITL metrics.
    #[arg(long, help_heading = "Endpoint")]
    pub streaming: bool,

    /// Base URL(s) of the server(s); several URLs are used round-robin.
    #[arg(
        long,
        short = 'u',
        default_value = "http://localhost:8000",
        value_delimiter = ',',
        help_heading = "Endpoint"
    )]
    pub url: Vec<String>,

    /// How requests are spread over several URLs.
    #[arg(
        long = "url-strategy",
        default_value = "round-robin",
        value_enum,
        ignore_case = true,
        help_heading = "Endpoint"
    )]
    pub url_strategy: UrlStrategyArg,

    /// Maximum time for one request (connect, send and receive), in seconds.
    #[arg(
        long = "request-timeout-seconds",
        default_value_t = 21600.0,
        help_heading = "Endpoint"
    )]
    pub request_timeout_seconds: f64,

    /// API key, sent as `Authorization: Bearer <key>`.
    #[arg(long = "api-key", help_heading = "Endpoint")]
    pub api_key: Option<String>,

    /// Transport protocol of the requests: `http`, AIPerf's only one (an `https://` URL is TLS
    /// over it), as the URL's scheme already says.
    #[arg(
        long = "transport",
        visible_alias = "transport-type",
        value_enum,
        ignore_case = true,
        help_heading = "Endpoint"
    )]
    pub transport: Option<TransportArg>,

    /// Send `max_tokens` instead of `max_completion_tokens`.
    #[arg(long = "use-legacy-max-tokens", help_heading = "Endpoint")]
    pub use_legacy_max_tokens: bool,

    /// Count tokens from the server's `usage` fields instead of tokenizing client-side.
    #[arg(long = "use-server-token-count", help_heading = "Endpoint")]
    pub use_server_token_count: bool,

    /// Connection reuse: pooled keep-alive connections, or a new connection per request.
    #[arg(
        long = "connection-reuse-strategy",
        default_value = "pooled",
        value_enum,
        ignore_case = true,
        help_heading = "Endpoint"
    )]
    pub connection_reuse_strategy: ConnectionReuseArg,

    // ----- Input -----
    /// Extra request body fields, as `key:value` pairs or a JSON object.
    #[arg(long = "extra-inputs", num_args = 1.., help_heading = "Input")]
    pub extra_inputs: Vec<String>,

    /// Extra HTTP headers, as `Name:Value` pairs or a JSON object.
    #[arg(long = "header", short = 'H', num_args = 1.., help_heading = "Input")]
    pub header: Vec<String>,

    /// Seed for every random choice (prompts, lengths, arrivals).
    #[arg(long = "random-seed", help_heading = "Input")]
    pub random_seed: Option<u64>,

    // ----- Output -----
    /// Directory for all artifacts.
    #[arg(
        long = "output-artifact-dir",
        visible_alias = "artifact-dir",
        help_heading = "Output"
    )]
    pub artifact_dir: Option<PathBuf>,

    /// Base file name of every exported file.
    #[arg(
        long = "profile-export-prefix",
        visible_alias = "profile-export-file",
        help_heading = "Output"
    )]
    pub profile_export_prefix: Option<String>,

    /// Timeslice duration in seconds: client metrics per window
    /// (`profile_export_aiperf_timeslices.*`) and server-metric timeslices.
    #[arg(long = "slice-duration", help_heading = "Output")]
    pub slice_duration: Option<f64>,

    /// After the run, write report.html and the charts under plots/ into the artifact
    /// directory, as `ringperf plot` does.
    #[arg(
        long = "auto-plot",
        overrides_with = "no_auto_plot",
        help_heading = "Output"
    )]
    pub auto_plot: bool,

    /// No report after the run (the default).
    #[arg(
        long = "no-auto-plot",
        overrides_with = "auto_plot",
        help_heading = "Output"
    )]
    pub no_auto_plot: bool,

    /// Which files are written: summary only, per-request records too, or also every raw
    /// request and response (`profile_export_raw.jsonl`).
    #[arg(
        long = "export-level",
        visible_alias = "profile-export-level",
        default_value = "records",
        value_enum,
        ignore_case = true,
        help_heading = "Output"
    )]
    pub export_level: ExportLevelArg,

    // ----- Tokenizer -----
    /// `builtin` (tiktoken o200k_base), a tokenizer.json path, a model directory, or a model id
    /// (from the local Hugging Face cache, else fetched from the Hub into it). Defaults to the
    /// model name.
    #[arg(long, help_heading = "Tokenizer")]
    pub tokenizer: Option<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub tokenizer_opts: tokenizer::TokenizerArgs,

    // ----- Load generator -----
    /// Stop issuing requests after this many seconds.
    #[arg(long = "benchmark-duration", value_parser = parse_sweepable, help_heading = "Load Generator")]
    pub benchmark_duration: Option<f64>,

    /// Seconds to wait for in-flight responses after the duration ends (`inf` waits forever).
    #[arg(long = "benchmark-grace-period", default_value = "30.0", value_parser = parse_seconds_or_inf, help_heading = "Load Generator")]
    #[serde(with = "parse::seconds")]
    pub benchmark_grace_period: f64,

    /// Requests kept in flight (closed loop), or the cap beside a request rate.
    #[arg(long, value_parser = parse_whole::<u64>, help_heading = "Load Generator")]
    pub concurrency: Option<u64>,

    /// Target request rate (requests/s, open loop).
    #[arg(long = "request-rate", value_parser = parse_sweepable, help_heading = "Load Generator")]
    pub request_rate: Option<f64>,

    /// Arrival pattern of a request-rate run.
    #[arg(
        long = "arrival-pattern",
        visible_alias = "request-rate-mode",
        value_enum,
        ignore_case = true,
        help_heading = "Load Generator"
    )]
    pub arrival_pattern: Option<ArrivalPatternArg>,

    /// Gamma shape for `--arrival-pattern gamma` (1.0 = Poisson; vLLM `--burstiness`).
    #[arg(
        long = "arrival-smoothness",
        visible_alias = "vllm-burstiness",
        help_heading = "Load Generator"
    )]
    pub arrival_smoothness: Option<f64>,

    /// Number of requests to send (default 10 when no duration is set).
    #[arg(
        long = "request-count",
        visible_alias = "num-requests",
        value_parser = parse_whole::<u64>,
        help_heading = "Load Generator"
    )]
    pub request_count: Option<u64>,

    /// Abort the run once failed / total profiling requests exceeds this ratio (armed after
    /// max(concurrency, 10) records).
    #[arg(long = "failed-request-threshold", value_parser = parse_ratio, help_heading = "Load Generator")]
    pub failed_request_threshold: Option<f64>,

    // ----- Warmup -----
    /// Requests sent before profiling; excluded from every metric.
    #[arg(
        long = "warmup-request-count",
        visible_alias = "num-warmup-requests",
        help_heading = "Warmup"
    )]
    pub warmup_request_count: Option<u64>,

    /// Maximum warmup duration in seconds.
    #[arg(long = "warmup-duration", help_heading = "Warmup")]
    pub warmup_duration: Option<f64>,

    /// Sessions (conversations) the warmup phase starts; each sends all its turns.
    #[arg(long = "num-warmup-sessions", help_heading = "Warmup")]
    pub num_warmup_sessions: Option<u64>,

    /// Warmup concurrency (defaults to --concurrency).
    #[arg(long = "warmup-concurrency", help_heading = "Warmup")]
    pub warmup_concurrency: Option<u64>,

    /// Warmup request rate (defaults to --request-rate).
    #[arg(long = "warmup-request-rate", help_heading = "Warmup")]
    pub warmup_request_rate: Option<f64>,

    /// Warmup arrival pattern (defaults to --arrival-pattern).
    #[arg(
        long = "warmup-arrival-pattern",
        value_enum,
        ignore_case = true,
        help_heading = "Warmup"
    )]
    pub warmup_arrival_pattern: Option<ArrivalPatternArg>,

    /// Seconds to wait for warmup responses after a warmup duration ends (default: forever).
    #[arg(long = "warmup-grace-period", value_parser = parse_seconds_or_inf, help_heading = "Warmup")]
    #[serde(with = "parse::seconds::option")]
    pub warmup_grace_period: Option<f64>,

    // ----- Conversation input -----
    /// Synthetic conversations to generate (reused in shuffled order). Default: the
    /// --conversation-num, else the --request-count, else 100.
    #[arg(
        long = "num-dataset-entries",
        visible_alias = "num-prompts",
        help_heading = "Conversation Input"
    )]
    pub num_dataset_entries: Option<usize>,

    // ----- ISL / OSL -----
    /// Mean input tokens of synthetic prompts.
    #[arg(long = "prompt-input-tokens-mean", visible_aliases = ["synthetic-input-tokens-mean", "isl"], default_value_t = 550, value_parser = parse_whole::<u32>, help_heading = "Input Sequence Length (ISL)")]
    pub isl_mean: u32,

    /// Standard deviation of synthetic input tokens.
    #[arg(long = "prompt-input-tokens-stddev", visible_aliases = ["synthetic-input-tokens-stddev", "isl-stddev"], default_value_t = 0.0, help_heading = "Input Sequence Length (ISL)")]
    pub isl_stddev: f64,

    /// Mean output tokens requested (`max_completion_tokens`); unset sends no limit.
    #[arg(long = "prompt-output-tokens-mean", visible_aliases = ["output-tokens-mean", "osl"], value_parser = parse_whole::<u32>, help_heading = "Output Sequence Length (OSL)")]
    pub osl_mean: Option<u32>,

    /// Standard deviation of requested output tokens.
    #[arg(long = "prompt-output-tokens-stddev", visible_aliases = ["output-tokens-stddev", "osl-stddev"], default_value_t = 0.0, help_heading = "Output Sequence Length (OSL)")]
    pub osl_stddev: f64,

    // ----- Service -----
    /// Logging verbosity.
    #[arg(
        long = "log-level",
        default_value = "info",
        value_enum,
        ignore_case = true,
        help_heading = "Service"
    )]
    pub log_level: LogLevelArg,

    /// Same as --log-level debug.
    #[arg(long, short = 'v', help_heading = "Service")]
    pub verbose: bool,

    /// Same as --log-level trace (`-vv`, as AIPerf spells it): the run's details on stderr, as
    /// with --verbose.
    #[arg(long = "extra-verbose", help_heading = "Service")]
    pub extra_verbose: bool,

    /// Print the profiling phase's figures so far on stderr every this many seconds (0 to
    /// 1000; 0: never), as AIPerf's realtime stats block; not under the dashboard (default:
    /// AIPERF_UI_REALTIME_METRICS_INTERVAL, else 30, when AIPERF_UI_REALTIME_METRICS_ENABLED
    /// is true; else no block).
    #[arg(long = "stats-interval", value_parser = parse_stats_interval, help_heading = "Service")]
    pub stats_interval: Option<f64>,

    /// Serve the live API on this port for the run: AIPerf's HTTP routes (/api/progress,
    /// /api/metrics, /api/results, ...), a WebSocket at /ws and the run's figures in the
    /// Prometheus format at /metrics (docs/api.md). Default: AIPERF_API_SERVER_PORT, else off.
    #[arg(long = "api-port", value_parser = clap::value_parser!(u16).range(1..), help_heading = "Service")]
    pub api_port: Option<u16>,

    /// The live API's address (default: AIPERF_API_SERVER_HOST, else 127.0.0.1); needs
    /// --api-port.
    #[arg(long = "api-host", help_heading = "Service")]
    pub api_host: Option<String>,

    // ----- Server metrics / GPU telemetry -----
    /// Server metrics are collected by default from every --url base + /metrics; add more
    /// Prometheus endpoints here (e.g. node1:8081 http://node2:9090/metrics).
    #[arg(long = "server-metrics", num_args = 0.., help_heading = "Server Metrics")]
    pub server_metrics: Option<Vec<String>>,

    /// Do not collect server metrics (no scrape, no probe, no warning).
    #[arg(long = "no-server-metrics", help_heading = "Server Metrics")]
    pub no_server_metrics: bool,

    /// Server-metrics files to write (default: json csv parquet; jsonl is opt-in).
    #[arg(long = "server-metrics-formats", num_args = 1.., value_enum, ignore_case = true, help_heading = "Server Metrics")]
    pub server_metrics_formats: Vec<ServerMetricsFormatArg>,

    /// GPU telemetry is collected by default from the DCGM exporters at localhost:9400 and
    /// localhost:9401; add more DCGM exporter URLs here (e.g. http://node1:9401/metrics).
    /// `dashboard` is accepted (no dashboard panel yet); `pynvml`, `amdsmi` and a custom
    /// metrics CSV are rejected.
    #[arg(long = "gpu-telemetry", num_args = 0.., value_name = "URL", help_heading = "GPU Telemetry")]
    pub gpu_telemetry: Option<Vec<String>>,

    /// Do not collect GPU telemetry (no scrape, no probe, no note).
    #[arg(long = "no-gpu-telemetry", help_heading = "GPU Telemetry")]
    pub no_gpu_telemetry: bool,

    // ----- UI -----
    /// Progress display: a progress bar (`dashboard`, `simple`) or nothing (`none`).
    /// Defaults to `simple` on a terminal and `none` otherwise.
    #[arg(
        long = "ui-type",
        visible_alias = "ui",
        value_enum,
        ignore_case = true,
        help_heading = "UI"
    )]
    pub ui_type: Option<UiTypeArg>,

    // ----- Workers -----
    /// Worker threads (one monoio runtime each, pinned to a core). Default: one per core,
    /// capped by the concurrency.
    #[arg(
        long = "workers-max",
        visible_alias = "max-workers",
        help_heading = "Workers"
    )]
    pub workers_max: Option<usize>,

    // ----- ringperf -----
    /// I/O driver: io_uring with fallback to epoll (`auto`), or force one.
    #[arg(
        long = "io-driver",
        env = "RINGPERF_IO_DRIVER",
        default_value = "auto",
        value_enum,
        ignore_case = true,
        help_heading = "ringperf"
    )]
    pub io_driver: IoDriverArg,

    /// Which read stamps the metrics use: the kernel's receive stamps (`SO_TIMESTAMPING`, with
    /// an automatic fallback to user-space stamps where unavailable) or user-space stamps only.
    #[arg(
        long = "timestamps",
        env = "RINGPERF_TIMESTAMPS",
        default_value = "kernel",
        value_enum,
        ignore_case = true,
        help_heading = "ringperf"
    )]
    pub timestamps: TimestampsArg,

    /// With kernel receive stamps: let a worker nap up to this many µs after a batch of reads so
    /// that one wake-up serves the events of many streams (bounded by a quarter of the gap
    /// between a stream's events and by the next timed send). 0, the default: never nap
    /// (measured: it pays only on a saturated worker; see docs/performance.md).
    #[arg(
        long = "batch-wakeups-us",
        env = "RINGPERF_BATCH_WAKEUPS_US",
        default_value_t = 0,
        value_parser = clap::value_parser!(u64).range(0..=100_000),
        help_heading = "ringperf"
    )]
    pub batch_wakeups_us: u64,

    /// Start the embedded mock server on a free loopback port and benchmark it (ignores --url).
    #[arg(long, help_heading = "ringperf")]
    pub mock: bool,

    /// Fail the run (exit code 5, artifacts still written) when the client fell behind: its
    /// dispatch-lag p99 over N µs, a worker ≥ 95% busy or a ring stall. Without it the
    /// client-health verdict (1 ms limit) is reported only.
    #[arg(
        long = "max-client-lag-us",
        value_name = "N",
        help_heading = "ringperf"
    )]
    pub max_client_lag_us: Option<u64>,

    #[command(flatten)]
    #[serde(flatten)]
    pub mock_shape: MockShapeArgs,

    // ----- Groups with a file of their own -----
    /// Input, Public dataset: custom dataset files and their sampling.
    #[command(flatten)]
    #[serde(flatten)]
    pub input: input::InputArgs,

    /// Conversation Input, ISL extras, Prompt, Prefix Prompt, Cache Bust: synthetic shaping.
    #[command(flatten)]
    #[serde(flatten)]
    pub prompt: prompt::PromptArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub random_prompt: random_prompt::RandomPromptArgs,

    /// Fixed Schedule, User-Centric Rate, ramps, Request Cancellation: when requests go.
    #[command(flatten)]
    #[serde(flatten)]
    pub timing: timing::TimingArgs,

    /// Goodput: the SLOs of a good request.
    #[command(flatten)]
    #[serde(flatten)]
    pub goodput: goodput::GoodputArgs,

    /// Rankings: the query + passages of the rankings endpoint types.
    #[command(flatten)]
    #[serde(flatten)]
    pub rankings: endpoint::RankingsArgs,

    /// HTTP Trace: the per-record trace in the JSONL and the trace timing table.
    #[command(flatten)]
    #[serde(flatten)]
    pub http_trace: http_trace::HttpTraceArgs,

    /// Network Latency: the RTT subtracted from the start-anchored latencies.
    #[command(flatten)]
    #[serde(flatten)]
    pub network_latency: network::NetworkLatencyArgs,

    /// Scale-out: this process as one shard of a run split over several.
    #[command(flatten)]
    #[serde(flatten)]
    pub shard: shard::ShardArgs,

    #[command(flatten)]
    #[serde(flatten)]
    pub multi_run: multi_run::MultiRunArgs,

    /// Sweeps: list values, `--variant`, loop order, seeds, convergence (docs/sweeps.md).
    #[command(flatten)]
    #[serde(flatten)]
    pub sweep: sweep::SweepArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub yaml: yaml::YamlArgs,

    /// SLO search: recipes, SLA flags, recipe bounds, adaptive search (docs/search.md).
    #[command(flatten)]
    #[serde(flatten)]
    pub search: search::SearchArgs,

    /// Audio, Image and Video Input: synthetic media of every turn (docs/multimodal.md).
    #[command(flatten)]
    #[serde(flatten)]
    pub media: media::MediaArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub video_generation: video::VideoGenerationArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub form: form::FormArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub uuid_strip: uuid_strip::UuidStripArgs,

    /// Server lifecycle: wait for the model, KV-cache reset, profiler (docs/integrations.md).
    #[command(flatten)]
    #[serde(flatten)]
    pub lifecycle: lab::LifecycleArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub mlflow: lab::MlflowArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub wandb: lab::WandbArgs,
    /// Per-request endpoint shaping: the model of each turn.
    #[command(flatten)]
    #[serde(flatten)]
    pub requests: requests::RequestArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub otel: otel::OtelArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub load_shape: load_shape::LoadShapeArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub agentic: agentic::AgenticArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub outputs: outputs::OutputsArgs,
}

/// Shape of the mock's responses, for `--mock` and `mock-server`.
#[derive(Debug, Args, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MockShapeArgs {
    /// Mock: time to first token, ms.
    #[arg(
        long = "mock-ttft-ms",
        default_value_t = 20.0,
        help_heading = "ringperf"
    )]
    pub mock_ttft_ms: f64,

    /// Mock: delay between tokens, ms.
    #[arg(long = "mock-itl-ms", default_value_t = 2.0, help_heading = "ringperf")]
    pub mock_itl_ms: f64,

    /// Mock: output tokens per response (capped by the request's max tokens).
    #[arg(
        long = "mock-output-tokens",
        default_value_t = 64,
        help_heading = "ringperf"
    )]
    pub mock_output_tokens: usize,

    /// Mock: tokens packed into one SSE event.
    #[arg(
        long = "mock-tokens-per-event",
        default_value_t = 1,
        help_heading = "ringperf"
    )]
    pub mock_tokens_per_event: usize,

    /// Mock: reasoning tokens streamed before the content.
    #[arg(
        long = "mock-reasoning-tokens",
        default_value_t = 0,
        help_heading = "ringperf"
    )]
    pub mock_reasoning_tokens: usize,

    /// Mock: server threads.
    #[arg(long = "mock-threads", default_value_t = 1, help_heading = "ringperf")]
    pub mock_threads: usize,

    /// Mock: faults injected into a share of the completion requests, `KIND[=ARG][:FRACTION]`
    /// comma-separated, e.g. `reset-before:0.1,status=503:0.2,huge=104857600:0.05` (kinds:
    /// reset-before, reset-mid, status=CODE, never-answer, slow-loris, bad-chunk-size,
    /// garbage-sse, sse-error, huge=BYTES; fractions sum to at most 1).
    #[arg(long = "mock-faults", value_name = "SPEC", help_heading = "ringperf")]
    pub mock_faults: Option<ringperf_mock::mock::FaultList>,

    /// Mock: at most N completion requests in service at once; the rest wait first come, first
    /// served, and their TTFT grows by the wait (0: no limit). Throughput saturates at
    /// N / (TTFT + (tokens - 1) × ITL): a server with a known capacity.
    #[arg(
        long = "mock-capacity",
        value_name = "N",
        default_value_t = 0,
        help_heading = "ringperf"
    )]
    pub mock_capacity: u32,

    /// Mock: the model's context length, as vLLM's `--max-model-len`: a completion request whose
    /// prompt and asked output tokens together exceed it gets vLLM's 400 `maximum context length`
    /// error (unset: no limit).
    #[arg(
        long = "mock-max-model-len",
        value_name = "TOKENS",
        help_heading = "ringperf"
    )]
    pub mock_max_model_len: Option<u64>,
}

/// Flags of `ringperf mock-server`.
#[derive(Debug, Args, Clone)]
pub struct MockArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub bind: String,

    /// Pin server threads to these cores (comma-separated).
    #[arg(long = "pin-cores", value_delimiter = ',')]
    pub pin_cores: Vec<usize>,

    /// Model name served.
    #[arg(long, default_value = "mock-model")]
    pub model: String,

    /// Write the truth log (per-request write stamps) as JSONL here when stopping.
    #[arg(long = "truth-log")]
    pub truth_log: Option<PathBuf>,

    /// Serve a DCGM exporter page for this many GPUs at /dcgm/metrics (values follow the load;
    /// 0: no such page).
    #[arg(long = "dcgm-gpus", default_value_t = 0, value_name = "N")]
    pub dcgm_gpus: u32,

    /// Add SGLang's speculative-decoding gauges (`sglang:spec_accept_rate`,
    /// `sglang:spec_accept_length`) to every /metrics page.
    #[arg(long = "sglang-spec-metrics", conflicts_with = "unique_metrics_pages")]
    pub sglang_spec_metrics: bool,

    /// Report vLLM's per-request speculative-decoding stats (`metrics.speculative_decoding`)
    /// with K drafts a verification step, on every chat and completions answer (0: none).
    #[arg(long = "spec-decode", default_value_t = 0, value_name = "K")]
    pub spec_decode: u32,

    /// Write every DCGM page served (`wall_ns`, `in_flight`, `body`) as JSONL here when
    /// stopping; needs --dcgm-gpus.
    #[arg(long = "dcgm-log", value_name = "FILE")]
    pub dcgm_log: Option<PathBuf>,

    /// Add `mock_metrics_pages_total` (pages served so far) to every /metrics page, so that no
    /// two pages are alike, as on a real server whose process counters move between scrapes.
    #[arg(long = "unique-metrics-pages")]
    pub unique_metrics_pages: bool,

    /// Also keep each completion request's body and the reply text in the truth log
    /// (`request_body`, `reply_text`); needs --truth-log.
    #[arg(long = "record-bodies", requires = "truth_log")]
    pub record_bodies: bool,
    /// Serve HTTPS with this PEM certificate chain (leaf first); needs --tls-key.
    #[arg(long = "tls-cert", value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long = "tls-key", value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// I/O driver.
    #[arg(
        long = "io-driver",
        env = "RINGPERF_IO_DRIVER",
        default_value = "auto",
        value_enum,
        ignore_case = true
    )]
    pub io_driver: IoDriverArg,

    /// Fast mode: streamed chat and completions answers copied from bytes built once per
    /// response shape; every response of a shape has the same id and words (docs/mock.md).
    #[arg(long = "fast")]
    pub fast: bool,
    /// The model is still loading for this many seconds after the start: /v1/models lists no
    /// model and completion requests get 503 (for `profile --wait-for-model-*`).
    #[arg(
        long = "model-ready-after",
        value_name = "SECONDS",
        default_value_t = 0.0
    )]
    pub model_ready_after: f64,

    /// The first N POST /reset_prefix_cache get 503 (a busy server, for the reset's retries).
    #[arg(long = "busy-resets", value_name = "N", default_value_t = 0)]
    pub busy_resets: u32,

    #[command(flatten)]
    pub video: video::MockVideoArgs,

    #[command(flatten)]
    pub shape: MockShapeArgs,
}

/// Flags of `ringperf server-metrics`.
#[derive(Debug, Args, Clone)]
pub struct ServerMetricsArgs {
    /// The server-metrics JSONL to re-process (`server_metrics_export.jsonl`).
    #[arg(long = "from-jsonl")]
    pub from_jsonl: PathBuf,

    /// Profiling window start (epoch ns); default: the first sample (the reference).
    #[arg(long = "start-ns")]
    pub start_ns: Option<u64>,

    /// Profiling window end (epoch ns); default: the last sample.
    #[arg(long = "end-ns")]
    pub end_ns: Option<u64>,

    /// Timeslice duration in seconds.
    #[arg(long = "slice-duration")]
    pub slice_duration: Option<f64>,

    /// Files to write (default: json csv parquet; jsonl is the input and is not rewritten).
    #[arg(long = "server-metrics-formats", num_args = 1.., value_enum, ignore_case = true)]
    pub server_metrics_formats: Vec<ServerMetricsFormatArg>,

    /// Output directory (default: the JSONL's directory).
    #[arg(long = "output-artifact-dir", visible_alias = "artifact-dir")]
    pub artifact_dir: Option<PathBuf>,

    /// Replace server-metrics files of the same names already in the output directory (by
    /// default their presence refuses the command: a run's own exports are never replaced
    /// unasked).
    #[arg(long)]
    pub overwrite: bool,
}

/// A server-metrics export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServerMetricsFormatArg {
    Json,
    Csv,
    Jsonl,
    Parquet,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EndpointTypeArg {
    #[value(help = "OpenAI /v1/chat/completions")]
    Chat,
    #[value(help = "OpenAI /v1/completions")]
    Completions,
    #[value(
        name = "audio-transcription",
        alias = "audio_transcription",
        help = "OpenAI /v1/audio/transcriptions (multipart/form-data; audio from --audio-*)"
    )]
    AudioTranscription,
    #[value(
        name = "cohere-rankings",
        alias = "cohere_rankings",
        help = "Cohere /v2/rerank"
    )]
    CohereRankings,
    #[value(help = "OpenAI /v1/responses")]
    Responses,
    #[value(help = "Anthropic /v1/messages")]
    Messages,
    #[value(
        name = "chat-embeddings",
        alias = "chat_embeddings",
        help = "embeddings of chat messages (/v1/embeddings)"
    )]
    ChatEmbeddings,
    #[value(help = "OpenAI /v1/embeddings")]
    Embeddings,
    #[value(
        name = "hf-tei-rankings",
        alias = "hf_tei_rankings",
        help = "Hugging Face TEI /rerank"
    )]
    HfTeiRankings,
    #[value(
        name = "huggingface-generate",
        alias = "huggingface_generate",
        help = "Hugging Face TGI /generate"
    )]
    HuggingfaceGenerate,
    #[value(
        name = "image-generation",
        alias = "image_generation",
        help = "OpenAI /v1/images/generations"
    )]
    ImageGeneration,
    #[value(
        name = "image-edit",
        alias = "image_edit",
        help = "OpenAI /v1/images/edits (multipart/form-data; images from --image-*)"
    )]
    ImageEdit,
    #[value(
        name = "image-retrieval",
        alias = "image_retrieval",
        help = "NVIDIA NIM /v1/infer (images from --image-*)"
    )]
    ImageRetrieval,
    #[value(
        name = "nim-embeddings",
        alias = "nim_embeddings",
        help = "NVIDIA NIM /v1/embeddings"
    )]
    NimEmbeddings,
    #[value(
        name = "nim-rankings",
        alias = "nim_rankings",
        help = "NVIDIA NIM /v1/ranking"
    )]
    NimRankings,
    #[value(
        name = "solido-rag",
        alias = "solido_rag",
        help = "Solido RAG /rag/api/prompt"
    )]
    SolidoRag,
    #[value(
        name = "video-generation",
        alias = "video_generation",
        help = "OpenAI / SGLang /v1/videos: a job, polled until it ends"
    )]
    VideoGeneration,
    #[value(help = "a dataset's bodies sent verbatim (raw_payload)")]
    Raw,
    #[value(help = "bodies from a Jinja2 template (--extra-inputs payload_template)")]
    Template,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UrlStrategyArg {
    #[value(name = "round-robin", alias = "round_robin")]
    RoundRobin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportArg {
    Http,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConnectionReuseArg {
    Pooled,
    Never,
    #[value(name = "sticky-user-sessions", alias = "sticky_user_sessions")]
    StickyUserSessions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportLevelArg {
    Summary,
    Records,
    Raw,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalPatternArg {
    #[value(name = "concurrency-burst", alias = "concurrency_burst")]
    ConcurrencyBurst,
    Constant,
    Gamma,
    Poisson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevelArg {
    Trace,
    Debug,
    Info,
    Notice,
    Warning,
    Success,
    Error,
    Critical,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UiTypeArg {
    Dashboard,
    Simple,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IoDriverArg {
    Auto,
    Uring,
    Legacy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TimestampsArg {
    Kernel,
    User,
}

/// A flag value the value parsers below refuse (clap prints it after the flag's name).
#[derive(Debug)]
pub enum ValueError {
    /// Not a number at all.
    NotANumber {
        value: String,
        source: std::num::ParseFloatError,
    },
    /// A number outside 0..=1.
    NotARatio { value: String },
    /// Negative or NaN seconds.
    NotSeconds { value: String },
    /// Not a whole number (or a negative one).
    NotWhole { value: String },
    /// A number outside the flag's range.
    OutOfRange { value: String, range: &'static str },
    /// A comma-separated list on a flag no sweep varies (the sweepable flags' lists are taken
    /// out before parsing, `crate::sweep::extract_lists`).
    Sweep { value: String },
}

impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueError::NotANumber { value, source } => {
                write!(f, "`{value}` is not a number: {source}")
            }
            ValueError::NotARatio { value } => {
                write!(f, "`{value}` must be a ratio between 0 and 1")
            }
            ValueError::NotSeconds { value } => write!(
                f,
                "`{value}` must be a non-negative number of seconds or `inf`"
            ),
            ValueError::OutOfRange { value, range } => write!(f, "`{value}` must be {range}"),
            ValueError::NotWhole { value } => {
                write!(f, "`{value}` must be a non-negative whole number")
            }
            ValueError::Sweep { value } => write!(
                f,
                "`{value}` is a list of values, and this flag takes one (docs/sweeps.md lists \
                 the flags a list sweeps over)"
            ),
        }
    }
}

impl std::error::Error for ValueError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ValueError::NotANumber { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn parse_number(s: &str) -> Result<f64, ValueError> {
    s.parse().map_err(|source| ValueError::NotANumber {
        value: s.to_owned(),
        source,
    })
}

/// A value of a flag AIPerf sweeps over when given a comma-separated list.
fn reject_sweep(s: &str) -> Result<(), ValueError> {
    if s.contains(',') {
        return Err(ValueError::Sweep {
            value: s.to_owned(),
        });
    }
    Ok(())
}

/// A count (`--concurrency`, `--request-count`, token lengths…): a whole number, not a list.
pub(crate) fn parse_whole<T: std::str::FromStr>(s: &str) -> Result<T, ValueError> {
    reject_sweep(s)?;
    s.trim().parse().map_err(|_| ValueError::NotWhole {
        value: s.to_owned(),
    })
}

/// A number AIPerf can sweep over (`--request-rate`, `--benchmark-duration`): not a list; its
/// range is checked in [`crate::config`], so `-1` gets the flag's own message.
fn parse_sweepable(s: &str) -> Result<f64, ValueError> {
    reject_sweep(s)?;
    parse_number(s)
}

fn parse_ratio(s: &str) -> Result<f64, ValueError> {
    let v = parse_number(s)?;
    if !(0.0..=1.0).contains(&v) {
        return Err(ValueError::NotARatio {
            value: s.to_owned(),
        });
    }
    Ok(v)
}

/// The longest `--stats-interval` (and `AIPERF_UI_REALTIME_METRICS_INTERVAL`), seconds: AIPerf's.
pub const STATS_INTERVAL_MAX_S: f64 = 1000.0;

fn parse_stats_interval(s: &str) -> Result<f64, ValueError> {
    let v = parse_number(s)?;
    if !(0.0..=STATS_INTERVAL_MAX_S).contains(&v) {
        return Err(ValueError::OutOfRange {
            value: s.to_owned(),
            range: "from 0 to 1000 seconds",
        });
    }
    Ok(v)
}

fn parse_seconds_or_inf(s: &str) -> Result<f64, ValueError> {
    let v = if s.eq_ignore_ascii_case("inf") {
        f64::INFINITY
    } else {
        parse_number(s)?
    };
    if v.is_nan() || v < 0.0 {
        return Err(ValueError::NotSeconds {
            value: s.to_owned(),
        });
    }
    Ok(v)
}

/// An AIPerf `profile` flag that ringperf does not implement yet.
#[derive(Debug, PartialEq, Eq)]
pub struct UnsupportedFlag {
    /// The flag as written (without `=value`).
    pub flag: String,
}

impl std::fmt::Display for UnsupportedFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the AIPerf flag `{}` is not supported by ringperf yet \
             (docs/flags.md lists what is); remove it to run",
            self.flag
        )
    }
}

impl std::error::Error for UnsupportedFlag {}

/// Every long flag (and alias) that `ringperf profile` accepts.
pub fn supported_profile_flags() -> Vec<String> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let Some(profile) = cmd.find_subcommand("profile") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for arg in profile.get_arguments() {
        if let Some(l) = arg.get_long() {
            out.push(format!("--{l}"));
        }
        for a in arg.get_all_aliases().into_iter().flatten() {
            out.push(format!("--{a}"));
        }
        if let Some(s) = arg.get_short() {
            out.push(format!("-{s}"));
        }
    }
    out
}

/// Fails with a message naming the first AIPerf flag in `argv` (after the `profile` subcommand)
/// that ringperf does not implement yet. Flags unknown to AIPerf too are left to clap.
///
/// # Errors
/// [`UnsupportedFlag`] naming the flag.
pub fn reject_unsupported(argv: &[String]) -> Result<(), UnsupportedFlag> {
    let Some(pos) = argv.iter().position(|a| a == "profile") else {
        return Ok(());
    };
    let supported = supported_profile_flags();
    for raw in &argv[pos + 1..] {
        if raw == "--" {
            break;
        }
        if !raw.starts_with('-') || raw.len() < 2 || raw.as_bytes()[1].is_ascii_digit() {
            continue;
        }
        let flag = raw.split_once('=').map_or(raw.as_str(), |(f, _)| f);
        // Boolean negations (`--no-foo`) of supported AIPerf flags are not offered either.
        if supported.iter().any(|s| s == flag) || parse::respelled(flag).is_some() {
            continue;
        }
        if flags::is_aiperf_flag(flag) {
            return Err(UnsupportedFlag {
                flag: flag.to_owned(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn profile(s: &str) -> ProfileArgs {
        let cli = Cli::try_parse_from(args(s)).expect("parses");
        match cli.command {
            Command::Profile(p) => *p,
            _ => panic!("not profile"),
        }
    }

    #[test]
    fn defaults_match_aiperf() {
        let p = profile("ringperf profile -m m");
        assert_eq!(p.url, vec!["http://localhost:8000"]);
        assert_eq!(p.endpoint_type, EndpointTypeArg::Chat);
        assert_eq!(p.request_timeout_seconds, 21600.0);
        assert_eq!(p.benchmark_grace_period, 30.0);
        assert_eq!(p.isl_mean, 550);
        assert_eq!(p.isl_stddev, 0.0);
        assert_eq!(p.osl_mean, None);
        assert_eq!(p.num_dataset_entries, None);
        assert_eq!(p.export_level, ExportLevelArg::Records);
        assert_eq!(p.connection_reuse_strategy, ConnectionReuseArg::Pooled);
        assert!(!p.streaming);
    }

    #[test]
    fn aliases_are_accepted() {
        let p = profile(
            "ringperf profile --model a,b --endpoint /x --isl 10 --isl-stddev 2 --osl 5 \
             --osl-stddev 1 --num-requests 7 --request-rate-mode constant --vllm-burstiness 2 \
             --artifact-dir out --profile-export-file pre --num-prompts 3 --max-workers 2 \
             --num-warmup-requests 4 --ui none -H A:b -H C:d",
        );
        assert_eq!(p.model_names, vec!["a", "b"]);
        assert_eq!(p.custom_endpoint.as_deref(), Some("/x"));
        assert_eq!(
            (p.isl_mean, p.isl_stddev, p.osl_mean, p.osl_stddev),
            (10, 2.0, Some(5), 1.0)
        );
        assert_eq!(p.request_count, Some(7));
        assert_eq!(p.arrival_pattern, Some(ArrivalPatternArg::Constant));
        assert_eq!(p.arrival_smoothness, Some(2.0));
        assert_eq!(p.artifact_dir, Some(PathBuf::from("out")));
        assert_eq!(p.profile_export_prefix.as_deref(), Some("pre"));
        assert_eq!(p.num_dataset_entries, Some(3));
        assert_eq!(p.workers_max, Some(2));
        assert_eq!(p.warmup_request_count, Some(4));
        assert_eq!(p.ui_type, Some(UiTypeArg::None));
        assert_eq!(p.header, vec!["A:b", "C:d"]);
    }

    #[test]
    fn grace_period_accepts_inf_and_rejects_negative() {
        assert!(
            profile("ringperf profile --benchmark-grace-period inf")
                .benchmark_grace_period
                .is_infinite()
        );
        assert!(Cli::try_parse_from(args("ringperf profile --benchmark-grace-period -1")).is_err());
    }

    #[test]
    fn unsupported_aiperf_flag_is_named() {
        let err =
            reject_unsupported(&args("ringperf profile -m x --record-processors 2")).unwrap_err();
        assert_eq!(err.flag, "--record-processors");
        assert!(
            err.to_string()
                .contains("`--record-processors` is not supported"),
            "{err}"
        );
        let err = reject_unsupported(&args("ringperf profile --hf-subset=x")).unwrap_err();
        assert_eq!(
            err.flag, "--hf-subset",
            "the value after `=` is not part of the flag"
        );
        // Supported flags, values that look like flags after `--`, and negative numbers pass.
        reject_unsupported(&args(
            "ringperf profile -m x --streaming --isl 5 -- --goodput",
        ))
        .unwrap();
    }

    #[test]
    fn multi_run_flags_are_supported() {
        let line = "ringperf profile -m x --num-profile-runs 3 --profile-run-cooldown-seconds 2 \
                    --confidence-level 0.9 --no-profile-run-disable-warmup-after-first \
                    --no-set-consistent-seed";
        reject_unsupported(&args(line)).unwrap();
        let p = profile(line);
        assert_eq!(p.multi_run.num_profile_runs, 3);
        assert_eq!(p.multi_run.profile_run_cooldown_seconds, 2.0);
        assert_eq!(p.multi_run.confidence_level, 0.9);
        assert!(p.multi_run.warmup_every_run && p.multi_run.no_consistent_seed);
        // Each pair: the last one given wins.
        let p = profile(
            "ringperf profile --no-set-consistent-seed --set-consistent-seed \
             --no-profile-run-disable-warmup-after-first --profile-run-disable-warmup-after-first",
        );
        assert!(!p.multi_run.no_consistent_seed && !p.multi_run.warmup_every_run);
        // The same flags are still AIPerf's (the check below).
        for f in [
            "--num-profile-runs",
            "--no-profile-run-disable-warmup-after-first",
        ] {
            assert!(flags::is_aiperf_flag(f), "{f}");
        }
    }

    #[test]
    fn every_supported_flag_is_an_aiperf_flag_or_ours() {
        for f in supported_profile_flags() {
            let ours = f.starts_with("--mock")
                || [
                    "--io-driver",
                    "--max-client-lag-us",
                    "--timestamps",
                    "--batch-wakeups-us",
                    "--shard-index",
                    "--shard-count",
                    "--start-at",
                ]
                .contains(&f.as_str())
                || f == "--help"
                || f == "-h";
            assert!(ours || flags::is_aiperf_flag(&f), "{f} is neither");
        }
    }
}
