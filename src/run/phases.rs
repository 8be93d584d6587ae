//! Stage 3 of a run, its phases: the first phase's warm pool, the dashboard, the shared
//! `--start-at` instant, warmup, the profiling warm pool and profiling. Each phase is planned per
//! worker ([`Planner`]: who issues the requests, how many, until when) and driven until every
//! worker reports done.

use ringperf_engine::worker::adaptive::SessionSlots;
use ringperf_engine::worker::tree::BranchCounts;
use std::sync::Arc;
use std::time::Duration;

use super::start::Started;
use super::{Progress, dispatch, log, note, shard, ui, warm};
use crate::config::timing::Mode as TimingMode;
use crate::config::{Arrival, Config, Load, PhaseConfig};
use ringperf_engine::worker::{
    CreditSource, OpenKind, PhaseCounters, PhasePlan, Shared, TurnTiming, Workers,
};
use ringperf_io::control::RunControl;
use ringperf_metrics::adaptive::settings::ControlVariable;
use ringperf_wire::record::Phase;
use ringperf_workload::schedule::{FixedSchedule, Shard};

/// Longest wait of the thread that drives a phase showing progress lines (a stop is the
/// workers' to see; this thread only waits for them and feeds credits when they are due).
const IDLE_TICK: Duration = Duration::from_millis(500);
/// Its wait with no display at all: until a worker is done or the next credit is to be queued
/// (a long timeout, not a poll).
const NO_TICK: Duration = Duration::from_secs(3600);

/// When the phases ran, on the wall clock (epoch ns).
pub(super) struct PhaseTimes {
    /// `--start-at`: the shared instant, as this shard's wait for it ended.
    pub start_at: Option<shard::Origin>,
    /// The first warmup's start and end, when it ran.
    pub warmup: Option<(u64, u64)>,
    /// Profiling's start (the first profiling phase's schedule origin) and the end of the last
    /// profiling phase.
    pub start_wall_ns: u64,
    pub end_wall_ns: u64,
    /// Every phase's start and end, by its number in the run, as far as the run went.
    pub phases: Vec<(u64, u64)>,
    /// `--server-profiler`: its start failed, so profiling did not run.
    pub profiler_failed: Option<ringperf_metrics::lab::lifecycle::LifecycleError>,
    /// How the profiling phases' session trees went, when the dataset has any.
    pub branches: Option<BranchCounts>,
}

