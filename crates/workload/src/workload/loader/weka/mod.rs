//! `weka_trace`: recorded coding-agent sessions (docs/datasets.md, `weka_trace`). One JSON
//! object per file (or a directory of them) records an agent's requests with their KV-block
//! `hash_ids`, and the subagents it started with theirs. Each trace becomes a root
//! conversation, and each subagent a child conversation the root's turn starts and a later
//! turn waits for.
//!
//! Prompts are rebuilt from the blocks ([`buffer`]): the same hash id of one trace is the same
//! text wherever it is sent, so a server's prefix cache sees what the recorded one saw; every
//! turn is its recorded `in` tokens and asks for its recorded `out`.

mod barriers;
mod buffer;
mod chains;
pub mod hub;
mod schema;
pub mod tracelab;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use ringperf_wire::conversation::{
    AgentConversation, AgentTurn, Branch, Content, ContextMode, Conversation, Dataset, Sampling,
    Turn, TurnSource,
};

use super::{BlockPrompts, LoadError, LoadErrorKind};
use crate::workload::Tokenizer;
use schema::{Request, Subagent, WekaTrace};

/// A request is joined by the first later parent request that starts this close to (or after)
/// its end, in seconds.
const JOIN_EPSILON_S: f64 = 1e-6;

/// What the load takes from the run's settings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WekaParams {
    /// `--use-think-time-only`: a later turn waits its recorded `think_time` (when recorded)
    /// instead of the idle gap between the previous request's end and its start.
    pub think_time_only: bool,
    /// `--inter-turn-delay-cap-seconds`: no turn waits longer than this after the previous.
    pub delay_cap_s: Option<f64>,
    /// `--max-context-length`: traces whose largest request (prompt plus asked output) is
    /// longer are left out.
    pub max_context_length: Option<u64>,
    /// `--synthesis-max-osl`: a root's turns ask for at most this many tokens.
    pub max_osl: Option<u32>,
    /// `--synthesis-max-isl`: a root's requests of more input tokens are left out (a
    /// subagent's are kept, as AIPerf keeps them).
    pub max_isl: Option<u64>,
    /// `--model-names`: the trace's models map onto them in order of appearance.
    pub model_names: Vec<String>,
    /// `AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS=false`: a trace's (and a subagent's) calls
    /// stay one conversation, not split into agent chains.
    pub keep_flat_agents: bool,
    /// `--trace-idle-gap-cap-seconds`: every gap between two request starts of a trace over
    /// this is cut to it; the delays follow the compressed timeline (no think time).
    pub idle_gap_cap_s: Option<f64>,
    /// The traces to load at most (after `--max-context-length`): `--num-dataset-entries`,
    /// else `--conversation-num`, else an explicit `--request-count`.
    pub entries: Option<u64>,
    /// `--num-dataset-entries` alone: the cap of a Hugging Face corpus.
    pub dataset_entries: Option<u64>,
}

/// Whether `trace` passes `--max-context-length`.
fn eligible(params: &WekaParams, trace: &WekaTrace) -> bool {
    params
        .max_context_length
        .is_none_or(|max| peak_context(trace, params.max_osl) <= max)
}

/// Whether `path` is a Weka trace: a `.json` file holding one, or a directory whose first
/// `.json` file (by name) does.
pub fn detect(path: &Path) -> bool {
    let file = if path.is_dir() {
        match json_files(path) {
            Ok(files) => match files.into_iter().next() {
                Some(f) => f,
                None => return false,
            },
            Err(_) => return false,
        }
    } else {
        path.to_path_buf()
    };
    file.extension().is_some_and(|e| e == "json") && read_trace(&file).is_ok()
}

