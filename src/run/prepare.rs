//! Stage 1 of a run, preparing the workload: the tokenizer, the embedded mock server, the
//! dataset (loaded or synthesized, templates checked), the artifact directory (created, an
//! earlier run's files cleared, a shard's manifest, `inputs.json`), every request encoded, and
//! the state the workers share ([`Shared`]). Nothing is sent; every failure is a setup error.

use ringperf_wire::conversation::{AgentParts, AgentTurnParts};
use ringperf_workload::workload::cache_bust::{Buster, CacheBust};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::{RunError, SetupKind};
use super::{log, note, shard};
use crate::config::{Config, ExportLevel};
use ringperf_engine::worker::Shared;
use ringperf_io::control::RunControl;
use ringperf_metrics::export::ExportNames;
use ringperf_workload::workload;

/// Largest response body accepted (bodies are kept whole for token counting).
const MAX_BODY_BYTES: u64 = 256 << 20;

/// The workload ready to send, and what holds for the whole run.
pub(super) struct Prepared {
    pub tokenizer: Arc<workload::tokenizer::Tokenizer>,
    /// The artifact directory and the names of the files written in it.
    pub dir: PathBuf,
    pub names: ExportNames,
    /// Who this shard is, for a split run.
    pub identity: Option<shard::Identity>,
    /// The run's id (the shards of a split run share theirs): exported, and digested into
    /// `--cache-bust` markers.
    pub benchmark_id: String,
    /// What the workers share.
    pub shared: Arc<Shared>,
    /// Each conversation's first-turn index, and what the aggregator knows of each turn.
    pub turn_offsets: Arc<Vec<usize>>,
    pub turns: Arc<Vec<ringperf_engine::aggregator::TurnInfo>>,
    /// Receive stamps come from the kernel.
    pub kernel_stamps: bool,
    /// Agentic replay's lanes, when the profiling phase is one.
    pub agentic: Option<super::agentic::AgenticRun>,
    /// Holds the kernel's receive stamping on for the run (`--timestamps kernel`).
    _stamps_guard: Option<std::net::TcpListener>,
    /// A streamed replay's producer, building requests until the run is over (before the mock
    /// it may still be encoding for is stopped).
    _producer: Option<super::stream::Producer>,
    /// The embedded mock server, serving until the run is over.
    _mock: Option<ringperf_mock::mock::MockServer>,
    /// The trace reshaped by `--synthesis-*`, read while the run goes.
    _synthesized: Option<super::synthesis::SynthesizedTrace>,
}

