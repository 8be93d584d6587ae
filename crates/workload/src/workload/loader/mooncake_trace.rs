//! `mooncake_trace`: one request per line (AIPerf's `MooncakeTrace`): exactly one input form
//! among `input_length` (a synthetic prompt, built from `hash_ids` blocks when given),
//! `text_input` (the prompt itself), `messages` (chat messages sent as they are, with optional
//! `tools`) and `payload` (a whole request body sent verbatim); optional `timestamp` (ms),
//! `delay` (ms), `session_id`, `output_length` (→ `max_tokens`), `extra`. Rows that share a
//! `session_id` are one conversation, in file order; a session uses either synthesized
//! prompts, or `messages` only, or `payload` only. Timestamps never go backwards. Default
//! sampling: sequential.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::workload::{Prepared, PreparedConversation, PreparedTurn};
use ringperf_wire::conversation::{Content, Sampling, Turn};

use super::deferred::{BlockCheck, DeferredPrompts, DeferredRow, IdHash, TraceIndex};
use super::error::{LoadError, LoadErrorKind};
use super::fields::{Ctx, Obj};
use super::lines::{JsonLines, file_hash};
use super::session::{SessionIds, forward_in_time};

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
    // Written on a session's first row by `synthesize agentic-code` (AIPerf's generator, whose
    // loader takes any extra key); accepted and not read.
    "group_id",
    "is_restart",
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
/// form, timestamps, session rules, `hash_ids` against the block size), no prompt built and
/// nothing of a row kept but what the schedule needs (its conversation's session id, its
/// timestamp, delay and `output_length`) and where it is in the file ([`DeferredRow`], 32
/// bytes): its request is built from the file again, later ([`DeferredPrompts::build`]).
///
/// A row of the usual shape (`input_length`, `hash_ids`, `output_length`, `timestamp`,
/// `delay`, `session_id`) is read by a typed, borrowing parse; any other row, or one that
/// parse refuses, by the general one, which names the line and field of the first fault.
///
/// `hash_path` is the file whose content hash scopes the `hash_ids` blocks (`path` itself,
/// unless `path` is a reshaped copy of it).
///
/// # Errors
/// The first bad line, as a [`LoadError`] naming the line and the field.
pub fn scan(
    path: &Path,
    hash_path: &Path,
    ids: &mut SessionIds,
    block_size: usize,
    seed: u64,
) -> Result<TraceIndex, LoadError> {
    let owned = hash_path.to_path_buf();
    let hashing = std::thread::Builder::new()
        .name("ringperf-trace-hash".into())
        .spawn(move || file_hash(&owned))
        .map_err(|e| LoadError::file(path, LoadErrorKind::Io(e.to_string())))?;
    let mut lines = JsonLines::open(path)?.unhashed();
    let mut sessions = Skeleton::default();
    let mut last_timestamp: Option<f64> = None;
    let mut deferred = DeferredPrompts::new(path, block_size, seed, reread);
    let mut blocks = BlockCheck::default();
    while let Some((line, offset, text)) = lines.next_line()? {
        let ctx = Ctx { path, line };
        let len = super::lines::line_len(path, line, text)?;
        let facts = match plain(text) {
            Some(facts) => facts,
            None => general(ctx, text)?,
        };
        if let Some(this_ms) = facts.timestamp_ms {
            forward_in_time(last_timestamp, this_ms, ctx)?;
            last_timestamp = Some(this_ms);
        }
        let (at, turn) = sessions.add(ctx, facts.session_id, facts.class, ids)?;
        if let Some(n) = facts.length {
            ROW_IDS
                .with_borrow(|hash_ids| blocks.check(n as usize, block_size, hash_ids))
                .map_err(|why| ctx.err("hash_ids", LoadErrorKind::Invalid(why.to_string())))?;
        }
        sessions.conversations[at].turns.push(PreparedTurn {
            max_tokens: facts.max_tokens,
            timestamp_ms: facts.timestamp_ms,
            delay_ms: facts.delay_ms,
            ..PreparedTurn::default()
        });
        let row = DeferredRow::new(at as u32, turn, facts.length.is_some(), offset, len, line);
        deferred.push(row);
    }
    if sessions.conversations.is_empty() {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    }
    let file_hash = hashing.join().map_err(|_| {
        LoadError::file(
            path,
            LoadErrorKind::Io("the hashing thread panicked".into()),
        )
    })??;
    deferred.seal(file_hash);
    // Kept for the whole run: no room to grow.
    sessions.conversations.shrink_to_fit();
    let history = sessions
        .conversations
        .iter()
        .zip(&sessions.first)
        .any(|(c, &(_, (class, _)))| c.turns.len() > 1 && class != PAYLOAD_CLASS);
    Ok(TraceIndex {
        skeleton: Prepared {
            conversations: sessions.conversations,
            default_sampling: Sampling::Sequential,
            replay: true,
            ..Prepared::default()
        },
        rows: deferred,
        history,
    })
}