/// Runs warmup (when configured) and profiling; a stop during warmup skips profiling.
pub(super) fn run_phases(
    cfg: &Config,
    shared: &Arc<Shared>,
    started: &mut Started,
    control: &Arc<RunControl>,
    agentic: Option<&super::agentic::AgenticRun>,
) -> PhaseTimes {
    let Started {
        workers,
        progress,
        collectors,
        board,
        api,
        adaptive_tap,
        ..
    } = started;
    let adaptive_tap = adaptive_tap.as_ref();
    let api = api.as_ref();
    let board: &ringperf_metrics::lab::timing::PhaseBoard = board;
    // A streamed trace: the first window of requests is built before anything starts, so the
    // schedule's first instant does not wait for its prompts (docs/datasets.md, "Large traces").
    if let Some(stream) = &shared.stream {
        let t = std::time::Instant::now();
        if stream.wait_primed(|| control.stopped()) {
            let (held, _) = stream.held();
            log(
                cfg,
                &format!(
                    "{held} requests of the trace built ahead in {:.2} s, before its schedule starts",
                    t.elapsed().as_secs_f64()
                ),
            );
        }
    }
    // Every phase in the order it runs; its position is its `phase_index`.
    let list = cfg.phase_list();
    let first_profiling = (list.iter().position(|p| p.kind == Phase::Profiling)).unwrap_or(0);
    let last_profiling = (list.iter().rposition(|p| p.kind == Phase::Profiling)).unwrap_or(0);
    // An open loop's pool is open before the phase's start instant is taken (and before the
    // shared `--start-at` instant is waited for).
    open_warm_pool(cfg, shared, workers, list[0].kind, list[0].config);
    let dashboard = start_dashboard(cfg, progress, control, collectors.gpu.is_some());
    // An open loop's credit queues are made before its phase's start instant is taken
    // (milliseconds of allocation that would make its first credits late); a closed loop has
    // none.
    let queues = |p: &PhaseConfig| phase_queues(p, workers.len());
    let mut first_queues = Some(queues(list[0].config));
    // `--start-at`: every shard waits for the shared instant; the first phase starts there.
    let start_at = shard::wait_for_start(cfg, shared);
    let mut origin = start_at;
    // Each phase's start and end, in order, as far as the run went.
    let mut ran: Vec<(u64, u64)> = Vec::with_capacity(list.len());
    // Sessions started so far: each phase picks its conversations after the earlier ones'.
    let mut sessions = 0;
    let mut branches = BranchCounts::default();
    let mut profiler_failed = None;
    let mut profiling_open = false;
    for (i, ph) in list.iter().enumerate() {
        // A stop ends the run before its next phase starts.
        if control.stopped() {
            break;
        }
        let index = i as u8;
        let phase_queues = match first_queues.take() {
            Some(q) => q,
            None => {
                // Sized from what the earlier phases' answers took.
                open_warm_pool(cfg, shared, workers, ph.kind, ph.config);
                queues(ph.config)
            }
        };
        // `--server-profiler`: started before the first profiling phase's origin is taken, so
        // that its schedule does not start late by the call; its failure ends the run there.
        if i == first_profiling {
            profiler_failed = super::lifecycle::start_profiler(cfg).err();
            if profiler_failed.is_some() {
                break;
            }
        }
        // The phase's start, on the clock every record's stamps are converted with: the
        // manifest's `start_ns` is the schedule's origin, to the nanosecond.
        let at = origin
            .take()
            .unwrap_or_else(|| shard::Origin::now(shared.clock));
        // After the phase's start instant: the boundary scrape it triggers, and every later
        // one, is sent during the phase.
        match ph.kind {
            Phase::Warmup => collectors.phase_start(Phase::Warmup, index),
            Phase::Profiling if profiling_open => collectors.next_profiling_phase(index),
            Phase::Profiling => {
                collectors.phase_start(Phase::Profiling, index);
                profiling_open = true;
            }
        }
        let b;
        (sessions, b) = run_phase(
            cfg,
            shared,
            workers,
            (ph.kind, index, ph.name, ph.config),
            progress,
            (phase_queues, at.mono_ns),
            (board, api, agentic, adaptive_tap),
            sessions,
        );
        // The phase ends with its last request, before its end-of-phase scrape.
        ran.push((at.wall_ns, ringperf_wire::clock::wall_now_ns()));
        if ph.kind == Phase::Profiling {
            branches.add(&b);
        } else if cfg.seamless_at(i).0 {
            collectors.warmup_handed_over();
        } else {
            collectors.warmup_end();
        }
        if i == last_profiling {
            collectors.profiling_end();
            profiling_open = false;
        }
    }
    if profiling_open {
        collectors.profiling_end();
    }
    let profiling = ran.len() > first_profiling;
    let windows = |kind: Phase| -> Vec<(u64, u64)> {
        (list.iter().zip(&ran))
            .filter(|(p, _)| p.kind == kind)
            .map(|(_, w)| *w)
            .collect()
    };
    let mut profiling_phases = windows(Phase::Profiling);
    let warmup = windows(Phase::Warmup).first().copied();
    // Profiling's window: the first profiling phase's start to the last one's end (a warmup
    // after them is not in it, as in AIPerf); now when none ran.
    if profiling_phases.is_empty() {
        let now = ringperf_wire::clock::wall_now_ns();
        profiling_phases.push((now, now));
    }
    let start_wall_ns = profiling_phases[0].0;
    let end_wall_ns = profiling_phases[profiling_phases.len() - 1].1;
    if profiling {
        super::lifecycle::stop_profiler(cfg);
    }
    if let Some(s) = &shared.stream {
        let w = s.window();
        log(
            cfg,
            &format!(
                "streamed trace: {} prompts built when the first request went, {} by the end \
                 ({} turns); at most {} requests waited built (window {} turns, {} MiB)",
                s.built_at_first_take()
                    .map_or("none (no request went)".to_string(), |n| n.to_string()),
                s.built(),
                s.turns(),
                s.held().1,
                w.turns,
                w.bytes >> 20
            ),
        );
    }
    // The terminal is the console's again before anything else is printed.
    if let Some(d) = dashboard {
        d.stop();
    }
    PhaseTimes {
        start_at,
        warmup,
        start_wall_ns,
        end_wall_ns,
        phases: ran,
        profiler_failed,
        branches: shared.dataset.roots.is_some().then_some(branches),
    }
}