/// Prepares the run of `cfg`: the embedded mock replaces its URLs, and a shard of a split run
/// may give up server-metrics collection ([`shard::prepare`]).
pub(super) fn prepare(cfg: &mut Config, control: &Arc<RunControl>) -> Result<Prepared, RunError> {
    const NOTHING: &str = "nothing was written";
    let tokenizer = Arc::new(load_tokenizer(&cfg.tokenizer, &cfg.tokenizer_options)?);
    check_interrupt("loading the tokenizer", NOTHING)?;
    let mock = start_mock(cfg, &tokenizer)?;
    let payload = payload_params(cfg);
    let synthesized = super::synthesis::apply(cfg)?;
    let dataset = build_dataset(cfg, &payload, &tokenizer);
    check_interrupt("building the dataset", NOTHING)?;
    let (dataset, streamed) = dataset?;
    let agentic = super::agentic::build(cfg, &dataset)?;
    if let Some(a) = &agentic {
        for line in a.summary(&dataset) {
            super::log(cfg, &line);
        }
    }
    let (dir, names, identity) = open_artifact_dir(cfg, control)?;
    // inputs.json first (AIPerf writes it when the dataset is ready): each turn as sent alone;
    // none for a trace or verbatim replay, as AIPerf.
    if !dataset.replay {
        write_inputs(cfg, &dir, &dataset, &payload)?;
    }
    let mut dataset = dataset;
    let encoding = ringperf_engine::worker::Encoding {
        targets: cfg
            .urls
            .iter()
            .map(|u| (u.host_header.clone(), u.request_path.clone()))
            .collect(),
        headers: request_headers(cfg),
        correlation_copies: cfg.correlation_copies.clone(),
        correlation_header: cfg.session_header.clone().unwrap_or_default(),
        form_seed: cfg.form_data.then_some(cfg.seed),
    };
    let encoded = encode_templates(&mut dataset, cfg, &encoding, streamed.is_none());
    check_interrupt("encoding the requests", "only inputs.json was written")?;
    let (templates, turn_offsets, turn_info) = encoded?;
    // A streamed replay: its requests are built while it runs, from here on.
    let stream = streamed
        .map(|deferred| {
            let slots = super::stream::slots(dataset.turn_count());
            let job = super::stream::Job {
                wanted: super::stream::wanted(cfg, &dataset),
                deferred,
                offsets: turn_offsets.clone(),
                tokenizer: tokenizer.clone(),
                kind: cfg.endpoint,
                params: payload.clone(),
                encoding: encoding.clone(),
                models: model_selector(cfg),
            };
            super::stream::Producer::start(job, slots.clone())
                .map(|p| (slots, p))
                .map_err(|e| {
                    RunError::new(
                        SetupKind::Threads,
                        format!("cannot start the trace's producer thread: {e}"),
                    )
                })
        })
        .transpose()?;
    let stamps_guard = kernel_stamps_guard(cfg);
    let kernel_stamps = stamps_guard.is_some();
    // The shards of a run share its id.
    let benchmark_id = identity
        .as_ref()
        .map_or_else(ringperf_metrics::export::new_benchmark_id, |i| {
            i.manifest.run_id.clone()
        });
    let shared = Arc::new(Shared {
        clock: control.clock(),
        urls: cfg.urls.iter().map(|u| u.addr).collect(),
        request_urls: cfg.urls.iter().map(request_url).collect(),
        tls: tls_connectors(cfg)?,
        dataset,
        turn_offsets: turn_offsets.clone(),
        templates,
        encoding,
        kind: cfg.endpoint,
        payload,
        request_timeout: cfg.request_timeout,
        connection_limit: cfg.connection_limit,
        video_poll_interval: cfg.video_poll_interval,
        reuse: cfg.connection_reuse,
        max_body_bytes: MAX_BODY_BYTES,
        seed: cfg.seed,
        control: control.clone(),
        http_trace: cfg.export_http_trace,
        response_field: cfg.response_field.clone(),
        kernel_stamps,
        tcp_info: cfg.network_latency != crate::config::network::NetworkLatency::Off,
        compact_records: cfg.export_level != ExportLevel::Raw,
        batch_wakeups: (kernel_stamps && !cfg.batch_wakeups.is_zero()).then_some(cfg.batch_wakeups),
        stream: stream.as_ref().map(|(slots, _)| slots.clone()),
        download_video_content: cfg.download_video_content,
        cache_bust: (cfg.random_prompt.cache_bust != CacheBust::None).then(|| Buster {
            target: cfg.random_prompt.cache_bust,
            benchmark_id: benchmark_id.clone(),
            sessions: std::sync::atomic::AtomicU64::new(0),
        }),
    });
    Ok(Prepared {
        tokenizer,
        dir,
        names,
        identity,
        benchmark_id,
        shared,
        turn_offsets: Arc::new(turn_offsets),
        turns: Arc::new(turn_info),
        kernel_stamps,
        agentic,
        _stamps_guard: stamps_guard,
        _producer: stream.map(|(_, p)| p),
        _mock: mock,
        _synthesized: synthesized,
    })
}

/// Ends the preparation when a SIGINT / SIGTERM came during it ([`ringperf_io::control::interrupted`]:
/// the loops it ran stopped early and their partial results are dropped here): exit code 130,
/// one line saying what was being done and what was written.
fn check_interrupt(stage: &str, written: &str) -> Result<(), RunError> {
    match ringperf_io::control::interrupted_by() {
        None => Ok(()),
        Some(name) => Err(RunError::new(
            SetupKind::Interrupted,
            format!("cancelled by {name} while {stage}: no request was sent; {written}"),
        )),
    }
}

/// The tokenizer, loaded on its own thread so that a signal does not wait for a large
/// `tokenizer.json` to be parsed (the thread is left to finish alone when one comes).
fn load_tokenizer(
    spec: &str,
    opts: &workload::tokenizer::LoadOptions,
) -> Result<workload::tokenizer::Tokenizer, RunError> {
    let to_run_error =
        |e: workload::tokenizer::TokenizerError| RunError::new(SetupKind::Tokenizer, e.to_string());
    let (tx, rx) = std::sync::mpsc::channel();
    let owned = spec.to_owned();
    let owned_opts = opts.clone();
    let spawned = std::thread::Builder::new()
        .name("ringperf-tokenizer-load".into())
        .spawn(move || {
            let _ = tx.send(workload::tokenizer::load_with(&owned, &owned_opts));
        });
    if spawned.is_err() {
        return workload::tokenizer::load_with(spec, opts).map_err(to_run_error);
    }
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(loaded) => return loaded.map_err(to_run_error),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                check_interrupt("loading the tokenizer", "nothing was written")?;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(RunError::new(
                    SetupKind::Tokenizer,
                    format!("the tokenizer {spec} could not be loaded (its thread panicked)"),
                ));
            }
        }
    }
}

