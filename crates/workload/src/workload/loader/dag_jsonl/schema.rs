//! One line of a `dag_jsonl` file read into its typed form, with AIPerf 0.13's rules
//! (`DagConversation`, `DagTurn`, `DagFork`, `DagSpawn`, `DagRound`): every object is closed,
//! each field has its type and bounds, and the conversation-level rules (orchestrator, rounds,
//! think time) are checked in AIPerf's order. Nothing here knows the other lines.

use serde_json::{Map, Value};

use super::super::error::{LoadError, LoadErrorKind};
use super::super::fields::{Ctx, Obj};
use super::super::mooncake_trace::check_messages;
use ringperf_wire::conversation::{ContextMode, ThinkTime};

/// A conversation line.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct DagLine {
    pub line: u64,
    pub session_id: String,
    pub turns: Vec<DagTurn>,
    /// `orchestrator: true`: its turns (made here from `rounds` and `spawns`, AIPerf's) send
    /// no request.
    pub orchestrator: bool,
    /// An orchestrator's sampled think time (`think_time_sigma` and its bounds).
    pub think: Option<ThinkTime>,
    /// `context_mode`; `None`: AIPerf's default for DAG files (`deltas_without_responses`).
    pub context: Option<ContextMode>,
    pub pre_session_spawns: Vec<String>,
}

/// A turn.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct DagTurn {
    pub messages: Vec<Value>,
    pub model: Option<String>,
    pub max_tokens: Option<u32>,
    pub tools: Option<Vec<Value>>,
    pub extra: Option<Map<String, Value>>,
    pub forks: Vec<Fork>,
    pub spawns: Vec<SpawnEntry>,
    /// Milliseconds to wait after the previous answer (0: none).
    pub delay_ms: f64,
}

/// A `forks` entry: a bare id is a foreground fork.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Fork {
    pub child: String,
    pub background: bool,
}

/// A `spawns` entry: a bare id, or a `{"children", "join_at"}` group.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum SpawnEntry {
    Bare(String),
    Group {
        children: Vec<String>,
        join_at: Option<i64>,
    },
}

/// The conversation fields AIPerf's model knows, in its order.
const CONVERSATION_FIELDS: &[&str] = &[
    "session_id",
    "turns",
    "orchestrator",
    "spawns",
    "think_time_ms",
    "think_time_sigma",
    "think_time_min_ms",
    "think_time_max_ms",
    "rounds",
    "context_mode",
    "pre_session_spawns",
];
const TURN_FIELDS: &[&str] = &[
    "messages",
    "model",
    "max_tokens",
    "tools",
    "extra",
    "forks",
    "spawns",
    "delay",
];

fn invalid(obj: &Obj<'_>, key: &str, why: impl Into<String>) -> LoadError {
    obj.err(key, LoadErrorKind::Invalid(why.into()))
}

/// Fails on the first key not in `allowed` (AIPerf's `extra="forbid"`).
fn closed(obj: &Obj<'_>, map: &Map<String, Value>, allowed: &[&str]) -> Result<(), LoadError> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(obj.err(k, LoadErrorKind::UnknownField)),
        None => Ok(()),
    }
}

/// A string field of at least one character.
fn nonempty_string(obj: &mut Obj<'_>, key: &str) -> Result<Option<String>, LoadError> {
    match obj.string(key)? {
        Some(s) if s.is_empty() => Err(invalid(obj, key, "must be at least 1 character")),
        other => Ok(other),
    }
}

/// A list of strings (`pre_session_spawns`, an orchestrator's `spawns`).
fn strings(obj: &mut Obj<'_>, key: &str) -> Result<Vec<String>, LoadError> {
    let Some(list) = obj.array(key)? else {
        return Ok(Vec::new());
    };
    list.into_iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) => Ok(s),
            _ => Err(obj.err(&format!("{key}[{i}]"), LoadErrorKind::WrongType("a string"))),
        })
        .collect()
}

/// A boolean field.
fn boolean(obj: &mut Obj<'_>, key: &str) -> Result<Option<bool>, LoadError> {
    match obj.take(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(_) => Err(obj.err(key, LoadErrorKind::WrongType("a boolean"))),
    }
}

/// `why_bool` with the boolean as Python spells it for `{got}` (AIPerf's `{v!r}`).
fn bool_refusal(obj: &Obj<'_>, key: &str, why_bool: &str, b: bool) -> LoadError {
    invalid(
        obj,
        key,
        why_bool.replace("{got}", if b { "True" } else { "False" }),
    )
}

