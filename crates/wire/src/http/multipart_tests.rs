use std::sync::Arc;

use super::*;

const BOUNDARY: u128 = 0x0123_4567_89ab_cdef_0123_4567_89ab_cdef;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../tests/data/multipart/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn file(bytes: &[u8]) -> Arc<[u8]> {
    Arc::from(bytes)
}

/// The bodies aiohttp 3.14 (AIPerf 0.13's transport) writes for the same fields, byte for byte
/// (tests/data/multipart/gen.py).
#[test]
fn bodies_match_aiohttp_byte_for_byte() {
    let image_edit = [
        FormPart::text("prompt", "make it blue"),
        FormPart::text("model", "mock-model"),
        FormPart::text("response_format", "b64_json"),
        FormPart::text("n", "1"),
        FormPart::file(
            "image",
            "image.png",
            "image/png",
            file(b"\x89PNG\r\n\x1a\n--0123\r\n\x00\xff"),
        ),
    ];
    let audio = [
        FormPart::file(
            "file",
            "audio.wav",
            "audio/wav",
            file(b"RIFF\x24\x00\x00\x00WAVEfmt "),
        ),
        FormPart::text("model", "whisper"),
        FormPart::text("temperature", "0.2"),
    ];
    let quoting = [
        FormPart::text("a b\"c\\d", "v"),
        FormPart::text("naive", "été"),
        FormPart::file("f", "my file é.png", "image/png", file(b"x")),
        FormPart::text("empty", ""),
    ];
    for (parts, name) in [
        (&image_edit[..], "image_edit.bin"),
        (&audio[..], "audio_transcription.bin"),
        (&quoting[..], "quoting.bin"),
    ] {
        let body = MultipartBody::new(parts, BOUNDARY);
        let expected = fixture(name);
        assert_eq!(
            String::from_utf8_lossy(&body.to_vec()),
            String::from_utf8_lossy(&expected),
            "{name}"
        );
        assert_eq!(body.to_vec(), expected, "{name}");
        assert_eq!(body.len(), expected.len(), "{name}");
    }
}

#[test]
fn content_type_names_the_boundary() {
    let body = MultipartBody::new(&[FormPart::text("n", "1")], 0xab);
    assert_eq!(
        body.content_type(),
        "multipart/form-data; boundary=000000000000000000000000000000ab"
    );
    assert_eq!(body.boundary().len(), 32);
}

/// A file's bytes are the caller's allocation, referenced by every body that uploads them.
#[test]
fn file_bytes_are_shared_not_copied() {
    let media = file(&[7u8; 4096]);
    let parts = [FormPart::file(
        "image",
        "image.png",
        "image/png",
        Arc::clone(&media),
    )];
    let a = MultipartBody::new(&parts, 1);
    let b = MultipartBody::new(&parts, 2);
    for body in [&a, &b] {
        let shared: Vec<_> = body
            .segments()
            .iter()
            .filter_map(|s| match s {
                Segment::Shared(data) => Some(data),
                Segment::Owned(_) => None,
            })
            .collect();
        assert_eq!(shared.len(), 1);
        assert!(Arc::ptr_eq(shared[0], &media));
    }
    assert_eq!(Arc::strong_count(&media), 4);
}

/// A media type holding a line break cannot add headers to its part.
#[test]
fn content_type_line_breaks_are_dropped() {
    let parts = [FormPart::file(
        "f",
        "a",
        "image/png\r\nX-Evil: 1",
        file(b"z"),
    )];
    let text = String::from_utf8(MultipartBody::new(&parts, 3).to_vec()).unwrap();
    assert!(
        text.contains("Content-Type: image/pngX-Evil: 1\r\n"),
        "{text}"
    );
}
