//! [`Config::from_plan`]: the process is read at the edge ([`Environment::from_process`]), then
//! [`Config::resolve`] applies the rules, a function of the plan and that
//! [`Environment`]. It runs one stage per concern — the request (endpoint, URLs, headers,
//! extras), the workload (phases, prompts, dataset, sharding, seed), the run's resources
//! (workers, artifacts, collectors) and the process settings (connection limit, affinity, TLS)
//! — in the order their errors are reported: a command line with several errors shows the
//! first one found.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Map;

use super::environment::Environment;
use super::{
    BaseUrl, Config, ConfigError, ConnectionReuse, DatasetConfig, ExportLevel, Load, MockShape,
    PhaseConfig, ServerMetricsConfig, TlsSettings, UiType, affinity_headers, check_header,
    connections, dataset, echo, err, goodput, gpu_telemetry, json_to_plain, metric_config,
    model_names, multi_run, parse_pairs, profiling_phase, prompt, redact_argv, redact_command,
    scope, secs_or_forever, server_metrics_formats, shard, slice_duration, template, timing,
    tokenizer_for, url, warmup_phase,
};
use crate::cli::{
    ConnectionReuseArg, EndpointTypeArg, ExportLevelArg, LogLevelArg, ProfileArgs, UiTypeArg,
};
use crate::plan::Plan;
use ringperf_wire::endpoint::{Auth, EndpointKind, FieldPath, PayloadTemplate};
use ringperf_workload::workload::loader::{DatasetKind, Source};

impl Config {
    /// Validates `plan`. `is_tty` is whether stdout is a terminal (UI default). Reads the
    /// process's environment, the files the settings name and a fresh seed
    /// ([`Environment::from_process`]), then applies [`Config::resolve`].
    ///
    /// # Errors
    /// The first [`ConfigError`] of the plan.
    pub fn from_plan(plan: &Plan, is_tty: bool) -> Result<Self, ConfigError> {
        Self::resolve(plan, is_tty, &Environment::from_process(&plan.settings))
    }

