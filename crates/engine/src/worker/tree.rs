//! A session tree (agent traces, docs/datasets.md, `weka_trace`): a root conversation whose
//! turns start child sessions (subagents) as they complete, and later turns that wait for them.
//! The whole tree lives on the root's worker: the children are tasks of that worker, and a join
//! is a count of the children of a branch still running, kept here.
//!
//! Only the root holds a concurrency slot or a new-session index; each child turn takes a
//! request index like any other, so `--request-count` bounds the tree's requests too.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::task::{Poll, Waker};

/// What the tree's sessions share: the children of each branch still running, by the session
/// that started them (its node: the root's conversation index, a child's [`Tree::new_node`]),
/// and under agentic replay the requests that have ended (its barriers).
#[derive(Debug, Default)]
pub(crate) struct Tree {
    /// `(node, branch)` → children of the branch started and not yet finished.
    running: RefCell<HashMap<(u32, u32), u32>>,
    /// Tasks waiting for a join, a barrier or the drain, woken whenever a child finishes or a
    /// barrier's request ends.
    waiters: RefCell<Vec<Waker>>,
    /// Agentic replay's barriers are held ([`Self::hold_barriers`]).
    barriers: Cell<bool>,
    /// `(conversation, turn)` of every request that has ended, or that the trace had ended
    /// before the lane's `t*`, or that will never be sent.
    ended: RefCell<HashSet<(u32, u32)>>,
    /// The accelerated cache warmup: where each session of the tree is, by conversation.
    places: RefCell<Option<BTreeMap<u32, Place>>>,
    /// The phase's counts, which every tree of the worker adds to.
    counts: Rc<Cell<BranchCounts>>,
    /// The next child session's node (counting down from `u32::MAX`, clear of the root's,
    /// which is its conversation's index): joins are a session's, not a conversation's (one
    /// conversation may run twice in a tree, `dag_jsonl`'s spawn templates).
    next_node: Cell<u32>,
}

/// Where a session of the tree is: what the accelerated cache warmup hands to profiling.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Place {
    /// The next turn it sends.
    pub next: u32,
    /// Run-clock ns when its last answer ended (0: it sent nothing yet).
    pub last_end_ns: u64,
    /// Its branch of the session that started it (`None`: the root). Agentic replay's trees
    /// are one level deep: the root's.
    pub branch: Option<u32>,
    pub id: uuid::Uuid,
    pub marker: Option<ringperf_workload::workload::cache_bust::Marker>,
}

/// How the tree's branches went (summed over the run into AIPerf's `branch_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BranchCounts {
    /// Child sessions that sent their first turn.
    pub children_spawned: u64,
    /// Child sessions that sent every turn, none of them failed.
    pub children_completed: u64,
    /// Child sessions that sent every turn, one of them or more failed.
    pub children_errored: u64,
    /// Child sessions cut short because the phase stopped issuing (requests, time, a stop).
    pub children_truncated: u64,
    /// Child sessions whose first turn waited for its place in the trace after the spawn.
    pub children_delayed: u64,
    /// Turns that had to wait for a branch's children before they could go.
    pub parents_suspended: u64,
    /// Of those, the turns that went when the children had finished.
    pub parents_resumed: u64,
    /// Orchestrator instances that passed their first (request-free) turn.
    pub graphs_admitted: u64,
    /// Orchestrator instances that passed their last turn after every round.
    pub graphs_completed_to_end: u64,
}

impl BranchCounts {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &BranchCounts) {
        self.children_spawned += other.children_spawned;
        self.children_completed += other.children_completed;
        self.children_errored += other.children_errored;
        self.children_truncated += other.children_truncated;
        self.children_delayed += other.children_delayed;
        self.parents_suspended += other.parents_suspended;
        self.parents_resumed += other.parents_resumed;
        self.graphs_admitted += other.graphs_admitted;
        self.graphs_completed_to_end += other.graphs_completed_to_end;
    }

    /// AIPerf's `branch_stats` fields and values, in its order (the error-propagation and
    /// suppressed-join counts are 0: ringperf does not keep them).
    pub fn fields(&self) -> [(&'static str, u64); 11] {
        [
            ("children_spawned", self.children_spawned),
            ("children_completed", self.children_completed),
            ("children_errored", self.children_errored),
            ("children_truncated", self.children_truncated),
            ("children_delayed", self.children_delayed),
            ("parents_suspended", self.parents_suspended),
            ("parents_resumed", self.parents_resumed),
            ("parents_failed_due_to_child_error", 0),
            ("joins_suppressed", 0),
            ("graphs_admitted", self.graphs_admitted),
            ("graphs_completed_to_end", self.graphs_completed_to_end),
        ]
    }
}