/// A finite number, never a boolean (AIPerf refuses `true` where it means a number, with
/// `why_bool`).
fn number(obj: &mut Obj<'_>, key: &str, why_bool: &str) -> Result<Option<f64>, LoadError> {
    match obj.take(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Err(bool_refusal(obj, key, why_bool, b)),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if x.is_finite() => Ok(Some(x)),
            _ => Err(invalid(obj, key, "must be a finite number")),
        },
        Some(_) => Err(obj.err(key, LoadErrorKind::WrongType("a number"))),
    }
}

/// An integer (a float with no fraction counts, as AIPerf's lax integers), never a boolean.
fn integer(obj: &mut Obj<'_>, key: &str, why_bool: &str) -> Result<Option<i64>, LoadError> {
    match obj.take(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Err(bool_refusal(obj, key, why_bool, b)),
        Some(Value::Number(n)) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Ok(Some(i)),
            (None, Some(x)) if x.fract() == 0.0 && x.abs() < 9.0e15 => Ok(Some(x as i64)),
            _ => Err(obj.err(key, LoadErrorKind::WrongType("an integer"))),
        },
        Some(_) => Err(obj.err(key, LoadErrorKind::WrongType("an integer"))),
    }
}

/// A number ≥ 0 (`ge=0.0`).
fn at_least_zero(obj: &mut Obj<'_>, key: &str, why_bool: &str) -> Result<Option<f64>, LoadError> {
    match number(obj, key, why_bool)? {
        Some(x) if x < 0.0 => Err(invalid(obj, key, "must be greater than or equal to 0")),
        other => Ok(other),
    }
}

/// AIPerf's `ConversationContextMode` (case-insensitive). `message_array_without_responses`,
/// which AIPerf reserves and does not implement, is refused.
fn context_mode(obj: &mut Obj<'_>) -> Result<Option<ContextMode>, LoadError> {
    let Some(s) = obj.string("context_mode")? else {
        return Ok(None);
    };
    match s.to_ascii_lowercase().as_str() {
        "deltas_without_responses" => Ok(Some(ContextMode::LiveReplies)),
        "deltas_with_responses" => Ok(Some(ContextMode::Recorded)),
        "message_array_with_responses" => Ok(Some(ContextMode::Standalone)),
        "message_array_without_responses" => Err(invalid(
            obj,
            "context_mode",
            "\"message_array_without_responses\" is reserved and not implemented (by AIPerf \
             either)",
        )),
        _ => Err(invalid(
            obj,
            "context_mode",
            format!(
                "{s:?} is not one of \"deltas_without_responses\", \"deltas_with_responses\", \
                 \"message_array_with_responses\""
            ),
        )),
    }
}

const BOOL_SCHEDULING: &str = "rounds / think_time_* must be numeric (or a list for 'rounds'), \
                               not a boolean (got {got}); check for a typo in your DAG JSONL file";