/// `--ui dashboard`: the full-screen display; one note and the run goes on when the terminal
/// cannot take it.
fn start_dashboard(
    cfg: &Config,
    progress: &Progress,
    control: &Arc<RunControl>,
    gpu: bool,
) -> Option<ringperf_engine::ui::terminal::Dashboard> {
    let board = progress.board.as_ref()?;
    let sweep = cfg
        .multi_run
        .trial
        .as_ref()
        .and_then(|t| t.variation.as_ref().map(|v| v.status(t.index)));
    ringperf_engine::ui::terminal::Dashboard::start(
        board.clone(),
        control.clone(),
        cfg.stop_grace,
        gpu,
        sweep,
    )
    .map_err(|e| {
        note(&format!(
            "cannot draw the dashboard ({e}); the run goes on without it"
        ))
    })
    .ok()
}

/// Has the workers open the warm pool of `phase` ([`ringperf_engine::worker::warm`]) when it is an
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

/// What a phase's driver reports to and reads from: the `timing` domain's board, the live
/// API, agentic replay's lanes, the adaptive phases' records.
type Feeds<'a> = (
    &'a ringperf_metrics::lab::timing::PhaseBoard,
    Option<&'a Arc<crate::api::Live>>,
    Option<&'a super::agentic::AgenticRun>,
    Option<&'a Arc<ringperf_metrics::adaptive::tap::Tap>>,
);

