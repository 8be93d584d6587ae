//! Worker threads: one per core, pinned, each with its own monoio runtime, connections, buffers
//! and ring producer. Workers only send, read and stamp; everything else is the aggregator's.
//!
//! A worker is driven phase by phase over a control channel: the main thread sends a
//! [`PhasePlan`], the worker runs it to completion (all its requests answered, failed or cut at
//! the hard deadline) and reports [`PhaseDone`].

mod client;
mod pacer;
pub mod runtime;

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use crossbeam_queue::ArrayQueue;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::clock::Clock;
use crate::config::{ConnectionReuse, IoDriver};
use crate::http::EncodedRequest;
use crate::record::ring::Producer;
use crate::record::{Credit, Phase, RawRecord};
use crate::schedule::TemplatePicker;

pub use runtime::DriverKind;

/// Read-only state shared by every worker.
#[derive(Debug)]
pub struct Shared {
    pub clock: Clock,
    /// Resolved address of every base URL.
    pub urls: Vec<SocketAddr>,
    /// Pre-encoded requests: `templates[url][entry]`.
    pub templates: Vec<Vec<EncodedRequest>>,
    pub request_timeout: Duration,
    pub reuse: ConnectionReuse,
    /// Largest response body accepted.
    pub max_body_bytes: u64,
    pub seed: u64,
    /// Early stop (signal, error budget): stop issuing, cut in-flight requests at a deadline.
    pub control: Arc<crate::control::RunControl>,
}

/// Where a phase's credits come from.
#[derive(Debug, Clone)]
pub enum CreditSource {
    /// Closed loop: `slots` request loops on this worker take the next index from a counter
    /// shared by all workers until `limit`.
    Closed {
        next: Arc<AtomicU64>,
        limit: u64,
        slots: usize,
    },
    /// Open loop: credits with absolute intended times, fed by the dispatcher. `cap` bounds
    /// this worker's requests in flight.
    Open {
        queue: Arc<ArrayQueue<Credit>>,
        fed: Arc<AtomicBool>,
        cap: Option<usize>,
    },
}

/// One phase for one worker.
#[derive(Debug, Clone)]
pub struct PhasePlan {
    pub phase: Phase,
    pub source: CreditSource,
    /// Stop taking closed-loop credits at this monotonic ns (duration runs).
    pub issue_deadline_ns: Option<u64>,
    /// Cut every request still in flight at this monotonic ns (end of the grace period).
    pub hard_deadline_ns: Option<u64>,
    /// Dataset entries, for picking the entry of closed-loop credits.
    pub entries: usize,
}

/// A worker finished its part of a phase.
#[derive(Debug, Clone, Copy)]
pub struct PhaseDone {
    pub worker: u16,
    pub sent: u64,
}

enum Control {
    Run(PhasePlan),
}

/// Per-worker mutable state, shared by that worker's tasks only.
#[derive(Debug)]
pub(crate) struct WorkerState {
    pub id: u16,
    pub pool: crate::net::Pool,
    pub pool_enabled: bool,
    rng: RefCell<StdRng>,
    reason: RefCell<String>,
    in_flight: Cell<usize>,
    /// Sockets of requests in flight, shut down when the run is cut short.
    pub(crate) open_fds: RefCell<HashSet<RawFd>>,
    producer: Producer,
}

impl WorkerState {
    /// A fresh (request id, correlation id) pair, UUID v4 from the worker's RNG.
    pub fn new_ids(&self) -> (uuid::Uuid, uuid::Uuid) {
        let mut rng = self.rng.borrow_mut();
        let a: [u8; 16] = rng.random();
        let b: [u8; 16] = rng.random();
        (
            uuid::Builder::from_random_bytes(a).into_uuid(),
            uuid::Builder::from_random_bytes(b).into_uuid(),
        )
    }

    pub fn set_reason(&self, r: &str) {
        let mut s = self.reason.borrow_mut();
        s.clear();
        s.push_str(r);
    }

    pub fn take_reason(&self) -> String {
        std::mem::take(&mut *self.reason.borrow_mut())
    }
}

