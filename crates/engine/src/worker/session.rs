//! A conversation in progress on one worker: its turns go in order, each after the previous one
//! was answered, all with the session's one correlation id (and its session-affinity copies),
//! to the session's one URL. A later turn of a conversation carries the history when the endpoint
//! type replays it (chat, responses, messages): every earlier user message and the server's real
//! reply to it (docs/endpoints.md), so its body is built when it is due. With
//! `--connection-reuse-strategy sticky-user-sessions` the session keeps one connection of its
//! own, closed after its last turn.

use ringperf_wire::conversation::{AgentParts, AgentTurnParts};
use serde_json::Value;

use ringperf_io::net::Pool;
use ringperf_wire::endpoint::{TurnBody, build_turn};
use ringperf_wire::record::{Credit, Phase, RawRecord};
use ringperf_workload::schedule::{Replay, UserCentric};
use ringperf_workload::workload::cache_bust::{self, Marker};

use super::client::{self, Outgoing};
use super::tree::Tree;
use super::{Shared, WorkerState};

/// When a phase's later turns are due, besides "after the previous answer".
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct TurnTiming {
    /// Fixed-schedule replay: a turn with a trace timestamp goes at its replayed time (never
    /// before the previous answer), a delay is divided by the speedup.
    pub replay: Option<Replay>,
    /// User-centric rate: a user's turns are a turn gap apart (from the previous turn's
    /// intended time), never before the previous answer ([`UserCentric::next_turn_ns`]).
    pub user_centric: Option<UserCentric>,
}

/// One conversation in progress.
#[derive(Debug)]
pub(crate) struct Session {
    pub conversation: u32,
    correlation_id: uuid::Uuid,
    url: usize,
    next_turn: u32,
    /// What only some sessions have (a history, `--cache-bust` markers, a stored answer's id,
    /// a place in a tree), boxed and made when first set: a closed-loop slot keeps its session
    /// for as long as it runs, and most sessions (one turn, no tree) have none of it (#41:
    /// 232 bytes a session with it inline).
    rare: Option<Box<Rare>>,
    /// The session's own connection (sticky sessions).
    /// Boxed: a session of any other strategy keeps one word for it, not a pool's 64 bytes.
    sticky: Option<Box<Pool>>,
    /// Run-clock ns when the previous turn was answered (or failed).
    last_end_ns: u64,
    /// Run-clock ns when the previous turn was meant to go.
    last_intended_ns: u64,
    /// Turns this session sends at most (a user-centric user joining mid-conversation).
    max_turns: usize,
    /// The request index taken for the first turn when the session started.
    first_request: Option<u64>,
    /// Run-clock ns at which the first turn may go (a child: its place after the spawn).
    first_due_ns: u64,
    /// A turn of the session failed.
    failed: bool,
    /// Turns it sent (or tried to), from the turn it started at.
    sent: u32,
    /// Its turns ask for one output token (agentic replay's warmup primes the server's cache).
    one_token: bool,
    /// Its first turn's time was fixed at the phase's start.
    due_from_start: bool,
    /// Its node in its tree ([`super::tree::Tree::new_node`]; a root's: its conversation).
    node: u32,
    /// A new session's index in the run's sequence of sessions (AIPerf's sampling ordinal,
    /// which seeds an orchestrator's think times); `None` for a child.
    ordinal: Option<u64>,
}

/// The parts of a [`Session`] that only some sessions have.
#[derive(Debug, Default)]
struct Rare {
    /// Earlier messages (conversations of several turns of a type that replays them).
    history: Vec<Value>,
    /// `--cache-bust`: the session's `[rid:…]` marker, minted at its first send.
    marker: Option<Option<Marker>>,
    /// The marker spliced into the first turn's user text, for that message in the history.
    first_turn_marker: Option<Marker>,
    /// Responses chaining (`store: true`): the id of the last answer the server stored.
    previous_response_id: Option<String>,
    /// The session tree this session belongs to, when its conversation starts children (or is
    /// one).
    tree: Option<std::rc::Rc<Tree>>,
    /// A child session's place in its tree (its records carry it).
    lineage: Option<Box<ringperf_wire::record::Lineage>>,
    /// A child session's branch of its tree's root.
    branch: Option<u32>,
    /// A fork's child: it went on from its parent's context ([`Session::inherit_context`]).
    forked: bool,
}

