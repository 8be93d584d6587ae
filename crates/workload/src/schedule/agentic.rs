//! Agentic replay's trajectories (docs/timing.md, "Agentic replay"): one lane per concurrency
//! slot, each a root trace of the dataset resumed at an instant `t*` drawn inside the trace, with
//! every session of its tree that is alive at `t*` — the root's next turn, the subagents running
//! — and how long after `t*` each goes next. The warmup phase sends each live session's last
//! turn before `t*` (priming the server's cache with the context it had then); profiling resumes
//! every lane at `t*`, and a lane whose tree has finished starts the next root from turn 0.
//!
//! The draws are AIPerf 0.13's: `t*` is `uniform(lo, hi)` of NumPy's generator seeded with the
//! first 8 bytes of SHA-256 of `"{seed}:{trace id}:{lane}"`, so a run of either tool with the
//! same `--random-seed` resumes the same sessions at the same turns.

use ringperf_wire::conversation::{AgentParts, AgentTurnParts, Branch};

use super::TemplatePicker;
use crate::workload::nprandom::NpRandom;
use crate::workload::prepared::Prepared;
use crate::workload::pyrandom::aiperf_derive;

/// Where in each trace the lanes resume: `t*` is drawn in `[min, max]` of the trace's span.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StartRange {
    /// `--trajectory-start-min-ratio` (AIPerf's default 0.25).
    pub min: f64,
    /// `--trajectory-start-max-ratio` (0.75).
    pub max: f64,
}

impl Default for StartRange {
    fn default() -> Self {
        Self {
            min: 0.25,
            max: 0.75,
        }
    }
}

/// One session of a lane alive at its `t*`.
#[derive(Clone, Debug, PartialEq)]
pub struct Stream {
    /// The conversation, by index in the dataset.
    pub conversation: u32,
    /// Its first turn at or after `t*`: warmup sends the turn before it, profiling this one.
    pub next: u32,
    /// How long after `t*` the next turn goes, ms (its trace time minus `t*`; 0 when it has
    /// none).
    pub offset_ms: f64,
    /// The lane's root waits for subagents alive at `t*` before its next turn (it goes when
    /// they have finished, not at its offset).
    pub waiting: bool,
    /// A subagent: the branch of the root it belongs to (by index in the root's branches).
    pub branch: Option<u32>,
}

impl Stream {
    /// The turn the warmup phase sends for this session: the last before `t*`.
    pub fn warm_turn(&self) -> Option<u32> {
        self.next.checked_sub(1)
    }
}

/// One concurrency slot's trajectory.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    /// The root conversation it replays first.
    pub root: u32,
    /// The instant it resumes at, ms of trace time; `None` for a trace without timestamps
    /// (resumed at a turn drawn in the range of its turns instead).
    pub t_star_ms: Option<f64>,
    /// Its sessions alive at `t*`: the root first (when it has a turn left), then subagents.
    pub streams: Vec<Stream>,
}

impl Lane {
    /// The root has no turn left at `t*`: only subagents run.
    pub fn rootless(&self) -> bool {
        self.streams.first().is_none_or(|s| s.branch.is_some())
    }
}

/// Every lane, and how many draws of the sampler they took (a lane whose tree has finished
/// draws its next root after them).
#[derive(Clone, Debug, PartialEq)]
pub struct Trajectories {
    pub lanes: Vec<Lane>,
    pub draws: u64,
    /// Root traces the sampler draws from.
    pub pool: usize,
}

/// Why no trajectory could be built (AIPerf's words).
#[derive(Clone, Debug, PartialEq)]
pub enum TrajectoryError {
    Empty,
    Exhausted,
    Wrap { concurrency: u64, pool: usize },
}

