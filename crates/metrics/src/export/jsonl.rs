//! `profile_export.jsonl` (docs/output-formats.md): one JSON object per request, written as records
//! complete.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::LazyLock;

use serde_json::ser::{CompactFormatter, Formatter};
use serde_json::{Map, Value};

use crate::aggregate::registry::flags::NO_INDIVIDUAL_RECORDS;
use crate::aggregate::{MetricDef, MetricId, MetricValue, REGISTRY, RecordMetrics};
use ringperf_wire::record::{Phase, RawRecord, RecordFacts};

/// How often buffered lines reach the file at the latest.
pub const FLUSH_INTERVAL_NS: u64 = 1_000_000_000;

pub use ringperf_wire::record::RECORD_PROCESSOR_ID;

/// Streams per-record lines to a file. Each line is written whole into the buffer, so a flush
/// never leaves a partial line behind; only a SIGKILL landing inside the write system call can
/// cut its last line (the kernel stops a file write between pages on a fatal signal).
#[derive(Debug)]
pub struct JsonlWriter<W: Write = BufWriter<File>> {
    out: W,
    phases: PhaseLayout,
    line: Vec<u8>,
    last_flush_ns: u64,
    lines: u64,
    /// `--export-http-trace`: each line ends with the record's `trace_data`.
    http_trace: Option<super::trace_data::TraceContext>,
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
            phases: PhaseLayout::default(),
            line: Vec::with_capacity(1024),
            last_flush_ns: now_ns,
            lines: 0,
            http_trace: None,
        }
    }

    /// `--export-http-trace`: ends each line with the record's `trace_data`
    /// ([`super::trace_data`]), the headers and addresses taken from `ctx`.
    #[must_use]
    pub fn with_http_trace(mut self, ctx: Option<super::trace_data::TraceContext>) -> Self {
        self.http_trace = ctx;
        self
    }

    /// Sets the run's phases (whether a warmup phase precedes profiling), which number the
    /// records' `phase_index`.
    #[must_use]
    pub fn with_phases(mut self, phases: PhaseLayout) -> Self {
        self.phases = phases;
        self
    }

    /// Lines written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Writes one record's line. Records with no metric and no error produce no line.
    ///
    /// The line is encoded straight into a reused buffer by [`encode_line`]; its bytes are the
    /// same as serializing [`record_line`] with `serde_json`.
    pub fn write(&mut self, f: &RecordFacts, m: &RecordMetrics) -> io::Result<()> {
        self.write_from(f, m, None)
    }

    /// [`JsonlWriter::write`], with the record's `trace_data` also holding what only `raw` has
    /// (headers, status, addresses).
    pub fn write_from(
        &mut self,
        f: &RecordFacts,
        m: &RecordMetrics,
        raw: Option<&RawRecord>,
    ) -> io::Result<()> {
        self.line.clear();
        let tag = self.phases.tag(f.phase, raw.map(|r| r.credit.phase_index));
        if !encode_line_in(&mut self.line, f, m, tag)? {
            return Ok(());
        }
        if let Some(ctx) = &self.http_trace {
            let wire = raw.map(|raw| super::trace_data::Wire { ctx, raw });
            super::trace_data::append_to_line(&mut self.line, f, wire)?;
        }
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

    /// Flushes now (before the aggregator sleeps through a quiet stretch).
    pub fn flush_now(&mut self, now_ns: u64) -> io::Result<()> {
        self.out.flush()?;
        self.last_flush_ns = now_ns;
        Ok(())
    }

    /// Flushes everything and returns the writer.
    pub fn close(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The phases of a run, as AIPerf numbers and names them in each record's metadata:
/// `phase_index` counts every configured phase from 0 in the order they run, `profiling_index`
/// counts profiling phases only and is absent from warmup records; `phase_name` is the phase's
/// name (`warmup` and `profiling` unless a config file names them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhaseLayout {
    /// Every phase, in the order they run: its kind and name. Empty: one profiling phase named
    /// `profiling`.
    pub phases: Vec<(Phase, String)>,
    /// The `phase_index` each phase writes when it is not its place in `phases` (empty: every
    /// phase writes its place): a config file's place of the phase. `None`: the phase writes
    /// none and has no per-phase files (agentic replay's own warmup, which AIPerf 0.13 puts in
    /// no place of the file's list).
    pub shown: Vec<Option<u32>>,
}

/// How one record's phase is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseTag<'a> {
    /// The record's kind of phase (`benchmark_phase`, `phase_kind`).
    pub phase: Phase,
    /// The phase's place in the run (warmups included): which phase it is.
    pub phase_index: u32,
    /// `phase_index` as written ([`PhaseLayout::shown`]; absent when `None`).
    pub shown_index: Option<u32>,
    /// `profiling_index` (absent from warmup records).
    pub profiling_index: Option<u32>,
    /// `phase_name`.
    pub name: &'a str,
}

