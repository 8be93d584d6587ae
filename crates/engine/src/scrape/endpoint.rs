//! Metrics endpoints as the scraper reaches them: the TRT-LLM fallback path and the resolved
//! target a scrape connects to. The URL rules themselves (normalization, the endpoint list) are
//! in [`ringperf_io::url`].

use std::fmt;
use std::net::SocketAddr;

use ringperf_io::net::{Connector, TlsClient, TlsSetupError};
use ringperf_io::url::{BaseUrl, UrlError};
use ringperf_wire::http::HttpError;

/// Why an endpoint cannot be scraped.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The URL is not a usable `http` URL: bad scheme, host or path, or a name that does not
    /// resolve.
    Url(UrlError),
    /// An `https://` endpoint, but the scraper was started without a TLS client.
    Https {
        /// The URL.
        url: String,
    },
    /// An `https://` endpoint whose host cannot be a TLS server name.
    Tls {
        /// The connector's reason (it names the URL).
        error: TlsSetupError,
    },
    /// The requests to the URL cannot be encoded (a host or path the encoder refuses).
    Encode {
        /// The URL.
        url: String,
        /// The encoder's reason.
        error: HttpError,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Url(why) => write!(f, "server metrics endpoint {why}"),
            Error::Https { url } => write!(
                f,
                "server metrics endpoint {url}: https, but no TLS client was set up"
            ),
            Error::Tls { error } => write!(f, "server metrics endpoint {error}"),
            Error::Encode { url, error } => write!(f, "server metrics endpoint {url}: {error}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Url(e) => Some(e),
            Error::Encode { error, .. } => Some(error),
            Error::Tls { error } => Some(error),
            Error::Https { .. } => None,
        }
    }
}

/// The TRT-LLM alternative of `url`: `<base>/prometheus/metrics` when `url` ends with `/metrics`
/// and is not already `/prometheus/metrics`; `None` otherwise.
#[must_use]
pub fn trtllm_fallback(url: &str) -> Option<String> {
    if url.ends_with("/prometheus/metrics") {
        return None;
    }
    let base = url.strip_suffix("/metrics")?;
    Some(format!("{base}/prometheus/metrics"))
}

/// A resolved endpoint: where to connect and the encoded requests.
#[derive(Clone, Debug)]
pub struct Target {
    /// The URL (normalized).
    pub url: String,
    /// Resolved address.
    pub addr: SocketAddr,
    /// `https`: the TLS session each fresh connection opens (`None` for `http`).
    pub tls: Option<Connector>,
    /// Encoded `GET`.
    pub get: Vec<u8>,
    /// Encoded `HEAD`.
    pub head: Vec<u8>,
}

impl Target {
    /// Resolves `url` and encodes its requests; an `https` URL connects through `tls` (the
    /// run's TLS client: its roots and verification).
    ///
    /// # Errors
    /// Bad scheme, host or path, a name that does not resolve, or an `https` URL without a TLS
    /// client or whose host is no TLS server name.
    pub fn resolve(url: &str, tls: Option<&TlsClient>) -> Result<Self, Error> {
        let b = BaseUrl::parse(url, "").map_err(Error::Url)?;
        let tls = match (b.https, tls) {
            (false, _) => None,
            (true, None) => {
                return Err(Error::Https {
                    url: url.to_owned(),
                });
            }
            (true, Some(client)) => Some(
                client
                    .connector(url, &b.host)
                    .map_err(|error| Error::Tls { error })?,
            ),
        };
        let path = if b.base_path.is_empty() {
            "/".to_owned()
        } else {
            b.base_path.clone()
        };
        let headers = vec![
            (
                "User-Agent".to_owned(),
                format!("ringperf/{}", env!("CARGO_PKG_VERSION")),
            ),
            (
                "Accept".to_owned(),
                "text/plain;version=0.0.4;q=0.9,*/*;q=0.1".to_owned(),
            ),
        ];
        let encode = |method: &str| -> Result<Vec<u8>, Error> {
            let get = ringperf_wire::http::encode_get(&b.host_header, &path, &headers).map_err(
                |error| Error::Encode {
                    url: url.to_owned(),
                    error,
                },
            )?;
            // encode_get writes `GET `; a HEAD differs only in the method.
            Ok(match method {
                "HEAD" => [b"HEAD".as_slice(), get.get(3..).unwrap_or_default()].concat(),
                _ => get,
            })
        };
        Ok(Self {
            url: url.to_owned(),
            addr: b.addr,
            tls,
            get: encode("GET")?,
            head: encode("HEAD")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_only_for_plain_metrics_paths() {
        assert_eq!(
            trtllm_fallback("http://h:1/metrics").as_deref(),
            Some("http://h:1/prometheus/metrics")
        );
        assert_eq!(
            trtllm_fallback("http://h:1/v1/metrics").as_deref(),
            Some("http://h:1/v1/prometheus/metrics")
        );
        assert_eq!(trtllm_fallback("http://h:1/prometheus/metrics"), None);
        assert_eq!(trtllm_fallback("http://h:1/stats"), None);
    }

    #[test]
    fn target_encodes_get_and_head() {
        let t = Target::resolve("http://127.0.0.1:9/prometheus/metrics", None).unwrap();
        assert!(t.tls.is_none());
        assert!(
            t.get
                .starts_with(b"GET /prometheus/metrics HTTP/1.1\r\nHost: 127.0.0.1:9\r\n")
        );
        assert!(t.head.starts_with(b"HEAD /prometheus/metrics HTTP/1.1\r\n"));
        assert!(t.get.ends_with(b"\r\n\r\n") && t.head.ends_with(b"\r\n\r\n"));
        let e = Target::resolve("https://127.0.0.1/metrics", None).unwrap_err();
        assert!(matches!(e, Error::Https { .. }), "{e:?}");
        assert!(e.to_string().contains("no TLS client"), "{e}");
        let client = TlsClient::new(ringperf_io::net::Verify::Off, None).unwrap();
        let t = Target::resolve("https://127.0.0.1:9/metrics", Some(&client)).unwrap();
        assert_eq!(t.addr.port(), 9);
        assert!(
            t.tls
                .is_some_and(|c| c.url() == "https://127.0.0.1:9/metrics")
        );
        let e = Target::resolve("ftp://h/metrics", None).unwrap_err();
        assert!(matches!(e, Error::Url(_)), "{e:?}");
        assert!(e.to_string().starts_with("server metrics endpoint "), "{e}");
        assert!(!e.to_string().contains("--url"), "{e}");
    }
}
