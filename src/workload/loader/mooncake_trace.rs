//! `mooncake_trace`: one request per line (AIPerf's `MooncakeTrace`): exactly one input form
//! among `input_length` (a synthetic prompt, built from `hash_ids` blocks when given),
//! `text_input` (the prompt itself), `messages` (chat messages sent as they are, with optional
//! `tools`) and `payload` (a whole request body sent verbatim); optional `timestamp` (ms),
//! `delay` (ms), `session_id`, `output_length` (→ `max_tokens`), `extra`. Rows that share a
//! `session_id` are one conversation, in file order; a session uses either synthesized
//! prompts, or `messages` only, or `payload` only. Timestamps never go backwards. Default
//! sampling: sequential.

use std::path::Path;

use serde_json::{Map, Value};

use crate::conversation::{Content, Dataset, Sampling, Turn};

use super::deferred::{BlockCheck, DeferredPrompts};
use super::error::{LoadError, LoadErrorKind};
use super::fields::{Ctx, Obj};
use super::lines::JsonLines;
use super::session::{SessionIds, Sessions, forward_in_time};

const FIELDS: &[&str] = &[
    "type",
    "input_length",
    "text_input",
    "messages",
    "tools",
    "payload",
    "output_length",
    "hash_ids",
    "timestamp",
    "delay",
    "session_id",
    "extra",
];

/// Part types of a chat message's `content` that carry media.
const MEDIA_PARTS: &[&str] = &[
    "image_url",
    "input_image",
    "image",
    "input_audio",
    "audio",
    "audio_url",
    "video_url",
    "video",
];

/// The input form of one row.
#[derive(Debug)]
enum Input {
    Length { n: u32, hash_ids: Vec<i64> },
    Text(String),
    Messages(Vec<Value>),
    Payload(Map<String, Value>),
}

impl Input {
    /// Which kind of session the row belongs in: synthesized (0), messages (1), payload (2).
    fn class(&self) -> (u8, &'static str) {
        match self {
            Input::Length { .. } => (0, "input_length"),
            Input::Text(_) => (0, "text_input"),
            Input::Messages(_) => (1, "messages"),
            Input::Payload(_) => (2, "payload"),
        }
    }
}

/// One parsed row, its prompt not yet built.
#[derive(Debug)]
struct Row {
    input: Input,
    turn: Turn,
}

