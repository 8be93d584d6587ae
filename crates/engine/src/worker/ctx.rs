//! What every task of one phase on one worker shares ([`Ctx`]), and how a session's turns go
//! through it: the request and session limits, the stop conditions, joins and children of
//! session trees, each turn sent and its record handed on.

use ringperf_wire::conversation::{AgentParts, AgentTurnParts};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::idle::Nudge;
use super::pacer::Pacer;
use super::session::Session;
use super::tree::{BranchCounts, ChildEnd, Tree};
use super::{CreditSource, DriverKind, IdleCap, PhasePlan, Shared, WorkerState, push};

/// Longest single wait before the stop conditions are looked at again, on a worker that does
/// not listen for the stop (the epoll driver).
const STOP_POLL_NS: u64 = 50_000_000;
/// What every task of the phase shares.
pub(super) struct Ctx {
    pub(super) shared: Arc<Shared>,
    pub(super) state: Rc<WorkerState>,
    pub(super) plan: PhasePlan,
    pub(super) driver: DriverKind,
    pub(super) sent: Cell<u64>,
    /// A request of the phase ended, or a session's later turn became due: the open loop's
    /// last wait looks again.
    pub(super) changed: Nudge,
    /// Child sessions of session trees running on this worker, and the nudge each gives as it
    /// ends.
    pub(super) children: Cell<u32>,
    pub(super) child_ended: Nudge,
    /// How the trees' branches went.
    pub(super) branches: Rc<Cell<BranchCounts>>,
    /// Under the idle cap: this worker's pending waits (their keys, [`Ctx::wait_at`]).
    pub(super) pending: RefCell<BTreeMap<u64, u32>>,
}

impl Ctx {
    /// The phase stops issuing: an early stop, or the duration (or the accelerated cache
    /// warmup) is over.
    pub(super) fn stopping(&self) -> bool {
        let now = || self.shared.clock.now_ns();
        self.shared.control.stopped()
            || self.plan.adaptive.as_ref().is_some_and(|g| g.closed())
            || self.plan.issue_deadline_ns.is_some_and(|d| now() >= d)
            || self.accel().is_some_and(|a| a.over(now()))
    }

    /// The warmup's accelerated cache warmup (`--agentic-cache-warmup-duration`), if any.
    pub(super) fn accel(&self) -> Option<&Arc<super::Accel>> {
        match &self.plan.source {
            CreditSource::Agentic(w) if w.warm => w.accel.as_ref(),
            _ => None,
        }
    }

    /// When an answer still coming is cut.
    fn hard_deadline_ns(&self) -> Option<u64> {
        self.accel()
            .map_or(self.plan.hard_deadline_ns, |a| a.cut_ns())
    }

    /// Takes the next request index (the run's, whichever shard this is), if the phase has
    /// requests left.
    pub(super) fn take_request(&self) -> Option<u64> {
        (self.plan.counters).take_request(self.plan.shard, self.plan.request_limit)
    }

    /// Starts a new session with the conversation `pick` chooses for its index (or the given
    /// one), if the phase has sessions left.
    /// Its first turn's request index is taken with it ([`PhaseCounters::start_session`]).
    pub(super) fn new_session(&self, pick: impl FnOnce(u64) -> u32) -> Option<Session> {
        let plan = &self.plan;
        let dataset = &self.shared.dataset;
        let mut conversation = 0;
        // An orchestrator's first turn sends nothing: it takes no request (AIPerf's `no_request`
        // credit), though its session counts as one.
        let (s, first) = (plan.counters).start_session_as(
            plan.shard,
            plan.session_limit,
            plan.request_limit,
            |s| {
                conversation = pick(plan.first_session + s);
                let turns = &dataset.conversations[conversation as usize].turns;
                !turns.first().is_some_and(AgentTurnParts::request_free)
            },
        )?;
        let url = (s % self.shared.urls.len() as u64) as usize;
        let mut session = Session::new(&self.shared, &self.state, conversation, url);
        session.set_ordinal(plan.first_session + s);
        if let Some(first) = first {
            session.reserve_first_request(first);
        }
        if !self.shared.dataset.conversations[conversation as usize]
            .branches()
            .is_empty()
        {
            session.root_of(Rc::new(Tree::new(self.branches.clone())));
        }
        Some(session)
    }