/// Loads the trace file, or every `*.json` file of the directory (by name), at `path`.
///
/// # Errors
/// A file that is not JSON or not a Weka trace, two traces with one id, no trace left after
/// `--max-context-length`, or a trace whose blocks cannot make its prompts.
pub fn load(
    path: &Path,
    params: &WekaParams,
    tokenizer: &Tokenizer,
    seed: u64,
) -> Result<Dataset, LoadError> {
    let files = if path.is_dir() {
        json_files(path)?
    } else {
        vec![path.to_path_buf()]
    };
    let mut traces: Vec<WekaTrace> = Vec::with_capacity(files.len());
    let mut seen = HashSet::new();
    let cap = params.entries.map_or(usize::MAX, |n| n as usize);
    let mut admitted = 0;
    for file in &files {
        if ringperf_io::control::interrupted() {
            break;
        }
        // Filter, then cap: the scan stops once enough traces are eligible.
        if admitted >= cap {
            break;
        }
        let trace = read_trace(file)?;
        if !seen.insert(trace.id.clone()) {
            return Err(LoadError::file(
                file,
                LoadErrorKind::Invalid(format!(
                    "duplicate trace id '{}' in directory: it conflicts with an earlier file",
                    trace.id
                )),
            ));
        }
        admitted += usize::from(eligible(params, &trace));
        traces.push(trace);
    }
    from_traces(path, traces, params, tokenizer, seed)
}

/// The dataset of `traces` read from `path` (a Weka file or directory, or a TraceLab file).
///
/// # Errors
/// No trace, none left after `--max-context-length`, or a trace whose blocks cannot make its
/// prompts.
pub(super) fn from_traces(
    path: &Path,
    mut traces: Vec<WekaTrace>,
    params: &WekaParams,
    tokenizer: &Tokenizer,
    seed: u64,
) -> Result<Dataset, LoadError> {
    if traces.is_empty() {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    }
    if let Some(max) = params.max_context_length {
        let scanned = traces.len();
        let smallest = traces
            .iter()
            .map(|t| peak_context(t, params.max_osl))
            .min()
            .unwrap_or(0);
        traces.retain(|t| peak_context(t, params.max_osl) <= max);
        if traces.is_empty() {
            return Err(LoadError::file(
                path,
                LoadErrorKind::Invalid(format!(
                    "no trace is eligible under --max-context-length {max} (scanned \
                     {scanned}); the smallest needs {smallest} tokens: raise \
                     --max-context-length to at least {smallest} to admit any trace"
                )),
            ));
        }
    }
    let mut prompts = BlockPrompts::new(tokenizer, 64, seed, 0);
    let plans: Vec<Plan<'_>> = traces
        .iter()
        .map(|t| {
            Plan::of(t, params.keep_flat_agents, params.max_isl)
                .map_err(|m| LoadError::file(path, LoadErrorKind::Invalid(m)))
        })
        .collect::<Result<_, _>>()?;
    let mut roots = Vec::with_capacity(traces.len());
    let mut children = Vec::new();
    let first_child = traces.len() as u32;
    for (i, (trace, plan)) in traces.iter().zip(&plans).enumerate() {
        let (root, kids) = build(
            trace,
            plan,
            params,
            &mut prompts,
            (i as u32, first_child + children.len() as u32),
        )
        .map_err(|m| LoadError::file(path, LoadErrorKind::Invalid(m)))?;
        roots.push(root);
        children.extend(kids);
    }
    roots.extend(children);
    Ok(Dataset {
        conversations: roots,
        default_sampling: Sampling::Sequential,
        replay: true,
    })
}

/// Every `*.json` file directly in `dir`, by name.
fn json_files(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| LoadError::file(dir, LoadErrorKind::Io(e.to_string())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    Ok(files)
}

fn read_trace(file: &Path) -> Result<WekaTrace, LoadError> {
    let bytes =
        std::fs::read(file).map_err(|e| LoadError::file(file, LoadErrorKind::Io(e.to_string())))?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| LoadError::file(file, LoadErrorKind::Json(e.to_string())))?;
    schema::parse(value).map_err(|e| {
        LoadError::file(
            file,
            LoadErrorKind::Invalid(format!(
                "the file is JSON but does not match the Weka trace schema: {e}"
            )),
        )
    })
}

