//! The flag table of `ringperf profile`: every AIPerf 0.13 `profile` flag, and ringperf's own,
//! declared once. A row says a flag's names and aliases, its AIPerf group, whether ringperf
//! implements it, the clap argument ids it sets and where each acts ([`Scope`]), whether AIPerf
//! sweeps it when given a list, and the `ringperf` cell of its row in docs/flags.md.
//!
//! Everything else is read from here: the rejection of an AIPerf flag ringperf does not
//! implement ([`is_aiperf_flag`]), the mode check ([`scopes`], `config::scope`), the sweepable
//! flags ([`sweepable`], `sweep::plan`) and docs/flags.md's tables ([`render_doc`]). Tests fail
//! when clap defines an argument no row names, when a row names an id or a spelling clap does not
//! have, and when docs/flags.md is not what the table renders
//! (`RINGPERF_WRITE_DOCS=1 cargo test -p ringperf --lib flags_doc` rewrites it).

use super::ProfileArgs;

/// Where a flag acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// In every mode.
    Any,
    /// Its combinations are checked where it is resolved (the module named).
    Resolved(&'static str),
    /// Synthetic prompt shaping: refused with `--input-file` or `--public-dataset`, as AIPerf
    /// refuses it (the file's records are the prompts).
    Synthetic,
    /// `--prompt-batch-size`: synthetic prompts, or a `random_pool` file (refused with another
    /// file type or a public dataset, as AIPerf).
    SyntheticOrPool,
    /// `--isl-block-size`: the hash-id traces (`mooncake_trace`, or a file whose type is
    /// detected); refused with another file type or a public dataset, as AIPerf; warned with
    /// synthetic prompts (ringperf's have no hash ids).
    HashTrace,
    /// `--num-dataset-entries`: the synthetic dataset's size, or how many conversations a
    /// `random_pool` file draws; warned with another file type or a public dataset, whose
    /// records are the dataset.
    Entries,
    /// `--ignore-trace-delays`: a file's timestamps and delays; warned with synthetic prompts or
    /// a public dataset (none to drop) and under a fixed schedule (the timestamps drive it, as
    /// in AIPerf).
    TraceDelays,
    /// `--arrival-pattern`: `concurrency-burst` names the closed loop, so beside `--request-rate`
    /// it is warned (the arrivals are Poisson, as in AIPerf); its other combinations are checked
    /// in `config/mod.rs`.
    ArrivalPattern,
    /// `--streaming`: warned on an endpoint that cannot stream (AIPerf warns and turns it off).
    StreamingEndpoint,
    /// The output-length limit: warned on an endpoint that generates no tokens (embeddings,
    /// rankings), which is sent none.
    GeneratesTokens,
    /// `--use-legacy-max-tokens`: only `chat` names its limit two ways; warned elsewhere.
    ChatOnly,
    /// The Rankings group: warned on an endpoint type that is not a rankings one.
    Rankings,
    /// `--download-video-content`: warned on an endpoint type other than `video-generation`.
    VideoJobs,
    /// Multi-Run companions AIPerf refuses with a single run.
    MultiRun,
    /// `--confidence-level`: accepted by AIPerf with a single run, which has no interval;
    /// warned.
    MultiRunInterval,
    /// `--server-metrics URL…`: refused with `--no-server-metrics` (AIPerf refuses the pair).
    ServerMetricsUrls,
    /// `--server-metrics-formats`: warned with `--no-server-metrics` (nothing is written).
    ServerMetricsFiles,
    /// `--export-http-trace`: warned with `--export-level summary` (no per-record file).
    RecordsFile,
    /// `--prefill-concurrency`: refused without streaming (AIPerf: the slot is given back at
    /// the first token, which only a stream has).
    Streamed,
    /// `--warmup-prefill-concurrency`: warned without a warmup phase, refused without
    /// streaming.
    StreamedWarmup,
    /// `--concurrency-ramp-duration`: warned when the profiling phase has no concurrency above
    /// one to ramp to.
    ConcurrencyRamp,
    /// The `--mock-*` shape flags: warned without `--mock`.
    Mock,
    /// `--url`: warned with `--mock` (requests go to the embedded mock).
    NotMock,
    /// `--batch-wakeups-us`: warned with `--timestamps user` (only kernel stamps batch).
    KernelStamps,
    /// Accepted for AIPerf's sake, with no effect in any mode ringperf has: always warned.
    Inert(&'static str),
    /// Agentic replay's (`--allow-dataset-wrap`): warned when the profiling phase is not one.
    Agentic,
}

/// AIPerf's groups of `profile` flags (its `--help` sections, docs/flags.md's `##` sections), and
/// ringperf's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// `## Endpoint`
    Endpoint,
    /// `## Input`
    Input,
    /// `## Fixed Schedule`
    FixedSchedule,
    /// `## Goodput`
    Goodput,
    /// `## Output`
    Output,
    /// `## HTTP Trace`
    HTTPTrace,
    /// `## Tokenizer`
    Tokenizer,
    /// `## Load Generator`
    LoadGenerator,
    /// `## Scenario`
    Scenario,
    /// `## Warmup`
    Warmup,
    /// `## User-Centric Rate`
    UserCentricRate,
    /// `## Request Cancellation`
    RequestCancellation,
    /// `## Conversation Input`
    ConversationInput,
    /// `## Input Sequence Length (ISL)`
    InputSequenceLengthISL,
    /// `## Output Sequence Length (OSL)`
    OutputSequenceLengthOSL,
    /// `## Prompt`
    Prompt,
    /// `## Prefix Prompt`
    PrefixPrompt,
    /// `## Cache Bust`
    CacheBust,
    /// `## Rankings`
    Rankings,
    /// `## Synthesis`
    Synthesis,
    /// `## Audio Input`
    AudioInput,
    /// `## Image Input`
    ImageInput,
    /// `## Video Input`
    VideoInput,
    /// `## Service`
    Service,
    /// `## Server Metrics`
    ServerMetrics,
    /// `## Network Latency`
    NetworkLatency,
    /// `## GPU Telemetry`
    GPUTelemetry,
    /// `## UI`
    UI,
    /// `## Workers`
    Workers,
    /// `## ZMQ Communication`
    ZMQCommunication,
    /// `## Accuracy`
    Accuracy,
    /// `## Multi-Run`
    MultiRun,
    Ringperf,
    ScaleOut,
}

impl Group {
    /// The section's title in docs/flags.md.
    pub fn title(self) -> &'static str {
        match self {
            Group::Endpoint => "Endpoint",
            Group::Input => "Input",
            Group::FixedSchedule => "Fixed Schedule",
            Group::Goodput => "Goodput",
            Group::Output => "Output",
            Group::HTTPTrace => "HTTP Trace",
            Group::Tokenizer => "Tokenizer",
            Group::LoadGenerator => "Load Generator",
            Group::Scenario => "Scenario",
            Group::Warmup => "Warmup",
            Group::UserCentricRate => "User-Centric Rate",
            Group::RequestCancellation => "Request Cancellation",
            Group::ConversationInput => "Conversation Input",
            Group::InputSequenceLengthISL => "Input Sequence Length (ISL)",
            Group::OutputSequenceLengthOSL => "Output Sequence Length (OSL)",
            Group::Prompt => "Prompt",
            Group::PrefixPrompt => "Prefix Prompt",
            Group::CacheBust => "Cache Bust",
            Group::Rankings => "Rankings",
            Group::Synthesis => "Synthesis",
            Group::AudioInput => "Audio Input",
            Group::ImageInput => "Image Input",
            Group::VideoInput => "Video Input",
            Group::Service => "Service",
            Group::ServerMetrics => "Server Metrics",
            Group::NetworkLatency => "Network Latency",
            Group::GPUTelemetry => "GPU Telemetry",
            Group::UI => "UI",
            Group::Workers => "Workers",
            Group::ZMQCommunication => "ZMQ Communication",
            Group::Accuracy => "Accuracy",
            Group::MultiRun => "Multi-Run",
            Group::Ringperf => "ringperf",
            Group::ScaleOut => "Scale-out",
        }
    }
}

/// AIPerf's groups in docs/flags.md's order.
pub const AIPERF_GROUPS: [Group; 32] = [
    Group::Endpoint,
    Group::Input,
    Group::FixedSchedule,
    Group::Goodput,
    Group::Output,
    Group::HTTPTrace,
    Group::Tokenizer,
    Group::LoadGenerator,
    Group::Scenario,
    Group::Warmup,
    Group::UserCentricRate,
    Group::RequestCancellation,
    Group::ConversationInput,
    Group::InputSequenceLengthISL,
    Group::OutputSequenceLengthOSL,
    Group::Prompt,
    Group::PrefixPrompt,
    Group::CacheBust,
    Group::Rankings,
    Group::Synthesis,
    Group::AudioInput,
    Group::ImageInput,
    Group::VideoInput,
    Group::Service,
    Group::ServerMetrics,
    Group::NetworkLatency,
    Group::GPUTelemetry,
    Group::UI,
    Group::Workers,
    Group::ZMQCommunication,
    Group::Accuracy,
    Group::MultiRun,
];

/// What ringperf does with a flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acts {
    /// An AIPerf flag ringperf implements: the clap argument ids it sets (a `--x` / `--no-x`
    /// pair is two) and where each acts.
    Aiperf(&'static [(&'static str, Scope)]),
    /// An AIPerf flag ringperf refuses by name, exit code 2.
    Rejected,
    /// A flag of ringperf's own (no AIPerf row): its clap id and where it acts.
    Own(&'static [(&'static str, Scope)]),
}

/// How a swept value is written (whole numbers, or floats printed as Python prints them) and
/// set on the typed settings.
#[derive(Clone, Copy, Debug)]
pub struct Sweep {
    /// AIPerf's parameter path (`phases.profiling.concurrency`).
    pub path: &'static str,
    /// Whole numbers (otherwise floats: `10.0`).
    pub whole: bool,
    /// Sets the value (a whole number is exact as a float).
    pub set: fn(&mut ProfileArgs, f64),
}

impl PartialEq for Sweep {
    /// Rows compare by path and kind (a setter has no identity to compare).
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.whole == other.whole
    }
}

impl Eq for Sweep {}

const WHOLE: bool = true;
const FLOAT: bool = false;

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flag {
    pub group: Group,
    /// Every spelling: the long name first, then its aliases and short forms, with their dashes.
    pub names: &'static [&'static str],
    pub acts: Acts,
    /// A comma-separated list of values is a parameter sweep over this path (docs/sweeps.md).
    pub sweep: Option<Sweep>,
    /// The `ringperf` cell of the flag's row in docs/flags.md (AIPerf's flags only).
    pub doc: &'static str,
    /// For a flag whose value is text (or one of its choices): its AIPerf config path
    /// (`endpoint.transport`). A YAML config file sets it at `benchmark.<path>` (refused by
    /// name while the flag is rejected), and `input_config` echoes it there when it was given.
    pub text_at: Option<&'static str>,
}

const fn aiperf(
    group: Group,
    names: &'static [&'static str],
    ids: &'static [(&'static str, Scope)],
    doc: &'static str,
) -> Flag {
    Flag {
        group,
        names,
        acts: Acts::Aiperf(ids),
        sweep: None,
        doc,
        text_at: None,
    }
}

const fn rejected(group: Group, names: &'static [&'static str], doc: &'static str) -> Flag {
    Flag {
        group,
        names,
        acts: Acts::Rejected,
        sweep: None,
        doc,
        text_at: None,
    }
}

const fn own(
    group: Group,
    names: &'static [&'static str],
    ids: &'static [(&'static str, Scope)],
) -> Flag {
    Flag {
        group,
        names,
        acts: Acts::Own(ids),
        sweep: None,
        doc: "",
        text_at: None,
    }
}

impl Flag {
    const fn text_at(self, path: &'static str) -> Flag {
        Flag {
            text_at: Some(path),
            ..self
        }
    }

