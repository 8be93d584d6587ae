//! One phase on one worker. Credits come from one of three places and every request goes out
//! as the next turn of a [`Session`]:
//!
//! - closed loop: each slot runs one conversation after another, turn by turn, waiting each
//!   later turn's delay (AIPerf's session concurrency);
//! - open-loop ticks (`--request-rate`): a tick sends the due turn of a session of this worker
//!   if one is waiting (continuations first, as AIPerf), else starts a new session;
//! - fixed schedule: a credit starts its conversation at the trace's time; the session sends
//!   its later turns when each is due.
//!
//! The request index (`session_num`) and the new-session index are taken from counters shared
//! by every worker, where the phase's request and session limits are enforced.

use ringperf_wire::conversation::{AgentParts, AgentTurnParts};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ringperf_workload::schedule::TemplatePicker;

use super::idle::{Latch, Nudge};
use super::pacer::Pacer;
use super::session::Session;
use super::tree::{BranchCounts, ChildEnd, Tree};
use super::{CreditSource, DriverKind, OpenKind, PhasePlan, Shared, WorkerState, push, watch_cut};

/// Longest single wait before the stop conditions are looked at again, on a worker that does
/// not listen for the stop (the epoll driver).
const STOP_POLL_NS: u64 = 50_000_000;
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
    });
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
            for h in start_slots(&ctx, slots, &ramp_offsets_ns).await {
                h.await;
            }
        }
        CreditSource::Open {
            queue,
            fed,
            next_ns,
            cap,
            kind,
        } => open_loop(&ctx, &queue, &fed, &next_ns, cap, kind).await,
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

/// What every task of the phase shares.
pub(super) struct Ctx {
    pub(super) shared: Arc<Shared>,
    pub(super) state: Rc<WorkerState>,
    pub(super) plan: PhasePlan,
    pub(super) driver: DriverKind,
    sent: Cell<u64>,
    /// A request of the phase ended, or a session's later turn became due: the open loop's
    /// last wait looks again.
    changed: Nudge,
    /// Child sessions of session trees running on this worker, and the nudge each gives as it
    /// ends.
    children: Cell<u32>,
    child_ended: Nudge,
    /// How the trees' branches went.
    pub(super) branches: Rc<Cell<BranchCounts>>,
}

impl Ctx {
    /// The phase stops issuing: an early stop, or the duration is over.
    pub(super) fn stopping(&self) -> bool {
        self.shared.control.stopped()
            || self
                .plan
                .issue_deadline_ns
                .is_some_and(|d| self.shared.clock.now_ns() >= d)
    }

    /// Takes the next request index (the run's, whichever shard this is), if the phase has
    /// requests left.
    fn take_request(&self) -> Option<u64> {
        (self.plan.counters).take_request(self.plan.shard, self.plan.request_limit)
    }

    /// Starts a new session with the conversation `pick` chooses for its index (or the given
    /// one), if the phase has sessions left.
    /// Its first turn's request index is taken with it ([`PhaseCounters::start_session`]).
    pub(super) fn new_session(&self, pick: impl FnOnce(u64) -> u32) -> Option<Session> {
        let plan = &self.plan;
        let (s, first) =
            (plan.counters).start_session(plan.shard, plan.session_limit, plan.request_limit)?;
        let url = (s % self.shared.urls.len() as u64) as usize;
        let conversation = pick(plan.first_session + s);
        let mut session = Session::new(&self.shared, &self.state, conversation, url);
        session.reserve_first_request(first);
        if !self.shared.dataset.conversations[conversation as usize]
            .branches()
            .is_empty()
        {
            session.root_of(Rc::new(Tree::new(self.branches.clone())));
        }
        Some(session)
    }

    /// Every request of the phase has been taken.
    fn requests_exhausted(&self) -> bool {
        let shard = self.plan.shard;
        shard.global(self.plan.counters.requests.load(Ordering::Relaxed)) >= self.plan.request_limit
    }