/// Drives one phase on every worker until all of them report done; marks its start and end on
/// `board` (the `timing` stream domain). Its sessions pick conversations after the
/// `first_session` the earlier phases started; returns the sessions started through it and how
/// its session trees' branches went.
fn run_phase(
    cfg: &Config,
    shared: &Arc<Shared>,
    workers: &Workers,
    (phase, index, name, p): (Phase, u8, &str, &PhaseConfig),
    progress: &Arc<Progress>,
    (queues, start): (Option<dispatch::Queues>, u64),
    (board, api, agentic, adaptive_tap): Feeds<'_>,
    first_session: u64,
) -> (u64, BranchCounts) {
    let n = workers.len();
    let profiling_index = cfg.phase_layout().tag(phase, Some(index)).profiling_index;
    if phase == Phase::Profiling {
        // The realtime stats block's elapsed time counts from here.
        progress
            .profiling_start_ns
            .store(start, std::sync::atomic::Ordering::Relaxed);
    }
    let mut planner = Planner::new(cfg, shared, p, (phase, index), n, start);
    planner.first_session = first_session;
    planner.agentic = agentic;
    // An adaptive phase: its controller starts (its clock, its start event) before the phase.
    let mut adaptive = None;
    if let (Some(a), Some(tap), Phase::Profiling) = (&p.timing.adaptive, adaptive_tap, phase) {
        let gate = super::adaptive::gate(a);
        planner.adaptive = Some(gate.clone());
        let id = ringperf_metrics::adaptive::artifacts::PhaseId {
            name: name.to_owned(),
            index: u64::from(index),
            profiling_index: u64::from(profiling_index.unwrap_or(0)),
        };
        adaptive = super::adaptive::Driver::start(
            a,
            id,
            &cfg.artifact_dir,
            (gate, planner.prefill.clone(), tap.clone(), shared.clock),
            (index, planner.issue_deadline_ns),
        )
        .map_err(|e| note(&format!("adaptive scale: {e}")))
        .ok();
    }
    let (mut plans, mut feeder) = planner.plans(queues);
    if let Some(a) = adaptive.as_mut() {
        a.started();
    }
    // Agentic replay's system-idle cap: looked at every 5 ms by this thread.
    let idle_cap = plans.first().and_then(|p| p.idle_cap.clone());
    let mut idle_watch = ringperf_engine::worker::IdleWatch::default();
    let started = plans.first().map(|p| p.counters.started.clone());
    if let Some(c) = plans.first().map(|p| &p.counters) {
        let shard = cfg.shard.shard;
        let limits = ringperf_metrics::lab::timing::Limits {
            requests: shard.share(p.request_count.unwrap_or(u64::MAX)),
            sessions: shard.share(p.sessions.unwrap_or(u64::MAX)),
            issue_end_wall_ns: p.duration.map_or(u64::MAX, |d| {
                shared
                    .clock
                    .wall_ns(start)
                    .saturating_add(d.as_nanos() as u64)
            }),
        };
        board.start(phase, (c.requests.clone(), c.sessions.clone()), limits);
    }
    if let Some(a) = api {
        a.phase_start(&crate::api::PhaseStart {
            phase,
            index,
            profiling_index: profiling_index.map(|i| i as u8),
            name: name.to_owned(),
            start_wall_ns: shared.clock.wall_ns(start),
            expected_requests: p.request_count,
            expected_duration_sec: p.duration.map(|d| d.as_secs_f64()),
            expected_sessions: p.sessions,
            grace_sec: p.grace.map(|g| g.as_secs_f64()),
        });
        if profiling_index == Some(0) {
            a.set_state(crate::api::SystemState::Profiling);
        }
    }
    let mut sent = 0;
    let mut branches = BranchCounts::default();
    if let Some(warms) = warm::plan(cfg, p, shared, n) {
        for (plan, w) in plans.iter_mut().zip(warms) {
            plan.warm = Some(w);
        }
    }
    workers.start_phase(plans);
    let mut view = ui::View::new(cfg.ui, (phase, name), p, progress.clone());
    let mut done = 0;
    // Between looks: the progress display's refresh, else long; a feeder that has credits left
    // wakes the thread when the next of them is due to be queued.
    let tick = if view.shows_progress() {
        Duration::from_millis(50)
    } else if view.ticks() {
        IDLE_TICK
    } else {
        NO_TICK
    };
    while done < n {
        let mut wait = tick;
        if let Some(cap) = &idle_cap {
            if cap
                .enforce(shared.clock.now_ns(), &mut idle_watch)
                .is_some()
            {
                workers.poke();
            }
            wait = wait.min(Duration::from_millis(5));
        }
        if let Some(a) = adaptive.as_mut() {
            a.tick(feeder.as_mut());
            wait = wait.min(a.until_due().max(Duration::from_millis(1)));
        }
        if let Some(d) = feeder.as_mut() {
            let now = shared.clock.now_ns();
            let adaptive_done = adaptive.as_ref().is_some_and(super::adaptive::Driver::done);
            d.feed(now, shared.control.stopped() || adaptive_done);
            if let Some(at) = d.next_feed_ns(now) {
                // At least 200 µs: a full queue is drained by the workers meanwhile.
                wait = wait.min(Duration::from_nanos(at.saturating_sub(now).max(200_000)));
            }
        }
        if let Some(d) = workers.wait_done(wait) {
            done += 1;
            sent += d.sent;
            branches.add(&d.branches);
            // The others may sleep until a credit that will never be sent (this one took the
            // phase's last request): they look again.
            if done < n {
                workers.poke();
            }
        }
        view.tick();
    }
    view.finish(sent);
    if let Some(a) = adaptive {
        a.end(shared.control.stopped());
    }
    if let Some(cap) = &idle_cap {
        log(
            cfg,
            &format!(
                "system-idle cap: limit {} s, {} jumps, {:.3} s skipped",
                cap.cap_ns as f64 / 1e9,
                idle_watch.jumps,
                idle_watch.skipped_ns as f64 / 1e9
            ),
        );
    }
    let now = shared.clock.now_ns();
    let issue_end = p.duration.map(|d| start + d.as_nanos() as u64);
    let hard_end = issue_end.and_then(|d| p.grace.map(|g| d + g.as_nanos() as u64));
    board.end(
        phase,
        ringperf_metrics::lab::timing::PhaseEnd {
            sent,
            timeout: issue_end.is_some_and(|t| now >= t),
            grace: hard_end.is_some_and(|t| now >= t),
            cancelled: shared.control.stopped(),
        },
    );
    (
        first_session + started.map_or(0, |s| s.load(std::sync::atomic::Ordering::Relaxed)),
        branches,
    )
}

