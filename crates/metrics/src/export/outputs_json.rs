//! `outputs.json` (`--export-outputs-json`, docs/output-formats.md): every profiling request's
//! generated text beside its identifiers and main metrics, in AIPerf 0.13's shape:
//!
//! ```text
//! {"schema_version": "1.0", "data": [{"session_num", "conversation_id", "turn_index",
//!   "x_request_id", "request_start_ns", "request_end_ns", "metrics": {…}, "response_text"}, …]}
//! ```
//!
//! indented by two spaces, with no final newline, one entry per profiling request (failed ones
//! too), sorted by `session_num` then `turn_index`. `metrics` holds those of
//! [`METRICS`] the record has, each a bare value in its display unit (as the records JSONL
//! shows it); `response_text` is the text of every content response joined (`null` when there
//! is none). No file is written when the run has no profiling request, as AIPerf.
//!
//! The aggregator keeps the entries (each a small JSON object and the text) until the run ends,
//! then they are sorted and written at once.

use std::io::{self, Write};
use std::path::Path;

use serde_json::{Map, Value};

use crate::aggregate::{MetricId, MetricValue, RecordMetrics};
use ringperf_wire::record::RecordFacts;

/// The file's name in the artifact directory.
pub const OUTPUTS_JSON_FILE: &str = "outputs.json";

/// The footer's label of the file.
pub const FOOTER_LABEL: &str = "Outputs JSON";

/// The per-request metrics an entry carries (when the record has them), in this order.
pub const METRICS: [MetricId; 6] = [
    MetricId::InputSequenceLength,
    MetricId::OutputTokenCount,
    MetricId::OutputSequenceLength,
    MetricId::RequestLatency,
    MetricId::TimeToFirstToken,
    MetricId::InterTokenLatency,
];

/// The entries of a run, as its profiling records complete.
#[derive(Debug, Default)]
pub struct OutputsJson {
    /// `(session_num, turn_index, entry)`.
    entries: Vec<(u64, u32, Value)>,
}

impl OutputsJson {
    /// Adds the entry of one profiling record whose content responses said `response_text`.
    pub fn add(&mut self, f: &RecordFacts, m: &RecordMetrics, response_text: &str) {
        let mut metrics = Map::new();
        for id in METRICS {
            if let Some(v) = m.get(id).and_then(|v| display_value(id, v)) {
                metrics.insert(id.def().tag.into(), v);
            }
        }
        let mut e = Map::new();
        e.insert("session_num".into(), Value::from(f.session_num));
        e.insert(
            "conversation_id".into(),
            Value::from(f.conversation_id.as_str()),
        );
        e.insert("turn_index".into(), Value::from(f.turn_index));
        e.insert(
            "x_request_id".into(),
            Value::from(f.x_request_id.to_string()),
        );
        e.insert(
            "request_start_ns".into(),
            Value::from(f.request_start_wall_ns),
        );
        e.insert("request_end_ns".into(), Value::from(f.request_end_wall_ns));
        e.insert("metrics".into(), Value::Object(metrics));
        let text = (!response_text.is_empty()).then(|| Value::from(response_text));
        e.insert("response_text".into(), text.unwrap_or(Value::Null));
        self.entries
            .push((f.session_num, f.turn_index, Value::Object(e)));
    }

    /// Entries so far.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entry yet.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The whole file, entries sorted (stably) by session then turn.
    pub fn write_to(&self, out: impl Write) -> io::Result<()> {
        let mut order: Vec<&(u64, u32, Value)> = self.entries.iter().collect();
        order.sort_by_key(|(s, t, _)| (*s, *t));
        let data: Vec<&Value> = order.into_iter().map(|(_, _, e)| e).collect();
        #[derive(serde::Serialize)]
        struct Doc<'a> {
            schema_version: &'static str,
            data: Vec<&'a Value>,
        }
        let doc = Doc {
            schema_version: "1.0",
            data,
        };
        serde_json::to_writer_pretty(out, &doc).map_err(io::Error::from)
    }

    /// Writes [`OUTPUTS_JSON_FILE`] into `dir` (nothing when there is no entry); the path
    /// written.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(&self, dir: &Path) -> io::Result<Option<std::path::PathBuf>> {
        if self.is_empty() {
            return Ok(None);
        }
        let path = dir.join(OUTPUTS_JSON_FILE);
        let mut w = io::BufWriter::new(std::fs::File::create(&path)?);
        self.write_to(&mut w)?;
        w.flush()?;
        Ok(Some(path))
    }
}

