//! Agents recorded flat: a capture that did not tag an agent's fan-out writes its workers' calls
//! as interleaved top-level calls (or a subagent's calls as one list). They are told apart by
//! their KV blocks, as AIPerf 0.13 does (docs/datasets.md, `weka_trace`): a call continues the
//! chain whose last call's blocks are a prefix of its own (same model, and that call ended
//! first); any other call starts a new chain, forked from the chain it shares the most leading
//! blocks with. A fork that turns out to be the same agent after a context edit (the chain it
//! forked from never went on, and it starts after that chain's end) is spliced back on.
//!
//! Then each chain besides the main one is classified: a one-call sidecar (another model, or a
//! small fresh context), a one-call reduction (a large input summarised into a short output), a
//! member of a group of at least three chains forked from one call and running together, or an
//! agent of its own.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::schema::Call;

const EPSILON_S: f64 = 1e-6;
/// A continuation this long after the chain's end must share half its blocks to be spliced on.
const SEAM_MAX_GAP_S: f64 = 3600.0;
const SEAM_MIN_OVERLAP: f64 = 0.5;
/// Sidecar: at most this many calls, and another model or a first input under
/// `max(AUX_ISL_FLOOR, AUX_ISL_RATIO · the main chain's largest input)`.
const AUX_MAX_REQUESTS: usize = 1;
const AUX_ISL_RATIO: f64 = 0.10;
const AUX_ISL_FLOOR: u64 = 16_384;
/// Reduction: one call, output in `(0, REDUCTION_OSL_MAX)`, input at least `AUX_ISL_FLOOR` and
/// over `REDUCTION_RATIO` times the output.
const REDUCTION_OSL_MAX: u64 = 4_000;
const REDUCTION_RATIO: f64 = 20.0;
/// Chains forked from one call that overlap in time form a group from this many.
const WORKER_GROUP_MIN: usize = 3;
/// A first call that forks nothing and outputs at most this is a title call, set aside.
const TITLE_MAX_OUTPUT: u64 = 64;

/// One call to place: its key (index among the trace's requests, or the subagent's), its time
/// on the root's timeline, and the call.
#[derive(Clone, Copy, Debug)]
pub struct Req<'a> {
    pub key: usize,
    pub t: f64,
    pub call: &'a Call,
}

impl Req<'_> {
    fn end(&self) -> f64 {
        self.t
            + self
                .call
                .api_time
                .filter(|a| a.is_finite())
                .unwrap_or(0.0)
                .max(0.0)
    }
}

/// How a chain came to exist.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Fork {
    /// The chain forked from (`None`: no shared blocks).
    parent: Option<usize>,
    /// The key of that chain's call forked from.
    from_key: Option<usize>,
    /// Blocks shared at the fork.
    depth: usize,
    /// Time of the chain's first call.
    time: f64,
}

#[derive(Clone, Debug, Default)]
struct Chain<'a> {
    requests: Vec<Req<'a>>,
    fork: Option<Fork>,
    spliced_into: Option<usize>,
    tail_key: Option<usize>,
    tail: &'a [i64],
    tail_end: f64,
    tail_model: &'a str,
}

/// What a chain other than the main one is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A one-call sidecar or reduction: `aux:NNN`.
    Aux,
    /// Member `m` of worker group `g`: `wg:GGG_MMM`.
    Group(usize, usize),
    /// An agent of its own: `fa:NNN`.
    Agent,
}

/// A chain other than the main one, in order of its first call.
#[derive(Clone, Debug)]
pub struct Worker<'a> {
    pub requests: Vec<Req<'a>>,
    pub kind: Kind,
}

impl Worker<'_> {
    /// The session id suffix: `aux:NNN`, `wg:GGG_MMM` or `fa:NNN` (`n`: its place among the
    /// workers).
    pub fn suffix(&self, n: usize) -> String {
        match self.kind {
            Kind::Aux => format!("aux:{n:03}"),
            Kind::Group(g, m) => format!("wg:{g:03}_{m:03}"),
            Kind::Agent => format!("fa:{n:03}"),
        }
    }
}