/// `--mock`: the embedded mock server replaces the URLs with its own loopback address; it
/// reports exact prompt token counts with the run's own tokenizer.
fn start_mock(
    cfg: &mut Config,
    tokenizer: &Arc<workload::tokenizer::Tokenizer>,
) -> Result<Option<ringperf_mock::mock::MockServer>, RunError> {
    let Some(shape) = &cfg.mock else {
        return Ok(None);
    };
    let mut mc = mock_config(shape, &cfg.models[0]);
    mc.prompt_tokenizer = Some(ringperf_mock::mock::PromptTokenizer(tokenizer.clone()));
    let server = ringperf_mock::mock::start(mc).map_err(|e| {
        RunError::new(
            SetupKind::MockServer,
            format!("cannot start the embedded mock server: {e}"),
        )
    })?;
    let url = format!("http://{}", server.addr);
    cfg.urls = vec![
        crate::config::BaseUrl::parse(&url, &cfg.path)
            .map_err(|e| RunError::new(SetupKind::MockServer, format!("mock server URL {e}")))?,
    ];
    note(&format!("embedded mock server listening on {url}"));
    Ok(Some(server))
}

/// What a streamed replay builds its requests from: where the trace's rows are.
type Streamed = workload::loader::DeferredPrompts;

/// The dataset: loaded (a file that cannot be loaded is a setup error: nothing has been written
/// yet) or synthesized, its payload template checked, its bodies built — or, for a streamed
/// replay (`super::stream`), only checked: its bodies are built as the run goes, from what is
/// handed back beside it.
fn build_dataset(
    cfg: &Config,
    payload: &ringperf_wire::endpoint::PayloadParams,
    tokenizer: &workload::tokenizer::Tokenizer,
) -> Result<(workload::Prepared, Option<Streamed>), RunError> {
    let cannot_load = |e: workload::loader::LoadError| {
        RunError::new(SetupKind::Workload, format!("cannot load the dataset: {e}"))
    };
    // The synthetic prompts' token counts, measured as they were made (`prepare_known`).
    let mut known = workload::KnownCounts::default();
    let mut dataset = match &cfg.input.load {
        Some(spec) => {
            match workload::loader::load_deferred(spec, tokenizer).map_err(cannot_load)? {
                workload::loader::Loaded::Whole(dataset) => dataset,
                workload::loader::Loaded::Trace(mut index) => {
                    let sampling = &mut index.skeleton.default_sampling;
                    *sampling = cfg.input.sampling_for(*sampling);
                    // A streamed trace's bodies are built while it runs: with a cache-bust
                    // marker, load it whole so that every body's marker spot is checked first.
                    if cfg.random_prompt.cache_bust == CacheBust::None
                        && super::stream::streams(cfg, &index)
                    {
                        return Ok((index.skeleton, Some(index.rows)));
                    }
                    index.into_dataset(tokenizer).map_err(cannot_load)?
                }
            }
        }
        None => match &cfg.rankings {
            Some(shape) => workload::rankings::build(&synthetic_params(cfg), shape, tokenizer),
            None => {
                let params = chat_template_compensated(
                    with_marker_budget(synthetic_params(cfg), cfg, tokenizer),
                    tokenizer,
                );
                let (mut dataset, counts) = workload::synthetic::build_counted(&params, tokenizer);
                known = counts;
                if let Some(media) = &cfg.media {
                    workload::media::attach(&mut dataset, media, Some(cfg.seed)).map_err(|e| {
                        RunError::new(SetupKind::Workload, format!("cannot make the media: {e}"))
                    })?;
                }
                dataset
            }
        },
    };
    dataset.default_sampling = cfg.input.sampling_for(dataset.default_sampling);
    if let Some(mut s) = model_selector(cfg) {
        s.assign(&mut dataset.conversations);
    }
    // `--system-prompt` / `--system-prompt-file` over a file or public dataset: before any
    // system message the dataset has (one message, as AIPerf joins them).
    if let (Some(_), Some(prompt)) = (&cfg.input.load, &cfg.prompt.shaping.system_prompt) {
        inject_system_prompt(&mut dataset.conversations, prompt)?;
    }
    // A file's turns that name no output length: `--osl`'s draw, as AIPerf finalizes them.
    if let (Some(_), Some(mean)) = (&cfg.input.load, cfg.dataset.osl_mean) {
        workload::osl::fill_missing(
            &mut dataset.conversations,
            f64::from(mean),
            cfg.dataset.osl_stddev,
            Some(cfg.seed),
        );
    }
    if let Some(t) = &payload.template {
        check_template(t, payload, &dataset)?;
    }
    check_form_turns(cfg.endpoint, &dataset)?;
    let prepared = workload::prepare_known(dataset, known, cfg.endpoint, payload, tokenizer);
    check_marker_spots(cfg, &prepared)?;
    check_session_trees(cfg, &prepared)?;
    Ok((prepared, None))
}

