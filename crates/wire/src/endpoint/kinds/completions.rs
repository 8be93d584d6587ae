//! OpenAI (legacy) Completions (`completions`, `/v1/completions`; AIPerf's
//! `openai_completions.py`).

use serde_json::{Map, Value};

use super::{Descriptor, merge_extras, truthy, turn_texts};
use crate::endpoint::payload::{PayloadParams, TurnBody, ensure_include_usage};
use crate::endpoint::response::ParsedResponse;
use crate::endpoint::wire::Body;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    supports_streaming: true,
    produces_tokens: true,
    ..Descriptor::new("/v1/completions", build, input_texts, parse)
};

/// `{"prompt","model","stream"}` (one text as a string, several as a list) + `max_tokens` when
/// it is `Some` and non-zero, the extras, then `stream_options` when the merged body streams.
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let turn = parts.turn;
    let mut body = Map::new();
    let texts = completion_texts(turn);
    let prompt = match texts.as_slice() {
        [one] => Value::from(one.as_str()),
        many => Value::Array(many.iter().map(|t| Value::from(t.as_str())).collect()),
    };
    body.insert("prompt".into(), prompt);
    body.insert("model".into(), Value::from(params.model_for(parts.turn)));
    body.insert("stream".into(), Value::Bool(params.streaming));
    if let Some(n) = turn.max_tokens.filter(|&n| n > 0) {
        body.insert("max_tokens".into(), Value::from(n));
    }
    merge_extras(&mut body, params, turn);
    if body.get("stream").is_some_and(truthy) {
        ensure_include_usage(&mut body, false);
    }
    body
}

/// A completions prompt keeps empty texts (AIPerf's completions endpoint does not filter them).
fn completion_texts(turn: &crate::conversation::Turn) -> Vec<String> {
    match &turn.content {
        crate::conversation::Content::Texts(texts) => texts.clone(),
        crate::conversation::Content::Messages(list) => list
            .iter()
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .map(str::to_string)
            .collect(),
        _ => turn_texts(turn),
    }
}

/// `prompt`, a string or a list of strings.
fn input_texts<'a>(value: &'a Value, texts: &mut Vec<&'a str>) {
    match value.get("prompt") {
        Some(Value::String(s)) => texts.push(s),
        Some(Value::Array(items)) => texts.extend(items.iter().filter_map(Value::as_str)),
        _ => {}
    }
}

/// `object` `completion` / `text_completion` → `choices[0].text`.
fn parse(json: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    let Ok(mut body) = sonic_rs::from_slice::<Body<'_>>(json) else {
        return;
    };
    out.spec_decode_payload(body.metrics.speculative_decoding.take());
    if body.usage.present {
        out.usage = Some(body.usage.normalize());
    }
    let object = body.object.0.as_deref().unwrap_or("");
    let Some(choice) = body.choices.0 else {
        return;
    };
    if let ("completion" | "text_completion", Some(text)) = (object, choice.text.non_empty()) {
        out.add_text(stamp_ns, text);
    }
}