/// Reads one line's object.
///
/// # Errors
/// The first rule the line breaks, naming the field (`turns[1].max_tokens`).
pub(super) fn parse_line(ctx: Ctx<'_>, map: Map<String, Value>) -> Result<DagLine, LoadError> {
    let mut obj = Obj::new(ctx, "", Map::new());
    closed(&obj, &map, CONVERSATION_FIELDS)?;
    obj = Obj::new(ctx, "", map);
    let session_id = nonempty_string(&mut obj, "session_id")?
        .ok_or_else(|| obj.err("session_id", LoadErrorKind::Missing))?;
    let turn_values = obj.array("turns")?.unwrap_or_default();
    let mut turns = Vec::with_capacity(turn_values.len());
    for (i, v) in turn_values.into_iter().enumerate() {
        let Value::Object(m) = v else {
            return Err(ctx.err(
                format!("turns[{i}]"),
                LoadErrorKind::WrongType("a JSON object"),
            ));
        };
        turns.push(parse_turn(
            Obj::new(ctx, format!("turns[{i}]."), Map::new()),
            m,
        )?);
    }
    let orchestrator = boolean(&mut obj, "orchestrator")?.unwrap_or(false);
    let spawns = strings(&mut obj, "spawns")?;
    let think_ms = at_least_zero(&mut obj, "think_time_ms", BOOL_SCHEDULING)?;
    let sigma = number(&mut obj, "think_time_sigma", BOOL_SCHEDULING)?;
    if let Some(s) = sigma
        && !(s > 0.0 && s <= 10.0)
    {
        return Err(invalid(
            &obj,
            "think_time_sigma",
            "must be greater than 0 and at most 10",
        ));
    }
    let min_ms = at_least_zero(&mut obj, "think_time_min_ms", BOOL_SCHEDULING)?;
    let max_ms = at_least_zero(&mut obj, "think_time_max_ms", BOOL_SCHEDULING)?;
    let rounds = parse_rounds(&mut obj)?;
    let context = context_mode(&mut obj)?;
    let pre_session_spawns = strings(&mut obj, "pre_session_spawns")?;

    // AIPerf's model validators, in its order: the orchestrator's shape, then think time.
    let whole = |why: &str| LoadError::line(ctx.path, ctx.line, LoadErrorKind::Invalid(why.into()));
    if orchestrator {
        if !turns.is_empty() {
            return Err(whole(
                "orchestrator conversation must have an empty authored 'turns' list (the loader \
                 synthesizes its single no-op turn)",
            ));
        }
        check_rounds(&rounds, &spawns, &whole)?;
        if !pre_session_spawns.is_empty() {
            return Err(whole(
                "orchestrator conversation must not set 'pre_session_spawns'; use \
                 conversation-level 'spawns' instead",
            ));
        }
        if think_ms.is_some() && rounds.is_none() {
            return Err(whole(
                "'think_time_ms' requires 'rounds' (it is the per-round wait of the gated \
                 spine); it has no meaning for a single fire-and-forget turn",
            ));
        }
        if sigma.is_some() && think_ms.is_none() {
            return Err(whole(
                "'think_time_sigma' requires 'think_time_ms' (the lognormal median to sample \
                 around)",
            ));
        }
        if (min_ms.is_some() || max_ms.is_some()) && sigma.is_none() {
            return Err(whole(
                "'think_time_min_ms'/'think_time_max_ms' require 'think_time_sigma' (they clamp \
                 the sampled draw; a fixed think-time has nothing to clamp)",
            ));
        }
        if let (Some(lo), Some(hi)) = (min_ms, max_ms)
            && lo > hi
        {
            return Err(whole(&format!(
                "'think_time_min_ms' must be <= 'think_time_max_ms' (got {lo} > {hi})"
            )));
        }
    } else {
        if rounds.is_some() {
            return Err(whole(
                "'rounds' is only valid on an orchestrator conversation (set 'orchestrator': \
                 true)",
            ));
        }
        if !spawns.is_empty() {
            return Err(whole(
                "conversation-level 'spawns' is only valid on an orchestrator conversation; a \
                 normal conversation uses per-turn 'spawns' (top-level 'spawns' would be \
                 silently ignored)",
            ));
        }
        if turns.is_empty() {
            return Err(whole(
                "'turns' must be non-empty unless 'orchestrator' is true",
            ));
        }
        if think_ms.is_some() || sigma.is_some() || min_ms.is_some() || max_ms.is_some() {
            return Err(whole(
                "'think_time_ms'/'think_time_sigma'/'think_time_min_ms'/'think_time_max_ms' are \
                 only valid on an orchestrator conversation with 'rounds' set",
            ));
        }
    }
    let think = sigma.map(|sigma| ThinkTime {
        sigma,
        min_ms,
        max_ms,
    });
    if orchestrator {
        turns = spine(rounds, spawns, think_ms.unwrap_or(0.0));
    }
    Ok(DagLine {
        line: ctx.line,
        session_id,
        turns,
        orchestrator,
        think,
        context,
        pre_session_spawns,
    })
}

