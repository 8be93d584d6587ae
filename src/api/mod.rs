//! `--api-port`: AIPerf 0.13's live API for the run (docs/api.md). A small HTTP/1.1 and
//! WebSocket server ([`server`]) on threads of its own, never on a worker's core, serves what
//! the run publishes into [`Live`]: the configuration and the run's identity, each phase's
//! progress, the results so far (JSON and Prometheus text), the results and artifacts once
//! written, and every event as a WebSocket message to the clients subscribed to its type.
//!
//! The run feeds it from three places: the stages (`run`: system states, phase starts,
//! results), the aggregator thread ([`ringperf_engine::aggregator::LiveView`]: the realtime
//! results and the phases' progress), and nothing else; a route never waits on the run.

pub mod server;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::config::api::ApiAddr;
use ringperf_engine::aggregator::{LiveView, PhaseProgress, WorkerCount};
use ringperf_metrics::aggregate::Summary;
use ringperf_wire::record::Phase;
use server::{Handler, Hub, Request, Response, Server};

/// How long the API stays up after the results are written, so that pollers see the end
/// (AIPerf's `AIPERF_API_SERVER_POST_COMPLETE_GRACE`).
pub const POST_COMPLETE_GRACE: Duration = Duration::from_secs(5);
/// Between `POST /api/shutdown`'s answer and the stop.
const SHUTDOWN_DELAY: Duration = Duration::from_millis(500);
/// The results-ready marker's name (hidden from the file routes).
const MARKER: &str = ".aiperf_results_ready.json";

/// Where the controller is in its life, as AIPerf reports it (`system_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemState {
    Initializing,
    Configuring,
    Ready,
    Profiling,
    Processing,
    Stopping,
    Shutdown,
}

impl SystemState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Initializing => "initializing",
            Self::Configuring => "configuring",
            Self::Ready => "ready",
            Self::Profiling => "profiling",
            Self::Processing => "processing",
            Self::Stopping => "stopping",
            Self::Shutdown => "shutdown",
        }
    }
}

/// A phase as its driver starts it: what the API shows of it besides its counters.
#[derive(Clone, Debug)]
pub struct PhaseStart {
    pub phase: Phase,
    /// Its position in the run (warmup first).
    pub index: u8,
    /// Its position among the profiling phases (`None` for warmup).
    pub profiling_index: Option<u8>,
    pub name: String,
    pub start_wall_ns: u64,
    pub expected_requests: Option<u64>,
    pub expected_duration_sec: Option<f64>,
    pub expected_sessions: Option<u64>,
    pub grace_sec: Option<f64>,
}

/// The identity of a run the API serves (`/api/config`, `/api/run`, the labels of
/// `/metrics`).
#[derive(Clone, Debug)]
pub struct RunIdentity {
    /// The resolved configuration (`input_config`).
    pub config: Value,
    /// The `run_info` block.
    pub run_info: Value,
    pub benchmark_id: String,
    /// The models, sorted and joined by `,`.
    pub model: String,
    pub endpoint_type: String,
    pub streaming: bool,
    /// The first profiling phase's concurrency and request rate.
    pub concurrency: Option<u64>,
    pub request_rate: Option<f64>,
}

/// One phase's entry of `/api/progress`.
struct PhaseEntry {
    phase: Phase,
    name: String,
    /// AIPerf's `CombinedPhaseStats`, every field (nulls included), in its order.
    stats: Map<String, Value>,
    sending_complete_sent: bool,
    complete_sent: bool,
    records_sent: bool,
}

