//! The validated, typed configuration of a profile run. Every default is resolved and every
//! cross-flag rule is checked here (the flags: docs/flags.md); only [`Config`] crosses into the
//! engine. [`Config::from_plan`] reads the process once ([`Environment`]), then
//! [`Config::resolve`] applies the rules, stage by stage; an error is a [`ConfigError`].

pub mod api;
pub mod connections;
pub mod convergence;
pub mod dataset;
pub mod echo;
pub mod environment;
pub mod form;
pub mod goodput;
pub mod lab;
pub mod media;
pub mod mock;
pub mod multi_run;
pub mod network;
pub mod outputs;
pub mod phases;
pub mod prompt;
pub mod random_prompt;
pub mod realtime;
pub mod requests;
mod resolve;
pub mod scenario;
pub mod scope;
pub mod shard;
pub mod template;
pub mod timing;
pub mod tls;
pub mod video_poll;
pub mod yaml;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::cli::{
    ArrivalPatternArg, IoDriverArg, ProfileArgs, ServerMetricsArgs, ServerMetricsFormatArg,
};
use ringperf_metrics::server_metrics::output::{DEFAULT_FORMATS, Format};
use ringperf_wire::endpoint::EndpointKind;

pub use environment::Environment;
pub use ringperf_io::url::{self, BaseUrl, UrlError};
pub use ringperf_workload::schedule::Arrival;
pub use tls::TlsSettings;

/// What a configuration error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A flag's value, or flags that cannot go together.
    Flag,
    /// An environment variable's value.
    Environment,
    /// A file a flag names cannot be used.
    File,
}

/// A configuration error: one clear message naming the flag, variable or file at fault. The
/// command exits with code 2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    kind: ErrorKind,
    message: String,
}

impl ConfigError {
    /// A flag's value, or flags that cannot go together.
    pub fn flag(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Flag, message)
    }

    /// An environment variable's value.
    pub fn environment(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Environment, message)
    }

    /// A file a flag names.
    pub fn file(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::File, message)
    }

    fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// What the error is about.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, as displayed.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// The controller settings of a phase's `adaptive_scale` (`spec`) on a phase of `load`,
/// named by `path` in a refusal. ringperf's engine moves a phase's concurrency and prefill
/// limit, an open loop's request rate and a user-centric phase's users.
///
/// # Errors
/// AIPerf's phase-start messages for settings only `timing_mode` leaves unset, and the
/// variables ringperf does not move.
pub fn adaptive_settings(
    spec: &crate::plan::AdaptiveSpec,
    (load, mode, prefill): (&Load, &timing::Mode, Option<u64>),
    path: &str,
) -> Result<std::sync::Arc<ringperf_metrics::adaptive::settings::Settings>, ConfigError> {
    use ringperf_metrics::adaptive::settings::ControlVariable as V;
    // The largest value the phase implies, as resolved (a sweep's concurrency, a flag's rate).
    let phase_max = match (spec.control_variable.unwrap_or(V::Concurrency), load) {
        (V::Concurrency, Load::Concurrency(c)) => Some(*c as f64),
        (V::Concurrency, Load::Rate { cap, .. }) => cap.map(|c| c as f64),
        (V::PrefillConcurrency, _) => prefill.map(|p| p as f64),
        (V::RequestRate, Load::Rate { rate, .. }) => Some(*rate),
        (V::Users, _) => match mode {
            timing::Mode::UserCentric { users, .. } => Some(*users as f64),
            _ => None,
        },
        _ => None,
    };
    let s = spec.settings(phase_max).map_err(ConfigError::flag)?;
    match (mode, s.variable) {
        (timing::Mode::UserCentric { .. }, V::Users) => return Ok(std::sync::Arc::new(s)),
        (timing::Mode::Load, V::Users) => {
            return err("adaptive_scale users is only valid on user_centric phases");
        }
        // Another variable on a user-centric phase: AIPerf 0.13 runs it as its request-rate
        // strategy runs a phase, Poisson arrivals at the phase's rate under its concurrency
        // (its users unused), and so does the run (`run::phases`).
        (timing::Mode::Load | timing::Mode::UserCentric { .. }, _) => {}
        _ => {
            return err(format!(
                "not supported by ringperf: {path}: adaptive_scale on a replayed or agentic \
                 phase (ringperf moves concurrency, poisson, gamma, constant and user_centric \
                 phases)"
            ));
        }
    }
    let ok = matches!(
        (s.variable, load),
        (V::Concurrency | V::PrefillConcurrency, _) | (V::RequestRate, Load::Rate { .. })
    );
    if !ok {
        return err(format!(
            "not supported by ringperf: {path}: adaptive_scale control.variable={} on a {} \
             phase (ringperf moves a phase's concurrency or prefill_concurrency, and a rate \
             phase's request_rate)",
            s.variable.name(),
            match load {
                Load::Concurrency(_) => "concurrency",
                Load::Rate { .. } => "rate-paced",
            }
        ));
    }
    Ok(std::sync::Arc::new(s))
}

/// A flag error.
fn err<T>(msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError::flag(msg))
}

/// How a phase paces requests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Load {
    /// Closed loop: `n` requests in flight, a new one as soon as one completes.
    Concurrency(u64),
    /// Open loop from absolute intended times, optionally capped by a concurrency.
    Rate {
        rate: f64,
        arrival: Arrival,
        cap: Option<u64>,
    },
}