impl std::fmt::Display for TrajectoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Empty => f.write_str("Loader produced 0 traces; trajectories cannot be built."),
            Self::Exhausted => {
                f.write_str("Trajectories empty after skipping invalid traces; pool exhausted.")
            }
            Self::Wrap { concurrency, pool } => write!(
                f,
                "concurrency {concurrency} exceeds the {pool} distinct loaded traces while \
                 dataset wrapping is disabled; reduce concurrency to at most {pool}, bound \
                 sessions within the loaded corpus, enable a cache-bust target, or set \
                 --allow-dataset-wrap"
            ),
        }
    }
}

impl std::error::Error for TrajectoryError {}

/// What bounds the run, for the wrap rule: a run bounded by nothing runs each trace once.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bounds {
    pub sessions: Option<u64>,
    pub requests: Option<u64>,
    pub duration: bool,
    /// `--allow-dataset-wrap`, or a cache-bust target (its markers keep repeated traces apart).
    pub wrap_allowed: bool,
}

/// Refuses a concurrency over the distinct traces when repeating a trace is not allowed and the
/// run would have to repeat them.
pub fn check_wrap(pool: usize, concurrency: u64, b: &Bounds) -> Result<(), TrajectoryError> {
    if b.wrap_allowed {
        return Ok(());
    }
    let one_pass = b.sessions.is_none() && b.requests.is_none() && !b.duration;
    if one_pass || b.sessions.is_some_and(|s| s <= pool as u64) {
        return Ok(());
    }
    if concurrency > pool as u64 {
        return Err(TrajectoryError::Wrap { concurrency, pool });
    }
    Ok(())
}

/// Builds `concurrency` lanes from the roots `picker` draws (skipping a trace that has nothing
/// alive to resume), at most `concurrency + 2 × roots` draws.
pub fn build(
    d: &Prepared,
    picker: &mut TemplatePicker,
    concurrency: u64,
    range: StartRange,
    seed: u64,
) -> Result<Trajectories, TrajectoryError> {
    let pool = d.root_count();
    if d.conversations.is_empty() || pool == 0 {
        return Err(TrajectoryError::Empty);
    }
    let mut lanes = Vec::new();
    let mut draws = 0u64;
    let budget = concurrency + 2 * pool as u64;
    while (lanes.len() as u64) < concurrency && draws < budget {
        let root = d.root(picker.pick(draws));
        draws += 1;
        if let Some(lane) = lane_of(d, root, lanes.len() as u64, range, seed) {
            lanes.push(lane);
        }
    }
    if lanes.is_empty() {
        return Err(TrajectoryError::Exhausted);
    }
    Ok(Trajectories { lanes, draws, pool })
}

/// The conversation `c`'s turn `t`'s trace time, if finite.
fn ts(d: &Prepared, c: u32, t: usize) -> Option<f64> {
    d.conversations
        .get(c as usize)?
        .turns
        .get(t)?
        .timestamp_ms
        .filter(|v| v.is_finite())
}

/// The first turn of `c` at or after `t_star`.
fn next_at(d: &Prepared, c: u32, t_star: f64) -> Option<u32> {
    let turns = d.conversations.get(c as usize)?.turns.len();
    (0..turns)
        .find(|&t| ts(d, c, t).is_some_and(|v| v >= t_star))
        .map(|t| t as u32)
}

/// Every conversation of `root`'s tree (the root, its subagents, theirs).
fn tree_of(d: &Prepared, root: u32) -> Vec<u32> {
    let mut seen = vec![root];
    let mut i = 0;
    while let Some(&c) = seen.get(i) {
        i += 1;
        if let Some(conv) = d.conversations.get(c as usize) {
            for b in conv.branches() {
                for &child in &b.children {
                    if !seen.contains(&child) {
                        seen.push(child);
                    }
                }
            }
        }
    }
    seen
}

