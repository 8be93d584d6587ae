//! `dag_jsonl`: agent workflows as a graph of conversations (AIPerf 0.13's `DagJsonlLoader`).
//! One conversation a line: `{"session_id", "turns": [..], "context_mode"?,
//! "pre_session_spawns"?}`, each turn `{"messages", "model"?, "max_tokens"?, "tools"?, "extra"?,
//! "forks"?, "spawns"?, "delay"?}`. Default sampling: **random**; new sessions pick the roots
//! (conversations no other one names).
//!
//! A turn's `spawns` start fresh child conversations when its answer is in, and a later turn
//! (the next one, or `join_at`) waits for them; on the last turn nothing waits (they run in the
//! background). Its `forks` start children that carry the parent's context (its messages and
//! the server's replies so far) and go on from it: a bare id only on the last turn, an object
//! with `"background": true` on any. `pre_session_spawns` start once a phase, before any
//! root's first turn. Branch ids, join placement and every refusal follow AIPerf's loader
//! (`dag_jsonl.py`, `_dag_jsonl_helpers.py`) and its v1 orchestrator check
//! (`orchestrator_v1.py`); the refusals use its sentences. An orchestrator conversation
//! (`orchestrator: true`) becomes AIPerf's request-free spine: a turn a round spawning the
//! round's children, joined by the next, its think time the turn's delay (docs/datasets.md).

mod schema;
mod topology;

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use ringperf_wire::conversation::{
    AgentConversation, AgentTurn, Branch, Content, ContextMode, Conversation, Dataset, Sampling,
    ThinkTime, Turn,
};

use super::error::{LoadError, LoadErrorKind};
use super::fields::Ctx;
use super::lines::JsonLines;
use schema::DagLine;
use topology::Graph;

/// Loads a `dag_jsonl` file; `delay_cap_s` (`--inter-turn-delay-cap-seconds`) caps every
/// turn's `delay`, as AIPerf's loader does.
///
/// # Errors
/// The first bad line (naming the field), else the first rule of the graph the file breaks
/// (AIPerf's sentence).
pub fn load(path: &Path, delay_cap_s: Option<f64>) -> Result<Dataset, LoadError> {
    load_lines(JsonLines::open(path)?, path, delay_cap_s)
}

