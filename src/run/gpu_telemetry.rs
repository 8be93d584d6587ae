//! GPU telemetry in a profile run: the hooks [`super::run`] calls — start a scraper in its GPU
//! role before warmup (one reachability check of every DCGM exporter; none reachable is one
//! line on stderr and nothing else), and after the workers stop, the final scrape, the JSONL
//! and the statistics the summary files and the console show. Phase marks go through
//! [`super::server_metrics::phase_start`] / [`super::server_metrics::phase_end`], which work on
//! any scraper.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::server_metrics::{free_core, scrape_tls};
use crate::config::Config;
use ringperf_engine::scrape::collector::{Role, Scraper, StartOptions};
use ringperf_engine::scrape::settings::Settings;
use ringperf_engine::ui::Board;
use ringperf_metrics::export::ExportNames;
use ringperf_metrics::export::telemetry::{GPU_TABLE_HEADER, GpuSections};
use ringperf_metrics::gpu_telemetry::FINAL_SCRAPE_GRACE_NS;
use ringperf_metrics::gpu_telemetry::energy::Fleet;
use ringperf_metrics::gpu_telemetry::records::{GpuRecord, records, write_jsonl};
use ringperf_metrics::gpu_telemetry::summary::{Telemetry, summarize_all};
use ringperf_wire::clock::Clock;

/// Starts collection; `None` when it is off, misconfigured (said on stderr) or no DCGM exporter
/// is reachable (said on stderr by the scraper, in one line).
pub(crate) fn start(
    cfg: &Config,
    clock: Clock,
    busy_cores: &[Option<usize>],
    board: Option<&Arc<Board>>,
) -> Option<Scraper> {
    if !cfg.gpu_telemetry.enabled {
        return None;
    }
    // AIPerf's `AIPERF_GPU_COLLECTION_INTERVAL` and `AIPERF_GPU_REACHABILITY_TIMEOUT` stand in
    // for their server-metrics counterparts; the read timeouts are shared.
    let gpu_name = |k: &str| match k {
        "AIPERF_SERVER_METRICS_COLLECTION_INTERVAL" => "AIPERF_GPU_COLLECTION_INTERVAL".to_owned(),
        "AIPERF_SERVER_METRICS_REACHABILITY_TIMEOUT" => {
            "AIPERF_GPU_REACHABILITY_TIMEOUT".to_owned()
        }
        other => other.to_owned(),
    };
    let mut settings = match Settings::from_lookup(|k| std::env::var(gpu_name(k)).ok()) {
        Ok(s) => s,
        Err(e) => {
            let e = e.to_string();
            let e = e
                .replace(
                    "AIPERF_SERVER_METRICS_COLLECTION_INTERVAL",
                    "AIPERF_GPU_COLLECTION_INTERVAL",
                )
                .replace(
                    "AIPERF_SERVER_METRICS_REACHABILITY_TIMEOUT",
                    "AIPERF_GPU_REACHABILITY_TIMEOUT",
                );
            eprintln!("ringperf: GPU telemetry disabled: {e}");
            return None;
        }
    };
    // AIPerf takes the final DCGM scrape as soon as profiling completes.
    settings.flush_period = Duration::ZERO;
    let endpoints = cfg.gpu_telemetry.urls.clone();
    let tls = match scrape_tls(cfg, &endpoints) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ringperf: GPU telemetry disabled: {e}");
            return None;
        }
    };
    let opts = StartOptions {
        endpoints,
        settings,
        io_driver: cfg.io_driver,
        core: free_core(busy_cores),
        clock,
        jsonl: None,
        tls,
        verbose: cfg.verbose,
        on_page: board.map(|b| dashboard_feed(b.clone())),
        role: Role::GpuTelemetry,
        phases: cfg.phase_layout(),
    };
    match Scraper::start(opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ringperf: GPU telemetry disabled: {e}");
            None
        }
    }
}

/// The dashboard's GPU panel: each exporter's last page, every exporter's GPUs together.
fn dashboard_feed(board: Arc<Board>) -> ringperf_engine::scrape::collector::PageHook {
    let mut per_endpoint: Vec<(String, Vec<ringperf_engine::ui::GpuLive>)> = Vec::new();
    ringperf_engine::scrape::collector::PageHook::new(move |url, page, _store| {
        let gpus = ringperf_engine::ui::highlights::gpu_readings(url, page);
        match per_endpoint.iter_mut().find(|(u, _)| u == url) {
            Some((_, g)) => *g = gpus,
            None => per_endpoint.push((url.to_string(), gpus)),
        }
        board.publish_gpus(per_endpoint.iter().flat_map(|(_, g)| g.clone()).collect());
    })
}