/// A scalar metric's value as the records JSONL shows it: a count stays an integer, a value
/// with a display unit is converted to it; a non-finite one is `null`.
fn display_value(id: MetricId, v: &MetricValue) -> Option<Value> {
    let d = id.def();
    let float =
        |x: f64| serde_json::Number::from_f64(d.to_display(x)).map_or(Value::Null, Value::Number);
    match v {
        MetricValue::Int(x) if d.display_unit.is_none() => Some(Value::from(*x)),
        MetricValue::Int(x) => Some(float(*x as f64)),
        MetricValue::Float(x) => Some(float(*x)),
        MetricValue::List(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::testing::facts;

    /// AIPerf 0.13's own outputs.json (tests/data/aiperf-outputs-json/README.md).
    fn recording(name: &str) -> String {
        let path = format!(
            "{}/../../tests/data/aiperf-outputs-json/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(path).expect("fixture")
    }

    /// The ns value a latency of `ms` was displayed from: the integer (AIPerf's stamps are
    /// integers) when it gives `ms` back, else (an ITL) the float next to `ms × 1e6` that does.
    fn ns_of(id: MetricId, ms: f64) -> MetricValue {
        let d = id.def();
        let r = (ms * 1e6).round();
        if d.to_display(r) == ms {
            return MetricValue::Int(r as i64);
        }
        let x = ms * 1e6;
        let near = (-4i64..=4).map(|k| f64::from_bits((x.to_bits() as i64 + k) as u64));
        MetricValue::Float(
            near.into_iter()
                .find(|y| d.to_display(*y) == ms)
                .expect("a float"),
        )
    }

    /// Each entry of an AIPerf recording fed back as the facts and metrics it describes
    /// (latencies from its milliseconds to ns): ringperf writes the same bytes, so the key
    /// order, the indentation, the value shapes and units, the `null` and the missing final
    /// newline are AIPerf's. The entries go in out of order (the file is sorted).
    #[test]
    fn writes_aiperf_recordings_byte_for_byte() {
        for name in ["streaming", "reasoning", "non_streaming"] {
            let text = recording(name);
            let doc: Value = serde_json::from_str(&text).unwrap();
            let mut out = OutputsJson::default();
            for e in doc["data"].as_array().unwrap().iter().rev() {
                let mut f = facts();
                f.session_num = e["session_num"].as_u64().unwrap();
                f.conversation_id = e["conversation_id"].as_str().unwrap().into();
                f.turn_index = e["turn_index"].as_u64().unwrap() as u32;
                f.x_request_id = e["x_request_id"].as_str().unwrap().parse().unwrap();
                f.request_start_wall_ns = e["request_start_ns"].as_u64().unwrap();
                f.request_end_wall_ns = e["request_end_ns"].as_u64().unwrap();
                let mut m = RecordMetrics::default();
                for (tag, v) in e["metrics"].as_object().unwrap() {
                    let id = METRICS.into_iter().find(|id| id.def().tag == tag).unwrap();
                    let value = match id {
                        MetricId::InterTokenLatency
                        | MetricId::RequestLatency
                        | MetricId::TimeToFirstToken => ns_of(id, v.as_f64().unwrap()),
                        _ => MetricValue::Int(v.as_i64().unwrap()),
                    };
                    m.values.push((id, value));
                }
                // A metric outside the list is left out.
                m.values
                    .push((MetricId::TimeToSecondToken, MetricValue::Int(5)));
                out.add(&f, &m, e["response_text"].as_str().unwrap_or(""));
            }
            let mut bytes = Vec::new();
            out.write_to(&mut bytes).unwrap();
            assert_eq!(String::from_utf8(bytes).unwrap(), text, "{name}");
        }
    }

    #[test]
    fn an_error_record_has_no_metrics_and_a_null_text() {
        let mut f = facts();
        f.error = Some(Box::new(ringperf_wire::record::RequestError::new(
            Some(500),
            "E",
            "boom",
        )));
        let m = RecordMetrics {
            values: vec![(MetricId::ErrorIsl, MetricValue::Int(7))],
        };
        let mut out = OutputsJson::default();
        out.add(&f, &m, "");
        let mut bytes = Vec::new();
        out.write_to(&mut bytes).unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["data"][0]["metrics"], serde_json::json!({}));
        assert_eq!(v["data"][0]["response_text"], Value::Null);
    }

    #[test]
    fn no_entry_no_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(OutputsJson::default().write(dir.path()).unwrap(), None);
        assert!(!dir.path().join(OUTPUTS_JSON_FILE).exists());
    }
}
