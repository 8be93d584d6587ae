//! Request encoding: done once per dataset entry, patched in place per send.
//!
//! A benchmark sends the same body many times; only the request id and the correlation id change.
//! [`encode_post`] writes the whole request (head and body) once, with two 36-byte placeholders
//! whose offsets it returns, and [`write_uuid`] overwrites a placeholder with a fresh id without
//! allocating.

use http::Method;
use http::header::CONTENT_LENGTH;

use super::HttpError;

/// Bytes of a hyphenated UUID (`8-4-4-4-12` hex digits).
pub const UUID_LEN: usize = 36;

/// Placeholder written where the ids go, so an unpatched request is still well-formed.
const UUID_PLACEHOLDER: &[u8; UUID_LEN] = b"00000000-0000-0000-0000-000000000000";

/// Header carrying the per-request id (docs/endpoints.md, "URL and headers").
pub const REQUEST_ID_HEADER: &str = "X-Request-ID";

/// Default header carrying the per-session id (docs/endpoints.md; AIPerf's `--session-header`).
pub const CORRELATION_ID_HEADER: &str = "X-Correlation-ID";

/// A complete request (head and body) ready to be written to a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodedRequest {
    /// Head followed by body, exactly as sent; shared, so a large body is written to every
    /// connection from this one copy.
    pub bytes: std::sync::Arc<[u8]>,
    /// Offsets in `bytes` of the 36-byte values of the request-id header (`[0]`) and the
    /// correlation-id header (`[1]`).
    pub id_slots: [usize; 2],
    /// Offsets of headers that carry a copy of the correlation id (AIPerf's session-affinity
    /// headers such as `X-Session-Affinity`).
    pub copy_slots: Vec<usize>,
    /// Length of the head (request line, headers and the blank line): the body is
    /// `bytes[head_len..]`.
    pub head_len: usize,
}

impl EncodedRequest {
    /// Appends this request to `buf` with `insert` spliced into its body at body offset `at`
    /// and its `Content-Length` raised by `insert.len()`, both ids written (`--cache-bust`:
    /// the connection's copy is the only one made). `false`, and nothing appended, when `at` is
    /// past the body or the head has no `Content-Length`.
    pub fn write_spliced(
        &self,
        buf: &mut Vec<u8>,
        at: usize,
        insert: &[u8],
        request_id: &uuid::Uuid,
        correlation_id: &uuid::Uuid,
    ) -> bool {
        let Some((head, body)) = self.bytes.split_at_checked(self.head_len) else {
            return false;
        };
        const NAME: &[u8] = b"\r\nContent-Length: ";
        let Some(value_at) = memchr::memmem::rfind(head, NAME).map(|i| i + NAME.len()) else {
            return false;
        };
        let Some(value_len) = memchr::memchr(b'\r', &head[value_at..]) else {
            return false;
        };
        if at > body.len() {
            return false;
        }
        let start = buf.len();
        buf.extend_from_slice(&head[..value_at]);
        push_decimal(buf, (body.len() + insert.len()) as u64);
        let new_len = buf.len() - start - value_at;
        buf.extend_from_slice(&head[value_at + value_len..]);
        buf.extend_from_slice(&body[..at]);
        buf.extend_from_slice(insert);
        buf.extend_from_slice(&body[at..]);
        // The id slots follow the length, whose digits may have grown.
        let shift = |slot: usize| start + slot + new_len - value_len;
        let [request_slot, correlation_slot] = self.id_slots;
        write_uuid(buf, shift(request_slot), request_id);
        write_uuid(buf, shift(correlation_slot), correlation_id);
        for &slot in &self.copy_slots {
            write_uuid(buf, shift(slot), correlation_id);
        }
        true
    }

