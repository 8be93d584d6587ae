//! The aggregator, a stage of the run of its own: rings in, records and statistics out. Its
//! thread ([`spawn`]) drains every worker's ring, turns each raw record into facts (response
//! parsing, token counting) and metrics, streams per-request records to the JSONL file, and
//! accumulates the columns the final statistics are computed from ([`Collected`]). The run
//! (`ringperf::run`) builds its input ([`Collector`]) when it starts the workers and joins it when
//! the phases are done.

use ringperf_workload::workload::cache_bust::Marker;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ringperf_io::control::{ErrorBudget, RunControl, StopReason};
use ringperf_metrics::aggregate::accumulator::is_context_overflow;
use ringperf_metrics::aggregate::http_trace::as_aiperf_reads;
use ringperf_metrics::aggregate::live::LiveStats;
use ringperf_metrics::aggregate::realtime::Ticker;
use ringperf_metrics::aggregate::{Accumulator, MetricConfig, record_metrics};
use ringperf_metrics::export::JsonlWriter;
use ringperf_metrics::export::outputs_json::OutputsJson;
use ringperf_metrics::export::raw::RawWriter;
use ringperf_metrics::export::timeslices::TimesliceCollector;
use ringperf_wire::clock::Clock;
use ringperf_wire::endpoint::{EndpointKind, ParsedResponse, parse_record, payload_inputs};
use ringperf_wire::record::ring::Consumer;
use ringperf_wire::record::{Phase, RawRecord, RecordFacts};
use ringperf_workload::workload::Tokenizer;

/// How often the aggregator publishes the dashboard's figures.
const LIVE_INTERVAL: Duration = Duration::from_millis(250);

/// Live counters the UI reads.
#[derive(Debug, Default)]
pub struct Progress {
    pub warmup_done: AtomicU64,
    pub profiling_done: AtomicU64,
    pub profiling_errors: AtomicU64,
    /// When the current profiling phase started (the run's clock, ns; 0 before the first).
    pub profiling_start_ns: AtomicU64,
    /// Realtime stats blocks waiting for the progress bar to print them above itself
    /// ([`RealtimeBlock::via_progress`]).
    pub realtime_blocks: std::sync::Mutex<Vec<String>>,
    /// `--ui dashboard`: where the aggregator publishes its live figures.
    pub board: Option<Arc<crate::ui::Board>>,
    /// The server's realtime snapshot (`ringperf_metrics::server_metrics::live::snapshot`),
    /// refreshed by the server-metrics scraper: the realtime stats block's `srv` row.
    pub server_snapshot: std::sync::Mutex<Vec<(&'static str, f64)>>,
}

/// Per turn of the dataset: what the aggregator needs to know about the request it sent.
#[derive(Debug, Clone)]
pub struct TurnInfo {
    pub conversation_id: String,
    /// ISL counted from the wire payload before the run; `None` for a turn whose body carries
    /// its conversation's history (counted from the body the record brings).
    pub isl_tokens: Option<u64>,
    /// Image parts of the turn's pre-built body (a body built at run time is counted from the
    /// body the record brings).
    pub images: u32,
    pub max_tokens: Option<u64>,
    /// The turn's trace timestamp (ms), when it has one (a fixed-schedule replay sends it then).
    pub timestamp_ms: Option<f64>,
    /// Length in seconds of the audio clip the turn uploads (`audio_duration`).
    pub audio_seconds: Option<f64>,
    /// `(hits, total)` prefix blocks of an agent trace's turn.
    pub prefix_blocks: Option<(u32, u32)>,
    /// Where an agent trace's turn came from.
    pub source: Option<ringperf_wire::conversation::TurnSource>,
}

/// `--stats-interval`: AIPerf's realtime stats block of the profiling phase so far
/// ([`ringperf_metrics::aggregate::realtime`]), computed and printed by the aggregator thread,
/// and the live API's snapshot of its results at the same ticks.
#[derive(Clone, Copy, Debug)]
pub struct RealtimeBlock {
    /// Time between blocks.
    pub every: Duration,
    /// The block is printed (false: the ticks only feed the live API, as AIPerf's
    /// `--stats-interval 0` with an API port).
    pub print: bool,
    /// A progress bar is drawn: the blocks go to [`Progress::realtime_blocks`] for it to print
    /// above itself, instead of straight to stderr.
    pub via_progress: bool,
}

/// What the aggregator thread needs.
pub struct Collector {
    pub consumers: Vec<Consumer>,
    /// A run of more phases than a warmup and a profiling phase: each phase's kind, in the order
    /// they run (empty otherwise); their records are also gathered phase by phase.
    pub phases: Vec<Phase>,
    pub kind: EndpointKind,
    /// `template`'s `response_field` (answers are read there; `None` auto-detects).
    pub response_field: Option<Arc<ringperf_wire::endpoint::FieldPath>>,
    pub tokenizer: Arc<Tokenizer>,
    /// Every turn, in dataset order.
    pub turns: Arc<Vec<TurnInfo>>,
    /// Index in `turns` of each conversation's first turn.
    pub turn_offsets: Arc<Vec<usize>>,
    /// A streamed replay's slots, where the ISL of each turn is left as it is built.
    pub stream: Option<Arc<ringperf_workload::workload::stream::Stream>>,
    pub clock: Clock,
    pub metric_cfg: MetricConfig,
    pub use_server_token_count: bool,
    /// `--per-chunk-usage`: the first content chunk's usage count goes into the facts.
    pub per_chunk_usage: bool,
    /// `--export-outputs-json`: every profiling record's entry of `outputs.json`.
    pub outputs: Option<OutputsJson>,
    pub jsonl: Option<(PathBuf, JsonlWriter)>,
    /// `--export-level raw`: the raw writer, and the pre-encoded requests the payloads of
    /// turns without a built body are read from (`templates[url][turn]`, as the workers send).
    pub raw: Option<RawSink>,
    /// `--slice-duration`: keeps the profiling records for the client timeslices.
    pub timeslices: Option<TimesliceCollector>,
    pub progress: Arc<Progress>,
    pub control: Arc<RunControl>,
    /// Each profiling phase's error budget, by its number in the run (`--failed-request-threshold`,
    /// a config file's `failed_request_threshold`), checked after every record of that phase.
    /// A later phase's budget carries its name (the stop names it).
    pub budgets: Vec<(u8, ErrorBudget, Option<String>)>,
    /// Grace for requests in flight after the budget stops the run.
    pub stop_grace: Option<Duration>,
    /// `--otel-url`: every record folded here, exported live and at the end.
    pub otel: Option<ringperf_metrics::lab::otel::Exporter>,
    /// MLflow's live values and the `timing` stream domain.
    pub live: Option<ringperf_metrics::lab::live::Live>,
    /// `--stats-interval`: the realtime stats block.
    pub realtime: Option<RealtimeBlock>,
    /// `--api-port`: the live API the aggregator publishes to.
    pub api: Option<LiveLink>,
    /// A scenario's agentic replay: a record of a request over the model's context leaves
    /// every metric, per-request file and error count, and is only counted (AIPerf's skip
    /// path; docs/metrics.md, "Context overflow").
    pub skip_context_overflows: bool,
    /// An adaptive phase's controller reads the records of its phase here.
    pub adaptive: Option<Arc<ringperf_metrics::adaptive::tap::Tap>>,
}

/// How often the aggregator publishes the phases' progress to the live API (AIPerf's credit
/// progress and records processing reports, every 2 s).
pub const LIVE_PROGRESS: Duration = Duration::from_secs(2);

/// The live API (`--api-port`, docs/api.md): what the aggregator thread publishes to it.
pub trait LiveView: Send + Sync {
    /// A realtime tick at which the current profiling phase's records moved: its results so
    /// far.
    fn realtime(&self, phase_index: u8, summary: &ringperf_metrics::aggregate::Summary);
    /// Every [`LIVE_PROGRESS`], at each phase's start, end and sending-complete instant, and
    /// once every record is in: each started phase's progress, and each worker's records.
    fn progress(&self, phases: &[PhaseProgress], workers: &[WorkerCount]);
}

/// One worker's records so far (every phase).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerCount {
    pub worker: u32,
    pub completed: u64,
    pub failed: u64,
}

