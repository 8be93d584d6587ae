//! One HTTP/1.1 request to the Hub (or the CDN a file redirects to), through the project's own
//! client: [`ringperf_io::net::Exchange`] on a monoio runtime, rustls for `https://`. No
//! redirect is followed here; the caller decides which ones to follow. Every connect and every
//! read is bounded by the request's timeout, so a silent server ends the request, never hangs it.

use std::time::Duration;

use ringperf_io::net::{AfterHead, Exchange, Limits, Pool, ReadStamp, Sink, TlsClient, Verify};
use ringperf_io::url::BaseUrl;
use ringperf_wire::clock::Clock;
use ringperf_wire::http::Head;

/// Largest file fetched: a tokenizer.json is megabytes (the largest known ones are tens of MB).
const MAX_BODY_BYTES: u64 = 1 << 30;

/// Read buffer of the one connection.
const READ_CHUNK: usize = 64 * 1024;

/// `HEAD` (the file's metadata) or `GET` (its bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Head,
    Get,
}

/// An answer: its status, its header fields in order (names as sent), and for a `GET` with a
/// 2xx status its decoded body (empty otherwise: an error's or a redirect's body is not read).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    /// The first field named `name` (case-insensitive), trimmed.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    }
}

/// The parts of an absolute `http://` / `https://` URL a request needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub https: bool,
    /// The `Host` header value (`host` or `host:port`, as written).
    pub authority: String,
    /// The host, lowercased, without brackets or port.
    pub host: String,
    /// Path and query, from `/` (the fragment dropped).
    pub path: String,
}

/// Splits `url` into its [`Target`]; `None` when it is not an absolute `http(s)://` URL with a
/// host.
pub fn target(url: &str) -> Option<Target> {
    let (scheme, rest) = url.split_once("://")?;
    let https = match scheme.to_ascii_lowercase().as_str() {
        "http" => false,
        "https" => true,
        _ => return None,
    };
    let rest = rest.split('#').next().unwrap_or("");
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let host = if authority.starts_with('[') {
        let end = authority.find(']')?;
        authority.get(1..end)?
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    if host.is_empty() {
        return None;
    }
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else if path.is_empty() {
        "/".to_owned()
    } else {
        path.to_owned()
    };
    Some(Target {
        https,
        authority: authority.to_owned(),
        host: host.to_ascii_lowercase(),
        path,
    })
}

/// The URL a `Location` value names, from the URL that answered with it: an absolute URL as it
/// is, a `//host/...` one with `base`'s scheme, an absolute path on `base`'s origin, and a
/// relative path against `base`'s directory (dot segments are kept as written).
pub fn join(base: &str, location: &str) -> String {
    let location = location.trim();
    if location.contains("://") {
        return location.to_owned();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("https", base));
    if let Some(net) = location.strip_prefix("//") {
        return format!("{scheme}://{net}");
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let origin = format!("{scheme}://{}", &rest[..authority_end]);
    if location.starts_with('/') {
        return format!("{origin}{location}");
    }
    let base_path = rest[authority_end..].split(['?', '#']).next().unwrap_or("");
    let dir = base_path.rsplit_once('/').map_or("", |(d, _)| d);
    format!("{origin}{dir}/{location}")
}

/// Why a request got no answer. Its text says what failed, never the URL (the caller names it).
#[derive(Debug)]
pub enum NetError {
    /// The URL is not an absolute `http(s)://` URL with a host.
    Url,
    /// The host name did not resolve, or the URL's host part is not usable.
    Resolve(String),
    /// TLS could not be set up (no roots, a bad server name).
    TlsSetup(String),
    /// The exchange failed: connect, TLS handshake, write, read, a timeout, a malformed answer.
    Exchange(String),
    /// The I/O runtime could not be built.
    Runtime(std::io::Error),
}

impl std::fmt::Display for NetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NetError::Url => f.write_str("not an absolute http:// or https:// URL"),
            NetError::Resolve(e) | NetError::TlsSetup(e) | NetError::Exchange(e) => f.write_str(e),
            NetError::Runtime(e) => write!(f, "cannot start the I/O runtime: {e}"),
        }
    }
}

/// What a set of requests shares: the TLS client, built on the first `https://` request.
#[derive(Default)]
pub struct Client {
    tls: Option<TlsClient>,
}

