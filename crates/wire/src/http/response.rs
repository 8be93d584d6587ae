//! Response head: status line and the headers that decide framing and parsing.
//!
//! [`parse_head`] is not resumable: the caller keeps appending bytes to one buffer and calls it
//! again on the whole buffer until it returns [`Status::Complete`]. A head is small, so the
//! rescans are cheap, and a head larger than [`MAX_HEAD_BYTES`] is an error either way.
//!
//! # Interim (1xx) responses
//!
//! A server may send `100 Continue` (or another 1xx) before the final response. The caller
//! loops:
//!
//! ```
//! use ringperf_wire::http::{Status, parse_head};
//! let mut buf: Vec<u8> = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n".to_vec();
//! let head = loop {
//!     match parse_head(&buf).unwrap() {
//!         // 101 Switching Protocols is never requested; treat it like any final status.
//!         Status::Complete(h) if h.is_interim() => {
//!             buf.drain(..h.head_len);
//!         }
//!         Status::Complete(h) => break h,
//!         Status::Partial => unreachable!("read more bytes into buf, then loop"),
//!     }
//! };
//! assert_eq!(head.status, 200);
//! ```

use http::header::{CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, TRANSFER_ENCODING};

use super::{HttpError, Status};

/// Most headers a response may have (httparse needs a fixed array).
pub const MAX_HEADERS: usize = 100;

/// Largest response head accepted, in bytes (status line, headers and the blank line).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// What the caller needs from a response head. Byte ranges point into the parsed buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// Status code.
    pub status: u16,
    /// Length of the head including the terminating blank line; the body starts here.
    pub head_len: usize,
    /// Byte range of the reason phrase in the buffer (empty when the line has none).
    pub reason: (usize, usize),
    /// `Content-Length`, when present and not overridden by `Transfer-Encoding` (RFC 9112 §6.3).
    pub content_length: Option<u64>,
    /// The final transfer coding is `chunked`.
    pub chunked: bool,
    /// The media type of `Content-Type` is `text/event-stream` (case-insensitive, parameters
    /// ignored). AIPerf chooses SSE parsing by this, not by `--streaming` (docs/endpoints.md).
    pub event_stream: bool,
    /// The media type of `Content-Type` is `application/json` or ends in `+json`.
    pub content_type_json: bool,
    /// The media type of `Content-Type` is `application/openmetrics-text` (a `/metrics` page
    /// AIPerf reads with the OpenMetrics parser).
    pub content_type_openmetrics: bool,
    /// The connection may be reused: HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with
    /// `Connection: keep-alive`.
    pub keep_alive: bool,
}

impl Head {
    /// The reason phrase as text; empty when absent, out of range or not UTF-8.
    pub fn reason_str<'b>(&self, buf: &'b [u8]) -> &'b str {
        buf.get(self.reason.0..self.reason.1)
            .and_then(|r| std::str::from_utf8(r).ok())
            .unwrap_or("")
    }

    /// A 1xx response other than `101`: the final response follows it on the same connection.
    pub fn is_interim(&self) -> bool {
        (100..200).contains(&self.status) && self.status != 101
    }
}