/// One phase's progress as the aggregator sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseProgress {
    pub phase: Phase,
    /// AIPerf's credit-phase counters.
    pub stats: ringperf_metrics::lab::timing::PhaseStats,
    /// The phase's records taken so far (valid, failed).
    pub success_records: u64,
    pub error_records: u64,
    /// The phase has sent all it will.
    pub sending_complete: bool,
    /// The phase ended (every worker reported done).
    pub ended: bool,
    /// Every record of the run is in (the aggregator's last report).
    pub all_records: bool,
    /// When this was taken (wall ns).
    pub now_wall_ns: u64,
}

/// The aggregator's link to the live API.
pub struct LiveLink {
    pub view: Arc<dyn LiveView>,
    /// Where the phases' driver marks their start and end.
    pub board: Arc<ringperf_metrics::lab::timing::PhaseBoard>,
}

/// The link and what the aggregator keeps for it.
struct ApiFeed {
    link: LiveLink,
    tally: ringperf_metrics::lab::timing::PhaseTally,
    workers: Vec<WorkerCount>,
    generation: u64,
    sent_all: [bool; 2],
    last: Instant,
    /// The realtime snapshot being computed, off the aggregator's loop.
    snapshot: Option<JoinHandle<Duration>>,
    /// No snapshot starts before this (its share of the core is bounded).
    next_snapshot: Instant,
}

/// A snapshot's computation may take at most this share of the time between snapshots: the
/// next waits `SNAPSHOT_SPACING` times as long as the last took.
const SNAPSHOT_SPACING: u32 = 4;

impl ApiFeed {
    /// A feed of `link` with nothing counted yet.
    fn new(link: LiveLink) -> Self {
        Self {
            link,
            tally: ringperf_metrics::lab::timing::PhaseTally::default(),
            workers: Vec::new(),
            generation: 0,
            sent_all: [false; 2],
            last: Instant::now(),
            snapshot: None,
            next_snapshot: Instant::now(),
        }
    }

