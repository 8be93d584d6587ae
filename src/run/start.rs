//! Stage 2 of a run, starting its threads: the per-request sinks (records JSONL, raw export),
//! the aggregator thread, the workers, then the collectors beside them (the server-metrics and
//! GPU-telemetry scrapers, each taking a baseline before warmup).

use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

use super::error::{RunError, SetupKind};
use super::prepare::Prepared;
use super::{Progress, gpu_telemetry, log, placement, server_metrics};
use crate::config::{Config, ExportLevel};
use ringperf_engine::scrape::collector::Scraper;
use ringperf_engine::worker::{Shared, Workers};
use ringperf_io::control::{ErrorBudget, RunControl};
use ringperf_metrics::aggregate::MetricConfig;
use ringperf_metrics::export::JsonlWriter;
use ringperf_wire::record::Phase;
use ringperf_wire::record::ring::{Consumer, Doorbell, ring_with_bell};

/// Ring capacity per worker: a second of records at very high rates, bounded memory.
const RING_CAPACITY: usize = 16 * 1024;
/// Bytes of response bodies one worker's ring may hold while the aggregator catches up.
const RING_MAX_BYTES: u64 = 128 << 20;

/// The run's threads, started.
pub(super) struct Started {
    /// The aggregator thread; it hands back what it collected once every ring is closed.
    pub aggregator: JoinHandle<ringperf_engine::aggregator::Collected>,
    pub workers: Workers,
    /// The workers' I/O driver (`io_uring`, `epoll`).
    pub driver: String,
    /// The live counters (and `--ui dashboard`'s board) the aggregator publishes.
    pub progress: Arc<Progress>,
    pub collectors: Collectors,
    /// Where the phases' starts and ends are marked for the `timing` stream domain.
    pub board: Arc<ringperf_metrics::lab::timing::PhaseBoard>,
    /// The host's CPU counters as the workers started (`None`: `/proc` unreadable).
    pub host: Option<super::host::Start>,
    /// `--api-port`: the live API the run publishes to.
    pub api: Option<Arc<crate::api::Live>>,
    /// The adaptive phases' feed of records (`None`: the run has none).
    pub adaptive_tap: Option<Arc<ringperf_metrics::adaptive::tap::Tap>>,
}

/// Starts the aggregator, the workers and the collectors, in that order. `mlflow`: the live
/// MLflow feed the aggregator hands values to.
pub(super) fn start(
    cfg: &Config,
    prepared: &Prepared,
    control: &Arc<RunControl>,
    mlflow: Option<ringperf_metrics::lab::live::LiveFeed>,
    api: Option<&Arc<crate::api::Live>>,
) -> Result<Started, RunError> {
    // Rung by the workers' pushes: the aggregator sleeps through a quiet stretch.
    let bell = Doorbell::new();
    let (producers, consumers): (Vec<_>, Vec<_>) = (0..cfg.workers)
        .map(|_| ring_with_bell(RING_CAPACITY, RING_MAX_BYTES, Some(bell.clone())))
        .unzip();
    // `--ui dashboard`: what the aggregator (and the scrapers) publish for it.
    let board = (cfg.ui == crate::config::UiType::Dashboard)
        .then(|| Arc::new(ringperf_engine::ui::Board::default()));
    let phase_board = Arc::new(ringperf_metrics::lab::timing::PhaseBoard::default());
    let mut collector = collector(cfg, prepared, consumers, board, control)?;
    collector.live = live_sinks(cfg, mlflow, &phase_board);
    collector.api = api.map(|a| ringperf_engine::aggregator::LiveLink {
        view: a.clone(),
        board: phase_board.clone(),
    });
    // An adaptive phase's controller reads its phase's records as the aggregator takes them.
    let adaptive_tap = cfg
        .has_adaptive()
        .then(|| Arc::new(ringperf_metrics::adaptive::tap::Tap::default()));
    collector.adaptive = adaptive_tap.clone();
    let progress = collector.progress.clone();
    let cores: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    // A core no worker takes, when there is one (fewer workers than cores): the aggregator runs
    // there instead of preempting a worker.
    let aggregator_core = placement::aggregator_core(&cores, cfg.workers);
    let aggregator =
        ringperf_engine::aggregator::spawn(collector, aggregator_core).map_err(|e| {
            RunError::new(
                SetupKind::Threads,
                format!("cannot start the aggregator thread: {e}"),
            )
        })?;
    let host = super::host::Start::take();
    let workers = Workers::spawn(prepared.shared.clone(), producers, cfg.io_driver, &cores)
        .map_err(|e| RunError::new(SetupKind::Threads, format!("cannot start the workers: {e}")))?;
    let driver = workers
        .drivers
        .first()
        .map_or("epoll", |d| d.as_str())
        .to_string();
    log(
        cfg,
        &format!(
            "{} on the {driver} driver, {}; aggregator {}",
            ringperf_metrics::export::plural(workers.len() as u64, "worker"),
            placement::describe_pinning(&workers.pinned),
            aggregator_core.map_or("unpinned (no free core)".to_string(), |c| format!(
                "pinned to core {c}"
            ))
        ),
    );
    let collectors = Collectors::start(
        cfg,
        prepared,
        &workers.pinned,
        server_metrics::Feeds {
            board: progress.board.as_ref(),
            api,
            progress: &progress,
        },
    );
    Ok(Started {
        aggregator,
        workers,
        driver,
        progress,
        collectors,
        board: phase_board,
        host,
        api: api.cloned(),
        adaptive_tap,
    })
}