    /// Validates `plan` against `env`, reading nothing else of the process (but `--url` name
    /// resolution).
    ///
    /// # Errors
    /// The first [`ConfigError`] of the plan.
    pub fn resolve(plan: &Plan, is_tty: bool, env: &Environment) -> Result<Self, ConfigError> {
        // `--scenario`: its locked settings are filled in before anything reads them.
        let loader = super::scenario::loader_of(&plan.settings, env.detected_kind);
        let scenario = super::scenario::apply(plan, &loader, env.drawn_seed)?;
        let (plan, scenario) = match scenario {
            Some((p, o)) => (std::borrow::Cow::Owned(p), Some(o)),
            None => (std::borrow::Cow::Borrowed(plan), None),
        };
        let plan: &Plan = &plan;
        let args = &plan.settings;
        let argv = &plan.command;
        let mut echo = echo::Echo::new(plan, is_tty);
        if echo.given("benchmark_grace_period") && args.benchmark_duration.is_none() {
            return err(
                "--benchmark-grace-period requires --benchmark-duration: the grace period only \
                 applies after a duration-bounded run (drop it or add --benchmark-duration)",
            );
        }
        let endpoint = endpoint_kind(args.endpoint_type)?;
        let Target {
            models,
            streaming,
            path,
            urls,
        } = target(args, endpoint)?;
        let Headers { headers, secrets } = headers(args, endpoint)?;
        let Extras {
            extra_inputs,
            payload_template,
            response_field,
            template_echo,
        } = extras(args, endpoint, env)?;
        let Workload {
            profiling,
            warmup,
            more_warmups,
            prompt,
            dataset,
            input,
            shard,
            multi_run,
            seed,
            seed_given,
        } = workload(
            args,
            &plan.file_only,
            endpoint,
            env,
            echo.given("benchmark_grace_period"),
        )?;
        let phases_after = later_phases(&plan.file_only, args, &input, &profiling)?;
        let random_prompt = super::random_prompt::from_args(
            &args.random_prompt,
            &super::random_prompt::Context {
                isl_given: echo.given("isl_mean"),
                osl_given: echo.given("osl_mean"),
                isl_stddev: args.isl_stddev,
                osl_stddev: args.osl_stddev,
                seq_dist: prompt.shaping.seq_dist.is_some(),
                isl_mean: args.isl_mean,
                prefix_length: prompt.shaping.prefix.as_ref().map_or(0, |p| p.length),
                system_message: prompt.shaping.system_prompt.is_some()
                    || prompt.shaping.shared_system_length.is_some(),
                synthetic: input.load.is_none(),
                endpoint,
            },
        )?;
        let mut profiling = profiling;
        // Agentic replay wins over adaptive scale, as AIPerf 0.13 picks its strategy by the
        // explicit `timing_mode`: the adaptive keys are read, echoed and unused.
        let agentic = matches!(profiling.timing.mode, timing::Mode::Agentic(_));
        if let Some(a) = plan
            .file_only
            .profiling_adaptive
            .as_ref()
            .filter(|a| a.runs() && !agentic)
        {
            let name = plan
                .file_only
                .profiling_name
                .as_deref()
                .unwrap_or("profiling");
            let path = format!("benchmark.phases.{name}");
            profiling.timing.adaptive = Some(super::adaptive_settings(
                a,
                (
                    &profiling.load,
                    &profiling.timing.mode,
                    profiling.timing.prefill_concurrency,
                ),
                &path,
            )?);
        }
        let workers = workers(args.workers_max, &shard, &profiling, env.cores)?;
        let artifact_dir = artifact_dir(args, &models, endpoint, &profiling)?;
        let api = super::api::resolve(args.api_port, args.api_host.as_deref(), |k| env.var(k))?;
        // Echoed whether given or not, absolute, as AIPerf's `input_config.artifacts.dir`.
        echo.set_artifact_dir(&artifact_dir);
        let server_metrics = server_metrics(args)?;
        let gpu_telemetry = gpu_telemetry(args.gpu_telemetry.as_deref(), args.no_gpu_telemetry)?;
        let slice_duration = slice_duration(args.slice_duration)?;
        let goodput = goodput::parse(
            args.goodput.goodput.as_deref(),
            &metric_config(endpoint, streaming, args.use_server_token_count),
        )?;
        let warnings = scope::check(
            |id| echo.given(id),
            &scope::Mode {
                endpoint,
                source: match &input.load {
                    None => scope::Source::Synthetic,
                    Some(l) => match l.source {
                        Source::File { kind, .. } => scope::Source::File(kind),
                        Source::Inline { kind, .. } => scope::Source::File(Some(kind.unwrap_or(
                            ringperf_workload::workload::loader::DatasetKind::SingleTurn,
                        ))),
                        Source::ShareGpt { .. } | Source::WekaHub { .. } => scope::Source::Public,
                    },
                },
                streaming,
                runs: multi_run.runs,
                server_metrics: server_metrics.enabled,
                records: ExportLevel::from(args.export_level).records(),
                mock: args.mock,
                kernel_stamps: args.timestamps == crate::cli::TimestampsArg::Kernel,
                warmup: warmup.is_some(),
                fixed_schedule: matches!(profiling.timing.mode, timing::Mode::FixedSchedule(_)),
                burst_with_rate: args.arrival_pattern
                    == Some(crate::cli::ArrivalPatternArg::ConcurrencyBurst)
                    && matches!(profiling.load, Load::Rate { .. }),
                max_in_flight: profiling.load.max_in_flight(),
                agentic: matches!(profiling.timing.mode, timing::Mode::Agentic(_)),
                file: plan.file_only.from_file,
            },
        )?;
        let mut lifecycle = super::lab::lifecycle(&args.lifecycle, &urls)?;
        if let (Some(r), Some(s)) = (&mut lifecycle.reset, plan.file_only.reset_retry_seconds) {
            r.retry_budget = Duration::from_secs_f64(s);
        }
        let (mlflow, mlflow_unused) = super::lab::mlflow(&args.mlflow)?;
        let (wandb, wandb_unused) = super::lab::wandb(&args.wandb);
        let otel = super::lab::otel(&args.otel)?;
        let tokenizer = tokenizer_for(args.tokenizer.as_deref(), &models[0]);
        let tokenizer_options = tokenizer_options(&args.tokenizer_opts);
        let (outputs, outputs_unused) = super::outputs::resolve(args, endpoint, streaming)?;
        let warnings = [
            warnings,
            tokenizer_warnings(&tokenizer, &tokenizer_options),
            outputs_unused,
            super::lab::unused(&args.lifecycle),
            mlflow_unused,
            wandb_unused,
            timing::load_shape_unused(args, warmup.as_ref()),
            // `--unsafe-override`: each violation let through, as AIPerf warns of it.
            (scenario.iter())
                .flat_map(|o| &o.violations)
                .map(|v| format!("Scenario violation (override active): {v}"))
                .collect(),
            // A curve other than linear changes nothing at run time, in AIPerf 0.13 as here.
            (plan.file_only.ramp_strategies.iter())
                .filter(|(_, _, curve)| curve != "linear")
                .map(|(phase, key, curve)| {
                    format!(
                        "phase {phase}: the {curve} {key} runs linearly, as AIPerf 0.13 runs \
                         every ramp (its runner ramps linearly whatever the strategy)"
                    )
                })
                .collect(),
            // A user-centric phase's rate does not ramp: AIPerf 0.13's user-centric strategy
            // takes no new rate (its warning: "Request rate will be fixed at the target
            // value"), and neither does the run here.
            (std::iter::once((cfg_name(&plan.file_only), &profiling))
                .chain(phases_after.iter().map(|p| (p.name.as_str(), &p.config))))
            .filter(|(_, p)| {
                matches!(p.timing.mode, timing::Mode::UserCentric { .. })
                    && p.timing.rate_ramp.is_some()
            })
            .map(|(name, _)| {
                format!(
                    "phase {name}: a user-centric phase's rate does not ramp (its rate is fixed \
                     at the target, as AIPerf 0.13 runs it)"
                )
            })
            .collect(),
        ]
        .concat();
        let session_header = super::requests::session_header(&args.requests)?;
        // A copy under the session header's own name would repeat it with the same value.
        let correlation_copies: Vec<&'static str> = affinity_headers(|k| env.var(k))?
            .into_iter()
            .filter(|c| {
                session_header
                    .as_deref()
                    .is_none_or(|s| !s.eq_ignore_ascii_case(c))
            })
            .collect();
        Ok(Config {
            lifecycle,
            mlflow,
            wandb,
            otel,
            tokenizer,
            tokenizer_options,
            model_selection: super::requests::model_selection(&args.requests)?,
            models,
            endpoint,
            path,
            streaming,
            urls,
            request_timeout: Duration::from_secs_f64(args.request_timeout_seconds),
            connection_limit: connections::limit(|k| env.var(k))?,
            video_poll_interval: super::video_poll::interval(|k| env.var(k))?,
            headers,
            correlation_copies,
            session_header,
            tls: TlsSettings::from_env(|k| env.var(k))?,
            cli_command: redact_command(argv, &secrets),
            argv_redacted: redact_argv(argv, &secrets),
            secrets,
            extra_inputs,
            payload_template,
            response_field,
            template_echo,
            use_legacy_max_tokens: args.use_legacy_max_tokens,
            use_server_token_count: args.use_server_token_count,
            outputs,
            connection_reuse: args.connection_reuse_strategy.into(),
            seed,
            seed_given,
            artifact_dir,
            export_prefix: args.profile_export_prefix.clone(),
            export_level: args.export_level.into(),
            dataset,
            prompt,
            random_prompt,
            media: super::media::from_args(&args.media, endpoint)?,
            download_video_content: args.video_generation.download_video_content,
            form_data: super::form::form_data(args.form.request_content_type, endpoint)?,
            input,
            warmup,
            more_warmups,
            profiling,
            profiling_name: (plan.file_only.profiling_name.clone())
                .unwrap_or_else(|| "profiling".into()),
            phases_after,
            ui: ui_type(args.ui_type, is_tty),
            realtime: super::realtime::ticks(
                args.stats_interval,
                ui_type(args.ui_type, is_tty),
                api.is_some(),
                |k| env.var(k),
            )?,
            api,
            verbose: args.verbose
                || args.extra_verbose
                || matches!(args.log_level, LogLevelArg::Debug | LogLevelArg::Trace),
            workers,
            io_driver: args.io_driver.into(),
            max_client_lag_ns: args.max_client_lag_us.map(|us| us.saturating_mul(1_000)),
            kernel_stamps: args.timestamps == crate::cli::TimestampsArg::Kernel,
            batch_wakeups: Duration::from_micros(args.batch_wakeups_us),
            failed_request_threshold: args.failed_request_threshold,
            stop_grace: secs_or_forever(args.benchmark_grace_period),
            mock: mock_shape(args),
            server_metrics,
            gpu_telemetry,
            slice_duration,
            export_http_trace: args.http_trace.export_http_trace,
            show_trace_timing: args.http_trace.show_trace_timing,
            network_latency: super::network::NetworkLatency::resolve(
                &args.network_latency,
                &env.vars,
            )?,
            goodput,
            rankings: rankings_shape(args, endpoint),
            echo,
            shard,
            multi_run,
            warnings,
            scenario,
        })
    }
}