impl Session {
    /// Its rare parts, if it has any.
    fn rare(&self) -> Option<&Rare> {
        self.rare.as_deref()
    }

    /// Its rare parts, made now if it had none.
    fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// The history of earlier messages (empty when it has none).
    fn history(&self) -> &[Value] {
        self.rare().map_or(&[], |r| &r.history)
    }

    /// `--cache-bust`: its marker, once minted (`Some(None)`: minted, and none applies).
    fn marker(&self) -> Option<Option<Marker>> {
        self.rare().and_then(|r| r.marker)
    }

    /// A new session of `conversation`, on base URL `url`.
    pub fn new(shared: &Shared, state: &WorkerState, conversation: u32, url: usize) -> Self {
        Self {
            conversation,
            correlation_id: state.new_id(),
            url,
            next_turn: 0,
            rare: None,
            sticky: (shared.reuse == super::ConnectionReuse::StickyUserSessions)
                .then(|| Box::new(Pool::new(shared.urls.len(), client::READ_BUF_BYTES))),
            last_end_ns: 0,
            last_intended_ns: 0,
            max_turns: usize::MAX,
            first_request: None,
            first_due_ns: 0,
            failed: false,
            sent: 0,
            one_token: false,
            due_from_start: false,
            node: conversation,
            ordinal: None,
        }
    }

    /// The session goes on from turn `turn` (agentic replay resumes a trace mid-way): an agent
    /// trace's earlier turns, which hold the recorded answers, become its history, as if it had
    /// sent them; a session of another kind starts from that turn with no history.
    pub fn resume_at(&mut self, shared: &Shared, turn: u32) {
        self.next_turn = turn;
        let c = &shared.dataset.conversations[self.conversation as usize];
        if c.context() != ringperf_wire::conversation::ContextMode::Recorded {
            return;
        }
        let Some(history) = shared.kind.descriptor().history else {
            return;
        };
        for t in c.turns.iter().take(turn as usize) {
            let Some(source) = &t.source else {
                continue;
            };
            let kept = &mut self.rare_mut().history;
            if source.resets_context() {
                kept.clear();
            }
            (history.turn)(source, kept);
        }
        // (`--cache-bust`: every body of a recorded trace gets the marker at its first user
        // text, [`Self::bust`].)
    }

    /// A subagent's session (its tree's root is another).
    pub fn is_child(&self) -> bool {
        self.rare().is_some_and(|r| r.lineage.is_some())
    }

    /// `--cache-bust`: the session's marker, minted now if it has none yet (a root about to
    /// start subagents, which copy it).
    pub fn mint_marker(&mut self, shared: &Shared) {
        if let Some(b) = shared.cache_bust.as_ref()
            && self.marker().is_none()
        {
            let c = &shared.dataset.conversations[self.conversation as usize];
            self.rare_mut().marker = Some(b.session_marker(&c.session_id));
        }
    }

    /// `--cache-bust`: the session's marker is `m` (a stream of agentic replay keeps its tree's
    /// over the phases).
    pub fn set_marker(&mut self, m: Option<Marker>) {
        self.rare_mut().marker = Some(m);
    }

    /// Its correlation id is `id` (a stream of agentic replay keeps one over its phases).
    pub fn with_id(mut self, id: uuid::Uuid) -> Self {
        self.correlation_id = id;
        self
    }

    /// It is a child of branch `b` of its tree's root.
    pub fn in_branch(mut self, b: u32) -> Self {
        self.rare_mut().branch = Some(b);
        self
    }

