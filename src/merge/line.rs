//! One line of a shard's `profile_export.jsonl` read back into the [`RecordFacts`] and
//! [`RecordMetrics`] the live run had, so the merge feeds the accumulators exactly what they
//! were fed.
//!
//! # What a line gives back
//!
//! The metrics are the line's `metrics`, each converted from its display unit to its base unit
//! ([`MetricDef::from_display`], the inverse of what [`ringperf_metrics::export::jsonl`] applied). Integer
//! metrics and the items of a list metric are rounded to `i64`: a nanosecond value printed as
//! milliseconds (`x / 1e6`, shortest round-trip digits) comes back as exactly `x` for any
//! `|x| < 2^51` ns (26 days); bytes printed as KiB (`x / 1024`) are exact in binary. Floats
//! without a display unit (throughputs, percentages, ratios) are printed with round-trip digits
//! and come back bit for bit. The one float with a display unit, `inter_token_latency`, is
//! recomputed from the record's own integers as [`ringperf_metrics::aggregate::record_metrics`] computes it
//! (`(request_latency − ttft) / (osl − 1)`) and taken when it prints as the line does, so it is
//! bit-exact too; otherwise the inverse conversion is kept (one rounding of `ms × 1e6`).
//!
//! Two metrics the line does not show are rebuilt, for they feed the statistics:
//! - `requested_osl` (hidden) from `osl_mismatch_diff_pct` = `(osl − r) / r · 100`: `r` is
//!   `100 · osl / (diff + 100)` rounded, checked by recomputing the diff. A request that produced
//!   no token has a diff of −100 % whatever it asked for; `r` is then taken as 1, which the
//!   OSL-mismatch count treats as the live run did (a mismatch). Without a diff (no OSL, or no
//!   `max_tokens` asked) it stays absent: only the hidden `requested_osl` statistics, exported
//!   nowhere, can differ.
//! - `thinking_efficiency` (experimental, hidden) = reasoning / output tokens, from
//!   `reasoning_token_count` and `output_token_count`, exactly as computed live.
//!
//! Non-finite values (written as `null`) come back as NaN.
//!
//! The facts are those the statistics read: the phase, the error, the wall-clock stamps
//! (`credit_issued_ns`, `request_start_ns`, `request_ack_ns`, `request_end_ns`), and the
//! monotonic ones. A run's clock is the wall clock less one origin (`wall = origin + mono`), so
//! the monotonic stamps are the wall-clock ones less an origin the caller gives: with the
//! shard's own (`ringperf.clock.wall_origin_ns`) they are the live run's exactly, and with any
//! origin at or before the stamps, `start − intended` (dispatch lag) is the live run's, from
//! stamps small enough for the f64 the accumulator takes them in to hold exactly (epoch ns
//! would not: their f64 steps are 256 ns). Beside them, what the metrics imply: content stamps
//! (`ttft`, then the inter-chunk gaps, or the request latency alone), the first output stamp,
//! token counts, server usage, and connection reuse (`http_req_connection_reused`). Not in the
//! line and read by no statistic once the metrics exist: byte counts and the HTTP trace.

use ringperf_wire::conversation::TurnSource;
use ringperf_wire::record::Lineage;
use serde::Deserialize;
use serde_json::{Map, Value};

use ringperf_metrics::aggregate::registry::flags::NO_INDIVIDUAL_RECORDS;
use ringperf_metrics::aggregate::{MetricDef, MetricId, MetricValue, RecordMetrics};
use ringperf_wire::record::{Phase, RecordFacts, RequestError, Usage};

/// Why a line is not a per-request record of ringperf's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError(pub String);

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LineError {}

fn bad<T>(msg: impl Into<String>) -> Result<T, LineError> {
    Err(LineError(msg.into()))
}

/// A line's top level. Keys the merge does not read (`trace_data`, …) are ignored.
#[derive(Deserialize)]
struct LineDoc {
    metadata: Metadata,
    metrics: Map<String, Value>,
    #[serde(default)]
    error: Option<ErrorDoc>,
}

