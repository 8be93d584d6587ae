//! TLS for `https://` URLs: a connection is plain TCP or TCP carrying a rustls client session,
//! and [`Stream`] gives the exchange the same three operations over either (write a whole
//! request, read into a buffer's spare capacity with the read's stamp, shut down).
//!
//! rustls is driven through its buffered API: every socket read lands in this connection's own
//! raw buffer, is fed to [`ClientConnection::read_tls`] and decrypted by
//! [`ClientConnection::process_new_packets`], and the plaintext is copied out of
//! [`ClientConnection::reader`] into the exchange's read buffer; a request is handed to
//! [`ClientConnection::writer`] and the records it becomes are written out with one socket write.
//! Why not the unbuffered API: it saves one plaintext copy per read (small next to the
//! decryption itself) at the price of tracking record boundaries and in-place buffers here; the
//! buffered API keeps that bookkeeping in rustls, where it is tested.
//!
//! Stamps: a read's stamps are taken when the socket read completes (with kernel stamps on, the
//! kernel's receive stamp of that socket read goes beside the user-space one), before the bytes
//! are fed to rustls, so decryption cost never counts as server latency. Plaintext left in
//! rustls after a read (the caller's buffer was full) carries the stamps of the socket read that
//! brought it. The handshake's reads are not stamped.
//!
//! The handshake is part of connecting ([`handshake`]): a fresh `https` connection is ready only
//! once it is done, so its time is connect time. Certificate problems are [`TlsError::Certificate`],
//! named with the URL. Verification is on unless [`Verify::Off`] (`AIPERF_HTTP_SSL_VERIFY=false`).

use std::collections::HashSet;
use std::io::{self, BufRead, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use monoio::buf::IoBufMut;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::TcpStream;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore};

use ringperf_wire::clock::Clock;

use super::rxstamp::{self, ReadStamp};
use super::trust::{self, TrustVerifier};

/// Room for the largest TLS record (16 KiB of payload plus its header, padding and tag) with
/// some to spare, so one socket read can complete any record.
const RAW_BUF_BYTES: usize = 18 * 1024;

/// Whether the server's certificate is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// Against the trusted roots, for the URL's host (the default).
    On,
    /// Not at all (`AIPERF_HTTP_SSL_VERIFY=false`); handshake signatures are still checked.
    Off,
}

/// Why the client side of TLS could not be set up for a run (before anything is sent).
#[derive(Debug)]
pub enum TlsSetupError {
    /// The crypto provider refused the protocol versions.
    Provider(rustls::Error),
    /// `SSL_CERT_FILE` / `SSL_CERT_DIR` name certificates that cannot be loaded.
    EnvRoots(rustls_native_certs::Error),
    /// The `ca_file` PEM bundle cannot be read.
    CaFile {
        /// The bundle.
        path: PathBuf,
        /// What the PEM reader said.
        source: rustls::pki_types::pem::Error,
    },
    /// The `ca_file` PEM bundle holds no usable certificate.
    NoCaCertificate(PathBuf),
    /// The certificate verifier cannot be built (no trusted root at all).
    Verifier(rustls::client::VerifierBuilderError),
    /// A URL's host is neither a DNS name nor an IP address.
    ServerName {
        /// The URL as given.
        url: String,
        /// Its host.
        host: String,
    },
}

impl std::fmt::Display for TlsSetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsSetupError::Provider(e) => write!(f, "TLS setup: {e}"),
            TlsSetupError::EnvRoots(e) => write!(
                f,
                "cannot load the CA certificates SSL_CERT_FILE / SSL_CERT_DIR name: {e}"
            ),
            TlsSetupError::CaFile { path, source } => write!(
                f,
                "cannot read CA certificates from {}: {source}",
                path.display()
            ),
            TlsSetupError::NoCaCertificate(path) => {
                write!(f, "{}: no usable CA certificate in it", path.display())
            }
            TlsSetupError::Verifier(e) => write!(f, "TLS certificate verifier: {e}"),
            TlsSetupError::ServerName { url, host } => {
                write!(f, "{url}: `{host}` is not a valid TLS server name")
            }
        }
    }
}