    /// Where it is in its tree (the accelerated cache warmup hands it on).
    pub fn place(&self) -> super::tree::Place {
        super::tree::Place {
            next: self.next_turn,
            last_end_ns: if self.sent == 0 { 0 } else { self.last_end_ns },
            branch: self.rare().and_then(|r| r.branch),
            id: self.correlation_id,
            marker: self.marker().flatten(),
        }
    }

    /// Its turns ask for one output token, whatever the turn asks.
    pub fn one_token(&mut self) {
        self.one_token = true;
    }

    /// The first turn it sends goes at run-clock `at_ns`.
    pub fn first_due_at(&mut self, at_ns: u64) {
        self.first_due_ns = at_ns;
        self.due_from_start = true;
    }

    /// Its first turn's time was fixed at the phase's start ([`Self::first_due_at`]): the
    /// system-idle cap's every shift moves it (a later wait only moves with later shifts).
    pub fn due_from_start(&self) -> bool {
        self.due_from_start && self.sent == 0
    }

    /// Turns it sent (or tried to).
    pub fn sent(&self) -> u32 {
        self.sent
    }

    /// A turn of the session failed.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// A child session of `conversation` started by `parent`, in its tree, on its URL, whose
    /// first turn goes at run-clock `first_due_ns`.
    pub fn child(
        shared: &Shared,
        state: &WorkerState,
        conversation: u32,
        parent: &Session,
        first_due_ns: u64,
    ) -> Self {
        let up = parent.rare().and_then(|r| r.lineage.as_deref());
        let lineage = ringperf_wire::record::Lineage {
            depth: up.map_or(0, |l| l.depth).saturating_add(1),
            parent: Some(parent.correlation_id),
            root: up.map_or(parent.correlation_id, |l| l.root),
        };
        let mut child = Self {
            node: parent.tree().map_or(conversation, |t| t.new_node()),
            first_due_ns,
            ..Self::new(shared, state, conversation, parent.url)
        };
        child.rare = Some(Box::new(Rare {
            tree: parent.tree().cloned(),
            lineage: Some(Box::new(lineage)),
            // `--cache-bust`: one marker for the whole tree (AIPerf's), once the root has one.
            marker: parent.marker(),
            ..Rare::default()
        }));
        child
    }

    /// A fork's child (AIPerf's `FORK`, `seed_from_parent`): the session goes on from
    /// `parent`'s context as it is now, the turn just answered and its reply included (an
    /// isolated parent's context is that turn alone), and from its stored answer (`store:
    /// true`). Its marker is already in that context (`--cache-bust`): none is added.
    pub fn inherit_context(&mut self, shared: &Shared, parent: &Session) {
        use ringperf_wire::conversation::ContextMode;
        let c = &shared.dataset.conversations[parent.conversation as usize];
        if c.context() == ContextMode::Standalone {
            let last = parent
                .next_turn
                .checked_sub(1)
                .map(|t| &c.turns[t as usize]);
            if let (Some(history), Some(Some(turn))) = (
                shared.kind.descriptor().history,
                last.map(|t| t.source.as_ref()),
            ) {
                let kept = &mut self.rare_mut().history;
                kept.clear();
                (history.turn)(turn, kept);
            }
        } else {
            self.rare_mut().history = parent.history().to_vec();
        }
        let stored = parent.rare().and_then(|r| r.previous_response_id.clone());
        let rare = self.rare_mut();
        rare.previous_response_id = stored;
        rare.forked = true;
    }

    /// A `dag_jsonl` pre-session child of `conversation` in `tree`: started by no session (its
    /// records name no parent, and itself as their root, as AIPerf's), on URL `url`, its first
    /// turn at run-clock `first_due_ns`.
    pub fn pre_session(
        shared: &Shared,
        state: &WorkerState,
        conversation: u32,
        url: usize,
        tree: std::rc::Rc<Tree>,
        first_due_ns: u64,
    ) -> Self {
        let mut s = Self::new(shared, state, conversation, url);
        let root = s.correlation_id;
        s.node = tree.new_node();
        let rare = s.rare_mut();
        rare.lineage = Some(Box::new(ringperf_wire::record::Lineage {
            depth: 1,
            parent: None,
            root,
        }));
        rare.tree = Some(tree);
        s.first_due_ns = first_due_ns;
        s
    }