/// Parses the response head at the start of `buf`.
///
/// Returns [`Status::Partial`] while the blank line ending the head has not arrived, and an error
/// when the bytes cannot be an HTTP/1.x response head, when there are more than [`MAX_HEADERS`]
/// headers, or when the head is (or, still partial, already is) larger than [`MAX_HEAD_BYTES`].
pub fn parse_head(buf: &[u8]) -> Result<Status<Head>, HttpError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let head_len = match response.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => {
            return Err(HttpError::HeadTooLarge);
        }
        Ok(httparse::Status::Partial) => return Ok(Status::Partial),
        Err(httparse::Error::TooManyHeaders) => return Err(HttpError::TooManyHeaders),
        Err(e) => return Err(HttpError::InvalidHead(e)),
    };
    if head_len > MAX_HEAD_BYTES {
        return Err(HttpError::HeadTooLarge);
    }
    let (Some(status), Some(version)) = (response.code, response.version) else {
        return Err(HttpError::InvalidHead(httparse::Error::Status));
    };
    let reason = response
        .reason
        .map_or((0, 0), |r| span_in(buf, r.as_bytes()));

    let mut head = Head {
        status,
        head_len,
        reason,
        content_length: None,
        chunked: false,
        event_stream: false,
        content_type_json: false,
        content_type_openmetrics: false,
        keep_alive: version == 1,
    };
    let mut transfer_encoding = false;
    for h in response.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case(CONTENT_LENGTH.as_str()) {
            let n = parse_content_length(h.value)?;
            if head.content_length.is_some_and(|prev| prev != n) {
                return Err(HttpError::InvalidContentLength);
            }
            head.content_length = Some(n);
        } else if name.eq_ignore_ascii_case(TRANSFER_ENCODING.as_str()) {
            transfer_encoding = true;
            // Only the last coding of the last header matters; an empty value keeps the previous.
            if let Some(last) = tokens(h.value).last() {
                head.chunked = last.eq_ignore_ascii_case(b"chunked");
            }
        } else if name.eq_ignore_ascii_case(CONTENT_TYPE.as_str()) {
            let media = trim(h.value.split(|&b| b == b';').next().unwrap_or_default());
            head.event_stream = media.eq_ignore_ascii_case(b"text/event-stream");
            head.content_type_json = media.eq_ignore_ascii_case(b"application/json")
                || (media.len() > 5
                    && media[media.len() - 5..].eq_ignore_ascii_case(b"+json")
                    && media.contains(&b'/'));
            head.content_type_openmetrics =
                media.eq_ignore_ascii_case(b"application/openmetrics-text");
        } else if name.eq_ignore_ascii_case(CONNECTION.as_str()) {
            for token in tokens(h.value) {
                if token.eq_ignore_ascii_case(b"close") {
                    head.keep_alive = false;
                } else if token.eq_ignore_ascii_case(b"keep-alive") && version == 0 {
                    head.keep_alive = true;
                }
            }
        }
    }
    if transfer_encoding {
        head.content_length = None;
    }
    // `close` wins over `keep-alive` whatever their order.
    if response.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case(CONNECTION.as_str())
            && tokens(h.value).any(|t| t.eq_ignore_ascii_case(b"close"))
    }) {
        head.keep_alive = false;
    }
    Ok(Status::Complete(head))
}

/// The byte range of `part` inside `buf`, given that `part` borrows from `buf`.
fn span_in(buf: &[u8], part: &[u8]) -> (usize, usize) {
    let start = (part.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize);
    match start.checked_add(part.len()) {
        Some(end) if end <= buf.len() => (start, end),
        _ => (0, 0),
    }
}

/// `Content-Length`: decimal digits with optional surrounding whitespace; a comma-separated list
/// of identical values (as some proxies send) is accepted (RFC 9110 §8.6).
fn parse_content_length(value: &[u8]) -> Result<u64, HttpError> {
    let mut result = None;
    for part in value.split(|&b| b == b',') {
        let digits = trim(part);
        if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
            return Err(HttpError::InvalidContentLength);
        }
        let n = digits
            .iter()
            .fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0'));
        if result.is_some_and(|prev| prev != n) {
            return Err(HttpError::InvalidContentLength);
        }
        result = Some(n);
    }
    result.ok_or(HttpError::InvalidContentLength)
}

/// Non-empty comma-separated tokens of a header value, whitespace trimmed.
fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim)
        .filter(|t| !t.is_empty())
}

