//! SSE framer and message parser on arbitrary bytes: no panic, spans ordered and in range.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringperf::sse::{Framer, Message};

fuzz_target!(|data: &[u8]| {
    let mut framer = Framer::new();
    let mut scratch = Vec::new();
    let mut last_end = 0;
    while let Some(span) = framer.next_message(data).or_else(|| framer.finish(data)) {
        assert!(last_end <= span.start && span.start < span.end && span.end <= data.len());
        last_end = span.end;
        let message = Message::parse(&data[span]);
        let _ = message.data(&mut scratch);
        let _ = (
            message.event(),
            message.comment(),
            message.is_error_event(),
            message.is_done(),
        );
        let _ = message.data_values().count();
    }
    let whole = Message::parse(data);
    let _ = whole.data(&mut scratch);
});