/// The calls split into the main chain (in time order, a title call set aside put back) and
/// the workers.
#[derive(Clone, Debug)]
pub struct Split<'a> {
    pub main: Vec<Req<'a>>,
    pub workers: Vec<Worker<'a>>,
    /// The main chain without the title call (classification compares with it).
    main_detected: Vec<Req<'a>>,
}

impl<'a> Split<'a> {
    /// The turn-0 `(tool, system)` tokens of worker chain `first` (its first call's blocks):
    /// the declared ones when its first hashed call starts with the same declared blocks as the
    /// main chain's, else none (its turn 0 is all user text).
    pub fn init_tokens(&self, tool: u64, system: u64, bs: usize, first: &[i64]) -> (u64, u64) {
        let base = self
            .main_detected
            .iter()
            .map(|r| r.call.hash_ids.as_slice())
            .find(|h| !h.is_empty())
            .unwrap_or(&[]);
        init_tokens(tool, system, bs, base, first)
    }
}

/// The declared turn-0 tokens if `first` starts with the same declared blocks as `base`.
pub fn init_tokens(tool: u64, system: u64, bs: usize, base: &[i64], first: &[i64]) -> (u64, u64) {
    let k = ((tool + system) as usize).div_ceil(bs);
    if k > 0 && first.len() >= k && base.len() >= k && first[..k] == base[..k] {
        (tool, system)
    } else {
        (0, 0)
    }
}

fn lcp(a: &[i64], b: &[i64]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn by_time(a: &Req<'_>, b: &Req<'_>) -> std::cmp::Ordering {
    a.t.total_cmp(&b.t).then(a.key.cmp(&b.key))
}

/// Splits `calls`; `None` when they are one chain (then they stay as they are).
pub fn split<'a>(calls: &[Req<'a>]) -> Option<Split<'a>> {
    if calls.len() < 2 {
        return None;
    }
    let (title, rest) = set_aside_title(calls);
    let mut d = detect(&rest);
    if d.workers.is_empty() {
        return None;
    }
    let main_detected = std::mem::take(&mut d.chains[d.main].requests);
    let mut main = main_detected.clone();
    if let Some(t) = title {
        main.push(t);
        main.sort_by(by_time);
    }
    let peak = main_detected
        .iter()
        .map(|r| r.call.input)
        .max()
        .unwrap_or(0);
    let model = main_detected.first().map(|r| r.call.model.as_str());
    let groups = worker_groups(&d);
    let workers = d
        .workers
        .iter()
        .map(|&ci| {
            let requests = d.chains[ci].requests.clone();
            let calls: Vec<&Call> = requests.iter().map(|r| r.call).collect();
            let kind = if is_aux(&calls, peak, model) || is_reduction(&calls) {
                Kind::Aux
            } else {
                groups
                    .get(&ci)
                    .map_or(Kind::Agent, |&(g, m)| Kind::Group(g, m))
            };
            Worker { requests, kind }
        })
        .collect();
    Some(Split {
        main,
        workers,
        main_detected,
    })
}

/// The earliest call, when it is a title or one-shot preamble: hashed, sharing no leading block
/// with any other call, and either short (output ≤ 64) or sharing no block at all. Returns it
/// and the other calls in key order.
fn set_aside_title<'a>(calls: &[Req<'a>]) -> (Option<Req<'a>>, Vec<Req<'a>>) {
    let mut ordered = calls.to_vec();
    ordered.sort_by(by_time);
    let first = ordered[0];
    let rest = &ordered[1..];
    let h = &first.call.hash_ids;
    let keep = || (None, calls.to_vec());
    if h.is_empty() {
        return keep();
    }
    if rest
        .iter()
        .any(|o| !o.call.hash_ids.is_empty() && lcp(h, &o.call.hash_ids) > 0)
    {
        return keep();
    }
    if first.call.output > TITLE_MAX_OUTPUT {
        let others: HashSet<i64> = rest
            .iter()
            .flat_map(|o| o.call.hash_ids.iter().copied())
            .collect();
        if h.iter().any(|b| others.contains(b)) {
            return keep();
        }
    }
    let mut rest = rest.to_vec();
    rest.sort_by_key(|r| r.key);
    (Some(first), rest)
}

struct Detection<'a> {
    chains: Vec<Chain<'a>>,
    main: usize,
    /// Live chains other than the main one, by first call.
    workers: Vec<usize>,
}

