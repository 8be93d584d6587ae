//! The state every server thread of one server reads: its configuration, the pre-encoded model
//! name and `/v1/models` body, the per-thread metrics, the truth log and the stop flag.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::{SystemTime, UNIX_EPOCH};

use super::capacity::Slots;
use super::dcgm::Dcgm;
use super::metrics::{ThreadMetrics, escape_label, render};
use super::settings::MockConfig;
use super::truth::TruthLog;
use super::wire::models_body;

/// State every server thread reads.
pub(crate) struct Shared {
    pub(crate) cfg: MockConfig,
    /// The model name as a JSON string literal.
    pub(crate) model_json: String,
    /// The model name escaped for a Prometheus label.
    model_label: String,
    /// The `/v1/models` body.
    pub(crate) models_body: Vec<u8>,
    /// One per thread, index = thread index.
    pub(crate) metrics: Box<[ThreadMetrics]>,
    pub(crate) truth: Arc<TruthLog>,
    /// Raised by a stop or pause: the server threads leave their accept loops.
    pub(crate) stop: AtomicBool,
    /// Connections served so far: the next one's number in the truth log.
    pub(crate) connections: AtomicU64,
    /// HTTPS: the TLS server configuration made from [`MockConfig::tls`] at start.
    pub(crate) tls: Option<Arc<rustls::ServerConfig>>,
    /// The DCGM exporter page's counters and the pages served.
    pub(crate) dcgm: Dcgm,
    /// The service slots of a mock with a capacity ([`MockConfig::capacity`] > 0).
    pub(crate) slots: Option<Slots>,
    /// When the model is ready ([`MockConfig::model_ready_after`] after the start).
    ready_at: std::time::Instant,
    /// `POST /reset_prefix_cache` calls answered so far.
    resets: std::sync::atomic::AtomicU32,
    /// Readiness-relevant requests answered so far ([`MockConfig::loading_answers`]).
    answers: std::sync::atomic::AtomicU32,
    /// The video jobs submitted so far (`/v1/videos`).
    pub(crate) videos: super::videos::VideoJobs,
    /// Completion requests refused as over [`MockConfig::max_model_len`] so far.
    pub(crate) over_context: AtomicU64,
}

impl Shared {
    /// The state of a server about to start with `cfg`.
    pub(crate) fn new(cfg: MockConfig) -> Self {
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self {
            model_json: serde_json::to_string(&cfg.model).unwrap_or_else(|_| "\"\"".to_owned()),
            model_label: escape_label(&cfg.model),
            models_body: models_body(&cfg.model, created),
            metrics: (0..cfg.threads).map(|_| ThreadMetrics::new()).collect(),
            truth: Arc::new(TruthLog::new(cfg.truth_log, cfg.threads)),
            stop: AtomicBool::new(false),
            connections: AtomicU64::new(0),
            tls: None,
            dcgm: Dcgm::default(),
            slots: (cfg.capacity > 0).then(|| Slots::new(cfg.capacity)),
            ready_at: std::time::Instant::now() + cfg.model_ready_after,
            resets: std::sync::atomic::AtomicU32::new(0),
            answers: std::sync::atomic::AtomicU32::new(0),
            videos: super::videos::VideoJobs::default(),
            over_context: AtomicU64::new(0),
            cfg,
        }
    }

    /// Whether the model is still loading for this request ([`MockConfig::model_ready_after`],
    /// [`MockConfig::loading_answers`]); counts the request. Call once per `GET /v1/models` or
    /// completion request.
    pub(crate) fn loading(&self) -> bool {
        let n = if self.cfg.loading_answers > 0 {
            self.answers
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        } else {
            u32::MAX
        };
        n < self.cfg.loading_answers || std::time::Instant::now() < self.ready_at
    }

    /// The `/v1/models` body: the model, or no model while it loads.
    pub(crate) fn models_body_for(&self, listed: bool) -> Vec<u8> {
        if listed {
            self.models_body.clone()
        } else {
            br#"{"object":"list","data":[]}"#.to_vec()
        }
    }

    /// The status of a control call now: a reset within [`MockConfig::busy_resets`] is 503.
    pub(crate) fn control_status(&self, c: super::control::Control) -> u16 {
        if c == super::control::Control::ResetPrefixCache {
            let n = self
                .resets
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if n < self.cfg.busy_resets {
                return 503;
            }
        }
        200
    }

    pub(crate) fn metrics_text(&self) -> String {
        render(&self.metrics, &self.model_label)
    }

    /// The DCGM page now, from the requests in flight on every thread (`None` when the mock
    /// serves no DCGM page); a `GET` (`keep`) is recorded.
    pub(crate) fn dcgm_page(&self, keep: bool) -> Option<String> {
        let gpus = self.cfg.dcgm_gpus;
        (gpus > 0).then(|| {
            let in_flight = self.metrics.iter().map(ThreadMetrics::running).sum();
            self.dcgm
                .page(gpus, in_flight, ringperf_wire::clock::wall_now_ns(), keep)
        })
    }
}
