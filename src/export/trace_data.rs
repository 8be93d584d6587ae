//! `trace_data` of a JSONL record (`--export-http-trace`), in the shape of AIPerf 0.13's
//! `AioHttpTraceDataExport`: wall-clock epoch ns stamps, byte and chunk counts, and the computed
//! durations, in AIPerf's key order. As AIPerf, a field without a value is left out; ringperf
//! leaves out what it does not record (request and response headers, the reason phrase, the
//! status code, socket addresses, DNS and pool-wait stamps). `request_chunks` and
//! `response_chunks` are empty lists, as AIPerf writes them unless it collects per-chunk
//! stamps.

use serde_json::{Map, Value};

use crate::record::RecordFacts;

/// The record's `trace_data` object, or `None` when it has no trace.
pub fn trace_data(f: &RecordFacts) -> Option<Value> {
    let t = f.trace.as_ref()?;
    // Monotonic → wall: the record's own anchor pair (the run's clock is one offset).
    let offset = f.request_start_wall_ns.wrapping_sub(f.start_ns);
    let wall = |mono: u64| Value::from(mono.wrapping_add(offset));
    let span = |a: u64, b: u64| b.checked_sub(a).map(Value::from);
    let mut m = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            m.insert(k.to_owned(), v);
        }
    };
    put("trace_type", Some("aiohttp".into()));
    put("request_send_start_ns", Some(wall(t.request_start_ns)));
    put("request_chunks", Some(Value::Array(Vec::new())));
    put("request_send_end_ns", t.send_end_ns.map(wall));
    put("request_chunks_count", Some(t.request_chunks.into()));
    put("request_bytes_total", Some(t.request_bytes.into()));
    put("response_receive_start_ns", t.response_start_ns.map(wall));
    put(
        "response_headers_received_ns",
        f.request_ack_wall_ns.map(Value::from),
    );
    put("response_chunks", Some(Value::Array(Vec::new())));
    put("response_chunks_count", Some(t.response_chunks.into()));
    put("response_bytes_total", Some(t.response_bytes.into()));
    put("response_receive_end_ns", t.response_end_ns.map(wall));
    put("tcp_connect_start_ns", t.connect_ns.map(|(s, _)| wall(s)));
    put("tcp_connect_end_ns", t.connect_ns.map(|(_, e)| wall(e)));
    // The pooled connection was taken right after the attempt began.
    put(
        "connection_reused_ns",
        t.reused.then(|| wall(t.request_start_ns)),
    );
    put(
        "sending_ns",
        t.send_end_ns.and_then(|e| span(t.request_start_ns, e)),
    );
    put(
        "waiting_ns",
        t.send_end_ns
            .zip(t.response_start_ns)
            .and_then(|(s, r)| span(s, r)),
    );
    put(
        "receiving_ns",
        match t.response_chunks {
            0 => None,
            1 => Some(0.into()),
            _ => t
                .response_start_ns
                .zip(t.response_end_ns)
                .and_then(|(s, e)| span(s, e)),
        },
    );
    put(
        "duration_ns",
        t.response_end_ns.and_then(|e| span(t.request_start_ns, e)),
    );
    put("connecting_ns", t.connect_ns.and_then(|(s, e)| span(s, e)));
    Some(Value::Object(m))
}

/// Appends `,"trace_data":{…}` to an encoded JSONL object (`line` ends with its closing `}`).
pub fn append_to_line(line: &mut Vec<u8>, f: &RecordFacts) -> std::io::Result<()> {
    let Some(v) = trace_data(f) else {
        return Ok(());
    };
    if line.last() != Some(&b'}') {
        return Ok(());
    }
    line.pop();
    line.extend_from_slice(b",\"trace_data\":");
    serde_json::to_writer(&mut *line, &v)?;
    line.push(b'}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::HttpTrace;

    #[test]
    fn stamps_are_wall_clock_and_durations_as_aiperf_computes_them() {
        let mut f = crate::aggregate::metrics::tests::facts();
        // start_ns 1_000 ↔ wall …100: offset …100 − 1_000.
        f.trace = Some(HttpTrace {
            request_start_ns: 900,
            connect_ns: Some((950, 1_000)),
            reused: false,
            send_end_ns: Some(1_100),
            request_bytes: 239,
            request_chunks: 1,
            response_start_ns: Some(5_000),
            response_end_ns: Some(20_000),
            response_chunks: 9,
            response_bytes: 2_290,
        });
        let v = trace_data(&f).unwrap();
        let base = f.request_start_wall_ns - 1_000;
        assert_eq!(v["trace_type"], "aiohttp");
        assert_eq!(v["request_send_start_ns"], base + 900);
        assert_eq!(v["tcp_connect_end_ns"], base + 1_000);
        assert_eq!(v["response_receive_end_ns"], base + 20_000);
        assert_eq!(v["request_bytes_total"], 239);
        assert_eq!(v["response_chunks_count"], 9);
        assert_eq!(v["sending_ns"], 200);
        assert_eq!(v["waiting_ns"], 3_900);
        assert_eq!(v["receiving_ns"], 15_000);
        assert_eq!(v["duration_ns"], 19_100);
        assert_eq!(v["connecting_ns"], 50);
        assert!(v.get("connection_reused_ns").is_none());
        assert!(v.get("request_headers").is_none());
        // Appended as the line's last key.
        let mut line = br#"{"metadata":{},"metrics":{}}"#.to_vec();
        append_to_line(&mut line, &f).unwrap();
        let back: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(back["trace_data"], v);
        // No trace: nothing.
        f.trace = None;
        let mut line = b"{}".to_vec();
        append_to_line(&mut line, &f).unwrap();
        assert_eq!(line, b"{}");
    }
}
