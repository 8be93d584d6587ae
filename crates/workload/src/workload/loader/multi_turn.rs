//! `multi_turn`: one conversation per line, `{"session_id"?, "turns": [SingleTurn, ...]}`
//! (AIPerf's `MultiTurn`). Lines that share a `session_id` are appended to one conversation.
//! Default sampling: sequential.
//!
//! For endpoints that send a system message (chat), a leading text-only `role: "system"` turn
//! with no timestamp, delay, `output_length` or `extra` becomes the conversation's system
//! prompt instead of a request of its own; it stays a turn when nothing follows it or when the
//! next turn is a system turn too (AIPerf's hoisting rule).

use std::io::BufRead;
use std::path::Path;

use serde_json::Value;

use ringperf_wire::conversation::{Content, Dataset, Sampling, Turn};

use super::error::{LoadError, LoadErrorKind};
use super::fields::{Ctx, Obj, text_turn};
use super::lines::JsonLines;
use super::session::{SessionIds, Sessions, push_in_order};

/// Loads a `multi_turn` file. `hoist_system` is true for endpoints that send a system message.
///
/// # Errors
/// The first bad line, as a [`LoadError`] naming the line and the field (`turns[1].text`).
pub fn load(path: &Path, ids: &mut SessionIds, hoist_system: bool) -> Result<Dataset, LoadError> {
    load_lines(JsonLines::open(path)?, path, ids, hoist_system)
}

/// [`load`] on lines read from anywhere (a config file's inline records); `path` names them.
///
/// # Errors
/// As [`load`].
pub fn load_lines<R: BufRead>(
    mut lines: JsonLines<R>,
    path: &Path,
    ids: &mut SessionIds,
    hoist_system: bool,
) -> Result<Dataset, LoadError> {
    let mut sessions = Sessions::default();
    // Per conversation: the hoisted system turn, kept to put back if the rule says so.
    let mut hoisted: Vec<Option<Turn>> = Vec::new();
    while let Some((line, map)) = lines.next_object()? {
        let ctx = Ctx { path, line };
        let mut obj = Obj::new(ctx, "", map);
        obj.check_fields(&["type", "session_id", "turns"])?;
        obj.type_tag("multi_turn")?;
        let session_id = obj.string("session_id")?;
        let turns = obj
            .array("turns")?
            .ok_or_else(|| obj.err("turns", LoadErrorKind::Missing))?;
        if turns.is_empty() {
            return Err(obj.err(
                "turns",
                LoadErrorKind::Invalid("at least one turn must be provided".into()),
            ));
        }
        let index = sessions.index(session_id, ids);
        hoisted.resize(sessions.conversations.len(), None);
        let conv = &mut sessions.conversations[index];
        for (i, item) in turns.into_iter().enumerate() {
            let Value::Object(map) = item else {
                return Err(ctx.err(
                    format!("turns[{i}]"),
                    LoadErrorKind::WrongType("a JSON object"),
                ));
            };
            let (_, turn) = text_turn(&mut Obj::new(ctx, format!("turns[{i}]."), map))?;
            if hoist_system
                && conv.turns.is_empty()
                && conv.system.is_none()
                && let Some(text) = hoistable(&turn)
            {
                conv.system = Some(text);
                hoisted[index] = Some(turn);
                continue;
            }
            push_in_order(conv, turn, ctx)?;
        }
    }
    if sessions.conversations.is_empty() {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    }
    for (conv, held) in sessions.conversations.iter_mut().zip(hoisted) {
        let Some(turn) = held else { continue };
        let unhoist = conv
            .turns
            .first()
            .is_none_or(|t| t.role.as_deref() == Some("system"));
        if unhoist {
            conv.system = None;
            conv.turns.insert(0, turn);
        }
    }
    Ok(Dataset {
        replay: false,
        conversations: sessions.conversations,
        default_sampling: Sampling::Sequential,
    })
}

/// The system prompt a turn would become: role `system`, texts only, no timing, no
/// `output_length`, no `extra`, and a non-empty text (texts joined by newlines).
fn hoistable(turn: &Turn) -> Option<String> {
    if turn.role.as_deref() != Some("system")
        || turn.timestamp_ms.is_some()
        || turn.delay_ms.is_some()
        || turn.max_tokens.is_some()
        || !turn.extra.is_empty()
    {
        return None;
    }
    let Content::Texts(texts) = &turn.content else {
        return None;
    };
    let text = texts.join("\n");
    (!text.is_empty()).then_some(text)
}
