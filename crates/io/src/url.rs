//! Base URLs: scheme handling, the path-join rule of docs/endpoints.md, address resolution, and the
//! metrics endpoint URL rules of docs/output-formats.md ("Collection").

use std::net::{SocketAddr, ToSocketAddrs};

/// Metrics endpoint URL normalization (AIPerf's `normalize_metrics_endpoint_url`): prepend `http://` when there is no scheme, strip trailing
/// `/`, append `/metrics` unless the URL already ends with it.
#[must_use]
pub fn normalize_metrics_url(raw: &str) -> String {
    let raw = raw.trim();
    let with_scheme = if raw.contains("://") {
        raw.to_owned()
    } else {
        format!("http://{raw}")
    };
    let trimmed = with_scheme.trim_end_matches('/');
    if trimmed.ends_with("/metrics") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/metrics")
    }
}

/// The endpoints of a run: every base URL's `/metrics`, then the extra URLs, normalized and
/// de-duplicated in first-seen order.
#[must_use]
pub fn metrics_endpoint_list<'a>(
    base_urls: impl IntoIterator<Item = &'a str>,
    extra: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for u in base_urls.into_iter().chain(extra) {
        let n = normalize_metrics_url(u);
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// Why a base URL was refused. Its text names the URL as written and the problem; the caller
/// says where the URL came from (`--url`, a metrics endpoint).
#[derive(Debug)]
pub enum UrlError {
    /// A scheme other than `http` and `https`.
    Scheme { url: String, scheme: String },
    /// No host, or user information before it.
    Host { url: String },
    /// The authority is not `host[:port]`.
    Authority { url: String, authority: String },
    /// Name resolution failed.
    Resolve {
        url: String,
        host: String,
        source: std::io::Error,
    },
    /// The name resolved to no address.
    NoAddress { url: String, host: String },
}

impl std::fmt::Display for UrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UrlError::Scheme { url, scheme } => write!(
                f,
                "{url}: unsupported scheme `{scheme}` (use http:// or https://)"
            ),
            UrlError::Host { url } => write!(f, "{url}: missing or unsupported host part"),
            UrlError::Authority { url, authority } => {
                write!(f, "{url}: `{authority}` is not host[:port]")
            }
            UrlError::Resolve { url, host, source } => {
                write!(f, "{url}: cannot resolve `{host}`: {source}")
            }
            UrlError::NoAddress { url, host } => {
                write!(f, "{url}: `{host}` resolves to no address")
            }
        }
    }
}

impl std::error::Error for UrlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UrlError::Resolve { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// One `--url`, resolved and joined with the request path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseUrl {
    /// As the user wrote it, with `http://` prepended when no scheme was given.
    pub display: String,
    /// `Host` header value (`host` or `host:port` as written).
    pub host_header: String,
    pub host: String,
    pub port: u16,
    /// `https://`: connections carry TLS, with `host` as the server name.
    pub https: bool,
    /// Resolved address (IPv4 preferred, as AIPerf).
    pub addr: SocketAddr,
    /// Full request path for the endpoint (base path + endpoint path).
    pub request_path: String,
    /// Path prefix of the base URL (no trailing slash), for `/metrics` and friends.
    pub base_path: String,
}

impl BaseUrl {
    /// Parses `raw` and joins `endpoint_path` to it. Errors name the URL and the problem.
    ///
    /// # Errors
    /// [`UrlError`]: an unsupported scheme, a bad host part, or a name that does not resolve.
    pub fn parse(raw: &str, endpoint_path: &str) -> Result<Self, UrlError> {
        let raw = raw.trim();
        let with_scheme = if raw.contains("://") {
            raw.to_string()
        } else {
            format!("http://{raw}")
        };
        let (scheme, rest) = with_scheme
            .split_once("://")
            .unwrap_or(("http", &with_scheme));
        let (default_port, https) = match scheme.to_ascii_lowercase().as_str() {
            "http" => (80, false),
            "https" => (443, true),
            other => {
                return Err(UrlError::Scheme {
                    url: raw.to_owned(),
                    scheme: other.to_owned(),
                });
            }
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(UrlError::Host {
                url: raw.to_owned(),
            });
        }
        let (host, port) = split_host_port(authority).ok_or_else(|| UrlError::Authority {
            url: raw.to_owned(),
            authority: authority.to_owned(),
        })?;
        let port = port.unwrap_or(default_port);
        let lookup_host = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<SocketAddr> = (lookup_host, port)
            .to_socket_addrs()
            .map_err(|source| UrlError::Resolve {
                url: raw.to_owned(),
                host: lookup_host.to_owned(),
                source,
            })?
            .collect();
        let addr = addrs
            .iter()
            .find(|a| a.is_ipv4())
            .or(addrs.first())
            .copied()
            .ok_or_else(|| UrlError::NoAddress {
                url: raw.to_owned(),
                host: lookup_host.to_owned(),
            })?;
        let base_path = path
            .split('?')
            .next()
            .unwrap_or("")
            .trim_end_matches('/')
            .to_string();
        Ok(Self {
            display: with_scheme.clone(),
            host_header: authority.to_string(),
            host: lookup_host.to_string(),
            port,
            https,
            addr,
            request_path: join_path(&base_path, endpoint_path),
            base_path,
        })
    }
}

