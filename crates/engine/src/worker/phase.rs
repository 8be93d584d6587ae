//! One phase on one worker. Credits come from one of four places and every request goes out
//! as the next turn of a [`Session`]:
//!
//! - closed loop: each slot runs one conversation after another, turn by turn, waiting each
//!   later turn's delay (AIPerf's session concurrency);
//! - open-loop ticks (`--request-rate`): a tick sends the due turn of a session of this worker
//!   if one is waiting (continuations first, as AIPerf), else starts a new session;
//! - fixed schedule: a credit starts its conversation at the trace's time; the session sends
//!   its later turns when each is due;
//! - agentic replay: lanes of session trees resumed mid-trace (`super::agentic`).
//!
//! The request index (`session_num`) and the new-session index are taken from counters shared
//! by every worker, where the phase's request and session limits are enforced.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ringperf_workload::schedule::TemplatePicker;

use super::adaptive::SessionSlots;
use super::ctx::Ctx;
use super::idle::{Latch, Nudge};
use super::pacer::Pacer;
use super::session::Session;
use super::tree::BranchCounts;
use super::{CreditSource, DriverKind, OpenKind, PhasePlan, Shared, WorkerState, watch_cut};

/// How long before the next credit's intended time an open loop with an empty queue looks
/// again (the feeder queues it well before: `run::dispatch`'s lookahead is 50 ms).
const EARLY_NS: u64 = 2_000_000;

/// Runs `plan` on this worker; returns how many requests it sent and how its session trees'
/// branches went.
pub(super) async fn run(
    shared: &Arc<Shared>,
    state: &Rc<WorkerState>,
    plan: PhasePlan,
    driver: DriverKind,
) -> (u64, BranchCounts) {
    let ctx = Rc::new(Ctx {
        shared: shared.clone(),
        state: state.clone(),
        plan,
        driver,
        sent: Cell::new(0),
        changed: Nudge::default(),
        children: Cell::new(0),
        child_ended: Nudge::default(),
        branches: Rc::default(),
        pending: Default::default(),
    });
    // `dag_jsonl`'s pre-session children go before any root's first turn.
    super::pre_session::start(&ctx);
    let phase_over = Rc::new(Latch::default());
    let watcher = monoio::spawn(watch_cut(shared.clone(), state.clone(), phase_over.clone()));
    let keeper = ctx.plan.warm.map(|w| {
        monoio::spawn(super::warm::keep(
            shared.clone(),
            state.clone(),
            w,
            phase_over.clone(),
        ))
    });
    match ctx.plan.source.clone() {
        CreditSource::Closed {
            slots,
            ramp_offsets_ns,
        } => {
            let handles = start_slots(&ctx, slots, &ramp_offsets_ns).await;
            let all = async move {
                for h in handles {
                    h.await;
                }
            };
            if ctx.plan.seamless.0 {
                // Handing over: over once no new session can start; the slots' last requests
                // finish on their own.
                monoio::select! {
                    () = all => {}
                    () = issuing_over(&ctx) => {}
                }
            } else {
                all.await;
            }
        }
        CreditSource::Open {
            queue,
            fed,
            next_ns,
            cap,
            slots,
            kind,
        } => open_loop(&ctx, (&queue, &fed, &next_ns), cap, slots, kind).await,
        CreditSource::Agentic(work) => super::agentic::run(&ctx, &work).await,
    }
    // Child sessions still running (a background subagent outlives its root): the phase ends
    // with them.
    while ctx.children.get() > 0 {
        ctx.child_ended.wait().await;
    }
    phase_over.set();
    watcher.await;
    // Awaited: no task of the phase may outlive it (the worker's state, ring producer
    // included, ends with its last task). It ends at once, or after a connect it started.
    if let Some(keeper) = keeper {
        keeper.await;
    }
    (ctx.sent.get(), ctx.branches.get())
}

