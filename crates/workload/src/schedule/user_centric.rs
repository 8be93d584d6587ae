//! User-centric rate (`--user-centric-rate QPS --num-users U`), as AIPerf 0.13 plans it
//! (`timing/strategies/user_centric_rate.py`):
//!
//! - `stagger = 1/QPS`, `turn_gap = U/QPS`: each user sends one turn per gap and never two at
//!   once; a late answer pushes that user's next turn to `max(answer, previous + gap)`.
//! - At t = 0 the users look like a steady state: with `L = max(1, round(mean turns) − 1)`
//!   (round half to even, as Python's `round`), user `i` of `0..U` has a virtual age
//!   `(U − i)·L`, has done `age / U` (integer division) of its `L` gaps and has
//!   `L − age / U` turns left; user 0 has none left and is replaced by a fresh user with all
//!   its conversation's turns. Each user starts at `order · stagger`: the fresh user at 0,
//!   user `i` at order `U − slot`, where `slot = age mod U`, or `(i · step) mod U` when
//!   `gcd(U, L) > 1` (`step` = the smallest integer > 1 coprime with U, 1 when U ≤ 2).
//! - User ids count from 1 in that order (id 1 is the virtually finished user, never sent).
//!   Replacement users are spawned at `spawn + turns · turn_gap` after each user's start,
//!   on an absolute schedule that response times do not move.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The timing of a user-centric phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UserCentric {
    users: u64,
    stagger_ns: f64,
    turn_gap_ns: f64,
}

/// One of the users present at the phase start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InitialUser {
    /// AIPerf's user id (also its correlation id), from 2 upwards.
    pub user_id: u64,
    /// Position in the start order (0 fires first).
    pub order: u64,
    /// When its first turn goes, from the phase start.
    pub start_offset_ns: u64,
    /// Turns it sends (its first `max_turns` turns), or `None` for all of its conversation's.
    pub max_turns: Option<u32>,
}

/// A user to start now: its id and its planned start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spawn {
    pub user_id: u64,
    pub at_ns: u64,
}

/// The replacement-user schedule: a min-heap of spawn times.
#[derive(Clone, Debug)]
pub struct Spawner {
    queue: BinaryHeap<Reverse<u64>>,
    turn_gap_ns: f64,
    next_user_id: u64,
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn alternate_step(n: u64) -> u64 {
    (2..n).find(|s| gcd(n, *s) == 1).unwrap_or(1)
}

impl UserCentric {
    /// `rate` requests/s in total over `users` users (both validated positive).
    pub fn new(rate: f64, users: u64) -> Self {
        let users = users.max(1);
        Self {
            users,
            stagger_ns: 1e9 / rate,
            turn_gap_ns: users as f64 * 1e9 / rate,
        }
    }

    /// The smallest gap between two users' first turns: `1/QPS`.
    pub fn stagger_ns(&self) -> f64 {
        self.stagger_ns
    }

    /// Each user's gap between turns: `U/QPS`.
    pub fn turn_gap_ns(&self) -> f64 {
        self.turn_gap_ns
    }

    /// The same plan with another turn gap (an adaptive phase's, for its users' next turns).
    #[must_use]
    pub fn with_turn_gap_ns(self, turn_gap_ns: f64) -> Self {
        Self {
            turn_gap_ns,
            ..self
        }
    }

    /// The users present at the phase start, in user-id order (the order AIPerf samples their
    /// conversations in). `mean_turns` is the dataset's mean turns per conversation.
    pub fn initial_users(&self, mean_turns: f64) -> Vec<InitialUser> {
        let n = self.users;
        let session_turns = mean_turns.round_ties_even().max(0.0) as u64;
        let lifetime = session_turns.saturating_sub(1).max(1);
        let step = (gcd(n, lifetime) > 1).then(|| alternate_step(n));
        let mut out = Vec::with_capacity(n as usize);
        for i in 0..n {
            let age = (n - i) * lifetime;
            let left = lifetime.saturating_sub(age / n);
            if left == 0 {
                continue;
            }
            let slot = match step {
                Some(s) => (i * s) % n,
                None => age % n,
            };
            let order = n - slot;
            out.push(InitialUser {
                user_id: i + 1,
                order,
                start_offset_ns: self.at(order as f64 * self.stagger_ns),
                max_turns: Some(u32::try_from(left).unwrap_or(u32::MAX)),
            });
        }
        out.push(InitialUser {
            user_id: n + 1,
            order: 0,
            start_offset_ns: 0,
            max_turns: None,
        });
        out
    }