/// AIPerf 0.13's custom system prompt over a dataset it loaded: prepended to each
/// conversation's own system message, joined by a blank line, or the message itself. A dataset
/// whose bodies are sent as written (a raw payload, a trace's message lists) is refused: AIPerf
/// merges the text into their messages at its endpoint layer, which ringperf does not build.
fn inject_system_prompt(
    conversations: &mut [ringperf_wire::conversation::Conversation],
    prompt: &str,
) -> Result<(), RunError> {
    use ringperf_wire::conversation::Content;
    for c in conversations.iter_mut() {
        let written =
            (c.turns.iter()).any(|t| matches!(t.content, Content::Raw(_) | Content::Messages(_)));
        if written {
            return Err(RunError::new(
                SetupKind::Workload,
                format!(
                    "--system-prompt / --system-prompt-file: conversation {} sends bodies or \
                     message lists as the dataset writes them, which ringperf does not merge a \
                     system prompt into; put the system message in the dataset",
                    c.session_id
                ),
            ));
        }
        c.system = Some(match c.system.take() {
            Some(own) => format!("{prompt}\n\n{own}"),
            None => prompt.to_owned(),
        });
    }
    Ok(())
}

/// A dataset of session trees (agent traces, docs/datasets.md): its turns build on the earlier
/// turns' messages, which only an endpoint type that replays a conversation sends; and its child
/// conversations are started by their parent's turns, which `--user-centric-rate`'s users (who
/// pick any conversation) cannot honour.
fn check_session_trees(cfg: &Config, prepared: &workload::Prepared) -> Result<(), RunError> {
    let recorded = prepared
        .conversations
        .iter()
        .any(|c| c.context() == ringperf_wire::conversation::ContextMode::Recorded);
    if recorded && cfg.endpoint.descriptor().history.is_none() {
        return Err(RunError::new(
            SetupKind::Workload,
            format!(
                "the dataset's turns carry the earlier turns' messages (an agent trace), which \
                 endpoint type {} does not send; use chat, responses or messages",
                cfg.endpoint.as_str()
            ),
        ));
    }
    let user_centric = std::iter::once(&cfg.profiling)
        .chain(cfg.warmup.as_ref())
        .chain(cfg.phases_after.iter().map(|p| &p.config))
        .any(|p| {
            matches!(
                p.timing.mode,
                crate::config::timing::Mode::UserCentric { .. }
            )
        });
    if prepared.roots.is_some() && user_centric {
        return Err(RunError::new(
            SetupKind::Workload,
            "--user-centric-rate cannot replay a dataset of session trees (an agent trace's \
             subagents are started by their parent's turns); use --concurrency or \
             --request-rate",
        ));
    }
    Ok(())
}

/// `--cache-bust`: every conversation's first body has the text its marker goes into (the
/// system text for a system target when the conversation has a system prompt, else the first
/// user text), as the worker finds it. A record's own message list whose user message is
/// spelled otherwise (`content` before `role`, no text part first) is a setup error naming it,
/// never a request sent without its marker.
fn check_marker_spots(cfg: &Config, prepared: &workload::Prepared) -> Result<(), RunError> {
    let target = cfg.random_prompt.cache_bust;
    if target == CacheBust::None {
        return Ok(());
    }
    for c in &prepared.conversations {
        let Some(body) = c.turns.first().and_then(|t| t.body.as_deref()) else {
            continue;
        };
        let system = target.on_system() && c.system.is_some();
        let at = workload::cache_bust::body_offset(cfg.endpoint, body, system, target.is_prefix());
        if at.is_none() {
            return Err(RunError::new(
                SetupKind::Workload,
                format!(
                    "--cache-bust {}: conversation {}'s first request has no {} text where \
                     the marker goes (ringperf marks a message written `{{\"role\": …, \
                     \"content\": …}}` whose content is a string or starts with a text part)",
                    target.as_str(),
                    c.session_id,
                    if system { "system" } else { "user" }
                ),
            ));
        }
    }
    Ok(())
}

