//! The dashboard's thread: it owns the terminal (raw mode, alternate screen) from the first
//! phase until the run's last request, redraws every [`REDRAW`], and reads the keyboard.
//!
//! In raw mode the terminal sends no SIGINT for Ctrl-C, so the keys are read here and do what
//! the signal does without a dashboard: the first `q` or Ctrl-C stops the run gracefully
//! (requests in flight get the grace period), the second restores the terminal and exits 130.
//! A panic anywhere restores the terminal first (ratatui's panic hook).

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratatui::DefaultTerminal;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use super::Board;
use super::render::{DashView, draw};
use ringperf_io::control::{RunControl, StopReason};

/// Time between two frames (and the longest a key waits to be seen).
pub const REDRAW: Duration = Duration::from_millis(250);

/// A running dashboard; [`Dashboard::stop`] (or dropping it) gives the terminal back.
pub struct Dashboard {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// What the thread reads each frame.
struct Feed {
    board: Arc<Board>,
    control: Arc<RunControl>,
    grace: Option<Duration>,
    gpu_telemetry: bool,
    sweep: Option<String>,
}

impl Dashboard {
    /// Takes the terminal and starts drawing. An error (no terminal after all) leaves the
    /// terminal as it was; the run then goes on without a display. `sweep`: the variation
    /// running, for the header.
    pub fn start(
        board: Arc<Board>,
        control: Arc<RunControl>,
        grace: Option<Duration>,
        gpu_telemetry: bool,
        sweep: Option<String>,
    ) -> io::Result<Self> {
        let terminal = ratatui::try_init()?;
        let done = Arc::new(AtomicBool::new(false));
        let feed = Feed {
            board,
            control,
            grace,
            gpu_telemetry,
            sweep,
        };
        let flag = done.clone();
        let thread = std::thread::Builder::new()
            .name("ringperf-ui".into())
            .spawn(move || run(terminal, &feed, &flag));
        match thread {
            Ok(t) => Ok(Self {
                done,
                thread: Some(t),
            }),
            Err(e) => {
                ratatui::restore();
                Err(e)
            }
        }
    }

    /// Stops drawing and restores the terminal (returns once it is restored).
    pub fn stop(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The frame the board shows now.
fn view(feed: &Feed) -> DashView {
    let header = feed.board.phase.lock().ok().and_then(|p| *p);
    let client = feed
        .board
        .client
        .lock()
        .map(|c| c.clone())
        .unwrap_or_default();
    // The snapshot belongs to the header's phase only once its first record arrived.
    let client = match header {
        Some(h) if client.phase == Some(h.phase) => client,
        Some(_) => Default::default(),
        None => client,
    };
    DashView {
        phase: header.map_or_else(|| "starting".to_string(), |h| h.phase.as_str().to_string()),
        total: header.and_then(|h| h.total),
        duration_s: header.and_then(|h| h.duration).map(|d| d.as_secs_f64()),
        elapsed_s: header.map_or(0.0, |h| h.started.elapsed().as_secs_f64()),
        client,
        server: feed
            .board
            .server
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default(),
        gpus: feed.gpu_telemetry.then(|| {
            feed.board
                .gpus
                .lock()
                .map(|g| g.clone())
                .unwrap_or_default()
        }),
        stopping: feed.control.stopped(),
        sweep: feed.sweep.clone(),
    }
}

/// Whether a key event asks to stop: `q`, or Ctrl-C.
fn is_stop_key(code: KeyCode, modifiers: KeyModifiers) -> bool {
    matches!(code, KeyCode::Char('q') | KeyCode::Char('Q'))
        || (code == KeyCode::Char('c') && modifiers.contains(KeyModifiers::CONTROL))
}

fn run(mut terminal: DefaultTerminal, feed: &Feed, done: &AtomicBool) {
    let mut presses = 0u32;
    let mut next_frame = Instant::now();
    while !done.load(Ordering::Acquire) {
        if Instant::now() >= next_frame {
            let v = view(feed);
            // A failed draw (terminal gone) is not the run's failure: keep measuring.
            let _ = terminal.draw(|f| draw(f, &v));
            next_frame = Instant::now() + REDRAW;
        }
        let wait = next_frame.saturating_duration_since(Instant::now());
        if !event::poll(wait.min(REDRAW)).unwrap_or(false) {
            continue;
        }
        let Ok(Event::Key(k)) = event::read() else {
            continue;
        };
        if k.kind != KeyEventKind::Press || !is_stop_key(k.code, k.modifiers) {
            continue;
        }
        presses += 1;
        if presses == 1 {
            feed.control
                .stop_after(StopReason::Signal("the dashboard's stop key"), feed.grace);
            next_frame = Instant::now();
        } else {
            ratatui::restore();
            eprintln!("ringperf: stop key again: force quit");
            ringperf_io::control::force_quit();
        }
    }
    ratatui::restore();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_and_ctrl_c_stop_other_keys_do_not() {
        assert!(is_stop_key(KeyCode::Char('q'), KeyModifiers::NONE));
        assert!(is_stop_key(KeyCode::Char('c'), KeyModifiers::CONTROL));
        assert!(!is_stop_key(KeyCode::Char('c'), KeyModifiers::NONE));
        assert!(!is_stop_key(KeyCode::Enter, KeyModifiers::NONE));
    }
}