impl std::error::Error for TlsSetupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TlsSetupError::Provider(e) => Some(e),
            TlsSetupError::EnvRoots(e) => Some(e),
            TlsSetupError::CaFile { source, .. } => Some(source),
            TlsSetupError::Verifier(e) => Some(e),
            TlsSetupError::NoCaCertificate(_) | TlsSetupError::ServerName { .. } => None,
        }
    }
}

/// The client side of TLS for one run: its rustls configuration (roots, verification, ALPN
/// `http/1.1`), shared by every connection of every URL.
#[derive(Clone, Debug)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
}

impl TlsClient {
    /// The configuration of a run. Roots (when verifying): webpki's, the system store (or what
    /// `SSL_CERT_FILE` / `SSL_CERT_DIR` name, as OpenSSL reads them), and the PEM bundle
    /// `ca_file` when given. Certificates are checked by [`TrustVerifier`]: webpki's checks, and
    /// a trusted self-signed `CA:TRUE` certificate accepted as the server's own.
    ///
    /// # Errors
    /// `ca_file` (or a file the environment names) cannot be read or holds no certificate.
    pub fn new(verify: Verify, ca_file: Option<&Path>) -> Result<Self, TlsSetupError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(TlsSetupError::Provider)?;
        let mut config = match verify {
            Verify::On => {
                let (roots, anchors) = root_store(ca_file)?;
                let verifier = TrustVerifier::new(roots, anchors, &provider)
                    .map_err(TlsSetupError::Verifier)?;
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(verifier))
                    .with_no_client_auth()
            }
            Verify::Off => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerify {
                    algorithms: provider.signature_verification_algorithms,
                }))
                .with_no_client_auth(),
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// What connects to `url`: this configuration with the server name (SNI, and the name the
    /// certificate must carry) `host`, a DNS name or an IP address.
    ///
    /// # Errors
    /// `host` is neither.
    pub fn connector(&self, url: &str, host: &str) -> Result<Connector, TlsSetupError> {
        let server_name =
            ServerName::try_from(host.to_owned()).map_err(|_| TlsSetupError::ServerName {
                url: url.to_owned(),
                host: host.to_owned(),
            })?;
        Ok(Connector {
            config: Arc::clone(&self.config),
            server_name,
            url: Arc::from(url),
        })
    }
}

/// The roots a verifying client trusts, and the DER of each trusted certificate read from a file
/// (what a server may present as its own self-signed certificate).
fn root_store(ca_file: Option<&Path>) -> Result<(RootCertStore, HashSet<Vec<u8>>), TlsSetupError> {
    let mut roots = RootCertStore::empty();
    let mut anchors = HashSet::new();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let native = rustls_native_certs::load_native_certs();
    let env_named =
        std::env::var_os("SSL_CERT_FILE").is_some() || std::env::var_os("SSL_CERT_DIR").is_some();
    if env_named && let Some(e) = native.errors.into_iter().next() {
        return Err(TlsSetupError::EnvRoots(e));
    }
    anchors.extend(native.certs.iter().map(|c| c.as_ref().to_vec()));
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = ca_file {
        let certs = CertificateDer::pem_file_iter(path)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|source| TlsSetupError::CaFile {
                path: path.to_owned(),
                source,
            })?;
        anchors.extend(certs.iter().map(|c| c.as_ref().to_vec()));
        let (added, _) = roots.add_parsable_certificates(certs);
        if added == 0 {
            return Err(TlsSetupError::NoCaCertificate(path.to_owned()));
        }
    }
    Ok((roots, anchors))
}

