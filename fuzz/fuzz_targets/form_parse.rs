//! multipart/form-data parser on arbitrary bytes: no panic, bounded output, and the same parts
//! and outcome when the input is fed whole or split at a point the first byte chooses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringperf_wire::http::form_parse::{FormError, FormParser, ParsedPart};

fn parse(pieces: &[&[u8]]) -> Result<Vec<ParsedPart>, FormError> {
    let mut parser = FormParser::new("bnd", 1 << 20)?;
    for piece in pieces {
        parser.feed(piece)?;
    }
    parser.finish()
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, wire)) = data.split_first() else {
        return;
    };
    let whole = parse(&[wire]);
    let at = usize::from(split).min(wire.len());
    let (head, tail) = wire.split_at(at);
    assert_eq!(whole, parse(&[head, tail]));
    if let Ok(parts) = whole {
        assert!(parts.iter().map(|p| p.data.len()).sum::<usize>() <= wire.len());
    }
});
