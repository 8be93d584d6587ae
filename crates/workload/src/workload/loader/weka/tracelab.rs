//! `tracelab`: the TraceLab agentic-coding corpus (docs/datasets.md, `tracelab`), one JSONL row
//! per model round (optionally gzipped). Rounds are grouped into sessions, each session becomes
//! a Weka trace (its KV blocks rebuilt from each round's cached-prefix split), subagents are
//! found by when they ran (a session that ran wholly inside another session's spawning tool
//! call, for the same user and project), and the traces are replayed as `weka_trace` replays
//! them, as AIPerf 0.13 does.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::Path;

use serde_json::Value;

use super::schema::{Call, Request, Scope, Subagent, WekaTrace};
use super::{WekaParams, from_traces};
use crate::workload::Tokenizer;
use crate::workload::loader::{LoadError, LoadErrorKind, lines::open_maybe_gzip};
use ringperf_wire::conversation::Dataset;

/// The keys every TraceLab row has (what detection looks for).
const DETECT_KEYS: [&str; 6] = [
    "session_id",
    "round_index",
    "input_tokens_total",
    "prefix_tokens",
    "newly_append_tokens",
    "timing_events",
];
/// Tokens per block when `--prompt-input-tokens-block-size` is not given.
pub const DEFAULT_BLOCK_SIZE: usize = 64;
/// A spawning tool call shorter than this cannot hold a subagent.
const MIN_SPAWN_MS: f64 = 10_000.0;
/// Claude's blocking spawning tools.
const SPAWN_TOOLS: [&str; 2] = ["Agent", "Task"];

/// Whether `path` is a TraceLab file: a file named `*.jsonl`, `*.jsonl.gz`, `*.json.gz` or
/// `*.gz` whose first record has every TraceLab key.
pub fn detect(path: &Path) -> bool {
    let name = path.to_string_lossy();
    if !path.is_file()
        || ![".jsonl", ".jsonl.gz", ".json.gz", ".gz"]
            .iter()
            .any(|s| name.ends_with(s))
    {
        return false;
    }
    let Ok(reader) = open_maybe_gzip(path) else {
        return false;
    };
    for line in reader.lines() {
        let Ok(line) = line else {
            return false;
        };
        if line.trim().is_empty() {
            continue;
        }
        return serde_json::from_str::<Value>(&line)
            .ok()
            .and_then(|v| {
                v.as_object()
                    .map(|m| DETECT_KEYS.iter().all(|k| m.contains_key(*k)))
            })
            .unwrap_or(false);
    }
    false
}

/// Loads the TraceLab file at `path` with `block_size`-token blocks.
///
/// # Errors
/// A line that is not JSON, a file that cannot be read or holds no session, a timestamp that
/// does not parse, two sessions with one id once made safe.
pub fn load(
    path: &Path,
    block_size: usize,
    params: &WekaParams,
    tokenizer: &Tokenizer,
    seed: u64,
) -> Result<Dataset, LoadError> {
    if block_size == 0 {
        return Err(LoadError::file(
            path,
            LoadErrorKind::Invalid("TraceLab block size must be positive, got 0".into()),
        ));
    }
    let sessions = read_sessions(path)?;
    if sessions.is_empty() {
        return Err(LoadError::file(
            path,
            LoadErrorKind::Invalid(
                "no TraceLab session found: every row must carry a 'session_id'".into(),
            ),
        ));
    }
    let bad = |sid: &str, e: String| {
        LoadError::file(
            path,
            LoadErrorKind::Invalid(format!("cannot convert TraceLab session '{sid}': {e}")),
        )
    };
    let links = join_index(&sessions).map_err(|(sid, e)| bad(&sid, e))?;
    let children = children_by_parent(&sessions, &links);
    let nested: HashSet<&str> = children
        .values()
        .flat_map(|kids| kids.iter().map(|(c, _)| c.as_str()))
        .collect();
    let mut traces: Vec<WekaTrace> = Vec::new();
    let mut ids: HashSet<String> = HashSet::new();
    let mut placed: HashSet<String> = HashSet::new();
    let mut add = |traces: &mut Vec<WekaTrace>, mut t: WekaTrace, sid: &str| {
        t.id = safe_id(sid);
        if !ids.insert(t.id.clone()) {
            return Err(LoadError::file(
                path,
                LoadErrorKind::Invalid(format!(
                    "duplicate TraceLab trace id '{}': session '{sid}' collides with an \
                     earlier session",
                    t.id
                )),
            ));
        }
        traces.push(t);
        Ok(())
    };
    let empty = Vec::new();
    for (sid, rows) in &sessions {
        if nested.contains(sid.as_str()) {
            continue;
        }
        let kids = children.get(sid.as_str()).unwrap_or(&empty);
        let trace =
            build_trace(rows, block_size, kids, &sessions, &mut placed).map_err(|e| bad(sid, e))?;
        if let Some(t) = trace.filter(|t| !t.requests.is_empty()) {
            add(&mut traces, t, sid)?;
        }
    }
    // A child that could not be placed in its parent (its rounds start before the parent's
    // first) is replayed as a trace of its own.
    for (sid, rows) in &sessions {
        if !nested.contains(sid.as_str()) || placed.contains(sid) {
            continue;
        }
        let trace =
            build_trace(rows, block_size, &[], &sessions, &mut placed).map_err(|e| bad(sid, e))?;
        if let Some(t) = trace.filter(|t| !t.requests.is_empty()) {
            add(&mut traces, t, sid)?;
        }
    }
    if let Some(n) = params.entries {
        traces.truncate(n as usize);
    }
    from_traces(path, traces, params, tokenizer, seed)
}