/// What the first pass needs of one row.
#[derive(Debug, PartialEq)]
struct Facts<'a> {
    session_id: Option<Cow<'a, str>>,
    class: (u8, &'static str),
    timestamp_ms: Option<f64>,
    delay_ms: Option<f64>,
    max_tokens: Option<u32>,
    /// `input_length` of a synthesized prompt (its `hash_ids` are left in [`ROW_IDS`]).
    length: Option<u32>,
}

thread_local! {
    /// The `hash_ids` of the row the first pass just read: one buffer for every row, not a
    /// vector each.
    static ROW_IDS: std::cell::RefCell<Vec<i64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A row's `hash_ids`, read into [`ROW_IDS`].
struct RowIds;

impl<'de> Deserialize<'de> for RowIds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(RowIds)
    }
}

impl<'de> serde::de::Visitor<'de> for RowIds {
    type Value = RowIds;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of integers")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<RowIds, A::Error> {
        ROW_IDS.with_borrow_mut(|ids| {
            while let Some(id) = seq.next_element::<i64>()? {
                ids.push(id);
            }
            Ok(RowIds)
        })
    }
}

/// The usual row, read without a map: only these fields, each of its plain type. `null`
/// stands for an absent optional field, as in the general parse.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainRow<'a> {
    #[serde(rename = "type", default, borrow)]
    type_tag: Option<&'a str>,
    input_length: u32,
    #[serde(default)]
    output_length: Option<u32>,
    /// Read into [`ROW_IDS`].
    #[serde(rename = "hash_ids", default)]
    _hash_ids: Option<RowIds>,
    #[serde(default)]
    timestamp: Option<f64>,
    #[serde(default)]
    delay: Option<f64>,
    #[serde(default, borrow)]
    session_id: Option<&'a str>,
}

/// `text` as a usual row that the general parse accepts as it is; `None` for any other row
/// (the general parse then reads it, and names the fault if there is one).
fn plain(text: &str) -> Option<Facts<'_>> {
    ROW_IDS.with_borrow_mut(Vec::clear);
    let row: PlainRow<'_> = serde_json::from_str(text).ok()?;
    let millis_ok = |v: Option<f64>| v.is_none_or(|x| x.is_finite() && x >= 0.0);
    let fine = row.type_tag.is_none_or(|t| t == "mooncake_trace")
        && row.input_length > 0
        && millis_ok(row.timestamp)
        && millis_ok(row.delay);
    fine.then(|| Facts {
        session_id: row.session_id.map(Cow::Borrowed),
        class: (0, "input_length"),
        timestamp_ms: row.timestamp,
        delay_ms: row.delay,
        max_tokens: row.output_length,
        length: Some(row.input_length),
    })
}

