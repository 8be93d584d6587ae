//! Server metrics in a profile run: the hooks [`super::run`] calls — start the scraper thread
//! before warmup, mark the phases, and after the workers stop, finish collection and write the
//! exports. All the work is in [`ringperf_engine::scrape`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::url::metrics_endpoint_list;
use crate::config::{Config, Load};
use ringperf_engine::scrape::collector::{Role, Scraper, StartOptions};
use ringperf_engine::scrape::settings::Settings;
use ringperf_engine::ui::Board;
use ringperf_engine::ui::highlights::Highlights;
use ringperf_metrics::export::{ExportNames, RunInfo};
use ringperf_metrics::server_metrics::analysis::Window;
use ringperf_metrics::server_metrics::export::parquet::ParquetMeta;
use ringperf_metrics::server_metrics::export::phase::{PhaseIdent, phase_data};
use ringperf_metrics::server_metrics::export::{ExportContext, Windows};
use ringperf_metrics::server_metrics::output::{FileNames, Format, write_exports};
use ringperf_metrics::server_metrics::store::Store;
use ringperf_wire::clock::Clock;
use ringperf_wire::prom::Scrape;
use ringperf_wire::record::Phase;

/// The highest core no worker is pinned to, if any.
pub(crate) fn free_core(busy: &[Option<usize>]) -> Option<usize> {
    core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .filter(|id| !busy.contains(&Some(*id)))
        .max()
}

/// Starts collection (reachability check and baseline scrape included); `None` when it is off,
/// misconfigured (said on stderr) or no endpoint is reachable.
pub(crate) fn start(
    cfg: &Config,
    clock: Clock,
    dir: &Path,
    names: &ExportNames,
    busy_cores: &[Option<usize>],
    feeds: Feeds<'_>,
) -> Option<Scraper> {
    if !cfg.server_metrics.enabled {
        return None;
    }
    let settings = match Settings::from_env() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ringperf: server metrics disabled: {e}");
            return None;
        }
    };
    let endpoints = metrics_endpoint_list(
        cfg.urls.iter().map(|u| u.display.as_str()),
        cfg.server_metrics.extra_urls.iter().map(String::as_str),
    );
    let jsonl = cfg
        .server_metrics
        .formats
        .contains(&Format::Jsonl)
        .then(|| dir.join(&names.server_metrics_jsonl));
    let tls = match scrape_tls(cfg, &endpoints) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ringperf: server metrics disabled: {e}");
            return None;
        }
    };
    let opts = StartOptions {
        tls,
        endpoints,
        settings,
        io_driver: cfg.io_driver,
        core: free_core(busy_cores),
        clock,
        jsonl,
        verbose: cfg.verbose,
        on_page: feeds.hook(cfg, clock),
        role: Role::ServerMetrics,
        phases: cfg.phase_layout(),
    };
    match Scraper::start(opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ringperf: server metrics disabled: {e}");
            None
        }
    }
}

/// Who reads the pages as they are scraped.
pub(crate) struct Feeds<'a> {
    /// `--ui dashboard`: the server panel.
    pub board: Option<&'a Arc<Board>>,
    /// `--api-port`: `/api/server-metrics`, `realtime_server_metrics` and the snapshot rows.
    pub api: Option<&'a Arc<crate::api::Live>>,
    /// The realtime stats block's `srv` row (when the block is printed).
    pub progress: &'a Arc<super::Progress>,
}

/// How often the live server figures are recomputed from the scrapes (AIPerf's
/// `AIPERF_SERVER_METRICS_REALTIME_PUBLISH_INTERVAL_SECONDS`).
const LIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

