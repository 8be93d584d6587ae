//! `bailian_trace`: Alibaba Bailian's anonymized Qwen serving trace (AIPerf's `BailianTrace`,
//! <https://github.com/alibaba-edu/qwen-bailian-usagetraces-anon>): one request per line,
//! `chat_id`, `parent_chat_id` (`-1` for a conversation's first request), `timestamp` in
//! **seconds**, `input_length`, `output_length`, the request `type` (`text`, `search`, …),
//! `turn` and `hash_ids` (16-token blocks unless `--prompt-input-tokens-block-size` says
//! otherwise).
//!
//! As AIPerf groups them: a request's conversation is the root its `parent_chat_id` links lead
//! to (a link to a `chat_id` not in the file, to itself, or round in a loop ends the walk
//! where it is), named by the root's `chat_id`; conversations are in order of their first row,
//! and a conversation's turns are ordered by `turn` (ties in file order). Prompts are built
//! from the hash ids by the `mooncake_trace` machinery ([`super::deferred`]): this loader only
//! reads the rows and says where each one's turn goes.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::workload::{Prepared, PreparedConversation, PreparedTurn};
use ringperf_wire::conversation::{Content, Sampling, Turn};

use super::deferred::{BlockCheck, DeferredPrompts, DeferredRow, TraceIndex};
use super::error::{LoadError, LoadErrorKind};
use super::fields::{Ctx, Obj};
use super::lines::{JsonLines, file_hash};
use super::mooncake_trace::Synthesized;

const FIELDS: &[&str] = &[
    "chat_id",
    "parent_chat_id",
    "timestamp",
    "input_length",
    "output_length",
    "type",
    "turn",
    "hash_ids",
];

/// A row as AIPerf's `BailianTrace` validates it: the four required fields of their types
/// (what auto-detection looks for; `parent_chat_id`, `type`, `turn` and `hash_ids` have
/// defaults).
pub(super) fn detect(map: &Map<String, Value>) -> bool {
    let int = |k: &str| map.get(k).is_some_and(|v| v.as_i64().is_some());
    int("chat_id")
        && int("input_length")
        && int("output_length")
        && map.get("timestamp").is_some_and(Value::is_number)
}

/// One row, parsed.
#[derive(Debug)]
struct Row {
    chat_id: i64,
    parent_chat_id: i64,
    turn: i64,
    input_length: u32,
    hash_ids: Vec<i64>,
    /// The turn: its timestamp (ms) and `max_tokens`.
    timed: Turn,
}

/// What the first pass keeps of a row until the conversations are known.
#[derive(Debug)]
struct Kept {
    chat_id: i64,
    parent_chat_id: i64,
    turn: i64,
    timestamp_ms: f64,
    max_tokens: Option<u32>,
    offset: u64,
    len: u32,
    line: u64,
}

/// The first pass over a `bailian_trace` file: every row parsed and checked (fields, types,
/// `hash_ids` against the block size), its conversation found by its `parent_chat_id` links,
/// and nothing kept of it but its skeleton turn and where it is in the file
/// ([`DeferredRow`]): its prompt is built later, as a `mooncake_trace` row's is.
///
/// # Errors
/// The first bad line, as a [`LoadError`] naming the line and the field.
pub fn scan(
    path: &Path,
    hash_path: &Path,
    block_size: usize,
    seed: u64,
) -> Result<TraceIndex, LoadError> {
    let mut lines = JsonLines::open(path)?.unhashed();
    let mut kept: Vec<Kept> = Vec::new();
    let mut blocks = BlockCheck::default();
    while let Some((line, offset, text)) = lines.next_line()? {
        let ctx = Ctx { path, line };
        let len = super::lines::line_len(path, line, text)?;
        let row = parse_text(ctx, text)?;
        blocks
            .check(row.input_length as usize, block_size, &row.hash_ids)
            .map_err(|why| ctx.err("hash_ids", LoadErrorKind::Invalid(why.to_string())))?;
        kept.push(Kept {
            chat_id: row.chat_id,
            parent_chat_id: row.parent_chat_id,
            turn: row.turn,
            timestamp_ms: row.timed.timestamp_ms.unwrap_or_default(),
            max_tokens: row.timed.max_tokens,
            offset,
            len,
            line,
        });
    }
    if kept.is_empty() {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    }
    let roots = roots(&kept);
    // Conversations in order of their first row; each one's rows in file order, then sorted
    // by turn (a stable sort: ties keep file order).
    let mut index: HashMap<i64, usize> = HashMap::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (i, &root) in roots.iter().enumerate() {
        let at = *index.entry(root).or_insert_with(|| {
            members.push(Vec::new());
            members.len() - 1
        });
        members[at].push(i);
    }
    let mut deferred = DeferredPrompts::new(path, block_size, seed, reread);
    let mut conversations = Vec::with_capacity(members.len());
    for (c, rows) in members.iter_mut().enumerate() {
        rows.sort_by_key(|&i| kept[i].turn);
        let turns = rows
            .iter()
            .enumerate()
            .map(|(t, &i)| {
                let k = &kept[i];
                deferred.push(DeferredRow::new(
                    c as u32, t as u32, true, k.offset, k.len, k.line,
                ));
                PreparedTurn {
                    max_tokens: k.max_tokens,
                    timestamp_ms: Some(k.timestamp_ms),
                    ..PreparedTurn::default()
                }
            })
            .collect();
        conversations.push(PreparedConversation {
            session_id: roots[rows[0]].to_string(),
            turns,
            ..PreparedConversation::default()
        });
    }
    deferred.seal(file_hash(hash_path)?);
    let history = conversations.iter().any(|c| c.turns.len() > 1);
    Ok(TraceIndex {
        skeleton: Prepared {
            conversations,
            default_sampling: Sampling::Sequential,
            replay: true,
            ..Prepared::default()
        },
        rows: deferred,
        history,
    })
}