/// The largest request of `trace`: prompt plus the output it asks for (a root's capped by
/// `--synthesis-max-osl`, a subagent's as recorded; 0 asks for 1).
fn peak_context(trace: &WekaTrace, max_osl: Option<u32>) -> u64 {
    let mut peak = 0;
    for r in &trace.requests {
        match r {
            Request::Call(c) => {
                peak = peak.max(c.input + u64::from(root_max_tokens(c.output, max_osl)));
            }
            Request::Subagent(s) => {
                for c in &s.requests {
                    peak = peak.max(c.input + c.output.max(1));
                }
            }
        }
    }
    peak
}

/// A root turn's `max_tokens`: the recorded output, at most `--synthesis-max-osl`, at least 1.
fn root_max_tokens(output: u64, max_osl: Option<u32>) -> u32 {
    let capped = max_osl.map_or(output, |m| output.min(u64::from(m)));
    capped.clamp(1, u64::from(u32::MAX)) as u32
}

/// Which requests of a trace become which conversations and turns.
struct Plan<'a> {
    /// The root's requests: (index among the trace's requests, request), in turn order.
    calls: Vec<(usize, &'a schema::Call)>,
    /// The subagents kept (a subagent before the root's first request is dropped, as AIPerf
    /// drops it).
    subagents: Vec<Kept<'a>>,
    /// The agents found among the trace's top-level requests besides the root's
    /// ([`chains`]), each a child conversation.
    flats: Vec<Stream<'a>>,
}

/// A subagent kept.
struct Kept<'a> {
    /// Its index among the trace's requests.
    outer: usize,
    agent: &'a Subagent,
    /// Every request of it, in time order on the root's timeline (its end is theirs).
    all: Vec<(f64, &'a schema::Call)>,
    /// Its conversations: the first keeps `::sa:{agent_id}`, the agents found among its
    /// requests besides it follow.
    streams: Vec<Stream<'a>>,
    /// The root turn that starts it.
    spawn: usize,
}

/// One child conversation's requests.
struct Stream<'a> {
    session_id: String,
    /// (time on the root's timeline, key: index among the trace's or the subagent's requests,
    /// request), in turn order.
    calls: Vec<(f64, usize, &'a schema::Call)>,
    /// Turn 0's system tokens (`tool_tokens + system_tokens`, when they apply to it).
    system_prefix: u64,
}

impl Stream<'_> {
    fn timed(&self) -> Vec<(f64, &schema::Call)> {
        self.calls.iter().map(|&(t, _, c)| (t, c)).collect()
    }

    /// When its last request ended, seconds.
    fn end(&self) -> f64 {
        self.calls
            .iter()
            .map(|(t, _, c)| t + c.api_time.filter(|a| a.is_finite()).unwrap_or(0.0).max(0.0))
            .fold(f64::MIN, f64::max)
    }
}

/// A request's place in a trace's time order (start, index among the trace's requests, its
/// conversation's place among its subagent's, its turn), which conversation (see
/// [`build`]) and turn it is, and its blocks.
type BlockRecord<'a> = ((f64, usize, usize, usize), (usize, usize), &'a [i64]);

