//! A profile run from a validated [`Config`] to its artifacts: build the workload, start the
//! aggregator and the workers, drive the phases, write every export.

mod collect;

mod dispatch;
mod gpu_telemetry;
mod health;
mod multi;
mod placement;
mod server_metrics;
mod shard;
mod ui;
mod warm;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::aggregate::MetricConfig;
use crate::clock::Clock;
use crate::config::timing::Mode as TimingMode;
use crate::config::{Config, ExportLevel, Load, PhaseConfig};
use crate::export::phases::PhaseRun;
use crate::export::{ExportNames, JsonlWriter, RunInfo};
use crate::record::Phase;
use crate::record::ring::ring_bounded;
use crate::worker::{
    CreditSource, OpenKind, PhaseCounters, PhasePlan, Shared, TurnTiming, Workers,
};
use crate::workload;

pub use crate::control::{ErrorBudget, RunControl, StopReason};
pub use collect::Progress;

/// How a run ended, for the exit code.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub successes: u64,
    pub errors: u64,
    /// Why the run stopped early, if it did.
    pub stopped: Option<StopReason>,
    /// `--max-client-lag-us` was given and the client-health verdict failed.
    pub client_fell_behind: bool,
    pub artifact_dir: PathBuf,
}

impl Outcome {
    /// The exit-code policy (docs/exit-codes in README): 130 cancelled by a signal, 3 error
    /// budget crossed, 1 no request succeeded, 5 the client fell behind under
    /// `--max-client-lag-us`, 0 otherwise. (2 is for usage and setup errors.)
    pub fn exit_code(&self) -> u8 {
        match &self.stopped {
            Some(StopReason::Signal(_)) => 130,
            Some(StopReason::ErrorBudget { .. }) => 3,
            None if self.successes == 0 => 1,
            None if self.client_fell_behind => 5,
            None => 0,
        }
    }
}

/// How the run is embedded.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// Take SIGINT / SIGTERM: the first stops the run gracefully, the second exits at once.
    /// Only for the binary: it blocks the signals in the calling thread for the run.
    pub handle_signals: bool,
}

/// A setup failure: one message, printed once.
#[derive(Debug)]
pub struct RunError(pub String);

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RunError {}

/// Ring capacity per worker: a second of records at very high rates, bounded memory.
const RING_CAPACITY: usize = 16 * 1024;
/// Largest response body accepted (bodies are kept whole for token counting).
const MAX_BODY_BYTES: u64 = 256 << 20;
/// Bytes of response bodies one worker's ring may hold while the aggregator catches up.
const RING_MAX_BYTES: u64 = 128 << 20;

/// Runs the benchmark described by `cfg` and writes its artifacts (no signal handling).
pub fn run(cfg: Config) -> Result<Outcome, RunError> {
    run_with(cfg, RunOptions::default())
}

/// Runs the benchmark described by `cfg` and writes its artifacts: once, or
/// `--num-profile-runs` times with the aggregate across the runs ([`multi`]).
pub fn run_with(cfg: Config, opts: RunOptions) -> Result<Outcome, RunError> {
    if cfg.multi_run.is_repeated() {
        return multi::run_many(cfg, opts);
    }
    let control = Arc::new(RunControl::new(Clock::start()));
    if !opts.handle_signals {
        return run_inner(cfg, control);
    }
    let watch = {
        let (control, grace) = (control.clone(), cfg.stop_grace);
        SignalWatch::start(move |name| control.stop_after(StopReason::Signal(name), grace))?
    };
    let result = run_inner(cfg, control);
    watch.stop();
    result
}

