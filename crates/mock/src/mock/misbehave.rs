//! The bytes and socket tricks behind [`super::fault::Fault`]: resets, silence, trickling, bad
//! chunk framing, garbage and error SSE messages, error statuses and huge bodies. Each acts on the
//! stream (any monoio stream) or buffer it is handed; none knows about connections or servers.

use std::io;
use std::os::fd::AsRawFd;

use monoio::buf::IoBuf;
use monoio::io::{AsyncReadRent, AsyncWriteRent, AsyncWriteRentExt};

use super::fault::{SLOW_LORIS_BYTE_INTERVAL, SSE_ERROR_COMMENT};
use super::wire;

/// Size of the blocks a huge body's padding is written in.
const PAD_BLOCK: usize = 1 << 20;

/// Makes the coming close of `stream` a reset (RST) instead of an orderly FIN.
pub(crate) fn reset_on_close(stream: &impl AsRawFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // A refused option (never seen on TCP) leaves the close a FIN: the client still sees the
    // connection end early, so the result is not needed.
    // SAFETY: the descriptor belongs to `stream`, which is alive for the whole call; `linger` is
    // a valid, initialised `struct linger` and the length passed is exactly its size. The call
    // only reads from the pointer.
    let _ = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast::<libc::c_void>(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
}

/// Reads and discards everything until the client closes the connection (or it fails).
pub(crate) async fn drain_until_closed(stream: &mut impl AsyncReadRent) {
    let mut buf = vec![0u8; 4096];
    loop {
        let (res, b) = stream.read(buf).await;
        buf = b;
        match res {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Writes `buf` one byte at a time, [`SLOW_LORIS_BYTE_INTERVAL`] apart, and hands it back
/// cleared. Stops at the first failed write (the client gave up).
pub(crate) async fn trickle(stream: &mut impl AsyncWriteRent, buf: &mut Vec<u8>) -> io::Result<()> {
    let mut owned = std::mem::take(buf);
    let mut result = Ok(());
    for i in 0..owned.len() {
        if i > 0 {
            monoio::time::sleep(SLOW_LORIS_BYTE_INTERVAL).await;
        }
        let (res, slice) = stream.write_all(owned.slice(i..i + 1)).await;
        owned = slice.into_inner();
        if let Err(e) = res {
            result = Err(e);
            break;
        }
    }
    owned.clear();
    *buf = owned;
    result
}

/// The head of a chunked response of `content_type`.
pub(crate) fn chunked_head(out: &mut Vec<u8>, content_type: &str, close: bool) {
    out.extend_from_slice(b"HTTP/1.1 200 OK\r\nserver: ringperf-mock\r\ncontent-type: ");
    out.extend_from_slice(content_type.as_bytes());
    out.extend_from_slice(b"\r\ntransfer-encoding: chunked\r\n");
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// A chunk whose size line is not hexadecimal, followed by a little payload.
pub(crate) fn bad_chunk(out: &mut Vec<u8>) {
    out.extend_from_slice(b"zz\r\ndata: {}\n\n\r\n");
}

/// The garbage SSE messages [`super::fault::Fault::GarbageSse`] cycles through: invalid UTF-8, a
/// truncated JSON object, non-JSON data, a line with no field, a comment, an unknown field.
/// None of them is a response a client should count.
const GARBAGE: [&[u8]; 6] = [
    b"data: \xff\xfe\xfd\xc3\x28 not utf-8 \xe2\x82\n\n",
    b"data: {\"id\": \"truncated\", \"choices\": [{\n\n",
    b"data: this is not json at all\n\n",
    b"\xff\xfegarbage line without a colon\n\n",
    b": a comment line \xf0\x9f\n\n",
    b"retry: abc\nid: \xc0\xc1\n\n",
];

/// Appends garbage message number `i` (cycling) as one HTTP chunk.
pub(crate) fn garbage_chunk(out: &mut Vec<u8>, i: u64) {
    let g = GARBAGE[(i % GARBAGE.len() as u64) as usize];
    wire::chunk(out, g);
}

/// Appends the `event: error` message (with its comment) as one HTTP chunk.
pub(crate) fn error_event_chunk(out: &mut Vec<u8>) {
    let msg = format!("event: error\n: {SSE_ERROR_COMMENT}\n\n");
    wire::chunk(out, msg.as_bytes());
}

/// An error status response with an OpenAI-shaped JSON body.
pub(crate) fn status_response(out: &mut Vec<u8>, code: u16, close: bool) {
    let body = wire::error_body(code, &format!("mock fault: injected HTTP {code}"));
    wire::head(out, code, "application/json", body.len(), close);
    out.extend_from_slice(&body);
}

/// Sends `body` (a whole JSON object, in `body`) padded with spaces before its closing brace to
/// `bytes` bytes (never less than the body itself). `before_write` is called with nothing yet
/// written and again before the last write, for the truth log's stamps.
pub(crate) async fn send_huge(
    stream: &mut impl AsyncWriteRent,
    wbuf: &mut Vec<u8>,
    body: &[u8],
    bytes: u64,
    close: bool,
    mut before_write: impl FnMut(),
) -> io::Result<()> {
    let Some((&last, json_open)) = body.split_last() else {
        return Ok(());
    };
    let total = bytes.max(body.len() as u64);
    let mut pad = total - body.len() as u64;
    wire::head(
        wbuf,
        200,
        "application/json",
        usize::try_from(total).unwrap_or(usize::MAX),
        close,
    );
    wbuf.extend_from_slice(json_open);
    before_write();
    wire::send(stream, wbuf).await?;
    let mut block = vec![b' '; PAD_BLOCK];
    while pad > 0 {
        let n = pad.min(PAD_BLOCK as u64) as usize;
        let (res, slice) = stream.write_all(block.slice(0..n)).await;
        block = slice.into_inner();
        res?;
        pad -= n as u64;
    }
    wbuf.push(last);
    before_write();
    wire::send(stream, wbuf).await
}
