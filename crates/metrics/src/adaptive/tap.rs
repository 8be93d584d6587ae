//! Where the records of an adaptive phase reach its controller: the aggregator, which sees
//! every record as it is taken from the rings, pushes each one of the watched phase here (its
//! outcome and latencies only); the thread driving the phase takes them at every assessment.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};

/// One record of the watched phase, as the window needs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tapped {
    /// When the request started (the run's clock, ns): a sustain ignores those started before
    /// it.
    pub start_ns: u64,
    pub outcome: Outcome,
    pub sample: super::window::Sample,
}

/// How a request ended, as the controller counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Error,
    Cancelled,
}

/// No phase is watched.
const NONE: u16 = u16::MAX;

/// The shared buffer between the aggregator and an adaptive phase's driver.
#[derive(Debug)]
pub struct Tap {
    /// The run's index of the phase watched ([`NONE`]: none).
    phase: AtomicU16,
    /// First-token times are kept (a filter needs them).
    ttft: AtomicBool,
    records: Mutex<Vec<Tapped>>,
}

impl Default for Tap {
    fn default() -> Self {
        Self {
            phase: AtomicU16::new(NONE),
            ttft: AtomicBool::new(false),
            records: Mutex::new(Vec::new()),
        }
    }
}

impl Tap {
    /// Watches the phase at `index` from now (`ttft`: keep first-token times); what was
    /// gathered before is dropped.
    pub fn watch(&self, index: u8, ttft: bool) {
        self.take();
        self.ttft.store(ttft, Ordering::Release);
        self.phase.store(u16::from(index), Ordering::Release);
    }

    /// Watches nothing.
    pub fn stop(&self) {
        self.phase.store(NONE, Ordering::Release);
        self.take();
    }

    /// The phase at `index` is watched.
    pub fn watching(&self, index: u8) -> bool {
        self.phase.load(Ordering::Acquire) == u16::from(index)
    }

    /// A record of the watched phase (the aggregator's side).
    pub fn push(&self, mut t: Tapped) {
        if !self.ttft.load(Ordering::Acquire) {
            t.sample.ttft_ns = None;
        }
        if let Ok(mut r) = self.records.lock() {
            r.push(t);
        }
    }

    /// Everything pushed since the last take.
    pub fn take(&self) -> Vec<Tapped> {
        self.records
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default()
    }
}
