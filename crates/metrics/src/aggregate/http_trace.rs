//! AIPerf's 14 HTTP trace metrics (`http_trace_metrics.py`, k6 naming): per-record phases of
//! the HTTP exchange from the stamps the worker takes in its one I/O path
//! ([`ringperf_wire::record::HttpTrace`]).
//!
//! AIPerf reads them from aiohttp's trace events; ringperf has the same instants where they
//! exist and says where they do not (`docs/metrics.md`):
//! - `request_start`: the attempt began, before the connection was acquired (aiohttp fires
//!   `on_request_start` before it acquires one too, so on a fresh connection `http_req_sending`
//!   includes the connect, in AIPerf as here);
//! - blocked: ringperf never waits for a pool slot (a request with no idle connection opens
//!   one), so it is 0, as AIPerf's is when aiohttp did not queue;
//! - DNS: names are resolved once, when the run is configured, so it is 0, as AIPerf's is for
//!   an IP literal, a DNS cache hit or a reused connection;
//! - connecting: fresh connection start → ready, TLS handshake included; 0 when reused;
//! - a response chunk is a read that brought decoded body bytes (aiohttp: an `iter_any` yield
//!   of a stream); a non-streamed body is one chunk received when it completed, as aiohttp's
//!   `read()` reports it.

use super::registry::MetricId;
use ringperf_wire::record::HttpTrace;

/// The trace as AIPerf's trace data would hold it: a non-streamed body (aiohttp `read()`) is
/// one chunk of the whole decoded body (empty or not), received when the body completed
/// (`end_ns`); a stream keeps its per-read counts, and so does a request never written.
pub fn as_aiperf_reads(trace: HttpTrace, is_sse: bool, body_len: usize, end_ns: u64) -> HttpTrace {
    if is_sse || trace.send_end_ns.is_none() {
        return trace;
    }
    HttpTrace {
        response_start_ns: Some(end_ns),
        response_end_ns: Some(end_ns),
        response_chunks: 1,
        response_bytes: body_len as u64,
        ..trace
    }
}

/// `later − earlier` in ns, or `None` when the stamps are out of order (AIPerf refuses the
/// value then: the metric is absent from the record).
fn span(earlier: u64, later: u64) -> Option<i64> {
    later
        .checked_sub(earlier)
        .and_then(|d| i64::try_from(d).ok())
}

/// Calls `push` with each HTTP trace metric of a valid record (an integer in the metric's base
/// unit: ns, bytes, a count, or 0/1), in registry order; a phase whose stamps are missing or out
/// of order is `None`, and the sums count it as 0 (AIPerf's `record_metrics.get(tag, 0)`).
pub fn push_metrics(t: &HttpTrace, mut push: impl FnMut(MetricId, Option<i64>)) {
    use MetricId as M;
    let blocked = Some(0);
    let dns = Some(0);
    let connecting = if t.reused {
        Some(0)
    } else {
        t.connect_ns.and_then(|(start, ready)| span(start, ready))
    };
    let sending = t.send_end_ns.and_then(|end| span(t.request_start_ns, end));
    let waiting = t
        .send_end_ns
        .zip(t.response_start_ns)
        .and_then(|(sent, first)| span(sent, first));
    let receiving = match t.response_chunks {
        0 => None,
        1 => Some(0),
        _ => t
            .response_start_ns
            .zip(t.response_end_ns)
            .and_then(|(first, last)| span(first, last)),
    };
    let duration = t
        .response_end_ns
        .and_then(|end| span(t.request_start_ns, end));
    let sum = |parts: &[Option<i64>]| parts.iter().map(|p| p.unwrap_or(0)).sum::<i64>();
    let overhead = sum(&[blocked, dns, connecting]);
    let total = sum(&[blocked, dns, connecting, sending, waiting, receiving]);

    push(M::HttpReqBlocked, blocked);
    push(M::HttpReqDnsLookup, dns);
    push(M::HttpReqConnecting, connecting);
    push(M::HttpReqSending, sending);
    push(M::HttpReqWaiting, waiting);
    push(M::HttpReqReceiving, receiving);
    push(M::HttpReqConnectionReused, Some(i64::from(t.reused)));
    push(M::HttpReqDataSent, Some(t.request_bytes as i64));
    push(M::HttpReqChunksSent, Some(i64::from(t.request_chunks)));
    push(M::HttpReqDataReceived, Some(t.response_bytes as i64));
    push(M::HttpReqChunksReceived, Some(i64::from(t.response_chunks)));
    push(M::HttpReqConnectionOverhead, Some(overhead));
    push(M::HttpReqDuration, duration);
    push(M::HttpReqTotal, Some(total));
}

#[cfg(test)]
mod tests {
    use super::*;
    use MetricId as M;

