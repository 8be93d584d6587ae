//! A server thread's state, shared by the connections it serves: its index, its seeded
//! generator, the cache of exact prompt counts, and the [`Closer`] that ends every connection
//! when the thread stops.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::task::Waker;
use std::time::{Duration, Instant};

use super::body::Endpoint;
use super::fast::FrameCache;
use super::shared::Shared;
use super::tokens::SplitMix;
use ringperf_io::timer::{Timer, TimerQueue};

/// A server thread's state shared by its connections.
pub(crate) struct Worker {
    pub(crate) index: usize,
    pub(crate) shared: Arc<Shared>,
    pub(crate) rng: RefCell<SplitMix>,
    pub(crate) closer: Closer,
    /// The thread's runtime is on io_uring (its connections pace with timerfds) rather than epoll.
    pub(crate) on_io_uring: bool,
    /// Exact prompt token counts by body hash (see `MockConfig::prompt_tokenizer`).
    prompt_cache: RefCell<std::collections::HashMap<u64, u64>>,
    /// The thread's one timer for all its paced streams on io_uring (`None` on epoll, or when
    /// no timerfd can be made: each connection then paces with its own [`Timer`]). One
    /// descriptor per thread rather than one per connection: a mock holds as many connections
    /// as it has descriptors, not half as many.
    pub(crate) pacer: Option<std::rc::Rc<TimerQueue>>,
    /// The fast mode's precomputed stream bytes, by shape.
    pub(crate) frames: FrameCache,
}

impl Worker {
    pub(crate) fn new(index: usize, shared: Arc<Shared>, on_io_uring: bool) -> Self {
        let rng = RefCell::new(SplitMix::new(shared.cfg.seed, index));
        let pacer = on_io_uring
            .then(TimerQueue::new)
            .flatten()
            .map(std::rc::Rc::new);
        Self {
            index,
            shared,
            rng,
            closer: Closer::default(),
            on_io_uring,
            prompt_cache: RefCell::new(std::collections::HashMap::new()),
            pacer,
            frames: FrameCache::default(),
        }
    }

    /// Returns at or after the raw `CLOCK_MONOTONIC` time `due`: on the thread's timer queue
    /// when it has one, else on the connection's own `timer`.
    pub(crate) async fn sleep_until(&self, timer: &mut Timer, due: u64) {
        match &self.pacer {
            Some(p) => p.sleep_until(due).await,
            None => timer.wait_until(due).await,
        }
    }

    /// `usage.prompt_tokens` for a completion request body: exact when a tokenizer is
    /// configured (cached per distinct body, so repeated dataset entries cost one hash),
    /// otherwise the approximate word count.
    pub(crate) fn prompt_tokens(&self, endpoint: Endpoint, body: &[u8], words: u64) -> u64 {
        use std::hash::{Hash, Hasher};
        let Some(tok) = &self.shared.cfg.prompt_tokenizer else {
            return words;
        };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        body.hash(&mut h);
        let key = h.finish();
        if let Some(&n) = self.prompt_cache.borrow().get(&key) {
            return n;
        }
        let n = tok.0.count(&ringperf_wire::endpoint::payload_texts(
            endpoint.kind(),
            body,
        )) as u64;
        let mut cache = self.prompt_cache.borrow_mut();
        if cache.len() >= 100_000 {
            cache.clear();
        }
        cache.insert(key, n);
        n
    }

    /// Ends every connection of this thread (each is dropped, which closes its socket) and waits
    /// until they are gone, at most `limit`.
    ///
    /// Needed because a monoio runtime does not drop the tasks still waiting when it is dropped:
    /// their sockets (and, on io_uring, the queued close of the listener) would outlive a stop,
    /// so the port could not be bound again and clients would wait on dead connections.
    pub(crate) async fn close_connections(&self, limit: Duration) {
        let c = &self.closer;
        c.closed.set(true);
        for w in c.wakers.borrow_mut().iter_mut().filter_map(Option::take) {
            w.wake();
        }
        let started = Instant::now();
        while c.live.get() > 0 && started.elapsed() < limit {
            monoio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// Ends a thread's connections on stop: a flag, the wakers of the live connections (a slot
/// each, slots reused), and how many are live.
#[derive(Default)]
pub(crate) struct Closer {
    pub(crate) closed: Cell<bool>,
    wakers: RefCell<Vec<Option<Waker>>>,
    free: RefCell<Vec<usize>>,
    live: Cell<usize>,
}

impl Closer {
    pub(crate) fn slot(&self) -> usize {
        self.live.set(self.live.get() + 1);
        if let Some(i) = self.free.borrow_mut().pop() {
            return i;
        }
        let mut w = self.wakers.borrow_mut();
        w.push(None);
        w.len() - 1
    }

    pub(crate) fn register(&self, slot: usize, waker: &Waker) {
        if let Some(s) = self.wakers.borrow_mut().get_mut(slot) {
            match s {
                Some(w) if w.will_wake(waker) => {}
                _ => *s = Some(waker.clone()),
            }
        }
    }

    pub(crate) fn release(&self, slot: usize) {
        if let Some(s) = self.wakers.borrow_mut().get_mut(slot) {
            *s = None;
        }
        self.free.borrow_mut().push(slot);
        self.live.set(self.live.get().saturating_sub(1));
    }
}