impl<'a> Plan<'a> {
    fn of(trace: &'a WekaTrace, keep_flat: bool, max_isl: Option<u64>) -> Result<Self, String> {
        let bs = trace.block_size as usize;
        let mut normals = Vec::new();
        for (outer, r) in trace.requests.iter().enumerate() {
            if let Request::Call(c) = r
                && max_isl.is_none_or(|m| c.input <= m)
            {
                normals.push(chains::Req {
                    key: outer,
                    t: c.t,
                    call: c,
                });
            }
        }
        let mut flats = Vec::new();
        let split = (!keep_flat).then(|| chains::split(&normals)).flatten();
        let calls: Vec<(usize, &schema::Call)> = match &split {
            None => normals.iter().map(|r| (r.key, r.call)).collect(),
            Some(split) => {
                for (n, w) in split.workers.iter().enumerate() {
                    let first = &w.requests[0].call.hash_ids;
                    let (tool, system) =
                        split.init_tokens(trace.tool_tokens, trace.system_tokens, bs, first);
                    flats.push(Stream {
                        session_id: format!("{}::{}", trace.id, w.suffix(n)),
                        calls: w.requests.iter().map(|r| (r.t, r.key, r.call)).collect(),
                        system_prefix: tool + system,
                    });
                }
                split.main.iter().map(|r| (r.key, r.call)).collect()
            }
        };
        let mut subagents = Vec::new();
        let mut ids = HashSet::new();
        for (outer, r) in trace.requests.iter().enumerate() {
            let Request::Subagent(s) = r else {
                continue;
            };
            // The root's last turn before it starts it; none: the subagent is left out.
            let Some(spawn) = calls.iter().rposition(|(o, _)| *o < outer) else {
                continue;
            };
            if !ids.insert(s.agent_id.as_str()) {
                return Err(format!(
                    "trace '{}': duplicate subagent agent_id '{}' among the subagents kept \
                     (each subagent of a trace needs its own agent_id)",
                    trace.id, s.agent_id
                ));
            }
            let inner: Vec<chains::Req<'_>> = s
                .requests
                .iter()
                .enumerate()
                .map(|(i, c)| chains::Req {
                    key: i,
                    t: absolute_t(s, c),
                    call: c,
                })
                .collect();
            let mut ordered = inner.clone();
            ordered.sort_by(|a, b| a.t.total_cmp(&b.t).then(a.key.cmp(&b.key)));
            let all: Vec<(f64, &schema::Call)> = ordered.iter().map(|r| (r.t, r.call)).collect();
            let id = format!("{}::sa:{}", trace.id, s.agent_id);
            let own = (s.tool_tokens, s.system_tokens);
            let split = (!keep_flat).then(|| chains::split(&inner)).flatten();
            let streams = match split {
                None => vec![Stream {
                    session_id: id,
                    calls: ordered.iter().map(|r| (r.t, r.key, r.call)).collect(),
                    system_prefix: own.0 + own.1,
                }],
                Some(split) => {
                    let mut streams = vec![Stream {
                        session_id: id.clone(),
                        calls: split.main.iter().map(|r| (r.t, r.key, r.call)).collect(),
                        system_prefix: own.0 + own.1,
                    }];
                    for (n, w) in split.workers.iter().enumerate() {
                        let first = w
                            .requests
                            .iter()
                            .map(|r| r.call.hash_ids.as_slice())
                            .find(|h| !h.is_empty())
                            .unwrap_or(&[]);
                        let (tool, system) = split.init_tokens(own.0, own.1, bs, first);
                        streams.push(Stream {
                            session_id: format!("{id}:{}", w.suffix(n)),
                            calls: w.requests.iter().map(|r| (r.t, r.key, r.call)).collect(),
                            system_prefix: tool + system,
                        });
                    }
                    streams
                }
            };
            subagents.push(Kept {
                outer,
                agent: s,
                all,
                streams,
                spawn,
            });
        }
        Ok(Self {
            calls,
            subagents,
            flats,
        })
    }
}

/// A subagent request's time on the root's timeline: recorded absolute, or (older captures)
/// relative to the subagent's start when it is earlier than that start.
fn absolute_t(s: &Subagent, c: &schema::Call) -> f64 {
    if c.t + JOIN_EPSILON_S < s.t {
        s.t + c.t
    } else {
        c.t
    }
}

/// When a subagent ended on the root's timeline, in seconds: its recorded duration after its
/// start, else its last request's end, else its start.
fn subagent_end(s: &Subagent, inner: &[(f64, &schema::Call)]) -> f64 {
    if let Some(ms) = s.duration_ms {
        let d = ms / 1000.0;
        return s.t + if d.is_finite() && d > 0.0 { d } else { 0.0 };
    }
    inner
        .iter()
        .map(|(t, c)| t + c.api_time.filter(|a| a.is_finite()).unwrap_or(0.0).max(0.0))
        .reduce(f64::max)
        .unwrap_or(s.t)
}