/// `--endpoint-type`: every AIPerf 0.13 type is implemented.
fn endpoint_kind(arg: EndpointTypeArg) -> Result<EndpointKind, ConfigError> {
    Ok(match arg {
        EndpointTypeArg::Chat => EndpointKind::Chat,
        EndpointTypeArg::Completions => EndpointKind::Completions,
        EndpointTypeArg::Responses => EndpointKind::Responses,
        EndpointTypeArg::Messages => EndpointKind::Messages,
        EndpointTypeArg::Embeddings => EndpointKind::Embeddings,
        EndpointTypeArg::ChatEmbeddings => EndpointKind::ChatEmbeddings,
        EndpointTypeArg::NimEmbeddings => EndpointKind::NimEmbeddings,
        EndpointTypeArg::NimRankings => EndpointKind::NimRankings,
        EndpointTypeArg::CohereRankings => EndpointKind::CohereRankings,
        EndpointTypeArg::HfTeiRankings => EndpointKind::HfTeiRankings,
        EndpointTypeArg::HuggingfaceGenerate => EndpointKind::HuggingfaceGenerate,
        EndpointTypeArg::ImageGeneration => EndpointKind::ImageGeneration,
        EndpointTypeArg::SolidoRag => EndpointKind::SolidoRag,
        EndpointTypeArg::ImageRetrieval => EndpointKind::ImageRetrieval,
        EndpointTypeArg::VideoGeneration => EndpointKind::VideoGeneration,
        EndpointTypeArg::ImageEdit => EndpointKind::ImageEdit,
        EndpointTypeArg::AudioTranscription => EndpointKind::AudioTranscription,
        EndpointTypeArg::Raw => EndpointKind::Raw,
        EndpointTypeArg::Template => EndpointKind::Template,
    })
}

/// Where requests go and for which models.
struct Target {
    models: Vec<String>,
    streaming: bool,
    path: String,
    urls: Vec<BaseUrl>,
}

/// `--model`, `--streaming`, `--custom-endpoint`, `--url` and `--request-timeout-seconds`.
fn target(args: &ProfileArgs, endpoint: EndpointKind) -> Result<Target, ConfigError> {
    // AIPerf turns streaming off for an endpoint type that cannot stream.
    let streaming = args.streaming && endpoint.descriptor().supports_streaming;
    let models = model_names(args);
    if models.is_empty() {
        return err("--model is required (the model name sent in every request)");
    }
    let path = match &args.custom_endpoint {
        Some(p) => p.clone(),
        None => endpoint.path(streaming).to_string(),
    };
    let urls = if args.mock {
        Vec::new()
    } else {
        let mut v = Vec::new();
        for u in &args.url {
            v.push(BaseUrl::parse(u, &path).map_err(|e| ConfigError::flag(format!("--url {e}")))?);
        }
        v
    };
    if !args.mock && urls.is_empty() {
        return err("--url needs at least one base URL");
    }
    if !(args.request_timeout_seconds.is_finite() && args.request_timeout_seconds > 0.0) {
        return err("--request-timeout-seconds must be a positive number of seconds");
    }
    Ok(Target {
        models,
        streaming,
        path,
        urls,
    })
}

/// The headers sent on every request, in order, and the secret values among them.
struct Headers {
    headers: Vec<(String, String)>,
    secrets: Vec<String>,
}

