//! The WebSocket protocol's frames (RFC 6455 §5), for a server: a client's frames are read
//! incrementally from whatever bytes have arrived ([`Reader`]), assembled into messages
//! (fragmented text and binary messages joined, control frames between their fragments
//! answered at once), and the server's own frames are written unmasked ([`encode`]).
//!
//! The reader never panics and never allocates more than [`MAX_MESSAGE`] for one message: a
//! frame that breaks the protocol is a [`WsError`] carrying the close code the server sends
//! before it drops the connection. The same bytes give the same messages however they are cut
//! into reads (property-tested; `fuzz/fuzz_targets/ws_frames.rs`).

use std::fmt;

/// The largest message a client may send (a subscription is a few hundred bytes).
pub const MAX_MESSAGE: usize = 64 * 1024;

/// A frame's opcode (§5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opcode {
    Continuation,
    Text,
    Binary,
    Close,
    Ping,
    Pong,
}

impl Opcode {
    fn from_bits(b: u8) -> Option<Self> {
        Some(match b {
            0x0 => Self::Continuation,
            0x1 => Self::Text,
            0x2 => Self::Binary,
            0x8 => Self::Close,
            0x9 => Self::Ping,
            0xA => Self::Pong,
            _ => return None,
        })
    }

    fn bits(self) -> u8 {
        match self {
            Self::Continuation => 0x0,
            Self::Text => 0x1,
            Self::Binary => 0x2,
            Self::Close => 0x8,
            Self::Ping => 0x9,
            Self::Pong => 0xA,
        }
    }

    fn is_control(self) -> bool {
        matches!(self, Self::Close | Self::Ping | Self::Pong)
    }
}

/// A whole message from the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// A text message (valid UTF-8).
    Text(String),
    Binary(Vec<u8>),
    /// A ping: the server answers with a pong of the same payload.
    Ping(Vec<u8>),
    Pong(Vec<u8>),
    /// The client closes: its status code (none when the frame had no body) and reason.
    Close(Option<u16>, String),
}

/// Why the client's bytes are not the protocol; [`WsError::close_code`] is what the server
/// sends back before it drops the connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WsError {
    /// Reserved bits set, an unknown opcode, an unmasked client frame, a fragmented or long
    /// control frame, a continuation without a message, a new message inside one, a 64-bit
    /// length with its top bit set, a close body of one byte or with an invalid code.
    Protocol(&'static str),
    /// A text message or close reason that is not UTF-8.
    InvalidUtf8,
    /// A message larger than [`MAX_MESSAGE`].
    TooBig,
}

impl WsError {
    /// The close status the server answers with (§7.4.1): 1002, 1007 or 1009.
    pub fn close_code(&self) -> u16 {
        match self {
            Self::Protocol(_) => 1002,
            Self::InvalidUtf8 => 1007,
            Self::TooBig => 1009,
        }
    }
}

impl fmt::Display for WsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Protocol(why) => write!(f, "protocol error: {why}"),
            Self::InvalidUtf8 => f.write_str("text is not UTF-8"),
            Self::TooBig => write!(f, "message larger than {MAX_MESSAGE} bytes"),
        }
    }
}

impl std::error::Error for WsError {}

/// One frame's head, parsed from the front of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Head {
    fin: bool,
    opcode: Opcode,
    mask: [u8; 4],
    /// Bytes of the head.
    len: usize,
    /// Bytes of the payload that follows it.
    payload: usize,
}

/// The head at the front of `buf`: `Ok(None)` while it has not all arrived.
fn head(buf: &[u8]) -> Result<Option<Head>, WsError> {
    let [b0, b1, ..] = *buf else {
        return Ok(None);
    };
    if b0 & 0x70 != 0 {
        return Err(WsError::Protocol("reserved bits set"));
    }
    let opcode = Opcode::from_bits(b0 & 0x0F).ok_or(WsError::Protocol("unknown opcode"))?;
    let fin = b0 & 0x80 != 0;
    if b1 & 0x80 == 0 {
        return Err(WsError::Protocol("a client frame must be masked"));
    }
    let (payload, at) = match b1 & 0x7F {
        126 => {
            let Some(b) = buf.get(2..4) else {
                return Ok(None);
            };
            (u64::from(u16::from_be_bytes([b[0], b[1]])), 4)
        }
        127 => {
            let Some(b) = buf.get(2..10) else {
                return Ok(None);
            };
            let mut n = [0u8; 8];
            n.copy_from_slice(b);
            let n = u64::from_be_bytes(n);
            if n >> 63 != 0 {
                return Err(WsError::Protocol("a 64-bit length with its top bit set"));
            }
            (n, 10)
        }
        n => (u64::from(n), 2),
    };
    if opcode.is_control() && (!fin || payload > 125) {
        return Err(WsError::Protocol(
            "a control frame must be whole and at most 125 bytes",
        ));
    }
    if payload > MAX_MESSAGE as u64 {
        return Err(WsError::TooBig);
    }
    let Some(m) = buf.get(at..at + 4) else {
        return Ok(None);
    };
    Ok(Some(Head {
        fin,
        opcode,
        mask: [m[0], m[1], m[2], m[3]],
        len: at + 4,
        // At most MAX_MESSAGE (checked above).
        payload: payload as usize,
    }))
}