/// The wait before turn `k` of requests at `times` (seconds): the idle gap between the previous
/// request's end and this one's start, or the recorded think time with `--use-think-time-only`;
/// at most `--inter-turn-delay-cap-seconds`.
fn delay_ms(
    params: &WekaParams,
    think: bool,
    calls: &[(f64, &schema::Call)],
    k: usize,
) -> Option<f64> {
    if k == 0 {
        return None;
    }
    let (t, c) = calls[k];
    let (prev_t, prev) = calls[k - 1];
    let raw = match c.think_time {
        Some(think_s) if think && params.think_time_only => think_s * 1000.0,
        _ => {
            let api = prev.api_time.filter(|a| a.is_finite()).unwrap_or(0.0) * 1000.0;
            (t * 1000.0 - prev_t * 1000.0 - api).max(0.0)
        }
    };
    if !raw.is_finite() {
        return None;
    }
    Some(match params.delay_cap_s {
        Some(cap) => raw.min(cap * 1000.0),
        None => raw,
    })
}

/// The trace's models onto `--model-names`: the first root request's model (else the first
/// subagent's) is the first name, every other model in order of appearance the next, wrapping.
fn model_map(trace: &WekaTrace, names: &[String]) -> HashMap<String, String> {
    let mut order: Vec<&str> = Vec::new();
    let first = trace.requests.iter().find_map(|r| match r {
        Request::Call(c) => Some(c.model.as_str()),
        Request::Subagent(_) => None,
    });
    order.extend(first);
    for r in &trace.requests {
        let models: Vec<&str> = match r {
            Request::Call(c) => vec![c.model.as_str()],
            Request::Subagent(s) => s.requests.iter().map(|c| c.model.as_str()).collect(),
        };
        for m in models {
            if !order.contains(&m) {
                order.push(m);
            }
        }
    }
    if names.is_empty() {
        return HashMap::new();
    }
    order
        .iter()
        .enumerate()
        .map(|(i, m)| (m.to_string(), names[i % names.len()].clone()))
        .collect()
}

