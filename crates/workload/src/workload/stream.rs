//! The requests of a streamed trace replay (docs/datasets.md, "Large traces"): a producer
//! thread (`run::stream`) builds each turn's prompt, body and ISL shortly before it is due and
//! leaves the encoded request in the turn's slot here; the worker that sends the turn takes it
//! out, so the request is freed once it has been sent. At most a window of built requests
//! waits in the slots: the producer sleeps while the window is full and is woken as the
//! workers take them.
//!
//! Conversations are built in dataset order, which is the schedule's order (a trace's
//! timestamps never go backwards); [`Stream::conversation_ready`] tells the feeder when a
//! conversation's requests are all in their slots, and its credit may be queued.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::Thread;

use ringperf_wire::http::EncodedRequest;

/// [`Stream::isl`]: no ISL counted (yet, or the turn has no text to count).
const NO_ISL: u64 = u64::MAX;

/// How many built requests may wait in their slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Turns built and not yet taken.
    pub turns: usize,
    /// Their bytes (every URL's encoding of each).
    pub bytes: usize,
}

impl Default for Window {
    /// 1024 turns or 64 MiB, whichever comes first.
    fn default() -> Self {
        Self {
            turns: 1024,
            bytes: 64 << 20,
        }
    }
}

/// One turn, built: its request encoded for every base URL, or why it could not be.
#[derive(Debug)]
pub struct Ready {
    pub requests: Result<Vec<EncodedRequest>, BuildError>,
}