/// Lane `lane`'s trajectory on `root`, or `None` when nothing of it can be resumed.
fn lane_of(d: &Prepared, root: u32, lane: u64, range: StartRange, seed: u64) -> Option<Lane> {
    let conv = d.conversations.get(root as usize)?;
    if conv.turns.is_empty() {
        return None;
    }
    let mut rng = NpRandom::new(aiperf_derive(seed, &format!("{}:{lane}", conv.session_id)));
    let stamps: Vec<f64> = tree_of(d, root)
        .into_iter()
        .flat_map(|c| {
            let n = d.conversations.get(c as usize).map_or(0, |c| c.turns.len());
            (0..n).filter_map(move |t| ts(d, c, t))
        })
        .collect();
    if stamps.is_empty() {
        return untimed(d, root, &mut rng, range);
    }
    let start = stamps.iter().copied().fold(f64::INFINITY, f64::min);
    let end = stamps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lo = start + range.min * (end - start);
    let hi = (start + range.max * (end - start)).max(lo);
    let t_star = if hi == lo { lo } else { rng.uniform(lo, hi) };
    snapshot(d, root, t_star)
}

/// Where a branch of the root stands.
struct BranchAt<'a> {
    branch: &'a Branch,
    /// Its trace start: the branch's own, else its children's earliest first turn.
    start_ms: Option<f64>,
    /// The root turn that waits for it (none for a background branch).
    join: Option<u32>,
    /// The root turn that starts it.
    spawn: Option<u32>,
}

/// The sessions of `root`'s tree alive at `t_star`.
fn snapshot(d: &Prepared, root: u32, t_star: f64) -> Option<Lane> {
    let conv = d.conversations.get(root as usize)?;
    let root_next = next_at(d, root, t_star);
    let branches: Vec<BranchAt<'_>> = conv
        .branches()
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let i = i as u32;
            let start_ms = b.start_ms.filter(|v| v.is_finite()).or_else(|| {
                b.children
                    .iter()
                    .filter_map(|&c| ts(d, c, 0))
                    .reduce(f64::min)
            });
            BranchAt {
                branch: b,
                start_ms,
                join: (!b.background)
                    .then(|| conv.turns.iter().position(|t| t.joins().contains(&i)))
                    .flatten()
                    .map(|t| t as u32),
                spawn: conv
                    .turns
                    .iter()
                    .position(|t| t.spawns().contains(&i))
                    .map(|t| t as u32),
            }
        })
        .collect();
    let mut children = Vec::new();
    let mut pending_joins = Vec::new();
    for (i, b) in branches.iter().enumerate() {
        if let Some(start) = b.start_ms
            && t_star < start
        {
            let spawn_ts = b.spawn.and_then(|s| ts(d, root, s as usize));
            let spawned = match (b.spawn, spawn_ts) {
                (Some(s), Some(at)) => t_star >= at && root_next.is_none_or(|n| n > s),
                _ => false,
            };
            if !spawned {
                continue;
            }
        }
        let before = children.len();
        for &child in &b.branch.children {
            let Some(next) = next_at(d, child, t_star) else {
                continue;
            };
            if b.start_ms.is_none() && ts(d, child, 0).is_some_and(|first| t_star < first) {
                continue;
            }
            children.push(Stream {
                conversation: child,
                next,
                offset_ms: offset(ts(d, child, next as usize), t_star),
                waiting: false,
                branch: Some(i as u32),
            });
        }
        if children.len() > before
            && let Some(j) = b.join
        {
            pending_joins.push(j);
        }
    }
    let mut streams = Vec::new();
    if let Some(next) = root_next {
        streams.push(Stream {
            conversation: root,
            next,
            offset_ms: offset(ts(d, root, next as usize), t_star),
            waiting: pending_joins.contains(&next),
            branch: None,
        });
    }
    streams.extend(children);
    if streams.iter().all(|s| s.waiting) {
        // Nothing (or only a root that waits for nobody running) to resume.
        return None;
    }
    Some(Lane {
        root,
        t_star_ms: Some(t_star),
        streams,
    })
}

fn offset(at: Option<f64>, t_star: f64) -> f64 {
    at.map_or(0.0, |a| (a - t_star).max(0.0))
}