/// The root `chat_id` of every row, as AIPerf's `find_root` walks the links: from a row's
/// `chat_id`, follow `parent_chat_id` while the current id names a row (the last row of that
/// `chat_id`) whose parent is not `-1`, stopping at a parent that is the row itself, names
/// no row, or closes a loop.
fn roots(rows: &[Kept]) -> Vec<i64> {
    let by_chat_id: HashMap<i64, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.chat_id, i))
        .collect();
    let mut cache: HashMap<i64, i64> = HashMap::new();
    rows.iter()
        .map(|r| {
            if let Some(&root) = cache.get(&r.chat_id) {
                return root;
            }
            let mut path = Vec::new();
            let mut seen = std::collections::HashSet::new();
            let mut current = r.chat_id;
            while let Some(&at) = by_chat_id.get(&current) {
                let parent = rows[at].parent_chat_id;
                if parent == -1 || !seen.insert(current) {
                    break;
                }
                if parent == current || !by_chat_id.contains_key(&parent) {
                    break;
                }
                path.push(current);
                current = parent;
            }
            for node in path {
                cache.insert(node, current);
            }
            cache.insert(r.chat_id, current);
            current
        })
        .collect()
}

/// One line's text parsed and checked as a row.
fn parse_text(ctx: Ctx<'_>, text: &str) -> Result<Row, LoadError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| LoadError::line(ctx.path, ctx.line, LoadErrorKind::Json(e.to_string())))?;
    let Value::Object(map) = value else {
        return Err(LoadError::line(
            ctx.path,
            ctx.line,
            LoadErrorKind::WrongType("each line to be a JSON object"),
        ));
    };
    parse_row(&mut Obj::new(ctx, "", map))
}

/// An integer field (any sign).
fn integer(obj: &mut Obj<'_>, key: &str) -> Result<Option<i64>, LoadError> {
    match obj.take(key) {
        None => Ok(None),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| obj.err(key, LoadErrorKind::WrongType("an integer"))),
    }
}

fn parse_row(obj: &mut Obj<'_>) -> Result<Row, LoadError> {
    obj.check_fields(FIELDS)?;
    let chat_id =
        integer(obj, "chat_id")?.ok_or_else(|| obj.err("chat_id", LoadErrorKind::Missing))?;
    let parent_chat_id = integer(obj, "parent_chat_id")?.unwrap_or(-1);
    let turn = integer(obj, "turn")?.unwrap_or(1);
    // AIPerf's `request_type`: any string, not the dataset type.
    obj.string("type")?;
    let seconds = match obj.take("timestamp") {
        None => return Err(obj.err("timestamp", LoadErrorKind::Missing)),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if s.is_finite() && s >= 0.0 => s,
            _ => {
                return Err(obj.err(
                    "timestamp",
                    LoadErrorKind::Invalid("must be a number of seconds ≥ 0".into()),
                ));
            }
        },
        Some(_) => return Err(obj.err("timestamp", LoadErrorKind::WrongType("a number"))),
    };
    let input_length = obj
        .positive("input_length")?
        .ok_or_else(|| obj.err("input_length", LoadErrorKind::Missing))?;
    // AIPerf's `Turn.max_tokens` is at least 1: a 0 fails its load too.
    let output_length = obj
        .positive("output_length")?
        .ok_or_else(|| obj.err("output_length", LoadErrorKind::Missing))?;
    let mut hash_ids = Vec::new();
    for (i, v) in obj
        .array("hash_ids")?
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        match v.as_i64() {
            Some(id) => hash_ids.push(id),
            None => {
                return Err(obj.err(
                    &format!("hash_ids[{i}]"),
                    LoadErrorKind::WrongType("an integer"),
                ));
            }
        }
    }
    Ok(Row {
        chat_id,
        parent_chat_id,
        turn,
        input_length,
        hash_ids,
        timed: Turn {
            // Seconds in the file, milliseconds in the turn (AIPerf: `timestamp * 1000.0`).
            timestamp_ms: Some(seconds * 1000.0),
            max_tokens: Some(output_length),
            ..Turn::default()
        },
    })
}

/// A row read again (the first pass checked it): its turn and its `input_length` and
/// `hash_ids`.
///
/// # Errors
/// The row no longer parses (the file changed since the first pass).
fn reread(
    ctx: Ctx<'_>,
    text: &str,
    _layout: &[u32],
) -> Result<(Turn, Option<Synthesized>), LoadError> {
    let row = parse_text(ctx, text)?;
    let mut turn = row.timed;
    turn.content = Content::Texts(Vec::new());
    Ok((turn, Some((row.input_length, row.hash_ids))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(chat_id: i64, parent_chat_id: i64) -> Kept {
        Kept {
            chat_id,
            parent_chat_id,
            turn: 1,
            timestamp_ms: 0.0,
            max_tokens: None,
            offset: 0,
            len: 0,
            line: 0,
        }
    }

    /// AIPerf's `find_root`: chains lead to their first request; a parent not in the file, a
    /// row that names itself, and a loop each stop the walk where it is.
    #[test]
    fn roots_follow_the_links_as_aiperf_walks_them() {
        let rows = [
            kept(1, -1),
            kept(2, 1),
            kept(3, 2),
            kept(7, 99), // parent not in the file: its own root
            kept(8, 8),  // names itself
            kept(10, 11),
            kept(11, 10), // a loop: the walk stops where it meets itself again
            kept(12, 7),  // leads to the orphan
        ];
        assert_eq!(roots(&rows), [1, 1, 1, 7, 8, 10, 10, 7]);
    }
}
