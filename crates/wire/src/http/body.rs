//! Response body framing: `Content-Length`, chunked, until-close or none — incremental.
//!
//! [`BodyDecoder::feed`] takes whatever bytes the last read produced, appends the payload to the
//! caller's buffer and consumes everything up to the end of the body, so the caller never has to
//! keep undecoded bytes around. It is a byte-level state machine for the framing lines and a bulk
//! copy for payload, so any split of the input gives the same payload.

use super::{Head, HttpError};

/// Longest chunk extension or trailer line accepted, in bytes.
pub const MAX_LINE_BYTES: usize = 8 * 1024;

/// How the end of a response body is found (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// Exactly this many bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Everything until the server closes the connection.
    UntilClose,
    /// No body at all: 1xx, 204 and 304 responses, and responses to `HEAD`.
    None,
}

impl BodyKind {
    /// The framing of the body that follows `head`, for a request made with `HEAD` or not.
    pub fn from_head(head: &Head, head_request: bool) -> BodyKind {
        if head_request || head.status < 200 || head.status == 204 || head.status == 304 {
            BodyKind::None
        } else if head.chunked {
            BodyKind::Chunked
        } else if let Some(n) = head.content_length {
            BodyKind::Length(n)
        } else {
            BodyKind::UntilClose
        }
    }
}

/// The result of one [`BodyDecoder::feed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feed {
    /// Input bytes used. Less than the input length only when the body ended (`done`) before
    /// the input did; the rest belongs to whatever follows on the connection.
    pub consumed: usize,
    /// The body is complete.
    pub done: bool,
}

/// Where the decoder is inside the framing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Payload bytes still expected for a `Content-Length` body.
    Length {
        remaining: u64,
    },
    UntilClose,
    /// Reading the hex digits of a chunk size; `any` once at least one was seen.
    Size {
        size: u64,
        any: bool,
    },
    /// After the digits: optional whitespace, then `;` (extension) or CR.
    SizeTail {
        size: u64,
    },
    /// Inside a chunk extension; `len` bytes seen so far.
    Extension {
        size: u64,
        len: usize,
    },
    /// Saw CR ending the size line.
    SizeLf {
        size: u64,
    },
    /// Payload bytes left in the current chunk.
    Data {
        remaining: u64,
    },
    DataCr,
    DataLf,
    /// At the start of a line after the last chunk: a trailer field, or CR of the final CRLF.
    TrailerStart,
    Trailer {
        len: usize,
    },
    TrailerLf,
    FinalLf,
    Done,
    Failed(HttpError),
}

/// Incremental decoder for one response body.
#[derive(Clone, Debug)]
pub struct BodyDecoder {
    state: State,
    /// Payload bytes produced so far.
    total_bytes: u64,
    max_body_bytes: u64,
}

impl BodyDecoder {
    /// A decoder for a body framed as `kind`, with no size limit.
    pub fn new(kind: BodyKind) -> BodyDecoder {
        let state = match kind {
            BodyKind::Length(0) | BodyKind::None => State::Done,
            BodyKind::Length(n) => State::Length { remaining: n },
            BodyKind::Chunked => State::Size {
                size: 0,
                any: false,
            },
            BodyKind::UntilClose => State::UntilClose,
        };
        BodyDecoder {
            state,
            total_bytes: 0,
            max_body_bytes: u64::MAX,
        }
    }

    /// Fails with [`HttpError::BodyTooLarge`] once the payload would exceed `max_body_bytes`.
    pub fn with_max_body_bytes(mut self, max_body_bytes: u64) -> BodyDecoder {
        self.max_body_bytes = max_body_bytes;
        self
    }

