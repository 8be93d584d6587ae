//! Differential: the framer gives identical spans whether the body arrives whole or split at
//! fuzzer-chosen points (and whether the buffer is compacted between reads).
#![no_main]

use std::ops::Range;

use libfuzzer_sys::fuzz_target;
use ringperf_wire::sse::Framer;

fn frame(body: &[u8], cuts: &[usize], compact: bool) -> Vec<Range<usize>> {
    let mut framer = Framer::new();
    let mut buf = Vec::new();
    let mut spans = Vec::new();
    let mut dropped = 0;
    let mut start = 0;
    for &end in cuts.iter().chain(std::iter::once(&body.len())) {
        let end = end.clamp(start, body.len());
        buf.extend_from_slice(&body[start..end]);
        start = end;
        while let Some(s) = framer.next_message(&buf) {
            spans.push(s.start + dropped..s.end + dropped);
        }
        if compact {
            dropped += framer.compact(&mut buf);
        }
    }
    while let Some(s) = framer.finish(&buf) {
        spans.push(s.start + dropped..s.end + dropped);
    }
    spans
}

fuzz_target!(|data: &[u8]| {
    // The first byte says how many cut points follow (up to 8, one byte each); the rest is body.
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(n % 9).min(rest.len());
    let (cut_bytes, body) = rest.split_at(n);
    let mut cuts: Vec<usize> = cut_bytes
        .iter()
        .map(|&c| usize::from(c) * body.len() / 255)
        .collect();
    cuts.sort_unstable();
    let whole = frame(body, &[], false);
    assert_eq!(frame(body, &cuts, false), whole);
    assert_eq!(frame(body, &cuts, true), whole);
});