/// Each profiling phase's error budget, by its number in the run: the first's
/// `--failed-request-threshold`, a later one's own `failed_request_threshold`; armed after
/// max(its concurrency, 10) of its records, as AIPerf arms it.
fn error_budgets(cfg: &Config) -> Vec<(u8, ErrorBudget, Option<String>)> {
    let first = (cfg.phase_list().iter())
        .position(|p| p.kind == Phase::Profiling)
        .unwrap_or(0);
    let later = (cfg.phase_list().iter().enumerate())
        .skip(first + 1)
        .filter(|(_, p)| p.kind == Phase::Profiling)
        .map(|(i, _)| i)
        .zip(
            &cfg.phases_after
                .iter()
                .filter(|p| !p.warmup)
                .collect::<Vec<_>>(),
        )
        .filter_map(|(i, p)| {
            let t = p.failed_request_threshold?;
            Some((i, t, &p.config, Some(p.name.clone())))
        })
        .collect::<Vec<_>>();
    (cfg.failed_request_threshold
        .map(|t| (first, t, &cfg.profiling, None))
        .into_iter())
    .chain(later)
    .map(|(i, threshold, p, name)| {
        let floor = p.load.max_in_flight().unwrap_or(0).max(10);
        (i as u8, ErrorBudget { threshold, floor }, name)
    })
    .collect()
}

/// What the aggregator thread runs with: the rings' consumer ends, the per-request sinks, the
/// metric configuration and the error budget.
fn collector(
    cfg: &Config,
    prepared: &Prepared,
    consumers: Vec<Consumer>,
    board: Option<Arc<ringperf_engine::ui::Board>>,
    control: &Arc<RunControl>,
) -> Result<ringperf_engine::aggregator::Collector, RunError> {
    let jsonl = jsonl_sink(cfg, prepared)?;
    let raw = raw_sink(cfg, prepared)?;
    let progress = Arc::new(Progress {
        board,
        ..Progress::default()
    });
    let metric_cfg = MetricConfig {
        goodput: cfg.goodput.clone(),
        // Any profiling phase on a fixed schedule: the replay metrics are the run's, as AIPerf's.
        fixed_schedule: (cfg.phase_list().iter()).any(|p| {
            p.kind == Phase::Profiling
                && matches!(
                    p.config.timing.mode,
                    crate::config::timing::Mode::FixedSchedule(_)
                )
        }),
        ..crate::config::metric_config(cfg.endpoint, cfg.streaming, cfg.use_server_token_count)
    };
    Ok(ringperf_engine::aggregator::Collector {
        consumers,
        phases: if cfg.phase_by_phase() {
            cfg.phase_list().iter().map(|p| p.kind).collect()
        } else {
            Vec::new()
        },
        kind: cfg.endpoint,
        response_field: cfg.response_field.clone(),
        tokenizer: prepared.tokenizer.clone(),
        turns: prepared.turns.clone(),
        turn_offsets: prepared.turn_offsets.clone(),
        stream: prepared.shared.stream.clone(),
        clock: prepared.shared.clock,
        metric_cfg: metric_cfg.clone(),
        use_server_token_count: cfg.use_server_token_count,
        per_chunk_usage: cfg.outputs.per_chunk_usage,
        outputs: cfg
            .outputs
            .export_outputs_json
            .then(ringperf_metrics::export::outputs_json::OutputsJson::default),
        jsonl,
        raw,
        timeslices: cfg.slice_duration.map(|d| {
            ringperf_metrics::export::timeslices::TimesliceCollector::new(
                metric_cfg.clone(),
                d.as_nanos() as u64,
            )
        }),
        progress,
        control: control.clone(),
        budgets: error_budgets(cfg),
        stop_grace: cfg.stop_grace,
        otel: otel_exporter(cfg),
        live: None,
        realtime: cfg
            .realtime
            .map(|r| ringperf_engine::aggregator::RealtimeBlock {
                every: r.every,
                print: r.print,
                via_progress: cfg.ui == crate::config::UiType::Progress,
            }),
        api: None,
        skip_context_overflows: cfg.scenario.is_some(),
        adaptive: None,
    })
}