impl PhaseLayout {
    /// A warmup named `warmup` then a profiling phase named `profiling` (`warmup`), else the
    /// profiling phase alone.
    pub fn simple(warmup: bool) -> Self {
        let mut phases = Vec::with_capacity(2);
        if warmup {
            phases.push((Phase::Warmup, "warmup".to_owned()));
        }
        phases.push((Phase::Profiling, "profiling".to_owned()));
        PhaseLayout {
            phases,
            shown: Vec::new(),
        }
    }

    /// The run has a warmup phase.
    pub fn has_warmup(&self) -> bool {
        self.phases.iter().any(|(k, _)| *k == Phase::Warmup)
    }

    /// How many phases the run has (one at least).
    pub fn len(&self) -> usize {
        self.phases.len().max(1)
    }

    /// Never empty: a run has one phase at least.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The tag of a record of `phase`; `phase_index` is the record's own (its credit's) when
    /// known and of that kind, else the first phase of its kind's.
    pub fn tag(&self, phase: Phase, phase_index: Option<u8>) -> PhaseTag<'_> {
        let index = (phase_index.map(usize::from))
            .filter(|&i| self.phases.get(i).is_some_and(|(k, _)| *k == phase))
            .or_else(|| self.phases.iter().position(|(k, _)| *k == phase));
        let profiling = phase == Phase::Profiling;
        match index {
            Some(i) => PhaseTag {
                phase,
                phase_index: i as u32,
                shown_index: if self.shown.is_empty() {
                    Some(i as u32)
                } else {
                    self.shown.get(i).copied().flatten()
                },
                profiling_index: profiling.then(|| {
                    (self.phases[..i].iter())
                        .filter(|(k, _)| *k == Phase::Profiling)
                        .count() as u32
                }),
                name: &self.phases[i].1,
            },
            None => PhaseTag {
                phase,
                phase_index: 0,
                shown_index: Some(0),
                profiling_index: profiling.then_some(0),
                name: phase.as_str(),
            },
        }
    }
}

/// [`record_line_in`] for a run without warmup.
pub fn record_line(f: &RecordFacts, m: &RecordMetrics) -> Option<Value> {
    record_line_in(f, m, &PhaseLayout::default())
}

