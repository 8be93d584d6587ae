//! The open-loop feeder: generates intended send times from one arrival process for the whole
//! run and deals the credits round-robin into each worker's queue, a bounded distance ahead of
//! the clock. One process for all workers keeps gamma and Poisson arrivals exact (a gamma
//! process does not split into independent per-worker ones).
//!
//! Two sources: an arrival process (`--request-rate`, optionally ramped by
//! `--request-rate-ramp-duration`), or a fixed schedule of first turns (`--fixed-schedule`),
//! whose credits name their conversation explicitly, or the users of a user-centric phase.
//! Intended times are always absolute from the phase start. Cancellation is the worker's
//! decision, per request index (a tick may serve a later turn of a session).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_queue::ArrayQueue;

use crate::config::Arrival;
use ringperf_engine::worker::adaptive::AdaptiveGate;
use ringperf_wire::conversation::Sampling;
use ringperf_wire::record::{Credit, Phase};
use ringperf_workload::schedule::{
    Arrivals, InitialUser, RateRamp, RateSeries, ScheduleEntry, Shard, Spawner, TemplatePicker,
    UserCentric, child_seed,
};
use ringperf_workload::workload::stream::Stream;

/// How far ahead of the clock credits are generated.
const LOOKAHEAD_NS: u64 = 50_000_000;
/// The same for a user-centric phase whose controller moves its users: whether a user starts
/// is decided from the users alive when it is due, so it is decided only this long before.
const MOVED_USERS_LOOKAHEAD_NS: u64 = 5_000_000;
/// Credits a worker queue holds at most.
const QUEUE_CAPACITY: usize = 64 * 1024;
/// [`Dispatcher::next_ns`]: the next credit may be queued at any moment.
pub const NEXT_SOON: u64 = 0;
/// [`Dispatcher::next_ns`]: no credit is left to queue.
pub const NEXT_NONE: u64 = u64::MAX;

/// Every worker's credit queue of one phase. Made before the phase's start instant is taken:
/// [`QUEUE_CAPACITY`] slots a worker take milliseconds to allocate and initialise, which would
/// otherwise make the schedule's first credits late by as much.
#[derive(Debug)]
pub struct Queues(Vec<Arc<ArrayQueue<Credit>>>);

impl Queues {
    /// One queue per worker (one at least).
    pub fn new(workers: usize) -> Self {
        Self(
            (0..workers.max(1))
                .map(|_| Arc::new(ArrayQueue::new(QUEUE_CAPACITY)))
                .collect(),
        )
    }
}

/// Where the dispatcher's credits come from.
#[derive(Debug)]
enum Source {
    /// An arrival process. Its credits are ticks: the worker decides which session a tick
    /// serves (a due continuation, else a new session), so they name no conversation (0).
    Arrivals {
        arrivals: Box<Arrivals>,
        rate: f64,
        arrival: Arrival,
        seed: u64,
    },
    /// First turns of a fixed schedule, in time order.
    Schedule {
        entries: Vec<ScheduleEntry>,
        next: usize,
    },
    /// User-centric rate: the users present at the start, then a replacement for every user
    /// whose turns are over, each starting a session.
    Users(Box<Users>),
}

/// The users of a user-centric phase, in start order.
#[derive(Debug)]
struct Users {
    /// Users present at the phase start, by start offset (latest last: popped from the back).
    initial: Vec<InitialUser>,
    spawner: Spawner,
    picker: TemplatePicker,
    /// Turns of every conversation.
    turns: Vec<u32>,
    /// Users started so far (the picker's index).
    started: u64,
    /// The turn gap the users present at the start were planned with: their replacements come
    /// after their turns at that gap, whatever the controller sets later (as AIPerf plans them
    /// when the phase starts).
    initial_gap_ns: f64,
    /// An adaptive phase moving the users ([`Dispatcher::with_moved_users`]).
    moved: Option<MovedUsers>,
}

/// A user-centric phase whose controller moves the target users (AIPerf's adaptive scale with
/// `control.variable: users`): a user due to start while as many are alive as the target is put
/// off by one stagger; a started user gets a replacement only while no more are alive than the
/// target; a raised target starts the new users one stagger apart from now.
#[derive(Debug)]
struct MovedUsers {
    gate: Arc<AdaptiveGate>,
    /// The phase's total request rate (the turn gap is `users / rate`).
    rate: f64,
}

