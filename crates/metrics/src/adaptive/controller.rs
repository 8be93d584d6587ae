//! The adaptive-scale controller, a pure state machine: given each assessment window's
//! statistics it decides the next control value and says what happened, as AIPerf 0.13's
//! ramp-until-fail controller does. It reads no clock and does no I/O; the caller gives the
//! time (for the sustain duration) and applies the values it sets.
//!
//! States: *discover* (raise the value while every window passes), *sustain* (hold the last
//! passing value, one step down allowed per failing window until a pass re-arms it), and
//! *complete*.

use super::settings::{Filter, Metric, Settings, StepPolicy};
use super::window::WindowStats;

/// The controller's state, as events name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Discover,
    Sustain,
    Complete,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Discover => "discover",
            State::Sustain => "sustain",
            State::Complete => "complete",
        }
    }
}

/// What an event reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    PhaseStarted,
    Window,
    Decision,
    SustainStarted,
    BoundaryDiscovered,
    Complete,
    Incomplete,
    Failed,
}

impl EventKind {
    pub fn name(self) -> &'static str {
        match self {
            EventKind::PhaseStarted => "adaptive_phase_started",
            EventKind::Window => "adaptive_window",
            EventKind::Decision => "adaptive_decision",
            EventKind::SustainStarted => "sustain_started",
            EventKind::BoundaryDiscovered => "boundary_discovered",
            EventKind::Complete => "adaptive_complete",
            EventKind::Incomplete => "adaptive_incomplete",
            EventKind::Failed => "adaptive_failed",
        }
    }
}

/// Why the controller ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    MaxReached,
    NoSustainable,
    SustainCompleted,
    SustainFailedAfterRecovery,
    SustainUnrecoverable,
    /// The phase stopped issuing by itself (its duration, request or session count).
    PhaseStopped,
    /// The phase was cancelled (a stop of the run).
    PhaseCancelled,
}

impl Ending {
    pub fn reason(&self) -> &'static str {
        match self {
            Ending::MaxReached => "max_control_value_reached_without_saturation",
            Ending::NoSustainable => "no_sustainable_concurrency_found",
            Ending::SustainCompleted => "sustain_duration_completed",
            Ending::SustainFailedAfterRecovery => "sustain_failed_after_recovery",
            Ending::SustainUnrecoverable => "sustain_failed_sla_unrecoverable",
            Ending::PhaseStopped => "phase_stopped",
            Ending::PhaseCancelled => "phase_cancelled",
        }
    }

    /// The summary's `status`.
    pub fn status(&self) -> &'static str {
        match self {
            Ending::MaxReached => "incomplete",
            Ending::SustainCompleted | Ending::PhaseStopped => "completed",
            _ => "failed",
        }
    }

    fn event(&self) -> EventKind {
        match self {
            Ending::MaxReached => EventKind::Incomplete,
            Ending::SustainCompleted | Ending::PhaseStopped => EventKind::Complete,
            _ => EventKind::Failed,
        }
    }
}

/// Window counts an event carries.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    pub throughput: f64,
    pub successes: u64,
    pub errors: u64,
    pub cancelled: u64,
}

impl Counts {
    fn of(w: &WindowStats) -> Self {
        Counts {
            throughput: w.throughput(),
            successes: w.successes(),
            errors: w.errors,
            cancelled: w.cancelled,
        }
    }
}

/// One event, with the controller's memory as it was when it was emitted.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub kind: EventKind,
    pub state: State,
    pub iteration: u64,
    /// The value before a decision (`None`: the current one).
    pub before: Option<f64>,
    pub value: f64,
    pub boundary: Option<f64>,
    pub last_passing: Option<f64>,
    pub first_failing: Option<f64>,
    pub sla_value: Option<f64>,
    /// Every filter's value (empty when not reported).
    pub sla_values: Vec<(String, f64)>,
    pub binding_sla: Option<String>,
    pub passed: Option<bool>,
    pub counts: Counts,
    pub step_size: Option<f64>,
    pub reason: String,
}

