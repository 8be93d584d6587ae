//! The `data` of `phases/<phase>/server_metrics.json`: AIPerf 0.13's per-phase server-metrics
//! result (its `ServerMetricsResults` of one phase, dumped with `exclude_none`), built from the
//! store under the phase-filtered rule ([`Bounds::Phase`]).
//!
//! Per endpoint that has a fetch sent during the phase: `endpoint_url`, `info` (the collection
//! metadata of the fetches stamped from the phase's first to its last fetch of that endpoint)
//! and `metrics` (keyed by name: `type`, `description`, `series` with `labels`, `stats`,
//! `buckets`, `timeslices`; no `unit` and no per-series `endpoint_url`, which only the
//! whole-run export adds). The writer of the file (header, `warnings`) is
//! `crate::export::phases`.

use serde_json::{Map, Value};

use super::endpoint_display;
use crate::export::jsonl::PhaseTag;
use crate::server_metrics::analysis::{Bounds, Window, endpoint_info_in, summarize_endpoints};
use crate::server_metrics::store::Store;
use crate::server_metrics::summary::{EndpointInfo, MetricSummary};

/// Which phase a per-phase result describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseIdent<'a> {
    /// Its kind, number in the run, number among the profiling phases, and name.
    pub tag: PhaseTag<'a>,
    /// One of several phases of its kind: only the fetches sent during this one, by its
    /// `phase_index` ([`Bounds::PhaseRun`]); else every fetch of its kind ([`Bounds::Phase`]).
    pub one_of_several: bool,
}

/// The per-phase result of `ident.tag.phase`: `None` when no endpoint has a fetch sent during the
/// phase that yields a metric (AIPerf then writes no file). `slice_ns` is the timeslice length.
#[must_use]
pub fn phase_data(
    store: &Store,
    ident: PhaseIdent<'_>,
    slice_ns: Option<u64>,
    benchmark_id: Option<&str>,
) -> Option<Value> {
    let kind = ident.tag.phase.as_str();
    let bounds = if ident.one_of_several {
        Bounds::PhaseRun(ident.tag.phase, ident.tag.phase_index as u8)
    } else {
        Bounds::Phase(ident.tag.phase)
    };
    let mut summaries = Map::new();
    let (mut start, mut end) = (u64::MAX, 0);
    for ep in &store.endpoints {
        let span = match bounds {
            Bounds::PhaseRun(p, i) => ep.phase_run_span(p, i),
            _ => ep.phase_span(ident.tag.phase),
        };
        let Some(span) = span else {
            continue;
        };
        start = start.min(span.0);
        end = end.max(span.1);
        let w = Window {
            start_ns: span.0,
            end_ns: span.1,
            slice_ns,
            bounds,
        };
        let metrics = summarize_endpoints([ep], &w);
        if metrics.is_empty() {
            continue;
        }
        let Some(info) = endpoint_info_in(ep, Some(span)) else {
            continue;
        };
        let mut summary = Map::new();
        summary.insert("endpoint_url".into(), ep.url.as_str().into());
        summary.insert("info".into(), info_json(&info));
        summary.insert(
            "metrics".into(),
            Value::Object(
                metrics
                    .iter()
                    .map(|(n, m)| Some((n.clone(), metric_json(m)?)))
                    .collect::<Option<Map<_, _>>>()?,
            ),
        );
        summaries.insert(endpoint_display(&ep.url).to_owned(), Value::Object(summary));
    }
    if summaries.is_empty() {
        return None;
    }
    let urls: Vec<Value> = store
        .endpoints
        .iter()
        .map(|e| e.url.as_str().into())
        .collect();
    let mut data = Map::new();
    if let Some(id) = benchmark_id {
        data.insert("benchmark_id".into(), id.into());
    }
    data.insert("end_ns".into(), end.into());
    data.insert("endpoint_summaries".into(), Value::Object(summaries));
    data.insert("endpoints_configured".into(), Value::Array(urls.clone()));
    data.insert("endpoints_successful".into(), Value::Array(urls));
    data.insert("error_summary".into(), Value::Array(Vec::new()));
    data.insert("phase".into(), kind.into());
    data.insert("phase_index".into(), ident.tag.shown_index.into());
    data.insert("phase_kind".into(), kind.into());
    data.insert("phase_name".into(), ident.tag.name.into());
    data.insert("phase_results".into(), Value::Array(Vec::new()));
    if let Some(i) = ident.tag.profiling_index {
        data.insert("profiling_index".into(), i.into());
    }
    data.insert("start_ns".into(), start.into());
    Some(sorted(Value::Object(data)))
}

/// AIPerf's per-phase `info`: an absent update time is 0, an undefined mean interval 0.0, and
/// the median interval is left out when undefined.
fn info_json(i: &EndpointInfo) -> Value {
    let mut m = Map::new();
    m.insert("avg_fetch_latency_ms".into(), i.avg_fetch_latency_ms.into());
    m.insert(
        "avg_update_interval_ms".into(),
        i.avg_update_interval_ms.unwrap_or(0.0).into(),
    );
    m.insert("duration_seconds".into(), i.duration_seconds.into());
    m.insert("first_fetch_ns".into(), i.first_fetch_ns.into());
    m.insert(
        "first_update_ns".into(),
        i.first_update_ns.unwrap_or(0).into(),
    );
    m.insert("last_fetch_ns".into(), i.last_fetch_ns.into());
    m.insert(
        "last_update_ns".into(),
        i.last_update_ns.unwrap_or(0).into(),
    );
    if let Some(v) = i.median_update_interval_ms {
        m.insert("median_update_interval_ms".into(), v.into());
    }
    m.insert("total_fetches".into(), i.total_fetches.into());
    m.insert("unique_updates".into(), i.unique_updates.into());
    if i.malformed_lines > 0 {
        m.insert("malformed_lines".into(), i.malformed_lines.into());
    }
    Value::Object(m)
}

/// One metric as AIPerf's model dumps it: its own `type` (`unknown` stays `unknown`), no `unit`,
/// series without `endpoint_url`.
fn metric_json(m: &MetricSummary) -> Option<Value> {
    let series = m
        .series
        .iter()
        .map(|s| {
            let Value::Object(mut o) = serde_json::to_value(s).ok()? else {
                return None;
            };
            o.remove("endpoint_url");
            Some(Value::Object(o))
        })
        .collect::<Option<Vec<_>>>()?;
    let mut out = Map::new();
    out.insert("description".into(), m.description.as_str().into());
    out.insert("series".into(), Value::Array(series));
    out.insert("type".into(), m.kind.into());
    Some(Value::Object(out))
}

/// `v` with the keys of every object sorted, bucket bounds included (serde_json keeps insertion
/// order here; AIPerf writes with sorted keys).
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(o) => {
            let mut o: Map<String, Value> = o.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            o.sort_keys();
            Value::Object(o)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}
