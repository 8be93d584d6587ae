//! The live API's HTTP/1.1 and WebSocket server: one thread accepts, one thread per connection
//! serves it (requests in order on a kept-alive connection, or the WebSocket it upgraded to).
//! Nothing here runs on a worker's core: the threads are pinned where the aggregator is, or
//! float when there is no spare core ([`Server::start`]).
//!
//! The routes are the caller's ([`Handler`]); this module only frames requests and responses,
//! upgrades `/ws`, and relays the [`Hub`]'s messages to each WebSocket's subscriptions.

use std::collections::HashSet;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use ringperf_wire::ws::{self, Message, Opcode};

/// Longest request head.
const MAX_HEAD: usize = 16 * 1024;
/// Longest request body (the API's POST routes take none).
const MAX_BODY: usize = 64 * 1024;
/// Connections served at once; one more is answered 503 and closed.
const MAX_CONNECTIONS: usize = 256;
/// WebSocket clients at once (AIPerf's `AIPERF_API_SERVER_WEBSOCKET_MAX_CONNECTIONS`).
pub const MAX_WEBSOCKETS: usize = 100;
/// How often an idle connection's thread looks at the stop flag and its outgoing messages.
const POLL: Duration = Duration::from_millis(50);
/// A kept-alive HTTP connection with no request for this long is closed.
const IDLE: Duration = Duration::from_secs(60);
/// Messages waiting for one WebSocket client; a client that falls this far behind loses the
/// newest ones (counted in the log, never blocking the run).
const WS_QUEUE: usize = 4096;
/// Bodies at least this long are gzipped for a client that accepts it.
const GZIP_MIN: usize = 500;

/// A request as the routes see it.
#[derive(Debug)]
pub struct Request {
    pub method: String,
    /// The path without its query.
    pub path: String,
    pub query: String,
}

/// A response: status, content type and body; `extra` headers after the standard ones.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub extra: Vec<(&'static str, String)>,
}

impl Response {
    pub fn json(status: u16, v: &serde_json::Value) -> Self {
        Self {
            status,
            content_type: "application/json",
            body: serde_json::to_vec(v).unwrap_or_default(),
            extra: Vec::new(),
        }
    }

    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into().into_bytes(),
            extra: Vec::new(),
        }
    }

    /// FastAPI's error shape: `{"detail": "..."}`.
    pub fn detail(status: u16, detail: &str) -> Self {
        Self::json(status, &serde_json::json!({ "detail": detail }))
    }
}

/// What answers the HTTP routes.
pub trait Handler: Send + Sync + 'static {
    fn handle(&self, req: &Request) -> Response;
}

/// A message on its way to the WebSocket clients subscribed to its type.
struct Subscriber {
    id: u64,
    types: HashSet<String>,
    tx: Sender<Arc<str>>,
}

/// The WebSocket clients and their subscriptions; [`Hub::publish`] sends a message to every
/// client subscribed to its type (or to `*`).
#[derive(Default)]
pub struct Hub {
    subscribers: Mutex<Vec<Subscriber>>,
    next_id: AtomicUsize,
    /// Messages a slow client did not take.
    pub dropped: AtomicUsize,
}

impl Hub {
    /// Whether any client listens for `message_type` (a message nobody wants is not built).
    pub fn wants(&self, message_type: &str) -> bool {
        self.subscribers.lock().is_ok_and(|s| {
            s.iter()
                .any(|c| c.types.contains("*") || c.types.contains(message_type))
        })
    }