impl Feeds<'_> {
    /// The scraper's page hook: the dashboard's highlights of each page, and every
    /// [`LIVE_EVERY`] once profiling has started, the server snapshot (for the block's `srv`
    /// row and the API) and the endpoints' summaries (for the API); `None` when nobody reads.
    fn hook(
        self,
        cfg: &Config,
        clock: Clock,
    ) -> Option<ringperf_engine::scrape::collector::PageHook> {
        let block = cfg.realtime.is_some_and(|r| r.print);
        if self.board.is_none() && self.api.is_none() && !block {
            return None;
        }
        let mut dashboard = self.board.map(|b| dashboard_reader(b.clone()));
        let api = self.api.cloned();
        let progress = block.then(|| self.progress.clone());
        let start = self.progress.clone();
        let mut last: Option<std::time::Instant> = None;
        Some(ringperf_engine::scrape::collector::PageHook::new(
            move |url, page, store| {
                if let Some(d) = dashboard.as_mut() {
                    d(url, page);
                }
                if api.is_none() && progress.is_none() {
                    return;
                }
                let started = start
                    .profiling_start_ns
                    .load(std::sync::atomic::Ordering::Relaxed);
                if started == 0 || last.is_some_and(|t| t.elapsed() < LIVE_EVERY) {
                    return;
                }
                last = Some(std::time::Instant::now());
                let start_wall = clock.wall_ns(started);
                let snapshot =
                    ringperf_metrics::server_metrics::live::snapshot(store, Some(start_wall));
                if let Some(p) = &progress
                    && let Ok(mut s) = p.server_snapshot.lock()
                {
                    s.clone_from(&snapshot);
                }
                if let Some(a) = &api {
                    let now = ringperf_wire::clock::wall_now_ns();
                    let summaries = ringperf_metrics::server_metrics::live::endpoint_summaries(
                        store, start_wall, now,
                    );
                    a.server_metrics(summaries, snapshot);
                }
            },
        ))
    }
}

/// The dashboard's server panel: each page's highlights, per endpoint, onto the board.
fn dashboard_reader(board: Arc<Board>) -> impl FnMut(&str, &Scrape) + Send {
    let mut per_endpoint: HashMap<String, Highlights> = HashMap::new();
    move |url, page| {
        if !per_endpoint.contains_key(url) {
            per_endpoint.insert(url.to_string(), Highlights::default());
        }
        if let Some(h) = per_endpoint.get_mut(url) {
            board.publish_server(h.read(url, page));
        }
    }
}

/// The TLS client `https` metrics endpoints are scraped with: the run's roots and verification
/// (`SSL_CERT_FILE`, `AIPERF_HTTP_SSL_VERIFY`), as for the requests; `None` when no endpoint is
/// `https`.
pub(crate) fn scrape_tls(
    cfg: &Config,
    endpoints: &[String],
) -> Result<Option<ringperf_io::net::TlsClient>, ringperf_io::net::TlsSetupError> {
    if !endpoints
        .iter()
        .any(|u| u.to_ascii_lowercase().starts_with("https://"))
    {
        return Ok(None);
    }
    let verify = if cfg.tls.verify {
        ringperf_io::net::Verify::On
    } else {
        ringperf_io::net::Verify::Off
    };
    ringperf_io::net::TlsClient::new(verify, cfg.tls.ca_file.as_deref()).map(Some)
}

/// Marks the start of `phase`.
pub(crate) fn phase_start(s: &mut Option<Scraper>, phase: Phase, index: u8) {
    if let Some(s) = s.as_mut() {
        s.phase_start(phase, index);
    }
}

/// A config file's next profiling phase, the run's phase number `index`, starts.
pub(crate) fn next_profiling_phase(s: &mut Option<Scraper>, index: u8) {
    if let Some(s) = s.as_mut() {
        s.next_profiling_phase(index);
    }
}

/// Marks the end of `phase`.
pub(crate) fn phase_end(s: &mut Option<Scraper>, phase: Phase) {
    if let Some(s) = s.as_mut() {
        s.phase_end(phase);
    }
}

/// The end of a warmup handing over to a seamless phase: its boundary scrape is not waited for.
pub(crate) fn warmup_handed_over(s: &mut Option<Scraper>) {
    if let Some(s) = s.as_mut() {
        s.phase_end_waiting(Phase::Warmup, false);
    }
}