    /// The session's place in its tree, for its records.
    pub fn lineage(&self) -> Option<Box<ringperf_wire::record::Lineage>> {
        self.rare().and_then(|r| r.lineage.clone())
    }

    /// Makes the session the root of `tree`.
    pub fn root_of(&mut self, tree: std::rc::Rc<Tree>) {
        self.rare_mut().tree = Some(tree);
    }

    /// Its node in its tree: the key of the branches it starts and joins.
    pub fn node(&self) -> u32 {
        self.node
    }

    /// The session tree, if the conversation is part of one.
    pub fn tree(&self) -> Option<&std::rc::Rc<Tree>> {
        self.rare().and_then(|r| r.tree.as_ref())
    }

    /// The first turn goes as request `index` (taken when the session started).
    pub fn reserve_first_request(&mut self, index: u64) {
        self.first_request = Some(index);
    }

    /// The request index reserved for the turn about to go, if any (once).
    pub fn reserved_request(&mut self) -> Option<u64> {
        self.first_request.take()
    }

    /// The id its requests carry (`X-Correlation-ID`).
    pub fn correlation_id(&self) -> uuid::Uuid {
        self.correlation_id
    }

    /// The session is the run's `ordinal`-th new session.
    pub fn set_ordinal(&mut self, ordinal: u64) {
        self.ordinal = Some(ordinal);
    }

    /// The run's index of the new session ([`Self::set_ordinal`]); `None` for a child.
    pub fn ordinal(&self) -> Option<u64> {
        self.ordinal
    }

    /// The next turn, a request-free one (an orchestrator's), is done at run-clock `now_ns`:
    /// nothing is sent, the session goes on from it.
    pub fn pass_turn(&mut self, now_ns: u64) {
        self.sent += 1;
        self.last_end_ns = now_ns;
        self.last_intended_ns = now_ns;
        self.next_turn += 1;
    }

    /// Sends at most `n` turns.
    pub fn limit_turns(&mut self, n: usize) {
        self.max_turns = n;
    }

    /// Every turn has been sent.
    pub fn finished(&self, shared: &Shared) -> bool {
        self.next_turn as usize >= shared.turns_of(self.conversation).min(self.max_turns)
    }

    /// The session sends no further turn (agentic replay ends a trajectory whose prompt went over
    /// the model's context).
    pub fn end_here(&mut self) {
        self.max_turns = self.next_turn as usize;
    }

    /// The turn to send next.
    pub fn next_turn(&self) -> u32 {
        self.next_turn
    }

    /// Run-clock ns at which the next turn may go (for the first turn it sends: the time set by
    /// [`Self::first_due_at`], else 0, i.e. whenever its credit says). A later turn goes a user's turn gap after the previous turn was meant to go
    /// (user-centric rate), or at its trace time under fixed-schedule replay, else its delay
    /// after the previous answer (divided by the replay's speedup), else at once — never before
    /// the previous answer.
    pub fn due_ns(&self, shared: &Shared, timing: &TurnTiming, phase_start_ns: u64) -> u64 {
        if self.sent == 0 {
            return self.first_due_ns;
        }
        let turn = shared.turn(self.conversation, self.next_turn);
        if let Some(users) = &timing.user_centric {
            return users.next_turn_ns(self.last_intended_ns, self.last_end_ns);
        }
        match timing.replay {
            Some(replay) => replay
                .turn_due_ns(
                    turn.timestamp_ms,
                    turn.delay_ms,
                    phase_start_ns,
                    self.last_end_ns,
                )
                .max(self.last_end_ns),
            None => {
                ringperf_workload::schedule::after_delay_ns(self.last_end_ns, turn.delay_ms, 1.0)
            }
        }
    }