    /// A realtime tick: the results so far of `acc` (a profiling phase that started at
    /// `start_wall_ns`), computed from a copy on a thread of their own (it inherits the
    /// aggregator's core) and handed to the API; the aggregator only pays for the copy and
    /// goes on draining. A tick while the previous snapshot is still computing, or sooner than
    /// its cost allows, is skipped.
    fn snapshot(
        &mut self,
        acc: &ringperf_metrics::aggregate::Accumulator,
        phase: u8,
        start_wall_ns: u64,
    ) {
        let now = Instant::now();
        if let Some(h) = self.snapshot.take_if(|h| h.is_finished()) {
            let took = h.join().unwrap_or_default();
            self.next_snapshot = now + took * SNAPSHOT_SPACING;
        }
        if self.snapshot.is_some() || now < self.next_snapshot {
            return;
        }
        let acc = acc.clone();
        let view = self.link.view.clone();
        self.snapshot = std::thread::Builder::new()
            .name("ringperf-snapshot".into())
            .spawn(move || {
                let t = Instant::now();
                let summary = acc.finish_from(Some(start_wall_ns));
                let took = t.elapsed();
                view.realtime(phase, &summary);
                took
            })
            .ok();
    }

    /// Waits for a snapshot still computing (the run's end: it must not land after the
    /// final report).
    fn settle(&mut self) {
        if let Some(h) = self.snapshot.take() {
            let _ = h.join();
        }
    }

    /// The progress of every started phase, to the API.
    fn publish(&self, all_records: bool) {
        let now = ringperf_wire::clock::wall_now_ns();
        let board = &self.link.board;
        let phases: Vec<PhaseProgress> = [Phase::Warmup, Phase::Profiling]
            .into_iter()
            .enumerate()
            .filter_map(|(i, phase)| {
                let stats = self.tally.snapshot(board, phase, now)?;
                let c = self.tally.count(phase);
                // The workers may report done before the aggregator drained their last
                // records: the phase is complete (AIPerf's every credit returned) once each
                // request sent has its record here, or at the last report.
                let answered = stats.requests_completed + stats.requests_cancelled;
                let ended = board.ended(phase) && (all_records || answered >= stats.requests_sent);
                Some(PhaseProgress {
                    phase,
                    stats,
                    success_records: c.completed.saturating_sub(c.errors),
                    error_records: c.errors + c.cancelled,
                    sending_complete: self.sent_all[i] || board.ended(phase),
                    ended,
                    all_records,
                    now_wall_ns: now,
                })
            })
            .collect();
        self.link.view.progress(&phases, &self.workers);
    }

    /// Between records: a report every [`LIVE_PROGRESS`] and at each phase event.
    fn tick(&mut self) {
        let now = ringperf_wire::clock::wall_now_ns();
        let mut event = false;
        for (i, p) in [Phase::Warmup, Phase::Profiling].into_iter().enumerate() {
            if !self.sent_all[i] && self.link.board.sending_complete(p, now) {
                self.sent_all[i] = true;
                event = true;
            }
        }
        let g = self.link.board.generation();
        if g != self.generation {
            self.generation = g;
            // A phase that starts again (a later profiling phase) sends again.
            for (i, p) in [Phase::Warmup, Phase::Profiling].into_iter().enumerate() {
                if !self.link.board.ended(p) && !self.link.board.sending_complete(p, now) {
                    self.sent_all[i] = false;
                }
            }
            event = true;
        }
        if event || self.last.elapsed() >= LIVE_PROGRESS {
            self.last = Instant::now();
            self.publish(false);
        }
    }
}

/// The raw export's writer and what it needs to find each request's body.
pub struct RawSink {
    pub path: PathBuf,
    pub writer: RawWriter,
    pub shared: Arc<crate::worker::Shared>,
}

/// The aggregator's sleep when the rings are empty while records flow: short, to keep what it
/// decides from them (the error budget's stop) prompt (a run of refused connections makes
/// thousands of records in 32 ms), and long enough to take them in batches. Once the rings have
/// stayed empty for [`QUIET_BEFORE_PARKING`] it parks on the rings' doorbell instead: the next
/// push (or the workers' end) wakes it, and nothing else does (but the dashboard's refresh).
const IDLE_NAP: Duration = Duration::from_millis(2);
const QUIET_BEFORE_PARKING: Duration = Duration::from_secs(1);
/// Longest park on the doorbell.
const PARK_LIMIT: Duration = Duration::from_secs(1);

/// The body `raw` sent: built for it, or its turn's pre-encoded request minus the head.
fn payload<'a>(
    shared: &'a crate::worker::Shared,
    raw: &'a RawRecord,
    turn_offsets: &[usize],
) -> &'a [u8] {
    {
        if let Some(b) = &raw.request_body {
            return b;
        }
        let turn = turn_offsets
            .get(raw.credit.conversation as usize)
            .map(|&o| o + raw.credit.turn as usize);
        let template = turn.and_then(|t| {
            shared
                .templates
                .get(raw.url_index as usize)
                .and_then(|per_url| per_url.get(t))
                .and_then(Option::as_ref)
        });
        template.map_or(&[], |req| {
            memchr::memmem::find(&req.bytes, b"\r\n\r\n").map_or(&[], |at| &req.bytes[at + 4..])
        })
    }
}