/// Starts the phase's `slots` closed-loop slots, each when its place in the concurrency ramp
/// comes (`offsets_ns[i]` after the phase start; all at once without a ramp), and returns their
/// handles. A slot is spawned when it is due, not spawned to wait: a slot waiting for its place
/// holds no task (a request's task is a few KiB), and the slots due first do not wait for
/// thousands of later ones to be polled once before their requests are written. When the phase
/// stops issuing during the ramp, the slots not yet due are never started.
async fn start_slots(
    ctx: &Rc<Ctx>,
    slots: usize,
    offsets_ns: &[u64],
) -> Vec<monoio::task::JoinHandle<()>> {
    let offset = |i: usize| offsets_ns.get(i).copied().unwrap_or(0);
    let mut order: Vec<usize> = (0..slots).collect();
    order.sort_by_key(|&i| offset(i));
    let mut pacer = Pacer::shared(ctx.driver, ctx.state.timers.as_ref());
    let mut handles = Vec::with_capacity(slots);
    for i in order {
        let at = offset(i);
        if at > 0 && !ctx.wait_until(&mut pacer, ctx.plan.start_ns + at).await {
            break;
        }
        // A `u32`: the slot's task keeps it for as long as it runs.
        let cap = (ctx.plan.seamless.1).then(|| u32::try_from(slots).unwrap_or(u32::MAX));
        handles.push(monoio::spawn(closed_slot(ctx.clone(), cap)));
    }
    handles
}

/// A seamless phase's end of issuing: no new session can start (its requests are all taken, or
/// its sessions, or its time is up), looked at every 200 µs.
async fn issuing_over(ctx: &Rc<Ctx>) {
    while !(ctx.sessions_exhausted() || ctx.stopping()) {
        monoio::time::sleep(Duration::from_micros(200)).await;
    }
}

/// A closed-loop slot: one conversation after another until the phase's requests, sessions or
/// time run out. In a seamless phase (`cap`, this worker's slots) a session starts only while
/// fewer sessions than that are alive here, the previous phase's included. (An `async` block:
/// the task keeps its arguments once, see [`Ctx::send_all`].)
#[allow(clippy::manual_async_fn)] // an `async fn` keeps its arguments twice (#41)
fn closed_slot(ctx: Rc<Ctx>, cap: Option<u32>) -> impl Future<Output = ()> {
    async move {
        let mut pacer = Pacer::shared(ctx.driver, ctx.state.timers.as_ref());
        let mut picker = TemplatePicker::with_sampling(
            ctx.shared.dataset.root_count(),
            ctx.shared.seed,
            ctx.plan.sampling,
        );
        let gate = ctx.plan.adaptive.clone();
        // What the slot reads of its context is read through `ctx` where it is used, not kept
        // in references of its own: the task keeps its locals for as long as it runs (#41).
        while !ctx.stopping() {
            // No binding of the cap: the task would keep it beside its request (#41).
            while cap.is_some_and(|c| ctx.state.sessions_live.get() >= c as usize)
                && !ctx.stopping()
            {
                monoio::time::sleep(Duration::from_micros(100)).await;
            }
            // An adaptive phase's session limit: a permit per session.
            if let Some(g) = &gate
                && !g.acquire(|| ctx.stopping()).await
            {
                return;
            }
            let Some(mut session) = ctx.new_session(|s| ctx.shared.dataset.root(picker.pick(s)))
            else {
                if let Some(g) = &gate {
                    g.release();
                }
                return;
            };
            (ctx.state.sessions_live).set(ctx.state.sessions_live.get() + 1);
            let sent = ctx.send_all(&mut session, &mut pacer).await;
            (ctx.state.sessions_live).set(ctx.state.sessions_live.get() - 1);
            if let Some(g) = &gate {
                g.release();
            }
            if !sent {
                return;
            }
        }
    }
}

/// Where an open loop's credits come from ([`CreditSource::Open`]): its queue, whether the
/// feeder is done, the next credit's time.
type Feed<'a> = (
    &'a crossbeam_queue::ArrayQueue<ringperf_wire::record::Credit>,
    &'a std::sync::atomic::AtomicBool,
    &'a std::sync::atomic::AtomicU64,
);