/// The file's rows grouped by `session_id`, in order of each session's first row.
fn read_sessions(path: &Path) -> Result<Vec<(String, Vec<Value>)>, LoadError> {
    let io = |e: std::io::Error| {
        LoadError::file(
            path,
            LoadErrorKind::Io(format!("cannot read the TraceLab file: {e}")),
        )
    };
    let reader = open_maybe_gzip(path).map_err(io)?;
    let mut sessions: Vec<(String, Vec<Value>)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (n, line) in reader.lines().enumerate() {
        if ringperf_io::control::interrupted() {
            break;
        }
        let line = line.map_err(io)?;
        if line.trim().is_empty() {
            continue;
        }
        let row: Value = serde_json::from_str(&line).map_err(|e| LoadError {
            line: Some(n as u64 + 1),
            ..LoadError::file(path, LoadErrorKind::Json(e.to_string()))
        })?;
        let sid = match row.get("session_id") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::Number(n)) if n.as_f64() != Some(0.0) => n.to_string(),
            _ => continue,
        };
        let i = *at.entry(sid.clone()).or_insert_with(|| {
            sessions.push((sid, Vec::new()));
            sessions.len() - 1
        });
        sessions[i].1.push(row);
    }
    Ok(sessions)
}

/// ISO-8601 to POSIX seconds; without an offset, UTC.
fn parse_ts(s: &str) -> Result<f64, String> {
    let text = s.trim().replace('Z', "+00:00");
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Ok(t.as_nanosecond() as f64 / 1e9);
    }
    let dt: jiff::civil::DateTime = text
        .parse()
        .map_err(|e| format!("timestamp '{s}' is not ISO-8601: {e}"))?;
    let z = dt
        .to_zoned(jiff::tz::TimeZone::UTC)
        .map_err(|e| format!("timestamp '{s}': {e}"))?;
    Ok(z.timestamp().as_nanosecond() as f64 / 1e9)
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// A whole number of a row (`null`, absent, or not a number: 0), as Python's `int(x or 0)`.
fn int_of(v: &Value, key: &str) -> i64 {
    v.get(key)
        .and_then(Value::as_f64)
        .map_or(0, |f| f.trunc() as i64)
}

/// A round's submission time (its latest input event, else its first output) and server time
/// (to its last output), seconds; `None` for a round with no dated event.
fn round_timing(row: &Value) -> Result<Option<(f64, Option<f64>)>, String> {
    let mut ins = Vec::new();
    let mut outs = Vec::new();
    for e in row
        .get("timing_events")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(ts) = str_of(e, "timestamp") else {
            continue;
        };
        match str_of(e, "event_type") {
            Some("user_message" | "tool_result") => ins.push(parse_ts(ts)?),
            Some("text" | "reasoning" | "tool_call") => outs.push(parse_ts(ts)?),
            _ => {}
        }
    }
    let max = |v: &[f64]| v.iter().copied().reduce(f64::max);
    let min = |v: &[f64]| v.iter().copied().reduce(f64::min);
    let Some(submitted) = max(&ins).or_else(|| min(&outs)) else {
        return Ok(None);
    };
    Ok(Some((
        submitted,
        max(&outs).map(|o| (o - submitted).max(0.0)),
    )))
}