    fn at(&self, ns: f64) -> u64 {
        ns.round().max(0.0) as u64
    }

    /// When a user's next turn goes: `max(now, previous planned send + turn_gap)`, where `now`
    /// is when the previous turn's answer came back (AIPerf's `credit_return`). The worker asks
    /// this for every later turn of a user.
    ///
    /// The turn gap is rounded to the nearest whole ns (half away from zero) and added to the
    /// previous turn's planned time, itself whole ns: AIPerf adds the unrounded gap to a float
    /// time, so a user's plan may drift from AIPerf's by under 0.5 ns a turn, never more.
    pub fn next_turn_ns(&self, prev_planned_ns: u64, now_ns: u64) -> u64 {
        now_ns.max(prev_planned_ns.saturating_add(self.at(self.turn_gap_ns)))
    }

    /// An empty replacement schedule; ids continue after `initial`'s.
    pub fn spawner(&self, initial: &[InitialUser]) -> Spawner {
        Spawner {
            queue: BinaryHeap::new(),
            turn_gap_ns: self.turn_gap_ns,
            next_user_id: initial.iter().map(|u| u.user_id).max().unwrap_or(0) + 1,
        }
    }
}

impl Spawner {
    /// A user started at `started_ns` sending `turns` turns is replaced at
    /// `started_ns + turns · turn_gap`. Call it for every initial user (with its resolved
    /// turn count) and for every spawned user.
    pub fn schedule_replacement(&mut self, started_ns: u64, turns: u32) {
        self.schedule_replacement_at_gap(started_ns, turns, self.turn_gap_ns);
    }

    /// [`Spawner::schedule_replacement`] at the turn gap `turn_gap_ns` (a user planned before
    /// the gap moved).
    pub fn schedule_replacement_at_gap(&mut self, started_ns: u64, turns: u32, turn_gap_ns: f64) {
        let at = started_ns as f64 + f64::from(turns) * turn_gap_ns;
        self.queue.push(Reverse(at.round() as u64));
    }

    /// Puts the earliest pending spawn off by `by_ns`, giving it no user id.
    pub fn defer_earliest(&mut self, by_ns: u64) {
        if let Some(Reverse(at)) = self.queue.pop() {
            self.queue.push(Reverse(at.saturating_add(by_ns)));
        }
    }

    /// Replacements scheduled from now on use `turn_gap_ns` (an adaptive phase moved its
    /// users, and with them the turn gap).
    pub fn set_turn_gap_ns(&mut self, turn_gap_ns: f64) {
        self.turn_gap_ns = turn_gap_ns;
    }

    /// A spawn at `at_ns` (a user added by a raised target, or a spawn put off).
    pub fn push_at(&mut self, at_ns: u64) {
        self.queue.push(Reverse(at_ns));
    }

    /// The earliest pending spawn time.
    pub fn peek_ns(&self) -> Option<u64> {
        self.queue.peek().map(|r| r.0)
    }