/// `--header`, `--api-key` and the endpoint's own headers.
fn headers(args: &ProfileArgs, endpoint: EndpointKind) -> Result<Headers, ConfigError> {
    let mut headers = Vec::new();
    let mut secrets = Vec::new();
    for h in &args.header {
        for (k, v) in parse_pairs(h, "--header")? {
            let v = json_to_plain(&v);
            if k.eq_ignore_ascii_case("authorization") || k.to_ascii_lowercase().contains("key") {
                secrets.push(v.clone());
            }
            if k.eq_ignore_ascii_case("content-type") || k.eq_ignore_ascii_case("content-length") {
                // AIPerf overwrites a user Content-Type; Content-Length is ours to compute.
                continue;
            }
            check_header(&k, &v)?;
            headers.push((k, v));
        }
    }
    if let Some(key) = &args.api_key {
        if key.is_empty() {
            return err("--api-key is empty");
        }
        secrets.push(key.clone());
        check_header("Authorization", key)?;
        match endpoint.descriptor().auth {
            Auth::Bearer => headers.push(("Authorization".to_string(), format!("Bearer {key}"))),
            Auth::AnthropicKey => headers.push(("x-api-key".to_string(), key.clone())),
        }
    }
    if endpoint.descriptor().auth == Auth::AnthropicKey
        && !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("anthropic-version"))
    {
        headers.push((
            "anthropic-version".to_string(),
            ringperf_wire::endpoint::ANTHROPIC_VERSION.to_string(),
        ));
    }
    Ok(Headers { headers, secrets })
}

/// `--extra-inputs`, with the payload template and response field taken out.
struct Extras {
    extra_inputs: Map<String, serde_json::Value>,
    payload_template: Option<Arc<PayloadTemplate>>,
    response_field: Option<Arc<FieldPath>>,
    template_echo: Option<serde_json::Value>,
}

fn extras(
    args: &ProfileArgs,
    endpoint: EndpointKind,
    env: &Environment,
) -> Result<Extras, ConfigError> {
    let mut extra_inputs = Map::new();
    for e in &args.extra_inputs {
        for (k, v) in parse_pairs(e, "--extra-inputs")? {
            extra_inputs.insert(k, v);
        }
    }
    // AIPerf's converter makes the extras' template `endpoint.template` (a file's text as its
    // body, `response_field` "text" when not given), whatever the endpoint type.
    let template_echo = (extra_inputs.get("payload_template")).map(|given| {
        let body = (given.as_str())
            .and_then(|g| env.template_files.get(g).cloned())
            .map_or_else(|| given.clone(), serde_json::Value::from);
        let field = (extra_inputs.get("response_field").cloned()).unwrap_or("text".into());
        serde_json::json!({"body": body, "response_field": field})
    });
    let payload_template = template::take(&mut extra_inputs, endpoint, &env.template_files)?;
    // AIPerf's rule: a chained Responses conversation sends only its newest turn, so the ISL
    // must come from the server.
    let store = match extra_inputs.get("store") {
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    };
    // A Baseten trace's loader writes these per turn: a user's value would be overwritten.
    if args
        .input
        .custom_dataset_type
        .as_deref()
        .and_then(ringperf_workload::workload::loader::DatasetKind::parse)
        == Some(ringperf_workload::workload::loader::DatasetKind::BasetenTrace)
    {
        let mut collisions = Vec::new();
        if !args.input.no_force_min_tokens && extra_inputs.contains_key("min_tokens") {
            collisions.push(("min_tokens", "--no-force-min-tokens"));
        }
        if !args.input.omit_kv_hints {
            for key in ["hash_ids", "block_size"] {
                if extra_inputs.contains_key(key) {
                    collisions.push((key, "--omit-kv-hints"));
                }
            }
        }
        if !collisions.is_empty() {
            let parts: Vec<String> = collisions
                .iter()
                .map(|(key, flag)| {
                    format!(
                        "--extra-inputs {key} is overwritten per-turn by the baseten_trace \
                         loader; pass {flag} to send your value instead"
                    )
                })
                .collect();
            return Err(ConfigError::flag(parts.join("; ")));
        }
    }
    if endpoint == EndpointKind::Responses && store && !args.use_server_token_count {
        return Err(ConfigError::flag(
            "Responses endpoint with --extra-inputs store:true enables previous_response_id \
             chaining, which sends only the newest turn on the wire; client-side Input Sequence \
             Length would undercount the server-side prompt. Add --use-server-token-count so ISL \
             comes from the server's usage.prompt_tokens, or remove store:true.",
        ));
    }
    let response_field = match &payload_template {
        Some(t) => t.response_field().cloned(),
        None => template::raw_response_field(&extra_inputs, endpoint)?,
    };
    Ok(Extras {
        extra_inputs,
        payload_template,
        response_field,
        template_echo,
    })
}

/// What is sent, how it is paced, and by which share of a split run.
struct Workload {
    profiling: PhaseConfig,
    warmup: Option<PhaseConfig>,
    more_warmups: Vec<super::phases::NamedPhase>,
    prompt: prompt::PromptConfig,
    dataset: DatasetConfig,
    input: dataset::InputConfig,
    shard: shard::ShardConfig,
    multi_run: multi_run::MultiRunConfig,
    seed: u64,
    seed_given: bool,
}

