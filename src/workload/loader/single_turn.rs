//! `single_turn`: one JSON object per line, each a turn (AIPerf's `SingleTurn`). Rows that
//! share a `session_id` are the turns of one conversation, in file order; a row without one is
//! a conversation of its own. Default sampling: sequential.

use std::path::Path;

use crate::conversation::{Dataset, Sampling};

use super::error::{LoadError, LoadErrorKind};
use super::fields::{Ctx, Obj, text_turn};
use super::lines::JsonLines;
use super::session::{SessionIds, Sessions, push_in_order};

/// Loads a `single_turn` file.
///
/// # Errors
/// The first bad line, as a [`LoadError`] naming the line and the field.
pub fn load(path: &Path, ids: &mut SessionIds) -> Result<Dataset, LoadError> {
    let mut lines = JsonLines::open(path)?;
    let mut sessions = Sessions::default();
    while let Some((line, map)) = lines.next_object()? {
        let ctx = Ctx { path, line };
        let (session_id, turn) = text_turn(&mut Obj::new(ctx, "", map))?;
        push_in_order(sessions.conversation(session_id, ids), turn, ctx)?;
    }
    if sessions.conversations.is_empty() {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    }
    Ok(Dataset {
        replay: false,
        conversations: sessions.conversations,
        default_sampling: Sampling::Sequential,
    })
}