/// The binary's signal thread: SIGINT / SIGTERM are blocked in the calling thread (before any
/// other thread exists, so that only this one ever takes them); the first calls `on_first`,
/// the second exits at once.
struct SignalWatch {
    set: crate::signals::TermSignals,
    done: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl SignalWatch {
    fn start(on_first: impl Fn(&'static str) + Send + 'static) -> Result<Self, RunError> {
        let set = crate::signals::block_term_signals()
            .map_err(|e| RunError(format!("cannot block SIGINT/SIGTERM: {e}")))?;
        let done = Arc::new(AtomicBool::new(false));
        let thread = {
            let done = done.clone();
            std::thread::Builder::new()
                .name("ringperf-signals".into())
                .spawn(move || signal_loop(&set, &done, &on_first))
                .map_err(|e| RunError(format!("cannot start the signal thread: {e}")))?
        };
        Ok(Self { set, done, thread })
    }

    /// Ends the thread and unblocks the signals again.
    fn stop(self) {
        self.done.store(true, Ordering::Release);
        let _ = self.thread.join();
        crate::signals::unblock(&self.set);
    }
}

/// First signal: `on_first` (stop issuing; requests in flight get the grace period). Second:
/// exit now.
fn signal_loop(
    set: &crate::signals::TermSignals,
    done: &AtomicBool,
    on_first: &dyn Fn(&'static str),
) {
    let mut seen = 0;
    while !done.load(Ordering::Acquire) {
        let Some(name) = crate::signals::wait_signal_timeout(set, Duration::from_millis(100))
        else {
            continue;
        };
        seen += 1;
        if seen == 1 {
            on_first(name);
            eprintln!(
                "ringperf: {name}: stopping; requests in flight get the grace period. \
                 Press Ctrl+C again to force quit."
            );
        } else {
            eprintln!("ringperf: {name} again: force quit");
            std::process::exit(130);
        }
    }
}

fn run_inner(mut cfg: Config, control: Arc<RunControl>) -> Result<Outcome, RunError> {
    let tokenizer =
        Arc::new(workload::tokenizer::load(&cfg.tokenizer).map_err(|e| RunError(e.to_string()))?);
    // The embedded mock replaces the URLs with its own loopback address; it reports exact
    // prompt token counts with the run's own tokenizer.
    let _mock = match &cfg.mock {
        Some(shape) => {
            let mut mc = mock_config(shape, &cfg.models[0]);
            mc.prompt_tokenizer = Some(crate::mock::PromptTokenizer(tokenizer.clone()));
            let server = crate::mock::start(mc)
                .map_err(|e| RunError(format!("cannot start the embedded mock server: {e}")))?;
            let url = format!("http://{}", server.addr);
            cfg.urls = vec![
                crate::config::BaseUrl::parse(&url, &cfg.path)
                    .map_err(|e| RunError(format!("mock server URL {e}")))?,
            ];
            note(&format!("embedded mock server listening on {url}"));
            Some(server)
        }
        None => None,
    };

    let payload_params = payload_params(&cfg);
    // A dataset file that cannot be loaded is a setup error: nothing has been written yet.
    let mut dataset = match &cfg.input.load {
        Some(spec) => workload::loader::load(spec, &tokenizer)
            .map_err(|e| RunError(format!("cannot load the dataset: {e}")))?,
        None => match &cfg.rankings {
            Some(shape) => workload::rankings::build(&synthetic_params(&cfg), shape, &tokenizer),
            None => workload::synthetic::build(&synthetic_params(&cfg), &tokenizer),
        },
    };
    dataset.default_sampling = cfg.input.sampling_for(dataset.default_sampling);
    if let Some(t) = &payload_params.template {
        check_template(t, &payload_params, &dataset)?;
    }
    let dataset = workload::prepare(dataset, cfg.endpoint, &payload_params, &tokenizer);

    // Artifacts: refuse early when the directory cannot be written.
    let dir = cfg.artifact_dir.clone();
    fs::create_dir_all(&dir).map_err(|e| {
        RunError(format!(
            "cannot create artifact directory {}: {e}",
            dir.display()
        ))
    })?;
    let names = ExportNames::new(cfg.export_prefix.as_deref());
    clear_artifact_dir(&cfg, &dir, &names)?;
    // A shard says who it is before it sends anything.
    let identity = shard::prepare(&mut cfg, control.clock(), &dir)?;

    // inputs.json first (AIPerf writes it when the dataset is ready): each turn as sent alone;
    // none for a trace or verbatim replay, as AIPerf.
    let inputs_path = (!dataset.replay).then(|| dir.join(crate::export::owned::INPUTS_FILE));
    if let Some(path) = &inputs_path {
        let inputs = serde_json::to_vec_pretty(&workload::inputs_json(
            &dataset,
            cfg.endpoint,
            &payload_params,
        ))
        .map_err(|e| RunError(format!("cannot serialize inputs.json: {e}")))?;
        write_file(path, &inputs)?;
    }

    let mut dataset = dataset;
    let encoding = crate::worker::Encoding {
        targets: cfg
            .urls
            .iter()
            .map(|u| (u.host_header.clone(), u.request_path.clone()))
            .collect(),
        headers: request_headers(&cfg),
        correlation_copies: cfg.correlation_copies.clone(),
    };
    let (templates, turn_offsets, turn_info) = encode_templates(&mut dataset, &cfg, &encoding)?;

    let clock = control.clock();
    let stamps_guard = kernel_stamps_guard(&cfg);
    let kernel_stamps = stamps_guard.is_some();
    let shared = Arc::new(Shared {
        clock,
        urls: cfg.urls.iter().map(|u| u.addr).collect(),
        tls: tls_connectors(&cfg)?,
        dataset,
        turn_offsets: turn_offsets.clone(),
        templates,
        encoding,
        kind: cfg.endpoint,
        payload: payload_params.clone(),
        request_timeout: cfg.request_timeout,
        connection_limit: cfg.connection_limit,
        reuse: cfg.connection_reuse,
        max_body_bytes: MAX_BODY_BYTES,
        seed: cfg.seed,
        control: control.clone(),
        http_trace: cfg.export_http_trace,
        response_field: cfg.response_field.clone(),
        kernel_stamps,
        compact_records: cfg.export_level != ExportLevel::Raw,
        batch_wakeups: (kernel_stamps && !cfg.batch_wakeups.is_zero()).then_some(cfg.batch_wakeups),
    });

    let (producers, consumers): (Vec<_>, Vec<_>) = (0..cfg.workers)
        .map(|_| ring_bounded(RING_CAPACITY, RING_MAX_BYTES))
        .unzip();
    let jsonl = if cfg.export_level.records() {
        let path = dir.join(&names.jsonl);
        let w = JsonlWriter::create(&path, 0)
            .map_err(|e| RunError(format!("cannot create {}: {e}", path.display())))?
            .with_phases(crate::export::jsonl::PhaseLayout {
                warmup: cfg.warmup.is_some(),
            })
            .with_http_trace(cfg.export_http_trace.then(|| {
                crate::export::trace_data::TraceContext {
                    headers: sent_headers(&shared),
                    targets: cfg
                        .urls
                        .iter()
                        .map(|u| (u.host_header.clone(), u.addr))
                        .collect(),
                }
            }));
        Some((path, w))
    } else {
        None
    };
    let raw = if cfg.export_level == ExportLevel::Raw {
        let path = dir.join(&names.raw_jsonl);
        let ctx = crate::export::raw::RawContext {
            sent: sent_headers(&shared),
            monotonic_origin_ns: clock.raw_ns(0),
        };
        let writer = crate::export::raw::RawWriter::create(&path, ctx)
            .map_err(|e| RunError(format!("cannot create {}: {e}", path.display())))?;
        Some(collect::RawSink {
            path,
            writer,
            shared: shared.clone(),
        })
    } else {
        None
    };
    // `--ui dashboard`: what the aggregator (and the scrapers) publish for it.
    let board =
        (cfg.ui == crate::config::UiType::Dashboard).then(|| Arc::new(crate::ui::Board::default()));
    let progress = Arc::new(Progress {
        board: board.clone(),
        ..Progress::default()
    });
    let metric_cfg = MetricConfig {
        goodput: cfg.goodput.clone(),
        ..crate::config::metric_config(cfg.endpoint, cfg.streaming, cfg.use_server_token_count)
    };
    let collector = collect::Collector {
        consumers,
        kind: cfg.endpoint,
        response_field: cfg.response_field.clone(),
        tokenizer: tokenizer.clone(),
        turns: Arc::new(turn_info),
        turn_offsets: Arc::new(turn_offsets),
        clock,
        metric_cfg: metric_cfg.clone(),
        use_server_token_count: cfg.use_server_token_count,
        jsonl,
        raw,
        timeslices: cfg.slice_duration.map(|d| {
            crate::export::timeslices::TimesliceCollector::new(
                metric_cfg.clone(),
                d.as_nanos() as u64,
            )
        }),
        progress: progress.clone(),
        control: control.clone(),
        budget: cfg.failed_request_threshold.map(|threshold| ErrorBudget {
            threshold,
            floor: cfg.profiling.load.max_in_flight().unwrap_or(0).max(10),
        }),
        stop_grace: cfg.stop_grace,
    };
    let cores: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    // A core no worker takes, when there is one (fewer workers than cores): the aggregator runs
    // there instead of preempting a worker.
    let aggregator_core = placement::aggregator_core(&cores, cfg.workers);
    let aggregator = std::thread::Builder::new()
        .name("ringperf-aggregator".into())
        .spawn(move || {
            if let Some(core) = aggregator_core
                && !crate::worker::runtime::pin_to(core)
            {
                eprintln!(
                    "ringperf: could not pin the aggregator to core {core}; it runs unpinned"
                );
            }
            collector.run()
        })
        .map_err(|e| RunError(format!("cannot start the aggregator thread: {e}")))?;

    let workers = Workers::spawn(shared.clone(), producers, cfg.io_driver, &cores)
        .map_err(|e| RunError(format!("cannot start the workers: {e}")))?;
    let driver = workers
        .drivers
        .first()
        .map_or("epoll", |d| d.as_str())
        .to_string();
    log(
        &cfg,
        &format!(
            "{} on the {driver} driver, {}; aggregator {}",
            crate::export::plural(workers.len() as u64, "worker"),
            placement::describe_pinning(&workers.pinned),
            aggregator_core.map_or("unpinned (no free core)".to_string(), |c| format!(
                "pinned to core {c}"
            ))
        ),
    );

    // Server metrics: reachability check and baseline scrape before warmup.
    let mut scraper = server_metrics::start(
        &cfg,
        clock,
        &dir,
        &names,
        &workers.pinned,
        progress.board.as_ref(),
    );
    // GPU telemetry: the same, for the DCGM exporters.
    let mut gpu_scraper =
        gpu_telemetry::start(&cfg, clock, &workers.pinned, progress.board.as_ref());
    // An open loop's pool is open before the phase's start instant is taken (and before the
    // shared `--start-at` instant is waited for).
    let first = cfg
        .warmup
        .as_ref()
        .map_or((Phase::Profiling, &cfg.profiling), |w| (Phase::Warmup, w));
    open_warm_pool(&cfg, &shared, &workers, first.0, first.1);
    let dashboard = board.as_ref().and_then(|b| {
        crate::ui::terminal::Dashboard::start(
            b.clone(),
            control.clone(),
            cfg.stop_grace,
            gpu_scraper.is_some(),
        )
        .map_err(|e| {
            note(&format!(
                "cannot draw the dashboard ({e}); the run goes on without it"
            ))
        })
        .ok()
    });
    // `--start-at`: every shard waits for the shared instant; the first phase starts there.
    let start = shard::wait_for_start(&cfg, &shared);
    let mut origin = start;
    let mut warmup_wall_ns = None;
    if let Some(w) = cfg.warmup.clone() {
        let at = origin.take().unwrap_or_else(|| shard::Origin::now(clock));
        let warmup_start = at.wall_ns;
        server_metrics::phase_start(&mut scraper, Phase::Warmup);
        server_metrics::phase_start(&mut gpu_scraper, Phase::Warmup);
        run_phase(
            &cfg,
            &shared,
            &workers,
            Phase::Warmup,
            &w,
            &progress,
            at.mono_ns,
        );
        // The phase ends with its last request, before the end-of-warmup scrape.
        warmup_wall_ns = Some((warmup_start, crate::clock::wall_now_ns()));
        server_metrics::phase_end(&mut scraper, Phase::Warmup);
        // No awaited end-of-warmup scrape for GPU telemetry (AIPerf takes none): a slow DCGM
        // exporter never holds profiling back; the counters' baseline is the last periodic
        // scrape before profiling starts.
    }
    if warmup_wall_ns.is_some() && !control.stopped() {
        // Sized from what the warmup's answers took.
        open_warm_pool(&cfg, &shared, &workers, Phase::Profiling, &cfg.profiling);
    }
    // The phase's start, on the clock every record's stamps are converted with: the manifest's
    // `start_ns` is the schedule's origin, to the nanosecond.
    let at = origin.unwrap_or_else(|| shard::Origin::now(clock));
    let start_wall_ns = at.wall_ns;
    // A stop during warmup ends the run before profiling starts.
    if !control.stopped() {
        server_metrics::phase_start(&mut scraper, Phase::Profiling);
        server_metrics::phase_start(&mut gpu_scraper, Phase::Profiling);
        run_phase(
            &cfg,
            &shared,
            &workers,
            Phase::Profiling,
            &cfg.profiling,
            &progress,
            at.mono_ns,
        );
    }
    let end_wall_ns = crate::clock::wall_now_ns();
    // The terminal is the console's again before anything else is printed.
    if let Some(d) = dashboard {
        d.stop();
    }
    server_metrics::phase_end(&mut scraper, Phase::Profiling);
    server_metrics::phase_end(&mut gpu_scraper, Phase::Profiling);
    let worker_cpu = workers.shutdown();
    let collected = aggregator
        .join()
        .map_err(|_| RunError("the aggregator thread panicked".into()))?;
    if let Some(e) = &collected.jsonl_error {
        eprintln!("ringperf: warning: {e}");
    }

    let stopped = control.reason();
    // Sweep-line windows start at each phase's start, as AIPerf's do.
    let summary = collected.profiling.finish_from(Some(start_wall_ns));
    let warmup = collected.warmup_seen.then(|| {
        collected
            .warmup
            .finish_from(warmup_wall_ns.map(|(start, _)| start))
    });
    if kernel_stamps && summary.receive_lag.is_none() && summary.dispatch_lag.is_some() {
        log(
            &cfg,
            "no read came with a kernel receive stamp: the metrics used user-space stamps",
        );
    }
    let mut run_info = RunInfo {
        // The shards of a run share its id.
        benchmark_id: identity
            .as_ref()
            .map_or_else(crate::export::new_benchmark_id, |i| {
                i.manifest.run_id.clone()
            }),
        aiperf_version: crate::export::AIPERF_VERSION.into(),
        cli_command: cfg.cli_command.clone(),
        input_config: cfg.input_config(),
        start_wall_ns,
        end_wall_ns,
        was_cancelled: stopped.is_some(),
        // AIPerf: `is_complete = incomplete_reason is None`, always written.
        is_complete: Some(stopped.is_none()),
        incomplete_reason: stopped.as_ref().map(ToString::to_string),
        metrics_title: cfg.endpoint.metrics_title().to_string(),
        io_driver: driver,
        workers: cfg.workers,
        ring_stalls: collected.ring_stalls,
        random_seed: cfg.seed_given.then_some(cfg.seed),
        trial: cfg.multi_run.trial.clone(),
        monotonic_origin_ns: clock.raw_ns(0),
        wall_origin_ns: clock.wall_origin_ns(),
        realtime_offset: Some(clock.realtime_offset()),
        timestamps: if kernel_stamps { "kernel" } else { "user" },
        shard: identity.as_ref().map(|i| i.info(start)),
        merge: None,
        threads: Vec::new(),
        client_health: None,
    };
    // Server metrics: flush period, final scrape, exports (listed in the console footer below).
    // Before the summary, which carries the scraper thread's CPU time; before the per-phase
    // files, which carry each phase's server metrics.
    // GPU telemetry first: its final scrape is due now, the server metrics' after their flush
    // period.
    let gpu = gpu_telemetry::finish(gpu_scraper, &dir, &names, start_wall_ns, end_wall_ns);
    let sm = server_metrics::finish(scraper, &cfg, &run_info, &dir, &names);
    run_info.threads = health::threads(
        crate::clock::thread_cpu_ns(),
        collected.cpu_ns,
        sm.scraper_cpu_ns,
        &worker_cpu,
    );
    // The GPU scraper's thread, after the server-metrics one.
    if let Some(cpu_ns) = gpu.scraper_cpu_ns {
        let at = run_info
            .threads
            .iter()
            .position(|t| t.name.starts_with("worker_"))
            .unwrap_or(run_info.threads.len());
        run_info.threads.insert(
            at,
            crate::export::ThreadCpu {
                name: "gpu_scraper".into(),
                cpu_ns,
                busy_fraction: None,
                naps: None,
                warm_pool: None,
            },
        );
    }
    let verdict = health::verdict(
        &summary,
        &run_info.threads,
        run_info.ring_stalls,
        worker_cpu.iter().map(|w| w.descriptor_waits).sum(),
        (
            worker_cpu.iter().map(|w| w.connection_waits).sum(),
            cfg.connection_limit,
        ),
        cfg.max_client_lag_ns,
    );
    let client_fell_behind = verdict.fails_run();
    run_info.client_health = Some(verdict);

    let mut files = crate::export::write_summary_files_with_gpu(
        &dir,
        &names,
        &summary,
        warmup.as_ref(),
        &run_info,
        gpu.sections().as_ref(),
    )
    .map_err(|e| {
        RunError(format!(
            "cannot write the summary files in {}: {e}",
            dir.display()
        ))
    })?;
    let has_warmup = warmup.is_some() && warmup_wall_ns.is_some();
    let sm_phase = |phase: Phase| {
        let index = u32::from(has_warmup && phase == Phase::Profiling);
        let profiling_index = (phase == Phase::Profiling).then_some(0);
        sm.phase_data(phase, index, profiling_index)
    };
    let sm_warmup = sm_phase(Phase::Warmup).filter(|_| has_warmup);
    let sm_profiling = sm_phase(Phase::Profiling);
    let phase_runs: Vec<PhaseRun<'_>> = warmup
        .as_ref()
        .zip(warmup_wall_ns)
        .map(|(w, (start, end))| (Phase::Warmup, w, start, end))
        .into_iter()
        .chain(std::iter::once((
            Phase::Profiling,
            &summary,
            start_wall_ns,
            end_wall_ns,
        )))
        .enumerate()
        .map(|(i, (phase, s, start, end))| PhaseRun {
            index: i as u32,
            phase,
            summary: s,
            start_wall_ns: start,
            end_wall_ns: end,
            was_cancelled: run_info.was_cancelled,
            server_metrics: match phase {
                Phase::Warmup => sm_warmup.as_ref(),
                Phase::Profiling => sm_profiling.as_ref(),
            },
        })
        .collect();
    crate::export::phases::write_phase_artifacts(&dir, &names, &phase_runs, &run_info).map_err(
        |e| {
            RunError(format!(
                "cannot write the per-phase files in {}: {e}",
                dir.display()
            ))
        },
    )?;
    // The footer in AIPerf 0.13's exporter order: CSV, JSON, raw records, server metrics,
    // timeslices. AIPerf prints no line for the per-record JSONL, inputs.json or the server
    // metrics JSONL, nor for its log file, which ringperf does not write.
    if cfg.export_level == ExportLevel::Raw {
        files.push(("Raw Records", dir.join(&names.raw_jsonl)));
    }
    files.extend(sm.files);
    if let Some(t) = &collected.timeslices {
        let slices = t.finish();
        if !slices.is_empty() {
            use crate::export::timeslices::{timeslices_csv, timeslices_json_string};
            let csv = dir.join(&names.timeslices_csv);
            write_file(&csv, timeslices_csv(&slices).as_bytes())?;
            let json = dir.join(&names.timeslices_json);
            write_file(
                &json,
                timeslices_json_string(&slices, &run_info.input_config).as_bytes(),
            )?;
            files.push(("Timeslice CSV Export", csv));
            files.push(("Timeslice JSON Export", json));
        }
    }
    // ringperf's own lines after AIPerf's: the per-request records and the console export
    // (AIPerf writes both files without naming them).
    if cfg.export_level.records() {
        files.push(("Records Export", dir.join(&names.jsonl)));
    }
    files.push(("Console Export", dir.join(&names.console_txt)));
    // The file holds the console export alone, as AIPerf's: no footer.
    let mut console = crate::export::render_console(&summary, &run_info);
    if let Some(t) = &gpu.telemetry {
        console.push('\n');
        console.push_str(&t.console());
    }
    // `--show-trace-timing`: AIPerf prints the trace table before every other table.
    if cfg.show_trace_timing
        && let Some(t) = crate::export::trace_console::render_trace_timing(&summary, "ringperf")
    {
        console.insert_str(1, &format!("\n{t}"));
    }
    let stopped_line = stopped
        .as_ref()
        .map(|reason| format!("Stopped early: {reason}\n"))
        .unwrap_or_default();
    write_file(
        &dir.join(&names.console_txt),
        format!("{console}{stopped_line}").as_bytes(),
    )?;
    console.push_str(&crate::export::render_footer(&summary, &run_info, &files));
    console.push_str(&stopped_line);
    // Last: every artifact is on disk.
    crate::export::marker::write_ready_marker(&dir, run_info.was_cancelled, &[]).map_err(|e| {
        RunError(format!(
            "cannot write the results-ready marker in {}: {e}",
            dir.display()
        ))
    })?;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(console.as_bytes());
    let _ = out.flush();

    let successes = collected.profiling.request_count();
    let errors = collected.profiling.error_request_count();
    if successes == 0 {
        let why = summary
            .error_summary
            .first()
            .map(|e| format!("{} ({})", e.message, e.kind))
            .unwrap_or_else(|| "no request was sent".into());
        eprintln!("ringperf: no request succeeded ({errors} failed); most common error: {why}");
    }
    Ok(Outcome {
        successes,
        errors,
        stopped,
        client_fell_behind,
        artifact_dir: dir,
    })
}

/// Has the workers open the warm pool of `phase` ([`crate::worker::warm`]) when it is an
/// open-loop phase on pooled connections.
fn open_warm_pool(
    cfg: &Config,
    shared: &Arc<Shared>,
    workers: &Workers,
    phase: Phase,
    p: &PhaseConfig,
) {
    if let Some(warms) = warm::plan(cfg, p, shared, workers.len()) {
        let opened = workers.warm(&warms);
        log(
            cfg,
            &format!(
                "warm pool: {opened} connection(s) opened before the {} phase",
                phase.as_str()
            ),
        );
    }
}

/// Drives one phase on every worker until all of them report done.
fn run_phase(
    cfg: &Config,
    shared: &Arc<Shared>,
    workers: &Workers,
    phase: Phase,
    p: &PhaseConfig,
    progress: &Arc<Progress>,
    start: u64,
) {
    let n = workers.len();
    let shard = cfg.shard.shard;
    let issue_deadline_ns = p.duration.map(|d| start + d.as_nanos() as u64);
    let hard_deadline_ns = issue_deadline_ns.and_then(|d| p.grace.map(|g| d + g.as_nanos() as u64));
    let limit = p.request_count.unwrap_or(u64::MAX);
    let split = |total: u64, i: usize| -> u64 {
        total / n as u64 + u64::from((i as u64) < total % n as u64)
    };
    let sampling = shared.dataset.default_sampling;
    let plan = |source: CreditSource| PhasePlan {
        phase,
        source,
        counters: PhaseCounters::default(),
        shard,
        request_limit: limit,
        session_limit: p.sessions.unwrap_or(u64::MAX),
        sampling,
        start_ns: start,
        timing: TurnTiming::default(),
        cancel: None,
        prefill: None,
        issue_deadline_ns,
        hard_deadline_ns,
        warm: None,
    };
    let counters = PhaseCounters::default();
    let cancel = p.timing.cancellation.map(|c| c.plan(cfg.seed));
    let prefill = p.timing.prefill_concurrency.map(|n| {
        Arc::new(crate::worker::prefill::PrefillGate::new(
            shard.share(n).max(1),
        ))
    });
    let plan = |source: CreditSource| PhasePlan {
        counters: counters.clone(),
        cancel,
        prefill: prefill.clone(),
        ..plan(source)
    };
    let open =
        |d: &dispatch::Dispatcher, i: usize, cap: Option<u64>, kind: OpenKind| CreditSource::Open {
            queue: d.queues[i].clone(),
            fed: d.fed.clone(),
            cap: cap.map(|c| split(shard.share(c).max(1), i).max(1) as usize),
            kind,
        };

    let mut feeder = None;
    let mut plans: Vec<PhasePlan> = match (p.timing.mode, p.load) {
        (TimingMode::FixedSchedule(fixed), load) => {
            // Built and checked before the run (`fixed_schedule_of`), so it cannot fail here.
            let (replay, entries) = fixed.build_for(&shared.dataset).unwrap_or_else(|_| {
                (
                    crate::schedule::Replay {
                        zero_ms: 0.0,
                        speedup: 1.0,
                    },
                    Vec::new(),
                )
            });
            let cap = match load {
                Load::Rate { cap, .. } => cap,
                Load::Concurrency(c) => Some(c),
            };
            let d = dispatch::Dispatcher::fixed_schedule(
                n,
                entries,
                phase,
                start,
                u64::MAX,
                issue_deadline_ns,
            )
            .with_shard(shard);
            let plans = (0..n)
                .map(|i| PhasePlan {
                    timing: TurnTiming {
                        replay: Some(replay),
                        user_centric: None,
                    },
                    ..plan(open(&d, i, cap, OpenKind::SessionStart))
                })
                .collect();
            feeder = Some(d);
            plans
        }
        (TimingMode::UserCentric { rate, users }, load) => {
            let cap = match load {
                Load::Rate { cap, .. } => cap,
                Load::Concurrency(c) => Some(c),
            };
            let uc = crate::schedule::UserCentric::new(rate, users);
            let turns: Vec<u32> = shared
                .dataset
                .conversations
                .iter()
                .map(|c| c.turns.len() as u32)
                .collect();
            let mean_turns = if turns.is_empty() {
                1.0
            } else {
                turns.iter().map(|&t| f64::from(t)).sum::<f64>() / turns.len() as f64
            };
            let d = dispatch::Dispatcher::users(
                n,
                &uc,
                mean_turns,
                turns,
                sampling,
                cfg.seed,
                phase,
                start,
                issue_deadline_ns,
            )
            .with_shard(shard);
            let plans = (0..n)
                .map(|i| PhasePlan {
                    timing: TurnTiming {
                        replay: None,
                        user_centric: Some(uc),
                    },
                    ..plan(open(&d, i, cap, OpenKind::SessionStart))
                })
                .collect();
            feeder = Some(d);
            plans
        }
        (TimingMode::Load, Load::Concurrency(c)) => {
            let ramp = p.timing.concurrency_ramp;
            // The shard's slots are the run's slots `k` with `k mod N = I`, numbered locally;
            // they are dealt round-robin: local slot `l` is worker `l % n`'s slot `l / n`.
            let local = shard.share(c);
            (0..n)
                .map(|i| {
                    let slots = split(local, i) as usize;
                    let ramp_offsets_ns = match ramp {
                        Some(d) => (0..slots)
                            .map(|j| {
                                let slot = shard.global((j * n + i) as u64);
                                crate::schedule::concurrency_slot_start_ns(slot, c, d)
                            })
                            .collect(),
                        None => Vec::new(),
                    };
                    plan(CreditSource::Closed {
                        slots,
                        ramp_offsets_ns,
                    })
                })
                .collect()
        }
        (TimingMode::Load, Load::Rate { rate, arrival, cap }) => {
            let mut d = dispatch::Dispatcher::new(
                n,
                rate,
                arrival,
                cfg.seed,
                phase,
                start,
                limit,
                issue_deadline_ns,
            );
            if let Some(ramp) = p.timing.rate_ramp {
                d = d.with_rate_ramp(ramp);
            }
            d = d.with_shard(shard);
            let plans = (0..n)
                .map(|i| plan(open(&d, i, cap, OpenKind::Tick)))
                .collect();
            feeder = Some(d);
            plans
        }
    };
    if let Some(warms) = warm::plan(cfg, p, shared, n) {
        for (plan, w) in plans.iter_mut().zip(warms) {
            plan.warm = Some(w);
        }
    }
    workers.start_phase(plans);
    let mut view = ui::View::new(cfg.ui, phase, p, progress.clone());
    let mut done = 0;
    while done < n {
        if let Some(d) = feeder.as_mut() {
            d.feed(shared.clock.now_ns(), shared.control.stopped());
        }
        let wait = if feeder.as_ref().is_some_and(|d| !d.is_fed()) {
            Duration::from_micros(500)
        } else {
            Duration::from_millis(50)
        };
        if workers.wait_done(wait).is_some() {
            done += 1;
        }
        view.tick();
    }
    view.finish();
}

/// Encodes every turn that has its body (moving the body out of the dataset), for every URL;
/// returns the templates (`[url][turn]`), each conversation's first-turn index, and what the
/// aggregator needs to know of each turn.
#[allow(clippy::type_complexity)]
fn encode_templates(
    dataset: &mut workload::Prepared,
    cfg: &Config,
    encoding: &crate::worker::Encoding,
) -> Result<
    (
        Vec<Vec<Option<crate::http::EncodedRequest>>>,
        Vec<usize>,
        Vec<collect::TurnInfo>,
    ),
    RunError,
> {
    let total = dataset.turn_count();
    let mut templates: Vec<Vec<Option<crate::http::EncodedRequest>>> = (0..cfg.urls.len())
        .map(|_| Vec::with_capacity(total))
        .collect();
    let mut offsets = Vec::with_capacity(dataset.conversations.len());
    let mut info = Vec::with_capacity(total);
    for c in &mut dataset.conversations {
        offsets.push(info.len());
        for t in &mut c.turns {
            info.push(collect::TurnInfo {
                conversation_id: c.session_id.clone(),
                isl_tokens: t.isl_tokens,
                max_tokens: t.max_tokens.map(u64::from),
            });
            let body = t.body.take();
            for (u, per_url) in templates.iter_mut().enumerate() {
                let req = match &body {
                    None => None,
                    Some(b) => {
                        let (host, path) = &encoding.targets[u];
                        Some(
                            crate::http::encode_post_with(
                                host,
                                path,
                                &encoding.headers,
                                b,
                                crate::http::request::CORRELATION_ID_HEADER,
                                &encoding.correlation_copies,
                            )
                            .map_err(|err| {
                                RunError(format!(
                                    "cannot encode the request for {}: {err}",
                                    cfg.urls[u].display
                                ))
                            })?,
                        )
                    }
                };
                per_url.push(req);
            }
        }
    }
    Ok((templates, offsets, info))
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
        ("Content-Type".to_string(), "application/json".to_string()),
    ];
    h.extend(cfg.headers.iter().cloned());
    h
}

fn synthetic_params(cfg: &Config) -> workload::SyntheticParams {
    let p = &cfg.prompt;
    workload::SyntheticParams {
        isl_mean: cfg.dataset.isl_mean,
        isl_stddev: cfg.dataset.isl_stddev,
        osl_mean: cfg.dataset.osl_mean,
        osl_stddev: cfg.dataset.osl_stddev,
        num_dataset_entries: cfg.dataset.entries,
        seed: Some(cfg.seed),
        sequential_ids: cfg.seed_given,
        shaping: p.shaping.clone(),
    }
}

/// Renders every turn's payload template before anything is sent: a turn whose rendering is not
/// a JSON object is a setup error naming it (the bodies built for the run are these renderings).
fn check_template(
    template: &crate::endpoint::PayloadTemplate,
    params: &crate::endpoint::PayloadParams,
    dataset: &crate::conversation::Dataset,
) -> Result<(), RunError> {
    for c in &dataset.conversations {
        for (i, turn) in c.turns.iter().enumerate() {
            if matches!(turn.content, crate::conversation::Content::Raw(_)) {
                continue;
            }
            template.render(params, turn).map_err(|e| {
                RunError(format!(
                    "--extra-inputs {e} (conversation {}, turn {i})",
                    c.session_id
                ))
            })?;
        }
    }
    Ok(())
}

fn payload_params(cfg: &Config) -> crate::endpoint::PayloadParams {
    crate::endpoint::PayloadParams {
        model: cfg.models[0].clone(),
        streaming: cfg.streaming,
        use_legacy_max_tokens: cfg.use_legacy_max_tokens,
        per_chunk_usage: false,
        extra_inputs: cfg.extra_inputs.clone(),
        use_server_token_count: cfg.use_server_token_count,
        template: cfg.payload_template.clone(),
    }
}

fn mock_config(shape: &crate::config::MockShape, model: &str) -> crate::mock::MockConfig {
    crate::mock::MockConfig {
        bind: "127.0.0.1:0".parse().expect("valid literal address"),
        threads: shape.threads,
        ttft: shape.ttft,
        itl: shape.itl,
        output_tokens: crate::mock::OutputLen::Fixed(shape.output_tokens as u64),
        tokens_per_event: shape.tokens_per_event,
        reasoning_tokens: shape.reasoning_tokens,
        faults: shape.faults.clone(),
        model: model.to_string(),
        ..Default::default()
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    fs::write(path, bytes).map_err(|e| RunError(format!("cannot write {}: {e}", path.display())))
}

/// With `--timestamps kernel`, a socket holding the kernel's receive stamping on for the run
/// (`None`: user-space stamps, said once in the log when kernel stamps were asked for but the
/// machine does not give them).
fn kernel_stamps_guard(cfg: &Config) -> Option<std::net::TcpListener> {
    if !cfg.kernel_stamps {
        return None;
    }
    match crate::net::rxstamp::probe() {
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
fn clear_artifact_dir(cfg: &Config, dir: &Path, names: &ExportNames) -> Result<(), RunError> {
    let input_file: Vec<PathBuf> = cfg
        .input
        .load
        .as_ref()
        .and_then(|spec| match &spec.source {
            workload::loader::Source::File { path, .. } => Some(path.clone()),
            workload::loader::Source::ShareGpt { input_file } => input_file.clone(),
        })
        .into_iter()
        .collect();
    let removed = crate::export::owned::remove_previous(dir, names, &input_file)
        .map_err(|e| RunError(format!("cannot clear the artifact directory: {e}")))?;
    if let Some(msg) = crate::export::owned::removed_note(dir, &removed) {
        note(&msg);
    }
    Ok(())
}

/// A line every run prints on stderr, terminal or not: what a user must know to read the run
/// (where the embedded mock listens, which earlier files were removed, what the run waits for).
fn note(msg: &str) {
    eprintln!("ringperf: {msg}");
}

/// A detail printed with `--verbose` or a progress display.
fn log(cfg: &Config, msg: &str) {
    use crate::config::UiType;
    // Never over the dashboard's screen.
    if cfg.ui != UiType::Dashboard && (cfg.verbose || cfg.ui != UiType::None) {
        eprintln!("ringperf: {msg}");
    }
}

/// The TLS connector of every `https://` base URL (`None` for `http://`); one client
/// configuration (roots, verification) shared by all, built only when some URL needs it.
fn tls_connectors(cfg: &Config) -> Result<Vec<Option<crate::net::Connector>>, RunError> {
    if !cfg.urls.iter().any(|u| u.https) {
        return Ok(vec![None; cfg.urls.len()]);
    }
    let verify = if cfg.tls.verify {
        crate::net::Verify::On
    } else {
        crate::net::Verify::Off
    };
    let client =
        crate::net::TlsClient::new(verify, cfg.tls.ca_file.as_deref()).map_err(RunError)?;
    cfg.urls
        .iter()
        .map(|u| {
            u.https
                .then(|| client.connector(&u.display, &u.host))
                .transpose()
                .map_err(|e| RunError(format!("--url {e}")))
        })
        .collect()
}

/// The headers every request carries and the id headers, for the raw export and the HTTP trace.
fn sent_headers(shared: &Shared) -> crate::export::headers::SentHeaders {
    crate::export::headers::SentHeaders {
        headers: shared.encoding.headers.clone(),
        request_id_header: crate::http::request::REQUEST_ID_HEADER.to_string(),
        correlation_id_header: crate::http::request::CORRELATION_ID_HEADER.to_string(),
        correlation_copies: shared
            .encoding
            .correlation_copies
            .iter()
            .map(ToString::to_string)
            .collect(),
    }
}