    /// Every request of the phase has been taken.
    pub(super) fn requests_exhausted(&self) -> bool {
        let shard = self.plan.shard;
        shard.global(self.plan.counters.requests.load(Ordering::Relaxed)) >= self.plan.request_limit
    }

    /// No new session can start and no request is left to take for a waiting one.
    pub(super) fn sessions_exhausted(&self) -> bool {
        let shard = self.plan.shard;
        shard.global(self.plan.counters.sessions.load(Ordering::Relaxed)) >= self.plan.session_limit
            || self.requests_exhausted()
    }

    /// When the session's next turn may go. A turn that joins branches of its session tree
    /// waits for their children; if it had to wait it goes at once when the last one ends,
    /// without its own delay (`Some(now)`); else `Some` of its due time. `None` when the phase
    /// stopped issuing meanwhile.
    pub(super) async fn next_due(&self, session: &Session) -> Option<u64> {
        let shared = &self.shared;
        let request_free = (shared.turn(session.conversation, session.next_turn())).request_free();
        if let Some(tree) = session.tree() {
            let joins = shared
                .turn(session.conversation, session.next_turn())
                .joins();
            if !joins.is_empty() && !tree.joined(session.node(), joins) {
                if self.requests_exhausted() {
                    // The turn would not go anyway: it is not held.
                    return None;
                }
                tree.suspend();
                let node = session.node();
                if !self.hold(tree, |t| t.joined(node, joins)).await {
                    return None;
                }
                if request_free && self.requests_exhausted() {
                    // AIPerf's suppressed join: once the phase's requests are all taken its
                    // issuer dispatches no later round (nor the last turn) of a spine.
                    return None;
                }
                tree.resume();
                if request_free {
                    return Some(shared.clock.now_ns() + self.think_ns(session));
                }
                return Some(shared.clock.now_ns());
            }
        }
        if request_free {
            // An orchestrator's round goes its think time after the round before it ended (its
            // first: after the session started), however the previous turn went.
            return Some(shared.clock.now_ns() + self.think_ns(session));
        }
        if self.accel().is_some() {
            // The accelerated cache warmup: no recorded idle.
            return Some(shared.clock.now_ns());
        }
        let mut timing = self.plan.timing;
        // A user-centric phase moving its users: the turn gap its controller set last.
        if let (Some(uc), Some(gap)) = (
            timing.user_centric.as_mut(),
            (self.plan.adaptive.as_ref()).and_then(|g| g.turn_gap_ns()),
        ) {
            *uc = uc.with_turn_gap_ns(gap as f64);
        }
        Some(session.due_ns(shared, &timing, self.plan.start_ns))
    }

    /// The think time, ns, before the session's next turn, a request-free one (the turn's
    /// delay, or a draw around it, [`super::think`]).
    fn think_ns(&self, session: &Session) -> u64 {
        let shared = &self.shared;
        let turn = session.next_turn();
        let median_ms = shared
            .turn(session.conversation, turn)
            .delay_ms
            .unwrap_or(0.0);
        let spec = shared.dataset.conversations[session.conversation as usize].think();
        let instance = session
            .ordinal()
            .map_or_else(|| session.correlation_id().to_string(), |o| o.to_string());
        let ms = super::think::think_ms(shared.seed, &instance, turn, median_ms, spec);
        (ms.max(0.0) * 1e6).round() as u64
    }

    /// Agentic replay's barriers: holds the session's next turn until every request of the
    /// other streams it waits for has ended. `Some(true)` when it had to wait (it goes at once
    /// then), `Some(false)` when it did not; `None` when the phase stopped issuing meanwhile.
    async fn clear_barriers(&self, session: &Session) -> Option<bool> {
        let Some(tree) = session.tree() else {
            return Some(false);
        };
        let turn = self.shared.turn(session.conversation, session.next_turn());
        let predecessors = turn.agent_turn().map_or(&[][..], |a| &a.predecessors);
        if tree.cleared(predecessors) {
            return Some(false);
        }
        if self.requests_exhausted() {
            return None;
        }
        self.hold(tree, |t| t.cleared(predecessors))
            .await
            .then_some(true)
    }