/// A config file's phases after the first profiling phase, resolved; a fixed-schedule one
/// replays the dataset's trace (a file's) at the dataset's speed (`--replay-speedup`); one with
/// `timing_mode: agentic_replay` replays the run's lanes with the settings of the first
/// profiling phase (`profiling`), as AIPerf 0.13 reads them from there.
fn later_phases(
    file_only: &crate::plan::FileOnly,
    args: &ProfileArgs,
    input: &dataset::InputConfig,
    profiling: &PhaseConfig,
) -> Result<Vec<super::phases::NamedPhase>, ConfigError> {
    // Agentic replay runs its own warmup in place of every warmup the file declares.
    let specs = (file_only.phases_after.iter()).filter(|s| !(file_only.agentic && s.warmup));
    let mut phases = (specs.clone())
        .map(super::phases::NamedPhase::resolve)
        .collect::<Result<Vec<_>, _>>()?;
    for (p, spec) in phases.iter_mut().zip(specs) {
        if !spec.agentic.replay || spec.warmup {
            continue;
        }
        if !matches!(p.config.timing.mode, timing::Mode::Load)
            || !matches!(p.config.load, super::Load::Concurrency(_))
        {
            return err(format!(
                "benchmark.phases.{}: AGENTIC_REPLAY timing mode requires concurrency to be set \
                 on TimingConfig (sourced from the profiling phase concurrency).",
                p.name
            ));
        }
        let mut first = profiling.clone();
        if !matches!(first.timing.mode, timing::Mode::Agentic(_)) {
            timing::agentic(args, &mut first)?;
        }
        p.config.timing.mode = first.timing.mode;
    }
    for p in &mut phases {
        if let timing::Mode::FixedSchedule(fs) = &mut p.config.timing.mode {
            if !input.reads_file() {
                return err(format!(
                    "benchmark.phases.{}: a fixed_schedule phase replays the timestamps of a \
                     trace file, and the dataset is not a file",
                    p.name
                ));
            }
            if let Some(x) = args
                .timing
                .replay_speedup
                .filter(|x| x.is_finite() && *x > 0.0)
            {
                fs.speedup = x;
            }
        }
    }
    Ok(phases)
}