fn detect<'a>(calls: &[Req<'a>]) -> Detection<'a> {
    let mut ordered = calls.to_vec();
    ordered.sort_by(by_time);
    let mut chains: Vec<Chain<'a>> = Vec::new();
    let mut chain_of: HashMap<usize, usize> = HashMap::new();
    let mut forks_by_tail: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut by_key: HashMap<usize, Req<'a>> = HashMap::new();
    let append =
        |chains: &mut Vec<Chain<'a>>, chain_of: &mut HashMap<usize, usize>, ci, r: Req<'a>| {
            let c: &mut Chain<'a> = &mut chains[ci];
            c.requests.push(r);
            chain_of.insert(r.key, ci);
            if !r.call.hash_ids.is_empty() {
                c.tail_key = Some(r.key);
                c.tail = &r.call.hash_ids;
                c.tail_end = r.end();
                c.tail_model = &r.call.model;
            }
        };
    for r in &ordered {
        let r = *r;
        by_key.insert(r.key, r);
        let h = r.call.hash_ids.as_slice();
        if h.is_empty() {
            // No block evidence: the main chain keeps it.
            if chains.is_empty() {
                chains.push(Chain::default());
            }
            chains[0].requests.push(r);
            chain_of.insert(r.key, 0);
            continue;
        }
        if chains.is_empty() {
            chains.push(Chain::default());
            append(&mut chains, &mut chain_of, 0, r);
            continue;
        }
        if let Some(ci) = extension_target(&chains, h, r.t, &r.call.model) {
            append(&mut chains, &mut chain_of, ci, r);
            continue;
        }
        let (parent, depth) = deepest_lcp(&chains, h);
        if parent.is_none() && chains.iter().all(|c| c.tail.is_empty()) {
            append(&mut chains, &mut chain_of, 0, r);
            continue;
        }
        let fork = Fork {
            parent,
            from_key: parent.and_then(|p| chains[p].tail_key),
            depth,
            time: r.t,
        };
        let ci = chains.len();
        chains.push(Chain {
            fork: Some(fork),
            ..Chain::default()
        });
        append(&mut chains, &mut chain_of, ci, r);
        if let (Some(k), true) = (fork.from_key, depth > 0) {
            forks_by_tail.entry(k).or_default().push(ci);
        }
    }
    resolve_seams(&mut chains, &mut forks_by_tail, &mut chain_of, &by_key);
    let resolve = |mut i: usize, chains: &[Chain<'_>]| {
        while let Some(j) = chains[i].spliced_into {
            i = j;
        }
        i
    };
    for i in 0..chains.len() {
        if chains[i].spliced_into.is_none()
            && let Some(p) = chains[i].fork.and_then(|f| f.parent)
        {
            let p = resolve(p, &chains);
            if let Some(f) = chains[i].fork.as_mut() {
                f.parent = Some(p);
            }
        }
    }
    let main = resolve(chain_of[&ordered[0].key], &chains);
    let mut workers: Vec<usize> = (0..chains.len())
        .filter(|&i| chains[i].spliced_into.is_none() && i != main)
        .collect();
    workers.sort_by(|&a, &b| by_time(&chains[a].requests[0], &chains[b].requests[0]));
    Detection {
        chains,
        main,
        workers,
    }
}