    /// Writes both ids into their slots of `buf` (hyphenated, lowercase), the correlation id
    /// also into every copy slot; allocation-free. `buf` holds this request's bytes: the
    /// template itself, or the copy a connection sends from.
    pub fn write_ids(&self, buf: &mut [u8], request_id: &uuid::Uuid, correlation_id: &uuid::Uuid) {
        let [request_slot, correlation_slot] = self.id_slots;
        write_uuid(buf, request_slot, request_id);
        write_uuid(buf, correlation_slot, correlation_id);
        for &slot in &self.copy_slots {
            write_uuid(buf, slot, correlation_id);
        }
    }
}

/// Encodes `POST {path} HTTP/1.1` with `Host`, the given headers, `Content-Length`,
/// `X-Request-ID` and `X-Correlation-ID` placeholders, then the body.
///
/// `headers` must not contain `Host`, `Content-Length`, `Transfer-Encoding` or either id header
/// (the encoder writes those) — that is [`HttpError::ReservedHeader`]. Names must be RFC 9110
/// tokens and values must not contain CR, LF or NUL ([`HttpError::InvalidHeader`]); the host
/// and path must be non-empty and free of spaces and control line breaks
/// ([`HttpError::InvalidTarget`]). Nothing invalid is ever emitted.
pub fn encode_post(
    host: &str,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<EncodedRequest, HttpError> {
    encode_post_named(host, path, headers, body, CORRELATION_ID_HEADER)
}

/// [`encode_post`] with the correlation-id header named `correlation_header` (AIPerf's
/// `--session-header`) instead of `X-Correlation-ID`.
pub fn encode_post_named(
    host: &str,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
    correlation_header: &str,
) -> Result<EncodedRequest, HttpError> {
    encode_post_with(host, path, headers, body, correlation_header, &[])
}

/// [`encode_post_named`] plus one header per name in `copies` carrying a copy of the
/// correlation id (AIPerf's `AIPERF_HTTP_X_*_FROM_CORRELATION_ID` session-affinity headers).
pub fn encode_post_with(
    host: &str,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
    correlation_header: &str,
    copies: &[&str],
) -> Result<EncodedRequest, HttpError> {
    check_target(host, path)?;
    let id_headers = || std::iter::once(&correlation_header).chain(copies);
    if id_headers().any(|h| !is_token(h) || h.eq_ignore_ascii_case(REQUEST_ID_HEADER)) {
        return Err(HttpError::InvalidHeader);
    }
    let mut reserved = vec![
        REQUEST_ID_HEADER,
        correlation_header,
        CONTENT_LENGTH.as_str(),
    ];
    reserved.extend_from_slice(copies);
    check_headers(headers, &reserved)?;

    let mut bytes = Vec::with_capacity(head_capacity(host, path, headers) + 160 + body.len());
    start_head(&mut bytes, &Method::POST, host, path, headers);
    bytes.extend_from_slice(b"Content-Length: ");
    push_decimal(&mut bytes, body.len() as u64);
    bytes.extend_from_slice(b"\r\n");
    let request_slot = push_id_header(&mut bytes, REQUEST_ID_HEADER);
    let correlation_slot = push_id_header(&mut bytes, correlation_header);
    let copy_slots = copies
        .iter()
        .map(|h| push_id_header(&mut bytes, h))
        .collect();
    bytes.extend_from_slice(b"\r\n");
    let head_len = bytes.len();
    bytes.extend_from_slice(body);
    Ok(EncodedRequest {
        bytes: bytes.into(),
        id_slots: [request_slot, correlation_slot],
        copy_slots,
        head_len,
    })
}

/// Encodes `GET {path} HTTP/1.1` with `Host` and the given headers (for `/metrics` and
/// `/v1/models`). Validation is the same as [`encode_post`]'s.
pub fn encode_get(
    host: &str,
    path: &str,
    headers: &[(String, String)],
) -> Result<Vec<u8>, HttpError> {
    check_target(host, path)?;
    check_headers(headers, &[CONTENT_LENGTH.as_str()])?;
    let mut bytes = Vec::with_capacity(head_capacity(host, path, headers) + 2);
    start_head(&mut bytes, &Method::GET, host, path, headers);
    bytes.extend_from_slice(b"\r\n");
    Ok(bytes)
}

/// Writes `id` in hyphenated lowercase form into `buf[at..at + 36]`, without allocating.
///
/// Returns `false` (and writes nothing) when the slot does not fit in `buf`; slots returned by
/// [`encode_post`] always fit their own request.
pub fn write_uuid(buf: &mut [u8], at: usize, id: &uuid::Uuid) -> bool {
    let Some(slot) = at
        .checked_add(UUID_LEN)
        .and_then(|end| buf.get_mut(at..end))
    else {
        return false;
    };
    id.hyphenated().encode_lower(slot);
    true
}

fn check_target(host: &str, path: &str) -> Result<(), HttpError> {
    let bad = |s: &str| s.is_empty() || s.bytes().any(|b| b <= b' ' || b == 0x7f);
    if bad(host) || bad(path) {
        Err(HttpError::InvalidTarget)
    } else {
        Ok(())
    }
}

fn check_headers(headers: &[(String, String)], reserved: &[&str]) -> Result<(), HttpError> {
    for (name, value) in headers {
        if !is_token(name) || value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
            return Err(HttpError::InvalidHeader);
        }
        let always_reserved = ["host", "transfer-encoding"];
        if always_reserved
            .iter()
            .chain(reserved)
            .any(|r| name.eq_ignore_ascii_case(r))
        {
            return Err(HttpError::ReservedHeader);
        }
    }
    Ok(())
}

