//! GPU telemetry from DCGM exporters (docs/output-formats.md): the pages are scraped by a
//! `ringperf_engine::scrape::collector::Scraper` in its `Role::GpuTelemetry` role (the same scraper
//! thread code and zero-copy Prometheus parser as server metrics, one more thread of it), and
//! everything here works on what it stored, after the run:
//!
//! - [`fields`]: which DCGM field becomes which AIPerf 0.13 metric, in which unit, and which are
//!   counters;
//! - [`records`]: the per-GPU-per-scrape records (`gpu_telemetry_export.jsonl`);
//! - [`energy`]: the fleet's power and energy over the profiling window and the energy-efficiency
//!   metrics joined from them and the phase's results;
//! - [`summary`]: statistics per GPU per metric over the profiling window, the
//!   `telemetry_data` block of the summary JSON and the GPU table of the summary CSV.

pub mod energy;
pub mod fields;
pub mod records;
pub mod summary;

/// DCGM exporters AIPerf scrapes when `--gpu-telemetry` names none.
pub const DEFAULT_ENDPOINTS: [&str; 2] = [
    "http://localhost:9400/metrics",
    "http://localhost:9401/metrics",
];

/// `AIPERF_GPU_FINAL_SCRAPE_GRACE_NS`: the statistics window runs this long past the last
/// profiling request, so the final scrape closes the counter deltas.
pub const FINAL_SCRAPE_GRACE_NS: u64 = 666_000_000;