#[derive(Deserialize)]
struct Metadata {
    session_num: u64,
    x_request_id: String,
    x_correlation_id: String,
    conversation_id: String,
    turn_index: u32,
    credit_issued_ns: u64,
    request_start_ns: u64,
    #[serde(default)]
    request_ack_ns: Option<u64>,
    request_end_ns: u64,
    worker_id: String,
    benchmark_phase: String,
    #[serde(default)]
    was_cancelled: bool,
    /// ringperf's own key, absent when zero.
    #[serde(default)]
    coalesced_reads: u32,
    /// ringperf's own key, with `--network-latency-*` only.
    #[serde(default)]
    tcp_rtt_us: Option<u32>,
    /// An agent trace's record: where its turn came from and its session's place in the tree.
    #[serde(default)]
    source_trace_id: Option<String>,
    #[serde(default)]
    source_outer_idx: Option<u32>,
    #[serde(default)]
    source_inner_idx: Option<u32>,
    #[serde(default)]
    source_kind: Option<String>,
    #[serde(default)]
    agent_depth: u8,
    #[serde(default)]
    parent_correlation_id: Option<String>,
    #[serde(default)]
    root_correlation_id: Option<String>,
}

#[derive(Deserialize)]
struct ErrorDoc {
    #[serde(default)]
    code: Option<u16>,
    #[serde(rename = "type")]
    kind: String,
    message: String,
}

/// A per-request record read back from its line.
#[derive(Clone, Debug)]
pub struct Record {
    /// What the statistics read of the request (see the module docs).
    pub facts: RecordFacts,
    /// Its metrics in base units, in the order the live run computed them.
    pub metrics: RecordMetrics,
}

/// Parses one line (without its newline); monotonic stamps are the wall-clock ones less
/// `origin_ns` (module docs).
///
/// # Errors
/// [`LineError`] when the line is not JSON, misses a field, or names a metric ringperf does not
/// write per record or in another unit.
pub fn parse_line(line: &[u8], origin_ns: u64) -> Result<Record, LineError> {
    let doc: LineDoc = serde_json::from_slice(line).map_err(|e| LineError(e.to_string()))?;
    let md = &doc.metadata;
    let phase = match md.benchmark_phase.as_str() {
        "warmup" => Phase::Warmup,
        "profiling" => Phase::Profiling,
        other => return bad(format!("unknown benchmark_phase `{other}`")),
    };
    let uuid = |field: &str, s: &str| {
        uuid::Uuid::parse_str(s).map_err(|e| LineError(format!("{field} `{s}`: {e}")))
    };
    let worker_id = md
        .worker_id
        .strip_prefix("worker_")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| LineError(format!("worker_id `{}` is not worker_<n>", md.worker_id)))?;

    let mut values = Vec::with_capacity(doc.metrics.len() + 2);
    let mut itl_shown = None;
    for (tag, entry) in &doc.metrics {
        let def = MetricDef::by_tag(tag)
            .filter(|d| !(d.hidden() || d.has(NO_INDIVIDUAL_RECORDS)))
            .ok_or_else(|| {
                LineError(format!(
                    "`{tag}` is not a per-request metric of this ringperf (written by another \
                     version?)"
                ))
            })?;
        let unit = entry.get("unit").and_then(Value::as_str);
        if unit != Some(def.shown_unit().as_str()) {
            return bad(format!(
                "`{tag}` is in {}, expected {}",
                unit.unwrap_or("no unit"),
                def.shown_unit().as_str()
            ));
        }
        let shown = entry.get("value").unwrap_or(&Value::Null);
        if def.id == MetricId::InterTokenLatency {
            itl_shown = shown.as_f64();
        }
        values.push((def.id, base_value(def, shown)?));
    }
    let mut metrics = RecordMetrics { values };
    if let Some(shown) = itl_shown {
        exact_itl(&mut metrics, shown);
    }
    rebuild_hidden(&mut metrics);

    let error = doc
        .error
        .map(|e| RequestError::new(e.code, e.kind, e.message));
    let facts = facts_of(md, origin_ns, phase, worker_id, error, &metrics, uuid)?;
    Ok(Record { facts, metrics })
}

/// A shown value in the metric's base unit (see the module docs).
fn base_value(def: &MetricDef, shown: &Value) -> Result<MetricValue, LineError> {
    let int = |v: &Value| -> Result<i64, LineError> {
        if def.display_unit.is_none()
            && let Some(i) = v.as_i64()
        {
            return Ok(i);
        }
        match v.as_f64() {
            Some(x) if x.is_finite() => Ok(def.from_display(x).round() as i64),
            _ => bad(format!("`{}` has a non-integer value {v}", def.tag)),
        }
    };
    match shown {
        Value::Array(items) if def.integer => Ok(MetricValue::List(
            items.iter().map(int).collect::<Result<_, _>>()?,
        )),
        Value::Array(_) => bad(format!("`{}` is not a list metric", def.tag)),
        v if def.integer => int(v).map(MetricValue::Int),
        Value::Null => Ok(MetricValue::Float(f64::NAN)),
        v => match v.as_f64() {
            Some(x) => Ok(MetricValue::Float(def.from_display(x))),
            None => bad(format!("`{}` has a non-numeric value {v}", def.tag)),
        },
    }
}