/// What collection left.
#[derive(Debug, Default)]
pub(crate) struct Finished {
    /// The statistics, when any DCGM page was read.
    pub telemetry: Option<Telemetry>,
    /// CPU time of the GPU scraper thread as it ended, ns (`None`: no such thread ran).
    pub scraper_cpu_ns: Option<u64>,
    /// The GPUs' power and energy over the profiling window, when any DCGM page was read.
    pub fleet: Option<Fleet>,
}

impl Finished {
    /// The energy-efficiency results of the profiling phase (`summary`), to add to its
    /// results; a warning on stderr when DCGM exporters were named but none gave power or
    /// energy.
    pub(crate) fn efficiency(
        &self,
        cfg: &Config,
        summary: &ringperf_metrics::aggregate::Summary,
    ) -> Vec<ringperf_metrics::aggregate::MetricResult> {
        let Some(fleet) = &self.fleet else {
            return Vec::new();
        };
        if fleet.resolve().is_none()
            && cfg.gpu_telemetry.urls.len()
                > ringperf_metrics::gpu_telemetry::DEFAULT_ENDPOINTS.len()
        {
            eprintln!(
                "ringperf: warning: GPU telemetry: no power or energy reading from the NVIDIA \
                 GPUs in the profiling window, so the GPU power-efficiency metrics are left \
                 out; check that the exporter serves DCGM_FI_DEV_POWER_USAGE or \
                 DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
            );
        }
        ringperf_metrics::gpu_telemetry::energy::efficiency(
            fleet,
            summary,
            cfg.profiling.load.max_in_flight(),
        )
    }

    /// The GPU platforms that reported (`nvidia`, ringperf reads DCGM exporters only); empty
    /// when none did.
    pub(crate) fn platforms(&self) -> Vec<&'static str> {
        match &self.telemetry {
            Some(t) if t.endpoints.iter().any(|e| !e.gpus.is_empty()) => vec!["nvidia"],
            _ => Vec::new(),
        }
    }

    /// The summary files' GPU sections.
    pub(crate) fn sections(&self) -> Option<GpuSections> {
        let t = self.telemetry.as_ref()?;
        Some(GpuSections {
            urls: t.urls(),
            start_ns: t.start_ns,
            end_ns: t.end_ns,
            endpoints: t.endpoints_json(),
            extra_headers: t.optional_headers(),
            // The stat columns: the header from `avg` to `std`.
            rows: t.csv_rows(&GPU_TABLE_HEADER[6..]),
        })
    }
}

/// Takes the final scrape, writes `gpu_telemetry_export.jsonl` (every record, in time order)
/// and summarizes the window `[profiling start, profiling end + 666 ms]`. Failures are
/// warnings.
pub(crate) fn finish(
    s: Option<Scraper>,
    dir: &Path,
    names: &ExportNames,
    start_wall_ns: u64,
    end_wall_ns: u64,
) -> Finished {
    let Some(s) = s else {
        return Finished::default();
    };
    let (c, _) = s.finish();
    let per_endpoint: Vec<Vec<GpuRecord>> = c.store.endpoints.iter().map(records).collect();
    let mut all: Vec<&GpuRecord> = per_endpoint.iter().flatten().collect();
    if all.is_empty() {
        return Finished {
            telemetry: None,
            scraper_cpu_ns: c.cpu_ns,
            fleet: None,
        };
    }
    all.sort_by_key(|r| r.ts_ns);
    let path = dir.join(&names.gpu_telemetry_jsonl);
    // AIPerf's footer lists no GPU file; the JSONL is written beside the others.
    let written = std::fs::File::create(&path).and_then(|f| {
        let mut out = std::io::BufWriter::new(f);
        let owned: Vec<GpuRecord> = all.into_iter().cloned().collect();
        write_jsonl(&mut out, &owned)?;
        out.flush()
    });
    if let Err(e) = written {
        eprintln!(
            "ringperf: warning: GPU telemetry: cannot write {}: {e}",
            path.display()
        );
    }
    let telemetry = summarize_all(
        &per_endpoint,
        start_wall_ns,
        end_wall_ns.saturating_add(FINAL_SCRAPE_GRACE_NS),
    );
    Finished {
        telemetry: Some(telemetry),
        scraper_cpu_ns: c.cpu_ns,
        fleet: Some(Fleet::measure(&per_endpoint, start_wall_ns, end_wall_ns)),
    }
}