/// Reads a client's messages out of the bytes received so far. Feed it the unread part of the
/// connection's buffer; it says how much it consumed.
#[derive(Debug, Default)]
pub struct Reader {
    /// The opcode and the payload so far of a fragmented message.
    partial: Option<(Opcode, Vec<u8>)>,
}

impl Reader {
    pub fn new() -> Self {
        Self::default()
    }

    /// The next whole message at the front of `buf` and the bytes it took (frames of a
    /// fragmented message included), or `Ok((None, n))` when what is there is not yet a whole
    /// message: its `n` bytes of complete fragments are consumed and kept. After an error the
    /// connection is over (the reader's state is not meaningful).
    pub fn next(&mut self, buf: &[u8]) -> Result<(Option<Message>, usize), WsError> {
        let mut at = 0;
        loop {
            let Some(h) = head(&buf[at..])? else {
                return Ok((None, at));
            };
            let Some(masked) = buf.get(at + h.len..at + h.len + h.payload) else {
                return Ok((None, at));
            };
            let payload: Vec<u8> = masked
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ h.mask[i % 4])
                .collect();
            at += h.len + h.payload;
            if h.opcode.is_control() {
                return Ok((Some(control(h.opcode, payload)?), at));
            }
            let (opcode, data) = match (self.partial.take(), h.opcode) {
                (None, Opcode::Continuation) => {
                    return Err(WsError::Protocol("a continuation without a message"));
                }
                (Some(_), Opcode::Text | Opcode::Binary) => {
                    return Err(WsError::Protocol("a new message inside a fragmented one"));
                }
                (None, op) => (op, payload),
                (Some((op, mut data)), _) => {
                    if data.len() + payload.len() > MAX_MESSAGE {
                        return Err(WsError::TooBig);
                    }
                    data.extend_from_slice(&payload);
                    (op, data)
                }
            };
            if !h.fin {
                self.partial = Some((opcode, data));
                continue;
            }
            let message = match opcode {
                Opcode::Text => {
                    Message::Text(String::from_utf8(data).map_err(|_| WsError::InvalidUtf8)?)
                }
                _ => Message::Binary(data),
            };
            return Ok((Some(message), at));
        }
    }
}

/// A control frame's message.
fn control(opcode: Opcode, payload: Vec<u8>) -> Result<Message, WsError> {
    Ok(match opcode {
        Opcode::Ping => Message::Ping(payload),
        Opcode::Pong => Message::Pong(payload),
        _ => match payload.as_slice() {
            [] => Message::Close(None, String::new()),
            [_] => return Err(WsError::Protocol("a close body of one byte")),
            [a, b, reason @ ..] => {
                let code = u16::from_be_bytes([*a, *b]);
                // §7.4: the codes an endpoint may send.
                let valid = matches!(code, 1000..=1003 | 1007..=1011 | 3000..=4999);
                if !valid {
                    return Err(WsError::Protocol("an invalid close code"));
                }
                let reason = std::str::from_utf8(reason).map_err(|_| WsError::InvalidUtf8)?;
                Message::Close(Some(code), reason.to_owned())
            }
        },
    })
}

/// Appends a server frame (unmasked, final) of `opcode` carrying `payload` to `out`.
pub fn encode(opcode: Opcode, payload: &[u8], out: &mut Vec<u8>) {
    out.push(0x80 | opcode.bits());
    push_len(payload.len(), 0, out);
    out.extend_from_slice(payload);
}

/// Appends a close frame with `code` and `reason` (cut to fit a control frame) to `out`.
pub fn encode_close(code: u16, reason: &str, out: &mut Vec<u8>) {
    let mut end = reason.len().min(123);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let mut body = Vec::with_capacity(2 + end);
    body.extend_from_slice(&code.to_be_bytes());
    body.extend_from_slice(&reason.as_bytes()[..end]);
    encode(Opcode::Close, &body, out);
}

