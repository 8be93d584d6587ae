//! Chat / completions chunk extraction on an arbitrary body: `endpoint::parse_record` for both
//! endpoint kinds, with the body framed into SSE events by `sse::Framer` and as one non-SSE
//! event. No panic, and the record-level invariants the metrics rely on hold (a kept
//! speculative-decoding payload read as the aggregator reads it included); the chat parser's
//! strict scan of a whole body agrees with its full parser whenever it takes one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringperf_wire::endpoint::{EndpointKind, ParsedResponse, parse_record};
use ringperf_wire::record::{Event, EventForm, RawRecord, RequestError, testing};
use ringperf_wire::sse::Framer;

/// A record of `body` with `events` that ends after every event, as a worker's would.
fn record(body: &[u8], events: Vec<Event>, is_sse: bool, error: Option<RequestError>) -> RawRecord {
    let mut rec = testing::record(body.to_vec(), events, is_sse);
    rec.end_ns = u64::MAX;
    rec.error = error.map(Box::new);
    rec
}

/// One event per SSE message. Stamps never decrease, and `per_read` consecutive messages share
/// one (several messages completed by the same read, as a worker records them).
fn sse_events(body: &[u8], per_read: u64) -> Vec<Event> {
    let mut framer = Framer::new();
    let mut events = Vec::new();
    while let Some(span) = framer.next_message(body).or_else(|| framer.finish(body)) {
        let (Ok(start), Ok(end)) = (u32::try_from(span.start), u32::try_from(span.end)) else {
            break;
        };
        let read = events.len() as u64 / per_read;
        events.push(Event {
            stamp_ns: 1_000 + read * 1_000,
            start,
            end,
            lag_ns: None,
            form: EventForm::Raw,
        });
    }
    events
}

/// Two parses say the same thing (the response's internal scratch buffer aside).
fn assert_same(a: &ParsedResponse, b: &ParsedResponse) {
    assert_eq!(a.content_stamps_ns, b.content_stamps_ns);
    assert_eq!(a.first_output_stamp_ns, b.first_output_stamp_ns);
    assert_eq!(a.output_text, b.output_text);
    assert_eq!(a.reasoning_text, b.reasoning_text);
    assert_eq!(a.usage, b.usage);
    assert_eq!(a.error, b.error);
    assert_eq!(a.spec_decode, b.spec_decode);
    assert_eq!(a.spec_decode_responses, b.spec_decode_responses);
}

fn check(kind: EndpointKind, rec: &RawRecord, reused: &mut ParsedResponse) {
    let mut fresh = ParsedResponse::default();
    parse_record(kind, rec, &mut fresh);

    // Content stamps are event stamps, in arrival order.
    assert!(fresh.content_stamps_ns.len() <= rec.events.len());
    assert!(fresh.content_stamps_ns.is_sorted());
    for stamp in &fresh.content_stamps_ns {
        assert!(rec.events.iter().any(|e| e.stamp_ns == *stamp));
    }
    // The first output stamp is a content stamp, and there is one exactly when output text is.
    if let Some(first) = fresh.first_output_stamp_ns {
        assert!(fresh.content_stamps_ns.contains(&first));
    }
    assert_eq!(
        fresh.first_output_stamp_ns.is_some(),
        !fresh.output_text.is_empty()
    );
    // Reasoning or output text only comes with a content response.
    if !fresh.output_text.is_empty() || !fresh.reasoning_text.is_empty() {
        assert!(!fresh.content_stamps_ns.is_empty());
    }
    // The record's own error wins; no content response is always an error.
    match rec.error.as_deref() {
        Some(e) => assert_eq!(fresh.error.as_ref(), Some(e)),
        None if fresh.content_stamps_ns.is_empty() => assert!(fresh.error.is_some()),
        None => {}
    }

    // A speculative-decoding payload is counted when kept, and reading it never panics; one
    // that is accepted adds up.
    match &fresh.spec_decode {
        Some(p) => {
            assert!(fresh.spec_decode_responses > 0);
            if let Ok(s) = ringperf_wire::record::spec_decode::SpecDecode::from_vllm(p) {
                assert_eq!(s.histogram.iter().map(|(_, c)| c).sum::<u64>(), s.steps);
                assert!(s.accepted <= s.drafted);
                assert!(s.histogram.iter().all(|(_, c)| *c > 0));
            }
        }
        None => assert_eq!(fresh.spec_decode_responses, 0),
    }

    // A reused response (holding the previous parse) gives the same answer as a fresh one.
    parse_record(kind, rec, reused);
    assert_same(reused, &fresh);
}

fuzz_target!(|data: &[u8]| {
    // First byte: how many messages share a stamp (1..=4) and whether the record carries its
    // own error; the rest is the body.
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let per_read = u64::from(mode & 3) + 1;
    let error = (mode & 4 != 0).then(|| RequestError::new(Some(500), "Internal Server Error", "x"));
    let Ok(len) = u32::try_from(body.len()) else {
        return;
    };

    let sse = record(body, sse_events(body, per_read), true, error.clone());
    let whole = Event {
        stamp_ns: 7_000,
        start: 0,
        end: len,
        lag_ns: None,
        form: EventForm::Raw,
    };
    let json = record(body, vec![whole], false, error);

    let mut reused = ParsedResponse::default();
    for kind in [EndpointKind::Chat, EndpointKind::Completions] {
        check(kind, &sse, &mut reused);
        check(kind, &json, &mut reused);
    }

    // The aggregator's strict scan of a whole chat body, when it takes the body, reads it as
    // the full parser does.
    if let (Some(fast), full) = ringperf_wire::endpoint::kinds::chat_body_readings(body) {
        assert_same(&fast, &full);
    }

    // The compact record a worker would make of the same SSE body parses as the raw one.
    if let Some(extract) = EndpointKind::Chat.descriptor().compact {
        let mut compact = sse.clone();
        compact.body.clear();
        for e in &mut compact.events {
            let message = sse.event_bytes(e);
            let start = compact.text.len();
            e.form = extract(message, &mut compact.text).unwrap_or_else(|| {
                compact.text.truncate(start);
                compact.text.extend_from_slice(message);
                EventForm::Kept
            });
            e.start = start as u32;
            e.end = compact.text.len() as u32;
        }
        let mut want = ParsedResponse::default();
        parse_record(EndpointKind::Chat, &sse, &mut want);
        parse_record(EndpointKind::Chat, &compact, &mut reused);
        let facts = |p: &ParsedResponse| {
            (
                p.content_stamps_ns.clone(),
                p.first_output_stamp_ns,
                p.output_text.clone(),
                p.reasoning_text.clone(),
                p.usage.clone(),
                p.error.clone(),
            )
        };
        assert_eq!(
            facts(&reused),
            facts(&want),
            "a compact record parses as the raw one"
        );
    }
});