/// The open loop: pace every credit to its intended time, then use it as its kind says.
///
/// A rate tick sends the due turn of a session of this worker if one is waiting (it holds its
/// session's slot), else starts a new session if a session slot is free — the phase's
/// `--concurrency`, or the slots an adaptive phase moving its concurrency steers — and else goes
/// unused: AIPerf 0.13 skips such a tick rather than sending late, and keeps the conversation it
/// drew for the next one (`timing/strategies/request_rate.py`).
async fn open_loop(
    ctx: &Rc<Ctx>,
    (queue, fed, next_ns): Feed<'_>,
    cap: Option<usize>,
    slots: Option<Arc<SessionSlots>>,
    kind: OpenKind,
) {
    let cap = cap.unwrap_or(usize::MAX).max(1);
    // Rate ticks: the phase's session slots, or those an adaptive phase moving its
    // concurrency steers (its gate's).
    let slots = match kind {
        OpenKind::Tick => {
            slots.or_else(|| (ctx.plan.adaptive.as_ref()).and_then(|g| g.slots().cloned()))
        }
        OpenKind::SessionStart => None,
    };
    let state = &ctx.state;
    let mut pacer = Pacer::new(ctx.driver);
    // Sessions of this worker whose next turn is due, oldest first; and every session alive here
    // (sending, waiting for its delay, or due).
    let ready: Rc<RefCell<VecDeque<Session>>> = Rc::default();
    let live = Rc::new(Cell::new(0usize));
    let mut picker = TemplatePicker::with_sampling(
        ctx.shared.dataset.root_count(),
        ctx.shared.seed,
        ctx.plan.sampling,
    );
    loop {
        if ctx.shared.control.stopped() || ctx.plan.adaptive.as_ref().is_some_and(|g| g.closed()) {
            break;
        }
        if ctx.requests_exhausted() {
            break;
        }
        let Some(credit) = queue.pop() else {
            if fed.load(Ordering::Acquire) && queue.is_empty() {
                break;
            }
            if kind == OpenKind::Tick && ctx.sessions_exhausted() && live.get() == 0 {
                break;
            }
            // Nothing queued: look again shortly before the next credit is meant to go (the
            // feeder queues it ahead of that; the time it publishes only grows until the credit
            // is within its lookahead, so no credit comes sooner), every 200 µs when it may come
            // at any moment, and at once when the run stops or the phase's time is up.
            let now = ctx.shared.clock.now_ns();
            let next = next_ns.load(Ordering::Acquire);
            if next == u64::MAX {
                // None left (`run::dispatch::NEXT_NONE`, published after `fed`): the next look
                // sees the phase fed.
                continue;
            }
            let bound = state.stop.bound().map_or(u64::MAX, |d| d.as_nanos() as u64);
            let at = next
                .saturating_sub(EARLY_NS)
                .min(ctx.plan.issue_deadline_ns.unwrap_or(u64::MAX))
                .clamp(now + 200_000, now.saturating_add(bound));
            // A poke (another worker ended its phase: the requests may be exhausted) or the
            // stop ends it too.
            monoio::select! {
                () = pacer.wait_until(&ctx.shared.clock, at) => {}
                () = state.stop.event() => {}
            }
            if next != 0 {
                // A wait with nothing due (not a 200 µs look for an imminent credit).
                state.stop.idle_wakes.set(state.stop.idle_wakes.get() + 1);
            }
            continue;
        };
        pacer
            .wait_until(&ctx.shared.clock, credit.intended_ns)
            .await;
        let mut intended_ns = credit.intended_ns;
        // A user-centric phase moving its users: this credit is a user the feeder counted, who
        // ends with its session.
        let user = (ctx.plan.adaptive.clone())
            .filter(|g| g.turn_gap_ns().is_some() && kind == OpenKind::SessionStart);
        // A session start waits for one of this worker's slots (a trace's sessions each hold one
        // until their last turn is answered).
        while kind == OpenKind::SessionStart && live.get() >= cap {
            monoio::time::sleep(Duration::from_micros(100)).await;
            // A session that waited for its slot is meant to go when it gets it, as AIPerf
            // issues its credit then: the wait is the load's (`replay_sched_lag` shows it), not
            // the client's lateness.
            intended_ns = intended_ns.max(ctx.shared.clock.now_ns());
        }
        let session = match kind {
            OpenKind::Tick => {
                // A later turn's session holds its slot already; a new one takes one.
                let waiting = ready.borrow_mut().pop_front();
                let started = || {
                    if slots.as_ref().is_some_and(|sl| !sl.try_acquire()) {
                        // Every slot taken: the tick goes unused.
                        return None;
                    }
                    let roots = &ctx.shared.dataset;
                    let s = ctx.new_session(|s| roots.root(picker.pick(s)));
                    if s.is_none()
                        && let Some(sl) = &slots
                    {
                        sl.release();
                    }
                    s
                };
                match waiting.or_else(started) {
                    Some(s) => s,
                    // Nothing to send on this tick: no session is due and none may start.
                    None => continue,
                }
            }
            OpenKind::SessionStart => match ctx.new_session(|_| credit.conversation) {
                Some(mut s) => {
                    if let Some(n) = credit.max_turns {
                        s.limit_turns(n as usize);
                    }
                    s
                }
                None => {
                    if let Some(u) = &user {
                        u.user_ended();
                    }
                    continue;
                }
            },
        };
        if session.next_turn() == 0 {
            live.set(live.get() + 1);
        }
        state.in_flight.set(state.in_flight.get() + 1);
        state.warm.in_flight(state.in_flight.get());
        let (ready, live) = (ready.clone(), live.clone());
        monoio::spawn(open_turn(
            ctx.clone(),
            session,
            intended_ns,
            slots.clone(),
            kind,
            ready,
            live,
        ));
    }
    // The last answers and later turns: looked at again each time one of them ends; handing
    // over to a seamless phase, they finish on their own.
    while !ctx.plan.seamless.0
        && (state.in_flight.get() > 0 || (kind == OpenKind::SessionStart && live.get() > 0))
    {
        ctx.changed.wait().await;
    }
}