/// RFC 9110 `token`: one or more `tchar`.
pub fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                )
        })
}

fn head_capacity(host: &str, path: &str, headers: &[(String, String)]) -> usize {
    let fixed = "POST  HTTP/1.1\r\nHost: \r\n".len() + host.len() + path.len();
    fixed
        + headers
            .iter()
            .map(|(n, v)| n.len() + v.len() + 4)
            .sum::<usize>()
}

fn start_head(
    out: &mut Vec<u8>,
    method: &Method,
    host: &str,
    path: &str,
    headers: &[(String, String)],
) {
    out.extend_from_slice(method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

/// Appends `name: <placeholder>\r\n` and returns the offset of the placeholder.
fn push_id_header(out: &mut Vec<u8>, name: &str) -> usize {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    let slot = out.len();
    out.extend_from_slice(UUID_PLACEHOLDER);
    out.extend_from_slice(b"\r\n");
    slot
}

fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdrs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn post_layout_matches_hand_written_request() {
        let headers = hdrs(&[
            ("Content-Type", "application/json"),
            ("Accept", "text/event-stream"),
        ]);
        let req = encode_post(
            "127.0.0.1:8000",
            "/v1/chat/completions",
            &headers,
            b"{\"a\":1}",
        )
        .unwrap();
        let expected = "POST /v1/chat/completions HTTP/1.1\r\n\
            Host: 127.0.0.1:8000\r\n\
            Content-Type: application/json\r\n\
            Accept: text/event-stream\r\n\
            Content-Length: 7\r\n\
            X-Request-ID: 00000000-0000-0000-0000-000000000000\r\n\
            X-Correlation-ID: 00000000-0000-0000-0000-000000000000\r\n\
            \r\n\
            {\"a\":1}";
        assert_eq!(std::str::from_utf8(&req.bytes).unwrap(), expected);
        let rid = expected.find("X-Request-ID: ").unwrap() + "X-Request-ID: ".len();
        let cid = expected.find("X-Correlation-ID: ").unwrap() + "X-Correlation-ID: ".len();
        assert_eq!(req.id_slots, [rid, cid]);
    }

    #[test]
    fn ids_are_patched_in_place() {
        let mut req = encode_post("h", "/", &[], b"").unwrap();
        let len = req.bytes.len();
        let a = uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        let b = uuid::Uuid::from_u128(0xffee_ddcc_bbaa_9988_7766_5544_3322_1100);
        let mut bytes = req.bytes.to_vec();
        req.write_ids(&mut bytes, &a, &b);
        req.bytes = bytes.into();
        assert_eq!(req.bytes.len(), len);
        let text = std::str::from_utf8(&req.bytes).unwrap();
        assert!(text.contains("X-Request-ID: 01234567-89ab-cdef-0123-456789abcdef\r\n"));
        assert!(text.contains("X-Correlation-ID: ffeeddcc-bbaa-9988-7766-554433221100\r\n"));
        assert!(text.ends_with("\r\n\r\n"));
    }

    #[test]
    fn write_uuid_refuses_out_of_range_slots() {
        let id = uuid::Uuid::from_u128(1);
        let mut buf = [b'x'; 40];
        assert!(!write_uuid(&mut buf, 5, &id));
        assert!(!write_uuid(&mut buf, usize::MAX, &id));
        assert_eq!(buf, [b'x'; 40]);
        assert!(write_uuid(&mut buf, 4, &id));
        assert_eq!(&buf[4..], b"00000000-0000-0000-0000-000000000001");
    }

    #[test]
    fn custom_session_header_name() {
        let req = encode_post_named("h", "/p", &[], b"xy", "X-Session-ID").unwrap();
        let text = std::str::from_utf8(&req.bytes).unwrap();
        assert_eq!(
            &text[req.id_slots[1] - 14..req.id_slots[1]],
            "X-Session-ID: "
        );
        assert!(!text.contains("X-Correlation-ID"));
        assert!(text.ends_with("\r\n\r\nxy"));
    }

    #[test]
    fn header_injection_is_rejected() {
        for (n, v) in [
            ("X-A", "v\r\nEvil: 1"),
            ("X-A", "v\n"),
            ("X-A", "a\0"),
            ("Bad Name", "v"),
        ] {
            let h = hdrs(&[(n, v)]);
            assert_eq!(
                encode_post("h", "/", &h, b""),
                Err(HttpError::InvalidHeader)
            );
            assert_eq!(encode_get("h", "/", &h), Err(HttpError::InvalidHeader));
        }
        assert_eq!(
            encode_post("h", "/", &hdrs(&[("", "v")]), b""),
            Err(HttpError::InvalidHeader)
        );
        assert_eq!(
            encode_post_named("h", "/", &[], b"", "X-Request-ID"),
            Err(HttpError::InvalidHeader)
        );
    }

    #[test]
    fn reserved_headers_are_rejected() {
        for name in [
            "host",
            "Content-Length",
            "x-request-id",
            "X-CORRELATION-ID",
            "Transfer-Encoding",
        ] {
            let h = hdrs(&[(name, "1")]);
            assert_eq!(
                encode_post("h", "/", &h, b""),
                Err(HttpError::ReservedHeader),
                "{name}"
            );
        }
        // A GET carries no ids, so those names are the caller's to use.
        assert!(encode_get("h", "/", &hdrs(&[("X-Request-ID", "abc")])).is_ok());
    }

    #[test]
    fn bad_targets_are_rejected() {
        for (host, path) in [
            ("", "/"),
            ("h", ""),
            ("h", "/a b"),
            ("h\r\n", "/"),
            ("h", "/\n"),
        ] {
            assert_eq!(
                encode_post(host, path, &[], b""),
                Err(HttpError::InvalidTarget)
            );
            assert_eq!(encode_get(host, path, &[]), Err(HttpError::InvalidTarget));
        }
    }

    #[test]
    fn get_layout() {
        let got = encode_get(
            "localhost:9",
            "/metrics",
            &hdrs(&[("Accept", "text/plain")]),
        )
        .unwrap();
        assert_eq!(
            got,
            b"GET /metrics HTTP/1.1\r\nHost: localhost:9\r\nAccept: text/plain\r\n\r\n"
        );
    }

    #[test]
    fn content_length_is_decimal() {
        for len in [0usize, 9, 10, 99, 100, 12345] {
            let body = vec![b'z'; len];
            let req = encode_post("h", "/", &[], &body).unwrap();
            let needle = format!("Content-Length: {len}\r\n");
            assert!(
                req.bytes
                    .windows(needle.len())
                    .any(|w| w == needle.as_bytes())
            );
        }
    }
}
