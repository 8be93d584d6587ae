//! HTTPS for the mock (`mock-server --tls-cert FILE --tls-key FILE`, [`MockConfig::tls`]).
//!
//! A TLS connection is terminated here and its plaintext relayed, over a Unix socket pair, to an
//! ordinary connection served by `conn` — so the connection loop, the responses, the pacing and
//! the truth log are the same code over `http` and `https`, and none of them knows about TLS.
//! Each TLS connection is one inner connection, so the truth log's connection numbers count TLS
//! connections. The relay adds a copy and a hop to every write (tens of µs): the mock's stamps
//! stay its own record of when it wrote, a little earlier than the bytes leave as TLS records.
//! What a plain connection does at the socket level (a reset on close) becomes an ordinary close
//! over TLS.
//!
//! [`MockConfig::tls`]: super::MockConfig::tls

use std::cell::RefCell;
use std::future::Future;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;

use monoio::buf::IoBufMut;
use monoio::io::{AsyncReadRent, AsyncWriteRent, AsyncWriteRentExt, Splitable};
use monoio::net::{TcpStream, UnixStream};
use rustls::ServerConnection;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::conn::serve_until_closed;
use super::settings::MockTls;
use super::worker::Worker;

/// Room for the largest TLS record with some to spare.
const RAW_BUF_BYTES: usize = 18 * 1024;
/// Plaintext read from the inner connection at once (one TLS record's worth).
const PLAIN_BUF_BYTES: usize = 16 * 1024;