/// Accepts any certificate chain for any name, and still checks that the server holds the key
/// of the certificate it sent (the handshake signatures).
#[derive(Debug)]
struct NoVerify {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// How to open TLS sessions to one URL. Cheap to clone (shared configuration).
#[derive(Clone, Debug)]
pub struct Connector {
    config: Arc<ClientConfig>,
    server_name: ServerName<'static>,
    /// The URL as the user wrote it, for error messages.
    url: Arc<str>,
}

impl Connector {
    /// The URL this connector serves, as the user wrote it.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// Why a TLS handshake failed.
#[derive(Debug)]
pub enum TlsError {
    /// The server's certificate was refused: untrusted issuer, expired, not valid for the host…
    Certificate { url: Arc<str>, error: rustls::Error },
    /// The handshake failed otherwise (no common version or cipher, an alert from the server…).
    Handshake { url: Arc<str>, error: rustls::Error },
    /// The server closed the connection during the handshake.
    Closed { url: Arc<str> },
    /// A socket error during the handshake.
    Io { url: Arc<str>, error: io::Error },
}

impl TlsError {
    /// The server's certificate was refused.
    #[must_use]
    pub fn is_certificate(&self) -> bool {
        matches!(self, TlsError::Certificate { .. })
    }

    fn from_rustls(url: &Arc<str>, error: rustls::Error) -> Self {
        let url = Arc::clone(url);
        match error {
            rustls::Error::InvalidCertificate(_) => TlsError::Certificate { url, error },
            error => TlsError::Handshake { url, error },
        }
    }
}

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsError::Certificate { url, error } => match trust::refusal(error) {
                // Its message says what to do.
                Some(why) => write!(f, "{url}: TLS certificate verification failed: {why}"),
                None => write!(
                    f,
                    "{url}: TLS certificate verification failed: {error} \
                     (trust its CA with SSL_CERT_FILE, or set AIPERF_HTTP_SSL_VERIFY=false)"
                ),
            },
            TlsError::Handshake { url, error } => write!(f, "{url}: TLS handshake failed: {error}"),
            TlsError::Closed { url } => {
                write!(
                    f,
                    "{url}: the server closed the connection during the TLS handshake"
                )
            }
            TlsError::Io { url, error } => write!(f, "{url}: TLS handshake failed: {error}"),
        }
    }
}

impl std::error::Error for TlsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TlsError::Certificate { error, .. } | TlsError::Handshake { error, .. } => Some(error),
            TlsError::Io { error, .. } => Some(error),
            TlsError::Closed { .. } => None,
        }
    }
}

/// A connection's byte stream: plain TCP, or TCP carrying a TLS session.
#[derive(Debug)]
pub(super) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

/// TCP with a rustls client session over it.
#[derive(Debug)]
pub(super) struct TlsStream {
    tcp: TcpStream,
    session: ClientConnection,
    /// Bytes read from the socket: `raw[fed..]` are not yet fed to the session.
    raw: Vec<u8>,
    fed: usize,
    /// Records waiting to be written.
    out: Vec<u8>,
    /// Stamps of the socket read whose plaintext the session still holds.
    stamp: ReadStamp,
    /// The socket reached end of stream (or the session its `close_notify`).
    eof: bool,
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Plain(s) => s.as_raw_fd(),
            Stream::Tls(t) => t.tcp.as_raw_fd(),
        }
    }
}

/// A failure of the session after the handshake, as an I/O error of the read or write.
fn session_error(e: &rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("TLS: {e}"))
}

impl Stream {
    /// Writes all of `buf` (plaintext), returning it for reuse.
    ///
    /// TLS's write is boxed: a plain stream's request does not keep room for its state.
    pub(super) async fn write_all(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        match self {
            Stream::Plain(s) => Self::write_plain(s, buf).await,
            Stream::Tls(t) => {
                let res = Box::pin(t.write_plaintext(&buf)).await;
                (res.map(|()| buf.len()), buf)
            }
        }
    }