fn int_of(m: &RecordMetrics, id: MetricId) -> Option<i64> {
    match m.get(id) {
        Some(MetricValue::Int(v)) => Some(*v),
        _ => None,
    }
}

/// Replaces the inverse-converted `inter_token_latency` with the live formula's value when that
/// value prints as the line did.
fn exact_itl(m: &mut RecordMetrics, shown: f64) {
    use MetricId as M;
    let (Some(ttft), Some(latency), Some(osl)) = (
        int_of(m, M::TimeToFirstToken),
        int_of(m, M::RequestLatency),
        int_of(m, M::OutputSequenceLength),
    ) else {
        return;
    };
    if osl < 2 {
        return;
    }
    let itl = latency.saturating_sub(ttft) as f64 / (osl - 1) as f64;
    if M::InterTokenLatency.def().to_display(itl) == shown
        && let Some((_, v)) = m
            .values
            .iter_mut()
            .find(|(id, _)| *id == M::InterTokenLatency)
    {
        *v = MetricValue::Float(itl);
    }
}

/// Inserts `value` where the live run computes `id`: before the first metric with a larger
/// id (record metrics come in registry order, the HTTP trace metrics and the goodput flag
/// after them).
fn insert_in_order(m: &mut RecordMetrics, id: MetricId, value: MetricValue) {
    let at = m
        .values
        .iter()
        .position(|(other, _)| (*other as u8) > (id as u8))
        .unwrap_or(m.values.len());
    m.values.insert(at, (id, value));
}

/// `requested_osl` and `thinking_efficiency`, which the line does not show (module docs).
fn rebuild_hidden(m: &mut RecordMetrics) {
    use MetricId as M;
    if let (Some(diff), Some(osl)) = (
        m.f64(M::OslMismatchDiffPct),
        int_of(m, M::OutputSequenceLength),
    ) && let Some(r) = requested_osl(osl, diff)
    {
        insert_in_order(m, M::RequestedOsl, MetricValue::Int(r));
    }
    if let (Some(reasoning), Some(output)) = (
        int_of(m, M::ReasoningTokenCount),
        int_of(m, M::OutputTokenCount),
    ) && output > 0
    {
        insert_in_order(
            m,
            M::ThinkingEfficiency,
            MetricValue::Float(reasoning as f64 / output as f64),
        );
    }
}

/// The `max_tokens` whose OSL-mismatch diff for `osl` output tokens is `diff` (see the module
/// docs); 1 when `osl` is 0.
fn requested_osl(osl: i64, diff: f64) -> Option<i64> {
    if osl == 0 {
        return Some(1);
    }
    let diff_of = |r: i64| (osl as f64 - r as f64) / r as f64 * 100.0;
    let guess = (100.0 * osl as f64 / (diff + 100.0)).round();
    if !guess.is_finite() || guess < 1.0 {
        return None;
    }
    let guess = guess as i64;
    [guess, guess - 1, guess + 1]
        .into_iter()
        .filter(|r| *r > 0)
        .find(|r| diff_of(*r) == diff)
        .or(Some(guess))
}