/// The live sinks besides the OTLP histograms: MLflow's live values (`mlflow`) and the timing
/// domain (to OTLP with `--stream` selecting it, to MLflow always, as AIPerf streams both
/// domains there); `None` when neither is on.
fn live_sinks(
    cfg: &Config,
    mlflow: Option<ringperf_metrics::lab::live::LiveFeed>,
    board: &Arc<ringperf_metrics::lab::timing::PhaseBoard>,
) -> Option<ringperf_metrics::lab::live::Live> {
    use ringperf_metrics::lab::live::{Expected, Live};
    use ringperf_metrics::lab::otel::{RunLabels, operation_name, provider_name};
    let otlp_timing = cfg.otel.as_ref().is_some_and(|o| o.timing);
    if mlflow.is_none() && !otlp_timing {
        return None;
    }
    let urls: Vec<String> = cfg.urls.iter().map(|u| u.display.clone()).collect();
    let model = cfg.models.first().map_or("", String::as_str);
    let o = cfg.otel.as_ref();
    let labels = RunLabels {
        resource: Vec::new(),
        operation: operation_name(cfg.endpoint.as_str()),
        provider: provider_name(o.and_then(|o| o.provider.as_deref()), &urls),
        model: model.to_owned(),
    };
    let expected = |p: Option<&crate::config::PhaseConfig>| {
        p.map_or_else(Expected::default, |p| Expected {
            requests: p.request_count,
            duration_sec: p.duration.map(|d| d.as_secs_f64()),
            sessions: p.sessions,
        })
    };
    let expected = [
        expected(cfg.warmup.as_ref()),
        expected(Some(&cfg.profiling)),
    ];
    // Without --otel-url, --stream cannot be given: both domains, as AIPerf's default.
    let (metrics, timing) = o.map_or((true, true), |o| (o.metrics, o.timing));
    Some(Live::new(
        mlflow,
        metrics,
        timing.then(|| (board.clone(), &labels, expected)),
        otlp_timing,
    ))
}

/// `--otel-url` with a stream domain: the exporter the aggregator feeds; `None` (with one
/// warning line) when its thread cannot start, for the run goes on without it.
fn otel_exporter(cfg: &Config) -> Option<ringperf_metrics::lab::otel::Exporter> {
    use ringperf_metrics::lab::otel::{Exporter, Fold, RunLabels};
    let o = cfg.otel.as_ref().filter(|o| o.metrics || o.timing)?;
    let urls: Vec<String> = cfg.urls.iter().map(|u| u.display.clone()).collect();
    let model = cfg.models.first().map_or("", String::as_str);
    let labels = RunLabels::new(o, cfg.endpoint.as_str(), model, &urls);
    let fold = Fold::new(labels, ringperf_wire::clock::wall_now_ns());
    Exporter::start(o, fold)
        .map_err(|e| super::note(&format!("warning: OTLP export off: {e}")))
        .ok()
}

/// The per-request records file (every export level but `summary`), created now.
fn jsonl_sink(
    cfg: &Config,
    prepared: &Prepared,
) -> Result<Option<(PathBuf, JsonlWriter)>, RunError> {
    if !cfg.export_level.records() {
        return Ok(None);
    }
    let path = prepared.dir.join(&prepared.names.jsonl);
    let w = JsonlWriter::create(&path, 0)
        .map_err(|e| cannot_create(&path, &e))?
        .with_phases(cfg.phase_layout())
        .with_http_trace(cfg.export_http_trace.then(|| {
            ringperf_metrics::export::trace_data::TraceContext {
                headers: sent_headers(&prepared.shared),
                targets: cfg
                    .urls
                    .iter()
                    .map(|u| (u.host_header.clone(), u.addr))
                    .collect(),
            }
        }));
    Ok(Some((path, w)))
}

