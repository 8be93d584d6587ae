//! `profile_export_raw.jsonl` (`--export-level raw`, docs/output-formats.md): a line per request:
//! what was sent and what came back, in AIPerf 0.13's `RawRecordInfo` shape.
//!
//! # Format
//!
//! ```text
//! {"metadata": {…as in profile_export.jsonl…},
//!  "start_perf_ns": <CLOCK_MONOTONIC ns just before the first byte was written>,
//!  "request_headers": {"<name>": "<value>", …},      (credentials redacted)
//!  "status": <HTTP status>,                           (absent when no head came back)
//!  "responses": [ {"perf_ns": N, "packets": [{"name": "data", "value": "…"}, …]}, … ]
//!             | [ {"perf_ns": N, "text": "<whole body>"} ]   (a body that is not SSE)
//!             | [],                                           (an HTTP error status)
//!  "error"?: {"code", "type", "message"},
//!  "payload": <the request body exactly as sent>}
//! ```
//!
//! `perf_ns` is the `CLOCK_MONOTONIC` time of the read that completed the message, the clock
//! AIPerf's `perf_counter_ns` reads. Each SSE message becomes its fields as AIPerf parses them
//! (`SSEMessage.parse`): lines trimmed, `name: value` split at the first colon, a line with no
//! colon is a name without value, an empty name is a `comment`. The payload is spliced in byte
//! for byte, last, as AIPerf does; a body that is not JSON goes in as a JSON string.
//!
//! This writer runs only at the raw export level, on the aggregator thread.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde_json::{Map, Value};

use super::headers::SentHeaders;
use crate::aggregate::RecordMetrics;
use ringperf_wire::record::{RawRecord, RecordFacts};

/// What the raw lines need besides the record: the request headers sent with every request.
#[derive(Clone, Debug, Default)]
pub struct RawContext {
    /// The headers every request carries and the id headers.
    pub sent: SentHeaders,
    /// `CLOCK_MONOTONIC` ns of the run clock's origin: `perf_ns = origin + stamp`.
    pub monotonic_origin_ns: u64,
}

/// Streams raw lines to a file, each written whole.
#[derive(Debug)]
pub struct RawWriter<W: Write = BufWriter<File>> {
    out: W,
    ctx: RawContext,
    line: Vec<u8>,
    lines: u64,
}

impl RawWriter<BufWriter<File>> {
    /// Creates (truncates) the file.
    pub fn create(path: &Path, ctx: RawContext) -> io::Result<Self> {
        Ok(Self::new(
            BufWriter::with_capacity(1 << 16, File::create(path)?),
            ctx,
        ))
    }
}

impl<W: Write> RawWriter<W> {
    /// Wraps any writer (tests use a `Vec<u8>`).
    pub fn new(out: W, ctx: RawContext) -> Self {
        Self {
            out,
            ctx,
            line: Vec::with_capacity(4096),
            lines: 0,
        }
    }

    /// Lines written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Writes the line of one request; `payload` is the body it sent.
    pub fn write(
        &mut self,
        raw: &RawRecord,
        facts: &RecordFacts,
        metrics: &RecordMetrics,
        payload: &[u8],
    ) -> io::Result<()> {
        self.line.clear();
        encode(&mut self.line, &self.ctx, raw, facts, metrics, payload)?;
        self.line.push(b'\n');
        self.out.write_all(&self.line)?;
        self.lines += 1;
        Ok(())
    }