/// A round with its timing.
type Timed<'a> = (f64, Option<f64>, &'a Value);

/// The rounds in replay order (submission time, then `round_index`, then file order); rounds
/// with no dated event are left out.
fn order_rounds(rows: &[Value]) -> Result<Vec<Timed<'_>>, String> {
    let mut timed = Vec::with_capacity(rows.len());
    for row in rows {
        if let Some((s, api)) = round_timing(row)? {
            timed.push((s, api, row));
        }
    }
    timed.sort_by(|a, b| {
        a.0.total_cmp(&b.0)
            .then(int_of(a.2, "round_index").cmp(&int_of(b.2, "round_index")))
    });
    Ok(timed)
}

/// Block ids of each round: the previous round's first `prefix_tokens / bs` ids kept, fresh
/// ones for the rest of its `input_tokens_total / bs` whole blocks (one counter per trace).
fn hash_chains(rounds: &[Timed<'_>], bs: usize, next: &mut i64) -> Vec<Vec<i64>> {
    let mut prev: Vec<i64> = Vec::new();
    rounds
        .iter()
        .map(|(_, _, row)| {
            let total = int_of(row, "input_tokens_total").max(0) as usize;
            let prefix = (int_of(row, "prefix_tokens").max(0) as usize).min(total);
            let n = total / bs;
            let reuse = (prefix / bs).min(prev.len()).min(n);
            let mut ids = prev[..reuse].to_vec();
            ids.extend(*next..*next + (n - reuse) as i64);
            *next += (n - reuse) as i64;
            prev.clone_from(&ids);
            ids
        })
        .collect()
}

/// Rounded to the microsecond, as AIPerf writes its converted times.
fn micro(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// The rounds as Weka calls, their times from `t0`; and the models, in order of appearance.
fn calls(rounds: &[Timed<'_>], chains: Vec<Vec<i64>>, t0: f64) -> (Vec<Call>, Vec<String>) {
    let mut models: Vec<String> = Vec::new();
    let mut out = Vec::with_capacity(rounds.len());
    let mut prev_end: Option<f64> = None;
    for ((submitted, api, row), hash_ids) in rounds.iter().zip(chains) {
        let model = str_of(row, "model").unwrap_or("unknown").to_string();
        if !models.contains(&model) {
            models.push(model.clone());
        }
        let t = submitted - t0;
        let output = int_of(row, "output_tokens") + int_of(row, "reasoning_output_tokens");
        let tool_result = str_of(row, "first_input_event_type") == Some("tool_result");
        let emitted_tool = (row
            .get("timing_events")
            .and_then(Value::as_array)
            .into_iter())
        .flatten()
        .any(|e| str_of(e, "event_type") == Some("tool_call"));
        out.push(Call {
            t: micro(t),
            model,
            input: int_of(row, "input_tokens_total").max(1) as u64,
            output: output.max(1) as u64,
            hash_ids,
            input_types: vec![if tool_result { "tool_result" } else { "text" }.into()],
            output_types: vec!["text".into()],
            stop: if emitted_tool { "tool_use" } else { "end_turn" }.into(),
            api_time: api.map(micro),
            think_time: prev_end.map(|e| micro((t - e).max(0.0))),
            ttft: None,
        });
        prev_end = Some(t + api.unwrap_or(0.0));
    }
    (out, models)
}

/// One parent-to-child link: the spawning tool call's window (seconds) and length (ms).
#[derive(Clone, Debug)]
struct Spawn {
    parent: String,
    start: f64,
    end: f64,
    duration_ms: f64,
}

/// Each child session's spawning window: the tightest spawning tool call (Claude `Agent` /
/// `Task` calls of at least 10 s; a Codex session's first `spawn_agent` to last `wait_agent`)
/// of a session of the same user and project that holds the child's whole span.
fn join_index(sessions: &[(String, Vec<Value>)]) -> Result<Vec<(String, Spawn)>, (String, String)> {
    let mut span: Vec<(&str, f64, f64)> = Vec::new();
    let mut ident: HashMap<&str, (Value, Value)> = HashMap::new();
    let mut windows: Vec<(f64, f64, &str, f64)> = Vec::new();
    for (sid, rows) in sessions {
        let fail = |e: String| (sid.clone(), e);
        let mut stamps = Vec::new();
        for row in rows {
            for e in row
                .get("timing_events")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(ts) = str_of(e, "timestamp") {
                    stamps.push(parse_ts(ts).map_err(fail)?);
                }
            }
            for tool in row
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                for key in ["emitted_at", "result_at"] {
                    if let Some(ts) = str_of(tool, key) {
                        stamps.push(parse_ts(ts).map_err(fail)?);
                    }
                }
            }
        }
        let first = &rows[0];
        let id = (
            first.get("user").cloned().unwrap_or(Value::Null),
            first.get("project").cloned().unwrap_or(Value::Null),
        );
        if let (Some(lo), Some(hi)) = (
            stamps.iter().copied().reduce(f64::min),
            stamps.iter().copied().reduce(f64::max),
        ) {
            span.push((sid, lo, hi));
            ident.insert(sid, id);
        }
        let tools = rows.iter().flat_map(|r| {
            r.get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        });
        if str_of(first, "provider") == Some("codex") {
            let mut spawns = Vec::new();
            let mut waits = Vec::new();
            for tool in tools {
                match str_of(tool, "tool_name") {
                    Some("spawn_agent") => {
                        if let Some(ts) = str_of(tool, "emitted_at") {
                            spawns.push(parse_ts(ts).map_err(fail)?);
                        }
                    }
                    Some("wait_agent") => {
                        if let Some(ts) = str_of(tool, "result_at") {
                            waits.push(parse_ts(ts).map_err(fail)?);
                        }
                    }
                    _ => {}
                }
            }
            if let (Some(s), Some(w)) = (
                spawns.into_iter().reduce(f64::min),
                waits.into_iter().reduce(f64::max),
            ) && w > s
            {
                windows.push((s, w, sid, ((w - s) * 1000.0).trunc()));
            }
            continue;
        }
        for tool in tools {
            if !str_of(tool, "tool_name").is_some_and(|n| SPAWN_TOOLS.contains(&n)) {
                continue;
            }
            let Some(latency) = tool.get("tool_wall_latency_ms").and_then(Value::as_f64) else {
                continue;
            };
            if latency < MIN_SPAWN_MS {
                continue;
            }
            let (Some(a), Some(b)) = (str_of(tool, "emitted_at"), str_of(tool, "result_at")) else {
                continue;
            };
            windows.push((
                parse_ts(a).map_err(fail)?,
                parse_ts(b).map_err(fail)?,
                sid,
                latency.trunc(),
            ));
        }
    }
    let mut links = Vec::new();
    for &(child, lo, hi) in &span {
        let id = &ident[child];
        let best = windows
            .iter()
            .filter(|w| w.2 != child && ident.get(w.2).unwrap_or(&(Value::Null, Value::Null)) == id)
            .filter(|w| lo >= w.0 && hi <= w.1)
            .min_by(|a, b| {
                (a.1 - a.0)
                    .total_cmp(&(b.1 - b.0))
                    .then(a.0.total_cmp(&b.0))
                    .then(a.2.cmp(b.2))
            });
        if let Some(&(start, end, parent, duration_ms)) = best {
            links.push((
                child.to_string(),
                Spawn {
                    parent: parent.to_string(),
                    start,
                    end,
                    duration_ms,
                },
            ));
        }
    }
    Ok(links)
}

/// The children of each root: a child whose parent is itself a child stays a trace of its own
/// (one level of nesting only).
fn children_by_parent<'a>(
    sessions: &'a [(String, Vec<Value>)],
    links: &'a [(String, Spawn)],
) -> HashMap<&'a str, Vec<(String, &'a Spawn)>> {
    let known: HashSet<&str> = sessions.iter().map(|(s, _)| s.as_str()).collect();
    let linked: HashSet<&str> = links.iter().map(|(c, _)| c.as_str()).collect();
    let mut out: HashMap<&str, Vec<(String, &Spawn)>> = HashMap::new();
    for (child, spawn) in links {
        if !known.contains(spawn.parent.as_str()) || !known.contains(child.as_str()) {
            continue;
        }
        if linked.contains(spawn.parent.as_str()) {
            continue;
        }
        out.entry(spawn.parent.as_str())
            .or_default()
            .push((child.clone(), spawn));
    }
    out
}