/// One assessed window, as the summary lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub iteration: u64,
    pub value: f64,
    pub stats: WindowStats,
    pub accepted: bool,
    pub rejection: &'static str,
}

/// The controller of one adaptive phase.
#[derive(Debug)]
pub struct Controller {
    settings: Settings,
    filters: Vec<Filter>,
    state: State,
    current: f64,
    boundary: Option<f64>,
    last_passing: Option<f64>,
    first_failing: Option<f64>,
    iteration: u64,
    /// When sustain started: the caller's seconds (for the duration) and ns in the phase's
    /// clock frame (for the summary and the pre-sustain filter).
    sustain_started_s: Option<f64>,
    sustain_started_ns: Option<u64>,
    sustain_windows: u64,
    sustain_passed_windows: u64,
    recovery_used: bool,
    candidates: Vec<Candidate>,
    ending: Option<Ending>,
    /// The terminal window's counts.
    final_counts: Counts,
    events: Vec<Event>,
}

impl Controller {
    /// A controller at its minimum, in discover.
    ///
    /// # Errors
    /// The settings' phase-start checks ([`Settings::resolve`]).
    pub fn new(settings: Settings) -> Result<Self, String> {
        let filters = settings.resolve()?;
        let current = settings.clamp(settings.min);
        Ok(Self {
            settings,
            filters,
            state: State::Discover,
            current,
            boundary: None,
            last_passing: None,
            first_failing: None,
            iteration: 0,
            sustain_started_s: None,
            sustain_started_ns: None,
            sustain_windows: 0,
            sustain_passed_windows: 0,
            recovery_used: false,
            candidates: Vec::new(),
            ending: None,
            final_counts: Counts::default(),
            events: Vec::new(),
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn filters(&self) -> &[Filter] {
        &self.filters
    }

    /// The control value in force.
    pub fn value(&self) -> f64 {
        self.current
    }

    pub fn state(&self) -> State {
        self.state
    }

    pub fn ending(&self) -> Option<&Ending> {
        self.ending.as_ref()
    }

    pub fn done(&self) -> bool {
        self.ending.is_some()
    }

    pub fn boundary(&self) -> Option<f64> {
        self.boundary
    }

    pub fn last_passing(&self) -> Option<f64> {
        self.last_passing
    }

    pub fn first_failing(&self) -> Option<f64> {
        self.first_failing
    }

    pub fn sustain_windows(&self) -> (u64, u64) {
        (self.sustain_windows, self.sustain_passed_windows)
    }

    pub fn sustain_started_ns(&self) -> Option<u64> {
        self.sustain_started_ns
    }

    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }

    pub fn final_counts(&self) -> Counts {
        self.final_counts
    }

    /// The events emitted since the last call, in order.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// The phase starts: the start event.
    pub fn start(&mut self) {
        self.emit(
            EventKind::PhaseStarted,
            "adaptive scale discover phase started".into(),
            Emit::default(),
        );
    }

    /// Assesses one window that ended at `now_s` (the caller's monotonic seconds) and
    /// `now_ns` (the phase's clock frame, kept as the sustain's start). A window of the
    /// controller once complete is ignored.
    pub fn assess(&mut self, w: &WindowStats, now_s: f64, now_ns: u64) {
        self.assess_given(w, None, now_s, now_ns);
    }

    /// [`Controller::assess`] with the filters' values of the window given (`values`, keyed as
    /// [`super::settings::SlaFilter::key`]) instead of computed from its samples: a recorded
    /// run replayed (the window's counts still decide whether it is judged at all).
    pub fn assess_given(
        &mut self,
        w: &WindowStats,
        values: Option<Vec<(String, f64)>>,
        now_s: f64,
        now_ns: u64,
    ) {
        if self.done() {
            return;
        }
        self.assess_inner(w, values, now_s, now_ns);
        self.iteration += 1;
    }

    fn assess_inner(
        &mut self,
        w: &WindowStats,
        given: Option<Vec<(String, f64)>>,
        now_s: f64,
        now_ns: u64,
    ) {
        let counts = Counts::of(w);
        let zero_ok = w.samples.is_empty() && w.errors + w.cancelled > 0 && self.covered(w);
        if w.samples.is_empty() && w.errors + w.cancelled > 0 && !zero_ok {
            self.emit(
                EventKind::Window,
                "no successful requests in assessment window".into(),
                Emit {
                    counts,
                    passed: Some(false),
                    ..Emit::default()
                },
            );
            self.candidate(w, false, "error_threshold");
            self.failed_window(w, now_s, now_ns);
            return;
        }
        if (w.successes()) < self.settings.min_completed && !zero_ok {
            self.emit(
                EventKind::Window,
                "inconclusive: completed request count below minimum".into(),
                Emit {
                    counts,
                    ..Emit::default()
                },
            );
            self.candidate(w, false, "insufficient_samples");
            return;
        }
        let values = given.unwrap_or_else(|| w.values(&self.filters));
        let primary = self.filters[0].key.clone();
        let primary = values
            .iter()
            .find(|(k, _)| *k == primary)
            .map_or(f64::NAN, |(_, v)| *v);
        let passing = self.passes(&values);
        self.emit(
            EventKind::Window,
            "SLA window evaluated".into(),
            Emit {
                counts,
                sla_value: Some(primary),
                passed: Some(passing),
                sla_values: values.clone(),
                ..Emit::default()
            },
        );
        self.candidate(w, passing, "sla_miss");
        match self.state {
            State::Discover => self.discover(w, primary, passing, values, now_s, now_ns),
            State::Sustain => self.sustain(w, Some(primary), passing, values, None, now_s),
            State::Complete => {}
        }
    }

    /// A window of errors and cancellations only that error-rate or cancellation-rate filters
    /// alone can judge.
    fn covered(&self, w: &WindowStats) -> bool {
        let only = |m: Metric| matches!(m, Metric::ErrorRate | Metric::CancellationRate);
        if !self.filters.iter().all(|f| only(f.metric)) {
            return false;
        }
        if w.errors > 0 && w.cancelled > 0 {
            return false;
        }
        let has = |m: Metric| self.filters.iter().any(|f| f.metric == m);
        (w.errors == 0 || has(Metric::ErrorRate))
            && (w.cancelled == 0 || has(Metric::CancellationRate))
    }

    fn passes(&self, values: &[(String, f64)]) -> bool {
        self.filters.iter().all(|f| {
            values
                .iter()
                .find(|(k, _)| *k == f.key)
                .is_some_and(|(_, v)| f.written.op.holds(*v, f.written.threshold))
        })
    }

    fn failed_window(&mut self, w: &WindowStats, now_s: f64, now_ns: u64) {
        let reason = "all requests failed in assessment window";
        match self.state {
            State::Discover if self.last_passing.is_none() => {
                self.first_failing = Some(self.current);
                self.finish(Ending::NoSustainable, None, Counts::of(w));
            }
            State::Discover => {
                self.first_failing = Some(self.current);
                self.enter_sustain(w, None, reason.into(), now_s, now_ns);
            }
            State::Sustain => self.sustain(w, None, false, Vec::new(), Some(reason), now_s),
            State::Complete => {}
        }
    }

    fn discover(
        &mut self,
        w: &WindowStats,
        primary: f64,
        passing: bool,
        values: Vec<(String, f64)>,
        now_s: f64,
        now_ns: u64,
    ) {
        let counts = Counts::of(w);
        if passing {
            self.last_passing = Some(self.current);
            if self.current >= self.settings.max {
                self.finish(Ending::MaxReached, Some(primary), counts);
                return;
            }
            let before = self.current;
            let next = self
                .settings
                .max
                .min(self.current + self.step(self.current, &values));
            self.set(next);
            self.emit(
                EventKind::Decision,
                format!("SLA value {primary:.3} passes configured filters"),
                Emit {
                    counts,
                    sla_value: Some(primary),
                    before: Some(before),
                    step_size: Some(next - before),
                    sla_values: values,
                    ..Emit::default()
                },
            );
            return;
        }
        self.first_failing = Some(self.current);
        if self.last_passing.is_none() {
            self.finish(Ending::NoSustainable, Some(primary), counts);
            return;
        }
        let reason = format!("SLA value {primary:.3} breaches configured filters");
        self.enter_sustain(w, Some(primary), reason, now_s, now_ns);
    }

    fn enter_sustain(
        &mut self,
        w: &WindowStats,
        sla_value: Option<f64>,
        reason: String,
        now_s: f64,
        now_ns: u64,
    ) {
        let boundary = self
            .settings
            .min
            .max(self.last_passing.unwrap_or(self.settings.min));
        let before = self.current;
        self.boundary = Some(boundary);
        self.set(boundary);
        self.state = State::Sustain;
        self.sustain_started_s = Some(now_s);
        self.sustain_started_ns = Some(now_ns);
        // Neither event reports the window's cancellations.
        let counts = Counts {
            cancelled: 0,
            ..Counts::of(w)
        };
        let held = self.current;
        self.emit(
            EventKind::SustainStarted,
            format!("holding boundary_value={}", self.number(held)),
            Emit {
                counts,
                sla_value,
                before: Some(before),
                ..Emit::default()
            },
        );
        self.emit(
            EventKind::BoundaryDiscovered,
            reason,
            Emit {
                counts,
                sla_value,
                before: Some(boundary),
                ..Emit::default()
            },
        );
    }

    fn sustain(
        &mut self,
        w: &WindowStats,
        sla_value: Option<f64>,
        passing: bool,
        values: Vec<(String, f64)>,
        reason: Option<&str>,
        now_s: f64,
    ) {
        let counts = Counts::of(w);
        self.sustain_windows += 1;
        if passing {
            let v = sla_value.unwrap_or(f64::NAN);
            self.sustain_passed_windows += 1;
            self.last_passing = Some(self.current);
            self.recovery_used = false;
            self.emit(
                EventKind::Decision,
                format!("SLA value {v:.3} passes configured filters during sustain"),
                Emit {
                    counts,
                    sla_value,
                    ..Emit::default()
                },
            );
            let elapsed = self.sustain_started_s.map(|s| now_s - s);
            if elapsed.is_some_and(|e| e >= self.settings.sustain_s) {
                self.finish(Ending::SustainCompleted, sla_value, counts);
            }
            return;
        }
        if self.recovery_used {
            self.finish(Ending::SustainFailedAfterRecovery, sla_value, counts);
            return;
        }
        self.recovery_used = true;
        let before = self.current;
        let min = self.settings.min;
        let mut target = min.max(self.last_passing.unwrap_or(min));
        if target >= before {
            target = min.max(before - self.step(before, &values));
        }
        if target == before && before == min {
            self.finish(Ending::SustainUnrecoverable, sla_value, counts);
            return;
        }
        self.set(target);
        let reason = reason.map_or_else(
            || {
                format!(
                    "SLA value {:.3} breaches configured filters during sustain",
                    sla_value.unwrap_or(f64::NAN)
                )
            },
            str::to_owned,
        );
        self.emit(
            EventKind::Decision,
            reason,
            Emit {
                counts,
                sla_value,
                before: Some(before),
                step_size: Some((before - target).abs()),
                sla_values: values,
                ..Emit::default()
            },
        );
    }

    /// The phase ended on its own (`cancelled`: it was cancelled) before the controller: its
    /// terminal event, with no window.
    pub fn phase_ended(&mut self, cancelled: bool) {
        if self.done() {
            return;
        }
        let ending = if cancelled {
            Ending::PhaseCancelled
        } else {
            Ending::PhaseStopped
        };
        self.finish(ending, None, Counts::default());
    }

    fn finish(&mut self, ending: Ending, sla_value: Option<f64>, counts: Counts) {
        self.state = State::Complete;
        let kind = ending.event();
        let reason = ending.reason().to_owned();
        self.ending = Some(ending);
        self.final_counts = counts;
        self.emit(
            kind,
            reason,
            Emit {
                counts,
                sla_value,
                ..Emit::default()
            },
        );
    }

    /// How far a value moves from `current`.
    fn step(&self, current: f64, values: &[(String, f64)]) -> f64 {
        let s = &self.settings;
        if s.step_policy == StepPolicy::FixedPercentStep {
            return (current * (s.step_percent / 100.0)).ceil().max(1.0);
        }
        let base = s.base_step as f64;
        let margins: Vec<f64> = (self.filters.iter())
            .filter_map(|f| margin(f, lookup(values, &f.key)))
            .collect();
        if margins.is_empty() {
            return base;
        }
        let m = margins
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
            .max(0.0);
        let k = s.max_step_multiplier as f64;
        let multiplier = (m * k).trunc().min(k).max(1.0);
        base * multiplier
    }

    /// The filter with the smallest margin (the first on a tie).
    fn binding(&self, values: &[(String, f64)]) -> Option<String> {
        if values.is_empty() {
            return None;
        }
        let mut best: Option<(f64, &str)> = None;
        for f in &self.filters {
            if let Some(m) = margin(f, lookup(values, &f.key))
                && best.is_none_or(|(b, _)| m < b)
            {
                best = Some((m, &f.key));
            }
        }
        best.map(|(_, k)| k.to_owned())
    }

    fn set(&mut self, v: f64) {
        let v = self.settings.clamp(v);
        self.current = v;
    }

    /// The value as Python prints it (`4` for an integer variable, `5.0` for a rate).
    fn number(&self, v: f64) -> String {
        if self.settings.variable.integer() {
            format!("{}", v as i64)
        } else {
            super::settings::py_float(v)
        }
    }

    fn candidate(&mut self, w: &WindowStats, accepted: bool, rejection: &'static str) {
        self.candidates.push(Candidate {
            iteration: self.iteration,
            value: self.current,
            stats: w.clone(),
            accepted,
            rejection,
        });
    }

    fn emit(&mut self, kind: EventKind, reason: String, e: Emit) {
        let binding_sla = self.binding(&e.sla_values);
        self.events.push(Event {
            kind,
            state: self.state,
            iteration: self.iteration,
            before: e.before,
            value: self.current,
            boundary: self.boundary,
            last_passing: self.last_passing,
            first_failing: self.first_failing,
            sla_value: e.sla_value,
            sla_values: e.sla_values,
            binding_sla,
            passed: e.passed,
            counts: e.counts,
            step_size: e.step_size,
            reason,
        });
    }
}

/// What one emission says beyond the controller's memory.
#[derive(Default)]
struct Emit {
    counts: Counts,
    sla_value: Option<f64>,
    before: Option<f64>,
    passed: Option<bool>,
    step_size: Option<f64>,
    sla_values: Vec<(String, f64)>,
}

fn lookup(values: &[(String, f64)], key: &str) -> Option<f64> {
    values.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

/// How far `observed` is inside the filter's threshold, relative to it (negative: outside);
/// `None` for a zero threshold or no value.
fn margin(f: &Filter, observed: Option<f64>) -> Option<f64> {
    let t = f.written.threshold;
    let o = observed?;
    if t == 0.0 {
        return None;
    }
    Some(if f.written.op.upper() {
        (t - o) / t.abs()
    } else {
        (o - t) / t.abs()
    })
}

impl Settings {
    /// `v` within [min, max], truncated for a whole-number variable.
    pub fn clamp(&self, v: f64) -> f64 {
        let v = v.min(self.max).max(self.min);
        if self.variable.integer() {
            v.trunc()
        } else {
            v
        }
    }
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