/// Every worker's plan of one phase, and the dispatcher that feeds an open loop's credits.
struct Planner<'a> {
    cfg: &'a Config,
    shared: &'a Shared,
    p: &'a PhaseConfig,
    phase: Phase,
    /// The phase's position in the run.
    phase_index: u8,
    /// Sessions the earlier phases started ([`PhasePlan::first_session`]).
    first_session: u64,
    /// Workers.
    n: usize,
    shard: Shard,
    /// The phase's start on the run's clock, and its deadlines (a duration-bounded phase).
    start: u64,
    issue_deadline_ns: Option<u64>,
    hard_deadline_ns: Option<u64>,
    /// Shared by every worker of the phase.
    counters: PhaseCounters,
    cancel: Option<ringperf_workload::schedule::CancelPlan>,
    prefill: Option<Arc<ringperf_engine::worker::prefill::PrefillGate>>,
    /// Agentic replay's lanes.
    agentic: Option<&'a super::agentic::AgenticRun>,
    /// An adaptive phase's controls.
    adaptive: Option<Arc<ringperf_engine::worker::adaptive::AdaptiveGate>>,
    /// [`PhasePlan::seamless`]: the next phase is seamless; this one is.
    seamless: (bool, bool),
}

/// The plans of one phase and its dispatcher (an open loop's).
type Plans = (Vec<PhasePlan>, Option<dispatch::Dispatcher>);

impl<'a> Planner<'a> {
    fn new(
        cfg: &'a Config,
        shared: &'a Shared,
        p: &'a PhaseConfig,
        (phase, phase_index): (Phase, u8),
        n: usize,
        start: u64,
    ) -> Self {
        let shard = cfg.shard.shard;
        let issue_deadline_ns = p.duration.map(|d| start + d.as_nanos() as u64);
        let hard_deadline_ns =
            issue_deadline_ns.and_then(|d| p.grace.map(|g| d + g.as_nanos() as u64));
        Self {
            cfg,
            shared,
            p,
            phase,
            phase_index,
            first_session: 0,
            n,
            shard,
            start,
            issue_deadline_ns,
            hard_deadline_ns,
            counters: PhaseCounters::default(),
            agentic: None,
            adaptive: None,
            seamless: cfg.seamless_at(usize::from(phase_index)),
            cancel: p.timing.cancellation.map(|c| c.plan(cfg.seed)),
            prefill: adaptive_prefill(p)
                .or(p.timing.prefill_concurrency)
                .map(|n| {
                    let gate =
                        ringperf_engine::worker::prefill::PrefillGate::new(shard.share(n).max(1));
                    Arc::new(match p.timing.prefill_ramp {
                        Some(d) => gate.with_ramp(start, d),
                        None => gate,
                    })
                }),
        }
    }

