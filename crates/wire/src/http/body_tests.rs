//! Tests of the body decoder: hand-written framings, errors, limits, and split invariance.

use proptest::prelude::*;

use super::*;

/// Feeds `input` in one call; returns (payload, consumed, done).
fn decode_whole(kind: BodyKind, input: &[u8]) -> Result<(Vec<u8>, usize, bool), HttpError> {
    let mut out = Vec::new();
    let f = BodyDecoder::new(kind).feed(input, &mut out)?;
    Ok((out, f.consumed, f.done))
}

/// Feeds `input` cut at `cuts` (sorted offsets), stopping when done, like a worker would.
fn decode_split(
    kind: BodyKind,
    input: &[u8],
    cuts: &[usize],
) -> Result<(Vec<u8>, usize, bool), HttpError> {
    let mut dec = BodyDecoder::new(kind);
    let mut out = Vec::new();
    let mut start = 0;
    let mut consumed = 0;
    for &end in cuts.iter().chain(std::iter::once(&input.len())) {
        let end = end.clamp(start, input.len());
        let f = dec.feed(&input[start..end], &mut out)?;
        consumed += f.consumed;
        if f.done {
            return Ok((out, consumed, true));
        }
        start = end;
    }
    Ok((out, consumed, false))
}

#[test]
fn content_length_stops_at_the_end() {
    assert_eq!(
        decode_whole(BodyKind::Length(3), b"abcdef"),
        Ok((b"abc".to_vec(), 3, true))
    );
    assert_eq!(
        decode_whole(BodyKind::Length(5), b"abc"),
        Ok((b"abc".to_vec(), 3, false))
    );
    assert_eq!(
        decode_whole(BodyKind::Length(0), b"xyz"),
        Ok((vec![], 0, true))
    );
    assert_eq!(decode_whole(BodyKind::None, b"xyz"), Ok((vec![], 0, true)));
}

#[test]
fn chunked_with_extensions_and_trailers() {
    let wire =
        b"5;name=value\r\nhello\r\nA \t; x\r\n0123456789\r\n0\r\nX-Trailer: 1\r\nY: 2\r\n\r\nNEXT";
    let (out, consumed, done) = decode_whole(BodyKind::Chunked, wire).unwrap();
    assert_eq!(out, b"hello0123456789");
    assert!(done);
    assert_eq!(&wire[consumed..], b"NEXT");
}

#[test]
fn chunked_sizes_are_hex_any_case() {
    let wire =
        b"1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0001B\r\n012345678901234567890123456\r\n0\r\n\r\n";
    let (out, _, done) = decode_whole(BodyKind::Chunked, wire).unwrap();
    assert!(done);
    assert_eq!(out.len(), 26 + 27);
}

#[test]
fn chunked_errors_have_clear_kinds() {
    let cases: &[(&[u8], HttpError)] = &[
        (b"\r\n", HttpError::InvalidChunkSize),
        (b"g\r\n", HttpError::InvalidChunkSize),
        (b"5 5\r\n", HttpError::InvalidChunkSize),
        (b"-1\r\n", HttpError::InvalidChunkSize),
        (b"100000000\r\n", HttpError::ChunkSizeTooLarge),
        (b"3\n", HttpError::MissingCrlf),
        (b"3\rx", HttpError::MissingCrlf),
        (b"3\r\nabcX", HttpError::MissingCrlf),
        (b"3\r\nabc\rX", HttpError::MissingCrlf),
        (b"0\r\n\n", HttpError::MissingCrlf),
        (b"0\r\nX: y\n", HttpError::MissingCrlf),
        (b"0\r\n\rX", HttpError::MissingCrlf),
    ];
    for &(wire, err) in cases {
        assert_eq!(
            decode_whole(BodyKind::Chunked, wire),
            Err(err),
            "{:?}",
            wire.escape_ascii()
        );
    }
    // u32::MAX itself is accepted as a size.
    assert_eq!(
        decode_whole(BodyKind::Chunked, b"ffffffff\r\nab"),
        Ok((b"ab".to_vec(), 12, false))
    );
}