/// What collection left once it finished: the files written and what the per-phase
/// `server_metrics.json` files are built from.
#[derive(Debug, Default)]
pub(crate) struct Finished {
    /// `(console label, path)` of every server-metrics file written.
    pub files: Vec<(&'static str, PathBuf)>,
    /// CPU time of the scraper thread as it ended, ns (`None`: no scraper ran).
    pub scraper_cpu_ns: Option<u64>,
    store: Store,
    slice_ns: Option<u64>,
    benchmark_id: String,
    /// AIPerf's `Server Metrics: Speculative Decoding` console table, when SGLang's gauges
    /// show speculation ran.
    pub spec_decode_table: Option<String>,
}

impl Finished {
    /// The `data` of `phases/<phase>/server_metrics.json`; `None` when server metrics were not
    /// collected during the phase (then AIPerf writes no file).
    pub(crate) fn phase_data(&self, ident: PhaseIdent<'_>) -> Option<serde_json::Value> {
        phase_data(&self.store, ident, self.slice_ns, Some(&self.benchmark_id))
    }
}

/// Finishes collection (flush period and final scrape) and writes the selected exports.
/// Failures are warnings: the client metrics are already safe.
pub(crate) fn finish(
    s: Option<Scraper>,
    cfg: &Config,
    run: &RunInfo,
    dir: &Path,
    names: &ExportNames,
) -> Finished {
    let Some(s) = s else {
        return Finished::default();
    };
    // The wait is seconds long by default: say what the run is doing meanwhile.
    let wait = s.flush_wait();
    if wait >= std::time::Duration::from_millis(100) {
        eprintln!(
            "ringperf: waiting {:.1} s for the final server-metrics scrape \
             (AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD)",
            wait.as_secs_f64()
        );
    }
    let (c, windows) = s.finish();
    say_collected(cfg, &c);
    let mut files = Vec::new();
    let slice_ns = cfg
        .slice_duration
        .map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64);
    let (Some((start, end)), false) = (windows.profiling, c.store.endpoints.is_empty()) else {
        return Finished {
            files,
            scraper_cpu_ns: c.cpu_ns,
            store: c.store,
            slice_ns,
            benchmark_id: run.benchmark_id.clone(),
            spec_decode_table: None,
        };
    };
    let windows = Windows {
        profiling: Window::profiling(&c.store, start, end, slice_ns),
        profiling_range: (start, end),
        parquet: Window::widened(&c.store, start, end),
        warmup: windows
            .warmup
            .map(|(a, b)| Window::warmup(&c.store, a, b, slice_ns)),
    };
    let ctx = ExportContext {
        aiperf_version: Some(&run.aiperf_version),
        benchmark_id: Some(&run.benchmark_id),
        endpoints_configured: &c.endpoints,
        input_config: &run.input_config,
    };
    let (concurrency, request_rate) = profiling_load(cfg);
    let meta = ParquetMeta {
        model_names: &cfg.models,
        concurrency,
        request_rate,
        export_time_ns: ringperf_wire::clock::wall_now_ns(),
    };
    match write_exports(
        dir,
        &FileNames::from_export_names(names),
        &cfg.server_metrics.formats,
        &c.store,
        &windows,
        &ctx,
        &meta,
    ) {
        Ok(written) => files.extend(written),
        Err(e) => eprintln!("ringperf: warning: server metrics: {e}"),
    }
    // The speculative-decoding table reads the profiling summary the exports hold.
    let spec_decode_table = {
        use ringperf_metrics::server_metrics::{analysis::summarize_metrics, sglang_spec};
        let metrics = summarize_metrics(&c.store, &windows.profiling);
        sglang_spec::render(
            &sglang_spec::gauge_series(&metrics),
            &cfg.models,
            "ringperf",
        )
    };
    Finished {
        files,
        scraper_cpu_ns: c.cpu_ns,
        store: c.store,
        slice_ns,
        benchmark_id: run.benchmark_id.clone(),
        spec_decode_table,
    }
}

/// With `--verbose`, what the scraper did; a failure to write its JSONL, always.
fn say_collected(cfg: &Config, c: &ringperf_engine::scrape::collector::Collected) {
    if cfg.verbose {
        let per = c
            .cpu_ns
            .filter(|_| c.scrapes > 0)
            .map(|ns| {
                format!(
                    ", {:.1} µs CPU per scrape",
                    ns as f64 / 1e3 / c.scrapes as f64
                )
            })
            .unwrap_or_default();
        eprintln!(
            "ringperf: server metrics: {} scrape(s) of {} endpoint(s), {} failed{per}",
            c.scrapes,
            c.endpoints.len(),
            c.errors
        );
    }
    if let Some(e) = &c.jsonl_error {
        eprintln!("ringperf: warning: server metrics: {e}");
    }
}

/// The profiling phase's `(concurrency, request rate)` for the Parquet metadata.
fn profiling_load(cfg: &Config) -> (Option<u64>, Option<f64>) {
    match cfg.profiling.load {
        Load::Concurrency(n) => (Some(n), None),
        // A fixed schedule has no rate of its own (its `Load::Rate` carries only the cap).
        Load::Rate { cap, .. }
            if matches!(
                cfg.profiling.timing.mode,
                crate::config::timing::Mode::FixedSchedule(_)
            ) =>
        {
            (cap, None)
        }
        Load::Rate { rate, cap, .. } => (cap, Some(rate)),
    }
}