    /// The phase's plans, by its timing mode and load; an open loop's credits go through
    /// `queues` ([`phase_queues`], made before the phase's start was taken).
    fn plans(&self, queues: Option<dispatch::Queues>) -> Plans {
        let queues = || queues.unwrap_or_else(|| dispatch::Queues::new(self.n));
        match (self.p.timing.mode, self.p.load) {
            (TimingMode::FixedSchedule(fixed), load) => {
                self.fixed_schedule(fixed, cap_of(load), queues())
            }
            // Moving anything but its users, AIPerf 0.13 runs a user-centric phase as its
            // request-rate strategy runs a phase: Poisson arrivals at its rate, its users unused.
            (TimingMode::UserCentric { rate, .. }, load)
                if (self.p.timing.adaptive.as_ref())
                    .is_some_and(|a| a.variable != ControlVariable::Users) =>
            {
                let (rate, cap) = self.adaptive_open(rate, cap_of(load));
                self.open_loop(rate, Arrival::Poisson, cap, queues())
            }
            (TimingMode::UserCentric { rate, users }, load) => {
                self.user_centric(rate, users, cap_of(load), queues())
            }
            (TimingMode::Agentic(_), _) => (self.agentic(), None),
            // An adaptive phase's closed loop has a slot for its largest concurrency (the gate
            // lets the controller's value run); its open loop starts at its smallest rate.
            (TimingMode::Load, Load::Concurrency(c)) => {
                let c = match &self.p.timing.adaptive {
                    Some(a) if a.variable == ControlVariable::Concurrency => c.max(a.max as u64),
                    _ => c,
                };
                (self.closed_loop(c), None)
            }
            (TimingMode::Load, Load::Rate { rate, arrival, cap }) => {
                let (rate, cap) = self.adaptive_open(rate, cap);
                self.open_loop(rate, arrival, cap, queues())
            }
        }
    }

    /// An open loop's rate and cap under its adaptive scale: moving its rate, it starts at the
    /// smallest; moving its concurrency, the gate is the limit, up to the controller's maximum.
    fn adaptive_open(&self, rate: f64, cap: Option<u64>) -> (f64, Option<u64>) {
        match &self.p.timing.adaptive {
            Some(a) if a.variable == ControlVariable::RequestRate => (a.clamp(a.min), cap),
            Some(a) if a.variable == ControlVariable::Concurrency => (rate, None),
            _ => (rate, cap),
        }
    }

    /// Worker `i`'s part of `total`: an even split, the remainder to the first workers.
    fn split(&self, total: u64, i: usize) -> u64 {
        let n = self.n as u64;
        total / n + u64::from((i as u64) < total % n)
    }

    /// A worker's plan taking its credits from `source`.
    fn plan(&self, source: CreditSource) -> PhasePlan {
        PhasePlan {
            phase_index: self.phase_index,
            first_session: self.first_session,
            phase: self.phase,
            source,
            counters: self.counters.clone(),
            shard: self.shard,
            request_limit: self.p.request_count.unwrap_or(u64::MAX),
            session_limit: self.p.sessions.unwrap_or(u64::MAX),
            sampling: self.shared.dataset.default_sampling,
            start_ns: self.start,
            timing: TurnTiming::default(),
            cancel: self.cancel,
            prefill: self.prefill.clone(),
            issue_deadline_ns: self.issue_deadline_ns,
            hard_deadline_ns: self.hard_deadline_ns,
            warm: None,
            idle_cap: None,
            adaptive: self.adaptive.clone(),
            seamless: self.seamless,
        }
    }

    /// Worker `i`'s credits from the dispatcher `d`: session starts with at most its part of
    /// `cap` alive; rate ticks with the phase's session slots (`cap` over every worker).
    fn open(
        &self,
        d: &dispatch::Dispatcher,
        i: usize,
        cap: Option<u64>,
        kind: OpenKind,
        slots: Option<&Arc<SessionSlots>>,
    ) -> CreditSource {
        let (cap, slots) = match kind {
            OpenKind::SessionStart => (cap, None),
            OpenKind::Tick => (None, slots.cloned()),
        };
        CreditSource::Open {
            queue: d.queues[i].clone(),
            fed: d.fed.clone(),
            next_ns: d.next_ns.clone(),
            cap: cap.map(|c| self.split(self.shard.share(c).max(1), i).max(1) as usize),
            slots,
            kind,
        }
    }

