//! Property tests across the HTTP module: response heads arriving in pieces, arbitrary bytes.

use proptest::prelude::*;

use super::*;

/// What a worker does: append each piece, re-parse the whole buffer until the head is complete.
fn parse_in_pieces(wire: &[u8], cuts: &[usize]) -> Result<Status<Head>, HttpError> {
    let mut buf = Vec::new();
    let mut start = 0;
    for &end in cuts.iter().chain(std::iter::once(&wire.len())) {
        let end = end.clamp(start, wire.len());
        buf.extend_from_slice(&wire[start..end]);
        start = end;
        match parse_head(&buf)? {
            Status::Partial => {}
            done => return Ok(done),
        }
    }
    Ok(Status::Partial)
}

fn header_strategy() -> impl Strategy<Value = (String, String)> {
    let name = prop_oneof![
        Just("Content-Type".to_string()),
        Just("content-length".to_string()),
        Just("Transfer-Encoding".to_string()),
        Just("Connection".to_string()),
        "[A-Za-z][A-Za-z0-9-]{0,12}",
    ];
    let value = prop_oneof![
        Just("text/event-stream; charset=utf-8".to_string()),
        Just("application/json".to_string()),
        Just("chunked".to_string()),
        Just("close".to_string()),
        Just("keep-alive".to_string()),
        "[0-9]{1,5}",
        "[ -~]{0,20}",
    ];
    (name, value)
}

proptest! {
    #[test]
    fn qc_head_split_invariance(
        version in prop_oneof![Just("1.1"), Just("1.0")],
        status in 100u16..600,
        reason in "([A-Za-z]{1,8}( [A-Za-z]{1,8})?)?",
        headers in proptest::collection::vec(header_strategy(), 0..10),
        body in proptest::collection::vec(any::<u8>(), 0..16),
        cuts in proptest::collection::btree_set(0usize..400, 0..12),
    ) {
        let mut wire = format!("HTTP/{version} {status} {reason}\r\n").into_bytes();
        for (n, v) in &headers {
            wire.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        wire.extend_from_slice(b"\r\n");
        let head_len = wire.len();
        wire.extend_from_slice(&body);
        let whole = parse_head(&wire);
        if let Ok(Status::Complete(h)) = &whole {
            prop_assert_eq!(h.head_len, head_len);
            prop_assert_eq!(h.status, status);
            prop_assert_eq!(h.reason_str(&wire), reason.as_str());
        }
        prop_assert!(!matches!(whole, Ok(Status::Partial)));
        let cuts: Vec<usize> = cuts.into_iter().collect();
        prop_assert_eq!(parse_in_pieces(&wire, &cuts), whole);
    }

    #[test]
    fn qc_head_arbitrary_bytes_never_panic(
        wire in proptest::collection::vec(
            prop_oneof![
                Just(b'\r'), Just(b'\n'), Just(b':'), Just(b' '), Just(b'H'), any::<u8>()
            ],
            0..300,
        ),
        cuts in proptest::collection::btree_set(0usize..300, 0..8),
    ) {
        let mut prefixed = b"HTTP/1.1 200 OK\r\n".to_vec();
        prefixed.extend_from_slice(&wire);
        for input in [&wire, &prefixed] {
            let whole = parse_head(input);
            if let Ok(Status::Complete(h)) = &whole {
                prop_assert!(h.head_len <= input.len());
                prop_assert!(h.reason.0 <= h.reason.1 && h.reason.1 <= input.len());
                let _ = h.reason_str(input);
            }
            let cuts: Vec<usize> = cuts.iter().copied().collect();
            let pieces = parse_in_pieces(input, &cuts);
            // An error seen on a prefix is final; otherwise both ways agree exactly.
            if pieces.is_ok() {
                prop_assert_eq!(pieces, whole);
            }
        }
    }

    #[test]
    fn qc_encode_never_emits_line_breaks_in_headers(
        name in "[ -~\r\n]{0,12}",
        value in "[ -~\r\n\u{0}]{0,24}",
        body in proptest::collection::vec(any::<u8>(), 0..32),
    ) {
        let headers = vec![(name.clone(), value.clone())];
        match encode_post("h:1", "/p", &headers, &body) {
            Ok(req) => {
                prop_assert!(!value.contains(['\r', '\n', '\0']));
                let head_end = req.bytes.len() - body.len();
                prop_assert_eq!(&req.bytes[head_end..], &body[..]);
                let parsed = parse_request_line_count(&req.bytes[..head_end]);
                prop_assert_eq!(parsed, Some(head_end));
            }
            Err(e) => prop_assert!(matches!(e, HttpError::InvalidHeader | HttpError::ReservedHeader)),
        }
    }
}

/// Parses an encoded request head with httparse and returns its length when it is complete.
fn parse_request_line_count(head: &[u8]) -> Option<usize> {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(n)) => Some(n),
        _ => None,
    }
}