impl Tree {
    /// A tree adding its counts to `counts`.
    pub fn new(counts: Rc<Cell<BranchCounts>>) -> Self {
        Self {
            counts,
            next_node: Cell::new(u32::MAX),
            ..Self::default()
        }
    }

    /// A node for a new child session of the tree (its branches and joins are keyed by it).
    pub fn new_node(&self) -> u32 {
        let n = self.next_node.get();
        self.next_node.set(n.saturating_sub(1));
        n
    }

    /// `children` sessions of branch `branch` of conversation `conversation` start, `delayed`
    /// of them after a wait.
    pub fn start(&self, conversation: u32, branch: u32, children: u32, delayed: u32) {
        *self
            .running
            .borrow_mut()
            .entry((conversation, branch))
            .or_default() += children;
        self.count(|c| c.children_delayed += u64::from(delayed));
    }

    /// One child of the branch finished: how it went; wakes the waiters.
    pub fn end(&self, conversation: u32, branch: u32, child: ChildEnd) {
        if let Some(n) = self.running.borrow_mut().get_mut(&(conversation, branch)) {
            *n = n.saturating_sub(1);
        }
        self.count(|c| {
            c.children_spawned += u64::from(child.sent > 0);
            match (child.finished, child.failed) {
                (true, false) => c.children_completed += 1,
                (true, true) => c.children_errored += 1,
                (false, _) => c.children_truncated += 1,
            }
        });
        self.wake();
    }

    /// Every child of each branch in `joins` (of `conversation`) has finished; a branch never
    /// started (its turn was not sent) has none running.
    pub fn joined(&self, conversation: u32, joins: &[u32]) -> bool {
        let running = self.running.borrow();
        joins
            .iter()
            .all(|&b| running.get(&(conversation, b)).is_none_or(|&n| n == 0))
    }

    /// A turn is held for a join (counted once per held turn).
    pub fn suspend(&self) {
        self.count(|c| c.parents_suspended += 1);
    }

    /// A held turn goes: its branches' children have finished.
    pub fn resume(&self) {
        self.count(|c| c.parents_resumed += 1);
    }

    /// An orchestrator instance passed a request-free turn: its first (`first`), or its last,
    /// which spawns nothing (`last`: the instance went through every round).
    pub fn graph(&self, first: bool, last: bool) {
        self.count(|c| {
            c.graphs_admitted += u64::from(first);
            c.graphs_completed_to_end += u64::from(last);
        });
    }

    /// Agentic replay: from now on a request waits for its predecessors ([`Self::cleared`]);
    /// `ended` are the requests the trace had ended before the lane's `t*`.
    pub fn hold_barriers(&self, ended: impl IntoIterator<Item = (u32, u32)>) {
        self.barriers.set(true);
        self.ended.borrow_mut().extend(ended);
    }

    /// Request `turn` of `conversation` ended (however it went): the requests waiting for it
    /// may go.
    pub fn ended(&self, conversation: u32, turn: u32) {
        if self.barriers.get() {
            self.ended.borrow_mut().insert((conversation, turn));
            self.wake();
        }
    }

    /// Requests `turns` of `conversation` will never be sent (its session ended early): nothing
    /// waits for them.
    pub fn abandoned(&self, conversation: u32, turns: std::ops::Range<u32>) {
        if self.barriers.get() {
            self.ended
                .borrow_mut()
                .extend(turns.map(|t| (conversation, t)));
            self.wake();
        }
    }

    /// The barriers are lifted (the root's trajectory ended early: the requests of streams it
    /// would have started are never sent).
    pub fn lift_barriers(&self) {
        if self.barriers.replace(false) {
            self.wake();
        }
    }

    /// Every predecessor of a request has ended, or no barrier is held.
    pub fn cleared(&self, predecessors: &[(u32, u32)]) -> bool {
        if !self.barriers.get() || predecessors.is_empty() {
            return true;
        }
        let ended = self.ended.borrow();
        predecessors.iter().all(|p| ended.contains(p))
    }