/// One session and its children as a Weka trace; `None` when it has no dated round.
fn build_trace(
    rows: &[Value],
    bs: usize,
    children: &[(String, &Spawn)],
    sessions: &[(String, Vec<Value>)],
    placed: &mut HashSet<String>,
) -> Result<Option<WekaTrace>, String> {
    let rounds = order_rounds(rows)?;
    let Some(&(t0, _, _)) = rounds.first() else {
        return Ok(None);
    };
    let mut next = 1;
    let chains = hash_chains(&rounds, bs, &mut next);
    let (own, mut models) = calls(&rounds, chains, t0);
    let times: Vec<f64> = own.iter().map(|c| c.t).collect();
    let mut pending: HashMap<usize, Vec<Subagent>> = HashMap::new();
    for (child, spawn) in children {
        let Some((_, rows)) = sessions.iter().find(|(s, _)| s == child) else {
            continue;
        };
        let Some(entry) = subagent(child, spawn, rows, bs, &mut next, t0)? else {
            continue;
        };
        // After the last request at or before the spawn.
        let Some(anchor) = times.iter().rposition(|&t| t <= entry.t) else {
            continue;
        };
        for m in &entry.models {
            if !models.contains(m) {
                models.push(m.clone());
            }
        }
        placed.insert(child.clone());
        pending.entry(anchor).or_default().push(entry);
    }
    let mut requests = Vec::with_capacity(own.len() + pending.len());
    for (i, c) in own.into_iter().enumerate() {
        requests.push(Request::Call(c));
        if let Some(mut entries) = pending.remove(&i) {
            entries.sort_by(|a, b| a.t.total_cmp(&b.t));
            requests.extend(entries.into_iter().map(Request::Subagent));
        }
    }
    Ok(Some(WekaTrace {
        id: String::new(),
        models,
        block_size: bs as u64,
        hash_id_scope: Scope::Local,
        tool_tokens: 0,
        system_tokens: 0,
        requests,
        totals: None,
    }))
}

