//! The request headers ringperf sends, as AIPerf lists them in its exports: one list for the
//! raw export (`super::raw`) and the HTTP trace (`super::trace_data`), credentials redacted by
//! AIPerf's rule (`redact_headers`).

use serde_json::{Map, Value};

/// The redacted value of a credential-bearing header, as AIPerf writes it.
pub const REDACTED: &str = "<redacted>";

/// The headers sent with every request and the names of the id headers.
#[derive(Clone, Debug, Default)]
pub struct SentHeaders {
    /// Headers sent with every request, in order (`User-Agent`, `Accept`, `Content-Type`,
    /// `--header` values).
    pub headers: Vec<(String, String)>,
    /// Names of the headers that carry the request id and the correlation id.
    pub request_id_header: String,
    /// See `request_id_header`.
    pub correlation_id_header: String,
    /// Headers that carry a copy of the correlation id (session affinity).
    pub correlation_copies: Vec<String>,
}

impl SentHeaders {
    /// Puts the headers sent with a request with these ids into `h`, in the order they are
    /// listed here (every-request headers, the request id, the correlation id and its copies),
    /// credentials redacted by AIPerf's `redact_headers` rule. The raw export and the HTTP
    /// trace (`super::trace_data`) both list them through this.
    pub fn put(
        &self,
        h: &mut Map<String, Value>,
        request_id: &uuid::Uuid,
        correlation_id: &uuid::Uuid,
    ) {
        let mut put = |name: &str, value: String| {
            h.insert(name.to_string(), Value::from(redacted(name, value)));
        };
        for (name, value) in &self.headers {
            put(name, value.clone());
        }
        put(&self.request_id_header, request_id.to_string());
        put(&self.correlation_id_header, correlation_id.to_string());
        for name in &self.correlation_copies {
            put(name, correlation_id.to_string());
        }
    }
}

/// `value`, or [`REDACTED`] when `name` carries a credential.
pub fn redacted(name: &str, value: String) -> String {
    if is_sensitive_header(name) {
        REDACTED.to_string()
    } else {
        value
    }
}

/// AIPerf's rule for a credential-bearing header name (`is_sensitive_header_name`): a known
/// name, or one containing a telling word.
pub fn is_sensitive_header(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "auth",
        "token",
        "secret",
        "password",
        "passwd",
        "credential",
        "cookie",
        "apikey",
        "api-key",
        "api_key",
        "session",
        "signature",
        "sas-key",
        "access-key",
        "private-key",
    ];
    let lower = name.trim().to_ascii_lowercase();
    WORDS.iter().any(|w| lower.contains(w))
        || matches!(
            lower.as_str(),
            "ocp-apim-subscription-key" | "x-goog-api-key" | "x-functions-key"
        )
}

/// The spelling aiohttp's C response parser gives a header name: the canonical one of a name
/// it knows (`content-type` → `Content-Type`, its `hdrs` constants), anything else as sent.
/// AIPerf's `response_headers` hold the names so spelled.
pub fn aiohttp_name(name: &str) -> &str {
    AIOHTTP_KNOWN
        .binary_search_by(|k| cmp_ignore_ascii_case(k, name))
        .map_or(name, |i| AIOHTTP_KNOWN[i])
}