impl Load {
    /// Most requests that can be in flight at once, if bounded.
    pub fn max_in_flight(&self) -> Option<u64> {
        match *self {
            Load::Concurrency(n) => Some(n),
            Load::Rate { cap, .. } => cap,
        }
    }
}

/// One phase (warmup or profiling): pacing and stop conditions.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseConfig {
    pub load: Load,
    /// Stop issuing after this many requests.
    pub request_count: Option<u64>,
    /// Start no new session after this many (`--conversation-num`); sessions already started
    /// send their remaining turns while requests and time last.
    pub sessions: Option<u64>,
    /// Stop issuing after this long.
    pub duration: Option<Duration>,
    /// After issuing stops, wait at most this long for in-flight requests (None = forever).
    pub grace: Option<Duration>,
    /// Fixed schedule or user-centric mode, ramps, cancellation ([`timing::PhaseTiming`]).
    pub timing: timing::PhaseTiming,
}

pub use ringperf_engine::worker::ConnectionReuse;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportLevel {
    Summary,
    Records,
    /// Records, plus every request and response in `profile_export_raw.jsonl`.
    Raw,
}

impl ExportLevel {
    /// The per-record JSONL is written (`records` and `raw`).
    pub fn records(self) -> bool {
        matches!(self, ExportLevel::Records | ExportLevel::Raw)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UiType {
    /// Progress bar on a terminal.
    Progress,
    /// Plain periodic lines.
    Lines,
    /// The full-screen live dashboard (`--ui dashboard` on a terminal; [`ringperf_engine::ui`]).
    Dashboard,
    None,
}

pub use ringperf_io::runtime::IoDriver;

impl From<IoDriverArg> for IoDriver {
    fn from(a: IoDriverArg) -> Self {
        match a {
            IoDriverArg::Auto => IoDriver::Auto,
            IoDriverArg::Uring => IoDriver::Uring,
            IoDriverArg::Legacy => IoDriver::Legacy,
        }
    }
}

/// Shape of the embedded mock's responses (`--mock`).
#[derive(Clone, Debug, PartialEq)]
pub struct MockShape {
    pub ttft: Duration,
    pub itl: Duration,
    pub output_tokens: usize,
    pub tokens_per_event: usize,
    pub reasoning_tokens: usize,
    pub threads: usize,
    pub faults: Vec<ringperf_mock::mock::FaultSpec>,
    /// Requests in service at once (0: no limit).
    pub capacity: u32,
    /// `--mock-max-model-len`.
    pub max_model_len: Option<u64>,
}

/// Synthetic dataset parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct DatasetConfig {
    pub entries: usize,
    pub isl_mean: u32,
    pub isl_stddev: f64,
    pub osl_mean: Option<u32>,
    pub osl_stddev: f64,
}

/// Server-metrics collection (`--server-metrics*`, docs/output-formats.md).
#[derive(Clone, Debug, PartialEq)]
pub struct ServerMetricsConfig {
    /// Collection on (the default); `--no-server-metrics` turns it off.
    pub enabled: bool,
    /// `--server-metrics` URLs, normalized (the `--url` bases are added at run start).
    pub extra_urls: Vec<String>,
    /// Files to write, sorted, without repeats.
    pub formats: Vec<Format>,
}

/// GPU telemetry collection (`--gpu-telemetry`, docs/output-formats.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuTelemetryConfig {
    /// Collection on (the default); `--no-gpu-telemetry` turns it off.
    pub enabled: bool,
    /// DCGM exporter URLs: AIPerf's two defaults, then the `--gpu-telemetry` URLs, normalized,
    /// without repeats.
    pub urls: Vec<String>,
    /// `--gpu-telemetry dashboard` was given (accepted; ringperf has no dashboard panel yet).
    pub dashboard: bool,
}

/// Reads the `--gpu-telemetry` values.
///
/// # Errors
/// `pynvml` / `amdsmi` (local GPU libraries), a custom metrics CSV, a value that is not an
/// `http(s)` URL (AIPerf takes a value as a URL when it starts with `http` or holds a `:`), or
/// `--gpu-telemetry` beside `--no-gpu-telemetry` (AIPerf refuses the pair too).
pub fn gpu_telemetry(
    values: Option<&[String]>,
    disabled: bool,
) -> Result<GpuTelemetryConfig, ConfigError> {
    if disabled && values.is_some() {
        return err(
            "Cannot use both --no-gpu-telemetry and --gpu-telemetry together. Use only one or \
             the other.",
        );
    }
    let mut urls: Vec<String> = ringperf_metrics::gpu_telemetry::DEFAULT_ENDPOINTS
        .iter()
        .map(|u| (*u).to_owned())
        .collect();
    let mut dashboard = false;
    for v in values.unwrap_or_default() {
        let lower = v.trim().to_ascii_lowercase();
        match lower.as_str() {
            "pynvml" | "amdsmi" => {
                return err(format!(
                    "--gpu-telemetry {v}: reading GPUs through {lower} needs a GPU machine to be \
                     tested, which ringperf has not had; use DCGM exporter URLs (e.g. \
                     --gpu-telemetry http://node1:9400/metrics)"
                ));
            }
            "dashboard" => dashboard = true,
            _ if lower.ends_with(".csv") => {
                return err(format!(
                    "--gpu-telemetry {v}: custom GPU metrics CSV files are not supported yet; \
                     ringperf reads AIPerf's default DCGM fields"
                ));
            }
            _ if !(lower.starts_with("http") || lower.contains(':')) => {
                return err(format!(
                    "--gpu-telemetry {v}: not a DCGM exporter URL (nor dashboard, pynvml, amdsmi \
                     or a .csv file)"
                ));
            }
            _ => {
                let n = url::normalize_metrics_url(v);
                let nl = n.to_ascii_lowercase();
                if !(nl.starts_with("http://") || nl.starts_with("https://")) {
                    return err(format!(
                        "--gpu-telemetry {v}: only http:// and https:// DCGM exporter URLs are \
                         supported"
                    ));
                }
                if !urls.contains(&n) {
                    urls.push(n);
                }
            }
        }
    }
    Ok(GpuTelemetryConfig {
        enabled: !disabled,
        urls,
        dashboard,
    })
}