fn trim(s: &[u8]) -> &[u8] {
    s.trim_ascii()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VLLM_STREAM_HEAD: &[u8] =
        include_bytes!("../../../../fuzz/seeds/http_head/vllm-cpu-chat-stream.headers.txt");
    const VLLM_JSON_HEAD: &[u8] =
        include_bytes!("../../../../fuzz/seeds/http_head/vllm-cpu-chat-nonstream.headers.txt");

    fn complete(buf: &[u8]) -> Head {
        match parse_head(buf) {
            Ok(Status::Complete(h)) => h,
            other => panic!("expected a complete head, got {other:?}"),
        }
    }

    #[test]
    fn vllm_stream_head() {
        let h = complete(VLLM_STREAM_HEAD);
        assert_eq!(h.status, 200);
        assert_eq!(h.head_len, VLLM_STREAM_HEAD.len());
        assert_eq!(h.reason_str(VLLM_STREAM_HEAD), "OK");
        assert!(h.chunked && h.event_stream && h.keep_alive);
        assert!(!h.content_type_json);
        assert_eq!(h.content_length, None);
    }

    #[test]
    fn vllm_json_head() {
        let h = complete(VLLM_JSON_HEAD);
        assert_eq!(
            (h.status, h.content_length, h.chunked),
            (200, Some(749), false)
        );
        assert!(h.content_type_json && !h.event_stream && h.keep_alive);
    }

    #[test]
    fn partial_until_blank_line() {
        let full = VLLM_STREAM_HEAD;
        for cut in 0..full.len() {
            assert_eq!(
                parse_head(&full[..cut]),
                Ok(Status::Partial),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn body_bytes_after_head_are_not_consumed() {
        let buf = b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nabc";
        let h = complete(buf);
        assert_eq!(h.head_len, buf.len() - 3);
        assert_eq!(h.reason_str(buf), "Not Found");
        assert_eq!(h.reason, (13, 22));
    }

    #[test]
    fn connection_rules() {
        let ka = |s: &str| complete(s.as_bytes()).keep_alive;
        assert!(ka("HTTP/1.1 200 OK\r\n\r\n"));
        assert!(!ka("HTTP/1.1 200 OK\r\nConnection: Close\r\n\r\n"));
        assert!(!ka(
            "HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\n\r\n"
        ));
        assert!(!ka("HTTP/1.0 200 OK\r\n\r\n"));
        assert!(ka("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n"));
        assert!(!ka(
            "HTTP/1.0 200 OK\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n"
        ));
    }

    #[test]
    fn content_type_rules() {
        let ct = |v: &str| {
            let h = complete(format!("HTTP/1.1 200 OK\r\nContent-Type: {v}\r\n\r\n").as_bytes());
            (h.event_stream, h.content_type_json)
        };
        assert_eq!(ct("text/event-stream"), (true, false));
        assert_eq!(ct("Text/Event-Stream ; charset=utf-8"), (true, false));
        assert_eq!(ct("text/event-streams"), (false, false));
        assert_eq!(ct("application/json"), (false, true));
        assert_eq!(ct("APPLICATION/JSON; charset=utf-8"), (false, true));
        assert_eq!(ct("application/problem+json"), (false, true));
        assert_eq!(ct("text/plain"), (false, false));
        assert_eq!(ct("+json"), (false, false));
        let om = |v: &str| {
            complete(format!("HTTP/1.1 200 OK\r\nContent-Type: {v}\r\n\r\n").as_bytes())
                .content_type_openmetrics
        };
        assert!(om(
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        ));
        assert!(om("Application/OpenMetrics-Text"));
        assert!(!om("text/plain; version=0.0.4"));
        assert!(!om("application/openmetrics-texts"));
    }

    #[test]
    fn content_length_rules() {
        let cl = |v: &str| {
            parse_head(format!("HTTP/1.1 200 OK\r\nContent-Length: {v}\r\n\r\n").as_bytes()).map(
                |s| match s {
                    Status::Complete(h) => h.content_length,
                    Status::Partial => None,
                },
            )
        };
        assert_eq!(cl("0"), Ok(Some(0)));
        assert_eq!(cl(" 42 "), Ok(Some(42)));
        assert_eq!(cl("7, 7"), Ok(Some(7)));
        assert_eq!(
            cl("18446744073709551615"),
            Err(HttpError::InvalidContentLength)
        );
        assert_eq!(
            cl("1234567890123456789"),
            Ok(Some(1_234_567_890_123_456_789))
        );
        for bad in ["", "-1", "+1", "1x", "0x10", "7, 8", ","] {
            assert_eq!(cl(bad), Err(HttpError::InvalidContentLength), "{bad:?}");
        }
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        assert_eq!(parse_head(two), Err(HttpError::InvalidContentLength));
    }

    #[test]
    fn transfer_encoding_overrides_length() {
        let h = complete(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n",
        );
        assert!(h.chunked);
        assert_eq!(h.content_length, None);
        let h = complete(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n");
        assert!(!h.chunked);
        assert_eq!(h.content_length, None);
    }

    #[test]
    fn interim_responses_are_flagged() {
        let buf = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n\r\n";
        let first = complete(buf);
        assert!(first.is_interim());
        assert_eq!(first.head_len, 25);
        let second = complete(&buf[first.head_len..]);
        assert_eq!((second.status, second.is_interim()), (201, false));
        assert!(!complete(b"HTTP/1.1 101 Switching Protocols\r\n\r\n").is_interim());
    }

    #[test]
    fn limits() {
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..64 {
            many.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(complete(&many).status, 200);
        let mut too_many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            too_many.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
        }
        too_many.extend_from_slice(b"\r\n");
        assert_eq!(parse_head(&too_many), Err(HttpError::TooManyHeaders));

        let mut big = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
        big.resize(MAX_HEAD_BYTES + 1, b'a');
        assert_eq!(parse_head(&big), Err(HttpError::HeadTooLarge));
        big.extend_from_slice(b"\r\n\r\n");
        assert_eq!(parse_head(&big), Err(HttpError::HeadTooLarge));
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(matches!(
            parse_head(b"HTTX/1.1 200 OK\r\n\r\n"),
            Err(HttpError::InvalidHead(_))
        ));
        assert!(matches!(
            parse_head(b"HTTP/1.1 2x0 OK\r\n\r\n"),
            Err(HttpError::InvalidHead(_))
        ));
        assert_eq!(parse_head(b""), Ok(Status::Partial));
    }
}