    /// Waits until `ready` holds of `tree` (a join, a barrier). `false` when the phase stopped
    /// issuing first.
    async fn hold(&self, tree: &Tree, ready: impl Fn(&Tree) -> bool) -> bool {
        let stop = &self.state.stop;
        loop {
            if self.stopping() {
                return false;
            }
            // The issue deadline and a stop on a worker that does not listen for it are
            // looked at every 50 ms at most.
            let now = self.shared.clock.now_ns();
            let until = (now + STOP_POLL_NS)
                .min(self.plan.issue_deadline_ns.unwrap_or(u64::MAX))
                .max(now + 1_000);
            monoio::select! {
                () = tree.until(&ready) => return true,
                () = monoio::time::sleep(Duration::from_nanos(until - now)) => {}
                () = stop.event() => {}
            }
        }
    }

    /// Starts the child sessions of the branches the turn `turn` of `session` (just answered at
    /// run-clock `end_ns`) spawns, but those [`Self::spawn_overlapping`] started while it ran:
    /// each a task of this worker, its first turn at its place in the trace after the spawn.
    pub(super) fn spawn_children(
        self: &Rc<Self>,
        session: &Session,
        turn: u32,
        end_ns: u64,
        started: &[u32],
    ) {
        // A warmup starts no children (AIPerf's orchestrator spawns in profiling only), but
        // agentic replay's, which primes the live subagents of its trees.
        if self.plan.phase == ringperf_wire::record::Phase::Warmup
            && !matches!(self.plan.source, CreditSource::Agentic(_))
        {
            return;
        }
        let shared = &self.shared;
        let spawns = shared.turn(session.conversation, turn).spawns();
        let rest: Vec<u32> = (spawns.iter().copied())
            .filter(|b| !started.contains(b))
            .collect();
        self.start_branches(session, &rest, end_ns, None);
    }

    /// AIPerf's overlap at issue: a subagent the trace records as starting before its spawning
    /// request ended (the branch's start before the turn's time plus its recorded `api_time`)
    /// starts while that request runs, each child at its first request's place after the
    /// request's start (from `issue_ns`, when the request is meant to go). Only a tree's root
    /// spawns so, outside a warmup. Returns the branches started.
    pub(super) fn spawn_overlapping(
        self: &Rc<Self>,
        session: &mut Session,
        issue_ns: u64,
    ) -> Vec<u32> {
        // Most turns are no tree root's: nothing to look up, nothing cloned.
        if session.tree().is_none() || session.is_child() {
            return Vec::new();
        }
        let shared = self.shared.clone();
        let (c, turn) = (session.conversation, session.next_turn());
        let t = shared.turn(c, turn);
        let warm =
            self.plan.phase == ringperf_wire::record::Phase::Warmup && self.accel().is_none();
        let (Some(start_ms), Some(api_ms)) =
            (t.timestamp_ms, t.agent_turn().and_then(|a| a.api_time_ms))
        else {
            return Vec::new();
        };
        if warm || api_ms <= 0.0 {
            return Vec::new();
        }
        let conversation = &shared.dataset.conversations[c as usize];
        let overlapping: Vec<u32> = (t.spawns().iter().copied())
            .filter(|&b| {
                conversation
                    .branches()
                    .get(b as usize)
                    .and_then(|branch| branch_start_ms(&shared, branch))
                    .is_some_and(|s| s < start_ms + api_ms)
            })
            .collect();
        if !overlapping.is_empty() {
            // The tree's marker first: the children copy it.
            session.mint_marker(&shared);
            self.start_branches(session, &overlapping, issue_ns, Some(start_ms));
        }
        overlapping
    }

