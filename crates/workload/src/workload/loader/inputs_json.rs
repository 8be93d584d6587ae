//! `inputs_json`: an `inputs.json` written by AIPerf or by ringperf,
//! `{"data": [{"session_id": "...", "payloads": [{...}, ...]}, ...]}`, replayed verbatim: each
//! session is a conversation, each payload a turn whose whole body is sent as it is. Session
//! ids must be unique. Default sampling: sequential. The file is one JSON document, read as a
//! stream (one session in memory at a time besides the dataset being built).

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use ringperf_wire::conversation::{Content, Conversation, Dataset, Sampling, Turn};

use super::document::{self, Problem, Shape};
use super::error::{LoadError, LoadErrorKind};

/// Loads an `inputs.json` file.
///
/// # Errors
/// Invalid JSON, a missing or mistyped `session_id` / `payloads`, an empty `payloads`, a
/// repeated `session_id`, an unknown key, or no session at all.
pub fn load(path: &Path) -> Result<Dataset, LoadError> {
    let mut conversations = Vec::new();
    let mut seen = HashSet::new();
    let n = document::for_each(path, Shape::Under("data"), |_, v| {
        let conv = session(v)?;
        if !seen.insert(conv.session_id.clone()) {
            return Err((
                ".session_id".into(),
                LoadErrorKind::Invalid(format!(
                    "{:?} is declared twice; each session_id must be unique",
                    conv.session_id
                )),
            ));
        }
        conversations.push(conv);
        Ok(())
    })?;
    if n == 0 {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    }
    Ok(Dataset {
        replay: true,
        conversations,
        default_sampling: Sampling::Sequential,
    })
}

fn session(v: Value) -> Result<Conversation, Problem> {
    let Value::Object(mut m) = v else {
        return Err((String::new(), LoadErrorKind::WrongType("a JSON object")));
    };
    if let Some(k) = m.keys().find(|k| *k != "session_id" && *k != "payloads") {
        return Err((format!(".{k}"), LoadErrorKind::UnknownField));
    }
    let session_id = match m.remove("session_id") {
        Some(Value::String(s)) => s,
        None | Some(Value::Null) => return Err((".session_id".into(), LoadErrorKind::Missing)),
        Some(_) => return Err((".session_id".into(), LoadErrorKind::WrongType("a string"))),
    };
    let payloads = match m.remove("payloads") {
        Some(Value::Array(a)) => a,
        None | Some(Value::Null) => return Err((".payloads".into(), LoadErrorKind::Missing)),
        Some(_) => return Err((".payloads".into(), LoadErrorKind::WrongType("a list"))),
    };
    if payloads.is_empty() {
        return Err((
            ".payloads".into(),
            LoadErrorKind::Invalid("must hold at least one payload".into()),
        ));
    }
    let mut turns = Vec::with_capacity(payloads.len());
    for (i, p) in payloads.into_iter().enumerate() {
        if !p.is_object() {
            return Err((
                format!(".payloads[{i}]"),
                LoadErrorKind::WrongType("a JSON object"),
            ));
        }
        turns.push(Turn {
            content: Content::Raw(p),
            role: Some("user".into()),
            ..Turn::default()
        });
    }
    Ok(Conversation {
        session_id,
        turns,
        ..Conversation::default()
    })
}