    const fn sweeps(self, path: &'static str, whole: bool, set: fn(&mut ProfileArgs, f64)) -> Flag {
        Flag {
            sweep: Some(Sweep { path, whole, set }),
            ..self
        }
    }

    /// The clap ids this row sets, with their scopes (none for a rejected flag).
    pub fn ids(&self) -> &'static [(&'static str, Scope)] {
        match self.acts {
            Acts::Aiperf(ids) | Acts::Own(ids) => ids,
            Acts::Rejected => &[],
        }
    }

    /// An AIPerf flag (implemented or not), as opposed to one of ringperf's own.
    pub fn is_aiperf(&self) -> bool {
        !matches!(self.acts, Acts::Own(_))
    }
}

use Scope::*;

/// Every flag, AIPerf's in its groups' order (docs/flags.md), then ringperf's own.
pub const FLAGS: &[Flag] = &[
    aiperf(Group::Endpoint, &["--model-names", "--model", "-m"], &[("model_names", Any)], "supported"),
    // Per-request endpoint shaping (issue 26)
    aiperf(Group::Endpoint, &["--model-selection-strategy"], &[("model_selection_strategy", Resolved("config/requests.rs"))], "supported: with several `--model-names`, `round_robin` (default) gives the n-th turn of the dataset, counted across conversations in dataset order, model n mod len; `random` draws uniformly per turn from the run's seed; `weighted` refused (AIPerf refuses it when no model has a weight, and no flag gives one). YAML `benchmark.models.strategy` too ([datasets.md](datasets.md#several-models))"),
    aiperf(Group::Endpoint, &["--custom-endpoint", "--endpoint"], &[("custom_endpoint", Any)], "supported"),
    aiperf(Group::Endpoint, &["--endpoint-type"], &[("endpoint_type", Resolved("config/resolve.rs"))], "supported: `chat`, `completions`, `responses`, `messages`, `embeddings`, `chat-embeddings`, `nim-embeddings`, `nim-rankings`, `cohere-rankings`, `hf-tei-rankings`, `huggingface-generate`, `image-generation`, `image-edit`, `image-retrieval` (needs `--image-*`), `solido-rag`, `video-generation`, `audio-transcription`, `raw`, `template` (see [endpoints.md](endpoints.md))"),
    aiperf(Group::Endpoint, &["--streaming"], &[("streaming", StreamingEndpoint)], "supported; turned off for endpoint types that cannot stream (embeddings, rankings), as AIPerf does, with one warning line"),
    aiperf(Group::Endpoint, &["--url", "-u"], &[("url", NotMock)], "supported: `http://` and `https://` (TLS: [tls.md](tls.md)); several URLs are used round-robin"),
    aiperf(Group::Endpoint, &["--url-strategy"], &[("url_strategy", Any)], "supported"),
    aiperf(Group::Endpoint, &["--request-timeout-seconds"], &[("request_timeout_seconds", Any)], "supported"),
    // Server lifecycle (docs/integrations.md): the mode and interval without a timeout are
    // warned in config/lab.rs.
    aiperf(Group::Endpoint, &["--wait-for-model-timeout"], &[("wait_for_model_timeout", Any)], "supported: before the first run, wait up to this many seconds for every URL × model to be ready (0: no wait), progress on stderr, exit 2 on timeout ([integrations.md](integrations.md#server-lifecycle))"),
    aiperf(Group::Endpoint, &["--wait-for-model-mode"], &[("wait_for_model_mode", Resolved("config/lab.rs"))], "supported: `inference` (default: a one-token request answered below 500), `models` (`GET /v1/models` lists the model; a 404 falls back to the base URL answering 2xx), `both`; warned without `--wait-for-model-timeout`"),
    aiperf(Group::Endpoint, &["--wait-for-model-interval"], &[("wait_for_model_interval", Resolved("config/lab.rs"))], "supported (default 5 s); warned without `--wait-for-model-timeout`"),
    aiperf(Group::Endpoint, &["--reset-kv-cache"], &[("reset_kv_cache", Any)], "supported: `POST` to the reset path on every distinct URL origin before each run, trial and sweep variation; 409/423/429/503 and no answer retried with backoff within 60 s, another non-2xx fails the run (exit 2)"),
    aiperf(Group::Endpoint, &["--reset-kv-cache-timeout-seconds"], &[("reset_kv_cache_timeout_seconds", Any)], "supported (default 30); given alone it turns the reset on, as in AIPerf"),
    aiperf(Group::Endpoint, &["--reset-kv-cache-path"], &[("reset_kv_cache_path", Any)], "supported (default `/reset_prefix_cache`, must start with `/`); given alone it turns the reset on"),
    aiperf(Group::Endpoint, &["--server-profiler"], &[("server_profiler", Any)], "supported: `POST` the start path just before the profiling phase and the stop path just after it, on every origin; a failed start fails the run (exit 2), a failed stop is a warning"),
    aiperf(Group::Endpoint, &["--server-profiler-timeout-seconds"], &[("server_profiler_timeout_seconds", Any)], "supported (default 30); given alone it turns the profiler calls on"),
    aiperf(Group::Endpoint, &["--server-profiler-start-path"], &[("server_profiler_start_path", Any)], "supported (default `/start_profile`, must start with `/`); given alone it turns the profiler calls on"),
    aiperf(Group::Endpoint, &["--server-profiler-stop-path"], &[("server_profiler_stop_path", Any)], "supported (default `/stop_profile`, must start with `/`); given alone it turns the profiler calls on"),
    aiperf(Group::Endpoint, &["--api-key"], &[("api_key", Any)], "supported: `Authorization: Bearer <key>`; `messages` sends `x-api-key: <key>` and `anthropic-version: 2023-06-01` (unless a `--header` sets it)"),
    aiperf(Group::Endpoint, &["--transport", "--transport-type"], &[("transport", Any)], "supported: `http`, AIPerf's only transport (an `https://` URL is TLS over it); echoed as `endpoint.transport`, and set by YAML `benchmark.endpoint.transport`").text_at("endpoint.transport"),
    aiperf(Group::Endpoint, &["--use-legacy-max-tokens"], &[("use_legacy_max_tokens", ChatOnly)], "supported (chat; warned on other endpoint types)"),
    aiperf(Group::Endpoint, &["--use-server-token-count"], &[("use_server_token_count", Any)], "supported"),
    // Per-chunk usage, outputs.json, a required report: checked in config/outputs.rs.
    aiperf(Group::Endpoint, &["--per-chunk-usage"], &[("per_chunk_usage", Resolved("config/outputs.rs"))], "supported: the chat payload asks for `stream_options.continuous_usage_stats`, and inter-token latency divides the decode time by OSL minus the `completion_tokens` of the first content chunk that carries a usage (OSL − 1 when none does or the count is 0 or not below OSL), as AIPerf 0.13 ([metrics.md](metrics.md)); refused, as AIPerf, without `--use-server-token-count`, on another endpoint type than `chat`, or without `--streaming`"),
    aiperf(Group::Endpoint, &["--connection-reuse-strategy"], &[("connection_reuse_strategy", Any)], "supported: `pooled`, `never`, `sticky-user-sessions` (one connection per session, closed after its last turn)"),
    aiperf(Group::Endpoint, &["--download-video-content"], &[("download_video_content", VideoJobs)], "supported: `video-generation` fetches each completed job's content (the job's `url`, else `{path}/{id}/content`), inside the request's latency; warned with another endpoint type"),
    aiperf(Group::Endpoint, &["--request-content-type"], &[("request_content_type", Resolved("config/form.rs"))], "supported: `application/json` or `multipart/form-data` (any case); `image-edit`, `audio-transcription` and `video-generation` default to the form and refuse JSON, every other type refuses the form, with AIPerf's messages (exit 2); YAML `endpoint.request_content_type` too ([endpoints.md](endpoints.md#multipartform-data))"),
    aiperf(Group::Endpoint, &["--session-header"], &[("session_header", Resolved("config/requests.rs"))], "supported: the named header carries each session's id in place of `X-Correlation-ID` (the session-affinity copies, `AIPERF_HTTP_X_*_FROM_CORRELATION_ID`, still follow it, one of the same name dropped); the raw export and the HTTP trace list it under that name; refused when not an HTTP header name, or `X-Request-ID`, `Content-Length`, `Host`"),
    aiperf(Group::Endpoint, &["--uuid-and-strip"], &[("uuid_and_strip", Resolved("config/resolve.rs"))], r#"supported: chat only (refused with another endpoint type, as AIPerf); a `single_turn` image whose `image_uuids` entry an earlier turn of the same session sent with its bytes is sent as `{"type":"image_url","image_url":{"url":""},"uuid":…}`; `multi_turn` refused, as AIPerf; dataset UUIDs pass through on chat with or without it ([multimodal.md](multimodal.md#image-cache-uuids))"#),
    aiperf(Group::Input, &["--extra-inputs"], &[("extra_inputs", Resolved("config/template.rs"))], "supported; `payload_template` and (with it) `response_field` are taken out of the extras, as AIPerf does, and only `--endpoint-type template` uses them (a built-in name, a file or the Jinja text; a JMESPath subset, see [endpoints.md](endpoints.md)); `--endpoint-type raw` reads `response_field` too (falling back to auto-detection when the path finds nothing, as AIPerf)"),
    aiperf(Group::Input, &["--header", "-H"], &[("header", Any)], "supported"),
    aiperf(Group::Input, &["--input-file"], &[("input_file", Resolved("config/dataset.rs"))], "supported: a file, or a directory for `random_pool` / `raw_payload` / `sagemaker_data_capture`; read as a stream (docs/datasets.md)"),
    aiperf(Group::Input, &["--public-dataset"], &[("public_dataset", Resolved("config/dataset.rs"))], "supported: `sharegpt` only, from `--input-file` or AIPerf's cache path, never downloaded; every other AIPerf dataset is rejected by name (it needs a download)"),
    rejected(Group::Input, &["--hf-subset"], "rejected: applies to Hugging Face-backed public datasets, which need a download (no network here); `sharegpt` reads a local copy"),
    aiperf(Group::Input, &["--hf-weka-dataset"], &[("hf_weka_dataset", Resolved("config::dataset"))], "supported: the dataset repo of `--public-dataset weka_hf` (alone, it selects `weka_hf`), a Weka agent-trace corpus read from the local Hugging Face cache (docs/datasets.md, `weka_trace`); refused with another public dataset, as AIPerf"),
    rejected(Group::Input, &["--dataset-filter"], "rejected: only public datasets that declare filters take it, and ringperf's one public dataset (`sharegpt`) declares none"),
    aiperf(Group::Input, &["--custom-dataset-type"], &[("custom_dataset_type", Resolved("config/dataset.rs"))], "supported: every type docs/datasets.md has a section for (`single_turn`, `multi_turn`, `random_pool`, the traces `mooncake_trace`, `bailian_trace`, `burst_gpt_trace`, `sagemaker_data_capture`, and `raw_payload`, `inputs_json`; `_` or `-`); detected from the file when omitted; AIPerf's other types are rejected by name"),
    aiperf(Group::Input, &["--ignore-trace-delays"], &[("ignore_trace_delays", TraceDelays)], "supported: every turn's `timestamp` and `delay` are dropped at load (no effect under a fixed schedule, as in AIPerf: one warning line then, and with synthetic prompts or a public dataset)"),
    aiperf(Group::Input, &["--use-think-time-only"], &[("use_think_time_only", Resolved("config::dataset"))], "supported (`weka_trace`, `tracelab`): a later turn waits its recorded `think_time`, when recorded, instead of the idle gap after the previous request (docs/datasets.md); refused with `--ignore-trace-delays` and with another `--custom-dataset-type`, as AIPerf"),
    aiperf(Group::Input, &["--max-context-length"], &[("max_context_length", Resolved("config::dataset"))], "supported (`weka_trace`): traces whose largest request (prompt plus asked output) is longer are left out at load; refused with another `--custom-dataset-type` or a public dataset, as AIPerf"),
    aiperf(Group::Input, &["--dataset-sampling-strategy"], &[("dataset_sampling_strategy", Any)], "supported: overrides the dataset type's default (docs/datasets.md: synthetic prompts in order, as AIPerf 0.13); every phase picks conversations with it, the phases of a run as one sequence"),
    aiperf(Group::Input, &["--allow-dataset-wrap", "--no-allow-dataset-wrap"], &[("allow_dataset_wrap", Agentic), ("no_allow_dataset_wrap", Agentic)], "supported: as in AIPerf it only affects agentic replay (a config file's `timing_mode: agentic_replay`), which may then run more lanes than the dataset has traces ([timing.md](timing.md#agentic-replay)); warned in any other run"),
    aiperf(Group::Input, &["--random-seed"], &[("random_seed", Any)], "supported"),
    aiperf(Group::Input, &["--trace-session-sample-ratio"], &[("trace_session_sample_ratio", Resolved("config::dataset"))], "supported (`baseten_trace`): each session, and each row without one, kept with this probability (0 < r ≤ 1), drawn as AIPerf draws them (the same sessions for the same `--random-seed`); refused with another dataset, as AIPerf ([datasets.md](datasets.md#baseten_trace))"),
    // YAML config: replaced by the file's flags before parsing (config/yaml/cmd.rs)
    aiperf(Group::Input, &["--config", "-f"], &[("config", Resolved("config/yaml/cmd.rs"))], "supported: an AIPerf 0.13 YAML config file, read as the equivalent flags; flags given beside it override its values, and the ones AIPerf cannot apply over a file are refused with its message (docs/config-files.md)"),
    // Timing modes
    aiperf(Group::FixedSchedule, &["--fixed-schedule"], &[("fixed_schedule", Resolved("config/timing.rs"))], "supported: first turns at their trace timestamps (docs/timing.md); with `--request-rate`, `--user-centric-rate`, `--num-users` or `--arrival-smoothness` it is an error"),
    aiperf(Group::FixedSchedule, &["--no-fixed-schedule"], &[("no_fixed_schedule", Resolved("config/timing.rs"))], "supported: keeps the chosen timing mode for a timestamped trace"),
    aiperf(Group::FixedSchedule, &["--fixed-schedule-auto-offset"], &[("fixed_schedule_auto_offset", Resolved("config/timing.rs"))], "supported: needs `--fixed-schedule`; the default unless a start offset is given (as AIPerf 0.13 resolves it); an error with `--fixed-schedule-start-offset`"),
    aiperf(Group::FixedSchedule, &["--fixed-schedule-start-offset"], &[("fixed_schedule_start_offset", Resolved("config/timing.rs"))], "supported: needs `--fixed-schedule`; ms, inclusive; becomes the phase start"),
    aiperf(Group::FixedSchedule, &["--fixed-schedule-end-offset"], &[("fixed_schedule_end_offset", Resolved("config/timing.rs"))], "supported: needs `--fixed-schedule`; ms, inclusive; at least the start offset"),
    // Goodput, rankings
    aiperf(Group::Goodput, &["--goodput"], &[("goodput", Resolved("config/goodput.rs"))], "supported: per-request metrics that apply to the run (an unknown, repeated, non-per-request or inapplicable tag is a config error, exit 2); adds `good_request_count`, `goodput`, `good_request_fraction` (docs/metrics.md)"),
    aiperf(Group::Output, &["--output-artifact-dir", "--artifact-dir"], &[("artifact_dir", Any)], "supported"),
    aiperf(Group::Output, &["--profile-export-prefix", "--profile-export-file"], &[("profile_export_prefix", Any)], "supported"),
    aiperf(Group::Output, &["--export-level", "--profile-export-level"], &[("export_level", Any)], "supported: `summary`, `records` and `raw` (`profile_export_raw.jsonl`, docs/output-formats.md)"),
    aiperf(Group::Output, &["--slice-duration"], &[("slice_duration", Any)], "supported: client-metric timeslices (`profile_export_aiperf_timeslices.{json,csv}`) and server-metric timeslices (`timeslices` in `server_metrics_export.json`, `rate_*` stats)"),
    aiperf(Group::Output, &["--auto-plot", "--no-auto-plot"], &[("auto_plot", Any), ("no_auto_plot", Any)], "supported: after the run, `report.html` and `plots/` in the artifact directory, as `ringperf plot DIR` writes them (docs/plots.md); a report that cannot be drawn is a warning, not a failed run (unless `--plot-required`)"),
    aiperf(Group::Output, &["--plot-required"], &[("plot_required", Resolved("config/outputs.rs"))], "supported: with `--auto-plot`, a report that cannot be made (docs/plots.md) fails a run that would exit 0 with exit code 1, as AIPerf's failed plot callback does, every other artifact written; warned without `--auto-plot` (it does not turn the report on)"),
    aiperf(Group::Output, &["--export-outputs-json"], &[("export_outputs_json", Resolved("config/outputs.rs"))], "supported: `outputs.json` in the artifact directory, each profiling request's generated text with its ids, times and main metrics, in AIPerf 0.13's schema ([output-formats.md](output-formats.md#outputsjson)); refused with a `--profile-export-prefix` whose summary JSON would be `outputs.json`, as AIPerf"),
    // OpenTelemetry: the companions without --otel-url are refused in config/lab.rs.
    aiperf(Group::Output, &["--otel-url"], &[("otel_url", Any)], "supported: an OTLP/HTTP receiver (`host[:port]` or `http://…`; `/v1/metrics` appended as AIPerf does); every request's metrics as cumulative protobuf histograms, every 2 s during the run and once at its end ([integrations.md](integrations.md#opentelemetry)); `https://` and gRPC are refused (exit 2); a failed export is a warning"),
    aiperf(Group::Output, &["--stream"], &[("stream", Resolved("config/lab.rs"))], "supported: `metrics` (the per-request histograms), `timing` (the `aiperf.timing.*` phase counters and gauges), `default` (both) or `none`, combined as AIPerf combines them; refused without `--otel-url`, as AIPerf"),
    aiperf(Group::Output, &["--otel-resource-attributes"], &[("otel_resource_attributes", Resolved("config/lab.rs"))], "supported: `key=value` pairs, comma-separated or repeated, over AIPerf's resource attributes; refused without `--otel-url`, as AIPerf"),
    aiperf(Group::Output, &["--gen-ai-provider"], &[("gen_ai_provider", Resolved("config/lab.rs"))], "supported: the `gen_ai.provider.name` attribute (default: from the URL's host as AIPerf infers it, else `_OTHER`); refused without `--otel-url`, as AIPerf"),
    // MLflow: the companions without a tracking URI are warned in config/lab.rs.
    aiperf(Group::Output, &["--mlflow-tracking-uri"], &[("mlflow_tracking_uri", Any)], "supported: an MLflow tracking server's `http://host:port`, over MLflow's REST API; each run's MLflow run starts with the benchmark and takes its per-request values and phase counters live (`live.*`), then, once the run's files are written, its metrics, params, tags, artifacts and `mlflow_export.json` ([integrations.md](integrations.md#mlflow)); another scheme (`file:`, `sqlite:`, `databricks`, `https://`) is refused (exit 2); a failed export is a warning"),
    aiperf(Group::Output, &["--mlflow-experiment"], &[("mlflow_experiment", Resolved("config/lab.rs"))], "supported (default `aiperf`, made when missing); warned without `--mlflow-tracking-uri`"),
    aiperf(Group::Output, &["--mlflow-run-name"], &[("mlflow_run_name", Resolved("config/lab.rs"))], "supported (default `aiperf-<benchmark id, 8 characters>`); warned without `--mlflow-tracking-uri`"),
    aiperf(Group::Output, &["--mlflow-tag"], &[("mlflow_tag", Resolved("config/lab.rs"))], "supported: `key:value` pairs, comma-separated or repeated, or a JSON object; warned without `--mlflow-tracking-uri`"),
    aiperf(Group::Output, &["--mlflow-parent-run-id"], &[("mlflow_parent_run_id", Resolved("config/lab.rs"))], "supported (`mlflow.parentRunId`); warned without `--mlflow-tracking-uri`"),
    aiperf(Group::Output, &["--mlflow-artifact-glob"], &[("mlflow_artifact_glob", Resolved("config/lab.rs"))], "supported: globs relative to the artifact directory, repeated or comma-separated (default AIPerf's: the exports, timeslices and plots); warned without `--mlflow-tracking-uri`"),
    // W&B: the companions without a project are warned in config/lab.rs.
    aiperf(Group::Output, &["--wandb-project"], &[("wandb_project", Any)], "supported: each run becomes a W&B run, made by the `wandb` Python package found at run time (`$RINGPERF_WANDB_PYTHON`, else `python3`), as AIPerf makes it: config, tags, the `summary_metrics` table, an `aiperf-run` artifact ([integrations.md](integrations.md#weights--biases)); `WANDB_MODE=offline` writes the run under `<artifact-dir>/wandb/`; no `wandb` or a failure is a warning"),
    aiperf(Group::Output, &["--wandb-entity"], &[("wandb_entity", Resolved("config/lab.rs"))], "supported; warned without `--wandb-project`"),
    aiperf(Group::Output, &["--wandb-run-name"], &[("wandb_run_name", Resolved("config/lab.rs"))], "supported (default `aiperf-<benchmark id, 8 characters>`); warned without `--wandb-project`"),
    aiperf(Group::Output, &["--wandb-tag"], &[("wandb_tag", Resolved("config/lab.rs"))], "supported: repeated or comma-separated; warned without `--wandb-project`"),
    aiperf(Group::HTTPTrace, &["--export-http-trace"], &[("export_http_trace", RecordsFile)], "supported: `trace_data` in each `profile_export.jsonl` record (AIPerf's shape, the fields ringperf records; see output-formats.md); echoed as `input_config.artifacts.trace`"),
    aiperf(Group::HTTPTrace, &["--show-trace-timing"], &[("show_trace_timing", Any)], "supported: the `HTTP Trace Timing` console table before the others; echoed as `input_config.artifacts.show_trace_timing`"),
    aiperf(Group::Tokenizer, &["--tokenizer"], &[("tokenizer", Any)], "supported: `builtin`, a tokenizer.json, a directory, or a model id: from the local HF cache, else fetched from the Hub into it (`HF_ENDPOINT`, `HF_TOKEN`, `HF_HUB_OFFLINE`)"),
    // Tokenizer: with the builtin tokenizer, a revision or a chat template is warned in
    // config/resolve.rs; a Python-only tokenizer is refused where it is loaded.
    aiperf(Group::Tokenizer, &["--tokenizer-revision"], &[("tokenizer_revision", Resolved("config/resolve.rs"))], "supported: a branch or tag through `refs/REV`, or a commit through `snapshots/REV`, of a model id in the local HF cache, else fetched from the Hub; offline, a missing revision is an error naming what was looked for ([tokenizer.md](tokenizer.md))"),
    aiperf(Group::Tokenizer, &["--tokenizer-trust-remote-code"], &[("trust_remote_code", Any)], "supported: a `tokenizer.json` needs no code, so it changes nothing; a tokenizer that is only Python code (`auto_map`, no `tokenizer.json`) is refused with the reason, with or without it ([tokenizer.md](tokenizer.md))"),
    aiperf(Group::Tokenizer, &["--apply-chat-template"], &[("apply_chat_template", Resolved("config/resolve.rs"))], "supported: chat-shaped requests' ISL counted on the model's chat template (minijinja, as transformers renders it), synthetic ISL compensated as AIPerf (first turns by the fixed cost and a message wrap, later turns by a wrap, `--seq-dist` and range-ratio draws too); warned with `builtin` ([tokenizer.md](tokenizer.md))"),
    // Load generator and warmup
    aiperf(Group::LoadGenerator, &["--benchmark-duration"], &[("benchmark_duration", Resolved("config/mod.rs"))], "supported")
        .sweeps("phases.profiling.duration", FLOAT, |a, v| a.benchmark_duration = Some(v)),
    aiperf(Group::LoadGenerator, &["--benchmark-grace-period"], &[("benchmark_grace_period", Resolved("config/resolve.rs"))], "supported; without `--benchmark-duration` refused (exit 2), as AIPerf does"),
    aiperf(Group::LoadGenerator, &["--concurrency"], &[("concurrency", Resolved("config/mod.rs"))], "supported")
        .sweeps("phases.profiling.concurrency", WHOLE, |a, v| a.concurrency = Some(v as u64)),
    aiperf(Group::LoadGenerator, &["--prefill-concurrency"], &[("prefill_concurrency", Streamed)], "supported with `--streaming` (refused without, as AIPerf): at most this many requests wait for their first token (a slot taken before the write, given back at the first content response or the end); at most `--concurrency`")
        .sweeps("phases.profiling.prefill_concurrency", WHOLE, |a, v| a.timing.prefill_concurrency = Some(v as u64)),
    aiperf(Group::LoadGenerator, &["--request-rate"], &[("request_rate", Resolved("config/timing.rs"))], "supported")
        .sweeps("phases.profiling.rate", FLOAT, |a, v| a.request_rate = Some(v)),
    aiperf(Group::LoadGenerator, &["--arrival-pattern", "--request-rate-mode"], &[("arrival_pattern", ArrivalPattern)], "supported: `constant`, `poisson`, `gamma`; `concurrency-burst` is the concurrency mode"),
    aiperf(Group::LoadGenerator, &["--arrival-smoothness", "--vllm-burstiness"], &[("arrival_smoothness", Resolved("config/timing.rs"))], "supported"),
    aiperf(Group::LoadGenerator, &["--request-count", "--num-requests"], &[("request_count", Resolved("config/mod.rs"))], "supported")
        .sweeps("phases.profiling.requests", WHOLE, |a, v| a.request_count = Some(v as u64)),
    aiperf(Group::LoadGenerator, &["--concurrency-ramp-duration"], &[("concurrency_ramp_duration", ConcurrencyRamp)], "supported: slot i of N may start at duration·i/(N−1) (AIPerf's discrete linear ramp 1→N)"),
    aiperf(Group::LoadGenerator, &["--prefill-concurrency-ramp-duration"], &[("prefill_concurrency_ramp_duration", Resolved("config/timing.rs"))], "supported: the prefill limit grows 1 → N as the concurrency ramp does, `k` slots from D·(k−1)/(N−1) ([timing.md](timing.md#ramps))"),
    aiperf(Group::LoadGenerator, &["--request-rate-ramp-duration"], &[("request_rate_ramp_duration", Resolved("config/timing.rs"))], "supported: needs `--request-rate` or `--user-centric-rate`; AIPerf's linear ramp from rate·0.1 s/duration, updated every 100 ms; intended times stay absolute"),
    // Load shape: the series' combinations are refused, the prefill ramps without a prefill
    // limit (or a warmup) warned, in config/timing.rs.
    aiperf(Group::LoadGenerator, &["--request-rate-series"], &[("request_rate_series", Resolved("config/timing.rs"))], "supported: a piecewise-linear rate from a JSON file of `{time_s, qps}` points, updated every 100 ms as AIPerf's rate loop ([timing.md](timing.md#load-shape---request-rate-series-file))"),
    aiperf(Group::LoadGenerator, &["--failed-request-threshold"], &[("failed_request_threshold", Any)], "supported: exit code 3 when crossed"),
    aiperf(Group::LoadGenerator, &["--trajectory-start-min-ratio"], &[("trajectory_start_min_ratio", Resolved("config/timing.rs"))], "supported (agentic replay: a config file's `timing_mode: agentic_replay`; inert otherwise, as AIPerf): each lane resumes its trace at an instant drawn between the two ratios of its span, AIPerf's draw for the same `--random-seed` ([timing.md](timing.md#agentic-replay))"),
    aiperf(Group::LoadGenerator, &["--trajectory-start-max-ratio"], &[("trajectory_start_max_ratio", Resolved("config/timing.rs"))], "supported (agentic replay; inert otherwise): the latest point of the span; below the minimum refused with AIPerf's message"),
    aiperf(Group::LoadGenerator, &["--burst-phase-starts"], &[("burst_phase_starts", Resolved("config/timing.rs"))], "supported (agentic replay; inert otherwise): warmup sends every lane's priming requests at once, and profiling starts each lane's earliest request at the phase start"),
    aiperf(Group::LoadGenerator, &["--trace-idle-gap-cap-seconds"], &[("trace_idle_gap_cap_seconds", Resolved("config::dataset"))], "supported (`weka_trace`, `tracelab`): each gap between two request starts of a trace (its root's, subagents' and flat agents') over this is cut to it, and the delays, spawns and joins follow the compressed timeline (docs/datasets.md); refused with another `--custom-dataset-type`"),
    aiperf(Group::LoadGenerator, &["--system-idle-gap-cap-seconds"], &[("system_idle_gap_cap_seconds", Resolved("config/timing.rs"))], "supported (agentic replay; inert otherwise): whenever no request is in flight on any worker, every pending wait of the profiling phase is brought forward by one shift so that the next request goes within the cap of the idle spell's start (order and spacing kept); the shifts are summed in the run log ([timing.md](timing.md#agentic-replay))"),
    aiperf(Group::Scenario, &["--scenario"], &[("scenario", Resolved("config/scenario.rs"))], "supported: `inferencex-agentx-mvp`, AIPerf's locks (agentic replay, streaming, `ignore_eos`, a first-turn cache-bust marker, at least 900 s, the whole trace span, a 10 s system-idle cap, a Weka loader; AIPerf's messages) and the `metadata` block of `profile_export_aiperf.json` ([timing.md](timing.md#scenarios)); an unknown name gets AIPerf's `Unknown scenario` message"),
    aiperf(Group::Scenario, &["--unsafe-override"], &[("unsafe_override", Resolved("config/scenario.rs"))], "supported: the scenario's violations become warnings and the run is marked `submission_valid: false`; a run without a Weka source is refused even so; nothing without `--scenario`"),
    aiperf(Group::Warmup, &["--warmup-request-count", "--num-warmup-requests"], &[("warmup_request_count", Resolved("config/mod.rs"))], "supported"),
    aiperf(Group::Warmup, &["--warmup-duration"], &[("warmup_duration", Resolved("config/mod.rs"))], "supported"),
    aiperf(Group::Warmup, &["--agentic-cache-warmup-duration"], &[("agentic_cache_warmup_duration", Resolved("config/timing.rs"))], "supported (agentic replay only, refused otherwise as AIPerf refuses it): after the priming requests, the lanes' trees go on for this many seconds with no recorded idle and one output token a request, then drain, and profiling resumes every live session where it is, after what is left of its next turn's delay ([timing.md](timing.md#agentic-replay))"),
    aiperf(Group::Warmup, &["--agentic-warmup-grace-period"], &[("agentic_warmup_grace_period", Agentic)], "supported (agentic replay; warned otherwise): once the warmup's last priming request is sent, its answers are waited for this long at most, then the rest are cut (default: no limit) ([timing.md](timing.md#agentic-replay))"),
    aiperf(Group::Warmup, &["--num-warmup-sessions"], &[("num_warmup_sessions", Resolved("config/mod.rs"))], "supported: the warmup phase starts this many sessions; each sends all its turns (unless a warmup request count or duration ends it first)"),
    aiperf(Group::Warmup, &["--warmup-concurrency"], &[("warmup_concurrency", Resolved("config/mod.rs"))], "supported"),
    aiperf(Group::Warmup, &["--warmup-prefill-concurrency"], &[("warmup_prefill_concurrency", StreamedWarmup)], "supported: warmup's prefill limit (defaults to `--prefill-concurrency`)"),
    aiperf(Group::Warmup, &["--warmup-request-rate"], &[("warmup_request_rate", Resolved("config/mod.rs"))], "supported"),
    aiperf(Group::Warmup, &["--warmup-arrival-pattern"], &[("warmup_arrival_pattern", Resolved("config/mod.rs"))], "supported"),
    aiperf(Group::Warmup, &["--warmup-grace-period"], &[("warmup_grace_period", Resolved("config/mod.rs"))], "supported; without `--warmup-duration` refused (exit 2), as AIPerf does, also with a count- or session-bounded warmup"),
    aiperf(Group::Warmup, &["--warmup-concurrency-ramp-duration"], &[("warmup_concurrency_ramp_duration", Resolved("config/mod.rs"))], "supported: defaults to `--concurrency-ramp-duration`"),
    aiperf(Group::Warmup, &["--warmup-prefill-concurrency-ramp-duration"], &[("warmup_prefill_concurrency_ramp_duration", Resolved("config/timing.rs"))], "supported: the warmup's prefill ramp (else the profiling one)"),
    aiperf(Group::Warmup, &["--warmup-request-rate-ramp-duration"], &[("warmup_request_rate_ramp_duration", Resolved("config/mod.rs"))], "supported: defaults to `--request-rate-ramp-duration`; needs a rate-paced warmup"),
    aiperf(Group::UserCentricRate, &["--user-centric-rate"], &[("user_centric_rate", Resolved("config/timing.rs"))], "supported: needs `--num-users`; AIPerf's user schedule (docs/timing.md); an error with `--request-rate` (AIPerf silently drops that rate)"),
    aiperf(Group::UserCentricRate, &["--num-users"], &[("num_users", Resolved("config/timing.rs"))], "supported: needs `--user-centric-rate`; at most the request count")
        .sweeps("phases.profiling.users", WHOLE, |a, v| a.timing.num_users = Some(v as u64)),
    aiperf(Group::RequestCancellation, &["--request-cancellation-rate"], &[("request_cancellation_rate", Resolved("config/timing.rs"))], "supported: percentage in (0, 100] of profiling requests; never in warmup; deterministic for a seed"),
    aiperf(Group::RequestCancellation, &["--request-cancellation-delay"], &[("request_cancellation_delay", Resolved("config/timing.rs"))], "supported: seconds after the request is fully sent; needs `--request-cancellation-rate`"),
    aiperf(Group::ConversationInput, &["--conversation-num", "--num-conversations", "--num-sessions"], &[("conversation_num", Any)], "supported: the synthetic conversation count when `--num-dataset-entries` is not given (docs/synthetic.md); and the phase's session stop condition: new sessions start while fewer have started, sessions in flight finish their turns")
        .sweeps("phases.profiling.sessions", WHOLE, |a, v| a.prompt.conversation_num = Some(v as u64)),
    aiperf(Group::ConversationInput, &["--num-dataset-entries", "--num-prompts"], &[("num_dataset_entries", Entries)], "supported: synthetic conversations built (or a `random_pool` file's draws); default `--conversation-num`, else `--request-count`, else 100 (AIPerf's rule, docs/synthetic.md); warned with other files and public datasets"),
    aiperf(Group::ConversationInput, &["--conversation-turn-mean", "--session-turns-mean"], &[("conversation_turn_mean", Synthetic)], "supported (synthetic)")
        .sweeps("datasets.main.turns.mean", WHOLE, |a, v| a.prompt.conversation_turn_mean = v as u32),
    aiperf(Group::ConversationInput, &["--conversation-turn-stddev", "--session-turns-stddev"], &[("conversation_turn_stddev", Synthetic)], "supported (synthetic)"),
    aiperf(Group::ConversationInput, &["--conversation-turn-delay-mean", "--session-turn-delay-mean"], &[("conversation_turn_delay_mean", Synthetic)], "supported (synthetic; integer ms, as AIPerf)"),
    aiperf(Group::ConversationInput, &["--conversation-turn-delay-stddev", "--session-turn-delay-stddev"], &[("conversation_turn_delay_stddev", Synthetic)], "supported (synthetic; integer ms, as AIPerf)"),
    aiperf(Group::ConversationInput, &["--conversation-turn-delay-ratio", "--session-delay-ratio"], &[("conversation_turn_delay_ratio", Synthetic)], "supported (synthetic)"),
    aiperf(Group::ConversationInput, &["--inter-turn-delay-cap-seconds"], &[("inter_turn_delay_cap_seconds", Resolved("config::dataset"))], "supported (`weka_trace`, `tracelab`, `dag_jsonl`, `baseten_trace` with `--no-open-loop-replay`): no turn waits longer than this after the previous; refused with another `--custom-dataset-type`"),
    aiperf(Group::ConversationInput, &["--max-idle-gap-cap-seconds"], &[("max_idle_gap_cap_seconds", Resolved("config::dataset"))], "supported (`baseten_trace`): every gap between consecutive starts cut to at most this (open loop: every row; closed loop: the sessions' starts), as AIPerf's reflow"),
    aiperf(Group::ConversationInput, &["--replay-speedup"], &[("replay_speedup", Resolved("config/timing.rs"))], "supported: needs `--fixed-schedule`; divides normalized trace timestamps and delays (AIPerf 0.13 accepts it only with baseten_trace; ringperf applies it to every timestamped trace)"),
    aiperf(Group::ConversationInput, &["--open-loop-replay", "--no-open-loop-replay"], &[("open_loop_replay", Resolved("config::dataset")), ("no_open_loop_replay", Resolved("config::dataset"))], "supported (`baseten_trace`): open loop (default) keeps every turn at its recorded time (later turns at max(time, previous answer)); closed loop sends a later turn the recorded gap less the previous request's recorded duration after the previous answer"),
    aiperf(Group::ConversationInput, &["--open-loop-strict"], &[("open_loop_strict", Resolved("config::dataset"))], "supported (`baseten_trace`): every row its own single-turn session; refused with `--no-open-loop-replay`, as AIPerf"),
    aiperf(Group::ConversationInput, &["--omit-kv-hints"], &[("omit_kv_hints", Resolved("config::dataset"))], "supported (`baseten_trace`): no `hash_ids` / `block_size` body fields"),
    aiperf(Group::ConversationInput, &["--force-min-tokens", "--no-force-min-tokens"], &[("force_min_tokens", Resolved("config::dataset")), ("no_force_min_tokens", Resolved("config::dataset"))], "supported (`baseten_trace`): `min_tokens` = the recorded output length (default on)"),
    // Synthetic prompts
    aiperf(Group::InputSequenceLengthISL, &["--prompt-input-tokens-mean", "--synthetic-input-tokens-mean", "--isl"], &[("isl_mean", Synthetic)], "supported")
        .sweeps("datasets.main.prompts.isl.mean", WHOLE, |a, v| a.isl_mean = v as u32),
    aiperf(Group::InputSequenceLengthISL, &["--prompt-input-tokens-stddev", "--synthetic-input-tokens-stddev", "--isl-stddev"], &[("isl_stddev", Synthetic)], "supported")
        .sweeps("datasets.main.prompts.isl.stddev", FLOAT, |a, v| a.isl_stddev = v),
    aiperf(Group::InputSequenceLengthISL, &["--prompt-input-tokens-block-size", "--synthetic-input-tokens-block-size", "--isl-block-size"], &[("block_size", HashTrace)], "supported: tokens per `hash_ids` block of `mooncake_trace` prompts (default 512); refused with another declared file type or a public dataset, warned with synthetic prompts"),
    aiperf(Group::InputSequenceLengthISL, &["--seq-dist", "--sequence-distribution"], &[("seq_dist", Synthetic)], "supported: semicolon, bracket and JSON forms, optional stddevs; a malformed value is a config error (exit 2)"),
    // Ratio windows and cache bust (config/random_prompt.rs)
    aiperf(Group::InputSequenceLengthISL, &["--random-range-ratio"], &[("random_range_ratio", Synthetic)], r#"supported (synthetic): each turn's ISL and OSL drawn uniformly from a window around `--isl` and `--osl`, which must both be given; `vllm` style `[floor(m(1−r)), ceil(m(1+r))]` (r in [0, 1), or `{"input": r, "output": r}`), `sglang` style `[max(1, int(m·r)), m]` (r in [0, 1]); refused with `--seq-dist`, a non-zero `--isl-stddev`/`--osl-stddev`, or a vLLM window whose smallest prompt is empty, with AIPerf's messages ([synthetic.md](synthetic.md#random-range-ratio))"#),
    aiperf(Group::InputSequenceLengthISL, &["--random-corpus-style"], &[("random_corpus_style", Resolved("config/random_prompt.rs"))], "supported: `vllm` (default) or `sglang`: the window of `--random-range-ratio` and the token pool of `--prompt-corpus random` (special tokens left out, or drawn too) ([synthetic.md](synthetic.md#prompt-shaping))"),
    aiperf(Group::OutputSequenceLengthOSL, &["--prompt-output-tokens-mean", "--output-tokens-mean", "--osl"], &[("osl_mean", GeneratesTokens)], "supported")
        .sweeps("datasets.main.prompts.osl.mean", WHOLE, |a, v| a.osl_mean = Some(v as u32)),
    aiperf(Group::OutputSequenceLengthOSL, &["--prompt-output-tokens-stddev", "--output-tokens-stddev", "--osl-stddev"], &[("osl_stddev", GeneratesTokens)], "supported")
        .sweeps("datasets.main.prompts.osl.stddev", FLOAT, |a, v| a.osl_stddev = v),
    aiperf(Group::Prompt, &["--prompt-batch-size", "--batch-size-text", "--batch-size", "-b"], &[("prompt_batch_size", SyntheticOrPool)], "supported: N texts per turn (chat: N text parts of one message; completions: a list of N prompts); 0 is refused; with a `random_pool` file, texts drawn per turn from the flat pool ([datasets.md](datasets.md#random_pool))"),
    aiperf(Group::Prompt, &["--prompt-corpus"], &[("prompt_corpus", Resolved("config/prompt.rs"))], "supported: `sonnet` (the default) and `random` (the tokenizer's vocabulary, vLLM's random dataset: every prompt the ISL exactly; ringperf's own draws, [synthetic.md](synthetic.md#prompt-shaping)); `coding` is refused with the reason (AIPerf's own code generators, not reproduced)"),
    aiperf(Group::PrefixPrompt, &["--system-prompt"], &[("system_prompt", Resolved("config/prompt.rs"))], "supported (chat; refused with completions, which has no system message): the system message of synthetic prompts, and over a file or public dataset before each conversation's own ([datasets.md](datasets.md)); refused with a dataset of raw bodies or message lists"),
    aiperf(Group::PrefixPrompt, &["--system-prompt-file"], &[("system_prompt_file", Resolved("config/prompt.rs"))], "supported (chat; read once at startup, an unreadable or empty file is a config error): used as `--system-prompt` is"),
    aiperf(Group::PrefixPrompt, &["--prompt-prefix-pool-size", "--prefix-prompt-pool-size", "--num-prefix-prompts"], &[("prompt_prefix_pool_size", Synthetic)], "supported (synthetic; a pool without `--prompt-prefix-length` holds empty prefixes, as in AIPerf)"),
    aiperf(Group::PrefixPrompt, &["--prompt-prefix-length", "--prefix-prompt-length"], &[("prompt_prefix_length", Synthetic)], "supported (synthetic; additive to the ISL, first turns only, as AIPerf)"),
    aiperf(Group::PrefixPrompt, &["--shared-system-prompt-length"], &[("shared_system_prompt_length", Synthetic)], "supported (chat)"),
    aiperf(Group::PrefixPrompt, &["--user-context-prompt-length"], &[("user_context_prompt_length", Synthetic)], "supported (chat)"),
    aiperf(Group::CacheBust, &["--cache-bust"], &[("cache_bust", Resolved("config/random_prompt.rs"))], "supported with `--endpoint-type chat`, `responses` and `messages`, for synthetic prompts, dataset files and `--public-dataset`: `none` (default), `system_prefix`, `system_suffix`, `first_turn_prefix`, `first_turn_suffix` (a per-session `[rid:D]` marker, `D` the first 12 hex digits of SHA-256 over benchmark id, session ordinal twice and conversation id, as AIPerf), `warmup_isolation_system`, `warmup_isolation_first_turn` (`[warmup]` in warmup requests only); spliced into each request as it is sent, ISL counted with it ([synthetic.md](synthetic.md#cache-bust)). Refused with AIPerf's messages on an endpoint without cache-bust support and for `warmup_isolation_system` without a system prompt on synthetic prompts; a record whose own message list has no text where the marker goes is a setup error naming it ([synthetic.md](synthetic.md#cache-bust))"),
    aiperf(Group::Rankings, &["--rankings-passages-mean"], &[("rankings_passages_mean", Rankings)], "supported (synthetic rankings requests of the rankings endpoint types)"),
    aiperf(Group::Rankings, &["--rankings-passages-stddev"], &[("rankings_passages_stddev", Rankings)], "supported (synthetic rankings requests of the rankings endpoint types)"),
    aiperf(Group::Rankings, &["--rankings-passages-prompt-token-mean"], &[("rankings_passages_prompt_token_mean", Rankings)], "supported (synthetic rankings requests of the rankings endpoint types)"),
    aiperf(Group::Rankings, &["--rankings-passages-prompt-token-stddev"], &[("rankings_passages_prompt_token_stddev", Rankings)], "supported (synthetic rankings requests of the rankings endpoint types)"),
    aiperf(Group::Rankings, &["--rankings-query-prompt-token-mean"], &[("rankings_query_prompt_token_mean", Rankings)], "supported (synthetic rankings requests of the rankings endpoint types)"),
    aiperf(Group::Rankings, &["--rankings-query-prompt-token-stddev"], &[("rankings_query_prompt_token_stddev", Rankings)], "supported (synthetic rankings requests of the rankings endpoint types)"),
    aiperf(Group::Synthesis, &["--synthesis-speedup-ratio"], &[("speedup_ratio", Resolved("config/dataset.rs"))], "supported with a `mooncake_trace` file: divides each row's `timestamp` (truncated to an integer); the trace is reshaped at load as AIPerf's trace loader does (rows outside the fixed-schedule offsets, on their recorded timestamps, and rows over `--synthesis-max-isl` dropped first), the same model as `ringperf synthesize` ([commands.md](commands.md#synthesis-inside-profile)); refused with another dataset, with AIPerf's sentence; YAML `datasets[].synthesis`"),
    aiperf(Group::Synthesis, &["--synthesis-prefix-len-multiplier"], &[("prefix_len_multiplier", Resolved("config/dataset.rs"))], "supported with a `mooncake_trace` file: stretches or cuts each row's shared prefix; the trace is reshaped at load as AIPerf's trace loader does (rows outside the fixed-schedule offsets, on their recorded timestamps, and rows over `--synthesis-max-isl` dropped first), the same model as `ringperf synthesize` ([commands.md](commands.md#synthesis-inside-profile)); refused with another dataset, with AIPerf's sentence; YAML `datasets[].synthesis`"),
    aiperf(Group::Synthesis, &["--synthesis-prefix-root-multiplier"], &[("prefix_root_multiplier", Resolved("config/dataset.rs"))], "supported with a `mooncake_trace` file: spreads rows over k copies of the prefix tree; the trace is reshaped at load as AIPerf's trace loader does (rows outside the fixed-schedule offsets, on their recorded timestamps, and rows over `--synthesis-max-isl` dropped first), the same model as `ringperf synthesize` ([commands.md](commands.md#synthesis-inside-profile)); refused with another dataset, with AIPerf's sentence; YAML `datasets[].synthesis`"),
    aiperf(Group::Synthesis, &["--synthesis-prompt-len-multiplier"], &[("prompt_len_multiplier", Resolved("config/dataset.rs"))], "supported with a `mooncake_trace` file: scales each row's own (unshared) prompt; the trace is reshaped at load as AIPerf's trace loader does (rows outside the fixed-schedule offsets, on their recorded timestamps, and rows over `--synthesis-max-isl` dropped first), the same model as `ringperf synthesize` ([commands.md](commands.md#synthesis-inside-profile)); refused with another dataset, with AIPerf's sentence; YAML `datasets[].synthesis`"),
    aiperf(Group::Synthesis, &["--synthesis-output-len-multiplier"], &[("output_len_multiplier", Resolved("config/dataset.rs"))], "supported with a `mooncake_trace` file: scales `output_length` (half to even, at least 1); the trace is reshaped at load as AIPerf's trace loader does (rows outside the fixed-schedule offsets, on their recorded timestamps, and rows over `--synthesis-max-isl` dropped first), the same model as `ringperf synthesize` ([commands.md](commands.md#synthesis-inside-profile)); refused with another dataset, with AIPerf's sentence; YAML `datasets[].synthesis`"),
    aiperf(Group::Synthesis, &["--synthesis-max-isl"], &[("max_isl", Resolved("config/dataset.rs"))], "supported with a `mooncake_trace` file: drops rows whose recorded `input_length` exceeds it, then caps synthesized ones; the trace is reshaped at load as AIPerf's trace loader does (rows outside the fixed-schedule offsets, on their recorded timestamps, and rows over `--synthesis-max-isl` dropped first), the same model as `ringperf synthesize` ([commands.md](commands.md#synthesis-inside-profile)); refused with another dataset, with AIPerf's sentence; YAML `datasets[].synthesis`"),
    aiperf(Group::Synthesis, &["--synthesis-max-osl"], &[("max_osl", Resolved("config/dataset.rs"))], "supported with a `mooncake_trace` file: caps `output_length`; the trace is reshaped at load as AIPerf's trace loader does (rows outside the fixed-schedule offsets, on their recorded timestamps, and rows over `--synthesis-max-isl` dropped first), the same model as `ringperf synthesize` ([commands.md](commands.md#synthesis-inside-profile)); refused with another dataset, with AIPerf's sentence; YAML `datasets[].synthesis`"),
    // Audio, Image and Video Input (synthetic media; docs/multimodal.md)
    aiperf(Group::AudioInput, &["--audio-batch-size", "--batch-size-audio"], &[("audio_batch_size", SyntheticOrPool)], "supported: clips per turn (default 1); audio is sent when `--audio-length-mean` is above 0; with a `random_pool` file, items drawn per turn from the flat pool ([datasets.md](datasets.md#random_pool))"),
    aiperf(Group::AudioInput, &["--audio-length-mean"], &[("audio_length_mean", Synthetic)], "supported: seconds, normal distribution rejected below 0.01 s; 0 (default) sends no audio"),
    aiperf(Group::AudioInput, &["--audio-length-stddev"], &[("audio_length_stddev", Synthetic)], "supported"),
    aiperf(Group::AudioInput, &["--audio-format"], &[("audio_format", Synthetic)], "supported: `wav` (PCM); `mp3` through the system's FFmpeg (a clear error naming the flag when it is missing), MP3's nine sample rates only, as AIPerf"),
    aiperf(Group::AudioInput, &["--audio-depths"], &[("audio_depths", Synthetic)], "supported: 8, 16, 24, 32 bits, one drawn per clip; another depth refused"),
    aiperf(Group::AudioInput, &["--audio-sample-rates"], &[("audio_sample_rates", Synthetic)], "supported: kHz, one drawn per clip"),
    aiperf(Group::AudioInput, &["--audio-num-channels"], &[("audio_num_channels", Synthetic)], "supported: 1 or 2"),
    aiperf(Group::ImageInput, &["--image-width-mean"], &[("image_width_mean", Synthetic)], "supported: pixels, normal distribution rounded up (at least 1); images are sent when both means are above 0"),
    aiperf(Group::ImageInput, &["--image-width-stddev"], &[("image_width_stddev", Synthetic)], "supported"),
    aiperf(Group::ImageInput, &["--image-height-mean"], &[("image_height_mean", Synthetic)], "supported"),
    aiperf(Group::ImageInput, &["--image-height-stddev"], &[("image_height_stddev", Synthetic)], "supported"),
    aiperf(Group::ImageInput, &["--image-batch-size", "--batch-size-image"], &[("image_batch_size", SyntheticOrPool)], "supported: images per turn (default 1); with a `random_pool` file, items drawn per turn from the flat pool ([datasets.md](datasets.md#random_pool))"),
    aiperf(Group::ImageInput, &["--image-format"], &[("image_format", Synthetic)], "supported: `png` (default), `jpeg` (quality 85, no chroma subsampling, as AIPerf), `random`"),
    aiperf(Group::ImageInput, &["--image-source"], &[("image_source", Synthetic)], "supported: `noise` (default); a directory (AIPerf's index: every non-hidden entry with an extension Pillow registers, sorted; unreadable files set aside with a warning; PNG and JPEG decoded, another image format stops the run naming the file), each drawn image one of its images resized as Pillow resizes it; `assets`, the photographs AIPerf ships, read from the AIPerf installed for `python3` (`RINGPERF_PYTHON`), refused (exit 2) when none is found ([multimodal.md](multimodal.md#source-images))"),
    aiperf(Group::ImageInput, &["--image-source-sampling"], &[("image_source_sampling", Synthetic)], "supported: `random-with-replacement` (default), `shuffle-cycle`, `sequential-cycle` with a directory or `assets`; with `noise` only `random-with-replacement`, as AIPerf"),
    aiperf(Group::VideoInput, &["--video-batch-size", "--batch-size-video"], &[("video_batch_size", SyntheticOrPool)], "supported: videos per turn (default 1); video is sent when `--video-width` and `--video-height` are given; with a `random_pool` file, items drawn per turn from the flat pool ([datasets.md](datasets.md#random_pool))"),
    aiperf(Group::VideoInput, &["--video-duration"], &[("video_duration", Synthetic)], "supported: frames = duration × fps"),
    aiperf(Group::VideoInput, &["--video-fps"], &[("video_fps", Synthetic)], "supported"),
    aiperf(Group::VideoInput, &["--video-width"], &[("video_width", Synthetic)], "supported: with `--video-height` (both or neither, as AIPerf); even sides (yuv420p)"),
    aiperf(Group::VideoInput, &["--video-height"], &[("video_height", Synthetic)], "supported"),
    aiperf(Group::VideoInput, &["--video-synth-type"], &[("video_synth_type", Synthetic)], "supported: `moving_shapes`, `grid_clock`, `noise` (frames drawn by ringperf, not AIPerf's pictures)"),
    aiperf(Group::VideoInput, &["--video-format"], &[("video_format", Synthetic)], "supported: `webm` (default), `mp4`, encoded by the system's FFmpeg (a clear error naming the flag when it is missing)"),
    aiperf(Group::VideoInput, &["--video-codec"], &[("video_codec", Synthetic)], "supported: any FFmpeg encoder name (default `libvpx-vp9`)"),
    aiperf(Group::VideoInput, &["--video-audio-sample-rate"], &[("video_audio_sample_rate", Synthetic)], "supported: the embedded track's rate, kHz (8–96) or Hz above 96 (default 44100)"),
    aiperf(Group::VideoInput, &["--video-audio-num-channels"], &[("video_audio_num_channels", Synthetic)], "supported: 0 (default, no track), 1 or 2: a Gaussian-noise track muxed into each clip ([multimodal.md](multimodal.md))"),
    aiperf(Group::VideoInput, &["--video-audio-codec"], &[("video_audio_codec", Synthetic)], "supported: `libvorbis` (WebM's default), `libopus` (MP4's), `aac`; refused with 0 channels, as AIPerf"),
    aiperf(Group::VideoInput, &["--video-audio-depth"], &[("video_audio_depth", Synthetic)], "supported: 8, 16, 24 or 32 bits"),
    // Service, UI, collectors
    aiperf(Group::Service, &["--log-level"], &[("log_level", Any)], "supported: `debug`/`trace` print run details on stderr"),
    aiperf(Group::Service, &["--verbose", "-v"], &[("verbose", Any)], "supported"),
    aiperf(Group::Service, &["--extra-verbose", "-vv"], &[("extra_verbose", Any)], "supported: as `--log-level trace` (the run's details on stderr, as with `--verbose`); echoed as `logging.level: TRACE` with the simple UI, as AIPerf echoes it"),
    rejected(Group::Service, &["--record-processor-service-count", "--record-processors"], "rejected (not yet)"),
    aiperf(Group::Service, &["--api-port"], &[("api_port", Resolved("config/api.rs"))], "supported: AIPerf's live API for the run on this port ([api.md](api.md)): its HTTP routes (`/api/config`, `/api/run`, `/api/progress`, `/api/metrics`, `/api/results`, `/api/results/files/…`, `/healthz`, …), the WebSocket `/ws` with its subscriptions and the run's figures in the Prometheus format at `/metrics`; kept open 5 s after the results are written; default `AIPERF_API_SERVER_PORT`"),
    aiperf(Group::Service, &["--api-host"], &[("api_host", Resolved("config/api.rs"))], "supported: the API's bind address (default `AIPERF_API_SERVER_HOST`, else `127.0.0.1`); refused without `--api-port`, as AIPerf refuses it"),
    aiperf(Group::Service, &["--stats-interval"], &[("stats_interval", Resolved("config/realtime.rs"))], "supported: AIPerf's realtime stats block of the profiling phase so far on stderr every this many seconds (0–1000; 0: none); printed whenever the flag is given (AIPerf prints it only with `--api-port`, on Kubernetes or with `AIPERF_UI_REALTIME_METRICS_ENABLED=true`, which ringperf also honours, at `AIPERF_UI_REALTIME_METRICS_INTERVAL` or 30 s), never under the dashboard ([dashboard.md](dashboard.md#realtime-stats-block))"),
    aiperf(Group::ServerMetrics, &["--server-metrics"], &[("server_metrics", ServerMetricsUrls)], "supported: extra Prometheus endpoints beside every `--url` + `/metrics` (http and https, with the run's TLS trust settings; no Kubernetes discovery)"),
    aiperf(Group::ServerMetrics, &["--no-server-metrics"], &[("no_server_metrics", Any)], "supported: no scrape, no TRT-LLM probe, no warning"),
    aiperf(Group::ServerMetrics, &["--server-metrics-formats"], &[("server_metrics_formats", ServerMetricsFiles)], "supported: `json csv jsonl parquet`; default `json csv`, as AIPerf 0.13 writes (its server-metrics docs say `json csv parquet`, its `--help` and its runs `json csv`)"),
    aiperf(Group::NetworkLatency, &["--network-latency-automatic"], &[("network_latency_automatic", Resolved("config/network.rs"))], "supported: TCP connect probes to each server's host:port from profiling start, every ping interval, topped up to 5 at the end; `profile_export_network_latency.jsonl`; the pooled mean RTT is subtracted into `network_adjusted_*` and reported as `network_rtt`, beside the kernel's own RTT of the requests' connections (docs/metrics.md)"),
    aiperf(Group::NetworkLatency, &["--network-latency-mean"], &[("network_latency_mean", Resolved("config/network.rs"))], "supported: a fixed RTT (ms) subtracted into `network_adjusted_*`; refused beside `--network-latency-automatic`, as AIPerf refuses the pair"),
    aiperf(Group::NetworkLatency, &["--network-latency-ping-interval"], &[("network_latency_ping_interval", Resolved("config/network.rs"))], "supported: seconds between probes; refused without `--network-latency-automatic`, as AIPerf refuses it"),
    aiperf(Group::GPUTelemetry, &["--gpu-telemetry"], &[("gpu_telemetry", Resolved("config/mod.rs"))], "supported: DCGM exporter URLs added to the defaults `localhost:9400` and `localhost:9401` (http and https); `dashboard` turns it on with the default exporters (the GPU panel of `--ui dashboard` shows whenever telemetry is on); `pynvml` / `amdsmi` rejected (exit 2: they need a GPU machine to be tested); a custom metrics CSV rejected (exit 2); a value is a URL when it starts with `http` or holds a `:`, as in AIPerf (anything else is refused); refused beside `--no-gpu-telemetry`, as AIPerf refuses the pair"),
    aiperf(Group::GPUTelemetry, &["--no-gpu-telemetry"], &[("no_gpu_telemetry", Any)], "supported: no scrape, no reachability check, no note, no GPU JSONL"),
    aiperf(Group::UI, &["--ui-type", "--ui"], &[("ui_type", Any)], "supported: `dashboard` draws the live dashboard on a terminal (docs/dashboard.md), `simple` a progress bar (the default on a terminal); without a terminal both print a plain line every 5 s; `none` shows no progress (notes such as the mock's address still go to stderr)"),
    aiperf(Group::Workers, &["--workers-max", "--max-workers"], &[("workers_max", Resolved("config/resolve.rs"))], "supported"),
    rejected(Group::ZMQCommunication, &["--zmq-host"], "rejected (not yet)"),
    rejected(Group::ZMQCommunication, &["--zmq-ipc-path"], "rejected (not yet)"),
    rejected(Group::ZMQCommunication, &["--zmq-dual-bind"], "rejected (not yet)"),
    rejected(Group::Accuracy, &["--accuracy-benchmark"], "rejected (not yet)"),
    rejected(Group::Accuracy, &["--accuracy-tasks"], "rejected (not yet)"),
    rejected(Group::Accuracy, &["--accuracy-n-shots"], "rejected (not yet)"),
    rejected(Group::Accuracy, &["--accuracy-enable-cot", "--accuracy-no-enable-cot"], "rejected (not yet)"),
    rejected(Group::Accuracy, &["--accuracy-grader"], "rejected (not yet)"),
    rejected(Group::Accuracy, &["--accuracy-system-prompt"], "rejected (not yet)"),
    rejected(Group::Accuracy, &["--accuracy-verbose"], "rejected (not yet)"),
    // Multi-run
    aiperf(Group::MultiRun, &["--num-profile-runs"], &[("num_profile_runs", Resolved("config/multi_run.rs"))], "supported: 1–10 (default 1); over 1, each run goes into `<artifact-dir>/profile_runs/run_NNNN/` and the aggregate into `<artifact-dir>/aggregate/` ([output-formats.md](output-formats.md#repeated-runs---num-profile-runs)); another value is refused (exit 2). Not with `--shard-count` over 1"),
    aiperf(Group::MultiRun, &["--profile-run-cooldown-seconds"], &[("profile_run_cooldown_seconds", MultiRun)], "supported: pause between runs (default 0; ≥ 0); a signal during the pause ends the sequence; refused with a single run, as AIPerf"),
    aiperf(Group::MultiRun, &["--confidence-level"], &[("confidence_level", MultiRunInterval)], "supported: strictly between 0 and 1 (default 0.95), else refused (exit 2); warned with a single run"),
    aiperf(Group::MultiRun, &["--profile-run-disable-warmup-after-first", "--no-profile-run-disable-warmup-after-first"], &[("disable_warmup_after_first", MultiRun), ("warmup_every_run", MultiRun)], "supported: by default only the first run has the warmup phase; the `--no-` form keeps it in every run; either form is refused with a single run, as AIPerf"),
    aiperf(Group::MultiRun, &["--set-consistent-seed", "--no-set-consistent-seed"], &[("set_consistent_seed", MultiRun), ("no_consistent_seed", MultiRun)], "supported: by default a repeated run without `--random-seed` uses seed 42 (every run sends the same workload); the `--no-` form leaves each run its own drawn seed; either form is refused with a single run, as AIPerf"),
    aiperf(Group::MultiRun, &["--vary-seed-per-trial", "--no-vary-seed-per-trial"], &[("vary_seed_per_trial", Resolved("sweep/plan.rs")), ("no_vary_seed_per_trial", Resolved("sweep/plan.rs"))], "supported: in a sweep, each trial of a variation gets its own seed, AIPerf's SHA-256 derivation ([sweeps.md](sweeps.md#seeds)); warned without a sweep (AIPerf accepts it; it changes nothing)"),
    aiperf(Group::MultiRun, &["--convergence-metric"], &[("convergence_metric", Resolved("sweep/plan.rs"))], "supported: with `--num-profile-runs` over 1 (refused otherwise, AIPerf's message), trials stop once the metric's statistic is stable, judged from the third trial; `--num-profile-runs` is the cap ([sweeps.md](sweeps.md#adaptive-convergence)); with or without a sweep"),
    aiperf(Group::MultiRun, &["--convergence-stat"], &[("convergence_stat", Resolved("sweep/plan.rs"))], "supported: the statistic judged (default `avg`)"),
    aiperf(Group::MultiRun, &["--convergence-threshold"], &[("convergence_threshold", Resolved("sweep/plan.rs"))], "supported: above 0 (default 0.10 for `ci_width`, 0.05 for `cv` and `distribution`)"),
    aiperf(Group::MultiRun, &["--convergence-mode"], &[("convergence_mode", Resolved("sweep/plan.rs"))], "supported: `ci_width` (default), `cv`, `distribution` (a two-sample KS test of the last trial's per-request values against the earlier trials' pooled, p-value above the threshold; refused with `--export-level summary`, AIPerf's message)"),
    aiperf(Group::MultiRun, &["--parameter-sweep-cooldown-seconds"], &[("parameter_sweep_cooldown_seconds", Resolved("sweep/plan.rs"))], "supported: pause between variations (default 0; ≥ 0); a signal during the pause ends the sweep"),
    aiperf(Group::MultiRun, &["--parameter-sweep-same-seed", "--no-parameter-sweep-same-seed"], &[("parameter_sweep_same_seed", Resolved("sweep/plan.rs")), ("no_parameter_sweep_same_seed", Resolved("sweep/plan.rs"))], "supported: every variation uses the seed (default: seed + the variation's index)"),
    aiperf(Group::MultiRun, &["--parameter-sweep-mode"], &[("parameter_sweep_mode", Resolved("sweep/plan.rs"))], "supported: `repeated` (default: trials outside, variations inside) or `independent` ([sweeps.md](sweeps.md#loop-order-and-directories))"),
    // Sweeps (docs/sweeps.md): checked where the plan is built
    aiperf(Group::MultiRun, &["--sweep-type"], &[("sweep_type", Resolved("sweep/plan.rs"))], "supported: `grid` (default) or `zip` (lists of equal length, else refused with AIPerf's message)"),
    aiperf(Group::MultiRun, &["--no-sweep-table"], &[("no_sweep_table", Resolved("sweep/plan.rs"))], "supported: no sweep table (also left out when stdout is not a terminal, with the dashboard, or for one variation)"),
    aiperf(Group::MultiRun, &["--search-space"], &[("search_space", Resolved("search/config.rs"))], "supported: `PATH:LO,HI[:KIND]` (KIND `int` or `real`), repeatable; needs `--search-metric`, `--search-direction`, `--search-max-iterations`; PATH `phases.profiling.concurrency`, `datasets.main.prompts.isl` / `.osl` ([search.md](search.md))"),
    aiperf(Group::MultiRun, &["--search-metric"], &[("search_metric", Resolved("search/config.rs"))], "supported: the objective's metric tag ([search.md](search.md))"),
    aiperf(Group::MultiRun, &["--search-stat"], &[("search_stat", Resolved("search/config.rs"))], "supported: avg (default), p50, p90, p95, p99"),
    aiperf(Group::MultiRun, &["--search-direction"], &[("search_direction", Resolved("search/config.rs"))], "supported: maximize, minimize"),
    aiperf(Group::MultiRun, &["--search-max-iterations"], &[("search_max_iterations", Resolved("search/config.rs"))], "supported: 2–200 (default 30); tunes a recipe's adaptive search, refused with a grid recipe"),
    aiperf(Group::MultiRun, &["--search-initial-points"], &[("search_initial_points", Resolved("search/config.rs"))], "supported: Bayesian start-up points (default 5), at least 1"),
    aiperf(Group::MultiRun, &["--search-random-seed"], &[("search_random_seed", Resolved("search/config.rs"))], "supported: seed of the planner's own draws"),
    aiperf(Group::MultiRun, &["--search-planner"], &[("search_planner", Resolved("search/config.rs"))], "supported: bayesian (ringperf's own Gaussian process), monotonic_sla, smooth_isotonic (a simpler equivalent, [search.md](search.md)); optuna with `--optuna-sampler gp` (the GP) or `tpe` (ringperf's own TPE); without a sampler, tpe with a warning (AIPerf's fallback when BoTorch is missing)"),
    aiperf(Group::MultiRun, &["--optuna-sampler"], &[("optuna_sampler", Resolved("search/config.rs"))], "supported: gp (ringperf's GP), tpe (ringperf's Tree-structured Parzen Estimator); botorch refused (Python only)"),
    aiperf(Group::MultiRun, &["--optuna-acquisition"], &[("optuna_acquisition", Resolved("search/config.rs"))], "supported: refused with the reason (BoTorch acquisitions are Python only)"),
    aiperf(Group::MultiRun, &["--optuna-terminator"], &[("optuna_terminator", Resolved("search/config.rs"))], "supported: none; regret and emmr refused (Python only)"),
    aiperf(Group::MultiRun, &["--search-percentile-pooling"], &[("search_percentile_pooling", Resolved("search/config.rs"))], "supported: mean; pooled refused"),
    aiperf(Group::MultiRun, &["--bo-constraint-mode"], &[("bo_constraint_mode", Resolved("search/config.rs"))], "supported: accepted and ignored with a warning, as AIPerf 0.13 (the GP always uses constrained expected improvement)"),
    aiperf(Group::MultiRun, &["--variant", "--sweep-variant"], &[("variants", Resolved("sweep/plan.rs"))], "supported: repeatable `[name:] key=value, ...`, one variation each (at least two; not beside list values), as AIPerf's scenario sweep"),
    aiperf(Group::MultiRun, &["--search-sla"], &[("search_sla", Resolved("search/config.rs"))], "supported: `TAG:STAT:OP:THRESHOLD`, repeatable, with `--search-recipe` or `--search-space` ([search.md](search.md)), and on a plain sweep, where it marks the sweep aggregate's feasible variations (AIPerf ignores it there; [sweeps.md](sweeps.md)); a warning on a single run"),
    aiperf(Group::MultiRun, &["--search-sla-tier"], &[("search_sla_tier", Resolved("search/config.rs"))], "supported: `[LABEL:]FILTER[,FILTER...]`, 2 to 10 tiers with unique labels, on an adaptive search over one int dimension (`--search-space`): AIPerf's multi-tier planner finds each tier's highest concurrency, `tier_results` / `tier_metadata` in `search_history.json` and one answer line per tier ([search.md](search.md#slo-tiers---search-sla-tier)); ignored with a warning on a grid search (as AIPerf ignores it), refused without a search"),
    // SLO search (docs/search.md): checked where the search is built
    aiperf(Group::MultiRun, &["--search-recipe"], &[("search_recipe", Resolved("search/config.rs"))], "supported: AIPerf's 8 built-in recipes ([search.md](search.md))"),
    aiperf(Group::MultiRun, &["--ttft-sla-ms"], &[("ttft_sla_ms", Resolved("search/config.rs"))], "supported: > 0 (p95 TTFT filter)"),
    aiperf(Group::MultiRun, &["--isl-osl-pairs"], &[("isl_osl_pairs", Resolved("search/config.rs"))], "supported: `ISL/OSL,...` for `pareto-sweep`"),
    aiperf(Group::MultiRun, &["--itl-sla-ms"], &[("itl_sla_ms", Resolved("search/config.rs"))], "supported: > 0 (p95 ITL filter; alias of `--tpot-sla-ms`)"),
    aiperf(Group::MultiRun, &["--tpot-sla-ms"], &[("tpot_sla_ms", Resolved("search/config.rs"))], "supported: > 0 (the same SLA as `--itl-sla-ms`; different values refused)"),
    aiperf(Group::MultiRun, &["--e2e-sla-ms"], &[("e2e_sla_ms", Resolved("search/config.rs"))], "supported: > 0 (p99 request latency filter)"),
    aiperf(Group::MultiRun, &["--error-rate-sla"], &[("error_rate_sla", Resolved("search/config.rs"))], "supported: in (0, 1) (average error rate filter, in %)"),
    aiperf(Group::MultiRun, &["--slo-attainment-fraction"], &[("slo_attainment_fraction", Resolved("search/config.rs"))], "supported: in (0, 1], default 0.95 (`max-goodput-under-slo`)"),
    aiperf(Group::MultiRun, &["--search-style"], &[("search_style", Resolved("search/config.rs"))], "supported: smooth_isotonic (default), monotonic, bo, grid; optuna refused"),
    aiperf(Group::MultiRun, &["--degradation-threshold"], &[("degradation_threshold", Resolved("search/config.rs"))], "supported: in (0, 1), default 0.20 (`concurrency-ramp`)"),
    aiperf(Group::MultiRun, &["--degradation-metric-tag"], &[("degradation_metric_tag", Resolved("search/config.rs"))], "supported: default request_latency (`concurrency-ramp`)"),
    aiperf(Group::MultiRun, &["--degradation-stat"], &[("degradation_stat", Resolved("search/config.rs"))], "supported: avg, p50, p90, p95, p99 (default p99)"),
    aiperf(Group::MultiRun, &["--isl-min"], &[("isl_min", Resolved("search/config.rs"))], "supported: ≥ 1 (default 256, `prefill-ttft-curve`)"),
    aiperf(Group::MultiRun, &["--isl-max"], &[("isl_max", Resolved("search/config.rs"))], "supported: ≥ 1 (default 32768)"),
    aiperf(Group::MultiRun, &["--isl-steps"], &[("isl_steps", Resolved("search/config.rs"))], "supported: ≥ 2 (default 8)"),
    aiperf(Group::MultiRun, &["--concurrency-min"], &[("concurrency_min", Resolved("search/config.rs"))], "supported: ≥ 1 (default 1)"),
    aiperf(Group::MultiRun, &["--concurrency-max"], &[("concurrency_max", Resolved("search/config.rs"))], "supported: ≥ 1 (default 1000; 200 for `decode-itl-curve`); min ≥ max refused"),
    aiperf(Group::MultiRun, &["--concurrency-steps"], &[("concurrency_steps", Resolved("search/config.rs"))], "supported: ≥ 2 (default 8; 6 for `decode-itl-curve`)"),
    aiperf(Group::MultiRun, &["--osl-min"], &[("osl_min", Resolved("search/config.rs"))], "supported: ≥ 1 (default 64, `decode-itl-curve`)"),
    aiperf(Group::MultiRun, &["--osl-max"], &[("osl_max", Resolved("search/config.rs"))], "supported: ≥ 1 (default 1024)"),
    aiperf(Group::MultiRun, &["--osl-steps"], &[("osl_steps", Resolved("search/config.rs"))], "supported: ≥ 2 (default 4)"),
    // ringperf's own
    own(Group::Ringperf, &["--io-driver"], &[("io_driver", Any)]),
    own(Group::Ringperf, &["--timestamps"], &[("timestamps", Any)]),
    own(Group::Ringperf, &["--batch-wakeups-us"], &[("batch_wakeups_us", KernelStamps)]),
    own(Group::Ringperf, &["--mock"], &[("mock", Any)]),
    own(Group::Ringperf, &["--max-client-lag-us"], &[("max_client_lag_us", Any)]),
    own(Group::Ringperf, &["--mock-ttft-ms"], &[("mock_ttft_ms", Mock)]),
    own(Group::Ringperf, &["--mock-itl-ms"], &[("mock_itl_ms", Mock)]),
    own(Group::Ringperf, &["--mock-max-model-len"], &[("mock_max_model_len", Mock)]),
    own(Group::Ringperf, &["--mock-output-tokens"], &[("mock_output_tokens", Mock)]),
    own(Group::Ringperf, &["--mock-tokens-per-event"], &[("mock_tokens_per_event", Mock)]),
    own(Group::Ringperf, &["--mock-reasoning-tokens"], &[("mock_reasoning_tokens", Mock)]),
    own(Group::Ringperf, &["--mock-threads"], &[("mock_threads", Mock)]),
    own(Group::Ringperf, &["--mock-faults"], &[("mock_faults", Mock)]),
    own(Group::Ringperf, &["--mock-capacity"], &[("mock_capacity", Mock)]),
    own(Group::ScaleOut, &["--shard-index"], &[("shard_index", Resolved("config/shard.rs"))]),
    own(Group::ScaleOut, &["--shard-count"], &[("shard_count", Resolved("config/shard.rs"))]),
    own(Group::ScaleOut, &["--start-at"], &[("start_at", Resolved("config/shard.rs"))]),
];

/// Whether `name` (with its dashes, no `=value`) spells an AIPerf `profile` flag, implemented or
/// not.
pub fn is_aiperf_flag(name: &str) -> bool {
    FLAGS
        .iter()
        .any(|f| f.is_aiperf() && f.names.contains(&name))
}

/// The row whose value sits at the AIPerf config path `path` (`endpoint.transport`), for a
/// text flag ([`Flag::text_at`]).
pub fn at_path(path: &str) -> Option<&'static Flag> {
    FLAGS.iter().find(|f| f.text_at == Some(path))
}

/// The implemented text flags with their config path and clap id.
pub fn text_flags() -> impl Iterator<Item = (&'static str, &'static str)> {
    FLAGS.iter().filter_map(|f| match (f.text_at, f.ids()) {
        (Some(path), [(id, _)]) => Some((path, *id)),
        _ => None,
    })
}

/// Every clap id of `profile` with where it acts, in the table's order.
pub fn scopes() -> impl Iterator<Item = (&'static str, Scope)> {
    FLAGS.iter().flat_map(|f| f.ids().iter().copied())
}

/// The flags AIPerf sweeps over when given a comma-separated list.
pub fn sweepable() -> impl Iterator<Item = (&'static Flag, Sweep)> {
    FLAGS.iter().filter_map(|f| f.sweep.map(|s| (f, s)))
}

/// One row of docs/flags.md: `| `--a`, `--b` | cell |`.
fn doc_row(f: &Flag) -> String {
    let names: Vec<String> = f.names.iter().map(|n| format!("`{n}`")).collect();
    format!("| {} | {} |", names.join(", "), f.doc)
}

/// `doc` (docs/flags.md) with the rows of each AIPerf group's table replaced by the table's: the
/// lines starting with `` | ` `` that follow the group's `## ` heading and its table header.
/// The prose around them is kept as written.
pub fn render_doc(doc: &str) -> String {
    let mut out = String::with_capacity(doc.len());
    let mut group: Option<Group> = None;
    let mut written = false;
    for line in doc.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            group = AIPERF_GROUPS.iter().copied().find(|g| g.title() == title);
            written = false;
        }
        match group {
            Some(g) if line.starts_with("| `") => {
                if !written {
                    for f in FLAGS.iter().filter(|f| f.group == g && f.is_aiperf()) {
                        out.push_str(&doc_row(f));
                        out.push('\n');
                    }
                    written = true;
                }
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use clap::CommandFactory;

    use super::*;
    use crate::cli::Cli;

    /// clap's view of `profile`: id → every spelling.
    fn clap_args() -> BTreeMap<String, BTreeSet<String>> {
        let cmd = Cli::command();
        let profile = cmd.find_subcommand("profile").expect("profile");
        profile
            .get_arguments()
            .map(|a| {
                let mut names = BTreeSet::new();
                names.extend(a.get_long().map(|l| format!("--{l}")));
                for l in a.get_all_aliases().into_iter().flatten() {
                    names.insert(format!("--{l}"));
                }
                names.extend(a.get_short().map(|c| format!("-{c}")));
                for c in a.get_all_short_aliases().into_iter().flatten() {
                    names.insert(format!("-{c}"));
                }
                (a.get_id().to_string(), names)
            })
            .collect()
    }

    /// A flag cannot be added to clap without a row, nor a row name an id or a spelling clap
    /// does not have: the table's ids are clap's, once each, with exactly clap's spellings.
    #[test]
    fn the_table_is_claps_profile_arguments() {
        let clap = clap_args();
        assert!(clap.len() > 200, "clap lists the flags ({})", clap.len());
        let mut seen = BTreeSet::new();
        for f in FLAGS {
            let mut spelled = BTreeSet::new();
            for (id, _) in f.ids() {
                let names = clap
                    .get(*id)
                    .unwrap_or_else(|| panic!("{id} ({:?}) is not a clap argument", f.names));
                assert!(seen.insert(*id), "{id} has two rows");
                spelled.extend(names.iter().cloned());
            }
            if !f.ids().is_empty() {
                // AIPerf's spellings the parser reads under another name (`-vv`) are the row's
                // but not clap's.
                let row: BTreeSet<String> = (f.names.iter())
                    .filter(|n| !crate::cli::parse::respellings().any(|r| r == **n))
                    .map(|n| n.to_string())
                    .collect();
                assert_eq!(
                    row, spelled,
                    "the row of {} spells what clap does",
                    f.names[0]
                );
            }
        }
        let missing: Vec<&String> = clap
            .keys()
            .filter(|id| !seen.contains(id.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "clap arguments without a row: {missing:?}"
        );
    }

    /// A rejected AIPerf flag is one clap does not know (clap would take it otherwise), and no
    /// spelling is in two rows.
    #[test]
    fn rejected_flags_are_unknown_to_clap_and_spellings_are_unique() {
        let known: BTreeSet<String> = clap_args().into_values().flatten().collect();
        let mut all = BTreeSet::new();
        for f in FLAGS {
            for n in f.names {
                assert!(all.insert(*n), "{n} is in two rows");
                if f.acts == Acts::Rejected {
                    assert!(!known.contains(*n), "{n} is rejected but clap defines it");
                }
            }
            assert_eq!(
                f.is_aiperf(),
                !f.doc.is_empty(),
                "{}: AIPerf rows have a doc cell",
                f.names[0]
            );
            if f.acts == Acts::Rejected {
                assert!(f.doc.starts_with("rejected"), "{}", f.names[0]);
            } else if f.is_aiperf() {
                assert!(f.doc.starts_with("supported"), "{}", f.names[0]);
            }
        }
        // AIPerf 0.13's `profile` has 264 flags (321 spellings); the table keeps all of them.
        assert_eq!(FLAGS.iter().filter(|f| f.is_aiperf()).count(), 264);
        let spellings = FLAGS
            .iter()
            .filter(|f| f.is_aiperf())
            .map(|f| f.names.len())
            .sum::<usize>();
        assert_eq!(spellings, 321);
        for (f, _) in sweepable() {
            assert!(
                f.names.iter().all(|n| n.starts_with("--")),
                "{:?}: long names only",
                f.names
            );
        }
        assert!(
            is_aiperf_flag("--transport-type") && is_aiperf_flag("-m") && !is_aiperf_flag("--mock")
        );
    }

    /// docs/flags.md's tables are the table's rendering. `RINGPERF_WRITE_DOCS=1` rewrites the
    /// file instead of failing.
    #[test]
    fn flags_doc_is_the_tables_rendering() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/flags.md");
        let doc = std::fs::read_to_string(path).expect("docs/flags.md");
        let rendered = render_doc(&doc);
        if std::env::var_os("RINGPERF_WRITE_DOCS").is_some() {
            std::fs::write(path, &rendered).expect("write docs/flags.md");
            return;
        }
        if rendered != doc {
            let first = doc
                .lines()
                .zip(rendered.lines())
                .find(|(a, b)| a != b)
                .map(|(a, b)| format!("docs:  {a}\ntable: {b}"))
                .unwrap_or_else(|| "the files differ in length".to_owned());
            panic!(
                "docs/flags.md is not the flag table's rendering \
                 (RINGPERF_WRITE_DOCS=1 cargo test -p ringperf --lib flags_doc rewrites it):\n{first}"
            );
        }
        // Every AIPerf group has its section, so every AIPerf flag has its row.
        for g in AIPERF_GROUPS {
            assert!(
                doc.contains(&format!("\n## {}\n", g.title())),
                "no section {}",
                g.title()
            );
        }
    }
}