/// The facts of the record (module docs): its stamps, ids and error, and what its metrics say
/// of its content stamps, tokens and usage.
fn facts_of(
    md: &Metadata,
    origin_ns: u64,
    phase: Phase,
    worker_id: u16,
    error: Option<RequestError>,
    m: &RecordMetrics,
    uuid: impl Fn(&str, &str) -> Result<uuid::Uuid, LineError>,
) -> Result<RecordFacts, LineError> {
    use MetricId as M;
    let mono = |wall: u64| wall.saturating_sub(origin_ns);
    let start = mono(md.request_start_ns);
    let at = |offset: i64| start.saturating_add_signed(offset);
    let content_stamps_ns = match (
        int_of(m, M::TimeToFirstToken),
        m.get(M::InterChunkLatency),
        int_of(m, M::RequestLatency),
    ) {
        (Some(ttft), gaps, _) => {
            let mut stamps = vec![at(ttft)];
            if let Some(MetricValue::List(gaps)) = gaps {
                for g in gaps {
                    let last = *stamps.last().unwrap_or(&start);
                    stamps.push(last.saturating_add_signed(*g));
                }
            }
            stamps
        }
        (None, _, Some(latency)) => vec![at(latency)],
        (None, _, None) => Vec::new(),
    };
    let count = |id: MetricId| int_of(m, id).map(|v| v.max(0) as u64);
    let reasoning_tokens = count(M::ReasoningTokenCount);
    let output_tokens = count(M::OutputTokenCount).or_else(|| {
        count(M::OutputSequenceLength).map(|osl| osl.saturating_sub(reasoning_tokens.unwrap_or(0)))
    });
    let usage = Usage {
        prompt_tokens: count(M::UsagePromptTokens),
        completion_tokens: count(M::UsageCompletionTokens),
        total_tokens: count(M::UsageTotalTokens),
        reasoning_tokens: count(M::UsageReasoningTokens),
        prompt_cache_read_tokens: count(M::UsagePromptCacheReadTokens),
        prompt_cache_write_tokens: count(M::UsagePromptCacheWriteTokens),
        prompt_audio_tokens: count(M::UsagePromptAudioTokens),
        completion_audio_tokens: count(M::UsageCompletionAudioTokens),
        accepted_prediction_tokens: count(M::UsageAcceptedPredictionTokens),
        rejected_prediction_tokens: count(M::UsageRejectedPredictionTokens),
    };
    Ok(RecordFacts {
        phase,
        session_num: md.session_num,
        x_request_id: uuid("x_request_id", &md.x_request_id)?,
        x_correlation_id: uuid("x_correlation_id", &md.x_correlation_id)?,
        conversation_id: md.conversation_id.clone(),
        turn_index: md.turn_index,
        worker_id,
        intended_ns: mono(md.credit_issued_ns),
        start_ns: start,
        head_ns: md.request_ack_ns.map(mono),
        end_ns: mono(md.request_end_ns),
        credit_issued_wall_ns: md.credit_issued_ns,
        request_start_wall_ns: md.request_start_ns,
        request_ack_wall_ns: md.request_ack_ns,
        request_end_wall_ns: md.request_end_ns,
        content_stamps_ns,
        first_output_stamp_ns: int_of(m, M::TimeToFirstOutputToken).map(at),
        input_tokens: count(M::InputSequenceLength).or_else(|| count(M::ErrorIsl)),
        output_tokens: if error.is_some() { None } else { output_tokens },
        reasoning_tokens,
        usage: (usage != Usage::default()).then_some(usage),
        requested_osl: count(M::RequestedOsl),
        // Not in a record line (the offset is an internal metric): a merge has no replay lag.
        scheduled_send_ms: None,
        error: error.map(Box::new),
        was_cancelled: md.was_cancelled,
        conn_reused: int_of(m, M::HttpReqConnectionReused) == Some(1),
        bytes_sent: 0,
        bytes_received: 0,
        trace: None,
        // A line carries no per-event stamps: a merge has no receive lag of its own.
        // A line has no usage per chunk: its metrics (read above) are kept as they are.
        first_content_chunk_tokens: None,
        receive: ringperf_wire::record::ReceiveFacts {
            lag_ns: Vec::new(),
            coalesced_reads: md.coalesced_reads,
            tcp_rtt_us: md.tcp_rtt_us,
        },
        audio_seconds: m.f64(M::AudioDuration),
        media: ringperf_wire::record::MediaFacts {
            images: count(M::NumImages).map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            video_inference_time_s: m.f64(M::VideoInferenceTime),
            video_peak_memory_mb: m.f64(M::VideoPeakMemory),
        },
        // A line carries the `spec_decode_*` values (kept above), not the payload's histogram.
        spec_decode: None,
        // Not in a record line: a merged run has no theoretical prefix-cache hit.
        prefix_blocks: None,
        // A child with no parent: a `dag_jsonl` pre-session child.
        lineage: match (&md.parent_correlation_id, &md.root_correlation_id) {
            (p, Some(r)) if md.agent_depth > 0 => Some(Box::new(Lineage {
                depth: md.agent_depth,
                parent: p
                    .as_ref()
                    .map(|p| uuid("parent_correlation_id", p))
                    .transpose()?,
                root: uuid("root_correlation_id", r)?,
            })),
            _ => None,
        },
        // The kinds ringperf writes (a line of another kind keeps no source).
        source: match (
            &md.source_trace_id,
            md.source_outer_idx,
            md.source_kind.as_deref(),
        ) {
            (Some(trace), Some(outer), Some(kind)) => ["weka_main", "weka_subagent", "weka_flat"]
                .into_iter()
                .find(|k| *k == kind)
                .map(|kind| TurnSource {
                    trace: trace.as_str().into(),
                    outer,
                    inner: md.source_inner_idx,
                    kind,
                }),
            _ => None,
        },
    })
}

#[cfg(test)]
#[path = "line_tests.rs"]
mod tests;
