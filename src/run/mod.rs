//! A profile run from a validated [`Config`] to its artifacts, in four stages ([`run_inner`]):
//!
//! 1. [`prepare`]: the workload (tokenizer, embedded mock, dataset, encoded requests) and the
//!    artifact directory; nothing is sent, every failure is a setup error ([`RunError`]).
//! 2. [`start`]: the aggregator stage (`ringperf_engine::aggregator`: rings in, records and statistics
//!    out), the workers, the collectors (server-metrics and GPU scrapers, each with its baseline
//!    scrape).
//! 3. [`phases`]: warm pools, the dashboard, `--start-at`, warmup, profiling.
//! 4. [`finish`]: the threads stopped, the final scrapes, every export, the results-ready
//!    marker last, the console.
//!
//! [`multi`] repeats the four for `--num-profile-runs`.

mod adaptive;
mod agentic;
pub mod collated;
pub mod convergence;
mod dispatch;
mod error;
mod finish;
mod gpu_telemetry;
mod health;
mod host;
pub mod ks;
mod lifecycle;
pub(crate) mod limits;
pub(crate) mod multi;
mod network;
mod phases;
mod placement;
pub(crate) mod prepare;
mod server_metrics;
mod shard;
mod start;
mod stream;
mod synthesis;
mod ui;
pub(crate) mod user_files;
mod warm;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::config::Config;
use ringperf_wire::clock::Clock;

pub use error::{RunError, SetupKind};
pub use ringperf_engine::aggregator::Progress;
pub use ringperf_io::control::{ErrorBudget, RunControl, StopReason};

/// How a run ended (its exit code: `crate::exit::of_run`).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub successes: u64,
    pub errors: u64,
    /// Why the run stopped early, if it did.
    pub stopped: Option<StopReason>,
    /// The client-health verdict found the client itself fell behind (not a busy host): its
    /// figures measure the client. A search never answers with such a point.
    pub client_fell_behind: bool,
    /// `--max-client-lag-us` was given: a client that fell behind fails the run (exit code 5).
    pub client_lag_enforced: bool,
    pub artifact_dir: PathBuf,
}

impl Outcome {
    /// The client fell behind under `--max-client-lag-us`: exit code 5, and a multi-run leaves
    /// the run out of its aggregate.
    pub fn fails_client_health(&self) -> bool {
        self.client_fell_behind && self.client_lag_enforced
    }
}

/// How the run is embedded.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Take SIGINT / SIGTERM: the first stops the run gracefully, the second exits at once.
    /// Only for the binary: it blocks the signals in the calling thread for the run.
    pub handle_signals: bool,
    /// `--api-port`: the live API every run of the process publishes to (docs/api.md).
    pub api: Option<Arc<crate::api::Live>>,
}

/// Runs the benchmark described by `cfg` and writes its artifacts (no signal handling).
pub fn run(cfg: Config) -> Result<Outcome, RunError> {
    run_with(cfg, RunOptions::default())
}

/// Runs the benchmark described by `cfg` and writes its artifacts: once, or
/// `--num-profile-runs` times with the aggregate across the runs ([`multi`]).
pub fn run_with(cfg: Config, opts: RunOptions) -> Result<Outcome, RunError> {
    // Before anything starts: the sockets the concurrency holds must fit the process's limits.
    for w in limits::check(&cfg)? {
        note(&format!("warning: {w}"));
    }
    adaptive::check(&cfg)?;
    if cfg.multi_run.is_repeated() {
        return multi::run_many(cfg, opts);
    }
    let control = Arc::new(RunControl::new(Clock::start()));
    let api = opts.api.as_ref();
    if !opts.handle_signals {
        return run_inner(cfg, control, api);
    }
    let watch = {
        let (control, grace) = (control.clone(), cfg.stop_grace);
        SignalWatch::start(move |name| control.stop_after(StopReason::Signal(name), grace))?
    };
    let result = run_inner(cfg, control, api);
    watch.stop();
    result
}

/// The binary's signal thread: SIGINT / SIGTERM are blocked in the calling thread (before any
/// other thread exists, so that only this one ever takes them); the first calls `on_first`,
/// the second exits at once.
pub(crate) struct SignalWatch {
    set: ringperf_io::signals::TermSignals,
    done: Arc<AtomicBool>,
    /// Sleeps until a signal or [`SignalWatch::stop`]; `None` (the thread polls `done` every
    /// 100 ms instead) when its descriptors could not be made.
    waiter: Option<Arc<ringperf_io::signals::SignalWaiter>>,
    thread: std::thread::JoinHandle<()>,
}