/// The artifact directory, refused early when it cannot be written; an earlier run's files
/// cleared; a shard says who it is before it sends anything.
fn open_artifact_dir(
    cfg: &mut Config,
    control: &RunControl,
) -> Result<(PathBuf, ExportNames, Option<shard::Identity>), RunError> {
    let dir = cfg.artifact_dir.clone();
    fs::create_dir_all(&dir).map_err(|e| {
        RunError::new(
            SetupKind::Artifacts,
            format!("cannot create artifact directory {}: {e}", dir.display()),
        )
    })?;
    let names = ExportNames::new(cfg.export_prefix.as_deref());
    clear_artifact_dir(cfg, &dir, &names)?;
    cfg.plan().write(&dir, &cfg.secrets).map_err(|e| {
        RunError::new(
            SetupKind::Artifacts,
            format!(
                "cannot write {} in {}: {e}",
                crate::plan::PLAN_FILE,
                dir.display()
            ),
        )
    })?;
    write_user_files(cfg, &dir)?;
    let identity = shard::prepare(cfg, control.clock(), &dir)?;
    Ok((dir, names, identity))
}

/// A config file's `artifacts.user_files`, written before anything is sent (AIPerf writes them
/// when it resolves the artifact directory).
fn write_user_files(cfg: &Config, dir: &Path) -> Result<(), RunError> {
    let files = &cfg.plan().file_only.user_files;
    if files.is_empty() {
        return Ok(());
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let url = crate::config::echo::endpoint_urls(cfg, &cfg.plan().settings)
        .into_iter()
        .next()
        .unwrap_or_default();
    let names = super::user_files::RunNames::new(
        dir,
        cfg.models.first().map_or("", String::as_str),
        &url,
        std::env::var("AIPERF_NAMESPACE").ok(),
        now,
    );
    super::user_files::write(files, dir, &names).map_err(|e| RunError::new(SetupKind::Artifacts, e))
}

/// `inputs.json`: each turn as sent alone, serialized straight into the file (one payload
/// held at a time), under a temporary name renamed when whole.
fn write_inputs(
    cfg: &Config,
    dir: &Path,
    dataset: &workload::Prepared,
    payload: &ringperf_wire::endpoint::PayloadParams,
) -> Result<(), RunError> {
    use std::io::Write;
    let path = dir.join(ringperf_metrics::export::owned::INPUTS_FILE);
    let partial = dir.join(format!(
        ".{}.partial",
        ringperf_metrics::export::owned::INPUTS_FILE
    ));
    let cannot = |e: &dyn std::fmt::Display| {
        RunError::new(
            SetupKind::Artifacts,
            format!("cannot write {}: {e}", path.display()),
        )
    };
    let doc = workload::InputsJson {
        prepared: dataset,
        kind: cfg.endpoint,
        params: payload,
    };
    let written = fs::File::create(&partial)
        .map_err(|e| cannot(&e))
        .and_then(|f| {
            let mut out = std::io::BufWriter::with_capacity(1 << 20, f);
            serde_json::to_writer_pretty(&mut out, &doc).map_err(|e| cannot(&e))?;
            out.flush().map_err(|e| cannot(&e))
        });
    // A partial inputs.json (its building stopped early) is never written.
    let interrupted = check_interrupt("writing inputs.json", "inputs.json was not written");
    if let Err(e) = written.and(interrupted) {
        let _ = fs::remove_file(&partial);
        return Err(e);
    }
    fs::rename(&partial, &path).map_err(|e| cannot(&e))
}

/// Encodes every turn that has its body (moving the body out of the dataset), for every URL;
/// returns the templates (`[url][turn]`; none at all without `per_turn`: a streamed replay,
/// whose requests are built as it runs), each conversation's first-turn index, and what the
/// aggregator needs to know of each turn.
#[allow(clippy::type_complexity)]
fn encode_templates(
    dataset: &mut workload::Prepared,
    cfg: &Config,
    encoding: &ringperf_engine::worker::Encoding,
    per_turn: bool,
) -> Result<
    (
        Vec<Vec<Option<ringperf_wire::http::EncodedRequest>>>,
        Vec<usize>,
        Vec<ringperf_engine::aggregator::TurnInfo>,
    ),
    RunError,
> {
    let total = dataset.turn_count();
    let mut templates: Vec<Vec<Option<ringperf_wire::http::EncodedRequest>>> = (0..cfg.urls.len())
        .map(|_| Vec::with_capacity(if per_turn { total } else { 0 }))
        .collect();
    let mut offsets = Vec::with_capacity(dataset.conversations.len());
    let mut info = Vec::with_capacity(total);
    // The schedule a replay is held to is the trace's, sped up: a record's scheduled send time
    // is its timestamp divided by `--replay-speedup`, as AIPerf's loader scales a trace's
    // timestamps (the anchored send lag would otherwise grow with the speedup).
    let speedup = match cfg.profiling.timing.mode {
        crate::config::timing::Mode::FixedSchedule(fs) => fs.speedup,
        _ => 1.0,
    };
    // AIPerf's `audio_duration` of a chat (or Responses) request: the first clip of the
    // conversation's first turn, known for synthetic audio only (docs/metrics.md, "Audio").
    let chat_audio = matches!(
        cfg.endpoint,
        ringperf_wire::endpoint::EndpointKind::Chat
            | ringperf_wire::endpoint::EndpointKind::Responses
    ) && !cfg.input.reads_file()
        && cfg.media.as_ref().is_some_and(|m| m.audio.is_some());
    for c in &mut dataset.conversations {
        if ringperf_io::control::interrupted() {
            break;
        }
        offsets.push(info.len());
        let mut first_clip: Option<Option<f64>> = None;
        for t in &mut c.turns {
            info.push(ringperf_engine::aggregator::TurnInfo {
                conversation_id: c.session_id.clone(),
                isl_tokens: t.isl_tokens,
                images: t.images,
                max_tokens: t.max_tokens.map(u64::from),
                timestamp_ms: t.timestamp_ms.map(|ms| ms / speedup),
                audio_seconds: None,
                prefix_blocks: t.prefix_blocks(),
                source: t.agent.as_ref().and_then(|a| a.source.clone()),
            });
            let body = t.body.take();
            if let (Some(b), Some(last)) = (&body, info.last_mut())
                && cfg.endpoint == ringperf_wire::endpoint::EndpointKind::AudioTranscription
            {
                last.audio_seconds = workload::form::clip_seconds(b);
            }
            if chat_audio && let Some(last) = info.last_mut() {
                let clip = first_clip.get_or_insert_with(|| {
                    body.as_deref().and_then(workload::form::chat_clip_seconds)
                });
                last.audio_seconds = *clip;
            }
            if !per_turn {
                continue;
            }
            let mut requests = match &body {
                None => None,
                Some(b) => Some(encoding.encode_turn(b, (info.len() - 1) as u64).map_err(
                    |err| {
                        let url = match &err {
                            workload::form::EncodeError::Http { url, .. } => *url,
                            workload::form::EncodeError::Form(_) => 0,
                        };
                        RunError::new(
                            SetupKind::Workload,
                            format!(
                                "cannot encode the request for {}: {err}",
                                cfg.urls[url].display
                            ),
                        )
                    },
                )?),
            }
            .map(Vec::into_iter);
            for per_url in &mut templates {
                per_url.push(requests.as_mut().and_then(Iterator::next));
            }
        }
    }
    Ok((templates, offsets, info))
}

/// The URL a request goes to, `scheme://host:port/path` (the port always written, an IPv6
/// host in brackets), for error messages.
fn request_url(u: &crate::config::BaseUrl) -> String {
    let scheme = if u.https { "https" } else { "http" };
    let host = if u.host.contains(':') && !u.host.starts_with('[') {
        format!("[{}]", u.host)
    } else {
        u.host.clone()
    };
    format!("{scheme}://{host}:{}{}", u.port, u.request_path)
}

fn request_headers(cfg: &Config) -> Vec<(String, String)> {
    let mut h = vec![
        (
            "User-Agent".to_string(),
            format!("ringperf/{}", env!("CARGO_PKG_VERSION")),
        ),
        (
            "Accept".to_string(),
            if cfg.streaming {
                "text/event-stream"
            } else {
                "application/json"
            }
            .to_string(),
        ),
    ];
    // A form's Content-Type names its boundary: each request writes its own.
    if !cfg.form_data {
        h.push(("Content-Type".to_string(), "application/json".to_string()));
    }
    h.extend(cfg.headers.iter().cloned());
    h
}

/// The model of each turn when several are given (`--model-selection-strategy`).
pub(super) fn model_selector(cfg: &Config) -> Option<workload::models::ModelSelector> {
    workload::models::ModelSelector::new(&cfg.models, cfg.model_selection, Some(cfg.seed))
}

/// `--cache-bust`: AIPerf's ISL budget for the marker (`_init_isl_compensation`). Its mean
/// token cost comes off the first turn's prompt when it lands there, or off a synthetic shared
/// system prompt when it lands on that (a verbatim one takes it on top).
fn with_marker_budget(
    mut p: workload::SyntheticParams,
    cfg: &Config,
    tokenizer: &workload::Tokenizer,
) -> workload::SyntheticParams {
    let target = cfg.random_prompt.cache_bust;
    let cost = workload::cache_bust::estimate_tokens(target, |s| tokenizer.count(s));
    let s = &mut p.shaping;
    let has_system = s.system_prompt.is_some() || s.shared_system_length.is_some();
    if target.on_system() && has_system {
        if s.system_prompt.is_none() {
            s.shared_system_length = s
                .shared_system_length
                .map(|n| n.saturating_sub(cost).max(1));
        }
    } else {
        s.first_turn_isl_adjustment += cost;
    }
    p
}

fn synthetic_params(cfg: &Config) -> workload::SyntheticParams {
    let p = &cfg.prompt;
    let mut shaping = p.shaping.clone();
    // The windows follow the means a sweep's variation may have changed.
    shaping.range_ratio = (cfg.random_prompt.range_ratio)
        .map(|r| r.sampler(cfg.dataset.isl_mean, cfg.dataset.osl_mean.unwrap_or(1)));
    workload::SyntheticParams {
        isl_mean: cfg.dataset.isl_mean,
        isl_stddev: cfg.dataset.isl_stddev,
        osl_mean: cfg.dataset.osl_mean,
        osl_stddev: cfg.dataset.osl_stddev,
        num_dataset_entries: cfg.dataset.entries,
        seed: Some(cfg.seed),
        sequential_ids: cfg.seed_given,
        shaping,
    }
}

/// `--apply-chat-template` on synthetic prompts: each turn's drawn ISL shortened by the
/// template's overhead, so that what the templated count adds for it is the length drawn, as
/// AIPerf compensates (`first_turn_isl_adjustment`, `subsequent_turn_isl_adjustment`): a first
/// turn by one request's fixed cost and one message's wrap, a later turn by one message's wrap;
/// whatever drew the length (the means, `--seq-dist`, `--random-range-ratio`).
fn chat_template_compensated(
    mut params: workload::SyntheticParams,
    tokenizer: &workload::tokenizer::Tokenizer,
) -> workload::SyntheticParams {
    if let Some(t) = tokenizer.chat_template() {
        let (fixed, wrap) = t.overheads(|text| tokenizer.count(text));
        params.shaping.first_turn_isl_adjustment += fixed + wrap;
        params.shaping.later_turn_isl_adjustment += wrap;
    }
    params
}

/// Renders every turn's payload template before anything is sent: a turn whose rendering is not
/// a JSON object is a setup error naming it (the bodies built for the run are these renderings).
fn check_template(
    template: &ringperf_wire::endpoint::PayloadTemplate,
    params: &ringperf_wire::endpoint::PayloadParams,
    dataset: &ringperf_wire::conversation::Dataset,
) -> Result<(), RunError> {
    for c in &dataset.conversations {
        if ringperf_io::control::interrupted() {
            break;
        }
        for (i, turn) in c.turns.iter().enumerate() {
            if matches!(turn.content, ringperf_wire::conversation::Content::Raw(_)) {
                continue;
            }
            template.render(params, turn).map_err(|e| {
                RunError::new(
                    SetupKind::Workload,
                    format!(
                        "--extra-inputs {e} (conversation {}, turn {i})",
                        c.session_id
                    ),
                )
            })?;
        }
    }
    Ok(())
}

/// The turns, checked before anything is sent: a form-data type's turn without the image (or
/// clip) it uploads, or without image edit's prompt, and a medium the type has no content part
/// for (video on Responses, audio and video on Anthropic Messages) are a setup error naming the
/// turn (AIPerf fails each such request when it formats it).
fn check_form_turns(
    kind: ringperf_wire::endpoint::EndpointKind,
    dataset: &ringperf_wire::conversation::Dataset,
) -> Result<(), RunError> {
    let form = ringperf_wire::endpoint::kinds::form_checker(kind);
    for c in &dataset.conversations {
        for (i, turn) in c.turns.iter().enumerate() {
            if matches!(turn.content, ringperf_wire::conversation::Content::Raw(_)) {
                continue;
            }
            if let Some(refusal) = ringperf_wire::endpoint::payload::unsupported_media(kind, turn) {
                return Err(RunError::new(
                    SetupKind::Workload,
                    format!(
                        "--endpoint-type {kind}: {refusal} (conversation {}, turn {i})",
                        c.session_id
                    ),
                ));
            }
            let Some(check) = form else {
                continue;
            };
            check(turn).map_err(|e| {
                RunError::new(
                    SetupKind::Workload,
                    format!(
                        "--endpoint-type {kind}: {e} (conversation {}, turn {i})",
                        c.session_id
                    ),
                )
            })?;
        }
    }
    Ok(())
}

fn payload_params(cfg: &Config) -> ringperf_wire::endpoint::PayloadParams {
    ringperf_wire::endpoint::PayloadParams {
        model: cfg.models[0].clone(),
        streaming: cfg.streaming,
        use_legacy_max_tokens: cfg.use_legacy_max_tokens,
        per_chunk_usage: cfg.outputs.per_chunk_usage,
        extra_inputs: cfg.extra_inputs.clone(),
        use_server_token_count: cfg.use_server_token_count,
        template: cfg.payload_template.clone(),
    }
}

fn mock_config(shape: &crate::config::MockShape, model: &str) -> ringperf_mock::mock::MockConfig {
    ringperf_mock::mock::MockConfig {
        bind: "127.0.0.1:0".parse().expect("valid literal address"),
        threads: shape.threads,
        ttft: shape.ttft,
        itl: shape.itl,
        output_tokens: ringperf_mock::mock::OutputLen::Fixed(shape.output_tokens as u64),
        tokens_per_event: shape.tokens_per_event,
        reasoning_tokens: shape.reasoning_tokens,
        faults: shape.faults.clone(),
        capacity: shape.capacity,
        max_model_len: shape.max_model_len,
        model: model.to_string(),
        ..Default::default()
    }
}

/// With `--timestamps kernel`, a socket holding the kernel's receive stamping on for the run
/// (`None`: user-space stamps, said once in the log when kernel stamps were asked for but the
/// machine does not give them).
fn kernel_stamps_guard(cfg: &Config) -> Option<std::net::TcpListener> {
    if !cfg.kernel_stamps {
        return None;
    }
    match ringperf_io::net::rxstamp::probe() {
        Ok(guard) => Some(guard),
        Err(e) => {
            log(
                cfg,
                &format!("kernel receive stamps unavailable ({e}): using user-space stamps"),
            );
            None
        }
    }
}

/// Removes what an earlier run left in `dir` under the names this run writes, and says so: an
/// earlier run's files must not sit beside this run's as if they were its own. The run's own
/// dataset file is never removed.
pub(crate) fn clear_artifact_dir(
    cfg: &Config,
    dir: &Path,
    names: &ExportNames,
) -> Result<(), RunError> {
    let input_file: Vec<PathBuf> =
        cfg.input
            .load
            .as_ref()
            .and_then(|spec| match &spec.source {
                workload::loader::Source::File { path, .. } => Some(path.clone()),
                workload::loader::Source::ShareGpt { input_file } => input_file.clone(),
                workload::loader::Source::Inline { .. }
                | workload::loader::Source::WekaHub { .. } => None,
            })
            .into_iter()
            .collect();
    let removed = ringperf_metrics::export::owned::remove_previous(dir, names, &input_file)
        .map_err(|e| {
            RunError::new(
                SetupKind::Artifacts,
                format!("cannot clear the artifact directory: {e}"),
            )
        })?;
    if let Some(msg) = ringperf_metrics::export::owned::removed_note(dir, &removed) {
        note(&msg);
    }
    Ok(())
}

/// The TLS connector of every `https://` base URL (`None` for `http://`); one client
/// configuration (roots, verification) shared by all, built only when some URL needs it.
fn tls_connectors(cfg: &Config) -> Result<Vec<Option<ringperf_io::net::Connector>>, RunError> {
    if !cfg.urls.iter().any(|u| u.https) {
        return Ok(vec![None; cfg.urls.len()]);
    }
    let verify = if cfg.tls.verify {
        ringperf_io::net::Verify::On
    } else {
        ringperf_io::net::Verify::Off
    };
    let client = ringperf_io::net::TlsClient::new(verify, cfg.tls.ca_file.as_deref())?;
    cfg.urls
        .iter()
        .map(|u| {
            u.https
                .then(|| client.connector(&u.display, &u.host))
                .transpose()
                .map_err(|e| RunError::new(SetupKind::Tls, format!("--url {e}")))
        })
        .collect()
}