/// The task of one open-loop turn of `session`: sends it, then, as `kind` says, queues the
/// session again in `ready` when its next turn is due (a tick) or sends its later turns (a
/// session start); counts it out of `live` and gives its slot back to `slots` (a tick's) when
/// it ends.
///
/// The session is captured and used in place (a `let` of it inside the block would keep it twice
/// in every request's task), and the wait for a tick's next turn is its own future, so its pacer
/// keeps no room beside the turn's (#41).
#[allow(clippy::manual_async_fn)] // an `async fn` keeps its arguments twice (#41)
fn open_turn(
    ctx: Rc<Ctx>,
    mut session: Session,
    intended_ns: u64,
    slots: Option<Arc<SessionSlots>>,
    kind: OpenKind,
    ready: Rc<RefCell<VecDeque<Session>>>,
    live: Rc<Cell<usize>>,
) -> impl Future<Output = ()> {
    async move {
        let sent = ctx.send_turn(&mut session, intended_ns).await;
        ctx.state.in_flight.set(ctx.state.in_flight.get() - 1);
        ctx.changed.nudge();
        if sent && !session.finished(&ctx.shared) {
            match kind {
                OpenKind::Tick => {
                    // Due after its delay (or its branches' end); then it waits for a tick.
                    if due_again(&ctx, &session).await {
                        ready.borrow_mut().push_back(session);
                        ctx.changed.nudge();
                        return;
                    }
                }
                OpenKind::SessionStart => run_rest(&ctx, &mut session).await,
            }
        }
        // A user-centric phase moving its users: this session was a user the feeder counted.
        if kind == OpenKind::SessionStart
            && let Some(g) = (ctx.plan.adaptive.as_ref()).filter(|g| g.turn_gap_ns().is_some())
        {
            g.user_ended();
        }
        if let Some(sl) = &slots {
            sl.release();
        }
        live.set(live.get() - 1);
        ctx.changed.nudge();
    }
}

/// Waits until an open-loop session's next turn is due; `false` when it will not be (the
/// session ended, or the phase stopped issuing meanwhile).
async fn due_again(ctx: &Rc<Ctx>, session: &Session) -> bool {
    let mut pacer = Pacer::shared(ctx.driver, ctx.state.timers.as_ref());
    match ctx.next_due(session).await {
        Some(due) => ctx.wait_until(&mut pacer, due).await,
        None => false,
    }
}