    /// Writes all of `buf` to a plain connection, as monoio's `write_all` does (a write until
    /// every byte went, `Interrupted` retried, a zero-byte write an error), in a future of about
    /// half its size: a request's future keeps room for its write beside the connection while
    /// it runs, so the write's room is part of every in-flight request's (#41: 280 bytes through
    /// [`Stream::write_all`], which made the write, not the read, a request's largest state).
    pub(super) fn write_plain(
        tcp: &mut TcpStream,
        mut buf: Vec<u8>,
    ) -> impl Future<Output = (io::Result<usize>, Vec<u8>)> + '_ {
        use monoio::buf::IoBuf;
        use monoio::io::AsyncWriteRent;
        async move {
            let len = buf.len();
            let mut written = 0;
            while written < len {
                let (res, slice) = tcp.write(buf.slice(written..)).await;
                buf = slice.into_inner();
                match res {
                    Ok(0) => {
                        let e = io::Error::new(
                            io::ErrorKind::WriteZero,
                            "failed to write whole buffer",
                        );
                        return (Err(e), buf);
                    }
                    Ok(n) => written += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return (Err(e), buf),
                }
            }
            (Ok(written), buf)
        }
    }

    /// Writes a request: `head` (freed once written), then `tail`, when there is one, from
    /// where it is ([`Stream::write_shared`], boxed: only a large shared body has one). How
    /// many bytes went in all.
    pub(super) async fn write_request(
        &mut self,
        head: Vec<u8>,
        tail: Option<bytes::Bytes>,
    ) -> io::Result<usize> {
        let (res, head) = self.write_all(head).await;
        drop(head);
        let n = res?;
        match tail {
            None => Ok(n),
            Some(tail) => Ok(n + Box::pin(self.write_shared(tail)).await?),
        }
    }

    /// Writes all of `bytes` (plaintext) from where they are: on a plain connection the kernel
    /// reads them in place; TLS encrypts them into its record buffer as it would a copy.
    pub(super) async fn write_shared(&mut self, bytes: bytes::Bytes) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write_all(bytes).await.0,
            Stream::Tls(t) => {
                let len = bytes.len();
                t.write_plaintext(&bytes).await.map(|()| len)
            }
        }
    }

    /// Reads once into `buf`'s spare capacity (appending) and returns how many bytes came
    /// (0: end of stream) with the stamps of the socket read that brought them. `kernel`: the
    /// socket has kernel receive stamps enabled, so the read is a stamped `recvmsg`.
    pub(super) async fn read_into(
        &mut self,
        buf: Vec<u8>,
        clock: &Clock,
        kernel: bool,
    ) -> (io::Result<(usize, ReadStamp)>, Vec<u8>) {
        match self {
            Stream::Plain(s) if kernel => {
                let mut buf = buf;
                let res = read_stamped(s, &mut buf, clock).await;
                (res, buf)
            }
            Stream::Plain(s) => {
                let (len, cap) = (buf.len(), buf.capacity());
                let (res, slice) = s.read(buf.slice_mut(len..cap)).await;
                let stamp = ReadStamp::user(clock.now_ns());
                (res.map(|n| (n, stamp)), slice.into_inner())
            }
            Stream::Tls(t) => {
                let mut buf = buf;
                let res = t.read_plaintext(&mut buf, clock, kernel).await;
                (res, buf)
            }
        }
    }

    /// Nothing is buffered inside the stream, so the connection may go back to a pool.
    pub(super) fn is_drained(&self) -> bool {
        match self {
            Stream::Plain(_) => true,
            Stream::Tls(t) => t.fed == t.raw.len() && !t.eof && t.out.is_empty(),
        }
    }
}

/// One read of `tcp` with its kernel receive stamp: waits until the socket is readable (on the
/// runtime: an io_uring poll or the epoll driver's readiness), then reads with a non-blocking
/// `recvmsg` ([`rxstamp::recv`]), appending to `buf`. The user-space stamp is taken as the
/// `recvmsg` returns; the kernel stamp, converted to the run's clock, goes beside it.
pub(super) async fn read_stamped(
    tcp: &TcpStream,
    buf: &mut Vec<u8>,
    clock: &Clock,
) -> io::Result<(usize, ReadStamp)> {
    let (n, realtime_ns) = rxstamp::read(tcp, buf).await?;
    Ok((n, ReadStamp::now(clock, realtime_ns)))
}