#[derive(Default)]
struct State {
    system_state: Option<SystemState>,
    run: Option<RunIdentity>,
    /// The latest realtime results, AIPerf's `MetricResult` objects.
    metrics: Vec<Value>,
    phases: Vec<PhaseEntry>,
    /// The entry the aggregator's progress of each phase kind goes to.
    current: [Option<usize>; 2],
    workers: Vec<WorkerCount>,
    /// `/api/results`: the results once written, and whether the run was cancelled.
    results: Option<(Value, bool)>,
    /// The run's artifacts, once the results-ready marker is written.
    artifact_dir: Option<PathBuf>,
    /// The benchmark (every run of it) is over: `POST /api/shutdown` is accepted.
    complete: bool,
    /// The latest live server figures: each endpoint's summary, and the snapshot.
    server: Option<(Value, Vec<(&'static str, f64)>)>,
}

/// What the run publishes and the API serves.
pub struct Live {
    hub: Arc<Hub>,
    state: Mutex<State>,
    /// `POST /api/shutdown` was accepted after the end: the grace ends early.
    shutdown: Arc<(Mutex<bool>, Condvar)>,
}

fn slot(p: Phase) -> usize {
    usize::from(p == Phase::Profiling)
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The fields of AIPerf's `CombinedPhaseStats`, in order.
const PHASE_FIELDS: [&str; 40] = [
    "phase",
    "phase_index",
    "profiling_index",
    "phase_name",
    "phase_kind",
    "start_ns",
    "sent_end_ns",
    "requests_end_ns",
    "baseline_start_ns",
    "baseline_end_ns",
    "total_expected_requests",
    "expected_duration_sec",
    "expected_num_sessions",
    "expected_grace_period_sec",
    "final_requests_sent",
    "final_requests_completed",
    "final_requests_cancelled",
    "final_request_errors",
    "final_sent_sessions",
    "final_completed_sessions",
    "final_cancelled_sessions",
    "timeout_triggered",
    "grace_period_timeout_triggered",
    "was_cancelled",
    "records_end_ns",
    "success_records",
    "error_records",
    "requests_sent",
    "requests_completed",
    "requests_cancelled",
    "request_errors",
    "sent_sessions",
    "completed_sessions",
    "cancelled_sessions",
    "total_session_turns",
    "requests_per_second",
    "records_per_second",
    "requests_eta_sec",
    "records_eta_sec",
    "last_update_ns",
];

/// Fields of the phase stats a credit-phase message's `stats` leaves out (AIPerf's
/// `CreditPhaseStats` has every other one).
const NOT_CREDIT: [&str; 7] = [
    "success_records",
    "error_records",
    "requests_per_second",
    "records_per_second",
    "requests_eta_sec",
    "records_eta_sec",
    "last_update_ns",
];

/// Fields of the phase stats a `processing_stats` message's stats leaves out (AIPerf's
/// `PhaseRecordsStats`: the identity, times, expected count, final answers, flags and records).
const NOT_RECORDS: [&str; 20] = [
    "expected_duration_sec",
    "expected_num_sessions",
    "expected_grace_period_sec",
    "final_requests_sent",
    "final_sent_sessions",
    "final_completed_sessions",
    "final_cancelled_sessions",
    "requests_sent",
    "requests_completed",
    "requests_cancelled",
    "request_errors",
    "sent_sessions",
    "completed_sessions",
    "cancelled_sessions",
    "total_session_turns",
    "requests_per_second",
    "records_per_second",
    "requests_eta_sec",
    "records_eta_sec",
    "last_update_ns",
];

/// The fields of `stats` not in `left_out` and not null, in order (a message's
/// `exclude_none`).
fn subset(stats: &Map<String, Value>, left_out: &[&str]) -> Map<String, Value> {
    stats
        .iter()
        .filter(|(k, v)| !v.is_null() && !left_out.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn opt<T: Into<Value>>(v: Option<T>) -> Value {
    v.map_or(Value::Null, Into::into)
}

impl PhaseEntry {
    fn new(p: &PhaseStart) -> Self {
        let mut stats = Map::new();
        for f in PHASE_FIELDS {
            stats.insert(f.to_owned(), Value::Null);
        }
        let kind = p.phase.as_str();
        let set = |stats: &mut Map<String, Value>, k: &str, v: Value| {
            stats.insert(k.to_owned(), v);
        };
        set(&mut stats, "phase", kind.into());
        set(&mut stats, "phase_index", p.index.into());
        set(&mut stats, "profiling_index", opt(p.profiling_index));
        set(&mut stats, "phase_name", p.name.as_str().into());
        set(&mut stats, "phase_kind", kind.into());
        set(&mut stats, "start_ns", p.start_wall_ns.into());
        set(
            &mut stats,
            "total_expected_requests",
            opt(p.expected_requests),
        );
        set(
            &mut stats,
            "expected_duration_sec",
            opt(p.expected_duration_sec),
        );
        set(
            &mut stats,
            "expected_num_sessions",
            opt(p.expected_sessions),
        );
        set(&mut stats, "expected_grace_period_sec", opt(p.grace_sec));
        for f in [
            "timeout_triggered",
            "grace_period_timeout_triggered",
            "was_cancelled",
        ] {
            set(&mut stats, f, false.into());
        }
        for f in [
            "success_records",
            "error_records",
            "requests_sent",
            "requests_completed",
            "requests_cancelled",
            "request_errors",
            "sent_sessions",
            "completed_sessions",
            "cancelled_sessions",
            "total_session_turns",
        ] {
            set(&mut stats, f, 0.into());
        }
        Self {
            phase: p.phase,
            name: p.name.clone(),
            stats,
            sending_complete_sent: false,
            complete_sent: false,
            records_sent: false,
        }
    }

    fn int(&self, k: &str) -> u64 {
        self.stats.get(k).and_then(Value::as_u64).unwrap_or(0)
    }

    /// Folds the aggregator's view in; the messages it causes, in order.
    fn update(&mut self, p: &PhaseProgress) -> Vec<(&'static str, &'static str, Value)> {
        let s = &p.stats;
        let mut put = |k: &str, v: Value| {
            self.stats.insert(k.to_owned(), v);
        };
        put("requests_sent", s.requests_sent.into());
        put("requests_completed", s.requests_completed.into());
        put("requests_cancelled", s.requests_cancelled.into());
        put("request_errors", s.request_errors.into());
        put("sent_sessions", s.sent_sessions.into());
        put("completed_sessions", s.completed_sessions.into());
        put("cancelled_sessions", s.cancelled_sessions.into());
        put("total_session_turns", s.total_session_turns.into());
        put("timeout_triggered", s.timeout_triggered.into());
        put(
            "grace_period_timeout_triggered",
            s.grace_timeout_triggered.into(),
        );
        put("was_cancelled", s.was_cancelled.into());
        put("success_records", p.success_records.into());
        put("error_records", p.error_records.into());
        put("last_update_ns", p.now_wall_ns.into());
        let start = self.int("start_ns");
        let elapsed = p.now_wall_ns.saturating_sub(start) as f64 / 1e9;
        let expected = self
            .stats
            .get("total_expected_requests")
            .and_then(Value::as_u64);
        let rate = |n: u64| (elapsed > 0.0 && n > 0).then(|| n as f64 / elapsed);
        let eta =
            |n: u64, r: Option<f64>| expected.zip(r).map(|(e, r)| e.saturating_sub(n) as f64 / r);
        let records = p.success_records + p.error_records;
        let (rr, cr) = (rate(s.requests_completed), rate(records));
        self.stats.insert("requests_per_second".into(), opt(rr));
        self.stats.insert("records_per_second".into(), opt(cr));
        self.stats.insert(
            "requests_eta_sec".into(),
            opt(eta(s.requests_completed, rr)),
        );
        self.stats
            .insert("records_eta_sec".into(), opt(eta(records, cr)));
        let mut out = Vec::new();
        if p.sending_complete && !self.sending_complete_sent {
            self.sending_complete_sent = true;
            let mut put = |k: &str, v: Value| {
                self.stats.insert(k.to_owned(), v);
            };
            put("sent_end_ns", p.now_wall_ns.into());
            put("final_requests_sent", s.requests_sent.into());
            put("final_sent_sessions", s.sent_sessions.into());
            out.push((
                "credit_phase_sending_complete",
                "timing_manager",
                self.credit(),
            ));
        }
        if p.ended && !self.complete_sent {
            self.complete_sent = true;
            let mut put = |k: &str, v: Value| {
                self.stats.insert(k.to_owned(), v);
            };
            put("requests_end_ns", p.now_wall_ns.into());
            put("final_requests_sent", s.requests_sent.into());
            put("final_requests_completed", s.requests_completed.into());
            put("final_requests_cancelled", s.requests_cancelled.into());
            put("final_request_errors", s.request_errors.into());
            put("final_sent_sessions", s.sent_sessions.into());
            put("final_completed_sessions", s.completed_sessions.into());
            put("final_cancelled_sessions", s.cancelled_sessions.into());
            out.push(("credit_phase_complete", "timing_manager", self.credit()));
        }
        if p.all_records && p.ended && !self.records_sent {
            self.records_sent = true;
            self.stats
                .insert("records_end_ns".into(), p.now_wall_ns.into());
            let mut v = Map::new();
            v.insert("request_ns".into(), p.now_wall_ns.into());
            v.insert(
                "final_processing_stats".into(),
                Value::Object(self.records()),
            );
            out.push(("all_records_received", "records_manager", Value::Object(v)));
        }
        out
    }

    fn credit(&self) -> Value {
        json!({ "stats": Value::Object(subset(&self.stats, &NOT_CREDIT)) })
    }

    fn records(&self) -> Map<String, Value> {
        subset(&self.stats, &NOT_RECORDS)
    }
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("clients", &self.hub.clients())
            .finish_non_exhaustive()
    }
}

impl Live {
    fn new(hub: Arc<Hub>) -> Self {
        Self {
            hub,
            state: Mutex::new(State::default()),
            shutdown: Arc::new((Mutex::new(false), Condvar::new())),
        }
    }

    /// Sends a message of `message_type` from `service_id` with the fields of `body` to the
    /// WebSocket clients subscribed to it.
    fn publish(&self, message_type: &str, service_id: &str, body: Value) {
        if !self.hub.wants(message_type) {
            return;
        }
        let mut m = Map::new();
        m.insert("message_type".into(), message_type.into());
        m.insert("service_id".into(), service_id.into());
        if let Value::Object(fields) = body {
            m.extend(fields);
        }
        self.hub
            .publish(message_type, &Value::Object(m).to_string());
    }

    /// The controller's state moved.
    pub fn set_state(&self, s: SystemState) {
        lock(&self.state).system_state = Some(s);
        self.publish(
            "system_state_changed",
            "system_controller",
            json!({ "state": s.as_str() }),
        );
    }

    /// A run starts (the first, or the next of a multi-run or a sweep): what the API shows
    /// of the previous one is replaced.
    pub fn begin(&self, run: RunIdentity) {
        let mut st = lock(&self.state);
        st.run = Some(run);
        st.metrics.clear();
        st.phases.clear();
        st.current = [None, None];
        st.workers.clear();
        st.results = None;
        st.artifact_dir = None;
        st.server = None;
    }

    /// The scrapes so far (every second once profiling started): each endpoint's summary and
    /// the server snapshot.
    pub fn server_metrics(&self, summaries: Value, snapshot: Vec<(&'static str, f64)>) {
        let body = json!({
            "endpoint_summaries": summaries.clone(),
            "snapshot": snapshot_object(&snapshot),
        });
        lock(&self.state).server = Some((summaries, snapshot));
        self.publish("realtime_server_metrics", "server_metrics_manager", body);
    }

    /// A phase starts.
    pub fn phase_start(&self, p: &PhaseStart) {
        let entry = PhaseEntry::new(p);
        // The phase's identity (its first five fields) and expected count.
        let mut config: Map<String, Value> = (entry.stats.iter().take(5))
            .map(|(k, v)| (k.clone(), v.clone()))
            .filter(|(_, v)| !v.is_null())
            .collect();
        if let Some(n) = p.expected_requests {
            config.insert("total_expected_requests".into(), n.into());
        }
        let body = json!({
            "stats": entry.credit()["stats"].clone(),
            "config": Value::Object(config),
        });
        {
            let mut st = lock(&self.state);
            // A later phase of the same name replaces the earlier one's entry.
            let i = match st.phases.iter().position(|e| e.name == entry.name) {
                Some(i) => {
                    st.phases[i] = entry;
                    i
                }
                None => {
                    st.phases.push(entry);
                    st.phases.len() - 1
                }
            };
            st.current[slot(p.phase)] = Some(i);
        }
        self.publish("credit_phase_start", "timing_manager", body);
    }

    /// The results are written: the summary document, its directory (with the results-ready
    /// marker), and whether the run was cancelled.
    pub fn results(&self, summary: Value, dir: &Path, cancelled: bool) {
        let mut st = lock(&self.state);
        st.results = Some((summary, cancelled));
        st.artifact_dir = Some(dir.to_path_buf());
    }

    /// The benchmark is over (every run of it): `POST /api/shutdown` may end the grace.
    pub fn complete(&self) {
        lock(&self.state).complete = true;
    }

    /// Waits [`POST_COMPLETE_GRACE`], or less when a client asked for the shutdown.
    fn grace(&self, grace: Duration) {
        let (m, cv) = &*self.shutdown;
        let end = Instant::now() + grace;
        let mut asked = m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while !*asked {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            asked = cv
                .wait_timeout(asked, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// `/api/progress`.
    fn progress_json(&self) -> Value {
        let st = lock(&self.state);
        let mut phases = Map::new();
        for e in &st.phases {
            phases.insert(e.name.clone(), Value::Object(e.stats.clone()));
        }
        let workers = st.workers.len();
        json!({
            "phases": phases,
            "workers": {
                "ready": workers, "total": workers, "dispatchable": workers,
                "router_connected": 0, "ready_record_processors": 0,
                "declared_record_processors": 0, "ready_pods": 0, "total_pods": 0,
                "degraded_pods": 0,
            },
            "results_exported": st.artifact_dir.is_some(),
            "system_state": st.system_state.unwrap_or(SystemState::Initializing).as_str(),
        })
    }

    /// `/api/workers`: each worker thread's requests (AIPerf's `task_stats`).
    fn workers_json(&self) -> Value {
        let st = lock(&self.state);
        let running = !matches!(
            st.system_state,
            Some(SystemState::Stopping | SystemState::Shutdown)
        );
        let mut workers = Map::new();
        let (mut total, mut failed, mut completed) = (0, 0, 0);
        for w in &st.workers {
            let id = format!("worker_{}", w.worker);
            total += w.completed + w.failed;
            failed += w.failed;
            completed += w.completed;
            workers.insert(
                id.clone(),
                json!({
                    "worker_id": id,
                    "task_stats": {"total": w.completed + w.failed, "failed": w.failed, "completed": w.completed},
                    "processing_stats": {"processed": w.completed + w.failed, "errors": w.failed},
                    "health": null,
                    "status": if running { "healthy" } else { "stopped" },
                    "startup_state": null,
                    "startup_state_updated_ns": null,
                    "last_update_ns": null,
                }),
            );
        }
        let group = json!({
            "group_id": "local",
            "status": if running { "healthy" } else { "stopped" },
            "startup_state": null,
            "declared_workers": st.workers.len(),
            "ready_workers": st.workers.len(),
            "health": null,
            "task_stats": {"total": total, "failed": failed, "completed": completed},
            "workers": workers.clone(),
            "last_update_ns": null,
        });
        json!({ "workers": workers, "worker_groups": { "local": group } })
    }

    /// The `aiperf_info` labels, in AIPerf's order.
    fn labels(run: &RunIdentity) -> Vec<(&'static str, String)> {
        let mut l = vec![
            ("benchmark_id", run.benchmark_id.clone()),
            ("model", run.model.clone()),
            ("endpoint_type", run.endpoint_type.clone()),
            ("streaming", run.streaming.to_string()),
        ];
        if let Some(c) = run.concurrency {
            l.push(("concurrency", c.to_string()));
        }
        if let Some(r) = run.request_rate {
            l.push(("request_rate", ringperf_metrics::export::py_float_str(r)));
        }
        l
    }

    /// `/api/metrics`.
    fn metrics_json(&self) -> Value {
        let st = lock(&self.state);
        let mut metrics = Map::new();
        for m in &st.metrics {
            if let Some(o) = m.as_object() {
                let tag = o.get("tag").and_then(Value::as_str).unwrap_or_default();
                let mut rest = o.clone();
                rest.remove("tag");
                metrics.insert(tag.to_owned(), Value::Object(rest));
            }
        }
        let run = st.run.as_ref();
        json!({
            "aiperf_version": ringperf_metrics::export::AIPERF_VERSION,
            "benchmark_id": run.map(|r| r.benchmark_id.clone()),
            "model": run.map(|r| r.model.clone()),
            "endpoint_type": run.map(|r| r.endpoint_type.clone()),
            "streaming": run.map(|r| r.streaming),
            "concurrency": run.and_then(|r| r.concurrency),
            "request_rate": run.and_then(|r| r.request_rate),
            "metrics": metrics,
        })
    }

    /// `/metrics`.
    fn prometheus(&self) -> String {
        let st = lock(&self.state);
        let labels = st.run.as_ref().map(Self::labels).unwrap_or_default();
        ringperf_metrics::export::prometheus::format(
            &st.metrics,
            &labels,
            ringperf_metrics::export::AIPERF_VERSION,
        )
    }

    /// `/api/results`.
    fn results_json(&self) -> Value {
        let st = lock(&self.state);
        match &st.results {
            Some((v, cancelled)) => json!({
                "status": if *cancelled { "cancelled" } else { "complete" },
                "results": v,
            }),
            None => json!({ "status": "running", "results": null }),
        }
    }

    /// `/api/results/list`: the artifacts once the results are written (the marker hidden).
    fn results_list(&self) -> Value {
        let dir = lock(&self.state).artifact_dir.clone();
        let files = dir.as_deref().map(list_files).unwrap_or_default();
        json!({
            "files": files,
            "ready": dir.is_some(),
            "processing": false,
            "partial": false,
            "failed_exporters": [],
        })
    }

    /// `/api/results/files/{name}`.
    fn result_file(&self, name: &str) -> Response {
        let bad = name.is_empty()
            || name == MARKER
            || name.starts_with('/')
            || name.split('/').any(|c| c == ".." || c.is_empty());
        if bad {
            return Response::detail(
                400,
                &format!("Invalid filename '{name}': path traversal or reserved marker name"),
            );
        }
        let Some(dir) = lock(&self.state).artifact_dir.clone() else {
            return Response::detail(
                404,
                &format!(
                    "Results not ready for artifacts; marker file {MARKER} not present — retry after completion"
                ),
            );
        };
        match std::fs::read(dir.join(name)) {
            Ok(body) => Response {
                status: 200,
                content_type: content_type(name),
                body,
                extra: vec![(
                    "content-disposition",
                    format!(
                        "attachment; filename=\"{}\"",
                        name.rsplit('/').next().unwrap_or(name)
                    ),
                )],
            },
            Err(_) => Response::detail(404, &format!("File not found: {name}")),
        }
    }
}

fn content_type(name: &str) -> &'static str {
    match Path::new(name).extension().and_then(|e| e.to_str()) {
        Some("json") => "application/json",
        Some("jsonl") => "application/x-ndjson",
        Some("csv") => "text/csv; charset=utf-8",
        Some("html") => "text/html; charset=utf-8",
        Some("txt" | "log") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Every file under `dir` (relative names, `/`-separated, sorted), the marker left out.
fn list_files(dir: &Path) -> Vec<Value> {
    fn walk(root: &Path, at: &Path, out: &mut Vec<(String, u64)>) {
        let Ok(entries) = std::fs::read_dir(at) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => walk(root, &path, out),
                Ok(t) if t.is_file() => {
                    let rel = path.strip_prefix(root).unwrap_or(&path);
                    let name = rel.to_string_lossy().replace('\\', "/");
                    if name != MARKER {
                        out.push((name, e.metadata().map_or(0, |m| m.len())));
                    }
                }
                _ => {}
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|(name, size)| json!({ "name": name, "size": size }))
        .collect()
}

impl LiveView for Live {
    fn realtime(&self, _phase_index: u8, summary: &Summary) {
        let mut metrics: Vec<Value> = summary
            .results
            .iter()
            .filter(|r| !r.def.hidden())
            .map(metric_object)
            .collect();
        // The server snapshot's figures follow, as in AIPerf's realtime results.
        if let Some((_, snapshot)) = &lock(&self.state).server {
            metrics.extend(snapshot.iter().map(|&(tag, v)| {
                let (header, unit) =
                    ringperf_metrics::server_metrics::live::display(tag).unwrap_or((tag, ""));
                json!({"unit": unit, "avg": v, "tag": tag, "header": header, "current": v})
            }));
        }
        let body = json!({ "metrics": metrics.clone() });
        lock(&self.state).metrics = metrics;
        self.publish("realtime_metrics", "records_manager", body);
    }

    fn progress(&self, phases: &[PhaseProgress], workers: &[WorkerCount]) {
        let mut messages = Vec::new();
        {
            let mut st = lock(&self.state);
            st.workers = workers.to_vec();
            for p in phases {
                let Some(i) = st.current[slot(p.phase)] else {
                    continue;
                };
                let Some(e) = st.phases.get_mut(i) else {
                    continue;
                };
                if e.phase != p.phase {
                    continue;
                }
                let events = e.update(p);
                messages.push(("credit_phase_progress", "timing_manager", e.credit()));
                let mut stats = e.records();
                stats.remove("sent_end_ns");
                messages.push((
                    "processing_stats",
                    "records_manager",
                    json!({ "request_ns": p.now_wall_ns, "processing_stats": stats }),
                ));
                messages.extend(events);
            }
        }
        let statuses: Map<String, Value> = workers
            .iter()
            .map(|w| (format!("worker_{}", w.worker), Value::from("healthy")))
            .collect();
        messages.push((
            "worker_status_summary",
            "worker_manager",
            json!({ "worker_statuses": statuses, "worker_startup_states": {} }),
        ));
        for (t, service, body) in messages {
            self.publish(t, service, body);
        }
    }
}

/// The snapshot as a JSON object, in its order.
fn snapshot_object(snapshot: &[(&'static str, f64)]) -> Value {
    Value::Object(
        snapshot
            .iter()
            .map(|&(k, v)| (k.to_owned(), json!(v)))
            .collect(),
    )
}

/// One result as AIPerf's `MetricResult` (display units): its statistics, then `tag` and
/// `header`; a scalar's `count` is 1, as AIPerf's realtime results carry it.
fn metric_object(r: &ringperf_metrics::aggregate::MetricResult) -> Value {
    let mut m = match ringperf_metrics::export::json::metric_json(r) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    if matches!(r.value, ringperf_metrics::aggregate::ResultValue::Scalar(_)) {
        m.insert("count".into(), 1.into());
    }
    m.insert("tag".into(), r.tag().into_owned().into());
    m.insert("header".into(), r.header().into_owned().into());
    Value::Object(m)
}

impl Handler for Live {
    fn handle(&self, req: &Request) -> Response {
        let path = req.path.as_str();
        let get = req.method == "GET";
        let known = |methods: &'static str| -> Option<Response> {
            (!methods.split(',').any(|m| m == req.method)).then(|| {
                let mut r = Response::detail(405, "Method Not Allowed");
                r.extra.push(("allow", methods.replace(',', ", ")));
                r
            })
        };
        if let Some(name) = path.strip_prefix("/api/results/files/") {
            if let Some(r) = known("GET") {
                return r;
            }
            return self.result_file(&ringperf_wire::http::form_parse::percent_decode(name));
        }
        match path {
            "/healthz"
            | "/readyz"
            | "/api/config"
            | "/api/run"
            | "/metrics"
            | "/api/metrics"
            | "/api/progress"
            | "/api/workers"
            | "/api/server-metrics"
            | "/api/results"
            | "/api/results/list" => {
                if let Some(r) = known("GET") {
                    return r;
                }
            }
            "/api/shutdown" => {
                if let Some(r) = known("POST") {
                    return r;
                }
            }
            _ => return Response::detail(404, "Not Found"),
        }
        let st = || lock(&self.state);
        match path {
            "/healthz" => Response::text(200, "ok"),
            // Not ready once the controller stops (the grace after the results).
            "/readyz" => match st().system_state {
                Some(SystemState::Stopping | SystemState::Shutdown) => {
                    Response::text(503, "not ready")
                }
                _ => Response::text(200, "ok"),
            },
            "/api/config" => match st().run.as_ref() {
                Some(r) => Response::json(200, &r.config),
                None => Response::detail(503, "No active benchmark run."),
            },
            "/api/run" => match st().run.as_ref() {
                Some(r) => Response::json(200, &r.run_info),
                None => Response::detail(503, "No active benchmark run."),
            },
            "/metrics" => Response::text(200, self.prometheus()),
            "/api/metrics" => Response::json(200, &self.metrics_json()),
            "/api/progress" => Response::json(200, &self.progress_json()),
            "/api/workers" => Response::json(200, &self.workers_json()),
            "/api/server-metrics" => Response::json(
                200,
                &match &st().server {
                    Some((summaries, snapshot)) => json!({
                        "endpoint_summaries": summaries,
                        "snapshot": snapshot_object(snapshot),
                    }),
                    None => json!({
                        "endpoint_summaries": {},
                        "message": "No server metrics available yet",
                    }),
                },
            ),
            "/api/results" => Response::json(200, &self.results_json()),
            "/api/results/list" => Response::json(200, &self.results_list()),
            "/api/shutdown" if get => Response::detail(405, "Method Not Allowed"),
            "/api/shutdown" => {
                if !st().complete {
                    return Response::detail(
                        409,
                        "Benchmark is still running. Cannot shut down API service.",
                    );
                }
                // The answer goes out first; the grace ends half a second later.
                let shutdown = self.shutdown.clone();
                let _ = std::thread::Builder::new()
                    .name("ringperf-api-stop".into())
                    .spawn(move || {
                        std::thread::sleep(SHUTDOWN_DELAY);
                        let (m, cv) = &*shutdown;
                        *m.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
                        cv.notify_all();
                    });
                Response::json(200, &json!({"status": "shutting_down"}))
            }
            _ => Response::detail(404, "Not Found"),
        }
    }
}

/// `--api-port` names a port that cannot be bound: the message, AIPerf's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindError(pub String);

impl std::fmt::Display for BindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BindError {}

/// The live API of a process: its server and what it serves.
pub struct Api {
    server: Server,
    live: Arc<Live>,
}

impl Api {
    /// Starts the API at `addr`, its threads pinned to `core` when given. A port given by the
    /// flag that cannot be bound is an error; one from `AIPERF_API_SERVER_PORT` alone is a
    /// warning, and the run goes on without the API (as in AIPerf).
    ///
    /// # Errors
    /// `--api-port` names a port that cannot be bound.
    pub fn start(addr: &ApiAddr, core: Option<usize>) -> Result<Option<Self>, BindError> {
        let bind = resolve(addr).and_then(|a| {
            let hub = Arc::new(Hub::default());
            let live = Arc::new(Live::new(hub.clone()));
            let handler: Arc<dyn Handler> = live.clone();
            Server::start(a, handler, hub, core).map(|s| (s, live))
        });
        match bind {
            Ok((server, live)) => {
                live.set_state(SystemState::Initializing);
                eprintln!("ringperf: live API at {}", url_of(addr, server.addr));
                Ok(Some(Self { server, live }))
            }
            Err(e) => {
                let msg = format!("API server cannot bind {}:{}: {e}", addr.host, addr.port);
                if addr.from_flag {
                    Err(BindError(msg))
                } else {
                    eprintln!("ringperf: warning: {msg}; the run goes on without it");
                    Ok(None)
                }
            }
        }
    }

    /// What the run publishes into.
    pub fn live(&self) -> &Arc<Live> {
        &self.live
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.server.addr
    }

    /// After the benchmark: the state goes to `stopping` then `shutdown` (`/readyz` answers
    /// 503), and the API stays up [`POST_COMPLETE_GRACE`] (or until a client's
    /// `POST /api/shutdown`) so that pollers see the end, then stops; WebSocket clients get a
    /// close frame.
    pub fn finish(self) {
        self.live.complete();
        self.live.set_state(SystemState::Stopping);
        self.live.set_state(SystemState::Shutdown);
        self.live.grace(POST_COMPLETE_GRACE);
        self.server.stop();
    }
}

/// `http://host:port/` of the bound address (the port the system gave for 0).
fn url_of(addr: &ApiAddr, bound: std::net::SocketAddr) -> String {
    ApiAddr {
        port: bound.port(),
        ..addr.clone()
    }
    .url()
}

/// The socket address of `addr` (a name is looked up; its first address is used).
fn resolve(addr: &ApiAddr) -> std::io::Result<std::net::SocketAddr> {
    use std::net::ToSocketAddrs;
    let host = addr.host.trim_start_matches('[').trim_end_matches(']');
    (host, addr.port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no address"))
}

#[cfg(test)]
mod tests;