    /// No new session can start and no request is left to take for a waiting one.
    fn sessions_exhausted(&self) -> bool {
        let shard = self.plan.shard;
        shard.global(self.plan.counters.sessions.load(Ordering::Relaxed)) >= self.plan.session_limit
            || self.requests_exhausted()
    }

    /// When the session's next turn may go. A turn that joins branches of its session tree
    /// waits for their children; if it had to wait it goes at once when the last one ends,
    /// without its own delay (`Some(now)`); else `Some` of its due time. `None` when the phase
    /// stopped issuing meanwhile.
    async fn next_due(&self, session: &Session) -> Option<u64> {
        let shared = &self.shared;
        if let Some(tree) = session.tree() {
            let joins = shared
                .turn(session.conversation, session.next_turn())
                .joins();
            if !joins.is_empty() && !tree.joined(session.conversation, joins) {
                if self.requests_exhausted() {
                    // The turn would not go anyway: it is not held.
                    return None;
                }
                tree.suspend();
                let stop = &self.state.stop;
                loop {
                    if self.stopping() {
                        return None;
                    }
                    // The issue deadline and a stop on a worker that does not listen for it
                    // are looked at every 50 ms at most.
                    let now = shared.clock.now_ns();
                    let until = (now + STOP_POLL_NS)
                        .min(self.plan.issue_deadline_ns.unwrap_or(u64::MAX))
                        .max(now + 1_000);
                    monoio::select! {
                        () = tree.wait(session.conversation, joins) => {
                            tree.resume();
                            break;
                        }
                        () = monoio::time::sleep(Duration::from_nanos(until - now)) => {}
                        () = stop.event() => {}
                    }
                }
                return Some(shared.clock.now_ns());
            }
        }
        Some(session.due_ns(shared, &self.plan.timing, self.plan.start_ns))
    }

    /// Starts the child sessions of every branch the turn `turn` of `session` (just answered
    /// at run-clock `end_ns`) spawns: each a task of this worker, its first turn at its place
    /// in the trace after the spawn.
    fn spawn_children(self: &Rc<Self>, session: &Session, turn: u32, end_ns: u64) {
        let Some(tree) = session.tree() else {
            return;
        };
        let shared = &self.shared;
        let c = session.conversation;
        let conversation = &shared.dataset.conversations[c as usize];
        for &b in shared.turn(c, turn).spawns() {
            let Some(branch) = conversation.branches().get(b as usize) else {
                continue;
            };
            let offsets: Vec<u64> = branch
                .children
                .iter()
                .map(|&child| {
                    let first = shared
                        .dataset
                        .conversations
                        .get(child as usize)
                        .and_then(|c| c.turns.first())
                        .and_then(|t| t.timestamp_ms);
                    match (first, branch.start_ms) {
                        (Some(t), Some(s)) if t > s => ((t - s) * 1e6).round() as u64,
                        _ => 0,
                    }
                })
                .collect();
            let delayed = offsets.iter().filter(|&&o| o > 0).count() as u32;
            tree.start(c, b, branch.children.len() as u32, delayed);
            for (&child, offset) in branch.children.iter().zip(offsets) {
                let child_session = Session::child(
                    shared,
                    &self.state,
                    child,
                    session,
                    end_ns.saturating_add(offset),
                );
                self.run_child(tree, (c, b), child_session);
            }
        }
    }

    /// Runs the child session `child` of branch `b` of conversation `c` as a task of this
    /// worker: every turn left, each when due; its end is the tree's and the phase's to know.
    pub(super) fn run_child(self: &Rc<Self>, tree: &Rc<Tree>, (c, b): (u32, u32), child: Session) {
        self.children.set(self.children.get() + 1);
        let (ctx, tree) = (self.clone(), tree.clone());
        let task: std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> = Box::pin(async move {
            let mut child = child;
            let mut pacer = Pacer::shared(ctx.driver, ctx.state.timers.as_ref());
            ctx.send_all(&mut child, &mut pacer).await;
            let end = ChildEnd {
                sent: child.sent(),
                finished: child.finished(&ctx.shared),
                failed: child.failed(),
            };
            tree.end(c, b, end);
            ctx.children.set(ctx.children.get() - 1);
            ctx.child_ended.nudge();
        });
        monoio::spawn(task);
    }