/// The phases, the prompts and dataset, sharding and repeated runs, and the seed.
fn workload(
    args: &ProfileArgs,
    file_only: &crate::plan::FileOnly,
    endpoint: EndpointKind,
    env: &Environment,
    grace_given: bool,
) -> Result<Workload, ConfigError> {
    let mut profiling = profiling_phase(args, file_only.profiling_rate_series.as_deref())?;
    // A config file's duration phase without `grace_period`: cut at its end, as AIPerf.
    if file_only.no_grace && !grace_given {
        profiling.grace = profiling.duration.map(|_| std::time::Duration::ZERO);
    }
    if file_only.agentic {
        timing::agentic(args, &mut profiling)?;
    } else if args.agentic.agentic_cache_warmup_duration.is_some() {
        return Err(ConfigError::flag(
            "--agentic-cache-warmup-duration requires the agentic_replay timing mode (set today \
             by --scenario inferencex-agentx-mvp); the profiling phase(s) are not \
             agentic_replay.",
        ));
    }
    let style = super::random_prompt::style(args.random_prompt.random_corpus_style);
    let prompt = prompt::PromptConfig::from_args(&args.prompt, (endpoint, style), &env.files)?;
    let synthetic = args.input.input_file.is_none()
        && args.input.public_dataset.is_none()
        && file_only.inline_records.is_none();
    if synthetic {
        timing::check_user_centric_turns(&profiling.timing, f64::from(prompt.shaping.turn_mean))?;
    }
    let dataset = dataset_config(args, file_only, &prompt)?;
    let shard = shard::ShardConfig::from_args(&args.shard, |k| env.var(k))?;
    let mut multi_run = multi_run::MultiRunConfig::from_args(&args.multi_run)?;
    // `--convergence-*` (docs/sweeps.md): adaptive trials, for a sweep's variations and for
    // plain repeated runs alike.
    multi_run.convergence = super::convergence::from_args(args, file_only.convergence_min_runs)
        .map_err(|e| ConfigError::flag(e.to_string()))?;
    if multi_run.convergence.is_some() && !multi_run.is_repeated() {
        return Err(ConfigError::flag(
            "--convergence-metric requires --num-profile-runs > 1. Set --num-profile-runs to at \
             least 2 to enable adaptive convergence.",
        ));
    }
    if !file_only.summary_json() && (multi_run.is_repeated() || shard.is_split()) {
        return err(if shard.is_split() {
            super::outputs::summary_off(
                "--shard-count over 1 (`ringperf merge` joins the shards' results)",
                false,
            )
        } else {
            super::outputs::summary_off("repeated runs (--num-profile-runs over 1)", true)
        });
    }
    if multi_run.is_repeated() && shard.is_split() {
        return err(
            "--num-profile-runs over 1 cannot be combined with --shard-count over 1: repeat \
             the split run instead",
        );
    }
    if let Some(p) = (file_only.phases_before.iter().skip(1))
        .chain(&file_only.phases_after)
        .next()
        && shard.is_split()
    {
        return err(format!(
            "benchmark.phases.{}: a {} phase beyond one warmup and one profiling phase cannot \
             run split over shards (--shard-count over 1): `ringperf merge` joins one warmup and \
             one profiling phase",
            p.name,
            if p.warmup { "warmup" } else { "profiling" }
        ));
    }
    let (seed, seed_given) = seed(args.random_seed, &multi_run, &shard, env.drawn_seed);
    if args.uuid_strip.uuid_and_strip && endpoint != EndpointKind::Chat {
        return err("--uuid-and-strip requires endpoint type 'chat'");
    }
    let mut input = dataset::InputConfig::from_args(
        &args.input,
        &dataset::InputContext {
            seed,
            seeded: seed_given || shard.is_split(),
            entries: dataset.entries,
            system_message: endpoint.descriptor().consumes_system_message,
            osl_given: dataset.osl_mean.is_some(),
            uuid_and_strip: args.uuid_strip.uuid_and_strip,
            pool_batch: ringperf_workload::workload::loader::random_pool::PoolBatch {
                text: args.prompt.prompt_batch_size,
                image: args.media.image_batch_size as usize,
                audio: args.media.audio_batch_size as usize,
                video: args.media.video_batch_size as usize,
            },
        },
        file_only.inline_records.as_ref(),
    )?;
    if let Some(spec) = &mut input.load {
        // A Weka trace's models map onto the run's names; AIPerf's escape hatch keeps its
        // flattened agents in one conversation.
        spec.weka.model_names = model_names(args);
        spec.weka.keep_flat_agents = dataset::keeps_flat_agents(|k| env.var(k))?;
        // AIPerf loads only the first traces a run asks for: `--num-dataset-entries`, else
        // `--conversation-num`, else an explicit `--request-count`.
        spec.weka.entries = args
            .num_dataset_entries
            .map(|n| n as u64)
            .or(args.prompt.conversation_num)
            .or(args.request_count);
        spec.weka.dataset_entries = args.num_dataset_entries.map(|n| n as u64);
        // AIPerf's `AIPERF_DATASET_BASETEN_SESSION_COLUMN`: the session column looked for first.
        if let Some(c) = env
            .var(ringperf_workload::workload::loader::baseten_trace::SESSION_COLUMN_VAR)
            .filter(|v| !v.trim().is_empty())
        {
            spec.baseten.session_column = c.trim().to_owned();
        }
    }
    // A timestamped trace switches to fixed-schedule replay (docs/timing.md), before the
    // warmup inherits from the profiling phase.
    if input.reads_file()
        && let Some((timestamped, records)) = env.trace
    {
        timing::promote_trace(
            args,
            &mut profiling,
            timestamped && !file_only.profiling_paced,
            records,
        )?;
    }
    // A file's `timing_mode: fixed_schedule` on another phase type replays the dataset's
    // timestamps; one without them AIPerf 0.13 cannot start.
    if let Some(ty) = &file_only.profiling_replayed_type
        && !matches!(profiling.timing.mode, timing::Mode::FixedSchedule(_))
    {
        return Err(ConfigError::file(format!(
            "benchmark.phases.profiling.timing_mode: fixed_schedule on a {ty} phase replays the \
             dataset's timestamps, and this dataset has none (AIPerf 0.13 fails its run: 'First \
             turn of session_000000 missing timestamp_ms'); give a trace with timestamps, or \
             drop the timing_mode"
        )));
    }
    // AIPerf merges a verbatim system prompt into each body's leading system message (or sends
    // it first); ringperf does not build that for a DAG file: refused, never dropped.
    let dag = args
        .input
        .custom_dataset_type
        .as_deref()
        .and_then(DatasetKind::parse)
        == Some(DatasetKind::DagJsonl);
    // A DAG's turns build on each other's messages and replies: only an endpoint type that
    // carries a conversation sends them (AIPerf's completions sends an empty prompt, and fails
    // a later turn).
    if dag && endpoint.descriptor().history.is_none() {
        return err(format!(
            "dag_jsonl conversations carry chat messages and the replies to them, which endpoint \
             type {} does not send; use chat, responses or messages",
            endpoint.as_str()
        ));
    }
    if dag && (args.prompt.system_prompt.is_some() || args.prompt.system_prompt_file.is_some()) {
        return err(
            "--system-prompt and --system-prompt-file are not supported with dag_jsonl by \
             ringperf (AIPerf merges the text into each request's leading system message): put \
             the system prompt in the file's root turns",
        );
    }
    // A file named a `dag_jsonl`, with no stop condition: each root once (AIPerf's
    // `_maybe_set_dag_root_sessions`).
    if let Some(roots) = env.dag_roots.filter(|&n| n > 0)
        && args.request_count.is_none()
        && profiling.duration.is_none()
        && profiling.sessions.is_none()
    {
        profiling.request_count = None;
        profiling.sessions = Some(roots);
    }
    timing::check_speedup(args, &profiling)?;
    // A Baseten trace's timing rules work on the sped-up times, as AIPerf's loader does.
    if let (Some(spec), timing::Mode::FixedSchedule(fs)) = (&mut input.load, &profiling.timing.mode)
    {
        spec.baseten.speedup = fs.speedup;
    }
    if matches!(profiling.timing.mode, timing::Mode::FixedSchedule(_))
        || (file_only.phases_after.iter()).any(|p| p.pacing == crate::plan::Pacing::FixedSchedule)
    {
        input.keep_timestamps();
    }
    let warmup = match file_only.phases_before.as_slice() {
        _ if file_only.agentic => Some(timing::agentic_warmup(&profiling)),
        [] => warmup_phase(args, &profiling)?,
        [spec, ..] => {
            if warmup_phase(args, &profiling)?.is_some() {
                return err(format!(
                    "benchmark.phases.{}: the config file's warmup is paced as no --warmup-* \
                     flag paces one; drop the --warmup-* flags or change the file's warmup",
                    spec.name
                ));
            }
            let w = super::phases::resolve(spec)?;
            if synthetic {
                timing::check_user_centric_turns(&w.timing, f64::from(prompt.shaping.turn_mean))?;
            }
            Some(w)
        }
    };
    // A config file's further warmups, and its later phases of either kind (agentic replay puts
    // its own warmup in place of every warmup the file declares).
    let declared = if file_only.agentic {
        &[][..]
    } else {
        &file_only.phases_before[..]
    };
    let more_warmups = (declared.iter().skip(1))
        .map(super::phases::NamedPhase::resolve)
        .collect::<Result<Vec<_>, _>>()?;
    if synthetic {
        for w in &more_warmups {
            timing::check_user_centric_turns(
                &w.config.timing,
                f64::from(prompt.shaping.turn_mean),
            )?;
        }
    }
    // An orchestrator's request-free turns are replayed as AIPerf's closed loop runs them
    // (checked against it); under a warmup AIPerf sends nothing and never ends, and its rate and
    // schedule modes are not checked: refused.
    let closed_loop = matches!(profiling.load, super::Load::Concurrency(_))
        && matches!(profiling.timing.mode, timing::Mode::Load);
    if env.dag_orchestrators && (warmup.is_some() || !closed_loop) {
        return err(
            "dag_jsonl orchestrator conversations ('orchestrator': true) are replayed with \
             --concurrency (the closed loop) and no warmup only: AIPerf 0.13's warmup never \
             ends with one (it sends nothing), and ringperf does not pace their request-free \
             turns by a rate, a schedule or users",
        );
    }
    Ok(Workload {
        profiling,
        warmup,
        more_warmups,
        prompt,
        dataset,
        input,
        shard,
        multi_run,
        seed,
        seed_given,
    })
}

