//! `raw_payload`: request bodies sent verbatim. A file: each line is one body (a JSON object
//! with a `messages` list) and one single-turn conversation. A directory: each `*.jsonl` file
//! (in name order) is one conversation whose lines are its turns; files without a line are
//! skipped. Session ids are generated. Default sampling: sequential. Bodies are not inspected
//! beyond their `messages` list: what they say is sent as it is.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use ringperf_wire::conversation::{Content, Conversation, Dataset, Sampling, Turn};

use super::error::{LoadError, LoadErrorKind};
use super::fields::Ctx;
use super::lines::JsonLines;
use super::session::SessionIds;

/// Loads a `raw_payload` file or directory.
///
/// # Errors
/// A line that is not a JSON object with a `messages` list; no body at all.
pub fn load(path: &Path, ids: &mut SessionIds) -> Result<Dataset, LoadError> {
    let mut conversations = Vec::new();
    if path.is_dir() {
        for file in jsonl_files(path)? {
            let turns = bodies(&file)?;
            if !turns.is_empty() {
                conversations.push(Conversation {
                    session_id: ids.next_id(),
                    turns,
                    ..Conversation::default()
                });
            }
        }
    } else {
        for turn in bodies(path)? {
            conversations.push(Conversation {
                session_id: ids.next_id(),
                turns: vec![turn],
                ..Conversation::default()
            });
        }
    }
    if conversations.is_empty() {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    }
    Ok(Dataset {
        replay: true,
        conversations,
        default_sampling: Sampling::Sequential,
    })
}

/// The `*.jsonl` files of `dir`, sorted by name.
fn jsonl_files(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let io = |e: std::io::Error| LoadError::file(dir, LoadErrorKind::Io(e.to_string()));
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let p = entry.map_err(io)?.path();
        if p.is_file() && p.extension().is_some_and(|e| e == "jsonl") {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}

/// One turn per line of `file`.
fn bodies(file: &Path) -> Result<Vec<Turn>, LoadError> {
    let mut lines = JsonLines::open(file)?;
    let mut turns = Vec::new();
    while let Some((line, map)) = lines.next_object()? {
        check(&map, Ctx { path: file, line })?;
        turns.push(Turn {
            content: Content::Raw(Value::Object(map)),
            role: Some("user".into()),
            ..Turn::default()
        });
    }
    Ok(turns)
}

/// AIPerf's one rule for a raw body: it carries a `messages` list.
fn check(map: &Map<String, Value>, ctx: Ctx<'_>) -> Result<(), LoadError> {
    match map.get("messages") {
        Some(Value::Array(_)) => Ok(()),
        None => Err(ctx.err("messages", LoadErrorKind::Missing)),
        Some(_) => Err(ctx.err("messages", LoadErrorKind::WrongType("a list"))),
    }
}
