//! Hugging Face TEI rerank (`hf_tei_rankings`, `/rerank`; AIPerf's `hf_tei_rankings.py`).
//! Non-streaming; produces no tokens; the body carries no model.

use serde_json::{Map, Value};

use super::nim_rankings::query_and_passages;
use super::{Descriptor, data_if_listed, merge_extras};
use crate::endpoint::payload::{PayloadParams, TurnBody};
use crate::endpoint::response::ParsedResponse;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    metrics_title: "Ranking Metrics",
    ..Descriptor::new("/rerank", build, super::text_parts, parse)
};

/// `{"query","texts":[…]}` + extras.
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let (query, passages) = query_and_passages(parts.turn);
    let mut body = Map::new();
    body.insert("query".into(), Value::from(query));
    body.insert(
        "texts".into(),
        passages.iter().map(|p| Value::from(p.as_str())).collect(),
    );
    merge_extras(&mut body, params, parts.turn);
    body
}

/// A top-level non-empty list, or a non-empty `results` list.
fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    data_if_listed(bytes, stamp_ns, out, |v| match v {
        Value::Array(list) => Some(list),
        other => other.get("results")?.as_array(),
    });
}