/// `--server-metrics-formats` values, sorted and de-duplicated; AIPerf 0.13's default (JSON,
/// CSV) when none is given.
pub fn server_metrics_formats(args: &[ServerMetricsFormatArg]) -> Vec<Format> {
    if args.is_empty() {
        return DEFAULT_FORMATS.to_vec();
    }
    let mut v: Vec<Format> = args
        .iter()
        .map(|a| match a {
            ServerMetricsFormatArg::Json => Format::Json,
            ServerMetricsFormatArg::Csv => Format::Csv,
            ServerMetricsFormatArg::Jsonl => Format::Jsonl,
            ServerMetricsFormatArg::Parquet => Format::Parquet,
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// `--slice-duration`: a positive number of seconds.
pub fn slice_duration(v: Option<f64>) -> Result<Option<Duration>, ConfigError> {
    match v {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        Some(_) => err("--slice-duration must be a positive number of seconds"),
    }
}

/// The validated flags of `ringperf server-metrics` (re-processing a server-metrics JSONL).
///
/// # Errors
/// A flag error (`--slice-duration`).
pub fn reprocess_options(
    args: &ServerMetricsArgs,
) -> Result<ringperf_metrics::server_metrics::reprocess::Options, ConfigError> {
    Ok(ringperf_metrics::server_metrics::reprocess::Options {
        from_jsonl: args.from_jsonl.clone(),
        start_ns: args.start_ns,
        end_ns: args.end_ns,
        slice: slice_duration(args.slice_duration)?,
        formats: server_metrics_formats(&args.server_metrics_formats),
        artifact_dir: args.artifact_dir.clone(),
        overwrite: args.overwrite,
    })
}

/// The validated configuration of `ringperf profile`.
#[derive(Clone, Debug)]
pub struct Config {
    pub models: Vec<String>,
    /// How each turn gets one of several `models` (`--model-selection-strategy`).
    pub model_selection: ringperf_workload::workload::models::ModelSelection,
    pub endpoint: EndpointKind,
    /// Request path appended to each base URL.
    pub path: String,
    pub streaming: bool,
    pub urls: Vec<BaseUrl>,
    pub request_timeout: Duration,
    /// Most connections one worker holds open (`AIPERF_HTTP_CONNECTION_LIMIT`).
    pub connection_limit: usize,
    /// Seconds between a video job's status polls (`AIPERF_HTTP_VIDEO_POLL_INTERVAL`).
    pub video_poll_interval: Duration,
    /// Headers sent on every request (user headers and Authorization), in order.
    pub headers: Vec<(String, String)>,
    /// Headers that carry a copy of the correlation id (session affinity; AIPerf's
    /// `AIPERF_HTTP_X_*_FROM_CORRELATION_ID`, `X-Session-Affinity` on by default).
    pub correlation_copies: Vec<&'static str>,
    /// `--session-header`: the header that carries the correlation id instead of
    /// `X-Correlation-ID`.
    pub session_header: Option<String>,
    /// How `https://` URLs are checked (`AIPERF_HTTP_SSL_VERIFY`, `SSL_CERT_FILE`).
    pub tls: TlsSettings,
    /// Values that must never appear in artifacts or logs (API key, Authorization header values).
    pub secrets: Vec<String>,
    pub extra_inputs: Map<String, Value>,
    /// `--endpoint-type template`: the compiled `payload_template` and `response_field` (taken
    /// out of `extra_inputs`).
    pub payload_template: Option<std::sync::Arc<ringperf_wire::endpoint::PayloadTemplate>>,
    /// `endpoint.template` as AIPerf echoes the extras' payload template (`{body,
    /// response_field}`).
    pub template_echo: Option<Value>,
    /// Where answers are read (`response_field`): `template`'s, or `raw`'s from
    /// `--extra-inputs response_field:<path>`; `None` auto-detects.
    pub response_field: Option<std::sync::Arc<ringperf_wire::endpoint::FieldPath>>,
    pub use_legacy_max_tokens: bool,
    pub use_server_token_count: bool,
    /// `--per-chunk-usage`, `--export-outputs-json`, `--plot-required` (`config/outputs.rs`).
    pub outputs: outputs::OutputsConfig,
    pub connection_reuse: ConnectionReuse,
    /// Seed actually used (given, or drawn from entropy and reported).
    pub seed: u64,
    pub seed_given: bool,
    pub artifact_dir: PathBuf,
    pub export_prefix: Option<String>,
    pub export_level: ExportLevel,
    /// Tokenizer spec (`builtin`, a path, or a model id: the local HF cache, else the Hub).
    pub tokenizer: String,
    /// `--tokenizer-revision`, `--tokenizer-trust-remote-code`, `--apply-chat-template`.
    pub tokenizer_options: ringperf_workload::workload::tokenizer::LoadOptions,
    pub dataset: DatasetConfig,
    /// Synthetic prompt shaping: conversations, `--seq-dist`, prefix and system prompts.
    pub prompt: prompt::PromptConfig,
    /// `--random-range-ratio`, `--random-corpus-style`, `--cache-bust`.
    pub random_prompt: random_prompt::RandomPromptConfig,
    /// Synthetic images, audio and video of every turn (`config/media.rs`); `None`: text only.
    pub media: Option<ringperf_workload::workload::media::MediaParams>,
    /// `--download-video-content`: `video-generation` fetches each finished job's content.
    pub download_video_content: bool,
    /// Bodies go as multipart/form-data (`--request-content-type`, `config/form.rs`).
    pub form_data: bool,
    /// The Input group: dataset source, sampling, load options (`config/dataset.rs`).
    pub input: dataset::InputConfig,
    pub warmup: Option<PhaseConfig>,
    /// A config file's further warmups, run in order after `warmup` and before profiling.
    pub more_warmups: Vec<phases::NamedPhase>,
    pub profiling: PhaseConfig,
    /// The profiling phase's name (`profiling` unless a config file names it).
    pub profiling_name: String,
    /// A config file's phases after `profiling`, run in order: profiling phases (their records
    /// are in the results with the first's) and warmups (in none but `warmup_metrics`); each
    /// has its own phase export.
    pub phases_after: Vec<phases::NamedPhase>,
    pub ui: UiType,
    /// The realtime ticks: the stats block on stderr and the live API's snapshots
    /// (`--stats-interval`, [`realtime`]).
    pub realtime: Option<realtime::Realtime>,
    /// `--api-port` / `--api-host`: where the live API listens ([`api`], docs/api.md).
    pub api: Option<api::ApiAddr>,
    pub verbose: bool,
    pub workers: usize,
    pub io_driver: IoDriver,
    /// `--max-client-lag-us`, in ns: the client-health verdict's lag limit, enforced (exit
    /// code 5 when the client fell behind). `None`: the default limit, reported only.
    pub max_client_lag_ns: Option<u64>,
    /// `--timestamps`: read requests with kernel receive stamps (`true`, the default) or with
    /// user-space stamps only.
    pub kernel_stamps: bool,
    /// `--batch-wakeups-us`: the longest nap of a worker's batched wake-ups (zero: none). Only
    /// used with kernel stamps.
    pub batch_wakeups: std::time::Duration,
    /// `--failed-request-threshold`: abort when failed / total profiling records exceeds it.
    pub failed_request_threshold: Option<f64>,
    /// How long requests in flight may finish after an early stop (signal or error budget):
    /// `--benchmark-grace-period` (None = forever).
    pub stop_grace: Option<Duration>,
    /// Run against the embedded mock (its address replaces the URLs at start).
    pub mock: Option<MockShape>,
    /// The command line as run, secrets redacted.
    pub cli_command: String,
    /// Server-metrics collection.
    pub server_metrics: ServerMetricsConfig,
    /// GPU telemetry collection.
    pub gpu_telemetry: GpuTelemetryConfig,
    /// `--slice-duration` (server-metric timeslices).
    pub slice_duration: Option<Duration>,
    /// `--export-http-trace`: `trace_data` in each JSONL record.
    pub export_http_trace: bool,
    /// `--show-trace-timing`: the HTTP trace timing table on the console.
    pub show_trace_timing: bool,
    /// `--network-latency-*`: the RTT subtracted into the `network_adjusted_*` latencies.
    pub network_latency: network::NetworkLatency,
    /// `--goodput` SLOs: `(metric, threshold in its base unit)`; empty without the flag.
    pub goodput: Vec<(ringperf_metrics::aggregate::MetricId, f64)>,
    /// A rankings endpoint type: the synthetic query + passages shape (the Rankings flags).
    pub rankings: Option<ringperf_workload::workload::rankings::RankingsShape>,
    /// The run's plan, for the `input_config` echo and `plan.json` ([`Config::plan`]).
    pub echo: echo::Echo,
    /// `--shard-index` / `--shard-count` / `--start-at`: this process's share of a split run.
    pub shard: shard::ShardConfig,
    /// The command line, secrets redacted, one item per argument (a shard's `shard.json`).
    pub argv_redacted: Vec<String>,
    /// `--num-profile-runs` and its companions: repeat the profile and aggregate the runs.
    pub multi_run: multi_run::MultiRunConfig,
    /// Flags given where they change nothing ([`scope`]): one line each, printed before the
    /// run starts.
    pub warnings: Vec<String>,
    /// `--scenario`: what it locked and what `--unsafe-override` let through.
    pub scenario: Option<scenario::Outcome>,
    /// `--wait-for-model-*`, `--reset-kv-cache*`, `--server-profiler*` (docs/integrations.md).
    pub lifecycle: ringperf_metrics::lab::lifecycle::Lifecycle,
    /// `--mlflow-*`: the tracking server each run is logged to.
    pub mlflow: Option<ringperf_metrics::lab::mlflow::Mlflow>,
    /// `--wandb-*`: the W&B run made of each run.
    pub wandb: Option<ringperf_metrics::lab::wandb::Wandb>,
    /// `--otel-*`, `--stream`, `--gen-ai-provider`: the OTLP/HTTP metrics export.
    pub otel: Option<ringperf_metrics::lab::otel::Otel>,
}

/// Which metrics apply to a run of `endpoint`: the streaming and server-count gates, and the
/// endpoint type's `produces_tokens` / `tokenizes_input` (docs/endpoints.md).
pub fn metric_config(
    endpoint: EndpointKind,
    streaming: bool,
    use_server_token_count: bool,
) -> ringperf_metrics::aggregate::MetricConfig {
    let d = endpoint.descriptor();
    ringperf_metrics::aggregate::MetricConfig {
        produces_tokens: d.produces_tokens,
        tokenizes_input: d.tokenizes_input,
        // AIPerf's `supports_audio` types that ringperf sends audio with a length it knows
        // (chat and Responses: synthetic audio only, as AIPerf knows no length of a dataset's
        // clip). Raw and template are `supports_audio` in AIPerf too, but ringperf cannot find
        // a clip in a body whose shape the user wrote: their audio metrics are not computed.
        supports_audio: matches!(
            endpoint,
            EndpointKind::AudioTranscription | EndpointKind::Chat | EndpointKind::Responses
        ),
        supports_images: d.media.supports_images(),
        produces_videos: d.media.produces_videos,
        ..ringperf_metrics::aggregate::MetricConfig::new(streaming, use_server_token_count)
    }
}

/// Model names AIPerf treats as placeholders: their tokenizer defaults to `builtin`.
const PLACEHOLDER_MODELS: &[&str] = &[
    "mock-model",
    "test-model",
    "fake-model",
    "dummy-model",
    "placeholder",
    "model",
];

/// The `--model` names, trimmed, empty ones dropped; `mock-model` for `--mock` without one.
fn model_names(args: &ProfileArgs) -> Vec<String> {
    let mut models: Vec<String> = args
        .model_names
        .iter()
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect();
    if models.is_empty() && args.mock {
        models.push("mock-model".to_string());
    }
    models
}

/// `--tokenizer`, else `builtin` for a placeholder model name, else the first model's name.
fn tokenizer_for(given: Option<&str>, first_model: &str) -> String {
    match given {
        Some(t) => t.to_string(),
        None if PLACEHOLDER_MODELS.contains(&first_model) => "builtin".to_string(),
        None => first_model.to_string(),
    }
}

impl Config {
    /// Some profiling phase runs AIPerf's adaptive scale.
    pub fn has_adaptive(&self) -> bool {
        self.profiling.timing.adaptive.is_some()
            || (self.phases_after.iter()).any(|p| p.config.timing.adaptive.is_some())
    }

    /// Runs into `dir`: the artifact directory, as echoed and as the run's plan says.
    pub fn set_artifact_dir(&mut self, dir: &std::path::Path) {
        self.artifact_dir = dir.to_path_buf();
        self.echo.set_artifact_dir(dir);
    }

    /// The plan this configuration was resolved from (its artifact directory the run's), written
    /// to the run's directory ([`crate::plan::PLAN_FILE`]).
    pub fn plan(&self) -> &crate::plan::Plan {
        self.echo.plan()
    }

    /// Every phase of the run, in the order they run: its kind, name and settings. Its
    /// position is its `phase_index`.
    pub fn phase_list(&self) -> Vec<PhaseRef<'_>> {
        use ringperf_wire::record::Phase;
        let mut list = Vec::with_capacity(2 + self.more_warmups.len() + self.phases_after.len());
        if let (Some(w), Some(name)) = (&self.warmup, self.warmup_name()) {
            list.push(PhaseRef {
                kind: Phase::Warmup,
                name,
                config: w,
                seamless: false,
            });
        }
        fn named(p: &phases::NamedPhase) -> PhaseRef<'_> {
            PhaseRef {
                kind: if p.warmup {
                    Phase::Warmup
                } else {
                    Phase::Profiling
                },
                name: p.name.as_str(),
                config: &p.config,
                seamless: p.seamless,
            }
        }
        list.extend(self.more_warmups.iter().map(named));
        list.push(PhaseRef {
            kind: Phase::Profiling,
            name: &self.profiling_name,
            config: &self.profiling,
            seamless: self.plan().file_only.profiling_seamless,
        });
        list.extend(self.phases_after.iter().map(named));
        list
    }

    /// Runs without its warmups, wherever they are (a repeated run's later runs).
    pub fn drop_warmups(&mut self) {
        self.warmup = None;
        self.more_warmups.clear();
        self.phases_after.retain(|p| !p.warmup);
    }

    /// More phases than a warmup and one profiling phase, or a seamless one: each phase's records
    /// are also gathered and exported on their own (a phase's end is its last answer's).
    pub fn phase_by_phase(&self) -> bool {
        !self.more_warmups.is_empty()
            || !self.phases_after.is_empty()
            || self.plan().file_only.profiling_seamless
    }

    /// AIPerf's `seamless` at the run's phase `i`: whether the next phase is seamless (this one
    /// hands over once it issues nothing more) and whether this one is (it shares its
    /// concurrency with the previous one's sessions still alive). Only a profiling phase after
    /// another is seamless; on a warmup AIPerf reads the key and ignores it.
    pub fn seamless_at(&self, i: usize) -> (bool, bool) {
        let list = self.phase_list();
        let is = |j: usize| {
            j > 0
                && list.get(j).is_some_and(|p| {
                    p.seamless && p.kind == ringperf_wire::record::Phase::Profiling
                })
        };
        (is(i + 1), is(i))
    }

    /// How the run's phases are numbered and named in its records and scrape lines. Agentic
    /// replay's own warmup writes no `phase_index` and the phases after it their place in the
    /// config file's list (the warmups it declares, which agentic replay does not run, count), as
    /// AIPerf 0.13 numbers them.
    pub fn phase_layout(&self) -> ringperf_metrics::export::jsonl::PhaseLayout {
        let list = self.phase_list();
        let shown = if matches!(self.profiling.timing.mode, timing::Mode::Agentic(_)) {
            // The file's list as this run has it (a repeated run's later runs drop its warmups).
            let file = &self.plan().file_only;
            let first = self.warmup.is_some();
            let before = if first { file.phases_before.len() } else { 0 };
            let after = (file.phases_after.iter()).filter(|s| first || !s.warmup);
            let place = |name: &str| -> Option<u32> {
                if name == self.profiling_name {
                    return Some(before as u32);
                }
                let i = after.clone().position(|s| s.name == name)?;
                Some((before + 1 + i) as u32)
            };
            (list.iter())
                .map(|p| match p.kind {
                    ringperf_wire::record::Phase::Warmup => None,
                    ringperf_wire::record::Phase::Profiling => place(p.name),
                })
                .collect()
        } else {
            Vec::new()
        };
        ringperf_metrics::export::jsonl::PhaseLayout {
            phases: (list.iter()).map(|p| (p.kind, p.name.to_owned())).collect(),
            shown,
        }
    }

    /// The warmup's name, when the run has one (`warmup` unless a config file names it).
    pub fn warmup_name(&self) -> Option<&str> {
        self.warmup.as_ref()?;
        if matches!(self.profiling.timing.mode, timing::Mode::Agentic(_)) {
            return Some("agentic.warmup");
        }
        Some((self.plan().file_only.phases_before.first()).map_or("warmup", |p| p.name.as_str()))
    }
}

/// One phase of the run ([`Config::phase_list`]).
#[derive(Clone, Copy, Debug)]
pub struct PhaseRef<'a> {
    pub kind: ringperf_wire::record::Phase,
    pub name: &'a str,
    pub config: &'a PhaseConfig,
    /// AIPerf's `seamless` as the file gives it ([`Config::seamless_at`]).
    pub seamless: bool,
}