    /// `--fixed-schedule`: first turns at their trace timestamps.
    fn fixed_schedule(
        &self,
        fixed: FixedSchedule,
        cap: Option<u64>,
        queues: dispatch::Queues,
    ) -> Plans {
        // Built and checked before the run (`fixed_schedule_of`), so it cannot fail here.
        let (replay, entries) = fixed.build_for(&self.shared.dataset).unwrap_or_else(|_| {
            (
                ringperf_workload::schedule::Replay {
                    zero_ms: 0.0,
                    speedup: 1.0,
                },
                Vec::new(),
            )
        });
        let d = dispatch::Dispatcher::fixed_schedule(
            queues,
            entries,
            self.phase,
            self.start,
            u64::MAX,
            self.issue_deadline_ns,
        )
        .with_shard(self.shard)
        .with_stream(self.shared.stream.clone())
        .in_phase(self.phase_index);
        let plans = (0..self.n)
            .map(|i| PhasePlan {
                timing: TurnTiming {
                    replay: Some(replay),
                    user_centric: None,
                },
                ..self.plan(self.open(&d, i, cap, OpenKind::SessionStart, None))
            })
            .collect();
        (plans, Some(d))
    }

    /// `--user-centric-rate`: `users` users, each starting its sessions at its own pace.
    fn user_centric(
        &self,
        rate: f64,
        users: u64,
        cap: Option<u64>,
        queues: dispatch::Queues,
    ) -> Plans {
        // Moving its users: the phase starts with the controller's smallest (AIPerf sets the
        // target before it plans the users present at the start).
        let moved = match (&self.p.timing.adaptive, &self.adaptive) {
            (Some(a), Some(gate)) if a.variable == ControlVariable::Users => Some(gate.clone()),
            _ => None,
        };
        let users = match (&moved, &self.p.timing.adaptive) {
            (Some(gate), _) => gate.limit() as u64,
            _ => users,
        };
        let uc = ringperf_workload::schedule::UserCentric::new(rate, users);
        let turns: Vec<u32> = self
            .shared
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
            queues,
            &uc,
            mean_turns,
            turns,
            self.shared.dataset.default_sampling,
            self.cfg.seed,
            self.phase,
            self.start,
            self.issue_deadline_ns,
        )
        .with_shard(self.shard)
        .in_phase(self.phase_index)
        .after_sessions(self.first_session);
        let d = match moved {
            Some(gate) => d.with_moved_users(gate, rate),
            None => d,
        };
        let plans = (0..self.n)
            .map(|i| PhasePlan {
                timing: TurnTiming {
                    replay: None,
                    user_centric: Some(uc),
                },
                ..self.plan(self.open(&d, i, cap, OpenKind::SessionStart, None))
            })
            .collect();
        (plans, Some(d))
    }

    /// `--concurrency c`: a closed loop of `c` slots (this shard's share of them).
    fn closed_loop(&self, c: u64) -> Vec<PhasePlan> {
        let (n, shard) = (self.n, self.shard);
        let ramp = self.p.timing.concurrency_ramp;
        // The shard's slots are the run's slots `k` with `k mod N = I`, numbered locally; they
        // are dealt round-robin: local slot `l` is worker `l % n`'s slot `l / n`.
        let local = shard.share(c);
        (0..n)
            .map(|i| {
                let slots = self.split(local, i) as usize;
                let ramp_offsets_ns = match ramp {
                    Some(d) => (0..slots)
                        .map(|j| {
                            let slot = shard.global((j * n + i) as u64);
                            ringperf_workload::schedule::concurrency_slot_start_ns(slot, c, d)
                        })
                        .collect(),
                    None => Vec::new(),
                };
                self.plan(CreditSource::Closed {
                    slots,
                    ramp_offsets_ns,
                })
            })
            .collect()
    }

    /// Agentic replay: each worker's lanes (none when the lanes were not built).
    fn agentic(&self) -> Vec<PhasePlan> {
        let Some(a) = self.agentic else {
            return (0..self.n)
                .map(|_| {
                    self.plan(CreditSource::Closed {
                        slots: 0,
                        ramp_offsets_ns: Vec::new(),
                    })
                })
                .collect();
        };
        let warm = self.phase == Phase::Warmup;
        let idle_cap = (a.settings.system_idle_cap)
            .filter(|_| !warm)
            .map(|c| Arc::new(ringperf_engine::worker::IdleCap::new(c, self.n)));
        let works = a.split(
            &self.shared.dataset,
            self.shared.cache_bust.as_ref(),
            self.n,
            (warm, self.start),
        );
        // `--agentic-warmup-grace-period`: the warmup's answers are cut that long after its
        // last request.
        let last_ns = (works.iter())
            .flat_map(|w| w.lanes.iter().flat_map(|l| &l.streams))
            .filter_map(|s| s.at_ns)
            .max()
            .unwrap_or(0);
        // (An accelerated cache warmup's answers are cut that long after its end instead.)
        let hard_deadline_ns =
            match (a.settings.warmup_grace).filter(|_| warm && a.settings.cache_warmup.is_none()) {
                Some(g) => Some(self.start + last_ns + g.as_nanos() as u64),
                None => self.hard_deadline_ns,
            };
        works
            .into_iter()
            .map(|w| PhasePlan {
                idle_cap: idle_cap.clone(),
                hard_deadline_ns,
                ..self.plan(CreditSource::Agentic(w))
            })
            .collect()
    }

    /// `--request-rate`: an open loop at `rate` requests a second, at most `cap` in flight.
    fn open_loop(
        &self,
        rate: f64,
        arrival: Arrival,
        cap: Option<u64>,
        queues: dispatch::Queues,
    ) -> Plans {
        // With session slots a tick may go unused (every slot taken), so ticks are not counted
        // against the request count there: the workers stop at the phase's last request, as
        // AIPerf's rate loop runs until its stop condition. Without slots every tick is a
        // request, and the phase has exactly as many: no later tick can take the last request
        // from a worker woken late for an earlier one.
        let gated = (self.adaptive.as_ref()).is_some_and(|g| g.slots().is_some());
        let ticks = match (cap, gated) {
            (None, false) => self.p.request_count.unwrap_or(u64::MAX),
            _ => u64::MAX,
        };
        let mut d = dispatch::Dispatcher::new(
            queues,
            rate,
            arrival,
            self.cfg.seed,
            self.phase,
            self.start,
            ticks,
            self.issue_deadline_ns,
        );
        if let Some(ramp) = self.p.timing.rate_ramp {
            d = d.with_rate_ramp(ramp);
        }
        if let Some(series) = &self.p.timing.rate_series {
            let start = self.p.timing.rate_ramp.unwrap_or_default();
            d = d.with_rate_series(series.clone(), start);
        }
        d = d.with_shard(self.shard).in_phase(self.phase_index);
        // This shard's share of the phase's session slots, over all its workers.
        let slots = cap.map(|c| Arc::new(SessionSlots::new(self.shard.share(c).max(1) as usize)));
        let plans = (0..self.n)
            .map(|i| self.plan(self.open(&d, i, cap, OpenKind::Tick, slots.as_ref())))
            .collect();
        (plans, Some(d))
    }
}

/// The credit queues of phase `p` for `workers` workers: an open loop's (a rate, a trace, a
/// user-centric phase); `None` for a closed loop, which has no dispatcher.
fn phase_queues(p: &PhaseConfig, workers: usize) -> Option<dispatch::Queues> {
    let closed = matches!(
        (p.timing.mode, p.load),
        (
            TimingMode::Load | TimingMode::Agentic(_),
            Load::Concurrency(_)
        )
    );
    (!closed).then(|| dispatch::Queues::new(workers))
}

/// An adaptive phase moving its prefill limit: the limit it starts at (its minimum).
fn adaptive_prefill(p: &PhaseConfig) -> Option<u64> {
    let a = p.timing.adaptive.as_ref()?;
    (a.variable == ControlVariable::PrefillConcurrency).then(|| a.clamp(a.min) as u64)
}

/// The concurrency cap of a trace replay or user-centric phase: its load's `--concurrency`.
fn cap_of(load: Load) -> Option<u64> {
    match load {
        Load::Rate { cap, .. } => cap,
        Load::Concurrency(c) => Some(c),
    }
}