    /// Sends `json` (a message of `message_type`) to its subscribers.
    pub fn publish(&self, message_type: &str, json: &str) {
        let Ok(subs) = self.subscribers.lock() else {
            return;
        };
        let mut text: Option<Arc<str>> = None;
        for c in subs.iter() {
            if c.types.contains("*") || c.types.contains(message_type) {
                let t = text.get_or_insert_with(|| Arc::from(json)).clone();
                if let Err(TrySendError::Full(_)) = c.tx.try_send(t) {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// A new client, or `None` when [`MAX_WEBSOCKETS`] are connected.
    pub(super) fn join(&self) -> Option<(u64, Receiver<Arc<str>>)> {
        let mut subs = self.subscribers.lock().ok()?;
        if subs.len() >= MAX_WEBSOCKETS {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) as u64;
        let (tx, rx) = crossbeam_channel::bounded(WS_QUEUE);
        subs.push(Subscriber {
            id,
            types: HashSet::new(),
            tx,
        });
        Some((id, rx))
    }

    fn leave(&self, id: u64) {
        if let Ok(mut subs) = self.subscribers.lock() {
            subs.retain(|s| s.id != id);
        }
    }

    fn update(&self, id: u64, types: &[String], add: bool) {
        if let Ok(mut subs) = self.subscribers.lock()
            && let Some(s) = subs.iter_mut().find(|s| s.id == id)
        {
            for t in types {
                if add {
                    s.types.insert(t.clone());
                } else {
                    s.types.remove(t);
                }
            }
        }
    }

    /// Connected WebSocket clients.
    pub fn clients(&self) -> usize {
        self.subscribers.lock().map_or(0, |s| s.len())
    }
}

/// The running server.
pub struct Server {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` and starts accepting; the threads are pinned to `core` when given.
    ///
    /// # Errors
    /// The address cannot be bound (in use, not local, no permission).
    pub fn start(
        addr: SocketAddr,
        handler: Arc<dyn Handler>,
        hub: Arc<Hub>,
        core: Option<usize>,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("ringperf-api".into())
                .spawn(move || {
                    pin(core);
                    accept_loop(&listener, &handler, &hub, &stop, core);
                })?
        };
        Ok(Self {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// Stops accepting, closes every connection (WebSockets with a close frame) and waits for
    /// the threads.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn pin(core: Option<usize>) {
    if let Some(id) = core {
        core_affinity::set_for_current(core_affinity::CoreId { id });
    }
}

fn accept_loop(
    listener: &TcpListener,
    handler: &Arc<dyn Handler>,
    hub: &Arc<Hub>,
    stop: &Arc<AtomicBool>,
    core: Option<usize>,
) {
    let live = Arc::new(AtomicUsize::new(0));
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    while !stop.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((stream, _)) => {
                threads.retain(|t| !t.is_finished());
                if live.load(Ordering::Acquire) >= MAX_CONNECTIONS {
                    let mut s = stream;
                    let _ = s.set_nonblocking(false);
                    let r = Response::text(503, "too many connections");
                    let _ = write_response(&mut s, &r, false, false);
                    continue;
                }
                live.fetch_add(1, Ordering::AcqRel);
                let (handler, hub, stop, count) =
                    (handler.clone(), hub.clone(), stop.clone(), live.clone());
                let spawned = std::thread::Builder::new()
                    .name("ringperf-api-conn".into())
                    .spawn(move || {
                        pin(core);
                        serve(stream, &*handler, &hub, &stop);
                        count.fetch_sub(1, Ordering::AcqRel);
                    });
                match spawned {
                    Ok(t) => threads.push(t),
                    Err(_) => {
                        live.fetch_sub(1, Ordering::AcqRel);
                    }
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(POLL / 2),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // Out of descriptors or the like: wait a little, keep serving.
            Err(_) => std::thread::sleep(POLL),
        }
    }
    for t in threads {
        let _ = t.join();
    }
}

/// What [`read_request`] found.
enum Incoming {
    Request(Request, Head),
    /// The peer closed, or the server is stopping.
    Closed,
    /// A malformed or oversized request: answered with this status, then closed.
    Bad(u16, &'static str),
}

/// The headers the server acts on.
#[derive(Default)]
struct Head {
    keep_alive: bool,
    gzip: bool,
    ws_key: Option<String>,
    upgrade_ws: bool,
}

/// One connection: requests until the peer closes, a `Connection: close`, the idle limit or
/// the stop; a `/ws` upgrade turns it into a WebSocket.
fn serve(mut stream: TcpStream, handler: &dyn Handler, hub: &Hub, stop: &AtomicBool) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(POLL));
    let _ = stream.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    loop {
        match read_request(&mut stream, &mut buf, stop) {
            Incoming::Closed => return,
            Incoming::Bad(status, why) => {
                let _ = write_response(&mut stream, &Response::text(status, why), false, false);
                linger_close(&mut stream);
                return;
            }
            Incoming::Request(req, head) => {
                if req.path == "/ws" && req.method == "GET" {
                    match head.ws_key.as_deref().filter(|_| head.upgrade_ws) {
                        Some(key) => websocket(stream, key, buf, hub, stop),
                        None => {
                            let r = Response::text(400, "expected a WebSocket upgrade");
                            let _ = write_response(&mut stream, &r, false, false);
                        }
                    }
                    return;
                }
                let resp = handler.handle(&req);
                if write_response(&mut stream, &resp, head.keep_alive, head.gzip).is_err()
                    || !head.keep_alive
                {
                    return;
                }
            }
        }
    }
}

/// Closes after an error answer without losing it: the write side first, then what the client
/// still sends is read and dropped for a moment (closing with unread bytes would reset the
/// connection, and the client could lose the answer).
fn linger_close(stream: &mut TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let until = Instant::now() + Duration::from_millis(500);
    let mut sink = [0u8; 4096];
    while Instant::now() < until {
        match stream.read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

/// Reads one request (head and body) into `buf`, leaving what follows it there.
fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>, stop: &AtomicBool) -> Incoming {
    let started = Instant::now();
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                if head_len > MAX_HEAD {
                    return Incoming::Bad(431, "request head too large");
                }
                let mut head = Head {
                    keep_alive: req.version == Some(1),
                    ..Head::default()
                };
                let mut body_len = 0usize;
                let mut upgrade = false;
                for h in req.headers.iter() {
                    let v = String::from_utf8_lossy(h.value);
                    let v = v.trim();
                    if h.name.eq_ignore_ascii_case("content-length") {
                        match v.parse::<usize>() {
                            Ok(n) if n <= MAX_BODY => body_len = n,
                            _ => return Incoming::Bad(413, "request body too large"),
                        }
                    } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                        return Incoming::Bad(411, "a length is required");
                    } else if h.name.eq_ignore_ascii_case("connection") {
                        let v = v.to_ascii_lowercase();
                        if v.contains("close") {
                            head.keep_alive = false;
                        } else if v.contains("keep-alive") {
                            head.keep_alive = true;
                        }
                        upgrade |= v.contains("upgrade");
                    } else if h.name.eq_ignore_ascii_case("upgrade") {
                        head.upgrade_ws = v.eq_ignore_ascii_case("websocket");
                    } else if h.name.eq_ignore_ascii_case("sec-websocket-key") {
                        head.ws_key = Some(v.to_owned());
                    } else if h.name.eq_ignore_ascii_case("accept-encoding") {
                        head.gzip = v
                            .split(',')
                            .any(|e| e.trim().split(';').next() == Some("gzip"));
                    }
                }
                head.upgrade_ws &= upgrade;
                let target = req.path.unwrap_or("/");
                let (path, query) = target.split_once('?').unwrap_or((target, ""));
                let request = Request {
                    method: req.method.unwrap_or("GET").to_owned(),
                    path: path.to_owned(),
                    query: query.to_owned(),
                };
                let total = head_len + body_len;
                while buf.len() < total {
                    if !fill(stream, buf, stop, started) {
                        return Incoming::Closed;
                    }
                }
                buf.drain(..total);
                return Incoming::Request(request, head);
            }
            Ok(httparse::Status::Partial) => {
                if buf.len() > MAX_HEAD {
                    return Incoming::Bad(431, "request head too large");
                }
                if !fill(stream, buf, stop, started) {
                    return Incoming::Closed;
                }
            }
            Err(_) => return Incoming::Bad(400, "malformed request"),
        }
    }
}

/// Reads more bytes into `buf`; false once the peer closed, the server stops, or the
/// connection has waited [`IDLE`] for its request.
fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>, stop: &AtomicBool, since: Instant) -> bool {
    let mut chunk = [0u8; 4096];
    loop {
        if stop.load(Ordering::Acquire) || since.elapsed() > IDLE {
            return false;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return false,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                return true;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

fn reason(status: u16) -> &'static str {
    http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Unknown")
}

fn write_response(
    stream: &mut TcpStream,
    r: &Response,
    keep_alive: bool,
    gzip: bool,
) -> std::io::Result<()> {
    let zipped = (gzip && r.body.len() >= GZIP_MIN)
        .then(|| gzip_bytes(&r.body))
        .flatten();
    let body = zipped.as_deref().unwrap_or(&r.body);
    let mut head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {}\r\ncontent-length: {}\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        body.len()
    );
    if zipped.is_some() {
        head.push_str("content-encoding: gzip\r\nvary: Accept-Encoding\r\n");
    }
    for (k, v) in &r.extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !keep_alive {
        head.push_str("connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    stream.write_all(&out)
}

fn gzip_bytes(body: &[u8]) -> Option<Vec<u8>> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(body).ok()?;
    e.finish().ok()
}

/// `Sec-WebSocket-Accept` of a client's key (RFC 6455 §4.2.2): base64 of the SHA-1 of the key
/// and the protocol's GUID.
pub fn accept_key(key: &str) -> String {
    const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    let digest = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{key}{GUID}").as_bytes(),
    );
    let mut out = String::new();
    ringperf_workload::workload::media::base64_into(digest.as_ref(), &mut out);
    out
}

/// A WebSocket connection after its upgrade request: the handshake, then messages both ways
/// until either side closes or the server stops (a 1001 close, "going away").
fn websocket(mut stream: TcpStream, key: &str, mut buf: Vec<u8>, hub: &Hub, stop: &AtomicBool) {
    let handshake = format!(
        "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\
         sec-websocket-accept: {}\r\n\r\n",
        accept_key(key)
    );
    if stream.write_all(handshake.as_bytes()).is_err() {
        return;
    }
    let mut out = Vec::new();
    let Some((id, rx)) = hub.join() else {
        ws::encode_close(1013, "Max connections reached", &mut out);
        let _ = stream.write_all(&out);
        return;
    };
    let mut reader = ws::Reader::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if stop.load(Ordering::Acquire) {
            break Some((1001, "server shutting down"));
        }
        // Messages for this client.
        out.clear();
        while let Ok(m) = rx.try_recv() {
            ws::encode(Opcode::Text, m.as_bytes(), &mut out);
        }
        if !out.is_empty() && stream.write_all(&out).is_err() {
            break None;
        }
        // The client's messages.
        let mut closed = None;
        loop {
            match reader.next(&buf) {
                Ok((Some(m), used)) => {
                    buf.drain(..used);
                    if let Some(c) = client_message(m, id, hub, &mut stream) {
                        closed = Some(c);
                        break;
                    }
                }
                Ok((None, used)) => {
                    buf.drain(..used);
                    break;
                }
                Err(e) => {
                    closed = Some(Some((e.close_code(), "protocol error")));
                    break;
                }
            }
        }
        if let Some(c) = closed {
            break c;
        }
        match stream.read(&mut chunk) {
            Ok(0) => break None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(_) => break None,
        }
    };
    hub.leave(id);
    if let Some((code, why)) = end {
        out.clear();
        ws::encode_close(code, why, &mut out);
        let _ = stream.write_all(&out);
    }
}

/// Answers one client message; `Some` ends the connection (with the close frame to send, if
/// any).
fn client_message(
    m: Message,
    id: u64,
    hub: &Hub,
    stream: &mut TcpStream,
) -> Option<Option<(u16, &'static str)>> {
    let mut out = Vec::new();
    match m {
        Message::Text(text) => {
            let reply = command(&text, id, hub);
            if !reply.is_empty() {
                ws::encode(Opcode::Text, reply.as_bytes(), &mut out);
            }
        }
        Message::Ping(p) => ws::encode(Opcode::Pong, &p, &mut out),
        Message::Pong(_) => {}
        // AIPerf reads text messages only.
        Message::Binary(_) => return Some(Some((1003, "text messages only"))),
        Message::Close(code, _) => return Some(Some((code.unwrap_or(1000), ""))),
    }
    if !out.is_empty() && stream.write_all(&out).is_err() {
        return Some(None);
    }
    None
}

/// The reply to a client's text message: `subscribe` / `unsubscribe` (`message_types`, `*`
/// for all), `ping`, or an error.
pub fn command(text: &str, id: u64, hub: &Hub) -> String {
    use serde_json::{Value, json};
    let data: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return json!({"type": "error", "message": format!("Invalid JSON: {e}")}).to_string();
        }
    };
    let Some(obj) = data.as_object() else {
        return json!({"type": "error", "message": "Payload must be a JSON object"}).to_string();
    };
    match obj.get("type").and_then(Value::as_str) {
        Some(kind @ ("subscribe" | "unsubscribe")) => {
            let types = match obj.get("message_types") {
                None => Some(Vec::new()),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|t| t.as_str().map(str::to_owned))
                    .collect::<Option<Vec<String>>>(),
                Some(_) => None,
            };
            let Some(types) = types else {
                return json!({"type": "error", "message": "message_types must be a list of strings"})
                    .to_string();
            };
            let add = kind == "subscribe";
            hub.update(id, &types, add);
            let action = if add { "subscribed" } else { "unsubscribed" };
            json!({"type": action, "message_types": types}).to_string()
        }
        Some("ping") => r#"{"type":"pong"}"#.to_owned(),
        // AIPerf ignores any other message; so does ringperf (an empty reply is not sent).
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_key_is_rfc_6455s_example() {
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }
}