#[test]
fn long_extension_lines_are_rejected() {
    let mut wire = b"1;".to_vec();
    wire.resize(MAX_LINE_BYTES + 10, b'x');
    assert_eq!(
        decode_whole(BodyKind::Chunked, &wire),
        Err(HttpError::LineTooLong)
    );
}

#[test]
fn errors_are_sticky() {
    let mut dec = BodyDecoder::new(BodyKind::Chunked);
    let mut out = Vec::new();
    assert_eq!(dec.feed(b"zz", &mut out), Err(HttpError::InvalidChunkSize));
    assert_eq!(
        dec.feed(b"0\r\n\r\n", &mut out),
        Err(HttpError::InvalidChunkSize)
    );
    assert_eq!(dec.feed(b"", &mut out), Err(HttpError::InvalidChunkSize));
    assert_eq!(dec.finish_eof(), Err(HttpError::InvalidChunkSize));
}

#[test]
fn eof_rules() {
    let mut out = Vec::new();
    let mut until_close = BodyDecoder::new(BodyKind::UntilClose);
    assert_eq!(
        until_close.feed(b"abc", &mut out),
        Ok(Feed {
            consumed: 3,
            done: false
        })
    );
    assert_eq!(until_close.finish_eof(), Ok(()));
    assert!(until_close.is_done());
    assert_eq!(out, b"abc");

    let mut short = BodyDecoder::new(BodyKind::Length(4));
    short.feed(b"ab", &mut out).unwrap();
    assert_eq!(short.finish_eof(), Err(HttpError::UnexpectedEof));

    let mut chunked = BodyDecoder::new(BodyKind::Chunked);
    chunked.feed(b"0\r\n", &mut out).unwrap();
    assert_eq!(chunked.finish_eof(), Err(HttpError::UnexpectedEof));

    let mut finished = BodyDecoder::new(BodyKind::Chunked);
    finished.feed(b"0\r\n\r\n", &mut out).unwrap();
    assert_eq!(finished.finish_eof(), Ok(()));
}

#[test]
fn size_limit() {
    let mut out = Vec::new();
    let mut dec = BodyDecoder::new(BodyKind::Length(10)).with_max_body_bytes(4);
    assert_eq!(
        dec.feed(b"abcd", &mut out),
        Ok(Feed {
            consumed: 4,
            done: false
        })
    );
    assert_eq!(dec.feed(b"e", &mut out), Err(HttpError::BodyTooLarge));
    assert_eq!(out, b"abcd");

    // A chunk announcing more than the limit fails before its payload arrives.
    let mut dec = BodyDecoder::new(BodyKind::Chunked).with_max_body_bytes(4);
    assert_eq!(
        dec.feed(b"3\r\nabc\r\n2\r\n", &mut out),
        Err(HttpError::BodyTooLarge)
    );

    let mut dec = BodyDecoder::new(BodyKind::UntilClose).with_max_body_bytes(2);
    assert_eq!(
        dec.feed(b"abc", &mut Vec::new()),
        Err(HttpError::BodyTooLarge)
    );
    assert_eq!(dec.total_bytes(), 0);
}

#[test]
fn kind_from_head() {
    let head = |status, content_length, chunked| Head {
        status,
        head_len: 0,
        reason: (0, 0),
        content_length,
        chunked,
        event_stream: false,
        content_type_json: false,
        content_type_openmetrics: false,
        keep_alive: true,
    };
    assert_eq!(
        BodyKind::from_head(&head(200, Some(5), false), false),
        BodyKind::Length(5)
    );
    assert_eq!(
        BodyKind::from_head(&head(200, None, true), false),
        BodyKind::Chunked
    );
    assert_eq!(
        BodyKind::from_head(&head(200, None, false), false),
        BodyKind::UntilClose
    );
    assert_eq!(
        BodyKind::from_head(&head(200, Some(5), false), true),
        BodyKind::None
    );
    for status in [100, 204, 304] {
        assert_eq!(
            BodyKind::from_head(&head(status, Some(5), false), false),
            BodyKind::None
        );
    }
}