/// An orchestrator's request-free turns, as AIPerf's loader makes them. With `rounds`: a turn a
/// round, each spawning the round's children (the count form: `spawns` every round) joined by
/// the next turn and carrying the round's think time as its delay (the round's own, else
/// `think_ms`), then a last turn that only waits for the last round. Without: one turn whose
/// `spawns` run in the background (consecutive ids one branch, as a turn's).
fn spine(rounds: Option<Rounds>, spawns: Vec<String>, think_ms: f64) -> Vec<DagTurn> {
    let turn = |spawns: Vec<SpawnEntry>, delay_ms: f64| DagTurn {
        messages: Vec::new(),
        model: None,
        max_tokens: None,
        tools: None,
        extra: None,
        forks: Vec::new(),
        spawns,
        delay_ms,
    };
    let plan: Vec<(Vec<String>, f64)> = match rounds {
        None => {
            return vec![turn(
                spawns.into_iter().map(SpawnEntry::Bare).collect(),
                0.0,
            )];
        }
        Some(Rounds::Count(n)) => (0..n).map(|_| (spawns.clone(), think_ms)).collect(),
        Some(Rounds::List(list)) => (list.into_iter())
            .map(|(children, own)| (children, own.unwrap_or(think_ms)))
            .collect(),
    };
    let mut turns: Vec<DagTurn> = (plan.into_iter().enumerate())
        .map(|(k, (children, think))| {
            let join_at = Some(k as i64 + 1);
            turn(vec![SpawnEntry::Group { children, join_at }], think)
        })
        .collect();
    turns.push(turn(Vec::new(), 0.0));
    turns
}

/// An orchestrator's `rounds`: a count, or a list of `{"spawns", "think_time_ms"}` rounds.
#[derive(Debug)]
enum Rounds {
    Count(i64),
    /// Each round's children and own `think_time_ms`.
    List(Vec<(Vec<String>, Option<f64>)>),
}

fn parse_rounds(obj: &mut Obj<'_>) -> Result<Option<Rounds>, LoadError> {
    let ctx = obj.ctx;
    match obj.take("rounds") {
        None => Ok(None),
        Some(Value::Bool(b)) => Err(bool_refusal(obj, "rounds", BOOL_SCHEDULING, b)),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => Ok(Some(Rounds::Count(i))),
            None => Err(obj.err("rounds", LoadErrorKind::WrongType("an integer or a list"))),
        },
        Some(Value::Array(list)) => {
            let mut rounds = Vec::with_capacity(list.len());
            for (i, v) in list.into_iter().enumerate() {
                let Value::Object(m) = v else {
                    return Err(obj.err(
                        &format!("rounds[{i}]"),
                        LoadErrorKind::WrongType("a JSON object"),
                    ));
                };
                let mut r = Obj::new(ctx, format!("rounds[{i}]."), Map::new());
                closed(&r, &m, &["spawns", "think_time_ms"])?;
                r = Obj::new(ctx, format!("rounds[{i}]."), m);
                let spawns = strings(&mut r, "spawns")?;
                if spawns.is_empty() {
                    return Err(invalid(&r, "spawns", "must have at least 1 item"));
                }
                let think = at_least_zero(
                    &mut r,
                    "think_time_ms",
                    "think_time_ms must be numeric, not a boolean (got {got})",
                )?;
                rounds.push((spawns, think));
            }
            Ok(Some(Rounds::List(rounds)))
        }
        Some(_) => Err(obj.err("rounds", LoadErrorKind::WrongType("an integer or a list"))),
    }
}

/// AIPerf's `_validate_orchestrator_rounds`.
fn check_rounds(
    rounds: &Option<Rounds>,
    spawns: &[String],
    whole: &dyn Fn(&str) -> LoadError,
) -> Result<(), LoadError> {
    match rounds {
        Some(Rounds::List(list)) => {
            if list.is_empty() {
                return Err(whole("orchestrator 'rounds' list must be non-empty"));
            }
            if !spawns.is_empty() {
                return Err(whole(
                    "with a per-round 'rounds' list, omit conversation-level 'spawns' (each \
                     round declares its own 'spawns')",
                ));
            }
            let mut seen = std::collections::HashSet::new();
            for child in list.iter().flat_map(|r| &r.0) {
                if !seen.insert(child.as_str()) {
                    return Err(whole(&format!(
                        "child session id '{child}' is spawned by more than one round; each \
                         list-form round must own distinct branch sessions for unambiguous raw \
                         attribution"
                    )));
                }
            }
            Ok(())
        }
        other => {
            if let Some(Rounds::Count(n)) = other
                && *n < 1
            {
                return Err(whole("'rounds' count must be >= 1"));
            }
            if spawns.is_empty() {
                return Err(whole(
                    "orchestrator conversation requires a non-empty 'spawns' (or a per-round \
                     'rounds' list)",
                ));
            }
            Ok(())
        }
    }
}

