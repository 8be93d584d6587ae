//! `profile_export.jsonl` (spec §6.5): one JSON object per request, written as records
//! complete.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde_json::{Map, Value};

use crate::aggregate::{MetricValue, RecordMetrics};
use crate::record::RecordFacts;

/// How often buffered lines reach the file at the latest.
pub const FLUSH_INTERVAL_NS: u64 = 1_000_000_000;

/// Value of `record_processor_id`: ringperf has one aggregator thread.
pub const RECORD_PROCESSOR_ID: &str = "record_processor_0";

/// Streams per-record lines to a file. Each line is written whole into the buffer, so a flush
/// never leaves a partial line behind.
#[derive(Debug)]
pub struct JsonlWriter<W: Write = BufWriter<File>> {
    out: W,
    line: Vec<u8>,
    last_flush_ns: u64,
    lines: u64,
}

impl JsonlWriter<BufWriter<File>> {
    /// Creates (truncates) the file at run start. `now_ns` is the current monotonic time.
    pub fn create(path: &Path, now_ns: u64) -> io::Result<Self> {
        Ok(Self::new(
            BufWriter::with_capacity(1 << 16, File::create(path)?),
            now_ns,
        ))
    }
}

impl<W: Write> JsonlWriter<W> {
    /// Wraps any writer (tests use a `Vec<u8>`).
    pub fn new(out: W, now_ns: u64) -> Self {
        Self {
            out,
            line: Vec::with_capacity(1024),
            last_flush_ns: now_ns,
            lines: 0,
        }
    }

    /// Lines written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Writes one record's line. Records with no metric and no error produce no line.
    pub fn write(&mut self, f: &RecordFacts, m: &RecordMetrics) -> io::Result<()> {
        let Some(v) = record_line(f, m) else {
            return Ok(());
        };
        self.line.clear();
        serde_json::to_writer(&mut self.line, &v).map_err(io::Error::other)?;
        self.line.push(b'\n');
        self.out.write_all(&self.line)?;
        self.lines += 1;
        Ok(())
    }

    /// Flushes when at least [`FLUSH_INTERVAL_NS`] passed since the last flush.
    pub fn maybe_flush(&mut self, now_ns: u64) -> io::Result<()> {
        if now_ns.saturating_sub(self.last_flush_ns) >= FLUSH_INTERVAL_NS {
            self.out.flush()?;
            self.last_flush_ns = now_ns;
        }
        Ok(())
    }

    /// Flushes everything and returns the writer.
    pub fn close(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The JSON object of one record, or `None` when it has neither metrics nor an error.
pub fn record_line(f: &RecordFacts, m: &RecordMetrics) -> Option<Value> {
    let mut metrics = Map::new();
    for (id, v) in &m.values {
        let d = id.def();
        if d.hidden() || d.has(crate::aggregate::registry::flags::NO_INDIVIDUAL_RECORDS) {
            continue;
        }
        let convert = |x: i64| -> Value {
            if d.display_unit.is_none() {
                Value::from(x)
            } else {
                num(d.to_display(x as f64))
            }
        };
        let value = match v {
            MetricValue::Int(x) => convert(*x),
            MetricValue::Float(x) => num(d.to_display(*x)),
            MetricValue::List(l) => Value::Array(l.iter().map(|x| convert(*x)).collect()),
        };
        let mut entry = Map::new();
        entry.insert("value".into(), value);
        entry.insert("unit".into(), Value::from(d.shown_unit().as_str()));
        metrics.insert(d.tag.into(), Value::Object(entry));
    }
    if metrics.is_empty() && f.error.is_none() {
        return None;
    }
    let mut md = Map::new();
    md.insert("session_num".into(), Value::from(f.session_num));
    md.insert(
        "x_request_id".into(),
        Value::from(f.x_request_id.to_string()),
    );
    md.insert(
        "x_correlation_id".into(),
        Value::from(f.x_correlation_id.to_string()),
    );
    md.insert(
        "conversation_id".into(),
        Value::from(f.conversation_id.as_str()),
    );
    md.insert("turn_index".into(), Value::from(f.turn_index));
    md.insert(
        "credit_issued_ns".into(),
        Value::from(f.credit_issued_wall_ns),
    );
    md.insert(
        "request_start_ns".into(),
        Value::from(f.request_start_wall_ns),
    );
    if let Some(ack) = f.request_ack_wall_ns {
        md.insert("request_ack_ns".into(), Value::from(ack));
    }
    md.insert("request_end_ns".into(), Value::from(f.request_end_wall_ns));
    md.insert(
        "worker_id".into(),
        Value::from(format!("worker_{}", f.worker_id)),
    );
    md.insert(
        "record_processor_id".into(),
        Value::from(RECORD_PROCESSOR_ID),
    );
    md.insert("benchmark_phase".into(), Value::from(f.phase.as_str()));
    md.insert("was_cancelled".into(), Value::from(f.was_cancelled));
    md.insert("context_overflow_skip".into(), Value::from(false));
    md.insert("agent_depth".into(), Value::from(0));
    let mut o = Map::new();
    o.insert("metadata".into(), Value::Object(md));
    o.insert("metrics".into(), Value::Object(metrics));
    if let Some(e) = &f.error {
        let mut err = Map::new();
        if let Some(code) = e.code {
            err.insert("code".into(), Value::from(code));
        }
        err.insert("type".into(), Value::from(e.kind.as_str()));
        err.insert("message".into(), Value::from(e.message.as_str()));
        o.insert("error".into(), Value::Object(err));
    }
    Some(Value::Object(o))
}

fn num(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}