/// The chain whose last hashed call's blocks are a prefix of `h`, ended by `t`, same model:
/// the deepest, ties to the lowest index.
fn extension_target(chains: &[Chain<'_>], h: &[i64], t: f64, model: &str) -> Option<usize> {
    let mut best: Option<usize> = None;
    let mut best_len = 0usize;
    for (i, c) in chains.iter().enumerate() {
        let n = c.tail.len();
        if n == 0 || n > h.len() || (best.is_some() && n <= best_len) {
            continue;
        }
        if c.tail_model != model || c.tail_end > t + EPSILON_S {
            continue;
        }
        if h[..n] == *c.tail {
            best = Some(i);
            best_len = n;
        }
    }
    best
}

/// The chain whose last hashed call shares the most leading blocks with `h` (ties: the longer
/// tail, then the lower index), and how many.
fn deepest_lcp(chains: &[Chain<'_>], h: &[i64]) -> (Option<usize>, usize) {
    let mut best = None;
    let mut key = (0usize, 0usize);
    for (i, c) in chains.iter().enumerate() {
        if c.tail.is_empty() {
            continue;
        }
        let d = lcp(c.tail, h);
        if d == 0 {
            continue;
        }
        if (d, c.tail.len()) > key {
            best = Some(i);
            key = (d, c.tail.len());
        }
    }
    (best, key.0)
}

fn last_hashed_key(c: &Chain<'_>) -> Option<usize> {
    c.requests
        .iter()
        .rev()
        .find(|r| !r.call.hash_ids.is_empty())
        .map(|r| r.key)
}

/// Splices each call's elected continuation back onto its chain, when that call is still its
/// chain's last: the deepest same-model fork that starts after it ended (ties: the earlier,
/// then the lower index), unless it starts over an hour later sharing under half the blocks.
fn resolve_seams<'a>(
    chains: &mut [Chain<'a>],
    forks_by_tail: &mut HashMap<usize, Vec<usize>>,
    chain_of: &mut HashMap<usize, usize>,
    by_key: &HashMap<usize, Req<'a>>,
) {
    let mut keys: BTreeSet<usize> = forks_by_tail.keys().copied().collect();
    let mut processed: HashSet<usize> = HashSet::new();
    while let Some(k) = keys.pop_first() {
        if !processed.insert(k) {
            continue;
        }
        let mut owner = chain_of[&k];
        while let Some(j) = chains[owner].spliced_into {
            owner = j;
        }
        if last_hashed_key(&chains[owner]) != Some(k) {
            continue;
        }
        let registered: Vec<usize> = forks_by_tail[&k]
            .iter()
            .copied()
            .filter(|&ci| chains[ci].spliced_into.is_none())
            .collect();
        let tail = by_key[&k];
        let Some(elected) = elect(chains, &registered, tail) else {
            continue;
        };
        let moved = std::mem::take(&mut chains[elected].requests);
        for r in &moved {
            chain_of.insert(r.key, owner);
        }
        chains[owner].requests.extend(moved);
        chains[elected].spliced_into = Some(owner);
        let Some(new_tail) = last_hashed_key(&chains[owner]) else {
            continue;
        };
        // The other forks of the consumed call are looked at again against the new tail.
        let new_hash = &by_key[&new_tail].call.hash_ids;
        let mut rekeyed = false;
        for &ci in &registered {
            if ci == elected || chains[ci].spliced_into.is_some() {
                continue;
            }
            let Some(first) = chains[ci].requests.first() else {
                continue;
            };
            let d = lcp(new_hash, &first.call.hash_ids);
            let Some(f) = chains[ci].fork.as_mut() else {
                continue;
            };
            if d == 0 {
                continue;
            }
            f.from_key = Some(new_tail);
            f.depth = d;
            f.parent = Some(owner);
            forks_by_tail.entry(new_tail).or_default().push(ci);
            rekeyed = true;
        }
        if rekeyed {
            processed.remove(&new_tail);
            keys.insert(new_tail);
        }
    }
}

fn elect(chains: &[Chain<'_>], registered: &[usize], tail: Req<'_>) -> Option<usize> {
    let end = tail.end();
    let blocks = tail.call.hash_ids.len();
    registered
        .iter()
        .copied()
        .filter(|&ci| {
            let c = &chains[ci];
            let (Some(f), Some(first)) = (c.fork, c.requests.first()) else {
                return false;
            };
            let blocked = blocks > 0
                && first.t - end > SEAM_MAX_GAP_S
                && (f.depth as f64 / blocks as f64) < SEAM_MIN_OVERLAP;
            f.depth > 0
                && end <= first.t + EPSILON_S
                && first.call.model == tail.call.model
                && !blocked
        })
        .max_by(|&a, &b| {
            let (fa, fb) = (
                chains[a].fork.unwrap_or(NO_FORK),
                chains[b].fork.unwrap_or(NO_FORK),
            );
            fa.depth
                .cmp(&fb.depth)
                .then(fb.time.total_cmp(&fa.time))
                .then(b.cmp(&a))
        })
}

const NO_FORK: Fork = Fork {
    parent: None,
    from_key: None,
    depth: 0,
    time: 0.0,
};

/// A chain's span for grouping: (first call's time, last end, first call's key, chain).
type Span = (f64, f64, usize, usize);

/// Worker groups: chains forked (with shared blocks) from the same call whose spans overlap,
/// at least [`WORKER_GROUP_MIN`] of them, numbered by earliest start; members by start.
fn worker_groups(d: &Detection<'_>) -> HashMap<usize, (usize, usize)> {
    // (start, end, first key, chain) per fork point.
    let mut buckets: Vec<((usize, usize), Vec<Span>)> = Vec::new();
    for &ci in &d.workers {
        let c = &d.chains[ci];
        let (Some(f), Some(first)) = (c.fork, c.requests.first()) else {
            continue;
        };
        let (Some(parent), Some(from)) = (f.parent, f.from_key) else {
            continue;
        };
        if f.depth == 0 {
            continue;
        }
        let end = c.requests.iter().map(Req::end).fold(f64::MIN, f64::max);
        let cand = (first.t, end, first.key, ci);
        match buckets.iter_mut().find(|(k, _)| *k == (parent, from)) {
            Some((_, v)) => v.push(cand),
            None => buckets.push(((parent, from), vec![cand])),
        }
    }
    let mut groups: Vec<Vec<Span>> = Vec::new();
    for (_, cands) in buckets {
        groups.extend(overlapping(cands));
    }
    groups.retain(|g| g.len() >= WORKER_GROUP_MIN);
    let start = |g: &Vec<Span>| {
        g.iter()
            .map(|c| (c.0, c.2))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .unwrap_or((0.0, 0))
    };
    groups.sort_by(|a, b| {
        let (sa, sb) = (start(a), start(b));
        sa.0.total_cmp(&sb.0).then(sa.1.cmp(&sb.1))
    });
    let mut out = HashMap::new();
    for (g, mut members) in groups.into_iter().enumerate() {
        members.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)));
        for (m, c) in members.iter().enumerate() {
            out.insert(c.3, (g, m));
        }
    }
    out
}