/// Sends a fixed-schedule session's later turns, each when it is due.
async fn run_rest(ctx: &Rc<Ctx>, session: &mut Session) {
    let mut pacer = Pacer::shared(ctx.driver, ctx.state.timers.as_ref());
    while !session.finished(&ctx.shared) {
        let Some(due) = ctx.next_due(session).await else {
            return;
        };
        if !ctx.wait_until(&mut pacer, due).await {
            return;
        }
        let intended = due.max(ctx.plan.start_ns);
        ctx.state.in_flight.set(ctx.state.in_flight.get() + 1);
        ctx.state.warm.in_flight(ctx.state.in_flight.get());
        let sent = ctx.send_turn(session, intended).await;
        ctx.state.in_flight.set(ctx.state.in_flight.get() - 1);
        ctx.changed.nudge();
        if !sent {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future an async fn of three arguments returns, without calling it.
    fn future_size3<A, B, C, F: std::future::Future>(_: impl Fn(A, B, C) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// The size of the future an async fn of four arguments returns, without calling it.
    fn future_size4<A, B, C, D, F: std::future::Future>(_: impl Fn(A, B, C, D) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// A request's future keeps room for what a stream waiting for its bytes holds (the record
    /// being filled, 512 bytes, the exchange and its recorder, the connection, the read's state)
    /// and little more: the connect, the TLS and user-stamped reads and the large body's write
    /// are boxed while they run, and the request's parts are not kept twice (#41: 2,608 bytes
    /// before, of which the exchange 1,400 and the request as an argument 168). Its fifth memory
    /// cut: the exchange borrows what its client keeps once, an attempt's write is no larger
    /// than its read, and the recorder owns the record (1,416 bytes before, unoptimized). Its
    /// sixth: the write is boxed while it runs, the multishot read awaits only its slot's wait,
    /// the connection and the attempt's timer are smaller (1,272 bytes before, unoptimized).
    #[test]
    fn a_request_keeps_no_room_for_its_cold_paths() {
        let request = future_size4(crate::worker::client::send);
        assert!(
            request <= REQUEST_MAX,
            "client::send's future is {request} bytes"
        );
    }

    /// The most a request's future may be (unoptimized, as the tests build it).
    const REQUEST_MAX: usize = 1_008;

    /// The same for two arguments.
    fn future_size2<A, B, F: std::future::Future>(_: impl Fn(A, B) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// The same for seven arguments.
    fn future_size7<A, B, C, D, E, G, H, F: std::future::Future>(
        _: impl Fn(A, B, C, D, E, G, H) -> F,
    ) -> usize {
        std::mem::size_of::<F>()
    }

    /// A streaming slot's task is its request's future and the slot's own state, once: its
    /// session, pacer and picker, with no copy of an argument kept beside what was made of it
    /// (#41: a closed-loop slot's task 3,456 bytes, 2,608 of them the request's; an open-loop
    /// turn's kept its session twice). The fifth memory cut boxed a session's rare parts and
    /// keeps no reference the slot can read through its context (656 bytes over the request's
    /// were allowed before). The sixth made the turn's request before its future (the turn's
    /// arguments, the credit's parts and the built request's owners were kept beside it, 112
    /// bytes), and the waits before a turn futures of their own (their times were kept beside
    /// the request: 464 bytes over the request's before).
    #[test]
    fn a_streaming_task_keeps_its_state_once() {
        let request = future_size4(crate::worker::client::send);
        let slot = future_size2(closed_slot);
        assert!(
            slot <= request + 320,
            "a closed-loop slot's task is {slot} bytes over {request}"
        );
        let turn = future_size3(Ctx::send_turn);
        let open = future_size7(open_turn);
        let session = std::mem::size_of::<Session>();
        assert!(
            open <= turn + session + 160,
            "an open-loop turn's task is {open} bytes over send_turn {turn}"
        );
    }

    /// A closed-loop slot keeps its session for as long as the session runs: a sticky
    /// session's own pool is boxed (#41: 288 bytes with it inline in every session), and so are
    /// the parts only some sessions have (a history, `--cache-bust` markers, a stored answer's
    /// id, a place in a tree: 232 bytes with them inline).
    #[test]
    fn a_session_keeps_no_room_for_a_sticky_pool_it_does_not_have() {
        let size = std::mem::size_of::<Session>();
        assert!(size <= 128, "a session is {size} bytes");
    }

    /// A turn's future is its request's plus a few words: it keeps no room for the record
    /// beside the request while the response takes (#41: 512 bytes a stream, when the record
    /// came back by value and its place was kept from the start of the await), nor for what
    /// the request was made of (#41's sixth cut: the turn was 192 bytes over the request's,
    /// 80 of its own and 112 of `send_next`, an `async` block around the request).
    #[test]
    fn a_turn_keeps_no_room_for_its_record_while_the_request_runs() {
        let turn = future_size3(Ctx::send_turn);
        let request = future_size4(crate::worker::client::send);
        assert!(
            turn <= request + 64,
            "send_turn {turn} bytes over client::send {request}"
        );
    }
}