impl SignalWatch {
    pub(crate) fn start(
        on_first: impl Fn(&'static str) + Send + 'static,
    ) -> Result<Self, RunError> {
        let set = ringperf_io::signals::block_term_signals().map_err(|e| {
            RunError::new(
                SetupKind::Signals,
                format!("cannot block SIGINT/SIGTERM: {e}"),
            )
        })?;
        let done = Arc::new(AtomicBool::new(false));
        let waiter = ringperf_io::signals::SignalWaiter::new(&set)
            .ok()
            .map(Arc::new);
        let thread = {
            let (done, waiter) = (done.clone(), waiter.clone());
            std::thread::Builder::new()
                .name("ringperf-signals".into())
                .spawn(move || signal_loop(&set, &done, waiter.as_deref(), &on_first))
                .map_err(|e| {
                    RunError::new(
                        SetupKind::Signals,
                        format!("cannot start the signal thread: {e}"),
                    )
                })?
        };
        Ok(Self {
            set,
            done,
            waiter,
            thread,
        })
    }

    /// Ends the thread and unblocks the signals again.
    pub(crate) fn stop(self) {
        self.done.store(true, Ordering::Release);
        if let Some(w) = &self.waiter {
            w.wake();
        }
        let _ = self.thread.join();
        ringperf_io::signals::unblock(&self.set);
    }
}

/// First signal: `on_first` (stop issuing; requests in flight get the grace period). Second:
/// exit now.
fn signal_loop(
    set: &ringperf_io::signals::TermSignals,
    done: &AtomicBool,
    waiter: Option<&ringperf_io::signals::SignalWaiter>,
    on_first: &dyn Fn(&'static str),
) {
    use ringperf_io::signals::Waited;
    let mut seen = 0;
    while !done.load(Ordering::Acquire) {
        let name = match waiter.map(ringperf_io::signals::SignalWaiter::wait) {
            Some(Ok(Waited::Signal(name))) => name,
            Some(Ok(Waited::Woken)) => continue,
            // No signalfd (or it failed): look every 100 ms.
            None | Some(Err(_)) => {
                match ringperf_io::signals::wait_signal_timeout(set, Duration::from_millis(100)) {
                    Some(name) => name,
                    None => continue,
                }
            }
        };
        seen += 1;
        if seen == 1 {
            ringperf_io::control::interrupt(name);
            on_first(name);
            eprintln!(
                "ringperf: {name}: stopping; requests in flight get the grace period. \
                 Press Ctrl+C again to force quit."
            );
        } else {
            eprintln!("ringperf: {name} again: force quit");
            ringperf_io::control::force_quit();
        }
    }
}

/// One run: the four stages, in order; `api`: the live API it publishes to.
pub(crate) fn run_inner(
    mut cfg: Config,
    control: Arc<RunControl>,
    api: Option<&Arc<crate::api::Live>>,
) -> Result<Outcome, RunError> {
    if let Some(a) = api {
        a.set_state(crate::api::SystemState::Configuring);
    }
    let prepared = prepare::prepare(&mut cfg, &control)?;
    if let Some(a) = api {
        a.begin(api_identity(&cfg, &prepared));
    }
    lifecycle::before_run(&cfg)?;
    let (feed, live) = lifecycle::start_live(&cfg, &prepared);
    let mut started = start::start(&cfg, &prepared, &control, feed, api)?;
    if let Some(a) = api {
        a.set_state(crate::api::SystemState::Ready);
    }
    let mut times = phases::run_phases(
        &cfg,
        &prepared.shared,
        &mut started,
        &control,
        prepared.agentic.as_ref(),
    );
    let profiler_failed = times.profiler_failed.take();
    let outcome = finish::finish(&cfg, &control, &prepared, started, &times)?;
    // A profiler that could not start fails the run (no profiling phase ran), as in AIPerf.
    if let Some(e) = profiler_failed {
        return Err(e.into());
    }
    lifecycle::after_run(&cfg, &outcome, live);
    Ok(outcome)
}

/// A core none of `workers` workers takes (the aggregator's), for the process's other threads
/// (the live API's); `None` when the workers take every core.
pub fn spare_core(workers: usize) -> Option<usize> {
    let cores: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    placement::aggregator_core(&cores, workers)
}

/// What the live API shows of a run before its first request: its configuration, identity
/// and the labels of its figures.
fn api_identity(cfg: &Config, prepared: &prepare::Prepared) -> crate::api::RunIdentity {
    let mut models = cfg.models.clone();
    models.sort();
    let load = &cfg.profiling.load;
    crate::api::RunIdentity {
        config: cfg.input_config(),
        run_info: ringperf_metrics::export::json::run_info_json(
            &prepared.benchmark_id,
            cfg.seed_given.then_some(cfg.seed),
            cfg.multi_run.trial.as_ref(),
            &cfg.cli_command,
        ),
        benchmark_id: prepared.benchmark_id.clone(),
        model: models.join(","),
        endpoint_type: cfg.endpoint.as_str().to_owned(),
        streaming: cfg.streaming,
        concurrency: load.max_in_flight(),
        request_rate: match *load {
            crate::config::Load::Rate { rate, .. } => Some(rate),
            crate::config::Load::Concurrency(_) => None,
        },
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    fs::write(path, bytes).map_err(|e| {
        RunError::new(
            SetupKind::Artifacts,
            format!("cannot write {}: {e}", path.display()),
        )
    })
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