/// The connected components of `[start, end)` overlap (touching spans do not overlap).
fn overlapping(cands: Vec<Span>) -> Vec<Vec<Span>> {
    let mut order: Vec<usize> = (0..cands.len()).collect();
    order.sort_by(|&a, &b| {
        cands[a]
            .0
            .total_cmp(&cands[b].0)
            .then(cands[a].2.cmp(&cands[b].2))
    });
    let mut parent: Vec<usize> = (0..cands.len()).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    // Active spans (end, index), the one ending first found by a scan: few per bucket.
    let mut active: Vec<(f64, usize)> = Vec::new();
    for &i in &order {
        let t0 = cands[i].0;
        active.retain(|&(end, _)| end > t0);
        if let Some(&(_, j)) = active
            .iter()
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
        {
            let (ri, rj) = (find(&mut parent, i), find(&mut parent, j));
            parent[ri] = rj;
        }
        active.push((cands[i].1, i));
    }
    let mut comps: Vec<(usize, Vec<Span>)> = Vec::new();
    for (i, c) in cands.iter().enumerate() {
        let r = find(&mut parent, i);
        match comps.iter_mut().find(|(k, _)| *k == r) {
            Some((_, v)) => v.push(*c),
            None => comps.push((r, vec![*c])),
        }
    }
    comps.into_iter().map(|(_, v)| v).collect()
}

/// A one-call sidecar: another model than the main chain's, or a first input under
/// `max(16384, 10 % of the main chain's largest input)`.
fn is_aux(calls: &[&Call], main_peak: u64, main_model: Option<&str>) -> bool {
    let Some(first) = calls.first() else {
        return false;
    };
    if calls.len() > AUX_MAX_REQUESTS {
        return false;
    }
    if main_model.is_some_and(|m| m != first.model) {
        return true;
    }
    let threshold = AUX_ISL_FLOOR.max((AUX_ISL_RATIO * main_peak as f64) as u64);
    first.input < threshold
}

/// A one-call reduction: a large input summarised into a short output.
fn is_reduction(calls: &[&Call]) -> bool {
    let [c] = calls else {
        return false;
    };
    c.output > 0
        && c.output < REDUCTION_OSL_MAX
        && c.input >= AUX_ISL_FLOOR
        && c.input as f64 > REDUCTION_RATIO * c.output as f64
}
