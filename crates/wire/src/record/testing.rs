//! Record builders for tests, benches and the fuzz crate (every unit test, and feature
//! `testing` for the others). They build what a worker would hand over, without a worker.

use super::{Credit, Event, EventForm, Phase, RawRecord};

/// A successful profiling request (index 0, nil ids, status 200): sent at 0 ns, head at 1 ns,
/// ended at 1,000 ns, carrying `body` and its `events`. Fields are public; change what a test
/// needs.
#[must_use]
pub fn record(body: Vec<u8>, events: Vec<Event>, is_sse: bool) -> RawRecord {
    RawRecord {
        credit: Credit {
            phase: Phase::Profiling,
            phase_index: 0,
            index: 0,
            conversation: 0,
            turn: 0,
            cancel_after_ns: None,
            max_turns: None,
            intended_ns: 0,
        },
        worker_id: 0,
        url_index: 0,
        request_id: uuid::Uuid::nil(),
        correlation_id: uuid::Uuid::nil(),
        start_ns: 0,
        head_ns: Some(1),
        end_ns: 1_000,
        status: 200,
        is_sse,
        body,
        text: Vec::new(),
        events,
        coalesced_reads: 0,
        error: None,
        conn_reused: false,
        bytes_sent: 0,
        bytes_received: 0,
        was_cancelled: false,
        request_body: None,
        marker: None,
        trace: None,
        response_head: Box::default(),
        tcp_rtt_us: None,
        lineage: None,
    }
}

/// An SSE response framed the simple way (messages end at a blank line `\n\n`; a last message
/// without one runs to the end), one event per message spanning it without its terminator,
/// stamped 100, 200, 300 ns, … — independent of [`crate::sse::Framer`], so tests of the
/// extraction do not lean on the framer they sit above.
#[must_use]
pub fn sse_record(body: &[u8]) -> RawRecord {
    let mut events = Vec::new();
    let mut start = 0usize;
    let mut stamp = 0u64;
    while start < body.len() {
        let rest = &body[start..];
        let (len, skip) = match rest.windows(2).position(|w| w == b"\n\n") {
            Some(i) => (i, 2),
            None => (rest.len(), 0),
        };
        stamp += 100;
        events.push(Event {
            stamp_ns: stamp,
            start: u32::try_from(start).unwrap_or(u32::MAX),
            end: u32::try_from(start + len).unwrap_or(u32::MAX),
            lag_ns: None,
            form: EventForm::Raw,
        });
        start += len + skip;
    }
    record(body.to_vec(), events, true)
}

/// A non-streaming response: the whole body is one event, stamped 500 ns.
#[must_use]
pub fn json_record(body: &[u8]) -> RawRecord {
    let event = Event {
        stamp_ns: 500,
        start: 0,
        end: u32::try_from(body.len()).unwrap_or(u32::MAX),
        lag_ns: None,
        form: EventForm::Raw,
    };
    record(body.to_vec(), vec![event], false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_framing_spans_messages_without_terminators() {
        let body = b"data: a\n\ndata: bb\n\ndata: c";
        let r = sse_record(body);
        let spans: Vec<&[u8]> = r
            .events
            .iter()
            .map(|e| &body[e.start as usize..e.end as usize])
            .collect();
        assert_eq!(spans, [&b"data: a"[..], b"data: bb", b"data: c"]);
        let stamps: Vec<u64> = r.events.iter().map(|e| e.stamp_ns).collect();
        assert_eq!(stamps, [100, 200, 300]);
        assert!(r.is_sse && r.error.is_none());
        let j = json_record(b"{}");
        assert_eq!((j.events.len(), j.events[0].end, j.is_sse), (1, 2, false));
    }
}
