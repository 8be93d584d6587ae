//! Chunked body decoder on arbitrary bytes: no panic, bounded output, and the same payload and
//! outcome when the input is fed whole or byte-split at a point the first byte chooses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringperf_wire::http::{BodyDecoder, BodyKind, Feed, HttpError};

fn decode(pieces: &[&[u8]]) -> (Vec<u8>, Result<Feed, HttpError>) {
    let mut decoder = BodyDecoder::new(BodyKind::Chunked).with_max_body_bytes(1 << 20);
    let mut out = Vec::new();
    let mut total = Feed {
        consumed: 0,
        done: false,
    };
    for piece in pieces {
        match decoder.feed(piece, &mut out) {
            Ok(f) => {
                assert!(f.consumed <= piece.len());
                total.consumed += f.consumed;
                total.done = f.done;
                if f.done {
                    break;
                }
            }
            Err(e) => return (out, Err(e)),
        }
    }
    (out, Ok(total))
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, wire)) = data.split_first() else {
        return;
    };
    let (whole_out, whole) = decode(&[wire]);
    let at = usize::from(split).min(wire.len());
    let (head, tail) = wire.split_at(at);
    let (split_out, split_result) = decode(&[head, tail]);
    assert_eq!(whole, split_result);
    if whole.is_ok() {
        assert_eq!(whole_out, split_out);
    }
    assert!(whole_out.len() <= wire.len());
});