/// The tokenizer [`Config::from_plan`] will choose for `args`, known before the rest is
/// validated so that the builtin one can start loading first (`workload::tokenizer::preload`);
/// `None` when there is no model name (an error then).
pub fn tokenizer_spec(args: &ProfileArgs) -> Option<String> {
    model_names(args)
        .first()
        .map(|m| tokenizer_for(args.tokenizer.as_deref(), m))
}

/// Whether a run of `args` needs its tokenizer before the first request: it synthesizes prompts,
/// counts each prompt's ISL, or serves them from the embedded mock, which counts them. Only a
/// run with prompts from `--input-file` and token counts from the server
/// (`--use-server-token-count`) may not: its tokenizer is built when first used, if ever.
pub fn tokenizer_needed_first(args: &ProfileArgs) -> bool {
    args.input.input_file.is_none() || !args.use_server_token_count || args.mock
}

impl Config {
    /// The command line echoed in the JSON exports (`input_config`), in AIPerf 0.13's shape
    /// ([`echo`]). Secrets are never included.
    pub fn input_config(&self) -> Value {
        echo::input_config(self)
    }
}

fn profiling_phase(
    args: &ProfileArgs,
    inline_series: Option<&[(f64, f64)]>,
) -> Result<PhaseConfig, ConfigError> {
    if args.concurrency == Some(0) {
        return err("--concurrency must be at least 1");
    }
    let timing = timing::profiling_timing(args, inline_series)?;
    let series_rate = timing.rate_series.as_ref().map(|s| s.initial_qps());
    let load = match (timing.mode, args.request_rate.or(series_rate)) {
        (timing::Mode::FixedSchedule(_), _) => Load::Rate {
            rate: 0.0,
            arrival: Arrival::Constant,
            cap: args.concurrency,
        },
        (timing::Mode::UserCentric { rate, .. }, _) => Load::Rate {
            rate,
            arrival: Arrival::Constant,
            cap: args.concurrency,
        },
        (timing::Mode::Load | timing::Mode::Agentic(_), rate) => match rate {
            Some(rate) => {
                if !(rate.is_finite() && rate > 0.0) {
                    return err("--request-rate must be a positive number of requests per second");
                }
                Load::Rate {
                    rate,
                    arrival: arrival(args.arrival_pattern, args.arrival_smoothness)?,
                    cap: args.concurrency,
                }
            }
            None => {
                if args.arrival_smoothness.is_some() {
                    return err("--arrival-smoothness needs --request-rate");
                }
                if matches!(args.arrival_pattern, Some(p) if p != ArrivalPatternArg::ConcurrencyBurst)
                {
                    return err("--arrival-pattern needs --request-rate");
                }
                Load::Concurrency(args.concurrency.unwrap_or(1))
            }
        },
    };
    if !matches!(timing.mode, timing::Mode::Load) && args.arrival_pattern.is_some() {
        return err("--arrival-pattern needs --request-rate");
    }
    let duration = match args.benchmark_duration {
        Some(d) if !(d.is_finite() && d > 0.0) => {
            return err("--benchmark-duration must be a positive number of seconds");
        }
        Some(d) => Some(Duration::from_secs_f64(d)),
        None => None,
    };
    if args.request_count == Some(0) {
        return err("--request-count must be at least 1");
    }
    if args.prompt.conversation_num == Some(0) {
        return err("--conversation-num must be at least 1");
    }
    let sessions = args.prompt.conversation_num;
    // docs/timing.md: with no stop condition (requests, duration, sessions) the phase sends 10
    // requests; a fixed schedule sends the whole trace.
    let request_count = match (args.request_count, duration, sessions, timing.mode) {
        (None, None, _, timing::Mode::FixedSchedule(_)) => None,
        (None, None, None, _) => Some(10),
        (c, _, _, _) => c,
    };
    if let (timing::Mode::UserCentric { users, .. }, Some(n)) = (timing.mode, request_count)
        && n < users
    {
        return err(format!(
            "--request-count ({n}) must be at least --num-users ({users}): each user needs a \
             request"
        ));
    }
    let grace = duration.and_then(|_| secs_or_forever(args.benchmark_grace_period));
    Ok(PhaseConfig {
        load,
        request_count,
        sessions,
        duration,
        grace,
        timing,
    })
}