/// Handle to the running workers.
#[derive(Debug)]
pub struct Workers {
    controls: Vec<Sender<Control>>,
    done_rx: Receiver<PhaseDone>,
    threads: Vec<JoinHandle<()>>,
    /// Driver each worker runs on.
    pub drivers: Vec<DriverKind>,
    /// Cores the workers were pinned to (None where pinning was refused or not attempted).
    pub pinned: Vec<Option<usize>>,
}

impl Workers {
    /// Spawns `n` workers, pinned to cores `cores[i % cores.len()]` when given, each owning one
    /// ring producer. Fails if a runtime cannot be built.
    pub fn spawn(
        shared: Arc<Shared>,
        producers: Vec<Producer>,
        driver: IoDriver,
        cores: &[usize],
    ) -> std::io::Result<Self> {
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let (ready_tx, ready_rx) =
            crossbeam_channel::unbounded::<(u16, std::io::Result<DriverKind>, Option<usize>)>();
        let mut controls = Vec::new();
        let mut threads = Vec::new();
        let n = producers.len();
        for (i, producer) in producers.into_iter().enumerate() {
            let (ctl_tx, ctl_rx) = crossbeam_channel::unbounded::<Control>();
            controls.push(ctl_tx);
            let shared = shared.clone();
            let done_tx = done_tx.clone();
            let ready_tx = ready_tx.clone();
            let core = (!cores.is_empty()).then(|| cores[i % cores.len()]);
            let id = i as u16;
            let t = std::thread::Builder::new()
                .name(format!("ringperf-worker-{i}"))
                .spawn(move || {
                    let pinned = core.filter(|&c| runtime::pin_to(c));
                    let res = runtime::block_on(driver, |kind| {
                        let ready_tx = ready_tx.clone();
                        async move {
                            let _ = ready_tx.send((id, Ok(kind), pinned));
                            worker_main(id, kind, shared, producer, ctl_rx, done_tx).await;
                        }
                    });
                    if let Err(e) = res {
                        let _ = ready_tx.send((id, Err(e), pinned));
                    }
                })?;
            threads.push(t);
        }
        drop(ready_tx);
        let mut drivers = vec![DriverKind::Legacy; n];
        let mut pinned = vec![None; n];
        for _ in 0..n {
            let (id, res, core) = ready_rx
                .recv()
                .map_err(|_| std::io::Error::other("a worker thread exited during start-up"))?;
            drivers[id as usize] = res?;
            pinned[id as usize] = core;
        }
        Ok(Self {
            controls,
            done_rx,
            threads,
            drivers,
            pinned,
        })
    }

    /// Starts a phase on every worker (one plan per worker).
    pub fn start_phase(&self, plans: Vec<PhasePlan>) {
        for (ctl, plan) in self.controls.iter().zip(plans) {
            let _ = ctl.send(Control::Run(plan));
        }
    }

    /// Waits up to `timeout` for one worker to finish its phase.
    pub fn wait_done(&self, timeout: Duration) -> Option<PhaseDone> {
        self.done_rx.recv_timeout(timeout).ok()
    }

    pub fn len(&self) -> usize {
        self.controls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.controls.is_empty()
    }

