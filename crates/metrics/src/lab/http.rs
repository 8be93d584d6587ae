//! A small blocking HTTP/1.1 client for the control plane of a run (the readiness probe, the
//! KV-cache reset, the profiler calls) and the experiment trackers: one request per connection
//! (`Connection: close`), plain `http://` only, every connect, write and read bounded by one
//! timeout. The response head and body are read with the project's own parser
//! ([`ringperf_wire::http::parse_head`], [`ringperf_wire::http::BodyDecoder`]). Not for the measured traffic,
//! which the workers send.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use ringperf_wire::http::{BodyDecoder, BodyKind, Status, parse_head};

/// Largest response body kept (a `/v1/models` list or a tracker's answer is far smaller).
const MAX_BODY_BYTES: u64 = 16 << 20;

/// One request to send.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    /// `GET` or `POST`.
    pub method: &'a str,
    /// The server's address.
    pub addr: SocketAddr,
    /// The `Host` header value.
    pub host: &'a str,
    /// Path and query, from `/`.
    pub path: &'a str,
    /// Extra headers (authorization and the like).
    pub headers: &'a [(String, String)],
    /// The body, sent as `application/json` when not empty.
    pub body: &'a [u8],
    /// The whole exchange's limit: connect, write and every read share it.
    pub timeout: Duration,
}

/// An answer: its status and decoded body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Why a request got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// Connecting, writing or reading failed (refused, reset, closed early).
    Io(String),
    /// The exchange took longer than its timeout.
    Timeout,
    /// The answer is not HTTP/1.x, or its body is malformed or too large.
    Malformed(String),
}

impl CallError {
    /// A failure that may pass if tried again (no answer at all, as opposed to a bad one).
    pub fn retryable(&self) -> bool {
        matches!(self, CallError::Io(_) | CallError::Timeout)
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Io(e) => write!(f, "{e}"),
            CallError::Timeout => f.write_str("timed out"),
            CallError::Malformed(e) => write!(f, "malformed answer: {e}"),
        }
    }
}

impl std::error::Error for CallError {}

fn io_err(e: &std::io::Error) -> CallError {
    if matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    ) {
        CallError::Timeout
    } else {
        CallError::Io(e.to_string())
    }
}

/// The request's bytes: the head (`Connection: close`) and the body.
fn encode(r: &Request<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + r.body.len());
    let _ = write!(
        out,
        "{} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: ringperf\r\nAccept: */*\r\nConnection: close\r\n",
        r.method, r.path, r.host
    );
    for (k, v) in r.headers {
        let _ = write!(out, "{k}: {v}\r\n");
    }
    if !r.body.is_empty() || r.method == "POST" {
        let typed = r
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
        if !typed {
            out.extend_from_slice(b"Content-Type: application/json\r\n");
        }
        let _ = write!(out, "Content-Length: {}\r\n", r.body.len());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(r.body);
    out
}

/// Sends `r` and reads the whole answer.
///
/// # Errors
/// No answer within the timeout, a socket error, or an answer that does not parse.
pub fn call(r: &Request<'_>) -> Result<Response, CallError> {
    let deadline = Instant::now() + r.timeout;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or(CallError::Timeout)
    };
    let mut s = TcpStream::connect_timeout(&r.addr, left()?).map_err(|e| io_err(&e))?;
    let _ = s.set_nodelay(true);
    s.set_write_timeout(Some(left()?)).map_err(|e| io_err(&e))?;
    s.write_all(&encode(r)).map_err(|e| io_err(&e))?;
    let mut buf = Vec::with_capacity(8 * 1024);
    let mut chunk = [0u8; 16 * 1024];
    let mut read = |s: &mut TcpStream, buf: &mut Vec<u8>| -> Result<usize, CallError> {
        s.set_read_timeout(Some(left()?)).map_err(|e| io_err(&e))?;
        let n = s.read(&mut chunk).map_err(|e| io_err(&e))?;
        buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    };
    // The head, skipping interim 1xx answers.
    let head = loop {
        match parse_head(&buf).map_err(|e| CallError::Malformed(e.to_string()))? {
            Status::Complete(h) if h.is_interim() => {
                buf.drain(..h.head_len);
            }
            Status::Complete(h) => break h,
            Status::Partial => {
                if read(&mut s, &mut buf)? == 0 {
                    return Err(CallError::Io(
                        "the server closed the connection before answering".into(),
                    ));
                }
            }
        }
    };
    let kind = BodyKind::from_head(&head, r.method == "HEAD");
    let mut dec = BodyDecoder::new(kind).with_max_body_bytes(MAX_BODY_BYTES);
    let mut body = Vec::new();
    let mut pending: Vec<u8> = buf.split_off(head.head_len);
    loop {
        if !pending.is_empty() {
            let f = dec
                .feed(&pending, &mut body)
                .map_err(|e| CallError::Malformed(e.to_string()))?;
            pending.drain(..f.consumed);
        }
        if dec.is_done() {
            break;
        }
        if read(&mut s, &mut pending)? == 0 {
            dec.finish_eof()
                .map_err(|e| CallError::Malformed(e.to_string()))?;
            break;
        }
    }
    Ok(Response {
        status: head.status,
        body,
    })
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader};
    use std::net::TcpListener;

    use super::*;

    /// A one-shot server on 127.0.0.1: reads one request head, answers `reply`, returns the
    /// request head it read.
    fn serve_once(reply: &'static [u8]) -> (SocketAddr, std::thread::JoinHandle<String>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut r = BufReader::new(s);
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            r.get_mut().write_all(reply).unwrap();
            head
        });
        (addr, t)
    }

    fn req(addr: SocketAddr, method: &'static str) -> Request<'static> {
        Request {
            method,
            addr,
            host: "h:1",
            path: "/x?y=1",
            headers: &[],
            body: b"",
            timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn reads_a_chunked_body_after_an_interim_answer() {
        let (addr, t) = serve_once(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
              3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        );
        let r = call(&req(addr, "GET")).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"abcde"[..]));
        let head = t.join().unwrap();
        assert!(
            head.starts_with("GET /x?y=1 HTTP/1.1\r\nHost: h:1\r\n"),
            "{head}"
        );
        assert!(head.contains("Connection: close"), "{head}");
    }

    #[test]
    fn a_body_until_close_and_a_post_without_body_has_a_zero_length() {
        let (addr, t) = serve_once(b"HTTP/1.1 404 Not Found\r\n\r\nnope");
        let r = call(&req(addr, "POST")).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (404, &b"nope"[..]));
        assert!(t.join().unwrap().contains("Content-Length: 0"));
    }

    #[test]
    fn a_closed_connection_and_garbage_are_errors_not_panics() {
        let (addr, t) = serve_once(b"");
        let e = call(&req(addr, "GET")).unwrap_err();
        assert!(matches!(e, CallError::Io(_)) && e.retryable(), "{e:?}");
        t.join().unwrap();
        let (addr, t) = serve_once(b"\x00\x01 not http\r\n\r\n");
        let e = call(&req(addr, "GET")).unwrap_err();
        assert!(
            matches!(e, CallError::Malformed(_)) && !e.retryable(),
            "{e:?}"
        );
        t.join().unwrap();
        let (addr, t) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        assert!(call(&req(addr, "GET")).is_err());
        t.join().unwrap();
    }

    #[test]
    fn a_silent_server_times_out() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut r = req(l.local_addr().unwrap(), "GET");
        r.timeout = Duration::from_millis(200);
        assert_eq!(call(&r).unwrap_err(), CallError::Timeout);
        drop(l);
    }
}