fn warmup_phase(
    args: &ProfileArgs,
    profiling: &PhaseConfig,
) -> Result<Option<PhaseConfig>, ConfigError> {
    // AIPerf 0.13 refuses a warmup grace period without a warmup duration, whether or not
    // another flag starts a warmup: the grace is a tail on a duration-bounded warmup. Under a
    // scenario it is the agentic warmup's grace instead (`scenario::apply`).
    if args.warmup_grace_period.is_some()
        && args.warmup_duration.is_none()
        && args.agentic.scenario.is_none()
    {
        return err(
            "--warmup-grace-period requires --warmup-duration: the grace period only applies \
             after a duration-bounded warmup (add --warmup-duration, or drop \
             --warmup-grace-period with --warmup-request-count / --num-warmup-sessions)",
        );
    }
    if args.warmup_request_count.is_none()
        && args.warmup_duration.is_none()
        && args.num_warmup_sessions.is_none()
    {
        if args.warmup_concurrency.is_some()
            || args.warmup_request_rate.is_some()
            || args.warmup_arrival_pattern.is_some()
            || args.timing.warmup_concurrency_ramp_duration.is_some()
            || args.timing.warmup_request_rate_ramp_duration.is_some()
        {
            return err(
                "--warmup-* settings need --warmup-request-count, --warmup-duration or \
                 --num-warmup-sessions",
            );
        }
        return Ok(None);
    }
    if args.warmup_request_count == Some(0) {
        return err("--warmup-request-count must be at least 1");
    }
    if args.num_warmup_sessions == Some(0) {
        return err("--num-warmup-sessions must be at least 1");
    }
    if args.warmup_concurrency == Some(0) {
        return err("--warmup-concurrency must be at least 1");
    }
    // Inherit every pacing setting from the profiling phase unless overridden (docs/timing.md). A
    // replay or user-centric profiling phase gives a closed-loop warmup at --concurrency (1 by
    // default), as AIPerf builds it.
    let inherited_load = match profiling.timing.mode {
        // A rate series is the profiling phase's alone (AIPerf's warmup has no rate then).
        timing::Mode::Load if profiling.timing.rate_series.is_none() => profiling.load,
        _ => Load::Concurrency(args.concurrency.unwrap_or(1)),
    };
    let load = match (args.warmup_request_rate, inherited_load) {
        (Some(rate), _) => {
            if !(rate.is_finite() && rate > 0.0) {
                return err("--warmup-request-rate must be positive");
            }
            let arrival = match args.warmup_arrival_pattern {
                Some(p) => arrival(Some(p), args.arrival_smoothness)?,
                None => echo::warmup_inherited_arrival(args),
            };
            Load::Rate {
                rate,
                arrival,
                cap: args.warmup_concurrency.or(args.concurrency),
            }
        }
        (None, Load::Rate { rate, cap, .. }) => {
            // AIPerf's warmup follows the given patterns, not the profiling phase's resolved
            // arrival: `--arrival-smoothness` alone makes the profiling phase gamma, the
            // warmup Poisson.
            let arrival = match args.warmup_arrival_pattern {
                Some(p) => arrival(Some(p), args.arrival_smoothness)?,
                None => echo::warmup_inherited_arrival(args),
            };
            Load::Rate {
                rate,
                arrival,
                cap: args.warmup_concurrency.or(cap),
            }
        }
        (None, Load::Concurrency(n)) => Load::Concurrency(args.warmup_concurrency.unwrap_or(n)),
    };
    let duration = match args.warmup_duration {
        Some(d) if !(d.is_finite() && d > 0.0) => return err("--warmup-duration must be positive"),
        Some(d) => Some(Duration::from_secs_f64(d)),
        None => None,
    };
    let grace = args.warmup_grace_period.and_then(secs_or_forever);
    let timing = timing::warmup_timing(args, &load)?;
    Ok(Some(PhaseConfig {
        load,
        request_count: args.warmup_request_count,
        sessions: args.num_warmup_sessions,
        duration,
        grace,
        timing,
    }))
}