/// A record as an adaptive phase's window counts it (AIPerf 0.13's adaptive scale): a success
/// has a request latency and no error; its TTFT, ITL and output length are the record's
/// metrics.
fn tapped(
    facts: &RecordFacts,
    metrics: &ringperf_metrics::aggregate::RecordMetrics,
) -> ringperf_metrics::adaptive::tap::Tapped {
    use ringperf_metrics::adaptive::tap::{Outcome, Tapped};
    use ringperf_metrics::adaptive::window::Sample;
    use ringperf_metrics::aggregate::MetricId as M;
    let latency = metrics
        .f64(M::RequestLatency)
        .filter(|_| facts.error.is_none());
    let outcome = match latency {
        Some(_) => Outcome::Success,
        None if facts.was_cancelled => Outcome::Cancelled,
        None => Outcome::Error,
    };
    Tapped {
        start_ns: facts.start_ns,
        outcome,
        sample: Sample {
            latency_ns: latency.unwrap_or(0.0) as u64,
            ttft_ns: metrics.f64(M::TimeToFirstToken).map(|v| v as u64),
            itl_ns: metrics.f64(M::InterTokenLatency),
            output_tokens: metrics.f64(M::OutputSequenceLength).map(|v| v as u64),
        },
    }
}

/// What the aggregator hands back when every ring is drained and closed.
pub struct Collected {
    /// Every profiling phase's records.
    pub profiling: Accumulator,
    /// A run of several phases ([`Collector::phases`]): each phase's, by its number in the run
    /// (warmups too).
    pub by_phase: Vec<Accumulator>,
    pub warmup: Accumulator,
    pub warmup_seen: bool,
    pub ring_stalls: u64,
    /// CPU time of the aggregator thread (`CLOCK_THREAD_CPUTIME_ID`, read as it ends), ns.
    pub cpu_ns: u64,
    pub jsonl_error: Option<String>,
    pub timeslices: Option<TimesliceCollector>,
    /// `--export-outputs-json`: the entries, written with the other exports.
    pub outputs: Option<OutputsJson>,
}

/// What the aggregator accumulates while it drains the rings.
struct Tally {
    profiling: Accumulator,
    by_phase: Vec<Accumulator>,
    warmup: Accumulator,
    warmup_seen: bool,
    /// Reused for every response.
    parsed: ParsedResponse,
    /// The first failure to write a per-request record (later records are not written).
    jsonl_error: Option<String>,
    /// The dashboard's fold, only when it is shown.
    live: Option<LiveStats>,
    /// The run's position of the last profiling record's phase.
    profiling_index: u8,
    /// Each phase's records and failed ones, by its number in the run, as far as counted.
    phase_counts: Vec<(u64, u64)>,
}

impl Collector {
    /// Runs until every producer is gone and every ring is empty.
    pub fn run(mut self) -> Collected {
        let mut tally = Tally {
            profiling: Accumulator::new(self.metric_cfg.clone()),
            by_phase: (self.phases.iter())
                .map(|_| Accumulator::new(self.metric_cfg.clone()))
                .collect(),
            warmup: Accumulator::new(self.metric_cfg.clone()),
            warmup_seen: false,
            parsed: ParsedResponse::with_response_field(self.response_field.clone())
                .keep_response_text(self.outputs.is_some()),
            jsonl_error: None,
            live: self.progress.board.as_ref().map(|_| LiveStats::default()),
            profiling_index: 0,
            phase_counts: Vec::new(),
        };
        let mut ticker = self.realtime.map(|r| Ticker::new(r.every, Instant::now()));
        let mut api = self.api.take().map(ApiFeed::new);
        let board = self.progress.board.clone();
        let mut last_flush = Instant::now();
        let mut last_publish = Instant::now();
        let mut quiet_since = Instant::now();
        let bell = self.consumers.first().and_then(|c| c.bell()).cloned();
        loop {
            let got = self.drain(&mut tally, api.as_mut());
            if let Some(t) = ticker.as_mut()
                && t.due(Instant::now())
            {
                self.realtime_tick(t, &tally, api.as_mut());
            }
            if let Some(a) = api.as_mut() {
                a.tick();
            }
            if let (Some(b), Some(l)) = (board.as_ref(), tally.live.as_ref())
                && last_publish.elapsed() >= LIVE_INTERVAL
            {
                let stalls = self.consumers.iter().map(Consumer::stalls).sum();
                b.publish_client(l.snapshot(self.clock.now_ns(), stalls));
                last_publish = Instant::now();
            }
            if let Some(l) = self.live.as_mut() {
                l.tick(self.otel.as_mut());
            }
            if let Some(o) = self.otel.as_mut() {
                o.tick(ringperf_wire::clock::wall_now_ns());
            }
            if last_flush.elapsed() >= Duration::from_secs(1) {
                if let Some((_, w)) = self.jsonl.as_mut() {
                    let _ = w.maybe_flush(self.clock.now_ns());
                }
                last_flush = Instant::now();
            }
            if got == 0 {
                if self.consumers.iter().all(Consumer::is_finished) {
                    break;
                }
                match bell.as_ref() {
                    // Quiet for a while (a trace's gap, the end of a run): sleep until a push.
                    Some(b) if quiet_since.elapsed() >= QUIET_BEFORE_PARKING => {
                        if let Some((_, w)) = self.jsonl.as_mut() {
                            let _ = w.flush_now(self.clock.now_ns());
                        }
                        // Bounded to a second. A release run of perf/idle_hang.sh still never
                        // ends, even with the dashboard's 250 ms bound: its last record never
                        // reaches a ring and its ring is never closed (not a lost wake), so
                        // this bound does not cure it (issue #22, open).
                        let refresh = Some(board.as_ref().map_or(PARK_LIMIT, |_| LIVE_INTERVAL));
                        let rings = &self.consumers;
                        b.sleep_unless(refresh, || {
                            rings.iter().any(Consumer::has_records)
                                || rings.iter().all(Consumer::is_finished)
                        });
                    }
                    // Records flow: take them in batches without stealing the workers' cores
                    // (records wait at most this long; the rings absorb far more than that).
                    _ => std::thread::sleep(IDLE_NAP),
                }
            } else {
                quiet_since = Instant::now();
            }
        }
        if let Some(a) = api.as_mut() {
            a.settle();
            a.publish(true);
        }
        self.close(tally)
    }

