//! An adaptive phase's driver (AIPerf 0.13's `adaptive_scale`, docs/timing.md): every
//! assessment period it takes the records of the phase the aggregator handed over since the
//! last one, makes the window's statistics, lets the controller decide, and applies its value
//! (the phase's session limit, its prefill limit, or the request rate of its open loop). When
//! the controller ends, the phase stops sending: requests in flight end normally. Its events,
//! summary and manifest entry are written as it goes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ringperf_engine::worker::adaptive::AdaptiveGate;
use ringperf_engine::worker::prefill::PrefillGate;
use ringperf_metrics::adaptive::artifacts::{PhaseId, Writer};
use ringperf_metrics::adaptive::controller::{Controller, State};
use ringperf_metrics::adaptive::settings::{ControlVariable, Settings};
use ringperf_metrics::adaptive::tap::{Outcome, Tap};
use ringperf_metrics::adaptive::window::WindowStats;
use ringperf_wire::clock::Clock;

use super::{dispatch, note};

/// What the driver moves and reads: the phase's session gate and prefill limit, the
/// aggregator's records, the run's clock.
pub(super) type Controls = (Arc<AdaptiveGate>, Option<Arc<PrefillGate>>, Arc<Tap>, Clock);

/// The driver of one adaptive phase, on the thread that drives the phase.
pub(super) struct Driver {
    controller: Controller,
    writer: Option<Writer>,
    gate: Arc<AdaptiveGate>,
    /// The phase's prefill limit (moved when it is the control variable).
    prefill: Option<Arc<PrefillGate>>,
    tap: Arc<Tap>,
    clock: Clock,
    period: Duration,
    /// When the phase's driver was made (the controller's clock starts here).
    origin: Instant,
    window_start: Instant,
    window_start_wall_ns: u64,
    /// The run-clock ns the sustain started: records of requests started before it count in
    /// no sustain window.
    sustain_from_ns: Option<u64>,
    /// When the phase stops sending by itself (its duration): no assessment after.
    issue_deadline_ns: Option<u64>,
    /// The value the engine was last given.
    applied: f64,
}