fn cmp_ignore_ascii_case(a: &str, b: &str) -> std::cmp::Ordering {
    a.bytes()
        .map(|c| c.to_ascii_lowercase())
        .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

/// The header names aiohttp 3's parser knows (its `_headers.pxi`, from `hdrs.py`), sorted
/// ignoring ASCII case.
const AIOHTTP_KNOWN: [&str; 132] = [
    "Accept",
    "Accept-CH",
    "Accept-Charset",
    "Accept-Encoding",
    "Accept-Language",
    "Accept-Ranges",
    "Access-Control-Allow-Credentials",
    "Access-Control-Allow-Headers",
    "Access-Control-Allow-Methods",
    "Access-Control-Allow-Origin",
    "Access-Control-Expose-Headers",
    "Access-Control-Max-Age",
    "Access-Control-Request-Headers",
    "Access-Control-Request-Method",
    "Age",
    "Allow",
    "Alt-Svc",
    "Alt-Used",
    "Authentication-Info",
    "Authorization",
    "baggage",
    "Cache-Control",
    "Cache-Status",
    "CDN-Cache-Control",
    "CDN-Loop",
    "Clear-Site-Data",
    "Connection",
    "Content-Digest",
    "Content-Disposition",
    "Content-Encoding",
    "Content-ID",
    "Content-Language",
    "Content-Length",
    "Content-Location",
    "Content-MD5",
    "Content-Range",
    "Content-Security-Policy",
    "Content-Security-Policy-Report-Only",
    "Content-Transfer-Encoding",
    "Content-Type",
    "Cookie",
    "Cross-Origin-Embedder-Policy",
    "Cross-Origin-Opener-Policy",
    "Cross-Origin-Resource-Policy",
    "Date",
    "Destination",
    "Digest",
    "Early-Data",
    "Etag",
    "Expect",
    "Expires",
    "Forwarded",
    "From",
    "Host",
    "If-Match",
    "If-Modified-Since",
    "If-None-Match",
    "If-Range",
    "If-Unmodified-Since",
    "Keep-Alive",
    "Last-Event-ID",
    "Last-Modified",
    "Link",
    "Location",
    "Max-Forwards",
    "NEL",
    "Origin",
    "Origin-Agent-Cluster",
    "Permissions-Policy",
    "Pragma",
    "Priority",
    "Proxy-Authenticate",
    "Proxy-Authentication-Info",
    "Proxy-Authorization",
    "Range",
    "Referer",
    "Referrer-Policy",
    "Report-To",
    "Reporting-Endpoints",
    "Repr-Digest",
    "Retry-After",
    "Sec-CH-UA",
    "Sec-CH-UA-Mobile",
    "Sec-CH-UA-Platform",
    "Sec-Fetch-Dest",
    "Sec-Fetch-Mode",
    "Sec-Fetch-Site",
    "Sec-Fetch-User",
    "Sec-GPC",
    "Sec-Purpose",
    "Sec-WebSocket-Accept",
    "Sec-WebSocket-Extensions",
    "Sec-WebSocket-Key",
    "Sec-WebSocket-Key1",
    "Sec-WebSocket-Protocol",
    "Sec-WebSocket-Version",
    "Server",
    "Server-Timing",
    "Set-Cookie",
    "Strict-Transport-Security",
    "TE",
    "Timing-Allow-Origin",
    "traceparent",
    "tracestate",
    "Trailer",
    "Transfer-Encoding",
    "Upgrade",
    "Upgrade-Insecure-Requests",
    "URI",
    "User-Agent",
    "Vary",
    "Via",
    "Want-Content-Digest",
    "Want-Digest",
    "Want-Repr-Digest",
    "Warning",
    "WWW-Authenticate",
    "X-Content-Type-Options",
    "X-Correlation-ID",
    "X-Forwarded-For",
    "X-Forwarded-Host",
    "X-Forwarded-Port",
    "X-Forwarded-Proto",
    "X-Frame-Options",
    "X-Powered-By",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "X-Real-IP",
    "X-Request-ID",
    "X-Requested-With",
    "X-XSS-Protection",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_headers_are_redacted() {
        for name in ["Authorization", "X-Session-Affinity", "x-api-key", "Cookie"] {
            assert!(is_sensitive_header(name), "{name}");
        }
        for name in ["User-Agent", "Accept", "Content-Type", "X-Request-ID"] {
            assert!(!is_sensitive_header(name), "{name}");
        }
    }

    #[test]
    fn aiohttp_spells_the_names_it_knows() {
        assert_eq!(aiohttp_name("content-type"), "Content-Type");
        assert_eq!(aiohttp_name("SERVER"), "Server");
        assert_eq!(aiohttp_name("www-authenticate"), "WWW-Authenticate");
        assert_eq!(aiohttp_name("Traceparent"), "traceparent");
        assert_eq!(aiohttp_name("x-mock-extra"), "x-mock-extra");
        // Sorted as the lookup needs.
        assert!(
            AIOHTTP_KNOWN
                .windows(2)
                .all(|w| cmp_ignore_ascii_case(w[0], w[1]).is_lt())
        );
    }
}