    /// Sends every turn of `session` left, each when it is due. `false` when the phase stopped
    /// issuing (or ran out of requests) first.
    pub(super) async fn send_all(
        self: &Rc<Self>,
        session: &mut Session,
        pacer: &mut Pacer,
    ) -> bool {
        while !session.finished(&self.shared) {
            let Some(due) = self.next_due(session).await else {
                return false;
            };
            let now = self.shared.clock.now_ns();
            let intended = if due > now {
                if !self.wait_until(pacer, due).await {
                    return false;
                }
                due
            } else {
                now
            };
            if self.stopping() || !self.send_turn(session, intended).await {
                return false;
            }
        }
        true
    }

    /// Sends the session's next turn, meant for `intended_ns`, and hands its record to the
    /// aggregator; starts the children the turn spawns. `false` when the phase has no request
    /// left.
    pub(super) async fn send_turn(
        self: &Rc<Self>,
        session: &mut Session,
        intended_ns: u64,
    ) -> bool {
        // A prefill slot first (AIPerf issues the credit once it has one): its wait is part of
        // the load, not client lateness, so the request is meant to go when it gets the slot.
        let prefill = self.plan.prefill.as_deref();
        let mut intended_ns = intended_ns;
        if let Some(gate) = prefill
            && !gate.try_acquire(self.shared.clock.now_ns())
        {
            if !gate
                .acquire(|| self.shared.clock.now_ns(), || self.stopping())
                .await
            {
                return false;
            }
            intended_ns = intended_ns.max(self.shared.clock.now_ns());
        }
        let Some(index) = session.reserved_request().or_else(|| self.take_request()) else {
            if let Some(gate) = prefill {
                gate.release();
            }
            return false;
        };
        let cancel_after_ns = self
            .plan
            .cancel
            .as_ref()
            .and_then(|c| c.delay_for(self.plan.phase, index));
        self.sent.set(self.sent.get() + 1);
        #[cfg(feature = "test-hooks")]
        if let Some(stall) = self.state.test_stall {
            // The testing hook (`RINGPERF_TEST_WORKER_STALL_MS`): block the whole runtime, as
            // a worker starved of its core would be.
            std::thread::sleep(stall);
        }
        let mut rec = session
            .send_next(
                &self.shared,
                &self.state,
                (self.plan.phase, self.plan.phase_index),
                index,
                intended_ns,
                cancel_after_ns,
                self.plan.hard_deadline_ns,
                prefill,
            )
            .await;
        if self.plan.warm.is_some() {
            (self.state.warm).request_done(rec.end_ns.saturating_sub(rec.start_ns));
        }
        let (turn, end_ns) = (session.next_turn() - 1, rec.end_ns);
        rec.lineage = session.lineage();
        push(&self.state, *rec).await;
        self.spawn_children(session, turn, end_ns);
        true
    }

    /// Waits until `at_ns` or the phase's issue deadline, or less when the run stops (seen at
    /// once on a worker that listens for it, within 50 ms on one that does not). `false` when
    /// the phase stopped issuing meanwhile.
    pub(super) async fn wait_until(&self, pacer: &mut Pacer, at_ns: u64) -> bool {
        let stop = &self.state.stop;
        loop {
            if self.stopping() {
                return false;
            }
            let now = self.shared.clock.now_ns();
            if now >= at_ns {
                return true;
            }
            let mut until = at_ns.min(self.plan.issue_deadline_ns.unwrap_or(u64::MAX));
            if stop.bound().is_some() {
                until = until.min(now + STOP_POLL_NS);
            }
            monoio::select! {
                () = pacer.wait_until(&self.shared.clock, until) => {}
                () = stop.event() => {}
            }
        }
    }
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
        handles.push(monoio::spawn(closed_slot(ctx.clone())));
    }
    handles
}

