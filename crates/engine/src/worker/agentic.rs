//! Agentic replay on one worker (docs/timing.md, "Agentic replay"). Each lane is one concurrency
//! slot holding a session tree: its root and the subagents alive at the lane's `t*`.
//!
//! - Warmup: every session of the lane that had sent a turn before `t*` sends that turn again,
//!   with the turns before it as its history, at its place in the warmup's schedule.
//! - Profiling: every session goes on from its first turn at or after `t*`, at its offset (a
//!   root waiting for subagents goes when they have finished); later turns and subagents go as
//!   the trace says. When the whole tree has finished, the lane starts the next root the
//!   sampler draws, from its first turn, and so on until the phase stops issuing.
//!
//! A lane's tree lives on this worker; its subagents take no slot of their own.

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use ringperf_wire::conversation::AgentParts;
use ringperf_workload::schedule::TemplatePicker;

use super::ctx::Ctx;
use super::pacer::Pacer;
use super::session::Session;
use super::tree::Tree;
use super::{AgenticLane, AgenticStream, AgenticWork, Shared};

/// The requests of `root`'s trace (it and every session it starts, at any depth) the trace
/// shows before `t_star_ms`: each stream's turns before its first at or after it (all of a
/// stream whose turns are all before it). None for a trace without times.
fn ended_before(shared: &Shared, root: u32, t_star_ms: Option<f64>) -> Vec<(u32, u32)> {
    let Some(t_star) = t_star_ms else {
        return Vec::new();
    };
    let conversations = &shared.dataset.conversations;
    let mut ended = Vec::new();
    let mut stack = vec![root];
    let mut seen = std::collections::HashSet::new();
    while let Some(c) = stack.pop() {
        let Some(conv) = conversations.get(c as usize).filter(|_| seen.insert(c)) else {
            continue;
        };
        let before = (conv.turns.iter())
            .position(|t| t.timestamp_ms.is_some_and(|ts| ts >= t_star))
            .unwrap_or(conv.turns.len());
        ended.extend((0..before as u32).map(|t| (c, t)));
        stack.extend(
            conv.branches()
                .iter()
                .flat_map(|b| b.children.iter().copied()),
        );
    }
    ended
}

/// Runs this worker's lanes of the phase to their end.
pub(super) async fn run(ctx: &Rc<Ctx>, work: &Arc<AgenticWork>) {
    let mut handles = Vec::new();
    for lane in &work.lanes {
        if work.warm {
            for s in &lane.streams {
                let task = warm(ctx.clone(), lane.index, s.clone());
                handles.push(monoio::spawn(task));
            }
        } else {
            let task = profile(ctx.clone(), work.clone(), lane.clone());
            handles.push(monoio::spawn(task));
        }
    }
    for h in handles {
        h.await;
    }
}

/// The base URL of lane `index` (lanes go round the URLs as sessions do).
fn url_of(ctx: &Ctx, index: u32) -> usize {
    index as usize % ctx.shared.urls.len().max(1)
}

/// Warmup: the stream's turn before `t*`, as the start of a session whose history is the turns
/// before it.
async fn warm(ctx: Rc<Ctx>, lane: u32, s: AgenticStream) {
    let mut pacer = Pacer::shared(ctx.driver, ctx.state.timers.as_ref());
    let Some(at) = ctx
        .wait_at(
            &mut pacer,
            ctx.plan.start_ns + s.at_ns.unwrap_or(0),
            Some(0),
        )
        .await
    else {
        return;
    };
    let url = url_of(&ctx, lane);
    let mut session = Session::new(&ctx.shared, &ctx.state, s.conversation, url).with_id(s.id);
    session.set_marker(s.marker);
    session.resume_at(&ctx.shared, s.turn);
    session.one_token();
    ctx.send_turn(&mut session, at).await;
}

/// Profiling: the lane's first tree from `t*`, then one tree after another.
async fn profile(ctx: Rc<Ctx>, work: Arc<AgenticWork>, lane: AgenticLane) {
    let shared = ctx.shared.clone();
    let start = ctx.plan.start_ns;
    let url = url_of(&ctx, lane.index);
    let tree = Rc::new(Tree::new(ctx.branches.clone()));
    // The barriers between its streams: what the trace had ended before t* has ended.
    tree.hold_barriers(ended_before(&shared, lane.root, lane.t_star_ms));
    let root_stream = lane.streams.iter().find(|s| s.branch.is_none());
    let mut root = Session::new(&shared, &ctx.state, lane.root, url);
    if let Some(s) = root_stream {
        root = root.with_id(s.id);
    }
    // The tree's marker (each stream carries it): the subagents made below copy the root's.
    if let Some(s) = lane.streams.first() {
        root.set_marker(s.marker);
    }
    root.root_of(tree.clone());
    // Every subagent alive at t* is running before the root looks at its joins.
    for s in &lane.streams {
        if let Some(b) = s.branch {
            tree.start(lane.root, b, 1, 0);
        }
    }
    for s in &lane.streams {
        let Some(b) = s.branch else {
            continue;
        };
        let at = start + s.at_ns.unwrap_or(0);
        let mut child =
            Session::child(&shared, &ctx.state, s.conversation, &root, at).with_id(s.id);
        child.set_marker(s.marker);
        child.first_due_at(at);
        child.resume_at(&shared, s.turn);
        ctx.run_child(&tree, (lane.root, b), child);
    }
    let mut pacer = Pacer::shared(ctx.driver, ctx.state.timers.as_ref());
    if let Some(s) = root_stream {
        root.resume_at(&shared, s.turn);
        // A root waiting for its subagents goes when they have finished (its join).
        root.first_due_at(s.at_ns.map_or(0, |a| start + a));
        if !ctx.send_all(&mut root, &mut pacer).await {
            tree.drained().await;
            return;
        }
    }
    tree.drained().await;
    let mut picker =
        TemplatePicker::with_sampling(shared.dataset.root_count(), shared.seed, ctx.plan.sampling);
    let pool = shared.dataset.root_count().max(1);
    while !ctx.stopping() {
        // The next root with a turn to send (one pass over the roots at most).
        let next = (0..pool).find_map(|_| {
            let draw = work.draws.fetch_add(1, Ordering::Relaxed);
            let c = shared.dataset.root(picker.pick(draw));
            (!shared.dataset.conversations[c as usize].turns.is_empty()).then_some(c)
        });
        let Some(next) = next else {
            return;
        };
        let Some(mut session) = ctx.new_session(|_| next) else {
            return;
        };
        if let Some(t) = session.tree() {
            t.hold_barriers([]);
        }
        let went = ctx.send_all(&mut session, &mut pacer).await;
        if let Some(t) = session.tree() {
            t.clone().drained().await;
        }
        if !went {
            return;
        }
    }
}
