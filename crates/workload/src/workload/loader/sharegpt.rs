//! `--public-dataset sharegpt` from a local copy: ShareGPT V3's JSON shape, a list of
//! `{"id", "conversations": [{"from": "human"|"gpt", "value": "..."}, ...]}`, read as a stream.
//!
//! As AIPerf: each adjacent human → gpt pair is a turn (prompt = the human text, `max_tokens` =
//! the token count of the gpt reply); without `from` roles, the first two values are the one
//! pair. An entry is kept only if every pair passes vLLM's length filter (prompt 4..=1024
//! tokens, reply ≥ 4 tokens unless `--osl` is given, prompt + reply ≤ 2048); entries with fewer
//! than two messages are skipped. Default sampling: sequential. Nothing is ever downloaded.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::workload::Tokenizer;
use ringperf_wire::conversation::{Conversation, Dataset, Sampling, Turn};

use super::document::{self, Problem, Shape};
use super::error::{LoadError, LoadErrorKind};
use super::session::SessionIds;

/// The file name AIPerf downloads and caches.
pub const FILE_NAME: &str = "ShareGPT_V3_unfiltered_cleaned_split.json";

/// Where AIPerf downloads it from.
pub const URL: &str = "https://huggingface.co/datasets/anon8231489123/ShareGPT_Vicuna_unfiltered/resolve/main/ShareGPT_V3_unfiltered_cleaned_split.json";

/// AIPerf's dataset cache folder, relative to the working directory.
pub const CACHE_DIR: &str = ".cache/aiperf/datasets";

const MIN_SEQ_TOKENS: usize = 4;
const MAX_PROMPT_TOKENS: usize = 1024;
const MAX_TOTAL_TOKENS: usize = 2048;

/// The places looked at, in order: `input_file` when given (and then only it), else AIPerf's
/// cache `./.cache/aiperf/datasets/` and the same under `$HOME`.
pub fn candidates(input_file: Option<&Path>) -> Vec<PathBuf> {
    if let Some(p) = input_file {
        return vec![p.to_path_buf()];
    }
    let mut v = vec![Path::new(CACHE_DIR).join(FILE_NAME)];
    if let Some(home) = std::env::var_os("HOME") {
        v.push(Path::new(&home).join(CACHE_DIR).join(FILE_NAME));
    }
    v
}

/// The first of [`candidates`] that is a file.
///
/// # Errors
/// [`LoadErrorKind::NotFound`] listing every place looked at and how to get the file.
pub fn locate(input_file: Option<&Path>) -> Result<PathBuf, LoadError> {
    let looked = candidates(input_file);
    if let Some(found) = looked.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    Err(LoadError::file(
        Path::new("sharegpt"),
        LoadErrorKind::NotFound {
            hint: format!(
                "ringperf never downloads; fetch it once with `mkdir -p {CACHE_DIR} && curl -L -o \
                 {CACHE_DIR}/{FILE_NAME} {URL}` (AIPerf's cache, shared with it), or pass \
                 --input-file PATH"
            ),
            looked,
        },
    ))
}

/// Loads ShareGPT from `path`. `osl_given` (`--osl` set) lifts the minimum reply length.
///
/// # Errors
/// Invalid JSON, an entry that is not an object or whose `conversations` is not a list, or no
/// entry passing the filter.
pub fn load(
    path: &Path,
    tokenizer: &Tokenizer,
    ids: &mut SessionIds,
    osl_given: bool,
) -> Result<Dataset, LoadError> {
    let mut conversations = Vec::new();
    let total = document::for_each(path, Shape::List, |_, entry| {
        if let Some(turns) = entry_turns(&entry, tokenizer, osl_given)? {
            conversations.push(Conversation {
                session_id: ids.next_id(),
                turns,
                ..Conversation::default()
            });
        }
        Ok(())
    })?;
    if total == 0 {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    }
    if conversations.is_empty() {
        return Err(LoadError::file(
            path,
            LoadErrorKind::Invalid(format!(
                "none of its {total} entries passes ShareGPT's length filter (prompt \
                 {MIN_SEQ_TOKENS}..={MAX_PROMPT_TOKENS} tokens, reply ≥ {MIN_SEQ_TOKENS}, both ≤ \
                 {MAX_TOTAL_TOKENS})"
            )),
        ));
    }
    Ok(Dataset {
        replay: false,
        conversations,
        default_sampling: Sampling::Sequential,
    })
}

/// The turns of one entry, or `None` when the entry is skipped.
fn entry_turns(
    entry: &Value,
    tokenizer: &Tokenizer,
    osl_given: bool,
) -> Result<Option<Vec<Turn>>, Problem> {
    let Some(obj) = entry.as_object() else {
        return Err((String::new(), LoadErrorKind::WrongType("a JSON object")));
    };
    let messages = match obj.get("conversations") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(a)) => a,
        Some(_) => return Err((".conversations".into(), LoadErrorKind::WrongType("a list"))),
    };
    let mut turns = Vec::new();
    for (prompt, reply) in pairs(messages) {
        let prompt_len = tokenizer.count(prompt);
        let reply_len = tokenizer.count(reply);
        let valid = (MIN_SEQ_TOKENS..=MAX_PROMPT_TOKENS).contains(&prompt_len)
            && (osl_given || reply_len >= MIN_SEQ_TOKENS)
            && prompt_len + reply_len <= MAX_TOTAL_TOKENS;
        if !valid {
            return Ok(None);
        }
        turns.push(Turn {
            max_tokens: Some(u32::try_from(reply_len).unwrap_or(u32::MAX)),
            ..Turn::text(prompt)
        });
    }
    Ok((!turns.is_empty()).then_some(turns))
}

type Message = serde_json::Map<String, Value>;

fn from(m: &Message) -> Option<&str> {
    m.get("from").and_then(Value::as_str)
}

/// A message's non-empty `value`.
fn value(m: &Message) -> Option<&str> {
    m.get("value")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// AIPerf's prompt / reply pairing of one entry's messages.
fn pairs(messages: &[Value]) -> Vec<(&str, &str)> {
    let dicts: Vec<&Message> = messages.iter().filter_map(Value::as_object).collect();
    if dicts.len() < 2 {
        return Vec::new();
    }
    let uses_roles = dicts
        .iter()
        .any(|m| matches!(from(m), Some("human" | "gpt")));
    if !uses_roles {
        return match (value(dicts[0]), value(dicts[1])) {
            (Some(p), Some(c)) => vec![(p, c)],
            _ => Vec::new(),
        };
    }
    let roles: Vec<_> = dicts
        .into_iter()
        .filter(|m| matches!(from(m), Some("human" | "gpt")))
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < roles.len() {
        if from(roles[i]) == Some("human") && from(roles[i + 1]) == Some("gpt") {
            if let (Some(p), Some(c)) = (value(roles[i]), value(roles[i + 1])) {
                out.push((p, c));
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    out
}
