//! HTTP/1.1 on the wire, without I/O: request encoding, response head parsing and body decoding.
//!
//! Everything here is pure: it takes `&[u8]`, never touches a socket, never panics on any input
//! and never allocates per token. The worker owns the buffers and the clock; these functions only
//! say where things are.
//!
//! - [`request`]: a request is encoded once per dataset entry ([`EncodedRequest`]); per send only
//!   the two 36-byte ids are overwritten in place.
//! - [`response`]: [`parse_head`] turns the status line and headers into a [`Head`], or says
//!   [`Status::Partial`] when more bytes are needed.
//! - [`body`]: [`BodyDecoder`] removes `Content-Length` / chunked framing incrementally,
//!   appending the payload to the caller's buffer.
//! - [`multipart`]: `multipart/form-data` bodies whose files are shared, not copied;
//!   [`form_parse`] reads them back incrementally (the mock's side).

use std::fmt;

pub mod body;
pub mod form_parse;
pub mod multipart;
pub mod request;
pub mod response;

pub use body::{BodyDecoder, BodyKind, Feed};
pub use request::{
    EncodedRequest, encode_get, encode_post, encode_post_named, encode_post_with, write_uuid,
};
pub use response::{Head, MAX_HEAD_BYTES, MAX_HEADERS, parse_head};

/// The outcome of a parser that may need more input: short input is a status, never an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status<T> {
    /// The value is complete.
    Complete(T),
    /// The input ends before the value does; call again with more bytes.
    Partial,
}

/// Why HTTP encoding or decoding failed. Small and `Copy`: it is stored per failed request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpError {
    /// A header name is empty or not an RFC 9110 token, or a value holds CR, LF or NUL.
    InvalidHeader,
    /// The host or request target is empty or holds a space, CR, LF or NUL.
    InvalidTarget,
    /// A caller-supplied header collides with one the encoder writes itself.
    ReservedHeader,
    /// The response head does not parse as HTTP/1.x.
    InvalidHead(httparse::Error),
    /// The response has more headers than [`MAX_HEADERS`].
    TooManyHeaders,
    /// The response head is longer than [`MAX_HEAD_BYTES`].
    HeadTooLarge,
    /// `Content-Length` is not a decimal number, or several disagree.
    InvalidContentLength,
    /// A chunk-size line does not start with hexadecimal digits, or holds a stray byte.
    InvalidChunkSize,
    /// A chunk size is larger than `u32::MAX` bytes.
    ChunkSizeTooLarge,
    /// A chunk-size, chunk-data or trailer line is not terminated by CRLF.
    MissingCrlf,
    /// A chunk extension or trailer line is longer than the decoder accepts.
    LineTooLong,
    /// The body is larger than the configured maximum.
    BodyTooLarge,
    /// The connection closed before the body was complete.
    UnexpectedEof,
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::InvalidHeader => f.write_str("invalid header name or value"),
            HttpError::InvalidTarget => f.write_str("invalid host or request target"),
            HttpError::ReservedHeader => {
                f.write_str("header is written by the encoder and cannot be supplied")
            }
            HttpError::InvalidHead(e) => write!(f, "invalid response head: {e}"),
            HttpError::TooManyHeaders => {
                write!(f, "response has more than {MAX_HEADERS} headers")
            }
            HttpError::HeadTooLarge => {
                write!(f, "response head is larger than {MAX_HEAD_BYTES} bytes")
            }
            HttpError::InvalidContentLength => f.write_str("invalid content-length"),
            HttpError::InvalidChunkSize => f.write_str("invalid chunk size line"),
            HttpError::ChunkSizeTooLarge => f.write_str("chunk size exceeds u32 range"),
            HttpError::MissingCrlf => f.write_str("missing CRLF in chunked body"),
            HttpError::LineTooLong => f.write_str("chunk extension or trailer line too long"),
            HttpError::BodyTooLarge => f.write_str("response body exceeds the size limit"),
            HttpError::UnexpectedEof => f.write_str("connection closed before the body ended"),
        }
    }
}

impl std::error::Error for HttpError {}

#[cfg(test)]
mod tests;