    /// Takes what the rings hold now, a bounded batch per ring to keep the draining fair; the
    /// number of records taken.
    fn drain(&mut self, tally: &mut Tally, mut api: Option<&mut ApiFeed>) -> usize {
        let mut got = 0usize;
        for i in 0..self.consumers.len() {
            for _ in 0..256 {
                let Some(raw) = self.consumers[i].pop() else {
                    break;
                };
                got += 1;
                let skipped = self.take(&raw, tally);
                if let Some(a) = api.as_deref_mut() {
                    let failed = !skipped && (raw.error.is_some() || tally.parsed.error.is_some());
                    let turns = self.turns_of(raw.credit.conversation);
                    a.tally.record(
                        raw.credit.phase,
                        raw.credit.turn,
                        turns,
                        raw.was_cancelled,
                        failed,
                    );
                    let w = raw.worker_id as usize;
                    if a.workers.len() <= w {
                        a.workers.resize_with(w + 1, WorkerCount::default);
                        for (i, c) in a.workers.iter_mut().enumerate() {
                            c.worker = i as u32;
                        }
                    }
                    if failed {
                        a.workers[w].failed += 1;
                    } else {
                        a.workers[w].completed += 1;
                    }
                }
            }
        }
        got
    }

    /// One record: its facts and metrics into its phase's accumulator (and the timeslices, the
    /// dashboard, the error budget), then into the per-request files. True for a record over
    /// the model's context left out of all of it ([`Collector::skip_context_overflows`]).
    fn take(&mut self, raw: &RawRecord, tally: &mut Tally) -> bool {
        let facts = self.facts(raw, &mut tally.parsed);
        if self.skip_context_overflows
            && (facts.error.as_ref()).is_some_and(|e| is_context_overflow(&e.message))
        {
            self.skip(raw, &facts, tally);
            return true;
        }
        let metrics = record_metrics(&self.metric_cfg, &facts);
        if let Some(l) = tally.live.as_mut() {
            l.add(&facts, &metrics);
        }
        if let Some(o) = self.otel.as_mut() {
            o.add(&facts, &metrics);
        }
        let turns = self.turns_of(raw.credit.conversation);
        if let Some(l) = self.live.as_mut() {
            l.record(&facts, &metrics, turns);
        }
        match facts.phase {
            Phase::Warmup => {
                tally.warmup_seen = true;
                tally.warmup.add(&facts, &metrics);
                if let Some(acc) = tally.by_phase.get_mut(usize::from(raw.credit.phase_index)) {
                    acc.add(&facts, &metrics);
                }
                self.progress.warmup_done.fetch_add(1, Ordering::Relaxed);
            }
            Phase::Profiling => {
                tally.profiling_index = raw.credit.phase_index;
                if let Some(tap) = &self.adaptive
                    && tap.watching(raw.credit.phase_index)
                {
                    tap.push(tapped(&facts, &metrics));
                }
                tally.profiling.add(&facts, &metrics);
                if let Some(acc) = tally.by_phase.get_mut(usize::from(raw.credit.phase_index)) {
                    acc.add(&facts, &metrics);
                }
                if let Some(t) = self.timeslices.as_mut() {
                    t.add(&facts, &metrics);
                }
                if let Some(o) = self.outputs.as_mut() {
                    o.add(&facts, &metrics, &tally.parsed.response_text);
                }
                self.count_profiling(tally, raw.credit.phase_index, facts.error.is_some());
            }
        }
        if let Some((path, w)) = self.jsonl.as_mut()
            && tally.jsonl_error.is_none()
            && let Err(e) = w.write_from(&facts, &metrics, Some(raw))
        {
            tally.jsonl_error = Some(format!("writing {}: {e}", path.display()));
        }
        if let Some(sink) = self.raw.as_mut()
            && tally.jsonl_error.is_none()
        {
            let body = payload(&sink.shared, raw, &self.turn_offsets);
            if let Err(e) = sink.writer.write(raw, &facts, &metrics, body) {
                tally.jsonl_error = Some(format!("writing {}: {e}", sink.path.display()));
            }
        }
        false
    }