/// A stable 64-bit key of a trace id (FNV-1a), scoping its blocks.
fn scope_key(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Children that share the root turn that starts them and the one that waits for them
/// (`None`: none does), by index among the kept subagents (or the flat agents).
type BranchGroup = ((usize, Option<usize>), Vec<usize>);

/// Groups `ends` (each child unit's spawning turn, first request's index among the trace's
/// requests, and end in seconds) by their spawning turn and the first later root turn that
/// starts at or after their end.
fn branch_groups(
    plan: &Plan<'_>,
    root_t: &[f64],
    units: &[(usize, usize, f64)],
) -> Vec<BranchGroup> {
    // The root's turns by their requests' index among the trace's requests.
    let mut by_outer: Vec<(usize, usize)> = plan
        .calls
        .iter()
        .enumerate()
        .map(|(k, (o, _))| (*o, k))
        .collect();
    by_outer.sort_unstable();
    let mut groups: Vec<BranchGroup> = Vec::new();
    for (n, &(spawn, outer, end)) in units.iter().enumerate() {
        let join = by_outer
            .iter()
            .filter(|(o, _)| *o > outer)
            .find(|(_, k)| root_t[*k] + JOIN_EPSILON_S >= end)
            .map(|(_, k)| *k);
        let key = (spawn, join);
        match groups.iter_mut().find(|(g, _)| *g == key) {
            Some((_, members)) => members.push(n),
            None => groups.push((key, vec![n])),
        }
    }
    groups
}

/// The root conversation of `trace` (index `at.0`) and its children (indices from `at.1`):
/// every kept subagent's conversations, then the flat agents'.
fn build(
    trace: &WekaTrace,
    plan: &Plan<'_>,
    params: &WekaParams,
    prompts: &mut BlockPrompts<'_>,
    at: (u32, u32),
) -> Result<(Conversation, Vec<Conversation>), String> {
    let bs = trace.block_size as usize;
    prompts.rescope(scope_key(&trace.id), bs);
    let models = model_map(trace, &params.model_names);
    let model_of = |m: &str| Some(models.get(m).cloned().unwrap_or_else(|| m.to_string()));
    // `--trace-idle-gap-cap-seconds`: every time below is on the compressed timeline of the
    // trace's request starts (the root's, the flat agents', the kept subagents').
    let warp = params.idle_gap_cap_s.map(|cap| {
        let starts = (plan.calls.iter().map(|(_, c)| c.t))
            .chain(plan.flats.iter().flat_map(|f| f.calls.iter().map(|c| c.0)))
            .chain(
                (plan.subagents.iter())
                    .flat_map(|k| k.streams.iter().flat_map(|st| st.calls.iter().map(|c| c.0))),
            )
            .collect();
        Warp::new(starts, cap)
    });
    let tm = |t: f64| warp.as_ref().map_or(t, |w| w.map(t));
    let think = warp.is_none();
    // Conversations: 0 the root, 1.. the flat agents, then every subagent's streams.
    let streams: Vec<(&Stream<'_>, usize, usize)> = plan
        .flats
        .iter()
        .map(|f| (f, usize::MAX, 0))
        .chain(plan.subagents.iter().flat_map(|k| {
            k.streams
                .iter()
                .enumerate()
                .map(move |(i, st)| (st, k.outer, i))
        }))
        .collect();
    // The theoretical prefix cache: one set of blocks seen per trace, in time order (the root's
    // requests, then the flat agents', then the subagents': AIPerf's order of equal keys).
    let mut records: Vec<BlockRecord<'_>> = Vec::new();
    for (k, &(outer, c)) in plan.calls.iter().enumerate() {
        records.push(((c.t, outer, 0, 0), (0, k), &c.hash_ids));
    }
    for (n, &(st, sa_outer, chain)) in streams.iter().enumerate() {
        for (k, &(t, key, c)) in st.calls.iter().enumerate() {
            let place = if sa_outer == usize::MAX {
                (t, key, 0, 0)
            } else {
                (t, sa_outer, chain, k)
            };
            records.push((place, (n + 1, k), &c.hash_ids));
        }
    }
    records.sort_by(|a, b| {
        let (x, y) = (a.0, b.0);
        x.0.total_cmp(&y.0)
            .then(x.1.cmp(&y.1))
            .then(x.2.cmp(&y.2))
            .then(x.3.cmp(&y.3))
    });
    let mut prefix: HashMap<(usize, usize), (u32, u32)> = HashMap::new();
    let mut seen: HashSet<i64> = HashSet::new();
    for (_, key, ids) in &records {
        let hits = ids.iter().take_while(|h| seen.contains(h)).count();
        prefix.insert(*key, (hits as u32, ids.len() as u32));
        seen.extend(ids.iter().copied());
    }

    let root_calls: Vec<(f64, &schema::Call)> =
        plan.calls.iter().map(|&(_, c)| (tm(c.t), c)).collect();
    let root_t: Vec<f64> = root_calls.iter().map(|c| c.0).collect();
    let trace_id: std::sync::Arc<str> = trace.id.as_str().into();
    let source = |outer: usize, inner: Option<usize>, kind: &'static str| TurnSource {
        trace: trace_id.clone(),
        outer: outer as u32,
        inner: inner.map(|i| i as u32),
        kind,
    };
    let root_sources: Vec<TurnSource> = plan
        .calls
        .iter()
        .map(|&(outer, _)| source(outer, None, "weka_main"))
        .collect();
    let turns = conversation_turns(
        prompts,
        &root_calls,
        root_sources,
        think,
        (trace.tool_tokens + trace.system_tokens) as usize,
        bs,
        params,
        |c| root_max_tokens(c.output, params.max_osl),
        &model_of,
        |k| prefix.get(&(0, k)).copied(),
    )?;
    let mut root = Conversation {
        session_id: trace.id.clone(),
        turns,
        agent: Some(Box::new(AgentConversation {
            context: ContextMode::Recorded,
            ..AgentConversation::default()
        })),
        ..Conversation::default()
    };

    // Child conversation indices: the subagents' streams first, then the flat agents.
    let mut next = at.1;
    let mut sa_children: Vec<Vec<u32>> = Vec::new();
    for k in &plan.subagents {
        sa_children.push((next..next + k.streams.len() as u32).collect());
        next += k.streams.len() as u32;
    }
    let flat_children: Vec<u32> = (next..next + plan.flats.len() as u32).collect();

    // Subagents sharing their starting turn and the turn that waits for them are one branch.
    let units: Vec<(usize, usize, f64)> = plan
        .subagents
        .iter()
        .map(|k| (k.spawn, k.outer, tm(subagent_end(k.agent, &k.all))))
        .collect();
    for ((spawn, join), members) in branch_groups(plan, &root_t, &units) {
        let first = plan.subagents[members[0]].agent;
        let branch = Branch {
            id: format!("{}:spawn:{}", trace.id, first.agent_id),
            children: members
                .iter()
                .flat_map(|&n| sa_children[n].iter().copied())
                .collect(),
            background: join.is_none(),
            start_ms: members
                .iter()
                .map(|&n| tm(plan.subagents[n].agent.t) * 1000.0)
                .reduce(f64::min),
            ..Branch::default()
        };
        add_branch(&mut root, branch, spawn, join);
    }
    // The flat agents: started by the root's last turn before their first request (the first
    // turn when none is), waited for like subagents.
    let units: Vec<(usize, usize, f64)> = plan
        .flats
        .iter()
        .map(|f| {
            let first = f.calls.first().map_or(0, |&(_, key, _)| key);
            let spawn = plan
                .calls
                .iter()
                .rposition(|(o, _)| *o < first)
                .unwrap_or(0);
            (spawn, first, tm(f.end()))
        })
        .collect();
    for ((spawn, join), members) in branch_groups(plan, &root_t, &units) {
        let branch = Branch {
            id: format!("{}:flatspawn:{}", trace.id, members[0]),
            children: members.iter().map(|&n| flat_children[n]).collect(),
            background: join.is_none(),
            start_ms: members
                .iter()
                .filter_map(|&n| plan.flats[n].calls.first().map(|c| tm(c.0) * 1000.0))
                .reduce(f64::min),
            ..Branch::default()
        };
        add_branch(&mut root, branch, spawn, join);
    }

    let mut children = Vec::new();
    let mut child = |st: &Stream<'_>, n: usize, sa_outer: Option<usize>| {
        let timed: Vec<(f64, &schema::Call)> =
            st.timed().into_iter().map(|(t, c)| (tm(t), c)).collect();
        let sources: Vec<TurnSource> = (st.calls.iter())
            .map(|&(_, key, _)| match sa_outer {
                Some(outer) => source(outer, Some(key), "weka_subagent"),
                None => source(key, None, "weka_flat"),
            })
            .collect();
        // A flat agent's requests were the root's: `--synthesis-max-osl` caps them.
        let capped = sa_outer.is_none();
        let turns = conversation_turns(
            prompts,
            &timed,
            sources,
            think,
            st.system_prefix as usize,
            bs,
            params,
            |c| {
                if capped {
                    root_max_tokens(c.output, params.max_osl)
                } else {
                    c.output.clamp(1, u64::from(u32::MAX)) as u32
                }
            },
            &model_of,
            |k| prefix.get(&(n + 1, k)).copied(),
        )?;
        Ok::<_, String>(Conversation {
            session_id: st.session_id.clone(),
            turns,
            agent: Some(Box::new(AgentConversation {
                context: ContextMode::Recorded,
                parent: Some(at.0),
                ..AgentConversation::default()
            })),
            ..Conversation::default()
        })
    };
    let flat_n = plan.flats.len();
    for (i, &(st, sa_outer, _)) in streams.iter().enumerate().skip(flat_n) {
        children.push(child(st, i, Some(sa_outer))?);
    }
    for (i, st) in plan.flats.iter().enumerate() {
        children.push(child(st, i, None)?);
    }
    // Agentic replay's barriers: the root and its flat agents share the trace's scope, each
    // subagent its own.
    let mut members: Vec<barriers::Member<'_>> = vec![(&mut root, at.0, trace.id.clone())];
    for (i, c) in children.iter_mut().enumerate() {
        let scope = barriers::scope_of(&c.session_id, &trace.id).to_owned();
        members.push((c, at.1 + i as u32, scope));
    }
    barriers::install(&mut members);
    Ok((root, children))
}