/// Chunk-encodes `payload` in pieces of the given sizes, with optional extensions and trailers.
pub(crate) fn chunk_encode(payload: &[u8], sizes: &[usize], ext: bool, trailers: bool) -> Vec<u8> {
    let mut wire = Vec::new();
    let mut rest = payload;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes
            .get(i % sizes.len().max(1))
            .copied()
            .unwrap_or(1)
            .clamp(1, rest.len());
        let size = if i % 2 == 0 {
            format!("{n:x}")
        } else {
            format!("{n:X}")
        };
        wire.extend_from_slice(size.as_bytes());
        if ext {
            wire.extend_from_slice(b" ;ext=\"v\"");
        }
        wire.extend_from_slice(b"\r\n");
        wire.extend_from_slice(&rest[..n]);
        wire.extend_from_slice(b"\r\n");
        rest = &rest[n..];
        i += 1;
    }
    wire.extend_from_slice(b"0\r\n");
    if trailers {
        wire.extend_from_slice(b"Trailer-A: x\r\n");
    }
    wire.extend_from_slice(b"\r\n");
    wire
}

proptest! {
    #[test]
    fn qc_chunked_split_invariance(
        payload in proptest::collection::vec(any::<u8>(), 0..600),
        sizes in proptest::collection::vec(1usize..80, 1..8),
        ext in any::<bool>(),
        trailers in any::<bool>(),
        tail in proptest::collection::vec(any::<u8>(), 0..8),
        mut cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let mut wire = chunk_encode(&payload, &sizes, ext, trailers);
        let body_len = wire.len();
        wire.extend_from_slice(&tail);
        let whole = decode_whole(BodyKind::Chunked, &wire);
        prop_assert_eq!(&whole, &Ok((payload.clone(), body_len, true)));
        cuts.sort_by_key(|c| c.index(wire.len() + 1));
        let cuts: Vec<usize> = cuts.iter().map(|c| c.index(wire.len() + 1)).collect();
        prop_assert_eq!(decode_split(BodyKind::Chunked, &wire, &cuts), whole);
    }

    #[test]
    fn qc_length_split_invariance(
        wire in proptest::collection::vec(any::<u8>(), 0..300),
        len in 0u64..300,
        cuts in proptest::collection::btree_set(0usize..300, 0..10),
    ) {
        let cuts: Vec<usize> = cuts.into_iter().collect();
        let whole = decode_whole(BodyKind::Length(len), &wire);
        prop_assert_eq!(decode_split(BodyKind::Length(len), &wire, &cuts), whole);
    }

    /// Arbitrary (mostly framing-like) bytes: never a panic, and split-invariant outcome class.
    #[test]
    fn qc_chunked_arbitrary_bytes(
        wire in proptest::collection::vec(
            prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'0'), Just(b'a'), Just(b';'), any::<u8>()],
            0..200,
        ),
        cuts in proptest::collection::btree_set(0usize..200, 0..10),
        max in 0u64..64,
    ) {
        let cuts: Vec<usize> = cuts.into_iter().collect();
        let whole = decode_whole(BodyKind::Chunked, &wire);
        let split = decode_split(BodyKind::Chunked, &wire, &cuts);
        prop_assert_eq!(&split, &whole);
        for kind in [BodyKind::Chunked, BodyKind::UntilClose, BodyKind::Length(max), BodyKind::None] {
            let mut dec = BodyDecoder::new(kind).with_max_body_bytes(max);
            let mut out = Vec::new();
            if let Ok(f) = dec.feed(&wire, &mut out) {
                prop_assert!(f.consumed <= wire.len());
                prop_assert!(out.len() as u64 <= max);
            }
            let _ = dec.finish_eof();
        }
    }
}
