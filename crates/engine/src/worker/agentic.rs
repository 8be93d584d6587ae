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

use ringperf_workload::schedule::TemplatePicker;

use super::ctx::Ctx;
use super::pacer::Pacer;
use super::session::Session;
use super::tree::Tree;
use super::{Accel, AgenticLane, AgenticStream, AgenticWork, Handoff, HandoffStream, Shared};

/// Runs this worker's lanes of the phase to their end.
pub(super) async fn run(ctx: &Rc<Ctx>, work: &Arc<AgenticWork>) {
    let mut handles = Vec::new();
    if work.warm {
        for lane in &work.lanes {
            for s in &lane.streams {
                let task = warm(ctx.clone(), lane.index, s.clone(), work.accel.clone());
                handles.push(monoio::spawn(task));
            }
        }
        if let Some(accel) = &work.accel {
            for lane in &work.resume {
                let task = accelerate(ctx.clone(), work.clone(), lane.clone(), accel.clone());
                handles.push(monoio::spawn(task));
            }
        }
    } else {
        for lane in &work.lanes {
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
async fn warm(ctx: Rc<Ctx>, lane: u32, s: AgenticStream, accel: Option<Arc<Accel>>) {
    prime(&ctx, lane, s).await;
    if let Some(a) = accel {
        a.priming_left.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The priming request of stream `s` of lane `lane`.
async fn prime(ctx: &Rc<Ctx>, lane: u32, s: AgenticStream) {
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
    let url = url_of(ctx, lane);
    let mut session = Session::new(&ctx.shared, &ctx.state, s.conversation, url).with_id(s.id);
    session.set_marker(s.marker);
    session.resume_at(&ctx.shared, s.turn);
    session.one_token();
    ctx.send_turn(&mut session, at).await;
}

/// The accelerated cache warmup of a lane, once every priming request of the phase has been
/// answered (the stage starts together on every worker): its tree from where profiling would
/// resume it, then tree after tree, with no recorded idle and one output token a request,
/// until the stage ends; where its sessions are then is handed to the profiling phase.
async fn accelerate(ctx: Rc<Ctx>, work: Arc<AgenticWork>, lane: AgenticLane, accel: Arc<Accel>) {
    while accel.priming_left.load(Ordering::Acquire) > 0 {
        if ctx.shared.control.stopped() {
            return;
        }
        monoio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    accel.start(ctx.shared.clock.now_ns());
    let handoff = run_lane(&ctx, &work, &lane, true).await;
    accel.hand_off(lane.index, handoff);
}

/// Profiling: the lane's first tree from `t*` (or from where the accelerated cache warmup left
/// it), then one tree after another.
async fn profile(ctx: Rc<Ctx>, work: Arc<AgenticWork>, lane: AgenticLane) {
    run_lane(&ctx, &work, &lane, false).await;
}

/// A lane's trees until the phase stops issuing (`accel`: at once, each turn as soon as the
/// last is answered); where the last tree's sessions are then.
async fn run_lane(
    ctx: &Rc<Ctx>,
    work: &Arc<AgenticWork>,
    lane: &AgenticLane,
    accel: bool,
) -> Handoff {
    let shared = ctx.shared.clone();
    let start = ctx.plan.start_ns;
    let url = url_of(ctx, lane.index);
    let tree = Rc::new(Tree::new(ctx.branches.clone()));
    // The barriers between its streams: what the trace had ended before t* has ended.
    tree.hold_barriers(lane.ended.iter().copied());
    if accel {
        tree.track_places();
    }
    let mut current = (lane.root, tree.clone());
    let due = |at_ns: Option<u64>| {
        if accel {
            shared.clock.now_ns()
        } else {
            at_ns.map_or(0, |a| start + a)
        }
    };
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
        let at = due(s.at_ns);
        let mut child = Session::child(&shared, &ctx.state, s.conversation, &root, at)
            .with_id(s.id)
            .in_branch(b);
        child.set_marker(s.marker);
        child.first_due_at(at);
        child.resume_at(&shared, s.turn);
        ctx.run_child(&tree, (lane.root, b), child);
    }
    let mut pacer = Pacer::shared(ctx.driver, ctx.state.timers.as_ref());
    let went = match root_stream {
        Some(s) => {
            root.resume_at(&shared, s.turn);
            // A root waiting for its subagents goes when they have finished (its join).
            root.first_due_at(due(s.at_ns));
            tree.place(lane.root, root.place());
            ctx.send_all(&mut root, &mut pacer).await
        }
        None => true,
    };
    tree.drained().await;
    if went {
        let mut picker = TemplatePicker::with_sampling(
            shared.dataset.root_count(),
            shared.seed,
            ctx.plan.sampling,
        );
        let pool = shared.dataset.root_count().max(1);
        while !ctx.stopping() {
            // The next root with a turn to send (one pass over the roots at most).
            let next = (0..pool).find_map(|_| {
                let draw = work.draws.fetch_add(1, Ordering::Relaxed);
                let c = shared.dataset.root(picker.pick(draw));
                (!shared.dataset.conversations[c as usize].turns.is_empty()).then_some(c)
            });
            let Some(next) = next else {
                break;
            };
            let Some(mut session) = ctx.new_session(|_| next) else {
                break;
            };
            if let Some(t) = session.tree() {
                t.hold_barriers([]);
                if accel {
                    t.track_places();
                    t.place(next, session.place());
                }
                current = (next, t.clone());
            }
            let went = ctx.send_all(&mut session, &mut pacer).await;
            if let Some(t) = session.tree() {
                t.clone().drained().await;
            }
            if !went {
                break;
            }
        }
    }
    handoff(&shared, current.0, &current.1)
}

/// Where the sessions of the tree of `root` are: each with a turn left.
fn handoff(shared: &Shared, root: u32, tree: &Tree) -> Handoff {
    let streams = (tree.places().into_iter())
        .filter(|(c, p)| (p.next as usize) < shared.turns_of(*c))
        .map(|(c, p)| HandoffStream {
            conversation: c,
            turn: p.next,
            last_end_ns: p.last_end_ns,
            branch: p.branch,
            id: p.id,
            marker: p.marker,
        })
        .collect();
    Handoff {
        root,
        streams,
        ended: tree.ended_so_far(),
    }
}