    /// A record over the model's context in a scenario's agentic replay: counted in its
    /// phase, and as an answer (a success for the error budget, as AIPerf counts it), nothing
    /// more.
    fn skip(&mut self, raw: &RawRecord, facts: &RecordFacts, tally: &mut Tally) {
        match facts.phase {
            Phase::Warmup => {
                tally.warmup_seen = true;
                tally.warmup.skip_context_overflow();
                if let Some(acc) = tally.by_phase.get_mut(usize::from(raw.credit.phase_index)) {
                    acc.skip_context_overflow();
                }
                self.progress.warmup_done.fetch_add(1, Ordering::Relaxed);
            }
            Phase::Profiling => {
                tally.profiling_index = raw.credit.phase_index;
                tally.profiling.skip_context_overflow();
                if let Some(acc) = tally.by_phase.get_mut(usize::from(raw.credit.phase_index)) {
                    acc.skip_context_overflow();
                }
                self.count_profiling(tally, raw.credit.phase_index, false);
            }
        }
    }

    /// A tick of the realtime stats block: the current profiling phase's block, printed
    /// unless its count has not moved since the last one.
    fn realtime_tick(&self, ticker: &mut Ticker, tally: &Tally, api: Option<&mut ApiFeed>) {
        let acc =
            (tally.by_phase.get(usize::from(tally.profiling_index))).unwrap_or(&tally.profiling);
        let started = self.progress.profiling_start_ns.load(Ordering::Relaxed);
        let elapsed_s = self.clock.now_ns().saturating_sub(started) as f64 / 1e9;
        if !ticker.advance(Instant::now(), acc) {
            return;
        }
        if let Some(a) = api {
            a.snapshot(acc, tally.profiling_index, self.clock.wall_ns(started));
        }
        if !self.realtime.is_some_and(|r| r.print) {
            return;
        }
        let srv = self
            .progress
            .server_snapshot
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default();
        let block = ticker.block(acc, tally.profiling_index, elapsed_s, &srv);
        if self.realtime.is_some_and(|r| r.via_progress) {
            if let Ok(mut q) = self.progress.realtime_blocks.lock() {
                q.push(block);
            }
        } else {
            use std::io::Write;
            // One write: the block's lines stay together.
            let _ = writeln!(std::io::stderr().lock(), "{block}");
        }
    }

    /// Counts a request (`failed` or not) of the profiling phase numbered `index` in the run;
    /// stops the run once that phase's error budget is crossed.
    fn count_profiling(&self, tally: &mut Tally, index: u8, failed: bool) {
        if failed {
            self.progress
                .profiling_errors
                .fetch_add(1, Ordering::Relaxed);
        }
        self.progress.profiling_done.fetch_add(1, Ordering::Relaxed);
        let i = usize::from(index);
        if tally.phase_counts.len() <= i {
            tally.phase_counts.resize(i + 1, (0, 0));
        }
        let counts = &mut tally.phase_counts[i];
        counts.0 += 1;
        counts.1 += u64::from(failed);
        let (total, failed) = *counts;
        let budget = (self.budgets.iter()).find(|(at, _, _)| *at == index);
        if let Some((_, b, phase)) = budget
            && b.crossed(failed, total)
            && !self.control.stopped()
        {
            let reason = StopReason::ErrorBudget {
                failed,
                total,
                threshold: b.threshold,
                phase: phase.clone(),
            };
            eprintln!("ringperf: stopping: {reason}");
            self.control.stop_after(reason, self.stop_grace);
        }
    }

    /// Closes the per-request files (the first failure is kept) and hands back the tally.
    fn close(mut self, tally: Tally) -> Collected {
        let mut jsonl_error = tally.jsonl_error;
        if let Some((path, w)) = self.jsonl.take()
            && let Err(e) = w.close()
        {
            jsonl_error.get_or_insert(format!("writing {}: {e}", path.display()));
        }
        if let Some(sink) = self.raw.take()
            && let Err(e) = sink.writer.close()
        {
            jsonl_error.get_or_insert(format!("writing {}: {e}", sink.path.display()));
        }
        if let Some(l) = self.live.take() {
            l.finish(self.otel.as_mut());
        }
        if let Some(o) = self.otel.take() {
            o.finish(ringperf_wire::clock::wall_now_ns());
        }
        let ring_stalls = self.consumers.iter().map(Consumer::stalls).sum();
        Collected {
            profiling: tally.profiling,
            by_phase: tally.by_phase,
            warmup: tally.warmup,
            warmup_seen: tally.warmup_seen,
            ring_stalls,
            cpu_ns: ringperf_wire::clock::thread_cpu_ns(),
            jsonl_error,
            timeslices: self.timeslices.take(),
            outputs: self.outputs.take(),
        }
    }

    /// The number of turns of conversation `c` (1 when unknown).
    fn turns_of(&self, c: u32) -> u32 {
        let c = c as usize;
        let first = self.turn_offsets.get(c).copied();
        let next = self
            .turn_offsets
            .get(c + 1)
            .copied()
            .unwrap_or(self.turns.len());
        first.map_or(1, |f| next.saturating_sub(f).max(1) as u32)
    }