/// A trace without timestamps: resumed at turn `k + 1` after warming turn `k`, `k` drawn among
/// the turns in the range (at most the last but one) whose turn and next turn can each start a
/// session.
fn untimed(d: &Prepared, root: u32, rng: &mut NpRandom, range: StartRange) -> Option<Lane> {
    let conv = d.conversations.get(root as usize)?;
    let n = conv.turns.len();
    if n <= 1 {
        return None;
    }
    let candidates: Vec<usize> = if n == 2 {
        vec![0]
    } else {
        let hi = ((range.max * n as f64) as usize).min(n - 2);
        let lo = ((range.min * n as f64) as usize).min(n - 2).min(hi);
        (lo..=hi).collect()
    };
    let sendable = |t: usize| {
        conv.turns.get(t).is_some_and(|turn| {
            turn.body.is_some()
                || turn.source.as_ref().is_none_or(|s| {
                    !matches!(&s.content, ringperf_wire::conversation::Content::Messages(m) if m.is_empty())
                })
                || conv.system.is_some()
                || conv.user_context.is_some()
        })
    };
    let candidates: Vec<usize> = candidates
        .into_iter()
        .filter(|&k| sendable(k) && sendable(k + 1))
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let k = candidates[rng.below(candidates.len() as u64) as usize];
    Some(Lane {
        root,
        t_star_ms: None,
        streams: vec![Stream {
            conversation: root,
            next: k as u32 + 1,
            offset_ms: 0.0,
            waiting: false,
            branch: None,
        }],
    })
}

/// When each warmup request goes, ms after the warmup phase starts, in the order of
/// [`warm_turns`]: spread (the default), a session that sent its turn `lead` before its lane's
/// `t*` goes at `max lead − lead`, so that every lane reaches its `t*` at the same moment (a lead
/// capped at `idle_cap_ms` when `--trace-idle-gap-cap-seconds` is given); `burst`: all at once.
pub fn warm_schedule(
    d: &Prepared,
    lanes: &[Lane],
    burst: bool,
    idle_cap_ms: Option<f64>,
) -> Vec<(usize, usize, f64)> {
    let mut out: Vec<(usize, usize, Option<f64>)> = Vec::new();
    for (l, lane) in lanes.iter().enumerate() {
        for (s, stream) in lane.streams.iter().enumerate() {
            let Some(warm) = stream.warm_turn() else {
                continue;
            };
            let lead = match (burst, lane.t_star_ms) {
                (false, Some(t_star)) => ts(d, stream.conversation, warm as usize).map(|at| {
                    let lead = t_star - at;
                    idle_cap_ms.map_or(lead, |cap| lead.min(cap))
                }),
                _ => None,
            };
            out.push((l, s, lead));
        }
    }
    let max_lead = out
        .iter()
        .filter_map(|x| x.2)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
        .unwrap_or(0.0);
    out.into_iter()
        .map(|(l, s, lead)| (l, s, lead.map_or(0.0, |lead| max_lead - lead)))
        .collect()
}

/// When each stream of `lane` that does not wait goes in profiling, ms after the phase starts:
/// its offset, less a shift that brings the lane's earliest within `idle_cap_ms` of the start
/// (when given); `burst`: the lane's earliest at the start. A waiting root gets `None` (it goes
/// when its subagents have finished).
pub fn profile_offsets(lane: &Lane, burst: bool, idle_cap_ms: Option<f64>) -> Vec<Option<f64>> {
    let ready = || lane.streams.iter().filter(|s| !s.waiting);
    let earliest = ready().map(|s| s.offset_ms).reduce(f64::min);
    let shift = match (idle_cap_ms, earliest) {
        (Some(cap), Some(e)) => (e - cap).max(0.0),
        _ => 0.0,
    };
    let t0 = if burst {
        earliest.map_or(0.0, |e| e - shift)
    } else {
        0.0
    };
    lane.streams
        .iter()
        .map(|s| (!s.waiting).then_some(s.offset_ms - shift - t0))
        .collect()
}

#[cfg(test)]
#[path = "agentic_tests.rs"]
mod tests;