fn split_host_port(authority: &str) -> Option<(&str, Option<u16>)> {
    if let Some(end) = authority.find(']') {
        let host = &authority[..=end];
        let rest = &authority[end + 1..];
        return match rest.strip_prefix(':') {
            Some(p) => Some((host, Some(p.parse().ok()?))),
            None if rest.is_empty() => Some((host, None)),
            None => None,
        };
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() => Some((h, Some(p.parse().ok()?))),
        Some(_) => None,
        None => Some((authority, None)),
    }
}

/// Per docs/endpoints.md: strip the sub-path's leading `/`; a `/v1` base and a sub-path starting
/// with `v1/` share the `v1`.
pub fn join_path(base_path: &str, sub: &str) -> String {
    let sub = sub.trim_start_matches('/');
    let base = base_path.trim_end_matches('/');
    let sub = if base.ends_with("/v1") {
        sub.strip_prefix("v1/").unwrap_or(sub)
    } else {
        sub
    };
    if sub.is_empty() {
        if base.is_empty() {
            "/".to_string()
        } else {
            base.to_string()
        }
    } else {
        format!("{base}/{sub}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_rule_of_the_spec() {
        assert_eq!(
            join_path("", "/v1/chat/completions"),
            "/v1/chat/completions"
        );
        assert_eq!(
            join_path("/v1", "/v1/chat/completions"),
            "/v1/chat/completions"
        );
        assert_eq!(join_path("/v1/", "v1/completions"), "/v1/completions");
        assert_eq!(
            join_path("/proxy", "/v1/completions"),
            "/proxy/v1/completions"
        );
        assert_eq!(join_path("/api", ""), "/api");
        assert_eq!(join_path("", ""), "/");
    }

    #[test]
    fn parses_and_resolves() {
        let u = BaseUrl::parse("127.0.0.1:9000/v1", "/v1/chat/completions").unwrap();
        assert_eq!(u.display, "http://127.0.0.1:9000/v1");
        assert_eq!(u.host_header, "127.0.0.1:9000");
        assert_eq!(u.port, 9000);
        assert_eq!(u.addr, "127.0.0.1:9000".parse().unwrap());
        assert_eq!(u.request_path, "/v1/chat/completions");
        assert_eq!(u.base_path, "/v1");
        let u = BaseUrl::parse("http://localhost", "/v1/completions").unwrap();
        assert_eq!(u.port, 80);
        assert!(u.addr.ip().is_loopback());
        let u = BaseUrl::parse("http://[::1]:8001", "/x").unwrap();
        assert_eq!(u.addr, "[::1]:8001".parse().unwrap());
        assert!(!u.https);
    }

    #[test]
    fn https_defaults_to_port_443() {
        let u = BaseUrl::parse("https://127.0.0.1/v1", "/v1/completions").unwrap();
        assert!(u.https);
        assert_eq!(u.port, 443);
        assert_eq!(u.addr, "127.0.0.1:443".parse().unwrap());
        assert_eq!(u.host, "127.0.0.1");
        assert_eq!(u.host_header, "127.0.0.1");
        assert_eq!(u.request_path, "/v1/completions");
        let u = BaseUrl::parse("HTTPS://localhost:8443", "/x").unwrap();
        assert!(u.https);
        assert_eq!(u.port, 8443);
        assert_eq!(u.host, "localhost");
        let u = BaseUrl::parse("https://[::1]:9443", "/x").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.https), ("::1", 9443, true));
    }

    #[test]
    fn normalization_follows_aiperf() {
        assert_eq!(
            normalize_metrics_url("localhost:8000"),
            "http://localhost:8000/metrics"
        );
        assert_eq!(
            normalize_metrics_url("http://h:1/metrics/"),
            "http://h:1/metrics",
            "trailing slash stripped, /metrics kept"
        );
        assert_eq!(
            normalize_metrics_url("http://h:1/v1/"),
            "http://h:1/v1/metrics"
        );
        assert_eq!(
            normalize_metrics_url("node2:9090/metrics"),
            "http://node2:9090/metrics"
        );
        assert_eq!(
            metrics_endpoint_list(
                ["http://a:1", "http://a:1/"],
                ["a:1/metrics", "http://b:2/x"]
            ),
            vec!["http://a:1/metrics", "http://b:2/x/metrics"]
        );
    }

    #[test]
    fn bad_urls_are_named() {
        for bad in [
            "ftp://x",
            "ws://x:1",
            "http://:80",
            "http://h:notaport",
            "http://u@h",
        ] {
            let e = BaseUrl::parse(bad, "/").unwrap_err().to_string();
            assert!(e.starts_with(bad), "{e}");
        }
        let e = BaseUrl::parse("ftp://x", "/").unwrap_err().to_string();
        assert!(e.contains("unsupported scheme `ftp`"), "{e}");
        let e = BaseUrl::parse("http://no-such-host.invalid:80", "/").unwrap_err();
        assert!(matches!(e, UrlError::Resolve { .. }), "{e}");
        assert!(e.to_string().contains("cannot resolve"), "{e}");
    }
}
