//! No silent ignores: where each `ringperf profile` flag acts, and what a flag given where it
//! does not act gets (docs/flags.md, "Flags per mode").
//!
//! [`SCOPES`] has one row per clap argument of `profile`: its [`Scope`], the modes in which it
//! changes the run. [`check`] reads the row of every flag given on the command line against the
//! [`Mode`] the run resolved to: a combination AIPerf 0.13 refuses is refused (a flag error,
//! exit code 2) with a sentence that says what AIPerf's says; one AIPerf accepts but that would
//! change nothing gets one warning line. A flag whose combinations are checked where its value
//! is resolved has the scope [`Scope::Resolved`], naming that module. A test walks clap's
//! definition so that a new flag cannot be added without a row.

use clap::CommandFactory;

use super::ConfigError;
use crate::cli::Cli;
use ringperf_wire::endpoint::EndpointKind;
use ringperf_workload::workload::loader::DatasetKind;

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
}

/// Every clap argument id of `ringperf profile` and where it acts.
pub const SCOPES: &[(&str, Scope)] = &[
    // Endpoint
    ("model_names", Scope::Any),
    ("custom_endpoint", Scope::Any),
    ("endpoint_type", Scope::Resolved("config/resolve.rs")),
    ("streaming", Scope::StreamingEndpoint),
    ("url", Scope::NotMock),
    ("url_strategy", Scope::Any),
    ("request_timeout_seconds", Scope::Any),
    ("api_key", Scope::Any),
    ("use_legacy_max_tokens", Scope::ChatOnly),
    ("use_server_token_count", Scope::Any),
    ("connection_reuse_strategy", Scope::Any),
    // Server lifecycle (docs/integrations.md): the mode and interval without a timeout are
    // warned in config/lab.rs.
    ("wait_for_model_timeout", Scope::Any),
    ("wait_for_model_mode", Scope::Resolved("config/lab.rs")),
    ("wait_for_model_interval", Scope::Resolved("config/lab.rs")),
    ("reset_kv_cache", Scope::Any),
    ("reset_kv_cache_timeout_seconds", Scope::Any),
    ("reset_kv_cache_path", Scope::Any),
    ("server_profiler", Scope::Any),
    ("server_profiler_timeout_seconds", Scope::Any),
    ("server_profiler_start_path", Scope::Any),
    ("server_profiler_stop_path", Scope::Any),
    // MLflow: the companions without a tracking URI are warned in config/lab.rs.
    ("mlflow_tracking_uri", Scope::Any),
    ("mlflow_experiment", Scope::Resolved("config/lab.rs")),
    ("mlflow_run_name", Scope::Resolved("config/lab.rs")),
    ("mlflow_tag", Scope::Resolved("config/lab.rs")),
    ("mlflow_parent_run_id", Scope::Resolved("config/lab.rs")),
    ("mlflow_artifact_glob", Scope::Resolved("config/lab.rs")),
    // W&B: the companions without a project are warned in config/lab.rs.
    ("wandb_project", Scope::Any),
    ("wandb_entity", Scope::Resolved("config/lab.rs")),
    ("wandb_run_name", Scope::Resolved("config/lab.rs")),
    ("wandb_tag", Scope::Resolved("config/lab.rs")),
    // OpenTelemetry: the companions without --otel-url are refused in config/lab.rs.
    ("otel_url", Scope::Any),
    ("stream", Scope::Resolved("config/lab.rs")),
    ("otel_resource_attributes", Scope::Resolved("config/lab.rs")),
    ("gen_ai_provider", Scope::Resolved("config/lab.rs")),
    // Per-chunk usage, outputs.json, a required report: checked in config/outputs.rs.
    ("per_chunk_usage", Scope::Resolved("config/outputs.rs")),
    ("export_outputs_json", Scope::Resolved("config/outputs.rs")),
    ("plot_required", Scope::Resolved("config/outputs.rs")),
    // Input
    ("extra_inputs", Scope::Resolved("config/template.rs")),
    ("header", Scope::Any),
    ("random_seed", Scope::Any),
    ("input_file", Scope::Resolved("config/dataset.rs")),
    ("custom_dataset_type", Scope::Resolved("config/dataset.rs")),
    ("public_dataset", Scope::Resolved("config/dataset.rs")),
    ("dataset_sampling_strategy", Scope::Any),
    (
        "allow_dataset_wrap",
        Scope::Inert("it only lets AIPerf's agentic (weka) replay reuse traces"),
    ),
    (
        "no_allow_dataset_wrap",
        Scope::Inert("it only concerns AIPerf's agentic (weka) replay"),
    ),
    ("ignore_trace_delays", Scope::TraceDelays),
    ("block_size", Scope::HashTrace),
    ("speedup_ratio", Scope::Resolved("config/dataset.rs")),
    (
        "prefix_len_multiplier",
        Scope::Resolved("config/dataset.rs"),
    ),
    (
        "prefix_root_multiplier",
        Scope::Resolved("config/dataset.rs"),
    ),
    (
        "prompt_len_multiplier",
        Scope::Resolved("config/dataset.rs"),
    ),
    (
        "output_len_multiplier",
        Scope::Resolved("config/dataset.rs"),
    ),
    ("max_isl", Scope::Resolved("config/dataset.rs")),
    ("max_osl", Scope::Resolved("config/dataset.rs")),
    // Output
    ("artifact_dir", Scope::Any),
    ("profile_export_prefix", Scope::Any),
    ("slice_duration", Scope::Any),
    ("auto_plot", Scope::Any),
    ("no_auto_plot", Scope::Any),
    ("export_level", Scope::Any),
    ("export_http_trace", Scope::RecordsFile),
    ("show_trace_timing", Scope::Any),
    ("tokenizer", Scope::Any),
    // Tokenizer: with the builtin tokenizer, a revision or a chat template is warned in
    // config/resolve.rs; a Python-only tokenizer is refused where it is loaded.
    ("tokenizer_revision", Scope::Resolved("config/resolve.rs")),
    ("trust_remote_code", Scope::Any),
    ("apply_chat_template", Scope::Resolved("config/resolve.rs")),
    // Load generator and warmup
    ("benchmark_duration", Scope::Resolved("config/mod.rs")),
    (
        "benchmark_grace_period",
        Scope::Resolved("config/resolve.rs"),
    ),
    ("concurrency", Scope::Resolved("config/mod.rs")),
    ("request_rate", Scope::Resolved("config/timing.rs")),
    ("arrival_pattern", Scope::ArrivalPattern),
    ("arrival_smoothness", Scope::Resolved("config/timing.rs")),
    ("request_count", Scope::Resolved("config/mod.rs")),
    ("failed_request_threshold", Scope::Any),
    ("warmup_request_count", Scope::Resolved("config/mod.rs")),
    ("warmup_duration", Scope::Resolved("config/mod.rs")),
    ("num_warmup_sessions", Scope::Resolved("config/mod.rs")),
    ("warmup_concurrency", Scope::Resolved("config/mod.rs")),
    ("warmup_request_rate", Scope::Resolved("config/mod.rs")),
    ("warmup_arrival_pattern", Scope::Resolved("config/mod.rs")),
    ("warmup_grace_period", Scope::Resolved("config/mod.rs")),
    ("num_dataset_entries", Scope::Entries),
    // Synthetic prompts
    ("isl_mean", Scope::Synthetic),
    ("isl_stddev", Scope::Synthetic),
    ("osl_mean", Scope::GeneratesTokens),
    ("osl_stddev", Scope::GeneratesTokens),
    ("conversation_num", Scope::Any),
    ("conversation_turn_mean", Scope::Synthetic),
    ("conversation_turn_stddev", Scope::Synthetic),
    ("conversation_turn_delay_mean", Scope::Synthetic),
    ("conversation_turn_delay_stddev", Scope::Synthetic),
    ("conversation_turn_delay_ratio", Scope::Synthetic),
    ("seq_dist", Scope::Synthetic),
    ("prompt_batch_size", Scope::SyntheticOrPool),
    ("prompt_corpus", Scope::Resolved("config/prompt.rs")),
    ("system_prompt", Scope::Resolved("config/prompt.rs")),
    ("system_prompt_file", Scope::Resolved("config/prompt.rs")),
    ("prompt_prefix_pool_size", Scope::Synthetic),
    ("prompt_prefix_length", Scope::Synthetic),
    ("shared_system_prompt_length", Scope::Synthetic),
    ("user_context_prompt_length", Scope::Synthetic),
    // Ratio windows and cache bust (config/random_prompt.rs)
    ("random_range_ratio", Scope::Synthetic),
    (
        "random_corpus_style",
        Scope::Resolved("config/random_prompt.rs"),
    ),
    ("cache_bust", Scope::Resolved("config/random_prompt.rs")),
    // Timing modes
    ("fixed_schedule", Scope::Resolved("config/timing.rs")),
    ("no_fixed_schedule", Scope::Resolved("config/timing.rs")),
    (
        "fixed_schedule_auto_offset",
        Scope::Resolved("config/timing.rs"),
    ),
    (
        "fixed_schedule_start_offset",
        Scope::Resolved("config/timing.rs"),
    ),
    (
        "fixed_schedule_end_offset",
        Scope::Resolved("config/timing.rs"),
    ),
    ("replay_speedup", Scope::Resolved("config/timing.rs")),
    ("prefill_concurrency", Scope::Streamed),
    ("warmup_prefill_concurrency", Scope::StreamedWarmup),
    ("concurrency_ramp_duration", Scope::ConcurrencyRamp),
    (
        "request_rate_ramp_duration",
        Scope::Resolved("config/timing.rs"),
    ),
    (
        "warmup_concurrency_ramp_duration",
        Scope::Resolved("config/mod.rs"),
    ),
    (
        "warmup_request_rate_ramp_duration",
        Scope::Resolved("config/mod.rs"),
    ),
    // Load shape: the series' combinations are refused, the prefill ramps without a prefill
    // limit (or a warmup) warned, in config/timing.rs.
    ("request_rate_series", Scope::Resolved("config/timing.rs")),
    (
        "prefill_concurrency_ramp_duration",
        Scope::Resolved("config/timing.rs"),
    ),
    (
        "warmup_prefill_concurrency_ramp_duration",
        Scope::Resolved("config/timing.rs"),
    ),
    ("user_centric_rate", Scope::Resolved("config/timing.rs")),
    ("num_users", Scope::Resolved("config/timing.rs")),
    (
        "request_cancellation_rate",
        Scope::Resolved("config/timing.rs"),
    ),
    (
        "request_cancellation_delay",
        Scope::Resolved("config/timing.rs"),
    ),
    // Goodput, rankings
    ("goodput", Scope::Resolved("config/goodput.rs")),
    // Audio, Image and Video Input (synthetic media; docs/multimodal.md)
    ("audio_batch_size", Scope::SyntheticOrPool),
    ("audio_length_mean", Scope::Synthetic),
    ("audio_length_stddev", Scope::Synthetic),
    ("audio_format", Scope::Synthetic),
    ("audio_depths", Scope::Synthetic),
    ("audio_sample_rates", Scope::Synthetic),
    ("audio_num_channels", Scope::Synthetic),
    ("image_width_mean", Scope::Synthetic),
    ("image_width_stddev", Scope::Synthetic),
    ("image_height_mean", Scope::Synthetic),
    ("image_height_stddev", Scope::Synthetic),
    ("image_batch_size", Scope::SyntheticOrPool),
    ("image_format", Scope::Synthetic),
    ("image_source", Scope::Synthetic),
    ("image_source_sampling", Scope::Synthetic),
    ("video_batch_size", Scope::SyntheticOrPool),
    ("video_duration", Scope::Synthetic),
    ("video_fps", Scope::Synthetic),
    ("video_width", Scope::Synthetic),
    ("download_video_content", Scope::VideoJobs),
    ("uuid_and_strip", Scope::Resolved("config/resolve.rs")),
    ("request_content_type", Scope::Resolved("config/form.rs")),
    ("video_height", Scope::Synthetic),
    ("video_synth_type", Scope::Synthetic),
    ("video_format", Scope::Synthetic),
    ("video_codec", Scope::Synthetic),
    ("video_audio_sample_rate", Scope::Synthetic),
    ("video_audio_num_channels", Scope::Synthetic),
    ("video_audio_codec", Scope::Synthetic),
    ("video_audio_depth", Scope::Synthetic),
    ("rankings_passages_mean", Scope::Rankings),
    ("rankings_passages_stddev", Scope::Rankings),
    ("rankings_passages_prompt_token_mean", Scope::Rankings),
    ("rankings_passages_prompt_token_stddev", Scope::Rankings),
    ("rankings_query_prompt_token_mean", Scope::Rankings),
    ("rankings_query_prompt_token_stddev", Scope::Rankings),
    // Service, UI, collectors
    ("log_level", Scope::Any),
    ("verbose", Scope::Any),
    ("server_metrics", Scope::ServerMetricsUrls),
    ("no_server_metrics", Scope::Any),
    ("server_metrics_formats", Scope::ServerMetricsFiles),
    ("gpu_telemetry", Scope::Resolved("config/mod.rs")),
    ("no_gpu_telemetry", Scope::Any),
    ("ui_type", Scope::Any),
    ("workers_max", Scope::Resolved("config/resolve.rs")),
    // Multi-run
    ("num_profile_runs", Scope::Resolved("config/multi_run.rs")),
    ("profile_run_cooldown_seconds", Scope::MultiRun),
    ("confidence_level", Scope::MultiRunInterval),
    ("disable_warmup_after_first", Scope::MultiRun),
    ("warmup_every_run", Scope::MultiRun),
    ("set_consistent_seed", Scope::MultiRun),
    ("no_consistent_seed", Scope::MultiRun),
    // Sweeps (docs/sweeps.md): checked where the plan is built
    ("sweep_type", Scope::Resolved("sweep/plan.rs")),
    ("variants", Scope::Resolved("sweep/plan.rs")),
    ("parameter_sweep_mode", Scope::Resolved("sweep/plan.rs")),
    (
        "parameter_sweep_cooldown_seconds",
        Scope::Resolved("sweep/plan.rs"),
    ),
    (
        "parameter_sweep_same_seed",
        Scope::Resolved("sweep/plan.rs"),
    ),
    (
        "no_parameter_sweep_same_seed",
        Scope::Resolved("sweep/plan.rs"),
    ),
    ("vary_seed_per_trial", Scope::Resolved("sweep/plan.rs")),
    ("no_vary_seed_per_trial", Scope::Resolved("sweep/plan.rs")),
    ("no_sweep_table", Scope::Resolved("sweep/plan.rs")),
    ("convergence_metric", Scope::Resolved("sweep/plan.rs")),
    ("convergence_stat", Scope::Resolved("sweep/plan.rs")),
    ("convergence_threshold", Scope::Resolved("sweep/plan.rs")),
    ("convergence_mode", Scope::Resolved("sweep/plan.rs")),
    // YAML config: replaced by the file's flags before parsing (config/yaml/cmd.rs)
    ("config", Scope::Resolved("config/yaml/cmd.rs")),
    // SLO search (docs/search.md): checked where the search is built
    ("search_recipe", Scope::Resolved("search/config.rs")),
    ("ttft_sla_ms", Scope::Resolved("search/config.rs")),
    ("itl_sla_ms", Scope::Resolved("search/config.rs")),
    ("tpot_sla_ms", Scope::Resolved("search/config.rs")),
    ("e2e_sla_ms", Scope::Resolved("search/config.rs")),
    ("error_rate_sla", Scope::Resolved("search/config.rs")),
    (
        "slo_attainment_fraction",
        Scope::Resolved("search/config.rs"),
    ),
    ("search_sla", Scope::Resolved("search/config.rs")),
    ("search_sla_tier", Scope::Resolved("search/config.rs")),
    ("search_style", Scope::Resolved("search/config.rs")),
    ("concurrency_min", Scope::Resolved("search/config.rs")),
    ("concurrency_max", Scope::Resolved("search/config.rs")),
    ("concurrency_steps", Scope::Resolved("search/config.rs")),
    ("isl_min", Scope::Resolved("search/config.rs")),
    ("isl_max", Scope::Resolved("search/config.rs")),
    ("isl_steps", Scope::Resolved("search/config.rs")),
    ("osl_min", Scope::Resolved("search/config.rs")),
    ("osl_max", Scope::Resolved("search/config.rs")),
    ("osl_steps", Scope::Resolved("search/config.rs")),
    ("isl_osl_pairs", Scope::Resolved("search/config.rs")),
    ("degradation_threshold", Scope::Resolved("search/config.rs")),
    (
        "degradation_metric_tag",
        Scope::Resolved("search/config.rs"),
    ),
    ("degradation_stat", Scope::Resolved("search/config.rs")),
    ("search_space", Scope::Resolved("search/config.rs")),
    ("search_metric", Scope::Resolved("search/config.rs")),
    ("search_stat", Scope::Resolved("search/config.rs")),
    ("search_direction", Scope::Resolved("search/config.rs")),
    ("search_max_iterations", Scope::Resolved("search/config.rs")),
    ("search_initial_points", Scope::Resolved("search/config.rs")),
    ("search_random_seed", Scope::Resolved("search/config.rs")),
    ("search_planner", Scope::Resolved("search/config.rs")),
    (
        "search_percentile_pooling",
        Scope::Resolved("search/config.rs"),
    ),
    ("optuna_sampler", Scope::Resolved("search/config.rs")),
    ("optuna_acquisition", Scope::Resolved("search/config.rs")),
    ("optuna_terminator", Scope::Resolved("search/config.rs")),
    ("bo_constraint_mode", Scope::Resolved("search/config.rs")),
    // Scale-out
    ("shard_index", Scope::Resolved("config/shard.rs")),
    ("shard_count", Scope::Resolved("config/shard.rs")),
    ("start_at", Scope::Resolved("config/shard.rs")),
    // ringperf's own
    ("io_driver", Scope::Any),
    ("timestamps", Scope::Any),
    ("batch_wakeups_us", Scope::KernelStamps),
    ("mock", Scope::Any),
    ("max_client_lag_us", Scope::Any),
    ("mock_ttft_ms", Scope::Mock),
    ("mock_itl_ms", Scope::Mock),
    ("mock_output_tokens", Scope::Mock),
    ("mock_tokens_per_event", Scope::Mock),
    ("mock_reasoning_tokens", Scope::Mock),
    ("mock_threads", Scope::Mock),
    ("mock_faults", Scope::Mock),
    ("mock_capacity", Scope::Mock),
    // Per-request endpoint shaping (issue 26)
    (
        "model_selection_strategy",
        Scope::Resolved("config/requests.rs"),
    ),
    ("session_header", Scope::Resolved("config/requests.rs")),
];

