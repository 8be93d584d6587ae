//! A `dag_jsonl` root's `pre_session_spawns` (docs/datasets.md): children started once a phase,
//! before any root's first turn, with no parent session, as AIPerf's orchestrator dispatches
//! them (`dispatch_pre_session_branches`: every root conversation's, sampled or not, once per
//! phase, never in a warmup). Each branch is a tree of its own on the run's first worker.

use std::rc::Rc;

use ringperf_wire::conversation::AgentParts;
use ringperf_wire::record::Phase;

use super::ctx::Ctx;
use super::session::Session;
use super::tree::Tree;

/// Starts the pre-session children of every root of the dataset: on worker 0 of shard 0 only
/// (once for the whole run), outside a warmup.
pub(super) fn start(ctx: &Rc<Ctx>) {
    if ctx.plan.phase == Phase::Warmup || ctx.state.id != 0 || ctx.plan.shard.index() != 0 {
        return;
    }
    let shared = ctx.shared.clone();
    let now = shared.clock.now_ns().max(ctx.plan.start_ns);
    for (c, conversation) in shared.dataset.conversations.iter().enumerate() {
        if conversation.parent().is_some() {
            continue;
        }
        for (b, branch) in conversation.branches().iter().enumerate() {
            if !branch.pre {
                continue;
            }
            let (c, b) = (c as u32, b as u32);
            // The branch's children count against a tree of their own, keyed by the root's
            // conversation (the node a root session has).
            let tree = Rc::new(Tree::new(ctx.branches.clone()));
            tree.start(c, b, branch.children.len() as u32, 0);
            for &child in &branch.children {
                let session =
                    Session::pre_session(&shared, &ctx.state, child, 0, tree.clone(), now);
                ctx.run_child(&tree, (c, b), session);
            }
        }
    }
}