    fn metrics(t: &HttpTrace) -> Vec<(MetricId, i64)> {
        let mut out = Vec::new();
        push_metrics(t, |id, v| {
            if let Some(v) = v {
                out.push((id, v));
            }
        });
        out
    }

    fn get(m: &[(MetricId, i64)], id: MetricId) -> Option<i64> {
        m.iter().find(|(i, _)| *i == id).map(|(_, v)| *v)
    }

    /// A fresh connection: start 1_000, connect 1_100 → 1_600, written at 1_900, body reads
    /// at 5_000, 6_000 and 9_000.
    fn fresh() -> HttpTrace {
        HttpTrace {
            request_start_ns: 1_000,
            connect_ns: Some((1_100, 1_600)),
            reused: false,
            send_end_ns: Some(1_900),
            request_bytes: 239,
            request_chunks: 1,
            response_start_ns: Some(5_000),
            response_end_ns: Some(9_000),
            response_chunks: 3,
            response_bytes: 2_290,
            local: None,
        }
    }

    #[test]
    fn fresh_connection_formulas() {
        let m = metrics(&fresh());
        assert_eq!(get(&m, M::HttpReqBlocked), Some(0));
        assert_eq!(get(&m, M::HttpReqDnsLookup), Some(0));
        assert_eq!(get(&m, M::HttpReqConnecting), Some(500));
        // From the attempt's start (before the connect) to the write's end, as aiohttp.
        assert_eq!(get(&m, M::HttpReqSending), Some(900));
        assert_eq!(get(&m, M::HttpReqWaiting), Some(3_100));
        assert_eq!(get(&m, M::HttpReqReceiving), Some(4_000));
        assert_eq!(get(&m, M::HttpReqDuration), Some(8_000));
        assert_eq!(get(&m, M::HttpReqConnectionReused), Some(0));
        assert_eq!(get(&m, M::HttpReqDataSent), Some(239));
        assert_eq!(get(&m, M::HttpReqChunksSent), Some(1));
        assert_eq!(get(&m, M::HttpReqDataReceived), Some(2_290));
        assert_eq!(get(&m, M::HttpReqChunksReceived), Some(3));
        assert_eq!(get(&m, M::HttpReqConnectionOverhead), Some(500));
        // 0 + 0 + 500 + 900 + 3_100 + 4_000.
        assert_eq!(get(&m, M::HttpReqTotal), Some(8_500));
        assert_eq!(m.len(), 14);
    }

    #[test]
    fn reused_connection_has_no_connect() {
        let t = HttpTrace {
            connect_ns: None,
            reused: true,
            ..fresh()
        };
        let m = metrics(&t);
        assert_eq!(get(&m, M::HttpReqConnecting), Some(0));
        assert_eq!(get(&m, M::HttpReqConnectionReused), Some(1));
        assert_eq!(get(&m, M::HttpReqConnectionOverhead), Some(0));
        assert_eq!(get(&m, M::HttpReqTotal), Some(900 + 3_100 + 4_000));
    }

    #[test]
    fn one_chunk_receives_in_no_time_and_missing_stamps_leave_phases_out() {
        let t = HttpTrace {
            response_chunks: 1,
            response_start_ns: Some(9_000),
            ..fresh()
        };
        assert_eq!(get(&metrics(&t), M::HttpReqReceiving), Some(0));
        // Nothing written, nothing read: no sending, waiting, receiving or duration; the sums
        // count them as 0.
        let t = HttpTrace {
            send_end_ns: None,
            response_start_ns: None,
            response_end_ns: None,
            response_chunks: 0,
            response_bytes: 0,
            ..fresh()
        };
        let m = metrics(&t);
        for id in [
            M::HttpReqSending,
            M::HttpReqWaiting,
            M::HttpReqReceiving,
            M::HttpReqDuration,
        ] {
            assert_eq!(get(&m, id), None, "{}", id.def().tag);
        }
        assert_eq!(get(&m, M::HttpReqTotal), Some(500));
        // Out-of-order stamps are refused, never negative.
        let t = HttpTrace {
            response_start_ns: Some(1_800),
            ..fresh()
        };
        assert_eq!(get(&metrics(&t), M::HttpReqWaiting), None);
    }

    #[test]
    fn a_non_streamed_body_is_one_chunk_at_its_end() {
        let t = as_aiperf_reads(fresh(), false, 1_234, 9_500);
        assert_eq!(t.response_chunks, 1);
        assert_eq!(t.response_bytes, 1_234);
        assert_eq!(t.response_start_ns, Some(9_500));
        let m = metrics(&t);
        assert_eq!(get(&m, M::HttpReqWaiting), Some(9_500 - 1_900));
        assert_eq!(get(&m, M::HttpReqReceiving), Some(0));
        assert_eq!(get(&m, M::HttpReqDuration), Some(9_500 - 1_000));
        // A stream keeps its reads.
        assert_eq!(as_aiperf_reads(fresh(), true, 1_234, 9_500), fresh());
    }
}