/// Runs the client handshake over `tcp`; the stream is ready for requests once this returns.
///
/// # Errors
/// The handshake failed: [`TlsError::Certificate`] when the certificate was refused.
pub(super) async fn handshake(tcp: TcpStream, connector: &Connector) -> Result<Stream, TlsError> {
    let url = &connector.url;
    let mut session =
        ClientConnection::new(Arc::clone(&connector.config), connector.server_name.clone())
            .map_err(|e| TlsError::from_rustls(url, e))?;
    // A request is handed over whole (the exchange writes it at once), never bounded here.
    session.set_buffer_limit(None);
    let mut t = TlsStream {
        tcp,
        session,
        raw: Vec::with_capacity(RAW_BUF_BYTES),
        fed: 0,
        out: Vec::new(),
        stamp: ReadStamp::user(0),
        eof: false,
    };
    while t.session.is_handshaking() {
        t.flush().await.map_err(|error| TlsError::Io {
            url: Arc::clone(url),
            error,
        })?;
        if !t.session.is_handshaking() {
            break;
        }
        if t.fed == t.raw.len() {
            let (n, _) = t.read_socket(None).await.map_err(|error| TlsError::Io {
                url: Arc::clone(url),
                error,
            })?;
            if n == 0 {
                return Err(TlsError::Closed {
                    url: Arc::clone(url),
                });
            }
        }
        if let Err(e) = t.feed() {
            // Tell the server why (the alert rustls queued), then give up.
            let _ = t.flush().await;
            return Err(TlsError::from_rustls(url, e));
        }
    }
    // Anything the handshake's last step queued (the client's Finished).
    t.flush().await.map_err(|error| TlsError::Io {
        url: Arc::clone(url),
        error,
    })?;
    Ok(Stream::Tls(Box::new(t)))
}

impl TlsStream {
    /// One socket read into `raw` (after compacting it); returns the bytes read and, when
    /// `stamped` is given (`clock`, kernel stamps on), the read's stamps.
    async fn read_socket(
        &mut self,
        stamped: Option<(&Clock, bool)>,
    ) -> io::Result<(usize, Option<ReadStamp>)> {
        if self.fed == self.raw.len() {
            self.raw.clear();
            self.fed = 0;
        }
        if self.raw.capacity() - self.raw.len() < RAW_BUF_BYTES / 2 {
            self.raw.drain(..self.fed);
            self.fed = 0;
            self.raw.reserve(RAW_BUF_BYTES);
        }
        if let Some((clock, true)) = stamped {
            let mut raw = std::mem::take(&mut self.raw);
            let res = read_stamped(&self.tcp, &mut raw, clock).await;
            self.raw = raw;
            return res.map(|(n, stamp)| (n, Some(stamp)));
        }
        let raw = std::mem::take(&mut self.raw);
        let (len, cap) = (raw.len(), raw.capacity());
        let (res, slice) = self.tcp.read(raw.slice_mut(len..cap)).await;
        self.raw = slice.into_inner();
        let stamp = stamped.map(|(clock, _)| ReadStamp::user(clock.now_ns()));
        res.map(|n| (n, stamp))
    }

    /// Feeds the unfed raw bytes to the session as far as it takes them and processes them.
    fn feed(&mut self) -> Result<(), rustls::Error> {
        while self.fed < self.raw.len() {
            let mut rest = &self.raw[self.fed..];
            match self.session.read_tls(&mut rest) {
                Ok(0) => break,
                Ok(n) => self.fed += n,
                // The plaintext buffer is full: the rest waits until it is read out.
                Err(_) => break,
            }
            self.session.process_new_packets()?;
        }
        Ok(())
    }