fn parse_turn(mut obj: Obj<'_>, map: Map<String, Value>) -> Result<DagTurn, LoadError> {
    closed(&obj, &map, TURN_FIELDS)?;
    let ctx = obj.ctx;
    let prefix = obj.name("");
    obj = Obj::new(ctx, prefix.clone(), map);
    let messages = obj
        .array("messages")?
        .ok_or_else(|| obj.err("messages", LoadErrorKind::Missing))?;
    let model = obj.string("model")?;
    let max_tokens = match integer(
        &mut obj,
        "max_tokens",
        "max_tokens must be an integer, not a boolean (got {got}); check for a typo in your DAG \
         JSONL file",
    )? {
        None => None,
        Some(n) if n < 1 => {
            return Err(invalid(
                &obj,
                "max_tokens",
                "must be greater than or equal to 1",
            ));
        }
        Some(n) => Some(
            u32::try_from(n)
                .map_err(|_| invalid(&obj, "max_tokens", "must be at most 4294967295"))?,
        ),
    };
    let tools = match obj.array("tools")? {
        None => None,
        Some(list) => {
            if let Some(i) = list.iter().position(|t| !t.is_object()) {
                return Err(obj.err(
                    &format!("tools[{i}]"),
                    LoadErrorKind::WrongType("a JSON object"),
                ));
            }
            Some(list)
        }
    };
    let extra = obj.object("extra")?;
    let forks = parse_forks(&mut obj)?;
    let spawns = parse_spawns(&mut obj)?;
    let delay_ms = at_least_zero(
        &mut obj,
        "delay",
        "delay must be a number, not a boolean (got {got})",
    )?
    .unwrap_or(0.0);
    // AIPerf checks the messages last (a model validator): non-empty, each an object with a
    // role (ringperf sends text only: a media part is refused by name).
    check_messages(&Obj::new(ctx, prefix, Map::new()), &messages)?;
    Ok(DagTurn {
        messages,
        model,
        max_tokens,
        tools,
        extra,
        forks,
        spawns,
        delay_ms,
    })
}

fn parse_forks(obj: &mut Obj<'_>) -> Result<Vec<Fork>, LoadError> {
    let ctx = obj.ctx;
    let Some(list) = obj.array("forks")? else {
        return Ok(Vec::new());
    };
    let mut forks = Vec::with_capacity(list.len());
    for (i, v) in list.into_iter().enumerate() {
        let name = format!("{}forks[{i}].", obj.name(""));
        match v {
            Value::String(child) => forks.push(Fork {
                child,
                background: false,
            }),
            Value::Object(m) => {
                let mut f = Obj::new(ctx, name.clone(), Map::new());
                closed(&f, &m, &["child", "background"])?;
                f = Obj::new(ctx, name, m);
                let child = nonempty_string(&mut f, "child")?
                    .ok_or_else(|| f.err("child", LoadErrorKind::Missing))?;
                let background = boolean(&mut f, "background")?.unwrap_or(false);
                forks.push(Fork { child, background });
            }
            _ => {
                return Err(obj.err(
                    &format!("forks[{i}]"),
                    LoadErrorKind::WrongType(
                        "a session id or a {\"child\", \"background\"} object",
                    ),
                ));
            }
        }
    }
    Ok(forks)
}

fn parse_spawns(obj: &mut Obj<'_>) -> Result<Vec<SpawnEntry>, LoadError> {
    let ctx = obj.ctx;
    let Some(list) = obj.array("spawns")? else {
        return Ok(Vec::new());
    };
    let mut spawns = Vec::with_capacity(list.len());
    for (i, v) in list.into_iter().enumerate() {
        let name = format!("{}spawns[{i}].", obj.name(""));
        match v {
            Value::String(child) => spawns.push(SpawnEntry::Bare(child)),
            Value::Object(m) => {
                let mut s = Obj::new(ctx, name.clone(), Map::new());
                closed(&s, &m, &["children", "join_at"])?;
                s = Obj::new(ctx, name, m);
                let children = strings(&mut s, "children")?;
                if children.is_empty() {
                    return Err(invalid(&s, "children", "must have at least 1 item"));
                }
                let join_at = integer(
                    &mut s,
                    "join_at",
                    "join_at must be an integer, not a boolean (got {got})",
                )?;
                spawns.push(SpawnEntry::Group { children, join_at });
            }
            _ => {
                return Err(obj.err(
                    &format!("spawns[{i}]"),
                    LoadErrorKind::WrongType(
                        "a session id or a {\"children\", \"join_at\"} object",
                    ),
                ));
            }
        }
    }
    Ok(spawns)
}