/// The first pass over a `mooncake_trace` file: every row parsed and checked (fields, input
/// form, timestamps, session rules, `hash_ids` against the block size), no prompt built. An
/// `input_length` row's turn is left without text; its prompt is in the [`DeferredPrompts`].
///
/// # Errors
/// The first bad line, as a [`LoadError`] naming the line and the field.
pub fn load_deferred(
    path: &Path,
    ids: &mut SessionIds,
    block_size: usize,
    seed: u64,
) -> Result<(Dataset, DeferredPrompts), LoadError> {
    let mut lines = JsonLines::open(path)?;
    let mut sessions = Sessions::default();
    // Per conversation: the line and class of its first row.
    let mut first: Vec<(u64, (u8, &'static str))> = Vec::new();
    let mut last_timestamp: Option<f64> = None;
    let mut deferred = DeferredPrompts::new(path, block_size, seed);
    let mut blocks = BlockCheck::default();
    while let Some((line, map)) = lines.next_object()? {
        let ctx = Ctx { path, line };
        let mut obj = Obj::new(ctx, "", map);
        let (session_id, row) = parse_row(&mut obj)?;
        if let Some(this_ms) = row.turn.timestamp_ms {
            forward_in_time(last_timestamp, this_ms, ctx)?;
            last_timestamp = Some(this_ms);
        }
        let at = sessions.index(session_id, ids);
        if at == first.len() {
            first.push((line, row.input.class()));
        }
        let (first_line, (first_class, first_name)) = first[at];
        let (class, name) = row.input.class();
        if class != first_class {
            return Err(ctx.err(
                name,
                LoadErrorKind::Invalid(format!(
                    "session {:?} mixes \"{name}\" with \"{first_name}\" (line {first_line}); a \
                     session uses synthesized prompts, or \"messages\" only, or \"payload\" only",
                    sessions.conversations[at].session_id
                )),
            ));
        }
        let Row {
            input, mut turn, ..
        } = row;
        let conv = &mut sessions.conversations[at];
        turn.content = match input {
            Input::Length { n, hash_ids } => {
                blocks
                    .check(n as usize, block_size, &hash_ids)
                    .map_err(|why| ctx.err("hash_ids", LoadErrorKind::Invalid(why.to_string())))?;
                deferred.push(at as u32, conv.turns.len() as u32, n, &hash_ids, line);
                // Built later (`DeferredPrompts`).
                Content::Texts(Vec::new())
            }
            Input::Text(t) => Content::Texts(vec![t]),
            Input::Messages(m) => Content::Messages(m),
            Input::Payload(p) => Content::Raw(Value::Object(p)),
        };
        conv.turns.push(turn);
    }
    if sessions.conversations.is_empty() {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    }
    deferred.seal(lines.content_hash());
    let dataset = Dataset {
        replay: true,
        conversations: sessions.conversations,
        default_sampling: Sampling::Sequential,
    };
    Ok((dataset, deferred))
}

/// One row's fields (its prompt still to build) and its session id.
fn parse_row(obj: &mut Obj<'_>) -> Result<(Option<String>, Row), LoadError> {
    obj.check_fields(FIELDS)?;
    obj.type_tag("mooncake_trace")?;
    let input_length = obj.count("input_length")?;
    let text_input = obj.string("text_input")?;
    let messages = obj.array("messages")?;
    let tools = obj.array("tools")?;
    let payload = obj.object("payload")?;
    let hash_ids = obj.array("hash_ids")?;
    let given: Vec<&str> = [
        ("input_length", input_length.is_some()),
        ("text_input", text_input.is_some()),
        ("messages", messages.is_some()),
        ("payload", payload.is_some()),
    ]
    .iter()
    .filter_map(|&(n, set)| set.then_some(n))
    .collect();
    match given.as_slice() {
        [] => {
            return Err(obj.err(
                "input_length",
                LoadErrorKind::Invalid(
                    "required but missing: exactly one of \"input_length\", \"text_input\", \
                     \"messages\" or \"payload\" must be given"
                        .into(),
                ),
            ));
        }
        [_] => {}
        [_, second, ..] => {
            return Err(obj.err(
                second,
                LoadErrorKind::Invalid(format!(
                    "\"{}\" and \"{second}\" cannot be given together (exactly one input form)",
                    given[0]
                )),
            ));
        }
    }
    if hash_ids.is_some() && input_length.is_none() {
        return Err(obj.err(
            "hash_ids",
            LoadErrorKind::Invalid("only allowed with \"input_length\"".into()),
        ));
    }
    if let Some(tools) = &tools {
        if messages.is_none() {
            return Err(obj.err(
                "tools",
                LoadErrorKind::Invalid("only allowed with \"messages\"".into()),
            ));
        }
        if tools.is_empty() {
            return Err(obj.err("tools", LoadErrorKind::Invalid("must not be empty".into())));
        }
    }
    let input = if let Some(n) = input_length {
        if n == 0 {
            return Err(obj.err(
                "input_length",
                LoadErrorKind::Invalid("must be greater than 0".into()),
            ));
        }
        let mut ids = Vec::new();
        for (i, v) in hash_ids.unwrap_or_default().into_iter().enumerate() {
            match v.as_i64() {
                Some(id) => ids.push(id),
                None => {
                    return Err(obj.err(
                        &format!("hash_ids[{i}]"),
                        LoadErrorKind::WrongType("an integer"),
                    ));
                }
            }
        }
        Input::Length { n, hash_ids: ids }
    } else if let Some(t) = text_input {
        Input::Text(t)
    } else if let Some(m) = messages {
        check_messages(obj, &m)?;
        Input::Messages(m)
    } else if let Some(p) = payload {
        if p.is_empty() {
            return Err(obj.err(
                "payload",
                LoadErrorKind::Invalid("must not be empty".into()),
            ));
        }
        Input::Payload(p)
    } else {
        // Not reached: exactly one input form was checked above.
        return Err(obj.err("input_length", LoadErrorKind::Missing));
    };
    let timestamp_ms = obj.millis("timestamp")?;
    let delay_ms = obj.millis("delay")?;
    let session_id = obj.string("session_id")?;
    let max_tokens = obj.count("output_length")?;
    let mut extra = Map::new();
    if let Some(tools) = tools {
        extra.insert("tools".into(), Value::Array(tools));
    }
    if let Some(e) = obj.object("extra")? {
        extra.extend(e);
    }
    Ok((
        session_id,
        Row {
            input,
            turn: Turn {
                max_tokens,
                timestamp_ms,
                delay_ms,
                extra,
                ..Turn::default()
            },
        },
    ))
}

/// AIPerf's chat-message shape: a non-empty list of objects with a `role`; ringperf adds that
/// no content part carries media.
fn check_messages(obj: &Obj<'_>, messages: &[Value]) -> Result<(), LoadError> {
    if messages.is_empty() {
        return Err(obj.err(
            "messages",
            LoadErrorKind::Invalid("must not be empty".into()),
        ));
    }
    for (i, m) in messages.iter().enumerate() {
        let Some(m) = m.as_object() else {
            return Err(obj.err(
                &format!("messages[{i}]"),
                LoadErrorKind::WrongType("a JSON object"),
            ));
        };
        if !m.contains_key("role") {
            return Err(obj.err(&format!("messages[{i}].role"), LoadErrorKind::Missing));
        }
        if let Some(Value::Array(parts)) = m.get("content") {
            for (j, part) in parts.iter().enumerate() {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
                if MEDIA_PARTS.contains(&kind) {
                    return Err(obj.err(
                        &format!("messages[{i}].content[{j}]"),
                        LoadErrorKind::NotText,
                    ));
                }
            }
        }
    }
    Ok(())
}