    /// Stops the workers and joins their threads (dropping their ring producers).
    pub fn shutdown(mut self) {
        self.controls.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

async fn worker_main(
    id: u16,
    driver: DriverKind,
    shared: Arc<Shared>,
    producer: Producer,
    ctl_rx: Receiver<Control>,
    done_tx: Sender<PhaseDone>,
) {
    let state = Rc::new(WorkerState {
        id,
        pool: crate::net::Pool::new(shared.urls.len(), client::READ_BUF_BYTES),
        pool_enabled: shared.reuse == ConnectionReuse::Pooled,
        rng: RefCell::new(StdRng::seed_from_u64(crate::schedule::child_seed(
            shared.seed,
            &format!("worker.ids.{id}"),
        ))),
        reason: RefCell::new(String::new()),
        in_flight: Cell::new(0),
        open_fds: RefCell::new(HashSet::new()),
        producer,
    });
    // Between phases nothing is in flight, so blocking this thread on the channel is fine.
    while let Ok(Control::Run(plan)) = ctl_rx.recv() {
        let sent = run_phase(&shared, &state, plan, driver).await;
        let _ = done_tx.send(PhaseDone { worker: id, sent });
    }
}

/// Runs one phase on this worker; returns how many requests it sent.
async fn run_phase(
    shared: &Arc<Shared>,
    state: &Rc<WorkerState>,
    plan: PhasePlan,
    driver: DriverKind,
) -> u64 {
    let sent = Rc::new(Cell::new(0u64));
    let phase_over = Rc::new(Cell::new(false));
    let watcher = monoio::spawn(watch_cut(shared.clone(), state.clone(), phase_over.clone()));
    match plan.source.clone() {
        CreditSource::Closed { next, limit, slots } => {
            let mut handles = Vec::with_capacity(slots);
            for _ in 0..slots {
                let (shared, state, plan, next, sent) = (
                    shared.clone(),
                    state.clone(),
                    plan.clone(),
                    next.clone(),
                    sent.clone(),
                );
                handles.push(monoio::spawn(async move {
                    let mut picker = TemplatePicker::new(plan.entries, shared.seed);
                    loop {
                        if shared.control.stopped() {
                            break;
                        }
                        let now = shared.clock.now_ns();
                        if plan.issue_deadline_ns.is_some_and(|d| now >= d) {
                            break;
                        }
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= limit {
                            break;
                        }
                        let credit = Credit {
                            phase: plan.phase,
                            index,
                            conversation: picker.pick(index),
                            turn: 0,
                            cancel_after_ns: None,
                            intended_ns: now,
                        };
                        sent.set(sent.get() + 1);
                        let rec =
                            client::send(&shared, &state, credit, plan.hard_deadline_ns).await;
                        push(&state, rec).await;
                    }
                }));
            }
            for h in handles {
                h.await;
            }
        }
        CreditSource::Open { queue, fed, cap } => {
            let cap = cap.unwrap_or(usize::MAX).max(1);
            let mut pacer = pacer::Pacer::new(driver);
            loop {
                if shared.control.stopped() {
                    break;
                }
                let Some(credit) = queue.pop() else {
                    if fed.load(Ordering::Acquire) && queue.is_empty() {
                        break;
                    }
                    monoio::time::sleep(Duration::from_micros(200)).await;
                    continue;
                };
                pacer.wait_until(&shared.clock, credit.intended_ns).await;
                while state.in_flight.get() >= cap {
                    monoio::time::sleep(Duration::from_micros(100)).await;
                }
                state.in_flight.set(state.in_flight.get() + 1);
                sent.set(sent.get() + 1);
                let (shared, state, hard) = (shared.clone(), state.clone(), plan.hard_deadline_ns);
                monoio::spawn(async move {
                    let rec = client::send(&shared, &state, credit, hard).await;
                    push(&state, rec).await;
                    state.in_flight.set(state.in_flight.get() - 1);
                });
            }
            while state.in_flight.get() > 0 {
                monoio::time::sleep(Duration::from_micros(500)).await;
            }
        }
    }
    phase_over.set(true);
    watcher.await;
    sent.get()
}

/// While a phase runs: once the run is cut short and its cut deadline has passed, shut down
/// every socket still in flight so that its pending read ends at once.
async fn watch_cut(shared: Arc<Shared>, state: Rc<WorkerState>, phase_over: Rc<Cell<bool>>) {
    const POLL: Duration = Duration::from_millis(5);
    while !phase_over.get() {
        monoio::time::sleep(POLL).await;
        if shared.clock.now_ns() >= shared.control.cut_at_ns() {
            for &fd in state.open_fds.borrow().iter() {
                // SAFETY: `fd` is the descriptor of a connection owned by a request of this worker
                // that is still in flight (the exchange, `crate::net::exchange`, removes it from
                // the set before the connection is pooled or dropped), so it is open and ours;
                // shutdown() only changes its state.
                unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
            }
        }
    }
}

/// Hands a record to the aggregator; a full ring is back-pressure (counted by the ring), never a
/// dropped record.
async fn push(state: &WorkerState, mut rec: RawRecord) {
    loop {
        match state.producer.try_push(rec) {
            Ok(()) => return,
            Err(back) => {
                rec = back;
                monoio::time::sleep(Duration::from_micros(200)).await;
            }
        }
    }
}