/// Where the prompts come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Synthetic,
    /// `--input-file`, with its `--custom-dataset-type` if given.
    File(Option<DatasetKind>),
    /// `--public-dataset`.
    Public,
}

/// What the run resolved to, as far as [`SCOPES`] needs it.
#[derive(Clone, Copy, Debug)]
pub struct Mode {
    pub endpoint: EndpointKind,
    pub source: Source,
    /// Streaming after the endpoint's say.
    pub streaming: bool,
    pub runs: u32,
    pub server_metrics: bool,
    pub records: bool,
    pub mock: bool,
    pub kernel_stamps: bool,
    pub warmup: bool,
    /// The profiling phase replays a trace's timestamps.
    pub fixed_schedule: bool,
    /// `--arrival-pattern concurrency-burst` beside an open-loop `--request-rate`.
    pub burst_with_rate: bool,
    /// Most requests the profiling phase keeps in flight, when bounded.
    pub max_in_flight: Option<u64>,
}

/// The checks' outcome: the warnings to print, one line each.
pub type Warnings = Vec<String>;

/// Reads the row of every flag `given` (clap ids) against `mode`.
///
/// # Errors
/// The first refused combination, naming the flags (the synthetic-only ones all together).
pub fn check(given: impl Fn(&str) -> bool, mode: &Mode) -> Result<Warnings, ConfigError> {
    let mut warnings = Vec::new();
    let mut synthetic_only = Vec::new();
    for &(id, scope) in SCOPES {
        if !given(id) {
            continue;
        }
        if scope == Scope::Synthetic && mode.source != Source::Synthetic {
            synthetic_only.push(flag_names(id));
            continue;
        }
        match verdict(id, scope, mode) {
            Verdict::Acts => {}
            Verdict::Refused(m) => return Err(ConfigError::flag(m)),
            Verdict::Warned(m) => warnings.push(m),
        }
    }
    if !synthetic_only.is_empty() {
        let (what, verb) = match synthetic_only.len() {
            1 => ("", "shapes"),
            _ => ("each of ", "shape"),
        };
        return Err(ConfigError::flag(format!(
            "{what}{} {verb} synthetic prompts only, and with --input-file or --public-dataset \
             the dataset's records are the prompts (AIPerf refuses this too): remove the \
             flag{}, or drop --input-file / --public-dataset to generate synthetic prompts",
            synthetic_only.join(", "),
            if synthetic_only.len() == 1 { "" } else { "s" }
        )));
    }
    Ok(warnings)
}