/// `--export-level raw`: the raw export's writer, created now.
fn raw_sink(
    cfg: &Config,
    prepared: &Prepared,
) -> Result<Option<ringperf_engine::aggregator::RawSink>, RunError> {
    if cfg.export_level != ExportLevel::Raw {
        return Ok(None);
    }
    let path = prepared.dir.join(&prepared.names.raw_jsonl);
    let ctx = ringperf_metrics::export::raw::RawContext {
        sent: sent_headers(&prepared.shared),
        monotonic_origin_ns: prepared.shared.clock.raw_ns(0),
    };
    let writer = ringperf_metrics::export::raw::RawWriter::create(&path, ctx)
        .map_err(|e| cannot_create(&path, &e))?;
    Ok(Some(ringperf_engine::aggregator::RawSink {
        path,
        writer,
        shared: prepared.shared.clone(),
    }))
}

fn cannot_create(path: &std::path::Path, e: &dyn std::fmt::Display) -> RunError {
    RunError::new(
        SetupKind::Artifacts,
        format!("cannot create {}: {e}", path.display()),
    )
}

/// The headers every request carries and the id headers, for the raw export and the HTTP trace.
fn sent_headers(shared: &Shared) -> ringperf_metrics::export::headers::SentHeaders {
    ringperf_metrics::export::headers::SentHeaders {
        headers: shared.encoding.headers.clone(),
        request_id_header: ringperf_wire::http::request::REQUEST_ID_HEADER.to_string(),
        correlation_id_header: shared.encoding.correlation_header().to_string(),
        correlation_copies: shared
            .encoding
            .correlation_copies
            .iter()
            .map(ToString::to_string)
            .collect(),
    }
}

/// The collectors beside the workers: the server-metrics scraper and the GPU-telemetry one
/// (either `None` when off or nothing answered).
pub(super) struct Collectors {
    pub server_metrics: Option<Scraper>,
    pub gpu: Option<Scraper>,
    /// `--network-latency-automatic`'s probes.
    pub network: Option<super::network::Prober>,
}

impl Collectors {
    /// Server metrics first (reachability check and baseline scrape before warmup), then GPU
    /// telemetry, the same for the DCGM exporters.
    fn start(
        cfg: &Config,
        prepared: &Prepared,
        busy_cores: &[Option<usize>],
        feeds: server_metrics::Feeds<'_>,
    ) -> Self {
        let clock = prepared.shared.clock;
        let board = feeds.board;
        let server_metrics = server_metrics::start(
            cfg,
            clock,
            &prepared.dir,
            &prepared.names,
            busy_cores,
            feeds,
        );
        let gpu = gpu_telemetry::start(cfg, clock, busy_cores, board);
        Self {
            server_metrics,
            gpu,
            network: super::network::Prober::start(cfg),
        }
    }

    /// Marks the start of `phase` for both; profiling's starts the network probes.
    pub fn phase_start(&mut self, phase: Phase, index: u8) {
        server_metrics::phase_start(&mut self.server_metrics, phase, index);
        server_metrics::phase_start(&mut self.gpu, phase, index);
        if let (Phase::Profiling, Some(p)) = (phase, &self.network) {
            p.profiling_start();
        }
    }

    /// A config file's next profiling phase, the run's phase number `index`, starts.
    pub fn next_profiling_phase(&mut self, index: u8) {
        server_metrics::next_profiling_phase(&mut self.server_metrics, index);
        server_metrics::next_profiling_phase(&mut self.gpu, index);
    }

    /// The end of warmup: the awaited end-of-warmup scrape of server metrics. None for GPU
    /// telemetry (AIPerf takes none): a slow DCGM exporter never holds profiling back; the
    /// counters' baseline is the last periodic scrape before profiling starts.
    pub fn warmup_end(&mut self) {
        server_metrics::phase_end(&mut self.server_metrics, Phase::Warmup);
    }

    /// The end of a warmup handing over to a seamless phase: its scrape is not waited for.
    pub fn warmup_handed_over(&mut self) {
        server_metrics::warmup_handed_over(&mut self.server_metrics);
    }

    /// The end of profiling, for both.
    pub fn profiling_end(&mut self) {
        server_metrics::phase_end(&mut self.server_metrics, Phase::Profiling);
        server_metrics::phase_end(&mut self.gpu, Phase::Profiling);
    }
}