impl Client {
    /// Sends one request to `url` with `headers` (besides `Host`), each connect and read bounded
    /// by `timeout`, and reads the answer. Runs on a monoio runtime of its own on this thread.
    ///
    /// # Errors
    /// The URL does not parse or resolve, TLS cannot be set up, or the exchange failed.
    pub fn send(
        &mut self,
        method: Method,
        url: &str,
        headers: &[(String, String)],
        timeout: Duration,
    ) -> Result<Reply, NetError> {
        let t = target(url).ok_or(NetError::Url)?;
        // Name resolution and the address, as a base URL resolves (IPv4 preferred).
        let base = BaseUrl::parse(
            &format!(
                "{}://{}",
                if t.https { "https" } else { "http" },
                t.authority
            ),
            "",
        )
        .map_err(|e| NetError::Resolve(e.to_string()))?;
        let connector = if t.https {
            if self.tls.is_none() {
                self.tls = Some(
                    TlsClient::new(Verify::On, None)
                        .map_err(|e| NetError::TlsSetup(e.to_string()))?,
                );
            }
            let tls = self.tls.as_ref().ok_or(NetError::Url)?;
            Some(
                tls.connector(url, &base.host)
                    .map_err(|e| NetError::TlsSetup(e.to_string()))?,
            )
        } else {
            None
        };
        let mut request = ringperf_wire::http::encode_get(&t.authority, &t.path, headers)
            .map_err(|e| NetError::Exchange(format!("cannot encode the request: {e}")))?;
        if method == Method::Head {
            // encode_get writes `GET `; a HEAD differs only in the method.
            request = [b"HEAD".as_slice(), request.get(3..).unwrap_or_default()].concat();
        }
        let addr = base.addr;
        ringperf_io::runtime::block_on(ringperf_io::runtime::IoDriver::Auto, move |_| async move {
            let pool = Pool::new(1, READ_CHUNK);
            let clock = Clock::start();
            let limits = Limits {
                connect_timeout: Some(timeout),
                read_timeout: Some(timeout),
                attempt_timeout: None,
                max_body_bytes: MAX_BODY_BYTES,
            };
            let exchange = Exchange {
                addr: &addr,
                tls: connector.as_ref(),
                pool: &pool,
                slot: 0,
                reuse: false,
                head_request: method == Method::Head,
                clock: &clock,
                kernel_stamps: false,
                tcp_info: false,
                limits: &limits,
                deadline_ns: None,
                cancel_after_sent: None,
                cut: None,
            };
            let mut sink = Answer {
                request: &request,
                get: method == Method::Get,
                reply: Reply::default(),
            };
            exchange
                .run(&mut sink)
                .await
                .map(|()| sink.reply)
                .map_err(|e| NetError::Exchange(e.to_string()))
        })
        .map_err(NetError::Runtime)?
    }
}

/// The header fields of a response head `raw` (already parsed by the wire crate, so its lines
/// are well formed); a line without a colon is skipped.
fn header_fields(raw: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(raw);
    text.split("\r\n")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// The exchange's sink: the request bytes, and the answer kept.
struct Answer<'a> {
    request: &'a [u8],
    get: bool,
    reply: Reply,
}

impl Sink for Answer<'_> {
    fn encode(&mut self, wbuf: &mut Vec<u8>, _reused: bool) {
        wbuf.extend_from_slice(self.request);
    }

    fn on_send(&mut self, _sent_ns: u64) {}

    fn on_read(&mut self, _bytes: usize, _stamp: ReadStamp) {}

    fn on_head(&mut self, head: &Head, raw: &[u8], _stamp_ns: u64) -> AfterHead {
        self.reply.status = head.status;
        self.reply.headers = header_fields(raw.get(..head.head_len).unwrap_or(raw));
        // Only a successful GET's body is the file; the rest is not read.
        if self.get && (200..300).contains(&head.status) {
            AfterHead::ReadBody
        } else {
            AfterHead::Stop
        }
    }

    fn body(&mut self) -> &mut Vec<u8> {
        &mut self.reply.body
    }

    fn on_end(&mut self, _stamp_ns: u64) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_of_hub_and_cdn_urls() {
        let t = target("https://huggingface.co/acme/tok/resolve/main/tokenizer.json").unwrap();
        assert_eq!(
            (
                t.https,
                t.authority.as_str(),
                t.host.as_str(),
                t.path.as_str()
            ),
            (
                true,
                "huggingface.co",
                "huggingface.co",
                "/acme/tok/resolve/main/tokenizer.json"
            )
        );
        let t = target("http://127.0.0.1:8080?x=1#frag").unwrap();
        assert_eq!(
            (t.authority.as_str(), t.path.as_str()),
            ("127.0.0.1:8080", "/?x=1")
        );
        let t = target("https://CDN.example:443/a/b?sig=x%2Fy&e=1").unwrap();
        assert_eq!(
            (t.host.as_str(), t.path.as_str()),
            ("cdn.example", "/a/b?sig=x%2Fy&e=1")
        );
        let t = target("http://[::1]:9/x").unwrap();
        assert_eq!((t.host.as_str(), t.authority.as_str()), ("::1", "[::1]:9"));
        for bad in [
            "ftp://h/x",
            "huggingface.co/x",
            "http:///x",
            "http://u@h/x",
            "http://[::1",
        ] {
            assert_eq!(target(bad), None, "{bad}");
        }
    }

    #[test]
    fn locations_join_as_a_browser_joins_them() {
        let base = "http://h:1/acme/tok/resolve/main/tokenizer.json";
        assert_eq!(join(base, "https://cdn/x?y"), "https://cdn/x?y");
        assert_eq!(join(base, "//cdn/x"), "http://cdn/x");
        assert_eq!(
            join(base, "/new/tok/resolve/main/tokenizer.json"),
            "http://h:1/new/tok/resolve/main/tokenizer.json"
        );
        assert_eq!(
            join(base, "other.json"),
            "http://h:1/acme/tok/resolve/main/other.json"
        );
        assert_eq!(join("http://h", "x"), "http://h/x");
    }

    #[test]
    fn header_fields_of_a_head() {
        let raw = b"HTTP/1.1 302 Found\r\nETag: \"abc\"\r\nX-Repo-Commit:  c0ffee \r\nbad\r\n\r\n";
        let r = Reply {
            status: 302,
            headers: header_fields(raw),
            body: Vec::new(),
        };
        assert_eq!(r.header("etag"), Some("\"abc\""));
        assert_eq!(r.header("x-repo-commit"), Some("c0ffee"));
        assert_eq!(r.header("location"), None);
    }
}