/// A closed-loop slot: one conversation after another until the phase's requests, sessions or
/// time run out.
async fn closed_slot(ctx: Rc<Ctx>) {
    let mut pacer = Pacer::shared(ctx.driver, ctx.state.timers.as_ref());
    let shared = &ctx.shared;
    let mut picker =
        TemplatePicker::with_sampling(shared.dataset.root_count(), shared.seed, ctx.plan.sampling);
    while !ctx.stopping() {
        let Some(mut session) = ctx.new_session(|s| shared.dataset.root(picker.pick(s))) else {
            return;
        };
        if !ctx.send_all(&mut session, &mut pacer).await {
            return;
        }
    }
}

/// The open loop: pace every credit to its intended time, then use it as its kind says.
async fn open_loop(
    ctx: &Rc<Ctx>,
    queue: &crossbeam_queue::ArrayQueue<ringperf_wire::record::Credit>,
    fed: &std::sync::atomic::AtomicBool,
    next_ns: &std::sync::atomic::AtomicU64,
    cap: Option<usize>,
    kind: OpenKind,
) {
    let cap = cap.unwrap_or(usize::MAX).max(1);
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
        if ctx.shared.control.stopped() {
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
        while state.in_flight.get() >= cap {
            monoio::time::sleep(Duration::from_micros(100)).await;
        }
        let session = match kind {
            OpenKind::Tick => {
                let waiting = ready.borrow_mut().pop_front();
                let roots = &ctx.shared.dataset;
                match waiting.or_else(|| ctx.new_session(|s| roots.root(picker.pick(s)))) {
                    Some(s) => s,
                    // Nothing to send on this tick: every session is started and none is due.
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
                None => continue,
            },
        };
        if session.next_turn() == 0 {
            live.set(live.get() + 1);
        }
        state.in_flight.set(state.in_flight.get() + 1);
        state.warm.in_flight(state.in_flight.get());
        let (ctx, ready, live) = (ctx.clone(), ready.clone(), live.clone());
        monoio::spawn(async move {
            let mut session = session;
            let sent = ctx.send_turn(&mut session, credit.intended_ns).await;
            ctx.state.in_flight.set(ctx.state.in_flight.get() - 1);
            ctx.changed.nudge();
            if sent && !session.finished(&ctx.shared) {
                match kind {
                    OpenKind::Tick => {
                        // Due after its delay (or its branches' end); then it waits for a tick.
                        let mut pacer = Pacer::shared(ctx.driver, ctx.state.timers.as_ref());
                        if let Some(due) = ctx.next_due(&session).await
                            && ctx.wait_until(&mut pacer, due).await
                        {
                            ready.borrow_mut().push_back(session);
                            ctx.changed.nudge();
                            return;
                        }
                    }
                    OpenKind::SessionStart => run_rest(&ctx, &mut session).await,
                }
            }
            live.set(live.get() - 1);
            ctx.changed.nudge();
        });
    }
    // The last answers and later turns: looked at again each time one of them ends.
    while state.in_flight.get() > 0 || (kind == OpenKind::SessionStart && live.get() > 0) {
        ctx.changed.wait().await;
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

    /// The same for nine arguments.
    #[allow(clippy::too_many_arguments)]
    fn future_size9<A, B, C, D, E, G, H, I, J, F: std::future::Future>(
        _: impl Fn(A, B, C, D, E, G, H, I, J) -> F,
    ) -> usize {
        std::mem::size_of::<F>()
    }

    /// A turn's future is its request's plus a few words: it keeps no room for the record
    /// beside the request while the response takes (#41: 512 bytes a stream, when the record
    /// came back by value and its place was kept from the start of the await).
    #[test]
    fn a_turn_keeps_no_room_for_its_record_while_the_request_runs() {
        let turn = future_size3(Ctx::send_turn);
        let request = future_size9(Session::send_next);
        assert!(
            turn <= request + 128,
            "send_turn {turn} bytes over send_next {request}"
        );
    }
}
