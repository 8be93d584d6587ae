//! The live dashboard (`--ui dashboard` on a terminal): a full-screen view of the run as it
//! goes, drawn by its own thread from snapshots the aggregator and the scraper publish on a
//! [`Board`]. Workers never touch it.
//!
//! - [`render`]: the screen, a pure function of a [`render::DashView`] (tested on ratatui's
//!   test backend).
//! - [`terminal`]: the thread that owns the terminal: raw mode and the alternate screen, a
//!   redraw every [`terminal::REDRAW`], `q` / Ctrl-C as a graceful stop (again: force quit).

pub mod highlights;
pub mod render;
pub mod terminal;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use ringperf_metrics::aggregate::live::LiveSnapshot;
use ringperf_wire::record::Phase;

/// The phase the dashboard shows in its header, set by the run as each phase starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseHeader {
    pub phase: Phase,
    /// `--request-count` (or the warmup's) when the phase is bounded by a count.
    pub total: Option<u64>,
    /// `--benchmark-duration` when the phase is bounded by time.
    pub duration: Option<Duration>,
    pub started: Instant,
}

/// Latest server-metrics highlights of one `/metrics` endpoint (the scraper's last page).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerLive {
    pub endpoint: String,
    /// Requests queued at the server (`vllm:num_requests_waiting`, `sglang:num_queue_reqs`).
    pub waiting: Option<f64>,
    /// Requests running (`vllm:num_requests_running`, `sglang:num_running_reqs`).
    pub running: Option<f64>,
    /// KV-cache use, percent (`vllm:kv_cache_usage_perc` / `vllm:gpu_cache_usage_perc` ×100,
    /// `sglang:token_usage` ×100).
    pub kv_cache_pct: Option<f64>,
    /// The server's own mean TTFT between its last two pages, ms (histogram sum / count delta).
    pub ttft_ms: Option<f64>,
}

/// Latest reading of one GPU (DCGM exporter page).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuLive {
    pub label: String,
    pub power_w: Option<f64>,
    pub utilization_pct: Option<f64>,
    pub memory_used_gb: Option<f64>,
    pub temperature_c: Option<f64>,
}

/// Where the run's threads leave what the dashboard draws.
#[derive(Debug, Default)]
pub struct Board {
    pub phase: Mutex<Option<PhaseHeader>>,
    pub client: Mutex<LiveSnapshot>,
    pub server: Mutex<Vec<ServerLive>>,
    pub gpus: Mutex<Vec<GpuLive>>,
}

impl Board {
    /// Replaces the aggregator's snapshot.
    pub fn publish_client(&self, s: LiveSnapshot) {
        if let Ok(mut c) = self.client.lock() {
            *c = s;
        }
    }

    /// Replaces one endpoint's server highlights (matched by endpoint).
    pub fn publish_server(&self, s: ServerLive) {
        if let Ok(mut all) = self.server.lock() {
            match all.iter_mut().find(|e| e.endpoint == s.endpoint) {
                Some(e) => *e = s,
                None => all.push(s),
            }
        }
    }

    /// Replaces the GPU readings.
    pub fn publish_gpus(&self, g: Vec<GpuLive>) {
        if let Ok(mut all) = self.gpus.lock() {
            *all = g;
        }
    }

    /// Marks the start of a phase.
    pub fn start_phase(&self, h: PhaseHeader) {
        if let Ok(mut p) = self.phase.lock() {
            *p = Some(h);
        }
    }
}