    /// The body is complete.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Payload bytes appended so far.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Decodes `input`, appending payload bytes to `out`.
    ///
    /// Consumes all of `input` unless the body ends inside it. An error is final: every later
    /// call returns it again.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Feed, HttpError> {
        let result = self.step(input, out);
        if let Err(e) = result {
            self.state = State::Failed(e);
        }
        result
    }

    /// The connection reached end of file: fine for an until-close body or a finished one.
    pub fn finish_eof(&mut self) -> Result<(), HttpError> {
        match self.state {
            State::Done => Ok(()),
            State::UntilClose => {
                self.state = State::Done;
                Ok(())
            }
            State::Failed(e) => Err(e),
            _ => {
                self.state = State::Failed(HttpError::UnexpectedEof);
                Err(HttpError::UnexpectedEof)
            }
        }
    }

    fn step(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Feed, HttpError> {
        let mut pos = 0;
        loop {
            let rest = input.get(pos..).unwrap_or_default();
            match self.state {
                State::Done => {
                    return Ok(Feed {
                        consumed: pos,
                        done: true,
                    });
                }
                State::Failed(e) => return Err(e),
                _ if rest.is_empty() => {
                    return Ok(Feed {
                        consumed: pos,
                        done: false,
                    });
                }
                State::UntilClose => {
                    self.emit(rest, out)?;
                    pos = input.len();
                }
                State::Length { remaining } | State::Data { remaining } => {
                    let take = rest
                        .len()
                        .min(usize::try_from(remaining).unwrap_or(usize::MAX));
                    let (payload, _) = rest.split_at(take);
                    self.emit(payload, out)?;
                    pos += take;
                    let remaining = remaining - take as u64;
                    self.state = match (self.state, remaining) {
                        (State::Length { .. }, 0) => State::Done,
                        (State::Length { .. }, _) => State::Length { remaining },
                        (_, 0) => State::DataCr,
                        _ => State::Data { remaining },
                    };
                }
                _ => {
                    // Framing lines are short: a byte at a time, until payload starts again.
                    for &b in rest {
                        self.state = self.framing_byte(b)?;
                        pos += 1;
                        if matches!(self.state, State::Data { .. } | State::Done) {
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Appends payload, enforcing the size limit.
    fn emit(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), HttpError> {
        let total = self.total_bytes.saturating_add(payload.len() as u64);
        if total > self.max_body_bytes {
            return Err(HttpError::BodyTooLarge);
        }
        self.total_bytes = total;
        out.extend_from_slice(payload);
        Ok(())
    }

    /// One byte of chunk framing (size lines, CRLF after data, trailers).
    fn framing_byte(&self, b: u8) -> Result<State, HttpError> {
        let next = match self.state {
            State::Size { size, any } => match hex_value(b) {
                Some(d) => {
                    let size = size * 16 + u64::from(d);
                    if size > u64::from(u32::MAX) {
                        return Err(HttpError::ChunkSizeTooLarge);
                    }
                    State::Size { size, any: true }
                }
                None if !any => return Err(HttpError::InvalidChunkSize),
                None => size_tail(size, b)?,
            },
            State::SizeTail { size } => size_tail(size, b)?,
            State::Extension { size, len } => match b {
                b'\r' => State::SizeLf { size },
                b'\n' => return Err(HttpError::MissingCrlf),
                _ if len >= MAX_LINE_BYTES => return Err(HttpError::LineTooLong),
                _ => State::Extension { size, len: len + 1 },
            },
            State::SizeLf { size } => match b {
                b'\n' if size == 0 => State::TrailerStart,
                b'\n' => {
                    if self.total_bytes.saturating_add(size) > self.max_body_bytes {
                        return Err(HttpError::BodyTooLarge);
                    }
                    State::Data { remaining: size }
                }
                _ => return Err(HttpError::MissingCrlf),
            },
            State::DataCr => match b {
                b'\r' => State::DataLf,
                _ => return Err(HttpError::MissingCrlf),
            },
            State::DataLf | State::TrailerLf => match b {
                b'\n' if self.state == State::DataLf => State::Size {
                    size: 0,
                    any: false,
                },
                b'\n' => State::TrailerStart,
                _ => return Err(HttpError::MissingCrlf),
            },
            State::TrailerStart => match b {
                b'\r' => State::FinalLf,
                b'\n' => return Err(HttpError::MissingCrlf),
                _ => State::Trailer { len: 1 },
            },
            State::Trailer { len } => match b {
                b'\r' => State::TrailerLf,
                b'\n' => return Err(HttpError::MissingCrlf),
                _ if len >= MAX_LINE_BYTES => return Err(HttpError::LineTooLong),
                _ => State::Trailer { len: len + 1 },
            },
            State::FinalLf => match b {
                b'\n' => State::Done,
                _ => return Err(HttpError::MissingCrlf),
            },
            // Payload, until-close, done and failed states never reach the byte machine.
            other => other,
        };
        Ok(next)
    }
}

/// A byte after the chunk-size digits: bad whitespace, an extension, or the end of the line.
fn size_tail(size: u64, b: u8) -> Result<State, HttpError> {
    match b {
        b' ' | b'\t' => Ok(State::SizeTail { size }),
        b';' => Ok(State::Extension { size, len: 0 }),
        b'\r' => Ok(State::SizeLf { size }),
        b'\n' => Err(HttpError::MissingCrlf),
        _ => Err(HttpError::InvalidChunkSize),
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
