//! Verbatim payloads (`raw`; AIPerf's `raw_endpoint.py`): each turn's body is sent as the
//! dataset wrote it (a `raw_payload` dataset), to the URL as given (no path is appended), and
//! the answer is read by AIPerf's auto-detection (`JMESPathResponseMixin` without a
//! `response_field`: embeddings, then rankings, then text). The body's own `stream` decides
//! whether the server streams; an SSE answer is read message by message.

use serde_json::{Map, Value};

use super::{Descriptor, truthy};
use crate::endpoint::payload::{PayloadParams, TurnBody};
use crate::endpoint::response::ParsedResponse;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    supports_streaming: true,
    produces_tokens: true,
    consumes_system_message: true,
    sse_done_is_text: true,
    media: crate::endpoint::MediaCaps::IMAGE_URL_PARTS,
    ..Descriptor::new("", build, super::text_parts, parse)
};

/// A turn that is not a verbatim body has nothing to send: `{}` (the loader of a `raw` run
/// gives every turn a verbatim body, which [`crate::endpoint::build_turn`] sends before asking
/// here).
fn build(_: &PayloadParams, _: &TurnBody<'_>) -> Map<String, Value> {
    Map::new()
}

/// One response object: a falsy or undecodable JSON value is its own text (`[DONE]` too); else
/// the value at the `response_field` path when one is given and it finds a truthy value that
/// converts (AIPerf's JMESPath mixin); else the auto-detected data.
pub(super) fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    if let Some(field) = out.response_field.clone()
        && let Ok(value) = serde_json::from_slice::<Value>(bytes)
        && let Some(found) = field.search(&value).filter(|v| truthy(v)).and_then(convert)
    {
        match found {
            Detected::Text(text) => out.add_text(stamp_ns, &text),
            Detected::Data => out.add_data(stamp_ns),
        }
        return;
    }
    match serde_json::from_slice::<Value>(bytes).ok().filter(truthy) {
        None => {
            let text = String::from_utf8_lossy(bytes);
            if !text.is_empty() {
                out.add_text(stamp_ns, &text);
            }
        }
        Some(value) => match detect(&value) {
            Some(Detected::Text(text)) => out.add_text(stamp_ns, &text),
            Some(Detected::Data) => out.add_data(stamp_ns),
            None => {}
        },
    }
}

/// What auto-detection found in a response object.
#[derive(Debug, PartialEq)]
pub(super) enum Detected {
    /// Non-empty text.
    Text(String),
    /// Embeddings or rankings (no text).
    Data,
}

/// Python's `isinstance(v, int | float)` (a bool is an int there).
fn is_number(v: &Value) -> bool {
    v.is_number() || v.is_boolean()
}

fn text(s: &str) -> Option<Detected> {
    (!s.is_empty()).then(|| Detected::Text(s.to_owned()))
}

/// AIPerf's `auto_detect_and_extract`: an object is tried for embeddings, then rankings, then
/// text; any other JSON value is converted by shape.
pub(super) fn detect(value: &Value) -> Option<Detected> {
    let Some(obj) = value.as_object() else {
        return convert(value);
    };
    // Embeddings: OpenAI `data` whose first item is an `embedding` object, or `embeddings` /
    // `embedding` lists.
    if let Some(Value::Array(data)) = obj.get("data")
        && let Some(Value::Object(first)) = data.first()
        && first.get("object").and_then(Value::as_str) == Some("embedding")
        && data.iter().any(|i| i.get("embedding").is_some())
    {
        return Some(Detected::Data);
    }
    for field in ["embeddings", "embedding"] {
        if let Some(Value::Array(list)) = obj.get(field)
            && let Some(first) = list.first()
            && (is_number(first) || first.is_array())
        {
            return Some(Detected::Data);
        }
    }
    // Rankings: any `rankings` / `results` list, even empty.
    if ["rankings", "results"]
        .iter()
        .any(|f| obj.get(*f).is_some_and(Value::is_array))
    {
        return Some(Detected::Data);
    }
    // Text: the first of these fields that is a string (empty: no text), or a non-empty list of
    // strings joined.
    for field in ["text", "content", "response", "output", "result"] {
        match obj.get(field) {
            Some(Value::String(s)) => return text(s),
            Some(Value::Array(items))
                if !items.is_empty() && items.iter().all(Value::is_string) =>
            {
                let joined: String = items.iter().filter_map(Value::as_str).collect();
                return text(&joined);
            }
            _ => {}
        }
    }
    // OpenAI shapes: `choices[0]` `text`, `message.content`, `delta.content`.
    let choice = obj.get("choices").and_then(Value::as_array)?.first()?;
    if let Some(t) = choice
        .get("text")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        return text(t);
    }
    ["message", "delta"].iter().find_map(|key| {
        let content = choice.get(*key)?.get("content")?.as_str()?;
        text(content)
    })
}

/// AIPerf's `convert_to_response_data`: a list of number lists or of numbers is embeddings, a
/// list of objects rankings, a non-empty string text.
pub(super) fn convert(value: &Value) -> Option<Detected> {
    match value {
        Value::Array(items) => match items.first()? {
            Value::Array(first) if first.first().is_some_and(is_number) => Some(Detected::Data),
            first if is_number(first) => Some(Detected::Data),
            Value::Object(_) => Some(Detected::Data),
            _ => None,
        },
        Value::String(s) => text(s),
        _ => None,
    }
}