/// [`load`] on lines read from anywhere; `path` names them.
///
/// # Errors
/// As [`load`].
pub fn load_lines<R: std::io::BufRead>(
    mut lines: JsonLines<R>,
    path: &Path,
    delay_cap_s: Option<f64>,
) -> Result<Dataset, LoadError> {
    let mut parsed: Vec<DagLine> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    while let Some((line, map)) = lines.next_object()? {
        let ctx = Ctx { path, line };
        let conv = schema::parse_line(ctx, map)?;
        if index.contains_key(&conv.session_id) {
            return Err(LoadError::line(
                path,
                line,
                LoadErrorKind::Invalid(format!("duplicate session_id '{}'", conv.session_id)),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = conv
            .pre_session_spawns
            .iter()
            .find(|c| !seen.insert(c.as_str()))
        {
            return Err(LoadError::line(
                path,
                line,
                LoadErrorKind::Invalid(format!(
                    "session '{}' duplicate child_conversation_id '{dup}' in pre_session_spawns",
                    conv.session_id
                )),
            ));
        }
        index.insert(conv.session_id.clone(), parsed.len());
        parsed.push(conv);
    }
    if parsed.is_empty() {
        return Err(LoadError::file(
            path,
            LoadErrorKind::Invalid(
                "the DAG JSONL file is empty (no conversations parsed); supply at least one \
                 conversation line"
                    .into(),
            ),
        ));
    }
    let graph = Graph::build(&parsed, &index).map_err(|why| invalid(path, why))?;
    graph.validate(&parsed).map_err(|why| invalid(path, why))?;
    let tools = graph
        .effective_tools(&parsed)
        .map_err(|why| invalid(path, why))?;
    Ok(dataset(parsed, &graph, &tools, delay_cap_s))
}

fn invalid(path: &Path, why: String) -> LoadError {
    LoadError::file(path, LoadErrorKind::Invalid(why))
}

/// The dataset the run replays: one conversation a line, in file order.
fn dataset(
    parsed: Vec<DagLine>,
    graph: &Graph,
    tools: &[Vec<Option<Value>>],
    delay_cap_s: Option<f64>,
) -> Dataset {
    let cap_ms = delay_cap_s.map(|s| s * 1000.0);
    let conversations = parsed
        .into_iter()
        .enumerate()
        .map(|(c, line)| {
            let node = &graph.nodes[c];
            let request_free = line.orchestrator;
            let turns = (line.turns.into_iter().enumerate())
                .map(|(i, t)| {
                    let mut extra = t.extra.unwrap_or_default();
                    // AIPerf's body takes the latest `tools` of the turns it sends: this
                    // turn's, else an earlier one's (a fork's: its parent's), which only the
                    // body sent carries (not the turn alone, `inputs.json`).
                    let own = t.tools.is_some();
                    if let (true, Some(tools)) = (own, tools[c][i].clone()) {
                        extra.insert("tools".into(), tools);
                    }
                    let inherited_tools = tools[c][i].clone().filter(|_| !own);
                    let delay = cap_ms.map_or(t.delay_ms, |cap| t.delay_ms.min(cap));
                    // A request-free turn is AIPerf's empty turn: `inputs.json` shows it as one
                    // empty user message (it is never sent).
                    let messages = if request_free {
                        vec![serde_json::json!({"role": "user", "content": ""})]
                    } else {
                        t.messages
                    };
                    Turn {
                        content: Content::Messages(messages),
                        max_tokens: t.max_tokens,
                        delay_ms: (delay > 0.0).then_some(delay),
                        extra,
                        model: t.model,
                        agent: Some(Box::new(AgentTurn {
                            spawns: node.spawns[i].clone(),
                            joins: node.joins[i].clone(),
                            inherited_tools,
                            request_free,
                            ..AgentTurn::default()
                        })),
                        ..Turn::default()
                    }
                })
                .collect();
            let branches: Vec<Branch> = node
                .branches
                .iter()
                .map(|b| Branch {
                    id: b.id.clone(),
                    children: b.children.iter().map(|&k| k as u32).collect(),
                    background: b.join.is_none(),
                    start_ms: None,
                    fork: b.fork,
                    pre: b.pre,
                })
                .collect();
            Conversation {
                session_id: line.session_id,
                turns,
                agent: Some(Box::new(AgentConversation {
                    context: line.context.unwrap_or(ContextMode::LiveReplies),
                    branches,
                    parent: graph.first_parent[c].map(|p| p as u32),
                    forked: graph.fork_parent[c].is_some(),
                    // The delay cap bounds the draw too (AIPerf folds it into the bounds).
                    think: line.think.map(|t| ThinkTime {
                        min_ms: match cap_ms {
                            Some(cap) => t.min_ms.map(|m| m.min(cap)),
                            None => t.min_ms,
                        },
                        max_ms: match (cap_ms, t.max_ms) {
                            (Some(cap), Some(m)) => Some(m.min(cap)),
                            (cap, m) => cap.or(m),
                        },
                        ..t
                    }),
                })),
                ..Conversation::default()
            }
        })
        .collect();
    Dataset {
        conversations,
        default_sampling: Sampling::Random,
        replay: false,
    }
}

/// Whether a first record reads as a `dag_jsonl` line (AIPerf's `DagJsonlLoader.can_load`): a
/// string `session_id` and a non-empty list of `turns`, all objects, one with a `messages`
/// list or a `forks` or `spawns` key.
pub fn can_load(map: &serde_json::Map<String, Value>) -> bool {
    if !map.get("session_id").is_some_and(Value::is_string) {
        return false;
    }
    let Some(turns) = map.get("turns").and_then(Value::as_array) else {
        return false;
    };
    if turns.is_empty() {
        return false;
    }
    for t in turns {
        let Some(t) = t.as_object() else {
            return false;
        };
        if t.get("messages").is_some_and(Value::is_array)
            || t.contains_key("forks")
            || t.contains_key("spawns")
        {
            return true;
        }
    }
    false
}

/// The roots of a `dag_jsonl` file: its conversations no other one names in `forks`, `spawns`
/// or `pre_session_spawns` (AIPerf's default `--conversation-num` for the type when no stop
/// condition is given). Lines that are not JSON objects are skipped, as AIPerf's count skips
/// them; `None` when the file cannot be read.
pub fn root_count(path: &Path) -> Option<u64> {
    let reader = super::lines::open_maybe_gzip(path).ok()?;
    let mut all = std::collections::HashSet::new();
    let mut named = std::collections::HashSet::new();
    for line in std::io::BufRead::lines(reader) {
        let line = line.ok()?;
        let Ok(Value::Object(m)) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        if let Some(Value::String(s)) = m.get("session_id") {
            all.insert(s.clone());
        }
        let strings = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        };
        named.extend(strings(m.get("pre_session_spawns")));
        for turn in m
            .get("turns")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for fork in turn
                .get("forks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match fork {
                    Value::String(s) => {
                        named.insert(s.clone());
                    }
                    other => named.extend(
                        other
                            .get("child")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    ),
                }
            }
            for spawn in turn
                .get("spawns")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match spawn {
                    Value::String(s) => {
                        named.insert(s.clone());
                    }
                    other => named.extend(strings(other.get("children"))),
                }
            }
        }
    }
    Some(all.difference(&named).count() as u64)
}

/// Whether a `dag_jsonl` file has an orchestrator conversation (a line with `"orchestrator":
/// true`); `false` when the file cannot be read.
pub fn has_orchestrator(path: &Path) -> bool {
    let Ok(reader) = super::lines::open_maybe_gzip(path) else {
        return false;
    };
    std::io::BufRead::lines(reader)
        .map_while(Result::ok)
        .any(|line| {
            serde_json::from_str::<Value>(line.trim())
                .is_ok_and(|v| v.get("orchestrator") == Some(&Value::Bool(true)))
        })
}

#[cfg(test)]
mod tests;