    /// Takes the earliest spawn and gives it the next user id.
    pub fn pop(&mut self) -> Option<Spawn> {
        let Reverse(at_ns) = self.queue.pop()?;
        let user_id = self.next_user_id;
        self.next_user_id += 1;
        Some(Spawn { user_id, at_ns })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn aiperf_docstring_example() {
        // 15 users, 20 turns, 1 QPS: lifetime 19, gcd(15, 19) = 1.
        let uc = UserCentric::new(1.0, 15);
        assert_eq!(uc.turn_gap_ns(), 15e9);
        let v = uc.initial_users(20.0);
        assert_eq!(v.len(), 15);
        let row = |id: u64| v.iter().find(|u| u.user_id == id).copied().unwrap();
        // (id, turns, start s) from AIPerf's table.
        for (id, turns, at) in [
            (16, None, 0),
            (5, Some(6), 1),
            (9, Some(11), 2),
            (13, Some(16), 3),
            (2, Some(2), 4),
            (6, Some(7), 5),
            (10, Some(12), 6),
            (14, Some(17), 7),
            (3, Some(3), 8),
            (7, Some(8), 9),
            (11, Some(13), 10),
            (15, Some(18), 11),
            (4, Some(4), 12),
            (8, Some(9), 13),
            (12, Some(14), 14),
        ] {
            let u = row(id);
            assert_eq!(
                (u.max_turns, u.start_offset_ns),
                (turns, at * S),
                "user {id}"
            );
        }
        assert!(v.iter().all(|u| u.user_id != 1));
        // Ids ascend: the order AIPerf samples conversations in.
        assert!(v.windows(2).all(|w| w[0].user_id < w[1].user_id));
    }

    #[test]
    fn alternate_spacing_when_users_and_lifetime_share_a_factor() {
        // 4 users, 3 turns → lifetime 2, gcd 2: step 3. i=1: age 6, left 2 − 1 = 1,
        // slot 3 → order 1; i=2: age 4, left 1, slot 2 → order 2; i=3: age 2, left 2,
        // slot 1 → order 3. Stagger at 2 QPS is 0.5 s.
        let uc = UserCentric::new(2.0, 4);
        let v = uc.initial_users(3.0);
        let got: Vec<(u64, u64, Option<u32>, u64)> = v
            .iter()
            .map(|u| (u.user_id, u.order, u.max_turns, u.start_offset_ns))
            .collect();
        assert_eq!(
            got,
            vec![
                (2, 1, Some(1), S / 2),
                (3, 2, Some(1), S),
                (4, 3, Some(2), 3 * S / 2),
                (5, 0, None, 0)
            ]
        );
        assert_eq!(uc.turn_gap_ns(), 2e9);
    }

    #[test]
    fn mean_turns_round_half_to_even() {
        // round(2.5) = 2 → lifetime 1: every user but the replaced one has 1 turn left.
        let v = UserCentric::new(1.0, 3).initial_users(2.5);
        assert!(
            v.iter()
                .filter(|u| u.order != 0)
                .all(|u| u.max_turns == Some(1))
        );
        // round(3.5) = 4 → lifetime 3.
        let v = UserCentric::new(1.0, 2).initial_users(3.5);
        assert_eq!(v[0].max_turns, Some(2));
    }

    #[test]
    fn next_turn_rounds_the_gap_to_whole_ns_from_the_previous_plan() {
        // 3 QPS over 1 user: a gap of 333 333 333.3 ns. Each turn is planned from the previous
        // turn's whole-ns plan, so three turns land 1 ns short of 1 s.
        let uc = UserCentric::new(3.0, 1);
        let mut at = 0;
        let plan: Vec<u64> = (0..3)
            .map(|_| {
                at = uc.next_turn_ns(at, 0);
                at
            })
            .collect();
        assert_eq!(plan, [333_333_333, 666_666_666, 999_999_999]);
        // 1.5 QPS over 1 user: 666 666 666.7 ns rounds up.
        assert_eq!(UserCentric::new(1.5, 1).next_turn_ns(10, 0), 666_666_677);
        // A gap of exactly half a ns rounds away from zero.
        assert_eq!(UserCentric::new(2e9, 1).next_turn_ns(10, 0), 11);
        // Whole-ns arithmetic: exact far beyond f64's 2^53, and saturating.
        let uc = UserCentric::new(1.0, 1);
        assert_eq!(uc.next_turn_ns(1 << 60, 0), (1 << 60) + S);
        assert_eq!(uc.next_turn_ns(u64::MAX - 1, 0), u64::MAX);
    }

    #[test]
    fn turn_gaps_and_replacements() {
        let uc = UserCentric::new(4.0, 2); // gap 0.5 s
        assert_eq!(uc.next_turn_ns(S, S + 1), S + S / 2);
        // A late answer re-aligns to the answer.
        assert_eq!(uc.next_turn_ns(S, 3 * S), 3 * S);
        let initial = uc.initial_users(2.0);
        let mut sp = uc.spawner(&initial);
        sp.schedule_replacement(S, 3); // 1 + 3 · 0.5 = 2.5 s
        sp.schedule_replacement(0, 2); // 1 s
        assert_eq!(sp.peek_ns(), Some(S));
        let first = sp.pop().unwrap();
        assert_eq!(
            first,
            Spawn {
                user_id: 4,
                at_ns: S
            }
        );
        sp.schedule_replacement(first.at_ns, 4); // 1 + 2 = 3 s
        assert_eq!(
            sp.pop().unwrap(),
            Spawn {
                user_id: 5,
                at_ns: 5 * S / 2
            }
        );
        assert_eq!(
            sp.pop().unwrap(),
            Spawn {
                user_id: 6,
                at_ns: 3 * S
            }
        );
        assert_eq!(sp.pop(), None);
    }
}
