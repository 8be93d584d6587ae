//! What is streamed while the benchmark runs (docs/integrations.md): MLflow's live values and
//! the `timing` stream domain, beside the OTLP histograms of [`super::otel`].
//!
//! With `--mlflow-tracking-uri`, the `mlflow-live` thread starts the MLflow run at once (and
//! writes `mlflow_export.json`), then logs what the aggregator hands it as AIPerf 0.13's fanout
//! does: every per-request metric value as `live.<metric>` (the OTLP instrument's name and
//! unit), every timing counter and gauge as `live.<name>.<phase>` (its cumulative value), each
//! value one step of one counter shared by all names, in `log-batch` calls of at most
//! [`MAX_BATCH`] values, at least every [`FLUSH_INTERVAL`]. A failed call keeps the values and
//! waits (1 s, doubling up to 60 s) before the next try; past [`MAX_BATCH`] × 5 values held,
//! the oldest are dropped (their steps skipped). The end-of-run logging
//! ([`super::mlflow::export`]) then goes into the same run.
//!
//! The aggregator side ([`Live`]) only appends `(name, value)` pairs to a vector it hands over
//! in batches; names are shared (`Arc<str>`), so a value costs no allocation.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mlflow::{EXPORT_METADATA_FILE, LiveRun, Mlflow, TrackerError};
use super::otel::{Exporter, RunLabels};
use super::otlp::AttrValue;
use super::timing::{COUNTERS, Delta, Deltas, GAUGES, PhaseBoard, PhaseTally};
use crate::aggregate::metrics::{MetricValue, RecordMetrics};
use ringperf_wire::record::{Phase, RecordFacts};

/// Values in one `log-batch` call (AIPerf's `AIPERF_OTEL_MAX_BATCH_RECORDS` default).
pub const MAX_BATCH: usize = 500;
/// Longest time values wait before a `log-batch` call (`AIPERF_OTEL_FLUSH_INTERVAL_SECONDS`).
pub const FLUSH_INTERVAL: Duration = Duration::from_secs(2);
/// Longest wait after failed calls.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Batches of values waiting for the `mlflow-live` thread; a full queue drops the batch.
const QUEUE: usize = 64;
/// Longest wait for room for the last values.
const LAST_WAIT: Duration = Duration::from_secs(5);
/// How often the aggregator hands its values over.
const HAND_OVER: Duration = Duration::from_millis(250);

type Batch = Vec<(Arc<str>, f64)>;

/// The `mlflow-live` thread: what it started, once it ends.
pub struct LiveHandle(JoinHandle<Option<LiveRun>>);

impl LiveHandle {
    /// Waits for the thread (it ends once the aggregator's side is dropped and its values are
    /// logged): the run it started, if it could.
    pub fn join(self) -> Option<LiveRun> {
        self.0.join().ok().flatten()
    }
}

/// The aggregator's end of the `mlflow-live` thread.
pub struct LiveFeed {
    tx: SyncSender<Batch>,
    pending: Batch,
    last: Instant,
    dropped: u64,
}