enum Verdict {
    Acts,
    Refused(String),
    Warned(String),
}

fn verdict(id: &str, scope: Scope, m: &Mode) -> Verdict {
    let name = || flag_names(id);
    let warn = |why: String| Verdict::Warned(format!("{} has no effect: {why}", name()));
    match scope {
        Scope::Any | Scope::Resolved(_) | Scope::Synthetic => Verdict::Acts,
        Scope::SyntheticOrPool => batch_size(m, &name()),
        Scope::HashTrace => match m.source {
            Source::Synthetic => {
                warn("ringperf's synthetic prompts have no hash ids (only trace files do)".into())
            }
            Source::File(None | Some(DatasetKind::MooncakeTrace)) => Verdict::Acts,
            Source::File(Some(k)) => Verdict::Refused(format!(
                "{} only applies to hash-id traces (mooncake_trace), not to \
                 --custom-dataset-type {} (AIPerf refuses this too); drop the flag",
                name(),
                k.as_str()
            )),
            Source::Public => Verdict::Refused(format!(
                "{} only applies to synthetic prompts or hash-id traces (mooncake_trace), not \
                 to --public-dataset (AIPerf refuses this too); drop the flag",
                name()
            )),
        },
        Scope::Entries => match m.source {
            Source::Synthetic | Source::File(None | Some(DatasetKind::RandomPool)) => Verdict::Acts,
            Source::File(Some(k)) => warn(format!(
                "the records of a {} file are the dataset (only random_pool draws entries)",
                k.as_str()
            )),
            Source::Public => warn(
                "the public dataset's records are the dataset (only random_pool draws entries)"
                    .into(),
            ),
        },
        Scope::TraceDelays => match m.source {
            Source::Synthetic | Source::Public => {
                warn("only an --input-file has timestamps or delays to drop".into())
            }
            Source::File(_) if m.fixed_schedule => warn(
                "under a fixed schedule the trace's timestamps drive the run (as in AIPerf)".into(),
            ),
            Source::File(_) => Verdict::Acts,
        },
        Scope::ArrivalPattern if m.burst_with_rate => warn(
            "concurrency-burst is the closed loop's pattern; with --request-rate the arrivals \
             are Poisson (as in AIPerf)"
                .into(),
        ),
        Scope::StreamingEndpoint if !m.endpoint.descriptor().supports_streaming => warn(format!(
            "--endpoint-type {} cannot stream, so requests are sent without streaming (as \
             AIPerf does)",
            m.endpoint.as_str()
        )),
        Scope::GeneratesTokens if !m.endpoint.descriptor().produces_tokens => warn(format!(
            "--endpoint-type {} generates no tokens and is sent no output limit",
            m.endpoint.as_str()
        )),
        Scope::ChatOnly if m.endpoint != EndpointKind::Chat => warn(format!(
            "only --endpoint-type chat has two names for its output limit, not {}",
            m.endpoint.as_str()
        )),
        Scope::VideoJobs if m.endpoint != EndpointKind::VideoGeneration => warn(format!(
            "only --endpoint-type video-generation produces video content to download, not {}",
            m.endpoint.as_str()
        )),
        Scope::Rankings if !m.endpoint.is_rankings() => warn(format!(
            "it shapes rankings requests, and --endpoint-type {} is not a rankings type",
            m.endpoint.as_str()
        )),
        Scope::MultiRun if m.runs <= 1 => Verdict::Refused(format!(
            "{} only applies to repeated runs (--num-profile-runs over 1), as in AIPerf: drop it \
             or add --num-profile-runs 2 or more",
            name()
        )),
        Scope::MultiRunInterval if m.runs <= 1 => {
            warn("a single run has no confidence interval (--num-profile-runs is 1)".into())
        }
        Scope::ServerMetricsUrls if !m.server_metrics => Verdict::Refused(
            "--server-metrics and --no-server-metrics cannot be used together (AIPerf refuses \
             the pair too): give one or the other"
                .into(),
        ),
        Scope::ServerMetricsFiles if !m.server_metrics => {
            warn("--no-server-metrics collects nothing to write".into())
        }
        Scope::RecordsFile if !m.records => {
            warn("--export-level summary writes no per-request records to hold the trace".into())
        }
        Scope::Streamed if !m.streaming => prefill_needs_streaming(&name()),
        Scope::StreamedWarmup if !m.warmup => warn(
            "there is no warmup phase (--warmup-request-count, --warmup-duration or \
             --num-warmup-sessions starts one)"
                .into(),
        ),
        Scope::StreamedWarmup if !m.streaming => prefill_needs_streaming(&name()),
        Scope::ConcurrencyRamp if m.max_in_flight.is_none_or(|c| c <= 1) => warn(
            "the profiling phase has no concurrency above 1 to ramp to (--concurrency sets one)"
                .into(),
        ),
        Scope::Mock if !m.mock => {
            warn("it shapes the embedded mock's replies, and --mock is not given".into())
        }
        Scope::NotMock if m.mock => {
            warn("with --mock every request goes to the embedded mock server".into())
        }
        Scope::KernelStamps if !m.kernel_stamps => warn(
            "wake-ups are batched only with kernel receive stamps (--timestamps kernel)".into(),
        ),
        Scope::Inert(why) => warn(format!("{why}, which ringperf does not have")),
        _ => Verdict::Acts,
    }
}