/// The JSON object of one record, or `None` when it has neither metrics nor an error.
///
/// This is the reference form of a line: [`JsonlWriter`] does not build it (a `Value` tree
/// costs a map per object); tests and the `jsonl_record_value` bench compare [`encode_line`]
/// against it byte for byte.
pub fn record_line_in(f: &RecordFacts, m: &RecordMetrics, phases: &PhaseLayout) -> Option<Value> {
    let mut metrics = Map::new();
    for (id, v) in &m.values {
        let d = id.def();
        if d.hidden() || d.has(NO_INDIVIDUAL_RECORDS) {
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
    if let Some(s) = &f.source {
        md.insert("source_trace_id".into(), Value::from(&*s.trace));
        md.insert("source_outer_idx".into(), Value::from(s.outer));
        if let Some(i) = s.inner {
            md.insert("source_inner_idx".into(), Value::from(i));
        }
        md.insert("source_kind".into(), Value::from(s.kind));
    }
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
    let tag = phases.tag(f.phase, None);
    if let Some(i) = tag.shown_index {
        md.insert("phase_index".into(), Value::from(i));
    }
    if let Some(i) = tag.profiling_index {
        md.insert("profiling_index".into(), Value::from(i));
    }
    md.insert("phase_name".into(), Value::from(tag.name));
    md.insert("phase_kind".into(), Value::from(f.phase.as_str()));
    md.insert("was_cancelled".into(), Value::from(f.was_cancelled));
    md.insert("context_overflow_skip".into(), Value::from(false));
    md.insert(
        "agent_depth".into(),
        Value::from(f.lineage.as_ref().map_or(0, |l| l.depth)),
    );
    if let Some(parent) = f.lineage.as_ref().and_then(|l| l.parent) {
        md.insert(
            "parent_correlation_id".into(),
            Value::from(parent.to_string()),
        );
    }
    // A root session's root is itself.
    let root = f.lineage.as_ref().map_or(f.x_correlation_id, |l| l.root);
    md.insert("root_correlation_id".into(), Value::from(root.to_string()));
    // ringperf's own key, only when some read completed several SSE messages at once.
    if f.receive.coalesced_reads > 0 {
        md.insert(
            "coalesced_reads".into(),
            Value::from(f.receive.coalesced_reads),
        );
    }
    // ringperf's own key, only with `--network-latency-*`: the connection's kernel RTT.
    if let Some(us) = f.receive.tcp_rtt_us {
        md.insert("tcp_rtt_us".into(), Value::from(us));
    }
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

/// Appends the line of one record (without its newline) to `out`, encoding the JSON directly:
/// the bytes are those of `serde_json::to_writer(out, &record_line(f, m))`, with no `Value`
/// tree. Returns `Ok(false)` and appends nothing when the record has neither a shown metric
/// nor an error (no line).
pub fn encode_line(out: &mut Vec<u8>, f: &RecordFacts, m: &RecordMetrics) -> io::Result<bool> {
    encode_line_in(out, f, m, PhaseLayout::default().tag(f.phase, None))
}

/// [`encode_line`] for a run with these phases: the bytes of [`record_line_in`].
pub fn encode_line_in(
    out: &mut Vec<u8>,
    f: &RecordFacts,
    m: &RecordMetrics,
    tag: PhaseTag<'_>,
) -> io::Result<bool> {
    // Which shown metrics the record has, and whether one appears twice (never from
    // `record_metrics`, but a map keeps the first key's place and the last value, so a repeat
    // is encoded the same way).
    const _: () = assert!(REGISTRY.len() <= 256, "the seen-set is two u128");
    let mut seen = [0u128; 2];
    let mut repeated = false;
    for (id, _) in &m.values {
        if shown(id.def()) {
            let i = *id as usize;
            let bit = 1u128 << (i % 128);
            repeated |= seen[i / 128] & bit != 0;
            seen[i / 128] |= bit;
        }
    }
    if seen == [0, 0] && f.error.is_none() {
        return Ok(false);
    }
    let mut fmt = CompactFormatter;
    out.extend_from_slice(b"{\"metadata\":{\"session_num\":");
    fmt.write_u64(out, f.session_num)?;
    out.extend_from_slice(b",\"x_request_id\":");
    put_uuid(out, &f.x_request_id);
    out.extend_from_slice(b",\"x_correlation_id\":");
    put_uuid(out, &f.x_correlation_id);
    out.extend_from_slice(b",\"conversation_id\":");
    put_str(out, &f.conversation_id);
    out.extend_from_slice(b",\"turn_index\":");
    fmt.write_u32(out, f.turn_index)?;
    if let Some(s) = &f.source {
        out.extend_from_slice(b",\"source_trace_id\":");
        put_str(out, &s.trace);
        out.extend_from_slice(b",\"source_outer_idx\":");
        fmt.write_u32(out, s.outer)?;
        if let Some(i) = s.inner {
            out.extend_from_slice(b",\"source_inner_idx\":");
            fmt.write_u32(out, i)?;
        }
        out.extend_from_slice(b",\"source_kind\":");
        put_str(out, s.kind);
    }
    out.extend_from_slice(b",\"credit_issued_ns\":");
    fmt.write_u64(out, f.credit_issued_wall_ns)?;
    out.extend_from_slice(b",\"request_start_ns\":");
    fmt.write_u64(out, f.request_start_wall_ns)?;
    if let Some(ack) = f.request_ack_wall_ns {
        out.extend_from_slice(b",\"request_ack_ns\":");
        fmt.write_u64(out, ack)?;
    }
    out.extend_from_slice(b",\"request_end_ns\":");
    fmt.write_u64(out, f.request_end_wall_ns)?;
    out.extend_from_slice(b",\"worker_id\":\"worker_");
    fmt.write_u16(out, f.worker_id)?;
    out.extend_from_slice(b"\",\"record_processor_id\":");
    put_str(out, RECORD_PROCESSOR_ID);
    out.extend_from_slice(b",\"benchmark_phase\":");
    put_str(out, f.phase.as_str());
    if let Some(i) = tag.shown_index {
        out.extend_from_slice(b",\"phase_index\":");
        fmt.write_u32(out, i)?;
    }
    if let Some(i) = tag.profiling_index {
        out.extend_from_slice(b",\"profiling_index\":");
        fmt.write_u32(out, i)?;
    }
    out.extend_from_slice(b",\"phase_name\":");
    put_str(out, tag.name);
    out.extend_from_slice(b",\"phase_kind\":");
    put_str(out, f.phase.as_str());
    out.extend_from_slice(b",\"was_cancelled\":");
    fmt.write_bool(out, f.was_cancelled)?;
    out.extend_from_slice(b",\"context_overflow_skip\":false,\"agent_depth\":");
    fmt.write_u8(out, f.lineage.as_ref().map_or(0, |l| l.depth))?;
    if let Some(parent) = f.lineage.as_ref().and_then(|l| l.parent) {
        out.extend_from_slice(b",\"parent_correlation_id\":");
        put_uuid(out, &parent);
    }
    out.extend_from_slice(b",\"root_correlation_id\":");
    put_uuid(
        out,
        &f.lineage.as_ref().map_or(f.x_correlation_id, |l| l.root),
    );
    if f.receive.coalesced_reads > 0 {
        out.extend_from_slice(b",\"coalesced_reads\":");
        fmt.write_u32(out, f.receive.coalesced_reads)?;
    }
    if let Some(us) = f.receive.tcp_rtt_us {
        out.extend_from_slice(b",\"tcp_rtt_us\":");
        fmt.write_u32(out, us)?;
    }
    out.extend_from_slice(b"},\"metrics\":{");
    let mut first = true;
    for (i, (id, v)) in m.values.iter().enumerate() {
        let d = id.def();
        if !shown(d) {
            continue;
        }
        let v = if repeated {
            if m.values
                .get(..i)
                .is_some_and(|before| before.iter().any(|(p, _)| p == id))
            {
                continue;
            }
            last_value(m, *id).unwrap_or(v)
        } else {
            v
        };
        if !first {
            out.push(b',');
        }
        first = false;
        let (key, unit) = fragments(*id);
        out.extend_from_slice(key);
        put_value(out, d, v)?;
        out.extend_from_slice(unit);
    }
    out.push(b'}');
    if let Some(e) = &f.error {
        out.extend_from_slice(b",\"error\":{");
        if let Some(code) = e.code {
            out.extend_from_slice(b"\"code\":");
            fmt.write_u16(out, code)?;
            out.push(b',');
        }
        out.extend_from_slice(b"\"type\":");
        put_str(out, &e.kind);
        out.extend_from_slice(b",\"message\":");
        put_str(out, &e.message);
        out.push(b'}');
    }
    out.push(b'}');
    Ok(true)
}

/// The constant bytes around a metric's value in a line, `"tag":{"value":` and
/// `,"unit":"…"}`, encoded once per run by [`put_str`] (so escaped exactly as it escapes)
/// rather than scanned again for every record.
fn fragments(id: MetricId) -> (&'static [u8], &'static [u8]) {
    static FRAGMENTS: LazyLock<Vec<(Vec<u8>, Vec<u8>)>> = LazyLock::new(|| {
        REGISTRY
            .iter()
            .map(|d| {
                let mut key = Vec::new();
                put_str(&mut key, d.tag);
                key.extend_from_slice(b":{\"value\":");
                let mut unit = b",\"unit\":".to_vec();
                put_str(&mut unit, d.shown_unit().as_str());
                unit.push(b'}');
                (key, unit)
            })
            .collect()
    });
    // One entry per registry row, as `MetricId::def` indexes it.
    let (key, unit) = &FRAGMENTS[id as usize];
    (key, unit)
}

/// Whether a metric appears in per-record lines.
fn shown(d: &MetricDef) -> bool {
    !(d.hidden() || d.has(NO_INDIVIDUAL_RECORDS))
}

/// The last value of `id` in the record (what a map insert keeps).
fn last_value(m: &RecordMetrics, id: MetricId) -> Option<&MetricValue> {
    m.values
        .iter()
        .rev()
        .find(|(p, _)| *p == id)
        .map(|(_, v)| v)
}

/// A metric's value in its shown unit: integers stay integers unless converted for display.
fn put_value(out: &mut Vec<u8>, d: &MetricDef, v: &MetricValue) -> io::Result<()> {
    match v {
        MetricValue::Int(x) => put_int(out, d, *x),
        MetricValue::Float(x) => put_f64(out, d.to_display(*x)),
        MetricValue::List(l) => {
            out.push(b'[');
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                put_int(out, d, *x)?;
            }
            out.push(b']');
            Ok(())
        }
    }
}

fn put_int(out: &mut Vec<u8>, d: &MetricDef, x: i64) -> io::Result<()> {
    if d.display_unit.is_none() {
        CompactFormatter.write_i64(out, x)
    } else {
        put_f64(out, d.to_display(x as f64))
    }
}

/// A float the way `serde_json` writes one (its own formatter); NaN and infinities are `null`,
/// as `Number::from_f64` refuses them.
fn put_f64(out: &mut Vec<u8>, x: f64) -> io::Result<()> {
    if x.is_finite() {
        CompactFormatter.write_f64(out, x)
    } else {
        out.extend_from_slice(b"null");
        Ok(())
    }
}

/// A UUID as its hyphenated lowercase string (nothing in it needs escaping).
fn put_uuid(out: &mut Vec<u8>, id: &uuid::Uuid) {
    let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
    out.push(b'"');
    out.extend_from_slice(id.hyphenated().encode_lower(&mut buf).as_bytes());
    out.push(b'"');
}

/// A JSON string escaped as `serde_json` escapes it: `"`, `\\` and the control characters
/// below U+0020 (`\b \t \n \f \r` short, the rest `\u00xx` in lowercase hex); everything else,
/// DEL and non-ASCII included, is copied as is.
fn put_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let mut rest = s.as_bytes();
    while let Some(at) = rest
        .iter()
        .position(|&b| b < 0x20 || b == b'"' || b == b'\\')
    {
        let (run, tail) = rest.split_at(at);
        out.extend_from_slice(run);
        let Some((&b, tail)) = tail.split_first() else {
            break;
        };
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]),
        }
        rest = tail;
    }
    out.extend_from_slice(rest);
    out.push(b'"');
}

#[cfg(test)]
#[path = "jsonl_tests.rs"]
mod tests;
