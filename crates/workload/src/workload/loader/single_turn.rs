//! `single_turn`: one JSON object per line, each a turn (AIPerf's `SingleTurn`). Rows that
//! share a `session_id` are the turns of one conversation, in file order; a row without one is
//! a conversation of its own. Default sampling: sequential. With `--uuid-and-strip`, an image
//! whose cache UUID an earlier turn of the same conversation sent with its bytes is sent as
//! its UUID alone (AIPerf's load-time dedup for vLLM's multimodal processor cache).

use std::collections::HashSet;
use std::io::BufRead;
use std::path::Path;
use std::sync::Arc;

use ringperf_wire::conversation::{Conversation, Dataset, Media, Sampling};

use super::error::{LoadError, LoadErrorKind};
use super::fields::{Ctx, Obj, text_turn};
use super::lines::JsonLines;
use super::session::{SessionIds, Sessions, push_in_order};

/// Loads a `single_turn` file; `strip` is `--uuid-and-strip`.
///
/// # Errors
/// The first bad line, as a [`LoadError`] naming the line and the field.
pub fn load(path: &Path, ids: &mut SessionIds, strip: bool) -> Result<Dataset, LoadError> {
    load_lines(JsonLines::open(path)?, path, ids, strip)
}

/// [`load`] on lines read from anywhere (a config file's inline records); `path` names them.
///
/// # Errors
/// As [`load`].
pub fn load_lines<R: BufRead>(
    mut lines: JsonLines<R>,
    path: &Path,
    ids: &mut SessionIds,
    strip: bool,
) -> Result<Dataset, LoadError> {
    let mut sessions = Sessions::default();
    while let Some((line, map)) = lines.next_object()? {
        let ctx = Ctx { path, line };
        let (session_id, turn) = text_turn(&mut Obj::new(ctx, "", map))?;
        push_in_order(sessions.conversation(session_id, ids), turn, ctx)?;
    }
    if sessions.conversations.is_empty() {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    }
    if strip {
        sessions
            .conversations
            .iter_mut()
            .for_each(strip_repeated_images);
    }
    Ok(Dataset {
        replay: false,
        conversations: sessions.conversations,
        default_sampling: Sampling::Sequential,
    })
}

/// Empties the URL of every image whose UUID an earlier turn of `conv` sent with its bytes. A
/// UUID repeated within one turn keeps its bytes (the server fills its cache only after the
/// request), and a UUID-only reference counts as sent by no one.
fn strip_repeated_images(conv: &mut Conversation) {
    let mut seen: HashSet<Arc<str>> = HashSet::new();
    for turn in &mut conv.turns {
        let mut sent = Vec::new();
        for m in &mut turn.media {
            if let Media::ImageUuid { url, uuid } = m {
                if seen.contains(uuid) {
                    *url = Arc::from("");
                } else if !url.is_empty() {
                    sent.push(Arc::clone(uuid));
                }
            }
        }
        seen.extend(sent);
    }
}