    /// Writes out every record the session has queued.
    async fn flush(&mut self) -> io::Result<()> {
        while self.session.wants_write() {
            let mut out = std::mem::take(&mut self.out);
            out.clear();
            self.session.write_tls(&mut out)?;
            let (res, out) = self.tcp.write_all(out).await;
            self.out = out;
            self.out.clear();
            res?;
        }
        Ok(())
    }

    async fn write_plaintext(&mut self, buf: &[u8]) -> io::Result<()> {
        self.session.writer().write_all(buf)?;
        self.flush().await
    }

    /// Appends plaintext to `buf` (up to its capacity), reading the socket as often as it takes
    /// to complete a record; `(0, _)` at the end of the stream.
    async fn read_plaintext(
        &mut self,
        buf: &mut Vec<u8>,
        clock: &Clock,
        kernel: bool,
    ) -> io::Result<(usize, ReadStamp)> {
        loop {
            let room = buf.capacity() - buf.len();
            match self.session.reader().fill_buf() {
                Ok(plain) if !plain.is_empty() => {
                    let n = plain.len().min(room);
                    buf.extend_from_slice(&plain[..n]);
                    self.session.reader().consume(n);
                    return Ok((n, self.stamp));
                }
                // `close_notify` received, or the peer closed the socket without one (many
                // servers do): the end of the stream either way.
                Ok(_) => return Ok((0, self.stamp)),
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    return Ok((0, self.stamp));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if self.eof {
                return Ok((0, self.stamp));
            }
            if self.fed == self.raw.len() {
                // The stamps of this read, taken before the bytes are decrypted.
                let (n, stamp) = self.read_socket(Some((clock, kernel))).await?;
                if let Some(stamp) = stamp {
                    self.stamp = stamp;
                }
                if n == 0 {
                    self.eof = true;
                    // Tell the session, so it reports a clean or an unclean end.
                    let _ = self.session.read_tls(&mut io::empty());
                }
            }
            self.feed().map_err(|e| session_error(&e))?;
            // A key update or an alert may need an answer.
            self.flush().await?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_errors_are_told_apart() {
        let url: Arc<str> = Arc::from("https://h:1/v1");
        let cert = TlsError::from_rustls(
            &url,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        assert!(cert.is_certificate());
        let text = cert.to_string();
        assert!(text.starts_with("https://h:1/v1: "), "{text}");
        assert!(text.contains("certificate"), "{text}");
        let other = TlsError::from_rustls(
            &url,
            rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure),
        );
        assert!(!other.is_certificate());
        assert!(other.to_string().contains("TLS handshake failed"));
    }

    #[test]
    fn server_names_are_hosts_or_addresses() {
        let client = TlsClient::new(Verify::Off, None).unwrap();
        assert!(client.connector("https://a.example", "a.example").is_ok());
        assert!(client.connector("https://127.0.0.1", "127.0.0.1").is_ok());
        assert!(client.connector("https://[::1]", "::1").is_ok());
        let e = client
            .connector("https://bad_name!", "bad_name!")
            .unwrap_err();
        assert!(matches!(e, TlsSetupError::ServerName { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "https://bad_name!: `bad_name!` is not a valid TLS server name"
        );
    }

    #[test]
    fn a_missing_ca_file_is_a_clear_error() {
        let e = TlsClient::new(Verify::On, Some(Path::new("/nonexistent/ca.pem"))).unwrap_err();
        assert!(matches!(e, TlsSetupError::CaFile { .. }), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("cannot read CA certificates from /nonexistent/ca.pem: "),
            "{e}"
        );
    }

    #[test]
    fn a_ca_file_without_a_certificate_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.pem");
        std::fs::write(&path, "no certificate here\n").unwrap();
        let e = TlsClient::new(Verify::On, Some(&path)).unwrap_err();
        assert!(matches!(e, TlsSetupError::NoCaCertificate(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!("{}: no usable CA certificate in it", path.display())
        );
    }
}