/// The run's seed and whether the user gave it: `--random-seed`; else AIPerf's fixed seed for
/// repeated runs (`--set-consistent-seed`, the default, as if `--random-seed 42` were given);
/// else, for the shards of a split run, one derived from the instant they share (so they draw
/// one schedule); else `drawn` (from entropy, reported).
pub fn seed(
    random_seed: Option<u64>,
    multi_run: &multi_run::MultiRunConfig,
    shard: &shard::ShardConfig,
    drawn: u64,
) -> (u64, bool) {
    let random_seed = random_seed.or(multi_run.default_seed());
    let seed = match (random_seed, shard.start_at_ns) {
        (Some(s), _) => s,
        (None, Some(at)) if shard.is_split() => {
            ringperf_workload::schedule::child_seed(at, "shard")
        }
        (None, _) => drawn,
    };
    (seed, random_seed.is_some())
}

/// The synthetic dataset's size and token lengths.
fn dataset_config(
    args: &ProfileArgs,
    file_only: &crate::plan::FileOnly,
    prompt: &prompt::PromptConfig,
) -> Result<DatasetConfig, ConfigError> {
    let dataset = DatasetConfig {
        entries: prompt::dataset_entries(
            args.num_dataset_entries
                .or(file_only.dataset_entries.map(|n| n as usize)),
            prompt.num_conversations,
            args.request_count,
        )?,
        isl_mean: args.isl_mean,
        isl_stddev: args.isl_stddev,
        osl_mean: args.osl_mean,
        osl_stddev: args.osl_stddev,
    };
    if dataset.entries == 0 {
        return err("--num-dataset-entries must be at least 1");
    }
    if dataset.isl_mean == 0 {
        return err("--synthetic-input-tokens-mean must be at least 1");
    }
    let valid_sd = |sd: f64| sd.is_finite() && sd >= 0.0;
    if !valid_sd(dataset.isl_stddev) || !valid_sd(dataset.osl_stddev) {
        return err("token standard deviations must be non-negative numbers");
    }
    if dataset.osl_mean == Some(0) {
        return err("--output-tokens-mean must be at least 1");
    }
    Ok(dataset)
}

/// `--ui-type`: what the console shows, by whether stdout is a terminal.
pub fn ui_type(arg: Option<UiTypeArg>, is_tty: bool) -> UiType {
    match arg {
        Some(UiTypeArg::None) => UiType::None,
        Some(UiTypeArg::Dashboard) if is_tty => UiType::Dashboard,
        Some(UiTypeArg::Simple) if is_tty => UiType::Progress,
        Some(UiTypeArg::Simple | UiTypeArg::Dashboard) => UiType::Lines,
        None if is_tty => UiType::Progress,
        None => UiType::None,
    }
}

/// Worker threads: `--workers-max` (else one per core), never more than this shard's share of
/// the requests that can be in flight. Checks first that the split leaves every shard work.
pub fn workers(
    workers_max: Option<usize>,
    shard: &shard::ShardConfig,
    profiling: &PhaseConfig,
    cores: usize,
) -> Result<usize, ConfigError> {
    shard.check_divisible(profiling)?;
    // A shard runs its share of the concurrency.
    let max_in_flight = shard
        .shard
        .share(profiling.load.max_in_flight().unwrap_or(u64::MAX))
        .max(1);
    let workers = match workers_max {
        Some(0) => return err("--workers-max must be at least 1"),
        Some(w) => w,
        None => cores,
    };
    Ok(workers
        .min(usize::try_from(max_in_flight).unwrap_or(usize::MAX))
        .max(1))
}