/// Adds `branch` to `root`, started by turn `spawn` and joined by turn `join`.
fn add_branch(root: &mut Conversation, branch: Branch, spawn: usize, join: Option<usize>) {
    let agent = root.agent.get_or_insert_with(Box::default);
    let b = agent.branches.len() as u32;
    agent.branches.push(branch);
    if let Some(t) = root.turns.get_mut(spawn) {
        agent_of(t).spawns.push(b);
    }
    if let Some(j) = join.and_then(|j| root.turns.get_mut(j)) {
        agent_of(j).joins.push(b);
    }
}

/// A trace's timeline with every gap between two request starts longer than the cap cut to
/// it (`--trace-idle-gap-cap-seconds`): a time inside a cut gap past its first `cap` seconds
/// falls on the gap's cut end.
struct Warp {
    /// (gap's first start, its next start, the shift of all cuts before it, its excess).
    gaps: Vec<(f64, f64, f64, f64)>,
    cap: f64,
}

impl Warp {
    fn new(mut starts: Vec<f64>, cap: f64) -> Self {
        starts.sort_by(f64::total_cmp);
        let mut gaps = Vec::new();
        let mut shift = 0.0;
        for w in starts.windows(2) {
            let gap = w[1] - w[0];
            if gap > cap {
                gaps.push((w[0], w[1], shift, gap - cap));
                shift += gap - cap;
            }
        }
        Self { gaps, cap }
    }

