use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::http::multipart::{FormPart, FormValue, MultipartBody};

const LIMIT: usize = 1 << 20;

fn parse_pieces(boundary: &str, pieces: &[&[u8]]) -> Result<Vec<ParsedPart>, FormError> {
    let mut parser = FormParser::new(boundary, LIMIT)?;
    for piece in pieces {
        parser.feed(piece)?;
    }
    parser.finish()
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../tests/data/multipart/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const AIOHTTP_BOUNDARY: &str = "0123456789abcdef0123456789abcdef";

/// aiohttp's own body (not ringperf's writer) reads back as the fields gen.py put in.
#[test]
fn reads_aiohttp_image_edit_body() {
    let parts = parse_pieces(AIOHTTP_BOUNDARY, &[&fixture("image_edit.bin")]).unwrap();
    let names: Vec<_> = parts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["prompt", "model", "response_format", "n", "image"]);
    assert_eq!(parts[0].data, b"make it blue");
    assert_eq!(
        parts[0].content_type.as_deref(),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(parts[0].filename, None);
    let image = &parts[4];
    assert_eq!(image.filename.as_deref(), Some("image.png"));
    assert_eq!(image.content_type.as_deref(), Some("image/png"));
    // The file holds CRLF, `--` and a prefix of the boundary: none of it ends the part.
    assert_eq!(image.data, b"\x89PNG\r\n\x1a\n--0123\r\n\x00\xff");
}

#[test]
fn reads_aiohttp_quoting() {
    let parts = parse_pieces(AIOHTTP_BOUNDARY, &[&fixture("quoting.bin")]).unwrap();
    assert_eq!(parts[0].name, "a b\"c\\d");
    assert_eq!(parts[1].data, "été".as_bytes());
    assert_eq!(parts[2].filename.as_deref(), Some("my file é.png"));
    assert_eq!(parts[3].name, "empty");
    assert!(parts[3].data.is_empty());
}

#[test]
fn boundary_of_content_type() {
    assert_eq!(
        boundary_of("multipart/form-data; boundary=abc"),
        Some("abc")
    );
    assert_eq!(
        boundary_of("Multipart/Form-Data;charset=x; Boundary=\"a b\""),
        Some("a b")
    );
    assert_eq!(boundary_of("application/json"), None);
    assert_eq!(boundary_of("multipart/mixed; boundary=abc"), None);
}

#[test]
fn malformed_bodies_are_typed_errors() {
    let b = "xyz";
    let cases: [(&[u8], FormError); 6] = [
        (
            b"--xyz\r\nContent-Type: a\r\n\r\nv\r\n--xyz--",
            FormError::BadPartHeader,
        ),
        (
            b"--xyz\r\nno colon\r\n\r\nv\r\n--xyz--",
            FormError::BadPartHeader,
        ),
        (
            b"--xyz\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nv\r\n--xyz--",
            FormError::BadPartHeader,
        ),
        (b"--xyzjunk\r\n", FormError::BadDelimiter),
        (
            b"--xyz\r\nContent-Disposition: form-data; name=a\r\n\r\nv",
            FormError::Truncated,
        ),
        (b"", FormError::Truncated),
    ];
    for (body, want) in cases {
        assert_eq!(
            parse_pieces(b, &[body]),
            Err(want),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    assert_eq!(FormParser::new("", 1).err(), Some(FormError::BadBoundary));
    assert_eq!(
        FormParser::new("a\rb", 1).err(),
        Some(FormError::BadBoundary)
    );
}

#[test]
fn limits_hold() {
    let big = MultipartBody::new(
        &[FormPart::file("f", "a", "x", Arc::from(&[1u8; 100][..]))],
        9,
    );
    let mut parser = FormParser::new(big.boundary(), 99).unwrap();
    assert_eq!(parser.feed(&big.to_vec()), Err(FormError::TooLarge));
    let mut head = b"--b\r\nX: ".to_vec();
    head.resize(MAX_PART_HEAD_BYTES + 10, b'a');
    assert_eq!(parse_pieces("b", &[&head]), Err(FormError::HeadTooLarge));
    let many: Vec<_> = (0..=MAX_PARTS)
        .map(|i| FormPart::text(i.to_string(), ""))
        .collect();
    let body = MultipartBody::new(&many, 5);
    assert_eq!(
        parse_pieces(body.boundary(), &[&body.to_vec()]),
        Err(FormError::TooManyParts)
    );
}

/// Preamble, transport padding after a delimiter, an unquoted name and an epilogue (RFC 2046)
/// are read as a lenient server reads them.
#[test]
fn preamble_padding_and_epilogue() {
    let body =
        b"ignored\r\n--q \t\r\nContent-Disposition: form-data; name=n\r\n\r\n1\r\n--q--\r\nafter";
    let parts = parse_pieces("q", &[body]).unwrap();
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].name, "n");
    assert_eq!(parts[0].data, b"1");
}

fn part_strategy() -> impl Strategy<Value = FormPart> {
    let name = prop_oneof![
        "[ -~]{0,12}",
        // Beyond printable ASCII: written browser-style, which only a non-ASCII name undoes.
        "[a-z\"\r\n]{0,4}[\u{e9}\u{4e2d}][a-z\"\r\n]{0,4}",
    ];
    let text = proptest::collection::vec(any::<u8>(), 0..64)
        .prop_map(|b| String::from_utf8_lossy(&b).into_owned());
    let data = proptest::collection::vec(
        prop_oneof![Just(b'-'), Just(b'\r'), Just(b'\n'), any::<u8>()],
        0..300,
    );
    prop_oneof![
        (name.clone(), text).prop_map(|(n, t)| FormPart::text(n, t)),
        (name, "[ -~\u{e9}]{0,10}", "[a-z/]{1,12}", data).prop_map(|(n, f, c, d)| FormPart::file(
            n,
            f,
            c,
            Arc::from(d)
        )),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever the writer writes, the parser reads back the same fields, and every split of
    /// the body into three pieces gives the same result as the whole body.
    #[test]
    fn round_trip_and_split_invariance(
        parts in proptest::collection::vec(part_strategy(), 0..6),
        boundary in any::<u128>(),
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
    ) {
        let body = MultipartBody::new(&parts, boundary);
        let wire = body.to_vec();
        let whole = parse_pieces(body.boundary(), &[&wire]);
        let (mut i, mut j) = (a.index(wire.len() + 1), b.index(wire.len() + 1));
        if i > j {
            std::mem::swap(&mut i, &mut j);
        }
        let split = parse_pieces(body.boundary(), &[&wire[..i], &wire[i..j], &wire[j..]]);
        prop_assert_eq!(&whole, &split);
        let got = whole.unwrap();
        prop_assert_eq!(got.len(), parts.len());
        for (g, p) in got.iter().zip(&parts) {
            prop_assert_eq!(&g.name, &p.name);
            match &p.value {
                FormValue::Text(t) => {
                    prop_assert_eq!(&g.data, t.as_bytes());
                    prop_assert_eq!(g.filename.as_deref(), None);
                }
                FormValue::File { filename, data, .. } => {
                    prop_assert_eq!(&g.data[..], &data[..]);
                    prop_assert_eq!(g.filename.as_deref(), Some(filename.as_str()));
                }
            }
        }
    }

    /// Arbitrary bytes: no panic, and one byte at a time gives the same outcome as the whole.
    #[test]
    fn arbitrary_bytes_split_invariant(wire in proptest::collection::vec(
        prop_oneof![Just(b'-'), Just(b'\r'), Just(b'\n'), Just(b'b'), Just(b'"'), Just(b':'), any::<u8>()],
        0..200,
    ), at in any::<prop::sample::Index>()) {
        let mut prefixed = b"--b\r\nContent-Disposition: form-data; name=x\r\n\r\n".to_vec();
        prefixed.extend_from_slice(&wire);
        for input in [&wire, &prefixed] {
            let whole = parse_pieces("b", &[input]);
            let bytes: Vec<&[u8]> = input.chunks(1).collect();
            prop_assert_eq!(&whole, &parse_pieces("b", &bytes));
            let k = at.index(input.len() + 1);
            prop_assert_eq!(&whole, &parse_pieces("b", &[&input[..k], &input[k..]]));
        }
    }
}