/// The general parse of a row, for the first pass.
fn general(ctx: Ctx<'_>, text: &str) -> Result<Facts<'static>, LoadError> {
    let (session_id, row) = parse_text(ctx, text)?;
    let class = row.input.class();
    let length = match row.input {
        Input::Length { n, hash_ids } => {
            ROW_IDS.set(hash_ids);
            Some(n)
        }
        _ => None,
    };
    Ok(Facts {
        session_id: session_id.map(Cow::Owned),
        class,
        timestamp_ms: row.turn.timestamp_ms,
        delay_ms: row.turn.delay_ms,
        max_tokens: row.turn.max_tokens,
        length,
    })
}

/// One line checked as a row on its own: its JSON, fields, types and input form, not the rules
/// between rows (sessions, timestamps, blocks). `ringperf validate --target mooncake-trace`.
///
/// # Errors
/// The row's first fault, naming the line and the field.
pub fn check_row(path: &Path, line: u64, text: &str) -> Result<(), LoadError> {
    parse_text(Ctx { path, line }, text).map(|_| ())
}

/// One line's text parsed and checked as a row.
fn parse_text(ctx: Ctx<'_>, text: &str) -> Result<(Option<String>, Row), LoadError> {
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

/// A synthesized prompt's `input_length` and `hash_ids`.
pub(super) type Synthesized = (u32, Vec<i64>);

/// A row read again (the first pass checked it): its turn, and for a synthesized prompt its
/// `input_length` and `hash_ids` (the turn's text is then left empty).
///
/// # Errors
/// The row no longer parses (the file changed since the first pass).
pub(super) fn reread(
    ctx: Ctx<'_>,
    text: &str,
    _layout: &[u32],
) -> Result<(Turn, Option<Synthesized>), LoadError> {
    let (_, Row { input, mut turn }) = parse_text(ctx, text)?;
    let mut length = None;
    turn.content = match input {
        Input::Length { n, hash_ids } => {
            length = Some((n, hash_ids));
            Content::Texts(Vec::new())
        }
        Input::Text(t) => Content::Texts(vec![t]),
        Input::Messages(m) => Content::Messages(m),
        Input::Payload(p) => Content::Raw(Value::Object(p)),
    };
    Ok((turn, length))
}

/// The class of a `payload` session ([`Input::class`]): its turns are sent verbatim.
const PAYLOAD_CLASS: u8 = 2;

/// The skeleton's conversations keyed by session id, in order of first appearance
/// ([`super::session::Sessions`] without the turns' contents). Ids drawn for rows without one
/// are kept out of the map of given ids (most rows of a large trace have none): the n-th
/// sequential id is found by its number, a random one by its 128 bits; a given id that spells
/// a drawn one joins its conversation, and a drawn id that equals a given one joins that
/// one, as with one map of every id.
#[derive(Default)]
struct Skeleton {
    given: HashMap<String, usize, IdHash>,
    /// Conversation of each sequential id drawn (`session_{n:06}`), by `n`.
    sequential: Vec<usize>,
    /// Conversation of each random id drawn, by its bits.
    random: HashMap<u128, usize, IdHash>,
    conversations: Vec<PreparedConversation>,
    /// Per conversation: the line and class of its first row.
    first: Vec<(u64, (u8, &'static str))>,
}

impl Skeleton {
    /// The conversation of a row of `class` and its turn index; a new one at the end if `id`
    /// is new (`None` draws a fresh id).
    ///
    /// # Errors
    /// The conversation's first row is of another class.
    fn add(
        &mut self,
        ctx: Ctx<'_>,
        id: Option<Cow<'_, str>>,
        class: (u8, &'static str),
        ids: &mut SessionIds,
    ) -> Result<(usize, u32), LoadError> {
        let at = match id {
            Some(id) => match self
                .given
                .get(id.as_ref())
                .copied()
                .or_else(|| self.drawn(&id))
            {
                Some(at) => at,
                None => {
                    let at = self.open(id.to_string(), ctx.line, class);
                    self.given.insert(id.into_owned(), at);
                    at
                }
            },
            None => {
                let id = ids.next_id();
                let at = match self.given.get(id.as_str()) {
                    Some(&at) => at,
                    None => self.open(id.clone(), ctx.line, class),
                };
                match ids {
                    SessionIds::Sequential(_) => self.sequential.push(at),
                    SessionIds::Random => {
                        if let Ok(u) = uuid::Uuid::parse_str(&id) {
                            self.random.insert(u.as_u128(), at);
                        }
                    }
                }
                at
            }
        };
        let (first_line, (first_class, first_name)) = self.first[at];
        let (this_class, name) = class;
        if this_class != first_class {
            return Err(ctx.err(
                name,
                LoadErrorKind::Invalid(format!(
                    "session {:?} mixes \"{name}\" with \"{first_name}\" (line {first_line}); a \
                     session uses synthesized prompts, or \"messages\" only, or \"payload\" only",
                    self.conversations[at].session_id
                )),
            ));
        }
        let turns = &mut self.conversations[at].turns;
        // Grown by doubling from one: most conversations of a trace have a single turn.
        if turns.len() == turns.capacity() {
            turns.reserve_exact(turns.len().max(1));
        }
        Ok((at, turns.len() as u32))
    }

    /// The conversation of a drawn id that `id` spells exactly.
    fn drawn(&self, id: &str) -> Option<usize> {
        if let Some(digits) = id.strip_prefix("session_") {
            let n: usize = digits.parse().ok()?;
            let at = *self.sequential.get(n)?;
            return (format!("session_{n:06}") == id).then_some(at);
        }
        let u = uuid::Uuid::try_parse(id).ok()?;
        let at = *self.random.get(&u.as_u128())?;
        (u.to_string() == id).then_some(at)
    }

    /// A new conversation.
    fn open(&mut self, session_id: String, line: u64, class: (u8, &'static str)) -> usize {
        self.conversations.push(PreparedConversation {
            session_id,
            turns: Vec::with_capacity(1),
            ..PreparedConversation::default()
        });
        self.first.push((line, class));
        self.conversations.len() - 1
    }
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
pub(super) fn check_messages(obj: &Obj<'_>, messages: &[Value]) -> Result<(), LoadError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx<'static> {
        Ctx {
            path: Path::new("t.jsonl"),
            line: 7,
        }
    }

    /// The typed parse takes a row only when the general parse accepts it, and reads the same
    /// facts from it; every other row is left to the general parse (which names the fault).
    #[test]
    fn the_plain_parse_agrees_with_the_general_one() {
        let rows = [
            r#"{"input_length": 5}"#,
            r#"{"timestamp": 12, "input_length": 600, "output_length": 3, "hash_ids": [1, -2]}"#,
            r#"{"timestamp": 12.5, "delay": 0, "input_length": 1, "hash_ids": []}"#,
            r#"{"type": "mooncake_trace", "input_length": 9, "session_id": "a"}"#,
            r#"{"input_length": 9, "session_id": "a\u0031"}"#,
            r#"{"input_length": 9, "output_length": null, "hash_ids": null, "timestamp": null}"#,
            r#"{"input_length": 9, "output_length": 0}"#,
            r#"{"input_length": 9, "timestamp": 1e3}"#,
            // Each refused by one of the parses or both.
            r#"{"type": "single_turn", "input_length": 9}"#,
            r#"{"input_length": 0}"#,
            r#"{"input_length": 5.0}"#,
            r#"{"input_length": -5}"#,
            r#"{"input_length": 4294967296}"#,
            r#"{"input_length": null}"#,
            r#"{"input_length": 9, "output_length": "many"}"#,
            r#"{"input_length": 9, "output_length": 2.5}"#,
            r#"{"input_length": 9, "hash_ids": [1.5]}"#,
            r#"{"input_length": 9, "hash_ids": [9223372036854775808]}"#,
            r#"{"input_length": 9, "hash_ids": 3}"#,
            r#"{"input_length": 9, "timestamp": -1}"#,
            r#"{"input_length": 9, "delay": "soon"}"#,
            r#"{"input_length": 9, "session_id": 4}"#,
            r#"{"input_length": 9, "input_lenght": 9}"#,
            r#"{"input_length": 9, "image": "x.png"}"#,
            r#"{"input_length": 9, "extra": {"a": 1}}"#,
            r#"{"input_length": 9, "text_input": "hi"}"#,
            r#"{"text_input": "hi", "timestamp": 3}"#,
            r#"{"input_length": 9, "input_length": 10}"#,
            r#"{"input_length": 9} x"#,
            r#"[1]"#,
        ];
        let mut taken = 0;
        for text in rows {
            let general = general(ctx(), text);
            let general_ids = ROW_IDS.take();
            match plain(text) {
                Some(facts) => {
                    taken += 1;
                    assert_eq!(Ok(facts), general, "{text}");
                    assert_eq!(ROW_IDS.take(), general_ids, "{text}");
                }
                None => {
                    // Left to the general parse: a row it refuses, or one of another shape.
                    let shape = text.contains("text_input")
                        || text.contains("extra")
                        || text.contains("\\u")
                        || text.matches("input_length").count() > 1;
                    assert!(
                        general.is_err() || shape,
                        "{text} left to the general parse"
                    );
                }
            }
        }
        assert_eq!(taken, 7, "the usual rows are taken by the typed parse");
    }

    fn write(dir: &Path, lines: &[String]) -> std::path::PathBuf {
        let path = dir.join("t.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    }

    /// A row late in a long trace that only the general parse reads still fails the first
    /// pass with its line and field named; a session id written with an escape joins the
    /// session spelled plainly.
    #[test]
    fn a_late_bad_row_is_named_and_escaped_ids_join_their_session() {
        let dir = tempfile::tempdir().unwrap();
        let mut lines: Vec<String> = (0..3000)
            .map(|i| format!(r#"{{"timestamp": {i}, "input_length": 20, "hash_ids": [1, 2]}}"#))
            .collect();
        lines.push(r#"{"timestamp": 3000, "input_length": 20, "output_length": "many"}"#.into());
        let path = write(dir.path(), &lines);
        let err = scan(&path, &path, &mut SessionIds::new(true), 16, 1).unwrap_err();
        assert_eq!(
            (err.line, err.field.as_deref()),
            (Some(3001), Some("output_length"))
        );
        lines.pop();
        lines.push(r#"{"timestamp": 3000, "input_length": 9, "hash_ids": [1]}"#.into());
        let path = write(dir.path(), &lines);
        let err = scan(&path, &path, &mut SessionIds::new(true), 16, 1).unwrap_err();
        assert_eq!(
            (err.line, err.field.as_deref()),
            (Some(3001), Some("hash_ids"))
        );
        let lines = [
            r#"{"timestamp": 1, "input_length": 5, "session_id": "s1"}"#.to_string(),
            r#"{"timestamp": 2, "input_length": 6, "session_id": "s\u0031"}"#.into(),
            r#"{"timestamp": 3, "input_length": 7}"#.into(),
        ];
        let path = write(dir.path(), &lines);
        let index = scan(&path, &path, &mut SessionIds::new(true), 16, 1).unwrap();
        let sessions: Vec<(&str, usize)> = index
            .skeleton
            .conversations
            .iter()
            .map(|c| (c.session_id.as_str(), c.turns.len()))
            .collect();
        assert_eq!(sessions, [("s1", 2), ("session_000000", 1)]);
        assert!(index.history, "a session of two synthesized turns");
    }

    /// Rows' session ids land in the conversations [`super::super::session::Sessions`] (one
    /// map of every id, the other loaders' grouping) gives them, drawn ids included: a given
    /// id that spells an id drawn before joins it, and an id drawn that equals a given one
    /// joins that.
    #[test]
    fn drawn_and_given_ids_group_as_one_map_does() {
        let rows: &[Option<&str>] = &[
            None,
            Some("session_000000"),
            Some("session_000003"),
            None,
            Some("a"),
            None,
            None,
            Some("session_3"),
            Some("session_000001"),
            None,
            Some("a"),
            Some("session_0000001"),
            Some("session_+00002"),
        ];
        let mut skeleton = Skeleton::default();
        let mut sessions = super::super::session::Sessions::default();
        let (mut a, mut b) = (SessionIds::new(true), SessionIds::new(true));
        for (i, id) in rows.iter().enumerate() {
            let ctx = Ctx {
                path: Path::new("t.jsonl"),
                line: i as u64 + 1,
            };
            let (at, _) = skeleton
                .add(ctx, id.map(Cow::Borrowed), (0, "input_length"), &mut a)
                .unwrap();
            skeleton.conversations[at]
                .turns
                .push(PreparedTurn::default());
            let want = sessions.index(id.map(str::to_string), &mut b);
            assert_eq!(at, want, "row {i} ({id:?})");
        }
        let names = |c: &[_]| -> Vec<String> {
            c.iter()
                .map(|c: &PreparedConversation| c.session_id.clone())
                .collect()
        };
        let theirs: Vec<String> = sessions
            .conversations
            .iter()
            .map(|c| c.session_id.clone())
            .collect();
        assert_eq!(names(&skeleton.conversations), theirs);
        // A random id drawn, then given by a later row, is the same conversation.
        let mut skeleton = Skeleton::default();
        let mut random = SessionIds::new(false);
        let ctx = ctx();
        let (first, _) = skeleton
            .add(ctx, None, (0, "input_length"), &mut random)
            .unwrap();
        let id = skeleton.conversations[first].session_id.clone();
        let (again, _) = skeleton
            .add(ctx, Some(Cow::Owned(id)), (0, "input_length"), &mut random)
            .unwrap();
        let (other, _) = skeleton
            .add(ctx, None, (0, "input_length"), &mut random)
            .unwrap();
        assert_eq!((first, again, other), (0, 0, 1));
    }

    /// `--ignore-trace-delays` holds for the turns read again too (a template endpoint puts
    /// a turn's timestamp and delay in its body), and for the skeleton.
    #[test]
    fn rows_read_again_lose_their_delays_when_told() {
        use crate::workload::loader::{DatasetKind, LoadSpec, Loaded, Source, load_deferred};
        let dir = tempfile::tempdir().unwrap();
        let lines = [
            r#"{"timestamp": 5, "input_length": 5, "session_id": "s"}"#.to_string(),
            r#"{"delay": 7, "input_length": 6, "session_id": "s"}"#.into(),
        ];
        let path = write(dir.path(), &lines);
        let tokenizer = crate::workload::Tokenizer::builtin();
        for ignore in [false, true] {
            let spec = LoadSpec {
                source: Source::File {
                    path: path.clone(),
                    kind: Some(DatasetKind::MooncakeTrace),
                },
                seed: 1,
                seeded: true,
                entries: 1,
                block_size: Some(4),
                ignore_trace_delays: ignore,
                system_message: false,
                osl_given: false,
                hash_path: None,
                uuid_and_strip: false,
                pool_batch: Default::default(),
                weka: Default::default(),
                baseten: Default::default(),
            };
            let Ok(Loaded::Trace(index)) = load_deferred(&spec, &tokenizer) else {
                panic!("a trace's first pass");
            };
            let rows = &index.rows;
            let mut reader = rows.reader().unwrap();
            let mut prompts = rows.builder(&tokenizer);
            let mut read = Vec::new();
            for (row, kept) in rows
                .rows()
                .iter()
                .zip(&index.skeleton.conversations[0].turns)
            {
                let turn = rows.build(&mut reader, &mut prompts, row).unwrap();
                assert_eq!(
                    (turn.timestamp_ms, turn.delay_ms),
                    (kept.timestamp_ms, kept.delay_ms)
                );
                read.push((turn.timestamp_ms, turn.delay_ms));
            }
            let want = if ignore {
                vec![(None, None), (None, None)]
            } else {
                vec![(Some(5.0), None), (None, Some(7.0))]
            };
            assert_eq!(read, want, "ignore {ignore}");
        }
    }
}