/// `--artifact-dir`, else AIPerf's name from the models, endpoint and stimulus, made absolute
/// against the working directory; and a check of `--profile-export-prefix`.
fn artifact_dir(
    args: &ProfileArgs,
    models: &[String],
    endpoint: EndpointKind,
    profiling: &PhaseConfig,
) -> Result<PathBuf, ConfigError> {
    use ringperf_metrics::export::Stimulus;
    let stimulus = match (profiling.timing.mode, profiling.load) {
        (timing::Mode::FixedSchedule(_), _) => Stimulus::FixedSchedule,
        (timing::Mode::UserCentric { rate, users }, _) => {
            Stimulus::UserCentric { users, qps: rate }
        }
        (timing::Mode::Load | timing::Mode::Agentic(_), Load::Concurrency(n)) => {
            Stimulus::Concurrency(n)
        }
        (timing::Mode::Load | timing::Mode::Agentic(_), Load::Rate { rate, cap, .. }) => {
            Stimulus::Rate {
                rate,
                concurrency: cap,
            }
        }
    };
    let artifact_dir = match &args.artifact_dir {
        Some(d) => d.clone(),
        None => {
            ringperf_metrics::export::default_artifact_dir(models, endpoint.as_str(), &stimulus)
        }
    };
    // Absolute, as AIPerf echoes it (`input_config.artifacts.dir`) and prints every file under
    // it; a working directory that cannot be read leaves it as given.
    let artifact_dir = std::path::absolute(&artifact_dir).unwrap_or(artifact_dir);
    if let Some(p) = &args.profile_export_prefix
        && (p.is_empty() || p.contains('/'))
    {
        return err("--profile-export-prefix must be a plain file name");
    }
    Ok(artifact_dir)
}

/// `--server-metrics`, `--no-server-metrics` and `--server-metrics-formats`.
fn server_metrics(args: &ProfileArgs) -> Result<ServerMetricsConfig, ConfigError> {
    let mut extra_urls = Vec::new();
    for u in args.server_metrics.iter().flatten() {
        let n = url::normalize_metrics_url(u);
        let lower = n.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return err(format!(
                "--server-metrics {u}: only http:// and https:// endpoints are supported"
            ));
        }
        if !extra_urls.contains(&n) {
            extra_urls.push(n);
        }
    }
    Ok(ServerMetricsConfig {
        enabled: !args.no_server_metrics,
        extra_urls,
        formats: server_metrics_formats(&args.server_metrics_formats),
    })
}

/// `--mock`'s response shape.
fn mock_shape(args: &ProfileArgs) -> Option<MockShape> {
    let s = &args.mock_shape;
    args.mock.then(|| MockShape {
        ttft: Duration::from_secs_f64(s.mock_ttft_ms.max(0.0) / 1e3),
        itl: Duration::from_secs_f64(s.mock_itl_ms.max(0.0) / 1e3),
        output_tokens: s.mock_output_tokens.max(1),
        tokens_per_event: s.mock_tokens_per_event.max(1),
        reasoning_tokens: s.mock_reasoning_tokens,
        threads: s.mock_threads.max(1),
        faults: s.mock_faults.clone().unwrap_or_default().0,
        capacity: s.mock_capacity,
        max_model_len: s.mock_max_model_len,
    })
}

/// The Rankings flags, for a rankings endpoint type.
fn rankings_shape(
    args: &ProfileArgs,
    endpoint: EndpointKind,
) -> Option<ringperf_workload::workload::rankings::RankingsShape> {
    let r = &args.rankings;
    endpoint
        .is_rankings()
        .then_some(ringperf_workload::workload::rankings::RankingsShape {
            passages_mean: r.rankings_passages_mean,
            passages_stddev: r.rankings_passages_stddev,
            passage_tokens_mean: r.rankings_passages_prompt_token_mean,
            passage_tokens_stddev: r.rankings_passages_prompt_token_stddev,
            query_tokens_mean: r.rankings_query_prompt_token_mean,
            query_tokens_stddev: r.rankings_query_prompt_token_stddev,
        })
}

impl From<ConnectionReuseArg> for ConnectionReuse {
    fn from(a: ConnectionReuseArg) -> Self {
        match a {
            ConnectionReuseArg::Pooled => ConnectionReuse::Pooled,
            ConnectionReuseArg::Never => ConnectionReuse::Never,
            ConnectionReuseArg::StickyUserSessions => ConnectionReuse::StickyUserSessions,
        }
    }
}

impl From<ExportLevelArg> for ExportLevel {
    fn from(a: ExportLevelArg) -> Self {
        match a {
            ExportLevelArg::Summary => ExportLevel::Summary,
            ExportLevelArg::Records => ExportLevel::Records,
            ExportLevelArg::Raw => ExportLevel::Raw,
        }
    }
}

/// The Tokenizer group's flags beside `--tokenizer`, as the tokenizer is loaded with them.
fn tokenizer_options(
    a: &crate::cli::tokenizer::TokenizerArgs,
) -> ringperf_workload::workload::tokenizer::LoadOptions {
    ringperf_workload::workload::tokenizer::LoadOptions {
        revision: a.tokenizer_revision.clone(),
        trust_remote_code: a.trust_remote_code,
        apply_chat_template: a.apply_chat_template,
    }
}

/// What the Tokenizer flags change nothing for, one line each: a revision or a chat template
/// with the builtin tokenizer (AIPerf counts its bare text: it has no template).
fn tokenizer_warnings(
    spec: &str,
    o: &ringperf_workload::workload::tokenizer::LoadOptions,
) -> Vec<String> {
    let mut w = Vec::new();
    if !ringperf_workload::workload::tokenizer::names_builtin(spec) {
        return w;
    }
    if o.apply_chat_template {
        w.push(
            "--apply-chat-template has no effect with the builtin tokenizer: it has no chat \
             template, so the ISL is counted on the prompt text (as AIPerf does)"
                .to_owned(),
        );
    }
    if o.revision.as_deref().is_some_and(|r| r != "main") {
        w.push(
            "--tokenizer-revision has no effect with the builtin tokenizer (it has no revisions)"
                .to_owned(),
        );
    }
    w
}

/// The first profiling phase's name as the file gives it (`profiling` by default).
fn cfg_name(f: &crate::plan::FileOnly) -> &str {
    f.profiling_name.as_deref().unwrap_or("profiling")
}