/// The server configuration from `tls`'s PEM files: the certificate chain (leaf first) and its
/// private key; ALPN `http/1.1`.
///
/// # Errors
/// A file cannot be read, holds no certificate or key, or the key does not fit the certificate.
pub(crate) fn server_config(tls: &MockTls) -> io::Result<Arc<rustls::ServerConfig>> {
    let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidInput, what);
    let certs = CertificateDer::pem_file_iter(&tls.cert)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| invalid(format!("--tls-cert {}: {e}", tls.cert.display())))?;
    if certs.is_empty() {
        return Err(invalid(format!(
            "--tls-cert {}: no certificate in it",
            tls.cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(&tls.key)
        .map_err(|e| invalid(format!("--tls-key {}: {e}", tls.key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(format!("TLS setup: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| invalid(format!("--tls-cert / --tls-key: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Serves one TLS connection until it ends or the thread closes its connections (as
/// [`serve_until_closed`] does for a plain one).
pub(crate) async fn serve_tls_until_closed(
    tcp: TcpStream,
    config: Arc<rustls::ServerConfig>,
    worker: Rc<Worker>,
) {
    let slot = worker.closer.slot();
    {
        let mut relay = std::pin::pin!(relay(tcp, config, Rc::clone(&worker)));
        std::future::poll_fn(|cx| {
            if worker.closer.closed.get() || relay.as_mut().poll(cx).is_ready() {
                return Poll::Ready(());
            }
            worker.closer.register(slot, cx.waker());
            Poll::Pending
        })
        .await;
    }
    worker.closer.release(slot);
}

/// The plain end a connection is served on (as a `TcpStream`: the connection loop's type; the
/// calls it makes are plain socket reads and writes, and the TCP options it sets are refused
/// harmlessly) and the relay's end.
fn socket_pair(on_io_uring: bool) -> io::Result<(TcpStream, UnixStream)> {
    let (served, relayed) = std::os::unix::net::UnixStream::pair()?;
    if !on_io_uring {
        // The epoll driver reads until `WouldBlock` (see `server::accept_cloexec`).
        served.set_nonblocking(true)?;
        relayed.set_nonblocking(true)?;
    }
    let served = std::net::TcpStream::from(OwnedFd::from(served));
    Ok((TcpStream::from_std(served)?, UnixStream::from_std(relayed)?))
}

/// Handshake, then relay both ways until both directions have ended.
async fn relay(mut tcp: TcpStream, config: Arc<rustls::ServerConfig>, worker: Rc<Worker>) {
    // As on a plain connection (`conn::serve_connection`): every record goes out when written.
    // With Nagle's algorithm a small record (an SSE event) would wait behind an unacknowledged
    // one (the response head) for the client's delayed ACK, tens of ms of false latency.
    let _ = tcp.set_nodelay(true);
    let Ok(mut session) = ServerConnection::new(config) else {
        return;
    };
    let mut raw: Vec<u8> = Vec::with_capacity(RAW_BUF_BYTES);
    let mut out: Vec<u8> = Vec::new();
    let mut plain: Vec<u8> = Vec::new();
    while session.is_handshaking() {
        if flush(&mut session, &mut tcp, &mut out).await.is_err() {
            return;
        }
        if !session.is_handshaking() {
            break;
        }
        raw.clear();
        let (res, buf) = tcp.read(raw.slice_mut(0..RAW_BUF_BYTES)).await;
        raw = buf.into_inner();
        match res {
            Ok(n) if n > 0 => {}
            _ => return,
        }
        if feed(&mut session, &raw, &mut plain).is_err() {
            // The alert rustls queued tells the client why.
            let _ = flush(&mut session, &mut tcp, &mut out).await;
            return;
        }
    }
    if flush(&mut session, &mut tcp, &mut out).await.is_err() {
        return;
    }
    let Ok((served, relayed)) = socket_pair(worker.on_io_uring) else {
        return;
    };
    monoio::spawn(serve_until_closed(served, Rc::clone(&worker)));
    let session = Rc::new(RefCell::new(session));
    let (tcp_in, tcp_out) = tcp.into_split();
    let (inner_in, inner_out) = relayed.into_split();
    monoio::join!(
        inbound(tcp_in, inner_out, Rc::clone(&session), raw, plain),
        outbound(inner_in, tcp_out, session, out),
    );
}

/// Feeds `raw` to the session, appending the plaintext it yields to `plain`.
fn feed(session: &mut ServerConnection, raw: &[u8], plain: &mut Vec<u8>) -> Result<(), ()> {
    let mut rest = raw;
    while !rest.is_empty() {
        match session.read_tls(&mut rest) {
            Ok(0) => break,
            Ok(_) => {}
            Err(_) => return Err(()),
        }
        session.process_new_packets().map_err(|_| ())?;
        match session.reader().read_to_end(plain) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // `UnexpectedEof` cannot happen before the socket's end; any other error ends it.
            Err(_) => return Err(()),
        }
    }
    Ok(())
}

/// Writes out every record the session has queued.
async fn flush<W: AsyncWriteRent>(
    session: &mut ServerConnection,
    w: &mut W,
    out: &mut Vec<u8>,
) -> io::Result<()> {
    while session.wants_write() {
        out.clear();
        session.write_tls(out)?;
        let (res, buf) = w.write_all(std::mem::take(out)).await;
        *out = buf;
        res?;
    }
    Ok(())
}

/// Client to server: TLS records in, plaintext to the served connection. Ends with the client's
/// side (close, `close_notify` or a broken record), then ends the served connection's input.
async fn inbound<R: AsyncReadRent, W: AsyncWriteRent>(
    mut tcp: R,
    mut inner: W,
    session: Rc<RefCell<ServerConnection>>,
    mut raw: Vec<u8>,
    mut plain: Vec<u8>,
) {
    loop {
        if !plain.is_empty() {
            let (res, buf) = inner.write_all(std::mem::take(&mut plain)).await;
            plain = buf;
            plain.clear();
            if res.is_err() {
                break;
            }
        }
        raw.clear();
        let (res, buf) = tcp.read(raw.slice_mut(0..RAW_BUF_BYTES)).await;
        raw = buf.into_inner();
        match res {
            Ok(n) if n > 0 => {}
            _ => break,
        }
        if feed(&mut session.borrow_mut(), &raw, &mut plain).is_err() {
            break;
        }
    }
    let _ = inner.shutdown().await;
}

/// Server to client: plaintext from the served connection, TLS records out. When the served
/// connection ends, sends `close_notify` and ends the client's input.
async fn outbound<R: AsyncReadRent, W: AsyncWriteRent>(
    mut inner: R,
    mut tcp: W,
    session: Rc<RefCell<ServerConnection>>,
    mut out: Vec<u8>,
) {
    let mut buf: Vec<u8> = Vec::with_capacity(PLAIN_BUF_BYTES);
    loop {
        buf.clear();
        let (res, b) = inner.read(buf.slice_mut(0..PLAIN_BUF_BYTES)).await;
        buf = b.into_inner();
        match res {
            Ok(n) if n > 0 => {}
            _ => break,
        }
        out.clear();
        let encoded = {
            let mut s = session.borrow_mut();
            s.writer()
                .write_all(&buf)
                .and_then(|()| drain_records(&mut s, &mut out))
        };
        if encoded.is_err() {
            break;
        }
        let (res, o) = tcp.write_all(std::mem::take(&mut out)).await;
        out = o;
        if res.is_err() {
            return;
        }
    }
    out.clear();
    let closed = {
        let mut s = session.borrow_mut();
        s.send_close_notify();
        drain_records(&mut s, &mut out)
    };
    if closed.is_ok() {
        let (_, o) = tcp.write_all(std::mem::take(&mut out)).await;
        drop(o);
    }
    let _ = tcp.shutdown().await;
}

/// Appends every queued record to `out`.
fn drain_records(session: &mut ServerConnection, out: &mut Vec<u8>) -> io::Result<()> {
    while session.wants_write() {
        session.write_tls(out)?;
    }
    Ok(())
}