    /// Parses the response and counts tokens: the facts every metric is computed from.
    fn facts(&self, raw: &RawRecord, parsed: &mut ParsedResponse) -> RecordFacts {
        parse_record(self.kind, raw, parsed);
        let entry = self
            .turn_offsets
            .get(raw.credit.conversation as usize)
            .and_then(|&o| self.turns.get(o + raw.credit.turn as usize));
        let error = raw
            .error
            .clone()
            .or_else(|| parsed.error.clone().map(Box::new));
        let usage = parsed.usage.clone();
        // A body built at run time (a later chat turn) is read once for its ISL and images.
        let built = raw
            .request_body
            .as_ref()
            .map(|body| payload_inputs(self.kind, body, !self.use_server_token_count));
        let images = match &built {
            Some(b) => b.images,
            None => entry.map_or(0, |e| e.images),
        };
        let (input_tokens, output_tokens, reasoning_tokens) = if self.use_server_token_count {
            let u = usage.clone().unwrap_or_default();
            let reasoning = u.reasoning_tokens;
            let output = u
                .completion_tokens
                .map(|c| c.saturating_sub(reasoning.unwrap_or(0)));
            (u.prompt_tokens, output, reasoning)
        } else {
            let input = match raw.request_body.as_ref().zip(built.as_ref()) {
                Some((body, b)) => {
                    self.tokenizer
                        .count_read_input(self.kind, body, b.text.as_deref())
                }
                // A `--cache-bust` marker spliced in as it was sent counts too.
                None => entry
                    .and_then(|e| e.isl_tokens)
                    .map(|n| {
                        let marker = raw
                            .marker
                            .as_deref()
                            .map(Marker::text_of)
                            .unwrap_or_default();
                        n + self.tokenizer.count(marker) as u64
                    })
                    .or_else(|| {
                        // A streamed replay's ISL was counted as its request was built.
                        let stream = self.stream.as_ref()?;
                        let first = self.turn_offsets.get(raw.credit.conversation as usize)?;
                        stream.isl(first + raw.credit.turn as usize)
                    }),
            };
            if error.is_some() {
                (input, None, None)
            } else {
                let output = self.tokenizer.count(&parsed.output_text) as u64;
                let reasoning = (!parsed.reasoning_text.is_empty())
                    .then(|| self.tokenizer.count(&parsed.reasoning_text) as u64);
                (input, Some(output), reasoning)
            }
        };
        let clock = &self.clock;
        let spec_decode = error.is_none().then(|| spec_decode(parsed)).flatten();
        RecordFacts {
            phase: raw.credit.phase,
            session_num: raw.credit.index,
            x_request_id: raw.request_id,
            x_correlation_id: raw.correlation_id,
            conversation_id: entry.map(|e| e.conversation_id.clone()).unwrap_or_default(),
            turn_index: raw.credit.turn,
            worker_id: raw.worker_id,
            intended_ns: raw.credit.intended_ns,
            start_ns: raw.start_ns,
            head_ns: raw.head_ns,
            end_ns: raw.end_ns,
            credit_issued_wall_ns: clock.wall_ns(raw.credit.intended_ns),
            request_start_wall_ns: clock.wall_ns(raw.start_ns),
            request_ack_wall_ns: raw.head_ns.map(|h| clock.wall_ns(h)),
            request_end_wall_ns: clock.wall_ns(raw.end_ns),
            content_stamps_ns: parsed.content_stamps_ns.clone(),
            first_output_stamp_ns: parsed.first_output_stamp_ns,
            input_tokens,
            output_tokens,
            reasoning_tokens,
            usage,
            first_content_chunk_tokens: parsed
                .first_content_usage
                .filter(|_| self.per_chunk_usage)
                .flatten(),
            requested_osl: entry.and_then(|e| e.max_tokens),
            scheduled_send_ms: entry.and_then(|e| e.timestamp_ms),
            error,
            was_cancelled: raw.was_cancelled,
            conn_reused: raw.conn_reused,
            bytes_sent: raw.bytes_sent,
            bytes_received: raw.bytes_received,
            trace: raw
                .trace
                .map(|t| as_aiperf_reads(t, raw.is_sse, raw.body.len(), raw.end_ns)),
            receive: ringperf_wire::record::ReceiveFacts::of(raw),
            audio_seconds: entry.and_then(|e| e.audio_seconds),
            media: ringperf_wire::record::MediaFacts {
                images,
                video_inference_time_s: parsed.video.inference_time_s,
                video_peak_memory_mb: parsed.video.peak_memory_mb,
            },
            spec_decode,
            prefix_blocks: entry.and_then(|e| e.prefix_blocks),
            lineage: raw.lineage.clone(),
            source: entry.and_then(|e| e.source.clone()),
        }
    }
}

