//! NVIDIA NIM Rankings (`nim_rankings`, `/v1/ranking`; AIPerf's `nim_rankings.py` over
//! `base_rankings_endpoint.py`). Non-streaming; produces no tokens.

use serde_json::{Map, Value};

use super::{Descriptor, data_if_listed, merge_extras};
use crate::conversation::{Content, Turn};
use crate::endpoint::payload::{PayloadParams, TurnBody};
use crate::endpoint::response::ParsedResponse;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    metrics_title: "Rankings Metrics",
    ..Descriptor::new("/v1/ranking", build, super::text_parts, parse)
};

/// `{"model","query":{"text"},"passages":[{"text"}…]}` + extras.
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    let (query, passages) = query_and_passages(parts.turn);
    let mut body = Map::new();
    body.insert("model".into(), Value::from(params.model_for(parts.turn)));
    body.insert("query".into(), serde_json::json!({ "text": query }));
    body.insert(
        "passages".into(),
        passages
            .iter()
            .map(|p| serde_json::json!({ "text": p }))
            .collect(),
    );
    merge_extras(&mut body, params, parts.turn);
    body
}

/// A rankings turn's query and passages. A turn of plain texts has no named query: its first
/// text is taken as the query and the rest as passages (AIPerf needs texts named `query` /
/// `passages`, which only a rankings dataset has).
pub(super) fn query_and_passages(turn: &Turn) -> (&str, &[String]) {
    match &turn.content {
        Content::Rankings { query, passages } => (query, passages),
        Content::Texts(texts) => match texts.split_first() {
            Some((q, rest)) => (q, rest),
            None => ("", &[]),
        },
        _ => ("", &[]),
    }
}

/// `rankings`, a non-empty list.
fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    data_if_listed(bytes, stamp_ns, out, |v| v.get("rankings")?.as_array());
}
