//! Cohere Rerank (`cohere_rankings`, `/v2/rerank`; AIPerf's `cohere_rankings.py`).
//! Non-streaming; produces no tokens.

use serde_json::{Map, Value};

use super::nim_rankings::query_and_passages;
use super::{Descriptor, data_if_listed, merge_extras};
use crate::endpoint::payload::{PayloadParams, TurnBody};
use crate::endpoint::response::ParsedResponse;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    metrics_title: "Ranking Metrics",
    ..Descriptor::new("/v2/rerank", build, super::text_parts, parse)
};

/// `{"model","query","documents":[…]}` + extras.
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let (query, passages) = query_and_passages(parts.turn);
    let mut body = Map::new();
    body.insert("model".into(), Value::from(params.model_for(parts.turn)));
    body.insert("query".into(), Value::from(query));
    body.insert(
        "documents".into(),
        passages.iter().map(|p| Value::from(p.as_str())).collect(),
    );
    merge_extras(&mut body, params, parts.turn);
    body
}

/// `results`, a non-empty list (each `{index, relevance_score}`).
fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    data_if_listed(bytes, stamp_ns, out, |v| v.get("results")?.as_array());
}