impl LiveFeed {
    fn push(&mut self, name: &Arc<str>, v: f64) {
        self.pending.push((name.clone(), v));
        if self.pending.len() >= MAX_BATCH {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        self.last = Instant::now();
        if self.pending.is_empty() {
            return;
        }
        let batch = std::mem::replace(&mut self.pending, Vec::with_capacity(MAX_BATCH));
        match self.tx.try_send(batch) {
            Ok(()) => {}
            Err(TrySendError::Full(b) | TrySendError::Disconnected(b)) => {
                self.dropped += b.len() as u64;
            }
        }
    }

    fn finish(mut self) {
        // The last batch waits for room a little (the thread drains the queue as fast as the
        // server takes it), never long: a server that hangs must not hold the run's end.
        let mut batch = std::mem::take(&mut self.pending);
        let until = Instant::now() + LAST_WAIT;
        while !batch.is_empty() {
            match self.tx.try_send(batch) {
                Ok(()) => break,
                Err(TrySendError::Full(b)) if Instant::now() < until => {
                    batch = b;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(TrySendError::Full(b) | TrySendError::Disconnected(b)) => {
                    self.dropped += b.len() as u64;
                    break;
                }
            }
        }
        if self.dropped > 0 {
            eprintln!(
                "ringperf: warning: {} live MLflow values dropped: the tracking server did not \
                 keep up",
                self.dropped
            );
        }
    }
}

/// Starts the `mlflow-live` thread: it makes the run, writes `dir/mlflow_export.json`, then
/// logs the values handed to the returned feed until it is dropped.
///
/// # Errors
/// The thread cannot be spawned.
pub fn start_mlflow(
    m: &Mlflow,
    benchmark_id: &str,
    dir: &Path,
) -> std::io::Result<(LiveFeed, LiveHandle)> {
    let (tx, rx) = sync_channel::<Batch>(QUEUE);
    let (m, id, dir) = (m.clone(), benchmark_id.to_owned(), dir.to_path_buf());
    let h = std::thread::Builder::new()
        .name("mlflow-live".into())
        .spawn(move || live_thread(&m, &id, &dir, &rx))?;
    let feed = LiveFeed {
        tx,
        pending: Vec::with_capacity(MAX_BATCH),
        last: Instant::now(),
        dropped: 0,
    };
    Ok((feed, LiveHandle(h)))
}

/// Starts the run: made, its tags set, `mlflow_export.json` written.
fn begin(m: &Mlflow, benchmark_id: &str, dir: &Path) -> Result<LiveRun, TrackerError> {
    let c = super::mlflow::connect(m)?;
    let run_name = super::mlflow::run_name(m, benchmark_id);
    let (run_id, artifact_uri) = super::mlflow::create_run(&c, m, &run_name)?;
    let mut tags: Vec<Value> = m
        .tags
        .iter()
        .map(|(k, v)| json!({"key": k, "value": v}))
        .collect();
    tags.push(json!({"key": "benchmark_id", "value": benchmark_id}));
    c.post(
        "/api/2.0/mlflow/runs/log-batch",
        &json!({"run_id": run_id, "tags": tags}),
    )?;
    let meta = json!({
        "tracking_uri": m.uri.display,
        "experiment": m.experiment,
        "run_id": run_id,
        "run_name": run_name,
        "benchmark_id": benchmark_id,
        "parent_run_id": m.parent_run_id,
        "live_streaming": true,
        "stream_started_at_ns": ringperf_wire::clock::wall_now_ns(),
    });
    let path = dir.join(EXPORT_METADATA_FILE);
    let tmp = dir.join(format!("{EXPORT_METADATA_FILE}.tmp"));
    std::fs::write(&tmp, serde_json::to_vec_pretty(&meta).unwrap_or_default())
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| TrackerError::Files(format!("cannot write {}: {e}", path.display())))?;
    Ok(LiveRun {
        run_id,
        run_name,
        artifact_uri,
    })
}

/// The values waiting for a `log-batch` call, their first step, and the wait after failures.
struct Logger {
    buffer: Vec<(Arc<str>, f64)>,
    step: u64,
    backoff: Duration,
    retry_at: Option<Instant>,
    warned: bool,
}

impl Logger {
    /// Logs what is held, in calls of at most [`MAX_BATCH`] values; `force` ignores the wait
    /// after a failure (the last flush).
    fn flush(&mut self, post: &mut dyn FnMut(&[Value]) -> Result<(), TrackerError>, force: bool) {
        if self.buffer.is_empty() || (!force && self.retry_at.is_some_and(|t| Instant::now() < t)) {
            return;
        }
        let now_ms = ringperf_wire::clock::wall_now_ns() / 1_000_000;
        while !self.buffer.is_empty() {
            let n = self.buffer.len().min(MAX_BATCH);
            let metrics: Vec<Value> = self.buffer[..n]
                .iter()
                .enumerate()
                .map(|(i, (k, v))| {
                    json!({"key": format!("live.{k}"), "value": v, "timestamp": now_ms,
                           "step": self.step + i as u64})
                })
                .collect();
            if let Err(e) = post(&metrics) {
                self.failed(&e);
                return;
            }
            self.buffer.drain(..n);
            self.step += n as u64;
            self.backoff = Duration::from_secs(1);
            self.retry_at = None;
        }
    }