    /// Flushes everything and returns the writer.
    pub fn close(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Appends the line of one request (without its newline) to `out`.
pub fn encode(
    out: &mut Vec<u8>,
    ctx: &RawContext,
    raw: &RawRecord,
    facts: &RecordFacts,
    metrics: &RecordMetrics,
    payload: &[u8],
) -> io::Result<()> {
    let record = super::jsonl::record_line(facts, metrics);
    let mut o = Map::new();
    o.insert(
        "metadata".into(),
        record
            .as_ref()
            .and_then(|r| r.get("metadata").cloned())
            .unwrap_or_else(|| Value::Object(Map::new())),
    );
    o.insert(
        "start_perf_ns".into(),
        Value::from(ctx.monotonic_origin_ns + raw.start_ns),
    );
    o.insert("request_headers".into(), request_headers(ctx, raw));
    if raw.status != 0 {
        o.insert("status".into(), Value::from(raw.status));
    }
    o.insert("responses".into(), Value::Array(responses(ctx, raw)));
    if let Some(err) = record.as_ref().and_then(|r| r.get("error")) {
        o.insert("error".into(), err.clone());
    }
    serde_json::to_writer(&mut *out, &Value::Object(o))?;
    // Splice the payload in as the last key, byte for byte when it is JSON.
    out.pop();
    out.extend_from_slice(b",\"payload\":");
    if serde_json::from_slice::<serde::de::IgnoredAny>(payload).is_ok() {
        out.extend_from_slice(trim_ascii(payload));
    } else {
        serde_json::to_writer(&mut *out, &String::from_utf8_lossy(payload))?;
    }
    out.push(b'}');
    Ok(())
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end]
}

/// The headers sent, credentials redacted (AIPerf's `redact_headers`).
fn request_headers(ctx: &RawContext, raw: &RawRecord) -> Value {
    let mut h = Map::new();
    ctx.sent.put(&mut h, &raw.request_id, &raw.correlation_id);
    Value::Object(h)
}

/// The responses as AIPerf records them: none for an HTTP error status, one per SSE message,
/// or the whole body once.
fn responses(ctx: &RawContext, raw: &RawRecord) -> Vec<Value> {
    if raw.status >= 400 {
        return Vec::new();
    }
    raw.events
        .iter()
        .map(|e| {
            let mut m = Map::new();
            m.insert(
                "perf_ns".into(),
                Value::from(ctx.monotonic_origin_ns + e.stamp_ns),
            );
            let bytes = raw.event_bytes(e);
            if raw.is_sse {
                let packets = sse_fields(bytes)
                    .into_iter()
                    .map(|(name, value)| {
                        let mut p = Map::new();
                        p.insert("name".into(), Value::from(name));
                        if let Some(v) = value {
                            p.insert("value".into(), Value::from(v));
                        }
                        Value::Object(p)
                    })
                    .collect();
                m.insert("packets".into(), Value::Array(packets));
            } else {
                m.insert("text".into(), Value::from(String::from_utf8_lossy(bytes)));
            }
            Value::Object(m)
        })
        .collect()
}

/// The fields of one SSE message, as AIPerf's `SSEMessage.parse` splits them.
pub fn sse_fields(message: &[u8]) -> Vec<(String, Option<String>)> {
    let text = String::from_utf8_lossy(message);
    if !text.contains(['\n', '\r'])
        && let Some(v) = text.strip_prefix("data:")
    {
        return vec![("data".into(), Some(v.trim().to_string()))];
    }
    let mut fields: Vec<(String, Option<String>)> = Vec::new();
    for line in text.split(['\n', '\r']) {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        // A JSON value cut by a literal newline continues on the next line.
        if let Some((_, Some(prev))) = fields.last_mut()
            && prev.starts_with('{')
            && !prev.ends_with('}')
            && !line.starts_with("data:")
        {
            prev.push_str("\\n");
            prev.push_str(line);
            continue;
        }
        match line.split_once(':') {
            None => fields.push((line.to_string(), None)),
            Some((name, value)) => {
                let name = match name.trim() {
                    "" => "comment",
                    n => n,
                };
                fields.push((name.to_string(), Some(value.trim().to_string())));
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str, value: Option<&str>) -> (String, Option<String>) {
        (name.to_string(), value.map(str::to_string))
    }

    /// AIPerf 0.13's `SSEMessage.parse` on the same input gives
    /// `event=ping, comment=hello, retry (no value), data={"a":1}`.
    #[test]
    fn sse_fields_follow_aiperf() {
        assert_eq!(
            sse_fields(b"event: ping\n: hello\nretry\ndata: {\"a\":1}"),
            [
                f("event", Some("ping")),
                f("comment", Some("hello")),
                f("retry", None),
                f("data", Some("{\"a\":1}"))
            ]
        );
        assert_eq!(sse_fields(b"data:  [DONE] "), [f("data", Some("[DONE]"))]);
        assert_eq!(
            sse_fields(b"data: {\"a\":\"x\r\ny\"}\r\n"),
            [f("data", Some("{\"a\":\"x\\ny\"}"))]
        );
        assert_eq!(sse_fields(b""), []);
    }

    #[test]
    fn sse_fields_never_panic() {
        for input in [&b"\xff\xfe:"[..], b":", b"\n\n\r", b"data", b"{\nx"] {
            let _ = sse_fields(input);
        }
    }
}
