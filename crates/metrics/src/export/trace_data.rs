//! `trace_data` of a JSONL record (`--export-http-trace`), in the shape of AIPerf 0.13's
//! `AioHttpTraceDataExport`: wall-clock epoch ns stamps, headers, socket addresses, byte and
//! chunk counts, and the computed durations, in AIPerf's key order. As AIPerf, a field without
//! a value is left out; ringperf leaves out what it does not record (DNS and pool-wait stamps).
//! `request_chunks` and `response_chunks` are empty lists, as AIPerf writes them unless it
//! collects per-chunk stamps.
//!
//! - `request_headers`: the headers sent, `Host` first and `Content-Length` last as aiohttp
//!   lists them, credentials redacted by AIPerf's rule (the raw export's list,
//!   [`SentHeaders::put`]). Present once the request was written.
//! - `request_headers_sent_ns`: ringperf writes head and body in one write, so the head is on
//!   the wire when that write completes: the write-completion stamp (`request_send_end_ns`).
//! - `response_status_code`, `response_reason`, `response_headers`: the final response head as
//!   the server sent it: values trimmed, a repeated name keeps its last value (as
//!   `dict(response.headers)`), never redacted (AIPerf does not redact them either); a name
//!   aiohttp's parser knows in aiohttp's spelling (`server` → `Server`), others as sent.
//! - `local_ip`/`local_port`: the connection's socket, read once when it connected;
//!   `remote_ip`/`remote_port`: the `--url` address it connected to.

use std::net::SocketAddr;

use serde_json::{Map, Value};

use super::headers::{SentHeaders, aiohttp_name};
use ringperf_wire::record::{RawRecord, RecordFacts};

/// What `trace_data` needs besides the record: the headers every request carries and where
/// each `--url` went.
#[derive(Clone, Debug, Default)]
pub struct TraceContext {
    /// The headers sent with every request and the id headers (shared with the raw export).
    pub headers: SentHeaders,
    /// Per `--url` (`RawRecord::url_index`): the `Host` header sent and the address connected to.
    pub targets: Vec<(String, SocketAddr)>,
}

/// The request and response a record came from, for the fields its facts do not hold.
#[derive(Clone, Copy, Debug)]
pub struct Wire<'a> {
    /// The run's headers and targets.
    pub ctx: &'a TraceContext,
    /// The worker's record of the request.
    pub raw: &'a RawRecord,
}