/// The request's speculative-decoding acceptance as AIPerf 0.13 takes it: exactly one response
/// object carried stats (several, as with `n > 1` streaming, cannot be told apart), in vLLM's
/// shape, adding up. A payload that does not add up is ignored with one warning for the run.
fn spec_decode(parsed: &ParsedResponse) -> Option<ringperf_wire::record::spec_decode::SpecDecode> {
    use ringperf_wire::record::spec_decode::SpecDecode;
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let payload = parsed
        .spec_decode
        .as_ref()
        .filter(|_| parsed.spec_decode_responses == 1)?;
    if !SpecDecode::is_vllm(payload) {
        return None;
    }
    SpecDecode::from_vllm(payload)
        .map_err(|e| {
            if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                eprintln!(
                    "ringperf: warning: ignoring a malformed vLLM spec-decode payload ({e}): \
                     that request has no speculative-decoding metrics (later ones are \
                     ignored without a word)"
                );
            }
        })
        .ok()
}

/// Starts the aggregator's thread on `collector`, pinned to `core` when there is one.
///
/// # Errors
/// The thread could not be started.
pub fn spawn(collector: Collector, core: Option<usize>) -> std::io::Result<JoinHandle<Collected>> {
    std::thread::Builder::new()
        .name("ringperf-aggregator".into())
        .spawn(move || {
            if let Some(core) = core
                && !ringperf_io::runtime::pin_to(core)
            {
                eprintln!(
                    "ringperf: could not pin the aggregator to core {core}; it runs unpinned"
                );
            }
            collector.run()
        })
}

#[cfg(test)]
mod spec_decode_tests {
    use super::*;

    fn parsed(payload: serde_json::Value, responses: u32) -> ParsedResponse {
        let mut p = ParsedResponse::default();
        p.spec_decode = Some(payload);
        p.spec_decode_responses = responses;
        p
    }

    #[test]
    fn one_valid_vllm_payload_is_the_record_and_anything_else_none() {
        let good = serde_json::json!({
            "mean_acceptance_length": 2.0, "draft_acceptance_rate": 0.5,
            "acceptance_histogram": [0, 2], "num_accepted_draft_tokens": 2,
            "num_draft_tokens": 4, "num_spec_steps": 2, "num_spec_tokens": 1
        });
        let s = spec_decode(&parsed(good.clone(), 1)).expect("read");
        assert_eq!((s.steps, s.accepted, s.drafted), (2, 2, 4));
        // Two responses with stats (`n > 1` streaming): none, as AIPerf.
        assert_eq!(spec_decode(&parsed(good.clone(), 2)), None);
        // Another engine's shape, or a payload that does not add up: none.
        assert_eq!(spec_decode(&parsed(serde_json::json!({"x": 1}), 1)), None);
        let mut bad = good;
        bad["num_spec_steps"] = serde_json::json!(3);
        assert_eq!(spec_decode(&parsed(bad, 1)), None);
        assert_eq!(spec_decode(&ParsedResponse::default()), None);
    }
}

#[cfg(test)]
mod live_tests {
    use super::*;
    use ringperf_metrics::lab::timing::{Limits, PhaseBoard, PhaseEnd};
    use std::sync::Mutex;
    use std::sync::atomic::AtomicU64;

    #[derive(Default)]
    struct Seen(Mutex<Vec<PhaseProgress>>);

    impl LiveView for Seen {
        fn realtime(&self, _: u8, _: &ringperf_metrics::aggregate::Summary) {}
        fn progress(&self, phases: &[PhaseProgress], _: &[WorkerCount]) {
            self.0.lock().unwrap().extend_from_slice(phases);
        }
    }

    fn feed(view: Arc<Seen>, board: Arc<PhaseBoard>) -> ApiFeed {
        ApiFeed::new(LiveLink { view, board })
    }

    #[test]
    fn a_phase_is_complete_once_every_request_sent_has_its_record() {
        let board = Arc::new(PhaseBoard::default());
        let taken = (Arc::new(AtomicU64::new(3)), Arc::new(AtomicU64::new(3)));
        board.start(Phase::Profiling, taken, Limits::default());
        let view = Arc::new(Seen::default());
        let mut api = feed(view.clone(), board.clone());
        api.tally.record(Phase::Profiling, 0, 1, false, false);
        api.tally.record(Phase::Profiling, 0, 1, false, false);
        // The workers reported done before the aggregator drained the third record.
        board.end(
            Phase::Profiling,
            PhaseEnd {
                sent: 3,
                ..PhaseEnd::default()
            },
        );
        api.publish(false);
        let last = |v: &Seen| *v.0.lock().unwrap().last().unwrap();
        let p = last(&view);
        assert!(!p.ended, "complete with a record still in the ring");
        assert_eq!(p.stats.requests_completed, 2);
        api.tally.record(Phase::Profiling, 0, 1, false, false);
        api.publish(false);
        let p = last(&view);
        assert!(p.ended);
        assert_eq!((p.stats.requests_sent, p.stats.requests_completed), (3, 3));
        // The last report ends the phase whatever came in.
        let board = Arc::new(PhaseBoard::default());
        let taken = (Arc::new(AtomicU64::new(2)), Arc::new(AtomicU64::new(2)));
        board.start(Phase::Profiling, taken, Limits::default());
        board.end(
            Phase::Profiling,
            PhaseEnd {
                sent: 2,
                ..PhaseEnd::default()
            },
        );
        let view = Arc::new(Seen::default());
        let api = feed(view.clone(), board);
        api.publish(true);
        assert!(last(&view).ended);
    }
}