fn arrival(p: Option<ArrivalPatternArg>, smoothness: Option<f64>) -> Result<Arrival, ConfigError> {
    if let Some(s) = smoothness
        && !(s.is_finite() && s > 0.0)
    {
        return err("--arrival-smoothness must be a positive number");
    }
    // docs/timing.md: smoothness given without an explicit pattern selects gamma.
    Ok(match (p, smoothness) {
        (None, Some(s)) => Arrival::Gamma { smoothness: s },
        (Some(ArrivalPatternArg::Gamma), s) => Arrival::Gamma {
            smoothness: s.unwrap_or(1.0),
        },
        (Some(ArrivalPatternArg::Constant), _) => Arrival::Constant,
        _ => Arrival::Poisson,
    })
}

fn secs_or_forever(s: f64) -> Option<Duration> {
    s.is_finite().then(|| Duration::from_secs_f64(s))
}

/// The session-affinity copies of the correlation id AIPerf sends, from its environment
/// variables (docs/endpoints.md): `X-Session-Affinity` unless turned off, the others when on.
pub fn affinity_headers(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Vec<&'static str>, ConfigError> {
    let mut out = Vec::new();
    for (var, header, default) in environment::AFFINITY_VARS {
        let on = match lookup(var) {
            None => default,
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => true,
                "0" | "false" | "no" | "off" | "" => false,
                _ => {
                    return Err(ConfigError::environment(format!(
                        "{var}={v}: expected true or false"
                    )));
                }
            },
        };
        if on {
            out.push(header);
        }
    }
    Ok(out)
}