    /// Starts the children of `branches` of `session`'s turn, from run-clock `origin_ns`: each
    /// child's first request after its first turn's trace time less `origin_ms` (the spawning
    /// request's start), else less the branch's start; at once when either is unknown.
    fn start_branches(
        self: &Rc<Self>,
        session: &Session,
        branches: &[u32],
        origin_ns: u64,
        origin_ms: Option<f64>,
    ) {
        let Some(tree) = session.tree() else {
            return;
        };
        let shared = &self.shared;
        let c = session.conversation;
        let conversation = &shared.dataset.conversations[c as usize];
        for &b in branches {
            let Some(branch) = conversation.branches().get(b as usize) else {
                continue;
            };
            let from = origin_ms.or(branch.start_ms);
            let accel = self.accel().is_some();
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
                    match (first, from) {
                        (Some(t), Some(s)) if t > s && !accel => ((t - s) * 1e6).round() as u64,
                        _ => 0,
                    }
                })
                .collect();
            let delayed = offsets.iter().filter(|&&o| o > 0).count() as u32;
            tree.start(session.node(), b, branch.children.len() as u32, delayed);
            for (&child, offset) in branch.children.iter().zip(offsets) {
                let mut child_session = Session::child(
                    shared,
                    &self.state,
                    child,
                    session,
                    origin_ns.saturating_add(offset),
                )
                .in_branch(b);
                if branch.fork {
                    child_session.inherit_context(shared, session);
                }
                self.run_child(tree, (session.node(), b), child_session);
            }
        }
    }

    /// Runs the child session `child` of branch `b` of the session of node `c` as a task of this
    /// worker: every turn left, each when due; its end is the tree's and the phase's to know.
    pub(super) fn run_child(
        self: &Rc<Self>,
        tree: &Rc<Tree>,
        (c, b): (u32, u32),
        mut child: Session,
    ) {
        self.children.set(self.children.get() + 1);
        tree.place(child.conversation, child.place());
        let (ctx, tree) = (self.clone(), tree.clone());
        // The child is captured and used in place: a `let` of it inside would keep it twice.
        let task: std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> = Box::pin(async move {
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
    #[allow(clippy::manual_async_fn)] // an `async fn` keeps its arguments twice (#41)
    pub(super) fn send_all(
        self: &Rc<Self>,
        session: &mut Session,
        pacer: &mut Pacer,
    ) -> impl Future<Output = bool> {
        async move {
            while !session.finished(&self.shared) {
                // The wait for the turn is a future of its own: the times it computes are not
                // kept beside the turn's request for as long as the response takes (#41).
                let Some(intended) = self.turn_due(session, pacer).await else {
                    return false;
                };
                if self.stopping() || !self.send_turn(session, intended).await {
                    return false;
                }
            }
            true
        }
    }

    /// Waits until the session's next turn is due and its barriers are clear; the time the
    /// turn is meant to go. `None` when the phase stopped issuing meanwhile.
    async fn turn_due(&self, session: &mut Session, pacer: &mut Pacer) -> Option<u64> {
        let due = self.next_due(session).await?;
        let now = self.shared.clock.now_ns();
        let intended = if due > now {
            let base = session.due_from_start().then_some(0);
            self.wait_at(pacer, due, base).await?
        } else {
            now
        };
        Some(match self.clear_barriers(session).await? {
            true => self.shared.clock.now_ns(),
            false => intended,
        })
    }

    /// Sends the session's next turn, meant for `intended_ns`, and hands its record to the
    /// aggregator; starts the children the turn spawns. `false` when the phase has no request
    /// left.
    #[allow(clippy::manual_async_fn)] // an `async fn` keeps its arguments twice (#41)
    pub(super) fn send_turn(
        self: &Rc<Self>,
        session: &mut Session,
        intended_ns: u64,
    ) -> impl Future<Output = bool> {
        async move {
            if (self.shared.turn(session.conversation, session.next_turn())).request_free() {
                self.pass_turn(session);
                return true;
            }
            // Its own future: what the turn's start keeps (its prefill wait, the request's index
            // and time) is not kept beside the request's future for as long as the response
            // takes (#41: 40 bytes of every streaming task).
            // The request's index and time are gone once it is made (in a `match` arm, not
            // bindings of the whole block, which the task would keep beside the request), and
            // the request is moved whole into its future (a `Result` taken apart by a pattern
            // would keep its room, 176 bytes, beside it): the task keeps the request's own
            // future while the response takes. Its record comes back boxed (a record awaited
            // by value keeps its room, 464 bytes, from the start of the request).
            let (started, mut out) = match self.begin_turn(session, intended_ns).await {
                None => return false,
                Some((index, intended_ns)) => {
                    // Boxed (a word when empty): kept beside the request until its children
                    // start.
                    let started = self
                        .spawn_overlapping(session, intended_ns)
                        .into_boxed_slice();
                    match session.next_request(
                        &self.shared,
                        &self.state,
                        (self.plan.phase, self.plan.phase_index),
                        index,
                        intended_ns,
                        self.plan
                            .cancel
                            .as_ref()
                            .and_then(|c| c.delay_for(self.plan.phase, index)),
                        self.plan.prefill.as_deref(),
                    ) {
                        Ok(out) => (started, out),
                        Err(unsent) => return self.turn_ended(session, unsent, started).await,
                    }
                }
            };
            out.pool = session.sticky_pool();
            let rec =
                super::client::send(&self.shared, &self.state, out, self.hard_deadline_ns()).await;
            session.turn_done(&self.shared, &rec);
            self.turn_ended(session, rec, started).await
        }
    }

    /// The turn's record `rec` is in (its request sent, or not sent because it could not be
    /// made): it goes to the aggregator, and the children the turn spawns start (but those in
    /// `started`, started while it ran). `true`, as [`Ctx::send_turn`] returns.
    async fn turn_ended(
        self: &Rc<Self>,
        session: &mut Session,
        mut rec: Box<ringperf_wire::record::RawRecord>,
        started: Box<[u32]>,
    ) -> bool {
        if let Some(c) = &self.plan.idle_cap {
            c.request(false);
        }
        if self.plan.warm.is_some() {
            (self.state.warm).request_done(rec.end_ns.saturating_sub(rec.start_ns));
        }
        let (turn, end_ns) = (session.next_turn() - 1, rec.end_ns);
        let c = session.conversation;
        if let Some(tree) = session.tree() {
            tree.ended(c, turn);
        }
        // Agentic replay: a prompt over the model's context ends the trajectory (every later
        // turn's prompt is longer still), as AIPerf ends it; its tree finishes without it.
        if let CreditSource::Agentic(w) = &self.plan.source
            && !w.warm
            && !session.finished(&self.shared)
            && rec.error.as_ref().is_some_and(|e| {
                ringperf_metrics::aggregate::accumulator::is_context_overflow(&e.message)
            })
        {
            session.end_here();
            // Nothing waits for requests that will never go: a subagent's later turns, or,
            // when the root ends, whatever the streams it would have started were to send.
            if let Some(tree) = session.tree() {
                if session.is_child() {
                    let turns = self.shared.dataset.conversations[c as usize].turns.len();
                    tree.abandoned(c, turn + 1..turns as u32);
                } else {
                    tree.lift_barriers();
                }
            }
        }
        if let Some(tree) = session.tree() {
            let mut place = session.place();
            if session.finished(&self.shared) {
                place.next = u32::MAX;
            }
            tree.place(c, place);
        }
        rec.lineage = session.lineage();
        push(&self.state, rec).await;
        self.spawn_children(session, turn, end_ns, &started);
        true
    }

    /// A turn's start: its prefill slot (AIPerf issues the credit once it has one: its wait is
    /// part of the load, not client lateness, so the request is meant to go when it gets the
    /// slot), then its request. The request's index and the time it is meant to go; `None`
    /// when the phase has no request left (or stopped while the turn waited for its slot).
    async fn begin_turn(&self, session: &mut Session, intended_ns: u64) -> Option<(u64, u64)> {
        let prefill = self.plan.prefill.as_deref();
        let mut intended_ns = intended_ns;
        if let Some(gate) = prefill
            && !gate.try_acquire(self.shared.clock.now_ns())
        {
            if !gate
                .acquire(|| self.shared.clock.now_ns(), || self.stopping())
                .await
            {
                return None;
            }
            intended_ns = intended_ns.max(self.shared.clock.now_ns());
        }
        let Some(index) = session.reserved_request().or_else(|| self.take_request()) else {
            if let Some(gate) = prefill {
                gate.release();
            }
            return None;
        };
        self.sent.set(self.sent.get() + 1);
        #[cfg(feature = "test-hooks")]
        if let Some(stall) = self.state.test_stall {
            // The testing hook (`RINGPERF_TEST_WORKER_STALL_MS`): block the whole runtime, as
            // a worker starved of its core would be.
            std::thread::sleep(stall);
        }
        if let Some(c) = &self.plan.idle_cap {
            c.request(true);
        }
        if self.accel().is_some() {
            session.one_token();
        }
        Some((index, intended_ns))
    }

    /// The session's next turn, a request-free one (an orchestrator's round), is done now: it
    /// sends nothing and takes no request; the children it spawns start at once.
    fn pass_turn(self: &Rc<Self>, session: &mut Session) {
        let shared = self.shared.clone();
        let now = shared.clock.now_ns();
        let (c, turn) = (session.conversation, session.next_turn());
        // The tree's `--cache-bust` marker first: the children copy it.
        session.mint_marker(&shared);
        session.pass_turn(now);
        if let Some(tree) = session.tree() {
            tree.ended(c, turn);
            let mut place = session.place();
            if session.finished(&shared) {
                place.next = u32::MAX;
            }
            tree.place(c, place);
            // AIPerf's graph counts: a terminal gate is a request-free turn that spawns nothing.
            let spawns = shared.turn(c, turn).spawns();
            tree.graph(turn == 0, spawns.is_empty());
        }
        self.spawn_children(session, turn, now, &[]);
    }

    /// Waits until `at_ns` or the phase's issue deadline, or less when the run stops (seen at
    /// once on a worker that listens for it, within 50 ms on one that does not). `false` when
    /// the phase stopped issuing meanwhile.
    pub(super) async fn wait_until(&self, pacer: &mut Pacer, at_ns: u64) -> bool {
        self.wait_at(pacer, at_ns, None).await.is_some()
    }

    /// [`Self::wait_until`], returning the instant waited for: `at_ns`, or earlier when the
    /// system-idle cap brought the wait forward meanwhile. `base`: the cap's shift when the
    /// wait's time was fixed (0: at the phase's start); `None`: now.
    pub(super) async fn wait_at(
        &self,
        pacer: &mut Pacer,
        at_ns: u64,
        base: Option<u64>,
    ) -> Option<u64> {
        let stop = &self.state.stop;
        // Under the idle cap the wait is kept as `at + shift when its time was fixed`: a later
        // shift brings it forward, an earlier one does not.
        let cap = self.plan.idle_cap.as_deref();
        let key = at_ns.saturating_add(base.unwrap_or_else(|| cap.map_or(0, IdleCap::shift)));
        let _pending = cap.map(|_| Pending::new(self, key));
        loop {
            let at = key.saturating_sub(cap.map_or(0, IdleCap::shift));
            if self.stopping() {
                return None;
            }
            let now = self.shared.clock.now_ns();
            if now >= at {
                return Some(at);
            }
            let mut until = at.min(self.plan.issue_deadline_ns.unwrap_or(u64::MAX));
            if stop.bound().is_some() {
                until = until.min(now + STOP_POLL_NS);
            }
            monoio::select! {
                () = pacer.wait_until(&self.shared.clock, until) => {}
                () = stop.event() => {}
            }
        }
    }

    /// The idle cap's record of this worker's pending waits changed: its earliest is published.
    fn publish_pending(&self) {
        if let Some(cap) = &self.plan.idle_cap {
            let first = self.pending.borrow().keys().next().copied();
            cap.publish(usize::from(self.state.id), first.unwrap_or(u64::MAX));
        }
    }
}

/// A wait registered with the idle cap while it lasts.
struct Pending<'a> {
    ctx: &'a Ctx,
    key: u64,
}

impl<'a> Pending<'a> {
    fn new(ctx: &'a Ctx, key: u64) -> Self {
        *ctx.pending.borrow_mut().entry(key).or_default() += 1;
        ctx.publish_pending();
        Self { ctx, key }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        {
            let mut p = self.ctx.pending.borrow_mut();
            if let Some(n) = p.get_mut(&self.key) {
                *n -= 1;
                if *n == 0 {
                    p.remove(&self.key);
                }
            }
        }
        self.ctx.publish_pending();
    }
}

/// A branch's trace start: its own, else its children's earliest first request (AIPerf's
/// fallback).
fn branch_start_ms(shared: &Shared, branch: &ringperf_wire::conversation::Branch) -> Option<f64> {
    branch.start_ms.or_else(|| {
        (branch.children.iter())
            .filter_map(|&c| {
                let conv = shared.dataset.conversations.get(c as usize)?;
                conv.turns.first()?.timestamp_ms
            })
            .reduce(f64::min)
    })
}