/// Appends a client frame (masked with `mask`) to `out`: what a client sends, for tests and
/// tools that talk to the server.
pub fn encode_masked(opcode: Opcode, fin: bool, payload: &[u8], mask: [u8; 4], out: &mut Vec<u8>) {
    out.push(if fin { 0x80 } else { 0 } | opcode.bits());
    push_len(payload.len(), 0x80, out);
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
}

fn push_len(n: usize, mask_bit: u8, out: &mut Vec<u8>) {
    if n < 126 {
        out.push(mask_bit | n as u8);
    } else if let Ok(n) = u16::try_from(n) {
        out.push(mask_bit | 126);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(mask_bit | 127);
        out.extend_from_slice(&(n as u64).to_be_bytes());
    }
}

/// A server frame's opcode and payload at the front of `buf` and the bytes it took: what a
/// client reads (servers do not mask). `None` while incomplete or when `buf` does not start
/// with an unmasked frame.
pub fn decode_server_frame(buf: &[u8]) -> Option<(Opcode, &[u8], usize)> {
    let [b0, b1, ..] = *buf else {
        return None;
    };
    if b1 & 0x80 != 0 {
        return None;
    }
    let opcode = Opcode::from_bits(b0 & 0x0F)?;
    let (n, at): (usize, usize) = match b1 & 0x7F {
        126 => (
            usize::from(u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?])),
            4,
        ),
        127 => {
            let b = buf.get(2..10)?;
            let mut n = [0u8; 8];
            n.copy_from_slice(b);
            (usize::try_from(u64::from_be_bytes(n)).ok()?, 10)
        }
        n => (usize::from(n), 2),
    };
    let payload = buf.get(at..at.checked_add(n)?)?;
    Some((opcode, payload, at + n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

    fn client(opcode: Opcode, fin: bool, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_masked(opcode, fin, payload, MASK, &mut out);
        out
    }

    /// Every message in `bytes`, fed in the chunks `cuts` make, as a server reads a socket.
    fn read_all(bytes: &[u8], cuts: &[usize]) -> Result<Vec<Message>, WsError> {
        let mut reader = Reader::new();
        let mut buf = Vec::new();
        let mut out = Vec::new();
        let mut start = 0;
        for &end in cuts.iter().chain(std::iter::once(&bytes.len())) {
            let end = end.clamp(start, bytes.len());
            buf.extend_from_slice(&bytes[start..end]);
            start = end;
            loop {
                let (m, used) = reader.next(&buf)?;
                buf.drain(..used);
                match m {
                    Some(m) => out.push(m),
                    None => break,
                }
            }
        }
        Ok(out)
    }

    #[test]
    fn rfc_6455_examples_read_as_the_rfc_says() {
        // §5.7: a single-frame masked text message "Hello".
        let hello = [
            0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
        ];
        assert_eq!(
            read_all(&hello, &[]).unwrap(),
            vec![Message::Text("Hello".into())]
        );
        // §5.7: the unmasked server frames, as a client reads them.
        let mut out = Vec::new();
        encode(Opcode::Text, b"Hello", &mut out);
        assert_eq!(out, [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]);
        assert_eq!(
            decode_server_frame(&out),
            Some((Opcode::Text, &b"Hello"[..], 7))
        );
        // 256 and 65536 bytes: the 16- and 64-bit lengths of §5.7's binary examples.
        let mut out = Vec::new();
        encode(Opcode::Binary, &[0; 256], &mut out);
        assert_eq!(&out[..4], &[0x82, 0x7E, 0x01, 0x00]);
        let mut out = Vec::new();
        encode(Opcode::Binary, &[0; 65536], &mut out);
        assert_eq!(&out[..10], &[0x82, 0x7F, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00]);
    }

    #[test]
    fn fragments_join_and_a_ping_between_them_comes_first() {
        let mut bytes = client(Opcode::Text, false, b"Hel");
        bytes.extend(client(Opcode::Ping, true, b"p"));
        bytes.extend(client(Opcode::Continuation, true, b"lo"));
        assert_eq!(
            read_all(&bytes, &[]).unwrap(),
            vec![Message::Ping(b"p".to_vec()), Message::Text("Hello".into())]
        );
    }

    #[test]
    fn protocol_breaches_are_errors_with_their_close_codes() {
        let unmasked = [0x81, 0x01, b'a'];
        assert_eq!(read_all(&unmasked, &[]).unwrap_err().close_code(), 1002);
        let reserved = [0xC1, 0x80, 0, 0, 0, 0];
        assert!(matches!(
            read_all(&reserved, &[]),
            Err(WsError::Protocol(_))
        ));
        let long_ping = client(Opcode::Ping, true, &[0; 126]);
        assert_eq!(read_all(&long_ping, &[]).unwrap_err().close_code(), 1002);
        let stray = client(Opcode::Continuation, true, b"x");
        assert_eq!(read_all(&stray, &[]).unwrap_err().close_code(), 1002);
        let bad_text = client(Opcode::Text, true, &[0xff, 0xfe]);
        assert_eq!(read_all(&bad_text, &[]).unwrap_err().close_code(), 1007);
        let big = client(Opcode::Binary, true, &vec![0; MAX_MESSAGE + 1]);
        assert_eq!(read_all(&big, &[]).unwrap_err().close_code(), 1009);
        let mut pieces = client(Opcode::Binary, false, &vec![0; MAX_MESSAGE]);
        pieces.extend(client(Opcode::Continuation, true, b"x"));
        assert_eq!(read_all(&pieces, &[]).unwrap_err(), WsError::TooBig);
        let one_byte_close = client(Opcode::Close, true, &[3]);
        assert_eq!(
            read_all(&one_byte_close, &[]).unwrap_err().close_code(),
            1002
        );
        let reserved_code = client(Opcode::Close, true, &1005u16.to_be_bytes());
        assert_eq!(
            read_all(&reserved_code, &[]).unwrap_err().close_code(),
            1002
        );
    }

    #[test]
    fn a_close_reads_its_code_and_reason() {
        let mut body = 1000u16.to_be_bytes().to_vec();
        body.extend_from_slice(b"bye");
        assert_eq!(
            read_all(&client(Opcode::Close, true, &body), &[]).unwrap(),
            vec![Message::Close(Some(1000), "bye".into())]
        );
        assert_eq!(
            read_all(&client(Opcode::Close, true, &[]), &[]).unwrap(),
            vec![Message::Close(None, String::new())]
        );
        // The server's close: code first, the reason cut to a control frame's 125 bytes.
        let mut out = Vec::new();
        encode_close(1013, &"é".repeat(100), &mut out);
        let (op, payload, _) = decode_server_frame(&out).unwrap();
        assert_eq!(op, Opcode::Close);
        assert!(payload.len() <= 125);
        assert_eq!(&payload[..2], &1013u16.to_be_bytes());
        assert!(std::str::from_utf8(&payload[2..]).is_ok());
    }

    fn frame_strategy() -> impl Strategy<Value = (u8, bool, Vec<u8>)> {
        (
            0u8..4,
            any::<bool>(),
            prop::collection::vec(any::<u8>(), 0..300),
        )
    }

    proptest! {
        /// Any cut of any client byte stream (well-formed or not) gives the same messages, or
        /// the same error, as reading it whole.
        #[test]
        fn reads_are_split_invariant(
            frames in prop::collection::vec(frame_strategy(), 0..8),
            cuts in prop::collection::vec(0usize..3000, 0..8),
            tail in prop::collection::vec(any::<u8>(), 0..16),
        ) {
            let mut bytes = Vec::new();
            for (kind, fin, payload) in &frames {
                let op = [Opcode::Text, Opcode::Binary, Opcode::Continuation, Opcode::Ping][*kind as usize];
                let payload: Vec<u8> = if op == Opcode::Ping { payload.iter().take(125).copied().collect() } else { payload.clone() };
                let fin = *fin || op == Opcode::Ping;
                bytes.extend(client(op, fin, &payload));
            }
            bytes.extend(tail);
            let mut cuts = cuts;
            cuts.sort_unstable();
            prop_assert_eq!(read_all(&bytes, &cuts), read_all(&bytes, &[]));
        }

        /// Whatever a server encodes, a client decodes back.
        #[test]
        fn server_frames_round_trip(payload in prop::collection::vec(any::<u8>(), 0..70_000)) {
            let mut out = Vec::new();
            encode(Opcode::Binary, &payload, &mut out);
            let (op, got, used) = decode_server_frame(&out).unwrap();
            prop_assert_eq!(op, Opcode::Binary);
            prop_assert_eq!(got, &payload[..]);
            prop_assert_eq!(used, out.len());
        }
    }
}