fn batch_size(m: &Mode, name: &str) -> Verdict {
    match m.source {
        Source::Synthetic => Verdict::Acts,
        Source::File(Some(DatasetKind::RandomPool)) => Verdict::Acts,
        Source::File(kind) => Verdict::Refused(format!(
            "{name} with --input-file needs --custom-dataset-type random_pool (given: {}), as \
             in AIPerf: set that type, or drop --input-file to generate synthetic prompts",
            kind.map_or("none", DatasetKind::as_str)
        )),
        Source::Public => Verdict::Refused(format!(
            "{name} applies to synthetic prompts or a random_pool --input-file, not to \
             --public-dataset (AIPerf refuses this too)"
        )),
    }
}

fn prefill_needs_streaming(name: &str) -> Verdict {
    Verdict::Refused(format!(
        "{name} needs --streaming (on an endpoint that streams): a prefill slot is given back \
         at the first token, which only a stream reports (AIPerf refuses this too)"
    ))
}

/// The flag's long name and its visible aliases, as `--a/--b`.
pub fn flag_names(id: &str) -> String {
    let cmd = Cli::command();
    let Some(arg) = cmd
        .find_subcommand("profile")
        .and_then(|p| p.get_arguments().find(|a| a.get_id() == id))
    else {
        return id.to_string();
    };
    let mut names: Vec<String> = arg
        .get_long()
        .map(|l| format!("--{l}"))
        .into_iter()
        .collect();
    for a in arg.get_visible_aliases().into_iter().flatten() {
        names.push(format!("--{a}"));
    }
    names.join("/")
}

#[cfg(test)]
mod tests;