#[test]
fn error_messages_are_lowercase_without_period() {
    let all = [
        HttpError::InvalidHeader,
        HttpError::InvalidTarget,
        HttpError::ReservedHeader,
        HttpError::InvalidHead(httparse::Error::Status),
        HttpError::TooManyHeaders,
        HttpError::HeadTooLarge,
        HttpError::InvalidContentLength,
        HttpError::InvalidChunkSize,
        HttpError::ChunkSizeTooLarge,
        HttpError::MissingCrlf,
        HttpError::LineTooLong,
        HttpError::BodyTooLarge,
        HttpError::UnexpectedEof,
    ];
    for e in all {
        let text = e.to_string();
        assert!(!text.is_empty() && !text.ends_with('.'), "{text}");
        assert!(
            text.chars().next().is_some_and(|c| c.is_ascii_lowercase()),
            "{text}"
        );
    }
}

#[test]
fn correlation_copies_get_their_own_slots() {
    let r = super::encode_post_with(
        "h:1",
        "/p",
        &[],
        b"{}",
        "X-Correlation-ID",
        &["X-Session-Affinity"],
    )
    .unwrap();
    assert_eq!(r.copy_slots.len(), 1);
    let rid = uuid::Uuid::from_u128(1);
    let cid = uuid::Uuid::from_u128(0xabc);
    let mut bytes = r.bytes.to_vec();
    r.write_ids(&mut bytes, &rid, &cid);
    let text = String::from_utf8(bytes).unwrap();
    assert!(
        text.contains(&format!("X-Correlation-ID: {cid}\r\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!("X-Session-Affinity: {cid}\r\n")),
        "{text}"
    );
    assert!(text.contains(&format!("X-Request-ID: {rid}\r\n")), "{text}");
    // A copy header cannot also be a user header, nor be the request-id header.
    let dup = [("x-session-affinity".to_string(), "v".to_string())];
    assert!(
        super::encode_post_with(
            "h:1",
            "/p",
            &dup,
            b"",
            "X-Correlation-ID",
            &["X-Session-Affinity"]
        )
        .is_err()
    );
    assert!(
        super::encode_post_with("h:1", "/p", &[], b"", "X-Correlation-ID", &["X-Request-ID"])
            .is_err()
    );
}

/// `write_spliced`: the bytes are the request encoded with the spliced body from the start
/// (a Content-Length of more digits moves the id slots, which still hold the ids).
#[test]
fn spliced_request_equals_one_encoded_with_the_longer_body() {
    let headers = vec![("Accept".to_string(), "text/event-stream".to_string())];
    let body = vec![b'x'; 98];
    let req = crate::http::encode_post("h:1", "/v1/chat/completions", &headers, &body).unwrap();
    let (rid, cid) = (uuid::Uuid::from_u128(1), uuid::Uuid::from_u128(2));
    let mut buf = b"old".to_vec();
    assert!(req.write_spliced(&mut buf, 10, b"MARK", &rid, &cid));
    let mut longer = body.clone();
    longer.splice(10..10, b"MARK".iter().copied());
    let want = crate::http::encode_post("h:1", "/v1/chat/completions", &headers, &longer).unwrap();
    let mut want_bytes = want.bytes.to_vec();
    want.write_ids(&mut want_bytes, &rid, &cid);
    assert_eq!(&buf[3..], want_bytes.as_slice());
    assert!(
        !req.write_spliced(&mut Vec::new(), 99, b"M", &rid, &cid),
        "past the body"
    );
}