/// The checks AIPerf 0.13 makes of an adaptive phase when it starts (its SLA metrics, the
/// stats a rate metric has, the error rate's unit), made before the run starts, with AIPerf's
/// messages.
///
/// # Errors
/// The first phase whose filters AIPerf would refuse.
pub(super) fn check(cfg: &crate::config::Config) -> Result<(), super::RunError> {
    // One controller per process would each see a shard's records: not one run's.
    if cfg.has_adaptive() && !cfg.shard.shard.is_whole() {
        return Err(super::RunError::new(
            super::SetupKind::Shard,
            "not supported by ringperf: adaptive_scale in a split run (--shard): each shard \
             would steer by its own records",
        ));
    }
    let phases = std::iter::once(&cfg.profiling).chain(cfg.phases_after.iter().map(|p| &p.config));
    for p in phases {
        if let Some(s) = &p.timing.adaptive {
            s.resolve().map_err(|e| {
                super::RunError::new(super::SetupKind::Workload, format!("adaptive_scale: {e}"))
            })?;
            for f in &s.sla {
                let t = f.threshold;
                if f.metric_tag.ends_with("error_rate") && t > 0.0 && t < 1.0 {
                    note(&format!(
                        "warning: adaptive_scale: error_rate SLA thresholds are in percent \
                         (0-100); {t} means {t}%"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The phase's adaptive controls, made before its plans: the gate its workers share.
pub(super) fn gate(settings: &Settings) -> Arc<AdaptiveGate> {
    let concurrency = settings.variable == ControlVariable::Concurrency;
    Arc::new(AdaptiveGate::new(
        settings.clamp(settings.min) as usize,
        concurrency,
    ))
}

impl Driver {
    /// The driver of the phase `id` under `settings`, writing into `dir`; its start event is
    /// written.
    pub(super) fn start(
        settings: &Settings,
        id: PhaseId,
        dir: &std::path::Path,
        (gate, prefill, tap, clock): Controls,
        (phase_index, issue_deadline_ns): (u8, Option<u64>),
    ) -> Result<Self, String> {
        let controller = Controller::new(settings.clone())?;
        let writer = Writer::open(dir, id, settings.variable.integer())
            .map_err(|e| note(&format!("adaptive scale: cannot write its files ({e})")))
            .ok();
        tap.watch(phase_index, settings.wants_ttft());
        let now = Instant::now();
        let mut d = Self {
            applied: controller.value(),
            controller,
            writer,
            gate,
            prefill,
            tap,
            clock,
            period: Duration::from_secs_f64(settings.assessment_period_s),
            origin: now,
            window_start: now,
            window_start_wall_ns: ringperf_wire::clock::wall_now_ns(),
            sustain_from_ns: None,
            issue_deadline_ns,
        };
        d.controller.start();
        Ok(d)
    }

    /// Writes the start event, once the phase's plans are made (a user-centric phase's users
    /// present at the start are counted then).
    pub(super) fn started(&mut self) {
        self.flush();
    }

    /// The users alive, when the controller moves a user-centric phase's users.
    fn users(&self) -> Option<u64> {
        (self.controller.settings().variable == ControlVariable::Users)
            .then(|| self.gate.active_users() as u64)
    }

    /// The controller ended: the phase sends nothing more.
    pub(super) fn done(&self) -> bool {
        self.controller.done()
    }

    /// How long until the next assessment.
    pub(super) fn until_due(&self) -> Duration {
        if self.done() {
            return Duration::from_secs(3600);
        }
        (self.window_start + self.period).saturating_duration_since(Instant::now())
    }

    /// Assesses the window when it is due, and applies what the controller decided (a new
    /// rate through `feeder`).
    pub(super) fn tick(&mut self, feeder: Option<&mut dispatch::Dispatcher>) {
        if self.done() || Instant::now() < self.window_start + self.period {
            return;
        }
        let now_ns = self.clock.now_ns();
        if self.issue_deadline_ns.is_some_and(|d| now_ns >= d) {
            return;
        }
        let now = Instant::now();
        let wall = ringperf_wire::clock::wall_now_ns();
        let mut w = WindowStats {
            elapsed_s: now.duration_since(self.window_start).as_secs_f64(),
            start_wall_ns: self.window_start_wall_ns,
            end_wall_ns: wall,
            ..WindowStats::default()
        };
        for t in self.tap.take() {
            if self.sustain_from_ns.is_some_and(|s| t.start_ns < s) {
                continue;
            }
            match t.outcome {
                Outcome::Success => w.samples.push(t.sample),
                Outcome::Error => w.errors += 1,
                Outcome::Cancelled => w.cancelled += 1,
            }
        }
        self.window_start = now;
        self.window_start_wall_ns = wall;
        let was = self.controller.state();
        let elapsed = now.duration_since(self.origin).as_secs_f64();
        self.controller.assess(&w, elapsed, wall);
        if was == State::Discover && self.controller.state() == State::Sustain {
            self.sustain_from_ns = Some(now_ns);
        }
        self.apply(feeder, now_ns);
        self.flush();
        if self.done() {
            self.gate.close();
            self.write_summary();
        }
    }

    fn apply(&mut self, feeder: Option<&mut dispatch::Dispatcher>, now_ns: u64) {
        let v = self.controller.value();
        if v == self.applied {
            return;
        }
        self.applied = v;
        match self.controller.settings().variable {
            ControlVariable::RequestRate => {
                if let Some(d) = feeder {
                    d.set_rate(now_ns, v);
                }
            }
            ControlVariable::PrefillConcurrency => {
                if let Some(p) = &self.prefill {
                    p.set_limit(v as usize);
                }
            }
            ControlVariable::Users => {
                if let Some(d) = feeder {
                    d.set_target_users(now_ns, v as usize);
                }
            }
            _ => self.gate.set_limit(v as usize),
        }
    }

    /// The phase is over (every worker done): the controller's end when it had not ended
    /// (`cancelled`: the run was stopped), then its files completed.
    pub(super) fn end(mut self, cancelled: bool) {
        self.tap.stop();
        if self.done() {
            return;
        }
        self.controller.phase_ended(cancelled);
        self.flush();
        self.write_summary();
    }

    fn flush(&mut self) {
        let events = self.controller.take_events();
        if let Some(w) = &self.writer
            && let Err(e) = w.events(
                &self.controller,
                &events,
                ringperf_wire::clock::wall_now_ns(),
                self.users(),
            )
        {
            note(&format!("adaptive scale: cannot write its events ({e})"));
        }
    }

    fn write_summary(&self) {
        if let Some(w) = &self.writer
            && let Err(e) = w.summary(&self.controller, self.users())
        {
            note(&format!("adaptive scale: cannot write its summary ({e})"));
        }
    }
}