    /// From now on the tree keeps where each of its sessions is ([`Self::place`]).
    pub fn track_places(&self) {
        self.places.borrow_mut().get_or_insert_with(BTreeMap::new);
    }

    /// The session of `conversation` is at `place` (kept when [`Self::track_places`]).
    pub fn place(&self, conversation: u32, place: Place) {
        if let Some(p) = self.places.borrow_mut().as_mut() {
            p.insert(conversation, place);
        }
    }

    /// Where each session is, by conversation.
    pub fn places(&self) -> Vec<(u32, Place)> {
        (self.places.borrow().iter())
            .flat_map(|p| p.iter().map(|(c, p)| (*c, *p)))
            .collect()
    }

    /// The requests that have ended so far (under the barriers), in order.
    pub fn ended_so_far(&self) -> Vec<(u32, u32)> {
        let mut v: Vec<(u32, u32)> = self.ended.borrow().iter().copied().collect();
        v.sort_unstable();
        v
    }

    /// Ready once `ready` holds of the tree, looked at again whenever a child finishes or a
    /// request ends.
    pub async fn until(&self, ready: impl Fn(&Tree) -> bool) {
        std::future::poll_fn(|cx| {
            if ready(self) {
                return Poll::Ready(());
            }
            self.waiters.borrow_mut().push(cx.waker().clone());
            Poll::Pending
        })
        .await;
    }

    /// Ready once no child of any branch of the tree is running (agentic replay starts the lane's
    /// next tree then).
    pub async fn drained(&self) {
        self.until(|t| t.running.borrow().values().all(|&n| n == 0))
            .await;
    }

    fn wake(&self) {
        for w in self.waiters.borrow_mut().drain(..) {
            w.wake();
        }
    }

    fn count(&self, f: impl FnOnce(&mut BranchCounts)) {
        let mut c = self.counts.get();
        f(&mut c);
        self.counts.set(c);
    }
}

/// How a child session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildEnd {
    /// Turns it sent.
    pub sent: u32,
    /// It sent every turn.
    pub finished: bool,
    /// A turn of it failed.
    pub failed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::task::Wake;

    struct Flag(std::sync::atomic::AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn a_join_waits_for_every_child_of_its_branches_only() {
        let counts = Rc::new(Cell::new(BranchCounts::default()));
        let tree = Tree::new(counts.clone());
        assert!(
            tree.joined(0, &[0, 1]),
            "nothing started: nothing to wait for"
        );
        tree.start(0, 0, 2, 1);
        tree.start(0, 1, 1, 0);
        tree.start(3, 0, 1, 0); // another conversation's branch 0
        assert!(!tree.joined(0, &[0]));
        let flag = Arc::new(Flag(false.into()));
        let waker = Waker::from(flag.clone());
        let mut cx = std::task::Context::from_waker(&waker);
        tree.suspend();
        let mut wait = std::pin::pin!(tree.until(|t| t.joined(0, &[0])));
        assert!(wait.as_mut().poll(&mut cx).is_pending());
        let done = |finished, failed| ChildEnd {
            sent: 1,
            finished,
            failed,
        };
        tree.end(0, 0, done(true, false));
        assert!(
            flag.0.load(std::sync::atomic::Ordering::SeqCst),
            "a child's end wakes"
        );
        assert!(
            wait.as_mut().poll(&mut cx).is_pending(),
            "one child still runs"
        );
        tree.end(0, 0, done(false, false));
        assert!(wait.as_mut().poll(&mut cx).is_ready());
        tree.resume();
        tree.end(0, 1, done(true, true));
        tree.end(
            3,
            0,
            ChildEnd {
                sent: 0,
                finished: false,
                failed: false,
            },
        );
        assert!(tree.joined(0, &[0, 1]));
        assert!(tree.joined(3, &[0]));
        let c = counts.get();
        assert_eq!(
            c.fields().map(|(_, v)| v)[..7],
            // Spawned: the three that sent a turn; completed, errored, truncated (the one that
            // sent a turn and the one that sent none); delayed; suspended, resumed.
            [3, 1, 1, 2, 1, 1, 1]
        );
    }
}