/// A child session as a subagent of its parent: its rounds on the parent's timeline (none
/// before the spawn), `None` when it has no dated round.
fn subagent(
    sid: &str,
    spawn: &Spawn,
    rows: &[Value],
    bs: usize,
    next: &mut i64,
    t0: f64,
) -> Result<Option<Subagent>, String> {
    let rounds = order_rounds(rows)?;
    if rounds.is_empty() {
        return Ok(None);
    }
    let chains = hash_chains(&rounds, bs, next);
    let (mut inner, models) = calls(&rounds, chains, t0);
    let entry_t = spawn.start - t0;
    for c in &mut inner {
        if c.t < entry_t {
            c.t = micro(entry_t);
        }
    }
    if let Some(first) = inner.first_mut() {
        first.think_time = None;
    }
    let end = rounds
        .iter()
        .map(|(s, api, _)| s + api.unwrap_or(0.0))
        .fold(f64::MIN, f64::max);
    let tool_uses = rows
        .iter()
        .map(|r| r.get("tools").and_then(Value::as_array).map_or(0, Vec::len))
        .sum::<usize>();
    Ok(Some(Subagent {
        t: micro(entry_t),
        agent_id: safe_id(sid),
        subagent_type: models.first().cloned().unwrap_or_else(|| "unknown".into()),
        status: if end <= spawn.end {
            "completed"
        } else {
            "incomplete"
        }
        .into(),
        duration_ms: Some(spawn.duration_ms),
        total_tokens: Some(inner.iter().map(|c| (c.input + c.output) as i64).sum()),
        tool_use_count: Some(tool_uses as i64),
        requests: inner,
        models,
        tool_tokens: 0,
        system_tokens: 0,
    }))
}

/// A session id as a trace or agent id: every run of other characters than letters, digits,
/// `.`, `_` and `-` made one `_`, at most 150 characters.
fn safe_id(sid: &str) -> String {
    let mut out = String::with_capacity(sid.len());
    let mut in_run = false;
    for ch in sid.chars() {
        if ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_' | '-') {
            out.push(ch);
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    out.chars().take(150).collect()
}