/// What the source gives next.
enum Next {
    /// A credit: its conversation, intended time and turn limit.
    Credit(u32, u64, Option<u32>),
    /// Nothing before this run-clock time (a user whose start is decided when it is due).
    Later(u64),
    /// The source is spent.
    Spent,
}

#[derive(Debug)]
pub struct Dispatcher {
    pub queues: Vec<Arc<ArrayQueue<Credit>>>,
    /// Set once every credit of the phase has been queued.
    pub fed: Arc<AtomicBool>,
    /// The intended time of the next credit not yet queued ([`NEXT_SOON`] when it is unknown or
    /// waits for room in a full queue, [`NEXT_NONE`] when none is left): a worker with an empty
    /// queue sleeps until shortly before it instead of polling.
    pub next_ns: Arc<AtomicU64>,
    source: Source,
    phase: Phase,
    /// The phase's position in the run ([`Dispatcher::in_phase`]).
    phase_index: u8,
    start_ns: u64,
    next_index: u64,
    limit: u64,
    issue_deadline_ns: Option<u64>,
    /// A credit generated but not yet queued (its queue was full).
    pending: Option<Credit>,
    /// This process's shard: the whole schedule is generated, only its own credits are queued.
    shard: Shard,
    /// A streamed replay: a credit is queued only once its conversation's requests are built.
    stream: Option<Arc<Stream>>,
    /// The pending credit waits for its conversation to be built.
    starved: bool,
    /// How far ahead of the clock credits are queued.
    lookahead_ns: u64,
    /// The source gives nothing before this time ([`Next::Later`]).
    later: Option<u64>,
}