/// Parses `key:value` pairs (one per argument) or a JSON object into (key, JSON value) pairs.
/// Values that parse as JSON numbers/booleans/objects keep that type, as in AIPerf.
fn parse_pairs(s: &str, flag: &str) -> Result<Vec<(String, Value)>, ConfigError> {
    let t = s.trim();
    if t.starts_with('{') {
        let v: Value = serde_json::from_str(t).map_err(|e| {
            ConfigError::flag(format!("{flag}: `{t}` is not a valid JSON object: {e}"))
        })?;
        let Value::Object(m) = v else {
            return err(format!("{flag}: `{t}` is not a JSON object"));
        };
        return Ok(m.into_iter().collect());
    }
    let Some((k, v)) = t.split_once(':') else {
        return err(format!("{flag}: `{t}` is not in the form key:value"));
    };
    let (k, v) = (k.trim(), v.trim());
    if k.is_empty() {
        return err(format!("{flag}: `{t}` has an empty key"));
    }
    let value = match serde_json::from_str::<Value>(v) {
        Ok(
            x @ (Value::Number(_)
            | Value::Bool(_)
            | Value::Object(_)
            | Value::Array(_)
            | Value::Null),
        ) => x,
        _ => Value::String(v.to_string()),
    };
    Ok(vec![(k.to_string(), value)])
}