    /// Makes the next turn's request, as request `index` of `phase` (the run's phase number
    /// `phase_index`), meant to go at `intended_ns`: what [`client::send`] sends (through the
    /// session's own pool, [`Session::sticky_pool`], when it has one), whose record the caller
    /// hands to [`Session::turn_done`]; or, when the turn cannot be sent (its body could not be
    /// built or encoded), its failure's record. A chat conversation's history grows by the
    /// turn's message and the server's reply.
    ///
    /// Not an `async` block: everything the request needs is made here and moved into it (the
    /// encoded request included, when it was built for this turn), so the caller awaits the
    /// request's own future, with nothing of this step kept beside it for as long as the
    /// response takes (#41: its arguments, the credit's parts and the built request's owners,
    /// 112 bytes of every streaming task as an `async` block).
    #[allow(clippy::too_many_arguments)]
    pub fn next_request<'a>(
        &mut self,
        shared: &'a Shared,
        state: &WorkerState,
        (phase, phase_index): (Phase, u8),
        index: u64,
        intended_ns: u64,
        cancel_after_ns: Option<u64>,
        prefill: Option<&'a super::prefill::PrefillGate>,
    ) -> Result<Outgoing<'a>, Box<RawRecord>> {
        self.sent += 1;
        let credit = Credit {
            phase,
            phase_index,
            index,
            conversation: self.conversation,
            turn: self.next_turn,
            intended_ns,
            cancel_after_ns,
            max_turns: None,
        };
        let flat = shared.flat_turn(self.conversation, self.next_turn);
        // A body built ahead asks for the turn's own output: one asking for a single token is
        // built here.
        let template = (shared.templates[self.url].get(flat))
            .and_then(Option::as_ref)
            .filter(|_| !self.one_token);
        // A streamed replay: the producer built it; taken out of its slot, its request is
        // the request's own, freed once the request ends.
        let streamed = match (template, &shared.stream) {
            (None, Some(stream)) if !self.one_token => Some(stream.take(flat)),
            _ => None,
        };
        let bust = self.bust(shared, phase);
        // An agent trace's body starts with its first turn's messages: its marker goes there;
        // so does an isolated conversation's, whose every body is its whole context.
        let recorded = matches!(
            shared.dataset.conversations[self.conversation as usize].context(),
            ringperf_wire::conversation::ContextMode::Recorded
                | ringperf_wire::conversation::ContextMode::Standalone
        );
        if shared
            .turn(self.conversation, self.next_turn)
            .source
            .as_ref()
            .is_some_and(|t| t.resets_context())
        {
            // The turn starts the context over: the history and any stored answer are dropped.
            if let Some(rare) = self.rare.as_deref_mut() {
                rare.history.clear();
                rare.previous_response_id = None;
            }
        }
        let (request, request_body): (client::Request<'a>, Option<Vec<u8>>) =
            match (template, streamed) {
                (Some(t), _) => (client::Request::Shared(t), None),
                (None, Some(ready)) => match ready.map(|r| r.requests) {
                    Some(Ok(mut per_url)) if self.url < per_url.len() => (
                        client::Request::Built(Box::new(per_url.swap_remove(self.url))),
                        None,
                    ),
                    other => {
                        let why = match other {
                            Some(Err(e)) => e.to_string(),
                            _ => "the request was not built before it was due (the streamed \
                                  trace's producer fell behind or stopped)"
                                .to_string(),
                        };
                        self.next_turn += 1;
                        if let Some(gate) = prefill {
                            gate.release();
                        }
                        self.failed = true;
                        return Err(Box::new(client::unprepared(shared, state, credit, why)));
                    }
                },
                (None, None) => {
                    let mut body = self.build_body(shared);
                    if let Some((system, m)) = bust
                        && let Some(at) = cache_bust::user_offset(
                            shared.kind,
                            &body,
                            system,
                            m.1.is_prefix(),
                            recorded,
                        )
                    {
                        let (text, len) = m.0.json_escaped();
                        body.splice(at..at, text[..len].iter().copied());
                    }
                    // Boxed: only a turn whose body is built here owns its encoded request.
                    match shared.encode(self.url, &body) {
                        Ok(req) => (client::Request::Built(Box::new(req)), Some(body)),
                        Err(e) => {
                            self.next_turn += 1;
                            if let Some(gate) = prefill {
                                gate.release();
                            }
                            self.failed = true;
                            return Err(Box::new(client::unsendable(shared, state, credit, &e)));
                        }
                    }
                }
            };
        // A pre-encoded body gets the marker in the connection's copy (a built one has it).
        let splice = match (bust, request_body.is_none()) {
            (Some((system, (m, target))), true) => {
                let request = request.get();
                let body = request.bytes.get(request.head_len..).unwrap_or_default();
                cache_bust::user_offset(shared.kind, body, system, target.is_prefix(), recorded)
                    .map(|at| (at, m))
            }
            _ => None,
        };
        if let Some((false, (m, _))) = bust
            && self.next_turn == 0
        {
            self.rare_mut().first_turn_marker = Some(m);
        }
        // Only the turn's outcome reads it, and nothing reads the session while the request
        // holds it: set now, so the request's caller keeps no copy of the time.
        self.last_intended_ns = intended_ns;
        Ok(Outgoing {
            credit,
            request,
            correlation_id: self.correlation_id,
            url: self.url,
            // The caller's, from `sticky_pool`: a borrow of the session for as long as the
            // request runs.
            pool: None,
            request_body,
            prefill,
            splice,
        })
    }

    /// The session's own connection pool (sticky sessions), its requests' pool.
    pub fn sticky_pool(&self) -> Option<&Pool> {
        self.sticky.as_deref()
    }

    /// The turn [`Session::next_request`] made has its record `rec`: the session moves to its next
    /// turn (a chat conversation's history grows by the server's reply).
    pub fn turn_done(&mut self, shared: &Shared, rec: &RawRecord) {
        self.last_end_ns = rec.end_ns;
        self.failed |= rec.error.is_some();
        self.remember(shared, rec);
        self.next_turn += 1;
    }

    /// `--cache-bust`: the marker of the turn about to go in `phase`, whether it goes into the
    /// system message (else the first user text) and the target. A first-turn marker goes with
    /// the first turn only: later turns carry that message in their history (an agent trace's
    /// recorded history is not the session's: every body gets it).
    fn bust(
        &mut self,
        shared: &Shared,
        phase: Phase,
    ) -> Option<(bool, (Marker, cache_bust::CacheBust))> {
        let b = shared.cache_bust.as_ref()?;
        let c = &shared.dataset.conversations[self.conversation as usize];
        let marker = if b.target.warmup_isolation() {
            b.target.marker("", 0, "", phase == Phase::Warmup)
        } else {
            *self
                .rare_mut()
                .marker
                .get_or_insert_with(|| b.session_marker(&c.session_id))
        }?;
        let system = b.target.on_system() && c.system.is_some();
        // An agent trace's every body starts with the first turn's messages (its history is
        // the recorded one): each gets the marker there, as the first turn did.
        let recorded = c.context() == ringperf_wire::conversation::ContextMode::Recorded;
        // An isolated conversation's every body is its whole context, marked as a first turn
        // is (AIPerf marks the first turn of what it sends). A fork's child carries its
        // parent's marked turns: its own first turn adds none.
        let isolated = c.context() == ringperf_wire::conversation::ContextMode::Standalone;
        (system
            || recorded
            || isolated
            || (self.next_turn == 0 && !self.rare().is_some_and(|r| r.forked)))
        .then_some((system, (marker, b.target)))
    }

    /// The body of the next turn: the conversation's system and context messages, the history,
    /// the turn.
    fn build_body(&self, shared: &Shared) -> Vec<u8> {
        let c = &shared.dataset.conversations[self.conversation as usize];
        let t = &c.turns[self.next_turn as usize];
        let Some(turn) = &t.source else {
            return Vec::new();
        };
        // A turn naming no `tools` carries those of the turns before it (`dag_jsonl`).
        let inherited = (t.agent.as_ref())
            .and_then(|a| a.inherited_tools.as_ref())
            .filter(|_| !turn.extra.contains_key("tools"));
        let one;
        let turn: &ringperf_wire::conversation::Turn = if self.one_token || inherited.is_some() {
            let mut owned = ringperf_wire::conversation::Turn {
                max_tokens: if self.one_token {
                    Some(1)
                } else {
                    turn.max_tokens
                },
                ..(**turn).clone()
            };
            if let Some(tools) = inherited {
                owned.extra.insert("tools".into(), tools.clone());
            }
            one = owned;
            &one
        } else {
            turn
        };
        build_turn(
            shared.kind,
            &shared.payload,
            &TurnBody {
                system: c.system.as_deref(),
                user_context: c.user_context.as_deref(),
                history: self.history(),
                turn,
                previous_response_id: self.rare().and_then(|r| r.previous_response_id.as_deref()),
            },
        )
    }

    /// Adds the turn just sent and the server's reply to the history, as the endpoint type
    /// replays a conversation (conversations of several turns).
    fn remember(&mut self, shared: &Shared, rec: &RawRecord) {
        let c = &shared.dataset.conversations[self.conversation as usize];
        let Some(turn) = &c.turns[self.next_turn as usize].source else {
            return;
        };
        // Nothing comes after the last turn, unless it forks (its children go on from it).
        let forks = (c.turns[self.next_turn as usize].spawns().iter())
            .any(|&b| c.branches().get(b as usize).is_some_and(|b| b.fork));
        if (self.next_turn as usize) + 1 >= c.turns.len() && !forks {
            return;
        }
        let Some(history) = shared.kind.descriptor().history else {
            return;
        };
        // Each turn of a standalone conversation is its whole context.
        if c.context() == ringperf_wire::conversation::ContextMode::Standalone {
            return;
        }
        // `store: true`: the next turn chains onto this answer; a failed one keeps the last.
        if shared.kind == ringperf_wire::endpoint::EndpointKind::Responses
            && shared.payload.stores_responses()
            && rec.error.is_none()
            && let Some(id) = ringperf_wire::endpoint::stored_response_id(rec)
        {
            self.rare_mut().previous_response_id = Some(id);
        }
        let first = self.next_turn == 0;
        let rare = self.rare_mut();
        let from = rare.history.len();
        (history.turn)(turn, &mut rare.history);
        let recorded = c.context() == ringperf_wire::conversation::ContextMode::Recorded;
        if first
            && !recorded
            && let Some(m) = rare.first_turn_marker
        {
            let prefix = shared
                .cache_bust
                .as_ref()
                .is_some_and(|b| b.target.is_prefix());
            mark_user_message(&mut rare.history[from..], m.as_str(), prefix);
        }
        if !recorded {
            // A recorded trace's next turn carries the recorded answer itself.
            (history.reply)(rec, &mut rare.history);
        }
    }
}

/// Puts `marker` at the start (`prefix`) or end of the first text of the first user message in
/// `messages` (the first turn's message kept in the history, as AIPerf marks the turn itself).
fn mark_user_message(messages: &mut [Value], marker: &str, prefix: bool) {
    let Some(m) = messages.iter_mut().find(|m| m["role"] == "user") else {
        return;
    };
    let text = match m.get_mut("content") {
        Some(Value::String(s)) => s,
        Some(Value::Array(parts)) => match parts.first_mut().and_then(|p| p.get_mut("text")) {
            Some(Value::String(s)) => s,
            _ => return,
        },
        _ => return,
    };
    if prefix {
        text.insert_str(0, marker);
    } else {
        text.push_str(marker);
    }
}
