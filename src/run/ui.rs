//! Progress display while a phase runs: an indicatif bar on a terminal, a plain line every few
//! seconds otherwise, or nothing; with the dashboard ([`ringperf_engine::ui`]) only the phase's header,
//! which its own thread draws.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::config::{PhaseConfig, UiType};
use ringperf_engine::aggregator::Progress;
use ringperf_engine::ui::PhaseHeader;
use ringperf_wire::record::Phase;

/// Seconds between plain progress lines.
const LINE_INTERVAL: Duration = Duration::from_secs(5);

pub struct View {
    ui: UiType,
    phase: Phase,
    /// The phase's name (`warmup`, `profiling`, or a config file's).
    name: String,
    /// The run's counts of the phase's kind when it started: a config file's later profiling
    /// phase counts from there.
    base: (u64, u64),
    total: Option<u64>,
    duration: Option<Duration>,
    progress: Arc<Progress>,
    bar: Option<ProgressBar>,
    started: Instant,
    last_line: Instant,
}

impl View {
    pub fn new(
        ui: UiType,
        (phase, name): (Phase, &str),
        p: &PhaseConfig,
        progress: Arc<Progress>,
    ) -> Self {
        let total = p.request_count;
        let bar = (ui == UiType::Progress).then(|| {
            let bar = match (total, p.duration) {
                (Some(n), None) => ProgressBar::new(n),
                (_, Some(d)) => ProgressBar::new(d.as_secs().max(1)),
                (None, None) => ProgressBar::new_spinner(),
            };
            // The count is of requests answered (successes and failures), never of requests
            // sent: the bar only moves when something is done.
            let template = if p.duration.is_some() {
                "{prefix:>9} [{bar:40}] {pos}/{len} s  {msg}"
            } else {
                "{prefix:>9} [{bar:40}] {pos}/{len} requests done  {msg}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(name.to_owned());
            bar
        });
        let now = Instant::now();
        if let Some(board) = &progress.board {
            board.start_phase(PhaseHeader {
                phase,
                total,
                duration: p.duration,
                started: now,
            });
        }
        let base = counts(phase, &progress);
        Self {
            ui,
            phase,
            name: name.to_owned(),
            base,
            total,
            duration: p.duration,
            progress,
            bar,
            started: now,
            last_line: now,
        }
    }

    /// The phase's requests done and failed so far.
    fn done(&self) -> (u64, u64) {
        let (done, errors) = counts(self.phase, &self.progress);
        (done - self.base.0, errors - self.base.1)
    }

    /// A progress bar is drawn: it is refreshed often, the other displays need no more than a
    /// look every half second.
    pub fn shows_progress(&self) -> bool {
        self.bar.is_some()
    }

    /// Whether [`View::tick`] has anything to do (a bar, or the periodic lines).
    pub fn ticks(&self) -> bool {
        self.bar.is_some() || self.ui == UiType::Lines
    }

    pub fn tick(&mut self) {
        self.print_realtime_blocks();
        let (done, errors) = self.done();
        let elapsed = self.started.elapsed();
        match self.ui {
            UiType::Progress => {
                if let Some(bar) = &self.bar {
                    // The message first: a position change redraws, and the line must never
                    // show a new count beside an old message.
                    bar.set_message(progress_message(self.duration.is_some(), done, errors));
                    if self.duration.is_some() {
                        bar.set_position(elapsed.as_secs());
                    } else {
                        bar.set_position(done);
                    }
                }
            }
            UiType::Lines if self.last_line.elapsed() >= LINE_INTERVAL => {
                self.last_line = Instant::now();
                let of = self.total.map(|t| format!("/{t}")).unwrap_or_default();
                eprintln!(
                    "ringperf: {} {done}{of} requests done, {errors} failed, {:.1} s",
                    self.name,
                    elapsed.as_secs_f64()
                );
            }
            _ => {}
        }
    }

    /// The realtime stats blocks the aggregator left for the bar, printed above it.
    fn print_realtime_blocks(&self) {
        let Some(bar) = &self.bar else {
            return;
        };
        let blocks = match self.progress.realtime_blocks.lock() {
            Ok(mut q) => std::mem::take(&mut *q),
            Err(_) => return,
        };
        for b in blocks {
            bar.println(b);
        }
    }

    /// Ends the display of a phase whose workers sent `sent` requests, every one of them
    /// answered (the aggregator's count may not have caught up yet).
    pub fn finish(self, sent: u64) {
        self.print_realtime_blocks();
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if self.ui == UiType::Lines {
            let (done, errors) = self.done();
            let done = done.max(sent);
            eprintln!(
                "ringperf: {} finished: {done} requests done, {errors} failed, {:.1} s",
                self.name,
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}

/// The run's requests done and failed, of `phase`'s kind.
fn counts(phase: Phase, progress: &Progress) -> (u64, u64) {
    match phase {
        Phase::Warmup => (progress.warmup_done.load(Ordering::Relaxed), 0),
        Phase::Profiling => (
            progress.profiling_done.load(Ordering::Relaxed),
            progress.profiling_errors.load(Ordering::Relaxed),
        ),
    }
}

/// The text beside the bar: with a request count the bar already shows how many are done, so
/// only the failures; with a duration the bar shows seconds, so the requests done too.
fn progress_message(timed: bool, done: u64, errors: u64) -> String {
    let failed = format!("{errors} failed");
    if timed {
        format!("{done} requests done, {failed}")
    } else {
        failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_profiling_phase_counts_its_own_requests() {
        let progress = Arc::new(Progress::default());
        progress.profiling_done.store(20, Ordering::Relaxed);
        progress.profiling_errors.store(2, Ordering::Relaxed);
        let p = crate::config::PhaseConfig {
            load: crate::config::Load::Concurrency(1),
            request_count: Some(20),
            sessions: None,
            duration: None,
            grace: None,
            timing: crate::config::timing::PhaseTiming::default(),
        };
        let view = View::new(
            UiType::None,
            (Phase::Profiling, "constant_40"),
            &p,
            progress.clone(),
        );
        assert_eq!(view.done(), (0, 0));
        progress.profiling_done.fetch_add(3, Ordering::Relaxed);
        progress.profiling_errors.fetch_add(1, Ordering::Relaxed);
        assert_eq!(view.done(), (3, 1));
        assert_eq!(view.name, "constant_40");
    }

    #[test]
    fn the_bar_never_shows_two_different_counts_of_requests() {
        // A count-bounded bar shows `done/total requests done`; its message adds failures only.
        assert_eq!(progress_message(false, 8, 1), "1 failed");
        assert_eq!(progress_message(true, 8, 1), "8 requests done, 1 failed");
    }
}