    fn map(&self, t: f64) -> f64 {
        let mut shift = 0.0;
        for &(start, end, before, excess) in &self.gaps {
            if t < start {
                return t - before;
            }
            if t < end {
                return if t - start <= self.cap {
                    t - before
                } else {
                    start - before + self.cap
                };
            }
            shift = before + excess;
        }
        t - shift
    }
}

/// The agent facts of `turn` (made when it has none).
fn agent_of(turn: &mut Turn) -> &mut AgentTurn {
    turn.agent.get_or_insert_with(Box::default)
}

/// The turns of one conversation of requests `calls` (absolute times, seconds).
#[allow(clippy::too_many_arguments)]
fn conversation_turns(
    prompts: &mut BlockPrompts<'_>,
    calls: &[(f64, &schema::Call)],
    sources: Vec<TurnSource>,
    think: bool,
    system_prefix: usize,
    bs: usize,
    params: &WekaParams,
    max_tokens: impl Fn(&schema::Call) -> u32,
    model_of: &dyn Fn(&str) -> Option<String>,
    prefix: impl Fn(usize) -> Option<(u32, u32)>,
) -> Result<Vec<Turn>, String> {
    let shape: Vec<(&[i64], usize)> = calls
        .iter()
        .map(|(_, c)| (c.hash_ids.as_slice(), c.input as usize))
        .collect();
    let caps = buffer::assistant_caps(&shape, bs);
    let mut context = buffer::Context::default();
    let mut turns = Vec::with_capacity(calls.len());
    let mut sources = sources.into_iter();
    for (k, &(t, c)) in calls.iter().enumerate() {
        if k == 0 {
            context.first(prompts, &c.hash_ids, c.input as usize, system_prefix, bs)?;
        } else {
            let prev = calls[k - 1].1;
            context.next(
                prompts,
                &prev.hash_ids,
                prev.output as usize,
                &c.hash_ids,
                c.input as usize,
                caps[k],
                bs,
            );
        }
        let delta = context.delta();
        turns.push(Turn {
            content: Content::Messages(delta.messages),
            max_tokens: Some(max_tokens(c)),
            timestamp_ms: Some(t * 1000.0),
            delay_ms: delay_ms(params, think, calls, k),
            model: model_of(&c.model),
            agent: Some(Box::new(AgentTurn {
                reset_context: delta.reset,
                api_time_ms: c
                    .api_time
                    .filter(|a| a.is_finite())
                    .map(|a| a.max(0.0) * 1000.0),
                prefix_blocks: prefix(k),
                source: sources.next(),
                ..AgentTurn::default()
            })),
            ..Turn::default()
        });
    }
    Ok(turns)
}

#[cfg(test)]
mod tests;