    fn failed(&mut self, e: &TrackerError) {
        self.retry_at = Some(Instant::now() + self.backoff);
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        if self.buffer.len() > MAX_BATCH * 5 {
            let dropped = self.buffer.len() - MAX_BATCH;
            self.buffer.drain(..dropped);
            self.step += dropped as u64;
            eprintln!(
                "ringperf: warning: live MLflow logging failed and {dropped} values were dropped \
                 ({e})"
            );
        } else if !self.warned {
            self.warned = true;
            eprintln!("ringperf: warning: live MLflow logging failed ({e}); retrying");
        }
    }
}

fn live_thread(
    m: &Mlflow,
    benchmark_id: &str,
    dir: &Path,
    rx: &Receiver<Batch>,
) -> Option<LiveRun> {
    let run = match begin(m, benchmark_id, dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "ringperf: warning: MLflow live streaming off: cannot start the run at {} ({e})",
                m.uri.display
            );
            // Take what the aggregator sends until it is done, so it never waits.
            while rx.recv().is_ok() {}
            return None;
        }
    };
    let c = super::mlflow::connect(m).ok()?;
    let mut post = |metrics: &[Value]| -> Result<(), TrackerError> {
        c.post(
            "/api/2.0/mlflow/runs/log-batch",
            &json!({"run_id": run.run_id, "metrics": metrics}),
        )
        .map(|_| ())
    };
    let mut logger = Logger {
        buffer: Vec::new(),
        step: 0,
        backoff: Duration::from_secs(1),
        retry_at: None,
        warned: false,
    };
    let mut last_flush = Instant::now();
    loop {
        match rx.recv_timeout(FLUSH_INTERVAL) {
            Ok(batch) => {
                for v in batch {
                    logger.buffer.push(v);
                    if logger.buffer.len() >= MAX_BATCH {
                        logger.flush(&mut post, false);
                        last_flush = Instant::now();
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if last_flush.elapsed() >= FLUSH_INTERVAL {
            logger.flush(&mut post, false);
            last_flush = Instant::now();
        }
    }
    logger.flush(&mut post, true);
    Some(run)
}

/// The `timing` domain's state on the aggregator.
struct Timing {
    board: Arc<PhaseBoard>,
    tally: PhaseTally,
    deltas: Deltas,
    /// To OTLP (`--stream` with `timing`), to MLflow, or both.
    otlp: bool,
    mlflow: bool,
    /// Each phase's point attributes.
    attrs: [Vec<(String, AttrValue)>; 2],
    /// MLflow's cumulative value of each (counter or gauge, phase), and its name.
    snapshots: HashMap<(bool, usize, Phase), (Arc<str>, f64)>,
    generation: u64,
    /// Each phase's sending-complete snapshot was taken.
    sent_all: [bool; 2],
    last: Instant,
}

/// What each phase's points carry besides `aiperf.benchmark_phase`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Expected {
    pub requests: Option<u64>,
    pub duration_sec: Option<f64>,
    pub sessions: Option<u64>,
}

/// The aggregator's streaming sinks besides the OTLP histograms.
pub struct Live {
    mlflow: Option<LiveFeed>,
    /// Per-request values go to MLflow (`--stream` with `metrics`).
    mlflow_metrics: bool,
    names: HashMap<&'static str, (Arc<str>, f64)>,
    timing: Option<Timing>,
}

impl Live {
    /// `mlflow`: the live MLflow feed; `metrics`/`timing`: the stream domains; `otlp_timing`:
    /// the timing domain also goes to the OTLP exporter.
    pub fn new(
        mlflow: Option<LiveFeed>,
        metrics: bool,
        timing: Option<(Arc<PhaseBoard>, &RunLabels, [Expected; 2])>,
        otlp_timing: bool,
    ) -> Self {
        let mlflow_on = mlflow.is_some();
        let timing =
            timing
                .filter(|_| otlp_timing || mlflow_on)
                .map(|(board, labels, expected)| Timing {
                    board,
                    tally: PhaseTally::default(),
                    deltas: Deltas::default(),
                    otlp: otlp_timing,
                    mlflow: mlflow_on,
                    attrs: [Phase::Warmup, Phase::Profiling].map(|p| {
                        timing_attrs(p, &expected[usize::from(p == Phase::Profiling)], labels)
                    }),
                    snapshots: HashMap::new(),
                    generation: 0,
                    sent_all: [false; 2],
                    last: Instant::now(),
                });
        Self {
            mlflow,
            mlflow_metrics: metrics,
            names: HashMap::new(),
            timing,
        }
    }

    /// One record (`turns`: the turns of its conversation).
    pub fn record(&mut self, f: &RecordFacts, m: &RecordMetrics, turns: u32) {
        if let Some(t) = self.timing.as_mut() {
            t.tally.record(
                f.phase,
                f.turn_index,
                turns,
                f.was_cancelled,
                f.error.is_some(),
            );
        }
        let Some(feed) = self.mlflow.as_mut().filter(|_| self.mlflow_metrics) else {
            return;
        };
        for (id, v) in &m.values {
            let d = id.def();
            if d.hidden() {
                continue;
            }
            let (name, scale) = self
                .names
                .entry(d.tag)
                .or_insert_with(|| {
                    let (n, s) = super::otel::instrument(d.tag);
                    (Arc::from(n), s)
                })
                .clone();
            match v {
                MetricValue::Int(x) => feed.push(&name, *x as f64 * scale),
                MetricValue::Float(x) => feed.push(&name, x * scale),
                MetricValue::List(l) => {
                    for x in l {
                        feed.push(&name, *x as f64 * scale);
                    }
                }
            }
        }
    }

    /// Between records: a timing snapshot at each phase event and every interval, and the
    /// values handed to MLflow's thread every [`HAND_OVER`].
    pub fn tick(&mut self, otel: Option<&mut Exporter>) {
        if let Some(t) = self.timing.as_mut() {
            let g = t.board.generation();
            // Just before each OTLP export, so that every export carries a fresh snapshot (at
            // most every 100 ms while the exporter has nothing to send yet).
            let since = t.last.elapsed();
            let due = match otel.as_deref() {
                Some(o) if t.otlp => o.due() && since >= Duration::from_millis(100),
                _ => since >= super::otel::INTERVAL,
            };
            // AIPerf's snapshot when a phase has sent all it will.
            let now = ringperf_wire::clock::wall_now_ns();
            let mut sent_all = false;
            for (i, p) in [Phase::Warmup, Phase::Profiling].into_iter().enumerate() {
                if !t.sent_all[i] && t.board.sending_complete(p, now) {
                    t.sent_all[i] = true;
                    sent_all = true;
                }
            }
            if g != t.generation || due || sent_all {
                t.generation = g;
                t.last = Instant::now();
                t.snapshot(otel, self.mlflow.as_mut());
            }
        }
        if let Some(f) = self.mlflow.as_mut()
            && f.last.elapsed() >= HAND_OVER
        {
            f.hand_over();
        }
    }

    /// Every record taken: the last timing snapshot, and the last values to MLflow.
    pub fn finish(mut self, otel: Option<&mut Exporter>) {
        if let Some(t) = self.timing.as_mut() {
            t.snapshot(otel, self.mlflow.as_mut());
        }
        if let Some(f) = self.mlflow.take() {
            f.finish();
        }
    }
}

fn timing_attrs(phase: Phase, e: &Expected, l: &RunLabels) -> Vec<(String, AttrValue)> {
    let mut a = vec![(
        "aiperf.benchmark_phase".to_owned(),
        AttrValue::Str(phase.as_str().into()),
    )];
    if let Some(n) = e.requests {
        a.push((
            "aiperf.total_expected_requests".into(),
            AttrValue::Int(n as i64),
        ));
    }
    if let Some(d) = e.duration_sec {
        a.push(("aiperf.expected_duration_sec".into(), AttrValue::Double(d)));
    }
    if let Some(n) = e.sessions {
        a.push((
            "aiperf.expected_num_sessions".into(),
            AttrValue::Int(n as i64),
        ));
    }
    a.push((
        "gen_ai.operation.name".into(),
        AttrValue::Str(l.operation.into()),
    ));
    a.push((
        "gen_ai.provider.name".into(),
        AttrValue::Str(l.provider.clone()),
    ));
    a.push((
        "gen_ai.request.model".into(),
        AttrValue::Str(l.model.clone()),
    ));
    a
}

impl Timing {
    /// A snapshot of every started phase, its changes to OTLP and MLflow.
    fn snapshot(&mut self, mut otel: Option<&mut Exporter>, mut feed: Option<&mut LiveFeed>) {
        let now = ringperf_wire::clock::wall_now_ns();
        for phase in [Phase::Warmup, Phase::Profiling] {
            let Some(s) = self.tally.snapshot(&self.board, phase, now) else {
                continue;
            };
            let attrs = &self.attrs[usize::from(phase == Phase::Profiling)];
            for d in self.deltas.of(phase, &s) {
                let (counter, k, delta) = match d {
                    Delta::Counter(k, x) => (true, k, x),
                    Delta::Gauge(k, x) => (false, k, x),
                };
                let (name, field, unit) = if counter {
                    (COUNTERS[k].0, COUNTERS[k].1, "1")
                } else {
                    GAUGES[k]
                };
                if self.otlp
                    && let Some(o) = otel.as_deref_mut()
                {
                    let desc = if counter {
                        format!("AIPerf timing counter: {field}")
                    } else {
                        format!("AIPerf timing gauge metric: {field}")
                    };
                    o.add_sum(name, unit, &desc, counter, attrs, delta);
                }
                if self.mlflow
                    && let Some(f) = feed.as_deref_mut()
                {
                    let (n, v) = self
                        .snapshots
                        .entry((counter, k, phase))
                        .or_insert_with(|| (Arc::from(format!("{name}.{}", phase.as_str())), 0.0));
                    *v += delta;
                    if !counter && v.abs() < 1e-9 {
                        *v = 0.0;
                    }
                    let (n, v) = (n.clone(), *v);
                    f.push(&n, v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(n: usize) -> Vec<(Arc<str>, f64)> {
        let a: Arc<str> = Arc::from("a");
        (0..n).map(|i| (a.clone(), i as f64)).collect()
    }

    #[test]
    fn values_go_in_batches_of_500_with_one_step_each() {
        let mut l = Logger {
            buffer: batch(1203),
            step: 0,
            backoff: Duration::from_secs(1),
            retry_at: None,
            warned: false,
        };
        let mut calls: Vec<Vec<Value>> = Vec::new();
        l.flush(
            &mut |m| {
                calls.push(m.to_vec());
                Ok(())
            },
            false,
        );
        assert_eq!(
            calls.iter().map(Vec::len).collect::<Vec<_>>(),
            [500, 500, 203]
        );
        let steps: Vec<u64> = calls
            .iter()
            .flatten()
            .map(|m| m["step"].as_u64().unwrap())
            .collect();
        assert_eq!(steps, (0..1203).collect::<Vec<u64>>());
        assert_eq!(calls[2][202]["key"], "live.a");
        assert_eq!(calls[2][202]["value"], 1202.0);
        assert_eq!(l.step, 1203);
    }

    #[test]
    fn a_failure_keeps_the_values_waits_and_drops_the_oldest_past_five_batches() {
        let mut l = Logger {
            buffer: batch(600),
            step: 10,
            backoff: Duration::from_secs(1),
            retry_at: None,
            warned: false,
        };
        let mut fail = |_: &[Value]| Err(TrackerError::Server("down".into()));
        l.flush(&mut fail, false);
        assert_eq!((l.buffer.len(), l.step), (600, 10));
        assert_eq!(l.backoff, Duration::from_secs(2));
        // Waiting: not even tried.
        let mut tried = false;
        l.flush(
            &mut |_| {
                tried = true;
                Ok(())
            },
            false,
        );
        assert!(!tried);
        // Past 2,500 held: the newest 500 stay, the steps of the others are skipped.
        l.buffer.extend(batch(2000));
        l.flush(&mut fail, true);
        assert_eq!((l.buffer.len(), l.step), (500, 10 + 2100));
        assert_eq!(l.buffer[0].1, 1500.0);
        // A success logs the rest from there and ends the wait.
        let mut steps = Vec::new();
        l.flush(
            &mut |m| {
                steps.extend(m.iter().map(|x| x["step"].as_u64().unwrap()));
                Ok(())
            },
            true,
        );
        assert_eq!(steps.first(), Some(&2110));
        assert_eq!((l.buffer.len(), l.retry_at), (0, None));
        assert_eq!(l.backoff, Duration::from_secs(1));
    }
}