/// Why a streamed turn has no request: its worker sends none and records this as the
/// request's error.
#[derive(Debug)]
pub enum BuildError {
    /// Its prompt could not be built (the first pass checked it; a changed builder might not
    /// agree).
    Prompt(crate::workload::loader::LoadError),
    /// Its body could not be made into its requests.
    Encode(super::form::EncodeError),
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Prompt(e) => write!(f, "cannot build the prompt: {e}"),
            BuildError::Encode(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for BuildError {}

impl Ready {
    fn bytes(&self) -> usize {
        self.requests
            .as_ref()
            .map_or(0, |r| r.iter().map(|e| e.bytes.len()).sum())
    }
}

/// The slots of a streamed replay, shared by its producer, the feeder, the workers and the
/// aggregator.
#[derive(Debug)]
pub struct Stream {
    /// Per turn (the dataset's flat turn index): the built request until a worker takes it.
    slots: Vec<Mutex<Option<Box<Ready>>>>,
    /// Per turn: its ISL, counted as it was built ([`NO_ISL`] before).
    isl: Vec<AtomicU64>,
    /// Conversations `0..ready` are built (or skipped: not on this run's schedule).
    ready: AtomicUsize,
    /// Built requests waiting in slots, and their bytes.
    held: AtomicUsize,
    held_bytes: AtomicUsize,
    /// The most that ever waited at once (turns): never above the window, give or take one
    /// conversation.
    held_peak: AtomicUsize,
    /// Prompts built so far, and how many were built when the first request was taken.
    built: AtomicU64,
    built_at_first_take: AtomicU64,
    window: Window,
    /// Set when the run is over: the producer stops.
    closed: AtomicBool,
    producer: OnceLock<Thread>,
    /// The thread waiting for the window to fill before the run starts ([`Stream::wait_primed`]).
    primer: OnceLock<Thread>,
}

impl Stream {
    /// The slots of `turns` turns, at most `window` built ahead.
    pub fn new(turns: usize, window: Window) -> Self {
        Self {
            slots: (0..turns).map(|_| Mutex::new(None)).collect(),
            isl: (0..turns).map(|_| AtomicU64::new(NO_ISL)).collect(),
            ready: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
            held_bytes: AtomicUsize::new(0),
            held_peak: AtomicUsize::new(0),
            built: AtomicU64::new(0),
            built_at_first_take: AtomicU64::new(u64::MAX),
            window: Window {
                turns: window.turns.max(1),
                bytes: window.bytes.max(1),
            },
            closed: AtomicBool::new(false),
            producer: OnceLock::new(),
            primer: OnceLock::new(),
        }
    }

    // --- the producer's side ---

    /// The calling thread is the producer: [`Stream::take`] and [`Stream::close`] wake it.
    pub fn register_producer(&self) {
        let _ = self.producer.set(std::thread::current());
    }

    /// Blocks the calling thread until the producer has filled the window, built every wanted
    /// turn, or ended: run before the schedule's clock starts, so the first requests leave on
    /// time rather than waiting for their prompts to be built (a trace's first timestamp often
    /// holds many long prompts at once). Woken by each built conversation; `false` once the
    /// stream is closed or `stopped` says the run was stopped (looked at every 50 ms).
    pub fn wait_primed(&self, stopped: impl Fn() -> bool) -> bool {
        let _ = self.primer.set(std::thread::current());
        loop {
            if self.closed.load(Ordering::Acquire) || stopped() {
                return false;
            }
            if self.ready.load(Ordering::Acquire) == usize::MAX || self.window_full() {
                return true;
            }
            // Woken by the producer at each conversation built and when it ends.
            std::thread::park_timeout(std::time::Duration::from_millis(50));
        }
    }

    /// The window holds as many turns or bytes as it may.
    fn window_full(&self) -> bool {
        self.held.load(Ordering::Acquire) >= self.window.turns
            || self.held_bytes.load(Ordering::Acquire) >= self.window.bytes
    }

    /// Blocks the producer while the window is full; `false` once the stream is closed.
    pub fn wait_for_room(&self) -> bool {
        loop {
            if self.closed.load(Ordering::Acquire) {
                return false;
            }
            if !self.window_full() {
                return true;
            }
            // Woken by a take or the close (a wake before the park makes it return at once).
            std::thread::park();
        }
    }

    /// Leaves turn `flat`'s request (and its ISL, when counted) in its slot.
    pub fn put(&self, flat: usize, ready: Ready, isl_tokens: Option<u64>) {
        if let Some(n) = isl_tokens {
            self.isl[flat].store(n, Ordering::Release);
        }
        let bytes = ready.bytes();
        if let Ok(mut slot) = self.slots[flat].lock() {
            *slot = Some(Box::new(ready));
        }
        let held = self.held.fetch_add(1, Ordering::AcqRel) + 1;
        self.held_bytes.fetch_add(bytes, Ordering::AcqRel);
        self.held_peak.fetch_max(held, Ordering::AcqRel);
    }

    /// One prompt built.
    pub fn count_built(&self) {
        self.built.fetch_add(1, Ordering::Relaxed);
    }

    /// Conversations `0..n` are in their slots.
    pub fn set_ready(&self, n: usize) {
        self.ready.store(n, Ordering::Release);
        if let Some(t) = self.primer.get() {
            t.unpark();
        }
    }

    /// The run is over, or the producer ended: nothing more will be built.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        if let Some(t) = self.producer.get() {
            t.unpark();
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    // --- the feeder's, the workers' and the aggregator's side ---

    /// Every turn of conversation `c` is in its slot (or taken).
    pub fn conversation_ready(&self, c: u32) -> bool {
        (c as usize) < self.ready.load(Ordering::Acquire)
    }

    /// Takes turn `flat`'s request out of its slot (`None`: not built, or already taken).
    pub fn take(&self, flat: usize) -> Option<Box<Ready>> {
        let ready = self.slots.get(flat)?.lock().ok()?.take()?;
        let _ = self.built_at_first_take.compare_exchange(
            u64::MAX,
            self.built(),
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        self.held_bytes.fetch_sub(ready.bytes(), Ordering::AcqRel);
        self.held.fetch_sub(1, Ordering::AcqRel);
        if let Some(t) = self.producer.get() {
            t.unpark();
        }
        Some(ready)
    }

    /// Turn `flat`'s ISL, once it was built.
    pub fn isl(&self, flat: usize) -> Option<u64> {
        self.isl
            .get(flat)
            .map(|n| n.load(Ordering::Acquire))
            .filter(|&n| n != NO_ISL)
    }

    /// Prompts built so far.
    pub fn built(&self) -> u64 {
        self.built.load(Ordering::Relaxed)
    }

    /// How many prompts were built when the first request was taken (`None` before).
    pub fn built_at_first_take(&self) -> Option<u64> {
        Some(self.built_at_first_take.load(Ordering::Acquire)).filter(|&n| n != u64::MAX)
    }

    /// Slots (turns of the dataset).
    pub fn turns(&self) -> usize {
        self.slots.len()
    }

    /// Built requests waiting in their slots now, and the most that ever did.
    pub fn held(&self) -> (usize, usize) {
        (
            self.held.load(Ordering::Acquire),
            self.held_peak.load(Ordering::Acquire),
        )
    }

    pub fn window(&self) -> Window {
        self.window
    }
}