/// The record's `trace_data` object, or `None` when it has no trace. Without `wire`, the
/// headers, status and addresses are left out.
pub fn trace_data(f: &RecordFacts, wire: Option<Wire<'_>>) -> Option<Value> {
    let t = f.trace.as_ref()?;
    let head = wire
        .filter(|w| !w.raw.response_head.is_empty())
        .map(|w| response_head(&w.raw.response_head));
    let (reason, response_headers) = head.unzip();
    let target = wire.and_then(|w| w.ctx.targets.get(usize::from(w.raw.url_index)));
    // A connection existed: opened for this attempt, or taken from the pool.
    let remote = target
        .filter(|_| t.connect_ns.is_some() || t.reused)
        .map(|(_, addr)| *addr);
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
    // The head went out with the body, in the write that completed at `send_end_ns`.
    let sent = t.send_end_ns.filter(|_| wire.is_some());
    put(
        "request_headers",
        wire.zip(sent)
            .map(|(w, _)| request_headers(w, target, t.request_bytes)),
    );
    put("request_headers_sent_ns", sent.map(wall));
    put("request_chunks", Some(Value::Array(Vec::new())));
    put("request_send_end_ns", t.send_end_ns.map(wall));
    put("request_chunks_count", Some(t.request_chunks.into()));
    put("request_bytes_total", Some(t.request_bytes.into()));
    put(
        "response_status_code",
        wire.map(|w| w.raw.status)
            .filter(|&s| s != 0)
            .map(Value::from),
    );
    put("response_reason", reason.map(Value::from));
    put("response_receive_start_ns", t.response_start_ns.map(wall));
    put("response_headers", response_headers.map(Value::Object));
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
    put("local_ip", t.local.map(|a| a.ip().to_string().into()));
    put("local_port", t.local.map(|a| a.port().into()));
    put("remote_ip", remote.map(|a| a.ip().to_string().into()));
    put("remote_port", remote.map(|a| a.port().into()));
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

/// The request headers as sent: `Host`, the every-request and id headers, `Content-Length`
/// (the body bytes the completed write carried).
fn request_headers(w: Wire<'_>, target: Option<&(String, SocketAddr)>, body_len: u64) -> Value {
    let mut h = Map::new();
    if let Some((host, _)) = target {
        h.insert("Host".into(), Value::from(host.clone()));
    }
    w.ctx
        .headers
        .put(&mut h, &w.raw.request_id, &w.raw.correlation_id);
    h.insert("Content-Length".into(), Value::from(body_len.to_string()));
    Value::Object(h)
}

/// The reason phrase and the headers of a response head (`HTTP/1.1 200 OK\r\nName: v…`).
fn response_head(head: &[u8]) -> (String, Map<String, Value>) {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    // `HTTP/1.1 SP status SP reason`: the reason is everything after the second space.
    let reason = status_line
        .splitn(3, ' ')
        .nth(2)
        .unwrap_or_default()
        .to_string();
    let mut headers = Map::new();
    for line in lines.take_while(|l| !l.is_empty()) {
        if let Some((name, value)) = line.split_once(':') {
            headers.insert(
                aiohttp_name(name).to_string(),
                Value::from(value.trim_matches([' ', '\t'])),
            );
        }
    }
    (reason, headers)
}

/// Appends `,"trace_data":{…}` to an encoded JSONL object (`line` ends with its closing `}`).
pub fn append_to_line(
    line: &mut Vec<u8>,
    f: &RecordFacts,
    wire: Option<Wire<'_>>,
) -> std::io::Result<()> {
    let Some(v) = trace_data(f, wire) else {
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
    use ringperf_wire::record::HttpTrace;

    #[test]
    fn stamps_are_wall_clock_and_durations_as_aiperf_computes_them() {
        let mut f = crate::aggregate::testing::facts();
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
            local: None,
        });
        let v = trace_data(&f, None).unwrap();
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
        append_to_line(&mut line, &f, None).unwrap();
        let back: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(back["trace_data"], v);
        // No trace: nothing.
        f.trace = None;
        let mut line = b"{}".to_vec();
        append_to_line(&mut line, &f, None).unwrap();
        assert_eq!(line, b"{}");
    }

    #[test]
    fn wire_fields_come_from_the_record_and_the_run() {
        let mut f = crate::aggregate::testing::facts();
        let local: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        f.trace = Some(HttpTrace {
            request_start_ns: 900,
            reused: true,
            send_end_ns: Some(1_100),
            request_bytes: 7,
            request_chunks: 1,
            response_start_ns: Some(2_000),
            response_end_ns: Some(3_000),
            response_chunks: 2,
            local: Some(local),
            ..HttpTrace::default()
        });
        let mut raw = ringperf_wire::record::testing::record(Vec::new(), Vec::new(), false);
        raw.status = 404;
        raw.response_head = b"HTTP/1.1 404 Not Found\r\nX-A: 1\r\nx-b:\t two \r\nX-A: 3\r\n\
            content-type: text/plain\r\n\r\n"
            .as_slice()
            .into();
        let ctx = TraceContext {
            headers: SentHeaders {
                headers: vec![("Authorization".into(), "Bearer k".into())],
                request_id_header: "X-Request-ID".into(),
                correlation_id_header: "X-Correlation-ID".into(),
                correlation_copies: Vec::new(),
            },
            targets: vec![("h:9".into(), "10.0.0.2:9".parse().unwrap())],
        };
        let v = trace_data(
            &f,
            Some(Wire {
                ctx: &ctx,
                raw: &raw,
            }),
        )
        .unwrap();
        assert_eq!(v["response_status_code"], 404);
        assert_eq!(v["response_reason"], "Not Found");
        // Names as sent, or aiohttp's spelling; a repeated name keeps its first place and last
        // value.
        assert_eq!(
            v["response_headers"],
            serde_json::json!({"X-A": "3", "x-b": "two", "Content-Type": "text/plain"})
        );
        let sent = &v["request_headers"];
        assert_eq!(sent["Host"], "h:9");
        assert_eq!(sent["Authorization"], "<redacted>");
        assert_eq!(sent["X-Request-ID"], raw.request_id.to_string());
        assert_eq!(sent["Content-Length"], "7");
        assert_eq!(v["request_headers_sent_ns"], v["request_send_end_ns"]);
        assert_eq!(v["local_port"], 40000);
        assert_eq!(v["remote_ip"], "10.0.0.2");
        assert_eq!(v["remote_port"], 9);
        // AIPerf's key order.
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
        assert!(at("request_send_start_ns") < at("request_headers"));
        assert!(at("request_headers_sent_ns") < at("request_chunks"));
        assert!(at("request_bytes_total") < at("response_status_code"));
        assert!(at("response_receive_start_ns") < at("response_headers"));
        assert!(at("connection_reused_ns") < at("local_ip"));
        assert!(at("remote_port") < at("sending_ns"));
        // Never written: no headers, no sent stamp, no address of a connection never made.
        f.trace = Some(HttpTrace::default());
        raw.response_head = Box::default();
        raw.status = 0;
        let v = trace_data(
            &f,
            Some(Wire {
                ctx: &ctx,
                raw: &raw,
            }),
        )
        .unwrap();
        for k in [
            "request_headers",
            "request_headers_sent_ns",
            "response_status_code",
        ] {
            assert!(v.get(k).is_none(), "{k}");
        }
        for k in [
            "response_reason",
            "response_headers",
            "local_ip",
            "remote_ip",
        ] {
            assert!(v.get(k).is_none(), "{k}");
        }
    }
}