fn json_to_plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn check_header(k: &str, v: &str) -> Result<(), ConfigError> {
    let bad_name = k.is_empty()
        || !k
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if bad_name {
        return err(format!("--header: `{k}` is not a valid header name"));
    }
    if v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return err(format!(
            "--header: the value of `{k}` contains a line break"
        ));
    }
    Ok(())
}

/// A value AIPerf's echoed command line prints unquoted, as it prints it: whole numbers
/// (no leading zero), decimals with one `.` (as floats: `1.` → `1.0`), `True` / `False` and
/// `None` (any case of true, false, none, null). Everything else is quoted.
fn aiperf_scalar(v: &str) -> Option<String> {
    let lower = v.to_ascii_lowercase();
    match lower.as_str() {
        "true" => return Some("True".into()),
        "false" => return Some("False".into()),
        "none" | "null" => return Some("None".into()),
        _ => {}
    }
    let digits = v.strip_prefix('-').unwrap_or(v);
    let all_digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if all_digits(digits) && (!digits.starts_with('0') || digits == "0") {
        return Some(v.to_string());
    }
    if digits.matches('.').count() == 1 && all_digits(&digits.replace('.', "")) {
        let x: f64 = v.parse().ok()?;
        // Python's repr of a float in the range command lines use.
        return Some(format!("{x:?}"));
    }
    None
}

/// The command line as a list, every secret value replaced by `<redacted>` as in
/// [`redact_command`], nothing quoted: what a shard records so `merge` can parse it again.
pub fn redact_argv(argv: &[String], secrets: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut redact_next = false;
    for a in argv {
        let shown = if redact_next {
            redact_next = false;
            "<redacted>".to_string()
        } else if a == "--api-key" {
            redact_next = true;
            a.clone()
        } else if a.starts_with("--api-key=") {
            "--api-key=<redacted>".to_string()
        } else {
            let mut v = a.clone();
            for s in secrets.iter().filter(|s| !s.is_empty()) {
                v = v.replace(s.as_str(), "<redacted>");
            }
            v
        };
        out.push(shown);
    }
    out
}

/// The command line with every secret value replaced by `<redacted>`, strings quoted and
/// numbers, booleans and `None` bare, as AIPerf echoes it.
pub fn redact_command(argv: &[String], secrets: &[String]) -> String {
    let mut out = Vec::with_capacity(argv.len());
    let mut redact_next = false;
    for (i, a) in argv.iter().enumerate() {
        let shown = if i == 0 {
            "ringperf".to_string()
        } else if i == 1 && !a.starts_with('-') {
            // The subcommand.
            a.clone()
        } else if redact_next {
            redact_next = false;
            "'<redacted>'".to_string()
        } else if a == "--api-key" {
            redact_next = true;
            a.clone()
        } else if let Some(rest) = a.strip_prefix("--api-key=") {
            let _ = rest;
            "--api-key='<redacted>'".to_string()
        } else if a.starts_with('-') {
            a.clone()
        } else if let Some(plain) = aiperf_scalar(a) {
            plain
        } else {
            let mut v = a.clone();
            for s in secrets.iter().filter(|s| !s.is_empty()) {
                v = v.replace(s.as_str(), "<redacted>");
            }
            format!("'{}'", v.replace('\'', "'\\''"))
        };
        out.push(shown);
    }
    out.join(" ")
}

#[cfg(test)]
mod promotion_tests;
#[cfg(test)]
mod tests;
