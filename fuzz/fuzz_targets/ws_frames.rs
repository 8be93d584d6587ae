//! The WebSocket reader (`ws::Reader`): no panic on any client bytes; the same messages and
//! outcome whether they arrive whole or split at up to 8 fuzzer-chosen points; every message
//! within the size limit, every text valid UTF-8 (it is a `String`), every ping at most 125
//! bytes; what the reader says it consumed never exceeds what it was given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringperf_wire::ws::{MAX_MESSAGE, Message, Reader, WsError};

fn read(bytes: &[u8], cuts: &[usize]) -> (Vec<Message>, Option<WsError>) {
    let mut reader = Reader::new();
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut start = 0;
    for &end in cuts.iter().chain(std::iter::once(&bytes.len())) {
        let end = end.clamp(start, bytes.len());
        buf.extend_from_slice(&bytes[start..end]);
        start = end;
        loop {
            match reader.next(&buf) {
                Ok((m, used)) => {
                    assert!(used <= buf.len());
                    buf.drain(..used);
                    match m {
                        Some(m) => out.push(m),
                        None => break,
                    }
                }
                Err(e) => return (out, Some(e)),
            }
        }
    }
    (out, None)
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(n % 9).min(rest.len());
    let (cut_bytes, body) = rest.split_at(n);
    let mut cuts: Vec<usize> = cut_bytes
        .iter()
        .map(|&b| usize::from(b) * body.len() / 256)
        .collect();
    cuts.sort_unstable();
    let whole = read(body, &[]);
    for m in &whole.0 {
        match m {
            Message::Text(t) => assert!(t.len() <= MAX_MESSAGE),
            Message::Binary(b) => assert!(b.len() <= MAX_MESSAGE),
            Message::Ping(p) | Message::Pong(p) => assert!(p.len() <= 125),
            Message::Close(_, r) => assert!(r.len() <= 123),
        }
    }
    assert_eq!(read(body, &cuts), whole);
});
