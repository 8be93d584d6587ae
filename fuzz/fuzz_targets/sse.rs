//! SSE framer and field parser on arbitrary bytes: no panic, spans ordered and in range, and
//! every message's data (AIPerf's field rules, `sse::message_data`) in range, stripped, never
//! empty and never `[DONE]`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringperf_wire::sse::{DataRef, Framer, MessageData, message_data};

fn check(message: &[u8], scratch: &mut Vec<u8>) {
    match message_data(message, scratch) {
        MessageData::Json(at) => {
            let (start, end, len) = match at {
                DataRef::Message(s, e) => (s, e, message.len()),
                DataRef::Scratch(s, e) => (s, e, scratch.len()),
            };
            assert!(start < end && end <= len);
            let json = at.bytes(message, scratch);
            assert!(!json.is_empty() && json != b"[DONE]");
            assert_eq!(json, json.trim_ascii());
        }
        MessageData::Error(text) => assert!(text.starts_with("Error occurred in SSE response: ")),
        MessageData::Done => assert!(message.windows(6).any(|w| w == b"[DONE]")),
        MessageData::Skip => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let mut framer = Framer::new();
    let mut scratch = Vec::new();
    let mut last_end = 0;
    while let Some(span) = framer.next_message(data).or_else(|| framer.finish(data)) {
        assert!(last_end <= span.start && span.start < span.end && span.end <= data.len());
        last_end = span.end;
        check(&data[span], &mut scratch);
    }
    check(data, &mut scratch);
});