impl Dispatcher {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        queues: Queues,
        rate: f64,
        arrival: Arrival,
        seed: u64,
        phase: Phase,
        start_ns: u64,
        limit: u64,
        issue_deadline_ns: Option<u64>,
    ) -> Self {
        let name = format!("timing.{}.arrivals", phase.as_str());
        let arrival_seed = child_seed(seed, &name);
        Self::with_source(
            queues,
            Source::Arrivals {
                arrivals: Box::new(Arrivals::new(rate, arrival, arrival_seed)),
                rate,
                arrival,
                seed: arrival_seed,
            },
            phase,
            start_ns,
            limit,
            issue_deadline_ns,
        )
    }

    /// A dispatcher that deals the first turns of `schedule` (from
    /// [`ringperf_workload::schedule::FixedSchedule::build`]) at `start_ns + offset`, each credit naming its
    /// conversation, turn 0. Later turns are the workers' (see
    /// [`ringperf_workload::schedule::Replay::turn_due_ns`]).
    pub fn fixed_schedule(
        queues: Queues,
        schedule: Vec<ScheduleEntry>,
        phase: Phase,
        start_ns: u64,
        limit: u64,
        issue_deadline_ns: Option<u64>,
    ) -> Self {
        Self::with_source(
            queues,
            Source::Schedule {
                entries: schedule,
                next: 0,
            },
            phase,
            start_ns,
            limit,
            issue_deadline_ns,
        )
    }

    fn with_source(
        queues: Queues,
        source: Source,
        phase: Phase,
        start_ns: u64,
        limit: u64,
        issue_deadline_ns: Option<u64>,
    ) -> Self {
        Self {
            queues: queues.0,
            fed: Arc::new(AtomicBool::new(false)),
            next_ns: Arc::new(AtomicU64::new(NEXT_SOON)),
            source,
            phase,
            phase_index: 0,
            start_ns,
            next_index: 0,
            limit,
            issue_deadline_ns,
            pending: None,
            shard: Shard::WHOLE,
            stream: None,
            starved: false,
            lookahead_ns: LOOKAHEAD_NS,
            later: None,
        }
    }

    /// Queues only `shard`'s credits (global index `k` with `k mod N = I`) of the schedule every
    /// shard generates alike, dealt to the workers by their local number.
    #[must_use]
    pub fn with_shard(mut self, shard: Shard) -> Self {
        self.shard = shard;
        self
    }

    /// Queues a credit only once [`Stream::conversation_ready`] says its conversation's requests
    /// are built (a streamed replay; `None`: always).
    #[must_use]
    pub fn with_stream(mut self, stream: Option<Arc<Stream>>) -> Self {
        self.stream = stream;
        self
    }

    /// Ramps the arrival rate from `rate · 0.1 s / duration` to `rate` over `duration`
    /// (`--request-rate-ramp-duration`, AIPerf's linear continuous ramp). No effect on a fixed
    /// schedule. Call before the first [`Dispatcher::feed`].
    #[must_use]
    pub fn with_rate_ramp(mut self, duration: Duration) -> Self {
        if let Source::Arrivals {
            arrivals,
            rate,
            arrival,
            seed,
            ..
        } = &mut self.source
        {
            **arrivals = Arrivals::ramped(RateRamp::new(*rate, duration), *arrival, *seed);
        }
        self
    }

    /// Marks the credits as the run's phase number `index` (warmup first).
    #[must_use]
    pub fn in_phase(mut self, index: u8) -> Self {
        self.phase_index = index;
        self
    }

    /// Starts a user-centric phase's users on the conversations after the first `n` (those
    /// the run's earlier phases sent); no effect on another source.
    #[must_use]
    pub fn after_sessions(mut self, n: u64) -> Self {
        if let Source::Users(users) = &mut self.source {
            users.started = n;
        }
        self
    }

    /// Makes the arrival rate follow `series` (`--request-rate-series`) from `start` after the
    /// phase start (the end of a rate ramp, else 0). Call after [`Dispatcher::with_rate_ramp`]
    /// and before the first [`Dispatcher::feed`]; no effect on another source.
    #[must_use]
    pub fn with_rate_series(mut self, series: Arc<RateSeries>, start: Duration) -> Self {
        if let Source::Arrivals { arrivals, .. } = &mut self.source {
            arrivals.follow_series(series, start);
        }
        self
    }

    /// A dispatcher that starts the users of a user-centric phase (`--user-centric-rate`):
    /// the users present at the start at their staggered offsets (some of them part-way
    /// through their conversation), then a new user whenever one's turns are over,
    /// `turns · turn_gap` after it started — an absolute schedule, whatever the answers take.
    /// Each credit starts a session of its own conversation; its later turns go every turn gap
    /// ([`ringperf_engine::worker::TurnTiming::user_centric`]).
    #[allow(clippy::too_many_arguments)]
    pub fn users(
        queues: Queues,
        plan: &UserCentric,
        mean_turns: f64,
        turns: Vec<u32>,
        sampling: Sampling,
        seed: u64,
        phase: Phase,
        start_ns: u64,
        issue_deadline_ns: Option<u64>,
    ) -> Self {
        let mut initial = plan.initial_users(mean_turns);
        let spawner = plan.spawner(&initial);
        initial.sort_by_key(|u| std::cmp::Reverse((u.start_offset_ns, u.order)));
        let picker = TemplatePicker::with_sampling(turns.len(), seed, sampling);
        Self::with_source(
            queues,
            Source::Users(Box::new(Users {
                initial,
                spawner,
                picker,
                turns,
                started: 0,
                initial_gap_ns: plan.turn_gap_ns(),
                moved: None,
            })),
            phase,
            start_ns,
            u64::MAX,
            issue_deadline_ns,
        )
    }

    /// A user-centric phase whose controller moves its users through `gate` (its limit is the
    /// target, set to the plan's users; AIPerf's `users` control variable): the users present
    /// at the start are counted alive from now. No effect on another source.
    #[must_use]
    pub fn with_moved_users(mut self, gate: Arc<AdaptiveGate>, rate: f64) -> Self {
        if let Source::Users(users) = &mut self.source {
            gate.users_started(users.initial.len());
            gate.set_turn_gap_ns(users.initial_gap_ns.round() as u64);
            users.moved = Some(MovedUsers { gate, rate });
            self.lookahead_ns = MOVED_USERS_LOOKAHEAD_NS;
        }
        self
    }

    /// An adaptive phase's new target users from `now_ns` on (AIPerf's `set_target_users`):
    /// every user's turn gap becomes `target / rate` for the turns and replacements scheduled
    /// from now, and a raised target starts its new users one stagger apart from now.
    pub fn set_target_users(&mut self, now_ns: u64, target: usize) {
        let Source::Users(users) = &mut self.source else {
            return;
        };
        let Some(m) = &users.moved else {
            return;
        };
        let before = m.gate.limit();
        m.gate.set_limit(target);
        let target = m.gate.limit();
        let gap_ns = target as f64 * 1e9 / m.rate;
        m.gate.set_turn_gap_ns(gap_ns.round() as u64);
        users.spawner.set_turn_gap_ns(gap_ns);
        let stagger_ns = 1e9 / m.rate;
        for slot in 0..target.saturating_sub(before) {
            users
                .spawner
                .push_at(now_ns + (slot as f64 * stagger_ns).round() as u64);
        }
        // Looked at again: a new user may be due before what the source said last.
        self.later = None;
    }

    /// The next credit from the source, given the clock at `now_ns`.
    fn next_from_source(&mut self, now_ns: u64) -> Next {
        match &mut self.source {
            Source::Arrivals { arrivals, .. } => {
                Next::Credit(0, self.start_ns + arrivals.next_offset_ns(), None)
            }
            Source::Schedule { entries, next } => {
                let Some(e) = entries.get(*next) else {
                    return Next::Spent;
                };
                *next += 1;
                Next::Credit(
                    e.conversation,
                    self.start_ns.saturating_add(e.offset_ns),
                    None,
                )
            }
            Source::Users(users) => loop {
                let initial_at = users.initial.last().map(|u| u.start_offset_ns);
                let spawn_at = users
                    .spawner
                    .peek_ns()
                    .map(|at| at.saturating_sub(self.start_ns));
                let (initial_first, offset) = match (initial_at, spawn_at) {
                    (None, None) => return Next::Spent,
                    (Some(i), Some(s)) if i <= s => (true, i),
                    (Some(i), None) => (true, i),
                    (_, Some(s)) => (false, s),
                };
                let at = self.start_ns + offset;
                if users.moved.is_some() && at > now_ns + self.lookahead_ns {
                    return Next::Later(at);
                }
                let max_turns = if initial_first {
                    users.initial.pop().and_then(|u| u.max_turns)
                } else {
                    if let Some(m) = &users.moved
                        && m.gate.active_users() >= m.gate.limit()
                    {
                        // As many alive as the target: put off by one stagger.
                        users.spawner.defer_earliest((1e9 / m.rate).round() as u64);
                        continue;
                    }
                    users.spawner.pop();
                    None
                };
                let conversation = users.picker.pick(users.started);
                users.started += 1;
                let full = users.turns.get(conversation as usize).copied().unwrap_or(0);
                let turns = max_turns.map_or(full, |m| m.min(full)).max(1);
                match &users.moved {
                    _ if initial_first => {
                        let gap = users.initial_gap_ns;
                        users.spawner.schedule_replacement_at_gap(at, turns, gap);
                    }
                    None => users.spawner.schedule_replacement(at, turns),
                    Some(m) => {
                        m.gate.users_started(1);
                        // Scaling down: the users beyond the target are not replaced.
                        if m.gate.active_users() <= m.gate.limit() {
                            users.spawner.schedule_replacement(at, turns);
                        }
                    }
                }
                return Next::Credit(conversation, at, max_turns);
            },
        }
    }

    /// An adaptive phase's new request rate from `now_ns` on: arrivals not yet queued follow
    /// it ([`ringperf_workload::schedule::Arrivals::set_rate`]); a credit drawn but not queued
    /// comes no later than one new interval from now.
    pub fn set_rate(&mut self, now_ns: u64, rate: f64) {
        let Source::Arrivals { arrivals, .. } = &mut self.source else {
            return;
        };
        // The next arrival after the one drawn (when one is): one new interval after it.
        let mut from = now_ns;
        if let Some(c) = self.pending.as_mut()
            && rate > 0.0
        {
            let soonest = now_ns.saturating_add((1e9 / rate) as u64);
            c.intended_ns = c.intended_ns.min(soonest);
            from = c.intended_ns.max(now_ns);
        }
        arrivals.set_rate(from.saturating_sub(self.start_ns), rate);
    }

    pub fn is_fed(&self) -> bool {
        self.fed.load(Ordering::Acquire)
    }

    /// Queues every credit meant to go before `now + LOOKAHEAD`. Marks the phase fed when the
    /// request count or the duration is exhausted, or when `stop` is set.
    pub fn feed(&mut self, now_ns: u64, stop: bool) {
        if self.is_fed() {
            return;
        }
        if stop {
            self.set_fed();
            return;
        }
        self.queue_due(now_ns);
        let next = match &self.pending {
            _ if self.is_fed() => NEXT_NONE,
            Some(c) if !self.starved && c.intended_ns > now_ns + self.lookahead_ns => c.intended_ns,
            None if self.later.is_some() => self.later.unwrap_or(NEXT_SOON),
            // Waiting for room in a full queue, or nothing generated yet.
            _ => NEXT_SOON,
        };
        self.next_ns.store(next, Ordering::Release);
    }

    /// When [`Dispatcher::feed`] has something to do next, on the run's clock: the pending
    /// credit's time less the lookahead (`now_ns` when it waits for room in a full queue),
    /// `None` when the phase is fed.
    pub fn next_feed_ns(&self, now_ns: u64) -> Option<u64> {
        if self.is_fed() {
            return None;
        }
        Some(match &self.pending {
            Some(c) if !self.starved && c.intended_ns > now_ns + self.lookahead_ns => {
                c.intended_ns - self.lookahead_ns
            }
            None if self.later.is_some() => {
                (self.later.unwrap_or(now_ns)).saturating_sub(self.lookahead_ns)
            }
            // Waiting for room in a queue, or for the producer: looked at again soon.
            _ => now_ns,
        })
    }

    fn set_fed(&self) {
        self.fed.store(true, Ordering::Release);
        self.next_ns.store(NEXT_NONE, Ordering::Release);
    }

    /// Queues the credits due before `now + LOOKAHEAD`, as [`Dispatcher::feed`] says.
    fn queue_due(&mut self, now_ns: u64) {
        self.later = None;
        loop {
            let credit = match self.pending.take() {
                Some(c) => c,
                None => {
                    if self.next_index >= self.limit {
                        self.set_fed();
                        return;
                    }
                    let index = self.next_index;
                    let (conversation, at, max_turns) = match self.next_from_source(now_ns) {
                        Next::Credit(conversation, at, max_turns) => (conversation, at, max_turns),
                        Next::Later(at) => {
                            self.later = Some(at);
                            return;
                        }
                        Next::Spent => {
                            self.set_fed();
                            return;
                        }
                    };
                    if self.issue_deadline_ns.is_some_and(|d| at >= d) {
                        self.set_fed();
                        return;
                    }
                    self.next_index += 1;
                    if !self.shard.owns(index) {
                        continue;
                    }
                    Credit {
                        phase: self.phase,
                        phase_index: self.phase_index,
                        index,
                        conversation,
                        turn: 0,
                        // Cancellation is decided by the worker, per request index (`CancelPlan`).
                        cancel_after_ns: None,
                        max_turns,
                        intended_ns: at,
                    }
                }
            };
            if credit.intended_ns > now_ns + self.lookahead_ns {
                self.pending = Some(credit);
                return;
            }
            self.starved = self
                .stream
                .as_ref()
                .is_some_and(|s| !s.conversation_ready(credit.conversation));
            if self.starved {
                self.pending = Some(credit);
                return;
            }
            let local = self.shard.local(credit.index);
            let q = &self.queues[(local % self.queues.len() as u64) as usize];
            if let Err(c) = q.push(credit) {
                self.pending = Some(c);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deals_round_robin_with_lookahead_and_limit() {
        let mut d = Dispatcher::new(
            Queues::new(2),
            100.0,
            Arrival::Constant,
            1,
            Phase::Profiling,
            1_000,
            5,
            None,
        );
        d.feed(1_000, false);
        // 10 ms apart, 50 ms lookahead: indices 0..=5 fit, the limit of 5 stops at 4.
        assert!(d.is_fed());
        let a: Vec<Credit> = std::iter::from_fn(|| d.queues[0].pop()).collect();
        let b: Vec<Credit> = std::iter::from_fn(|| d.queues[1].pop()).collect();
        assert_eq!(a.iter().map(|c| c.index).collect::<Vec<_>>(), vec![0, 2, 4]);
        assert_eq!(b.iter().map(|c| c.index).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(a[1].intended_ns, 1_000 + 20_000_000);
    }

    #[test]
    fn stops_at_the_duration_and_waits_for_the_clock() {
        let mut d = Dispatcher::new(
            Queues::new(1),
            10.0,
            Arrival::Constant,
            1,
            Phase::Profiling,
            0,
            u64::MAX,
            Some(1_000_000_000),
        );
        d.feed(0, false);
        assert!(!d.is_fed());
        assert_eq!(d.queues[0].len(), 1); // 0 ms; 100 ms is beyond the lookahead
        d.feed(2_000_000_000, false);
        assert!(d.is_fed());
        assert_eq!(d.queues[0].len(), 10); // 0, 100, ..., 900 ms; 1 s is the deadline
    }

    #[test]
    fn shards_queue_their_own_credits_of_one_schedule() {
        // A gamma schedule (its draws depend on every earlier one), 3 shards of 2 workers: the
        // union of the shards' credits is the whole run's, each shard holds the indices that
        // are its own, dealt over its workers by local number.
        let make = || {
            Dispatcher::new(
                Queues::new(2),
                1_000.0,
                Arrival::Gamma { smoothness: 0.5 },
                9,
                Phase::Profiling,
                0,
                100,
                None,
            )
        };
        let mut whole = make();
        whole.feed(u64::MAX / 2, false);
        let whole = drain(&whole);
        assert_eq!(whole.len(), 100);
        let mut union = Vec::new();
        for i in 0..3 {
            let shard = Shard::new(i, 3).unwrap();
            let mut d = make().with_shard(shard);
            d.feed(u64::MAX / 2, false);
            assert!(d.is_fed());
            for (w, q) in d.queues.iter().enumerate() {
                let mine: Vec<Credit> = std::iter::from_fn(|| q.pop()).collect();
                assert!(mine.iter().all(|c| shard.owns(c.index)));
                assert!(mine.iter().all(|c| shard.local(c.index) % 2 == w as u64));
                union.extend(mine);
            }
        }
        union.sort_by_key(|c| c.index);
        let key = |c: &Credit| (c.index, c.intended_ns, c.conversation);
        assert_eq!(
            union.iter().map(key).collect::<Vec<_>>(),
            whole.iter().map(key).collect::<Vec<_>>()
        );
    }

    fn drain(d: &Dispatcher) -> Vec<Credit> {
        let mut v: Vec<Credit> = d
            .queues
            .iter()
            .flat_map(|q| std::iter::from_fn(|| q.pop()))
            .collect();
        v.sort_by_key(|c| c.index);
        v
    }

    #[test]
    fn fixed_schedule_deals_first_turns_at_absolute_times() {
        let schedule = vec![
            ScheduleEntry {
                conversation: 2,
                offset_ns: 0,
            },
            ScheduleEntry {
                conversation: 0,
                offset_ns: 30_000_000,
            },
            ScheduleEntry {
                conversation: 1,
                offset_ns: 200_000_000,
            },
        ];
        let mut d = Dispatcher::fixed_schedule(
            Queues::new(2),
            schedule,
            Phase::Profiling,
            1_000,
            u64::MAX,
            None,
        );
        d.feed(1_000, false);
        assert!(!d.is_fed(), "200 ms is beyond the lookahead");
        d.feed(1_000 + 200_000_000, false);
        assert!(d.is_fed());
        let v = drain(&d);
        let got: Vec<(u64, u32, u32, u64)> = v
            .iter()
            .map(|c| (c.index, c.conversation, c.turn, c.intended_ns))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 2, 0, 1_000),
                (1, 0, 0, 30_001_000),
                (2, 1, 0, 200_001_000)
            ]
        );
        assert!(v.iter().all(|c| c.cancel_after_ns.is_none()));
    }

    const MS: u64 = 1_000_000;

    /// A user-centric phase at 10 requests/s whose controller moves its users, starting at 2
    /// (four-turn conversations): the user present at the start with all its turns at 0, one
    /// with two turns left at 100 ms; their replacements at 0 + 4 × 200 and 100 + 2 × 200 ms.
    fn moved_users() -> (Dispatcher, Arc<AdaptiveGate>) {
        let gate = Arc::new(AdaptiveGate::new(2, false));
        let plan = UserCentric::new(10.0, 2);
        let d = Dispatcher::users(
            Queues::new(1),
            &plan,
            4.0,
            vec![4; 50],
            Sampling::Sequential,
            1,
            Phase::Profiling,
            0,
            None,
        )
        .with_moved_users(gate.clone(), 10.0);
        (d, gate)
    }

    fn times(d: &Dispatcher) -> Vec<u64> {
        drain(d).iter().map(|c| c.intended_ns / MS).collect()
    }

    #[test]
    fn a_moved_users_spawn_waits_while_as_many_are_alive_as_the_target() {
        let (mut d, gate) = moved_users();
        assert_eq!(gate.active_users(), 2);
        assert_eq!(gate.turn_gap_ns(), Some(200 * MS));
        // Decided when due (5 ms ahead), not a lookahead of 50 ms earlier.
        d.feed(0, false);
        assert_eq!(times(&d), [0]);
        assert_eq!(d.next_ns.load(Ordering::Acquire), 100 * MS);
        assert_eq!(d.next_feed_ns(0), Some(95 * MS));
        d.feed(100 * MS, false);
        assert_eq!(times(&d), [100]);
        // The first replacement is due at 500 ms with both users alive: put off by a stagger.
        d.feed(500 * MS, false);
        assert!(times(&d).is_empty());
        assert_eq!(d.next_ns.load(Ordering::Acquire), 600 * MS);
        gate.user_ended();
        d.feed(600 * MS, false);
        let v = drain(&d);
        assert_eq!(
            v.iter().map(|c| c.intended_ns / MS).collect::<Vec<_>>(),
            [600]
        );
        // The next conversation in order: the put-off spawn took none.
        assert_eq!(v[0].conversation, 2);
        assert_eq!(gate.active_users(), 2);
        // Its replacement after its four turns at 200 ms; the other initial replacement at 800.
        gate.user_ended();
        d.feed(800 * MS, false);
        assert_eq!(times(&d), [800]);
        gate.user_ended();
        d.feed(1400 * MS, false);
        assert_eq!(times(&d), [1400]);
    }

    #[test]
    fn a_raised_target_starts_its_users_a_stagger_apart_and_widens_the_turn_gap() {
        let (mut d, gate) = moved_users();
        d.feed(0, false);
        d.feed(100 * MS, false);
        assert_eq!(times(&d), [0, 100]);
        d.set_target_users(300 * MS, 4);
        assert_eq!((gate.limit(), gate.turn_gap_ns()), (4, Some(400 * MS)));
        assert_eq!(
            d.next_feed_ns(300 * MS),
            Some(300 * MS),
            "looked at again at once"
        );
        d.feed(300 * MS, false);
        d.feed(400 * MS, false);
        assert_eq!(times(&d), [300, 400]);
        assert_eq!(gate.active_users(), 4);
        // The initial users' replacements keep the gap they were planned with (500 ms), and
        // wait while four are alive.
        d.feed(500 * MS, false);
        assert!(times(&d).is_empty());
        for _ in 0..2 {
            gate.user_ended();
        }
        d.feed(600 * MS, false);
        assert_eq!(times(&d), [600]);
        d.feed(800 * MS, false);
        assert_eq!(times(&d), [800]);
        // The new users' replacements come after four turns at the new gap: 300 + 1600 and
        // 400 + 1600 ms.
        for _ in 0..4 {
            gate.user_ended();
        }
        d.feed(2000 * MS, false);
        assert_eq!(times(&d), [1900, 2000]);
    }

    #[test]
    fn publishes_when_the_next_credit_is_due_so_idle_threads_can_sleep() {
        let schedule = vec![
            ScheduleEntry {
                conversation: 0,
                offset_ns: 0,
            },
            ScheduleEntry {
                conversation: 1,
                offset_ns: 15_000_000_000,
            },
        ];
        let mut d = Dispatcher::fixed_schedule(
            Queues::new(1),
            schedule,
            Phase::Profiling,
            1_000,
            u64::MAX,
            None,
        );
        // Nothing generated yet: a worker must look soon.
        assert_eq!(d.next_ns.load(Ordering::Acquire), NEXT_SOON);
        assert_eq!(d.next_feed_ns(1_000), Some(1_000));
        d.feed(1_000, false);
        assert_eq!(d.queues[0].len(), 1);
        // The second credit is 15 s away: workers sleep until just before it, the feeder wakes
        // one lookahead before it.
        assert_eq!(d.next_ns.load(Ordering::Acquire), 15_000_001_000);
        assert_eq!(d.next_feed_ns(1_000), Some(15_000_001_000 - LOOKAHEAD_NS));
        d.feed(15_000_001_000 - LOOKAHEAD_NS, false);
        assert!(d.is_fed());
        assert_eq!(d.next_ns.load(Ordering::Acquire), NEXT_NONE);
        assert_eq!(d.next_feed_ns(15_000_001_000), None);
    }

    #[test]
    fn a_full_queue_is_looked_at_again_at_once() {
        let schedule: Vec<ScheduleEntry> = (0..QUEUE_CAPACITY as u32 + 1)
            .map(|i| ScheduleEntry {
                conversation: i,
                offset_ns: 0,
            })
            .collect();
        let mut d = Dispatcher::fixed_schedule(
            Queues::new(1),
            schedule,
            Phase::Profiling,
            0,
            u64::MAX,
            None,
        );
        d.feed(0, false);
        assert!(!d.is_fed());
        assert_eq!(d.queues[0].len(), QUEUE_CAPACITY);
        assert_eq!(d.next_ns.load(Ordering::Acquire), NEXT_SOON);
        assert_eq!(d.next_feed_ns(7), Some(7));
    }

    #[test]
    fn fixed_schedule_respects_limit_and_deadline() {
        let schedule: Vec<ScheduleEntry> = (0..5)
            .map(|i| ScheduleEntry {
                conversation: i,
                offset_ns: u64::from(i) * 10_000_000,
            })
            .collect();
        let mut d = Dispatcher::fixed_schedule(
            Queues::new(1),
            schedule.clone(),
            Phase::Profiling,
            0,
            u64::MAX,
            Some(25_000_000),
        );
        d.feed(0, false);
        assert!(d.is_fed());
        assert_eq!(drain(&d).len(), 3); // 0, 10, 20 ms; 30 ms is past the deadline
        let mut d =
            Dispatcher::fixed_schedule(Queues::new(1), schedule, Phase::Profiling, 0, 2, None);
        d.feed(0, false);
        assert_eq!(drain(&d).len(), 2);
    }

    #[test]
    fn ramped_rate_gives_absolute_times_on_aiperf_curve() {
        // Constant 10/s ramped over 1 s: 1/s until 100 ms. First credit at 0, next pending at
        // 1 s. Update 1 (100 ms, 1.9/s): min(1 s, 0.1 + 1/1.9) = 626.3 ms. Update 2 (200 ms,
        // 2.8/s): min(626.3, 0.2 + 1/2.8 = 557.1) = 557.1 ms. Update 3 (300 ms, 3.7/s):
        // 0.3 + 270.3 = 570.3 > 557.1, kept. Update 4 (400 ms, 4.6/s): 617.4, kept. Update 5
        // (500 ms, 5.5/s): 681.8, kept. So the second credit goes at 557.1 ms; the next is
        // one interval at 5.5/s later (681.8 ms) unless update 6 (600 ms, 6.4/s) pulls it to
        // 0.6 + 156.25 = 756.25 — it does not (681.8 < 756.25).
        let mut d = Dispatcher::new(
            Queues::new(1),
            10.0,
            Arrival::Constant,
            1,
            Phase::Profiling,
            0,
            3,
            None,
        )
        .with_rate_ramp(Duration::from_secs(1));
        d.feed(10_000_000_000, false);
        let t: Vec<u64> = drain(&d).iter().map(|c| c.intended_ns).collect();
        let want = [0.0, 0.2e9 + 1e9 / 2.8, 0.2e9 + 1e9 / 2.8 + 1e9 / 5.5];
        assert_eq!(t.len(), 3);
        for (got, want) in t.iter().zip(want) {
            assert!((*got as f64 - want).abs() < 2.0, "{t:?} vs {want}");
        }
    }

    #[test]
    fn ramp_reaches_the_target_rate() {
        let mut d = Dispatcher::new(
            Queues::new(1),
            100.0,
            Arrival::Constant,
            1,
            Phase::Profiling,
            0,
            u64::MAX,
            Some(3_000_000_000),
        )
        .with_rate_ramp(Duration::from_secs(1));
        let mut all = Vec::new();
        for ms in (0..=3_000).step_by(10) {
            d.feed(ms * 1_000_000, false);
            all.extend(drain(&d));
        }
        let t: Vec<u64> = all.iter().map(|c| c.intended_ns).collect();
        // After the ramp: exactly 10 ms apart.
        let tail: Vec<u64> = t
            .windows(2)
            .filter(|w| w[0] >= 1_100_000_000)
            .map(|w| w[1] - w[0])
            .collect();
        assert!(tail.iter().all(|g| g.abs_diff(10_000_000) <= 1), "{tail:?}");
        // During it, fewer than the 100 a flat rate would send in the first second (a linear
        // ramp from 10/s to 100/s sends about 55).
        let ramp = t.iter().filter(|x| **x < 1_000_000_000).count();
        assert!((45..=65).contains(&ramp), "{ramp}");
        // Intervals never grow while the rate climbs.
        let early: Vec<u64> = t
            .windows(2)
            .filter(|w| w[1] < 1_000_000_000)
            .map(|w| w[1] - w[0])
            .collect();
        assert!(early.windows(2).all(|w| w[1] <= w[0] + 1), "{early:?}");
    }
}
