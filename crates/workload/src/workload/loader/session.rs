//! Session ids and the grouping of records into conversations, as AIPerf's loaders do it.

use std::collections::HashMap;

use ringperf_wire::conversation::{Conversation, Turn};

use super::error::{LoadError, LoadErrorKind};
use super::fields::Ctx;

/// AIPerf's `SessionIDGenerator`: with `--random-seed`, `session_000000`, `session_000001`, …;
/// without one, a random UUID v4 each.
#[derive(Debug, Clone)]
pub enum SessionIds {
    Sequential(u64),
    Random,
}

impl SessionIds {
    /// Sequential ids when the user gave a seed, random ones otherwise.
    pub fn new(seeded: bool) -> Self {
        if seeded {
            SessionIds::Sequential(0)
        } else {
            SessionIds::Random
        }
    }

    /// The next id.
    pub fn next_id(&mut self) -> String {
        match self {
            SessionIds::Sequential(n) => {
                let id = format!("session_{n:06}");
                *n += 1;
                id
            }
            SessionIds::Random => uuid::Uuid::new_v4().to_string(),
        }
    }
}

/// Conversations keyed by session id, in order of first appearance: rows that share a
/// `session_id` become the turns of one conversation; a row without one gets a fresh id (and
/// so a conversation of its own).
#[derive(Debug, Default)]
pub struct Sessions {
    index: HashMap<String, usize>,
    pub conversations: Vec<Conversation>,
}

impl Sessions {
    /// Index of the conversation for `id`, created at the end if new; `None` draws a fresh id.
    pub fn index(&mut self, id: Option<String>, ids: &mut SessionIds) -> usize {
        let id = id.unwrap_or_else(|| ids.next_id());
        let next = self.conversations.len();
        let at = *self.index.entry(id.clone()).or_insert(next);
        if at == next {
            self.conversations.push(Conversation {
                session_id: id,
                ..Conversation::default()
            });
        }
        at
    }

    /// The conversation for `id` (see [`Sessions::index`]).
    pub fn conversation(&mut self, id: Option<String>, ids: &mut SessionIds) -> &mut Conversation {
        let at = self.index(id, ids);
        &mut self.conversations[at]
    }
}

/// Appends `turn` to `conv`, failing when its timestamp is earlier than the timestamp of the
/// conversation's last timed turn (a session goes forward in time).
pub fn push_in_order(conv: &mut Conversation, turn: Turn, ctx: Ctx<'_>) -> Result<(), LoadError> {
    if let Some(this_ms) = turn.timestamp_ms {
        let previous_ms = conv.turns.iter().rev().find_map(|t| t.timestamp_ms);
        forward_in_time(previous_ms, this_ms, ctx)?;
    }
    conv.turns.push(turn);
    Ok(())
}

/// Fails with the line's `timestamp` error when `this_ms` is earlier than `previous_ms`.
pub fn forward_in_time(
    previous_ms: Option<f64>,
    this_ms: f64,
    ctx: Ctx<'_>,
) -> Result<(), LoadError> {
    match previous_ms {
        Some(previous_ms) if this_ms < previous_ms => Err(ctx.err(
            "timestamp",
            LoadErrorKind::TimestampBackwards {
                previous_ms,
                this_ms,
            },
        )),
        _ => Ok(()),
    }
}
